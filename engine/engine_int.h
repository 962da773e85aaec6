/*
 * engine_int.h -- what the handle's files share: the handle itself
 * (struct eng_db, opaque in engine.h) and the calls one of them makes
 * into another.  Only engine.c, engine_open.c and engine_verify.c
 * include it.
 *
 *   engine.c         the handle's life once open: the log as the lower
 *                    layers see it, durable sequences, checkpoints, writes
 *                    and commit, reads, snapshots, vacuum, iterators,
 *                    fault points, stats; the directory's files and rules
 *                    F1-F5 are drawn at its top
 *   engine_open.c    open (create or recover), close, and what a directory
 *                    holds (F1-F5 applied, eng_probe_dir)
 *   engine_verify.c  verify of an open handle or of a directory
 */
#ifndef ENGINE_ENGINE_INT_H
#define ENGINE_ENGINE_INT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "btree.h"
#include "bufpool.h"
#include "lockorder.h"
#include "control.h"
#include "engine.h"
#include "io.h"
#include "status.h"
#include "txn.h"
#include "wal.h"

#define DATA_NAME    "data"
#define DATA_FILE_ID 0
#define SEQ_RING     4096u
/* Transaction ids are leased in blocks: control's xid_limit is raised (a
 * control write) before an id at or above it is used, so after any crash
 * ids restart above every id that could be on a page, even if the log
 * records that used them were lost (a damaged record at the end of the log
 * with no later witness is trimmed as a torn tail, W3): a reused id would
 * make that batch's versions visible under another batch's commit. */
#define XID_LEASE 1024u

struct eng_db {
    char dir[4096];
    char archive_dir[4096];
    eng_options opts;
    int lockfd;
    io_ctx *io;
    io_file data;
    int data_open;
    control ctl;
    _Atomic uint64_t hwm;
    _Atomic uint64_t redo_lsn;
    bp_pool *bp;
    bt_tree *bt;
    wal *wal;
    pthread_mutex_t write_mu;
    pthread_mutex_t ckpt_mu;
    pthread_mutex_t ctl_mu; /* db->ctl and the control file (a leaf lock:
                                  * taken under write_mu or ckpt_mu) */
    _Atomic int poisoned;
    eng_reporter rep;
    pthread_mutex_t last_mu;
    eng_corruption last;
    int has_last;
    _Atomic uint64_t corruption[ENG_LAYER_COUNT];
    _Atomic uint64_t puts, deletes, gets, syncs, batches, checkpoints;
    _Atomic uint64_t wal_bytes, wal_records;
    /* Commit sequences: last assigned, and which are durable. */
    _Atomic uint64_t seq;
    _Atomic uint64_t durable_seq;
    pthread_mutex_t seq_mu;
    struct {
        uint64_t end, seq;
    } ring[SEQ_RING];
    size_t ring_head, ring_len;
    _Atomic int ckpt_due;
    _Atomic int writers_waiting;
    eng_recovery_info rinfo;
    txn_mgr *txn;
    _Atomic uint64_t commits, aborts, vacuums, hint_records, hint_record_bytes;
};

/* The handle's nested locks, in their order: ckpt_mu, then write_mu, then
 * ctl_mu (a leaf).  Taken through eng_lock, so debug builds keep the ones
 * this thread holds and check that it takes one only while it holds none
 * later in the order. */
enum { LK_CKPT = 1, LK_WRITE = 2, LK_CTL = 4 };
extern __thread unsigned eng_locks_held; /* engine.c */

static inline void eng_lock(pthread_mutex_t *mu, unsigned which) { lock_in_order(&eng_locks_held, mu, which); }
static inline void eng_unlock(pthread_mutex_t *mu, unsigned which) { unlock_in_order(&eng_locks_held, mu, which); }

/* engine.c */
void eng_db_report(void *ctx, const eng_corruption *r);
int eng_log_append(void *ctx, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end);
int eng_pool_wal_flush(void *ctx, uint64_t upto);
int eng_pool_hint_log(void *ctx, uint32_t block, const uint8_t *copy, uint64_t lsn, uint64_t *out, uint64_t *flush);
int eng_checkpoint_as(eng_db *db, int closing);
static inline int checkpoint(eng_db *db) { return eng_checkpoint_as(db, 0); }

/* engine_verify.c: a report goes to the handle (if any) and to the
 * caller's function (if any). */
typedef struct verify_fwd {
    eng_db *db;
    eng_corruption_fn fn;
    void *ctx;
} verify_fwd;
void eng_verify_report(void *ctx, const eng_corruption *r);

#endif
