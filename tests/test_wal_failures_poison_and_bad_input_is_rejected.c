/*
 * test_wal_failures_poison_and_bad_input_is_rejected.c -- a failed write or
 * fsync poisons the log and fsync is never retried (W4); a missing log, a
 * wrong predecessor, segment-size guessing, the CRC32C function and bad
 * arguments.
 *
 * Part of the wal suite (once test_wal.c); the helpers it shares
 * with the other test_wal_*.c files are in wal_helpers.h.
 */
#include "wal_helpers.h"

/* ==========================================================================
 * W4: failures poison
 * ======================================================================== */

static void expect_poisoned(wal *w) {
    uint8_t x = 1;
    uint64_t s, e;
    cr_assert_eq(wal_append(w, WAL_REC_BATCH, &x, 1, &s, &e), ENG_POISONED);
    cr_assert_eq(wal_flush(w, wal_insert_lsn(w)), ENG_POISONED);
    cr_assert_eq(wal_flush(w, 0), ENG_POISONED);
    cr_assert_eq(wal_write_out(w), ENG_POISONED);
}

TU_BACKEND_TEST(wal, w4_failed_write_fails_the_flush_and_poisons_the_log, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 500, 1);
    wflush(w);
    uint64_t durable = wal_durable_lsn(w);
    add(w, &m, 1, 500, 2);
    hook_fail(ENG_IO_WRITE, EIO);
    int rc = wal_flush(w, wal_insert_lsn(w));
    cr_assert_eq(rc, ENG_IOERR, "flush over a failing write returned %s", eng_strerror(rc));
    cr_assert_eq(wal_durable_lsn(w), durable, "a failed flush moved durable_lsn");
    hook_fail(-1, 0);
    expect_poisoned(w);
    wal_close(w);
    model_cut(&m, 1);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, w4_failed_write_out_in_append_poisons, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    hook_fail(ENG_IO_WRITE, ENOSPC);
    uint8_t *p = payload(3000, 1);
    int rc = ENG_OK;
    for (int i = 0; i < 10 && rc == ENG_OK; i++) rc = wal_append(w, WAL_REC_BATCH, p, 3000, NULL, NULL);
    free(p);
    cr_assert_eq(rc, ENG_NOSPACE, "the buffer-full write-out failure gave %s", eng_strerror(rc));
    hook_fail(-1, 0);
    expect_poisoned(w);
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, w4_failed_fsync_poisons_and_is_never_retried, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 500, 1);
    hook_fail(ENG_IO_SYNC, EIO);
    int syncs = hook_count(ENG_IO_SYNC);
    cr_assert_eq(wal_flush(w, wal_insert_lsn(w)), ENG_IOERR);
    cr_assert_eq(hook_count(ENG_IO_SYNC) - syncs, 1, "exactly one fsync attempt");
    cr_assert_eq(wal_durable_lsn(w), 0);
    hook_fail(-1, 0);
    expect_poisoned(w);
    cr_assert_eq(hook_count(ENG_IO_SYNC) - syncs, 1, "the fsync was retried");
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Odds and ends
 * ======================================================================== */

TU_BACKEND_TEST(wal, reader_of_a_missing_log_ends_at_its_start, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, 0);
    cr_assert_eq(res.end, 0);
    cr_assert_eq(res.trimmed, 0);
    cr_assert_eq(wal_guess_seg_size(f.dir), 0);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, wrong_predecessor_in_synced_log_is_corruption, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = small_log(&f, &m, 20, 400);
    wal_close(w);
    rd_result res = read_log(&f, m.r[5].lsn, m.r[3].lsn, &m, 5);
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a broken chain in synced WAL gave %s", eng_strerror(res.rc));
    cr_assert_eq(res.n, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, guess_seg_size_from_segment_names, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 1000, 1);
    wflush(w);
    cr_assert_eq(wal_guess_seg_size(f.dir), SEG, "one small segment rounds up to the minimum");
    while (wal_insert_lsn(w) < 2 * SEG + 100) add(w, &m, 1, 5000, m.n + 1);
    wflush(w);
    cr_assert_eq(wal_guess_seg_size(f.dir), SEG);
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

Test(wal_sector, crc32c_is_the_standard_function_and_trailers_check_their_sector) {
    cr_assert_eq(crc32c(0, "123456789", 9), 0xE3069283u, "CRC32C check value");
    cr_assert_eq(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xE3069283u, "continuation");
    uint8_t s[WAL_SECTOR];
    memset(s, 0, sizeof s);
    cr_assert(wal_sector_valid(s), "an all-zero sector is \"never written\", valid");
    tu_fill(s, WAL_SECTOR_DATA, 99);
    cr_assert_not(wal_sector_valid(s), "data under a zero trailer");
    wal_sector_seal(s);
    cr_assert(wal_sector_valid(s));
    for (unsigned bit = 0; bit < 8 * WAL_SECTOR; bit++) {
        s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        cr_assert_not(wal_sector_valid(s), "a flip of bit %u passes the sector's check", bit);
        s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}

TU_BACKEND_TEST(wal, bad_arguments_are_rejected, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    wal_config c = {.io = f.io, .dir = f.dir, .seg_size = SEG, .buffer_size = 4 * WAL_BLOCK, .gen = 1};
    wal *w = NULL;
    wal_config bad = c;
    bad.seg_size = 3 * SEG;
    cr_assert_eq(wal_open(&bad, &w), ENG_INVALID);
    bad = c;
    bad.buffer_size = WAL_BLOCK;
    cr_assert_eq(wal_open(&bad, &w), ENG_INVALID);
    bad = c;
    bad.start_lsn = WAL_BLOCK + 8; /* inside a block header */
    cr_assert_eq(wal_open(&bad, &w), ENG_INVALID);
    cr_assert_eq(wal_open(&c, &w), ENG_OK);
    uint64_t s, e;
    cr_assert_eq(wal_append(w, 0, "x", 1, &s, &e), ENG_INVALID);
    cr_assert_eq(wal_append(w, WAL_REC_TYPE_MAX + 1, "x", 1, &s, &e), ENG_INVALID);
    cr_assert_eq(wal_append(w, WAL_REC_BATCH, NULL, 0, &s, &e), ENG_OK);
    cr_assert_eq(s, WAL_BLOCK_HDR);
    cr_assert_eq(e, WAL_BLOCK_HDR + WAL_REC_HDR);
    wal_close(w);
    wal_reader *r;
    cr_assert_eq(wal_reader_open(f.io, f.dir, SEG, 12, 0, NULL, &r), ENG_INVALID);
    fx_done(&f);
}
