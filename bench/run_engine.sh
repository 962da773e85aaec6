#!/usr/bin/env bash
# make bench-engine: this engine against Debian's RocksDB db_bench on the
# same shape (1M keys of 32 bytes, 200-byte values, one thread, sync off,
# no compression, caches warmed), side by side in one run; and fillsync:
# SYNC_NUM puts (default 20,000) with an fsync each (sync_mode=commit
# against db_bench's fillsync), what a commit costs when the log decides it.
# Writes build/bench/engine.json.  NUM, READS and SYNC_NUM override the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NUM=${NUM:-1000000}
READS=${READS:-$NUM}
SYNC_NUM=${SYNC_NUM:-20000}
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
echo "engine: fillsync ($SYNC_NUM puts, sync_mode=commit) ..."
e_fs=$(eng "$work/engsync" --num "$SYNC_NUM" --phase fillsync)

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
echo "rocksdb: fillsync ($SYNC_NUM puts, sync=1) ..."
r_fs=$(rb --num="$SYNC_NUM" --key_size=32 --value_size=200 --compression_type=none --threads=1 \
          --db="$work/rocksync" --statistics=0 --benchmarks=fillsync | rops fillsync)

python3 - "$out/engine.json" "$e_fill" "$e_rc" "$e_r8" "$e_fs" "$r_fill" "$r_rc" "$r_r8" "$r_fs" <<'PY'
import json, sys
path, ef, ec, e8, es, rf, rc, r8, rs = sys.argv[1], *map(float, sys.argv[2:])
keys = ["fillseq_ops", "readrandom_cached_ops", "readrandom_8mib_ops", "fillsync_ops"]
eng = dict(zip(keys, [ef, ec, e8, es])); rock = dict(zip(keys, [rf, rc, r8, rs]))
ratio = {k: round(eng[k] / rock[k], 3) for k in keys}
json.dump({"engine": eng, "rocksdb": rock, "ratio": ratio}, open(path, "w"), indent=2)
print(f"{'benchmark':26} {'engine ops/s':>14} {'rocksdb ops/s':>14} {'ratio':>7}")
for k in keys:
    print(f"{k:26} {eng[k]:14.0f} {rock[k]:14.0f} {ratio[k]:7.2f}")
print("aim: readrandom cached >= 1.5x, fill >= 0.7x, fillsync >= 0.95x;", path)
PY
