/*
 * place.h -- where on-disk damage lands, by the format the engine stores
 * (engine/format.h): the named regions of a data page, the byte classes
 * of a stretch of WAL segment, and the classes of data blocks.  Pure
 * functions over bytes the caller read; the draws over them are
 * inject.c's (bitflip_page, bitflip_wal, zero_page).  The region names
 * are report keys: the ledger's `region`, stress's `regions` and
 * crashtest's "damage by region" table (docs/fault-classes.md).
 *
 * Page regions (bitflip_page), by the page's own header:
 *   header    [0, 40): checksum, LSN, block, type, counts, links
 *   hints     a leaf's hint area [40, slot base)
 *   slots     the slot array [slot base, ph_lower)
 *   free      [ph_lower, ph_upper) of a leaf or internal page; the bytes
 *             past the payload of any other page (a never-written page:
 *             everything past the header)
 *   cells     [ph_upper, page end): keys, values, child pointers
 *   meta      the meta page's fields and commit-log directory
 *   clog      a commit-log page's status bits
 *   overflow  an overflow page's ph_aux payload bytes
 *   trunk     a free-list trunk's ph_aux block numbers
 * Header fields are read from bytes a fault may have changed already:
 * every bound is clamped to the page, so the regions always tile it.
 *
 * WAL regions (bitflip_wal), per byte of a segment:
 *   block_header    the 32-byte header of every 4 KiB block
 *   sector_trailer  the CRC32C in the last 4 bytes of every sector
 *   record_header   the 32-byte header of a record (split across
 *                   sectors and blocks as the record is)
 *   record_payload  a record's payload
 *   padding         zero bytes up to the next 8-aligned record start, and
 *                   every byte past the log's end (the zeroed rest of a
 *                   partial block, a recycled segment's stale bytes)
 * Records are found by walking them from a block whose header says where
 * the first record in it starts (wb_cont); a record is the log's end when
 * its header does not hold its own LSN, a known type and a sane length.
 *
 * Block classes (zero_page's region; a share of bitflip_page's blocks):
 *   meta, root, interior, leaf, clog, overflow, trunk  by the page's type
 *   hwm_below     the block right below the durable high-water mark (the
 *                 last block the control file says was synced)
 *   hwm_above     the block at the mark (the first one past it)
 *   last_written  the data block of the last completed write
 *   file_end      the data file's last block
 *   since_redo    a block whose page on disk was changed at or past the
 *                 redo point of that control file (the pages recovery
 *                 replays onto first, and the next checkpoint flushes)
 */
#ifndef FAULTS_PLACE_H
#define FAULTS_PLACE_H

#include <stddef.h>
#include <stdint.h>

/* A named byte range [lo, hi). */
typedef struct flt_span {
    const char *region;
    uint32_t lo, hi;
} flt_span;

#define FLT_PAGE_SPANS 5

/* The regions of page P (PS bytes), in page order, empty ones left out:
 * they tile [0, PS).  Returns their count (1 to FLT_PAGE_SPANS). */
int flt_page_spans(const uint8_t *p, size_t ps, flt_span out[FLT_PAGE_SPANS]);
/* The region of P that holds byte BYTE (< PS). */
const char *flt_page_region_at(const uint8_t *p, size_t ps, size_t byte);

enum {
    FLT_WR_BLOCK_HEADER = 0,
    FLT_WR_SECTOR_TRAILER,
    FLT_WR_RECORD_HEADER,
    FLT_WR_RECORD_PAYLOAD,
    FLT_WR_PADDING,
    FLT_WR_COUNT
};
const char *flt_wal_region_name(int r);

/* A record found by flt_wal_label: file offsets in its segment of its
 * first byte, of the byte after its header's last, and of the byte after
 * its last (trailers and block headers inside it included). */
typedef struct flt_wal_rec {
    uint64_t start, hdr_end, end;
} flt_wal_rec;

/* Label every byte of BUF, the N bytes at file offset LO (a multiple of
 * WAL_BLOCK) of a segment whose first LSN is SEG_BASE: LAB[i] is the
 * FLT_WR_* of byte LO + i.  Records are walked from the first block of
 * BUF whose header is valid and in which a record starts; bytes of that
 * block before it continue an earlier record and are labeled
 * record_payload (most of a record is payload; start BUF a block or two
 * before the bytes that matter and they are exact).  Up to CAP records
 * that start in BUF go to RECS (may be NULL).  Returns the number of
 * records found. */
size_t flt_wal_label(const uint8_t *buf, uint64_t lo, uint64_t n, uint64_t seg_base, uint8_t *lab, flt_wal_rec *recs,
                     size_t cap);

enum {
    FLT_BC_META = 0,
    FLT_BC_ROOT,
    FLT_BC_INTERIOR,
    FLT_BC_LEAF,
    FLT_BC_CLOG,
    FLT_BC_OVERFLOW,
    FLT_BC_TRUNK,
    FLT_BC_HWM_BELOW,
    FLT_BC_HWM_ABOVE,
    FLT_BC_LAST_WRITTEN,
    FLT_BC_FILE_END,
    FLT_BC_SINCE_REDO,
    FLT_BC_COUNT
};
#define FLT_BC_FIRST_BOUNDARY FLT_BC_HWM_BELOW /* the classes from here on are places, not page types */
const char *flt_block_class_name(int c);
/* The type class of the page whose header is HDR (PAGE_HDR bytes), at
 * BLOCK, when the tree's root is ROOT; -1 for a page never written or of
 * no known type. */
int flt_block_type_class(const uint8_t *hdr, uint64_t block, uint64_t root);
/* The name of flt_block_type_class ("unused" for none). */
const char *flt_page_type_name(const uint8_t *hdr, uint64_t block, uint64_t root);

#endif
