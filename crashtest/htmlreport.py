"""The HTML report: one self-contained page from one or more report
directories (crashtest.py report DIR..., and report.html at the end of
every run), or from the benchmarks' JSON (make bench-report).

Inline SVG and CSS only: no script, no network, nothing to load, so the
file reads the same mailed, archived or opened from a CI artifact.  Charts
come first, the tables with their exact figures under them.  Every chart
element carries its figures in data-* attributes
(tests/test_crashtest_report.py checks them against the JSON the page was
made from, with tests/crashtestrun.py's HtmlFacts).

Pure: takes the dicts of summary.json and the bench files, returns text;
it imports nothing above params.  Here: a run's page (its classes,
regions, fault points, failures, iterations; a protection run's own),
the trends across nights, and render, which picks the page for its
inputs.  The pieces every page uses and the escape-rate chart are
htmlcharts'; the benchmarks' page is htmlbench's.  Also the home of the
class a failure is blamed on, which summary.json shares (and the exact
binomial interval of an escape rate, crashtest.stats', is imported
from here by report)."""

import json
import os

from .common import INTERRUPTED, UsageError
from .htmlbench import render_bench
from .htmlcharts import (
    FAIL_C,
    MEAS_C,
    PASS_C,
    attrs,
    chart_escapes,
    esc,
    fmt,
    legend,
    lin_axis,
    log_axis,
    note_escapes,
    page,
    svg,
    table_escapes,
    widths_of,
)
from .params import CLASS_ORDER, FAILURE_KEYS, OUTCOMES, swarm_text
from .stats import clopper_pearson  # noqa: F401 (report imports it from here)

# Outcome segments of a class bar, in drawing order, with their colours.
SEGMENTS = [
    ("detected", "#3182bd"),
    ("repaired", "#31a354"),
    ("masked", "#bdbdbd"),
    ("undetectable", "#fdae6b"),
    ("unrecoverable_by_design", "#9e9ac8"),
    ("undetected_unpromised", "#fdd0a2"),
    ("failures", "#de2d26"),
]


# ---- statistics shared with summary.json (crashtest.report) ----

# clopper_pearson lives in crashtest.stats, width_row (a width's derived
# figures) in crashtest.htmlcharts.


def blamed_classes(record):
    """The fault classes whose failure counters the failing step's report
    raised: the class a failure is blamed on; "unattributed" (the oracle's
    name for no class) when that step wrote no report (unreported)."""
    step = failing_step(record)
    if step is None:
        return []
    if unreported(record):
        return ["unattributed"]
    rep = (step.get("result") or {}).get("report") or {}
    return sorted(
        c
        for c, counts in (rep.get("classes") or {}).items()
        if any(int((counts or {}).get(k, 0) or 0) for k in FAILURE_KEYS)
    )


def failing_step(record):
    """The step RECORD's failure names, or None."""
    steps = record.get("steps") or []
    n = (record.get("failure") or {}).get("step")
    return steps[n] if isinstance(n, int) and 0 <= n < len(steps) else None


def unreported(record):
    """The failure keys of RECORD's failure when its failing stress step
    wrote no report, so that no class counted it (a recovery step's planned
    SIGKILL that landed after its FAILURE line and before its report: the
    judge read the failure from the output); else []."""
    step = failing_step(record)
    if step is None or step.get("type") != "stress" or (step.get("result") or {}).get("report"):
        return []
    f = record["failure"]
    return [k for k in (f.get("keys") or [f.get("kind")]) if k in FAILURE_KEYS]


# ---- one run ----


def class_rows(summary):
    classes = summary.get("classes") or {}
    order = sorted(classes, key=lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else 99)
    out = []
    for c in order:
        row = dict(classes[c])
        row["failures"] = sum(int(row.get(k, 0) or 0) for k in FAILURE_KEYS)
        if any(int(v or 0) for v in row.values()):
            out.append((c, row))
    return out


def chart_classes(summary):
    rows = class_rows(summary)
    if not rows:
        return '<p class="note">No fault was injected in this run.</p>'
    left, barw, rowh = 150, 620, 24
    body = []
    for i, (c, row) in enumerate(rows):
        y = 10 + i * rowh
        total = (
            max(int(row.get("injected", 0) or 0), sum(int(row.get(k, 0) or 0) for k, _ in SEGMENTS))
            or 1
        )
        seg = ['<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, y + 15, esc(c))]
        x = left
        for k, colour in SEGMENTS:
            v = int(row.get(k, 0) or 0)
            if not v:
                continue
            w = barw * v / total
            seg.append(
                '<rect x="%.1f" y="%d" width="%.1f" height="18" fill="%s"%s>'
                "<title>%s: %s %d</title></rect>"
                % (x, y + 2, max(w, 1.0), colour, attrs(key=k, value=v), esc(c), k, v)
            )
            x += w
        seg.append(
            '<text x="%d" y="%d">injected %s</text>'
            % (left + barw + 8, y + 15, fmt(int(row.get("injected", 0) or 0)))
        )
        body.append(
            '<g class="classbar"%s>%s</g>'
            % (
                attrs(
                    cls=c,
                    **{k: int(row.get(k, 0) or 0) for k in ["injected"] + [s for s, _ in SEGMENTS]}
                ),
                "".join(seg),
            )
        )
    used = {k for _, row in rows for k, _ in SEGMENTS if int(row.get(k, 0) or 0)}
    return legend([(k.replace("_", " "), c) for k, c in SEGMENTS if k in used]) + svg(
        left + barw + 110, 20 + rowh * len(rows), body, "outcomes per fault class", chart="classes"
    )


def table_classes(summary):
    rows = class_rows(summary)
    keys = OUTCOMES + ["failures"]
    out = [
        '<table id="classes-table"><tr><th class="l">class</th>%s<th class="l">failures by '
        "kind</th></tr>"
        % "".join(
            "<th>%s</th>" % esc(k.replace("unrecoverable_", "").replace("_", " ")) for k in keys
        )
    ]
    for c, row in rows:
        kinds = ", ".join(
            "%s=%d" % (k, int(row.get(k, 0) or 0)) for k in FAILURE_KEYS if row.get(k)
        )
        out.append(
            '<tr%s><td class="l">%s</td>%s<td class="l">%s</td></tr>'
            % (
                attrs(cls=c),
                esc(c),
                "".join("<td>%s</td>" % fmt(int(row.get(k, 0) or 0)) for k in keys),
                esc(kinds),
            )
        )
    return "".join(out) + "</table>"


def table_regions(summary):
    """Damage by region (summary.json `regions`): one row per class and
    region its injections named, the regions it never hit left out (the
    text table lists them)."""
    regions = summary.get("regions") or {}
    if not regions:
        return ""
    keys = [
        "injected",
        "detected",
        "repaired",
        "masked",
        "undetectable",
        "unrecoverable_by_design",
        "swallowed",
    ]
    out = [
        '<table id="regions-table"><tr><th class="l">class</th><th class="l">region</th>%s</tr>'
        % "".join(
            "<th>%s</th>" % esc(k.replace("unrecoverable_", "").replace("_", " ")) for k in keys
        )
    ]
    for c in sorted(regions, key=lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else 99):
        for r in sorted(regions[c]):
            row = regions[c][r] or {}
            out.append(
                '<tr%s><td class="l">%s</td><td class="l">%s</td>%s</tr>'
                % (
                    attrs(cls=c),
                    esc(c),
                    esc(r),
                    "".join("<td>%s</td>" % fmt(int(row.get(k, 0) or 0)) for k in keys),
                )
            )
    return "<h3>Damage by region</h3>" + "".join(out) + "</table>"


def chart_points(summary):
    pts = summary.get("engine_points") or []
    hit = summary.get("points_hit") or {}
    reached = summary.get("points_reached") or {}
    if not pts:
        return '<p class="note">The stress binary listed no fault points.</p>'
    nhit = sum(1 for p in pts if hit.get(p))
    cols, cell = 32, 22
    rows = (len(pts) + cols - 1) // cols
    body = [
        '<rect x="0" y="0" width="%.1f" height="16" fill="#31a354"/>'
        % (cols * cell * nhit / len(pts)),
        '<rect x="0" y="0" width="%d" height="16" fill="none" stroke="#999"/>' % (cols * cell),
        '<text x="%d" y="13">%d of %d engine points hit</text>' % (cols * cell + 8, nhit, len(pts)),
    ]
    for i, p in enumerate(pts):
        x, yy = (i % cols) * cell, 26 + (i // cols) * cell
        colour, what = point_state(p, hit, reached)
        body.append(
            '<rect class="point" x="%d" y="%d" width="%d" height="%d" fill="%s"%s>'
            "<title>%s: %s</title></rect>"
            % (
                x,
                yy,
                cell - 3,
                cell - 3,
                colour,
                attrs(point=p, hit=hit.get(p, 0)),
                esc(p),
                esc(what),
            )
        )
    return legend(
        [
            ("hit: a fault injected or a kill point fired there", "#31a354"),
            ("not hit: armed and passed in a process that wrote a report, never fired", "#fdae6b"),
            ("not hit", "#ddd"),
        ]
    ) + svg(
        cols * cell + 200,
        30 + rows * cell,
        body,
        "fault points hit",
        chart="points",
        hit=nhit,
        total=len(pts),
    )


def point_state(p, hit, reached):
    """A point's colour and words: hit (the one count the page and the
    summary give), or not hit and seen armed without firing, or not hit.
    The passes are known only from processes that wrote a report: a
    killed workload that hit a point leaves none, so they are no count."""
    if hit.get(p):
        return "#31a354", "hit %d times" % hit[p]
    if reached.get(p):
        return "#fdae6b", "not hit: armed and passed %d times, never fired" % reached[p]
    return "#ddd", "not hit"


def table_points(summary):
    if not summary.get("engine_points"):
        return ""
    never = summary.get("engine_points_never_hit") or []
    if not never:
        return '<p class="note">Every engine fault point was hit.</p>'
    return '<p class="note">Never hit: %s</p>' % ", ".join(
        "<code>%s</code>" % esc(p) for p in never
    )


def failures_section(summary):
    fails = summary.get("failures") or []
    total = summary.get("failures_total", len(fails))
    if not total and summary.get("internal_error"):
        return (
            '<p class="fail" id="no-failures">No iteration failed; crashtest itself failed '
            "(internal-error.txt).</p>"
        )
    if not total:
        return '<p class="pass" id="no-failures">No iteration failed.</p>'
    out = [
        '<table id="failures-table"><tr><th class="l">iteration</th><th class="l">kind</th>'
        '<th class="l">blamed class</th><th class="l">step</th><th>seed</th><th>run seed</th>'
        '<th class="l">message and repro</th><th class="l">swarm</th></tr>'
    ]
    for r in fails:
        f = r.get("failure") or {}
        # The swarm that ran (crashtest/params.py swarm_record): which op
        # kinds and rare features were on; "even mix" when none was drawn.
        sw = swarm_text(r.get("swarm")).replace("swarm: ", "", 1) or "even mix"
        out.append(
            '<tr class="failure"%s><td class="l">%s</td><td class="l">%s</td><td class="l">%s</td>'
            '<td class="l">%s</td><td>%s</td><td>%s</td><td class="l">%s<br><code>%s</code></td>'
            '<td class="l swarm">%s</td></tr>'
            % (
                attrs(id=r.get("id"), kind=f.get("kind"), seed=r.get("seed")),
                esc(r.get("id")),
                esc(f.get("kind")),
                esc(", ".join(blamed_classes(r)) or "-"),
                esc(f.get("step_name")),
                esc(r.get("seed")),
                esc(r.get("run_seed")),
                esc(f.get("message")),
                esc(r.get("repro")),
                esc(sw),
            )
        )
    out.append("</table>")
    if total > len(fails):
        out.append(
            '<p class="note">%d more failures: iterations.jsonl has them all.</p>'
            % (total - len(fails))
        )
    return "".join(out)


def chart_timeline(summary):
    rows = [r for r in summary.get("iterations") or [] if isinstance(r, dict)]
    if not rows:
        n = summary.get("iterations_total") or 0
        return (
            '<p class="note">No iteration finished.</p>'
            if not n
            else '<p class="note">summary.json holds no timeline row of its %s iterations.</p>'
            % fmt(n)
        )
    left, top, w, h = 60, 10, 760, 220
    tmax = max(float(r.get("t_end") or 0) for r in rows) or 1.0
    emax = max(float(r.get("elapsed") or 0) for r in rows) or 1.0
    parts, y = lin_axis(top, top + h, emax * 1.05, left, left + w, "s")
    body = list(parts)
    body.append(
        '<text x="%d" y="%d" text-anchor="middle">seconds since the start (iteration end)</text>'
        % (left + w / 2, top + h + 30)
    )
    for r in rows:
        x = left + float(r.get("t_end") or 0) / tmax * w
        colour = iteration_colour(r)
        body.append(
            '<circle class="iteration" cx="%.1f" cy="%.1f" r="3.5" fill="%s"%s>'
            "<title>run %s iteration %s (%s): %s, %.1f s</title></circle>"
            % (
                x,
                y(float(r.get("elapsed") or 0)),
                colour,
                attrs(verdict=r.get("verdict")),
                esc(r.get("run")),
                esc(r.get("index")),
                esc(r.get("kind")),
                esc(r.get("failure") or r.get("verdict")),
                float(r.get("elapsed") or 0),
            )
        )
    note = ""
    if (summary.get("iterations_sampled") or 1) > 1:
        note = '<p class="note">%d iterations: every %d-th shown, and every failed one.</p>' % (
            summary.get("iterations_total", len(rows)),
            summary["iterations_sampled"],
        )
    used = {iteration_colour(r) for r in rows}
    return (
        legend(
            [
                (n, c)
                for n, c in [("pass", PASS_C), ("fail", FAIL_C), ("measuring", MEAS_C)]
                if c in used
            ]
        )
        + svg(
            left + w + 20,
            top + h + 40,
            body,
            "iterations over time: duration and outcome",
            chart="timeline",
            count=len(rows),
        )
        + note
    )


def iteration_colour(r):
    if r.get("verdict") == "fail":
        return FAIL_C
    return MEAS_C if "measuring" in (r.get("judging_mode") or "") else PASS_C


def table_kinds(summary):
    if not summary.get("iterations"):
        return ""
    kinds = {}
    for r in summary.get("iterations") or []:
        k = kinds.setdefault(r.get("kind"), [0, 0, 0.0])
        k[0] += 1
        k[1] += r.get("verdict") == "fail"
        k[2] += float(r.get("elapsed") or 0)
    out = [
        '<table id="kinds-table"><tr><th class="l">kind</th><th>iterations</th><th>failed</th>'
        "<th>mean s</th></tr>"
    ]
    for k, (n, f, s) in sorted(kinds.items(), key=lambda kv: str(kv[0])):
        out.append(
            '<tr><td class="l">%s</td><td>%d</td><td>%d</td><td>%.1f</td></tr>'
            % (esc(k), n, f, s / n)
        )
    return "".join(out) + "</table>"


def verdict_class(verdict):
    """The CSS class of a run's verdict: an interrupted run is neither
    green nor red."""
    return "pass" if verdict == "pass" else "interrupted" if verdict == INTERRUPTED else "fail"


def known(v):
    """V for the page, or "unknown": a field is never printed empty."""
    return "unknown" if v is None or v == "" else esc(v)


def header(summary, src):
    """The title with the verdict, and what the counts under it mean."""
    b = summary.get("build") or {}
    verdict = summary.get("verdict", "?")
    if summary.get("mode") == "protection":
        counts = [
            "%s stress runs of cache flips, %s failed on their own oracle; the verdict also judges "
            "their flips summed per width and pattern (below)"
            % (fmt(summary.get("iterations_total", 0)), fmt(summary.get("failed", 0)))
        ]
    else:
        counts = [
            "%s iterations (crash cycles), %s failed, %s measuring (options the oracle cannot "
            "judge: --measure)"
            % (
                fmt(summary.get("iterations_total", len(summary.get("iterations") or []))),
                fmt(summary.get("failed", 0)),
                fmt(summary.get("measuring", 0)),
            )
        ]
        counts += ["shard %s" % esc(summary["shard"])] if summary.get("shard") else []
        counts += ["-j %s" % esc(summary["jobs"])] if summary.get("jobs") else []
    fields = counts + [
        esc(hms(summary.get("elapsed_s") or 0)),
        "seed %s%s"
        % (known(summary.get("seed")), "" if summary.get("seed_given", True) else " (random)"),
        "started %s" % known(summary.get("started")),
        "git %s" % known(b.get("git_describe")),
        "host %s" % known(b.get("host")),
        "from <code>%s</code>" % esc(src),
    ]
    return (
        '<h1>crashtest %s: <span class="%s" id="verdict">%s</span></h1><p class="meta">%s</p>%s'
        % (
            known(summary.get("mode")),
            verdict_class(verdict),
            esc(verdict.upper()),
            "; ".join(fields),
            planted_note(summary),
        )
    )


def planted_note(summary):
    if not summary.get("planted_bugs"):
        return ""
    return (
        '<p class="fail">The engine under test carries planted bug(s) %s (tests/mutants.txt): a '
        "mutant.</p>" % esc(", ".join(summary["planted_bugs"]))
    )


def hms(s):
    s = int(s)
    return "%02d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)


def run_body(summary, src):
    if summary.get("mode") == "protection":
        return protection_body(summary, src)
    return "".join(
        [
            header(summary, src),
            "<h2>Outcomes per fault class</h2>",
            chart_classes(summary),
            table_classes(summary),
            table_regions(summary),
            "<h2>Per-KV protection: escape rate per width</h2>",
            chart_escapes(summary),
            table_escapes(summary),
            note_escapes(summary),
            "<h2>Fault points</h2>",
            chart_points(summary),
            table_points(summary),
            "<h2>Failures</h2>",
            failures_section(summary),
            "<h2>Iterations over time</h2>",
            chart_timeline(summary),
            table_kinds(summary),
        ]
    )


def protection_body(summary, src):
    """A protection run's page: its runs are cache flips only (no crash,
    no fault class, no fault point), judged by their sums."""
    return "".join(
        [
            header(summary, src),
            "<h2>Per-KV protection: escape rate per width</h2>",
            chart_escapes(summary),
            table_escapes(summary),
            note_escapes(summary),
            "<h2>Flips by region</h2>",
            '<p class="note">The same flips by where they landed, each region against the '
            "bound of its own expected escapes: a view of where a code is weaker, not part of the "
            "verdict.</p>",
            table_flip_regions(summary),
            "<h2>Failed stress runs</h2>",
            protection_failures(summary),
        ]
    )


def table_flip_regions(summary):
    """protection's summary `regions`: per width and region, the flips
    checked (every pattern) and their verdict."""
    out = [
        '<table id="flip-regions-table"><tr><th>w</th><th class="l">region</th>'
        "<th>flips checked</th><th>escaped</th><th>rate</th><th>95% interval</th>"
        '<th>expected rate</th><th>bound</th><th class="l">against its bound</th></tr>'
    ]
    for w, rs in sorted((summary.get("regions") or {}).items(), key=lambda kv: int(kv[0])):
        for r, c in sorted(rs.items()):
            ci = c.get("ci95")
            out.append(
                '<tr><td>%s</td><td class="l">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                '<td>%s</td><td>%s</td><td class="l">%s</td></tr>'
                % (
                    esc(w),
                    esc(r),
                    fmt(c.get("checked")),
                    fmt(c.get("escaped")),
                    fmt(c.get("rate")),
                    "%.3g .. %.3g" % tuple(ci) if ci else "-",
                    fmt(c.get("expected_rate")),
                    fmt(c.get("bound")),
                    "above" if c.get("fail") else "within",
                )
            )
    if len(out) == 1:
        return '<p class="note">No ledger named the region of a checked flip.</p>'
    return "".join(out) + "</table>"


def protection_failures(summary):
    """The stress runs that failed on their own, with their repro command."""
    fails = summary.get("failures") or []
    if not fails:
        cls = "pass" if summary.get("verdict") == "pass" else "note"
        return '<p class="%s" id="no-failures">No stress run failed on its own.</p>' % cls
    out = [
        '<table id="failures-table"><tr><th>run</th><th>w</th><th>exit</th><th>flips</th>'
        '<th>after s</th><th class="l">folder and command</th></tr>'
    ]
    for r in fails:
        out.append(
            '<tr class="failure"%s><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
            '<td class="l"><code>%s</code><br><code>%s</code></td></tr>'
            % (
                attrs(id=r.get("index"), kind="exit %s" % r.get("rc"), seed=r.get("seed")),
                fmt(r.get("index")),
                fmt(r.get("w")),
                esc(r.get("rc")),
                fmt(r.get("flips")),
                fmt(r.get("at")),
                known(r.get("dir")),
                esc(r.get("command")),
            )
        )
    return "".join(out) + "</table>"


# ---- several nights ----


def night_label(summary, src):
    return (summary.get("started") or "")[:16].replace("T", " ") or os.path.basename(
        src.rstrip("/")
    )


def chart_trend(nights, key, label, fn):
    """One line per night series: FN(summary) -> value."""
    left, top, w, h = 60, 10, 700, 160
    vals = [fn(s) for s, _ in nights]
    vmax = max([v for v in vals if v is not None] or [1]) or 1
    parts, y = lin_axis(top, top + h, vmax * 1.1, left, left + w)
    body = list(parts)
    n = len(nights)
    pts = []
    for i, ((s, src), v) in enumerate(zip(nights, vals)):
        x = left + (w * (i + 0.5) / n)
        body.append(
            '<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
            % (x, top + h + 16, esc(night_label(s, src)[5:]))
        )
        if v is None:
            continue
        pts.append("%.1f,%.1f" % (x, y(v)))
        body.append(
            '<circle class="night" cx="%.1f" cy="%.1f" r="4" fill="#3182bd"%s><title>%s: %s</title>'
            "</circle>" % (x, y(v), attrs(value=v), esc(night_label(s, src)), v)
        )
    if len(pts) > 1:
        body.insert(
            len(parts), '<polyline points="%s" fill="none" stroke="#3182bd"/>' % " ".join(pts)
        )
    return "<h3>%s</h3>" % esc(label) + svg(
        left + w + 20, top + h + 24, body, label, chart="trend-" + key
    )


def trends_section(nights):
    out = [
        '<h2>Trends across %d report directories</h2><p class="meta" id="series">One series: every '
        "night is a run of %s (a trend never mixes modes or engines).</p>"
        % (len(nights), esc(series_of(nights[0][0]))),
        chart_trend(
            nights, "failures", "failed iterations per night", lambda s: s.get("failed", 0)
        ),
        chart_trend(
            nights,
            "iterations",
            "iterations per night",
            lambda s: s.get("iterations_total", len(s.get("iterations") or [])),
        ),
    ]
    widths = sorted({w for s, _ in nights for w, _ in widths_of(s)})
    left, top, w, h = 70, 10, 700, 240
    parts, y = log_axis(top, top + h, -20, 0, left, left + w)
    body = list(parts)
    colours = {1: "#de2d26", 2: "#3182bd", 4: "#31a354", 8: "#756bb1"}
    for wd in widths:
        for i, (s, src) in enumerate(nights):
            row = dict(widths_of(s)).get(wd)
            if not row or not row.get("ci95"):
                continue
            x = left + w * (i + 0.5) / len(nights) + (widths.index(wd) - len(widths) / 2) * 8
            v = row["rate"] if row.get("rate") else row["ci95"][1]
            body.append(
                '<circle class="night-escape" cx="%.1f" cy="%.1f" r="4" fill="%s"%s%s>'
                "<title>w=%d %s: %s</title></circle>"
                % (
                    x,
                    y(v),
                    colours.get(wd, "#999"),
                    "" if row.get("rate") else ' fill-opacity="0.3"',
                    attrs(w=wd, rate=row.get("rate")),
                    wd,
                    esc(night_label(s, src)),
                    "rate %.3g" % row["rate"]
                    if row.get("rate")
                    else "no escape, 95%% upper %.3g" % row["ci95"][1],
                )
            )
    if widths:
        out.append("<h3>escape rate per night (hollow: no escape, the interval's upper end)</h3>")
        out.append(legend([("w=%d" % wd, colours.get(wd, "#999")) for wd in widths]))
        out.append(
            svg(left + w + 20, top + h + 10, body, "escape rates per night", chart="trend-escapes")
        )
    out.append(
        '<table id="nights-table"><tr><th class="l">night</th><th class="l">mode</th>'
        '<th>iterations</th><th>failed</th><th class="l">verdict</th><th class="l">git</th>'
        '<th class="l">directory</th></tr>'
    )
    for s, src in nights:
        out.append(
            '<tr><td class="l">%s</td><td class="l">%s</td><td>%s</td><td>%s</td>'
            '<td class="l">%s</td><td class="l">%s</td><td class="l"><code>%s</code></td></tr>'
            % (
                esc(night_label(s, src)),
                esc(s.get("mode")),
                fmt(s.get("iterations_total", len(s.get("iterations") or []))),
                fmt(s.get("failed", 0)),
                esc(s.get("verdict")),
                esc((s.get("build") or {}).get("git_describe")),
                esc(src),
            )
        )
    return "".join(out) + "</table>"


def load_summary(d):
    path = os.path.join(d, "summary.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(
            "%s: no readable summary.json (%s): give report directories of crashtest runs"
            % (d, getattr(e, "strerror", None) or e)
        )


def series_of(summary):
    """The series a night belongs to: its mode, the engine it ran (another
    engine's nights, or ours through the fault door, are a series of their
    own) and its planted bugs (a mutant's simple run is no night of the
    real engine's simple series)."""
    bugs = sorted(summary.get("planted_bugs") or [])
    engine = summary.get("engine") or "ours"
    via = summary.get("faults_via") or ("hooks" if engine == "ours" else "posix")
    return "%s%s%s%s" % (
        summary.get("mode"),
        "" if engine == "ours" else " on %s" % engine,
        " through the fault door" if engine == "ours" and via == "posix" else "",
        " with planted bug %s" % ", ".join(bugs) if bugs else "",
    )


def one_series(nights):
    """Refuse NIGHTS [(summary, dir)] that are not one series: a trend
    across modes, or across engines, compares nothing."""
    unnamed = [d for s, d in nights if not s.get("mode")]
    if unnamed:
        raise UsageError(
            "%s: summary.json names no mode: a trend takes the runs of one mode" % unnamed[0]
        )
    modes = sorted({s["mode"] for s, _ in nights})
    if len(modes) > 1:
        raise UsageError(
            "report directories of different modes (%s): give the runs of one mode for a trend"
            % ", ".join(modes)
        )
    series = sorted({series_of(s) for s, _ in nights})
    if len(series) > 1:
        raise UsageError(
            "report directories of one mode on different engines (%s): give the runs of one engine "
            "for a trend" % "; ".join(series)
        )


def render_runs(dirs):
    """The page for one report directory, or for several (nights): the
    latest in full, after the trends."""
    nights = sorted(((load_summary(d), d) for d in dirs), key=lambda sd: sd[0].get("started") or "")
    if len(nights) > 1:
        one_series(nights)
    last, src = nights[-1]
    body = ""
    if len(nights) > 1:
        body += trends_section(nights) + "<h2>The latest night in full</h2>"
    return page(
        "crashtest %s %s" % (last.get("mode"), last.get("verdict")), body + run_body(last, src)
    )


# ---- any input ----


def render(inputs):
    """The page for INPUTS: report directories, or bench JSON files (or a
    folder of them, such as build/bench)."""
    runs, bench = [], []
    for x in inputs:
        if os.path.isdir(x) and os.path.exists(os.path.join(x, "summary.json")):
            runs.append(x)
        elif os.path.isdir(x) and os.path.exists(os.path.join(x, "mutants.json")):
            raise UsageError(
                "%s is a mutants report folder: each planted bug's simple run is a folder in it, a "
                "series of its own" % x
            )
        elif os.path.isdir(x):
            found = sorted(os.path.join(x, f) for f in os.listdir(x) if f.endswith(".json"))
            if not found:
                raise UsageError("%s holds neither summary.json nor benchmark JSON" % x)
            bench.extend(found)
        elif x.endswith(".json") and os.path.isfile(x):
            bench.append(x)
        else:
            raise UsageError("%s: not a report directory or a benchmark JSON file" % x)
    if runs and bench:
        raise UsageError("give report directories or benchmark JSON, not both")
    return render_runs(runs) if runs else render_bench(bench)


def write_page(path, text):
    """TEXT to PATH whole or not at all: no PATH.tmp is left behind."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
