/*
 * txn.h -- transaction status and snapshots, in memory.
 *
 * Every batch is a transaction whose id is its commit sequence.  Its fate
 * is stored in the commit log (PAGE_CLOG pages, changed only by logged page
 * actions, see btree_clog.c bt_commit); this module keeps the decoded copy that
 * readers consult without a page latch, the last committed id, and the
 * registry of acquired snapshots from which vacuum and pruning take their
 * horizon.
 *
 * Rules the rest of the engine relies on:
 *   T1  one writer at a time: ids are assigned and finished in order, so
 *       every id <= last_committed is finished (committed or aborted), and
 *       the only unfinished id is the writer's own, above it
 *   T2  the status is published before last_committed moves past it, so a
 *       reader that loads last_committed sees the status of every id below
 *   T3  an id whose status is not COMMITTED once finished is aborted for
 *       ever (a batch cut by a crash has no entry and counts as aborted)
 *   T4  the horizon (oldest acquired snapshot, or last_committed when none)
 *       is computed under the registry lock, which acquire also takes, so a
 *       snapshot acquired meanwhile is never below it
 */
#ifndef ENGINE_TXN_H
#define ENGINE_TXN_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine.h"
#include "page.h"

typedef struct txn_mgr txn_mgr;

int txn_create(txn_mgr **out);
void txn_destroy(txn_mgr *m);

/* CLOG_COMMITTED, CLOG_ABORTED or CLOG_IN_PROGRESS (never set); id 0 (a
 * frozen version) is committed. */
int txn_status(const txn_mgr *m, uint64_t xid);
/* Writer / open: record a status (T2: before txn_publish). */
int txn_set_status(txn_mgr *m, uint64_t xid, int status);

uint64_t txn_last_committed(const txn_mgr *m);
void txn_publish(txn_mgr *m, uint64_t xid); /* last_committed = xid */

/* Snapshots (engine.h): seq = last_committed at acquire. */
int txn_snapshot_acquire(txn_mgr *m, eng_snapshot **out);
void txn_snapshot_release(txn_mgr *m, eng_snapshot *s);
uint64_t txn_snapshot_seq(const eng_snapshot *s);
/* T4; also returns the number of snapshots held and the oldest's seq. */
uint64_t txn_horizon(txn_mgr *m, uint64_t *active, uint64_t *oldest);

#endif
