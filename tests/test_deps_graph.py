"""tools/deps_graph.py's include rules can fail: on a temporary copy of a
few files of the tree, a planted include circle breaks G1 and an engine
header that includes stress/ breaks G4, each named in the breach, and a
header is a contract (a node of its own, G1) only while
tools/deps_contracts.txt lists it.  The copies are the real files, so the
planted include is the only difference from a tree that passes."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "deps_graph.py")
CONTRACTS = os.path.join("tools", "deps_contracts.txt")

# The engine's inspection door and the layers under it, and the fault
# library's top and its frame: enough of each folder for its real circles
# to come back when one include is planted or one contract is unlisted.
FILES = [
    "engine/engine.h",
    "engine/format.h",
    "engine/decode.h",
    "engine/io.h",
    "engine/status.h",
    "engine/page.h",
    "engine/page.c",
    "engine/control.h",
    "engine/control.c",
    "engine/wal.h",
    "engine/wal_int.h",
    "engine/wal.c",
    "engine/inspect.h",
    "engine/inspect.c",
    "faults/faults.h",
    "faults/faults.c",
    "faults/frame.h",
    "faults/frame.c",
    "faults/ledger.h",
    "faults/journal.h",
    "stress/stress.h",
    CONTRACTS,
]


def run(root):
    """deps_graph.py --quiet on ROOT: (exit status, stderr)."""
    p = subprocess.run(
        [sys.executable, TOOL, "--root", root, "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    return p.returncode, p.stderr


class TestDepsGraphRulesCanFail(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="deps-graph-")
        for f in FILES:
            os.makedirs(os.path.join(self.root, os.path.dirname(f)), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, f), os.path.join(self.root, f))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def plant(self, path, line):
        """Add LINE after the include guard of the copy of PATH."""
        p = os.path.join(self.root, path)
        with open(p) as fh:
            text = fh.read()
        guard = text.index("#define ")
        end = text.index("\n", guard) + 1
        with open(p, "w") as fh:
            fh.write(text[:end] + line + "\n" + text[end:])

    def unlist(self, header):
        """Remove HEADER from the copy of the contracts file."""
        p = os.path.join(self.root, CONTRACTS)
        with open(p) as fh:
            lines = [ln for ln in fh if not ln.startswith(header + " ")]
        with open(p, "w") as fh:
            fh.writelines(lines)

    def test_the_copied_files_keep_every_rule(self):
        rc, err = run(self.root)
        self.assertEqual(rc, 0, err)

    def test_a_planted_circle_fails_g1_naming_its_includes(self):
        # wal.h -> inspect.h while inspect.c -> wal.h: the log layer would
        # depend on the door that sits on top of it.
        self.plant("engine/wal.h", '#include "inspect.h"')
        rc, err = run(self.root)
        self.assertEqual(rc, 1, err)
        self.assertIn("G1 include circle: engine/inspect <-> engine/wal", err)
        self.assertIn("engine/wal.h includes engine/inspect.h", err)
        self.assertIn("engine/inspect.c includes engine/wal.h", err)

    def test_an_engine_header_including_stress_fails_g4(self):
        self.plant("engine/engine.h", '#include "stress/stress.h"')
        rc, err = run(self.root)
        self.assertEqual(rc, 1, err)
        self.assertIn("G4 engine/engine.h includes stress/stress.h", err)

    def test_an_engine_file_including_faults_by_the_search_path_fails_g4(self):
        # "frame.h" is no engine header: it resolves to faults/frame.h.
        self.plant("engine/page.h", '#include "frame.h"')
        rc, err = run(self.root)
        self.assertEqual(rc, 1, err)
        self.assertIn("G4 engine/page.h includes faults/frame.h", err)

    def test_a_header_is_a_contract_only_while_listed(self):
        # faults.c -> frame.h -> faults.h: no circle while faults.h is a
        # contract; once unlisted it is faults.c's own header, and the
        # frame under faults.c would depend on it.
        self.unlist("faults/faults.h")
        rc, err = run(self.root)
        self.assertEqual(rc, 1, err)
        self.assertIn("G1 include circle: faults/faults <-> faults/frame", err)
        self.assertIn("faults/frame.h includes faults/faults.h", err)

    def test_a_listed_contract_that_is_no_header_fails_g1(self):
        with open(os.path.join(self.root, CONTRACTS), "a") as fh:
            fh.write("engine/gone.h  a contract whose file is gone\n")
        rc, err = run(self.root)
        self.assertEqual(rc, 1, err)
        self.assertIn("G1 %s lists engine/gone.h, which is no header of the tree" % CONTRACTS, err)

    def test_a_contract_without_its_reason_is_a_usage_error(self):
        with open(os.path.join(self.root, CONTRACTS), "a") as fh:
            fh.write("engine/page.h\n")
        rc, err = run(self.root)
        self.assertEqual(rc, 2, err)
        self.assertIn("engine/page.h has no reason", err)

    def test_no_contracts_file_is_a_usage_error(self):
        os.remove(os.path.join(self.root, CONTRACTS))
        rc, err = run(self.root)
        self.assertEqual(rc, 2, err)


if __name__ == "__main__":
    unittest.main()
