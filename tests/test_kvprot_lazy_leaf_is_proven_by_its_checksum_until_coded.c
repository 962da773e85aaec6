/*
 * test_kvprot_lazy_leaf_is_proven_by_its_checksum_until_coded.c -- KV0
 * (engine/bufpool.h, engine/kvprot.h): a leaf a reader loads is not coded
 * at load; its page checksum proves it until its next use codes it.  What
 * that must never cost:
 *   - a leaf read once carries no codes; its next use codes it, and a
 *     read that learns a hint codes it first (a hint would change the
 *     bytes the checksum proves);
 *   - any bit flipped in a lazy leaf, anywhere in the page, is reported
 *     (kv_protection, the leaf) at its next use, by a get or by a write,
 *     never returned as data; the frame stays lazy and damaged, so every
 *     later use reports it again, and once the bit is back the leaf
 *     codes and answers right;
 *   - a write that meets a damaged lazy leaf writes nothing: the database
 *     reopened from disk holds every key as before;
 *   - eng_debug_frame_code (cacheflip's pattern trials) codes a lazy leaf
 *     and refuses a damaged one.
 * Every case runs at w = 1, 2, 4 and 8, on the vacuumed fixture of
 * kvprot_helpers.h opened cold (nothing cached).
 */
#include "kvprot_helpers.h"

/* A handle on the work copy whose pool leaves every leaf a read loads lazy
 * (kv_lazy_leaves = 1; the default lets the pool choose by the fate of
 * earlier lazy leaves, a_small_cache_chooses_lazy_leaves below). */
static eng_db *open_lazy(int w) {
    eng_options o = kv_opts(w, BIG_CACHE);
    o.kv_lazy_leaves = 1;
    return tu_open(F.work, &o);
}

/* The leaves of the fixture, each with the first key the map found on it. */
static unsigned leaves_with_a_key(uint64_t *blocks, int *keys, unsigned cap) {
    unsigned n = 0;
    for (int i = 0; i < NKEYS && n < cap; i++) {
        unsigned j = 0;
        while (j < n && blocks[j] != (uint64_t)F.leaf_of[i]) j++;
        if (j < n) continue;
        blocks[n] = (uint64_t)F.leaf_of[i];
        keys[n++] = i;
    }
    return n;
}

/* The fixture with every hint on disk: vacuum leaves the versions whose
 * commits were not yet durable unhinted (sync off), and a read learning a
 * hint in a lazy leaf codes it, which would hide what these cases look
 * at.  One pass of reads learns them, the close writes them. */
static void fixture_hinted(void) {
    fixture_build();
    eng_db *db = kv_open(F.work, 0, BIG_CACHE);
    tu_check_gets(db, &F.m, "hinting read");
    tu_close(db);
}

/* BLOCK is not cached (opening the database reads some pages itself). */
static int cold(eng_db *db, uint64_t block) {
    if (!eng_debug_frame_bytes(db, block, NULL)) return 1;
    eng_debug_frame_release(db, block);
    return 0;
}

/* eng_debug_frame_check on BLOCK: -1 while the frame carries no codes. */
static int frame_check(eng_db *db, uint64_t block) {
    cr_assert(eng_debug_frame_bytes(db, block, NULL) != NULL, "block %llu is not cached", (unsigned long long)block);
    int rc = eng_debug_frame_check(db, block);
    eng_debug_frame_release(db, block);
    return rc;
}

KV_WIDTH_TEST(a_leaf_read_once_is_coded_at_its_next_use) {
    fixture_hinted();
    eng_db *db = open_lazy(w);
    uint64_t blocks[256];
    int keys[256];
    unsigned n = leaves_with_a_key(blocks, keys, 256);
    cr_assert_gt(n, 8);
    unsigned tried = 0;
    for (unsigned j = 0; j < n; j++) {
        if (!cold(db, blocks[j])) continue;
        tried++;
        expect_get_right(db, keys[j], "first read");
        cr_assert_eq(frame_check(db, blocks[j]), -1, "leaf %llu was coded by the read that loaded it",
                     (unsigned long long)blocks[j]);
        expect_get_right(db, keys[j], "second read");
        cr_assert_eq(frame_check(db, blocks[j]), 0, "leaf %llu is not coded after its second use",
                     (unsigned long long)blocks[j]);
    }
    cr_assert_gt(tried, n / 2);
    cr_assert_eq(F.rep.total, 0);
    tu_close(db);
}

KV_WIDTH_TEST(a_read_that_learns_a_hint_codes_the_leaf_first) {
    /* No vacuum: every version still lacks its hint, so the first read of
     * a key learns one (its commit is durable after the checkpoint). */
    fixture *f = &F;
    memset(f, 0, sizeof *f);
    tu_reports_init(&f->rep);
    f->work = tu_tmpdir();
    eng_db *db = kv_open(f->work, w, BIG_CACHE);
    uint8_t v[256];
    for (int i = 0; i < NKEYS; i++) {
        char kb[16];
        size_t kl = kv_key(kb, i), vl = kv_val(v, i, 0);
        cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
        tu_model_put(&f->m, kb, kl, v, vl);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_close(db);
    map_blocks(f->work);
    eng_options o = kv_opts(w, BIG_CACHE);
    o.kv_lazy_leaves = 1;
    db = tu_open(f->work, &o);
    uint64_t blocks[256];
    int keys[256];
    unsigned n = leaves_with_a_key(blocks, keys, 256);
    for (unsigned j = 0; j < n; j++) {
        if (!cold(db, blocks[j])) continue;
        expect_get_right(db, keys[j], "first read");
        cr_assert_eq(frame_check(db, blocks[j]), 0,
                     "leaf %llu: the read that learned a hint left it without codes (or they disagree)",
                     (unsigned long long)blocks[j]);
    }
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_gt(st.hints_set, 0, "no hint was learned: the case proves nothing");
    cr_assert_eq(F.rep.total, 0);
    tu_close(db);
}

KV_WIDTH_TEST(every_flip_in_a_lazy_leaf_is_reported_at_its_next_use) {
    fixture_hinted();
    tu_rng r = {0x6c617a79ull + (uint64_t)w};
    uint64_t blocks[256];
    int keys[256];
    unsigned n = leaves_with_a_key(blocks, keys, 256);
    /* Two rounds over the leaves, each on a cold handle: every leaf is
     * loaded by one get, then damaged while lazy. */
    for (int round = 0; round < 2; round++) {
        eng_db *db = open_lazy(w);
        for (unsigned j = 0; j < n; j++) {
            uint64_t blk = blocks[j];
            if (!cold(db, blk)) continue;
            expect_get_right(db, keys[j], "load");
            cr_assert_eq(frame_check(db, blk), -1);
            /* Anywhere in the page: the checksum covers the header, the
             * hint area, the slots, the cells and the free space alike
             * (bytes [0, 8) are the checksum itself). */
            size_t off = (size_t)tu_below(&r, PS);
            int bit = (int)tu_below(&r, 8);
            flip fl = flip_bit(db, blk, off, bit);
            for (int again = 0; again < 2; again++) {
                char what[96];
                snprintf(what, sizeof what, "w=%d leaf %llu byte %zu bit %d, use %d", w, (unsigned long long)blk, off,
                         bit, again + 1);
                expect_get_reported(db, keys[j], (int64_t)blk, -1, what);
            }
            flip_undo(db, &fl);
            expect_get_right(db, keys[j], "after the bit is back");
            cr_assert_eq(frame_check(db, blk), 0, "leaf %llu not coded after the bit is back", (unsigned long long)blk);
        }
        tu_close(db);
    }
}

KV_WIDTH_TEST(a_write_into_a_damaged_lazy_leaf_writes_nothing) {
    fixture_hinted();
    uint64_t blocks[256];
    int keys[256];
    unsigned n = leaves_with_a_key(blocks, keys, 256);
    tu_rng r = {0x77726974ull + (uint64_t)w};
    eng_db *db = open_lazy(w);
    unsigned j = (unsigned)tu_below(&r, n);
    while (!cold(db, blocks[j])) j = (j + 1) % n;
    expect_get_right(db, keys[j], "load");
    cr_assert_eq(frame_check(db, blocks[j]), -1);
    /* A bit of the leaf's first cell's value (slot 0's cell is at the
     * page's end): a byte only the checksum watches while the leaf is lazy. */
    flip fl = flip_bit(db, blocks[j], PS - 1 - (size_t)tu_below(&r, 16), (int)tu_below(&r, 8));
    (void)fl;
    char kb[16];
    size_t kl = kv_key(kb, keys[j]);
    uint8_t v[256];
    size_t vl = kv_val(v, keys[j], 1);
    tu_reports_reset(&F.rep);
    int rc = eng_put(db, kb, kl, v, vl, NULL);
    cr_assert_eq(rc, ENG_CORRUPTION, "a put into a damaged lazy leaf returned %s", eng_strerror(rc));
    cr_assert(has_kvp_report((int64_t)blocks[j], -1), "no kv_protection report for the leaf");
    /* Whatever the handle does next, the disk must still hold the
     * fixture: close (its flush must not write the damaged leaf; it may
     * answer CORRUPTION) and read everything back with a fresh handle. */
    rc = eng_close(db);
    cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION, "eng_close: %s", eng_strerror(rc));
    tu_reports_reset(&F.rep);
    db = open_lazy(w);
    tu_check_gets(db, &F.m, "reopened after the refused put");
    cr_assert_eq(F.rep.total, 0, "the reopened database reports corruption");
    tu_close(db);
}

KV_WIDTH_TEST(debug_frame_code_codes_a_lazy_leaf_and_refuses_a_damaged_one) {
    fixture_hinted();
    uint64_t blocks[256];
    int keys[256];
    unsigned n = leaves_with_a_key(blocks, keys, 256);
    cr_assert_gt(n, 4);
    eng_db *db = open_lazy(w);
    unsigned a = 0;
    while (!cold(db, blocks[a])) a++;
    unsigned b = a + 1;
    while (!cold(db, blocks[b])) b++;
    cr_assert_lt(b, n);
    expect_get_right(db, keys[a], "load");
    cr_assert_eq(frame_check(db, blocks[a]), -1);
    cr_assert(eng_debug_frame_bytes(db, blocks[a], NULL) != NULL);
    cr_assert_eq(eng_debug_frame_code(db, blocks[a]), 0);
    cr_assert_eq(eng_debug_frame_check(db, blocks[a]), 0, "the leaf has no codes after eng_debug_frame_code");
    eng_debug_frame_release(db, blocks[a]);

    expect_get_right(db, keys[b], "load");
    flip fl = flip_bit(db, blocks[b], PS / 2, 3);
    tu_reports_reset(&F.rep);
    cr_assert(eng_debug_frame_bytes(db, blocks[b], NULL) != NULL);
    cr_assert_eq(eng_debug_frame_code(db, blocks[b]), 1, "a damaged lazy leaf was coded");
    cr_assert_eq(eng_debug_frame_check(db, blocks[b]), -1, "a damaged lazy leaf carries codes");
    eng_debug_frame_release(db, blocks[b]);
    cr_assert(has_kvp_report((int64_t)blocks[b], -1));
    flip_undo(db, &fl);
    expect_get_right(db, keys[b], "after the bit is back");
    tu_close(db);
}

/* The default (kv_lazy_leaves = 0) chooses by the fate of earlier lazy
 * leaves: over random reads a cache of 16 pages (a fifth of the fixture)
 * evicts most leaves before their second use, so most loads stay lazy; a
 * cache holding everything uses every leaf again, so after the first
 * leaves (and one load in 64, which keeps measuring) leaves are coded at
 * load.  Both handles answer every get right. */
KV_WIDTH_TEST(the_pool_chooses_lazy_leaves_only_where_they_leave_unused) {
    fixture_hinted();
    tu_rng r = {0x63686f6full + (uint64_t)w};
    for (int big = 0; big < 2; big++) {
        eng_db *db = kv_open(F.work, w, big ? BIG_CACHE : 16);
        for (int k = 0; k < 6000; k++) expect_get_right(db, (int)tu_below(&r, NKEYS), "random read");
        eng_stats st;
        cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
        double lazy = (double)st.kv_lazy_leaves / (double)st.cache_misses;
        if (big)
            cr_assert_lt(lazy, 0.25, "w=%d, whole cache: %llu of %llu loads lazy", w,
                         (unsigned long long)st.kv_lazy_leaves, (unsigned long long)st.cache_misses);
        else
            cr_assert_gt(lazy, 0.5, "w=%d, 16 pages: %llu of %llu loads lazy", w, (unsigned long long)st.kv_lazy_leaves,
                         (unsigned long long)st.cache_misses);
        cr_assert_leq(st.kv_lazy_coded, st.kv_lazy_leaves);
        cr_assert_eq(F.rep.total, 0);
        tu_close(db);
    }
}
