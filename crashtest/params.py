"""The parameter table (db_crashtest.py's default_params) and its draws.

What a database is created with (C3), what each iteration opens it with,
which fault classes it injects, the sanitizer that keeps a judging run
judgeable, and the crash plan of an iteration (kind, kill timing or odds,
power-loss mode and variants, second crash).  Everything is drawn from the
iteration seed alone (crashtest.seeds), so an iteration redraws exactly.
The per-mode defaults of the command line live here too."""

import re

from .seeds import Rng, derive

# Fault classes (docs/fault-classes.md) that an iteration may draw: report key
# -> (stress option, one_in choices).  power_loss and kill are the crash
# cycle itself (sync_fault_injection, kill_random_test).
FAULTS = {
    # Four times the other flips' odds: five page flips in six are masked
    # (the pool writes the page again, or a full-page image restores it,
    # before a reader meets it), so the page checks see few of them.
    "bitflip_page": ("bitflip_page_one_in", [500, 2000, 10000]),
    "bitflip_wal": ("bitflip_wal_one_in", [5000, 20000, 100000]),
    "bitflip_cache": ("bitflip_cache_one_in", [2000, 10000, 50000]),
    "bitflip_inflight": ("bitflip_inflight_one_in", [2000, 10000, 50000]),
    "torn_write": ("torn_write_one_in", [500, 2000, 10000]),
    "misdirected_write": ("misdirected_write_one_in", [2000, 10000, 50000]),
    "lost_write": ("lost_write_one_in", [2000, 10000, 50000]),
    "zero_page": ("zero_page_one_in", [2000, 10000, 50000]),
    "read_error": ("read_fault_one_in", [500, 2000, 10000]),
    "write_error": ("write_fault_one_in", [500, 2000, 10000]),
    "nospace": ("nospace_one_in", [500, 2000, 10000]),
    "short_io": ("short_io_one_in", [200, 1000, 5000]),
    "sync_error": ("sync_fault_one_in", [200, 1000, 5000]),
}
FAULT_OPTIONS = {opt: cls for cls, (opt, _) in FAULTS.items()}
# Classes kept out of "--faults stable", simple's default (so CI's short
# run fails only on something new); the nightly modes draw them all.
# Empty: every class is in the stable set (the I/O error
# classes raise no false alarms, and simple must reach every engine
# fault point, which needs read_error, write_error, nospace and
# sync_error).  bitflip_wal is in with them despite its known limit
# (engine/wal.h, W3: a record damaged after its fsync, with no later
# block written, is trimmed as a torn tail); take it out here if it shows.
UNSTABLE_FAULTS = []
# Every class of the report, in the fault library's order (FLT_CLASSES in
# faults/faults.h; docs/fault-classes.md): the final table.
CLASS_ORDER = list(FAULTS) + ["power_loss", "kill", "unattributed"]
OUTCOMES = [
    "injected",
    "detected",
    "repaired",
    "masked",
    "undetectable",
    "unrecoverable_by_design",
    "undetected_unpromised",
]
FAILURE_KEYS = [
    "wrong_value",
    "lost",
    "resurrected",
    "false_alarm",
    "swallowed",
    "unrecoverable",
    "crash",
    "hang",
]

# Stratified cache flips: half the iterations (a stream of
# their own) take the width from the iteration index (the seed's low bits,
# index mod 8: each width of the binary's in turn) and turn bitflip_cache
# on at one of these rates, so every width's cache flips come in a steady
# share instead of by chance (before, independent draws left w = 2 without
# a single checked flip in runs of 9 minutes).  In simple the same low bits
# pick the iteration's kind, so a width keeps its kind (and whitebox kill
# mode) across the run; every width meets both kinds in blackbox and
# whitebox modes.
STRATUM_ONE_IN = [100, 300, 1000]

# How many fault classes an iteration turns on: (count, weight).
FAULT_COUNT_WEIGHTS = [(0, 25), (1, 35), (2, 25), (3, 15)]

# Drawn when a database is created, fixed for its life (C3).
DB_CHOICES = {
    "page_size": [4096, 8192, 16384],
    "data_checksums": [1, 1, 1, 0],
    "wal_segment_size": ["64K", "256K", "1M", "16M"],
    "value_size_max": [64, 256, 256, 1024],
    "large_value_one_in": [0, 0, 100, 1000],
}

# The engines stress has adapters for (its --engine), ours first.  The
# others have no fault hooks: their runs reach them through the fault door
# (--faults_via posix), which serves power loss, SIGKILL and the classes
# their promise tables list as the door's (stress --promises).
ENGINES = ("ours", "rocksdb", "sqlite")
# Each other engine's own options, drawn when a database is created (from
# a stream of their own, so the other draws stay what they were).
# RocksDB's WALRecoveryMode: 0 tolerate corrupted tail records, 2 point in
# time, 3 skip any corrupted record.  1 (absolute consistency) refuses to
# open after the incomplete tail record a crash may leave: its promise
# table's power_loss row says detect (an open refused), never repair, so
# no sync mode makes a crash of it judgeable and it is not drawn.
ENGINE_CHOICES = {
    "rocksdb": {"rocksdb_wal_recovery_mode": [0, 2, 2, 3]},
    "sqlite": {
        "sqlite_journal_mode": ["wal", "wal", "delete"],
        "sqlite_synchronous": ["full", "full", "normal", "extra"],
    },
}

# Creation-time options drawn besides DB_CHOICES (draw_db_params).
DB_EXTRA = ("value_size_min", "large_value_size", "first_xid")
FIRST_XID_ONE_IN = 4
FIRST_XID_RANGE = (1000, 1 << 20)

# Drawn for every iteration (open-time options: they may change from one
# open to the next).
ITER_CHOICES = {
    "threads": [1, 2, 2, 4],
    # cache_size = pages * page_size: tiny to above the database
    "cache_pages": [32, 64, 256, 1024, 8192],
    "full_page_writes": [1, 1, 1, 0],
    "wal_log_hints": [0, 1],
    "wal_compression": ["none", "zstd"],
    "block_protection_bytes_per_key": [0, 1, 2, 4, 8],
    # KV0 (engine/kvprot.h): the pool's choice, or either way forced, so a
    # night tries lazy leaves where the pool would rarely choose them
    "kv_lazy_leaves": ["auto", "auto", "always", "never"],
    "io_backend": ["uring", "psync"],
    "sync_mode": ["commit", "group", "off"],
    "checkpoint_one_in": [0, 200, 2000, 20000],
    "checkpoint_wal_bytes": ["1M", "8M", "64M"],
    "verify_db_one_in": [0, 0, 0, 20000],
    # Versions, snapshots, vacuum and hints (docs/engine.md, Versions and
    # transactions): drawn when the binary has the options (Config.known),
    # left out otherwise.
    "hint_fpi": [0, 1],
    "vacuum_freeze_min_age": [0, 100, 1000],
    "acquire_snapshot_one_in": [0, 0, 200, 2000],
    "vacuum_one_in": [0, 0, 1000, 10000],
}

# Op mixes: (readpercent, writepercent, delpercent, iterpercent); the rest
# of 100 are batches.  None: a random mix.
OP_MIXES = [(45, 30, 10, 10), (10, 60, 15, 5), (70, 15, 5, 8), (20, 20, 10, 10), None]

# Swarm testing (Groce et al., ISSTA 2012): an even mix of every feature
# in every run makes an order of rare operations (a commit right after a
# snapshot, then a vacuum before the snapshot's next read) as rare as the
# product of their shares.  SWARM_SHARE of the iterations (a stream of
# their own, derive(seed, "swarm"), drawn when Config.swarm is on) draw a
# swarm instead: each op kind on or off with its own weight, each rare
# feature on at a frequent rate or off, a key space from tiny to the
# mode's max_key, a thread count and a subset of the fault classes.  The
# other iterations draw exactly what they drew without it.
SWARM_SHARE = 0.5
# Op kinds -> the stress option of their share (batches: the rest of 100).
SWARM_OPS = [
    ("read", "readpercent"),
    ("put", "writepercent"),
    ("delete", "delpercent"),
    ("scan", "iterpercent"),
    ("batch", None),
]
# A swarm always writes: put or batch on (deletes alone empty the key
# space and then do nothing).
SWARM_WRITERS = ("put", "batch")
SWARM_OP_WEIGHTS = [1, 2, 4, 8]
# Rare features -> (stress option, one_in when on; off is 0).  Far more
# frequent than ITER_CHOICES' rates: a run of a few seconds meets each
# many times, and their orders with it.
SWARM_FEATURES = {
    "snapshot": ("acquire_snapshot_one_in", [10, 50, 200]),
    "vacuum": ("vacuum_one_in", [20, 100, 500]),
    "checkpoint": ("checkpoint_one_in", [20, 100, 500]),
    "verify": ("verify_db_one_in", [200, 1000, 5000]),
}
# Reopens (close, open, check every key) in the workload; reopen is
# managed (the whitebox plan's mode 3 draws its own), so a swarm's count
# is a workload argument of its own, not an option of every step.
SWARM_REOPENS = [2, 8, 32]
# Key spaces: tiny (every key hot: the same pages split, merge, get
# snapshotted and vacuumed over and over), between, or the mode's max_key.
# The key space is the database's (C3): a swarm draws it for the database
# its iteration creates; later iterations on that database keep it.
SWARM_TINY_KEYS = (8, 64)
SWARM_THREADS = [1, 2, 3, 4, 8]
# Each fault class's odds of being on in a swarm (one of these per
# iteration): from one class now and then to half of them at once.
SWARM_FAULT_SHARES = [0.08, 0.2, 0.4]
# Swarms that run one of their classes hot, and how much hotter: its
# one_in divided by one of SWARM_HOT_DIVS (at least 2).  An even rate
# starves the faults whose opportunities are rare among their class's (a
# failed fsync of the data file, met at checkpoints only, among the log's
# fsyncs at every commit): run hot, they strike several times a run, and
# the code that handles them meets its races.
SWARM_HOT_SHARE = 0.5
SWARM_HOT_DIVS = [10, 30, 100]
# Swarms that aim the I/O classes (read_error, write_error, nospace,
# short_io, sync_error) at one file kind (--fault_files): the handling of
# a failure of the data file, the control file or a directory hides
# behind the log's far more frequent calls, which an even aim strikes
# first (and which poison the handle before the rarer failure is met).
SWARM_FILES_SHARE = 0.5
SWARM_FILE_KINDS = ["data", "wal", "control", "dir"]
# The classes fault_files narrows (faults/frame.c, is_io_class).
IO_CLASSES = ("read_error", "write_error", "nospace", "short_io", "sync_error")
# Aimed at a file kind the engine calls rarely, the I/O classes on run
# hotter by one of these (at least one in 2): their odds are per call of
# the aimed kind, and the even odds, set for the log's calls at every
# commit, strike the data file's fsyncs (one per checkpoint), the control
# file's writes or a directory's fsyncs (a few a run) in almost no
# iteration.  Aimed at wal, the odds stay: the log's calls are the
# frequent ones.
SWARM_AIM_DIVS = [10, 30, 100]
# Swarms whose cache holds a few pages (of the database's page size,
# stress's floor of 64 KiB): every op reads pages back from disk and every
# write evicts, where the even mix's smallest cache (32 pages) holds all
# of a key space of a few thousand keys and the read and write-back paths
# (a read racing a failed fsync, an eviction racing a checkpoint) are
# almost never taken.
SWARM_TINY_CACHE_SHARE = 0.3
SWARM_TINY_CACHE_PAGES = [8, 16]
# Swarms whose mix changes as the run goes (stress's --phase_ops): every
# so many ops of a worker, a phase keeps some of the swarm's op kinds,
# turns its rare features off or ten times hotter and may narrow the keys
# to a hot eighth (stress/README.md).  One swarm per run makes each kind
# present or absent for the whole run; an order of operations (reads that
# set hints after a checkpoint, then writes to the same pages, then a
# crash) needs one stretch rich in the first and the next in the second.
SWARM_PHASE_SHARE = 0.5
SWARM_PHASE_OPS = [20, 100, 500]

# Delay injection (stress's --delay_one_in, --delay_max_us: a sleep or
# yield at the engine's delay/ points and each side of an I/O hook's read,
# write or fsync): races whose window is milliseconds wide are met within
# minutes.  Not a fault class (no report key); drawn in DELAY_SHARE of
# the iterations in a stream of their own (derive(seed, "delay")), only
# when the binary has the options, and kept out of the restarts (which
# judge; their recovery runs on one thread).
DELAY_SHARE = 0.5
DELAY_CHOICES = {"delay_one_in": [10, 50, 200, 1000], "delay_max_us": [100, 1000, 5000, 20000]}
# FoundationDB's BUGGIFY enables a quarter of its points per simulation
# run and fires an enabled one often: a race needs its own site to pause
# often, and pauses spread over every site at an even rate dilute it.  So
# DELAY_SITES_SHARE of the iterations with delays name their sites
# (--delay_sites): each of DELAY_SITES with odds DELAY_SITE_ODDS (one at
# least), paused 1 in one of DELAY_HOT_ONE_IN; the others pause at every
# site at DELAY_CHOICES' rates.  The engine's delay/ points (its
# catalogue, engine/faultpoints.h; tests/test_delays.py holds the list
# against the binary's), the hooks' six sides of a read, a write and
# an fsync, kill/late, the pause of every kill that fires, and
# fault/slow, the pause of every I/O the fault library fails
# (faults/delay.c).
DELAY_SITES_SHARE = 0.75
DELAY_SITE_ODDS = 0.25
DELAY_HOT_ONE_IN = [2, 5, 20]
DELAY_SITES = [
    "delay/wal/before_sync",
    "delay/wal/before_publish",
    "delay/commit/before_publish",
    "delay/checkpoint/after_redo_point",
    "delay/checkpoint/before_control",
    "delay/bufpool/before_write_back",
    "delay/bufpool/before_latch_release",
    "delay/bufpool/before_page_latch",
    "delay/bufpool/after_page_release",
    "hook/read/before",
    "hook/read/after",
    "hook/write/before",
    "hook/write/after",
    "hook/sync/before",
    "hook/sync/after",
    "kill/late",
    "fault/slow",
]
DELAY_OPTIONS = tuple(DELAY_CHOICES) + ("delay_sites",)

# Damage at every kind of kill: a kill point makes the flips and zeroed
# blocks at the crash (crash/data, crash/wal, crash/control; another
# engine's crash/door, through the fault door) before its
# SIGKILL, but a blackbox kill is a SIGKILL from outside, which leaves
# nothing to make them, so the damage at the crash met only the whitebox
# kills.  In DAMAGE_AT_KILL_SHARE of the iterations with a class that
# damages at the crash (a stream of their own, derive(seed, "damage at
# kill")), stress gets --damage_at_kill and the planned kill sends SIGUSR2
# first: stress makes that damage and dies by SIGKILL (crashtest/procs.py,
# KILL_SIGNAL_GRACE).
DAMAGE_AT_KILL_SHARE = 0.5
CRASH_DAMAGE_CLASSES = ("bitflip_page", "bitflip_wal", "zero_page")

# Option values whose support the binary is asked about before a run
# (stress exits 2 for a value its engine does not support yet; a kernel
# without io_uring makes "uring" fail to open).
PROBED = (
    [("wal_log_hints", 1)]
    + [("block_protection_bytes_per_key", w) for w in (1, 2, 4, 8)]
    + [("io_backend", "uring")]
)

# Options crashtest manages itself: --set may not pin them.
MANAGED = {
    "db",
    "expected_values_dir",
    "run_dir",
    "report",
    "seed",
    "destroy_db_initially",
    "verification_only",
    "crash_at_end",
    "duration",
    "ops_per_thread",
    "max_key",
    "help",
    "list_fault_points",
    "sync_fault_injection",
    "kill_random_test",
    "kill_points",
    "hang_seconds",
    "reopen",
    "cache_pages",
    "engine",
    "faults_via",
}

# Options shown in an iteration's line only when they differ from stress's
# defaults; these never are (they are bookkeeping).
NOT_SHOWN = MANAGED - {"reopen"}

PAGE_CLASSES = {"bitflip_page", "bitflip_inflight", "torn_write", "misdirected_write", "zero_page"}

# Whitebox kill modes, rotated with the iteration index (low bits of the
# seed): kill-point groups (name prefixes; None: every point) and the
# odds range (log-uniform), like db_crashtest.py's kill_random_test
# divided for rarer points.  Mode 3 reopens without a kill.
KILL_MODES = [
    ("all points", None, (10000, 10000000)),
    (
        "write-back, checkpoint and control points",
        ["kill/page/", "kill/checkpoint/", "kill/control/"],
        (10, 10000),
    ),
    ("checkpoint and control points", ["kill/checkpoint/", "kill/control/"], (3, 300)),
    ("reopen without a kill", None, None),
]
# Drawn in place of mode 0 in two thirds of its iterations, one each (a
# stream of their own, so the other draws do not move).  At mode 0's odds
# an iteration of a few seconds rarely kills at all, and no other group
# holds the log's or the commit path's points: a 5-minute simple run never
# hit kill/wal/*, and with the log group alone a 10-minute one missed
# kill/commit/between_ops (reached only between the ops of a batch).
NARROW_KILL_MODES = [
    ("log write and sync points", ["kill/wal/"], (20, 20000)),
    ("commit points", ["kill/commit/"], (20, 20000)),
]
RECOVERY_PREFIX = "kill/recovery/"
# The same for an engine reached through the fault door (faults.h: kill
# points before the door's calls, kill/door/OP/KIND).  Its log calls come
# with every commit, its manifest, directory and file-name calls a few
# times a run, so each group has odds of its own; in recovery (the second
# crash) every door point is armed, since the open writes a new log and
# manifest and renames CURRENT.
DOOR_PREFIX = "kill/door/"
DOOR_KILL_MODES = [
    ("all door calls", None, (1000, 1000000)),
    ("table writes and syncs", ["kill/door/write/data", "kill/door/sync/data"], (10, 10000)),
    (
        "manifest, directory and file-name calls",
        [
            "kill/door/write/control",
            "kill/door/sync/control",
            "kill/door/sync/dir",
            "kill/door/create",
            "kill/door/rename",
            "kill/door/unlink",
            "kill/door/truncate",
        ],
        (1, 30),
    ),
    ("reopen without a kill", None, None),
]
DOOR_NARROW_KILL_MODES = [
    ("log write and sync calls", ["kill/door/write/wal", "kill/door/sync/wal"], (20, 20000)),
]

POWERLOSS_MODES = [("rollback", 3), ("tear", 2), ("mixed", 3), ("keep", 1)]


def weighted(rng, pairs):
    total = sum(w for _, w in pairs)
    x = rng.below(total)
    for v, w in pairs:
        if x < w:
            return v
        x -= w
    return pairs[-1][0]


def parse_size(v):
    """'64K' -> 65536; ints pass through; None for nonsense."""
    if isinstance(v, int):
        return v
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(i?B?)\s*", str(v))
    if not m:
        return None
    mul = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(m.group(1)) * mul


def same_value(a, b):
    sa, sb = parse_size(a), parse_size(b)
    if sa is not None and sb is not None:
        return sa == sb
    return str(a) == str(b)


def unjudgeable_reason(cls, p):
    """Why fault class CLS makes a run with options P a measuring run
    (mirror of the oracle's vd_class_measured), or None."""
    cs = int(p.get("data_checksums", 1))
    fpw = int(p.get("full_page_writes", 1))
    w = int(p.get("block_protection_bytes_per_key", 0))
    if not cs and cls in PAGE_CLASSES:
        return "data_checksums off"
    if cls == "torn_write" and not fpw:
        return "full_page_writes off"
    if cls == "lost_write":
        return "an old page keeps a valid checksum (undetectable by design)"
    if cls == "bitflip_cache" and w == 0:
        return "no per-KV protection (w = 0)"
    return None


def measured_classes(p):
    """The classes P injects that the oracle would measure, not judge."""
    out = []
    for cls, (opt, _) in FAULTS.items():
        if int(p.get(opt, 0) or 0) and unjudgeable_reason(cls, p):
            out.append(cls)
    return out


def powerloss_modes_allowed(p, measure=False, promises=None):
    """A torn page is rebuilt only from a full-page image and found only by
    a page checksum: without both, tearing makes the restart measure.  An
    engine whose promise table (PROMISES, stress --promises) says it
    refuses to open over a torn write of one of its files (torn_write:
    detect, as RocksDB's WAL recovery modes 0 and 1 do: a torn record is a
    checksum mismatch) is crashed without tears, measuring or not: a
    refused open is no measurement."""
    if promises and tears_refused(promises, p):
        return ["rollback", "keep"]
    if measure or (int(p.get("data_checksums", 1)) and int(p.get("full_page_writes", 1))):
        return [m for m, _ in POWERLOSS_MODES]
    return ["rollback", "keep"]


def promise_row(promises, cls, kind, p):
    """The row of PROMISES (stress --promises) that answers class CLS in a
    file of KIND under options P (promises.h PR1: the first whose class,
    kind or "any", and options match; an option P lacks has the value
    stress defaults it to), or None."""
    defaults = promises.get("defaults") or {}
    for row in promises.get("rows") or []:
        if row["class"] != cls or row["file_kind"] not in (kind, "any"):
            continue
        if all(
            str(p.get(name, defaults.get(name))) in [str(v) for v in values]
            for name, values in row["when"].items()
        ):
            return row
    return None


def tears_refused(promises, p):
    """A torn write of the files every crash tears (tables or pages, the
    log) the engine refuses to open over (its torn_write row: detect).  A
    control file's record torn (RocksDB's MANIFEST, written at a flush)
    is met by a few crashes only: there the database ends by design
    (unrecoverable_by_design) and the tears stay in the draw."""
    for kind in ("data", "wal"):
        row = promise_row(promises, "torn_write", kind, p)
        if row and row["promise"] == "detect":
            return True
    return False


def door_classes(promises, classes):
    """(the fault classes of CLASSES the door serves this engine, those it
    does not): its promise table's door list (PR2), crash classes aside.
    A table without a door list (ours: the hooks serve every class) takes
    them all."""
    door = (promises or {}).get("door")
    if door is None:
        return list(classes), []
    return [c for c in classes if c in door], [c for c in classes if c not in door]


def sanitize(params, pinned=(), measure=False, protection_widths=(1, 2, 4, 8)):
    """Keep a judging run judgeable: no page-checksum faults with checksums
    off, no torn writes without full-page writes, no cache flips at w = 0,
    no lost writes (undetectable by design).  An unpinned
    offending fault is dropped; for a pinned one the enabling option is
    turned on instead when it is not pinned itself.  With MEASURE nothing
    changes.  Returns (params, notes)."""
    p = dict(params)
    notes = []
    if measure:
        return p, notes
    pinned = set(pinned)
    for cls, (opt, _) in FAULTS.items():
        if not int(p.get(opt, 0) or 0):
            continue
        why = unjudgeable_reason(cls, p)
        if not why:
            continue
        if opt in pinned:
            if why == "full_page_writes off" and "full_page_writes" not in pinned:
                p["full_page_writes"] = 1
                notes.append("full_page_writes on for the pinned %s" % opt)
            elif (
                why.startswith("no per-KV")
                and "block_protection_bytes_per_key" not in pinned
                and protection_widths
            ):
                p["block_protection_bytes_per_key"] = protection_widths[0]
                notes.append(
                    "block_protection_bytes_per_key=%s for the pinned %s"
                    % (protection_widths[0], opt)
                )
            else:
                notes.append("pinned %s makes a measuring run (%s)" % (opt, why))
            continue
        p.pop(opt, None)
        notes.append("dropped %s (%s)" % (opt, why))
    return p, notes


class Config:
    """What the draw needs to know: the binary's defaults and supported
    values, the mode's sizes, the user's pins and fault selection."""

    def __init__(
        self,
        defaults=None,
        unsupported=(),
        fault_classes=None,
        pinned=None,
        measure=False,
        threads=0,
        max_key=20000,
        known=None,
        swarm=True,
        engine=ENGINES[0],
        refused=(),
        engine_pins=None,
        promises=None,
    ):
        self.defaults = dict(defaults or {})
        self.engine = engine
        # The engine's promise table (stress --promises): which sync modes
        # its crashes are drawn with, whether they tear (engine_consistent,
        # powerloss_modes_allowed).  None: no table, nothing kept to it.
        self.promises = promises
        # The options that choose the engine and its door (--engine,
        # --faults_via, our engine's psync behind the door): part of the
        # database's options, so every step of its life runs them.
        self.engine_pins = dict(engine_pins or {})
        # Options the engine refuses away from their defaults (stress's
        # adapter said so when asked): never drawn, left at the default.
        self.refused = set(refused)
        self.known_options = None if known is None else set(known)  # None: every option exists
        self.unsupported = set(unsupported)  # {(name, value)}
        self.fault_classes = list(FAULTS) if fault_classes is None else list(fault_classes)
        self.pinned = dict(pinned or {})
        self.measure = measure
        self.threads = threads
        self.max_key = max_key
        self.swarm = swarm  # False: no iteration draws a swarm (--no-swarm)

    def choices(self, name, values):
        ok = [
            v
            for v in values
            if (name, v) not in self.unsupported and (name, str(v)) not in self.unsupported
        ]
        return ok or [values[0]]

    def known(self, name):
        """The binary has option --NAME (a newer or older driver may lack
        some of the table's)."""
        return (
            self.known_options is None or name in self.known_options
        ) and name not in self.refused

    def protection_widths(self):
        return [
            w for w in (1, 2, 4, 8) if ("block_protection_bytes_per_key", w) not in self.unsupported
        ]


def draw_db_params(seed, cfg):
    """Creation-time options of a new database, from SEED (C3)."""
    rng = Rng(derive(seed, "db"))
    p = {}
    for name, values in DB_CHOICES.items():
        p[name] = rng.choice(cfg.choices(name, values))
    p["value_size_min"] = 8
    if p["large_value_one_in"]:
        p["large_value_size"] = rng.choice([16384, 65536, 262144])
    # One database in FIRST_XID_ONE_IN starts as far on as a long history
    # would have taken it (the engine's first_xid, log-uniform in
    # FIRST_XID_RANGE): the commit log's later sectors and pages, and the
    # crossing into the next page, come within a short run.  Drawn last,
    # so every draw before it is what it was.
    if rng.below(FIRST_XID_ONE_IN) == 0:
        p["first_xid"] = rng.log_uniform(*FIRST_XID_RANGE)
    # A pinned fault that needs page checksums needs them from creation on.
    if not cfg.measure and "data_checksums" not in cfg.pinned:
        if any(FAULTS[c][0] in cfg.pinned and c in PAGE_CLASSES for c in FAULTS):
            p["data_checksums"] = 1
    p.update(draw_engine_params(seed, cfg))
    p.update(cfg.engine_pins)
    engine_consistent(p, cfg.pinned, cfg.promises)
    for k, v in cfg.pinned.items():
        if k in DB_CHOICES or k in DB_EXTRA or k in ENGINE_CHOICES.get(cfg.engine, {}):
            p[k] = v
    return {k: v for k, v in p.items() if cfg.known(k)}


def drawn_options():
    """(stress option, values) of every option the draws may set besides
    the fault classes: what an engine is asked whether it takes."""
    out = [(k, v) for k, v in DB_CHOICES.items()] + [(k, v) for k, v in ITER_CHOICES.items()]
    out += [
        ("value_size_min", [8]),
        ("large_value_size", [16384]),
        ("first_xid", [FIRST_XID_RANGE[0]]),
    ]
    out += [opt_values for opt_values in SWARM_FEATURES.values()] + list(DELAY_CHOICES.items())
    out += [("delay_sites", [DELAY_SITES[0]]), ("fault_files", SWARM_FILE_KINDS)]
    return out


def other_value(values, default):
    """A value of VALUES that is not DEFAULT (as stress prints it), or None."""
    return next((v for v in values if str(v) != str(default)), None)


def draw_engine_params(seed, cfg):
    """The options of the engine under test (ENGINE_CHOICES) for a new
    database, from their own stream ({} for ours)."""
    rng = Rng(derive(seed, "engine options"))
    return {name: rng.choice(values) for name, values in ENGINE_CHOICES.get(cfg.engine, {}).items()}


def engine_consistent(p, pinned, promises=None):
    """The pairs an engine's adapter refuses, made whole in P (unpinned
    options give way): SQLite's rollback journal (journal_mode delete)
    holds no snapshot across ops and has no WAL to size.  Then the crash
    the iteration may end in, kept to what the engine promises
    (PROMISES: its table, stress --promises; the power_loss row of the
    drawn options): where a synced commit does not survive a power loss
    (SQLite's WAL with NORMAL, a rollback journal below EXTRA: COMMIT's
    return is no sync), sync_mode off, the one mode in which stress asks
    the adapter what is durable instead of taking every acknowledged
    commit as durable; where the row promises no repair (RocksDB's WAL
    recovery modes 0 and 3 with sync off: a hole of lost unsynced writes
    refuses the open or is replayed past) or names an open lead (mode 2
    with sync off: docs/findings/), sync_mode rises (off, group, commit)
    to the first that promises it.  A pinned sync_mode is the user's.
    Returns P."""
    if p.get("sqlite_journal_mode") == "delete":
        for k in ("acquire_snapshot_one_in", "checkpoint_wal_bytes"):
            if k not in pinned:
                p.pop(k, None)
    if promises and "sync_mode" not in pinned:
        p["sync_mode"] = promised_sync_mode(promises, p)
    return p


SYNC_MODES = ("off", "group", "commit")  # weakest first


def promised_sync_mode(promises, p):
    """P's sync_mode, or the one engine_consistent puts in its place."""
    mode = str(p.get("sync_mode", (promises.get("defaults") or {}).get("sync_mode", "commit")))
    row = promise_row(promises, "power_loss", "any", p)
    if row and row["synced_commit_survives"] is False:
        return "off"
    for m in SYNC_MODES[SYNC_MODES.index(mode) if mode in SYNC_MODES else 0 :]:
        row = promise_row(promises, "power_loss", "any", dict(p, sync_mode=m))
        if row is None or (row["promise"] == "repair" and not row["lead"]):
            return m
    return mode


def leave_known_bug_kinds(p, cfg):
    """File kinds a known bug of the engine's version keeps the I/O
    classes away from (crashtest/knownbugs.py: an unsupported
    ("fault_files", KIND)), unless fault_files is pinned: P's fault_files
    without them, or every other kind; with none left, the I/O classes
    are dropped."""
    off = {str(v) for n, v in cfg.unsupported if n == "fault_files"}
    if not off or "fault_files" in cfg.pinned:
        return
    if not any(int(p.get(FAULTS[c][0], 0) or 0) for c in IO_CLASSES if c in FAULTS):
        return
    kinds = [
        k for k in (p.get("fault_files") or ",".join(SWARM_FILE_KINDS)).split(",") if k not in off
    ]
    if kinds:
        p["fault_files"] = ",".join(kinds)
        return
    p.pop("fault_files", None)
    for c in IO_CLASSES:
        p.pop(FAULTS[c][0], None)


def draw_swarm(seed, cfg):
    """The swarm of iteration SEED (SWARM_SHARE of the iterations), or None
    for one that keeps the even mix (and for every iteration when
    cfg.swarm is off).  From its own stream: the other draws of the
    iteration never move with it.  Every draw is made whatever came before
    (the pins, the binary's options and the user's fault classes are
    applied by draw_iter_params), so a seed's swarm is one swarm:

      ops       op kind -> weight (0: off); put or batch always on
      features  rare feature -> one_in (0: off)
      reopen    reopens in the workload (0: none)
      max_key   the key space of a database the iteration creates
      threads   stress threads
      faults    fault class -> one_in of the classes on (before the
                eligibility and judgeability rules)
      hot       the class run hot, or None
      files     the file kind the I/O classes strike (--fault_files), or
                None for all
      cache_pages  a cache of that many pages, or None for the even
                mix's
      phase_ops a new phase every that many ops of a worker, or None
                for one mix for the whole run"""
    if not cfg.swarm:
        return None
    rng = Rng(derive(seed, "swarm"))
    if not rng.chance(SWARM_SHARE):
        return None
    ops = swarm_ops(rng)
    features = swarm_features(rng)
    on = rng.chance(0.5)
    n = rng.choice(SWARM_REOPENS)
    reopen = n if on else 0
    top = max(1, int(cfg.max_key))
    size = rng.below(3)
    tiny = rng.log_uniform(*SWARM_TINY_KEYS)
    between = rng.log_uniform(SWARM_TINY_KEYS[1] + 1, max(SWARM_TINY_KEYS[1] + 1, top))
    max_key = min(top, [tiny, between, top][size])
    threads = rng.choice(SWARM_THREADS)
    share = rng.choice(SWARM_FAULT_SHARES)
    faults = {}
    for c, (_, values) in FAULTS.items():  # a coin and a rate per class, in a fixed order
        on = rng.chance(share)
        v = rng.choice(values)
        if on:
            faults[c] = v
    hot, files = swarm_aim(rng, faults)
    tiny_cache_on = rng.chance(SWARM_TINY_CACHE_SHARE)  # last, as the aim
    tiny_cache = rng.choice(SWARM_TINY_CACHE_PAGES)
    phased = rng.chance(SWARM_PHASE_SHARE)  # last, as the cache
    phase_ops = rng.choice(SWARM_PHASE_OPS)
    return {
        "ops": ops,
        "features": features,
        "reopen": reopen,
        "max_key": max_key,
        "threads": threads,
        "faults": faults,
        "hot": hot,
        "files": files,
        "cache_pages": tiny_cache if tiny_cache_on else None,
        "phase_ops": phase_ops if phased else None,
    }


def swarm_ops(rng):
    """A swarm's op kinds, from RNG: kind -> weight (0: off), a coin and a
    weight per kind, then a writer turned on if no writer is."""
    ops = {}
    for kind, _ in SWARM_OPS:
        on = rng.chance(0.5)
        w = rng.choice(SWARM_OP_WEIGHTS)
        ops[kind] = w if on else 0
    writer = rng.choice(SWARM_WRITERS)
    if not any(ops[k] for k in SWARM_WRITERS):
        ops[writer] = rng.choice(SWARM_OP_WEIGHTS)
    return ops


def swarm_features(rng):
    """A swarm's rare features, from RNG: feature -> one_in (0: off)."""
    features = {}
    for name, (_, rates) in SWARM_FEATURES.items():
        on = rng.chance(0.5)
        rate = rng.choice(rates)
        features[name] = rate if on else 0
    return features


def swarm_aim(rng, faults):
    """Where a swarm's FAULTS (class -> one_in, changed in place) are
    aimed, from RNG: (the class run hot or None, the file kind the I/O
    classes strike or None).  Drawn after everything else, and whatever is
    on, so every draw before is what it was without them."""
    hot_on = rng.chance(SWARM_HOT_SHARE)
    hot_k = rng.below(len(FAULTS))
    hot_div = rng.choice(SWARM_HOT_DIVS)
    hot = None
    if hot_on and faults:
        hot = sorted(faults, key=list(FAULTS).index)[hot_k % len(faults)]
        faults[hot] = max(2, faults[hot] // hot_div)
    files_on = rng.chance(SWARM_FILES_SHARE)  # last, as hot
    files = rng.choice(SWARM_FILE_KINDS)
    aim_div = rng.choice(SWARM_AIM_DIVS)  # after files, whatever is on
    if files_on and files != "wal":
        for c in IO_CLASSES:
            if c in faults and c != hot:
                faults[c] = max(2, faults[c] // aim_div)
    return hot, files if files_on else None


def swarm_percents(ops):
    """OPS (kind -> weight, 0: off) as (readpercent, writepercent,
    delpercent, iterpercent): shares of 100 by weight, batches the rest.
    A kind that is on gets at least 1; without batches the four add up
    to 100 exactly."""
    total = sum(ops.values())
    pct = {k: (max(1, ops[k] * 100 // total) if ops[k] else 0) for k, _ in SWARM_OPS}
    if not ops["batch"]:
        last = [k for k, opt in SWARM_OPS if opt and ops[k]][-1]
        pct[last] += 100 - sum(pct.values())
    return tuple(pct[k] for k, opt in SWARM_OPS if opt)


def apply_swarm(sw, p, cfg):
    """Put swarm SW's ops, rare features and threads into the iteration's
    options P (the pins are applied later and win).  A pinned share of
    the op mix keeps the even mix's shares: the swarm's could add up past
    100 with it."""
    if not cfg.threads:
        p["threads"] = sw["threads"]
    if not {opt for _, opt in SWARM_OPS if opt} & set(cfg.pinned):
        p["readpercent"], p["writepercent"], p["delpercent"], p["iterpercent"] = swarm_percents(
            sw["ops"]
        )
    for name, (opt, _) in SWARM_FEATURES.items():
        p[opt] = sw["features"][name]
    if sw.get("phase_ops") and cfg.known("phase_ops"):
        p["phase_ops"] = sw["phase_ops"]


def swarm_record(sw, params, max_key, reopen):
    """What ran of swarm SW, for the iteration's record and its failure's
    listings: the op shares, rare features, key space, threads and fault
    classes as the stress options finally say (pins and the sanitizer
    applied; MAX_KEY the database's key space, REOPEN the workload's
    reopens), or None for an iteration without a swarm."""
    if sw is None:
        return None

    def num(k):
        try:
            return int(params.get(k, 0) or 0)
        except (TypeError, ValueError):
            return 0

    # An option the binary lacks (absent from PARAMS) is left out: the
    # record says what ran, not what was drawn.
    shares = {kind: num(opt) for kind, opt in SWARM_OPS if opt and opt in params}
    if len(shares) == len(SWARM_OPS) - 1:
        shares["batch"] = max(0, 100 - sum(shares.values()))
    feats = {n: num(opt) for n, (opt, _) in SWARM_FEATURES.items() if opt in params}
    rec = {
        "ops": shares,
        "features": dict(feats, reopen=int(reopen or 0)),
        "max_key": int(max_key),
        "threads": num("threads") or None,
        "faults": sorted(c for c, (opt, _) in FAULTS.items() if num(opt)),
    }
    hot = sw.get("hot")
    if hot and num(FAULTS[hot][0]):
        rec["hot"] = "%s 1/%d" % (hot, num(FAULTS[hot][0]))
    if params.get("fault_files"):
        rec["files"] = params["fault_files"]
    if sw.get("cache_pages") and params.get("cache_size"):
        rec["cache"] = "%dK" % (parse_size(params["cache_size"]) // 1024)
    if num("phase_ops"):
        rec["phase_ops"] = num("phase_ops")
    return rec


def swarm_order(d, names):
    """D's items in the order of NAMES (a record read back from JSON has
    its keys sorted), then any others."""
    return [(n, d[n]) for n in names if n in d] + [(n, v) for n, v in d.items() if n not in names]


SWARM_OP_NAMES = [k for k, _ in SWARM_OPS]
SWARM_FEATURE_NAMES = list(SWARM_FEATURES) + ["reopen"]


def swarm_text(rec):
    """A swarm record (swarm_record) in one line: the op kinds on with
    their shares, the rare features on with their rates, those off, the
    key space, threads and fault classes."""
    if not rec:
        return ""
    ops = " ".join("%s=%d%%" % (k, v) for k, v in swarm_order(rec["ops"], SWARM_OP_NAMES) if v)
    feats = swarm_order(rec.get("features") or {}, SWARM_FEATURE_NAMES)
    on = " ".join(("%s x%d" if n == "reopen" else "%s 1/%d") % (n, v) for n, v in feats if v)
    off = ",".join(n for n, v in feats if not v)
    return (
        "swarm: ops %s; %s%skeys %d; threads %s; faults %s%s%s"
        % (
            ops or "none",
            "on " + on + "; " if on else "",
            "off " + off + "; " if off else "",
            rec["max_key"],
            rec.get("threads") or "?",
            ",".join(rec.get("faults") or []) or "none",
            " (hot %s)" % rec["hot"] if rec.get("hot") else "",
            " on %s files" % rec["files"] if rec.get("files") else "",
        )
        + ("; cache %s" % rec["cache"] if rec.get("cache") else "")
        + ("; phases of %d ops" % rec["phase_ops"] if rec.get("phase_ops") else "")
    )


def swarm_brief(rec):
    """A swarm record in a few words for a table cell: the op kinds and
    rare features on, the key space."""
    if not rec:
        return ""
    feats = [n for n, v in swarm_order(rec.get("features") or {}, SWARM_FEATURE_NAMES) if v]
    return "swarm: %s; %s; %d keys%s" % (
        ",".join(k for k, v in swarm_order(rec["ops"], SWARM_OP_NAMES) if v) or "no ops",
        ",".join(feats) or "no rare feature",
        rec["max_key"],
        "; phases of %d ops" % rec["phase_ops"] if rec.get("phase_ops") else "",
    )


def draw_delays(seed, cfg):
    """The delay options of iteration SEED ({} in the iterations without
    delays, or when the binary lacks --delay_one_in), from their own
    stream."""
    rng = Rng(derive(seed, "delay"))
    on = rng.chance(DELAY_SHARE)
    drawn = {name: rng.choice(values) for name, values in DELAY_CHOICES.items()}
    # The sites, drawn whatever came before (the draws above stay what
    # they were without them).
    named = rng.chance(DELAY_SITES_SHARE)
    hot = rng.choice(DELAY_HOT_ONE_IN)
    sites = [s for s in DELAY_SITES if rng.chance(DELAY_SITE_ODDS)] or [rng.choice(DELAY_SITES)]
    if not on or not cfg.known("delay_one_in") or cfg.engine != ENGINES[0]:
        return {}  # (the pauses are the fault library's hooks: ours only)
    if named and cfg.known("delay_sites"):
        drawn.update(delay_one_in=hot, delay_sites=",".join(sites))
    return {k: v for k, v in drawn.items() if cfg.known(k)}


def draw_damage_at_kill(seed, cfg, p):
    """{"damage_at_kill": 1} for iteration SEED when its options P turn a
    class that damages at the crash on and its stream draws it, else {}."""
    on = Rng(derive(seed, "damage at kill")).chance(DAMAGE_AT_KILL_SHARE)
    damages = any(p.get(FAULTS[c][0]) for c in CRASH_DAMAGE_CLASSES)
    # (Another engine's damage at the crash is the door's, doordisk.c.)
    if not on or not damages or not cfg.known("damage_at_kill"):
        return {}
    return {"damage_at_kill": 1}


def draw_iter_params(seed, cfg, db):
    """Open-time options, op mix and faults of one iteration (stress
    option -> value), from SEED; DB: the database's creation options.
    Sanitized unless cfg.measure.  Returns (params, notes)."""
    rng = Rng(derive(seed, "engine"))
    p = {}
    for name, values in ITER_CHOICES.items():
        p[name] = rng.choice(cfg.choices(name, values))
    if cfg.threads:
        p["threads"] = cfg.threads
    pages = p.pop("cache_pages")
    page_size = parse_size(db.get("page_size", 8192)) or 8192
    p["cache_size"] = max(65536, pages * page_size)
    mix = rng.choice(OP_MIXES)
    if mix is None:
        r = rng.below(61)
        w = 10 + rng.below(41)
        d = rng.below(21)
        i = rng.below(21)
        while r + w + d + i > 95:
            r = max(0, r - 10)
            i = max(0, i - 5)
        mix = (r, w, d, i)
    p["readpercent"], p["writepercent"], p["delpercent"], p["iterpercent"] = mix
    sw = draw_swarm(seed, cfg)
    if sw:
        apply_swarm(sw, p, cfg)
        if sw["cache_pages"]:
            p["cache_size"] = max(65536, sw["cache_pages"] * page_size)

    frng = Rng(derive(seed, "faults"))
    merged = dict(db)
    merged.update(p)
    for k, v in cfg.pinned.items():
        merged[k] = v
    eligible = [c for c in cfg.fault_classes if c in FAULTS and cfg.known(FAULTS[c][0])]
    if not cfg.measure:
        eligible = [c for c in eligible if not unjudgeable_reason(c, merged)]
    count = min(weighted(frng, FAULT_COUNT_WEIGHTS), len(eligible))
    picked = []
    for _ in range(count):
        c = frng.choice([e for e in eligible if e not in picked])
        picked.append(c)
    for c in FAULTS:  # one draw per class, in a fixed order, picked or not
        opt, values = FAULTS[c]
        v = frng.choice(values)
        if c in picked and not sw:
            p[opt] = v
    if sw:  # the swarm's classes in place of the even mix's, by the same rules
        for c, v in sw["faults"].items():
            if c in eligible:
                p[FAULTS[c][0]] = v
        if sw["files"] and eligible and cfg.known("fault_files"):
            p["fault_files"] = sw["files"]
    srng = Rng(derive(seed, "protection stratum"))
    widths = cfg.protection_widths()
    rate = srng.choice(STRATUM_ONE_IN)
    if (
        srng.chance(0.5)
        and widths
        and "bitflip_cache" in cfg.fault_classes
        and not {"block_protection_bytes_per_key", "bitflip_cache_one_in"} & set(cfg.pinned)
    ):
        # The width whether or not the binary has the flips (the other
        # draws must not depend on what it lacks).
        p["block_protection_bytes_per_key"] = widths[((seed & 7) >> 1) % len(widths)]
        if cfg.known("bitflip_cache_one_in"):
            p["bitflip_cache_one_in"] = rate
    p.update(draw_delays(seed, cfg))
    p.update(draw_damage_at_kill(seed, cfg, p))
    for k, v in cfg.pinned.items():
        if k not in DB_CHOICES and k not in DB_EXTRA:
            p[k] = v
    merged = dict(db)
    merged.update(p)
    merged, notes = sanitize(merged, cfg.pinned, cfg.measure, cfg.protection_widths())
    merged = engine_consistent(merged, cfg.pinned, cfg.promises)
    leave_known_bug_kinds(merged, cfg)
    out = {k: v for k, v in merged.items() if (k not in db or k in p) and cfg.known(k)}
    return out, notes


def iteration_kind(mode, seed):
    """('blackbox', None) or ('whitebox', kill mode index)."""
    low = seed & 7
    if mode == "blackbox":
        return "blackbox", None
    if mode == "whitebox":
        return "whitebox", low % 4
    # simple: blackbox and whitebox in turn, the whitebox modes rotating
    if low & 1 == 0:
        return "blackbox", None
    return "whitebox", (low >> 1) & 3


def plan_powerloss_modes(params, measure, powerloss_modes, promises):
    """The power-loss modes an iteration with PARAMS may draw: those its
    engine's promises allow (powerloss_modes_allowed) that the user allows
    (POWERLOSS_MODES, None: all), else rollback or keep."""
    modes = powerloss_modes_allowed(params, measure, promises)
    if powerloss_modes:
        modes = (
            [m for m in modes if m in powerloss_modes]
            or [m for m in ("rollback", "keep") if m in powerloss_modes]
            or ["rollback"]
        )
    return modes


def draw_plan(
    seed,
    mode,
    interval,
    params,
    catalogue,
    measure=False,
    max_variants=3,
    powerloss_modes=None,
    promises=None,
):
    """The crash plan of one iteration: kind, kill timing or odds, power-loss
    mode and variants, second crash.  Deterministic in SEED.
    POWERLOSS_MODES: the modes the user allows (None: all); PROMISES: the
    engine's promise table (which crashes may tear)."""
    rng = Rng(derive(seed, "plan"))
    kind, kmode = iteration_kind(mode, seed)
    if kind == "whitebox" and not any(p.startswith("kill/") for p in catalogue):
        # A stress binary whose engine offers no kill points: its crashes
        # are SIGKILLs from outside.
        kind, kmode = "blackbox", None
    plan = {"kind": kind, "kill_mode": kmode}
    # Shared draws first, so every kind consumes the stream alike.
    early = rng.chance(1.0 / 8)
    kill_at = rng.uniform(0.05, 0.6) if early else rng.uniform(0.25 * interval, interval)
    run_for = max(1, int(round(rng.uniform(0.5 * interval, interval))))
    modes = plan_powerloss_modes(params, measure, powerloss_modes, promises)
    pl_mode = weighted(rng, [(m, w) for m, w in POWERLOSS_MODES if m in modes])
    variants = 1
    if rng.chance(1.0 / 3) and max_variants > 1:
        variants = 2 + rng.below(max_variants - 1)
    second = rng.chance(0.5)
    second_after = rng.uniform(0.01, 0.4)
    rec_odds = rng.choice([1, 1, 2, 3])
    odds_x = rng.u64()
    pl2_mode = weighted(rng, [(m, w) for m, w in POWERLOSS_MODES if m in modes])
    plan.update(powerloss_mode=pl_mode, variants=variants, powerloss_seed=derive(seed, "powerloss"))
    door = any(p.startswith(DOOR_PREFIX) for p in catalogue)
    rprefix = DOOR_PREFIX if door else RECOVERY_PREFIX
    recovery_points = [p for p in catalogue if p.startswith(rprefix)]
    if kind == "blackbox":
        plan["kill_at"] = round(kill_at, 3)
        plan["duration"] = int(kill_at) + 60
        # A second SIGKILL soon after the restart: often inside recovery.
        if second and rng.chance(0.5):
            plan["second_crash"] = {
                "how": "sigkill",
                "after": round(second_after, 3),
                "powerloss_mode": pl2_mode,
                "powerloss_seed": derive(seed, "powerloss2"),
            }
        return plan
    plan["duration"] = run_for
    modes, narrow = (
        (DOOR_KILL_MODES, DOOR_NARROW_KILL_MODES) if door else (KILL_MODES, NARROW_KILL_MODES)
    )
    name, prefixes, odds = modes[kmode]
    if kmode == 0:
        g = Rng(derive(seed, "kill group")).below(len(narrow) + 1)
        if g < len(narrow):
            name, prefixes, odds = narrow[g]
    plan["kill_mode_name"] = name
    if odds is None:
        plan["reopen"] = 2 + Rng(odds_x).below(9)
        return plan
    lo, hi = odds
    plan["kill_random_test"] = Rng(odds_x).log_uniform(lo, hi)
    if prefixes:
        pts = [p for p in catalogue if any(p.startswith(x) for x in prefixes)]
        if pts:
            plan["kill_points"] = ",".join(pts)
    if second and recovery_points:
        plan["second_crash"] = {
            "how": "kill_point",
            "kill_random_test": rec_odds,
            "kill_points": ",".join(recovery_points),
            "powerloss_mode": pl2_mode,
            "powerloss_seed": derive(seed, "powerloss2"),
        }
    return plan


# Per-mode defaults of the command line (crashtest.cli).
# The nightly modes, blackbox and whitebox, share theirs.
NIGHTLY_DEFAULTS = dict(
    duration=3600,
    interval=15.0,
    max_key=20000,
    db_iterations=20,
    max_variants=3,
    hang_seconds=120,
    faults="all",
)
MODE_DEFAULTS = {
    # duration, interval, max_key, db_iterations, max_variants, hang_seconds, faults
    "blackbox": dict(NIGHTLY_DEFAULTS),
    "whitebox": dict(NIGHTLY_DEFAULTS),
    "simple": dict(
        duration=120,
        interval=3.0,
        max_key=2000,
        db_iterations=4,
        max_variants=2,
        hang_seconds=60,
        faults="stable",
    ),
}
