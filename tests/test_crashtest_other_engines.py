"""crashtest.py --engine rocksdb|sqlite, --faults-via posix: the nightly
modes run an engine without fault hooks through the door (power loss,
SIGKILL and the I/O classes of its promise table), draw only the options
its adapter takes, keep each drawn configuration inside what the
engine's promise table says, and refuse what the door cannot serve.

    python3 -m unittest tests.test_crashtest_other_engines"""

import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.knownbugs import KNOWN_BUGS, bugs_of  # noqa: E402
from crashtest.params import (  # noqa: E402
    FAULTS,
    Config,
    draw_db_params,
    draw_iter_params,
    draw_plan,
)
from crashtest.repro import rerun_line  # noqa: E402
from crashtest.binary import stress_promises  # noqa: E402
from crashtest.run import CrashTest  # noqa: E402
from tests.stressrun import need_stress  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
STRESS = os.path.join(ROOT, BUILD, "stress")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
CRASHTEST = os.path.join(ROOT, "crashtest.py")


def run_ct(mode, *args, timeout=600):
    argv = [
        sys.executable,
        CRASHTEST,
        mode,
        "--stress-binary",
        STRESS,
        "--powerloss-binary",
        POWERLOSS,
    ] + list(args)
    r = subprocess.run(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=timeout,
        cwd=ROOT,
    )
    return r.returncode, r.stdout, r.stderr


PROMISES = {}


def engine_cfg(engine, pinned=None):
    """A draw's configuration for ENGINE, with its promise table as the
    binary prints it (stress --promises; the test is skipped without a
    build)."""
    if engine not in PROMISES:
        need_stress()
        PROMISES[engine] = stress_promises(STRESS, engine)
    pins = {"engine": engine, "faults_via": "posix"}
    return Config(
        engine=engine,
        fault_classes=[],
        pinned=dict(pins, **(pinned or {})),
        engine_pins=pins,
        promises=PROMISES[engine],
    )


class TheDrawKeepsToWhatEachEnginePromises(unittest.TestCase):
    def test_every_database_and_step_of_another_engine_names_it_and_the_door(self):
        for engine in ("rocksdb", "sqlite"):
            cfg = engine_cfg(engine)
            for seed in range(40):
                db = draw_db_params(seed, cfg)
                self.assertEqual((db["engine"], db["faults_via"]), (engine, "posix"))
                p, _ = draw_iter_params(seed, cfg, db)
                self.assertFalse(
                    [k for k in p if k.endswith("_one_in") and k.startswith(("bitflip", "zero"))]
                )
                self.assertNotIn("delay_one_in", p)

    def test_rocksdb_recovery_modes_that_replay_past_holes_run_with_every_commit_synced(self):
        seen = set()
        for seed in range(200):
            cfg = engine_cfg("rocksdb")
            db = draw_db_params(seed, cfg)
            p, _ = draw_iter_params(seed, cfg, db)
            mode = db["rocksdb_wal_recovery_mode"]
            seen.add(mode)
            self.assertNotEqual(mode, 1)  # absolute consistency refuses the torn tail of any crash
            if mode in (0, 3):  # every commit synced (group syncs each write too: RD4)
                self.assertIn(p["sync_mode"], ("commit", "group"), (seed, db, p))
            self.assertNotEqual(
                p["sync_mode"], "off", (seed, db, p)
            )  # an open lead: docs/findings/
        self.assertEqual(seen, {0, 2, 3})
        # A pinned sync_mode is the user's: kept.
        cfg = engine_cfg("rocksdb", {"rocksdb_wal_recovery_mode": "0", "sync_mode": "off"})
        p, _ = draw_iter_params(1, cfg, draw_db_params(1, cfg))
        self.assertEqual(p["sync_mode"], "off")

    def test_sqlite_runs_sync_mode_off_where_it_promises_no_durable_commit_at_its_return(self):
        kinds = set()
        for seed in range(200):
            cfg = engine_cfg("sqlite")
            db = draw_db_params(seed, cfg)
            p, _ = draw_iter_params(seed, cfg, db)
            wal, sync = db["sqlite_journal_mode"] == "wal", db["sqlite_synchronous"]
            durable = sync == "extra" or (wal and sync == "full")
            kinds.add((db["sqlite_journal_mode"], db["sqlite_synchronous"]))
            if not durable:
                self.assertEqual(
                    (p["sync_mode"], db.get("sync_mode")), ("off", "off"), (seed, db, p)
                )
            if db["sqlite_journal_mode"] == "delete":
                self.assertNotIn("acquire_snapshot_one_in", p)
                self.assertNotIn("checkpoint_wal_bytes", p)
        self.assertEqual(len(kinds), 6)

    def test_another_engine_is_killed_at_the_doors_calls_in_whitebox(self):
        door = [
            "kill/door/write/data",
            "kill/door/write/wal",
            "kill/door/sync/wal",
            "kill/door/sync/control",
            "kill/door/rename",
        ]
        groups, seconds = set(), set()
        for seed in range(200):
            plan = draw_plan(seed, "whitebox", 3.0, {}, door, max_variants=2)
            if plan["kind"] != "whitebox" or "kill_random_test" not in plan:
                continue
            pts = plan.get("kill_points", ",".join(door)).split(",")
            self.assertTrue(set(pts) <= set(door), plan)
            groups.add(plan["kill_mode_name"])
            second = plan.get("second_crash")
            if second:
                seconds.add(second["how"])
                self.assertTrue(set(second["kill_points"].split(",")) <= set(door), plan)
        self.assertEqual(
            groups,
            {
                "all door calls",
                "log write and sync calls",
                "table writes and syncs",
                "manifest, directory and file-name calls",
            },
        )
        self.assertEqual(seconds, {"kill_point"})

    def test_an_engine_without_kill_points_is_killed_from_outside(self):
        plans = {
            draw_plan(seed, "simple", 3.0, {}, [], max_variants=2)["kind"] for seed in range(16)
        }
        self.assertEqual(plans, {"blackbox"})
        plans = {
            draw_plan(seed, "simple", 3.0, {}, ["kill/wal/append"], max_variants=2)["kind"]
            for seed in range(16)
        }
        self.assertEqual(plans, {"blackbox", "whitebox"})

    def test_rocksdb_wal_recovery_mode_0_is_crashed_without_tears(self):
        # Mode 0 refuses a log whose last record is corrupt (a torn write
        # is a checksum mismatch), as RocksDB's options.h says it does.
        modes = set()
        for seed in range(300):
            cfg = engine_cfg("rocksdb", {"rocksdb_wal_recovery_mode": 0})
            db = draw_db_params(seed, cfg)
            p, _ = draw_iter_params(seed, cfg, db)
            plan = draw_plan(seed, "blackbox", 3.0, dict(db, **p), [], promises=cfg.promises)
            modes.add(plan["powerloss_mode"])
            second = plan.get("second_crash") or {}
            self.assertNotIn(second.get("powerloss_mode"), ("tear", "mixed"), (seed, plan))
        self.assertEqual(modes, {"rollback", "keep"})


class KnownBugsOfAReleaseStayOutOfTheDraw(unittest.TestCase):
    def test_a_bug_applies_below_the_version_that_fixed_it(self):
        row = [b for b in KNOWN_BUGS if b["option"] == "wal_compression"][0]
        self.assertIn(row, bugs_of("rocksdb", "7.8.3"))
        self.assertNotIn(row, bugs_of("rocksdb", "7.10.2"))
        self.assertNotIn(row, bugs_of("rocksdb", "8.1.0"))
        self.assertIn(row, bugs_of("rocksdb", None))  # a version it cannot read: the oldest
        self.assertEqual(bugs_of("sqlite", "3.40.1"), [])
        for b in KNOWN_BUGS:
            self.assertTrue(os.path.isfile(os.path.join(ROOT, b["finding"])), b["finding"])

    def test_the_draw_leaves_the_value_out_and_a_pin_brings_it_back(self):
        ct = types.SimpleNamespace(a=types.SimpleNamespace(engine="rocksdb"), p=Lines())
        self.assertEqual(
            CrashTest.known_bugs(ct, {"rocksdb": "7.8.3"}, {}),
            {("wal_compression", "zstd"), ("fault_files", "wal")},
        )
        self.assertIn("left out of the draw", ct.p.lines[-1])
        self.assertEqual(
            CrashTest.known_bugs(ct, {"rocksdb": "7.8.3"}, {"wal_compression": "zstd"}),
            {("fault_files", "wal")},
        )
        self.assertIn("pinned by --set, kept", ct.p.lines[-2])
        self.assertIn("--fault_files=wal left out of the draw", ct.p.lines[-1])
        self.assertEqual(
            CrashTest.known_bugs(ct, {"rocksdb": "7.10.2"}, {}), {("fault_files", "wal")}
        )
        self.assertEqual(CrashTest.known_bugs(ct, {"rocksdb": "9.1.0"}, {}), set())
        cfg = Config(
            engine="rocksdb",
            fault_classes=[],
            unsupported={("wal_compression", "zstd")},
            pinned={"engine": "rocksdb", "faults_via": "posix"},
        )
        for seed in range(100):
            p, _ = draw_iter_params(seed, cfg, draw_db_params(seed, cfg))
            self.assertNotEqual(p.get("wal_compression"), "zstd", seed)

    def test_a_file_kind_a_known_bug_reaches_is_kept_from_the_io_classes(self):
        # RocksDB below 9.1 aborts when a flush meets a log whose write
        # just failed: the I/O classes strike its other files.
        cfg = engine_cfg("rocksdb")
        cfg.fault_classes = ["read_error", "write_error", "nospace", "sync_error"]
        cfg.unsupported = {("fault_files", "wal")}
        kinds, on = set(), 0
        for seed in range(200):
            p, _ = draw_iter_params(seed, cfg, draw_db_params(seed, cfg))
            if any(k in p for k in ("write_fault_one_in", "nospace_one_in", "sync_fault_one_in")):
                on += 1
                self.assertNotIn("wal", p["fault_files"].split(","), (seed, p))
                kinds.update(p["fault_files"].split(","))
        self.assertGreater(on, 50)
        self.assertEqual(kinds, {"data", "control", "dir"})
        cfg.pinned["fault_files"] = "wal"  # the finding's reproduction
        p, _ = draw_iter_params(3, cfg, draw_db_params(3, cfg))
        self.assertEqual(p["fault_files"], "wal")

    def test_the_rerun_line_keeps_the_engine_and_its_door(self):
        a = types.SimpleNamespace(
            stress_binary_given=False,
            set=[],
            faults="none",
            measure=False,
            powerloss_modes=None,
            max_key=2000,
            interval=3.0,
            mode="simple",
            engine="rocksdb",
            faults_via="posix",
        )
        line = rerun_line(a, "simple", 99)
        self.assertIn("--engine rocksdb", line)
        self.assertIn("--faults-via posix", line)


class Lines:
    def __init__(self):
        self.lines = []

    def line(self, s):
        self.lines.append(s)


class WhatTheDoorCannotServeIsAUsageError(unittest.TestCase):
    def test_each_is_refused_before_a_report_folder_is_made(self):
        with tempfile.TemporaryDirectory(prefix="ct-engines-") as d:
            rd = os.path.join(d, "r")
            cases = [
                ("simple", ["--engine", "rocksdb", "--faults", "bitflip_wal"], "door serves"),
                ("simple", ["--engine", "sqlite", "--faults-via", "hooks"], "door"),
                ("simple", ["--faults-via", "posix", "--set", "io_backend=uring"], "io_uring"),
            ]
            for mode, args, why in cases:
                rc, out, err = run_ct(mode, "--duration", "5", "--report-dir", rd, *args)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(why, err)
                self.assertFalse(os.path.exists(rd), args)


class OtherEnginesRunTheNightlyCycle(unittest.TestCase):
    def run_engine(self, *args):
        with tempfile.TemporaryDirectory(prefix="ct-engines-") as d:
            rd = os.path.join(d, "r")
            rc, out, err = run_ct(
                "simple", "--duration", "20", "-j", "1", "--seed", "7", "--report-dir", rd, *args
            )
            with open(os.path.join(rd, "summary.json")) as f:
                s = json.load(f)
            with open(os.path.join(rd, "iterations.jsonl")) as f:
                its = [json.loads(line) for line in f if line.strip()]
        return rc, out + err, s, its

    def test_rocksdb_and_sqlite_pass_power_loss_and_sigkill_through_the_door(self):
        for engine in ("rocksdb", "sqlite"):
            rc, out, s, its = self.run_engine("--engine", engine)
            self.assertEqual(rc, 0, out)
            self.assertGreaterEqual(s["iterations_total"], 3, out)
            self.assertTrue(all(i["db_params"]["engine"] == engine for i in its))
            self.assertGreater(s["classes"]["power_loss"]["injected"], 0, out)
            steps = [st for i in its for st in i["steps"] if st["type"] == "stress"]
            self.assertTrue(all("--engine=%s" % engine in st["argv"] for st in steps))
            # The door's I/O classes of the engine's promise table are drawn.
            io_options = {
                FAULTS[c][0] for c in ("read_error", "write_error", "nospace", "sync_error")
            }
            drawn = {a.split("=")[0][2:] for st in steps for a in st["argv"]} & io_options
            self.assertTrue(drawn, out)

    def test_rocksdb_whitebox_kills_at_the_doors_calls_and_passes(self):
        with tempfile.TemporaryDirectory(prefix="ct-engines-") as d:
            rd = os.path.join(d, "r")
            rc, out, err = run_ct(
                "whitebox",
                "--engine",
                "rocksdb",
                "--duration",
                "30",
                "--interval",
                "3",
                "--max-key",
                "2000",
                "-j",
                "1",
                "--seed",
                "5",
                "--report-dir",
                rd,
            )
            self.assertEqual(rc, 0, out + err)
            with open(os.path.join(rd, "iterations.jsonl")) as f:
                its = [json.loads(line) for line in f if line.strip()]
        fired = [
            p
            for i in its
            for st in i["steps"]
            for p in ((st.get("result") or {}).get("kill_points_fired") or [])
        ]
        self.assertTrue(any(p.startswith("kill/door/") for p in fired), out)

    def test_our_engine_through_the_door_runs_psync(self):
        rc, out, s, its = self.run_engine("--faults-via", "posix", "--faults", "none")
        self.assertEqual(rc, 0, out)
        steps = [st for i in its for st in i["steps"] if st["type"] == "stress"]
        self.assertTrue(steps)
        self.assertTrue(
            all(
                "--faults_via=posix" in st["argv"] and "--io_backend=psync" in st["argv"]
                for st in steps
            )
        )


if __name__ == "__main__":
    unittest.main()
