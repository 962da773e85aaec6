"""The passes of a shrink (crashtest.py shrink) that start the run from a
fresh database: the run's grown database replaced by a step that creates
one (K5, K14), and that create step's ops reduced (p_create) or folded
into the op step (p_fold_create, K26); and one_thread, K6's seed search
(searchpass.search) then the same from a fresh database.  shrink.py has
the rules and their order.  Each pass takes the shrink's state
(shrinkstate.ShrinkState: best, best_res, meta, hang, orig_ops, its
runner's attempt, left) and returns a PassResult."""

import os

from .cand import (
    CREATION_OPTIONS,
    as_int,
    is_fresh,
    is_workload,
    kill_every,
    opt_get,
    opt_set,
    set_faults,
    trace_flip,
    trace_kill_pin,
    trace_ops_of,
)
from .params import same_value
from .procs import STOP
from .searchpass import search
from .seeds import derive
from .shrinkstate import shrink_pass
from .steps import opt_args, state_argv

# The blocks a pinned page flip of a grown database's run is moved to on a
# fresh one (p_fresh): block 0 is the meta page, and a create step of 200
# ops leaves a handful of pages after it.
FRESH_FLIP_BLOCKS = range(1, 7)

# The most ops a step that redoes an earlier iteration does (K15): one
# thread doing what four did in 60 s takes minutes.
HISTORY_MAX_OPS = 50000

# The most seed searches p_fresh runs, each up to SEARCH_SHARE of the
# budget left: the first, and two after options changed.
FRESH_SEARCHES = 3

# The open options a trace's restart may set (stress/options.c
# restart_names, docs/formats.md): a folded step's own, on the restart in
# front of its ops (p_fold_create).
RESTART_OPTIONS = (
    "cache_size",
    "full_page_writes",
    "wal_log_hints",
    "hint_fpi",
    "vacuum_freeze_min_age",
    "wal_compression",
    "sync_mode",
    "checkpoint_wal_bytes",
)

# The most ops of a create step that fills the key space (freshened).
FILL_MAX_OPS = 20000

# The op mix of a create step made of batches only (p_create): the rest of
# 100 after these is batches.
CREATE_MIX = ("readpercent", "writepercent", "delpercent", "iterpercent")


def history_step(i, h):
    """The step that redoes earlier iteration H (meta.json history) on the
    state, the I-th of them: its workload with one thread, its ops and no
    kill or timer (K15)."""
    w = h["workload"]
    d = "@ITER@/steps/history-%d" % i
    argv = opt_set(w["argv"], "report", d + "/report.json")
    for o in ("duration", "kill_random_test", "kill_points", "trace_ops", "replay_ops"):
        argv = opt_set(argv, o, None)
    argv = opt_set(
        opt_set(argv, "threads", 1),
        "ops_per_thread",
        max(1, min(h.get("ops") or 1000, HISTORY_MAX_OPS)),
    )
    return {
        "type": "stress",
        "name": "history-%d" % i,
        "state": w.get("state", "@STATE@"),
        "dir": d,
        "argv": argv,
        "expect": "exit0",
        "kill_after": None,
        "primary": True,
        "time_limit": None,
    }


def foldable(step, first):
    """STEP can fold into the op step after it (p_fold_create): a workload
    of one thread and a fixed op count, no timer or kill, the FIRST one
    creating the database (--destroy_db_initially) and no later one."""
    a = step["argv"]
    return (
        step["type"] == "stress"
        and is_workload(step)
        and step.get("kill_after") is None
        and (opt_get(a, "destroy_db_initially") == "1") == first
        and not opt_get(a, "duration")
        and as_int(opt_get(a, "threads"), 1) == 1
        and as_int(opt_get(a, "ops_per_thread"), 0) > 0
        and not as_int(opt_get(a, "kill_random_test"))
        and not opt_get(a, "kill_points")
    )


def fold_trace(i):
    """The trace file step I writes when it is traced to be folded."""
    return "@ITER@/create.trace" if i == 0 else "@ITER@/fold-%d.trace" % i


def fold_names(cand):
    """The steps p_fold_create folds, in words."""
    n = cand.w - 1
    return (
        "create step's"
        if n == 0
        else "create and %d regrowing step%s" % (n, "'s" if n == 1 else "s'")
    )


def fresh_key(cand):
    """What p_fresh's seed search of CAND depends on: its op step's options
    but for those the search sets itself (seed, trace, op count)."""
    argv = cand.op["argv"]
    for o in ("seed", "trace_ops", "replay_ops", "ops_per_thread", "report"):
        argv = opt_set(argv, o, None)
    return tuple(argv)


def kill_redrawn(c, pin, n):
    """C's op step (untraced) with the kill K16 pinned in the trace it
    came from (PIN: (point, nth), or None) drawn again at that point, at
    the rate cand.kill_every gives N ops (as K6's endings draw a kill at
    a point): K16 takes the drawn kill out of the argv, and
    a search that drops the trace would drop the only kill the run has:
    every seed would run to its end and diverge (planted bug
    witness-at-end-is-damage: without the redraw, the fresh-database
    searches of a 5-op run killed at kill/wal/after_write_before_sync
    end all 36 seeds "passed instead of crashed").  C itself when there
    is no pin or the argv still draws a kill."""
    if not pin or as_int(opt_get(c.op["argv"], "kill_random_test")) > 0:
        return c
    c = c.copy()
    every = kill_every(pin[0], n, c.op["argv"])
    c.op["argv"] = opt_set(opt_set(c.op["argv"], "kill_points", pin[0]), "kill_random_test", every)
    return c


@shrink_pass
def p_fresh(state):
    """K14: a fresh database instead of the one the run had grown.  The
    run as it is first.  A trace recorded on the grown database reads
    and deletes keys a fresh one never had, and a failure that rests
    on where the log ends moves with every op the create step adds,
    so then, once the run has one thread, its op step untraced from a
    fresh database with its own seed and others (K6's search), as
    many ops as the recorded op step did: a failure the grown
    database was made to show by its earlier iterations is shown from
    nothing.  The search runs again whenever the op step's options
    have changed since its last one: a run kept on the grown database
    with its rare ops and faults made frequent (p_short) may show from
    a fresh one what the recorded options did not (planted bug
    writeback-error-cleans: with a write fault 1 in 2,000 and a
    checkpoint 1 in 2,000 ops no fresh seed fails, which leaves 23 ops
    on a database 97,102 ops grew, 1.2x; with the 1 in 330 and 1 in 64
    p_short keeps, ten seeds of ten fail from a fresh database).  Each
    search runs after a create step of 200 ops, then, if no seed failed,
    after one that fills the key space: a failure that needs pages evicted
    from a cache the database outgrows, or a key space as full as the grown
    one, shows only there (planted bug fpi-skips-page-at-redo-lsn: no seed
    of eight fails after 200 ops, which leaves 52 ops on a database 2,834
    ops grew, 5.0x; after 1,000 batches six seeds of ten fail).
    At most FRESH_SEARCHES; the regrown database (K15) is tried once,
    after the first."""
    if is_fresh(state.best):
        return
    if state.runner.attempt(
        "a fresh database instead of the one the run had grown",
        freshened(state, state.best),
        "fresh",
    ):
        return
    if fresh_flips(state).kept:
        return
    key = fresh_key(state.best)
    if (
        state.fresh_searched == key
        or state.fresh_searches >= FRESH_SEARCHES
        or as_int(opt_get(state.best.op["argv"], "threads"), 2) != 1
        or state.left() <= 0
        or STOP.is_set()
    ):
        return
    first = state.fresh_searched is None
    state.fresh_searched = key
    state.fresh_searches += 1
    pin = trace_kill_pin(state.best.trace[-1]) if state.best.trace else None
    c = state.best.copy()
    c.trace = None
    c.op["argv"] = opt_set(opt_set(c.op["argv"], "replay_ops", None), "trace_ops", None)
    ops = max(state.orig_ops or 0, as_int(opt_get(c.op["argv"], "ops_per_thread")))
    now = (
        len(state.best.trace)
        if state.best.trace is not None
        else as_int(opt_get(state.best.op["argv"], "ops_per_thread"))
    )
    what = (
        "a fresh database, "
        if first
        else "a fresh database, the options kept since the last search, "
    )
    # A run kept shorter than the recorded op step (p_short, delta
    # debugging) is searched at its own length first: its trials are
    # short, and a bug that a fresh database shows quickly in another
    # kind shows its own kind there before that (planted bug
    # checkpoint-skips-data-fsync: a lost kept in 2 ops on a database
    # 21,512 ops grew; 32 fresh seeds of 9,734 ops fail as
    # unrecoverable or false_alarm, which would keep the grown
    # database, 1.5x; a fresh filled one with 2 ops is lost).
    for n in ([now] if 0 < now < ops else []) + [ops]:
        if fresh_search(state, kill_redrawn(c, pin, n), n, what).kept:
            return
    if first:
        regrown(state, kill_redrawn(c, pin, ops), ops)


@shrink_pass
def fresh_search(state, c, ops, what="a fresh database, "):
    """K6's search (one thread, OPS ops) on the op step of C from a
    fresh database: after a create step of 200 ops, then, if no seed
    failed the same way, after one that fills the key space (p_fresh).
    Also when the recorded run does not fail again and no seed on its
    grown database does (shrink.py K6): a catch whose torn page is one
    a cache the database outgrows evicted (planted bug
    fpi-skips-page-at-redo-lsn's two-thread catch) is not shrunk
    otherwise.  True when one was kept; False at once when C already
    starts from a fresh database."""
    if is_fresh(c):
        return False
    if search(state, freshened(state, c), ops, phase="fresh", what=what):
        return True
    return (
        state.left() > 0
        and not STOP.is_set()
        and search(
            state,
            freshened(state, c, fill=True),
            ops,
            phase="fresh",
            what=what + "its key space filled, ",
        )
    )


@shrink_pass
def regrown(state, c, ops):
    """K15: the op step C (one thread, untraced) from a fresh database
    grown the way the recorded run's was: after the create step, each
    earlier iteration's workload (meta.json history) with one thread,
    as many ops as it did (at most HISTORY_MAX_OPS), its options,
    faults and seed, and no kill; then K6's search on the op step.  A
    failure whose damage an earlier iteration wrote (planted bug
    writeback-error-cleans: a page whose write-back failed, evicted
    unwritten, read in a later iteration) shows in a run that does
    what that iteration did, and a fault class the failing iteration
    did not draw comes back with it."""
    hist = state.meta.get("history") or []
    if not hist or not all(h.get("workload") for h in hist) or state.left() <= 0 or STOP.is_set():
        return False
    g = freshened(state, c)
    g.splice(1, [history_step(i, h) for i, h in enumerate(hist)])
    return search(
        state,
        g,
        ops,
        phase="history",
        what="a fresh database grown as its %d earlier "
        "iteration%s did, " % (len(hist), "s" if len(hist) > 1 else ""),
    )


@shrink_pass
def p_history(state):
    """The steps that regrow a database (K15), each dropped, then its
    ops cut as p_create cuts a create step's."""
    for i in reversed(range(len(state.best.steps))):
        if (
            not state.best.steps[i]["name"].startswith("history-")
            or state.left() <= 0
            or STOP.is_set()
        ):
            continue
        c = state.best.copy()
        c.splice(i, drop=1)
        if not state.runner.attempt("step %s dropped" % state.best.steps[i]["name"], c, "history"):
            create_counts(
                state, "%s's ops %%d -> %%d" % state.best.steps[i]["name"], [], i, "history"
            )


@shrink_pass
def fresh_flips(state):
    """K14: the run from a fresh database with its pinned page flips
    (flip:BLOCK:BIT) moved onto the first blocks a fresh database has,
    the same bits.  A flip pinned on block 670 of a grown data file
    lands on nothing in a fresh one, and a failure that rests on which
    byte of a page it flips, not on which page, shows on any (planted
    bug checksum-skips-last-byte: its last byte; on the grown database
    the shrink stops at 6.4x, 12 ops on a database of 98,199).  Each
    distinct block in order of first use goes to FIRST, FIRST+1 ...
    for FIRST in FRESH_FLIP_BLOCKS; the first run that fails the same
    way is kept."""
    lines = state.best.trace or []
    flips = [trace_flip(line) for line in lines]
    blocks = list(dict.fromkeys(f[0] for f in flips if f))  # distinct, in order of first use
    for first in FRESH_FLIP_BLOCKS if blocks else ():
        if state.left() <= 0 or STOP.is_set():
            return False
        to = {b: first + i for i, b in enumerate(blocks)}
        if all(to[b] == b for b in blocks):
            continue
        moved = [
            set_faults(line, "flip:%d:%d" % (to[f[0]], f[1])) if f else line
            for line, f in zip(lines, flips)
        ]
        c = state.best.copy()
        c.trace = moved
        what = "a fresh database, the pinned page flip%s moved to block%s %s" % (
            "s" if len(blocks) > 1 else "",
            "s" if len(blocks) > 1 else "",
            ",".join(str(to[b]) for b in blocks),
        )
        if state.runner.attempt(what, freshened(state, c), "fresh"):
            return True
    return False


@shrink_pass
def p_create(state):
    """The ops of a step before the op step that creates the database
    (a create step: one thread, a fixed count): one op, then 1/128 of
    them, 1/64 ... 1/2, 3/4, 7/8, the first that still fails the same
    way kept.  They count in the run's size like the op step's (the
    last two: without them a failure that needs more than half of a
    create step of 200 keeps all 200, and a run of 2,029 ops whose op
    step shrinks to 3 ends at 203: planted bug seal-before-witness).
    Then the same
    counts of what is left as batches only: a create step's reads and
    scans change nothing on disk, and a batch of 2-8 keys writes what
    as many puts would (planted bug checkpoint-skips-data-fsync: 150
    of 200 ops kept behind an op step of 10, 160 ops from 445, fail the
    same way as 10 batches; redo-skips-second-action's 175 behind 3 as
    25 batches)."""
    first = state.best.steps[0]
    if (
        state.best.w == 0
        or first["type"] != "stress"
        or not is_fresh(state.best)
        or opt_get(first["argv"], "duration")
        or as_int(opt_get(first["argv"], "threads"), 1) != 1
    ):
        return
    create_counts(state, "create step's ops %d -> %d", [])
    if as_int(opt_get(state.best.steps[0]["argv"], "writepercent"), 30) != 0:
        create_counts(state, "create step's ops %d -> %d batches", [(k, 0) for k in CREATE_MIX])


@shrink_pass
def p_fold_create(state):
    """K26: the steps in front of an op step that replays a trace (a
    create step, then any that regrow the database, K15: one thread, a
    fixed count each) folded into it: each traced (the same run: one
    thread draws each op from a seed of its own, traced or not), then
    one step that creates the database (the create step's creation
    options) and replays their ops (faults off: a create step has
    none, and a regrowing step's were drawn at its own rates), a
    restart where each process ended and the next opened, and the op
    step's ops, so that delta debugging cuts their ops one by one too.
    Each restart names the open options the process after it ran with
    where they differ from the op step's (open_list; a first restart
    for the create step's own): a create step runs with stress's
    cache, sync mode and checkpoint volume, a regrowing step with its
    iteration's, and a fold that ran them all with the op step's
    would pass (planted bug page-before-wal: a create step of 1,000 ops
    with a 64M cache replayed with the op step's 256K).
    p_create and p_history cut a step's ops from the end only, and a
    failure that rests on a page the create step's 200th op wrote
    keeps all 200 (planted bug fpi-skips-page-at-redo-lsn: 3,854 ->
    421 ops, 9.1x, 200 of them the create step's); a catch that needs
    the database an earlier iteration grew keeps all of that
    iteration's ops (planted bug page-before-wal: 200 + 6,210
    regrowing ops in front of 13, 1.3x).  When the fold does not fail the same way
    the traced steps are undone (their traces were only the fold's
    input)."""
    b = state.best
    if (
        b.w < 1
        or b.trace is None
        or not opt_get(b.op["argv"], "replay_ops")
        or not all(foldable(s, i == 0) for i, s in enumerate(b.steps[: b.w]))
    ):
        return
    mark = len(state.log)
    if not attempt_fold_traced(state, b):
        return
    made = folded_ops(state, b)
    n = sum(1 for line in made if line.split()[1] != "restart")
    if n and attempt_fold(state, b, made, n):
        state.ddmin_size = 1 << 62  # a new list: delta debugging starts at its half
        return
    for e in state.log[mark:]:
        if e["verdict"] == "kept":
            e["verdict"] = "undone"
            e["why"] += "; undone: the fold did not fail the same way"
    # best_res stays the traced trial's: the same run (the recorded
    # one's directory went when that trial was kept).
    state.best = b


def attempt_fold_traced(state, b):
    """K26's first trial: candidate B with each step in front of its op
    step traced (--trace_ops); whether it failed the same way (then
    kept)."""
    c = b.copy()
    for i in range(b.w):
        c.steps[i] = dict(c.steps[i], argv=opt_set(c.steps[i]["argv"], "trace_ops", fold_trace(i)))
    return state.runner.attempt("the %s ops traced (--trace_ops)" % fold_names(b), c, "fold")


def folded_ops(state, b):
    """The op lines of B's steps in front of its op step, as the best
    (traced) trial recorded them, faults off, with a restart where each
    process ended and the next opened (and a first one for the create
    step's open options, open_list)."""
    steps = b.steps[: b.w + 1]
    lists = [open_list(state, s, b.op) for s in steps]
    made = (
        ["0 restart %s 0000000000000000 off | folded: %s's start" % (lists[0], steps[0]["name"])]
        if lists[0] != "-"
        else []
    )
    for i in range(b.w):
        lines = [
            set_faults(line, False)
            for line in trace_ops_of(
                os.path.join(state.best_res["dir"], "iter", os.path.basename(fold_trace(i)))
            )
        ]
        made += lines + [
            "%d restart %s 0000000000000000 off | folded: %s's end, %s's start"
            % (len(lines), lists[i + 1], steps[i]["name"], steps[i + 1]["name"])
        ]
    return made


def attempt_fold(state, b, made, n):
    """K26's second trial: one op step that creates the database with
    B's create step's creation options and replays MADE (N ops, the
    folded steps') before B's own trace; whether it failed the same way
    (then kept)."""
    f = state.best.copy()
    argv = opt_set(f.op["argv"], "destroy_db_initially", 1)
    for name in CREATION_OPTIONS:
        if opt_get(b.steps[0]["argv"], name) is not None:
            argv = opt_set(argv, name, opt_get(b.steps[0]["argv"], name))
    f.op["argv"] = argv
    f.trace = made + list(b.trace)
    f.splice(0, drop=b.w)
    steps = b.steps[: b.w + 1]
    f.folded_regrown += sum(1 for s in steps[:-1] if s["name"].startswith("history-"))
    return state.runner.attempt(
        "the %s %d ops folded into the op step (%d -> %d ops, %s)"
        % (
            fold_names(b),
            n,
            n + len(b.trace),
            len(f.trace),
            "one step fewer" if b.w == 1 else "%d steps fewer" % b.w,
        ),
        f,
        "fold",
    )


def open_list(state, step, op):
    """The KEY of the restart in front of STEP's folded ops: the open
    options STEP ran with where they differ from op step OP's
    (RESTART_OPTIONS; stress's defaults where a step names none),
    "name=value,...", or "-" when none does."""
    d = state.defaults or {}
    out = []
    for name in RESTART_OPTIONS:
        v, w = opt_get(step["argv"], name) or d.get(name), opt_get(op["argv"], name) or d.get(name)
        if v is not None and (w is None or not same_value(v, w)):
            out.append("%s=%s" % (name, v))
    return ",".join(out) or "-"


@shrink_pass
def create_counts(state, what, mix, i=0, phase="create"):
    """p_create's counts of the create step's ops (or step I's), with
    its op mix options MIX [(name, value)] set; the first that fails
    kept."""
    n = as_int(opt_get(state.best.steps[i]["argv"], "ops_per_thread"), 10000)
    tries = sorted(
        {1} | {n >> k for k in range(7, 0, -1) if 1 < n >> k} | {n - (n >> 2), n - (n >> 3)}
    )
    for m in tries:
        if m >= n or state.left() <= 0 or STOP.is_set():
            continue
        c = state.best.copy()
        argv = opt_set(c.steps[i]["argv"], "ops_per_thread", m)
        for k, v in mix:
            argv = opt_set(argv, k, v)
        c.steps[i] = dict(c.steps[i], argv=argv)
        if state.runner.attempt(what % (n, m), c, phase):
            return


def freshened(state, cand, fill=False):
    """CAND starting from an empty directory: a create step (the run's
    database options, 200 ops, one thread) first (K5).  With FILL, the
    create step fills the key space instead: max_key / 2 batches (at
    most FILL_MAX_OPS; of 2-8 keys each, about 9 keys in 10 written),
    a database the size of one that earlier iterations grew."""
    c = cand.copy()
    db = state.meta.get("db_params") or {}
    seed = state.meta["seed"]
    max_key = opt_get(c.op["argv"], "max_key")
    common = ["--max_key=%s" % max_key, "--hang_seconds=%d" % state.hang]
    ops = ["--ops_per_thread=200"]
    if fill:
        ops = ["--ops_per_thread=%d" % min(FILL_MAX_OPS, max(200, as_int(max_key, 10000) // 2))] + [
            "--%s=0" % k for k in CREATE_MIX
        ]
    create = {
        "type": "stress",
        "name": "create",
        "state": "@STATE@",
        "dir": "@ITER@/steps/create",
        "argv": ["@STRESS@"]
        + state_argv("@STATE@")
        + common
        + opt_args(db)
        + [
            "--report=@ITER@/steps/create/report.json",
            "--destroy_db_initially=1",
            "--threads=1",
        ]
        + ops
        + ["--seed=%d" % derive(seed, "create")],
        "expect": "exit0",
        "kill_after": None,
        "primary": True,
        "time_limit": None,
    }
    c.splice(0, [create])
    c.fresh = True
    return c


@shrink_pass
def one_thread(state, start, ops, **kw):
    """K6: the seed search on START's database, then from a fresh one
    (K14's search), before K8 looks for a race.  KW: search's."""
    state.searched = True
    return search(state, start, ops, **kw) or (
        state.left() > 0 and not STOP.is_set() and fresh_search(state, start, ops)
    )
