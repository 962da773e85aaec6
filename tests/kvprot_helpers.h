/*
 * kvprot_helpers.h -- what the test_kvprot_*.c suites share (one file,
 * test_kvprot.c, before the suite was split): the fixture (a pristine
 * database and the block map of its keys), frames and flips, the checks, and
 * KV_WIDTH_TEST. All functions are static inline: a suite that uses none of
 * one compiles without a warning.  The suites' description:
 *
 * test_kvprot_*.c -- per key-value protection in the buffer pool
 * (docs/engine.md, Per key-value protection): a bit flipped in a cached page
 * is reported as `kv_protection` at its block and entry, never returned as
 * data and never laundered into a fresh, valid page checksum; and with
 * block_protection_bytes_per_key = 0 nothing of it is computed.
 *
 * The fixture: a 4 KiB-page database of NKEYS keys ("k%08u", values of
 * 60..120 bytes, one version each) loaded in a scrambled order, vacuumed
 * (every hint set, so reads dirty nothing) and checkpointed, then closed:
 * the pristine copy.  Its raw pages map every key to its leaf.  Each test
 * copies it, opens the copy with a cache holding the whole database, reads
 * everything (every page cached, codes computed), and flips bits through
 * eng_debug_frame_bytes, finding cells with page.h's accessors on the
 * frame's bytes.
 *
 * Tests (w = block_protection_bytes_per_key; "per width" = run for w = 1,
 * 2, 4 and 8):
 *   flipped_bit_in_cached_key_is_reported_never_returned        per width
 *   flipped_bit_in_cached_value_is_reported_never_returned      per width
 *   flipped_bit_in_cached_version_ids_is_reported               per width
 *       (xmin / xmax of a leaf cell)
 *       each round flips one bit of one cell of a clean cached leaf: a get
 *       of that key returns CORRUPTION with a kv_protection report naming
 *       the block and the slot; forward and backward scans return only
 *       right keys and values and stop with CORRUPTION before the flipped
 *       entry; keys of other leaves still read back.  The bit is put back
 *       and the key reads right again.  After all rounds, close (nothing is
 *       dirty) and reopen: every value right, verify clean.
 *   flipped_bit_in_cell_lengths_or_flags_is_reported            per width
 *       the same for klen, cflags and vlen (random rounds).
 *   every_single_bit_flip_of_a_slot_or_cell_length_is_reported  per width
 *       exhaustively, on every cached leaf: each bit of each slot and of
 *       each cell's klen, cflags and vlen, flipped in turn: the next get of
 *       that key is reported every time, never a value, never "not found".
 *       These fields decide which bytes an entry's code covers, so a flip
 *       in them changes the bytes hashed, not just one bit of them: the
 *       parity bit alone does not catch it, and kvprot.h promises that
 *       every single flip is caught whatever w.
 *   flipped_key_byte_breaking_the_order_never_answers_for_another_key
 *                                                               per width
 *       exhaustively, every bit of every cached key: gets of that key, of
 *       the key its bytes now spell and of its neighbours return the right
 *       value, "not found" only for keys that do not exist, or CORRUPTION;
 *       never another key's value (a binary search misled by the broken
 *       order must not call an entry it passed "exact").
 *   flipped_key_of_an_older_version_is_reported_to_a_snapshot_reader
 *                                                               per width
 *       a snapshot older than a key's newest version reads the version
 *       below it; a flipped key byte in that version is CORRUPTION naming
 *       the leaf and slot, not "not found" (the damaged key must not end
 *       the key's versions early); a current read is right or CORRUPTION.
 *   two_flipped_bits_in_a_hint_nibble_never_hide_a_key           per width
 *       two bits of one slot's hint nibble (another valid state: "xmin
 *       aborted" on a committed version would hide the key): a get is
 *       CORRUPTION (kv_protection, that leaf and slot, for "aborted") or
 *       the right value; a scan from the key returns it or CORRUPTION.
 *   flipped_bit_in_slot_array_or_header_is_reported             per width
 *       a bit of header bytes [16, 40) of a leaf or of the root (an
 *       internal page): the next get of any key under it returns
 *       CORRUPTION, kv_protection, that block, entry -1 (the page code),
 *       never structure (the descent checks a page's code before its
 *       type and level); a bit of a leaf's slot: the
 *       next get of that slot's key, kv_protection naming the slot (its
 *       offset seeds the entry's code).  Scans stop before the page.
 *   flipped_bit_in_internal_separator_or_child_is_caught_on_descent
 *                                                               per width
 *       a bit of a separator key or child pointer of the root: the next get
 *       routed through that entry is CORRUPTION, kv_protection, the root's
 *       block and the entry; nothing wrong is returned.
 *   put_into_leaf_with_flipped_bit_fails_and_copies_nothing     per width
 *       a put landing on a leaf with a flipped key or value bit (of another
 *       entry) fails with CORRUPTION before changing it (the page is
 *       proven whole first); the old value stays; after reopen the data
 *       is right and the leaf on disk never carried the flip.
 *   flip_in_dirty_page_is_caught_before_write_back              per width
 *       after a put (synced), a bit of another cell (value, key, version
 *       ids), of the slot array or of the header of the dirty leaf is
 *       flipped: eng_checkpoint fails (kv_protection report, that block),
 *       the handle is poisoned and reads fail; the leaf on disk holds no
 *       flipped byte (a valid checksum, every cell's value right); after reopen
 *       recovery has the put, every value is right, verify is clean, and
 *       after a checkpoint the page on disk is right.  Judged last: the
 *       checkpoint that found the damage returned ENG_CORRUPTION (not
 *       ENG_POISONED, which says "an earlier write or sync failed").
 *   without_protection_dirty_page_flip_reaches_disk_under_valid_checksum
 *       the hole the option closes (w = 0): the same value flip in a dirty
 *       leaf is written back under a valid checksum; eng_verify_dir (what
 *       `engine-tool verify` runs) finds nothing, yet a get returns a
 *       wrong value.
 *   width_changes_across_reopens_keep_data_intact
 *       w = 0 -> 4 -> 1 -> 8 -> 2 -> 0, caches large and small (evicting),
 *       writes, a vacuum and a checkpoint in each: every open reports its
 *       w in stats, reads every value right (gets, both scans), verifies
 *       clean, and checks codes exactly when w > 0.
 *   width_0_computes_nothing
 *       a workload of gets, scans, snapshot reads, puts, deletes,
 *       checkpoints and vacuum at w = 0 leaves kv_checks,
 *       kv_protection_bytes, _pages and _keys at 0 (the same workload at
 *       w = 4 moves them all: the counters are live).
 *   memory_accounting_follows_the_documented_rule               per width
 *       with every page cached: kv_protection_keys = the entries of every
 *       leaf and internal page, kv_protection_pages covers them (and the
 *       meta and commit-log pages), kv_protection_bytes =
 *       KVP_BYTES(w, keys, pages) = w * keys + 16 * pages (kvprot.h); with
 *       a small cache (evictions) and after writes (splits) the rule still
 *       holds exactly and pages <= cache pages.
 */
#ifndef TESTS_KVPROT_HELPERS_H
#define TESTS_KVPROT_HELPERS_H

#include "testutil.h"

#include "page.h"

#define T_OPTS .timeout = 60, .fini = tu_cleanup

#define PS        4096u
#define NKEYS     2000
#define BIG_CACHE 1024u /* pages: 4 MiB, the whole database (~90 pages) */

/* The memory rule of engine/kvprot.h (kv_memory): w bytes per entry plus
 * 16 per cached page (a pointer to the codes, the 4-byte page code, the
 * 2-byte count and 2 bytes of flags); every cached page carries a page code, meta, commit-log
 * and overflow pages too (with no entries). */
#define KVP_PAGE_BYTES            16u
#define KVP_BYTES(w, keys, pages) ((uint64_t)(w) * (keys) + (uint64_t)KVP_PAGE_BYTES * (pages))

/* ---- the fixture ---------------------------------------------------------- */

typedef struct fixture {
    const char *pristine; /* closed, vacuumed, checkpointed */
    const char *work;     /* the copy a test opens */
    tu_model m;
    uint64_t nblocks;
    uint8_t *type;               /* [nblocks] */
    int64_t leaf_of[NKEYS];      /* leaf block of key i (pristine) */
    uint64_t nleaves, ninternal; /* pages carrying codes */
    uint64_t nentries;           /* slots of those pages */
    tu_reports rep;
} fixture;

static fixture F; /* one per test process (Criterion forks per test) */

static inline size_t kv_key(char *buf, int i) { return tu_key(buf, (uint64_t)i); }

/* Value of key I in generation GEN: 60..120 bytes, a pure function. */
static inline size_t kv_val(uint8_t *buf, int i, int gen) {
    size_t len = 60 + (size_t)((i * 7 + gen * 13) % 61);
    tu_fill(buf, len, 0x6b7670726f74ull ^ ((uint64_t)i << 20) ^ ((uint64_t)gen << 50));
    return len;
}

static inline int key_index(const uint8_t *k, size_t kl) { return (int)tu_key_index(k, kl, NKEYS); }

static inline eng_options kv_opts(int w, size_t cache_pages) {
    eng_options o = tu_opts(ENG_IO_URING, PS, cache_pages, &F.rep);
    o.block_protection_bytes_per_key = w;
    o.checkpoint_wal_bytes = 0; /* only explicit checkpoints: nothing is written behind a test's back */
    return o;
}

static inline eng_db *kv_open(const char *dir, int w, size_t cache_pages) {
    eng_options o = kv_opts(w, cache_pages);
    return tu_open(dir, &o);
}

/* Map the raw pages of DIR: type of each block, leaf of each key, pages
 * and entries that carry codes. */
static inline void map_blocks(const char *dir) {
    fixture *f = &F;
    f->nblocks = tu_data_nblocks(dir, PS);
    free(f->type);
    f->type = calloc(f->nblocks, 1);
    cr_assert(f->type != NULL);
    for (int i = 0; i < NKEYS; i++) f->leaf_of[i] = -1;
    f->nleaves = f->ninternal = f->nentries = 0;
    uint8_t p[PS];
    for (uint64_t b = 0; b < f->nblocks; b++) {
        tu_read_page(dir, b, PS, p);
        f->type[b] = ph_get_type(p);
        if (f->type[b] == PAGE_INTERNAL) {
            f->ninternal++;
            f->nentries += ph_get_nslots(p);
        }
        if (f->type[b] != PAGE_LEAF) continue;
        f->nleaves++;
        unsigned n = ph_get_nslots(p);
        f->nentries += n;
        for (unsigned s = 0; s < n; s++) {
            leaf_cell c;
            page_leaf_cell(p, s, &c);
            int ki = key_index(c.key, c.klen);
            cr_assert(ki >= 0, "leaf %llu slot %u: unexpected key", (unsigned long long)b, s);
            f->leaf_of[ki] = (int64_t)b;
        }
    }
    for (int i = 0; i < NKEYS; i++) cr_assert(f->leaf_of[i] >= 0, "key %d is on no leaf", i);
    cr_assert_eq(f->type[1], PAGE_INTERNAL, "the fixture's root (block 1) is not an internal page");
}

static inline void fixture_build(void) {
    fixture *f = &F;
    memset(f, 0, sizeof *f);
    tu_reports_init(&f->rep);
    f->pristine = tu_tmpdir();
    f->work = tu_tmpdir();
    eng_db *db = kv_open(f->pristine, 0, 0);
    uint8_t v[256];
    for (int i = 0; i < NKEYS; i++) {
        int k = (int)(((uint64_t)i * 1237) % NKEYS); /* splits all over the tree */
        char kb[16];
        size_t kl = kv_key(kb, k), vl = kv_val(v, k, 0);
        cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
        tu_model_put(&f->m, kb, kl, v, vl);
    }
    /* hints on every version: later reads set none, so pages stay clean */
    eng_vacuum_stats vs;
    cr_assert_eq(eng_vacuum(db, &vs), ENG_OK);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_close(db);
    map_blocks(f->pristine);
    tu_copy_dir(f->pristine, f->work);
}

/* Open the work copy with width W and a cache holding everything, and
 * read every key once (every page cached, codes computed); nothing was
 * written by that. */
static inline eng_db *open_warm(int w) {
    eng_db *db = kv_open(F.work, w, BIG_CACHE);
    tu_check_gets(db, &F.m, "warm-up");
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.block_protection_bytes_per_key, w);
    cr_assert_eq(st.page_writes, 0, "reading the vacuumed fixture wrote %llu pages",
                 (unsigned long long)st.page_writes);
    cr_assert_eq(F.rep.total, 0, "the pristine copy reported corruption");
    return db;
}

/* A fresh fixture (fixture_build), its work copy opened warm (open_warm). */
static inline eng_db *fixture_open_warm(int w) {
    fixture_build();
    return open_warm(w);
}

/* ---- frames and flips ------------------------------------------------------ */

/* A copy of BLOCK's cached frame (it must be resident). */
static inline void frame_copy(eng_db *db, uint64_t block, uint8_t *out) {
    size_t ps = 0;
    uint8_t *p = eng_debug_frame_bytes(db, block, &ps);
    cr_assert(p != NULL, "block %llu is not cached", (unsigned long long)block);
    cr_assert_eq(ps, PS);
    memcpy(out, p, PS);
    eng_debug_frame_release(db, block);
}

typedef struct flip {
    uint64_t block;
    size_t off;
    uint8_t mask, after; /* the byte as the flip left it */
} flip;

/* Flip bit BIT of byte OFF of BLOCK's cached frame: a memory fault. */
static inline flip flip_bit(eng_db *db, uint64_t block, size_t off, int bit) {
    size_t ps = 0;
    uint8_t *p = eng_debug_frame_bytes(db, block, &ps);
    cr_assert(p != NULL, "block %llu is not cached", (unsigned long long)block);
    cr_assert_lt(off, ps);
    flip f = {block, off, (uint8_t)(1u << bit), 0};
    p[off] ^= f.mask;
    f.after = p[off];
    eng_debug_frame_release(db, block);
    return f;
}

/* Put the bit back if the frame still holds the flipped byte (the engine
 * may have dropped the frame, and a fresh read is already right). */
static inline void flip_undo(eng_db *db, const flip *f) {
    uint8_t *p = eng_debug_frame_bytes(db, f->block, NULL);
    if (!p) return;
    if (p[f->off] == f->after) p[f->off] ^= f->mask;
    eng_debug_frame_release(db, f->block);
}

/* ---- checks ------------------------------------------------------------------ */

/* Some report has LAYER, file data, BLOCK, and ENTRY (or any entry if
 * ENTRY < 0). */
static inline int has_layer_report(int layer, int64_t block, int32_t entry) {
    int found = 0;
    pthread_mutex_lock(&F.rep.mu);
    for (size_t i = 0; i < F.rep.n && !found; i++) {
        const eng_corruption *r = &F.rep.r[i];
        found = r->layer == layer && !strcmp(r->file, "data") && r->block == block && (entry < 0 || r->entry == entry);
    }
    pthread_mutex_unlock(&F.rep.mu);
    return found;
}
static inline int has_kvp_report(int64_t block, int32_t entry) {
    return has_layer_report(ENG_LAYER_KV_PROTECTION, block, entry);
}

/* A get of model key I returns CORRUPTION with a kv_protection report
 * naming BLOCK (and ENTRY if >= 0), never a value. */
static inline void expect_get_reported(eng_db *db, int i, int64_t block, int32_t entry, const char *what) {
    char rs[4096], kb[16];
    size_t kl = kv_key(kb, i);
    eng_buf b = {0};
    tu_reports_reset(&F.rep);
    int rc = eng_get(db, kb, kl, &b);
    const tu_kv *kv = tu_model_get(&F.m, kb, kl);
    cr_assert(kv != NULL);
    cr_assert_neq(rc, ENG_OK, "%s: get of key %d succeeded (%s value)", what, i,
                  tu_bytes_eq(b.data, b.len, kv->v, kv->vl) ? "right" : "a WRONG");
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: get of key %d returned %s", what, i, eng_strerror(rc));
    cr_assert(has_kvp_report(block, entry), "%s: get of key %d: no kv_protection report for block %lld entry %d:\n%s",
              what, i, (long long)block, entry, tu_reports_str(&F.rep, rs, sizeof rs));
    eng_corruption last;
    cr_assert(eng_last_corruption(db, &last));
    cr_assert_eq(last.block, block, "%s: eng_last_corruption names block %lld", what, (long long)last.block);
    eng_buf_free(&b);
}

static inline void expect_get_right(eng_db *db, int i, const char *what) {
    char kb[16];
    size_t kl = kv_key(kb, i);
    const tu_kv *kv = tu_model_get(&F.m, kb, kl);
    cr_assert(kv != NULL);
    eng_buf b = {0};
    int rc = eng_get(db, kb, kl, &b);
    cr_assert_eq(rc, ENG_OK, "%s: get of key %d: %s", what, i, eng_strerror(rc));
    cr_assert(tu_bytes_eq(b.data, b.len, kv->v, kv->vl), "%s: get of key %d: WRONG VALUE", what, i);
    eng_buf_free(&b);
}

/* A full scan (forward, or backward) returns exactly the model's keys and
 * values in order and stops with CORRUPTION (reported at BLOCK) before
 * passing model position STOP: at most STOP entries forward (positions
 * 0..STOP-1), or at most n-1-STOP backward. */
static inline void expect_scan_stops(eng_db *db, int backward, size_t stop, int64_t block, const char *what) {
    char rs[4096];
    const tu_model *m = &F.m;
    eng_iter *it = NULL;
    eng_iter_options io = {0};
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    tu_reports_reset(&F.rep);
    size_t seen = 0;
    int rc;
    for (rc = backward ? eng_iter_last(it) : eng_iter_first(it); rc == ENG_OK;
         rc = backward ? eng_iter_prev(it) : eng_iter_next(it), seen++) {
        cr_assert_lt(seen, m->n, "%s: scan returned more keys than exist", what);
        size_t pos = backward ? m->n - 1 - seen : seen;
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        cr_assert(tu_bytes_eq(k, kl, m->a[pos].k, m->a[pos].kl), "%s: %s scan: wrong key at position %zu", what,
                  backward ? "bwd" : "fwd", pos);
        cr_assert(tu_bytes_eq(v, vl, m->a[pos].v, m->a[pos].vl), "%s: %s scan: WRONG VALUE at position %zu", what,
                  backward ? "bwd" : "fwd", pos);
        cr_assert(backward ? pos > stop : pos < stop, "%s: %s scan passed the damaged entry (position %zu)", what,
                  backward ? "bwd" : "fwd", stop);
    }
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: %s scan ended with %s after %zu keys", what, backward ? "bwd" : "fwd",
                 eng_strerror(rc), seen);
    cr_assert(has_kvp_report(block, -1), "%s: %s scan: no kv_protection report for block %lld:\n%s", what,
              backward ? "bwd" : "fwd", (long long)block, tu_reports_str(&F.rep, rs, sizeof rs));
    eng_iter_close(it);
}

static inline size_t model_pos(int i) {
    char kb[16];
    size_t kl = kv_key(kb, i);
    int ex;
    size_t pos = tu_model_lb(&F.m, kb, kl, &ex);
    cr_assert(ex);
    return pos;
}

/* Reopen the work copy (width W) and check every value, both scans, and
 * verify. */
static inline void reopen_check(int w, const char *what) {
    tu_reports_reset(&F.rep);
    eng_db *db = kv_open(F.work, w, BIG_CACHE);
    tu_check_gets(db, &F.m, what);
    tu_check_scan(db, &F.m, what);
    uint64_t probs = 1;
    char rs[4096];
    int rc = eng_verify(db, tu_collect, &F.rep, &probs);
    cr_assert_eq(rc, ENG_OK, "%s: verify: %s\n%s", what, eng_strerror(rc), tu_reports_str(&F.rep, rs, sizeof rs));
    cr_assert_eq(probs, 0);
    cr_assert_eq(F.rep.total, 0, "%s: reports after reopen:\n%s", what, tu_reports_str(&F.rep, rs, sizeof rs));
    tu_close(db);
}

/* Keys (model indexes) of the cells of leaf PAGE, slot order. */
static inline unsigned leaf_keys(const uint8_t *page, int *keys, unsigned cap) {
    unsigned n = ph_get_nslots(page);
    cr_assert_leq(n, cap);
    for (unsigned s = 0; s < n; s++) {
        leaf_cell c;
        page_leaf_cell(page, s, &c);
        keys[s] = key_index(c.key, c.klen);
        cr_assert_geq(keys[s], 0);
    }
    return n;
}

static inline uint64_t random_leaf(tu_rng *r) { return (uint64_t)F.leaf_of[tu_below(r, NKEYS)]; }

/* ---- the regions of a leaf cell ---------------------------------------------- */

enum region { R_KEY, R_VALUE, R_IDS, R_LENGTHS };
static inline const char *region_name(int r) {
    return r == R_KEY ? "key" : r == R_VALUE ? "value" : r == R_IDS ? "xmin/xmax" : "klen/cflags/vlen";
}

/* Byte offset in PAGE of a random byte of REGION of the cell at SLOT. */
static inline size_t cell_byte(const uint8_t *page, unsigned slot, int region, tu_rng *r) {
    leaf_cell c;
    page_leaf_cell(page, slot, &c);
    size_t cell = page_slot(page, slot);
    switch (region) {
    case R_KEY: return (size_t)(c.key - page) + tu_below(r, c.klen);
    case R_VALUE:
        cr_assert(c.val != NULL, "fixture values are inline");
        return (size_t)(c.val - page) + tu_below(r, c.vlen);
    case R_IDS: return cell + LEAF_XMIN_OFF + tu_below(r, 16);
    default: {
        /* u16 klen | u8 cflags | u32 vlen: bytes 0..6 */
        return cell + tu_below(r, 7);
    }
    }
}

/* A test run for w = 1, 2, 4 and 8: its body sees the width as `int w`. */
#define KV_WIDTH_TEST(Name)                                                    \
    static void Name##_w_(int w);                                              \
    ParameterizedTestParameters(kvprot, Name) {                                \
        static int widths_[] = {1, 2, 4, 8};                                   \
        return cr_make_param_array(int, widths_, 4);                           \
    }                                                                          \
    ParameterizedTest(int *width, kvprot, Name, T_OPTS) { Name##_w_(*width); } \
    static void Name##_w_(int w)

#endif /* TESTS_KVPROT_HELPERS_H */
