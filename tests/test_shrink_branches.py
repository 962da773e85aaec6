"""The power-loss variants a failing step does not stand on are dropped
(crashtest/steppass.py p_branches and branch_of, shrink.py K27): a run
whose power-loss step made two variants and whose second variant's
verification failed runs without the first variant's copy and the
restart on it, the op step and the variant's power-loss step still
named right; a run that fails on the main state, or whose kept steps
read another variant's copy, is left as it is.

Planted bug fpi-skips-page-at-redo-lsn reaches this case: variant 1
fails, and variant 0's restart killed on a timer counts its ops in every
trial's size (one thread's run refused as larger than the recorded one,
2,816 ops to 2,689) and ends another way in 94 one-thread seeds
(diverged).

The trials are stubs (no stress runs): the candidates are what is tested."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand  # noqa: E402
from crashtest import steppass  # noqa: E402
from crashtest.shrink import Shrinker  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402
from crashtest.steppass import branch_of  # noqa: E402


def stress(name, state, *argv, **kw):
    return dict(
        {
            "type": "stress",
            "name": name,
            "state": state,
            "dir": "@ITER@/steps/" + name,
            "expect": "exit0",
            "kill_after": None,
            "argv": ["@STRESS@", "--db=%s/db" % state] + list(argv),
        },
        **kw
    )


def variant(k, step=2, state="@STATE@"):
    return {
        "type": "variant",
        "name": "variant-%d" % k,
        "k": k,
        "powerloss_step": step,
        "from_db": "@ITER@/pl/db.%d" % k,
        "from_state": state,
        "to": "@ITER@/v%d" % k,
    }


def run(fail_on=1):
    """create, a timed workload (the op step), power loss with two variants,
    a timed restart on variant 0, a verification of variant FAIL_ON (the
    failing step, last)."""
    steps = [
        stress(
            "create", "@STATE@", "--destroy_db_initially=1", "--threads=1", "--ops_per_thread=200"
        ),
        stress(
            "workload", "@STATE@", "--threads=4", "--duration=60", expect="sigkill", kill_after=0.2
        ),
        {
            "type": "powerloss",
            "name": "powerloss",
            "ledger": "@STATE@/run/ledger",
            "dir": "@ITER@/pl",
            "argv": [
                "@POWERLOSS@",
                "@STATE@/db",
                "--variants",
                "2",
                "--seed",
                "7",
                "--mode",
                "rollback",
            ],
        },
        variant(0),
        stress(
            "recover-v0",
            "@ITER@/v0",
            "--threads=4",
            "--duration=60",
            expect="sigkill_or_exit0",
            kill_after=0.25,
        ),
    ]
    if fail_on == 1:
        steps += [variant(1), stress("verify-v1", "@ITER@/v1", "--verification_only=1")]
    else:
        steps += [stress("verify-v0", "@ITER@/v0", "--verification_only=1")]
    return Cand(
        steps,
        False,
        None,
        1,
        ["passed", "crashed", None, None, "passed", None, "failed"][: len(steps)],
    )


class TestBranchOf(unittest.TestCase):
    def test_the_other_variant_and_the_restart_on_its_copy_go(self):
        c, names = branch_of(run())
        self.assertEqual(names, ["variant-0", "recover-v0"])
        self.assertEqual(
            [s["name"] for s in c.steps],
            ["create", "workload", "powerloss", "variant-1", "verify-v1"],
        )
        self.assertEqual(c.w, 1)
        self.assertEqual(c.op["name"], "workload")
        self.assertEqual(c.steps[3]["powerloss_step"], 2)
        self.assertEqual(c.want, ["passed", "crashed", None, None, "failed"])

    def test_the_power_loss_step_keeps_its_variant_count_so_the_failing_copy_is_the_same(self):
        c, _ = branch_of(run())
        self.assertIn("2", c.steps[2]["argv"])
        self.assertEqual(c.steps[3]["from_db"], "@ITER@/pl/db.1")

    def test_the_recorded_candidate_is_left_unchanged(self):
        r = run()
        branch_of(r)
        self.assertEqual(len(r.steps), 7)

    def test_a_failure_on_the_first_variant_has_nothing_to_drop(self):
        self.assertEqual(branch_of(run(fail_on=0)), (None, []))

    def test_a_failure_on_the_main_state_has_nothing_to_drop(self):
        r = run()
        r.steps[-1] = stress("verify", "@STATE@", "--verification_only=1")
        self.assertEqual(branch_of(r), (None, []))

    def test_a_kept_step_that_reads_the_other_copy_keeps_it(self):
        r = run()
        r.steps[5]["from_state"] = "@ITER@/v0"
        self.assertEqual(branch_of(r), (None, []))

    def test_an_op_step_on_the_other_copy_keeps_it(self):
        r = run()
        r.w = 4
        self.assertEqual(branch_of(r), (None, []))

    def test_a_copy_whose_name_extends_another_is_not_taken_for_it(self):
        r = run()
        r.steps[3]["to"] = "@ITER@/v1x"
        r.steps[4]["state"] = "@ITER@/v1x"
        c, names = branch_of(r)
        self.assertEqual(names, ["variant-0", "recover-v0"])


class TestBranchesPass(unittest.TestCase):
    def stub_state(self, kept):
        st = state_of()
        st.left = lambda: 100
        st.best, st.log = run(), []

        def attempt(what, c, phase):
            st.log.append({"what": what, "phase": phase, "verdict": "kept" if kept else "rejected"})
            if kept:
                st.best = c
            return kept

        st.runner.attempt = attempt
        return st

    def test_the_pass_keeps_the_run_without_the_other_variant_when_it_fails_the_same_way(self):
        st = self.stub_state(True)
        steppass.p_branches(st)
        self.assertEqual(len(st.log), 1)
        self.assertEqual(st.log[0]["phase"], "branches")
        self.assertIn("variant-0, recover-v0", st.log[0]["what"])
        self.assertEqual(len(st.best.steps), 5)
        steppass.p_branches(st)
        self.assertEqual(len(st.log), 1)  # nothing left to drop: no trial

    def test_the_pass_leaves_the_run_when_it_does_not_fail_without_it(self):
        st = self.stub_state(False)
        steppass.p_branches(st)
        self.assertEqual(len(st.best.steps), 7)

    def test_the_pass_comes_first_in_each_round_and_again_once_the_thread_steps_have_run(self):
        names = [getattr(f, "__name__", "") for f in Shrinker(state_of()).round_steps()]
        self.assertEqual(names[0], "p_branches")
        again = [i for i, n in enumerate(names) if n == "p_branches"][1:]
        self.assertEqual(len(again), 1)
        for before in ("p_threads", "p_multi", "p_pin", "p_trace", "p_crash_end"):
            self.assertLess(names.index(before), again[0], before)
        self.assertLess(again[0], names.index("p_ops"), "before the op count and delta debugging")


if __name__ == "__main__":
    unittest.main()
