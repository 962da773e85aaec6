#!/usr/bin/env python3
"""Write docs/promises.md from the stress binary: each engine's promise
table as `stress --engine NAME --promises_table` prints it, under the
page's fixed text.  tests/test_promises.py fails when the page and the
binary disagree.

    python3 tools/promises_doc.py [--stress build/stress]"""

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINES = ("ours", "rocksdb", "sqlite")

HEAD = """# What each engine promises

One table per engine, kept as data in its adapter (`stress/promises.h`,
rules PR1-PR3; the rows live in `stress/adapter_engine.c`,
`stress/adapter_rocksdb.c`, `stress/adapter_sqlite.c`) and printed by
`stress --engine NAME --promises` (JSON: what crashtest reads) or
`--promises_table` (below). This page is written by
`python3 tools/promises_doc.py`; `tests/test_promises.py` fails when it
and the binary disagree.

A row answers a fault class (`docs/fault-classes.md`) in a file of a kind
(`data`, `wal`, `control`, `dir`, the kinds of `--fault_files`; `any`:
every kind) under the options its *when* names; the first row that
matches answers (PR1). Its promise, taken from the page it cites:

| promise | the engine | the oracle (V10, `docs/oracle.md`) |
|---|---|---|
| detect | returns an error, never a wrong value | the usual rules |
| repair | comes back whole without a word | a call may return ok (`repaired`) |
| none | promises nothing | `undetected_unpromised`, never a failure |

Under *detect* a swallowed error, a wrong value or a lost synced commit
fails the run; under *repair* an error class's call may return ok, and
what the engine returns is judged as always; under *none* a swallowed
error, a wrong, lost or resurrected value or a failed prefix check blamed
on the fault is counted in the class's column.

*As corruption*: the engine reports that failure as corruption (SQLite's
EIO on a read is `SQLITE_IOERR_CORRUPTFS`, which reaches the application
as `SQLITE_CORRUPT`): an error all the same, and the report is the
fault's. *Synced commit survives*: for a crash, whether a commit the
engine acknowledged as synced is there after it. An *open lead* is a
page of `docs/findings/` that keeps crashtest's draw away from the row's
configuration while it stands.

How crashtest uses the tables (`crashtest/params.py`): where a synced
commit does not survive, it runs `--sync_mode off` (stress then asks the
adapter what is durable); where a crash is not promised a repair (or
names an open lead), `sync_mode` rises to the weakest setting that is;
where a torn write is refused (`torn_write`: detect), its power losses
do not tear; and the door serves another engine the classes of its
*through the door* list (PR2). Our engine's `none` rows are exactly the
classes the oracle measures (V6): there they count `undetectable`.

"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stress", default=os.path.join(ROOT, "build", "stress"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "promises.md"))
    a = ap.parse_args()
    parts = [HEAD]
    for engine in ENGINES:
        r = subprocess.run(
            [a.stress, "--engine", engine, "--promises_table"],
            stdout=subprocess.PIPE,
            universal_newlines=True,
        )
        if r.returncode:
            sys.exit("promises_doc: %s --engine %s --promises_table failed" % (a.stress, engine))
        parts.append(r.stdout.strip() + "\n\n")
    with open(a.out, "w") as f:
        f.write("".join(parts).rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
