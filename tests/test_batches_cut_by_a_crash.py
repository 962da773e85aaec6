"""A batch a crash cut mid-call must come back all or nothing (E4 of
oracle/expected.h): the writer stores it in its in-flight slot of the
expected state before the engine sees it, and the process that opens
after the crash finds each such batch all old or all new.  A key's
pending value alone lets each key be either, so a recovery that applied
half a batch passed every check before.

The real engine's cut batches all pass; the same crashed state with one
key's old and new swapped in its slot (what a recovery that kept half the
batch looks like to the check) fails as a batch half applied.

    python3 -m unittest tests.test_batches_cut_by_a_crash"""

import json
import os
import shutil
import struct
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.stressrun import StressDir, stress  # noqa: E402

SLOT = 144  # oracle/expected.h: u32 n, u32 thread, u64 op, 8 keys, 8 old, 8 new
SLOTS = 256


def cut_slots(path):
    """(offset, n) of each slot of the in-flight file holding a batch."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for i in range(SLOTS):
        (n,) = struct.unpack_from("<I", data, i * SLOT)
        if 2 <= n <= 8:
            out.append((i * SLOT, n))
    return out


class BatchesCutByACrash(StressDir):
    def state(self, name):
        s = os.path.join(self.d, name)
        os.makedirs(s, exist_ok=True)
        return ["--db=%s/db" % s, "--expected_values_dir=%s/exp" % s, "--run_dir=%s/run" % s]

    def crashed_with_a_cut_batch(self):
        """A state killed while a batch of two or more keys was in flight
        whose keys differ old to new (some seed does within a few tries)."""
        for seed in range(1, 40):
            shutil.rmtree(os.path.join(self.d, "s"), ignore_errors=True)
            rc, out, err = stress(
                *self.state("s"),
                "--destroy_db_initially=1",
                "--threads=4",
                "--duration=3",
                "--ops_per_thread=0",
                "--max_key=200",
                "--readpercent=10",
                "--writepercent=10",
                "--delpercent=0",
                "--iterpercent=0",
                "--kill_random_test=2000",
                "--sync_mode=commit",
                "--seed=%d" % seed,
            )
            if rc != -9:
                continue
            inflight = os.path.join(self.d, "s", "exp", "inflight")
            for off, n in cut_slots(inflight):
                with open(inflight, "rb") as f:
                    f.seek(off + 16 + 64)
                    old = struct.unpack("<8I", f.read(32))
                    new = struct.unpack("<8I", f.read(32))
                if all(old[k] != new[k] for k in range(n)):
                    return inflight, off
        self.fail("no seed of 1 to 39 was killed with a batch in flight")

    def verify(self, name):
        report = os.path.join(self.d, name + ".json")
        rc, out, err = stress(
            *self.state(name),
            "--verification_only=1",
            "--threads=1",
            "--max_key=200",
            "--report=" + report,
        )
        with open(report) as f:
            return rc, err, json.load(f)

    def test_the_real_engines_cut_batches_come_back_whole_and_a_half_one_fails(self):
        inflight, off = self.crashed_with_a_cut_batch()
        shutil.copytree(os.path.join(self.d, "s"), os.path.join(self.d, "half"))
        shutil.copytree(os.path.join(self.d, "s"), os.path.join(self.d, "whole"))
        rc, err, rep = self.verify("whole")
        self.assertEqual(rc, 0, err)
        self.assertGreaterEqual(rep["checks"]["batches_cut"], 1, err)
        self.assertEqual(rep["totals"]["wrong_value"], 0, err)
        # The second key's old and new swapped: whatever the engine shows
        # for the two keys, one now reads as old and the other as new.
        # (Every write is synced, so recovery undoes none: a rewind would
        # take each old value from the expected state again.)
        path = os.path.join(self.d, "half", "exp", "inflight")
        with open(path, "r+b") as f:
            f.seek(off + 16 + 64 + 4)
            old1 = f.read(4)
            f.seek(off + 16 + 64 + 32 + 4)
            new1 = f.read(4)
            f.seek(off + 16 + 64 + 4)
            f.write(new1)
            f.seek(off + 16 + 64 + 32 + 4)
            f.write(old1)
        rc, err, rep = self.verify("half")
        self.assertEqual(rc, 1, err)
        self.assertIn("half applied", err)
        self.assertIn("cut by a crash", err)
        self.assertGreaterEqual(rep["totals"]["wrong_value"], 1, err)


class TheSummaryCountsThem(unittest.TestCase):
    def test_the_judged_steps_cut_batches_are_summed_and_an_extra_variants_are_not(self):
        from crashtest.report import tally

        def step(primary, n):
            return {
                "type": "stress",
                "primary": primary,
                "result": {"report": {"checks": {"batches_cut": n}}},
            }

        recs = [{"steps": [step(True, 2), step(False, 5), step(True, 1)], "failure": None}]
        self.assertEqual(tally(recs)["batches_cut"], 3)


if __name__ == "__main__":
    unittest.main()
