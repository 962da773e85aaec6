"""The I/O classes aimed at one file kind (stress --fault_files; faults.h):
a failed fsync aimed at the data file strikes the data file's fsyncs and
never the log's, aimed at the log it strikes only segments; read errors
aimed away from the data file leave every data read alone (the workload
runs as it runs without faults), though the engine's read point fires
before the fault library sees the file it reads; the swarm aims the
classes in some of its iterations and says so beside a failure; a kind
that is none is a usage error."""

import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.params import SWARM_FILE_KINDS, Config, draw_swarm, swarm_text  # noqa: E402
from crashtest.seeds import iteration_seed  # noqa: E402
from tests.stressrun import need_stress, stress  # noqa: E402
from tests.test_swarm import draw, swarms  # noqa: E402


def ledger_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class TestFaultFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-fault-files-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def run_stress(self, name, *args):
        db = os.path.join(self.d, name)
        rc, out, err = stress(
            "--db=" + db,
            "--destroy_db_initially",
            "--max_key=2000",
            "--page_size=4096",
            "--cache_size=64K",
            "--report=" + db + ".json",
            *args
        )
        with open(db + ".json") as f:
            rep = json.load(f)
        return rc, err, rep, ledger_of(os.path.join(db + ".expected", "ledger"))

    def test_failed_fsyncs_aimed_at_one_kind_strike_only_its_files(self):
        for kind, want in (
            ("data", lambda f: f == "data"),
            ("wal", lambda f: f.startswith("wal/")),
        ):
            rc, err, rep, lines = self.run_stress(
                kind,
                "--threads=2",
                "--ops_per_thread=1500",
                "--checkpoint_one_in=50",
                "--sync_fault_one_in=3",
                "--fault_files=" + kind,
            )
            self.assertEqual(rc, 0, err)
            files = [j.get("file") for j in lines if j["class"] == "sync_error"]
            self.assertGreater(len(files), 10, kind)
            self.assertTrue(all(f and want(f) for f in files), (kind, sorted(set(map(str, files)))))
            self.assertEqual(rep["classes"]["sync_error"]["injected"], len(files))

    def test_read_errors_aimed_away_from_the_data_file_leave_its_reads_alone(self):
        common = ["--threads=1", "--ops_per_thread=2000", "--read_fault_one_in=2"]
        rc, err, rep, lines = self.run_stress("all", *common)
        self.assertEqual(rc, 0, err)
        self.assertGreater(rep["ops"]["aborted"], 100, "every other data read fails: ops abort")
        rc, err, rep, lines = self.run_stress("away", "--fault_files=wal,control,dir", *common)
        self.assertEqual(rc, 0, err)
        self.assertEqual(rep["ops"]["aborted"], 0, "a data read failed")
        self.assertEqual(rep["checks"]["unverifiable"], 0)
        self.assertLess(len([j for j in lines if j["class"] == "read_error"]), 20)

    def test_a_kind_that_is_none_is_a_usage_error_that_creates_nothing(self):
        db = os.path.join(self.d, "bad")
        rc, out, err = stress("--db=" + db, "--fault_files=data,log", "--sync_fault_one_in=2")
        self.assertEqual(rc, 2)
        self.assertIn("'log' is not a file kind", err)
        self.assertFalse(os.path.exists(db))


class TestSwarmAimsFiles(unittest.TestCase):
    def test_some_swarms_aim_the_io_classes_at_each_kind_and_say_so(self):
        got = swarms()
        aimed = [(sw, p) for _, sw, p in got if sw["files"]]
        self.assertTrue(0.3 < len(aimed) / len(got) < 0.7, len(aimed))
        self.assertEqual({sw["files"] for sw, _ in aimed}, set(SWARM_FILE_KINDS))
        for sw, p in aimed:
            self.assertEqual(p["fault_files"], sw["files"])
        self.assertTrue(all("fault_files" not in p for _, sw, p in got if not sw["files"]))
        rec = {
            "ops": {"put": 100},
            "features": {},
            "max_key": 8,
            "threads": 2,
            "faults": ["sync_error"],
            "files": "data",
        }
        self.assertIn("faults sync_error on data files", swarm_text(rec))

    def test_a_binary_without_the_option_gets_no_aim(self):
        cfg = Config(
            max_key=2000,
            known={"threads", "readpercent", "writepercent", "delpercent", "iterpercent"},
        )
        for i in range(200):
            s = iteration_seed(7, i)
            if draw_swarm(s, cfg) and draw_swarm(s, cfg)["files"]:
                self.assertNotIn("fault_files", draw(s, cfg)[1])


if __name__ == "__main__":
    unittest.main()
