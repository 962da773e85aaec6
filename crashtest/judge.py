"""Judging one stress process: its exit, output, report and the kill lines
of the ledger make an outcome ('passed', 'crashed': a planned crash, or
'failed') and, for a failure, its kind, failure keys and message."""

import re
import signal

from .common import last_line
from .params import FAILURE_KEYS
from .procs import signal_name

SANITIZER_RE = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
    r"runtime error: |ERROR: MemorySanitizer|Assertion .* failed"
)
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
    return failure.get("kind") == kind or (
        match == "keys"
        and failure.get("kind") not in HARNESS_KINDS
        and kind in (failure.get("keys") or [])
    )


def report_failure_keys(report):
    if not isinstance(report, dict):
        return []
    totals = report.get("totals") or {}
    return [k for k in FAILURE_KEYS if int(totals.get(k, 0) or 0) > 0]


def failed(kind, message, keys=None):
    """A failed outcome: ('failed', {'kind', 'keys', 'message'})."""
    return "failed", {"kind": kind, "keys": keys or [kind], "message": message}


def judge_refused(expect, rc, hung, output, report, refused):
    """EXPECT 'refused' (a database with lost files): passed when the engine
    refused it, a failure when it opened it; else None."""
    if expect == "refused" and not hung and rc == 3 and refused:
        return "passed", None
    if expect == "refused" and not hung and rc in (0, 1) and not SANITIZER_RE.search(output or ""):
        # It opened a database whose files were lost (F1-F5), as if nothing
        # were missing: whatever it then served was not the database.
        keys = report_failure_keys(report)
        return failed(
            keys[0] if keys else "lost",
            "the engine opened a database with lost files instead of "
            "refusing it (exit %s%s)" % (rc, ": " + ", ".join(keys) if keys else ""),
            keys or ["lost"],
        )
    return None


def judge_crash(rc, hung, output, cores):
    """A hang, a sanitizer report, a core, a fatal signal or a signal no
    kill planned: the failure, else None."""
    if hung:
        return failed("hang", "the watchdog ended it: %s" % hung)
    m = SANITIZER_RE.search(output or "")
    if m:
        line = next(
            (out_line for out_line in output.splitlines() if SANITIZER_RE.search(out_line)),
            m.group(0),
        )
        return failed("crash", "sanitizer report: %s" % line.strip()[:200])
    if cores:
        return failed("crash", "core dumped (%s)" % ", ".join(cores))
    if "FAILURE crash" in (output or ""):
        return failed("crash", "a fatal signal in the process")
    if rc is not None and rc < 0 and rc != -signal.SIGKILL:
        return failed("crash", "killed by %s, which no kill planned" % signal_name(-rc))
    return None


def judge_findings(output, report):
    """The failure the report's counts or stress's FAILURE and error lines
    name, else None."""
    keys = report_failure_keys(report)
    if "hang" in keys:
        return failed("hang", "stress reported a hang (no operation finished)", keys)
    if "crash" in keys:
        return failed("crash", "stress reported a crash of an earlier process", keys)
    if keys:
        return failed(keys[0], "verification failure: %s" % ", ".join(keys), keys)
    errors = ERROR_RE.findall(output or "")
    if errors:
        kinds = FAILURE_KIND_RE.findall(output or "")
        kind = kinds[0] if kinds else "error"
        first = next(line for line in output.splitlines() if ERROR_RE.match(line))
        return failed(kind, first.strip()[:300], sorted(set(kinds)) or ["error"])
    return None


def judge_sigkill(expect, killed_by_us, output, report, kill_lines):
    """A process ended by SIGKILL and nothing worse: (outcome, failure)."""
    if (
        killed_by_us
        and expect in ("sigkill", "sigkill_or_exit0")
        and isinstance(report, dict)
        and report.get("unrecoverable")
        and report.get("verdict") == "pass"
    ):
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
        return failed("crash", "killed by SIGKILL although no kill was planned")
    return failed("crash", "killed by SIGKILL that no kill planned (OOM killer?)")


def judge_exit(expect, rc, output, report, refused):
    """A process that ended by itself and nothing worse, by its exit
    status RC: (outcome, failure)."""
    if rc == 0:
        if report is None:
            return failed("error", "exit 0 but no report was written")
        if report.get("verdict") != "pass":
            return failed("error", "exit 0 but the report's verdict is %r" % report.get("verdict"))
        if expect == "sigkill" and not report.get("unrecoverable"):
            return failed("early_exit", "stress exited before it was killed")
        return "passed", None
    if rc == 1:
        return failed(
            "verification", "exit 1 (verification failure) without failure counts in a report"
        )
    if rc == 2:
        return failed("error", "exit 2 (usage): %s" % last_line(output))
    if rc == 3:
        if refused:
            # Every database crashtest hands to stress is one the engine
            # made earlier in the run: refusing it is failing to come back
            # (stress itself only refuses to touch it, exit 3).
            return failed(
                "unrecoverable",
                "the engine refuses the run's own database: %s" % refused.strip()[:300],
            )
        return failed("error", "exit 3 (infrastructure): %s" % last_line(output))
    return failed("error", "exit %s: %s" % (rc, last_line(output)))


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
    None or {'kind', 'keys', 'message'}.  The checks run in order, the
    first that has a verdict gives it."""
    refused = next(
        (
            line
            for line in (output or "").splitlines()
            if "the engine refuses this directory" in line
        ),
        None,
    )
    return (
        judge_refused(expect, rc, hung, output, report, refused)
        or judge_crash(rc, hung, output, cores)
        or judge_findings(output, report)
        or (
            judge_sigkill(expect, killed_by_us, output, report, kill_lines)
            if rc == -signal.SIGKILL
            else judge_exit(expect, rc, output, report, refused)
        )
    )
