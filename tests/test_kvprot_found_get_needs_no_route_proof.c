/*
 * test_kvprot_found_get_needs_no_route_proof.c -- a get that finds its key
 * proves its answer by the leaf entry it read (engine/kvprot.h KV1f, KV1u,
 * KV2v): on the way down it checks each internal page's code and the entry
 * whose child it follows, not the separator to the right of it.  What that
 * must never cost:
 *   - a flipped separator that does not steer a get leaves its answer
 *     right (the key and its value are proven in the leaf);
 *   - one that steers a get away from its key is reported: the get finds
 *     no key there and descends again with every check, so the answer is
 *     never "not found" for a key that exists;
 *   - a flipped separator is still reported by the scan over it, and the
 *     database reopens intact.
 * Each round flips one bit of the key of root entry s (s >= 1) and reads
 * every key of the children left and right of it.
 */
#include "kvprot_helpers.h"

KV_WIDTH_TEST(a_flipped_separator_never_misroutes_a_get_into_a_wrong_answer) {
    eng_db *db = fixture_open_warm(w);
    tu_rng r = {0x726f757465ull + (uint64_t)w};
    uint8_t page[PS];
    frame_copy(db, 1, page);
    cr_assert_eq(ph_get_type(page), PAGE_INTERNAL);
    unsigned n = ph_get_nslots(page);
    cr_assert_geq(n, 4);
    uint64_t reported = 0, right = 0;
    eng_buf b = {0};
    for (int round = 0; round < 12; round++) {
        unsigned s = 1 + (unsigned)tu_below(&r, n - 1);
        internal_cell c;
        page_internal_cell(page, s, &c);
        size_t off = (size_t)(c.key - page) + tu_below(&r, c.klen);
        int bit = (int)tu_below(&r, 8);
        /* the keys of entries s - 1 and s: from the separator before s - 1
         * (or the first key) up to the separator after s */
        internal_cell lo, hi;
        page_internal_cell(page, s - 1, &lo);
        int ex;
        size_t from = tu_model_lb(&F.m, lo.key, lo.klen, &ex), to = F.m.n;
        if (s + 1 < n) {
            page_internal_cell(page, s + 1, &hi);
            to = tu_model_lb(&F.m, hi.key, hi.klen, &ex);
        }
        flip f = flip_bit(db, 1, off, bit);
        for (size_t pos = from; pos < to; pos++) {
            const tu_kv *kv = &F.m.a[pos];
            tu_reports_reset(&F.rep);
            int rc = eng_get(db, kv->k, kv->kl, &b);
            cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION,
                      "[w=%d round %d] bit %d of byte %zu (separator %u): get of model key %zu returned %s", w, round,
                      bit, off, s, pos, eng_strerror(rc));
            if (rc == ENG_OK) {
                cr_assert(tu_bytes_eq(b.data, b.len, kv->v, kv->vl),
                          "[w=%d round %d] separator %u flipped: get of model key %zu returned a WRONG value", w, round,
                          s, pos);
                right++;
            } else {
                cr_assert(has_kvp_report(1, -1) || has_kvp_report(1, (int32_t)s),
                          "[w=%d round %d] separator %u flipped: get of model key %zu failed without naming it", w,
                          round, s, pos);
                reported++;
            }
        }
        /* a scan over the separator's page names it */
        expect_scan_stops(db, 0, from, 1, "scan over the flipped separator");
        flip_undo(db, &f);
    }
    eng_buf_free(&b);
    /* some flips steered gets away from their keys: those were reported
     * (gets that found their keys are right, checked above) */
    cr_assert_gt(reported, 0, "no round's flip steered a get (w=%d; %llu right answers)", w, (unsigned long long)right);
    tu_close(db);
    reopen_check(w, "reopen after the separator flips");
}
