/*
 * test_mvcc_hints_never_decide_wrong.c -- hint bits: a hint-only page torn
 * by a crash reads clean, hint-only changes log WAL only when asked, a
 * "committed" hint never reaches disk before its commit, and crashes among
 * hints and aborts keep exactly the commits (sections 3, 4, 7, 11).
 *
 * Part of the mvcc suite (once test_mvcc.c); the helpers it shares
 * with the other test_mvcc_*.c files are in mvcc_helpers.h.
 */
#include "mvcc_helpers.h"

/* ========================================================================= */
/* 3. A page whose only change is hint bits, torn by a crash, reads clean.    */
/* ========================================================================= */

#define TH_KEYS         3000u
#define TH_RANDOM_TEARS 12
#define TH_MAXW         4096

static struct {
    int armed;
    int captured;
    const char *src;
    char crash[256];
    uint64_t written[TH_MAXW];
    size_t nwritten;
} TH;

/* The crash point: every write-back of the checkpoint has been issued and
 * the data file is about to be synced.  The directory as it is then
 * (new data pages, the log with whatever the write-back logged, the old
 * control file) is what a power cut there leaves, but for torn pages. */
static int th_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (!TH.armed || !is_data_file(op)) return 0;
    if (op->kind == ENG_IO_WRITE) {
        for (uint64_t b = op->offset / PS; b < (op->offset + op->len + PS - 1) / PS && TH.nwritten < TH_MAXW; b++)
            TH.written[TH.nwritten++] = b;
    } else if (op->kind == ENG_IO_SYNC && !TH.captured) {
        tu_copy_dir(TH.src, TH.crash);
        TH.captured = 1;
    }
    return 0;
}

static size_t val_gen0(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    (void)ctx;
    return mv_val(buf, i, 0);
}

static void hint_only_page_torn_run(int hint_fpi) {
    const char *root = tu_tmpdir();
    char dir[256], torn[256];
    snprintf(dir, sizeof dir, "%s/db", root);
    snprintf(torn, sizeof torn, "%s/torn", root);
    memset(&TH, 0, sizeof TH);
    snprintf(TH.crash, sizeof TH.crash, "%s/crash", root);
    TH.src = dir;
    static eng_io_hooks hooks = {NULL, th_before, NULL};
    eng_options o = mv_opts(ENG_IO_PSYNC, 1024); /* everything stays cached: only the checkpoint writes */
    o.data_checksums = 1;
    o.hint_fpi = hint_fpi;
    o.wal_segment_size = 64u << 10;
    o.io_hooks = &hooks;
    const char *mode = hint_fpi ? "hint_fpi=1" : "hint_fpi=0";

    eng_db *db = tu_open(dir, &o);
    load_keys(db, NULL, 0, TH_KEYS, 100);
    tu_close(db);

    db = tu_open(dir, &o);
    eng_stats s0 = stats_of(db);
    cr_assert(s0.data_checksums, "checksums are off");
    cu_check_prefix(db, val_gen0, NULL, "cold read of every row");
    eng_buf vb = {0};
    char k[CU_KLEN + 1];
    for (uint64_t i = 0; i < TH_KEYS; i++) cr_assert_eq(eng_get(db, k, cu_key(k, i), &vb), ENG_OK);
    eng_buf_free(&vb);
    eng_stats s1 = stats_of(db);
    cr_assert_gt(s1.hints_set, s0.hints_set, "%s: reading every row set no hint bits", mode);
    cr_assert_eq(s1.page_writes, s0.page_writes, "%s: reads wrote pages before the checkpoint", mode);

    char p[512];
    size_t old_len;
    uint8_t *old = cu_read_file(tu_path(p, sizeof p, dir, "data"), &old_len);
    TH.armed = 1;
    int rc = eng_checkpoint(db);
    TH.armed = 0;
    cr_assert_eq(rc, ENG_OK, "%s: checkpoint: %s", mode, eng_strerror(rc));
    cr_assert(TH.captured, "%s: the checkpoint never synced the data file", mode);
    eng_stats s2 = stats_of(db);
    cr_log_info("%s: %llu hints set; checkpoint wrote %llu pages, %llu hint-only, %llu hint WAL records (%llu bytes)",
                mode, (unsigned long long)(s1.hints_set - s0.hints_set),
                (unsigned long long)(s2.page_writes - s1.page_writes),
                (unsigned long long)(s2.hint_pages_written - s1.hint_pages_written),
                (unsigned long long)(s2.hint_wal_records - s1.hint_wal_records),
                (unsigned long long)(s2.hint_wal_bytes - s1.hint_wal_bytes));
    cr_assert_gt(s2.hint_pages_written, s1.hint_pages_written, "%s: the checkpoint wrote no hint-only page", mode);
    if (hint_fpi)
        cr_assert_gt(s2.hint_wal_records, s1.hint_wal_records, "%s: with checksums on, no image was logged", mode);
    else
        cr_assert_eq(s2.hint_wal_records, s1.hint_wal_records, "%s: hint-only writes were logged", mode);
    cu_verify_clean(db, "after the checkpoint");
    tu_close(db);

    size_t new_len;
    uint8_t *neu = cu_read_file(tu_path(p, sizeof p, TH.crash, "data"), &new_len);
    cr_assert_eq(new_len, old_len, "%s: the data file changed size across a hint-only write-back", mode);
    uint64_t nblocks = new_len / PS, ndiff = 0, sect_hist[PS / 512 + 1] = {0};
    uint64_t *diff = calloc(nblocks, sizeof *diff);
    cr_assert(diff != NULL);
    for (uint64_t blk = 0; blk < nblocks; blk++) {
        if (!memcmp(old + blk * PS, neu + blk * PS, PS)) continue;
        int nsect = 0;
        for (uint32_t s = 0; s < PS / 512; s++)
            nsect += memcmp(old + blk * PS + s * 512, neu + blk * PS + s * 512, 512) != 0;
        sect_hist[nsect]++;
        diff[ndiff++] = blk;
    }
    cr_assert_gt(ndiff, 0, "%s: the write-back changed no page", mode);
    for (uint64_t d = 0; d < ndiff; d++) {
        int w = 0;
        for (size_t i = 0; i < TH.nwritten && !w; i++) w = TH.written[i] == diff[d];
        cr_assert(w, "%s: block %llu changed on disk but was never written", mode, (unsigned long long)diff[d]);
    }
    char hist[256];
    size_t hl = 0;
    for (uint32_t s = 0; s <= PS / 512; s++)
        if (sect_hist[s])
            hl += (size_t)snprintf(hist + hl, sizeof hist - hl, " %u:%llu", s, (unsigned long long)sect_hist[s]);
    cr_log_info("%s: %llu pages changed; sectors changed per page (count:pages):%s", mode, (unsigned long long)ndiff,
                hist);

    /* Tear patterns over the 8 sectors of a page: bit s set = sector s new.
     * Prefixes (a write cut short), suffixes (written out of order), all
     * old, all new, then random mixes (per page). */
    const uint32_t nsect = PS / 512, all = (1u << nsect) - 1;
    int npat = 2 * (int)(nsect - 1) + 2 + TH_RANDOM_TEARS;
    uint64_t seed = cu_seed(0x70 + (uint64_t)hint_fpi);
    tu_rng rng = {seed};
    uint8_t page[PS];
    for (int pat = 0; pat < npat; pat++) {
        char what[200];
        snprintf(what, sizeof what, "%s seed 0x%llx tear pattern %d", mode, (unsigned long long)seed, pat);
        tu_copy_dir(TH.crash, torn);
        for (uint64_t d = 0; d < ndiff; d++) {
            uint32_t mask;
            if (pat < (int)nsect - 1)
                mask = (1u << (pat + 1)) - 1; /* prefix new */
            else if (pat < 2 * (int)(nsect - 1))
                mask = all & ~((1u << (pat - (int)nsect + 2)) - 1); /* suffix new */
            else if (pat == 2 * (int)(nsect - 1))
                mask = 0;
            else if (pat == 2 * (int)(nsect - 1) + 1)
                mask = all;
            else
                mask = (uint32_t)tu_below(&rng, all + 1);
            uint64_t blk = diff[d];
            for (uint32_t s = 0; s < nsect; s++)
                memcpy(page + s * 512, ((mask >> s) & 1 ? neu : old) + blk * PS + s * 512, 512);
            tu_write_page(torn, blk, PS, page);
        }
        tu_reports rep;
        tu_reports_init(&rep);
        eng_options oo = o;
        oo.io_hooks = NULL;
        eng_db *t = open_checked(torn, &oo, &rep, what);
        eng_recovery_info ri;
        eng_get_recovery_info(t, &ri);
        cu_check_prefix(t, val_gen0, NULL, what);
        cu_verify_clean(t, what);
        char buf[2048];
        cr_assert_eq(rep.total, 0, "%s: %zu corruption reports:\n%s", what, rep.total,
                     tu_reports_str(&rep, buf, sizeof buf));
        if (pat == 0) cr_log_info("%s: recovery restored %llu images", what, (unsigned long long)ri.images_restored);
        tu_close(t);
    }
    free(diff);
    free(old);
    free(neu);
}

Test(mvcc, hint_only_page_torn_by_crash_reads_back_clean, T_OPTS) { hint_only_page_torn_run(0); }

Test(mvcc, hint_only_page_torn_by_crash_repaired_by_image, T_OPTS) { hint_only_page_torn_run(1); }

/* ========================================================================= */
/* 4. Hint-only changes log WAL only when asked to.                          */
/* ========================================================================= */

typedef struct hint_case {
    int checksums, log_hints, fpi;
    int expect_wal;
} hint_case;

ParameterizedTestParameters(mvcc, hint_only_writes_log_wal_only_when_asked) {
    static hint_case cases[] = {
        {0, 0, 0, 0}, /* checksums off, wal_log_hints off: no WAL */
        {1, 0, 0, 0}, /* checksums on: hints in the first sector need no WAL */
        {0, 0, 1, 0}, /* PostgreSQL's rule needs checksums or wal_log_hints */
        {0, 1, 0, 1}, /* wal_log_hints: compact hint records */
        {1, 0, 1, 1}, /* PostgreSQL's rule: an image */
    };
    return cr_make_param_array(hint_case, cases, sizeof cases / sizeof cases[0]);
}

/* Load, close, reopen: READS gets every row, then a checkpoint.  Returns
 * the stats just before (*before) and after the checkpoint. */
static eng_stats hint_round(const char *dir, const hint_case *c, int reads, eng_stats *before) {
    eng_options o = mv_opts(ENG_IO_PSYNC, 1024);
    o.data_checksums = c->checksums;
    o.wal_log_hints = c->log_hints;
    o.hint_fpi = c->fpi;
    eng_db *db = tu_open(dir, &o);
    load_keys(db, NULL, 0, 2000, 100);
    tu_close(db);
    db = tu_open(dir, &o);
    *before = stats_of(db);
    if (reads) {
        eng_buf vb = {0};
        char k[CU_KLEN + 1];
        for (uint64_t i = 0; i < 2000; i++) cr_assert_eq(eng_get(db, k, cu_key(k, i), &vb), ENG_OK);
        eng_buf_free(&vb);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    eng_stats after = stats_of(db);
    tu_close(db);
    return after;
}

ParameterizedTest(hint_case *c, mvcc, hint_only_writes_log_wal_only_when_asked, T_OPTS) {
    const char *root = tu_tmpdir();
    char a[256], b[256], what[128];
    snprintf(a, sizeof a, "%s/reads", root);
    snprintf(b, sizeof b, "%s/noreads", root);
    snprintf(what, sizeof what, "data_checksums=%d wal_log_hints=%d hint_fpi=%d", c->checksums, c->log_hints, c->fpi);
    eng_stats a0, b0;
    eng_stats a1 = hint_round(a, c, 1, &a0), b1 = hint_round(b, c, 0, &b0);
    uint64_t da = a1.wal_bytes - a0.wal_bytes, db = b1.wal_bytes - b0.wal_bytes;
    cr_log_info("%s: checkpoint after reading everything: %llu WAL bytes, %llu hint records (%llu bytes), "
                "%llu hint-only pages; checkpoint alone: %llu WAL bytes",
                what, (unsigned long long)da, (unsigned long long)(a1.hint_wal_records - a0.hint_wal_records),
                (unsigned long long)(a1.hint_wal_bytes - a0.hint_wal_bytes),
                (unsigned long long)(a1.hint_pages_written - a0.hint_pages_written), (unsigned long long)db);
    cr_assert_gt(a1.hints_set, a0.hints_set, "%s: reading every row set no hints", what);
    cr_assert_gt(a1.hint_pages_written, a0.hint_pages_written, "%s: no hint-only page was written", what);
    cr_assert_eq(b1.hint_pages_written, b0.hint_pages_written, "%s: hint-only pages without reads", what);
    if (!c->expect_wal) {
        cr_assert_eq(a1.hint_wal_records, a0.hint_wal_records, "%s: hint-only writes logged records", what);
        cr_assert_eq(a1.hint_wal_bytes, a0.hint_wal_bytes, "%s: hint-only writes logged bytes", what);
        cr_assert_eq(da, db, "%s: the checkpoint logged %llu bytes after reads, %llu without", what,
                     (unsigned long long)da, (unsigned long long)db);
    } else {
        cr_assert_gt(a1.hint_wal_records, a0.hint_wal_records, "%s: hint-only writes logged nothing", what);
        cr_assert_gt(a1.hint_wal_bytes, a0.hint_wal_bytes, "%s: no hint WAL bytes", what);
        cr_assert_gt(da, db, "%s: the checkpoint logged %llu bytes after reads, %llu without", what,
                     (unsigned long long)da, (unsigned long long)db);
    }
}

/* ========================================================================= */
/* 7. A hint that says "committed" never reaches the data file before the   */
/*    commit itself reaches the log (PostgreSQL's rule for async commits:   */
/*    else a crash keeps part of a batch that recovery aborts).             */
/* ========================================================================= */

#define HC_BASE   3000u
#define HC_KEYS   40u
#define HC_STRIDE 70u

Test(mvcc, commit_hint_never_reaches_disk_before_the_commit, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    /* sync off, a log buffer that holds the batch, a cache far smaller
     * than the table: the batch's leaves are evicted (written) while its
     * commit may still be only in memory. */
    eng_options o = mv_opts(ENG_IO_PSYNC, 16);
    o.wal_buffer_size = 1u << 20;
    int32_t *g = gens_new(HC_BASE + 1);
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, HC_BASE, 100);
    tu_close(db);

    for (int r = 0; r < 2; r++) {
        int fd;
        pid_t pid = cu_fork_piped(&fd);
        if (pid == 0) {
            eng_db *c = child_open(dir, &o);
            batch b;
            batch_init(&b, HC_KEYS);
            for (uint64_t j = 0; j < HC_KEYS; j++) batch_add(&b, j * HC_STRIDE, 1 + r);
            uint64_t seq = 0;
            if (eng_write(c, b.ops, b.n, &seq)) _exit(CU_EXIT_FAIL);
            eng_buf vb = {0};
            char k[CU_KLEN + 1];
            /* read the batch (hints, if allowed), then everything (evictions) */
            for (uint64_t j = 0; j < HC_KEYS; j++)
                if (eng_get(c, k, cu_key(k, j * HC_STRIDE), &vb)) _exit(CU_EXIT_FAIL);
            for (uint64_t i = 0; i < HC_BASE; i++)
                if (eng_get(c, k, cu_key(k, i), &vb)) _exit(CU_EXIT_FAIL);
            eng_stats st;
            eng_get_stats(c, &st);
            uint64_t msg[4] = {seq, eng_durable_seq(c), st.page_writes, st.hints_set};
            if (cu_write_all(fd, msg, sizeof msg)) _exit(CU_EXIT_FAIL);
            _exit(CU_EXIT_HOOK); /* a crash: no sync, no close */
        }
        uint64_t msg[4] = {0};
        size_t got = cu_read_all(fd, msg, sizeof msg);
        close(fd);
        int st = cu_wait(pid);
        char sb[64];
        cr_assert(got == sizeof msg && WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "round %d: child: %s", r,
                  cu_status_str(st, sb, sizeof sb));
        cr_log_info("round %d: batch seq %llu, durable seq %llu at the crash, %llu page writes, %llu hints set", r,
                    (unsigned long long)msg[0], (unsigned long long)msg[1], (unsigned long long)msg[2],
                    (unsigned long long)msg[3]);
        cr_assert_gt(msg[2], 0, "round %d: nothing was evicted", r);

        tu_reports rep;
        tu_reports_init(&rep);
        db = open_checked(dir, &o, &rep, "reopen after the crash");
        eng_buf vb = {0};
        char k[CU_KLEN + 1];
        uint8_t want[CU_VMAX];
        uint64_t present = 0;
        for (uint64_t j = 0; j < HC_KEYS; j++) {
            uint64_t i = j * HC_STRIDE;
            cr_assert_eq(eng_get(db, k, cu_key(k, i), &vb), ENG_OK);
            if (tu_bytes_eq(vb.data, vb.len, want, mv_val(want, i, 1 + r)))
                present++;
            else
                cr_assert(tu_bytes_eq(vb.data, vb.len, want, mv_val(want, i, g[i])), "key %llu: neither value",
                          (unsigned long long)i);
        }
        eng_buf_free(&vb);
        cr_assert(present == 0 || present == HC_KEYS,
                  "round %d: %llu of the batch's %u keys survived the crash (durable seq %llu, batch %llu): "
                  "committed hints reached the data file before the commit",
                  r, (unsigned long long)present, HC_KEYS, (unsigned long long)msg[1], (unsigned long long)msg[0]);
        if (msg[1] >= msg[0]) cr_assert_eq(present, HC_KEYS, "round %d: the batch was durable yet is gone", r);
        if (present)
            for (uint64_t j = 0; j < HC_KEYS; j++) g[j * HC_STRIDE] = 1 + r;
        check_all(db, NULL, g, HC_BASE + 1, "after the crash");
        cu_verify_clean(db, "after the crash");
        tu_close(db);
        cr_assert_eq(rep.total, 0, "round %d: %zu corruption reports", r, rep.total);
    }
    free(g);
}

/* ========================================================================= */
/* 11. Crashes in a workload of small batches, aborted batches (read errors  */
/*     injected into writes), reads that set hints and evictions, with      */
/*     hints logged (wal_log_hints, hint_fpi) or not: recovery keeps        */
/*     exactly the acknowledged commits, the batch in flight whole or not   */
/*     at all, and no aborted one.                                          */
/* ========================================================================= */

#define CW_KEYS   1500u
#define CW_MAXB   4000u
#define CW_ROUNDS 3

typedef struct cw_case {
    int checksums, log_hints, fpi;
} cw_case;

static struct {
    int armed;
    tu_rng rng;
    uint64_t injected;
} CW;

static int cw_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (CW.armed && op->kind == ENG_IO_READ && is_data_file(op) && tu_below(&CW.rng, 40) == 0) {
        CW.injected++;
        return -EIO;
    }
    return 0;
}

/* Batch W of round SEED: 1..4 ops on keys below CW_KEYS (put at gen W or
 * delete), no key twice. */
static void cw_batch(uint64_t seed, uint32_t w, batch *b) {
    tu_rng r = {rng_mix64(seed ^ (uint64_t)w * 0x9e37u)};
    b->n = 0;
    size_t ops = (size_t)tu_range(&r, 1, 4);
    for (size_t j = 0; j < ops; j++) {
        uint64_t i = tu_below(&r, CW_KEYS);
        int dup = 0;
        for (size_t q = 0; q < b->n; q++) dup |= cu_key_index(b->ops[q].key, b->ops[q].klen) == (int64_t)i;
        if (!dup) batch_add(b, i, tu_below(&r, 5) == 0 ? -1 : (int32_t)w);
    }
}

static eng_options cw_opts(const cw_case *c) {
    eng_options o = mv_opts(ENG_IO_PSYNC, 16);
    o.sync_mode = ENG_SYNC_COMMIT;
    o.checkpoint_wal_bytes = 128u << 10; /* checkpoints among the hints */
    o.data_checksums = c->checksums;
    o.wal_log_hints = c->log_hints;
    o.hint_fpi = c->fpi;
    return o;
}

enum { CW_COMMITTED = 1, CW_ABORTED = 2, CW_POISONED = 3 };

static void cw_child(const char *dir, const cw_case *c, uint64_t seed, int fd) {
    static eng_io_hooks hooks = {NULL, cw_before, NULL};
    eng_options o = cw_opts(c);
    o.io_hooks = &hooks;
    CW.rng.s = seed;
    eng_db *db = child_open(dir, &o);
    batch b;
    batch_init(&b, 4);
    eng_buf vb = {0};
    char k[CU_KLEN + 1];
    tu_rng r = {seed ^ 0x77};
    for (uint32_t w = 1; w <= CW_MAXB; w++) {
        cw_batch(seed, w, &b);
        CW.armed = 1;
        int rc = eng_write(db, b.ops, b.n, NULL);
        CW.armed = 0;
        uint32_t m[2] = {w, rc == ENG_OK ? CW_COMMITTED : eng_poisoned(db) ? CW_POISONED : CW_ABORTED};
        if (cu_write_all(fd, m, sizeof m)) _exit(CU_EXIT_FAIL);
        if (m[1] == CW_POISONED) _exit(CU_EXIT_DONE);
        /* reads set hints on what they meet, and the 16-page cache evicts */
        for (int j = 0; j < 6; j++) {
            int g = eng_get(db, k, cu_key(k, tu_below(&r, CW_KEYS)), &vb);
            if (g != ENG_OK && g != ENG_NOTFOUND) _exit(CU_EXIT_FAIL);
        }
    }
    _exit(CU_EXIT_DONE);
}

ParameterizedTestParameters(mvcc, crash_among_hints_and_aborts_keeps_exact_commits) {
    static cw_case cases[] = {{1, 0, 0}, {0, 1, 0}, {1, 0, 1}};
    return cr_make_param_array(cw_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(cw_case *c, mvcc, crash_among_hints_and_aborts_keeps_exact_commits, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    int32_t *g = gens_new(CW_KEYS + 1), *alt = gens_new(CW_KEYS + 1);
    eng_options o = cw_opts(c);
    batch b;
    batch_init(&b, 4);
    for (int r = 0; r < CW_ROUNDS; r++) {
        uint64_t seed = cu_seed(0xc3 + (uint64_t)r * 17 + (uint64_t)c->log_hints * 3 + (uint64_t)c->fpi * 5);
        tu_rng rng = {seed};
        uint64_t kill_after = tu_range(&rng, 150, 600); /* acknowledgements */
        char what[200];
        snprintf(what, sizeof what, "checksums=%d wal_log_hints=%d hint_fpi=%d round %d seed 0x%llx", c->checksums,
                 c->log_hints, c->fpi, r, (unsigned long long)seed);
        int fd;
        pid_t pid = cu_fork_piped(&fd);
        if (pid == 0) cw_child(dir, c, seed, fd);
        /* Apply each reported batch to the model; kill the child after
         * KILL_AFTER reports (it may have committed one more). */
        uint32_t m[2], last = 0, aborted = 0, poisoned = 0;
        static uint8_t status[CW_MAXB + 2];
        memset(status, 0, sizeof status);
        while (cu_read_all(fd, m, sizeof m) == sizeof m) {
            cr_assert_eq(m[0], last + 1, "%s: reports out of order", what);
            last = m[0];
            status[m[0]] = (uint8_t)m[1];
            if (m[1] == CW_COMMITTED) {
                cw_batch(seed, m[0], &b);
                for (size_t j = 0; j < b.n; j++) {
                    int64_t i = cu_key_index(b.ops[j].key, b.ops[j].klen);
                    g[i] = b.ops[j].kind == ENG_OP_DELETE ? -1 : (int32_t)m[0];
                }
            } else if (m[1] == CW_ABORTED) {
                aborted++;
            } else {
                poisoned = 1;
            }
            if (last == kill_after) kill(pid, SIGKILL);
        }
        close(fd);
        cu_wait(pid);
        /* The batch in flight (after the last report, or the one that
         * poisoned the handle) is in doubt: all of it or none. */
        uint32_t doubt = poisoned ? last : last + 1;
        memcpy(alt, g, (CW_KEYS + 1) * sizeof *g);
        cw_batch(seed, doubt, &b);
        for (size_t j = 0; j < b.n; j++) {
            int64_t i = cu_key_index(b.ops[j].key, b.ops[j].klen);
            alt[i] = b.ops[j].kind == ENG_OP_DELETE ? -1 : (int32_t)doubt;
        }
        tu_reports rep;
        tu_reports_init(&rep);
        eng_db *db = open_checked(dir, &o, &rep, what);
        eng_recovery_info ri;
        eng_get_recovery_info(db, &ri);
        /* Which way did the batch in doubt go?  Judge by its first op that
         * makes a difference (none: the model without it must fit). */
        int64_t i0 = -1;
        for (size_t j = 0; j < b.n && i0 < 0; j++) {
            int64_t i = cu_key_index(b.ops[j].key, b.ops[j].klen);
            if (alt[i] != g[i]) i0 = i;
        }
        eng_buf vb = {0};
        char k[CU_KLEN + 1];
        uint8_t want[CU_VMAX];
        int rc = ENG_NOTFOUND, in = 0;
        if (i0 >= 0) {
            rc = eng_get(db, k, cu_key(k, (uint64_t)i0), &vb);
            in = alt[i0] < 0 ? rc == ENG_NOTFOUND
                             : rc == ENG_OK && tu_bytes_eq(vb.data, vb.len, want, mv_val(want, (uint64_t)i0, alt[i0]));
        }
        cr_log_info("%s: %u reports (%u aborted%s), batch %u in doubt %s; recovery: committed %llu aborted %llu", what,
                    last, aborted, poisoned ? ", then poisoned" : "", doubt, in ? "kept" : "dropped",
                    (unsigned long long)ri.txns_committed, (unsigned long long)ri.txns_aborted);
        cr_assert_gt(aborted, 0, "%s: no batch was aborted by the injected read errors", what);
        if (in) memcpy(g, alt, (CW_KEYS + 1) * sizeof *g);
        /* Name the batch behind any wrong answer before the generic check. */
        for (uint64_t i = 0; i < CW_KEYS; i++) {
            rc = eng_get(db, k, cu_key(k, i), &vb);
            uint32_t h[3] = {0, 0, 0};
            if (rc == ENG_OK && vb.len >= sizeof h) memcpy(h, vb.data, sizeof h);
            int ok = g[i] < 0 ? rc == ENG_NOTFOUND : rc == ENG_OK && h[1] == (uint32_t)g[i];
            static const char *sname[] = {"never reported", "committed", "aborted", "poisoned"};
            cr_assert(ok, "%s: key %llu: want %s%d, found %s gen %u, written by batch %u (%s%s); last report %u", what,
                      (unsigned long long)i, g[i] < 0 ? "absent " : "gen ", g[i], eng_strerror(rc), h[1], h[1],
                      h[1] <= CW_MAXB ? sname[status[h[1]]] : "?", h[1] == doubt ? ", in doubt" : "", last);
        }
        eng_buf_free(&vb);
        check_all(db, NULL, g, CW_KEYS + 1, what);
        cu_verify_clean(db, what);
        tu_close(db);
        char buf[2048];
        cr_assert_eq(rep.total, 0, "%s: %zu corruption reports:\n%s", what, rep.total,
                     tu_reports_str(&rep, buf, sizeof buf));
        /* the next round goes on from here: gens are generation = batch
         * number of its round, so restart from an empty database */
        tu_rm_rf(dir);
        for (uint64_t i = 0; i <= CW_KEYS; i++) g[i] = -1;
    }
    batch_free(&b);
    free(g);
    free(alt);
}
