#!/usr/bin/env bash
# make bench-protection: what per key-value protection in the buffer pool
# costs (docs/engine.md, Cost aims), the table of RocksDB's PR 11287 on this
# engine.
#
# One database of NUM keys (32-byte keys, 200-byte values: fillseq, then
# vacuum and a checkpoint, so every page is clean and hinted) is built
# once, and copied once (the engine locks a directory to one handle).  For
# each cache size (100%, 90%, 80%, 50% of the data file, and 8 MiB) and
# each width w in {1, 2, 4, 8}, one process opens the database read-only
# at w = 0 and the copy at w side by side, warms both (a full scan, then
# READS/4 random gets) and runs ROUNDS rounds of READS/ROUNDS random gets
# on each, the same keys on both, the order alternating every round, every
# value checked (bench_protection --phase pair).  The ratio is the median
# of the rounds' ratios: the two sides of a round run tens of milliseconds
# apart, so a busy machine slows both alike.  The w = 0 row takes the
# medians of the four pairs' w = 0 sides.  Prints the table and writes
# build/bench/protection.json.
#   NUM (or $1)  keys (default 1,000,000)
#   READS        timed gets per side of a pair (default 1,000,000)
#   ROUNDS       rounds per pair (default 40)
#   THREADS      reader threads (default 1)
#   CHECKSUMS    data checksums of the database: on (default) or off.  With
#                them on a page entering the pool is checked and coded in
#                one pass; off, coding is a pass of its own
#   OUT          the JSON's name in build/bench (default protection.json)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup protection
NUM=${1:-${NUM:-1000000}}
READS=${READS:-1000000}
ROUNDS=${ROUNDS:-${REPS:-40}}
THREADS=${THREADS:-1}
CHECKSUMS=${CHECKSUMS:-on}
case "$CHECKSUMS" in on) sums=1 ;; off) sums=0 ;; *) echo "CHECKSUMS is on or off" >&2; exit 2 ;; esac
OUT=${OUT:-protection.json}
B=$BUILD/bench/bench_protection
widths=(1 2 4 8)
fractions=(1.0 0.9 0.8 0.5 0)   # 0 = 8 MiB

echo "load: $NUM keys (fillseq, vacuum, checkpoint; data checksums $CHECKSUMS) ..." >&2
load=$("$B" "$work/db" --phase load --num "$NUM" --checksums "$sums") || { echo "bench_protection load failed" >&2; exit 3; }
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
data_bytes=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data_bytes"])' "$load")
cp -r "$work/db" "$work/twin"

: >"$work/cells.jsonl"
t0=$SECONDS
for frac in "${fractions[@]}"; do
  if [ "$frac" = 0 ]; then cache=$((8 << 20)); else
    cache=$(python3 -c 'import sys; print(int(float(sys.argv[1]) * int(sys.argv[2])))' "$frac" "$data_bytes"); fi
  for w in "${widths[@]}"; do
    if [ -t 2 ]; then
      printf '\rcache %s (%d MiB): w=0 beside w=%d, %d rounds ...   ' "$frac" $((cache >> 20)) "$w" "$ROUNDS" >&2
    elif [ "$w" = 1 ]; then
      echo "cache $frac of the data file ($((cache >> 20)) MiB): w = 0 beside w = 1, 2, 4, 8 ..." >&2
    fi
    line=$("$B" "$work/db" --phase pair --twin "$work/twin" --num "$NUM" --width "$w" --cache-size "$cache" \
           --reads "$READS" --rounds "$ROUNDS" --threads "$THREADS" --seed $((w * 7919 + 1))) \
      || { echo; echo "bench_protection failed: cache $cache, w=$w" >&2; exit 3; }
    printf '{"cache_fraction": %s, "cell": %s}\n' "$frac" "$line" >>"$work/cells.jsonl"
  done
done
[ -t 2 ] && printf '\r%60s\r' '' >&2
echo "pairs took $((SECONDS - t0)) s" >&2

loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out/$OUT" "$work/cells.jsonl" "$load" "$loadavg_start" "$loadavg_end" "$NUM" "$READS" "$ROUNDS" "$THREADS" <<'PY'
import json, statistics, sys
path, cells_path, load = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
loadavg = {"start": [float(x) for x in sys.argv[4].split()], "end": [float(x) for x in sys.argv[5].split()]}
num, reads, rounds, threads = map(int, sys.argv[6:])
cells = [json.loads(l) for l in open(cells_path)]
FRACS = [1.0, 0.9, 0.8, 0.5, 0.0]
WIDTHS = [0, 1, 2, 4, 8]
by = {}
for c in cells:
    by[(float(c["cache_fraction"]), c["cell"]["width"])] = c["cell"]
med = lambda xs: statistics.median(xs)
per = lambda x, key: x[key] / max(1, reads // rounds * rounds)
rows, cache_of = [], {}
for f in FRACS:
    pairs = [by[(f, w)] for w in WIDTHS[1:]]
    cache_of[f] = pairs[0]["cache_size"]
    # w = 0: the medians of its four pairs' w = 0 sides
    rows.append({
        "cache_fraction": f, "width": 0, "ops": round(med([x["ops_0"] for x in pairs])), "ratio": 1.0,
        "memory_bytes_per_page": 0.0, "memory_bytes_per_key": 0.0,
        "cpu_ops": round(med([x["cpu_ops_0"] for x in pairs])), "cpu_ratio": 1.0, "cache_bytes": cache_of[f],
        "ops_min": round(min(x["ops_0_min"] for x in pairs)), "ops_max": round(max(x["ops_0_max"] for x in pairs)),
        "ratio_min": 1.0, "ratio_max": 1.0, "rounds": rounds,
        "kv_bytes": 0, "kv_pages": 0, "kv_keys": 0,
        "hit_rate": round(med([x["hits_0"] / max(1, x["hits_0"] + x["misses_0"]) for x in pairs]), 4),
        "checks_per_get": 0.0, "check_bytes_per_get": 0.0, "code_bytes_per_get": 0.0,
        "lazy_fraction": 0.0, "lazy_coded_fraction": 0.0,
        "data_checksums": load["data_checksums"], "loadavg": loadavg,
    })
    for x in pairs:
        w = x["width"]
        rows.append({
            "cache_fraction": f, "width": w, "ops": round(x["ops"]), "ratio": round(x["ratio"], 4),
            "memory_bytes_per_page": round(x["kv_bytes"] / x["kv_pages"], 2) if x["kv_pages"] else 0.0,
            "memory_bytes_per_key": round(x["kv_bytes"] / x["kv_keys"], 3) if x["kv_keys"] else 0.0,
            # beyond RocksDB's fields: the same from the reader threads'
            # CPU time, the cache, the rounds' spread
            "cpu_ops": round(x["cpu_ops"]), "cpu_ratio": round(x["cpu_ratio"], 4), "cache_bytes": x["cache_size"],
            "ops_min": round(x["ops_min"]), "ops_max": round(x["ops_max"]),
            "ratio_min": round(x["ratio_min"], 4), "ratio_max": round(x["ratio_max"], 4), "rounds": x["rounds"],
            "kv_bytes": x["kv_bytes"], "kv_pages": x["kv_pages"], "kv_keys": x["kv_keys"],
            "hit_rate": round(x["hits"] / max(1, x["hits"] + x["misses"]), 4),
            "checks_per_get": round(per(x, "kv_checks"), 2),
            # bytes hashed per get: by the checks, and by coding the pages
            # that entered the pool during the timed gets
            "check_bytes_per_get": round(per(x, "kv_check_bytes"), 1),
            "code_bytes_per_get": round(per(x, "kv_code_bytes"), 1),
            # KV0: the share of loads left uncoded, and of those the share
            # coded at a later use (the pool's choice follows the latter)
            "lazy_fraction": round(x["kv_lazy_leaves"] / max(1, x["misses"]), 4),
            "lazy_coded_fraction": round(x["kv_lazy_coded"] / max(1, x["kv_lazy_leaves"]), 4),
            "data_checksums": load["data_checksums"], "loadavg": loadavg,
        })
json.dump(rows, open(path, "w"), indent=2)

R = {(r["cache_fraction"], r["width"]): r for r in rows}
ROCKS = {1.0: -10.0, 0.9: -15.0, 0.8: -10.8, 0.5: -15.0, 0.0: -23.0}
name = lambda f: "8 MiB" if f == 0 else f"{int(f * 100)}%"
print(f"Per key-value protection in the buffer pool: readrandom, {num:,} keys (32-byte keys, 200-byte values, "
      f"{load['data_bytes'] / 2**20:.0f} MiB data file, {load['page_size']} B pages, data checksums "
      f"{'on' if load['data_checksums'] else 'off'}), {threads} thread(s), "
      f"{reads:,} timed gets per side, w = 0 and w side by side in one process, median of {rounds} alternating rounds")
print(f"load average (2 cores) {' '.join(map(str, loadavg['start']))} at the start, "
      f"{' '.join(map(str, loadavg['end']))} at the end")
print("anchor, RocksDB PR 11287 (block_protection_bytes_per_key on vs off, readrandom): "
      + ", ".join(f"{name(f)} {ROCKS[f]:+.1f}%" for f in FRACS)
      + "  (Debian's RocksDB 7.8.3 predates the option: not run here)")
print("aim: at least 0.97 of w = 0 at w = 1, 2, 4 and 0.95 at w = 8, at every cache size; memory at most "
      "w bytes per key + 16 per cached page")
print()
hdr = f"{'cache':>14} " + "".join(f"{'w=' + str(w):>20}" for w in WIDTHS) + f"{'RocksDB':>10}"
print("ops/s (ratio to w = 0 at the same cache size)")
print(hdr)
for f in FRACS:
    mib = cache_of[f] / 2**20
    line = f"{name(f):>6} {mib:>5.0f} MiB "
    for w in WIDTHS:
        r = R[(f, w)]
        line += f"{r['ops']:>12,} ({r['ratio']:.3f})"
    print(line + f"{ROCKS[f]:>+9.1f}%")
print()
print("the same from the reader threads' CPU time (gets per CPU-second; median of the rounds' ratios)")
print(hdr[:-10])
for f in FRACS:
    line = f"{name(f):>6} {cache_of[f] / 2**20:>5.0f} MiB "
    for w in WIDTHS:
        r = R[(f, w)]
        line += f"{r['cpu_ops']:>12,} ({r['cpu_ratio']:.3f})"
    print(line)
print()
print("the rounds' ratios (wall clock), lowest to highest: how far one round strays on this machine")
for f in FRACS:
    print(f"{name(f):>6} {cache_of[f] / 2**20:>5.0f} MiB " + "".join(
        f"{R[(f, w)]['ratio_min']:>9.3f}-{R[(f, w)]['ratio_max']:<6.3f}" for w in WIDTHS[1:]))
print()
print("per get (w = 4; the same at every width): page hit rate, codes checked, bytes those checks hashed, "
      "bytes hashed coding pages that entered the pool")
for f in FRACS:
    r = R[(f, 4)]
    print(f"  {name(f):>6}: hit rate {r['hit_rate']:.3f}, {r['checks_per_get']:.2f} checks, "
          f"{r['check_bytes_per_get']:,.0f} bytes checked, {r['code_bytes_per_get']:,.0f} bytes coded, "
          f"{r['lazy_fraction']:.2f} of loads lazy ({r['lazy_coded_fraction']:.2f} of those coded later)")
print()
print("memory of the codes (eng_stats.kv_protection_bytes over _pages and _keys, cache 100%): "
      "bytes per cached page | per key")
print("  " + "   ".join(f"w={w}: {R[(1.0, w)]['memory_bytes_per_page']:.1f} | {R[(1.0, w)]['memory_bytes_per_key']:.2f}"
                         for w in WIDTHS))
full = R[(1.0, 8)]
print(f"  (cache 100%: {full['kv_pages']:,} pages, {full['kv_keys']:,} entries; at w = 8 the codes take "
      f"{full['kv_bytes'] / 2**20:.1f} MiB beside {cache_of[1.0] / 2**20:.0f} MiB of frames)")
# The aim (docs/engine.md, Cost aims): at least 0.97 of w = 0 for w = 1,
# 2, 4 and 0.95 for w = 8, at every cache size; judged on the wall-clock
# ratio, with the CPU-time ratio beside it.
AIM = {1: 0.97, 2: 0.97, 4: 0.97, 8: 0.95}
for key, label in (("ratio", "wall clock"), ("cpu_ratio", "CPU time")):
    short = [(R[(f, w)][key], f, w) for f in FRACS for w in WIDTHS[1:] if R[(f, w)][key] < AIM[w]]
    worst = min((R[(f, w)][key] - AIM[w], R[(f, w)][key], f, w) for f in FRACS for w in WIDTHS[1:])
    print(f"\naim (>= 0.97 at w = 1, 2, 4; >= 0.95 at w = 8), {label}: "
          + ("met" if not short else f"NOT met in {len(short)} of 20 cells")
          + f"; furthest below: {worst[1]:.3f} (cache {name(worst[2])}, w={worst[3]})", end="")
print()
mem_ok = all(R[(f, w)]["kv_bytes"] <= w * R[(f, w)]["kv_keys"] + 16 * R[(f, w)]["kv_pages"] for f in FRACS for w in WIDTHS)
print(f"memory <= w * keys + 16 * pages in every cell: {'met' if mem_ok else 'NOT met'}")
print(path)
PY
