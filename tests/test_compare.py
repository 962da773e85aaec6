"""crashtest.py compare (crashtest/compare.py): the same run on several
engines, its fault classes kept to those every engine is served, one
table.  Usage errors exit 2 with nothing made; a short real compare of
our engine and SQLite writes compare.json whose table is each run's own
summary.json class table.

    python3 -m unittest tests.test_compare"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest import compare as cmp  # noqa: E402
from crashtest.cli import main  # noqa: E402
from crashtest.compare import common_classes, engine_table, parse_engines  # noqa: E402
from crashtest.common import UsageError  # noqa: E402
from crashtest.params import FAILURE_KEYS, FAULTS, OUTCOMES  # noqa: E402
from tests.stressrun import need_stress  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
STRESS = os.path.join(ROOT, BUILD, "stress")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
CRASHTEST = os.path.join(ROOT, "crashtest.py")


def compare(*args, timeout=300):
    """crashtest.py compare ARGS: (exit status, stdout, stderr)."""
    r = subprocess.run(
        [sys.executable, CRASHTEST, "compare"] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=timeout,
        cwd=ROOT,
    )
    return r.returncode, r.stdout, r.stderr


class TestUsage(unittest.TestCase):
    """A usage error exits 2 with a message, runs nothing, makes no folder."""

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ct-compare-")
        self.rd = os.path.join(self.d, "out")
        # a stress binary whose promise tables serve no fault class
        self.fake = os.path.join(self.d, "stress")
        with open(self.fake, "w") as f:
            f.write('#!/bin/sh\necho \'{"door": ["power_loss", "kill"], "rows": []}\'\n')
        os.chmod(self.fake, 0o755)

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def refused(self, args, says):
        rc, out, err = compare(*(list(args) + ["--report-dir", self.rd]), timeout=60)
        self.assertEqual(rc, 2, out + err)
        self.assertIn(says, err)
        self.assertFalse(os.path.exists(self.rd), "a refused compare made its folder")
        self.assertNotIn("compare: ours", out, "a refused compare ran an engine")

    def test_unknown_engine(self):
        self.refused(["--engines", "ours,mysql", "--duration", "5"], "unknown: mysql")

    def test_engine_twice_or_none(self):
        self.refused(["--engines", "ours,ours", "--duration", "5"], "named twice")
        self.refused(["--engines", ",", "--duration", "5"], "--engines")

    def test_bad_duration(self):
        for d in ("0", "-3", "soon", "nan"):
            self.refused(["--engines", "ours", "--duration", d], "--duration")

    def test_missing_duration_or_mode(self):
        self.refused(["--engines", "ours"], "--duration")
        self.refused(["--engines", "ours", "--duration", "5", "--mode", "fast"], "--mode")

    def test_empty_common_set(self):
        self.refused(
            ["--engines", "ours,sqlite", "--duration", "5", "--stress-binary", self.fake],
            "no fault class is served to every engine",
        )

    def test_earlier_compare_refused(self):
        os.makedirs(self.rd)
        with open(os.path.join(self.rd, "compare.json"), "w") as f:
            f.write("{}")
        rc, out, err = compare(
            "--engines", "ours", "--duration", "5", "--report-dir", self.rd, timeout=60
        )
        self.assertEqual(rc, 2, out + err)
        self.assertIn("earlier compare", err)
        self.assertEqual(os.listdir(self.rd), ["compare.json"])


class TestClasses(unittest.TestCase):
    """The common set is what every engine's door serves; ours takes all."""

    def test_parse_engines(self):
        self.assertEqual(parse_engines(" ours, sqlite "), ["ours", "sqlite"])
        self.assertRaises(UsageError, parse_engines, "")

    def test_common_set(self):
        need_stress()
        common, served = common_classes(STRESS, ["ours"], "simple")
        self.assertEqual(common, list(FAULTS))
        common, served = common_classes(STRESS, ["ours", "rocksdb", "sqlite"], "simple")
        self.assertTrue(common)
        for e in ("rocksdb", "sqlite"):
            out = subprocess.run(
                [STRESS, "--engine", e, "--promises"], stdout=subprocess.PIPE, check=True
            ).stdout
            door = json.loads(out.decode())["door"]
            self.assertTrue(set(common) <= set(door), (e, common, door))
        self.assertEqual(common, [c for c in served["rocksdb"] if c in served["sqlite"]])

    def test_engine_table_hides_no_count(self):
        zero = {k: 0 for k in OUTCOMES + FAILURE_KEYS}
        rows = {c: dict(zero) for c in list(FAULTS) + ["power_loss", "kill", "unattributed"]}
        rows["torn_write"]["injected"] = 3
        rows["read_error"]["lost"] = 1
        t = engine_table({"classes": rows}, ["read_error"])
        self.assertEqual(
            sorted(t), sorted(["read_error", "power_loss", "kill", "unattributed", "torn_write"])
        )
        self.assertEqual(t["read_error"]["failures"], 1)
        self.assertEqual(t["torn_write"]["injected"], 3)


class TestOneRunFails(unittest.TestCase):
    """A run that fails makes the compare exit 1, after every engine ran;
    its row counts the failure (the runs stood in for)."""

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ct-compare-fail-")
        self.fake = os.path.join(self.d, "stress")
        with open(self.fake, "w") as f:
            f.write('#!/bin/sh\necho \'{"door": ["read_error", "sync_error"], "rows": []}\'\n')
        os.chmod(self.fake, 0o755)
        self.ran = []
        self.real = cmp.run_mutant
        cmp.run_mutant = self.fake_run

    def tearDown(self):
        cmp.run_mutant = self.real
        shutil.rmtree(self.d, ignore_errors=True)

    def fake_run(self, cmd, log, budget):
        """ours fails with a lost commit blamed on sync_error; sqlite passes."""
        self.ran.append(cmd)
        engine = cmd[cmd.index("--engine") + 1]
        rd = cmd[cmd.index("--report-dir") + 1]
        os.makedirs(rd)
        row = {k: 0 for k in OUTCOMES + FAILURE_KEYS}
        classes = {c: dict(row) for c in list(FAULTS) + ["power_loss", "kill", "unattributed"]}
        classes["sync_error"].update(injected=5, detected=4, lost=1 if engine == "ours" else 0)
        failed = 1 if engine == "ours" else 0
        summary = {
            "verdict": "fail" if failed else "pass",
            "failed": failed,
            "iterations_total": 7,
            "classes": classes,
        }
        with open(os.path.join(rd, "summary.json"), "w") as f:
            json.dump(summary, f)
        return failed

    def test_exit_1_and_the_failure_counted(self):
        rd = os.path.join(self.d, "out")
        argv = ["compare", "--engines", "ours,sqlite", "--duration", "3", "--seed", "5"]
        argv += ["--report-dir", rd, "--stress-binary", self.fake]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            rc = main(argv)
        self.assertIn("ours     fail: 7 iterations, 1 failed", out.getvalue())
        self.assertEqual(rc, 1)
        self.assertEqual(len(self.ran), 2)
        for cmd in self.ran:
            self.assertEqual(cmd[cmd.index("--faults") + 1], "read_error,sync_error")
            self.assertEqual(cmd[cmd.index("--seed") + 1], "5")
        with open(os.path.join(rd, "compare.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["verdict"], "fail")
        self.assertEqual(doc["classes"], ["read_error", "sync_error"])
        self.assertEqual(doc["runs"]["ours"]["verdict"], "fail")
        self.assertEqual(doc["runs"]["sqlite"]["verdict"], "pass")
        self.assertEqual(doc["table"]["ours"]["sync_error"]["lost"], 1)
        self.assertEqual(doc["table"]["ours"]["sync_error"]["failures"], 1)
        self.assertEqual(doc["table"]["sqlite"]["sync_error"]["injected"], 5)


class TestRealCompare(unittest.TestCase):
    """ours and sqlite for a few seconds each: one table, each engine's
    rows its own run's summary.json."""

    @classmethod
    def setUpClass(cls):
        need_stress()
        cls.d = tempfile.mkdtemp(prefix="ct-compare-real-")
        cls.rd = os.path.join(cls.d, "out")
        cls.rc, cls.out, cls.err = compare(
            "--engines",
            "ours,sqlite",
            "--duration",
            "6",
            "--seed",
            "11",
            "--report-dir",
            cls.rd,
            "--stress-binary",
            STRESS,
            "--powerloss-binary",
            POWERLOSS,
        )
        with open(os.path.join(cls.rd, "compare.json")) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.d, ignore_errors=True)

    def test_passes_and_names_both(self):
        self.assertEqual(self.rc, 0, self.out + self.err)
        doc = self.doc
        self.assertEqual(doc["engines"], ["ours", "sqlite"])
        self.assertEqual((doc["mode"], doc["seed"], doc["duration_s"]), ("simple", 11, 6))
        for k in ("commit", "date", "classes", "table", "runs"):
            self.assertIn(k, doc)
        self.assertTrue(doc["classes"])
        self.assertNotIn("bitflip_wal", doc["classes"])  # the door serves SQLite no log flips
        self.assertTrue(os.path.isfile(os.path.join(self.rd, "compare.html")))
        self.assertIn("sqlite", self.out)

    def test_table_is_each_runs_summary(self):
        for e in ("ours", "sqlite"):
            run = self.doc["runs"][e]
            self.assertEqual(run["verdict"], "pass")
            with open(os.path.join(self.rd, e, "summary.json")) as f:
                s = json.load(f)
            self.assertEqual(run["iterations"], s["iterations_total"])
            self.assertGreater(run["iterations"], 0)
            self.assertEqual(s["arguments"][s["arguments"].index("--seed") + 1], "11")
            table = self.doc["table"][e]
            for c in self.doc["classes"] + ["power_loss", "kill"]:
                self.assertIn(c, table, (e, c))
            # every row of the run's summary with a count is in the table, equal;
            # outside the common set only the crash cycle's own: the log sweep
            # of our restarts (bitflip_wal), a power-loss step's tear (torn_write)
            for c, row in s["classes"].items():
                if not any(row.values()):
                    continue
                for k in OUTCOMES + FAILURE_KEYS:
                    self.assertEqual(table[c][k], row[k], (e, c, k))
                if c not in self.doc["classes"] + ["power_loss", "kill"]:
                    self.assertIn(c, ("bitflip_wal", "torn_write"), (e, c, row))
            injected = sum(row["injected"] for row in table.values())
            self.assertEqual(injected, sum(r["injected"] for r in s["classes"].values()))


if __name__ == "__main__":
    unittest.main()
