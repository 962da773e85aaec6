/*
 * engine.c -- the handle: open (create or recover), writes and commit,
 * checkpoints, the public calls, verify and stats.
 *
 * Files of a database directory:
 *   LOCK     flock()ed exclusively while a handle is open (dies with the
 *            process, so a crashed holder never blocks recovery)
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
 *   1. logs its batch as one WAL_REC_BATCH record: this is the commit;
 *   2. applies each operation to the tree, each logging its page actions
 *      as one WAL_REC_PAGES record (atomic multi-page changes);
 *   3. by sync_mode: commit fsyncs the log before releasing the lock;
 *      group releases the lock and then waits for an fsync that covers its
 *      batch (one fsync serves every writer waiting); off returns at once.
 * Recovery replays pages from the redo point, then completes a last batch
 * whose commit reached the log before all its operations did: a batch is
 * all or nothing.
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
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btree.h"
#include "bufpool.h"
#include "control.h"
#include "faultpoints.h"
#include "io.h"
#include "page.h"
#include "pageop.h"
#include "recovery.h"
#include "status.h"
#include "txn.h"
#include "wal.h"

#define DATA_NAME "data"
#define LOCK_NAME "LOCK"
#define CREATING_NAME "CREATING"
#define DATA_FILE_ID 0
#define MIN_FRAMES 16u
#define SEQ_RING 4096u
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
    pthread_mutex_t ctl_mu;      /* db->ctl and the control file (a leaf lock:
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
    struct { uint64_t end, seq; } ring[SEQ_RING];
    size_t ring_head, ring_len;
    _Atomic int ckpt_due;
    _Atomic int writers_waiting;
    eng_recovery_info rinfo;
    txn_mgr *txn;
    _Atomic uint64_t commits, aborts, vacuums, hint_records, hint_record_bytes;
};

void eng_options_init(eng_options *o) {
    memset(o, 0, sizeof *o);
    o->page_size = 8192;
    o->data_checksums = 1;
    o->wal_segment_size = 16u << 20;
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
static void db_report(void *ctx, const eng_corruption *r) {
    eng_db *db = ctx;
    if (r->layer >= 0 && r->layer < ENG_LAYER_COUNT) atomic_fetch_add(&db->corruption[r->layer], 1);
    pthread_mutex_lock(&db->last_mu);
    db->last = *r;
    db->has_last = 1;
    pthread_mutex_unlock(&db->last_mu);
    if (db->opts.on_corruption) db->opts.on_corruption(db->opts.on_corruption_ctx, r);
}

/* The lock file is created only by an open that may create the database:
 * a read-only look at a directory that holds none changes nothing. */
static int take_lock(eng_db *db, int create) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", db->dir, LOCK_NAME);
    db->lockfd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (db->lockfd < 0) return errno == ENOENT ? ENG_NOTFOUND : io_status_from_errno(errno);
    if (flock(db->lockfd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(db->lockfd);
        db->lockfd = -1;
        return e == EWOULDBLOCK ? ENG_BUSY : io_status_from_errno(e);
    }
    return ENG_OK;
}

static void free_handle(eng_db *db) {
    if (db->bt) bt_close(db->bt);
    if (db->wal) wal_close(db->wal);
    if (db->bp) bp_destroy(db->bp);
    if (db->data_open) io_close(db->io, &db->data);
    if (db->io) io_ctx_destroy(db->io);
    if (db->lockfd >= 0) close(db->lockfd); /* releases the flock */
    txn_destroy(db->txn);
    pthread_mutex_destroy(&db->write_mu);
    pthread_mutex_destroy(&db->ckpt_mu);
    pthread_mutex_destroy(&db->ctl_mu);
    pthread_mutex_destroy(&db->last_mu);
    pthread_mutex_destroy(&db->seq_mu);
    free(db);
}

static int valid_page_size(uint32_t ps) { return ps == 4096 || ps == 8192 || ps == 16384; }

static int poison(eng_db *db, int rc) {
    if (rc == ENG_IOERR || rc == ENG_NOSPACE || rc == ENG_POISONED || rc == ENG_NOMEM)
        atomic_store(&db->poisoned, 1);
    return rc;
}

/* ---- the log, as the lower layers see it ---- */

static int log_append(void *ctx, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end) {
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
static int pool_wal_flush(void *ctx, uint64_t upto) {
    eng_db *db = ctx;
    if (!db->wal) return ENG_OK;
    int rc = wal_flush(db->wal, upto);
    return rc ? poison(db, rc) : ENG_OK;
}

/* A frame whose hint bits changed is about to be written (bufpool.h).
 * Default: nothing to log (hints live in the first sector, see page.h).
 * wal_log_hints: a compact record of the leaf's hint area.  hint_fpi with
 * data_checksums or wal_log_hints: PostgreSQL's rule, an image on the
 * first such write after the checkpoint began. */
static int pool_hint_log(void *ctx, uint32_t block, const uint8_t *copy, uint64_t lsn, uint64_t *out,
                         uint64_t *flush) {
    eng_db *db = ctx;
    *out = lsn;
    *flush = 0;
    int image = 0;
    if (!db->wal || ph_get_type(copy) != PAGE_LEAF) return ENG_OK;
    int checksums = (db->ctl.flags & CONTROL_FLAG_CHECKSUMS) != 0;
    pa_buf b = {0};
    uint8_t hdr[PA_REC_HDR];
    wr64(hdr, 0);
    wr32(hdr + 8, PA_OP_MAINT);
    if (db->opts.hint_fpi && (checksums || db->opts.wal_log_hints)) {
        if (lsn > atomic_load(&db->redo_lsn)) return ENG_OK; /* an image of this cycle exists */
        uint8_t *h = malloc(PA_REC_HDR);
        if (!h) return ENG_NOMEM;
        memcpy(h, hdr, PA_REC_HDR);
        b.p = h; b.len = b.cap = PA_REC_HDR;
        pa_put_image(&b, block, copy, db->ctl.page_size, db->opts.wal_compression == ENG_WAL_COMPRESSION_ZSTD);
        image = 1;
    } else if (db->opts.wal_log_hints) {
        uint8_t *h = malloc(PA_REC_HDR);
        if (!h) return ENG_NOMEM;
        memcpy(h, hdr, PA_REC_HDR);
        b.p = h; b.len = b.cap = PA_REC_HDR;
        pa_put_hints(&b, block, copy, db->ctl.page_size);
    } else {
        return ENG_OK;
    }
    if (b.oom) { pa_buf_free(&b); return ENG_NOMEM; }
    uint64_t start, end;
    int rc = log_append(db, WAL_REC_PAGES, b.p, b.len, &start, &end);
    if (rc == ENG_OK) {
        atomic_fetch_add_explicit(&db->hint_records, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&db->hint_record_bytes, b.len + WAL_REC_HDR, memory_order_relaxed);
        *flush = end;
        if (image) *out = end;
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
    db->ring[at].end = end;
    db->ring[at].seq = seq;
    db->ring_len++;
    pthread_mutex_unlock(&db->seq_mu);
}

uint64_t eng_durable_seq(eng_db *db) {
    if (!db->wal) return atomic_load(&db->durable_seq);
    uint64_t d = wal_durable_lsn(db->wal);
    pthread_mutex_lock(&db->seq_mu);
    while (db->ring_len && db->ring[db->ring_head].end <= d) {
        if (db->ring[db->ring_head].seq > atomic_load(&db->durable_seq))
            atomic_store(&db->durable_seq, db->ring[db->ring_head].seq);
        db->ring_head = (db->ring_head + 1) % SEQ_RING;
        db->ring_len--;
    }
    pthread_mutex_unlock(&db->seq_mu);
    return atomic_load(&db->durable_seq);
}

uint64_t eng_last_seq(eng_db *db) { return atomic_load(&db->seq); }

/* ---- checkpoint ---- */

/* CLOSING: the last checkpoint of the handle (nothing is written after
 * it), which may hand the unused ids of the lease back: every page and
 * record is on disk, so no id above the last one used exists anywhere. */
static int checkpoint_as(eng_db *db, int closing) {
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    pthread_mutex_lock(&db->ckpt_mu);
    pthread_mutex_lock(&db->write_mu);
    if (atomic_load(&db->poisoned)) {
        /* A write failed half-applied since the check above: its pages
         * must never be written, nor the redo point move past it. */
        pthread_mutex_unlock(&db->write_mu);
        pthread_mutex_unlock(&db->ckpt_mu);
        return ENG_POISONED;
    }
    uint64_t redo = wal_insert_lsn(db->wal);
    uint64_t last_seq = atomic_load(&db->seq);
    uint32_t nblocks = bt_nblocks(db->bt);
    /* From here every first change of a page logs its image. */
    atomic_store(&db->redo_lsn, redo);
    atomic_store(&db->ckpt_due, 0);
    pthread_mutex_unlock(&db->write_mu);

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
        uint8_t rec[24];
        wr64(rec, redo);
        wr64(rec + 8, last_seq);
        wr64(rec + 16, nblocks);
        rc = log_append(db, WAL_REC_CHECKPOINT, rec, sizeof rec, &cstart, &cend);
    }
    if (rc == ENG_OK) rc = wal_flush(db->wal, cend);
    if (rc == ENG_OK) eng_durable_seq(db);
    if (rc == ENG_OK) {
        ENG_KILL_POINT(FP_KILL_CKPT_RECORD);
        int injected = ENG_FAULT(FP_CKPT_CONTROL);
        if (injected) rc = io_status_from_errno(injected);
    }
    if (rc == ENG_OK) {
        pthread_mutex_lock(&db->ctl_mu);
        control c = db->ctl;
#ifdef ENG_BROKEN_CHECKPOINT_REDO_AT_RECORD
        /* planted bug (tests/mutants.txt): the redo point is taken as the
         * checkpoint record's own position, past the records logged while
         * the pool was being flushed (whose pages it may not have written). */
        c.redo_lsn = cstart;
#else
        c.redo_lsn = redo;
#endif
        c.checkpoint_lsn = cstart;
        c.last_seq = last_seq;
        if (closing) c.xid_limit = last_seq + 1;
        if (nblocks > c.hwm) c.hwm = nblocks;
        rc = control_write(db->io, db->dir, &c);
        if (rc == ENG_OK) db->ctl = c;
        pthread_mutex_unlock(&db->ctl_mu);
        if (rc == ENG_OK) {
            atomic_store(&db->hwm, c.hwm);
            atomic_fetch_add(&db->checkpoints, 1);
            rc = wal_remove_before(db->wal, redo);
        }
    }
    pthread_mutex_unlock(&db->ckpt_mu);
    return rc == ENG_CORRUPTION ? rc : poison(db, rc);
}

static int checkpoint(eng_db *db) { return checkpoint_as(db, 0); }

int eng_checkpoint(eng_db *db) {
    if (db->opts.read_only) return ENG_READONLY;
    return checkpoint(db);
}

/* ---- open: create, or recover ---- */

static int start_pool(eng_db *db) {
    size_t nframes = db->opts.cache_size / db->ctl.page_size;
    if (nframes < MIN_FRAMES) nframes = MIN_FRAMES;
    bp_config bc = {
        .io = db->io, .file = &db->data, .page_size = db->ctl.page_size, .nframes = nframes,
        .checksums = (db->ctl.flags & CONTROL_FLAG_CHECKSUMS) != 0, .hwm = &db->hwm,
        .reporter = db->rep, .wal_flush = pool_wal_flush, .wal_ctx = db, .hint_log = pool_hint_log,
        .read_only = db->opts.read_only, .poisoned = &db->poisoned,
        .kv_width = (unsigned)db->opts.block_protection_bytes_per_key,
    };
    return bp_create(&bc, &db->bp);
}

static int open_wal(eng_db *db, uint64_t start, uint64_t prev) {
    wal_config wc = {
        .io = db->io, .dir = db->dir, .seg_size = db->ctl.seg_size,
        .buffer_size = db->opts.wal_buffer_size, .gen = db->ctl.wal_gen,
        .start_lsn = start, .prev_lsn = prev,
        .archive_dir = db->archive_dir[0] ? db->archive_dir : NULL, .reporter = db->rep,
    };
    return wal_open(&wc, &db->wal);
}

/* EXTENT: blocks redo rebuilt in memory that the file may not hold yet. */
static int open_tree(eng_db *db, uint64_t extent) {
    uint64_t size = 0;
    io_size(db->io, &db->data, &size);
    if (size / db->ctl.page_size < extent) size = extent * db->ctl.page_size;
    bt_config tc = {
        .bp = db->bp, .page_size = db->ctl.page_size, .reporter = db->rep, .file = DATA_NAME,
        .file_blocks = size / db->ctl.page_size, .hwm = db->ctl.hwm,
        .log_append = log_append, .log_ctx = db, .redo_lsn = &db->redo_lsn,
        .full_page_writes = db->opts.full_page_writes,
        .wal_compression = db->opts.wal_compression == ENG_WAL_COMPRESSION_ZSTD,
        .txn = db->txn, .durable_seq = &db->durable_seq, .no_hints = db->opts.read_only,
        .poisoned = &db->poisoned,
    };
    return bt_open(&tc, &db->bt);
}

/* ---- what a directory holds (F1-F5 at the top of this file) ---- */

typedef struct dir_files {
    int control, control_tmp, creating, data;
    uint64_t data_bytes;
    size_t nsegs;             /* segment files in wal/ */
    uint64_t seg_first, seg_last;
} dir_files;

static int dir_has(const char *dir, const char *name, uint64_t *bytes) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lstat(path, &st) != 0) return 0;
    if (bytes) *bytes = (uint64_t)st.st_size;
    return 1;
}

/* Look, change nothing (stat and readdir are not hooked: they write
 * nothing).  ENG_OK, or the status of a directory that cannot be read. */
static int look_at_dir(const char *dir, dir_files *f) {
    memset(f, 0, sizeof *f);
    f->control = dir_has(dir, CONTROL_NAME, NULL);
    f->control_tmp = dir_has(dir, CONTROL_NAME ".tmp", NULL);
    f->creating = dir_has(dir, CREATING_NAME, NULL);
    f->data = dir_has(dir, DATA_NAME, &f->data_bytes);
    uint64_t *v;
    size_t n;
    int rc = wal_list_segments(dir, &v, &n);
    if (rc != ENG_OK) return rc;
    f->nsegs = n;
    if (n) { f->seg_first = v[0]; f->seg_last = v[n - 1]; }
    free(v);
    return ENG_OK;
}

/* F3: files of a database without control, and no creation marker. */
static int lost_control(const dir_files *f) {
#ifdef ENG_BROKEN_LOST_CONTROL_NEEDS_DATA
    /* planted bug (tests/mutants.txt): only a data file counts as a lost
     * database: WAL segments or control.tmp alone read as an empty
     * directory, and a create_if_missing open removes them. */
    return !f->control && !f->creating && f->data;
#else
    return !f->control && !f->creating && (f->data || f->control_tmp || f->nsegs);
#endif
}

/* The report of F3's refusal: what is missing and what is present. */
static int report_lost_control(const eng_reporter *rep, const dir_files *f) {
    char part[3][64];
    int n = 0;
    if (f->data) snprintf(part[n++], sizeof part[0], "data (%llu bytes)", (unsigned long long)f->data_bytes);
    if (f->nsegs == 1)
        snprintf(part[n++], sizeof part[0], "WAL segment wal/%016llx", (unsigned long long)f->seg_first);
    else if (f->nsegs > 1)
        snprintf(part[n++], sizeof part[0], "%zu WAL segments (wal/%016llx..%llx)", f->nsegs,
                 (unsigned long long)f->seg_first, (unsigned long long)f->seg_last);
    if (f->control_tmp) snprintf(part[n++], sizeof part[0], "control.tmp");
    return eng_report(rep, ENG_LAYER_CONTROL, CONTROL_NAME, -1, -1, -1, 0, f->data_bytes,
                      "control file is missing; present: %s%s%s%s%s (refused: nothing created or changed)", part[0],
                      n > 1 ? ", " : "", n > 1 ? part[1] : "", n > 2 ? ", " : "", n > 2 ? part[2] : "");
}

/* F4's data-file rule (the segments: wal_check_segments). */
static int check_data_present(const eng_reporter *rep, const dir_files *f, const control *c) {
    if (f->data) return ENG_OK;
    return eng_report(rep, ENG_LAYER_CONTROL, DATA_NAME, -1, -1, -1, c->hwm, 0,
                      "data file is missing: control names a database of %u-byte pages, %llu blocks "
                      "synced (high-water mark)", c->page_size, (unsigned long long)c->hwm);
}

/* F2, first step: the marker, durable before any other file of the
 * database can be.  A marker left by an earlier attempt is reused. */
static int write_creating(eng_db *db, int exists) {
    if (exists) return ENG_OK;
    static const char text[] = "a database is being created here (engine/engine.c F2)\n";
    io_file f;
    int rc = io_open(db->io, db->dir, CREATING_NAME, -1, 1, 0, &f);
    if (rc) return rc;
    rc = io_write(db->io, &f, text, sizeof text - 1, 0);
    if (rc == ENG_OK) rc = io_sync(db->io, &f);
    io_close(db->io, &f);
    if (rc == ENG_OK) rc = io_dirsync(db->io, db->dir);
    return rc;
}

/* F3: debris of an interrupted creation (the marker stays: it still
 * covers everything until control is in place). */
static int remove_debris(eng_db *db, const dir_files *f) {
    /* Absent is fine; any other failure may have left the file, and the
     * creation would then build on its old pages. */
    int rc = ENG_OK;
    if (f->data) rc = io_unlink(db->io, db->dir, DATA_NAME);
    if (rc == ENG_NOTFOUND) rc = ENG_OK;
    if (rc == ENG_OK && f->control_tmp) rc = io_unlink(db->io, db->dir, CONTROL_NAME ".tmp");
    if (rc == ENG_NOTFOUND) rc = ENG_OK;
    if (rc == ENG_OK && f->nsegs) rc = wal_remove_segments(db->io, db->dir);
    return rc;
}

/* F2.  F: what the directory holds (no control; maybe debris under a
 * marker).  On error the marker stays, so the next open cleans up. */
static int create_db(eng_db *db, const dir_files *f) {
    db->ctl.page_size = db->opts.page_size;
    db->ctl.flags = db->opts.data_checksums ? CONTROL_FLAG_CHECKSUMS : 0;
    db->ctl.seg_size = db->opts.wal_segment_size;
    db->ctl.wal_gen = 1;
    atomic_store(&db->hwm, 0);
    char wdir[4200];
    snprintf(wdir, sizeof wdir, "%s/%s", db->dir, WAL_DIR);
    int rc = write_creating(db, f->creating);
    if (rc == ENG_OK) rc = remove_debris(db, f);
    if (rc) return rc;
    rc = io_open(db->io, db->dir, DATA_NAME, DATA_FILE_ID, 1, 0, &db->data);
    if (rc) return rc;
    db->data_open = 1;
    if ((rc = start_pool(db))) return rc;
    if ((rc = bt_create(db->bp, db->ctl.page_size))) return rc;
    if ((rc = bp_flush_all(db->bp))) return rc;
    if ((rc = io_sync(db->io, &db->data))) return rc;
    db->ctl.hwm = 2;
    atomic_store(&db->hwm, 2);
    if (mkdir(wdir, 0755) != 0 && errno != EEXIST) return io_status_from_errno(errno);
    if ((rc = open_wal(db, WAL_BLOCK_HDR, 0))) return rc;
    uint8_t rec[24] = {0};
    uint64_t start, end;
    wr64(rec, WAL_BLOCK_HDR);
    wr64(rec + 16, 2);
    if ((rc = log_append(db, WAL_REC_CHECKPOINT, rec, sizeof rec, &start, &end))) return rc;
    if ((rc = wal_flush(db->wal, end))) return rc;
    if ((rc = io_dirsync(db->io, wdir))) return rc;
    if ((rc = io_dirsync(db->io, db->dir))) return rc;
    db->ctl.redo_lsn = WAL_BLOCK_HDR;
    db->ctl.checkpoint_lsn = start;
    db->ctl.last_seq = 0;
    db->ctl.xid_limit = 1 + XID_LEASE;
    if ((rc = control_write(db->io, db->dir, &db->ctl))) return rc;
    /* The database exists from here; the marker is now stale (F5). */
    if ((rc = io_unlink(db->io, db->dir, CREATING_NAME))) return rc;
    if ((rc = io_dirsync(db->io, db->dir))) return rc;
    atomic_store(&db->redo_lsn, db->ctl.redo_lsn);
    return open_tree(db, 0);
}

/* After redo and the commit log's load: every id up to MAX is finished
 * (T1).  The sequence recovery reached is the last committed one, below
 * any aborted ids at the end (they are used, never committed). */
static void settle_recovered(eng_db *db, uint64_t max) {
    txn_publish(db->txn, max);
    uint64_t c = max;
    while (c > 0 && txn_status(db->txn, c) != CLOG_COMMITTED) c--;
    db->rinfo.recovered_seq = c;
    atomic_store(&db->durable_seq, c);
}

static int recover_db(eng_db *db) {
    int rc = io_open(db->io, db->dir, DATA_NAME, DATA_FILE_ID, 0, db->opts.read_only, &db->data);
    if (rc) return rc;
    db->data_open = 1;
    atomic_store(&db->hwm, db->ctl.hwm);
    if ((rc = start_pool(db))) return rc;
    rec_result rr;
    rc = recovery_redo(db->io, db->dir, db->ctl.seg_size, db->ctl.redo_lsn, db->ctl.last_seq,
                       db->bp, db->ctl.page_size, &db->rep, &rr);
    if (rc) { rec_result_free(&rr); return rc; }
    db->rinfo = (eng_recovery_info){
        .redo_lsn = db->ctl.redo_lsn, .end_lsn = rr.end_lsn, .recovered_lsn = rr.last_lsn,
        .recovered_seq = rr.last_seq, .records = rr.records, .actions_applied = rr.actions_applied,
        .actions_skipped = rr.actions_skipped, .images_restored = rr.images_restored,
        .trimmed = rr.trimmed, .txns_committed = rr.txns_committed, .txns_aborted = rr.txns_aborted,
    };
    /* Ids are never reused: an aborted batch's versions keep its id, and
     * ids of the last lease may be on pages whose log records were lost. */
    if (db->ctl.xid_limit > rr.max_seq + 1) rr.max_seq = db->ctl.xid_limit - 1;
    atomic_store(&db->seq, rr.max_seq);
    atomic_store(&db->durable_seq, rr.last_seq);
    atomic_store(&db->redo_lsn, db->ctl.redo_lsn);
    if (db->opts.read_only) {
        /* Redo stays in the pool (never written back): a read-only open
         * shows the recovered state and changes nothing on disk.  A replay
         * larger than the cache fails with ENG_READONLY: open read-write
         * (or with a larger cache) to recover. */
        rec_result_free(&rr);
        if ((rc = open_tree(db, rr.meta_nblocks)) == ENG_OK && (rc = bt_load_clog(db->bt)) == ENG_OK)
            settle_recovered(db, rr.max_seq);
        return rc;
    }
    /* A new generation, durable before any block of it is written. */
    db->ctl.wal_gen = (rr.max_gen > db->ctl.wal_gen ? rr.max_gen : db->ctl.wal_gen) + 1;
    db->ctl.xid_limit = rr.max_seq + 1 + XID_LEASE; /* the first lease, in the same write */
    if ((rc = control_write(db->io, db->dir, &db->ctl))) { rec_result_free(&rr); return rc; }
    if ((rc = open_wal(db, rr.end_lsn, rr.last_lsn))) { rec_result_free(&rr); return rc; }
    if ((rc = open_tree(db, rr.meta_nblocks))) { rec_result_free(&rr); return rc; }
    rec_result_free(&rr);
    /* Every id up to max_seq is finished now (T1): committed per the log,
     * the rest aborted. */
    if ((rc = bt_load_clog(db->bt))) return rc;
    settle_recovered(db, rr.max_seq);
    ENG_KILL_POINT(FP_KILL_RECOVERY_END);
    /* End-of-recovery checkpoint: the replayed state becomes the new
     * starting point, so a crash now does not replay it all again. */
    if (db->rinfo.records > 1) rc = checkpoint(db);
    return rc;
}

int eng_open(const char *dir, const eng_options *opts, eng_db **out) {
    *out = NULL;
    eng_options def;
    if (!opts) { eng_options_init(&def); opts = &def; }
    if (!dir || !*dir || strlen(dir) >= 4000) return ENG_INVALID;
    if (opts->io_backend != ENG_IO_URING && opts->io_backend != ENG_IO_PSYNC) return ENG_INVALID;
    if (!valid_page_size(opts->page_size)) return ENG_INVALID;
    if (opts->sync_mode < ENG_SYNC_COMMIT || opts->sync_mode > ENG_SYNC_OFF) return ENG_INVALID;
    if (opts->wal_compression != ENG_WAL_COMPRESSION_NONE && opts->wal_compression != ENG_WAL_COMPRESSION_ZSTD)
        return ENG_INVALID;
    if (opts->wal_segment_size < (64u << 10) || opts->wal_segment_size > (1ull << 32) ||
        (opts->wal_segment_size & (opts->wal_segment_size - 1)))
        return ENG_INVALID;
    if (opts->wal_buffer_size < 4 * WAL_BLOCK) return ENG_INVALID;
    if (opts->archive_dir && strlen(opts->archive_dir) >= 4000) return ENG_INVALID;
    {
        int w = opts->block_protection_bytes_per_key;
        if (w != 0 && w != 1 && w != 2 && w != 4 && w != 8) return ENG_INVALID;
    }

    eng_db *db = calloc(1, sizeof *db);
    if (!db) return ENG_NOMEM;
    snprintf(db->dir, sizeof db->dir, "%s", dir);
    if (opts->archive_dir) snprintf(db->archive_dir, sizeof db->archive_dir, "%s", opts->archive_dir);
    db->opts = *opts;
    db->opts.archive_dir = NULL; /* kept in db->archive_dir */
    db->lockfd = -1;
    pthread_mutex_init(&db->write_mu, NULL);
    pthread_mutex_init(&db->ckpt_mu, NULL);
    pthread_mutex_init(&db->ctl_mu, NULL);
    pthread_mutex_init(&db->last_mu, NULL);
    pthread_mutex_init(&db->seq_mu, NULL);
    db->rep = (eng_reporter){db_report, db};

    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT || !opts->create_if_missing || opts->read_only) {
            int rc = errno == ENOENT ? ENG_NOTFOUND : io_status_from_errno(errno);
            free_handle(db);
            return rc;
        }
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            int rc = io_status_from_errno(errno);
            free_handle(db);
            return rc;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        free_handle(db);
        return ENG_INVALID;
    }
    if (db->archive_dir[0] && mkdir(db->archive_dir, 0755) != 0 && errno != EEXIST) {
        int rc = io_status_from_errno(errno);
        free_handle(db);
        return rc;
    }

    int rc = txn_create(&db->txn);
    if (rc == ENG_OK) rc = io_ctx_create(opts->io_backend, opts->io_hooks, &db->io);
    dir_files f;
    if (rc == ENG_OK) rc = look_at_dir(dir, &f);
    if (rc == ENG_OK && lost_control(&f)) {
        /* F3: refused before the lock, so not even LOCK is created. */
        rc = report_lost_control(&db->rep, &f);
    } else if (rc == ENG_OK) {
        /* A directory holding a database (control present) gets its LOCK
         * back if it was copied without one; any other directory is
         * touched only by an open that may create. */
        int writable_create = opts->create_if_missing && !opts->read_only;
        rc = take_lock(db, f.control || writable_create);
        /* No LOCK and none made: nobody holds this directory, and what is
         * in it decides below (ENG_NOTFOUND or F3's refusal). */
        if (rc == ENG_NOTFOUND) rc = ENG_OK;
        /* Look again under the lock: a creator may have finished since. */
        if (rc == ENG_OK) rc = look_at_dir(dir, &f);
        if (rc == ENG_OK && f.control) {
            rc = control_read(db->io, dir, &db->ctl, &db->rep);
            if (rc == ENG_NOTFOUND) rc = ENG_IOERR; /* it was there a moment ago */
            if (rc == ENG_OK && opts->error_if_exists) rc = ENG_INVALID;
            if (rc == ENG_OK) rc = check_data_present(&db->rep, &f, &db->ctl);
            if (rc == ENG_OK)
                rc = wal_check_segments(dir, db->ctl.seg_size, db->ctl.redo_lsn, db->ctl.checkpoint_lsn, &db->rep);
            if (rc == ENG_OK) rc = recover_db(db);
            if (rc == ENG_OK && f.creating && !opts->read_only) {
                rc = io_unlink(db->io, dir, CREATING_NAME); /* F5 */
                if (rc == ENG_OK) rc = io_dirsync(db->io, dir);
            }
        } else if (rc == ENG_OK && lost_control(&f)) {
            rc = report_lost_control(&db->rep, &f);
        } else if (rc == ENG_OK) {
            rc = writable_create ? create_db(db, &f) : ENG_NOTFOUND;
        }
    }
    if (rc != ENG_OK) {
        free_handle(db);
        return rc;
    }
    *out = db;
    return ENG_OK;
}

int eng_close(eng_db *db) {
    if (!db) return ENG_INVALID;
    int rc = ENG_OK;
    if (!db->opts.read_only && !atomic_load(&db->poisoned)) rc = checkpoint_as(db, 1);
    else if (atomic_load(&db->poisoned)) rc = ENG_POISONED;
    free_handle(db);
    return rc;
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

int eng_write(eng_db *db, const eng_op *ops, size_t n, uint64_t *seqp) {
    if (seqp) *seqp = 0;
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

    pa_op stackops[8];
    pa_op *pops = n <= 8 ? stackops : malloc(sizeof *pops * n);
    if (!pops) return ENG_NOMEM;
    for (size_t i = 0; i < n; i++) {
        pops[i] = (pa_op){.kind = ops[i].kind == ENG_OP_PUT ? BOP_PUT : BOP_DELETE,
                          .key = ops[i].key, .klen = (uint32_t)ops[i].klen,
                          .val = ops[i].kind == ENG_OP_PUT ? ops[i].val : NULL,
                          .vlen = ops[i].kind == ENG_OP_PUT ? (uint32_t)ops[i].vlen : 0};
    }
    pa_batch batch = {.nops = (uint32_t)n, .ops = pops};
    size_t blen = pa_batch_size(pops, (uint32_t)n);
    uint8_t stackrec[512];
    uint8_t *rec = blen <= sizeof stackrec ? stackrec : malloc(blen);
    if (!rec) { if (pops != stackops) free(pops); return ENG_NOMEM; }

    int rc = ENG_OK, notfound = 0;
    uint64_t bstart = 0, bend = 0, seq = 0;
    atomic_fetch_add(&db->writers_waiting, 1);
    pthread_mutex_lock(&db->write_mu);
    atomic_fetch_sub(&db->writers_waiting, 1);
    if (atomic_load(&db->poisoned)) {
        rc = ENG_POISONED;
    } else {
        seq = atomic_load(&db->seq) + 1;
        batch.seq = seq;
        pa_batch_encode(rec, seq, pops, (uint32_t)n);
        pthread_mutex_lock(&db->ctl_mu);
        if (seq >= db->ctl.xid_limit) {
            control c = db->ctl;
            c.xid_limit = seq + XID_LEASE;
            rc = control_write(db->io, db->dir, &c);
            if (rc == ENG_OK) db->ctl = c;
        }
        pthread_mutex_unlock(&db->ctl_mu);
        if (rc == ENG_OK) rc = log_append(db, WAL_REC_BATCH, rec, blen, &bstart, &bend);
        if (rc == ENG_OK) {
            /* The id is used from here on, committed or not. */
            atomic_store(&db->seq, seq);
            int changed = 0, clean = 1;
            for (uint32_t i = 0; i < n && rc == ENG_OK; i++) {
                if (i) ENG_KILL_POINT(FP_KILL_OP);
                rc = bt_apply_op(db->bt, &batch, i, bstart, &changed);
                if (rc == ENG_NOTFOUND) { notfound = 1; rc = ENG_OK; }
                if (rc != ENG_OK && changed) clean = 0;
            }
            if (rc == ENG_OK || clean) {
                /* Commit, or abort an op that failed before changing a
                 * page (a corrupt page on the way down): every change
                 * made so far is logged, so the handle stays usable and
                 * the batch's versions stay invisible (T3). */
                int status = rc == ENG_OK ? CLOG_COMMITTED : CLOG_ABORTED, cchanged = 0;
                uint64_t cend = 0;
                int crc = bt_commit(db->bt, seq, bstart, status, &cend, &cchanged);
                if (crc != ENG_OK) {
                    if (rc == ENG_OK) rc = crc;
                    atomic_store(&db->poisoned, 1); /* in doubt */
                } else if (status == CLOG_COMMITTED) {
                    bend = cend;
                    seq_note(db, cend, seq);
                    txn_publish(db->txn, seq);
                    atomic_fetch_add_explicit(&db->commits, 1, memory_order_relaxed);
                    ENG_KILL_POINT(FP_KILL_COMMIT);
                } else {
                    /* T1: the aborted id is finished; readers may move past. */
                    txn_publish(db->txn, seq);
                    atomic_fetch_add_explicit(&db->aborts, 1, memory_order_relaxed);
                }
            } else {
                /* Pages changed without their record: in doubt until
                 * reopen, where the batch (uncommitted) is aborted. */
                atomic_store(&db->poisoned, 1);
            }
            if (rc == ENG_OK && db->opts.sync_mode == ENG_SYNC_COMMIT) {
                rc = wal_flush(db->wal, bend);
                if (rc != ENG_OK) atomic_store(&db->poisoned, 1);
                if (rc == ENG_POISONED) rc = ENG_IOERR; /* committed, in doubt: not refused */
            }
        } else {
            poison(db, rc);
        }
        uint64_t every = db->opts.checkpoint_wal_bytes;
        if (every && wal_insert_lsn(db->wal) - atomic_load(&db->redo_lsn) > every)
            atomic_store(&db->ckpt_due, 1);
    }
    pthread_mutex_unlock(&db->write_mu);
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
        pthread_mutex_lock(&db->write_mu);
        if (atomic_load(&db->poisoned)) { pthread_mutex_unlock(&db->write_mu); rc = ENG_POISONED; break; }
        uint64_t horizon = txn_horizon(db->txn, NULL, NULL);
        uint64_t age = db->opts.vacuum_freeze_min_age;
        uint64_t freeze_below = horizon > age ? horizon - age : 0;
        if (age == 0) freeze_below = horizon + 1;
        st->horizon = horizon;
        /* Hints for commits need them durable: learn how far that is. */
        eng_durable_seq(db);
        int changed = 0;
        rc = bt_vacuum_leaf(db->bt, &at, horizon, freeze_below, &next, &vs, &changed);
        if (rc != ENG_OK && changed) atomic_store(&db->poisoned, 1);
        pthread_mutex_unlock(&db->write_mu);
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
        if (rc) { free(it); return rc; }
        it->snap = it->own;
    }
    if (o && o->lower) {
        it->lower = malloc(o->lower_len ? o->lower_len : 1);
        if (!it->lower) { eng_iter_close(it); return ENG_NOMEM; }
        memcpy(it->lower, o->lower, o->lower_len);
        it->lower_len = o->lower_len;
        it->has_lower = 1;
    }
    if (o && o->upper) {
        it->upper = malloc(o->upper_len ? o->upper_len : 1);
        if (!it->upper) { eng_iter_close(it); return ENG_NOMEM; }
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
    if (S == 0) { it->lc.n = 0; return ENG_NOTFOUND; } /* before any commit */
    int rc = bt_seek(it->db->bt, S, k, kl, mode, &it->lc);
    if (rc) return rc;
    return settle(it);
}

int eng_iter_first(eng_iter *it) {
    return it->has_lower ? iter_seek_mode(it, it->lower, it->lower_len, BT_GE)
                         : iter_seek_mode(it, NULL, 0, BT_GE);
}

int eng_iter_last(eng_iter *it) {
    return it->has_upper ? iter_seek_mode(it, it->upper, it->upper_len, BT_LT)
                         : iter_seek_mode(it, NULL, 0, BT_LE);
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
    if (it->lc.forward && it->pos + 1 < it->lc.n) { it->pos++; return settle(it); }
    return iter_seek_mode(it, it->key, it->klen, BT_GT);
}

int eng_iter_prev(eng_iter *it) {
    if (!it->valid) return ENG_INVALID;
    if (!it->lc.forward && it->pos + 1 < it->lc.n) { it->pos++; return settle(it); }
    return iter_seek_mode(it, it->key, it->klen, BT_LT);
}

int eng_iter_valid(const eng_iter *it) { return it && it->valid; }

const void *eng_iter_key(const eng_iter *it, size_t *klen) {
    if (!it->valid) { if (klen) *klen = 0; return NULL; }
    const bt_entry *e = &it->lc.e[it->pos];
    if (klen) *klen = e->klen;
    return it->lc.buf + e->koff;
}

const void *eng_iter_value(const eng_iter *it, size_t *vlen) {
    if (!it->valid) { if (vlen) *vlen = 0; return NULL; }
    const bt_entry *e = &it->lc.e[it->pos];
    if (vlen) *vlen = e->vlen;
    return it->lc.buf + e->voff;
}

/* ---- verify ---- */
/* ---- verify ---- */

typedef struct verify_fwd {
    eng_db *db;
    eng_corruption_fn fn;
    void *ctx;
} verify_fwd;

static void verify_report(void *ctx, const eng_corruption *r) {
    verify_fwd *v = ctx;
    if (v->db) db_report(v->db, r);
    if (v->fn) v->fn(v->ctx, r);
}

/* Read every record of the log from the redo point (pg_waldump's walk):
 * a damaged record in the synced part is a problem (wal.h W3); a torn
 * tail is not. */
static int verify_log(io_ctx *io, const char *dir, const control *ctl, const eng_reporter *rep,
                      uint64_t *problems) {
    wal_reader *r;
    int rc = wal_reader_open(io, dir, ctl->seg_size, ctl->redo_lsn, 0, rep, &r);
    if (rc) return rc;
    wal_record rec;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) {}
    wal_reader_close(r);
    if (rc == ENG_CORRUPTION) { (*problems)++; return ENG_CORRUPTION; }
    return rc == ENG_NOTFOUND ? ENG_OK : rc;
}

int eng_verify(eng_db *db, eng_corruption_fn fn, void *ctx, uint64_t *problems) {
    eng_verify_info info;
    int rc = eng_verify_ex(db, fn, ctx, &info);
    if (problems) *problems = info.problems;
    return rc;
}

int eng_verify_ex(eng_db *db, eng_corruption_fn fn, void *ctx, eng_verify_info *info) {
    memset(info, 0, sizeof *info);
    uint64_t *problems = &info->problems;
    verify_fwd vf = {db, fn, ctx};
    eng_reporter rep = {verify_report, &vf};
    /* The write lock holds the tree still while pages are checked and the
     * log's end in place while it is walked (a log read while records are
     * being added would see a block not yet written before a block that
     * already witnesses it: a false alarm); the checkpoint lock keeps
     * segments from going away.  Readers go on throughout. */
    pthread_mutex_lock(&db->ckpt_mu);
    pthread_mutex_lock(&db->write_mu);
    int rc = bt_verify(db->bt, &rep, problems, info);
    if ((rc == ENG_OK || rc == ENG_CORRUPTION) && db->wal) {
        /* Records still in the buffer are not on disk: write them out so
         * the walk sees the whole log. */
        int wrc = wal_write_out(db->wal);
        if (wrc == ENG_OK) wrc = verify_log(db->io, db->dir, &db->ctl, &rep, problems);
        /* An error that stopped the walk wins over corruption found: the
         * reports say what was found, the status must say the check did
         * not finish (returning CORRUPTION swallowed a failed read). */
        if (wrc != ENG_OK && wrc != ENG_CORRUPTION) rc = wrc;
        else if (wrc == ENG_CORRUPTION && rc == ENG_OK) rc = ENG_CORRUPTION;
    }
    pthread_mutex_unlock(&db->write_mu);
    pthread_mutex_unlock(&db->ckpt_mu);
    /* A writer that queued behind this verify goes first, so a caller
     * verifying in a loop cannot starve writes (mutexes are not fair). */
    for (int spins = 0; atomic_load(&db->writers_waiting) && spins < 1000; spins++) usleep(100);
    return rc;
}

/* A block whose own bytes failed, for eng_verify_info's list. */
static void note_unchecked(eng_verify_info *info, uint64_t b) {
    if (info->unchecked < ENG_VERIFY_UNCHECKED_LIST) info->unchecked_blocks[info->unchecked] = b;
    info->unchecked++;
}

/* Checksum scan of a file too damaged to open (pg_checksums alone).
 * ENG_NOTFOUND if there is no data file at all. */
static int scan_blocks(const char *dir, const eng_options *opts, const control *ctl, int have_ctl,
                       eng_reporter *rep, uint64_t *problems, eng_verify_info *info) {
    io_ctx *io;
    int rc = io_ctx_create(opts->io_backend, NULL, &io);
    if (rc) return rc;
    io_file f;
    rc = io_open(io, dir, DATA_NAME, DATA_FILE_ID, 0, 1, &f);
    /* No data file: nothing to scan (the open's report, F3 or F4, says so). */
    if (rc && io_last_errno(io) == ENOENT) rc = ENG_NOTFOUND;
    if (rc) { io_ctx_destroy(io); return rc; }
    uint64_t size = 0;
    io_size(io, &f, &size);
    uint32_t ps = have_ctl ? ctl->page_size : 0;
    uint8_t *buf = malloc(16384);
    if (!buf) { io_close(io, &f); io_ctx_destroy(io); return ENG_NOMEM; }
    if (!ps) {
        /* The control file is gone: find the page size block 0 verifies at. */
        static const uint32_t sizes[] = {4096, 8192, 16384};
        for (int i = 0; i < 3 && !ps; i++) {
            size_t done = 0;
            page_problem pr;
            int z = 0;
            if (io_read(io, &f, buf, sizes[i], 0, &done) == ENG_OK && done == sizes[i] &&
                page_verify(buf, sizes[i], 0, 1, 1, &z, &pr) == ENG_OK)
                ps = sizes[i];
        }
        if (!ps) {
            eng_report(rep, ENG_LAYER_PAGE_HEADER, DATA_NAME, 0, 0, -1, 0, 0,
                       "cannot tell the page size: control file and block 0 both unreadable");
            (*problems)++;
            note_unchecked(info, 0);
            free(buf); io_close(io, &f); io_ctx_destroy(io);
            return ENG_CORRUPTION;
        }
    }
    int checksums = have_ctl ? (ctl->flags & CONTROL_FLAG_CHECKSUMS) != 0 : 1;
    uint64_t hwm = have_ctl ? ctl->hwm : 0;
    uint64_t nblocks = (size + ps - 1) / ps;
    if (hwm > nblocks) nblocks = hwm;
    for (uint64_t b = 0; b < nblocks; b++) {
        size_t done = 0;
        rc = io_read(io, &f, buf, ps, b * ps, &done);
        if (rc) break;
        if (done < ps) memset(buf + done, 0, ps - done);
        page_problem pr;
        int z = 0;
        if (page_verify(buf, ps, b, hwm, checksums, &z, &pr) == ENG_CORRUPTION) {
            eng_report(rep, pr.layer, DATA_NAME, (int64_t)b, (int64_t)(b * ps) + (pr.offset >= 0 ? pr.offset : 0),
                       pr.entry, pr.expected, pr.found, "%s", pr.detail);
            (*problems)++;
            note_unchecked(info, b);
        }
    }
    free(buf);
    io_close(io, &f);
    io_ctx_destroy(io);
    if (rc) return rc;
    return *problems ? ENG_CORRUPTION : ENG_OK;
}

/* Reports that failed an open, held back so the block scan that follows
 * does not print the same block twice. */
typedef struct held_reports {
    eng_corruption r[8];
    int n;
} held_reports;

static void hold_report(void *ctx, const eng_corruption *r) {
    held_reports *h = ctx;
    if (h->n < 8) h->r[h->n++] = *r;
}

int eng_verify_dir(const char *dir, const eng_options *opts, eng_corruption_fn fn, void *ctx,
                   uint64_t *problems) {
    eng_verify_info info;
    int rc = eng_verify_dir_ex(dir, opts, fn, ctx, &info);
    if (problems) *problems = info.problems;
    return rc;
}

int eng_verify_dir_ex(const char *dir, const eng_options *opts, eng_corruption_fn fn, void *ctx,
                      eng_verify_info *info) {
    memset(info, 0, sizeof *info);
    uint64_t *problems = &info->problems;
    eng_options o;
    if (opts) o = *opts; else eng_options_init(&o);
    o.read_only = 1;
    o.create_if_missing = 0;
    held_reports held = {.n = 0};
    eng_corruption_fn user_fn = o.on_corruption;
    void *user_ctx = o.on_corruption_ctx;
    o.on_corruption = hold_report;
    o.on_corruption_ctx = &held;
    eng_db *db;
    int rc = eng_open(dir, &o, &db);
    if (rc == ENG_OK) {
        db->opts.on_corruption = user_fn;
        db->opts.on_corruption_ctx = user_ctx;
        rc = eng_verify_ex(db, fn, ctx, info);
        eng_close(db);
        return rc;
    }
    if (rc != ENG_CORRUPTION) return rc;
    /* Not open: each block's own bytes are all that is checked. */
    info->tree_skipped = 1;
    info->leaks_skipped = 1;
    verify_fwd vf = {NULL, fn, ctx};
    eng_reporter rep = {verify_report, &vf};
    control ctl;
    io_ctx *io;
    int have = 0;
    if (io_ctx_create(o.io_backend, NULL, &io) == ENG_OK) {
        eng_reporter quiet = {NULL, NULL};
        have = control_read(io, dir, &ctl, &quiet) == ENG_OK;
        io_ctx_destroy(io);
    }
    uint64_t more = 0;
    int rc2 = scan_blocks(dir, &o, &ctl, have, &rep, &more, info);
    if (rc2 == ENG_NOTFOUND) rc2 = ENG_OK;
    *problems += more;
    held_reports logrep = {.n = 0};
    if (have && (rc2 == ENG_OK || rc2 == ENG_CORRUPTION) && io_ctx_create(o.io_backend, NULL, &io) == ENG_OK) {
        eng_reporter lr = {hold_report, &logrep};
        uint64_t wp = 0;
        verify_log(io, dir, &ctl, &lr, &wp);
        io_ctx_destroy(io);
        for (int i = 0; i < logrep.n; i++) { verify_report(&vf, &logrep.r[i]); (*problems)++; }
    }
    /* What the open tripped on, unless a scan above reported the same
     * thing itself: a page's own checksum (the block scan) or a record
     * (the log walk).  Problems met only while replaying stay. */
    for (int i = 0; i < held.n; i++) {
        const eng_corruption *h = &held.r[i];
        int dup = have && h->block >= 0 && strcmp(h->file, DATA_NAME) == 0 &&
                  h->layer != ENG_LAYER_STRUCTURE && h->layer != ENG_LAYER_OVERFLOW;
        for (int j = 0; j < logrep.n && !dup; j++)
            dup = logrep.r[j].layer == h->layer && logrep.r[j].offset == h->offset &&
                  strcmp(logrep.r[j].file, h->file) == 0;
        if (dup) continue;
        verify_report(&vf, h);
        (*problems)++;
    }
    if (rc2 != ENG_OK && rc2 != ENG_CORRUPTION) return rc2;
    return *problems ? ENG_CORRUPTION : ENG_OK;
}

int eng_probe_dir(const char *dir, eng_corruption_fn fn, void *ctx) {
    if (!dir || !*dir) return ENG_INVALID;
    struct stat st;
    if (stat(dir, &st) != 0) return errno == ENOENT ? ENG_NOTFOUND : io_status_from_errno(errno);
    if (!S_ISDIR(st.st_mode)) return ENG_INVALID;
    verify_fwd vf = {NULL, fn, ctx};
    eng_reporter rep = {verify_report, &vf};
    dir_files f;
    int rc = look_at_dir(dir, &f);
    if (rc) return rc;
    if (lost_control(&f)) return report_lost_control(&rep, &f);
    if (!f.control) return ENG_NOTFOUND;
    io_ctx *io;
    if ((rc = io_ctx_create(ENG_IO_PSYNC, NULL, &io))) return rc;
    control c;
    rc = control_read(io, dir, &c, &rep);
    io_ctx_destroy(io);
    if (rc == ENG_NOTFOUND) rc = ENG_IOERR; /* it was there a moment ago */
    if (rc == ENG_OK) rc = check_data_present(&rep, &f, &c);
    if (rc == ENG_OK) rc = wal_check_segments(dir, c.seg_size, c.redo_lsn, c.checkpoint_lsn, &rep);
    return rc;
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

uint64_t eng_debug_nblocks(eng_db *db) { return bt_nblocks(db->bt); }
