"""Tests of what counts as the recorded failure in a shrink
(crashtest/shrink.py's K1, K10, K24 and K25): the match by keys, the recorded
run's tries kept at the recorded failing step.

The judge names a failure by the first of FAILURE_KEYS it shows, so a lost
that comes with a wrong_value is a wrong_value.  A recorded run that fails
again only that way still shows its kind:

- a baseline whose tries fail only as another kind, some with the kind
  among their keys, switches the match to keys and runs the recorded run
  again so matched (K24); without the kind among any try's keys, or with
  the match by keys already, nothing changes;
- the shrunk folder of a run matched by keys keeps the kind (and says what
  the judge named it), and repro reproduces it only when the kind is among
  the replay's keys;
- the mutants table says a shrunk kind was among another kind's keys;
- the recorded run's tries go on after one that fails the same way at an
  earlier step than the recorded one, and one that fails at it is kept;
  when none does, the multi-thread path starts from the recorded steps;
- a trial whose last step passes has passed: only a step with steps
  planned on its outcome after it diverges;
- a one-thread run larger than the recorded timed run (K10) is tried
  again as the replay of a failing try's trace, and a kept one is
  replayed by the pin step;
- a change whose trial hangs, the failure another kind, ends its trials
  and is not tried again (K25), and so does one too slow for its time;
- the failing key is the one a FAILURE line names, else the one a
  SUSPECT line of the kind names (the verdict failed the run on it).

The trials are stubs (no stress runs): the judging is what is tested."""
import json
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from crashtest.cand import Cand, opt_get  # noqa: E402
from crashtest.judge import shows_kind  # noqa: E402
from crashtest.mutants import shrink_summary, shrink_table  # noqa: E402
from crashtest.repro import failing_key, killed_before_judging  # noqa: E402
from crashtest.shrink import BASELINE_TRIALS, Shrinker  # noqa: E402
from crashtest import optpass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402

# How a stubbed trial fails: (its kind, its failure keys), or None: passed.
BESIDE = ("wrong_value", ["wrong_value", "lost"])  # a lost, named wrong_value
ALONE = ("wrong_value", ["wrong_value"])
OWN = ("lost", ["lost"])


def stub_state(outcomes, kind="lost", match="kind"):
    """A shrink's state of a recorded two-thread run (not deterministic) whose
    trials, in order, end as OUTCOMES say; a trial that fails another way
    is counted as kept aside, not written."""
    st = state_of()
    argv = ["@STRESS@", "--threads=2", "--ops_per_thread=0", "--duration=2", "--seed=5"]
    st.best = Cand(
        [
            {
                "type": "stress",
                "name": "workload",
                "state": "@STATE@",
                "dir": "d",
                "expect": "exit0",
                "kill_after": None,
                "argv": argv,
            }
        ],
        False,
        None,
        0,
    )
    st.best_res, st.kind, st.match, st.match_why = None, kind, match, None
    st.tried, st.log, st.kept_trials, st.aside = set(), [], [], []
    st.runs, st.need, st.more, st.cap = 3, 2, 0, None
    st.left = lambda: 100
    st.p = type("P", (), {"lines": [], "line": lambda self, s: self.lines.append(s)})()
    st.runner.keep_aside = lambda cand, r: st.aside.append(r["kind"])
    left = list(outcomes)

    def run_once(cand):
        got = left.pop(0)
        k, keys, step = (got + (0,))[:3] if got else (None, None, None)
        return {
            "kind": k,
            "failure": {"kind": k, "keys": keys, "message": "m", "step": step} if k else None,
            "step": step,
            "diverged": None,
            "seconds": 0.1,
            "ops": 100,
            "ops_all": 100,
            "dir": "/nonexistent",
            "results": {},
        }

    st.runner.run_once = run_once
    return st


def changed(cand, *opts):
    """CAND with OPTS added to its op step: another run."""
    c = cand.copy()
    c.op["argv"] = c.op["argv"] + list(opts)
    return c


def baseline(st):
    """The recorded run's tries, then K24, as Shrinker.shrink runs them."""
    ok = st.runner.attempt(
        "the recorded run, unchanged", st.best.copy(), "baseline", runs=BASELINE_TRIALS, need=1
    )
    return ok or st.runner.by_keys(st.best.copy(), BASELINE_TRIALS)


class TestMatchByKeysChosen(unittest.TestCase):
    def test_a_recorded_run_that_fails_again_only_beside_another_kind_is_shrunk_by_keys(self):
        st = stub_state([ALONE, BESIDE, ALONE, ALONE, ALONE] + [ALONE, BESIDE])
        self.assertTrue(baseline(st))
        self.assertEqual(st.match, "keys")
        self.assertEqual(
            st.match_why,
            "the recorded run failed again only as wrong_value, with lost among the keys "
            "in 1 of 5 tries",
        )
        first, again = st.log
        self.assertEqual((first["verdict"], first["kind_among_other_keys"]), ("rejected", 1))
        self.assertEqual((again["verdict"], again["trials"], again["failures"]), ("kept", 2, 1))
        self.assertIn("K24", again["what"])
        self.assertEqual(st.best_res["kind"], "wrong_value")
        self.assertTrue(any("(K24)" in s for s in st.p.lines), st.p.lines)

    def test_a_recorded_run_matched_by_keys_that_does_not_fail_again_leaves_the_match_for_the_fallback(  # noqa: E501
        self,
    ):
        # The seed search and the multi-thread path that follow judge by
        # keys too: the kind was seen among them.
        st = stub_state([BESIDE, ALONE, ALONE, ALONE, ALONE] + [ALONE] * 5)
        self.assertFalse(baseline(st))
        self.assertEqual(st.match, "keys")
        self.assertEqual(len(st.log), 2)

    def test_nothing_changes_without_the_kind_among_any_tries_keys_or_with_a_match_by_keys_given(
        self,
    ):
        st = stub_state([ALONE] * 5)
        self.assertFalse(baseline(st))
        self.assertEqual((st.match, st.match_why, len(st.log)), ("kind", None, 1))
        # --match keys: the first tries matched by keys already; no second.
        st = stub_state([ALONE] * 5, match="keys")
        self.assertFalse(baseline(st))
        self.assertEqual((st.match_why, len(st.log)), (None, 1))

    def test_a_recorded_run_that_failed_again_with_its_kind_keeps_the_match_by_kind(self):
        st = stub_state([BESIDE, OWN])
        self.assertTrue(baseline(st))
        self.assertEqual((st.match, len(st.log)), ("kind", 1))
        # ... and a later trial that shows it only beside another kind is
        # another failure (K1), not the same one.
        self.assertFalse(
            st.runner.same(
                {"kind": "wrong_value", "failure": {"kind": "wrong_value", "keys": BESIDE[1]}}
            )
        )


class TestRecordedStep(unittest.TestCase):
    # The stub's recorded run is one step; AT says which step failed.
    def tries(self, outcomes, at):
        st = stub_state(outcomes)
        ok = st.runner.attempt(
            "the recorded run, unchanged",
            st.best.copy(),
            "baseline",
            runs=BASELINE_TRIALS,
            need=1,
            at=at,
        )
        return st, ok

    def test_a_try_that_fails_earlier_than_the_recorded_step_is_kept_only_when_none_fails_at_it(
        self,
    ):
        early, late = ("lost", ["lost"], 1), ("lost", ["lost"], 4)
        st, ok = self.tries([early, None, late], 4)
        self.assertTrue(ok)
        self.assertEqual(
            (st.best_res["step"], st.log[-1]["trials"], st.log[-1]["failures"]), (4, 3, 2)
        )
        self.assertEqual(st.log[-1]["failed_at"], [1, None, 4])
        # None at the recorded step in the tries: the earlier one (K1 cuts
        # the steps after it).
        st, ok = self.tries([None, early, None, None, None], 4)
        self.assertTrue(ok)
        self.assertEqual((st.best_res["step"], st.log[-1]["trials"]), (1, 5))
        # One at the recorded step first: no more tries.
        st, ok = self.tries([late, early], 4)
        self.assertEqual((ok, st.best_res["step"], st.log[-1]["trials"]), (True, 4, 1))

    def shrunk(self, outcomes):
        """A shrink of a recorded run of two steps (the op step, a
        verification that failed) whose tries end as OUTCOMES say; the
        rounds after the baseline stubbed."""
        st = stub_state(outcomes)
        verify = {
            "type": "stress",
            "name": "verify",
            "state": "@STATE@",
            "dir": "v",
            "expect": "exit0",
            "argv": ["@STRESS@", "--verification_only=1"],
        }
        st.best = Cand([st.best.steps[0], verify], False, None, 0, ["crashed", "failed"])
        st.dir, st.budget, st.failure = "/nonexistent/f", 600, {"step": 1, "step_name": "verify"}
        st.grown_ops = lambda c: 0
        sh = Shrinker(st)
        sh.refine = lambda: None
        return st, sh.shrink()

    def test_a_baseline_kept_at_an_earlier_step_starts_the_multi_thread_path_from_the_recorded_steps(  # noqa: E501
        self,
    ):
        # Planted bug durable-publishes-insert: its tries lose commits only
        # in the op step, and the cut form has no crash.
        st, (ok, orig, _) = self.shrunk([("lost", ["lost"], 0)] * BASELINE_TRIALS)
        self.assertTrue(ok)
        self.assertEqual((len(st.best.steps), st.log[-1]["failed_at"]), (1, [0] * BASELINE_TRIALS))
        self.assertEqual(st.cut, (orig, 100))
        self.assertEqual(len(st.cut[0].steps), 2)
        # Kept at the recorded step: nothing cut.
        st, (ok, _, _) = self.shrunk([("lost", ["lost"], 1)])
        self.assertTrue(ok)
        self.assertIsNone(st.cut)

    def test_other_steps_keep_the_first_failure(self):
        st = stub_state([("lost", ["lost"], 1), ("lost", ["lost"], 4)])
        self.assertTrue(st.runner.attempt("a change", st.best.copy(), "ops", runs=2, need=1))
        self.assertEqual((st.best_res["step"], st.log[-1]["trials"]), (1, 1))
        self.assertNotIn("failed_at", st.log[-1])


class TestOneThreadLarger(unittest.TestCase):
    def threads_step(self, outcomes, *opts, ops=None):
        """p_threads on a recorded run (OPTS added) kept at 80 ops, capped
        at 90 (K10), its one-thread trials ending as OUTCOMES say, each
        with the stub's 100 ops or OPS[i] (a traced trial writes that many
        trace lines, the first naming its trial); the seed search done
        already."""
        st = stub_state(outcomes)
        d = tempfile.mkdtemp(prefix="test-shrink-larger-")
        self.addCleanup(shutil.rmtree, d, True)
        st.work, stub, counts, n = d, st.runner.run_once, list(ops or []), [0]

        def run_once(cand):
            r = stub(cand)
            r["ops"] = r["ops_all"] = counts.pop(0) if counts else r["ops"]
            if cand.op_traced():
                n[0] += 1
                r["dir"] = os.path.join(d, "t%d" % n[0])
                os.makedirs(os.path.join(r["dir"], "iter"), exist_ok=True)
                with open(os.path.join(r["dir"], "iter", "ops.trace"), "w") as f:
                    f.write(
                        "# stress op trace 1\n"
                        + "".join("%d put %d ops=%d\n" % (i, i, r["ops"]) for i in range(r["ops"]))
                    )
            return r

        st.runner.run_once = run_once
        st.best = changed(st.best, *opts)
        st.best_res, st.cap, st.searched = {"ops": 80, "dir": "/nonexistent"}, 90, True
        st.grown_ops = lambda c: 0
        optpass.p_threads(st)
        return st

    def test_one_thread_that_fails_larger_than_the_recorded_timed_run_is_replayed_from_a_failing_try(  # noqa: E501
        self,
    ):
        # Planted bug page-before-wal: a timed run of one thread does more
        # ops than the two recorded ones did in the time; K10 refuses it.
        # Its three reopens are spread over the time: pinned to a failing
        # try's op count they move and it passes; the try's trace
        # replayed puts them where they came.
        st = self.threads_step([OWN, OWN, OWN], "--reopen=3", ops=[120, 100])
        first, replayed = st.log
        self.assertEqual(
            (first["what"], first["verdict"], first["trials"]),
            ("threads 2 -> 1, traced", "rejected", 2),
        )
        self.assertIn("larger than the recorded run (100 ops; it had 90)", first["why"])
        self.assertEqual(first["larger_ops"], [120, 100])
        self.assertEqual(
            (replayed["verdict"], replayed["trials"], replayed["deterministic"]), ("kept", 1, True)
        )
        self.assertEqual(
            replayed["what"],
            "threads 2 -> 1, traced, the 100 traced ops replayed (--replay_ops) "
            "(a try that failed)",
        )
        self.assertEqual(
            [
                opt_get(st.best.op["argv"], o)
                for o in ("threads", "replay_ops", "ops_per_thread", "duration", "reopen")
            ],
            ["1", "@FOLDER@/ops.trace", None, None, "3"],
        )
        self.assertEqual(len(st.best.trace), 100, "the smaller try's list")

    def test_no_replay_when_one_thread_was_rejected_for_another_reason(self):
        st = self.threads_step([None, None])
        self.assertEqual([e["what"] for e in st.log], ["threads 2 -> 1, traced"])
        self.assertIsNone(st.larger_trace)

    def test_a_kept_timed_one_thread_run_is_replayed_by_the_pin_step(self):
        # The thread step traced it: p_pin replays what it did (its
        # reopens where they came), not its op count pinned.
        st = self.threads_step([OWN, OWN, OWN], "--reopen=3", ops=[60, 70, 70])
        self.assertEqual(st.log[0]["verdict"], "kept")
        optpass.p_pin(st)
        self.assertEqual(st.log[-1]["what"], "the 60 traced ops replayed (--replay_ops)")
        self.assertEqual(
            [opt_get(st.best.op["argv"], o) for o in ("threads", "replay_ops", "ops_per_thread")],
            ["1", "@FOLDER@/ops.trace", None],
        )


class TestHang(unittest.TestCase):
    def test_a_change_that_hangs_ends_its_trials_and_is_not_tried_again(self):
        # Planted bug page-before-wal: sync_mode set to its default hangs
        # in two trials and again in a later round, about 123 s each.
        hang = ("hang", ["hang"])
        st = stub_state([hang, OWN, OWN, OWN])
        self.assertFalse(
            st.runner.attempt(
                "sync_mode off -> commit", changed(st.best, "--sync_mode=commit"), "options"
            )
        )
        self.assertEqual((st.log[-1]["trials"], st.aside), (1, ["hang"]))
        # another run (a later round's), the same change described
        c = changed(st.best, "--max_key=100", "--sync_mode=commit")
        self.assertFalse(st.runner.attempt("sync_mode off -> commit", c, "options"))
        self.assertEqual(len(st.log), 1, "not tried again")
        self.assertTrue(
            st.runner.attempt("another change", changed(st.best, "--max_key=100"), "options"),
            "other changes still are",
        )

    def test_a_trial_too_slow_for_its_time_ends_the_change_too_and_is_kept_aside_as_nothing(self):
        # Not a hang (the watchdog saw progress): an error, never a new
        # failure folder, but it costs the same time a trial.
        slow = ("error", ["error"])
        st = stub_state([slow, OWN, OWN, OWN])
        run = st.runner.run_once

        def run_once(c):
            r = run(c)
            if r["kind"] == "error":
                r["failure"].update(
                    out_of_time=True, message="stopped after 122 s: ... (slow, not a hang)"
                )
            return r

        st.runner.run_once = run_once
        self.assertFalse(
            st.runner.attempt(
                "sync_mode off -> commit", changed(st.best, "--sync_mode=commit"), "options"
            )
        )
        self.assertEqual((st.log[-1]["trials"], st.aside), (1, []))
        self.assertIn("slow", st.log[-1]["why"])
        self.assertFalse(
            st.runner.attempt(
                "sync_mode off -> commit",
                changed(st.best, "--max_key=100", "--sync_mode=commit"),
                "options",
            )
        )
        self.assertEqual(len(st.log), 1, "not tried again")

    def test_a_hang_is_judged_as_ever_when_the_failure_is_a_hang(self):
        st = stub_state([("hang", ["hang"])] * 3, kind="hang")
        self.assertTrue(st.runner.attempt("a change", changed(st.best, "--max_key=100"), "options"))
        self.assertEqual(st.hung, ())


class TestReproStep(unittest.TestCase):
    def test_the_same_failure_sooner_counts_only_at_a_step_the_record_shows_killed(self):
        steps = [
            {"result": {"outcome": o}} for o in ("crashed", "passed", "crashed", "passed", "failed")
        ]
        self.assertTrue(killed_before_judging(steps, 2, 4))
        self.assertTrue(killed_before_judging(steps, 0, 4))
        self.assertFalse(
            killed_before_judging(steps, 1, 4)
        )  # judged then and passed: another failure
        self.assertFalse(killed_before_judging(steps, 4, 4))
        self.assertFalse(killed_before_judging(steps, 2, 1))  # after the recorded step


class TestFailingKey(unittest.TestCase):
    SUSPECT = (
        "stress: SUSPECT (a block a misdirected write missed reads old; the verdict below decides) "
        "lost (after reopening a failed handle): key k000000000001408 (1408), thread 1, op 2:1504\n"
    )
    MEASURED = (
        "stress: MEASURED (undetectable by design in this measuring run, not a failure) lost "
        "(after reopen): key k000000000000007 (7), thread 0, op 1:9\n"
    )

    def test_a_suspect_of_the_kind_names_the_key_when_no_failure_line_does(self):
        # Planted bug writeback-error-cleans: a run can fail as lost on this
        # line alone, and without it the focus pass has no key.
        self.assertEqual(failing_key(self.MEASURED + self.SUSPECT, "lost"), "1408")

    def test_a_failure_line_comes_first_and_other_lines_name_no_key(self):
        failure = (
            "stress: FAILURE lost (after reopen): key k000000000000005 (5), thread 0, op 1:3\n"
        )
        self.assertEqual(failing_key(self.SUSPECT + failure, "lost"), "5")
        self.assertIsNone(failing_key(self.SUSPECT, "wrong_value"), "a suspect of another kind")
        self.assertIsNone(failing_key(self.MEASURED, "lost"), "a measured symptom is no failure")


class TestLastStepPassing(unittest.TestCase):
    # A workload recorded as crashed whose later steps a kept failure cut
    # (K1) is the last step: a trial where it passes has passed, not
    # diverged; with a step after it planned on the crash, it diverged.
    def trial(self, nsteps):
        st = state_of()
        d = tempfile.mkdtemp(prefix="test-shrink-last-")
        self.addCleanup(shutil.rmtree, d, True)
        os.makedirs(os.path.join(d, "start"))
        st.ntrial, st.work, st.ram, st.bin, st.hang, st.made = 0, d, None, {}, 60, {}
        st.left = lambda: 100
        st.start = os.path.join(d, "start")
        steps = [
            {
                "type": "stress",
                "name": n,
                "state": "@STATE@",
                "argv": ["@STRESS@"],
                "kill_after": 1.0,
            }
            for n in ("workload", "verify")
        ][:nsteps]
        cand = Cand(steps, False, None, 0, want=["crashed", "failed"][:nsteps])
        with mock.patch("crashtest.trials.Executor") as ex:
            ex.return_value.run.return_value = {
                "outcome": "passed",
                "failure": None,
                "report": None,
            }
            return st.runner.run_once(cand)

    def test_a_last_step_that_passes_passed(self):
        self.assertEqual((self.trial(1)["diverged"], self.trial(1)["kind"]), (None, None))
        self.assertEqual(self.trial(2)["diverged"], "step 0 (workload) passed instead of crashed")


class TestShrunkFolderOfAMatchByKeys(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-shrink-keys-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def written(self, st, r):
        st.dir, st.start = self.d, os.path.join(self.d, "start")
        os.makedirs(st.start, exist_ok=True)
        for name in ("stress", "powerloss"):
            with open(os.path.join(self.d, name), "w") as f:
                f.write("#!/bin/sh\n")
        st.bin = {
            "@STRESS@": os.path.join(self.d, "stress"),
            "@POWERLOSS@": os.path.join(self.d, "powerloss"),
        }
        st.meta, st.multi, st.log = {"id": "r0-i1-5", "steps": []}, None, []
        st.runner.repro_tries = lambda: 8
        dest = os.path.join(self.d, "shrunk")
        st.runner.write_folder(dest, st.best, r)
        with open(os.path.join(dest, "meta.json")) as f:
            return json.load(f)["failure"]

    def test_the_folder_keeps_the_kind_and_says_what_the_judge_named_it(self):
        st = stub_state([], match="keys")
        r = {
            "kind": "wrong_value",
            "failure": {"kind": "wrong_value", "keys": BESIDE[1], "message": "m", "step": 0},
            "step": 0,
            "results": {},
        }
        f = self.written(st, r)
        self.assertEqual(
            (f["kind"], f["judged_as"], f["match"], f["keys"]),
            ("lost", "wrong_value", "keys", BESIDE[1]),
        )
        # A trial that failed with the kind itself is written as it was.
        r = {
            "kind": "lost",
            "failure": {"kind": "lost", "keys": ["lost"], "message": "m", "step": 0},
            "step": 0,
            "results": {},
        }
        shutil.rmtree(os.path.join(self.d, "shrunk"))
        f = self.written(st, r)
        self.assertEqual((f["kind"], f.get("judged_as"), f.get("match")), ("lost", None, None))

    def test_repro_of_such_a_folder_wants_the_kind_among_the_replays_keys(self):
        # repro's test: shows_kind(replayed failure, folder's kind, its match)
        for got, match, want in (
            ({"kind": "wrong_value", "keys": BESIDE[1]}, "keys", True),
            ({"kind": "wrong_value", "keys": ALONE[1]}, "keys", False),
            ({"kind": "lost", "keys": ["lost"]}, "keys", True),
            ({"kind": "wrong_value", "keys": BESIDE[1]}, "kind", False),
            ({"kind": "error", "keys": ["lost"]}, "keys", False),
            (None, "keys", False),
        ):
            self.assertEqual(shows_kind(got, "lost", match), want, (got, match))


class TestTable(unittest.TestCase):
    def test_the_table_says_the_kind_was_among_another_kinds_keys(self):
        doc = {
            "kind": "lost",
            "elapsed_s": 41.2,
            "match_why": "why",
            "original": {"threads": 2, "ops": 10311, "fault_classes": [], "steps": 2},
            "shrunk": {
                "threads": 1,
                "ops": 10,
                "fault_classes": [],
                "steps": 2,
                "repro_seconds": [0.6],
                "repro_reproduced": "3 of 3",
                "path": "x",
                "judged_as": "wrong_value",
            },
        }
        self.assertIn(
            "| `a-bug` | lost (among the keys of a wrong_value) | 2 -> 1 |",
            shrink_table([("a-bug", shrink_summary(doc))]),
        )
        doc["shrunk"]["judged_as"] = "lost"
        self.assertIn("| `a-bug` | lost | 2 -> 1 |", shrink_table([("a-bug", shrink_summary(doc))]))


if __name__ == "__main__":
    unittest.main()
