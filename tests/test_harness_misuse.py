"""crashtest.py under misuse: a report folder belongs to one run, a stop
by SIGINT or SIGTERM is the verdict INTERRUPTED in every artifact, a hard
kill leaves no process running and its work folder to `clean`, values
stress would reject never reach a run, and the commands the harness
prints for a person run.

Each test is short: --faults none, a small key space, one thread, runs of
a few seconds.  The failing folder (stale-value: a get returns the value
a put replaced, found within the first iteration) is made once."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.cli import make_parser  # noqa: E402
from crashtest.common import EXIT_INTERRUPTED  # noqa: E402
from tests.stressrun import need_stress  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
STRESS = os.path.join(ROOT, BUILD, "stress")
POWERLOSS = os.path.join(ROOT, BUILD, "powerloss")
STALE = os.path.join(ROOT, BUILD, "mutants", "stale-value", "stress")
CRASHTEST = os.path.join(ROOT, "crashtest.py")
SMALL = ["--faults", "none", "--max-key", "100", "--threads", "1", "-j", "1", "--interval", "1"]


def with_build(args):
    """ARGS with this build's binaries (BUILD, the sanitizer run's too)
    for the modes that run them, unless ARGS names its own."""
    args = list(args)
    mode = args[0] if args else None
    if "--help" in args or "--list" in args:
        return args
    if mode in ("simple", "blackbox", "whitebox") and "--stress-binary" not in args:
        return [mode, "--stress-binary", STRESS, "--powerloss-binary", POWERLOSS] + args[1:]
    if mode == "protection" and "--stress-binary" not in args:
        return [mode, "--stress-binary", STRESS] + args[1:]
    if mode == "mutants" and "--build-dir" not in args:
        return [mode, "--build-dir", os.path.join(ROOT, BUILD)] + args[1:]
    return args


def run_ct(*args, timeout=300):
    r = subprocess.run(
        [sys.executable, CRASHTEST] + with_build(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=timeout,
        cwd=ROOT,
    )
    return r.returncode, r.stdout, r.stderr


def start_ct(*args):
    return subprocess.Popen(
        [sys.executable, CRASHTEST] + with_build(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        cwd=ROOT,
    )


def read_until(p, pattern, timeout=120):
    """The lines P printed up to the first that matches PATTERN (P is
    killed if none comes within TIMEOUT seconds)."""
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    lines = []
    try:
        for line in p.stdout:
            lines.append(line)
            if re.search(pattern, line):
                return lines
    finally:
        timer.cancel()
    raise AssertionError("no line matching %r:\n%s" % (pattern, "".join(lines)))


def finish(p, timeout=120):
    out, _ = p.communicate(timeout=timeout)
    return p.returncode, out


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def pids_under(path):
    """Processes whose command line names PATH."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if path in cmd:
            out.append(int(pid))
    return out


def make_stale_failure(rd):
    """A report folder with one failed iteration of stale-value: the folder
    of its failure, and what the run printed."""
    rc, out, err = run_ct(
        "blackbox",
        "--iterations",
        "1",
        "--seed",
        "3",
        "--interval",
        "2",
        "--max-key",
        "1000",
        "--faults",
        "none",
        "--threads",
        "1",
        "--stress-binary",
        STALE,
        "--powerloss-binary",
        POWERLOSS,
        "--report-dir",
        rd,
    )
    if rc != 1:
        raise AssertionError("stale-value did not fail: %s%s" % (out, err))
    with open(os.path.join(rd, "summary.json")) as f:
        return json.load(f)["failures"][0]["artifacts"], out


def setUpModule():
    need_stress()  # once: make is slow while others' edits make it rebuild


class Case(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="test-misuse-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def summary(self, rd):
        with open(os.path.join(rd, "summary.json")) as f:
            return json.load(f)


class TestAReportFolderBelongsToOneRun(Case):
    def test_a_live_run_s_folder_and_an_earlier_run_s_folder_are_refused_and_an_interrupted_run_says_so(  # noqa: E501
        self,
    ):
        rd = os.path.join(self.d, "r")
        a = start_ct("simple", "--duration", "60", "--report-dir", rd, *SMALL)
        read_until(a, r"work dir .*; reports in")
        rc, out, err = run_ct("simple", "--iterations", "1", "--report-dir", rd, *SMALL)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("in use by a live run (pid %d)" % a.pid, err)
        a.send_signal(signal.SIGINT)
        rc, out = finish(a)
        self.assertEqual(rc, EXIT_INTERRUPTED, out)
        self.assertNotIn("Traceback", out)
        self.assertIn("crashtest: INTERRUPTED", out)
        # every artifact says INTERRUPTED, none PASS or FAIL
        s = self.summary(rd)
        self.assertEqual(s["verdict"], "INTERRUPTED")
        self.assertTrue(s["interrupted"])
        root = ET.parse(os.path.join(rd, "junit.xml")).getroot()
        self.assertEqual(root.get("errors"), "1")
        errors = [
            (tc.get("name"), e.get("type"))
            for tc in root.iter("testcase")
            for e in tc.findall("error")
        ]
        self.assertEqual(errors, [("simple.interrupted", "interrupted")])
        with open(os.path.join(rd, "report.html")) as f:
            page = f.read()
        self.assertIn('<span class="interrupted" id="verdict">INTERRUPTED</span>', page)
        with open(os.path.join(rd, "log.txt")) as f:
            self.assertEqual(
                len(re.findall(r"crashtest: simple, seed", f.read())), 1, "one run's log"
            )
        # and once it is over, its results are not mixed with another's
        rc, out, err = run_ct("simple", "--iterations", "1", "--report-dir", rd, *SMALL)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("holds an earlier run's results", err)
        self.assertIn("pick another folder or remove it", err)
        self.assertEqual(self.summary(rd), s)


class TestInterruptedIsAVerdict(Case):
    def test_protection_stopped_by_sigterm_is_interrupted(self):
        rd = os.path.join(self.d, "p")
        p = start_ct(
            "protection",
            "--duration",
            "60",
            "--run-seconds",
            "2",
            "--widths",
            "1",
            "--report-dir",
            rd,
        )
        read_until(p, r"^run 0 ")
        p.send_signal(signal.SIGTERM)
        rc, out = finish(p)
        self.assertEqual(rc, EXIT_INTERRUPTED, out)
        self.assertIn("crashtest: protection INTERRUPTED", out)
        self.assertEqual(self.summary(rd)["verdict"], "INTERRUPTED")

    def test_protection_of_no_duration_is_a_usage_error(self):
        rc, out, err = run_ct(
            "protection", "--duration", "0", "--report-dir", os.path.join(self.d, "p")
        )
        self.assertEqual(rc, 2, out + err)
        self.assertFalse(os.path.exists(os.path.join(self.d, "p")))

    def test_every_mode_s_help_names_the_exit_code_of_an_interruption(self):
        modes = make_parser()._subparsers._group_actions[0].choices
        self.assertIn("clean", modes)
        for mode, sub in modes.items():
            self.assertIn(
                "%d interrupted" % EXIT_INTERRUPTED, " ".join(sub.format_help().split()), mode
            )
        rc, out, err = run_ct("simple", "--help")
        self.assertIn("%d interrupted" % EXIT_INTERRUPTED, " ".join(out.split()))

    @unittest.skipUnless(os.path.exists(STALE), "build/mutants/stale-value/stress missing")
    def test_mutants_interrupted_judges_nothing_and_keeps_build_mutants_json(self):
        table = os.path.join(ROOT, BUILD, "mutants.json")
        before = read_bytes(table)
        rd = os.path.join(self.d, "m")
        p = start_ct(
            "mutants",
            "--no-build",
            "--budget",
            "60",
            "--simple",
            "--faults none --max-key 100",
            "--report-dir",
            rd,
            "--seed",
            "1",
            "stale-value",
        )
        read_until(p, r"crashtest: mutants: ")
        t0 = time.monotonic()  # the bug's simple run under way
        while (
            not os.path.exists(os.path.join(rd, "stale-value", "log.txt"))
            and time.monotonic() - t0 < 60
        ):
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        rc, out = finish(p, timeout=300)
        with open(os.path.join(rd, "mutants.json")) as f:
            doc = json.load(f)
        m = doc["mutants"][0]
        if m.get("caught"):
            self.skipTest("stale-value was caught before the SIGINT landed")
        self.assertEqual(rc, EXIT_INTERRUPTED, out)
        self.assertFalse(m["judged"])
        self.assertEqual(doc["verdict"], "INTERRUPTED")
        self.assertEqual(doc["score"]["total"], 0)
        self.assertNotIn("MISSED", out)
        self.assertEqual(read_bytes(table), before)


@unittest.skipUnless(os.path.exists(STALE), "build/mutants/stale-value/stress missing")
class TestAFailure(Case):
    """What a failure leaves: the shrink of it stopped midway, the commands
    it printed."""

    @classmethod
    def setUpClass(cls):
        cls.top = tempfile.mkdtemp(prefix="test-misuse-fail-")
        cls.art, cls.out = make_stale_failure(os.path.join(cls.top, "r"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top, ignore_errors=True)

    def test_shrink_stopped_by_sigterm_writes_the_best_run_so_far(self):
        art = os.path.join(self.d, "f")
        shutil.copytree(self.art, art)
        p = start_ct("shrink", art, "--budget", "120", "--ram-dir", "none")
        read_until(p, r"^shrink: .* kept ")
        p.send_signal(signal.SIGTERM)
        rc, out = finish(p)
        self.assertEqual(rc, EXIT_INTERRUPTED, out)
        self.assertNotIn("Traceback", out)
        with open(os.path.join(art, "shrink.json")) as f:
            doc = json.load(f)
        self.assertTrue(doc["interrupted"])
        self.assertEqual(doc["verdict"], "INTERRUPTED")
        self.assertTrue(os.path.isfile(os.path.join(art, "shrunk", "meta.json")))
        self.assertIn("shrunk", doc["command"])
        rc, out, err = run_ct("repro", os.path.join(art, "shrunk"), "--dry-run")
        self.assertEqual(rc, 0, out + err)

    def test_the_repro_and_rerun_lines_it_printed_run(self):
        repro = re.search(r"^\s+repro: (.*)$", self.out, re.M).group(1)
        rerun = re.search(r"rerun its parameters on a fresh database: (.*)$", self.out, re.M).group(
            1
        )
        self.assertIn("--threads 1", rerun)
        self.assertIn("--powerloss-binary %s" % POWERLOSS, rerun)
        for line in (repro, rerun):
            argv = shlex.split(line)
            self.assertEqual(os.path.abspath(os.path.join(ROOT, argv[0])), CRASHTEST)
            make_parser().parse_args(argv[1:])
        rc, out, err = run_ct(*(shlex.split(repro)[1:] + ["--dry-run"]))
        self.assertEqual(rc, 0, out + err)
        self.assertIn("$ ", out)
        rd = os.path.join(self.d, "again")
        rc, out, err = run_ct(*(shlex.split(rerun)[1:] + ["--report-dir", rd]))
        self.assertIn(rc, (0, 1), out + err)
        self.assertEqual(
            self.summary(rd)["iteration_seed"],
            int(re.search(r"--iteration-seed (\d+)", rerun).group(1)),
        )
        self.assertEqual(self.summary(rd)["options"]["threads"], 1)


class TestAHardKill(Case):
    def test_a_sigkilled_run_leaves_no_process_and_clean_removes_its_work_folder(self):
        rd = os.path.join(self.d, "r")
        p = start_ct("simple", "--duration", "60", "--report-dir", rd, *SMALL)
        work = re.search(r"work dir (\S+);", read_until(p, r"work dir .*; reports in")[-1]).group(1)
        t0 = time.monotonic()
        while (
            not [x for x in pids_under(work + "/bin/") if x != p.pid] and time.monotonic() - t0 < 60
        ):
            time.sleep(0.05)
        self.assertTrue(pids_under(work + "/bin/"), "no stress or powerloss of the run started")
        p.kill()
        p.communicate()
        t0 = time.monotonic()
        while pids_under(work) and time.monotonic() - t0 < 2:
            time.sleep(0.05)
        self.assertEqual(pids_under(work), [], "processes of the killed run still run")
        self.assertTrue(os.path.isdir(work))
        rc, out, err = run_ct("clean", "--report-dir", rd, "--tmp-dir", os.path.dirname(work))
        self.assertEqual(rc, 0, out + err)
        self.assertFalse(os.path.exists(work), out)
        self.assertIn("%s: its run is dead" % rd, out)
        self.assertTrue(
            os.path.isfile(os.path.join(rd, "iterations.jsonl")), "its results are kept"
        )

    def test_clean_leaves_a_live_run_s_work_folder(self):
        p = start_ct(
            "simple", "--duration", "60", "--report-dir", os.path.join(self.d, "r"), *SMALL
        )
        work = re.search(r"work dir (\S+);", read_until(p, r"work dir .*; reports in")[-1]).group(1)
        rc, out, err = run_ct(
            "clean", "--report-dir", os.path.join(self.d, "r"), "--tmp-dir", os.path.dirname(work)
        )
        self.assertEqual(rc, 0, out + err)
        self.assertTrue(os.path.isdir(work), out)
        p.send_signal(signal.SIGINT)
        self.assertEqual(finish(p)[0], EXIT_INTERRUPTED)
        self.assertFalse(os.path.exists(work), "a run removes its own work folder")


class TestBadValuesNeverReachARun(Case):
    def test_values_stress_rejects_are_usage_errors_with_no_report_folder(self):
        cases = [
            (["--threads", "9999"], "--threads: bad value '9999'"),
            (["--max-key", "99999999999"], "--max_key: bad value '99999999999'"),
            (["--faults", "bogus"], "--faults: unknown class 'bogus'"),
            (["--set", "no_such_option=1"], "has no option --no_such_option"),
            (["--set", "threads=0"], "--threads: bad value '0'"),
        ]
        for i, (args, says) in enumerate(cases):
            rd = os.path.join(self.d, "r%d" % i)
            base = [
                "simple",
                "--iterations",
                "1",
                "--report-dir",
                rd,
                "--faults",
                "none",
                "--max-key",
                "100",
            ]
            rc, out, err = run_ct(*(base + args))
            self.assertEqual(rc, 2, args)
            self.assertIn(says, err, args)
            self.assertNotIn("Traceback", err)
            self.assertFalse(os.path.exists(rd), "%s left %s behind" % (args, rd))

    @unittest.skipUnless(os.path.exists(STALE), "build/mutants/stale-value/stress missing")
    def test_mutants_whose_simple_options_stress_rejects_is_a_usage_error(self):
        rd = os.path.join(self.d, "m")
        rc, out, err = run_ct(
            "mutants",
            "--no-build",
            "--simple",
            "--threads 9999 --faults none",
            "--report-dir",
            rd,
            "stale-value",
        )
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--threads: bad value '9999'", err)
        self.assertFalse(os.path.exists(rd))


class TestPrintedCommands(Case):
    def test_mutants_no_build_names_a_make_command_that_exists(self):
        build = os.path.join(self.d, "b")
        rc, out, err = run_ct("mutants", "--no-build", "--build-dir", build, "stale-value")
        self.assertEqual(rc, 2, out + err)
        cmd = shlex.split(re.search(r"'(make [^']*)'", err).group(1))
        r = subprocess.run(
            cmd[:1] + ["-n"] + cmd[1:],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(r.returncode, 0, "%s: %s" % (cmd, r.stderr))

    def test_report_into_a_directory_or_nowhere(self):
        rd = os.path.join(self.d, "r")
        rc, out, err = run_ct("simple", "--iterations", "1", "--report-dir", rd, *SMALL)
        self.assertEqual(rc, 0, out + err)
        pages = os.path.join(self.d, "pages")
        os.makedirs(pages)
        rc, out, err = run_ct("report", rd, "-o", pages)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(os.listdir(pages), ["report.html"])
        rc, out, err = run_ct("report", rd, "-o", os.path.join(self.d, "no", "such", "page.html"))
        self.assertEqual(rc, 2, out + err)
        self.assertNotIn("Errno", err)
        self.assertIn("no folder", err)
        # nights of one series are runs of one mode
        other = os.path.join(self.d, "other")
        os.makedirs(other)
        s = self.summary(rd)
        s["mode"] = "blackbox"
        with open(os.path.join(other, "summary.json"), "w") as f:
            json.dump(s, f)
        rc, out, err = run_ct("report", rd, other, "-o", os.path.join(self.d, "t.html"))
        self.assertEqual(rc, 2, out + err)
        self.assertIn("different modes (blackbox, simple)", err)
        self.assertFalse(os.path.exists(os.path.join(self.d, "t.html")))


class TestMutantsList(unittest.TestCase):
    def test_the_list_names_each_bug_its_guarantee_and_its_mode(self):
        rc, out, err = run_ct("mutants", "--list")
        self.assertEqual(rc, 0, err)
        rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
        for path, cmd in (
            ("mutants.txt", ["crashtest.py", "mutants"]),
            ("harness_mutants.txt", ["crashtest.py", "mutants", "--harness"]),
        ):
            with open(os.path.join(ROOT, "tests", path)) as f:
                bugs = [
                    line.split(None, 2) for line in f if line.strip() and not line.startswith("#")
                ]
            self.assertTrue(bugs)
            for name, guarantee, _ in bugs:
                guarantee, _, mode = guarantee.partition("/")
                mode = mode or ("simple" if path == "mutants.txt" else "suites")
                self.assertEqual(rows[name][1:3], [guarantee, mode], name)
                self.assertEqual(rows[name][3 : 3 + len(cmd)], cmd, name)
        # The bugs of the per-KV codes' construction are hunted by the
        # statistical mode, the others by simple.
        self.assertEqual(rows["kv-no-parity"][2], "protection")
        self.assertEqual(rows["kv-absent-key-unchecked"][2], "simple")


if __name__ == "__main__":
    unittest.main()
