"""The passes of a shrink (crashtest.py shrink) on the run's steps rather
than its ops: the power-loss variants the failing step does not stand on
dropped (p_branches, K27), the failing step's own timed SIGKILL gone
(p_end_kill, K11), a recovery step's timer made a kill point (p_mid_kill,
K13), a one-thread op step's kill point made a crash after its last op
(p_crash_end, K9), and the power-loss step's mode and seed (p_powerloss).
shrink.py has the rules and their order.  Each pass takes the shrink's
state (shrinkstate.ShrinkState: best, best_res, its runner's attempt,
left) and returns a PassResult."""

from .cand import as_int, kills_to_crash_at_end, opt_get, opt_set, powerloss_undone
from .procs import STOP
from .seeds import derive
from .shrinkstate import shrink_pass

# Power-loss seeds tried toward fewer writes rolled back or torn.
POWERLOSS_SEEDS = 4

# What a timed SIGKILL of a recovery step becomes (K13), in the order
# tried: none (the step recovers and verifies: a failure its kill hid
# shows in it); a crash once the database is open (--crash_at_end: after
# redo and the end-of-recovery checkpoint, before the verification and
# the clean close); the kill point before that checkpoint; the one
# half-way through redo.
RECOVERY_KILLS = (
    (None, "ending by themselves (a failure the kill hid shows)"),
    ("crash_at_end", "crashing once open (--crash_at_end)"),
    (
        "kill/recovery/before_end_checkpoint",
        "killed at kill/recovery/before_end_checkpoint, its first hit",
    ),
    ("kill/recovery/mid_redo", "killed at kill/recovery/mid_redo, its first hit"),
)


def end_unkilled(cand):
    """CAND with its failing step's own timed SIGKILL gone (K11), or None
    when that step has none or is the op step."""
    c = cand.copy()
    last = c.steps[-1]
    if last["type"] != "stress" or last.get("kill_after") is None or c.w == len(c.steps) - 1:
        return None
    last["kill_after"], last["expect"] = None, "exit0"
    c.want[-1] = None  # it fails: the recorded run's "crashed" is not what it must do
    return c


def branch_of(cand):
    """CAND without the power-loss variants its failing step does not stand
    on (K27): the variant steps that copy another of the power-loss step's
    outputs and the stress steps on their copies.  Returns (the candidate,
    the names of the steps dropped), or (None, []) when there are none, the
    op step is among them, or a step kept reads one of their copies."""
    last = cand.steps[-1]
    if last["type"] != "stress" or not any(
        s["type"] == "variant" and s["to"] == last.get("state") for s in cand.steps
    ):
        return None, []
    others = {s["to"] for s in cand.steps if s["type"] == "variant" and s["to"] != last["state"]}
    drop = [
        i
        for i, s in enumerate(cand.steps)
        if s["type"] == "variant"
        and s["to"] in others
        or s["type"] == "stress"
        and s.get("state") in others
    ]
    kept = [s for i, s in enumerate(cand.steps) if i not in drop]
    reads = [v for s in kept for k, v in s.items() if k != "argv" and isinstance(v, str)] + [
        a for s in kept for a in s.get("argv", [])
    ]
    if not drop or cand.w in drop or any(o + "/" in r + "/" for o in others for r in reads):
        return None, []
    c = cand.copy()
    for i in reversed(drop):
        c.splice(i, drop=1)
    return c, [cand.steps[i]["name"] for i in drop]


@shrink_pass
def p_branches(state):
    """K27: the power-loss variants before the failing one that it does
    not stand on go (branch_of): each copies its own output of the
    power-loss step, and what ran on it (a restart killed on a timer)
    changes nothing the failing variant reads, but its outcome can
    diverge and its ops count in the run's size (planted bug
    fpi-skips-page-at-redo-lsn: variant 1 fails, variant 0's timed
    recovery makes one thread's run 2,816 ops to the recorded 2,689,
    refused as larger by K10, and 94 one-thread seeds diverge there,
    its recovery killed instead of ending)."""
    c, names = branch_of(state.best)
    if c is not None:
        state.runner.attempt(
            "the variants the failing step does not use dropped (%s)" % ", ".join(names),
            c,
            "branches",
        )


@shrink_pass
def p_end_kill(state):
    """K11: the failing step's own timed SIGKILL goes when that step is
    not the op step (p_pin's): a recovery killed after a fraction of a
    second, whose failure came before the kill.  The kill races the
    failure (a trial whose recovery replays more log is killed first
    and passes), and a timed kill makes no run deterministic."""
    c = end_unkilled(state.best)
    if c is not None:
        state.runner.attempt(
            "no SIGKILL in the failing step %s (the failure shows before it)" % c.steps[-1]["name"],
            c,
            "end_kill",
        )


def mid_killed(cand, point):
    """CAND with each recovery step between its op step and its last
    step that a timer SIGKILLs killed at POINT's first hit instead, or
    not killed (POINT None; K13), or None when it has none."""
    c, n = cand.copy(), 0
    for i, st in enumerate(c.steps):
        if (
            st["type"] != "stress"
            or st.get("kill_after") is None
            or i in (c.w, len(c.steps) - 1)
            or opt_get(st["argv"], "verification_only") != "1"
        ):
            continue
        st["kill_after"], n = None, n + 1
        if point is None:
            st["expect"], c.want[i] = "exit0", "passed"
        elif point == "crash_at_end":
            st["expect"], st["argv"] = "crash_at_end", opt_set(st["argv"], "crash_at_end", 1)
        else:
            st["expect"] = "kill_point"
            st["argv"] = opt_set(opt_set(st["argv"], "kill_random_test", 1), "kill_points", point)
    return c if n else None


@shrink_pass
def p_mid_kill(state):
    """K13: a recovery step between the op step and the failing one,
    SIGKILLed on a timer (a restart that only recovers and verifies),
    not killed, or killed at one of the recovery's own kill points
    instead, at its first hit (RECOVERY_KILLS, in order).  The timer lands where the
    recorded run's recovery happened to be after that many seconds; a
    run with other ops recovers faster or slower and is killed
    elsewhere or not at all (planted bug page-before-wal: every
    one-thread run diverges, its recovery done before the kill).  A
    kill point lands at the same place in every run, and the run can
    become deterministic."""
    for point, words in RECOVERY_KILLS:
        c = mid_killed(state.best, point)
        if c is None or state.runner.attempt(
            "recovery steps %s, not killed on a timer" % words, c, "mid_kill"
        ):
            return


@shrink_pass
def p_crash_end(state):
    """K9: a one-thread op step that a kill point ends, when a later step
    fails (the crash is what matters, not where in the op it came): the
    kill made a crash after the op it fired in (--crash_at_end, no kill
    points).  A kill point counts hits, so each op removed moves it, and
    halving or delta debugging stops at the first removal that no longer
    reaches it; a crash after the last op stays where the ops end."""
    c = state.best.copy()
    s = c.op
    a = s["argv"]
    if (
        as_int(opt_get(a, "threads"), 2) != 1
        or as_int(opt_get(a, "kill_random_test")) <= 0
        or s.get("expect") != "kill_point"
        or c.w == len(c.steps) - 1
        or not state.best_res
    ):
        return
    what = "the kill point made a crash after the last op"
    if not opt_get(a, "replay_ops"):
        n = (state.best_res.get("ops") or 0) + 1  # the op the kill fired in, too
        a = opt_set(opt_set(a, "ops_per_thread", n), "duration", None)
        what += " (%d ops)" % n
    s["argv"] = a
    kills_to_crash_at_end(s)
    state.runner.attempt(what, c, "crash_end")


@shrink_pass
def p_powerloss(state):
    for i, s in enumerate(state.best.steps):
        if s["type"] != "powerloss":
            continue
        mode = s["argv"][s["argv"].index("--mode") + 1]
        for m in ("keep", "rollback"):
            if m == mode or (mode == "keep"):
                break
            c = state.best.copy()
            argv = c.steps[i]["argv"]
            argv[argv.index("--mode") + 1] = m
            if state.runner.attempt("power loss %s -> %s" % (mode, m), c, "powerloss"):
                break
    p_powerloss_seed(state)


@shrink_pass
def p_powerloss_seed(state):
    """The fewest writes rolled back or torn: other seeds of each
    power-loss step (its decisions come from its seed), a seed kept
    when the trial fails the same way with fewer unsynced writes and
    metadata operations undone than the best run (powerloss's own
    count) -- never more."""
    if not state.best_res:
        return
    for i, s in enumerate(state.best.steps):
        if s["type"] != "powerloss" or s["argv"][s["argv"].index("--mode") + 1] == "keep":
            continue
        now = powerloss_undone(state.best_res, i)
        if not now or now <= 1:
            continue  # nothing fewer (none undone is keep mode's, tried before)
        base = as_int(s["argv"][s["argv"].index("--seed") + 1])
        for k in range(POWERLOSS_SEEDS):
            if state.left() <= 0 or STOP.is_set() or not now or now <= 1:
                break
            c = state.best.copy()
            argv = c.steps[i]["argv"]
            seed = derive(base, "shrink", "powerloss", k)
            argv[argv.index("--seed") + 1] = str(seed)

            def fewer(r, i=i, now=now):
                """fewer writes undone"""
                got = powerloss_undone(r, i)
                return got is not None and got < now

            if state.runner.attempt(
                "power loss seed %d (fewer than %d writes undone)" % (seed, now),
                c,
                "powerloss",
                extra={"powerloss_seed": seed},
                better=fewer,
            ):
                now = powerloss_undone(state.best_res, i)
