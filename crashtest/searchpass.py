"""K6's seed search of a shrink (crashtest.py shrink; shrink.py has the
rules and their order): one thread where the run had several (or where
the recorded run did not fail again), its op step traced, with the
recorded seed and others until one fails the same way.  Used by the
thread pass (optpass.p_threads), the pinning pass (optpass.p_pin), the
fresh-database passes (freshpass) and the Shrinker's baseline; it takes
the shrink's state (shrinkstate.ShrinkState) and returns a PassResult."""

import time

from .cand import as_int, endings, opt_get, opt_set
from .procs import STOP
from .seeds import derive
from .shrinkstate import shrink_pass
from .steppass import branch_of, end_unkilled, mid_killed

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


@shrink_pass
def search(
    state,
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
    start = mid_killed(start, "crash_at_end") or start
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
    stop = time.monotonic() + state.left() * share
    shapes = [(start, "")]
    if state.recorded_threads > 1 and as_int(opt_get(a, "acquire_snapshot_one_in")) == 0:
        # The stand-in: a snapshot the one thread holds now and then
        # is the reader another thread was.
        sc = start.copy()
        sc.op["argv"] = opt_set(sc.op["argv"], "acquire_snapshot_one_in", STANDIN_SNAPSHOT_ONE_IN)
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
                if time.monotonic() >= stop or state.left() <= 0 or STOP.is_set():
                    return False
                c.op["argv"] = opt_set(
                    opt_set(c.op["argv"], "seed", seed), "trace_ops", "@ITER@/ops.trace"
                )
                if state.runner.attempt(
                    "%sone thread, %s%s, traced, seed %d%s"
                    % (what, held, end, seed, " (the recorded)" if seed == base else ""),
                    c,
                    phase,
                    extra={"seed": seed},
                ):
                    return True
    return False
