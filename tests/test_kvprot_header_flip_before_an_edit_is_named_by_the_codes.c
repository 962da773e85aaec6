/*
 * test_kvprot_header_flip_before_an_edit_is_named_by_the_codes.c -- a
 * flipped bit in the header of a cached page (slot count, lower, upper,
 * dead bytes), met first by an edit of that page (a put, a delete,
 * vacuum, the commit log's update at a commit), is
 * reported by the per-KV codes (layer kv_protection), not by the edit's
 * own sanity check of the header (layer structure), and nothing is
 * written or changed.
 *
 * Found by the crash test (crashtest.py mutants, 2026-12-01: the real
 * engine failed an iteration replayed from its start, seed 245680733046645
 * of stress, w = 4, checksums off): bt_act_begin checked the header's
 * shape before KV3, so cache damage in a header was named `structure`,
 * which the oracle (V1e: with codes of two bytes or more only
 * kv_protection may name a cache flip) calls a false alarm.  A frame is
 * now proven by its codes before anything trusts its header.
 *
 * Again in blackbox seed 20261302 (iteration 20693139681387, w = 2,
 * checksums off, cache flips): a commit compared the commit-log page's
 * type and index with the directory before its codes, and named a flip
 * there `version` ("commit-log directory names a page that is not that
 * commit-log page"); the header bytes below now include type and aux.
 *
 * Part of the kvprot suite; the fixture is kvprot_helpers.h's.
 */
#include "kvprot_helpers.h"

/* Header bytes the edit's checks look at: type, nslots, lower, upper,
 * frag, and aux (the commit log's page index, which a commit checks
 * against the directory). */
static const size_t header_bytes[] = {20, 22, 23, 24, 25, 26, 27, 28, 29, 36, 37};

/* The model index of a key on LEAF (the first of its slots). */
static int a_key_on(eng_db *db, uint64_t leaf) {
    uint8_t page[PS];
    int keys[512];
    frame_copy(db, leaf, page);
    unsigned n = leaf_keys(page, keys, 512);
    cr_assert(n > 0, "leaf %llu holds no key", (unsigned long long)leaf);
    return keys[0];
}

/* Some report of another layer than kv_protection at BLOCK. */
static int has_other_layer(int64_t block) {
    int found = 0;
    pthread_mutex_lock(&F.rep.mu);
    for (size_t i = 0; i < F.rep.n && !found; i++) {
        const eng_corruption *r = &F.rep.r[i];
        found = r->layer != ENG_LAYER_KV_PROTECTION && !strcmp(r->file, "data") && r->block == block;
    }
    pthread_mutex_unlock(&F.rep.mu);
    return found;
}

enum { OP_PUT, OP_DELETE, OP_VACUUM, OP_COMMIT };
static const char *op_name[] = {"put", "delete", "vacuum", "put (its commit edits the commit log)"};

/* A block of type TYPE in the fixture (asserted). */
static uint64_t block_of_type(int type) {
    for (uint64_t b = 0; b < F.nblocks; b++)
        if (F.type[b] == type) return b;
    cr_assert_fail("the fixture has no page of type %d", type);
    return 0;
}

/* Flip a bit of each header byte of a random leaf (OP_COMMIT: of the
 * commit log's page) in turn, then run OP (on a key of that leaf): it
 * must fail with a kv_protection report of that page and no other
 * layer's, and change nothing. */
static void header_rounds(int w, int op, uint64_t seed) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = {seed + (uint64_t)w};
    for (size_t i = 0; i < sizeof header_bytes / sizeof header_bytes[0]; i++) {
        uint64_t leaf = op == OP_COMMIT ? block_of_type(PAGE_CLOG) : random_leaf(&r);
        int k = op == OP_COMMIT ? (int)tu_below(&r, NKEYS) : a_key_on(db, leaf);
        int bit = (int)tu_below(&r, 8);
        char what[160];
        snprintf(what, sizeof what, "[w=%d] bit %d of header byte %zu of leaf %llu, then a %s (key %d)", w, bit,
                 header_bytes[i], (unsigned long long)leaf, op_name[op], k);
        tu_reports_reset(&F.rep);
        flip f = flip_bit(db, leaf, header_bytes[i], bit);
        char kb[16];
        uint8_t v[256];
        size_t kl = kv_key(kb, k), vl = kv_val(v, k, 1);
        eng_vacuum_stats vs;
        int rc = op == OP_PUT || op == OP_COMMIT ? eng_put(db, kb, kl, v, vl, NULL)
                 : op == OP_DELETE               ? eng_delete(db, kb, kl, NULL)
                                                 : eng_vacuum(db, &vs);
        char rs[4096];
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: %s returned %s", what, op_name[op], eng_strerror(rc));
        cr_assert(has_kvp_report((int64_t)leaf, -1), "%s: no kv_protection report; reports:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
        cr_assert(!has_other_layer((int64_t)leaf), "%s: another layer named the cache damage:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
        flip_undo(db, &f);
        if (op == OP_COMMIT) {
            /* The put's pages changed before its commit failed: the handle
             * is poisoned (a reader must not see them), and after a
             * reopen the put is gone, everything else as it was. */
            eng_buf b = {0};
            int grc = eng_get(db, kb, kl, &b);
            eng_buf_free(&b);
            cr_assert_eq(grc, ENG_POISONED, "%s: get after the refused commit: %s", what, eng_strerror(grc));
            eng_close(db);
            reopen_check(w, what);
            db = open_warm(w);
            continue;
        }
        expect_get_right(db, k, what); /* the refused edit changed nothing */
    }
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.page_writes, 0, "a refused edit wrote pages");
    tu_close(db);
    reopen_check(w, "reopen after the refused edits");
}

KV_WIDTH_TEST(header_flip_met_by_a_put_is_reported_by_the_codes) { header_rounds(w, OP_PUT, 0x707574ull); }

KV_WIDTH_TEST(header_flip_met_by_a_delete_is_reported_by_the_codes) { header_rounds(w, OP_DELETE, 0x64656cull); }

KV_WIDTH_TEST(header_flip_met_by_vacuum_is_reported_by_the_codes) { header_rounds(w, OP_VACUUM, 0x766163ull); }

/* The commit log's page is edited by every commit, and no read path
 * checks it first: the seed the crash test found. */
KV_WIDTH_TEST(commit_log_header_flip_met_by_a_commit_is_reported_by_the_codes) {
    header_rounds(w, OP_COMMIT, 0x636c6full);
}

/* eng_verify's walk of the commit log's and the free list's pages reads
 * their type and index from the cache after its first pass checked the
 * blocks (a clean frame's first pass reads the disk): the codes first
 * there too, or a flip in the cached header is named `version`. */
KV_WIDTH_TEST(commit_log_header_flip_met_by_verify_is_reported_by_the_codes) {
    eng_db *db = fixture_open_warm(w);
    uint64_t clog = block_of_type(PAGE_CLOG);
    tu_rng r = {0x766572ull + (uint64_t)w};
    for (size_t off = 20; off <= 37; off += 17) { /* type, then aux */
        int bit = (int)tu_below(&r, 8);
        char what[128], rs[4096];
        snprintf(what, sizeof what, "[w=%d] bit %d of header byte %zu of the commit log's page %llu, then verify", w,
                 bit, off, (unsigned long long)clog);
        tu_reports_reset(&F.rep);
        flip f = flip_bit(db, clog, off, bit);
        uint64_t probs = 0;
        int rc = eng_verify(db, tu_collect, &F.rep, &probs);
        flip_undo(db, &f);
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: verify returned %s", what, eng_strerror(rc));
        cr_assert(has_kvp_report((int64_t)clog, -1), "%s: no kv_protection report; reports:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
        cr_assert(!has_other_layer((int64_t)clog), "%s: another layer named the cache damage:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
    }
    tu_close(db);
}

/* The meta page's commit-log count flipped in the cache, then eng_verify:
 * verify read the directory's entries up to that count, past the end of
 * the page (blackbox seed 20261303, iteration 203905081261224: a SIGSEGV
 * at w = 1, 4 threads, a cache flip every 100 ticks; ASan named
 * bt_verify's meta_clog_block).  With the codes the flip is theirs to
 * name; without them (w = 0) verify reports the count and reads nothing
 * past the page. */
static void meta_count_round(int w) {
    eng_db *db = fixture_open_warm(w);
    char what[128], rs[4096];
    snprintf(what, sizeof what, "[w=%d] the high bit of the meta page's commit-log count, then verify", w);
    tu_reports_reset(&F.rep);
    flip f = flip_bit(db, 0, META_OFF_CLOGN + 3, 7);
    uint64_t probs = 0;
    int rc = eng_verify(db, tu_collect, &F.rep, &probs);
    flip_undo(db, &f);
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: verify returned %s", what, eng_strerror(rc));
    if (w)
        cr_assert(has_kvp_report(0, -1) && !has_other_layer(0), "%s: reports:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
    else
        cr_assert(has_layer_report(ENG_LAYER_STRUCTURE, 0, -1), "%s: reports:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
    tu_close(db);
}

KV_WIDTH_TEST(meta_commit_log_count_flip_met_by_verify_is_reported_by_the_codes) { meta_count_round(w); }

Test(kvprot, meta_commit_log_count_flip_without_codes_is_reported_by_verify_within_the_page, T_OPTS) {
    meta_count_round(0);
}
