"""The HTML report: one self-contained page from one or more report
directories (crashtest.py report DIR..., and report.html at the end of
every run), or from the benchmarks' JSON (make bench-report).

Inline SVG and CSS only: no script, no network, nothing to load, so the
file reads the same mailed, archived or opened from a CI artifact.  Charts
come first, the tables with their exact figures under them.  Every chart
element carries its figures in data-* attributes (tests/test_crashtest.py
checks them against the JSON the page was made from).

Pure: takes the dicts of summary.json and the bench files, returns text;
it imports nothing above params.  Also the home of the statistics the
summary and the page share (the exact binomial interval of an escape
rate) and of the class a failure is blamed on."""

import datetime
import html
import json
import math
import os

from .common import INTERRUPTED, UsageError
from .params import CLASS_ORDER, FAILURE_KEYS, swarm_text
from .stats import clopper_pearson

# Outcome segments of a class bar, in drawing order, with their colours.
SEGMENTS = [
    ("detected", "#3182bd"),
    ("repaired", "#31a354"),
    ("masked", "#bdbdbd"),
    ("undetectable", "#fdae6b"),
    ("unrecoverable_by_design", "#9e9ac8"),
    ("failures", "#de2d26"),
]
PASS_C, FAIL_C, MEAS_C = "#31a354", "#de2d26", "#fdae6b"
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;
color:#222;padding:0 16px}h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555}.pass{color:#31a354;font-weight:600}.fail{color:#de2d26;font-weight:600}
.interrupted{color:#e6550d;font-weight:600}
table{border-collapse:collapse;margin:8px 0 4px;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}code{font-size:12px;word-break:break-all}
svg{display:block;margin:6px 0;max-width:100%;height:auto}
svg text{font:12px system-ui,sans-serif;fill:#333}.note{color:#666;font-size:12px}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
"""


def esc(s):
    return html.escape("" if s is None else str(s), quote=True)


def attrs(**kv):
    """data-* attributes from KV (underscores become dashes)."""
    return "".join(
        ' data-%s="%s"' % (k.replace("_", "-"), esc(v if not isinstance(v, float) else repr(v)))
        for k, v in kv.items()
    )


def fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float):
        return "{:,.0f}".format(x) if abs(x) >= 1000 else "%.3g" % x
    if isinstance(x, int):
        return "{:,}".format(x)
    return esc(x)


# ---- statistics shared with summary.json (crashtest.report) ----

# clopper_pearson lives in crashtest.stats (imported above).


def width_row(w, row):
    """ROW of the per-width table with its derived figures (older
    summaries lack them): rate, ci95, nominal 2^-8w, bound_rate."""
    row = dict(row)
    n, x = int(row.get("checked", 0) or 0), int(row.get("escaped", 0) or 0)
    row.setdefault("bound", None)
    if "rate" not in row:
        row["rate"] = x / n if n else None
    if "ci95" not in row:
        row["ci95"] = list(clopper_pearson(x, n)) if n else None
    row["nominal"] = 2.0 ** (-8 * w) if w else None
    if row.get("bound") is not None and "bound_rate" not in row:
        row["bound_rate"] = row["bound"] / n if n else None
    row.setdefault("bound_rate", None)
    row.setdefault("expected_rate", None)
    # The judgement the chart shows: inside the bound the escapes are what
    # the codes allow; None when nothing was checked or no bound is known.
    row["within_bound"] = None if not n or row["bound"] is None else x <= int(row["bound"])
    return row


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


# ---- SVG pieces ----


def svg(width, height, body, label, **data):
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
        'role="img" aria-label="%s"%s>%s</svg>'
        % (width, height, width, height, esc(label), attrs(**data), "".join(body))
    )


def legend(items):
    return '<div class="legend">%s</div>' % "".join(
        '<span><i style="background:%s"></i>%s</span>' % (c, esc(n)) for n, c in items
    )


def log_axis(y0, y1, lo_exp, hi_exp, x0, x1):
    """Horizontal grid lines and labels of a log10 axis from 10^LO_EXP to
    10^HI_EXP between pixel rows Y0 (top) and Y1; returns (parts, y(v))."""

    def y(v):
        e = math.log10(max(v, 10.0**lo_exp))
        return y1 - (e - lo_exp) / (hi_exp - lo_exp) * (y1 - y0)

    parts = []
    step = 2 if hi_exp - lo_exp > 12 else 1
    for e in range(lo_exp, hi_exp + 1, step):
        yy = y(10.0**e)
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (x0, x1, yy, yy))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">1e%d</text>' % (x0 - 4, yy + 4, e))
    return parts, y


def lin_axis(y0, y1, vmax, x0, x1, unit=""):
    vmax = vmax or 1.0
    step = 10 ** math.floor(math.log10(vmax))
    if vmax / step < 2.5:
        step /= 2
    parts = []

    def y(v):
        return y1 - (v / vmax) * (y1 - y0)

    v = 0.0
    while v <= vmax * 1.0001:
        yy = y(v)
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (x0, x1, yy, yy))
        parts.append(
            '<text x="%d" y="%.1f" text-anchor="end">%s%s</text>' % (x0 - 4, yy + 4, "%g" % v, unit)
        )
        v += step
    return parts, y


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
    keys = [
        "injected",
        "detected",
        "repaired",
        "masked",
        "undetectable",
        "unrecoverable_by_design",
        "failures",
    ]
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


def widths_of(summary):
    out = []
    for w, row in sorted(
        (summary.get("protection_widths") or {}).items(), key=lambda kv: int(kv[0])
    ):
        if int(w) > 0:
            out.append((int(w), width_row(int(w), row)))
    return out


# The marks of the escape-rate chart, in legend order: (mark, colour).
# The legend lists a mark only when the chart draws it.
ESC_COLOURS = [
    ("observed", "#222"),
    ("observed-over", FAIL_C),
    ("observed-none", "#222"),
    ("ci", "#3182bd"),
    ("bound", "#756bb1"),
    ("expected", "#31a354"),
    ("nominal", "#999"),
]


def escape_words(summary):
    """What each mark of the escape chart means, for SUMMARY's mode."""
    protection = summary.get("mode") == "protection"
    return {
        "observed": "observed escape rate, within its bound",
        "observed-over": "observed escape rate, above its bound: the width fails",
        "observed-none": "no escape observed (rate 0, drawn on the axis floor)",
        "ci": "its 95% interval (exact)",
        "bound": (
            "bound: the most escapes the construction's expected escapes allow (Poisson, odds "
            "below 1e-6 above it), per flip checked"
            if protection
            else "bound: the oracle's Poisson bound on escapes, summed over the stress processes, "
            "per flip checked"
        ),
        "expected": "expected from the construction (the checked patterns' odds)",
        "nominal": "2^-8w: a w-byte hash's odds for any flip (a reference, not a limit)",
    }


def hline(mark, cx, yy, colour, title, dash=False):
    return (
        '<line data-mark="%s" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" '
        'stroke-width="%d"%s><title>%s</title></line>'
        % (
            mark,
            cx - 40,
            cx + 40,
            yy,
            yy,
            colour,
            2 if dash else 3,
            ' stroke-dasharray="4 3"' if dash else "",
            esc(title),
        )
    )


def escape_marks(w, row, cx, y):
    """The marks of width W's column centred on CX: [(mark, svg)].  A rate
    of 0 (no escape, a bound of 0 escapes) sits on the axis floor."""
    c = dict(ESC_COLOURS)
    n, x, ci = int(row.get("checked") or 0), int(row.get("escaped") or 0), row.get("ci95")
    out = [
        (
            "nominal",
            hline(
                "nominal",
                cx,
                y(row["nominal"]),
                c["nominal"],
                "2^-%d = %.3g (reference)" % (8 * w, row["nominal"]),
                dash=True,
            ),
        )
    ]
    if not n:
        return out
    if row.get("expected_rate") is not None:
        out.append(
            (
                "expected",
                hline(
                    "expected",
                    cx,
                    y(row["expected_rate"]),
                    c["expected"],
                    "expected from the construction %.3g" % row["expected_rate"],
                ),
            )
        )
    if row.get("bound") is not None:
        out.append(
            (
                "bound",
                hline(
                    "bound",
                    cx,
                    y(row["bound_rate"] or 0),
                    c["bound"],
                    "bound %d escapes in %d "
                    "(%.3g per flip)" % (int(row["bound"]), n, row["bound_rate"] or 0),
                ),
            )
        )
    if ci:
        out.append(("ci", interval_mark(ci, cx, y, c["ci"])))
    out.append(observed_mark(row, n, x, cx, y))
    return out


def interval_mark(ci, cx, y, colour):
    """The 95% interval CI = (low, high) of a column centred on CX: a
    vertical line with a tick at its top."""
    return (
        '<line data-mark="ci" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" '
        'stroke-width="2"><title>95%% interval %.3g .. %.3g</title></line>'
        '<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>'
        % (
            cx,
            cx,
            y(ci[0]),
            y(ci[1]),
            colour,
            ci[0],
            ci[1],
            cx - 8,
            cx + 8,
            y(ci[1]),
            y(ci[1]),
            colour,
        )
    )


def observed_mark(row, n, x, cx, y):
    """The observed rate of ROW, X escapes of N flips checked, as a dot on
    the column centred on CX: (mark, svg), the mark saying none, within
    the bound or over it."""
    c = dict(ESC_COLOURS)
    mark = (
        "observed-none"
        if not x
        else "observed"
        if row.get("within_bound") is not False
        else "observed-over"
    )
    paint = ' fill="none" stroke="%s" stroke-width="2"' if not x else ' fill="%s"'
    return (
        mark,
        '<circle data-mark="%s" cx="%.1f" cy="%.1f" r="5"%s>'
        "<title>observed %.3g (%d of %d)</title></circle>"
        % (mark, cx, y(x / n), paint % c[mark], x / n, x, n),
    )


def width_caption(row):
    """The words under a width's column: what its marks add up to."""
    n, x = int(row.get("checked") or 0), int(row.get("escaped") or 0)
    if not n:
        return "no flip checked"
    if row.get("within_bound") is None:
        return "%s of %s, bound unknown" % (fmt(x), fmt(n))
    return "%s of %s: %s bound %s" % (
        fmt(x),
        fmt(n),
        "within" if row["within_bound"] else "ABOVE",
        fmt(int(row["bound"])),
    )


def chart_escapes(summary):
    """Observed escape rate per protection width with its 95% interval,
    against the bound its verdict used, the construction's expected rate
    and 2^-8w, on a log scale."""
    ws = widths_of(summary)
    if not ws:
        return (
            '<p class="note">No iteration ran with per-KV protection (w &gt; 0): no escape '
            "rate to show.</p>"
        )
    left, top, h, colw = 70, 10, 300, 170
    width = left + colw * len(ws) + 20
    parts, y = log_axis(top, top + h, -20, 0, left, width - 10)
    body, drawn = list(parts), set()
    for i, (w, row) in enumerate(ws):
        cx = left + colw * i + colw / 2
        cap = width_caption(row)
        body.append(
            '<text x="%.1f" y="%d" text-anchor="middle">w=%d</text>' % (cx, top + h + 18, w)
        )
        for k, part in enumerate(cap.split(": ")):  # the counts, then the judgement, one line each
            body.append(
                '<text x="%.1f" y="%d" text-anchor="middle" class="caption"%s>%s</text>'
                % (
                    cx,
                    top + h + 34 + 15 * k,
                    ' fill="%s"' % FAIL_C if "ABOVE" in part else "",
                    esc(part),
                )
            )
        marks = escape_marks(w, row, cx, y)
        drawn.update(m for m, _ in marks)
        ci = row.get("ci95")
        body.append(
            '<g class="width"%s>%s</g>'
            % (
                attrs(
                    w=w,
                    checked=row.get("checked", 0),
                    escaped=row.get("escaped", 0),
                    rate=row.get("rate"),
                    ci_low=ci[0] if ci else None,
                    ci_high=ci[1] if ci else None,
                    nominal=row["nominal"],
                    bound=row.get("bound"),
                    bound_rate=row.get("bound_rate"),
                    expected_rate=row.get("expected_rate"),
                    within_bound=row.get("within_bound"),
                ),
                "".join(s for _, s in marks),
            )
        )
    words = escape_words(summary)
    look = {m: "background:%s" % c for m, c in ESC_COLOURS}
    look["observed-none"] = "border:2px solid #222;border-radius:50%;width:7px;height:7px"
    items = "".join(
        '<span data-legend="%s"><i style="%s"></i>%s</span>' % (m, look[m], esc(words[m]))
        for m, _ in ESC_COLOURS
        if m in drawn
    )
    return '<div class="legend">%s</div>' % items + svg(
        width, top + h + 58, body, "escape rate per protection width", chart="escapes"
    )


def table_escapes(summary):
    ws = widths_of(summary)
    if not ws:
        return ""
    runs = "stress runs" if summary.get("mode") == "protection" else "iterations"
    out = [
        '<table id="escapes-table"><tr><th>w</th><th>%s</th><th>cache flips checked</th>'
        "<th>escaped</th><th>rate</th><th>95%% interval</th><th>expected rate</th>"
        '<th>bound (escapes allowed)</th><th class="l">judged</th><th>2^-8w (reference)</th>'
        "</tr>" % runs
    ]
    for w, row in ws:
        ci = row.get("ci95")
        out.append(
            "<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
            '<td>%s</td><td class="l">%s</td><td>%s</td></tr>'
            % (
                w,
                fmt(row.get("iterations")),
                fmt(row.get("checked")),
                fmt(row.get("escaped")),
                fmt(row.get("rate")),
                "%.3g .. %.3g" % tuple(ci) if ci else "-",
                fmt(row.get("expected_rate")),
                fmt(row.get("bound")),
                esc(width_caption(row)),
                fmt(row["nominal"]),
            )
        )
    out.append("</table>")
    return "".join(out) + table_patterns(summary)


def table_patterns(summary):
    """crashtest.py protection: per width and pattern (checked flips, V9)."""
    prot = summary.get("protection") or {}
    if not prot:
        return ""
    out = [
        '<table id="patterns-table"><tr><th>w</th><th>pattern</th><th>flips checked</th>'
        "<th>escaped</th><th>rate</th><th>95% interval</th><th>expected</th><th>bound</th>"
        "<th>verdict</th></tr>"
    ]
    for w, row in sorted(prot.items(), key=lambda kv: int(kv[0])):
        for name, c in (row.get("patterns") or {}).items():
            if not c.get("checked"):
                continue
            ci = c.get("ci95")
            verdict = "FAIL" if c.get("fail") else "ok"
            if c.get("consistent") is not None:
                verdict += ", consistent" if c["consistent"] else ", not consistent with expected"
            out.append(
                "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                "<td>%s</td><td>%s</td></tr>"
                % (
                    esc(w),
                    esc(name),
                    fmt(c.get("checked")),
                    fmt(c.get("escaped")),
                    fmt(c.get("rate")),
                    "%.3g .. %.3g" % tuple(ci) if ci else "-",
                    fmt(c.get("expected_rate")),
                    fmt(c.get("bound")),
                    esc(verdict),
                )
            )
    return "".join(out) + "</table>"


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


def note_escapes(summary):
    """What an escape is and what judges it, for SUMMARY's mode."""
    if summary.get("mode") == "protection":
        judged = (
            "Each width and each (width, pattern) cell is judged against the Poisson bound of the "
            "escapes the construction expects from the flips checked (crashtest/stats.py "
            "poisson_bound: more escapes have odds below 1e-6); a flip of odd parity may never "
            "escape."
        )
    else:
        judged = (
            "Each stress process is judged against the oracle's Poisson bound on its own escapes; "
            "a width's bound is their sum: escapes above it mean a process failed, and inside it "
            "each process's own verdict decides (Failures, below)."
        )
    return (
        '<p class="note">An escape is a flipped cache entry read back without a report. %s The '
        "codes' odds depend on the flip (two flips in one part escape at 2^-(8w-3)), so an "
        "observed rate above 2^-8w, a truncated hash's odds for any flip, is no "
        "failure.</p>" % judged
    )


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


def page(title, body):
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><style>%s</style>'
        '</head><body>%s<p class="note">Made by crashtest.py report on %s (a self-contained page: '
        "no script, no network).</p></body></html>\n"
        % (esc(title), CSS, body, datetime.datetime.now().isoformat(timespec="seconds"))
    )


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


# ---- benchmarks ----

# RocksDB PR 11287's published readrandom cost of block_protection_bytes_per_key
# (on vs off) per cache size (fraction of the data; 0: 8 MiB), as in
# bench/run_protection.sh; PostgreSQL's seed figures, as in bench/run_wal.sh.
ROCKS_PROTECTION = {1.0: -10.0, 0.9: -15.0, 0.8: -10.8, 0.5: -15.0, 0.0: -23.0}
PG_SEED = {"wal_bytes": 1.40, "archive_bytes": 2.0, "vacuum_s": 20.0}
PG_SEED_COMPRESSED = {"wal_bytes": 1.00, "vacuum_s": 15.0}


def bar_chart(groups, series, label, chart, unit="", ref=None, spread=None):
    """Grouped vertical bars: GROUPS [(name, {series: value})], SERIES
    [(name, colour)]; REF a value drawn as a dashed line; SPREAD
    {(group, series): (lo, hi)} drawn as whiskers (the rounds' min, max)."""
    spread = spread or {}
    vals = [v for _, g in groups for v in g.values() if v is not None]
    vals += [x for lo_hi in spread.values() for x in lo_hi if x is not None]
    if not vals:
        return '<p class="note">No figures.</p>'
    lo, hi = min(vals + [0, ref or 0]), max(vals + [0, ref or 0])
    raw = ((hi - lo) or 1.0) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    vmin, vmax = math.floor(lo / step) * step, math.ceil(hi / step) * step
    span = (vmax - vmin) or 1.0
    left, top, h = 60, 10, 240
    gw = max(80, 18 * len(series) + 24)
    width = left + gw * len(groups) + 20
    rot = max(len(n) for n, _ in groups) * 6.5 > gw  # long names: slanted

    def y(v):
        return top + h - (v - vmin) / span * h

    body = []
    v = vmin
    while v <= vmax + step / 2:
        body.append(
            '<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" '
            'text-anchor="end">%g%s</text>'
            % (left, width - 10, y(v), y(v), left - 4, y(v) + 4, round(v, 6), unit)
        )
        v += step
    body.append(
        '<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#888"/>' % (left, width - 10, y(0), y(0))
    )
    if ref is not None:
        body.append(
            '<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="5 3"/>'
            % (left, width - 10, y(ref), y(ref))
        )
    for i, (name, g) in enumerate(groups):
        x0 = left + gw * i + 10
        cx = x0 + gw / 2 - 10
        if rot:
            body.append(
                '<text x="%.1f" y="%d" text-anchor="end" transform="rotate(-30 %.1f %d)">%s</text>'
                % (cx + 6, top + h + 14, cx + 6, top + h + 14, esc(name))
            )
        else:
            body.append(
                '<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                % (cx, top + h + 16, esc(name))
            )
        body += group_bars(name, g, series, x0, y, unit, spread)
    low = max(len(n) for n, _ in groups) * 3.6 + 20 if rot else 26
    return legend(series) + svg(width, int(top + h + low), body, label, chart=chart)


def group_bars(name, g, series, x0, y, unit, spread):
    """bar_chart's bars of group NAME (values G by series) from X0, one per
    series that has a value, each with its whisker when SPREAD has one:
    [svg]."""
    body = []
    for j, (s, colour) in enumerate(series):
        v = g.get(s)
        if v is None:
            continue
        y1, y2 = sorted((y(v), y(0)))
        body.append(
            '<rect class="bar" x="%.1f" y="%.1f" width="16" height="%.1f" fill="%s"%s>'
            "<title>%s %s: %.3g%s</title></rect>"
            % (
                x0 + 18 * j,
                y1,
                max(y2 - y1, 1),
                colour,
                attrs(group=name, series=s, value=v),
                esc(name),
                esc(s),
                v,
                unit,
            )
        )
        lo_hi = spread.get((name, s))
        if lo_hi and None not in lo_hi:
            xm = x0 + 18 * j + 8
            body.append(
                '<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333">'
                "<title>rounds %.3g .. %.3g</title></line>"
                % (xm, xm, y(lo_hi[0]), y(lo_hi[1]), lo_hi[0], lo_hi[1])
            )
    return body


def cache_name(fraction):
    """A cache size of bench-protection as the chart names it: its FRACTION
    of the database, or the default 8 MiB (fraction 0)."""
    return "8 MiB" if not fraction else "%d%%" % round(fraction * 100)


def bench_protection(rows):
    fr = sorted({r["cache_fraction"] for r in rows}, reverse=True)
    ws = sorted({r["width"] for r in rows if r["width"]})
    R = {(r["cache_fraction"], r["width"]): r for r in rows}
    colours = ["#fdae6b", "#e6550d", "#3182bd", "#31a354"]
    series = [("w=%d" % w, colours[i % 4]) for i, w in enumerate(ws)] + [
        ("RocksDB PR 11287", "#999")
    ]
    groups = []
    for f in fr:
        g = {"w=%d" % w: round((R[(f, w)]["ratio"] - 1) * 100, 2) for w in ws if (f, w) in R}
        g["RocksDB PR 11287"] = ROCKS_PROTECTION.get(round(f, 1))
        groups.append(("cache " + cache_name(f), g))
    out = [
        "<h2>Per-KV protection: readrandom cost per width and cache size</h2>",
        bar_chart(groups, series, "protection cost", "bench-protection", "%"),
        '<p class="note">Ops/s change against w = 0 at the same cache size (median of interleaved '
        "cells); grey: RocksDB's published figures (PR 11287, on vs off).</p>",
        '<table><tr><th class="l">cache</th>%s<th>memory per key (w=8)</th></tr>'
        % "".join("<th>w=%d ops/s (ratio)</th>" % w for w in ws),
    ]
    for f in fr:
        out.append(
            '<tr><td class="l">%s</td>%s<td>%s</td></tr>'
            % (
                cache_name(f),
                "".join(
                    "<td>%s (%.3f)</td>" % (fmt(R[(f, w)]["ops"]), R[(f, w)]["ratio"])
                    if (f, w) in R
                    else "<td>-</td>"
                    for w in ws
                ),
                fmt((R.get((f, 8)) or {}).get("memory_bytes_per_key")),
            )
        )
    return "".join(out) + "</table>"


def wal_label(r):
    parts = ["checksums " + ("on" if r.get("data_checksums") in (1, True, "1", "on") else "off")]
    if r.get("wal_compression") not in (None, "none", 0):
        parts.append(str(r["wal_compression"]))
    if r.get("wal_log_hints") in (1, True, "1"):
        parts.append("wal_log_hints")
    if r.get("hint_fpi") in (1, True, "1"):
        parts.append("hint_fpi")
    return ", ".join(parts)


def bench_wal(rows):
    base = rows[0]
    keys = [("wal_bytes", "#3182bd"), ("archive_bytes", "#31a354"), ("vacuum_s", "#e6550d")]
    groups = []
    for r in rows[1:]:
        groups.append(
            (wal_label(r), {k: round(r[k] / base[k], 3) if base.get(k) else None for k, _ in keys})
        )
    groups.append(("PostgreSQL seed", dict(PG_SEED)))
    groups.append(("PG seed, compressed", dict(PG_SEED_COMPRESSED)))
    out = [
        "<h2>WAL and vacuum cost of checksums</h2>",
        bar_chart(groups, keys, "WAL and vacuum ratios", "bench-wal", "x", ref=1.0),
        '<p class="note">Ratios to the first row (%s); the last two groups are PostgreSQL\'s '
        "figures that seeded the project.</p>" % esc(wal_label(base)),
        '<table><tr><th class="l">row</th><th>WAL bytes</th><th>archive bytes</th>'
        "<th>vacuum s</th></tr>",
    ]
    for r in rows:
        out.append(
            '<tr><td class="l">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>'
            % (
                esc(wal_label(r)),
                fmt(r.get("wal_bytes")),
                fmt(r.get("archive_bytes")),
                fmt(r.get("vacuum_s")),
            )
        )
    return "".join(out) + "</table>"


def bench_engine(doc):
    keys = ["fillseq_ops", "readrandom_cached_ops", "readrandom_8mib_ops", "fillsync_ops"]
    groups, spread = [], {}
    for k in keys:
        name = k.replace("_ops", "")
        groups.append(
            (
                name,
                {
                    "vs RocksDB": (doc.get("ratio") or {}).get(k),
                    "vs LMDB": (doc.get("ratio_lmdb") or {}).get(k),
                },
            )
        )
        for s, key in (("vs RocksDB", "ratio"), ("vs LMDB", "ratio_lmdb")):
            r = doc.get(key) or {}
            spread[(name, s)] = (r.get(k + "_min"), r.get(k + "_max"))
    out = [
        "<h2>This engine against RocksDB and LMDB</h2>",
        bar_chart(
            groups,
            [("vs RocksDB", "#3182bd"), ("vs LMDB", "#31a354")],
            "engine ratios",
            "bench-engine",
            "x",
            ref=1.0,
            spread=spread,
        ),
        '<p class="note">Engine / peer, the median of per-round ratios (whiskers: the rounds\' '
        "lowest and highest); above 1 the engine is the faster.</p>",
        '<table><tr><th class="l">benchmark</th><th>engine ops/s</th><th>RocksDB ops/s</th>'
        "<th>LMDB ops/s</th></tr>",
    ]
    for k in keys:
        out.append(
            '<tr><td class="l">%s</td>%s</tr>'
            % (
                esc(k),
                "".join(
                    "<td>%s</td>" % fmt((doc.get(s) or {}).get(k))
                    for s in ("engine", "rocksdb", "lmdb")
                ),
            )
        )
    return "".join(out) + "</table>"


def render_bench(paths):
    """The benchmarks page from bench JSON files (build/bench/*.json):
    protection.json, wal.json and engine.json are drawn; others listed."""
    parts, other = [], []
    for p in sorted(paths):
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError("%s: not readable JSON: %s" % (p, e))
        name = os.path.basename(p)
        if name.startswith("protection") and isinstance(doc, list) and doc:
            parts.append(bench_protection(doc))
        elif name.startswith("wal") and isinstance(doc, list) and doc:
            parts.append(bench_wal(doc))
        elif name.startswith("engine") and isinstance(doc, dict) and "ratio" in doc:
            parts.append(bench_engine(doc))
        else:
            other.append(name)
    if not parts:
        raise UsageError(
            "none of %s is a benchmark this page draws (protection.json, wal.json, engine.json)"
            % ", ".join(paths)
        )
    body = '<h1>Benchmarks</h1><p class="meta">from %s</p>' % esc(", ".join(paths)) + "".join(parts)
    if other:
        body += '<p class="note">Not drawn: %s</p>' % esc(", ".join(other))
    return page("benchmarks", body)


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
