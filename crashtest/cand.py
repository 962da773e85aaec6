"""The candidates of a shrink (crashtest.py shrink; shrink.py's rules
K1-K8): the argv helpers of a recorded stress step ("--name=value"
items), the lines of an op trace (docs/formats.md, Op trace), the
candidate run (Cand) and the ways its op step may end with one thread
(endings, K6) or two (mt_endings, K8), and small readers of a trial's
outputs.  Kept apart from shrink.py, which runs the trials and the
passes, so each file stays short."""

import hashlib
import json
import os
import re

from .params import FAULT_OPTIONS

# The kill points a timed SIGKILL becomes with one thread when a crash
# after the last op does not fail (None: every one; K6).
LOG_SYNC_POINT = "kill/wal/after_write_before_sync"
# Created with the database, fixed for its life (C3, K5).
CREATION_OPTIONS = [
    "page_size",
    "data_checksums",
    "wal_segment_size",
    "value_size_min",
    "value_size_max",
    "large_value_one_in",
    "large_value_size",
    "first_xid",
]
SEARCH_KILLS = (LOG_SYNC_POINT, None)
# ... and the hits a kill at LOG_SYNC_POINT fires 1 in when commits do
# not sync the log (sync_mode off): only a checkpoint or a write-back
# flushes it, a few times a run (kill_every).
SYNC_OFF_KILL_EVERY = 2

# ---- argv of a recorded stress step: "--name=value" items ----


def opt_get(argv, name):
    out = None
    for a in argv:
        if a.startswith("--%s=" % name):
            out = a.split("=", 1)[1]
    return out


def opt_set(argv, name, value):
    """ARGV with every --NAME replaced by --NAME=VALUE (None: removed)."""
    out = [a for a in argv if not a.startswith("--%s=" % name)]
    if value is not None:
        out.append("--%s=%s" % (name, value))
    return out


def as_int(v, default=0):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def is_workload(step):
    return step["type"] == "stress" and opt_get(step["argv"], "verification_only") != "1"


def set_threads(cand, n):
    """Every workload step of CAND with N threads, but a step that creates
    the database (--destroy_db_initially): it stays as recorded, one
    thread and a fixed count, which p_create shrinks (a create step made
    two threads by the multi-thread path kept checkpoint-redo-at-record's
    200 create ops in a shrunk run of 1,936)."""
    for x in cand.stress_steps():
        if is_workload(x) and opt_get(x["argv"], "destroy_db_initially") != "1":
            x["argv"] = opt_set(x["argv"], "threads", n)


def trace_text(path):
    """The text of the trace file at PATH up to its first zero byte: a
    process killed while tracing leaves zero bytes after its lines (stress
    grows the file ahead of them: trace.c).  Raises OSError."""
    with open(path, errors="replace") as f:
        return f.read().split("\0", 1)[0]


def trace_ops_of(path):
    """The op lines of a trace file (comments dropped), or []."""
    try:
        text = trace_text(path)
    except OSError:
        return []
    return [line for line in text.split("\n") if line.strip() and not line.startswith("#")]


def line_touches(line, key):
    """The op of trace LINE wrote, read or scanned KEY (its KEY field, or a
    key its note names)."""
    head, _, what = line.partition("|")
    f = head.split()
    if len(f) > 2 and f[2] == key:
        return True
    if re.search(r"(?:^|\s)%s=" % re.escape(key), what):
        return True
    m = re.search(r"\[(\d+),\+(\d+)\)", what)
    return bool(m) and int(m.group(1)) <= int(key) < int(m.group(1)) + int(m.group(2))


def trace_inj(line):
    m = re.search(r"inj=(\d+)", line)
    return int(m.group(1)) if m else 0


def trace_ckpt(line):
    """The checkpoints a traced op's write started (its note ckpt=N), or 0."""
    m = re.search(r"(?:^|\s)ckpt=(\d+)", line.partition("|")[2])
    return int(m.group(1)) if m else 0


def set_faults(line, on):
    """LINE of an op trace with its FAULTS field ON ('on' if true, 'off'
    if false, or the string itself: 'flip:BLOCK:BIT', 'cflip:BLOCK:BIT')."""
    parts = line.split(" ", 5)
    if len(parts) >= 5:
        parts[4] = on if isinstance(on, str) else "on" if on else "off"
    return " ".join(parts)


def trace_flip(line, kind="flip"):
    """The (block, bit) of a trace LINE's pinned page flip (FAULTS
    flip:BLOCK:BIT; KIND "cflip": a cached frame's, cflip:BLOCK:BIT), or
    None."""
    f = line.split()[4]
    if not f.startswith(kind + ":"):
        return None
    _, block, bit = f.split(":")
    return int(block), int(bit)


def trace_killed(line):
    """The (point, nth) a traced op was killed at (its note
    killed=POINT:N, stress's before_kill), or None."""
    m = re.search(r"(?:^|\s)killed=(\S+):(\d+)", line.partition("|")[2])
    return (m.group(1), int(m.group(2))) if m else None


def trace_kill_pin(line):
    """The (point, nth) of a trace LINE's pinned kill (FAULTS
    kill:POINT:N), or None."""
    f = line.split()[4]
    if not f.startswith("kill:"):
        return None
    point, _, nth = f[5:].rpartition(":")
    return point, int(nth)


class Cand:
    """One candidate run: the steps (templates, C2), whether it starts from
    an empty directory (a fresh database), the op trace it replays, and the
    index of its op step (the workload whose ops the failure rests on)."""

    def __init__(self, steps, fresh, trace, w, want=None):
        self.steps, self.fresh, self.trace, self.w = steps, fresh, trace, w
        # Each step's recorded outcome: a crash step that passes (or the
        # reverse) diverged, the steps after it were planned on it (K1).
        self.want = want if want is not None else [None] * len(steps)
        # Steps that regrew the database (K15) folded into the op step's
        # trace (K26): still earlier iterations redone (measures).
        self.folded_regrown = 0

    def copy(self):
        c = Cand(
            [dict(s, argv=list(s["argv"])) if "argv" in s else dict(s) for s in self.steps],
            self.fresh,
            list(self.trace) if self.trace is not None else None,
            self.w,
            list(self.want),
        )
        c.folded_regrown = self.folded_regrown
        return c

    def stress_steps(self):
        return [s for s in self.steps if s["type"] == "stress"]

    def splice(self, i, add=(), drop=0):
        """Steps ADD, each expected to pass, in place of the DROP steps at
        I, and the indices that name a step (the op step's, a variant's
        power-loss step) moved with the steps after them."""
        d = len(add) - drop
        self.steps[i : i + drop] = list(add)
        self.want[i : i + drop] = ["passed"] * len(add)
        for s in self.steps:
            if s["type"] == "variant" and s["powerloss_step"] >= i + drop:
                s["powerloss_step"] += d
        if self.w >= i + drop:
            self.w += d

    def set_all(self, name, value):
        for s in self.stress_steps():
            if opt_get(s["argv"], name) is not None or name == "max_key":
                s["argv"] = opt_set(s["argv"], name, value)

    def set_every(self, name, value):
        """NAME on every stress step, those that do not name it too (a
        creation option: a reopen names what its database was made with)."""
        for s in self.stress_steps():
            s["argv"] = opt_set(s["argv"], name, value)

    def powerloss_argv(self):
        """The power-loss steps' argvs: a pass that K22's pin changes the
        outcome of runs again once they differ."""
        return tuple(tuple(s["argv"]) for s in self.steps if s["type"] == "powerloss")

    @property
    def op(self):
        return self.steps[self.w]

    def op_traced(self):
        """The op step writes an op trace and does not replay one yet."""
        a = self.op["argv"]
        return opt_get(a, "trace_ops") is not None and opt_get(a, "replay_ops") is None

    def deterministic(self):
        for s in self.stress_steps():
            if as_int(opt_get(s["argv"], "threads"), 2) != 1 and is_workload(s):
                return False
            if s.get("kill_after") is not None:
                return False
            if (
                is_workload(s)
                and as_int(opt_get(s["argv"], "ops_per_thread"), 10000) == 0
                and not opt_get(s["argv"], "replay_ops")
            ):
                return False
        return True

    def measures(self):
        """The run's shape in shrink.json: the op step's threads, the fault
        classes of the op step and of the steps that regrow a database
        (K15: `regrown`, how many, folded ones too), the steps, whether
        deterministic."""
        a = self.op["argv"]
        regrown = [s for s in self.steps if s["name"].startswith("history-")]
        classes = sorted(
            {
                FAULT_OPTIONS[k]
                for k in FAULT_OPTIONS
                for x in [a] + [s["argv"] for s in regrown]
                if as_int(opt_get(x, k)) > 0
            }
        )
        if as_int(opt_get(a, "kill_random_test")) > 0 or any(
            trace_kill_pin(line) for line in self.trace or []
        ):
            classes.append("kill")
        # A pinned flip needs no rate.
        if "bitflip_page" not in classes and any(trace_flip(line) for line in self.trace or []):
            classes = sorted(classes + ["bitflip_page"])
        if "bitflip_cache" not in classes and any(
            trace_flip(line, "cflip") for line in self.trace or []
        ):
            classes = sorted(classes + ["bitflip_cache"])
        return {
            "threads": as_int(opt_get(a, "threads"), 2),
            "fault_classes": classes,
            "max_key": as_int(opt_get(a, "max_key")),
            "steps": len(self.steps),
            "trace_ops": len(self.trace) if self.trace is not None else None,
            "deterministic": self.deterministic(),
            "regrown": len(regrown) + self.folded_regrown,
        }


def trimmed(cand, n):
    """CAND without the steps after N (its failure shows at step N), its
    op step the last workload step left when its own went (None when
    none is left)."""
    c = cand.copy()
    c.steps, c.want = c.steps[: n + 1], c.want[: n + 1]
    if c.w > n:
        ws = [i for i in range(n + 1) if is_workload(c.steps[i])]
        if not ws:
            return None  # no workload step left to shrink: not kept
        c.w, c.trace = ws[-1], None
    return c


def drop_kills(step):
    """STEP's kill points gone: it ends by itself (a failure in the op
    step itself came before any kill point fired)."""
    step["argv"] = opt_set(opt_set(step["argv"], "kill_random_test", None), "kill_points", None)
    step["expect"] = "exit0"


def kills_to_crash_at_end(step):
    """STEP's kill points gone, a crash after its last op instead (K9)."""
    drop_kills(step)
    step["argv"], step["expect"] = opt_set(step["argv"], "crash_at_end", 1), "crash_at_end"


def pin_op(c, ops):
    """C's op step (changed in place) with a fixed op count when it is
    timed (OPS, what the last kept trial did, per thread: no more than the
    recorded run did, K10, unless a kill point must still fire: the kill
    ends it, room is cheap), and its timed SIGKILL a crash after the last
    op (none when the failure shows in the op step itself, before the
    kill).  Returns what changed, in words."""
    s, what = c.op, []
    threads = max(1, as_int(opt_get(s["argv"], "threads"), 2))
    if as_int(opt_get(s["argv"], "ops_per_thread"), 10000) == 0:
        ops = ops or 1000  # killed before its first progress note: a guess
        n = max(1, ops // threads) * (
            4 if as_int(opt_get(s["argv"], "kill_random_test")) > 0 else 1
        )
        s["argv"] = opt_set(opt_set(s["argv"], "ops_per_thread", n), "duration", None)
        what.append("ops pinned (%d per thread)" % n)
    if s.get("kill_after") is not None and c.w == len(c.steps) - 1:
        s["kill_after"], s["expect"] = None, "exit0"
        what.append("no SIGKILL (the failure shows before it)")
    elif s.get("kill_after") is not None:
        s["kill_after"], s["expect"] = None, "crash_at_end"
        s["argv"] = opt_set(s["argv"], "crash_at_end", 1)
        what.append("the timed SIGKILL made a crash after the last op")
    return what


def kill_every(point, ops, argv=()):
    """How many hits a kill drawn in a one-thread run of OPS ops fires 1
    in: a quarter of the ops at a named POINT (the log's write-before-sync
    point is hit about once an op), the op count at any point (None).
    When the run's ARGV has sync_mode off, that point is hit only when a
    checkpoint or a write-back flushes the log: SYNC_OFF_KILL_EVERY
    (planted bug page-before-wal: 1 in 12,500 of a sync_mode off run's
    hits never fires, and every seed of its search so drawn runs to its
    end; witness-at-end-is-damage's catch of such a run, four threads,
    shrinks to one thread killed there 1 in 2)."""
    if point == LOG_SYNC_POINT and opt_get(argv, "sync_mode") == "off":
        return SYNC_OFF_KILL_EVERY
    return max(1, ops // 4 if point else ops)


def endings(cand, ops):
    """How the op step of CAND, given one thread and OPS ops in all, may
    end in place of its timed SIGKILL, in the order tried: [(what,
    candidate)].  A crash right after the last op first; when that
    cannot fail (a crash after the last commit's fsync leaves nothing
    unsynced to tear), a kill point that fires 1 in N hits, N a quarter
    of the ops for the log's write-before-sync point (kill_every: 2
    with sync_mode off) and the op count for every point, with twice the
    ops of room.  An op step that fails
    itself and has kill points: kept, then without them; one whose kill
    point a later step's failure follows: kept, then a crash after the
    last op instead (K9); one that fails itself before a timed SIGKILL:
    four times the ops of room."""
    out = []
    s = cand.op
    kill = as_int(opt_get(s["argv"], "kill_random_test")) > 0

    def shaped(n, what):
        c = cand.copy()
        set_threads(c, 1)
        c.op["argv"] = opt_set(opt_set(c.op["argv"], "ops_per_thread", max(1, n)), "duration", None)
        return what, c

    if s.get("kill_after") is None:
        out.append(shaped(ops * (4 if kill else 1), "%d ops" % (ops * (4 if kill else 1))))
        if kill and cand.w == len(cand.steps) - 1:
            # The failure shows in the op step itself: with one thread a
            # kill point may end the run before it does; without them too.
            what, c = shaped(ops, "%d ops, no kill points" % ops)
            drop_kills(c.op)
            out.append((what, c))
        elif kill and s.get("expect") == "kill_point":
            # A later step fails: the crash matters, maybe not where it
            # came (K9); a crash after the last op, no kill points.
            what, c = shaped(
                ops, "%d ops, a crash after the last op instead of its kill points" % ops
            )
            kills_to_crash_at_end(c.op)
            out.append((what, c))
    elif cand.w == len(cand.steps) - 1:
        # The run ends at its failure, so room is cheap; OPS is what a
        # trial counted, up to 20 ms short (the progress note), and a failure
        # that comes from a background thread's I/O moves from run to run.
        what, c = shaped(4 * ops, "%d ops, no SIGKILL (the failure shows before it)" % (4 * ops))
        c.op["kill_after"], c.op["expect"] = None, "exit0"
        out.append((what, c))
    else:
        what, c = shaped(ops, "%d ops, a crash after the last op" % ops)
        c.op["kill_after"], c.op["expect"] = None, "crash_at_end"
        c.op["argv"] = opt_set(c.op["argv"], "crash_at_end", 1)
        out.append((what, c))
        if not kill:
            for point in SEARCH_KILLS:
                rate = kill_every(point, ops, s["argv"])
                what, c = shaped(
                    2 * ops,
                    "%d ops, killed at %s 1 in %d hits"
                    % (2 * ops, point or "any kill point", rate),
                )
                c.op["kill_after"], c.op["expect"] = None, "kill_point"
                c.op["argv"] = opt_set(
                    opt_set(opt_set(c.op["argv"], "kill_random_test", rate), "kill_points", point),
                    "sync_fault_injection",
                    1,
                )
                out.append((what, c))
    return out


def mt_endings(cand, threads, n, fired=None):
    """How the op step of CAND, pinned to THREADS threads of N ops each (no
    --duration: a timed run grows as every change makes it faster), may
    end (K8), in the order tried: [(what, candidate)].  A timed SIGKILL
    becomes a crash after the last op, then goes with the steps after the
    op step (the failure a later step found may show in the op step
    itself); when the op step is the failing one, it goes.  Kill points
    stay, at 1 in at most a quarter of the ops' hits (the recorded rate
    would not fire in a short run); then,
    when the op step is not the failing one, only the point that fired
    (FIRED), at its first hit, and then none (the failure may show in the
    op step itself); when it is, none (the failure may not need the
    kill).  When the op step is the failing one and no kill point
    fired in it (FIRED empty: the ledger says the failure needed none),
    only none."""

    def shaped():
        c = cand.copy()
        set_threads(c, threads)
        c.op["argv"] = opt_set(opt_set(c.op["argv"], "ops_per_thread", n), "duration", None)
        return c

    def unkilled():
        # The failure a later step found may show in the op step itself
        # when nothing ends it first (a reader's hint that contradicts a
        # commit, checked by the next read: planted bug
        # hint-aborted-while-in-progress, caught after a crash): the op
        # step then fails, and the steps after it go (K1).
        c = trimmed(shaped(), cand.w)
        drop_kills(c.op)
        c.op["kill_after"] = None
        c.want[-1] = None  # it fails, or nothing after it is planned on it
        return c

    out = []
    last = cand.w == len(cand.steps) - 1
    kill = as_int(opt_get(cand.op["argv"], "kill_random_test"))
    if cand.op.get("kill_after") is not None:
        c = shaped()
        if last:
            c.op["kill_after"], c.op["expect"] = None, "exit0"
            out.append(("no SIGKILL", c))
        else:
            c.op["kill_after"], c.op["expect"] = None, "crash_at_end"
            c.op["argv"] = opt_set(c.op["argv"], "crash_at_end", 1)
            out.append(("a crash after the last op", c))
            out.append(
                ("no SIGKILL, no later steps (the failure may show before a crash)", unkilled())
            )
    elif kill > 0:
        rate = max(1, min(kill, threads * n // 4))
        c = shaped()
        c.op["argv"] = opt_set(c.op["argv"], "kill_random_test", rate)
        if not last or fired:
            out.append(("its kill points 1 in %d hits" % rate, c))
        if last:
            c = shaped()
            drop_kills(c.op)
            out.append(("no kill points", c))
        elif fired:
            c = shaped()
            c.op["argv"] = opt_set(
                opt_set(c.op["argv"], "kill_random_test", 1), "kill_points", fired[-1]
            )
            out.append(("killed at %s, its first hit" % fired[-1], c))
        if not last:
            out.append(
                ("no kill points, no later steps (the failure may show before a crash)", unkilled())
            )
    else:
        out.append(("", shaped()))
    return out


def is_fresh(cand):
    """CAND starts from an empty database (a fresh directory, or a first
    step that destroys it): creation-time options and the key space may
    change (K5)."""
    return cand.fresh or opt_get(cand.steps[0].get("argv", []), "destroy_db_initially") == "1"


def signature(cand):
    """What makes two candidates the same run (options in any order), as
    a digest: the shrinker keeps one per candidate tried, and a candidate
    carries its whole op trace (a mutants --shrink process that kept the
    JSON itself would grow to 24 GB over one long delta debugging and
    meet the OOM killer)."""
    steps = [
        dict(s, argv=sorted(s["argv"])) if s.get("type") == "stress" else s for s in cand.steps
    ]
    return hashlib.sha256(
        json.dumps([steps, cand.fresh, cand.trace], sort_keys=True).encode()
    ).hexdigest()


def powerloss_undone(r, n):
    """What the power-loss step N of trial R undid: unsynced writes rolled
    back or torn and metadata operations undone, summed over its variants
    (its output's lines), or None."""
    res = (r or {}).get("results", {}).get(n) or {}
    got = re.findall(
        r"(\d+) rolled back, (\d+) torn, .*?; \d+ unsynced metadata operations, (\d+) undone",
        res.get("output_tail") or "",
    )
    return sum(int(a) + int(b) + int(c) for a, b, c in got) if got else None


def report_ops(rep):
    """The ops a stress report counts (aborted batches are counted among
    the batches already), or None without them."""
    ops = (rep or {}).get("ops")
    return sum(int(v or 0) for k, v in ops.items() if k != "aborted") if ops else None


def ops_of(r, state):
    """The ops a step did: its report's, else the progress file stress
    keeps in its run directory (a killed process writes no report)."""
    n = report_ops(r.get("report"))
    if n is not None:
        return n
    try:
        with open(os.path.join(state, "run", "progress")) as f:
            m = re.match(r"ops (\d+)", f.read())
            return int(m.group(1)) if m else None
    except OSError:
        return None


def slim(r):
    if not r:
        return r
    return {k: v for k, v in r.items() if k != "report"} if r.get("report") is None else dict(r)


def write_trace(path, lines):
    with open(path, "w") as f:
        f.write(
            "# stress op trace 1 (crashtest.py shrink)\n"
            "# INDEX TYPE KEY SEED FAULTS | what it did\n"
        )
        for line in lines:
            f.write(line + "\n")
