"""A hang's watchdog shortened by the shrink (K18, trials.p_hang): every
stress step's --hang_seconds goes to 10, then 3, each kept only while the
run still hangs, and nothing changes for another kind of failure."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand, opt_get  # noqa: E402
from crashtest.shrink import Shrinker  # noqa: E402


def shrinker(kind, hangs_below):
    """A Shrinker whose trials are judged, not run: a candidate fails the
    same way when its watchdog is at least HANGS_BELOW seconds."""
    sh = Shrinker.__new__(Shrinker)
    steps = [
        {"type": "stress", "name": n, "argv": ["@STRESS@", "--threads=1", "--hang_seconds=60"]}
        for n in ("workload", "verify")
    ]
    sh.best = Cand(steps, True, None, 0)
    sh.kind, sh.hang = kind, 60
    sh.left = lambda: 100
    sh.tried = []

    def attempt(what, cand, phase):
        h = min(int(opt_get(s["argv"], "hang_seconds")) for s in cand.stress_steps())
        sh.tried.append(what)
        if h >= hangs_below:
            sh.best = cand
            return True
        return False

    sh.attempt = attempt
    return sh


class TestShrinkHang(unittest.TestCase):
    def test_a_hang_keeps_the_shortest_watchdog_that_still_hangs_on_every_step(self):
        sh = shrinker("hang", 3)
        sh.p_hang()
        self.assertEqual(
            sh.tried,
            [
                "hang_seconds 60 -> 10 (the watchdog sooner)",
                "hang_seconds 10 -> 3 (the watchdog sooner)",
            ],
        )
        self.assertEqual(
            [opt_get(s["argv"], "hang_seconds") for s in sh.best.stress_steps()], ["3", "3"]
        )
        sh.tried = []
        sh.p_hang()  # the next round: nothing left to shorten
        self.assertEqual(sh.tried, [])

    def test_a_hang_that_needs_longer_keeps_what_still_hangs(self):
        sh = shrinker("hang", 10)
        sh.p_hang()
        self.assertEqual(len(sh.tried), 2)
        self.assertEqual(
            [opt_get(s["argv"], "hang_seconds") for s in sh.best.stress_steps()], ["10", "10"]
        )

    def test_other_kinds_keep_their_watchdog(self):
        sh = shrinker("lost", 3)
        sh.p_hang()
        self.assertEqual(sh.tried, [])


if __name__ == "__main__":
    unittest.main()
