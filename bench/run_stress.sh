#!/usr/bin/env bash
# make bench-stress: what the oracle costs.  Verified ops/s of build/stress
# (every answer checked against the expected state) with 1 and 2 threads,
# faults off and on, against the bare engine doing the same op mix
# (bench_stress_bare: no expected state, no checks), on a cached database
# (KEYS keys of 8..256 bytes in a 64 MiB pool), sync off.
# The machine is shared, so the four runs go in ROUNDS interleaved rounds
# (default 5; REPS, the old name, still works), their order rotated every
# round so drift over a round falls on each in turn.  Every figure is the
# median of its rounds, with min and max beside it; oracle_cost_2t is the
# median of the per-round costs 1 - verified/bare (both runs of a round
# within seconds of each other), with their min and max.
# Writes build/bench/stress.json.  KEYS, OPS (per thread), ROUNDS override.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup stress
KEYS=${KEYS:-100000}
OPS=${OPS:-300000}
ROUNDS=${ROUNDS:-${REPS:-5}}
S=$BUILD/stress
B=$BUILD/bench/bench_stress_bare
common=(--max_key "$KEYS" --sync_mode off --cache_size 64M)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
runs=$work/runs   # one line per run: "ROUND KEY OPS"

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# stress THREADS [fault options...]: one measured run on the filled database
stress_run() {
  local t=$1; shift
  "$S" --db "$work/s/db" --threads "$t" --ops_per_thread "$OPS" "${common[@]}" "$@" --report "$work/r.json" \
       >"$work/s.out" 2>&1 || { cat "$work/s.out" >&2; exit 3; }
  field "$work/r.json" workload_ops_per_s
}

# run KEY: one measured run of that figure; prints ops/s.
run() {
  case $1 in
    verified_ops_1t)  stress_run 1 ;;
    verified_ops_2t)  stress_run 2 ;;
    faults_on_ops_2t) stress_run 2 --read_fault_one_in 100000 --short_io_one_in 1000 --bitflip_page_one_in 1000000 ;;
    bare_ops_2t)      rm -rf "$work/b"
                      "$B" "$work/b" --threads 2 --ops "$OPS" --max-key "$KEYS" --fill | awk '{print $2}' ;;
  esac
}

echo "stress: filling $KEYS keys ..."
mkdir -p "$work/s"
"$S" --db "$work/s/db" --destroy_db_initially --threads 1 --ops_per_thread $((KEYS * 2)) "${common[@]}" \
     --readpercent 0 --writepercent 100 --delpercent 0 --iterpercent 0 >"$work/fill.out" 2>&1 \
  || { cat "$work/fill.out" >&2; exit 3; }

figures=(verified_ops_1t verified_ops_2t faults_on_ops_2t bare_ops_2t)
for ((r = 0; r < ROUNDS; r++)); do
  line=""
  for i in 0 1 2 3; do
    k=${figures[(i + r) % 4]}
    v=$(run "$k")
    [[ -n $v ]] || { echo "bench-stress: $k gave no figure" >&2; exit 3; }
    echo "$r $k $v" >>"$runs"
    line+=" $k $v;"
  done
  echo "round $((r + 1))/$ROUNDS:${line%;}"
done

LOAD="$load_start;$(cut -d' ' -f1-3 /proc/loadavg)" python3 - "$out/stress.json" "$runs" <<'PY'
import json, os, statistics, sys
path, runs_path = sys.argv[1], sys.argv[2]
KEYS = ["verified_ops_1t", "verified_ops_2t", "bare_ops_2t", "faults_on_ops_2t"]
ops = {k: {} for k in KEYS}
for line in open(runs_path):
    r, k, v = line.split()
    ops[k][int(r)] = float(v)
res = {}
for k in KEYS:
    v = list(ops[k].values())
    res.update({k: round(statistics.median(v)), k + "_min": round(min(v)), k + "_max": round(max(v))})
cost = [1 - ops["verified_ops_2t"][r] / ops["bare_ops_2t"][r] for r in ops["bare_ops_2t"]]
res.update({"oracle_cost_2t": round(statistics.median(cost), 3), "oracle_cost_2t_min": round(min(cost), 3),
            "oracle_cost_2t_max": round(max(cost), 3), "rounds": len(cost),
            "runs": {k: [round(x) for x in ops[k].values()] for k in KEYS}})
start, end = (part.split() for part in os.environ["LOAD"].split(";"))
res["loadavg"] = {"start": [float(x) for x in start], "end": [float(x) for x in end]}
json.dump(res, open(path, "w"), indent=2)
print(f"median (min-max) of {len(cost)} rounds")
print(f"{'measure':22} {'ops/s':>12} {'min':>12} {'max':>12}")
for k in KEYS:
    print(f"{k:22} {res[k]:12,} {res[k + '_min']:12,} {res[k + '_max']:12,}")
print(f"oracle cost with 2 threads: {100 * res['oracle_cost_2t']:.1f}% "
      f"({100 * res['oracle_cost_2t_min']:.1f}% to {100 * res['oracle_cost_2t_max']:.1f}%, median of per-round costs)"
      "  (aim: >= 200,000 verified ops/s, cost < 10%)")
print(f"load average at start {' '.join(start)}, at end {' '.join(end)}; {path}")
PY
