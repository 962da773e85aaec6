#!/usr/bin/env bash
# make bench-engine: this engine against Debian's RocksDB db_bench on the
# same shape (1M keys of 32 bytes, 200-byte values, one thread, sync off,
# no compression, caches warmed), side by side in one run.
# Writes build/bench/engine.json.  NUM and READS override the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NUM=${NUM:-1000000}
READS=${READS:-$NUM}
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

python3 - "$out/engine.json" "$e_fill" "$e_rc" "$e_r8" "$r_fill" "$r_rc" "$r_r8" <<'PY'
import json, sys
path, ef, ec, e8, rf, rc, r8 = sys.argv[1], *map(float, sys.argv[2:])
keys = ["fillseq_ops", "readrandom_cached_ops", "readrandom_8mib_ops"]
eng = dict(zip(keys, [ef, ec, e8])); rock = dict(zip(keys, [rf, rc, r8]))
ratio = {k: round(eng[k] / rock[k], 3) for k in keys}
json.dump({"engine": eng, "rocksdb": rock, "ratio": ratio}, open(path, "w"), indent=2)
print(f"{'benchmark':26} {'engine ops/s':>14} {'rocksdb ops/s':>14} {'ratio':>7}")
for k in keys:
    print(f"{k:26} {eng[k]:14.0f} {rock[k]:14.0f} {ratio[k]:7.2f}")
print("aim: readrandom cached >= 1.5x, fill >= 0.7x;", path)
PY
