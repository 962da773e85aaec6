"""A create step folded into the op step it creates the database for
(crashtest/freshpass.py p_fold_create, shrink.py K26): the create step is
traced (the same run), then one step creates the database with the create
step's creation options and replays its ops (faults off), a reopen where
one process ended and the next opened, and the op step's ops, so that
delta debugging can cut the create step's ops as well.  When the folded
run does not fail the same way, the traced create step is undone.

Unfolded, planted bug fpi-skips-page-at-redo-lsn shrinks to an op step
of 221 ops behind a create step of 200 that no smaller count replaces:
9.1x, short of the measure by the create step's ops.  The steps that
regrow a database as earlier iterations grew it (K15) fold the same way,
each ending in a restart: unfolded, page-before-wal keeps 200 + 6,210
regrowing ops in front of an op step of 13, 1.3x.  Each
restart names the open options of the process after it where they differ
from the op step's, so the folded ops run as they ran.

The trials are stubs (no stress runs): the candidates are what is tested."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand, is_fresh, opt_get  # noqa: E402
from crashtest import freshpass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402

CREATED = [
    "0 put 7 00000000000000a1 on | 7=v1 ok op=1:1 inj=0",
    "1 get 3 00000000000000a2 on | 3=absent ok op=1:2 inj=0",
    "2 batch - 00000000000000a3 on | 4=v2 ok 5=del ok op=1:3 inj=0",
]
GROWN = [
    "0 put 9 00000000000000c1 on | 9=v4 ok op=1:1 inj=0",
    "1 delete 7 00000000000000c2 on | 7=del ok op=1:2 inj=1",
]
OPS = [
    "0 put 7 00000000000000b1 on | 7=v3 ok op=2:1 inj=0",
    "1 checkpoint - 00000000000000b2 on | ok op=2:2 inj=0",
]


def run():
    """A fresh run: a create step of 200 ops, the op step replaying OPS,
    a verify step after it."""
    create = {
        "type": "stress",
        "name": "create",
        "state": "@STATE@",
        "dir": "c",
        "expect": "exit0",
        "kill_after": None,
        "argv": [
            "@STRESS@",
            "--db=@STATE@/db",
            "--max_key=100",
            "--page_size=4096",
            "--value_size_max=64",
            "--destroy_db_initially=1",
            "--threads=1",
            "--ops_per_thread=200",
            "--seed=3",
        ],
    }
    op = {
        "type": "stress",
        "name": "workload",
        "state": "@STATE@",
        "dir": "d",
        "expect": "crash_at_end",
        "kill_after": None,
        "argv": [
            "@STRESS@",
            "--db=@STATE@/db",
            "--max_key=100",
            "--threads=1",
            "--seed=5",
            "--cache_size=1M",
            "--read_fault_one_in=100",
            "--crash_at_end=1",
            "--trace_ops=@ITER@/ops.trace",
            "--replay_ops=@FOLDER@/ops.trace",
        ],
    }
    verify = {
        "type": "stress",
        "name": "verify",
        "state": "@STATE@",
        "dir": "v",
        "expect": "exit0",
        "kill_after": None,
        "argv": ["@STRESS@", "--db=@STATE@/db", "--verification_only=1"],
    }
    return Cand([create, op, verify], True, list(OPS), 1, ["passed", "crashed", "failed"])


def regrown_run():
    """run() with a step that regrows the database (K15) between its create
    step and its op step: its own options and fault rates."""
    c = run()
    grow = {
        "type": "stress",
        "name": "history-0",
        "state": "@STATE@",
        "dir": "h",
        "expect": "exit0",
        "kill_after": None,
        "argv": [
            "@STRESS@",
            "--db=@STATE@/db",
            "--max_key=100",
            "--threads=1",
            "--ops_per_thread=6210",
            "--seed=9",
            "--cache_size=8M",
            "--sync_mode=off",
            "--write_fault_one_in=50",
        ],
    }
    c.splice(1, [grow])
    return c


class TestFoldCreate(unittest.TestCase):
    def stub_state(self, fold_kept, cand=None, created=CREATED):
        """A shrink's state whose trials are judged, not run: the traced steps fail
        the same way (the same run), the create step writing CREATED as its
        trace and a regrowing one GROWN; the folded run (one step before
        its verify) fails the same way when FOLD_KEPT."""
        st = state_of()
        st.left = lambda: 100
        st.best, st.log, st.ddmin_size = cand or run(), [], 8
        d = tempfile.mkdtemp(prefix="test-fold-create-")
        self.addCleanup(shutil.rmtree, d, True)
        st.best_res = {"dir": os.path.join(d, "recorded")}
        os.makedirs(st.best_res["dir"])

        def attempt(what, c, phase):
            t = os.path.join(d, "t%d" % len(st.log))
            os.makedirs(os.path.join(t, "iter"))
            for s, lines in zip(c.steps, (created, GROWN)):
                name = opt_get(s["argv"], "trace_ops")
                if name and name != "@ITER@/ops.trace":
                    with open(os.path.join(t, "iter", os.path.basename(name)), "w") as f:
                        f.write("# stress op trace 1\n" + "".join(line + "\n" for line in lines))
            kept = len(c.steps) > 2 or fold_kept
            st.log.append(
                {
                    "what": what,
                    "phase": phase,
                    "verdict": "kept" if kept else "rejected",
                    "why": "fails the same way" if kept else "passed",
                }
            )
            if kept:
                st.best, st.best_res = c, {"dir": t}
            return kept

        st.runner.attempt = attempt
        return st

    def test_the_create_step_folded_into_the_op_step_is_one_list_that_delta_debugging_cuts(self):
        st = self.stub_state(True)
        freshpass.p_fold_create(st)
        self.assertEqual(
            [(e["phase"], e["verdict"]) for e in st.log], [("fold", "kept"), ("fold", "kept")]
        )
        self.assertEqual(
            st.log[1]["what"],
            "the create step's 3 ops folded into the op step (5 -> 6 ops, one step fewer)",
        )
        b = st.best
        self.assertEqual(
            ([s["name"] for s in b.steps], b.w, b.want),
            (["workload", "verify"], 0, ["crashed", "failed"]),
        )
        self.assertTrue(is_fresh(b))
        a = b.op["argv"]
        self.assertEqual(
            [
                opt_get(a, o)
                for o in (
                    "destroy_db_initially",
                    "page_size",
                    "value_size_max",
                    "cache_size",
                    "read_fault_one_in",
                    "replay_ops",
                )
            ],
            ["1", "4096", "64", "1M", "100", "@FOLDER@/ops.trace"],
        )
        self.assertEqual(
            b.trace[:3],
            [line.replace(" on |", " off |") for line in CREATED],
            "the create step had no faults",
        )
        self.assertEqual(b.trace[3].split()[1:5], ["restart", "-", "0000000000000000", "off"])
        self.assertEqual(b.trace[4:], OPS)
        self.assertEqual(
            st.ddmin_size, 1 << 62, "delta debugging starts again at half the new list"
        )

    def test_the_steps_that_regrow_the_database_fold_too_each_ending_in_a_restart(self):
        st = self.stub_state(True, regrown_run())
        st.defaults = {"cache_size": "64M", "sync_mode": "commit", "checkpoint_wal_bytes": "64M"}
        self.assertEqual(st.best.measures()["regrown"], 1)
        freshpass.p_fold_create(st)
        self.assertEqual(
            [(e["phase"], e["verdict"]) for e in st.log], [("fold", "kept"), ("fold", "kept")]
        )
        self.assertEqual(
            st.log[0]["what"], "the create and 1 regrowing step's ops traced (--trace_ops)"
        )
        self.assertEqual(
            st.log[1]["what"],
            "the create and 1 regrowing step's 5 ops folded into the op step "
            "(7 -> 10 ops, 2 steps fewer)",
        )
        b = st.best
        self.assertEqual(
            ([s["name"] for s in b.steps], b.w, b.want),
            (["workload", "verify"], 0, ["crashed", "failed"]),
        )
        a = b.op["argv"]
        self.assertEqual(
            [
                opt_get(a, o)
                for o in (
                    "destroy_db_initially",
                    "page_size",
                    "cache_size",
                    "write_fault_one_in",
                    "read_fault_one_in",
                )
            ],
            ["1", "4096", "1M", None, "100"],
            "the op step's options, the create step's creation ones",
        )
        # Each process's own open options (stress's defaults where its
        # step names none) on the restart in front of its ops, where they
        # differ from the op step's: the create step's 64M cache, the
        # regrowing step's 8M and its sync_mode, the op step's own last.
        self.assertEqual(
            b.trace[0], "0 restart cache_size=64M 0000000000000000 off | folded: create's start"
        )
        self.assertEqual(b.trace[1:4], [line.replace(" on |", " off |") for line in CREATED])
        self.assertEqual(
            b.trace[4],
            "3 restart cache_size=8M,sync_mode=off 0000000000000000 off | folded: "
            "create's end, history-0's start",
        )
        self.assertEqual(
            b.trace[5:7],
            [line.replace(" on |", " off |") for line in GROWN],
            "the regrowing step's faults were drawn at its own rates: off",
        )
        self.assertEqual(
            b.trace[7],
            "2 restart - 0000000000000000 off | folded: history-0's end, workload's start",
        )
        self.assertEqual(b.trace[8:], OPS)
        self.assertEqual(
            b.measures()["regrown"], 1, "the folded iteration still counts as one redone"
        )
        b.trace = [
            line.split("|")[0] + "| ok" for line in b.trace
        ]  # traced again by a replay (refresh_trace)
        self.assertEqual(b.copy().measures()["regrown"], 1, "whatever the notes say")

    def test_a_create_step_of_one_op_folds_too(self):
        # A create step that p_create cut to one op: its list and the
        # restart after it are two lines, as many as the steps folded, and
        # the fold must not take that count for the steps' own.
        st = self.stub_state(True, created=CREATED[:1])
        freshpass.p_fold_create(st)
        self.assertEqual(
            [(e["phase"], e["verdict"]) for e in st.log], [("fold", "kept"), ("fold", "kept")]
        )
        self.assertEqual(st.best.trace[0], CREATED[0].replace(" on |", " off |"))
        self.assertEqual(len(st.best.trace), 1 + 1 + len(OPS))

    def test_a_regrowing_step_that_cannot_fold_leaves_every_step_where_it_was(self):
        for change in ("timed", "killed", "creates its own database"):
            st = self.stub_state(True, regrown_run())
            a = st.best.steps[1]["argv"]
            a.append(
                {
                    "timed": "--duration=10",
                    "killed": "--kill_random_test=1000",
                    "creates its own database": "--destroy_db_initially=1",
                }[change]
            )
            freshpass.p_fold_create(st)
            self.assertEqual(st.log, [], change)

    def test_a_fold_that_does_not_fail_the_same_way_leaves_the_run_as_it_was(self):
        st = self.stub_state(False)
        freshpass.p_fold_create(st)
        self.assertEqual([e["verdict"] for e in st.log], ["undone", "rejected"])
        self.assertIn("undone: the fold did not fail the same way", st.log[0]["why"])
        self.assertEqual(
            ([s["name"] for s in st.best.steps], st.best.trace),
            (["create", "workload", "verify"], OPS),
        )
        self.assertIsNone(
            opt_get(st.best.steps[0]["argv"], "trace_ops"), "the create step untraced again"
        )
        self.assertEqual(st.ddmin_size, 8)

    def test_no_fold_without_a_create_step_in_front_of_a_replaying_op_step(self):
        for change in ("timed", "untraced", "two threads"):
            st = self.stub_state(True)
            b = st.best
            if change == "timed":
                b.steps[0]["argv"].append("--duration=10")
            elif change == "untraced":
                b.trace = None
            else:
                b.steps[0]["argv"] = [x for x in b.steps[0]["argv"] if x != "--threads=1"] + [
                    "--threads=2"
                ]
            freshpass.p_fold_create(st)
            self.assertEqual(st.log, [], change)


if __name__ == "__main__":
    unittest.main()
