"""What a crashtest.py run writes, and the page drawn from it
(docs/crashtest.md, The report folder; crashtest/report.py,
crashtest/htmlreport.py):

- summary.json stays under a megabyte over a long parallel night (timeline
  rows and a few full failures; iterations.jsonl has the rest);
- a failure found by an extra power-loss variant counts in its class's row;
- a large iterations.jsonl is gzipped and reads back;
- crashtest.py report: one self-contained page whose figures are the
  JSON's (one run's, several nights' trends, the benchmarks'), bad input a
  usage error, and the page loads in headless chromium when installed
  (make deps-report; skipped, saying so, without it).

    python3 -m unittest tests.test_crashtest_report"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from crashtest.params import FAILURE_KEYS, FAULTS, OUTCOMES  # noqa: E402
from crashtest.report import (  # noqa: E402
    counted,
    finish_jsonl,
    fit,
    read_iterations,
    region_table,
    timeline_of,
)
from crashtest.steps import counted_reports, sum_totals  # noqa: E402
from tests.crashtestrun import HtmlFacts, check_page_against_summary, run_ct  # noqa: E402


def fake_summary(started, failed=0):
    classes = {
        c: {k: 0 for k in OUTCOMES + FAILURE_KEYS}
        for c in ("bitflip_page", "bitflip_cache", "kill")
    }
    classes["bitflip_page"].update(injected=10, detected=7, masked=3)
    classes["bitflip_cache"].update(injected=40, detected=30, masked=8, wrong_value=failed)
    classes["kill"].update(injected=5, repaired=5)
    fail = {
        "id": "r0-i1-9",
        "run": 0,
        "index": 1,
        "seed": 9,
        "run_seed": 3,
        "repro": "crashtest.py repro X",
        "failure": {
            "kind": "wrong_value",
            "step": 0,
            "step_name": "workload",
            "message": "k1 wrong",
        },
        "steps": [{"result": {"report": {"classes": {"bitflip_cache": {"wrong_value": 1}}}}}],
        "t_end": 4.0,
    }
    return {
        "mode": "blackbox",
        "seed": 5,
        "seed_given": True,
        "shard": "0/1",
        "jobs": 1,
        "started": started,
        "elapsed_s": 30.0,
        "verdict": "fail" if failed else "pass",
        "failed": failed,
        "measuring": 0,
        "build": {"git_describe": "v1-2-gabc", "host": "h"},
        "classes": classes,
        "protection_widths": {
            "0": {"iterations": 1, "checked": 0, "escaped": 0},
            "1": {"iterations": 2, "checked": 400, "escaped": 2, "bound": 5},
            "8": {"iterations": 2, "checked": 300, "escaped": 0, "bound": 0},
        },
        "engine_points": ["engine/io/read", "engine/io/write", "kill/wal/after_sync"],
        "points_hit": {"engine/io/read": 3},
        "points_reached": {"engine/io/write": 9},
        "engine_points_never_hit": ["engine/io/write", "kill/wal/after_sync"],
        "iterations": [
            {
                "run": 0,
                "index": i,
                "kind": "blackbox",
                "verdict": "fail" if failed and i == 1 else "pass",
                "elapsed": 1.0 + i,
                "t_end": 2.0 * (i + 1),
                "failure": None,
            }
            for i in range(3)
        ],
        "iterations_total": 3,
        "failures": [fail] if failed else [],
        "failures_total": failed,
    }


class TestSummarySize(unittest.TestCase):
    def test_a_long_parallel_night_stays_under_one_megabyte(self):
        # An hour of -j 4 at a second an iteration, 40 failures, records the
        # size of real ones: the summary keeps timeline rows and a few full
        # failures, and stays under 1 MB; iterations.jsonl has the rest.
        step = {
            "name": "workload",
            "type": "stress",
            "primary": True,
            "argv": ["--x=%d" % i for i in range(60)],
            "result": {
                "outcome": "crashed",
                "rc": -9,
                "output_tail": "y" * 3000,
                "report": {
                    "classes": {c: {k: 1 for k in OUTCOMES + FAILURE_KEYS} for c in FAULTS},
                    "injections_per_point": {"p%d" % i: i for i in range(40)},
                },
            },
        }
        recs = []
        for i in range(14400):
            recs.append(
                {
                    "id": "r%d-i%d" % (i % 4, i),
                    "run": i % 4,
                    "index": i // 4,
                    "seed": i * 7919,
                    "kind": "blackbox",
                    "verdict": "fail" if i % 360 == 0 else "pass",
                    "elapsed": 1.0,
                    "t_end": i / 4.0,
                    "judging_mode": "judging",
                    "params": {"block_protection_bytes_per_key": 4},
                    "totals": {"injected": 3},
                    "steps": [step] * 6,
                    "failure": {"kind": "lost", "step": 0, "step_name": "workload"}
                    if i % 360 == 0
                    else None,
                }
            )
        rows, k = timeline_of(recs)
        full = [r for r in recs if r["failure"]]
        s = fit(
            {
                "iterations": rows,
                "iterations_sampled": k,
                "failures": full[:10],
                "classes": {},
                "build": {},
            }
        )
        size = len(json.dumps(s, indent=1, sort_keys=True))
        self.assertLess(size, 1 << 20)
        self.assertTrue(s["failures"], "some full failure records are kept")
        self.assertEqual(
            sum(1 for r in s["iterations"] if r["failure"]),
            len(full),
            "every failure in the timeline",
        )


class TestClassTable(unittest.TestCase):
    def test_a_failure_found_by_an_extra_power_loss_variant_counts_in_its_class(self):
        # A crash judged in three power-loss states: the first (primary)
        # rolled nothing back and passed, the second passed, the third lost
        # three commits.  The third's counts go in the tables, so that the
        # failure shows in power_loss's row (it was in no row: the nightly
        # table read 0 failures on a FAIL); the passing extra stays out, so
        # that the crash's kill counts once.
        def rep(classes):
            totals = {
                k: sum(c.get(k, 0) for c in classes.values()) for k in OUTCOMES + FAILURE_KEYS
            }
            return {"classes": classes, "totals": totals}

        steps = [
            {"type": "stress", "name": "workload", "primary": True},
            {"type": "powerloss", "name": "powerloss"},
            {"type": "stress", "name": "verify-v0", "primary": True},
            {"type": "stress", "name": "verify-v1", "primary": False},
            {"type": "stress", "name": "verify-v2", "primary": False},
        ]
        results = [
            {"outcome": "crashed", "report": None},
            {"outcome": "passed"},
            {"failure": None, "report": rep({"kill": {"injected": 1, "repaired": 1}})},
            {"failure": None, "report": rep({"power_loss": {"injected": 1, "repaired": 1}})},
            {
                "failure": {"kind": "lost"},
                "report": rep({"power_loss": {"injected": 1, "lost": 3}}),
            },
        ]
        t = sum_totals(counted_reports(steps, results))
        self.assertEqual((t["injected"], t["repaired"], t["lost"]), (2, 1, 3))
        self.assertEqual(
            [counted(s, r) for s, r in zip(steps, results)], [False, False, True, False, True]
        )


class TestRegionTable(unittest.TestCase):
    def test_every_column_of_the_region_table_has_its_heading(self):
        # Each outcome the summary counts (undetected_unpromised among
        # them) and swallowed: as many headings as numbers in a row.
        lines = []
        row = {k: i + 1 for i, k in enumerate(OUTCOMES + ["swallowed"])}
        region_table(lines.append, {"bitflip_wal": {"record_payload": row}})
        head = lines[0].split()
        cells = next(x for x in lines if " record_payload " in x).split()
        # headings past "damage by region region", "by design" one heading
        self.assertEqual(len(head) - 5, len(cells) - 2, lines)
        self.assertIn("unpromised", head)
        self.assertEqual(cells[-1], str(row["swallowed"]))

    def test_another_engines_damage_lists_only_the_file_kinds_it_hit(self):
        # The door places another engine's damage by file kind: our page
        # regions are no rows of its table and never "never hit".
        row = {"injected": 3}
        for engine, ours_listed in (("rocksdb", False), ("ours", True)):
            lines = []
            region_table(lines.append, {"bitflip_page": {"data": row}}, engine)
            text = "\n".join(lines)
            self.assertIn(" data ", text)
            self.assertEqual(" header " in text, ours_listed, engine)
            self.assertEqual("regions never hit" in text, ours_listed, engine)


class TestIterationsFile(unittest.TestCase):
    def test_large_is_gzipped_and_reads_back(self):
        d = tempfile.mkdtemp(prefix="ct-jsonl-")
        self.addCleanup(shutil.rmtree, d, True)
        recs = [{"index": i, "pad": "x" * 2000} for i in range(2500)]  # 5 MB

        class Ct:
            report_dir = d
            jsonl = open(os.path.join(d, "iterations.jsonl"), "w")

        for r in recs:
            Ct.jsonl.write(json.dumps(r) + "\n")
        self.assertEqual(finish_jsonl(Ct), "iterations.jsonl.gz")
        self.assertEqual(os.listdir(d), ["iterations.jsonl.gz"])
        self.assertLess(os.path.getsize(os.path.join(d, "iterations.jsonl.gz")), 1 << 20)
        self.assertEqual(read_iterations(d), recs)


class TestHtmlReport(unittest.TestCase):
    """crashtest.py report: one self-contained page whose figures are the
    JSON's (a run's, several nights', the benchmarks')."""

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ct-html-")
        self.addCleanup(shutil.rmtree, self.d, True)

    def night(self, name, s):
        d = os.path.join(self.d, name)
        os.makedirs(d)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(s, f)
        return d

    def test_one_run_shows_the_summary_figures(self):
        s = fake_summary("2026-11-30T01:00:00", failed=1)
        d = self.night("n1", s)
        out = os.path.join(self.d, "r.html")
        rc, o, err = run_ct("report", d, "-o", out)
        self.assertEqual(rc, 0, o + err)
        page = HtmlFacts(out)
        check_page_against_summary(self, page, s)
        self.assertEqual(page.data("failure")[0]["kind"], "wrong_value")
        self.assertIn("crashtest.py repro X", page.text)
        self.assertIn(
            "bitflip_cache</td>", page.text.replace('<td class="l">', "")
        )  # the blamed class
        w1 = [x for x in page.data("width") if x["w"] == "1"][0]
        self.assertAlmostEqual(float(w1["rate"]), 2 / 400)
        self.assertAlmostEqual(float(w1["bound_rate"]), 5 / 400)

    def test_several_nights_draw_trends(self):
        a = self.night("a", fake_summary("2026-11-29T01:00:00"))
        b = self.night("b", fake_summary("2026-11-30T01:00:00", failed=1))
        out = os.path.join(self.d, "t.html")
        rc, o, err = run_ct("report", b, a, "-o", out)
        self.assertEqual(rc, 0, o + err)
        page = HtmlFacts(out)
        self.assertEqual(page.bad, [])
        fails = [
            int(x["value"])
            for x in page.items
            if x.get("_class") == "night"
            and x in page.items[page.items.index(page.chart("trend-failures")) :]
        ][:2]
        self.assertEqual(fails, [0, 1], "nights in date order")
        self.assertTrue(page.chart("trend-escapes"))
        self.assertEqual(len(page.data("night-escape")), 4)

    def test_bad_input_is_a_usage_error(self):
        for args in (["report"], ["report", "/nonexistent"], ["report", self.d]):
            rc, out, err = run_ct(*args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertNotIn("Traceback", err)

    def test_benchmarks_page(self):
        prot = [
            {
                "cache_fraction": f,
                "width": w,
                "ops": 1000 - 10 * w,
                "ratio": 1 - w / 100.0,
                "memory_bytes_per_key": w + 0.5,
            }
            for f in (1.0, 0.0)
            for w in (0, 1, 8)
        ]
        wal = [
            {
                "data_checksums": 0,
                "wal_log_hints": 0,
                "wal_compression": "none",
                "hint_fpi": 0,
                "wal_bytes": 100,
                "archive_bytes": 10,
                "vacuum_s": 1.0,
            },
            {
                "data_checksums": 1,
                "wal_log_hints": 0,
                "wal_compression": "zstd",
                "hint_fpi": 0,
                "wal_bytes": 105,
                "archive_bytes": 11,
                "vacuum_s": 1.2,
            },
        ]
        eng = {
            "ratio": {"fillseq_ops": 0.9, "readrandom_cached_ops": 1.6},
            "ratio_lmdb": {"fillseq_ops": 1.8},
            "engine": {"fillseq_ops": 100},
            "rocksdb": {"fillseq_ops": 111},
            "lmdb": {},
        }
        bd = os.path.join(self.d, "bench")
        os.makedirs(bd)
        for name, doc in (("protection.json", prot), ("wal.json", wal), ("engine.json", eng)):
            with open(os.path.join(bd, name), "w") as f:
                json.dump(doc, f)
        out = os.path.join(self.d, "b.html")
        rc, o, err = run_ct("report", bd, "-o", out)
        self.assertEqual(rc, 0, o + err)
        page = HtmlFacts(out)
        self.assertEqual(page.bad, [])
        bars = {(x["group"], x["series"]): float(x["value"]) for x in page.data("bar")}
        self.assertAlmostEqual(bars[("cache 100%", "w=8")], -8.0)
        self.assertAlmostEqual(bars[("cache 8 MiB", "RocksDB PR 11287")], -23.0)
        self.assertAlmostEqual(bars[("checksums on, zstd", "wal_bytes")], 1.05)
        self.assertAlmostEqual(bars[("PostgreSQL seed", "vacuum_s")], 20.0)
        self.assertAlmostEqual(bars[("readrandom_cached", "vs RocksDB")], 1.6)

    @unittest.skipUnless(
        shutil.which("chromium"),
        "chromium is not installed (make deps-report installs Debian's "
        "chromium): the page was not rendered in a browser",
    )
    def test_the_page_loads_in_headless_chromium(self):
        d = self.night("n", fake_summary("2026-11-30T01:00:00", failed=1))
        out = os.path.join(self.d, "c.html")
        self.assertEqual(run_ct("report", d, "-o", out)[0], 0)
        r = subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                "--user-data-dir=" + os.path.join(self.d, "profile"),
                "--dump-dom",
                "file://" + out,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=120,
        )
        dom, log = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        self.assertEqual(r.returncode, 0, log[-2000:])
        self.assertIn('data-chart="escapes"', dom)
        self.assertIn('id="failures-table"', dom)
        self.assertNotIn("Uncaught", log)
        self.assertNotIn("Failed to load resource", log)
        self.assertNotIn("CONSOLE", log)


if __name__ == "__main__":
    unittest.main()
