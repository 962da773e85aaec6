"""The shrink's passes that take ops away (crashtest/tracepass.py p_volume,
p_types and p_ddmin; crashtest/freshpass.py p_create; crashtest/shrink.py's
K3):

- a traced run whose checkpoints fire by log volume tries them sooner
  (checkpoint_wal_bytes at 64K ... 512K), so that a failure that needs one
  needs fewer ops;
- a create step that still needs most of its ops is tried in fewer, then
  as batches;
- delta debugging ends with exactly the ops a failure needs, and a later
  pass starts near the chunk size the last one reached;
- every op of a type the failure does not need goes in one trial.

The trials are stubs (no stress runs): the ops each trial keeps are what
is tested."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from crashtest import freshpass, tracepass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402
from crashtest.cand import Cand, opt_get, opt_set  # noqa: E402


class TestOpPasses(unittest.TestCase):
    def test_a_traced_run_whose_checkpoints_fire_by_log_volume_tries_them_sooner(self):
        # p_volume: checkpoint_wal_bytes 1M -> 64K, 128K, 256K, 512K on
        # every stress step, the first that fails kept; nothing without a
        # trace or at stress's default (64M: no checkpoint by volume).
        wl = {
            "type": "stress",
            "name": "workload",
            "state": "@STATE@",
            "dir": "d",
            "expect": "exit0",
            "kill_after": None,
            "argv": ["@STRESS@", "--threads=1", "--checkpoint_wal_bytes=1M", "--seed=5"],
        }
        vf = dict(
            wl,
            name="verify",
            argv=["@STRESS@", "--threads=1", "--checkpoint_wal_bytes=1M", "--verification_only=1"],
        )
        st = state_of()
        st.defaults = {"checkpoint_wal_bytes": "64M"}
        st.left = lambda: 100
        got = []
        st.runner.attempt = lambda what, c, phase, **kw: got.append(c) and False
        st.best = Cand([wl, vf], False, None, 0)
        tracepass.p_volume(st)
        self.assertEqual(got, [], "no trace: the volume is left alone")
        st.best.trace = ["0 put 1 5 on | 1=v1 ok"]
        tracepass.p_volume(st)
        self.assertEqual(
            [[opt_get(s["argv"], "checkpoint_wal_bytes") for s in c.steps] for c in got],
            [[str(v)] * 2 for v in (65536, 131072, 262144, 524288)],
        )
        got.clear()
        st.runner.attempt = lambda what, c, phase, **kw: got.append(c) or True
        tracepass.p_volume(st)
        self.assertEqual(len(got), 1, "the first that fails is kept")
        got.clear()
        st.best = Cand(
            [dict(wl, argv=opt_set(wl["argv"], "checkpoint_wal_bytes", "64M"))], False, None, 0
        )
        st.best.trace = ["0 put 1 5 on | 1=v1 ok"]
        tracepass.p_volume(st)
        self.assertEqual(got, [], "at the default nothing fires by volume")

    def test_a_create_step_that_still_needs_most_of_its_ops_is_tried_as_batches(self):
        # p_create: fewer ops first (200 -> 1, 1/128 ... 7/8), the first that
        # fails kept (here 3/4: 150); then the same counts of what is left
        # as batches only (planted bug checkpoint-skips-data-fsync: 150
        # create ops behind an op step of 10 fail the same way as 10
        # batches).
        create = {
            "type": "stress",
            "name": "create",
            "state": "@STATE@",
            "dir": "c",
            "expect": "exit0",
            "kill_after": None,
            "argv": [
                "@STRESS@",
                "--destroy_db_initially=1",
                "--threads=1",
                "--ops_per_thread=200",
                "--seed=3",
            ],
        }
        wl = {
            "type": "stress",
            "name": "workload",
            "state": "@STATE@",
            "dir": "d",
            "expect": "exit0",
            "kill_after": None,
            "argv": ["@STRESS@", "--threads=1", "--ops_per_thread=10", "--seed=5"],
        }
        st = state_of()
        st.left = lambda: 100
        st.best = Cand([create, wl], False, None, 1)
        tried = []

        def attempt(what, c, phase, **kw):
            a = c.steps[0]["argv"]
            n, batches = int(opt_get(a, "ops_per_thread")), opt_get(a, "writepercent") == "0"
            tried.append((n, batches))
            ok = n >= (9 if batches else 150)
            if ok:
                st.best = c
            return ok

        st.runner.attempt = attempt
        freshpass.p_create(st)
        self.assertEqual(
            tried,
            [
                (1, False),
                (3, False),
                (6, False),
                (12, False),
                (25, False),
                (50, False),
                (100, False),
                (150, False),
                (1, True),
                (2, True),
                (4, True),
                (9, True),
            ],
        )
        a = st.best.steps[0]["argv"]
        self.assertEqual(
            [
                opt_get(a, k)
                for k in (
                    "ops_per_thread",
                    "readpercent",
                    "writepercent",
                    "delpercent",
                    "iterpercent",
                )
            ],
            ["9", "0", "0", "0", "0"],
        )
        self.assertEqual(st.best.steps[1], wl, "the op step is left as it was")
        tried.clear()
        freshpass.p_create(st)
        self.assertEqual(
            tried,
            [(1, True), (2, True), (4, True), (7, True), (8, True)],
            "a create step of batches is tried in fewer ops, not as batches again",
        )

    def test_ddmin_keeps_exactly_the_ops_the_failure_needs(self):
        # A stand-in trial: it fails the same way when ops 3, 17 and 40 are
        # all left (in order); ddmin must end with those three.
        need = ["%d put %d 00 on" % (k, k) for k in (3, 17, 40)]
        st = state_of()
        st.best = Cand(
            [{"type": "stress", "argv": []}],
            True,
            ["%d put %d 00 on" % (k, k) for k in range(60)],
            0,
        )
        st.best_res = None
        st.left = lambda: 1
        trials = []

        def attempt(what, cand, phase):
            trials.append(len(cand.trace))
            if all(line in cand.trace for line in need):
                st.best = cand
                return True
            return False

        st.runner.attempt = attempt
        tracepass.p_ddmin(st)
        self.assertEqual(st.best.trace, need)
        self.assertLess(len(trials), 60 * 3)

    def test_every_op_of_a_type_the_failure_does_not_need_goes_in_one_trial(self):
        # A stand-in trial fails while every put is left and the get of the
        # failing key 7: the 40 other gets, spread among the puts, go in
        # one trial (no chunk of consecutive ops is all gets).
        trace = []
        for k in range(40):
            trace += [
                "%d put %d 00 on | %d=v1 ok" % (2 * k, k, k),
                "%d get %d 00 on | %d ok" % (2 * k + 1, k + 1, k + 1),
            ]
        st = state_of()
        st.kind = "lost"
        st.best = Cand([{"type": "stress", "argv": []}], True, trace, 0)
        st.best_res = {"output_tail": "stress: FAILURE lost (get): key k7 (7), thread 1, op 1:9"}
        tried = []

        def attempt(what, cand, phase):
            tried.append(what)
            puts = [line for line in trace if " put " in line]
            if all(line in cand.trace for line in puts) and any(
                " get 7 " in line for line in cand.trace
            ):
                st.best = cand
                return True
            return False

        st.runner.attempt = attempt
        tracepass.p_types(st)
        self.assertEqual(len(st.best.trace), 41)
        self.assertEqual(
            tried,
            [
                "ops 80 -> 40 (every get removed)",
                "ops 80 -> 41 (every get not touching the failing key 7 removed)",
                "ops 41 -> 1 (every put removed)",
                "ops 41 -> 2 (every put not touching the failing key 7 removed)",
            ],
        )

    def test_a_later_ddmin_pass_starts_near_the_chunk_size_the_last_reached(self):
        st = state_of()
        st.best = Cand(
            [{"type": "stress", "argv": []}],
            True,
            ["%d put %d 00 on" % (k, k) for k in range(64)],
            0,
        )
        st.best_res = None
        st.left = lambda: 1
        sizes = []

        def attempt(what, cand, phase):
            sizes.append(64 - len(cand.trace))
            return False

        st.runner.attempt = attempt
        tracepass.p_ddmin(st)
        self.assertEqual(sizes[:2], [32, 32])
        st.ddmin_size, sizes[:] = 4, []
        tracepass.p_ddmin(st)
        self.assertEqual(sizes[0], 16)  # four times the last size, not 32 again


if __name__ == "__main__":
    unittest.main()
