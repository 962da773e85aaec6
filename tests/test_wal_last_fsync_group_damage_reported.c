/*
 * test_wal_last_fsync_group_damage_reported.c -- W3 (a): damage in the
 * log's last fsync group, sector by sector, is reported, never trimmed;
 * tears of the unsynced tail at every sector subset, and zeroed or stale
 * sectors after the end, are trimmed.
 *
 * Part of the wal suite (once test_wal.c); the helpers it shares
 * with the other test_wal_*.c files are in wal_helpers.h.
 */
#include "wal_helpers.h"

/* ==========================================================================
 * W3 (a): the log's last fsync group.  Nothing is written after it, so no
 * later witness can tell its damage from a tear: the sectors' own checks
 * must.  Tears follow the power-loss model of wal.h (each sector of an
 * unsynced write old or new; old = an earlier write, zeros or stale).
 * ======================================================================== */

static void reps_clear(fx *f) { f->reps.n = f->reps.total = 0; }

/* LSN of byte I (from 0) of the record at LSN. */
static uint64_t rec_byte_lsn(uint64_t lsn, uint64_t i) {
    uint64_t x = wal_stream_advance(lsn, i);
    if (x % WAL_SECTOR >= WAL_SECTOR_DATA) x += WAL_SECTOR - x % WAL_SECTOR;
    if (x % WAL_BLOCK == 0) x += WAL_BLOCK_HDR;
    return x;
}

static void flip_at(const fx *f, uint64_t lsn, uint8_t mask) {
    uint8_t b;
    raw_read(f, lsn, &b, 1);
    b ^= mask;
    raw_write(f, lsn, &b, 1);
}

/* Index of the record a damaged byte at LSN X stops the reader at: the
 * first whose bytes (padding included) reach past X.  A block header's
 * byte stops it at the record that runs into the block or, if none does,
 * the block's first record: the same rule. */
static size_t victim_of(const model *m, uint64_t x) {
    size_t i = 0;
    while (i < m->n && m->r[i].end <= x) i++;
    return i;
}

static void expect_reported(fx *f, const model *m, size_t victim, const char *what) {
    rd_result res = read_log(f, 0, 0, m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_CORRUPTION,
                 "%s: the log ended with %s after %zu records (trimmed=%d): damage to "
                 "synced records passed for a torn tail",
                 what, eng_strerror(res.rc), res.n, res.trimmed);
    cr_assert_eq(res.n, victim, "%s: %zu records read before the report, expected %zu", what, res.n, victim);
    cr_assert(tu_reports_has(&f->reps, ENG_LAYER_WAL, SEG0, -1), "%s: no wal_record report naming %s: %s", what, SEG0,
              tu_reports_str(&f->reps, buf, sizeof buf));
    if (victim < m->n)
        cr_assert_eq(f->reps.r[0].offset, (int64_t)m->r[victim].lsn, "%s: the report names offset %lld", what,
                     (long long)f->reps.r[0].offset);
}

TU_BACKEND_TEST(wal, bit_flip_in_last_fsync_group_is_reported_not_trimmed, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = {0x12};
    for (int i = 0; i < 10; i++) {
        add(w, &m, 1, (size_t)tu_range(&rng, 100, 900), tu_next(&rng));
        wflush(w);
    }
    size_t g0 = m.n;
    for (int i = 0; i < 6; i++) add(w, &m, 1, (size_t)tu_range(&rng, 300, 1500), tu_next(&rng));
    wflush(w); /* one fsync for the group; nothing is ever written after it */
    wal_close(w);
    expect_clean(&f, &m, 0, 0, 0);

    /* every record of the group, the very last one included */
    for (size_t v = g0; v < m.n; v++) {
        uint64_t at = rec_byte_lsn(m.r[v].lsn, WAL_REC_HDR + tu_below(&rng, m.r[v].len));
        uint8_t mask = (uint8_t)(1u << tu_below(&rng, 8));
        char what[128];
        snprintf(what, sizeof what, "record %zu of %zu, bit 0x%02x at LSN %llu", v, m.n, mask, (unsigned long long)at);
        flip_at(&f, at, mask);
        reps_clear(&f);
        expect_reported(&f, &m, v, what);
        flip_at(&f, at, mask);
    }
    reps_clear(&f);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, bit_flip_in_every_sector_of_the_last_block_is_reported, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = {0x13};
    /* synced records one by one into block 1, up to its last sector */
    while (wal_insert_lsn(w) < WAL_BLOCK + 3000) {
        add(w, &m, 1, (size_t)tu_range(&rng, 100, 400), tu_next(&rng));
        wflush(w);
    }
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), 3792), tu_next(&rng));
    wflush(w);
    wal_close(w);
    uint64_t ins = m.r[m.n - 1].end, b = WAL_BLOCK;
    cr_assert_eq(ins, b + 3792);

    static const uint32_t offs[] = {3, 100, 300, WAL_SECTOR_DATA - 1, WAL_SECTOR_DATA + 1};
    for (uint32_t s = 0; s < WAL_BLOCK / WAL_SECTOR; s++) {
        for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
            uint64_t x = b + s * WAL_SECTOR + offs[k];
            uint8_t mask = (uint8_t)(1u << tu_below(&rng, 8));
            char what[160];
            snprintf(what, sizeof what, "sector %u of the last block, byte %u (LSN %llu), bit 0x%02x", s, offs[k],
                     (unsigned long long)x, mask);
            flip_at(&f, x, mask);
            reps_clear(&f);
            if (offs[k] >= WAL_SECTOR_DATA || x >= ins) {
                /* A trailer, or the zeros after the last record: no record
                 * is lost; a report is allowed (wal.h W3: such damage
                 * cannot be told from damage to a record there). */
                rd_result res = read_log(&f, 0, 0, &m, 0);
                cr_assert(res.rc == ENG_NOTFOUND || res.rc == ENG_CORRUPTION, "%s: %s", what, eng_strerror(res.rc));
                cr_assert_eq(res.n, m.n, "%s: %zu of %zu records read", what, res.n, m.n);
            } else {
                expect_reported(&f, &m, victim_of(&m, x), what);
            }
            flip_at(&f, x, mask);
        }
    }
    reps_clear(&f);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

/* A log synced to s1 in the middle of block 1, then a second group
 * appended and written in one flush: block 1 rewritten in place (W1) and
 * block 2 written partly.  OLD/NEW get blocks 1 and 2 as they were before
 * and after that write (block 2 before: zeros). */
typedef struct torn_fx {
    model m;
    size_t synced;
    uint64_t s1;
    uint8_t old1[WAL_BLOCK], new1[WAL_BLOCK], old2[WAL_BLOCK], new2[WAL_BLOCK];
} torn_fx;

static void torn_setup(fx *f, torn_fx *t) {
    memset(t, 0, sizeof *t);
    wal *w = wopen(f, 1, 0, 0, 16 * WAL_BLOCK, NULL);
    tu_rng rng = {0x14};
    while (wal_insert_lsn(w) < WAL_BLOCK + 700) {
        add(w, &t->m, 1, (size_t)tu_range(&rng, 100, 600), tu_next(&rng));
        wflush(w);
    }
    t->synced = t->m.n;
    t->s1 = wal_insert_lsn(w);
    cr_assert_lt(t->s1, WAL_BLOCK + 1500);
    raw_read(f, WAL_BLOCK, t->old1, WAL_BLOCK);
    while (wal_insert_lsn(w) < 2 * WAL_BLOCK + 1500) add(w, &t->m, 1, (size_t)tu_range(&rng, 100, 700), tu_next(&rng));
    cr_assert_lt(wal_insert_lsn(w), 3 * WAL_BLOCK);
    wflush(w); /* one write of blocks 1 and 2, then its fsync */
    wal_close(w);
    raw_read(f, WAL_BLOCK, t->new1, WAL_BLOCK);
    raw_read(f, 2 * WAL_BLOCK, t->new2, WAL_BLOCK);
}

/* Put blocks 1 and 2 on disk as the tear MASK1/MASK2 leaves them: sector
 * i new where bit i is set, else old. */
static void torn_apply(fx *f, const torn_fx *t, unsigned mask1, unsigned mask2) {
    uint8_t b1[WAL_BLOCK], b2[WAL_BLOCK];
    for (unsigned i = 0; i < WAL_BLOCK / WAL_SECTOR; i++) {
        memcpy(b1 + i * WAL_SECTOR, ((mask1 >> i) & 1 ? t->new1 : t->old1) + i * WAL_SECTOR, WAL_SECTOR);
        memcpy(b2 + i * WAL_SECTOR, ((mask2 >> i) & 1 ? t->new2 : t->old2) + i * WAL_SECTOR, WAL_SECTOR);
    }
    raw_write(f, WAL_BLOCK, b1, WAL_BLOCK);
    raw_write(f, 2 * WAL_BLOCK, b2, WAL_BLOCK);
}

static void expect_torn_trimmed(fx *f, const torn_fx *t, unsigned mask1, unsigned mask2) {
    reps_clear(f);
    rd_result res = read_log(f, 0, 0, &t->m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND,
                 "tear 0x%02x/0x%02x: the log ended with %s after %zu records: a tear "
                 "passed for damage: %s",
                 mask1, mask2, eng_strerror(res.rc), res.n, tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_eq(f->reps.total, 0, "tear 0x%02x/0x%02x was reported: %s", mask1, mask2,
                 tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_geq(res.n, t->synced, "tear 0x%02x/0x%02x: %zu records read, %zu were synced", mask1, mask2, res.n,
                  t->synced);
    if (mask1 == 0xff && mask2 == 0xff) cr_assert_eq(res.n, t->m.n);
}

TU_BACKEND_TEST(wal, tear_of_unsynced_tail_at_every_sector_subset_is_trimmed, .fini = tu_cleanup, .timeout = 120) {
    fx f;
    fx_init(&f, *backend);
    static torn_fx t;
    torn_setup(&f, &t);
    /* the in-place rewrite of block 1, whose earlier version was synced */
    for (unsigned m1 = 0; m1 < 256; m1++) {
        torn_apply(&f, &t, m1, 0);
        expect_torn_trimmed(&f, &t, m1, 0);
    }
    /* block 2, a fresh block, under a complete block 1 */
    for (unsigned m2 = 0; m2 < 256; m2++) {
        torn_apply(&f, &t, 0xff, m2);
        expect_torn_trimmed(&f, &t, 0xff, m2);
    }
    /* both torn at once */
    tu_rng rng = {0x15};
    for (int i = 0; i < 128; i++) {
        unsigned m1 = (unsigned)tu_below(&rng, 256), m2 = (unsigned)tu_below(&rng, 256);
        torn_apply(&f, &t, m1, m2);
        expect_torn_trimmed(&f, &t, m1, m2);
    }
    model_free(&t.m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, zeroed_and_stale_sectors_after_the_end_are_trimmed, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = {0x16};
    while (wal_insert_lsn(w) < 3 * WAL_BLOCK + 900) {
        add(w, &m, 1, (size_t)tu_range(&rng, 100, 900), tu_next(&rng));
        wflush(w);
    }
    wal_close(w);
    uint64_t ins = m.r[m.n - 1].end, b = blk_of_t(ins);
    uint32_t first = (uint32_t)((ins - b + WAL_SECTOR - 1) / WAL_SECTOR); /* first sector wholly after the end */
    uint8_t blk[WAL_BLOCK], stale[WAL_BLOCK], orig[WAL_BLOCK];
    raw_read(&f, b, orig, WAL_BLOCK);
    raw_read(&f, WAL_BLOCK, stale, WAL_BLOCK); /* valid sectors, from another position */

    for (int kind = 0; kind < 3; kind++) {
        memcpy(blk, orig, WAL_BLOCK);
        for (uint32_t s = first; s < WAL_BLOCK / WAL_SECTOR; s++) {
            uint32_t from = kind == 2 ? (uint32_t)tu_below(&rng, 8) : s; /* a stale sector from anywhere */
            if (kind == 0)
                memset(blk + s * WAL_SECTOR, 0, WAL_SECTOR);
            else
                memcpy(blk + s * WAL_SECTOR, stale + from * WAL_SECTOR, WAL_SECTOR);
        }
        raw_write(&f, b, blk, WAL_BLOCK);
        /* and a whole stale block after it: valid, at another position */
        if (kind == 0)
            raw_zero(&f, b + WAL_BLOCK, WAL_BLOCK);
        else
            raw_write(&f, b + WAL_BLOCK, stale, WAL_BLOCK);
        reps_clear(&f);
        rd_result res = read_log(&f, 0, 0, &m, 0);
        char buf[2048];
        cr_assert_eq(res.rc, ENG_NOTFOUND, "kind %d: %s: %s", kind, eng_strerror(res.rc),
                     tu_reports_str(&f.reps, buf, sizeof buf));
        cr_assert_eq(res.n, m.n, "kind %d: %zu of %zu records", kind, res.n, m.n);
        cr_assert_eq(f.reps.total, 0);
        cr_assert_eq(res.trimmed, kind != 0, "kind %d: trimmed = %d", kind, res.trimmed);
    }
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, flip_in_unsynced_tail_may_be_reported_but_loses_no_synced_record, .fini = tu_cleanup,
                .timeout = 120) {
    fx f;
    fx_init(&f, *backend);
    static torn_fx t;
    torn_setup(&f, &t);
    tu_rng rng = {0x17};
    int reported = 0;
    for (int i = 0; i < 300; i++) {
        unsigned m1 = (unsigned)tu_below(&rng, 256), m2 = (unsigned)tu_below(&rng, 256);
        torn_apply(&f, &t, m1, m2);
        uint64_t x = t.s1 + tu_below(&rng, 3 * WAL_BLOCK - t.s1);
        flip_at(&f, x, (uint8_t)(1u << tu_below(&rng, 8)));
        reps_clear(&f);
        rd_result res = read_log(&f, 0, 0, &t.m, 0);
        char buf[2048];
        cr_assert(res.rc == ENG_NOTFOUND || res.rc == ENG_CORRUPTION, "flip at %llu: %s", (unsigned long long)x,
                  eng_strerror(res.rc));
        cr_assert_geq(res.n, t.synced, "tear 0x%02x/0x%02x, flip at LSN %llu: %zu records read, %zu were synced", m1,
                      m2, (unsigned long long)x, res.n, t.synced);
        if (res.rc == ENG_CORRUPTION) {
            reported++;
            cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, -1), "%s", tu_reports_str(&f.reps, buf, sizeof buf));
        } else {
            cr_assert_eq(f.reps.total, 0);
        }
    }
    cr_assert_gt(reported, 0, "no flip was reported: the sectors' checks do nothing");
    model_free(&t.m);
    fx_done(&f);
}
