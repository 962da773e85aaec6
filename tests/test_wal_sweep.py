"""The log sweep (stress --wal_sweep N, stress/sweep.c): after a crash and
before the restart's open, bits of the log records the recovery replays
are flipped one at a time in a copy of the database, and the engine's
read-only recovery must refuse each with a report at the flip's place.
The real engine reports every one and the database it then opens is the
one the crash left; an engine that takes a damaged record for a torn tail
(the planted tail-check-header-only: the failing record's payload
sectors never checked) is caught as swallowed; an engine without a
read-only recovery is refused the option."""

import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.common import run_make  # noqa: E402
from tests.stressrun import STRESS, StressDir, stress  # noqa: E402

MUTANT = "tail-check-header-only"
# Batches of large values synced one by one: the last block's records
# span sectors, where the planted bug looks at the first only.
WORKLOAD = ["--threads=2", "--ops_per_thread=2000", "--sync_mode=commit"]
WORKLOAD += ["--readpercent=10", "--writepercent=10", "--delpercent=0", "--iterpercent=0"]
WORKLOAD += ["--value_size_max=1000"]


class TestWalSweep(StressDir):
    def crashed(self, binary, seed, extra=()):
        """A database SIGKILLed at the end of a workload: its stress
        arguments."""
        d = os.path.join(self.d, "s%d" % seed)
        os.makedirs(d)
        base = ["--db=%s/db" % d, "--run_dir=%s/run" % d, "--max_key=2000"] + list(extra)
        p = subprocess.run(
            [binary]
            + base
            + WORKLOAD
            + ["--destroy_db_initially", "--crash_at_end=1", "--seed=%d" % seed],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.assertEqual(p.returncode, -9)
        return d, base

    def restart(self, binary, d, base, seed, trials):
        """The restart with the sweep: (exit status, stderr, report)."""
        rep = os.path.join(d, "report.json")
        argv = base + ["--verification_only=1", "--wal_sweep=%d" % trials, "--seed=%d" % (seed + 1)]
        p = subprocess.run([binary] + argv + ["--report=" + rep], capture_output=True, text=True)
        with open(rep) as f:
            return p.returncode, p.stderr, json.load(f)

    def test_every_flip_of_a_replayed_record_is_reported_and_the_database_opens_unchanged(self):
        for seed, extra in ((11, []), (21, ["--wal_segment_size=64K", "--large_value_one_in=10"])):
            d, base = self.crashed(STRESS, seed, extra)
            rc, err, rep = self.restart(STRESS, d, base, seed, 32)
            sweep = rep["wal_sweep"]
            self.assertEqual(rc, 0, err)
            self.assertEqual(sweep["trials"], 32, sweep)
            self.assertEqual(sweep["detected"], 32, sweep)
            self.assertGreater(sweep["zeroed"], 0, sweep)  # witnessed sectors lost as zeros
            self.assertEqual(rep["classes"]["bitflip_wal"]["detected"], 32)
            self.assertEqual(rep["injections_per_point"].get("sweep/wal"), 32)
            # the restart's own recovery met none of the flips: every key
            # verified, no report, and the copy is gone
            self.assertEqual(rep["reports"], 0)
            self.assertEqual(rep["post_crash_check"], "passed")
            self.assertFalse(os.path.exists(os.path.join(d, "run", "wal-sweep")))

    def test_a_damaged_record_taken_for_a_torn_tail_is_swallowed(self):
        mutant = os.path.join(ROOT, "build", "mutants", MUTANT, "stress")
        r = run_make(["make", "-s", os.path.relpath(mutant, ROOT)], cwd=ROOT, capture_output=True)
        if r.returncode:
            self.skipTest("cannot build the planted bug %s" % MUTANT)
        seen = []
        for seed in range(11, 91, 10):
            d, base = self.crashed(mutant, seed)
            rc, err, rep = self.restart(mutant, d, base, seed, 32)
            seen.append(rep["wal_sweep"])
            if rep["wal_sweep"]["swallowed"]:
                self.assertEqual(rc, 1)
                self.assertEqual(rep["verdict"], "fail")
                self.assertGreater(rep["classes"]["bitflip_wal"]["swallowed"], 0)
                self.assertIn("FAILURE swallowed: bitflip_wal injected at sweep/wal", err)
                self.assertIn("replaying the log only to LSN", err)
                self.assertIn("reported nothing: a damaged record taken for a torn tail", err)
                return
        self.fail("the planted bug passed every sweep: %s" % seen)

    def test_an_engine_without_a_read_only_recovery_is_refused_the_sweep(self):
        rc, _, err = stress(
            "--engine=sqlite", "--db=%s/db" % self.d, "--wal_sweep=8", "--ops_per_thread=10"
        )
        self.assertEqual(rc, 2)
        self.assertIn("--wal_sweep", err)
        self.assertFalse(os.path.exists(os.path.join(self.d, "db")))


if __name__ == "__main__":
    unittest.main()
