"""The stress binary and its environment: options and defaults from --help,
the fault point catalogue from --list_fault_points, probes of the option
values it supports, the build identity recorded with every report, and
checks of the binaries and directories a run is given."""

import datetime
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import tempfile
import threading

from .common import REPO, UsageError, sha256_of
from .params import PROBED
from .procs import die_with_parent


def usable_dir(path, what):
    """PATH is (now) a writable directory, or a usage error."""
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".crashtest-probe-")
        probe.close()
    except OSError as e:
        raise UsageError("%s %s: %s" % (what, path, e.strerror or e))


def check_binary(path, what):
    if not path or not os.path.isfile(path):
        hint = " (run make)" if os.path.abspath(path or "").startswith(REPO) else ""
        raise UsageError("%s binary %s not found%s" % (what, path, hint))
    if not os.access(path, os.X_OK):
        raise UsageError("%s binary %s is not executable" % (what, path))


def stress_info(binary, engine_args=()):
    """{'options': {name: default}, 'catalogue': [point, ...]} from the
    binary (the catalogue of the engine ENGINE_ARGS names)."""
    try:
        h = subprocess.run(
            [binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30
        )
        listing = subprocess.run(
            [binary, "--list_fault_points"] + list(engine_args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise UsageError("cannot run %s: %s" % (binary, e))
    if h.returncode != 0:
        raise UsageError(
            "%s --help failed (exit %d): is it the stress driver?" % (binary, h.returncode)
        )
    options = {}
    for line in h.stdout.decode(errors="replace").splitlines():
        m = re.match(r"\s+--([a-z0-9_]+)(=\S*)?\s+(.*)$", line)
        if not m:
            continue
        d = re.search(r"\[default: ([^\]]*)\]\s*$", m.group(3))
        options[m.group(1)] = d.group(1) if d else None
    if "db" not in options or "kill_random_test" not in options:
        raise UsageError(
            "%s does not look like the stress driver (no --db / --kill_random_test in --help)"
            % binary
        )
    catalogue = []
    if listing.returncode == 0:
        for line in listing.stdout.decode(errors="replace").splitlines():
            if line.strip():
                catalogue.append(line.split()[0])
    return {"options": options, "catalogue": catalogue, "engines": engine_versions(binary)}


# stress --promises per binary (by its content) and engine: read once.
_PROMISES = {}


def stress_promises(binary, engine):
    """ENGINE's promise table as BINARY prints it (stress --engine ENGINE
    --promises: rows, door classes, options and their defaults; JSON), read
    once per binary and engine; None from a binary without the option."""
    key = (sha256_of(binary), engine)
    if key not in _PROMISES:
        try:
            r = subprocess.run(
                [binary, "--engine", engine, "--promises"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                timeout=30,
            )
            _PROMISES[key] = json.loads(r.stdout.decode()) if r.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, ValueError):
            _PROMISES[key] = None
    return _PROMISES[key]


def engine_versions(binary):
    """{engine: version} of the other engines' libraries BINARY was built
    against ('engine rocksdb 7.8.3' lines of stress --version); {} from a
    binary that prints none."""
    try:
        r = subprocess.run(
            [binary, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in r.stdout.decode(errors="replace").splitlines():
        m = re.match(r"engine (\S+) (\S+)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def probe_support(binary, workdir, values=PROBED, extra=None):
    """Ask the binary about each (name, value): a tiny, instant run in a
    scratch directory.  Returns {(name, value): (supported, first error
    line, exit code)}.  Only exit 2 (stress's "not supported by this
    engine") makes a value unsupported: a tiny run that fails otherwise
    (a verification failure, a crash) is the engine's failure, which
    leaving the value out of the draw would hide (a planted bug that broke
    per-KV protection once turned every width off this way); the value
    stays in, and the iterations that draw it judge it."""
    results = {}
    # Our engine's smallest files, for speed; another engine's adapter
    # refuses our log's options.
    other = any(x.startswith("--engine=") and x != "--engine=ours" for x in extra or [])
    small = ["--cache_size=1M"] + ([] if other else ["--wal_segment_size=64K"])

    def one(i, name, value):
        d = os.path.join(workdir, "probe-%d" % i)
        os.makedirs(d, exist_ok=True)
        argv = (
            [
                binary,
                "--db=" + os.path.join(d, "db"),
                "--destroy_db_initially=1",
                "--threads=1",
                "--ops_per_thread=1",
                "--max_key=8",
            ]
            + small
            + ["--seed=1", "--%s=%s" % (name, value)]
            + list(extra or [])
        )
        try:
            r = subprocess.run(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=60,
                preexec_fn=die_with_parent(),
            )
            text = r.stdout.decode(errors="replace").strip().splitlines()
            # The first line that says why: not the summary, not a
            # planted bug's banner (every line of a mutant's run opens so).
            why = next(
                (
                    t
                    for t in text
                    if not t.startswith("stress: pass") and "carries the planted bug" not in t
                ),
                "exit %d" % r.returncode,
            )
            results[(name, value)] = (r.returncode != 2, why, r.returncode)
        except (OSError, subprocess.SubprocessError) as e:
            results[(name, value)] = (False, str(e), None)
        shutil.rmtree(d, ignore_errors=True)

    threads = [threading.Thread(target=one, args=(i, n, v)) for i, (n, v) in enumerate(values)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def build_identity(binaries):
    ident = {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }

    def git(*args):
        try:
            r = subprocess.run(
                ["git", "-C", REPO] + list(args),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                timeout=10,
            )
            return r.stdout.decode().strip() if r.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            return None

    ident["git_describe"] = git("describe", "--always", "--dirty", "--tags")
    ident["git_commit"] = git("rev-parse", "HEAD")
    for name, path in binaries.items():
        try:
            st = os.stat(path)
            ident[name] = {
                "path": os.path.abspath(path),
                "sha256": sha256_of(path),
                "mtime": datetime.datetime.fromtimestamp(st.st_mtime).isoformat(timespec="seconds"),
            }
        except OSError:
            ident[name] = {"path": os.path.abspath(path), "sha256": None}
    return ident
