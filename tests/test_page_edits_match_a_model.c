/*
 * test_page_edits_match_a_model.c -- insert / remove / compact keep P1-P3
 * and the exact frag accounting (PS5 in page.c) through random operations
 * checked against a model, at every page size and on leaf and internal
 * pages.
 *
 * Part of the page suite (once test_page.c); the helpers it shares
 * with the other test_page_*.c files are in page_helpers.h.
 */
#include "page_helpers.h"

/* ---- random edits against a model ----------------------------------------- */

/* Model position of E's key: first entry whose key is >= it (what
 * page_search answers), *exact if equal. */
static unsigned model_search(const mentry *m, unsigned n, const mentry *e, int *exact) {
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
static unsigned model_version_search(const mentry *m, unsigned n, const mentry *e, int *exact) {
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
static void compare_with_model(const uint8_t *p, size_t ps, int leaf, const mentry *m, unsigned n, unsigned op) {
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
            cr_assert_eq(page_hint(p, i), e->hint, "op %u slot %u: hint did not follow its slot", op, i);
            cr_assert_eq(c.size, mentry_size(e, 1));
            if (e->ovfl) {
                cr_assert_eq(c.cflags, CELL_OVERFLOW);
                cr_assert_eq(c.ovfl, e->ref);
            } else {
                cr_assert_eq(c.cflags, 0);
                for (size_t j = 0; j < e->vlen; j++)
                    if (c.val[j] != val_byte(e, j)) cr_assert_fail("op %u slot %u: value byte %zu", op, i, j);
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
    /* PS5: the accounting is exact, so reclaimable is the truth. */
    cr_assert_eq(page_reclaimable(p), ps - page_base_for(leaf ? PAGE_LEAF : PAGE_INTERNAL, ps) - 2 * (size_t)n - live,
                 "op %u", op);
}

static void run_model(size_t ps, int leaf, uint64_t seed, unsigned ops) {
    uint8_t *p = guarded_page(ps);
    static uint8_t cell[MAX_PS];
    mentry *m = calloc(ps / 8, sizeof *m), e; /* cells are >= 8 bytes */
    unsigned n = 0, full_hits = 0, compactions_in_insert = 0, max_n = 0, versions = 0;
    int filling = 1;
    page_problem pr;

    cr_assert_not_null(m);
    rng = seed;
    page_init(p, ps, 9, leaf ? PAGE_LEAF : PAGE_INTERNAL, leaf ? 0 : 2);
    if (!leaf) ph_set_aux(p, 4);

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
            if (n <= 2) filling = 1;
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
                if (++full_hits % 4 == 0) filling = 0;
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
            if (n > max_n) max_n = n;
            if (leaf && idx + 1 < n && key_cmp(m[idx].key, m[idx].klen, m[idx + 1].key, m[idx + 1].klen) == 0)
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
                while (first > 0 && key_cmp(m[first - 1].key, m[first - 1].klen, m[i].key, m[i].klen) == 0) first--;
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
    if (leaf) cr_assert_gt(versions, 100, "the run rarely stacked versions of one key");
    free(m);
    guarded_free(p, ps);
}

Test(page_edits, random_ops_leaf_4k) { run_model(4096, 1, 1, 20000); }
Test(page_edits, random_ops_leaf_8k) { run_model(8192, 1, 2, 20000); }
Test(page_edits, random_ops_leaf_16k) { run_model(16384, 1, 3, 20000); }
Test(page_edits, random_ops_internal_4k) { run_model(4096, 0, 4, 20000); }
Test(page_edits, random_ops_internal_8k) { run_model(8192, 0, 5, 20000); }
Test(page_edits, random_ops_internal_16k) { run_model(16384, 0, 6, 20000); }
