"""A run carries its database from one iteration to the next only when
nothing the oracle judged is still damage at rest (crashtest/steps.py
conclude): the next process judges only its own ledger lines, so a block
an earlier one left damaged would be a failure nobody caused.  Reported
damage and an unrecoverable database were always dropped; so is a
database the oracle called unrecoverable by design, such as a misdirected
write's stale block, which no check reports (V6b): a simple run carried
one into the next iteration, whose check at start then failed on a wrong
value with no injection to explain it."""

import os
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.steps import conclude  # noqa: E402


def fake_run(d):
    return types.SimpleNamespace(
        failures=0,
        fresh=False,
        db_age=0,
        db_ops=0,
        history=[],
        state=os.path.join(d, "state"),
        dir=d,
    )


class TestCarryOn(unittest.TestCase):
    def conclude_with(self, report):
        d = tempfile.mkdtemp(prefix="test-carry-")
        iter_dir = os.path.join(d, "iter")
        os.makedirs(iter_dir)
        run = fake_run(d)
        ct = types.SimpleNamespace(a=types.SimpleNamespace(keep_artifacts=False))
        st = types.SimpleNamespace(failure=None, list=[], ex=types.SimpleNamespace(env={}))
        record = {"index": 3, "seed": 7, "kind": "blackbox", "ops": 100}
        base = {"unrecoverable": False, "unrecoverable_by_design": None, "reports": 0}
        base.update(report)
        conclude(ct, run, iter_dir, record, st, [base], None, None)
        return run

    def test_a_clean_pass_carries_its_database_on(self):
        run = self.conclude_with({})
        self.assertFalse(run.fresh)
        self.assertEqual(run.db_age, 1)

    def test_a_database_left_unrecoverable_by_design_is_not_carried_on(self):
        run = self.conclude_with(
            {"unrecoverable_by_design": "misdirected_write at hook/write file=data block=87"}
        )
        self.assertTrue(run.fresh)

    def test_reported_or_unrecoverable_damage_is_not_carried_on(self):
        self.assertTrue(self.conclude_with({"reports": 2}).fresh)
        self.assertTrue(self.conclude_with({"unrecoverable": True}).fresh)


if __name__ == "__main__":
    unittest.main()
