/*
 * test_wal_end_trimmed_or_reported.c -- where the log ends (W3): a torn
 * tail (truncated or zeroed) and a hole below every witness are trimmed
 * quietly; a bit flip or hole in the synced middle is ENG_CORRUPTION with a
 * report naming the segment.
 *
 * Part of the wal suite (once test_wal.c); the helpers it shares
 * with the other test_wal_*.c files are in wal_helpers.h.
 */
#include "wal_helpers.h"

/* ==========================================================================
 * Where the log ends (W3)
 * ======================================================================== */

static void expect_trim_at(fx *f, const model *m, size_t keep) {
    rd_result res = read_log(f, 0, 0, m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "expected a trim, got %s: %s", eng_strerror(res.rc),
                 tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_eq(res.n, keep, "read %zu records, expected %zu", res.n, keep);
    cr_assert_eq(res.end, m->r[keep - 1].end);
    cr_assert_eq(res.last, m->r[keep - 1].lsn);
    cr_assert_eq(res.trimmed, 1, "the torn bytes were not reported as trimmed");
    cr_assert_eq(f->reps.total, 0, "a torn tail was reported: %s", tu_reports_str(&f->reps, buf, sizeof buf));
}

TU_BACKEND_TEST(wal, tail_truncated_mid_record_is_trimmed_and_log_reopens_there, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = small_log(&f, &m, 30, 2500);
    wal_close(w);
    const mrec *last = &m.r[m.n - 1];
    char p[4096];
    seg_path(p, sizeof p, &f, 0);
    cr_assert_eq(truncate(p, (off_t)(last->lsn + last->len / 2)), 0);
    expect_trim_at(&f, &m, m.n - 1);

    /* recovery goes on from the trimmed end in a new generation */
    model_cut(&m, m.n - 1);
    w = wopen(&f, 2, m.r[m.n - 1].end, m.r[m.n - 1].lsn, 8 * WAL_BLOCK, NULL);
    model_reopen(&m, m.r[m.n - 1].end, 2);
    for (int i = 0; i < 20; i++) add(w, &m, 2, 700 + (size_t)i * 13, 1000 + (uint64_t)i);
    wflush(w);
    wal_close(w);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, last_sectors_zeroed_are_a_torn_tail, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = small_log(&f, &m, 30, 3000);
    uint64_t ins = wal_insert_lsn(w);
    wal_close(w);
    /* the last sector holding bytes of the last record, never synced
     * before that record's own flush: zero is its state before the write */
    uint64_t s0 = (ins - 1) & ~(uint64_t)(WAL_SECTOR - 1);
    cr_assert_gt(s0, m.r[m.n - 1].lsn);
    raw_zero(&f, s0, WAL_SECTOR);
    expect_trim_at(&f, &m, m.n - 1);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, bit_flip_in_synced_middle_is_corruption_naming_the_segment, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = small_log(&f, &m, 40, 800);
    wal_close(w);

    /* a payload byte of a record in the middle, in the block it starts in */
    size_t victim = 12;
    while (m.r[victim].lsn % WAL_BLOCK + WAL_REC_HDR + 40 >= WAL_BLOCK) victim++;
    uint64_t at = m.r[victim].lsn + WAL_REC_HDR + 40;
    uint8_t b;
    raw_read(&f, at, &b, 1);
    b ^= 0x10;
    raw_write(&f, at, &b, 1);

    rd_result res = read_log(&f, 0, 0, &m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a flipped bit in synced WAL gave %s after %zu records", eng_strerror(res.rc),
                 res.n);
    cr_assert_eq(res.n, victim);
    cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, (int64_t)(m.r[victim].lsn / WAL_BLOCK)),
              "no wal_record report for %s block %llu: %s", SEG0, (unsigned long long)(m.r[victim].lsn / WAL_BLOCK),
              tu_reports_str(&f.reps, buf, sizeof buf));
    cr_assert_eq(f.reps.r[0].offset, (int64_t)m.r[victim].lsn);
    cr_assert_neq(f.reps.r[0].expected, f.reps.r[0].found, "expected/found should be the checksums");
    cr_assert(strstr(f.reps.r[0].detail, "checksum") != NULL, "detail: %s", f.reps.r[0].detail);
    model_free(&m);
    fx_done(&f);
}

/* The record at L lies in the last block, and that block was rewritten
 * (W1) after L was durable: its own header's witness is above L.  Even
 * with no later block, this is damage to synced WAL, not a torn tail. */
TU_BACKEND_TEST(wal, bit_flip_in_record_witnessed_by_its_own_block_is_corruption, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    const mrec *a = add(w, &m, 1, 200, 1);
    uint64_t a_lsn = a->lsn;
    wflush(w);
    add(w, &m, 1, 200, 2);
    wflush(w); /* block 0 rewritten with witness = end of A */
    wal_close(w);
    cr_assert_lt(m.r[1].end, WAL_BLOCK, "both records in block 0");
    uint8_t b;
    raw_read(&f, a_lsn + WAL_REC_HDR + 5, &b, 1);
    b ^= 1;
    raw_write(&f, a_lsn + WAL_REC_HDR + 5, &b, 1);
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a flipped bit in a synced record gave %s", eng_strerror(res.rc));
    cr_assert_eq(res.n, 0);
    cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, 0));
    model_free(&m);
    fx_done(&f);
}

/* Records appended after a flush and only written out (no fsync): their
 * blocks carry the witness of the flush, which lies below them. */
static void hole_log(fx *f, model *m, int synced_flushes, uint64_t *durable) {
    wal *w = wopen(f, 1, 0, 0, 16 * WAL_BLOCK, NULL);
    for (int i = 0; i < 10; i++) {
        add(w, m, 1, 900, 500 + (uint64_t)i);
        wflush(w);
    }
    *durable = wal_durable_lsn(w);
    for (int i = 0; i < 30; i++) {
        add(w, m, 1, 1100, 600 + (uint64_t)i);
        if (synced_flushes) wflush(w);
    }
    cr_assert_eq(wal_write_out(w), ENG_OK);
    cr_assert_lt(wal_insert_lsn(w), SEG);
    wal_close(w);
}

TU_BACKEND_TEST(wal, hole_below_every_witness_is_a_trim_not_an_error, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    uint64_t durable;
    hole_log(&f, &m, 0, &durable);
    uint64_t hole = (durable / WAL_BLOCK + 3) * WAL_BLOCK; /* well after the synced part */
    cr_assert_lt(hole + WAL_BLOCK, m.r[m.n - 1].lsn, "valid blocks must follow the hole");
    raw_zero(&f, hole, WAL_BLOCK);
    size_t keep = 0;
    while (m.r[keep].end <= hole) keep++;
    expect_trim_at(&f, &m, keep);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, hole_below_a_later_witness_is_corruption, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    uint64_t durable;
    hole_log(&f, &m, 1, &durable);
    uint64_t hole = 3 * WAL_BLOCK; /* synced, and later flushes wrote witnesses past it */
    raw_zero(&f, hole, WAL_BLOCK);
    size_t keep = 0;
    while (m.r[keep].end <= hole) keep++;
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a lost synced block gave %s", eng_strerror(res.rc));
    cr_assert_eq(res.n, keep);
    cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, -1));
    model_free(&m);
    fx_done(&f);
}
