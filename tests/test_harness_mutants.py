"""Tests of `crashtest.py mutants --harness` (crashtest/hmutants.py,
harness_mode; docs/mutants.md, "Harness bugs"): that it counts a catch and
a miss right, names the suite that caught, refuses to measure against a
baseline that fails, and never counts a build that does not carry its bug.

The suites are stubbed: a fake build dir whose Criterion "suite" is a
script that fails only for the harness bug it is told to see (the runner
puts HMUTANT in every suite's environment), so the runner's counting is
tested in seconds without building a harness bug."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.hmutants import suite_failed  # noqa: E402
from crashtest.mutants import HARNESS_MUTANTS_FILE, read_mutants  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A Criterion-like suite: its synthesis line fails for the bugs listed in
# $SEES (comma-separated) and, with FAIL_BASELINE set, for the real build.
STUB = r"""#!/bin/sh
fail=0
case ",$SEES," in *",$HMUTANT,"*) [ -n "$HMUTANT" ] && fail=1 ;; esac
[ -z "$HMUTANT" ] && [ -n "$FAIL_BASELINE" ] && fail=1
echo "[====] Synthesis: Tested: 2 | Passing: $((2 - fail)) | Failing: $fail | Crashing: 0 "
exit $fail
"""


def macro(name):
    return "ENG_BROKEN_" + name.upper().replace("-", "_")


class CataloguesTest(unittest.TestCase):
    def test_every_planted_switch_is_in_one_catalogue_and_planted(self):
        # The engine's (tests/mutants.txt) and the harness's catalogues:
        # every switch either names is planted in engine/, faults/ or
        # oracle/, every planted one is in one of them, never in both.
        planted = set()
        for d in ("engine", "faults", "oracle"):
            for fn in os.listdir(os.path.join(REPO, d)):
                if fn.endswith((".c", ".h")):
                    with open(os.path.join(REPO, d, fn)) as f:
                        planted |= set(re.findall(r"ENG_BROKEN_[A-Z0-9_]+", f.read()))
        engine = {m.macro for m in read_mutants()}
        harness = {m.macro for m in read_mutants(HARNESS_MUTANTS_FILE)}
        self.assertTrue(engine and harness)
        self.assertFalse(engine & harness)
        self.assertEqual(planted, engine | harness)


class HarnessRunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="hmut-test-")
        self.d = self.tmp.name
        self.build = os.path.join(self.d, "b")
        self.cat = os.path.join(self.d, "harness_mutants.txt")
        with open(self.cat, "w") as f:
            f.write(
                "# two stub bugs\nstub-seen verdict a bug the stub suite sees\n"
                "stub-unseen ledger a bug no suite sees\n"
            )
        self.stub("stub_suite", None)
        for name in ("stub-seen", "stub-unseen"):
            self.stub("stub_suite", name)
            with open(os.path.join(self.build, "hmutants", name, ".built"), "w") as f:
                f.write(macro(name) + "\n")

    def tearDown(self):
        self.tmp.cleanup()

    def stub(self, suite, hmutant):
        d = os.path.join(self.build, *(["hmutants", hmutant] if hmutant else []), "tests")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, suite)
        with open(p, "w") as f:
            f.write(STUB)
        os.chmod(p, 0o755)

    def run_harness(self, *names, env=None):
        rd = os.path.join(self.d, "report")
        cmd = [
            sys.executable,
            os.path.join(REPO, "crashtest.py"),
            "mutants",
            "--harness",
            "--no-build",
            "--build-dir",
            self.build,
            "--catalogue",
            self.cat,
            "--suites",
            "stub_suite",
            "--report-dir",
            rd,
        ] + list(names)
        p = subprocess.run(
            cmd,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            env=dict(os.environ, SEES="stub-seen", **(env or {})),
            timeout=120,
        )
        doc = None
        if os.path.exists(os.path.join(rd, "mutants.json")):
            with open(os.path.join(rd, "mutants.json")) as f:
                doc = json.load(f)
        return p.returncode, p.stdout, doc, rd

    def test_a_seen_bug_is_caught_by_its_suite_and_an_unseen_one_is_missed(self):
        rc, out, doc, rd = self.run_harness()
        self.assertEqual(rc, 1, out)  # one missed: a hole in the suites
        rows = {r["name"]: r for r in doc["harness"]}
        self.assertTrue(rows["stub-seen"]["caught"], out)
        self.assertEqual(rows["stub-seen"]["suite"], "stub_suite")
        self.assertFalse(rows["stub-unseen"]["caught"], out)
        self.assertIsNone(rows["stub-unseen"]["suite"])
        self.assertIn("harness score: 1 of 2 caught", out)
        with open(os.path.join(rd, "mutants.md")) as f:
            md = f.read()
        self.assertIn("## harness", md)
        self.assertIn("| `stub-seen` | verdict | yes | stub_suite |", md)
        self.assertIn("| `stub-unseen` | ledger | **missed** | - |", md)

    def test_every_bug_caught_exits_zero(self):
        rc, out, doc, _ = self.run_harness("stub-seen")
        self.assertEqual(rc, 0, out)
        self.assertEqual([r["name"] for r in doc["harness"]], ["stub-seen"])

    def test_a_failing_baseline_is_an_error_not_a_catch(self):
        rc, out, doc, _ = self.run_harness(env={"FAIL_BASELINE": "1"})
        self.assertEqual(rc, 2, out)
        self.assertIn("baseline", out)
        self.assertIsNone(doc)  # nothing was measured

    def test_a_build_that_does_not_carry_its_bug_is_an_error(self):
        with open(os.path.join(self.build, "hmutants", "stub-seen", ".built"), "w") as f:
            f.write(macro("stub-unseen") + "\n")
        rc, out, doc, _ = self.run_harness("stub-seen")
        self.assertEqual(rc, 1, out)
        r = doc["harness"][0]
        self.assertFalse(r["caught"])
        self.assertTrue(r.get("error"))

    def test_a_criterion_failure_counts_even_when_the_binary_exits_zero(self):
        line = "[====] Synthesis: Tested: 3 | Passing: 2 | Failing: 1 | Crashing: 0 "
        self.assertTrue(suite_failed("criterion", 0, line))
        self.assertFalse(
            suite_failed(
                "criterion", 0, line.replace("Passing: 2 | Failing: 1", "Passing: 3 | Failing: 0")
            )
        )
        self.assertTrue(suite_failed("criterion", 0, "no synthesis line"))
        self.assertTrue(suite_failed("shell", 0, "ok a\nnot ok b\n"))
        self.assertFalse(suite_failed("shell", 0, "ok a\nok b # SKIP not ok here\n"))
        self.assertTrue(suite_failed("python", None, ""))  # a suite that hung


if __name__ == "__main__":
    unittest.main()
