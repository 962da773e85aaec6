"""The passes of a shrink (crashtest.py shrink) that start the run from a
fresh database: the run's grown database replaced by a step that creates
one (K5, K14), and that create step's ops reduced (p_create).  shrink.py
has the rules and their order; these are the Shrinker's methods
(FreshPasses is one of its bases) and use what its __init__ and Trials
set (best, best_res, meta, hang, history, orig_ops, attempt, search,
left)."""

from .cand import as_int, is_fresh, opt_get, opt_set
from .procs import STOP
from .seeds import derive
from .steps import opt_args, state_argv

# The op mix of a create step made of batches only (p_create): the rest of
# 100 after these is batches.
CREATE_MIX = ("readpercent", "writepercent", "delpercent", "iterpercent")


class FreshPasses:
    fresh_searched = False  # p_fresh's seed search ran (once)

    def p_fresh(self):
        """K14: a fresh database instead of the one the run had grown.  The
        run as it is first.  A trace recorded on the grown database reads
        and deletes keys a fresh one never had, and a failure that rests
        on where the log ends moves with every op the create step adds,
        so then, once the run has one thread, its op step untraced from a
        fresh database with its own seed and others (K6's search), as
        many ops as the recorded op step did: a failure the grown
        database was made to show by its earlier iterations is shown from
        nothing."""
        if is_fresh(self.best):
            return
        if self.attempt("a fresh database instead of the one the run had grown", self.freshened(self.best),
                        "fresh"):
            return
        if self.fresh_searched or as_int(opt_get(self.best.op["argv"], "threads"), 2) != 1 or \
                self.left() <= 0 or STOP.is_set():
            return
        self.fresh_searched = True
        c = self.best.copy()
        c.trace = None
        c.op["argv"] = opt_set(opt_set(c.op["argv"], "replay_ops", None), "trace_ops", None)
        ops = max(self.orig_ops or 0, as_int(opt_get(c.op["argv"], "ops_per_thread")))
        self.search(self.freshened(c), ops, phase="fresh", what="a fresh database, ")

    def p_create(self):
        """The ops of a step before the op step that creates the database
        (a create step: one thread, a fixed count): one op, then 1/128 of
        them, 1/64 ... 1/2, 3/4, 7/8, the first that still fails the same
        way kept.  They count in the run's size like the op step's (the
        last two: a failure that needs more than half of a create step of
        200 kept all 200, and a run of 2,029 ops whose op step shrank to 3
        ended at 203: seal-before-witness, seventh session).  Then the same
        counts of what is left as batches only: a create step's reads and
        scans change nothing on disk, and a batch of 2-8 keys writes what
        as many puts would (eighth session: checkpoint-skips-data-fsync
        kept 150 of 200 ops behind an op step of 10, 160 ops from 445;
        as 10 batches it fails the same way; redo-skips-second-action, 175
        behind 3, as 25 batches)."""
        first = self.best.steps[0]
        if self.best.w == 0 or first["type"] != "stress" or not is_fresh(self.best) or \
                opt_get(first["argv"], "duration") or as_int(opt_get(first["argv"], "threads"), 1) != 1:
            return
        self.create_counts("create step's ops %d -> %d", [])
        if as_int(opt_get(self.best.steps[0]["argv"], "writepercent"), 30) != 0:
            self.create_counts("create step's ops %d -> %d batches", [(k, 0) for k in CREATE_MIX])

    def create_counts(self, what, mix):
        """p_create's counts of the create step's ops, with its op mix
        options MIX [(name, value)] set; the first that fails kept."""
        n = as_int(opt_get(self.best.steps[0]["argv"], "ops_per_thread"), 10000)
        tries = sorted({1} | {n >> k for k in range(7, 0, -1) if 1 < n >> k} | {n - (n >> 2), n - (n >> 3)})
        for m in tries:
            if m >= n or self.left() <= 0 or STOP.is_set():
                continue
            c = self.best.copy()
            argv = opt_set(c.steps[0]["argv"], "ops_per_thread", m)
            for k, v in mix:
                argv = opt_set(argv, k, v)
            c.steps[0] = dict(c.steps[0], argv=argv)
            if self.attempt(what % (n, m), c, "create"):
                return

    def freshened(self, cand):
        """CAND starting from an empty directory: a create step (the run's
        database options, 200 ops, one thread) first (K5)."""
        c = cand.copy()
        db = self.meta.get("db_params") or {}
        seed = self.meta["seed"]
        common = ["--max_key=%s" % opt_get(c.op["argv"], "max_key"), "--hang_seconds=%d" % self.hang]
        create = {"type": "stress", "name": "create", "state": "@STATE@", "dir": "@ITER@/steps/create",
                  "argv": ["@STRESS@"] + state_argv("@STATE@") + common + opt_args(db) +
                  ["--report=@ITER@/steps/create/report.json", "--destroy_db_initially=1", "--threads=1",
                   "--ops_per_thread=200", "--seed=%d" % derive(seed, "create")],
                  "expect": "exit0", "kill_after": None, "primary": True, "time_limit": None}
        c.steps.insert(0, create)
        c.want.insert(0, "passed")
        for s in c.steps:
            if s["type"] == "variant":
                s["powerloss_step"] += 1
        c.w += 1
        c.fresh = True
        return c
