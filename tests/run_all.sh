#!/usr/bin/env bash
# Runs every test suite and prints one combined "N passed, N failed" line last.
#   - Criterion binaries $BUILD/tests/test_*      (counted from their synthesis line)
#   - shell suites tests/t_*.sh                   (lines "ok NAME" / "not ok NAME")
#   - Python unittest suites tests/test_*.py      (counted from unittest's summary)
#   - tools/deps_graph.py --quiet                 (one test: the tree's shape)
#   - tools/py_function_length.py --quiet         (one test: no Python function over 80 lines)
#   - tools/c_function_length.py                  (one test: no C function over 120 lines)
#   - tools/rule_labels.py --quiet                (one test: every rule label cited is in docs/rules.md)
#   - tools/py_style.py black, flake8             (one test each: the Python style)
#   - clang-format --dry-run over the C files     (one test: the house style)
#   - the libFuzzer target for FUZZ_SECONDS       (one test: no crash found)
# Environment: BUILD (default build), FUZZ_SECONDS (default 20), TEST_JOBS (suites at
# a time, default 2).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
export BUILD
passed=0; failed=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

add() { passed=$((passed + $1)); failed=$((failed + $2)); }

# The suites run TEST_JOBS at a time (default 2, the cores CI has), each
# into its own log; a suite's block (its tail, then its wall time) is
# printed when it ends, and the counts are added at the end.  Builds the
# suites start themselves go one at a time (crashtest.common.run_make's
# lock), so two suites never write the same objects.  The eight slowest
# are ranked before the last line: make test must stay under 15 minutes.
JOBS=${TEST_JOBS:-2}

# Count a Criterion binary's synthesis line: "P F".
count_c() {
  local syn p f c
  syn=$(grep -E 'Synthesis: Tested: ' "$1" | tail -n 1)
  if [ -z "$syn" ]; then echo "0 1 no synthesis line (rc=$2): counted as one failure"; return; fi
  p=$(sed -E 's/.*Passing: ([0-9]+).*/\1/' <<<"$syn")
  f=$(sed -E 's/.*Failing: ([0-9]+).*/\1/' <<<"$syn")
  c=$(sed -E 's/.*Crashing: ([0-9]+).*/\1/' <<<"$syn")
  echo "$p $((f + c))"
}

# A shell suite's "ok NAME" / "not ok NAME" lines: "P F".
count_sh() {
  local p f
  p=$(grep -cE '^ok ' "$1"); f=$(grep -cE '^not ok ' "$1")
  if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  echo "$p $f"
}

# unittest's summary: "P F".
count_py() {
  local run bad
  run=$(grep -E '^Ran [0-9]+ test' "$1" | sed -E 's/Ran ([0-9]+).*/\1/')
  run=${run:-0}
  bad=$(grep -E '^FAILED \(' "$1" | grep -oE '(failures|errors)=[0-9]+' | awk -F= '{s+=$2} END{print s+0}')
  bad=${bad:-0}
  if [ "$2" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
  echo "$((run - bad < 0 ? 0 : run - bad)) $bad"
}

# Run suite I (KIND c, sh or py, at PATH): $log/I.res holds "P F SECONDS",
# $log/I.show the block to print.
run_suite() {
  local i=$1 kind=$2 t=$3 out="$log/$1.out" rc t0 secs name counts
  t0=$(date +%s.%N)
  case $kind in
    c) name=$(basename "$t"); "$t" --jobs=1 >"$out" 2>&1 ;;
    sh) name=$t; bash "$t" >"$out" 2>&1 ;;
    py) name=$t; python3 -m unittest -v "tests.$(basename "$t" .py)" >"$out" 2>&1 ;;
  esac
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  counts=$(count_"$kind" "$out" "$rc")
  {
    echo "== $name"
    case $kind in
      c) grep -vE '^\[----\] |^$' "$out" | tail -n 40 ;;
      sh) cat "$out" ;;
      py) tail -n 60 "$out" ;;
    esac
    [ "${counts#* * }" != "$counts" ] && echo "   $name ${counts#* * }"
    echo "   ($secs s)"
  } >"$log/$i.tmp"
  echo "${counts%% *} $(cut -d' ' -f2 <<<"$counts") $secs $name" >"$log/$i.res"
  mv "$log/$i.tmp" "$log/$i.show" # whole when show_done sees it
}

suites=()
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  # A binary whose source is gone (a suite renamed or split) is stale: it
  # would run old code and count twice.
  if [ ! -f "tests/$name.c" ]; then
    echo "== $name: stale (no tests/$name.c), removed"
    rm -f "$t"
    continue
  fi
  suites+=("c $t")
done
for t in tests/t_*.sh; do [ -f "$t" ] && suites+=("sh $t"); done
for t in tests/test_*.py; do [ -f "$t" ] && suites+=("py $t"); done

shown=0
show_done() { # print the blocks of suites that ended, in the order they ended
  local f
  for f in $(ls -tr "$log"/*.show 2>/dev/null); do
    cat "$f"; mv "$f" "$f.shown"; shown=$((shown + 1))
  done
}
i=0
for s in "${suites[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; show_done; done
  run_suite "$i" $s &
  i=$((i + 1))
done
wait
show_done
for r in "$log"/*.res; do
  [ -f "$r" ] || continue
  read -r p f secs name <"$r"
  add "$p" "$f"
  echo "$secs $name" >>"$log/times"
done
if [ "$(ls "$log"/*.res 2>/dev/null | wc -l)" -ne "${#suites[@]}" ]; then
  echo "   a suite left no result: counted as one failure"; add 0 1
fi

# The tree's own shape (make deps-graph, rules G1-G4 of tools/deps_graph.py):
# no include circle (contracts: tools/deps_contracts.txt), engine internals
# only inside engine/ (tests exempt), no file over 1,200 lines, the engine
# including nothing outside engine/.
echo "== deps_graph"
if python3 tools/deps_graph.py --quiet; then add 1 0; echo "ok deps_graph"; else add 0 1; echo "not ok deps_graph"; fi

# The Python tooling's functions fit on a screen (crashtest.py, crashtest/,
# tools/; tests exempt): a longer one is split into named helpers.
echo "== py_function_length"
if python3 tools/py_function_length.py --quiet; then
  add 1 0; echo "ok py_function_length"
else
  add 0 1; echo "not ok py_function_length"
fi

# The C functions too (engine/, faults/, oracle/, stress/, tools/; tests and
# bench exempt): none over 120 lines.
echo "== c_function_length"
if python3 tools/c_function_length.py; then
  add 1 0; echo "ok c_function_length"
else
  add 0 1; echo "not ok c_function_length"
fi

# The rule labels (K1, PL8, V4b ...) the tree cites are one namespace:
# each is listed once, with the file that defines it, in docs/rules.md.
echo "== rule_labels"
if python3 tools/rule_labels.py --quiet; then
  add 1 0; echo "ok rule_labels"
else
  add 0 1; echo "not ok rule_labels"
fi

# The Python style (pyproject.toml, .flake8; make lint runs both, make
# format applies black).  A tool that is missing fails its test, naming
# the Debian package to install.
for tool in black flake8; do
  echo "== $tool"
  if python3 tools/py_style.py "$tool" >"$log/$tool.out" 2>&1; then
    add 1 0; echo "ok $tool"
  else
    add 0 1; head -n 30 "$log/$tool.out"; echo "not ok $tool (make lint)"
  fi
done

# The house style (.clang-format; make format applies it).
echo "== clang_format"
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
  if git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror >"$log/cf.out" 2>&1; then
    add 1 0; echo "ok clang_format"
  else
    add 0 1; head -n 20 "$log/cf.out"; echo "not ok clang_format (make format)"
  fi
else
  echo "   clang_format skipped (no clang-format or not a git checkout)"
fi

fuzz=build/fuzz/fuzz_decoders
if [ -x "$fuzz" ] && [ "$FUZZ_SECONDS" -gt 0 ]; then
  echo "== fuzz_decoders (${FUZZ_SECONDS}s)"
  mkdir -p build/fuzz/corpus
  if "$fuzz" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 build/fuzz/corpus tests/fuzz/seeds \
       >"$log/fuzz.out" 2>&1; then
    tail -n 3 "$log/fuzz.out"; echo "ok fuzz_decoders"; add 1 0
  else
    tail -n 40 "$log/fuzz.out"; echo "not ok fuzz_decoders"; add 0 1
  fi
fi

echo
echo "slowest suites (seconds):"
sort -rn "$log/times" | head -n 8 | sed 's/^/   /'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
