/*
 * wal.h -- the write-ahead log: segments, blocks, records, group commit,
 * and the reader that decides where the log ends.
 *
 * LSNs are byte positions in one endless stream that includes the block
 * headers (as in PostgreSQL).  The stream is cut into segment files of
 * seg_size bytes (a power of two, >= 64 KiB), named wal/%016llx after the
 * LSN they start at, and each segment into WAL_BLOCK-byte blocks.
 *
 * Block header (WAL_BLOCK_HDR = 32 bytes, at the start of every block):
 *   offset size field
 *   0      8    wb_lsn      LSN of the block's first byte (its position):
 *                           a recycled segment's stale block fails this
 *   8      8    wb_durable  witness: every byte below this LSN was durable
 *                           (written and fsynced) when this block was last
 *                           written
 *   16     4    wb_gen      log generation: raised on every open; never
 *                           decreases along a valid log, so blocks left
 *                           over from before a trimmed tail end the log
 *   20     2    wb_cont     bytes at the start of the payload that continue
 *                           a record begun in an earlier block
 *   22     2    wb_magic    0xA11E
 *   24     8    wb_check    XXH3-64 of bytes [0, 24)
 *
 * Record (starts 8-byte aligned in the stream; may span blocks, skipping
 * their headers):
 *   0      4    xl_len      header + payload bytes
 *   4      1    xl_type     WAL_REC_*
 *   5      1    xl_flags
 *   6      2    (zero)
 *   8      8    xl_prev     LSN of the previous record (continuity)
 *   16     8    xl_lsn      LSN of this record (its own position)
 *   24     8    xl_check    XXH3-64 of header (check as zero) + payload
 *
 * Rules (numbered for tests):
 *   W1  a partly filled block is rewritten in place as records are added,
 *       but the bytes of records already in it never change: only its
 *       header's witness does, and the header lies in the block's first
 *       512-byte sector, written whole or not at all
 *   W2  a sync covers only writes that completed before it (all writes of a
 *       flush complete before its fsync is issued)
 *   W3  the reader stops at the first record that is absent, torn or fails
 *       its checksum, at LSN L.  It then scans the blocks after L (to the
 *       end of the existing segments) for a valid block of the same or a
 *       newer generation, at its own position, whose witness is above L:
 *       if there is one, L lay in the synced part of the log and the reader
 *       returns ENG_CORRUPTION (reported, layer wal_record); if not, L is a
 *       torn tail and the log ends there (trim).  Once the walk has read
 *       a block, the scan crosses missing segment files: when the walk
 *       needed one, the report names that file (a segment lost from the
 *       middle of the log)
 *   W4  a failed write or fsync poisons the log: every later append and
 *       flush fails with ENG_POISONED (the kernel may have dropped pages)
 */
#ifndef ENGINE_WAL_H
#define ENGINE_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "status.h"

#define WAL_BLOCK 4096u
#define WAL_BLOCK_HDR 32u
#define WAL_REC_HDR 32u
#define WAL_DIR "wal"
#define WAL_MAX_RECORD (256u << 20)

/* Record types (payload formats live with their writers: engine.c and
 * btree.c; the WAL only frames them). */
enum wal_rec_type {
    WAL_REC_BATCH = 1,      /* a committed write batch (logical) */
    WAL_REC_PAGES = 2,      /* page actions of one tree operation */
    WAL_REC_CHECKPOINT = 3, /* a completed checkpoint */
    WAL_REC_TYPE_MAX = 3
};

typedef struct wal wal;

typedef struct wal_config {
    io_ctx *io;
    const char *dir;        /* database directory (segments in DIR/wal/) */
    uint64_t seg_size;      /* bytes per segment, power of two, >= 64 KiB */
    size_t buffer_size;     /* in-memory log buffer, >= 4 * WAL_BLOCK */
    uint32_t gen;           /* generation stamped on every block written */
    uint64_t start_lsn;     /* where appending starts (end of the recovered log) */
    uint64_t prev_lsn;      /* LSN of the last record before start_lsn (0 if none) */
    const char *archive_dir;/* NULL: no archiving */
    eng_reporter reporter;
} wal_config;

/* Open the log for appending at cfg->start_lsn.  The partly filled block
 * holding start_lsn is read back so its earlier bytes are kept (W1).  The
 * segment holding start_lsn is created if missing. */
int wal_open(const wal_config *cfg, wal **out);
/* Flushes nothing: call wal_flush first for a clean close. */
void wal_close(wal *w);

/* Append one record; thread-safe (records enter the stream in call order).
 * *start gets the record's LSN, *end the LSN just past it.  Buffer space
 * is freed by writing full blocks out (no fsync) when needed. */
int wal_append(wal *w, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end);

/* Make every record that ends at or below UPTO durable (write, then fsync).
 * Group commit: concurrent callers coalesce; one fsync serves all callers
 * whose records it covers.  Returns ENG_OK or the failure (W4). */
int wal_flush(wal *w, uint64_t upto);

/* Write out whatever is buffered, without fsync (wal_flush with no sync). */
int wal_write_out(wal *w);

uint64_t wal_insert_lsn(wal *w);   /* end of the last appended record */
uint64_t wal_durable_lsn(wal *w);  /* everything below is durable */

/* Checkpoint support: remove segments wholly below LSN; with an archive dir
 * each is copied there (and the copy fsynced) first.  Segments may be
 * recycled (renamed to a future segment name) instead of unlinked. */
int wal_remove_before(wal *w, uint64_t lsn);

typedef struct wal_stats {
    uint64_t bytes_appended;   /* record bytes */
    uint64_t bytes_written;    /* block bytes written to segment files */
    uint64_t records, syncs, segments_created, segments_recycled, segments_removed;
    uint64_t archive_bytes, segments_archived;
} wal_stats;
void wal_get_stats(wal *w, wal_stats *st);

/* ---- reading ---- */

typedef struct wal_reader wal_reader;

typedef struct wal_record {
    uint64_t lsn, end, prev;
    int type;
    int flags;
    uint32_t gen;             /* generation of the block the record starts in */
    const uint8_t *payload;   /* valid until the next wal_reader_next */
    size_t len;
} wal_record;

int wal_reader_open(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t start_lsn,
                    uint64_t prev_lsn, const eng_reporter *rep, wal_reader **out);
/* ENG_OK with *rec filled; ENG_NOTFOUND at the end of the log (then
 * wal_reader_end tells where it ended and whether a torn tail was cut);
 * ENG_CORRUPTION when a bad record lies in the synced part (W3). */
int wal_reader_next(wal_reader *r, wal_record *rec);
/* After ENG_NOTFOUND: the LSN just past the last good record, the LSN of
 * that record, the highest generation seen, and whether bytes after the
 * end were present but invalid (a trimmed torn tail). */
void wal_reader_end(wal_reader *r, uint64_t *end, uint64_t *last_lsn, uint32_t *max_gen, int *trimmed);
void wal_reader_close(wal_reader *r);

/* Segment size found from the segment files of DIR/wal (for tools), or 0. */
uint64_t wal_guess_seg_size(const char *dir);

/* ---- the segment files, for open's look at a directory ---- */

/* The start LSNs of DIR/wal's segment files, ascending, into *OUT
 * (malloc'd; NULL when *N is 0).  A missing wal/ is an empty list. */
int wal_list_segments(const char *dir, uint64_t **out, size_t *n);

/* Every segment file from the one holding FROM to the one holding TO must
 * exist: the log between a checkpoint's redo point and its record was
 * synced before control named them.  ENG_CORRUPTION (reported, layer
 * wal_record, file "wal/NAME" of the first missing one) if one does not. */
int wal_check_segments(const char *dir, uint64_t seg_size, uint64_t from, uint64_t to,
                       const eng_reporter *rep);

/* Unlink every segment file of DIR/wal (debris of an interrupted
 * creation; the caller syncs the directory). */
int wal_remove_segments(io_ctx *io, const char *dir);

#endif
