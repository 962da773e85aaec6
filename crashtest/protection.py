"""`crashtest.py protection`: protection-bytes fuzzing with statistical
power.  The whole budget goes to cache flips: short stress runs
(no crash) at high bitflip_cache rates with --bitflip_cache_patterns, over
every width asked for, page size and cache size.  Each flip is one trial
of the per-KV codes (faults/cacheflip.c: a pattern flipped, the engine's
whole-page check, the bits restored), so the oracle knows for every flip
whether the code caught it (oracle/verdict.h V9).

The width of the next run is the one with the fewest flips checked so far
(stratified, not drawn), so every width gets its share.  Per width and
pattern the runs' counts are summed and judged (crashtest.stats): the run
fails when a flip of odd parity (a single bit above all) escapes at any
width, or when a pattern's escapes, or a width's escapes summed over its
patterns, exceed the Poisson bound of their expected escapes (the bound
report.html draws per width); where the expected escapes are observable (w = 1's two
flips in one part: 1 in 32) it also says whether the observed rate is
consistent with the expected one (its 95% interval holds it).  A stress
run that fails (its own oracle, per run) stops the mode (unless
--keep-going, for a measurement): the first failure's time is the time to
catch.

Writes REPORT_DIR/summary.json (mode "protection": per width its cells,
and "protection_widths", the per-width table `crashtest.py report`
draws), protection.md (the table), report.html and, for a failed run, its directory
under failures/ with the repro line."""

import json
import os
import shlex
import shutil
import sys
import time

from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    INTERRUPTED,
    REPO,
    UsageError,
    nice_path,
    write_json,
)
from .folders import WORK_PREFIX, claim_report_dir, make_work_dir, release, remove_work_dir
from .binary import build_identity
from .htmlreport import render, write_page
from .procs import STOP, Stopped, run_process
from .seeds import Rng, derive
from .stats import cell_verdict, pattern_odds

PATTERNS = ["single", "double_part", "double_parts", "burst", "byte"]
WIDTHS = [1, 2, 4, 8]
PAGE_SIZES = [4096, 8192, 16384]
CACHE_PAGES = [16, 32, 64, 256]
ONE_IN = [2, 3, 5, 10]
THREADS = [1, 2]
VALUE_SIZES = [64, 256, 1024]
MAX_KEY = [500, 2000, 10000]


def width_list(s):
    try:
        ws = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        ws = []
    if not ws or any(w not in WIDTHS for w in ws):
        raise UsageError("--widths %r: want a comma list of 1, 2, 4, 8" % s)
    return sorted(set(ws))


def run_argv(stress, d, w, seed, seconds):
    """The stress command of one run (in D) at width W, drawn from SEED."""
    rng = Rng(derive(seed, "protection run"))
    ps = rng.choice(PAGE_SIZES)
    opts = {
        "db": os.path.join(d, "db"),
        "expected_values_dir": os.path.join(d, "expected"),
        "run_dir": os.path.join(d, "run"),
        "report": os.path.join(d, "report.json"),
        "destroy_db_initially": 1,
        "seed": seed,
        "duration": max(1, int(seconds)),
        "ops_per_thread": 0,
        "block_protection_bytes_per_key": w,
        "bitflip_cache_one_in": rng.choice(ONE_IN),
        "bitflip_cache_patterns": 1,
        "page_size": ps,
        "cache_size": max(65536, rng.choice(CACHE_PAGES) * ps),
        "threads": rng.choice(THREADS),
        "value_size_max": rng.choice(VALUE_SIZES),
        "max_key": rng.choice(MAX_KEY),
        "hang_seconds": 60,
    }
    return [stress] + ["--%s=%s" % (k, v) for k, v in opts.items()]


def count_regions(cells, ledger, w):
    """Add the checked flips of LEDGER to CELLS by region (the regions of
    docs/fault-classes.md; a region's flips of every pattern)."""
    try:
        f = open(ledger)
    except OSError:
        return
    with f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("check") not in ("detected", "escaped") or not e.get("region"):
                continue
            c = cells.setdefault(e["region"], {"checked": 0, "escaped": 0, "expected": 0.0})
            c["checked"] += 1
            c["escaped"] += e["check"] == "escaped"
            c["expected"] += pattern_odds(e.get("parity"), w)


def empty_cells():
    return {p: {"checked": 0, "detected": 0, "escaped": 0, "expected": 0.0} for p in PATTERNS}


def judge(agg):
    """{w: {"patterns": {p: cell verdict}, totals...}} and the overall fail:
    a (width, pattern) cell above its bound, or a width's sum above the
    bound of its sum (the same cell_verdict: the bound report.html draws)."""
    out, fail = {}, False
    for w, cells in sorted(agg.items()):
        row = {"patterns": {}, "checked": 0, "detected": 0, "escaped": 0, "expected": 0.0}
        for p in PATTERNS:
            c = cells[p]
            v = cell_verdict(c["checked"], c["escaped"], c["expected"])
            v["detected"] = c["detected"]
            row["patterns"][p] = v
            fail |= v["fail"]
            for k in ("checked", "detected", "escaped", "expected"):
                row[k] += c[k]
        t = cell_verdict(row["checked"], row["escaped"], row["expected"])
        row.update(
            rate=t["rate"],
            ci95=t["ci95"],
            expected_rate=t["expected_rate"],
            bound=t["bound"],
            fail=t["fail"],
        )
        fail |= t["fail"]
        out[w] = row
    return out, fail


def fmt_rate(x):
    return "-" if x is None else ("0" if x == 0 else "%.3g" % x)


def table_lines(widths):
    """The Markdown table (protection.md; docs/protection.md shows one)."""
    lines = [
        "| w | pattern | flips checked | detected | escaped | observed rate (95% interval) | "
        "expected rate | bound (escapes) | verdict |",
        "|---|---|---:|---:|---:|---|---|---:|---|",
    ]
    for w, row in sorted(widths.items()):
        for p in PATTERNS:
            c = row["patterns"][p]
            if not c["checked"]:
                continue
            ci = c["ci95"]
            verdict = "FAIL" if c["fail"] else "ok"
            if c["consistent"] is not None:
                verdict += ", consistent" if c["consistent"] else ", NOT consistent with expected"
            lines.append(
                "| %d | %s | %d | %d | %d | %s (%s .. %s) | %s | %d | %s |"
                % (
                    w,
                    p,
                    c["checked"],
                    c["detected"],
                    c["escaped"],
                    fmt_rate(c["rate"]),
                    fmt_rate(ci[0]),
                    fmt_rate(ci[1]),
                    fmt_rate(c["expected_rate"]),
                    c["bound"],
                    verdict,
                )
            )
    return lines


def width_line(w, row):
    """One width's sums in words: the rate, what the construction expects,
    and the bound the verdict judges the escapes against."""
    return (
        "w=%d: %d flips checked, %d escaped (rate %s; expected from the construction %s; bound %d "
        "escapes: %s)"
        % (
            w,
            row["checked"],
            row["escaped"],
            fmt_rate(row["rate"]),
            fmt_rate(row["expected_rate"]),
            row["bound"],
            "ABOVE, FAIL" if row["fail"] else "within",
        )
    )


def region_lines(regions):
    """The same flips by region (every pattern): where a code is weaker.
    A view, not a verdict: the run is judged by width and pattern."""
    lines = [
        "| w | region | flips checked | escaped | observed rate (95% interval) | expected rate "
        "| against its bound (a view, not judged) |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for w, rs in sorted(regions.items(), key=lambda kv: int(kv[0])):
        for r, c in rs.items():
            ci = c["ci95"] or [None, None]
            verdict = region_word(c)
            if c["consistent"] is not None:
                verdict += ", consistent" if c["consistent"] else ", NOT consistent with expected"
            lines.append(
                "| %s | %s | %d | %d | %s (%s .. %s) | %s | %s |"
                % (
                    w,
                    r,
                    c["checked"],
                    c["escaped"],
                    fmt_rate(c["rate"]),
                    fmt_rate(ci[0]),
                    fmt_rate(ci[1]),
                    fmt_rate(c["expected_rate"]),
                    verdict,
                )
            )
    return lines


def region_word(c):
    return "above its bound of %d" % c["bound"] if c["fail"] else "within %d" % c["bound"]


def add_report(cells, d, w):
    """Add run directory D's pattern counts at width W to CELLS; returns
    the flips it checked (0 when it wrote no report)."""
    rep = {}
    try:
        with open(os.path.join(d, "report.json")) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        pass
    e = (rep.get("escape_rate_per_protection_width") or {}).get(str(w)) or {}
    got = 0
    for p, c in (e.get("patterns") or {}).items():
        if p in cells:
            for k in ("checked", "detected", "escaped"):
                cells[p][k] += int(c.get(k, 0) or 0)
            cells[p]["expected"] += float(c.get("expected", 0) or 0)
            got += int(c.get("checked", 0) or 0)
    return got


def replay_argv(command, stress, d):
    """A protection run's stress COMMAND with the binary STRESS and its
    folders moved into D (the run's own are gone with its work folder)."""
    argv = shlex.split(command)
    argv[0] = stress
    moved = {
        "--db": "db",
        "--expected_values_dir": "expected",
        "--run_dir": "run",
        "--report": "report.json",
    }
    for i, x in enumerate(argv):
        opt = x.split("=", 1)[0]
        if opt in moved:
            argv[i] = "%s=%s" % (opt, os.path.join(d, moved[opt]))
    return argv


def replay_line(command, kept):
    """The shell line that replays a failed protection run (COMMAND) from
    scratch into KEPT/replay, beside the folders it left."""
    if not command or not kept:
        return command
    d = os.path.join(kept, "replay")
    argv = replay_argv(command, shlex.split(command)[0], d)
    return "mkdir -p %s && %s" % (shlex.quote(d), " ".join(shlex.quote(x) for x in argv))


def one_run(a, stress, dirs, seed, i, w, left, t0, agg, regions):
    """Run I at width W (DIRS: the work and report folders), its counts
    added to AGG and REGIONS.  Returns its record; a failed run's folder
    is kept under failures/ and named in the record's "dir"."""
    work, report_dir = dirs
    rseed = derive(seed, "protection", i)
    d = os.path.join(work, "run-%d" % i)
    os.makedirs(d)
    argv = run_argv(stress, d, w, rseed, min(a.run_seconds, max(1, left)))
    res = run_process(
        argv, os.path.join(d, "out.txt"), d, hang_seconds=90, time_limit=a.run_seconds + 120
    )
    got = add_report(agg[w], d, w)
    count_regions(regions.setdefault(w, {}), os.path.join(d, "run", "ledger"), w)
    elapsed = time.monotonic() - t0
    run = {
        "index": i,
        "seed": rseed,
        "w": w,
        "rc": res.rc,
        "flips": got,
        "seconds": round(res.elapsed, 2),
        "at": round(elapsed, 2),
        "command": " ".join(shlex.quote(x) for x in argv),
    }
    line = "run %d w=%d rc=%s flips=%d  (%.0fs)" % (i, w, res.rc, got, elapsed)
    if res.rc != 0 or res.hung:
        dest = os.path.join(report_dir, "failures", "run-%d" % i)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.move(d, dest)
        run["dir"] = dest
        run["repro"] = replay_line(run["command"], dest)
        print(
            line
            + "  FAIL (%s); kept %s\n  repro: %s"
            % (res.hung or "exit %s" % res.rc, nice_path(dest), run["repro"])
        )
    else:
        shutil.rmtree(d, ignore_errors=True)
        print(line)
    sys.stdout.flush()
    return run


def width_rows(table, runs):
    """The per-width table of the summary and the HTML chart
    (htmlreport.widths_of): each width's sums, the bound its verdict
    judged them against and whether they passed it."""
    return {
        str(w): {
            "iterations": sum(1 for r in runs if r["w"] == w),
            "checked": row["checked"],
            "escaped": row["escaped"],
            "bound": row["bound"],
            "rate": row["rate"],
            "ci95": row["ci95"],
            "expected_rate": row["expected_rate"],
            "fail": row["fail"],
        }
        for w, row in table.items()
    }


def summary_doc(a, argv, run, table, regions, verdict):
    """summary.json of a protection run.  RUN: seed, widths, stress, runs,
    failures, elapsed."""
    runs, failures, elapsed = run["runs"], run["failures"], run["elapsed"]
    return {
        "mode": "protection",
        "seed": run["seed"],
        "widths_asked": run["widths"],
        "duration": a.duration,
        "flips_per_width": a.flips_per_width,
        "elapsed": round(elapsed, 1),
        "runs": len(runs),
        "pass": verdict == "pass",
        "failures": failures,
        # what the HTML page's header reads (its count of runs)
        "verdict": verdict,
        "interrupted": STOP.is_set(),
        "iterations_total": len(runs),
        "failed": len(failures),
        "elapsed_s": round(elapsed, 1),
        "jobs": 1,
        "shard": "0/1",
        "seed_given": a.seed is not None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - elapsed)),
        "first_failure_seconds": failures[0]["at"] if failures else None,
        "protection": {str(w): row for w, row in table.items()},
        "regions": {
            str(w): {
                r: cell_verdict(c["checked"], c["escaped"], c["expected"])
                for r, c in sorted(rs.items())
            }
            for w, rs in sorted(regions.items())
        },
        "protection_widths": width_rows(table, runs),
        "command_line": [sys.executable, os.path.join(REPO, "crashtest.py")] + list(argv),
        "build": build_identity({"stress": run["stress"]}),
    }


def write_outputs(report_dir, summary, table):
    """summary.json, protection.md and report.html; the tables printed."""
    write_json(os.path.join(report_dir, "summary.json"), summary)
    lines = table_lines(table) + [""] + region_lines(summary["regions"])
    with open(os.path.join(report_dir, "protection.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        write_page(os.path.join(report_dir, "report.html"), render([report_dir]))
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
    ) as e:  # the page is a view: the summary stands without it
        print("crashtest: report.html not written: %s" % e)
    print("\n".join(lines))
    for w, row in sorted(table.items()):
        print(width_line(w, row))


def protection_mode(a, argv):
    widths = width_list(a.widths)
    stress = os.path.abspath(a.stress_binary or os.path.join(REPO, "build", "stress"))
    if not os.path.isfile(stress):
        raise UsageError("stress binary %s not found (run make)" % stress)
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(8), "little")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    report_dir = a.report_dir or os.path.join(
        REPO, "build", "crashtest", "protection-%s-%d" % (stamp, os.getpid())
    )
    claim_report_dir(report_dir)
    work = make_work_dir(WORK_PREFIX + "protection-", a.work_dir)
    print(
        "crashtest: protection seed=%d widths=%s duration=%ss flips-per-width=%d run=%ss report=%s"
        % (
            seed,
            ",".join(map(str, widths)),
            a.duration,
            a.flips_per_width,
            a.run_seconds,
            nice_path(report_dir),
        )
    )
    sys.stdout.flush()
    agg = {w: empty_cells() for w in widths}
    regions = {}  # w -> region -> cell: the same flips by where they landed (from the ledgers)
    runs, failures = [], []
    t0 = time.monotonic()
    try:
        while True:
            left = a.duration - (time.monotonic() - t0) if a.duration else float("inf")
            todo = [
                w for w in widths if sum(c["checked"] for c in agg[w].values()) < a.flips_per_width
            ]
            if left < 1 or not todo or STOP.is_set():
                break
            w = min(todo, key=lambda x: (sum(c["checked"] for c in agg[x].values()), x))
            run = one_run(a, stress, (work, report_dir), seed, len(runs), w, left, t0, agg, regions)
            runs.append(run)
            if "dir" in run:
                failures.append(run)
                if not a.keep_going:
                    break
    except Stopped:
        print("crashtest: stopped")
    finally:
        remove_work_dir(work)
    table, cell_fail = judge(agg)
    elapsed = time.monotonic() - t0
    failed = bool(failures or cell_fail)
    stopped = STOP.is_set() and not failed  # stopped before a failure: neither a pass nor a fail
    verdict = "fail" if failed else INTERRUPTED if stopped else "pass"
    done = {
        "seed": seed,
        "widths": widths,
        "stress": stress,
        "runs": runs,
        "failures": failures,
        "elapsed": elapsed,
    }
    write_outputs(report_dir, summary_doc(a, argv, done, table, regions, verdict), table)
    release(report_dir)
    print(
        "crashtest: protection %s: %d runs in %.0fs%s; report %s"
        % (
            verdict.upper(),
            len(runs),
            elapsed,
            ", first failure after %.1fs" % failures[0]["at"] if failures else "",
            nice_path(report_dir),
        )
    )
    return EXIT_PASS if verdict == "pass" else EXIT_INTERRUPTED if stopped else EXIT_FAIL
