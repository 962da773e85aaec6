/*
 * engine.c -- the handle: writes and commit, checkpoints, the public
 * calls, stats.  Open (create or recover) and the rules below for what a
 * directory holds are applied in engine_open.c; verify is
 * engine_verify.c; the handle's struct is in engine_int.h.
 *
 * Files of a database directory:
 *   LOCK     flock()ed exclusively while a read-write handle is open,
 *            shared while a read-only one is (which neither creates nor
 *            writes it, and goes unlocked when it cannot read it:
 *            engine_open.c, take_lock); the lock dies with the process, so
 *            a crashed holder never blocks recovery
 *   control  creation options and durable marks (control.h)
 *   data     the pages (page.h); block 0 meta, block 1 root
 *   wal/     the log segments (wal.h)
 *
 *   CREATING the creation marker: present only while a database is being
 *            created (F2)
 *
 * Which directory holds what (rules F1-F5; eng_open and eng_probe_dir
 * apply them, tests/test_lost_files_refused.c proves them):
 *   F1  DIR/control is the database: a directory holds one exactly when it
 *       holds control.  LOCK is no file of the database: it says nothing,
 *       is never removed, and an open that refuses a directory does not
 *       create it.
 *   F2  Creation writes, in this order: CREATING (created, fsynced, the
 *       directory fsynced), data (pages, fsync), wal/ with the first
 *       checkpoint record (fsync, directory fsyncs), control (temp, fsync,
 *       rename, directory fsync: the commit point), then unlinks CREATING
 *       (directory fsync).  A crash anywhere leaves either no control and
 *       CREATING durable (or nothing at all), or a whole database.
 *   F3  Without control, the files of a database are data, control.tmp and
 *       the segment files in wal/.  None of them: an empty directory (as
 *       far as the engine goes): a writable open with create_if_missing
 *       creates; any other open gets ENG_NOTFOUND.  CREATING with them:
 *       debris of an interrupted creation, which a writable
 *       create_if_missing open removes before creating afresh (any other
 *       open: ENG_NOTFOUND, nothing touched).  Them without CREATING: a lost
 *       control file.  The open fails with ENG_CORRUPTION (layer control,
 *       saying what is missing and what is present) and nothing is
 *       created, truncated, removed or renamed, LOCK included.
 *   F4  With control: the data file must exist, and every WAL segment from
 *       the redo point's to the checkpoint record's (all synced before
 *       control named them); else ENG_CORRUPTION (layer control for data,
 *       wal_record for a segment, naming the missing file).  A segment
 *       missing further on is found by the log's own rule W3 (wal.h): a
 *       later block witnessing the log durable past the gap.
 *   F5  A CREATING left beside a valid control (a crash after the rename,
 *       before the unlink) is stale: a writable open removes it after the
 *       database opened.
 *
 * A write (eng_write) under the writer lock:
 *   1. logs its batch as one WAL_REC_BATCH record (its operations and its
 *      id, the commit sequence): not yet the commit;
 *   2. applies each operation to the tree, each logging its page actions
 *      as one WAL_REC_PAGES record (atomic multi-page changes);
 *   3. commits: bt_commit sets the batch's commit-log entry through one
 *      more WAL_REC_PAGES record with op index PA_OP_COMMIT; that record
 *      is the commit (PA_OP_ABORT instead when an operation failed before
 *      changing a page; a failure after pages changed poisons the handle);
 *   4. by sync_mode: commit fsyncs the log up to the commit record before
 *      releasing the lock; group releases the lock and then waits for an
 *      fsync that covers it (one fsync serves every writer waiting); off
 *      returns at once.
 * Recovery replays pages from the redo point and aborts a batch whose
 * PA_OP_COMMIT record is not in the log: its id has no commit-log entry,
 * so its versions stay invisible (T3 in txn.h): a batch is all or nothing.
 *
 * Checkpoint: under the writer lock take redo = end of log (a batch
 * boundary) and make every later first change of a page log its image;
 * write back every dirty page; fsync the data file; log a checkpoint
 * record, fsync; replace control (redo point, high-water mark); drop the
 * segments below redo.
 *
 * Poisoning: a failed write or fsync of the log or of a page write-back
 * poisons the handle (ENG_POISONED for every later write, sync and
 * checkpoint) until it is reopened: the kernel may have dropped the dirty
 * data, so retrying would lie.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "faultpoints.h"
#include "page.h"
#include "pageop.h"

void eng_options_init(eng_options *o) {
    memset(o, 0, sizeof *o);
    o->page_size = 8192;
    o->data_checksums = 1;
    o->wal_segment_size = 16u << 20;
    o->first_xid = 1;
    o->sync_mode = ENG_SYNC_COMMIT;
    o->full_page_writes = 1;
    o->wal_compression = ENG_WAL_COMPRESSION_NONE;
    o->checkpoint_wal_bytes = 64u << 20;
    o->wal_buffer_size = 1u << 20;
    o->cache_size = 64u << 20;
    o->io_backend = ENG_IO_URING;
    o->create_if_missing = 1;
    o->vacuum_freeze_min_age = 50000000;
}

void eng_buf_free(eng_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Every report from every layer passes here. */
void eng_db_report(void *ctx, const eng_corruption *r) {
    eng_db *db = ctx;
    if (r->layer >= 0 && r->layer < ENG_LAYER_COUNT) atomic_fetch_add(&db->corruption[r->layer], 1);
    pthread_mutex_lock(&db->last_mu);
    db->last = *r;
    db->has_last = 1;
    pthread_mutex_unlock(&db->last_mu);
    if (db->opts.on_corruption) db->opts.on_corruption(db->opts.on_corruption_ctx, r);
}


__thread unsigned eng_locks_held; /* engine_int.h's lock order (lockorder.h) */

static int poison(eng_db *db, int rc) {
    if (rc == ENG_IOERR || rc == ENG_NOSPACE || rc == ENG_POISONED || rc == ENG_NOMEM) atomic_store(&db->poisoned, 1);
    return rc;
}

/* ---- the log, as the lower layers see it ---- */

int eng_log_append(void *ctx, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end) {
    eng_db *db = ctx;
    int rc = wal_append(db->wal, type, payload, len, start, end);
    if (rc == ENG_OK) {
        atomic_fetch_add_explicit(&db->wal_bytes, len + WAL_REC_HDR, memory_order_relaxed);
        atomic_fetch_add_explicit(&db->wal_records, 1, memory_order_relaxed);
    }
    return rc;
}

/* Write-ahead rule for page write-back.  During recovery (no log open)
 * every record being replayed was fsynced by its first pass. */
int eng_pool_wal_flush(void *ctx, uint64_t upto) {
    eng_db *db = ctx;
    if (!db->wal) return ENG_OK;
    int rc = wal_flush(db->wal, upto);
#ifdef ENG_BROKEN_WRITEBACK_LOG_FLUSH_ERROR_IGNORED
    /* planted bug (tests/mutants.txt): a failed flush is left to the log,
     * which poisons itself (W4), and the write-back goes on: its pages
     * reach the data file though the records up to their LSNs are not
     * durable (their write or fsync failed), and the handle is not
     * poisoned, so a checkpoint can still move the redo point. */
    (void)rc;
    return ENG_OK;
#else
    return rc ? poison(db, rc) : ENG_OK;
#endif
}

/* A frame whose hint bits changed is about to be written (bufpool.h).
 * Default: nothing to log (hints live in the first sector, see page.h).
 * wal_log_hints: a compact record of the leaf's hint area.  hint_fpi with
 * data_checksums or wal_log_hints: PostgreSQL's rule, an image on the
 * first such write after the checkpoint began. */
int eng_pool_hint_log(void *ctx, uint32_t block, const uint8_t *copy, uint64_t lsn, uint64_t *out, uint64_t *flush) {
    eng_db *db = ctx;
    *out = lsn;
    *flush = 0;
    int image = 0;
    if (!db->wal || ph_get_type(copy) != PAGE_LEAF) return ENG_OK;
    int checksums = (db->ctl.flags & CONTROL_FLAG_CHECKSUMS) != 0;
    pa_buf b = {0};
    uint8_t hdr[PA_REC_HDR];
    wr64(hdr + PR_BATCH_LSN_OFF, 0);
    wr32(hdr + PR_OP_OFF, PA_OP_MAINT);
    if (db->opts.hint_fpi && (checksums || db->opts.wal_log_hints)) {
        if (lsn > atomic_load(&db->redo_lsn)) return ENG_OK; /* an image of this cycle exists */
        uint8_t *h = malloc(PA_REC_HDR);
        if (!h) return ENG_NOMEM;
        memcpy(h, hdr, PA_REC_HDR);
        b.p = h;
        b.len = b.cap = PA_REC_HDR;
        pa_put_image(&b, block, copy, db->ctl.page_size, db->opts.wal_compression == ENG_WAL_COMPRESSION_ZSTD);
        image = 1;
    } else if (db->opts.wal_log_hints) {
        uint8_t *h = malloc(PA_REC_HDR);
        if (!h) return ENG_NOMEM;
        memcpy(h, hdr, PA_REC_HDR);
        b.p = h;
        b.len = b.cap = PA_REC_HDR;
        pa_put_hints(&b, block, copy, db->ctl.page_size);
    } else {
        return ENG_OK;
    }
    if (b.oom) {
        pa_buf_free(&b);
        return ENG_NOMEM;
    }
    uint64_t start, end;
    int rc = eng_log_append(db, WAL_REC_PAGES, b.p, b.len, &start, &end);
    if (rc == ENG_OK) {
        atomic_fetch_add_explicit(&db->hint_records, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&db->hint_record_bytes, b.len + WAL_REC_HDR, memory_order_relaxed);
        *flush = end;
#ifdef ENG_BROKEN_HINT_RECORD_MOVES_PAGE_LSN
        /* planted bug (tests/mutants.txt): the page is stamped with the end
         * of the record that logged it whatever the record is, so a compact
         * hint record (no image) also moves the page LSN past the redo
         * point: the page's next change after the checkpoint logs no
         * full-page image, and a write of it torn by a crash cannot be
         * rebuilt (redo reads the torn page: the database does not open). */
        (void)image;
        *out = end;
#else
        if (image) *out = end;
#endif
    }
    pa_buf_free(&b);
    return rc ? poison(db, rc) : ENG_OK;
}

/* Durable sequences: batches' record ends in commit order; the front
 * entries the log's durable point has passed are durable. */
static void seq_note(eng_db *db, uint64_t end, uint64_t seq) {
    pthread_mutex_lock(&db->seq_mu);
    if (db->ring_len == SEQ_RING) { /* forget the oldest: conservative */
        db->ring_head = (db->ring_head + 1) % SEQ_RING;
        db->ring_len--;
    }
    size_t at = (db->ring_head + db->ring_len) % SEQ_RING;
    /* Commits are noted in commit order (under the writer lock): the ring
     * is ascending in both sequence and record end. */
    if (db->ring_len) {
        size_t last = (at + SEQ_RING - 1) % SEQ_RING;
        assert(db->ring[last].seq < seq && db->ring[last].end < end);
        (void)last;
    }
    db->ring[at].end = end;
    db->ring[at].seq = seq;
    db->ring_len++;
    pthread_mutex_unlock(&db->seq_mu);
}

uint64_t eng_durable_seq(eng_db *db) {
    if (!db->wal) return atomic_load(&db->durable_seq);
    uint64_t d = wal_durable_lsn(db->wal);
    pthread_mutex_lock(&db->seq_mu);
    assert(db->ring_head < SEQ_RING && db->ring_len <= SEQ_RING);
    while (db->ring_len && db->ring[db->ring_head].end <= d) {
        if (db->ring[db->ring_head].seq > atomic_load(&db->durable_seq))
            atomic_store(&db->durable_seq, db->ring[db->ring_head].seq);
        db->ring_head = (db->ring_head + 1) % SEQ_RING;
        db->ring_len--;
    }
    pthread_mutex_unlock(&db->seq_mu);
    uint64_t durable = atomic_load(&db->durable_seq);
    /* Only ids already used become durable (read in this order: both grow). */
    assert(durable <= atomic_load(&db->seq));
    return durable;
}

uint64_t eng_last_seq(eng_db *db) { return atomic_load(&db->seq); }
/* ---- checkpoint ---- */

#ifdef ENG_BROKEN_CHECKPOINT_REMOVES_LOG_BELOW_RECORD
/* planted bug (tests/mutants.txt): the log is cut at the checkpoint
 * record, not at its redo point, as if the record were where replay
 * starts: a segment the writers filled while the pool was flushed
 * (between the redo point and the record) is removed or recycled, and
 * after a crash before the next checkpoint the open refuses the database
 * (F4: a segment control needs is missing). */
#define CKPT_LOG_CUT(redo, record) (record)
#else
/* Where a checkpoint cuts the log: its redo point, where replay starts. */
#define CKPT_LOG_CUT(redo, record) (redo)
#endif

/* CLOSING: the last checkpoint of the handle (nothing is written after
 * it), which may hand the unused ids of the lease back: every page and
 * record is on disk, so no id above the last one used exists anywhere. */
int eng_checkpoint_as(eng_db *db, int closing) {
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    eng_lock(&db->ckpt_mu, LK_CKPT);
#ifdef ENG_BROKEN_CHECKPOINT_REDO_BEFORE_WRITER_LOCK
    /* planted bug (tests/mutants.txt): the redo point is read before the
     * writer lock is taken, so a batch another thread is applying may lie
     * across it (its batch record below, its page records above), and the
     * pages it changes meanwhile log no image for this checkpoint. */
    uint64_t redo = wal_insert_lsn(db->wal);
#endif
    eng_lock(&db->write_mu, LK_WRITE);
    if (atomic_load(&db->poisoned)) {
        /* A write failed half-applied since the check above: its pages
         * must never be written, nor the redo point move past it. */
        eng_unlock(&db->write_mu, LK_WRITE);
        eng_unlock(&db->ckpt_mu, LK_CKPT);
        return ENG_POISONED;
    }
#ifndef ENG_BROKEN_CHECKPOINT_REDO_BEFORE_WRITER_LOCK
    uint64_t redo = wal_insert_lsn(db->wal);
#endif
    uint64_t last_seq = atomic_load(&db->seq);
    uint32_t nblocks = bt_nblocks(db->bt);
    /* The redo point only moves forward (open sets it at or below the end
     * of the log it resumes at, and the log only grows). */
    assert(redo >= atomic_load(&db->redo_lsn));
    /* From here every first change of a page logs its image. */
#ifdef ENG_BROKEN_REDO_POINT_PUBLISHED_AFTER_FLUSH
    /* planted bug (tests/mutants.txt): the writers learn the new redo
     * point only with the control file that names it (below): a page whose
     * first change since that point comes while the pool is flushed logs
     * no image, and a torn write of it before the next checkpoint cannot
     * be rebuilt by redo, which starts at that point. */
#else
    atomic_store(&db->redo_lsn, redo);
#endif
    atomic_store(&db->ckpt_due, 0);
    eng_unlock(&db->write_mu, LK_WRITE);

    ENG_DELAY_POINT(FP_DELAY_CKPT_AFTER_REDO);
    int rc = bp_flush_all(db->bp);
#ifdef ENG_BROKEN_CHECKPOINT_SKIPS_DATA_FSYNC
    /* planted bug (tests/mutants.txt): the data file is not fsynced before
     * the checkpoint moves the redo point past the pages just written. */
#else
    if (rc == ENG_OK) rc = io_sync(db->io, &db->data);
#endif
    atomic_fetch_add(&db->syncs, 1);
    if (rc == ENG_OK) ENG_KILL_POINT(FP_KILL_CKPT_DATA);
    uint64_t cstart = 0, cend = 0;
    if (rc == ENG_OK) {
        uint8_t rec[CK_SIZE];
        wr64(rec + CK_REDO_OFF, redo);
        wr64(rec + CK_LAST_SEQ_OFF, last_seq);
        wr64(rec + CK_NBLOCKS_OFF, nblocks);
        rc = eng_log_append(db, WAL_REC_CHECKPOINT, rec, sizeof rec, &cstart, &cend);
    }
    /* The checkpoint record follows its redo point. */
    assert(rc != ENG_OK || (cstart >= redo && cend > cstart));
    if (rc == ENG_OK) rc = wal_flush(db->wal, cend);
    if (rc == ENG_OK) eng_durable_seq(db);
    if (rc == ENG_OK) {
        ENG_KILL_POINT(FP_KILL_CKPT_RECORD);
        ENG_DELAY_POINT(FP_DELAY_CKPT_BEFORE_CONTROL);
        int injected = ENG_FAULT(FP_CKPT_CONTROL);
        if (injected) rc = io_status_from_errno(injected);
    }
    if (rc == ENG_OK) {
        eng_lock(&db->ctl_mu, LK_CTL);
        control c = db->ctl;
#ifdef ENG_BROKEN_CHECKPOINT_REDO_AT_RECORD
        /* planted bug (tests/mutants.txt): the redo point is taken as the
         * checkpoint record's own position, past the records logged while
         * the pool was being flushed (whose pages it may not have written). */
        c.redo_lsn = cstart;
#else
        c.redo_lsn = redo;
#endif
        assert(c.redo_lsn >= db->ctl.redo_lsn); /* control's redo point only moves forward */
        c.checkpoint_lsn = cstart;
        c.last_seq = last_seq;
        if (closing) c.xid_limit = last_seq + 1;
#ifdef ENG_BROKEN_CHECKPOINT_HWM_COUNTS_LATER_BLOCKS
        /* planted bug (tests/mutants.txt): the high-water mark is the block
         * count now, not the one taken with the redo point: blocks allocated
         * after the checkpoint record, by records not yet durable, count as
         * written and synced. */
        nblocks = bt_nblocks(db->bt);
#endif
        if (nblocks > c.hwm) c.hwm = nblocks;
        rc = control_write(db->io, db->dir, &c);
        if (rc == ENG_OK) db->ctl = c;
#ifdef ENG_BROKEN_REDO_POINT_PUBLISHED_AFTER_FLUSH
        if (rc == ENG_OK) atomic_store(&db->redo_lsn, redo);
#endif
        eng_unlock(&db->ctl_mu, LK_CTL);
        if (rc == ENG_OK) {
#ifdef ENG_BROKEN_CHECKPOINT_KEEPS_OLD_HWM
            /* planted bug (tests/mutants.txt): the high-water mark written
             * to control is not published to the open handle, whose pool
             * keeps the one of the open: a block written and synced since,
             * read back all zero (a lost write), passes for a fresh page. */
#else
            atomic_store(&db->hwm, c.hwm);
#endif
            atomic_fetch_add(&db->checkpoints, 1);
            rc = wal_remove_before(db->wal, CKPT_LOG_CUT(redo, cstart));
        }
    }
    /* Poisoned before the next checkpoint may start: one waiting on
     * ckpt_mu would otherwise find the handle clean, write nothing (the
     * pages this one wrote are clean in the pool, though a failed fsync
     * dropped them), fsync with success and move the redo point past
     * them: after the reopen the meta page would count fewer blocks than
     * the high-water mark. */
    if (rc != ENG_CORRUPTION) rc = poison(db, rc);
    eng_unlock(&db->ckpt_mu, LK_CKPT);
    return rc;
}


int eng_checkpoint(eng_db *db) {
    if (db->opts.read_only) return ENG_READONLY;
    return checkpoint(db);
}

int eng_sync(eng_db *db) {
    if (db->opts.read_only) return ENG_READONLY;
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    int rc = wal_flush(db->wal, wal_insert_lsn(db->wal));
    if (rc == ENG_OK) eng_durable_seq(db);
    return rc ? poison(db, rc) : ENG_OK;
}

/* ---- writes ---- */

static int check_key(const void *key, size_t klen) {
    return (!key || klen == 0 || klen > ENG_MAX_KEY) ? ENG_INVALID : ENG_OK;
}

/* ENG_INVALID for a batch the log could not hold or that names no key,
 * ENG_READONLY on a read-only handle, else ENG_OK. */
static int check_batch(const eng_db *db, const eng_op *ops, size_t n) {
    if (!ops || n == 0 || n > ENG_MAX_BATCH_OPS) return ENG_INVALID;
    uint64_t vbytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (check_key(ops[i].key, ops[i].klen)) return ENG_INVALID;
        if (ops[i].kind == ENG_OP_PUT) {
            if ((ops[i].vlen && !ops[i].val) || ops[i].vlen > ENG_MAX_VALUE) return ENG_INVALID;
            vbytes += ops[i].vlen + ops[i].klen;
        } else if (ops[i].kind != ENG_OP_DELETE) {
            return ENG_INVALID;
        }
    }
    if (vbytes > WAL_MAX_RECORD / 2) return ENG_INVALID;
    if (db->opts.read_only) return ENG_READONLY;
    return ENG_OK;
}

/* The control file leases ids ahead (xid_limit): take another lease
 * before SEQ is used. */
static int lease_xid(eng_db *db, uint64_t seq) {
    int rc = ENG_OK;
    eng_lock(&db->ctl_mu, LK_CTL);
    if (seq >= db->ctl.xid_limit) {
        control c = db->ctl;
        c.xid_limit = seq + XID_LEASE;
        rc = control_write(db->io, db->dir, &c);
        if (rc == ENG_OK) db->ctl = c;
    }
    assert(rc != ENG_OK || seq < db->ctl.xid_limit); /* an id is used only under a lease */
    eng_unlock(&db->ctl_mu, LK_CTL);
    return rc;
}

/* Commit batch SEQ (logged at BSTART) when RC is ENG_OK, else abort it
 * (an op failed before changing a page: a corrupt page on the way down):
 * every change made so far is logged, so the handle stays usable and the
 * batch's versions stay invisible (T3).  *BEND moves to the commit
 * record's end. */
static int commit_or_abort(eng_db *db, uint64_t seq, uint64_t bstart, int rc, uint64_t *bend) {
    int status = rc == ENG_OK ? CLOG_COMMITTED : CLOG_ABORTED, cchanged = 0;
    uint64_t cend = 0;
#ifdef ENG_BROKEN_COMMIT_PUBLISHED_BEFORE_STATUS
    /* planted bug (tests/mutants.txt): the id is published as the last
     * commit before bt_commit logs it and sets its status (T2 broken): a
     * reader in between takes a snapshot that includes the batch, finds
     * its versions' writer not committed and hints them aborted. */
    if (status == CLOG_COMMITTED) txn_publish(db->txn, seq);
#endif
    int crc = bt_commit(db->bt, seq, bstart, status, &cend, &cchanged);
    if (crc != ENG_OK) {
        if (rc == ENG_OK) rc = crc;
        atomic_store(&db->poisoned, 1); /* in doubt */
    } else if (status == CLOG_COMMITTED) {
        *bend = cend;
        seq_note(db, cend, seq);
        ENG_DELAY_POINT(FP_DELAY_COMMIT_BEFORE_PUBLISH);
#ifndef ENG_BROKEN_COMMIT_PUBLISHED_BEFORE_STATUS
        txn_publish(db->txn, seq);
#endif
        atomic_fetch_add_explicit(&db->commits, 1, memory_order_relaxed);
        ENG_KILL_POINT(FP_KILL_COMMIT);
    } else {
        /* T1: the aborted id is finished; readers may move past. */
        txn_publish(db->txn, seq);
        atomic_fetch_add_explicit(&db->aborts, 1, memory_order_relaxed);
    }
    return rc;
}

/* The logged batch (at BSTART) applied op by op, then committed or
 * aborted, and with ENG_SYNC_COMMIT its log flushed.  *NOTFOUND when a
 * delete found no key. */
static int apply_batch(eng_db *db, const pa_batch *batch, uint64_t bstart, uint64_t *bend, int *notfound) {
    int rc = ENG_OK, changed = 0, clean = 1;
    for (uint32_t i = 0; i < batch->nops && rc == ENG_OK; i++) {
        if (i) ENG_KILL_POINT(FP_KILL_OP);
        rc = bt_apply_op(db->bt, batch, i, bstart, &changed);
        if (rc == ENG_NOTFOUND) {
            *notfound = 1;
            rc = ENG_OK;
        }
        if (rc != ENG_OK && changed) clean = 0;
    }
    if (rc == ENG_OK || clean) {
        rc = commit_or_abort(db, batch->seq, bstart, rc, bend);
    } else {
        /* Pages changed without their record: in doubt until
         * reopen, where the batch (uncommitted) is aborted. */
        atomic_store(&db->poisoned, 1);
    }
    if (rc == ENG_OK && db->opts.sync_mode == ENG_SYNC_COMMIT) {
        rc = wal_flush(db->wal, *bend);
        if (rc != ENG_OK) atomic_store(&db->poisoned, 1);
        if (rc == ENG_POISONED) rc = ENG_IOERR; /* committed, in doubt: not refused */
    }
    return rc;
}

/* Under write_mu: the batch given the next id (*SEQ), encoded into REC
 * (BLEN bytes), logged (ending at *BEND), applied and committed. */
static int write_locked(eng_db *db, pa_batch *batch, uint8_t *rec, size_t blen, uint64_t *seq, uint64_t *bend,
                        int *notfound) {
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    uint64_t bstart = 0;
    *seq = atomic_load(&db->seq) + 1;
    assert(*seq > txn_last_committed(db->txn)); /* T1: the writer's id is above every finished one */
    batch->seq = *seq;
    pa_batch_encode(rec, *seq, batch->ops, batch->nops);
    int rc = lease_xid(db, *seq);
    if (rc == ENG_OK) rc = eng_log_append(db, WAL_REC_BATCH, rec, blen, &bstart, bend);
    if (rc == ENG_OK) {
        /* The id is used from here on, committed or not. */
        atomic_store(&db->seq, *seq);
        rc = apply_batch(db, batch, bstart, bend, notfound);
    } else {
        poison(db, rc);
    }
    uint64_t every = db->opts.checkpoint_wal_bytes;
    if (every && wal_insert_lsn(db->wal) - atomic_load(&db->redo_lsn) > every) atomic_store(&db->ckpt_due, 1);
    return rc;
}

int eng_write(eng_db *db, const eng_op *ops, size_t n, uint64_t *seqp) {
    if (seqp) *seqp = 0;
    int rc = check_batch(db, ops, n);
    if (rc != ENG_OK) return rc;

    pa_op stackops[8];
    pa_op *pops = n <= 8 ? stackops : malloc(sizeof *pops * n);
    if (!pops) return ENG_NOMEM;
    for (size_t i = 0; i < n; i++) {
        pops[i] = (pa_op){.kind = ops[i].kind == ENG_OP_PUT ? BOP_PUT : BOP_DELETE,
                          .key = ops[i].key,
                          .klen = (uint32_t)ops[i].klen,
                          .val = ops[i].kind == ENG_OP_PUT ? ops[i].val : NULL,
                          .vlen = ops[i].kind == ENG_OP_PUT ? (uint32_t)ops[i].vlen : 0};
    }
    pa_batch batch = {.nops = (uint32_t)n, .ops = pops};
    size_t blen = pa_batch_size(pops, (uint32_t)n);
    uint8_t stackrec[512];
    uint8_t *rec = blen <= sizeof stackrec ? stackrec : malloc(blen);
    if (!rec) {
        if (pops != stackops) free(pops);
        return ENG_NOMEM;
    }

    int notfound = 0;
    uint64_t bend = 0, seq = 0;
    atomic_fetch_add(&db->writers_waiting, 1);
    eng_lock(&db->write_mu, LK_WRITE);
    atomic_fetch_sub(&db->writers_waiting, 1);
    rc = write_locked(db, &batch, rec, blen, &seq, &bend, &notfound);
    eng_unlock(&db->write_mu, LK_WRITE);
#ifdef ENG_BROKEN_GROUP_DURABLE_BEFORE_FSYNC
    /* planted bug (tests/mutants.txt): with group commit the batch is
     * counted durable as soon as it is handed to the group's fsync, not
     * once that fsync returned: while it runs, eng_durable_seq claims the
     * batch and readers learn "xmin committed" hints for its versions (a
     * leaf whose insert record an earlier flush made durable can reach the
     * disk with them before the commit record does). */
    if (rc == ENG_OK && db->opts.sync_mode == ENG_SYNC_GROUP) {
        uint64_t d0 = atomic_load(&db->durable_seq);
        while (d0 < seq && !atomic_compare_exchange_weak(&db->durable_seq, &d0, seq)) {}
    }
#endif
    if (rc == ENG_OK && db->opts.sync_mode == ENG_SYNC_GROUP) {
        rc = wal_flush(db->wal, bend);
        if (rc) atomic_store(&db->poisoned, 1);
        /* The batch committed (readers may have seen it) and its commit
         * record may be on disk: in doubt, never "refused". */
        if (rc == ENG_POISONED) rc = ENG_IOERR;
    }
    if (rc == ENG_OK && db->opts.sync_mode != ENG_SYNC_OFF) {
        uint64_t d = atomic_load(&db->durable_seq);
        while (d < seq && !atomic_compare_exchange_weak(&db->durable_seq, &d, seq)) {}
    }
    if (rec != stackrec) free(rec);
    if (pops != stackops) free(pops);
    atomic_fetch_add_explicit(&db->batches, 1, memory_order_relaxed);
    if (rc == ENG_OK && atomic_load(&db->ckpt_due) && atomic_exchange(&db->ckpt_due, 0)) {
        /* The batch is committed: a checkpoint that fails says so (its
         * fault is this call's), but ENG_POISONED would say the batch was
         * refused, which it was not (another thread's failure). */
        rc = checkpoint(db);
        if (rc == ENG_POISONED) rc = ENG_OK;
    }
    if (seqp && seq && (rc == ENG_OK || rc == ENG_NOTFOUND)) *seqp = seq;
    return rc == ENG_OK && notfound && n == 1 ? ENG_NOTFOUND : rc;
}

int eng_put(eng_db *db, const void *key, size_t klen, const void *val, size_t vlen, uint64_t *seq) {
    eng_op op = {.kind = ENG_OP_PUT, .key = key, .klen = klen, .val = val, .vlen = vlen};
    atomic_fetch_add_explicit(&db->puts, 1, memory_order_relaxed);
    return eng_write(db, &op, 1, seq);
}

int eng_delete(eng_db *db, const void *key, size_t klen, uint64_t *seq) {
    eng_op op = {.kind = ENG_OP_DELETE, .key = key, .klen = klen};
    atomic_fetch_add_explicit(&db->deletes, 1, memory_order_relaxed);
    return eng_write(db, &op, 1, seq);
}

int eng_get(eng_db *db, const void *key, size_t klen, eng_buf *val) {
    if (check_key(key, klen) || !val) return ENG_INVALID;
    /* After a failed write or fsync the kernel may have dropped pages:
     * a page read back now could be older than what was acknowledged. */
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    atomic_fetch_add_explicit(&db->gets, 1, memory_order_relaxed);
    return bt_get(db->bt, 0, key, klen, val);
}

int eng_get_at(eng_db *db, const eng_snapshot *s, const void *key, size_t klen, eng_buf *val) {
    if (check_key(key, klen) || !val) return ENG_INVALID;
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    atomic_fetch_add_explicit(&db->gets, 1, memory_order_relaxed);
    /* Snapshot 0 (before any commit) sees nothing. */
    if (s && txn_snapshot_seq(s) == 0) return ENG_NOTFOUND;
    return bt_get(db->bt, s ? txn_snapshot_seq(s) : 0, key, klen, val);
}

int eng_poisoned(eng_db *db) { return atomic_load(&db->poisoned) != 0; }

int eng_snapshot_acquire(eng_db *db, eng_snapshot **out) {
    if (!db || !out) return ENG_INVALID;
    return txn_snapshot_acquire(db->txn, out);
}

uint64_t eng_snapshot_seq(const eng_snapshot *s) { return s ? txn_snapshot_seq(s) : 0; }

void eng_snapshot_release(eng_db *db, eng_snapshot *s) {
    if (db && s) txn_snapshot_release(db->txn, s);
}

/* ---- vacuum ---- */

int eng_vacuum(eng_db *db, eng_vacuum_stats *st) {
    eng_vacuum_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    if (db->opts.read_only) return ENG_READONLY;
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    bt_cursor at = {.set = 0}, next;
    bt_vac_stats vs = {0};
    int rc = ENG_OK;
    /* One leaf per turn of the write lock, so writers wait for a leaf, not
     * for the whole pass; the horizon is taken anew each turn (T4). */
    for (;;) {
        eng_lock(&db->write_mu, LK_WRITE);
        if (atomic_load(&db->poisoned)) {
            eng_unlock(&db->write_mu, LK_WRITE);
            rc = ENG_POISONED;
            break;
        }
        uint64_t horizon = txn_horizon(db->txn, NULL, NULL);
        assert(horizon <= txn_last_committed(db->txn)); /* T4 (no commit meanwhile: writer lock) */
        uint64_t age = db->opts.vacuum_freeze_min_age;
        uint64_t freeze_below = horizon > age ? horizon - age : 0;
        if (age == 0) freeze_below = horizon + 1;
        st->horizon = horizon;
        /* Hints for commits need them durable: learn how far that is. */
        eng_durable_seq(db);
        int changed = 0;
        rc = bt_vacuum_leaf(db->bt, &at, horizon, freeze_below, &next, &vs, &changed);
        if (rc != ENG_OK && changed) atomic_store(&db->poisoned, 1);
        eng_unlock(&db->write_mu, LK_WRITE);
        if (rc != ENG_OK || !next.set) break;
        at = next;
    }
    st->leaves = vs.leaves;
    st->versions = vs.versions;
    st->removed = vs.removed;
    st->frozen = vs.frozen;
    st->hinted = vs.hinted;
    st->overflow_pages_freed = vs.freed;
    atomic_fetch_add(&db->vacuums, 1);
    if (rc == ENG_OK && db->opts.sync_mode == ENG_SYNC_COMMIT) rc = poison(db, eng_sync(db));
    return rc;
}

void eng_get_recovery_info(eng_db *db, eng_recovery_info *out) { *out = db->rinfo; }

/* ---- iterators ---- */

struct eng_iter {
    eng_db *db;
    const eng_snapshot *snap;
    eng_snapshot *own; /* acquired at open when none was given */
    uint8_t *lower, *upper;
    size_t lower_len, upper_len;
    int has_lower, has_upper;
    bt_leafcopy lc;
    size_t pos;
    int valid;
    uint8_t key[ENG_MAX_KEY]; /* current key, kept to re-seek from */
    size_t klen;
};

int eng_iter_open(eng_db *db, const eng_iter_options *o, eng_iter **out) {
    *out = NULL;
    eng_iter *it = calloc(1, sizeof *it);
    if (!it) return ENG_NOMEM;
    it->db = db;
    if (o && o->snapshot) {
        it->snap = o->snapshot;
    } else {
        int rc = txn_snapshot_acquire(db->txn, &it->own);
        if (rc) {
            free(it);
            return rc;
        }
        it->snap = it->own;
    }
    if (o && o->lower) {
        it->lower = malloc(o->lower_len ? o->lower_len : 1);
        if (!it->lower) {
            eng_iter_close(it);
            return ENG_NOMEM;
        }
        memcpy(it->lower, o->lower, o->lower_len);
        it->lower_len = o->lower_len;
        it->has_lower = 1;
    }
    if (o && o->upper) {
        it->upper = malloc(o->upper_len ? o->upper_len : 1);
        if (!it->upper) {
            eng_iter_close(it);
            return ENG_NOMEM;
        }
        memcpy(it->upper, o->upper, o->upper_len);
        it->upper_len = o->upper_len;
        it->has_upper = 1;
    }
    *out = it;
    return ENG_OK;
}

void eng_iter_close(eng_iter *it) {
    if (!it) return;
    bt_leafcopy_free(&it->lc);
    if (it->own) txn_snapshot_release(it->db->txn, it->own);
    free(it->lower);
    free(it->upper);
    free(it);
}

/* Settle on lc entry pos, applying bounds. */
static int settle(eng_iter *it) {
    it->valid = 0;
    if (it->pos >= it->lc.n) return ENG_NOTFOUND;
    const bt_entry *e = &it->lc.e[it->pos];
    const uint8_t *k = it->lc.buf + e->koff;
    if (it->lc.forward) {
        if (it->has_upper && key_cmp(k, e->klen, it->upper, it->upper_len) >= 0) return ENG_NOTFOUND;
    } else {
        if (it->has_lower && key_cmp(k, e->klen, it->lower, it->lower_len) < 0) return ENG_NOTFOUND;
    }
    memcpy(it->key, k, e->klen);
    it->klen = e->klen;
    it->valid = 1;
    return ENG_OK;
}

static int iter_seek_mode(eng_iter *it, const void *k, size_t kl, int mode) {
    it->valid = 0;
    it->pos = 0;
    if (atomic_load(&it->db->poisoned)) return ENG_POISONED; /* as eng_get */
    uint64_t S = txn_snapshot_seq(it->snap);
    if (S == 0) {
        it->lc.n = 0;
        return ENG_NOTFOUND;
    } /* before any commit */
#ifdef ENG_BROKEN_ITER_OWN_SNAPSHOT_READS_LATEST
    /* planted bug (tests/mutants.txt): an iterator that took its own
     * snapshot uses it only to hold the horizon and reads each leaf at the
     * last commit (0): a write committed between two leaf copies of one
     * scan shows in the later ones, so the scan is no consistent view. */
    int rc = bt_seek(it->db->bt, it->own ? 0 : S, k, kl, mode, &it->lc);
#else
    int rc = bt_seek(it->db->bt, S, k, kl, mode, &it->lc);
#endif
    if (rc) return rc;
    return settle(it);
}

int eng_iter_first(eng_iter *it) {
    return it->has_lower ? iter_seek_mode(it, it->lower, it->lower_len, BT_GE) : iter_seek_mode(it, NULL, 0, BT_GE);
}

int eng_iter_last(eng_iter *it) {
    return it->has_upper ? iter_seek_mode(it, it->upper, it->upper_len, BT_LT) : iter_seek_mode(it, NULL, 0, BT_LE);
}

int eng_iter_seek(eng_iter *it, const void *k, size_t kl) {
    if (check_key(k, kl)) return ENG_INVALID;
    if (it->has_lower && key_cmp(k, kl, it->lower, it->lower_len) < 0) return eng_iter_first(it);
    return iter_seek_mode(it, k, kl, BT_GE);
}

int eng_iter_seek_prev(eng_iter *it, const void *k, size_t kl) {
    if (check_key(k, kl)) return ENG_INVALID;
    if (it->has_upper && key_cmp(k, kl, it->upper, it->upper_len) >= 0) return eng_iter_last(it);
    return iter_seek_mode(it, k, kl, BT_LE);
}

int eng_iter_next(eng_iter *it) {
    if (!it->valid) return ENG_INVALID;
    if (it->lc.forward && it->pos + 1 < it->lc.n) {
        it->pos++;
        return settle(it);
    }
#ifdef ENG_BROKEN_ITER_RESEEK_INCLUDES_LAST_KEY
    /* planted bug (tests/mutants.txt): the re-seek past a leaf copy starts
     * at its last key, not after it: that key comes back (and for ever
     * where the new copy holds only it). */
    return iter_seek_mode(it, it->key, it->klen, BT_GE);
#else
    return iter_seek_mode(it, it->key, it->klen, BT_GT);
#endif
}

int eng_iter_prev(eng_iter *it) {
    if (!it->valid) return ENG_INVALID;
#ifdef ENG_BROKEN_ITER_PREV_AFTER_NEXT_STAYS_FORWARD
    /* planted bug (tests/mutants.txt): the copy's direction is not looked
     * at, as if the copy in hand always ran the way of the call: after
     * eng_iter_first, eng_iter_seek or eng_iter_next the copy ascends, and
     * eng_iter_prev steps on through it to the next larger key instead of
     * re-seeking below the current one: a scan that turns round goes on
     * the way it came, returning larger keys as the smaller ones. */
    if (it->pos + 1 < it->lc.n) {
#else
    if (!it->lc.forward && it->pos + 1 < it->lc.n) {
#endif
        it->pos++;
        return settle(it);
    }
    return iter_seek_mode(it, it->key, it->klen, BT_LT);
}

int eng_iter_valid(const eng_iter *it) { return it && it->valid; }

const void *eng_iter_key(const eng_iter *it, size_t *klen) {
    if (!it->valid) {
        if (klen) *klen = 0;
        return NULL;
    }
    const bt_entry *e = &it->lc.e[it->pos];
    if (klen) *klen = e->klen;
    return it->lc.buf + e->koff;
}

const void *eng_iter_value(const eng_iter *it, size_t *vlen) {
    if (!it->valid) {
        if (vlen) *vlen = 0;
        return NULL;
    }
    const bt_entry *e = &it->lc.e[it->pos];
    if (vlen) *vlen = e->vlen;
    return it->lc.buf + e->voff;
}

/* ---- fault points ---- */

#define FP_ENTRY(id, name, what) [id] = {name, what},
const eng_fault_point eng_fault_points[FP_COUNT] = {ENG_FAULT_POINTS(FP_ENTRY)};
#undef FP_ENTRY

#ifdef FIU_ENABLE
_Atomic int eng_faults_armed_flag;
int eng_faults_compiled(void) { return 1; }
void eng_faults_arm(int on) { atomic_store(&eng_faults_armed_flag, on != 0); }
#else
int eng_faults_compiled(void) { return 0; }
void eng_faults_arm(int on) { (void)on; }
#endif

size_t eng_fault_point_count(void) { return FP_COUNT; }
const char *eng_fault_point_name(size_t i) { return i < FP_COUNT ? eng_fault_points[i].name : NULL; }
const char *eng_fault_point_what(size_t i) { return i < FP_COUNT ? eng_fault_points[i].what : NULL; }

/* ---- stats and debug ---- */

int eng_get_stats(eng_db *db, eng_stats *st) {
    memset(st, 0, sizeof *st);
    bp_stats b;
    bp_get_stats(db->bp, &b);
    st->page_size = db->ctl.page_size;
    st->data_checksums = (db->ctl.flags & CONTROL_FLAG_CHECKSUMS) != 0;
    st->io_backend = io_backend(db->io);
    st->cache_pages = b.frames;
    st->cache_size = b.frames * db->ctl.page_size;
    uint64_t size = 0;
    io_size(db->io, &db->data, &size);
    st->data_file_bytes = size;
    st->nblocks = bt_nblocks(db->bt);
    st->overflow_pages_written = bt_overflow_pages(db->bt);
    st->high_water_mark = atomic_load(&db->hwm);
    st->page_reads = b.reads;
    st->page_writes = b.writes;
    st->cache_hits = b.hits;
    st->cache_misses = b.misses;
    st->evictions = b.evictions;
    st->syncs = atomic_load(&db->syncs); /* + the log's, below */
    st->puts = atomic_load(&db->puts);
    st->deletes = atomic_load(&db->deletes);
    st->gets = atomic_load(&db->gets);
    st->batches = atomic_load(&db->batches);
    st->last_seq = atomic_load(&db->seq);
    st->durable_seq = eng_durable_seq(db);
    st->sync_mode = db->opts.sync_mode;
    st->full_page_writes = db->opts.full_page_writes;
    st->wal_compression = db->opts.wal_compression;
    st->wal_segment_size = db->ctl.seg_size;
    st->wal_bytes = atomic_load(&db->wal_bytes);
    st->wal_records = atomic_load(&db->wal_records);
    bt_image_stats(db->bt, &st->images, &st->image_bytes, &st->image_raw_bytes);
    st->checkpoints = atomic_load(&db->checkpoints);
    if (db->wal) {
        wal_stats ws;
        wal_get_stats(db->wal, &ws);
        st->wal_written_bytes = ws.bytes_written;
        st->wal_syncs = ws.syncs;
        st->syncs += ws.syncs;
        st->archive_bytes = ws.archive_bytes;
        st->segments_archived = ws.segments_archived;
        st->segments_removed = ws.segments_removed;
        st->segments_recycled = ws.segments_recycled;
        st->wal_insert_lsn = wal_insert_lsn(db->wal);
        st->wal_durable_lsn = wal_durable_lsn(db->wal);
    }
    for (int i = 0; i < ENG_LAYER_COUNT; i++) st->corruption[i] = atomic_load(&db->corruption[i]);
    st->txn_commits = atomic_load(&db->commits);
    st->txn_aborts = atomic_load(&db->aborts);
    txn_horizon(db->txn, &st->snapshots_active, &st->oldest_snapshot_seq);
    bt_version_stats(db->bt, &st->hints_set, &st->versions_pruned);
    st->hint_pages_written = b.hint_writes;
    st->hint_wal_records = atomic_load(&db->hint_records);
    st->hint_wal_bytes = atomic_load(&db->hint_record_bytes);
    st->vacuums = atomic_load(&db->vacuums);
    st->wal_log_hints = db->opts.wal_log_hints;
    st->block_protection_bytes_per_key = db->opts.block_protection_bytes_per_key;
    st->kv_protection_bytes = b.kv_bytes;
    st->kv_protection_pages = b.kv_pages;
    st->kv_protection_keys = b.kv_keys;
    st->kv_checks = b.kv_checks;
    st->kv_check_bytes = b.kv_check_bytes;
    st->kv_code_bytes = b.kv_code_bytes;
    st->kv_lazy_leaves = b.kv_lazy_leaves;
    st->kv_lazy_coded = b.kv_lazy_coded;
    st->hint_fpi = db->opts.hint_fpi;
    return ENG_OK;
}

int eng_last_corruption(eng_db *db, eng_corruption *out) {
    pthread_mutex_lock(&db->last_mu);
    int has = db->has_last;
    if (has) *out = db->last;
    pthread_mutex_unlock(&db->last_mu);
    return has;
}

void *eng_debug_frame_bytes(eng_db *db, uint64_t block, size_t *page_size) {
    if (block > UINT32_MAX) return NULL;
    bp_frame *f = bp_pin_resident(db->bp, (uint32_t)block);
    if (!f) return NULL;
    /* Exclusive: the page is at rest (no operation between its check and
     * its use, no reader setting a hint in the same byte).  The caller
     * holds no latch, so waiting here closes no cycle (L2). */
    if (!bp_latch_resident(db->bp, f, (uint32_t)block)) return NULL;
    if (page_size) *page_size = db->ctl.page_size;
    return f->data;
}

void eng_debug_frame_release(eng_db *db, uint64_t block) {
    /* The pin taken above is on the frame still caching BLOCK (a pinned
     * frame is never evicted), so find it again and drop both pins. */
    bp_frame *f = bp_pin_resident(db->bp, (uint32_t)block);
    if (!f) return;
    bp_unpin(db->bp, f);
    bp_release(db->bp, f, BP_EXCL);
}

int eng_debug_frame_check(eng_db *db, uint64_t block) {
    if (block > UINT32_MAX || !bp_kv_width(db->bp)) return -1;
    /* The caller holds the frame pinned and latched (eng_debug_frame_bytes):
     * this pin finds the same frame, and no one changes it meanwhile. */
    bp_frame *f = bp_pin_resident(db->bp, (uint32_t)block);
    if (!f) return -1;
    int rc = f->kv_on ? bp_kv_check_all(db->bp, f) != ENG_OK : -1;
    bp_unpin(db->bp, f);
    return rc;
}

int eng_debug_frame_mismatches(eng_db *db, uint64_t block, int *page) {
    *page = 0;
    if (block > UINT32_MAX) return -1;
    /* Held pinned and latched by the caller, as above. */
    bp_frame *f = bp_pin_resident(db->bp, (uint32_t)block);
    if (!f) return -1;
    int n = bp_kv_mismatches(db->bp, f, page);
    bp_unpin(db->bp, f);
    return n;
}

int eng_debug_frame_code(eng_db *db, uint64_t block) {
    if (block > UINT32_MAX) return -1;
    /* Held pinned and latched exclusively by the caller, as above. */
    bp_frame *f = bp_pin_resident(db->bp, (uint32_t)block);
    if (!f) return -1;
    int rc = bp_kv_code_lazy(db->bp, f) != ENG_OK;
    bp_unpin(db->bp, f);
    return rc;
}

uint64_t eng_debug_nblocks(eng_db *db) { return bt_nblocks(db->bt); }
