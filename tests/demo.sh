#!/usr/bin/env bash
# demo.sh -- the README's short demo of engine-tool (make demo):
# load 20000 keys, verify (clean), flip one bit in a leaf page on disk,
# verify again (a "corruption:" line names the block), and check (exit 1).
# Every command is echoed before it runs.  Exits 0 if the demo behaved as
# expected, 1 otherwise.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD ;; esac
TOOL=$BUILD/engine-tool
[ -x "$TOOL" ] || { echo "demo: $TOOL is missing: run make first" >&2; exit 1; }

DB=$(mktemp -d "${TMPDIR:-/tmp}/engine-demo.XXXXXX")
trap 'rm -rf "$DB"' EXIT
bad=0

# run WANT_RC CMD...: echo CMD, run it, note a wrong exit status.
run() {
  local want=$1 rc; shift
  echo "\$ engine-tool ${*}"
  "$TOOL" "$@"
  rc=$?
  echo "[exit $rc]"
  echo
  if [ "$rc" -ne "$want" ]; then
    echo "demo: expected exit $want" >&2
    bad=1
  fi
  return 0
}

run 0 load "$DB" --keys 20000
run 0 verify "$DB"

# Find a leaf page and the page size.
ps=$("$TOOL" stat "$DB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["options"]["page_size"])')
nblocks=$(( $(stat -c %s "$DB/data") / ps ))
leaf=
for ((b = 1; b < nblocks; b++)); do
  if "$TOOL" dump-page "$DB" "$b" 2>/dev/null | grep -q '^type: leaf '; then leaf=$b; break; fi
done
if [ -z "$leaf" ]; then echo "demo: no leaf page found" >&2; exit 1; fi

off=$((leaf * ps + 1000))
echo "\$ python3 -c '...'   # flip bit 0 of byte $off: block $leaf (a leaf) of $DB/data"
python3 -c '
import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1])); f.close()
' "$DB/data" "$off"
echo

out=$("$TOOL" verify "$DB")
rc=$?
echo "\$ engine-tool verify $DB"
echo "$out"
echo "[exit $rc]"
echo
if [ "$rc" -ne 1 ] || ! grep -qE "^corruption:.*block=$leaf( |$)" <<<"$out"; then
  echo "demo: verify did not report block $leaf" >&2
  bad=1
fi

run 1 check "$DB" --keys 20000

if [ "$bad" -eq 0 ]; then
  echo "demo: ok -- the flipped bit in block $leaf was caught"
else
  echo "demo: FAILED" >&2
fi
exit "$bad"
