"""bitflip_wal's synced sector lost as zeros (faults/walzero.c): at an
outside kill with --damage_at_kill, a sector of the synced log whose
record a later synced block witnesses durable is zeroed (region
synced_sector, point crash/wal); the engine must report it at the
restart (rule W3b of engine/wal.h: a zero sector passes its own check, so
only the witness tells damage from a torn tail), and the oracle counts it
detected (masked when a write in flight rewrote its block whole), nothing
lost."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.stressrun import STRESS, StressDir  # noqa: E402

TRIES = 30  # seeds tried until one crash zeroes a sector (the first few do)


class TestSyncedSectorLost(StressDir):
    def crash(self, seed):
        """A run killed by SIGUSR2 after a second: (its state's stress
        arguments, the synced_sector ledger lines)."""
        d = os.path.join(self.d, "s%d" % seed)
        os.makedirs(d)
        base = ["--db=%s/db" % d, "--expected_values_dir=%s/exp" % d, "--run_dir=%s/run" % d]
        base += ["--max_key=2000", "--seed=%d" % seed]
        run = ["--destroy_db_initially", "--threads=2", "--duration=30", "--ops_per_thread=0"]
        run += ["--wal_segment_size=64K", "--bitflip_wal_one_in=100000000", "--damage_at_kill=1"]
        p = subprocess.Popen(
            [STRESS] + base + run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(1.0)
        p.send_signal(signal.SIGUSR2)
        self.assertEqual(p.wait(20), -signal.SIGKILL)
        with open(os.path.join(d, "run", "ledger")) as f:
            lines = [json.loads(x) for x in f]
        return base, d, [j for j in lines if j.get("region") == "synced_sector"]

    def test_a_zeroed_synced_sector_is_reported_and_nothing_is_lost(self):
        # A write in flight when the process dies may rewrite the zeroed
        # sector's block whole (the damage gone: masked, never lost), so
        # crashes go on until one's damage is there to report.
        outcomes = []
        for seed in range(1, TRIES + 1):
            base, d, zeroed = self.crash(seed)
            if zeroed:
                wal = self.restart_judges(base, d, zeroed)
                outcomes.append(wal["detected"])
                if wal["detected"]:
                    return
        self.fail("no zeroed synced sector reported in %d crashes (%s)" % (TRIES, outcomes))

    def restart_judges(self, base, d, zeroed):
        """The restart after a crash that zeroed ZEROED: its bitflip_wal
        counts, after asserting nothing failed."""
        (z,) = zeroed
        self.assertEqual((z["class"], z["point"]), ("bitflip_wal", "crash/wal"))
        self.assertEqual(z["bit"] % (512 * 8), 0, "a whole sector, from its first bit")
        self.assertNotEqual(z["bit"], 0, "never the block's header sector")
        r = subprocess.run(
            [STRESS] + base + ["--verification_only=1", "--report=%s/r.json" % d],
            capture_output=True,
            text=True,
        )
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(d, "r.json")) as f:
            rep = json.load(f)
        wal = rep["classes"]["bitflip_wal"]
        self.assertEqual((wal["injected"], wal["detected"] + wal["masked"], wal["lost"]), (1, 1, 0))
        self.assertEqual(rep["verdict"], "pass")
        if wal["detected"]:
            self.assertIn(z["file"], r.stdout + r.stderr, "the report names the segment")
        return wal


if __name__ == "__main__":
    unittest.main()
