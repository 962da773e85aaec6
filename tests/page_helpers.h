/*
 * page_helpers.h -- what the test_page_*.c suites share (one file,
 * test_page.c, before the suite was split): guarded pages, page builders and
 * the structure-check helpers. All functions are static inline: a suite that
 * uses none of one compiles without a warning.  The suites' description:
 *
 * test_page_*.c -- the page format's checks and edits (engine/page.h, page.c).
 *
 * Proves:
 *   - the checksum catches every single-bit flip of a page and is bound to
 *     the block (P4): a page copied to another block fails;
 *   - the zero-page rule against the high-water mark (P5);
 *   - insert / remove / compact keep P1-P3 and the exact frag accounting
 *     (PS5 in page.c) through random operations checked against a model, at
 *     every page size;
 *   - page_check_structure rejects each kind of crafted damage and names it;
 *   - the version rules: versions of one key sit newest (largest xmin)
 *     first, hint nibbles hold a valid state and follow their slots through
 *     insert / remove / compact, commit-log pages hold no status 3, and the
 *     meta page's commit-log directory points inside the file;
 *   - random garbage never makes a decoder read outside the page (pages sit
 *     between PROT_NONE guard pages, and the suite also runs under ASan),
 *     and every accept/reject agrees with an independent reference checker.
 *
 * Every random test uses a fixed seed: a failure names its iteration.
 */
#ifndef TESTS_PAGE_HELPERS_H
#define TESTS_PAGE_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/rng.h"
#include "page.h"

#define GUARD  4096u
#define MAX_PS 16384u

static const size_t page_sizes[] = {4096, 8192, 16384};

/* ---- helpers -------------------------------------------------------------- */

/* A page of PS bytes between two PROT_NONE pages: any read past either end
 * faults, with or without a sanitizer. */
static inline uint8_t *guarded_page(size_t ps) {
    uint8_t *base = mmap(NULL, ps + 2 * GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(base, MAP_FAILED);
    cr_assert_eq(mprotect(base, GUARD, PROT_NONE), 0);
    cr_assert_eq(mprotect(base + GUARD + ps, GUARD, PROT_NONE), 0);
    return base + GUARD;
}

static inline void guarded_free(uint8_t *page, size_t ps) { munmap(page - GUARD, ps + 2 * GUARD); }

static uint64_t rng;
static inline uint64_t rnd(void) { return rng_next(&rng); } /* splitmix64 (common/rng.h) */
static inline unsigned below(unsigned n) { return (unsigned)rng_mod(&rng, n); }

/* Insert into a leaf in key order (one version, xmin 1); the test owns the
 * room check. */
static inline void put_leaf(uint8_t *p, size_t ps, const void *key, size_t klen, const void *val, uint32_t vlen,
                            int ovfl, uint32_t ovfl_block) {
    uint8_t cell[MAX_PS];
    int exact;
    size_t sz = leaf_cell_encode(cell, key, klen, vlen, val, ovfl, ovfl_block, 1, 0);
    unsigned idx = page_search(p, key, klen, &exact);
    cr_assert(!exact, "duplicate key in test setup");
    cr_assert(page_reclaimable(p) >= sz + 2, "test setup overfills the page");
    page_insert_cell(p, ps, idx, cell, sz);
}

/* Slot of version (KEY, XMIN) on a leaf: the first slot whose key is greater,
 * or equal with an xmin not greater (versions: newest first).  Written
 * without version_cmp so the tests do not lean on the code they check. */
static inline unsigned version_slot(const uint8_t *p, const void *key, size_t klen, uint64_t xmin, int *exact) {
    unsigned n = ph_get_nslots(p);
    for (unsigned i = 0; i < n; i++) {
        leaf_cell c;
        page_leaf_cell(p, i, &c);
        int k = key_cmp(c.key, c.klen, key, klen);
        if (k > 0 || (k == 0 && c.xmin <= xmin)) {
            *exact = k == 0 && c.xmin == xmin;
            return i;
        }
    }
    *exact = 0;
    return n;
}

/* Insert one version of KEY at its place among the others. */
static inline void put_version(uint8_t *p, size_t ps, const char *key, const char *val, uint64_t xmin, uint64_t xmax) {
    uint8_t cell[LEAF_CELL_HDR + ENG_MAX_KEY + 64];
    int exact;
    size_t sz = leaf_cell_encode(cell, key, strlen(key), (uint32_t)strlen(val), val, 0, 0, xmin, xmax);
    unsigned idx = version_slot(p, key, strlen(key), xmin, &exact);
    cr_assert(page_reclaimable(p) >= sz + 2, "test setup overfills the page");
    page_insert_cell(p, ps, idx, cell, sz);
}

static inline void put_internal(uint8_t *p, size_t ps, const char *key, uint32_t child) {
    uint8_t cell[INTERNAL_CELL_HDR + ENG_MAX_KEY];
    int exact;
    size_t sz = internal_cell_encode(cell, key, strlen(key), child);
    unsigned idx = page_search(p, key, strlen(key), &exact);
    cr_assert(!exact);
    page_insert_cell(p, ps, idx, cell, sz);
}

/* A leaf with five cells: short and long values, an empty value, and one
 * overflow cell. */
static inline void build_leaf(uint8_t *p, size_t ps, uint64_t block) {
    static const char big[300] = "abcdefghijklmnopqrstuvwxyz";
    page_init(p, ps, block, PAGE_LEAF, 0);
    put_leaf(p, ps, "delta", 5, "four", 4, 0, 0);
    put_leaf(p, ps, "alpha", 5, "one", 3, 0, 0);
    put_leaf(p, ps, "charlie", 7, big, sizeof big, 0, 0);
    put_leaf(p, ps, "bravo", 5, NULL, 0, 0, 0);
    put_leaf(p, ps, "echo", 4, NULL, 100000, 1, 77);
}

static inline void build_internal(uint8_t *p, size_t ps, uint64_t block) {
    page_init(p, ps, block, PAGE_INTERNAL, 1);
    ph_set_aux(p, 10);
    put_internal(p, ps, "m", 11);
    put_internal(p, ps, "g", 12);
    put_internal(p, ps, "t", 13);
}

static inline void build_meta(uint8_t *p, size_t ps) {
    meta_fields m = {.magic = META_MAGIC, .root = 1, .nblocks = 2, .freelist = 0, .height = 1};
    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
}

/* Local names: eng_layer_name lives in another module of the engine. */
static inline const char *layer_name(int layer) {
    static const char *const n[] = {"page_checksum", "zero_page",  "page_header",   "structure", "overflow",
                                    "control",       "wal_record", "kv_protection", "version",   "hint_status"};
    _Static_assert(sizeof n / sizeof n[0] == ENG_LAYER_COUNT, "a layer without a name");
    return layer >= 0 && layer < ENG_LAYER_COUNT ? n[layer] : "?";
}

static inline int check(const uint8_t *p, size_t ps, page_problem *pr) {
    memset(pr, 0, sizeof *pr);
    return page_check_structure(p, ps, pr);
}

/* Assert that P is rejected by layer LAYER (entry ENTRY unless -2) with a
 * detail containing WORD. */
static inline void expect_bad(const uint8_t *p, size_t ps, int layer, int entry, const char *word, const char *what) {
    page_problem pr;
    int rc = check(p, ps, &pr);
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: accepted", what);
    cr_assert_eq(pr.layer, layer, "%s: layer %s, detail \"%s\"", what, layer_name(pr.layer), pr.detail);
    if (entry != -2) cr_assert_eq(pr.entry, entry, "%s: entry %d, detail \"%s\"", what, pr.entry, pr.detail);
    cr_assert(memchr(pr.detail, 0, sizeof pr.detail) && pr.detail[0], "%s: empty detail", what);
    if (word) cr_assert(strstr(pr.detail, word), "%s: detail \"%s\" lacks \"%s\"", what, pr.detail, word);
}

/* ---- random entries (the edit model and the garbage pages) --------------- */

typedef struct mentry {
    uint8_t key[ENG_MAX_KEY];
    size_t klen;
    uint32_t vlen;       /* leaf */
    int ovfl;            /* leaf */
    uint32_t ref;        /* overflow block (leaf) or child (internal) */
    uint8_t vseed;       /* inline value bytes: vseed + 31 * i */
    uint64_t xmin, xmax; /* leaf */
    unsigned hint;       /* leaf: the slot's hint nibble */
} mentry;

static const unsigned hint_states[] = {HINT_NONE, HINT_XMIN_C, HINT_XMIN_A, HINT_XMAX_C, HINT_XMAX_A};

static inline uint8_t val_byte(const mentry *e, size_t i) { return (uint8_t)(e->vseed + 31 * i); }

static inline size_t mentry_size(const mentry *e, int leaf) {
    return leaf ? leaf_cell_size(e->klen, e->vlen, e->ovfl) : internal_cell_size(e->klen);
}

/* Keys from a small alphabet share prefixes and collide; some are binary,
 * a few are as long as the engine allows. */
static inline void random_key(mentry *e) {
    unsigned r = below(100);
    if (r < 70) {
        e->klen = 1 + below(8);
        for (size_t i = 0; i < e->klen; i++) e->key[i] = (uint8_t)("abc"[below(3)]);
    } else if (r < 97) {
        e->klen = 9 + below(32);
        for (size_t i = 0; i < e->klen; i++) e->key[i] = (uint8_t)rnd();
    } else {
        e->klen = 100 + below(ENG_MAX_KEY - 99);
        for (size_t i = 0; i < e->klen; i++) e->key[i] = (uint8_t)rnd();
    }
}

static inline void random_entry(mentry *e, size_t ps, int leaf) {
    random_key(e);
    e->ref = 1 + (uint32_t)below(1000000);
    e->vseed = (uint8_t)rnd();
    e->ovfl = 0;
    e->vlen = 0;
    e->xmin = e->xmax = 0;
    e->hint = HINT_NONE;
    if (!leaf) return;
    /* Few xmins, 0 (frozen) among them: versions of one key and repeats of
     * one (key, xmin) both happen often. */
    e->xmin = below(8);
    e->xmax = below(2) ? 0 : e->xmin + 1 + below(5);
    unsigned r = below(100);
    if (r < 40)
        e->vlen = below(17);
    else if (r < 80)
        e->vlen = 17 + below(184);
    else if (r < 95)
        e->vlen = 200 + below((unsigned)(ps / 4 - 200));
    else {
        e->ovfl = 1;
        e->vlen = (uint32_t)rnd();
    }
}

static inline size_t encode_entry(uint8_t *buf, const mentry *e, int leaf) {
    static uint8_t val[MAX_PS];
    if (!leaf) return internal_cell_encode(buf, e->key, e->klen, e->ref);
    if (!e->ovfl)
        for (size_t i = 0; i < e->vlen; i++) val[i] = val_byte(e, i);
    return leaf_cell_encode(buf, e->key, e->klen, e->vlen, e->ovfl ? NULL : val, e->ovfl, e->ref, e->xmin, e->xmax);
}

/* Set the 2-bit status of transaction X on commit-log page P. */
static inline void clog_set(uint8_t *p, size_t x, unsigned st) {
    uint8_t *b = p + PAGE_HDR + x / 4;
    *b = (uint8_t)((*b & ~(3u << (2 * (x % 4)))) | (st << (2 * (x % 4))));
}

#endif /* TESTS_PAGE_HELPERS_H */
