#!/usr/bin/env python3
"""Keeps the Python tooling's functions short enough to read in one screen.

Every function (methods and nested ones too) in crashtest.py, crashtest/
and tools/ must span at most MAX_LINES lines, counted from its `def` to its
last line as the ast gives them (lineno, end_lineno; decorators not
counted).  A longer one is split along its seams into named helpers.
tests/ is exempt: a test reads best as one story.

Usage: tools/py_function_length.py [--limit N] [--quiet]; one line per
function over the limit, as tools/c_function_length.py prints them:

    path:LINE: NAME is N lines (limit 80)

Exit 0 when every function fits, 1 when one does not (or a file does not
parse), 2 on a usage error.  Standard library only; run by
tests/run_all.sh."""

import argparse
import ast
import glob
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 80
# The files checked, relative to the repository; tests/ is left out.
PATTERNS = ("crashtest.py", "crashtest/*.py", "tools/*.py", "tools/**/*.py")


def python_files():
    """The checked files, sorted and each once: [path relative to REPO]."""
    seen = set()
    for pat in PATTERNS:
        for p in glob.glob(os.path.join(REPO, pat), recursive=True):
            seen.add(os.path.relpath(p, REPO))
    return sorted(seen)


def long_functions(path, limit):
    """The functions of PATH longer than LIMIT lines: [(line, name, lines)]."""
    with open(os.path.join(REPO, path)) as f:
        tree = ast.parse(f.read(), filename=path)
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = n.end_lineno - n.lineno + 1
            if length > limit:
                out.append((n.lineno, n.name, length))
    return sorted(out)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Fail when a function of crashtest.py, crashtest/ or tools/ is "
        "longer than --limit lines."
    )
    ap.add_argument(
        "--limit", type=int, default=MAX_LINES, metavar="N", help="most lines a function may span"
    )
    ap.add_argument(
        "--quiet", action="store_true", help="print only the functions that are too long"
    )
    a = ap.parse_args(argv)
    files = python_files()
    bad, unreadable = [], 0
    for path in files:
        try:
            bad += [(path,) + f for f in long_functions(path, a.limit)]
        except SyntaxError as e:
            print("%s: does not parse, not measured: %s" % (path, e))
            unreadable += 1
    for path, line, name, length in bad:
        print("%s:%d: %s is %d lines (limit %d)" % (path, line, name, length, a.limit))
    if not a.quiet or bad or unreadable:
        print(
            "py_function_length: %d file(s), %d function(s) over %d lines"
            % (len(files), len(bad), a.limit)
        )
    return 1 if bad or unreadable else 0


if __name__ == "__main__":
    sys.exit(main())
