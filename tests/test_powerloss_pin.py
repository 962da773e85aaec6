"""Tests of the shrink pass that pins a power-loss step's decisions where
they landed (tracepass.p_pin_powerloss, shrink.py's K22; powerloss's
--pin, faults/powerloss.c PL8, has its C test in
test_powerloss_variants_are_legal.c).

A write's fate after a power loss is drawn from the step's seed and the
write's name, offset and the writes to that offset before it: remove an op
that wrote the page and the tear the failure needs lands elsewhere.  The
pass reads the failing variant's decisions from the ledger and makes them
pins in keep mode:

- first only the newest undone write of the block the failing step names
  (file=NAME block=N), with the page size the run was created with, then
  all of that block's, then every write the variant undid; another
  variant's lines never;
- a failure that names no block gets every write, and none when there are
  more than powerloss takes;
- a step already pinned, or in keep mode, is left alone.
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand  # noqa: E402
from crashtest import tracepass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402
from crashtest.tracepass import PIN_POWERLOSS_MAX  # noqa: E402


def line(variant, file, offset, back, kept=None, length=16384):
    note = "variant=%d write=%d back=%d" % (variant, 100 + offset // 16384, back)
    if kept:
        note += " unit=512 kept=%s" % kept
    return {
        "phase": "powerloss",
        "class": "torn_write" if kept else "power_loss",
        "point": "powerloss/tear" if kept else "powerloss/rollback",
        "file": file,
        "offset": offset,
        "len": length,
        "note": note,
    }


class TestPinPowerloss(unittest.TestCase):
    def stub_state(self, lines, output, mode="mixed", extra=()):
        d = tempfile.mkdtemp(prefix="test-shrink-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        os.makedirs(os.path.join(d, "state", "run"))
        with open(os.path.join(d, "state", "run", "ledger"), "w") as f:
            f.write(
                json.dumps({"phase": "run", "class": "nospace", "point": "engine/io/write"}) + "\n"
            )
            for j in lines:
                f.write(json.dumps(j) + "\n")
        steps = [
            {
                "type": "stress",
                "argv": [
                    "@STRESS@",
                    "--db=@STATE@/db",
                    "--page_size=16384",
                    "--destroy_db_initially=1",
                ],
            },
            {
                "type": "stress",
                "argv": ["@STRESS@", "--db=@STATE@/db", "--replay_ops=@FOLDER@/ops.trace"],
            },
            {
                "type": "powerloss",
                "argv": [
                    "@POWERLOSS@",
                    "@STATE@/db",
                    "--run-dir",
                    "@STATE@/run",
                    "--seed",
                    "5",
                    "--variants",
                    "2",
                    "--mode",
                    mode,
                ]
                + list(extra),
            },
            {"type": "variant", "k": 0, "powerloss_step": 2, "to": "@ITER@/v0"},
            {"type": "variant", "k": 1, "powerloss_step": 2, "to": "@ITER@/v1"},
            {"type": "stress", "argv": ["@STRESS@", "--db=@ITER@/v1/db", "--verification_only=1"]},
        ]
        st = state_of()
        st.best = Cand(steps, True, ["0 put 1 00 on | 1=v1 ok op=2:1 inj=0"], 1)
        st.best_res = {"dir": d, "step": 5, "results": {5: {"output_tail": output}}}
        st.meta, st.defaults = {}, {"page_size": "8192"}
        st.left = lambda: 100.0
        self.tried = []

        def attempt(what, cand, phase):
            argv = cand.steps[2]["argv"]
            self.tried.append(
                (
                    what,
                    argv[argv.index("--mode") + 1],
                    [argv[i + 1] for i, a in enumerate(argv) if a == "--pin"],
                )
            )
            return False

        st.runner.attempt = attempt
        return st

    def test_the_failing_variants_writes_of_the_named_block_are_pinned_first_then_all_it_undid(
        self,
    ):
        lines = [
            line(1, "data", 15 * 16384, 0, "a0361cf0"),
            line(1, "data", 0, 0, "4013"),
            line(0, "data", 15 * 16384, 0, "ffff0000"),
            line(1, "data", 15 * 16384, 2),
            line(1, "wal/0000000000000000", 8192, 0, "0f", length=4096),
        ]
        st = self.stub_state(
            lines,
            "stress: FAILURE unrecoverable: corruption no injection explains: "
            "layer=page_checksum file=data block=15: ",
        )
        tracepass.p_pin_powerloss(st)
        # Block 15 of 16 KiB pages (the create step's page size, not the
        # default's 8 KiB: its offset 245760), variant 1's only (the
        # failing step reads v1): its newest undone write, then both;
        # then all of variant 1's.
        self.assertEqual(
            self.tried,
            [
                (
                    "power loss pinned: the newest write it undid on the block the failure names "
                    "(data block 15), every other write kept (keep mode, --pin)",
                    "keep",
                    ["data@245760:0=tear:a0361cf0"],
                ),
                (
                    "power loss pinned: the 2 writes it undid on the block the failure names (data "
                    "block 15), every other write kept (keep mode, --pin)",
                    "keep",
                    ["data@245760:0=tear:a0361cf0", "data@245760:2=rollback"],
                ),
                (
                    "power loss pinned: the 4 writes it undid, every other write kept (keep mode, "
                    "--pin)",
                    "keep",
                    [
                        "data@245760:0=tear:a0361cf0",
                        "data@0:0=tear:4013",
                        "data@245760:2=rollback",
                        "wal/0000000000000000@8192:0=tear:0f",
                    ],
                ),
            ],
        )

    def test_a_failure_naming_no_block_pins_every_write_and_none_past_what_powerloss_takes(self):
        st = self.stub_state(
            [line(1, "data", 16384 * k, 0, "0f") for k in range(3)],
            "stress: FAILURE lost: key 7 ...",
        )
        tracepass.p_pin_powerloss(st)
        self.assertEqual(
            [(w.split(",")[0], len(pins)) for w, _, pins in self.tried],
            [("power loss pinned: the 3 writes it undid", 3)],
        )
        self.tried.clear()
        st = self.stub_state(
            [line(1, "data", 16384 * k, 0, "0f") for k in range(PIN_POWERLOSS_MAX + 1)],
            "stress: FAILURE lost: key 7 ...",
        )
        tracepass.p_pin_powerloss(st)
        self.assertEqual(self.tried, [])

    def test_a_step_pinned_already_or_in_keep_mode_is_left_alone(self):
        lines = [line(1, "data", 0, 0, "0f")]
        for mode, extra in (("keep", ()), ("mixed", ("--pin", "data@0:0=tear:0f"))):
            st = self.stub_state(lines, "file=data block=0", mode, extra)
            tracepass.p_pin_powerloss(st)
            self.assertEqual(self.tried, [], mode)


if __name__ == "__main__":
    unittest.main()
