"""One iteration of a run: its draws, its steps (C2) and its record.

An iteration draws its options and its crash plan from its seed, records
its steps as argument templates (Steps) and runs them through an Executor
as they are planned, since the steps after the workload depend on how it
ended:

    [create] -> workload --crashed--> powerloss -> for each variant k:
        variant-k -> verify-vk
                  or recover-vk (a second crash) --crashed--> powerloss-2
                     -> variant-0 -> verify-vkr
    then, one crash in six: lose -> refuse (the lost-file check)

Then it builds the iteration's record and keeps a failure's folder
(crashtest.report) or carries the first variant's state on as the run's
database.  Each function takes what it needs; nothing is nested.
"""

import datetime
import json
import os
import shutil
import subprocess
import time

from .cand import ops_of
from .common import REPO
from .executor import Executor, copy_state, subst, trim_journal
from .output import differs
from .params import (
    DELAY_OPTIONS,
    FAILURE_KEYS,
    FAULT_OPTIONS,
    OUTCOMES,
    draw_db_params,
    draw_iter_params,
    draw_plan,
    draw_swarm,
    swarm_record,
)
from .report import counted, points_of, reached_of, save_failure
from .repro import repro_line
from .seeds import Rng, derive

# Placeholders of the step templates (C2): the state directory and the
# iteration's directory.
STATE_DIR, ITER_DIR = "@STATE@", "@ITER@"

# What the lost-file check removes from a recovered database (engine F3:
# control lost, with data or with only the log left; F4: data lost, or the
# log segment holding the redo point, REDO_SEGMENT, which every log from
# the redo point to the checkpoint record control names must keep).
REDO_SEGMENT = "wal@redo"
LOST_FILE_CHOICES = [["control"], ["data"], ["control", "data"], [REDO_SEGMENT]]


def state_argv(state):
    return [
        "--db=%s/db" % state,
        "--expected_values_dir=%s/exp" % state,
        "--run_dir=%s/run" % state,
    ]


def opt_args(params):
    return ["--%s=%s" % (k, params[k]) for k in sorted(params)]


def sum_totals(reports):
    t = {k: 0 for k in OUTCOMES + FAILURE_KEYS}
    for r in reports:
        for k in t:
            t[k] += int(((r or {}).get("totals") or {}).get(k, 0) or 0)
    return t


class Steps:
    """The steps of one iteration, recorded as templates before they run
    (C2), then run in order by the executor EX until one fails.  COMMON:
    options of every stress step; OPTS: the iteration's options (a step may
    give its own).  After a run, FAILURE and FAIL_N name the failed step."""

    def __init__(self, common, opts):
        self.list = []
        self.common = common
        self.opts = opts
        self.ex = None
        self.executed = 0
        self.failure = None
        self.fail_n = None

    def stress(
        self, name, state, extra, expect, kill_after=None, primary=True, opts=None, time_limit=None
    ):
        n = len(self.list)
        d = "%s/steps/%02d-%s" % (ITER_DIR, n, name)
        argv = (
            ["@STRESS@"]
            + state_argv(state)
            + self.common
            + opt_args(opts if opts is not None else self.opts)
            + ["--report=%s/report.json" % d]
            + extra
        )
        self.list.append(
            {
                "type": "stress",
                "name": name,
                "argv": argv,
                "state": state,
                "dir": d,
                "expect": expect,
                "kill_after": kill_after,
                "primary": primary,
                "time_limit": time_limit,
            }
        )
        return n

    def powerloss(self, name, state, mode, pseed, variants, prefix):
        n = len(self.list)
        d = "%s/steps/%02d-%s" % (ITER_DIR, n, name)
        argv = [
            "@POWERLOSS@",
            state + "/db",
            "--run-dir",
            state + "/run",
            "--seed",
            str(pseed),
            "--variants",
            str(variants),
            "--mode",
            mode,
            "--out-prefix",
            prefix,
        ]
        self.list.append(
            {
                "type": "powerloss",
                "name": name,
                "argv": argv,
                "dir": d,
                "ledger": state + "/run/ledger",
            }
        )
        return n

    def variant(self, k, pl_n, prefix, from_state, to):
        self.list.append(
            {
                "type": "variant",
                "name": "variant-%d" % k,
                "k": k,
                "powerloss_step": pl_n,
                "from_db": "%s%d" % (prefix, k),
                "from_state": from_state,
                "to": to,
            }
        )

    def lose(self, from_state, to, remove):
        self.list.append(
            {"type": "lose", "name": "lose", "from": from_state, "to": to, "remove": remove}
        )

    def execute_pending(self):
        """Run the steps recorded since the last call, up to the first failure."""
        while self.executed < len(self.list) and self.failure is None:
            r = self.ex.run(self.executed, self.list[self.executed])
            if r["failure"]:
                self.failure, self.fail_n = r["failure"], self.executed
            self.executed += 1

    def last_outcome(self):
        return self.ex.results[len(self.list) - 1]["outcome"]

    def last_unpromised(self):
        """1 if the last step's report counted an outcome the engine
        promises nothing for (undetected_unpromised)."""
        r = self.ex.results[len(self.list) - 1] or {}
        classes = (r.get("report") or {}).get("classes") or {}
        return any(
            int((v or {}).get("undetected_unpromised", 0) or 0) > 0 for v in classes.values()
        )

    def last_reported(self):
        """1 if the last step's report counted corruption reports: it
        judged (and settled) the injections that explain damage still on
        disk, which the next process would meet again with nothing left
        to blame it on."""
        r = self.ex.results[len(self.list) - 1] or {}
        return int((r.get("report") or {}).get("reports", 0) or 0) > 0

    def last_by_design(self):
        """The last step's report says the database did not come back, by
        design (an injection explains it: the oracle's V8), or None."""
        r = self.ex.results[len(self.list) - 1] or {}
        return (r.get("report") or {}).get("unrecoverable_by_design")


def run_iteration(ct, run, index, seed):
    """Iteration INDEX of RUN (crashtest.run.Run) with SEED: draw it, plan
    and run its steps, keep its failure or carry its state on, and hand
    its record to CT.finish."""
    a = ct.a
    t0 = time.monotonic()
    started = datetime.datetime.now().isoformat(timespec="seconds")
    iter_dir = os.path.join(run.dir, "iter-%d" % index)
    shutil.rmtree(iter_dir, ignore_errors=True)
    os.makedirs(iter_dir)
    if run.fresh or run.db_age >= a.db_iterations:
        shutil.rmtree(run.state, ignore_errors=True)
        run.fresh = True
    fresh = run.fresh
    if fresh:
        new_database(ct, run, seed)
    db = run.db_params
    params, notes, merged, plan = draw_iteration(ct, seed, db)
    reopen = swarm_reopen(ct, seed, plan)
    swarm = swarm_record(
        draw_swarm(seed, ct.cfg), merged, run.max_key, plan.get("reopen") or reopen
    )
    st = Steps(["--max_key=%d" % run.max_key, "--hang_seconds=%d" % a.hang_seconds], merged)
    w = plan_workload(st, run, seed, plan, fresh, db, iter_dir, a.hang_seconds, reopen)

    # Steps after the workload are planned once it ended: a crash needs
    # the power-loss step and a restart per variant.
    env = {"@STATE@": run.state, "@ITER@": iter_dir}
    env.update(ct.bin)
    st.ex = Executor(env, a.hang_seconds, log=ct.p.line, echo=a.verbose)
    crashed_after, primary_state = None, None
    st.execute_pending()
    if st.failure is None and st.ex.results[w]["outcome"] == "crashed":
        crashed_after = w
        primary_state = after_crash(st, seed, plan, verify_options(merged), a.hang_seconds + 120)
    elapsed = time.monotonic() - t0

    results = [st.ex.results.get(i) for i in range(len(st.list))]
    primary = counted_reports(st.list, results)
    record = make_record(
        ct, run, index, seed, started, plan, db, params, notes, st, results, primary, elapsed
    )
    record["swarm"] = swarm
    record["ops"] = iteration_ops(st.list, results, st.ex.env)
    conclude(ct, run, iter_dir, record, st, primary, crashed_after, primary_state)
    ct.finish(record, run)


def new_database(ct, run, seed):
    """A fresh database for RUN: creation-time options and key space
    drawn from SEED (C3: the key space is the expected state's size, so
    a swarm's tiny one is the database's for its life)."""
    run.db_params = draw_db_params(seed, ct.cfg)
    sw = draw_swarm(seed, ct.cfg)
    run.max_key = sw["max_key"] if sw else ct.a.max_key
    run.db_id += 1
    run.db_age = 0
    run.db_ops = 0
    run.history = []
    ct.p.line(
        "run %d: new database %d (iteration seed %d): %s%s"
        % (
            run.index,
            run.db_id,
            seed,
            " ".join(differs(run.db_params, {})) or "defaults",
            " max_key=%d (swarm)" % run.max_key if run.max_key != ct.a.max_key else "",
        )
    )


def swarm_reopen(ct, seed, plan):
    """The reopens the iteration's swarm adds to its workload (0: none;
    the plan's own reopen run keeps its count, and a binary without
    --reopen gets none)."""
    sw = draw_swarm(seed, ct.cfg)
    if not sw or plan.get("reopen") or not ct.cfg.known("reopen"):
        return 0
    return sw["reopen"]


def draw_iteration(ct, seed, db):
    """The iteration's own options and the sanitizer's notes, those merged
    with the database's DB, and the crash plan: (params, notes, merged,
    plan).  Kill mode 2 (checkpoint and control points) needs checkpoints."""
    a, cfg = ct.a, ct.cfg
    params, notes = draw_iter_params(seed, cfg, db)
    merged = dict(db)
    merged.update(params)
    plan = draw_plan(
        seed,
        ct.mode,
        a.interval,
        merged,
        ct.catalogue,
        a.measure,
        a.max_variants,
        a.powerloss_modes,
        cfg.promises,
    )
    if (
        plan["kind"] == "whitebox"
        and plan["kill_mode"] == 2
        and not int(merged.get("checkpoint_one_in", 0))
        and "checkpoint_one_in" not in cfg.pinned
    ):
        params["checkpoint_one_in"] = Rng(derive(seed, "ckpt")).choice([100, 500, 2000])
        merged["checkpoint_one_in"] = params["checkpoint_one_in"]
    return params, notes, merged, plan


def verify_options(merged):
    """A restart's options: the restart injects nothing, it judges what was
    injected (and delays nothing: its recovery runs on one thread)."""
    verify_opts = dict(merged)
    for k in list(FAULT_OPTIONS) + list(DELAY_OPTIONS):
        verify_opts.pop(k, None)
    return verify_opts


def plan_workload(st, run, seed, plan, fresh, db, iter_dir, hang_seconds, reopen=0):
    """Record the steps up to the crash (the database's creation when
    FRESH, then the workload the PLAN asks for, with REOPEN reopens of a
    swarm) and take the start snapshot: what repro needs when the failure
    comes before the crash.  Returns the workload's step number."""
    if fresh:
        create_opts = dict(db)
        st.stress(
            "create",
            STATE_DIR,
            [
                "--destroy_db_initially=1",
                "--threads=1",
                "--ops_per_thread=200",
                "--seed=%d" % derive(seed, "create"),
            ],
            "exit0",
            opts=create_opts,
        )
    else:
        trim_journal(run.state)
    if os.path.isdir(run.state):
        copy_state(run.state, os.path.join(iter_dir, "start"), journal=False)
    else:
        os.makedirs(os.path.join(iter_dir, "start"))
    wseed = "--seed=%d" % derive(seed, "workload")
    dur = plan["duration"]
    limit = dur + hang_seconds + 60
    if plan["kind"] == "blackbox":
        # stress spreads its reopens over --duration, and the SIGKILL comes
        # long before its end: as many more as bring REOPEN before the kill.
        more = (
            ["--reopen=%d" % min(64 * reopen, round(reopen * dur / max(plan["kill_at"], 0.5)))]
            if reopen
            else []
        )
        return st.stress(
            "workload",
            STATE_DIR,
            ["--ops_per_thread=0", "--duration=%d" % dur, "--sync_fault_injection=1", wseed] + more,
            "sigkill",
            kill_after=plan["kill_at"],
            time_limit=limit,
        )
    if plan.get("reopen"):
        return st.stress(
            "workload",
            STATE_DIR,
            ["--ops_per_thread=0", "--duration=%d" % dur, "--reopen=%d" % plan["reopen"], wseed],
            "exit0",
            time_limit=limit,
        )
    extra = [
        "--ops_per_thread=0",
        "--duration=%d" % dur,
        "--sync_fault_injection=1",
        "--kill_random_test=%d" % plan["kill_random_test"],
        wseed,
    ]
    if plan.get("kill_points"):
        extra.append("--kill_points=%s" % plan["kill_points"])
    if reopen:
        extra.append("--reopen=%d" % reopen)
    return st.stress("workload", STATE_DIR, extra, "kill_point", time_limit=limit)


def after_crash(st, seed, plan, verify_opts, limit):
    """The workload crashed: plan and run the power-loss step, a restart per
    variant (the first perhaps crashed again during recovery) and the
    lost-file check.  LIMIT: a restart's time limit.  Returns the state
    that carries on (the first variant's, after any second crash), or None
    when a step failed before it was judged."""
    primary_state, came_back = None, False
    pl = st.powerloss(
        "powerloss",
        STATE_DIR,
        plan["powerloss_mode"],
        plan["powerloss_seed"],
        plan["variants"],
        ITER_DIR + "/pl/db.",
    )
    for k in range(plan["variants"]):
        to = "%s/v%d" % (ITER_DIR, k)
        st.variant(k, pl, ITER_DIR + "/pl/db.", STATE_DIR, to)
        second = plan.get("second_crash") if k == 0 else None
        plan_restart(st, k, to, second, seed, verify_opts, limit)
        st.execute_pending()
        if st.failure is not None:
            break
        if second and st.last_outcome() == "crashed":
            unpromised = verify_opts.get("engine", "ours") != "ours" and st.last_unpromised()
            if unpromised or st.last_reported():
                # The restart finished its judgment before its crash came
                # and settled the lines that explain what it met: another
                # engine's loss it promises nothing for (the expected
                # state still holds the lost commit durable), or damage
                # it reported (a misdirected write's landing block, still
                # on disk).  A second crash's restart would meet the same
                # with nothing left to blame it on.  The iteration ends
                # here and its database with it (conclude, door_damage).
                break
            to2 = after_second_crash(st, k, to, second, seed, verify_opts, limit)
            if st.failure is not None:
                break
            if k == 0:
                primary_state, came_back = to2, not st.last_by_design()
        elif k == 0:
            primary_state, came_back = to, not st.last_by_design()
    # A database that did not come back by design (a flipped control file)
    # has no recovered state whose lost files could be refused.
    lost_file_check(st, seed, primary_state if came_back else None, verify_opts, limit)
    return primary_state


# The log sweep (stress --wal_sweep, docs/crashtest.md): half the plain
# restarts after a crash first flip bits of the log records their recovery
# will replay, one at a time, in a copy of the database, and the engine's
# read-only recovery must refuse each.  Our engine's: another has no such
# window.
WAL_SWEEP_TRIALS = [8, 32]


def wal_sweep_args(seed, name, verify_opts):
    """The log sweep's argument for the restart step NAME, drawn from its
    own stream (no other draw moves), or none."""
    if verify_opts.get("engine", "ours") != "ours":
        return []
    r = Rng(derive(seed, "wal sweep", name))
    if not r.chance(0.5):
        return []
    return ["--wal_sweep=%d" % r.choice(WAL_SWEEP_TRIALS)]


def plan_restart(st, k, to, second, seed, verify_opts, limit):
    """Record the restart of variant K in TO: a plain verification, or with
    the SECOND crash of the plan (a kill point of recovery, or a SIGKILL
    soon after the start)."""
    vseed = "--seed=%d" % derive(seed, "verify", k)
    if second and second["how"] == "kill_point":
        st.stress(
            "recover-v%d" % k,
            to,
            [
                "--verification_only=1",
                "--sync_fault_injection=1",
                "--kill_random_test=%d" % second["kill_random_test"],
                "--kill_points=%s" % second["kill_points"],
                vseed,
            ],
            "kill_point",
            primary=True,
            opts=verify_opts,
            time_limit=limit,
        )
    elif second:
        st.stress(
            "recover-v%d" % k,
            to,
            ["--verification_only=1", "--sync_fault_injection=1", vseed],
            "sigkill_or_exit0",
            kill_after=second["after"],
            primary=True,
            opts=verify_opts,
            time_limit=limit,
        )
    else:
        st.stress(
            "verify-v%d" % k,
            to,
            ["--verification_only=1", vseed] + wal_sweep_args(seed, "verify-v%d" % k, verify_opts),
            "exit0",
            primary=(k == 0),
            opts=verify_opts,
            time_limit=limit,
        )


def after_second_crash(st, k, to, second, seed, verify_opts, limit):
    """The restart of variant K crashed: one more power-loss step, then the
    final restart; run them.  Returns the final restart's state."""
    pl2 = st.powerloss(
        "powerloss-2",
        to,
        second["powerloss_mode"],
        second["powerloss_seed"],
        1,
        ITER_DIR + "/pl2/db.",
    )
    to2 = "%s/v%dr" % (ITER_DIR, k)
    st.variant(0, pl2, ITER_DIR + "/pl2/db.", to, to2)
    st.stress(
        "verify-v%dr" % k,
        to2,
        ["--verification_only=1", "--seed=%d" % derive(seed, "verify2")]
        + wal_sweep_args(seed, "verify-v%dr" % k, verify_opts),
        "exit0",
        primary=True,
        opts=verify_opts,
        time_limit=limit,
    )
    st.execute_pending()
    return to2


def engine_tool_of(stress):
    """The engine-tool beside the stress binary STRESS, else the
    repository's build's; None when neither exists."""
    for d in (os.path.dirname(stress), os.path.join(REPO, "build")):
        tool = os.path.join(d, "engine-tool")
        if os.access(tool, os.X_OK):
            return tool
    return None


def redo_segment(db, stress):
    """The log segment holding the redo point of the closed database DB
    ("wal/" + its name), read by `engine-tool stat`, which opens it
    read-only and changes nothing; None when it cannot tell (no tool, no
    open, no such file)."""
    tool = engine_tool_of(stress)
    if not tool:
        return None
    try:
        p = subprocess.run([tool, "stat", db], capture_output=True, timeout=120)
        j = json.loads(p.stdout.decode(errors="replace") or "null")
        redo = int(j["recovery"]["redo_lsn"])
        size = int(j["options"]["wal_segment_size"])
    except (OSError, subprocess.SubprocessError, ValueError, TypeError, KeyError):
        return None
    rel = "wal/%016x" % (redo & ~(size - 1))
    return rel if p.returncode == 0 and os.path.isfile(os.path.join(db, rel)) else None


def lost_files(remove, state, env):
    """The files of REMOVE (LOST_FILE_CHOICES) as paths in STATE (a
    template of ENV), REDO_SEGMENT named by redo_segment: the plan keeps
    concrete names, so a replay removes what the run removed.  None when
    REDO_SEGMENT cannot be named."""
    out = []
    for r in remove:
        if r == REDO_SEGMENT:
            r = redo_segment(os.path.join(subst(state, env), "db"), env.get("@STRESS@", ""))
            if r is None:
                return None
        out.append("db/" + r)
    return out


def lost_file_check(st, seed, primary_state, verify_opts, limit):
    """The lost-file check (engine F1-F5): one crash in six, the recovered
    state (PRIMARY_STATE; None when the restart did not come back) with a
    file of the database removed must be refused, not opened as if nothing
    were missing.  Our engine's files only: another engine
    names its files otherwise, and whether it refuses a database with one
    missing is its own promise."""
    lrng = Rng(derive(seed, "lose"))
    ours = verify_opts.get("engine", "ours") == "ours"
    if st.failure is None and primary_state is not None and lrng.chance(1.0 / 6) and ours:
        remove = lost_files(lrng.choice(LOST_FILE_CHOICES), primary_state, st.ex.env)
        if remove is None:
            return
        st.lose(primary_state, ITER_DIR + "/lost", remove)
        st.stress(
            "refuse",
            ITER_DIR + "/lost",
            ["--verification_only=1", "--seed=%d" % derive(seed, "refuse")],
            "refused",
            primary=False,
            opts=verify_opts,
            time_limit=limit,
        )
        st.execute_pending()


def counted_reports(steps, results):
    """The reports that count in the iteration's totals: the primary
    stress steps' (the judged line of states) and a failed extra
    variant's (crashtest.report.counted)."""
    out = []
    for st, r in zip(steps, results):
        if counted(st, r):
            out.append(r["report"])
    return out


def iteration_ops(steps, results, env):
    """The ops the iteration's primary stress steps did (a killed step's
    from its progress note): what it added to its database's history.  A
    failure on a grown database was made by its earlier iterations too, so
    a shrink counts them in the recorded run's size (meta.json db_ops)."""
    return sum(
        ops_of(r, subst(s["state"], env)) or 0
        for s, r in zip(steps, results)
        if r and s["type"] == "stress" and s.get("primary")
    )


def history_entry(record, steps):
    """What a later failure on this database keeps of a passed iteration
    (meta.json history, K15): its seed, kind and ops, and its workload's
    step template, so that a shrink can grow a fresh database the way
    this one was grown (one thread, as many ops, the same options and
    faults)."""
    w = next((s for s in steps if s["type"] == "stress" and s["name"] == "workload"), None)
    return {
        "index": record["index"],
        "seed": record["seed"],
        "kind": record["kind"],
        "ops": record["ops"],
        "workload": {k: w[k] for k in ("argv", "state", "dir", "expect")} if w else None,
    }


def make_record(
    ct, run, index, seed, started, plan, db, params, notes, st, results, primary, elapsed
):
    """The iteration's record: iterations.jsonl's line, summary.json's entry."""
    steps = st.list
    totals = sum_totals(primary)
    mode_names = sorted({(r or {}).get("mode") for r in primary if r and r.get("mode")})
    rid = "r%d-i%d-%d" % (run.index, index, seed)
    record = {
        "id": rid,
        "run": run.index,
        "run_seed": run.seed,
        "index": index,
        "seed": seed,
        "mode": ct.mode,
        "started": started,
        "kind": plan["kind"] + ("" if plan["kind"] == "blackbox" else "/" + plan["kill_mode_name"]),
        "db": run.db_id,
        "db_age": run.db_age,
        "db_ops": run.db_ops,
        "db_params": db,
        "params": params,
        "sanitizer_notes": notes,
        "plan": plan,
        "steps": [dict(s, result=r) for s, r in zip(steps, results)],
        "verdict": "fail" if st.failure else "pass",
        "failure": None,
        "elapsed": round(elapsed, 3),
        "totals": totals,
        "judging_mode": "/".join(mode_names) or None,
        "points": points_of([r.get("report") for r in results if r and r.get("report")]),
        "points_reached": reached_of([r.get("report") for r in results if r and r.get("report")]),
        # Restarts that did not come back, explained by an earlier
        # injection (the oracle's V8): counted apart, never a pass in
        # disguise, so a rising count shows.
        "by_design": [
            r["report"]["unrecoverable_by_design"]
            for s, r in zip(steps, results)
            if r
            and s["type"] == "stress"
            and (r.get("report") or {}).get("unrecoverable_by_design")
        ],
    }
    if st.failure:
        record["failure"] = dict(st.failure, step=st.fail_n, step_name=steps[st.fail_n]["name"])
    return record


def door_damage(a, report):
    """1 if stress REPORT judged damage the door put on another engine's
    files (bitflip_page, zero_page: faults/doordisk.c; bitflip_inflight:
    a write's flip stays on disk, a read's may be copied there by a
    checkpoint), or counted anything the engine promises nothing for
    (undetected_unpromised: a synced commit lost, a wrong value kept).
    Neither V4b (no such damage is ever called present) nor a report says
    the damage is gone, where the engine promises nothing (SQLite)
    nothing ever reports it, and the expected state cannot be rewound
    below a commit it holds durable: the next process, which does not
    judge those lines, would meet it as a failure of its own."""
    if getattr(a, "engine", "ours") == "ours":
        return False
    classes = report.get("classes") or {}
    return any(
        int((classes.get(c) or {}).get("injected", 0) or 0) > 0
        for c in ("bitflip_page", "zero_page", "bitflip_inflight")
    ) or any(int((v or {}).get("undetected_unpromised", 0) or 0) > 0 for v in classes.values())


def conclude(ct, run, iter_dir, record, st, primary, crashed_after, primary_state):
    """Keep, promote or clean up: a failure moves to REPORT/failures/ID and
    the run starts a fresh database; a pass carries PRIMARY_STATE on as
    the run's state and removes the iteration's folder (unless
    --keep-artifacts)."""
    a = ct.a
    if st.failure:
        run.failures += 1
        run.fresh = True
        dest = save_failure(ct, run, iter_dir, record["id"], record, crashed_after, st.ex)
        record["artifacts"] = dest
        record["repro"] = repro_line(dest)
        return
    run.db_age += 1
    run.db_ops += record["ops"]
    run.history.append(history_entry(record, st.list))
    run.fresh = False
    if primary_state is not None:
        # The first variant (after any second crash) carries on.
        new_state = subst(primary_state, st.ex.env)
        if a.keep_artifacts:
            os.rename(run.state, os.path.join(iter_dir, "crashed"))
            shutil.copytree(new_state, run.state, symlinks=True)
        else:
            old = run.state + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(run.state, old)
            os.rename(new_state, run.state)
            shutil.rmtree(old, ignore_errors=True)
    for r in primary:
        # Damage at rest would be a false alarm for the next process,
        # which does not judge the lines its injections were judged by:
        # reported damage, and damage the oracle called unrecoverable by
        # design (a misdirected write's stale block, V6b, reports nothing).
        if (
            r.get("unrecoverable")
            or r.get("unrecoverable_by_design")
            or int(r.get("reports", 0) or 0) > 0
            or door_damage(a, r)
        ):
            run.fresh = True
    if not a.keep_artifacts:
        shutil.rmtree(iter_dir, ignore_errors=True)
    else:
        record["artifacts"] = iter_dir
