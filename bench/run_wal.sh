#!/usr/bin/env bash
# make bench-wal: what data checksums cost in WAL and vacuum time
# (docs/engine.md, Cost aims; the seed's experiment).  For each row below, in
# a fresh database with archiving on: load ROWS pgbench_accounts-like rows (a
# commit every 10,000), checkpoint; vacuum, checkpoint (bench/bench_wal.c has
# the details and what each figure measures).  Rows run interleaved, REPS
# rounds, each round in a rotated order; every figure is the median of
# its REPS runs.  Prints one table of figures and ratios to the
# checksums-off / no-compression row; writes build/bench/wal.json.
#   ROWS (or $1)  rows loaded per run (default 2,000,000)
#   REPS          rounds (default 3)
#   CACHE         cache bytes (default 64 MiB: the table does not fit)
#   CKPT          checkpoint_wal_bytes (default 1 GiB, PostgreSQL's max_wal_size:
#                 no automatic checkpoint inside the load)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROWS=${1:-${ROWS:-2000000}}
REPS=${REPS:-3}
CACHE=${CACHE:-$((64 << 20))}
CKPT=${CKPT:-$((1 << 30))}
out=build/bench; mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-wal.XXXXXX"); trap 'rm -rf "$work"' EXIT
B=$BUILD/bench/bench_wal

# label | data_checksums | wal_log_hints | wal_compression | hint_fpi
rows=(
  "checksums off|0|0|none|0"
  "checksums off, zstd|0|0|zstd|0"
  "checksums on|1|0|none|0"
  "checksums on, zstd|1|0|zstd|0"
  "wal_log_hints, checksums off|0|1|none|0"
  "checksums on, hint_fpi|1|0|none|1"
  "checksums on, zstd, hint_fpi|1|0|zstd|1"
)
n=${#rows[@]}
: >"$work/runs.jsonl"
for r in $(seq 0 $((REPS - 1))); do
  for j in $(seq 0 $((n - 1))); do
    i=$(( (j + r) % n ))
    IFS='|' read -r label cks hints comp fpi <<<"${rows[$i]}"
    echo "round $((r + 1))/$REPS: $label ($ROWS rows) ..." >&2
    rm -rf "$work/run"
    line=$("$B" "$work/run" --rows "$ROWS" --data-checksums "$cks" --wal-log-hints "$hints" \
           --wal-compression "$comp" --hint-fpi "$fpi" --cache-size "$CACHE" --checkpoint-wal-bytes "$CKPT") \
      || { echo "bench_wal failed on row '$label'" >&2; exit 3; }
    printf '{"row": %d, "label": "%s", "run": %s}\n' "$i" "$label" "$line" >>"$work/runs.jsonl"
  done
done
rm -rf "$work/run"

python3 - "$out/wal.json" "$work/runs.jsonl" "$ROWS" "$REPS" <<'PY'
import json, statistics, sys
path, runs_path, nrows, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = [json.loads(l) for l in open(runs_path)]
KEYS = ["data_checksums", "wal_log_hints", "wal_compression", "wal_bytes", "load_wal_bytes",
        "vacuum_wal_bytes", "data_bytes", "archive_bytes", "load_s", "vacuum_s"]
FIG = KEYS[3:]
by = {}
for r in runs:
    by.setdefault(r["row"], {"label": r["label"], "runs": []})["runs"].append(r["run"])
rows, labels, infos = [], [], []
for i in sorted(by):
    rr = by[i]["runs"]
    row = {k: rr[0][k] for k in ("data_checksums", "wal_log_hints", "wal_compression")}
    for k in FIG:
        m = statistics.median(x[k] for x in rr)
        row[k] = round(m, 3) if k.endswith("_s") else int(m)
    row["hint_fpi"] = rr[0]["hint_fpi"]
    rows.append(row)
    labels.append(by[i]["label"])
    infos.append({k: int(statistics.median(x["info"][k] for x in rr)) for k in rr[0]["info"]})
json.dump(rows, open(path, "w"), indent=2)

base = rows[0]
def ratio(r, k):
    return r[k] / base[k] if base[k] else float("nan")
MB = 1e6
print(f"WAL cost of data checksums: {nrows:,} rows (4-byte ids, 97-byte values, a commit every 10,000), "
      f"load + checkpoint, vacuum + checkpoint; median of {reps} interleaved runs")
print("PostgreSQL, the seed (checksums on vs off): WAL +40% (1.40x), archive x2, vacuum x20 slower; "
      "with zstd-like wal_compression: WAL about +0% (1.00x), vacuum x15")
print("aim: checksums on + zstd: WAL <= 1.10x, vacuum time <= 1.5x the checksums-off row")
print("WAL = eng_stats.wal_bytes (record bytes appended, the LSN distance); archive = bytes in archive_dir; "
      "each figure (ratio to the first row)")
cols = [("WAL MB", "wal_bytes", MB), ("load WAL MB", "load_wal_bytes", MB), ("vacuum WAL MB", "vacuum_wal_bytes", MB),
        ("data MB", "data_bytes", MB), ("archive MB", "archive_bytes", MB), ("load s", "load_s", 1),
        ("vacuum s", "vacuum_s", 1)]
w = max(len(l) for l in labels)
print(f"{'':{w}}" + "".join(f" {c[0]:>17}" for c in cols))
for l, r in zip(labels, rows):
    cells = []
    for _, k, div in cols:
        v = r[k] / div
        num = f"{v:.1f}" if div != 1 else f"{v:.2f}"
        q = ratio(r, k)
        # a base below 1 KB (vacuum WAL without hint logging: the checkpoint
        # record alone) makes a ratio meaningless
        qs = f"{q:5.2f}x" if base[k] >= 1024 or div == 1 or r[k] == base[k] else "  n/a "
        cells.append(f" {num:>9} ({qs})")
    print(f"{l:{w}}" + "".join(cells))
if base["vacuum_wal_bytes"] < 1024:
    print(f"(n/a: the first row's vacuum logged {base['vacuum_wal_bytes']} bytes, its checkpoint record; "
          "a ratio to that says nothing)")
print()
print("what vacuum + checkpoint did (medians): hint-only page writes, hint WAL records (images with hint_fpi)"
      " and their MB, other images, WAL syncs, versions hinted and frozen")
for l, inf in zip(labels, infos):
    print(f"{l:{w}}  hint-only writes {inf['vacuum_hint_pages_written']:>8,}  "
          f"hint records {inf['vacuum_hint_wal_records']:>8,} {inf['vacuum_hint_wal_bytes'] / MB:7.1f} MB  "
          f"images {inf['vacuum_images']:>6,}  WAL syncs {inf['vacuum_wal_syncs']:>6,}  "
          f"hinted {inf['vacuum_hinted']:>9,}  frozen {inf['vacuum_frozen']:>7,}")
on_zstd = next((r for r in rows if r["data_checksums"] == 1 and r["wal_compression"] == "zstd"
                and r["hint_fpi"] == 0 and r["wal_log_hints"] == 0), None)
if on_zstd:
    wr, vr = ratio(on_zstd, "wal_bytes"), ratio(on_zstd, "vacuum_s")
    print(f"\naim, checksums on + zstd: WAL {wr:.2f}x (<= 1.10: {'met' if wr <= 1.10 else 'NOT met'}), "
          f"vacuum {vr:.2f}x (<= 1.5: {'met' if vr <= 1.5 else 'NOT met'})")
print(path)
PY
