"""What the tests that run crashtest.py share: the binaries' paths ($BUILD,
default build, as tests/run_all.sh), make asked once per binary (built),
a run of crashtest.py (run_ct), and report.html parsed (HtmlFacts) and
checked against the summary.json it was drawn from
(check_page_against_summary).  Used by tests/test_crashtest.py,
tests/test_crashtest_report.py and tests/test_crashtest_real_engine.py."""

import html.parser
import os
import subprocess
import sys

from crashtest.common import run_make
from crashtest.params import FAILURE_KEYS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
STRESS = os.path.join(ROOT, BUILD, "stress")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
CRASHTEST = os.path.join(ROOT, "crashtest.py")

_made = {}


def built(path):
    """PATH is up to date (make is asked once, as tests/t_stress.sh does:
    the broken builds and the real one must come from the same sources,
    or a database of one is foreign to the other)."""
    if path not in _made:
        # A sanitizer build directory is only made with its SANITIZER (make
        # test passes it down in MAKEFLAGS); without it, take what is there.
        san = "SANITIZER=" in os.environ.get("MAKEFLAGS", "") or os.environ.get("SANITIZER")
        if BUILD == "build" or san:
            r = run_make(
                ["make", "-s", os.path.relpath(path, ROOT)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _made[path] = r.returncode == 0 and os.path.exists(path)
        else:
            _made[path] = os.path.exists(path)
    return _made[path]


def run_ct(*args, env=None, timeout=600):
    """crashtest.py ARGS run in the repository, ENV added to the environment:
    (exit status, stdout, stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(
        [sys.executable, CRASHTEST] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=timeout,
        env=e,
        cwd=ROOT,
    )
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


class HtmlFacts(html.parser.HTMLParser):
    """A page, parsed: its elements' data-* attributes by class (or chart),
    the tags left open (none: well formed), what it would load."""

    VOID = {
        "meta",
        "br",
        "link",
        "img",
        "input",
        "hr",
        "line",
        "circle",
        "rect",
        "polyline",
        "path",
    }

    def __init__(self, path):
        super().__init__()
        self.items, self.stack, self.bad, self.loads, self.tags = [], [], [], [], set()
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.feed(self.text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        for k in ("src", "href"):
            if a.get(k):
                self.loads.append(a[k])
        d = {k[5:].replace("-", "_"): v for k, v in a.items() if k.startswith("data-")}
        if d:
            d["_class"] = (
                a.get("class") or ("chart-" + d.get("chart", ""))
                if "chart" in d
                else a.get("class")
            )
            self.items.append(d)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.bad.append(tag)
        else:
            self.stack.pop()

    def data(self, cls):
        return [d for d in self.items if d.get("_class") == cls]

    def chart(self, name):
        got = [d for d in self.items if d.get("chart") == name]
        return got[0] if got else None


def check_page_against_summary(tc, page, s):
    """The page's figures are the summary's."""
    tc.assertEqual((page.bad, page.stack), ([], []), "the page is well formed")
    tc.assertEqual(page.loads, [], "the page loads nothing")
    tc.assertNotIn("script", page.tags)
    bars = {d["cls"]: d for d in page.data("classbar")}
    for c, row in s["classes"].items():
        failures = sum(row[k] for k in FAILURE_KEYS)
        if not any(row.values()):
            tc.assertNotIn(c, bars)
            continue
        for k in (
            "injected",
            "detected",
            "repaired",
            "masked",
            "undetectable",
            "unrecoverable_by_design",
        ):
            tc.assertEqual(int(bars[c][k]), row[k], (c, k))
        tc.assertEqual(int(bars[c]["failures"]), failures, c)
    widths = {int(d["w"]): d for d in page.data("width")}
    for w, row in s["protection_widths"].items():
        if int(w) == 0:
            continue
        d = widths[int(w)]
        tc.assertEqual((int(d["checked"]), int(d["escaped"])), (row["checked"], row["escaped"]), w)
        tc.assertAlmostEqual(float(d["nominal"]), 2.0 ** (-8 * int(w)))
        if row["checked"]:
            tc.assertLessEqual(float(d["ci_low"]), row["escaped"] / row["checked"])
            tc.assertGreaterEqual(float(d["ci_high"]), row["escaped"] / row["checked"])
    pts = page.chart("points")
    if s["engine_points"]:
        tc.assertEqual(int(pts["total"]), len(s["engine_points"]))
        tc.assertEqual(int(pts["hit"]), len(s["engine_points"]) - len(s["engine_points_never_hit"]))
    tc.assertEqual(len(page.data("failure")), len(s["failures"]))
    tc.assertEqual(int(page.chart("timeline")["count"]), len(s["iterations"]))
