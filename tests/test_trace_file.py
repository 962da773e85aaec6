"""The op trace file (stress --trace_ops, stress/trace.c): written through a
shared mapping of the file, grown ahead of its lines, so tracing does not
slow the run it records, and what a killed process stored stays in the
page cache.

- a process that ends leaves its lines alone, however many (the file
  grew past its first step);
- a process killed after its last op (--crash_at_end) leaves every op it
  did, then zero bytes, which a reader ignores, and the raw file replays
  (--replay_ops) as the same ops."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import trace_ops_of  # noqa: E402
from tests.stressrun import OneThreadDb, stress  # noqa: E402


class TestTraceFile(OneThreadDb):
    def run_traced(self, ops, *args):
        path = os.path.join(self.d, "ops.trace")
        rc, out, err = stress(
            "--db=%s/db" % self.d,
            "--destroy_db_initially",
            "--threads=1",
            "--max_key=500",
            "--ops_per_thread=%d" % ops,
            "--trace_ops=" + path,
            "--report=%s/report.json" % self.d,
            *args
        )
        with open(path, "rb") as f:
            return rc, err, f.read(), path

    def test_a_process_that_ends_leaves_its_lines_alone_however_many(self):
        rc, err, raw, path = self.run_traced(20000)
        self.assertEqual(rc, 0, err)
        self.assertGreater(len(raw), 1 << 20, "past the file's first step of 1 MiB")
        self.assertNotIn(b"\0", raw)
        self.assertTrue(raw.endswith(b"\n"))
        self.assertEqual(len(trace_ops_of(path)), 20000)

    def test_a_killed_process_leaves_every_op_then_zero_bytes_and_the_file_replays(self):
        rc, err, raw, path = self.run_traced(300, "--crash_at_end=1")
        self.assertEqual(rc, -signal.SIGKILL, err)
        self.assertIn(b"\0", raw, "grown ahead of its lines, not cut: the process was killed")
        lines = trace_ops_of(path)
        self.assertEqual([int(line.split()[0]) for line in lines], list(range(300)))
        again = os.path.join(self.d, "again.trace")
        rc, out, err = stress(
            "--db=%s/db2" % self.d,
            "--destroy_db_initially",
            "--threads=1",
            "--max_key=500",
            "--replay_ops=" + path,
            "--trace_ops=" + again,
        )
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(
            [line.split("|")[0] for line in trace_ops_of(again)],
            [line.split("|")[0] for line in lines],
        )


if __name__ == "__main__":
    unittest.main()
