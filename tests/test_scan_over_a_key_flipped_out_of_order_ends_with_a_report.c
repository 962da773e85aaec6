/*
 * test_scan_over_a_key_flipped_out_of_order_ends_with_a_report.c -- with
 * no per-KV codes (w = 0), a key damaged in a cached leaf into one larger
 * than every key (a bit flipped in its first digit) breaks the leaf's
 * order.  A scan over it must end, with a structure report naming the
 * leaf, never return a key twice or out of order.
 *
 * Found by a shrink of the planted bug kv-absent-key-unchecked (a trial
 * at w = 0 with cache flips, 2026-12-02): the iterator's re-seek past the
 * leaf's last key landed, by binary search over the unsorted leaf, on the
 * damaged key again, and the settlement's scan printed "unexpected key"
 * until a repro's output reached 8 GB (bt_seek's lc_in_order).
 *
 * Uses the kvprot suite's fixture (kvprot_helpers.h) at width 0.
 */
#include "kvprot_helpers.h"

/* Flip bit 7 of the first digit of the key in the middle slot of the leaf
 * holding model key 1000: "k0000xxxx" becomes "k\xb0000xxxx", larger than
 * every key.  The middle slot is the first probe of a binary search over
 * the leaf. */
static flip damage_middle_key(eng_db *db, uint64_t *block, int *key) {
    uint8_t page[PS];
    int keys[512];
    *block = (uint64_t)F.leaf_of[1000];
    frame_copy(db, *block, page);
    unsigned n = leaf_keys(page, keys, 512);
    cr_assert_geq(n, 3u, "leaf %llu holds %u keys", (unsigned long long)*block, n);
    unsigned slot = n / 2;
    leaf_cell c;
    page_leaf_cell(page, slot, &c);
    *key = keys[slot];
    return flip_bit(db, *block, (size_t)(c.key - page) + 1, 7);
}

/* Scan the whole database (BACKWARD or not): it ends within the model's
 * size, each key strictly past the one before.  Returns the status that
 * ended it. */
static int scan_to_end(eng_db *db, int backward, size_t *seen) {
    eng_iter *it = NULL;
    eng_iter_options io = {0};
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    uint8_t prev[64];
    size_t prevl = 0;
    int rc;
    *seen = 0;
    for (rc = backward ? eng_iter_last(it) : eng_iter_first(it); rc == ENG_OK;
         rc = backward ? eng_iter_prev(it) : eng_iter_next(it)) {
        cr_assert_lt(*seen, (size_t)NKEYS, "the %s scan returned more keys than exist: it does not end",
                     backward ? "backward" : "forward");
        size_t kl;
        const uint8_t *k = eng_iter_key(it, &kl);
        cr_assert_leq(kl, sizeof prev);
        if (*seen) {
            int c = key_cmp(k, kl, prev, prevl);
            cr_assert(backward ? c < 0 : c > 0, "the %s scan returned a key out of order (entry %zu)",
                      backward ? "backward" : "forward", *seen);
        }
        memcpy(prev, k, kl);
        prevl = kl;
        (*seen)++;
    }
    eng_iter_close(it);
    return rc;
}

/* Open the fixture at w = 0, damage the middle key of a leaf, scan to the
 * end (BACKWARD or not) and close: the status that ended the scan; the
 * reports it made stay in F.rep. */
static int damaged_scan(int backward, uint64_t *block, int *key, size_t *seen) {
    eng_db *db = fixture_open_warm(0);
    flip f = damage_middle_key(db, block, key);
    tu_reports_reset(&F.rep);
    int rc = scan_to_end(db, backward, seen);
    flip_undo(db, &f);
    tu_close(db);
    return rc;
}

Test(scan_order, forward_scan_over_a_key_flipped_out_of_order_ends_with_a_structure_report, T_OPTS) {
    uint64_t block;
    int key;
    size_t seen;
    int rc = damaged_scan(0, &block, &key, &seen);
    char rs[4096];
    cr_assert_eq(rc, ENG_CORRUPTION, "the forward scan ended with %s after %zu keys", eng_strerror(rc), seen);
    cr_assert(has_layer_report(ENG_LAYER_STRUCTURE, (int64_t)block, -1),
              "no structure report names leaf %llu (key %d damaged):\n%s", (unsigned long long)block, key,
              tu_reports_str(&F.rep, rs, sizeof rs));
    cr_assert_lt(seen, (size_t)model_pos(key) + 1, "the scan went past the damaged key's leaf");
}

Test(scan_order, backward_scan_over_a_key_flipped_out_of_order_ends, T_OPTS) {
    uint64_t block;
    int key;
    size_t seen;
    int rc = damaged_scan(1, &block, &key, &seen);
    char rs[4096];
    cr_assert(rc == ENG_NOTFOUND || rc == ENG_CORRUPTION, "the backward scan ended with %s", eng_strerror(rc));
    if (rc == ENG_CORRUPTION)
        cr_assert(has_layer_report(ENG_LAYER_STRUCTURE, (int64_t)block, -1), "no structure report names leaf %llu:\n%s",
                  (unsigned long long)block, tu_reports_str(&F.rep, rs, sizeof rs));
}
