/*
 * page.h -- on-disk page format, checksums and the page decoders.
 *
 * Every block of the data file is one page of page_size bytes (4, 8 or
 * 16 KiB, fixed at creation).  Byte layout (little-endian, x86-64):
 *
 *   offset size field
 *   0      8    ph_checksum  XXH3-64 of the page with this field taken as
 *                            zero, seeded with the block number (see
 *                            page_checksum); 0 when data_checksums is off
 *   8      8    ph_lsn       LSN of the last change (WAL, later issues)
 *   16     4    ph_block     the block this page was written for
 *   20     1    ph_type      PAGE_META, PAGE_LEAF, PAGE_INTERNAL, ...
 *   21     1    ph_flags
 *   22     2    ph_nslots    number of slots (leaf / internal)
 *   24     2    ph_lower     end of the slot array (= HDR + 2*nslots)
 *   26     2    ph_upper     start of cell content (cells grow down from
 *                            the end of the page)
 *   28     2    ph_frag      bytes of dead cells between upper and the end
 *   30     2    ph_level     0 for leaves, height above the leaves otherwise
 *   32     4    ph_next      right sibling (leaf/internal), next overflow
 *                            page, next free page; 0 = none
 *   36     4    ph_aux       internal: leftmost child; overflow: payload bytes
 *   40          slot array: u16 cell offsets, in key order
 *   ...         free space
 *   upper..end  cells
 *
 * Leaf cell:      u16 klen | u8 cflags | u32 vlen | key | value
 *                 (cflags & CELL_OVERFLOW: value replaced by u32 first
 *                  overflow block; vlen is still the full value length)
 * Internal cell:  u16 klen | u32 child | key     (child holds keys >= key;
 *                 keys below the first cell go to ph_aux)
 * Meta page (block 0), after the header:
 *                 u64 magic | u32 root | u32 nblocks | u32 freelist | u32 height
 * Overflow page:  payload of ph_aux bytes right after the header.
 * Free-list trunk (PAGE_FREE): ph_next links the next trunk, ph_aux counts
 *                 the u32 block numbers of free pages right after the
 *                 header.  A free page listed in a trunk keeps whatever it
 *                 held: freeing a page never writes it.
 *
 * Invariants (numbered so tests can name them):
 *   P1  HDR <= lower <= upper <= page_size, lower == HDR + 2*nslots
 *   P2  every slot points to a cell that lies wholly inside [upper, size)
 *   P3  keys in slot order are strictly increasing (memcmp, shorter first)
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

#include "engine.h"

#define PAGE_HDR 40u

enum page_type {
    PAGE_ZERO = 0, /* never written (all-zero) */
    PAGE_META = 1,
    PAGE_LEAF = 2,
    PAGE_INTERNAL = 3,
    PAGE_OVERFLOW = 4,
    PAGE_FREE = 5,
    PAGE_TYPE_MAX = 5
};

#define CELL_OVERFLOW 0x01u
#define FREE_TRUNK_CAP(ps) (((ps) - PAGE_HDR) / 4u)
#define LEAF_CELL_HDR 7u      /* u16 klen, u8 cflags, u32 vlen */
#define INTERNAL_CELL_HDR 6u  /* u16 klen, u32 child */
#define META_MAGIC 0x31415441454d4745ull /* "EGMETA11" */

/* Header accessors: pages are byte arrays, fields are read with memcpy so
 * alignment never matters. */
#define PAGE_FIELD(name, off, type)                                            \
    static inline type ph_get_##name(const uint8_t *p) {                      \
        type v; memcpy(&v, p + (off), sizeof v); return v; }                  \
    static inline void ph_set_##name(uint8_t *p, type v) {                    \
        memcpy(p + (off), &v, sizeof v); }
PAGE_FIELD(checksum, 0, uint64_t)
PAGE_FIELD(lsn, 8, uint64_t)
PAGE_FIELD(block, 16, uint32_t)
PAGE_FIELD(type, 20, uint8_t)
PAGE_FIELD(flags, 21, uint8_t)
PAGE_FIELD(nslots, 22, uint16_t)
PAGE_FIELD(lower, 24, uint16_t)
PAGE_FIELD(upper, 26, uint16_t)
PAGE_FIELD(frag, 28, uint16_t)
PAGE_FIELD(level, 30, uint16_t)
PAGE_FIELD(next, 32, uint32_t)
PAGE_FIELD(aux, 36, uint32_t)
#undef PAGE_FIELD

static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline uint16_t page_slot(const uint8_t *p, unsigned i) { return rd16(p + PAGE_HDR + 2u * i); }

/* Memory order of keys: memcmp, shorter first on a common prefix. */
static inline int key_cmp(const void *a, size_t al, const void *b, size_t bl) {
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c) return c;
    return (al > bl) - (al < bl);
}

/* ---- checksums (checksum.c) ---- */

/* XXH3-64 over the page with ph_checksum taken as zero, seeded with BLOCK
 * (the seed binds file and block: SEED_FILE_SHIFT puts a file id in the top
 * bits so a page copied into another paged file fails too).  Never returns
 * 0, so 0 can mean "not set" when checksums are off. */
uint64_t page_checksum(const uint8_t *page, size_t page_size, uint64_t block);
void page_set_checksum(uint8_t *page, size_t page_size, uint64_t block);
int page_is_zero(const uint8_t *page, size_t page_size);

/* ---- decoders (page.c): bounds-checked, never trust a byte ---- */

/* A decoded problem; filled only when the function returns ENG_CORRUPTION. */
typedef struct page_problem {
    int layer;        /* eng_layer */
    int32_t entry;    /* slot, or -1 */
    int64_t offset;   /* offset in page, or -1 */
    uint64_t expected, found;
    char detail[160];
} page_problem;

/* Full check of a page just read from BLOCK (DESIGN 3.3): P5 (zero rule
 * against HWM), checksum (if CHECKSUMS), P4 block number, then the header
 * (P1) and for leaf/internal pages every slot and cell (P2) and key order
 * (P3).  Returns ENG_OK, or ENG_CORRUPTION with *pr filled.  A zero page at
 * or beyond HWM returns ENG_OK with *is_zero = 1 (never-written block). */
int page_verify(const uint8_t *page, size_t page_size, uint64_t block,
                uint64_t hwm, int checksums, int *is_zero, page_problem *pr);

/* Structural check only (P1-P3 and type-specific fields), no checksum. */
int page_check_structure(const uint8_t *page, size_t page_size, page_problem *pr);

/* Cell accessors for pages that passed page_check_structure.  They still
 * bounds-check nothing more: structure was proven on load, and the pool
 * (later, per-KV codes) guards the bytes in memory. */
typedef struct leaf_cell {
    const uint8_t *key;
    uint16_t klen;
    uint8_t cflags;
    uint32_t vlen;          /* full value length */
    const uint8_t *val;     /* inline value, or NULL if overflow */
    uint32_t ovfl;          /* first overflow block if CELL_OVERFLOW */
    uint16_t size;          /* bytes of the cell */
} leaf_cell;

typedef struct internal_cell {
    const uint8_t *key;
    uint16_t klen;
    uint32_t child;
    uint16_t size;
} internal_cell;

void page_leaf_cell(const uint8_t *page, unsigned slot, leaf_cell *c);
void page_internal_cell(const uint8_t *page, unsigned slot, internal_cell *c);

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
 * first slot whose key is >= KEY and sets *exact when equal. */
unsigned page_search(const uint8_t *page, const void *key, size_t klen, int *exact);

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
size_t leaf_cell_encode(uint8_t *buf, const void *key, size_t klen, uint32_t vlen,
                        const void *val, int overflow, uint32_t ovfl_block);
size_t internal_cell_encode(uint8_t *buf, const void *key, size_t klen, uint32_t child);

/* Decode and sanity-check the meta page fields. */
typedef struct meta_fields {
    uint64_t magic;
    uint32_t root, nblocks, freelist, height;
} meta_fields;
void meta_read(const uint8_t *page, meta_fields *m);
void meta_write(uint8_t *page, const meta_fields *m);

const char *page_type_name(int type);

#endif /* ENGINE_PAGE_H */
