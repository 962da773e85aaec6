/*
 * decode.h -- the read side of the file formats of format.h: the decoders
 * that turn a page or a log record into fields, and the calls of the WAL
 * reader that hand out records.
 *
 * Several layers implement these (checksum.c, page.c, pageop.c,
 * walread.c, walseg.c) and several use them (recovery, verify, the
 * inspection door inspect.h and through it engine-tool), so they sit below
 * all of those: this header includes engine.h and format.h and nothing
 * else, and page.h, pageop.h, wal.h and inspect.h include it.  It is a
 * contract of tools/deps_contracts.txt.
 *
 * Every decoder is bounds-checked where it says so and never trusts a
 * byte; none writes anything.
 */
#ifndef ENGINE_DECODE_H
#define ENGINE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "format.h"

/* ---- pages (checksum.c, page.c) ----------------------------------------------- */

/* The page hash of [PAGE_CHECKSUM_FROM, page_size), seeded with BLOCK
 * (format.h: the seed binds file and block, so a page copied to another
 * block or another paged file fails).  Never returns 0, so 0 can mean "not
 * set" when checksums are off. */
uint64_t page_checksum(const uint8_t *page, size_t page_size, uint64_t block);
int page_is_zero(const uint8_t *page, size_t page_size);

/* A decoded problem; filled only when the function returns ENG_CORRUPTION. */
typedef struct page_problem {
    int layer;      /* eng_layer */
    int32_t entry;  /* slot, or -1 */
    int64_t offset; /* offset in page, or -1 */
    uint64_t expected, found;
    char detail[160];
} page_problem;

/* Full check of a page just read from BLOCK (docs/engine.md, Pages and
 * checksums): P5 (zero rule against HWM), checksum (if CHECKSUMS), P4 block
 * number, then the header (P1) and for leaf/internal pages every slot and
 * cell (P2) and key order (P3).  Returns ENG_OK, or ENG_CORRUPTION with *pr
 * filled.  A zero page at or beyond HWM returns ENG_OK with *is_zero = 1
 * (never-written block). */
int page_verify(const uint8_t *page, size_t page_size, uint64_t block, uint64_t hwm, int checksums, int *is_zero,
                page_problem *pr);
/* page_verify with the checksum of these bytes at BLOCK already COMPUTED
 * (the pool's load pass makes the per-KV codes and the checksum at once,
 * kvprot.h kv_compute_checked); the same checks in the same order. */
int page_verify_summed(const uint8_t *page, size_t page_size, uint64_t block, uint64_t hwm, int checksums,
                       uint64_t computed, int *is_zero, page_problem *pr);

/* Structural check only (P1-P3 and type-specific fields), no checksum. */
int page_check_structure(const uint8_t *page, size_t page_size, page_problem *pr);

/* Cell accessors for pages that passed page_check_structure.  They still
 * bounds-check nothing more: structure was proven on load, and the pool
 * (later, per-KV codes) guards the bytes in memory. */
typedef struct leaf_cell {
    const uint8_t *key;
    uint16_t klen;
    uint8_t cflags;
    uint32_t vlen; /* full value length */
    uint64_t xmin, xmax;
    const uint8_t *val; /* inline value, or NULL if overflow */
    uint32_t ovfl;      /* first overflow block if CELL_OVERFLOW */
    uint16_t size;      /* bytes of the cell */
} leaf_cell;

typedef struct internal_cell {
    const uint8_t *key;
    uint16_t klen;
    uint32_t child;
    uint16_t size;
} internal_cell;

void page_leaf_cell(const uint8_t *page, unsigned slot, leaf_cell *c);
void page_internal_cell(const uint8_t *page, unsigned slot, internal_cell *c);

/* Decode and sanity-check the meta page fields. */
typedef struct meta_fields {
    uint64_t magic;
    uint32_t root, nblocks, freelist, height;
    uint32_t clog_pages; /* entries of the commit-log directory */
} meta_fields;
void meta_read(const uint8_t *page, meta_fields *m);
const char *page_type_name(int type);

/* ---- WAL record payloads (pageop.c) ------------------------------------------- */

/* Page actions of WAL_REC_PAGES records; their encoding is drawn at the
 * top of pageop.h. */
enum pa_kind {
    PA_IMAGE = 1,
    PA_INIT,
    PA_FREE,
    PA_OVFL,
    PA_INSERT,
    PA_REMOVE,
    PA_SPLIT,
    PA_META,
    PA_SETNEXT,
    PA_PUSHFREE,
    PA_POPFREE,
    PA_SETXMAX,
    PA_FREEZE,
    PA_CLOGSET,
    PA_CLOGDIR,
    PA_HINTS,
    PA_KIND_MAX = PA_HINTS
};

/* One operation of a write batch, as the WAL_REC_BATCH record holds it. */
enum { BOP_PUT = 1, BOP_DELETE = 2 };
typedef struct pa_op {
    int kind;
    const uint8_t *key;
    uint32_t klen;
    const uint8_t *val;
    uint32_t vlen;
} pa_op;

/* The batch a record's cell sources refer to. */
typedef struct pa_batch {
    uint64_t seq;
    uint32_t nops;
    pa_op *ops;
} pa_batch;

/* WAL_REC_BATCH payload: u64 seq | u32 nops | per op: u8 kind | u16 klen |
 * u32 vlen | key | value.  Decode (bounds-checked); OPS must hold as many
 * entries as the record says (pa_batch_count first).  Returns 0 or -1 on
 * nonsense. */
int pa_batch_count(const uint8_t *p, size_t len, uint32_t *nops);
int pa_batch_decode(const uint8_t *p, size_t len, pa_batch *b);

/* WAL_REC_PAGES payload: u64 batch_lsn | u32 op_index | actions...
 * op_index PA_OP_ABORT: an operation failed before changing anything,
 * the batch is aborted (its actions, if any, set the commit-log entry). */
#define PA_REC_HDR  12u
#define PA_OP_ABORT 0xffffffffu
/* The batch at batch_lsn committed: the record's actions set its
 * commit-log entry (and create the log page it needs).  This record, not
 * the batch record, is the commit. */
#define PA_OP_COMMIT 0xfffffffeu
/* Maintenance with no batch (vacuum, hint records, hint images):
 * batch_lsn is 0 and no action refers to a batch op. */
#define PA_OP_MAINT 0xfffffffdu

/* The action at P (LEN bytes left): its kind, its block; returns its size,
 * or 0 on nonsense (bounds checked). */
size_t pa_parse(const uint8_t *p, size_t len, int *kind, uint32_t *block);

/* ---- the log (walread.c, walseg.c) -------------------------------------------- */

typedef struct wal_reader wal_reader;

typedef struct wal_record {
    uint64_t lsn, end, prev;
    int type;
    int flags;
    uint32_t gen;           /* generation of the block the record starts in */
    const uint8_t *payload; /* valid until the next wal_reader_next */
    size_t len;
} wal_record;

/* ENG_OK with *rec filled; ENG_NOTFOUND at the end of the log (then
 * wal_reader_end tells where it ended and whether a torn tail was cut);
 * ENG_CORRUPTION when the record where it stops is damaged (W3). */
int wal_reader_next(wal_reader *r, wal_record *rec);
/* After ENG_NOTFOUND: the LSN just past the last good record, the LSN of
 * that record, the highest generation seen, and whether bytes after the
 * end were present but invalid (a trimmed torn tail). */
void wal_reader_end(wal_reader *r, uint64_t *end, uint64_t *last_lsn, uint32_t *max_gen, int *trimmed);
void wal_reader_close(wal_reader *r);

/* Segment size found from the segment files of DIR/wal, or 0: the
 * smallest size wal_seg_size_bounds allows. */
uint64_t wal_guess_seg_size(const char *dir);
/* What the segment files of DIR/wal say of their size: *LO <= size <= *HI
 * (powers of two; LO == HI when they tell it exactly).  Two or more
 * segments tell it by the step between their names; one alone only
 * bounds it: at least its file's size (and the minimum), at most the
 * largest power of two its name (its first LSN) is a multiple of.
 * ENG_NOTFOUND when there are no segments. */
int wal_seg_size_bounds(const char *dir, uint64_t *lo, uint64_t *hi);

#endif /* ENGINE_DECODE_H */
