/*
 * test_page_versions_and_hints_keep_their_rules.c -- versions of one key
 * sit newest first, hint nibbles hold a valid state and follow their slots
 * through insert / remove / compact, commit-log pages hold no status 3, and
 * the meta page's commit-log directory points inside the file.
 *
 * Part of the page suite (once test_page.c); the helpers it shares
 * with the other test_page_*.c files are in page_helpers.h.
 */
#include "page_helpers.h"

/* ---- versions, hint bits, commit log, meta directory ------------------------ */

/* A leaf holding "a", then key "k" in VERSIONS (xmins, in slot order), then
 * "z": slot of the first "k" version is 1. */
static void build_versions(uint8_t *p, size_t ps, const uint64_t *xmins, unsigned n) {
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

Test(page_versions, versions_of_one_key_newest_first) {
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

Test(page_versions, invalid_hint_nibbles_are_rejected) {
    /* Valid states: even parity and one of the five named; the other even
     * codes (0xa, 0xc, 0xf) are unused, every odd-parity code is a flip. */
    static const int valid[16] = {[0x0] = 1, [0x3] = 1, [0x5] = 1, [0x6] = 1, [0x9] = 1};
    static const unsigned unused_even[] = {0xa, 0xc, 0xf};
    for (unsigned h = 0; h < 16; h++) cr_assert_eq(hint_valid(h), valid[h], "hint_valid(0x%x)", h);
    for (unsigned k = 0; k < 3; k++) cr_assert_eq(__builtin_parity(unused_even[k]), 0);

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
                    cr_assert_eq(check(p, ps, &pr), ENG_OK, "slot %u hint 0x%x: %s", slot, h, pr.detail);
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
static void hints_str(const uint8_t *p, char *out) {
    unsigned n = ph_get_nslots(p);
    for (unsigned i = 0; i < n; i++) out[i] = "0123456789abcdef"[page_hint(p, i)];
    out[n] = 0;
}

Test(page_versions, insert_and_remove_carry_hints_with_their_slots) {
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
        for (unsigned i = 5; i < 2 * LEAF_HINT_BYTES(ps); i++) cr_assert_eq(page_hint(p, i), 0, "nibble %u", i);
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
        while (ph_get_nslots(p) > 0) page_remove_cell(p, ph_get_nslots(p) / 2);
        for (unsigned i = 0; i < LEAF_HINT_BYTES(ps); i++) cr_assert_eq(p[PAGE_HDR + i], 0, "hint byte %u", i);
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

Test(page_versions, clog_page_rejects_status_3) {
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        page_problem pr;
        const size_t per = CLOG_PER_PAGE(ps);
        cr_assert_eq(per, (ps - PAGE_HDR) * 4);

        /* Every transaction's slot, first and last included, holds 0..2. */
        page_init(p, ps, 7, PAGE_CLOG, 0);
        ph_set_aux(p, 3); /* page 3 of the log */
        for (size_t x = 0; x < per; x++) clog_set(p, x, (unsigned)(x % 3));
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
static void build_meta_dir(uint8_t *p, size_t ps, uint32_t root, uint32_t nb, const uint32_t *dir, uint32_t n) {
    meta_fields m = {.magic = META_MAGIC, .root = root, .nblocks = nb, .freelist = 0, .height = 1, .clog_pages = n};
    page_init(p, ps, 0, PAGE_META, 0);
    meta_write(p, &m);
    for (uint32_t i = 0; i < n; i++) wr32(p + META_CLOG_OFF + 4 * i, dir[i]);
}

Test(page_versions, meta_clog_directory_inside_the_file) {
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
        for (uint32_t i = 0; i < cap; i++) dir[i] = 2 + i;
        cr_assert_leq(META_CLOG_OFF + 4 * (size_t)cap, ps);
        build_meta_dir(p, ps, 1, cap + 2, dir, cap);
        cr_assert_eq(check(p, ps, &pr), ENG_OK, "%s", pr.detail);
        dir[cap - 1] = cap + 2; /* the last entry, == nblocks */
        build_meta_dir(p, ps, 1, cap + 2, dir, cap);
        expect_bad(p, ps, ENG_LAYER_STRUCTURE, (int)cap - 1, "commit-log", "last entry out of range");
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
