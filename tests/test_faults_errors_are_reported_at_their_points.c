/*
 * test_faults_errors_are_reported_at_their_points.c -- the libfiu classes
 * (read, write, nospace and sync errors) fail the call that met them,
 * poison where they must, and reach every point their class names, each
 * fired, in the ledger and detected.
 *
 * Part of the faults suite (once test_faults.c); the helpers it shares
 * with the other test_faults_*.c files are in faults_helpers.h.
 */
#include <stdatomic.h>

#include "faults_helpers.h"

/* ---- libfiu classes --------------------------------------------------------------------- */

/* The last ledger line must be CLS at POINT with ERR. */
static void check_last(const char *run, const char *cls, const char *point, const char *err) {
    lg l = lg_read(run);
    cr_assert(l.n > 0, "empty ledger");
    const char *line = l.lines[l.n - 1];
    cr_assert(line_is(line, "class", cls), "%s", line);
    cr_assert(line_is(line, "point", point), "%s", line);
    if (err) cr_assert(line_is(line, "err", err), "%s", line);
    cr_assert_eq(jnum(line, "thread"), 0, "%s", line);
    lg_free(&l);
}

TU_BACKEND_TEST(faults, read_error_is_reported, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, *backend, 600);
    flt_options fo = fopts(run, dir, 41);
    fo.one_in[FLT_READ_ERROR] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_pause(f, 1);
    eng_options o = eopts(*backend, flt_hooks(f), NULL);
    eng_db *db = tu_open(dir, &o);
    flt_pause(f, 0);
    flt_thread_start(f, 0);
    eng_buf b = {0};
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    int rc = ENG_OK;
    for (uint64_t i = 0; i < 600 && rc == ENG_OK; i++) {
        flt_op(f, i);
        kv(i, 0, k, &kl, v, &vl);
        rc = eng_get(db, k, kl, &b);
        if (rc == ENG_OK) cr_assert(tu_bytes_eq(b.data, b.len, v, vl));
    }
    cr_assert_eq(rc, ENG_IOERR, "get: %s", eng_strerror(rc));
    check_last(run, "read_error", "engine/io/read", "EIO");
    flt_pause(f, 1);
    eng_buf_free(&b);
    tu_close(db);
    check_counts(f, run);
    flt_counts c;
    flt_get_counts(f, &c);
    cr_assert(c.point_hits[point_index("engine/io/read")] >= 1);
    flt_close(f);
}

/* With CLS at odds 1, the first opportunity of the call fails it: at
 * POINT "engine/io/write" the log write of an eng_sync (the put before it
 * ran paused, sync off), at "engine/wal/append" the put's own batch record
 * (sync commit).  Either way the call returns WANT_RC (detected) and the
 * handle is poisoned. */
static void write_error_case(int backend, int cls, int want_rc, const char *err, const char *point) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 42);
    fo.one_in[cls] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_pause(f, 1);
    eng_options o = eopts(backend, flt_hooks(f), NULL);
    int at_write = !strcmp(point, "engine/io/write");
    o.sync_mode = at_write ? ENG_SYNC_OFF : ENG_SYNC_COMMIT;
    eng_db *db = tu_open(dir, &o);
    cr_assert_eq(eng_put(db, "a", 1, "1", 1, NULL), ENG_OK);
    if (at_write) cr_assert_eq(eng_put(db, "b", 1, "2", 1, NULL), ENG_OK); /* appended, not written */
    flt_pause(f, 0);
    flt_thread_start(f, 0);
    flt_op(f, 1);
    int rc = at_write ? eng_sync(db) : eng_put(db, "b", 1, "2", 1, NULL);
    cr_assert_eq(rc, want_rc, "%s: %s", at_write ? "sync" : "put", eng_strerror(rc));
    check_last(run, flt_class_name(cls), point, err);
    lg l = lg_read(run); /* every request of the failed call's batch may fail */
    for (size_t i = 0; i < l.n; i++) {
        cr_assert(line_is(l.lines[i], "point", point), "%s", l.lines[i]);
        cr_assert_eq(jnum(l.lines[i], "op"), 1, "%s", l.lines[i]);
    }
    lg_free(&l);
    flt_pause(f, 1);
    rc = eng_put(db, "c", 1, "3", 1, NULL);
    cr_assert_eq(rc, ENG_POISONED, "after a failed log write: %s", eng_strerror(rc));
    eng_close(db);
    check_counts(f, run);
    flt_close(f);
}

TU_BACKEND_TEST(faults, write_error_is_reported, T_OPTS) {
    write_error_case(*backend, FLT_WRITE_ERROR, ENG_IOERR, "EIO", "engine/io/write");
}

TU_BACKEND_TEST(faults, nospace_is_reported, T_OPTS) {
    write_error_case(*backend, FLT_NOSPACE, ENG_NOSPACE, "ENOSPC", "engine/io/write");
}

TU_BACKEND_TEST(faults, write_error_at_wal_append_fails_the_put_and_poisons, T_OPTS) {
    write_error_case(*backend, FLT_WRITE_ERROR, ENG_IOERR, "EIO", "engine/wal/append");
}

TU_BACKEND_TEST(faults, nospace_at_wal_append_fails_the_put_and_poisons, T_OPTS) {
    write_error_case(*backend, FLT_NOSPACE, ENG_NOSPACE, "ENOSPC", "engine/wal/append");
}

/* Both classes on one point: each failure carries the errno its ledger
 * line names. */
Test(faults, write_error_and_nospace_share_a_point, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 43);
    fo.one_in[FLT_WRITE_ERROR] = 3;
    fo.one_in[FLT_NOSPACE] = 3;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    int seen_eio = 0, seen_enospc = 0;
    uint64_t op = 0;
    for (int round = 0; round < 40 && !(seen_eio >= 2 && seen_enospc >= 2); round++) {
        flt_pause(f, 1);
        eng_db *db = tu_open(dir, &o);
        flt_pause(f, 0);
        int rc = ENG_OK;
        for (int i = 0; i < 50 && rc == ENG_OK; i++) {
            flt_op(f, op++);
            rc = eng_put(db, "k", 1, "v", 1, NULL);
        }
        flt_pause(f, 1);
        if (rc != ENG_OK) {
            /* The failed put's error is one injected during it: the write
             * that failed it, or the next one (the abort record a failed
             * batch logs can meet a second fault; the first is returned). */
            lg l = lg_read(run);
            const char *err = rc == ENG_IOERR ? "EIO" : "ENOSPC";
            cr_assert(rc == ENG_IOERR || rc == ENG_NOSPACE, "%s", eng_strerror(rc));
            int match = 0;
            for (size_t k = l.n >= 2 ? l.n - 2 : 0; k < l.n; k++) {
                cr_assert(line_is(l.lines[k], "point", "engine/io/write") ||
                              line_is(l.lines[k], "point", "engine/wal/append"),
                          "%s", l.lines[k]);
                match |= line_is(l.lines[k], "err", err);
            }
            cr_assert(match, "%s returned, last injection %s", err, l.lines[l.n - 1]);
            if (rc == ENG_IOERR)
                seen_eio++;
            else
                seen_enospc++;
            lg_free(&l);
        }
        eng_close(db);
    }
    cr_assert(seen_eio && seen_enospc, "EIO %d, ENOSPC %d", seen_eio, seen_enospc);
    check_counts(f, run);
    flt_close(f);
}

static void sync_error_case(int backend, const char *point) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, seed_for_sync_route(44, point));
    fo.one_in[FLT_SYNC_ERROR] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_pause(f, 1);
    eng_options o = eopts(backend, flt_hooks(f), NULL);
    eng_db *db = tu_open(dir, &o);
    flt_pause(f, 0);
    flt_thread_start(f, 0);
    flt_op(f, 0);
    cr_assert_eq(eng_put(db, "a", 1, "1", 1, NULL), ENG_OK, "sync off: no fsync yet");
    flt_op(f, 1);
    int rc = eng_sync(db);
    cr_assert_eq(rc, ENG_IOERR, "sync: %s", eng_strerror(rc));
    /* The failure, then the drop of the segment's unsynced block (the
     * batch of "a"), which the journal (opened for sync_error) knew. */
    cr_assert_not_null(flt_get_journal(f));
    lg l = lg_read(run);
    cr_assert_eq(l.n, 2, "want the failure and one drop, got %zu lines", l.n);
    const char *fail = l.lines[0], *drop = l.lines[1];
    cr_assert(line_is(fail, "class", "sync_error") && line_is(fail, "point", point) && line_is(fail, "err", "EIO"),
              "%s", fail);
    char file[64], file2[64];
    cr_assert(jstr(fail, "file", file, sizeof file) && !strncmp(file, "wal/", 4), "%s", fail);
    cr_assert_eq(jnum(fail, "op"), 1);
    cr_assert(line_is(drop, "class", "sync_error") && line_is(drop, "point", "sync/drop_dirty"), "%s", drop);
    cr_assert(jstr(drop, "file", file2, sizeof file2) && !strcmp(file, file2), "%s", drop);
    cr_assert(jnum(drop, "offset") == 0 && jnum(drop, "len") > 0 && jnum(drop, "op") == 1, "%s", drop);
    lg_free(&l);
    flt_pause(f, 1);
    cr_assert_eq(eng_put(db, "b", 1, "2", 1, NULL), ENG_POISONED);
    cr_assert_eq(eng_sync(db), ENG_POISONED, "a failed fsync is never retried as if it were safe");
    eng_close(db);
    check_counts(f, run);
    flt_close(f);
}

TU_BACKEND_TEST(faults, sync_error_fails_and_poisons, T_OPTS) { sync_error_case(*backend, "hook/sync"); }

/* engine/io/fsync: sync_error's other point fails the call the same way,
 * its line (naming the file) before the drop's (detected, never swallowed). */
TU_BACKEND_TEST(faults, sync_error_at_engine_fsync_point_fails_and_poisons, T_OPTS) {
    sync_error_case(*backend, "engine/io/fsync");
}

/* ---- the points each class reaches: fired, in the ledger, detected ------------------------ */

/* A workload of puts (sync commit), gets (a cache of 16 frames over 600
 * keys: reads miss) and checkpoints, one call per op number, with CLS at
 * 1 in ONE_IN, until POINT has fired (at most MAX_OPS ops).  A failed call
 * closes the handle and opens it again (each open attempt is a call of
 * its own: recovery meets the faults too).  Then every error the ledger
 * holds must have failed the call it was injected into (V3's "detected";
 * a call that returned ok would be "swallowed"), and the point's lines
 * name it with the class. */
static void point_case(int backend, int cls, uint64_t one_in, const char *point, uint64_t seed) {
    enum { MAX_OPS = 6000 };
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, backend, 600);
    flt_options fo = fopts(run, dir, seed);
    fo.one_in[cls] = one_in;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    eng_options o = eopts(backend, flt_hooks(f), NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    static int rcs[MAX_OPS + 64];
    uint64_t op = 0;
    int idx = point_index(point), failures = 0;
    flt_counts c;
    eng_db *db = NULL;
    eng_buf b = {0};
    tu_rng r = {seed};
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (;;) {
        flt_get_counts(f, &c);
        if (c.point_hits[idx] || op >= MAX_OPS) break;
        flt_op(f, op);
        int rc;
        if (!db) {
            rc = eng_open(dir, &o, &db);
            if (rc != ENG_OK) db = NULL;
        } else {
            uint64_t x = tu_below(&r, 100), key = tu_below(&r, 600);
            kv(key, (uint32_t)op, k, &kl, v, &vl);
            if (x < 50)
                rc = eng_put(db, k, kl, v, vl, NULL);
            else if (x < 75)
                rc = eng_get(db, k, kl, &b);
            else
                rc = eng_checkpoint(db);
            if (rc == ENG_NOTFOUND) rc = ENG_OK;
            if (rc != ENG_OK) {
                failures++;
                eng_close(db); /* poisoned or not: start again from recovery */
                db = NULL;
            }
        }
        rcs[op++] = rc;
    }
    flt_pause(f, 1);
    if (db) eng_close(db);
    eng_buf_free(&b);
    cr_assert(c.point_hits[idx] > 0, "%s never fired in %llu ops (%d failed calls)", point, (unsigned long long)op,
              failures);
    check_counts(f, run);
    lg l = lg_read(run);
    size_t at_point = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *line = l.lines[i];
        int64_t lop = jnum(line, "op");
        cr_assert(lop >= 0 && (uint64_t)lop < op, "%s", line);
        cr_assert_eq(jnum(line, "thread"), 0, "%s", line);
        cr_assert_neq(rcs[lop], ENG_OK, "swallowed: op %lld returned ok: %s", (long long)lop, line);
        if (line_is(line, "point", point)) {
            at_point++;
            cr_assert(line_is(line, "class", flt_class_name(cls)), "%s", line);
            cr_assert(line_is(line, "err", cls == FLT_NOSPACE ? "ENOSPC" : "EIO"), "%s", line);
        }
    }
    cr_assert_eq(at_point, c.point_hits[idx]);
    lg_free(&l);
    flt_close(f);
}

TU_BACKEND_TEST(faults, write_error_reaches_engine_io_meta_and_is_detected, T_OPTS) {
    point_case(*backend, FLT_WRITE_ERROR, 6, "engine/io/meta", 61);
}

TU_BACKEND_TEST(faults, write_error_reaches_checkpoint_control_and_is_detected, T_OPTS) {
    point_case(*backend, FLT_WRITE_ERROR, 6, "engine/checkpoint/control", 62);
}

TU_BACKEND_TEST(faults, write_error_reaches_wal_append_and_is_detected, T_OPTS) {
    point_case(*backend, FLT_WRITE_ERROR, 6, "engine/wal/append", 63);
}

TU_BACKEND_TEST(faults, nospace_reaches_wal_append_and_is_detected, T_OPTS) {
    point_case(*backend, FLT_NOSPACE, 6, "engine/wal/append", 64);
}

/* The uring points: reached only with io_uring, each read's or write's
 * class by the kind of the request. */
Test(faults, read_error_reaches_uring_submit_and_is_detected, T_OPTS) {
    point_case(ENG_IO_URING, FLT_READ_ERROR, 6, "engine/io/uring/submit", 65);
}

Test(faults, read_error_reaches_uring_complete_and_is_detected, T_OPTS) {
    point_case(ENG_IO_URING, FLT_READ_ERROR, 6, "engine/io/uring/complete", 66);
}

Test(faults, write_error_reaches_uring_submit_and_is_detected, T_OPTS) {
    point_case(ENG_IO_URING, FLT_WRITE_ERROR, 6, "engine/io/uring/submit", 67);
}

Test(faults, write_error_reaches_uring_complete_and_is_detected, T_OPTS) {
    point_case(ENG_IO_URING, FLT_WRITE_ERROR, 6, "engine/io/uring/complete", 68);
}

TU_BACKEND_TEST(faults, sync_error_reaches_engine_io_fsync_and_is_detected, T_OPTS) {
    point_case(*backend, FLT_SYNC_ERROR, 6, "engine/io/fsync", 69);
}

/* The psync backend never reaches the uring points: enabled, never checked. */
Test(faults, uring_points_are_not_reached_with_psync, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 70);
    fo.one_in[FLT_READ_ERROR] = 1000000;
    fo.one_in[FLT_WRITE_ERROR] = 1000000;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    eng_db *db = tu_open(dir, &o);
    for (int i = 0; i < 200; i++) cr_assert_eq(eng_put(db, "k", 1, "v", 1, NULL), ENG_OK);
    tu_close(db);
    flt_counts c;
    flt_get_counts(f, &c);
    cr_assert(c.point_checks[point_index("engine/io/write")] > 0);
    cr_assert_eq(c.point_checks[point_index("engine/io/uring/submit")], 0);
    cr_assert_eq(c.point_checks[point_index("engine/io/uring/complete")], 0);
    flt_close(f);
}

/* Engine bugs found by mapping write_error to engine/io/meta: two
 * unlinks of leftovers ignored every error, not only "absent", so the
 * oracle judged an injected EIO swallowed (the call returned ok) and the
 * engine went on over what the failed unlink may have left.  libfiu
 * directly, once: the first metadata operation of the open fails. */
static int open_with_first_meta_failing(const char *dir, int backend) {
    cr_assert_eq(fiu_init(0), 0);
    cr_assert_eq(fiu_enable("engine/io/meta", EIO, NULL, FIU_ONETIME), 0);
    eng_faults_arm(1);
    eng_options o = eopts(backend, NULL, NULL);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    eng_faults_arm(0);
    fiu_disable("engine/io/meta");
    if (db) eng_close(db);
    return rc;
}

/* control_write unlinks control.tmp first (a leftover of a crash): the
 * first metadata operation of a recovery. */
TU_BACKEND_TEST(faults, control_write_fails_when_unlinking_its_leftover_fails, T_OPTS) {
    const char *dir = tu_tmpdir();
    populate(dir, *backend, 10);
    int rc = open_with_first_meta_failing(dir, *backend);
    cr_assert_eq(rc, ENG_IOERR, "open (recovery writes control): %s", eng_strerror(rc));
}

/* Creation unlinks a data file without control (debris of an interrupted
 * creation) first: creating over it would build on its old pages. */
TU_BACKEND_TEST(faults, create_fails_when_unlinking_old_debris_fails, T_OPTS) {
    char dir[4096];
    tu_path(dir, sizeof dir, tu_tmpdir(), "new");
    int rc = open_with_first_meta_failing(dir, *backend);
    cr_assert_eq(rc, ENG_IOERR, "open (creates): %s", eng_strerror(rc));
}

/* ---- a write that fails part way ------------------------------------------------------ */

/* Found by whitebox seed 20261261 (iteration 31306679495368): a data write
 * that the short-I/O point cut in half, whose rest then failed at
 * engine/io/uring/submit, left its page new in the first half and old in
 * the second.  The engine poisoned the handle, the reopen met the torn
 * page, and the oracle called it unrecoverable since "an I/O error
 * changes no byte on disk".  A write is not atomic: here the engine says
 * how much it handed to the OS (eng_io_op.issued), the fault library names
 * the range in a write/partial line, and recovery must rebuild the page
 * from its image, or with full_page_writes off report it at its block.
 *
 * libfiu directly (no class of the fault library is on, so its own
 * callbacks are not installed): once a checkpoint's data writes begin,
 * the first transfer is halved and every later submission of a data write
 * fails, the halved one's rest included. */
static struct {
    const eng_io_hooks *inner;
    eng_io_hooks hooks;
    atomic_int in_data, shorted, failed;
    int nfirst;         /* data writes seen since the checkpoint began */
    uint64_t first_off; /* the first one: the transfer to be halved */
    uint8_t first[PS];
} PW;

static int pw_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    int data = is_data_write(op);
    atomic_store(&PW.in_data, data); /* a batch's before()s run before its I/O */
    int rc = PW.inner->before(PW.inner->ctx, op);
    if (data && PW.nfirst >= 0 && PW.nfirst++ == 0) PW.first_off = op->offset, memcpy(PW.first, op->buf, PS);
    return rc;
}

static void pw_after(void *ctx, eng_io_op *op) {
    (void)ctx;
    PW.inner->after(PW.inner->ctx, op);
}

static int pw_short(const char *name, int *failnum, void **failinfo, unsigned int *flags) {
    (void)name, (void)failnum, (void)failinfo, (void)flags;
    if (!atomic_load(&PW.in_data)) return 0;
    int no = 0;
    return atomic_compare_exchange_strong(&PW.shorted, &no, 1);
}

static int pw_submit(const char *name, int *failnum, void **failinfo, unsigned int *flags) {
    (void)name, (void)failinfo, (void)flags;
    if (!atomic_load(&PW.in_data) || !atomic_load(&PW.shorted)) return 0;
    atomic_fetch_add(&PW.failed, 1);
    *failnum = EIO;
    return 1;
}

static void partial_write_case(int fpw) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_URING, 300);
    flt_options fo = fopts(run, dir, 71);
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    memset(&PW, 0, sizeof PW);
    PW.inner = flt_hooks(f);
    PW.hooks = (eng_io_hooks){.before = pw_before, .after = pw_after};
    eng_options o = eopts(ENG_IO_URING, &PW.hooks, NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    o.full_page_writes = fpw;
    PW.nfirst = -1;
    eng_db *db = tu_open(dir, &o);
    /* Change every leaf (after the close's checkpoint: each change starts
     * with the page's image when fpw is on). */
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 300; i += 25) {
        kv(i, 100, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    cr_assert_eq(fiu_init(0), 0);
    cr_assert_eq(fiu_enable_external("engine/io/short", 1, NULL, 0, pw_short), 0);
    cr_assert_eq(fiu_enable_external("engine/io/uring/submit", EIO, NULL, 0, pw_submit), 0);
    eng_faults_arm(1);
    PW.nfirst = 0;
    flt_op(f, 5);
    int rc = eng_checkpoint(db);
    eng_faults_arm(0);
    fiu_disable("engine/io/short");
    fiu_disable("engine/io/uring/submit");
    cr_assert(atomic_load(&PW.shorted) && atomic_load(&PW.failed) > 0, "the checkpoint wrote no data page");
    cr_assert_eq(rc, ENG_IOERR, "checkpoint: %s", eng_strerror(rc));
    cr_assert_eq(eng_put(db, "x", 1, "1", 1, NULL), ENG_POISONED);
    eng_close(db);
    /* The tear is real: the halved write's page is new in its first half
     * only. */
    char path[4200];
    snprintf(path, sizeof path, "%s/data", dir);
    uint8_t disk[PS];
    read_block(path, PW.first_off, disk);
    cr_assert(memcmp(disk, PW.first, PS / 2) == 0 && memcmp(disk + PS / 2, PW.first + PS / 2, PS / 2) != 0,
              "block %llu is not torn", (unsigned long long)(PW.first_off / PS));

    /* One write/partial line: the halved write, half of its page issued. */
    lg l = lg_read(run);
    const char *line = lg_nth_at(&l, "write_error", "write/partial", 0);
    cr_assert_not_null(line, "no write/partial line");
    cr_assert_null(lg_nth_at(&l, "write_error", "write/partial", 1), "%s",
                   lg_nth_at(&l, "write_error", "write/partial", 1));
    cr_assert(line_is(line, "file", "data") && line_is(line, "err", "EIO"), "%s", line);
    int64_t block = jnum(line, "block");
    cr_assert(block > 0 && (uint64_t)block == PW.first_off / PS && jnum(line, "offset") == block * (int64_t)PS, "%s",
              line);
    cr_assert_eq(jnum(line, "len"), PS / 2, "%s", line);
    cr_assert_eq(jnum(line, "op"), 5, "%s", line);
    lg_free(&l);
    check_counts(f, run);
    flt_close(f);

    /* The reopen: rebuilt from the page's image, or reported at its block. */
    tu_reports reps;
    tu_reports_init(&reps);
    eng_options ro = eopts(ENG_IO_URING, NULL, &reps);
    ro.full_page_writes = fpw;
    eng_db *db2 = NULL;
    rc = eng_open(dir, &ro, &db2);
    uint64_t problems = 0;
    if (rc == ENG_OK) {
        cr_assert_eq(eng_verify(db2, tu_collect, &reps, &problems), fpw ? ENG_OK : ENG_CORRUPTION);
        if (fpw) {
            eng_buf b = {0};
            for (uint64_t i = 0; i < 300; i++) {
                kv(i, i % 25 == 0 ? 100 : 0, k, &kl, v, &vl);
                cr_assert_eq(eng_get(db2, k, kl, &b), ENG_OK, "key %llu", (unsigned long long)i);
                cr_assert(tu_bytes_eq(b.data, b.len, v, vl), "key %llu", (unsigned long long)i);
            }
            eng_buf_free(&b);
        }
        eng_close(db2);
    }
    char why[2048];
    if (fpw) {
        cr_assert_eq(rc, ENG_OK, "reopen: %s", eng_strerror(rc));
        cr_assert_eq(reps.total, 0, "%s", tu_reports_str(&reps, why, sizeof why));
    } else {
        cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION, "reopen: %s", eng_strerror(rc));
        cr_assert(tu_reports_has(&reps, ENG_LAYER_PAGE_CHECKSUM, "data", block), "%s",
                  tu_reports_str(&reps, why, sizeof why));
    }
}

Test(faults, a_data_write_that_fails_part_way_is_rebuilt_from_its_image, T_OPTS) { partial_write_case(1); }

Test(faults, a_data_write_that_fails_part_way_without_images_is_reported_at_its_block, T_OPTS) {
    partial_write_case(0);
}
