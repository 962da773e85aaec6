/*
 * test_page_damage_is_rejected.c -- page_check_structure rejects each kind
 * of crafted damage and names it, in the documented order; random garbage
 * never makes a decoder read outside the page, and every accept/reject
 * agrees with an independent reference checker.
 *
 * Part of the page suite (once test_page.c); the helpers it shares
 * with the other test_page_*.c files are in page_helpers.h.
 */
#include "page_helpers.h"

/* ---- crafted damage --------------------------------------------------------- */

/* build_leaf's slots: 0 alpha, 1 bravo, 2 charlie, 3 delta, 4 echo (overflow). */
/* Where a leaf of PS bytes keeps slot I: after the header and hint area. */
#define SLOT(ps, i) (LEAF_SLOT_BASE(ps) + 2 * (i))

static uint8_t *fresh_leaf(size_t ps) {
    uint8_t *p = guarded_page(ps);
    page_problem pr;
    build_leaf(p, ps, 1);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
    return p;
}

Test(page_structure, rejects_bad_slots_and_cells) {
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

Test(page_structure, rejects_overlap_and_order) {
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

Test(page_structure, rejects_bad_header_fields) {
    const size_t ps = 8192;
    uint8_t *p;

    page_problem pr;

/* A fresh leaf damaged by the statements after WHAT must be refused as a
 * page-header problem whose detail holds WORD. */
#define LEAF_CASE(word, what, ...)                                \
    do {                                                          \
        p = fresh_leaf(ps);                                       \
        __VA_ARGS__;                                              \
        expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, word, what); \
        guarded_free(p, ps);                                      \
    } while (0)

    static const uint8_t bad_types[] = {PAGE_TYPE_MAX + 1, 0x80, 0xff};
    for (unsigned i = 0; i < sizeof bad_types; i++)
        LEAF_CASE("unknown page type", "type out of range", ph_set_type(p, bad_types[i]));
    LEAF_CASE("type 0", "type 0 with bytes", ph_set_type(p, PAGE_ZERO));
    LEAF_CASE("P1", "upper past the end", ph_set_upper(p, (uint16_t)(ps + 1)));
    LEAF_CASE("P1", "lower inside the header", ph_set_nslots(p, 0); ph_set_lower(p, PAGE_HDR - 2));

    /* A leaf's slots cannot start inside its hint area... */
    LEAF_CASE("P1", "leaf slots over the hint area", ph_set_nslots(p, 0); ph_set_lower(p, PAGE_HDR));
    LEAF_CASE("P1", "leaf slot array one slot early", /* 5 slots from one short */
              ph_set_lower(p, (uint16_t)(ph_get_lower(p) - 2 * 5 - 2)));

    /* ... and an internal page keeps no hint area: a leaf's base is wrong there. */
    p = guarded_page(ps);
    build_internal(p, ps, 2);
    ph_set_lower(p, (uint16_t)(LEAF_SLOT_BASE(ps) + 2 * 3));
    expect_bad(p, ps, ENG_LAYER_PAGE_HEADER, -1, "P1", "internal slots after a hint area");
    guarded_free(p, ps);

    /* A leaf relabelled as another type no longer matches its layout. */
    LEAF_CASE("P1", "leaf relabelled internal", ph_set_type(p, PAGE_INTERNAL); ph_set_level(p, 1); ph_set_aux(p, 5));
    LEAF_CASE("P1", "leaf relabelled clog", ph_set_type(p, PAGE_CLOG));

    LEAF_CASE("P1", "lower above upper", ph_set_lower(p, (uint16_t)(ph_get_upper(p) + 2)));
    LEAF_CASE("P1", "nslots disagrees with lower", ph_set_nslots(p, 4));
    LEAF_CASE("P1", "nslots 65535", ph_set_nslots(p, 0xffff));
    LEAF_CASE("level", "leaf at level 1", ph_set_level(p, 1));
    LEAF_CASE("ph_frag", "frag too big", ph_set_frag(p, (uint16_t)(ph_get_frag(p) + 1)));
    LEAF_CASE("ph_frag", "dead bytes not counted", page_remove_cell(p, 2);
              cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail); ph_set_frag(p, 0));
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

Test(page_structure, rejects_bad_meta_overflow_free) {
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    meta_fields m;
    page_problem pr;

    build_meta(p, ps);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

#define META_CASE(field, value, layer, word)                             \
    do {                                                                 \
        build_meta(p, ps);                                               \
        meta_read(p, &m);                                                \
        m.field = value;                                                 \
        meta_write(p, &m);                                               \
        expect_bad(p, ps, layer, -1, word, "meta " #field " = " #value); \
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

Test(page_verify, checks_run_in_the_documented_order) {
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
 * hand-rolled key order, literal offsets and sizes from format.h's drawing,
 * on purpose not its constants) so that the two must agree on every page. */
static int ref_key_less(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    for (size_t i = 0; i < al && i < bl; i++)
        if (a[i] != b[i]) return a[i] < b[i];
    return al < bl;
}

/* Bytes of a leaf's hint area, as format.h lists them. */
static unsigned ref_hint_bytes(size_t ps) { return ps == 4096 ? 80 : ps == 8192 ? 160 : 320; }

/* The five hint states: 0, 3, 5, 6, 9. */
static int ref_hint_ok(unsigned h) { return (0x0269u >> h) & 1u; }

static int ref_valid(const uint8_t *p, size_t ps) {
    static uint8_t owner[MAX_PS];
    unsigned type = p[20], n = rd16(p + 22), lower = rd16(p + 24), upper = rd16(p + 26);
    unsigned frag = rd16(p + 28), level = rd16(p + 30);
    uint32_t aux = rd32(p + 36);

    if (type < 1 || type > 6) return 0;
    unsigned base = type == 2 ? 40 + ref_hint_bytes(ps) : 40;
    if (lower < base || lower > upper || upper > ps || lower != base + 2 * n) return 0;
    if (type != 2 && type != 3) {
        if (n != 0) return 0;
        if (type == 4) /* overflow: aux payload bytes */
            return aux <= ps - 40;
        if (type == 5) /* a free-list trunk: aux entries of 4 bytes */
            return aux <= (ps - 40) / 4;
        if (type == 6) { /* commit log: no 2-bit status may be 3 */
            for (size_t b = 40; b < ps; b++)
                for (unsigned k = 0; k < 8; k += 2)
                    if (((p[b] >> k) & 3) == 3) return 0;
            return 1;
        }
        /* meta */
        uint32_t root = rd32(p + 48), nb = rd32(p + 52), fl = rd32(p + 56), h = rd32(p + 60);
        uint32_t nclog = rd32(p + 64);
        if (!(rd64(p + 40) == META_MAGIC && nb >= 2 && root >= 1 && root < nb && fl < nb && h >= 1)) return 0;
        if (nclog > (ps - 68) / 4) return 0;
        for (uint32_t i = 0; i < nclog; i++) {
            uint32_t b = rd32(p + 68 + 4 * i);
            if (b <= root || b >= nb) return 0;
        }
        return 1;
    }
    int leaf = type == 2;
    if (leaf ? level != 0 : (level == 0 || aux == 0)) return 0;
    if (leaf) /* nibble i of the area belongs to slot i; unused ones are 0 */
        for (unsigned i = 0; i < 2 * ref_hint_bytes(ps); i++) {
            unsigned h = (p[40 + i / 2] >> (4 * (i % 2))) & 15;
            if (i < n ? !ref_hint_ok(h) : h != 0) return 0;
        }
    memset(owner, 0, ps);
    size_t live = 0;
    const uint8_t *pk = NULL;
    size_t pkl = 0;
    uint64_t pxmin = 0;
    const size_t hdr = leaf ? 23 : 6;
    for (unsigned i = 0; i < n; i++) {
        size_t off = rd16(p + base + 2 * i);
        if (off < upper || off + hdr > ps) return 0;
        size_t kl = rd16(p + off);
        if (kl < 1 || kl > 1024) return 0;
        uint64_t sz;
        if (leaf) {
            uint8_t fl = p[off + 2];
            if (fl > 1) return 0;
            sz = 23 + kl + (fl ? 4 : (uint64_t)rd32(p + off + 3));
            if (off + sz > ps) return 0;
            if (fl && rd32(p + off + 23 + kl) == 0) return 0;
        } else {
            sz = 6 + kl;
            if (off + sz > ps || rd32(p + off + 2) == 0) return 0;
        }
        for (size_t b = off; b < off + sz; b++) {
            if (owner[b]) return 0;
            owner[b] = 1;
        }
        live += sz;
        const uint8_t *k = p + off + hdr;
        if (pk && !ref_key_less(pk, pkl, k, kl)) {
            /* Not increasing: only a leaf's next version of the same key,
             * older than the one before (or both frozen). */
            uint64_t xmin = rd64(p + off + 7);
            if (!leaf || ref_key_less(k, kl, pk, pkl)) return 0;
            if (!(xmin < pxmin || (xmin == 0 && pxmin == 0))) return 0;
        }
        if (leaf) pxmin = rd64(p + off + 7);
        pk = k;
        pkl = kl;
    }
    return frag == ps - upper - live;
}

/* A random valid leaf or internal page, filled by random edits; a leaf
 * gets versions of some keys and hint bits on some slots. */
static void random_valid_page(uint8_t *p, size_t ps, int leaf, uint32_t block) {
    static uint8_t cell[MAX_PS];
    static mentry e;
    page_init(p, ps, block, leaf ? PAGE_LEAF : PAGE_INTERNAL, leaf ? 0 : 1 + (int)below(3));
    if (!leaf) ph_set_aux(p, 1 + (uint32_t)below(100));
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
        unsigned idx = leaf ? version_slot(p, e.key, e.klen, e.xmin, &exact) : page_search(p, e.key, e.klen, &exact);
        if ((exact && !(leaf && e.xmin == 0)) || page_reclaimable(p) < sz + 2) {
            misses++;
            continue;
        }
        page_insert_cell(p, ps, idx, cell, sz);
        if (below(4) == 0) page_remove_cell(p, below(ph_get_nslots(p)));
        if (leaf && ph_get_nslots(p) > 0 && below(2) == 0)
            page_hint_set(p, below(ph_get_nslots(p)), hint_states[below(5)]);
    }
}

/* A random valid meta (sometimes with a commit-log directory), overflow,
 * free-list or commit-log page. */
static void random_other_page(uint8_t *p, size_t ps, uint32_t block) {
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
            for (unsigned k = 0; k < 4; k++) clog_set(p, (b - PAGE_HDR) * 4 + k, (unsigned)((r >> (8 * k)) % 3));
        }
    } else if (t == 1) {
        page_init(p, ps, block, PAGE_OVERFLOW, 0);
        ph_set_aux(p, below((unsigned)(ps - PAGE_HDR + 1)));
        for (unsigned i = 0; i < ph_get_aux(p); i++) p[PAGE_HDR + i] = (uint8_t)rnd();
    } else {
        page_init(p, ps, block, PAGE_FREE, 0);
        ph_set_next(p, (uint32_t)rnd());
    }
}

/* Everything a caller may do with a page that passed the check must stay
 * inside it, and edits must keep it valid. */
static void exercise_accepted(uint8_t *p, size_t ps, unsigned iter) {
    page_problem pr;
    unsigned type = ph_get_type(p), n = ph_get_nslots(p);
    static uint8_t cell[MAX_PS];
    if (type != PAGE_LEAF && type != PAGE_INTERNAL) return;
    for (unsigned i = 0; i < n; i++) {
        size_t sz;
        const uint8_t *c = page_cell_bytes(p, i, &sz);
        cr_assert(c >= p + ph_get_upper(p) && c + sz <= p + ps, "iter %u slot %u", iter, i);
        if (type == PAGE_LEAF) {
            leaf_cell lc;
            page_leaf_cell(p, i, &lc);
            cr_assert_eq(lc.size, sz);
            cr_assert(lc.key + lc.klen <= p + ps);
            if (lc.val) cr_assert(lc.val + lc.vlen <= p + ps);
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
            if (key_cmp(pc + chdr, rd16(pc), key, rd16(c)) != 0) break;
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
        for (unsigned i = 0; leaf && i < n; i++) hints[i] = page_hint(p, i);
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
            if (leaf) cr_assert_eq(page_hint(p, last + 1), HINT_NONE, "iter %u: new slot's hint", iter);
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
            if (key_cmp(nc.key, nc.klen, lc.key, lc.klen) != 0) break;
            lc = nc;
            after++;
        }
        const uint8_t *src = page_cell_bytes(p, after - 1, &sz);
        if (page_reclaimable(p) >= sz + 2) {
            memcpy(cell, src, sz);
            wr64(cell + LEAF_XMIN_OFF, lc.xmin ? lc.xmin - 1 : 0);
            for (unsigned i = 0; i < nn; i++) hints[i] = page_hint(p, i);
            page_insert_cell(p, ps, after, cell, sz);
            cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after a version: %s", iter, pr.detail);
            for (unsigned i = 0; i <= nn; i++)
                cr_assert_eq(page_hint(p, i),
                             i < after    ? hints[i]
                             : i == after ? 0u
                                          : hints[i - 1],
                             "iter %u: hint %u after a version at %u", iter, i, after);
        }
    }
    const unsigned nn = ph_get_nslots(p);
    for (unsigned i = 0; leaf && i < nn; i++) hints[i] = page_hint(p, i);
    page_compact(p, ps);
    cr_assert_eq(check(p, ps, &pr), ENG_OK, "iter %u after compact: %s", iter, pr.detail);
    for (unsigned i = 0; leaf && i < nn; i++)
        cr_assert_eq(page_hint(p, i), hints[i], "iter %u: hint %u after compact", iter, i);
}

Test(page_structure, random_garbage_never_crashes_and_agrees_with_reference) {
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
            for (size_t i = 0; i < ps; i++) p[i] = (uint8_t)rnd();
            break;
        case 1: /* noise under a plausible header */
            for (size_t i = 0; i < ps; i++) p[i] = (uint8_t)rnd();
            {
                unsigned n = below(40);
                const unsigned t = 1 + below(PAGE_TYPE_MAX), base = page_base_for((int)t, ps);
                ph_set_type(p, (uint8_t)t);
                ph_set_nslots(p, (uint16_t)n);
                ph_set_lower(p, (uint16_t)(base + 2 * n));
                ph_set_upper(p, (uint16_t)(base + 2 * n + below((unsigned)(ps - base - 2 * n + 1))));
                ph_set_level(p, (uint16_t)below(2));
                for (unsigned i = 0; i < n; i++)
                    wr16(p + base + 2 * i, (uint16_t)(ph_get_upper(p) + below((unsigned)(ps - ph_get_upper(p) + 8))));
                /* Mostly valid hints, so the noise reaches the cells. */
                if (t == PAGE_LEAF && below(8)) {
                    memset(p + PAGE_HDR, 0, LEAF_HINT_BYTES(ps));
                    for (unsigned i = 0; i < n; i++) page_hint_set(p, i, hint_states[below(5)]);
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
                if (xmin_at && below(4) == 0) at = xmin_at + (below(4) ? 0 : below(8));
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
        cr_assert_eq(rc == ENG_OK, ref, "iter %u kind %u: page.c says %s (%s), reference %s", iter, kind,
                     rc == ENG_OK ? "valid" : "corrupt", a.detail, ref ? "valid" : "corrupt");
        cr_assert_eq(rc, rc2);
        if (rc != ENG_OK) {
            cr_assert(a.layer == b.layer && a.entry == b.entry && a.offset == b.offset && a.expected == b.expected &&
                          a.found == b.found && strcmp(a.detail, b.detail) == 0,
                      "iter %u: two answers", iter);
            cr_assert(a.layer >= 0 && a.layer < ENG_LAYER_COUNT);
            cr_assert(a.offset >= -1 && a.offset < (int64_t)ps, "iter %u: offset %lld", iter, (long long)a.offset);
            /* entry names a slot, or on a meta page a commit-log directory
             * index (check_meta's reports), or nothing (-1). */
            const int32_t entries =
                ph_get_type(p) == PAGE_META ? (int32_t)META_CLOG_CAP(ps) : (int32_t)ph_get_nslots(p);
            cr_assert(a.entry >= -1 && a.entry < entries, "iter %u: entry %d of %d", iter, a.entry, entries);
            if (ph_get_type(p) == PAGE_META && a.entry >= 0)
                cr_assert(a.entry < (int32_t)rd32(p + PAGE_HDR + 24), "iter %u: entry %d", iter, a.entry);
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
