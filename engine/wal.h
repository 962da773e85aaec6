/*
 * wal.h -- the write-ahead log: segments, blocks, records, group commit,
 * and the reader that decides where the log ends.
 *
 * The stream, its segment files, blocks of self-checking sectors, block
 * headers and records are drawn in format.h, with every offset, size and
 * magic; this header adds the rules that keep them and the calls.
 *
 * Power-loss model (what the rules below must survive): any subset of the
 * writes not yet covered by an fsync may be rolled back to the file's old
 * contents, at 512-byte sector granularity (each sector of a write wholly
 * old or wholly new); old contents are what an earlier write left, zeros
 * (never written, or a file extended by the crash), or the stale blocks of
 * an older generation in a segment recycled by rename.
 *
 * Rules (numbered for tests):
 *   W1  a partly filled block is rewritten in place as records are added,
 *       but the bytes of records already in it never change: only its
 *       header's witness does (the header lies in sector 0, written whole
 *       or not at all), and the trailers of the sectors that gained bytes
 *   W2  a sync covers only writes that completed before it (all writes of a
 *       flush complete before its fsync is issued)
 *   W3  the reader stops at the first record that is absent, torn or fails
 *       its checksum, at LSN L, and decides between damage and a torn tail:
 *       (a) sectors: every sector the failing record occupies -- from L's
 *           sector (from its block's first sector when L's block header was
 *           the problem) to the record's end if its header was read whole
 *           with a sane length, else to the end of its header -- must pass
 *           its own trailer check.  One that fails is damage: the reader
 *           returns ENG_CORRUPTION with a report (layer wal_record) naming
 *           L's segment, block and offset (entry: the blocks from L's to
 *           the failing sector's), the failing sector's LSN in its detail;
 *       (b) witness: else it scans the blocks after L (to the end of the
 *           existing segments) for a valid block of the same or a newer
 *           generation, at its own position, whose witness is above L: if
 *           there is one, L lay in the synced part of the log: corruption,
 *           reported the same way.  Once the walk has read a block, the scan
 *           crosses missing segment files: when the walk needed one, the
 *           report names that file (a segment lost from the middle of the
 *           log);
 *       (c) else L is a torn tail and the log ends there (trim).
 *       Why a tear never passes for damage: every sector the writer puts
 *       on disk carries its own check, computed when the block is written
 *       (for a partly filled block, each time it is rewritten, W1), and
 *       under the power-loss model each sector on disk is wholly from one
 *       such write, or zero, or a stale sector of an older generation
 *       (written the same way): all pass (a).  A file cut mid-sector reads
 *       as zero past its end; that sector counts as cut, like a zeroed one.
 *       And no witness overstates (B3 in wal.c), so (b) never fires on a
 *       tear either.  Why damage never passes for a tear: damage that
 *       changes a sector's bytes fails that sector's check (CRC32C over a
 *       sector catches at least every error of up to 3 bits and every
 *       burst of up to 32), and any damage that stops the reader at L lies
 *       in the bytes of the record at L (the records before it passed
 *       their checksums), so within the sectors (a) checks, wherever L
 *       lies, the last record of the log with nothing after it included.
 *       Undetectable: damage that restores a sector's earlier valid
 *       contents (an older version of a rewritten partial block, or a
 *       stale sector put back); multi-bit damage whose CRC32C collides
 *       (odds 2^-32); a whole sector zeroed, or a file cut short.  Each
 *       still ends as corruption when a witness above L exists (b), and
 *       only a record at the log's very end, in the last fsync group, can
 *       be trimmed by them.  Damage in a sector the failing record shares
 *       with nothing synced (the unused zeros after the last record, its
 *       trailer) is reported too: it cannot be told from damage to a
 *       record there.
 *   W4  a failed write or fsync poisons the log: every later append and
 *       flush fails with ENG_POISONED (the kernel may have dropped pages)
 */
#ifndef ENGINE_WAL_H
#define ENGINE_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "format.h"
#include "io.h"
#include "status.h"

typedef struct wal wal;

typedef struct wal_config {
    io_ctx *io;
    const char *dir;         /* database directory (segments in DIR/wal/) */
    uint64_t seg_size;       /* bytes per segment, power of two, >= 64 KiB */
    size_t buffer_size;      /* in-memory log buffer, >= 4 * WAL_BLOCK */
    uint32_t gen;            /* generation stamped on every block written */
    uint64_t start_lsn;      /* where appending starts (end of the recovered log) */
    uint64_t prev_lsn;       /* LSN of the last record before start_lsn (0 if none) */
    const char *archive_dir; /* NULL: no archiving */
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

uint64_t wal_insert_lsn(wal *w);  /* end of the last appended record */
uint64_t wal_durable_lsn(wal *w); /* everything below is durable */

/* Checkpoint support: remove segments wholly below LSN; with an archive dir
 * each is copied there (and the copy fsynced) first.  Segments may be
 * recycled (renamed to a future segment name) instead of unlinked. */
int wal_remove_before(wal *w, uint64_t lsn);

typedef struct wal_stats {
    uint64_t bytes_appended; /* record bytes */
    uint64_t bytes_written;  /* block bytes written to segment files */
    uint64_t records, syncs, segments_created, segments_recycled, segments_removed;
    uint64_t archive_bytes, segments_archived;
} wal_stats;
void wal_get_stats(wal *w, wal_stats *st);

/* ---- reading ---- */

/* Open a reader of DIR's log (segments of SEG_SIZE) at START_LSN, a
 * record's position; PREV_LSN is the record before it (0: unchecked). */
int wal_reader_open(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t start_lsn, uint64_t prev_lsn,
                    const eng_reporter *rep, wal_reader **out);
/* wal_reader_next, wal_reader_end, wal_reader_close and wal_record:
 * decode.h. */

/* ---- stream geometry (for tools and tests that locate bytes) ---- */

/* The stream position just past N record bytes placed from position POS
 * (a record start, or a block start, whose header is then skipped),
 * skipping sector trailers and block headers. */
uint64_t wal_stream_advance(uint64_t pos, uint64_t n);
/* Record bytes between stream positions A <= B (trailers and headers in
 * between not counted). */
uint64_t wal_payload_between(uint64_t a, uint64_t b);
/* 1 if the WAL_SECTOR bytes at S pass their trailer check (or are all
 * zero). */
int wal_sector_valid(const uint8_t *s);
/* Fill the trailer of the sector at S from its other bytes. */
void wal_sector_seal(uint8_t *s);

/* The first record of the oldest segment of DIR/wal (segments of
 * SEG_SIZE): past the continuation (wb_cont) of a record begun in an
 * older, removed segment.  ENG_OK with *LSN, or ENG_NOTFOUND (no segment).
 * A block header that does not check ends the search at the segment's
 * first record position; the reader then says what is wrong there. */
int wal_oldest_record(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t *lsn);
/* wal_guess_seg_size: decode.h. */

/* ---- the segment files, for open's look at a directory ---- */

/* The start LSNs of DIR/wal's segment files, ascending, into *OUT
 * (malloc'd; NULL when *N is 0).  A missing wal/ is an empty list. */
int wal_list_segments(const char *dir, uint64_t **out, size_t *n);

/* Every segment file from the one holding FROM to the one holding TO must
 * exist: the log between a checkpoint's redo point and its record was
 * synced before control named them.  ENG_CORRUPTION (reported, layer
 * wal_record, file "wal/NAME" of the first missing one) if one does not. */
int wal_check_segments(const char *dir, uint64_t seg_size, uint64_t from, uint64_t to, const eng_reporter *rep);

/* Unlink every segment file of DIR/wal (debris of an interrupted
 * creation; the caller syncs the directory). */
int wal_remove_segments(io_ctx *io, const char *dir);

#endif
