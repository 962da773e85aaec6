/*
 * ledger.h -- the fault ledger: every injection, with its exact location,
 * appended before the fault takes effect.
 *
 * One file per run (RUN_DIR/ledger), shared by the running stress
 * process, the power-loss step and the restarted run, so verdicts can be
 * reached across crashes.  One JSON object per line, written with one
 * write(2) on an O_APPEND descriptor: lines from several processes or
 * threads never interleave, and a line is complete once write returns
 * (a SIGKILL after that cannot lose it; the page cache keeps it).
 *
 * Line keys (absent when not meaningful):
 *   seq     order within the writing process
 *   phase   "run", "powerloss" or "recovery"
 *   class   a fault class of docs/fault-classes.md (bitflip_page,
 *           torn_write, ...)
 *   point   the fault point or injector that fired
 *   file    path relative to the database directory ("data", "wal/000...")
 *   block   page or WAL block number; offset, len: byte range in the file
 *   mask    XOR mask of a bit flip (hex); bit: its bit index in the range
 *   op      operation number of the thread; thread: thread index
 *   err     injected errno name ("EIO", "ENOSPC")
 *   note    free text
 *   pre, post  bitflip_page: XXH64 (hex) of the block before and after the flip
 *   region  where the damage landed, by the format (faults/place.h):
 *           bitflip_page  header, hints, slots, free, cells, meta, clog,
 *                         overflow, trunk (the page's region of the bit)
 *           bitflip_wal   block_header, sector_trailer, record_header,
 *                         record_payload, padding (the byte's class);
 *                         synced_sector (a sector zeroed, walzero.c)
 *           zero_page     meta, root, interior, leaf, clog, overflow,
 *                         trunk, hwm_below, hwm_above, last_written,
 *                         file_end, since_redo (the block's class; unused for a page
 *                         of no known type)
 *           lost_write,   meta, root, interior, leaf, clog, overflow,
 *           misdirected_write  trunk (the type of the page that missed
 *                         its block; unused for none)
 *           bitflip_cache with patterns: key, value, version, slot,
 *                         page_header, separator (cacheflip.c)
 */
#ifndef FAULTS_LEDGER_H
#define FAULTS_LEDGER_H

#include <stdint.h>

typedef struct flt_ledger flt_ledger;

typedef struct flt_event {
    const char *phase; /* NULL: "run" */
    const char *cls;
    const char *point;
    const char *file;
    int64_t block, offset, len;    /* -1: absent */
    uint64_t mask;                 /* 0: absent */
    int64_t bit;                   /* -1: absent */
    int64_t op;                    /* -1: absent */
    int64_t part_offset, part_len; /* -1: absent; cache flips: the bytes
                                 * one parity bit of the engine's codes
                                 * covers around the flipped bit (a
                                 * cell, a slot, a hint byte, the header),
                                 * so the oracle can tell when two flips
                                 * may cancel in one code */
    int64_t pair_of;               /* -1: absent; cache flips: the seq of an
                                 * earlier flip of this process whose
                                 * byte in the same part of the same
                                 * frame still holds what that flip left
                                 * (the two may make an even count) */
    const char *part_code;         /* NULL: absent; cache flips: the code
                                 * that covers that part: "page" (the
                                 * 4-byte page code), "entry" (the w-byte
                                 * entry codes) or "none" */
    const char *pair_check;        /* NULL: absent; cache flips with pair_of:
                                 * the frame's codes tested right around
                                 * this flip (cacheflip.c flt_tick_cache):
                                 * "escaped" (it made a damaged code match
                                 * again: the damage is invisible to every
                                 * check), "detected" (it did not), "none"
                                 * (no codes: a leaf not coded yet, proven
                                 * by its checksum; or it undid its pair) */
    int thread;                    /* -1: absent */
    const char *err;
    const char *note;
    const char *to; /* NULL: absent; a "moved" line: the name FILE was renamed to */
    /* bitflip_cache with patterns (cacheflip.c): NULL / -1 absent;
     * region also for bitflip_page, bitflip_wal and zero_page (above) */
    const char *pattern, *region, *bits, *parity, *check;
    int64_t nbits;
    uint64_t page_pre, page_post; /* 0: absent; a flip in a data page on disk:
                                 * XXH64 of the whole block before and after
                                 * it (any later process can tell whether
                                 * the flipped page is still there) */
} flt_event;

/* An event with every optional field absent. */
flt_event flt_event_none(const char *cls, const char *point);

/* Open (create) the ledger in RUN_DIR for appending.  0 or -errno. */
int flt_ledger_open(const char *run_dir, flt_ledger **out);
void flt_ledger_close(flt_ledger *l);
/* Append one line; thread-safe.  0 or -errno.  The _seq form also gives
 * the line's seq (when SEQ is not NULL). */
int flt_ledger_append(flt_ledger *l, const flt_event *e);
int flt_ledger_append_seq(flt_ledger *l, const flt_event *e, uint64_t *seq);

/* Reading (oracle, tests): call FN for each line's raw JSON text. */
int flt_ledger_read(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx);

#endif
