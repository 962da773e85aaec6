/*
 * stress.c -- the db_stress-like driver (DESIGN 6, issue 5): N threads run
 * a weighted mix of gets, puts, deletes, batches and range scans over the
 * key space [0, max_key) while the fault library injects; every answer is
 * checked against the expected state (oracle/expected.h) and, at the end,
 * every injected fault gets a verdict (oracle/verdict.h).
 *
 * The engine is reached only through the adapter (adapter.h).
 *
 * Life of a run:
 *
 *   parse options --(bad)--> exit 2, nothing written
 *        |
 *   open expected state, fault library (when asked), engine (recovery)
 *        |
 *   post-open check: R = recovered seq; R < durable -> lost;
 *        orc_rewind(R); every key exactly as expected (pending: either,
 *        then resolved); orc_checkpoint_trace(R)
 *        |
 *   workers ----(write fails, handle poisoned)----> reopen: close, open,
 *        |                                           post-open check
 *   settlement: faults paused, verify every page and log record, read
 *        every key, close, verify the closed files block by block,
 *        verdict (ledger + reports + observations), report
 *
 * Invariants the driver keeps:
 *   S1  a key's expected entry changes only under its stripe lock, and a
 *       write holds the stripes of all its keys (in stripe order) from
 *       mark_pending to settle, so the expected state stays exact
 *   S2  a key left pending by a failed write is never written again
 *       before a reopen resolves it (a second pending value would hide
 *       the first, which the engine may still show)
 *   S3  workers hold the handle lock shared for each operation; reopen
 *       takes it exclusively, so it never runs under a live call
 *   S4  fault-library op numbers are (process epoch << 32 | call number):
 *       unique across the processes sharing one ledger, so an error
 *       injected in a call is matched to that call's result only
 *
 * Files in the run directory (besides the fault library's ledger and
 * journal): reports (corruption reports, one JSON line each),
 * observations (errors returned and failures seen), stress_state (epoch,
 * ledger lines already judged, whether the last run ended cleanly).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "adapter.h"
#include "faults/faults.h"
#include "oracle/expected.h"
#include "oracle/report_line.h"
#include "oracle/verdict.h"
#include "stress.h"

/* Exit codes (DESIGN 6). */
enum { EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_INFRA = 3 };

enum op_type { OP_GET, OP_PUT, OP_DEL, OP_BATCH, OP_SCAN, OP_CHECKPOINT, OP_VERIFY, OP_REOPEN, OP_SNAPSHOT,
               OP_VACUUM, OP_ABORTED, OP_TYPES };
static const char *op_names[OP_TYPES] = {"get", "put", "delete", "batch", "scan", "checkpoint", "verify", "reopen",
                                         "snapshot", "vacuum", "aborted"};

#define MAX_BATCH 8
#define MAX_SCAN 32
#define MAX_DETAILED 10 /* failures printed in full; the rest are counted */

#define SNAP_KEYS 8

typedef struct worker {
    int id;
    pthread_t th;
    uint64_t rng;
    uint64_t calls;              /* call number within this process (S4) */
    _Atomic uint64_t done;       /* workload ops done */
    XXH3_state_t *hash;
    uint8_t *vbuf;               /* MAX_BATCH values of the largest size */
    st_buf rbuf;
    uint64_t wrote;              /* writes since the last durable note */
    /* A held snapshot (at most one): SNAP_N consecutive keys from SNAP_KEY
     * and the value seeds they held when it was taken (0: absent); keys
     * in doubt then are not judged (snap_known).  Released by reopen. */
    st_snap *snap;
    uint64_t snap_seq, snap_until, snap_key;
    int snap_n;
    uint32_t snap_v[SNAP_KEYS];
    uint8_t snap_known[SNAP_KEYS];
} worker;

static struct {
    st_options o;
    char repro[8192];            /* the exact command line, shell-quoted */
    char exp_dir[4096], run_dir[4096];
    const st_engine *E;
    st_open_options eo;
    st_db *db;
    pthread_rwlock_t handle;     /* S3 */
    _Atomic uint64_t handle_epoch;
    orc_state *exp;
    flt_ctx *flt;
    uint64_t epoch;              /* this process's number among the run's processes */
    size_t ledger_settled, ledger_start; /* lines: judged before; present at our start */
    int crashed_before;          /* the previous process did not finish */
    int crash_check;             /* enum vd_crash_check: the open after a crash (or at start) */
    _Atomic int recovering;      /* reports now are V8's: 1 the open at start (after a crash)
                                  * and its check, 2 a reopen and its check, 0 other */
    int reopen_failed;           /* a reopen of this process's handle did not open */
    int measuring;               /* DESIGN 5: wrong values are measured, not failures */
    vd_config vc;                /* what the options make of each fault class */
    uint64_t vmin, vmax, large_one_in, large_max;
    _Atomic uint64_t *stripe_ver;
    unsigned nstripes;
    _Atomic int stop;
    _Atomic int unrecoverable;   /* the engine cannot open the database any more */
    _Atomic uint64_t symptoms;   /* wrong answers seen, counted failures or not (V6b) */
    _Atomic int infra;           /* infrastructure error: exit 3 */
    pthread_mutex_t mu;          /* reports, observations, failure printing */
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
    } *doubt;
    size_t ndoubt, capdoubt;     /* failed batches: all or nothing once resolved */
    _Atomic uint64_t detections;
    _Atomic uint64_t ops[OP_TYPES];
    _Atomic uint64_t verified, ambiguous, unverifiable;
    _Atomic uint64_t failures;
    uint64_t detailed;
    worker *w;
    double t0;
    double work_s;               /* seconds of the workload phase */
    uint64_t reopens_done;       /* scheduled reopens so far (thread 0 only) */
    uint64_t *damage;            /* V4b: ledger seqs of damage still on disk after the final */
    size_t ndamage;              /* verify of the closed files (flt_damage_present) */
    int final_verified;          /* that verify ran: every block was read from disk */
} g;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- randomness: one splitmix64 stream per thread ---- */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t rnd(worker *w) { return mix64(w->rng += 0x9e3779b97f4a7c15ull); }
static uint64_t below(worker *w, uint64_t n) { return (uint64_t)(((unsigned __int128)rnd(w) * n) >> 64); }
static int one_in(worker *w, uint64_t n) { return n && below(w, n) == 0; }

/* ---- keys and values ---- */

/* "k" + 15 digits, as orc_key writes it, without snprintf. */
static void key_of(uint64_t k, char out[ORC_KEY_LEN + 1]) {
    out[0] = 'k';
    for (int i = ORC_KEY_LEN - 1; i >= 1; i--) {
        out[i] = (char)('0' + k % 10);
        k /= 10;
    }
    out[ORC_KEY_LEN] = 0;
}

static size_t vlen_of(uint64_t key, uint32_t v) {
    if (g.large_one_in && mix64(key * 0x100000001b3ull ^ ((uint64_t)v << 17)) % g.large_one_in == 0)
        return orc_value_len(key, v, g.vmax + 1 > 4096 ? g.vmax + 1 : 4096, g.large_max);
    return orc_value_len(key, v, g.vmin, g.vmax);
}

/* 1 if BUF is exactly the value of (key, v). */
static int value_is(uint64_t key, uint32_t v, const uint8_t *buf, size_t len) {
    return orc_value_is(key, v, buf, len, vlen_of(key, v));
}

/* ---- files of the run directory ---- */

/* Append one whole line (oracle/report_line.h) to FD (-1: none). */
static int append_line(int fd, const char *line, int n) {
    if (fd < 0) return 0;
    if (n < 0) return -1;
    return write(fd, line, (size_t)n) == n ? 0 : -1;
}

static void json_str_to(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void path_in(char *out, size_t cap, const char *dir, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

/* stress_state: "epoch N\nsettled L\nclean C\n" (whole file rewritten). */
static int read_state(uint64_t *epoch, size_t *settled, int *clean) {
    char p[4200];
    path_in(p, sizeof p, g.run_dir, "stress_state");
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    unsigned long long e = 0, s = 0;
    int c = 1;
    int n = fscanf(f, "epoch %llu\nsettled %llu\nclean %d", &e, &s, &c);
    fclose(f);
    if (n != 3) return -1;
    *epoch = e, *settled = (size_t)s, *clean = c;
    return 0;
}

static int write_state(uint64_t epoch, size_t settled, int clean) {
    char p[4200], tmp[4300];
    path_in(p, sizeof p, g.run_dir, "stress_state");
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "epoch %llu\nsettled %llu\nclean %d\n", (unsigned long long)epoch, (unsigned long long)settled, clean);
    if (fflush(f) || fsync(fileno(f))) { fclose(f); return -1; }
    fclose(f);
    return rename(tmp, p);
}

static void count_line(void *ctx, const char *line) {
    (void)line;
    (*(size_t *)ctx)++;
}

static size_t ledger_lines(void) {
    size_t n = 0;
    flt_ledger_read(g.run_dir, count_line, &n);
    return n;
}

/* ---- observations and reports ---- */

static uint64_t injections_so_far(void) {
    if (!g.flt) return 0;
    flt_counts c;
    flt_get_counts(g.flt, &c);
    uint64_t n = 0;
    for (int i = 0; i < FLT_CLASS_COUNT; i++) n += c.injected[i];
    return n;
}

static void observe(int kind, int thread, uint64_t op, int status, uint64_t key, int after_crash) {
    vd_observation o = {.kind = kind, .thread = thread, .op = (int64_t)op, .status = status, .key = key,
                        .inj_mark = injections_so_far(), .after_crash = after_crash};
    pthread_mutex_lock(&g.mu);
    if (g.nobs == g.capobs) {
        size_t nc = g.capobs ? 2 * g.capobs : 256;
        void *p = realloc(g.obs, nc * sizeof *g.obs);
        if (p) g.obs = p, g.capobs = nc;
    }
    if (g.nobs < g.capobs) g.obs[g.nobs++] = o;
    char line[ORC_LINE_MAX];
    append_line(g.obs_fd, line, orc_obs_line_format(line, sizeof line, &o));
    pthread_mutex_unlock(&g.mu);
}

static void on_corruption(void *ctx, const st_corruption *r) {
    (void)ctx;
    vd_report v = {.block = r->block, .offset = r->offset, .entry = r->entry, .after_crash = atomic_load(&g.recovering)};
    snprintf(v.layer, sizeof v.layer, "%s", r->layer ? r->layer : "");
    snprintf(v.file, sizeof v.file, "%s", r->file ? r->file : "");
    snprintf(v.detail, sizeof v.detail, "%s", r->detail ? r->detail : "");
    atomic_fetch_add(&g.detections, 1);
    pthread_mutex_lock(&g.mu);
    if (g.nreports == g.capreports) {
        size_t nc = g.capreports ? 2 * g.capreports : 256;
        void *p = realloc(g.reports, nc * sizeof *g.reports);
        if (p) g.reports = p, g.capreports = nc;
    }
    if (g.nreports < g.capreports) g.reports[g.nreports++] = v;
    char line[ORC_LINE_MAX];
    append_line(g.reports_fd, line, orc_report_line_format(line, sizeof line, &v));
    pthread_mutex_unlock(&g.mu);
}

/* Earlier processes' reports and observations (a crashed run's) come
 * back as carried input for the verdict. */
static int load_carried(vd_ctx *v) {
    int died = 0; /* the earlier process recorded its own crash or hang */
    char p[4200];
    char *line = NULL;
    size_t cap = 0;
    for (int which = 0; which < 2; which++) {
        path_in(p, sizeof p, g.run_dir, which ? ORC_OBSERVATIONS_FILE : ORC_REPORTS_FILE);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        while (getline(&line, &cap, f) >= 0) {
            if (which == 0) {
                vd_report r;
                if (orc_report_line_parse(line, &r)) continue; /* not a line we wrote whole */
                vd_add_report(v, &r);
            } else {
                vd_observation o;
                if (orc_obs_line_parse(line, &o)) continue;
                o.key = 0; /* a carried observation's key has never been judged */
                o.carried = 1;
                if (o.kind == VD_OBS_CRASH || o.kind == VD_OBS_HANG) died = 1;
                vd_add_observation(v, &o);
            }
        }
        fclose(f);
    }
    free(line);
    return died;
}

/* ---- failures: what was expected, what was found, the ledger, repro ---- */

typedef struct ledger_filter {
    int thread;
    int64_t op_lo, op_hi;
    int printed;
} ledger_filter;

static void print_touching(void *ctx, const char *line) {
    ledger_filter *lf = ctx;
    vd_injection j;
    if (vd_parse_ledger_line(line, &j)) return;
    int hit = lf->thread < 0 ? (j.op >= lf->op_lo && j.op <= lf->op_hi)
                             : (j.thread == lf->thread && j.op >= lf->op_lo && j.op <= lf->op_hi);
    if (hit && lf->printed < 20) {
        fprintf(stderr, "    ledger: %s\n", line);
        lf->printed++;
    }
}

static void describe_value(char *out, size_t cap, uint64_t key, int found, const uint8_t *buf, size_t len) {
    if (!found) { snprintf(out, cap, "absent"); return; }
    if (!buf) { snprintf(out, cap, "a mix of old and new values (below)"); return; }
    uint64_t k = 0;
    uint32_t v = 0;
    if (orc_value_whose(buf, len, &k, &v) == 0 && k == key && value_is(key, v, buf, len))
        snprintf(out, cap, "value seed 0x%08x (%zu bytes)", v, len);
    else if (orc_value_whose(buf, len, &k, &v) == 0 && k < g.o.max_key && value_is(k, v, buf, len))
        snprintf(out, cap, "the value of key %llu, seed 0x%08x (%zu bytes)", (unsigned long long)k, v, len);
    else
        snprintf(out, cap, "%zu bytes that are no value of this run (claim key %llu seed 0x%08x)", len,
                 (unsigned long long)(len >= 12 ? k : 0), len >= 12 ? v : 0);
}

static void describe_expected(char *out, size_t cap, orc_entry a, orc_entry b) {
    size_t n = 0;
    uint32_t seen[4] = {a.cur, a.pending, b.cur, b.pending};
    int any = 0;
    n += (size_t)snprintf(out + n, cap - n, "one of {");
    for (int i = 0; i < 4 && n < cap; i++) {
        if ((i == 1 || i == 3) && seen[i] == 0) continue;
        int dup = 0;
        for (int j = 0; j < i; j++)
            if (seen[j] == seen[i] && !((j == 1 || j == 3) && seen[j] == 0)) dup = 1;
        if (dup) continue;
        uint32_t v = seen[i] == ORC_DEL ? 0 : seen[i];
        n += (size_t)snprintf(out + n, cap - n, "%s%s", any ? ", " : "", v ? "" : "absent");
        if (v && n < cap) n += (size_t)snprintf(out + n, cap - n, "seed 0x%08x", v);
        any = 1;
    }
    if (n < cap) snprintf(out + n, cap - n, "}");
}

/* A wrong answer: record it, print it (expected, found, ledger, repro).
 * In a measuring run it is counted as undetectable by design instead. */
static void fail_key(worker *w, int kind, uint64_t key, orc_entry a, orc_entry b, int found, const uint8_t *buf,
                     size_t len, const char *what, int after_crash) {
    int thread = w ? w->id : 0;
    uint64_t op = w ? (g.epoch << 32 | w->calls) : (g.epoch << 32);
    observe(kind, thread, op, 0, key, after_crash);
    /* With misdirected writes on, a stale value may be the lost half of
     * one (oracle V6b): the verdict decides, from the ledger. */
    int v6b = !g.measuring && g.vc.class_on[VD_MISDIRECTED_WRITE];
    atomic_fetch_add(&g.symptoms, 1);
    if (!g.measuring && !v6b) atomic_fetch_add(&g.failures, 1);
    pthread_mutex_lock(&g.mu);
    if (g.detailed++ < MAX_DETAILED) {
        char exp[256], got[256], ks[ORC_KEY_LEN + 1];
        describe_expected(exp, sizeof exp, a, b);
        describe_value(got, sizeof got, key, found, buf, len);
        key_of(key, ks);
        fprintf(stderr, "stress: %s %s (%s): key %s (%llu), thread %d, op %llu:%llu\n",
                g.measuring ? "MEASURED (undetectable by design in this measuring run, not a failure)"
                : v6b       ? "SUSPECT (a block a misdirected write missed reads old; the verdict below decides)"
                            : "FAILURE",
                orc_obs_kind_name(kind), what,
                ks, (unsigned long long)key, thread, (unsigned long long)g.epoch,
                (unsigned long long)(op & 0xffffffffu));
        fprintf(stderr, "    expected %s\n    found    %s\n", exp, got);
        /* Ledger entries that may touch it: the failing thread's recent
         * window (the key's block is not known to the driver). */
        ledger_filter lf = {thread, (int64_t)(op > 64 ? op - 64 : 0), (int64_t)op, 0};
        if (g.flt) flt_ledger_read(g.run_dir, print_touching, &lf);
        if (!lf.printed) fprintf(stderr, "    ledger: no injection in this thread's last 64 ops\n");
        fprintf(stderr, "    repro: %s\n", g.repro);
    }
    pthread_mutex_unlock(&g.mu);
}

static void check_doubts(worker *w, int after_crash);

/* ---- the E3 check of one answer ---- */

static int candidate(uint32_t v, orc_entry a, orc_entry b) {
    uint32_t c[4] = {a.cur, a.pending, b.cur, b.pending};
    for (int i = 0; i < 4; i++) {
        if ((i == 1 || i == 3) && c[i] == 0) continue; /* no pending write */
        uint32_t x = c[i] == ORC_DEL ? 0 : c[i];
        if (x == v) return 1;
    }
    return 0;
}

/* Check one key's answer (status, value) against the expected entries
 * sampled before (A) and after (B) the read.  AMBIGUOUS: more than one
 * write settled on its stripe meanwhile (E3 cannot tell).  Returns 1 ok. */
static int check_answer(worker *w, uint64_t key, int st, const uint8_t *buf, size_t len, orc_entry a, orc_entry b,
                        int ambiguous, int after_crash, const char *what) {
    if (st != ST_OK && st != ST_NOTFOUND) {
        atomic_fetch_add_explicit(&g.unverifiable, 1, memory_order_relaxed);
        return 1; /* an error is not a wrong answer; the verdict judges it */
    }
    uint32_t v = 0;
    int ok;
    if (st == ST_NOTFOUND) {
        ok = candidate(0, a, b);
    } else {
        uint64_t k;
        ok = orc_value_whose(buf, len, &k, &v) == 0 && k == key && v != 0 && v != ORC_DEL && candidate(v, a, b) &&
             value_is(key, v, buf, len);
    }
    if (ok) {
        atomic_fetch_add_explicit(&g.verified, 1, memory_order_relaxed);
        return 1;
    }
    if (ambiguous) {
        atomic_fetch_add_explicit(&g.ambiguous, 1, memory_order_relaxed);
        return 1;
    }
    int kind = VD_OBS_WRONG_VALUE;
    if (st == ST_NOTFOUND) kind = VD_OBS_LOST;
    else if (candidate(0, a, b) && !a.pending && !b.pending && a.cur == 0 && b.cur == 0) {
        uint64_t k;
        if (orc_value_whose(buf, len, &k, &v) == 0 && k == key && value_is(key, v, buf, len)) kind = VD_OBS_RESURRECTED;
    }
    fail_key(w, kind, key, a, b, st == ST_OK, buf, len, what, after_crash);
    return 0;
}

/* ---- the handle: open, post-open check, reopen ---- */

static void settle_durable(uint64_t seq) {
    if (seq) orc_note_durable(g.exp, seq);
}

/* Read KEY (faults paused by the caller) and check it exactly: a pending
 * key may hold either value and is then resolved to what the engine
 * shows.  Returns 1 ok. */
/* After a key was checked while everything is quiet: settle a pending
 * key to what the engine shows; in a measuring run, also adopt a wrong
 * answer that is a value of this key (a corruption is counted once). */
static void adopt(uint64_t key, int ok, orc_entry e, int st, const uint8_t *buf, size_t len) {
    if (st != ST_OK && st != ST_NOTFOUND) return;
    if (ok && !e.pending) return;
    if (!ok && !g.measuring && !g.vc.class_on[VD_MISDIRECTED_WRITE]) return;
    uint32_t v = 0;
    uint64_t k = key;
    if (st == ST_OK && (orc_value_whose(buf, len, &k, &v) || k != key || !value_is(key, v, buf, len))) return;
    orc_resolve(g.exp, key, v);
}

static void note_error(worker *w, int st);

static int verify_key(worker *w, uint64_t key, st_buf *b, int after_crash, const char *what) {
    char ks[ORC_KEY_LEN + 1];
    key_of(key, ks);
    orc_entry e = orc_get(g.exp, key);
    int st = g.E->get(g.db, ks, ORC_KEY_LEN, b);
    if (w) note_error(w, st); /* an injected error this check met was reported, not swallowed */
    int ok = check_answer(w, key, st, b->data, b->len, e, e, 0, after_crash, what);
    adopt(key, ok, e, st, b->data, b->len);
    return ok;
}

/* Every key, in key order, by scanning (a damaged stretch falls back to
 * point reads).  Returns the number of failures. */
static uint64_t verify_all(worker *w, int after_crash, const char *what) {
    uint64_t bad = 0, next = 0;
    st_buf b = {0};
    while (next < g.o.max_key) {
        char lo[ORC_KEY_LEN + 1];
        key_of(next, lo);
        st_iter *it = NULL;
        int st = g.E->iter_open(g.db, lo, ORC_KEY_LEN, NULL, 0, &it);
        if (st == ST_OK) st = g.E->iter_first(it);
        while (st == ST_OK) {
            size_t kl, vl;
            const void *k = g.E->iter_key(it, &kl);
            const uint8_t *v = g.E->iter_value(it, &vl);
            uint64_t key;
            if (orc_key_parse(k, kl, &key) || key >= g.o.max_key) {
                /* a key this run never writes: nothing should be there */
                fprintf(stderr, "stress: FAILURE: unexpected key '%.*s' in the database\n    repro: %s\n",
                        (int)(kl < 64 ? kl : 64), (const char *)k, g.repro);
                observe(VD_OBS_RESURRECTED, w ? w->id : 0, g.epoch << 32, 0, 0, after_crash);
                atomic_fetch_add(&g.failures, 1);
                bad++;
                st = g.E->iter_next(it);
                continue;
            }
            for (; next < key; next++) { /* keys not seen: must be absent */
                orc_entry e = orc_get(g.exp, next);
                int ok = check_answer(w, next, ST_NOTFOUND, NULL, 0, e, e, 0, after_crash, what);
                bad += !ok;
                adopt(next, ok, e, ST_NOTFOUND, NULL, 0);
            }
            orc_entry e = orc_get(g.exp, key);
            int ok = check_answer(w, key, ST_OK, v, vl, e, e, 0, after_crash, what);
            bad += !ok;
            adopt(key, ok, e, ST_OK, v, vl);
            next = key + 1;
            st = g.E->iter_next(it);
        }
        if (it) g.E->iter_close(it);
        /* A scan that failed with an error (an injected read error while
         * a post-open check ran) returned it: the call noticed, and its
         * observation must say so, or the oracle calls it swallowed. */
        if (w && st != ST_NOTFOUND) note_error(w, st);
        if (st == ST_NOTFOUND) {
            for (; next < g.o.max_key; next++) {
                orc_entry e = orc_get(g.exp, next);
                int ok = check_answer(w, next, ST_NOTFOUND, NULL, 0, e, e, 0, after_crash, what);
                bad += !ok;
                adopt(next, ok, e, ST_NOTFOUND, NULL, 0);
            }
            break;
        }
        /* The scan failed (a damaged page): read this key alone, go on. */
        if (next < g.o.max_key) {
            if (!verify_key(w, next, &b, after_crash, what)) bad++;
            next++;
        }
    }
    st_buf_free(&b);
    return bad;
}

/* The trace's keys written after R up to D (for a lost-commit message). */
static void print_lost_commits(uint64_t r, uint64_t d) {
    char p[4200];
    path_in(p, sizeof p, g.exp_dir, "trace");
    FILE *f = fopen(p, "rb");
    if (!f) return;
    orc_trace_rec rec;
    int n = 0;
    while (fread(&rec, sizeof rec, 1, f) == 1 && n < 20)
        if (rec.seq > r && rec.seq <= d) {
            fprintf(stderr, "    lost: seq %llu key %llu (value seed 0x%08x -> %s0x%08x)\n", (unsigned long long)rec.seq,
                    (unsigned long long)rec.key, rec.old_v, rec.new_v ? "" : "absent ", rec.new_v);
            n++;
        }
    fclose(f);
}

/* After every open: the exact-prefix check.  AFTER_CRASH: the previous
 * holder of the database did not close it (crash, kill, poisoned).
 * Returns 0 ok, 1 failure found, 2 only wrong answers a misdirected
 * write may explain (V6b: the verdict decides), -1 cannot proceed. */
static int post_open_check(worker *w, int after_crash, const char *what) {
    st_recovery rec;
    g.E->recovery(g.db, &rec);
    uint64_t r = rec.recovered_seq, d = orc_durable_seq(g.exp);
    int failed = 0;
    if (r < d) {
        fprintf(stderr,
                "stress: FAILURE lost (a synced commit): recovery ended at commit seq %llu, but seq %llu was durable "
                "(last acknowledged %llu)\n",
                (unsigned long long)r, (unsigned long long)d, (unsigned long long)orc_last_seq(g.exp));
        print_lost_commits(r, d);
        fprintf(stderr, "    repro: %s\n", g.repro);
        observe(VD_OBS_LOST_COMMIT, w ? w->id : 0, g.epoch << 32, 0, 0, after_crash);
        atomic_fetch_add(&g.failures, 1);
        return 1; /* the expected state cannot be rewound below durable */
    }
    if (orc_rewind(g.exp, r) > 0) {
        /* Writes after R were undone: a batch in doubt since then was
         * written over values that are gone; its "old" is what the
         * expected state holds now. */
        pthread_mutex_lock(&g.mu);
        for (size_t i = 0; i < g.ndoubt; i++)
            for (int k = 0; k < g.doubt[i].n; k++)
                if (!g.doubt[i].seen[k]) g.doubt[i].old_v[k] = orc_get(g.exp, g.doubt[i].key[k]).cur;
        pthread_mutex_unlock(&g.mu);
    }
    if (g.flt) flt_pause(g.flt, 1);
    uint64_t before = atomic_load(&g.failures), seen = atomic_load(&g.symptoms);
    verify_all(w, after_crash, what);
    check_doubts(w, after_crash);
    if (g.flt) flt_pause(g.flt, 0);
    if (atomic_load(&g.failures) != before) failed = 1;
    else if (atomic_load(&g.symptoms) != seen) failed = 2; /* V6b suspects: the verdict decides */
    orc_checkpoint_trace(g.exp, r);
    return failed;
}

/* Open the database, retrying injected failures (each attempt is a call
 * of W's, S4).  Returns the status. */
static int open_db(worker *w) {
    int st = ST_OTHER;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (attempt == 4 && g.flt) flt_pause(g.flt, 1); /* enough: let it open */
        uint64_t op = g.epoch << 32 | ++w->calls;
        if (g.flt) flt_op(g.flt, op);
        st = g.E->open(g.o.db, &g.eo, &g.db);
        if (st == ST_OK) break;
        if (g.flt) observe(VD_OBS_ERROR, w->id, op, st, 0, 0);
        if (st == ST_CORRUPTION || st == ST_BUSY || st == ST_INVALID || st == ST_NOTSUP) break;
    }
    if (g.flt) flt_pause(g.flt, 0);
    return st;
}

/* Close and open again (S3: the caller holds the handle exclusively).
 * POISONED: the handle failed a write (recovery will replay). */
static void release_snapshots(void);
static void reopen(worker *w, int poisoned) {
    if (g.flt) flt_op(g.flt, g.epoch << 32 | ++w->calls);
    release_snapshots();
    int st = g.E->close(g.db);
    g.db = NULL;
    if (st != ST_OK && g.flt) observe(VD_OBS_ERROR, w->id, g.epoch << 32 | w->calls, st, 0, 0);
    atomic_store(&g.recovering, 2);
    st = open_db(w);
    if (st != ST_OK) {
        atomic_store(&g.recovering, 0);
        if (st == ST_CORRUPTION) {
            fprintf(stderr, "stress: the database no longer opens (corruption reported): ending the run\n");
            atomic_store(&g.unrecoverable, 1);
            g.reopen_failed = 1;
        } else {
            fprintf(stderr, "stress: reopen failed: %s\n", st_status_name(st));
            atomic_store(&g.infra, 1);
        }
        atomic_store(&g.stop, 1);
        return;
    }
    atomic_fetch_add(&g.handle_epoch, 1);
    atomic_fetch_add(&g.ops[OP_REOPEN], 1);
    post_open_check(w, poisoned, poisoned ? "after reopening a failed handle" : "after reopen");
    atomic_store(&g.recovering, 0);
}

/* From a worker holding the handle shared: reopen unless another thread
 * did since SEEN. */
static void reopen_from_worker(worker *w, uint64_t seen, int poisoned) {
    pthread_rwlock_unlock(&g.handle);
    pthread_rwlock_wrlock(&g.handle);
    if (atomic_load(&g.handle_epoch) == seen && g.db && !atomic_load(&g.stop)) reopen(w, poisoned);
    pthread_rwlock_unlock(&g.handle);
    pthread_rwlock_rdlock(&g.handle);
}

/* ---- operations ---- */

typedef struct op_rec { /* what goes into the trace hash, per op */
    uint8_t type, status;
    uint16_t n;
    uint32_t vseed;
    uint64_t key;
} op_rec;

static void hash_op(worker *w, int type, int status, uint64_t key, uint32_t v, unsigned n) {
    /* With several threads the interleaving is not reproducible, so the
     * op trace is not either: hash it only where it means something. */
    if (g.o.threads > 1) return;
    op_rec r = {(uint8_t)type, (uint8_t)status, (uint16_t)n, v, key};
    XXH3_64bits_update(w->hash, &r, sizeof r);
}

static int is_in_doubt_error(int st) { return st != ST_OK && st != ST_NOTFOUND; }
static int needs_reopen(int st) { return st == ST_IOERR || st == ST_NOSPACE || st == ST_POISONED || st == ST_OTHER; }

static void note_error(worker *w, int st) {
    if (is_in_doubt_error(st) && (g.flt || st != ST_CORRUPTION)) observe(VD_OBS_ERROR, w->id, g.epoch << 32 | w->calls, st, 0, 0);
}

static void do_get(worker *w, uint64_t key) {
    char ks[ORC_KEY_LEN + 1];
    key_of(key, ks);
    unsigned s = orc_stripe(g.exp, key);
    uint64_t v0 = atomic_load_explicit(&g.stripe_ver[s], memory_order_acquire);
    orc_entry a = orc_get(g.exp, key);
    int st = g.E->get(g.db, ks, ORC_KEY_LEN, &w->rbuf);
    orc_entry b = orc_get(g.exp, key);
    uint64_t v1 = atomic_load_explicit(&g.stripe_ver[s], memory_order_acquire);
    note_error(w, st);
    check_answer(w, key, st, w->rbuf.data, w->rbuf.len, a, b, v1 - v0 > 1, 0, "get");
    uint32_t vs = 0;
    if (st == ST_OK && w->rbuf.len >= 12) memcpy(&vs, (uint8_t *)w->rbuf.data + 8, 4);
    hash_op(w, OP_GET, st, key, vs, 1);
    atomic_fetch_add_explicit(&g.ops[OP_GET], 1, memory_order_relaxed);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A batch whose write failed is in doubt (its keys stay pending, S2);
 * once a reopen or the settlement resolved them, it must be wholly there
 * or wholly absent.  Called with the keys' stripes locked: cur is the old
 * value. */
static void note_doubt(worker *w, int status, const uint64_t *keys, const uint32_t *vs, size_t m) {
    pthread_mutex_lock(&g.mu);
    if (g.ndoubt == g.capdoubt) {
        size_t nc = g.capdoubt ? 2 * g.capdoubt : 16;
        void *p = realloc(g.doubt, nc * sizeof *g.doubt);
        if (p) g.doubt = p, g.capdoubt = nc;
    }
    if (g.ndoubt < g.capdoubt) {
        struct doubt *d = &g.doubt[g.ndoubt++];
        d->n = (int)m;
        d->thread = w->id;
        d->status = status;
        d->op = g.epoch << 32 | w->calls;
        memset(d->seen, 0, sizeof d->seen);
        for (size_t i = 0; i < m; i++) {
            d->key[i] = keys[i];
            d->old_v[i] = orc_get(g.exp, keys[i]).cur;
            d->new_v[i] = vs[i] == ORC_DEL ? 0 : vs[i];
        }
    }
    pthread_mutex_unlock(&g.mu);
}

/* After every key was resolved (everything quiet): each batch in doubt
 * must have all its keys old or all new.  Batches with a key still
 * unresolved (unreadable) wait for the next check. */
static void check_doubts(worker *w, int after_crash) {
    pthread_mutex_lock(&g.mu);
    size_t keep = 0;
    for (size_t i = 0; i < g.ndoubt; i++) {
        struct doubt *d = &g.doubt[i];
        int olds = 0, news = 0, open = 0;
        for (int k = 0; k < d->n; k++) {
            if (!d->seen[k]) {
                orc_entry e = orc_get(g.exp, d->key[k]);
                if (e.pending) { open = 1; continue; }
                d->seen[k] = d->old_v[k] == d->new_v[k] ? 3 : e.cur == d->new_v[k] ? 2 : e.cur == d->old_v[k] ? 1 : 3;
            }
            news += d->seen[k] == 2;
            olds += d->seen[k] == 1;
        }
        if (open) { g.doubt[keep++] = *d; continue; }
        if (olds && news) {
            pthread_mutex_unlock(&g.mu);
            orc_entry a = {d->old_v[0], d->new_v[0]};
            fail_key(w, VD_OBS_WRONG_VALUE, d->key[0], a, a, 1, NULL, 0, "batch in doubt came back half applied",
                     after_crash);
            pthread_mutex_lock(&g.mu);
            st_recovery rec = {0};
            if (g.db) g.E->recovery(g.db, &rec);
            fprintf(stderr,
                    "    batch of %d keys written by thread %d, op %llu:%llu, failed with %s: %d keys hold the new "
                    "value, %d the old one (last recovery: seq %llu, %llu records)\n",
                    d->n, d->thread, (unsigned long long)(d->op >> 32), (unsigned long long)(d->op & 0xffffffffu),
                    st_status_name(d->status), news, olds, (unsigned long long)rec.recovered_seq,
                    (unsigned long long)rec.records);
            for (int k = 0; k < d->n; k++) {
                orc_entry e = orc_get(g.exp, d->key[k]);
                fprintf(stderr, "      key %llu: old 0x%08x new 0x%08x resolved as %s, now 0x%08x\n",
                        (unsigned long long)d->key[k], d->old_v[k], d->new_v[k],
                        d->seen[k] == 1 ? "old" : d->seen[k] == 2 ? "new" : "neither", e.cur);
            }
        }
    }
    g.ndoubt = keep;
    pthread_mutex_unlock(&g.mu);
}

/* A write of N keys (1: put or delete; more: a batch, all or nothing).
 * Returns the status (the caller reopens when it says so). */
static int do_write(worker *w, int type, uint64_t *keys, size_t n) {
    /* S1: lock the stripes of all keys, each once, in stripe order. */
    unsigned stripes[MAX_BATCH];
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) stripes[ns++] = orc_stripe(g.exp, keys[i]);
    for (size_t i = 1; i < ns; i++) /* insertion sort, unique */
        for (size_t j = i; j > 0 && stripes[j] < stripes[j - 1]; j--) {
            unsigned t = stripes[j];
            stripes[j] = stripes[j - 1];
            stripes[j - 1] = t;
        }
    size_t u = 0;
    for (size_t i = 0; i < ns; i++)
        if (!u || stripes[i] != stripes[u - 1]) stripes[u++] = stripes[i];
    ns = u;
    for (size_t i = 0; i < ns; i++) orc_lock_stripe(g.exp, stripes[i]);

    st_op ops[MAX_BATCH];
    char kbuf[MAX_BATCH][ORC_KEY_LEN + 1];
    uint32_t vs[MAX_BATCH];
    size_t m = 0;
    size_t maxv = g.large_one_in ? g.large_max : g.vmax;
    if (maxv < 12) maxv = 12;
    for (size_t i = 0; i < n; i++) {
        orc_entry e = orc_get(g.exp, keys[i]);
        if (e.pending) continue; /* S2: in doubt until a reopen resolves it */
        int del = type == OP_DEL || (type == OP_BATCH && below(w, 4) == 0);
        uint32_t v = del ? ORC_DEL : orc_next_value(g.exp, keys[i], rnd(w));
        key_of(keys[i], kbuf[m]);
        ops[m] = (st_op){.kind = del ? ST_DELETE : ST_PUT, .key = kbuf[m], .klen = ORC_KEY_LEN};
        if (!del) {
            uint8_t *val = w->vbuf + m * maxv;
            size_t len = vlen_of(keys[i], v);
            orc_value(keys[i], v, val, len);
            ops[m].val = val;
            ops[m].vlen = len;
        }
        vs[m] = v;
        keys[m] = keys[i];
        m++;
    }
    int st = ST_OK, aborted = 0;
    uint64_t seq = 0;
    if (m) {
        for (size_t i = 0; i < m; i++) orc_mark_pending(g.exp, keys[i], vs[i]);
        st = g.E->write(g.db, ops, m, &seq);
        /* ST_POISONED: refused at the door (an earlier failure), nothing
         * of it reached the engine; otherwise the engine says. */
        if (st != ST_OK && st != ST_NOTFOUND && (st == ST_POISONED || (g.E->in_doubt && !g.E->in_doubt(g.db)))) {
            /* Aborted by the engine: none of it is, or will ever be,
             * visible; the keys keep their values (checked by later
             * reads, after crashes too). */
            for (size_t i = 0; i < m; i++) orc_resolve(g.exp, keys[i], orc_get(g.exp, keys[i]).cur);
            aborted = 1;
            atomic_fetch_add_explicit(&g.ops[OP_ABORTED], 1, memory_order_relaxed);
        } else if (st != ST_OK && m > 1) {
            note_doubt(w, st, keys, vs, m);
        }
        if (st == ST_OK) {
            for (size_t i = 0; i < m; i++) {
                orc_settle(g.exp, keys[i], seq);
                atomic_fetch_add_explicit(&g.stripe_ver[orc_stripe(g.exp, keys[i])], 1, memory_order_release);
            }
        }
    }
    for (size_t i = ns; i-- > 0;) orc_unlock_stripe(g.exp, stripes[i]);
    if (st == ST_OK && m) {
        if (g.o.sync_mode != 2) settle_durable(seq); /* commit, group: durable on return */
        else if (++w->wrote % 64 == 0) settle_durable(g.E->durable_seq(g.db));
    }
    note_error(w, st);
    for (size_t i = 0; i < m; i++) hash_op(w, type, st, keys[i], vs[i], (unsigned)m);
    if (!m) hash_op(w, type, 0xff, keys[0], 0, 0);
    atomic_fetch_add_explicit(&g.ops[type], 1, memory_order_relaxed);
    /* The error was judged (note_error); the handle goes on. */
    return aborted ? ST_OK : st;
}

/* ---- snapshots ----
 * Taking one: lock the stripes of SNAP_KEYS consecutive keys (no write of
 * them can be between its pending mark and its settle), take the
 * snapshot, record their values.  Some ops later the worker re-reads them
 * through it, point reads and a scan, and each must be exactly what was
 * recorded, whatever was written, vacuumed or checkpointed meanwhile. */
static void snap_take(worker *w) {
    uint64_t n = SNAP_KEYS < g.o.max_key ? SNAP_KEYS : g.o.max_key;
    uint64_t k0 = below(w, g.o.max_key - n + 1);
    unsigned stripes[SNAP_KEYS];
    size_t ns = 0;
    for (uint64_t i = 0; i < n; i++) {
        unsigned st = orc_stripe(g.exp, k0 + i);
        size_t j = ns;
        while (j > 0 && stripes[j - 1] > st) j--;
        if (j > 0 && stripes[j - 1] == st) continue;
        memmove(stripes + j + 1, stripes + j, (ns - j) * sizeof *stripes);
        stripes[j] = st;
        ns++;
    }
    for (size_t i = 0; i < ns; i++) orc_lock_stripe(g.exp, stripes[i]);
    uint64_t seq = 0;
    int st = g.E->snapshot(g.db, &w->snap, &seq);
    if (st == ST_OK) {
        for (uint64_t i = 0; i < n; i++) {
            orc_entry e = orc_get(g.exp, k0 + i);
            w->snap_known[i] = !e.pending;
            w->snap_v[i] = e.cur == ORC_DEL ? 0 : e.cur;
        }
        w->snap_seq = seq;
        w->snap_key = k0;
        w->snap_n = (int)n;
        w->snap_until = w->calls + 1 + below(w, 2 * g.o.snapshot_hold_ops);
    } else {
        w->snap = NULL;
    }
    for (size_t i = ns; i-- > 0;) orc_unlock_stripe(g.exp, stripes[i]);
    note_error(w, st);
    hash_op(w, OP_SNAPSHOT, st, k0, 0, 0);
}

static void snap_check(worker *w) {
    char ks[ORC_KEY_LEN + 1];
    char what[96];
    snprintf(what, sizeof what, "read at a snapshot (seq %llu)", (unsigned long long)w->snap_seq);
    for (int i = 0; i < w->snap_n; i++) {
        uint64_t key = w->snap_key + (uint64_t)i;
        key_of(key, ks);
        int st = g.E->get_at(g.db, w->snap, ks, ORC_KEY_LEN, &w->rbuf);
        note_error(w, st);
        if (!w->snap_known[i]) continue;
        orc_entry e = {w->snap_v[i], 0};
        check_answer(w, key, st, w->rbuf.data, w->rbuf.len, e, e, 0, 0, what);
    }
    /* The same keys through an iterator on the snapshot. */
    char lo[ORC_KEY_LEN + 1], hi[ORC_KEY_LEN + 1];
    key_of(w->snap_key, lo);
    key_of(w->snap_key + (uint64_t)w->snap_n, hi);
    st_iter *it = NULL;
    int seen[SNAP_KEYS] = {0};
    int st = g.E->iter_open_at(g.db, w->snap, lo, ORC_KEY_LEN, hi, ORC_KEY_LEN, &it);
    if (st == ST_OK) st = g.E->iter_first(it);
    snprintf(what, sizeof what, "scan at a snapshot (seq %llu)", (unsigned long long)w->snap_seq);
    while (st == ST_OK) {
        size_t kl, vl;
        const void *k = g.E->iter_key(it, &kl);
        const void *v = g.E->iter_value(it, &vl);
        uint64_t key;
        if (orc_key_parse(k, kl, &key) || key < w->snap_key || key >= w->snap_key + (uint64_t)w->snap_n) break;
        int i = (int)(key - w->snap_key);
        seen[i] = 1;
        if (w->snap_known[i]) {
            orc_entry e = {w->snap_v[i], 0};
            check_answer(w, key, ST_OK, v, vl, e, e, 0, 0, what);
        }
        st = g.E->iter_next(it);
    }
    if (it) g.E->iter_close(it);
    note_error(w, st == ST_NOTFOUND ? ST_OK : st);
    if (st == ST_NOTFOUND) /* a complete scan: keys it skipped are absent */
        for (int i = 0; i < w->snap_n; i++)
            if (!seen[i] && w->snap_known[i]) {
                orc_entry e = {w->snap_v[i], 0};
                check_answer(w, w->snap_key + (uint64_t)i, ST_NOTFOUND, NULL, 0, e, e, 0, 0, what);
            }
    g.E->snapshot_release(g.db, w->snap);
    w->snap = NULL;
    hash_op(w, OP_SNAPSHOT, 0, w->snap_key, 1, 0);
    atomic_fetch_add_explicit(&g.ops[OP_SNAPSHOT], 1, memory_order_relaxed);
}

/* Reopen and close: every worker is stopped; their snapshots go first. */
static void release_snapshots(void) {
    for (uint64_t i = 0; g.w && i < g.o.threads; i++)
        if (g.w[i].snap) {
            if (g.db) g.E->snapshot_release(g.db, g.w[i].snap);
            g.w[i].snap = NULL;
        }
}

static void do_scan(worker *w, uint64_t start) {
    uint64_t n = 1 + below(w, MAX_SCAN);
    if (start + n > g.o.max_key) n = g.o.max_key - start;
    orc_entry a[MAX_SCAN], b[MAX_SCAN];
    uint64_t v0[MAX_SCAN], v1[MAX_SCAN];
    for (uint64_t i = 0; i < n; i++) {
        v0[i] = atomic_load_explicit(&g.stripe_ver[orc_stripe(g.exp, start + i)], memory_order_acquire);
        a[i] = orc_get(g.exp, start + i);
    }
    char lo[ORC_KEY_LEN + 1], hi[ORC_KEY_LEN + 1];
    key_of(start, lo);
    key_of(start + n, hi);
    int sts[MAX_SCAN];
    const uint8_t *vals[MAX_SCAN];
    size_t lens[MAX_SCAN];
    uint8_t *copies = NULL; /* values are valid only until the next move */
    size_t copy_len = 0, copy_cap = 0;
    size_t offs[MAX_SCAN];
    for (uint64_t i = 0; i < n; i++) sts[i] = ST_NOTFOUND, vals[i] = NULL, lens[i] = 0;
    st_iter *it = NULL;
    int st = g.E->iter_open(g.db, lo, ORC_KEY_LEN, hi, ORC_KEY_LEN, &it);
    if (st == ST_OK) st = g.E->iter_first(it);
    unsigned seen = 0;
    int bad_key = 0;
    while (st == ST_OK) {
        size_t kl, vl;
        const void *k = g.E->iter_key(it, &kl);
        const void *v = g.E->iter_value(it, &vl);
        uint64_t key;
        if (orc_key_parse(k, kl, &key) || key < start || key >= start + n) { bad_key = 1; break; }
        if (copy_len + vl > copy_cap) {
            size_t nc = (copy_len + vl) * 2 + 256;
            uint8_t *p = realloc(copies, nc);
            if (!p) break;
            copies = p, copy_cap = nc;
        }
        memcpy(copies + copy_len, v, vl);
        offs[key - start] = copy_len;
        copy_len += vl;
        sts[key - start] = ST_OK;
        lens[key - start] = vl;
        seen++;
        st = g.E->iter_next(it);
    }
    if (it) g.E->iter_close(it);
    for (uint64_t i = 0; i < n; i++) {
        b[i] = orc_get(g.exp, start + i);
        v1[i] = atomic_load_explicit(&g.stripe_ver[orc_stripe(g.exp, start + i)], memory_order_acquire);
    }
    int final = st == ST_NOTFOUND ? ST_OK : st;
    note_error(w, final);
    if (bad_key) {
        fprintf(stderr, "stress: FAILURE: scan [%s, %s) returned a key outside its bounds\n    repro: %s\n", lo, hi, g.repro);
        observe(VD_OBS_WRONG_VALUE, w->id, g.epoch << 32 | w->calls, 0, start, 0);
        atomic_fetch_add(&g.failures, 1);
    } else if (final == ST_OK) {
        for (uint64_t i = 0; i < n; i++) {
            if (sts[i] == ST_OK) vals[i] = copies + offs[i];
            check_answer(w, start + i, sts[i], vals[i], lens[i], a[i], b[i], v1[i] - v0[i] > 1, 0, "scan");
        }
    } else {
        atomic_fetch_add_explicit(&g.unverifiable, n, memory_order_relaxed);
    }
    free(copies);
    hash_op(w, OP_SCAN, final, start, seen, (unsigned)n);
    atomic_fetch_add_explicit(&g.ops[OP_SCAN], 1, memory_order_relaxed);
}

/* A checkpoint or vacuum that ran with status ST: judge, count, reopen if
 * it left the handle failed. */
static void maintenance(worker *w, uint64_t seen, int type, int st) {
    note_error(w, st);
    hash_op(w, type, st, 0, 0, 0);
    atomic_fetch_add_explicit(&g.ops[type], 1, memory_order_relaxed);
    if (needs_reopen(st)) reopen_from_worker(w, seen, 1);
}

/* One workload op, under the handle lock (S3). */
static void one_op(worker *w, uint64_t i) {
    uint64_t seen = atomic_load(&g.handle_epoch);
    w->calls++;
    if (g.flt) {
        flt_op(g.flt, g.epoch << 32 | w->calls);
        flt_tick(g.flt, g.E->native(g.db));
    }
    /* Reopens spread over the run (thread 0): by op count, or by time
     * when the run has only a --duration. */
    if (w->id == 0 && g.o.reopen) {
        int due = 0;
        if (g.o.ops_per_thread) {
            uint64_t every = g.o.ops_per_thread / (g.o.reopen + 1);
            due = every && i && i % every == 0 && i / every <= g.o.reopen;
        } else if ((i & 63) == 0 && g.reopens_done < g.o.reopen) {
            due = now() - g.t0 >= (double)g.o.duration * (double)(g.reopens_done + 1) / (double)(g.o.reopen + 1);
        }
        if (due) {
            g.reopens_done++;
            reopen_from_worker(w, seen, 0);
            hash_op(w, OP_REOPEN, 0, i, 0, 0);
            return;
        }
    }
    if (one_in(w, g.o.checkpoint_one_in)) { maintenance(w, seen, OP_CHECKPOINT, g.E->checkpoint(g.db)); return; }
    if (g.E->snapshot) {
        if (w->snap && w->calls >= w->snap_until) { snap_check(w); return; }
        if (!w->snap && one_in(w, g.o.acquire_snapshot_one_in)) { snap_take(w); return; }
    }
    if (g.E->vacuum && one_in(w, g.o.vacuum_one_in)) { maintenance(w, seen, OP_VACUUM, g.E->vacuum(g.db)); return; }
    if (one_in(w, g.o.verify_db_one_in)) {
        uint64_t problems = 0;
        int st = g.E->verify(g.db, &problems);
        note_error(w, st == ST_CORRUPTION ? ST_OK : st);
        hash_op(w, OP_VERIFY, st, problems, 0, 0);
        atomic_fetch_add_explicit(&g.ops[OP_VERIFY], 1, memory_order_relaxed);
        return;
    }
    uint64_t p = below(w, 100);
    uint64_t key = below(w, g.o.max_key);
    uint64_t r = g.o.readpercent, wr = r + g.o.writepercent, d = wr + g.o.delpercent, it = d + g.o.iterpercent;
    int st = ST_OK;
    if (p < r) do_get(w, key);
    else if (p < wr) st = do_write(w, OP_PUT, &key, 1);
    else if (p < d) st = do_write(w, OP_DEL, &key, 1);
    else if (p < it) do_scan(w, key);
    else {
        uint64_t keys[MAX_BATCH];
        size_t n = 2 + below(w, MAX_BATCH - 1), m = 0;
        if (n > g.o.max_key) n = g.o.max_key;
        while (m < n) { /* distinct keys */
            uint64_t k = below(w, g.o.max_key);
            int dup = 0;
            for (size_t j = 0; j < m; j++) dup |= keys[j] == k;
            if (!dup) keys[m++] = k;
        }
        qsort(keys, m, sizeof *keys, cmp_u64);
        st = do_write(w, OP_BATCH, keys, m);
    }
    if (needs_reopen(st)) reopen_from_worker(w, seen, 1);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    if (g.flt) flt_thread_start(g.flt, w->id);
    double end = g.o.duration ? g.t0 + (double)g.o.duration : 0;
    pthread_rwlock_rdlock(&g.handle);
    for (uint64_t i = 0; !g.o.ops_per_thread || i < g.o.ops_per_thread; i++) {
        if (atomic_load_explicit(&g.stop, memory_order_relaxed)) break;
        if (end && (i & 63) == 0 && now() >= end) break;
        if ((i & 15) == 15) { /* let a waiting reopen in */
            pthread_rwlock_unlock(&g.handle);
            pthread_rwlock_rdlock(&g.handle);
        }
        if (!g.db) break;
        one_op(w, i);
        atomic_store_explicit(&w->done, i + 1, memory_order_relaxed);
    }
    pthread_rwlock_unlock(&g.handle);
    return NULL;
}

/* ---- watchdog and status line ---- */

static _Atomic int watch_stop;

static uint64_t total_done(void) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < g.o.threads; i++) n += atomic_load(&g.w[i].done);
    return n;
}

static void write_report(const vd_result *res, vd_ctx *v, uint64_t trace_hash, int hang);
static vd_ctx *judge(vd_result *res, uint64_t *trace_hash);

static void *watchdog_main(void *arg) {
    (void)arg;
    int tty = isatty(2);
    uint64_t last = 0, last_change_at = 0, tick = 0, prev = 0;
    while (!atomic_load(&watch_stop)) {
        usleep(200000);
        if (++tick % 5) continue;
        uint64_t n = total_done();
        uint64_t secs = tick / 5;
        if (n != last) last = n, last_change_at = secs;
        if (tty) {
            uint64_t inj = injections_so_far();
            fprintf(stderr, "\r[stress] %6.1fs  ops %llu (%llu/s)  faults %llu  detections %llu  failures %llu   ",
                    now() - g.t0, (unsigned long long)n, (unsigned long long)(n - prev), (unsigned long long)inj,
                    (unsigned long long)atomic_load(&g.detections), (unsigned long long)atomic_load(&g.failures));
            prev = n;
        }
        if (secs - last_change_at >= g.o.hang_seconds && !atomic_load(&watch_stop)) {
            fprintf(stderr, "\nstress: FAILURE hang: no operation finished for %llu s\n    repro: %s\n",
                    (unsigned long long)g.o.hang_seconds, g.repro);
            observe(VD_OBS_HANG, -1, 0, 0, 0, 0);
            vd_result res;
            uint64_t th;
            vd_ctx *v = judge(&res, &th);
            write_report(&res, v, th, 1);
            _exit(EXIT_FAIL);
        }
    }
    if (tty) fputc('\n', stderr);
    return NULL;
}

/* ---- crash of the engine: a signal ---- */

static char crash_msg[9000];
static size_t crash_len;

static void on_fatal(int sig) {
    if (write(2, crash_msg, crash_len) < 0) {}
    static const char line[] = ORC_OBS_CRASH_LINE;
    if (g.obs_fd >= 0 && write(g.obs_fd, line, sizeof line - 1) < 0) {}
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- report ---- */

static void write_counts(FILE *f, const vd_counts *c) {
    int first = 1;
    fputc('{', f);
#define VD_OUT(n) fprintf(f, "%s\"" #n "\": %llu", first ? "" : ", ", (unsigned long long)c->n), first = 0;
    VD_COUNTERS(VD_OUT)
#undef VD_OUT
    fputc('}', f);
}

static void write_report_to(FILE *f, const vd_result *res, vd_ctx *v, uint64_t trace_hash, int hang) {
    fprintf(f, "{\n  \"seed\": %llu,\n  \"engine\": \"%s\",\n  \"options\": ", (unsigned long long)g.o.seed, g.E->name);
    st_options_json(&g.o, f);
    if (g.E->planted_bug && g.E->planted_bug()) {
        fprintf(f, ",\n  \"planted_bug\": ");
        json_str_to(f, g.E->planted_bug());
    }
    fprintf(f, ",\n  \"mode\": \"%s\",\n", res->measuring ? "measuring" : "judging");
    if (res->measuring) {
        fprintf(f, "  \"measuring_why\": ");
        json_str_to(f, res->measuring_why);
        fprintf(f, ",\n");
    }
    fprintf(f, "  \"ops\": {");
    for (int i = 0; i < OP_TYPES; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", op_names[i], (unsigned long long)atomic_load(&g.ops[i]));
    fprintf(f, "},\n  \"checks\": {\"verified\": %llu, \"ambiguous\": %llu, \"unverifiable\": %llu},\n",
            (unsigned long long)atomic_load(&g.verified), (unsigned long long)atomic_load(&g.ambiguous),
            (unsigned long long)atomic_load(&g.unverifiable));
    fprintf(f, "  \"classes\": {\n");
    for (int c = 0; c <= VD_CLASS_COUNT; c++) {
        fprintf(f, "    \"%s\": ", vd_class_name(c));
        write_counts(f, &res->cls[c]);
        fprintf(f, "%s\n", c < VD_CLASS_COUNT ? "," : "");
    }
    fprintf(f, "  },\n  \"totals\": ");
    write_counts(f, &res->total);
    fprintf(f, ",\n  \"injections_per_point\": {");
    if (v) {
        /* From the ledger lines judged here (libfiu points and hooks alike). */
        const char *names[128];
        uint64_t counts[128];
        size_t np = 0;
        for (size_t i = 0; i < vd_injection_count(v); i++) {
            const vd_injection *j = vd_injection_at(v, i);
            const char *pt = j->point[0] ? j->point : "?";
            size_t k = 0;
            while (k < np && strcmp(names[k], pt)) k++;
            if (k == np && np < 128) names[np] = pt, counts[np++] = 0;
            if (k < np) counts[k]++;
        }
        for (size_t k = 0; k < np; k++) {
            fprintf(f, "%s", k ? ", " : "");
            json_str_to(f, names[k]);
            fprintf(f, ": %llu", (unsigned long long)counts[k]);
        }
    }
    /* Per engine point this process armed: times reached (checked while
     * armed) and fired (the fault library's counts; a point not enabled
     * is never reached, a killed process writes no report). */
    fprintf(f, "},\n  \"fault_points_reached\": {");
    {
        flt_counts fc;
        flt_get_counts(g.flt, &fc);
        int first = 1;
        for (size_t i = 0; i < g.E->fault_point_count() && i < 64; i++) {
            if (!fc.point_checks[i] && !fc.point_hits[i]) continue;
            fprintf(f, "%s", first ? "" : ", ");
            json_str_to(f, g.E->fault_point_name(i));
            fprintf(f, ": {\"reached\": %llu, \"fired\": %llu}", (unsigned long long)fc.point_checks[i],
                    (unsigned long long)fc.point_hits[i]);
            first = 0;
        }
    }
    char esc[256] = "{}";
    if (v) vd_escape_rates_json(v, esc, sizeof esc);
    fprintf(f, "},\n  \"escape_rate_per_protection_width\": %s,\n", esc);
    fprintf(f, "  \"reports\": %llu,\n  \"false_alarms\": %llu,\n", (unsigned long long)res->reports,
            (unsigned long long)res->false_alarms);
    fprintf(f, "  \"post_crash_check\": \"%s\",\n",
            g.crash_check == VD_CHECK_NONE     ? "none"
            : g.crash_check == VD_CHECK_PASSED ? "passed"
            : g.crash_check == VD_CHECK_NO_OPEN ? "no_open"
                                                : "failed");
    fprintf(f, "  \"unrecoverable\": %s,\n", atomic_load(&g.unrecoverable) || res->unrecoverable ? "true" : "false");
    fprintf(f, "  \"unrecoverable_by_design\": ");
    if (res->by_design[0]) json_str_to(f, res->by_design);
    else fprintf(f, "null");
    fprintf(f, ",\n  \"unrecoverable_why\": ");
    if (res->unrecoverable_why[0]) json_str_to(f, res->unrecoverable_why);
    else fprintf(f, "null");
    fprintf(f, ",\n");
    fprintf(f, "  \"trace_hash\": \"%016llx\",\n", (unsigned long long)trace_hash);
    fprintf(f, "  \"elapsed_s\": %.3f,\n", now() - g.t0);
    uint64_t wops = 0;
    for (uint64_t i = 0; i < g.o.threads && g.w; i++) wops += atomic_load(&g.w[i].done);
    fprintf(f, "  \"workload_s\": %.3f,\n  \"workload_ops_per_s\": %.0f,\n", g.work_s,
            g.work_s > 0 ? (double)wops / g.work_s : 0.0);
    fprintf(f, "  \"repro\": ");
    json_str_to(f, g.repro);
    fprintf(f, ",\n  \"verdict\": \"%s\"\n}\n", hang ? "fail" : res->pass ? "pass" : "fail");
}

static void write_report(const vd_result *res, vd_ctx *v, uint64_t trace_hash, int hang) {
    if (!g.o.report) return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", g.o.report);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "stress: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    write_report_to(f, res, v, trace_hash, hang);
    if (fclose(f) == 0) rename(tmp, g.o.report);
}

/* ---- setup helpers ---- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void rm_rf(const char *p) { nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* mkdir -p: 0 or -1 (errno set). */
static int mkdir_p(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *c = p + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        if (mkdir(p, 0755) && errno != EEXIST) return -1;
        *c = '/';
    }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static void build_repro(int argc, char **argv) {
    size_t n = 0;
    for (int i = 0; i < argc && n + 4 < sizeof g.repro; i++) {
        const char *a = argv[i];
        int plain = *a != 0;
        for (const char *c = a; *c; c++)
            if (!(isalnum((unsigned char)*c) || strchr("-_=./,:+@%", *c))) plain = 0;
        if (i) g.repro[n++] = ' ';
        if (plain) n += (size_t)snprintf(g.repro + n, sizeof g.repro - n, "%s", a);
        else {
            g.repro[n++] = '\'';
            for (const char *c = a; *c && n + 6 < sizeof g.repro; c++) {
                if (*c == '\'') n += (size_t)snprintf(g.repro + n, sizeof g.repro - n, "'\\''");
                else g.repro[n++] = *c;
            }
            g.repro[n++] = '\'';
        }
        if (n >= sizeof g.repro) n = sizeof g.repro - 1;
    }
    g.repro[n < sizeof g.repro ? n : sizeof g.repro - 1] = 0;
}

/* Value-size parameters live with the expected state: values written by
 * an earlier run must be checked with the sizes they were written with. */
static void value_params(void) {
    g.vmin = g.o.value_size_min, g.vmax = g.o.value_size_max;
    g.large_one_in = g.o.large_value_one_in, g.large_max = g.o.large_value_size;
    if (g.large_max < g.vmax + 1) g.large_max = g.vmax + 1;
    if (g.large_max < 4096) g.large_max = 4096;
    char p[4200];
    path_in(p, sizeof p, g.exp_dir, "values");
    FILE *f = fopen(p, "r");
    if (f) {
        unsigned long long a, b, c, d;
        if (fscanf(f, "%llu %llu %llu %llu", &a, &b, &c, &d) == 4 &&
            (a != g.vmin || b != g.vmax || c != g.large_one_in || d != g.large_max)) {
            fprintf(stderr, "stress: note: keeping the value sizes of the expected state (%llu..%llu, large 1 in %llu up to %llu)\n",
                    a, b, c, d);
            g.vmin = a, g.vmax = b, g.large_one_in = c, g.large_max = d;
        }
        fclose(f);
        return;
    }
    f = fopen(p, "w");
    if (f) {
        fprintf(f, "%llu %llu %llu %llu\n", (unsigned long long)g.vmin, (unsigned long long)g.vmax,
                (unsigned long long)g.large_one_in, (unsigned long long)g.large_max);
        fclose(f);
    }
}

typedef struct ledger_feed {
    vd_ctx *v;
    size_t i, from, own_from;
    XXH3_state_t *h;
} ledger_feed;

static void feed_line(void *ctx, const char *line) {
    ledger_feed *lf = ctx;
    size_t i = lf->i++;
    if (i < lf->from) return;
    vd_add_ledger_line(lf->v, line, i < lf->own_from);
    if (i >= lf->own_from && lf->h) XXH3_64bits_update(lf->h, line, strlen(line));
}

/* V4b for page flips of any process (before a crash too): a flipped block
 * that still hashes to what the flip made of it is still there, and the
 * final verify just read it from disk.  Not when it also hashes to what
 * some flip found there (a second flip of the same bit undid the first). */
static void mark_flipped_pages_present(vd_ctx *v) {
    uint32_t ps = g.eo.page_size;
    char p[4200];
    path_in(p, sizeof p, g.o.db, "data");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    uint8_t *buf = ps ? malloc(ps) : NULL;
    for (size_t k = 0; fd >= 0 && buf && k < vd_injection_count(v); k++) {
        const vd_injection *j = vd_injection_at(v, k);
        if (j->cls != VD_BITFLIP_PAGE || !j->page_post || j->block < 0 || strcmp(j->file, "data")) continue;
        if (pread(fd, buf, ps, (off_t)((uint64_t)j->block * ps)) != (ssize_t)ps) continue;
        if (XXH64(buf, ps, 0) != j->page_post) continue;
        int undone = 0;
        for (size_t q = 0; q < vd_injection_count(v) && !undone; q++) {
            const vd_injection *o = vd_injection_at(v, q);
            undone = o->cls == VD_BITFLIP_PAGE && o->block == j->block && o->page_pre == j->page_post;
        }
        if (!undone) vd_mark_present(v, k);
    }
    free(buf);
    if (fd >= 0) close(fd);
}

/* Feed the judge everything this run knows: the ledger lines not yet
 * judged (carried ones from a crashed run first), the reports and the
 * observations; settle.  *TRACE_HASH: the per-thread op hashes and this
 * process's ledger lines. */
static vd_ctx *judge(vd_result *res, uint64_t *trace_hash) {
    vd_ctx *v = vd_new(&g.vc);
    XXH3_state_t *h = XXH3_createState();
    XXH3_64bits_reset(h);
    for (uint64_t i = 0; i < g.o.threads && g.w; i++) {
        uint64_t d = XXH3_64bits_digest(g.w[i].hash);
        XXH3_64bits_update(h, &d, sizeof d);
    }
    ledger_feed lf = {v, 0, g.ledger_settled, g.ledger_start, h};
    flt_ledger_read(g.run_dir, feed_line, &lf);
    *trace_hash = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    int carried_crash = g.crashed_before ? load_carried(v) : 0;
    for (size_t i = 0; i < vd_injection_count(v); i++) {
        const vd_injection *j = vd_injection_at(v, i);
        if (j->carried && (j->cls == VD_KILL || j->cls == VD_POWER_LOSS)) carried_crash = 1;
    }
    if (g.crashed_before && !carried_crash) vd_note_external_kill(v);
    pthread_mutex_lock(&g.mu);
    for (size_t i = 0; i < g.nreports; i++) vd_add_report(v, &g.reports[i]);
    for (size_t i = 0; i < g.nobs; i++) vd_add_observation(v, &g.obs[i]);
    pthread_mutex_unlock(&g.mu);
    vd_set_crash_check(v, g.crash_check);
    if (g.reopen_failed) vd_note_reopen_failed(v);
    for (size_t i = 0; i < g.ndamage; i++) vd_note_damage_present(v, (int64_t)g.damage[i]);
    if (g.final_verified) mark_flipped_pages_present(v);
    vd_settle(v, res);
    return v;
}

typedef struct carried_scan {
    size_t i, from, to;
    vd_config *vc;
} carried_scan;

static void scan_carried(void *ctx, const char *line) {
    carried_scan *cs = ctx;
    size_t i = cs->i++;
    vd_injection j;
    if (i < cs->from || i >= cs->to || vd_parse_ledger_line(line, &j)) return;
    if (j.cls >= 0 && j.cls < VD_CLASS_COUNT) cs->vc->class_on[j.cls] = 1;
}

/* ---- main ---- */

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (st_parse_options(argc, argv, &g.o)) return EXIT_USAGE;
    g.E = &st_engine_ours;
    if (g.o.help) {
        st_print_help(stdout);
        return EXIT_PASS;
    }
    if (g.o.list_fault_points) {
        for (size_t i = 0; i < g.E->fault_point_count(); i++)
            printf("%-44s %s\n", g.E->fault_point_name(i), g.E->fault_point_what(i));
        return EXIT_PASS;
    }
    if (g.E->planted_bug && g.E->planted_bug())
        fprintf(stderr, "stress: this engine carries the planted bug '%s' (tests/mutants.txt): not the real engine\n",
                g.E->planted_bug());
    g.eo = (st_open_options){
        .page_size = (uint32_t)g.o.page_size, .cache_size = g.o.cache_size, .data_checksums = g.o.data_checksums,
        .full_page_writes = g.o.full_page_writes, .wal_log_hints = g.o.wal_log_hints, .hint_fpi = g.o.hint_fpi,
        .vacuum_freeze_min_age = g.o.vacuum_freeze_min_age,
        .wal_compression = g.o.wal_compression,
        .block_protection_bytes_per_key = (int)g.o.block_protection_bytes_per_key, .io_backend = g.o.io_backend,
        .sync_mode = g.o.sync_mode, .wal_segment_size = g.o.wal_segment_size,
        .checkpoint_wal_bytes = g.o.checkpoint_wal_bytes, .on_corruption = on_corruption,
    };
    char why[256];
    if (g.E->check_options(&g.eo, why, sizeof why) != ST_OK) {
        fprintf(stderr, "stress: %s\n", why);
        return EXIT_USAGE;
    }
    if (g.o.expected_values_dir) snprintf(g.exp_dir, sizeof g.exp_dir, "%s", g.o.expected_values_dir);
    else snprintf(g.exp_dir, sizeof g.exp_dir, "%s.expected", g.o.db);
    snprintf(g.run_dir, sizeof g.run_dir, "%s", g.o.run_dir ? g.o.run_dir : g.exp_dir);
    g.o.expected_values_dir = g.exp_dir; /* as resolved, for the report */
    g.o.run_dir = g.run_dir;
    build_repro(argc, argv);
    g.t0 = now();
    g.crash_check = -1;
    g.reports_fd = g.obs_fd = -1;
    pthread_mutex_init(&g.mu, NULL);
    pthread_rwlock_init(&g.handle, NULL);

    vd_config vc = g.vc = (vd_config){.data_checksums = g.o.data_checksums, .full_page_writes = g.o.full_page_writes,
                    .protection_bytes = (int)g.o.block_protection_bytes_per_key, .page_size = (uint32_t)g.o.page_size,
                    .wal_segment_size = g.o.wal_segment_size};
    for (int i = 0; i < VD_CLASS_COUNT; i++) vc.class_on[i] = g.o.one_in[i] != 0;
    vc.class_on[VD_POWER_LOSS] = g.o.sync_fault_injection;
    vc.class_on[VD_KILL] = g.o.kill_random_test != 0;
    g.vc = vc;
    g.measuring = vd_measuring(&vc, NULL, 0);

    /* A directory the engine refuses (files of a database with one of
     * them lost: control, data, a WAL segment) is left exactly as it is:
     * nothing of it is created over, and nothing is written beside it.
     * Only --destroy_db_initially starts a new database there. */
    if (!g.o.destroy_db_initially && g.E->probe_dir) {
        char why[320];
        if (g.E->probe_dir(g.o.db, why, sizeof why) == ST_CORRUPTION) {
            fprintf(stderr, "stress: %s: the engine refuses this directory: %s\n"
                    "stress: nothing was changed; --destroy_db_initially removes it and creates a new database\n",
                    g.o.db, why);
            return EXIT_INFRA;
        }
    }

    /* ---- from here on, things are written ---- */
    if (g.o.destroy_db_initially) {
        rm_rf(g.o.db);
        const char *exp_files[] = {"expected", "trace", "values"};
        const char *run_files[] = {"ledger", "journal", "journal.d", ORC_REPORTS_FILE, ORC_OBSERVATIONS_FILE, "stress_state"};
        char p[4200];
        for (size_t i = 0; i < 3; i++) path_in(p, sizeof p, g.exp_dir, exp_files[i]), rm_rf(p);
        for (size_t i = 0; i < 6; i++) path_in(p, sizeof p, g.run_dir, run_files[i]), rm_rf(p);
    }
    if (mkdir_p(g.exp_dir) || mkdir_p(g.run_dir)) {
        fprintf(stderr, "stress: cannot create %s or %s: %s\n", g.exp_dir, g.run_dir, strerror(errno));
        return EXIT_INFRA;
    }
    char p[4200];
    path_in(p, sizeof p, g.exp_dir, "expected");
    int have_expected = access(p, F_OK) == 0;
    path_in(p, sizeof p, g.o.db, "control");
    if (!have_expected && access(p, F_OK) == 0) {
        fprintf(stderr, "stress: %s holds a database but %s has no expected state: use --destroy_db_initially\n",
                g.o.db, g.exp_dir);
        return EXIT_INFRA;
    }
    uint64_t prev_epoch = 0;
    int clean = 1;
    size_t settled = 0;
    if (read_state(&prev_epoch, &settled, &clean) == 0) g.crashed_before = !clean;
    g.epoch = prev_epoch + 1;
    g.ledger_settled = settled;
    g.ledger_start = ledger_lines();
    if (g.ledger_start < settled) g.ledger_settled = 0; /* the ledger was replaced */
    /* Faults an earlier process injected are judged here: their classes
     * count as on (a cache flip written back by a crashed measuring run
     * makes this run measure too). */
    carried_scan cs = {0, g.ledger_settled, g.ledger_start, &g.vc};
    flt_ledger_read(g.run_dir, scan_carried, &cs);
    g.measuring = vd_measuring(&g.vc, NULL, 0);
    if (write_state(g.epoch, g.ledger_settled, 0)) {
        fprintf(stderr, "stress: cannot write the run state in %s: %s\n", g.run_dir, strerror(errno));
        return EXIT_INFRA;
    }
    path_in(p, sizeof p, g.run_dir, ORC_REPORTS_FILE);
    g.reports_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    path_in(p, sizeof p, g.run_dir, ORC_OBSERVATIONS_FILE);
    g.obs_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    int rc = orc_open(g.exp_dir, g.o.max_key, g.o.seed, g.o.destroy_db_initially, &g.exp);
    if (rc) {
        fprintf(stderr, "stress: cannot open the expected state in %s: %s%s\n", g.exp_dir, strerror(-rc),
                rc == -EINVAL ? " (written for another --max_key?)" : "");
        return rc == -EINVAL ? EXIT_USAGE : EXIT_INFRA;
    }
    g.nstripes = orc_nstripes(g.exp);
    g.stripe_ver = calloc(g.nstripes, sizeof *g.stripe_ver);
    value_params();

    crash_len = (size_t)snprintf(crash_msg, sizeof crash_msg, "\nstress: FAILURE crash: fatal signal in the process\n    repro: %s\n",
                                 g.repro);
    if (crash_len >= sizeof crash_msg) crash_len = sizeof crash_msg - 1;
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal);
    signal(SIGILL, on_fatal);
    signal(SIGABRT, on_fatal);

    if (st_faults_requested(&g.o)) {
        flt_options fo;
        flt_options_init(&fo);
        fo.seed = g.o.seed;
        fo.run_dir = g.run_dir;
        fo.db_dir = g.o.db;
        for (int i = 0; i < FLT_CLASS_COUNT && i < VD_CLASS_COUNT; i++) fo.one_in[i] = g.o.one_in[i];
        fo.sync_fault_injection = g.o.sync_fault_injection;
        fo.kill_random_test = g.o.kill_random_test;
        fo.kill_points = g.o.kill_points;
        rc = flt_open(&fo, &g.flt);
        if (rc) {
            fprintf(stderr, "stress: cannot set up the fault library: %s\n", g.E->native_strerror(rc));
            return g.E->native_status(rc) == ST_INVALID ? EXIT_USAGE : EXIT_INFRA;
        }
        g.eo.io_hooks = flt_hooks(g.flt);
        flt_thread_start(g.flt, 0);
    }

    /* ---- open (recovery) and the post-open check ---- */
    /* The main thread is fault-library thread 0 too: its calls are
     * numbered from the top of the range so they never meet worker 0's. */
    worker main_w = {.id = 0, .calls = 0xf0000000u};
    atomic_store(&g.recovering, 1);
    int st = open_db(&main_w);
    int failed = 0;
    if (st == ST_CORRUPTION) {
        fprintf(stderr, "stress: the database does not open: corruption reported (judged below)\n");
        atomic_store(&g.unrecoverable, 1);
        g.crash_check = VD_CHECK_NO_OPEN;
    } else if (st != ST_OK) {
        fprintf(stderr, "stress: cannot open %s: %s\n", g.o.db, st_status_name(st));
        return EXIT_INFRA;
    } else {
        st_recovery rec;
        g.E->recovery(g.db, &rec);
        int after_crash = g.crashed_before;
        int bad = post_open_check(&main_w, after_crash, after_crash ? "post-crash check" : "check at start");
        if (bad == 1) failed = 1;
        if (after_crash) g.crash_check = bad ? VD_CHECK_LOST : VD_CHECK_PASSED;
    }
    atomic_store(&g.recovering, 0);

    /* ---- the workload ---- */
    g.w = calloc(g.o.threads, sizeof *g.w);
    size_t maxv = (g.large_one_in ? g.large_max : g.vmax);
    if (maxv < 12) maxv = 12;
    for (uint64_t i = 0; i < g.o.threads; i++) {
        worker *w = &g.w[i];
        w->id = (int)i;
        w->rng = mix64(g.o.seed ^ mix64(i + 1) ^ 0x5354524553530000ull);
        w->hash = XXH3_createState();
        XXH3_64bits_reset(w->hash);
        w->vbuf = malloc(MAX_BATCH * maxv);
        if (!w->hash || !w->vbuf) return EXIT_INFRA;
    }
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog_main, NULL);
    if (!g.o.verification_only && g.db && !failed) {
        double t = now();
        for (uint64_t i = 0; i < g.o.threads; i++) pthread_create(&g.w[i].th, NULL, worker_main, &g.w[i]);
        for (uint64_t i = 0; i < g.o.threads; i++) pthread_join(g.w[i].th, NULL);
        g.work_s = now() - t;
    }

    if (g.o.crash_at_end) {
        /* A crash of our own, at a known point: every acknowledged write
         * is settled and noted, none in flight.  The next run's
         * post-crash check judges recovery. */
        fprintf(stderr, "stress: --crash_at_end: killing this process after %llu ops\n",
                (unsigned long long)total_done());
        fflush(NULL);
        kill(getpid(), SIGKILL);
    }

    /* ---- settlement ---- */
    if (g.flt) flt_pause(g.flt, 1);
    int closed_ok = 0;
    if (g.db && !failed) {
        worker *w0 = &g.w[0];
        uint64_t problems = 0;
        int vst = g.E->verify(g.db, &problems);
        if (vst != ST_OK && vst != ST_CORRUPTION) fprintf(stderr, "stress: final verify: %s\n", st_status_name(vst));
        uint64_t before = atomic_load(&g.failures);
        verify_all(w0, 0, "settlement");
        check_doubts(w0, 0);
        if (atomic_load(&g.failures) != before) failed = 1;
        orc_note_durable(g.exp, g.E->durable_seq(g.db));
    }
    if (g.db) {
        release_snapshots();
        st = g.E->close(g.db);
        g.db = NULL;
        closed_ok = st == ST_OK;
        if (closed_ok) {
            /* Every block from disk (a page cached clean all run long
             * hid whatever happened to it on disk). */
            uint64_t problems = 0;
            st_open_options vo = g.eo;
            int vd = g.E->verify_dir(g.o.db, &vo, &problems);
            /* A clean close made everything durable.  Every block was just
             * read from disk: damage the fault library shows still there
             * must have been reported (oracle V4b). */
            g.final_verified = vd == ST_OK || vd == ST_CORRUPTION;
            if (g.flt && g.final_verified) {
                size_t n = flt_damage_present(g.flt, NULL, 0);
                g.damage = n ? calloc(n, sizeof *g.damage) : NULL;
                if (g.damage) g.ndamage = flt_damage_present(g.flt, g.damage, n);
                if (g.ndamage > n) g.ndamage = n;
            }
        }
    }
    atomic_store(&watch_stop, 1);
    pthread_join(wd, NULL);

    /* ---- the verdict ---- */
    vd_result res;
    uint64_t trace_hash;
    vd_ctx *v = judge(&res, &trace_hash);

    /* Reports that matched no injection: each is a failure to explain. */
    for (size_t i = 0; i < vd_false_alarm_count(v) && i < MAX_DETAILED; i++) {
        const vd_report *r = vd_false_alarm_at(v, i);
        fprintf(stderr,
                "stress: FAILURE false_alarm: corruption reported with no injection there: layer=%s file=%s block=%lld "
                "offset=%lld: %s\n    repro: %s\n",
                r->layer, r->file, (long long)r->block, (long long)r->offset, r->detail, g.repro);
    }
    for (size_t i = 0; i < vd_injection_count(v); i++) {
        const vd_injection *j = vd_injection_at(v, i);
        if (j->outcome == VD_SWALLOWED && j->present && i < 1000)
            fprintf(stderr,
                    "stress: FAILURE swallowed: %s injected at %s (file %s block %lld offset %lld len %lld) is still on "
                    "disk (nothing overwrote it) but no check reported it, not even the final verify of every block\n"
                    "    repro: %s\n",
                    j->cls_name, j->point, j->file, (long long)j->block, (long long)j->offset, (long long)j->len,
                    g.repro);
        else if (j->outcome == VD_SWALLOWED && i < 1000)
            fprintf(stderr,
                    "stress: FAILURE swallowed: %s injected at %s (thread %d, op %lld:%lld) but the call returned ok\n    "
                    "repro: %s\n",
                    j->cls_name, j->point, j->thread, (long long)(j->op >> 32), (long long)(j->op & 0xffffffff),
                    g.repro);
    }
    if (res.unrecoverable && res.by_design[0])
        fprintf(stderr, "stress: unrecoverable_by_design: the database did not come back, explained by %s\n",
                res.by_design);
    else if (res.unrecoverable && res.unrecoverable_why[0])
        fprintf(stderr, "stress: FAILURE unrecoverable: %s\n    repro: %s\n", res.unrecoverable_why, g.repro);
    write_report(&res, v, trace_hash, 0);
    int pass = res.pass && !failed && !atomic_load(&g.infra);
    uint64_t ops = 0;
    for (int i = 0; i < OP_TYPES; i++) ops += atomic_load(&g.ops[i]);
    uint64_t inj = res.total.injected;
    printf("stress: %s mode=%s ops=%llu verified=%llu injected=%llu detected=%llu repaired=%llu masked=%llu "
           "undetectable=%llu failures=%llu trace_hash=%016llx elapsed=%.2fs\n",
           pass ? "pass" : "FAIL", res.measuring ? "measuring" : "judging", (unsigned long long)ops,
           (unsigned long long)atomic_load(&g.verified), (unsigned long long)inj,
           (unsigned long long)res.total.detected, (unsigned long long)res.total.repaired,
           (unsigned long long)res.total.masked, (unsigned long long)res.total.undetectable,
           (unsigned long long)vd_failures(&res.total), (unsigned long long)trace_hash, now() - g.t0);
    if (!pass) printf("stress: repro: %s\n", g.repro);

    /* This run's faults are judged: the next run starts after them. */
    size_t total = ledger_lines();
    if (closed_ok || g.unrecoverable) {
        write_state(g.epoch, total, 1);
        if (g.reports_fd >= 0 && ftruncate(g.reports_fd, 0)) {}
        if (g.obs_fd >= 0 && ftruncate(g.obs_fd, 0)) {}
    }
    vd_free(v);
    if (g.flt) flt_close(g.flt);
    orc_close(g.exp);
    for (uint64_t i = 0; i < g.o.threads; i++) {
        XXH3_freeState(g.w[i].hash);
        free(g.w[i].vbuf);
        st_buf_free(&g.w[i].rbuf);
    }
    free(g.w);
    free(g.reports);
    free(g.obs);
    free(g.doubt);
    free((void *)g.stripe_ver);
    if (g.reports_fd >= 0) close(g.reports_fd);
    if (g.obs_fd >= 0) close(g.obs_fd);
    if (atomic_load(&g.infra)) return EXIT_INFRA;
    return pass ? EXIT_PASS : EXIT_FAIL;
}
