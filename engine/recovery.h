/*
 * recovery.h -- redo from the last checkpoint (docs/engine.md, Recovery).
 *
 * Two passes over the log from the redo point:
 *   1. read to the end, so a corrupted record in the synced part (wal.h W3)
 *      fails the open before any page is touched, and fsync the segments
 *      read (their bytes may sit only in the page cache after a crash, and
 *      pages rebuilt from them must not reach disk before they do);
 *   2. apply every WAL_REC_PAGES record's actions (pageop.h): creating
 *      actions (images, new pages) without reading the block, so a page
 *      torn by the crash is rebuilt from its image; modifying actions only
 *      when the page's LSN is below the record's end (a change the page
 *      already has is skipped).
 * RC1  Each page of a record is held (pinned, latched) from the record's
 *      first action on it to its last, so it is never written back between
 *      two of them: a page carries a record's end as its LSN only with all
 *      of the record's changes to it.  One operation's record may change a
 *      page twice with others between (pops from one free-list trunk, each
 *      followed by the page it allocates); a trunk written back after the
 *      first pop would make a recovery after this one (a failed open, a
 *      crash) skip the second.  A page is let go after its last action, so
 *      only the pages the record comes back to are held meanwhile (the
 *      trunk, not the chain it hands out): holding every page to the end of
 *      the record made a 128 KiB pool (16 frames) fail the open with
 *      ENG_BUSY on a record that allocated a long overflow chain.
 * A batch is committed by its WAL_REC_PAGES record with op index
 * PA_OP_COMMIT (the commit-log entry).  A batch whose commit record is not
 * in the log (cut short by the crash) is aborted and counted in
 * txns_aborted: its id has no commit-log entry, so its versions stay
 * invisible (T3 in txn.h), and a batch is all or nothing.
 */
#ifndef ENGINE_RECOVERY_H
#define ENGINE_RECOVERY_H

#include <stdint.h>

#include "bufpool.h"
#include "io.h"
#include "pageop.h"
#include "status.h"

typedef struct rec_result {
    uint64_t end_lsn;  /* just past the last good record: appending resumes here */
    uint64_t last_lsn; /* the last good record */
    uint64_t last_seq; /* commit sequence of the last batch committed */
    uint64_t max_seq;  /* the largest id any batch record used (aborted
                            * ids are never reused: their versions remain) */
    uint64_t txns_committed, txns_aborted;
    int batch_open;   /* a batch record without its commit or abort */
    uint64_t records; /* records read from the redo point */
    uint64_t actions_applied, actions_skipped, images_restored;
    uint32_t max_gen;
    uint32_t meta_nblocks; /* block count of the meta page after redo (0: not redone) */
    int trimmed;           /* a torn tail after end_lsn was cut */
    /* The last batch, if its operations were not all logged: */
    uint8_t *batch_payload; /* owned (free with rec_result_free) */
    size_t batch_len;
    uint64_t batch_lsn;
    uint32_t ops_done; /* operations with a WAL_REC_PAGES record */
    uint32_t nops;
    uint64_t broken_last_batch; /* test-only broken build: record number of the last batch */
} rec_result;

/* Replay DIR's log from REDO_LSN into the pages of BP.  LAST_SEQ is the
 * commit sequence at the redo point (from control).  SYNC_LOG: pass 1
 * fsyncs the segments it read and wal/; 0 for a pool that never writes
 * back (a read-only open: nothing is opened for writing or synced).
 * ENG_CORRUPTION (with reports) when the log or a page cannot be
 * trusted. */
int recovery_redo(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t redo_lsn, uint64_t last_seq, bp_pool *bp,
                  uint32_t page_size, int sync_log, const eng_reporter *rep, rec_result *out);
void rec_result_free(rec_result *r);

#endif
