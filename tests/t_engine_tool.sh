#!/usr/bin/env bash
# t_engine_tool.sh -- engine-tool end to end: load/check round trips, the
# corruption it must catch on disk (bit flip, misplaced block, zeroed
# block), usage errors that must create nothing, dump-page and stat output;
# the write-ahead log: sync modes, checkpoint, waldump, a damaged record in
# the synced log caught by waldump and verify, recovery after a kill; lost
# files (control, data, a WAL segment) refused by load and reported by
# verify, the directory left unchanged; verify after a damaged leaf blames
# that leaf alone and names it as not checked.
#
# Run from the repository root (tests/run_all.sh does) with BUILD set
# (default build).  Prints "ok NAME" / "not ok NAME" (with diagnostics
# indented under it) per test; exits nonzero if any test failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD ;; esac
TOOL=$BUILD/engine-tool

if [ ! -x "$TOOL" ]; then
  echo "not ok engine_tool_built"
  echo "#   $TOOL is missing: run make first"
  exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/t_engine_tool.XXXXXX")
trap 'rm -rf "$T"' EXIT
failed=0

# ---- helpers -------------------------------------------------------------

# run_test NAME FUNCTION [ARGS]: a test function returns nonzero on failure
# after printing why; its output is shown only then.
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

# expect WANT_RC CMD...: run CMD, keep its output in $T/out and $T/err,
# fail (showing both) unless it exits WANT_RC.
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

# has FILE REGEX: FILE (out or err in $T) contains a line matching REGEX.
has() {
  if ! grep -qE -- "$2" "$T/$1"; then
    echo "expected a line matching '$2' in std$1, got:"
    head -c 3000 "$T/$1"
    return 1
  fi
}

# flip FILE OFFSET [MASK]: xor one byte in place.
flip() {
  python3 - "$1" "$2" "${3:-1}" <<'EOF'
import sys
path, off, mask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0)
with open(path, "r+b") as f:
    f.seek(off); b = f.read(1)
    f.seek(off); f.write(bytes([b[0] ^ mask]))
EOF
}

page_size_of() { # DIR
  "$TOOL" stat "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["options"]["page_size"])'
}

# leaf_blocks DIR: every block whose dump-page type is leaf, one a line.
leaf_blocks() {
  local dir=$1 ps n b
  ps=$(page_size_of "$dir") || return 1
  n=$(( $(stat -c %s "$dir/data") / ps ))
  for ((b = 1; b < n; b++)); do
    "$TOOL" dump-page "$dir" "$b" 2>/dev/null | grep -q '^type: leaf ' && echo "$b"
  done
}

# first_key DIR BLOCK: the key in slot 0 of a leaf.
first_key() {
  "$TOOL" dump-page "$1" "$2" | awk '/^slots:/ {s = 1; next} s && $1 == "0" {print $NF; exit}'
}

# fresh NAME [load options]: a new database with 3000 keys, in $T/NAME.
fresh() {
  local name=$1; shift
  rm -rf "${T:?}/$name"
  expect 0 "$TOOL" load "$T/$name" --keys 3000 "$@" || return 1
}

# ---- tests -----------------------------------------------------------------

t_roundtrip() { # PAGE_SIZE BACKEND
  local d=$T/rt_$1_$2
  expect 0 "$TOOL" load "$d" --keys 3000 --value-size 120 --seed 42 \
    --page-size "$1" --io-backend "$2" || return 1
  has out '^loaded 3000 keys, last_seq=3000 durable_seq=3000$' || return 1
  expect 0 "$TOOL" check "$d" --keys 3000 --value-size 120 --seed 42 --io-backend "$2" || return 1
  has out '^present=3000$' || return 1
  [ "$(page_size_of "$d")" = "$1" ] || { echo "stat page_size is not $1"; return 1; }
  # More keys asked for than loaded: the missing tail is fine.
  expect 0 "$TOOL" check "$d" --keys 3500 --value-size 120 --seed 42 || return 1
  has out '^present=3000$' || return 1
  # Another seed means other values.
  expect 1 "$TOOL" check "$d" --keys 3000 --value-size 120 --seed 43 || return 1
  has out '^wrong value: key=k000000000000000 ' || return 1
  # Another value size is a wrong value too.
  expect 1 "$TOOL" check "$d" --keys 3000 --value-size 100 --seed 42 || return 1
  has out '^wrong value: ' || return 1
  # Fewer keys asked for than present: the rest are extra.
  expect 1 "$TOOL" check "$d" --keys 2000 --value-size 120 --seed 42 || return 1
  has out '^extra key: key=k000000000002000' || return 1
  rm -rf "$d"
}

t_load_again_and_get() {
  local d=$T/again
  expect 0 "$TOOL" load "$d" --keys 100 --page-size 4096 || return 1
  expect 0 "$TOOL" load "$d" --keys 200 || return 1      # reopen, extend
  expect 0 "$TOOL" check "$d" --keys 200 || return 1
  has out '^present=200$' || return 1
  expect 0 "$TOOL" load "$d" --keys 0 || return 1
  expect 0 "$TOOL" get "$d" k000000000000150 || return 1
  [ "$(stat -c %s "$T/out")" = 100 ] || { echo "get printed $(stat -c %s "$T/out") bytes, not 100"; return 1; }
  expect 1 "$TOOL" get "$d" k000000000000250 || return 1
  has err '^not found$' || return 1
  [ ! -s "$T/out" ] || { echo "get of an absent key wrote to stdout"; return 1; }
}

t_no_checksums_roundtrip() {
  local d=$T/nocsum
  expect 0 "$TOOL" load "$d" --keys 2000 --no-data-checksums --page-size 8192 || return 1
  expect 0 "$TOOL" check "$d" --keys 2000 || return 1
  expect 0 "$TOOL" stat "$d" || return 1
  has out '"data_checksums": false' || return 1
  expect 0 "$TOOL" verify "$d" || return 1
}

t_verify_clean() {
  fresh clean --page-size 4096 || return 1
  expect 0 "$TOOL" verify "$T/clean" || return 1
  has out '^verify: 0 problems$' || return 1
  if grep -q '^corruption:' "$T/out"; then echo "corruption line on a clean db"; return 1; fi
}

t_bitflip_leaf() {
  local d=$T/flip ps leaf key rc
  fresh flip --page-size 4096 || return 1
  ps=$(page_size_of "$d")
  leaf=$(leaf_blocks "$d" | sed -n 3p)
  [ -n "$leaf" ] || { echo "no leaf block found"; return 1; }
  key=$(first_key "$d" "$leaf")
  [ -n "$key" ] || { echo "no key in slot 0 of block $leaf"; return 1; }
  "$TOOL" get "$d" "$key" >"$T/good" || { echo "get $key failed before the flip"; return 1; }

  flip "$d/data" $((leaf * ps + 200)) 4
  expect 1 "$TOOL" verify "$d" || return 1
  has out "^corruption:.*block=$leaf( |$)" || return 1
  has out '^verify: [1-9][0-9]* problems$' || return 1

  # get never prints a wrong value: either the right bytes, or nothing
  # and a failure (with checksums on, it must be the failure).
  "$TOOL" get "$d" "$key" >"$T/out" 2>"$T/err"
  rc=$?
  if [ -s "$T/out" ] && ! cmp -s "$T/out" "$T/good"; then
    echo "get $key printed a wrong value (exit $rc)"; return 1
  fi
  [ "$rc" -eq 1 ] || { echo "get $key after the flip exited $rc, not 1"; cat "$T/err"; return 1; }
  has err "^corruption:.*block=$leaf( |$)" || return 1
  [ ! -s "$T/out" ] || { echo "get printed bytes despite corruption"; return 1; }

  # dump-page shows the mismatch and exits 1.
  expect 1 "$TOOL" dump-page "$d" "$leaf" || return 1
  has out '^checksum: .*MISMATCH' || return 1
  has out '^verify: CORRUPT layer=page_checksum' || return 1
}

# One flipped bit in a leaf between two others: verify reports that block
# alone (its neighbours' sibling links are not blamed) and names it as the
# page it could not check.
t_verify_blames_only_the_damaged_leaf() {
  local d=$T/onlyleaf ps leaf n
  fresh onlyleaf --page-size 4096 || return 1
  ps=$(page_size_of "$d")
  leaf=$(leaf_blocks "$d" | sed -n 5p)
  [ -n "$leaf" ] || { echo "no fifth leaf block found"; return 1; }
  flip "$d/data" $((leaf * ps + 300)) 16
  expect 1 "$TOOL" verify "$d" || return 1
  n=$(grep -c '^corruption:' "$T/out")
  [ "$n" -eq 1 ] || { echo "$n corruption lines, want exactly one (block $leaf):"; cat "$T/out"; return 1; }
  has out "^corruption: layer=page_checksum file=data block=$leaf " || return 1
  has out "^unchecked: blocks=$leaf skipped=leaf-links-across-them,unreachable-blocks$" || return 1
  has out '^verify: 1 problems$' || return 1
  # A clean database prints no unchecked line.
  fresh onlyleaf_clean --page-size 4096 || return 1
  expect 0 "$TOOL" verify "$T/onlyleaf_clean" || return 1
  if grep -q '^unchecked:' "$T/out"; then echo "unchecked line on a clean database"; return 1; fi
}

t_check_after_corruption() {
  local d=$T/chk ps leaf
  fresh chk --page-size 16384 || return 1
  ps=$(page_size_of "$d")
  leaf=$(leaf_blocks "$d" | sed -n 2p)
  [ -n "$leaf" ] || { echo "no leaf block found"; return 1; }
  flip "$d/data" $((leaf * ps + ps - 10)) 0x80
  expect 1 "$TOOL" check "$d" --keys 3000 || return 1
  has out '^corruption:.*page_checksum.*' || return 1
  has out "block=$leaf( |$)" || return 1
}

t_block_copied() {
  local d=$T/copy ps leaves src dst
  fresh copy --page-size 4096 || return 1
  ps=$(page_size_of "$d")
  leaves=$(leaf_blocks "$d")
  src=$(sed -n 2p <<<"$leaves"); dst=$(sed -n 5p <<<"$leaves")
  [ -n "$src" ] && [ -n "$dst" ] || { echo "not enough leaves: $leaves"; return 1; }
  dd if="$d/data" of="$d/data" bs="$ps" skip="$src" seek="$dst" count=1 conv=notrunc status=none
  expect 1 "$TOOL" verify "$d" || return 1
  has out "^corruption:.*block=$dst( |$)" || return 1
  expect 1 "$TOOL" dump-page "$d" "$dst" || return 1
  has out "^block: $src \(MISMATCH" || return 1
}

t_block_zeroed() {
  local d=$T/zero ps leaf
  fresh zero --page-size 4096 || return 1
  ps=$(page_size_of "$d")
  leaf=$(leaf_blocks "$d" | sed -n 4p)
  [ -n "$leaf" ] || { echo "no leaf block found"; return 1; }
  dd if=/dev/zero of="$d/data" bs="$ps" seek="$leaf" count=1 conv=notrunc status=none
  expect 1 "$TOOL" verify "$d" || return 1
  has out "^corruption:.*zero_page.*block=$leaf( |$)|^corruption:.*block=$leaf( |$).*zero_page" || return 1
  expect 1 "$TOOL" check "$d" --keys 3000 || return 1
  has out '^corruption:' || return 1
}

t_usage_errors() {
  local x=$T/never
  expect 2 "$TOOL" load "$x" --keys abc || return 1
  [ ! -e "$x" ] || { echo "load with --keys abc created $x"; return 1; }
  has err 'keys' || return 1
  [ ! -s "$T/out" ] || { echo "usage error wrote to stdout"; return 1; }
  local bad
  for bad in "--keys -5" "--keys 12x" "--keys 99999999999999999999999" "--keys ''" \
             "--keys 10 --page-size 1000" "--keys 10 --value-size -1" "--keys 10 --seed 1.5" \
             "--keys 10 --io-backend aio" "--keys 10 --bogus" "--keys 10 --cache-size 0" \
             "--value-size 10" "--keys" "--keys 10 extra-arg" "--keys 10 --no-data-checksums=1"; do
    eval "set -- $bad"
    expect 2 "$TOOL" load "$x" "$@" || { echo "(args: $bad)"; return 1; }
    [ ! -e "$x" ] || { echo "load $bad created $x"; return 1; }
  done
  expect 2 "$TOOL" frobnicate "$x" || return 1
  has err 'unknown command' || return 1
  expect 2 "$TOOL" || return 1
  expect 2 "$TOOL" verify || return 1
  expect 2 "$TOOL" load --keys 5 || return 1
  expect 2 "$TOOL" check --keys 5 || return 1
  expect 2 "$TOOL" get "$x" || return 1
  expect 2 "$TOOL" dump-page "$x" || return 1
  expect 2 "$TOOL" dump-page "$x" minus1 || return 1
  expect 2 "$TOOL" verify "$x" || return 1
  has err "open $x" || return 1
  expect 2 "$TOOL" check "$x" --keys 5 || return 1
  expect 2 "$TOOL" stat "$x" || return 1
  expect 2 "$TOOL" get "$x" k || return 1
  [ ! -e "$x" ] || { echo "a read command created $x"; return 1; }
  expect 0 "$TOOL" --help || return 1
  has out '^usage: engine-tool' || return 1
  expect 0 "$TOOL" -h || return 1
  expect 0 "$TOOL" load --help || return 1
}

t_options_anywhere() {
  local d=$T/anywhere
  expect 0 "$TOOL" load --keys 50 --page-size 8192 "$d" --seed=9 || return 1
  expect 0 "$TOOL" check --seed 9 "$d" --keys=50 || return 1
  has out '^present=50$' || return 1
}

t_dump_page() {
  local d=$T/dump leaf n ps
  fresh dump --page-size 4096 || return 1
  leaf=$(leaf_blocks "$d" | head -n 1)
  [ -n "$leaf" ] || { echo "no leaf block found"; return 1; }
  expect 0 "$TOOL" dump-page "$d" "$leaf" || return 1
  has out '^type: leaf \(2\)$' || return 1
  has out '^verify: OK$' || return 1
  has out '^checksum: stored 0x[0-9a-f]+ computed 0x[0-9a-f]+ \(match\)$' || return 1
  has out '^ +0 +[0-9]+ +[0-9]+ +16 +100 +inline +[0-9]+ +[0-9]+ +0x[0-9a-f] k[0-9]{15}$' || return 1
  n=$(grep -cE ' inline +[0-9]+ +[0-9]+ +0x[0-9a-f] k[0-9]{15}$' "$T/out")
  [ "$n" -gt 10 ] || { echo "only $n key lines"; return 1; }
  expect 0 "$TOOL" dump-page "$d" 0 || return 1
  has out '^type: meta ' || return 1
  has out '^  magic: 0x[0-9a-f]+ \(ok\)$' || return 1
  has out '^  root: [0-9]+$' || return 1
  ps=$(page_size_of "$d")
  n=$(( $(stat -c %s "$d/data") / ps ))
  expect 2 "$TOOL" dump-page "$d" "$n" || return 1
  has err 'beyond the end' || return 1
  expect 2 "$TOOL" dump-page "$d" 99999999999 || return 1
  # Garbage never crashes it: a page of random bytes is corrupt, exit 1.
  head -c "$ps" /dev/urandom | dd of="$d/data" bs="$ps" seek="$leaf" count=1 conv=notrunc status=none
  expect 1 "$TOOL" dump-page "$d" "$leaf" || return 1
  has out '^verify: CORRUPT ' || return 1
  # Random bytes with a plausible leaf header and garbage slots.
  python3 - "$d/data" "$((leaf * ps))" <<'EOF' || return 1
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]) + 20)
    f.write(struct.pack("<BBHHHHH", 2, 0, 600, 40 + 2 * 600, 50, 0, 0))
EOF
  expect 1 "$TOOL" dump-page "$d" "$leaf" || return 1
  has out '^type: leaf ' || return 1
  # The engine must refuse the page too, and say so.
  expect 1 "$TOOL" verify "$d" || return 1
  has out "block=$leaf( |$)" || return 1
}

t_stat_json() {
  fresh statdb --page-size 16384 --io-backend psync || return 1
  expect 0 "$TOOL" stat "$T/statdb" --io-backend psync || return 1
  python3 -m json.tool "$T/out" >/dev/null || { echo "stat output is not JSON:"; cat "$T/out"; return 1; }
  python3 - "$T/out" <<'EOF' || return 1
import json, sys
s = json.load(open(sys.argv[1]))
o, z, c = s["options"], s["sizes"], s["counters"]
assert o["page_size"] == 16384, o
assert o["data_checksums"] is True, o
assert o["io_backend"] == "psync", o
assert isinstance(o["cache_size"], int) and o["cache_size"] > 0, o
assert z["nblocks"] > 2 and z["data_file_bytes"] >= 3 * 16384, z
assert z["high_water_mark"] <= z["nblocks"], z
for k in ("page_reads", "page_writes", "cache_hits", "cache_misses", "evictions", "syncs"):
    assert isinstance(c[k], int), k
for k in ("page_checksum", "zero_page", "page_header", "structure", "overflow", "control"):
    assert c["corruption"][k] == 0, c["corruption"]
EOF
}

t_large_values() {
  local d=$T/big
  expect 0 "$TOOL" load "$d" --keys 40 --value-size 20000 --page-size 4096 || return 1
  expect 0 "$TOOL" check "$d" --keys 40 --value-size 20000 || return 1
  has out '^present=40$' || return 1
  expect 0 "$TOOL" verify "$d" || return 1
  expect 0 "$TOOL" get "$d" k000000000000039 || return 1
  [ "$(stat -c %s "$T/out")" = 20000 ] || { echo "get printed $(stat -c %s "$T/out") bytes"; return 1; }
}

# ---- the write-ahead log ---------------------------------------------------

SEG=65536          # small segments: a few thousand keys span several
FIRST_SEG=0000000000000000

# stat_field DIR OBJECT KEY: one value of stat's JSON.
stat_field() {
  "$TOOL" stat "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]][sys.argv[2]])' "$2" "$3"
}

# crash_load NAME [load options]: a database in $T/NAME whose load was
# killed (SIGKILL) once the log reached its third segment, so the log from
# the redo point (LSN 0x20: no checkpoint since creation) holds whole
# segments of synced records.  Each commit is fsynced (--sync commit), so
# where exactly the kill lands does not matter.
# CRASH_UNTIL (a segment name) waits for a later segment instead.
crash_load() {
  local name=$1 d=$T/$1 pid i rc until=${CRASH_UNTIL:-0000000000020000}; shift
  rm -rf "$d"
  "$TOOL" load "$d" --keys 100000000 --sync commit --wal-segment-size "$SEG" \
    --checkpoint-wal-bytes 0 "$@" >"$T/crash.out" 2>&1 &
  pid=$!
  for ((i = 0; i < 6000; i++)); do
    [ -e "$d/wal/$until" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  if [ "$rc" -ne 137 ] || [ ! -e "$d/wal/$until" ]; then
    echo "crash_load $name: load exited $rc before its log reached segment $until:"
    cat "$T/crash.out"
    return 1
  fi
}

# record_at_or_after DIR OFFSET: the LSN (decimal) of the first record in
# the first segment at or after OFFSET whose 32-byte header and first
# payload bytes lie in one block (so a flip there is inside that record).
record_at_or_after() {
  "$TOOL" waldump "$1" | python3 -c '
import re, sys
want = int(sys.argv[1])
for line in sys.stdin:
    m = re.match(r"lsn=0x([0-9a-f]+) ", line)
    if m:
        v = int(m.group(1), 16)
        if v >= want and v % 4096 <= 4096 - 48 and v < 65536:
            print(v)
            break
' "$2"
}

t_sync_modes() {
  local m d
  for m in commit group off; do
    d=$T/sync_$m
    expect 0 "$TOOL" load "$d" --keys 1500 --sync "$m" --wal-segment-size "$SEG" || return 1
    has out '^loaded 1500 keys, last_seq=1500 durable_seq=[0-9]+$' || return 1
    if [ "$m" != off ]; then
      has out 'durable_seq=1500$' || return 1
    fi
    expect 0 "$TOOL" check "$d" --keys 1500 --sync "$m" || return 1
    has out '^present=1500$' || return 1
    # Reopen and extend: sequences go on from the log.
    expect 0 "$TOOL" load "$d" --keys 2000 --sync "$m" || return 1
    has out '^loaded 2000 keys, last_seq=3500 durable_seq=[0-9]+$' || return 1
    expect 0 "$TOOL" check "$d" --keys 2000 --sync "$m" || return 1
    has out '^present=2000$' || return 1
    expect 0 "$TOOL" verify "$d" || return 1
    rm -rf "$d"
  done
}

t_log_options() {
  local d=$T/logopts
  expect 0 "$TOOL" load "$d" --keys 2000 --full-page-writes off --wal-compression zstd \
    --wal-segment-size "$SEG" --checkpoint-wal-bytes 100000 --archive-dir "$T/logopts_arch" || return 1
  expect 0 "$TOOL" check "$d" --keys 2000 || return 1
  has out '^present=2000$' || return 1
  ls "$T/logopts_arch" | grep -qE '^[0-9a-f]{16}$' || {
    echo "no segment archived in $T/logopts_arch:"; ls -la "$T/logopts_arch"; return 1; }
  [ "$(stat_field "$d" options wal_segment_size)" = 65536 ] || { echo "segment size is not 65536"; return 1; }
  # Creation-time: a later --wal-segment-size is noted and ignored.
  expect 0 "$TOOL" load "$d" --keys 2000 --wal-segment-size 131072 || return 1
  has err 'ignored' || return 1
  [ "$(stat_field "$d" options wal_segment_size)" = 65536 ] || { echo "segment size changed"; return 1; }
  # zstd images show in the log of a killed load.
  crash_load zimg --wal-compression zstd || return 1
  expect 0 "$TOOL" waldump "$T/zimg" || return 1
  has out ' image\(block=[0-9]+ hole=[0-9]+\+[0-9]+ codec=zstd bytes=[0-9]+\)' || return 1
}

t_checkpoint() {
  local d=$T/ckpt r1
  expect 0 "$TOOL" load "$d" --keys 2000 --wal-segment-size "$SEG" || return 1
  r1=$(stat_field "$d" recovery redo_lsn) || return 1
  expect 0 "$TOOL" checkpoint "$d" || return 1
  has out '^checkpoint done$' || return 1
  expect 0 "$TOOL" stat "$d" || return 1
  python3 - "$T/out" "$r1" <<'EOF' || return 1
import json, sys
s = json.load(open(sys.argv[1]))
w = s["wal"]
assert isinstance(w["checkpoints"], int), w
# The checkpoint (and the close after it) moved the redo point on.
assert s["recovery"]["redo_lsn"] > int(sys.argv[2]), (s["recovery"], sys.argv[2])
EOF
  expect 0 "$TOOL" waldump "$d" || return 1
  has out '^lsn=0x[0-9a-f]+ len=56 type=checkpoint prev=0x[0-9a-f]+ redo=0x[0-9a-f]+ last_seq=2000 nblocks=[0-9]+$' || return 1
  has out '^end of log at lsn=0x[0-9a-f]+$' || return 1
  expect 0 "$TOOL" check "$d" --keys 2000 || return 1
  # Not a database: exit 2, nothing created.
  expect 2 "$TOOL" checkpoint "$T/ckpt_none" || return 1
  [ ! -e "$T/ckpt_none" ] || { echo "checkpoint created $T/ckpt_none"; return 1; }
  mkdir "$T/ckpt_empty"
  expect 2 "$TOOL" checkpoint "$T/ckpt_empty" || return 1
  [ -z "$(ls -A "$T/ckpt_empty")" ] || { echo "checkpoint wrote into an empty dir:"; ls -A "$T/ckpt_empty"; return 1; }
}

t_waldump() {
  local d=$T/wdump n next
  crash_load wdump || return 1
  expect 0 "$TOOL" waldump "$d" || return 1
  has out '^lsn=0x20 len=56 type=checkpoint prev=0x0 redo=0x20 last_seq=0 nblocks=2$' || return 1
  has out '^lsn=0x[0-9a-f]+ len=[0-9]+ type=batch prev=0x20 seq=1 ops=1 put k=k000000000000000 vlen=100$' || return 1
  has out '^lsn=0x[0-9a-f]+ len=[0-9]+ type=pages prev=0x[0-9a-f]+ batch=0x[0-9a-f]+ op=0 image\(block=1 hole=[0-9]+\+[0-9]+ codec=raw bytes=[0-9]+\) insert\(block=1 idx=0 src=op\)$' || return 1
  has out ' split\(block=[0-9]+ m=[0-9]+ next=[0-9]+\)| meta\(nblocks=[0-9]+ freelist=[0-9]+\)' || return 1
  has out '^end of log at lsn=0x[0-9a-f]+( \(torn tail trimmed\))?$' || return 1
  n=$(grep -c ' type=batch ' "$T/out")
  [ "$n" -gt 300 ] || { echo "only $n batch records"; return 1; }
  if grep -qE '^corruption:|MALFORMED' "$T/out"; then echo "a problem reported on a sound log:"; grep -E '^corruption:|MALFORMED' "$T/out" | head -5; return 1; fi
  # --limit, and --from where it stopped.
  # (checkpoint, batch 1, its pages, its commit: then batch 2)
  has out '^lsn=0x[0-9a-f]+ len=[0-9]+ type=pages prev=0x[0-9a-f]+ batch=0x[0-9a-f]+ op=commit .*clogset\(block=[0-9]+ entry=1 status=committed\)$' || return 1
  expect 0 "$TOOL" waldump "$d" --limit 4 || return 1
  [ "$(grep -c '^lsn=' "$T/out")" = 4 ] || { echo "--limit 4 printed other than 4 records"; return 1; }
  has out '^stopped after 4 records \(--limit\); next lsn=0x[0-9a-f]+$' || return 1
  next=$(sed -n 's/^stopped after 4 records (--limit); next lsn=\(0x[0-9a-f]*\)$/\1/p' "$T/out")
  expect 0 "$TOOL" waldump "$d" --from "$next" --limit 1 || return 1
  has out "^lsn=$next len=[0-9]+ type=batch prev=0x[0-9a-f]+ seq=2 ops=1 put k=k000000000000001 vlen=100$" || return 1
  # Reading changes nothing: two dumps are the same.
  expect 0 "$TOOL" waldump "$d" || return 1
  cp "$T/out" "$T/dump1"
  expect 0 "$TOOL" waldump "$d" || return 1
  cmp -s "$T/out" "$T/dump1" || { echo "two waldumps differ"; return 1; }
  # A cleanly closed database: from the redo point the log is its last
  # checkpoint; --from oldest shows what is left before it.
  expect 0 "$TOOL" load "$T/wclean" --keys 3000 --wal-segment-size "$SEG" || return 1
  expect 0 "$TOOL" waldump "$T/wclean" || return 1
  has out '^lsn=0x[0-9a-f]+ len=56 type=checkpoint .* last_seq=3000 ' || return 1
  has out '^end of log at lsn=0x[0-9a-f]+$' || return 1
  expect 0 "$TOOL" waldump "$T/wclean" --from oldest || return 1
  has out ' type=batch .* seq=[0-9]+ ops=1 put k=k[0-9]{15} vlen=100$' || return 1
  has out ' type=pages .* insert\(block=[0-9]+ idx=[0-9]+ src=op\)' || return 1
  has out '^end of log at lsn=0x[0-9a-f]+$' || return 1
}

t_crash_recovers() {
  local d=$T/crashed
  crash_load crashed || return 1
  expect 0 "$TOOL" verify "$d" || return 1
  has out '^verify: 0 problems$' || return 1
  expect 0 "$TOOL" check "$d" --keys 100000000 || return 1
  has out '^present=[1-9][0-9]+$' || return 1
  expect 0 "$TOOL" stat "$d" || return 1
  python3 - "$T/out" <<'EOF' || return 1
import json, sys
r = json.load(open(sys.argv[1]))["recovery"]
assert r["redo_lsn"] == 0x20, r
assert r["records"] > 600 and r["actions_applied"] > 0 and r["images_restored"] > 0, r
assert r["recovered_seq"] > 300 and r["end_lsn"] > 2 * 65536, r
EOF
}

t_wal_record_flip() {
  local d=$T/walflip lsn
  crash_load walflip || return 1
  lsn=$(record_at_or_after "$d" 40000)
  [ -n "$lsn" ] || { echo "no record found after offset 40000 of the first segment"; return 1; }
  flip "$d/wal/$FIRST_SEG" $((lsn + 40)) 1     # a payload byte of that record
  expect 1 "$TOOL" waldump "$d" || return 1
  has out "^corruption: layer=wal_record file=wal/$FIRST_SEG .*offset=$lsn " || return 1
  if grep -q "^lsn=$(printf '0x%x' "$lsn") " "$T/out"; then echo "the damaged record was printed"; return 1; fi
  if grep -q '^end of log' "$T/out"; then echo "a damaged synced record taken for the end of the log"; return 1; fi
  expect 1 "$TOOL" verify "$d" || return 1
  has out "^corruption: layer=wal_record file=wal/$FIRST_SEG .*offset=$lsn " || return 1
  has out '^verify: [1-9][0-9]* problems$' || return 1
  expect 1 "$TOOL" checkpoint "$d" || return 1
  has err '^corruption: layer=wal_record' || return 1
}

# listing DIR: every file under DIR with its size and sha256, sorted (LOCK
# included: a refused open must not even create it).
listing() {
  (cd "$1" && find . -type f -printf '%P %s\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

# refused DIR LAYER FILE WORDS: load, check and verify all refuse DIR with a
# report of LAYER on FILE saying WORDS; nothing under DIR changes.
refused() {
  local d=$1 layer=$2 file=$3 words=$4
  listing "$d" >"$T/before"
  expect 1 "$TOOL" load "$d" --keys 1 || return 1
  has err "^corruption: layer=$layer file=$file .*$words" || return 1
  if grep -q '^loaded' "$T/out"; then echo "load says it loaded"; return 1; fi
  expect 1 "$TOOL" check "$d" --keys 1 || return 1
  expect 1 "$TOOL" verify "$d" || return 1
  has out "^corruption: layer=$layer file=$file .*$words" || return 1
  has out '^verify: [1-9][0-9]* problems$' || return 1
  listing "$d" >"$T/after"
  if ! cmp -s "$T/before" "$T/after"; then
    echo "the directory changed:"; diff "$T/before" "$T/after"; return 1
  fi
}

t_lost_control_refused() {
  local d=$T/lostctl
  fresh lostctl --page-size 4096 || return 1
  rm "$d/control"
  refused "$d" control control 'control file is missing; present: data \(' || return 1
  rm "$d/LOCK"    # a copy without the lock file: not even LOCK is made
  refused "$d" control control 'control file is missing' || return 1
  [ ! -e "$d/LOCK" ] || { echo "a refused open created LOCK"; return 1; }
}

t_lost_data_refused() {
  local d=$T/lostdata
  fresh lostdata --page-size 4096 || return 1
  rm "$d/data"
  refused "$d" control data 'data file is missing' || return 1
}

t_lost_segment_refused() {
  local d=$T/lostseg
  CRASH_UNTIL=0000000000030000 crash_load lostseg || return 1
  rm "$d/wal/0000000000010000"
  refused "$d" wal_record wal/0000000000010000 'WAL segment wal/0000000000010000 is missing' || return 1
}

t_stat_wal_json() {
  local d=$T/statwal
  expect 0 "$TOOL" load "$d" --keys 2000 --wal-segment-size "$SEG" --wal-compression zstd || return 1
  expect 0 "$TOOL" stat "$d" || return 1
  python3 -m json.tool "$T/out" >/dev/null || { echo "stat output is not JSON:"; cat "$T/out"; return 1; }
  python3 - "$T/out" <<'EOF' || return 1
import json, sys
s = json.load(open(sys.argv[1]))
o = s["options"]
assert o["sync_mode"] in ("commit", "group", "off"), o
assert o["full_page_writes"] is True, o
assert o["wal_compression"] in ("none", "zstd"), o
assert o["wal_segment_size"] == 65536, o
w = s["wal"]
for k in ("bytes", "written_bytes", "records", "syncs", "insert_lsn", "durable_lsn",
          "last_seq", "durable_seq", "checkpoints"):
    assert isinstance(w[k], int) and not isinstance(w[k], bool), (k, w)
assert w["last_seq"] == 2000 and w["durable_seq"] == 2000, w
for k in ("count", "bytes", "raw_bytes"):
    assert isinstance(s["images"][k], int), s["images"]
for k in ("bytes", "segments"):
    assert isinstance(s["archive"][k], int), s["archive"]
r = s["recovery"]
for k in ("redo_lsn", "end_lsn", "recovered_lsn", "recovered_seq", "records", "actions_applied",
          "actions_skipped", "images_restored", "batch_ops_completed"):
    assert isinstance(r[k], int), (k, r)
assert r["trimmed"] in (True, False), r
assert r["recovered_seq"] == 2000 and r["records"] >= 1 and r["end_lsn"] > r["redo_lsn"], r
assert s["counters"]["corruption"]["wal_record"] == 0, s["counters"]
EOF
}

t_usage_log_options() {
  local x=$T/never_wal bad
  for bad in "--keys 10 --sync always" "--keys 10 --sync" "--keys 10 --full-page-writes yes" \
             "--keys 10 --wal-compression lz4" "--keys 10 --wal-segment-size 1000" \
             "--keys 10 --wal-segment-size 100000" "--keys 10 --wal-segment-size 32768" \
             "--keys 10 --wal-segment-size 8589934592" "--keys 10 --wal-segment-size 64k" \
             "--keys 10 --checkpoint-wal-bytes -1" "--keys 10 --archive-dir ''" \
             "--keys 10 --archive-dir $T/never_arch --sync fast" "--keys 10 --from 0x20" \
             "--keys 10 --limit 5"; do
    eval "set -- $bad"
    expect 2 "$TOOL" load "$x" "$@" || { echo "(args: $bad)"; return 1; }
    [ ! -e "$x" ] && [ ! -e "$T/never_arch" ] || { echo "load $bad created something"; return 1; }
    [ ! -s "$T/out" ] || { echo "usage error wrote to stdout (args: $bad)"; return 1; }
  done
  for bad in "--keys 10 --full-page-writes on" "--keys 10 --wal-segment-size 65536" \
             "--keys 10 --sync sometimes" "--keys 10 --archive-dir $T/never_arch"; do
    eval "set -- $bad"
    expect 2 "$TOOL" check "$x" "$@" || { echo "(check args: $bad)"; return 1; }
  done
  for bad in "--from xyz" "--from 0x21" "--from 0x1008" "--from -1" "--from 0x" \
             "--from 0x10000000000000000" "--limit 0" "--limit x" "--keys 5" "--sync off" "a b"; do
    eval "set -- $bad"
    expect 2 "$TOOL" waldump "$x" "$@" || { echo "(waldump args: $bad)"; return 1; }
  done
  for bad in "--sync off" "--keys 5" "--from 0x20" "--archive-dir ''" "a b"; do
    eval "set -- $bad"
    expect 2 "$TOOL" checkpoint "$x" "$@" || { echo "(checkpoint args: $bad)"; return 1; }
  done
  expect 2 "$TOOL" waldump || return 1
  expect 2 "$TOOL" checkpoint || return 1
  expect 2 "$TOOL" waldump "$x" || return 1
  has err "$x" || return 1
  [ ! -e "$x" ] && [ ! -e "$T/never_arch" ] || { echo "a usage error created something"; return 1; }
  expect 0 "$TOOL" --help || return 1
  has out 'engine-tool waldump DIR' || return 1
  has out 'engine-tool checkpoint DIR' || return 1
  has out '--sync commit\|group\|off' || return 1
}

# --json of verify, check, waldump and dump-page parses and says what the
# lines say; verify's summary counts a flipped page as a bad checksum.
t_json_outputs() {
  local d=$T/json b
  fresh json --page-size 4096 || return 1
  expect 0 "$TOOL" verify "$d" --json || return 1
  python3 - "$T/out" <<'EOF2' || return 1
import json, sys
v = json.load(open(sys.argv[1]))
assert v["problems"] == 0 and v["complete"] and v["bad_checksums"] == 0, v
assert v["blocks_scanned"] > 10 and v["wal_records_checked"] >= 1 and v["reports"] == [], v
EOF2
  expect 0 "$TOOL" verify "$d" || return 1
  has out '^  Blocks scanned: +[1-9]' || return 1
  has out '^  WAL records checked: +[1-9]' || return 1
  expect 0 "$TOOL" check "$d" --keys 3000 --json || return 1
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["result"] == "ok" and c["present"] == 3000, c' \
    "$T/out" || return 1
  expect 0 "$TOOL" waldump "$d" --from oldest --json || return 1
  python3 -c 'import json,sys; w=json.load(open(sys.argv[1])); r=w["records"]; assert r and all(x["lsn"].startswith("0x") for x in r) and w["end_lsn"].startswith("0x") and w["record_count"] == len(r), w' \
    "$T/out" || return 1
  b=$(leaf_blocks "$d" | head -1)
  expect 0 "$TOOL" dump-page "$d" "$b" || return 1
  has out '^lsn: 0x[0-9a-f]+$' || return 1
  expect 0 "$TOOL" dump-page "$d" "$b" --json || return 1
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["type"] == "leaf" and p["lsn"].startswith("0x") and p["verify"]["ok"] and p["cells"], p' \
    "$T/out" || return 1
  flip "$d/data" $((b * 4096 + 2000)) 0x10
  expect 1 "$TOOL" verify "$d" --json || return 1
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); assert v["bad_checksums"] >= 1 and v["unchecked"] >= 1 and v["reports"][0]["layer"] == "page_checksum", v' \
    "$T/out" || return 1
  expect 1 "$TOOL" check "$d" --keys 3000 --json || return 1
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["result"] == "failed" and c["corrupt_reads"] >= 1 and c["problems"], c' \
    "$T/out" || return 1
}

# stat promises 0 or 2: a damaged control file is an invalid database.
t_stat_damaged_control() {
  local d=$T/statctl
  fresh statctl || return 1
  flip "$d/control" 20 0x01
  expect 2 "$TOOL" stat "$d" || return 1
  has err 'corruption' || return 1
}

# Without a control file the segment size comes from the segment files:
# told by two segments, said to be unknown from one.
t_waldump_segment_size() {
  local d=$T/segs
  fresh segs --wal-segment-size 65536 --page-size 4096 || return 1
  rm "$d/control"
  expect 0 "$TOOL" waldump "$d" --limit 3 || return 1
  has err 'WAL segment size 65536 read from the segment files' || return 1
  d=$T/oneseg
  fresh oneseg --keys 100 || return 1
  flip "$d/control" 20 0x01
  expect 0 "$TOOL" waldump "$d" --limit 3 || return 1
  has err 'cannot be told from one segment file' || return 1
  expect 0 "$TOOL" waldump "$d" --limit 3 --wal-segment-size 16777216 --json || return 1
  python3 -c 'import json,sys; w=json.load(open(sys.argv[1])); assert w["segment_size"] == 16777216, w' "$T/out" || return 1
}

t_version() {
  expect 0 "$TOOL" --version || return 1
  has out '^engine-tool git ' || return 1
  has out '^build: ' || return 1
}

for ps in 4096 16384; do
  for be in psync uring; do
    run_test "load_check_roundtrip_${ps}_${be}" t_roundtrip "$ps" "$be"
  done
done
run_test load_reopen_extend_and_get t_load_again_and_get
run_test load_check_no_data_checksums t_no_checksums_roundtrip
run_test verify_clean_exits_0 t_verify_clean
run_test bitflip_in_leaf_caught_and_get_never_wrong t_bitflip_leaf
run_test verify_blames_only_the_damaged_leaf_and_names_it t_verify_blames_only_the_damaged_leaf
run_test check_after_corruption_exits_1 t_check_after_corruption
run_test block_copied_over_another_caught_at_destination t_block_copied
run_test zeroed_block_below_hwm_caught t_block_zeroed
run_test usage_errors_exit_2_and_create_nothing t_usage_errors
run_test options_before_or_after_dir t_options_anywhere
run_test dump_page_shows_leaf_keys t_dump_page
run_test stat_prints_json t_stat_json
run_test overflow_values_roundtrip t_large_values
run_test load_check_each_sync_mode t_sync_modes
run_test load_log_options_and_archive t_log_options
run_test checkpoint_exits_0_and_moves_redo t_checkpoint
run_test waldump_prints_batch_pages_checkpoint_and_end t_waldump
run_test killed_load_recovers_verifies_and_checks t_crash_recovers
run_test wal_record_flip_in_synced_log_caught t_wal_record_flip
run_test stat_json_has_wal_images_archive_recovery t_stat_wal_json
run_test log_option_usage_errors_exit_2_and_create_nothing t_usage_log_options
run_test lost_control_refused_by_load_and_verify_dir_unchanged t_lost_control_refused
run_test lost_data_refused_by_load_and_verify_dir_unchanged t_lost_data_refused
run_test lost_wal_segment_refused_by_load_and_verify_dir_unchanged t_lost_segment_refused
run_test json_of_verify_check_waldump_dump_page t_json_outputs
run_test stat_of_a_damaged_control_file_exits_2 t_stat_damaged_control
run_test waldump_reads_or_says_it_cannot_tell_the_segment_size t_waldump_segment_size
run_test version_names_git_and_build t_version

[ "$failed" -eq 0 ]
