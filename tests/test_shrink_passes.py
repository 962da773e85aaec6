"""Shrink passes run on their own (crashtest/shrinkstate.py): each is a
function of a hand-built ShrinkState whose runner is a fake that judges
a candidate without running stress, and each returns a PassResult (kept,
best).  Fast: no binary runs.

Also what the other suites of single rules build on: state_of(), a
hand-built state whose runner (FakeRunner) runs no stress, and fake(),
which stands in for a pass a pass calls (a seed search, delta
debugging) while they run."""

import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest import (  # noqa: E402
    freshpass,
    multipass,
    optpass,
    searchpass,
    shrink,
    steppass,
    tracepass,
    trials,
)
from crashtest.cand import Cand, opt_get  # noqa: E402
from crashtest.shrinkstate import PassResult, ShrinkState  # noqa: E402
from crashtest.trials import TrialRunner  # noqa: E402

PASS_MODULES = (trials, steppass, searchpass, tracepass, freshpass, multipass, optpass, shrink)


def pass_named(name):
    """The pass or helper of a state NAME, in the module that defines it
    (the real one while fake() stands in for it)."""
    for m in PASS_MODULES:
        f = getattr(vars(m).get(name), "fake_of", vars(m).get(name))
        if f is not None and getattr(f, "__module__", None) == m.__name__:
            return f
    raise KeyError(name)


def fake(test, name, fn):
    """FN in place of the pass or helper NAME (a function of a state in one
    of PASS_MODULES) wherever a module calls it, while TEST runs.  FN takes
    what NAME takes after the state.  For a pass, a true answer from FN is
    a keep: the state's best becomes a copy of its first argument (the run
    it started from) unless FN set one, and the caller gets the
    PassResult."""
    real = pass_named(name)

    def run(state, *args, **kw):
        if not hasattr(real, "__wrapped__"):
            return fn(*args, **kw)
        before = state.best
        got = fn(*args, **kw)
        if got and state.best is before and args:
            state.best = args[0].copy()
        return PassResult(state.best is not before, state.best)

    run.fake_of = real
    for m in PASS_MODULES:
        now = getattr(m, name, None)
        if now is real or getattr(now, "fake_of", None) is real:
            p = mock.patch.object(m, name, run)
            p.start()
            test.addCleanup(p.stop)


class FakeRunner(TrialRunner):
    """A trial runner that runs no stress: with JUDGE, JUDGE(candidate)
    says whether it fails the same way, every attempt is recorded in
    .attempts (what, candidate, phase), and a keep makes the candidate the
    state's best, as TrialRunner.attempt does.  Without one, a test sets
    its own attempt on it (recording what it wants in .attempts) or its
    own run_once (TrialRunner.attempt then judges those trials); every
    other method is TrialRunner's."""

    def __init__(self, state, judge=None):
        super().__init__(state)
        self.judge, self.attempts = judge, []

    def attempt(self, what, cand, phase, **kw):
        if self.judge is None:
            return super().attempt(what, cand, phase, **kw)
        self.attempts.append((what, cand, phase))
        kept = bool(self.judge(cand))
        self.state.log.append({"what": what, "phase": phase, "verdict": "kept" if kept else "no"})
        if kept:
            self.state.best, self.state.best_res = cand, {"ops": 10, "dir": "/nonexistent"}
        return kept


def state_of(judge=None, **fields):
    """A hand-built ShrinkState: FIELDS set, every other field at its
    default, its runner a FakeRunner of JUDGE bound to it."""
    st = ShrinkState(**fields)
    st.runner = FakeRunner(st, judge)
    return st


def workload(*opts):
    return {
        "type": "stress",
        "name": "workload",
        "state": "@STATE@",
        "dir": "d",
        "expect": "exit0",
        "kill_after": None,
        "argv": ["@STRESS@", "--db=@STATE@/db", "--max_key=64"] + list(opts),
    }


def hand_built(best, judge, **fields):
    """A state of candidate BEST, its runner a FakeRunner of JUDGE, a
    budget that never runs out, FIELDS set on it."""
    return state_of(judge, best=best, budget=1e9, kind="lost", **fields)


class TestPassesOnAHandBuiltState(unittest.TestCase):
    def test_the_op_count_is_halved_while_the_run_still_fails(self):
        # optpass.p_ops: a deterministic run of 1,000 ops that fails with
        # 100 or more: halved to 500, 250, 125, then 62 passes and the
        # search narrows between.
        best = Cand([workload("--threads=1", "--ops_per_thread=1000")], True, None, 0)

        def ops(c):
            return int(opt_get(c.op["argv"], "ops_per_thread"))

        st = hand_built(best, lambda c: ops(c) >= 100)
        got = optpass.p_ops(st)
        self.assertIsInstance(got, PassResult)
        self.assertTrue(got.kept)
        self.assertIs(got.best, st.best)
        self.assertEqual([ops(c) for _, c, _ in st.runner.attempts[:4]], [500, 250, 125, 62])
        self.assertGreaterEqual(ops(st.best), 100)
        self.assertLess(ops(st.best), 125)
        self.assertEqual(ops(best), 1000, "the candidate it started from is not changed")

    def test_a_fault_class_the_failure_does_not_need_is_dropped(self):
        # optpass.p_classes: each fault class dropped on its own; the
        # failure needs the read faults, not the write ones.
        best = Cand(
            [workload("--threads=1", "--read_fault_one_in=50", "--write_fault_one_in=70")],
            True,
            None,
            0,
        )
        st = hand_built(best, lambda c: opt_get(c.op["argv"], "read_fault_one_in") is not None)
        got = optpass.p_classes(st)
        self.assertTrue(got.kept)
        a = st.best.op["argv"]
        self.assertEqual(
            (opt_get(a, "read_fault_one_in"), opt_get(a, "write_fault_one_in")), ("50", None)
        )
        self.assertEqual([p for _, _, p in st.runner.attempts], ["classes", "classes"])

    def test_the_failing_steps_own_timer_goes_and_nothing_is_kept_when_it_must_stay(self):
        # steppass.p_end_kill (K11): the failing recovery's timed SIGKILL.
        verify = dict(
            workload("--verification_only=1"),
            name="verify",
            expect="sigkill_or_exit0",
            kill_after=0.4,
        )
        best = Cand([workload("--threads=1"), verify], False, None, 0, ["crashed", "failed"])
        st = hand_built(best, lambda c: True)
        got = steppass.p_end_kill(st)
        self.assertTrue(got.kept)
        self.assertIsNone(st.best.steps[-1]["kill_after"])
        st = hand_built(best, lambda c: False)
        got = steppass.p_end_kill(st)
        self.assertFalse(got.kept)
        self.assertIs(got.best, best)
        self.assertEqual(len(st.runner.attempts), 1)

    def test_only_the_ops_that_touch_the_failing_key_are_kept(self):
        # tracepass.p_focus: the failing step's output names key 3; the
        # keyless ops (a checkpoint) stay with the ops on key 3.
        trace = [
            "0 put 3 00000000000000aa on | 3=v1 ok",
            "1 put 4 00000000000000bb on | 4=v1 ok",
            "2 checkpoint - 00000000000000cc on | ok",
            "3 get 3 00000000000000dd on | 3=v1 ok",
        ]
        best = Cand([workload("--threads=1", "--replay_ops=@FOLDER@/ops.trace")], True, trace, 0)
        st = hand_built(best, lambda c: True)
        st.best_res = {"output_tail": "stress: FAILURE lost key k3 (3): acknowledged, then gone\n"}
        got = tracepass.p_focus(st)
        self.assertTrue(got.kept)
        self.assertEqual(got.best.trace, [trace[0], trace[2], trace[3]])

    def test_a_state_with_nothing_to_do_runs_no_trial(self):
        # Each pass leaves a run it has nothing for alone: no trial, not kept.
        best = Cand([workload("--threads=1", "--ops_per_thread=100")], True, None, 0)
        for p in (
            steppass.p_branches,
            steppass.p_mid_kill,
            tracepass.p_focus,
            tracepass.p_ddmin,
            freshpass.p_fresh,
            trials.p_hang,
        ):
            st = hand_built(best, lambda c: True)
            got = p(st)
            self.assertEqual((got.kept, st.runner.attempts), (False, []), p.__name__)


if __name__ == "__main__":
    unittest.main()
