"""crashtest.py mutants' real-engine check (crashtest/mutants.py
real_check, docs/mutants.md): a catch counts only when the real engine
does not fail the same way, and a start the planted bug wrote is not
held against it.  The commands it runs are stood in for (run_check)."""

import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest import mutants  # noqa: E402


class TestRealEngineCheck(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ct-realcheck-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def real_check_with(self, db_age, fresh_run_kinds):
        """real_check on a catch of kind lost whose replay from its start
        fails the same way with the real binaries; the same run from a
        fresh database fails with FRESH_RUN_KINDS (none: it passes)."""
        art = os.path.join(self.d, "failures", "r0-i3-9")
        os.makedirs(art)
        build = os.path.join(self.d, "build")
        os.makedirs(build)
        for b in ("stress", "powerloss"):
            with open(os.path.join(build, b), "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(os.path.join(build, b), 0o755)
        failed = {
            "artifacts": art,
            "t_end": 5,
            "db_age": db_age,
            "index": 3,
            "failure": {"kind": "lost"},
        }
        # the mutant's run: seed 42, its binaries under m/
        summary = {
            "failures": [failed],
            "jobs": 1,
            "arguments": ["simple", "--seed", "42", "--stress-binary", "m/stress"],
        }
        ran = []

        def fake(cmd, timeout=600):
            ran.append(cmd)
            if "repro" in cmd:
                return 1, "crashtest: reproduced: lost at step 1 (workload)"
            rd = cmd[cmd.index("--report-dir") + 1]
            with open(os.path.join(rd, "summary.json"), "w") as f:
                json.dump({"failures": [{"failure": {"kind": k}} for k in fresh_run_kinds]}, f)
            return (1 if fresh_run_kinds else 0), ""

        r = {"caught": True, "kind": "lost", "budget_s": 90, "seed": 42}
        saved = mutants.run_check
        mutants.run_check = fake
        try:
            mutants.real_check(r, summary, build, [])
        finally:
            mutants.run_check = saved
        return r, ran

    def test_a_catch_from_a_start_the_planted_bug_wrote_counts_if_the_real_engine_passes_the_run_afresh(  # noqa: E501
        self,
    ):
        # seal-before-witness (seed 20261801): its second iteration failed;
        # the real engine, replaying from the start the mutant had written
        # (log blocks whose first sector the bug had sealed wrong), failed
        # the same way and the catch was refused as no evidence.
        r, ran = self.real_check_with(db_age=2, fresh_run_kinds=[])
        self.assertTrue(r["caught"], r)
        self.assertEqual(len(ran), 2)
        fresh = ran[1]
        self.assertEqual(fresh[fresh.index("--seed") + 1], "42")
        self.assertEqual(fresh[fresh.index("--iterations") + 1], "4")
        self.assertEqual(
            fresh[fresh.index("--stress-binary") + 1], os.path.join(self.d, "build", "stress")
        )
        self.assertNotIn("m/stress", fresh)
        self.assertIn("passes the same run from a fresh database", r["real_engine_replay"])

    def test_a_catch_the_real_engine_also_fails_afresh_is_no_evidence(self):
        r, _ = self.real_check_with(db_age=2, fresh_run_kinds=["lost"])
        self.assertFalse(r["caught"])
        self.assertIn("no evidence", r["message"])

    def test_a_catch_on_a_database_s_first_iteration_is_judged_by_its_replay_alone(self):
        # its start was made by crashtest, not by the planted bug
        r, ran = self.real_check_with(db_age=0, fresh_run_kinds=[])
        self.assertFalse(r["caught"])
        self.assertEqual(len(ran), 1)

    def tries_for(self, meta):
        art = os.path.join(self.d, "art")
        os.makedirs(art, exist_ok=True)
        if meta is not None:
            with open(os.path.join(art, "meta.json"), "w") as f:
                json.dump(meta, f)
        return mutants.real_replay_tries(art)

    def test_a_replay_of_several_threads_is_tried_several_times(self):
        # not deterministic: one passing replay would clear the real engine
        self.assertEqual(self.tries_for({"params": {"threads": 2}}), mutants.REAL_REPLAY_TRIES)
        self.assertGreater(mutants.REAL_REPLAY_TRIES, 1)
        self.assertEqual(self.tries_for({"params": {}}), mutants.REAL_REPLAY_TRIES)
        self.assertEqual(self.tries_for(None), mutants.REAL_REPLAY_TRIES)
        self.assertEqual(self.tries_for({"params": {"threads": 1}}), 1)

    def test_the_replay_command_asks_for_the_tries(self):
        art = os.path.join(self.d, "failures", "r0-i3-9")
        _, ran = self.real_check_with(db_age=0, fresh_run_kinds=[])
        cmd = ran[0]
        self.assertEqual(cmd[cmd.index("--tries") + 1], str(mutants.real_replay_tries(art)))


if __name__ == "__main__":
    unittest.main()
