#!/usr/bin/env python3
"""Swarm iterations and the delay draw of crashtest (crashtest/params.py
draw_swarm, draw_delays; crashtest/steps.py): a swarm is drawn from the
iteration seed alone, turns whole features off and the others up, shrinks
the key space of the database it creates, never moves the draws of an
iteration without one, loses to --set, and is reported beside a failure.
Delays are drawn only for a binary that has the options.

Run: python3 -m unittest tests/test_swarm.py (stdlib only; no binary)."""

import io
import json
import os
import sys
import tempfile
import threading
import types
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from crashtest.htmlreport import failures_section  # noqa: E402
from crashtest.mutants import mutants_table  # noqa: E402
from crashtest.params import (  # noqa: E402
    CLASS_ORDER,
    DB_CHOICES,
    DB_EXTRA,
    DELAY_CHOICES,
    DELAY_HOT_ONE_IN,
    DELAY_OPTIONS,
    DELAY_SITES,
    FAILURE_KEYS,
    FAULT_OPTIONS,
    FAULTS,
    ITER_CHOICES,
    OUTCOMES,
    SWARM_FEATURES,
    SWARM_PHASE_OPS,
    SWARM_TINY_KEYS,
    Config,
    draw_db_params,
    draw_iter_params,
    draw_swarm,
    swarm_record,
    swarm_text,
    unjudgeable_reason,
)
from crashtest.report import write_junit  # noqa: E402
from crashtest.repro import rerun_line  # noqa: E402
from crashtest.run import CrashTest, Run  # noqa: E402
from crashtest.seeds import iteration_seed  # noqa: E402
from crashtest.steps import new_database, opt_args, swarm_reopen, verify_options  # noqa: E402

PERCENTS = ("readpercent", "writepercent", "delpercent", "iterpercent")
# Every option the draw knew before the swarm and the delays: the pinned
# dicts below were drawn with exactly these.
BEFORE = (
    set(DB_CHOICES)
    | set(DB_EXTRA)
    | (set(ITER_CHOICES) - {"cache_pages"})
    | {"cache_size"}
    | set(PERCENTS)
    | set(FAULT_OPTIONS)
)

# draw_iter_params(seed, Config(), draw_db_params(seed, Config())) for these
# seeds, computed from the draw as it was before swarms and delays existed.
# 69575168941382 (iteration_seed(77, 6)) draws a swarm now: only its
# --no-swarm draw must match.
BEFORE_SWARM = {
    1: {
        "acquire_snapshot_one_in": 2000,
        "bitflip_cache_one_in": 1000,
        "block_protection_bytes_per_key": 1,
        "cache_size": 8388608,
        "checkpoint_one_in": 0,
        "checkpoint_wal_bytes": "64M",
        "delpercent": 5,
        "full_page_writes": 0,
        "hint_fpi": 0,
        "io_backend": "psync",
        "iterpercent": 8,
        "kv_lazy_leaves": "auto",
        "nospace_one_in": 2000,
        "readpercent": 70,
        "sync_mode": "group",
        "threads": 1,
        "vacuum_freeze_min_age": 0,
        "vacuum_one_in": 1000,
        "verify_db_one_in": 0,
        "wal_compression": "zstd",
        "wal_log_hints": 0,
        "writepercent": 15,
    },
    17: {
        "acquire_snapshot_one_in": 0,
        "bitflip_cache_one_in": 300,
        "block_protection_bytes_per_key": 1,
        "cache_size": 1048576,
        "checkpoint_one_in": 20000,
        "checkpoint_wal_bytes": "1M",
        "delpercent": 5,
        "full_page_writes": 1,
        "hint_fpi": 0,
        "io_backend": "uring",
        "iterpercent": 8,
        "kv_lazy_leaves": "auto",
        "readpercent": 70,
        "sync_mode": "commit",
        "threads": 4,
        "vacuum_freeze_min_age": 100,
        "vacuum_one_in": 0,
        "verify_db_one_in": 0,
        "wal_compression": "zstd",
        "wal_log_hints": 0,
        "writepercent": 15,
    },
    4242: {
        "acquire_snapshot_one_in": 0,
        "bitflip_cache_one_in": 100,
        "bitflip_wal_one_in": 20000,
        "block_protection_bytes_per_key": 2,
        "cache_size": 4194304,
        "checkpoint_one_in": 0,
        "checkpoint_wal_bytes": "1M",
        "delpercent": 15,
        "full_page_writes": 1,
        "hint_fpi": 0,
        "io_backend": "psync",
        "iterpercent": 5,
        "kv_lazy_leaves": "auto",
        "readpercent": 10,
        "short_io_one_in": 200,
        "sync_mode": "off",
        "threads": 1,
        "vacuum_freeze_min_age": 0,
        "vacuum_one_in": 1000,
        "verify_db_one_in": 0,
        "wal_compression": "zstd",
        "wal_log_hints": 0,
        "writepercent": 60,
    },
    49907591016819: {
        "acquire_snapshot_one_in": 2000,
        "bitflip_cache_one_in": 100,
        "bitflip_page_one_in": 500,
        "block_protection_bytes_per_key": 2,
        "cache_size": 1048576,
        "checkpoint_one_in": 0,
        "checkpoint_wal_bytes": "64M",
        "delpercent": 4,
        "full_page_writes": 1,
        "hint_fpi": 1,
        "io_backend": "psync",
        "iterpercent": 20,
        "kv_lazy_leaves": "auto",
        "nospace_one_in": 2000,
        "readpercent": 26,
        "sync_mode": "off",
        "threads": 2,
        "vacuum_freeze_min_age": 0,
        "vacuum_one_in": 0,
        "verify_db_one_in": 0,
        "wal_compression": "zstd",
        "wal_log_hints": 0,
        "writepercent": 31,
    },
    69575168941382: {
        "acquire_snapshot_one_in": 2000,
        "bitflip_cache_one_in": 300,
        "block_protection_bytes_per_key": 8,
        "cache_size": 524288,
        "checkpoint_one_in": 0,
        "checkpoint_wal_bytes": "1M",
        "delpercent": 10,
        "full_page_writes": 1,
        "hint_fpi": 1,
        "io_backend": "psync",
        "iterpercent": 10,
        "kv_lazy_leaves": "always",
        "readpercent": 45,
        "short_io_one_in": 1000,
        "sync_mode": "off",
        "threads": 4,
        "vacuum_freeze_min_age": 100,
        "vacuum_one_in": 0,
        "verify_db_one_in": 0,
        "wal_compression": "none",
        "wal_log_hints": 1,
        "writepercent": 30,
    },
    140737488355333: {
        "acquire_snapshot_one_in": 200,
        "block_protection_bytes_per_key": 2,
        "cache_size": 134217728,
        "checkpoint_one_in": 2000,
        "checkpoint_wal_bytes": "8M",
        "delpercent": 15,
        "full_page_writes": 1,
        "hint_fpi": 1,
        "io_backend": "uring",
        "iterpercent": 5,
        "kv_lazy_leaves": "always",
        "readpercent": 10,
        "sync_mode": "commit",
        "threads": 1,
        "vacuum_freeze_min_age": 1000,
        "vacuum_one_in": 0,
        "verify_db_one_in": 20000,
        "wal_compression": "none",
        "wal_log_hints": 0,
        "writepercent": 60,
    },
}
# The same with --set vacuum_one_in=7 --set readpercent=20 --threads 3.
BEFORE_SWARM_PINNED = {
    5: {
        "acquire_snapshot_one_in": 200,
        "bitflip_inflight_one_in": 2000,
        "block_protection_bytes_per_key": 1,
        "cache_size": 524288,
        "checkpoint_one_in": 200,
        "checkpoint_wal_bytes": "8M",
        "delpercent": 10,
        "full_page_writes": 1,
        "hint_fpi": 1,
        "io_backend": "psync",
        "iterpercent": 10,
        "kv_lazy_leaves": "never",
        "read_fault_one_in": 500,
        "readpercent": "20",
        "sync_mode": "group",
        "threads": 3,
        "vacuum_freeze_min_age": 0,
        "vacuum_one_in": "7",
        "verify_db_one_in": 20000,
        "wal_compression": "none",
        "wal_log_hints": 0,
        "writepercent": 20,
        "zero_page_one_in": 50000,
    },
    6: {
        "acquire_snapshot_one_in": 2000,
        "block_protection_bytes_per_key": 2,
        "cache_size": 33554432,
        "checkpoint_one_in": 20000,
        "checkpoint_wal_bytes": "1M",
        "delpercent": 15,
        "full_page_writes": 1,
        "hint_fpi": 0,
        "io_backend": "psync",
        "iterpercent": 5,
        "kv_lazy_leaves": "always",
        "read_fault_one_in": 500,
        "readpercent": "20",
        "sync_mode": "commit",
        "threads": 3,
        "vacuum_freeze_min_age": 100,
        "vacuum_one_in": "7",
        "verify_db_one_in": 20000,
        "wal_compression": "zstd",
        "wal_log_hints": 0,
        "writepercent": 60,
    },
}

SEEDS = [iteration_seed(2024, i) for i in range(400)]


def draw(seed, cfg):
    db = draw_db_params(seed, cfg)
    p, notes = draw_iter_params(seed, cfg, db)
    return db, p, notes


def swarms(cfg=None, seeds=SEEDS):
    """(seed, swarm, params) of the seeds that draw a swarm."""
    cfg = cfg or Config(max_key=2000)
    out = []
    for s in seeds:
        sw = draw_swarm(s, cfg)
        if sw:
            out.append((s, sw, draw(s, cfg)[1]))
    return out


class TestSwarmDraw(unittest.TestCase):
    def test_the_swarm_comes_from_the_seed_alone(self):
        cfg = Config(max_key=2000)
        for s in SEEDS[:60]:
            self.assertEqual(draw_swarm(s, cfg), draw_swarm(s, Config(max_key=2000)))
            self.assertEqual(draw(s, cfg), draw(s, Config(max_key=2000)))
        drawn = [json.dumps(sw, sort_keys=True) for _, sw, _ in swarms()]
        self.assertGreater(
            len(set(drawn)), 0.9 * len(drawn), "different seeds draw different swarms"
        )
        # About half the iterations draw one.
        self.assertTrue(0.35 * len(SEEDS) < len(drawn) < 0.65 * len(SEEDS), len(drawn))

    def test_no_swarm_draws_none(self):
        cfg = Config(swarm=False)
        self.assertFalse(any(draw_swarm(s, cfg) for s in SEEDS))

    def test_every_feature_is_on_in_some_swarms_and_off_in_others(self):
        got = swarms()
        seen = {}
        for _, sw, p in got:
            for opt in PERCENTS:
                seen.setdefault(opt, set()).add(int(p[opt]) > 0)
            seen.setdefault("batch", set()).add(sum(int(p[o]) for o in PERCENTS) < 100)
            for name, (opt, _) in SWARM_FEATURES.items():
                seen.setdefault(name, set()).add(int(p[opt]) > 0)
            seen.setdefault("reopen", set()).add(sw["reopen"] > 0)
            for c, (opt, _) in FAULTS.items():
                seen.setdefault(c, set()).add(opt in p)
            # a swarm always writes something
            self.assertTrue(int(p["writepercent"]) > 0 or sum(int(p[o]) for o in PERCENTS) < 100, p)
        for k, v in sorted(seen.items()):
            if k == "lost_write":
                self.assertEqual(v, {False}, "undetectable by design: never in a judging run")
                continue
            self.assertEqual(v, {True, False}, "%s is not both on and off across swarms" % k)
        keys = [sw["max_key"] for _, sw, _ in got]
        self.assertTrue(
            any(SWARM_TINY_KEYS[0] <= k <= SWARM_TINY_KEYS[1] for k in keys), "no tiny key space"
        )
        self.assertIn(2000, keys, "the mode's max_key too")
        self.assertTrue(all(1 <= k <= 2000 for k in keys))
        self.assertGreater(len({int(p["threads"]) for _, _, p in got}), 3)
        # a run of only puts, snapshots and vacuums shows up
        self.assertTrue(
            any(
                int(p["writepercent"]) == 100
                and int(p["acquire_snapshot_one_in"])
                and int(p["vacuum_one_in"])
                for _, _, p in got
            )
            or any(
                int(p["readpercent"]) == 0
                and int(p["iterpercent"]) == 0
                and int(p["delpercent"]) == 0
                and int(p["acquire_snapshot_one_in"])
                and int(p["vacuum_one_in"])
                for _, _, p in got
            )
        )

    def test_some_swarms_change_their_mix_in_phases_and_say_so(self):
        got = swarms()
        phased = [(sw, p) for _, sw, p in got if "phase_ops" in p]
        self.assertTrue(0.3 * len(got) < len(phased) < 0.7 * len(got), (len(phased), len(got)))
        self.assertEqual({int(p["phase_ops"]) for _, p in phased}, set(SWARM_PHASE_OPS))
        for sw, p in phased:
            self.assertEqual(int(p["phase_ops"]), sw["phase_ops"])
            rec = swarm_record(sw, p, sw["max_key"], sw["reopen"])
            self.assertEqual(rec["phase_ops"], sw["phase_ops"])
            self.assertIn("phases of %d ops" % sw["phase_ops"], swarm_text(rec))
        # an iteration without a swarm never has phases
        plain = [s for s in SEEDS[:80] if not draw_swarm(s, Config(max_key=2000))]
        self.assertTrue(plain)
        self.assertFalse(any("phase_ops" in draw(s, Config(max_key=2000))[1] for s in plain))

    def test_a_feature_off_is_absent_from_the_stress_options(self):
        for s, sw, p in swarms():
            args = opt_args(p)
            for name, (opt, _) in SWARM_FEATURES.items():
                # off: 0 given explicitly (stress's default may be on)
                self.assertIn("--%s=%d" % (opt, sw["features"][name]), args, (s, name))
            for kind, opt in (
                ("read", "readpercent"),
                ("put", "writepercent"),
                ("delete", "delpercent"),
                ("scan", "iterpercent"),
            ):
                self.assertEqual(int(p[opt]) == 0, sw["ops"][kind] == 0, (s, kind, p[opt]))
            total = sum(int(p[o]) for o in PERCENTS)
            self.assertLessEqual(total, 100)
            self.assertEqual(total == 100, sw["ops"]["batch"] == 0, (s, total, sw["ops"]))
            self.assertEqual(int(p["threads"]), sw["threads"])
            # the swarm's fault classes, as far as they are judgeable here
            m = dict(draw_db_params(s, Config(max_key=2000)), **p)
            for c, (opt, _) in FAULTS.items():
                if c == "bitflip_cache":
                    continue  # the protection stratum sets cache flips on its own
                if c in sw["faults"] and not unjudgeable_reason(c, m):
                    self.assertEqual(int(p[opt]), sw["faults"][c])
                else:
                    self.assertNotIn(opt, p, (s, c))

    def test_an_iteration_without_a_swarm_draws_what_it_drew_before(self):
        before = Config(known=BEFORE)
        plain = 0
        for s, want in BEFORE_SWARM.items():
            self.assertEqual(draw(s, Config(known=BEFORE, swarm=False))[1], want, s)
            if draw_swarm(s, before) is None:
                plain += 1
                self.assertEqual(draw(s, before)[1], want, s)
            else:
                self.assertNotEqual(draw(s, before)[1], want, "a swarm changes its iteration")
        self.assertGreaterEqual(plain, 4)
        for s, want in BEFORE_SWARM_PINNED.items():
            pins = {"vacuum_one_in": "7", "readpercent": "20"}
            self.assertEqual(
                draw(s, Config(known=BEFORE, pinned=pins, threads=3, swarm=False))[1], want, s
            )

    def test_the_swarm_never_moves_the_other_draws_of_its_iteration(self):
        swarmed = [
            c
            for c in ITER_CHOICES
            if c not in ("threads", "cache_pages")
            and c not in {opt for opt, _ in SWARM_FEATURES.values()}
        ]
        for s, sw, p in swarms():
            q = draw(s, Config(max_key=2000, swarm=False))[1]
            self.assertEqual({k: p[k] for k in swarmed}, {k: q[k] for k in swarmed}, s)
            if sw["cache_pages"]:  # a cache of a few pages of the database's size
                self.assertLessEqual(p["cache_size"], max(65536, sw["cache_pages"] * 16384), s)
            else:
                self.assertEqual(p["cache_size"], q["cache_size"])
            self.assertEqual(
                {k: v for k, v in p.items() if k in DELAY_OPTIONS},
                {k: v for k, v in q.items() if k in DELAY_OPTIONS},
            )

    def test_pins_win_over_the_swarm(self):
        pins = {
            "vacuum_one_in": "7",
            "acquire_snapshot_one_in": "0",
            "readpercent": "20",
            "sync_mode": "commit",
            "zero_page_one_in": "100",
        }
        cfg = Config(max_key=2000, pinned=pins, threads=3)
        got = swarms(cfg)
        self.assertTrue(got)
        for s, sw, p in got:
            for k, v in pins.items():
                self.assertEqual(p[k], v, (s, k))
            self.assertEqual(p["threads"], 3)
            # a pinned share keeps the even mix: never past 100 with it
            self.assertEqual(
                {k: p[k] for k in PERCENTS if k != "readpercent"},
                {
                    k: v
                    for k, v in draw(s, Config(max_key=2000, pinned=pins, threads=3, swarm=False))[
                        1
                    ].items()
                    if k in PERCENTS and k != "readpercent"
                },
            )

    def test_the_database_a_swarm_creates_has_its_key_space(self):
        a = types.SimpleNamespace(max_key=2000, no_swarm=False)
        lines = []
        ct = types.SimpleNamespace(
            a=a,
            cfg=Config(max_key=2000),
            work=tempfile.gettempdir(),
            p=types.SimpleNamespace(line=lines.append),
        )
        tiny = 0
        for s in SEEDS[:200]:
            run = Run(ct, 0, 1)
            new_database(ct, run, s)
            sw = draw_swarm(s, ct.cfg)
            self.assertEqual(run.max_key, sw["max_key"] if sw else 2000)
            tiny += run.max_key <= SWARM_TINY_KEYS[1]
        self.assertGreater(tiny, 0)
        self.assertTrue(any("(swarm)" in x for x in lines))
        ct.cfg = Config(max_key=2000, swarm=False)
        for s in SEEDS[:50]:
            run = Run(ct, 0, 1)
            new_database(ct, run, s)
            self.assertEqual(run.max_key, 2000)

    def test_the_swarms_reopens_go_to_the_workload_only(self):
        ct = types.SimpleNamespace(cfg=Config(max_key=2000))
        on = [s for s, sw, _ in swarms() if sw["reopen"]]
        self.assertTrue(on)
        for s in on:
            self.assertEqual(
                swarm_reopen(ct, s, {"kind": "blackbox"}), draw_swarm(s, ct.cfg)["reopen"]
            )
            self.assertEqual(
                swarm_reopen(ct, s, {"kind": "whitebox", "reopen": 3}), 0, "the plan's count stands"
            )
        ct.cfg = Config(max_key=2000, known=BEFORE)  # a binary without --reopen
        self.assertTrue(all(swarm_reopen(ct, s, {"kind": "blackbox"}) == 0 for s in on))


def failed_record(swarm):
    return {
        "id": "r0-i3-99",
        "run": 0,
        "run_seed": 5,
        "index": 3,
        "seed": 99,
        "kind": "blackbox",
        "verdict": "fail",
        "elapsed": 1.0,
        "t_end": 2.0,
        "db_params": {},
        "params": {"readpercent": 0},
        "totals": {k: 0 for k in OUTCOMES + FAILURE_KEYS},
        "artifacts": "/tmp/x",
        "repro": "crashtest.py repro x",
        "steps": [
            {
                "type": "stress",
                "name": "workload",
                "result": {"output_tail": "stress: FAILURE lost"},
            }
        ],
        "failure": {
            "kind": "lost",
            "step": 0,
            "step_name": "workload",
            "message": "stress: FAILURE lost",
        },
        "swarm": swarm,
    }


class TestSwarmReported(unittest.TestCase):
    SW = swarm_record(
        {"reopen": 8},
        {
            "readpercent": 0,
            "writepercent": 60,
            "delpercent": 0,
            "iterpercent": 0,
            "acquire_snapshot_one_in": 50,
            "vacuum_one_in": 20,
            "checkpoint_one_in": 0,
            "verify_db_one_in": 0,
            "threads": 2,
            "zero_page_one_in": 2000,
        },
        23,
        8,
    )

    def test_the_record_says_what_ran(self):
        self.assertEqual(
            self.SW["ops"], {"read": 0, "put": 60, "delete": 0, "scan": 0, "batch": 40}
        )
        self.assertEqual(
            self.SW["features"],
            {"snapshot": 50, "vacuum": 20, "checkpoint": 0, "verify": 0, "reopen": 8},
        )
        self.assertEqual(
            (self.SW["max_key"], self.SW["threads"], self.SW["faults"]), (23, 2, ["zero_page"])
        )
        self.assertIsNone(swarm_record(None, {}, 5, 0))
        text = swarm_text(self.SW)
        for part in (
            "put=60%",
            "batch=40%",
            "snapshot 1/50",
            "vacuum 1/20",
            "reopen x8",
            "off checkpoint,verify",
            "keys 23",
            "faults zero_page",
        ):
            self.assertIn(part, text)
        self.assertNotIn("read=", text)
        # read back from JSON (keys sorted), the same line
        self.assertEqual(swarm_text(json.loads(json.dumps(self.SW, sort_keys=True))), text)

    def test_the_failure_listing_carries_the_swarm(self):
        rec = failed_record(self.SW)
        html = failures_section({"failures": [rec], "failures_total": 1})
        self.assertIn("snapshot 1/50", html)
        self.assertIn("keys 23", html)
        self.assertIn(
            "even mix", failures_section({"failures": [failed_record(None)], "failures_total": 1})
        )
        # junit.xml: the failure's text and the iteration's output
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "junit.xml")
            summary = {
                "mode": "simple",
                "classes": {c: {k: 0 for k in OUTCOMES + FAILURE_KEYS} for c in CLASS_ORDER},
                "elapsed_s": 1.0,
                "seed": 5,
                "shard": "0/1",
                "jobs": 1,
                "arguments": [],
                "build": {},
            }
            write_junit(path, summary, [rec])
            fails = [el for el in ET.parse(path).iter("failure") if el.get("type") == "lost"]
            self.assertEqual(len(fails), 1)
            self.assertIn("snapshot 1/50", fails[0].text)
        # the console: the lines under the failed iteration's line
        ct = CrashTest.__new__(CrashTest)
        lines = []
        ct.lock, ct.t0, ct.records, ct.failed = threading.Lock(), 0.0, [], 0
        ct.jsonl, ct.defaults, ct.mode = io.StringIO(), {}, "simple"
        ct.p = types.SimpleNamespace(line=lines.append)
        ct.a = types.SimpleNamespace(
            stress_binary_given=False,
            set=[],
            faults="stable",
            measure=False,
            powerloss_modes=None,
            max_key=2000,
            interval=3.0,
            mode="simple",
            no_swarm=False,
        )
        rec = failed_record(self.SW)
        rec["plan"] = {"kind": "blackbox", "kill_at": 1.0}
        rec.update(judging_mode="judging", by_design=[])
        ct.finish(rec, types.SimpleNamespace(index=0))
        self.assertTrue(
            any(x.strip().startswith("swarm: ") and "vacuum 1/20" in x for x in lines), lines
        )
        self.assertEqual(json.loads(ct.jsonl.getvalue())["swarm"], self.SW)
        # mutants.md: the catch's swarm beside its kind
        row = {
            "name": "x",
            "guarantee": "g",
            "caught": True,
            "seconds": 2.0,
            "iterations_to_catch": 1,
            "kind": "lost",
            "classes": [],
            "swarm": self.SW,
            "budget_s": 300,
        }
        table = mutants_table(
            {"mutants": [row], "summary_line": "1 of 1", "budget_s": 300, "jobs": 1, "seed": 1}
        )
        self.assertIn("lost (swarm: put,batch; snapshot,vacuum,reopen; 23 keys)", table)

    def test_a_rerun_keeps_no_swarm(self):
        a = types.SimpleNamespace(
            stress_binary_given=False,
            set=[],
            faults="stable",
            measure=False,
            powerloss_modes=None,
            max_key=2000,
            interval=3.0,
            mode="simple",
            no_swarm=True,
        )
        self.assertIn("--no-swarm", rerun_line(a, "simple", 99))
        a.no_swarm = False
        self.assertNotIn("--no-swarm", rerun_line(a, "simple", 99))


class TestDelayDraw(unittest.TestCase):
    def test_no_delay_for_a_binary_without_the_options(self):
        cfg = Config(known=BEFORE)
        for s in SEEDS[:200]:
            self.assertFalse(set(draw(s, cfg)[1]) & set(DELAY_OPTIONS), s)

    def test_delays_in_about_half_the_iterations_from_their_tables(self):
        cfg = Config(known=BEFORE | set(DELAY_OPTIONS))
        on = named = 0
        sizes = set()
        for s in SEEDS:
            p = draw(s, cfg)[1]
            if "delay_one_in" in p:
                on += 1
                if "delay_sites" in p:  # BUGGIFY: a few sites, paused often
                    named += 1
                    self.assertIn(p["delay_one_in"], DELAY_HOT_ONE_IN)
                    sites = p["delay_sites"].split(",")
                    self.assertTrue(sites and set(sites) <= set(DELAY_SITES), sites)
                    self.assertEqual(len(sites), len(set(sites)))
                    sizes.add(len(sites))
                else:
                    self.assertIn(p["delay_one_in"], DELAY_CHOICES["delay_one_in"])
                self.assertIn(p["delay_max_us"], DELAY_CHOICES["delay_max_us"])
            else:
                self.assertNotIn("delay_max_us", p)
            # the other draws do not move with the delays
            self.assertEqual(
                {k: v for k, v in p.items() if k not in DELAY_OPTIONS},
                draw(s, Config(known=BEFORE))[1],
            )
        self.assertTrue(0.35 * len(SEEDS) < on < 0.65 * len(SEEDS), on)
        self.assertTrue(0.6 * on < named < 0.9 * on, (named, on))
        self.assertTrue({1, 2, 3} <= sizes, sizes)
        # only --delay_one_in known: no --delay_max_us asked for
        cfg = Config(known=BEFORE | {"delay_one_in"})
        self.assertFalse(any("delay_max_us" in draw(s, cfg)[1] for s in SEEDS[:100]))

    def test_delays_are_no_fault_class_pins_win_and_restarts_have_none(self):
        for opt in DELAY_OPTIONS:
            self.assertNotIn(opt, FAULT_OPTIONS)
        self.assertFalse(any(c.startswith("delay") for c in CLASS_ORDER))
        cfg = Config(known=BEFORE | set(DELAY_OPTIONS), pinned={"delay_one_in": "3"})
        for s in SEEDS[:50]:
            p = draw(s, cfg)[1]
            self.assertEqual(p["delay_one_in"], "3")
            v = verify_options(p)
            self.assertFalse(set(v) & set(DELAY_OPTIONS))


if __name__ == "__main__":
    unittest.main()
