"""How a shrink's trials judge a candidate and what they keep
(crashtest/trials.py, the state's runner; crashtest/shrink.py's K1, K8,
K10, K12, K19, K20):

- the final check steps back from a shrunk run that drifted to a rare one
  to the kept run that reproduced most, to the multi-thread path's own
  run before the recorded one, and to the recorded run only when no
  smaller run reproduced (K20);
- a run of several threads larger than the recorded one is not kept
  (K10); a failure that moves into the create step makes it the op step;
  a multi-thread candidate that failed once is decided by more trials
  (K8), every run kept on trials is remembered for the final check, and
  repro of a rare shrunk race tries often enough to expect three;
- --match keys takes a failure whose keys include the kind (K1);
- only a create step that leaves the same database each time is reused
  (K12); a deterministic trial runs in RAM, one with threads on disk (K19).

The trials are stubs (no stress runs): what is kept and judged is tested."""

import os
import sys
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.test_shrink_passes import state_of  # noqa: E402
from crashtest.multipass import MT_MORE, MT_NEED, MT_TRIALS  # noqa: E402
from crashtest.cand import Cand, set_threads, trimmed  # noqa: E402
from crashtest import trials  # noqa: E402
from crashtest.shrinkstate import ShrinkState  # noqa: E402
from crashtest.trials import MT_REPRO_MAX, MT_REPRO_TRIES, TrialRunner  # noqa: E402


class TestTrials(unittest.TestCase):
    def stub_state(self, outcomes):
        """A shrink's state whose trials are OUTCOMES, in order: (kind, ops_all)."""
        st = state_of()
        st.kind, st.match, st.p = "lost", "kind", type("P", (), {"line": lambda self, s: None})()
        st.best, st.best_res, st.log, st.tried, st.aside = (
            Cand([{"type": "stress", "argv": ["--threads=1"]}], True, None, 0),
            None,
            [],
            set(),
            [],
        )
        st.need, st.runs, st.more, st.cap, st.multi, st.kept_trials = 2, 4, 0, None, None, []
        st.left = lambda: 100
        queue = list(outcomes)

        def run_once(cand):
            kind, ops = queue.pop(0)
            return {
                "kind": kind,
                "step": 0 if kind else None,
                "ops": ops,
                "ops_all": ops,
                "seconds": 0.1,
                "diverged": None,
                "dir": "/nonexistent/t",
                "results": {},
                "failure": {"kind": kind},
            }

        st.runner.run_once = run_once
        return st, queue

    def cand(self, threads, n):
        return Cand(
            [
                {
                    "type": "stress",
                    "name": "w",
                    "state": "@STATE@",
                    "dir": "d",
                    "expect": "exit0",
                    "kill_after": None,
                    "argv": ["@STRESS@", "--threads=%d" % threads, "--ops_per_thread=%d" % n],
                }
            ],
            True,
            None,
            0,
        )

    def test_a_shrunk_run_that_drifted_to_a_rare_one_steps_back_to_the_run_that_reproduced_most(
        self,
    ):
        # Four runs kept (A..D, D the shrunk one, each on 2 of 4 trials);
        # D reproduces 0 of 9.  When an earlier one reaches the need, it
        # is the result; when none does, the one that reproduced most often
        # is, never D (planted bug writeback-error-cleans can end at 0 of 9
        # while C reproduces 1 of 9).
        class T(TrialRunner):
            def __init__(self, rates):
                super().__init__(ShrinkState())
                self.rates, self.written, self.lines = rates, [], []
                self.state.kept_trials = [
                    (n, name, {"ops": n}) for n, name in ((5, "A"), (9, "B"), (17, "C"), (33, "D"))
                ]
                self.state.best, self.state.best_res = "D", {"ops": 33}
                self.state.p = type("P", (), {"line": lambda _, x: self.lines.append(x)})()

            def write_folder(self, dest, cand, res):
                self.written.append(cand)

            def repro_rate(self, dest):
                return [0.1] * 9, self.rates[self.written[-1]], 9

        t = T({"C": 1, "B": 0, "A": 3})
        got = t.step_back("dest", ([0.1] * 9, 0, 9), 2, 4)
        self.assertEqual((t.state.best, got[1], [b["step"] for b in got[3]]), ("A", 3, [17, 9, 5]))
        t = T({"C": 1, "B": 0, "A": 1})
        got = t.step_back("dest", ([0.1] * 9, 0, 9), 2, 4)
        self.assertEqual(
            (t.state.best, t.state.best_res, got[1], t.written[-1]), ("C", {"ops": 17}, 1, "C")
        )
        self.assertIn("reproduced most often", t.lines[-1])
        t = T({"C": 0, "B": 0, "A": 0})
        got = t.step_back(
            "dest", ([0.1] * 9, 1, 9), 2, 2
        )  # the shrunk run's 1 of 9 is the best seen
        self.assertEqual((t.state.best, got[1], t.written[-1], len(got[3])), ("D", 1, "D", 2))

    def test_the_recorded_run_is_stepped_back_to_only_when_no_smaller_run_reproduced(self):
        # The baseline's kept trial (step 0, the recorded run) and the
        # multi-thread path's run (step 64, the shrunk one) that reproduced
        # 1 of 9: the shrunk run stays, its rate written down
        # (planted bug checkpoint-redo-at-record would end at 1.0x with the
        # recorded run, 8 of 9, as the result).  When it reproduced 0 of 9,
        # the recorded run is tried and, reaching the need, is the result.
        class T(TrialRunner):
            def __init__(self):
                super().__init__(ShrinkState())
                self.written, self.lines = [], []
                self.state.kept_trials = [(0, "R", {"ops": 12049}), (64, "M", {"ops": 128})]
                self.state.best, self.state.best_res = "M", {"ops": 128}
                self.state.p = type("P", (), {"line": lambda _, x: self.lines.append(x)})()

            def write_folder(self, dest, cand, res):
                self.written.append(cand)

            def repro_rate(self, dest):
                return [0.1] * 9, {"R": 8, "M": 1}[self.written[-1]], 9

        t = T()
        got = t.step_back("dest", ([0.1] * 9, 1, 9), 2, 4)
        self.assertEqual((t.state.best, got[1], got[3], t.written), ("M", 1, [], ["M"]))
        self.assertIn("the recorded run is not stepped back to", t.lines[0])
        t = T()
        got = t.step_back("dest", ([0.1] * 9, 0, 9), 2, 4)
        self.assertEqual((t.state.best, got[1], [b["step"] for b in got[3]]), ("R", 8, [0]))

    def test_a_step_back_past_its_latest_runs_tries_the_multi_thread_path_s_own_run(self):
        # Six runs kept after the multi-thread path's (step 50), each on a
        # few trials, the shrunk one reproducing 0 of 8 like the four
        # before it (planted bug hint-aborted-while-in-progress's shrink can
        # end so, at 0 of 8): the path's run, confirmed by the most trials,
        # is tried next, before the recorded run.
        class T(TrialRunner):
            def __init__(self, rates):
                super().__init__(ShrinkState())
                self.rates, self.written, self.lines = rates, [], []
                self.state.kept_trials = [
                    (n, n, {"ops": n}) for n in (0, 50, 52, 55, 57, 61, 64, 66)
                ]
                self.state.best, self.state.best_res = 66, {"ops": 66}
                self.state.multi = {"step": 50}
                self.state.p = type("P", (), {"line": lambda _, x: self.lines.append(x)})()

            def write_folder(self, dest, cand, res):
                self.written.append(cand)

            def repro_rate(self, dest):
                return [0.1] * 8, self.rates.get(self.written[-1], 0), 8

        t = T({50: 3, 0: 8})
        got = t.step_back("dest", ([0.1] * 8, 0, 8), 2, 4)
        self.assertEqual(
            (t.state.best, got[1], [b["step"] for b in got[3]]), (50, 3, [64, 61, 57, 55, 50])
        )
        t = T({0: 8})
        got = t.step_back("dest", ([0.1] * 8, 0, 8), 2, 4)
        self.assertEqual((t.state.best, [b["step"] for b in got[3]]), (0, [64, 61, 57, 55, 50, 0]))

    def test_a_run_of_several_threads_larger_than_the_recorded_one_is_not_kept(self):
        # K10 (planted bug hint-aborted-while-in-progress: a two-thread run
        # pinned at four times the recorded ops for its kill points, kept,
        # and the shrunk run had 18,707 ops where the recorded one had 5,771).
        st, _ = self.stub_state([("lost", 1500), ("lost", 1500), ("lost", 900), ("lost", 900)])
        st.cap, st.need = 1000, 1
        self.assertFalse(
            st.runner.attempt("two threads, 1500 ops", self.cand(2, 750), "pin", runs=2, need=1)
        )
        self.assertIn("larger than the recorded run (1500 ops; it had 1000)", st.log[-1]["why"])
        self.assertTrue(
            st.runner.attempt("two threads, 900 ops", self.cand(2, 450), "ops", runs=2, need=1)
        )
        # One thread, deterministic: halving cuts it a trial a step, so it
        # may be larger for a while.
        st, _ = self.stub_state([("lost", 1500)])
        st.cap = 1000
        self.assertTrue(st.runner.attempt("one thread, 1500 ops", self.cand(1, 1500), "search"))
        # Several threads: a larger trial is a pass among the trials.
        st, q = self.stub_state([("lost", 2000), ("lost", 900), ("lost", 2000), ("lost", 2000)])
        st.cap = 1000
        self.assertFalse(
            st.runner.attempt("two threads", self.cand(2, 1000), "multi", runs=4, need=2)
        )
        self.assertEqual((st.log[-1]["trials"], st.log[-1]["failures"]), (4, 1))

    def test_a_failure_that_moves_into_the_create_step_makes_it_the_op_step(self):
        # Planted bug delete-at-snapshot-invisible: with 7 keys the create
        # step itself showed the failure; the steps after it went and the
        # op step's index with them (shrink.py crashed on the next pass).
        cr = {
            "type": "stress",
            "name": "create",
            "state": "@STATE@",
            "dir": "d",
            "expect": "exit0",
            "kill_after": None,
            "argv": ["@STRESS@", "--threads=1", "--ops_per_thread=100", "--destroy_db_initially=1"],
        }
        wl = dict(
            cr, name="workload", argv=["@STRESS@", "--threads=1", "--replay_ops=@FOLDER@/ops.trace"]
        )
        st, _ = self.stub_state([])
        st.best = Cand([cr, wl], True, ["0 put 3 00 on"], 1)

        def run_once(cand):
            return {
                "kind": "lost",
                "step": 0,
                "ops": 100,
                "ops_all": 100,
                "seconds": 0.1,
                "diverged": None,
                "dir": "/nonexistent/t",
                "results": {},
                "failure": {"kind": "lost"},
            }

        st.runner.run_once = run_once
        c = st.best.copy()
        c.set_all("max_key", 7)
        self.assertTrue(st.runner.attempt("key space 15 -> 7", c, "keys"))
        self.assertEqual(
            ([s["name"] for s in st.best.steps], st.best.w, st.best.trace), (["create"], 0, None)
        )
        self.assertEqual(st.best.op["name"], "create")
        # No workload step at or before the failing one: not kept.
        pl = {"type": "powerloss", "name": "powerloss", "argv": ["@POWERLOSS@"]}
        self.assertIsNone(trimmed(Cand([pl, wl], False, None, 1), 0))

    def test_a_multi_thread_candidate_that_failed_once_is_decided_by_more_trials(self):
        # K8: 1 of MT_TRIALS failing is a sign; up to MT_MORE more trials
        # decide it, MT_NEED failing still.
        st, q = self.stub_state(
            [
                (None, 50),
                ("lost", 50),
                (None, 50),
                (None, 50),
                (None, 50),
                ("lost", 50),
                ("lost", 50),
            ]
        )
        self.assertTrue(
            st.runner.attempt(
                "c", self.cand(2, 25), "multi", runs=MT_TRIALS, need=MT_NEED, more=MT_MORE
            )
        )
        self.assertEqual((st.log[-1]["trials"], st.log[-1]["failures"]), (6, 2))
        # None failing: decided as before, without the more.
        st, q = self.stub_state([(None, 50)] * 8)
        self.assertFalse(
            st.runner.attempt(
                "c", self.cand(2, 25), "multi", runs=MT_TRIALS, need=MT_NEED, more=MT_MORE
            )
        )
        self.assertEqual(st.log[-1]["trials"], MT_TRIALS - MT_NEED + 1)
        # One failing and the rest passing: all MT_TRIALS + MT_MORE run.
        st, q = self.stub_state([("lost", 50)] + [(None, 50)] * 9)
        self.assertFalse(
            st.runner.attempt(
                "c", self.cand(2, 25), "multi", runs=MT_TRIALS, need=MT_NEED, more=MT_MORE
            )
        )
        self.assertEqual((st.log[-1]["trials"], st.log[-1]["failures"]), (MT_TRIALS + MT_MORE, 1))
        # Not for the confirmation (more=0) nor before K8 kept a run.
        st, q = self.stub_state([(None, 50), ("lost", 50), (None, 50), (None, 50), ("lost", 50)])
        self.assertFalse(st.runner.attempt("c", self.cand(2, 25), "ops", runs=4, need=2))
        self.assertEqual(st.log[-1]["trials"], 4)

    def test_every_run_kept_on_trials_is_remembered_for_the_final_check(self):
        # K8's final check steps back through the runs kept before the last
        # that are not deterministic, the multi-thread path's or not (a
        # one-thread run with its timed kill, kept step by step on one of
        # three trials, ended at 0 of 8: checkpoint-skips-data-fsync).
        st, _ = self.stub_state([("lost", 50), ("lost", 50), ("lost", 40)])
        st.need = 1
        timed = self.cand(1, 25)
        timed.op["kill_after"] = 1.5
        self.assertTrue(st.runner.attempt("a timed one-thread run", timed, "threads", runs=3))
        self.assertTrue(st.runner.attempt("two threads", self.cand(2, 25), "ops", runs=3))
        self.assertTrue(st.runner.attempt("one thread, pinned", self.cand(1, 40), "ops"))
        self.assertEqual(
            [c.op["argv"] for _, c, _ in st.kept_trials],
            [timed.op["argv"], self.cand(2, 25).op["argv"]],
        )

    def test_repro_of_a_rare_shrunk_race_tries_often_enough_to_expect_three(self):
        # K8: a two-thread run that fails one time in six is a run a reader
        # can repeat if repro tries it often enough (the rate: the least of
        # K8's keep and the last step kept with several trials).
        st, _ = self.stub_state([])
        self.assertEqual(
            st.runner.repro_tries(), MT_REPRO_TRIES, "nothing kept on trials: the fewest"
        )
        st.multi = {"trials": 12, "failures": 3, "rate": 0.25}
        self.assertEqual(st.runner.repro_tries(), 12)
        st.log.append({"verdict": "kept", "trials": 6, "failures": 1})
        self.assertEqual(st.runner.repro_tries(), 18)
        st.log.append({"verdict": "kept", "trials": 2, "failures": 2})
        self.assertEqual(st.runner.repro_tries(), 12)
        st.multi = {"trials": 40, "failures": 1, "rate": 0.025}
        self.assertEqual(st.runner.repro_tries(), MT_REPRO_MAX)
        st.multi = {"trials": 4, "failures": 4, "rate": 1.0}
        self.assertEqual(st.runner.repro_tries(), MT_REPRO_TRIES)

    def test_match_keys_takes_a_failure_whose_keys_include_the_kind(self):
        # K1: a lost stays a lost; with --match keys, a wrong_value that
        # also shows the recorded false_alarm fails the same way too.
        st = state_of()
        st.kind, st.match = "false_alarm", "kind"
        both = {
            "kind": "wrong_value",
            "failure": {"kind": "wrong_value", "keys": ["wrong_value", "false_alarm"]},
        }
        alone = {"kind": "wrong_value", "failure": {"kind": "wrong_value", "keys": ["wrong_value"]}}
        own = {"kind": "false_alarm", "failure": {"kind": "false_alarm", "keys": ["false_alarm"]}}
        self.assertEqual([st.runner.same(r) for r in (both, alone, own)], [False, False, True])
        st.match = "keys"
        self.assertEqual([st.runner.same(r) for r in (both, alone, own)], [True, False, True])
        self.assertFalse(
            st.runner.same({"kind": "error", "failure": {"kind": "error", "keys": ["false_alarm"]}})
        )

    def test_only_a_create_step_that_leaves_the_same_database_each_time_is_reused(self):
        from crashtest.trials import made_key

        cand = Cand([], True, None, 0)
        create = {
            "type": "stress",
            "argv": ["--destroy_db_initially=1", "--threads=1", "--ops_per_thread=200", "--seed=5"],
        }
        self.assertIsNotNone(made_key(cand, 0, create))
        self.assertIsNone(made_key(cand, 1, create))  # only the first step
        for extra in (
            "--threads=2",
            "--ops_per_thread=0",
            "--duration=5",
            "--read_fault_one_in=10",
            "--kill_points=kill/wal/after_sync",
            "--sync_fault_injection=1",
            "--trace_ops=x",
        ):
            self.assertIsNone(made_key(cand, 0, dict(create, argv=create["argv"] + [extra])), extra)
        self.assertIsNone(made_key(cand, 0, dict(create, kill_after=0.5)))
        self.assertIsNone(
            made_key(cand, 0, dict(create, argv=create["argv"][1:]))
        )  # not a create step
        self.assertNotEqual(
            made_key(cand, 0, create),
            made_key(cand, 0, dict(create, argv=create["argv"][:3] + ["--seed=6"])),
        )

    def test_a_deterministic_trial_runs_in_ram_and_one_with_threads_on_disk(self):
        if not trials.ram_root():
            self.skipTest("%s is not a tmpfs with room" % trials.RAM_DIR)
        self.assertIsNone(trials.ram_root(ROOT))  # the repository's disk is no tmpfs
        self.assertIsNone(trials.ram_root("none"))
        st = state_of()
        st.work, st.ram = "/work-dir", trials.RAM_DIR
        one = Cand(
            [{"type": "stress", "name": "w", "argv": ["--threads=1", "--ops_per_thread=50"]}],
            True,
            None,
            0,
        )
        self.assertEqual(st.runner.trial_root(one), trials.RAM_DIR)
        two = one.copy()
        set_threads(two, 2)
        self.assertEqual(
            st.runner.trial_root(two), "/work-dir"
        )  # its races timed as the recorded run's were
        timed = one.copy()
        timed.op["kill_after"] = 0.5
        self.assertEqual(st.runner.trial_root(timed), "/work-dir")
        with mock.patch.object(trials, "RAM_MIN_FREE", 1 << 60):  # no room left: disk
            self.assertEqual(st.runner.trial_root(one), "/work-dir")


if __name__ == "__main__":
    unittest.main()
