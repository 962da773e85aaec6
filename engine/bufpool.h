/*
 * bufpool.h -- the buffer pool: cached pages of the data file.
 *
 * A fixed array of frames, a partitioned hash table from block to frame,
 * clock eviction, dirty tracking and write-back.  Pages are verified
 * (page_verify: zero rule, checksum, block, structure) right after every
 * read, before any byte is trusted; a page that fails is never cached and
 * its reader gets ENG_CORRUPTION with a report.  Checksums are set on a
 * private copy right before every write, so the frame may keep changing
 * under a shared latch (hint bits, later) while it is written.
 *
 * Frame life cycle (state, guarded by the partition mutex of its block):
 *
 *     FREE --claim--> LOADING --read+verify ok--> VALID --evict--> FREE
 *                        |                          ^
 *                        +--verify/read failed------+--> FREE
 *     (bp_new: FREE --> VALID directly, page zeroed, dirty)
 *
 * Per-KV codes of a VALID frame (kvprot.h): coded (kv_on), or lazy (KV0:
 * a leaf loaded for a reader, proven by its page checksum, held only by
 * that reader under the exclusive latch); a lazy frame is coded by the
 * next bp_get of it, or stays lazy (and damaged) if its checksum fails.
 *
 *     load for BP_SHARED (leaf, checksums on) --> lazy --next bp_get--> coded
 *     any other load, bp_new                  --> coded
 *
 * Latching protocol (deadlock freedom rests on it):
 *   L1  a frame is latched only while pinned; a pinned frame is never evicted
 *   L2  latches are taken top-down in the tree (parent before child), leaf
 *       before its overflow pages, and the meta page last; nobody waits for
 *       a latch while holding a partition mutex
 *   L3  write-back holds the frame pinned and share-latched, so a frame is
 *       never written while it is being changed (writers latch exclusively)
 *       and eng_verify, which latches exclusively, never reads a block from
 *       disk while it is being written
 *   L4  a dirty frame is written back while still in the hash table, then
 *       evicted only if it is still clean and unpinned
 *   L5  a write-back marks the frame `writing` from the moment it clears
 *       the dirty flag until the write completed: a flush counts a clean
 *       frame as done only when no write of it is in flight (otherwise a
 *       checkpoint's fsync could pass a write still under way)
 *   L6  at most one write of a frame is in flight: a write-back takes the
 *       frame's `writing` mark (0 -> 1) or, eviction, passes it by; readers
 *       setting hints re-dirty a frame under a shared latch, so without L6
 *       two writes of one block could overlap and land in either order
 */
#ifndef ENGINE_BUFPOOL_H
#define ENGINE_BUFPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "kvprot.h"
#include "page.h"
#include "status.h"

typedef struct bp_pool bp_pool;

enum { BP_SHARED = 0, BP_EXCL = 1 };

typedef struct bp_frame {
    pthread_rwlock_t latch;
    _Atomic uint32_t pin;
    _Atomic uint32_t block;
    _Atomic uint8_t state;
    _Atomic uint8_t ref; /* clock reference bit */
    _Atomic uint8_t dirty;
    _Atomic uint8_t writing;    /* a write-back of it is in flight (its dirty
                              * flag is already clear): a checkpoint must
                              * wait for it before its fsync */
    _Atomic uint8_t pending;    /* changed by a tree operation whose WAL record
                              * is not appended yet: never written (W-rule) */
    _Atomic uint8_t hint_dirty; /* hint bits changed since the last write
                              * (set by readers under a shared latch) */
    _Atomic uint64_t lsn;       /* page LSN: end of the last record that changed
                              * it; the authority (ph_lsn is stamped from it
                              * on every write) */
    struct bp_frame *hnext;     /* hash chain, under the partition mutex */
    uint8_t *data;              /* page_size bytes */
    kv_codes kv;                /* per-KV codes (kvprot.h); changed only under
                             * the exclusive latch, with the bytes */
    uint8_t kv_on;
    uint8_t kv_lazy; /* a leaf read for a reader and not coded yet: its bytes
                      * are proven by the page checksum alone (KV0, kvprot.h);
                      * set and cleared under the exclusive latch */
} bp_frame;

typedef struct bp_config {
    io_ctx *io;
    io_file *file; /* the data file */
    uint32_t page_size;
    size_t nframes;
    int checksums;
    _Atomic uint64_t *hwm; /* durable high-water mark (blocks) */
    eng_reporter reporter;
    /* Write-ahead rule: called before any page with LSN <= UPTO is
     * written; must make the WAL durable up to UPTO.  NULL: no WAL. */
    int (*wal_flush)(void *ctx, uint64_t upto);
    void *wal_ctx;
    /* Called (with wal_ctx) for a frame whose hint bits changed since its
     * last write, on the private copy about to be written, before the
     * write-ahead flush: it may log a record for it (wal_log_hints, or an
     * image under hint_fpi).  It returns the page LSN to stamp (LSN, or
     * an image's end: an image is the page's image of this checkpoint
     * cycle) and the LSN the log must be durable to before the write (a
     * compact hint record is not an image, so it must not move the page
     * LSN past the redo point: the next logged change would skip its
     * image).  NULL: hint-only changes are written as they are. */
    int (*hint_log)(void *ctx, uint32_t block, const uint8_t *copy, uint64_t lsn, uint64_t *stamp_lsn,
                    uint64_t *flush_lsn);
    /* Read-only handle: dirty frames (redo replayed in memory) are never
     * written; needing to write one fails with ENG_READONLY. */
    int read_only;
    /* The handle's poison flag: a flush gives up once it is set (the pages
     * of the failed operation stay pending for ever). */
    _Atomic int *poisoned;
    unsigned kv_width; /* block_protection_bytes_per_key (0: none) */
    int kv_lazy;       /* kv_lazy_leaves: 0 the pool chooses, 1 always, -1 never */
} bp_config;

typedef struct bp_stats {
    uint64_t reads, writes, hits, misses, evictions, frames, hint_writes;
    uint64_t kv_bytes, kv_pages, kv_keys, kv_checks;
    uint64_t kv_check_bytes, kv_code_bytes; /* bytes hashed by checks, by coding */
    uint64_t kv_lazy_leaves, kv_lazy_coded; /* KV0: leaves loaded lazy, coded later */
} bp_stats;

int bp_create(const bp_config *cfg, bp_pool **out);
/* Frees the pool without writing anything back (call bp_flush_all first). */
void bp_destroy(bp_pool *bp);

/* Pin BLOCK, latch it in MODE, reading and verifying it if not resident.
 * ENG_CORRUPTION (reported) if the page fails verification; the frame is
 * then not cached and *out is NULL.
 *
 * KV0 (per-KV protection on, checksums on): a leaf read for BP_SHARED is
 * not coded at load.  Its reader gets it latched exclusively (it is still
 * the latch the read and the checksum were done under, so nothing has
 * touched the bytes since the checksum proved them) and reads it as with
 * w = 0; the frame stays lazy (kv_lazy).  Any later bp_get of it codes it
 * first, under the exclusive latch: codes made, then the checksum checked
 * over the same bytes (a flip before the coding fails the checksum, one
 * after it a code), and ENG_CORRUPTION (layer kv_protection, reported)
 * when it fails; the frame then stays lazy, so every access reports it.
 * Nothing writes into a lazy frame: hints are not learned in it
 * (bp_frame_lazy), writers get it coded. */
int bp_get(bp_pool *bp, uint32_t block, int mode, bp_frame **out);

/* F (latched) is a lazy leaf (KV0): no codes yet, bytes proven by the page
 * checksum; nothing may be written into it, hints included. */
static inline int bp_frame_lazy(const bp_frame *f) { return f->kv_lazy; }

/* A frame for a block that has never been written (beyond the allocated
 * end of the file): zeroed, dirty, pinned and latched exclusively. */
int bp_new(bp_pool *bp, uint32_t block, bp_frame **out);

/* A frame for BLOCK whose old contents do not matter (redo of an action
 * that defines the whole page: the block may hold a torn page): never
 * read from disk, pinned and latched exclusively, contents undefined. */
int bp_overwrite(bp_pool *bp, uint32_t block, bp_frame **out);

size_t bp_nframes(const bp_pool *bp);

/* One more pin on a frame the caller already has pinned. */
static inline void bp_pin_again(bp_frame *f) { atomic_fetch_add(&f->pin, 1); }

/* Unlatch and unpin. */
void bp_release(bp_pool *bp, bp_frame *f, int mode);

static inline void bp_mark_dirty(bp_frame *f) { atomic_store_explicit(&f->dirty, 1, memory_order_release); }
/* A reader set hint bits (under a shared latch): the hint first, then the
 * dirty flag, so a write-back that clears dirty and copies afterwards
 * carries it or leaves the frame dirty again. */
static inline void bp_mark_hint_dirty(bp_frame *f) {
    atomic_store_explicit(&f->hint_dirty, 1, memory_order_release);
    atomic_store_explicit(&f->dirty, 1, memory_order_release);
}

/* Write back every dirty frame (batched), waiting for frames that are
 * pending (their operation is about to log them).  Does not sync. */
int bp_flush_all(bp_pool *bp);

/* For eng_verify: check BLOCK as it is now.  If resident and dirty, the
 * frame's structure is checked (the disk copy is stale by design); else the
 * disk copy is read into BUF and fully verified, under the frame's
 * exclusive latch when resident so no write-back runs meanwhile (L3).
 * Returns ENG_OK or ENG_CORRUPTION with *pr filled (not reported). */
int bp_check_block(bp_pool *bp, uint32_t block, uint8_t *buf, page_problem *pr);

void bp_get_stats(bp_pool *bp, bp_stats *st);

/* How many of F's entry codes its bytes no longer match, and in *PAGE
 * whether its page code does not; no report, no count.  -1 when F carries
 * no codes (w = 0, a lazy leaf).  For the cache-flip injector's escape
 * test. */
int bp_kv_mismatches(bp_pool *bp, bp_frame *f, int *page);

/* Per-KV protection (kvprot.h), for frames the caller has latched.  The
 * checks report a kv_protection CORRUPTION for BLOCK and the entry and
 * return ENG_CORRUPTION; with width 0 they return ENG_OK at once. */
unsigned bp_kv_width(const bp_pool *bp);
int bp_kv_check_page(bp_pool *bp, bp_frame *f);
int bp_kv_check_entry(bp_pool *bp, bp_frame *f, unsigned slot);
int bp_kv_check_all(bp_pool *bp, bp_frame *f);
/* The same checks, quiet: 1 on a mismatch, nothing reported (the caller
 * checks again the reporting way before it says anything). */
int bp_kv_test_page(bp_pool *bp, bp_frame *f);
int bp_kv_test_entry(bp_pool *bp, bp_frame *f, unsigned slot);
/* The flags F's codes were made with (kvprot.h, KV_UNIQUE_KEYS); 0 when
 * protection is off or F has no codes.  Trust them only after
 * bp_kv_check_page on F (the page code binds them). */
static inline unsigned bp_kv_flags(const bp_frame *f) { return f->kv_on ? kv_flags(&f->kv) : 0; }
/* F's entry codes (W bytes each), for prefetching only: NULL when F has
 * none or W is 0. */
static inline const uint8_t *bp_kv_codes(const bp_frame *f, unsigned w) { return w && f->kv_on ? f->kv.code : NULL; }
/* The frame's bytes changed (exclusive latch): recompute its codes. */
void bp_kv_update(bp_pool *bp, bp_frame *f);

/* A lazy frame F (KV0), latched exclusively: code it now (codes, then the
 * checksum over the same bytes).  ENG_OK (also when F was not lazy), or
 * ENG_CORRUPTION reported; F stays lazy then. */
int bp_kv_code_lazy(bp_pool *bp, bp_frame *f);

/* Debug hook (engine.h eng_debug_frame_bytes): pin BLOCK if resident;
 * latch the pinned F exclusively and confirm it still caches BLOCK
 * (0: it does not, and F is unpinned). */
bp_frame *bp_pin_resident(bp_pool *bp, uint32_t block);
int bp_latch_resident(bp_pool *bp, bp_frame *f, uint32_t block);
void bp_unpin(bp_pool *bp, bp_frame *f);

#endif
