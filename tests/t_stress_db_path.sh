#!/usr/bin/env bash
# t_stress_db_path.sh -- the directories build/stress may create: only the
# database directory, the expected-values directory and the run directory
# themselves, and only in a parent that exists.  A mistyped path (a parent
# missing) is a usage error, exit 2, one line naming the missing parent,
# and nothing created; a mistake there must not grow a new tree beside the
# intended one.  Also: engine-tool check's failure line names present=m
# for what it counts, so it never seems to contradict the keys it found.
# Lines "ok NAME" / "not ok NAME" (tests/run_all.sh counts them).
# Environment: BUILD (default build).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
S=$BUILD/stress
TOOL=$BUILD/engine-tool
[ -x "$S" ] && [ -x "$TOOL" ] || { echo "not ok stress_built ($S, $TOOL: run make)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/t_stress_db_path.XXXXXX")
trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok $1"; }
nok() { echo "not ok $1"; failed=1; [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -n 25; return 0; }
SMALL=(--threads 1 --ops_per_thread 50 --max_key 100)

# refused NAME MISSING_PARENT ARGS...: stress exits 2 with one line on
# stderr naming MISSING_PARENT, nothing on stdout, and $T unchanged.
refused() {
  local name=$1 parent=$2 rc before after; shift 2
  before=$(cd "$T" && find . | grep -vE '^\./(out|err|all)$' | sort)
  "$S" "$@" "${SMALL[@]}" >"$T/out" 2>"$T/err"
  rc=$?
  after=$(cd "$T" && find . | grep -vE '^\./(out|err|all)$' | sort)
  if [ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -qF "its parent $parent does not exist" "$T/err" &&
    [ ! -s "$T/out" ] && [ ! -e "$parent" ] && [ "$before" = "$after" ]; then
    ok "$name"
  else
    { cat "$T/err" "$T/out"; echo "exit $rc"; diff <(echo "$before") <(echo "$after"); } >"$T/all"
    nok "$name" "$T/all"
  fi
}

mkdir -p "$T/here"
refused mistyped_parent_of_db_is_a_usage_error "$T/mistyped/path" --db "$T/mistyped/path/db"
refused mistyped_parent_of_db_with_a_trailing_slash_is_a_usage_error "$T/mistyped" --db "$T/mistyped/db/"
refused mistyped_parent_of_expected_values_dir_is_a_usage_error "$T/nosuch" \
  --db "$T/here/db" --expected_values_dir "$T/nosuch/exp"
refused mistyped_parent_of_run_dir_is_a_usage_error "$T/nosuch" --db "$T/here/db" --run_dir "$T/nosuch/run"
refused mistyped_parent_with_the_door_is_a_usage_error "$T/mistyped" --db "$T/mistyped/db" --faults_via posix \
  --io_backend psync --sync_fault_injection 1
refused mistyped_parent_under_sqlite_is_a_usage_error "$T/mistyped" --engine sqlite --db "$T/mistyped/db"

# A database directory (and its default expected-values directory beside
# it) in an existing parent is created, with no note about parents.
"$S" --db "$T/here/db" "${SMALL[@]}" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc = 0 ] && [ -d "$T/here/db" ] && [ -d "$T/here/db.expected" ] && ! grep -q 'parent' "$T/err"; then
  ok db_in_an_existing_parent_is_created
else cat "$T/out" "$T/err" >"$T/all"; nok db_in_an_existing_parent_is_created "$T/all"; fi

# "--db DIR/": the expected values go beside DIR, as for "--db DIR".
mkdir -p "$T/slash"
"$S" --db "$T/slash/db/" "${SMALL[@]}" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc = 0 ] && [ -d "$T/slash/db.expected" ] && [ ! -e "$T/slash/db/.expected" ]; then
  ok db_with_a_trailing_slash_keeps_its_expected_values_beside_it
else cat "$T/out" "$T/err" >"$T/all"; nok db_with_a_trailing_slash_keeps_its_expected_values_beside_it "$T/all"; fi

# As crashtest lays them out: db, expected values and run directory side
# by side in a folder that exists, none of them yet.
mkdir -p "$T/state"
"$S" --db "$T/state/db" --expected_values_dir "$T/state/exp" --run_dir "$T/state/run" --destroy_db_initially \
  "${SMALL[@]}" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc = 0 ] && [ -d "$T/state/db" ] && [ -d "$T/state/exp" ] && [ -d "$T/state/run" ]; then
  ok crashtest_layout_is_created
else cat "$T/out" "$T/err" >"$T/all"; nok crashtest_layout_is_created "$T/all"; fi

# engine-tool check on a database with a damaged leaf: present=m counts
# the unbroken run of keys from key 0, not every key found; the failure
# line says which is which.
d=$T/tool
"$TOOL" load "$d" --keys 2000 >/dev/null 2>&1
ps=$("$TOOL" stat "$d" | python3 -c 'import json,sys; print(json.load(sys.stdin)["options"]["page_size"])')
nblocks=$(($(stat -c %s "$d/data") / ps))
leaf=
for ((b = 1; b < nblocks; b++)); do
  if "$TOOL" dump-page "$d" "$b" 2>/dev/null | grep -q '^type: leaf '; then leaf=$b; break; fi
done
if [ -n "$leaf" ]; then
  python3 -c '
import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1])); f.close()
' "$d/data" $((leaf * ps + 1000))
fi
"$TOOL" check "$d" --keys 2000 >"$T/out" 2>&1
rc=$?
p=$(sed -n 's/^present=//p' "$T/out")
found=$(sed -nE 's/^check: FAILED: ([0-9]+) of 2000 keys found,.*/\1/p' "$T/out")
if [ -n "$leaf" ] && [ $rc = 1 ] && [ -n "$p" ] && [ -n "$found" ] && [ "$p" -le "$found" ] &&
  grep -qE "^check: FAILED: $found of 2000 keys found, present=$p of them in the unbroken run from key 0, " "$T/out" &&
  ! grep -q 'keys present' "$T/out"; then
  ok check_failure_line_names_what_present_counts
else echo "leaf block: ${leaf:-none}" >>"$T/out"; nok check_failure_line_names_what_present_counts "$T/out"; fi

exit $failed
