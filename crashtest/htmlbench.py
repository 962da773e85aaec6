"""The benchmarks' page of the HTML report (make bench-report,
crashtest.py report on build/bench): the bench JSON files drawn as
grouped bar charts with their tables: per-KV protection's readrandom
cost per width and cache size (bench-protection), the WAL and vacuum
cost of checksums against PostgreSQL's figures (bench-wal), and this
engine against RocksDB and LMDB (bench-engine).  Pure: JSON in, text
out; built on htmlcharts' pieces, and htmlreport.render calls
render_bench."""

import json
import math
import os

from .common import UsageError
from .htmlcharts import attrs, esc, fmt, legend, page, svg

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
