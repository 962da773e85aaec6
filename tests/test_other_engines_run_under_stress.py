"""stress --engine sqlite and --engine rocksdb (stress/adapter_sqlite.c,
stress/adapter_rocksdb.c): the driver and the oracle run unchanged over
engines nobody here wrote.

- a few seconds of four threads with reopens, checkpoints, snapshots,
  scans and verifies pass (exit 0) and the report names the engine; a
  second process on the same database passes its check at start, and one
  after a --crash_at_end passes its post-crash check;
- an option that needs the fault library's hooks in the engine (a fault
  class), or one of our engine's that means nothing to the other, is a
  usage error (exit 2, the option named) that creates nothing;
- an option of one engine given to another is a usage error too;
- a directory that holds another engine's database, or one of this
  engine's with no expected state, is refused (exit 3) and left unchanged.
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.stressrun import need_stress, stress  # noqa: E402

WORKLOAD = [
    "--threads",
    "4",
    "--max_key",
    "2000",
    "--reopen",
    "2",
    "--checkpoint_one_in",
    "300",
    "--acquire_snapshot_one_in",
    "50",
    "--readpercent",
    "35",
    "--iterpercent",
    "20",
    "--verify_db_one_in",
    "2000",
]


class OtherEngines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stress-engines-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def run_engine(self, engine, *extra, db="db", fresh=True, report="r.json"):
        path = os.path.join(self.tmp, report)
        args = ["--engine", engine, "--db", os.path.join(self.tmp, db), "--report", path] + list(
            extra
        )
        if fresh:
            args.append("--destroy_db_initially")
        rc, out, err = stress(*args)
        rep = None
        if os.path.exists(path):
            with open(path) as f:
                rep = json.load(f)
        return rc, out, err, rep

    def timed_run_passes_and_names_the_engine(self, engine, *extra):
        rc, out, err, rep = self.run_engine(
            engine, "--duration", "3", "--ops_per_thread", "0", *(WORKLOAD + list(extra))
        )
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(rep["engine"], engine)
        self.assertEqual(rep["verdict"], "pass")
        ops = rep["ops"]
        for op in ("get", "put", "batch", "scan", "checkpoint", "snapshot", "reopen"):
            self.assertGreater(ops[op], 0, (op, ops))
        self.assertGreater(rep["checks"]["verified"], 1000)
        # The next process checks every key at start, then runs on.
        rc, out, err, rep = self.run_engine(
            engine,
            "--ops_per_thread",
            "500",
            *(WORKLOAD + list(extra)),
            fresh=False,
            report="r2.json"
        )
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(rep["engine"], engine)
        # A process killed at the end of its workload: the next one's
        # post-crash check must find every acknowledged commit.
        rc, out, err, _ = self.run_engine(
            engine,
            "--ops_per_thread",
            "500",
            "--crash_at_end",
            *(WORKLOAD + list(extra)),
            fresh=False,
            report="r3.json"
        )
        self.assertEqual(rc, -9, out + err)
        rc, out, err, rep = self.run_engine(
            engine,
            "--ops_per_thread",
            "200",
            *(WORKLOAD + list(extra)),
            fresh=False,
            report="r4.json"
        )
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(rep["post_crash_check"], "passed")

    def test_sqlite_runs_and_is_named(self):
        self.timed_run_passes_and_names_the_engine("sqlite")

    def test_sqlite_rollback_journal_runs_with_each_synchronous_level(self):
        for sync, mode in (("normal", "off"), ("full", "off"), ("extra", "commit")):
            rc, out, err, rep = self.run_engine(
                "sqlite",
                "--sqlite_journal_mode",
                "delete",
                "--sqlite_synchronous",
                sync,
                "--sync_mode",
                mode,
                "--ops_per_thread",
                "300",
                "--threads",
                "4",
                "--max_key",
                "500",
                "--reopen",
                "1",
                "--checkpoint_one_in",
                "100",
            )
            self.assertEqual(rc, 0, out + err)
            self.assertEqual(rep["options"]["sqlite_journal_mode"], "delete")

    def test_rocksdb_runs_and_is_named(self):
        self.timed_run_passes_and_names_the_engine("rocksdb", "--vacuum_one_in", "1000")

    def test_rocksdb_without_sync_runs(self):
        rc, out, err, rep = self.run_engine(
            "rocksdb",
            "--sync_mode",
            "off",
            "--rocksdb_wal_recovery_mode",
            "1",
            "--ops_per_thread",
            "1000",
            *WORKLOAD
        )
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(rep["options"]["rocksdb_wal_recovery_mode"], 1)

    def refused(self, *args, want):
        db = os.path.join(self.tmp, "refused", "db")
        rc, out, err = stress("--db", db, "--destroy_db_initially", "--ops_per_thread", "10", *args)
        self.assertEqual(rc, 2, out + err)
        for w in want:
            self.assertIn(w, err)
        self.assertFalse(
            os.path.exists(os.path.join(self.tmp, "refused")), "a usage error creates nothing"
        )

    def test_a_fault_option_with_sqlite_is_a_usage_error(self):
        self.refused(
            "--engine",
            "sqlite",
            "--read_fault_one_in",
            "100",
            want=["--read_fault_one_in", "hooks"],
        )

    def test_kill_points_and_delays_with_rocksdb_are_usage_errors(self):
        self.refused(
            "--engine",
            "rocksdb",
            "--kill_random_test",
            "100",
            "--delay_one_in",
            "50",
            want=["--kill_random_test", "--delay_one_in"],
        )

    def test_an_option_that_means_nothing_to_the_engine_is_a_usage_error(self):
        self.refused(
            "--engine", "sqlite", "--wal_log_hints", "1", want=["--wal_log_hints", "mean nothing"]
        )
        self.refused(
            "--engine",
            "rocksdb",
            "--block_protection_bytes_per_key",
            "4",
            want=["--block_protection_bytes_per_key"],
        )

    def test_a_database_of_another_engine_is_refused_and_left_as_it_was(self):
        for maker, other in (("sqlite", "ours"), ("ours", "rocksdb"), ("rocksdb", "sqlite")):
            db = os.path.join(self.tmp, "of-" + maker, "db")
            os.makedirs(os.path.dirname(db))
            rc, out, err = stress(
                "--engine",
                maker,
                "--db",
                db,
                "--destroy_db_initially",
                "--ops_per_thread",
                "50",
                "--threads",
                "1",
            )
            self.assertEqual(rc, 0, out + err)
            before = {n: os.stat(os.path.join(db, n)).st_mtime_ns for n in os.listdir(db)}
            rc, out, err = stress(
                "--engine", other, "--db", db, "--ops_per_thread", "50", "--threads", "1"
            )
            self.assertEqual(rc, 3, out + err)
            self.assertIn("another engine's database (--engine %s)" % maker, err)
            self.assertEqual(
                {n: os.stat(os.path.join(db, n)).st_mtime_ns for n in os.listdir(db)}, before
            )

    def test_another_engines_option_is_a_usage_error(self):
        self.refused("--sqlite_journal_mode", "delete", want=["--engine sqlite"])
        self.refused(
            "--engine", "sqlite", "--rocksdb_wal_recovery_mode", "0", want=["--engine rocksdb"]
        )

    def test_a_database_of_another_engine_or_without_expected_state_is_refused_unchanged(self):
        rc, out, err, _ = self.run_engine("sqlite", "--ops_per_thread", "50", "--threads", "1")
        self.assertEqual(rc, 0, out + err)
        db = os.path.join(self.tmp, "db")
        before = sorted(os.listdir(db))
        rc, out, err = stress("--engine", "rocksdb", "--db", db, "--ops_per_thread", "10")
        self.assertEqual(rc, 3, out + err)
        self.assertIn("another engine's database", err)
        self.assertEqual(sorted(os.listdir(db)), before, "nothing written into it")
        shutil.rmtree(db + ".expected")
        rc, out, err = stress("--engine", "sqlite", "--db", db, "--ops_per_thread", "10")
        self.assertEqual(rc, 3, out + err)
        self.assertIn("has no expected state", err)

    def test_wal_with_normal_sync_needs_sync_mode_off(self):
        self.refused(
            "--engine", "sqlite", "--sqlite_synchronous", "normal", want=["--sync_mode off"]
        )

    def test_a_rollback_journal_below_extra_sync_needs_sync_mode_off(self):
        # Its commit is the journal's unlink, durable only when SQLite
        # syncs the directory: under synchronous EXTRA alone.
        for sync in ("full", "normal"):
            self.refused(
                "--engine",
                "sqlite",
                "--sqlite_journal_mode",
                "delete",
                "--sqlite_synchronous",
                sync,
                want=["--sync_mode off", "extra"],
            )


if __name__ == "__main__":
    unittest.main()
