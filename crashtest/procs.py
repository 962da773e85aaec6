"""Processes: one stress or powerloss process at a time, with the watchdog.

run_process starts a process, kills it when a planned kill is due, and
ends it when it makes no progress (trace count, ledger and journal sizes,
/proc I/O counters), outlives its time limit or writes more than
OUTPUT_CAP bytes of output (a loop), saving its thread stacks.
STOP is the one flag that stops the whole run (SIGINT, SIGTERM): every
wait of the package checks it and raises Stopped."""

import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import threading
import time

from .common import file_size


class Stopped(Exception):
    """The whole run was asked to stop (SIGINT, SIGTERM)."""


STOP = threading.Event()

PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: children outlive a killed parent
    _prctl = None


def die_with_parent():
    """A preexec_fn: the child gets SIGKILL when crashtest dies, however it
    dies (a SIGKILL of crashtest runs no handler that could end it), so a
    hard kill leaves no stress or powerloss running on a removed folder.
    The signal is tied to the forking thread, which waits for its child.
    Resolved before the fork: the child calls nothing that takes a lock."""
    parent = os.getpid()

    def setup():
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent died before the prctl
                os._exit(127)

    return setup


# A process's output beyond this is a loop, not a report: the watchdog ends
# it (a scan that returned one damaged key for ever wrote 8 GB in a minute,
# and its progress was the writing itself).  Only the head and the tail of
# an output this long are read back.
OUTPUT_CAP = 256 << 20
OUTPUT_KEEP = 2 << 20


def read_output(path):
    """PATH's text: whole, or its first and last OUTPUT_KEEP bytes with a
    line between them saying how much was left out."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= 2 * OUTPUT_KEEP:
                return f.read().decode(errors="replace")
            head = f.read(OUTPUT_KEEP)
            f.seek(size - OUTPUT_KEEP)
            tail = f.read(OUTPUT_KEEP)
    except OSError:
        return ""
    return "%s\ncrashtest: ... %d bytes of output left out ...\n%s" % (
        head.decode(errors="replace"),
        size - 2 * OUTPUT_KEEP,
        tail.decode(errors="replace"),
    )


def read_u64_at(path, off):
    try:
        with open(path, "rb") as f:
            f.seek(off)
            b = f.read(8)
        return int.from_bytes(b, "little") if len(b) == 8 else None
    except OSError:
        return None


def proc_io(pid):
    try:
        with open("/proc/%d/io" % pid) as f:
            return f.read()
    except OSError:
        return None


def capture_stacks(pid, path):
    """Thread stacks of a hung process, for its artifacts: gdb when there is
    one, else what /proc says each thread waits on."""
    out = []
    gdb = shutil.which("gdb")
    if gdb:
        try:
            r = subprocess.run(
                [
                    gdb,
                    "-p",
                    str(pid),
                    "-batch",
                    "-nx",
                    "-ex",
                    "set pagination off",
                    "-ex",
                    "thread apply all bt",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=60,
            )
            out.append(r.stdout.decode(errors="replace"))
        except (OSError, subprocess.SubprocessError) as e:
            out.append("gdb: %s\n" % e)
    try:
        for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
            base = "/proc/%d/task/%s/" % (pid, tid)
            parts = []
            for name in ("comm", "wchan", "stack"):
                try:
                    with open(base + name) as f:
                        parts.append("%s=%s" % (name, f.read().strip()))
                except OSError:
                    pass
            out.append("thread %s: %s\n" % (tid, "; ".join(parts)))
    except OSError:
        pass
    try:
        with open(path, "w") as f:
            f.write("".join(out))
    except OSError:
        pass


class ProcResult:
    def __init__(self):
        self.rc = None
        self.elapsed = 0.0
        self.killed_by_us = False
        self.signalled_at = None  # when the planned kill's first signal went (planned_kill)
        self.sigkilled = False  # the planned kill's SIGKILL went
        self.hung = None  # why the watchdog ended it
        self.out_of_time = None  # why it was stopped at the caller's deadline (slow, not hung)
        self.output = ""
        self.cores = []


class Watchdog:
    """What the watchdog saw of process PID since T0: it is hung once it
    writes more than OUTPUT_CAP bytes to OUT_PATH, makes no progress for
    HANG_SECONDS (PROGRESS_PATHS' trace count or sizes, /proc I/O
    counters) or runs longer than TIME_LIMIT seconds."""

    def __init__(self, pid, out_path, t0, hang_seconds, progress_paths, time_limit):
        self.pid, self.out_path, self.t0 = pid, out_path, t0
        self.hang_seconds = hang_seconds
        self.progress_paths = progress_paths
        self.time_limit = time_limit
        self.last_sample, self.last_progress, self.next_check = None, t0, t0

    def why_hung(self, now):
        """Sampled once a second: why the process counts as hung at NOW,
        or None."""
        if now < self.next_check:
            return None
        self.next_check = now + 1.0
        sample = (
            tuple(
                read_u64_at(pp, 40) if pp.endswith("/expected") else file_size(pp)
                for pp in self.progress_paths
            ),
            proc_io(self.pid),
        )
        if sample != self.last_sample:
            self.last_sample, self.last_progress = sample, now
        if (file_size(self.out_path) or 0) > OUTPUT_CAP:
            return "wrote more than %d MB of output (a loop?)" % (OUTPUT_CAP >> 20)
        if now - self.last_progress >= self.hang_seconds:
            return "no progress for %d s" % self.hang_seconds
        if self.time_limit is not None and now - self.t0 >= self.time_limit:
            return "still running after %d s" % self.time_limit
        return None


# A planned kill that sends a signal first (KILL_SIGNAL, stress's
# --damage_at_kill: SIGUSR2) gives the process this long to make its damage
# at the crash and SIGKILL itself before the SIGKILL from here.
KILL_SIGNAL_GRACE = 2.0


def planned_kill(p, res, now, kill_signal):
    """The planned kill of P at NOW: KILL_SIGNAL first when there is one
    (then SIGKILL after KILL_SIGNAL_GRACE), else SIGKILL."""
    if kill_signal and res.signalled_at is None:
        res.signalled_at = now
        p.send_signal(kill_signal)
    elif res.signalled_at is None or now - res.signalled_at >= KILL_SIGNAL_GRACE:
        p.kill()
        res.sigkilled = True
    res.killed_by_us = True


def wait_watched(p, res, t0, kill_after, deadline, watchdog, kill_signal=None):
    """Wait for process P (started at T0) under WATCHDOG: its exit status.
    SIGKILL it at KILL_AFTER seconds (res.killed_by_us; KILL_SIGNAL first
    when given, planned_kill), at DEADLINE
    (res.out_of_time) or when the watchdog finds it hung (res.hung, its
    thread stacks saved next to its output); raise Stopped, P killed, when
    the run is asked to stop."""
    while True:
        try:
            return p.wait(timeout=0.02)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if STOP.is_set():
            p.kill()
            p.wait()
            raise Stopped()
        if kill_after is not None and now - t0 >= kill_after and not res.sigkilled:
            planned_kill(p, res, now, kill_signal)
            continue
        if deadline is not None and now >= deadline:
            p.kill()
            rc = p.wait()
            res.out_of_time = (
                "stopped after %.0f s: its time ran out while the watchdog still saw "
                "progress (slow, not a hang)" % (now - t0)
            )
            return rc
        why = watchdog.why_hung(now)
        if why:
            capture_stacks(
                p.pid, os.path.join(os.path.dirname(watchdog.out_path), "hang-stacks.txt")
            )
            p.kill()
            p.wait()
            res.hung = why
            return p.returncode


def run_process(
    argv,
    out_path,
    cwd,
    kill_after=None,
    hang_seconds=120,
    progress_paths=(),
    time_limit=None,
    env=None,
    deadline=None,
    kill_signal=None,
):
    """Run ARGV with stdout and stderr to OUT_PATH.  KILL_AFTER: SIGKILL it
    after that many seconds (a planned kill).  The watchdog ends it with
    SIGKILL when no progress is seen for HANG_SECONDS (trace count, ledger
    and journal sizes, /proc I/O counters) or after TIME_LIMIT seconds, and
    saves its thread stacks next to OUT_PATH (res.hung says why).
    DEADLINE (a time.monotonic() value): SIGKILL it then, a run the
    watchdog still saw progress in that the caller has no more time for,
    not a hang (res.out_of_time says so).  KILL_SIGNAL: the planned kill
    sends it first (planned_kill).  Raises Stopped when the run is asked
    to stop (the process is killed first)."""
    res = ProcResult()
    t0 = time.monotonic()
    with open(out_path, "wb") as out:
        try:
            p = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )
        except OSError as e:
            out.write(("crashtest: cannot start %s: %s\n" % (argv[0], e)).encode())
            res.rc = 127
            res.output = "crashtest: cannot start %s: %s\n" % (argv[0], e)
            return res
        watchdog = Watchdog(p.pid, out_path, t0, hang_seconds, progress_paths, time_limit)
        try:
            rc = wait_watched(p, res, t0, kill_after, deadline, watchdog, kill_signal)
        except BaseException:
            if p.poll() is None:
                p.kill()
                p.wait()
            raise
    if kill_signal and res.signalled_at is not None and rc == -kill_signal:
        # The planned kill's signal came before the process could take it
        # (its default action ends a process as SIGKILL does, running
        # nothing): an outside kill without the damage.
        rc = -signal.SIGKILL
    res.rc = rc
    res.elapsed = time.monotonic() - t0
    res.output = read_output(out_path)
    try:
        res.cores = sorted(n for n in os.listdir(cwd) if n == "core" or n.startswith("core."))
    except OSError:
        pass
    return res


def wait_lock_released(db, timeout=60.0):
    """C1: after a crash, the engine's flock on DB/LOCK may outlive the
    process for a moment (io_uring workers hold its files).  True once it
    is free (or absent)."""
    path = os.path.join(db, "LOCK")
    t0 = time.monotonic()
    while True:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except OSError:
            pass
        finally:
            os.close(fd)
        if time.monotonic() - t0 > timeout:
            return False
        if STOP.is_set():
            raise Stopped()
        time.sleep(0.05)


def signal_name(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "signal %d" % n
