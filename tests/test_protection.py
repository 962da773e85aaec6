"""Tests of protection-bytes fuzzing: crashtest/stats.py against
known binomial and Poisson cases, and `crashtest.py protection` against the
real stress binary (passes) and the two weakened codes of tests/mutants.txt
(kv-no-parity: caught at w = 1; kv-checks-nothing: caught at every width),
each run time-boxed by --duration 60.

    python3 -m unittest tests.test_protection

The mutant builds are made by `make build/mutants/NAME/stress` (the
Makefile's rule for every line of tests/mutants.txt), which the tests ask
for themselves; a test whose binary make could not build is skipped,
saying which make target makes it."""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from crashtest.common import run_make  # noqa: E402
from crashtest.stats import (  # noqa: E402
    binom_cdf,
    cell_verdict,
    clopper_pearson,
    pattern_odds,
    poisson_bound,
)


class StatsTest(unittest.TestCase):
    def test_binomial_cdf_known_values(self):
        self.assertAlmostEqual(binom_cdf(5, 10, 0.5), 638 / 1024, places=12)
        self.assertAlmostEqual(binom_cdf(0, 20, 0.1), 0.9**20, places=12)
        self.assertAlmostEqual(binom_cdf(1, 3, 1 / 3), 20 / 27, places=12)
        self.assertEqual(binom_cdf(-1, 5, 0.5), 0.0)
        self.assertEqual(binom_cdf(3, 5, 0.0), 1.0)

    def test_clopper_pearson_known_intervals(self):
        # x = 0 and x = n have closed forms: (0, 1 - (a/2)^(1/n)) and ((a/2)^(1/n), 1)
        lo, hi = clopper_pearson(0, 10)
        self.assertEqual(lo, 0.0)
        self.assertAlmostEqual(hi, 1 - 0.025**0.1, places=9)
        lo, hi = clopper_pearson(10, 10)
        self.assertAlmostEqual(lo, 0.025**0.1, places=9)
        self.assertEqual(hi, 1.0)
        # 5 of 10: the textbook (0.1871, 0.8129), symmetric
        lo, hi = clopper_pearson(5, 10)
        self.assertAlmostEqual(lo, 0.18709, places=4)
        self.assertAlmostEqual(hi, 0.81291, places=4)
        self.assertAlmostEqual(lo + hi, 1.0, places=9)
        # 1 of 32 checks (w = 1): the interval holds the rate
        lo, hi = clopper_pearson(100, 3200)
        self.assertLess(lo, 1 / 32)
        self.assertGreater(hi, 1 / 32)

    def test_poisson_bound(self):
        self.assertEqual(poisson_bound(0), 0)
        for lam in (1e-9, 0.5, 3.0, 40.0, 300.0):
            k = poisson_bound(lam)
            tail = 1 - sum(
                math.exp(-lam + i * math.log(lam) - math.lgamma(i + 1)) for i in range(k + 1)
            )
            self.assertLess(tail, 1e-6, lam)
            if k:
                tail_before = tail + math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))
                self.assertGreaterEqual(tail_before, 1e-6, "k is the smallest: %g" % lam)

    def test_pattern_odds_follow_the_construction(self):
        # the oracle's vd_pattern_odds (tests/test_oracle.c checks the same numbers)
        self.assertEqual(pattern_odds("odd", 1), 0.0)
        self.assertEqual(pattern_odds("entry", 1), 1 / 32)
        self.assertEqual(pattern_odds("entry", 2), 2.0**-13)
        self.assertEqual(pattern_odds("span", 1), 1 / 64)
        self.assertEqual(pattern_odds("slot", 2), 2.0**-15)
        self.assertEqual(pattern_odds("entry", 8), 2.0**-61)
        self.assertEqual(pattern_odds("page", 4), 2.0**-31)

    def test_cell_verdicts(self):
        v = cell_verdict(100000, 1, 0.0)  # one single-bit escape: always a failure
        self.assertTrue(v["fail"])
        self.assertEqual(v["bound"], 0)
        v = cell_verdict(32000, 1000, 1000.0)  # 1 in 32, as expected
        self.assertFalse(v["fail"])
        self.assertTrue(v["observable"])
        self.assertTrue(v["consistent"])
        v = cell_verdict(32000, 2000, 1000.0)  # twice the expected rate: far above the bound
        self.assertTrue(v["fail"])
        self.assertFalse(v["consistent"])
        v = cell_verdict(32000, 500, 1000.0)  # half: within the bound, but not the claimed rate
        self.assertFalse(v["fail"])
        self.assertFalse(v["consistent"])
        v = cell_verdict(8192, 0, 1.0)  # w = 2: too few to observe
        self.assertFalse(v["observable"])
        self.assertIsNone(v["consistent"])


def run_protection(binary, widths, duration, keep_going=False):
    """Run `crashtest.py protection`; (exit code, summary)."""
    with tempfile.TemporaryDirectory(prefix="test-protection-") as d:
        argv = [
            sys.executable,
            os.path.join(REPO, "crashtest.py"),
            "protection",
            "--duration",
            str(duration),
            "--widths",
            widths,
            "--run-seconds",
            "8",
            "--seed",
            "18",
            "--stress-binary",
            binary,
            "--report-dir",
            os.path.join(d, "report"),
            "--work-dir",
            d,
        ]
        if keep_going:
            argv.append("--keep-going")
        p = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=duration + 300
        )
        with open(os.path.join(d, "report", "summary.json")) as f:
            return p.returncode, json.load(f), p.stdout.decode(errors="replace")


BUILD = os.environ.get("BUILD", "build")  # as tests/run_all.sh passes it


def binary_or_skip(tc, name):
    """The stress binary of BUILD (NAME: a planted bug's), made first as
    tests/crashtestrun.py's built() does, so `make test` runs these
    cases instead of skipping them; skipped only when make cannot."""
    path = (
        os.path.join(REPO, BUILD, name, "stress") if name else os.path.join(REPO, BUILD, "stress")
    )
    san = "SANITIZER=" in os.environ.get("MAKEFLAGS", "") or os.environ.get("SANITIZER")
    if BUILD == "build" or san:
        run_make(
            ["make", "-s", os.path.relpath(path, REPO)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    if not os.path.isfile(path):
        tc.skipTest("%s missing: make %s" % (path, os.path.relpath(path, REPO)))
    return path


class ProtectionModeTest(unittest.TestCase):
    def test_real_code_passes(self):
        rc, s, out = run_protection(binary_or_skip(self, None), "1,2", 20)
        self.assertEqual(rc, 0, out)
        self.assertTrue(s["pass"])
        for w in ("1", "2"):
            row = s["protection"][w]
            self.assertGreater(row["checked"], 1000, out)
            self.assertEqual(row["patterns"]["single"]["escaped"], 0)
            self.assertEqual(row["patterns"]["double_parts"]["escaped"], 0)
        self.assertIn("1", s["protection_widths"])

    def test_no_parity_caught_at_w1_within_60s(self):
        rc, s, out = run_protection(binary_or_skip(self, "mutants/kv-no-parity"), "1", 60)
        self.assertEqual(rc, 1, out)
        self.assertFalse(s["pass"])
        self.assertTrue(s["failures"], out)
        self.assertLessEqual(s["first_failure_seconds"], 60 + 8 + 5, out)  # started within 60 s
        self.assertEqual(s["failures"][0]["w"], 1)

    def test_checks_nothing_caught_at_every_width(self):
        rc, s, out = run_protection(
            binary_or_skip(self, "mutants/kv-checks-nothing"), "1,2,4,8", 60, keep_going=True
        )
        self.assertEqual(rc, 1, out)
        failed = {f["w"] for f in s["failures"]}
        self.assertEqual(failed, {1, 2, 4, 8}, out)
        for w in ("1", "2", "4", "8"):
            self.assertEqual(s["protection"][w]["patterns"]["single"]["detected"], 0)


class MutantsHuntTheCodesWithProtectionTest(unittest.TestCase):
    def test_a_bug_of_the_codes_is_hunted_by_protection_checked_on_the_real_engine_and_its_repro_runs(  # noqa: E501
        self,
    ):
        mutant = binary_or_skip(self, "mutants/kv-no-parity")
        binary_or_skip(self, None)  # the real engine's replay
        with tempfile.TemporaryDirectory(prefix="test-protection-") as d:
            rd = os.path.join(d, "r")
            p = subprocess.run(
                [
                    sys.executable,
                    os.path.join(REPO, "crashtest.py"),
                    "mutants",
                    "--no-build",
                    "--budget",
                    "60",
                    "--seed",
                    "18",
                    "--build-dir",
                    os.path.join(REPO, BUILD),
                    "--report-dir",
                    rd,
                    "kv-no-parity",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=600,
            )
            out = p.stdout.decode(errors="replace")
            self.assertEqual(p.returncode, 0, out)
            with open(os.path.join(rd, "mutants.json")) as f:
                m = json.load(f)["mutants"][0]
            self.assertEqual(
                (m["mode"], m["caught"], m["real_engine_replay"], m["planted_bug_seen"]),
                ("protection", True, "passes", ["kv-no-parity"]),
                out,
            )
            self.assertIn("bitflip_cache", m["classes"])
            self.assertTrue(m["repro"].startswith("mkdir -p "), m["repro"])
            self.assertIn(mutant, m["repro"])
            # The printed repro replays the failed run: the planted bug fails it again.
            r = subprocess.run(
                m["repro"],
                shell=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=300,
            )
            self.assertEqual(r.returncode, 1, r.stdout.decode(errors="replace")[-2000:])
            self.assertIn(b"planted bug 'kv-no-parity'", r.stdout)


if __name__ == "__main__":
    unittest.main()
