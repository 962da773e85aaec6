"""Repro and rerun: replaying a failed iteration from its folder
(crashtest.py repro RUN_DIR), and the lines a failure prints to do so
(repro of the folder; a rerun of its parameters on a fresh database)."""

import json
import os
import re
import shlex
import shutil
import time

from .binary import check_binary
from .cand import trace_ops_of
from .common import EXIT_FAIL, EXIT_PASS, META_VERSION, REPO, UsageError, nice_path, sha256_of
from .executor import Executor, ledger_by_op
from .folders import WORK_PREFIX, make_work_dir, release
from .judge import shows_kind
from .output import Printer
from .params import MODE_DEFAULTS


def repro(a, printer):
    """Replay a failed iteration from its folder: from the crashed state when
    the failure came after the crash, else from the start snapshot; the
    recorded steps run again with the same seeds and options, each command
    printed.  Exit 1 when it fails again (reproduced), 0 when it passes.
    With --tries N (or the folder's "repro_tries": a shrunk run with several
    threads, which is not deterministic), N replays, each one's outcome and
    seconds, and how many of them reproduced the failure; exit 1 when one
    failed (the same way or differently, as for one replay)."""
    tries = getattr(a, "tries", None)
    if tries is None:
        try:
            with open(os.path.join(os.path.abspath(a.run_dir), "meta.json")) as f:
                tries = json.load(f).get("repro_tries")
        except (OSError, ValueError, AttributeError):
            tries = None
    tries = tries or 1
    if tries <= 1 or a.dry_run:
        return repro_once(a, printer)[0]
    got, kinds = 0, {}
    for i in range(tries):
        t0 = time.monotonic()
        rc, status = repro_once(a, printer, show_list=i == 0, sub="try-%d" % i)
        got += status == "reproduced"
        if status not in ("reproduced", "not"):
            kinds[status] = kinds.get(status, 0) + 1
        printer.line(
            "crashtest: try %d of %d: %s (%.1f s)"
            % (i + 1, tries, {"not": "NOT reproduced"}.get(status, status), time.monotonic() - t0)
        )
    printer.line(
        "crashtest: reproduced %d of %d tries (rate %.2f; several threads: not deterministic)%s"
        % (got, tries, got / tries, "".join("; %s %d" % kv for kv in sorted(kinds.items())))
    )
    return EXIT_FAIL if got or kinds else EXIT_PASS


def read_meta(mpath, run_dir):
    """A failure folder's meta.json, of this version of crashtest.py: the dict."""
    if not os.path.isfile(mpath):
        raise UsageError(
            "%s has no meta.json: give the folder of a failed iteration (REPORT/failures/ID)"
            % run_dir
        )
    try:
        with open(mpath) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError("cannot read %s: %s" % (mpath, e))
    if meta.get("crashtest_meta") != META_VERSION:
        raise UsageError("%s was written by another version of crashtest.py" % mpath)
    return meta


def replay_start(a, meta, d, fail_n):
    """Where a replay starts ('crashed' or 'start', --from auto chosen from
    the record): (start_from, first step, snapshot folder)."""
    crashed_after = meta.get("crashed_after_step")
    start_from = a.start
    if start_from == "auto":
        start_from = meta.get("replay_from") or (
            "crashed" if crashed_after is not None and fail_n > crashed_after else "start"
        )
    if start_from == "crashed" and crashed_after is None:
        raise UsageError("this iteration never crashed: replay with --from start")
    snap = os.path.join(d, "crashed" if start_from == "crashed" else "start")
    if not os.path.isdir(snap):
        raise UsageError("%s is missing" % snap)
    if start_from == "crashed":
        # Outputs of steps before the crash point are not needed, but their
        # folders are where the replayed steps write.
        first = crashed_after + 1
    else:
        first = 0
    return start_from, first, snap


def replay_binaries(a, d, meta, printer):
    """The binaries a replay runs (the folder's, or --stress-binary and
    --powerloss-binary), checked, a note printed for each that differs
    from the one that failed: {placeholder: path}."""
    binaries = {k: os.path.join(d, v) for k, v in meta["binaries"].items()}
    if a.stress_binary:
        binaries["@STRESS@"] = os.path.abspath(a.stress_binary)
    if a.powerloss_binary:
        binaries["@POWERLOSS@"] = os.path.abspath(a.powerloss_binary)
    check_binary(binaries["@STRESS@"], "stress")
    check_binary(binaries["@POWERLOSS@"], "powerloss")
    build = meta.get("build") or {}
    for key, name in (("@STRESS@", "stress"), ("@POWERLOSS@", "powerloss")):
        want = (build.get(name) or {}).get("sha256")
        have = sha256_of(binaries[key])
        if want and have != want:
            printer.line(
                "crashtest: note: %s differs from the binary that failed (sha256 %s, was %s)"
                % (binaries[key], have[:12], want[:12])
            )
    return binaries


def replay_dirs(a, sub, snap):
    """A replay's work folder (locked; --work-dir's SUB folder when given),
    its state a copy of SNAP: (work, state, iter)."""
    work = os.path.abspath(a.work_dir) if a.work_dir else make_work_dir(WORK_PREFIX + "repro-")
    if a.work_dir and sub:
        work = os.path.join(work, sub)
    os.makedirs(work, exist_ok=True)
    state = os.path.join(work, "state")
    it = os.path.join(work, "iter")
    for p in (state, it):
        if os.path.exists(p):
            raise UsageError("%s exists: give an empty --work-dir" % p)
    shutil.copytree(snap, state, symlinks=True)
    os.makedirs(it)
    return work, state, it


def replay_steps(a, ex, steps, first, fail_n, printer):
    """Steps FIRST..FAIL_N run again (printed only with --dry-run), up to
    the first failure or the first stress step whose outcome differs from
    the recorded one: (failure with its step or None, (step, recorded,
    replayed) of a divergence or None)."""
    got = None
    diverged = None
    for n in range(first, fail_n + 1):
        step = {k: v for k, v in steps[n].items() if k != "result"}
        if a.dry_run:
            ex.print_step(step)
            continue
        r = ex.run(n, step)
        what = r["outcome"]
        if step["type"] == "stress":
            rep = r.get("report") or {}
            what += " (exit %s%s)" % (r["rc"], ", verdict %s" % rep.get("verdict") if rep else "")
        printer.line("    -> %s" % what)
        if r["failure"]:
            got = dict(r["failure"], step=n)
            for line in (r.get("output_tail") or "").splitlines()[-15:]:
                printer.line("    | " + line)
            break
        recorded = (steps[n].get("result") or {}).get("outcome")
        if (
            step["type"] == "stress"
            and recorded in ("crashed", "passed")
            and r["outcome"] != recorded
        ):
            # The steps after this one were planned on its recorded outcome
            # (a crash brings a power-loss step and a restart): replaying
            # them after a different one would judge a state no run makes.
            diverged = (n, recorded, r["outcome"])
            break
    return got, diverged


def replay_verdict(printer, steps, f, fail_n, got, diverged):
    """The replay's closing line against the recorded failure F: (exit
    code, 'reproduced' | 'failed differently: KIND' | 'not')."""
    if got is None and diverged:
        printer.line(
            "crashtest: NOT reproduced: the replay diverged at step %d (%s): recorded %s, replayed "
            "%s; the later steps depend on it (the failure was %s: %s)"
            % (
                diverged[0],
                steps[diverged[0]]["name"],
                diverged[1],
                diverged[2],
                f.get("kind"),
                f.get("message"),
            )
        )
        return EXIT_PASS, "not"
    if got is None:
        printer.line(
            "crashtest: NOT reproduced: every replayed step passed (the failure was %s: %s)"
            % (f.get("kind"), f.get("message"))
        )
        return EXIT_PASS, "not"
    # A shrunk folder of a match by keys (shrink's K1, K24) reproduces
    # when its kind is among the failure's keys.
    same = shows_kind(got, f.get("kind"), f.get("match", "kind")) and (
        got["step"] == fail_n or killed_before_judging(steps, got["step"], fail_n)
    )
    if same:
        beside = "" if got["kind"] == f.get("kind") else ", among the keys of a %s" % got["kind"]
        if got["step"] != fail_n:
            beside += (
                "; recorded at step %d (%s): the recorded run's planned kill met step %d first"
                % (fail_n, steps[fail_n]["name"], got["step"])
            )
        printer.line(
            "crashtest: reproduced: %s at step %d (%s)%s: %s"
            % (f.get("kind"), got["step"], steps[got["step"]]["name"], beside, got["message"])
        )
    else:
        printer.line(
            "crashtest: failed differently: %s at step %d (%s) (recorded: %s at step %d): %s"
            % (
                got["kind"],
                got["step"],
                steps[got["step"]]["name"],
                f.get("kind"),
                fail_n,
                got["message"],
            )
        )
    return EXIT_FAIL, "reproduced" if same else "failed differently: %s" % got["kind"]


def repro_once(a, printer, show_list=True, sub=None):
    """One replay (repro's): (exit code, 'reproduced' | 'failed differently:
    KIND' | 'not').  SHOW_LIST: print the op list; SUB: the replay's folder
    under --work-dir."""
    d = os.path.abspath(a.run_dir)
    mpath = os.path.join(d, "meta.json")
    if not os.path.isfile(mpath) and (
        os.path.isfile(os.path.join(d, "summary.json"))
        or os.path.isdir(os.path.join(d, "failures"))
    ):
        return list_failures(d, printer), "not"
    meta = read_meta(mpath, a.run_dir)
    steps = meta["steps"]
    failure = meta.get("failure")
    fail_n = failure["step"] if failure else len(steps) - 1
    start_from, first, snap = replay_start(a, meta, d, fail_n)
    binaries = replay_binaries(a, d, meta, printer)
    work, state, it = replay_dirs(a, sub, snap)
    f = failure or {}
    printer.line(
        "crashtest: repro of %s (%s, seed %s): %s at step %d (%s), replaying steps %d..%d from %s/"
        % (
            meta["id"],
            meta["kind"],
            meta["seed"],
            f.get("kind", "?"),
            fail_n,
            steps[fail_n]["name"],
            first,
            fail_n,
            start_from,
        )
    )
    # @FOLDER@: files the folder itself holds (a shrunk run's ops.trace).
    env = {
        "@STATE@": state,
        "@ITER@": it,
        "@STRESS@": binaries["@STRESS@"],
        "@POWERLOSS@": binaries["@POWERLOSS@"],
        "@FOLDER@": d,
    }
    ex = Executor(env, meta.get("hang_seconds", 120), log=printer.line, echo=True)
    # A variant step needs its power-loss step's ledger offset: replayed too.
    got, diverged = replay_steps(a, ex, steps, first, fail_n, printer)
    if a.dry_run:
        return EXIT_PASS, "not"
    if show_list and os.path.exists(os.path.join(d, "ops.trace")):
        show_ops(
            printer,
            os.path.join(d, "ops.trace"),
            state,
            (ex.results.get(got["step"] if got else fail_n) or {}).get("output_tail"),
            f.get("kind"),
        )
    release(work)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        printer.line("crashtest: replay kept in %s" % work)
    return replay_verdict(printer, steps, f, fail_n, got, diverged)


def killed_before_judging(steps, n, fail_n):
    """Step N, before the recorded failure's step FAIL_N, was a run the
    record shows killed (its kill is timed): the replay's run judged the
    same state before its kill came, so finding the failure there is the
    same failure met sooner, not another one."""
    if n >= fail_n:
        return False
    return (steps[n].get("result") or {}).get("outcome") == "crashed"


def list_failures(d, printer):
    """A report directory instead of a failure's folder: list its failed
    iterations, each with the command that replays it."""
    base = os.path.join(d, "failures")
    names = (
        sorted(n for n in os.listdir(base) if os.path.isfile(os.path.join(base, n, "meta.json")))
        if os.path.isdir(base)
        else []
    )
    printer.line(
        "crashtest: %s is a report directory, not a failed iteration's folder: %d failure%s kept "
        "in it%s" % (nice_path(d), len(names), "" if len(names) == 1 else "s", ":" if names else "")
    )
    for n in names:
        try:
            with open(os.path.join(base, n, "meta.json")) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            meta = {}
        f = meta.get("failure") or {}
        printer.line(
            "  %s: %s at %s (seed %s): %s"
            % (
                n,
                f.get("kind", "?"),
                f.get("step_name", "?"),
                meta.get("seed", "?"),
                f.get("message", ""),
            )
        )
        printer.line("    %s" % repro_line(os.path.join(base, n)))
    return EXIT_PASS


def failing_key(output, kind):
    """The key index a stress failure of KIND names in OUTPUT (the first
    such failure's; else the first key any failure names; else the first
    SUSPECT of KIND's: a symptom the verdict decides, which failed the
    run when no FAILURE line came, as a lost key read old after a
    misdirected write's miss did: planted bug writeback-error-cleans, its
    focus pass skipped), or None."""
    k = re.escape(kind or "")
    for pat in (
        r"FAILURE %s [^\n]*key k\d+ \((\d+)\)" % k,
        r"FAILURE \w+ [^\n]*key k\d+ \((\d+)\)",
        r"SUSPECT \([^)\n]*\) %s [^\n]*key k\d+ \((\d+)\)" % k,
    ):
        m = re.search(pat, output or "")
        if m:
            return m.group(1)
    return None


def faults_words(field):
    """An op trace's FAULTS field (on, off, flip:BLOCK:BIT, cflip:BLOCK:BIT,
    kill:POINT:N) as repro's op list shows it."""
    if field == "on":
        return ""
    if field.startswith("flip:") or field.startswith("cflip:"):
        kind, block, bit = field.split(":")
        return "   (faults off; bit %s of %s %s flipped before it)" % (
            bit,
            "data block" if kind == "flip" else "the cached frame of block",
            block,
        )
    if field.startswith("kill:"):
        point, _, nth = field[5:].rpartition(":")
        return "   (killed at %s, its %s arrival in this op)" % (point, ordinal(int(nth)))
    return "   (faults off)"


def ordinal(n):
    return "%d%s" % (
        n,
        "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"),
    )


def show_ops(printer, trace, state, output, kind=None):
    """A shrunk run's op list (its ops.trace, docs/formats.md), readable,
    each op followed by the ledger lines it caused; the ops that touch the
    failing key (named in the failing step's output) are marked '>'."""
    key = failing_key(output, kind)
    ledger = ledger_by_op(os.path.join(state, "run", "ledger"))
    if not os.path.isfile(trace):
        return
    lines = trace_ops_of(trace)
    printer.line(
        "crashtest: the op list (%d ops; %s; '>' touches the failing key%s):"
        % (len(lines), nice_path(trace), " %s" % key if key else ", not named by the failure")
    )
    for line in lines:
        head, _, what = line.partition("|")
        f = head.split()
        if len(f) < 5:
            continue
        op = re.search(r"op=(\d+:\d+)", what)
        keys = re.findall(r"(?:^|\s|\[)(\d+)(?:=|\s|,)", " " + what)
        touches = key is not None and (f[2] == key or key in keys)
        printer.line(
            "  %s %5s %-10s %-6s %s%s"
            % (
                ">" if touches else " ",
                f[0],
                f[1],
                f[2] if f[2] != "-" else "",
                re.sub(r"\s*op=\S+|\s*inj=\d+", "", what).strip(),
                faults_words(f[4]),
            )
        )
        for j in ledger.get(op.group(1), []) if op else []:
            where = " ".join(
                "%s=%s" % (k, j[k])
                for k in ("file", "block", "offset", "len", "err", "note")
                if j.get(k) not in (None, "")
            )
            printer.line(
                "  %s       ledger: %s at %s %s"
                % (">" if touches else " ", j.get("class"), j.get("point"), where)
            )


def repro_line(dest):
    """The command that replays the failed iteration kept in DEST."""
    return "%s repro %s" % (
        shlex.quote(nice_path(os.path.join(REPO, "crashtest.py"))),
        shlex.quote(nice_path(dest)),
    )


def rerun_line(a, mode, seed):
    """The command that reruns iteration SEED's parameters on a fresh
    database, with the options of the run (A) that change its draws."""
    return "%s %s --iteration-seed %d%s" % (
        nice_path(os.path.join(REPO, "crashtest.py")),
        mode,
        seed,
        rerun_args(a),
    )


def rerun_args(a):
    out = []
    if getattr(a, "engine", "ours") != "ours":
        out.append("--engine %s" % a.engine)
    if getattr(a, "faults_via", None):
        out.append("--faults-via %s" % a.faults_via)
    if a.stress_binary_given:
        out.append("--stress-binary %s" % shlex.quote(a.stress_binary))
    if getattr(a, "powerloss_binary_given", False):
        out.append("--powerloss-binary %s" % shlex.quote(a.powerloss_binary))
    for s in a.set or []:
        out.append("--set %s" % shlex.quote(s))
    if a.faults != MODE_DEFAULTS[a.mode]["faults"]:
        out.append("--faults %s" % a.faults)
    if a.measure:
        out.append("--measure")
    if getattr(a, "no_swarm", False):
        out.append("--no-swarm")
    if a.powerloss_modes:
        out.append("--powerloss-modes %s" % ",".join(a.powerloss_modes))
    if getattr(a, "threads", 0):
        out.append("--threads %d" % a.threads)
    out.append("--max-key %d --interval %g" % (a.max_key, a.interval))
    return " " + " ".join(out)


def repro_mode(a, argv):
    return repro(a, Printer(tty=False))
