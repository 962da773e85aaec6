/*
 * test_page_checksum_and_cells_round_trip.c -- the checksum catches every
 * single-bit flip and is bound to its block (P4), a zero page is judged
 * against the high-water mark (P5), and the cell encoders, meta page and
 * empty-page layout round-trip.
 *
 * Part of the page suite (once test_page.c); the helpers it shares
 * with the other test_page_*.c files are in page_helpers.h.
 */
#include "page_helpers.h"

/* ---- checksums (P4) ------------------------------------------------------- */

Test(page_checksum, every_single_bit_flip_is_detected) {
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
            if (first_miss < 0) first_miss = (int)bit;
        }
        /* Outside ph_checksum the computed value itself must move. */
        if (bit >= 64 && page_checksum(p, ps, 7) == good) same_hash++;
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    cr_assert_eq(misses, 0, "%d flips missed, first at bit %d", misses, first_miss);
    cr_assert_eq(same_hash, 0);
    cr_assert_eq(page_verify(p, ps, 7, 100, 1, &z, &pr), ENG_OK);
    guarded_free(p, ps);
}

Test(page_checksum, depends_on_block_and_is_never_zero) {
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        build_leaf(p, ps, 3);
        uint64_t prev = page_checksum(p, ps, 0);
        for (uint64_t b = 1; b < 2000; b++) {
            uint64_t h = page_checksum(p, ps, b);
            cr_assert_neq(h, 0);
            cr_assert_neq(h, prev, "blocks %llu and %llu hash alike", (unsigned long long)b - 1, (unsigned long long)b);
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

Test(page_checksum, page_copied_to_another_block_fails) {
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

Test(page_verify, zero_page_against_high_water_mark) {
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

Test(page_verify, null_outputs_are_allowed) {
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    cr_assert_eq(page_verify(p, ps, 1, 5, 1, NULL, NULL), ENG_CORRUPTION);
    cr_assert_eq(page_verify(p, ps, 5, 5, 1, NULL, NULL), ENG_OK);
    cr_assert_eq(page_check_structure(p, ps, NULL), ENG_CORRUPTION);
    guarded_free(p, ps);
}

/* ---- encoders, decoders, meta --------------------------------------------- */

Test(page_cells, encode_decode_round_trip) {
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

Test(page_cells, meta_round_trip_and_type_names) {
    const size_t ps = 4096;
    uint8_t *p = guarded_page(ps);
    meta_fields m = {.magic = META_MAGIC, .root = 3, .nblocks = 9, .freelist = 8, .height = 2, .clog_pages = 2}, r;
    page_problem pr;

    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
    wr32(p + META_CLOG_OFF, 4);
    wr32(p + META_CLOG_OFF + 4, 8);
    meta_read(p, &r);
    /* Field by field: the struct's tail padding is not part of the format. */
    cr_assert(m.magic == r.magic && m.root == r.root && m.nblocks == r.nblocks && m.freelist == r.freelist &&
              m.height == r.height && m.clog_pages == r.clog_pages);
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

Test(page_cells, init_lays_out_an_empty_page) {
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
        for (size_t i = PAGE_HDR; i < ps; i++) cr_assert_eq(p[i], 0);
        /* A cell may end exactly at the end of a 16 KiB page (upper = 16384). */
        put_leaf(p, ps, "k", 1, "v", 1, 0, 0);
        cr_assert_eq(ph_get_upper(p), ps - (LEAF_CELL_HDR + 2));
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);

        /* The hint area's sizes as format.h states them, and room for a
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
