/*
 * test_page_hash_is_one_pass.c -- the page hash (engine/checksum.h, format.h
 * "The page hash") and the one pass that checks a page and codes its cells
 * (kvprot.h kv_compute_checked).
 *
 * Proves:
 *   - every implementation the CPU has (AVX-512, PCLMULQDQ, portable C)
 *     gives the same sum and parity for any span of any page;
 *   - sums are linear: spans that tile a range xor to the range's sum, so
 *     a pass may sum a page cell by cell;
 *   - page_checksum is format.h's definition, computed here from format.h
 *     alone (keys, carry-less products, the polynomial, the finalizer);
 *   - no one- or two-bit change anywhere in a page of any size leaves the
 *     sum unchanged (the map's columns are non-zero and distinct);
 *   - the load pass gives page_checksum's checksum for every page that
 *     passes its structure check (leaves, internal pages, a leaf with dead
 *     cells, pages without slots) and the codes kv_compute gives, with
 *     every implementation, and never reads outside a page of garbage.
 */
#include "page_helpers.h"

#include "checksum.h"
#include "kvprot.h"

/* ---- format.h's definition, from format.h alone ---------------------------------- */

static uint64_t def_clmul_mod(uint64_t a, uint64_t b) {
    uint64_t lo = 0, hi = 0;
    for (int i = 0; i < 64; i++)
        if (a >> i & 1) {
            lo ^= b << i;
            hi ^= i ? b >> (64 - i) : 0;
        }
    /* long division by x^64 + PAGE_HASH_POLY, from the top bit down */
    for (int i = 63; i >= 0; i--)
        if (hi >> i & 1) {
            hi ^= 1ull << i;
            hi ^= i ? PAGE_HASH_POLY >> (64 - i) : 0;
            lo ^= PAGE_HASH_POLY << i;
        }
    return lo;
}
static uint64_t def_fmix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    k *= 0xC4CEB9FE1A85EC53ull;
    return k ^ k >> 33;
}
static uint64_t def_key(unsigned j) {
    uint64_t x = PAGE_HASH_KEY_SEED, z = 0;
    for (unsigned i = 0; i <= j; i++) {
        z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
    }
    return z;
}
static uint64_t def_checksum(const uint8_t *p, size_t ps, uint64_t block) {
    static uint64_t keys[PAGE_HASH_KEYS];
    if (!keys[1])
        for (unsigned j = 0; j < PAGE_HASH_KEYS; j++) keys[j] = def_key(j);
    uint64_t s = 0;
    for (size_t j = PAGE_CHECKSUM_FROM / 8; j < ps / 8; j++) s ^= def_clmul_mod(fmt_get64(p + 8 * j), keys[j]);
    uint64_t seed = ((uint64_t)0 << PAGE_SEED_FILE_SHIFT) ^ block;
    uint64_t h = def_fmix(s ^ def_fmix(seed ^ PAGE_HASH_SEED_MIX));
    return h ? h : 1;
}

/* ---- helpers --------------------------------------------------------------------- */

static int impls[3], nimpl;
static void find_impls(void) {
    nimpl = 0;
    for (int i = CS_IMPL_SCALAR; i <= CS_IMPL_AVX512; i++)
        if (cs_have_impl(i)) impls[nimpl++] = i;
}

static unsigned naive_parity(const uint8_t *p, uint32_t lo, uint32_t hi) {
    unsigned x = 0;
    for (uint32_t i = lo; i < hi; i++) x ^= p[i];
    return (unsigned)__builtin_parity(x);
}

static void fill_random(uint8_t *p, size_t ps) {
    for (size_t i = 0; i < ps; i++) p[i] = (uint8_t)rnd();
}

/* ---- the sums ----------------------------------------------------------------------- */

Test(page_hash, every_implementation_gives_the_same_sums) {
    rng = 0x5eed01;
    find_impls();
    cr_assert_geq(nimpl, 1);
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        fill_random(p, ps);
        for (int t = 0; t < 6000; t++) {
            uint32_t lo = below((unsigned)ps + 1), hi = lo + below((unsigned)(ps - lo) + 1);
            if (t % 7 == 0) { /* short spans */
                uint32_t n = below(70);
                hi = lo + n < ps ? lo + n : (uint32_t)ps;
            }
            unsigned p0, pi;
            uint64_t want = cs_span_impl(CS_IMPL_SCALAR, p, lo, hi, &p0);
            cr_assert_eq(p0, naive_parity(p, lo, hi), "parity of [%u, %u)", lo, hi);
            for (int k = 0; k < nimpl; k++) {
                uint64_t got = cs_span_impl(impls[k], p, lo, hi, &pi);
                cr_assert_eq(got, want, "impl %d, page %zu, span [%u, %u): %016llx, scalar %016llx", impls[k], ps, lo,
                             hi, (unsigned long long)got, (unsigned long long)want);
                cr_assert_eq(pi, p0, "impl %d, span [%u, %u): parity", impls[k], lo, hi);
            }
        }
        guarded_free(p, ps);
    }
}

Test(page_hash, spans_that_tile_a_range_xor_to_its_sum) {
    rng = 0x5eed02;
    const size_t ps = 16384;
    uint8_t *p = guarded_page(ps);
    fill_random(p, ps);
    for (int t = 0; t < 3000; t++) {
        uint32_t lo = below(ps + 1), hi = lo + below((unsigned)(ps - lo) + 1), at = lo;
        uint64_t x = 0;
        while (at < hi) {
            uint32_t n = 1 + below(hi - at < 300 ? hi - at : 300);
            x ^= cs_span(p, at, at + n, NULL);
            at += n;
        }
        cr_assert_eq(x, cs_span(p, lo, hi, NULL), "[%u, %u) cut in pieces", lo, hi);
    }
    guarded_free(p, ps);
}

Test(page_hash, checksum_is_the_definition_in_format_h) {
    rng = 0x5eed03;
    find_impls();
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        for (int t = 0; t < 4; t++) {
            if (t == 0)
                memset(p, 0, ps);
            else if (t == 1)
                build_leaf(p, ps, 9);
            else
                fill_random(p, ps);
            uint64_t block = t == 3 ? 0xFFFFFFFFu : rnd() % 100000;
            uint64_t want = def_checksum(p, ps, block);
            for (int k = 0; k < nimpl; k++) {
                int before = cs_set_impl(impls[k]);
                cr_assert_eq(page_checksum(p, ps, block), want, "impl %d, page %zu, case %d", impls[k], ps, t);
                cs_set_impl(before);
            }
        }
        guarded_free(p, ps);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The sum is linear: a change D to word j changes it by D * K_j mod P.
 * A one-bit change (bit a of word j) changes it by column x^a * K_j; a
 * two-bit change by the xor of two columns.  All columns non-zero and
 * distinct: no one- or two-bit change cancels, anywhere in the largest
 * page (the smaller ones use a prefix of the keys). */
Test(page_hash, no_one_or_two_bit_change_anywhere_cancels) {
    const unsigned words = PAGE_SIZE_MAX / 8, first = PAGE_CHECKSUM_FROM / 8;
    size_t n = (size_t)(words - first) * 64;
    uint64_t *col = malloc(n * sizeof *col);
    cr_assert(col);
    size_t k = 0;
    for (unsigned j = first; j < words; j++) {
        cr_assert_eq(cs_key(j), def_key(j), "key %u", j);
        for (unsigned a = 0; a < 64; a++) col[k++] = cs_gf_mul(1ull << a, cs_key(j));
    }
    qsort(col, n, sizeof *col, cmp_u64);
    cr_assert_neq(col[0], 0, "a one-bit change leaves the sum as it was");
    for (size_t i = 1; i < n; i++) cr_assert_neq(col[i], col[i - 1], "two one-bit changes cancel");
    free(col);
}

/* ---- the load pass -------------------------------------------------------------------- */

/* The pages the pass is tried on, built into P: a leaf, a full leaf of
 * 255-byte cells, the same with a dead cell (ph_frag > 0), an internal
 * page, the meta page and an overflow-like page without slots. */
static void build_case(uint8_t *p, size_t ps, int which) {
    static char key[40], val[232];
    switch (which) {
    case 0: build_leaf(p, ps, 5); break;
    case 1:
    case 2:
        page_init(p, ps, 5, PAGE_LEAF, 0);
        for (unsigned i = 0;; i++) {
            snprintf(key, sizeof key, "key%029u", i);
            memset(val, 'a' + (int)(i % 26), sizeof val);
            if (page_reclaimable(p) < LEAF_CELL_HDR + 32 + sizeof val + 2) break;
            put_leaf(p, ps, key, 32, val, sizeof val, 0, 0);
        }
        if (which == 2) page_remove_cell(p, 3);
        break;
    case 3: build_internal(p, ps, 5); break;
    case 4: build_meta(p, ps); break;
    default:
        page_init(p, ps, 5, PAGE_OVERFLOW, 0);
        fill_random(p + PAGE_HDR, ps - PAGE_HDR);
        ph_set_aux(p, (uint32_t)(ps - PAGE_HDR));
    }
}

Test(page_hash, the_load_pass_gives_the_checksum_and_the_codes) {
    rng = 0x5eed04;
    find_impls();
    static const unsigned widths[] = {1, 2, 4, 8};
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        for (int which = 0; which < 6; which++) {
            build_case(p, ps, which);
            const uint64_t block = which == 4 ? 0 : 5;
            page_problem pr;
            cr_assert_eq(page_check_structure(p, ps, &pr), ENG_OK, "case %d: %s", which, pr.detail);
            cr_assert(which != 2 || ph_get_frag(p) > 0);
            const uint64_t want = page_checksum(p, ps, block);
            for (unsigned wi = 0; wi < 4; wi++) {
                const unsigned w = widths[wi];
                kv_codes ref = {0};
                int before = cs_set_impl(CS_IMPL_SCALAR);
                kv_compute(&ref, p, (uint32_t)ps, w, NULL);
                cs_set_impl(before);
                for (int k = 0; k < nimpl; k++) {
                    kv_codes c = {0};
                    uint64_t sum = 0, e, g;
                    int32_t entry;
                    before = cs_set_impl(impls[k]);
                    kv_compute_checked(&c, p, (uint32_t)ps, w, (uint32_t)block, &sum, NULL);
                    cr_assert_eq(sum, want, "page %zu, case %d, w=%u, impl %d: checksum", ps, which, w, impls[k]);
                    cr_assert_eq(c.n, ref.n);
                    cr_assert_eq(c.page, ref.page, "case %d, w=%u, impl %d: page code", which, w, impls[k]);
                    cr_assert_eq(memcmp(c.code, ref.code, (size_t)c.n * w), 0, "case %d, w=%u, impl %d: codes", which,
                                 w, impls[k]);
                    cr_assert_eq(kv_check_all(&c, p, (uint32_t)ps, w, &entry, &e, &g, NULL), 0,
                                 "case %d, w=%u, impl %d: entry %d", which, w, impls[k], entry);
                    cs_set_impl(before);
                    kv_free(&c);
                }
                kv_free(&ref);
            }
        }
        guarded_free(p, ps);
    }
}

/* Garbage in a guarded page: whatever its header, slots and lengths say,
 * the pass reads nothing outside the page (a read past either end
 * faults), with every implementation. */
Test(page_hash, the_load_pass_never_reads_outside_a_page_of_garbage) {
    rng = 0x5eed05;
    find_impls();
    for (unsigned s = 0; s < 3; s++) {
        const size_t ps = page_sizes[s];
        uint8_t *p = guarded_page(ps);
        for (int t = 0; t < 300; t++) {
            fill_random(p, ps);
            p[PH_TYPE_OFF] = (uint8_t)(t % 2 ? PAGE_LEAF : PAGE_INTERNAL);
            if (t % 3 == 0) ph_set_nslots(p, (uint16_t)below(400));
            if (t % 5 == 0) ph_set_frag(p, 0);
            for (int k = 0; k < nimpl; k++) {
                kv_codes c = {0};
                uint64_t sum;
                int before = cs_set_impl(impls[k]);
                kv_compute_checked(&c, p, (uint32_t)ps, 1 + (unsigned)(t % 8 == 0) * 7, 3, &sum, NULL);
                cs_set_impl(before);
                kv_free(&c);
            }
        }
        guarded_free(p, ps);
    }
}
