#!/usr/bin/env bash
# make bench-door: fillsync (one fsync per put, psync backend) with the
# fault door armed on the database directory and hooks that inject
# nothing (bench_door: every file call translated and handed to them)
# against the same engine with no door (bench_faults_plain).  The two run
# interleaved (ABBA, so drift over the run cancels), ROUNDS times each,
# each on a fresh directory.  Writes build/bench/door.json: fillsync_ops
# (no door) and door_fillsync_ops are the medians; ratio is the median of
# the per-round ratios (door / no door), with every run and the door's
# translated calls beside them.  SYNC_NUM and ROUNDS override the sizes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_setup door
SYNC_NUM=${SYNC_NUM:-5000}
ROUNDS=${ROUNDS:-7}
P=$BUILD/bench/bench_faults_plain
D=$BUILD/bench/bench_door

plain=(); door=(); calls=()
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then order=(P D); else order=(D P); fi
  for b in "${order[@]}"; do
    rm -rf "$work/db"
    if [[ $b == P ]]; then
      plain+=("$("$P" "$work/db" --num "$SYNC_NUM" --phase fillsync --psync | awk '/^fillsync_ops/ {print $2}')")
    else
      o=$("$D" "$work/db" --num "$SYNC_NUM" --phase fillsync --psync)
      door+=("$(awk '/^fillsync_ops/ {print $2}' <<<"$o")")
      calls+=("$(awk '/^door_ops/ {print $2}' <<<"$o")")
    fi
  done
  echo "round $((r + 1))/$ROUNDS: no door ${plain[-1]} ops/s, door ${door[-1]} ops/s (${calls[-1]} calls translated)"
done

python3 - "$out/door.json" "${plain[*]}" "${door[*]}" "${calls[*]}" "$SYNC_NUM" <<'PY'
import json, statistics, sys
path, p, d, c, num = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()], \
    [int(x) for x in sys.argv[4].split()], int(sys.argv[5])
if min(c) < num:
    sys.exit("bench-door: the door translated %d calls for %d synced puts: it did not see the engine" % (min(c), num))
pm, dm = statistics.median(p), statistics.median(d)
paired = statistics.median(b / a for a, b in zip(p, d))
res = {"fillsync_ops": round(pm), "door_fillsync_ops": round(dm), "ratio": round(paired, 3),
       "ratio_of_medians": round(dm / pm, 3), "rounds": len(p), "sync_num": num,
       "fillsync_runs": [round(x) for x in p], "door_fillsync_runs": [round(x) for x in d], "door_calls": c}
json.dump(res, open(path, "w"), indent=2)
print(f"{'fillsync, psync':26} {'ops/s (median)':>16}")
print(f"{'no door':26} {pm:16.0f}")
print(f"{'door armed, no fault':26} {dm:16.0f}")
print(f"ratio {res['ratio']:.3f} (median of {len(p)} paired rounds; of medians {res['ratio_of_medians']:.3f}); aim >= 0.95; {path}")
PY
