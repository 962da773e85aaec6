"""Tests of a kill pinned in an op trace (kill:POINT:N; docs/formats.md, Op
trace) and of the shrink pass that pins it (K16, tracepass.p_pin_kill).

A kill point drawn 1 in N hits counts hits over the whole run: remove one
op before the kill and it fires in another op, or never.  A traced op a
kill ended says where (killed=POINT:N, written right before the
SIGKILL); replayed as kill:POINT:N the kill lands in that op, at that
arrival, whatever ops come before it, and nowhere else.

- a drawn kill's op, pinned, with half the ops before it removed and no
  --kill_random_test, is killed at the same point and arrival (ledger
  and trace say so);
- the Nth arrival is the one that kills (a batch reaches
  kill/commit/between_ops once between each two of its ops);
- a pin whose op never reaches its point kills nothing: the run passes;
- bad pins are usage errors that change nothing;
- the shrink pass pins the killed op's line and drops the drawn kills,
  and only for an op step a kill point ended; the passes after it keep
  the pinned line (the focus on the failing key, faults off).
"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand, set_faults, trace_kill_pin, trace_killed  # noqa: E402
from crashtest.executor import ledger_lines_since  # noqa: E402
from crashtest import tracepass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402
from tests.stressrun import need_stress, stress, trace_lines as ops_of  # noqa: E402

WAL_POINT = "kill/wal/after_write_before_sync"


def head(line):
    return line.partition("|")[0].strip()


class TestPinnedKillInStress(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-kill-pin-")
        self.run = os.path.join(self.d, "run")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def run_db(self, *args):
        return stress(
            "--db=%s/db" % self.d,
            "--expected_values_dir=%s/exp" % self.d,
            "--run_dir=" + self.run,
            "--destroy_db_initially",
            "--threads=1",
            "--max_key=200",
            *args
        )

    def kills(self):
        return [
            j
            for j in ledger_lines_since(os.path.join(self.run, "ledger"))
            if j.get("class") == "kill"
        ]

    def traced_kill(self, point, one_in, ops=3000):
        """A traced run a drawn kill at POINT ends: its lines, the killed
        op's (point, nth)."""
        t1 = os.path.join(self.d, "a.trace")
        rc, out, err = self.run_db(
            "--ops_per_thread=%d" % ops,
            "--trace_ops=" + t1,
            "--kill_random_test=%d" % one_in,
            "--kill_points=" + point,
        )
        self.assertEqual(rc, -9, out + err)
        lines = ops_of(t1)
        got = trace_killed(lines[-1])
        self.assertIsNotNone(got, lines[-1])
        self.assertEqual(got[0], point)
        self.assertEqual(len(self.kills()), 1)
        return lines, got

    def test_a_pinned_kill_fires_in_its_op_whatever_ops_come_before_it(self):
        lines, (point, nth) = self.traced_kill(WAL_POINT, 400)
        self.assertGreater(
            len(lines), 20, "the kill came too early for ops to be removed before it"
        )
        pinned = set_faults(head(lines[-1]), "kill:%s:%d" % (point, nth))
        kept = [head(line) for line in lines[:-1:2]] + [pinned]  # every other op before it removed
        t2, t3 = os.path.join(self.d, "b.trace"), os.path.join(self.d, "c.trace")
        with open(t2, "w") as f:
            f.write("\n".join(kept) + "\n")
        rc, out, err = self.run_db(
            "--replay_ops=" + t2, "--trace_ops=" + t3
        )  # no --kill_random_test
        self.assertEqual(rc, -9, out + err)
        got = ops_of(t3)
        self.assertEqual(len(got), len(kept), "killed in the pinned op, the last, not before it")
        self.assertEqual(head(got[-1]), pinned)
        self.assertEqual(trace_killed(got[-1]), (point, nth))
        k = self.kills()
        self.assertEqual([j["point"] for j in k], [point])
        # The ledger's op is the pinned op's (its number in the replay).
        self.assertEqual(k[0]["op"] & 0xFFFFFFFF, len(kept))

    def test_the_nth_arrival_of_its_op_is_the_one_that_kills(self):
        # A batch reaches kill/commit/between_ops between each two of its
        # ops: pinned at its second arrival, the note says 2.
        t1, t2, t3 = (os.path.join(self.d, n) for n in ("a.trace", "b.trace", "c.trace"))
        rc, out, err = self.run_db("--ops_per_thread=300", "--trace_ops=" + t1)
        self.assertEqual(rc, 0, out + err)
        batch = next(
            head(line)
            for line in ops_of(t1)
            if line.split()[1] == "batch" and line.count("=v") + line.count("=del") >= 3
        )
        with open(t2, "w") as f:
            f.write(set_faults(batch, "kill:kill/commit/between_ops:2") + "\n")
        rc, out, err = self.run_db("--replay_ops=" + t2, "--trace_ops=" + t3)
        self.assertEqual(rc, -9, out + err)
        self.assertEqual(trace_killed(ops_of(t3)[-1]), ("kill/commit/between_ops", 2))

    def test_a_pin_whose_op_never_reaches_its_point_kills_nothing(self):
        t1 = os.path.join(self.d, "a.trace")
        with open(t1, "w") as f:
            f.write("0 get 5 0000000000000001 kill:%s:1\n1 put 6 0000000000000002 on\n" % WAL_POINT)
        rc, out, err = self.run_db("--replay_ops=" + t1)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.kills(), [])

    def test_bad_pins_are_usage_errors(self):
        bad = os.path.join(self.d, "bad.trace")
        for field in (
            "kill:",
            "kill:nope:1",
            "kill:%s:0" % WAL_POINT,
            "kill:%s" % WAL_POINT,
            "kill:%s:" % WAL_POINT,
            "kill:%s:2x" % WAL_POINT,
            "kill:%s,%s:1" % (WAL_POINT, WAL_POINT),
            "kill:engine/io/read:1",
        ):
            with open(bad, "w") as f:
                f.write("0 put 3 0000000000000001 %s\n" % field)
            rc, out, err = self.run_db("--replay_ops=" + bad)
            self.assertEqual(rc, 2, field + out + err)
            self.assertIn("not an op line", err)
            self.assertFalse(os.path.exists(os.path.join(self.d, "db")), field)


class TestPinKillPass(unittest.TestCase):
    """p_pin_kill on a shrink's state whose trials are recorded, not run."""

    def stub_state(
        self,
        lines,
        expect="kill_point",
        argv=("--threads=1", "--kill_random_test=40", "--kill_points=" + WAL_POINT),
    ):
        d = tempfile.mkdtemp(prefix="test-kill-pin-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        os.makedirs(os.path.join(d, "iter"))
        with open(os.path.join(d, "iter", "ops.trace"), "w") as f:
            f.write("# stress op trace 1\n" + "\n".join(lines) + "\n")
        st = state_of()
        st.best = Cand(
            [
                {
                    "type": "stress",
                    "name": "workload",
                    "argv": ["@STRESS@"] + list(argv),
                    "expect": expect,
                }
            ],
            True,
            [head(line) + " | old" for line in lines],
            0,
        )
        st.best_res = {"dir": d}
        st.runner.attempt = lambda what, cand, phase: st.runner.attempts.append((what, cand, phase))
        return st

    TRACE = [
        "0 put 3 00000000000000aa on | 3=v1 ok op=1:1 inj=0",
        "1 put 4 00000000000000bb on | killed=%s:1" % WAL_POINT,
    ]

    def test_the_killed_op_is_pinned_and_the_drawn_kills_go(self):
        st = self.stub_state(self.TRACE)
        tracepass.p_pin_kill(st)
        self.assertEqual(len(st.runner.attempts), 1)
        what, c, phase = st.runner.attempts[0]
        self.assertEqual(phase, "pin_kill")
        self.assertIn("op 1", what)
        self.assertEqual([line.split()[4] for line in c.trace], ["on", "kill:%s:1" % WAL_POINT])
        self.assertEqual(trace_kill_pin(c.trace[-1]), (WAL_POINT, 1))
        self.assertEqual([a for a in c.op["argv"] if "kill" in a], [])
        self.assertEqual(c.op["expect"], "kill_point")
        self.assertIn(
            "kill",
            c.measures()["fault_classes"],
            "a pinned kill is a kill in the shrunk run's classes",
        )

    def test_nothing_is_pinned_unless_a_kill_point_ended_the_op_step(self):
        for st in (
            self.stub_state(self.TRACE, expect="crash_at_end"),
            self.stub_state(self.TRACE, argv=("--threads=1",)),
            self.stub_state([self.TRACE[0], "1 put 4 00000000000000bb on"]),
        ):
            tracepass.p_pin_kill(st)
            self.assertEqual(st.runner.attempts, [])

    def test_the_passes_after_it_keep_the_pinned_line(self):
        pinned = [
            "0 put 3 00000000000000aa on | 3=v1 ok op=1:1 inj=0",
            "1 put 5 00000000000000cc on | 5=v2 ok op=1:2 inj=0",
            "2 put 4 00000000000000bb kill:%s:1 | killed=%s:1" % (WAL_POINT, WAL_POINT),
        ]
        st = self.stub_state(pinned, argv=("--threads=1", "--read_fault_one_in=9"))
        st.best.trace = list(pinned)
        st.kind = "lost"
        st.best_res["output_tail"] = "stress: FAILURE lost key k3 (3): acknowledged, then gone\n"
        tracepass.p_focus(st)  # key 3's op and the pinned one, though it touches key 4
        self.assertEqual([c.trace for _, c, _ in st.runner.attempts], [[pinned[0], pinned[2]]])
        st.runner.attempts = []
        tracepass.p_faults_off(st)
        self.assertTrue(st.runner.attempts)
        for _, c, _ in st.runner.attempts:
            self.assertEqual(c.trace[-1].split()[4], "kill:%s:1" % WAL_POINT)


if __name__ == "__main__":
    unittest.main()
