/*
 * test_kvprot_unique_keys_flag_is_bound_to_the_page_code.c -- the leaf flag
 * that lets a found key skip its left bracket (engine/kvprot.h KV1u) is
 * right, and it cannot be trusted wrongly:
 *   - a leaf whose keys all differ gets KV_UNIQUE_KEYS; one with two
 *     versions of a key anywhere (first, middle or last pair) does not,
 *     nor does an internal page;
 *   - flipping the flag in memory, or any single bit of the stored page
 *     code, fails the page check at every width (the flag flips the
 *     code's parity bit), and the same flip on the flag of a leaf that
 *     really is unique fails it too;
 *   - the codes of a page are still the codes: every entry checks right
 *     after kv_compute, whatever the flag.
 * Pages are built in memory with page.c's own encoders (no database).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kvprot.h"
#include "page.h"

#define PS 4096u

/* A leaf of N keys "k%04d" (KEYS[i]), values of 40 bytes. */
static void build_leaf(uint8_t *page, const int *keys, unsigned n) {
    page_init(page, PS, 7, PAGE_LEAF, 0);
    for (unsigned i = 0; i < n; i++) {
        char k[16], v[40];
        snprintf(k, sizeof k, "k%04d", keys[i]);
        memset(v, 'a' + (int)(i % 26), sizeof v);
        uint8_t cell[128];
        size_t sz = leaf_cell_encode(cell, k, strlen(k), sizeof v, v, 0, 0, 100 + i, 0);
        page_insert_cell(page, PS, i, cell, sz);
    }
}

static const unsigned widths[] = {1, 2, 4, 8};

static void expect_all_entries_right(const kv_codes *c, const uint8_t *page, unsigned w, unsigned n) {
    uint64_t e, g;
    for (unsigned i = 0; i < n; i++)
        cr_assert_eq(kv_check_entry(c, page, PS, w, i, &e, &g, NULL), 0, "w=%u entry %u fails right after coding", w,
                     i);
}

Test(kvprot_unique, a_leaf_of_distinct_keys_is_flagged_and_one_with_a_repeated_key_is_not) {
    static const int distinct[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
    static const int rep_first[] = {1, 1, 3, 5, 8, 13, 21, 34, 55, 89};
    static const int rep_mid[] = {1, 2, 3, 5, 8, 8, 21, 34, 55, 89};
    static const int rep_last[] = {1, 2, 3, 5, 8, 13, 21, 34, 89, 89};
    const int *cases[] = {distinct, rep_first, rep_mid, rep_last};
    for (unsigned wi = 0; wi < 4; wi++) {
        unsigned w = widths[wi];
        for (unsigned k = 0; k < 4; k++) {
            uint8_t page[PS];
            build_leaf(page, cases[k], 10);
            kv_codes c = {0};
            kv_compute(&c, page, PS, w, NULL);
            cr_assert_eq(kv_flags(&c) & KV_UNIQUE_KEYS, k == 0 ? KV_UNIQUE_KEYS : 0u, "w=%u case %u: unique flag %u", w,
                         k, kv_flags(&c));
            uint64_t e, g;
            cr_assert_eq(kv_check_page(&c, page, PS, w, &e, &g, NULL), 0, "w=%u case %u: page check", w, k);
            expect_all_entries_right(&c, page, w, 10);
            kv_free(&c);
        }
    }
}

Test(kvprot_unique, an_internal_page_is_never_flagged) {
    uint8_t page[PS];
    page_init(page, PS, 9, PAGE_INTERNAL, 1);
    for (unsigned i = 0; i < 8; i++) {
        char k[16];
        snprintf(k, sizeof k, "s%04u", i * 10);
        uint8_t cell[64];
        size_t sz = internal_cell_encode(cell, k, strlen(k), 100 + i);
        page_insert_cell(page, PS, i, cell, sz);
    }
    kv_codes c = {0};
    kv_compute(&c, page, PS, 4, NULL);
    cr_assert_eq(kv_flags(&c), 0u);
    kv_free(&c);
}

Test(kvprot_unique, a_flipped_flag_or_page_code_bit_fails_the_page_check_at_every_width) {
    static const int distinct[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
    static const int repeated[] = {1, 2, 3, 5, 8, 8, 21, 34, 55, 89};
    for (unsigned wi = 0; wi < 4; wi++) {
        unsigned w = widths[wi];
        for (int rep = 0; rep < 2; rep++) {
            uint8_t page[PS];
            build_leaf(page, rep ? repeated : distinct, 10);
            kv_codes c = {0};
            kv_compute(&c, page, PS, w, NULL);
            uint64_t e, g;
            /* The flag, flipped either way: a leaf with a repeated key
             * claiming uniqueness is the dangerous direction (its found
             * key would skip the bracket that proves it is the newest). */
            c.flags ^= KV_UNIQUE_KEYS;
            cr_assert_eq(kv_check_page(&c, page, PS, w, &e, &g, NULL), 1, "w=%u %s leaf: flipped flag passed", w,
                         rep ? "repeated-key" : "unique");
            c.flags ^= KV_UNIQUE_KEYS;
            for (int bit = 0; bit < 32; bit++) {
                c.page ^= 1u << bit;
                cr_assert_eq(kv_check_page(&c, page, PS, w, &e, &g, NULL), 1, "w=%u: page code bit %d flipped passed",
                             w, bit);
                c.page ^= 1u << bit;
            }
            cr_assert_eq(kv_check_page(&c, page, PS, w, &e, &g, NULL), 0);
            kv_free(&c);
        }
    }
}

Test(kvprot_unique, recoding_after_a_change_follows_the_keys) {
    /* A put of a second version makes a unique leaf non-unique; the
     * codes made after the change (KV3) say so, and removing it again
     * brings the flag back. */
    static const int keys[] = {1, 2, 3, 5, 8, 13, 21, 34};
    uint8_t page[PS];
    build_leaf(page, keys, 8);
    kv_codes c = {0};
    kv_compute(&c, page, PS, 2, NULL);
    cr_assert_eq(kv_flags(&c), KV_UNIQUE_KEYS);
    uint8_t cell[128];
    char v[40];
    memset(v, 'z', sizeof v);
    size_t sz = leaf_cell_encode(cell, "k0005", 5, sizeof v, v, 0, 0, 500, 0);
    page_insert_cell(page, PS, 3, cell, sz); /* the newer version, before the old one */
    kv_compute(&c, page, PS, 2, NULL);
    cr_assert_eq(kv_flags(&c), 0u);
    expect_all_entries_right(&c, page, 2, 9);
    page_remove_cell(page, 3);
    kv_compute(&c, page, PS, 2, NULL);
    cr_assert_eq(kv_flags(&c), KV_UNIQUE_KEYS);
    kv_free(&c);
}
