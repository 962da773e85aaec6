"""What the Python tests that run build/stress share: its path ($BUILD,
default build, as tests/run_all.sh), a run of it, an op trace's lines,
a class set-up that builds it or skips, and a test case that runs it on
a fresh database of its own with a few faults (OneThreadDb)."""

import os
import shutil
import subprocess
import tempfile
import unittest

from crashtest.common import run_make
from crashtest.cand import trace_ops_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRESS = os.path.join(ROOT, os.environ.get("BUILD", "build"), "stress")


def stress(*args, cwd=None):
    """Run stress with ARGS: (returncode, stdout, stderr)."""
    p = subprocess.run(
        [STRESS] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        cwd=cwd,
    )
    return p.returncode, p.stdout, p.stderr


def trace_lines(path):
    """The op lines of the trace at PATH (comments dropped), newlines off:
    crashtest's reader, which ends them at a killed process's zero bytes."""
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return trace_ops_of(path)


def need_stress():
    """For setUpClass: build build/stress if it is missing or stale, else
    skip the class."""
    r = run_make(
        ["make", "-s", os.path.relpath(STRESS, ROOT)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if r.returncode or not os.path.exists(STRESS):
        raise unittest.SkipTest("build/stress missing")


class StressDir(unittest.TestCase):
    """A case whose tests run build/stress (made first, or the class
    skipped) in a directory of their own, self.d, removed after each."""

    @classmethod
    def setUpClass(cls):
        need_stress()

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-stress-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)


class OneThreadDb(StressDir):
    """A case whose tests run build/stress with one thread on a database in
    a directory of their own (self.d), with FAULTS before their own
    options (a later option wins)."""

    FAULTS = [
        "--read_fault_one_in=20",
        "--sync_fault_one_in=30",
        "--cache_size=64K",
        "--page_size=4096",
        "--checkpoint_one_in=50",
        "--max_key=500",
        "--threads=1",
    ]

    def run_db(self, *args):
        return stress("--db=%s/db" % self.d, "--destroy_db_initially", *(self.FAULTS + list(args)))

    def ops_of(self, path):
        """The op lines of the trace at PATH, newlines kept (a list to write
        back as a trace)."""
        return [line + "\n" for line in trace_lines(path)]

    def assert_not_op_lines(self, texts):
        """Each of TEXTS, as a --replay_ops file, is a usage error that
        creates no database."""
        bad = os.path.join(self.d, "bad.trace")
        for text in texts:
            with open(bad, "w") as f:
                f.write(text)
            rc, out, err = self.run_db("--replay_ops=" + bad)
            self.assertEqual(rc, 2, text + out + err)
            self.assertIn("not an op line", err)
        self.assertFalse(os.path.exists(os.path.join(self.d, "db")))
