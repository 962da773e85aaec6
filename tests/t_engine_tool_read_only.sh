#!/usr/bin/env bash
# t_engine_tool_read_only.sh -- engine-tool's inspecting commands (verify,
# check, stat, get, dump-page, waldump) on a database they may not write:
# every file and directory without write permission, read by an
# unprivileged user (root drops to nobody with setpriv, since root ignores
# permissions), and on a read-only mount when mounting is allowed: exit 0,
# the output of a writable run, and no file created, changed or removed
# (listing, modes and hashes compared).  A database locked by a writer is
# reported busy, a missing directory not found, neither with a summary of
# zeros; a data file cut short of control's high-water mark is one report.
#
# Run from the repository root (tests/run_all.sh does) with BUILD set
# (default build).  Prints "ok NAME" / "not ok NAME" (with diagnostics
# indented under it) per test; exits nonzero if any test failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD ;; esac

if [ ! -x "$BUILD/engine-tool" ]; then
  echo "not ok engine_tool_built"
  echo "#   $BUILD/engine-tool is missing: run make first"
  exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/t_engine_tool_ro.XXXXXX")
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  chmod -R u+w "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
# The unprivileged reader must reach the tool and the databases: a copy of
# the tool beside them, in a directory anyone may enter.
chmod 755 "$T"
cp "$BUILD/engine-tool" "$T/engine-tool"
chmod 755 "$T/engine-tool"
TOOL=$T/engine-tool
failed=0

# ---- helpers -------------------------------------------------------------

run_test() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then
    echo "ok $name"
  else
    echo "not ok $name"
    sed 's/^/#   /' <<<"$out"
    failed=$((failed + 1))
  fi
}

# as_reader CMD...: CMD as a user without write permission on the files
# (root drops to nobody: a test that ran as root would prove nothing).
as_reader() {
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups -- "$@"
  else
    "$@"
  fi
}

# expect WANT_RC CMD...: run CMD, output in $T/out and $T/err.
expect() {
  local want=$1 rc; shift
  "$@" >"$T/out" 2>"$T/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "command: $*"
    echo "expected exit $want, got $rc"
    echo "--- stdout:"; head -c 3000 "$T/out"
    echo "--- stderr:"; head -c 3000 "$T/err"
    return 1
  fi
}

has() { # out|err REGEX
  if ! grep -qE -- "$2" "$T/$1"; then
    echo "expected a line matching '$2' in std$1, got:"
    head -c 3000 "$T/$1"
    return 1
  fi
}

hasnt() { # out|err REGEX
  if grep -qE -- "$2" "$T/$1"; then
    echo "expected no line matching '$2' in std$1, got:"
    head -c 3000 "$T/$1"
    return 1
  fi
}

# snapshot DIR: every entry with its type, mode, size and hash, sorted
# (mtimes are left out: reading changes none, and atime is not a write).
snapshot() {
  (cd "$1" && find . -printf '%p %y %m %s\n' | sort &&
    find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# same_snapshot BEFORE DIR: DIR still matches the snapshot file BEFORE.
same_snapshot() {
  snapshot "$2" >"$T/snap.after"
  if ! cmp -s "$1" "$T/snap.after"; then
    echo "the directory changed:"
    diff "$1" "$T/snap.after" | head -40
    return 1
  fi
}

# make_db DIR: a database with 3000 keys and a log holding more than its
# checkpoint (the last load is killed, so an open replays records).
make_db() {
  "$TOOL" load "$1" --keys 3000 >/dev/null || return 1
  "$TOOL" load "$1" --keys 200000 --sync off --checkpoint-wal-bytes 0 >/dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# inspect_all DIR KEYS RUN...: every inspecting command through RUN (empty
# or as_reader), outputs kept in $T/inspect.<name>.
inspect_all() {
  local d=$1 keys=$2 rc=0; shift 2
  expect 0 "$@" "$TOOL" verify "$d" || return 1
  has out '^verify: 0 problems$' || return 1
  has out '^  Bad checksums: +0$' || return 1
  cp "$T/out" "$T/inspect.verify"
  expect 0 "$@" "$TOOL" verify "$d" --json || return 1
  has out '"checked": true' || return 1
  expect 0 "$@" "$TOOL" check "$d" --keys "$keys" || return 1
  has out "^present=$keys\$" || return 1
  cp "$T/out" "$T/inspect.check"
  expect 0 "$@" "$TOOL" stat "$d" || return 1
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["sizes"]["nblocks"] > 2, s' "$T/out" ||
    return 1
  expect 0 "$@" "$TOOL" get "$d" k000000000000007 || return 1
  expect 0 "$@" "$TOOL" dump-page "$d" 1 || return 1
  hasnt err 'inferred|busy|error' || return 1
  expect 0 "$@" "$TOOL" waldump "$d" --limit 5 || return 1
  return $rc
}

# ---- tests -----------------------------------------------------------------

# The reader is what the permission tests rely on: not root (root ignores
# modes, so the tests would pass whatever the tool wrote), able to run the
# tool's copy, and refused a write in a directory without write
# permission.  Run as root (CI), this proves the drop to nobody happened.
t_reader_is_unprivileged() {
  local uid
  uid=$(as_reader id -u) || { echo "cannot run as the reader (setpriv)"; return 1; }
  [ "$uid" != 0 ] || { echo "the reader is root"; return 1; }
  as_reader "$TOOL" --version >/dev/null || { echo "the reader cannot run $TOOL (is $T reachable?)"; return 1; }
  mkdir -p "$T/probe" && chmod 555 "$T/probe"
  if as_reader sh -c ': >"$1/x"' _ "$T/probe" 2>/dev/null; then
    echo "the reader (uid $uid) wrote into a directory without write permission"
    return 1
  fi
}

# No write permission anywhere; LOCK present (a shared lock is taken).
t_no_write_permission() {
  local d=$T/perm/db keys
  mkdir -p "$T/perm" && chmod 755 "$T/perm"
  make_db "$d" || return 1
  # What a writable inspection says (it writes nothing either: a
  # read-only open), for the unprivileged run to match.
  keys=$("$TOOL" check "$d" --keys 300000 | sed -n 's/^present=//p')
  [ -n "$keys" ] && [ "$keys" -ge 3000 ] || { echo "present=$keys after the loads"; return 1; }
  inspect_all "$d" "$keys" || return 1
  cp "$T/inspect.verify" "$T/writable.verify"
  cp "$T/inspect.check" "$T/writable.check"
  [ -f "$d/LOCK" ] || { echo "the writer left no LOCK"; return 1; }
  chmod -R a-w "$d"
  snapshot "$d" >"$T/snap.before"
  inspect_all "$d" "$keys" as_reader || return 1
  cmp -s "$T/writable.verify" "$T/inspect.verify" || { echo "verify differs:"; diff "$T/writable.verify" "$T/inspect.verify"; return 1; }
  cmp -s "$T/writable.check" "$T/inspect.check" || { echo "check differs:"; diff "$T/writable.check" "$T/inspect.check"; return 1; }
  same_snapshot "$T/snap.before" "$d" || return 1
  # A writer is refused by the permissions, not by a lock the reader left.
  expect 2 as_reader "$TOOL" load "$d" --keys 1 || return 1
  same_snapshot "$T/snap.before" "$d" || return 1
}

# No LOCK at all and no permission to create one: no lock is taken, and
# none is created.
t_no_lock_file() {
  local d=$T/nolock/db
  mkdir -p "$T/nolock" && chmod 755 "$T/nolock"
  "$TOOL" load "$d" --keys 2000 >/dev/null || return 1
  rm -f "$d/LOCK"
  chmod -R a-w "$d"
  snapshot "$d" >"$T/snap.before"
  inspect_all "$d" 2000 as_reader || return 1
  same_snapshot "$T/snap.before" "$d" || return 1
  [ ! -e "$d/LOCK" ] || { echo "LOCK was created"; return 1; }
}

# A read-only mount (EROFS rather than EACCES), in a mount namespace of
# its own; as root, since root's permissions do not help there.
t_read_only_mount() {
  local m=$T/mnt
  mkdir -p "$m"
  "$TOOL" load "$T/mnt.src" --keys 2000 >/dev/null || return 1
  unshare -m --propagation private bash -c '
    set -e
    mount -t tmpfs -o size=64m tmpfs "$1"
    cp -a "$2" "$1/db"
    mount -o remount,ro "$1"
    cd "$1/db" && find . -printf "%p %y %m %s\n" | sort >"$3/ro.before" && cd - >/dev/null
    for c in verify stat; do "$4" "$c" "$1/db" >"$3/ro.$c" 2>&1 || { echo "$c failed:"; cat "$3/ro.$c"; exit 1; }; done
    "$4" check "$1/db" --keys 2000 >"$3/ro.check" 2>&1 || { echo "check failed:"; cat "$3/ro.check"; exit 1; }
    grep -q "^verify: 0 problems$" "$3/ro.verify"
    grep -q "^present=2000$" "$3/ro.check"
    cd "$1/db" && find . -printf "%p %y %m %s\n" | sort >"$3/ro.after"
    cmp "$3/ro.before" "$3/ro.after"
  ' _ "$m" "$T/mnt.src" "$T" "$TOOL" || return 1
}

# A writer holds the exclusive lock (another process): busy, no summary.
t_busy() {
  local d=$T/busy/db
  mkdir -p "$T/busy"
  "$TOOL" load "$d" --keys 2000 >/dev/null || return 1
  (exec 9<"$d/LOCK"; flock -x 9; exec sleep 60) &
  holder=$!
  local i
  for ((i = 0; i < 100; i++)); do flock -n -s "$d/LOCK" true 2>/dev/null || break; sleep 0.05; done
  [ "$i" -lt 100 ] || { echo "the holder never took the lock"; return 1; }
  snapshot "$d" >"$T/snap.before"
  expect 2 "$TOOL" verify "$d" || return 1
  has err 'verify .*: busy' || return 1
  hasnt out 'Verify summary|Bad checksums|problems' || return 1
  [ "$(wc -l <"$T/err")" -eq 1 ] || { echo "more than one line:"; cat "$T/err"; return 1; }
  expect 2 "$TOOL" verify "$d" --json || return 1
  has out '"checked": false' || return 1
  hasnt out 'problems|bad_checksums' || return 1
  expect 2 "$TOOL" stat "$d" || return 1
  has err 'busy' || return 1
  expect 2 "$TOOL" check "$d" --keys 2000 || return 1
  has err 'busy' || return 1
  hasnt out 'present=' || return 1
  kill "$holder"; wait "$holder" 2>/dev/null; holder=
  same_snapshot "$T/snap.before" "$d" || return 1
  # Readers share the lock: one holding it does not stop another, and
  # keeps a writer out.
  (exec 9<"$d/LOCK"; flock -s 9; exec sleep 60) &
  holder=$!
  for ((i = 0; i < 100; i++)); do flock -n -x "$d/LOCK" true 2>/dev/null || break; sleep 0.05; done
  expect 0 "$TOOL" verify "$d" || return 1
  expect 2 "$TOOL" load "$d" --keys 10 || return 1
  has err 'busy' || return 1
  kill "$holder"; wait "$holder" 2>/dev/null; holder=
}

# A directory that is not there, and one that holds no database.
t_not_found() {
  expect 2 "$TOOL" verify "$T/nowhere" || return 1
  has err 'not found' || return 1
  hasnt out 'Verify summary|Bad checksums' || return 1
  [ ! -e "$T/nowhere" ] || { echo "verify created the directory"; return 1; }
  mkdir -p "$T/empty"
  expect 2 "$TOOL" verify "$T/empty" || return 1
  has err 'not found' || return 1
  hasnt out 'Verify summary|Bad checksums' || return 1
  [ -z "$(ls -A "$T/empty")" ] || { echo "verify wrote into an empty directory:"; ls -A "$T/empty"; return 1; }
  expect 2 "$TOOL" stat "$T/nowhere" || return 1
  has err 'not found' || return 1
}

# A data file cut short of control's high-water mark: one line saying so,
# not one all-zero page per missing block; the tree open (blocks at the
# end) and unopenable (only the meta page left).
t_truncated() {
  local d=$T/trunc/db ps hwm keep
  mkdir -p "$T/trunc"
  "$TOOL" load "$d" --keys 3000 >/dev/null || return 1
  ps=$("$TOOL" stat "$d" | python3 -c 'import json,sys; print(json.load(sys.stdin)["options"]["page_size"])')
  hwm=$("$TOOL" stat "$d" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sizes"]["high_water_mark"])')
  for keep in $((hwm - 5)) 1; do
    truncate -s $((keep * ps)) "$d/data"
    expect 1 "$TOOL" verify "$d" || return 1
    has out "^corruption: layer=zero_page file=data block=$keep .*: the data file is shorter than control says \\($keep blocks, mark $hwm\\)\$" ||
      return 1
    hasnt out 'all-zero page' || return 1
    [ "$(grep -c '^corruption:' "$T/out")" -eq 1 ] || { echo "more than one report:"; cat "$T/out"; return 1; }
    has out '^verify: 1 problems$' || return 1
  done
  # check, on a file missing its last blocks: the same one line.
  rm -rf "$d" && "$TOOL" load "$d" --keys 3000 >/dev/null || return 1
  truncate -s $(((hwm - 5) * ps)) "$d/data"
  expect 1 "$TOOL" check "$d" --keys 3000 || return 1
  has out "the data file is shorter than control says \\($((hwm - 5)) blocks, mark $hwm\\)" || return 1
  hasnt out 'all-zero page' || return 1
  [ "$(grep -c '^corruption:' "$T/out")" -eq 1 ] || { echo "more than one report:"; cat "$T/out"; return 1; }
}

run_test reader_is_unprivileged t_reader_is_unprivileged
run_test no_write_permission t_no_write_permission
run_test no_lock_file t_no_lock_file
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null &&
  unshare -m --propagation private bash -c 'mount -t tmpfs tmpfs "$1" && umount "$1"' _ "$T" 2>/dev/null; then
  run_test read_only_mount t_read_only_mount
else
  echo "ok read_only_mount # skip: no mount namespace here (the permission tests above still ran)"
fi
run_test busy_database_is_reported_busy t_busy
run_test missing_directory_is_not_found t_not_found
run_test truncated_data_file_is_one_report t_truncated

[ "$failed" -eq 0 ]
