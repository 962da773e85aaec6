#!/usr/bin/env python3
"""Holds the Python of the tree to its style: black and flake8.

The Python is crashtest.py, crashtest/, tools/, bench/ and tests/.  black
(Debian's black, 23.x: pyproject.toml) formats it at 100 columns; flake8
(Debian's python3-flake8: .flake8) checks what black leaves to people:
names, unused imports, lines still too long.

Usage: tools/py_style.py [black|flake8 ...] [--fix]

    black     black --check: the files black would reformat, and how
    flake8    flake8's findings, one a line
    (none)    both
    --fix     apply black instead of checking it (flake8 still checks)

Exit 0 when every check passes, 1 when one finds something, 2 on a usage
error, 3 when a tool is missing (the message names the Debian package to
install; make deps installs both).  A missing tool is a failure, never a
pass.  Standard library only; run by make lint and tests/run_all.sh."""

import argparse
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What black and flake8 are given, relative to the repository: each finds
# the *.py below a folder itself (black skips what .gitignore names,
# flake8 what .flake8 excludes).
PATHS = ("crashtest.py", "crashtest", "tools", "bench", "tests")
# The Debian package of each tool, for the message when it is missing.
PACKAGES = {"black": "black", "flake8": "python3-flake8"}
EXIT_MISSING = 3


def candidates(tool):
    """The commands that may run TOOL, in the order tried: the module in
    this interpreter, in Debian's (python3 on PATH may be another, pyenv's
    say, without Debian's modules), then a script on PATH."""
    pythons = [sys.executable]
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        pythons.append("/usr/bin/python3")
    out = [[py, "-m", tool] for py in pythons if os.path.exists(py)]
    script = shutil.which(tool)
    if script:
        out.append([script])
    return out


def find_tool(tool):
    """The first command of candidates(TOOL) whose --version runs, or None."""
    for cmd in candidates(tool):
        try:
            r = subprocess.run(
                cmd + ["--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        except OSError:
            continue
        if r.returncode == 0:
            return cmd
    return None


def run_check(tool, fix):
    """Run TOOL over PATHS (black checks them, or formats them with FIX):
    its exit code, EXIT_MISSING when TOOL is not installed."""
    cmd = find_tool(tool)
    if cmd is None:
        print(
            "py_style: %s is not installed: install Debian's %s (sudo apt-get install %s, "
            "or make deps)" % (tool, PACKAGES[tool], PACKAGES[tool]),
            file=sys.stderr,
        )
        return EXIT_MISSING
    paths = [p for p in PATHS if os.path.exists(os.path.join(REPO, p))]
    if tool == "black":
        args = ["--quiet"] if fix else ["--check", "--diff", "--quiet"]
    else:
        args = []
    return subprocess.run(cmd + args + paths, cwd=REPO).returncode


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Check the Python of crashtest.py, crashtest/, tools/, bench/ and tests/ "
        "with black and flake8."
    )
    ap.add_argument("tools", nargs="*", metavar="TOOL", help="black, flake8 (default: both)")
    ap.add_argument("--fix", action="store_true", help="apply black instead of checking it")
    a = ap.parse_args(argv)
    for tool in a.tools:
        if tool not in PACKAGES:
            ap.error("unknown tool %r: black or flake8" % tool)
    worst = 0
    for tool in a.tools or ["black", "flake8"]:
        rc = run_check(tool, a.fix)
        if rc == EXIT_MISSING:
            worst = EXIT_MISSING
        elif rc != 0:
            print("py_style: %s found something (exit %d)" % (tool, rc), file=sys.stderr)
            worst = worst or 1
    return worst


if __name__ == "__main__":
    sys.exit(main())
