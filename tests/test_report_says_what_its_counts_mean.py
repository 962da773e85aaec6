"""The HTML report and crashtest.py's summaries say what their numbers
mean, and no sentence on a page contradicts a count on it: each protection
width is drawn against the bound its verdict uses, every legend mark is
drawn, a page states one count of fault points, a protection page carries
no sentence of the crash-cycle modes and no empty field, and a trend is one
series (one mode on one engine)."""

import html.parser
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from crashtest import htmlreport, protection  # noqa: E402
from crashtest.common import UsageError  # noqa: E402
from crashtest.stats import pattern_odds, poisson_bound  # noqa: E402


class Marks(html.parser.HTMLParser):
    """The escape chart's groups (data-* of each g.width, with the marks
    drawn inside it) and the legend's marks."""

    def __init__(self, text):
        super().__init__()
        self.widths, self.legend, self.titles, self.open = [], [], [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "g" and a.get("class") == "width":
            self.open = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
            self.open["marks"] = {}
            self.widths.append(self.open)
        elif self.open is not None and a.get("data-mark"):
            self.open["marks"][a["data-mark"]] = a
        if a.get("data-legend"):
            self.legend.append(a["data-legend"])
        self.in_title = tag == "title"

    def handle_endtag(self, tag):
        if tag == "g":
            self.open = None
        self.in_title = False

    def handle_data(self, data):
        if getattr(self, "in_title", False):
            self.titles.append(data)


def text_of(page):
    """The page's words, without markup, style or charts."""
    t = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", t)))


def protection_summary(cells_by_width, build=None):
    """A protection run's summary as protection_mode writes it, from
    {w: {pattern: (checked, escaped, parity)}}: each flip's expected odds
    from the construction."""
    agg = {}
    for w, cells in cells_by_width.items():
        agg[w] = protection.empty_cells()
        for p, (n, x, parity) in cells.items():
            agg[w][p].update(
                checked=n, detected=n - x, escaped=x, expected=n * pattern_odds(parity, w)
            )
    table, fail = protection.judge(agg)
    runs = [{"index": i, "w": w} for i, w in enumerate(sorted(cells_by_width))]
    s = {
        "mode": "protection",
        "seed": 5,
        "seed_given": True,
        "verdict": "fail" if fail else "pass",
        "iterations_total": len(runs),
        "failed": 0,
        "failures": [],
        "elapsed_s": 12.0,
        "jobs": 1,
        "shard": "0/1",
        "started": "2026-01-01T00:00:00Z",
        "protection": {str(w): r for w, r in table.items()},
        "regions": {},
        "protection_widths": {
            str(w): {
                "iterations": sum(1 for r in runs if r["w"] == w),
                "checked": r["checked"],
                "escaped": r["escaped"],
                "bound": r["bound"],
                "rate": r["rate"],
                "ci95": r["ci95"],
                "expected_rate": r["expected_rate"],
            }
            for w, r in table.items()
        },
    }
    if build:
        s["build"] = build
    return s, table, fail


# w = 2 of a passing run: one escape of a two-flips-in-one-part pattern in
# 20,103 checked flips, above 2^-16 and well inside what the construction
# allows (its odds are 2^-13 per flip).
W2_ONE_ESCAPE = {
    1: {"double_part": (4000, 125, "entry"), "single": (4000, 0, "odd")},
    2: {"double_part": (10103, 1, "entry"), "single": (10000, 0, "odd")},
}


def nightly_summary(**over):
    s = {
        "mode": "blackbox",
        "seed": 5,
        "seed_given": True,
        "shard": "0/1",
        "jobs": 1,
        "started": "2026-01-01T01:00:00",
        "elapsed_s": 30.0,
        "verdict": "pass",
        "failed": 0,
        "measuring": 0,
        "build": {"git_describe": "v1-2-gabc", "host": "h"},
        "classes": {},
        "planted_bugs": [],
        "protection_widths": {
            "1": {"iterations": 2, "checked": 400, "escaped": 2, "bound": 5},
            "8": {"iterations": 2, "checked": 300, "escaped": 0, "bound": 0},
        },
        "engine_points": ["engine/io/read", "engine/io/write"],
        "points_hit": {"engine/io/read": 3},
        "points_reached": {},
        "engine_points_never_hit": ["engine/io/write"],
        "iterations": [
            {
                "run": 0,
                "index": 0,
                "kind": "blackbox",
                "verdict": "pass",
                "elapsed": 1.0,
                "t_end": 2.0,
            }
        ],
        "iterations_total": 1,
        "failures": [],
        "failures_total": 0,
    }
    s.update(over)
    return s


class TestEscapeChartJudgesEachWidthByItsBound(unittest.TestCase):
    def test_a_width_inside_its_bound_is_drawn_within_it_and_not_as_a_failure(self):
        s, table, fail = protection_summary(W2_ONE_ESCAPE)
        self.assertFalse(fail)
        m = Marks(htmlreport.chart_escapes(s))
        w2 = [g for g in m.widths if g["w"] == "2"][0]
        self.assertGreater(1 / 20103, 2.0**-16, "the case: above the 2^-8w line")
        self.assertEqual(
            int(w2["bound"]), poisson_bound(table[2]["expected"]), "the verdict's own bound"
        )
        self.assertIn("bound", w2["marks"])
        self.assertIn("observed", w2["marks"], "a point inside its bound is marked within it")
        self.assertNotIn("observed-over", w2["marks"])
        self.assertNotEqual(w2["marks"]["observed"].get("fill"), htmlreport.FAIL_C)
        self.assertEqual(w2["within-bound"], "True")

    def test_every_width_draws_its_bound_and_its_expected_rate(self):
        for s in (protection_summary(W2_ONE_ESCAPE)[0], nightly_summary()):
            m = Marks(htmlreport.chart_escapes(s))
            for g in m.widths:
                self.assertIn("bound", g["marks"], (s["mode"], g["w"]))
                if s["mode"] == "protection":
                    self.assertIn("expected", g["marks"], g["w"])

    def test_every_legend_mark_is_drawn(self):
        for s in (protection_summary(W2_ONE_ESCAPE)[0], nightly_summary()):
            m = Marks(htmlreport.chart_escapes(s))
            drawn = {k for g in m.widths for k in g["marks"]}
            self.assertTrue(m.legend)
            self.assertEqual(set(m.legend) - drawn, set(), s["mode"])

    def test_a_width_above_its_bound_is_drawn_as_a_failure_and_fails_the_run(self):
        # Each cell within its own bound, their sum above the bound of the
        # summed expectation: the width the chart draws above its bound is
        # a failure of the verdict too, never a red point on a PASS page.
        n = 800
        cells = {p: (n, 0, "entry") for p in ("double_part", "burst", "byte")}
        per_cell = poisson_bound(n * pattern_odds("entry", 1))
        cells = {p: (k, per_cell, par) for p, (k, _, par) in cells.items()}
        s, table, fail = protection_summary({1: cells})
        self.assertTrue(all(not c["fail"] for c in table[1]["patterns"].values()))
        self.assertGreater(table[1]["escaped"], table[1]["bound"])
        self.assertTrue(fail, "the width's sum is judged against its bound")
        g = Marks(htmlreport.chart_escapes(s)).widths[0]
        self.assertIn("observed-over", g["marks"])

    def test_the_protection_summary_lines_say_the_bound_and_its_judgement(self):
        s, table, fail = protection_summary(W2_ONE_ESCAPE)
        line = protection.width_line(2, table[2])
        self.assertIn("bound %d escapes: within" % table[2]["bound"], line)
        self.assertIn("expected from the construction", line)


class TestOneCountOfFaultPoints(unittest.TestCase):
    def test_the_run_summary_states_one_count_of_fault_points(self):
        from crashtest import report

        pts = ["engine/io/read", "engine/io/write", "kill/wal/after_sync"]
        # a blackbox night: the killed workloads wrote no report, so no
        # pass was counted, while their injections were.
        line = report.points_line(pts, {"engine/io/read": 3, "engine/io/write": 1}, {})
        self.assertEqual(re.findall(r"\d+ of \d+", line), ["2 of 3"])
        self.assertNotIn("reached", line)

    def test_a_hit_point_is_never_said_to_be_reached_zero_times(self):
        s = nightly_summary()
        page = htmlreport.chart_points(s)
        titles = Marks(page).titles
        read = [t for t in titles if t.startswith("engine/io/read")][0]
        self.assertEqual(read, "engine/io/read: hit 3 times")
        self.assertNotRegex(page, r"reached \d")
        self.assertEqual(re.findall(r"\d+ of \d+ engine points", page), ["1 of 2 engine points"])


class TestProtectionPageSaysOnlyWhatIsTrue(unittest.TestCase):
    def page(self, build=None):
        s = protection_summary(W2_ONE_ESCAPE, build)[0]
        return text_of(htmlreport.run_body(s, "/tmp/prot"))

    def test_a_protection_page_has_no_sentence_of_the_crash_cycle_modes(self):
        t = self.page()
        for sentence in (
            "No fault was injected",
            "Every engine fault point was hit",
            "No iteration finished",
            "fault points",
            "No iteration failed",
            "measuring",
        ):
            self.assertNotIn(sentence, t)
        self.assertIn("2 stress runs", t)

    def test_an_unknown_build_says_unknown_and_no_field_is_empty(self):
        t = self.page()
        self.assertIn("git unknown", t)
        self.assertIn("host unknown", t)
        self.assertNotRegex(t, r"\b(git|host|seed|started|shard)\s*;")
        self.assertIn("git v9-1-gabc", self.page({"git_describe": "v9-1-gabc", "host": "box"}))

    def test_a_page_without_fault_points_does_not_say_every_point_was_hit(self):
        t = text_of(
            htmlreport.run_body(
                nightly_summary(engine_points=[], engine_points_never_hit=[]), "/tmp/n"
            )
        )
        self.assertIn("listed no fault points", t)
        self.assertNotIn("Every engine fault point was hit", t)

    def test_an_iteration_count_without_timeline_rows_is_not_called_none_finished(self):
        t = text_of(
            htmlreport.run_body(nightly_summary(iterations=[], iterations_total=4), "/tmp/n")
        )
        self.assertNotIn("No iteration finished", t)


class TestTrendIsOneSeries(unittest.TestCase):
    def dirs(self, *summaries):
        import json
        import shutil
        import tempfile

        root = tempfile.mkdtemp(prefix="ct-series-")
        self.addCleanup(shutil.rmtree, root, True)
        out = []
        for i, s in enumerate(summaries):
            d = os.path.join(root, "n%d" % i)
            os.makedirs(d)
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump(s, f)
            out.append(d)
        return out

    def test_a_planted_bug_run_is_no_night_of_the_real_engine(self):
        real = nightly_summary(mode="simple", started="2026-01-01T01:00:00")
        mutant = nightly_summary(
            mode="simple", started="2026-01-02T01:00:00", planted_bugs=["drop-synced-commit"]
        )
        with self.assertRaises(UsageError) as e:
            htmlreport.render_runs(self.dirs(real, mutant))
        self.assertIn("drop-synced-commit", str(e.exception))

    def test_a_summary_that_names_no_mode_is_no_night_of_a_series(self):
        a = nightly_summary(started="2026-01-01T01:00:00")
        b = nightly_summary(started="2026-01-02T01:00:00")
        del a["mode"], b["mode"]
        with self.assertRaises(UsageError):
            htmlreport.render_runs(self.dirs(a, b))

    def test_the_trend_page_says_which_series_it_draws(self):
        page = htmlreport.render_runs(
            self.dirs(
                nightly_summary(started="2026-01-01T01:00:00"),
                nightly_summary(started="2026-01-02T01:00:00"),
            )
        )
        self.assertIn("One series: every night is a run of blackbox", text_of(page))

    def test_a_mutants_folder_is_refused_as_what_it_is(self):
        (d,) = self.dirs(nightly_summary())
        m = os.path.join(os.path.dirname(d), "mutants")
        os.makedirs(m)
        with open(os.path.join(m, "mutants.json"), "w") as f:
            f.write('{"mode": "mutants", "mutants": []}')
        with self.assertRaises(UsageError) as e:
            htmlreport.render([d, m])
        self.assertIn("mutants report folder", str(e.exception))


if __name__ == "__main__":
    unittest.main()
