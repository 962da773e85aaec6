"""What a run leaves behind: a failed iteration's folder (meta.json,
commands.sh, its binaries), the iteration line, the final table on
stdout, summary.json (small: the tables, the failures, the build; every
iteration's full record is in iterations.jsonl, gzipped when large) and
junit.xml (stable test names a CI dashboard can track).

Functions take the CrashTest (crashtest.run) as CT; they read it and
write only files."""

import gzip
import json
import math
import os
import shlex
import shutil
import socket
import sys
import time
import xml.etree.ElementTree as ET

from .common import INTERRUPTED, META_VERSION, REPO, hms, write_json
from .htmlreport import blamed_classes, clopper_pearson, render_runs, unreported, write_page
from .stats import cell_verdict
from .output import differs
from .params import CLASS_ORDER, FAILURE_KEYS, OUTCOMES, swarm_text


# The final table's columns (print_summary).
CLASS_COLUMNS = (
    "class",
    "injected",
    "detected",
    "repaired",
    "masked",
    "undetect.",
    "by design",
    "unpromised",
    "failures",
)


def reached_of(reports):
    """{point: times reached} from stress's fault_points_reached (armed
    points of processes that wrote a report)."""
    pts = {}
    for r in reports:
        for k, v in ((r or {}).get("fault_points_reached") or {}).items():
            pts[k] = pts.get(k, 0) + int((v or {}).get("reached", 0) or 0)
    return pts


def points_of(reports):
    """{point: injections} from stress's injections_per_point, and the
    pauses of the engine's delay/ points (no injection: the oracle never
    sees them; their firings are in fault_points_reached)."""
    pts = {}
    for r in reports:
        for k, v in ((r or {}).get("injections_per_point") or {}).items():
            pts[k] = pts.get(k, 0) + int(v or 0)
        for k, v in ((r or {}).get("fault_points_reached") or {}).items():
            if k.startswith("delay/") and int((v or {}).get("fired", 0) or 0):
                pts[k] = pts.get(k, 0) + int(v["fired"])
    return pts


def save_failure(ct, run, iter_dir, rid, record, crashed_after, ex):
    """Move the failed iteration's directory, with the crashed state and
    what repro needs, to REPORT/failures/ID."""
    base = os.path.join(ct.report_dir, "failures")
    os.makedirs(base, exist_ok=True)
    dest = os.path.join(base, rid)
    n = 1
    while os.path.exists(dest):
        dest = os.path.join(base, "%s.%d" % (rid, n))
        n += 1
    if os.path.isdir(run.state):
        # The workload's crashed state (powerloss made copies: the state
        # itself is as the crash left it), or whatever the failure left.
        os.rename(
            run.state, os.path.join(iter_dir, "crashed" if crashed_after is not None else "end")
        )
    meta = failure_meta(ct, run, iter_dir, rid, record, crashed_after)
    with open(os.path.join(iter_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    write_commands(os.path.join(iter_dir, "commands.sh"), ct, rid, record["steps"], dest)
    os.makedirs(os.path.join(iter_dir, "bin"), exist_ok=True)
    for k, name in (("@STRESS@", "stress"), ("@POWERLOSS@", "powerloss")):
        shutil.copy2(ct.bin[k], os.path.join(iter_dir, "bin", name))
    with open(os.path.join(iter_dir, "build.json"), "w") as f:
        json.dump(ct.identity, f, indent=1, sort_keys=True)
    shutil.move(iter_dir, dest)
    return dest


def failure_meta(ct, run, iter_dir, rid, record, crashed_after):
    """meta.json of failure RID (repro's input): the iteration's draws,
    steps and failure, the build, and where its placeholders pointed."""
    return {
        "crashtest_meta": META_VERSION,
        "id": rid,
        "mode": ct.mode,
        "run_seed": run.seed,
        "seed": record["seed"],
        "index": record["index"],
        "kind": record["kind"],
        "db_params": record["db_params"],
        "db_age": record["db_age"],
        "db_ops": record["db_ops"],
        "history": list(run.history),
        "params": record["params"],
        "plan": record["plan"],
        "max_key": run.max_key,
        "swarm": record.get("swarm"),
        "hang_seconds": ct.a.hang_seconds,
        "steps": record["steps"],
        "failure": record["failure"],
        "crashed_after_step": crashed_after,
        "build": ct.identity,
        "binaries": {"@STRESS@": "bin/stress", "@POWERLOSS@": "bin/powerloss"},
        "binaries_built_as": {"@STRESS@": ct.stress, "@POWERLOSS@": ct.powerloss},
        "paths": {"@STATE@": run.state, "@ITER@": iter_dir},
        "command_line": [sys.executable, os.path.join(REPO, "crashtest.py")] + sys.argv[1:],
    }


def write_commands(path, ct, rid, steps, dest):
    """commands.sh of failure RID at PATH: STEPS as they ran, each with
    its exit, their placeholders explained, and the repro line of DEST."""
    with open(path, "w") as f:
        f.write(
            "#!/bin/sh\n# Iteration %s: the commands as they ran, with the placeholders crashtest\n"
            "# substitutes (the work directory they ran in is gone):\n"
            "#   @STATE@      the state: a copy of crashed/ (or start/, before the crash)\n"
            "#   @ITER@       the iteration's scratch folder (steps/ ...)\n"
            "#   @STRESS@     bin/stress      (a copy of %s)\n"
            "#   @POWERLOSS@  bin/powerloss   (a copy of %s)\n"
            "# Replay (copies, substitutes and runs them): %s repro %s\n\n"
            % (rid, ct.stress, ct.powerloss, os.path.join(REPO, "crashtest.py"), dest)
        )
        for i, s in enumerate(steps):
            r = s.get("result") or {}
            if s["type"] == "variant":
                f.write(
                    "# step %d: variant %d of the power-loss step (crashtest copies the state)\n"
                    % (i, s["k"])
                )
                continue
            if s["type"] == "lose":
                f.write(
                    "# step %d: the lost-file check copies %s to %s and removes %s\n"
                    % (i, s["from"], s["to"], " ".join(s["remove"]))
                )
                continue
            f.write(
                "# step %d (%s): exit %s%s\n"
                % (
                    i,
                    s["name"],
                    r.get("rc"),
                    ", SIGKILL after %.3f s" % s["kill_after"]
                    if s.get("kill_after") is not None
                    else "",
                )
            )
            f.write(shlex.join(s["argv"]) + "\n\n")


def iteration_line(record, run_index, defaults):
    """The line an iteration prints when it is judged: how it crashed, its
    options that differ from stress's DEFAULTS, the counts, the verdict."""
    plan = record["plan"]
    if plan["kind"] == "blackbox":
        how = "blackbox kill@%.2fs" % plan["kill_at"]
    elif plan.get("reopen"):
        how = "whitebox reopen×%d" % plan["reopen"]
    else:
        wl = record["steps"][1 if record["steps"][0]["name"] == "create" else 0].get("result") or {}
        fired = wl.get("kill_points_fired") or []
        how = "whitebox kill 1/%d %s" % (
            plan["kill_random_test"],
            ("-> " + fired[0]) if fired else "(none fired)",
        )
    crashed = any(s["type"] == "powerloss" for s in record["steps"])
    if crashed:
        how += " powerloss=%s×%d" % (plan["powerloss_mode"], plan["variants"])
        if any(s["name"].startswith("powerloss-2") for s in record["steps"]):
            how += " +recovery crash"
    opts = differs(dict(record["params"]), defaults)
    t = record["totals"]
    counts = "injected=%d detected=%d repaired=%d masked=%d" % (
        t["injected"],
        t["detected"],
        t["repaired"],
        t["masked"],
    )
    if t["undetectable"]:
        counts += " undetectable=%d" % t["undetectable"]
    for d in record.get("by_design") or []:
        counts += " unrecoverable_by_design=[%s]" % d
    if record["judging_mode"] and record["judging_mode"] != "judging":
        counts += " (%s)" % record["judging_mode"]
    verdict = (
        "pass"
        if not record["failure"]
        else "FAIL %s at %s" % (record["failure"]["kind"], record["failure"]["step_name"])
    )
    return "run %d iter %d seed=%d %s | %s | %s | %s %.1fs" % (
        run_index,
        record["index"],
        record["seed"],
        how,
        " ".join(opts) or "defaults",
        counts,
        verdict,
        record["elapsed"],
    )


def counted(step, result):
    """Whether a step's report counts in the class and width tables: a
    primary stress step (the judged line of states), or an extra
    power-loss variant that failed.  The extras that pass are only
    counted as judged, so that one crash's injections count once; the one
    that fails counts in full, so that every failed iteration shows in the
    failures column of the class its report blamed (a lost found by the
    second variant of a crash whose first rolled nothing back was in no
    row before)."""
    if step.get("type") != "stress" or not (result or {}).get("report"):
        return False
    return bool(step.get("primary") or result.get("failure"))


# Where on-disk damage lands (faults/place.h; docs/fault-classes.md):
# every region each class can name, so that one never hit shows as a row
# of zeros instead of no row.
REGIONS = {
    "bitflip_page": [
        "header",
        "hints",
        "slots",
        "free",
        "cells",
        "meta",
        "clog",
        "overflow",
        "trunk",
    ],
    "bitflip_wal": [
        "block_header",
        "sector_trailer",
        "record_header",
        "record_payload",
        "padding",
        "synced_sector",
    ],
    "zero_page": [
        "meta",
        "root",
        "interior",
        "leaf",
        "clog",
        "overflow",
        "trunk",
        "hwm_below",
        "hwm_above",
        "last_written",
        "file_end",
        "since_redo",
    ],
}


def add_regions(regions, rep_regions):
    """Add one stress report's `regions` ({class: {region: {key: n}}})
    into REGIONS' running sums."""
    for c, by in (rep_regions or {}).items():
        for r, counts in (by or {}).items():
            row = regions.setdefault(c, {}).setdefault(r, {})
            for k, v in (counts or {}).items():
                row[k] = row.get(k, 0) + int(v or 0)


def region_table(pl, regions, engine="ours"):
    """The 'damage by region' table under the class table: per class that
    was injected, every region it can name (REGIONS: our engine's page
    format; another engine's damage, placed by the door, names its file
    kinds alone) and any other it named, with its injections and
    outcomes; a region never hit prints zeros and is listed at the end."""
    if not regions:
        return
    keys = OUTCOMES + ["swallowed"]
    # The class table's outcome headings, then swallowed: one per key.
    heads = ("region",) + CLASS_COLUMNS[1:-1] + ("swallowed",)
    pl(("damage by region   %-15s" + " %9s" * (len(heads) - 1)) % heads)
    never = []
    for c in sorted(regions, key=lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else 99):
        known = REGIONS.get(c, []) if engine == "ours" else []
        names = known + sorted(r for r in regions[c] if r not in known)
        for r in names:
            row = regions[c].get(r, {})
            if not row.get("injected"):
                never.append("%s/%s" % (c, r))
            pl("%-18s %-15s %s" % (c, r, " ".join("%9d" % int(row.get(k, 0) or 0) for k in keys)))
    if never:
        pl("regions never hit: %s" % ", ".join(never))


def points_line(engine_points, points, reached):
    """The one count of engine fault points: hit, a fault injected there or
    a kill point fired (from the reports and the judging steps' ledgers).
    Passes are counted only by processes that wrote a report, and a killed
    workload writes none, so they make no count: only the never-hit points
    seen armed and passed are named."""
    hit = [p for p in engine_points if points.get(p)]
    never = [p for p in engine_points if not points.get(p)]
    passed = [p for p in never if reached.get(p)]
    return (
        "fault points hit: %d of %d engine points (a fault injected or a kill point fired "
        "there)%s%s"
        % (
            len(hit),
            len(engine_points),
            "; never hit: " + ", ".join(never) if never else "",
            " (of these, armed and passed without firing: %s)" % ", ".join(passed)
            if passed
            else "",
        )
    )


def width_lines(pl, widths):
    """The per-KV protection table: per width the cache flips checked,
    the escapes and the oracle's bound on them (its Poisson bound, summed
    over the stress processes: each was judged against its own)."""
    pl(
        "%-18s %10s %11s %9s %11s %9s %8s %11s"
        % (
            "per-KV protection",
            "iterations",
            "cache flips",
            "escaped",
            "rate",
            "bound",
            "",
            "2^-8w (ref)",
        )
    )
    for w in sorted(widths):
        row = widths[w]
        rate = "%.3g" % (row["escaped"] / row["checked"]) if row["checked"] else "-"
        judged = (
            "-" if not row["checked"] else "within" if row["escaped"] <= row["bound"] else "ABOVE"
        )
        pl(
            "%-18s %10d %11d %9d %11s %9d %8s %11s"
            % (
                "w=%d" % w,
                row["iterations"],
                row["checked"],
                row["escaped"],
                rate,
                row["bound"],
                judged,
                "%.3g" % 2.0 ** (-8 * w) if w else "(none)",
            )
        )
    pl(
        "  (bound: escapes the oracle allows, its Poisson bound summed over the stress processes, "
        "each judged against its own; 2^-8w: a w-byte hash's odds for any flip, a reference, not a "
        "limit)"
    )


def add_sweep(into, sweep):
    """Add a stress report's log sweep (its "wal_sweep") to INTO."""
    if not isinstance(sweep, dict) or not sweep.get("trials"):
        return
    into["restarts"] += 1
    for k in ("trials", "detected", "swallowed"):
        into[k] += int(sweep.get(k, 0) or 0)


def tally(recs):
    """The sums over the iterations RECS the summary reports: the class
    and region tables, the extra variants judged, the points hit and seen
    passed, the delays."""
    t = {
        "classes": {c: {k: 0 for k in OUTCOMES + FAILURE_KEYS} for c in CLASS_ORDER},
        "regions": {},
        "variants_judged": 0,
        "points": {},
        "reached": {},
        "delays": 0,
        "delayed": 0,
        "sweep": {"restarts": 0, "trials": 0, "detected": 0, "swallowed": 0},
        "batches_cut": 0,
    }
    classes = t["classes"]
    for r in recs:
        paused = 0
        for s in r["steps"]:
            res = s.get("result") or {}
            rep = res.get("report")
            if not rep:
                continue
            if s["type"] == "stress" and not s.get("primary"):
                t["variants_judged"] += 1
            if not counted(s, res):
                continue
            for c, counts in (rep.get("classes") or {}).items():
                row = classes.setdefault(c, {k: 0 for k in OUTCOMES + FAILURE_KEYS})
                for k in row:
                    row[k] += int((counts or {}).get(k, 0) or 0)
            add_regions(t["regions"], rep.get("regions"))
            paused += int(rep.get("delays", 0) or 0)
            add_sweep(t["sweep"], rep.get("wal_sweep"))
            t["batches_cut"] += int((rep.get("checks") or {}).get("batches_cut", 0) or 0)
        t["delays"] += paused  # pauses (faults/delay.c)
        t["delayed"] += paused > 0  # iterations that paused
        for k in unreported(r):
            classes["unattributed"][k] += 1  # a failure no report counted: still a failing row
        for key, into in (("points", t["points"]), ("points_reached", t["reached"])):
            for k, v in (r.get(key) or {}).items():
                into[k] = into.get(k, 0) + v
    return t


def summary_of(ct, runs, interrupted, recs):
    """summary.json's content (before fit) for the iterations RECS."""
    a, t = ct.a, tally(recs)
    engine_points = list(ct.catalogue)
    nfail = sum(1 for r in recs if r["failure"])
    by_design = [r for r in recs if r.get("by_design")]
    by_design_what = {}
    for r in by_design:
        for d in r["by_design"]:
            what = d.split(" file=")[0]
            by_design_what[what] = by_design_what.get(what, 0) + 1
    planted = sorted(
        {
            (s.get("result") or {}).get("report", {}).get("planted_bug")
            for r in recs
            for s in r["steps"]
            if ((s.get("result") or {}).get("report") or {}).get("planted_bug")
        }
    )
    timeline, sampled = timeline_of(recs)
    full = [r for r in recs if r["failure"]]
    return {
        "tool": "crashtest.py",
        "mode": ct.mode,
        "engine": getattr(a, "engine", "ours"),
        "faults_via": ct.engine_pins.get("faults_via", "hooks")
        if hasattr(ct, "engine_pins")
        else "hooks",
        "seed": a.seed,
        "seed_given": bool(getattr(a, "seed_given", True)),
        "iteration_seed": a.iteration_seed,
        "shard": "%d/%d" % a.shard,
        "jobs": a.jobs,
        "runs": [
            {"index": r.index, "seed": r.seed, "iterations": r.iterations, "failures": r.failures}
            for r in runs
        ],
        "arguments": sys.argv[1:],
        "options": {k: v for k, v in vars(a).items() if k not in ("func",)},
        "build": ct.identity,
        "unsupported_values": [list(u) for u in ct.unsupported],
        "started": ct.started_at,
        "elapsed_s": round(time.monotonic() - ct.t0, 3),
        "interrupted": interrupted,
        "iterations": timeline,
        "iterations_total": len(recs),
        "iterations_sampled": sampled,
        "iterations_file": finish_jsonl(ct),
        "failures": full[:MAX_FULL_FAILURES],
        "failures_total": len(full),
        "failed": nfail,
        "measuring": sum(1 for r in recs if "measuring" in (r.get("judging_mode") or "")),
        "variants_judged": t["variants_judged"],
        "unrecoverable_by_design": {"iterations": len(by_design), "explained_by": by_design_what},
        "classes": t["classes"],
        "regions": t["regions"],
        "points_hit": t["points"],
        "points_reached": t["reached"],
        "delays": t["delays"],
        "iterations_delayed": t["delayed"],
        "wal_sweep": t["sweep"],
        "batches_cut": t["batches_cut"],
        "engine_points": engine_points,
        "protection_widths": {str(w): v for w, v in sorted(width_table(recs).items())},
        "engine_points_never_hit": [p for p in engine_points if not t["points"].get(p)],
        "planted_bugs": planted,
        # A failure found is a fail, interrupted or not; a run stopped
        # before it found one is neither a pass nor a fail.
        "verdict": "fail" if nfail or ct.internal_error else INTERRUPTED if interrupted else "pass",
        "internal_error": ct.internal_error,
    }


def print_summary(pl, s):
    """The final tables on stdout, from the summary S."""
    pl("")
    if s["planted_bugs"]:
        pl(
            "crashtest: the engine under test carries planted bug(s) %s (tests/mutants.txt): a "
            "mutant, not the real engine" % ", ".join(s["planted_bugs"])
        )
    pl(
        "crashtest: %s: %d iterations, %d failed, %d measuring, %d extra power-loss variants "
        "judged, %s"
        % (
            s["mode"],
            s["iterations_total"],
            s["failed"],
            s["measuring"],
            s["variants_judged"],
            hms(s["elapsed_s"]),
        )
    )
    pl("%-18s %9s %9s %9s %9s %9s %9s %10s %9s" % CLASS_COLUMNS)
    classes = s["classes"]
    for c in sorted(classes, key=lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else 99):
        row = classes[c]
        f = sum(row[k] for k in FAILURE_KEYS)
        if not any(row.values()):
            continue
        pl(
            "%-18s %9d %9d %9d %9d %9d %9d %10d %9d%s"
            % (
                c,
                row["injected"],
                row["detected"],
                row["repaired"],
                row["masked"],
                row["undetectable"],
                row["unrecoverable_by_design"],
                row.get("undetected_unpromised", 0),
                f,
                "  (" + ", ".join("%s=%d" % (k, row[k]) for k in FAILURE_KEYS if row[k]) + ")"
                if f
                else "",
            )
        )
    region_table(pl, s["regions"], s.get("engine", "ours"))
    widths = {int(w): row for w, row in s["protection_widths"].items()}
    if any(w for w in widths):
        width_lines(pl, widths)
    ubd = s["unrecoverable_by_design"]
    pl(
        "unrecoverable_by_design: %d of %d iterations%s"
        % (
            ubd["iterations"],
            s["iterations_total"],
            " (" + ", ".join("%s x%d" % kv for kv in sorted(ubd["explained_by"].items())) + ")"
            if ubd["explained_by"]
            else "",
        )
    )
    if s["engine_points"]:
        pl(points_line(s["engine_points"], s["points_hit"], s["points_reached"]))
    other = sorted(p for p in s["points_hit"] if p not in s["engine_points"])
    if other:
        pl("injectors hit besides the engine's points: %s" % ", ".join(other))
    pl(
        "delays: %d pauses in %d of %d iterations (delay_one_in: no fault, race windows widened)"
        % (s["delays"], s["iterations_delayed"], s["iterations_total"])
    )
    sweep_line(s.get("wal_sweep"), pl)
    if "batches_cut" in s:
        pl(
            "batches cut by a crash: %d, each found all old or all new after it "
            "(a half applied one fails as wrong_value)" % s["batches_cut"]
        )


def sweep_line(sw, pl):
    """The summary's line on the log sweep SW (summary.json's "wal_sweep"),
    when it made trials."""
    if (sw or {}).get("trials"):
        pl(
            "log sweep: %d bits of replayed log records flipped one at a time in copies of %d "
            "crashed databases: %d reported, %d swallowed (in bitflip_wal above)"
            % (sw["trials"], sw["restarts"], sw["detected"], sw["swallowed"])
        )


def summarize(ct, runs, interrupted):
    """The final table on stdout, summary.json and junit.xml in the report
    directory.  Returns the number of failed iterations."""
    recs = sorted(ct.records, key=lambda r: (r["run"], r["index"]))
    summary = summary_of(ct, runs, interrupted, recs)
    nfail = summary["failed"]
    pl = ct.p.line
    print_summary(pl, summary)
    write_json(os.path.join(ct.report_dir, "summary.json"), fit(summary))
    write_junit(os.path.join(ct.report_dir, "junit.xml"), summary, recs)
    try:
        write_page(os.path.join(ct.report_dir, "report.html"), render_runs([ct.report_dir]))
    except Exception as e:  # the page is a view: its failure never hides the verdict
        pl("crashtest: WARNING: report.html not written: %s" % e)
    # An internal error of crashtest itself is never a pass: the runs
    # it stopped judged nothing (internal-error.txt has the trace).
    status = (
        "ERROR (crashtest itself failed: internal-error.txt)"
        if ct.internal_error
        else "PASS"
        if not nfail and not interrupted
        else "INTERRUPTED"
        if interrupted and not nfail
        else "FAIL"
    )
    pl("crashtest: %s (summary.json, junit.xml and report.html in %s)" % (status, ct.report_dir))
    return nfail


def junit_props(parent, props):
    """A <properties> element under PARENT, one <property> per (name, value)."""
    el = ET.SubElement(parent, "properties")
    for k, v in props:
        ET.SubElement(el, "property", name=k, value="" if v is None else str(v))
    return el


def write_junit(path, summary, recs):
    """Test names a dashboard can track from night to night: one suite of
    one test case per fault class ("MODE.CLASS"), and one suite per run
    of one test case per iteration index ("MODE.iN").  Seeds, options and
    the repro line go in properties and system-out, never in a name."""
    mode = summary["mode"]
    nfail = sum(1 for r in recs if r["failure"])
    classes = summary["classes"]
    cls_fail = {c: sum(row.get(k, 0) for k in FAILURE_KEYS) for c, row in classes.items()}
    stopped = summary.get("verdict") == INTERRUPTED
    root = ET.Element(
        "testsuites",
        name="crashtest.%s" % mode,
        tests=str(len(recs) + len(classes) + stopped),
        failures=str(nfail + sum(1 for v in cls_fail.values() if v)),
        errors=str(int(stopped)),
        time="%.3f" % summary["elapsed_s"],
    )
    common = junit_common(summary, mode)
    host = socket.gethostname()
    junit_classes(root, summary, recs, cls_fail, common, host)
    junit_runs(root, mode, recs, common, host)
    if stopped:
        junit_interrupted(root, summary, common, host)
    tree = ET.ElementTree(root)
    tmp = path + ".tmp"
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)


def junit_common(summary, mode):
    """The properties of every suite of run SUMMARY: [(name, value)]."""
    build = summary.get("build") or {}
    return [
        ("seed", summary["seed"]),
        ("seed_given", "yes" if summary.get("seed_given") else "no (random)"),
        ("mode", mode),
        ("shard", summary["shard"]),
        ("jobs", summary["jobs"]),
        ("command_line", shlex.join(["crashtest.py"] + list(summary.get("arguments") or []))),
        ("git_describe", build.get("git_describe")),
        ("git_commit", build.get("git_commit")),
    ]


def junit_classes(root, summary, recs, cls_fail, common, host):
    """The suite "crashtest.MODE.classes" under ROOT: one test case per
    fault class of SUMMARY's table, failed when CLS_FAIL counts failures
    RECS blame on it, skipped when it was not injected."""
    mode = summary["mode"]
    classes = summary["classes"]
    # The classes: every class of the table, each night (not injected: skipped).
    order = sorted(classes, key=lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else 99)
    suite = ET.SubElement(
        root,
        "testsuite",
        name="crashtest.%s.classes" % mode,
        tests=str(len(order)),
        failures=str(sum(1 for c in order if cls_fail[c])),
        errors="0",
        skipped=str(sum(1 for c in order if not classes[c].get("injected") and not cls_fail[c])),
        time="%.3f" % summary["elapsed_s"],
        hostname=host,
    )
    junit_props(suite, common)
    for c in order:
        row = classes[c]
        tc = ET.SubElement(
            suite,
            "testcase",
            classname="crashtest.%s.classes" % mode,
            name="%s.%s" % (mode, c),
            time="0",
        )
        junit_props(tc, [(k, row.get(k, 0)) for k in OUTCOMES + FAILURE_KEYS])
        if cls_fail[c]:
            who = [r for r in recs if r["failure"] and c in blamed_classes(r)]
            kinds = [k for k in FAILURE_KEYS if row.get(k)]
            el = ET.SubElement(
                tc,
                "failure",
                type="+".join(kinds),
                message="%s: %s" % (c, ", ".join("%s=%d" % (k, row[k]) for k in kinds)),
            )
            el.text = "\n".join(
                "%s: %s\nrepro: %s" % (r["id"], r["failure"]["message"], r.get("repro"))
                for r in who
            )
        elif not row.get("injected"):
            ET.SubElement(tc, "skipped", message="not injected in this run")
        ET.SubElement(tc, "system-out").text = json.dumps(row, sort_keys=True)


def junit_runs(root, mode, recs, common, host):
    """One suite "crashtest.MODE.runN" per run under ROOT, of one test case
    per iteration of RECS."""
    by_run = {}
    for r in recs:
        by_run.setdefault(r["run"], []).append(r)
    for run, rs in sorted(by_run.items()):
        name = "crashtest.%s.run%d" % (mode, run)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=name,
            tests=str(len(rs)),
            failures=str(sum(1 for r in rs if r["failure"])),
            errors="0",
            skipped="0",
            time="%.3f" % sum(r["elapsed"] for r in rs),
            hostname=host,
        )
        junit_props(suite, common + [("run", run), ("run_seed", rs[0]["run_seed"])])
        for r in rs:
            junit_iteration(suite, name, mode, r)


def junit_iteration(suite, name, mode, r):
    """Iteration record R's test case "MODE.iN" in SUITE (NAME): its seed,
    options and repro line as properties, its failure's output tail."""
    tc = ET.SubElement(
        suite,
        "testcase",
        classname=name,
        name="%s.i%d" % (mode, r["index"]),
        time="%.3f" % r["elapsed"],
    )
    junit_props(
        tc,
        [
            ("seed", r["seed"]),
            ("kind", r["kind"]),
            ("verdict", r["verdict"]),
            ("artifacts", r.get("artifacts")),
            ("repro", r.get("repro")),
        ]
        + [("option." + k, v) for k, v in sorted(dict(r["db_params"], **r["params"]).items())],
    )
    if r["failure"]:
        f = r["failure"]
        el = ET.SubElement(
            tc,
            "failure",
            type=f["kind"],
            message="%s at %s: %s" % (f["kind"], f["step_name"], f["message"]),
        )
        st = r["steps"][f["step"]].get("result") or {}
        el.text = "%s\n\n%sartifacts: %s\nrepro: %s\n" % (
            st.get("output_tail", ""),
            swarm_text(r.get("swarm")) + "\n" if r.get("swarm") else "",
            r.get("artifacts"),
            r.get("repro"),
        )
    out = ET.SubElement(tc, "system-out")
    out.text = "seed: %d\nrepro: %s\n%s\n" % (
        r["seed"],
        r.get("repro") or "(passed: no artifacts kept)",
        json.dumps(
            {
                "params": r["params"],
                "db_params": r["db_params"],
                "totals": r["totals"],
                "swarm": r.get("swarm"),
            },
            sort_keys=True,
        ),
    )


def junit_interrupted(root, summary, common, host):
    """An interrupted run: a suite "crashtest.MODE.run" whose one test case
    "MODE.interrupted" is an error, so that a dashboard shows the night
    neither green nor as a failure of the engine."""
    mode = summary["mode"]
    suite = ET.SubElement(
        root,
        "testsuite",
        name="crashtest.%s.run" % mode,
        tests="1",
        failures="0",
        errors="1",
        skipped="0",
        time="%.3f" % summary["elapsed_s"],
        hostname=host,
    )
    junit_props(suite, common)
    tc = ET.SubElement(
        suite,
        "testcase",
        classname="crashtest.%s.run" % mode,
        name="%s.interrupted" % mode,
        time="%.3f" % summary["elapsed_s"],
    )
    ET.SubElement(
        tc,
        "error",
        type="interrupted",
        message="%s: stopped by SIGINT or SIGTERM after %d iterations, "
        "none failed: the run was not judged to its end"
        % (INTERRUPTED, summary["iterations_total"]),
    )


# summary.json stays small: at most this many timeline rows (failures
# always kept, the rest evenly sampled) and full failure records.
MAX_TIMELINE = 1500
MAX_FULL_FAILURES = 10
# iterations.jsonl is gzipped at the end of a run above this size.
JSONL_GZIP_ABOVE = 4 << 20


SUMMARY_BUDGET = 900 << 10


def fit(summary):
    """SUMMARY within SUMMARY_BUDGET bytes as written: fewer full failure
    records first (iterations.jsonl has them all), then a sparser
    timeline (failed iterations kept)."""

    def size():
        return len(json.dumps(summary, indent=1, sort_keys=True, default=str))

    while size() > SUMMARY_BUDGET and summary["failures"]:
        summary["failures"] = summary["failures"][:-1]
    while size() > SUMMARY_BUDGET and len(summary["iterations"]) > 1:
        rows = summary["iterations"]
        summary["iterations"] = [r for n, r in enumerate(rows) if r.get("failure") or n % 2 == 0]
        summary["iterations_sampled"] = (summary.get("iterations_sampled") or 1) * 2
        if len(summary["iterations"]) == len(rows):
            break
    return summary


def timeline_row(r):
    """An iteration in a few fields: summary.json's "iterations" entry."""
    return {
        "id": r["id"],
        "run": r["run"],
        "index": r["index"],
        "seed": r["seed"],
        "kind": r["kind"],
        "verdict": r["verdict"],
        "failure": (r["failure"] or {}).get("kind"),
        "elapsed": r["elapsed"],
        "t_end": r.get("t_end"),
        "judging_mode": r.get("judging_mode"),
        "w": (r.get("params") or {}).get("block_protection_bytes_per_key"),
        "injected": (r.get("totals") or {}).get("injected", 0),
    }


def timeline_of(recs):
    """(rows, k): the timeline rows, every k-th iteration (and every
    failed one) when there are more than MAX_TIMELINE."""
    k = max(1, math.ceil(len(recs) / MAX_TIMELINE))
    return [timeline_row(r) for n, r in enumerate(recs) if r["failure"] or n % k == 0], k


def finish_jsonl(ct):
    """Close iterations.jsonl; gzip it when large.  Returns its name."""
    path = os.path.join(ct.report_dir, "iterations.jsonl")
    f = getattr(ct, "jsonl", None)
    if f:
        f.close()
        ct.jsonl = None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size <= JSONL_GZIP_ABOVE:
        return "iterations.jsonl"
    with open(path, "rb") as src, gzip.open(path + ".gz.tmp", "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    os.replace(path + ".gz.tmp", path + ".gz")
    os.unlink(path)
    return "iterations.jsonl.gz"


def read_iterations(report_dir):
    """Every iteration's full record from REPORT_DIR's iterations.jsonl
    (or .jsonl.gz)."""
    for name, opener in (("iterations.jsonl", open), ("iterations.jsonl.gz", gzip.open)):
        path = os.path.join(report_dir, name)
        if os.path.exists(path):
            with opener(path, "rt") as f:
                return [json.loads(line) for line in f if line.strip()]
    return []


def width_table(recs):
    """The per-KV protection table: per width w, iterations, cache flips
    checked, escapes (wrong answers without a report), the oracle's
    Poisson bound on escapes (summed over processes), the observed rate
    with its 95% interval, and 2^-8w, the odds a w-byte code lets through."""
    widths = {}
    for r in recs:
        try:
            w = int(r["params"].get("block_protection_bytes_per_key", 0) or 0)
        except (TypeError, ValueError):
            continue
        row = widths.setdefault(w, {"iterations": 0, "checked": 0, "escaped": 0, "bound": 0})
        row["iterations"] += 1
        for s in r["steps"]:
            if not counted(s, s.get("result")):
                continue
            rep = s["result"]["report"]
            e = (rep.get("escape_rate_per_protection_width") or {}).get(str(w)) or {}
            row["checked"] += int(e.get("checked", 0) or 0)
            row["escaped"] += int(e.get("escaped", 0) or 0)
            row["bound"] += int(e.get("bound", 0) or 0)
            for name, c in (e.get("patterns") or {}).items():  # checked pattern flips (oracle V9)
                pc = row.setdefault("patterns", {}).setdefault(
                    name, {"checked": 0, "detected": 0, "escaped": 0, "expected": 0.0}
                )
                for k in ("checked", "detected", "escaped"):
                    pc[k] += int(c.get(k, 0) or 0)
                pc["expected"] += float(c.get("expected", 0) or 0)
    for w, row in widths.items():
        for name, pc in (row.get("patterns") or {}).items():
            det = pc["detected"]
            pc.update(cell_verdict(pc["checked"], pc["escaped"], pc["expected"]))
            pc["detected"] = det
        n, x = row["checked"], row["escaped"]
        row["rate"] = x / n if n else None
        row["ci95"] = list(clopper_pearson(x, n)) if n else None
        row["nominal"] = 2.0 ** (-8 * w) if w else None
        row["bound_rate"] = row["bound"] / n if n else None
    return widths
