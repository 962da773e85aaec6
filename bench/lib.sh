# bench/lib.sh -- sourced by the bench/run_*.sh drivers, never run.
#
# bench_setup NAME: from the repository's root (cd), with BUILD defaulting
# to build, out=build/bench (made) for the JSON, and work a fresh temp dir
# named for NAME, removed on exit (an EXIT trap).
bench_setup() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  BUILD=${BUILD:-build}
  out=build/bench; mkdir -p "$out"
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench-$1.XXXXXX"); trap 'rm -rf "$work"' EXIT
}
