/*
 * test_kvprot_damage_never_reaches_disk.c -- a put into a damaged leaf
 * fails and copies nothing, a flip in a dirty page is caught before
 * write-back (without protection it reaches disk under a valid checksum),
 * width changes across reopens keep data intact, w = 0 computes nothing,
 * and the memory accounting follows the documented rule.
 *
 * Part of the kvprot suite (once test_kvprot.c); the helpers it shares
 * with the other test_kvprot_*.c files are in kvprot_helpers.h.
 */
#include "kvprot_helpers.h"

/* ---- a write landing on a damaged leaf ------------------------------------------------- */

/* Every cell of the raw leaf BLOCK of DIR decodes to a model key with its
 * model value (ALT: one key that may also hold ALT_V), under a valid
 * checksum: the page carries no flipped byte. */
static void expect_disk_leaf_right(const char *dir, uint64_t block, int alt, const uint8_t *alt_v, size_t alt_vl,
                                   const char *what) {
    uint8_t p[PS];
    tu_read_page(dir, block, PS, p);
    cr_assert_eq(page_checksum(p, PS, block), ph_get_checksum(p), "%s: block %llu on disk fails its checksum", what,
                 (unsigned long long)block);
    page_problem pr;
    cr_assert_eq(page_check_structure(p, PS, &pr), ENG_OK, "%s: block %llu on disk: %s", what,
                 (unsigned long long)block, pr.detail);
    cr_assert_eq(ph_get_type(p), PAGE_LEAF);
    for (unsigned s = 0; s < ph_get_nslots(p); s++) {
        leaf_cell c;
        page_leaf_cell(p, s, &c);
        int ki = key_index(c.key, c.klen);
        cr_assert_geq(ki, 0, "%s: block %llu slot %u on disk: a key that was never written", what,
                      (unsigned long long)block, s);
        uint8_t v[256];
        size_t vl = kv_val(v, ki, 0);
        int ok = c.val && tu_bytes_eq(c.val, c.vlen, v, vl);
        if (!ok && ki == alt) ok = c.val && tu_bytes_eq(c.val, c.vlen, alt_v, alt_vl);
        if (!ok) {
            /* a later generation of that key written by the test */
            const tu_kv *kv = tu_model_get(&F.m, c.key, c.klen);
            ok = kv && c.val && tu_bytes_eq(c.val, c.vlen, kv->v, kv->vl);
        }
        cr_assert(ok, "%s: block %llu slot %u (key %d) on disk holds a value never written: the flip reached disk",
                  what, (unsigned long long)block, s, ki);
    }
}

KV_WIDTH_TEST(put_into_leaf_with_flipped_bit_fails_and_copies_nothing) {
    fixture_build();
    tu_rng r = {0x707574ull + (uint64_t)w};
    uint8_t page[PS], v[256];
    int keys[512];
    for (int round = 0; round < 4; round++) {
        tu_copy_dir(F.pristine, F.work);
        eng_db *db = open_warm(w);
        uint64_t block = random_leaf(&r);
        frame_copy(db, block, page);
        unsigned n = leaf_keys(page, keys, 512);
        unsigned vs = (unsigned)tu_below(&r, n), ts;
        do ts = (unsigned)tu_below(&r, n);
        while (ts + 1 >= vs && ts <= vs + 1); /* not a neighbour */
        size_t off = cell_byte(page, vs, round % 2 ? R_KEY : R_VALUE, &r);
        char what[200];
        snprintf(what, sizeof what, "[w=%d round %d] put of key %d onto leaf %llu with a flip in slot %u (key %d)", w,
                 round, keys[ts], (unsigned long long)block, vs, keys[vs]);
        flip_bit(db, block, off, (int)tu_below(&r, 8));
        char kb[16];
        size_t kl = kv_key(kb, keys[ts]), vl = kv_val(v, keys[ts], 1);
        tu_reports_reset(&F.rep);
        int rc = eng_put(db, kb, kl, v, vl, NULL);
        char rs[4096];
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: put returned %s", what, eng_strerror(rc));
        cr_assert(has_kvp_report((int64_t)block, -1), "%s: no kv_protection report for the leaf:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
        int poisoned = eng_poisoned(db);
        if (!poisoned) {
            /* aborted: the old value, or a report (a flipped key can steer
             * the search to itself), never the put's value */
            eng_buf b = {0};
            rc = eng_get(db, kb, kl, &b);
            const tu_kv *old = tu_model_get(&F.m, kb, kl);
            cr_assert(rc == ENG_CORRUPTION || (rc == ENG_OK && tu_bytes_eq(b.data, b.len, old->v, old->vl)),
                      "%s: get after the failed put: %s%s", what, eng_strerror(rc),
                      rc == ENG_OK ? " with a value not the old one" : "");
            eng_buf_free(&b);
        }
        eng_close(db); /* the leaf is not dirty: nothing of it may be written */
        expect_disk_leaf_right(F.work, block, keys[ts], v, vl, what);
        /* in doubt (poisoned): the put is wholly present or absent */
        tu_reports_reset(&F.rep);
        db = kv_open(F.work, w, BIG_CACHE);
        eng_buf b = {0};
        cr_assert_eq(eng_get(db, kb, kl, &b), ENG_OK);
        const tu_kv *old = tu_model_get(&F.m, kb, kl);
        int is_old = tu_bytes_eq(b.data, b.len, old->v, old->vl), is_new = tu_bytes_eq(b.data, b.len, v, vl);
        cr_assert(is_old || (poisoned && is_new), "%s: after reopen the key holds %s", what,
                  is_new ? "the failed put's value" : "a WRONG value");
        eng_buf_free(&b);
        tu_close(db);
        if (is_new) tu_model_put(&F.m, kb, kl, v, vl);
        reopen_check(w, what);
        if (is_new) { /* back to the fixture's model for the next round */
            size_t vl0 = kv_val(v, keys[ts], 0);
            tu_model_put(&F.m, kb, kl, v, vl0);
        }
    }
}

/* ---- dirty pages: caught before write-back --------------------------------------------- */

enum dregion { D_VALUE, D_KEY, D_IDS, D_SLOTS, D_HEADER, D_COUNT };
static const char *dregion_name(int d) {
    static const char *n[] = {"value", "key", "xmin/xmax", "slot array", "header"};
    return n[d];
}

/* Overwrite a key of a random leaf (synced), then flip a bit of region D
 * of that dirty leaf (for cells: a cell of another key).  Returns the
 * leaf; *victim gets the flipped cell's key (or -1). */
static uint64_t dirty_flip(eng_db *db, int d, tu_rng *r, int *victim, flip *fl, char *what, size_t cap, int w) {
    uint8_t page[PS], v[256];
    int keys[512];
    int k = (int)tu_below(r, NKEYS);
    uint64_t block = (uint64_t)F.leaf_of[k];
    char kb[16];
    size_t kl = kv_key(kb, k), vl = kv_val(v, k, 1);
    cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
    tu_model_put(&F.m, kb, kl, v, vl);
    cr_assert_eq(eng_sync(db), ENG_OK); /* the WAL holds the truth */
    /* the leaf of k before the put is dirty (changed, or split) */
    frame_copy(db, block, page);
    cr_assert_eq(ph_get_type(page), PAGE_LEAF);
    unsigned n = leaf_keys(page, keys, 512);
    unsigned slot;
    do slot = (unsigned)tu_below(r, n);
    while (keys[slot] == k && n > 2);
    cr_assert_neq(keys[slot], k);
    size_t off;
    *victim = -1;
    switch (d) {
    case D_VALUE:
        off = cell_byte(page, slot, R_VALUE, r);
        *victim = keys[slot];
        break;
    case D_KEY:
        off = cell_byte(page, slot, R_KEY, r);
        *victim = keys[slot];
        break;
    case D_IDS:
        off = cell_byte(page, slot, R_IDS, r);
        *victim = keys[slot];
        break;
    case D_SLOTS: {
        unsigned base = page_slot_base(page);
        off = base + tu_below(r, ph_get_lower(page) - base);
        break;
    }
    default: off = 16 + tu_below(r, PAGE_HDR - 16); break;
    }
    int bit = (int)tu_below(r, 8);
    snprintf(what, cap, "[w=%d] put of key %d, then bit %d of byte %zu (%s%s) of the dirty leaf %llu", w, k, bit, off,
             dregion_name(d), *victim >= 0 ? " of another key's cell" : "", (unsigned long long)block);
    *fl = flip_bit(db, block, off, bit);
    return block;
}

KV_WIDTH_TEST(flip_in_dirty_page_is_caught_before_write_back) {
    fixture_build();
    tu_rng r = {0x64697274ull + (uint64_t)w};
    char rs[4096], bad_status[300] = "";
    for (int d = 0; d < D_COUNT; d++) {
        tu_copy_dir(F.pristine, F.work);
        eng_db *db = open_warm(w);
        int victim;
        flip fl;
        char what[240];
        uint64_t block = dirty_flip(db, d, &r, &victim, &fl, what, sizeof what, w);
        tu_reports_reset(&F.rep);
        int rc = eng_checkpoint(db);
        cr_assert_neq(rc, ENG_OK, "%s: eng_checkpoint succeeded", what);
        cr_assert(has_kvp_report((int64_t)block, -1), "%s: no kv_protection report for the leaf:\n%s", what,
                  tu_reports_str(&F.rep, rs, sizeof rs));
        cr_assert_eq(eng_poisoned(db), 1, "%s: the handle is not poisoned", what);
        /* the checkpoint that found the damage says so (not "poisoned by an
         * earlier write or sync failure": it is the first failure); judged
         * after every round, so the rest is proven whatever it returns */
        if (rc != ENG_CORRUPTION && !bad_status[0])
            snprintf(bad_status, sizeof bad_status, "%s: eng_checkpoint returned %s, not corruption", what,
                     eng_strerror(rc));
        eng_buf b = {0};
        char kb[16];
        size_t kl = kv_key(kb, 0);
        rc = eng_get(db, kb, kl, &b);
        cr_assert_neq(rc, ENG_OK, "%s: a read on the poisoned handle succeeded", what);
        eng_buf_free(&b);
        eng_close(db); /* fails or not; frees the handle and writes nothing of the leaf */
        /* the page on disk is the one from before the put: valid, every
         * value right, the flipped byte never written */
        expect_disk_leaf_right(F.work, block, -1, NULL, 0, what);
        /* recovery replays the put from the WAL */
        reopen_check(w, what);
        /* a checkpoint now writes the repaired page: still right on disk */
        db = kv_open(F.work, w, BIG_CACHE);
        tu_check_gets(db, &F.m, what);
        cr_assert_eq(eng_checkpoint(db), ENG_OK);
        tu_close(db);
        expect_disk_leaf_right(F.work, block, -1, NULL, 0, what);
        /* the pristine model for the next round */
        tu_model_free(&F.m);
        uint8_t v[256];
        for (int i = 0; i < NKEYS; i++) {
            size_t kl2 = kv_key(kb, i), vl = kv_val(v, i, 0);
            tu_model_put(&F.m, kb, kl2, v, vl);
        }
    }
    cr_assert(!bad_status[0], "%s", bad_status);
}

Test(kvprot, without_protection_dirty_page_flip_reaches_disk_under_valid_checksum, T_OPTS) {
    fixture_build();
    tu_rng r = {0x686f6c65ull};
    eng_db *db = open_warm(0);
    int victim;
    flip fl;
    char what[240], rs[4096];
    uint64_t block = dirty_flip(db, D_VALUE, &r, &victim, &fl, what, sizeof what, 0);
    int rc = eng_checkpoint(db);
    cr_assert_eq(rc, ENG_OK, "%s: eng_checkpoint: %s (w = 0 checks nothing)", what, eng_strerror(rc));
    tu_close(db);
    /* on disk: the flip, under a valid checksum */
    uint8_t p[PS];
    tu_read_page(F.work, block, PS, p);
    cr_assert_eq(page_checksum(p, PS, block), ph_get_checksum(p), "%s: the laundered page fails its checksum", what);
    /* what `engine-tool verify` runs finds nothing */
    uint64_t probs = 1;
    eng_options o = kv_opts(0, BIG_CACHE);
    tu_reports_reset(&F.rep);
    rc = eng_verify_dir(F.work, &o, tu_collect, &F.rep, &probs);
    cr_assert_eq(rc, ENG_OK, "%s: verify found %llu problems (expected none: the page is laundered):\n%s", what,
                 (unsigned long long)probs, tu_reports_str(&F.rep, rs, sizeof rs));
    cr_assert_eq(probs, 0);
    /* yet the value is wrong, and nothing says so */
    db = kv_open(F.work, 0, BIG_CACHE);
    char kb[16];
    size_t kl = kv_key(kb, victim);
    const tu_kv *kv = tu_model_get(&F.m, kb, kl);
    eng_buf b = {0};
    rc = eng_get(db, kb, kl, &b);
    cr_assert_eq(rc, ENG_OK, "%s: get: %s", what, eng_strerror(rc));
    cr_assert(!tu_bytes_eq(b.data, b.len, kv->v, kv->vl), "%s: the value is right: the flip did not reach disk", what);
    cr_assert_eq(b.len, kv->vl);
    size_t diff = 0;
    for (size_t i = 0; i < b.len; i++) diff += __builtin_popcount(((uint8_t *)b.data)[i] ^ kv->v[i]);
    cr_assert_eq(diff, 1, "%s: the value differs in %zu bits, not the one flipped", what, diff);
    cr_assert_eq(F.rep.total, 0, "%s: a report was delivered", what);
    eng_buf_free(&b);
    tu_close(db);
}

/* ---- width across reopens, and w = 0 ------------------------------------------------------ */

/* Some writes: overwrite, delete and reinsert keys (model kept). */
static void write_some(eng_db *db, tu_rng *r, int gen) {
    uint8_t v[256];
    for (int j = 0; j < 150; j++) {
        int i = (int)tu_below(r, NKEYS);
        char kb[16];
        size_t kl = kv_key(kb, i);
        if (j % 5 == 4) {
            int rc = eng_delete(db, kb, kl, NULL);
            cr_assert(rc == ENG_OK || rc == ENG_NOTFOUND, "delete: %s", eng_strerror(rc));
            tu_model_del(&F.m, kb, kl);
        } else {
            size_t vl = kv_val(v, i, gen + j);
            cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
            tu_model_put(&F.m, kb, kl, v, vl);
        }
    }
}

Test(kvprot, width_changes_across_reopens_keep_data_intact, T_OPTS) {
    fixture_build();
    static const int ws[] = {0, 4, 1, 8, 2, 0};
    tu_rng r = {0x7769647468ull};
    char rs[4096];
    for (size_t j = 0; j < sizeof ws / sizeof *ws; j++) {
        const int w = ws[j];
        char what[64];
        snprintf(what, sizeof what, "open %zu (w=%d)", j, w);
        tu_reports_reset(&F.rep);
        eng_db *db = kv_open(F.work, w, j % 2 ? 24 : BIG_CACHE); /* small caches evict and reload */
        eng_stats st;
        cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
        cr_assert_eq(st.block_protection_bytes_per_key, w, "%s: stats say w=%d", what,
                     st.block_protection_bytes_per_key);
        tu_check_gets(db, &F.m, what);
        tu_check_scan(db, &F.m, what);
        write_some(db, &r, 10 * (int)j + 1);
        tu_check_gets(db, &F.m, what);
        if (j == 2) {
            eng_vacuum_stats vs;
            cr_assert_eq(eng_vacuum(db, &vs), ENG_OK);
        }
        cr_assert_eq(eng_checkpoint(db), ENG_OK, "%s: checkpoint", what);
        uint64_t probs = 1;
        cr_assert_eq(eng_verify(db, tu_collect, &F.rep, &probs), ENG_OK, "%s: verify:\n%s", what,
                     tu_reports_str(&F.rep, rs, sizeof rs));
        cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
        cr_assert_eq(st.block_protection_bytes_per_key, w);
        if (w)
            cr_assert_gt(st.kv_checks, 0, "%s: no code was checked", what);
        else
            cr_assert_eq(st.kv_checks, 0, "%s: w=0 checked %llu codes", what, (unsigned long long)st.kv_checks);
        cr_assert_eq(F.rep.total, 0, "%s: reports:\n%s", what, tu_reports_str(&F.rep, rs, sizeof rs));
        tu_close(db);
    }
    reopen_check(0, "final reopen");
}

/* The same workload at width W; returns the stats at its end. */
static void workload(int w, eng_stats *st) {
    tu_copy_dir(F.pristine, F.work);
    tu_reports_reset(&F.rep);
    eng_db *db = kv_open(F.work, w, 32); /* evictions and reloads too */
    tu_rng r = {0x776c6f6164ull};
    eng_snapshot *s;
    cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
    tu_model before = {0};
    for (size_t i = 0; i < F.m.n; i++) tu_model_put(&before, F.m.a[i].k, F.m.a[i].kl, F.m.a[i].v, F.m.a[i].vl);
    tu_check_gets(db, &F.m, "workload");
    write_some(db, &r, 100);
    tu_check_scan(db, &F.m, "workload");
    eng_buf b = {0};
    for (size_t i = 0; i < before.n; i += 7) {
        cr_assert_eq(eng_get_at(db, s, before.a[i].k, before.a[i].kl, &b), ENG_OK);
        cr_assert(tu_bytes_eq(b.data, b.len, before.a[i].v, before.a[i].vl));
    }
    eng_buf_free(&b);
    eng_snapshot_release(db, s);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    eng_vacuum_stats vs;
    cr_assert_eq(eng_vacuum(db, &vs), ENG_OK);
    write_some(db, &r, 200);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_check_gets(db, &F.m, "workload");
    cr_assert_eq(eng_get_stats(db, st), ENG_OK);
    cr_assert_eq(F.rep.total, 0);
    tu_close(db);
    tu_model_free(&before);
}

Test(kvprot, width_0_computes_nothing, T_OPTS) {
    fixture_build();
    tu_model pristine = {0};
    for (size_t i = 0; i < F.m.n; i++) tu_model_put(&pristine, F.m.a[i].k, F.m.a[i].kl, F.m.a[i].v, F.m.a[i].vl);
    eng_stats s0, s4;
    workload(0, &s0);
    cr_assert_eq(s0.block_protection_bytes_per_key, 0);
    cr_assert_eq(s0.kv_checks, 0, "w=0 checked %llu codes", (unsigned long long)s0.kv_checks);
    cr_assert_eq(s0.kv_protection_bytes, 0, "w=0 holds %llu bytes of codes",
                 (unsigned long long)s0.kv_protection_bytes);
    cr_assert_eq(s0.kv_protection_pages, 0);
    cr_assert_eq(s0.kv_protection_keys, 0);
    cr_assert_eq(s0.corruption[ENG_LAYER_KV_PROTECTION], 0);
    /* the counters are live: the same workload at w = 4 moves them */
    tu_model_free(&F.m);
    F.m = pristine;
    workload(4, &s4);
    cr_assert_gt(s4.kv_checks, 0);
    cr_assert_gt(s4.kv_protection_bytes, 0);
    cr_assert_gt(s4.kv_protection_pages, 0);
    cr_assert_gt(s4.kv_protection_keys, 0);
}

/* ---- memory accounting ------------------------------------------------------------------------ */

KV_WIDTH_TEST(memory_accounting_follows_the_documented_rule) {
    eng_db *db = fixture_open_warm(w);
    tu_check_scan(db, &F.m, "scan");
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    /* every leaf and internal page is cached and carries codes (so do the
     * meta page and the commit log's pages: no entries, a page code) */
    cr_assert_geq(st.kv_protection_pages, F.nleaves + F.ninternal + 1,
                  "w=%d: %llu pages carry codes, the tree has %llu", w, (unsigned long long)st.kv_protection_pages,
                  (unsigned long long)(F.nleaves + F.ninternal));
    cr_assert_leq(st.kv_protection_pages, F.nblocks, "w=%d: %llu pages carry codes, the file has %llu blocks", w,
                  (unsigned long long)st.kv_protection_pages, (unsigned long long)F.nblocks);
    cr_assert_eq(st.kv_protection_keys, F.nentries, "w=%d: %llu entries covered, the tree has %llu", w,
                 (unsigned long long)st.kv_protection_keys, (unsigned long long)F.nentries);
    cr_assert_eq(st.kv_protection_bytes, KVP_BYTES(w, st.kv_protection_keys, st.kv_protection_pages),
                 "w=%d: %llu bytes for %llu keys on %llu pages", w, (unsigned long long)st.kv_protection_bytes,
                 (unsigned long long)st.kv_protection_keys, (unsigned long long)st.kv_protection_pages);
    /* the aim (docs/engine.md, Cost aims): at most w bytes per key plus 16
     * per cached page */
    cr_assert_leq(st.kv_protection_bytes, (uint64_t)w * st.kv_protection_keys + 16u * st.kv_protection_pages);
    tu_close(db);

    /* a cache much smaller than the tree: codes come and go with frames */
    db = kv_open(F.work, w, 24);
    tu_check_scan(db, &F.m, "small cache scan");
    tu_check_gets(db, &F.m, "small cache gets");
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_gt(st.evictions, 0);
    cr_assert_gt(st.kv_protection_pages, 0);
    cr_assert_leq(st.kv_protection_pages, st.cache_pages, "w=%d: %llu pages carry codes in a %llu-page cache", w,
                  (unsigned long long)st.kv_protection_pages, (unsigned long long)st.cache_pages);
    cr_assert_eq(st.kv_protection_bytes, KVP_BYTES(w, st.kv_protection_keys, st.kv_protection_pages),
                 "w=%d small cache: %llu bytes for %llu keys on %llu pages", w,
                 (unsigned long long)st.kv_protection_bytes, (unsigned long long)st.kv_protection_keys,
                 (unsigned long long)st.kv_protection_pages);
    /* writes (inserts, splits) keep the books exact */
    tu_rng r = {0x6d656dull};
    write_some(db, &r, 300);
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.kv_protection_bytes, KVP_BYTES(w, st.kv_protection_keys, st.kv_protection_pages),
                 "w=%d after writes: %llu bytes for %llu keys on %llu pages", w,
                 (unsigned long long)st.kv_protection_bytes, (unsigned long long)st.kv_protection_keys,
                 (unsigned long long)st.kv_protection_pages);
    tu_close(db);
}
