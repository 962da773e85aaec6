"""The multi-thread path of a shrink (K8 in shrink.py, whose rules and
order it follows): a failure that one thread does not show is searched
with two threads in short runs, where contention makes a race frequent;
and settle, the check of a shrunk run of several threads by its repro's
rate, with its steps back and resumes of the path (K8, K20).
Each takes the shrink's state (shrinkstate.ShrinkState: best, best_res,
meta, defaults, start, dir, kept_trials, multi, multi_from,
multi_judged, runs, need, more, its runner, left); multi_again and settle
take the Shrinker's rounds and refine too, which they run again."""

import json
import os
import shutil
import time
from fractions import Fraction

from .cand import as_int, is_fresh, mt_endings, opt_get, opt_set, report_ops, signature
from .executor import injected_by_class, ledger_lines_since
from .params import FAULT_OPTIONS, parse_size
from .procs import STOP
from .freshpass import freshened
from .seeds import derive
from .shrinkstate import shrink_pass

# The multi-thread path (K8), for a failure one thread does not show: the
# thread count, the pinned ops per thread (smallest first), the key spaces
# (a fresh database; smallest first, then the recorded one), the seeds per
# shape (the recorded and others), and the trials that judge a candidate
# and the most of them that must fail the same way: the stated minimum
# rate, MT_NEED of MT_TRIALS.  A multi-thread shrunk folder's repro runs
# MT_REPRO_TRIES times and prints the rate.
MT_THREADS = 2
MT_OPS = (16, 64, 256, 1024)
MT_KEYS = (8, 64, 512)
MT_SEEDS = 3
MT_AGAIN_SEEDS = 6  # ... and when it runs again from the shrunk run (K23)
# ... in sweeps of that many other seeds while no smaller run fails and a
# minute of the budget is left, at most this many (K23; 41 seeds a size):
# one sweep may meet nothing smaller (planted bug control-redo-is-checkpoint:
# from a recorded run of 812 ops K8 keeps 2 x 1,024, and with one sweep the
# shrink is over at 53 s of 600 with 1.1x; its other catches shrink to 5
# and 8 ops).
MT_AGAIN_SWEEPS = 8
MT_TRIALS = 4
MT_NEED = 2
MT_MORE = 4  # ... and this many more once one of them failed, MT_NEED still (the floor: 2 of 8)
MT_CONFIRM = 8  # ... and a kept one runs up to this many more ...
# ... until this many fail the same way too: as many as the shrunk folder's
# repro must reproduce in its tries (finish steps back below it, K8).  One
# is too few: a run kept on 2 of 8 trials and confirmed on 1 of 2 can
# reproduce 0 of 10 (planted bug hint-aborted-while-in-progress: such a run
# fails 1 of 100 when tried again).  A candidate that fails 1 time in 20 passes
# 2 of 8 and then 1 of 8 about one time in 50, and a path judges dozens;
# 2 of 8 twice, about one time in 300.
MT_REPRO_NEED = 2
# K20: a multi-thread shrunk run that reproduced fewer than MT_REPRO_NEED
# times, stepped back too, resumes the path at the candidate after the one
# it kept when this much of the budget (seconds) is left.
MT_RESUME_MIN = 60
# settle's check of a multi-thread shrunk run: below MT_REPRO_NEED, it
# steps back to at most this many earlier kept runs, latest first.
MT_STEP_BACK = 4
MT_SHARE = 0.6
# Rare ops that would come less than once in a short run come every
# quarter of it, and a snapshot is held a quarter of the run (K8).
MT_SCALED = ("checkpoint_one_in", "acquire_snapshot_one_in", "vacuum_one_in")
# ... and a fault class that struck the run but would strike less than
# once in a short run strikes about this many times in it (its own shape,
# tried after the one with only the rare ops scaled).
MT_FAULT_TIMES = 4
# stress's op mix: each kind's option (the rest of 100 after the four is
# batches), its name, and whether it writes.  K8's contention mixes give
# two kinds of the run's mix, one of them a writer, half the ops each.
MIX_KINDS = (
    ("readpercent", "gets", False),
    ("writepercent", "puts", True),
    ("delpercent", "deletes", True),
    ("iterpercent", "scans", False),
    (None, "batches", True),
)


def pinned_ops(cand):
    """The ops per thread CAND's op step is pinned to, or 0 when it is
    timed (a SIGKILL on a timer or a --duration)."""
    a = cand.op["argv"]
    if cand.op.get("kill_after") is None and opt_get(a, "duration") is None:
        return as_int(opt_get(a, "ops_per_thread"), 10000)
    return 0


def contention_mixes(argv, defaults):
    """The mixes K8 tries besides the run's own (ARGV's, stress's DEFAULTS
    where it sets none): each pair of the kinds it has, at least one of
    them a writer, half the ops each and no other kind; the pairs with
    the largest product of their shares first.  [(what, {option: percent})].
    A race between a reader and a writer's running version needs both of
    them often in a few ops: planted bug hint-aborted-while-in-progress
    needs a scan to meet a batch before it commits: 2 x 64 ops with scans
    at 11% and batches at 48% (its shrunk mix, puts the rest) failed 0 of
    10 runs, 2 x 16 ops of scans and batches at half each 2 of 20
    (stress alone, sync_mode=commit)."""
    share = {
        opt: as_int(opt_get(argv, opt), as_int(defaults.get(opt))) for opt, _, _ in MIX_KINDS[:-1]
    }
    share[None] = max(0, 100 - sum(share.values()))
    kinds = [k for k in MIX_KINDS if share[k[0]] > 0]
    out = []
    for i, (a, an, aw) in enumerate(kinds):
        for b, bn, bw in kinds[i + 1 :]:
            if (aw or bw) and (share[a], share[b]) != (50, 50):
                m = {opt: 50 if opt in (a, b) else 0 for opt, _, _ in MIX_KINDS[:-1]}
                out.append((-share[a] * share[b], "%s and %s, half the ops each" % (an, bn), m))
    return [(w, m) for _, w, m in sorted(out, key=lambda x: x[0])]


@shrink_pass
def p_multi(state, start=None, start_ops=None, again=False, sweep=0):
    """K8: a failure one thread does not show (a reader meeting a
    writer's running version, an older snapshot held while a newer one
    sets the horizon, records logged during a checkpoint or a group
    commit's fsync) needs a second thread, and what makes such a race
    frequent is contention: MT_THREADS threads, a short pinned op count
    per thread (MT_OPS, smallest first; never a timed run, which grows
    as every change makes it faster), a small key space (MT_KEYS, a
    fresh database, smallest first, then the recorded one), MT_SEEDS
    seeds each (the recorded one first), each ending of mt_endings.
    Every candidate is judged by up to MT_TRIALS trials and kept when
    MT_NEED fail the same way (the stated minimum rate); the first kept
    wins, and every later step is judged the same way.  START: the run
    to start from (the recorded one, when it did not fail again; the
    recorded steps, state.cut, when its tries failed only at an earlier
    step and START is not given), and
    START_OPS what its tries did (its op step killed, the recorded
    run left no count).  Runs once, or AGAIN (K23, multi_again): from
    the shrunk run, each size smaller than its own with MT_AGAIN_SEEDS
    seeds before the next size (the run's own and, in SWEEP k, the k-th
    lot of others).  Kept when it kept a candidate."""
    got = multi_base(state, start, start_ops, again)
    if got is None:
        return False
    start, start_ops, base = got
    threads, pinned, keys, seeds, fired, faults, stop = multi_plan(
        state, base, start, start_ops, again, sweep
    )
    # Two passes: each size and key space with the recorded seed (each
    # shape, every ending), then other seeds: a race that needs 256 ops
    # each on 8 keys (hint-aborted-while-in-progress) is met early, and
    # one that needs its faults struck (control-redo-is-checkpoint: a
    # sync error reopens after a checkpoint raced a write, 2 x 64 ops
    # fail 8 of 40) before a larger run without them is kept.
    order = (
        [(n, f) for n in MT_OPS for f in (True, False)]
        if again
        else [(n, f) for f in (True, False) for n in MT_OPS]
    )
    for n, first in order:
        if pinned and n >= pinned:
            continue  # no shorter than the run already is
        shapes = multi_shapes(state, base, n, first, keys, faults, threads)
        for (k, c0, shape, mix), seed in [
            (x, y) for x in shapes for y in (seeds[:1] if first else seeds[1:])
        ]:
            for what, c in mt_endings(c0, threads, n, fired):
                if time.monotonic() >= stop or state.left() <= 0 or STOP.is_set():
                    return False
                c.op["argv"] = opt_set(c.op["argv"], "seed", seed)
                sig = signature(c)
                if sig in state.multi_judged:
                    continue  # judged before resume_multi went back (K20)
                state.multi_judged.add(sig)
                label = "%d threads, %d ops each, key space %d%s, seed %d%s" % (
                    threads,
                    n,
                    k,
                    " (fresh)" if c.fresh and not base.fresh else "",
                    seed,
                    "".join(", " + x for x in (shape, what) if x),
                )
                extra = dict(
                    {"seed": seed, "threads": threads, "ops_per_thread": n, "max_key": k},
                    **({"mix": mix} if mix else {})
                )
                if multi_keep(state, label, c, extra):
                    return True
    return False


def multi_base(state, start, start_ops, again):
    """The run K8 starts from, the path marked as tried and where it
    started kept for resume_multi (K20): (start, start_ops, base), or
    None when the path has nothing to look for."""
    if start is None and not again and as_int(opt_get(state.best.op["argv"], "threads"), 2) <= 1:
        # One thread fails the same way already (K6's search kept it
        # from the cut form): no race to look for (planted bug
        # fpi-skips-page-at-redo-lsn: without this the path would run
        # from the recorded steps after the search kept one thread).
        return None
    if start is None and not again and state.cut:
        (
            start,
            start_ops,
        ) = state.cut  # the recorded steps (shrink: the baseline kept an earlier one)
    base = start or state.best
    a = base.op["argv"]
    threads0 = as_int(opt_get(a, "threads"), 2)
    if state.multi_tried and not again or threads0 <= 1 or opt_get(a, "replay_ops"):
        return None
    state.multi_tried = True
    if state.multi_from is None:  # what resume_multi (K20) goes back to
        state.multi_from = {
            "best": state.best,
            "best_res": state.best_res,
            "nkept": len(state.kept_trials),
            "judged": (state.runs, state.need, state.more),
            "args": (start, start_ops),
        }
    return start, start_ops, base


def multi_plan(state, base, start, start_ops, again, sweep):
    """K8's sizes from BASE, its plan printed: (threads, BASE's pinned
    ops, key spaces (BASE's last), seeds, kill points fired, (faults
    injected, ops they struck in), the path's deadline)."""
    a = base.op["argv"]
    threads = min(MT_THREADS, as_int(opt_get(a, "threads"), 2))
    pinned = pinned_ops(base)
    k0 = as_int(opt_get(a, "max_key"))
    keys = [k for k in MT_KEYS if k < k0] + [k0]
    seed0 = as_int(opt_get(a, "seed"))
    nseeds = MT_AGAIN_SEEDS if again else MT_SEEDS
    seeds = [seed0] + [
        derive(seed0, "shrink", "multi", j)
        for j in range(sweep * (nseeds - 1), (sweep + 1) * (nseeds - 1))
    ]
    res = (state.best_res or {}).get("results", {}).get(state.best.w) if start is None else None
    res = res or (state.meta["steps"][base.w].get("result") or {})
    fired = res.get("kill_points_fired") or []
    faults = injected_in(state, state.best_res, base.w, recorded=start is not None)
    if faults[1] is None:
        faults = (faults[0], start_ops)
    stop = time.monotonic() + state.left() * MT_SHARE
    state.p.line(
        "shrink: multi-thread path (K8): %d threads, %s ops each, key spaces %s, %d seeds, "
        "kept when %d of %d trials fail the same way"
        % (
            threads,
            "/".join(map(str, MT_OPS)),
            "/".join(map(str, keys)),
            len(seeds),
            MT_NEED,
            MT_TRIALS,
        )
    )
    return threads, pinned, keys, seeds, fired, faults, stop


def multi_shapes(state, base, n, first, keys, faults, threads):
    """K8's shapes of N ops per thread: each key space of KEYS (the
    last BASE's own) with the rare ops scaled, then with the faults
    that struck scaled too; in the FIRST pass the contention mixes of
    the smallest key space's run.  [(key space, cand, what, mix)]."""
    k0 = keys[-1]
    shapes = []
    for k in keys:
        c0 = base
        if k != k0:
            c0 = base if is_fresh(base) else freshened(state, base)
            c0 = c0.copy()
            c0.set_all("max_key", k)
        sc = scaled(state, c0, n, ops=faults[1])
        vol = opt_get(sc.op["argv"], "checkpoint_wal_bytes")
        shapes.append(
            (
                k,
                sc,
                "checkpoint_wal_bytes %s" % vol
                if vol != opt_get(c0.op["argv"], "checkpoint_wal_bytes")
                else "",
                None,
            )
        )
        sf = scaled(state, c0, n, faults)
        if sf.op["argv"] != sc.op["argv"]:
            shapes.append(
                (k, sf, "faults every %d ops" % max(2, n * threads // MT_FAULT_TIMES), None)
            )
    # ... then, with the recorded seed, the smallest key space's run
    # in each contention mix (the most contention; after every key
    # space in the run's own mix: a race that needs none is met
    # in that first).
    k, sc = shapes[0][0], shapes[0][1]
    for what, mix in contention_mixes(sc.op["argv"], state.defaults) if first else []:
        c = sc.copy()
        for opt, v in mix.items():
            c.op["argv"] = opt_set(c.op["argv"], opt, v)
        shapes.append((k, c, what, mix))
    return shapes


def multi_keep(state, label, c, extra):
    """K8's judgement of candidate C: kept on MT_NEED of MT_TRIALS (and
    MT_MORE), then confirmed on MT_REPRO_NEED of MT_CONFIRM more, or
    the run before it restored; on a keep state.multi and the judging
    of later steps set.  Returns True if kept."""
    prev = (state.best, state.best_res)
    nkept = len(state.kept_trials)
    if not state.runner.attempt(
        label, c, "multi", runs=MT_TRIALS, need=MT_NEED, extra=extra, more=MT_MORE
    ):
        return False
    e = state.log[-1]
    # Two of a few trials can be luck with a rare race
    # among the path's many candidates: MT_CONFIRM more,
    # as many of which must fail as repro needs.
    if not state.runner.attempt(
        "confirm: " + label,
        state.best.copy(),
        "multi",
        runs=MT_CONFIRM,
        need=MT_REPRO_NEED,
        extra=extra,
        more=0,
    ):
        if state.best_res is not prev[1] and state.best_res:
            shutil.rmtree(state.best_res["dir"], ignore_errors=True)
        state.best, state.best_res = prev
        del state.kept_trials[nkept:]
        return False
    f = state.log[-1]
    t, n_f = e["trials"] + f["trials"], e["failures"] + f["failures"]
    state.multi = dict(extra, trials=t, failures=n_f, rate=round(n_f / t, 3), step=f["n"])
    state.runs, state.need, state.more = MT_TRIALS, MT_NEED, MT_MORE
    return True


@shrink_pass
def multi_again(state, rounds):
    """K23: a run of several threads the rounds left, with MT_RESUME_MIN
    of the budget left: the multi-thread path again from it (its
    options, mix and fault classes are the shrunk ones now, and the
    sizes it tries are the ones below its own, smallest first, each
    with MT_AGAIN_SEEDS seeds), and the rounds again on what it keeps,
    while it keeps one; when a sweep keeps nothing, the next with
    other seeds, MT_AGAIN_SWEEPS at most.  The path's first keep is the
    first run that fails, often its largest size (planted bug
    control-redo-is-checkpoint: 2 x 1,024 ops kept, 2 x 357 after the
    rounds, and the shrink over at 79 s of 600), and a race that short
    runs show is met with some seeds only.  ROUNDS: the Shrinker's
    rounds, a function of no argument.  Kept when it kept one."""
    while (
        not state.best.deterministic()
        and as_int(opt_get(state.best.op["argv"], "threads"), 2) > 1
        and sweeps(state, what="from the shrunk run").kept
    ):
        rounds()


@shrink_pass
def sweeps(state, start=None, start_ops=None, what=""):
    """K23's sweeps: p_multi AGAIN from START (the shrunk run when
    None; START_OPS as p_multi's), the k-th lot of other seeds in sweep
    k, until one keeps a run, MT_AGAIN_SWEEPS have run, less than
    MT_RESUME_MIN of the budget is left, or the run has no size below
    its own.  WHAT: the log line's.  Kept when one kept a run."""
    for sweep in range(MT_AGAIN_SWEEPS):
        if (
            state.left() < MT_RESUME_MIN
            or STOP.is_set()
            or 0 < pinned_ops(start or state.best) <= MT_OPS[0]
        ):
            break
        state.p.line(
            "shrink: the multi-thread path again, %s (K23%s)"
            % (what, ", sweep %d of other seeds" % (sweep + 1) if sweep else "")
        )
        if p_multi(state, start, start_ops, again=True, sweep=sweep).kept:
            return


def resume_multi(state):
    """K20: the multi-thread path kept a run whose shrunk folder (and
    the runs stepped back to) reproduced fewer than MT_REPRO_NEED
    times in repro.  The candidate was kept on a rate its repro did not
    show again (a run that fails 1 time in 20 among the path's many
    candidates), and everything kept after it stands on it: go back to
    what the path started from and go on with the candidates after it
    (multi_judged: each is judged once).  Returns True if the path kept
    another one."""
    f = state.multi_from
    state.best, state.best_res = f["best"], f["best_res"]
    del state.kept_trials[f["nkept"] :]
    state.runs, state.need, state.more = f["judged"]
    state.multi, state.multi_tried = None, False
    return p_multi(state, *f["args"]).kept


def settle(state, dest, doc, refine):
    """The repro of a shrunk run that is not deterministic, written to
    DEST: one repro, which runs the folder's repro_tries and prints
    each try and the rate (K8).  A chain of steps each kept on a few
    of a few trials can drift to a rare run: below MT_REPRO_NEED, the
    runs kept before it that are not deterministic are written and
    tried instead, latest first (MT_STEP_BACK at most), and the first
    that reaches it is the result; if none does, the one that
    reproduced most often (TrialRunner.step_back).  When that is still
    below MT_REPRO_NEED and the multi-thread path kept the run, the
    path resumes after the candidate it kept (K20, resume_multi), the
    rounds run again on what it keeps next, and the new run's repro is
    judged the same way, while MT_RESUME_MIN of the budget is left (it
    resumes as well when an earlier run reached MT_REPRO_NEED in place
    of the smaller one); the result is the smallest run that reached
    MT_REPRO_NEED, else the one that reproduced most often (ties: the
    latest).  The recorded run is stepped back to only when no resume
    is left.  REFINE: the Shrinker's refine, run after a resume.  Sets
    DOC's stepped_back and resumed, state.last_kept (the result's last
    step kept on several trials).  Returns (each try's
    seconds, how many reproduced, tries) of the result's repro, or None
    when the rounds after a resume kept a deterministic run (one
    thread: finish's own repro judges it)."""
    # each run judged: (its repro, best, best_res, multi, last_kept, stepped_back, its folder)
    held = []
    passed_over = False  # the recorded run was not stepped back to, a resume coming first
    while True:
        can_resume = bool(state.multi) and state.left() >= MT_RESUME_MIN and not STOP.is_set()
        got = first = state.runner.repro_rate(dest)
        back = None
        if got[1] < MT_REPRO_NEED and state.kept_trials:
            *got, back = state.runner.step_back(
                dest, got, MT_REPRO_NEED, MT_STEP_BACK, recorded=not can_resume
            )
            passed_over = passed_over or can_resume
        held.append(
            (
                tuple(got),
                state.best,
                state.best_res,
                state.multi,
                state.runner.last_kept_on_trials(),
                back,
                os.path.join(state.work, "held-%d" % len(held)),
            )
        )
        # An earlier run that reproduced stands in for the smaller one
        # that did not: the path resumes too while budget is left
        # (planted bug checkpoint-redo-at-record: 2 x 64 ops reproduce
        # 1 of 8, 2 x 256 3 of 8, and without the resume the shrink is
        # over at 169 s of 600 with 8.8x).
        if not can_resume or got[1] >= MT_REPRO_NEED and not back:
            break
        shutil.move(dest, held[-1][-1])
        note_resume(state, doc, first, got, back)
        if not resume_multi(state):
            state.p.line("shrink: the multi-thread path kept no other run")
            break
        refine()
        state.runner.write_folder(dest, state.best, state.best_res)
        if state.best.deterministic():
            return None  # one thread after all: finish's repro judges it
    got, back = take_held(state, held, pick_held(state, held), dest)
    if got[1] == 0 and passed_over and state.kept_trials:
        # No smaller run reproduced at all, and no resume is left: the
        # recorded run, as step_back does without resumes.
        *got, more = state.runner.step_back(dest, got, MT_REPRO_NEED, 0, smaller=False)
        back = (back or []) + more
    if back is not None:
        doc["stepped_back"] = back
    return tuple(got)


def note_resume(state, doc, first, got, back):
    """settle's record of a resume (K20) in DOC's resumed, and its
    line: the shrunk run's repro reproduced FIRST (tries, of), and GOT
    is what the runs stepped back to (BACK) reproduced."""
    doc.setdefault("resumed", []).append(
        {
            "multi_step": state.multi["step"],
            "reproduced": "%d of %d" % (first[1], first[2]),
            "stepped_back": back or [],
        }
    )
    state.p.line(
        "shrink: the shrunk run reproduced %d of %d (the multi-thread path kept it at step "
        "%d)%s: the path resumes after it (K20)"
        % (
            first[1],
            first[2],
            state.multi["step"],
            ", an earlier run %d of %d" % (got[1], got[2]) if got[1] >= MT_REPRO_NEED else "",
        )
    )


def pick_held(state, held):
    """The index in HELD (settle's runs judged) of the result: the
    smallest run that reproduced MT_REPRO_NEED times (the latest of a
    tie), else the one that reproduced most often (the latest of a
    tie)."""
    enough = [i for i in range(len(held)) if held[i][0][1] >= MT_REPRO_NEED]
    if enough:
        return min(enough, key=lambda i: (state.size(held[i][1], held[i][2] or {}), -i))
    return max(
        range(len(held)),
        key=lambda i: (Fraction(held[i][0][1], held[i][0][2]) if held[i][0][2] else 0, i),
    )


def take_held(state, held, best, dest):
    """Make HELD[BEST] the shrinker's result again (best, best_res,
    multi, last_kept), its folder DEST when it is not the last one
    judged; returns (its repro's figures, the runs stepped back to)."""
    got, state.best, state.best_res, state.multi, state.last_kept, back, folder = held[best]
    if best != len(held) - 1 or not os.path.isdir(dest):
        shutil.rmtree(dest, ignore_errors=True)
        shutil.move(folder, dest)
        state.p.line(
            "shrink: the run the multi-thread path kept at step %d (reproduced %d of %d) is "
            "the result" % (state.multi["step"], got[1], got[2])
        )
    return got, back


def scaled(state, cand, n, faults=None, ops=None, volume=True):
    """CAND's op step for a short run of N ops per thread: each rare op
    of MT_SCALED that would come less than once in it comes every
    quarter of it, and a snapshot is held at most a quarter of it
    (snapshot_hold_ops, stress's default 200: held across more ops
    than the run has, it would never be read again).  With OPS (the
    ops of the run it is scaled from, all threads; FAULTS' if not
    given; not with VOLUME false), the checkpoints the log's volume
    starts (checkpoint_wal_bytes) come as often per op as they came in
    that run: the threshold scaled by the short run's share of its
    ops (a run that never reached it does not in the short run either).
    Planted bug checkpoint-redo-at-record's four-thread catch has
    checkpoints only by volume (8M: one or two in 266,000 ops), and
    no run of the multi-thread path, 2 x 1,024 ops at most, writes
    8M, so unscaled none has the checkpoint its race needs (it still
    needs a read error from disk to poison the handle, which a short
    run on a fresh key space does not read: 1.2x with this).  K7's short runs
    (p_short) leave the threshold: their first shape is the run
    unscaled, and the volume alone would add a shape of six seeds to
    every one-thread run, whether its run checkpointed or not.  With FAULTS
    (injected_in's: what struck the op step the run comes from), each
    fault class that struck it but would strike less than once in the
    short run strikes about MT_FAULT_TIMES times in it: a failure that
    needs a checkpoint with a second thread writing during it and then
    an ENOSPC that reopens the database (control-redo-is-checkpoint,
    one ENOSPC in 12,000 ops) never comes in 2 x 64 ops."""
    c = cand.copy()
    a = c.op["argv"]
    q = max(2, n // 4)
    for name in MT_SCALED:
        v = as_int(opt_get(a, name))
        if v > n:
            a = opt_set(a, name, q)
    if as_int(opt_get(a, "acquire_snapshot_one_in")) > 0 and "snapshot_hold_ops" in state.defaults:
        hold = as_int(
            opt_get(a, "snapshot_hold_ops"), as_int(state.defaults["snapshot_hold_ops"], 200)
        )
        if hold > q:
            a = opt_set(a, "snapshot_hold_ops", q)
    run = n * max(1, as_int(opt_get(a, "threads"), 2))
    ops = ops or (faults[1] if faults else None)
    if volume and ops and run < ops:
        every = parse_size(
            opt_get(a, "checkpoint_wal_bytes") or state.defaults.get("checkpoint_wal_bytes") or 0
        )
        if every:
            a = opt_set(a, "checkpoint_wal_bytes", max(1, every * run // ops))
    if faults and faults[1]:
        counts, ops = faults
        for opt in sorted(FAULT_OPTIONS):
            v, k = as_int(opt_get(a, opt)), counts.get(FAULT_OPTIONS[opt], 0)
            expect = k * run / ops
            if v > 0 and 0 < expect < 1:
                a = opt_set(a, opt, max(2, min(v, int(v * expect / MT_FAULT_TIMES))))
    c.op["argv"] = a
    return c


def injected_in(state, res, w, recorded=False):
    """(what struck the op step W of trial RES: {class: injections},
    its ops): the run a short run is scaled from (scaled's FAULTS).
    RECORDED: the recorded run, from its folder (the ledger lines its
    steps added to the start's; its later steps inject nothing in the
    run phase)."""
    if not recorded:
        r = ((res or {}).get("results") or {}).get(w) or {}
        return r.get("injected") or {}, (res or {}).get("ops")
    before = os.path.join(state.start, "run", "ledger")
    size = os.path.getsize(before) if os.path.exists(before) else 0
    lines = ledger_lines_since(os.path.join(state.dir, "end", "run", "ledger"), size)
    rep = opt_get(state.meta["steps"][w]["argv"], "report") or ""
    try:
        with open(rep.replace("@ITER@", state.dir)) as f:
            ops = report_ops(json.load(f))
    except (OSError, ValueError, AttributeError):
        ops = None  # killed: no report (its progress file is gone with the run)
    return injected_by_class(lines), ops
