/*
 * pageop.h -- page actions: the one way a page changes.
 *
 * Every change to a page of the data file is an action.  The writer
 * encodes each action into the WAL_REC_PAGES record of its tree operation
 * and applies it with pa_apply; recovery decodes the same bytes and calls
 * the same pa_apply, so redo produces the bytes that the original change
 * produced (deterministic redo).  All actions of one tree operation (a put
 * with its splits and overflow pages, a delete with its freed pages) sit
 * in one record, so a multi-page change such as a split is atomic.
 *
 * Action encoding (little-endian), common prefix: u8 kind | u32 block
 *   PA_IMAGE      u16 hole_off | u16 hole_len | u8 codec | u32 stored_len | bytes
 *                 whole page, the unused middle [hole_off, hole_off+hole_len)
 *                 left out; codec 0 raw, 1 zstd                      (creates)
 *   PA_INIT       u8 type | u16 level | u32 next | u32 aux              (creates)
 *   PA_FREE       u32 next       a free-list trunk, empty              (creates)
 *   PA_PUSHFREE   u32 freed      append a free block to a trunk        (modifies)
 *   PA_POPFREE    (nothing)      drop a trunk's last entry             (modifies)
 *   PA_OVFL       u32 next | u32 len | cellsrc-payload                 (creates)
 *   PA_INSERT     u16 idx | u8 replace | cellsrc                       (modifies)
 *   PA_REMOVE     u16 idx                                              (modifies)
 *   PA_SPLIT      u16 idx | u8 replace | u16 m | u32 next | cellsrc    (modifies)
 *                 the page keeps the first m of its cells with CELL put
 *                 at idx (replacing idx if replace); the right half is a
 *                 separate PA_IMAGE, so redo never derives one page from
 *                 another page's possibly newer state
 *   PA_META       u32 nblocks | u32 freelist                           (modifies)
 *   PA_SETNEXT    u32 next                                             (modifies)
 *   PA_SETXMAX    u16 idx | u64 xid   the version at idx deleted or replaced
 *                                     by transaction xid               (modifies)
 *   PA_FREEZE     u16 idx             the version's xmin becomes 0     (modifies)
 *   PA_CLOGSET    u32 index | u8 status   a commit-log entry           (modifies)
 *   PA_CLOGDIR    u32 i | u32 block   meta: commit-log page i lives at block
 *                                     (i == clog_pages appends)        (modifies)
 *   PA_HINTS      u16 len | bytes     a leaf's hint area (wal_log_hints) (modifies)
 * cellsrc: u8 src | src 0: u16 len | bytes
 *                   src 1: u32 op | u32 ovfl   (a leaf cell built from op
 *                          OP of the record's batch: its key and value, or
 *                          an overflow pointer to OVFL when OVFL != 0)
 * PA_OVFL payload: u8 src | src 0: bytes (len) | src 1: u32 op | u32 off
 *                  (bytes [off, off+len) of that op's value)
 *
 * "creates" actions define the whole page, so redo applies them without
 * reading the block (it may be torn); "modifies" actions are applied only
 * when the page's LSN is below the record's.
 */
#ifndef ENGINE_PAGEOP_H
#define ENGINE_PAGEOP_H

#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "page.h"

/* WAL_REC_BATCH payload (decode.h): u64 seq | u32 nops | per op: u8 kind | u16 klen |
 * u32 vlen | key | value.  Encode into BUF (pa_batch_size bytes). */
size_t pa_batch_size(const pa_op *ops, uint32_t nops);
void pa_batch_encode(uint8_t *buf, uint64_t seq, const pa_op *ops, uint32_t nops);
/* The decoders of both payloads (pa_batch_count, pa_batch_decode,
 * pa_parse) and the kinds are declared in decode.h.  Is KIND a creating
 * action? */
int pa_creates(int kind);

/* Apply the action at A to PAGE (page_size PS, at BLOCK).  BATCH supplies
 * cell sources (may be NULL if the action has none).  ZSCRATCH is a buffer
 * of PS bytes for image decompression.  Returns ENG_OK or ENG_CORRUPTION
 * when the action does not fit the page (a page that is not in the state
 * the action was logged against): the caller reports. */
int pa_apply(uint8_t *page, uint32_t ps, uint32_t block, const uint8_t *a, size_t alen, const pa_batch *batch,
             uint8_t *zscratch, const char **why);

/* ---- encoders (append to a growable buffer) ---- */

typedef struct pa_buf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} pa_buf;

void pa_buf_reset(pa_buf *b);
void pa_buf_free(pa_buf *b);

/* Image of PAGE with its hole left out; COMPRESS 1 = zstd.  Returns the
 * image's bytes before compression. */
size_t pa_put_image(pa_buf *b, uint32_t block, const uint8_t *page, uint32_t ps, int compress);
void pa_put_init(pa_buf *b, uint32_t block, int type, int level, uint32_t next, uint32_t aux);
void pa_put_free(pa_buf *b, uint32_t block, uint32_t next);
/* Overflow page: explicit bytes (op == UINT32_MAX) or bytes of op's value. */
void pa_put_ovfl(pa_buf *b, uint32_t block, uint32_t next, const uint8_t *bytes, uint32_t len, uint32_t op,
                 uint32_t off);
/* Cell: explicit bytes (CELL != NULL) or built from OP (+ OVFL). */
void pa_put_insert(pa_buf *b, uint32_t block, unsigned idx, int replace, const uint8_t *cell, size_t clen, uint32_t op,
                   uint32_t ovfl);
void pa_put_remove(pa_buf *b, uint32_t block, unsigned idx);
void pa_put_split(pa_buf *b, uint32_t block, unsigned idx, int replace, unsigned m, uint32_t next, const uint8_t *cell,
                  size_t clen, uint32_t op, uint32_t ovfl);
void pa_put_meta(pa_buf *b, uint32_t nblocks, uint32_t freelist);
void pa_put_setnext(pa_buf *b, uint32_t block, uint32_t next);
void pa_put_pushfree(pa_buf *b, uint32_t trunk, uint32_t freed);
void pa_put_popfree(pa_buf *b, uint32_t trunk);
void pa_put_setxmax(pa_buf *b, uint32_t block, unsigned idx, uint64_t xid);
void pa_put_freeze(pa_buf *b, uint32_t block, unsigned idx);
void pa_put_clogset(pa_buf *b, uint32_t block, uint32_t index, int status);
void pa_put_clogdir(pa_buf *b, uint32_t i, uint32_t clog_block);
void pa_put_hints(pa_buf *b, uint32_t block, const uint8_t *page, uint32_t ps);

/* Build the leaf cell for op OP of BATCH into OUT (LEAF_CELL_HDR +
 * ENG_MAX_KEY + page bytes); returns its size, 0 if OP is not a put. */
size_t pa_op_cell(const pa_batch *batch, uint32_t op, uint32_t ovfl, uint8_t *out, size_t cap);

/* Rebuild PAGE as its first M cells, the cell C inserted at IDX
 * (replacing IDX if REPLACE); RIGHT (if not NULL) gets the other cells on
 * a page initialized at RBLOCK.  Shared by the writer and PA_SPLIT. */
int pa_split_cells(uint8_t *page, uint32_t ps, unsigned idx, int replace, const uint8_t *c, size_t clen, unsigned m,
                   uint8_t *right, uint32_t rblock);

#endif
