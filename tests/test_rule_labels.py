"""tools/rule_labels.py passes the real tree and can fail: on a temporary
copy of docs/rules.md and the files that define its labels, a planted
label no row lists (in a C comment, a Python comment, a Markdown line)
fails naming its file and line, a label listed twice and a family given a
second file fail naming the row, and what only looks like a label (a C
identifier, a usage string) passes.  The copies are the real files, so the
planted line is the only difference from a tree that passes; a word
NOT_LABELS excuses passes only while it is there."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "rule_labels.py")
RULES = os.path.join("docs", "rules.md")


def run(root):
    """rule_labels.py --quiet on ROOT: (exit status, stdout + stderr)."""
    p = subprocess.run(
        [sys.executable, TOOL, "--root", root, "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
    )
    return p.returncode, p.stdout


def defining_files():
    """The files docs/rules.md names as a label's home: [path]."""
    with open(os.path.join(ROOT, RULES)) as fh:
        return sorted(set(re.findall(r"^\| `[A-Z]+[0-9]+[a-z]?` \| `([^`]+)` \|", fh.read(), re.M)))


class TestRuleLabelsOnTheTree(unittest.TestCase):
    def test_the_tree_cites_only_listed_labels(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)


class TestRuleLabelsCanFail(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rule-labels-")
        self.files = defining_files()
        self.assertGreater(len(self.files), 10)
        for f in self.files + [RULES]:
            os.makedirs(os.path.join(self.root, os.path.dirname(f)), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, f), os.path.join(self.root, f))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def append(self, path, text):
        """Add TEXT at the end of the copy of PATH; its first line's number."""
        p = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        n = 1
        if os.path.exists(p):
            with open(p) as fh:
                n = fh.read().count("\n") + 1
        with open(p, "a") as fh:
            fh.write(text)
        return n

    def test_the_copied_files_pass(self):
        rc, out = run(self.root)
        self.assertEqual(rc, 0, out)

    def test_an_unknown_label_in_a_c_comment_fails_naming_its_line(self):
        n = self.append("faults/powerloss.c", "/* a tenth rule (PL10) */\n")
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("faults/powerloss.c:%d: PL10 is no label listed in docs/rules.md" % n, out)

    def test_an_old_name_in_a_python_comment_or_a_doc_fails(self):
        # kvprot.h's KV1u under its old name: K is the shrinker's family.
        n = self.append("crashtest/shrink.py", "# a unique-keys leaf (K1u)\n")
        # page.c's PS1-PS6 under their old names: S1 is the driver's rule,
        # so only the range's end shows.
        m = self.append("docs/extra.md", "The page checks are S1-S6.\n")
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("crashtest/shrink.py:%d: K1u is no label listed" % n, out)
        self.assertIn("docs/extra.md:%d: S6 is no label listed" % m, out)
        self.assertNotIn(": S1 ", out)

    def test_a_c_identifier_or_string_is_no_citation(self):
        self.append("engine/page.c", 'static int G6, V10;\nstatic const char *u = "P0..P9";\n')
        rc, out = run(self.root)
        self.assertEqual(rc, 0, out)

    def test_a_label_listed_twice_fails_naming_the_row(self):
        with open(os.path.join(self.root, RULES)) as fh:
            rows = [ln for ln in fh if ln.startswith("| `KV1` |")]
        self.assertEqual(len(rows), 1)
        n = self.append(RULES, rows[0])
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/rules.md:%d: KV1 listed twice" % n, out)

    def test_a_family_with_a_second_file_fails(self):
        n = self.append(RULES, "| `KV9` | `engine/page.h` | a rule of another file |\n")
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/rules.md:%d: KV9 in engine/page.h, but family KV is" % n, out)
        self.assertIn("docs/rules.md:%d: KV9: engine/page.h never mentions it" % n, out)

    def test_a_word_that_is_no_label_passes_only_while_it_is_there(self):
        # procs.py's docstrings name the parameter t0 T0 (NOT_LABELS).
        with open(os.path.join(ROOT, "crashtest", "procs.py")) as fh:
            text = fh.read()
        self.assertIn("T0", text)
        self.append("crashtest/procs.py", text)
        rc, out = run(self.root)
        self.assertEqual(rc, 0, out)
        with open(os.path.join(self.root, "crashtest", "procs.py"), "w") as fh:
            fh.write(text.replace("T0", "START"))
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("crashtest/procs.py: T0 no longer appears", out)

    def test_no_rules_file_is_a_usage_error(self):
        os.remove(os.path.join(self.root, RULES))
        rc, out = run(self.root)
        self.assertEqual(rc, 2, out)


if __name__ == "__main__":
    unittest.main()
