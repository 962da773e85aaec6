#!/usr/bin/env bash
# make bench-stress: what the oracle costs.  Verified ops/s of build/stress
# (every answer checked against the expected state) with 1 and 2 threads,
# faults off and on, against the bare engine doing the same op mix
# (bench_stress_bare: no expected state, no checks), on a cached database
# (KEYS keys of 8..256 bytes in a 64 MiB pool), sync off.
# Each figure is the median of REPS runs (these machines are noisy).
# Writes build/bench/stress.json.  KEYS, OPS (per thread), REPS override.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
KEYS=${KEYS:-100000}
OPS=${OPS:-300000}
REPS=${REPS:-3}
out=build/bench; mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-stress.XXXXXX"); trap 'rm -rf "$work"' EXIT
S=$BUILD/stress
B=$BUILD/bench/bench_stress_bare
common=(--max_key "$KEYS" --sync_mode off --cache_size 64M)

median() { python3 -c 'import sys; v=sorted(float(x) for x in sys.argv[1:]); print(v[len(v)//2])' "$@"; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# stress THREADS [fault options...]: one measured run on the filled database
stress_run() {
  local t=$1; shift
  "$S" --db "$work/s/db" --threads "$t" --ops_per_thread "$OPS" "${common[@]}" "$@" --report "$work/r.json" \
       >"$work/s.out" 2>&1 || { cat "$work/s.out" >&2; exit 3; }
  field "$work/r.json" workload_ops_per_s
}

echo "stress: filling $KEYS keys ..."
"$S" --db "$work/s/db" --destroy_db_initially --threads 1 --ops_per_thread $((KEYS * 2)) "${common[@]}" \
     --readpercent 0 --writepercent 100 --delpercent 0 --iterpercent 0 >"$work/fill.out" 2>&1 \
  || { cat "$work/fill.out" >&2; exit 3; }

v1=(); v2=(); f2=(); b2=()
for r in $(seq "$REPS"); do
  echo "round $r/$REPS: stress 1 thread, 2 threads, 2 threads with faults; bare engine 2 threads ..."
  v1+=("$(stress_run 1)")
  v2+=("$(stress_run 2)")
  f2+=("$(stress_run 2 --read_fault_one_in 100000 --short_io_one_in 1000 --bitflip_page_one_in 1000000)")
  rm -rf "$work/b"
  b2+=("$("$B" "$work/b" --threads 2 --ops "$OPS" --max-key "$KEYS" --fill | awk '{print $2}')")
done

python3 - "$out/stress.json" "$(median "${v1[@]}")" "$(median "${v2[@]}")" "$(median "${b2[@]}")" \
  "$(median "${f2[@]}")" "${v2[*]}" "${b2[*]}" <<'PY'
import json, sys
path, v1, v2, b2, f2 = sys.argv[1], *map(float, sys.argv[2:6])
res = {"verified_ops_1t": round(v1), "verified_ops_2t": round(v2), "bare_ops_2t": round(b2),
       "faults_on_ops_2t": round(f2), "oracle_cost_2t": round(1 - v2 / b2, 3),
       "runs": {"verified_ops_2t": sys.argv[6].split(), "bare_ops_2t": sys.argv[7].split()}}
json.dump(res, open(path, "w"), indent=2)
print(f"{'measure':22} {'ops/s':>12}")
for k in ("verified_ops_1t", "verified_ops_2t", "bare_ops_2t", "faults_on_ops_2t"):
    print(f"{k:22} {res[k]:12,}")
print(f"oracle cost with 2 threads: {100 * res['oracle_cost_2t']:.1f}%  (aim: >= 200,000 verified ops/s, cost < 10%)")
print(path)
PY
