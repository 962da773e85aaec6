"""Bugs of the other engines' released versions that the framework found
or met, fixed upstream in a later release: the draw leaves out the option
value that reaches one while the engine's library (stress --version) is
older than the fix, so a nightly run on Debian's package judges what the
engine promises instead of failing on the same known bug every night.
A --set of the value reaches it again (a finding's reproduction).

Each row: the engine, the first version with the fix, the option value
that reaches the bug, what the bug does, and the page in docs/findings/
with the evidence.  A value of fault_files is a file kind the I/O
classes are kept away from (params.leave_known_bug_kinds)."""

KNOWN_BUGS = (
    {
        "engine": "rocksdb",
        "fixed_in": "7.10.2",
        "option": "wal_compression",
        "value": "zstd",
        "what": "refuses to open a valid compressed WAL after a crash "
        "('Corruption: bad WriteBatch Put')",
        "finding": "docs/findings/rocksdb-compressed-wal-refused-after-a-crash.md",
    },
    {
        "engine": "rocksdb",
        "fixed_in": "9.1.0",
        "option": "fault_files",
        "value": "wal",
        "what": "aborts on an assertion when a checkpoint's flush meets a log whose write or sync "
        "just failed (WritableFileWriter used after its error); the I/O classes strike "
        "its other files",
        "finding": "docs/findings/rocksdb-writes-a-log-after-its-failed-write.md",
    },
)


def version_tuple(text):
    """(7, 8, 3) from '7.8.3'; None when TEXT is no dotted version."""
    try:
        return tuple(int(x) for x in text.split("."))
    except (AttributeError, ValueError):
        return None


def bugs_of(engine, version):
    """The rows of KNOWN_BUGS that ENGINE at VERSION ('7.8.3') carries.  An
    unknown version carries every row of its engine: a build whose version
    cannot be read is treated as the oldest."""
    v = version_tuple(version)
    return [
        b
        for b in KNOWN_BUGS
        if b["engine"] == engine and (v is None or v < version_tuple(b["fixed_in"]))
    ]
