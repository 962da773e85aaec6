#!/usr/bin/env bash
# make bench-engine: this engine against Debian's RocksDB db_bench and
# against LMDB (bench_lmdb, the anchor for a cached B+tree get) on the same
# shape (NUM keys of 32 bytes, 200-byte values, one thread, sync off, no
# compression, caches warmed); and fillsync: SYNC_NUM puts (default 20,000)
# with an fsync each (sync_mode=commit against db_bench's fillsync and
# LMDB's default durable commit), what a commit costs when the log decides
# it.
#
# The machine is shared, so one run of each says little: the rows run as
# ROUNDS interleaved rounds (default 5).  A round fills a fresh database of
# each system, then reads each cached, then reads the engine and RocksDB
# with an 8 MiB cache (LMDB has no cache of its own), the systems' order
# rotated every round (engine, rocksdb, lmdb / rocksdb, lmdb, engine / ...)
# so drift over a round falls on each in turn.  fillsync runs SYNC_REPS
# such rounds (default 5).  Every figure is the median of its rounds, with
# min and max beside it; a ratio is the median of the per-round ratios (the
# runs of one round ran within seconds of each other, so a noisy neighbour
# slows both sides), with the per-round min and max.
# Writes build/bench/engine.json (keys: bench/README.md).  NUM, READS,
# ROUNDS, SYNC_NUM and SYNC_REPS override.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup engine
NUM=${NUM:-1000000}
READS=${READS:-$NUM}
ROUNDS=${ROUNDS:-5}
SYNC_NUM=${SYNC_NUM:-20000}
SYNC_REPS=${SYNC_REPS:-5}
B=$BUILD/bench/bench_engine
L=$BUILD/bench/bench_lmdb
big=$((4 << 30)); small=$((8 << 20))
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
runs=$work/runs   # one line per run: "SERIES ROUND SYSTEM KEY OPS"

val() { "$@" | awk '{print $2}'; }
common=(--key_size=32 --value_size=200 --compression_type=none --threads=1 --statistics=0)
rops() { awk '$1 == "'"$1"'" && $2 == ":" { for (i=1;i<NF;i++) if ($(i+1) ~ /^ops\/sec;?$/) print $i }' ; }
# db_bench's progress lines go to stderr: keep them out of the table.
rb() { db_bench "$@" 2>>"$work/db_bench.stderr" || { cat "$work/db_bench.stderr" >&2; exit 3; }; }
rocks() { rb "${common[@]}" --num="$NUM" --reads="$READS" --sync=0 --disable_wal=0 --db="$work/rocks" "$@"; }

# run SYSTEM PHASE: one measured run on this round's databases; prints ops/s.
run() {
  case $1/$2 in
    engine/fill)     val "$B" "$work/eng" --num "$NUM" --phase fill ;;
    engine/cached)   val "$B" "$work/eng" --num "$NUM" --phase read --reads "$READS" --cache-size $big ;;
    engine/8mib)     val "$B" "$work/eng" --num "$NUM" --phase read --reads "$READS" --cache-size $small ;;
    engine/fillsync) val "$B" "$work/engsync" --num "$SYNC_NUM" --phase fillsync ;;
    rocksdb/fill)    rocks --benchmarks=fillseq --cache_size=$big | rops fillseq ;;
    rocksdb/cached)  rocks --use_existing_db=1 --benchmarks=readtocache,readrandom --cache_size=$big | rops readrandom ;;
    rocksdb/8mib)    rocks --use_existing_db=1 --benchmarks=readtocache,readrandom --cache_size=$small | rops readrandom ;;
    # db_bench 7.8 fillsync does --num writes, each synced; random keys,
    # which RocksDB's log does not care about.
    rocksdb/fillsync) rb "${common[@]}" --num="$SYNC_NUM" --db="$work/rocksync" --benchmarks=fillsync | rops fillsync ;;
    lmdb/fill)       val "$L" "$work/lmdb" --num "$NUM" --phase fill ;;
    lmdb/cached)     val "$L" "$work/lmdb" --num "$NUM" --phase read --reads "$READS" ;;
    lmdb/fillsync)   val "$L" "$work/lmdbsync" --num "$SYNC_NUM" --phase fillsync ;;
  esac
}
key() { case $1 in fill) echo fillseq_ops ;; cached) echo readrandom_cached_ops ;;
                   8mib) echo readrandom_8mib_ops ;; fillsync) echo fillsync_ops ;; esac; }

# round SERIES R PHASE...: each phase for each system, order rotated by R.
round() {
  local series=$1 r=$2; shift 2
  local systems=(engine rocksdb lmdb) line="" phase i s v
  for phase in "$@"; do
    for i in 0 1 2; do
      s=${systems[(i + r) % 3]}
      [[ $s == lmdb && $phase == 8mib ]] && continue
      v=$(run "$s" "$phase")
      [[ -n $v ]] || { echo "bench-engine: $s $phase gave no figure" >&2; exit 3; }
      echo "$series $r $s $(key "$phase") $v" >>"$runs"
      line+=" $s $phase $v;"
    done
  done
  echo "  ${line% ;}"
}

for ((r = 0; r < ROUNDS; r++)); do
  echo "round $((r + 1))/$ROUNDS: fill ($NUM keys), readrandom cached, readrandom 8 MiB ($READS gets) ..."
  rm -rf "$work/eng" "$work/rocks" "$work/lmdb"
  round main "$r" fill cached 8mib
done
rm -rf "$work/eng" "$work/rocks" "$work/lmdb"
for ((r = 0; r < SYNC_REPS; r++)); do
  echo "fillsync round $((r + 1))/$SYNC_REPS ($SYNC_NUM puts, each synced) ..."
  rm -rf "$work/engsync" "$work/rocksync" "$work/lmdbsync"
  round sync "$r" fillsync
done

LOAD="$load_start;$(cut -d' ' -f1-3 /proc/loadavg)" \
  python3 - "$out/engine.json" "$runs" "$NUM" "$READS" "$SYNC_NUM" <<'PY'
import json, os, statistics, sys
path, runs_path, num, reads, sync_num = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
KEYS = ["fillseq_ops", "readrandom_cached_ops", "readrandom_8mib_ops", "fillsync_ops"]
SYSTEMS = ["engine", "rocksdb", "lmdb"]
ops = {}  # (system, key) -> {(series, round): ops}
for line in open(runs_path):
    series, r, system, key, v = line.split()
    ops.setdefault((system, key), {})[(series, int(r))] = float(v)

def spread(values, nd):
    """{"": median, "_min": min, "_max": max} of VALUES, or Nones."""
    if not values:
        return {"": None, "_min": None, "_max": None}
    return {"": round(statistics.median(values), nd), "_min": round(min(values), nd), "_max": round(max(values), nd)}

def figures(pairs_of_key, nd):
    out = {}
    for k in KEYS:
        for suffix, v in spread(pairs_of_key(k), nd).items():
            out[k + suffix] = v
    return out

res = {}
for s in SYSTEMS:
    res[s] = figures(lambda k: list(ops.get((s, k), {}).values()), 0)
def per_round(peer, k):
    e, p = ops.get(("engine", k), {}), ops.get((peer, k), {})
    return [e[x] / p[x] for x in e if x in p]
res["ratio"] = figures(lambda k: per_round("rocksdb", k), 3)
res["ratio_lmdb"] = figures(lambda k: per_round("lmdb", k), 3)
res["fillsync_runs"] = {s: list(ops.get((s, "fillsync_ops"), {}).values()) for s in SYSTEMS}
res["runs"] = {s: {k: list(ops.get((s, k), {}).values()) for k in KEYS if (s, k) in ops} for s in SYSTEMS}
main_rounds = {r for (s, k), d in ops.items() for (series, r) in d if series == "main"}
sync_rounds = {r for (s, k), d in ops.items() for (series, r) in d if series == "sync"}
start, end = (part.split() for part in os.environ["LOAD"].split(";"))
res.update({"rounds": len(main_rounds), "sync_rounds": len(sync_rounds), "num": num, "reads": reads,
            "sync_num": sync_num, "loadavg": {"start": [float(x) for x in start], "end": [float(x) for x in end]}})
json.dump(res, open(path, "w"), indent=2)

def cell(d, k, fmt):
    if d[k] is None:
        return "-"
    return f"{d[k]:{fmt}} ({d[k + '_min']:{fmt}}-{d[k + '_max']:{fmt}})"
print(f"median (min-max) of {len(main_rounds)} rounds, fillsync {len(sync_rounds)}; ratios are medians of per-round ratios")
print(f"{'benchmark':22} {'engine ops/s':>26} {'rocksdb ops/s':>26} {'lmdb ops/s':>26} {'ratio':>18} {'ratio_lmdb':>18}")
for k in KEYS:
    print(f"{k:22} {cell(res['engine'], k, ',.0f'):>26} {cell(res['rocksdb'], k, ',.0f'):>26} "
          f"{cell(res['lmdb'], k, ',.0f'):>26} {cell(res['ratio'], k, '.2f'):>18} {cell(res['ratio_lmdb'], k, '.2f'):>18}")
print(f"load average at start {' '.join(start)}, at end {' '.join(end)} (2 cores)")
print("aim (ratio to rocksdb): readrandom cached >= 1.5x, fill >= 0.7x, fillsync >= 0.95x;", path)
PY
