/*
 * btree.h -- the B+tree over the buffer pool.
 *
 * Shape: block 0 is the meta page, block 1 is always the root (a root split
 * moves the root's contents into two new children, so the root never
 * moves and readers need no meta page).  Leaves hold key-value cells;
 * values larger than a quarter page go to overflow chains.  Internal cells
 * hold separator keys, cut to the shortest prefix that still separates
 * (suffix truncation).  Leaves are linked left to right (ph_next) for
 * verification; readers never follow the links: an iterator moves by
 * descending again from the root with the fence key of the leaf it left,
 * so it needs no latch between calls and is immune to splits.
 *
 * Merge policy (lazy, documented): pages are never merged.  A leaf emptied
 * by deletes stays in the tree and takes later inserts of its key range;
 * overflow pages are freed to a free list on update and delete and reused.
 *
 * Concurrency: one writer at a time (the caller serializes bt_put and
 * bt_delete), any number of readers.  Readers crab down with shared
 * latches.  The writer descends optimistically with shared latches and an
 * exclusive latch on the leaf; only when the leaf must split does it
 * restart holding exclusive latches on the whole path.  Overflow chains
 * are read under the leaf's shared latch, so the writer cannot free a chain
 * a reader is following.
 */
#ifndef ENGINE_BTREE_H
#define ENGINE_BTREE_H

#include <stddef.h>
#include <stdint.h>

#include "bufpool.h"
#include "pageop.h"
#include "status.h"
#include "txn.h"

typedef struct bt_tree bt_tree;

typedef struct bt_config {
    bp_pool *bp;
    uint32_t page_size;
    eng_reporter reporter;
    const char *file;     /* data file name for reports */
    uint64_t file_blocks; /* whole blocks in the data file at open */
    uint64_t hwm;         /* durable high-water mark from control */
    /* Logging: every tree operation's page actions go out as one record. */
    int (*log_append)(void *ctx, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end);
    void *log_ctx;
    _Atomic uint64_t *redo_lsn; /* pages with LSN <= this get an image first */
    int full_page_writes;
    int wal_compression;           /* 1: zstd images */
    txn_mgr *txn;                  /* transaction status and snapshots */
    _Atomic uint64_t *durable_seq; /* commits at or below are durable: only
                                  * their versions get a "committed" hint */
    int no_hints;                  /* read-only handle: readers set no hints
                                  * (nothing may be written back) */
    _Atomic int *poisoned;         /* the handle's poison flag: a tree
                                  * operation that fails after changing
                                  * pages sets it before it lets go of its
                                  * latches, and readers test it once they
                                  * hold the root, so nobody reads a
                                  * half-done operation (a split whose
                                  * separator never reached the parent) */
} bt_config;

/* Write the meta page and an empty root leaf into the pool (new database). */
int bt_create(bp_pool *bp, uint32_t page_size);

/* Read and check the meta page. */
int bt_open(const bt_config *cfg, bt_tree **out);
void bt_close(bt_tree *t);

/* Blocks allocated (meta.nblocks). */
uint32_t bt_nblocks(bt_tree *t);
/* Full-page images logged since open: count, bytes, bytes before compression. */
void bt_image_stats(bt_tree *t, uint64_t *n, uint64_t *bytes, uint64_t *raw);
/* Overflow pages written since open. */
uint64_t bt_overflow_pages(bt_tree *t);

/* Read the commit log's pages into the txn status copy (after recovery). */
int bt_load_clog(bt_tree *t);

/* Versions (page.h): a read at snapshot S sees, of each key, the newest
 * version whose writer committed at or below S, unless a deleter committed
 * at or below S.  S == 0: the latest commit, read once the leaf is latched
 * (so no version it needs can have been pruned).  Readers set hint bits. */
int bt_get(bt_tree *t, uint64_t snap, const void *key, size_t klen, eng_buf *out);

/* Writer only: record the fate of transaction XID (the batch at BATCH_LSN)
 * in the commit log, as one WAL_REC_PAGES record (op index PA_OP_COMMIT or
 * PA_OP_ABORT), and in the status copy.  *end gets the record's end LSN.
 * *changed as for bt_apply_op. */
int bt_commit(bt_tree *t, uint64_t xid, uint64_t batch_lsn, int status, uint64_t *end, int *changed);

/* Vacuum one leaf (writer only): the leaf holding the first key >= KEY
 * (NULL = the first leaf).  Removes dead versions, freezes versions with
 * xmin < FREEZE_BELOW, sets hints; logs one PA_OP_MAINT record.  *next
 * gets the fence key of the next leaf (next->set 0: that was the last). */
typedef struct bt_cursor {
    uint8_t key[ENG_MAX_KEY];
    size_t len;
    int set;
} bt_cursor;
typedef struct bt_vac_stats {
    uint64_t leaves, versions, removed, frozen, hinted, freed;
} bt_vac_stats;
int bt_vacuum_leaf(bt_tree *t, const bt_cursor *at, uint64_t horizon, uint64_t freeze_below, bt_cursor *next,
                   bt_vac_stats *st, int *changed);

/* Hint bits set by readers and vacuum; versions pruned. */
void bt_version_stats(bt_tree *t, uint64_t *hints_set, uint64_t *pruned);

/* Writer only (caller holds the write lock): apply operation OP of BATCH
 * (whose WAL_REC_BATCH record is at BATCH_LSN), logging its page actions
 * as one WAL_REC_PAGES record.  A delete of an absent key is ENG_NOTFOUND
 * and changes nothing.  On any other failure *changed says whether pages
 * were changed (then unlogged and pending: the caller must poison the
 * handle); when it is 0 nothing happened and the op can be abandoned. */
struct pa_batch;
int bt_apply_op(bt_tree *t, const struct pa_batch *batch, uint32_t op, uint64_t batch_lsn, int *changed);
typedef struct bt_wctx bt_wctx;

/* ---- iteration: a copy of one leaf's entries in travel order ---- */

enum bt_seek { BT_GE, BT_GT, BT_LE, BT_LT };

typedef struct bt_entry {
    size_t koff, klen, voff, vlen; /* into bt_leafcopy.buf */
} bt_entry;

typedef struct bt_leafcopy {
    bt_entry *e;
    size_t n, ecap;
    uint8_t *buf;
    size_t blen, bcap;
    int forward; /* entries ascending (BT_GE/GT) or descending (BT_LE/LT) */
} bt_leafcopy;

/* Position on the first entry >= / > KEY (BT_GE/BT_GT: entries ascend from
 * there to the end of that leaf) or the last entry <= / < KEY (BT_LE/BT_LT:
 * entries descend from there to the start of that leaf).  KEY NULL with
 * BT_GE means -inf, with BT_LE means +inf.  Leaves without a matching entry
 * are skipped.  lc->n == 0 means nothing in that direction. */
int bt_seek(bt_tree *t, uint64_t snap, const void *key, size_t klen, int mode, bt_leafcopy *lc);
void bt_leafcopy_free(bt_leafcopy *lc);

/* Check the whole file and tree (the caller holds the write lock so the
 * tree holds still); every problem goes to REP; *problems counts them.
 * HWM is the high-water mark and FILE_BYTES the data file's size read
 * after it (a file only grows past a mark already set, so writes going on
 * never make it look short): whole blocks below HWM missing from the file
 * are reported once, as a short data file, and left unchecked.  INFO (may be NULL; zeroed by the
 * caller) gets the pages that could not be checked and the checks skipped
 * because of them (BV1-BV3 in btree_verify.c). */
int bt_verify(bt_tree *t, uint64_t file_bytes, uint64_t hwm, const eng_reporter *rep, uint64_t *problems,
              eng_verify_info *info);

#endif
