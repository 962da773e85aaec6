"""The passes of a shrink (crashtest.py shrink) that work on an op trace:
the traced op step made a replay of its list (stress --replay_ops), then
the list reduced: only the ops that touch the failing key, every op of
one type, chunks of consecutive ops (delta debugging), and the faults of
the ops that need none turned off; before delta debugging, what the run
drew pinned where it landed (page and cache flips, the kill, the writes
a power loss undid), and last the larger values (K21).  shrink.py has
the rules (K3) and their order.  Each pass takes the shrink's state
(shrinkstate.ShrinkState: best, best_res, kind, defaults, its runner's
attempt, left) and returns a PassResult."""

import os
import re
import time

from .cand import (
    as_int,
    is_fresh,
    line_touches,
    opt_get,
    opt_set,
    pin_op,
    set_faults,
    trace_ckpt,
    trace_inj,
    trace_kill_pin,
    trace_killed,
    trace_ops_of,
)
from .executor import ledger_by_op, ledger_lines_since, subst
from .params import FAULT_OPTIONS, parse_size
from .procs import STOP
from .repro import failing_key
from .shrinkstate import shrink_pass
from .trials import trial_paths

SEGMENT_MIN = 65536  # the engine's least log segment (engine.h: a power of two >= 64 KiB)
CACHE_MIN_PAGES = 16  # the engine's least cache (engine.h: at least 16 pages are used)
# the largest first transaction id (engine.h ENG_FIRST_XID_MAX, stress --first_xid)
FIRST_XID_MAX = 1 << 23
# p_values (K21): the value size a fresh traced run is tried with when its
# values are smaller, and the fewest ops it is tried on: each op then logs
# more, and a failure that needs so much log written needs fewer ops.
VALUES_SIZE = 1024
VALUES_MIN_OPS = 10
# The drawn flips p_pin_flips pins, by their ledger line's class and point:
# the trace's FAULTS field that replays each where it landed.
PIN_FIELDS = {("bitflip_page", "tick/data"): "flip", ("bitflip_cache", "tick/cache"): "cflip"}
# p_pin_powerloss (K22): the most writes a power-loss step's decisions are
# pinned for when the failure names no block they touched (powerloss
# takes 64 --pin), and the block size of a WAL segment's blocks.
PIN_POWERLOSS_MAX = 64
WAL_BLOCK = 4096


def undone_writes(run_dir, k):
    """The writes power-loss variant K undid, from the ledger of run
    folder RUN_DIR (phase powerloss, newest first): [(ledger line, its
    --pin NAME@OFFSET:BACK=FATE)]."""
    undone = []
    for j in ledger_lines_since(os.path.join(run_dir, "ledger")):
        m = re.search(
            r"variant=(\d+) write=\d+ back=(\d+)(?: unit=\d+ kept=([0-9a-f]+))?",
            j.get("note") or "",
        )
        if (
            j.get("phase") == "powerloss"
            and m
            and int(m.group(1)) == k
            and isinstance(j.get("offset"), int)
            and isinstance(j.get("len"), int)
        ):
            undone.append(
                (
                    j,
                    "%s@%d:%s=%s"
                    % (
                        j["file"],
                        j["offset"],
                        m.group(2),
                        "tear:" + m.group(3) if m.group(3) else "rollback",
                    ),
                )
            )
    return undone


def replay_of(state, cand, path):
    """CAND (one thread, its op step traced) replaying the op trace at
    PATH: no op count or time (the list says what the run did, its
    reopens where they came: a count spreads them over itself, a
    timed run over its time), a timed SIGKILL made a crash after the
    last op (pin_op).  Returns (candidate, what changed in words), or
    (None, None) when the trace has no op."""
    lines = trace_ops_of(path)
    if not lines:
        return None, None
    c = cand.copy()
    c.trace = lines
    c.op["argv"] = opt_set(
        opt_set(opt_set(c.op["argv"], "replay_ops", "@FOLDER@/ops.trace"), "ops_per_thread", None),
        "duration",
        None,
    )
    return c, ["the %d traced ops replayed (--replay_ops)" % len(lines)] + pin_op(
        c, (state.best_res or {}).get("ops")
    )


@shrink_pass
def p_replay(state):
    """The traced op step becomes a replay of its trace (ddmin's input).
    Kept when its replay was."""
    if not state.best.op_traced() or not state.best_res:
        return False
    c, what = replay_of(state, state.best, os.path.join(state.best_res["dir"], "iter", "ops.trace"))
    if c is None or not state.runner.attempt(", ".join(what), c, "replay"):
        return False
    state.ddmin_size = 1 << 62  # a new list: delta debugging starts at its half
    p_pin_kill(state)
    return True


@shrink_pass
def p_pin_kill(state):
    """K16: an op step that a drawn kill point ends (1 in N of its
    hits) replays with that kill pinned in the op it fired in: the
    killed op's line (its note killed=POINT:N) gets FAULTS
    kill:POINT:N, and --kill_random_test goes (stress then kills at
    the Nth time that op reaches POINT, and nowhere else).  A drawn
    kill counts hits over the run, so every op removed before it
    moves the kill to another op, and delta debugging keeps nothing
    (planted bug redo-reads-before-image: 92 removals, every one
    diverging, 1.4x); a crash after the last op (K9) passes there,
    because the kill between the log's write and its fsync is the
    bug's window."""
    if (
        state.best.trace is None
        or not state.best_res
        or state.best.op.get("expect") != "kill_point"
        or as_int(opt_get(state.best.op["argv"], "kill_random_test")) <= 0
    ):
        return
    refresh_trace(state)
    lines = list(state.best.trace)
    got = trace_killed(lines[-1]) if lines else None
    if not got or lines[-1].split()[4] != "on":
        return
    lines[-1] = set_faults(lines[-1], "kill:%s:%d" % got)
    c = with_trace(state, lines)
    c.op["argv"] = opt_set(opt_set(c.op["argv"], "kill_random_test", None), "kill_points", None)
    state.runner.attempt(
        "the kill pinned in op %s, where it fired (kill:%s:%d)" % ((lines[-1].split()[0],) + got),
        c,
        "pin_kill",
    )


@shrink_pass
def p_volume(state):
    """Once the op step replays a trace whose checkpoints its log volume
    triggers (checkpoint_wal_bytes below stress's default), that volume
    at 1/16, 1/8, 1/4, 1/2, the first that still fails the same way
    kept (every stress step's, as the options pass sets them): a
    failure that needs such a checkpoint then needs that many fewer
    ops before it, and delta debugging can remove the rest
    (planted bug redo-reapplies-equal-lsn: otherwise 2,500 ops of
    about 500 bytes each stay to fill the 1M its checkpoint needs)."""
    if state.best.trace is None:
        return
    smaller_segments(state)
    ids_further(state)
    evict_sooner(state)
    v = parse_size(opt_get(state.best.op["argv"], "checkpoint_wal_bytes"))
    d = parse_size(state.defaults.get("checkpoint_wal_bytes"))
    if not v or not d or v >= d:
        return
    for k in (4, 3, 2, 1):
        m = v >> k
        if m < 4096 or state.left() <= 0 or STOP.is_set():
            continue
        c = state.best.copy()
        c.set_all("checkpoint_wal_bytes", m)
        if state.runner.attempt(
            "checkpoint_wal_bytes %d -> %d (checkpoints by log volume sooner)" % (v, m),
            c,
            "volume",
        ):
            return


@shrink_pass
def smaller_segments(state):
    """On a fresh database (a creation-time option, K5): log segments
    of 64 KiB (the engine's least), then 4, 16, 64 times that, below
    the run's, the first that still fails the same way kept.  A
    failure that needs segments filled, recycled or removed (planted
    bug recycle-onto-live-segment: with segments of 256 KiB, 5,384 ops
    are left when the budget runs out) then needs that many
    fewer ops to get there.  Once a shrink: the options pass may then
    take the size back to stress's default when the few ops left do
    not need it (stale-value: 200 -> 2 ops with 256 KiB segments it
    never needed), and the two do not undo each other every round."""
    v = parse_size(
        opt_get(state.best.op["argv"], "wal_segment_size") or state.defaults.get("wal_segment_size")
    )
    if not v or not is_fresh(state.best) or state.segments_tried:
        return
    state.segments_tried = True
    for m in (SEGMENT_MIN << k for k in (0, 2, 4, 6)):
        if m >= v or state.left() <= 0 or STOP.is_set():
            return
        c = state.best.copy()
        c.set_every("wal_segment_size", m)
        if state.runner.attempt(
            "wal_segment_size %d -> %d (log segments filled sooner)" % (v, m), c, "volume"
        ):
            return


@shrink_pass
def ids_further(state):
    """K28: on a fresh database, its first transaction id (stress
    --first_xid, creation time: every stress step's, as K5 sets them)
    as far on as the run's ops would take the ids, then half as far,
    the first that still fails the same way kept.  A failure that needs
    ids far along (a commit-log entry past its page's first sector, a
    new commit-log page) then needs no ops that only advance them, and
    delta debugging removes those (planted bug
    fpi-skips-page-at-redo-lsn: its torn commit-log page needs an entry
    past byte 512, transaction 1,888 on, so a one-thread run from a
    fresh database stays near 1,900 ops).  Half as far: a failure that
    needs the ids to cross a point (a page filled) may need the run to
    start below it.  From the run's own first id (1 unless it sets
    one).  Once a shrink, and again once the power loss is pinned
    (K22): before it, a run that fails the same way farther on may
    pass by another tear of the page (that catch: 2,724 passes, half
    that, 1,362, is kept below transaction 1,888, and 529 ops stay to
    reach it).  Nothing when the binary lacks the
    option."""
    key = state.best.powerloss_argv()
    if (
        state.ids_tried == key
        or not is_fresh(state.best)
        or state.defaults.get("first_xid") is None
    ):
        return
    state.ids_tried = key
    cur = max([as_int(opt_get(x["argv"], "first_xid"), 1) for x in state.best.stress_steps()] + [1])
    n = (state.best_res or {}).get("ops_all") or 0
    for k in (cur + n - 1, cur + n // 2 - 1):
        if k <= cur or k > FIRST_XID_MAX or state.left() <= 0 or STOP.is_set():
            return
        c = state.best.copy()
        c.set_every("first_xid", k)
        if state.runner.attempt(
            "first_xid %d -> %d (the ids start as far on as the run's %d ops take them)"
            % (cur, k, n),
            c,
            "volume",
        ):
            return


@shrink_pass
def evict_sooner(state):
    """K28: a cache below stress's default (the run's database outgrows
    it) at the engine's least, 16 pages, then 4 and 16 times that,
    below the run's, the first that still fails the same way kept
    (every stress step's): a failure that needs a page written back
    before a checkpoint (a torn write-back) needs that many fewer ops to
    outgrow the cache (fpi-skips-page-at-redo-lsn: a commit-log page
    evicted from 32 pages of cache needs a database of about a
    thousand keys).  Once a shrink, and again once the power loss is
    pinned (K22): before it, every write-back that comes sooner moves
    the tear the failure needs to another write (that catch: 64 KiB
    is rejected before the pin).  The options pass may take the cache
    back to stress's default when the ops left do not need it."""
    v = parse_size(opt_get(state.best.op["argv"], "cache_size"))
    d = parse_size(state.defaults.get("cache_size"))
    key = state.best.powerloss_argv()
    if state.cache_tried == key or not v or not d or v >= d:
        return
    state.cache_tried = key
    ps = parse_size(
        next(
            (
                opt_get(x["argv"], "page_size")
                for x in state.best.stress_steps()
                if opt_get(x["argv"], "page_size")
            ),
            None,
        )
        or state.defaults.get("page_size")
    )
    for m in (CACHE_MIN_PAGES * ps << k for k in (0, 2, 4)):
        if not ps or m >= v or state.left() <= 0 or STOP.is_set():
            return
        c = state.best.copy()
        c.set_all("cache_size", m)
        if state.runner.attempt("cache_size %d -> %d (pages evicted sooner)" % (v, m), c, "volume"):
            return


@shrink_pass
def p_tie_checkpoints(state):
    """K17: the checkpoints the log's volume started (an op's note
    ckpt=N: checkpoint_wal_bytes below stress's default) made ops of
    their own, right after the op whose write started them (faults off
    in them, its seed), and checkpoint_wal_bytes at stress's default
    (every stress step's).  Removing ops moves a volume checkpoint to
    another op, or out of the run; an explicit one stays where it was.
    An op step a pinned kill ends in a write with no ckpt= note (the
    kill came before the note) is tried first with the kill in such a
    checkpoint after it (planted bug redo-reads-before-image: killed
    at the third log flush of a checkpoint a put starts, sync_mode
    off; every removal moves the checkpoint)."""
    if state.best.trace is None or not state.best_res:
        return
    v = parse_size(opt_get(state.best.op["argv"], "checkpoint_wal_bytes"))
    d = parse_size(state.defaults.get("checkpoint_wal_bytes"))
    if not v or not d or v >= d:
        return
    refresh_trace(state)
    lines = state.best.trace
    last = lines[-1].split() if lines else []
    guesses = (
        [True, False]
        if last
        and trace_kill_pin(lines[-1])
        and not trace_ckpt(lines[-1])
        and last[1] in ("put", "delete", "batch")
        else [False]
    )
    for guess in guesses:
        out, n = [], 0
        for i, line in enumerate(lines):
            k = trace_ckpt(line) or (1 if guess and i == len(lines) - 1 else 0)
            pin = trace_kill_pin(line) if i == len(lines) - 1 else None
            if not k:
                out.append(line)
                continue
            f = line.split()
            out.append(set_faults(line, "on") if pin else line)
            out += [
                "%s checkpoint - %s %s"
                % (f[0], f[3], "kill:%s:%d" % pin if pin and j == k - 1 else "off")
                for j in range(k)
            ]
            n += k
        if not n or state.left() <= 0 or STOP.is_set():
            continue
        c = with_trace(state, out)
        c.set_all("checkpoint_wal_bytes", d)
        if state.runner.attempt(
            "%d checkpoint%s the log's volume started made ops of their own%s, "
            "checkpoint_wal_bytes %d -> %d"
            % (n, "s" if n > 1 else "", " (the kill in the last)" if guess else "", v, d),
            c,
            "tie_checkpoints",
        ):
            return


def refresh_trace(state):
    """The lines as the last kept replay traced them again (their inj=
    counts are this run's; the FAULTS field is the replayed one)."""
    if state.best_res and state.best.trace is not None:
        got = trace_ops_of(os.path.join(state.best_res["dir"], "iter", "ops.trace"))
        if len(got) == len(state.best.trace):
            state.best.trace = got


def with_trace(state, lines):
    c = state.best.copy()
    c.trace = lines
    return c


@shrink_pass
def p_focus(state):
    """Before ddmin's chunks: only the ops that touch the failing key (the
    failing step's output names it), with every op that has no key
    (checkpoints, reopens, verifies, snapshots, vacuums; restarts, whose
    KEY may name open options)."""
    if state.best.trace is None or not state.best_res:
        return
    key = failing_key(state.best_res.get("output_tail"), state.kind)
    if key is None:
        return
    keep = [
        line
        for line in state.best.trace
        if line_touches(line, key)
        or line.split()[2] == "-"
        and line.split()[1] != "batch"
        or line.split()[1] == "restart"
        or trace_kill_pin(line)
    ]
    if 0 < len(keep) < len(state.best.trace):
        state.runner.attempt(
            "ops %d -> %d (those that touch the failing key %s, and the keyless ones)"
            % (len(state.best.trace), len(keep), key),
            with_trace(state, keep),
            "focus",
        )


@shrink_pass
def p_pin_flips(state):
    """Every page or cache flip a traced op drew (bitflip_page at
    tick/data, or bitflip_cache at tick/cache outside the pattern
    trials, the only line the op added to the ledger) pinned where it
    landed: the line's FAULTS becomes flip:BLOCK:BIT or cflip:BLOCK:BIT
    (stress flips that bit of that block on disk, or of its cached
    frame when resident, before the op, faults off during it).  A drawn
    flip picks its block among the file's blocks (by their on-disk
    LSNs; a cache flip among those resident), so every op removed
    before it moves it to another page, and a failure that rests on one
    flip survives no removal (planted bug checksum-skips-last-byte: the
    last byte of the root; kv-check-all-skips-page-code: the header of
    one dirty frame, written back); pinned, it stays on its block while
    ops go."""
    if state.best.trace is None or not state.best_res:
        return
    d = state.best_res["dir"]
    folder = subst(state.best.op.get("state", "@STATE@"), trial_paths(d))
    by_op = ledger_by_op(os.path.join(folder, "run", "ledger"))
    lines, n = list(state.best.trace), {"flip": 0, "cflip": 0}
    for i, line in enumerate(lines):
        m = re.search(r"op=(\d+:\d+)", line.partition("|")[2])
        got = (
            [j for j in by_op.get(m.group(1), []) if j.get("phase", "run") == "run"]
            if m and line.split()[4] == "on"
            else []
        )
        j = got[0] if len(got) == 1 else {}
        pin = PIN_FIELDS.get((j.get("class"), j.get("point")))
        if (
            pin
            and "pattern" not in j
            and isinstance(j.get("block"), int)
            and isinstance(j.get("bit"), int)
        ):
            lines[i] = set_faults(line, "%s:%d:%d" % (pin, j["block"], j["bit"]))
            n[pin] += 1
    if sum(n.values()):
        what = " and ".join(
            "%d %s flip%s" % (k, "page" if pin == "flip" else "cache", "s" if k > 1 else "")
            for pin, k in n.items()
            if k
        )
        state.runner.attempt(
            "%s pinned where %s landed (%s)"
            % (
                what,
                "they" if sum(n.values()) > 1 else "it",
                ", ".join("%s:BLOCK:BIT" % pin for pin, k in n.items() if k),
            ),
            with_trace(state, lines),
            "pin_flips",
        )


@shrink_pass
def p_pin_powerloss(state):
    """K22: a power-loss step's decisions pinned where they landed: the
    writes the failing variant rolled back or tore (its ledger lines,
    phase powerloss) become --pin NAME@OFFSET:BACK=FATE, and the step
    runs in keep mode: every other write kept (faults/powerloss.c, PL8).
    First only the newest undone write of the block the failure names
    (file=NAME block=N in the failing step's output: the page that
    fails its checksum), then every undone write of that block, then
    every one when there are at most PIN_POWERLOSS_MAX.  A write's fate
    is drawn from its seed, name, offset and the writes to that offset
    before it, so an op removed that wrote the page moved its tear:
    pinned, the tear stays on that page's newest write, and the power
    loss undoes the fewest writes (K3's power-loss variant): delta
    debugging then removes large chunks of ops, where an unpinned tear
    that moves with every removal lets only small ones through."""
    if state.best.trace is None or not state.best_res or state.best_res.get("step") is None:
        return
    d = state.best_res["dir"]
    fs = state.best_res["step"]
    fdb = opt_get(state.best.steps[fs].get("argv") or [], "db") or ""
    var = [s for s in state.best.steps if s["type"] == "variant" and fdb.startswith(s["to"] + "/")]
    if not var:
        return
    n, k = var[0]["powerloss_step"], var[0]["k"]
    argv = state.best.steps[n]["argv"]
    if "--pin" in argv or argv[argv.index("--mode") + 1] == "keep":
        return
    run_dir = subst(argv[argv.index("--run-dir") + 1], trial_paths(d))
    undone = undone_writes(run_dir, k)
    tries = block_pins(state, undone, fs)
    if (
        undone
        and len(undone) <= PIN_POWERLOSS_MAX
        and (not tries or len(tries[-1][0]) < len(undone))
    ):
        tries.append(
            (
                [p for _, p in undone],
                "the %d writes it undid" % len(undone)
                if len(undone) > 1
                else "the one write it undid",
            )
        )
    for pins, what in tries:
        if state.left() <= 0 or STOP.is_set():
            return
        c = state.best.copy()
        a = c.steps[n]["argv"]
        a[a.index("--mode") + 1] = "keep"
        for p in pins:
            a += ["--pin", p]
        if state.runner.attempt(
            "power loss pinned: %s, every other write kept (keep mode, --pin)" % what,
            c,
            "pin_powerloss",
        ):
            return


def block_pins(state, undone, fs):
    """K22's first tries: of UNDONE (undone_writes), those on the block
    the output of failing step FS names (file=NAME block=N), the newest
    alone, then all of them: [(pins, what)]."""
    got = re.findall(
        r"file=(\S+) block=(\d+)",
        (state.best_res.get("results", {}).get(fs) or {}).get("output_tail") or "",
    )
    if not got:
        return []
    tries = []
    name, block = got[-1][0], int(got[-1][1])
    sizes = [opt_get(x["argv"], "page_size") for x in state.best.stress_steps()]
    bs = (
        WAL_BLOCK
        if name.startswith("wal/")
        else parse_size(
            next((v for v in sizes if v), None)
            or (state.meta.get("db_params") or {}).get("page_size")
            or state.defaults.get("page_size")
        )
    )
    at = [
        (j, p)
        for j, p in undone
        if j["file"] == name
        and bs
        and j["offset"] < (block + 1) * bs
        and block * bs < j["offset"] + j["len"]
    ]
    if at:
        # The lines come newest write first: its last undone write alone, then all of them.
        tries.append(
            (
                [at[0][1]],
                "the newest write it undid on the block the failure names (%s block %d)"
                % (name, block),
            )
        )
    if len(at) > 1:
        tries.append(
            (
                [p for _, p in at],
                "the %d writes it undid on the block the failure names (%s block %d)"
                % (len(at), name, block),
            )
        )
    return tries


@shrink_pass
def p_types(state):
    """Before ddmin's chunks: every op of one type removed (the most
    frequent type first), then every one that does not touch the
    failing key.  A chunk of consecutive ops changes what the cache
    holds and which pages split around the ops that matter; a type
    spread over the whole run (the 143 scans of 1,516 ops that planted
    bug control-redo-is-checkpoint does not need) goes in one trial."""
    if state.best.trace is None:
        return
    key = failing_key(state.best_res.get("output_tail"), state.kind) if state.best_res else None
    counts = {}
    for line in state.best.trace:
        counts[line.split()[1]] = counts.get(line.split()[1], 0) + 1
    for t in sorted(counts, key=lambda t: (-counts[t], t)):
        for spare in (False, True) if key is not None else (False,):
            lines = state.best.trace
            rest = [
                line for line in lines if line.split()[1] != t or spare and line_touches(line, key)
            ]
            if 0 < len(rest) < len(lines) and state.runner.attempt(
                "ops %d -> %d (every %s%s removed)"
                % (
                    len(lines),
                    len(rest),
                    t,
                    " not touching the failing key %s" % key if spare else "",
                ),
                with_trace(state, rest),
                "types",
            ):
                break


@shrink_pass
def p_values(state):
    """K21: a deterministic traced run from a fresh database, still
    VALUES_MIN_OPS ops or more, whose values are smaller than
    VALUES_SIZE: every value VALUES_SIZE bytes (value_size_min and
    _max on every step: creation options, K5), then delta debugging
    again from the largest chunks.  A failure that rests on how much
    log was written (a segment recycled onto a live one, checkpoints
    the log's segments start) needs fewer, larger ops; when delta
    debugging does not halve the ops with them, the values go back
    and every step this pass kept is marked undone: larger values are
    no help to a reader then (planted bug recycle-onto-live-segment:
    200 -> 54 ops of values up to 256 bytes, every
    op needed; with 1,024-byte values, 3 batches)."""
    b = state.best
    if (
        b.trace is None
        or not b.deterministic()
        or not is_fresh(b)
        or len(b.trace) < VALUES_MIN_OPS
        or state.left() <= 0
        or STOP.is_set()
    ):
        return
    vmax = as_int(
        opt_get(b.op["argv"], "value_size_max"),
        as_int(state.defaults.get("value_size_max"), 256),
    )
    if vmax >= VALUES_SIZE:
        return
    c = b.copy()
    c.set_all("value_size_min", VALUES_SIZE)
    c.set_all("value_size_max", VALUES_SIZE)
    mark, size, res = len(state.log), state.ddmin_size, state.best_res
    if not state.runner.attempt(
        "values up to %d bytes -> %d (more log per op)" % (vmax, VALUES_SIZE), c, "values"
    ):
        return
    state.ddmin_size = 1 << 62
    p_ddmin(state)
    if len(state.best.trace) * 2 <= len(b.trace):
        return
    for e in state.log[mark:]:
        if e["verdict"] == "kept":
            e["verdict"] = "undone"
            e[
                "why"
            ] += "; undone: with larger values delta debugging cut %d ops to %d, not half" % (
                len(b.trace),
                len(state.best.trace),
            )
    state.p.line(
        "shrink: values   larger values cut %d ops to %d, not half: undone"
        % (len(b.trace), len(state.best.trace))
    )
    # (its trial's directory went when the larger values were kept;
    # what finish writes from it is in the result itself: the last
    # pass, no later one reads the directory)
    state.best, state.best_res, state.ddmin_size = b, res, size


@shrink_pass
def p_ddmin(state, share=1.0):
    """Delta debugging on the trace: every op of a type removed
    (p_types), then chunks of half the ops, then
    quarters ... single ops, each removed while the rest still fails the
    same way.  A pass goes on from the chunk it removed (the ops before
    it were tried at this size already) instead of starting over, and
    the single-op pass is repeated until it removes nothing.  Spends at
    most SHARE of the budget left."""
    if state.best.trace is None:
        return
    p_pin_flips(state)
    p_pin_kill(state)
    p_pin_powerloss(state)
    p_types(state)
    stop = time.monotonic() + state.left() * share

    def more():
        return state.left() > 0 and time.monotonic() < stop and not STOP.is_set()

    # A later pass starts near the chunk size the last one reached
    # (four times it: an option kept since may let larger chunks go),
    # not at half the list again, where every chunk failed before.
    size = max(1, min(len(state.best.trace) // 2, state.ddmin_size * 4))
    while len(state.best.trace) >= 2 and more():
        state.ddmin_size = size
        i, removed = 0, False
        while i < len(state.best.trace) and more():
            lines = state.best.trace
            rest = lines[:i] + lines[i + size :]
            if rest and state.runner.attempt(
                "ops %d -> %d (remove ops %d..%d of the list)"
                % (len(lines), len(rest), i, min(i + size, len(lines)) - 1),
                with_trace(state, rest),
                "ddmin",
            ):
                removed = True
                continue  # the next chunk is at I now
            i += size
        if size == 1 and not removed:
            break
        size = max(1, min(size // 2, len(state.best.trace) // 2))
    refresh_trace(state)


@shrink_pass
def p_faults_off(state):
    if state.best.trace is None or not any(
        as_int(opt_get(state.best.op["argv"], o)) for o in FAULT_OPTIONS
    ):
        return
    refresh_trace(state)
    lines = state.best.trace
    quiet = [
        set_faults(line, False) if trace_inj(line) == 0 and line.split()[4] == "on" else line
        for line in lines
    ]
    if quiet != lines:
        state.runner.attempt(
            "faults off in the %d ops that injected nothing"
            % sum(1 for line in lines if trace_inj(line) == 0),
            with_trace(state, quiet),
            "faults",
        )
    for i in reversed(range(len(state.best.trace))):
        line = state.best.trace[i]
        if line.split()[4] == "on":
            t = list(state.best.trace)
            t[i] = set_faults(line, False)
            state.runner.attempt(
                "faults off in op %s (%s)" % (line.split()[0], " ".join(line.split()[1:3])),
                with_trace(state, t),
                "faults",
            )
