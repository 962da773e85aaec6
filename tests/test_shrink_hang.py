"""A hang's watchdog shortened by the shrink (K18, trials.p_hang): every
stress step's --hang_seconds goes to 10, then 3, each kept only while the
run still hangs, and nothing changes for another kind of failure."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand, opt_get  # noqa: E402
from crashtest import trials  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402


def stub_state(kind, hangs_below):
    """A shrink's state whose trials are judged, not run: a candidate fails the
    same way when its watchdog is at least HANGS_BELOW seconds."""
    st = state_of()
    steps = [
        {"type": "stress", "name": n, "argv": ["@STRESS@", "--threads=1", "--hang_seconds=60"]}
        for n in ("workload", "verify")
    ]
    st.best = Cand(steps, True, None, 0)
    st.kind, st.hang = kind, 60
    st.left = lambda: 100

    def attempt(what, cand, phase):
        h = min(int(opt_get(s["argv"], "hang_seconds")) for s in cand.stress_steps())
        st.runner.attempts.append(what)
        if h >= hangs_below:
            st.best = cand
            return True
        return False

    st.runner.attempt = attempt
    return st


class TestShrinkHang(unittest.TestCase):
    def test_a_hang_keeps_the_shortest_watchdog_that_still_hangs_on_every_step(self):
        st = stub_state("hang", 3)
        trials.p_hang(st)
        self.assertEqual(
            st.runner.attempts,
            [
                "hang_seconds 60 -> 10 (the watchdog sooner)",
                "hang_seconds 10 -> 3 (the watchdog sooner)",
            ],
        )
        self.assertEqual(
            [opt_get(s["argv"], "hang_seconds") for s in st.best.stress_steps()], ["3", "3"]
        )
        st.runner.attempts = []
        trials.p_hang(st)  # the next round: nothing left to shorten
        self.assertEqual(st.runner.attempts, [])

    def test_a_hang_that_needs_longer_keeps_what_still_hangs(self):
        st = stub_state("hang", 10)
        trials.p_hang(st)
        self.assertEqual(len(st.runner.attempts), 2)
        self.assertEqual(
            [opt_get(s["argv"], "hang_seconds") for s in st.best.stress_steps()], ["10", "10"]
        )

    def test_other_kinds_keep_their_watchdog(self):
        st = stub_state("lost", 3)
        trials.p_hang(st)
        self.assertEqual(st.runner.attempts, [])


if __name__ == "__main__":
    unittest.main()
