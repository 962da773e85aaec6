"""A failure on a database that earlier iterations grew (crashtest/shrink.py
K14, crashtest/freshpass.py): its size counts the ops that grew it, and
the shrinker looks for the same failure from a fresh database.  Planted bug
seal-before-witness, caught by make test's simple run in its second
iteration on CI, shrank from 289 ops to 44 on the grown database; the
earlier iteration's log, sealed wrong, was what failed, and the shrunk run
was counted as 6.5x smaller while it still needed that iteration."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.cand import Cand, is_fresh, opt_get  # noqa: E402
from crashtest.report import read_iterations  # noqa: E402
from crashtest.shrink import Shrinker, grown  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
STRESS = os.path.join(ROOT, BUILD, "stress")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
CRASHTEST = os.path.join(ROOT, "crashtest.py")


def op_step(threads=1, traced=True):
    argv = ["@STRESS@", "--db=@STATE@/db", "--max_key=100", "--threads=%d" % threads, "--seed=5",
            "--kill_random_test=40"]
    if traced:
        argv += ["--trace_ops=@ITER@/ops.trace", "--replay_ops=@FOLDER@/ops.trace"]
    else:
        argv += ["--ops_per_thread=50"]
    return {"type": "stress", "name": "workload", "state": "@STATE@", "dir": "d", "expect": "exit0",
            "kill_after": None, "argv": argv}


def shrinker(best):
    sh = Shrinker.__new__(Shrinker)
    sh.left = lambda: 100
    sh.meta = {"seed": 9, "db_params": {"page_size": 8192}}
    sh.hang = 60
    sh.best = best
    sh.orig_ops = 289
    return sh


class TestFreshDatabase(unittest.TestCase):
    def test_a_traced_run_on_a_grown_database_is_searched_again_from_a_fresh_one_untraced(self):
        # The run as it is from a fresh database first (its trace read keys
        # the grown one had: a false alarm); then K6's seed search on its
        # op step untraced, after a create step, with the recorded op
        # step's ops.
        best = Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"] * 44, 0, ["failed"])
        sh = shrinker(best)
        tried, searched = [], []
        sh.attempt = lambda what, c, phase, **kw: tried.append((what, c)) and False
        sh.search = lambda start, ops, **kw: searched.append((start, ops, kw)) and False
        sh.p_fresh()
        self.assertEqual(len(tried), 1)
        self.assertTrue(is_fresh(tried[0][1]))
        self.assertIsNotNone(tried[0][1].trace, "first the run as it is, its trace too")
        self.assertEqual(len(searched), 1)
        start, ops, kw = searched[0]
        self.assertTrue(is_fresh(start))
        self.assertEqual([s["name"] for s in start.steps], ["create", "workload"])
        self.assertEqual(start.w, 1)
        self.assertIsNone(start.trace)
        self.assertIsNone(opt_get(start.op["argv"], "replay_ops"))
        self.assertIsNone(opt_get(start.op["argv"], "trace_ops"))
        self.assertEqual(opt_get(start.op["argv"], "kill_random_test"), "40", "its options are the shrunk run's")
        self.assertEqual(ops, 289, "as many ops as the recorded op step did")
        self.assertEqual(kw.get("phase"), "fresh")
        self.assertTrue(best.trace, "the run kept is left as it was")
        sh.p_fresh()
        self.assertEqual(len(searched), 1, "the search runs once")

    def test_a_fresh_run_that_fails_the_same_way_ends_the_pass(self):
        sh = shrinker(Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"], 0, ["failed"]))
        searched = []
        sh.attempt = lambda what, c, phase, **kw: True
        sh.search = lambda start, ops, **kw: searched.append(start)
        sh.p_fresh()
        self.assertEqual(searched, [])

    def test_no_fresh_search_while_the_run_has_several_threads_or_is_fresh_already(self):
        # Several threads: K8's path tries fresh databases of its own, and
        # K6's search runs after p_threads; a fresh run has nothing to do.
        searched = []
        for best in (Cand([op_step(threads=2, traced=False)], False, None, 0, ["failed"]),
                     Cand([op_step(traced=False)], True, None, 0, ["failed"])):
            sh = shrinker(best)
            sh.attempt = lambda what, c, phase, **kw: False
            sh.search = lambda start, ops, **kw: searched.append(start)
            sh.p_fresh()
        self.assertEqual(searched, [])

    def test_a_run_on_a_grown_database_counts_the_ops_that_grew_it_until_it_starts_fresh(self):
        sh = shrinker(None)
        sh.history = 5000
        grown_run = Cand([op_step()], False, None, 0)
        fresh_run = Cand([op_step()], True, None, 0)
        self.assertEqual(sh.size(grown_run, {"ops_all": 44}), 5044)
        self.assertEqual(sh.size(fresh_run, {"ops_all": 244}), 244)
        sh.history = None  # a folder from before meta.json kept db_ops: unknown, not counted
        self.assertEqual(sh.size(grown_run, {"ops_all": 44}), 44)
        self.assertEqual(grown(289, 5000), 5289)
        self.assertIsNone(grown(None, 5000), "an unknown size stays unknown")


class TestDatabaseHistory(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ct-history-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def test_each_iteration_records_the_ops_its_database_did_before_it(self):
        # Three iterations on one database (no faults: none makes it fresh
        # again): each record's db_ops is the ops of the ones before.
        p = subprocess.run([sys.executable, CRASHTEST, "simple", "--iterations", "3", "--seed", "11", "--interval",
                            "1", "--max-key", "500", "--faults", "none", "--db-iterations", "4", "--stress-binary",
                            STRESS, "--powerloss-binary", POWERLOSS, "--report-dir", self.d],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, cwd=ROOT)
        self.assertEqual(p.returncode, 0, p.stdout)
        recs = sorted(read_iterations(self.d), key=lambda r: r["index"])
        self.assertEqual([r["db_age"] for r in recs], [0, 1, 2], p.stdout)
        self.assertTrue(all(r["ops"] > 0 for r in recs), [r["ops"] for r in recs])
        self.assertEqual([r["db_ops"] for r in recs], [0, recs[0]["ops"], recs[0]["ops"] + recs[1]["ops"]])


if __name__ == "__main__":
    unittest.main()
