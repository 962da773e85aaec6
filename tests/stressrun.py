"""What the Python tests that run build/stress share: its path ($BUILD,
default build, as tests/run_all.sh), a run of it, an op trace's lines,
and a class set-up that builds it or skips."""

import os
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRESS = os.path.join(ROOT, os.environ.get("BUILD", "build"), "stress")


def stress(*args, cwd=None):
    """Run stress with ARGS: (returncode, stdout, stderr)."""
    p = subprocess.run([STRESS] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def trace_lines(path):
    """The op lines of the trace at PATH (comments dropped), newlines off."""
    with open(path) as f:
        return [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]


def need_stress():
    """For setUpClass: build build/stress if it is missing or stale, else
    skip the class."""
    r = subprocess.run(["make", "-s", os.path.relpath(STRESS, ROOT)], cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if r.returncode or not os.path.exists(STRESS):
        raise unittest.SkipTest("build/stress missing")
