"""Phases of the workload (stress --phase_ops; stress/workload.c): every N
ops of a worker the run's mix is narrowed to a phase of its own (some op
kinds off, checkpoints, snapshots and vacuums off, as set or ten times as
frequent, keys from the whole space or its first eighth), drawn from the
seed and the phase's number alone: a traced run replays op for op, a
kind the options leave out never appears, and without the option the run
is the one it would be without phases."""

import os
import re
import sys
import unittest
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.stressrun import StressDir, stress  # noqa: E402

MAX_KEY = 800
PHASE = 100
BASE = (
    "--threads=1",
    "--max_key=%d" % MAX_KEY,
    "--page_size=4096",
    "--cache_size=64K",
    "--readpercent=30",
    "--writepercent=30",
    "--delpercent=10",
    "--iterpercent=10",
    "--checkpoint_one_in=60",
    "--vacuum_one_in=80",
)


def phases_of(trace):
    """Phase number -> Counter of op names, and -> the largest key."""
    kinds, top = {}, {}
    with open(trace) as f:
        for line in f:
            t = line.split()
            if not t or not t[0].isdigit():
                continue
            n = int(t[0]) // PHASE
            kinds.setdefault(n, Counter())[t[1]] += 1
            if t[2] != "-":
                top[n] = max(top.get(n, 0), int(t[2]))
    return kinds, top


class TestPhases(StressDir):
    def run_stress(self, name, *args):
        db = os.path.join(self.d, name)
        rc, out, err = stress("--db=" + db, "--destroy_db_initially", *(BASE + args))
        self.assertEqual(rc, 0, err)
        return re.search(r"trace_hash=(\w+)", out + err).group(1)

    def test_phases_narrow_the_mix_and_the_keys(self):
        trace = os.path.join(self.d, "trace")
        self.run_stress(
            "db", "--ops_per_thread=3000", "--phase_ops=%d" % PHASE, "--trace_ops=" + trace
        )
        kinds, top = phases_of(trace)
        whole = set().union(*kinds.values())
        for k in ("get", "put", "delete", "scan", "batch", "checkpoint", "vacuum"):
            self.assertIn(k, whole)
        self.assertNotIn("snapshot", whole, "a feature the options leave off stays off")
        full = [n for n in kinds if n < max(kinds)]  # whole phases only
        narrow = [n for n in full if not {"get", "put", "delete", "scan", "batch"} <= set(kinds[n])]
        self.assertGreater(len(narrow), len(full) // 3, "most phases run fewer kinds than the run")
        hot = [n for n in full if top.get(n, MAX_KEY) < MAX_KEY // 8]
        self.assertTrue(
            hot and len(hot) < len(full), "some phases, not all, keep to the first eighth"
        )
        busy = max(kinds[n]["checkpoint"] for n in full)
        self.assertGreaterEqual(busy, 4, "some phase checkpoints ten times as often (1 in 6)")

    def test_a_traced_run_with_phases_replays_op_for_op(self):
        trace = os.path.join(self.d, "trace")
        args = ("--phase_ops=50", "--acquire_snapshot_one_in=40")
        h1 = self.run_stress("a", "--ops_per_thread=1500", "--trace_ops=" + trace, *args)
        h2 = self.run_stress("b", "--replay_ops=" + trace, *args)
        self.assertEqual(h1, h2)

    def test_without_phases_the_run_is_the_one_mix(self):
        h0 = self.run_stress("a", "--ops_per_thread=1500")
        h1 = self.run_stress("b", "--ops_per_thread=1500", "--phase_ops=0")
        h2 = self.run_stress("c", "--ops_per_thread=1500", "--phase_ops=%d" % PHASE)
        self.assertEqual(h0, h1)
        self.assertNotEqual(h0, h2)


if __name__ == "__main__":
    unittest.main()
