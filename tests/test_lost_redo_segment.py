"""The lost-file check's log segment (crashtest/steps.py REDO_SEGMENT,
lost_files): the segment holding a closed database's redo point is named
by a read-only `engine-tool stat` that changes no file, the plan keeps its
concrete name, and the engine refuses the database without it (rule F4
of engine/engine.c), while the same database with a later, unused segment
removed still opens."""

import hashlib
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.steps import REDO_SEGMENT, engine_tool_of, lost_files  # noqa: E402
from tests.stressrun import STRESS, need_stress, stress  # noqa: E402


def digest(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, d)] = hashlib.sha256(fh.read()).hexdigest()
    return out


class TestLostRedoSegment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()
        if not engine_tool_of(STRESS):
            raise unittest.SkipTest("engine-tool missing")

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-lost-redo-segment-")
        self.state = os.path.join(self.d, "state")
        os.makedirs(self.state, exist_ok=True)
        rc, out, err = stress(
            "--db=%s/db" % self.state,
            "--expected_values_dir=%s/exp" % self.state,
            "--run_dir=%s/run" % self.state,
            "--destroy_db_initially",
            "--threads=1",
            "--ops_per_thread=3000",
            "--max_key=500",
            "--wal_segment_size=64K",
            "--checkpoint_one_in=500",
        )
        self.assertEqual(rc, 0, out + err)
        self.env = {"@S@": self.state, "@STRESS@": STRESS}

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def verify(self):
        return stress(
            "--db=%s/db" % self.state,
            "--expected_values_dir=%s/exp" % self.state,
            "--run_dir=%s/run" % self.state,
            "--verification_only=1",
            "--max_key=500",
        )

    def test_the_redo_segment_is_named_without_a_change_and_its_loss_is_refused(self):
        before = digest(self.state)
        got = lost_files([REDO_SEGMENT], "@S@", self.env)
        self.assertEqual(digest(self.state), before, "naming it changed a file")
        self.assertIsNotNone(got)
        (rel,) = got
        self.assertRegex(rel, r"^db/wal/[0-9a-f]{16}$")
        segs = sorted(os.listdir(os.path.join(self.state, "db", "wal")))
        later = [s for s in segs if "db/wal/" + s > rel]
        os.unlink(os.path.join(self.state, rel))
        rc, out, err = self.verify()
        self.assertNotEqual(rc, 0, "opened without the segment of its redo point")
        self.assertIn(os.path.basename(rel), out + err)
        if later:  # a segment past the log's end is no loss
            shutil.rmtree(self.state)
            self.setUp()
            os.unlink(os.path.join(self.state, "db", "wal", later[-1]))
            rc, out, err = self.verify()
            self.assertEqual(rc, 0, out + err)

    def test_the_other_choices_keep_their_names_and_none_when_it_cannot_tell(self):
        self.assertEqual(
            lost_files(["control", "data"], "@S@", self.env), ["db/control", "db/data"]
        )
        shutil.rmtree(os.path.join(self.state, "db", "wal"))
        self.assertIsNone(lost_files([REDO_SEGMENT], "@S@", self.env))


if __name__ == "__main__":
    unittest.main()
