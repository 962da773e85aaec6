"""The mutants mode (docs/mutants.md): how much the harness catches, measured.

tests/mutants.txt lists planted bugs, each a compile-time switch
ENG_BROKEN_<NAME> in the engine or the fault library.  For each bug the
mode builds build/mutants/NAME/{stress,powerloss} (the Makefile's rules),
runs the mode built to see its kind against it until the first failure
or the budget, and records whether it was caught, how fast, as what and
which fault class the failing report blamed.  The mode is the
catalogue's (GUARANTEE/MODE): `crashtest.py simple` unless a line says
`protection`, the statistical mode for bugs of the per-KV codes'
construction (a code whose escape odds are wrong is seen by counting
escapes over many checked flips, not by one workload's luck).  A bug that ran its whole budget
as PASS is a hole in the harness, and the mode exits 1.

The run's seed derives each bug's simple seed (derive(seed, "mutant",
NAME)), so `crashtest.py mutants --seed S NAME` replays one bug's run.
The stress binary must say it carries the bug (its report's planted_bug):
a mutant run can never measure the real engine by mistake.

--harness measures the suites that guard the harness against the planted
harness bugs of tests/harness_mutants.txt instead: crashtest/hmutants.py."""

import datetime
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    EXIT_USAGE,
    INTERRUPTED,
    REPO,
    UsageError,
    last_line,
    nice_path,
    run_make,
    write_json,
)
from .judge import report_failure_keys
from .folders import claim_report_dir, release
from .htmlreport import blamed_classes
from .output import Printer
from .params import swarm_brief
from .procs import STOP, die_with_parent
from .protection import replay_argv
from .seeds import derive
from .shrink import shrink_folder

MUTANTS_FILE = os.path.join(REPO, "tests", "mutants.txt")
# The harness bugs' catalogue: crashtest/hmutants.py measures it (--harness).
HARNESS_MUTANTS_FILE = os.path.join(REPO, "tests", "harness_mutants.txt")
MUTANT_GRACE_S = 240  # an iteration in flight at the budget may finish
# The modes a catalogue line may name after its guarantee (GUARANTEE/MODE);
# the first is the default.
MODES = ("simple", "protection")


class Mutant:
    def __init__(self, name, guarantee, bug, line, mode=MODES[0]):
        self.name, self.guarantee, self.bug, self.line, self.mode = name, guarantee, bug, line, mode

    @property
    def macro(self):
        return "ENG_BROKEN_" + self.name.upper().replace("-", "_")


def read_mutants(path=MUTANTS_FILE):
    """The catalogue: [Mutant] in file order.  A malformed line is a usage
    error naming it (the Makefile reads the same file)."""
    out, seen = [], set()
    try:
        f = open(path)
    except OSError as e:
        raise UsageError("cannot read the catalogue %s: %s" % (path, e.strerror))
    with f:
        for n, line in enumerate(f, 1):
            t = line.strip()
            if not t or t.startswith("#"):
                continue
            parts = t.split(None, 2)
            if len(parts) < 3 or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", parts[0]):
                raise UsageError(
                    "%s:%d: want 'NAME GUARANTEE description' (NAME in lower-case-with-dashes)"
                    % (path, n)
                )
            if parts[0] in seen:
                raise UsageError("%s:%d: %s listed twice" % (path, n, parts[0]))
            guarantee, _, mode = parts[1].partition("/")
            if mode and mode not in MODES:
                raise UsageError(
                    "%s:%d: mode %r of %s: want one of %s"
                    % (path, n, mode, parts[0], ", ".join(MODES))
                )
            seen.add(parts[0])
            out.append(Mutant(parts[0], guarantee, parts[2], n, mode or MODES[0]))
    return out


def pick_by_date(names, day=None):
    """One of NAMES chosen by the UTC date: CI's daily smoke mutant."""
    day = datetime.datetime.now(datetime.timezone.utc).date() if day is None else day
    return names[day.toordinal() % len(names)]


def mutant_result(m, summary, budget, seed, rc):
    """mutants.json's entry for M from its simple run's SUMMARY."""
    # summary.json's timeline rows (all of them for runs this short) and
    # the failed iterations' full records.
    recs = sorted(summary.get("iterations") or [], key=lambda r: r.get("t_end", 0))
    failed = sorted(summary.get("failures") or [], key=lambda r: r.get("t_end", 0))
    res = {
        "name": m.name,
        "guarantee": m.guarantee,
        "mode": m.mode,
        "bug": m.bug,
        "macro": m.macro,
        "seed": seed,
        "budget_s": budget,
        "iterations": summary.get("iterations_total", len(recs)),
        "elapsed_s": summary.get("elapsed_s"),
        "caught": bool(failed),
        "seconds": None,
        "iterations_to_catch": None,
        "kind": None,
        "keys": [],
        "classes": [],
        "message": None,
        "step": None,
        "repro": None,
        "planted_bug_seen": sorted(set(summary.get("planted_bugs") or [])),
    }
    if failed:
        first = failed[0]
        f = first["failure"]
        before = sum(1 for r in recs if r.get("t_end", 0) < first.get("t_end", 0))
        res.update(
            seconds=first.get("t_end"),
            iterations_to_catch=before + 1,
            kind=f.get("kind"),
            keys=f.get("keys") or [],
            classes=blamed_classes(first),
            message=f.get("message"),
            step=f.get("step_name"),
            repro=first.get("repro"),
            swarm=first.get("swarm"),
        )
    elif summary.get("internal_error"):
        res["error"] = True
        res["message"] = "crashtest itself failed (internal-error.txt): nothing was measured"
    elif rc not in (
        EXIT_PASS,
        EXIT_FAIL,
        EXIT_INTERRUPTED,
    ):  # (interrupted: mutants' own stop at its deadline)
        res["error"] = True
        res["message"] = "the simple run ended with exit %s" % rc
    return res


def read_report(d):
    """A stress run's report.json in folder D, or {}."""
    try:
        with open(os.path.join(d or "", "report.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def failure_line(d):
    """The first line of a stress run's output (D/out.txt) that names its
    failure, or its last line."""
    try:
        with open(os.path.join(d or "", "out.txt"), errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return None
    named = [line for line in lines if line.startswith("stress: FAILURE")]
    return (named or lines or [None])[0]


def failed_cells(summary):
    """The width/pattern cells of a protection SUMMARY whose escapes broke
    their bound, and the widths whose summed escapes did: ['w=1 single: 3
    escaped, bound 0', 'w=2 (all patterns): 9 escaped, bound 5', ...]."""
    out = []
    for w, row in sorted((summary.get("protection") or {}).items(), key=lambda kv: int(kv[0])):
        for p, c in sorted((row.get("patterns") or {}).items()):
            if c.get("fail"):
                out.append(
                    "w=%s %s: %s escaped, bound %s" % (w, p, c.get("escaped"), c.get("bound"))
                )
        if row.get("fail"):
            out.append(
                "w=%s (all patterns): %s escaped, bound %s"
                % (w, row.get("escaped"), row.get("bound"))
            )
    return out


def protection_result(m, summary, budget, seed, rc, cmd):
    """mutants.json's entry for M from its protection run's SUMMARY (CMD:
    that run): caught when one stress run failed its own oracle, or when
    a width's escapes broke their bound over all runs."""
    res = dict(
        mutant_result(m, {}, budget, seed, rc),
        iterations=summary.get("runs", 0),
        elapsed_s=summary.get("elapsed_s"),
        mode="protection",
    )
    failed = summary.get("failures") or []
    reports = [read_report(f.get("dir")) for f in failed]
    res["planted_bug_seen"] = sorted({r["planted_bug"] for r in reports if r.get("planted_bug")})
    if failed:
        first, rep = failed[0], reports[0]
        keys = report_failure_keys(rep)
        classes = sorted(
            c
            for c, counts in (rep.get("classes") or {}).items()
            if any(int(counts.get(k, 0) or 0) for k in keys)
        )
        res.update(
            caught=True,
            seconds=first.get("at"),
            iterations_to_catch=int(first.get("index") or 0) + 1,
            kind=keys[0] if keys else "error",
            keys=keys,
            classes=classes,
            run_dir=first.get("dir"),
            message=failure_line(first.get("dir")),
            step="protection run %s (w = %s)" % (first.get("index"), first.get("w")),
            command=first.get("command"),
            repro=first.get("repro") or first.get("command"),
        )
    elif summary.get("verdict") == "fail":
        res.update(
            caught=True,
            seconds=summary.get("elapsed_s"),
            iterations_to_catch=summary.get("runs"),
            kind="escape_rate",
            message="escapes above their bound: %s" % "; ".join(failed_cells(summary)),
            repro=" ".join(shlex.quote(x) for x in cmd),
        )
    elif rc not in (EXIT_PASS, EXIT_FAIL, EXIT_INTERRUPTED):
        res.update(error=True, message="the protection run ended with exit %s" % rc)
    return res


def protection_real_check(r, summary, build, cmd):
    """The real stress binary on what caught R: the failed run's command
    again (same seed, fresh folders), or for an escape-rate catch the same
    protection run (CMD with the real binary).  If the real engine fails
    it too, the catch is no evidence of the planted bug."""
    stress = os.path.join(build, "stress")
    if not os.access(stress, os.X_OK):
        r["real_engine_replay"] = "not run"
        return
    d = tempfile.mkdtemp(prefix="crashtest-realrun-")
    try:
        if r["kind"] == "escape_rate":
            real = list(cmd)
            real[real.index("--stress-binary") + 1] = stress
            real[real.index("--report-dir") + 1] = os.path.join(d, "report")
        else:
            real = replay_argv(r["command"], stress, d)
        rc, _ = run_check(real, timeout=4 * float(r.get("budget_s") or 90) + 120)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    r["real_engine_replay"] = (
        "passes" if rc == 0 else "fails" if rc == 1 else "error (exit %s)" % rc
    )
    if rc != 0:
        r["caught"] = False
        r[
            "message"
        ] = "the real engine's replay %s: the failure (%s) is no evidence of this bug" % (
            r["real_engine_replay"],
            r["kind"],
        )


# Replays of a failed iteration that ran several threads, with the real
# binaries: such a replay is not deterministic, and one that passes proves
# little (a false alarm of the real engine's own, met in one replay of
# three, was once counted as the planted bug's catch).
REAL_REPLAY_TRIES = 5


def real_replay_tries(art):
    """How many times real_check replays the failed iteration in ART: one
    when its workload ran on one thread (deterministic), else (or when
    its meta.json does not say) REAL_REPLAY_TRIES."""
    try:
        with open(os.path.join(art, "meta.json")) as f:
            threads = int((json.load(f).get("params") or {}).get("threads") or 0)
    except (OSError, ValueError, TypeError):
        threads = 0
    return 1 if threads == 1 else REAL_REPLAY_TRIES


def real_check(r, summary, build, simple_args):
    """Replay the failed iteration from its start with the real binaries
    (BUILD/stress, BUILD/powerloss).  If the real engine fails it the same
    way, the failure is no evidence of the planted bug (a flake of the
    harness or an engine bug of its own): not caught, and said so.

    A start that the planted bug wrote (the failed iteration was not its
    database's first) may carry the bug's own damage on disk, and then
    the real engine fails that replay for the bug's sake: seal-before-
    witness left every log block's first sector with a bad trailer, and
    the real engine, reading that log, failed as the mutant did (seed
    20261801).  Such a failure is checked once more with the real
    binaries from a fresh database: the same run (same seed, same
    options) up to the failed iteration.  Only if that fails the same way
    too is the catch no evidence."""
    first = sorted(summary.get("failures") or [], key=lambda i: i.get("t_end", 0))
    art = first[0].get("artifacts") if first else None
    stress, powerloss = os.path.join(build, "stress"), os.path.join(build, "powerloss")
    if not art or not os.path.isdir(art) or not os.access(stress, os.X_OK):
        r["real_engine_replay"] = "not run"
        return
    cmd = [
        sys.executable,
        os.path.join(REPO, "crashtest.py"),
        "repro",
        art,
        "--from",
        "start",
        "--stress-binary",
        stress,
        "--powerloss-binary",
        powerloss,
        "--tries",
        str(real_replay_tries(art)),
    ]
    rc, out = run_check(cmd)
    # Only the same failure at the same step is the real engine's own: a
    # different one (a bug that changes the file format leaves a start
    # state the real engine cannot even read) says nothing either way.
    same = rc == 1 and "crashtest: reproduced:" in out
    r["real_engine_replay"] = (
        "passes" if rc == 0 else "fails" if same else "fails differently" if rc == 1 else "error"
    )
    if same and int(first[0].get("db_age") or 0) > 0:
        same = real_run_fails_same(
            r, first[0], summary.get("jobs") or 1, stress, powerloss, simple_args
        )
    if same:
        r["caught"] = False
        r["message"] = (
            "the real engine fails the same iteration replayed from its start: the failure (%s) is "
            "no evidence of this bug" % r["kind"]
        )


def run_check(cmd, timeout=600):
    """(exit status or None on timeout, output) of a check command."""
    try:
        p = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            timeout=timeout,
            cwd=REPO,
        )
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return None, ""


def protection_cmd(seed, duration, stress, report_dir):
    """The `protection` run that hunts one planted bug of the codes'
    construction (one stress run at a time: it has no -j)."""
    return [
        sys.executable,
        os.path.join(REPO, "crashtest.py"),
        "protection",
        "--duration",
        "%g" % duration,
        "--seed",
        str(seed),
        "--stress-binary",
        stress,
        "--report-dir",
        report_dir,
    ]


def simple_cmd(seed, duration, jobs, stress, powerloss, report_dir, simple_args):
    """The `simple` run that hunts one planted bug (and, with the real
    binaries, real_check's rerun of it)."""
    return [
        sys.executable,
        os.path.join(REPO, "crashtest.py"),
        "simple",
        "--duration",
        "%g" % duration,
        "--max-failures",
        "1",
        "-j",
        str(jobs),
        "--seed",
        str(seed),
        "--stress-binary",
        stress,
        "--powerloss-binary",
        powerloss,
        "--report-dir",
        report_dir,
    ] + list(simple_args)


def real_run_fails_same(r, failed, jobs, stress, powerloss, simple_args):
    """R's run again (its seed, JOBS, SIMPLE_ARGS) with the real binaries on
    a fresh database, up to FAILED's iteration: True if it fails with
    FAILED's kind.  Notes the outcome in R."""
    rd = tempfile.mkdtemp(prefix="crashtest-realrun-")
    try:
        budget = float(r.get("budget_s") or 90)
        cmd = simple_cmd(r["seed"], 2 * budget, jobs, stress, powerloss, rd, simple_args) + [
            "--iterations",
            str(int(failed.get("index") or 0) + 1),
        ]
        rc, _ = run_check(cmd, timeout=4 * budget + 120)
        try:
            with open(os.path.join(rd, "summary.json")) as f:
                kinds = [
                    (i.get("failure") or {}).get("kind") for i in json.load(f).get("failures") or []
                ]
        except (OSError, ValueError):
            kinds = []
    finally:
        shutil.rmtree(rd, ignore_errors=True)
    same = rc == 1 and (failed.get("failure") or {}).get("kind") in kinds
    r["real_engine_replay"] = (
        "fails, and fails the same run from a fresh database"
        if same
        else "fails from the start the planted bug wrote; passes the same run from a fresh "
        "database"
        if rc == 0
        else "fails from the start the planted bug wrote; the same run from a fresh database "
        "ends otherwise (exit %s)" % rc
    )
    return same


def mutants_table(doc):
    """The catalogue with this run's figures, as the Markdown table the
    docs/mutants.md keeps (REPORT_DIR/mutants.md)."""
    rows = ["| planted bug | guarantee | caught in | as | class blamed |", "|---|---|---|---|---|"]
    for r in doc["mutants"]:
        if r["caught"]:
            when = "%.1f s (%d it.)" % (r["seconds"], r["iterations_to_catch"])
        elif not r.get("judged", True):
            when = "not judged (interrupted)"
        elif r.get("error"):
            when = "error"
        else:
            when = "**missed** (%g s)" % r["budget_s"]
        as_ = (r["kind"] if r["caught"] else None) or "-"
        if r["caught"] and r.get(
            "swarm"
        ):  # the swarm the catching iteration ran (crashtest/params.py)
            as_ += " (%s)" % swarm_brief(r["swarm"])
        rows.append(
            "| `%s` | %s | %s | %s | %s |"
            % (
                r["name"],
                r["guarantee"],
                when,
                as_,
                ", ".join(r["classes"] if r["caught"] else []) or "-",
            )
        )
    rows.append("")
    rows.append(
        "%s (budget %g s, -j %d, seed %d)."
        % (doc["summary_line"], doc["budget_s"], doc["jobs"], doc["seed"])
    )
    return "\n".join(rows) + "\n"


def shrink_summary(doc):
    """mutants.json's "shrink" entry of one bug from its shrink.json."""
    keep = (
        "threads",
        "ops",
        "fault_classes",
        "steps",
        "deterministic",
        "repro_seconds",
        "repro_reproduced",
        "failed_again",
        "start_ops",
        "regrown",
        "judged_as",
    )
    return {
        "original": {k: v for k, v in (doc.get("original") or {}).items() if k in keep},
        "shrunk": {k: v for k, v in (doc.get("shrunk") or {}).items() if k in keep} or None,
        "elapsed_s": doc.get("elapsed_s"),
        "kind": doc.get("kind"),
        "match_why": doc.get("match_why"),
    }


def shrink_table(rows):
    """The shrinking table of docs/shrink-measurements.md: ROWS of (bug name, shrink summary)."""
    out = [
        "| planted bug | kind | threads | ops | fault classes | steps | shrunk in | repro of the "
        "shrunk run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, sh in rows:
        o, s = sh["original"], sh.get("shrunk")
        if not s:
            out.append(
                "| `%s` | %s | %s | %s | %s | %s | %s | the recorded run did not fail again |"
                % (
                    name,
                    sh.get("kind"),
                    o.get("threads"),
                    o.get("ops") or "?",
                    ", ".join(o.get("fault_classes") or []) or "none",
                    o.get("steps"),
                    "%.0f s" % (sh.get("elapsed_s") or 0),
                )
            )
            continue
        ratio = ""
        if o.get("ops") and s.get("ops"):
            x = o["ops"] / s["ops"]
            # Below ten, rounded down: 2,029 -> 203 is 9.995x, not "10.0x".
            ratio = " (%.0fx)" % x if x >= 10 else " (%.1fx)" % (math.floor(x * 10) / 10)
        elif o.get("ops") and s.get("ops") == 0:
            ratio = " (all)"
        elif o.get("ops") == 0:
            ratio = " (none to remove: the recorded run did no op)"
        if o.get("start_ops"):
            # K14: earlier iterations grew the database the recorded run
            # started from; their ops count in both sizes until a shrunk
            # run starts from a fresh database.
            # K15: a fresh one regrown as the earlier iterations did.
            ratio += "; %d of them grew its database, %s" % (
                o["start_ops"],
                "still in the shrunk run"
                if s.get("start_ops")
                else "the shrunk run starts fresh and redoes %d of those iterations" % s["regrown"]
                if s.get("regrown")
                else "the shrunk run starts fresh",
            )
        o = dict(
            o, ops="?" if o.get("ops") is None else o["ops"]
        )  # killed before its first progress note
        times = s.get("repro_seconds") or []
        # The recorded run did not fail again: what was shrunk was found by
        # the seed search (one thread, other seeds; shrink.py's K6).
        found = "; found by a seed search" if o.get("failed_again") is False else ""
        # A match by keys (shrink.py's K24): the kind among another's keys.
        kind = (
            sh.get("kind")
            if s.get("judged_as") in (None, sh.get("kind"))
            else "%s (among the keys of a %s)" % (sh.get("kind"), s["judged_as"])
        )
        out.append(
            "| `%s` | %s | %s -> %s | %s -> %s%s | %s -> %s | %s -> %s | %.0f s | %s s, reproduced "
            "%s%s |"
            % (
                name,
                kind,
                o.get("threads"),
                s.get("threads"),
                o.get("ops"),
                s.get("ops"),
                ratio,
                ", ".join(o.get("fault_classes") or []) or "none",
                ", ".join(s.get("fault_classes") or []) or "none",
                o.get("steps"),
                s.get("steps"),
                sh.get("elapsed_s") or 0,
                "%.1f" % max(times) if times else "-",
                s.get("repro_reproduced"),
                found,
            )
        )
    return "\n".join(out) + "\n"


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def median_time_to_catch(results):
    """The median of the catch times, a missed bug counting as never
    caught (inf); None for no results."""
    return median([r["seconds"] if r["caught"] else float("inf") for r in results])


def mutation_score_line(results):
    """'mutation score: K of N caught, median time to catch T s'.  A missed
    bug counts as never caught (infinitely slow), so the median is honest:
    when half the bugs were missed it is '> budget'."""
    caught = [r for r in results if r["caught"]]
    med = median_time_to_catch(results)
    if med is None:
        t = "-"
    elif med == float("inf"):
        t = "> %g" % max(r["budget_s"] for r in results)
    else:
        t = "%.1f" % med
    return "mutation score: %d of %d caught, median time to catch %s s" % (
        len(caught),
        len(results),
        t,
    )


def list_catalogues(a):
    """--list: each bug of both catalogues with its guarantee, the mode
    that hunts it (simple, protection; the harness's: its suites) and the
    command that measures it."""
    rows = [(m, m.mode, "mutants") for m in read_mutants(a.catalogue)]
    if os.path.exists(HARNESS_MUTANTS_FILE):
        rows += [(m, "suites", "mutants --harness") for m in read_mutants(HARNESS_MUTANTS_FILE)]
    width = max([len(m.name) for m, _, _ in rows] + [4])
    print(
        "%-*s  %-10s  %-10s  %-30s  %s" % (width, "name", "guarantee", "mode", "run by", "the bug")
    )
    for m, mode, cmd in rows:
        print(
            "%-*s  %-10s  %-10s  %-30s  %s"
            % (width, m.name, m.guarantee, mode, "crashtest.py " + cmd, m.bug)
        )
    return EXIT_PASS


def missing_binaries(build, name, binaries):
    """The usage error for --no-build when NAME's binaries are not built:
    the make command that builds them, as mutants itself runs it."""
    rel = os.path.relpath(build, REPO)
    return UsageError(
        "%s missing: build %s with 'make -C %s BUILD=%s %s', or drop --no-build"
        % (
            ", ".join(binaries),
            name,
            shlex.quote(REPO),
            shlex.quote(rel),
            " ".join(shlex.quote(os.path.relpath(b, REPO)) for b in binaries),
        )
    )


def simple_refused(report_dir, made, name, simple_opts):
    """The usage error of a first simple run that refused its options
    (--simple, a value stress rejects): its message, and the report folder
    left as it was before (removed if this run made it)."""
    log = os.path.join(report_dir, name + ".log")
    try:
        with open(log) as f:
            why = [line.strip() for line in f if line.strip()][-1]
        os.unlink(log)
    except (OSError, IndexError):
        why = "(no output)"
    release(report_dir, remove=made)
    return UsageError(
        "simple refused the options of the run (--simple %r): %s" % (simple_opts, why)
    )


def not_judged(m, seed, budget):
    """mutants.json's entry of the bug whose run a stop cut short: neither
    caught nor missed."""
    return dict(
        mutant_result(m, {}, budget, seed, None),
        judged=False,
        error=False,
        message="not judged: the measurement was interrupted during its run",
    )


def mutant_args(a):
    """mutants' arguments checked (--simple parsed into a.simple_args, a
    random a.seed drawn when none was given): (names, by_name, chosen)."""
    try:
        a.simple_args = shlex.split(a.simple_opts)
    except ValueError as e:
        raise UsageError("--simple: %s" % e)
    catalogue = read_mutants(a.catalogue)
    by_name = {m.name: m for m in catalogue}
    unknown = [n for n in a.names if n not in by_name]
    if unknown:
        raise UsageError(
            "not in %s: %s (known: %s)"
            % (nice_path(a.catalogue), ", ".join(unknown), ", ".join(by_name))
        )
    names = a.names or [m.name for m in catalogue]
    if a.pick_by_date:
        names = [pick_by_date(names)]
    chosen = [by_name[n] for n in names]
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    return names, by_name, chosen


def check_built(chosen, build):
    """--no-build: raises the usage error of the first bug whose binaries
    are not in BUILD/mutants/; returns None."""
    for m in chosen:
        needs = ("stress",) if m.mode == "protection" else ("stress", "powerloss")
        missing = [
            os.path.join(build, "mutants", m.name, b)
            for b in needs
            if not os.access(os.path.join(build, "mutants", m.name, b), os.X_OK)
        ]
        if missing:
            raise missing_binaries(build, m.name, missing)


def build_mutant(m, build, stress, powerloss, budget, p):
    """make M's binaries: None when built, else its build-failed record."""
    mk = run_make(
        [
            "make",
            "-s",
            "BUILD=%s" % os.path.relpath(build, REPO),
            os.path.relpath(stress, REPO),
            os.path.relpath(powerloss, REPO),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
    )
    if mk.returncode == 0:
        return None
    p.line("mutant %s: BUILD FAILED\n%s" % (m.name, mk.stdout[-2000:]))
    return dict(
        mutant_result(m, {}, budget, None, None),
        build_failed=True,
        message="make failed: %s" % last_line(mk.stdout),
    )


def suite_env(build, hmutant):
    """The suites' environment: BUILD names the build they test (every
    suite reads it); HMUTANT keeps the bug in whatever make they start."""
    env = dict(os.environ, BUILD=os.path.relpath(build, REPO))
    env.pop("HMUTANT", None)
    if hmutant:
        env["HMUTANT"] = hmutant
    return env


def make_targets(build, targets, hmutant=None):
    """make -j2 TARGETS with BUILD (relative to the repository): (ok, output)."""
    cmd = ["make", "-s", "-j2", "BUILD=%s" % os.path.relpath(build, REPO)] + list(targets)
    mk = run_make(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        env=suite_env(build, hmutant),
    )
    return mk.returncode == 0, mk.stdout


def run_mutant(cmd, log_path, budget):
    """One bug's simple or protection run, its output in LOG_PATH, stopped
    by SIGTERM past BUDGET and the grace or at a stop: its exit status."""
    with open(log_path, "w") as log:
        child = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
        deadline = time.monotonic() + budget + MUTANT_GRACE_S
        while child.poll() is None:
            if STOP.is_set() or time.monotonic() > deadline:
                # simple writes its reports on SIGTERM
                os.killpg(child.pid, signal.SIGTERM)
                try:
                    child.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                break
            time.sleep(0.2)
    return child.returncode


def read_summary(rd):
    """The summary.json of report folder RD: a dict ({} when none is read)."""
    try:
        with open(os.path.join(rd, "summary.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def mutant_record(a, m, summary, build, seed, rc, cmd, p):
    """mutants.json's entry of M's finished run: caught or not, checked
    against the real binaries, shrunk under --shrink, its rerun line."""
    r = (
        protection_result(m, summary, a.budget, seed, rc, cmd)
        if m.mode == "protection"
        else mutant_result(m, summary, a.budget, seed, rc)
    )
    # The binary must carry the bug it is said to carry.
    if r["planted_bug_seen"] and r["planted_bug_seen"] != [m.name]:
        r["caught"] = False
        r["message"] = "the stress binary reported planted bug(s) %s, not %s" % (
            r["planted_bug_seen"],
            m.name,
        )
    if r["caught"] and summary and m.mode == "protection":
        protection_real_check(r, summary, build, cmd)
    elif r["caught"] and summary:
        real_check(r, summary, build, a.simple_args)
    if (
        r["caught"]
        and summary
        and m.mode == "simple"
        and getattr(a, "shrink", False)
        and not STOP.is_set()
    ):
        # The full records of failed iterations (the timeline in
        # "iterations" is sampled and names no folder).
        first = sorted(
            (i for i in summary.get("failures") or [] if i.get("artifacts")),
            key=lambda i: i.get("t_end", 0),
        )
        art = first[0].get("artifacts") if first else None
        if art and os.path.isdir(art):
            _, sdoc = shrink_folder(art, a.shrink_budget, p)
            r["shrink"] = shrink_summary(sdoc)
    r["rerun"] = "%s mutants --seed %d --budget %g -j %d%s%s %s" % (
        nice_path(os.path.join(REPO, "crashtest.py")),
        a.seed,
        a.budget,
        a.jobs,
        " --simple %s" % shlex.quote(a.simple_opts) if a.simple_opts else "",
        " --build-dir %s" % shlex.quote(a.build_dir) if a.build_dir != "build" else "",
        m.name,
    )
    return r


def print_mutant(p, m, r):
    """M's console lines: caught (and its repro), an error, or missed; returns None."""
    if r["caught"]:
        p.line(
            "mutant %-32s caught in %6.1f s (%d %s) as %s%s; the real engine's replay: %s"
            % (
                m.name,
                r["seconds"],
                r["iterations_to_catch"],
                "runs of protection" if m.mode == "protection" else "iterations",
                r["kind"],
                " [class %s]" % ",".join(r["classes"]) if r["classes"] else "",
                r.get("real_engine_replay", "not run"),
            )
        )
        if r["repro"]:
            p.line("    repro: %s" % r["repro"])
    elif r.get("error"):
        p.line("mutant %-32s ERROR: %s" % (m.name, r["message"]))
    else:
        p.line(
            "mutant %-32s MISSED: %d iterations passed in %s s%s"
            % (
                m.name,
                r["iterations"],
                r["elapsed_s"],
                ("  (%s)" % r["message"]) if r["message"] else "",
            )
        )


def mutants_report(a, names, by_name, results, report_dir, t0, p):
    """The score line, mutants.json and mutants.md (and build/mutants.json
    after a whole run), the report folder released: the exit code."""
    judged = [r for r in results if r.get("judged", True)]
    line = mutation_score_line(judged) if judged else "mutation score: nothing judged"
    p.line(line)
    med = median_time_to_catch(results)
    doc = {
        "tool": "crashtest.py",
        "mode": "mutants",
        "seed": a.seed,
        "budget_s": a.budget,
        "jobs": a.jobs,
        "catalogue": nice_path(a.catalogue),
        "elapsed_s": round(time.monotonic() - t0, 3),
        "score": {
            "caught": sum(1 for r in judged if r["caught"]),
            "total": len(judged),
            "median_seconds": med if med is not None and med != float("inf") else None,
        },
        "summary_line": line,
        "interrupted": STOP.is_set(),
        "mutants": results,
        "verdict": "fail"
        if any(not r["caught"] for r in judged)
        else INTERRUPTED
        if STOP.is_set()
        else "pass",
    }
    write_json(os.path.join(report_dir, "mutants.json"), doc)
    with open(os.path.join(report_dir, "mutants.md"), "w") as f:
        f.write(mutants_table(doc))
        shrunk = [(r["name"], r["shrink"]) for r in results if r.get("shrink")]
        if shrunk:
            f.write("\n" + shrink_table(shrunk))
    # build/mutants.json is the last whole measurement of the catalogue: a
    # run of some bugs, or one interrupted, leaves it as it was.
    whole = not a.pick_by_date and set(names) == set(by_name)
    if whole and not STOP.is_set() and os.path.abspath(a.build_dir) == os.path.join(REPO, "build"):
        write_json(os.path.join(REPO, "build", "mutants.json"), doc)
    release(report_dir)
    p.line("crashtest: mutants.json: %s" % nice_path(os.path.join(report_dir, "mutants.json")))
    if any(not r["caught"] for r in judged):
        return EXIT_FAIL
    return EXIT_INTERRUPTED if STOP.is_set() else EXIT_PASS if judged else EXIT_FAIL


def mutants_mode(a, argv):
    """crashtest.py mutants: one run per planted bug, then the report: the exit code."""
    if getattr(a, "list", False):
        return list_catalogues(a)
    if getattr(a, "harness", False):
        # crashtest/hmutants.py builds on this module (the catalogue, make,
        # the engine's table): the one import that goes the other way.
        from .hmutants import harness_mode

        return harness_mode(a)
    names, by_name, chosen = mutant_args(a)
    build = os.path.abspath(a.build_dir)
    report_dir = a.report_dir or os.path.join(
        REPO,
        "build",
        "crashtest",
        "mutants-%s-%d" % (datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), os.getpid()),
    )
    if a.no_build:
        check_built(chosen, build)
    made = claim_report_dir(report_dir)
    p = Printer(tty=False)
    p.line(
        "crashtest: mutants: %d planted bugs, budget %g s each, -j %d, seed %d, reports in %s"
        % (len(chosen), a.budget, a.jobs, a.seed, nice_path(report_dir))
    )
    results = []
    t0 = time.monotonic()
    if not a.no_build:
        # The real binaries too: every catch is replayed with them
        # (real_check), and a build directory of its own has none yet.
        ok, out = make_targets(
            build, [os.path.join(build, "stress"), os.path.join(build, "powerloss")]
        )
        if not ok:
            release(report_dir, remove=made)
            raise UsageError("the real binaries of %s do not build: %s" % (build, last_line(out)))
    for m in chosen:
        if STOP.is_set():
            break
        stress = os.path.join(build, "mutants", m.name, "stress")
        powerloss = os.path.join(build, "mutants", m.name, "powerloss")
        failed = None if a.no_build else build_mutant(m, build, stress, powerloss, a.budget, p)
        if failed:
            results.append(failed)
            continue
        seed = derive(a.seed, "mutant", m.name)
        rd = os.path.join(report_dir, m.name)
        cmd = (
            protection_cmd(seed, a.budget, stress, rd)
            if m.mode == "protection"
            else simple_cmd(seed, a.budget, a.jobs, stress, powerloss, rd, a.simple_args)
        )
        rc = run_mutant(cmd, os.path.join(report_dir, m.name + ".log"), a.budget)
        if rc == EXIT_USAGE and not results:
            raise simple_refused(report_dir, made, m.name, a.simple_opts)
        summary = read_summary(rd)
        if STOP.is_set() and not summary.get("failures"):
            results.append(not_judged(m, seed, a.budget))
            p.line("mutant %-32s not judged: interrupted" % m.name)
            break
        r = mutant_record(a, m, summary, build, seed, rc, cmd, p)
        results.append(r)
        print_mutant(p, m, r)
    return mutants_report(a, names, by_name, results, report_dir, t0, p)
