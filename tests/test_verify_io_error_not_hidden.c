/*
 * test_verify_io_error_not_hidden.c -- eng_verify returns an I/O error it
 * met even when it also found corruption.
 *
 * The bug (found by crashtest whitebox, seed 20261201, iteration
 * 252729780054499: "swallowed read_error at engine/io/uring/submit"): the
 * tree check found a damaged page (ENG_CORRUPTION), then the walk of the
 * log failed to read a block (ENG_IOERR), and eng_verify returned
 * ENG_CORRUPTION.  The caller was told what was found, not that the check
 * stopped half way: the failed read was swallowed.  An I/O error wins;
 * the corruption is in the reports either way.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "testutil.h"

typedef struct failer {
    int on; /* fail every read of a WAL segment */
    int failed;
} failer;

static int fail_wal_reads(void *ctx, eng_io_op *op) {
    failer *fl = ctx;
    if (fl->on && op->kind == ENG_IO_READ && op->path && strstr(op->path, "/wal/")) {
        fl->failed++;
        return -EIO;
    }
    return 0;
}

static void no_after(void *ctx, eng_io_op *op) { (void)ctx, (void)op; }

TU_BACKEND_TEST(verify_io_error, a_failed_log_read_is_returned_even_with_corruption_found) {
    const char *dir = tu_tmpdir();
    tu_reports reps;
    tu_reports_init(&reps);
    eng_options o = tu_opts(*backend, 4096, 0, &reps);
    eng_db *db = tu_open(dir, &o);
    char k[32], v[64];
    for (int i = 0; i < 400; i++) {
        size_t kl = tu_key(k, (uint64_t)i);
        tu_fill(v, sizeof v, (uint64_t)i);
        cr_assert_eq(eng_put(db, k, kl, v, sizeof v, NULL), ENG_OK);
    }
    cr_assert_eq(eng_close(db), ENG_OK);

    /* A leaf the tree check reads from disk (not one the open reads),
     * damaged there: byte 20 of the header is the page type (page.h). */
    uint8_t page[4096];
    uint64_t b = tu_data_nblocks(dir, 4096);
    do tu_read_page(dir, --b, 4096, page);
    while (b > 3 && page[20] != 2);
    cr_assert_eq(page[20], 2, "no leaf found");
    page[4000] ^= 0x10;
    tu_write_page(dir, b, 4096, page);

    failer fl = {0, 0};
    eng_io_hooks hooks = {.ctx = &fl, .before = fail_wal_reads, .after = no_after};
    o.io_hooks = &hooks;
    o.cache_size = 4 * 4096; /* the leaf is not cached: verify reads it */
    db = tu_open(dir, &o);
    fl.on = 1;
    uint64_t problems = 0;
    int rc = eng_verify(db, tu_collect, &reps, &problems);
    cr_assert(fl.failed > 0, "the log walk read no WAL block");
    cr_assert(problems > 0, "the damaged page was not found");
    cr_assert_eq(rc, ENG_IOERR, "verify returned %s: the failed log read was swallowed", eng_strerror(rc));
    fl.on = 0;
    eng_close(db);
}
