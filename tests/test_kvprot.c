/*
 * test_kvprot.c -- per key-value protection in the buffer pool (issue 7;
 * DESIGN 3.6): a bit flipped in a cached page is reported as
 * `kv_protection` at its block and entry, never returned as data and never
 * laundered into a fresh, valid page checksum; and with
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
 *       or structure for that block when the descent's own check of a
 *       page's type and level sees it first; a bit of a leaf's slot: the
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
#include "testutil.h"

#include "page.h"

#define T_OPTS .timeout = 60, .fini = tu_cleanup

#define PS 4096u
#define NKEYS 2000
#define BIG_CACHE 1024u /* pages: 4 MiB, the whole database (~90 pages) */

/* The memory rule of engine/kvprot.h (kv_memory): w bytes per entry plus
 * 16 per cached page (a pointer to the codes, the 4-byte page code, the
 * 4-byte count); every cached page carries a page code, meta, commit-log
 * and overflow pages too (with no entries). */
#define KVP_PAGE_BYTES 16u
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

static size_t kv_key(char *buf, int i) { return tu_key(buf, (uint64_t)i); }

/* Value of key I in generation GEN: 60..120 bytes, a pure function. */
static size_t kv_val(uint8_t *buf, int i, int gen) {
    size_t len = 60 + (size_t)((i * 7 + gen * 13) % 61);
    tu_fill(buf, len, 0x6b7670726f74ull ^ ((uint64_t)i << 20) ^ ((uint64_t)gen << 50));
    return len;
}

static int key_index(const uint8_t *k, size_t kl) { return (int)tu_key_index(k, kl, NKEYS); }

static eng_options kv_opts(int w, size_t cache_pages) {
    eng_options o = tu_opts(ENG_IO_URING, PS, cache_pages, &F.rep);
    o.block_protection_bytes_per_key = w;
    o.checkpoint_wal_bytes = 0; /* only explicit checkpoints: nothing is written behind a test's back */
    return o;
}

static eng_db *kv_open(const char *dir, int w, size_t cache_pages) {
    eng_options o = kv_opts(w, cache_pages);
    return tu_open(dir, &o);
}

/* Map the raw pages of DIR: type of each block, leaf of each key, pages
 * and entries that carry codes. */
static void map_blocks(const char *dir) {
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

static void fixture_build(void) {
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
static eng_db *open_warm(int w) {
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
static eng_db *fixture_open_warm(int w) {
    fixture_build();
    return open_warm(w);
}

/* ---- frames and flips ------------------------------------------------------ */

/* A copy of BLOCK's cached frame (it must be resident). */
static void frame_copy(eng_db *db, uint64_t block, uint8_t *out) {
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
static flip flip_bit(eng_db *db, uint64_t block, size_t off, int bit) {
    size_t ps = 0;
    uint8_t *p = eng_debug_frame_bytes(db, block, &ps);
    cr_assert(p != NULL, "block %llu is not cached", (unsigned long long)block);
    cr_assert_lt(off, ps);
    flip f = { block, off, (uint8_t)(1u << bit), 0 };
    p[off] ^= f.mask;
    f.after = p[off];
    eng_debug_frame_release(db, block);
    return f;
}

/* Put the bit back if the frame still holds the flipped byte (the engine
 * may have dropped the frame, and a fresh read is already right). */
static void flip_undo(eng_db *db, const flip *f) {
    uint8_t *p = eng_debug_frame_bytes(db, f->block, NULL);
    if (!p) return;
    if (p[f->off] == f->after) p[f->off] ^= f->mask;
    eng_debug_frame_release(db, f->block);
}

/* ---- checks ------------------------------------------------------------------ */

/* Some report has layer kv_protection (or, with ALSO_STRUCTURE, structure),
 * file data, BLOCK, and ENTRY (or any entry if ENTRY < 0). */
static int has_report(int64_t block, int32_t entry, int also_structure) {
    int found = 0;
    pthread_mutex_lock(&F.rep.mu);
    for (size_t i = 0; i < F.rep.n && !found; i++) {
        const eng_corruption *r = &F.rep.r[i];
        found = (r->layer == ENG_LAYER_KV_PROTECTION || (also_structure && r->layer == ENG_LAYER_STRUCTURE)) &&
                !strcmp(r->file, "data") && r->block == block && (entry < 0 || r->entry == entry);
    }
    pthread_mutex_unlock(&F.rep.mu);
    return found;
}
static int has_kvp_report(int64_t block, int32_t entry) { return has_report(block, entry, 0); }

/* A get of model key I returns CORRUPTION with a kv_protection report
 * naming BLOCK (and ENTRY if >= 0), never a value.  ALSO_STRUCTURE: a
 * structure report on BLOCK will do too (a child's type or level damaged
 * in the cache is seen by the descent's own check of the child before the
 * child's page code). */
static void expect_get_reported_as(eng_db *db, int i, int64_t block, int32_t entry, int also_structure,
                                   const char *what) {
    char rs[4096], kb[16];
    size_t kl = kv_key(kb, i);
    eng_buf b = { 0 };
    tu_reports_reset(&F.rep);
    int rc = eng_get(db, kb, kl, &b);
    const tu_kv *kv = tu_model_get(&F.m, kb, kl);
    cr_assert(kv != NULL);
    cr_assert_neq(rc, ENG_OK, "%s: get of key %d succeeded (%s value)", what, i,
                  tu_bytes_eq(b.data, b.len, kv->v, kv->vl) ? "right" : "a WRONG");
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: get of key %d returned %s", what, i, eng_strerror(rc));
    cr_assert(has_report(block, entry, also_structure),
              "%s: get of key %d: no kv_protection report for block %lld entry %d:\n%s", what, i, (long long)block,
              entry, tu_reports_str(&F.rep, rs, sizeof rs));
    eng_corruption last;
    cr_assert(eng_last_corruption(db, &last));
    cr_assert_eq(last.block, block, "%s: eng_last_corruption names block %lld", what, (long long)last.block);
    eng_buf_free(&b);
}
static void expect_get_reported(eng_db *db, int i, int64_t block, int32_t entry, const char *what) {
    expect_get_reported_as(db, i, block, entry, 0, what);
}

static void expect_get_right(eng_db *db, int i, const char *what) {
    char kb[16];
    size_t kl = kv_key(kb, i);
    const tu_kv *kv = tu_model_get(&F.m, kb, kl);
    cr_assert(kv != NULL);
    eng_buf b = { 0 };
    int rc = eng_get(db, kb, kl, &b);
    cr_assert_eq(rc, ENG_OK, "%s: get of key %d: %s", what, i, eng_strerror(rc));
    cr_assert(tu_bytes_eq(b.data, b.len, kv->v, kv->vl), "%s: get of key %d: WRONG VALUE", what, i);
    eng_buf_free(&b);
}

/* A full scan (forward, or backward) returns exactly the model's keys and
 * values in order and stops with CORRUPTION (reported at BLOCK) before
 * passing model position STOP: at most STOP entries forward (positions
 * 0..STOP-1), or at most n-1-STOP backward. */
static void expect_scan_stops_as(eng_db *db, int backward, size_t stop, int64_t block, int also_structure,
                                 const char *what) {
    char rs[4096];
    const tu_model *m = &F.m;
    eng_iter *it = NULL;
    eng_iter_options io = { 0 };
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
    cr_assert(has_report(block, -1, also_structure), "%s: %s scan: no kv_protection report for block %lld:\n%s", what,
              backward ? "bwd" : "fwd", (long long)block, tu_reports_str(&F.rep, rs, sizeof rs));
    eng_iter_close(it);
}
static void expect_scan_stops(eng_db *db, int backward, size_t stop, int64_t block, const char *what) {
    expect_scan_stops_as(db, backward, stop, block, 0, what);
}

static size_t model_pos(int i) {
    char kb[16];
    size_t kl = kv_key(kb, i);
    int ex;
    size_t pos = tu_model_lb(&F.m, kb, kl, &ex);
    cr_assert(ex);
    return pos;
}

/* Reopen the work copy (width W) and check every value, both scans, and
 * verify. */
static void reopen_check(int w, const char *what) {
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
static unsigned leaf_keys(const uint8_t *page, int *keys, unsigned cap) {
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

static uint64_t random_leaf(tu_rng *r) { return (uint64_t)F.leaf_of[tu_below(r, NKEYS)]; }

/* ---- flips in a clean cached leaf cell ---------------------------------------- */

enum region { R_KEY, R_VALUE, R_IDS, R_LENGTHS };
static const char *region_name(int r) {
    return r == R_KEY ? "key" : r == R_VALUE ? "value" : r == R_IDS ? "xmin/xmax" : "klen/cflags/vlen";
}

/* Byte offset in PAGE of a random byte of REGION of the cell at SLOT. */
static size_t cell_byte(const uint8_t *page, unsigned slot, int region, tu_rng *r) {
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

static void leaf_cell_rounds(int w, int region, int rounds, uint64_t seed) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = { seed + (uint64_t)w };
    uint8_t page[PS];
    int keys[512];
    for (int round = 0; round < rounds; round++) {
        uint64_t block = random_leaf(&r);
        frame_copy(db, block, page);
        unsigned n = leaf_keys(page, keys, 512);
        unsigned slot = (unsigned)tu_below(&r, n);
        size_t off = cell_byte(page, slot, region, &r);
        int bit = (int)tu_below(&r, 8);
        char what[200];
        snprintf(what, sizeof what, "[w=%d seed %#llx round %d] bit %d of byte %zu (%s of slot %u, key %d) of leaf %llu",
                 w, (unsigned long long)seed, round, bit, off, region_name(region), slot, keys[slot],
                 (unsigned long long)block);
        flip f = flip_bit(db, block, off, bit);
        expect_get_reported(db, keys[slot], (int64_t)block, (int32_t)slot, what);
        /* again: the damage stays reported, it is not cached away as data */
        expect_get_reported(db, keys[slot], (int64_t)block, -1, what);
        size_t pos = model_pos(keys[slot]);
        expect_scan_stops(db, 0, pos, (int64_t)block, what);
        expect_scan_stops(db, 1, pos, (int64_t)block, what);
        /* a key of another leaf is untouched */
        int other;
        do other = (int)tu_below(&r, NKEYS); while ((uint64_t)F.leaf_of[other] == block);
        expect_get_right(db, other, what);
        flip_undo(db, &f);
        expect_get_right(db, keys[slot], what);
    }
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_geq(st.corruption[ENG_LAYER_KV_PROTECTION], (uint64_t)rounds);
    cr_assert_eq(st.page_writes, 0);
    tu_close(db); /* nothing dirty: nothing to write */
    reopen_check(w, "reopen after the flips");
}

/* A test run for w = 1, 2, 4 and 8: its body sees the width as `int w`. */
#define KV_WIDTH_TEST(Name)                                                                         \
    static void Name##_w_(int w);                                                                   \
    ParameterizedTestParameters(kvprot, Name) {                                                     \
        static int widths_[] = { 1, 2, 4, 8 };                                                      \
        return cr_make_param_array(int, widths_, 4);                                                \
    }                                                                                               \
    ParameterizedTest(int *width, kvprot, Name, T_OPTS) { Name##_w_(*width); }                      \
    static void Name##_w_(int w)

KV_WIDTH_TEST(flipped_bit_in_cached_key_is_reported_never_returned) {
    leaf_cell_rounds(w, R_KEY, 12, 0x6b6579ull);
}

KV_WIDTH_TEST(flipped_bit_in_cached_value_is_reported_never_returned) {
    leaf_cell_rounds(w, R_VALUE, 12, 0x76616cull);
}

KV_WIDTH_TEST(flipped_bit_in_cached_version_ids_is_reported) {
    leaf_cell_rounds(w, R_IDS, 8, 0x786d696eull);
}

KV_WIDTH_TEST(flipped_bit_in_cell_lengths_or_flags_is_reported) {
    leaf_cell_rounds(w, R_LENGTHS, 14, 0x6c656eull);
}

/* Every single-bit flip of the fields that decide which bytes an entry's
 * code covers (the slot's offset; klen, cflags, vlen), on every cached
 * leaf: the next get of that entry's key must be reported, whatever w
 * (kvprot.h: "a single flip included, is always caught, whatever w").
 * Outcomes that break it are counted: a value returned (wrong, or right
 * while the cell is damaged), "not found" for a key that exists, or a get
 * that fails with no report naming the leaf (a report in any layer that
 * names it counts as caught: a damaged overflow flag is sometimes stopped
 * by the overflow pointer's range check). */
KV_WIDTH_TEST(every_single_bit_flip_of_a_slot_or_cell_length_is_reported) {
    eng_db *db = fixture_open_warm(w);
    uint8_t page[PS];
    int keys[512];
    uint64_t flips = 0, wrong = 0, right = 0, notfound = 0, unreported = 0;
    char first[4][420] = { "", "", "", "" };
    eng_buf b = { 0 };
    for (uint64_t block = 0; block < F.nblocks; block++) {
        if (F.type[block] != PAGE_LEAF) continue;
        frame_copy(db, block, page);
        unsigned n = leaf_keys(page, keys, 512), base = page_slot_base(page);
        for (unsigned slot = 0; slot < n; slot++) {
            size_t cell = page_slot(page, slot);
            /* bytes 0-1: the slot; 2-8: klen | cflags | vlen of its cell */
            for (unsigned j = 0; j < 9; j++) {
                size_t off = j < 2 ? base + 2u * slot + j : cell + (j - 2);
                for (int bit = 0; bit < 8; bit++) {
                    flip f = flip_bit(db, block, off, bit);
                    char kb[16];
                    size_t kl = kv_key(kb, keys[slot]);
                    const tu_kv *kv = tu_model_get(&F.m, kb, kl);
                    tu_reports_reset(&F.rep);
                    size_t before = F.rep.total;
                    int rc = eng_get(db, kb, kl, &b);
                    int k = -1;
                    if (rc == ENG_OK) k = tu_bytes_eq(b.data, b.len, kv->v, kv->vl) ? 1 : 0;
                    else if (rc == ENG_NOTFOUND) k = 2;
                    else if (F.rep.total == before || !tu_reports_has(&F.rep, -1, "data", (int64_t)block)) k = 3;
                    if (k >= 0) {
                        uint64_t *cnt[] = { &wrong, &right, &notfound, &unreported };
                        static const char *what[] = { "a WRONG value returned", "the value returned from a damaged cell",
                                                      "not found", "failed, no report names the leaf" };
                        if (!first[k][0]) {
                            char blame[200] = "";
                            if (k == 3 && F.rep.n) eng_corruption_format(&F.rep.r[0], blame, sizeof blame);
                            snprintf(first[k], sizeof first[k], "%s: leaf %llu slot %u (key %d), bit %d of %s byte %u%s%s",
                                     what[k], (unsigned long long)block, slot, keys[slot], bit,
                                     j < 2 ? "slot" : "cell header", j < 2 ? j : j - 2, blame[0] ? "; reported: " : "",
                                     blame);
                        }
                        (*cnt[k])++;
                    }
                    flip_undo(db, &f);
                    flips++;
                }
            }
        }
    }
    eng_buf_free(&b);
    tu_close(db);
    cr_assert(wrong + right + notfound + unreported == 0,
              "w=%d: of %llu single-bit flips of slots and cell lengths, %llu escaped the codes:\n"
              "  %llu returned a wrong value (first: %s)\n  %llu returned the value of a damaged cell (first: %s)\n"
              "  %llu turned the lookup into not found (first: %s)\n  %llu failed, the leaf unnamed (first: %s)",
              w, (unsigned long long)flips, (unsigned long long)(wrong + right + notfound + unreported),
              (unsigned long long)wrong, first[0], (unsigned long long)right, first[1], (unsigned long long)notfound,
              first[2], (unsigned long long)unreported, first[3]);
    reopen_check(w, "reopen after every flip");
}

/* Every single-bit flip of every cached key byte, flips that break the
 * leaf's key order included: gets of the damaged entry's key, of the key
 * its bytes now spell, and of its two neighbours never answer with another
 * key's value, never "not found" for a key that exists, and never a value
 * for a key that does not.  Found by stress (2 threads, cache flips):
 * page_search said "exact" of an equal entry it had met on the way rather
 * than of the slot it returned, so with the order broken a get of the
 * damaged key's new spelling returned its neighbour's value. */
KV_WIDTH_TEST(flipped_key_byte_breaking_the_order_never_answers_for_another_key) {
    eng_db *db = fixture_open_warm(w);
    uint8_t page[PS];
    int keys[512];
    uint64_t flips = 0, gets = 0, bad = 0;
    char first[600] = "";
    eng_buf b = { 0 };
    for (uint64_t block = 0; block < F.nblocks; block++) {
        if (F.type[block] != PAGE_LEAF) continue;
        frame_copy(db, block, page);
        unsigned n = leaf_keys(page, keys, 512);
        for (unsigned slot = 0; slot < n; slot++) {
            size_t koff = page_slot(page, slot) + LEAF_CELL_HDR;
            for (unsigned j = 0; j < 9; j++) {
                for (int bit = 0; bit < 8; bit++) {
                    flip f = flip_bit(db, block, koff + j, bit);
                    char probe[4][16];
                    kv_key(probe[0], keys[slot]);
                    memcpy(probe[1], page + koff, 9);
                    probe[1][j] ^= (char)(1u << bit);
                    kv_key(probe[2], slot > 0 ? keys[slot - 1] : keys[slot]);
                    kv_key(probe[3], slot + 1 < n ? keys[slot + 1] : keys[slot]);
                    for (int q = 0; q < 4; q++) {
                        const tu_kv *kv = tu_model_get(&F.m, probe[q], 9);
                        int rc = eng_get(db, probe[q], 9, &b);
                        int ok = rc == ENG_CORRUPTION || (rc == ENG_NOTFOUND && !kv) ||
                                 (rc == ENG_OK && kv && tu_bytes_eq(b.data, b.len, kv->v, kv->vl));
                        gets++;
                        if (ok) continue;
                        if (!first[0]) {
                            int64_t whose = b.len >= 1 && rc == ENG_OK ? -1 : -2;
                            snprintf(first, sizeof first,
                                     "leaf %llu slot %u (key %d), bit %d of key byte %u: get of %.9s (%s) returned %s%s",
                                     (unsigned long long)block, slot, keys[slot], bit, j, probe[q],
                                     q == 0 ? "the damaged entry's key" : q == 1 ? "the key it now spells" : "a neighbour",
                                     eng_strerror(rc),
                                     whose == -1 ? (kv ? ": a WRONG value" : ": a value for a key that does not exist") : "");
                        }
                        bad++;
                    }
                    flip_undo(db, &f);
                    flips++;
                }
            }
        }
    }
    eng_buf_free(&b);
    tu_close(db);
    cr_assert(bad == 0, "w=%d: of %llu gets around %llu single-bit key flips, %llu answered wrong (first: %s)", w,
              (unsigned long long)gets, (unsigned long long)flips, (unsigned long long)bad, first);
    reopen_check(w, "reopen after every key flip");
}

/* A reader at a snapshot older than a key's newest version reads the
 * version below it.  A flipped key byte in that older version must be
 * reported, not taken for the end of the key's versions (which would
 * answer "not found" for a key the snapshot sees). */
KV_WIDTH_TEST(flipped_key_of_an_older_version_is_reported_to_a_snapshot_reader) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = { 0x6f6c6465ull + (uint64_t)w };
    uint8_t page[PS], v[256];
    eng_buf b = { 0 };
    for (int round = 0; round < 12; round++) {
        int i = (int)tu_below(&r, NKEYS);
        char kb[16];
        size_t kl = kv_key(kb, i);
        const tu_kv *old = tu_model_get(&F.m, kb, kl);
        cr_assert(old != NULL);
        uint8_t oldv[256];
        size_t oldvl = old->vl;
        memcpy(oldv, old->v, oldvl);
        eng_snapshot *s = NULL;
        cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
        size_t vl = kv_val(v, i, round + 1);
        cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
        tu_model_put(&F.m, kb, kl, v, vl);
        /* The key's versions, newest first, on one leaf (a put may split). */
        uint64_t block = 0;
        int older = -1;
        for (uint64_t bl = 1; bl < eng_debug_nblocks(db) && older < 0; bl++) {
            uint8_t *p = eng_debug_frame_bytes(db, bl, NULL);
            if (!p) continue;
            memcpy(page, p, PS);
            eng_debug_frame_release(db, bl);
            if (ph_get_type(page) != PAGE_LEAF) continue;
            int seen = 0;
            for (unsigned sl = 0; sl < ph_get_nslots(page); sl++) {
                leaf_cell c;
                page_leaf_cell(page, sl, &c);
                if (c.klen == kl && !memcmp(c.key, kb, kl) && seen++ == 1) { older = (int)sl; block = bl; }
            }
        }
        cr_assert(older > 0, "round %d: key %d has no second version in the cache", round, i);
        size_t off = page_slot(page, (unsigned)older) + LEAF_CELL_HDR + kl - 1;
        flip f = flip_bit(db, block, off, round % 3);
        tu_reports_reset(&F.rep);
        int rc = eng_get_at(db, s, kb, kl, &b);
        cr_assert_eq(rc, ENG_CORRUPTION,
                     "round %d: a snapshot get of key %d, whose older version's key is damaged, returned %s%s", round, i,
                     eng_strerror(rc), rc == ENG_NOTFOUND ? " (the damaged key ended the versions early)" : "");
        cr_assert(has_kvp_report((int64_t)block, older), "round %d: no kv_protection report names leaf %llu slot %d",
                  round, (unsigned long long)block, older);
        /* A current read decides at the newest version: right, or
         * CORRUPTION when the search's bracket holds the damaged entry. */
        rc = eng_get(db, kb, kl, &b);
        cr_assert(rc == ENG_CORRUPTION || (rc == ENG_OK && tu_bytes_eq(b.data, b.len, v, vl)),
                  "round %d: a current get of key %d returned %s%s", round, i, eng_strerror(rc),
                  rc == ENG_OK ? " with a WRONG value" : "");
        flip_undo(db, &f);
        cr_assert_eq(eng_get_at(db, s, kb, kl, &b), ENG_OK);
        cr_assert(tu_bytes_eq(b.data, b.len, oldv, oldvl), "round %d: the snapshot no longer reads the old value", round);
        eng_snapshot_release(db, s);
    }
    eng_buf_free(&b);
    tu_close(db);
    reopen_check(w, "reopen after older-version flips");
}

/* Two bits flipped in one hint nibble (the hint area lies outside the
 * codes; its even-parity nibbles catch one flip, not two) can make another
 * valid state: "xmin aborted" on a committed version would hide the key.
 * With protection on, a hint is used only where the transaction status
 * agrees, so such damage is CORRUPTION (kv_protection, the leaf and slot)
 * or harmless, never "not found" and never a wrong value. */
KV_WIDTH_TEST(two_flipped_bits_in_a_hint_nibble_never_hide_a_key) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = { 0x68696e74ull + (uint64_t)w };
    uint8_t page[PS];
    int keys[512];
    eng_buf b = { 0 };
    /* from XMIN_C (0x3, what vacuum left on every version) to NONE, XMIN_A,
     * XMAX_C and XMAX_A */
    static const unsigned masks[4] = { 0x3, 0x6, 0x5, 0xa };
    for (int round = 0; round < 24; round++) {
        uint64_t block = random_leaf(&r);
        frame_copy(db, block, page);
        unsigned n = leaf_keys(page, keys, 512), slot = (unsigned)tu_below(&r, n);
        unsigned m = masks[round % 4], h = page_hint(page, slot);
        cr_assert_eq(h, HINT_XMIN_C, "leaf %llu slot %u: the vacuumed fixture's hint is 0x%x", (unsigned long long)block,
                     slot, h);
        size_t off = PAGE_HDR + slot / 2;
        int sh = (slot & 1) ? 4 : 0;
        flip f1 = flip_bit(db, block, off, sh + __builtin_ctz(m));
        flip f2 = flip_bit(db, block, off, sh + 31 - __builtin_clz(m));
        char kb[16];
        size_t kl = kv_key(kb, keys[slot]);
        const tu_kv *kv = tu_model_get(&F.m, kb, kl);
        tu_reports_reset(&F.rep);
        int rc = eng_get(db, kb, kl, &b);
        cr_assert(rc == ENG_CORRUPTION || (rc == ENG_OK && tu_bytes_eq(b.data, b.len, kv->v, kv->vl)),
                  "round %d: hint 0x3 -> 0x%x on leaf %llu slot %u (key %d): get returned %s%s", round, 0x3 ^ m,
                  (unsigned long long)block, slot, keys[slot], eng_strerror(rc), rc == ENG_OK ? " with a WRONG value" : "");
        if (m == 0x6) /* "xmin aborted": the one that would hide the key */
            cr_assert(rc == ENG_CORRUPTION && has_kvp_report((int64_t)block, (int32_t)slot),
                      "round %d: an \"aborted\" hint on committed key %d was not reported (%s)", round, keys[slot],
                      eng_strerror(rc));
        /* A scan through the leaf never skips the key silently. */
        eng_iter *it = NULL;
        eng_iter_options io = { .lower = kb, .lower_len = kl };
        cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
        rc = eng_iter_first(it);
        if (rc == ENG_OK) {
            size_t ikl = 0;
            const void *ik = eng_iter_key(it, &ikl);
            cr_assert(ikl == kl && !memcmp(ik, kb, kl), "round %d: a scan from key %d skipped it (hint 0x%x)", round,
                      keys[slot], 0x3 ^ m);
        } else {
            cr_assert_eq(rc, ENG_CORRUPTION, "round %d: a scan from key %d returned %s", round, keys[slot],
                         eng_strerror(rc));
        }
        eng_iter_close(it);
        flip_undo(db, &f2);
        flip_undo(db, &f1);
        cr_assert_eq(eng_get(db, kb, kl, &b), ENG_OK);
        cr_assert(tu_bytes_eq(b.data, b.len, kv->v, kv->vl));
    }
    eng_buf_free(&b);
    tu_close(db);
    reopen_check(w, "reopen after hint flips");
}

/* ---- page code: header and slot array ------------------------------------------- */

KV_WIDTH_TEST(flipped_bit_in_slot_array_or_header_is_reported) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = { 0x736c6f74ull + (uint64_t)w };
    uint8_t page[PS];
    int keys[512];
    for (int round = 0; round < 16; round++) {
        /* every fourth round: the root (internal); else a leaf */
        int internal = round % 4 == 3;
        uint64_t block = internal ? 1 : random_leaf(&r);
        frame_copy(db, block, page);
        unsigned base = page_slot_base(page), n = ph_get_nslots(page);
        int in_header = internal || round % 2 == 0;
        unsigned slot = (unsigned)tu_below(&r, n);
        size_t off = in_header ? 16 + tu_below(&r, PAGE_HDR - 16) : base + 2u * slot + tu_below(&r, 2);
        int bit = (int)tu_below(&r, 8);
        /* a key whose lookup reads this page: under the root, any; on a
         * leaf whose header is hit, any of its keys; for a slot, its key
         * (a slot's offset seeds its entry's code: kvprot.h) */
        int probe;
        if (internal) {
            probe = (int)tu_below(&r, NKEYS);
        } else {
            leaf_keys(page, keys, 512);
            probe = keys[in_header ? tu_below(&r, n) : slot];
        }
        char what[200];
        snprintf(what, sizeof what, "[w=%d round %d] bit %d of byte %zu (%s) of %s %llu, probe key %d", w, round, bit,
                 off, in_header ? "header" : "slot array", internal ? "root" : "leaf", (unsigned long long)block,
                 probe);
        flip f = flip_bit(db, block, off, bit);
        /* the header is the page code's (entry -1); a slot, its entry's.  A
         * page's type and level are also checked by the descent as it
         * reaches the page, which may see such a flip first (layer
         * structure, the same block) */
        expect_get_reported_as(db, probe, (int64_t)block, in_header ? -1 : (int32_t)slot, in_header,
                               what);
        if (!internal) {
            /* a scan stops before the page's first key (from the map: the
             * flipped frame's slots may be nonsense) */
            size_t first = F.m.n;
            for (int i = 0; i < NKEYS; i++)
                if ((uint64_t)F.leaf_of[i] == block && model_pos(i) < first) first = model_pos(i);
            expect_scan_stops_as(db, 0, in_header ? first : model_pos(probe), (int64_t)block, in_header, what);
        }
        flip_undo(db, &f);
        expect_get_right(db, probe, what);
    }
    tu_close(db);
    reopen_check(w, "reopen after the header and slot flips");
}

/* ---- internal pages: separators and child pointers -------------------------------- */

KV_WIDTH_TEST(flipped_bit_in_internal_separator_or_child_is_caught_on_descent) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = { 0x696e74ull + (uint64_t)w };
    uint8_t page[PS];
    frame_copy(db, 1, page);
    cr_assert_eq(ph_get_type(page), PAGE_INTERNAL);
    cr_assert_eq(ph_get_level(page), 1, "the fixture is two levels high");
    unsigned n = ph_get_nslots(page);
    cr_assert_geq(n, 8);
    for (int round = 0; round < 16; round++) {
        unsigned slot = (unsigned)tu_below(&r, n);
        internal_cell c;
        page_internal_cell(page, slot, &c);
        /* the first model key routed to this entry's child: >= separator */
        int ex;
        size_t pos = tu_model_lb(&F.m, c.key, c.klen, &ex);
        cr_assert_lt(pos, F.m.n);
        int probe = key_index(F.m.a[pos].k, F.m.a[pos].kl);
        int child = round % 2;
        size_t cell = page_slot(page, slot);
        size_t off = child ? cell + 2 + tu_below(&r, 4) : (size_t)(c.key - page) + tu_below(&r, c.klen);
        int bit = (int)tu_below(&r, 8);
        char what[200];
        snprintf(what, sizeof what, "[w=%d round %d] bit %d of the %s of root entry %u (byte %zu), probe key %d", w,
                 round, bit, child ? "child pointer" : "separator", slot, off, probe);
        flip f = flip_bit(db, 1, off, bit);
        expect_get_reported(db, probe, 1, (int32_t)slot, what);
        expect_scan_stops(db, 0, pos, 1, what);
        flip_undo(db, &f);
        expect_get_right(db, probe, what);
    }
    tu_close(db);
    reopen_check(w, "reopen after the internal flips");
}

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
    tu_rng r = { 0x707574ull + (uint64_t)w };
    uint8_t page[PS], v[256];
    int keys[512];
    for (int round = 0; round < 4; round++) {
        tu_copy_dir(F.pristine, F.work);
        eng_db *db = open_warm(w);
        uint64_t block = random_leaf(&r);
        frame_copy(db, block, page);
        unsigned n = leaf_keys(page, keys, 512);
        unsigned vs = (unsigned)tu_below(&r, n), ts;
        do ts = (unsigned)tu_below(&r, n); while (ts + 1 >= vs && ts <= vs + 1); /* not a neighbour */
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
            eng_buf b = { 0 };
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
        eng_buf b = { 0 };
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
    static const char *n[] = { "value", "key", "xmin/xmax", "slot array", "header" };
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
    do slot = (unsigned)tu_below(r, n); while (keys[slot] == k && n > 2);
    cr_assert_neq(keys[slot], k);
    size_t off;
    *victim = -1;
    switch (d) {
    case D_VALUE: off = cell_byte(page, slot, R_VALUE, r); *victim = keys[slot]; break;
    case D_KEY: off = cell_byte(page, slot, R_KEY, r); *victim = keys[slot]; break;
    case D_IDS: off = cell_byte(page, slot, R_IDS, r); *victim = keys[slot]; break;
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
    tu_rng r = { 0x64697274ull + (uint64_t)w };
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
        eng_buf b = { 0 };
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
    tu_rng r = { 0x686f6c65ull };
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
    eng_buf b = { 0 };
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
    static const int ws[] = { 0, 4, 1, 8, 2, 0 };
    tu_rng r = { 0x7769647468ull };
    char rs[4096];
    for (size_t j = 0; j < sizeof ws / sizeof *ws; j++) {
        const int w = ws[j];
        char what[64];
        snprintf(what, sizeof what, "open %zu (w=%d)", j, w);
        tu_reports_reset(&F.rep);
        eng_db *db = kv_open(F.work, w, j % 2 ? 24 : BIG_CACHE); /* small caches evict and reload */
        eng_stats st;
        cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
        cr_assert_eq(st.block_protection_bytes_per_key, w, "%s: stats say w=%d", what, st.block_protection_bytes_per_key);
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
        if (w) cr_assert_gt(st.kv_checks, 0, "%s: no code was checked", what);
        else cr_assert_eq(st.kv_checks, 0, "%s: w=0 checked %llu codes", what, (unsigned long long)st.kv_checks);
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
    tu_rng r = { 0x776c6f6164ull };
    eng_snapshot *s;
    cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
    tu_model before = { 0 };
    for (size_t i = 0; i < F.m.n; i++) tu_model_put(&before, F.m.a[i].k, F.m.a[i].kl, F.m.a[i].v, F.m.a[i].vl);
    tu_check_gets(db, &F.m, "workload");
    write_some(db, &r, 100);
    tu_check_scan(db, &F.m, "workload");
    eng_buf b = { 0 };
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
    tu_model pristine = { 0 };
    for (size_t i = 0; i < F.m.n; i++) tu_model_put(&pristine, F.m.a[i].k, F.m.a[i].kl, F.m.a[i].v, F.m.a[i].vl);
    eng_stats s0, s4;
    workload(0, &s0);
    cr_assert_eq(s0.block_protection_bytes_per_key, 0);
    cr_assert_eq(s0.kv_checks, 0, "w=0 checked %llu codes", (unsigned long long)s0.kv_checks);
    cr_assert_eq(s0.kv_protection_bytes, 0, "w=0 holds %llu bytes of codes", (unsigned long long)s0.kv_protection_bytes);
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
    cr_assert_geq(st.kv_protection_pages, F.nleaves + F.ninternal + 1, "w=%d: %llu pages carry codes, the tree has %llu",
                  w, (unsigned long long)st.kv_protection_pages, (unsigned long long)(F.nleaves + F.ninternal));
    cr_assert_leq(st.kv_protection_pages, F.nblocks, "w=%d: %llu pages carry codes, the file has %llu blocks", w,
                  (unsigned long long)st.kv_protection_pages, (unsigned long long)F.nblocks);
    cr_assert_eq(st.kv_protection_keys, F.nentries, "w=%d: %llu entries covered, the tree has %llu", w,
                 (unsigned long long)st.kv_protection_keys, (unsigned long long)F.nentries);
    cr_assert_eq(st.kv_protection_bytes, KVP_BYTES(w, st.kv_protection_keys, st.kv_protection_pages),
                 "w=%d: %llu bytes for %llu keys on %llu pages", w, (unsigned long long)st.kv_protection_bytes,
                 (unsigned long long)st.kv_protection_keys, (unsigned long long)st.kv_protection_pages);
    /* the aim: at most w bytes per key plus 16 per cached page */
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
    tu_rng r = { 0x6d656dull };
    write_some(db, &r, 300);
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.kv_protection_bytes, KVP_BYTES(w, st.kv_protection_keys, st.kv_protection_pages),
                 "w=%d after writes: %llu bytes for %llu keys on %llu pages", w,
                 (unsigned long long)st.kv_protection_bytes, (unsigned long long)st.kv_protection_keys,
                 (unsigned long long)st.kv_protection_pages);
    tu_close(db);
}
