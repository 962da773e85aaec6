/*
 * stress_int.h -- what the stress driver's files share (internal to
 * stress/): the driver's state, the worker, and each file's functions
 * that the others call.
 *
 *   stress.c    main: parse, set up the run directory, open, run the
 *               workers, crash at the end, settle, verify, report
 *   workload.c  the workers: randomness, keys and values, operations,
 *               snapshots, scans, batches in doubt; opening and reopening
 *               the handle
 *   check.c     the E3 check of answers, failures as printed, the
 *               post-open check
 *   run_dir.c   the run directory's files (stress_state, reports,
 *               observations; their lines are oracle/report_line.h's)
 *   report.c    the verdict, the report, the watchdog
 *   options.c   the command line (stress.h)
 *   trace.c     the op trace (--trace_ops) and its replay (--replay_ops)
 *   sweep.c     the log sweep (--wal_sweep) before an open after a crash
 *
 * The engine is reached only through the adapter (adapter.h): no file
 * here but adapter_engine.c includes engine.h.
 */
#ifndef STRESS_STRESS_INT_H
#define STRESS_STRESS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <xxhash.h>

#include "adapter.h"
#include "common/keys.h"
#include "common/rng.h"
#include "faults/faults.h"
#include "oracle/expected.h"
#include "oracle/verdict.h"
#include "scan_history.h"
#include "stress.h"

/* Exit codes (docs/architecture.md, One stress process). */
enum { EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_INFRA = 3 };

enum op_type {
    OP_GET,
    OP_PUT,
    OP_DEL,
    OP_BATCH,
    OP_SCAN,
    OP_CHECKPOINT,
    OP_VERIFY,
    OP_REOPEN,
    OP_SNAPSHOT,
    OP_VACUUM,
    OP_RESTART, /* never drawn: a replay's (trace.c) */
    OP_ABORTED,
    OP_TYPES
};
extern const char *const st_op_names[OP_TYPES]; /* report.c: the report's "ops" keys */

#define MAX_BATCH    8
#define MAX_SCAN     32
#define MAX_DETAILED 10 /* failures printed in full; the rest are counted */

#define SNAP_KEYS         8
#define ST_SMALL_FILES    16     /* small files hashed at the first open ... */
#define ST_SMALL_FILE_MAX 65536u /* ... of at most this many bytes */

typedef struct st_driver st_driver;

/* The sizes of the values of (key, value seed): the options', or those the
 * expected state was written with (stress.c value_params). */
typedef struct st_value_sizes {
    uint64_t vmin, vmax;              /* an ordinary value */
    uint64_t large_one_in, large_max; /* one in LARGE_ONE_IN is large (0: none), up to LARGE_MAX */
} st_value_sizes;

/* A thread that calls the engine: a worker, or the main thread's stand-in
 * for the open at start and the settlement.  Its driver travels with it
 * (D): a worker thread's start argument is its worker. */
/* A phase of the workload (--phase_ops): the run's op mix narrowed for a
 * stretch of ops.  An order of rare operations (reads that set hints right
 * after a checkpoint, then writes to the same pages) is as rare as the
 * product of their shares in one even mix; phases that each run a few
 * kinds on a few pages make it one phase after another. */
typedef struct st_phase {
    uint64_t index;                  /* the phase drawn (op index / phase_ops); UINT64_MAX: none yet */
    uint64_t read, write, del, iter; /* shares of 100, as the options' (batches: the rest) */
    uint64_t checkpoint_one_in, snapshot_one_in, vacuum_one_in;
    uint64_t max_key; /* keys of the phase: [0, max_key) */
} st_phase;

typedef struct worker {
    st_driver *d;
    int id;
    pthread_t th;
    uint64_t rng;
    uint64_t calls;        /* call number within this process (S4) */
    _Atomic uint64_t done; /* workload ops done */
    XXH3_state_t *hash;
    uint8_t *vbuf; /* MAX_BATCH values of the largest size */
    st_buf rbuf;
    uint64_t wrote; /* writes since the last durable note */
    /* A held snapshot (at most one): SNAP_N consecutive keys from SNAP_KEY
     * and the value seeds they held when it was taken (0: absent); keys
     * in doubt then are not judged (snap_known).  Released by reopen. */
    st_snap *snap;
    uint64_t snap_seq, snap_until, snap_key;
    int snap_n;
    uint32_t snap_v[SNAP_KEYS];
    uint8_t snap_known[SNAP_KEYS];
    /* What the current op did, for its line of the op trace (trace.c). */
    char tnote[512];
    size_t tnote_len;
    /* The engine's checkpoint count after this worker's last traced op, and
     * the handle epoch it was read in (UINT64_MAX: none), for the next op's
     * ckpt=N without a second stats call. */
    uint64_t ck_after, ck_epoch;
    st_phase phase; /* the mix of the current phase (--phase_ops; workload.c) */
} worker;

/* One op of an op trace (trace.c; docs/formats.md, Op trace). */
enum { PIN_NONE, PIN_PAGE, PIN_CACHE };
typedef struct st_trace_op {
    uint64_t index;
    int type; /* enum op_type */
    int has_key;
    uint64_t key;
    uint64_t seed; /* the op's own seed: workload and fault draws */
    int faults_off;
    int pinned; /* FAULTS flip:BLOCK:BIT (PIN_PAGE) or cflip:BLOCK:BIT (PIN_CACHE): a flip of that block on
                 * disk or in its cached frame before the op, faults off during it; PIN_NONE otherwise */
    uint64_t pin_block, pin_bit;
    char *kill_point;  /* FAULTS kill:POINT:N: killed at POINT's Nth arrival during the op, faults on */
    uint64_t kill_nth; /* (kill_point is owned by the replay list; NULL otherwise) */
    char *open_opts;   /* a restart's KEY "name=value,...": the open options of the process it stands for,
                        * over the command line's (st_apply_open_list); owned like kill_point, or NULL */
} st_trace_op;

/* The op trace written (--trace_ops) and the one replayed (--replay_ops):
 * trace.c's, filled by st_trace_open, one per driver (st_driver.trace). */
typedef struct st_trace {
    const char *path; /* --trace_ops (messages) */
    int fd;           /* the trace written, or -1 */
    int head_out;     /* a head is written, its note not yet */
    char *map;        /* the file's shared mapping, CAP bytes; USED of them lines */
    size_t cap, used;
    int replaying; /* --replay_ops was given */
    st_trace_op *replay;
    size_t nreplay;
    int pins_kill;
    unsigned pins_flip; /* 1 << PIN_PAGE, 1 << PIN_CACHE: kinds some op pins */
} st_trace;

/* The ledger's `region` of each injection st_judge fed the judge, by its
 * index there ("" none): where on-disk damage landed (faults/place.h),
 * for the report's `regions` (report.c). */
typedef struct st_regions {
    char (*name)[24];
    size_t n, cap;
} st_regions;

/* The driver's state: one per process, main's (stress.c), handed to
 * whatever needs it: as an argument, through a worker (worker.d), as a
 * thread's start argument or the engine's on_corruption_ctx. */
/* The log sweep's counts (sweep.c). */
typedef struct st_sweep {
    uint64_t trials, zeroed, detected, swallowed; /* zeroed: trials that zeroed a sector */
    int broken;                                   /* a flip could not be undone: no more trials */
    char skipped[96];                             /* why none was made, when so */
} st_sweep;

struct st_driver {
    st_options o;
    char repro[8192]; /* the exact command line, shell-quoted */
    char exp_dir[4096], run_dir[4096];
    const st_engine *E;
    st_open_options eo;
    st_db *db;
    pthread_rwlock_t handle; /* S3 */
    _Atomic uint64_t handle_epoch;
    orc_state *exp;
    flt_ctx *flt;
    uint64_t epoch;                      /* this process's number among the run's processes */
    size_t ledger_settled, ledger_start; /* lines: judged before; present at our start */
    int crashed_before;                  /* the previous process did not finish */
    int crash_check;                     /* enum vd_crash_check: the open after a crash (or at start) */
    _Atomic int recovering;              /* reports now are V8's: 1 the open at start (after a crash)
                                  * and its check, 2 a reopen and its check, 0 other */
    int reopen_failed;                   /* a reopen of this process's handle did not open */
    int measuring;                       /* wrong values are measured, not failures
                                  * (docs/oracle.md, rule V6) */
    vd_config vc;                        /* what the options make of each fault class */
    st_value_sizes values;               /* as the expected state keeps them */
    _Atomic uint64_t *stripe_ver;
    _Atomic uint64_t *stripe_seq; /* the commit sequence of the stripe's last settled write
                                   * (stored before stripe_ver counts it) */
    unsigned nstripes;
    _Atomic int stop;
    _Atomic int unrecoverable; /* the engine cannot open the database any more */
    _Atomic uint64_t symptoms; /* wrong answers seen, counted failures or not (V6b) */
    _Atomic int infra;         /* infrastructure error: exit 3 */
    pthread_mutex_t mu;        /* reports, observations, failure printing */
    vd_report *reports;
    size_t nreports, capreports;
    vd_observation *obs;
    size_t nobs, capobs;
    int reports_fd, obs_fd;
    struct doubt {
        uint64_t key[MAX_BATCH];
        uint32_t old_v[MAX_BATCH], new_v[MAX_BATCH];
        /* Each key's answer, fixed when it was first resolved: 0 not yet,
         * 1 old, 2 new, 3 tells nothing (a delete of an absent key).  A
         * key resolved at one reopen may be written again before the last
         * one of its batch resolves, so later values are not its answer. */
        uint8_t seen[MAX_BATCH];
        int n, thread, status;
        uint64_t op;
    } * doubt;
    size_t ndoubt, capdoubt; /* failed batches: all or nothing once resolved */
    _Atomic uint64_t detections;
    _Atomic uint64_t ops[OP_TYPES];
    _Atomic uint64_t verified, ambiguous, unverifiable;
    _Atomic uint64_t batches_cut; /* batches a crash cut, judged all or nothing */
    _Atomic uint64_t failures;
    uint64_t detailed;
    worker *w;
    double t0;
    double work_s;         /* seconds of the workload phase */
    uint64_t reopens_done; /* scheduled reopens so far (thread 0 only) */
    uint64_t *damage;      /* V4b: ledger seqs of damage still on disk after the final */
    size_t ndamage;        /* verify of the closed files (flt_damage_present) */
    int final_verified;    /* that verify ran: every block was read from disk */
    /* V4b for flips of a whole small file (the control file at a crash):
     * each small top-level file's hash as this process's first open found
     * it, which that open read (st_note_small_files). */
    struct {
        char name[64];
        uint64_t hash;
    } small[ST_SMALL_FILES];
    int nsmall, small_noted;
    st_trace trace;         /* --trace_ops, --replay_ops */
    st_regions regions;     /* of the last judgement (report.c) */
    st_sweep sweep;         /* --wal_sweep's trials (sweep.c) */
    _Atomic int watch_stop; /* the watchdog ends (report.c) */
    _Atomic int working;    /* the workload's ops have begun: a kill point before
                             * (in the open's recovery) leaves RUN_DIR/progress as it was */
    /* The run state as this process found it (stress_state), put back
     * when a usage error is found after it was marked unclean. */
    struct {
        int had, clean;
        uint64_t epoch;
        size_t settled;
    } prev_state;
    char crash_msg[9000]; /* what the crash handler prints (repro included) */
    size_t crash_len;
};

/* workload.c */
void st_check_doubts(worker *w, int after_crash);
/* The batches of two or more keys a crash cut mid-call (the in-flight
 * slots of the expected state, E4), each a doubt st_check_doubts judges:
 * all its keys old or all new. */
void st_doubt_batches_cut_by_crash(st_driver *d);
void st_note_error(worker *w, int st);
double st_now(void);
int st_open_db(worker *w);
/* Before this process's first open: D->small gets the hash of every
 * regular top-level file of the database of at most ST_SMALL_FILE_MAX
 * bytes (report.c). */
void st_note_small_files(st_driver *d);
/* 1 if another ledger line of V at injection K's file and block found
 * there what K's flip made (its pre hash is K's post): a second flip of
 * the same bit undid K (report.c). */
int st_flip_undone(vd_ctx *v, size_t k);
void st_release_snapshots(st_driver *d);
int st_value_is(const st_value_sizes *sz, uint64_t key, uint32_t v, const uint8_t *buf, size_t len);
void *st_worker_main(void *arg);

/* check.c.  W is the calling thread's worker, never NULL: its driver
 * (w->d) holds the expected state, the handle and the counters. */
int st_check_answer(worker *w, uint64_t key, int st, const uint8_t *buf, size_t len, orc_entry a, orc_entry b,
                    int ambiguous, int after_crash, const char *what);
void st_fail_key(worker *w, int kind, uint64_t key, orc_entry a, orc_entry b, int found, const uint8_t *buf, size_t len,
                 const char *what, int after_crash);
int st_post_open_check(worker *w, int after_crash, const char *what);
void st_settle_durable(orc_state *exp, uint64_t seq);
uint64_t st_verify_all(worker *w, int after_crash, const char *what);
void st_scan_disorder(worker *w, uint64_t key, uint64_t prev, const char *how, const char *what, int after_crash);
/* st_scan_history_broken's pair of K (scan_history.h) as wrong_value:
 * a failure, or a symptom where the verdict decides (as st_scan_disorder). */
void st_check_scan_history(worker *w, const st_scan_key *k, size_t n);
void st_get_every_key(worker *w, const char *what);
int st_read_everything(worker *w, const char *what);

/* stress.c: the kill points the run's engine offers (its own catalogue,
 * or the door's for an engine reached through it). */
size_t st_point_count(const st_driver *d);
const char *st_point_name(const st_driver *d, size_t i);
const char *st_point_what(const st_driver *d, size_t i);

/* run_dir.c.  The files of RUN_DIR take its name alone; what feeds the
 * verdict (observations, reports) takes the driver, whose lists and
 * descriptors they append to under D->mu. */
uint64_t st_injections_so_far(flt_ctx *flt); /* 0 without a fault library */
size_t st_ledger_lines(const char *run_dir);
int st_load_carried(const char *run_dir, vd_ctx *v);
void st_observe(st_driver *d, int kind, int thread, uint64_t op, int status, uint64_t key, int after_crash);
void st_on_corruption(void *ctx, const st_corruption *r); /* CTX: the st_driver (on_corruption_ctx) */
void st_path_in(char *out, size_t cap, const char *dir, const char *name);
int st_read_state(const char *run_dir, uint64_t *epoch, size_t *settled, int *clean);
int st_write_state(const char *run_dir, uint64_t epoch, size_t settled, int clean);
void st_write_progress(const char *run_dir, uint64_t ops);

/* stress.c: the engine's open options of O, reporting corruption to D
 * (D->eo is the command line's; a restart with options of its own opens
 * with others, workload.c). */
void st_open_options_from(const st_options *o, st_driver *d, st_open_options *eo);

/* trace.c.  st_trace_open fills T from O: it reads all of --replay_ops
 * (a bad line: exit 2 before anything is written) and creates
 * --trace_ops; returns -1 to go on, else an exit code (a message was
 * printed).  Every other call takes the T it filled. */
int st_trace_open(st_trace *t, const st_options *o);
int st_tracing(const st_trace *t);   /* --trace_ops is being written */
int st_replaying(const st_trace *t); /* the workload is --replay_ops's list */
size_t st_replay_count(const st_trace *t);
const st_trace_op *st_replay_at(const st_trace *t, size_t i); /* NULL past the end */
uint64_t st_trace_seed(uint64_t seed, uint64_t index);        /* a traced op's seed: f(--seed, its index) */
/* An op's line: its head before the op runs, its note (what it did, the
 * ledger lines it added) after; a kill in between leaves the head. */
void st_trace_head(st_trace *t, const st_trace_op *op);
void st_trace_note(st_trace *t, const char *note, uint64_t injected);
/* A kill point fires in the op whose head is out: its note names where
 * (killed=POINT:N, what kill:POINT:N replays).  Nothing without a head. */
void st_trace_killed(st_trace *t, const char *point, uint64_t nth);
/* Some op of --replay_ops is kill:POINT:N; pins a flip of KIND (PIN_PAGE,
 * PIN_CACHE). */
int st_replay_pins_kill(const st_trace *t);
int st_replay_pins_flip(const st_trace *t, int kind);
void st_trace_close(st_trace *t);

/* report.c.  The watchdog's thread takes its driver as its start
 * argument and runs until D->watch_stop is set. */
vd_ctx *st_judge(st_driver *d, vd_result *res, uint64_t *trace_hash);
uint64_t st_total_done(const st_driver *d);
void *st_watchdog_main(void *arg);
void st_write_report(st_driver *d, const vd_result *res, vd_ctx *v, uint64_t trace_hash, int hang);

/* sweep.c.  st_wal_sweep makes its trials on a copy of D's database
 * (nothing in the database changes) when --wal_sweep is set and the run
 * follows a crash; st_sweep_judged adds their outcomes to RES. */
void st_wal_sweep(st_driver *d);
void st_sweep_judged(const st_driver *d, vd_result *res);

/* stress.c.  Remove P and everything under it. */
void st_rm_rf(const char *p);

#endif
