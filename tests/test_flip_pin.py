"""Tests of a flip pinned in an op trace (flip:BLOCK:BIT on disk,
cflip:BLOCK:BIT in a cached frame; docs/formats.md, Op trace) and of the
shrink pass that pins them (tracepass.p_pin_flips).

A drawn flip picks its block among the data file's blocks (a cache flip
among those resident): remove one op before it and it lands on another
page, or on none.  Replayed pinned, it lands where the traced run's did,
whatever ops come before it:

- a page flip's op, pinned, with every fault of the ops before it off:
  the same bit of the same block, one ledger line at tick/data;
- a cache flip's op, pinned, with no --bitflip_cache_one_in at all: the
  same bit of the same block's frame, one line at tick/cache (the pin
  turns its class on); bad pins are usage errors;
- the pass pins an op whose only ledger line is a drawn page or cache
  flip, not a cache pattern trial (undone at once) nor an op that also
  injected something else.
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand, set_faults  # noqa: E402
from crashtest.executor import ledger_lines_since  # noqa: E402
from crashtest import tracepass  # noqa: E402
from tests.test_shrink_passes import state_of  # noqa: E402
from tests.stressrun import OneThreadDb  # noqa: E402


class TestPinnedFlipInStress(OneThreadDb):
    def test_a_pinned_page_flip_lands_where_it_says_whatever_ops_come_before_it(self):
        # A traced run with page flips drawn; the last flip's op made
        # flip:BLOCK:BIT, every other fault of the ops before it turned off
        # (what they did on disk changes): the flip lands on the same bit
        # of the same block (the ledger says so), and on nothing else.
        t1, t2, t3 = (os.path.join(self.d, n) for n in ("a.trace", "b.trace", "c.trace"))
        run = os.path.join(self.d, "run")
        args = [
            "--expected_values_dir=%s/exp" % self.d,
            "--run_dir=" + run,
            "--bitflip_page_one_in=150",
            "--ops_per_thread=400",
        ]
        rc, out, err = self.run_db(*args, "--trace_ops=" + t1)
        # (the flips at rest, made at the settlement, belong to no op)
        flips = [
            j
            for j in ledger_lines_since(os.path.join(run, "ledger"))
            if j.get("class") == "bitflip_page" and j.get("point") == "tick/data"
        ]
        self.assertTrue(flips, out + err)
        f0 = flips[-1]
        op = "op=%d:%d" % (f0["op"] >> 32, f0["op"] & 0xFFFFFFFF)
        lines = self.ops_of(t1)
        i = next(k for k, line in enumerate(lines) if op + " " in line)
        pinned = set_faults(lines[i].rstrip("\n"), "flip:%d:%d" % (f0["block"], f0["bit"])) + "\n"
        with open(t2, "w") as f:
            f.writelines(
                [set_faults(line.rstrip("\n"), False) + "\n" for line in lines[:i]] + [pinned]
            )
        rc, out, err = self.run_db(*args, "--replay_ops=" + t2, "--trace_ops=" + t3)
        got = [
            j
            for j in ledger_lines_since(os.path.join(run, "ledger"))
            if j.get("class") == "bitflip_page" and j.get("point") != "rest/data"
        ]
        self.assertEqual(
            [(j["block"], j["bit"], j["point"]) for j in got],
            [(f0["block"], f0["bit"], "tick/data")],
            out + err,
        )
        # The replay's own trace writes the pinned field back as it read it.
        self.assertEqual(self.ops_of(t3)[-1].split("|")[0], pinned.split("|")[0])

    def test_a_pinned_cache_flip_lands_on_the_cached_frame_it_says(self):
        # A traced run with cache flips drawn (no other fault: the ops
        # before the first flip did exactly what they did when traced);
        # that op made cflip:BLOCK:BIT and the rest of the list dropped:
        # the replay flips the same bit of the same block's frame, once,
        # with the ledger line of a drawn one, and writes the field back.
        t1, t2, t3 = (os.path.join(self.d, n) for n in ("a.trace", "b.trace", "c.trace"))
        run = os.path.join(self.d, "run")
        args = [
            "--expected_values_dir=%s/exp" % self.d,
            "--run_dir=" + run,
            "--read_fault_one_in=0",
            "--sync_fault_one_in=0",
            "--bitflip_cache_one_in=40",
            "--block_protection_bytes_per_key=8",
            "--ops_per_thread=400",
        ]
        rc, out, err = self.run_db(*args, "--trace_ops=" + t1)
        flips = [
            j
            for j in ledger_lines_since(os.path.join(run, "ledger"))
            if j.get("class") == "bitflip_cache"
        ]
        self.assertTrue(flips, out + err)
        f0 = flips[0]
        op = "op=%d:%d" % (f0["op"] >> 32, f0["op"] & 0xFFFFFFFF)
        lines = self.ops_of(t1)
        i = next(k for k, line in enumerate(lines) if op + " " in line)
        pinned = set_faults(lines[i].rstrip("\n"), "cflip:%d:%d" % (f0["block"], f0["bit"])) + "\n"
        with open(t2, "w") as f:
            f.writelines(lines[:i] + [pinned])
        # No rate: the pin alone injects (its class on without one).
        rc, out, err = self.run_db(
            *[a for a in args if not a.startswith("--bitflip_cache_one_in")],
            "--replay_ops=" + t2,
            "--trace_ops=" + t3
        )
        got = [
            j
            for j in ledger_lines_since(os.path.join(run, "ledger"))
            if j.get("class") == "bitflip_cache"
        ]
        self.assertEqual(
            [(j["block"], j["bit"], j["point"]) for j in got],
            [(f0["block"], f0["bit"], "tick/cache")],
            out + err,
        )
        self.assertEqual(self.ops_of(t3)[-1].split("|")[0], pinned.split("|")[0])

    def test_bad_cache_pins_are_usage_errors_that_change_nothing(self):
        self.assert_not_op_lines(
            (
                "0 put 3 00 cflip:\n",
                "0 put 3 00 cflip::5\n",
                "0 put 3 00 cflip:2:\n",
                "0 put 3 00 cflip:2:5x\n",
                "0 put 3 00 clip:2:5\n",
            )
        )


class TestPinFlipsPass(unittest.TestCase):
    def test_a_drawn_page_or_cache_flip_is_pinned_where_it_landed_and_no_other_fault(self):
        d = tempfile.mkdtemp(prefix="test-shrink-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        os.makedirs(os.path.join(d, "state", "run"))

        def op(call):
            return 2 << 32 | call

        with open(os.path.join(d, "state", "run", "ledger"), "w") as f:
            for j in (
                {
                    "phase": "run",
                    "class": "bitflip_page",
                    "point": "tick/data",
                    "block": 3,
                    "bit": 99,
                    "op": op(5),
                },
                {"phase": "run", "class": "nospace", "point": "engine/io/write", "op": op(6)},
                {
                    "phase": "run",
                    "class": "bitflip_page",
                    "point": "tick/data",
                    "block": 4,
                    "bit": 7,
                    "op": op(7),
                },
                {"phase": "run", "class": "read_error", "point": "engine/io/read", "op": op(7)},
                {
                    "phase": "run",
                    "class": "bitflip_cache",
                    "point": "tick/cache",
                    "block": 5,
                    "bit": 200,
                    "op": op(8),
                },
                {
                    "phase": "run",
                    "class": "bitflip_cache",
                    "point": "tick/cache",
                    "block": 6,
                    "bit": 1,
                    "pattern": "single",
                    "op": op(4),
                },
            ):
                f.write(json.dumps(j) + "\n")
        trace = [
            "%d put %d 00 on | %d=v1 ok op=2:%d inj=%d"
            % (k, k, k, k, 1 if k in (5, 6) else 2 if k == 7 else 0)
            for k in range(4, 9)
        ]
        st = state_of()
        st.best = Cand([{"type": "stress", "argv": [], "state": "@STATE@"}], True, trace, 0)
        st.best_res = {"dir": d}
        tried = []
        st.runner.attempt = lambda what, cand, phase: tried.append((what, cand.trace))
        tracepass.p_pin_flips(st)
        self.assertEqual(len(tried), 1)
        what, got = tried[0]
        self.assertEqual(
            what,
            "1 page flip and 1 cache flip pinned where they landed (flip:BLOCK:BIT, "
            "cflip:BLOCK:BIT)",
        )
        # Op 5's page flip and op 8's cache flip pinned; op 6 (an ENOSPC)
        # and op 7 (a flip and a read error: pinning it would drop the
        # error) keep their draws, and so does op 4, whose cache flip was
        # a pattern trial (undone at once: no damage to pin).
        self.assertEqual(
            [line.split()[4] for line in got], ["on", "flip:3:99", "on", "on", "cflip:5:200"]
        )


if __name__ == "__main__":
    unittest.main()
