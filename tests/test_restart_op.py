"""The trace op `restart` (stress/workload.c reopen(), never drawn): what
the end of one stress process and the start of the next do to the
database, in one process.  A shrinker folds a create step into the op step
after it with one where the create step's process ended (crashtest.py
shrink K26, freshpass.p_fold_create).

A `reopen` there was not the same run: a process's end reads every key
before it closes (settle), and the pages those reads dirty (hint bits) are
written by the close; a reopen reads them after its open, and they were
written unsynced in the next ops.  Planted bug redo-reapplies-equal-lsn
(2026-12-05): its fold with a reopen left 32 unsynced writes where the two
processes left 8, and passed; with every key read before the reopen it
failed the same way.

- a replayed restart reads every key before the close as well as after the
  open (more keys verified than a reopen at the same place), is counted as
  a restart in the report, and is traced again as itself;
- a restart changes nothing a reader sees: the same values after it;
- a restart may name open options (its KEY "name=value,...") the process
  it stands for ran with: a folded step that had a checkpoint volume of its
  own starts checkpoints where it did, the options are traced again with
  the restart, and one with '-' goes back to the command line's; a
  creation option, an unknown one or a bad value is a usage error that
  writes nothing."""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.stressrun import OneThreadDb, stress, trace_lines  # noqa: E402

KEYS = 300


class TestRestartOp(OneThreadDb):
    def replay_with(self, op):
        """The ops of a traced run of 200 ops, OP ('reopen' or 'restart')
        after the first 150, replayed on a fresh database: (report, the
        replay's trace lines, stderr)."""
        made = os.path.join(self.d, "made.trace")
        rc, out, err = stress(
            "--db=%s/db0" % self.d,
            "--destroy_db_initially",
            "--threads=1",
            "--max_key=%d" % KEYS,
            "--ops_per_thread=200",
            "--trace_ops=" + made,
            "--seed=11",
        )
        self.assertEqual(rc, 0, out + err)
        lines = trace_lines(made)
        lines = lines[:150] + ["150 %s - 0000000000000000 off | folded" % op] + lines[150:]
        path = os.path.join(self.d, op + ".trace")
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        again = os.path.join(self.d, op + ".again")
        report = os.path.join(self.d, op + ".json")
        rc, out, err = stress(
            "--db=%s/%s" % (self.d, op),
            "--destroy_db_initially",
            "--threads=1",
            "--max_key=%d" % KEYS,
            "--replay_ops=" + path,
            "--trace_ops=" + again,
            "--report=" + report,
        )
        self.assertEqual(rc, 0, out + err)
        with open(report) as f:
            return json.load(f), trace_lines(again), out + err

    @staticmethod
    def verified(text):
        return int(re.search(r"verified=(\d+)", text).group(1))

    def test_a_restart_reads_every_key_before_its_close_as_well_as_after_its_open(self):
        rep_reopen, _, out_reopen = self.replay_with("reopen")
        rep_restart, again, out_restart = self.replay_with("restart")
        self.assertGreaterEqual(
            self.verified(out_restart),
            self.verified(out_reopen) + KEYS,
            "every key read before the close too",
        )
        self.assertEqual((rep_restart["ops"]["restart"], rep_restart["ops"]["reopen"]), (1, 0))
        self.assertEqual((rep_reopen["ops"]["restart"], rep_reopen["ops"]["reopen"]), (0, 1))
        self.assertEqual(again[150].split()[1], "restart", "traced again as itself")
        self.assertEqual(len(again), 201)

    def test_a_restart_changes_nothing_a_reader_sees(self):
        _, plain, _ = self.replay_with("reopen")
        _, restarted, _ = self.replay_with("restart")
        # Each op's keys and what it read or wrote, after the op's head.
        self.assertEqual(
            [line.split("|")[1].split(" op=")[0] for line in restarted[151:]],
            [line.split("|")[1].split(" op=")[0] for line in plain[151:]],
        )

    def replay_restart(self, key, name):
        """The ops of a traced run of 120 puts of large values, a restart with
        KEY in front of the first 60 and one with '-' in front of the
        rest, replayed with the command line's 64M checkpoint volume: the
        replay's trace lines."""
        made = os.path.join(self.d, "made.trace")
        common = [
            "--threads=1",
            "--max_key=%d" % KEYS,
            "--value_size_min=900",
            "--value_size_max=1000",
            "--writepercent=100",
            "--readpercent=0",
            "--delpercent=0",
            "--iterpercent=0",
        ]
        rc, out, err = stress(
            "--db=%s/db0" % self.d,
            "--destroy_db_initially",
            "--ops_per_thread=120",
            "--trace_ops=" + made,
            "--seed=11",
            *common
        )
        self.assertEqual(rc, 0, out + err)
        lines = trace_lines(made)
        lines = (
            ["0 restart %s 0000000000000000 off" % key]
            + lines[:60]
            + ["60 restart - 0000000000000000 off"]
            + lines[60:]
        )
        path = os.path.join(self.d, name + ".trace")
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        again = os.path.join(self.d, name + ".again")
        rc, out, err = stress(
            "--db=%s/%s" % (self.d, name),
            "--destroy_db_initially",
            "--replay_ops=" + path,
            "--trace_ops=" + again,
            "--checkpoint_wal_bytes=64M",
            *common
        )
        self.assertEqual(rc, 0, out + err)
        return trace_lines(again)

    def test_a_restart_opens_with_the_options_it_names_until_the_next_restart(self):
        plain = self.replay_restart("-", "plain")
        named = self.replay_restart("checkpoint_wal_bytes=64K,sync_mode=off", "named")
        self.assertEqual(
            named[0].split()[:3],
            ["0", "restart", "checkpoint_wal_bytes=64K,sync_mode=off"],
            "traced again with its options",
        )
        self.assertEqual(named[61].split()[:3], ["60", "restart", "-"])

        def ckpts(lines):
            return sum(1 for line in lines if re.search(r"\sckpt=\d+", line.partition("|")[2]))

        self.assertEqual(ckpts(plain), 0, "60 KB of values start no checkpoint at 64M")
        self.assertGreater(ckpts(named[:61]), 0, "at 64K of log they start some")
        self.assertEqual(
            ckpts(named[61:]), 0, "after a restart with '-', the command line's 64M again"
        )

    def test_a_restart_that_names_what_it_cannot_set_is_a_usage_error(self):
        for key, why in (
            ("page_size=4096", "a restart cannot set 'page_size'"),
            ("read_fault_one_in=5", "a restart cannot set 'read_fault_one_in'"),
            ("sync_mode=sometimes", "bad value 'sometimes'"),
            ("cache_size", "not an op line"),
            ("cache_size=1M,", "not an op line"),
        ):
            bad = os.path.join(self.d, "bad.trace")
            with open(bad, "w") as f:
                f.write("0 restart %s 0000000000000000 off\n1 put 3 00000000000000a1 on\n" % key)
            rc, out, err = stress(
                "--db=%s/db" % self.d,
                "--destroy_db_initially",
                "--threads=1",
                "--replay_ops=" + bad,
            )
            self.assertEqual(rc, 2, key + out + err)
            self.assertIn(why, err, key)
        self.assert_not_op_lines(["0 put cache_size=1M 00000000000000a1 on\n"])
        self.assertFalse(os.path.exists(os.path.join(self.d, "db")), "nothing written")


if __name__ == "__main__":
    unittest.main()
