"""crashtest -- nightly crash tests of the engine through build/stress.

The package behind ./crashtest.py (README.md here says what lives
where).

What it is for (docs/architecture.md, One crashtest.py iteration): repeat, for
as long as asked, a crash cycle against one database and its expected state:

    start stress with options drawn for this iteration
        |  blackbox: SIGKILL after a random interval
        |  whitebox: a kill point inside the engine fires (or, for a share of
        |            iterations, no kill: the run reopens and ends cleanly)
    wait until the database lock is released
    build/powerloss --variants K: unsynced writes rolled back or torn
    restart stress on each variant: recovery, exact post-crash check, verdict
        (sometimes a second crash strikes during that recovery, and one more
        power-loss step and restart follow)
    the first variant carries on as the database of the next iteration

Modes: blackbox, whitebox, simple (a short mix of both for CI), repro
RUN_DIR (replays a failed iteration from its saved artifacts; given a
report directory, lists its failures), shrink FAILURE_DIR (reduces a
failed iteration to the smallest run that still fails the same way: one
thread, few ops, few fault classes, then delta debugging on stress's op
trace; shrink.py K1-K5; the nightly modes do it after their iterations
with --shrink), mutants (simple against each planted bug of
tests/mutants.txt: the harness's bug-finding power, measured;
docs/mutants.md), protection (checked cache-flip patterns at every
width: escape rates per width and pattern against the codes'
construction; crashtest/protection.py) and report DIR... (one
self-contained HTML page from report directories, with trends across
several, or from the benchmarks' JSON), and clean (the work folders and
stale locks of runs that died).
Python 3 standard library only.  Exit: 0 every iteration passed, 1 one
failed, 2 usage, 130 interrupted before a failure (verdict INTERRUPTED).

Seeds.  --seed S is the run seed; run r (of -j N, --shard K/N) draws from
derive(S, "run", r); iteration i of a run from its iteration seed, whose
low three bits are i % 8 (so the whitebox kill modes rotate from one
iteration to the next while the seed alone still determines them).
Everything an iteration draws (engine options, faults, kill timing,
power-loss mode and variants) comes from its iteration seed through
independent streams, so --iteration-seed X redraws exactly that iteration
(on a fresh database, whose creation options X draws too).

Files.  A work directory (--work-dir, a temporary one by default) holds,
per run, the current state ("state": db/, exp/ expected state, run/
ledger, journal, stress_state) and one directory per iteration (start
snapshot, power-loss variants, each step's output and report).  A clean
iteration's directory is removed; a failed one moves to
REPORT_DIR/failures/ID with the crashed state next to it.  REPORT_DIR also
gets iterations.jsonl (every iteration's full record, one line as each
finishes; gzipped at the end when large), summary.json (small: the
tables, a timeline row per iteration, the failures' full records, the
build), junit.xml (stable names: MODE.CLASS and MODE.iN) and report.html.

Invariants:
  C1  a state directory (db, exp, run) is used by at most one process at
      a time, and only after the previous holder's DB/LOCK is released
  C2  the steps of an iteration are recorded as argument templates before
      they run (@STATE@, @ITER@, @STRESS@, @POWERLOSS@), so repro replays
      the same commands on copies of the saved states
  C3  creation-time options (page size, checksums, WAL segment size, value
      sizes, first transaction id) and max_key never change during a
      database's life
"""

from .cli import main  # noqa: F401 (crashtest.py calls it)
