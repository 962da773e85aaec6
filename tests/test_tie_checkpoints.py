"""Tests of checkpoints the log's volume started, made ops of their own
(shrink K17, tracepass.p_tie_checkpoints).

With checkpoint_wal_bytes below stress's default, a write starts a
checkpoint whenever the log since the last one passes it: remove any op
before it and the checkpoint comes at another op.  A traced op notes the
checkpoints its write started (ckpt=N); the shrink pass inserts that many
checkpoint ops after it and puts checkpoint_wal_bytes back to the
default, so removals leave the checkpoints where they were.

- stress notes ckpt=N on the writes that started checkpoints, and the
  tied replay runs exactly those checkpoints as ops (none by volume);
- the pass inserts them after their op (faults off, the op's seed),
  moves a pinned kill of a write without a note into such a checkpoint
  first (then tries without), and does nothing when checkpoint_wal_bytes
  is at the default already.
"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand  # noqa: E402
from crashtest import tracepass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402
from tests.stressrun import OneThreadDb, stress, trace_lines as ops_of  # noqa: E402

WAL_POINT = "kill/wal/after_write_before_sync"


def stub_state(lines, volume="64K"):
    d = tempfile.mkdtemp(prefix="test-tie-")
    os.makedirs(os.path.join(d, "iter"))
    with open(os.path.join(d, "iter", "ops.trace"), "w") as f:
        f.write("\n".join(lines) + "\n")
    st = state_of()
    argv = [
        "@STRESS@",
        "--threads=1",
        "--checkpoint_wal_bytes=" + volume,
        "--replay_ops=@FOLDER@/ops.trace",
    ]
    st.best = Cand(
        [
            {"type": "stress", "name": "workload", "argv": argv, "expect": "kill_point"},
            {
                "type": "stress",
                "name": "verify",
                "argv": ["@STRESS@", "--checkpoint_wal_bytes=" + volume],
            },
        ],
        True,
        list(lines),
        0,
    )
    st.best_res = {"dir": d}
    st.defaults = {"checkpoint_wal_bytes": "64M"}
    st.left = lambda: 100
    st.runner.attempt = lambda what, cand, phase: st.runner.attempts.append((what, cand)) and False
    return st, d


class TestVolumeCheckpointsInStress(OneThreadDb):
    def test_the_writes_that_start_checkpoints_say_so_and_the_tied_replay_runs_them_as_ops(self):
        t1, t2, t3 = (os.path.join(self.d, n) for n in ("a.trace", "b.trace", "c.trace"))
        common = ["--db=%s/db" % self.d, "--destroy_db_initially", "--threads=1", "--max_key=500"]
        rc, out, err = stress(
            *common,
            "--ops_per_thread=1500",
            "--checkpoint_wal_bytes=64K",
            "--checkpoint_one_in=0",
            "--trace_ops=" + t1
        )
        self.assertEqual(rc, 0, out + err)
        lines = ops_of(t1)
        noted = [line for line in lines if " ckpt=" in line]
        self.assertGreater(len(noted), 3, "64K of log in 1,500 ops starts several checkpoints")
        self.assertTrue(
            all(line.split()[1] in ("put", "delete", "batch") for line in noted), noted[:3]
        )
        st, d = stub_state(lines)
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        tracepass.p_tie_checkpoints(st)
        ((what, c),) = st.runner.attempts
        with open(t2, "w") as f:
            f.write("\n".join(c.trace) + "\n")
        self.assertIn("checkpoint_wal_bytes 65536 -> 67108864", what)
        self.assertEqual(sum(1 for line in c.trace if line.split()[1] == "checkpoint"), len(noted))
        rc, out, err = stress(
            *common, "--replay_ops=" + t2, "--checkpoint_wal_bytes=64M", "--trace_ops=" + t3
        )
        self.assertEqual(rc, 0, out + err)
        got = ops_of(t3)
        self.assertEqual(len(got), len(c.trace))
        self.assertFalse(
            [line for line in got if " ckpt=" in line], "no checkpoint by volume is left"
        )
        self.assertTrue(
            all(
                line.partition("| ")[2].startswith("ok ")
                for line in got
                if line.split()[1] == "checkpoint"
            )
        )


class TestTiePass(unittest.TestCase):
    def run_pass(self, lines, volume="64K"):
        st, d = stub_state(lines, volume)
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        tracepass.p_tie_checkpoints(st)
        return st.runner.attempts

    def test_checkpoints_go_right_after_the_write_that_started_them(self):
        lines = [
            "0 put 3 00000000000000aa on | 3=v1 ok op=1:1 inj=0",
            "1 batch - 00000000000000bb on | 4=v2 ok 5=del ok ckpt=2 op=1:2 inj=0",
            "2 get 3 00000000000000cc on | 3=v1 ok op=1:3 inj=0",
        ]
        ((what, c),) = self.run_pass(lines)
        self.assertEqual(
            what,
            "2 checkpoints the log's volume started made ops of their own, "
            "checkpoint_wal_bytes 65536 -> 67108864",
        )
        self.assertEqual(
            [" ".join(line.split()[:5]) for line in c.trace],
            [
                "0 put 3 00000000000000aa on",
                "1 batch - 00000000000000bb on",
                "1 checkpoint - 00000000000000bb off",
                "1 checkpoint - 00000000000000bb off",
                "2 get 3 00000000000000cc on",
            ],
        )
        self.assertEqual(
            [a for s in c.stress_steps() for a in s["argv"] if "checkpoint_wal_bytes" in a],
            ["--checkpoint_wal_bytes=67108864"] * 2,
            "every step's, as the options pass sets it",
        )

    def test_a_pinned_kill_in_a_write_moves_into_a_checkpoint_first_then_stays(self):
        lines = [
            "0 put 3 00000000000000aa on | 3=v1 ok ckpt=1 op=1:1 inj=0",
            "1 put 4 00000000000000bb kill:%s:3 | killed=%s:3" % (WAL_POINT, WAL_POINT),
        ]
        tried = self.run_pass(lines)
        self.assertEqual(len(tried), 2)
        first, second = (c.trace for _, c in tried)
        self.assertIn("(the kill in the last)", tried[0][0])
        self.assertEqual(
            [" ".join(line.split()[:5]) for line in first[2:]],
            [
                "1 put 4 00000000000000bb on",
                "1 checkpoint - 00000000000000bb kill:%s:3" % WAL_POINT,
            ],
        )
        self.assertEqual(
            second[-1], lines[-1], "then the kill where it fired, the other checkpoint tied"
        )
        self.assertEqual(len(second), 3)

    def test_nothing_happens_at_the_default_volume_or_without_notes(self):
        lines = ["0 put 3 00000000000000aa on | 3=v1 ok ckpt=1 op=1:1 inj=0"]
        self.assertEqual(self.run_pass(lines, volume="64M"), [])
        self.assertEqual(self.run_pass(["0 put 3 00000000000000aa on | 3=v1 ok op=1:1 inj=0"]), [])


if __name__ == "__main__":
    unittest.main()
