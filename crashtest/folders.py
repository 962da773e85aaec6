"""Folders a run owns: its report folder (one run's, never shared) and its
temporary work folder (removed by the next run or by `crashtest.py clean`
when its owner died without removing it).

Ownership is an flock held for the owner's whole life on a lock file in
the folder (LOCK_NAME), with the owner's pid written in it.  The kernel
drops the lock when the owner dies, however it dies (SIGKILL too), so "a
lock nobody holds" proves the owner is gone: a pid alone could have been
reused by another process.

Nothing here imports another module of the package but common."""

import fcntl
import os
import shutil
import tempfile

from .common import UsageError, nice_path

LOCK_NAME = ".crashtest.lock"
# A work folder's: another name, so that a report folder a dead child
# left in the temporary folder is never taken for a work folder.
WORK_LOCK = ".crashtest-work.lock"
# What an earlier run leaves in its report folder: a run into it would mix
# its results with that run's.
RESULTS = ("summary.json", "iterations.jsonl", "iterations.jsonl.gz", "mutants.json")
WORK_PREFIX = "crashtest-"

_held = {}  # folder -> fd of its lock: held until the process ends or release()


def _lock(path, name=LOCK_NAME):
    """An fd of PATH/LOCK_NAME locked (exclusive, not waiting), or None
    when another process holds it.  The file is made under another name,
    locked, then linked into place, so no one ever sees it unlocked
    while its owner lives."""
    lock = os.path.join(path, name)
    if not os.path.exists(lock):
        tmp = "%s.%d" % (lock, os.getpid())
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.link(tmp, lock)  # fails if another process put its own there first
            return fd
        except FileExistsError:
            os.close(fd)
        finally:
            os.unlink(tmp)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _write_pid(fd):
    os.ftruncate(fd, 0)
    os.pwrite(fd, b"%d\n" % os.getpid(), 0)


def owner_pid(path):
    """The pid written in PATH's lock file, or None."""
    try:
        with open(os.path.join(path, LOCK_NAME)) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def claim_report_dir(path, what="--report-dir"):
    """Make PATH (if need be) this process's report folder: a usage error
    when a live run holds it, or when it holds an earlier run's results.
    Returns whether PATH was made here (release() removes it again on a
    usage error, so that a refused run leaves no folder behind)."""
    made = not os.path.isdir(path)
    try:
        os.makedirs(path, exist_ok=True)
        fd = _lock(path)
    except OSError as e:
        raise UsageError("%s %s: %s" % (what, path, e.strerror or e))
    if fd is None:
        pid = owner_pid(path)
        raise UsageError(
            "%s %s is in use by a live run%s: a report folder belongs to one run; pick another"
            % (what, nice_path(path), " (pid %d)" % pid if pid else "")
        )
    earlier = [n for n in RESULTS if os.path.exists(os.path.join(path, n))]
    if earlier:
        os.close(fd)
        raise UsageError(
            "%s %s holds an earlier run's results (%s): pick another folder or remove it"
            % (what, nice_path(path), ", ".join(earlier))
        )
    _write_pid(fd)
    _held[os.path.abspath(path)] = (fd, LOCK_NAME)
    return made


def release(path, remove=False):
    """Let go of PATH's lock (its file removed); REMOVE: the folder too,
    when nothing else is in it."""
    path = os.path.abspath(path)
    fd, name = _held.pop(path, (None, None))
    if fd is None:
        return
    try:
        os.unlink(os.path.join(path, name))
    except OSError:
        pass
    os.close(fd)
    if remove:
        try:
            os.rmdir(path)
        except OSError:
            pass


def make_work_dir(prefix=WORK_PREFIX, parent=None):
    """A new temporary work folder, locked by this process for its life
    (clean_work_dirs removes it once its owner is dead)."""
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    fd = _lock(path, WORK_LOCK)
    _write_pid(fd)
    _held[os.path.abspath(path)] = (fd, WORK_LOCK)
    return path


def remove_work_dir(path):
    release(path)
    shutil.rmtree(path, ignore_errors=True)


def dead(path, name=LOCK_NAME):
    """PATH holds a lock file NAME that no live process holds."""
    if not os.path.isfile(os.path.join(path, name)) or os.path.abspath(path) in _held:
        return False
    try:
        fd = os.open(os.path.join(path, name), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def clean_work_dirs(parent=None):
    """Remove the work folders under PARENT (default: the temporary
    folder) whose owner is provably dead.  Returns the folders removed."""
    parent = parent or tempfile.gettempdir()
    gone = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return gone
    for n in names:
        d = os.path.join(parent, n)
        if n.startswith(WORK_PREFIX) and os.path.isdir(d) and dead(d, WORK_LOCK):
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone


def clean_report_dirs(root):
    """The report folders under ROOT (ROOT itself included) whose run died:
    their stale lock file removed, their results kept.  Returns them."""
    out = []
    dirs = (
        [root] + [os.path.join(root, n) for n in sorted(os.listdir(root))]
        if os.path.isdir(root)
        else []
    )
    for d in dirs:
        if os.path.isdir(d) and dead(d):
            try:
                os.unlink(os.path.join(d, LOCK_NAME))
                out.append(d)
            except OSError:
                pass
    return out
