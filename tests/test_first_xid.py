"""The first transaction id of a new database (engine eng_options.first_xid,
stress --first_xid, crashtest's draw of it): a database that starts as far
on as a long history would have taken it.  The engine's own claims are
tests/test_txn_first_xid_starts_the_ids_further_on.c's; these are the
tools':

- stress passes --first_xid to the engine (the first commit gets that id,
  and a run across a commit-log page passes its checks), and a value out
  of range is a usage error that creates nothing;
- crashtest draws it for one database in four, log-uniform in its range,
  after every other creation-time draw (which stay what they were), and
  --set first_xid pins it.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.params import (  # noqa: E402
    DB_CHOICES,
    FIRST_XID_ONE_IN,
    FIRST_XID_RANGE,
    Config,
    draw_db_params,
)
from tests.stressrun import need_stress, stress  # noqa: E402

ENGINE_TOOL = os.path.join(ROOT, os.environ.get("BUILD", "build"), "engine-tool")


class TestFirstXidDraw(unittest.TestCase):
    def test_one_database_in_four_starts_further_on_and_the_other_draws_stay(self):
        drawn = [draw_db_params(seed, Config()) for seed in range(400)]
        firsts = [d["first_xid"] for d in drawn if "first_xid" in d]
        self.assertTrue(
            400 // FIRST_XID_ONE_IN * 0.7 < len(firsts) < 400 // FIRST_XID_ONE_IN * 1.3, len(firsts)
        )
        self.assertTrue(all(FIRST_XID_RANGE[0] <= f <= FIRST_XID_RANGE[1] for f in firsts))
        self.assertTrue(
            min(firsts) < 10000 < 100000 < max(firsts), "log-uniform: small and large starts"
        )
        # Drawn last: the same seeds with the draw taken out give the same
        # other options.
        import crashtest.params as params

        saved = params.FIRST_XID_ONE_IN
        try:
            params.FIRST_XID_ONE_IN = 1 << 62
            again = [draw_db_params(seed, Config()) for seed in range(400)]
        finally:
            params.FIRST_XID_ONE_IN = saved
        for a, b in zip(drawn, again):
            self.assertEqual({k: v for k, v in a.items() if k != "first_xid"}, b)
        self.assertNotIn("first_xid", DB_CHOICES)

    def test_set_pins_it(self):
        for seed in range(50):
            self.assertEqual(
                draw_db_params(seed, Config(pinned={"first_xid": "16000"}))["first_xid"], "16000"
            )


class TestFirstXidInStress(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_stress()
        if not os.path.exists(ENGINE_TOOL):
            raise unittest.SkipTest("build/engine-tool missing")

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-first-xid-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def test_the_engine_starts_its_ids_at_first_xid_across_a_commit_log_page(self):
        # 4 KiB pages hold 16,224 ids a commit-log page: the run crosses
        # into the second, and its checks pass.
        rc, out, err = stress(
            "--db=%s/db" % self.d,
            "--destroy_db_initially",
            "--threads=1",
            "--page_size=4096",
            "--ops_per_thread=300",
            "--max_key=200",
            "--first_xid=16200",
        )
        self.assertEqual(rc, 0, out + err)
        p = subprocess.run(
            [ENGINE_TOOL, "stat", "%s/db" % self.d], stdout=subprocess.PIPE, universal_newlines=True
        )
        self.assertEqual(p.returncode, 0)
        seqs = [v for k, v in walk(json.loads(p.stdout)) if k == "last_seq"]
        self.assertTrue(seqs and 16224 < seqs[0] < 16200 + 300, seqs)

    def test_a_first_xid_out_of_range_is_a_usage_error(self):
        for v in ("0", str((1 << 23) + 1), "x"):
            rc, out, err = stress(
                "--db=%s/db" % self.d,
                "--destroy_db_initially",
                "--ops_per_thread=1",
                "--first_xid=" + v,
            )
            self.assertEqual(rc, 2, v + out + err)
            self.assertIn("first_xid", err)
            self.assertFalse(os.path.exists("%s/db" % self.d), "a usage error creates nothing")


def walk(d):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from walk(v)
        else:
            yield k, v


if __name__ == "__main__":
    unittest.main()
