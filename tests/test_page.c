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

/* Insert into a leaf in key order (one version, xmin 1); the test owns the
 * room check. */
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

/* Slot of version (KEY, XMIN) on a leaf: the first slot whose key is greater,
 * or equal with an xmin not greater (versions: newest first).  Written
 * without version_cmp so the tests do not lean on the code they check. */
static unsigned version_slot(const uint8_t *p, const void *key, size_t klen, uint64_t xmin,
                             int *exact)
{
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
static void put_version(uint8_t *p, size_t ps, const char *key, const char *val,
                        uint64_t xmin, uint64_t xmax)
{
    uint8_t cell[LEAF_CELL_HDR + ENG_MAX_KEY + 64];
    int exact;
    size_t sz = leaf_cell_encode(cell, key, strlen(key), (uint32_t)strlen(val), val, 0, 0,
                                 xmin, xmax);
    unsigned idx = version_slot(p, key, strlen(key), xmin, &exact);
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
                                    "overflow", "control", "wal_record", "kv_protection",
                                    "version"};
    _Static_assert(sizeof n / sizeof n[0] == ENG_LAYER_COUNT, "a layer without a name");
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
    meta_fields m = {.magic = META_MAGIC, .root = 3, .nblocks = 9, .freelist = 8, .height = 2,
                     .clog_pages = 2}, r;
    page_problem pr;

    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
    wr32(p + META_CLOG_OFF, 4);
    wr32(p + META_CLOG_OFF + 4, 8);
    meta_read(p, &r);
    /* Field by field: the struct's tail padding is not part of the format. */
    cr_assert(m.magic == r.magic && m.root == r.root && m.nblocks == r.nblocks &&
              m.freelist == r.freelist && m.height == r.height && m.clog_pages == r.clog_pages);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    cr_assert_eq(rd64(p + PAGE_HDR), META_MAGIC);
    cr_assert_eq(rd32(p + PAGE_HDR + 24), 2); /* clog_pages where page.h puts it */
    cr_assert_eq(meta_clog_block(p, 0), 4);
    cr_assert_eq(meta_clog_block(p, 1), 8);

    cr_assert_str_eq(page_type_name(PAGE_ZERO), "zero");
    cr_assert_str_eq(page_type_name(PAGE_META), "meta");
    cr_assert_str_eq(page_type_name(PAGE_LEAF), "leaf");
    cr_assert_str_eq(page_type_name(PAGE_INTERNAL), "internal");
    cr_assert_str_eq(page_type_name(PAGE_OVERFLOW), "overflow");
    cr_assert_str_eq(page_type_name(PAGE_FREE), "free");
    cr_assert_str_eq(page_type_name(PAGE_CLOG), "clog");
    cr_assert_eq(PAGE_CLOG, 6);
    cr_assert_eq(PAGE_TYPE_MAX, PAGE_CLOG);
    cr_assert_str_eq(page_type_name(7), "unknown");
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
        cr_assert_eq(page_free(p), ps - LEAF_SLOT_BASE(ps));
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        for (size_t i = PAGE_HDR; i < ps; i++)
            cr_assert_eq(p[i], 0);
        /* A cell may end exactly at the end of a 16 KiB page (upper = 16384). */
        put_leaf(p, ps, "k", 1, "v", 1, 0, 0);
        cr_assert_eq(ph_get_upper(p), ps - (LEAF_CELL_HDR + 2));
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* The hint area's sizes as page.h states them, and room for a
         * nibble per slot of the fullest leaf (cells of 1-byte keys). */
        static const unsigned hint_bytes[] = {80, 160, 320};
        cr_assert_eq(LEAF_HINT_BYTES(ps), hint_bytes[s]);
        cr_assert_eq(LEAF_SLOT_BASE(ps), PAGE_HDR + hint_bytes[s]);
        cr_assert_geq(2 * hint_bytes[s], (ps - PAGE_HDR - hint_bytes[s]) / (LEAF_CELL_HDR + 1 + 2));

        /* Other types keep their slot array (empty or not) at the header's end. */
        static const int others[] = {PAGE_INTERNAL, PAGE_OVERFLOW, PAGE_FREE, PAGE_CLOG};
        for (unsigned t = 0; t < 4; t++) {
            memset(p, 0xee, ps);
            page_init(p, ps, 42, others[t], others[t] == PAGE_INTERNAL);
            cr_assert_eq(ph_get_lower(p), PAGE_HDR, "%s", page_type_name(others[t]));
            cr_assert_eq(page_free(p), ps - PAGE_HDR);
        }
        /* A fresh commit log: every transaction in progress, valid. */
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
    uint64_t xmin, xmax; /* leaf */
    unsigned hint;  /* leaf: the slot's hint nibble */
} mentry;

static const unsigned hint_states[] = {HINT_NONE, HINT_XMIN_C, HINT_XMIN_A, HINT_XMAX_C,
                                       HINT_XMAX_A};

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
    e->xmin = e->xmax = 0;
    e->hint = HINT_NONE;
    if (!leaf)
        return;
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

static size_t encode_entry(uint8_t *buf, const mentry *e, int leaf)
{
    static uint8_t val[MAX_PS];
    if (!leaf)
        return internal_cell_encode(buf, e->key, e->klen, e->ref);
    if (!e->ovfl)
        for (size_t i = 0; i < e->vlen; i++)
            val[i] = val_byte(e, i);
    return leaf_cell_encode(buf, e->key, e->klen, e->vlen, e->ovfl ? NULL : val, e->ovfl, e->ref,
                            e->xmin, e->xmax);
}

/* Model position of E's key: first entry whose key is >= it (what
 * page_search answers), *exact if equal. */
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

/* Model position of version E on a leaf: first entry with a greater key,
 * or the same key and an xmin not greater (newest first); *exact if the key
 * and xmin are both equal. */
static unsigned model_version_search(const mentry *m, unsigned n, const mentry *e, int *exact)
{
    for (unsigned i = 0; i < n; i++) {
        int c = key_cmp(m[i].key, m[i].klen, e->key, e->klen);
        if (c > 0 || (c == 0 && m[i].xmin <= e->xmin)) {
            *exact = c == 0 && m[i].xmin == e->xmin;
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
            cr_assert_eq(c.xmin, e->xmin, "op %u slot %u", op, i);
            cr_assert_eq(c.xmax, e->xmax, "op %u slot %u", op, i);
            cr_assert_eq(page_hint(p, i), e->hint, "op %u slot %u: hint did not follow its slot",
                         op, i);
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
    /* Nibbles beyond the last slot stay 0, whatever slots came and went. */
    if (leaf)
        for (unsigned i = n; i < 2 * LEAF_HINT_BYTES(ps); i++)
            cr_assert_eq(page_hint(p, i), 0, "op %u: hint of unused slot %u", op, i);
    /* S5: the accounting is exact, so reclaimable is the truth. */
    cr_assert_eq(page_reclaimable(p), ps - page_base_for(leaf ? PAGE_LEAF : PAGE_INTERNAL, ps) -
                                          2 * (size_t)n - live, "op %u", op);
}

static void run_model(size_t ps, int leaf, uint64_t seed, unsigned ops)
{
    uint8_t *p = guarded_page(ps);
    static uint8_t cell[MAX_PS];
    mentry *m = calloc(ps / 8, sizeof *m), e; /* cells are >= 8 bytes */
    unsigned n = 0, full_hits = 0, compactions_in_insert = 0, max_n = 0, versions = 0;
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
            int exact, pexact, vexact = 0;
            random_entry(&e, ps, leaf);
            unsigned kidx = model_search(m, n, &e, &exact);
            unsigned pidx = page_search(p, e.key, e.klen, &pexact);
            cr_assert_eq(pidx, kidx, "op %u: page_search %u, model %u", op, pidx, kidx);
            cr_assert_eq(pexact, exact, "op %u", op);
            /* A leaf keeps versions: (key, xmin) places the cell, a repeated
             * one replaces its twin, except that frozen versions (xmin 0)
             * may repeat.  An internal page holds one cell per key. */
            unsigned idx = leaf ? model_version_search(m, n, &e, &vexact) : kidx;
            int replace = leaf ? vexact && e.xmin != 0 : exact;
            size_t sz = encode_entry(cell, &e, leaf);
            cr_assert_eq(sz, mentry_size(&e, leaf));
            size_t room = page_reclaimable(p) + (replace ? mentry_size(&m[idx], leaf) + 2 : 0);
            if (room < sz + 2) {
                if (++full_hits % 4 == 0)
                    filling = 0;
                continue;
            }
            if (replace) { /* update: remove the old version first */
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
            if (leaf && idx + 1 < n && key_cmp(m[idx].key, m[idx].klen, m[idx + 1].key,
                                               m[idx + 1].klen) == 0)
                versions++;
        }
        /* Hint bits are set in place, as readers do; the edits above must
         * carry them with their slots. */
        if (leaf && n > 0 && below(3) == 0) {
            unsigned i = below(n), h = hint_states[below(5)];
            page_hint_set(p, i, h);
            m[i].hint = h;
        }
        compare_with_model(p, ps, leaf, m, n, op);
        if (op % 64 == 0) {
            for (unsigned i = 0; i < n; i++) {
                int exact;
                unsigned first = i; /* page_search finds a key's newest version */
                while (first > 0 &&
                       key_cmp(m[first - 1].key, m[first - 1].klen, m[i].key, m[i].klen) == 0)
                    first--;
                cr_assert_eq(page_search(p, m[i].key, m[i].klen, &exact), first);
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
    if (leaf)
        cr_assert_gt(versions, 100, "the run rarely stacked versions of one key");
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
/* Where a leaf of PS bytes keeps slot I: after the header and hint area. */
#define SLOT(ps, i) (LEAF_SLOT_BASE(ps) + 2 * (i))

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
        wr16(p + SLOT(ps, 2), (uint16_t)(ph_get_upper(p) - 1));
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 2, "outside", "slot below upper");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + SLOT(ps, 0), (uint16_t)(ps - 3));
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 0, "outside", "cell header past the end");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + SLOT(ps, 4), (uint16_t)(ps - LEAF_CELL_HDR)); /* header just fits */
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 4, NULL, "slot into the last cell's tail");
        guarded_free(p, ps);

        p = fresh_leaf(ps);
        wr16(p + SLOT(ps, 4), 0xffff);
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
        wr16(p + page_slot(p, 3), 10); /* delta's cell is 32 bytes, last in the page */
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
    wr16(p + SLOT(ps, 1), page_slot(p, 0));
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
        wr16(p + SLOT(ps, 1), b);
        wr16(p + SLOT(ps, 3), a);
    }
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 2, "P3", "swapped slots");
    guarded_free(p, ps);

    /* Equal keys are versions, and two with one xmin (here 1) are not. */
    p = fresh_leaf(ps);
    memcpy(p + page_slot(p, 1) + LEAF_CELL_HDR, "alpha", 5);
    expect_bad(p, ps, ENG_LAYER_VERSION, 1, "P3", "equal keys, equal xmin");
    guarded_free(p, ps);

    /* On an internal page equal keys are never allowed. */
    p = guarded_page(ps);
    build_internal(p, ps, 2);
    memcpy(p + page_slot(p, 1) + INTERNAL_CELL_HDR, "g", 1);
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "P3", "internal equal keys");
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
        wr16(p + SLOT(ps, 0), b);
        wr16(p + SLOT(ps, 1), a);
    }
    expect_bad(p, ps, ENG_LAYER_STRUCTURE, 1, "P3", "longer key before its prefix");
    guarded_free(p, ps);
}

Test(page_structure, rejects_bad_header_fields)
{
    const size_t ps = 8192;
    uint8_t *p;

    page_problem pr;

/* A fresh leaf damaged by the statements after WHAT must be refused as a
 * page-header problem whose detail holds WORD. */
#define LEAF_CASE(word, what, ...)                                                       \
    do {                                                                                 \
        p = fresh_leaf(ps);                                                              \
        __VA_ARGS__;                                                                     \
        expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, word, what);                        \
        guarded_free(p, ps);                                                             \
    } while (0)

    static const uint8_t bad_types[] = {PAGE_TYPE_MAX + 1, 0x80, 0xff};
    for (unsigned i = 0; i < sizeof bad_types; i++)
        LEAF_CASE("unknown page type", "type out of range", ph_set_type(p, bad_types[i]));
    LEAF_CASE("type 0", "type 0 with bytes", ph_set_type(p, PAGE_ZERO));
    LEAF_CASE("P1", "upper past the end", ph_set_upper(p, (uint16_t)(ps + 1)));
    LEAF_CASE("P1", "lower inside the header",
              ph_set_nslots(p, 0); ph_set_lower(p, PAGE_HDR - 2));

    /* A leaf's slots cannot start inside its hint area... */
    LEAF_CASE("P1", "leaf slots over the hint area",
              ph_set_nslots(p, 0); ph_set_lower(p, PAGE_HDR));
    LEAF_CASE("P1", "leaf slot array one slot early", /* 5 slots from one short */
              ph_set_lower(p, (uint16_t)(ph_get_lower(p) - 2 * 5 - 2)));

    /* ... and an internal page keeps no hint area: a leaf's base is wrong there. */
    p = guarded_page(ps);
    build_internal(p, ps, 2);
    ph_set_lower(p, (uint16_t)(LEAF_SLOT_BASE(ps) + 2 * 3));
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "internal slots after a hint area");
    guarded_free(p, ps);

    /* A leaf relabelled as another type no longer matches its layout. */
    LEAF_CASE("P1", "leaf relabelled internal",
              ph_set_type(p, PAGE_INTERNAL); ph_set_level(p, 1); ph_set_aux(p, 5));
    LEAF_CASE("P1", "leaf relabelled clog", ph_set_type(p, PAGE_CLOG));

    LEAF_CASE("P1", "lower above upper", ph_set_lower(p, (uint16_t)(ph_get_upper(p) + 2)));
    LEAF_CASE("P1", "nslots disagrees with lower", ph_set_nslots(p, 4));
    LEAF_CASE("P1", "nslots 65535", ph_set_nslots(p, 0xffff));
    LEAF_CASE("level", "leaf at level 1", ph_set_level(p, 1));
    LEAF_CASE("ph_frag", "frag too big", ph_set_frag(p, (uint16_t)(ph_get_frag(p) + 1)));
    LEAF_CASE("ph_frag", "dead bytes not counted",
              page_remove_cell(p, 2);
              cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
              ph_set_frag(p, 0));
#undef LEAF_CASE

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
    META_CASE(clog_pages, META_CLOG_CAP(ps) + 1, ENG_LAYER_STRUCTURE, "commit-log");
    META_CASE(clog_pages, 0xffffffffu, ENG_LAYER_STRUCTURE, "commit-log");
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

/* ---- versions, hint bits, commit log, meta directory ------------------------ */

/* A leaf holding "a", then key "k" in VERSIONS (xmins, in slot order), then
 * "z": slot of the first "k" version is 1. */
static void build_versions(uint8_t *p, size_t ps, const uint64_t *xmins, unsigned n)
{
    page_init(p, ps, 1, PAGE_LEAF, 0);
    put_leaf(p, ps, "a", 1, "v", 1, 0, 0);
    put_leaf(p, ps, "z", 1, "v", 1, 0, 0);
    /* Appended in slot order by hand, so a bad order can be built too. */
    for (unsigned i = 0; i < n; i++) {
        uint8_t cell[64];
        size_t sz = leaf_cell_encode(cell, "k", 1, 2, "vv", 0, 0, xmins[i], 0);
        page_insert_cell(p, ps, 1 + i, cell, sz);
    }
}

Test(page_versions, versions_of_one_key_newest_first)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;
        int exact;

        /* Strictly decreasing xmin, down to one frozen version. */
        static const uint64_t good[] = {900, 41, 40, 7, 0};
        build_versions(p, ps, good, 5);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        cr_assert_eq(page_search(p, "k", 1, &exact), 1, "search finds the newest version");
        cr_assert(exact);
        for (unsigned i = 0; i < 5; i++) {
            leaf_cell c;
            page_leaf_cell(p, 1 + i, &c);
            cr_assert_eq(c.xmin, good[i]);
            cr_assert_eq(c.klen, 1);
            cr_assert_eq(c.key[0], 'k');
        }

        /* Two (or more) frozen versions: both xmin 0, allowed. */
        static const uint64_t frozen[] = {5, 0, 0, 0};
        build_versions(p, ps, frozen, 4);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* The same versions put through the engine's insert in any order. */
        page_init(p, ps, 1, PAGE_LEAF, 0);
        put_version(p, ps, "k", "v40", 40, 0);
        put_version(p, ps, "k", "v0", 0, 0);
        put_version(p, ps, "k", "v900", 900, 0);
        put_version(p, ps, "a", "x", 3, 0);
        put_version(p, ps, "k", "v7", 7, 41);
        put_version(p, ps, "k", "v41", 41, 0);
        put_version(p, ps, "z", "x", 3, 0);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        for (unsigned i = 0; i < 5; i++) {
            leaf_cell c;
            page_leaf_cell(p, 1 + i, &c);
            cr_assert_eq(c.xmin, good[i], "slot %u", 1 + i);
        }

        /* Equal xmin (not 0): two versions by one transaction. */
        static const uint64_t twice[] = {900, 41, 41, 7};
        build_versions(p, ps, twice, 4);
        expect_bad(p, ps, ENG_LAYER_VERSION, 3, "P3", "equal xmin");
        check(p, ps, &pr);
        cr_assert_eq(pr.expected, 41);
        cr_assert_eq(pr.found, 41);
        cr_assert_eq(pr.offset, page_slot(p, 3) + LEAF_XMIN_OFF);

        /* Older first (xmin increasing). */
        static const uint64_t rising[] = {7, 41};
        build_versions(p, ps, rising, 2);
        expect_bad(p, ps, ENG_LAYER_VERSION, 2, "P3", "xmin increasing");

        /* A frozen version is the oldest: nothing may follow it but frozen ones. */
        static const uint64_t after_frozen[] = {9, 0, 3};
        build_versions(p, ps, after_frozen, 3);
        expect_bad(p, ps, ENG_LAYER_VERSION, 3, "P3", "version after a frozen one");

        /* Keys still go up across versions: "k" versions then a smaller key. */
        static const uint64_t ok2[] = {2, 1};
        build_versions(p, ps, ok2, 2);
        memcpy(p + page_slot(p, 3) + LEAF_CELL_HDR, "b", 1); /* "z" -> "b" */
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, 3, "P3", "smaller key after versions");
        guarded_free(p, ps);
    }
}

Test(page_versions, invalid_hint_nibbles_are_rejected)
{
    /* Valid states: even parity and one of the five named; the other even
     * codes (0xa, 0xc, 0xf) are unused, every odd-parity code is a flip. */
    static const int valid[16] = {[0x0] = 1, [0x3] = 1, [0x5] = 1, [0x6] = 1, [0x9] = 1};
    static const unsigned unused_even[] = {0xa, 0xc, 0xf};
    for (unsigned h = 0; h < 16; h++)
        cr_assert_eq(hint_valid(h), valid[h], "hint_valid(0x%x)", h);
    for (unsigned k = 0; k < 3; k++)
        cr_assert_eq(__builtin_parity(unused_even[k]), 0);

    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;
        char what[64];

        for (unsigned slot = 0; slot < 5; slot++) { /* low and high nibbles */
            for (unsigned h = 0; h < 16; h++) {
                build_leaf(p, ps, 1);
                page_hint_set(p, slot, h);
                cr_assert_eq(page_hint(p, slot), h);
                if (valid[h]) {
                    cr_assert_eq(check(p, ps, &pr), ENG_OK, "slot %u hint 0x%x: %s", slot, h,
                                 pr.detail);
                    continue;
                }
                snprintf(what, sizeof what, "slot %u hint 0x%x (%s)", slot, h,
                         __builtin_parity(h) ? "odd parity" : "unused even code");
                expect_bad(p, ps, ENG_LAYER_VERSION, (int)slot, "hint", what);
                check(p, ps, &pr);
                cr_assert_eq(pr.offset, PAGE_HDR + slot / 2, "%s", what);
                cr_assert_eq(pr.found, h, "%s", what);
            }
        }

        /* Every single-bit flip of a valid state is caught (parity). */
        for (unsigned k = 0; k < 5; k++)
            for (unsigned b = 0; b < 4; b++) {
                build_leaf(p, ps, 1);
                page_hint_set(p, 2, hint_states[k] ^ (1u << b));
                expect_bad(p, ps, ENG_LAYER_VERSION, 2, "hint", "flipped hint bit");
            }

        /* Beyond the last slot, even a valid state is damage; its report
         * names no slot (entry -1), since no slot owns the nibble. */
        build_leaf(p, ps, 1);
        page_hint_set(p, 5, HINT_XMIN_C);
        expect_bad(p, ps, ENG_LAYER_VERSION, -1, "beyond the last slot", "hint of slot 5 of 5");
        check(p, ps, &pr);
        cr_assert_eq(pr.offset, PAGE_HDR + 2);
        build_leaf(p, ps, 1);
        p[PAGE_HDR + LEAF_HINT_BYTES(ps) - 1] = 0x10; /* the area's last nibble */
        expect_bad(p, ps, ENG_LAYER_VERSION, -1, "beyond the last slot", "last hint nibble");
        check(p, ps, &pr);
        cr_assert_eq(pr.offset, PAGE_HDR + LEAF_HINT_BYTES(ps) - 1);
        /* An empty leaf: every nibble is beyond the last slot. */
        page_init(p, ps, 1, PAGE_LEAF, 0);
        page_hint_set(p, 0, HINT_XMIN_C);
        expect_bad(p, ps, ENG_LAYER_VERSION, -1, "beyond the last slot", "hint on an empty leaf");
        guarded_free(p, ps);
    }
}

/* Hints of slots 0..n-1 as a string of hex digits, for readable asserts. */
static void hints_str(const uint8_t *p, char *out)
{
    unsigned n = ph_get_nslots(p);
    for (unsigned i = 0; i < n; i++)
        out[i] = "0123456789abcdef"[page_hint(p, i)];
    out[n] = 0;
}

Test(page_versions, insert_and_remove_carry_hints_with_their_slots)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;
        char h[64];

        /* alpha bravo charlie delta echo */
        build_leaf(p, ps, 1);
        page_hint_set(p, 0, HINT_XMIN_C);
        page_hint_set(p, 1, HINT_XMIN_A);
        page_hint_set(p, 2, HINT_XMAX_C);
        page_hint_set(p, 3, HINT_XMAX_A);
        page_hint_set(p, 4, HINT_XMIN_C);
        hints_str(p, h);
        cr_assert_str_eq(h, "35693");

        /* Insert at slot 1: later hints move up a nibble (crossing byte
         * boundaries), the new slot has none. */
        put_leaf(p, ps, "b", 1, "x", 1, 0, 0);
        hints_str(p, h);
        cr_assert_str_eq(h, "305693");
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* Insert at the front and at the end. */
        put_leaf(p, ps, "A", 1, "x", 1, 0, 0);
        put_leaf(p, ps, "zulu", 4, "x", 1, 0, 0);
        hints_str(p, h);
        cr_assert_str_eq(h, "03056930");
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* Remove slot 3 (bravo, 5): later hints move down, and the nibble
         * the last slot left behind is cleared. */
        page_remove_cell(p, 3);
        hints_str(p, h);
        cr_assert_str_eq(h, "0306930");
        cr_assert_eq(page_hint(p, 7), 0);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* Remove the first and the last. */
        page_remove_cell(p, 0);
        page_remove_cell(p, ph_get_nslots(p) - 1);
        hints_str(p, h);
        cr_assert_str_eq(h, "30693");
        for (unsigned i = 5; i < 2 * LEAF_HINT_BYTES(ps); i++)
            cr_assert_eq(page_hint(p, i), 0, "nibble %u", i);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* Compaction moves cells, not hints; the keys still match. */
        page_compact(p, ps);
        hints_str(p, h);
        cr_assert_str_eq(h, "30693");
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        static const char *keys[] = {"alpha", "b", "charlie", "delta", "echo"};
        for (unsigned i = 0; i < 5; i++) {
            leaf_cell c;
            page_leaf_cell(p, i, &c);
            cr_assert(c.klen == strlen(keys[i]) && !memcmp(c.key, keys[i], c.klen), "slot %u", i);
        }

        /* Remove everything: the hint area is all zero again. */
        while (ph_get_nslots(p) > 0)
            page_remove_cell(p, ph_get_nslots(p) / 2);
        for (unsigned i = 0; i < LEAF_HINT_BYTES(ps); i++)
            cr_assert_eq(p[PAGE_HDR + i], 0, "hint byte %u", i);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* An insert that must compact first keeps the hints too: four
         * cells nearly fill the page, the first is removed (its bytes become
         * fragmentation), and the next cell fits only after compaction. */
        static char big[MAX_PS];
        memset(big, 'q', sizeof big);
        const uint32_t vbig = (uint32_t)((ps - LEAF_SLOT_BASE(ps)) / 4 - 40);
        page_init(p, ps, 1, PAGE_LEAF, 0);
        for (unsigned i = 0; i < 4; i++) {
            char k[4] = {'k', '0', (char)('0' + i), 0};
            put_leaf(p, ps, k, 3, big, vbig, 0, 0);
            page_hint_set(p, i, hint_states[1 + i]);
        }
        page_remove_cell(p, 0);
        hints_str(p, h);
        cr_assert_str_eq(h, "569");
        const size_t room = page_free(p);
        const uint32_t vlen = (uint32_t)(room - (LEAF_CELL_HDR + 3 + 2) + 1);
        cr_assert_gt(LEAF_CELL_HDR + 3 + vlen + 2, page_free(p), "the cell must not fit as is");
        cr_assert_leq(LEAF_CELL_HDR + 3 + vlen + 2, page_reclaimable(p));
        put_leaf(p, ps, "k99", 3, big, vlen, 0, 0);
        cr_assert_eq(ph_get_frag(p), 0, "the insert did not compact");
        hints_str(p, h);
        cr_assert_str_eq(h, "5690");
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        guarded_free(p, ps);
    }
}

/* Set the 2-bit status of transaction X on commit-log page P. */
static void clog_set(uint8_t *p, size_t x, unsigned st)
{
    uint8_t *b = p + PAGE_HDR + x / 4;
    *b = (uint8_t)((*b & ~(3u << (2 * (x % 4)))) | (st << (2 * (x % 4))));
}

Test(page_versions, clog_page_rejects_status_3)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;
        const size_t per = CLOG_PER_PAGE(ps);
        cr_assert_eq(per, (ps - PAGE_HDR) * 4);

        /* Every transaction's slot, first and last included, holds 0..2. */
        page_init(p, ps, 7, PAGE_CLOG, 0);
        ph_set_aux(p, 3); /* page 3 of the log */
        for (size_t x = 0; x < per; x++)
            clog_set(p, x, (unsigned)(x % 3));
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        memset(p + PAGE_HDR, 0xaa, ps - PAGE_HDR); /* all aborted */
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        page_set_checksum(p, ps, 7);
        int z;
        cr_assert_eq(page_verify(p, ps, 7, 8, 1, &z, &pr), ENG_OK, "%s", pr.detail);

        /* A status 3 in each position of a byte, at the start, middle and
         * end of the log page. */
        const size_t xs[] = {0, 1, 2, 3, per / 2 + 1, per - 4, per - 3, per - 2, per - 1};
        for (unsigned k = 0; k < sizeof xs / sizeof xs[0]; k++) {
            page_init(p, ps, 7, PAGE_CLOG, 0);
            clog_set(p, xs[k] ^ 1, CLOG_COMMITTED); /* a neighbour set */
            clog_set(p, xs[k], 3);
            char what[64];
            snprintf(what, sizeof what, "clog status 3 at transaction %zu", xs[k]);
            expect_bad(p, ps, ENG_LAYER_VERSION, -1, "status 3", what);
            check(p, ps, &pr);
            cr_assert_eq(pr.offset, (int64_t)(PAGE_HDR + xs[k] / 4), "%s", what);
        }

        /* A commit-log page has no slots. */
        page_init(p, ps, 7, PAGE_CLOG, 0);
        ph_set_nslots(p, 1);
        ph_set_lower(p, PAGE_HDR + 2);
        expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "slots", "clog page with a slot");
        guarded_free(p, ps);
    }
}

/* A meta page with NB blocks, root ROOT and the directory DIR[N]. */
static void build_meta_dir(uint8_t *p, size_t ps, uint32_t root, uint32_t nb,
                           const uint32_t *dir, uint32_t n)
{
    meta_fields m = {.magic = META_MAGIC, .root = root, .nblocks = nb, .freelist = 0,
                     .height = 1, .clog_pages = n};
    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
    for (uint32_t i = 0; i < n; i++)
        wr32(p + META_CLOG_OFF + 4 * i, dir[i]);
}

Test(page_versions, meta_clog_directory_inside_the_file)
{
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;

        cr_assert_eq(META_CLOG_OFF, PAGE_HDR + 28);
        cr_assert_eq(META_CLOG_CAP(ps), (ps - PAGE_HDR - 28) / 4);

        /* Entries strictly between root and nblocks: both ends inclusive. */
        static const uint32_t good[] = {3, 9, 4};
        build_meta_dir(p, ps, 2, 10, good, 3);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        /* Past clog_pages the directory is not read. */
        wr32(p + META_CLOG_OFF + 12, 0xffffffffu);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* Out of range: 0, the meta page, the root, nblocks, far beyond. */
        static const uint32_t bad[] = {0, 1, 2, 10, 11, 0xffffffffu};
        for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++)
            for (unsigned at = 0; at < 3; at++) {
                uint32_t dir[3] = {3, 9, 4};
                char what[64];
                dir[at] = bad[k];
                build_meta_dir(p, ps, 2, 10, dir, 3);
                snprintf(what, sizeof what, "directory entry %u = %u", at, bad[k]);
                /* entry names the directory index, not a slot */
                expect_bad(p, ps, ENG_LAYER_STRUCTURE, (int)at, "commit-log", what);
                check(p, ps, &pr);
                cr_assert_eq(pr.offset, META_CLOG_OFF + 4 * at, "%s", what);
                cr_assert_eq(pr.found, bad[k], "%s", what);
            }

        /* A full directory fits the page and is valid; one more is not. */
        const uint32_t cap = META_CLOG_CAP(ps);
        uint32_t *dir = calloc(cap + 1, sizeof *dir);
        cr_assert_not_null(dir);
        for (uint32_t i = 0; i < cap; i++)
            dir[i] = 2 + i;
        cr_assert_leq(META_CLOG_OFF + 4 * (size_t)cap, ps);
        build_meta_dir(p, ps, 1, cap + 2, dir, cap);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        dir[cap - 1] = cap + 2; /* the last entry, == nblocks */
        build_meta_dir(p, ps, 1, cap + 2, dir, cap);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, (int)cap - 1, "commit-log",
                   "last entry out of range");
        meta_fields m;
        build_meta_dir(p, ps, 1, cap + 2, dir, cap - 1);
        meta_read(p, &m);
        m.clog_pages = cap + 1;
        meta_write(p, &m);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, -1, "commit-log", "directory over capacity");
        free(dir);
        guarded_free(p, ps);
    }
}

/* ---- garbage ---------------------------------------------------------------- */

/* The rules of page.h and page.c written a second way (byte ownership map,
 * hand-rolled key order, literal offsets and sizes from page.h's drawing)
 * so that the two must agree on every page. */
static int ref_key_less(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    for (size_t i = 0; i < al && i < bl; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return al < bl;
}

/* Bytes of a leaf's hint area, as page.h lists them. */
static unsigned ref_hint_bytes(size_t ps) { return ps == 4096 ? 80 : ps == 8192 ? 160 : 320; }

/* The five hint states: 0, 3, 5, 6, 9. */
static int ref_hint_ok(unsigned h) { return (0x0269u >> h) & 1u; }

static int ref_valid(const uint8_t *p, size_t ps)
{
    static uint8_t owner[MAX_PS];
    unsigned type = p[20], n = rd16(p + 22), lower = rd16(p + 24), upper = rd16(p + 26);
    unsigned frag = rd16(p + 28), level = rd16(p + 30);
    uint32_t aux = rd32(p + 36);

    if (type < 1 || type > 6)
        return 0;
    unsigned base = type == 2 ? 40 + ref_hint_bytes(ps) : 40;
    if (lower < base || lower > upper || upper > ps || lower != base + 2 * n)
        return 0;
    if (type != 2 && type != 3) {
        if (n != 0)
            return 0;
        if (type == 4) /* overflow: aux payload bytes */
            return aux <= ps - 40;
        if (type == 5) /* a free-list trunk: aux entries of 4 bytes */
            return aux <= (ps - 40) / 4;
        if (type == 6) { /* commit log: no 2-bit status may be 3 */
            for (size_t b = 40; b < ps; b++)
                for (unsigned k = 0; k < 8; k += 2)
                    if (((p[b] >> k) & 3) == 3)
                        return 0;
            return 1;
        }
        /* meta */
        uint32_t root = rd32(p + 48), nb = rd32(p + 52), fl = rd32(p + 56), h = rd32(p + 60);
        uint32_t nclog = rd32(p + 64);
        if (!(rd64(p + 40) == META_MAGIC && nb >= 2 && root >= 1 && root < nb && fl < nb && h >= 1))
            return 0;
        if (nclog > (ps - 68) / 4)
            return 0;
        for (uint32_t i = 0; i < nclog; i++) {
            uint32_t b = rd32(p + 68 + 4 * i);
            if (b <= root || b >= nb)
                return 0;
        }
        return 1;
    }
    int leaf = type == 2;
    if (leaf ? level != 0 : (level == 0 || aux == 0))
        return 0;
    if (leaf) /* nibble i of the area belongs to slot i; unused ones are 0 */
        for (unsigned i = 0; i < 2 * ref_hint_bytes(ps); i++) {
            unsigned h = (p[40 + i / 2] >> (4 * (i % 2))) & 15;
            if (i < n ? !ref_hint_ok(h) : h != 0)
                return 0;
        }
    memset(owner, 0, ps);
    size_t live = 0;
    const uint8_t *pk = NULL;
    size_t pkl = 0;
    uint64_t pxmin = 0;
    const size_t hdr = leaf ? 23 : 6;
    for (unsigned i = 0; i < n; i++) {
        size_t off = rd16(p + base + 2 * i);
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
            sz = 23 + kl + (fl ? 4 : (uint64_t)rd32(p + off + 3));
            if (off + sz > ps)
                return 0;
            if (fl && rd32(p + off + 23 + kl) == 0)
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
        const uint8_t *k = p + off + hdr;
        if (pk && !ref_key_less(pk, pkl, k, kl)) {
            /* Not increasing: only a leaf's next version of the same key,
             * older than the one before (or both frozen). */
            uint64_t xmin = rd64(p + off + 7);
            if (!leaf || ref_key_less(k, kl, pk, pkl))
                return 0;
            if (!(xmin < pxmin || (xmin == 0 && pxmin == 0)))
                return 0;
        }
        if (leaf)
            pxmin = rd64(p + off + 7);
        pk = k;
        pkl = kl;
    }
    return frag == ps - upper - live;
}

/* A random valid leaf or internal page, filled by random edits; a leaf
 * gets versions of some keys and hint bits on some slots. */
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
        if (leaf && ph_get_nslots(p) > 0 && below(3) == 0) { /* another version of a key */
            leaf_cell c;
            page_leaf_cell(p, below(ph_get_nslots(p)), &c);
            memcpy(e.key, c.key, c.klen);
            e.klen = c.klen;
        }
        size_t sz = encode_entry(cell, &e, leaf);
        unsigned idx = leaf ? version_slot(p, e.key, e.klen, e.xmin, &exact)
                            : page_search(p, e.key, e.klen, &exact);
        if ((exact && !(leaf && e.xmin == 0)) || page_reclaimable(p) < sz + 2) {
            misses++;
            continue;
        }
        page_insert_cell(p, ps, idx, cell, sz);
        if (below(4) == 0)
            page_remove_cell(p, below(ph_get_nslots(p)));
        if (leaf && ph_get_nslots(p) > 0 && below(2) == 0)
            page_hint_set(p, below(ph_get_nslots(p)), hint_states[below(5)]);
    }
}

/* A random valid meta (sometimes with a commit-log directory), overflow,
 * free-list or commit-log page. */
static void random_other_page(uint8_t *p, size_t ps, uint32_t block)
{
    unsigned t = below(4);
    if (t == 0) {
        build_meta(p, ps);
        if (below(2)) {
            meta_fields m;
            meta_read(p, &m);
            m.root = 1 + below(5);
            m.nblocks = m.root + 2 + below(100);
            const unsigned cap = META_CLOG_CAP(ps);
            m.clog_pages = below(4) ? below(6) : below(2) ? cap : below(cap + 1);
            meta_write(p, &m);
            for (uint32_t i = 0; i < m.clog_pages; i++)
                wr32(p + META_CLOG_OFF + 4 * i, m.root + 1 + below(m.nblocks - m.root - 1));
        }
    } else if (t == 3) {
        page_init(p, ps, block, PAGE_CLOG, 0);
        ph_set_aux(p, below(8));
        for (size_t b = PAGE_HDR; b < ps; b++) { /* 4 statuses a byte, each 0..2 */
            uint64_t r = rnd();
            for (unsigned k = 0; k < 4; k++)
                clog_set(p, (b - PAGE_HDR) * 4 + k, (unsigned)((r >> (8 * k)) % 3));
        }
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
        /* The search lands on the key's first (newest) version. */
        int exact;
        const size_t chdr = type == PAGE_LEAF ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
        const uint8_t *key = c + chdr;
        unsigned first = i;
        while (first > 0) {
            const uint8_t *pc = page_cell_bytes(p, first - 1, &sz);
            if (key_cmp(pc + chdr, rd16(pc), key, rd16(c)) != 0)
                break;
            first--;
        }
        cr_assert(type == PAGE_LEAF || first == i, "iter %u: equal keys on an internal page", iter);
        cr_assert_eq(page_search(p, key, rd16(c), &exact), first, "iter %u", iter);
        cr_assert(exact);
    }
    /* Hints (leaf) before each edit, to see them follow their slots. */
    unsigned hints[MAX_PS / 2];
    const int leaf = type == PAGE_LEAF;
    if (n > 0) {
        const unsigned r = below(n);
        for (unsigned i = 0; leaf && i < n; i++)
            hints[i] = page_hint(p, i);
        page_remove_cell(p, r);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after remove: %s", iter, pr.detail);
        for (unsigned i = 0; leaf && i < n; i++)
            cr_assert_eq(page_hint(p, i), i + 1 < n ? hints[i < r ? i : i + 1] : 0u,
                         "iter %u: hint %u after removing slot %u", iter, i, r);
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
            if (leaf)
                cr_assert_eq(page_hint(p, last + 1), HINT_NONE, "iter %u: new slot's hint", iter);
        }
    }
    if (leaf && ph_get_nslots(p) > 0) {
        /* An older version of a random slot's key, after its oldest one
         * (xmin one less, or a second frozen version): later hints move up. */
        size_t sz;
        const unsigned nn = ph_get_nslots(p), at = below(nn);
        leaf_cell lc;
        page_leaf_cell(p, at, &lc);
        unsigned after = at + 1; /* after every version of that key */
        while (after < nn) {
            leaf_cell nc;
            page_leaf_cell(p, after, &nc);
            if (key_cmp(nc.key, nc.klen, lc.key, lc.klen) != 0)
                break;
            lc = nc;
            after++;
        }
        const uint8_t *src = page_cell_bytes(p, after - 1, &sz);
        if (page_reclaimable(p) >= sz + 2) {
            memcpy(cell, src, sz);
            wr64(cell + LEAF_XMIN_OFF, lc.xmin ? lc.xmin - 1 : 0);
            for (unsigned i = 0; i < nn; i++)
                hints[i] = page_hint(p, i);
            page_insert_cell(p, ps, after, cell, sz);
            cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after a version: %s", iter, pr.detail);
            for (unsigned i = 0; i <= nn; i++)
                cr_assert_eq(page_hint(p, i), i < after ? hints[i] : i == after ? 0u : hints[i - 1],
                             "iter %u: hint %u after a version at %u", iter, i, after);
        }
    }
    const unsigned nn = ph_get_nslots(p);
    for (unsigned i = 0; leaf && i < nn; i++)
        hints[i] = page_hint(p, i);
    page_compact(p, ps);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after compact: %s", iter, pr.detail);
    for (unsigned i = 0; leaf && i < nn; i++)
        cr_assert_eq(page_hint(p, i), hints[i], "iter %u: hint %u after compact", iter, i);
}

Test(page_structure, random_garbage_never_crashes_and_agrees_with_reference)
{
    unsigned accepted[5] = {0}, rejected[5] = {0};
    unsigned hint_rejects = 0, order_rejects = 0, clog_accepts = 0, clog_rejects = 0;
    unsigned dir_accepts = 0, dir_rejects = 0, version_accepts = 0;
    rng = 12345;
    for (unsigned iter = 0; iter < 10000; iter++) {
        const size_t ps = page_sizes[below(3)];
        uint8_t *p = guarded_page(ps);
        const uint32_t block = 1 + (uint32_t)below(1000);
        const unsigned kind = below(5);
        unsigned nmut, hot, xmin_at;

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
                const unsigned t = 1 + below(PAGE_TYPE_MAX), base = page_base_for((int)t, ps);
                ph_set_type(p, (uint8_t)t);
                ph_set_nslots(p, (uint16_t)n);
                ph_set_lower(p, (uint16_t)(base + 2 * n));
                ph_set_upper(p, (uint16_t)(base + 2 * n +
                                           below((unsigned)(ps - base - 2 * n + 1))));
                ph_set_level(p, (uint16_t)below(2));
                for (unsigned i = 0; i < n; i++)
                    wr16(p + base + 2 * i, (uint16_t)(ph_get_upper(p) +
                                                      below((unsigned)(ps - ph_get_upper(p) + 8))));
                /* Mostly valid hints, so the noise reaches the cells. */
                if (t == PAGE_LEAF && below(8)) {
                    memset(p + PAGE_HDR, 0, LEAF_HINT_BYTES(ps));
                    for (unsigned i = 0; i < n; i++)
                        page_hint_set(p, i, hint_states[below(5)]);
                }
            }
            break;
        case 2: /* a valid slotted page with a few bytes changed */
        case 3: /* a valid slotted page with a few bits flipped */
            random_valid_page(p, ps, below(2), block);
            nmut = 1 + below(3);
            /* Header, hints and slots, and one cell's xmin (mostly its low
             * byte, to reorder versions): all before any mutation. */
            hot = ph_get_lower(p) + 8u;
            xmin_at = ph_get_type(p) == PAGE_LEAF && ph_get_nslots(p) > 0
                          ? page_slot(p, below(ph_get_nslots(p))) + LEAF_XMIN_OFF
                          : 0;
            for (unsigned k = 0; k < nmut; k++) {
                size_t at = below(2) ? below(hot) : below((unsigned)ps);
                if (xmin_at && below(4) == 0)
                    at = xmin_at + (below(4) ? 0 : below(8));
                if (kind == 2 && ph_get_type(p) == PAGE_LEAF && below(4) == 0) {
                    /* Any nibble value on a slot's hint, or on one beyond. */
                    unsigned n = ph_get_nslots(p);
                    unsigned i = below(2) && n ? below(n) : below(2 * LEAF_HINT_BYTES(ps));
                    page_hint_set(p, i, below(16));
                    continue;
                }
                if (kind == 2)
                    p[at] = (uint8_t)(at == xmin_at ? below(9) : rnd());
                else
                    p[at] ^= (uint8_t)(1u << below(8));
            }
            break;
        default: /* meta / overflow / free / clog with a changed byte in the
                  * first 64, or in the meta page's directory, or anywhere in
                  * a commit log */
            random_other_page(p, ps, block);
            hot = 64;
            if (ph_get_type(p) == PAGE_META)
                hot = META_CLOG_OFF + 4 * rd32(p + PAGE_HDR + 24);
            else if (ph_get_type(p) == PAGE_CLOG)
                hot = (unsigned)ps;
            if (ph_get_type(p) == PAGE_META && rd32(p + PAGE_HDR + 24) && below(3) == 0) {
                /* The directory's edges: an entry at 0, the root or just
                 * above it, the last block or nblocks; or one entry more. */
                meta_fields m;
                meta_read(p, &m);
                const uint32_t edge[] = {0, m.root, m.root + 1, m.nblocks - 1, m.nblocks};
                if (below(4)) {
                    wr32(p + META_CLOG_OFF + 4 * below(m.clog_pages), edge[below(5)]);
                } else {
                    m.clog_pages++;
                    meta_write(p, &m);
                }
            } else if (below(4)) {
                p[below(hot)] = (uint8_t)rnd();
            }
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
            /* entry names a slot, or on a meta page a commit-log directory
             * index (check_meta's reports), or nothing (-1). */
            const int32_t entries = ph_get_type(p) == PAGE_META ? (int32_t)META_CLOG_CAP(ps)
                                                                : (int32_t)ph_get_nslots(p);
            cr_assert(a.entry >= -1 && a.entry < entries, "iter %u: entry %d of %d", iter,
                      a.entry, entries);
            if (ph_get_type(p) == PAGE_META && a.entry >= 0)
                cr_assert(a.entry < (int32_t)rd32(p + PAGE_HDR + 24), "iter %u: entry %d", iter,
                          a.entry);
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

        /* Which of the new rules this page reached, for the totals below. */
        const unsigned type = ph_get_type(p);
        if (rc == ENG_OK) {
            accepted[kind]++;
            clog_accepts += type == PAGE_CLOG;
            dir_accepts += type == PAGE_META && rd32(p + PAGE_HDR + 24) > 0;
            for (unsigned i = 1; type == PAGE_LEAF && i < ph_get_nslots(p); i++) {
                leaf_cell c0, c1;
                page_leaf_cell(p, i - 1, &c0);
                page_leaf_cell(p, i, &c1);
                if (key_cmp(c0.key, c0.klen, c1.key, c1.klen) == 0) {
                    version_accepts++;
                    break;
                }
            }
            exercise_accepted(p, ps, iter);
        } else {
            rejected[kind]++;
            if (a.layer == ENG_LAYER_VERSION && type == PAGE_LEAF) {
                if (strstr(a.detail, "hint"))
                    hint_rejects++;
                else
                    order_rejects++;
            }
            clog_rejects += a.layer == ENG_LAYER_VERSION && type == PAGE_CLOG;
            dir_rejects += type == PAGE_META && a.entry >= 0;
        }
        guarded_free(p, ps);
    }
    /* The corpus must reach both sides of the decoders to prove anything. */
    cr_assert_gt(accepted[2] + accepted[3], 500, "too few mutated pages stayed valid");
    cr_assert_gt(rejected[2] + rejected[3], 500, "too few mutated pages were rejected");
    cr_assert_gt(accepted[4], 100);
    cr_assert_gt(rejected[4], 100);
    cr_assert_gt(rejected[1], 1000);
    cr_assert_gt(hint_rejects, 300, "too few bad hints");
    cr_assert_gt(order_rejects, 50, "too few versions out of order");
    cr_assert_gt(version_accepts, 300, "too few valid leaves with versions");
    cr_assert_gt(clog_accepts, 100);
    cr_assert_gt(clog_rejects, 100);
    cr_assert_gt(dir_accepts, 50, "too few valid commit-log directories");
    cr_assert_gt(dir_rejects, 50, "too few bad commit-log directories");
}
