"""The passes of a shrink (crashtest.py shrink) on its op step's options:
one thread (p_threads: K6's seed search, searchpass.search, then from a
fresh database, freshpass.one_thread), the op count pinned and a timed
SIGKILL made a crash after the last op (p_pin, cand.pin_op), the ops
traced (p_trace), fault classes dropped and
their rates lowered (p_classes, p_rates), kills at the last point fired
(p_kill), the op count halved (p_ops), a timer that must stay made
shorter (p_timer), short runs with other seeds (p_short, K7), the op mix
and rare ops (p_mix), the key space (p_keys), and every other option set
to stress's default (p_options; before delta debugging, the ones the
trace does not pin: p_untied).  shrink.py has the rules and their order.
Each pass takes the shrink's state (shrinkstate.ShrinkState: best,
best_res, defaults, its runner's attempt, left) and returns a
PassResult; the passes of other modules it runs (search, p_replay,
p_tie_checkpoints) and their helpers (scaled, injected_in) take it
too."""

from .cand import (
    CREATION_OPTIONS,
    as_int,
    drop_kills,
    is_fresh,
    opt_get,
    opt_set,
    pin_op,
    set_threads,
)
from .freshpass import one_thread
from .multipass import injected_in, scaled
from .params import FAULT_OPTIONS, same_value
from .procs import STOP
from .searchpass import search
from .seeds import derive
from .shrinkstate import shrink_pass
from .tracepass import p_replay, p_tie_checkpoints, replay_of

# The shortest timer p_timer halves a timed SIGKILL to (seconds: a process
# opens its database in a few hundredths).
TIMER_MIN = 0.1
# Short runs with other seeds (K7): op counts tried, and seeds for each.
SHORT_OPS = (1, 4, 16, 64, 256, 1024)
SHORT_SEEDS = 6
# Options whose effects the op trace does not pin (p_untied): a checkpoint
# the log's volume starts, evictions from a small cache.
UNTIED = ("checkpoint_wal_bytes", "cache_size")
# Options that place or run the step, not the workload's shape.
NOT_SHRUNK = {
    "db",
    "expected_values_dir",
    "run_dir",
    "report",
    "seed",
    "max_key",
    "hang_seconds",
    "threads",
    "ops_per_thread",
    "duration",
    "trace_ops",
    "replay_ops",
    "crash_at_end",
    "sync_fault_injection",
    "kill_random_test",
    "kill_points",
    "destroy_db_initially",
    "verification_only",
    "help",
    "list_fault_points",
    "engine",
    "faults_via",
}
MIX = ["readpercent", "iterpercent", "delpercent"]
RARE_OPS = [
    "reopen",
    "checkpoint_one_in",
    "verify_db_one_in",
    "acquire_snapshot_one_in",
    "vacuum_one_in",
]


@shrink_pass
def p_pin(state):
    """A timed op step gets a fixed op count (what the last kept trial did,
    per thread; four times that when a kill point must still fire), and a
    timed SIGKILL becomes --crash_at_end: a crash after the last op (or,
    with one thread, when that does not fail, a kill point: endings).
    A timed one-thread run the thread step traced replays its trace."""
    c = state.best.copy()
    s = c.op
    if opt_get(s["argv"], "replay_ops"):
        return
    what = []
    threads = max(1, as_int(opt_get(s["argv"], "threads"), 2))
    one = threads == 1 and (
        as_int(opt_get(s["argv"], "ops_per_thread"), 10000) == 0 or s.get("kill_after") is not None
    )
    if one and state.best.op_traced() and p_replay(state):
        return  # its own ops, reopens where they came (K10)
    # One thread kept timed or with its timed kill: first the same run
    # pinned (the recorded seed, untraced: the same ops, deterministic),
    # then traced with the recorded seed and others (K6's search).  A
    # one-thread run draws each op from a seed of its own, traced or
    # not (stress's workload.c), so the traced run with the recorded
    # seed is the pinned run (planted bug checksum-skips-last-byte
    # fails in a timed one-thread run of 4,776 ops and in none of eight
    # traced ones of other seeds: the pinned run is what shrinks it).
    # A timed run is not pinned the same way (where a
    # timer ends it moves), so the other seeds still count.
    if as_int(opt_get(s["argv"], "ops_per_thread"), 10000) == 0:
        ops = (state.best_res or {}).get(
            "ops"
        ) or 1000  # killed before its first progress note: a guess
        kill = as_int(opt_get(s["argv"], "kill_random_test")) > 0
        per = max(1, ops // threads)  # no more than the recorded run did (K10)
        if kill and s.get("expect") == "kill_point" and c.w == len(c.steps) - 1:
            # The failure shows in the op step itself, before a kill
            # point fired (a killed step is judged by the steps after
            # it): first the same ops without kill points, then with
            # them and room (a kill that came later than the recorded
            # run's ops is larger than it: K10).
            c2 = c.copy()
            drop_kills(c2.op)
            c2.op["argv"] = opt_set(opt_set(c2.op["argv"], "ops_per_thread", per), "duration", None)
            if state.runner.attempt(
                "ops pinned (%d per thread), no kill points (the failure shows before one "
                "fires)" % per,
                c2,
                "pin",
            ):
                return
    what += pin_op(c, (state.best_res or {}).get("ops"))
    if what and state.runner.attempt(", ".join(what), c, "pin") or not one:
        return
    ops = (
        as_int(opt_get(state.best.op["argv"], "ops_per_thread"), 10000)
        or (state.best_res or {}).get("ops")
        or 1000
    )
    search(state, state.best, ops)


@shrink_pass
def p_trace(state):
    """One thread, ops pinned: the ops traced, the recorded seed first
    (the same run: a one-thread run draws each op from a seed of its
    own, traced or not), then a few others (a failure that needed its
    recorded binary's draws, or its timing)."""
    a = state.best.op["argv"]
    if (
        as_int(opt_get(a, "threads"), 2) != 1
        or opt_get(a, "trace_ops")
        or opt_get(a, "replay_ops")
        or as_int(opt_get(a, "ops_per_thread"), 10000) == 0
    ):
        return
    base = as_int(opt_get(a, "seed"))
    for seed in [None] + [derive(base, "shrink", k) for k in range(3)]:
        c = state.best.copy()
        c.op["argv"] = opt_set(c.op["argv"], "trace_ops", "@ITER@/ops.trace")
        if seed is not None:
            c.op["argv"] = opt_set(c.op["argv"], "seed", seed)
        if state.runner.attempt(
            "ops traced (--trace_ops)" + (", seed %d" % seed if seed else ""),
            c,
            "trace",
            extra={"seed": seed if seed is not None else base},
        ):
            return


@shrink_pass
def p_classes(state):
    for opt in sorted(FAULT_OPTIONS):
        if as_int(opt_get(state.best.op["argv"], opt)) > 0:
            c = state.best.copy()
            c.op["argv"] = opt_set(c.op["argv"], opt, None)
            state.runner.attempt("drop %s" % FAULT_OPTIONS[opt], c, "classes")


@shrink_pass
def p_kill(state):
    a = state.best.op["argv"]
    if as_int(opt_get(a, "kill_random_test")) <= 0 or not state.best_res:
        return
    fired = (state.best_res["results"].get(state.best.w) or {}).get("kill_points_fired") or []
    if not fired:
        return
    for rate in ("1", opt_get(a, "kill_random_test")):
        c = state.best.copy()
        c.op["argv"] = opt_set(
            opt_set(c.op["argv"], "kill_points", fired[-1]), "kill_random_test", rate
        )
        if state.runner.attempt("kill only at %s, 1 in %s hits" % (fired[-1], rate), c, "kill"):
            return


@shrink_pass
def p_rates(state):
    if state.best.op_traced():
        return  # the trace turns faults off op by op (p_faults_off)
    for opt in sorted(FAULT_OPTIONS):
        n = as_int(opt_get(state.best.op["argv"], opt))
        if n > 0:
            c = state.best.copy()
            c.op["argv"] = opt_set(c.op["argv"], opt, n * 10)
            state.runner.attempt("%s 1 in %d -> 1 in %d" % (opt, n, n * 10), c, "rates")


@shrink_pass
def p_ops(state):
    a = state.best.op["argv"]
    n = as_int(opt_get(a, "ops_per_thread"), 10000)
    if n == 0 or opt_get(a, "replay_ops"):
        return
    lo, hi = 0, n  # fails at hi; unknown below
    while hi > 1 and state.left() > 0:
        mid = hi // 2 if lo == 0 else (lo + hi) // 2
        if mid <= lo or mid >= hi:
            break
        c = state.best.copy()
        c.op["argv"] = opt_set(c.op["argv"], "ops_per_thread", mid)
        if state.runner.attempt("ops %d -> %d" % (hi, mid), c, "ops"):
            hi = mid
        else:
            lo = mid
            if hi - lo <= max(2, hi // 8):
                break


@shrink_pass
def p_timer(state):
    """A timed op step whose SIGKILL p_pin could not make a crash after
    the last op (the failure needs a kill in the middle of an op, with
    I/O in flight): the kill comes at half the time, while the run
    still fails the same way (K2's trials), down to TIMER_MIN seconds.
    The ops shrink with the time."""
    s = state.best.op
    if (
        s.get("kill_after") is None
        or opt_get(s["argv"], "replay_ops")
        or as_int(opt_get(s["argv"], "ops_per_thread"), 10000) != 0
    ):
        return
    t = s["kill_after"]
    while t / 2 >= TIMER_MIN and state.left() > 0 and not STOP.is_set():
        c = state.best.copy()
        c.op["kill_after"] = round(t / 2, 3)
        if not state.runner.attempt(
            "the op step killed after %.3f s, not %.3f s" % (t / 2, t), c, "timer"
        ):
            return
        t = t / 2


@shrink_pass
def p_short(state):
    """K7: after halving the op count, a short run with another seed (a
    failure that rests on where the run ends, such as the log's end in
    a block's first sector, comes and goes with every op, so halving
    and ddmin stop early): SHORT_OPS op counts (each at most a tenth
    of the current), SHORT_SEEDS seeds each, the first that fails the
    same way kept.
    Only for a deterministic op step (traced, or one whose traced runs
    all passed) that ends by itself, with a crash after its last op, or
    by a kill point when a later step fails: its kill point then fires
    1 in a quarter of the short run's hits (planted bug
    seal-before-witness: a commit killed between its log write and its
    fsync, rolled back by the power loss, leaves the log's end in a
    block's first sector; a crash after the op rolls nothing back and
    passes, and delta debugging moves the kill with every removal:
    13,121 -> 1,998 ops)."""
    a = state.best.op["argv"]
    n = as_int(opt_get(a, "ops_per_thread"), 10000)
    expect = state.best.op.get("expect")
    kill = as_int(opt_get(a, "kill_random_test"))
    if (
        opt_get(a, "replay_ops")
        or not state.best.deterministic()
        or n <= 10
        or expect not in ("exit0", "crash_at_end", "kill_point")
        or expect == "kill_point"
        and (kill <= 0 or state.best.w == len(state.best.steps) - 1)
    ):
        return
    base = as_int(opt_get(a, "seed"))
    for k in [x for x in SHORT_OPS if x * 10 <= n]:
        # Then with the rare ops that would not come in K ops every
        # quarter of them (K8's scaling): a failure that needs a
        # checkpoint before the crash (checkpoint-skips-data-fsync,
        # one in 2,000 ops) has none in a short run.
        shapes = [(state.best, "")]
        sc = scaled(state, state.best, k)
        if sc.op["argv"] != state.best.op["argv"]:
            shapes.append((sc, ", rare ops every %d" % max(2, k // 4)))
        sf = scaled(
            state, state.best, k, injected_in(state, state.best_res, state.best.w), volume=False
        )
        if sf.op["argv"] != sc.op["argv"]:
            shapes.append((sf, ", rare ops and faults every %d" % max(2, k // 4)))
        for start, label in shapes:
            for j in range(SHORT_SEEDS):
                if state.left() <= 0 or STOP.is_set():
                    return
                seed = derive(base, "shrink", "short", k, j)
                c = start.copy()
                c.op["argv"] = opt_set(opt_set(c.op["argv"], "ops_per_thread", k), "seed", seed)
                kl = ""
                if expect == "kill_point":
                    every = max(1, min(kill, k // 4))
                    c.op["argv"] = opt_set(c.op["argv"], "kill_random_test", every)
                    kl = ", kill points 1 in %d hits" % every
                if state.runner.attempt(
                    "ops %d -> %d, seed %d%s%s" % (n, k, seed, kl, label),
                    c,
                    "short",
                    extra={"seed": seed},
                ):
                    return


@shrink_pass
def p_mix(state):
    if opt_get(state.best.op["argv"], "replay_ops"):
        return  # the trace says what each op is
    for name in MIX:
        a = state.best.op["argv"]
        v = as_int(opt_get(a, name), as_int(state.defaults.get(name)))
        if v > 0:
            c = state.best.copy()
            wp = as_int(opt_get(a, "writepercent"), as_int(state.defaults.get("writepercent")))
            c.op["argv"] = opt_set(opt_set(c.op["argv"], name, 0), "writepercent", wp + v)
            state.runner.attempt("%s %d -> 0 (writes take its share)" % (name, v), c, "mix")
    for name in RARE_OPS:
        v = as_int(opt_get(state.best.op["argv"], name))
        if v > 0:
            c = state.best.copy()
            c.op["argv"] = opt_set(c.op["argv"], name, 0)
            state.runner.attempt("%s %d -> 0" % (name, v), c, "mix")


@shrink_pass
def p_keys(state):
    if not is_fresh(state.best):
        return
    k = as_int(opt_get(state.best.op["argv"], "max_key"))
    # A replayed trace names its keys: no key space below the largest.
    top = max([as_int(line.split()[2], -1) for line in state.best.trace or []] or [-1])
    while k > 8 and k // 2 > top and state.left() > 0:
        c = state.best.copy()
        c.set_all("max_key", k // 2)
        if not state.runner.attempt("key space %d -> %d" % (k, k // 2), c, "keys"):
            return
        k //= 2


@shrink_pass
def p_untied(state):
    """Before delta debugging: the options whose effects fall where the
    trace does not say (UNTIED) set to stress's defaults.  Removing ops
    moves a checkpoint that the log's volume starts, or an eviction
    from a small cache, so a failure that rests on one comes and goes
    with every chunk removed."""
    if state.best.trace is not None:
        p_options(state, only=UNTIED)
        p_tie_checkpoints(state)


@shrink_pass
def p_options(state, only=None):
    fresh = (
        state.best.fresh
        or opt_get(state.best.steps[0].get("argv", []), "destroy_db_initially") == "1"
    )
    a = state.best.op["argv"]
    names = [x[2:].split("=", 1)[0] for x in a if x.startswith("--")]
    names = sorted(set(names), key=lambda n: (n != "cache_size", n))
    for name in names:
        if only is not None and name not in only:
            continue
        if (
            name in NOT_SHRUNK
            or name in FAULT_OPTIONS
            or name in MIX
            or name in RARE_OPS
            or name == "writepercent"
        ):
            continue
        if name in CREATION_OPTIONS and not fresh:
            continue
        d = state.defaults.get(name)
        v = opt_get(state.best.op["argv"], name)
        if d is None or v is None or same_value(v, d):
            continue
        c = state.best.copy()
        c.set_all(name, d)
        state.runner.attempt("%s %s -> %s (stress's default)" % (name, v, d), c, "options")


@shrink_pass
def p_threads(state):
    threads = as_int(opt_get(state.best.op["argv"], "threads"), 2)
    if threads <= 1:
        return
    c = state.best.copy()
    set_threads(c, 1)
    what = "threads %d -> 1" % threads
    if not opt_get(c.op["argv"], "trace_ops") and not opt_get(c.op["argv"], "replay_ops"):
        # Traced: a try K10 refuses is replayed below, and a run kept
        # is replayed by p_pin.
        c.op["argv"] = opt_set(c.op["argv"], "trace_ops", "@ITER@/ops.trace")
        what += ", traced"
    if state.runner.attempt(what, c, "threads"):
        return
    if state.larger_trace:
        # K10 refused a try that failed (one thread does more ops in
        # the time than several did): its trace replayed is its run,
        # reopens where they came (planted bug page-before-wal: pinned
        # to a failing try's 332,096 ops, 3 reopens spread over the
        # count, the run passes, as at five other counts; 335,739
        # fails).
        c, more = replay_of(state, c, state.larger_trace[1])
        if c is not None and state.runner.attempt(
            "%s, %s (a try that failed)" % (what, ", ".join(more)), c, "threads"
        ):
            return
    # A bug rarely needs threads; it needs a schedule: one thread with
    # other seeds, as many ops as all threads did (K6).
    if not state.searched and one_thread(state, state.best, (state.best_res or {}).get("ops")):
        return
    half = threads // 2
    if 1 < half < threads:
        c = state.best.copy()
        set_threads(c, half)
        state.runner.attempt("threads %d -> %d" % (threads, half), c, "threads")
