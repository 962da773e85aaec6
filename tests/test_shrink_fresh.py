"""A failure on a database that earlier iterations grew (crashtest/shrink.py
K14, crashtest/freshpass.py): its size counts the ops that grew it, and
the shrinker looks for the same failure from a fresh database.  Planted bug
seal-before-witness, caught by a simple run in its second iteration,
shrinks from 289 ops to 44 on the grown database; the earlier iteration's
log, sealed wrong, is what fails, and without its ops counted the shrunk
run would pass for 6.5x smaller while it still needs that iteration."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.cand import Cand, is_fresh, opt_get, opt_set  # noqa: E402
from crashtest.freshpass import FILL_MAX_OPS, FRESH_SEARCHES, HISTORY_MAX_OPS  # noqa: E402
from crashtest.report import read_iterations  # noqa: E402
from crashtest.shrink import grown  # noqa: E402
from crashtest import freshpass, tracepass  # noqa: E402
from tests.test_shrink_passes import fake, state_of  # noqa: E402
from crashtest.steps import history_entry  # noqa: E402
from crashtest.tracepass import VALUES_MIN_OPS, VALUES_SIZE  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
STRESS = os.path.join(ROOT, BUILD, "stress")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
CRASHTEST = os.path.join(ROOT, "crashtest.py")


def op_step(threads=1, traced=True):
    argv = [
        "@STRESS@",
        "--db=@STATE@/db",
        "--max_key=100",
        "--threads=%d" % threads,
        "--seed=5",
        "--kill_random_test=40",
    ]
    if traced:
        argv += ["--trace_ops=@ITER@/ops.trace", "--replay_ops=@FOLDER@/ops.trace"]
    else:
        argv += ["--ops_per_thread=50"]
    return {
        "type": "stress",
        "name": "workload",
        "state": "@STATE@",
        "dir": "d",
        "expect": "exit0",
        "kill_after": None,
        "argv": argv,
    }


def stub_state(best):
    st = state_of()
    st.left = lambda: 100
    st.meta = {"seed": 9, "db_params": {"page_size": 8192}}
    st.hang = 60
    st.best = best
    st.orig_ops = 289
    return st


class TestFreshDatabase(unittest.TestCase):
    def test_a_traced_run_on_a_grown_database_is_searched_again_from_a_fresh_one_untraced(self):
        # The run as it is from a fresh database first (its trace read keys
        # the grown one had: a false alarm); then K6's seed search on its
        # op step untraced, after a create step, with the recorded op
        # step's ops.
        best = Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"] * 44, 0, ["failed"])
        st = stub_state(best)
        tried, searched = [], []
        st.runner.attempt = lambda what, c, phase, **kw: tried.append((what, c)) and False
        fake(self, "search", lambda start, ops, **kw: searched.append((start, ops, kw)) and False)
        freshpass.p_fresh(st)
        self.assertEqual(len(tried), 1)
        self.assertTrue(is_fresh(tried[0][1]))
        self.assertIsNotNone(tried[0][1].trace, "first the run as it is, its trace too")
        self.assertEqual(
            len(searched),
            4,
            "after a create step of 200 ops, then one that fills the key space; "
            "at the kept run's 44 ops, then at the recorded op step's",
        )
        self.assertEqual([ops for _, ops, _ in searched], [44, 44, 289, 289])
        start, ops, kw = searched[2]
        self.assertTrue(is_fresh(start))
        self.assertEqual([s["name"] for s in start.steps], ["create", "workload"])
        self.assertEqual(start.w, 1)
        self.assertIsNone(start.trace)
        self.assertIsNone(opt_get(start.op["argv"], "replay_ops"))
        self.assertIsNone(opt_get(start.op["argv"], "trace_ops"))
        self.assertEqual(
            opt_get(start.op["argv"], "kill_random_test"), "40", "its options are the shrunk run's"
        )
        self.assertEqual(ops, 289, "as many ops as the recorded op step did")
        self.assertEqual(kw.get("phase"), "fresh")
        self.assertTrue(best.trace, "the run kept is left as it was")
        freshpass.p_fresh(st)
        self.assertEqual(len(searched), 4, "the search runs once")

    def test_a_kill_pinned_in_the_trace_is_drawn_again_at_its_point_for_the_fresh_search(self):
        # Planted bug witness-at-end-is-damage: K16 pins the kill in the
        # last op of a 5-op run and takes --kill_random_test out; a fresh
        # search that drops the trace with the kill in it runs every seed
        # to its end ("passed instead of crashed").  The search's run is
        # killed at that point again, 1 in a quarter of its ops' hits.
        point = "kill/wal/after_write_before_sync"
        step = op_step()
        step["expect"] = "kill_point"
        step["argv"] = opt_set(step["argv"], "kill_random_test", None)
        trace = ["%d put 1 5 on | 1=v1 ok" % i for i in range(4)] + [
            "6 put 1 5 kill:%s:1 | 1=v1 killed" % point
        ]
        best = Cand([step], False, trace, 0, ["failed"])
        st = stub_state(best)
        st.orig_ops = 26962
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(
            self,
            "search",
            (
                lambda start, ops, **kw: searched.append(
                    (
                        ops,
                        opt_get(start.op["argv"], "kill_points"),
                        opt_get(start.op["argv"], "kill_random_test"),
                    )
                )
                and False
            ),
        )
        freshpass.p_fresh(st)
        self.assertEqual(
            searched,
            [(5, point, "1"), (5, point, "1"), (26962, point, "6740"), (26962, point, "6740")],
        )
        self.assertIsNone(
            opt_get(best.op["argv"], "kill_random_test"), "the run kept is left as it was"
        )
        # A run that still draws its kill keeps it as it is.
        best = Cand([op_step()], False, trace, 0, ["failed"])
        st = stub_state(best)
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(
            self,
            "search",
            (
                lambda start, ops, **kw: searched.append(
                    (
                        opt_get(start.op["argv"], "kill_points"),
                        opt_get(start.op["argv"], "kill_random_test"),
                    )
                )
                and False
            ),
        )
        freshpass.p_fresh(st)
        self.assertEqual(set(searched), {(None, "40")})

    def test_the_fresh_search_runs_again_once_the_kept_options_changed(self):
        # Planted bug writeback-error-cleans: no fresh seed fails with the
        # recorded rates; the run kept on the grown database makes its
        # faults and checkpoints frequent (p_short), and with those ten
        # seeds of ten fail from a fresh database.  The search runs again
        # with the options kept, not the regrown database (once), and no
        # more than FRESH_SEARCHES times in all.
        best = Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"] * 44, 0, ["failed"])
        st = stub_state(best)
        st.meta["history"] = [{"index": 0, "seed": 1, "ops": 1200, "workload": workload_template()}]
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(self, "search", lambda start, ops, **kw: searched.append((start, kw)) and False)
        freshpass.p_fresh(st)
        self.assertEqual(
            len(searched), 5, "the fresh search, filled, at 44 ops and 289, then the regrown one"
        )
        for rate in (40, 40, 7, 3, 2):
            st.best = st.best.copy()
            st.best.op["argv"] = opt_set(st.best.op["argv"], "kill_random_test", rate)
            st.best.op["argv"] = opt_set(
                st.best.op["argv"], "seed", rate
            )  # the search sets its own
            freshpass.p_fresh(st)
        self.assertEqual(
            len(searched), 5 + 4 * (FRESH_SEARCHES - 1), "again for 7 and 3, then no more"
        )
        for start, kw in searched[5:]:
            self.assertEqual(
                [s["name"] for s in start.steps], ["create", "workload"], "not regrown again"
            )
            self.assertIn("the options kept since the last search", kw.get("what"))
        self.assertEqual(
            [opt_get(s.op["argv"], "kill_random_test") for s, _ in searched[5:]],
            ["7"] * 4 + ["3"] * 4,
        )

    def test_a_run_kept_short_is_searched_from_a_fresh_database_at_its_own_length_first(self):
        # Planted bug checkpoint-skips-data-fsync: a lost kept in 2 ops on
        # a database 21,512 ops grew; 32 fresh seeds of the recorded 9,734
        # ops fail as unrecoverable or false_alarm, and a fresh filled
        # database with 2 ops is lost.  The search at the run's
        # own length comes first; it ends the pass when it keeps one.
        best = Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"] * 2, 0, ["failed"])
        st = stub_state(best)
        st.orig_ops = 9734
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(self, "search", lambda start, ops, **kw: searched.append(ops) or len(searched) == 2)
        freshpass.p_fresh(st)
        self.assertEqual(
            searched, [2, 2], "200 ops then filled, at 2 ops; the kept one ends the pass"
        )
        # An untraced run pinned at the recorded count: one search length.
        best = Cand([op_step(traced=False)], False, None, 0, ["failed"])
        st = stub_state(best)
        st.orig_ops = 50
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(self, "search", lambda start, ops, **kw: searched.append(ops) and False)
        freshpass.p_fresh(st)
        self.assertEqual(searched, [50, 50])

    def test_a_fresh_database_with_its_key_space_filled_is_searched_when_200_ops_are_not_enough(
        self,
    ):
        # Planted bug fpi-skips-page-at-redo-lsn: its torn page is one the
        # cache evicted, which a database of 200 ops never does;
        # after a create step of 1,000 batches (max_key 2000) six seeds of
        # ten fail.  The filled create step is one thread, batches only.
        best = Cand([op_step(traced=False)], False, None, 0, ["failed"])
        st = stub_state(best)
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(
            self,
            "search",
            lambda start, ops, **kw: searched.append((start, kw)) or len(searched) == 2,
        )
        freshpass.p_fresh(st)
        self.assertEqual(len(searched), 2)
        (small, _), (full, kw) = searched
        self.assertEqual(opt_get(small.steps[0]["argv"], "ops_per_thread"), "200")
        a = full.steps[0]["argv"]
        self.assertEqual(
            opt_get(a, "ops_per_thread"), "200", "max_key 100: at least the 200 of a create step"
        )
        for k in ("readpercent", "writepercent", "delpercent", "iterpercent"):
            self.assertEqual(opt_get(a, k), "0", "batches only")
        self.assertEqual(opt_get(a, "threads"), "1")
        self.assertIn("key space filled", kw.get("what"))
        big = Cand(
            [
                dict(
                    op_step(traced=False),
                    argv=opt_set(op_step(traced=False)["argv"], "max_key", 2000),
                )
            ],
            False,
            None,
            0,
            ["failed"],
        )
        self.assertEqual(
            opt_get(freshpass.freshened(st, big, fill=True).steps[0]["argv"], "ops_per_thread"),
            "1000",
        )
        huge = Cand(
            [
                dict(
                    op_step(traced=False),
                    argv=opt_set(op_step(traced=False)["argv"], "max_key", 10**7),
                )
            ],
            False,
            None,
            0,
            ["failed"],
        )
        self.assertEqual(
            opt_get(freshpass.freshened(st, huge, fill=True).steps[0]["argv"], "ops_per_thread"),
            str(FILL_MAX_OPS),
        )

    def test_a_fresh_run_that_fails_the_same_way_ends_the_pass(self):
        st = stub_state(Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"], 0, ["failed"]))
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: True
        fake(self, "search", lambda start, ops, **kw: searched.append(start))
        freshpass.p_fresh(st)
        self.assertEqual(searched, [])

    def test_no_fresh_search_while_the_run_has_several_threads_or_is_fresh_already(self):
        # Several threads: K8's path tries fresh databases of its own, and
        # K6's search runs after p_threads; a fresh run has nothing to do.
        searched = []
        for best in (
            Cand([op_step(threads=2, traced=False)], False, None, 0, ["failed"]),
            Cand([op_step(traced=False)], True, None, 0, ["failed"]),
        ):
            st = stub_state(best)
            st.runner.attempt = lambda what, c, phase, **kw: False
            fake(self, "search", lambda start, ops, **kw: searched.append(start))
            freshpass.p_fresh(st)
        self.assertEqual(searched, [])

    def test_a_run_on_a_grown_database_counts_the_ops_that_grew_it_until_it_starts_fresh(self):
        st = stub_state(None)
        st.history = 5000
        grown_run = Cand([op_step()], False, None, 0)
        fresh_run = Cand([op_step()], True, None, 0)
        self.assertEqual(st.size(grown_run, {"ops_all": 44}), 5044)
        self.assertEqual(st.size(fresh_run, {"ops_all": 244}), 244)
        st.history = None  # a folder from before meta.json kept db_ops: unknown, not counted
        self.assertEqual(st.size(grown_run, {"ops_all": 44}), 44)
        self.assertEqual(grown(289, 5000), 5289)
        self.assertIsNone(grown(None, 5000), "an unknown size stays unknown")


def workload_template(kill=True):
    argv = [
        "@STRESS@",
        "--db=@STATE@/db",
        "--max_key=100",
        "--threads=4",
        "--ops_per_thread=0",
        "--duration=30",
        "--write_fault_one_in=50",
        "--report=@ITER@/steps/01-workload/report.json",
        "--seed=77",
    ]
    if kill:
        argv += ["--kill_random_test=900", "--kill_points=kill/wal/after_write_before_sync"]
    return {
        "argv": argv,
        "state": "@STATE@",
        "dir": "@ITER@/steps/01-workload",
        "expect": "kill_point",
    }


class TestPinnedFlipsOnAFreshDatabase(unittest.TestCase):
    def test_pinned_flips_of_a_grown_database_move_to_the_first_blocks_of_a_fresh_one(self):
        # checksum-skips-last-byte: a flip pinned on block 670 of a grown
        # data file lands on nothing in a fresh one; the same bit of
        # block 1, 2 ... does.  Distinct blocks stay distinct, in order.
        trace = [
            "3 scan 842 655a16326198dd30 flip:670:65530 | seen=19 ok",
            "4 get 7 655a16326198dd31 on | ok",
            "5 put 9 655a16326198dd32 flip:900:3 | ok",
            "6 get 9 655a16326198dd33 flip:670:8 | ok",
        ]
        st = stub_state(Cand([op_step()], False, trace, 0, ["failed"]))
        tried = []
        st.runner.attempt = lambda what, c, phase, **kw: tried.append((what, c)) or len(tried) == 3
        fake(self, "search", lambda start, ops, **kw: self.fail("a kept move ends the pass"))
        freshpass.p_fresh(st)
        self.assertEqual(len(tried), 3, [w for w, _ in tried])
        self.assertIsNotNone(tried[0][1].trace)
        self.assertEqual(tried[0][1].trace, trace, "the run as it is first")
        for first, (what, c) in zip((1, 2), tried[1:]):
            self.assertTrue(is_fresh(c))
            self.assertEqual(
                [line.split()[4] for line in c.trace],
                ["flip:%d:65530" % first, "on", "flip:%d:3" % (first + 1), "flip:%d:8" % first],
            )
            self.assertIn("moved to blocks %d,%d" % (first, first + 1), what)
        self.assertEqual(st.best.trace, trace, "the run kept is left to attempt")

    def test_a_trace_without_pinned_flips_moves_nothing(self):
        st = stub_state(Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"], 0, ["failed"]))
        tried = []
        st.runner.attempt = lambda what, c, phase, **kw: tried.append(what) and False
        fake(self, "search", lambda start, ops, **kw: False)
        freshpass.p_fresh(st)
        self.assertEqual(len(tried), 1, tried)


class TestLargerValues(unittest.TestCase):
    """K21: a failure that rests on how much log was written needs fewer
    ops of larger values (planted bug recycle-onto-live-segment: 54 ops of
    values up to 256 bytes, every op needed; 4 with 1,024-byte ones)."""

    def run_values(self, left_after_ddmin, fresh=True, vmax=256, nops=54):
        argv = [
            "@STRESS@",
            "--db=@STATE@/db",
            "--threads=1",
            "--value_size_min=8",
            "--value_size_max=%d" % vmax,
            "--replay_ops=@FOLDER@/ops.trace",
        ]
        step = {
            "type": "stress",
            "name": "create",
            "state": "@STATE@",
            "dir": "d",
            "expect": "exit0",
            "kill_after": None,
            "argv": argv,
        }
        best = Cand(
            [step], fresh, ["%d put 1 5 on | 1=v1 ok" % i for i in range(nops)], 0, ["failed"]
        )
        st = stub_state(best)
        st.defaults = {"value_size_max": "256"}
        st.best_res, st.log, st.ddmin_size = {"ops": nops, "dir": "/nonexistent"}, [], 7
        st.p = type("P", (), {"line": lambda self, x: None})()
        tried = []

        def attempt(what, c, phase, **kw):
            tried.append(c)
            st.log.append(
                {"what": what, "verdict": "kept", "why": "fails the same way (false_alarm)"}
            )
            st.best, st.best_res = c, {"ops": len(c.trace)}
            return True

        def ddmin(share=1.0):
            self.assertEqual(
                st.ddmin_size, 1 << 62, "delta debugging starts again from the largest chunks"
            )
            c = st.best.copy()
            c.trace = c.trace[:left_after_ddmin]
            attempt("ddmin", c, "ddmin")

        st.runner.attempt = attempt
        fake(self, "p_ddmin", ddmin)
        tracepass.p_values(st)
        return st, best, tried

    def test_a_fresh_traced_run_is_tried_with_larger_values_then_cut_again(self):
        st, best, tried = self.run_values(4)
        self.assertEqual(len(st.best.trace), 4)
        a = st.best.op["argv"]
        self.assertEqual(
            (opt_get(a, "value_size_min"), opt_get(a, "value_size_max")),
            (str(VALUES_SIZE), str(VALUES_SIZE)),
        )
        self.assertEqual([e["verdict"] for e in st.log], ["kept", "kept"])

    def test_larger_values_that_do_not_halve_the_ops_are_undone(self):
        st, best, tried = self.run_values(30)
        self.assertIs(st.best, best)
        self.assertEqual(st.best_res["ops"], 54, "the result it had")
        self.assertEqual(st.ddmin_size, 7)
        self.assertEqual([e["verdict"] for e in st.log], ["undone", "undone"])
        self.assertIn("not half", st.log[0]["why"])

    def test_no_larger_values_for_a_grown_database_large_values_or_few_ops(self):
        for kw in ({"fresh": False}, {"vmax": VALUES_SIZE}, {"nops": VALUES_MIN_OPS - 1}):
            st, best, tried = self.run_values(4, **kw)
            self.assertEqual(tried, [], kw)
            self.assertIs(st.best, best)


class TestRegrownDatabase(unittest.TestCase):
    """K15: a failure whose damage an earlier iteration wrote, searched
    from a fresh database that redoes those iterations' workloads."""

    def regrown_search(self, history):
        # (a trace as long as the recorded op step: one search length)
        st = stub_state(Cand([op_step()], False, ["0 put 1 5 on | 1=v1 ok"] * 289, 0, ["failed"]))
        st.meta["history"] = history
        searched = []
        st.runner.attempt = lambda what, c, phase, **kw: False
        fake(self, "search", lambda start, ops, **kw: searched.append((start, ops, kw)) and False)
        freshpass.p_fresh(st)
        return searched

    def test_the_earlier_iterations_workloads_are_redone_with_one_thread_before_the_op_step(self):
        searched = self.regrown_search(
            [
                {"index": 0, "seed": 1, "ops": 1200, "workload": workload_template()},
                {"index": 1, "seed": 2, "ops": 10**6, "workload": workload_template(kill=False)},
            ]
        )
        self.assertEqual(len(searched), 3, "the fresh search, filled, then the regrown one")
        start, ops, kw = searched[2]
        self.assertEqual(kw.get("phase"), "history")
        self.assertEqual(
            [s["name"] for s in start.steps], ["create", "history-0", "history-1", "workload"]
        )
        self.assertEqual(start.w, 3)
        self.assertEqual(start.want[:3], ["passed"] * 3)
        self.assertEqual(ops, 289)
        for s, n in zip(start.steps[1:3], (1200, HISTORY_MAX_OPS)):
            a = s["argv"]
            self.assertEqual(opt_get(a, "threads"), "1")
            self.assertEqual(opt_get(a, "ops_per_thread"), str(n))
            self.assertEqual(opt_get(a, "write_fault_one_in"), "50", "its faults come back with it")
            self.assertEqual(opt_get(a, "seed"), "77")
            for gone in ("duration", "kill_random_test", "kill_points"):
                self.assertIsNone(opt_get(a, gone), gone)
            self.assertEqual(opt_get(a, "report"), s["dir"] + "/report.json")
            self.assertEqual(s["expect"], "exit0")
            self.assertIsNone(s["kill_after"])
        self.assertEqual(sum(1 for a in start.steps[1]["argv"] if a.startswith("--report=")), 1)
        m = start.measures()
        self.assertEqual(m["regrown"], 2)
        self.assertIn(
            "write_error", m["fault_classes"], "a regrown step's faults are the run's too"
        )

    def test_no_regrown_search_without_a_recorded_history(self):
        self.assertEqual(len(self.regrown_search([])), 2)
        self.assertEqual(
            len(self.regrown_search([{"index": 0, "seed": 1, "ops": 5, "workload": None}])),
            2,
            "an iteration without a workload step cannot be redone: no partial history",
        )

    def test_the_steps_that_regrow_a_database_are_dropped_or_cut_like_a_create_step(self):
        st = stub_state(None)
        searched = self.regrown_search(
            [{"index": 0, "seed": 1, "ops": 1200, "workload": workload_template()}]
        )
        st.best = searched[2][0]
        tried = []
        st.runner.attempt = lambda what, c, phase, **kw: tried.append((what, c, phase)) and False
        freshpass.p_history(st)
        what, c, phase = tried[0]
        self.assertEqual(phase, "history")
        self.assertEqual([s["name"] for s in c.steps], ["create", "workload"], what)
        self.assertEqual(c.w, 1)
        counts = [as_ops(c.steps[1]) for _, c, _ in tried[1:]]
        self.assertEqual(counts[0], 1, "one op first, then more")
        self.assertEqual(counts, sorted(counts))
        self.assertTrue(all(n < 1200 for n in counts), counts)


class TestSmallerLogSegments(unittest.TestCase):
    """A creation-time option, so only on a fresh database (K5): smaller
    log segments, so that a failure that needs segments filled or
    recycled needs fewer ops (recycle-onto-live-segment)."""

    def tried(self, fresh, size, keep_at=None):
        steps = [dict(op_step(), argv=op_step()["argv"] + ["--wal_segment_size=%s" % size])]
        st = stub_state(Cand(steps, fresh, ["0 put 1 5 on | 1=v1 ok"], 0, ["failed"]))
        st.defaults = {"wal_segment_size": "16M"}
        tried = []
        st.runner.attempt = lambda what, c, phase, **kw: tried.append(c) or len(tried) == keep_at
        tracepass.smaller_segments(st)
        return [[opt_get(x["argv"], "wal_segment_size") for x in c.stress_steps()] for c in tried]

    def test_smaller_segments_are_tried_smallest_first_on_every_step_of_a_fresh_run(self):
        self.assertEqual(self.tried(True, "16M"), [["65536"], ["262144"], ["1048576"], ["4194304"]])
        self.assertEqual(self.tried(True, "256K"), [["65536"]], "only sizes below the run's")
        self.assertEqual(
            self.tried(True, "16M", keep_at=2), [["65536"], ["262144"]], "the first kept ends it"
        )

    def test_smaller_segments_are_tried_once_a_shrink(self):
        # The options pass may take the size back to the default when the
        # ops left do not need it; a later round does not lower it again.
        st = stub_state(
            Cand(
                [dict(op_step(), argv=op_step()["argv"] + ["--wal_segment_size=16M"])],
                True,
                ["0 put 1 5 on | 1=v1 ok"],
                0,
                ["failed"],
            )
        )
        st.defaults = {"wal_segment_size": "16M"}
        tried = []
        st.runner.attempt = lambda what, c, phase, **kw: tried.append(c) and False
        tracepass.smaller_segments(st)
        tracepass.smaller_segments(st)
        self.assertEqual(len(tried), 4)

    def test_a_grown_database_keeps_its_segment_size(self):
        self.assertEqual(self.tried(False, "16M"), [])
        self.assertEqual(self.tried(True, "64K"), [], "none below the engine's least")


def as_ops(step):
    return int(opt_get(step["argv"], "ops_per_thread"))


class TestDatabaseHistory(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ct-history-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def test_each_iteration_records_the_ops_its_database_did_before_it(self):
        # Three iterations on one database (no faults: none makes it fresh
        # again): each record's db_ops is the ops of the ones before.
        p = subprocess.run(
            [
                sys.executable,
                CRASHTEST,
                "simple",
                "--iterations",
                "3",
                "--seed",
                "11",
                "--interval",
                "1",
                "--max-key",
                "500",
                "--faults",
                "none",
                "--db-iterations",
                "4",
                "--stress-binary",
                STRESS,
                "--powerloss-binary",
                POWERLOSS,
                "--report-dir",
                self.d,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            cwd=ROOT,
        )
        self.assertEqual(p.returncode, 0, p.stdout)
        recs = sorted(read_iterations(self.d), key=lambda r: r["index"])
        self.assertEqual([r["db_age"] for r in recs], [0, 1, 2], p.stdout)
        self.assertTrue(all(r["ops"] > 0 for r in recs), [r["ops"] for r in recs])
        self.assertEqual(
            [r["db_ops"] for r in recs], [0, recs[0]["ops"], recs[0]["ops"] + recs[1]["ops"]]
        )
        # What a later failure's meta.json keeps of each (K15): the
        # workload as it ran, ready to be redone.
        h = history_entry(recs[1], recs[1]["steps"])
        self.assertEqual((h["index"], h["seed"], h["ops"]), (1, recs[1]["seed"], recs[1]["ops"]))
        ran = next(s for s in recs[1]["steps"] if s["name"] == "workload")
        self.assertEqual(h["workload"]["argv"], ran["argv"])
        self.assertNotIn("result", h["workload"])


if __name__ == "__main__":
    unittest.main()
