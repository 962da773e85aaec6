"""stress --faults_via posix: the fault library's hooks fed by the door at
the POSIX boundary (faults/door.h) instead of our engine's eng_io_hooks.

What it proves: the hook classes act through libc's file calls (their
ledger lines are there and the run passes); the power-loss journal the
door writes is the one the hooks write (same seed, same journal), ticks'
flips on disk included as the library's own I/O and not the engine's;
a crash, the power-loss step and a verification-only rerun through the
door pass, for SQLite and RocksDB too (their power-loss journal: the one
option the door serves them); a planted durability bug is caught through
it; and our engine's io_uring backend, which the door cannot see, is
refused."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from crashtest.common import run_make
from tests.stressrun import ROOT, STRESS, need_stress, stress

BUILD = os.environ.get("BUILD", "build")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
BROKEN = os.path.join(ROOT, BUILD, "mutants", "drop-synced-commit", "stress")

DOOR = ["--faults_via=posix", "--io_backend=psync"]
# One thread and a small cache: page writes and unsynced log writes between
# checkpoints, so the journal has something to roll back.
CRASHY = [
    "--seed=5",
    "--threads=1",
    "--max_key=2000",
    "--sync_fault_injection=1",
    "--sync_mode=off",
    "--checkpoint_one_in=300",
    "--cache_size=64K",
    "--page_size=4096",
]


def ledger_points(run_dir):
    """{(class, point): lines} of RUN_DIR/ledger."""
    out = {}
    with open(os.path.join(run_dir, "ledger")) as f:
        for line in f:
            j = json.loads(line)
            k = (j["class"], j["point"])
            out[k] = out.get(k, 0) + 1
    return out


def powerloss(db, run_dir, *args):
    p = subprocess.run(
        [POWERLOSS, db, "--run-dir", run_dir, "--seed", "5"] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    return p.returncode, p.stdout + p.stderr


class FaultsViaPosix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()
        if not os.path.exists(POWERLOSS):
            run_make(
                ["make", "-s", os.path.relpath(POWERLOSS, ROOT)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-faults-via-posix-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def crash(self, binary, name, *args):
        """A run of BINARY on database NAME killed at its end (--crash_at_end)."""
        db = os.path.join(self.d, name, "db")
        os.makedirs(os.path.dirname(db), exist_ok=True)
        p = subprocess.run(
            [binary, "--db=" + db, "--destroy_db_initially", "--crash_at_end"] + list(args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(p.returncode, -9, p.stdout + p.stderr)
        return db, db + ".expected"

    def test_hook_classes_act_through_the_door(self):
        db = os.path.join(self.d, "db")
        # One thread: the seed gives every class below at least once.
        rc, out, err = stress(
            "--db=" + db,
            "--destroy_db_initially",
            *DOOR,
            "--sync_fault_injection=1",
            "--threads=1",
            "--ops_per_thread=6000",
            "--max_key=2000",
            "--page_size=4096",
            "--cache_size=64K",
            "--checkpoint_one_in=200",
            "--read_fault_one_in=60",
            "--write_fault_one_in=500",
            "--sync_fault_one_in=40",
            "--torn_write_one_in=40",
            "--zero_page_one_in=200",
            "--bitflip_page_one_in=1500",
            "--seed=4"
        )
        self.assertEqual(rc, 0, out + err)
        pts = ledger_points(db + ".expected")
        classes = {c for c, _ in pts}
        for c in (
            "read_error",
            "write_error",
            "sync_error",
            "torn_write",
            "zero_page",
            "bitflip_page",
        ):
            self.assertIn(c, classes, pts)
        # Through the door, not the engine's hooks nor its fsync point:
        # every sync_error is the hook route's (via_door), and torn and
        # zeroed writes are hooked writes of the file the door names
        # "data" (the page faults' file).
        self.assertGreater(pts.get(("sync_error", "hook/sync"), 0), 0, pts)
        self.assertNotIn(("sync_error", "engine/io/fsync"), pts)
        self.assertGreater(pts.get(("torn_write", "hook/write"), 0), 0, pts)
        self.assertGreater(pts.get(("zero_page", "hook/write"), 0), 0, pts)

    def test_the_door_journals_what_the_hooks_journal(self):
        # Same seed, one thread: the journal written through the door is
        # the hooks' own, write for write.  The ticks' flips and zeroed
        # pages are the library's I/O (flt_door_bypass): were the door to
        # take them for the engine's writes, it would journal them too and
        # power loss could undo them.
        lines = {}
        for via in ("hooks", "posix"):
            db, run = self.crash(
                STRESS,
                via,
                "--faults_via=" + via,
                "--io_backend=psync",
                "--ops_per_thread=2000",
                "--bitflip_page_one_in=100",
                "--zero_page_one_in=400",
                "--torn_write_one_in=100",
                *CRASHY
            )
            rc, out = powerloss(db, run, "--mode", "mixed", "--variants", "1")
            self.assertEqual(rc, 0, out)
            lines[via] = out.strip().splitlines()[-1].split(" variant ", 1)[1]
            self.assertGreater(ledger_points(run).get(("bitflip_page", "tick/data"), 0), 0)
        self.assertEqual(lines["hooks"], lines["posix"])
        self.assertRegex(lines["posix"], r" [1-9][0-9]* unsynced")

    def test_crash_power_loss_and_rerun_through_the_door(self):
        db, run = self.crash(STRESS, "crash", *DOOR, "--ops_per_thread=2000", *CRASHY)
        rc, out = powerloss(db, run, "--mode", "mixed")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r" [1-9][0-9]* rolled back")
        report = os.path.join(self.d, "r.json")
        rc, out, err = stress(
            "--db=" + db, *DOOR, "--verification_only", "--report=" + report, *CRASHY
        )
        self.assertEqual(rc, 0, out + err)
        with open(report) as f:
            r = json.load(f)
        self.assertEqual(r["post_crash_check"], "passed")
        self.assertGreater(r["classes"]["power_loss"]["injected"], 0)

    def test_io_uring_is_refused(self):
        db = os.path.join(self.d, "db")
        rc, out, err = stress(
            "--db=" + db, "--destroy_db_initially", "--faults_via=posix", "--sync_fault_injection=1"
        )
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--io_backend psync", err)
        self.assertFalse(os.path.exists(db))

    def test_a_synced_commit_dropped_by_recovery_is_caught_through_the_door(self):
        made = run_make(
            ["make", "-s", os.path.relpath(BROKEN, ROOT)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if made.returncode or not os.path.exists(BROKEN):
            self.skipTest("build/mutants/drop-synced-commit/stress missing")
        # Every commit synced (--sync_mode commit), so the power-loss step
        # may undo nothing acknowledged: a commit gone after recovery is
        # the engine's loss, judged lost.
        opts = DOOR + [
            "--seed=5",
            "--threads=1",
            "--max_key=2000",
            "--sync_fault_injection=1",
            "--sync_mode=commit",
        ]
        db, run = self.crash(BROKEN, "broken", "--ops_per_thread=2000", *opts)
        rc, out = powerloss(db, run, "--mode", "rollback")
        self.assertEqual(rc, 0, out)
        report = os.path.join(self.d, "b.json")
        p = subprocess.run(
            [BROKEN, "--db=" + db, "--verification_only", "--report=" + report] + opts,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("FAILURE lost", p.stdout + p.stderr)


class OtherEnginesPowerLossThroughTheDoor(unittest.TestCase):
    """--sync_fault_injection for SQLite and RocksDB, which have no hooks:
    the door writes the power-loss journal from their file calls."""

    @classmethod
    def setUpClass(cls):
        FaultsViaPosix.setUpClass()

    setUp = FaultsViaPosix.setUp
    tearDown = FaultsViaPosix.tearDown
    crash = FaultsViaPosix.crash

    def crash_variants_rerun(self, name, opts):
        db, run = self.crash(STRESS, name, "--ops_per_thread=2000", *opts)
        rc, out = powerloss(db, run, "--mode", "mixed", "--variants", "3")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r" [1-9][0-9]* unsynced")
        for k in range(3):
            # Each state on a copy of the expected state: a rerun writes it.
            exp = os.path.join(self.d, name, "exp%d" % k)
            shutil.copytree(run, exp)
            report = os.path.join(exp, "r.json")
            rc, out, err = stress(
                "--db=%s.pl%d" % (db, k),
                "--expected_values_dir=" + exp,
                "--verification_only",
                "--report=" + report,
                *opts
            )
            self.assertEqual(rc, 0, out + err)
            with open(report) as f:
                self.assertEqual(json.load(f)["post_crash_check"], "passed")
        rc, out = powerloss(db, run, "--mode", "mixed")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r" [1-9][0-9]* rolled back")
        rc, out, err = stress("--db=" + db, "--verification_only", *opts)
        self.assertEqual(rc, 0, out + err)

    def test_sqlite_crash_power_loss_and_rerun(self):
        self.crash_variants_rerun(
            "sqlite",
            [
                "--engine=sqlite",
                "--sqlite_journal_mode=wal",
                "--sqlite_synchronous=full",
                "--faults_via=posix",
                "--sync_fault_injection=1",
                "--threads=1",
                "--max_key=2000",
                "--seed=5",
            ],
        )

    def test_rocksdb_crash_power_loss_and_rerun(self):
        self.crash_variants_rerun(
            "rocksdb",
            [
                "--engine=rocksdb",
                "--sync_mode=off",
                "--checkpoint_one_in=300",
                "--faults_via=posix",
                "--sync_fault_injection=1",
                "--threads=1",
                "--max_key=2000",
                "--seed=5",
            ],
        )

    def test_a_power_loss_after_a_clean_exit_is_judged_as_a_crash(self):
        # RocksDB's close leaves metadata unsynced (an unlinked obsolete
        # file, a truncated manifest): a power loss after it undoes some.
        # The rerun must judge those rollbacks by its post-crash check; a
        # run that took the clean exit's word had no open to judge them by
        # and failed them as unrecoverable.
        opts = [
            "--engine=rocksdb",
            "--faults_via=posix",
            "--threads=2",
            "--max_key=2000",
            "--checkpoint_one_in=100",
            "--seed=2",
        ]
        db = os.path.join(self.d, "clean", "db")
        run = os.path.join(self.d, "clean", "run")
        base = ["--db=" + db, "--expected_values_dir=" + run, "--run_dir=" + run]
        os.makedirs(os.path.dirname(db))
        rc, out, err = stress(*base, "--destroy_db_initially", "--ops_per_thread=200", *opts)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = stress(*base, "--ops_per_thread=3000", "--sync_fault_injection=1", *opts)
        self.assertEqual(rc, 0, out + err)
        rc, out = powerloss(db, run, "--mode", "rollback")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r" [1-9][0-9]* undone")
        report = os.path.join(self.d, "clean", "r.json")
        rc, out, err = stress(*base, "--verification_only", "--report=" + report, *opts)
        self.assertEqual(rc, 0, out + err)
        with open(report) as f:
            r = json.load(f)
        self.assertEqual(r["post_crash_check"], "passed")
        self.assertGreater(r["classes"]["power_loss"]["repaired"], 0)

    def test_what_the_door_does_not_serve_them_yet_is_still_refused(self):
        db = os.path.join(self.d, "db")
        for extra in (
            ["--faults_via=hooks", "--sync_fault_injection=1"],
            ["--faults_via=posix", "--sync_fault_injection=1", "--bitflip_wal_one_in=100"],
        ):
            rc, out, err = stress("--db=" + db, "--destroy_db_initially", "--engine=sqlite", *extra)
            self.assertEqual(rc, 2, out + err)
            self.assertFalse(os.path.exists(db))


if __name__ == "__main__":
    unittest.main()
