"""Judging one stress process: its exit, output, report and the kill lines
of the ledger make an outcome ('passed', 'crashed': a planned crash, or
'failed') and, for a failure, its kind, failure keys and message."""

import re
import signal

from .common import last_line
from .params import FAILURE_KEYS
from .procs import signal_name

SANITIZER_RE = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
                          r"runtime error: |ERROR: MemorySanitizer|Assertion .* failed")
ERROR_RE = re.compile(r"^stress: (FAILURE|cannot |reopen failed)", re.M)
FAILURE_KIND_RE = re.compile(r"^stress: FAILURE (\w+)", re.M)
# Kinds that say a run's steps did not fit together (a usage error, a
# process that ended before its planned kill): not the engine's failure.
HARNESS_KINDS = ("error", "early_exit")


def shows_kind(failure, kind, match="kind"):
    """FAILURE ({'kind', 'keys', ...} or None) shows KIND: as its kind or,
    with MATCH 'keys', among its failure keys.  A failure is named by the
    first of FAILURE_KEYS it shows, so a lost that comes with a
    wrong_value is a wrong_value (crashtest.py shrink's K1 and K24)."""
    if not failure:
        return False
    return failure.get("kind") == kind or (match == "keys" and failure.get("kind") not in HARNESS_KINDS and
                                           kind in (failure.get("keys") or []))


def report_failure_keys(report):
    if not isinstance(report, dict):
        return []
    totals = report.get("totals") or {}
    return [k for k in FAILURE_KEYS if int(totals.get(k, 0) or 0) > 0]


def judge_stress(expect, rc, killed_by_us, hung, output, report, kill_lines, cores=()):
    """The outcome of one stress process.  EXPECT: 'exit0' (must end by
    itself and pass), 'sigkill' (we kill it: ending first is a failure,
    unless the engine refused the database for good), 'sigkill_or_exit0'
    (we may kill it, or it may end first and pass), 'crash_at_end' (it
    kills itself after its ops, --crash_at_end: crashtest.py shrink's
    crash at a known op), 'kill_point' (a kill
    point may fire; ending by itself and passing is fine too), 'refused'
    (files of the database were removed: the engine must refuse it, exit
    3, and change nothing).  KILL_LINES:
    ledger lines of class kill this process appended.  Returns (outcome,
    failure): outcome 'passed' or 'crashed' (a planned crash); failure
    None or {'kind', 'keys', 'message'}."""
    def fail(kind, message, keys=None):
        return "failed", {"kind": kind, "keys": keys or [kind], "message": message}

    refused = next((l for l in (output or "").splitlines() if "the engine refuses this directory" in l), None)
    if expect == "refused" and not hung and rc == 3 and refused:
        return "passed", None
    if expect == "refused" and not hung and rc in (0, 1) and not SANITIZER_RE.search(output or ""):
        # It opened a database whose files were lost (F1-F5), as if nothing
        # were missing: whatever it then served was not the database.
        keys = report_failure_keys(report)
        return fail(keys[0] if keys else "lost", "the engine opened a database with lost files instead of refusing "
                    "it (exit %s%s)" % (rc, ": " + ", ".join(keys) if keys else ""), keys or ["lost"])
    if hung:
        return fail("hang", "the watchdog ended it: %s" % hung)
    m = SANITIZER_RE.search(output or "")
    if m:
        line = next((l for l in output.splitlines() if SANITIZER_RE.search(l)), m.group(0))
        return fail("crash", "sanitizer report: %s" % line.strip()[:200])
    if cores:
        return fail("crash", "core dumped (%s)" % ", ".join(cores))
    if "FAILURE crash" in (output or ""):
        return fail("crash", "a fatal signal in the process")
    if rc is not None and rc < 0 and rc != -signal.SIGKILL:
        return fail("crash", "killed by %s, which no kill planned" % signal_name(-rc))
    keys = report_failure_keys(report)
    if "hang" in keys:
        return fail("hang", "stress reported a hang (no operation finished)", keys)
    if "crash" in keys:
        return fail("crash", "stress reported a crash of an earlier process", keys)
    if keys:
        return fail(keys[0], "verification failure: %s" % ", ".join(keys), keys)
    errors = ERROR_RE.findall(output or "")
    if errors:
        kinds = FAILURE_KIND_RE.findall(output or "")
        kind = kinds[0] if kinds else "error"
        first = next(l for l in output.splitlines() if ERROR_RE.match(l))
        return fail(kind, first.strip()[:300], sorted(set(kinds)) or ["error"])
    if rc == -signal.SIGKILL:
        if killed_by_us and expect in ("sigkill", "sigkill_or_exit0") and isinstance(report, dict) and \
                report.get("unrecoverable") and report.get("verdict") == "pass":
            # It had ended the run itself, its report whole: the database
            # did not come back, by design.  Our kill met a process on its
            # way out, not a running engine, and no crash follows: a power
            # loss and a restart on that database would meet the damage
            # its report settled (the next process is not told of it) and
            # call it unexplained (blackbox 2026-12-02 seed 20261311).
            return "passed", None
        if killed_by_us and expect in ("sigkill", "sigkill_or_exit0"):
            return "crashed", None
        if expect == "kill_point" and kill_lines:
            return "crashed", None
        if expect == "crash_at_end" and "--crash_at_end: killing this process" in (output or ""):
            return "crashed", None
        if killed_by_us:
            return fail("crash", "killed by SIGKILL although no kill was planned")
        return fail("crash", "killed by SIGKILL that no kill planned (OOM killer?)")
    if rc == 0:
        if report is None:
            return fail("error", "exit 0 but no report was written")
        if report.get("verdict") != "pass":
            return fail("error", "exit 0 but the report's verdict is %r" % report.get("verdict"))
        if expect == "sigkill" and not report.get("unrecoverable"):
            return fail("early_exit", "stress exited before it was killed")
        return "passed", None
    if rc == 1:
        return fail("verification", "exit 1 (verification failure) without failure counts in a report")
    if rc == 2:
        return fail("error", "exit 2 (usage): %s" % last_line(output))
    if rc == 3:
        if refused:
            # Every database crashtest hands to stress is one the engine
            # made earlier in the run: refusing it is failing to come back
            # (stress itself only refuses to touch it, exit 3).
            return fail("unrecoverable", "the engine refuses the run's own database: %s" % refused.strip()[:300])
        return fail("error", "exit 3 (infrastructure): %s" % last_line(output))
    return fail("error", "exit %s: %s" % (rc, last_line(output)))
