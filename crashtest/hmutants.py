"""The harness-bug mode, crashtest.py mutants --harness (docs/mutants.md,
"Harness bugs"): how much the suites that guard the harness catch,
measured.

tests/harness_mutants.txt lists planted bugs of the harness itself (faults/,
oracle/), in the engine catalogue's line format, each a compile-time
switch ENG_BROKEN_<NAME> (crashtest/mutants.py reads both catalogues).
A baseline run of the guarding suites (HARNESS_SUITES) against the real
harness comes first: a suite that fails there would "catch" every bug.
Then each bug is built into BUILD/hmutants/NAME (the Makefile's rules),
checked to carry its switch, and run against the suites, cheapest first,
up to the first that fails: caught by that suite and how fast, or missed.
The records go into REPORT_DIR/mutants.json (beside an engine measurement
in the same folder), the harness table into mutants.md, and a run on
build/ into build/hmutants.json.  crashtest/mutants.py's mutants_mode
hands --harness to harness_mode."""

import datetime
import json
import os
import re
import subprocess
import sys
import time

from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    EXIT_USAGE,
    REPO,
    UsageError,
    last_line,
    nice_path,
    write_json,
)
from .mutants import (
    HARNESS_MUTANTS_FILE,
    MUTANTS_FILE,
    make_targets,
    mutants_table,
    read_mutants,
    suite_env,
)
from .output import Printer
from .procs import STOP

# The suites that guard the harness, cheapest and nearest first; a bug's
# run stops at the first that fails.  The Criterion suites are every suite
# that links the fault library or the oracle (the Makefile's
# HMUTANT_SUITES): the oracle's rules, narrow codes, expected values and
# report line, the power-loss journal, tool and variants, the fault
# classes and their ledger lines, lost files (about a minute in all).
# test_protection.py runs crashtest.py protection with the real stress
# driver: the oracle's escape bound and pattern verdicts end to end (half
# a minute).  t_stress.sh last: the stress driver, the oracle and the
# power-loss tool end to end, the oracle's catches of foreign, lost and
# resurrected values and of the engine-bug drivers (three to four
# minutes).  Left out: the Python suites that drive crashtest.py's own
# logic with stub binaries or stored reports (shrinking, seeds, pins,
# traces: no harness C code runs in them), and the test_crashtest*.py
# suites, whose real runs of simple, blackbox and repro
# (test_crashtest_real_engine.py's most of all) take most of `make test`'s
# quarter hour and reach the harness through the same stress and
# powerloss runs t_stress.sh makes.
HARNESS_SUITES = [
    "test_oracle",
    "test_oracle_narrow_codes",
    "test_report_line",
    "test_oracle_injection_after_an_observation_explains_nothing",
    "test_oracle_expected_value_damaged_anywhere_is_wrong",
    "test_oracle_a_cache_flip_the_codes_must_stop_explains_no_checksum_report",
    "test_powerloss_journal_is_whole_and_ordered",
    "test_powerloss_write_completed_during_an_fsync_is_not_covered_by_it",
    "test_powerloss_variants_are_legal",
    "test_powerloss_tool_undoes_metadata_and_refuses_damage",
    "test_faults_ledger_replays_and_names_every_fault",
    "test_faults_write_faults_land_where_the_ledger_says",
    "test_faults_damage_table_tracks_what_is_on_disk",
    "test_faults_carried_cache_flip",
    "test_faults_errors_are_reported_at_their_points",
    "test_faults_cache_flip_names_the_code_of_its_part",
    "test_faults_sync_error_drops_unsynced_writes",
    "test_powerloss_engine_survives_every_state",
    "test_lost_files_refused",
    "test_faults_damage_lands_in_every_region_of_the_format",
    "test_protection.py",
    "test_fault_files.py",
    "t_stress.sh",
]
SUITE_TIMEOUT_S = 1200  # a suite the bug made hang is a catch, not a stuck measurement


def suite_cmd(suite, build):
    """(argv, kind) of one guarding suite run against BUILD: 'criterion'
    (BUILD/tests/NAME), 'shell' (tests/NAME.sh) or 'python' (tests/NAME.py)."""
    if suite.endswith(".sh"):
        return ["bash", os.path.join(REPO, "tests", suite)], "shell"
    if suite.endswith(".py"):
        return [sys.executable, "-m", "unittest", "tests." + suite[:-3]], "python"
    return [os.path.join(build, "tests", suite), "--jobs=1"], "criterion"


def suite_failed(kind, rc, out):
    """Whether a suite's run failed: its exit status, and what it printed
    (Criterion's synthesis line, the shell suites' 'not ok' lines)."""
    if rc is None or rc != 0:
        return True
    if kind == "criterion":
        m = re.search(
            r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)", out
        )
        return not m or int(m.group(3)) + int(m.group(4)) > 0 or int(m.group(1)) == 0
    if kind == "shell":
        return bool(re.search(r"^not ok ", out, re.M))
    return False


def run_suite(suite, build, env, log_path):
    """Run SUITE against BUILD with ENV: (failed, seconds, exit status)."""
    cmd, kind = suite_cmd(suite, build)
    if kind == "criterion" and not os.access(cmd[0], os.X_OK):
        with open(log_path, "a") as log:
            log.write("== %s: %s is missing\n" % (suite, cmd[0]))
        return True, 0.0, None
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            cmd,
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            timeout=SUITE_TIMEOUT_S,
            start_new_session=True,
        )
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode("utf-8", "replace") if isinstance(
            e.stdout, bytes
        ) else (e.stdout or "")
    dt = time.monotonic() - t0
    with open(log_path, "a") as log:
        log.write("== %s (exit %s, %.1f s)\n%s\n" % (suite, rc, dt, out[-20000:]))
    return suite_failed(kind, rc, out), dt, rc


def baseline_targets(build, suites):
    """What the real harness's suites need in BUILD."""
    rel = os.path.relpath(build, REPO)
    out = [
        "all",
        os.path.join(rel, "stress"),
        os.path.join(rel, "powerloss"),
        os.path.join(rel, "engine-tool"),
    ]
    out += [os.path.join(rel, "tests", s) for s in suites if suite_cmd(s, build)[1] == "criterion"]
    return out


def harness_result(m, caught, suite, seconds, **more):
    r = {
        "name": m.name,
        "guarantee": m.guarantee,
        "bug": m.bug,
        "macro": m.macro,
        "caught": caught,
        "suite": suite,
        "seconds": None if seconds is None else round(seconds, 1),
    }
    r.update(more)
    return r


def harness_table(doc):
    """mutants.md's "harness" table: each harness bug, caught by which suite, how fast."""
    rows = [
        "## harness",
        "",
        "| harness bug | guarantee | caught | by suite | seconds |",
        "|---|---|---|---|---|",
    ]
    for r in doc["harness"]:
        caught = "error" if r.get("error") else "yes" if r["caught"] else "**missed**"
        rows.append(
            "| `%s` | %s | %s | %s | %s |"
            % (
                r["name"],
                r["guarantee"],
                caught,
                r["suite"] or "-",
                "-" if r["seconds"] is None else "%.1f" % r["seconds"],
            )
        )
    rows.append("")
    rows.append(
        "%s (suites: %s; %.0f s in all)."
        % (doc["harness_line"], ", ".join(doc["harness_suites"]), doc["harness_elapsed_s"])
    )
    return "\n".join(rows) + "\n"


def harness_catalogue(a):
    """The harness catalogue's path: --catalogue when it names another
    file than the engine's."""
    return a.catalogue if a.catalogue != MUTANTS_FILE else HARNESS_MUTANTS_FILE


def harness_args(a):
    """--harness's arguments checked: (chosen bugs, suites)."""
    catalogue = read_mutants(harness_catalogue(a))
    by_name = {m.name: m for m in catalogue}
    unknown = [n for n in a.names if n not in by_name]
    if unknown:
        raise UsageError(
            "not in the harness catalogue: %s (known: %s)"
            % (", ".join(unknown), ", ".join(by_name))
        )
    chosen = [by_name[n] for n in (a.names or [m.name for m in catalogue])]
    suites = (
        [s.strip() for s in a.suites.split(",") if s.strip()] if a.suites else list(HARNESS_SUITES)
    )
    return chosen, suites


def harness_baseline(a, build, suites, report_dir, t0, p):
    """The real build and the suites' baseline run against the real
    harness: None when both pass (or are skipped), else EXIT_USAGE."""
    if not a.no_build:
        ok, out = make_targets(build, baseline_targets(build, suites))
        if not ok:
            p.line("crashtest: mutants --harness: the real build failed:\n%s" % out[-2000:])
            return EXIT_USAGE
    if not a.no_baseline:
        log = os.path.join(report_dir, "harness-baseline.log")
        for s in suites:
            failed, dt, rc = run_suite(s, build, suite_env(build, None), log)
            if failed:
                p.line(
                    "crashtest: mutants --harness: the real harness fails %s (exit %s, %.1f s; "
                    "%s): a failing baseline measures nothing" % (s, rc, dt, nice_path(log))
                )
                return EXIT_USAGE
        p.line(
            "baseline: the real harness passes all %d suites (%.0f s)"
            % (len(suites), time.monotonic() - t0)
        )
    return None


def run_harness_bug(a, m, build, suites, report_dir, p):
    """One harness bug built and run against the suites up to the first
    that fails: its harness_result record."""
    hb = os.path.join(build, "hmutants", m.name)
    stamp = os.path.join(hb, ".built")
    if not a.no_build:
        ok, out = make_targets(build, [os.path.relpath(stamp, REPO)])
        if not ok:
            p.line("harness bug %s: BUILD FAILED\n%s" % (m.name, out[-2000:]))
            return harness_result(
                m, False, None, None, error=True, message="make failed: %s" % last_line(out)
            )
    # The build must carry the bug it is said to carry: the stamp
    # names its switch, and (with sources) an #ifdef of it exists.
    try:
        with open(stamp) as f:
            carried = f.read().strip()
    except OSError:
        carried = None
    if carried != m.macro:
        r = harness_result(
            m,
            False,
            None,
            None,
            error=True,
            message="%s does not say it carries %s" % (nice_path(stamp), m.macro),
        )
        p.line("harness bug %-44s ERROR: %s" % (m.name, r["message"]))
        return r
    log = os.path.join(report_dir, "harness-%s.log" % m.name)
    open(log, "w").close()
    env = suite_env(hb, m.name)
    t1 = time.monotonic()
    caught_by, rc = None, None
    for s in suites:
        if STOP.is_set():
            break
        failed, dt, rc = run_suite(s, hb, env, log)
        if failed:
            caught_by = s
            break
    secs = time.monotonic() - t1
    r = harness_result(m, caught_by is not None, caught_by, secs, exit=rc, log=nice_path(log))
    if r["caught"]:
        p.line("harness bug %-44s caught by %s in %.1f s" % (m.name, caught_by, secs))
    else:
        p.line("harness bug %-44s MISSED: every suite passed (%.1f s)" % (m.name, secs))
    return r


def harness_report(a, results, suites, report_dir, t0, p):
    """The harness score line, its records added to mutants.json and its
    table to mutants.md (and build/hmutants.json): the exit code."""
    caught = sum(1 for r in results if r["caught"])
    line = "harness score: %d of %d caught" % (caught, len(results))
    p.line(line)
    path = os.path.join(report_dir, "mutants.json")
    try:
        with open(path) as f:
            doc = json.load(f)  # an engine measurement in the same folder: the table goes beside it
    except (OSError, ValueError):
        doc = {"tool": "crashtest.py", "mode": "mutants", "mutants": []}
    doc.update(
        harness=results,
        harness_line=line,
        harness_suites=suites,
        harness_catalogue=nice_path(harness_catalogue(a)),
        harness_elapsed_s=round(time.monotonic() - t0, 1),
        interrupted=STOP.is_set(),
    )
    write_json(path, doc)
    md = os.path.join(report_dir, "mutants.md")
    engine_md = mutants_table(doc) if doc.get("mutants") and doc.get("summary_line") else ""
    with open(md, "w") as f:
        f.write(engine_md + ("\n" if engine_md else "") + harness_table(doc))
    if not STOP.is_set() and os.path.abspath(a.build_dir) == os.path.join(REPO, "build"):
        write_json(os.path.join(REPO, "build", "hmutants.json"), doc)
    p.line("crashtest: mutants.json: %s" % nice_path(path))
    if any(not r["caught"] for r in results):
        return EXIT_FAIL
    if STOP.is_set():
        return EXIT_INTERRUPTED
    return EXIT_PASS if results and all(r["caught"] for r in results) else EXIT_FAIL


def harness_mode(a):
    """crashtest.py mutants --harness: each harness bug against the suites
    that guard the harness.  A baseline run of the same suites against the
    real harness comes first: a suite that fails there would 'catch' every
    bug, so a failing baseline is an error (exit 2), not a measurement."""
    chosen, suites = harness_args(a)
    build = os.path.abspath(a.build_dir)
    report_dir = a.report_dir or os.path.join(
        REPO,
        "build",
        "crashtest",
        "mutants-%s-%d" % (datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), os.getpid()),
    )
    os.makedirs(report_dir, exist_ok=True)
    p = Printer(tty=False)
    p.line(
        "crashtest: mutants --harness: %d harness bugs, %d suites, reports in %s"
        % (len(chosen), len(suites), nice_path(report_dir))
    )
    t0 = time.monotonic()
    failed = harness_baseline(a, build, suites, report_dir, t0, p)
    if failed is not None:
        return failed
    results = []
    for m in chosen:
        if STOP.is_set():
            break
        results.append(run_harness_bug(a, m, build, suites, report_dir, p))
    return harness_report(a, results, suites, report_dir, t0, p)
