"""A planned kill from outside that damages (stress --damage_at_kill;
crashtest/procs.py planned_kill): SIGUSR2 first, on which stress makes the
flips and zeroed blocks a kill point makes at the crash and dies by
SIGKILL; a process that dies of the signal before it could take it counts
as killed by SIGKILL; crashtest draws the option only for iterations with
a class that damages at the crash."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.params import (  # noqa: E402
    CRASH_DAMAGE_CLASSES,
    FAULTS,
    Config,
    draw_db_params,
    draw_iter_params,
)
from crashtest.procs import run_process  # noqa: E402
from crashtest.seeds import iteration_seed  # noqa: E402
from tests.stressrun import STRESS, StressDir  # noqa: E402


class TestPlannedKillWithASignal(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-damage-at-kill-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def run_py(self, code, kill_signal):
        out = os.path.join(self.d, "out.txt")
        return run_process(
            [sys.executable, "-c", code], out, self.d, kill_after=0.5, kill_signal=kill_signal
        )

    def test_a_process_that_takes_the_signal_dies_by_its_own_sigkill(self):
        code = (
            "import os, signal, time\n"
            "signal.signal(signal.SIGUSR2, lambda *a: os.kill(os.getpid(), signal.SIGKILL))\n"
            "time.sleep(30)\n"
        )
        t0 = time.monotonic()
        res = self.run_py(code, signal.SIGUSR2)
        self.assertEqual(res.rc, -signal.SIGKILL)
        self.assertTrue(res.killed_by_us)
        self.assertIsNotNone(res.signalled_at)
        self.assertFalse(res.sigkilled, "it died of its own SIGKILL, before the grace ran out")
        self.assertLess(time.monotonic() - t0, 5)

    def test_a_process_that_ignores_it_gets_sigkill_after_the_grace(self):
        code = (
            "import signal, time\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)\ntime.sleep(30)\n"
        )
        res = self.run_py(code, signal.SIGUSR2)
        self.assertEqual(res.rc, -signal.SIGKILL)
        self.assertTrue(res.sigkilled)

    def test_one_killed_by_the_signal_before_taking_it_counts_as_sigkilled(self):
        res = self.run_py("import time\ntime.sleep(30)\n", signal.SIGUSR2)
        self.assertEqual(res.rc, -signal.SIGKILL)
        self.assertTrue(res.killed_by_us)


class TestStressDamagesAtAnOutsideKill(StressDir):
    def kill_with_usr2(self, *args):
        db = os.path.join(self.d, "db")
        shutil.rmtree(db, ignore_errors=True)
        shutil.rmtree(db + ".expected", ignore_errors=True)
        argv = [STRESS, "--db=" + db, "--destroy_db_initially", "--threads=2", "--duration=30"]
        argv += ["--ops_per_thread=0", "--max_key=2000", "--wal_segment_size=64K", *args]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        p.send_signal(signal.SIGUSR2)
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "did not die"
        ledger = os.path.join(db + ".expected", "ledger")
        lines = []
        if os.path.exists(ledger):
            with open(ledger) as f:
                lines = [json.loads(x) for x in f]
        return rc, [j for j in lines if str(j.get("point", "")).startswith("crash/")]

    def test_the_signal_makes_the_damage_at_the_crash_then_sigkill(self):
        # A crash's WAL damage needs a record in the write it aims at,
        # which a kill can come before: a few seeds, each killed the same
        # way, until both kinds of damage were made.
        points = set()
        for seed in range(1, 6):
            rc, crash = self.kill_with_usr2(
                "--damage_at_kill=1",
                "--bitflip_wal_one_in=100000",
                "--bitflip_page_one_in=100000",
                "--seed=%d" % seed,
            )
            self.assertEqual(rc, -signal.SIGKILL)
            self.assertTrue(crash, "seed %d: no damage at the crash" % seed)
            points |= {j["point"] for j in crash}
            if {"crash/wal", "crash/data"} <= points:
                break
        self.assertEqual({"crash/wal", "crash/data"} - points, set())

    def test_without_a_damaging_class_it_only_dies(self):
        rc, crash = self.kill_with_usr2("--damage_at_kill=1", "--read_fault_one_in=100000")
        self.assertEqual((rc, crash), (-signal.SIGKILL, []))


class TestTheDraw(unittest.TestCase):
    def test_drawn_in_about_half_the_iterations_that_damage_at_the_crash_and_no_other(self):
        cfg = Config(max_key=2000)
        on = damaging = 0
        for i in range(300):
            s = iteration_seed(99, i)
            p, _ = draw_iter_params(s, cfg, draw_db_params(s, cfg))
            dmg = any(p.get(FAULTS[c][0]) for c in CRASH_DAMAGE_CLASSES)
            damaging += dmg
            if p.get("damage_at_kill"):
                on += 1
                self.assertTrue(dmg, p)
        self.assertTrue(0.3 * damaging < on < 0.7 * damaging, (on, damaging))
        pinned = Config(max_key=2000, pinned={"damage_at_kill": 0})
        for i in range(60):
            s = iteration_seed(99, i)
            p, _ = draw_iter_params(s, pinned, draw_db_params(s, pinned))
            self.assertFalse(int(p.get("damage_at_kill", 0)))


if __name__ == "__main__":
    unittest.main()
