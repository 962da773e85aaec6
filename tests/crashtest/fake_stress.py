#!/usr/bin/env python3
"""fake_stress.py -- a stand-in for build/stress in tests/test_crashtest.py,
for the failures the real driver cannot be made to show on demand.

It answers --help and --list_fault_points like the driver, passes the
capability probes and the create step (a tiny run: a passing report), and
then misbehaves in the workload as FAKE_STRESS_MODE says:

  segv   dies of SIGSEGV              (crashtest: an unplanned crash)
  asan   prints an AddressSanitizer report and exits 1 (a crash too)
  hang   sleeps without any progress  (crashtest's watchdog: a hang)
  exit0  ends at once with a passing report (blackbox: it exited before
         it was killed)
  unrecoverable_then_killed
         writes a passing report that ends the run as unrecoverable by
         design, then waits for blackbox's SIGKILL (the kill meets it on
         its way out); a checking run (--verification_only) then fails
         as unrecoverable: the damage the report settled is still there
  lost_unreported
         prints a lost commit's FAILURE line and exits 1 without a report
         (as a recovery does that a planned SIGKILL meets between the two)
"""
import json
import os
import signal
import sys
import time

HELP = """usage: stress --db DIR [options]
  --db=S                                       database directory (required) [default: none]
  --report=S                                   write the JSON report here [default: none]
  --seed=N                                     seed [default: 2341234]
  --threads=N                                  worker threads [default: 2]
  --page_size=N                                page size [default: 8192]
  --sync_mode=commit|group|off                 when a commit is fsynced [default: commit]
  --kill_random_test=N                         kill at a kill point, 1 in N hits [default: 0]
  --list_fault_points                          print the catalogue and exit
"""


def opts(argv):
    out = {}
    for a in argv:
        if a.startswith("--"):
            k, _, v = a[2:].partition("=")
            out[k] = v or "1"
    return out


def report(path, **fields):
    if not path:
        return
    totals = {
        k: 0
        for k in (
            "injected",
            "detected",
            "repaired",
            "masked",
            "undetectable",
            "wrong_value",
            "lost",
            "resurrected",
            "false_alarm",
            "swallowed",
            "unrecoverable",
            "crash",
            "hang",
        )
    }
    totals.update(fields.pop("totals", {}))
    doc = {
        "verdict": "pass",
        "mode": "judging",
        "totals": totals,
        "classes": {},
        "injections_per_point": {},
        "reports": 0,
        "unrecoverable": False,
    }
    doc.update(fields)
    with open(path, "w") as f:
        json.dump(doc, f)


def main():
    o = opts(sys.argv[1:])
    if "help" in o:
        sys.stdout.write(HELP)
        return 0
    if "list_fault_points" in o:
        print("engine/io/read                               a read fails")
        print("kill/wal/after_sync                          crash after a log fsync")
        return 0
    mode = os.environ.get("FAKE_STRESS_MODE", "exit0")
    if o.get("ops_per_thread") == "1" or o.get("destroy_db_initially") == "1":
        report(o.get("report"))
        print("stress: pass mode=judging ops=1 (fake)")
        return 0
    if mode == "segv":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "asan":
        print("=================================================================")
        print("==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010")
        return 1
    if mode == "hang":
        time.sleep(600)
        return 0
    if mode == "lost_unreported":
        print(
            "stress: FAILURE lost (a synced commit): recovery ended at commit seq 7, but seq 8 was "
            "durable (fake)"
        )
        return 1
    if mode == "unrecoverable_then_killed" and o.get("verification_only") == "1":
        report(o.get("report"), verdict="fail", unrecoverable=True, totals={"unrecoverable": 1})
        print(
            "stress: FAILURE unrecoverable: after the crash: corruption no injection explains "
            "(fake)"
        )
        return 1
    if mode == "unrecoverable_then_killed":
        report(
            o.get("report"),
            unrecoverable=True,
            unrecoverable_by_design=(
                "misdirected_write at hook/write file=data block=29 (this process)"
            ),
        )
        print("stress: the database no longer opens (corruption reported): ending the run (fake)")
        sys.stdout.flush()
        time.sleep(600)
        return 0
    report(o.get("report"))
    print("stress: pass mode=judging ops=10 (fake)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
