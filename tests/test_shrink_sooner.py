"""Tests of K28 (crashtest/tracepass.py ids_further, evict_sooner): what a
failure needs brought sooner, so that delta debugging can remove the ops
that only led up to it.

Planted bug fpi-skips-page-at-redo-lsn, caught on its commit-log path,
needs a commit-log entry past the page's first sector (transaction 1,888
on) and the page evicted before the crash: without K28 every one-thread
run from a fresh database keeps about 1,900 ops (1.3x of a 2,400-op
catch).  With the ids started where the run's ops take them (stress
--first_xid) its shrink goes on to a few dozen (tests/test_first_xid.py
tests the option).

- ids_further tries first_xid at the run's ops, then half, from the
  run's own first id, on every stress step, keeps the first that fails
  the same way, once a shrink and again once the power loss is pinned,
  and only on a fresh database, below the engine's largest id, with a
  binary that has the option;
- evict_sooner tries a cache below stress's default at the engine's
  least (16 pages), then 4 and 16 times that, below the run's, once.
"""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.cand import Cand, opt_get  # noqa: E402
from crashtest import tracepass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402


def steps(create=True, cache=None, first_xid=None):
    extra = ["--cache_size=%d" % cache] if cache else []
    extra += ["--first_xid=%d" % first_xid] if first_xid else []
    op = {
        "type": "stress",
        "name": "workload",
        "argv": ["@STRESS@", "--page_size=4096", "--threads=1", "--replay_ops=@FOLDER@/ops.trace"]
        + extra,
    }
    verify = {
        "type": "stress",
        "name": "verify",
        "argv": ["@STRESS@", "--verification_only=1"] + extra,
    }
    first = (
        [
            {
                "type": "stress",
                "name": "create",
                "argv": ["@STRESS@", "--destroy_db_initially=1", "--ops_per_thread=200"],
            }
        ]
        if create
        else []
    )
    return first + [op, verify]


def stub_state(cand, ops_all=2400, defaults=None, fails=lambda c: False):
    st = state_of()
    st.best = cand
    st.best_res = {"ops_all": ops_all}
    st.defaults = (
        defaults
        if defaults is not None
        else {"first_xid": "1", "cache_size": "64M", "page_size": "8192"}
    )
    st.left = lambda: 100

    def attempt(what, c, phase):
        st.runner.attempts.append((what, c))
        if fails(c):
            st.best = c
            return True
        return False

    st.runner.attempt = attempt
    return st


def fresh_cand(**kw):
    s = steps(**kw)
    return Cand(s, False, ["0 put 1 5 on | 1=v1 ok"], 1 if len(s) == 3 else 0)


def values(c, name):
    return [opt_get(x["argv"], name) for x in c.stress_steps()]


class TestIdsFurther(unittest.TestCase):
    def test_first_xid_is_tried_at_the_run_s_ops_then_half_on_every_stress_step(self):
        st = stub_state(fresh_cand())
        tracepass.ids_further(st)
        self.assertEqual(
            [values(c, "first_xid") for _, c in st.runner.attempts], [["2400"] * 3, ["1200"] * 3]
        )
        self.assertIn("first_xid 1 -> 2400", st.runner.attempts[0][0])

    def test_the_first_that_fails_the_same_way_is_kept_and_the_pass_runs_once_until_the_power_loss_is_pinned(  # noqa: E501
        self,
    ):
        c = fresh_cand()
        c.steps.insert(
            2,
            {"type": "powerloss", "name": "powerloss", "argv": ["@POWERLOSS@", "--mode", "mixed"]},
        )
        st = stub_state(c, fails=lambda c: True)
        tracepass.ids_further(st)
        self.assertEqual(len(st.runner.attempts), 1)
        self.assertEqual(values(st.best, "first_xid"), ["2400"] * 3)
        tracepass.ids_further(st)
        self.assertEqual(len(st.runner.attempts), 1, "once")
        # Pinned, the tear no longer moves with the ids: again, from the
        # first id the run has now, as far as its ops take them.
        st.best.steps[2]["argv"] = ["@POWERLOSS@", "--mode", "keep", "--pin", "data@8192:0=tear:01"]
        st.best_res = {"ops_all": 530}
        tracepass.ids_further(st)
        self.assertEqual(len(st.runner.attempts), 2)
        self.assertEqual(values(st.best, "first_xid"), ["2929"] * 3)
        self.assertIn("first_xid 2400 -> 2929", st.runner.attempts[-1][0])

    def test_a_run_that_sets_it_moves_on_from_its_own(self):
        st = stub_state(fresh_cand(first_xid=5000))
        tracepass.ids_further(st)
        self.assertEqual(
            [values(c, "first_xid")[0] for _, c in st.runner.attempts], ["7399", "6199"]
        )

    def test_nothing_on_a_grown_database_past_the_engine_s_largest_or_with_a_binary_without_it(
        self,
    ):
        for st in (
            stub_state(fresh_cand(create=False)),
            stub_state(fresh_cand(first_xid=(1 << 23) - 100)),
            stub_state(fresh_cand(), defaults={"cache_size": "64M"}),
            stub_state(fresh_cand(), ops_all=1),
        ):
            tracepass.ids_further(st)
            self.assertEqual(st.runner.attempts, [])


class TestEvictSooner(unittest.TestCase):
    def test_a_small_cache_is_tried_at_16_pages_then_4_and_16_times_that_below_the_run_s(self):
        st = stub_state(fresh_cand(cache=1 << 20))
        tracepass.evict_sooner(st)
        self.assertEqual(
            [values(c, "cache_size") for _, c in st.runner.attempts],
            [[None, "65536", "65536"], [None, "262144", "262144"]],
            "16 pages of 4 KiB, then 4 times that (16 times is the run's own 1 MiB), on every "
            "stress step that names a cache",
        )

    def test_the_first_that_fails_is_kept_once_a_shrink(self):
        st = stub_state(fresh_cand(cache=1 << 20), fails=lambda c: True)
        tracepass.evict_sooner(st)
        tracepass.evict_sooner(st)
        self.assertEqual(len(st.runner.attempts), 1)
        self.assertEqual(values(st.best, "cache_size")[1], "65536")

    def test_tried_again_once_the_power_loss_is_pinned(self):
        c = fresh_cand(cache=1 << 20)
        c.steps.insert(
            2,
            {"type": "powerloss", "name": "powerloss", "argv": ["@POWERLOSS@", "--mode", "mixed"]},
        )
        st = stub_state(c)
        tracepass.evict_sooner(st)
        tracepass.evict_sooner(st)
        self.assertEqual(len(st.runner.attempts), 2, "16 and 64 pages, once")
        st.best.steps[2]["argv"] = ["@POWERLOSS@", "--mode", "keep", "--pin", "data@8192:0=tear:01"]
        tracepass.evict_sooner(st)
        self.assertEqual(len(st.runner.attempts), 4, "again with the tear pinned")

    def test_nothing_when_the_cache_is_stress_s_default_or_already_the_least(self):
        for st in (
            stub_state(fresh_cand()),
            stub_state(fresh_cand(cache=64 << 20)),
            stub_state(fresh_cand(cache=65536)),
        ):
            tracepass.evict_sooner(st)
            self.assertEqual(st.runner.attempts, [])


if __name__ == "__main__":
    unittest.main()
