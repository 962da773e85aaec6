"""The run loop: the run modes blackbox, whitebox and simple.

CrashTest sets a run up (copies of the binaries, the stress driver's
options and catalogue, support probes, the user's pins), starts one thread
per run (-j), each repeating iterations (crashtest.steps) until the
duration, the iteration count or the failure limit, and keeps the records
the reports are made of (crashtest.report)."""

import datetime
import json
import os
import shutil
import tempfile
import threading
import time

from .binary import (
    build_identity,
    check_binary,
    probe_support,
    stress_info,
    stress_promises,
    usable_dir,
)
from .common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_PASS, REPO, UsageError, hms, nice_path
from .knownbugs import bugs_of
from .folders import claim_report_dir, clean_work_dirs, make_work_dir, release, remove_work_dir
from .output import Printer
from .params import (
    FAULTS,
    MANAGED,
    PROBED,
    UNSTABLE_FAULTS,
    Config,
    door_classes,
    drawn_options,
    other_value,
    swarm_text,
)
from .procs import STOP, Stopped
from .report import iteration_line, summarize
from .repro import rerun_line
from .seeds import iteration_seed, run_seed_of
from .shrink import shrink_folder
from .steps import engine_tool_of, run_iteration


class Run:
    """One run: a database and its expected state carried from iteration
    to iteration, in WORK/run-R."""

    def __init__(self, ct, index, seed):
        self.ct = ct
        self.index = index
        self.seed = seed
        self.dir = os.path.join(ct.work, "run-%d" % index)
        self.state = os.path.join(self.dir, "state")
        self.fresh = True
        self.db_params = None
        self.db_id = 0
        self.db_age = 0
        self.db_ops = 0  # the ops its database's earlier iterations did
        self.history = []  # and their workloads (meta.json history, K15)
        self.max_key = ct.a.max_key  # its key space (a swarm may draw a smaller one, C3)
        self.iterations = 0
        self.failures = 0


class CrashTest:
    """The run modes: blackbox, whitebox, simple."""

    def __init__(self, args, printer):
        self.a = args
        self.p = printer
        self.mode = args.mode
        self.stress = os.path.abspath(args.stress_binary)
        self.powerloss = os.path.abspath(args.powerloss_binary)
        self.lock = threading.Lock()
        self.records = []
        self.failed = 0
        self.started = 0
        self.running = 0
        self.t0 = time.monotonic()
        self.deadline = None if not args.duration else self.t0 + args.duration
        self.work = None
        self.own_work = False
        self.report_dir = None
        self.internal_error = False
        self.started_at = datetime.datetime.now().isoformat(timespec="seconds")

    # ---- setup ----
    def setup(self):
        """Everything a run needs before its first iteration.  Every value
        passed through to stress is asked of stress itself first (a tiny
        run with them: stress_values), so a usage error exits 2 before a
        report folder holds anything."""
        a = self.a
        classes = self.engine_faults(self.parse_faults(a.faults))
        check_binary(self.stress, "stress")
        check_binary(self.powerloss, "powerloss")
        self.prepare_folders()
        self.identity = build_identity({"stress": self.stress, "powerloss": self.powerloss})
        info = stress_info(self.bin["@STRESS@"], self.engine_args)
        self.promises = stress_promises(self.bin["@STRESS@"], a.engine)
        classes = self.door_classes(classes)
        self.defaults = info["options"]
        self.catalogue = info["catalogue"]
        self.identity["engines"] = info["engines"]
        pinned = self.pins()
        unsupported, refused = self.probe_values(pinned)
        bugs = self.known_bugs(info["engines"], pinned)
        self.unsupported = sorted(unsupported, key=str)
        self.cfg = Config(
            self.defaults,
            unsupported | bugs,
            classes,
            pinned,
            a.measure,
            a.threads,
            a.max_key,
            known=self.defaults.keys(),
            swarm=not getattr(a, "no_swarm", False),
            engine=a.engine,
            refused=refused,
            engine_pins=self.engine_pins,
            promises=self.promises,
        )
        self.p.log_f = open(os.path.join(self.report_dir, "log.txt"), "a")
        self.jsonl = open(os.path.join(self.report_dir, "iterations.jsonl"), "a")
        self.note_unsupported(unsupported)

    def prepare_folders(self):
        """The run's report folder (claimed: it belongs to one run) and work
        folder, and its copies of the binaries in the work folder."""
        a = self.a
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.report_dir = os.path.abspath(
            a.report_dir
            or os.path.join(
                REPO, "build", "crashtest", "%s-%s-%d" % (self.mode, stamp, os.getpid())
            )
        )
        self.made_report_dir = claim_report_dir(self.report_dir)
        usable_dir(self.report_dir, "--report-dir")
        if a.work_dir:
            usable_dir(a.work_dir, "--work-dir")
        # The run uses copies: a rebuild while it runs (a developer's make)
        # changes nothing under it, and a failure keeps the very binaries.
        self.work = os.path.abspath(a.work_dir) if a.work_dir else make_work_dir()
        self.own_work = not a.work_dir
        bindir = os.path.join(self.work, "bin")
        os.makedirs(bindir, exist_ok=True)
        self.bin = {
            "@STRESS@": os.path.join(bindir, "stress"),
            "@POWERLOSS@": os.path.join(bindir, "powerloss"),
        }
        shutil.copy2(self.stress, self.bin["@STRESS@"])
        shutil.copy2(self.powerloss, self.bin["@POWERLOSS@"])
        # The lost-file check names the log segment to remove with it
        # (steps.py redo_segment), beside the stress copy.
        tool = engine_tool_of(self.stress)
        if tool:
            shutil.copy2(tool, os.path.join(bindir, "engine-tool"))

    def probe_values(self, pinned):
        """Ask stress about the draw's values (a tiny run each, in a probe
        folder of the work folder).  PINNED (the --set values) gets the
        engine's own pins added, and must be accepted.  Returns (the values
        stress does not support, what the engine refuses: engine_refuses)."""
        a = self.a
        probe_dir = tempfile.mkdtemp(prefix="probe-", dir=self.work)
        results = (
            probe_support(self.bin["@STRESS@"], probe_dir, list(PROBED))
            if a.engine == "ours"
            else {}
        )
        refused = self.engine_refuses(probe_dir, pinned)
        pinned.update(self.engine_pins)
        self.stress_values(probe_dir, pinned)
        shutil.rmtree(probe_dir, ignore_errors=True)
        unsupported = {k for k, (ok, _, _) in results.items() if not ok}
        for (name, value), (ok, why, rc) in sorted(results.items(), key=str):
            if ok and rc != 0:
                self.p.line(
                    "crashtest: WARNING: a tiny run with --%s=%s failed (exit %s: %s); kept in the "
                    "draw, the iterations that draw it judge it" % (name, value, rc, why)
                )
        for name, value in unsupported:
            if name in pinned and str(pinned[name]) == str(value):
                raise UsageError(
                    "--set %s=%s: %s does not support it yet (%s)"
                    % (name, value, self.stress, results[(name, value)][1])
                )
        return unsupported, refused

    def known_bugs(self, versions, pinned):
        """The option values that reach a known bug of the engine's version
        (crashtest.knownbugs), one line each; a value the user pinned stays
        (the finding's reproduction).  Returns them as (name, value)s."""
        engine = self.a.engine
        out = set()
        for b in bugs_of(engine, versions.get(engine)):
            kept = str(pinned.get(b["option"])) == b["value"]
            self.p.line(
                "crashtest: note: %s %s %s (fixed in %s; %s): --%s=%s %s"
                % (
                    engine,
                    versions.get(engine, "of unknown version"),
                    b["what"],
                    b["fixed_in"],
                    b["finding"],
                    b["option"],
                    b["value"],
                    "pinned by --set, kept" if kept else "left out of the draw",
                )
            )
            if not kept:
                out.add((b["option"], b["value"]))
        return out

    def note_unsupported(self, unsupported):
        """The line that names the values left out of the draw, if any."""
        if unsupported:
            by = {}
            for name, value in sorted(unsupported, key=str):
                by.setdefault(name, []).append(str(value))
            self.p.line(
                "crashtest: note: %s does not support %s yet: left out of the draw"
                % (
                    nice_path(self.stress),
                    ", ".join("--%s=%s" % (n, ",".join(v)) for n, v in by.items()),
                )
            )

    def engine_faults(self, classes):
        """The engine and door of the run (--engine, --faults-via): the
        options every stress step gets for them (self.engine_pins, also
        self.engine_args), and CLASSES (door_classes keeps them to what
        the door serves an engine without hooks)."""
        a = self.a
        via = a.faults_via or ("hooks" if a.engine == "ours" else "posix")
        self.engine_pins = {}
        if a.engine != "ours":
            if via == "hooks":
                raise UsageError(
                    "--engine %s --faults-via hooks: only our engine has the fault library's "
                    "hooks; the others are reached through the door (posix)" % a.engine
                )
            self.engine_pins["engine"] = a.engine
        if via == "posix":
            self.engine_pins["faults_via"] = "posix"
        self.engine_args = ["--%s=%s" % kv for kv in sorted(self.engine_pins.items())]
        return classes

    def door_classes(self, classes):
        """CLASSES as the door serves the engine (its promise table's door
        list, stress --promises): a class it does not serve, asked for by
        --faults, is a usage error; the default's are left out."""
        if self.a.engine == "ours":
            return classes
        served, refused = door_classes(self.promises or {"door": []}, classes)
        if refused and "faults" in getattr(self.a, "given", ()):
            raise UsageError(
                "--engine %s --faults %s: the door serves %s %s only (its promise table, stress "
                "--engine %s --promises)"
                % (
                    self.a.engine,
                    self.a.faults,
                    self.a.engine,
                    ", ".join(
                        ["power loss", "SIGKILL"]
                        + [c for c in (self.promises or {}).get("door") or [] if c in FAULTS]
                    ),
                    self.a.engine,
                )
            )
        return served

    def engine_refuses(self, probe_dir, pinned):
        """The drawn options the engine refuses away from their defaults
        (ours: none), asked of stress: a tiny run of each with a value not
        its default.  Our engine through the door runs psync."""
        if self.engine_pins.get("faults_via") == "posix" and self.a.engine == "ours":
            if pinned.get("io_backend", "psync") != "psync":
                raise UsageError(
                    "--faults-via posix: our engine's io_uring backend bypasses libc's file calls, "
                    "which the door sees: drop --set io_backend=%s" % pinned["io_backend"]
                )
            self.engine_pins["io_backend"] = "psync"
        if self.a.engine == "ours":
            return set()
        probes = [
            (name, other_value(values, self.defaults.get(name)))
            for name, values in drawn_options()
            if name in self.defaults and name not in pinned
        ]
        results = probe_support(
            self.bin["@STRESS@"],
            probe_dir,
            [pv for pv in probes if pv[1] is not None],
            extra=self.engine_args,
        )
        return {name for (name, _), (ok, _, _) in results.items() if not ok}

    def pins(self):
        """--set NAME=VALUE as {name: value}: options stress has and
        crashtest does not manage itself."""
        pinned = {}
        for s in self.a.set or []:
            name, _, value = s.partition("=")
            name = name.strip().lstrip("-").replace("-", "_")
            if not name or not _ or value == "":
                raise UsageError("--set %r: want NAME=VALUE" % s)
            if name in MANAGED:
                raise UsageError("--set %s: crashtest manages --%s itself" % (name, name))
            if name not in self.defaults:
                raise UsageError(
                    "--set %s: %s has no option --%s (see %s --help)"
                    % (name, self.stress, name, self.stress)
                )
            pinned[name] = value
        return pinned

    def stress_values(self, probe_dir, pinned):
        """Ask stress about the values given for it (--threads, --max-key,
        --hang-seconds, --set): a tiny run with them, whose usage error
        (exit 2) is ours."""
        a = self.a
        given = (
            ["--max_key=%d" % a.max_key, "--hang_seconds=%d" % a.hang_seconds]
            + (["--threads=%d" % a.threads] if a.threads else [])
            + ["--%s=%s" % kv for kv in sorted(pinned.items())]
        )
        ok, why, _ = probe_support(self.bin["@STRESS@"], probe_dir, [("seed", 1)], extra=given)[
            ("seed", 1)
        ]
        if not ok:
            what = " ".join(
                ["--max-key %d --hang-seconds %d" % (a.max_key, a.hang_seconds)]
                + (["--threads %d" % a.threads] if a.threads else [])
                + ["--set %s" % x for x in a.set or []]
            )
            raise UsageError("%s rejects %s: %s" % (os.path.basename(self.stress), what, why))

    def parse_faults(self, spec):
        if spec in (None, "", "all"):
            return list(FAULTS)
        if spec == "none":
            return []
        if spec == "stable":
            return [c for c in FAULTS if c not in UNSTABLE_FAULTS]
        out = []
        for c in spec.split(","):
            c = c.strip()
            if c not in FAULTS:
                raise UsageError(
                    "--faults: unknown class %r (classes: %s; or all, stable, none)"
                    % (c, ", ".join(FAULTS))
                )
            out.append(c)
        return out

    # ---- the runs ----
    def run_indices(self):
        k, n = self.a.shard
        return [k + n * t for t in range(self.a.jobs)]

    def go(self):
        a = self.a
        runs = [Run(self, r, run_seed_of(a.seed, r)) for r in self.run_indices()]
        if a.iteration_seed is not None:
            runs = [Run(self, 0, a.seed)]
        self.p.line(
            "crashtest: %s, seed %d (rerun with --seed %d), %s, %s, interval %gs"
            % (
                self.mode,
                a.seed,
                a.seed,
                "iteration seed %d" % a.iteration_seed
                if a.iteration_seed is not None
                else "%d run%s%s"
                % (
                    len(runs),
                    "s" if len(runs) > 1 else "",
                    " (shard %d/%d)" % a.shard if a.shard != (0, 1) else "",
                ),
                ("%d iterations" % a.iterations if a.iterations else "")
                + (" " if a.iterations and a.duration else "")
                + ("duration %ds" % a.duration if a.duration else ""),
                a.interval,
            )
        )
        self.p.line(
            "crashtest: %s (%s), git %s"
            % (
                self.stress,
                (self.identity["stress"]["sha256"] or "?")[:12],
                self.identity.get("git_describe") or "?",
            )
        )
        self.p.line("crashtest: work dir %s; reports in %s" % (self.work, self.report_dir))
        threads = [threading.Thread(target=self.run_loop, args=(r,), daemon=True) for r in runs]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=1.0)
            self.show_progress()
        self.p.clear_progress()
        return runs

    def show_progress(self):
        el = time.monotonic() - self.t0
        total = " / %s" % hms(self.a.duration) if self.a.duration else ""
        with self.lock:
            s = "[crashtest] %s%s  iterations %d (%d running)  failures %d" % (
                hms(el),
                total,
                len(self.records),
                self.running,
                self.failed,
            )
        self.p.set_progress(s)

    def should_stop(self, run):
        a = self.a
        if STOP.is_set():
            return True
        if a.iteration_seed is not None:
            return run.iterations >= 1
        if a.iterations and run.iterations >= a.iterations:
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline and run.iterations > 0:
            return True
        if a.max_failures and self.failed >= a.max_failures:
            return True
        return False

    def run_loop(self, run):
        try:
            while not self.should_stop(run):
                seed = (
                    self.a.iteration_seed
                    if self.a.iteration_seed is not None
                    else iteration_seed(run.seed, run.iterations)
                )
                with self.lock:
                    self.running += 1
                try:
                    run_iteration(self, run, run.iterations, seed)
                finally:
                    with self.lock:
                        self.running -= 1
                run.iterations += 1
        except Stopped:
            pass
        except Exception as e:  # a bug of crashtest itself: say so, stop this run
            import traceback

            self.p.line("crashtest: internal error in run %d: %s" % (run.index, e))
            with open(os.path.join(self.report_dir, "internal-error.txt"), "a") as f:
                traceback.print_exc(file=f)
            with self.lock:
                self.failed += 1
                self.internal_error = True

    def finish(self, record, run):
        """Count RUN's finished iteration, append its record to
        iterations.jsonl and print its line."""
        with self.lock:
            # Seconds since the run began when this iteration's verdict was
            # in: the time to catch a bug (crashtest.py mutants).
            record["t_end"] = round(time.monotonic() - self.t0, 3)
            self.records.append(record)
            if record["failure"]:
                self.failed += 1
            self.jsonl.write(json.dumps(record, sort_keys=True) + "\n")
            self.jsonl.flush()
        self.p.line(iteration_line(record, run.index, self.defaults))
        if record["failure"]:
            self.p.line("    %s" % record["failure"]["message"])
            if record.get("swarm"):
                self.p.line("    %s" % swarm_text(record["swarm"]))
            self.p.line("    artifacts: %s" % nice_path(record["artifacts"]))
            self.p.line("    repro: %s" % record["repro"])
            self.p.line(
                "    rerun its parameters on a fresh database: %s"
                % rerun_line(self.a, self.mode, record["seed"])
            )


def shrink_failures(ct, budget):
    """--shrink: after every iteration, shrink each failure the run saved
    (oldest first), each within what is left of BUDGET seconds."""
    base = os.path.join(ct.report_dir, "failures")
    try:
        dirs = sorted((os.path.join(base, d) for d in os.listdir(base)), key=os.path.getmtime)
    except OSError:
        return
    t0 = time.monotonic()
    for d in dirs:
        left = budget - (time.monotonic() - t0)
        if left <= 0 or STOP.is_set():
            ct.p.line("crashtest: --shrink: out of budget before %s" % nice_path(d))
            break
        if not os.path.isfile(os.path.join(d, "meta.json")):
            continue
        try:
            shrink_folder(d, left, ct.p)
        except UsageError as e:
            ct.p.line("crashtest: --shrink: %s: %s" % (nice_path(d), e))


def run_mode(a, argv):
    given = set()
    for x in argv:
        if x.startswith("--"):
            given.add(x[2:].split("=")[0])
    a.given = sorted(given)  # the options written on the command line
    if a.iterations and "duration" not in given:
        a.duration = 0
    a.seed_given = a.seed is not None
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    if a.iteration_seed is not None and (a.jobs != 1 or a.shard != (0, 1)):
        raise UsageError("--iteration-seed runs one iteration: -j and --shard do not apply")
    a.stress_binary_given = a.stress_binary is not None
    if a.stress_binary is None:
        a.stress_binary = os.path.join(REPO, "build", "stress")
    a.powerloss_binary_given = a.powerloss_binary is not None
    if a.powerloss_binary is None:
        a.powerloss_binary = os.path.join(
            os.path.dirname(os.path.abspath(a.stress_binary)), "powerloss"
        )
        if not os.path.exists(a.powerloss_binary):
            a.powerloss_binary = os.path.join(REPO, "build", "powerloss")
    printer = Printer()
    for d in clean_work_dirs():
        printer.line("crashtest: removed %s, the work folder of a run that died" % d)
    ct = CrashTest(a, printer)
    nfail, interrupted = 0, False
    try:
        try:
            ct.setup()
        except UsageError:
            if ct.report_dir:
                release(ct.report_dir, remove=getattr(ct, "made_report_dir", False))
            raise
        runs = ct.go()
        interrupted = STOP.is_set()
        if interrupted:
            printer.line("crashtest: interrupted")
        nfail = summarize(ct, runs, interrupted)
        if a.shrink and nfail and not interrupted:
            shrink_failures(ct, a.shrink_budget)
    finally:
        printer.clear_progress()
        if ct.work and ct.own_work and not a.keep_artifacts:
            remove_work_dir(ct.work)
        elif ct.work and a.keep_artifacts:
            release(ct.work)
            printer.line("crashtest: work dir kept: %s" % ct.work)
        if ct.report_dir:
            release(ct.report_dir)
    if nfail or ct.internal_error:
        return EXIT_FAIL
    return EXIT_INTERRUPTED if interrupted else EXIT_PASS
