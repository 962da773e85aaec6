"""tools/rocksdb_wal_check.py: a WAL RocksDB wrote and a crash left is
whole; the same log with one byte changed is not, at the record that
holds it.

    python3 -m unittest tests.test_rocksdb_wal_check"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.stressrun import ROOT, need_stress, stress

TOOL = os.path.join(ROOT, "tools", "rocksdb_wal_check.py")


def check(path):
    p = subprocess.run(
        [sys.executable, TOOL, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return p.returncode, p.stdout


class RocksdbWalCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-wal-check-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def crashed_log(self):
        db = os.path.join(self.d, "db")
        rc, out, err = stress(
            "--db=" + db,
            "--engine=rocksdb",
            "--destroy_db_initially",
            "--crash_at_end",
            "--threads=1",
            "--max_key=2000",
            "--ops_per_thread=3000",
            "--seed=3",
        )
        self.assertEqual(rc, -9, out + err)
        logs = [p for p in glob.glob(os.path.join(db, "*.log")) if os.path.getsize(p) > 4096]
        self.assertTrue(logs, os.listdir(db))
        return logs[0]

    def test_a_crashed_log_is_whole_and_a_changed_byte_is_named(self):
        log = self.crashed_log()
        rc, out = check(log)
        self.assertEqual(rc, 0, out)
        self.assertIn(" 0 with a bad CRC", out)
        with open(log, "r+b") as f:
            f.seek(2000)
            b = f.read(1)
            f.seek(2000)
            f.write(bytes([b[0] ^ 0x10]))
        rc, out = check(log)
        self.assertEqual(rc, 1, out)
        self.assertIn(" 1 with a bad CRC", out)

    def test_a_missing_file_is_a_usage_error(self):
        rc, out = check(os.path.join(self.d, "nope.log"))
        self.assertEqual(rc, 2, out)


if __name__ == "__main__":
    unittest.main()
