#!/usr/bin/env python3
"""crashtest.py -- nightly crash tests of the engine through build/stress.

What it is for (DESIGN 6, issue 8): repeat, for as long as asked, a crash
cycle against one database and its expected state:

    start stress with options drawn for this iteration
        |  blackbox: SIGKILL after a random interval
        |  whitebox: a kill point inside the engine fires (or, for a share of
        |            iterations, no kill: the run reopens and ends cleanly)
    wait until the database lock is released
    build/powerloss --variants K: unsynced writes rolled back or torn
    restart stress on each variant: recovery, exact post-crash check, verdict
        (sometimes a second crash strikes during that recovery, and one more
        power-loss step and restart follow)
    the first variant carries on as the database of the next iteration

Modes: blackbox, whitebox, simple (a short mix of both for CI), repro
RUN_DIR (replays a failed iteration from its saved artifacts) and mutants
(simple against each planted bug of tests/mutants.txt: the harness's
bug-finding power, measured; issue 13).
Python 3 standard library only.  Exit: 0 every iteration passed, 1 one
failed (or the run was interrupted), 2 usage.

Seeds.  --seed S is the run seed; run r (of -j N, --shard K/N) draws from
derive(S, "run", r); iteration i of a run from its iteration seed, whose
low three bits are i % 8 (so the whitebox kill modes rotate from one
iteration to the next while the seed alone still determines them).
Everything an iteration draws (engine options, faults, kill timing,
power-loss mode and variants) comes from its iteration seed through
independent streams, so --iteration-seed X redraws exactly that iteration
(on a fresh database, whose creation options X draws too).

Files.  A work directory (--work-dir, a temporary one by default) holds,
per run, the current state ("state": db/, exp/ expected state, run/
ledger, journal, stress_state) and one directory per iteration (start
snapshot, power-loss variants, each step's output and report).  A clean
iteration's directory is removed; a failed one moves to
REPORT_DIR/failures/ID with the crashed state next to it.  REPORT_DIR also
gets summary.json, junit.xml and iterations.jsonl (one line per iteration
as it finishes).

Invariants:
  C1  a state directory (db, exp, run) is used by at most one process at
      a time, and only after the previous holder's DB/LOCK is released
  C2  the steps of an iteration are recorded as argument templates before
      they run (@STATE@, @ITER@, @STRESS@, @POWERLOSS@), so repro replays
      the same commands on copies of the saved states
  C3  creation-time options (page size, checksums, WAL segment size, value
      sizes) and max_key never change during a database's life
"""

import argparse
import datetime
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
REPO = os.path.dirname(os.path.abspath(__file__))
META_VERSION = 1


class UsageError(Exception):
    """A bad command line or setup: message printed, exit 2."""


# ---------------------------------------------------------------------------
# Seeds: splitmix64 streams (the same generator stress uses), stable across
# Python versions, unlike the random module's helpers.
# ---------------------------------------------------------------------------

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """A seeded stream: u64, below(n), choice, chance, uniform."""

    def __init__(self, seed):
        self.s = seed & M64

    def u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        return mix64(self.s)

    def below(self, n):
        return (self.u64() * n) >> 64

    def choice(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, p):
        return (self.u64() >> 11) / float(1 << 53) < p

    def uniform(self, a, b):
        return a + (b - a) * ((self.u64() >> 11) / float(1 << 53))

    def log_uniform(self, lo, hi):
        """An integer between lo and hi, uniform in log scale."""
        return max(1, int(round(math.exp(self.uniform(math.log(lo), math.log(hi))))))


def derive(seed, *parts):
    """A 48-bit seed derived from SEED and PARTS (short enough to type)."""
    h = hashlib.sha256(repr((int(seed),) + tuple(parts)).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 16


def iteration_seed(run_seed, index):
    # The low three bits carry index % 8: whitebox kill modes rotate with
    # the index, yet depend on the iteration seed alone.
    return (derive(run_seed, "iteration", index) & ~7) | (index & 7)


def run_seed_of(seed, run_index):
    return derive(seed, "run", run_index)


# ---------------------------------------------------------------------------
# The parameter table (db_crashtest.py's default_params).
# ---------------------------------------------------------------------------

# Fault classes of DESIGN 4 that an iteration may draw: report key ->
# (stress option, one_in choices).  power_loss and kill are the crash
# cycle itself (sync_fault_injection, kill_random_test).
FAULTS = {
    "bitflip_page": ("bitflip_page_one_in", [2000, 10000, 50000]),
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
# Empty since issue 12: every class is in the stable set (the I/O error
# classes' false alarms are fixed, and simple must reach every engine
# fault point, which needs read_error, write_error, nospace and
# sync_error).  bitflip_wal's known limit (engine/wal.h, W3: a record
# damaged after its fsync, with no later block written, is trimmed as a
# torn tail) is back in with them; take it out here if it shows.
UNSTABLE_FAULTS = []
# Every class of the report, in DESIGN 4's order (the final table).
CLASS_ORDER = list(FAULTS) + ["power_loss", "kill", "unattributed"]
OUTCOMES = ["injected", "detected", "repaired", "masked", "undetectable", "unrecoverable_by_design"]
FAILURE_KEYS = ["wrong_value", "lost", "resurrected", "false_alarm", "swallowed", "unrecoverable", "crash", "hang"]

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

# Drawn for every iteration (open-time options: they may change from one
# open to the next).
ITER_CHOICES = {
    "threads": [1, 2, 2, 4],
    "cache_pages": [32, 64, 256, 1024, 8192],  # cache_size = pages * page_size: tiny to above the database
    "full_page_writes": [1, 1, 1, 0],
    "wal_log_hints": [0, 1],
    "wal_compression": ["none", "zstd"],
    "block_protection_bytes_per_key": [0, 1, 2, 4, 8],
    "io_backend": ["uring", "psync"],
    "sync_mode": ["commit", "group", "off"],
    "checkpoint_one_in": [0, 200, 2000, 20000],
    "checkpoint_wal_bytes": ["1M", "8M", "64M"],
    "verify_db_one_in": [0, 0, 0, 20000],
    # Versions, snapshots, vacuum and hints (issue 6): drawn when the
    # binary has the options (Config.known), left out otherwise.
    "hint_fpi": [0, 1],
    "vacuum_freeze_min_age": [0, 100, 1000],
    "acquire_snapshot_one_in": [0, 0, 200, 2000],
    "vacuum_one_in": [0, 0, 1000, 10000],
}

# Op mixes: (readpercent, writepercent, delpercent, iterpercent); the rest
# of 100 are batches.  None: a random mix.
OP_MIXES = [(45, 30, 10, 10), (10, 60, 15, 5), (70, 15, 5, 8), (20, 20, 10, 10), None]

# Option values whose support the binary is asked about before a run
# (stress exits 2 for a value its engine does not support yet; a kernel
# without io_uring makes "uring" fail to open).
PROBED = [("wal_log_hints", 1)] + [("block_protection_bytes_per_key", w) for w in (1, 2, 4, 8)] + \
         [("io_backend", "uring")]

# Options crashtest manages itself: --set may not pin them.
MANAGED = {"db", "expected_values_dir", "run_dir", "report", "seed", "destroy_db_initially",
           "verification_only", "crash_at_end", "duration", "ops_per_thread", "max_key", "help",
           "list_fault_points", "sync_fault_injection", "kill_random_test", "kill_points", "hang_seconds",
           "reopen", "cache_pages"}

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
    ("write-back, checkpoint and control points", ["kill/page/", "kill/checkpoint/", "kill/control/"], (10, 10000)),
    ("checkpoint and control points", ["kill/checkpoint/", "kill/control/"], (3, 300)),
    ("reopen without a kill", None, None),
]
# Drawn in place of mode 0 in two thirds of its iterations, one each (a
# stream of their own, so the other draws do not move).  At mode 0's odds
# an iteration of a few seconds rarely kills at all, and no other group
# holds the log's or the commit path's points: a 5-minute simple run never
# hit kill/wal/*, and with the log group alone a 10-minute one missed
# kill/commit/between_ops (reached only between the ops of a batch).
NARROW_KILL_MODES = [("log write and sync points", ["kill/wal/"], (20, 20000)),
                     ("commit points", ["kill/commit/"], (20, 20000))]
RECOVERY_PREFIX = "kill/recovery/"

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


def powerloss_modes_allowed(p, measure=False):
    """A torn page is rebuilt only from a full-page image and found only by
    a page checksum: without both, tearing makes the restart measure."""
    if measure or (int(p.get("data_checksums", 1)) and int(p.get("full_page_writes", 1))):
        return [m for m, _ in POWERLOSS_MODES]
    return ["rollback", "keep"]


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
            elif why.startswith("no per-KV") and "block_protection_bytes_per_key" not in pinned and protection_widths:
                p["block_protection_bytes_per_key"] = protection_widths[0]
                notes.append("block_protection_bytes_per_key=%s for the pinned %s" % (protection_widths[0], opt))
            else:
                notes.append("pinned %s makes a measuring run (%s)" % (opt, why))
            continue
        p.pop(opt, None)
        notes.append("dropped %s (%s)" % (opt, why))
    return p, notes


class Config:
    """What the draw needs to know: the binary's defaults and supported
    values, the mode's sizes, the user's pins and fault selection."""

    def __init__(self, defaults=None, unsupported=(), fault_classes=None, pinned=None, measure=False,
                 threads=0, max_key=20000, known=None):
        self.defaults = dict(defaults or {})
        self.known_options = None if known is None else set(known)  # None: every option exists
        self.unsupported = set(unsupported)  # {(name, value)}
        self.fault_classes = list(FAULTS) if fault_classes is None else list(fault_classes)
        self.pinned = dict(pinned or {})
        self.measure = measure
        self.threads = threads
        self.max_key = max_key

    def choices(self, name, values):
        ok = [v for v in values if (name, v) not in self.unsupported
              and (name, str(v)) not in self.unsupported]
        return ok or [values[0]]

    def known(self, name):
        """The binary has option --NAME (a newer or older driver may lack
        some of the table's)."""
        return self.known_options is None or name in self.known_options

    def protection_widths(self):
        return [w for w in (1, 2, 4, 8) if ("block_protection_bytes_per_key", w) not in self.unsupported]


def draw_db_params(seed, cfg):
    """Creation-time options of a new database, from SEED (C3)."""
    rng = Rng(derive(seed, "db"))
    p = {}
    for name, values in DB_CHOICES.items():
        p[name] = rng.choice(cfg.choices(name, values))
    p["value_size_min"] = 8
    if p["large_value_one_in"]:
        p["large_value_size"] = rng.choice([16384, 65536, 262144])
    # A pinned fault that needs page checksums needs them from creation on.
    if not cfg.measure and "data_checksums" not in cfg.pinned:
        if any(FAULTS[c][0] in cfg.pinned and c in PAGE_CLASSES for c in FAULTS):
            p["data_checksums"] = 1
    for k, v in cfg.pinned.items():
        if k in DB_CHOICES or k in ("value_size_min", "large_value_size"):
            p[k] = v
    return {k: v for k, v in p.items() if cfg.known(k)}


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
        if c in picked:
            p[opt] = v
    for k, v in cfg.pinned.items():
        if k not in DB_CHOICES and k not in ("value_size_min", "large_value_size"):
            p[k] = v
    merged = dict(db)
    merged.update(p)
    merged, notes = sanitize(merged, cfg.pinned, cfg.measure, cfg.protection_widths())
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


def draw_plan(seed, mode, interval, params, catalogue, measure=False, max_variants=3, powerloss_modes=None):
    """The crash plan of one iteration: kind, kill timing or odds, power-loss
    mode and variants, second crash.  Deterministic in SEED.
    POWERLOSS_MODES: the modes the user allows (None: all)."""
    rng = Rng(derive(seed, "plan"))
    kind, kmode = iteration_kind(mode, seed)
    plan = {"kind": kind, "kill_mode": kmode}
    # Shared draws first, so every kind consumes the stream alike.
    early = rng.chance(1.0 / 8)
    kill_at = rng.uniform(0.05, 0.6) if early else rng.uniform(0.25 * interval, interval)
    run_for = max(1, int(round(rng.uniform(0.5 * interval, interval))))
    modes = powerloss_modes_allowed(params, measure)
    if powerloss_modes:
        modes = [m for m in modes if m in powerloss_modes] or \
            [m for m in ("rollback", "keep") if m in powerloss_modes] or ["rollback"]
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
    recovery_points = [p for p in catalogue if p.startswith(RECOVERY_PREFIX)]
    if kind == "blackbox":
        plan["kill_at"] = round(kill_at, 3)
        plan["duration"] = int(kill_at) + 60
        # A second SIGKILL soon after the restart: often inside recovery.
        if second and rng.chance(0.5):
            plan["second_crash"] = {"how": "sigkill", "after": round(second_after, 3), "powerloss_mode": pl2_mode,
                                    "powerloss_seed": derive(seed, "powerloss2")}
        return plan
    plan["duration"] = run_for
    name, prefixes, odds = KILL_MODES[kmode]
    if kmode == 0:
        g = Rng(derive(seed, "kill group")).below(len(NARROW_KILL_MODES) + 1)
        if g < len(NARROW_KILL_MODES):
            name, prefixes, odds = NARROW_KILL_MODES[g]
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
        plan["second_crash"] = {"how": "kill_point", "kill_random_test": rec_odds,
                                "kill_points": ",".join(recovery_points), "powerloss_mode": pl2_mode,
                                "powerloss_seed": derive(seed, "powerloss2")}
    return plan


# ---------------------------------------------------------------------------
# The stress binary: options and defaults from --help, the fault point
# catalogue from --list_fault_points, support probes.
# ---------------------------------------------------------------------------

def usable_dir(path, what):
    """PATH is (now) a writable directory, or a usage error."""
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".crashtest-probe-")
        probe.close()
    except OSError as e:
        raise UsageError("%s %s: %s" % (what, path, e.strerror or e))


def sha256_of(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def check_binary(path, what):
    if not path or not os.path.isfile(path):
        hint = " (run make)" if os.path.abspath(path or "").startswith(REPO) else ""
        raise UsageError("%s binary %s not found%s" % (what, path, hint))
    if not os.access(path, os.X_OK):
        raise UsageError("%s binary %s is not executable" % (what, path))


def stress_info(binary):
    """{'options': {name: default}, 'catalogue': [point, ...]} from the binary."""
    try:
        h = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        l = subprocess.run([binary, "--list_fault_points"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise UsageError("cannot run %s: %s" % (binary, e))
    if h.returncode != 0:
        raise UsageError("%s --help failed (exit %d): is it the stress driver?" % (binary, h.returncode))
    options = {}
    for line in h.stdout.decode(errors="replace").splitlines():
        m = re.match(r"\s+--([a-z0-9_]+)(=\S*)?\s+(.*)$", line)
        if not m:
            continue
        d = re.search(r"\[default: ([^\]]*)\]\s*$", m.group(3))
        options[m.group(1)] = d.group(1) if d else None
    if "db" not in options or "kill_random_test" not in options:
        raise UsageError("%s does not look like the stress driver (no --db / --kill_random_test in --help)" % binary)
    catalogue = []
    if l.returncode == 0:
        for line in l.stdout.decode(errors="replace").splitlines():
            if line.strip():
                catalogue.append(line.split()[0])
    return {"options": options, "catalogue": catalogue}


def probe_support(binary, workdir, values=PROBED, extra=None):
    """Ask the binary about each (name, value): a tiny, instant run in a
    scratch directory.  Returns {(name, value): (supported, first error
    line, exit code)}.  Only exit 2 (stress's "not supported by this
    engine") makes a value unsupported: a tiny run that fails otherwise
    (a verification failure, a crash) is the engine's failure, which
    leaving the value out of the draw would hide (a planted bug that broke
    per-KV protection once turned every width off this way); the value
    stays in, and the iterations that draw it judge it."""
    results = {}

    def one(i, name, value):
        d = os.path.join(workdir, "probe-%d" % i)
        argv = [binary, "--db=" + os.path.join(d, "db"), "--destroy_db_initially=1", "--threads=1",
                "--ops_per_thread=1", "--max_key=8", "--wal_segment_size=64K", "--cache_size=1M",
                "--seed=1", "--%s=%s" % (name, value)] + list(extra or [])
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            text = r.stdout.decode(errors="replace").strip().splitlines()
            why = next((t for t in text if not t.startswith("stress: pass")), "exit %d" % r.returncode)
            results[(name, value)] = (r.returncode != 2, why, r.returncode)
        except (OSError, subprocess.SubprocessError) as e:
            results[(name, value)] = (False, str(e), None)
        shutil.rmtree(d, ignore_errors=True)

    threads = [threading.Thread(target=one, args=(i, n, v)) for i, (n, v) in enumerate(values)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def build_identity(binaries):
    ident = {"host": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version()}

    def git(*args):
        try:
            r = subprocess.run(["git", "-C", REPO] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=10)
            return r.stdout.decode().strip() if r.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            return None

    ident["git_describe"] = git("describe", "--always", "--dirty", "--tags")
    ident["git_commit"] = git("rev-parse", "HEAD")
    for name, path in binaries.items():
        try:
            st = os.stat(path)
            ident[name] = {"path": os.path.abspath(path), "sha256": sha256_of(path),
                           "mtime": datetime.datetime.fromtimestamp(st.st_mtime).isoformat(timespec="seconds")}
        except OSError:
            ident[name] = {"path": os.path.abspath(path), "sha256": None}
    return ident


# ---------------------------------------------------------------------------
# Processes: one stress or powerloss process, with the watchdog.
# ---------------------------------------------------------------------------

SANITIZER_RE = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
                          r"runtime error: |ERROR: MemorySanitizer|Assertion .* failed")
ERROR_RE = re.compile(r"^stress: (FAILURE|cannot |reopen failed)", re.M)
FAILURE_KIND_RE = re.compile(r"^stress: FAILURE (\w+)", re.M)


class Stopped(Exception):
    """The whole run was asked to stop (SIGINT, SIGTERM)."""


STOP = threading.Event()


def read_u64_at(path, off):
    try:
        with open(path, "rb") as f:
            f.seek(off)
            b = f.read(8)
        return int.from_bytes(b, "little") if len(b) == 8 else None
    except OSError:
        return None


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def proc_io(pid):
    try:
        with open("/proc/%d/io" % pid) as f:
            return f.read()
    except OSError:
        return None


def capture_stacks(pid, path):
    """Thread stacks of a hung process, for its artifacts: gdb when there is
    one, else what /proc says each thread waits on."""
    out = []
    gdb = shutil.which("gdb")
    if gdb:
        try:
            r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                                "-ex", "thread apply all bt"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=60)
            out.append(r.stdout.decode(errors="replace"))
        except (OSError, subprocess.SubprocessError) as e:
            out.append("gdb: %s\n" % e)
    try:
        for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
            base = "/proc/%d/task/%s/" % (pid, tid)
            parts = []
            for name in ("comm", "wchan", "stack"):
                try:
                    with open(base + name) as f:
                        parts.append("%s=%s" % (name, f.read().strip()))
                except OSError:
                    pass
            out.append("thread %s: %s\n" % (tid, "; ".join(parts)))
    except OSError:
        pass
    try:
        with open(path, "w") as f:
            f.write("".join(out))
    except OSError:
        pass


class ProcResult:
    def __init__(self):
        self.rc = None
        self.elapsed = 0.0
        self.killed_by_us = False
        self.hung = None  # why the watchdog ended it
        self.output = ""
        self.cores = []


def run_process(argv, out_path, cwd, kill_after=None, hang_seconds=120, progress_paths=(), time_limit=None,
                env=None):
    """Run ARGV with stdout and stderr to OUT_PATH.  KILL_AFTER: SIGKILL it
    after that many seconds (a planned kill).  The watchdog ends it with
    SIGKILL when no progress is seen for HANG_SECONDS (trace count, ledger
    and journal sizes, /proc I/O counters) or after TIME_LIMIT seconds, and
    saves its thread stacks next to OUT_PATH.  Raises Stopped when the run
    is asked to stop (the process is killed first)."""
    res = ProcResult()
    t0 = time.monotonic()
    with open(out_path, "wb") as out:
        try:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                                 env=env, start_new_session=True)
        except OSError as e:
            out.write(("crashtest: cannot start %s: %s\n" % (argv[0], e)).encode())
            res.rc = 127
            res.output = "crashtest: cannot start %s: %s\n" % (argv[0], e)
            return res
        last_sample, last_progress, next_check = None, t0, t0
        try:
            while True:
                try:
                    rc = p.wait(timeout=0.02)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if STOP.is_set():
                    p.kill()
                    p.wait()
                    raise Stopped()
                if kill_after is not None and now - t0 >= kill_after and not res.killed_by_us:
                    p.kill()
                    res.killed_by_us = True
                    continue
                if now >= next_check:
                    next_check = now + 1.0
                    sample = (tuple(read_u64_at(pp, 40) if pp.endswith("/expected") else file_size(pp)
                                    for pp in progress_paths), proc_io(p.pid))
                    if sample != last_sample:
                        last_sample, last_progress = sample, now
                    why = None
                    if now - last_progress >= hang_seconds:
                        why = "no progress for %d s" % hang_seconds
                    elif time_limit is not None and now - t0 >= time_limit:
                        why = "still running after %d s" % time_limit
                    if why:
                        capture_stacks(p.pid, os.path.join(os.path.dirname(out_path), "hang-stacks.txt"))
                        p.kill()
                        p.wait()
                        res.hung = why
                        rc = p.returncode
                        break
        except BaseException:
            if p.poll() is None:
                p.kill()
                p.wait()
            raise
    res.rc = rc
    res.elapsed = time.monotonic() - t0
    try:
        with open(out_path, "rb") as f:
            res.output = f.read().decode(errors="replace")
    except OSError:
        res.output = ""
    try:
        res.cores = sorted(n for n in os.listdir(cwd) if n == "core" or n.startswith("core."))
    except OSError:
        pass
    return res


def wait_lock_released(db, timeout=60.0):
    """C1: after a crash, the engine's flock on DB/LOCK may outlive the
    process for a moment (io_uring workers hold its files).  True once it
    is free (or absent)."""
    path = os.path.join(db, "LOCK")
    t0 = time.monotonic()
    while True:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except OSError:
            pass
        finally:
            os.close(fd)
        if time.monotonic() - t0 > timeout:
            return False
        if STOP.is_set():
            raise Stopped()
        time.sleep(0.05)


# ---------------------------------------------------------------------------
# Judging one step.
# ---------------------------------------------------------------------------

def signal_name(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "signal %d" % n


def report_failure_keys(report):
    if not isinstance(report, dict):
        return []
    totals = report.get("totals") or {}
    return [k for k in FAILURE_KEYS if int(totals.get(k, 0) or 0) > 0]


def judge_stress(expect, rc, killed_by_us, hung, output, report, kill_lines, cores=()):
    """The outcome of one stress process.  EXPECT: 'exit0' (must end by
    itself and pass), 'sigkill' (we kill it: ending first is a failure,
    unless the engine refused the database for good), 'sigkill_or_exit0'
    (we may kill it, or it may end first and pass), 'kill_point' (a kill
    point may fire; ending by itself and passing is fine too), 'refused'
    (files of the database were removed: the engine must refuse it, exit
    3, and change nothing).  KILL_LINES:
    ledger lines of class kill this process appended.  Returns (outcome,
    failure): outcome 'passed' or 'crashed' (a planned crash); failure
    None or {'kind', 'keys', 'message'}."""
    def fail(kind, message, keys=None):
        return "failed", {"kind": kind, "keys": keys or [kind], "message": message}

    refused = next((l for l in (output or "").splitlines() if "the engine refuses this directory" in l), None)
    if expect == "refused" and not hung and rc == 3 and refused:
        return "passed", None
    if expect == "refused" and not hung and rc in (0, 1) and not SANITIZER_RE.search(output or ""):
        # It opened a database whose files were lost (F1-F5), as if nothing
        # were missing: whatever it then served was not the database.
        keys = report_failure_keys(report)
        return fail(keys[0] if keys else "lost", "the engine opened a database with lost files instead of refusing "
                    "it (exit %s%s)" % (rc, ": " + ", ".join(keys) if keys else ""), keys or ["lost"])
    if hung:
        return fail("hang", "the watchdog ended it: %s" % hung)
    m = SANITIZER_RE.search(output or "")
    if m:
        line = next((l for l in output.splitlines() if SANITIZER_RE.search(l)), m.group(0))
        return fail("crash", "sanitizer report: %s" % line.strip()[:200])
    if cores:
        return fail("crash", "core dumped (%s)" % ", ".join(cores))
    if "FAILURE crash" in (output or ""):
        return fail("crash", "a fatal signal in the process")
    if rc is not None and rc < 0 and rc != -signal.SIGKILL:
        return fail("crash", "killed by %s, which no kill planned" % signal_name(-rc))
    keys = report_failure_keys(report)
    if "hang" in keys:
        return fail("hang", "stress reported a hang (no operation finished)", keys)
    if "crash" in keys:
        return fail("crash", "stress reported a crash of an earlier process", keys)
    if keys:
        return fail(keys[0], "verification failure: %s" % ", ".join(keys), keys)
    errors = ERROR_RE.findall(output or "")
    if errors:
        kinds = FAILURE_KIND_RE.findall(output or "")
        kind = kinds[0] if kinds else "error"
        first = next(l for l in output.splitlines() if ERROR_RE.match(l))
        return fail(kind, first.strip()[:300], sorted(set(kinds)) or ["error"])
    if rc == -signal.SIGKILL:
        if killed_by_us and expect in ("sigkill", "sigkill_or_exit0"):
            return "crashed", None
        if expect == "kill_point" and kill_lines:
            return "crashed", None
        if killed_by_us:
            return fail("crash", "killed by SIGKILL although no kill was planned")
        return fail("crash", "killed by SIGKILL that no kill planned (OOM killer?)")
    if rc == 0:
        if report is None:
            return fail("error", "exit 0 but no report was written")
        if report.get("verdict") != "pass":
            return fail("error", "exit 0 but the report's verdict is %r" % report.get("verdict"))
        if expect == "sigkill" and not report.get("unrecoverable"):
            return fail("early_exit", "stress exited before it was killed")
        return "passed", None
    if rc == 1:
        return fail("verification", "exit 1 (verification failure) without failure counts in a report")
    if rc == 2:
        return fail("error", "exit 2 (usage): %s" % last_line(output))
    if rc == 3:
        if refused:
            # Every database crashtest hands to stress is one the engine
            # made earlier in the run: refusing it is failing to come back
            # (stress itself only refuses to touch it, exit 3).
            return fail("unrecoverable", "the engine refuses the run's own database: %s" % refused.strip()[:300])
        return fail("error", "exit 3 (infrastructure): %s" % last_line(output))
    return fail("error", "exit %s: %s" % (rc, last_line(output)))


def last_line(text):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[-1].strip()[:300] if lines else "(no output)"


# ---------------------------------------------------------------------------
# States and steps (C2).
# ---------------------------------------------------------------------------

# What the lost-file check removes from a recovered database (engine F3:
# control lost, with data or with only the log left; F4: data lost).
LOST_FILE_CHOICES = [["control"], ["data"], ["control", "data"]]


def dir_listing(d):
    """(name, size, sha256) of every file under D: 'changed nothing'."""
    out = []
    for dp, dns, fns in os.walk(d):
        dns.sort()
        for fn in sorted(fns):
            p = os.path.join(dp, fn)
            try:
                out.append((os.path.relpath(p, d), os.path.getsize(p), sha256_of(p)))
            except OSError:
                out.append((os.path.relpath(p, d), -1, ""))
    return out


def copy_state(src, dst, journal=True):
    """Copy a state directory (db, exp, run); JOURNAL=False leaves the
    crash journal out (it is only the power-loss step's input)."""
    ignore = None if journal else shutil.ignore_patterns("journal", "journal.d")
    shutil.copytree(src, dst, symlinks=True, ignore=ignore)


def trim_journal(state):
    """The journal only serves a power-loss step after a crash; once a
    process closed the database cleanly everything in it was synced, so it
    goes (it grows by every write's old contents)."""
    run = os.path.join(state, "run")
    try:
        with open(os.path.join(run, "stress_state")) as f:
            clean = re.search(r"clean (\d+)", f.read())
    except OSError:
        clean = None
    if clean and clean.group(1) == "1":
        for name in ("journal", "journal.d"):
            p = os.path.join(run, name)
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            elif os.path.exists(p):
                os.unlink(p)


def subst(value, env):
    if isinstance(value, list):
        return [subst(v, env) for v in value]
    if not isinstance(value, str):
        return value
    for k, v in env.items():
        value = value.replace(k, v)
    return value


def state_argv(state):
    return ["--db=%s/db" % state, "--expected_values_dir=%s/exp" % state, "--run_dir=%s/run" % state]


def opt_args(params):
    return ["--%s=%s" % (k, params[k]) for k in sorted(params)]


def kill_lines_since(ledger, offset):
    out = []
    try:
        with open(ledger, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return out
    for line in data.decode(errors="replace").splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("class") == "kill":
            out.append(j)
    return out


def prepare_variant(k, from_db, from_state, to, ledger_offset):
    """Variant K of a power-loss step: its database copy moves to TO/db;
    the expected state is copied; the run directory is copied without the
    journal, its ledger keeping the lines from before the step and the
    step's lines for this variant only (powerloss notes "variant=K ...").
    The same as running powerloss in place on a copy."""
    os.makedirs(to)
    shutil.move(from_db, os.path.join(to, "db"))
    shutil.copytree(os.path.join(from_state, "exp"), os.path.join(to, "exp"))
    copy_state_run = os.path.join(to, "run")
    shutil.copytree(os.path.join(from_state, "run"), copy_state_run,
                    ignore=shutil.ignore_patterns("journal", "journal.d", "ledger"))
    src = os.path.join(from_state, "run", "ledger")
    try:
        with open(src, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    head, tail = data[:ledger_offset], data[ledger_offset:]
    keep = []
    tag = "variant=%d " % k
    for line in tail.splitlines(keepends=True):
        try:
            note = json.loads(line.decode(errors="replace")).get("note", "") or ""
        except ValueError:
            continue
        if note.startswith(tag) or note == tag.strip():
            keep.append(line)
    with open(os.path.join(copy_state_run, "ledger"), "wb") as f:
        f.write(head + b"".join(keep))


class Executor:
    """Runs recorded steps (C2) and judges them; shared by the runs and by
    repro, so a replay runs exactly what the run ran."""

    def __init__(self, env, hang_seconds, log=None, echo=False):
        self.env = env  # placeholder -> path
        self.hang_seconds = hang_seconds
        self.log = log or (lambda s: None)
        self.echo = echo
        self.results = {}

    def run(self, n, step):
        t = step["type"]
        if self.echo:
            self.print_step(step)
        if t == "stress":
            return self.run_stress(n, step)
        if t == "powerloss":
            return self.run_powerloss(n, step)
        if t == "variant":
            return self.run_variant(n, step)
        if t == "lose":
            return self.run_lose(n, step)
        raise ValueError("unknown step type %r" % t)

    def print_step(self, step):
        if step["type"] == "lose":
            self.log("(crashtest) lost files: copy %s -> %s, then remove %s" % (
                subst(step["from"], self.env), subst(step["to"], self.env), " ".join(step["remove"])))
            return
        if step["type"] == "variant":
            self.log("(crashtest) variant %d: %s -> %s (expected state copied, ledger: this variant's lines)"
                     % (step["k"], subst(step["from_db"], self.env), subst(step["to"], self.env)))
            return
        cmd = shlex.join(subst(step["argv"], self.env))
        extra = ""
        if step.get("kill_after") is not None:
            extra = "   # SIGKILL after %.3f s" % step["kill_after"]
        self.log("$ " + cmd + extra)

    def run_stress(self, n, step):
        env = self.env
        argv = subst(step["argv"], env)
        d = subst(step["dir"], env)
        state = subst(step["state"], env)
        os.makedirs(d, exist_ok=True)
        ledger = os.path.join(state, "run", "ledger")
        before = file_size(ledger) or 0
        progress = [os.path.join(state, "exp", "expected"), ledger, os.path.join(state, "run", "journal")]
        limit = step.get("time_limit")
        before_listing = dir_listing(os.path.join(state, "db")) if step["expect"] == "refused" else None
        res = run_process(argv, os.path.join(d, "output.txt"), d, kill_after=step.get("kill_after"),
                          hang_seconds=self.hang_seconds + min(30, self.hang_seconds), progress_paths=progress,
                          time_limit=limit)
        lock_ok = True
        if res.rc == -signal.SIGKILL or res.hung:
            lock_ok = wait_lock_released(os.path.join(state, "db"))
        report = None
        rpath = os.path.join(d, "report.json")
        if os.path.exists(rpath):
            try:
                with open(rpath) as f:
                    report = json.load(f)
            except (OSError, ValueError):
                report = None
        kills = kill_lines_since(ledger, before)
        outcome, failure = judge_stress(step["expect"], res.rc, res.killed_by_us, res.hung, res.output, report,
                                        kills, res.cores)
        if failure is None and before_listing is not None and dir_listing(os.path.join(state, "db")) != before_listing:
            outcome, failure = "failed", {"kind": "lost", "keys": ["lost"], "message":
                                          "the engine refused the directory with lost files but changed it"}
        if failure is None and not lock_ok:
            outcome, failure = "failed", {"kind": "error", "keys": ["error"],
                                          "message": "the database lock was not released 60 s after the process died"}
        r = {"rc": res.rc, "elapsed": round(res.elapsed, 3), "killed_by_us": res.killed_by_us, "hung": res.hung,
             "outcome": outcome, "failure": failure, "report": report,
             "kill_points_fired": [k.get("point") for k in kills], "output_tail": tail_text(res.output, 40)}
        self.results[n] = r
        return r

    def run_powerloss(self, n, step):
        argv = subst(step["argv"], self.env)
        d = subst(step["dir"], self.env)
        os.makedirs(d, exist_ok=True)
        ledger = subst(step["ledger"], self.env)
        offset = file_size(ledger) or 0
        if "--out-prefix" in argv:
            os.makedirs(os.path.dirname(argv[argv.index("--out-prefix") + 1]), exist_ok=True)
        # A process killed before it opened its journal wrote nothing
        # through the hooks: an empty journal says so (powerloss wants one).
        journal = os.path.join(os.path.dirname(ledger), "journal")
        if not os.path.exists(journal):
            open(journal, "ab").close()
        res = run_process(argv, os.path.join(d, "output.txt"), d, hang_seconds=self.hang_seconds)
        failure = None
        if res.hung:
            failure = {"kind": "hang", "keys": ["hang"], "message": "powerloss: %s" % res.hung}
        elif res.rc != 0:
            failure = {"kind": "error", "keys": ["error"],
                       "message": "powerloss exit %s: %s" % (res.rc, last_line(res.output))}
        r = {"rc": res.rc, "elapsed": round(res.elapsed, 3), "ledger_offset": offset,
             "outcome": "failed" if failure else "passed", "failure": failure,
             "output_tail": tail_text(res.output, 20)}
        self.results[n] = r
        return r

    def run_lose(self, n, step):
        """A copy of a recovered state with database files removed (the
        lost-file check): the next step wants the engine to refuse it."""
        t0 = time.monotonic()
        to = subst(step["to"], self.env)
        failure = None
        try:
            shutil.rmtree(to, ignore_errors=True)
            copy_state(subst(step["from"], self.env), to, journal=False)
            for rel in step["remove"]:
                os.unlink(os.path.join(to, rel))
        except OSError as e:
            failure = {"kind": "error", "keys": ["error"], "message": "preparing the lost-file copy: %s" % e}
        r = {"rc": 0 if failure is None else 1, "elapsed": round(time.monotonic() - t0, 3),
             "outcome": "failed" if failure else "passed", "failure": failure}
        self.results[n] = r
        return r

    def run_variant(self, n, step):
        pl = self.results.get(step["powerloss_step"]) or {}
        t0 = time.monotonic()
        try:
            prepare_variant(step["k"], subst(step["from_db"], self.env), subst(step["from_state"], self.env),
                            subst(step["to"], self.env), pl.get("ledger_offset", 0))
            failure = None
        except OSError as e:
            failure = {"kind": "error", "keys": ["error"], "message": "preparing variant %d: %s" % (step["k"], e)}
        r = {"rc": 0 if failure is None else 1, "elapsed": round(time.monotonic() - t0, 3),
             "outcome": "failed" if failure else "passed", "failure": failure}
        self.results[n] = r
        return r


def tail_text(text, n):
    lines = (text or "").splitlines()
    return "\n".join(lines[-n:])


# ---------------------------------------------------------------------------
# Iterations.
# ---------------------------------------------------------------------------

class Printer:
    """Lines on stdout (and the report's log), with a progress line at the
    bottom when stdout is a terminal."""

    def __init__(self, log_path=None, tty=None):
        self.lock = threading.Lock()
        self.tty = sys.stdout.isatty() if tty is None else tty
        self.progress = ""
        self.log_f = open(log_path, "a") if log_path else None

    def line(self, s):
        with self.lock:
            if self.tty and self.progress:
                sys.stdout.write("\r\x1b[K")
            sys.stdout.write(s + "\n")
            if self.tty and self.progress:
                sys.stdout.write(self.progress)
            sys.stdout.flush()
            if self.log_f:
                self.log_f.write(s + "\n")
                self.log_f.flush()

    def set_progress(self, s):
        if not self.tty:
            return
        with self.lock:
            self.progress = s
            sys.stdout.write("\r\x1b[K" + s)
            sys.stdout.flush()

    def clear_progress(self):
        if not self.tty:
            return
        with self.lock:
            if self.progress:
                sys.stdout.write("\r\x1b[K")
                sys.stdout.flush()
            self.progress = ""

    def close(self):
        if self.log_f:
            self.log_f.close()


def fmt_value(v):
    s = parse_size(v)
    if isinstance(v, str) and s is not None and not v.isdigit():
        return v
    if isinstance(v, int) and v >= 65536 and v % 1024 == 0:
        for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if v % m == 0:
                return "%d%s" % (v // m, unit)
    return str(v)


def differs(params, defaults):
    out = []
    for k in sorted(params):
        if k in NOT_SHOWN:
            continue
        if k in defaults and defaults[k] is not None and same_value(params[k], defaults[k]):
            continue
        out.append("%s=%s" % (k, fmt_value(params[k])))
    return out


def sum_totals(reports):
    t = {k: 0 for k in OUTCOMES + FAILURE_KEYS}
    for r in reports:
        for k in t:
            t[k] += int(((r or {}).get("totals") or {}).get(k, 0) or 0)
    return t


class Run:
    """One run: a database and its expected state carried from iteration
    to iteration, in WORK/run-R."""

    def __init__(self, ct, index, seed):
        self.ct = ct
        self.index = index
        self.seed = seed
        self.dir = os.path.join(ct.work, "run-%d" % index)
        self.state = os.path.join(self.dir, "state")
        self.fresh = True
        self.db_params = None
        self.db_id = 0
        self.db_age = 0
        self.iterations = 0
        self.failures = 0


class CrashTest:
    """The run modes: blackbox, whitebox, simple."""

    def __init__(self, args, printer):
        self.a = args
        self.p = printer
        self.mode = args.mode
        self.stress = os.path.abspath(args.stress_binary)
        self.powerloss = os.path.abspath(args.powerloss_binary)
        self.lock = threading.Lock()
        self.records = []
        self.failed = 0
        self.started = 0
        self.running = 0
        self.t0 = time.monotonic()
        self.deadline = None if not args.duration else self.t0 + args.duration
        self.work = None
        self.own_work = False
        self.report_dir = None
        self.internal_error = False
        self.started_at = datetime.datetime.now().isoformat(timespec="seconds")

    # ---- setup ----
    def setup(self):
        a = self.a
        check_binary(self.stress, "stress")
        check_binary(self.powerloss, "powerloss")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.report_dir = os.path.abspath(a.report_dir or os.path.join(
            REPO, "build", "crashtest", "%s-%s-%d" % (self.mode, stamp, os.getpid())))
        usable_dir(self.report_dir, "--report-dir")
        if a.work_dir:
            usable_dir(a.work_dir, "--work-dir")
        # The run uses copies: a rebuild while it runs (a developer's make)
        # changes nothing under it, and a failure keeps the very binaries.
        self.work = os.path.abspath(a.work_dir) if a.work_dir else tempfile.mkdtemp(prefix="crashtest-")
        self.own_work = not a.work_dir
        bindir = os.path.join(self.work, "bin")
        os.makedirs(bindir, exist_ok=True)
        self.bin = {"@STRESS@": os.path.join(bindir, "stress"), "@POWERLOSS@": os.path.join(bindir, "powerloss")}
        shutil.copy2(self.stress, self.bin["@STRESS@"])
        shutil.copy2(self.powerloss, self.bin["@POWERLOSS@"])
        self.identity = build_identity({"stress": self.stress, "powerloss": self.powerloss})
        info = stress_info(self.bin["@STRESS@"])
        self.defaults = info["options"]
        self.catalogue = info["catalogue"]
        pinned = {}
        for s in a.set or []:
            name, _, value = s.partition("=")
            name = name.strip().lstrip("-").replace("-", "_")
            if not name or not _ or value == "":
                raise UsageError("--set %r: want NAME=VALUE" % s)
            if name in MANAGED:
                raise UsageError("--set %s: crashtest manages --%s itself" % (name, name))
            if name not in self.defaults:
                raise UsageError("--set %s: %s has no option --%s (see %s --help)" % (name, self.stress, name,
                                                                                      self.stress))
            pinned[name] = value
        probe_dir = tempfile.mkdtemp(prefix="probe-", dir=self.work)
        values = list(PROBED)
        results = probe_support(self.bin["@STRESS@"], probe_dir, values)
        if pinned:
            pin_args = ["--%s=%s" % kv for kv in sorted(pinned.items())]
            pr = probe_support(self.bin["@STRESS@"], probe_dir, [("seed", 1)], extra=pin_args)
            ok, why, _ = pr[("seed", 1)]
            if not ok:
                raise UsageError("--set %s: %s rejects it: %s" % (" ".join(a.set), os.path.basename(self.stress), why))
        shutil.rmtree(probe_dir, ignore_errors=True)
        unsupported = {k for k, (ok, _, _) in results.items() if not ok}
        for (name, value), (ok, why, rc) in sorted(results.items(), key=str):
            if ok and rc != 0:
                self.p.line("crashtest: WARNING: a tiny run with --%s=%s failed (exit %s: %s); kept in the draw, "
                            "the iterations that draw it judge it" % (name, value, rc, why))
        for (name, value) in unsupported:
            if name in pinned and str(pinned[name]) == str(value):
                raise UsageError("--set %s=%s: %s does not support it yet (%s)"
                                 % (name, value, self.stress, results[(name, value)][1]))
        self.unsupported = sorted(unsupported, key=str)
        classes = self.parse_faults(a.faults)
        self.cfg = Config(self.defaults, unsupported, classes, pinned, a.measure, a.threads, a.max_key,
                          known=self.defaults.keys())
        self.p.log_f = open(os.path.join(self.report_dir, "log.txt"), "a")
        self.jsonl = open(os.path.join(self.report_dir, "iterations.jsonl"), "a")
        if unsupported:
            by = {}
            for name, value in sorted(unsupported, key=str):
                by.setdefault(name, []).append(str(value))
            self.p.line("crashtest: note: %s does not support %s yet: left out of the draw"
                        % (nice_path(self.stress), ", ".join("--%s=%s" % (n, ",".join(v))
                                                                     for n, v in by.items())))

    def parse_faults(self, spec):
        if spec in (None, "", "all"):
            return list(FAULTS)
        if spec == "none":
            return []
        if spec == "stable":
            return [c for c in FAULTS if c not in UNSTABLE_FAULTS]
        out = []
        for c in spec.split(","):
            c = c.strip()
            if c not in FAULTS:
                raise UsageError("--faults: unknown class %r (classes: %s; or all, stable, none)"
                                 % (c, ", ".join(FAULTS)))
            out.append(c)
        return out

    # ---- the runs ----
    def run_indices(self):
        k, n = self.a.shard
        return [k + n * t for t in range(self.a.jobs)]

    def go(self):
        a = self.a
        runs = [Run(self, r, run_seed_of(a.seed, r)) for r in self.run_indices()]
        if a.iteration_seed is not None:
            runs = [Run(self, 0, a.seed)]
        self.p.line("crashtest: %s, seed %d (rerun with --seed %d), %s, %s, interval %gs"
                    % (self.mode, a.seed, a.seed,
                       "iteration seed %d" % a.iteration_seed if a.iteration_seed is not None else
                       "%d run%s%s" % (len(runs), "s" if len(runs) > 1 else "",
                                       " (shard %d/%d)" % a.shard if a.shard != (0, 1) else ""),
                       ("%d iterations" % a.iterations if a.iterations else "") +
                       (" " if a.iterations and a.duration else "") +
                       ("duration %ds" % a.duration if a.duration else ""),
                       a.interval))
        self.p.line("crashtest: %s (%s), git %s" % (self.stress, (self.identity["stress"]["sha256"] or "?")[:12],
                                                    self.identity.get("git_describe") or "?"))
        self.p.line("crashtest: work dir %s; reports in %s" % (self.work, self.report_dir))
        threads = [threading.Thread(target=self.run_loop, args=(r,), daemon=True) for r in runs]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=1.0)
            self.show_progress()
        self.p.clear_progress()
        return runs

    def show_progress(self):
        el = time.monotonic() - self.t0
        total = " / %s" % hms(self.a.duration) if self.a.duration else ""
        with self.lock:
            s = "[crashtest] %s%s  iterations %d (%d running)  failures %d" % (
                hms(el), total, len(self.records), self.running, self.failed)
        self.p.set_progress(s)

    def should_stop(self, run):
        a = self.a
        if STOP.is_set():
            return True
        if a.iteration_seed is not None:
            return run.iterations >= 1
        if a.iterations and run.iterations >= a.iterations:
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline and run.iterations > 0:
            return True
        if a.max_failures and self.failed >= a.max_failures:
            return True
        return False

    def run_loop(self, run):
        try:
            while not self.should_stop(run):
                seed = self.a.iteration_seed if self.a.iteration_seed is not None else \
                    iteration_seed(run.seed, run.iterations)
                with self.lock:
                    self.running += 1
                try:
                    self.iteration(run, run.iterations, seed)
                finally:
                    with self.lock:
                        self.running -= 1
                run.iterations += 1
        except Stopped:
            pass
        except Exception as e:  # a bug of crashtest itself: say so, stop this run
            import traceback
            self.p.line("crashtest: internal error in run %d: %s" % (run.index, e))
            with open(os.path.join(self.report_dir, "internal-error.txt"), "a") as f:
                traceback.print_exc(file=f)
            with self.lock:
                self.failed += 1
                self.internal_error = True

    # ---- one iteration ----
    def iteration(self, run, index, seed):
        a, cfg = self.a, self.cfg
        t0 = time.monotonic()
        started = datetime.datetime.now().isoformat(timespec="seconds")
        iter_dir = os.path.join(run.dir, "iter-%d" % index)
        shutil.rmtree(iter_dir, ignore_errors=True)
        os.makedirs(iter_dir)
        if run.fresh or run.db_age >= a.db_iterations:
            shutil.rmtree(run.state, ignore_errors=True)
            run.fresh = True
        fresh = run.fresh
        if fresh:
            run.db_params = draw_db_params(seed, cfg)
            run.db_id += 1
            run.db_age = 0
            self.p.line("run %d: new database %d (iteration seed %d): %s" % (
                run.index, run.db_id, seed, " ".join(differs(run.db_params, {})) or "defaults"))
        db = run.db_params
        params, notes = draw_iter_params(seed, cfg, db)
        merged = dict(db)
        merged.update(params)
        plan = draw_plan(seed, self.mode, a.interval, merged, self.catalogue, a.measure, a.max_variants,
                         a.powerloss_modes)
        if plan["kind"] == "whitebox" and plan["kill_mode"] == 2 and not int(merged.get("checkpoint_one_in", 0)) \
                and "checkpoint_one_in" not in cfg.pinned:
            params["checkpoint_one_in"] = Rng(derive(seed, "ckpt")).choice([100, 500, 2000])
            merged["checkpoint_one_in"] = params["checkpoint_one_in"]
        common = ["--max_key=%d" % a.max_key, "--hang_seconds=%d" % a.hang_seconds]
        steps = []
        S, I = "@STATE@", "@ITER@"

        def stress_step(name, state, extra, expect, kill_after=None, primary=True, opts=None, time_limit=None):
            n = len(steps)
            d = "%s/steps/%02d-%s" % (I, n, name)
            argv = ["@STRESS@"] + state_argv(state) + common + opt_args(opts if opts is not None else merged) + \
                ["--report=%s/report.json" % d] + extra
            steps.append({"type": "stress", "name": name, "argv": argv, "state": state, "dir": d,
                          "expect": expect, "kill_after": kill_after, "primary": primary,
                          "time_limit": time_limit})
            return n

        def powerloss_step(name, state, mode, pseed, variants, prefix):
            n = len(steps)
            d = "%s/steps/%02d-%s" % (I, n, name)
            argv = ["@POWERLOSS@", state + "/db", "--run-dir", state + "/run", "--seed", str(pseed),
                    "--variants", str(variants), "--mode", mode, "--out-prefix", prefix]
            steps.append({"type": "powerloss", "name": name, "argv": argv, "dir": d, "ledger": state + "/run/ledger"})
            return n

        def variant_step(k, pl_n, prefix, from_state, to):
            steps.append({"type": "variant", "name": "variant-%d" % k, "k": k, "powerloss_step": pl_n,
                          "from_db": "%s%d" % (prefix, k), "from_state": from_state, "to": to})

        if fresh:
            create_opts = dict(db)
            stress_step("create", S, ["--destroy_db_initially=1", "--threads=1", "--ops_per_thread=200",
                                      "--seed=%d" % derive(seed, "create")], "exit0", opts=create_opts)
        else:
            trim_journal(run.state)
        # The start snapshot: what repro needs when the failure comes before the crash.
        if os.path.isdir(run.state):
            copy_state(run.state, os.path.join(iter_dir, "start"), journal=False)
        else:
            os.makedirs(os.path.join(iter_dir, "start"))
        wseed = "--seed=%d" % derive(seed, "workload")
        dur = plan["duration"]
        limit = dur + a.hang_seconds + 60
        if plan["kind"] == "blackbox":
            w = stress_step("workload", S, ["--ops_per_thread=0", "--duration=%d" % dur, "--sync_fault_injection=1",
                                            wseed], "sigkill", kill_after=plan["kill_at"], time_limit=limit)
        elif plan.get("reopen"):
            w = stress_step("workload", S, ["--ops_per_thread=0", "--duration=%d" % dur,
                                            "--reopen=%d" % plan["reopen"], wseed], "exit0", time_limit=limit)
        else:
            extra = ["--ops_per_thread=0", "--duration=%d" % dur, "--sync_fault_injection=1",
                     "--kill_random_test=%d" % plan["kill_random_test"], wseed]
            if plan.get("kill_points"):
                extra.append("--kill_points=%s" % plan["kill_points"])
            w = stress_step("workload", S, extra, "kill_point", time_limit=limit)

        # Steps after the workload are planned once it ended: a crash needs
        # the power-loss step and a restart per variant.
        env = {"@STATE@": run.state, "@ITER@": iter_dir}
        env.update(self.bin)
        ex = Executor(env, a.hang_seconds, log=self.p.line, echo=a.verbose)
        failure, fail_n = None, None
        executed = 0
        primary_state = None
        crashed_after = None
        verify_opts = dict(merged)
        for k in FAULT_OPTIONS:  # the restart injects nothing: it judges what was injected
            verify_opts.pop(k, None)

        def execute_pending():
            nonlocal executed, failure, fail_n
            while executed < len(steps) and failure is None:
                r = ex.run(executed, steps[executed])
                if r["failure"]:
                    failure, fail_n = r["failure"], executed
                executed += 1

        execute_pending()
        if failure is None and ex.results[w]["outcome"] == "crashed":
            crashed_after = w
            pl = powerloss_step("powerloss", S, plan["powerloss_mode"], plan["powerloss_seed"], plan["variants"],
                                I + "/pl/db.")
            for k in range(plan["variants"]):
                to = "%s/v%d" % (I, k)
                variant_step(k, pl, I + "/pl/db.", S, to)
                second = plan.get("second_crash") if k == 0 else None
                vseed = "--seed=%d" % derive(seed, "verify", k)
                if second and second["how"] == "kill_point":
                    stress_step("recover-v%d" % k, to, ["--verification_only=1", "--sync_fault_injection=1",
                                                         "--kill_random_test=%d" % second["kill_random_test"],
                                                         "--kill_points=%s" % second["kill_points"], vseed],
                                "kill_point", primary=True, opts=verify_opts, time_limit=a.hang_seconds + 120)
                elif second:
                    stress_step("recover-v%d" % k, to, ["--verification_only=1", "--sync_fault_injection=1", vseed],
                                "sigkill_or_exit0", kill_after=second["after"], primary=True, opts=verify_opts,
                                time_limit=a.hang_seconds + 120)
                else:
                    stress_step("verify-v%d" % k, to, ["--verification_only=1", vseed], "exit0", primary=(k == 0),
                                opts=verify_opts, time_limit=a.hang_seconds + 120)
                execute_pending()
                if failure is not None:
                    break
                if second and ex.results[len(steps) - 1]["outcome"] == "crashed":
                    # The second crash: one more power-loss step, then the final restart.
                    pl2 = powerloss_step("powerloss-2", to, second["powerloss_mode"], second["powerloss_seed"], 1,
                                         I + "/pl2/db.")
                    to2 = "%s/v%dr" % (I, k)
                    variant_step(0, pl2, I + "/pl2/db.", to, to2)
                    stress_step("verify-v%dr" % k, to2,
                                ["--verification_only=1", "--seed=%d" % derive(seed, "verify2")],
                                "exit0", primary=True, opts=verify_opts, time_limit=a.hang_seconds + 120)
                    execute_pending()
                    if failure is not None:
                        break
                    if k == 0:
                        primary_state = to2
                elif k == 0:
                    primary_state = to
            # The lost-file check (engine F1-F5): one crash in six, the
            # recovered state with a file of the database removed must be
            # refused, not opened as if nothing were missing.
            lrng = Rng(derive(seed, "lose"))
            if failure is None and primary_state is not None and lrng.chance(1.0 / 6):
                remove = lrng.choice(LOST_FILE_CHOICES)
                steps.append({"type": "lose", "name": "lose", "from": primary_state, "to": I + "/lost",
                              "remove": ["db/" + r for r in remove]})
                stress_step("refuse", I + "/lost", ["--verification_only=1", "--seed=%d" % derive(seed, "refuse")],
                            "refused", primary=False, opts=verify_opts, time_limit=a.hang_seconds + 120)
                execute_pending()
        elapsed = time.monotonic() - t0

        # ---- the record ----
        results = [ex.results.get(i) for i in range(len(steps))]
        primary_reports = []
        for st, r in zip(steps, results):
            if r and st["type"] == "stress" and st.get("primary") and r.get("report"):
                primary_reports.append(r["report"])
        totals = sum_totals(primary_reports)
        mode_names = sorted({(r or {}).get("mode") for r in primary_reports if r and r.get("mode")})
        rid = "r%d-i%d-%d" % (run.index, index, seed)
        record = {
            "id": rid, "run": run.index, "run_seed": run.seed, "index": index, "seed": seed, "mode": self.mode,
            "started": started,
            "kind": plan["kind"] + ("" if plan["kind"] == "blackbox" else "/" + plan["kill_mode_name"]),
            "db": run.db_id, "db_age": run.db_age, "db_params": db, "params": params, "sanitizer_notes": notes,
            "plan": plan, "steps": [dict(s, result=r) for s, r in zip(steps, results)],
            "verdict": "fail" if failure else "pass", "failure": None, "elapsed": round(elapsed, 3),
            "totals": totals, "judging_mode": "/".join(mode_names) or None,
            "points": self.points_of([r.get("report") for r in results if r and r.get("report")]),
            "points_reached": self.reached_of([r.get("report") for r in results if r and r.get("report")]),
            # Restarts that did not come back, explained by an earlier
            # injection (the oracle's V8): counted apart, never a pass in
            # disguise, so a rising count shows.
            "by_design": [r["report"]["unrecoverable_by_design"] for st, r in zip(steps, results)
                          if r and st["type"] == "stress" and (r.get("report") or {}).get("unrecoverable_by_design")],
        }
        if failure:
            record["failure"] = dict(failure, step=fail_n, step_name=steps[fail_n]["name"])
        # ---- keep, promote or clean up ----
        if failure:
            run.failures += 1
            run.fresh = True
            dest = self.save_failure(run, iter_dir, rid, record, crashed_after, ex)
            record["artifacts"] = dest
            record["repro"] = "%s repro %s" % (shlex.quote(nice_path(os.path.join(REPO, "crashtest.py"))),
                                               shlex.quote(nice_path(dest)))
        else:
            run.db_age += 1
            run.fresh = False
            if primary_state is not None:
                # The first variant (after any second crash) carries on.
                new_state = subst(primary_state, ex.env)
                if a.keep_artifacts:
                    os.rename(run.state, os.path.join(iter_dir, "crashed"))
                    shutil.copytree(new_state, run.state, symlinks=True)
                else:
                    old = run.state + ".old"
                    shutil.rmtree(old, ignore_errors=True)
                    os.rename(run.state, old)
                    os.rename(new_state, run.state)
                    shutil.rmtree(old, ignore_errors=True)
            for r in primary_reports:
                if r.get("unrecoverable") or int(r.get("reports", 0) or 0) > 0:
                    run.fresh = True  # damage at rest would be a false alarm for the next process
            if not a.keep_artifacts:
                shutil.rmtree(iter_dir, ignore_errors=True)
            else:
                record["artifacts"] = iter_dir
        self.finish(record, run)

    def reached_of(self, reports):
        """{point: times reached} from stress's fault_points_reached (armed
        points of processes that wrote a report)."""
        pts = {}
        for r in reports:
            for k, v in ((r or {}).get("fault_points_reached") or {}).items():
                pts[k] = pts.get(k, 0) + int((v or {}).get("reached", 0) or 0)
        return pts

    def points_of(self, reports):
        pts = {}
        for r in reports:
            for k, v in ((r or {}).get("injections_per_point") or {}).items():
                pts[k] = pts.get(k, 0) + int(v or 0)
        return pts

    def save_failure(self, run, iter_dir, rid, record, crashed_after, ex):
        """Move the failed iteration's directory, with the crashed state and
        what repro needs, to REPORT/failures/ID."""
        base = os.path.join(self.report_dir, "failures")
        os.makedirs(base, exist_ok=True)
        dest = os.path.join(base, rid)
        n = 1
        while os.path.exists(dest):
            dest = os.path.join(base, "%s.%d" % (rid, n))
            n += 1
        if os.path.isdir(run.state):
            # The workload's crashed state (powerloss made copies: the state
            # itself is as the crash left it), or whatever the failure left.
            os.rename(run.state, os.path.join(iter_dir, "crashed" if crashed_after is not None else "end"))
        meta = {
            "crashtest_meta": META_VERSION, "id": rid, "mode": self.mode, "run_seed": run.seed, "seed": record["seed"],
            "index": record["index"], "kind": record["kind"], "db_params": record["db_params"],
            "params": record["params"], "plan": record["plan"], "max_key": self.a.max_key,
            "hang_seconds": self.a.hang_seconds, "steps": record["steps"], "failure": record["failure"],
            "crashed_after_step": crashed_after, "build": self.identity,
            "binaries": {"@STRESS@": "bin/stress", "@POWERLOSS@": "bin/powerloss"},
            "binaries_built_as": {"@STRESS@": self.stress, "@POWERLOSS@": self.powerloss},
            "paths": {"@STATE@": run.state, "@ITER@": iter_dir},
            "command_line": [sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
        }
        with open(os.path.join(iter_dir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        with open(os.path.join(iter_dir, "commands.sh"), "w") as f:
            f.write("#!/bin/sh\n# Iteration %s: the commands as they ran (paths of the work directory, since\n"
                    "# moved here: @STATE@ is crashed/ or start/, @ITER@ this folder; the binaries are\n"
                    "# copies of %s and %s, kept in bin/).\n"
                    "# Replay: %s repro %s\n\n" % (rid, self.stress, self.powerloss,
                                                    os.path.join(REPO, "crashtest.py"), dest))
            for i, s in enumerate(record["steps"]):
                r = s.get("result") or {}
                if s["type"] == "variant":
                    f.write("# step %d: variant %d of the power-loss step (crashtest copies the state)\n" % (i, s["k"]))
                    continue
                if s["type"] == "lose":
                    f.write("# step %d: the lost-file check copies %s to %s and removes %s\n" % (
                        i, s["from"], s["to"], " ".join(s["remove"])))
                    continue
                f.write("# step %d (%s): exit %s%s\n" % (i, s["name"], r.get("rc"),
                                                        ", SIGKILL after %.3f s" % s["kill_after"]
                                                        if s.get("kill_after") is not None else ""))
                f.write(shlex.join(subst(s["argv"], ex.env)) + "\n\n")
        os.makedirs(os.path.join(iter_dir, "bin"), exist_ok=True)
        for k, name in (("@STRESS@", "stress"), ("@POWERLOSS@", "powerloss")):
            shutil.copy2(self.bin[k], os.path.join(iter_dir, "bin", name))
        with open(os.path.join(iter_dir, "build.json"), "w") as f:
            json.dump(self.identity, f, indent=1, sort_keys=True)
        shutil.move(iter_dir, dest)
        return dest

    def finish(self, record, run):
        a = self.a
        with self.lock:
            # Seconds since the run began when this iteration's verdict was
            # in: the time to catch a bug (crashtest.py mutants).
            record["t_end"] = round(time.monotonic() - self.t0, 3)
            self.records.append(record)
            if record["failure"]:
                self.failed += 1
            self.jsonl.write(json.dumps(record, sort_keys=True) + "\n")
            self.jsonl.flush()
        plan = record["plan"]
        if plan["kind"] == "blackbox":
            how = "blackbox kill@%.2fs" % plan["kill_at"]
        elif plan.get("reopen"):
            how = "whitebox reopen×%d" % plan["reopen"]
        else:
            wl = (record["steps"][1 if record["steps"][0]["name"] == "create" else 0].get("result") or {})
            fired = wl.get("kill_points_fired") or []
            how = "whitebox kill 1/%d %s" % (plan["kill_random_test"],
                                             ("-> " + fired[0]) if fired else "(none fired)")
        crashed = any(s["type"] == "powerloss" for s in record["steps"])
        if crashed:
            how += " powerloss=%s×%d" % (plan["powerloss_mode"], plan["variants"])
            if any(s["name"].startswith("powerloss-2") for s in record["steps"]):
                how += " +recovery crash"
        opts = differs(dict(record["params"]), self.defaults)
        t = record["totals"]
        counts = "injected=%d detected=%d repaired=%d masked=%d" % (t["injected"], t["detected"], t["repaired"],
                                                                   t["masked"])
        if t["undetectable"]:
            counts += " undetectable=%d" % t["undetectable"]
        for d in record.get("by_design") or []:
            counts += " unrecoverable_by_design=[%s]" % d
        if record["judging_mode"] and record["judging_mode"] != "judging":
            counts += " (%s)" % record["judging_mode"]
        verdict = "pass" if not record["failure"] else "FAIL %s at %s" % (record["failure"]["kind"],
                                                                          record["failure"]["step_name"])
        self.p.line("run %d iter %d seed=%d %s | %s | %s | %s %.1fs" % (
            run.index, record["index"], record["seed"], how, " ".join(opts) or "defaults", counts, verdict,
            record["elapsed"]))
        if record["failure"]:
            self.p.line("    %s" % record["failure"]["message"])
            self.p.line("    artifacts: %s" % nice_path(record["artifacts"]))
            self.p.line("    repro: %s" % record["repro"])
            self.p.line("    rerun its parameters on a fresh database: %s %s --iteration-seed %d%s"
                        % (nice_path(os.path.join(REPO, "crashtest.py")), self.mode, record["seed"],
                           rerun_args(self.a)))

    # ---- the end ----
    def summarize(self, runs, interrupted):
        a = self.a
        recs = sorted(self.records, key=lambda r: (r["run"], r["index"]))
        classes = {c: {k: 0 for k in OUTCOMES + FAILURE_KEYS} for c in CLASS_ORDER}
        variants_judged = 0
        points = {}
        reached = {}
        for r in recs:
            for s in r["steps"]:
                res = s.get("result") or {}
                rep = res.get("report")
                if not rep:
                    continue
                if s["type"] == "stress" and not s.get("primary"):
                    variants_judged += 1
                    continue
                for c, counts in (rep.get("classes") or {}).items():
                    row = classes.setdefault(c, {k: 0 for k in OUTCOMES + FAILURE_KEYS})
                    for k in row:
                        row[k] += int((counts or {}).get(k, 0) or 0)
            for k, v in (r.get("points") or {}).items():
                points[k] = points.get(k, 0) + v
            for k, v in (r.get("points_reached") or {}).items():
                reached[k] = reached.get(k, 0) + v
        # The protection-bytes fuzzing: iterations, cache flips checked and
        # escapes per width w, against the 2^-8w a w-byte code lets through.
        widths = {}
        for r in recs:
            try:
                w = int(r["params"].get("block_protection_bytes_per_key", 0) or 0)
            except (TypeError, ValueError):
                continue
            row = widths.setdefault(w, {"iterations": 0, "checked": 0, "escaped": 0})
            row["iterations"] += 1
            for s in r["steps"]:
                rep = (s.get("result") or {}).get("report")
                if not rep or not s.get("primary"):
                    continue
                e = (rep.get("escape_rate_per_protection_width") or {}).get(str(w)) or {}
                row["checked"] += int(e.get("checked", 0) or 0)
                row["escaped"] += int(e.get("escaped", 0) or 0)
        engine_points = list(self.catalogue)
        hit = [p for p in engine_points if points.get(p)]
        other = sorted(p for p in points if p not in engine_points)
        nfail = sum(1 for r in recs if r["failure"])
        by_design = [r for r in recs if r.get("by_design")]
        by_design_what = {}
        for r in by_design:
            for d in r["by_design"]:
                what = d.split(" file=")[0]
                by_design_what[what] = by_design_what.get(what, 0) + 1
        measuring = sum(1 for r in recs if r.get("judging_mode") and "measuring" in r["judging_mode"])
        planted = sorted({(s.get("result") or {}).get("report", {}).get("planted_bug") for r in recs
                          for s in r["steps"] if ((s.get("result") or {}).get("report") or {}).get("planted_bug")})
        el = time.monotonic() - self.t0
        pl = self.p.line
        pl("")
        if planted:
            pl("crashtest: the engine under test carries planted bug(s) %s (tests/mutants.txt): a mutant, "
               "not the real engine" % ", ".join(planted))
        pl("crashtest: %s: %d iterations, %d failed, %d measuring, %d extra power-loss variants judged, %s"
           % (self.mode, len(recs), nfail, measuring, variants_judged, hms(el)))
        hdr = "%-18s %9s %9s %9s %9s %9s %9s %9s" % ("class", "injected", "detected", "repaired", "masked",
                                                     "undetect.", "by design", "failures")
        pl(hdr)
        for c in sorted(classes, key=lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else 99):
            row = classes[c]
            f = sum(row[k] for k in FAILURE_KEYS)
            if not any(row.values()):
                continue
            pl("%-18s %9d %9d %9d %9d %9d %9d %9d%s" % (
                c, row["injected"], row["detected"], row["repaired"], row["masked"], row["undetectable"],
                row["unrecoverable_by_design"], f,
                "  (" + ", ".join("%s=%d" % (k, row[k]) for k in FAILURE_KEYS if row[k]) + ")" if f else ""))
        if any(w for w in widths):
            pl("%-18s %10s %11s %9s %11s %11s" % ("per-KV protection", "iterations", "cache flips", "escaped",
                                                  "rate", "2^-8w"))
            for w in sorted(widths):
                row = widths[w]
                rate = "%.3g" % (row["escaped"] / row["checked"]) if row["checked"] else "-"
                pl("%-18s %10d %11d %9d %11s %11s" % ("w=%d" % w, row["iterations"], row["checked"], row["escaped"],
                                                     rate, "%.3g" % 2.0 ** (-8 * w) if w else "(none)"))
        pl("unrecoverable_by_design: %d of %d iterations%s" % (
            len(by_design), len(recs),
            " (" + ", ".join("%s x%d" % kv for kv in sorted(by_design_what.items())) + ")" if by_design_what else ""))
        if engine_points:
            pl("fault points hit: %d of %d engine points%s" % (
                len(hit), len(engine_points),
                "; never hit: " + ", ".join(p for p in engine_points if p not in hit) if len(hit) < len(engine_points)
                else ""))
            # Reached: armed and checked in a process that wrote a report
            # (a kill point that fired leaves none, so it may count as hit
            # and not reached).
            unfired = [p for p in engine_points if reached.get(p) and not points.get(p)]
            pl("fault points reached: %d of %d engine points%s" % (
                sum(1 for p in engine_points if reached.get(p)), len(engine_points),
                "; reached, never fired: " + ", ".join(unfired) if unfired else ""))
        if other:
            pl("injectors hit besides the engine's points: %s" % ", ".join(other))
        summary = {
            "tool": "crashtest.py", "mode": self.mode, "seed": a.seed, "iteration_seed": a.iteration_seed,
            "shard": "%d/%d" % a.shard, "jobs": a.jobs, "runs": [{"index": r.index, "seed": r.seed,
                                                                 "iterations": r.iterations,
                                                                 "failures": r.failures} for r in runs],
            "arguments": sys.argv[1:], "options": {k: v for k, v in vars(a).items() if k not in ("func",)},
            "build": self.identity, "unsupported_values": [list(u) for u in self.unsupported],
            "started": self.started_at, "elapsed_s": round(el, 3), "interrupted": interrupted,
            "iterations": recs, "failed": nfail, "measuring": measuring, "variants_judged": variants_judged,
            "unrecoverable_by_design": {"iterations": len(by_design), "explained_by": by_design_what},
            "classes": classes, "points_hit": points, "points_reached": reached, "engine_points": engine_points,
            "protection_widths": {str(w): v for w, v in sorted(widths.items())},
            "engine_points_never_hit": [p for p in engine_points if p not in hit],
            "planted_bugs": planted,
            "verdict": "fail" if nfail or interrupted or self.internal_error else "pass",
            "internal_error": self.internal_error,
        }
        write_json(os.path.join(self.report_dir, "summary.json"), summary)
        write_junit(os.path.join(self.report_dir, "junit.xml"), self.mode, recs, el)
        # An internal error of crashtest itself is never a pass: the runs
        # it stopped judged nothing (internal-error.txt has the trace).
        status = ("ERROR (crashtest itself failed: internal-error.txt)" if self.internal_error else
                  "PASS" if not nfail and not interrupted else
                  "INTERRUPTED" if interrupted and not nfail else "FAIL")
        pl("crashtest: %s (summary.json and junit.xml in %s)" % (status, self.report_dir))
        return nfail


def rerun_args(a):
    out = []
    if a.stress_binary_given:
        out.append("--stress-binary %s" % shlex.quote(a.stress_binary))
    for s in a.set or []:
        out.append("--set %s" % shlex.quote(s))
    if a.faults != MODE_DEFAULTS[a.mode]["faults"]:
        out.append("--faults %s" % a.faults)
    if a.measure:
        out.append("--measure")
    if a.powerloss_modes:
        out.append("--powerloss-modes %s" % ",".join(a.powerloss_modes))
    out.append("--max-key %d --interval %g" % (a.max_key, a.interval))
    return " " + " ".join(out)


def nice_path(p):
    """P relative to the current directory when it lies below it, else
    absolute; './x' for a bare name, so it can be pasted into a shell."""
    p = os.path.abspath(p)
    rel = os.path.relpath(p)
    if rel.startswith(".."):
        return p
    return rel if "/" in rel else "./" + rel


def hms(s):
    s = int(s)
    return "%02d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, default=str)
    os.replace(tmp, path)


def write_junit(path, mode, recs, elapsed):
    """One test case per iteration, one suite per run."""
    root = ET.Element("testsuites", name="crashtest", tests=str(len(recs)),
                      failures=str(sum(1 for r in recs if r["failure"])), time="%.3f" % elapsed)
    by_run = {}
    for r in recs:
        by_run.setdefault(r["run"], []).append(r)
    for run, rs in sorted(by_run.items()):
        suite = ET.SubElement(root, "testsuite", name="crashtest.%s.run%d" % (mode, run), tests=str(len(rs)),
                              failures=str(sum(1 for r in rs if r["failure"])), errors="0", skipped="0",
                              time="%.3f" % sum(r["elapsed"] for r in rs), hostname=socket.gethostname())
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="run_seed", value=str(rs[0]["run_seed"]))
        for r in rs:
            tc = ET.SubElement(suite, "testcase", classname="crashtest.%s.run%d" % (mode, run),
                               name="iteration %d seed %d (%s)" % (r["index"], r["seed"], r["kind"]),
                               time="%.3f" % r["elapsed"])
            if r["failure"]:
                f = r["failure"]
                el = ET.SubElement(tc, "failure", type=f["kind"], message="%s at %s: %s" % (
                    f["kind"], f["step_name"], f["message"]))
                st = r["steps"][f["step"]].get("result") or {}
                el.text = "%s\n\nartifacts: %s\nrepro: %s\n" % (st.get("output_tail", ""), r.get("artifacts"),
                                                                r.get("repro"))
            out = ET.SubElement(tc, "system-out")
            out.text = json.dumps({"params": r["params"], "db_params": r["db_params"], "totals": r["totals"]},
                                  sort_keys=True)
    tree = ET.ElementTree(root)
    tmp = path + ".tmp"
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# repro RUN_DIR
# ---------------------------------------------------------------------------

def repro(a, printer):
    """Replay a failed iteration from its folder: from the crashed state when
    the failure came after the crash, else from the start snapshot; the
    recorded steps run again with the same seeds and options, each command
    printed.  Exit 1 when it fails again (reproduced), 0 when it passes."""
    d = os.path.abspath(a.run_dir)
    mpath = os.path.join(d, "meta.json")
    if not os.path.isfile(mpath):
        raise UsageError("%s has no meta.json: give the folder of a failed iteration (REPORT/failures/ID)" % a.run_dir)
    try:
        with open(mpath) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError("cannot read %s: %s" % (mpath, e))
    if meta.get("crashtest_meta") != META_VERSION:
        raise UsageError("%s was written by another version of crashtest.py" % mpath)
    steps = meta["steps"]
    failure = meta.get("failure")
    fail_n = failure["step"] if failure else len(steps) - 1
    crashed_after = meta.get("crashed_after_step")
    start_from = a.start
    if start_from == "auto":
        start_from = "crashed" if crashed_after is not None and fail_n > crashed_after else "start"
    if start_from == "crashed" and crashed_after is None:
        raise UsageError("this iteration never crashed: replay with --from start")
    snap = os.path.join(d, "crashed" if start_from == "crashed" else "start")
    if not os.path.isdir(snap):
        raise UsageError("%s is missing" % snap)
    binaries = {k: os.path.join(d, v) for k, v in meta["binaries"].items()}
    if a.stress_binary:
        binaries["@STRESS@"] = os.path.abspath(a.stress_binary)
    if a.powerloss_binary:
        binaries["@POWERLOSS@"] = os.path.abspath(a.powerloss_binary)
    check_binary(binaries["@STRESS@"], "stress")
    check_binary(binaries["@POWERLOSS@"], "powerloss")
    build = meta.get("build") or {}
    for key, name in (("@STRESS@", "stress"), ("@POWERLOSS@", "powerloss")):
        want = (build.get(name) or {}).get("sha256")
        have = sha256_of(binaries[key])
        if want and have != want:
            printer.line("crashtest: note: %s differs from the binary that failed (sha256 %s, was %s)"
                         % (binaries[key], have[:12], want[:12]))
    work = os.path.abspath(a.work_dir) if a.work_dir else tempfile.mkdtemp(prefix="crashtest-repro-")
    os.makedirs(work, exist_ok=True)
    state = os.path.join(work, "state")
    it = os.path.join(work, "iter")
    for p in (state, it):
        if os.path.exists(p):
            raise UsageError("%s exists: give an empty --work-dir" % p)
    shutil.copytree(snap, state, symlinks=True)
    os.makedirs(it)
    if start_from == "crashed":
        # Outputs of steps before the crash point are not needed, but their
        # folders are where the replayed steps write.
        first = crashed_after + 1
    else:
        first = 0
    f = failure or {}
    printer.line("crashtest: repro of %s (%s, seed %s): %s at step %d (%s), replaying steps %d..%d from %s/"
                 % (meta["id"], meta["kind"], meta["seed"], f.get("kind", "?"), fail_n,
                    steps[fail_n]["name"], first, fail_n, start_from))
    env = {"@STATE@": state, "@ITER@": it, "@STRESS@": binaries["@STRESS@"], "@POWERLOSS@": binaries["@POWERLOSS@"]}
    ex = Executor(env, meta.get("hang_seconds", 120), log=printer.line, echo=True)
    # A variant step needs its power-loss step's ledger offset: replayed too.
    got = None
    diverged = None
    for n in range(first, fail_n + 1):
        step = {k: v for k, v in steps[n].items() if k != "result"}
        if a.dry_run:
            ex.print_step(step)
            continue
        r = ex.run(n, step)
        what = r["outcome"]
        if step["type"] == "stress":
            rep = r.get("report") or {}
            what += " (exit %s%s)" % (r["rc"], ", verdict %s" % rep.get("verdict") if rep else "")
        printer.line("    -> %s" % what)
        if r["failure"]:
            got = dict(r["failure"], step=n)
            for line in (r.get("output_tail") or "").splitlines()[-15:]:
                printer.line("    | " + line)
            break
        recorded = (steps[n].get("result") or {}).get("outcome")
        if step["type"] == "stress" and recorded in ("crashed", "passed") and r["outcome"] != recorded:
            # The steps after this one were planned on its recorded outcome
            # (a crash brings a power-loss step and a restart): replaying
            # them after a different one would judge a state no run makes.
            diverged = (n, recorded, r["outcome"])
            break
    if a.dry_run:
        return EXIT_PASS
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        printer.line("crashtest: replay kept in %s" % work)
    if got is None and diverged:
        printer.line("crashtest: NOT reproduced: the replay diverged at step %d (%s): recorded %s, replayed %s; "
                     "the later steps depend on it (the failure was %s: %s)"
                     % (diverged[0], steps[diverged[0]]["name"], diverged[1], diverged[2], f.get("kind"),
                        f.get("message")))
        return EXIT_PASS
    if got is None:
        printer.line("crashtest: NOT reproduced: every replayed step passed (the failure was %s: %s)"
                     % (f.get("kind"), f.get("message")))
        return EXIT_PASS
    same = got["kind"] == f.get("kind") and got["step"] == fail_n
    if same:
        printer.line("crashtest: reproduced: %s at step %d (%s): %s" % (got["kind"], fail_n, steps[fail_n]["name"],
                                                                      got["message"]))
    else:
        printer.line("crashtest: failed differently: %s at step %d (%s) (recorded: %s at step %d): %s"
                     % (got["kind"], got["step"], steps[got["step"]]["name"], f.get("kind"), fail_n, got["message"]))
    return EXIT_FAIL


# ---------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------

MODE_DEFAULTS = {
    # duration, interval, max_key, db_iterations, max_variants, hang_seconds, faults
    "blackbox": dict(duration=3600, interval=15.0, max_key=20000, db_iterations=20, max_variants=3, hang_seconds=120,
                     faults="all"),
    "whitebox": dict(duration=3600, interval=15.0, max_key=20000, db_iterations=20, max_variants=3, hang_seconds=120,
                     faults="all"),
    "simple": dict(duration=120, interval=3.0, max_key=2000, db_iterations=4, max_variants=2, hang_seconds=60,
                   faults="stable"),
}

MODE_HELP = {
    "blackbox": "SIGKILL stress after a random interval, power loss, restart and judge; repeat",
    "whitebox": "kill points inside the engine (odds rotated; some in recovery), or reopen without a kill; "
                "power loss, restart and judge; repeat",
    "simple": "a short, small mix of blackbox and whitebox iterations (CI, a quick check)",
    "repro": "replay a failed iteration from its artifacts (REPORT_DIR/failures/ID)",
    "mutants": "run simple against each planted bug of tests/mutants.txt: caught or not, time to catch",
}


# ---------------------------------------------------------------------------
# The mutants mode (issue 13): how much the harness catches, measured.
#
# tests/mutants.txt lists planted bugs, each a compile-time switch
# ENG_BROKEN_<NAME> in the engine or the fault library.  For each bug the
# mode builds build/mutants/NAME/{stress,powerloss} (the Makefile's rules),
# runs `crashtest.py simple` against it until the first failure or the
# budget, and records whether it was caught, how fast, as what and which
# fault class the failing report blamed.  A bug that ran its whole budget
# as PASS is a hole in the harness, and the mode exits 1.
#
# The run's seed derives each bug's simple seed (derive(seed, "mutant",
# NAME)), so `crashtest.py mutants --seed S NAME` replays one bug's run.
# The stress binary must say it carries the bug (its report's planted_bug):
# a mutant run can never measure the real engine by mistake.
# ---------------------------------------------------------------------------

MUTANTS_FILE = os.path.join(REPO, "tests", "mutants.txt")
MUTANT_GRACE_S = 240  # an iteration in flight at the budget may finish


class Mutant:
    def __init__(self, name, guarantee, bug, line):
        self.name, self.guarantee, self.bug, self.line = name, guarantee, bug, line

    @property
    def macro(self):
        return "ENG_BROKEN_" + self.name.upper().replace("-", "_")


def read_mutants(path=MUTANTS_FILE):
    """The catalogue: [Mutant] in file order.  A malformed line is a usage
    error naming it (the Makefile reads the same file)."""
    out, seen = [], set()
    try:
        f = open(path)
    except OSError as e:
        raise UsageError("cannot read the catalogue %s: %s" % (path, e.strerror))
    with f:
        for n, line in enumerate(f, 1):
            t = line.strip()
            if not t or t.startswith("#"):
                continue
            parts = t.split(None, 2)
            if len(parts) < 3 or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", parts[0]):
                raise UsageError("%s:%d: want 'NAME GUARANTEE description' (NAME in lower-case-with-dashes)"
                                 % (path, n))
            if parts[0] in seen:
                raise UsageError("%s:%d: %s listed twice" % (path, n, parts[0]))
            seen.add(parts[0])
            out.append(Mutant(parts[0], parts[1], parts[2], n))
    return out


def pick_by_date(names, day=None):
    """One of NAMES chosen by the UTC date: CI's daily smoke mutant."""
    day = datetime.datetime.now(datetime.timezone.utc).date() if day is None else day
    return names[day.toordinal() % len(names)]


def blamed_classes(record):
    """Fault classes whose counts in the failing step's report hold a
    failure key: the class the oracle blamed ('none' when the failure came
    without one, e.g. a lost commit or a crash)."""
    f = record.get("failure") or {}
    steps = record.get("steps") or []
    n = f.get("step")
    if n is None or n >= len(steps):
        return []
    rep = (steps[n].get("result") or {}).get("report") or {}
    out = []
    for c, counts in sorted((rep.get("classes") or {}).items()):
        if any(int((counts or {}).get(k, 0) or 0) for k in FAILURE_KEYS):
            out.append(c)
    return out


def mutant_result(m, summary, budget, seed, rc):
    """mutants.json's entry for M from its simple run's SUMMARY."""
    recs = sorted(summary.get("iterations") or [], key=lambda r: r.get("t_end", 0))
    failed = [r for r in recs if r.get("failure")]
    res = {"name": m.name, "guarantee": m.guarantee, "bug": m.bug, "macro": m.macro, "seed": seed,
           "budget_s": budget, "iterations": len(recs), "elapsed_s": summary.get("elapsed_s"),
           "caught": bool(failed), "seconds": None, "iterations_to_catch": None, "kind": None,
           "keys": [], "classes": [], "message": None, "step": None, "repro": None,
           "planted_bug_seen": sorted(set(summary.get("planted_bugs") or []))}
    if failed:
        first = failed[0]
        f = first["failure"]
        res.update(seconds=first.get("t_end"), iterations_to_catch=recs.index(first) + 1, kind=f.get("kind"),
                   keys=f.get("keys") or [], classes=blamed_classes(first), message=f.get("message"),
                   step=f.get("step_name"), repro=first.get("repro"))
    elif summary.get("internal_error"):
        res["error"] = True
        res["message"] = "crashtest itself failed (internal-error.txt): nothing was measured"
    elif rc not in (EXIT_PASS, EXIT_FAIL):
        res["error"] = True
        res["message"] = "the simple run ended with exit %s" % rc
    return res


def real_check(r, summary, build, simple_args):
    """Replay the failed iteration from its start with the real binaries
    (BUILD/stress, BUILD/powerloss).  If the real engine fails it the same
    way, the failure is no evidence of the planted bug (a flake of the
    harness or an engine bug of its own): not caught, and said so."""
    first = sorted((i for i in summary.get("iterations") or [] if i.get("failure")), key=lambda i: i.get("t_end", 0))
    art = first[0].get("artifacts") if first else None
    stress, powerloss = os.path.join(build, "stress"), os.path.join(build, "powerloss")
    if not art or not os.path.isdir(art) or not os.access(stress, os.X_OK):
        r["real_engine_replay"] = "not run"
        return
    cmd = [sys.executable, os.path.join(REPO, "crashtest.py"), "repro", art, "--from", "start",
           "--stress-binary", stress, "--powerloss-binary", powerloss]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=600, cwd=REPO)
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        rc, out = None, ""
    # Only the same failure at the same step is the real engine's own: a
    # different one (a bug that changes the file format leaves a start
    # state the real engine cannot even read) says nothing either way.
    same = rc == 1 and "crashtest: reproduced:" in out
    r["real_engine_replay"] = ("passes" if rc == 0 else "fails" if same else
                               "fails differently" if rc == 1 else "error")
    if same:
        r["caught"] = False
        r["message"] = ("the real engine fails the same iteration replayed from its start: the failure (%s) is "
                        "no evidence of this bug" % r["kind"])


def mutants_table(doc):
    """The catalogue with this run's figures, as the Markdown table the
    README keeps (REPORT_DIR/mutants.md)."""
    rows = ["| planted bug | guarantee | caught in | as | class blamed |", "|---|---|---|---|---|"]
    for r in doc["mutants"]:
        if r["caught"]:
            when = "%.1f s (%d it.)" % (r["seconds"], r["iterations_to_catch"])
        elif r.get("error"):
            when = "error"
        else:
            when = "**missed** (%g s)" % r["budget_s"]
        rows.append("| `%s` | %s | %s | %s | %s |" % (r["name"], r["guarantee"], when,
                                                    (r["kind"] if r["caught"] else None) or "-",
                                                    ", ".join(r["classes"] if r["caught"] else []) or "-"))
    rows.append("")
    rows.append("%s (budget %g s, -j %d, seed %d)." % (doc["summary_line"], doc["budget_s"], doc["jobs"], doc["seed"]))
    return "\n".join(rows) + "\n"


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def median_time_to_catch(results):
    """The median of the catch times, a missed bug counting as never
    caught (inf); None for no results."""
    return median([r["seconds"] if r["caught"] else float("inf") for r in results])


def mutation_score_line(results):
    """'mutation score: K of N caught, median time to catch T s'.  A missed
    bug counts as never caught (infinitely slow), so the median is honest:
    when half the bugs were missed it is '> budget'."""
    caught = [r for r in results if r["caught"]]
    med = median_time_to_catch(results)
    if med is None:
        t = "-"
    elif med == float("inf"):
        t = "> %g" % max(r["budget_s"] for r in results)
    else:
        t = "%.1f" % med
    return "mutation score: %d of %d caught, median time to catch %s s" % (len(caught), len(results), t)


def mutants_mode(a, argv):
    try:
        a.simple_args = shlex.split(a.simple_opts)
    except ValueError as e:
        raise UsageError("--simple: %s" % e)
    catalogue = read_mutants(a.catalogue)
    by_name = {m.name: m for m in catalogue}
    unknown = [n for n in a.names if n not in by_name]
    if unknown:
        raise UsageError("not in %s: %s (known: %s)" % (nice_path(a.catalogue), ", ".join(unknown),
                                                         ", ".join(by_name)))
    names = a.names or [m.name for m in catalogue]
    if a.pick_by_date:
        names = [pick_by_date(names)]
    chosen = [by_name[n] for n in names]
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    build = os.path.abspath(a.build_dir)
    report_dir = a.report_dir or os.path.join(REPO, "build", "crashtest", "mutants-%s-%d" % (
        datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), os.getpid()))
    os.makedirs(report_dir, exist_ok=True)
    p = Printer(tty=False)
    p.line("crashtest: mutants: %d planted bugs, budget %g s each, -j %d, seed %d, reports in %s"
           % (len(chosen), a.budget, a.jobs, a.seed, nice_path(report_dir)))
    results = []
    t0 = time.monotonic()
    for m in chosen:
        if STOP.is_set():
            break
        stress = os.path.join(build, "mutants", m.name, "stress")
        powerloss = os.path.join(build, "mutants", m.name, "powerloss")
        if not a.no_build:
            mk = subprocess.run(["make", "-s", "BUILD=%s" % os.path.relpath(build, REPO), os.path.relpath(stress, REPO),
                                 os.path.relpath(powerloss, REPO)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            if mk.returncode != 0:
                p.line("mutant %s: BUILD FAILED\n%s" % (m.name, mk.stdout[-2000:]))
                results.append(dict(mutant_result(m, {}, a.budget, None, None), build_failed=True,
                                    message="make failed: %s" % last_line(mk.stdout)))
                continue
        for b in (stress, powerloss):
            if not os.access(b, os.X_OK):
                raise UsageError("%s is missing (build it with make %s, or drop --no-build)" % (b, b))
        seed = derive(a.seed, "mutant", m.name)
        rd = os.path.join(report_dir, m.name)
        cmd = [sys.executable, os.path.join(REPO, "crashtest.py"), "simple", "--duration", "%g" % a.budget,
               "--max-failures", "1", "-j", str(a.jobs), "--seed", str(seed), "--stress-binary", stress,
               "--powerloss-binary", powerloss, "--report-dir", rd] + a.simple_args
        with open(os.path.join(report_dir, m.name + ".log"), "w") as log:
            child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
            deadline = time.monotonic() + a.budget + MUTANT_GRACE_S
            while child.poll() is None:
                if STOP.is_set() or time.monotonic() > deadline:
                    # simple writes its reports on SIGTERM
                    os.killpg(child.pid, signal.SIGTERM)
                    try:
                        child.wait(60)
                    except subprocess.TimeoutExpired:
                        os.killpg(child.pid, signal.SIGKILL)
                        child.wait()
                    break
                time.sleep(0.2)
        try:
            with open(os.path.join(rd, "summary.json")) as f:
                summary = json.load(f)
        except (OSError, ValueError):
            summary = {}
        r = mutant_result(m, summary, a.budget, seed, child.returncode)
        # The binary must carry the bug it is said to carry.
        if r["planted_bug_seen"] and r["planted_bug_seen"] != [m.name]:
            r["caught"] = False
            r["message"] = "the stress binary reported planted bug(s) %s, not %s" % (r["planted_bug_seen"], m.name)
        if r["caught"] and summary:
            real_check(r, summary, build, a.simple_args)
        r["rerun"] = "%s mutants --seed %d --budget %g -j %d %s" % (
            nice_path(os.path.join(REPO, "crashtest.py")), a.seed, a.budget, a.jobs, m.name)
        results.append(r)
        if r["caught"]:
            p.line("mutant %-32s caught in %6.1f s (%d iterations) as %s%s; the real engine %s the replay" % (
                m.name, r["seconds"], r["iterations_to_catch"], r["kind"],
                " [class %s]" % ",".join(r["classes"]) if r["classes"] else "",
                r.get("real_engine_replay", "not run")))
            if r["repro"]:
                p.line("    repro: %s" % r["repro"])
        elif r.get("error"):
            p.line("mutant %-32s ERROR: %s" % (m.name, r["message"]))
        else:
            p.line("mutant %-32s MISSED: %d iterations passed in %s s%s" % (
                m.name, r["iterations"], r["elapsed_s"], ("  (%s)" % r["message"]) if r["message"] else ""))
    line = mutation_score_line(results) if results else "mutation score: nothing run"
    p.line(line)
    med = median_time_to_catch(results)
    doc = {"tool": "crashtest.py", "mode": "mutants", "seed": a.seed, "budget_s": a.budget, "jobs": a.jobs,
           "catalogue": nice_path(a.catalogue), "elapsed_s": round(time.monotonic() - t0, 3),
           "score": {"caught": sum(1 for r in results if r["caught"]), "total": len(results),
                     "median_seconds": med if med is not None and med != float("inf") else None},
           "summary_line": line, "interrupted": STOP.is_set(), "mutants": results}
    write_json(os.path.join(report_dir, "mutants.json"), doc)
    with open(os.path.join(report_dir, "mutants.md"), "w") as f:
        f.write(mutants_table(doc))
    if a.build_dir == "build" or os.path.abspath(a.build_dir) == os.path.join(REPO, "build"):
        write_json(os.path.join(REPO, "build", "mutants.json"), doc)
    p.line("crashtest: mutants.json: %s" % nice_path(os.path.join(report_dir, "mutants.json")))
    if STOP.is_set():
        return EXIT_FAIL
    return EXIT_PASS if results and all(r["caught"] for r in results) else EXIT_FAIL


def positive_int(s):
    try:
        v = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % s)
    if v < 0:
        raise argparse.ArgumentTypeError("%r is negative" % s)
    return v


def bounded(name, parse, ok, message):
    """An argparse type: PARSE the text, then require OK(value)."""
    def check(s):
        v = parse(s)
        if not ok(v):
            raise argparse.ArgumentTypeError(message.replace("{text}", repr(s)))
        return v
    check.__name__ = name
    return check


seed_int = bounded("seed_int", positive_int, lambda v: v < 1 << 64, "{text} does not fit 64 bits")
at_least_one = bounded("at_least_one", positive_int, lambda v: v >= 1, "must be at least 1")


def seconds(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % s)
    if not v >= 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % s)
    return v


positive_seconds = bounded("positive_seconds", seconds, lambda v: v >= 0.5, "must be at least 0.5 s")


def powerloss_list(s):
    modes = [m.strip() for m in s.split(",") if m.strip()]
    names = [m for m, _ in POWERLOSS_MODES]
    bad = [m for m in modes if m not in names]
    if bad or not modes:
        raise argparse.ArgumentTypeError("%r: want a comma list of %s" % (s, ", ".join(names)))
    return modes


def shard(s):
    m = re.fullmatch(r"(\d+)/(\d+)", s.strip())
    if not m:
        raise argparse.ArgumentTypeError("%r: want K/N, e.g. 0/4" % s)
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or k >= n:
        raise argparse.ArgumentTypeError("%r: want 0 <= K < N" % s)
    return (k, n)


class HelpFormatter(argparse.HelpFormatter):
    """Each option's default, when it has one worth showing."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=34, width=100)

    def _get_help_string(self, action):
        h = action.help or ""
        d = action.default
        if "default" in h or d is None or d is False or d == [] or d == argparse.SUPPRESS:
            return h
        return h + " (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, "%s: error: %s\n" % (self.prog, message))


def make_parser():
    fmt = HelpFormatter
    p = Parser(prog="crashtest.py", description="Nightly crash tests of the engine through build/stress "
               "(DESIGN 6).  Exit: 0 every iteration passed, 1 a failure, 2 usage.  "
               "'crashtest.py MODE --help' lists each mode's options with their defaults.",
               formatter_class=fmt)
    sub = p.add_subparsers(dest="mode", metavar="MODE", parser_class=Parser)
    for mode in ("blackbox", "whitebox", "simple"):
        d = MODE_DEFAULTS[mode]
        s = sub.add_parser(mode, help=MODE_HELP[mode], description=MODE_HELP[mode] + ".", formatter_class=fmt)
        g = s.add_argument_group("length")
        g.add_argument("--duration", type=seconds, default=d["duration"], metavar="S",
                       help="start no iteration after S seconds (0: no limit; with --iterations and no "
                            "--duration, no limit)")
        g.add_argument("--iterations", type=positive_int, default=0, metavar="N",
                       help="iterations per run (0: until --duration)")
        g.add_argument("--interval", type=positive_seconds, default=d["interval"], metavar="S",
                       help="blackbox: longest time before the SIGKILL; whitebox: longest run of one stress process")
        g.add_argument("--max-failures", type=positive_int, default=10, metavar="N",
                       help="stop once N iterations failed (0: never)")
        g = s.add_argument_group("seeds and parallelism")
        g.add_argument("--seed", type=seed_int, default=None, metavar="N",
                       help="run seed (default: random, printed)")
        g.add_argument("--iteration-seed", type=seed_int, default=None, metavar="N",
                       help="run exactly the iteration with this seed, on a fresh database")
        g.add_argument("-j", "--jobs", type=at_least_one, default=1, metavar="N",
                       help="independent runs in parallel on this machine")
        g.add_argument("--shard", type=shard, default="0/1", metavar="K/N",
                       help="run only slice K (0-based) of N of the seed space: runs K, K+N, K+2N ... (one "
                            "per -j)")
        g = s.add_argument_group("what is drawn")
        g.add_argument("--max-key", type=at_least_one, default=d["max_key"], metavar="N",
                       help="key space of stress, fixed for the run")
        g.add_argument("--threads", type=positive_int, default=0, metavar="N",
                       help="stress threads (0: drawn per iteration)")
        g.add_argument("--faults", default=d["faults"], metavar="LIST",
                       help="fault classes that may be drawn: all; stable (%s); none; or a comma list of %s" % (
                           "all but %s, which trip open engine leads" % ", ".join(UNSTABLE_FAULTS)
                           if UNSTABLE_FAULTS else "all, for now", ", ".join(FAULTS)))
        g.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="pin a stress option for every iteration (repeatable), e.g. --set sync_mode=commit")
        g.add_argument("--measure", action="store_true",
                       help="allow measuring runs: combinations that make a fault class undetectable by design "
                            "(checksums off with page faults, w=0 with cache flips, lost writes ...)")
        g.add_argument("--db-iterations", type=at_least_one, default=d["db_iterations"], metavar="N",
                       help="iterations on one database before a fresh one (new creation-time options)")
        g.add_argument("--max-variants", type=at_least_one, default=d["max_variants"], metavar="K",
                       help="most power-loss states judged per crash")
        g.add_argument("--powerloss-modes", type=powerloss_list, default=None, metavar="LIST",
                       help="power-loss modes to draw from: a comma list of rollback, tear, mixed, keep "
                            "(default: all that keep the run judgeable; tearing needs checksums and "
                            "full-page writes)")
        g = s.add_argument_group("files and binaries")
        g.add_argument("--report-dir", default=None, metavar="DIR",
                       help="summary.json, junit.xml, failures/ (default: build/crashtest/MODE-DATE-PID)")
        g.add_argument("--work-dir", default=None, metavar="DIR",
                       help="databases and iteration scratch (default: a temporary directory, removed)")
        g.add_argument("--keep-artifacts", action="store_true",
                       help="keep every iteration's directory, not only failed ones")
        g.add_argument("--stress-binary", default=None, metavar="PATH",
                       help="the stress driver (default: build/stress)")
        g.add_argument("--powerloss-binary", default=None, metavar="PATH",
                       help="the power-loss step (default: build/powerloss)")
        g = s.add_argument_group("watchdog and output")
        g.add_argument("--hang-seconds", type=at_least_one, default=d["hang_seconds"], metavar="S",
                       help="no progress for S seconds is a hang (stress's own watchdog; crashtest's ends the "
                            "process min(S, 30) s later)")
        g.add_argument("-v", "--verbose", action="store_true", help="print every command")
        s.set_defaults(func=run_mode)
    r = sub.add_parser("repro", help=MODE_HELP["repro"], formatter_class=fmt,
                       description="Replay a failed iteration from its saved artifacts (REPORT_DIR/failures/ID): "
                                   "the same seeds, options and crashed state; each command is printed.  Exit 1 "
                                   "when it fails again, 0 when it passes, 2 usage.")
    r.add_argument("run_dir", metavar="RUN_DIR", help="the failed iteration's folder")
    r.add_argument("--from", dest="start", choices=["auto", "crashed", "start"], default="auto",
                   help="replay from the crashed state (after the crash) or from the iteration's start")
    r.add_argument("--stress-binary", default=None, metavar="PATH",
                   help="another stress binary (a fix to try; default: the recorded one)")
    r.add_argument("--powerloss-binary", default=None, metavar="PATH", help="another powerloss binary")
    r.add_argument("--work-dir", default=None, metavar="DIR", help="where to replay (default: a temporary directory)")
    r.add_argument("--keep", action="store_true", help="keep the replay's directory")
    r.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    r.set_defaults(func=repro_mode)
    m = sub.add_parser("mutants", help=MODE_HELP["mutants"], formatter_class=fmt,
                       description="For each planted bug of the catalogue (tests/mutants.txt): build "
                                   "build/mutants/NAME/{stress,powerloss}, run 'crashtest.py simple' against it "
                                   "until the first failure or the budget, and record caught or not, seconds and "
                                   "iterations to the first failure, its kind, the fault class blamed and the "
                                   "repro line in REPORT_DIR/mutants.json.  Prints 'mutation score: K of N caught, "
                                   "median time to catch T s'.  Exit: 0 every bug caught, 1 one missed (or "
                                   "interrupted), 2 usage.")
    m.add_argument("names", nargs="*", metavar="NAME", help="planted bugs to run (default: the whole catalogue)")
    m.add_argument("--budget", type=positive_seconds, default=300.0, metavar="S",
                   help="longest simple run per bug (its --duration)")
    m.add_argument("-j", "--jobs", type=at_least_one, default=1, metavar="N", help="simple's -j for each bug")
    m.add_argument("--seed", type=seed_int, default=None, metavar="N",
                   help="seed of the whole measurement; each bug's simple seed derives from it and its name "
                        "(default: random, printed)")
    m.add_argument("--pick-by-date", action="store_true",
                   help="run one of the NAMEs (or of the catalogue) chosen by today's UTC date: CI's smoke check")
    m.add_argument("--simple", dest="simple_opts", default="", metavar="ARGS",
                   help="more options for each simple run, one shell-quoted string (e.g. '--faults none')")
    m.add_argument("--catalogue", default=MUTANTS_FILE, metavar="FILE", help="the list of planted bugs")
    m.add_argument("--build-dir", default="build", metavar="DIR", help="the Makefile's BUILD")
    m.add_argument("--no-build", action="store_true", help="use the binaries already in BUILD/mutants/")
    m.add_argument("--report-dir", default=None, metavar="DIR",
                   help="mutants.json, one simple report dir and log per bug (default: "
                        "build/crashtest/mutants-DATE-PID; build/mutants.json gets a copy)")
    m.set_defaults(func=mutants_mode)
    return p


def run_mode(a, argv):
    given = set()
    for x in argv:
        if x.startswith("--"):
            given.add(x[2:].split("=")[0])
    if a.iterations and "duration" not in given:
        a.duration = 0
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    if a.iteration_seed is not None and (a.jobs != 1 or a.shard != (0, 1)):
        raise UsageError("--iteration-seed runs one iteration: -j and --shard do not apply")
    a.stress_binary_given = a.stress_binary is not None
    if a.stress_binary is None:
        a.stress_binary = os.path.join(REPO, "build", "stress")
    if a.powerloss_binary is None:
        a.powerloss_binary = os.path.join(os.path.dirname(os.path.abspath(a.stress_binary)), "powerloss")
        if not os.path.exists(a.powerloss_binary):
            a.powerloss_binary = os.path.join(REPO, "build", "powerloss")
    printer = Printer()
    ct = CrashTest(a, printer)
    try:
        ct.setup()
        runs = ct.go()
        interrupted = STOP.is_set()
        if interrupted:
            printer.line("crashtest: interrupted")
        nfail = ct.summarize(runs, interrupted)
    finally:
        printer.clear_progress()
        if ct.work and ct.own_work and not a.keep_artifacts:
            shutil.rmtree(ct.work, ignore_errors=True)
        elif ct.work and a.keep_artifacts:
            printer.line("crashtest: work dir kept: %s" % ct.work)
    return EXIT_FAIL if (nfail or interrupted or ct.internal_error) else EXIT_PASS


def repro_mode(a, argv):
    return repro(a, Printer(tty=False))


def on_signal(signum, frame):
    if STOP.is_set():
        # A second ^C: stop now.
        raise KeyboardInterrupt
    STOP.set()
    sys.stderr.write("\ncrashtest: %s: stopping (killing the running processes, writing the reports)\n"
                     % signal_name(signum))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = make_parser()
    a = p.parse_args(argv)
    if not getattr(a, "func", None):
        p.print_help(sys.stderr)
        return EXIT_USAGE
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
    try:
        return a.func(a, argv)
    except UsageError as e:
        sys.stderr.write("crashtest.py: %s\n" % e)
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("crashtest.py: interrupted\n")
        return EXIT_FAIL
    except OSError as e:
        sys.stderr.write("crashtest.py: %s\n" % e)
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
