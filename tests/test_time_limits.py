"""What ends a stress step that runs long (crashtest/executor.py,
crashtest/procs.py):

- a timed step (--duration) past its time limit (the duration, the
  watchdog and a minute) is a hang: it did not end when its plan says;
- a step whose op count is fixed (a shrink pins a timed run to the ops it
  did) past that limit is slow, not hung: an error.  Pinned to what a
  timed two-second run did, a run that fsyncs every commit can take
  minutes (planted bug page-before-wal's shrink), and a "hang" would be
  kept aside as a new failure;
- a caller's deadline (the shrink's budget) stops a step that still makes
  progress as an error too, and a shrink keeps no error aside and tries
  the change no more (K25).

The stress binary is a stand-in script that makes progress (its ledger
grows) for a few seconds and writes a passing report."""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.executor import Executor  # noqa: E402
from crashtest.judge import HARNESS_KINDS  # noqa: E402

FAKE_STRESS = r"""
import json, os, sys, time
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
os.makedirs(os.path.join(args["state"], "run"), exist_ok=True)
end = time.monotonic() + float(args["seconds"])
with open(os.path.join(args["state"], "run", "ledger"), "a") as led:
    while time.monotonic() < end:
        led.write("{}\n")
        led.flush()
        time.sleep(0.05)
with open(args["report"], "w") as f:
    json.dump({"verdict": "pass", "totals": {}}, f)
"""


class TestTimeLimits(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-time-limits-")
        self.addCleanup(shutil.rmtree, self.d, True)
        self.fake = os.path.join(self.d, "fake_stress.py")
        with open(self.fake, "w") as f:
            f.write(FAKE_STRESS)

    def step(self, seconds, *opts, time_limit=None):
        return {
            "type": "stress",
            "name": "workload",
            "state": os.path.join(self.d, "state"),
            "dir": os.path.join(self.d, "step"),
            "expect": "exit0",
            "kill_after": None,
            "time_limit": time_limit,
            "argv": [
                sys.executable,
                self.fake,
                "--state=" + os.path.join(self.d, "state"),
                "--report=" + os.path.join(self.d, "step", "report.json"),
                "--seconds=%g" % seconds,
            ]
            + list(opts),
        }

    def run_step(self, step, deadline=None):
        t = time.monotonic()
        r = Executor({}, 60, deadline=deadline).run(0, step)
        return r, time.monotonic() - t

    def test_a_timed_step_past_its_time_limit_is_a_hang(self):
        r, took = self.run_step(self.step(30, "--duration=1", time_limit=1))
        self.assertLess(took, 20)
        self.assertEqual(r["failure"]["kind"], "hang")
        self.assertIn("still running after 1 s", r["failure"]["message"])

    def test_a_step_with_a_fixed_op_count_past_its_time_limit_is_slow_an_error_not_a_hang(self):
        r, took = self.run_step(self.step(30, "--ops_per_thread=1000", time_limit=1))
        self.assertLess(took, 20)
        self.assertEqual((r["outcome"], r["failure"]["kind"], r["hung"]), ("failed", "error", None))
        self.assertIn("slow, not a hang", r["failure"]["message"])
        self.assertTrue(r["failure"]["out_of_time"])

    def test_a_step_with_a_fixed_op_count_within_its_time_limit_passes(self):
        r, _ = self.run_step(self.step(1, "--ops_per_thread=1000", time_limit=20))
        self.assertEqual((r["outcome"], r["failure"]), ("passed", None))

    def test_a_deadline_stops_a_step_that_makes_progress_as_an_error_not_a_hang(self):
        r, took = self.run_step(
            self.step(30, "--ops_per_thread=1000"), deadline=time.monotonic() + 1
        )
        self.assertLess(took, 20)
        self.assertEqual(r["outcome"], "failed")
        self.assertEqual(r["failure"]["kind"], "error")
        self.assertIn(r["failure"]["kind"], HARNESS_KINDS, "a shrink keeps no error aside (K1)")
        self.assertIn("slow, not a hang", r["failure"]["message"])
        self.assertIsNone(r["hung"])
        self.assertFalse(os.path.exists(os.path.join(self.d, "step", "report.json")))


if __name__ == "__main__":
    unittest.main()
