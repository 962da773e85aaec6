"""The command line: the parser of every mode (options, defaults, help),
argument types, signal handling and main().  Usage errors exit 2 without
a traceback."""

import argparse
import os
import re
import signal
import sys
import threading

from .binary import build_identity
from .compare import compare_mode
from .common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_PASS, EXIT_USAGE, REPO, UsageError
from .folders import clean_report_dirs, clean_work_dirs
from .htmlreport import render, write_page
from .mutants import MUTANTS_FILE, mutants_mode
from .params import ENGINES, FAULTS, MODE_DEFAULTS, POWERLOSS_MODES, UNSTABLE_FAULTS
from .procs import STOP, Stopped, signal_name
from .protection import protection_mode
from .repro import repro_mode
from .shrink import DEFAULT_BUDGET, shrink_mode
from .trials import RAM_DIR
from .run import run_mode

MODE_HELP = {
    "blackbox": "SIGKILL stress after a random interval, power loss, restart and judge; repeat",
    "whitebox": (
        "kill points inside the engine (odds rotated; some in recovery), or reopen without "
        "a kill; power loss, restart and judge; repeat"
    ),
    "simple": "a short, small mix of blackbox and whitebox iterations (CI, a quick check)",
    "repro": "replay a failed iteration from its artifacts (REPORT_DIR/failures/ID)",
    "mutants": (
        "run simple against each planted bug of tests/mutants.txt: caught or not, time to catch"
    ),
    "compare": (
        "the same run (simple by default) on each engine of --engines, its fault classes kept "
        "to those every engine is served: one table per engine and class"
    ),
    "report": (
        "one self-contained HTML page from report directories (several: trends) or "
        "benchmark JSON"
    ),
    "shrink": (
        "reduce a failed iteration (REPORT_DIR/failures/ID) to the smallest run that still "
        "fails the same way"
    ),
    "protection": (
        "protection-bytes fuzzing: short runs of checked cache-flip patterns at every "
        "width, escape rates per width and pattern against the codes' construction"
    ),
    "clean": (
        "remove the work folders of runs that died (SIGKILL, a crash) and their report "
        "folders' stale locks"
    ),
}
# What every mode's help says about a stop by SIGINT or SIGTERM.
STOPPED = (
    "%d interrupted (SIGINT or SIGTERM before a failure was found: verdict INTERRUPTED)"
    % EXIT_INTERRUPTED
)
FOLDER_RULE = (
    "A report folder belongs to one run: one that a live run holds, or that holds an earlier run's "
    "results, is refused (exit 2)."
)


def positive_int(s):
    try:
        v = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % s)
    if v < 0:
        raise argparse.ArgumentTypeError("%r is negative" % s)
    return v


def bounded(name, parse, ok, message):
    """An argparse type: PARSE the text, then require OK(value)."""

    def check(s):
        v = parse(s)
        if not ok(v):
            raise argparse.ArgumentTypeError(message.replace("{text}", repr(s)))
        return v

    check.__name__ = name
    return check


seed_int = bounded("seed_int", positive_int, lambda v: v < 1 << 64, "{text} does not fit 64 bits")
at_least_one = bounded("at_least_one", positive_int, lambda v: v >= 1, "must be at least 1")


def seconds(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % s)
    if not v >= 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % s)
    return v


at_least_one_second = bounded(
    "at_least_one_second", seconds, lambda v: v >= 1, "must be at least 1 s"
)
positive_seconds = bounded(
    "positive_seconds", seconds, lambda v: v >= 0.5, "must be at least 0.5 s"
)


def powerloss_list(s):
    modes = [m.strip() for m in s.split(",") if m.strip()]
    names = [m for m, _ in POWERLOSS_MODES]
    bad = [m for m in modes if m not in names]
    if bad or not modes:
        raise argparse.ArgumentTypeError("%r: want a comma list of %s" % (s, ", ".join(names)))
    return modes


def shard(s):
    m = re.fullmatch(r"(\d+)/(\d+)", s.strip())
    if not m:
        raise argparse.ArgumentTypeError("%r: want K/N, e.g. 0/4" % s)
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or k >= n:
        raise argparse.ArgumentTypeError("%r: want 0 <= K < N" % s)
    return (k, n)


class HelpFormatter(argparse.HelpFormatter):
    """Each option's default, when it has one worth showing."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=34, width=100)

    def _get_help_string(self, action):
        h = action.help or ""
        d = action.default
        if "default" in h or d is None or d is False or d == [] or d == argparse.SUPPRESS:
            return h
        return h + " (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, "%s: error: %s\n" % (self.prog, message))


class Version(argparse.Action):
    """--version: git describe of the tree (asked only when wanted)."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        ident = build_identity({})
        print(
            "crashtest.py git %s\npython %s"
            % (ident.get("git_describe") or "unknown", ident.get("python"))
        )
        parser.exit(EXIT_PASS)


def make_parser():
    """The parser of every mode: its subparsers in the order --help lists them."""
    fmt = HelpFormatter
    p = Parser(
        prog="crashtest.py",
        description="Nightly crash tests of the engine through build/stress "
        "(docs/architecture.md).  Exit: 0 every iteration passed, 1 a failure, 2 usage, "
        + STOPPED
        + ".  "
        "'crashtest.py MODE --help' lists each mode's options with their defaults.",
        formatter_class=fmt,
    )
    p.add_argument("--version", action=Version, help="git describe of the tree, then exit")
    sub = p.add_subparsers(dest="mode", metavar="MODE", parser_class=Parser)
    for mode in ("blackbox", "whitebox", "simple"):
        add_run_parser(sub, fmt, mode)
    add_repro_parser(sub, fmt)
    add_shrink_parser(sub, fmt)
    add_mutants_parser(sub, fmt)
    add_protection_parser(sub, fmt)
    add_compare_parser(sub, fmt)
    add_report_parser(sub, fmt)
    add_clean_parser(sub, fmt)
    return p


def add_run_parser(sub, fmt, mode):
    """The subparser of one run mode (blackbox, whitebox, simple); returns it."""
    d = MODE_DEFAULTS[mode]
    s = sub.add_parser(
        mode,
        help=MODE_HELP[mode],
        formatter_class=fmt,
        description="%s.  Exit: 0 every iteration passed, 1 a failure, 2 usage (a value stress "
        "rejects too, asked before the first iteration), %s.  %s"
        % (MODE_HELP[mode], STOPPED, FOLDER_RULE),
    )
    add_length_options(s, d)
    add_seed_options(s)
    add_draw_options(s, d)
    add_file_options(s)
    add_watchdog_options(s, d)
    add_shrinking_options(s)
    s.set_defaults(func=run_mode)
    return s


def add_length_options(s, d):
    """The run modes' 'length' group, defaults D of the mode; returns the group."""
    g = s.add_argument_group("length")
    g.add_argument(
        "--duration",
        type=seconds,
        default=d["duration"],
        metavar="S",
        help="start no iteration after S seconds (0: no limit; with --iterations and no "
        "--duration, no limit)",
    )
    g.add_argument(
        "--iterations",
        type=positive_int,
        default=0,
        metavar="N",
        help="iterations per run (0: until --duration)",
    )
    g.add_argument(
        "--interval",
        type=positive_seconds,
        default=d["interval"],
        metavar="S",
        help="blackbox: longest time before the SIGKILL; whitebox: longest run of one stress "
        "process",
    )
    g.add_argument(
        "--max-failures",
        type=positive_int,
        default=10,
        metavar="N",
        help="stop once N iterations failed (0: never)",
    )
    return g


def add_seed_options(s):
    """The run modes' 'seeds and parallelism' group; returns the group."""
    g = s.add_argument_group("seeds and parallelism")
    g.add_argument(
        "--seed",
        type=seed_int,
        default=None,
        metavar="N",
        help="run seed (default: random, printed)",
    )
    g.add_argument(
        "--iteration-seed",
        type=seed_int,
        default=None,
        metavar="N",
        help="run exactly the iteration with this seed, on a fresh database",
    )
    g.add_argument(
        "-j",
        "--jobs",
        type=at_least_one,
        default=1,
        metavar="N",
        help="independent runs in parallel on this machine",
    )
    g.add_argument(
        "--shard",
        type=shard,
        default="0/1",
        metavar="K/N",
        help="run only slice K (0-based) of N of the seed space: runs K, K+N, K+2N ... (one "
        "per -j)",
    )
    return g


def add_draw_options(s, d):
    """The run modes' 'what is drawn' group, defaults D of the mode; returns the group."""
    g = s.add_argument_group("what is drawn")
    g.add_argument(
        "--max-key",
        type=at_least_one,
        default=d["max_key"],
        metavar="N",
        help="key space of stress, fixed for the run",
    )
    g.add_argument(
        "--threads",
        type=positive_int,
        default=0,
        metavar="N",
        help="stress threads (0: drawn per iteration)",
    )
    g.add_argument(
        "--faults",
        default=d["faults"],
        metavar="LIST",
        help="fault classes that may be drawn: all; stable (%s); none; or a comma list of %s"
        % (
            "all but %s, which trip open engine leads" % ", ".join(UNSTABLE_FAULTS)
            if UNSTABLE_FAULTS
            else "all, for now",
            ", ".join(FAULTS),
        ),
    )
    add_engine_options(g)
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="pin a stress option for every iteration (repeatable), e.g. --set sync_mode=commit",
    )
    g.add_argument(
        "--no-swarm",
        action="store_true",
        help="no swarm iterations: every iteration draws the even mix of ops, features and "
        "fault classes (by default half draw a swarm: some op kinds and rare features off, "
        "the others frequent, a key space down to a few keys; crashtest/README.md)",
    )
    g.add_argument(
        "--measure",
        action="store_true",
        help="allow measuring runs: combinations that make a fault class undetectable by design "
        "(checksums off with page faults, w=0 with cache flips, lost writes ...)",
    )
    add_database_draw_options(g, d)
    return g


def add_engine_options(g):
    """The engine under test and how the fault library reaches it, into group G."""
    g.add_argument(
        "--engine",
        choices=ENGINES,
        default=ENGINES[0],
        help="the engine under test: ours, or RocksDB or SQLite through stress's adapters.  The "
        "others have no fault hooks: power loss and SIGKILL through the fault door "
        "(--faults-via posix), no fault classes, no whitebox kill points "
        "(crashtest/README.md, Other engines)",
    )
    g.add_argument(
        "--faults-via",
        choices=("hooks", "posix"),
        default=None,
        help="how the fault library sees the engine's I/O: its hooks (ours only) or the door at "
        "the POSIX boundary (default: hooks for ours, posix for the others; ours through the "
        "door runs --io_backend psync)",
    )


def add_database_draw_options(g, d):
    """How long a database lives and what a crash is judged on, into group G (defaults D)."""
    g.add_argument(
        "--db-iterations",
        type=at_least_one,
        default=d["db_iterations"],
        metavar="N",
        help="iterations on one database before a fresh one (new creation-time options)",
    )
    g.add_argument(
        "--max-variants",
        type=at_least_one,
        default=d["max_variants"],
        metavar="K",
        help="most power-loss states judged per crash",
    )
    g.add_argument(
        "--powerloss-modes",
        type=powerloss_list,
        default=None,
        metavar="LIST",
        help="power-loss modes to draw from: a comma list of rollback, tear, mixed, keep "
        "(default: all that keep the run judgeable; tearing needs checksums and "
        "full-page writes)",
    )


def add_file_options(s):
    """The run modes' 'files and binaries' group; returns the group."""
    g = s.add_argument_group("files and binaries")
    g.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="summary.json, junit.xml, failures/ (default: build/crashtest/MODE-DATE-PID)",
    )
    g.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="databases and iteration scratch (default: a temporary directory, removed)",
    )
    g.add_argument(
        "--keep-artifacts",
        action="store_true",
        help="keep every iteration's directory, not only failed ones",
    )
    g.add_argument(
        "--stress-binary",
        default=None,
        metavar="PATH",
        help="the stress driver (default: build/stress)",
    )
    g.add_argument(
        "--powerloss-binary",
        default=None,
        metavar="PATH",
        help="the power-loss step (default: build/powerloss)",
    )
    return g


def add_watchdog_options(s, d):
    """The run modes' 'watchdog and output' group, defaults D of the mode; returns the group."""
    g = s.add_argument_group("watchdog and output")
    g.add_argument(
        "--hang-seconds",
        type=at_least_one,
        default=d["hang_seconds"],
        metavar="S",
        help="no progress for S seconds is a hang (stress's own watchdog; crashtest's ends the "
        "process min(S, 30) s later)",
    )
    g.add_argument("-v", "--verbose", action="store_true", help="print every command")
    return g


def add_shrinking_options(s):
    """The run modes' 'shrinking' group (--shrink after the run); returns the group."""
    g = s.add_argument_group("shrinking")
    g.add_argument(
        "--shrink",
        action="store_true",
        help="after the run's iterations, shrink each failure it saved (crashtest.py shrink), "
        "within --shrink-budget",
    )
    g.add_argument(
        "--shrink-budget",
        type=seconds,
        default=DEFAULT_BUDGET,
        metavar="S",
        help="seconds for all the shrinking of --shrink (each failure gets what is left)",
    )
    return g


def add_repro_parser(sub, fmt):
    """The subparser of repro; returns it."""
    r = sub.add_parser(
        "repro",
        help=MODE_HELP["repro"],
        formatter_class=fmt,
        description="Replay a failed iteration from its saved artifacts (REPORT_DIR/failures/ID): "
        "the same seeds, options and crashed state; each command is printed.  Exit 1 "
        "when it fails again, 0 when it passes, 2 usage, " + STOPPED + ".",
    )
    r.add_argument("run_dir", metavar="RUN_DIR", help="the failed iteration's folder")
    r.add_argument(
        "--from",
        dest="start",
        choices=["auto", "crashed", "start"],
        default="auto",
        help="replay from the crashed state (after the crash) or from the iteration's start",
    )
    r.add_argument(
        "--stress-binary",
        default=None,
        metavar="PATH",
        help="another stress binary (a fix to try; default: the recorded one)",
    )
    r.add_argument(
        "--powerloss-binary", default=None, metavar="PATH", help="another powerloss binary"
    )
    r.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="where to replay (default: a temporary directory)",
    )
    r.add_argument("--keep", action="store_true", help="keep the replay's directory")
    r.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    r.add_argument(
        "--tries",
        type=int,
        default=None,
        metavar="N",
        help="replay N times and print how many reproduced the failure (default: the folder's "
        "repro_tries: 8 to 24 for a shrunk run with several threads; else 1)",
    )
    r.set_defaults(func=repro_mode)
    return r


def add_shrink_parser(sub, fmt):
    """The subparser of shrink; returns it."""
    k = sub.add_parser(
        "shrink",
        help=MODE_HELP["shrink"],
        formatter_class=fmt,
        description="Reduce a failed iteration to the smallest run that still fails with the same "
        "kind: one thread, fewer ops, fewer fault classes, a fresh small database, "
        "options toward stress's defaults, then delta debugging on its op trace.  "
        "Writes FAILURE_DIR/shrunk/ (repro reads it) and FAILURE_DIR/shrink.json (every "
        "step tried), prints the final command.  A different failure found on the way "
        "is kept in FAILURE_DIR/shrink-aside/.  Exit 0 shrunk, 1 the failure did not "
        "come back, 2 usage, " + STOPPED + ": shrink.json and shrunk/ then hold "
        "the smallest run kept so far.",
    )
    k.add_argument("failure_dir", metavar="FAILURE_DIR", help="the failed iteration's folder")
    k.add_argument(
        "--budget",
        type=seconds,
        default=DEFAULT_BUDGET,
        metavar="S",
        help="seconds for the whole shrinking (no trial starts after it)",
    )
    k.add_argument(
        "--stress-binary",
        default=None,
        metavar="PATH",
        help="another stress binary (default: the recorded one)",
    )
    k.add_argument(
        "--powerloss-binary", default=None, metavar="PATH", help="another powerloss binary"
    )
    k.add_argument(
        "--match",
        choices=["kind", "keys"],
        default="kind",
        help="what fails the same way: the failure's kind (default: then keys too when the "
        "recorded run fails again only with its kind among another's keys, K24), or any failure "
        "whose keys include it (the judge names a failure by its first key: a false_alarm that "
        "comes with a wrong_value is a wrong_value)",
    )
    k.add_argument(
        "--ram-dir",
        default=RAM_DIR,
        metavar="DIR",
        help="a RAM-backed directory (tmpfs) for the trials that are deterministic, where an fsync "
        "costs nothing and their outcome is the same (default: %(default)s when it is a tmpfs "
        "with 2 GiB free; 'none': every trial on the disk of $TMPDIR)",
    )
    k.set_defaults(func=shrink_mode)
    return k


def add_mutants_parser(sub, fmt):
    """The subparser of mutants; returns it."""
    m = sub.add_parser(
        "mutants",
        help=MODE_HELP["mutants"],
        formatter_class=fmt,
        description="For each planted bug of the catalogue (tests/mutants.txt): build "
        "build/mutants/NAME/{stress,powerloss}, run the mode its line names against it "
        "('crashtest.py simple', or 'protection' for the per-KV codes' construction) "
        "until the first failure or the budget, and record caught or not, seconds and "
        "iterations to the first failure, its kind, the fault class blamed and the "
        "repro line in REPORT_DIR/mutants.json.  Prints 'mutation score: K of N caught, "
        "median time to catch T s'.  The bug under way when it is stopped is 'not "
        "judged'.  build/mutants.json is replaced only by a whole, uninterrupted run of "
        "the catalogue.  Exit: 0 every bug caught, "
        "1 one missed, 2 usage, " + STOPPED + ".  " + FOLDER_RULE,
    )
    add_mutants_run_options(m)
    add_mutants_catalogue_options(m)
    m.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="mutants.json, one simple report dir and log per bug (default: "
        "build/crashtest/mutants-DATE-PID; build/mutants.json gets a copy of a whole run)",
    )
    m.add_argument(
        "--shrink",
        action="store_true",
        help="shrink each caught bug's failure (crashtest.py shrink): the reductions go into "
        "mutants.json and a second table of mutants.md",
    )
    m.add_argument(
        "--shrink-budget",
        type=seconds,
        default=DEFAULT_BUDGET,
        metavar="S",
        help="seconds of shrinking per caught bug",
    )
    m.set_defaults(func=mutants_mode)
    return m


def add_mutants_run_options(m):
    """What mutants runs against each planted bug, and for how long, into parser M."""
    m.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="planted bugs to run (default: the whole catalogue)",
    )
    m.add_argument(
        "--budget",
        type=positive_seconds,
        default=300.0,
        metavar="S",
        help="longest simple or protection run per bug (its --duration)",
    )
    m.add_argument(
        "-j", "--jobs", type=at_least_one, default=1, metavar="N", help="simple's -j for each bug"
    )
    m.add_argument(
        "--seed",
        type=seed_int,
        default=None,
        metavar="N",
        help="seed of the whole measurement; each bug's simple seed derives from it and its name "
        "(default: random, printed)",
    )
    m.add_argument(
        "--pick-by-date",
        action="store_true",
        help="run one of the NAMEs (or of the catalogue) chosen by today's UTC date: CI's smoke "
        "check",
    )
    m.add_argument(
        "--simple",
        dest="simple_opts",
        default="",
        metavar="ARGS",
        help="more options for each simple run, one shell-quoted string (e.g. '--faults none')",
    )


def add_mutants_catalogue_options(m):
    """Which planted bugs, where their binaries are built, and --harness's suites, into parser M."""
    m.add_argument(
        "--catalogue", default=MUTANTS_FILE, metavar="FILE", help="the list of planted bugs"
    )
    m.add_argument("--build-dir", default="build", metavar="DIR", help="the Makefile's BUILD")
    m.add_argument(
        "--no-build", action="store_true", help="use the binaries already in BUILD/mutants/"
    )
    m.add_argument(
        "--list",
        action="store_true",
        help="print the catalogues (tests/mutants.txt, tests/harness_mutants.txt): each bug's "
        "name, the guarantee it breaks and the mode that runs it; run nothing",
    )
    m.add_argument(
        "--harness",
        action="store_true",
        help="measure the suites that guard the harness instead: each bug of "
        "tests/harness_mutants.txt built into BUILD/hmutants/NAME and run against them, after a "
        "baseline run against the real harness; a 'harness' table in mutants.md and list in "
        "mutants.json",
    )
    m.add_argument(
        "--suites",
        default=None,
        metavar="LIST",
        help="with --harness: the suites to run, comma-separated (default: crashtest/hmutants.py's "
        "HARNESS_SUITES)",
    )
    m.add_argument(
        "--no-baseline",
        action="store_true",
        help="with --harness: skip the baseline run against the real harness",
    )


def add_compare_parser(sub, fmt):
    """The subparser of compare; returns it."""
    c = sub.add_parser(
        "compare",
        help=MODE_HELP["compare"],
        formatter_class=fmt,
        description=MODE_HELP["compare"] + ": `crashtest.py MODE --engine E` for each, the same "
        "seed, duration and -j, its report folder DIR/E; then DIR/compare.json, "
        "DIR/compare.html and the table on stdout (crashtest/compare.py).  Exit: 0 every run "
        "passed, 1 one failed, 2 usage (nothing run, no folder made), " + STOPPED + ".",
    )
    c.add_argument(
        "--engines",
        required=True,
        metavar="LIST",
        help="a comma list of %s, run in that order" % ", ".join(ENGINES),
    )
    c.add_argument(
        "--mode",
        dest="compare_mode",
        choices=("blackbox", "whitebox", "simple"),
        default="simple",
        help="the run mode of each engine",
    )
    c.add_argument(
        "--duration",
        type=at_least_one_second,
        required=True,
        metavar="S",
        help="seconds of each engine's run (its --duration)",
    )
    c.add_argument("-j", "--jobs", type=at_least_one, default=1, metavar="N", help="each run's -j")
    c.add_argument(
        "--seed",
        type=seed_int,
        default=None,
        metavar="N",
        help="the seed of every engine's run (default: random, printed)",
    )
    c.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="compare.json, compare.html, a report folder per engine (default: "
        "build/crashtest/compare-DATE-PID)",
    )
    c.add_argument(
        "--stress-binary",
        default=None,
        metavar="PATH",
        help="the stress driver (default: build/stress)",
    )
    c.add_argument("--powerloss-binary", default=None, metavar="PATH", help="the power-loss step")
    c.set_defaults(func=compare_mode)
    return c


def add_report_parser(sub, fmt):
    """The subparser of report; returns it."""
    h = sub.add_parser(
        "report",
        help=MODE_HELP["report"],
        formatter_class=fmt,
        description="Write one self-contained HTML page (inline SVG and CSS, no script, no "
        "network) from report directories of crashtest runs (several: a night each, with trends) "
        "or from benchmark JSON (build/bench/*.json, or the folder).  Several report "
        "directories must be of one mode (a trend is one series).  Exit 0, 2 usage, "
        + STOPPED
        + ".",
    )
    h.add_argument(
        "inputs",
        nargs="+",
        metavar="DIR",
        help="report directories, or benchmark JSON files or folders",
    )
    h.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="the page to write (a directory: DIR/report.html)",
    )
    h.set_defaults(func=report_mode)
    return h


def add_clean_parser(sub, fmt):
    """The subparser of clean; returns it."""
    c = sub.add_parser(
        "clean",
        help=MODE_HELP["clean"],
        formatter_class=fmt,
        description="Remove what runs that died (a SIGKILL, a crash) left behind: their temporary "
        "work folders (crashtest-* in $TMPDIR) and the stale lock files of their "
        "report folders (their results are kept).  Only what it can prove dead: a "
        "lock file whose lock no live process holds.  Exit 0, 2 usage, " + STOPPED + ".",
    )
    c.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="a report folder, or a folder of them (default: build/crashtest)",
    )
    c.add_argument(
        "--tmp-dir",
        default=None,
        metavar="DIR",
        help="where work folders are made (default: $TMPDIR)",
    )
    c.set_defaults(func=clean_mode)
    return c


def add_protection_parser(sub, fmt):
    """The subparser of protection; returns it."""
    q = sub.add_parser(
        "protection",
        help=MODE_HELP["protection"],
        formatter_class=fmt,
        description=MODE_HELP["protection"] + " (crashtest/protection.py).  Exit: 0 every escape "
        "within what the construction allows, 1 a failure, 2 usage, "
        + STOPPED
        + ".  "
        + FOLDER_RULE,
    )
    q.add_argument(
        "--duration",
        type=at_least_one_second,
        default=600.0,
        metavar="S",
        help="start no run after S seconds (at least 1; SIGINT stops it sooner)",
    )
    q.add_argument(
        "--widths",
        default="1,2,4,8",
        metavar="LIST",
        help="protection widths, a comma list of 1,2,4,8",
    )
    q.add_argument(
        "--flips-per-width",
        type=at_least_one,
        default=10**9,
        metavar="N",
        help="stop a width once N flips were checked at it (default: no limit)",
    )
    q.add_argument(
        "--run-seconds",
        type=positive_seconds,
        default=15.0,
        metavar="S",
        help="length of one stress run",
    )
    q.add_argument(
        "--keep-going",
        action="store_true",
        help="go on after a failed run (a measurement: every figure, the failures counted)",
    )
    q.add_argument(
        "--seed", type=seed_int, default=None, metavar="N", help="seed (default: random, printed)"
    )
    q.add_argument(
        "--stress-binary",
        default=None,
        metavar="PATH",
        help="the stress driver (default: build/stress)",
    )
    q.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="summary.json, protection.md, failures/ "
        "(default: build/crashtest/protection-DATE-PID)",
    )
    q.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="where the runs' databases live (default: /tmp)",
    )
    q.set_defaults(func=protection_mode)
    return q


def report_mode(a, argv):
    out = a.output
    if os.path.isdir(out):
        out = os.path.join(out, "report.html")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise UsageError(
            "-o %s: no folder %s to write it in" % (a.output, os.path.dirname(os.path.abspath(out)))
        )
    text = render(a.inputs)
    try:
        write_page(out, text)
    except OSError as e:
        raise UsageError("-o %s: cannot write it: %s" % (a.output, e.strerror or e))
    print("crashtest: wrote %s" % out)
    return EXIT_PASS


def clean_mode(a, argv):
    root = a.report_dir or os.path.join(REPO, "build", "crashtest")
    if a.tmp_dir and not os.path.isdir(a.tmp_dir):
        raise UsageError("--tmp-dir %s is not a folder" % a.tmp_dir)
    gone = clean_work_dirs(a.tmp_dir)
    for d in gone:
        print("crashtest: removed %s (its run is dead)" % d)
    unlocked = clean_report_dirs(root)
    for d in unlocked:
        print("crashtest: %s: its run is dead; stale lock removed, results kept" % d)
    print(
        "crashtest: clean: %d work folder(s) removed, %d report folder(s) unlocked"
        % (len(gone), len(unlocked))
    )
    return EXIT_PASS


def on_signal(signum, frame):
    if STOP.is_set():
        # A second ^C: stop now.
        raise KeyboardInterrupt
    STOP.set()
    sys.stderr.write(
        "\ncrashtest: %s: stopping (killing the running processes, writing the reports)\n"
        % signal_name(signum)
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = make_parser()
    a = p.parse_args(argv)
    if not getattr(a, "func", None):
        p.print_help(sys.stderr)
        return EXIT_USAGE
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
    try:
        return a.func(a, argv)
    except UsageError as e:
        sys.stderr.write("crashtest.py: %s\n" % e)
        return EXIT_USAGE
    except (KeyboardInterrupt, Stopped):
        sys.stderr.write("crashtest.py: interrupted\n")
        return EXIT_INTERRUPTED
    except OSError as e:
        sys.stderr.write("crashtest.py: %s\n" % e)
        return EXIT_FAIL
