"""What every module of the crashtest package shares: the exit codes, the
repository root, the usage error, and small file and text helpers.

Nothing here imports another module of the package."""

import fcntl
import hashlib
import json
import os
import subprocess

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
# A run stopped by SIGINT or SIGTERM before it found a failure: neither a
# pass nor a fail (128 + SIGINT, what a shell reports for a command ^C
# ended).  Its artifacts say "INTERRUPTED".
EXIT_INTERRUPTED = 130
INTERRUPTED = "INTERRUPTED"
# The repository: the folder that holds crashtest.py and this package.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
META_VERSION = 1


class UsageError(Exception):
    """A bad command line or setup: message printed, exit 2."""


def run_make(argv, **kw):
    """subprocess.run(ARGV, **KW) for a make in the repository, one at a
    time: two makes of the same target at once (two suites of a parallel
    make test, two mutants runs sharing a build folder) would write the
    same objects together.  The lock is build/.make.lock; the second make
    finds the target made."""
    os.makedirs(os.path.join(REPO, "build"), exist_ok=True)
    with open(os.path.join(REPO, "build", ".make.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(argv, **kw)


def sha256_of(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def last_line(text):
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else "(no output)"


def tail_text(text, n):
    lines = (text or "").splitlines()
    return "\n".join(lines[-n:])


def nice_path(p):
    """P relative to the current directory when it lies below it, else
    absolute; './x' for a bare name, so it can be pasted into a shell."""
    p = os.path.abspath(p)
    rel = os.path.relpath(p)
    if rel.startswith(".."):
        return p
    return rel if "/" in rel else "./" + rel


def hms(s):
    s = int(s)
    return "%02d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, default=str)
    os.replace(tmp, path)
