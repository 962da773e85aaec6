"""The order of the multi-thread path's candidates (K8, shrink.p_multi):
its first pass tries every size and key space with the recorded seed in
each shape, the faults that struck the op step striking in the short run
as well as not, before any other seed; a race that needs its fault
(planted bug control-redo-is-checkpoint: a sync error that reopens the
database after a checkpoint raced a write) is then met in a run of 2 x 64
ops, not only in one of 2 x 256 without it.  And what a recorded run of
several threads that did not fail again goes through before the
multi-thread path: one thread on its database, then from a fresh one.
How a candidate the path keeps is confirmed, and what a shrunk run that
does not reproduce in repro goes back to (K20)."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashtest.cand import Cand, opt_get, opt_set, signature  # noqa: E402
from crashtest import multipass, optpass  # noqa: E402
from crashtest.multipass import (  # noqa: E402
    MT_AGAIN_SEEDS,
    MT_AGAIN_SWEEPS,
    MT_CONFIRM,
    MT_NEED,
    MT_OPS,
    MT_REPRO_NEED,
    MT_RESUME_MIN,
    MT_TRIALS,
    contention_mixes,
)
from crashtest.seeds import derive  # noqa: E402
from crashtest.shrink import Shrinker  # noqa: E402
from tests.test_shrink_passes import fake, state_of  # noqa: E402


def stub_state(seed, fails=lambda c: False, mix=("--readpercent=70",), max_key=8):
    """A shrink's state whose recorded run is a two-thread timed op step on
    MAX_KEY keys, its op MIX, that a sync error struck once in 337 ops,
    and whose trials are judged by FAILS, not run: the candidates tried
    are in its runner's .attempts."""
    st = state_of()
    argv = [
        "@STRESS@",
        "--threads=2",
        "--ops_per_thread=0",
        "--duration=2",
        "--max_key=%d" % max_key,
        "--seed=%d" % seed,
        "--checkpoint_one_in=100",
        "--sync_fault_one_in=1000",
    ] + list(mix)
    st.best = Cand(
        [
            {
                "type": "stress",
                "name": "workload",
                "state": "@STATE@",
                "dir": "d",
                "expect": "exit0",
                "kill_after": None,
                "argv": argv,
            }
        ],
        False,
        None,
        0,
    )
    st.best_res = {
        "ops": 337,
        "results": {0: {"injected": {"sync_error": 1}, "kill_points_fired": []}},
    }
    st.meta = {"steps": [{"argv": argv}]}
    st.defaults = {"checkpoint_wal_bytes": "64M", "snapshot_hold_ops": "200"}
    st.multi_tried, st.kept_trials, st.log = (
        False,
        [],
        [{"n": 7, "trials": 4, "failures": 2}],
    )
    st.multi_from, st.multi_judged, st.runs, st.need, st.more, st.multi = (
        None,
        set(),
        3,
        2,
        0,
        None,
    )
    st.left = lambda: 100
    st.p = type("P", (), {"line": lambda self, s: None})()

    def attempt(what, c, phase, **kw):
        if what.startswith("confirm: "):
            return True
        st.runner.attempts.append(c)
        if fails(c):
            st.best = c
            return True
        return False

    st.runner.attempt = attempt
    return st


def mix_of(c):
    """(gets, puts, deletes, scans, batches) of C's op step, percent."""
    m = [
        int(opt_get(c.op["argv"], o) or 0)
        for o in ("readpercent", "writepercent", "delpercent", "iterpercent")
    ]
    return tuple(m + [100 - sum(m)])


def shape(c):
    a = c.op["argv"]
    return (
        int(opt_get(a, "ops_per_thread")),
        int(opt_get(a, "seed")),
        int(opt_get(a, "sync_fault_one_in")),
    )


class TestMultiThreadOrder(unittest.TestCase):
    def test_each_size_is_tried_with_its_faults_struck_before_any_other_seed(self):
        st = stub_state(5)
        self.assertFalse(multipass.p_multi(st))
        got = [shape(c) for c in st.runner.attempts]
        first = [g for g in got if g[1] == 5]
        self.assertEqual(got[: len(first)], first, "the recorded seed's candidates come first")
        for n in MT_OPS:
            rates = sorted({g[2] for g in first if g[0] == n})
            if 2 * n >= 337:
                self.assertEqual(rates, [1000], "%d ops each: it strikes once already" % n)
                continue
            self.assertEqual(
                len(rates), 2, "%d ops each: the recorded rate and the struck one (%s)" % (n, rates)
            )
            # about MT_FAULT_TIMES (4) strikes in the short run: once in 337
            # ops at 1 in 1000, so 1 in 1000 * (2n / 337) / 4
            self.assertEqual(rates, [int(1000 * (2 * n / 337) / 4), 1000])
        self.assertTrue(any(g[1] != 5 for g in got), "the second pass tries other seeds")

    def test_a_race_that_needs_its_fault_is_kept_at_the_smallest_size_that_shows_it(self):
        # Fails only with 64 ops each or more and the sync error struck in
        # the run (more often than 1 in 1000): kept at 64, never reaching
        # 256 without it.
        st = stub_state(5, lambda c: shape(c)[0] >= 64 and shape(c)[2] < 1000)
        self.assertTrue(multipass.p_multi(st))
        self.assertEqual(shape(st.best)[:2], (64, 5))
        self.assertEqual(max(shape(c)[0] for c in st.runner.attempts), 64)
        self.assertEqual(st.multi["ops_per_thread"], 64)


class TestCutBaseline(unittest.TestCase):
    """A recorded run whose tries failed only in the op step itself (the
    baseline kept it and K1 cut the crash and the steps after it): the
    path starts from the recorded steps.  Planted bug
    durable-publishes-insert: a lost commit needs an append during another
    thread's fsync and then the loss of what was unsynced; its tries lose
    commits in a reopen inside the workload, and every candidate a path
    built from that cut form would have no crash."""

    def cut(self, st):
        """SH's recorded run as two steps (a timed SIGKILL, a verification),
        its best the cut form: the op step alone."""
        w = dict(st.best.steps[0], kill_after=0.74, expect="sigkill")
        v = {
            "type": "stress",
            "name": "verify",
            "state": "@STATE@",
            "dir": "v",
            "expect": "exit0",
            "argv": ["@STRESS@", "--verification_only=1"],
        }
        orig = Cand([w, v], False, None, 0, ["crashed", "failed"])
        st.cut = (orig, 900)
        st.start = st.dir = "/nonexistent/f"  # the folder's ledgers: none (nothing struck)
        return orig

    def test_the_path_from_a_cut_baseline_tries_the_recorded_crash_and_keeps_it_when_it_fails(self):
        st = stub_state(
            5, lambda c: len(c.steps) == 2 and opt_get(c.op["argv"], "crash_at_end") == "1"
        )
        self.cut(st)
        self.assertTrue(multipass.p_multi(st))
        self.assertEqual(len(st.best.steps), 2, "the verification after the crash is kept")
        self.assertEqual(st.best.op["expect"], "crash_at_end")
        self.assertEqual(
            st.multi_from["args"][1], 900, "a resume (K20) starts from the recorded steps too"
        )

    def test_a_cut_baseline_whose_search_kept_one_thread_runs_no_path(self):
        # Planted bug fpi-skips-page-at-redo-lsn: K6's search keeps one
        # thread from the cut form; a path run then from the recorded
        # steps, four threads, would spend 60% of the budget for nothing.
        st = stub_state(5, lambda c: True)
        self.cut(st)
        st.best.op["argv"] = opt_set(st.best.op["argv"], "threads", 1)
        self.assertFalse(multipass.p_multi(st))
        self.assertEqual(st.runner.attempts, [])

    def test_without_the_cut_no_candidate_has_a_crash(self):
        st = stub_state(5)
        self.assertFalse(multipass.p_multi(st))
        self.assertFalse(any(opt_get(c.op["argv"], "crash_at_end") for c in st.runner.attempts))
        st = stub_state(5)
        self.cut(st)
        self.assertFalse(multipass.p_multi(st))
        self.assertTrue(
            any(opt_get(c.op["argv"], "crash_at_end") == "1" for c in st.runner.attempts)
        )
        self.assertTrue(
            any(len(c.steps) == 1 for c in st.runner.attempts),
            "the cut form is tried too (no later steps)",
        )


class TestContentionMixes(unittest.TestCase):
    # The recorded mix of hint-aborted-while-in-progress's catch: gets 12,
    # puts 13, deletes 16, scans 11, batches 48.  Its race needs a scan to
    # meet a batch before it commits.
    MIX = ("--readpercent=12", "--writepercent=13", "--delpercent=16", "--iterpercent=11")

    def test_each_pair_with_a_writer_half_the_ops_each_largest_shares_first(self):
        got = contention_mixes(list(self.MIX), {})
        self.assertEqual(len(got), 9, "ten pairs of five kinds, less gets and scans (no writer)")
        self.assertEqual(got[0][0], "deletes and batches, half the ops each")
        self.assertIn(
            (
                "scans and batches, half the ops each",
                {"readpercent": 0, "writepercent": 0, "delpercent": 0, "iterpercent": 50},
            ),
            got,
        )
        self.assertNotIn("gets and scans, half the ops each", [w for w, _ in got])
        self.assertEqual(
            contention_mixes(["--iterpercent=50"], {}),
            [],
            "scans and batches at half each already: nothing else to pair",
        )
        self.assertEqual(
            contention_mixes(["--iterpercent=0"], {"writepercent": "30", "readpercent": "70"}),
            [
                (
                    "gets and puts, half the ops each",
                    {"readpercent": 50, "writepercent": 50, "delpercent": 0, "iterpercent": 0},
                )
            ],
            "stress's defaults where the run sets none",
        )

    def test_a_race_of_scans_and_batches_is_kept_in_their_mix_at_the_smallest_size(self):
        st = stub_state(5, lambda c: mix_of(c) == (0, 0, 0, 50, 50), self.MIX, max_key=2000)
        fake(
            self, "freshened", lambda c: c.copy()
        )  # (a fresh database's create step is test_shrink's)
        self.assertTrue(multipass.p_multi(st))
        self.assertEqual((shape(st.best)[:2], mix_of(st.best)), ((16, 5), (0, 0, 0, 50, 50)))
        self.assertEqual(int(opt_get(st.best.op["argv"], "max_key")), 8, "the smallest key space")
        self.assertEqual(st.multi["mix"]["iterpercent"], 50)
        # Before it, at that size: every key space in the run's own mix.
        own = [c for c in st.runner.attempts if mix_of(c) == (12, 13, 16, 11, 48)]
        self.assertEqual({int(opt_get(c.op["argv"], "max_key")) for c in own}, {8, 64, 512, 2000})
        self.assertEqual(st.runner.attempts[: len(own)], own)

    def test_a_race_the_run_s_own_mix_shows_is_kept_in_it(self):
        st = stub_state(5, lambda c: shape(c)[0] >= 64, self.MIX)
        self.assertTrue(multipass.p_multi(st))
        self.assertEqual(mix_of(st.best), (12, 13, 16, 11, 48))
        self.assertNotIn("mix", st.multi)
        self.assertTrue(
            all(shape(c)[1] == 5 for c in st.runner.attempts if mix_of(c) != (12, 13, 16, 11, 48)),
            "the mixes with the recorded seed only",
        )


class TestConfirmAndResume(unittest.TestCase):
    def test_a_kept_candidate_is_confirmed_by_as_many_failures_as_its_repro_needs(self):
        # Planted bug hint-aborted-while-in-progress: a run kept on 2 of 8
        # trials and confirmed on 1 of 2 can reproduce 0 of 10 (1 of 100
        # tried again).  A confirmation with one failure in MT_CONFIRM is
        # not kept; one with MT_REPRO_NEED is.
        st = stub_state(5)
        st.kind, st.match, st.aside, st.cap, st.best_res = "lost", "kind", [], None, None
        st.log = []
        del st.runner.attempt  # the real one (TrialRunner.attempt), its trials stubbed
        seqs = []  # each candidate's trial outcomes, in the order first run: 1 fails

        def run_once(c):
            # The first candidate: 2 of its first trials fail, then 1 of
            # its confirmation's; the second: 2 and 2; the rest none.
            sig = signature(c)
            if sig not in run_once.count:
                run_once.count[sig] = 0
                seqs.append(
                    [1, 1, 0, 1] + [0] * 6
                    if not seqs
                    else [1, 1, 1, 1]
                    if len(seqs) == 1
                    else [0] * 8
                )
            i = run_once.count[sig]
            run_once.count[sig] = i + 1
            kind = "lost" if seqs[list(run_once.count).index(sig)][i] else None
            return {
                "kind": kind,
                "step": 0 if kind else None,
                "ops": 32,
                "ops_all": 32,
                "seconds": 0.1,
                "diverged": None,
                "dir": "/nonexistent/t",
                "results": {},
                "failure": {"kind": kind},
            }

        run_once.count = {}
        st.runner.run_once = run_once
        self.assertTrue(multipass.p_multi(st))
        judged = [
            (e["what"].startswith("confirm: "), e["trials"], e["failures"], e["verdict"])
            for e in st.log
        ]
        self.assertEqual(
            judged[:4],
            [
                (False, MT_NEED, MT_NEED, "kept"),
                (True, MT_CONFIRM, 1, "rejected"),
                (False, MT_NEED, MT_NEED, "kept"),
                (True, MT_REPRO_NEED, MT_REPRO_NEED, "kept"),
            ],
        )
        self.assertEqual(len(judged), 4)
        self.assertEqual(st.multi["step"], 3)
        self.assertEqual(
            (st.multi["trials"], st.multi["failures"]),
            (MT_NEED + MT_REPRO_NEED, MT_NEED + MT_REPRO_NEED),
        )
        self.assertEqual((st.runs, st.need), (MT_TRIALS, MT_NEED))

    def settled(self, kept_seeds, rates, recorded=None, earlier=None):
        """A stub_state() whose multi-thread path keeps the candidates whose
        (ops each, seed) are in KEPT_SEEDS, each the first of its shape,
        and settle's repro of each reproduces RATES[i] of 8 (the i-th
        kept); with RECORDED, the recorded run is a kept trial (step 0)
        whose repro reproduces that many; with EARLIER, a run the rounds
        kept before the path (step 3) whose repro reproduces that many.
        Returns (the state, what settle returned, shrink.json's doc, the
        candidates kept in order, the folder's path)."""
        st = stub_state(
            5,
            lambda c: shape(c)[:2] in kept_seeds
            and not any(shape(k)[:2] == shape(c)[:2] for k in kept),
        )
        kept = []
        judge = st.runner.attempt
        st.log[0]["verdict"] = "kept"
        if recorded is not None:
            st.kept_trials.append((0, st.best, {}))
        if earlier is not None:
            st.kept_trials.append((3, st.best, {}))
        rates = dict(enumerate(rates), **{"-1": recorded if recorded is not None else earlier})

        def attempt(what, c, phase, **kw):
            got = judge(what, c, phase, **kw)
            if got and not what.startswith("confirm: "):
                kept.append(c)
                st.kept_trials.append((7, c, {}))
            return got

        st.runner.attempt = attempt
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work)
        st.work, dest = work, os.path.join(work, "shrunk")
        start = st.best

        def write_folder(d, c, r):
            os.makedirs(d)
            with open(os.path.join(d, "which"), "w") as f:
                f.write(str(kept.index(c) if c in kept else -1))

        st.runner.write_folder = write_folder

        def repro_rate(d):
            with open(os.path.join(d, "which")) as f:
                which = int(f.read())
            return [0.1] * 8, rates[which if which >= 0 else "-1"], 8

        st.runner.repro_rate = repro_rate
        self.assertTrue(multipass.p_multi(st))
        self.assertIs(st.multi_from["best"], start)
        write_folder(dest, st.best, st.best_res)
        doc = {}
        return st, multipass.settle(st, dest, doc, lambda: None), doc, kept, dest

    def test_a_shrunk_race_that_does_not_reproduce_resumes_the_multi_thread_path_after_the_run_it_kept(  # noqa: E501
        self,
    ):
        # K20: the first run kept reproduced 0 of 8; the path goes back to
        # where it started and keeps the next one, which reproduces 5 of 8.
        st, got, doc, kept, dest = self.settled({(16, 5), (64, 5)}, [0, 5])
        self.assertEqual((got[1], got[2]), (5, 8))
        self.assertEqual([shape(c)[:2] for c in kept], [(16, 5), (64, 5)])
        self.assertIs(st.best, kept[1])
        self.assertEqual(
            doc["resumed"], [{"multi_step": 7, "reproduced": "0 of 8", "stepped_back": []}]
        )
        sigs = [signature(c) for c in st.runner.attempts]
        self.assertEqual(len(sigs), len(set(sigs)), "no candidate is judged twice")
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "1")

    def test_a_resume_that_keeps_a_rarer_run_leaves_the_one_that_reproduced_most(self):
        st, got, doc, kept, dest = self.settled({(16, 5), (64, 5)}, [1, 0])
        self.assertEqual(got[1], 1)
        self.assertIs(st.best, kept[0])
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "0", "the folder left is the first run's")
        self.assertEqual(
            [r["reproduced"] for r in doc["resumed"]],
            ["1 of 8", "0 of 8"],
            "each below MT_REPRO_NEED resumed, until the path kept nothing more",
        )
        # ... and when the path keeps nothing more, the run it kept is the
        # result, its folder put back.
        st, got, doc, kept, dest = self.settled({(16, 5)}, [1])
        self.assertEqual((got[1], len(kept)), (1, 1))
        self.assertIs(st.best, kept[0])
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "0")

    def test_a_race_an_earlier_run_stands_in_for_resumes_the_path_and_the_smaller_run_that_reproduces_is_kept(  # noqa: E501
        self,
    ):
        # The path's keep reproduced 0 of 8 and the run before it 5 of 8:
        # with budget left the path resumes, and its next keep, which
        # reproduces 4 of 8 (enough), is the result, not the earlier run
        # that reproduced more often (planted bug checkpoint-redo-at-record:
        # with 2 x 256 ops standing in, 430 s of 600 go unused, 8.8x).
        st, got, doc, kept, dest = self.settled({(16, 5), (64, 5)}, [0, 4], earlier=5)
        self.assertEqual([shape(c)[:2] for c in kept], [(16, 5), (64, 5)])
        self.assertEqual(got[1], 4)
        self.assertIs(st.best, kept[1])
        self.assertEqual(
            [(r["reproduced"], [b["step"] for b in r["stepped_back"]]) for r in doc["resumed"]],
            [("0 of 8", [3])],
        )
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "1")
        # When the path keeps nothing more, the earlier run stays.
        st, got, doc, kept, dest = self.settled({(16, 5)}, [0], earlier=5)
        self.assertEqual((got[1], len(kept)), (5, 1))
        self.assertEqual(len(doc["resumed"]), 1)
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "-1")

    def test_the_recorded_run_comes_after_the_resumes_when_no_smaller_run_reproduced(self):
        # The path's keep reproduced 0 of 8 and the path kept nothing after
        # it: only then is the recorded run (a kept trial, 6 of 8) tried,
        # and it is the result.  It is not tried while a resume is left.
        st, got, doc, kept, dest = self.settled({(16, 5)}, [0], recorded=6)
        self.assertEqual((got[1], len(kept)), (6, 1))
        self.assertEqual([b["step"] for b in doc["stepped_back"]], [0])
        self.assertEqual(doc["resumed"][0]["stepped_back"], [], "not before the resume")
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "-1")
        # One that reproduced once stays, its rate written down.
        st, got, doc, kept, dest = self.settled({(16, 5)}, [1], recorded=6)
        self.assertEqual(got[1], 1)
        self.assertIs(st.best, kept[0])

    def test_no_resume_once_the_budget_left_is_short(self):
        st, got, doc, kept, dest = None, None, None, None, None
        import crashtest.multipass as multipass_mod

        old = multipass_mod.MT_RESUME_MIN
        multipass_mod.MT_RESUME_MIN = 1000  # more than the 100 s the stub has left
        try:
            st, got, doc, kept, dest = self.settled({(16, 5), (64, 5)}, [0, 5])
        finally:
            multipass_mod.MT_RESUME_MIN = old
        self.assertEqual((got[1], len(kept)), (0, 1))
        self.assertNotIn("resumed", doc)


def pinned(st, n):
    """SH's recorded run made a run of N ops per thread (no timer): what
    the rounds leave after the multi-thread path kept one."""
    a = [x for x in st.best.op["argv"] if not x.startswith("--duration=")]
    st.best.op["argv"] = opt_set(a, "ops_per_thread", n)
    return st


class TestMultiAgain(unittest.TestCase):
    # K23: the path's first keep can be its largest size (planted bug
    # control-redo-is-checkpoint: 2 x 1,024 ops kept, 2 x 357 after the
    # rounds, the shrink over at 79 s of 600).

    def no_rounds(self):
        """The rounds K23 runs on what it keeps: none when it keeps none."""
        self.fail("the rounds ran: a run was kept")

    def test_again_tries_only_the_sizes_below_the_shrunk_run_smallest_first_each_with_every_seed(
        self,
    ):
        st = pinned(stub_state(5), 256)
        self.assertFalse(multipass.p_multi(st, again=True))
        got = [shape(c) for c in st.runner.attempts]
        self.assertEqual(sorted({g[0] for g in got}), [16, 64])
        self.assertEqual([g[0] for g in got], sorted(g[0] for g in got), "every 16 before any 64")
        for n in (16, 64):
            self.assertEqual(len({g[1] for g in got if g[0] == n}), MT_AGAIN_SEEDS)
        self.assertEqual(got[0][1], 5, "the shrunk run's seed first")
        # The first path (not again) runs once: after it, only again runs it.
        self.assertFalse(multipass.p_multi(st))
        self.assertEqual(len(st.runner.attempts), len(got))

    def test_a_race_another_seed_shows_in_fewer_ops_is_kept_and_the_rounds_run_on_it(self):
        # Fails with 64 ops each or more, only with a seed other than 5,
        # and the rounds left 2 x 1,024 ops with seed 5: again keeps 64
        # with another seed before trying 256, the rounds run once on it,
        # and again from 64 tries 16 and keeps nothing.
        st = pinned(stub_state(5, lambda c: shape(c)[0] >= 64 and shape(c)[1] != 5), 1024)
        rounds = []
        self.assertTrue(multipass.multi_again(st, lambda: rounds.append(shape(st.best))))
        self.assertEqual(shape(st.best)[0], 64)
        self.assertNotEqual(shape(st.best)[1], 5)
        self.assertEqual(rounds, [shape(st.best)])
        self.assertEqual(
            max(shape(c)[0] for c in st.runner.attempts), 64, "256 never tried: 64 kept first"
        )
        self.assertEqual(st.multi["ops_per_thread"], 64)

    def test_a_race_only_a_later_sweep_of_seeds_shows_in_fewer_ops_is_met(self):
        # Planted bug control-redo-is-checkpoint: a recorded run of 812
        # ops, 2 x 1,024 kept, and nothing smaller in one sweep of
        # six seeds with 547 s of the budget left (1.1x).  A race that only
        # the third sweep's seeds show at 16 ops each: each sweep tries new
        # seeds (the run's own once), and the third keeps 2 x 16.
        m = MT_AGAIN_SEEDS - 1
        lots = [
            {derive(5, "shrink", "multi", j) for j in range(k * m, (k + 1) * m)} for k in range(3)
        ]
        st = pinned(stub_state(5, lambda c: shape(c)[0] == 16 and shape(c)[1] in lots[2]), 64)
        self.assertTrue(multipass.multi_again(st, lambda: None))
        self.assertEqual(shape(st.best)[0], 16)
        self.assertIn(shape(st.best)[1], lots[2])
        seeds = {shape(c)[1] for c in st.runner.attempts}
        self.assertLessEqual(lots[0] | lots[1], seeds, "the first two sweeps' seeds, each tried")
        self.assertLessEqual(seeds, {5} | lots[0] | lots[1] | lots[2])
        self.assertEqual(
            len(set(map(signature, st.runner.attempts))),
            len(st.runner.attempts),
            "no candidate judged twice (the run's own seed's in the first sweep only)",
        )

    def test_sweeps_stop_at_their_count_or_once_the_run_has_no_smaller_size(self):
        st = pinned(stub_state(5), 64)
        self.assertFalse(multipass.multi_again(st, self.no_rounds))
        self.assertEqual(
            len({shape(c)[1] for c in st.runner.attempts}),
            1 + MT_AGAIN_SWEEPS * (MT_AGAIN_SEEDS - 1),
        )
        self.assertEqual({shape(c)[0] for c in st.runner.attempts}, {16})
        st = pinned(stub_state(5), MT_OPS[0])
        self.assertFalse(multipass.multi_again(st, self.no_rounds))
        self.assertEqual(st.runner.attempts, [], "2 x 16: nothing below it")

    def test_nothing_again_for_one_thread_or_a_short_budget(self):
        st = pinned(stub_state(5, lambda c: True), 1024)
        st.best.op["argv"] = opt_set(st.best.op["argv"], "threads", 1)
        self.assertFalse(multipass.multi_again(st, self.no_rounds))
        st = pinned(stub_state(5, lambda c: True), 1024)
        st.left = lambda: MT_RESUME_MIN - 1
        self.assertFalse(multipass.multi_again(st, self.no_rounds))
        self.assertEqual(st.runner.attempts, [])


class TestNotFailedAgain(unittest.TestCase):
    def test_a_recorded_run_that_did_not_fail_again_is_searched_from_a_fresh_database_before_two_threads(  # noqa: E501
        self,
    ):
        # K6: one thread on the grown database, then (K14's search) one
        # thread from a fresh database after 200 ops and after the key
        # space filled, then the multi-thread path (K8).
        st = stub_state(5)
        st.dir, st.kind, st.budget, st.hang = "/nonexistent/f", "unrecoverable", 600, 60
        st.failure = {"step": 0, "step_name": "workload"}
        st.meta.update({"seed": 9, "db_params": {"page_size": 8192}})
        st.grown_ops = lambda c: 0
        calls = []

        def attempt(what, c, phase, **kw):
            st.log.append(
                {
                    "what": what,
                    "trials": 5,
                    "failures": 0,
                    "ops": [337] * 5,
                    "ops_all": [337] * 5,
                    "seconds": [2.0] * 5,
                    "verdict": "rejected",
                }
            )
            return False

        def search(start, ops, nseeds=None, share=None, phase="search", what=""):
            create = start.steps[0] if start.fresh else None
            calls.append(
                (
                    phase,
                    ops,
                    create
                    and (
                        opt_get(create["argv"], "ops_per_thread"),
                        opt_get(create["argv"], "writepercent"),
                    ),
                )
            )
            return False

        st.runner.attempt = attempt
        fake(self, "search", search)
        fake(
            self,
            "p_multi",
            (
                lambda start=None, start_ops=None, again=False, sweep=0: calls.append(
                    ("again" if again else "multi", start_ops, sweep if again else None)
                )
                and False
            ),
        )
        ok, _, base = Shrinker(st).shrink()
        self.assertFalse(ok)
        # (max_key 8: the filled key space's create step is 200 batches,
        # its least, and no single puts; then K23's sweeps of other seeds)
        self.assertEqual(
            calls,
            [
                ("search", 337, None),
                ("fresh", 337, ("200", None)),
                ("fresh", 337, ("200", "0")),
                ("multi", 337, None),
            ]
            + [("again", 337, k) for k in range(MT_AGAIN_SWEEPS)],
        )
        self.assertFalse(base["failed_again"])

    def test_a_recorded_run_that_did_not_fail_again_sweeps_other_seeds_with_two_threads(self):
        # Planted bug horizon-newest-snapshot: the recorded run can fail 0
        # of 5 tries the same way, no one-thread seed does, and the
        # multi-thread path's 132 candidates pass or fail another way;
        # with no sweeps the shrink gives up at 103 s of 600.  A race only
        # the second sweep's seeds show is met.
        m = MT_AGAIN_SEEDS - 1
        second = {derive(5, "shrink", "multi", j) for j in range(m, 2 * m)}
        st = stub_state(5, lambda c: shape(c)[0] == 64 and shape(c)[1] in second)
        st.start = st.dir = "/nonexistent/f"  # the folder's ledgers: none (nothing struck)
        start = st.best
        self.assertFalse(multipass.p_multi(st, start=start, start_ops=337))
        self.assertTrue(multipass.sweeps(st, start, 337, "from the recorded run"))
        self.assertIn(shape(st.best)[1], second)
        self.assertEqual(
            len(set(map(signature, st.runner.attempts))),
            len(st.runner.attempts),
            "no candidate judged twice",
        )

    def test_a_run_of_several_threads_that_failed_again_is_searched_from_a_fresh_database_too_before_two_threads(  # noqa: E501
        self,
    ):
        # Planted bug witness-at-end-is-damage: the recorded four-thread
        # run fails again, its 16 one-thread seeds on the grown database
        # pass, and K8's 240 candidates too (1.0x); from a fresh database
        # the seventh seed fails.  p_threads (before p_multi in a
        # round) runs K14's search too, once.
        st = stub_state(5)
        st.meta.update({"seed": 9, "db_params": {"page_size": 8192}})
        st.hang, st.searched, calls = 60, False, []

        def search(start, ops, nseeds=None, share=None, phase="search", what=""):
            create = start.steps[0] if start.fresh else None
            calls.append((phase, ops, create and opt_get(create["argv"], "ops_per_thread")))
            return False

        fake(self, "search", search)
        optpass.p_threads(st)
        self.assertEqual(
            [opt_get(c.op["argv"], "threads") for c in st.runner.attempts],
            ["1"],
            "one thread, the recorded seed",
        )
        self.assertEqual(
            calls, [("search", 337, None), ("fresh", 337, "200"), ("fresh", 337, "200")]
        )
        rounds = Shrinker(st).round_steps()
        self.assertLess(rounds.index(optpass.p_threads), rounds.index(multipass.p_multi))
        optpass.p_threads(st)
        self.assertEqual(len(calls), 3, "the searches run once")
        fake(
            self,
            "search",
            (lambda start, ops, phase="search", **kw: calls.append(phase) or phase == "search"),
        )
        st.searched, calls[:] = False, []
        optpass.p_threads(st)
        self.assertEqual(calls, ["search"], "a seed kept on the grown database ends it")


if __name__ == "__main__":
    unittest.main()
