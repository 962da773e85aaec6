"""crashtest.py shrink FAILURE_DIR: a saved failure reduced to the smallest
run that still shows it (docs/shrinking.md; the rules are
here).

repro replays a failure exactly; a reader then wants the smallest run that
still fails: one thread, a few ops, one fault at the op that matters.
Property-based testing tools shrink automatically; this does the same for
a crash-test iteration.  The folder's recorded steps (C2) are the run:
every trial is a changed copy of them, replayed on a copy of the start
snapshot by the same Executor that ran them, and judged the same way.

Rules:
  K1  a change is kept only if the trial fails with the failure's own kind
      (a lost stays a lost).  A trial that fails with another kind is a new
      failure: its folder is kept aside (FAILURE_DIR/shrink-aside/N, repro
      reads it), never taken as success.  A trial whose crash step passed
      instead of crashing (or the reverse) diverged: rejected (a last step
      has no steps planned on it: it passed, or failed).  With --match keys
      (off by default), a trial whose failure keys include the kind fails
      the same way too (the judge names a failure by the first of
      params.FAILURE_KEYS it shows: a false_alarm that comes with a
      wrong_value is a wrong_value); the shrunk folder keeps the kind, the
      trial's own as judged_as (K24).  A kept trial that fails at an earlier
      step loses the steps after it; when the op step went with them, the
      last workload step left is the op step (a create step that shows the
      bug with 7 keys), and with none left it is not kept.  The recorded
      run's own tries go on after one that fails earlier than the recorded
      step, and the first that fails at it is kept: the shrink starts from
      the failure the run recorded when its tries show it (planted bug
      durable-publishes-insert: tries that lose a commit in the op step
      itself, before the recorded crash, would set the form of the whole
      shrink; a folder whose tries never fail at the recorded step shrinks
      no better for this).
  K2  a trial is deterministic when every stress step it runs has one
      thread, a fixed op count (or an op trace) and no SIGKILL on a timer;
      it runs once.  Otherwise the recorded run gets up to 5 tries (one must
      fail), and each change up to TRIALS (3) runs (multipass.MT_TRIALS once
      the multi-thread path, K8, kept a run), kept if NEED (2) of them fail
      the same way (so the failure rate stays near the recorded run's
      instead of drifting to a rare one; 1 when the recorded run failed in
      fewer than half its tries); the runs stop once the verdict is decided.
      shrink.json has the runs and the observed rate of each step.
  K3  what is reduced, in order of what helps a reader most: threads (to
      one), the op count pinned and a timed SIGKILL made a crash after the
      last op (--crash_at_end; with one thread the same run untraced with
      its own seed first, then K6's traced search), the ops traced (stress --trace_ops: each
      op draws from a seed of its own), the op count (this early so that
      every later trial is shorter; a run that must stay timed, its kill
      earlier instead: p_timer); fault classes (each dropped), kill
      points (the one that fired, at its first hit), fault rates; the op
      mix; a fresh database instead of the grown one, the ops of the step
      that creates it, then the key space; the cache size and the other
      options toward stress's defaults; the power-loss mode (keep, then
      rollback: the fewest writes rolled back or torn); then delta
      debugging on the op trace (stress --replay_ops: first only the ops
      that touch the failing key, then the options whose effects the
      trace does not pin set to stress's defaults (optpass.UNTIED), then every
      page or cache flip the run drew pinned where it landed (p_pin_flips:
      flip:BLOCK:BIT, cflip:BLOCK:BIT; a drawn flip picks its block by the
      file's size and the blocks' LSNs, a cache flip among the resident
      ones, so every removal moves it) and a kill point that
      ended the op step pinned in its op (K16), then checkpoints by
      log volume sooner (p_volume: checkpoint_wal_bytes at 1/16 ... 1/2,
      and on a fresh database log segments of 64 KiB, 256 KiB ...: a
      failure that needs one, or segments recycled, needs fewer ops), then every op
      of one type (p_types: the scans a failure does not need are spread
      over the whole run, and no chunk of consecutive ops holds only
      them), then chunks of ops removed while it still fails (a later
      pass starting near the chunk size the last reached); inside the rounds at most
      DDMIN_ROUND_SHARE of the budget left) and the faults of every op
      that needs none turned off.  A run's size (shrink.json's
      ops) is the ops of all its stress steps, a create step's too.
  K4  the budget (--budget, seconds) bounds the whole: no trial starts
      after it, and a stress step still running a minute after it is
      stopped (an error, not a hang); the best run so far is the result.
  K5  creation-time options and the key space (C3) change only together
      with a fresh database (the step that creates it is then the first).
  K6  one thread where the bug allows: a bug rarely needs threads, it needs
      a schedule.  When one thread with the recorded seed does not fail the
      same way, a seed search: one thread, as many ops as all threads did
      (at most searchpass.SEARCH_MAX_OPS), a timed SIGKILL made a crash
      after the last op or else a kill point (the log's write-before-sync
      point, then any), traced, with the recorded seed and
      searchpass.SEARCH_SEEDS others; the first that fails the same way is
      kept.  A failing recovery step's own timed SIGKILL goes in every seed
      tried (K11's: it can only hide the failure, and no trial is
      deterministic with it: with it planted bug witness-at-end-is-damage's
      eight seeds pass three trials each; without it the 13th fails, one
      trial each).  When every seed passed and the recorded run had several
      threads and held no snapshot, the same seeds again with a snapshot
      held 1 in searchpass.STANDIN_SNAPSHOT_ONE_IN ops: the reader another
      thread was, which a freeze or a prune must respect, stood in for by
      one the thread holds itself (planted bug freeze-clears-xmax).  The
      same search runs when the recorded run (several threads, a timed kill)
      does not fail again in its tries (searchpass.FALLBACK_SEEDS seeds,
      searchpass.FALLBACK_SHARE of the budget).  Either search, when no seed
      failed, runs again from a fresh database (K14's) before K8 looks for a
      race (planted bug witness-at-end-is-damage: a four-thread catch whose
      16 seeds on its grown database pass, and K8's 240 candidates too,
      1.0x; from a fresh database the seventh seed fails, 144x).  Each seed
      tried is in shrink.json; a different kind met on the way goes aside
      (K1), never success.
  K7  the op count of a deterministic run (traced, or not when every
      traced run passed) halved while it fails, then short runs with other
      seeds (optpass.SHORT_OPS ops, each at most a tenth of the count
      left, optpass.SHORT_SEEDS seeds each, then the same with the rare ops scaled as
      K8 scales them, then with its fault classes scaled too: a
      checkpoint one in 2,000 ops never comes in 64):
      a failure that
      rests on where the run ends (the log's end in a block's first
      sector) comes and goes with every op, and no removal of ops keeps
      it.  An op step a kill point ends, when a later step fails, keeps
      its kill point in them, firing 1 in a quarter of their hits.
      Once a trace exists, delta debugging on it comes before the option
      steps (each later trial is then a few ops).
  K9  a one-thread op step that a kill point ends, when a later step
      fails: the kill made a crash after the op it fired in
      (--crash_at_end), before the op count is halved.  A kill point
      counts hits, so every op removed moves it and halving or delta
      debugging stops at the first removal that no longer reaches it; a
      crash after the last op stays where the ops end (planted bug
      page-before-wal: 5.6x with its kill point).
  K8  a failure that one thread does not show (K6's search passed or failed
      another way) needs a second thread: a reader meeting a writer's
      running version, an older snapshot held while a newer one sets the
      horizon, records logged during a checkpoint or a group commit's fsync.
      Contention makes such races frequent, so the multi-thread path
      searches as K6 and K7 do for one thread: multipass.MT_THREADS (2)
      threads, short runs with a pinned op count per thread
      (multipass.MT_OPS, smallest first, in two passes: each size and key
      space with the recorded seed in each shape first, then the other
      seeds; never a timed --duration run, which grows as every change makes
      the run faster), a small key space (multipass.MT_KEYS, on a fresh
      database, then the recorded one), multipass.MT_SEEDS seeds each, the
      endings of cand.mt_endings (a timed SIGKILL made a crash after the
      last op, then none; kill points rescaled to fire in a short run, then
      none: a failure a later step found may show in the op step itself, the
      steps after it gone; only none when none fired in the failing op
      step), and the rare ops of multipass.MT_SCALED that would come less
      than once in the run every quarter of it, a snapshot held a quarter of
      it (a snapshot held across 200 ops is never read again in a run of
      64); then the same with each fault class that struck the recorded op
      step (its ledger lines) but would strike less than once in the short
      run striking about multipass.MT_FAULT_TIMES times in it (planted bug
      control-redo-is-checkpoint: a checkpoint while the other thread
      writes, then one ENOSPC in 12,000 ops that reopens the database; 4.9x
      without, 107x with); and, with the recorded seed after every key space
      in the run's own mix, the smallest key space in each contention mix
      (multipass.contention_mixes: two kinds of the run's mix, one a writer,
      half the ops each; planted bug hint-aborted-while-in-progress needs a
      scan to meet a batch before it commits: 2 x 64 ops with scans at 11%
      and batches at 48% failed 0 of 10 runs, 2 x 16 ops of scans and
      batches at half each 2 of 20).  Each candidate is judged by up to
      multipass.MT_TRIALS trials and kept when multipass.MT_NEED of them
      fail the same way (the stated minimum rate; once one of them failed,
      up to multipass.MT_MORE more trials decide it: a race that short runs
      show one time in four is still a run a reader can repeat, and the 10x
      smaller runs are the short ones), then confirmed by up to
      multipass.MT_CONFIRM more trials, of which multipass.MT_REPRO_NEED
      must fail too, as many as its repro will need (two of a few trials can
      be luck with a rare race among the path's many candidates); the first
      kept wins, and every later step is judged the same way (the op count
      halved, the mix, the options ...).  It runs after K6's search, and
      also when the recorded run did not fail again and K6's fallback found
      nothing (then K23's sweeps while it keeps none).  When the recorded
      run's tries failed only at an earlier step (K1's baseline kept it, its
      later steps cut), its candidates are built from the recorded steps
      (the cut form lacks the crash they end with: planted bug
      durable-publishes-insert, whose tries lost commits only in a reopen
      inside the workload, needs an append during another thread's fsync and
      then a crash).  shrink.json has each candidate's trials, failures and
      rate, and "multi" what was kept; the shrunk folder's meta.json has
      repro_tries: its repro replays that many times and prints how many
      reproduced.  That is trials.MT_REPRO_TRIES, or more (at most
      trials.MT_REPRO_MAX) where the observed rate (the least of K8's keep
      with its confirmation and the last step kept) expects fewer than
      trials.MT_REPRO_EXPECT of them to reproduce: a two-thread run of 711
      ops that fails one time in six is a run a reader can repeat, if repro
      tries it often enough.  A chain of steps each kept on two of a few
      trials can drift to a rare run: when fewer than
      multipass.MT_REPRO_NEED of the tries reproduce, the runs kept before
      it that are not deterministic (K8's, or K2's repeated trials of a run
      with a timed kill) are tried, latest first, multipass.MT_STEP_BACK at
      most, then the run the path itself kept (multi's step), and the first
      that reaches multipass.MT_REPRO_NEED is the result, else the one of
      them that reproduced most often; the recorded run (the baseline's kept
      trial) last, only when no smaller run reproduced at all (shrink.json's
      stepped_back lists each one tried; a one-thread run with its timed
      kill, each step kept on one of three trials, can end at 0 of 8:
      planted bug checkpoint-skips-data-fsync).
  K10 no kept run that is not deterministic is larger than the recorded
      one: such a trial that fails the same way with more ops (every
      stress step's) than the recorded run had (the largest of its tries:
      a timed run's size varies from try to try) counts as passing.  A
      pinned run with kill points can run past where the recorded run
      ended, and halving a run kept on two of a few trials stops early
      (planted bug hint-aborted-while-in-progress: a two-thread run
      pinned at four times the recorded ops for its kill points, 5,771 ->
      18,707 ops).  A deterministic run may be larger for a while (one
      thread doing all the ops of several, with room for the failure to
      come): halving and delta debugging cut it one trial a step.  A
      failure in the op step itself came before any kill point fired, so
      pinning tries that step without them first.  One thread in a timed
      run does more ops in the time than several did: the thread step's
      one-thread run is traced, and when K10 refuses it the trace of a try
      that failed is replayed (p_threads): that try's run, deterministic,
      it may be larger a while.  Not its op count pinned: a pinned run
      spreads --reopen over the count, a timed one over the time, and the
      replay puts each reopen where it came (p_pin replays a kept timed
      one-thread run the same way).
  K11 the failing step's own timed SIGKILL goes, first, when it is not
      the op step: a recovery SIGKILLed after a fraction of a second whose
      failure came before the kill.  The kill races the failure (planted
      bug checkpoint-skips-data-fsync: with the op step traced, recovery
      replays more log and is killed before it verifies, so every
      one-thread run passes), and a timed kill makes no run deterministic.
  K12 a first step that creates the database with one thread, a fixed op
      count, no fault, no kill and no timer leaves the same database each
      time: its state is kept after its first run and copied into every
      later trial that runs the same step (trials.made_key).  Delta
      debugging changes only the op step, and the create step would be a
      third of each trial's time.  The shrunk folder's repro runs every
      step.
  K13 a recovery step between the op step and the failing one that a timer
      SIGKILLs (a restart that recovers, verifies and is killed after a
      fraction of a second) lands wherever that recovery was at that time; a
      run with other ops recovers faster or slower and is killed elsewhere
      or not at all (planted bug page-before-wal: every one-thread run
      diverges, its recovery done before the kill).  The timer goes, in the
      order of steppass.RECOVERY_KILLS: the step ends by itself (a failure
      the kill hid shows in it), crashes once the database is open
      (--crash_at_end), or is killed at one of recovery's kill points at its
      first hit.  K6's one-thread search crashes such a step once open.
  K14 a run on a database that earlier iterations grew was made by them
      too: its size counts their ops (meta.json db_ops), the recorded
      run's and every shrunk run's that still starts from that database,
      and a fresh database (p_fresh) is tried early, right after the
      thread and pinning steps: the run as it is, then (one thread) its
      op step untraced from a fresh database with K6's seed search (200
      ops, then the key space filled; twice more as options change, at
      the kept run's own op count first when it has fewer ops than the
      recorded op step: a bug a fresh database shows quickly in another
      kind may show its own in a few ops; a kill K16 pinned in the
      trace drawn again at its point).  A few ops replayed on a database
      whose damage its earlier iterations wrote show the reader nothing
      of how it got there (planted bug
      seal-before-witness, a simple run's second iteration: 289 ops
      shrunk to 44 on the grown database, counted as 6.5x).
  K15 what a fresh database lacks, given back (freshpass.py): pinned page
      flips moved onto its first blocks (fresh_flips: a flip pinned on block
      670 of a grown file lands on nothing, and a failure that rests on
      which byte of a page it flips shows on any page); and when K14's
      search from a fresh database fails too, the database grown again as
      the recorded one was (regrown): each earlier iteration's workload
      (meta.json history) redone with one thread, its ops (at most
      freshpass.HISTORY_MAX_OPS), options, faults and seed and no kill,
      after the create step, then K6's search on the op step.  A fault class
      only an earlier iteration drew (a failed write-back whose page a later
      iteration reads) comes back with it.  p_history then drops each such
      step, or cuts its ops as p_create cuts a create step's.
  K16 an op step that a drawn kill point ends replays with the kill
      pinned in the op it fired in (kill:POINT:N, tracepass.p_pin_kill:
      a drawn kill counts hits, and every removal moves it).
  K17 checkpoints the log's volume started made ops of their own when
      checkpoint_wal_bytes cannot go to its default (p_tie_checkpoints).
  K18 a hang's --hang_seconds shortened first (trials.p_hang).
  K19 a deterministic trial (K2) runs in a RAM-backed directory (--ram-dir,
      /dev/shm by default when it is a tmpfs with 2 GiB free, checked
      before each trial): with one thread and its ops pinned its outcome
      does not depend on how long an fsync takes, and a run committing
      with sync_mode=commit spends most of its time in them (a create
      step of 1,000 batches: 0.67 s on this machine's disk, 0.11 s there).
      A trial that is not deterministic runs on the disk of $TMPDIR,
      where its races are timed as the recorded run's were; the shrunk
      folder's repro runs there too (its seconds are docs/shrink-measurements.md's).
  K20 a shrunk run the multi-thread path (K8) led to that reproduced fewer
      than multipass.MT_REPRO_NEED times resumes the path, whether or not a
      run stepped back to reproduced enough: the run it kept was kept on a
      rate its repro did not show again, and everything kept after it stands
      on it.  The path goes back to the run it started from and goes on with
      the candidates after the one it kept (each candidate is judged once),
      the rounds run on what it keeps next, and that run's repro is judged
      the same way, while multipass.MT_RESUME_MIN (60 s) of the budget is
      left.  The result is the smallest run that reproduced
      multipass.MT_REPRO_NEED times (ties: the latest), else the one that
      reproduced most often (ties: the latest); the recorded run is stepped
      back to only when no resume is left and no smaller run reproduced at
      all (planted bug checkpoint-redo-at-record: 2 x 64 ops reproduce 1 of
      8 and the 2 x 256 stepped back to 3 of 8; without a resume that run
      stands and the shrink is over at 169 s of 600 with 8.8x).
      shrink.json's resumed lists each run left behind (the path's step, its
      repro's rate, what it stepped back to).  Why: planted bug
      hint-aborted-while-in-progress's keep on 2 of 8 trials and 1 of 2
      confirmations reproduces 0 of 10 (1 of 100 when tried again), and
      without a resume the shrink is over at 104 s of 600.
  K21 a deterministic traced run from a fresh database of 10 ops or more
      whose values are under 1,024 bytes tries them all 1,024 bytes, then
      delta debugging again, last of all (tracepass.p_values): a failure
      that rests on how much log was written needs fewer ops of larger
      values.  When that does not halve the ops, the values go back and
      the pass's kept steps are marked "undone" in shrink.json.
  K22 the writes a power-loss step after the op step rolled back or tore
      in the failing variant (its ledger lines) pinned where they landed,
      the step in keep mode (tracepass.p_pin_powerloss, powerloss --pin,
      faults/powerloss.c PL8): the newest undone write of the block the
      failure names, then that block's, then every one (at most 64).  The
      fewest writes undone, and removing ops no longer moves them.
  K23 a run of several threads left by the rounds, with
      multipass.MT_RESUME_MIN of the budget left: K8's path again from it
      (multipass.multi_again: the sizes below its own, smallest first,
      multipass.MT_AGAIN_SEEDS seeds each, and multipass.MT_AGAIN_SWEEPS
      sweeps of others at most), the rounds on each keep.
  K24 a recorded run that failed again in none of its tries with its kind,
      but in some with another kind that had its kind among its failure keys
      (the judge names the first of params.FAILURE_KEYS: a lost beside a
      wrong_value is a wrong_value), is shrunk with the match by keys of K1
      (trials.by_keys): the run shows the kind, named another way.  Its
      tries are run again so matched, and every later trial is judged so.
      shrink.json says why ("match_why") and what the judge named the shrunk
      run ("judged_as"); the shrunk folder keeps the kind, and its repro
      reproduces when the kind is among the keys (planted bugs
      durable-publishes-insert and horizon-newest-snapshot: a lost and a
      resurrected whose recorded runs fail again only as other kinds, their
      own among one try's keys each).
  K25 a trial that hangs when the failure is another kind (kept aside,
      K1), or is stopped as too slow (an error), ends its change's
      trials, and the same change (what it says) is not tried again in a
      later round: each costs the watchdog's or the step's time
      (planted bug page-before-wal: sync_mode set to its default is
      judged "hung" in three trials, 123 s each, 369 s of a 600 s budget
      for one change: pinned runs that fsync every commit, past the 122 s
      a timed step has, slow and not hung: executor.py).
  K26 a create step in front of an op step that replays a trace is folded
      into it (freshpass.p_fold_create), and so are the steps that regrow
      a database between them (K15), each ending in a restart, their
      faults off (drawn at their own rates): delta debugging then cuts
      their ops too, where p_create and p_history cut them from the end
      only (planted bug page-before-wal: cut from the end, 200 + 6,210
      regrowing ops in front of 13 keep every one, 1.3x).  Each
      restart names the open options the process after it ran with
      where they differ from the op step's (stress's restart KEY), so
      the folded ops run as they ran (a create step of 1,000 ops replayed
      with the op step's 256 KiB cache instead of its 64 MiB passes); a
      fold that does not fail the same way is undone.
  K27 a failing step on one power-loss variant's copy drops the variants
      before it that it does not stand on, and what ran on their copies
      (steppass.p_branches, first in each round and again once the
      thread steps have run; the seed search starts without them too): a
      restart killed on a timer there diverges from run to run and its ops
      count in the run's size.
  K28 what a failure needs brought sooner, on a traced run before delta
      debugging (tracepass.ids_further, evict_sooner, beside p_volume's
      checkpoints and segments): on a fresh database its first
      transaction id (stress --first_xid, creation time) as far on from
      the run's own as the run's ops took the ids, then half as far; a
      cache below stress's default at the engine's least (16 pages), then
      4 and 16 times that.  Each once a shrink and again once K22 pinned
      the power loss (before it, a sooner write-back or other ids move
      the tear), the first that fails the same way kept.  A
      failure that needs ids far along (a commit-log entry past its
      page's first sector) or a page evicted then needs no ops that only
      led there (planted bug fpi-skips-page-at-redo-lsn, commit-log path:
      a one-thread run from a fresh database needs transaction 1,888, and
      without K28 its shrinks stay near 1,900 ops of 2,400-2,600 recorded;
      with the ids started at 2,493, 2,821 -> 110).

Files: FAILURE_DIR/shrunk/ (the layout repro reads: meta.json with
"replay_from": "start", start/, bin/, ops.trace when the run replays one),
FAILURE_DIR/shrink.json (every step tried: what, trials, failures, rate,
kept or rejected and why; the original and shrunk measures), and the
final command printed.  The op trace's format is docs/formats.md's
(stress/trace.c writes and parses it)."""

import os
import shlex
import shutil
import subprocess
import sys
import time

from . import freshpass, multipass, optpass, steppass, tracepass, trials
from .binary import check_binary, stress_info
from .cand import Cand, as_int, is_fresh, is_workload, opt_get, trace_ops_of
from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    INTERRUPTED,
    REPO,
    UsageError,
    nice_path,
    write_json,
)
from .executor import subst
from .folders import WORK_PREFIX, make_work_dir, remove_work_dir
from .multipass import MT_NEED, MT_TRIALS
from .output import Printer
from .procs import STOP, Stopped, die_with_parent
from .repro import failing_key, read_meta
from .searchpass import FALLBACK_SEEDS, FALLBACK_SHARE
from .shrinkstate import ShrinkState
from .trials import RAM_DIR, RAM_MIN_FREE, TrialRunner, ram_root

DEFAULT_BUDGET = 600
TRIALS = 3  # runs per change when a trial is not deterministic (K2) ...
BASELINE_TRIALS = 5  # tries of the recorded run when it is not deterministic
# ... of which this many must fail the same way (a rate kept near the
# start's, not drifting to rare)
NEED = 2
# Delta debugging inside the rounds (K3) may spend this share of the budget
# left when it starts: a failure that needs nearly every op of a long list
# (a tree's shape at a split) would otherwise use all of it, and the
# option steps after it (a fresh database, fewer keys, the cache) never
# run.  The passes after the rounds take what is left.
DDMIN_ROUND_SHARE = 0.5


def binary_defaults(binaries):
    """stress's option defaults, BINARIES (placeholder -> path) checked
    first; a stress without --trace_ops cannot be shrunk with."""
    check_binary(binaries["@STRESS@"], "stress")
    check_binary(binaries["@POWERLOSS@"], "powerloss")
    defaults = stress_info(binaries["@STRESS@"])["options"]
    if "trace_ops" not in defaults:
        raise UsageError(
            "%s has no --trace_ops: rebuild it (or give --stress-binary)" % binaries["@STRESS@"]
        )
    return defaults


def recorded_cand(steps, fail_n, d):
    """The recorded run of failure folder D as a candidate: STEPS up to the
    failing one FAIL_N, its op step the last workload step up to it (a
    usage error when there is none)."""
    w = (
        fail_n
        if is_workload(steps[fail_n])
        else max(
            [i for i in range(fail_n) if is_workload(steps[i])] or [None],
            key=lambda x: -1 if x is None else x,
        )
    )
    if w is None:
        raise UsageError("no workload step before the failure: nothing to shrink")
    best = Cand(
        [{k: v for k, v in s.items() if k != "result"} for s in steps[: fail_n + 1]],
        False,
        None,
        w,
        [(s.get("result") or {}).get("outcome") for s in steps[: fail_n + 1]],
    )
    # A shrunk folder replays its own ops.trace (@FOLDER@): shrinking
    # it again starts from that list.
    tr = opt_get(best.op["argv"], "replay_ops") or ""
    if tr.startswith("@FOLDER@/"):
        best.trace = trace_ops_of(os.path.join(d, tr[len("@FOLDER@/") :]))
    return best


def new_state(a, printer):
    """The state of a shrink of the failure folder A.failure_dir (A: the
    shrink mode's arguments: budget, stress_binary, powerloss_binary,
    match, ram_dir), lines to PRINTER, its runner bound to it: the
    recorded run is the best so far.  A usage error when the folder
    cannot be shrunk; the work folders are made last."""
    st = ShrinkState(p=printer, dir=os.path.abspath(a.failure_dir), budget=a.budget)
    mpath = os.path.join(st.dir, "meta.json")
    st.meta = read_meta(mpath, a.failure_dir)
    st.failure = st.meta.get("failure")
    if not st.failure:
        raise UsageError("%s records no failure: nothing to shrink" % mpath)
    st.kind = st.failure["kind"]
    st.match = getattr(a, "match", "kind") or "kind"
    st.start = os.path.join(st.dir, "start")
    if not os.path.isdir(st.start):
        raise UsageError("%s is missing" % st.start)
    st.bin = {k: os.path.join(st.dir, v) for k, v in st.meta["binaries"].items()}
    if a.stress_binary:
        st.bin["@STRESS@"] = os.path.abspath(a.stress_binary)
    if a.powerloss_binary:
        st.bin["@POWERLOSS@"] = os.path.abspath(a.powerloss_binary)
    st.defaults = binary_defaults(st.bin)
    st.best = recorded_cand(st.meta["steps"], st.failure["step"], st.dir)
    st.recorded_threads = as_int(opt_get(st.best.op["argv"], "threads"), 2)
    st.work = make_work_dir(WORK_PREFIX + "shrink-")
    # K19: deterministic trials in RAM where there is room.
    root = ram_root(getattr(a, "ram_dir", RAM_DIR))
    st.ram = make_work_dir(WORK_PREFIX + "shrink-", root) if root else None
    st.need, st.runs, st.more = NEED, TRIALS, 0
    st.hang = st.meta.get("hang_seconds", 120)
    # K14: the ops the database's earlier iterations did (None: a folder
    # whose meta.json has no db_ops).
    st.history = 0 if is_fresh(st.best) else st.meta.get("db_ops")
    st.runner = TrialRunner(st)
    return st


class Shrinker:
    """One shrink (K3's order), the orchestration of the passes on STATE
    (new_state builds it from a failure folder): the baseline and the
    passes (shrink, refine, rounds), then shrunk/ and shrink.json
    (finish).  The passes are functions of the state and its runner
    (shrinkstate.py); the Shrinker holds nothing else."""

    def __init__(self, state):
        self.state = state

    def multi_again(self):
        """K23 on the state, the rounds again on each keep (multipass)."""
        return multipass.multi_again(self.state, self.rounds)

    def settle(self, dest, doc):
        """The repro of a shrunk run that is not deterministic, the rounds
        again after a resume (multipass.settle)."""
        return multipass.settle(self.state, dest, doc, self.refine)

    def shrink(self):
        """The baseline (the recorded run tried again, K2, K24, K10), then
        refine when a run that fails was found: (whether one was, the
        recorded run, its baseline's result)."""
        st = self.state
        p = st.p
        orig = st.best.copy()
        p.line(
            "shrink: %s (%s at step %d, %s), budget %g s"
            % (
                nice_path(st.dir),
                st.kind,
                st.failure["step"],
                st.failure.get("step_name"),
                st.budget,
            )
        )
        # Does it come back at all?  A run that is not deterministic gets up
        # to BASELINE_TRIALS tries; its rate sets how many of each later
        # step's trials must fail (K2).
        runs = 1 if orig.deterministic() else BASELINE_TRIALS
        st.orig, st.base = orig, None  # what finish() reads if a stop cuts the shrink short
        n0 = len(st.log)
        ok = st.runner.attempt(
            "the recorded run, unchanged",
            orig.copy(),
            "baseline",
            runs=runs,
            need=1,
            at=len(orig.steps) - 1,
        )
        ok = ok or (runs > 1 and st.runner.by_keys(orig, runs))  # K24
        # K10: no kept run is larger than the recorded one (its largest
        # try: a timed run's size varies from try to try, and a change
        # that keeps its timer is no larger for a try that ran longer).
        e = st.log[-1]
        ops = max([o for o in e["ops"] if o] or [0]) or None  # the most a try's op step did
        st.cap = (
            max(
                [o for x in st.log[n0:] for o in x["ops_all"] if o]
                + [(st.best_res or {}).get("ops_all") or 0]
            )
            + st.grown_ops(orig)
        ) or None
        if ok and runs > 1:
            st.need = NEED if e["failures"] / e["trials"] >= 0.5 else 1
        base = st.best_res
        st.base = base
        if ok and len(st.best.steps) < len(orig.steps):
            # The tries failed only at an earlier step (K1 cut the later
            # ones): the multi-thread path starts from the recorded steps,
            # whose endings include the crash the cut form lacks and the
            # cut form itself (p_multi).
            st.cut = (orig, ops)
        if not ok and runs > 1 and st.left() > 0 and not STOP.is_set():
            ok, base = self.not_failed_again(orig, ops, e)
        st.orig_ops = (base or {}).get("ops")
        if ok:
            self.refine()
        return ok, orig, base

    def not_failed_again(self, orig, ops, e):
        """K6 and K8 for the recorded run ORIG that did not fail again in
        its tries (E: its baseline's entry; OPS: the most a try's op step
        did): one thread, other seeds, then several threads, short runs.
        Returns (whether one was kept, the baseline's result)."""
        st, p = self.state, self.state.p
        # K6: the recorded run did not come back in its tries: one
        # thread, other seeds (its ops, what the tries did).
        p.line(
            "shrink: the recorded run did not fail again in %d tries: one thread, other seeds"
            % e["trials"]
        )
        ok = freshpass.one_thread(st, orig, ops, nseeds=FALLBACK_SEEDS, share=FALLBACK_SHARE).kept
        if not ok and st.left() > 0 and not STOP.is_set():  # ... then several threads (K8)
            p.line("shrink: no one-thread seed failed the same way: several threads, short runs")
            ok = (
                multipass.p_multi(st, start=orig, start_ops=ops).kept
                or multipass.sweeps(st, orig, ops, "from the recorded run").kept
            )
        base = {
            "ops": ops,
            "ops_all": max([o for o in e["ops_all"] if o] or [0]) or None,
            "seconds": max(e["seconds"] or [None]),
            "failed_again": False,
        }
        st.base = base
        return ok, base

    def refine(self):
        """Everything after a run that fails was found: rounds until one
        keeps nothing (a change kept late, a smaller key space, can let an
        earlier one, one thread, through), the multi-thread path again from
        a run of several threads (K23), then the passes on the trace."""
        self.rounds()
        self.multi_again()
        for step in (
            tracepass.p_replay,
            tracepass.p_focus,
            tracepass.p_ddmin,
            freshpass.p_fold_create,
            tracepass.p_faults_off,
            tracepass.p_ddmin,
            tracepass.p_values,
        ):
            if self.state.left() <= 0 or STOP.is_set():
                break
            step(self.state)

    def rounds(self):
        """round_steps again while a round keeps something, three at most."""
        for _ in range(3):
            kept = sum(1 for e in self.state.log if e["verdict"] == "kept")
            for step in self.round_steps():
                if self.state.left() <= 0 or STOP.is_set():
                    break
                step(self.state)
            if kept == sum(1 for e in self.state.log if e["verdict"] == "kept"):
                break

    def round_steps(self):
        """The steps of one round (K3's order).  The op count early: every
        later trial is that much shorter; once a trace exists, delta
        debugging on it before the option steps, which then run on the few
        ops left.  p_end_kill again once the thread steps have run: a
        failing recovery's timer that raced a run of several threads may
        not race the one-thread run they kept, and until it goes every
        trial runs twice (planted bug fpi-skips-page-at-redo-lsn: its
        first try fails with two threads; without the second p_end_kill
        the one-thread run the seed search keeps loses the timer only in
        the next round, after delta debugging has run every trial
        twice).  p_branches again
        there too: a variant's drop that a rare race passed in its few
        trials is judged on one trial of the one-thread run, before delta
        debugging runs the variant's steps in every trial (planted bug
        fpi-skips-page-at-redo-lsn: its drop passes 3 of 3 at a rate of 1
        in 5, and without the second p_branches every one of delta
        debugging's trials runs variant 0's recovery)."""
        return (
            steppass.p_branches,
            trials.p_hang,
            steppass.p_end_kill,
            steppass.p_mid_kill,
            optpass.p_threads,
            multipass.p_multi,
            optpass.p_pin,
            freshpass.p_fresh,
            optpass.p_trace,
            steppass.p_crash_end,
            steppass.p_end_kill,
            steppass.p_branches,
            optpass.p_ops,
            optpass.p_timer,
            optpass.p_short,
            tracepass.p_replay,
            tracepass.p_focus,
            optpass.p_untied,
            tracepass.p_volume,
            lambda state: tracepass.p_ddmin(state, DDMIN_ROUND_SHARE),
            optpass.p_classes,
            optpass.p_kill,
            optpass.p_rates,
            optpass.p_mix,
            freshpass.p_fresh,
            freshpass.p_create,
            freshpass.p_history,
            optpass.p_keys,
            optpass.p_options,
            steppass.p_powerloss,
        )

    def finish(self, ok, orig, base):
        """The shrink's end: shrunk/ written and its repro tried when OK,
        shrink.json written, the work folders removed: (exit code, the
        shrink.json document)."""
        st = self.state
        doc = self.shrink_doc(ok, orig, base)
        rc = EXIT_FAIL
        stopped = STOP.is_set()
        if stopped:
            doc.update(interrupted=True, verdict=INTERRUPTED)
        if ok:
            self.write_shrunk(doc, stopped)
            rc = EXIT_PASS
        elif stopped:
            st.p.line(
                "shrink: interrupted before the recorded run failed again (%s): nothing kept"
                % st.kind
            )
        else:
            st.p.line(
                "shrink: the recorded run did not fail again (%s): nothing to shrink" % st.kind
            )
        doc["elapsed_s"] = round(time.monotonic() - st.t0, 3)
        doc["ram_dir"] = os.path.dirname(st.ram) if st.ram else None
        write_json(os.path.join(st.dir, "shrink.json"), doc)
        self.cleanup()
        if stopped:
            st.p.line(
                "shrink: INTERRUPTED: shrink.json%s hold what was found so far"
                % (" and shrunk/" if ok else "")
            )
            return EXIT_INTERRUPTED, doc
        return rc, doc

    def shrink_doc(self, ok, orig, base):
        """shrink.json's document before its shrunk run: the failure, the
        original run ORIG (BASE: its baseline's result), every step tried."""
        st = self.state
        return {
            "tool": "crashtest.py",
            "mode": "shrink",
            "failure_dir": nice_path(st.dir),
            "kind": st.kind,
            "budget_s": st.budget,
            "match": st.match,
            "match_why": st.match_why,
            "trials_per_step_when_not_deterministic": st.runs,
            "need_per_step_when_not_deterministic": st.need,
            "failing_key": failing_key(
                (st.meta["steps"][st.failure["step"]].get("result") or {}).get("output_tail"),
                st.kind,
            ),
            # 0 is a size when the op step's is known (a kill point in
            # the open, before any op: checksum-skips-last-byte's), else
            # no step said (killed before its first progress note).  A
            # run on a grown database counts the ops that grew it (K14).
            "original": dict(
                orig.measures(),
                ops=grown(
                    (base or {}).get("ops_all") or (0 if (base or {}).get("ops") == 0 else None),
                    st.grown_ops(orig),
                ),
                op_step_ops=(base or {}).get("ops"),
                start_ops=st.history,
                seconds=(base or {}).get("seconds"),
                failed_again=(base or {}).get("failed_again", bool(ok)),
            ),
            "seeds_tried": list(dict.fromkeys(e["seed"] for e in st.log if "seed" in e)),
            "steps": st.log,
            "aside": st.aside,
        }

    def write_shrunk(self, doc, stopped):
        """The kept run written to shrunk/, its repro tried (unless
        STOPPED), DOC's "shrunk", "multi" and "command" set and the
        result printed; returns None."""
        st = self.state
        dest = os.path.join(st.dir, "shrunk")
        shutil.rmtree(dest, ignore_errors=True)
        st.runner.write_folder(dest, st.best, st.best_res)
        times, repro_ok, tries = self.shrunk_repro(dest, doc, stopped)
        ops = st.best_res.get("ops")
        if st.best.trace is not None:
            ops = len(st.best.trace)
        # The run's size: every stress step's ops, its op step's as above.
        ops_all = (
            (st.best_res.get("ops_all") or 0)
            - (st.best_res.get("ops") or 0)
            + (ops or 0)
            + st.grown_ops(st.best)
        )
        doc["shrunk"] = dict(
            st.best.measures(),
            ops=ops_all,
            op_step_ops=ops,
            judged_as=st.best_res["kind"],
            start_ops=0 if is_fresh(st.best) else st.history,
            seconds=st.best_res.get("seconds"),
            path=nice_path(dest),
            repro_seconds=times,
            repro_reproduced="%d of %d" % (repro_ok, tries),
        )
        if stopped:
            doc["shrunk"]["repro_reproduced"] = "not tried: interrupted"
        if st.multi:
            doc["multi"] = dict(st.multi, trials_per_step=MT_TRIALS, need=MT_NEED)
        if not st.best.deterministic() and st.last_kept:
            # The failure rate of the shrunk run over the trials of its
            # kept steps (K2, K8): each step's are in "steps".
            doc["shrunk"]["last_kept_rate"] = "%d of %d" % (
                st.last_kept["failures"],
                st.last_kept["trials"],
            )
        doc["command"] = "%s repro %s" % (
            nice_path(os.path.join(REPO, "crashtest.py")),
            shlex.quote(nice_path(dest)),
        )
        self.print_shrunk(doc, dest, times)

    def shrunk_repro(self, dest, doc, stopped):
        """The repro of the shrunk run in DEST: settle's tries when it is
        not deterministic, else three replays; none after a stop: (seconds
        of each, how many reproduced, tries)."""
        times, repro_ok, tries = [], 0, 0
        if stopped:
            # the smallest run kept so far, its repro not tried: nothing more
            # runs after a stop
            pass
        elif not self.state.best.deterministic():
            times, repro_ok, tries = self.settle(dest, doc) or (times, repro_ok, tries)
        if (
            self.state.best.deterministic() and not stopped
        ):  # (also what a resume of the multi-thread path kept: K20)
            for _ in range(3):
                t0 = time.monotonic()
                r = subprocess.run(
                    [sys.executable, os.path.join(REPO, "crashtest.py"), "repro", dest],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    universal_newlines=True,
                    preexec_fn=die_with_parent(),
                )
                times.append(round(time.monotonic() - t0, 3))
                repro_ok += r.returncode == 1 and "crashtest: reproduced:" in r.stdout
            tries = len(times)
        return times, repro_ok, tries

    def print_shrunk(self, doc, dest, times):
        """The shrink's result lines: the original and shrunk sizes, the
        grown database's ops, the repro command and the op step; returns None."""
        st = self.state
        o, s = doc["original"], doc["shrunk"]
        st.p.line(
            "shrink: %s: threads %s -> %s, ops %s -> %s (op step %s -> %s), fault classes %s -> "
            "%s, steps %s -> %s; repro %s s (reproduced %s)"
            % (
                st.kind,
                o["threads"],
                s["threads"],
                o["ops"],
                s["ops"],
                o["op_step_ops"],
                s["op_step_ops"],
                ",".join(o["fault_classes"]) or "none",
                ",".join(s["fault_classes"]) or "none",
                o["steps"],
                s["steps"],
                "/".join("%.1f" % x for x in times),
                s["repro_reproduced"],
            )
        )
        if st.history:
            st.p.line(
                "shrink: the recorded run's database was grown by %d ops of earlier iterations, "
                "counted in its size; the shrunk run %s"
                % (
                    st.history,
                    "starts from a fresh database"
                    if is_fresh(st.best)
                    else "starts from that database: they count in its size too",
                )
            )
        st.p.line("shrink: %s" % doc["command"])
        env = {
            "@STATE@": "STATE",
            "@ITER@": "ITER",
            "@FOLDER@": nice_path(dest),
            "@STRESS@": nice_path(os.path.join(dest, "bin", "stress")),
        }
        st.p.line("shrink: its op step: %s" % shlex.join(subst(st.best.op["argv"], env)))

    def cleanup(self):
        for d in (self.state.work, self.state.ram):
            if d:
                remove_work_dir(d)


def grown(ops, history):
    """A run's size OPS with the HISTORY ops that grew its database (K14);
    unknown stays unknown."""
    return None if ops is None else ops + history


def shrink_folder(
    failure_dir,
    budget,
    printer,
    stress_binary=None,
    powerloss_binary=None,
    match="kind",
    ram_dir=RAM_DIR,
):
    """Shrink FAILURE_DIR within BUDGET seconds (the nightly modes' --shrink
    calls this).  Returns (exit code, shrink.json's document)."""

    class A:
        pass

    a = A()
    a.failure_dir, a.budget, a.stress_binary, a.powerloss_binary = (
        failure_dir,
        budget,
        stress_binary,
        powerloss_binary,
    )
    a.match, a.ram_dir = match, ram_dir
    s = Shrinker(new_state(a, printer))
    try:
        ok, orig, base = s.shrink()
    except Stopped:  # SIGINT, SIGTERM: the best run so far is still written
        st = s.state
        if st.orig is None:
            s.cleanup()
            raise
        ok, orig, base = st.best_res is not None, st.orig, st.base
    except BaseException:
        s.cleanup()
        raise
    return s.finish(ok, orig, base)


def shrink_mode(a, argv):
    ram = getattr(a, "ram_dir", RAM_DIR)
    if ram not in (RAM_DIR, "none") and not ram_root(ram):
        raise UsageError(
            "--ram-dir %s is not a directory on a tmpfs with %d GiB free (give 'none' for every "
            "trial on disk)" % (ram, RAM_MIN_FREE >> 30)
        )
    rc, _ = shrink_folder(
        a.failure_dir,
        a.budget,
        Printer(tty=False),
        a.stress_binary,
        a.powerloss_binary,
        getattr(a, "match", "kind"),
        ram,
    )
    return rc
