#!/usr/bin/env bash
# make bench-engine: this engine against Debian's RocksDB db_bench on the
# same shape (1M keys of 32 bytes, 200-byte values, one thread, sync off,
# no compression, caches warmed), side by side in one run; and fillsync:
# SYNC_NUM puts (default 20,000) with an fsync each (sync_mode=commit
# against db_bench's fillsync), what a commit costs when the log decides it.
# The disk is shared and one sync's latency swings 2x from run to run, so
# fillsync runs SYNC_REPS times (default 5), engine and RocksDB alternating,
# and each side's figure is its median.
# Writes build/bench/engine.json.  NUM, READS, SYNC_NUM and SYNC_REPS override.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NUM=${NUM:-1000000}
READS=${READS:-$NUM}
SYNC_NUM=${SYNC_NUM:-20000}
SYNC_REPS=${SYNC_REPS:-5}
out=build/bench; mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-engine.XXXXXX"); trap 'rm -rf "$work"' EXIT
B=$BUILD/bench/bench_engine
big=$((4 << 30)); small=$((8 << 20))

eng() { "$B" "$@" | awk '{print $2}'; }
echo "engine: fillseq ..."
e_fill=$(eng "$work/eng" --num "$NUM" --phase fill)
echo "engine: readrandom, whole database cached ..."
e_rc=$(eng "$work/eng" --num "$NUM" --phase read --reads "$READS" --cache-size $big)
echo "engine: readrandom, 8 MiB cache ..."
e_r8=$(eng "$work/eng" --num "$NUM" --phase read --reads "$READS" --cache-size $small)

common=(--num="$NUM" --reads="$READS" --key_size=32 --value_size=200 --compression_type=none
        --sync=0 --disable_wal=0 --threads=1 --db="$work/rocks" --statistics=0)
rops() { awk '$1 == "'"$1"'" && $2 == ":" { for (i=1;i<NF;i++) if ($(i+1) ~ /^ops\/sec;?$/) print $i }' ; }
# db_bench's progress lines go to stderr: keep them out of the table.
rb() { db_bench "$@" 2>>"$work/db_bench.stderr" || { cat "$work/db_bench.stderr" >&2; exit 3; }; }
echo "rocksdb: fillseq ..."
r_fill=$(rb "${common[@]}" --benchmarks=fillseq --cache_size=$big | rops fillseq)
echo "rocksdb: readrandom, whole database cached ..."
r_rc=$(rb "${common[@]}" --use_existing_db=1 --benchmarks=readtocache,readrandom --cache_size=$big | rops readrandom)
echo "rocksdb: readrandom, 8 MiB cache ..."
r_r8=$(rb "${common[@]}" --use_existing_db=1 --benchmarks=readtocache,readrandom --cache_size=$small | rops readrandom)
# fillsync: sync=1 on every write (db_bench 7.8 does --num writes, each
# synced; random keys, which RocksDB's log does not care about).
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
e_all=(); r_all=()
for i in $(seq 1 "$SYNC_REPS"); do
  echo "fillsync round $i/$SYNC_REPS: engine ($SYNC_NUM puts, sync_mode=commit), rocksdb ($SYNC_NUM puts, sync=1) ..."
  rm -rf "$work/engsync" "$work/rocksync"
  e_all+=("$(eng "$work/engsync" --num "$SYNC_NUM" --phase fillsync)")
  r_all+=("$(rb --num="$SYNC_NUM" --key_size=32 --value_size=200 --compression_type=none --threads=1 \
              --db="$work/rocksync" --statistics=0 --benchmarks=fillsync | rops fillsync)")
done
echo "fillsync runs: engine ${e_all[*]}; rocksdb ${r_all[*]}"
e_fs=$(printf '%s\n' "${e_all[@]}" | median)
r_fs=$(printf '%s\n' "${r_all[@]}" | median)

FS_RUNS="${e_all[*]};${r_all[*]}" python3 - "$out/engine.json" "$e_fill" "$e_rc" "$e_r8" "$e_fs" "$r_fill" "$r_rc" "$r_r8" "$r_fs" <<'PY'
import json, os, sys
path, ef, ec, e8, es, rf, rc, r8, rs = sys.argv[1], *map(float, sys.argv[2:])
fe, fr = ([float(x) for x in part.split()] for part in os.environ["FS_RUNS"].split(";"))
keys = ["fillseq_ops", "readrandom_cached_ops", "readrandom_8mib_ops", "fillsync_ops"]
eng = dict(zip(keys, [ef, ec, e8, es])); rock = dict(zip(keys, [rf, rc, r8, rs]))
ratio = {k: round(eng[k] / rock[k], 3) for k in keys}
json.dump({"engine": eng, "rocksdb": rock, "ratio": ratio,
           "fillsync_runs": {"engine": fe, "rocksdb": fr}}, open(path, "w"), indent=2)
print(f"{'benchmark':26} {'engine ops/s':>14} {'rocksdb ops/s':>14} {'ratio':>7}")
for k in keys:
    print(f"{k:26} {eng[k]:14.0f} {rock[k]:14.0f} {ratio[k]:7.2f}")
print("aim: readrandom cached >= 1.5x, fill >= 0.7x, fillsync >= 0.95x;", path)
PY
