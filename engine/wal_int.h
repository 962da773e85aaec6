/*
 * wal_int.h -- what the log's own files share (wal.c, walseg.c,
 * walread.c); nothing outside them includes it.
 *
 *   walseg.c   stream geometry, sector trailers, block headers, the
 *              segment files (names, listing) and the tools' look at them
 *   wal.c      the writer: log buffer, block framing, write-out, group
 *              commit, segment files opened for appending, recycling and
 *              archiving
 *   walread.c  the reader that decides where the log ends (W3)
 *
 * The byte layout of blocks, sectors and records is in format.h, the
 * rules W1-W4 in wal.h.
 */
#ifndef ENGINE_WAL_INT_H
#define ENGINE_WAL_INT_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "wal.h"

#define WB_PAYLOAD WAL_BLOCK_PAYLOAD /* record bytes per block */

/* Segment files get hook file ids above the data file's (0) so a fault
 * library can tell WAL segments apart and each one keeps its own id. */
#define WAL_FILE_ID_BASE 16

/* ---- stream positions ---------------------------------------------------- */

static inline uint64_t blk_of(uint64_t x) { return x & ~(uint64_t)(WAL_BLOCK - 1); }
static inline uint32_t blk_off(uint64_t x) { return (uint32_t)(x & (WAL_BLOCK - 1)); }
static inline uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }
static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static inline uint32_t sec_off(uint64_t x) { return (uint32_t)(x & (WAL_SECTOR - 1)); }

/* A record placed at insert position POS starts there, or just past the
 * header of the block that begins at POS.  (POS is 8-aligned, so it never
 * lies in a sector trailer: those are bytes 508-511 of a sector.) */
static inline uint64_t rec_start_at(uint64_t pos) { return blk_off(pos) == 0 ? pos + WAL_BLOCK_HDR : pos; }

/* Record bytes in block offsets [0, OFF): what lies in neither the header
 * nor a trailer. */
static inline uint32_t pay_before(uint32_t off) {
    uint32_t s = off / WAL_SECTOR, o = off % WAL_SECTOR;
    uint32_t n = s * WAL_SECTOR_DATA + (o < WAL_SECTOR_DATA ? o : WAL_SECTOR_DATA);
    return n > WAL_BLOCK_HDR ? n - WAL_BLOCK_HDR : 0;
}

/* Block offset of the record byte with index Q (< WB_PAYLOAD) in the
 * block's payload. */
static inline uint32_t pay_pos(uint32_t q) {
    uint32_t x = q + WAL_BLOCK_HDR;
    return x / WAL_SECTOR_DATA * WAL_SECTOR + x % WAL_SECTOR_DATA;
}

/* The stream position just past N record bytes placed from position START
 * (a record start, or a block start whose header comes first), skipping
 * the trailers and headers they run over.  A record that fills a sector's
 * data ends at its trailer (offset 508), one that fills a block's payload
 * at 4092: the 8-aligned end after it is the next sector or block. */
static inline uint64_t stream_end(uint64_t start, uint64_t n) {
    if (n == 0) return start;
    uint64_t q = pay_before(blk_off(start)) + n; /* from the block's payload start */
    uint64_t blocks = (q - 1) / WB_PAYLOAD;
    return blk_of(start) + blocks * WAL_BLOCK + pay_pos((uint32_t)((q - 1) % WB_PAYLOAD)) + 1;
}

static inline int valid_seg_size(uint64_t s) { return s >= (64u << 10) && (s & (s - 1)) == 0; }

/* An LSN where a record may start or the log may end: 8-aligned and not
 * inside a block header. */
static inline int valid_stream_pos(uint64_t x) {
    return (x & 7) == 0 && (blk_off(x) == 0 || blk_off(x) >= WAL_BLOCK_HDR);
}

static inline void seg_name(char out[17], uint64_t base) { snprintf(out, 17, "%016llx", (unsigned long long)base); }

static inline int seg_file_id(uint64_t seg_size, uint64_t base) {
    uint64_t n = base / seg_size;
    return n > (uint64_t)(INT_MAX - WAL_FILE_ID_BASE) ? INT_MAX : WAL_FILE_ID_BASE + (int)n;
}

/* ---- block headers ---------------------------------------------------------- */

typedef struct wb_hdr {
    uint64_t lsn, durable, check;
    uint32_t gen;
    uint16_t cont, magic;
} wb_hdr;

static inline void wb_decode(const uint8_t *p, wb_hdr *h) {
    h->lsn = fmt_get64(p + WB_LSN_OFF);
    h->durable = fmt_get64(p + WB_DURABLE_OFF);
    h->gen = fmt_get32(p + WB_GEN_OFF);
    h->cont = fmt_get16(p + WB_CONT_OFF);
    h->magic = fmt_get16(p + WB_MAGIC_OFF);
    h->check = fmt_get64(p + WB_CHECK_OFF);
}

static inline int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* ---- walseg.c ---- */

/* The segment files of WALDIR, ascending, into *OUT (malloc'd, may be NULL
 * when *N is 0).  A missing directory is an empty list. */
int wal_seg_list(const char *waldir, uint64_t **out, size_t *n);
/* 1 if WALDIR holds a segment file for BASE (used only after an open
 * failed, to tell a missing segment from an unreadable one). */
int wal_seg_exists(const char *waldir, uint64_t base);
/* "A/B", malloc'd (NULL when out of memory). */
char *wal_path_join(const char *a, const char *b);
/* Start block P at stream position LSN; the witness and checksum are
 * filled when the block is written (wal_wb_seal). */
void wal_wb_init(uint8_t *p, uint64_t lsn, uint32_t gen, uint16_t cont);
/* Fill the witness, the header check and the trailers of the block's
 * first NSEC sectors (W1, W3, B5 in wal.c). */
void wal_wb_seal(uint8_t *p, uint64_t durable, unsigned nsec);
/* Why a header is not valid at POS (NULL if it is); *H gets its fields.
 * *EXPECTED / *FOUND describe the mismatch for a report. */
const char *wal_wb_check_at(const uint8_t *p, uint64_t pos, wb_hdr *h, uint64_t *expected, uint64_t *found);

#endif
