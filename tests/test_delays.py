"""Pauses that widen race windows (stress --delay_one_in, --delay_max_us;
faults/delay.c), seen from the stress driver: a run with pauses and two
threads passes on the real engine, its report counts the pauses apart from
every fault class (the oracle takes no pause for an injection), its ledger
names each pause's site, a traced one-thread run replays its pauses op for
op, and a bad value is a usage error that creates nothing.  The library's
own claims (every site, one seed one set of pauses) are
tests/test_faults_delays_pause_at_every_site_and_replay.c's."""

import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.params import DELAY_SITES  # noqa: E402
from tests.stressrun import need_stress, stress  # noqa: E402

HOOK_SITES = ["hook/%s/%s" % (k, s) for k in ("read", "write", "sync") for s in ("before", "after")]


def ledger_of(path):
    out = []
    with open(path) as f:
        for line in f:
            out.append(json.loads(line))
    return out


class TestDelays(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-delays-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def run_stress(self, name, *args):
        db = os.path.join(self.d, name)
        rc, out, err = stress(
            "--db=" + db,
            "--destroy_db_initially",
            "--max_key=400",
            "--page_size=4096",
            "--cache_size=64K",
            "--checkpoint_one_in=100",
            "--report=" + db + ".json",
            *args
        )
        return rc, err, db

    def test_a_run_with_pauses_passes_and_counts_them_apart_from_the_faults(self):
        rc, err, db = self.run_stress(
            "db",
            "--threads=2",
            "--ops_per_thread=1500",
            "--delay_one_in=8",
            "--delay_max_us=500",
            "--read_fault_one_in=300",
        )
        self.assertEqual(rc, 0, err)
        with open(db + ".json") as f:
            rep = json.load(f)
        lines = ledger_of(os.path.join(db + ".expected", "ledger"))
        pauses = [j for j in lines if j.get("class") == "delay"]
        self.assertGreater(len(pauses), 50)
        self.assertEqual(rep["delays"], len(pauses))
        self.assertNotIn("delay", rep["classes"])
        faults = [j for j in lines if j.get("class") != "delay"]
        self.assertEqual(
            sum(c["injected"] for c in rep["classes"].values()),
            len(faults),
            "the oracle counted a pause as an injection",
        )
        for j in pauses:
            self.assertTrue(j["point"].startswith(("delay/", "hook/", "fault/")), j)
            self.assertTrue(0 <= j["len"] <= 500, j)
        # Every I/O error injected pauses its thread right after its line
        # (fault/slow, every time): the next line of that thread is it.
        errors = [i for i, j in enumerate(lines) if j.get("err")]
        self.assertGreater(len(errors), 0)
        for i in errors:
            after = [j for j in lines[i + 1 :] if j.get("thread") == lines[i].get("thread")]
            self.assertTrue(after and after[0].get("point") == "fault/slow", (lines[i], after[:1]))
        sites = {j["point"] for j in pauses}
        self.assertIn("delay/commit/before_publish", sites)
        self.assertIn("hook/sync/before", sites)
        self.assertTrue(any(s.startswith("delay/checkpoint/") for s in sites), sites)
        reached = rep["fault_points_reached"]
        self.assertGreater(reached["delay/wal/before_sync"]["fired"], 0)

    def test_a_traced_run_replays_its_pauses_op_for_op(self):
        common = ["--threads=1", "--delay_one_in=5", "--delay_max_us=200"]
        trace = os.path.join(self.d, "trace")
        rc, err, db = self.run_stress("a", "--ops_per_thread=400", "--trace_ops=" + trace, *common)
        self.assertEqual(rc, 0, err)
        rc, err, db2 = self.run_stress("b", "--replay_ops=" + trace, *common)
        self.assertEqual(rc, 0, err)

        def pauses(d):
            return [
                (j["point"], j["len"], j["op"])
                for j in ledger_of(os.path.join(d + ".expected", "ledger"))
                if j.get("class") == "delay" and j.get("phase") == "run"
            ]

        first = pauses(db)
        self.assertGreater(len(first), 20)
        self.assertEqual(first, pauses(db2))

    def test_named_sites_alone_pause(self):
        sites = ["hook/sync/after", "delay/commit/before_publish"]
        rc, err, db = self.run_stress(
            "s",
            "--threads=2",
            "--ops_per_thread=800",
            "--delay_one_in=2",
            "--delay_max_us=100",
            "--delay_sites=" + " , ".join(sites),
        )
        self.assertEqual(rc, 0, err)
        at = {
            j["point"]
            for j in ledger_of(os.path.join(db + ".expected", "ledger"))
            if j.get("class") == "delay"
        }
        self.assertEqual(at, set(sites))

    def test_a_kill_that_fires_pauses_first_while_delays_are_on(self):
        # Odds of 1 in 10^6 at every other site: the one pause is the kill's.
        for delays, want in ((["--delay_one_in=1000000", "--delay_max_us=2000"], 1), ([], 0)):
            rc, err, db = self.run_stress(
                "k%d" % want,
                "--threads=2",
                "--ops_per_thread=100000",
                "--kill_random_test=300",
                *delays
            )
            self.assertEqual(rc, -9, err)
            ledger = ledger_of(os.path.join(db + ".expected", "ledger"))
            late = [i for i, j in enumerate(ledger) if j.get("point") == "kill/late"]
            self.assertEqual(len(late), want, ledger[-3:])
            if want:
                kill = [i for i, j in enumerate(ledger) if j.get("class") == "kill"]
                self.assertEqual(len(kill), 1)
                self.assertLess(late[0], kill[0], "the pause comes before the kill's line")
                self.assertEqual(ledger[late[0]].get("thread"), ledger[kill[0]].get("thread"))

    def test_crashtests_sites_are_the_engines_delay_points_and_the_hooks(self):
        rc, out, err = stress("--list_fault_points")
        self.assertEqual(rc, 0, err)
        engine = [w for w in out.split() if w.startswith("delay/")]
        self.assertTrue(engine)
        self.assertEqual(
            sorted(DELAY_SITES), sorted(engine + HOOK_SITES + ["kill/late", "fault/slow"])
        )

    def test_a_bad_value_is_a_usage_error_that_creates_nothing(self):
        for bad in (
            ["--delay_max_us=0"],
            ["--delay_one_in=-1"],
            ["--delay_one_in=x"],
            ["--delay_sites=hook/sync/after"],
            ["--delay_one_in=3", "--delay_sites=delay/no/such"],
            ["--delay_one_in=3", "--delay_sites=kill/wal/after_sync"],
            ["--delay_one_in=3", "--delay_sites=,"],
        ):
            db = os.path.join(self.d, "bad")
            rc, out, err = stress(
                "--db=" + db, "--destroy_db_initially", "--ops_per_thread=10", *bad
            )
            self.assertEqual(rc, 2, (bad, err))
            self.assertIn("delay_", err)
            self.assertFalse(os.path.exists(db), bad)


if __name__ == "__main__":
    unittest.main()
