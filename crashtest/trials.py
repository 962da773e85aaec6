"""The trials of a shrink (crashtest.py shrink; shrink.py has the rules,
K1-K28, and the order of the passes): TrialRunner, the state's runner
(shrinkstate.py), replays one candidate on a copy of the failure's start
snapshot by the Executor that ran it, judges it the same way, keeps it
when it fails the same way often enough (K1, K2, K8, K10) and keeps a
different failure aside; it writes the folders repro reads and counts
the tries of a shrunk run's repro that is not deterministic.  p_hang,
the pass on a hang's watchdog (K18), is here too."""

import math
import os
import re
import shutil
import subprocess
import sys
import time
from fractions import Fraction

from .cand import (
    opt_get,
    opt_set,
    ops_of,
    signature,
    slim,
    trace_ops_of,
    trimmed,
    write_trace,
)
from .common import REPO, nice_path, sha256_of, write_json
from .executor import Executor, subst
from .judge import HARNESS_KINDS, shows_kind
from .params import FAULT_OPTIONS
from .procs import STOP, die_with_parent
from .shrinkstate import shrink_pass

MAX_ASIDE = 5  # different failures kept aside (K1)
# repro of a shrunk run that is not deterministic (K8): at least this
# many tries ...
MT_REPRO_TRIES = 8
# ... and at most this many: enough that MT_REPRO_EXPECT reproduce at its
# observed rate
MT_REPRO_MAX = 24
MT_REPRO_EXPECT = 3
# Options that kill a stress process or fail its fsyncs (K12: a step with
# one is never reused).
KILL_OPTIONS = ("kill_random_test", "kill_points", "sync_fault_injection", "crash_at_end")


def made_key(cand, n, step):
    """The key under which the state after step N of CAND may be reused
    (K12), or None: only a first step that creates the database with one
    thread, a fixed op count, no fault, no kill and no timer -- a run that
    leaves the same database every time."""
    a = step.get("argv") or []
    if (
        n != 0
        or step.get("type") != "stress"
        or step.get("kill_after") is not None
        or opt_get(a, "destroy_db_initially") != "1"
        or opt_get(a, "threads") != "1"
        or not (opt_get(a, "ops_per_thread") or "0").isdigit()
        or opt_get(a, "ops_per_thread") == "0"
        or opt_get(a, "duration")
        or opt_get(a, "trace_ops")
        or opt_get(a, "replay_ops")
        or any(opt_get(a, o) not in (None, "0") for o in list(FAULT_OPTIONS) + list(KILL_OPTIONS))
    ):
        return None
    return (bool(cand.fresh), tuple(a))


# A hang's watchdog, shortened (K18): stress's --hang_seconds tried at
# these, largest first below the run's.  A few seconds with no op done is
# no stall of a healthy engine in a run of a few ops, and a minute of it
# makes every trial of a hang a minute long (planted bug kv-checks-nothing:
# 823 s for 6.9x, its repro 62 s).
HANG_SECONDS = (10, 3)

# K19: a deterministic trial runs on a RAM-backed file system when there is
# one with room: its outcome does not depend on how long an fsync takes,
# and a run that commits with sync_mode=commit spends most of its time in
# them (a 1,000-batch create step: 0.67 s on this machine's disk, 0.11 s in
# /dev/shm).  Trials that are not deterministic stay on the work
# directory's disk, where their races are timed as the recorded run's were.
RAM_DIR = "/dev/shm"
# seconds past the budget a trial's stress step is stopped at (an error, not a
# hang)
DEADLINE_GRACE = 60
RAM_MIN_FREE = 2 << 30  # bytes free below which a trial goes to disk instead


def ram_root(path=RAM_DIR):
    """PATH if it is a tmpfs (or ramfs) mount with RAM_MIN_FREE free, else
    None (K19)."""
    if not path or path == "none" or not os.path.isdir(path):
        return None
    real = os.path.realpath(path)
    best, fstype = "", None
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    mnt = parts[1].replace("\\040", " ")
                    if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(
                        best
                    ):
                        best, fstype = mnt, parts[2]
    except OSError:
        return None
    if fstype not in ("tmpfs", "ramfs"):
        return None
    return path if ram_room(path) else None


def ram_room(path):
    """Whether PATH has RAM_MIN_FREE bytes free (K19: checked before each
    trial, as parallel shrinks fill it)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize >= RAM_MIN_FREE


def trial_paths(t):
    """The placeholders of a step's argv (C2) for the trial folder T: its
    state, its iteration and the folder itself."""
    return {"@STATE@": os.path.join(t, "state"), "@ITER@": os.path.join(t, "iter"), "@FOLDER@": t}


@shrink_pass
def p_hang(state):
    """K18: for a hang, every stress step's --hang_seconds down to
    HANG_SECONDS, the smallest that still hangs kept: each later trial
    that hangs ends that much sooner, and so does the shrunk run's
    repro.  Only for the kind hang; the Executor's own guard stays."""
    if state.kind != "hang":
        return
    for h in HANG_SECONDS:
        now = min(
            int(opt_get(s["argv"], "hang_seconds") or state.hang) for s in state.best.stress_steps()
        )
        if h >= now or state.left() <= 0 or STOP.is_set():
            continue
        c = state.best.copy()
        for s in c.stress_steps():
            s["argv"] = opt_set(s["argv"], "hang_seconds", h)
        state.runner.attempt("hang_seconds %d -> %d (the watchdog sooner)" % (now, h), c, "hang")


class TrialRunner:
    """The trials of one shrink, bound to its state (shrinkstate.ShrinkState,
    whose runner it is): a candidate replayed and judged (run_once,
    attempt), a different failure kept aside, the folders repro reads and
    the repro of a shrunk run.  It holds nothing but the state: what a
    trial changes (best, best_res, log, aside, tried, hung, larger_trace,
    ntrial, made, kept_trials, match) is the state's, declared there."""

    def __init__(self, state):
        self.state = state

    def run_once(self, cand):
        """Replay CAND once on a copy of the start: {'kind', 'step', 'ops',
        'seconds', 'diverged', 'dir', 'results', 'failure'}."""
        self.state.ntrial += 1
        t = os.path.join(self.trial_root(cand), "t%04d" % self.state.ntrial)
        os.makedirs(os.path.join(t, "iter"))
        if cand.fresh:
            os.makedirs(os.path.join(t, "state"))
        else:
            shutil.copytree(self.state.start, os.path.join(t, "state"), symlinks=True)
        if cand.trace is not None:
            write_trace(os.path.join(t, "ops.trace"), cand.trace)
        env = dict(trial_paths(t), **self.state.bin)
        # Stopped a minute past the budget: a slow trial is an error, not
        # a failure of the run (a hang needs the watchdog's no progress).
        ex = Executor(
            env, self.state.hang, deadline=time.monotonic() + self.state.left() + DEADLINE_GRACE
        )
        # ops: the op step's; ops_all: every stress step's (a create step's
        # too), the run's size that original and shrunk are compared by.
        res = {
            "kind": None,
            "step": None,
            "ops": None,
            "ops_all": 0,
            "diverged": None,
            "dir": t,
            "results": {},
            "failure": None,
        }
        t0 = time.monotonic()
        for n, step in enumerate(cand.steps):
            key = made_key(cand, n, step)
            if key in self.state.made:
                r = self.made_again(key, t, ex, n, step)
            else:
                r = ex.run(n, step)
                if key is not None and r["outcome"] == "passed" and not r["failure"]:
                    self.keep_made(key, t, r, step)
            res["results"][n] = r
            if step["type"] == "stress":
                traced = opt_get(step["argv"], "trace_ops")
                k = (
                    len(trace_ops_of(subst(traced, env)))
                    if traced
                    else ops_of(r, subst(step["state"], env))
                )
                if n == cand.w:
                    res["ops"] = k
                res["ops_all"] += k or 0
            if r["failure"]:
                res["failure"] = dict(r["failure"], step=n, step_name=step["name"])
                res["kind"] = r["failure"]["kind"]
                res["step"] = n
                res["output_tail"] = r.get("output_tail")
                break
            # Diverged: a step the later ones were planned on ended another
            # way.  The last step has none after it: it passed, or failed.
            want = cand.want[n] if n < len(cand.want) else None
            if (
                step["type"] == "stress"
                and n < len(cand.steps) - 1
                and want in ("crashed", "passed")
                and r["outcome"] != want
            ):
                res["diverged"] = "step %d (%s) %s instead of %s" % (
                    n,
                    step["name"],
                    r["outcome"],
                    want,
                )
                break
        res["seconds"] = round(time.monotonic() - t0, 3)
        return res

    def trial_root(self, cand):
        """Where a trial of CAND runs (K19): the RAM directory for a
        deterministic one while it has room, else the work directory."""
        if self.state.ram and cand.deterministic() and ram_room(self.state.ram):
            return self.state.ram
        return self.state.work

    def keep_made(self, key, t, r, step):
        """K12: the state a deterministic create step left, kept for the
        trials that run the same step again (most of them: delta
        debugging changes only the op step); next to the trial that made
        it (K19)."""
        d = os.path.join(os.path.dirname(t), "made%d" % len(self.state.made))
        shutil.copytree(os.path.join(t, "state"), os.path.join(d, "state"), symlinks=True)
        src = subst(step["dir"], {"@ITER@": os.path.join(t, "iter")})
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(d, "step"), symlinks=True)
        self.state.made[key] = (d, r)

    def made_again(self, key, t, ex, n, step):
        d, r = self.state.made[key]
        shutil.rmtree(os.path.join(t, "state"), ignore_errors=True)
        shutil.copytree(os.path.join(d, "state"), os.path.join(t, "state"), symlinks=True)
        if os.path.isdir(os.path.join(d, "step")):
            shutil.copytree(os.path.join(d, "step"), subst(step["dir"], ex.env), symlinks=True)
        ex.results[n] = r
        return r

    def keep_larger_trace(self, cand, r):
        """The op trace of R, a try of CAND that failed the same way and K10
        refused as larger, kept in the work directory (the trial's goes)
        when it is the smallest such try of this attempt: its replay is
        the run that failed, deterministic (p_threads)."""
        src = os.path.join(r["dir"], "iter", "ops.trace")
        if (
            not cand.op_traced()
            or not os.path.isfile(src)
            or (self.state.larger_trace and self.state.larger_trace[0] <= (r["ops"] or 0))
        ):
            return
        dst = os.path.join(self.state.work, "larger.trace")
        shutil.copyfile(src, dst)
        self.state.larger_trace = (r["ops"] or 0, dst)

    def new_attempt(self, what, cand, runs):
        """Whether CAND is worth trials: False for no change, a run tried
        and rejected, a change that hung (K25), or no budget left; True
        after recording its signature as tried."""
        if self.state.left() <= 0 or STOP.is_set():
            return False
        sig = signature(cand)
        if runs is None and sig == signature(self.state.best):
            return False  # no change
        if sig in self.state.tried and runs is None:
            return False  # the same run was tried and rejected
        if what in self.state.hung and runs is None:
            return False  # K25: this change hung before, in an earlier round
        self.state.tried.add(sig)
        return True

    def run_trials(self, what, cand, phase, runs, need, better, more, at):
        """CAND's trials until decided (K2, K8) or out of time, each judged:
        (failures, results, why the last one did not count, the op counts
        K10 refused, the result kept)."""
        fails, results, why, larger = 0, [], None, []
        kept_res = None
        while True:
            most = runs + more if fails else runs  # a failure seen: MORE trials may decide it (K8)
            early = at is not None and kept_res is not None and kept_res["step"] < at
            if (
                len(results) >= most
                or self.state.left() <= 0
                or STOP.is_set()
                or (fails >= need and not early)
                or len(results) - fails > most - need
            ):
                break  # decided (K2), or out of time
            r = self.run_once(cand)
            results.append(r)
            if (
                self.same(r)
                and phase != "baseline"
                and self.state.cap
                and self.state.size(cand, r) > self.state.cap
                and not cand.deterministic()
            ):
                why = "fails the same way, but larger than the recorded run (%d ops; it had %d)" % (
                    self.state.size(cand, r),
                    self.state.cap,
                )
                larger.append(r["ops"])
                self.keep_larger_trace(cand, r)
            elif self.same(r) and better is not None and not better(r):
                why = "fails the same way, but no smaller: %s" % (better.__doc__ or "")
            elif self.same(r):
                fails += 1
                if kept_res is None or (at is not None and kept_res["step"] < at <= r["step"]):
                    kept_res = r
            elif r["kind"] and r["kind"] not in HARNESS_KINDS:
                why = "failed differently: %s at step %d" % (r["kind"], r["step"])
                self.keep_aside(cand, r)
                if r["kind"] == "hang":
                    # K25: a hang costs the watchdog's time (stress's
                    # --hang_seconds, 60 s in a nightly run, and the
                    # Executor's guard after it): no more trials of this
                    # change, and it is not tried again in a later round.
                    self.state.hung = set(self.state.hung) | {what}
                    break
            elif r["kind"] in HARNESS_KINDS:
                why = "error: %s" % (r["failure"] or {}).get("message", "")[:200]
                if (r["failure"] or {}).get("out_of_time"):
                    # K25 too: a trial too slow for its step's time (a
                    # pinned run that fsyncs every commit) costs that time.
                    self.state.hung = set(self.state.hung) | {what}
                    break
            elif r["diverged"]:
                why = "diverged: " + r["diverged"]
            else:
                why = why or "passed"
        return fails, results, why, larger, kept_res

    def attempt_entry(self, what, cand, phase, kept, why, fails, results, larger, extra, at):
        """shrink.json's record of one attempt (its trials, verdict, why): the dict."""
        entry = {
            "n": len(self.state.log),
            "phase": phase,
            "what": what,
            "trials": len(results),
            "failures": fails,
            "rate": round(fails / len(results), 3) if results else None,
            "verdict": "kept" if kept else "rejected",
            "why": "fails the same way (%s)" % self.state.kind
            if kept
            else (why or "out of budget"),
            "seconds": [r["seconds"] for r in results],
            "ops": [r["ops"] for r in results],
            "ops_all": [r["ops_all"] for r in results],
            "deterministic": cand.deterministic(),
        }
        if extra:
            entry.update(extra)
        if at is not None:
            entry["failed_at"] = [
                r["step"] if self.same(r) else None for r in results
            ]  # each try's step
        if larger:
            entry[
                "larger_ops"
            ] = larger  # the op steps of the trials K10 refused (p_threads replays one)
        if any(r["kind"] and r["kind"] != self.state.kind for r in results):
            entry["other_kinds"] = sorted(
                set(r["kind"] for r in results if r["kind"] and r["kind"] != self.state.kind)
            )
            # The failure's own kind may still be among such a trial's keys
            # (a judge names the first of FAILURE_KEYS): said, never taken (K1).
            among = sum(
                1
                for r in results
                if r["kind"]
                and r["kind"] != self.state.kind
                and self.state.kind in ((r["failure"] or {}).get("keys") or [])
            )
            if among:
                entry["kind_among_other_keys"] = among
        return entry

    def attempt(
        self, what, cand, phase, runs=None, need=None, extra=None, better=None, more=None, at=None
    ):
        """Run CAND (once if deterministic, else TRIALS times; K2) and keep
        it when it fails the same way (K1) and, given BETTER (a function of
        a trial's result), when BETTER holds for it too.  A trial of a
        candidate that is not deterministic with more ops than the recorded
        run (K10) does not count as failing the same way.
        MORE (default: self.state.more): trials added once one of RUNS failed but
        fewer than NEED did (K8).  AT (the baseline's: the recorded failing
        step): a trial that fails the same way at an earlier step counts,
        but the trials go on, up to RUNS, for one that fails at AT, which
        is kept instead (K1 would cut the steps after an earlier one: the
        shrink would start from a form of the failure the recorded run did
        not show).  Returns True if kept."""
        self.state.larger_trace = None
        if not self.new_attempt(what, cand, runs):
            return False
        if runs is None:
            runs = 1 if cand.deterministic() else self.state.runs
        if need is None:
            need = 1 if runs == 1 else self.state.need
        if more is None:
            more = self.state.more if runs > 1 else 0
        fails, results, why, larger, kept_res = self.run_trials(
            what, cand, phase, runs, need, better, more, at
        )
        kept = fails >= need
        # The failure may now show at an earlier step: the later ones go,
        # and when the op step went with them the workload step it now
        # shows in is the op step (a create step that finds the bug with 7
        # keys: planted bug delete-at-snapshot-invisible; the op step's
        # trace went with it).
        left = trimmed(cand, kept_res["step"]) if kept else None
        if kept and left is None:
            kept, why = False, "the failure shows before any workload step"
        entry = self.attempt_entry(what, cand, phase, kept, why, fails, results, larger, extra, at)
        self.state.log.append(entry)
        self.state.p.line(
            "shrink: %-8s %-60s %s (%d/%d)%s"
            % (
                phase,
                what[:60],
                entry["verdict"],
                fails,
                len(results),
                "" if kept else ": " + entry["why"][:80],
            )
        )
        if kept:
            if self.state.best_res and self.state.best_res is not kept_res:
                shutil.rmtree(self.state.best_res["dir"], ignore_errors=True)
            cand = left
            self.state.best, self.state.best_res = cand, kept_res
            if not cand.deterministic():
                self.state.kept_trials.append((entry["n"], cand.copy(), kept_res))
        for r in results:
            if r is not kept_res:
                shutil.rmtree(r["dir"], ignore_errors=True)
        return kept

    def same(self, r):
        """Trial R fails the same way (K1): with the failure's kind; with
        --match keys, with the kind among its failure keys too (a judge
        names the first of FAILURE_KEYS: a bug that shows as false_alarm
        and wrong_value at once is a wrong_value)."""
        return shows_kind(
            dict(r["failure"] or {}, kind=r["kind"]), self.state.kind, self.state.match
        )

    def by_keys(self, orig, runs):
        """K24: after a baseline of ORIG in RUNS tries of which none failed
        with the kind and some failed another way with the kind among their
        keys, the match goes by keys (K1) and ORIG is tried again so.
        True when it failed the same way; False at once when the match was
        by keys already or no try had the kind among its keys."""
        e = self.state.log[-1]
        among = e.get("kind_among_other_keys") or 0
        if not among or self.state.match == "keys" or self.state.left() <= 0 or STOP.is_set():
            return False
        self.state.match = "keys"
        self.state.match_why = (
            "the recorded run failed again only as %s, with %s among the keys in %d of %d tries"
            % (" or ".join(e["other_kinds"]), self.state.kind, among, e["trials"])
        )
        self.state.p.line(
            "shrink: %s: a trial whose failure keys include %s fails the same way from here on "
            "(K24)" % (self.state.match_why, self.state.kind)
        )
        return self.attempt(
            "the recorded run, unchanged, %s among its keys (K24)" % self.state.kind,
            orig.copy(),
            "baseline",
            runs=runs,
            need=1,
            at=len(orig.steps) - 1,
        )

    def keep_aside(self, cand, r):
        if len(self.state.aside) >= MAX_ASIDE:
            return
        dest = os.path.join(self.state.dir, "shrink-aside", str(len(self.state.aside)))
        shutil.rmtree(dest, ignore_errors=True)
        self.write_folder(dest, cand, r)
        self.state.aside.append({"path": nice_path(dest), "kind": r["kind"], "step": r["step"]})
        self.state.p.line(
            "shrink: a different failure (%s) kept aside: %s" % (r["kind"], nice_path(dest))
        )

    def write_folder(self, dest, cand, r):
        """A folder repro reads (its layout: meta.json, start/, bin/), for
        the run CAND as trial R ran it; it replays from start/."""
        os.makedirs(dest)
        if cand.fresh:
            os.makedirs(os.path.join(dest, "start"))
        else:
            shutil.copytree(self.state.start, os.path.join(dest, "start"), symlinks=True)
        os.makedirs(os.path.join(dest, "bin"))
        for k, name in (("@STRESS@", "stress"), ("@POWERLOSS@", "powerloss")):
            shutil.copy2(self.state.bin[k], os.path.join(dest, "bin", name))
        if cand.trace is not None:
            write_trace(os.path.join(dest, "ops.trace"), cand.trace)
        steps = []
        crashed = None
        for n, s in enumerate(cand.steps[: r["step"] + 1] if r["step"] is not None else cand.steps):
            res = r["results"].get(n)
            steps.append(dict(s, result=slim(res)))
            if res and res.get("outcome") == "crashed" and crashed is None:
                crashed = n
        failure = r["failure"]
        if r["kind"] != self.state.kind and self.same(r):
            # A match by keys (K1, K24): the folder is the kind's, and its
            # repro looks for the kind among the keys too.
            failure = dict(failure, kind=self.state.kind, judged_as=r["kind"], match="keys")
        meta = dict(self.state.meta)
        meta.update(
            {
                "id": self.state.meta["id"] + "-shrunk",
                "steps": steps,
                "failure": failure,
                "crashed_after_step": crashed,
                "replay_from": "start",
                "shrunk_from": self.state.meta["id"],
                "binaries": {"@STRESS@": "bin/stress", "@POWERLOSS@": "bin/powerloss"},
            }
        )
        # The binaries in bin/ are the ones the trials ran (--stress-binary):
        # repro compares against their sha256, not the recorded run's.
        build = dict(meta.get("build") or {})
        for k, name in (("@STRESS@", "stress"), ("@POWERLOSS@", "powerloss")):
            build[name] = dict(
                {x: v for x, v in (build.get(name) or {}).items() if x != "mtime"},
                path=self.state.bin[k],
                sha256=sha256_of(self.state.bin[k]),
            )
        meta["build"] = build
        if not cand.deterministic():
            meta["repro_tries"] = self.repro_tries()  # repro prints the rate over these (K8)
        write_json(os.path.join(dest, "meta.json"), meta)

    def repro_tries(self):
        """How many times repro replays a shrunk run that is not
        deterministic (K8): MT_REPRO_TRIES, or enough that MT_REPRO_EXPECT
        reproduce at the observed rate (the least of K8's keep with its
        confirmation and the last step kept with several trials), at most
        MT_REPRO_MAX."""
        rates = (
            [Fraction(self.state.multi["failures"], self.state.multi["trials"])]
            if self.state.multi
            else []
        )
        last = self.last_kept_on_trials()
        if last:
            rates.append(Fraction(last["failures"], last["trials"]))
        rate = min(rates) if rates else 0
        if rate <= 0:
            return MT_REPRO_TRIES
        return min(MT_REPRO_MAX, max(MT_REPRO_TRIES, math.ceil(MT_REPRO_EXPECT / rate)))

    def last_kept_on_trials(self):
        """The last step kept on several trials (its shrink.json entry),
        or None: the observed rate of a run that is not deterministic."""
        return next(
            (e for e in reversed(self.state.log) if e["verdict"] == "kept" and e["trials"] > 1),
            None,
        )

    def repro_rate(self, dest):
        """repro of the shrunk folder DEST (its repro_tries): (each try's
        seconds, how many reproduced, tries)."""
        r = subprocess.run(
            [sys.executable, os.path.join(REPO, "crashtest.py"), "repro", dest],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            preexec_fn=die_with_parent(),
        )
        got = re.findall(r"crashtest: try \d+ of \d+: (\S+).* \(([\d.]+) s\)", r.stdout)
        return [float(t) for _, t in got], sum(1 for w, _ in got if w == "reproduced"), len(got)

    def step_back(self, dest, first, need, most, recorded=True, smaller=True):
        """The shrunk run that is not deterministic reproduced FIRST (each
        try's seconds, how many reproduced, tries) in its repro, fewer
        than NEED: write and try the runs kept before it (self.state.kept_trials
        but its last, which is self.state.best), latest first, MOST at most.
        Then the run the multi-thread path kept, if not among them.
        The first that reproduces NEED times becomes self.state.best; if none
        does, the one that reproduced most often does (ties: the latest
        kept, the smallest), so that the folder left is never one that
        reproduced less often than a run it was compared with (a chain
        of steps each kept on 2 of 4 trials can drift to a run that
        reproduces 0 of 9 while an earlier one does 1 of 9: planted bug
        writeback-error-cleans).  The recorded run (the
        baseline's kept trial, step 0) comes last, only when no smaller
        run reproduced at all: a shrunk folder that is the recorded run
        says nothing a repro of the failure does not, and a smaller run
        that reproduced is kept with its rate written down (planted bug
        checkpoint-redo-at-record: two threads of 64 ops reproduce 1 of 9,
        the recorded run of 12,049 ops 8 of 9; taking the recorded run
        would end the shrink at 1.0x).  DEST holds
        the chosen run's folder.  RECORDED false: not the recorded run (a
        resume of the multi-thread path comes first, K20); SMALLER false:
        only it (what no resume found).  Returns (times, reproduced, tries,
        what was tried for shrink.json's stepped_back)."""
        tried = [(first, self.state.best, self.state.best_res)]
        back = []
        earlier = (
            list(reversed(self.state.kept_trials[:-1])) if smaller else list(self.state.kept_trials)
        )
        latest = [e for e in earlier if e[0] != 0][:most] if smaller else []
        # ... then the run the multi-thread path kept (K8: its rate stood
        # on the most trials, its keep's and its confirmation's), when the
        # latest did not reach back to it ...
        anchor = (
            [e for e in earlier if e[0] == (self.state.multi or {}).get("step") and e not in latest]
            if smaller
            else []
        )
        recorded = [e for e in earlier if e[0] == 0] if recorded else []
        for n, cand, res in latest + anchor + recorded:
            if n == 0 and any(t[0][1] for t in tried):
                self.state.p.line(
                    "shrink: a smaller run reproduced: the recorded run is not stepped back to"
                )
                break
            shutil.rmtree(dest, ignore_errors=True)
            self.write_folder(dest, cand, res)
            got = self.repro_rate(dest)
            back.append({"step": n, "reproduced": "%d of %d" % (got[1], got[2])})
            self.state.p.line(
                "shrink: the shrunk run reproduced %d of %d: step %d's run instead: %d of %d"
                % (first[1], first[2], n, got[1], got[2])
            )
            tried.append((got, cand, res))
            if got[1] >= need:
                self.state.best, self.state.best_res = cand, res
                return got + (back,)
        got, cand, res = max(tried, key=lambda t: Fraction(t[0][1], t[0][2]) if t[0][2] else 0)
        self.state.best, self.state.best_res = cand, res
        shutil.rmtree(dest, ignore_errors=True)
        self.write_folder(dest, cand, res)
        if back:
            self.state.p.line(
                "shrink: no run stepped back to reproduced %d times: the one that reproduced most "
                "often is the result (%d of %d)" % (need, got[1], got[2])
            )
        return got + (back,)
