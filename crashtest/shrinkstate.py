"""What a shrink carries from pass to pass (crashtest.py shrink; shrink.py
has the rules K1-K28 and the order of the passes): ShrinkState, the one
object every pass takes, and PassResult, what a pass gives back.

A pass is a function PASS(state, ...) -> PassResult.  It reads the fields
below, runs its trials through state.runner (trials.TrialRunner: a
candidate replayed and judged, kept when it fails the same way), and
changes no attribute the state does not declare.  shrink.new_state
builds the state from a failure folder, and the Shrinker (shrink.py)
runs the passes on it in their order and writes the results; a test
builds one by hand, with a fake runner where a pass can be judged
without running stress."""

import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .cand import is_fresh


@dataclass
class ShrinkState:
    """One shrink's state.  "Set by the Shrinker" fields are set once,
    when shrink.new_state builds the state, or by the Shrinker's
    baseline; the others say who changes them."""

    # ---- the failure and the run's tools (set by the Shrinker) ----
    # the Printer every line of the shrink goes to (output.Printer)
    p: Any = None
    # the failure folder (absolute): meta.json, start/, bin/; shrunk/,
    # shrink.json and shrink-aside/ are written in it
    dir: str = ""
    # the failure folder's meta.json (its steps, seed, history, db_params)
    meta: Dict = field(default_factory=dict)
    # meta.json's failure (kind, step, step_name)
    failure: Dict = field(default_factory=dict)
    # the failure's kind: a trial keeps a change when it fails with it (K1)
    kind: str = ""
    # the start snapshot every trial copies (FAILURE_DIR/start)
    start: str = ""
    # the binaries a trial runs: placeholder (@STRESS@, @POWERLOSS@) -> path
    bin: Dict = field(default_factory=dict)
    # stress's option defaults, from its --help (binary.stress_info)
    defaults: Dict = field(default_factory=dict)
    # the recorded op step's threads (K6's stand-in snapshot)
    recorded_threads: int = 1
    # stress's --hang_seconds of the recorded run (the Executor's watchdog)
    hang: int = 120
    # K14: the ops that grew the recorded run's database (0 for a fresh
    # one; None when meta.json has no db_ops)
    history: Optional[int] = 0
    # the work directory trials run in, and the RAM one deterministic
    # trials run in when it has room (K19; None: none)
    work: Optional[str] = None
    ram: Optional[str] = None
    # the trial machinery (trials.TrialRunner, bound to this state): every
    # trial a pass runs goes through it
    runner: Any = None

    # ---- the budget (set by the Shrinker) ----
    # seconds the whole shrink may take (K4), from t0 (time.monotonic)
    budget: float = 0
    t0: float = field(default_factory=time.monotonic)

    # ---- the run kept so far (changed by the runner's attempt on a keep;
    # put back by the passes that undo a keep: p_values, p_fold_create,
    # the multi-thread path's confirmation and settle) ----
    # the smallest run that fails the same way (cand.Cand)
    best: Any = None
    # its kept trial's result (trials.TrialRunner.run_once), None before
    # the baseline kept one
    best_res: Optional[Dict] = None
    # (step n, candidate, result) of each run kept that is not
    # deterministic (K8, K2; the runner appends, settle steps back along it)
    kept_trials: List[Tuple] = field(default_factory=list)

    # ---- what the trials recorded (changed by the runner) ----
    # shrink.json's steps: one entry per attempt (p_values and
    # p_fold_create mark their own kept ones "undone")
    log: List[Dict] = field(default_factory=list)
    # the different failures kept aside (K1): shrink.json's aside
    aside: List[Dict] = field(default_factory=list)
    # the signatures of the candidates tried (cand.signature)
    tried: Set = field(default_factory=set)
    # K25: the changes (an attempt's WHAT) a trial of which hung or ran
    # out of its step's time
    hung: Any = ()
    # (ops, path): the last attempt's smallest traced try that K10
    # refused as larger (p_threads replays it)
    larger_trace: Optional[Tuple] = None
    # trials run so far (each one's folder is t%04d)
    ntrial: int = 0
    # K12: the state a deterministic create step left, by its argv
    made: Dict = field(default_factory=dict)

    # ---- how a trial is judged (set by the Shrinker's baseline; the
    # multi-thread path sets its own once it keeps a run, K8; by_keys
    # sets the match, K24) ----
    # "kind", or "keys": a trial whose failure keys include the kind
    # fails the same way too (K1, K24)
    match: str = "kind"
    # why the match is by keys when the shrink chose it (K24)
    match_why: Optional[str] = None
    # trials per change when a trial is not deterministic (K2) ...
    runs: int = 3
    # ... of which this many must fail the same way
    need: int = 2
    # ... and this many more once one of them failed (K8)
    more: int = 0
    # K10: the recorded run's size; no kept run that is not deterministic
    # is larger (None: no cap)
    cap: Optional[int] = None

    # ---- the recorded run (set by the Shrinker's baseline) ----
    # the recorded run as a candidate, and its baseline's result (what
    # finish reads when a stop cuts the shrink short)
    orig: Any = None
    base: Optional[Dict] = None
    # the recorded op step's ops (K14's fresh searches search as many)
    orig_ops: Optional[int] = None
    # (the recorded run, its tries' ops) when the baseline kept an earlier
    # step than the recorded one (K8 starts from the recorded steps)
    cut: Optional[Tuple] = None
    # the shrunk run's last step kept on several trials (settle sets it)
    last_kept: Optional[Dict] = None

    # ---- what the passes did, so that each runs as often as its rule
    # says (each changed by the pass named) ----
    # optpass.p_threads / freshpass.one_thread: the seed search ran (once)
    searched: bool = False
    # multipass: the path ran (once, unless again, K23, or resumed, K20)
    multi_tried: bool = False
    # multipass: what K8 kept (threads, ops per thread, key space, seed,
    # rate, its step); shrink.json's "multi"
    multi: Optional[Dict] = None
    # multipass: the state the path started from (K20 goes back to it)
    multi_from: Optional[Dict] = None
    # multipass: the path's candidates judged (their signatures; K20
    # skips them)
    multi_judged: Set = field(default_factory=set)
    # tracepass.smaller_segments ran (once a shrink)
    segments_tried: bool = False
    # tracepass.ids_further and evict_sooner: the power-loss steps each
    # last ran with (again once K22 pinned them)
    ids_tried: Any = None
    cache_tried: Any = None
    # tracepass.p_ddmin: the chunk size delta debugging last reached
    ddmin_size: int = 1 << 62
    # freshpass.p_fresh: the op step's options its seed search last ran
    # with (freshpass.fresh_key), and how many searches it ran
    fresh_searched: Any = None
    fresh_searches: int = 0

    def left(self):
        """Seconds of the budget left (K4; below 0 once it is spent)."""
        return self.budget - (time.monotonic() - self.t0)

    def grown_ops(self, cand):
        """The ops that grew the database CAND starts from: none for a fresh
        one, else the recorded run's earlier iterations' (K14)."""
        return 0 if is_fresh(cand) else self.history or 0

    def size(self, cand, r):
        """The size of CAND's run R: its stress steps' ops and the ops that
        grew its database (K14)."""
        return (r.get("ops_all") or 0) + self.grown_ops(cand)


@dataclass(frozen=True)
class PassResult:
    """What a pass did: KEPT, whether it kept a change; BEST, the candidate
    after it (state.best).  True when it kept one."""

    kept: bool
    best: Any

    def __bool__(self):
        return self.kept


def shrink_pass(fn: Callable) -> Callable:
    """FN(state, ...) made a pass: run on STATE, it returns its PassResult,
    kept by FN's own answer when it gives one (True or False, or the
    PassResult of a pass it ran), else when state.best is another
    candidate than before it ran (a trial kept it)."""

    @functools.wraps(fn)
    def run(state, *args, **kw):
        before = state.best
        got = fn(state, *args, **kw)
        kept = state.best is not before if got is None else bool(got)
        return PassResult(kept, state.best)

    return run
