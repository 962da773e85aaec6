"""crashtest.py compare: the same run on several engines, one table.

For each engine of --engines, in turn, `crashtest.py MODE --engine E`
runs as a child process with the same seed, duration and -j, its fault
classes kept to the common set: the classes every listed engine can be
served (its promise table's door list, `stress --engine E --promises`;
our engine through its hooks is served every class).  Each run keeps its
own report folder, DIR/E (summary.json, failures/ with their repro
lines, log.txt); the compare reads each summary.json and writes
DIR/compare.json, DIR/compare.html and the table on stdout.

Exit: 0 every run passed, 1 one failed (its report folder says which
iteration and why), 2 usage (checked before any folder is made; also a
run that refused its own options), 130 interrupted."""

import datetime
import os
import sys

from .binary import build_identity, check_binary, stress_promises
from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    EXIT_USAGE,
    INTERRUPTED,
    REPO,
    UsageError,
    nice_path,
    write_json,
)
from .folders import claim_report_dir, release
from .htmlcharts import esc, page
from .htmlreport import write_page
from .mutants import read_summary, run_mutant
from .params import ENGINES, FAULTS, FAILURE_KEYS, MODE_DEFAULTS, OUTCOMES, UNSTABLE_FAULTS
from .procs import STOP

# The rows every engine has besides the drawn classes: the crash itself,
# and the failures no report counted.
CRASH_ROWS = ["power_loss", "kill", "unattributed"]
KEYS = OUTCOMES + FAILURE_KEYS
# The text table's columns: (key, heading).
COLUMNS = [
    ("injected", "inj"),
    ("detected", "det"),
    ("repaired", "rep"),
    ("masked", "mask"),
    ("undetected_unpromised", "unprom"),
    ("unrecoverable_by_design", "bydes"),
    ("wrong_value", "wrong"),
    ("lost", "lost"),
    ("resurrected", "resur"),
    ("unrecoverable", "unrec"),
    ("false_alarm", "false"),
    ("swallowed", "swal"),
    ("crash", "crash"),
    ("hang", "hang"),
]


def parse_engines(text):
    """--engines: a comma list of distinct known engines."""
    names = [e.strip() for e in (text or "").split(",") if e.strip()]
    bad = [e for e in names if e not in ENGINES]
    if bad or not names:
        raise UsageError(
            "--engines %r: want a comma list of %s%s"
            % (text, ", ".join(ENGINES), " (unknown: %s)" % ", ".join(bad) if bad else "")
        )
    if len(set(names)) != len(names):
        raise UsageError("--engines %r: an engine is named twice" % text)
    return names


def mode_classes(mode):
    """The classes MODE draws by default (simple: stable; the others: all)."""
    if MODE_DEFAULTS[mode]["faults"] == "stable":
        return [c for c in FAULTS if c not in UNSTABLE_FAULTS]
    return list(FAULTS)


def common_classes(stress, engines, mode):
    """The fault classes of MODE every engine of ENGINES is served, in
    FAULTS' order, and {engine: its served classes}."""
    served = {}
    for e in engines:
        classes = mode_classes(mode)
        if e != "ours":
            door = (stress_promises(stress, e) or {}).get("door") or []
            classes = [c for c in classes if c in door]
        served[e] = classes
    common = [c for c in FAULTS if all(c in served[e] for e in engines)]
    return common, served


def run_cmd(a, engine, classes, report_dir):
    """The child run of ENGINE: crashtest.py MODE with the compare's seed,
    duration and -j, the common CLASSES."""
    cmd = [
        sys.executable,
        os.path.join(REPO, "crashtest.py"),
        a.run_mode,
        "--engine",
        engine,
        "--duration",
        "%g" % a.duration,
        "-j",
        str(a.jobs),
        "--seed",
        str(a.seed),
        "--faults",
        ",".join(classes),
        "--report-dir",
        report_dir,
        "--stress-binary",
        a.stress_binary,
    ]
    if a.powerloss_binary:
        cmd += ["--powerloss-binary", a.powerloss_binary]
    return cmd


def engine_table(summary, classes):
    """{class: {key: n}} of one run's summary.json: the common CLASSES and
    the crash rows, and any other row with a count (nothing hidden)."""
    rows = summary.get("classes") or {}
    out = {}
    for c in list(classes) + CRASH_ROWS + sorted(rows):
        row = rows.get(c) or {}
        if c in out or (c not in classes and c not in CRASH_ROWS and not any(row.values())):
            continue
        out[c] = {k: int(row.get(k, 0) or 0) for k in KEYS}
        out[c]["failures"] = sum(out[c][k] for k in FAILURE_KEYS)
    return out


def run_record(engine, rd, rc, summary):
    """compare.json's `runs` entry of ENGINE's run (report folder RD, exit RC)."""
    verdict = summary.get("verdict")
    if verdict is None:
        verdict = "usage" if rc == EXIT_USAGE else "error"
    return {
        "report_dir": nice_path(rd),
        "exit": rc,
        "verdict": verdict,
        "iterations": summary.get("iterations_total", 0),
        "failed": summary.get("failed", 0),
        "seed": summary.get("seed"),
        "engine": engine,
    }


def text_table(doc):
    """The plain-text table of compare.json's DOC."""
    head = "%-8s %-18s" % ("engine", "class") + "".join(" %6s" % h for _, h in COLUMNS)
    lines = [head, "-" * len(head)]
    for e in doc["engines"]:
        for c, row in doc["table"].get(e, {}).items():
            lines.append("%-8s %-18s" % (e, c) + "".join(" %6d" % row[k] for k, _ in COLUMNS))
    lines.append("")
    for e in doc["engines"]:
        r = doc["runs"][e]
        lines.append(
            "%-8s %s: %d iterations, %d failed (%s)"
            % (e, r["verdict"], r["iterations"], r["failed"], r["report_dir"])
        )
    return "\n".join(lines)


def html_table(doc):
    """compare.html: the table of DOC as one static page."""
    head = "".join("<th>%s</th>" % esc(k) for k, _ in COLUMNS)
    rows = []
    for e in doc["engines"]:
        for c, row in doc["table"].get(e, {}).items():
            cells = "".join('<td class="num">%d</td>' % row[k] for k, _ in COLUMNS)
            rows.append("<tr><td>%s</td><td>%s</td>%s</tr>" % (esc(e), esc(c), cells))
    runs = "".join(
        "<tr><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td></tr>"
        % (esc(e), esc(r["verdict"]), r["iterations"], r["failed"], esc(r["report_dir"]))
        for e, r in ((e, doc["runs"][e]) for e in doc["engines"])
    )
    body = (
        "<h1>crashtest compare</h1><p>mode %s, seed %s, %g s per engine, commit %s, %s; "
        "common fault classes: %s</p>"
        "<table><tr><th>engine</th><th>class</th>%s</tr>%s</table>"
        "<h2>Runs</h2><table><tr><th>engine</th><th>verdict</th><th>iterations</th>"
        "<th>failed</th><th>report folder</th></tr>%s</table>"
        % (
            esc(doc["mode"]),
            esc(doc["seed"]),
            doc["duration_s"],
            esc(doc["commit"]),
            esc(doc["date"]),
            esc(", ".join(doc["classes"]) or "none"),
            head,
            "".join(rows),
            runs,
        )
    )
    return page("crashtest compare", body)


def check_args(a):
    """Every usage error before anything is made: returns (engines, the
    common classes)."""
    engines = parse_engines(a.engines)
    if a.stress_binary is None:
        a.stress_binary = os.path.join(REPO, "build", "stress")
    a.stress_binary = os.path.abspath(a.stress_binary)
    check_binary(a.stress_binary, "stress")
    if a.powerloss_binary is not None:
        a.powerloss_binary = os.path.abspath(a.powerloss_binary)
        check_binary(a.powerloss_binary, "powerloss")
    common, served = common_classes(a.stress_binary, engines, a.run_mode)
    if not common:
        raise UsageError(
            "--engines %s: no fault class is served to every engine (%s)"
            % (
                ",".join(engines),
                "; ".join("%s: %s" % (e, ", ".join(served[e]) or "none") for e in engines),
            )
        )
    if a.report_dir is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        a.report_dir = os.path.join(
            REPO, "build", "crashtest", "compare-%s-%d" % (stamp, os.getpid())
        )
    if os.path.exists(os.path.join(a.report_dir, "compare.json")):
        raise UsageError(
            "--report-dir %s holds an earlier compare (compare.json): pick another folder"
            % nice_path(a.report_dir)
        )
    return engines, common


def run_engines(a, engines, common, p=print):
    """Each engine's run in turn: ({engine: table}, {engine: run record});
    stops after a run that was a usage error or at an interruption."""
    table, runs = {}, {}
    for e in engines:
        if STOP.is_set():
            break
        rd = os.path.join(a.report_dir, e)
        cmd = run_cmd(a, e, common, rd)
        p("compare: %s: %s" % (e, " ".join(cmd[1:])))
        log = os.path.join(a.report_dir, "%s-output.txt" % e)
        rc = run_mutant(cmd, log, a.duration)
        summary = read_summary(rd)
        table[e] = engine_table(summary, common)
        runs[e] = run_record(e, rd, rc, summary)
        p("compare: %s: %s (exit %s)" % (e, runs[e]["verdict"], rc))
        if rc == EXIT_USAGE:
            p("compare: %s refused its options: %s" % (e, last_line(log)))
            break
    return table, runs


def last_line(path):
    """The last line of the text file PATH ('' when none is read)."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def compare_mode(a, argv):
    a.run_mode = a.compare_mode
    engines, common = check_args(a)
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    print(
        "compare: seed %d, engines %s, classes %s" % (a.seed, ",".join(engines), ",".join(common))
    )
    claim_report_dir(a.report_dir)
    try:
        table, runs = run_engines(a, engines, common)
        doc = {
            "tool": "crashtest.py compare",
            "engines": [e for e in engines if e in runs],
            "engines_asked": engines,
            "mode": a.run_mode,
            "seed": a.seed,
            "duration_s": a.duration,
            "jobs": a.jobs,
            "commit": build_identity({}).get("git_describe"),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "classes": common,
            "table": table,
            "runs": runs,
        }
        rcs = [r["exit"] for r in runs.values()]
        doc["verdict"] = (
            "fail"
            if any(r["verdict"] != "pass" and r["exit"] != EXIT_INTERRUPTED for r in runs.values())
            else INTERRUPTED
            if STOP.is_set() or len(runs) < len(engines)
            else "pass"
        )
        write_json(os.path.join(a.report_dir, "compare.json"), doc)
        write_page(os.path.join(a.report_dir, "compare.html"), html_table(doc))
        print(text_table(doc))
        print("compare: %s (%s)" % (doc["verdict"], nice_path(a.report_dir)))
    finally:
        release(a.report_dir)
    if EXIT_USAGE in rcs:
        return EXIT_USAGE
    if doc["verdict"] == "fail":
        return EXIT_FAIL
    return EXIT_INTERRUPTED if doc["verdict"] == INTERRUPTED else EXIT_PASS
