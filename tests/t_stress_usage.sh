#!/usr/bin/env bash
# t_stress_usage.sh -- what the stress driver and powerloss say to a new
# user: --help shows one default per option; --version names
# the git tree and the build; --kill_points names a bad point; an unusable
# --db is a usage error (exit 2) with errno's text and leaves nothing
# (t_stress_db_path.sh: a missing parent is refused); a usage error found
# after the run state was read leaves it as it was (the next run does not
# count a refused command line as a kill).
# Lines "ok NAME" / "not ok NAME" (tests/run_all.sh counts them).
# Environment: BUILD (default build).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
S=$BUILD/stress
PL=$BUILD/powerloss
[ -x "$S" ] && [ -x "$PL" ] || { echo "not ok stress_built ($S, $PL: run make)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/t_stress_usage.XXXXXX")
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
failed=0
ok() { echo "ok $1"; }
nok() { echo "not ok $1"; failed=1; [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -n 25; return 0; }

# one default per option
"$S" --help >"$T/help" 2>&1
if [ "$(grep -c 'default:.*default:' "$T/help")" = 0 ] && grep -q -- '--expected_values_dir=S .*(default: DB.expected)$' "$T/help"; then
  ok help_shows_one_default_per_option
else nok help_shows_one_default_per_option "$T/help"; fi

for p in "$S" "$PL" "$BUILD/engine-tool"; do
  n=$(basename "$p")
  if "$p" --version >"$T/v" 2>&1 && grep -q "^$n git " "$T/v" && grep -q '^build: ' "$T/v"; then
    ok "version_of_$n"
  else nok "version_of_$n" "$T/v"; fi
done

# a bad kill point is named, and nothing is written
"$S" --db "$T/k/db" --kill_random_test 10 --kill_points kill/wal/after_sync,nosuch/point --ops_per_thread 10 \
  >"$T/out" 2>&1
rc=$?
if [ $rc = 2 ] && grep -q "'nosuch/point' is not a kill point" "$T/out" && [ ! -e "$T/k" ]; then
  ok kill_points_names_the_bad_point
else nok kill_points_names_the_bad_point "$T/out"; fi

# --db a file: usage error naming errno's text, nothing beside it
: >"$T/afile"
"$S" --db "$T/afile" --ops_per_thread 10 >"$T/out" 2>&1
rc=$?
if [ $rc = 2 ] && grep -q 'Not a directory' "$T/out" && [ ! -e "$T/afile.expected" ]; then
  ok db_that_is_a_file_is_a_usage_error
else nok db_that_is_a_file_is_a_usage_error "$T/out"; fi

# --db under a file: the parent is named
"$S" --db "$T/afile/db" --ops_per_thread 10 >"$T/out" 2>&1
rc=$?
if [ $rc = 2 ] && grep -q 'afile/db: Not a directory' "$T/out"; then
  ok db_under_a_file_is_a_usage_error
else nok db_under_a_file_is_a_usage_error "$T/out"; fi

# a read-only directory (root writes anywhere but on a read-only mount)
mkdir -p "$T/ro" && chmod 555 "$T/ro"
if [ "$(id -u)" != 0 ]; then
  "$S" --db "$T/ro/db" --ops_per_thread 10 >"$T/out" 2>&1
  rc=$?
  if [ $rc = 2 ] && grep -q 'Permission denied' "$T/out" && [ -z "$(ls -A "$T/ro")" ]; then
    ok db_in_a_read_only_directory_is_a_usage_error
  else nok db_in_a_read_only_directory_is_a_usage_error "$T/out"; fi
else
  echo "ok db_in_a_read_only_directory_is_a_usage_error # SKIP as root, permissions do not apply"
fi

# a usage error after the state was read leaves it clean
d=$T/state
mkdir -p "$d"
"$S" --db "$d/db" --destroy_db_initially --threads 1 --ops_per_thread 100 --max_key 100 >"$T/out1" 2>&1
"$S" --db "$d/db" --threads 1 --ops_per_thread 100 --max_key 200 >"$T/out2" 2>&1
rc2=$?
"$S" --db "$d/db" --threads 1 --ops_per_thread 100 --max_key 100 --report "$T/r.json" >"$T/out3" 2>&1
rc3=$?
if [ $rc2 = 2 ] && grep -q '^clean 1$' "$d/db.expected/stress_state" && [ $rc3 = 0 ] &&
   python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r.get("post_crash_check") == "none" else 1)' "$T/r.json"; then
  ok usage_error_after_reading_the_state_leaves_it_clean
else cat "$T/out2" "$T/out3" "$d/db.expected/stress_state" >"$T/all" 2>&1; nok usage_error_after_reading_the_state_leaves_it_clean "$T/all"; fi

exit $failed
