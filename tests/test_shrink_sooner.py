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
from crashtest.shrink import Shrinker  # noqa: E402


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


def shrinker(cand, ops_all=2400, defaults=None, fails=lambda c: False):
    sh = Shrinker.__new__(Shrinker)
    sh.best = cand
    sh.best_res = {"ops_all": ops_all}
    sh.defaults = (
        defaults
        if defaults is not None
        else {"first_xid": "1", "cache_size": "64M", "page_size": "8192"}
    )
    sh.left = lambda: 100
    sh.tried = []

    def attempt(what, c, phase):
        sh.tried.append((what, c))
        if fails(c):
            sh.best = c
            return True
        return False

    sh.attempt = attempt
    return sh


def fresh_cand(**kw):
    s = steps(**kw)
    return Cand(s, False, ["0 put 1 5 on | 1=v1 ok"], 1 if len(s) == 3 else 0)


def values(c, name):
    return [opt_get(x["argv"], name) for x in c.stress_steps()]


class TestIdsFurther(unittest.TestCase):
    def test_first_xid_is_tried_at_the_run_s_ops_then_half_on_every_stress_step(self):
        sh = shrinker(fresh_cand())
        sh.ids_further()
        self.assertEqual(
            [values(c, "first_xid") for _, c in sh.tried], [["2400"] * 3, ["1200"] * 3]
        )
        self.assertIn("first_xid 1 -> 2400", sh.tried[0][0])

    def test_the_first_that_fails_the_same_way_is_kept_and_the_pass_runs_once_until_the_power_loss_is_pinned(  # noqa: E501
        self,
    ):
        c = fresh_cand()
        c.steps.insert(
            2,
            {"type": "powerloss", "name": "powerloss", "argv": ["@POWERLOSS@", "--mode", "mixed"]},
        )
        sh = shrinker(c, fails=lambda c: True)
        sh.ids_further()
        self.assertEqual(len(sh.tried), 1)
        self.assertEqual(values(sh.best, "first_xid"), ["2400"] * 3)
        sh.ids_further()
        self.assertEqual(len(sh.tried), 1, "once")
        # Pinned, the tear no longer moves with the ids: again, from the
        # first id the run has now, as far as its ops take them.
        sh.best.steps[2]["argv"] = ["@POWERLOSS@", "--mode", "keep", "--pin", "data@8192:0=tear:01"]
        sh.best_res = {"ops_all": 530}
        sh.ids_further()
        self.assertEqual(len(sh.tried), 2)
        self.assertEqual(values(sh.best, "first_xid"), ["2929"] * 3)
        self.assertIn("first_xid 2400 -> 2929", sh.tried[-1][0])

    def test_a_run_that_sets_it_moves_on_from_its_own(self):
        sh = shrinker(fresh_cand(first_xid=5000))
        sh.ids_further()
        self.assertEqual([values(c, "first_xid")[0] for _, c in sh.tried], ["7399", "6199"])

    def test_nothing_on_a_grown_database_past_the_engine_s_largest_or_with_a_binary_without_it(
        self,
    ):
        for sh in (
            shrinker(fresh_cand(create=False)),
            shrinker(fresh_cand(first_xid=(1 << 23) - 100)),
            shrinker(fresh_cand(), defaults={"cache_size": "64M"}),
            shrinker(fresh_cand(), ops_all=1),
        ):
            sh.ids_further()
            self.assertEqual(sh.tried, [])


class TestEvictSooner(unittest.TestCase):
    def test_a_small_cache_is_tried_at_16_pages_then_4_and_16_times_that_below_the_run_s(self):
        sh = shrinker(fresh_cand(cache=1 << 20))
        sh.evict_sooner()
        self.assertEqual(
            [values(c, "cache_size") for _, c in sh.tried],
            [[None, "65536", "65536"], [None, "262144", "262144"]],
            "16 pages of 4 KiB, then 4 times that (16 times is the run's own 1 MiB), on every "
            "stress step that names a cache",
        )

    def test_the_first_that_fails_is_kept_once_a_shrink(self):
        sh = shrinker(fresh_cand(cache=1 << 20), fails=lambda c: True)
        sh.evict_sooner()
        sh.evict_sooner()
        self.assertEqual(len(sh.tried), 1)
        self.assertEqual(values(sh.best, "cache_size")[1], "65536")

    def test_tried_again_once_the_power_loss_is_pinned(self):
        c = fresh_cand(cache=1 << 20)
        c.steps.insert(
            2,
            {"type": "powerloss", "name": "powerloss", "argv": ["@POWERLOSS@", "--mode", "mixed"]},
        )
        sh = shrinker(c)
        sh.evict_sooner()
        sh.evict_sooner()
        self.assertEqual(len(sh.tried), 2, "16 and 64 pages, once")
        sh.best.steps[2]["argv"] = ["@POWERLOSS@", "--mode", "keep", "--pin", "data@8192:0=tear:01"]
        sh.evict_sooner()
        self.assertEqual(len(sh.tried), 4, "again with the tear pinned")

    def test_nothing_when_the_cache_is_stress_s_default_or_already_the_least(self):
        for sh in (
            shrinker(fresh_cand()),
            shrinker(fresh_cand(cache=64 << 20)),
            shrinker(fresh_cand(cache=65536)),
        ):
            sh.evict_sooner()
            self.assertEqual(sh.tried, [])


if __name__ == "__main__":
    unittest.main()
