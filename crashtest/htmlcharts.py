"""The pieces every page of the HTML report is made of, and the chart
they share most: the page itself (its inline CSS, no script), the
escaping of text and data-* attributes, numbers as the page prints them,
SVG frames, legends and axes (log and linear), the colours of a pass, a
failure and a measuring iteration; and the per-KV protection's escape
rate per width (each width's figures derived from summary.json, its
chart of marks against the bound and the construction's expectation, its
tables and the note on what an escape is), which a run's page, a
protection run's page and the trends across nights all draw.

Pure, like htmlreport: dicts in, text out; it imports nothing above
params (only stats).  htmlreport (a run's page, the nights) and
htmlbench (the benchmarks' page) build on it."""

import datetime
import html
import math

from .stats import clopper_pearson

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


# ---- the escape rate per protection width ----


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


# ---- the escape-rate chart and its tables ----


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


# ---- the page ----


def page(title, body):
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><style>%s</style>'
        '</head><body>%s<p class="note">Made by crashtest.py report on %s (a self-contained page: '
        "no script, no network).</p></body></html>\n"
        % (esc(title), CSS, body, datetime.datetime.now().isoformat(timespec="seconds"))
    )
