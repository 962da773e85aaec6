#!/usr/bin/env bash
# make bench-faults: engine readrandom (32-byte keys, 200-byte values,
# warm cache, one thread) with the plain engine against the fault build
# with libfiu initialized and every point compiled in but disarmed.  The
# two builds run interleaved in one run (plain, fiu / fiu, plain / ...,
# ABBA so drift over the run cancels), ROUNDS times each.  Writes
# build/bench/faults.json: plain_ops and fault_build_ops are the medians;
# ratio is the median of the per-round ratios (the two runs of a round
# ran back to back, so a noisy neighbour slows both), with the ratio of
# the medians and every run beside it.
# NUM, READS and ROUNDS override the sizes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup faults
NUM=${NUM:-200000}
READS=${READS:-1000000}
ROUNDS=${ROUNDS:-7}
P=$BUILD/bench/bench_faults_plain
F=$BUILD/bench/bench_faults_fiu

val() { "$@" | awk '{print $2}'; }
echo "fill: $NUM keys ..."
"$P" "$work/db" --num "$NUM" --phase fill >/dev/null
plain=(); fiu=()
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then order=(P F); else order=(F P); fi
  for b in "${order[@]}"; do
    if [[ $b == P ]]; then
      plain+=("$(val "$P" "$work/db" --num "$NUM" --phase read --reads "$READS")")
    else
      fiu+=("$(val "$F" "$work/db" --num "$NUM" --phase read --reads "$READS")")
    fi
  done
  echo "round $((r + 1))/$ROUNDS: plain ${plain[-1]} ops/s, fault build ${fiu[-1]} ops/s"
done

python3 - "$out/faults.json" "${plain[*]}" "${fiu[*]}" <<'PY'
import json, statistics, sys
path, p, f = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
pm, fm = statistics.median(p), statistics.median(f)
paired = statistics.median(b / a for a, b in zip(p, f))
res = {"plain_ops": round(pm), "fault_build_ops": round(fm), "ratio": round(paired, 3),
       "ratio_of_medians": round(fm / pm, 3), "rounds": len(p),
       "plain_runs": [round(x) for x in p], "fault_build_runs": [round(x) for x in f]}
json.dump(res, open(path, "w"), indent=2)
print(f"{'readrandom (warm cache)':26} {'ops/s (median)':>16}")
print(f"{'plain engine':26} {pm:16.0f}")
print(f"{'fault build, disarmed':26} {fm:16.0f}")
print(f"ratio {res['ratio']:.3f} (median of {len(p)} paired rounds; of medians {res['ratio_of_medians']:.3f}); aim >= 0.98; {path}")
PY
