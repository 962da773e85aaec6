"""States and recorded steps (C2): the Executor runs one recorded step
(stress, powerloss, a power-loss variant, the lost-file copy) on state
directories and judges it; the runs and repro share it, so a replay runs
exactly what the run ran.  Steps are argument templates: placeholders
(@STATE@, @ITER@, @STRESS@, @POWERLOSS@) are substituted only here."""

import json
import os
import re
import shlex
import shutil
import signal
import time

from .common import file_size, last_line, sha256_of, tail_text
from .judge import judge_stress
from .procs import run_process, wait_lock_released


def dir_listing(d):
    """(name, size, sha256) of every file under D: 'changed nothing'."""
    out = []
    for dp, dns, fns in os.walk(d):
        dns.sort()
        for fn in sorted(fns):
            p = os.path.join(dp, fn)
            try:
                out.append((os.path.relpath(p, d), os.path.getsize(p), sha256_of(p)))
            except OSError:
                out.append((os.path.relpath(p, d), -1, ""))
    return out


def copy_state(src, dst, journal=True):
    """Copy a state directory (db, exp, run); JOURNAL=False leaves the
    crash journal out (it is only the power-loss step's input)."""
    ignore = None if journal else shutil.ignore_patterns("journal", "journal.d")
    shutil.copytree(src, dst, symlinks=True, ignore=ignore)


def trim_journal(state):
    """The journal only serves a power-loss step after a crash; once a
    process closed the database cleanly everything in it was synced, so it
    goes (it grows by every write's old contents)."""
    run = os.path.join(state, "run")
    try:
        with open(os.path.join(run, "stress_state")) as f:
            clean = re.search(r"clean (\d+)", f.read())
    except OSError:
        clean = None
    if clean and clean.group(1) == "1":
        for name in ("journal", "journal.d"):
            p = os.path.join(run, name)
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            elif os.path.exists(p):
                os.unlink(p)


def subst(value, env):
    if isinstance(value, list):
        return [subst(v, env) for v in value]
    if not isinstance(value, str):
        return value
    for k, v in env.items():
        value = value.replace(k, v)
    return value


def ledger_lines_since(ledger, offset=0):
    """The ledger's lines (parsed) from byte OFFSET on: what a step
    injected, its kill points too."""
    out = []
    try:
        with open(ledger, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return out
    for line in data.decode(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def ledger_by_op(ledger):
    """The ledger's lines (parsed) grouped by the op that added them:
    {"EPOCH:CALL": [lines]} (an op trace's note names its op so)."""
    out = {}
    for j in ledger_lines_since(ledger):
        op = j.get("op")
        if isinstance(op, int) and op >= 0:
            out.setdefault("%d:%d" % (op >> 32, op & 0xFFFFFFFF), []).append(j)
    return out


# Ledger points that are what a fault left behind, not a fault of their own
# (faults/inject.c): one line per write a failed fsync rolled back, and the
# range a failed write may have torn.  A sync error that dropped three pages
# struck once, not four times.
CONSEQUENCES = ("sync/drop_dirty", "write/partial")
# Ledger classes that are no fault: a pause that widened a race window
# (faults/delay.c) changes nothing and strikes nothing; a file that carries
# flips renamed (faults/doorio.c) moves what struck already.
NOT_FAULTS = ("kill", "delay", "moved")


def injected_by_class(lines):
    """{class: strikes} of ledger LINES in the run phase (no kills, no
    CONSEQUENCES): what struck a workload, killed or not (a killed one
    writes no report); the shrink scales the rare ones to a short run (K8),
    so that a class strikes about as often as it did (counting the pages a
    failed fsync dropped, a short run of control-redo-is-checkpoint's had
    its sync errors a fourth as often as its recorded run)."""
    out = {}
    for j in lines:
        c = j.get("class")
        if (
            c
            and c not in NOT_FAULTS
            and (j.get("phase") or "run") == "run"
            and j.get("point") not in CONSEQUENCES
        ):
            out[c] = out.get(c, 0) + 1
    return out


def prepare_variant(k, from_db, from_state, to, ledger_offset):
    """Variant K of a power-loss step: its database copy moves to TO/db;
    the expected state is copied; the run directory is copied without the
    journal, its ledger keeping the lines from before the step and the
    step's lines for this variant only (powerloss notes "variant=K ...").
    The same as running powerloss in place on a copy."""
    os.makedirs(to)
    shutil.move(from_db, os.path.join(to, "db"))
    shutil.copytree(os.path.join(from_state, "exp"), os.path.join(to, "exp"))
    copy_state_run = os.path.join(to, "run")
    shutil.copytree(
        os.path.join(from_state, "run"),
        copy_state_run,
        ignore=shutil.ignore_patterns("journal", "journal.d", "ledger"),
    )
    src = os.path.join(from_state, "run", "ledger")
    try:
        with open(src, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    head, tail = data[:ledger_offset], data[ledger_offset:]
    keep = []
    tag = "variant=%d " % k
    for line in tail.splitlines(keepends=True):
        try:
            note = json.loads(line.decode(errors="replace")).get("note", "") or ""
        except ValueError:
            continue
        if note.startswith(tag) or note == tag.strip():
            keep.append(line)
    with open(os.path.join(copy_state_run, "ledger"), "wb") as f:
        f.write(head + b"".join(keep))


def stress_limits(step, argv, deadline):
    """(time limit, deadline) of a stress STEP run as ARGV, the executor's
    DEADLINE given.  A step's time limit is its duration's (the run's plan:
    the duration, the watchdog and a minute): past it a timed step is a
    hang.  A step whose op count is fixed instead (a pinned or shrunk run)
    is only slow: the limit is then a deadline, and the step an error
    (planted bug page-before-wal: pinned to the ops a two-second timed run
    did, a run that fsyncs every commit needed minutes, and its limit of
    122 s made a "hang" of it)."""
    limit = step.get("time_limit")
    if limit is not None and not any(a.startswith("--duration=") for a in argv):
        deadline = min(x for x in (deadline, time.monotonic() + limit) if x is not None)
        limit = None
    return limit, deadline


def read_report(path):
    """The report.json at PATH, or None when it is missing or unreadable."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def judge_stress_step(expect, res, report, kills, lock_ok, db, before_listing):
    """(outcome, failure) of a finished stress process RES: the judge's
    verdict on it, then what the process cannot say itself.  BEFORE_LISTING
    is the listing of the database folder DB before a step that expects a
    refusal (None for the others): a refused directory must be left as it
    was.  LOCK_OK: the database lock was released after a kill or a hang."""
    outcome, failure = judge_stress(
        expect, res.rc, res.killed_by_us, res.hung, res.output, report, kills, res.cores
    )
    if failure is None and before_listing is not None and dir_listing(db) != before_listing:
        outcome, failure = "failed", {
            "kind": "lost",
            "keys": ["lost"],
            "message": "the engine refused the directory with lost files but changed it",
        }
    if res.out_of_time:
        outcome, failure = "failed", {
            "kind": "error",
            "keys": ["error"],
            "message": res.out_of_time,
            "out_of_time": True,
        }
    if failure is None and not lock_ok:
        outcome, failure = "failed", {
            "kind": "error",
            "keys": ["error"],
            "message": "the database lock was not released 60 s after the process died",
        }
    return outcome, failure


def kill_signal_of(argv):
    """The signal a planned kill of stress ARGV sends before its SIGKILL:
    SIGUSR2 when it makes the damage at the crash (--damage_at_kill), else
    None."""
    return signal.SIGUSR2 if "--damage_at_kill=1" in argv else None


def kill_words(argv):
    """A planned kill of stress ARGV in words, for the step's log line."""
    return "SIGUSR2 (damage at the kill), then SIGKILL," if kill_signal_of(argv) else "SIGKILL"


class Executor:
    """Runs recorded steps (C2) and judges them; shared by the runs and by
    repro, so a replay runs exactly what the run ran."""

    def __init__(self, env, hang_seconds, log=None, echo=False, deadline=None):
        self.env = env  # placeholder -> path
        self.hang_seconds = hang_seconds
        # time.monotonic() at which a stress step is stopped (an error, not a hang)
        self.deadline = deadline
        self.log = log or (lambda s: None)
        self.echo = echo
        self.results = {}

    def run(self, n, step):
        t = step["type"]
        if self.echo:
            self.print_step(step)
        if t == "stress":
            return self.run_stress(n, step)
        if t == "powerloss":
            return self.run_powerloss(n, step)
        if t == "variant":
            return self.run_variant(n, step)
        if t == "lose":
            return self.run_lose(n, step)
        raise ValueError("unknown step type %r" % t)

    def print_step(self, step):
        if step["type"] == "lose":
            self.log(
                "(crashtest) lost files: copy %s -> %s, then remove %s"
                % (
                    subst(step["from"], self.env),
                    subst(step["to"], self.env),
                    " ".join(step["remove"]),
                )
            )
            return
        if step["type"] == "variant":
            self.log(
                "(crashtest) variant %d: %s -> %s (expected state copied, ledger: this variant's "
                "lines)"
                % (step["k"], subst(step["from_db"], self.env), subst(step["to"], self.env))
            )
            return
        cmd = shlex.join(subst(step["argv"], self.env))
        extra = ""
        if step.get("kill_after") is not None:
            extra = "   # %s after %.3f s" % (kill_words(step["argv"]), step["kill_after"])
        self.log("$ " + cmd + extra)

    def run_stress(self, n, step):
        env = self.env
        argv = subst(step["argv"], env)
        d = subst(step["dir"], env)
        state = subst(step["state"], env)
        os.makedirs(d, exist_ok=True)
        # stress makes the folders of a state (db, exp, run), never their
        # parent: a mistyped path of a person's is refused there.
        os.makedirs(state, exist_ok=True)
        ledger = os.path.join(state, "run", "ledger")
        before = file_size(ledger) or 0
        progress = [
            os.path.join(state, "exp", "expected"),
            ledger,
            os.path.join(state, "run", "journal"),
        ]
        limit, deadline = stress_limits(step, argv, self.deadline)
        before_listing = (
            dir_listing(os.path.join(state, "db")) if step["expect"] == "refused" else None
        )
        res = run_process(
            argv,
            os.path.join(d, "output.txt"),
            d,
            kill_after=step.get("kill_after"),
            kill_signal=kill_signal_of(argv),
            hang_seconds=self.hang_seconds + min(30, self.hang_seconds),
            progress_paths=progress,
            time_limit=limit,
            deadline=deadline,
        )
        lock_ok = True
        if res.rc == -signal.SIGKILL or res.hung:
            lock_ok = wait_lock_released(os.path.join(state, "db"))
        report = read_report(os.path.join(d, "report.json"))
        lines = ledger_lines_since(ledger, before)
        kills = [j for j in lines if j.get("class") == "kill"]
        outcome, failure = judge_stress_step(
            step["expect"], res, report, kills, lock_ok, os.path.join(state, "db"), before_listing
        )
        r = {
            "rc": res.rc,
            "elapsed": round(res.elapsed, 3),
            "killed_by_us": res.killed_by_us,
            "hung": res.hung,
            "outcome": outcome,
            "failure": failure,
            "report": report,
            "kill_points_fired": [k.get("point") for k in kills],
            "injected": injected_by_class(lines),
            "output_tail": tail_text(res.output, 40),
        }
        self.results[n] = r
        return r

    def run_powerloss(self, n, step):
        argv = subst(step["argv"], self.env)
        d = subst(step["dir"], self.env)
        os.makedirs(d, exist_ok=True)
        ledger = subst(step["ledger"], self.env)
        offset = file_size(ledger) or 0
        if "--out-prefix" in argv:
            os.makedirs(os.path.dirname(argv[argv.index("--out-prefix") + 1]), exist_ok=True)
        # A process killed before it opened its journal wrote nothing
        # through the hooks: an empty journal says so (powerloss wants one).
        journal = os.path.join(os.path.dirname(ledger), "journal")
        if not os.path.exists(journal):
            open(journal, "ab").close()
        res = run_process(argv, os.path.join(d, "output.txt"), d, hang_seconds=self.hang_seconds)
        failure = None
        if res.hung:
            failure = {"kind": "hang", "keys": ["hang"], "message": "powerloss: %s" % res.hung}
        elif res.rc != 0:
            failure = {
                "kind": "error",
                "keys": ["error"],
                "message": "powerloss exit %s: %s" % (res.rc, last_line(res.output)),
            }
        r = {
            "rc": res.rc,
            "elapsed": round(res.elapsed, 3),
            "ledger_offset": offset,
            "outcome": "failed" if failure else "passed",
            "failure": failure,
            "output_tail": tail_text(res.output, 20),
        }
        self.results[n] = r
        return r

    def run_lose(self, n, step):
        """A copy of a recovered state with database files removed (the
        lost-file check): the next step wants the engine to refuse it."""
        t0 = time.monotonic()
        to = subst(step["to"], self.env)
        failure = None
        try:
            shutil.rmtree(to, ignore_errors=True)
            copy_state(subst(step["from"], self.env), to, journal=False)
            for rel in step["remove"]:
                os.unlink(os.path.join(to, rel))
        except OSError as e:
            failure = {
                "kind": "error",
                "keys": ["error"],
                "message": "preparing the lost-file copy: %s" % e,
            }
        r = {
            "rc": 0 if failure is None else 1,
            "elapsed": round(time.monotonic() - t0, 3),
            "outcome": "failed" if failure else "passed",
            "failure": failure,
        }
        self.results[n] = r
        return r

    def run_variant(self, n, step):
        pl = self.results.get(step["powerloss_step"]) or {}
        t0 = time.monotonic()
        try:
            prepare_variant(
                step["k"],
                subst(step["from_db"], self.env),
                subst(step["from_state"], self.env),
                subst(step["to"], self.env),
                pl.get("ledger_offset", 0),
            )
            failure = None
        except OSError as e:
            failure = {
                "kind": "error",
                "keys": ["error"],
                "message": "preparing variant %d: %s" % (step["k"], e),
            }
        r = {
            "rc": 0 if failure is None else 1,
            "elapsed": round(time.monotonic() - t0, 3),
            "outcome": "failed" if failure else "passed",
            "failure": failure,
        }
        self.results[n] = r
        return r
