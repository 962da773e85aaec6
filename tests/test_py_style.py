#!/usr/bin/env python3
"""tools/py_style.py, the Python style check of make lint and make test: a
tool that is not installed fails the check and names its Debian package
(never a silent pass), and each tool fails on a file it objects to."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import py_style  # noqa: E402


class TestPyStyle(unittest.TestCase):
    def setUp(self):
        self.saved = (py_style.REPO, py_style.PATHS, py_style.candidates)
        self.addCleanup(self.restore)

    def restore(self):
        py_style.REPO, py_style.PATHS, py_style.candidates = self.saved

    def run_main(self, *args):
        """py_style's main with ARGS: (exit code, what it printed on stderr)."""
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = py_style.main(list(args))
        return rc, err.getvalue()

    def test_a_missing_tool_fails_and_names_the_package_to_install(self):
        py_style.candidates = lambda tool: [["/nonexistent/%s" % tool]]
        for tool, package in (("black", "black"), ("flake8", "python3-flake8")):
            rc, err = self.run_main(tool)
            self.assertEqual(rc, py_style.EXIT_MISSING, err)
            self.assertIn("apt-get install %s" % package, err)
        rc, err = self.run_main()
        self.assertEqual(rc, py_style.EXIT_MISSING, err)

    def test_each_tool_fails_on_a_file_it_objects_to_and_passes_a_clean_one(self):
        d = tempfile.mkdtemp(prefix="py-style-")
        self.addCleanup(shutil.rmtree, d, True)
        py_style.REPO, py_style.PATHS = d, ("a.py",)
        for tool in ("black", "flake8"):
            if py_style.find_tool(tool) is None:
                self.skipTest("%s is not installed (its own check in make test fails)" % tool)
        with open(os.path.join(d, "a.py"), "w") as f:
            f.write("import os\nx=1\n")  # black: x = 1; flake8: os unused
        self.assertEqual(self.run_main("black")[0], 1)
        self.assertEqual(self.run_main("flake8")[0], 1)
        with open(os.path.join(d, "a.py"), "w") as f:
            f.write("x = 1\n")
        self.assertEqual(self.run_main("black", "flake8"), (0, ""))

    def test_an_unknown_tool_is_a_usage_error(self):
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
            py_style.main(["pylint"])
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
