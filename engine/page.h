/*
 * page.h -- on-disk page format, checksums and the page decoders.
 *
 * The byte layout of a page (header, hint area, slots, cells, the meta,
 * overflow, free-list and commit-log pages) is drawn in format.h, with its
 * offsets, types and sizes; this header adds what the engine does with
 * them.
 *
 * Invariants (numbered so tests can name them):
 *   P1  HDR <= lower <= upper <= page_size, lower == HDR + 2*nslots
 *   P2  every slot points to a cell that lies wholly inside [upper, size)
 *   P3  keys in slot order are strictly increasing (memcmp, shorter first);
 *       on leaves, non-decreasing, equal keys (versions) with strictly
 *       decreasing xmin (two frozen versions: both 0, allowed)
 *   P4  a page is valid only at its own block: the checksum is seeded with
 *       the block number and ph_block must equal it
 *   P5  an all-zero page is legal only at or beyond the durable high-water
 *       mark of blocks ever written
 */
#ifndef ENGINE_PAGE_H
#define ENGINE_PAGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode.h"
#include "engine.h"
#include "format.h"

static inline uint16_t rd16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline unsigned page_base_for(int type, size_t ps) {
    return type == PAGE_LEAF ? LEAF_SLOT_BASE((unsigned)ps) : PAGE_HDR;
}

/* ---- hint bits (one nibble per leaf slot) ----
 * Each state is an even-parity nibble (enum hint_state, format.h), so a
 * single flipped bit in the cache is never a valid state: 0 none, XMIN_C
 * xmin committed, XMIN_A xmin aborted (the version is dead), XMAX_C xmin
 * and xmax committed, XMAX_A xmin committed and xmax aborted. */
static inline int hint_valid(unsigned h) {
    return h == HINT_NONE || h == HINT_XMIN_C || h == HINT_XMIN_A || h == HINT_XMAX_C || h == HINT_XMAX_A;
}
/* leaf_hint_get (format.h), loaded atomically: readers set hints under a
 * shared latch while others read them. */
static inline unsigned page_hint(const uint8_t *p, unsigned slot) {
    uint8_t b = __atomic_load_n(p + PAGE_HDR + slot / 2u, __ATOMIC_RELAXED);
    return (slot & 1u) ? b >> 4 : b & 0xfu;
}
/* Set the hint of SLOT from OLD to NEW (readers race on one byte: CAS);
 * returns 1 if this call changed it. */
static inline int page_hint_cas(uint8_t *p, unsigned slot, unsigned old, unsigned nw) {
    uint8_t *b = p + PAGE_HDR + slot / 2u;
    unsigned sh = (slot & 1u) * 4u;
    uint8_t cur = __atomic_load_n(b, __ATOMIC_RELAXED);
    for (;;) {
        if (((cur >> sh) & 0xfu) != old) return 0;
        uint8_t want = (uint8_t)((cur & ~(0xfu << sh)) | (nw << sh));
        if (__atomic_compare_exchange_n(b, &cur, want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 1;
    }
}
/* Writer-only (exclusive latch): set without a race. */
static inline void page_hint_set(uint8_t *p, unsigned slot, unsigned h) {
    uint8_t *b = p + PAGE_HDR + slot / 2u;
    unsigned sh = (slot & 1u) * 4u;
    *b = (uint8_t)((*b & ~(0xfu << sh)) | (h << sh));
}

/* Memory order of keys: memcmp, shorter first on a common prefix. */
static inline int key_cmp(const void *a, size_t al, const void *b, size_t bl) {
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c) return c;
    return (al > bl) - (al < bl);
}

/* ---- checksums (checksum.c) ---- */

/* page_checksum and page_is_zero: decode.h.  Set the checksum of a page
 * about to be written to BLOCK. */
void page_set_checksum(uint8_t *page, size_t page_size, uint64_t block);

/* The decoders (page_verify, page_check_structure, the cell accessors,
 * meta_read, page_type_name) are declared in decode.h. */

/* Version order on a leaf: key ascending, then xmin descending. */
static inline int version_cmp(const void *a, size_t al, uint64_t ax, const void *b, size_t bl, uint64_t bx) {
    int c = key_cmp(a, al, b, bl);
    if (c) return c;
    return (ax < bx) - (ax > bx);
}

/* Size in bytes of a leaf cell holding KLEN key bytes and an inline value
 * of VLEN bytes (or an overflow pointer if OVERFLOW). */
static inline size_t leaf_cell_size(size_t klen, size_t vlen, int overflow) {
    return LEAF_CELL_HDR + klen + (overflow ? 4u : vlen);
}
static inline size_t internal_cell_size(size_t klen) { return INTERNAL_CELL_HDR + klen; }

/* Free bytes between the slot array and the cells, and total reclaimable
 * bytes (free + fragmented). */
static inline size_t page_free(const uint8_t *p) { return (size_t)ph_get_upper(p) - ph_get_lower(p); }
static inline size_t page_reclaimable(const uint8_t *p) { return page_free(p) + ph_get_frag(p); }

/* Initialize an empty page of TYPE at BLOCK. */
void page_init(uint8_t *page, size_t page_size, uint64_t block, int type, int level);

/* Binary search a leaf or internal page for KEY: returns the index of the
 * first slot whose key is >= KEY and sets *exact when that slot's key
 * equals KEY.  On a page whose order is damaged (a flipped key in the
 * cache) the two entries around the returned index are the ones the
 * search compared last, so verifying them proves the answer (kvprot.h KV1);
 * *exact never speaks of any other entry. */
unsigned page_search(const uint8_t *page, const void *key, size_t klen, int *exact);
/* The same, and once the range left fits one cache line of SIDE (an
 * array of STRIDE-byte items, one per slot, kept apart from the page: the
 * per-KV codes), starts loading that line, so the check after the search
 * finds it cached.  SIDE may be NULL. */
unsigned page_search_side(const uint8_t *page, const void *key, size_t klen, int *exact, const uint8_t *side,
                          unsigned stride);

/* Insert CELL (SIZE bytes, already encoded) at slot IDX; caller guarantees
 * page_reclaimable() >= SIZE + 2 (compacts if needed). */
void page_insert_cell(uint8_t *page, size_t page_size, unsigned idx, const uint8_t *cell, size_t size);
/* Remove slot IDX (its bytes become fragmentation). */
void page_remove_cell(uint8_t *page, unsigned idx);
/* Rewrite cells contiguously at the end of the page, frag = 0. */
void page_compact(uint8_t *page, size_t page_size);
/* Raw bytes and size of the cell at slot IDX (type from the header). */
const uint8_t *page_cell_bytes(const uint8_t *page, unsigned idx, size_t *size);

/* Encode cells into BUF (caller sizes it); return bytes written. */
size_t leaf_cell_encode(uint8_t *buf, const void *key, size_t klen, uint32_t vlen, const void *val, int overflow,
                        uint32_t ovfl_block, uint64_t xmin, uint64_t xmax);
size_t internal_cell_encode(uint8_t *buf, const void *key, size_t klen, uint32_t child);

void meta_write(uint8_t *page, const meta_fields *m);

#endif /* ENGINE_PAGE_H */
