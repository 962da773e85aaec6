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
      (a lost stays a lost).  A trial that fails with another kind is
      a new failure: its folder is kept aside (FAILURE_DIR/shrink-aside/N,
      repro reads it), never taken as success.  A trial whose crash step
      passed instead of crashing (or the reverse) diverged: rejected (a
      last step has no steps planned on it: it passed, or failed).
      With --match keys (off by default), a trial whose failure keys
      include the kind fails the same way too (the judge names a failure
      by the first of FAILURE_KEYS it shows: a false_alarm that comes
      with a wrong_value is a wrong_value); the shrunk folder keeps the
      kind, the trial's own as judged_as (K24).  A kept trial that fails at an
      earlier step loses the steps after it; when the op step went with
      them, the last workload step left is the op step (a create step
      that shows the bug with 7 keys), and with none left it is not kept.
      The recorded run's own tries go on after one that fails earlier
      than the recorded step, and the first that fails at it is kept:
      the shrink starts from the failure the run recorded when its tries
      show it (planted bug durable-publishes-insert: tries that lose a
      commit in the op step itself, before the recorded crash, would set
      the form of the whole shrink; a folder whose tries never fail at
      the recorded step shrinks no better for this).
  K2  a trial is deterministic when every stress step it runs has one
      thread, a fixed op count (or an op trace) and no SIGKILL on a timer;
      it runs once.  Otherwise the recorded run gets up to 5 tries (one
      must fail), and each change up to TRIALS (3) runs (MT_TRIALS once the
      multi-thread path, K8, kept a run), kept if NEED (2)
      of them fail the same way (so the failure rate stays near the
      recorded run's instead of drifting to a rare one; 1 when the recorded
      run failed in fewer than half its tries); the runs stop once the
      verdict is decided.  shrink.json has the runs
      and the observed rate of each step.
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
  K6  one thread where the bug allows: a bug rarely needs threads, it
      needs a schedule.  When one thread with the recorded seed does not
      fail the same way, a seed search: one thread, as many ops as all
      threads did (at most SEARCH_MAX_OPS), a timed SIGKILL made a crash
      after the last op or else a kill point (the log's write-before-sync
      point, then any), traced, with the recorded seed and SEARCH_SEEDS
      others; the first that fails the same way is kept.  A failing
      recovery step's own timed SIGKILL goes in every seed tried (K11's:
      it can only hide the failure, and no trial is deterministic with it:
      with it planted bug witness-at-end-is-damage's eight seeds pass
      three trials each; without it the 13th fails, one trial each).
      When every seed passed and the recorded run had several threads and
      held no snapshot, the same seeds again with a snapshot held 1 in
      STANDIN_SNAPSHOT_ONE_IN ops: the reader another thread was, which
      a freeze or a prune must respect, stood in for by one the thread
      holds itself (planted bug freeze-clears-xmax).
      The same search runs when the recorded run (several threads, a timed
      kill) does not fail again in its tries (FALLBACK_SEEDS seeds,
      FALLBACK_SHARE of the budget).  Either search, when no seed failed,
      runs again from a fresh database (K14's) before K8 looks for a race
      (planted bug witness-at-end-is-damage: a four-thread catch whose 16
      seeds on its grown database pass, and K8's 240 candidates too, 1.0x;
      from a fresh database the seventh seed fails, 144x).
      Each seed tried is in shrink.json; a different kind met on the way
      goes aside (K1), never success.
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
  K8  a failure that one thread does not show (K6's search passed or
      failed another way) needs a second thread: a reader meeting a
      writer's running version, an older snapshot held while a newer one
      sets the horizon, records logged during a checkpoint or a group
      commit's fsync.  Contention makes such races frequent, so the
      multi-thread path searches as K6 and K7 do for one thread: MT_THREADS
      (2) threads, short runs with a pinned op count per thread (MT_OPS,
      smallest first, in two passes: each size and key space with the
      recorded seed in each shape first, then the other seeds; never a timed
      --duration run, which grows as every change makes the run faster), a
      small key space (MT_KEYS, on a fresh database, then the recorded one),
      MT_SEEDS seeds each, the endings of mt_endings (a timed SIGKILL made a
      crash after the last op, then none; kill points rescaled to fire in a
      short run, then none: a failure a later step found may show in the op
      step itself, the steps after it gone; only none when none fired in the
      failing op step), and the rare ops of MT_SCALED that would come
      less than once in the run every quarter of it, a snapshot held a
      quarter of it (a snapshot held across 200 ops is never read again
      in a run of 64); then the same with each fault class that struck
      the recorded op step (its ledger lines) but would strike less than
      once in the short run striking about MT_FAULT_TIMES times in it
      (planted bug control-redo-is-checkpoint: a checkpoint while the
      other thread writes, then one ENOSPC in 12,000 ops that reopens
      the database; 4.9x without, 107x with); and, with the recorded seed
      after every key space in the run's own mix, the smallest key space
      in each contention mix (multipass.contention_mixes: two kinds of the
      run's mix, one a writer, half the ops each; planted bug
      hint-aborted-while-in-progress needs a scan to meet a batch before
      it commits: 2 x 64 ops with scans at 11% and batches at 48% failed 0
      of 10 runs, 2 x 16 ops of scans and batches at half each 2 of 20).
      Each candidate is judged by
      up to MT_TRIALS trials and kept when MT_NEED of them fail the same way
      (the stated minimum rate; once one of them failed, up to MT_MORE
      more trials decide it: a race that short runs show one time in four
      is still a run a reader can repeat, and the 10x smaller runs are the
      short ones), then confirmed by up to MT_CONFIRM more trials, of
      which MT_REPRO_NEED must fail too, as many as its repro will need
      (two of a few trials can be luck with a rare race among the
      path's many candidates); the first kept wins, and every later step
      is judged the same way (the op count halved, the mix, the options
      ...).  It runs after K6's search, and also when the recorded run did
      not fail again and K6's fallback found nothing (then K23's sweeps
      while it keeps none).  When the recorded run's tries failed only at
      an earlier step (K1's baseline kept it, its later steps cut), its
      candidates are built from the recorded steps (the cut form lacks the
      crash they end with: planted bug durable-publishes-insert, whose
      tries lost commits only in a reopen inside the workload, needs an
      append during another thread's fsync and then a crash).
      shrink.json has each candidate's trials, failures and rate, and
      "multi" what was kept; the shrunk folder's meta.json has repro_tries: its
      repro replays that many times and prints how many reproduced.  That is
      MT_REPRO_TRIES, or more (at most MT_REPRO_MAX) where the observed rate
      (the least of K8's keep with its confirmation and the last step kept)
      expects fewer than MT_REPRO_EXPECT of them to reproduce: a two-thread run
      of 711 ops that fails one time in six is a run a reader can repeat, if
      repro tries it often enough.  A chain of steps each kept on two of a few
      trials can drift to a rare run: when fewer than MT_REPRO_NEED of the
      tries reproduce, the runs kept before it that are not deterministic
      (K8's, or K2's repeated trials of a run with a timed kill) are tried,
      latest first, MT_STEP_BACK at most, then the run the path itself kept
      (multi's step), and the first that reaches MT_REPRO_NEED is the
      result, else the one of them that reproduced most often; the recorded
      run (the baseline's kept trial) last, only when no smaller run
      reproduced at all (shrink.json's stepped_back lists each one tried; a
      one-thread run with its timed kill, each step kept on one of three
      trials, can end at 0 of 8: planted bug checkpoint-skips-data-fsync).
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
      third of each trial's time.  The shrunk folder's repro runs every step.
  K13 a recovery step between the op step and the failing one that a
      timer SIGKILLs (a restart that recovers, verifies and is killed
      after a fraction of a second) lands wherever that recovery was at
      that time; a run with other ops recovers faster or slower and is
      killed elsewhere or not at all (planted bug page-before-wal: every
      one-thread run diverges, its recovery done before the kill).  The
      timer goes, in the order of RECOVERY_KILLS: the step ends by itself
      (a failure the kill hid shows in it), crashes once the database is
      open (--crash_at_end), or is killed at one of recovery's kill
      points at its first hit.  K6's one-thread search crashes such a
      step once open.
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
      flips moved onto its first blocks (fresh_flips: a flip pinned on
      block 670 of a grown file lands on nothing, and a failure that rests
      on which byte of a page it flips shows on any page); and when K14's
      search from a fresh database fails too, the database grown again
      as the recorded one was (regrown): each earlier iteration's workload
      (meta.json history) redone with one thread, its ops (at most
      HISTORY_MAX_OPS), options, faults and seed and no kill, after the
      create step, then K6's search on the op step.  A fault class only
      an earlier iteration drew (a failed write-back whose page a later
      iteration reads) comes back with it.  p_history then drops each
      such step, or cuts its ops as p_create cuts a create step's.
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
  K20 a shrunk run the multi-thread path (K8) led to that reproduced
      fewer than MT_REPRO_NEED times resumes the path, whether or not a
      run stepped back to reproduced enough: the run it kept was kept on
      a rate its repro did not show again, and everything kept after it
      stands on it.  The path goes back to
      the run it started from and goes on with the candidates after the
      one it kept (each candidate is judged once), the rounds run on what
      it keeps next, and that run's repro is judged the same way, while
      MT_RESUME_MIN (60 s) of the budget is left.  The result is the
      smallest run that reproduced MT_REPRO_NEED times (ties: the
      latest), else the one that reproduced most often (ties: the
      latest); the recorded run is
      stepped back to only when no resume is left and no smaller run
      reproduced at all (planted bug checkpoint-redo-at-record: 2 x 64
      ops reproduce 1 of 8 and the 2 x 256 stepped back to 3 of 8; without
      a resume that run stands and the shrink is over at 169 s of 600
      with 8.8x).  shrink.json's resumed lists each run left
      behind (the path's step, its repro's rate, what it stepped back to).
      Why: planted bug hint-aborted-while-in-progress's keep on 2 of 8
      trials and 1 of 2 confirmations reproduces 0 of 10 (1 of 100 when
      tried again), and without a resume the shrink is over at 104 s of
      600.
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
  K23 a run of several threads left by the rounds, with MT_RESUME_MIN of
      the budget left: K8's path again from it (multipass.multi_again: the
      sizes below its own, smallest first, MT_AGAIN_SEEDS seeds each, and
      MT_AGAIN_SWEEPS sweeps of others at most), the rounds on each keep.
  K24 a recorded run that failed again in none of its tries with its kind,
      but in some with another kind that had its kind among its failure
      keys (the judge names the first of FAILURE_KEYS: a lost beside a
      wrong_value is a wrong_value), is shrunk with the match by keys of
      K1 (trials.by_keys): the run shows the kind, named another way.
      Its tries are run again so matched, and every later trial is judged
      so.  shrink.json says why ("match_why") and what the judge named the
      shrunk run ("judged_as"); the shrunk folder keeps the kind, and its
      repro reproduces when the kind is among the keys (planted bugs
      durable-publishes-insert and horizon-newest-snapshot: a lost and a
      resurrected whose recorded runs fail again only as other kinds,
      their own among one try's keys each).
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

from .binary import check_binary, stress_info
from .cand import (
    Cand,
    as_int,
    endings,
    is_fresh,
    is_workload,
    opt_get,
    opt_set,
    set_threads,
    trace_ops_of,
)
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
from .output import Printer
from .procs import STOP, Stopped, die_with_parent
from .repro import failing_key, read_meta
from .seeds import derive
from .freshpass import FreshPasses
from .steppass import StepPasses, branch_of, end_unkilled
from .multipass import MT_NEED, MT_TRIALS, MultiPasses
from .optpass import OptionPasses
from .tracepass import TracePasses
from .trials import RAM_DIR, RAM_MIN_FREE, Trials, ram_root

DEFAULT_BUDGET = 600
TRIALS = 3  # runs per change when a trial is not deterministic (K2) ...
BASELINE_TRIALS = 5  # tries of the recorded run when it is not deterministic
# ... of which this many must fail the same way (a rate kept near the
# start's, not drifting to rare)
NEED = 2
# The seed search (K6): seeds tried besides the recorded one, the share of
# the budget left that it may spend, and the kill points a timed SIGKILL
# becomes when a crash after the last op does not fail (None: every one).
# 15: a failing recovery step's timer gone, each seed is one trial, not
# three (planted bug witness-at-end-is-damage's one-thread run comes with
# the 13th).
SEARCH_SEEDS = 15
# ... each with at most this many ops (four times it with room for a kill
# point)
SEARCH_MAX_OPS = 50000
SEARCH_SHARE = 0.35
# ... then, when the recorded run had several threads and held no snapshot
# of its own, the same seeds with one held 1 in this many ops (200: the
# least often of the nightly draws, crashtest/params.py): a reader of
# another thread made the version a freeze or prune must keep, and a
# snapshot the one thread holds does the same (planted bug
# freeze-clears-xmax: a four-thread catch that does not fail again in 5
# tries; without the stand-in its 41 one-thread seeds and the
# multi-thread path pass with 425 s of the budget left unused; with a
# held snapshot 4 of 8 one-thread seeds fail).
STANDIN_SNAPSHOT_ONE_IN = 200
# ... and when the recorded run did not fail again (nothing else to try).
FALLBACK_SEEDS = 40
FALLBACK_SHARE = 0.4
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


class Shrinker(Trials, TracePasses, OptionPasses, FreshPasses, MultiPasses, StepPasses):
    recorded_threads = 1  # the recorded op step's threads (K6's stand-in; __init__ sets it)
    # (the recorded run, its tries' ops) when the baseline kept an earlier
    # step (K8; shrink sets it)
    cut = None

    def __init__(self, a, printer):
        self.p = printer
        self.dir = os.path.abspath(a.failure_dir)
        self.budget = a.budget
        self.t0 = time.monotonic()
        mpath = os.path.join(self.dir, "meta.json")
        self.meta = read_meta(mpath, a.failure_dir)
        self.failure = self.meta.get("failure")
        if not self.failure:
            raise UsageError("%s records no failure: nothing to shrink" % mpath)
        self.kind = self.failure["kind"]
        self.match = getattr(a, "match", "kind") or "kind"
        self.match_why = None  # why the match is by keys when the shrink chose it (K24)
        self.start = os.path.join(self.dir, "start")
        if not os.path.isdir(self.start):
            raise UsageError("%s is missing" % self.start)
        self.bin = {k: os.path.join(self.dir, v) for k, v in self.meta["binaries"].items()}
        if a.stress_binary:
            self.bin["@STRESS@"] = os.path.abspath(a.stress_binary)
        if a.powerloss_binary:
            self.bin["@POWERLOSS@"] = os.path.abspath(a.powerloss_binary)
        self.defaults = binary_defaults(self.bin)
        self.best = recorded_cand(self.meta["steps"], self.failure["step"], self.dir)
        self.recorded_threads = as_int(opt_get(self.best.op["argv"], "threads"), 2)
        self.best_res = None
        self.log = []  # shrink.json's steps
        self.aside = []
        self.work = make_work_dir(WORK_PREFIX + "shrink-")
        # K19: deterministic trials in RAM where there is room.
        root = ram_root(getattr(a, "ram_dir", RAM_DIR))
        self.ram = make_work_dir(WORK_PREFIX + "shrink-", root) if root else None
        self.ntrial = 0
        self.made = {}  # K12: the state a create step left, by its argv
        self.need = NEED
        # runs per change when not deterministic (K2; MT_TRIALS once K8 kept one)
        self.trials = TRIALS
        self.more = 0  # trials added once one failed (MT_MORE once K8 kept one)
        self.cap = None  # the recorded run's ops: no kept run is larger (K10)
        self.searched = False  # the one-thread seed search of p_threads ran (once)
        self.multi_tried = False  # the multi-thread path ran (once)
        self.multi = None  # what K8 kept: threads, ops per thread, key space, seed, rate
        # the state the path started from (K20: resume_multi goes back to it)
        self.multi_from = None
        self.multi_judged = set()  # the path's candidates judged (their signatures; K20 skips them)
        self.last_kept = None  # the shrunk run's last step kept on several trials (settle sets it)
        # (step n, candidate, result) of each run kept that is not deterministic (K8, K2)
        self.kept_trials = []
        self.tried = set()  # candidates run already (their signatures: digests)
        self.hang = self.meta.get("hang_seconds", 120)
        # K14: the ops the database's earlier iterations did (None: a folder
        # whose meta.json has no db_ops), and the recorded op step's.
        self.history = 0 if is_fresh(self.best) else self.meta.get("db_ops")
        self.orig_ops = None

    # ---- the passes (K3); the trials that judge them are Trials' ----

    def p_threads(self):
        threads = as_int(opt_get(self.best.op["argv"], "threads"), 2)
        if threads <= 1:
            return
        c = self.best.copy()
        set_threads(c, 1)
        what = "threads %d -> 1" % threads
        if not opt_get(c.op["argv"], "trace_ops") and not opt_get(c.op["argv"], "replay_ops"):
            # Traced: a try K10 refuses is replayed below, and a run kept
            # is replayed by p_pin.
            c.op["argv"] = opt_set(c.op["argv"], "trace_ops", "@ITER@/ops.trace")
            what += ", traced"
        if self.attempt(what, c, "threads"):
            return
        if self.larger_trace:
            # K10 refused a try that failed (one thread does more ops in
            # the time than several did): its trace replayed is its run,
            # reopens where they came (planted bug page-before-wal: pinned
            # to a failing try's 332,096 ops, 3 reopens spread over the
            # count, the run passes, as at five other counts; 335,739
            # fails).
            c, more = self.replay_of(c, self.larger_trace[1])
            if c is not None and self.attempt(
                "%s, %s (a try that failed)" % (what, ", ".join(more)), c, "threads"
            ):
                return
        # A bug rarely needs threads; it needs a schedule: one thread with
        # other seeds, as many ops as all threads did (K6).
        if not self.searched and self.one_thread(self.best, (self.best_res or {}).get("ops")):
            return
        half = threads // 2
        if 1 < half < threads:
            c = self.best.copy()
            set_threads(c, half)
            self.attempt("threads %d -> %d" % (threads, half), c, "threads")

    def one_thread(self, start, ops, **kw):
        """K6: the seed search on START's database, then from a fresh one
        (K14's search), before K8 looks for a race.  KW: search's."""
        self.searched = True
        return self.search(start, ops, **kw) or (
            self.left() > 0 and not STOP.is_set() and self.fresh_search(start, ops)
        )

    def search(
        self,
        start,
        ops,
        recorded=True,
        nseeds=SEARCH_SEEDS,
        share=SEARCH_SHARE,
        phase="search",
        what="",
    ):
        """K6: one thread where START has several (or where the recorded
        run did not fail again): its op step with one thread, OPS ops in all
        (what all threads did), a timed SIGKILL made a crash after the last
        op or a kill point (endings), traced, run with the recorded seed
        (unless RECORDED is False) and then SEARCH_SEEDS others until one
        fails the same way (NSEEDS others at most).  Every seed tried is in
        shrink.json (its "seed" field); a different failure met is kept
        aside, never taken (K1).  Spends at most SHARE of the budget
        left.  PHASE and WHAT: its steps' phase in shrink.json and what
        their lines say first (p_fresh's search from a fresh database)."""
        if not ops:
            ops = 1000  # killed before its first progress note: a guess
        # No more than SEARCH_MAX_OPS: one thread doing what four did in a
        # timed run of 277,000 ops takes 16 s a seed (four times that with
        # room for a kill point), and eight seeds take 114 s of a 300 s
        # budget.
        ops = min(ops, SEARCH_MAX_OPS)
        # A one-thread run recovers at its own speed: a recovery step's
        # timed SIGKILL would land elsewhere or not at all, so it crashes
        # once the database is open (K13).
        start = self.mid_killed(start, "crash_at_end") or start
        # ... and a failing recovery step's own timer goes (K11): it can
        # only hide the failure, and with it no trial is deterministic.
        start = end_unkilled(start) or start
        # ... and the variants it does not stand on go (K27).
        start = branch_of(start)[0] or start
        a = start.op["argv"]
        if opt_get(a, "replay_ops"):
            return False
        base = as_int(opt_get(a, "seed"))
        seeds = ([base] if recorded else []) + [
            derive(base, "shrink", "seed", k) for k in range(nseeds)
        ]
        stop = time.monotonic() + self.left() * share
        shapes = [(start, "")]
        if self.recorded_threads > 1 and as_int(opt_get(a, "acquire_snapshot_one_in")) == 0:
            # The stand-in: a snapshot the one thread holds now and then
            # is the reader another thread was.
            sc = start.copy()
            sc.op["argv"] = opt_set(
                sc.op["argv"], "acquire_snapshot_one_in", STANDIN_SNAPSHOT_ONE_IN
            )
            shapes.append(
                (
                    sc,
                    "a snapshot held 1 in %d ops (for the other threads' readers), "
                    % STANDIN_SNAPSHOT_ONE_IN,
                )
            )
        for shape, held in shapes:
            for seed in seeds:
                for end, c in endings(shape, ops):
                    if time.monotonic() >= stop or self.left() <= 0 or STOP.is_set():
                        return False
                    c.op["argv"] = opt_set(
                        opt_set(c.op["argv"], "seed", seed), "trace_ops", "@ITER@/ops.trace"
                    )
                    if self.attempt(
                        "%sone thread, %s%s, traced, seed %d%s"
                        % (what, held, end, seed, " (the recorded)" if seed == base else ""),
                        c,
                        phase,
                        extra={"seed": seed},
                    ):
                        return True
        return False

    def shrink(self):
        p = self.p
        orig = self.best.copy()
        p.line(
            "shrink: %s (%s at step %d, %s), budget %g s"
            % (
                nice_path(self.dir),
                self.kind,
                self.failure["step"],
                self.failure.get("step_name"),
                self.budget,
            )
        )
        # Does it come back at all?  A run that is not deterministic gets up
        # to BASELINE_TRIALS tries; its rate sets how many of each later
        # step's trials must fail (K2).
        runs = 1 if orig.deterministic() else BASELINE_TRIALS
        self.orig, self.base = orig, None  # what finish() reads if a stop cuts the shrink short
        n0 = len(self.log)
        ok = self.attempt(
            "the recorded run, unchanged",
            orig.copy(),
            "baseline",
            runs=runs,
            need=1,
            at=len(orig.steps) - 1,
        )
        ok = ok or (runs > 1 and self.by_keys(orig, runs))  # K24
        # K10: no kept run is larger than the recorded one (its largest
        # try: a timed run's size varies from try to try, and a change
        # that keeps its timer is no larger for a try that ran longer).
        e = self.log[-1]
        ops = max([o for o in e["ops"] if o] or [0]) or None  # the most a try's op step did
        self.cap = (
            max(
                [o for x in self.log[n0:] for o in x["ops_all"] if o]
                + [(self.best_res or {}).get("ops_all") or 0]
            )
            + self.grown_ops(orig)
        ) or None
        if ok and runs > 1:
            self.need = NEED if e["failures"] / e["trials"] >= 0.5 else 1
        base = self.best_res
        self.base = base
        if ok and len(self.best.steps) < len(orig.steps):
            # The tries failed only at an earlier step (K1 cut the later
            # ones): the multi-thread path starts from the recorded steps,
            # whose endings include the crash the cut form lacks and the
            # cut form itself (p_multi).
            self.cut = (orig, ops)
        if not ok and runs > 1 and self.left() > 0 and not STOP.is_set():
            # K6: the recorded run did not come back in its tries: one
            # thread, other seeds (its ops, what the tries did).
            p.line(
                "shrink: the recorded run did not fail again in %d tries: one thread, other seeds"
                % e["trials"]
            )
            ok = self.one_thread(orig, ops, nseeds=FALLBACK_SEEDS, share=FALLBACK_SHARE)
            if (
                not ok and self.left() > 0 and not STOP.is_set()
            ):  # ... then several threads, short runs (K8)
                p.line(
                    "shrink: no one-thread seed failed the same way: several threads, short runs"
                )
                ok = self.p_multi(start=orig, start_ops=ops) or self.sweeps(
                    orig, ops, "from the recorded run"
                )
            base = {
                "ops": ops,
                "ops_all": max([o for o in e["ops_all"] if o] or [0]) or None,
                "seconds": max(e["seconds"] or [None]),
                "failed_again": False,
            }
            self.base = base
        self.orig_ops = (base or {}).get("ops")
        if ok:
            self.refine()
        return ok, orig, base

    def refine(self):
        """Everything after a run that fails was found: rounds until one
        keeps nothing (a change kept late, a smaller key space, can let an
        earlier one, one thread, through), the multi-thread path again from
        a run of several threads (K23), then the passes on the trace."""
        self.rounds()
        self.multi_again()
        for step in (
            self.p_replay,
            self.p_focus,
            self.p_ddmin,
            self.p_fold_create,
            self.p_faults_off,
            self.p_ddmin,
            self.p_values,
        ):
            if self.left() <= 0 or STOP.is_set():
                break
            step()

    def rounds(self):
        """round_steps again while a round keeps something, three at most."""
        for _ in range(3):
            kept = sum(1 for e in self.log if e["verdict"] == "kept")
            for step in self.round_steps():
                if self.left() <= 0 or STOP.is_set():
                    break
                step()
            if kept == sum(1 for e in self.log if e["verdict"] == "kept"):
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
            self.p_branches,
            self.p_hang,
            self.p_end_kill,
            self.p_mid_kill,
            self.p_threads,
            self.p_multi,
            self.p_pin,
            self.p_fresh,
            self.p_trace,
            self.p_crash_end,
            self.p_end_kill,
            self.p_branches,
            self.p_ops,
            self.p_timer,
            self.p_short,
            self.p_replay,
            self.p_focus,
            self.p_untied,
            self.p_volume,
            lambda: self.p_ddmin(DDMIN_ROUND_SHARE),
            self.p_classes,
            self.p_kill,
            self.p_rates,
            self.p_mix,
            self.p_fresh,
            self.p_create,
            self.p_history,
            self.p_keys,
            self.p_options,
            self.p_powerloss,
        )

    def finish(self, ok, orig, base):
        """The shrink's end: shrunk/ written and its repro tried when OK,
        shrink.json written, the work folders removed: (exit code, the
        shrink.json document)."""
        doc = self.shrink_doc(ok, orig, base)
        rc = EXIT_FAIL
        stopped = STOP.is_set()
        if stopped:
            doc.update(interrupted=True, verdict=INTERRUPTED)
        if ok:
            self.write_shrunk(doc, stopped)
            rc = EXIT_PASS
        elif stopped:
            self.p.line(
                "shrink: interrupted before the recorded run failed again (%s): nothing kept"
                % self.kind
            )
        else:
            self.p.line(
                "shrink: the recorded run did not fail again (%s): nothing to shrink" % self.kind
            )
        doc["elapsed_s"] = round(time.monotonic() - self.t0, 3)
        doc["ram_dir"] = os.path.dirname(self.ram) if self.ram else None
        write_json(os.path.join(self.dir, "shrink.json"), doc)
        self.cleanup()
        if stopped:
            self.p.line(
                "shrink: INTERRUPTED: shrink.json%s hold what was found so far"
                % (" and shrunk/" if ok else "")
            )
            return EXIT_INTERRUPTED, doc
        return rc, doc

    def shrink_doc(self, ok, orig, base):
        """shrink.json's document before its shrunk run: the failure, the
        original run ORIG (BASE: its baseline's result), every step tried."""
        return {
            "tool": "crashtest.py",
            "mode": "shrink",
            "failure_dir": nice_path(self.dir),
            "kind": self.kind,
            "budget_s": self.budget,
            "match": self.match,
            "match_why": self.match_why,
            "trials_per_step_when_not_deterministic": self.trials,
            "need_per_step_when_not_deterministic": self.need,
            "failing_key": failing_key(
                (self.meta["steps"][self.failure["step"]].get("result") or {}).get("output_tail"),
                self.kind,
            ),
            # 0 is a size when the op step's is known (a kill point in
            # the open, before any op: checksum-skips-last-byte's), else
            # no step said (killed before its first progress note).  A
            # run on a grown database counts the ops that grew it (K14).
            "original": dict(
                orig.measures(),
                ops=grown(
                    (base or {}).get("ops_all") or (0 if (base or {}).get("ops") == 0 else None),
                    self.grown_ops(orig),
                ),
                op_step_ops=(base or {}).get("ops"),
                start_ops=self.history,
                seconds=(base or {}).get("seconds"),
                failed_again=(base or {}).get("failed_again", bool(ok)),
            ),
            "seeds_tried": list(dict.fromkeys(e["seed"] for e in self.log if "seed" in e)),
            "steps": self.log,
            "aside": self.aside,
        }

    def write_shrunk(self, doc, stopped):
        """The kept run written to shrunk/, its repro tried (unless
        STOPPED), DOC's "shrunk", "multi" and "command" set and the
        result printed; returns None."""
        dest = os.path.join(self.dir, "shrunk")
        shutil.rmtree(dest, ignore_errors=True)
        self.write_folder(dest, self.best, self.best_res)
        times, repro_ok, tries = self.shrunk_repro(dest, doc, stopped)
        ops = self.best_res.get("ops")
        if self.best.trace is not None:
            ops = len(self.best.trace)
        # The run's size: every stress step's ops, its op step's as above.
        ops_all = (
            (self.best_res.get("ops_all") or 0)
            - (self.best_res.get("ops") or 0)
            + (ops or 0)
            + self.grown_ops(self.best)
        )
        doc["shrunk"] = dict(
            self.best.measures(),
            ops=ops_all,
            op_step_ops=ops,
            judged_as=self.best_res["kind"],
            start_ops=0 if is_fresh(self.best) else self.history,
            seconds=self.best_res.get("seconds"),
            path=nice_path(dest),
            repro_seconds=times,
            repro_reproduced="%d of %d" % (repro_ok, tries),
        )
        if stopped:
            doc["shrunk"]["repro_reproduced"] = "not tried: interrupted"
        if self.multi:
            doc["multi"] = dict(self.multi, trials_per_step=MT_TRIALS, need=MT_NEED)
        if not self.best.deterministic() and self.last_kept:
            # The failure rate of the shrunk run over the trials of its
            # kept steps (K2, K8): each step's are in "steps".
            doc["shrunk"]["last_kept_rate"] = "%d of %d" % (
                self.last_kept["failures"],
                self.last_kept["trials"],
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
        elif not self.best.deterministic():
            times, repro_ok, tries = self.settle(dest, doc) or (times, repro_ok, tries)
        if (
            self.best.deterministic() and not stopped
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
        o, s = doc["original"], doc["shrunk"]
        self.p.line(
            "shrink: %s: threads %s -> %s, ops %s -> %s (op step %s -> %s), fault classes %s -> "
            "%s, steps %s -> %s; repro %s s (reproduced %s)"
            % (
                self.kind,
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
        if self.history:
            self.p.line(
                "shrink: the recorded run's database was grown by %d ops of earlier iterations, "
                "counted in its size; the shrunk run %s"
                % (
                    self.history,
                    "starts from a fresh database"
                    if is_fresh(self.best)
                    else "starts from that database: they count in its size too",
                )
            )
        self.p.line("shrink: %s" % doc["command"])
        env = {
            "@STATE@": "STATE",
            "@ITER@": "ITER",
            "@FOLDER@": nice_path(dest),
            "@STRESS@": nice_path(os.path.join(dest, "bin", "stress")),
        }
        self.p.line("shrink: its op step: %s" % shlex.join(subst(self.best.op["argv"], env)))

    def cleanup(self):
        for d in (self.work, self.ram):
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
    s = Shrinker(a, printer)
    try:
        ok, orig, base = s.shrink()
    except Stopped:  # SIGINT, SIGTERM: the best run so far is still written
        if getattr(s, "orig", None) is None:
            s.cleanup()
            raise
        ok, orig, base = s.best_res is not None, s.orig, s.base
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
