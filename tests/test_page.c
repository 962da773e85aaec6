/*
 * test_page.c -- the page format's checks and edits (engine/page.h, page.c).
 *
 * Proves:
 *   - the checksum catches every single-bit flip of a page and is bound to
 *     the block (P4): a page copied to another block fails;
 *   - the zero-page rule against the high-water mark (P5);
 *   - insert / remove / compact keep P1-P3 and the exact frag accounting
 *     (S5 in page.c) through random operations checked against a model, at
 *     every page size;
 *   - page_check_structure rejects each kind of crafted damage and names it;
 *   - random garbage never makes a decoder read outside the page (pages sit
 *     between PROT_NONE guard pages, and the suite also runs under ASan),
 *     and every accept/reject agrees with an independent reference checker.
 *
 * Every random test uses a fixed seed: a failure names its iteration.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "page.h"

#define GUARD 4096u
#define MAX_PS 16384u

static const size_t page_sizes[] = {4096, 8192, 16384};

/* ---- helpers -------------------------------------------------------------- */

/* A page of PS bytes between two PROT_NONE pages: any read past either end
 * faults, with or without a sanitizer. */
static uint8_t *guarded_page(size_t ps)
{
    uint8_t *base = mmap(NULL, ps + 2 * GUARD, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(base, MAP_FAILED);
    cr_assert_eq(mprotect(base, GUARD, PROT_NONE), 0);
    cr_assert_eq(mprotect(base + GUARD + ps, GUARD, PROT_NONE), 0);
    return base + GUARD;
}

static void guarded_free(uint8_t *page, size_t ps)
{
    munmap(page - GUARD, ps + 2 * GUARD);
}

static uint64_t rng;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static unsigned below(unsigned n) { return (unsigned)(rnd() % n); }

/* Insert into a leaf in key order; the test owns the room check. */
static void put_leaf(uint8_t *p, size_t ps, const void *key, size_t klen,
                     const void *val, uint32_t vlen, int ovfl, uint32_t ovfl_block)
{
    uint8_t cell[MAX_PS];
    int exact;
    size_t sz = leaf_cell_encode(cell, key, klen, vlen, val, ovfl, ovfl_block, 1, 0);
    unsigned idx = page_search(p, key, klen, &exact);
    cr_assert(!exact, "duplicate key in test setup");
    cr_assert(page_reclaimable(p) >= sz + 2, "test setup overfills the page");
    page_insert_cell(p, ps, idx, cell, sz);
}

static void put_internal(uint8_t *p, size_t ps, const char *key, uint32_t child)
{
    uint8_t cell[INTERNAL_CELL_HDR + ENG_MAX_KEY];
    int exact;
    size_t sz = internal_cell_encode(cell, key, strlen(key), child);
    unsigned idx = page_search(p, key, strlen(key), &exact);
    cr_assert(!exact);
    page_insert_cell(p, ps, idx, cell, sz);
}

/* A leaf with five cells: short and long values, an empty value, and one
 * overflow cell. */
static void build_leaf(uint8_t *p, size_t ps, uint64_t block)
{
    static const char big[300] = "abcdefghijklmnopqrstuvwxyz";
    page_init(p, ps, block, PAGE_LEAF, 0);
    put_leaf(p, ps, "delta", 5, "four", 4, 0, 0);
    put_leaf(p, ps, "alpha", 5, "one", 3, 0, 0);
    put_leaf(p, ps, "charlie", 7, big, sizeof big, 0, 0);
    put_leaf(p, ps, "bravo", 5, NULL, 0, 0, 0);
    put_leaf(p, ps, "echo", 4, NULL, 100000, 1, 77);
}

static void build_internal(uint8_t *p, size_t ps, uint64_t block)
{
    page_init(p, ps, block, PAGE_INTERNAL, 1);
    ph_set_aux(p, 10);
    put_internal(p, ps, "m", 11);
    put_internal(p, ps, "g", 12);
    put_internal(p, ps, "t", 13);
}

static void build_meta(uint8_t *p, size_t ps)
{
    meta_fields m = {.magic = META_MAGIC, .root = 1, .nblocks = 2, .freelist = 0, .height = 1};
    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
}

/* Local names: eng_layer_name lives in another module of the engine. */
static const char *layer_name(int layer)
{
    static const char *const n[] = {"page_checksum", "zero_page", "page_header", "structure",
                                    "overflow", "control", "wal_record", "kv_protection"};
    return layer >= 0 && layer < ENG_LAYER_COUNT ? n[layer] : "?";
}

static int check(const uint8_t *p, size_t ps, page_problem *pr)
{
    memset(pr, 0, sizeof *pr);
    return page_check_structure(p, ps, pr);
}

/* Assert that P is rejected by layer LAYER (entry ENTRY unless -2) with a
 * detail containing WORD. */
static void expect_bad(const uint8_t *p, size_t ps, int layer, int entry,
                       const char *word, const char *what)
{
    page_problem pr;
    int rc = check(p, ps, &pr);
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: accepted", what);
    cr_assert_eq(pr.layer, layer, "%s: layer %s, detail \"%s\"", what,
                 layer_name(pr.layer), pr.detail);
    if (entry != -2)
        cr_assert_eq(pr.entry, entry, "%s: entry %d, detail \"%s\"", what, pr.entry, pr.detail);
    cr_assert(memchr(pr.detail, 0, sizeof pr.detail) && pr.detail[0], "%s: empty detail", what);
    if (word)
        cr_assert(strstr(pr.detail, word), "%s: detail \"%s\" lacks \"%s\"", what, pr.detail, word);
}

/* ---- checksums (P4) ------------------------------------------------------- */

Test(page_checksum, every_single_bit_flip_is_detected)
{
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    page_problem pr;
    int z, misses = 0, first_miss = -1, same_hash = 0;

    build_leaf(p, ps, 7);
    page_set_checksum(p, ps, 7);
    const uint64_t good = page_checksum(p, ps, 7);
    cr_assert_eq(page_verify(p, ps, 7, 100, 1, &z, &pr), ENG_OK, "%s", pr.detail);

    for (unsigned bit = 0; bit < ps * 8; bit++) {
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int rc = page_verify(p, ps, 7, 100, 1, &z, &pr);
        if (rc != ENG_CORRUPTION || pr.layer != ENG_LAYER_PAGE_CHECKSUM) {
            misses++;
            if (first_miss < 0)
                first_miss = (int)bit;
        }
        /* Outside ph_checksum the computed value itself must move. */
        if (bit >= 64 && page_checksum(p, ps, 7) == good)
            same_hash++;
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    cr_assert_eq(misses, 0, "%d flips missed, first at bit %d", misses, first_miss);
    cr_assert_eq(same_hash, 0);
    cr_assert_eq(page_verify(p, ps, 7, 100, 1, &z, &pr), ENG_OK);
    guarded_free(p, ps);
}

Test(page_checksum, depends_on_block_and_is_never_zero)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        build_leaf(p, ps, 3);
        uint64_t prev = page_checksum(p, ps, 0);
        for (uint64_t b = 1; b < 2000; b++) {
            uint64_t h = page_checksum(p, ps, b);
            cr_assert_neq(h, 0);
            cr_assert_neq(h, prev, "blocks %llu and %llu hash alike", (unsigned long long)b - 1,
                          (unsigned long long)b);
            prev = h;
        }
        /* The stored field is excluded: setting it does not change the hash. */
        uint64_t before = page_checksum(p, ps, 3);
        page_set_checksum(p, ps, 3);
        cr_assert_eq(ph_get_checksum(p), before);
        cr_assert_eq(page_checksum(p, ps, 3), before);
        guarded_free(p, ps);
    }
}

Test(page_checksum, page_copied_to_another_block_fails)
{
    const size_t ps = 8192;
    uint8_t *p = guarded_page(ps);
    page_problem pr;
    int z;

    build_leaf(p, ps, 5);
    page_set_checksum(p, ps, 5);
    cr_assert_eq(page_verify(p, ps, 5, 10, 1, &z, &pr), ENG_OK, "%s", pr.detail);
    cr_assert_eq(z, 0);

    /* Same bytes read at block 6: the seed differs. */
    cr_assert_eq(page_verify(p, ps, 6, 10, 1, &z, &pr), ENG_CORRUPTION);
    cr_assert_eq(pr.layer, ENG_LAYER_PAGE_CHECKSUM);
    cr_assert_eq(pr.expected, ph_get_checksum(p));
    cr_assert_eq(pr.found, page_checksum(p, ps, 6));

    /* Even with ph_block forged to 6, the checksum was made for 5. */
    ph_set_block(p, 6);
    cr_assert_eq(page_verify(p, ps, 6, 10, 1, &z, &pr), ENG_CORRUPTION);
    cr_assert_eq(pr.layer, ENG_LAYER_PAGE_CHECKSUM);
    ph_set_block(p, 5);

    /* Checksums off: ph_block still catches the misdirected write. */
    cr_assert_eq(page_verify(p, ps, 6, 10, 0, &z, &pr), ENG_CORRUPTION);
    cr_assert_eq(pr.layer, ENG_LAYER_PAGE_HEADER);
    cr_assert_eq(pr.expected, 6);
    cr_assert_eq(pr.found, 5);
    cr_assert(strstr(pr.detail, "written for block 5"), "%s", pr.detail);
    cr_assert_eq(page_verify(p, ps, 5, 10, 0, &z, &pr), ENG_OK);

    /* Checksums on but the stored one unset (written with checksums off). */
    ph_set_checksum(p, 0);
    cr_assert_eq(page_verify(p, ps, 5, 10, 1, &z, &pr), ENG_CORRUPTION);
    cr_assert_eq(pr.layer, ENG_LAYER_PAGE_CHECKSUM);
    guarded_free(p, ps);
}

/* ---- zero pages (P5) ------------------------------------------------------ */

Test(page_verify, zero_page_against_high_water_mark)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps); /* mmap: all zero */
        page_problem pr;
        int z;

        cr_assert(page_is_zero(p, ps));
        for (int cs = 0; cs < 2; cs++) {
            z = -1;
            cr_assert_eq(page_verify(p, ps, 9, 10, cs, &z, &pr), ENG_CORRUPTION);
            cr_assert_eq(pr.layer, ENG_LAYER_ZERO_PAGE);
            cr_assert_eq(z, 0);
            cr_assert_eq(page_verify(p, ps, 0, 1, cs, &z, &pr), ENG_CORRUPTION);
            z = -1;
            cr_assert_eq(page_verify(p, ps, 10, 10, cs, &z, &pr), ENG_OK);
            cr_assert_eq(z, 1);
            z = -1;
            cr_assert_eq(page_verify(p, ps, 11, 10, cs, &z, &pr), ENG_OK);
            cr_assert_eq(z, 1);
        }
        /* One set bit anywhere, first or last byte included, is not zero. */
        for (size_t at = 0; at < ps; at += ps / 8 - 1) {
            p[at] = 0x10;
            cr_assert(!page_is_zero(p, ps), "byte %zu", at);
            int z2 = -1;
            cr_assert_eq(page_verify(p, ps, 20, 10, 0, &z2, &pr), ENG_CORRUPTION);
            cr_assert_eq(z2, 0);
            p[at] = 0;
        }
        p[ps - 1] = 1;
        cr_assert(!page_is_zero(p, ps));
        p[ps - 1] = 0;
        /* A zero page has no structure to check. */
        cr_assert_eq(check(p, ps, &pr), ENG_CORRUPTION);
        guarded_free(p, ps);
    }
}

Test(page_verify, null_outputs_are_allowed)
{
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    cr_assert_eq(page_verify(p, ps, 1, 5, 1, NULL, NULL), ENG_CORRUPTION);
    cr_assert_eq(page_verify(p, ps, 5, 5, 1, NULL, NULL), ENG_OK);
    cr_assert_eq(page_check_structure(p, ps, NULL), ENG_CORRUPTION);
    guarded_free(p, ps);
}

/* ---- encoders, decoders, meta --------------------------------------------- */

Test(page_cells, encode_decode_round_trip)
{
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    page_problem pr;
    leaf_cell c;
    size_t sz;

    build_leaf(p, ps, 1);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    cr_assert_eq(ph_get_nslots(p), 5);
    static const char *keys[] = {"alpha", "bravo", "charlie", "delta", "echo"};
    for (unsigned i = 0; i < 5; i++) {
        page_leaf_cell(p, i, &c);
        cr_assert_eq(c.klen, strlen(keys[i]));
        cr_assert_eq(memcmp(c.key, keys[i], c.klen), 0);
        const uint8_t *raw = page_cell_bytes(p, i, &sz);
        cr_assert_eq(sz, c.size);
        cr_assert_eq(raw + LEAF_CELL_HDR, c.key);
        int exact;
        cr_assert_eq(page_search(p, keys[i], strlen(keys[i]), &exact), i);
        cr_assert(exact);
    }
    page_leaf_cell(p, 0, &c);
    cr_assert_eq(c.vlen, 3);
    cr_assert_eq(memcmp(c.val, "one", 3), 0);
    cr_assert_eq(c.cflags, 0);
    page_leaf_cell(p, 1, &c);
    cr_assert_eq(c.vlen, 0);
    cr_assert_not_null(c.val);
    cr_assert_eq(c.size, LEAF_CELL_HDR + 5);
    page_leaf_cell(p, 4, &c);
    cr_assert_eq(c.cflags, CELL_OVERFLOW);
    cr_assert_eq(c.vlen, 100000);
    cr_assert_null(c.val);
    cr_assert_eq(c.ovfl, 77);
    cr_assert_eq(c.size, LEAF_CELL_HDR + 4 + 4);

    int exact = 1;
    cr_assert_eq(page_search(p, "a", 1, &exact), 0); /* shorter sorts first */
    cr_assert(!exact);
    cr_assert_eq(page_search(p, "alphaa", 6, &exact), 1);
    cr_assert(!exact);
    cr_assert_eq(page_search(p, "zz", 2, &exact), 5);
    cr_assert(!exact);
    cr_assert_eq(page_search(p, "bravo", 5, NULL), 1);

    build_internal(p, ps, 2);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    internal_cell ic;
    page_internal_cell(p, 0, &ic);
    cr_assert_eq(ic.klen, 1);
    cr_assert_eq(ic.key[0], 'g');
    cr_assert_eq(ic.child, 12);
    cr_assert_eq(ic.size, INTERNAL_CELL_HDR + 1);
    page_internal_cell(p, 2, &ic);
    cr_assert_eq(ic.child, 13);
    cr_assert_eq(page_search(p, "n", 1, &exact), 2);

    page_init(p, ps, 3, PAGE_OVERFLOW, 0);
    cr_assert_null(page_cell_bytes(p, 0, &sz));
    cr_assert_eq(sz, 0);
    guarded_free(p, ps);
}

Test(page_cells, meta_round_trip_and_type_names)
{
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    meta_fields m = {.magic = META_MAGIC, .root = 3, .nblocks = 9, .freelist = 8, .height = 2}, r;
    page_problem pr;

    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
    meta_read(p, &r);
    cr_assert(m.magic == r.magic && m.root == r.root && m.nblocks == r.nblocks &&
              m.freelist == r.freelist && m.height == r.height && m.clog_pages == r.clog_pages);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    cr_assert_eq(rd64(p + PAGE_HDR), META_MAGIC);

    cr_assert_str_eq(page_type_name(PAGE_ZERO), "zero");
    cr_assert_str_eq(page_type_name(PAGE_META), "meta");
    cr_assert_str_eq(page_type_name(PAGE_LEAF), "leaf");
    cr_assert_str_eq(page_type_name(PAGE_INTERNAL), "internal");
    cr_assert_str_eq(page_type_name(PAGE_OVERFLOW), "overflow");
    cr_assert_str_eq(page_type_name(PAGE_FREE), "free");
    cr_assert_str_eq(page_type_name(6), "unknown");
    cr_assert_str_eq(page_type_name(-1), "unknown");
    guarded_free(p, ps);
}

Test(page_cells, init_lays_out_an_empty_page)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;
        memset(p, 0xee, ps);
        page_init(p, ps, 42, PAGE_LEAF, 0);
        cr_assert_eq(ph_get_block(p), 42);
        /* A leaf's slots start after its hint area, inside sector 0. */
        cr_assert_eq(ph_get_lower(p), LEAF_SLOT_BASE(ps));
        cr_assert_leq(LEAF_SLOT_BASE(ps), 512u);
        cr_assert_eq(ph_get_upper(p), ps);
        cr_assert_eq(ph_get_nslots(p), 0);
        cr_assert_eq(ph_get_frag(p), 0);
        cr_assert_eq(page_free(p), ps - PAGE_HDR);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        for (size_t i = PAGE_HDR; i < ps; i++)
            cr_assert_eq(p[i], 0);
        /* A cell may end exactly at the end of a 16 KiB page (upper = 16384). */
        put_leaf(p, ps, "k", 1, "v", 1, 0, 0);
        cr_assert_eq(ph_get_upper(p), ps - (LEAF_CELL_HDR + 2));
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        guarded_free(p, ps);
    }
}

/* ---- random edits against a model ----------------------------------------- */

typedef struct mentry {
    uint8_t key[ENG_MAX_KEY];
    size_t klen;
    uint32_t vlen;  /* leaf */
    int ovfl;       /* leaf */
    uint32_t ref;   /* overflow block (leaf) or child (internal) */
    uint8_t vseed;  /* inline value bytes: vseed + 31 * i */
} mentry;

static uint8_t val_byte(const mentry *e, size_t i) { return (uint8_t)(e->vseed + 31 * i); }

static size_t mentry_size(const mentry *e, int leaf)
{
    return leaf ? leaf_cell_size(e->klen, e->vlen, e->ovfl) : internal_cell_size(e->klen);
}

/* Keys from a small alphabet share prefixes and collide; some are binary,
 * a few are as long as the engine allows. */
static void random_key(mentry *e)
{
    unsigned r = below(100);
    if (r < 70) {
        e->klen = 1 + below(8);
        for (size_t i = 0; i < e->klen; i++)
            e->key[i] = (uint8_t)("abc"[below(3)]);
    } else if (r < 97) {
        e->klen = 9 + below(32);
        for (size_t i = 0; i < e->klen; i++)
            e->key[i] = (uint8_t)rnd();
    } else {
        e->klen = 100 + below(ENG_MAX_KEY - 99);
        for (size_t i = 0; i < e->klen; i++)
            e->key[i] = (uint8_t)rnd();
    }
}

static void random_entry(mentry *e, size_t ps, int leaf)
{
    random_key(e);
    e->ref = 1 + (uint32_t)below(1000000);
    e->vseed = (uint8_t)rnd();
    e->ovfl = 0;
    e->vlen = 0;
    if (!leaf)
        return;
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

static size_t encode_entry(uint8_t *buf, const mentry *e, int leaf)
{
    static uint8_t val[MAX_PS];
    if (!leaf)
        return internal_cell_encode(buf, e->key, e->klen, e->ref);
    if (!e->ovfl)
        for (size_t i = 0; i < e->vlen; i++)
            val[i] = val_byte(e, i);
    return leaf_cell_encode(buf, e->key, e->klen, e->vlen, e->ovfl ? NULL : val, e->ovfl, e->ref, 1, 0);
}

/* Model position of KEY: first entry >= it, *exact if equal. */
static unsigned model_search(const mentry *m, unsigned n, const mentry *e, int *exact)
{
    for (unsigned i = 0; i < n; i++) {
        int c = key_cmp(m[i].key, m[i].klen, e->key, e->klen);
        if (c >= 0) {
            *exact = c == 0;
            return i;
        }
    }
    *exact = 0;
    return n;
}

/* Everything the model knows must be on the page, in order. */
static void compare_with_model(const uint8_t *p, size_t ps, int leaf, const mentry *m,
                               unsigned n, unsigned op)
{
    page_problem pr;
    size_t live = 0;
    int rc = check(p, ps, &pr);
    cr_assert_eq(rc, ENG_OK, "op %u: %s", op, pr.detail);
    cr_assert_eq(ph_get_nslots(p), n, "op %u", op);
    for (unsigned i = 0; i < n; i++) {
        const mentry *e = &m[i];
        live += mentry_size(e, leaf);
        if (leaf) {
            leaf_cell c;
            page_leaf_cell(p, i, &c);
            cr_assert_eq(c.klen, e->klen, "op %u slot %u", op, i);
            cr_assert_eq(memcmp(c.key, e->key, e->klen), 0, "op %u slot %u", op, i);
            cr_assert_eq(c.vlen, e->vlen, "op %u slot %u", op, i);
            cr_assert_eq(c.size, mentry_size(e, 1));
            if (e->ovfl) {
                cr_assert_eq(c.cflags, CELL_OVERFLOW);
                cr_assert_eq(c.ovfl, e->ref);
            } else {
                cr_assert_eq(c.cflags, 0);
                for (size_t j = 0; j < e->vlen; j++)
                    if (c.val[j] != val_byte(e, j))
                        cr_assert_fail("op %u slot %u: value byte %zu", op, i, j);
            }
        } else {
            internal_cell c;
            page_internal_cell(p, i, &c);
            cr_assert_eq(c.klen, e->klen, "op %u slot %u", op, i);
            cr_assert_eq(memcmp(c.key, e->key, e->klen), 0);
            cr_assert_eq(c.child, e->ref);
        }
    }
    /* S5: the accounting is exact, so reclaimable is the truth. */
    cr_assert_eq(page_reclaimable(p), ps - page_slot_base(p) - 2 * (size_t)n - live, "op %u", op);
}

static void run_model(size_t ps, int leaf, uint64_t seed, unsigned ops)
{
    uint8_t *p = guarded_page(ps);
    static uint8_t cell[MAX_PS];
    mentry *m = calloc(ps / 8, sizeof *m), e; /* cells are >= 8 bytes */
    unsigned n = 0, full_hits = 0, compactions_in_insert = 0, max_n = 0;
    int filling = 1;
    page_problem pr;

    cr_assert_not_null(m);
    rng = seed;
    page_init(p, ps, 9, leaf ? PAGE_LEAF : PAGE_INTERNAL, leaf ? 0 : 2);
    if (!leaf)
        ph_set_aux(p, 4);

    for (unsigned op = 0; op < ops; op++) {
        unsigned r = below(100);
        if (r < 3) {
            page_compact(p, ps);
            cr_assert_eq(ph_get_frag(p), 0);
            for (size_t i = ph_get_lower(p); i < ph_get_upper(p); i++)
                cr_assert_eq(p[i], 0, "op %u: free space not zeroed after compact", op);
        } else if (n > 0 && r < (filling ? 25u : 80u)) {
            unsigned idx = below(n);
            size_t before = ph_get_frag(p);
            page_remove_cell(p, idx);
            cr_assert_eq(ph_get_frag(p), before + mentry_size(&m[idx], leaf));
            memmove(&m[idx], &m[idx + 1], (n - idx - 1) * sizeof *m);
            n--;
            if (n <= 2)
                filling = 1;
        } else {
            int exact, pexact;
            random_entry(&e, ps, leaf);
            unsigned idx = model_search(m, n, &e, &exact);
            unsigned pidx = page_search(p, e.key, e.klen, &pexact);
            cr_assert_eq(pidx, idx, "op %u: page_search %u, model %u", op, pidx, idx);
            cr_assert_eq(pexact, exact, "op %u", op);
            size_t sz = encode_entry(cell, &e, leaf);
            cr_assert_eq(sz, mentry_size(&e, leaf));
            size_t room = page_reclaimable(p) + (exact ? mentry_size(&m[idx], leaf) + 2 : 0);
            if (room < sz + 2) {
                if (++full_hits % 4 == 0)
                    filling = 0;
                continue;
            }
            if (exact) { /* update: remove the old version first */
                page_remove_cell(p, idx);
                memmove(&m[idx], &m[idx + 1], (n - idx - 1) * sizeof *m);
                n--;
            }
            int compacts = page_free(p) < sz + 2;
            page_insert_cell(p, ps, idx, cell, sz);
            if (compacts) {
                compactions_in_insert++;
                cr_assert_eq(ph_get_frag(p), 0, "op %u", op);
            }
            memmove(&m[idx + 1], &m[idx], (n - idx) * sizeof *m);
            m[idx] = e;
            n++;
            if (n > max_n)
                max_n = n;
        }
        compare_with_model(p, ps, leaf, m, n, op);
        if (op % 64 == 0) {
            for (unsigned i = 0; i < n; i++) {
                int exact;
                cr_assert_eq(page_search(p, m[i].key, m[i].klen, &exact), i);
                cr_assert(exact);
            }
            page_set_checksum(p, ps, 9);
            int z;
            cr_assert_eq(page_verify(p, ps, 9, 10, 1, &z, &pr), ENG_OK, "op %u: %s", op, pr.detail);
        }
    }
    cr_assert_gt(compactions_in_insert, 0, "the run never compacted inside an insert");
    cr_assert_gt(full_hits, 0, "the run never filled the page");
    cr_assert_gt(max_n, 10);
    free(m);
    guarded_free(p, ps);
}

Test(page_edits, random_ops_leaf_4k) { run_model(4096, 1, 1, 20000); }
Test(page_edits, random_ops_leaf_8k) { run_model(8192, 1, 2, 20000); }
Test(page_edits, random_ops_leaf_16k) { run_model(16384, 1, 3, 20000); }
Test(page_edits, random_ops_internal_4k) { run_model(4096, 0, 4, 20000); }
Test(page_edits, random_ops_internal_8k) { run_model(8192, 0, 5, 20000); }
Test(page_edits, random_ops_internal_16k) { run_model(16384, 0, 6, 20000); }

/* ---- crafted damage --------------------------------------------------------- */

/* build_leaf's slots: 0 alpha, 1 bravo, 2 charlie, 3 delta, 4 echo (overflow). */
#define SLOT(i) (PAGE_HDR + 2 * (i))

static uint8_t *fresh_leaf(size_t ps)
{
    uint8_t *p = guarded_page(ps);
    page_problem pr;
    build_leaf(p, ps, 1);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    return p;
}

Test(page_structure, rejects_bad_slots_and_cells)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p;
        unsigned off;

        p = fresh_leaf(ps);
        wr16(p + SLOT(2), (uint16_t)(ph_get_upper(p) - 1));
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 2, "outside", "slot below upper");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + SLOT(0), (uint16_t)(ps - 3));
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 0, "outside", "cell header past the end");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + SLOT(4), (uint16_t)(ps - LEAF_CELL_HDR)); /* header just fits */
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 4, NULL, "slot into the last cell's tail");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + SLOT(4), 0xffff);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 4, "outside", "slot 0xffff");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + page_slot(p, 1), 0);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "key length", "klen 0");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + page_slot(p, 1), ENG_MAX_KEY + 1);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "key length", "klen 1025");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + page_slot(p, 3), 10); /* delta's cell is 16 bytes, last in the page */
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 3, "past the page end", "klen past the end");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr32(p + page_slot(p, 0) + 3, 0xffffffffu);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 0, "past the page end", "vlen 2^32-1");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr32(p + page_slot(p, 3) + 3, 0xfffffff0u); /* would wrap a 32-bit sum */
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 3, "past the page end", "vlen near 2^32");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        p[page_slot(p, 1) + 2] = 0x02;
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "flags", "unknown cflags");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        off = page_slot(p, 4);
        wr32(p + off + LEAF_CELL_HDR + 4, 0);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 4, "block 0", "overflow pointer 0");
        guarded_free(p, ps);

        /* Overflow flag set on an inline cell: size changes, accounting breaks. */
        p = fresh_leaf(ps);
        p[page_slot(p, 2) + 2] = CELL_OVERFLOW;
        expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "ph_frag", "overflow flag on inline cell");
        guarded_free(p, ps);
    }
}

Test(page_structure, rejects_overlap_and_order)
{
    const size_t ps = 4096;
    uint8_t *p;
    unsigned off;

    p = fresh_leaf(ps);
    wr16(p + SLOT(1), page_slot(p, 0));
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "overlaps", "two slots, one cell");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    off = page_slot(p, 2); /* charlie runs right up to alpha */
    cr_assert_eq(off + leaf_cell_size(7, 300, 0), page_slot(p, 0));
    wr32(p + off + 3, 301);
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 2, "overlaps", "cell grown into its neighbour");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    {
        uint16_t a = page_slot(p, 1), b = page_slot(p, 3);
        wr16(p + SLOT(1), b);
        wr16(p + SLOT(3), a);
    }
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 2, "P3", "swapped slots");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    memcpy(p + page_slot(p, 1) + LEAF_CELL_HDR, "alpha", 5);
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "P3", "equal keys");
    guarded_free(p, ps);

    /* "alph" < "alpha": shorter first, so "alphaa" -> "alph" at slot 1 is out of order. */
    p = guarded_page(ps);
    page_init(p, ps, 1, PAGE_LEAF, 0);
    put_leaf(p, ps, "alph", 4, "x", 1, 0, 0);
    put_leaf(p, ps, "alpha", 5, "y", 1, 0, 0);
    {
        page_problem pr;
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        uint16_t a = page_slot(p, 0), b = page_slot(p, 1);
        wr16(p + SLOT(0), b);
        wr16(p + SLOT(1), a);
    }
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "P3", "longer key before its prefix");
    guarded_free(p, ps);
}

Test(page_structure, rejects_bad_header_fields)
{
    const size_t ps = 8192;
    uint8_t *p;

    static const uint8_t bad_types[] = {6, 7, 0x80, 0xff};
    for (unsigned i = 0; i < sizeof bad_types; i++) {
        p = fresh_leaf(ps);
        ph_set_type(p, bad_types[i]);
        expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "unknown page type", "type out of range");
        guarded_free(p, ps);
    }
    p = fresh_leaf(ps);
    ph_set_type(p, PAGE_ZERO);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "type 0", "type 0 with bytes");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_upper(p, (uint16_t)(ps + 1));
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "upper past the end");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_nslots(p, 0);
    ph_set_lower(p, PAGE_HDR - 2);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "lower inside the header");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_lower(p, (uint16_t)(ph_get_upper(p) + 2));
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "lower above upper");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_nslots(p, 4);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "nslots disagrees with lower");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_nslots(p, 0xffff);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "nslots 65535");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_level(p, 1);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "level", "leaf at level 1");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    ph_set_frag(p, (uint16_t)(ph_get_frag(p) + 1));
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "ph_frag", "frag too big");
    guarded_free(p, ps);

    p = fresh_leaf(ps);
    page_remove_cell(p, 2);
    page_problem pr;
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    ph_set_frag(p, 0);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "ph_frag", "dead bytes not counted");
    guarded_free(p, ps);

    p = guarded_page(ps);
    build_internal(p, ps, 2);
    ph_set_level(p, 0);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "level", "internal at level 0");
    build_internal(p, ps, 2);
    ph_set_aux(p, 0);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "leftmost", "internal without leftmost child");
    build_internal(p, ps, 2);
    wr32(p + page_slot(p, 1) + 2, 0);
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "child block 0", "internal child 0");
    build_internal(p, ps, 2);
    wr16(p + page_slot(p, 2), 0);
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 2, "key length", "internal klen 0");
    build_internal(p, ps, 2);
    wr16(p + page_slot(p, 1), 2); /* "m", inserted first, ends the page */
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "past the page end", "internal cell past the end");
    guarded_free(p, ps);
}

Test(page_structure, rejects_bad_meta_overflow_free)
{
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    meta_fields m;
    page_problem pr;

    build_meta(p, ps);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

#define META_CASE(field, value, layer, word)                                             \
    do {                                                                                 \
        build_meta(p, ps);                                                               \
        meta_read(p, &m);                                                                \
        m.field = value;                                                                 \
        meta_write(p, &m);                                                               \
        expect_bad(p, ps, layer, -1, word, "meta " #field " = " #value);                 \
    } while (0)
    META_CASE(magic, META_MAGIC ^ 1, ENG_LAYER_PAGE_HEADER, "magic");
    META_CASE(root, 0, ENG_LAYER_STRUCTURE, "root");
    META_CASE(root, 2, ENG_LAYER_STRUCTURE, "root"); /* nblocks is 2 */
    META_CASE(nblocks, 1, ENG_LAYER_STRUCTURE, "nblocks");
    META_CASE(nblocks, 0, ENG_LAYER_STRUCTURE, "nblocks");
    META_CASE(freelist, 2, ENG_LAYER_STRUCTURE, "freelist");
    META_CASE(height, 0, ENG_LAYER_STRUCTURE, "height");
#undef META_CASE

    build_meta(p, ps);
    ph_set_nslots(p, 1);
    ph_set_lower(p, PAGE_HDR + 2);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "slots", "meta page with a slot");

    page_init(p, ps, 3, PAGE_OVERFLOW, 0);
    ph_set_aux(p, ps - PAGE_HDR);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    ph_set_aux(p, ps - PAGE_HDR + 1);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "payload", "overflow payload too big");
    ph_set_aux(p, 0xffffffffu);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "payload", "overflow payload 2^32-1");
    ph_set_aux(p, 10);
    ph_set_nslots(p, 1);
    ph_set_lower(p, PAGE_HDR + 2);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "slots", "overflow page with a slot");

    page_init(p, ps, 3, PAGE_FREE, 0);
    ph_set_next(p, 9);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    ph_set_nslots(p, 2);
    ph_set_lower(p, PAGE_HDR + 4);
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "slots", "free page with slots");
    guarded_free(p, ps);
}

Test(page_verify, checks_run_in_the_documented_order)
{
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    page_problem pr;
    int z;

    /* Bad checksum, wrong block and bad structure: the checksum speaks first. */
    build_leaf(p, ps, 4);
    page_set_checksum(p, ps, 4);
    ph_set_block(p, 8);
    ph_set_type(p, 77);
    cr_assert_eq(page_verify(p, ps, 4, 10, 1, &z, &pr), ENG_CORRUPTION);
    cr_assert_eq(pr.layer, ENG_LAYER_PAGE_CHECKSUM);
    /* Without checksums, the block number comes next. */
    cr_assert_eq(page_verify(p, ps, 4, 10, 0, &z, &pr), ENG_CORRUPTION);
    cr_assert_eq(pr.layer, ENG_LAYER_PAGE_HEADER);
    cr_assert_eq(pr.offset, 16);
    /* Then structure. */
    ph_set_block(p, 4);
    cr_assert_eq(page_verify(p, ps, 4, 10, 0, &z, &pr), ENG_CORRUPTION);
    cr_assert(strstr(pr.detail, "unknown page type"), "%s", pr.detail);
    /* A valid checksum does not excuse bad structure. */
    page_set_checksum(p, ps, 4);
    cr_assert_eq(page_verify(p, ps, 4, 10, 1, &z, &pr), ENG_CORRUPTION);
    cr_assert(strstr(pr.detail, "unknown page type"), "%s", pr.detail);
    guarded_free(p, ps);
}

/* ---- garbage ---------------------------------------------------------------- */

/* The rules of page.h and page.c written a second way (byte ownership map,
 * hand-rolled key order) so that the two must agree on every page. */
static int ref_key_less(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    for (size_t i = 0; i < al && i < bl; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return al < bl;
}

static int ref_valid(const uint8_t *p, size_t ps)
{
    static uint8_t owner[MAX_PS];
    unsigned type = p[20], n = rd16(p + 22), lower = rd16(p + 24), upper = rd16(p + 26);
    unsigned frag = rd16(p + 28), level = rd16(p + 30);
    uint32_t aux = rd32(p + 36);

    if (type < PAGE_META || type > PAGE_FREE)
        return 0;
    if (lower < 40 || lower > upper || upper > ps || lower != 40 + 2 * n)
        return 0;
    if (type != PAGE_LEAF && type != PAGE_INTERNAL) {
        if (n != 0)
            return 0;
        if (type == PAGE_OVERFLOW)
            return aux <= ps - 40;
        if (type == PAGE_FREE) /* a free-list trunk: aux entries of 4 bytes */
            return aux <= (ps - 40) / 4;
        if (type == PAGE_META) {
            uint32_t root = rd32(p + 48), nb = rd32(p + 52), fl = rd32(p + 56), h = rd32(p + 60);
            return rd64(p + 40) == META_MAGIC && nb >= 2 && root >= 1 && root < nb && fl < nb &&
                   h >= 1;
        }
        return 1;
    }
    int leaf = type == PAGE_LEAF;
    if (leaf ? level != 0 : (level == 0 || aux == 0))
        return 0;
    memset(owner, 0, ps);
    size_t live = 0;
    const uint8_t *pk = NULL;
    size_t pkl = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t off = rd16(p + 40 + 2 * i), hdr = leaf ? 7 : 6;
        if (off < upper || off + hdr > ps)
            return 0;
        size_t kl = rd16(p + off);
        if (kl < 1 || kl > 1024)
            return 0;
        uint64_t sz;
        if (leaf) {
            uint8_t fl = p[off + 2];
            if (fl > 1)
                return 0;
            sz = 7 + kl + (fl ? 4 : (uint64_t)rd32(p + off + 3));
            if (off + sz > ps)
                return 0;
            if (fl && rd32(p + off + 7 + kl) == 0)
                return 0;
        } else {
            sz = 6 + kl;
            if (off + sz > ps || rd32(p + off + 2) == 0)
                return 0;
        }
        for (size_t b = off; b < off + sz; b++) {
            if (owner[b])
                return 0;
            owner[b] = 1;
        }
        live += sz;
        if (pk && !ref_key_less(pk, pkl, p + off + hdr, kl))
            return 0;
        pk = p + off + hdr;
        pkl = kl;
    }
    return frag == ps - upper - live;
}

/* A random valid leaf or internal page, filled by random edits. */
static void random_valid_page(uint8_t *p, size_t ps, int leaf, uint32_t block)
{
    static uint8_t cell[MAX_PS];
    static mentry e;
    page_init(p, ps, block, leaf ? PAGE_LEAF : PAGE_INTERNAL, leaf ? 0 : 1 + (int)below(3));
    if (!leaf)
        ph_set_aux(p, 1 + (uint32_t)below(100));
    unsigned target = below(60), misses = 0;
    while (ph_get_nslots(p) < target && misses < 8) {
        int exact;
        random_entry(&e, ps, leaf);
        size_t sz = encode_entry(cell, &e, leaf);
        unsigned idx = page_search(p, e.key, e.klen, &exact);
        if (exact || page_reclaimable(p) < sz + 2) {
            misses++;
            continue;
        }
        page_insert_cell(p, ps, idx, cell, sz);
        if (below(4) == 0)
            page_remove_cell(p, below(ph_get_nslots(p)));
    }
}

static void random_other_page(uint8_t *p, size_t ps, uint32_t block)
{
    unsigned t = below(3);
    if (t == 0) {
        build_meta(p, ps);
    } else if (t == 1) {
        page_init(p, ps, block, PAGE_OVERFLOW, 0);
        ph_set_aux(p, below((unsigned)(ps - PAGE_HDR + 1)));
        for (unsigned i = 0; i < ph_get_aux(p); i++)
            p[PAGE_HDR + i] = (uint8_t)rnd();
    } else {
        page_init(p, ps, block, PAGE_FREE, 0);
        ph_set_next(p, (uint32_t)rnd());
    }
}

/* Everything a caller may do with a page that passed the check must stay
 * inside it, and edits must keep it valid. */
static void exercise_accepted(uint8_t *p, size_t ps, unsigned iter)
{
    page_problem pr;
    unsigned type = ph_get_type(p), n = ph_get_nslots(p);
    static uint8_t cell[MAX_PS];
    if (type != PAGE_LEAF && type != PAGE_INTERNAL)
        return;
    for (unsigned i = 0; i < n; i++) {
        size_t sz;
        const uint8_t *c = page_cell_bytes(p, i, &sz);
        cr_assert(c >= p + ph_get_upper(p) && c + sz <= p + ps, "iter %u slot %u", iter, i);
        if (type == PAGE_LEAF) {
            leaf_cell lc;
            page_leaf_cell(p, i, &lc);
            cr_assert_eq(lc.size, sz);
            cr_assert(lc.key + lc.klen <= p + ps);
            if (lc.val)
                cr_assert(lc.val + lc.vlen <= p + ps);
        } else {
            internal_cell ic;
            page_internal_cell(p, i, &ic);
            cr_assert_eq(ic.size, sz);
        }
        int exact;
        const uint8_t *key = c + (type == PAGE_LEAF ? LEAF_CELL_HDR : INTERNAL_CELL_HDR);
        cr_assert_eq(page_search(p, key, rd16(c), &exact), i, "iter %u", iter);
        cr_assert(exact);
    }
    if (n > 0) {
        page_remove_cell(p, below(n));
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after remove: %s", iter, pr.detail);
    }
    if (ph_get_nslots(p) > 0 && page_reclaimable(p) >= 2) {
        /* Re-insert a copy of an existing cell under a fresh largest key. */
        size_t sz;
        unsigned last = ph_get_nslots(p) - 1;
        const uint8_t *src = page_cell_bytes(p, last, &sz);
        memcpy(cell, src, sz);
        size_t hdr = type == PAGE_LEAF ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
        size_t klen = rd16(cell);
        if (klen < ENG_MAX_KEY && page_reclaimable(p) >= sz + 3) {
            memmove(cell + hdr + klen + 1, cell + hdr + klen, sz - hdr - klen);
            cell[hdr + klen] = 0; /* key + "\0" sorts right after key */
            wr16(cell, (uint16_t)(klen + 1));
            page_insert_cell(p, ps, last + 1, cell, sz + 1);
            cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after insert: %s", iter, pr.detail);
        }
    }
    page_compact(p, ps);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after compact: %s", iter, pr.detail);
}

Test(page_structure, random_garbage_never_crashes_and_agrees_with_reference)
{
    unsigned accepted[5] = {0}, rejected[5] = {0};
    rng = 12345;
    for (unsigned iter = 0; iter < 10000; iter++) {
        const size_t ps = page_sizes[below(3)];
        uint8_t *p = guarded_page(ps);
        const uint32_t block = 1 + (uint32_t)below(1000);
        const unsigned kind = below(5);
        unsigned nmut, hot;

        switch (kind) {
        case 0: /* noise */
            for (size_t i = 0; i < ps; i++)
                p[i] = (uint8_t)rnd();
            break;
        case 1: /* noise under a plausible header */
            for (size_t i = 0; i < ps; i++)
                p[i] = (uint8_t)rnd();
            {
                unsigned n = below(40);
                ph_set_type(p, (uint8_t)(1 + below(6)));
                ph_set_nslots(p, (uint16_t)n);
                ph_set_lower(p, (uint16_t)(PAGE_HDR + 2 * n));
                ph_set_upper(p, (uint16_t)(PAGE_HDR + 2 * n + below((unsigned)(ps - PAGE_HDR - 2 * n + 1))));
                ph_set_level(p, (uint16_t)below(2));
                for (unsigned i = 0; i < n; i++)
                    wr16(p + SLOT(i), (uint16_t)(ph_get_upper(p) + below((unsigned)(ps - ph_get_upper(p) + 8))));
            }
            break;
        case 2: /* a valid slotted page with a few bytes changed */
        case 3: /* a valid slotted page with a few bits flipped */
            random_valid_page(p, ps, below(2), block);
            nmut = 1 + below(3);
            hot = ph_get_lower(p) + 8u; /* header and slots: before any mutation */
            for (unsigned k = 0; k < nmut; k++) {
                size_t at = below(2) ? below(hot) : below((unsigned)ps);
                if (kind == 2)
                    p[at] = (uint8_t)rnd();
                else
                    p[at] ^= (uint8_t)(1u << below(8));
            }
            break;
        default: /* meta / overflow / free with a changed byte in the first 64 */
            random_other_page(p, ps, block);
            if (below(4))
                p[below(64)] = (uint8_t)rnd();
            break;
        }

        page_problem a, b;
        int rc = check(p, ps, &a);
        int rc2 = check(p, ps, &b);
        int ref = ref_valid(p, ps);
        cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION, "iter %u: rc %d", iter, rc);
        cr_assert_eq(rc == ENG_OK, ref, "iter %u kind %u: page.c says %s (%s), reference %s",
                     iter, kind, rc == ENG_OK ? "valid" : "corrupt", a.detail,
                     ref ? "valid" : "corrupt");
        cr_assert_eq(rc, rc2);
        if (rc != ENG_OK) {
            cr_assert(a.layer == b.layer && a.entry == b.entry && a.offset == b.offset &&
                      a.expected == b.expected && a.found == b.found &&
                      strcmp(a.detail, b.detail) == 0, "iter %u: two answers", iter);
            cr_assert(a.layer >= 0 && a.layer < ENG_LAYER_COUNT);
            cr_assert(a.offset >= -1 && a.offset < (int64_t)ps, "iter %u: offset %lld", iter,
                      (long long)a.offset);
            cr_assert(a.entry >= -1 && a.entry < (int32_t)ph_get_nslots(p));
            cr_assert(a.detail[0] && memchr(a.detail, 0, sizeof a.detail));
        }

        /* page_verify: with checksums off and the right block, it is the
         * structure check; with a fresh checksum too. */
        int z;
        uint32_t wb = ph_get_block(p);
        if (!page_is_zero(p, ps)) {
            cr_assert_eq(page_verify(p, ps, wb, 0, 0, &z, &b), rc, "iter %u", iter);
            int rcv = page_verify(p, ps, (uint64_t)wb + 1, 0, below(2), &z, &b);
            cr_assert_eq(rcv, ENG_CORRUPTION);
            page_set_checksum(p, ps, wb);
            cr_assert_eq(page_verify(p, ps, wb, 0, 1, &z, &b), rc, "iter %u", iter);
        }

        if (rc == ENG_OK) {
            accepted[kind]++;
            exercise_accepted(p, ps, iter);
        } else {
            rejected[kind]++;
        }
        guarded_free(p, ps);
    }
    /* The corpus must reach both sides of the decoders to prove anything. */
    cr_assert_gt(accepted[2] + accepted[3], 500, "too few mutated pages stayed valid");
    cr_assert_gt(rejected[2] + rejected[3], 500, "too few mutated pages were rejected");
    cr_assert_gt(accepted[4], 100);
    cr_assert_gt(rejected[4], 100);
    cr_assert_gt(rejected[1], 1000);
}
