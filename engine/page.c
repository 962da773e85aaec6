/*
 * page.c -- the page decoders and slotted-page edits.
 *
 * The byte layout and invariants P1-P5 are drawn in page.h.  This file adds
 * the rules the decoders enforce beyond them, so that a page that passes
 * page_check_structure can be walked by page_leaf_cell / page_internal_cell /
 * page_search without another bounds check:
 *
 *   PS1  type is PAGE_META..PAGE_FREE (PAGE_ZERO is never a stored type)
 *   PS2  leaf: level 0; internal: level >= 1 and ph_aux (leftmost child) != 0
 *   PS3  each cell: 1 <= klen <= ENG_MAX_KEY, header and body inside
 *        [upper, page_size); leaf cflags only CELL_OVERFLOW, an overflow cell
 *        carries exactly a u32 block != 0; internal child != 0
 *   PS4  cells never overlap (two slots sharing a cell count as overlap)
 *   PS5  ph_frag == (page_size - upper) - sum of live cell sizes, exactly:
 *        page_reclaimable() is then the truth and an insert that trusted it
 *        cannot write over a live cell
 *   PS6  meta, overflow and free pages have no slots; meta: magic matches,
 *        nblocks >= 2, 0 < root < nblocks, freelist < nblocks, height >= 1;
 *        overflow: ph_aux (payload bytes) <= page_size - PAGE_HDR
 *
 * Nothing here trusts a page byte before it is checked: with data_checksums
 * off a page may hold anything, and the answer to nonsense is
 * ENG_CORRUPTION with a report, never a crash or an assert.  Asserts guard
 * only what callers promise (page sizes, insert room, slot indexes).
 *
 * page_insert_cell / page_remove_cell / page_compact keep PS5 exact, so a
 * page that was valid stays valid through any sequence of them.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

#include "page.h"

#define CELL_FLAGS_KNOWN CELL_OVERFLOW
#define OVFL_PTR_BYTES   4u

static int page_size_ok(size_t page_size) { return page_size == 4096 || page_size == 8192 || page_size == 16384; }

static int problem(page_problem *pr, int layer, int32_t entry, int64_t offset, uint64_t expected, uint64_t found,
                   const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Fill *PR and return ENG_CORRUPTION, so every check reads as one line. */
static int problem(page_problem *pr, int layer, int32_t entry, int64_t offset, uint64_t expected, uint64_t found,
                   const char *fmt, ...) {
    va_list ap;

    pr->layer = layer;
    pr->entry = entry;
    pr->offset = offset;
    pr->expected = expected;
    pr->found = found;
    va_start(ap, fmt);
    vsnprintf(pr->detail, sizeof pr->detail, fmt, ap);
    va_end(ap);
    return ENG_CORRUPTION;
}

/* ---- verification ------------------------------------------------------ */

/* page_verify, with the checksum of the page at BLOCK taken from
 * *COMPUTED when not NULL (a pass that read the bytes already computed it)
 * instead of hashing the page here. */
static int verify(const uint8_t *page, size_t page_size, uint64_t block, uint64_t hwm, int checksums,
                  const uint64_t *computed_sum, int *is_zero, page_problem *pr) {
    page_problem scratch;
    int zero_scratch;
    uint64_t stored, computed;
    uint32_t written_for;

    if (!pr) pr = &scratch;
    if (!is_zero) is_zero = &zero_scratch;
    *is_zero = 0;
    assert(page_size_ok(page_size));
    if (!page_size_ok(page_size))
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, -1, 0, page_size, "unsupported page size %zu", page_size);

    /* P5: first, because a zero page fails every later check and the
     * high-water mark alone tells a hole from a lost write. */
    if (page_is_zero(page, page_size)) {
#ifdef ENG_BROKEN_ZERO_PAGE_LAST_BLOCK_FRESH
        /* planted bug (tests/mutants.txt): off by one against the
         * high-water mark, so the last block ever written, read back all
         * zero (a lost write), passes as a never-written page. */
        if (block + 1 >= hwm) {
#else
        if (block >= hwm) {
#endif
            *is_zero = 1;
            return ENG_OK;
        }
        return problem(pr, ENG_LAYER_ZERO_PAGE, -1, 0, hwm, block,
                       "all-zero page at block %llu below the high-water mark %llu: "
                       "the block was written, its content is gone",
                       (unsigned long long)block, (unsigned long long)hwm);
    }

    if (checksums) {
        stored = ph_get_checksum(page);
        computed = computed_sum ? *computed_sum : page_checksum(page, page_size, block);
        if (stored != computed)
            return problem(pr, ENG_LAYER_PAGE_CHECKSUM, -1, 0, stored, computed,
                           stored == 0 ? "checksum not set (stored 0), computed %016llx%s"
                                       : "checksum mismatch: computed %016llx%s",
                           (unsigned long long)computed, stored == 0 ? " (page written with checksums off?)" : "");
    }

    /* P4 without checksums, and a second line of defence with them. */
    written_for = ph_get_block(page);
    if ((uint64_t)written_for != block)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_BLOCK_OFF, block, written_for,
                       "page written for block %u found at block %llu (misdirected write?)", written_for,
                       (unsigned long long)block);

    return page_check_structure(page, page_size, pr);
}

int page_verify(const uint8_t *page, size_t page_size, uint64_t block, uint64_t hwm, int checksums, int *is_zero,
                page_problem *pr) {
    return verify(page, page_size, block, hwm, checksums, NULL, is_zero, pr);
}

int page_verify_summed(const uint8_t *page, size_t page_size, uint64_t block, uint64_t hwm, int checksums,
                       uint64_t computed, int *is_zero, page_problem *pr) {
    return verify(page, page_size, block, hwm, checksums, &computed, is_zero, pr);
}

/* Claim bytes [LO, LO+N) of a page in bitmap BM; return 1 if any of them
 * already belonged to another cell.  A bitmap instead of sorting offsets
 * keeps the overlap check linear and its buffer 2 KiB at most. */
static int claim_bytes(uint64_t *bm, size_t lo, size_t n) {
    size_t hi = lo + n - 1; /* inclusive; n >= 1 */
    size_t w0 = lo / 64, w1 = hi / 64;

    for (size_t w = w0; w <= w1; w++) {
        uint64_t m = ~0ull;
        if (w == w0) m &= ~0ull << (lo % 64);
        if (w == w1) m &= ~0ull >> (63 - hi % 64);
        if (bm[w] & m) return 1;
        bm[w] |= m;
    }
    return 0;
}

static int check_slotted(const uint8_t *page, size_t page_size, unsigned type, page_problem *pr) {
    const int leaf = type == PAGE_LEAF;
    const unsigned chdr = leaf ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
    const unsigned nslots = ph_get_nslots(page);
    const unsigned upper = ph_get_upper(page);
    const unsigned level = ph_get_level(page);
    uint64_t used[PAGE_SIZE_MAX / 64];
    const uint8_t *prev_key = NULL;
    size_t prev_klen = 0, live = 0, dead;
    unsigned frag;

    if (leaf && level != 0)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_LEVEL_OFF, 0, level,
                       "leaf page at level %u (leaves are level 0)", level);
    if (!leaf && level == 0)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_LEVEL_OFF, 1, 0, "internal page at level 0");
    if (!leaf && ph_get_aux(page) == 0)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_AUX_OFF, 1, 0,
                       "internal page without a leftmost child (ph_aux = 0)");

    memset(used, 0, page_size / 8);
    uint64_t prev_xmin = 0;
    if (leaf) {
        /* Hints: a valid state per slot, nothing beyond the last slot. */
        for (unsigned i = 0; i < LEAF_HINT_BYTES(page_size) * 2u; i++) {
            unsigned h = page_hint(page, i);
            if (i < nslots ? !hint_valid(h) : h != 0)
                return problem(pr, ENG_LAYER_VERSION, i < nslots ? (int32_t)i : -1, PAGE_HDR + i / 2, 0, h,
                               "slot %u: hint bits 0x%x are not a valid state%s", i, h,
                               i < nslots ? "" : " (beyond the last slot)");
        }
    }
    for (unsigned i = 0; i < nslots; i++) {
        const int64_t slot_off = page_base_for((int)type, page_size) + 2 * (int64_t)i;
        const unsigned off = page_slot(page, i);
        unsigned klen;
        uint64_t size; /* 64 bits: a garbage vlen must not wrap the sum */
        const uint8_t *key;

        if (off < upper || (size_t)off + chdr > page_size)
            return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, slot_off, upper, off,
                           "slot %u points to offset %u, outside the cell area [%u, %zu) (P2)", i, off, upper,
                           page_size);
        klen = rd16(page + off);
        if (klen == 0 || klen > ENG_MAX_KEY)
            return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off, ENG_MAX_KEY, klen,
                           "slot %u: key length %u not in 1..%u", i, klen, ENG_MAX_KEY);
        if (leaf) {
            const unsigned cflags = page[off + 2];
            const uint32_t vlen = rd32(page + off + 3);
            if (cflags & ~CELL_FLAGS_KNOWN)
                return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off + 2, CELL_FLAGS_KNOWN, cflags,
                               "slot %u: unknown cell flags 0x%02x", i, cflags);
            size = (uint64_t)LEAF_CELL_HDR + klen + ((cflags & CELL_OVERFLOW) ? OVFL_PTR_BYTES : (uint64_t)vlen);
            if (off + size > page_size)
                return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off, page_size - off, size,
                               "slot %u: %s cell of %llu bytes (klen %u, vlen %u) at offset %u "
                               "runs past the page end (P2)",
                               i, (cflags & CELL_OVERFLOW) ? "overflow" : "leaf", (unsigned long long)size, klen, vlen,
                               off);
            if ((cflags & CELL_OVERFLOW) && rd32(page + off + LEAF_CELL_HDR + klen) == 0)
                return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off + LEAF_CELL_HDR + klen, 1, 0,
                               "slot %u: overflow cell points to block 0", i);
        } else {
            size = (uint64_t)INTERNAL_CELL_HDR + klen;
            if (off + size > page_size)
                return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off, page_size - off, size,
                               "slot %u: internal cell of %llu bytes at offset %u runs past "
                               "the page end (P2)",
                               i, (unsigned long long)size, off);
            if (rd32(page + off + 2) == 0)
                return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off + 2, 1, 0,
                               "slot %u: internal cell points to child block 0", i);
        }
        if (claim_bytes(used, off, (size_t)size))
            return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off, 0, off,
                           "slot %u: cell at offset %u (%llu bytes) overlaps another cell", i, off,
                           (unsigned long long)size);
        live += (size_t)size;

        key = page + off + chdr;
        if (leaf) {
            const uint64_t xmin = rd64(page + off + LEAF_XMIN_OFF);
            int c = prev_key ? key_cmp(prev_key, prev_klen, key, klen) : -1;
            if (c > 0)
                return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off, 0, 0,
                               "slot %u: key smaller than slot %u's (P3)", i, i - 1);
            if (c == 0 && !(xmin < prev_xmin || (xmin == 0 && prev_xmin == 0)))
                return problem(pr, ENG_LAYER_VERSION, (int32_t)i, off + LEAF_XMIN_OFF, prev_xmin, xmin,
                               "slot %u: version of the same key as slot %u not older (xmin %llu after %llu) (P3)", i,
                               i - 1, (unsigned long long)xmin, (unsigned long long)prev_xmin);
            prev_xmin = xmin;
        } else if (prev_key && key_cmp(prev_key, prev_klen, key, klen) >= 0) {
            return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, off, 0, 0,
                           "slot %u: key not greater than slot %u's (P3)", i, i - 1);
        }
        prev_key = key;
        prev_klen = klen;
    }

    /* Cells lie inside [upper, page_size) without overlap, so live fits. */
    dead = page_size - upper - live;
    frag = ph_get_frag(page);
    if (frag != dead)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_FRAG_OFF, dead, frag,
                       "ph_frag %u but %zu bytes of the cell area are dead", frag, dead);
    return ENG_OK;
}

static int check_meta(const uint8_t *page, size_t page_size, page_problem *pr) {
    meta_fields m;

    meta_read(page, &m);
    if (m.magic != META_MAGIC)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, META_OFF_MAGIC, META_MAGIC, m.magic,
                       "meta page magic %016llx, expected %016llx", (unsigned long long)m.magic,
                       (unsigned long long)META_MAGIC);
    if (m.nblocks < 2)
        return problem(pr, ENG_LAYER_STRUCTURE, -1, META_OFF_NBLOCKS, 2, m.nblocks,
                       "meta nblocks %u < 2 (meta and root at least)", m.nblocks);
    if (m.root == 0 || m.root >= m.nblocks)
        return problem(pr, ENG_LAYER_STRUCTURE, -1, META_OFF_ROOT, m.nblocks, m.root, "meta root %u not in 1..%u",
                       m.root, m.nblocks - 1);
    if (m.freelist >= m.nblocks)
        return problem(pr, ENG_LAYER_STRUCTURE, -1, META_OFF_FREELIST, m.nblocks, m.freelist,
                       "meta freelist head %u beyond nblocks %u", m.freelist, m.nblocks);
    if (m.height < 1) return problem(pr, ENG_LAYER_STRUCTURE, -1, META_OFF_HEIGHT, 1, 0, "meta tree height 0");
    if (m.clog_pages > META_CLOG_CAP(page_size))
        return problem(pr, ENG_LAYER_STRUCTURE, -1, META_OFF_CLOGN, META_CLOG_CAP(page_size), m.clog_pages,
                       "meta commit-log directory claims %u pages, room for %zu", m.clog_pages,
                       (size_t)META_CLOG_CAP(page_size));
    for (unsigned i = 0; i < m.clog_pages; i++) {
        uint32_t b = meta_clog_block(page, i);
        if (b <= m.root || b >= m.nblocks)
            return problem(pr, ENG_LAYER_STRUCTURE, (int32_t)i, META_CLOG_OFF + 4 * i, m.nblocks, b,
                           "meta commit-log page %u at block %u, outside 2..%u", i, b, m.nblocks - 1);
    }
    return ENG_OK;
}

static int check_clog(const uint8_t *page, size_t page_size, page_problem *pr) {
    /* Status 3 is no status: a flipped bit with checksums off. */
    for (size_t off = PAGE_HDR; off < page_size; off++) {
        uint8_t b = page[off];
        for (int k = 0; k < 4; k++)
            if (((b >> (2 * k)) & 3u) == 3u)
                return problem(pr, ENG_LAYER_VERSION, -1, (int64_t)off, 0, b,
                               "commit-log byte %zu holds status 3 (none such)", off);
    }
    return ENG_OK;
}

int page_check_structure(const uint8_t *page, size_t page_size, page_problem *pr) {
    page_problem scratch;
    unsigned type, nslots, lower, upper;

    if (!pr) pr = &scratch;
    assert(page_size_ok(page_size));
    if (!page_size_ok(page_size))
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, -1, 0, page_size, "unsupported page size %zu", page_size);

    type = ph_get_type(page);
    if (type == PAGE_ZERO)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_TYPE_OFF, PAGE_META, type,
                       page_is_zero(page, page_size) ? "all-zero page: never written, no structure"
                                                     : "page type 0 (never written) on a page with non-zero bytes");
    if (type > PAGE_TYPE_MAX)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_TYPE_OFF, PAGE_TYPE_MAX, type, "unknown page type %u", type);

    /* P1, for every type: page_init lays out all pages alike. */
    nslots = ph_get_nslots(page);
    lower = ph_get_lower(page);
    upper = ph_get_upper(page);
    if (upper > page_size)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_UPPER_OFF, page_size, upper,
                       "ph_upper %u beyond the page size %zu (P1)", upper, page_size);
    const unsigned base = page_base_for((int)type, page_size);
#ifdef ENG_BROKEN_FULL_PAGE_FAILS_HEADER_CHECK
    /* planted bug (tests/mutants.txt): >= instead of >, so a slotted page
     * filled to its last byte (ph_lower == ph_upper, no free space) fails
     * P1 as a damaged header. */
    if (lower < base || lower >= upper)
#else
    if (lower < base || lower > upper)
#endif
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_LOWER_OFF, base, lower,
                       "ph_lower %u not in [%u, ph_upper %u] (P1)", lower, base, upper);
    if (lower != base + 2 * nslots)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_NSLOTS_OFF, base + 2 * nslots, lower,
                       "ph_lower %u does not match %u slots (P1)", lower, nslots);

    switch (type) {
    case PAGE_LEAF:
    case PAGE_INTERNAL: return check_slotted(page, page_size, type, pr);
    default: break;
    }

    if (nslots != 0)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_NSLOTS_OFF, 0, nslots, "%s page with %u slots",
                       page_type_name((int)type), nslots);
    if (type == PAGE_META) return check_meta(page, page_size, pr);
    if (type == PAGE_CLOG) return check_clog(page, page_size, pr);
    if (type == PAGE_OVERFLOW && ph_get_aux(page) > page_size - PAGE_HDR)
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_AUX_OFF, page_size - PAGE_HDR, ph_get_aux(page),
                       "overflow page claims %u payload bytes, room for %zu", ph_get_aux(page), page_size - PAGE_HDR);
    if (type == PAGE_FREE && ph_get_aux(page) > FREE_TRUNK_CAP(page_size))
        return problem(pr, ENG_LAYER_PAGE_HEADER, -1, PH_AUX_OFF, FREE_TRUNK_CAP(page_size), ph_get_aux(page),
                       "free-list trunk claims %u entries, room for %zu", ph_get_aux(page),
                       (size_t)FREE_TRUNK_CAP(page_size));
    return ENG_OK;
}

/* ---- cells --------------------------------------------------------------- */

void page_leaf_cell(const uint8_t *page, unsigned slot, leaf_cell *c) {
    const uint8_t *p = page + page_slot(page, slot);

    c->klen = rd16(p);
    c->cflags = p[2];
    c->vlen = rd32(p + 3);
    c->xmin = rd64(p + LEAF_XMIN_OFF);
    c->xmax = rd64(p + LEAF_XMAX_OFF);
    c->key = p + LEAF_CELL_HDR;
    if (c->cflags & CELL_OVERFLOW) {
        c->val = NULL;
        c->ovfl = rd32(c->key + c->klen);
        c->size = (uint16_t)(LEAF_CELL_HDR + c->klen + OVFL_PTR_BYTES);
    } else {
        c->val = c->key + c->klen;
        c->ovfl = 0;
        c->size = (uint16_t)(LEAF_CELL_HDR + c->klen + c->vlen);
    }
}

void page_internal_cell(const uint8_t *page, unsigned slot, internal_cell *c) {
    const uint8_t *p = page + page_slot(page, slot);

    c->klen = rd16(p);
    c->child = rd32(p + 2);
    c->key = p + INTERNAL_CELL_HDR;
    c->size = (uint16_t)(INTERNAL_CELL_HDR + c->klen);
}

const uint8_t *page_cell_bytes(const uint8_t *page, unsigned idx, size_t *size) {
    const uint8_t *p = page + page_slot(page, idx);
    size_t klen = rd16(p);

    switch (ph_get_type(page)) {
    case PAGE_LEAF: *size = leaf_cell_size(klen, rd32(p + 3), p[2] & CELL_OVERFLOW); return p;
    case PAGE_INTERNAL: *size = internal_cell_size(klen); return p;
    default: *size = 0; return NULL;
    }
}

size_t leaf_cell_encode(uint8_t *buf, const void *key, size_t klen, uint32_t vlen, const void *val, int overflow,
                        uint32_t ovfl_block, uint64_t xmin, uint64_t xmax) {
    assert(klen >= 1 && klen <= ENG_MAX_KEY);
    wr16(buf, (uint16_t)klen);
    buf[2] = overflow ? CELL_OVERFLOW : 0;
    wr32(buf + 3, vlen);
    wr64(buf + LEAF_XMIN_OFF, xmin);
    wr64(buf + LEAF_XMAX_OFF, xmax);
    memcpy(buf + LEAF_CELL_HDR, key, klen);
    if (overflow)
        wr32(buf + LEAF_CELL_HDR + klen, ovfl_block);
    else if (vlen) /* val may be NULL for an empty value */
        memcpy(buf + LEAF_CELL_HDR + klen, val, vlen);
    return leaf_cell_size(klen, vlen, overflow);
}

size_t internal_cell_encode(uint8_t *buf, const void *key, size_t klen, uint32_t child) {
    assert(klen >= 1 && klen <= ENG_MAX_KEY);
    wr16(buf, (uint16_t)klen);
    wr32(buf + 2, child);
    memcpy(buf + INTERNAL_CELL_HDR, key, klen);
    return internal_cell_size(klen);
}

/* ---- edits ------------------------------------------------------------- */

void page_init(uint8_t *page, size_t page_size, uint64_t block, int type, int level) {
    assert(page_size_ok(page_size));
    memset(page, 0, page_size);
    ph_set_block(page, (uint32_t)block);
    ph_set_type(page, (uint8_t)type);
    ph_set_level(page, (uint16_t)level);
    ph_set_lower(page, (uint16_t)page_base_for(type, page_size));
    ph_set_upper(page, (uint16_t)page_size); /* 16384 still fits a u16 */
}

unsigned page_search(const uint8_t *page, const void *key, size_t klen, int *exact) {
    return page_search_side(page, key, klen, exact, NULL, 0);
}

unsigned page_search_side(const uint8_t *page, const void *key, size_t klen, int *exact, const uint8_t *side,
                          unsigned stride) {
    const unsigned chdr = ph_get_type(page) == PAGE_LEAF ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
    unsigned lo = 0, hi = ph_get_nslots(page);
    int found = 0;

    /* SIDE's lines for the whole page, when they are few (a leaf's codes
     * are 2 to 4 lines): asked for before the first probe, their misses
     * overlap the search's own. */
    if (side && (size_t)hi * stride <= 256) {
        for (size_t o = 0; o <= (size_t)hi * stride; o += 64) __builtin_prefetch(side + o);
        side = NULL;
    }
    while (lo < hi) {
        /* Once the range fits one cache line of SIDE, start loading it:
         * the probes left hide the miss. */
        if (side && (size_t)(hi - lo) * stride <= 64) {
            __builtin_prefetch(side + (size_t)lo * stride);
            __builtin_prefetch(side + (size_t)hi * stride);
            side = NULL;
        }
        const unsigned mid = lo + (hi - lo) / 2;
        const uint8_t *c = page + page_slot(page, mid);
        const int cmp = key_cmp(c + chdr, rd16(c), key, klen);
        if (cmp < 0) {
            lo = mid + 1;
        } else {
            /* Whether the entry at hi equals KEY: the answer is lo == hi,
             * so "exact" speaks of the entry returned.  (An equal entry met
             * anywhere else is not the answer when a damaged key in the
             * cache breaks the order, and callers verify only the entries
             * around the position they get: kvprot.h KV1.) */
            found = cmp == 0;
            hi = mid;
        }
    }
    if (exact) *exact = found;
    return lo;
}

void page_insert_cell(uint8_t *page, size_t page_size, unsigned idx, const uint8_t *cell, size_t size) {
    const unsigned n = ph_get_nslots(page);
    unsigned upper;

    assert(idx <= n);
    assert(page_reclaimable(page) >= size + 2);
    /* Compaction moves cells: a source inside the page would be stale. */
    assert((uintptr_t)cell + size <= (uintptr_t)page || (uintptr_t)cell >= (uintptr_t)page + page_size);
    if (page_free(page) < size + 2) page_compact(page, page_size);

    upper = ph_get_upper(page) - (unsigned)size;
    memcpy(page + upper, cell, size);
    const unsigned base = page_slot_base(page);
    memmove(page + base + 2 * (idx + 1), page + base + 2 * idx, 2 * (size_t)(n - idx));
    wr16(page + base + 2 * idx, (uint16_t)upper);
    if (ph_get_type(page) == PAGE_LEAF) {
        /* Hints follow their slots: shift up, the new version has none. */
        for (unsigned i = n; i > idx; i--) page_hint_set(page, i, page_hint(page, i - 1));
        page_hint_set(page, idx, HINT_NONE);
    }
    ph_set_nslots(page, (uint16_t)(n + 1));
    ph_set_lower(page, (uint16_t)(ph_get_lower(page) + 2));
    ph_set_upper(page, (uint16_t)upper);
}

void page_remove_cell(uint8_t *page, unsigned idx) {
    const unsigned n = ph_get_nslots(page);
    size_t size;

    assert(idx < n);
    page_cell_bytes(page, idx, &size);
    const unsigned base = page_slot_base(page);
    memmove(page + base + 2 * idx, page + base + 2 * (idx + 1), 2 * (size_t)(n - idx - 1));
    if (ph_get_type(page) == PAGE_LEAF) {
        /* planted bug (tests/mutants.txt): the #ifndef below leaves the
         * vacated nibble of the old last slot set, a hint beyond the last
         * slot. */
        for (unsigned i = idx; i + 1 < n; i++) page_hint_set(page, i, page_hint(page, i + 1));
#ifndef ENG_BROKEN_REMOVE_CELL_KEEPS_LAST_HINT
        page_hint_set(page, n - 1, HINT_NONE);
#endif
    }
    ph_set_nslots(page, (uint16_t)(n - 1));
    ph_set_lower(page, (uint16_t)(ph_get_lower(page) - 2));
    ph_set_frag(page, (uint16_t)(ph_get_frag(page) + size));
}

void page_compact(uint8_t *page, size_t page_size) {
    /* Per thread so concurrent writers on different pages never share it;
     * static so a 16 KiB page costs no stack and no malloc. */
    static _Thread_local uint8_t tmp[PAGE_SIZE_MAX];
    const unsigned n = ph_get_nslots(page);
    const unsigned lower = ph_get_lower(page);
    const unsigned base = page_slot_base(page);
    size_t pos = page_size;

    assert(page_size_ok(page_size));
    for (unsigned i = 0; i < n; i++) {
        size_t size;
        const uint8_t *c = page_cell_bytes(page, i, &size);
        assert(pos >= lower + size);
        pos -= size;
        memcpy(tmp + pos, c, size);
        wr16(page + base + 2 * i, (uint16_t)pos);
    }
    memcpy(page + pos, tmp + pos, page_size - pos);
    /* Zeroed free space keeps no stale bytes and compresses in FPIs. */
    memset(page + lower, 0, pos - lower);
    ph_set_upper(page, (uint16_t)pos);
    ph_set_frag(page, 0);
}

/* ---- meta page ----------------------------------------------------------- */

void meta_read(const uint8_t *page, meta_fields *m) {
    m->magic = rd64(page + META_OFF_MAGIC);
    m->root = rd32(page + META_OFF_ROOT);
    m->nblocks = rd32(page + META_OFF_NBLOCKS);
    m->freelist = rd32(page + META_OFF_FREELIST);
    m->height = rd32(page + META_OFF_HEIGHT);
    m->clog_pages = rd32(page + META_OFF_CLOGN);
}

/* Writes M->magic as given (callers set META_MAGIC), so tests can craft a
 * bad one through the same path. */
void meta_write(uint8_t *page, const meta_fields *m) {
    wr64(page + META_OFF_MAGIC, m->magic);
    wr32(page + META_OFF_ROOT, m->root);
    wr32(page + META_OFF_NBLOCKS, m->nblocks);
    wr32(page + META_OFF_FREELIST, m->freelist);
    wr32(page + META_OFF_HEIGHT, m->height);
    wr32(page + META_OFF_CLOGN, m->clog_pages);
}

const char *page_type_name(int type) {
    static const char *const names[] = {
        [PAGE_ZERO] = "zero",         [PAGE_META] = "meta", [PAGE_LEAF] = "leaf", [PAGE_INTERNAL] = "internal",
        [PAGE_OVERFLOW] = "overflow", [PAGE_FREE] = "free", [PAGE_CLOG] = "clog",
    };
    if (type < 0 || type > PAGE_TYPE_MAX) return "unknown";
    return names[type];
}
