/*
 * engine_open.c -- opening a database directory: create (F2) or recover
 * (redo, the commit log, the end-of-recovery checkpoint), the lock file,
 * close, and what a directory holds, applied by eng_open and, without
 * opening, by eng_probe_dir.  The directory's files and rules F1-F5 are
 * drawn at the top of engine.c.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_int.h"
#include "faultpoints.h"
#include "page.h"
#include "recovery.h"

#define LOCK_NAME     "LOCK"
#define CREATING_NAME "CREATING"
#define MIN_FRAMES    16u

/* The lock file (LOCK at the top of engine.c).  A read-write handle opens
 * it O_RDWR and takes flock's exclusive lock; the file is created only by
 * an open that may create the database, so a look at a directory that
 * holds none changes nothing.  A read-only handle never creates or writes it: it opens LOCK O_RDONLY
 * and takes a shared lock, which a writer's exclusive lock refuses both
 * ways (ENG_BUSY), so readers run together but never beside a writer.
 * When LOCK cannot be opened for reading (absent, no permission) it takes
 * no lock at all and goes on (pg_checksums and sqlite3 -readonly do the
 * same on a copy they cannot lock): a writer that opens meanwhile is not
 * kept out. */
static int take_lock(eng_db *db, int create) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", db->dir, LOCK_NAME);
    int ro = db->opts.read_only;
    db->lockfd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC | (create && !ro ? O_CREAT : 0), 0644);
    if (db->lockfd < 0) {
        if (ro) return ENG_OK; /* no lock: see above */
        return errno == ENOENT ? ENG_NOTFOUND : io_status_from_errno(errno);
    }
    if (flock(db->lockfd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int e = errno;
        close(db->lockfd);
        db->lockfd = -1;
        if (e == EWOULDBLOCK) return ENG_BUSY;
        /* A file system without flock (ENOLCK): a reader goes on unlocked. */
        return ro ? ENG_OK : io_status_from_errno(e);
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

/* ---- open: create, or recover ---- */

static int start_pool(eng_db *db) {
    size_t nframes = db->opts.cache_size / db->ctl.page_size;
    if (nframes < MIN_FRAMES) nframes = MIN_FRAMES;
    bp_config bc = {
        .io = db->io,
        .file = &db->data,
        .page_size = db->ctl.page_size,
        .nframes = nframes,
        .checksums = (db->ctl.flags & CONTROL_FLAG_CHECKSUMS) != 0,
        .hwm = &db->hwm,
        .reporter = db->rep,
        .wal_flush = eng_pool_wal_flush,
        .wal_ctx = db,
        .hint_log = eng_pool_hint_log,
        .read_only = db->opts.read_only,
        .poisoned = &db->poisoned,
        .kv_width = (unsigned)db->opts.block_protection_bytes_per_key,
        .kv_lazy = db->opts.kv_lazy_leaves,
    };
    return bp_create(&bc, &db->bp);
}

static int open_wal(eng_db *db, uint64_t start, uint64_t prev) {
    wal_config wc = {
        .io = db->io,
        .dir = db->dir,
        .seg_size = db->ctl.seg_size,
        .buffer_size = db->opts.wal_buffer_size,
        .gen = db->ctl.wal_gen,
        .start_lsn = start,
        .prev_lsn = prev,
        .archive_dir = db->archive_dir[0] ? db->archive_dir : NULL,
        .reporter = db->rep,
    };
    return wal_open(&wc, &db->wal);
}

/* EXTENT: blocks redo rebuilt in memory that the file may not hold yet. */
static int open_tree(eng_db *db, uint64_t extent) {
    uint64_t size = 0;
    io_size(db->io, &db->data, &size);
    if (size / db->ctl.page_size < extent) size = extent * db->ctl.page_size;
    bt_config tc = {
        .bp = db->bp,
        .page_size = db->ctl.page_size,
        .reporter = db->rep,
        .file = DATA_NAME,
        .file_blocks = size / db->ctl.page_size,
        .hwm = db->ctl.hwm,
        .log_append = eng_log_append,
        .log_ctx = db,
        .redo_lsn = &db->redo_lsn,
        .full_page_writes = db->opts.full_page_writes,
        .wal_compression = db->opts.wal_compression == ENG_WAL_COMPRESSION_ZSTD,
        .txn = db->txn,
        .durable_seq = &db->durable_seq,
        .no_hints = db->opts.read_only,
        .poisoned = &db->poisoned,
    };
    return bt_open(&tc, &db->bt);
}

/* ---- what a directory holds (F1-F5 at the top of engine.c) ---- */

typedef struct dir_files {
    int control, control_tmp, creating, data;
    uint64_t data_bytes;
    size_t nsegs; /* segment files in wal/ */
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
    if (n) {
        f->seg_first = v[0];
        f->seg_last = v[n - 1];
    }
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
                      "synced (high-water mark)",
                      c->page_size, (unsigned long long)c->hwm);
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
    uint8_t rec[CK_SIZE] = {0};
    uint64_t start, end;
    wr64(rec + CK_REDO_OFF, WAL_BLOCK_HDR);
    wr64(rec + CK_NBLOCKS_OFF, 2);
    if ((rc = eng_log_append(db, WAL_REC_CHECKPOINT, rec, sizeof rec, &start, &end))) return rc;
    if ((rc = wal_flush(db->wal, end))) return rc;
    if ((rc = io_dirsync(db->io, wdir))) return rc;
    if ((rc = io_dirsync(db->io, db->dir))) return rc;
    db->ctl.redo_lsn = WAL_BLOCK_HDR;
    db->ctl.checkpoint_lsn = start;
    /* Ids below first_xid are used by nobody: as after a restart that moved
     * ids past a lease, the commit log's pages before the first id's are
     * created empty with the first commit (btree_clog.c). */
    db->ctl.last_seq = db->opts.first_xid - 1;
    db->ctl.xid_limit = db->opts.first_xid + XID_LEASE;
    atomic_store(&db->seq, db->ctl.last_seq);
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
#ifdef ENG_BROKEN_RECOVERY_HWM_AFTER_REDO
    /* planted bug (tests/mutants.txt): the high-water mark is published
     * only after redo (below), so during recovery it is 0 and every
     * all-zero page redo reads passes for a never-written one (P5). */
#else
    atomic_store(&db->hwm, db->ctl.hwm);
#endif
    if ((rc = start_pool(db))) return rc;
    rec_result rr;
    rc = recovery_redo(db->io, db->dir, db->ctl.seg_size, db->ctl.redo_lsn, db->ctl.last_seq, db->bp, db->ctl.page_size,
                       !db->opts.read_only, &db->rep, &rr);
    if (rc) {
        rec_result_free(&rr);
        return rc;
    }
    db->rinfo = (eng_recovery_info){
        .redo_lsn = db->ctl.redo_lsn,
        .end_lsn = rr.end_lsn,
        .recovered_lsn = rr.last_lsn,
        .recovered_seq = rr.last_seq,
        .records = rr.records,
        .actions_applied = rr.actions_applied,
        .actions_skipped = rr.actions_skipped,
        .images_restored = rr.images_restored,
        .trimmed = rr.trimmed,
        .txns_committed = rr.txns_committed,
        .txns_aborted = rr.txns_aborted,
    };
    /* Ids are never reused: an aborted batch's versions keep its id, and
     * ids of the last lease may be on pages whose log records were lost. */
    if (db->ctl.xid_limit > rr.max_seq + 1) rr.max_seq = db->ctl.xid_limit - 1;
    /* Redo read on from the redo point, and ids are never reused: the log
     * resumes at or past the redo point, ids above every committed one. */
    assert(rr.end_lsn >= db->ctl.redo_lsn && rr.max_seq >= rr.last_seq);
#ifdef ENG_BROKEN_RECOVERY_HWM_AFTER_REDO
    atomic_store(&db->hwm, db->ctl.hwm);
#endif
    atomic_store(&db->seq, rr.max_seq);
    atomic_store(&db->durable_seq, rr.last_seq);
#ifndef ENG_BROKEN_REOPEN_FORGETS_REDO_POINT
    /* planted bug (tests/mutants.txt): the #ifndef leaves this out, so a
     * recovered handle keeps the redo point it was created with (0) until
     * its first checkpoint: after an open that needs no end-of-recovery
     * checkpoint (a reopen after a clean close), no page's first change
     * logs a full-page image, and a write of it torn by a crash cannot be
     * rebuilt by redo, which starts at control's redo point. */
    atomic_store(&db->redo_lsn, db->ctl.redo_lsn);
#endif
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
    if ((rc = control_write(db->io, db->dir, &db->ctl))) {
        rec_result_free(&rr);
        return rc;
    }
#ifdef ENG_BROKEN_REOPEN_RESTARTS_RECORD_CHAIN
    /* planted bug (tests/mutants.txt): the log is reopened as creation
     * opens it, with no previous record (0), as if the new generation
     * began a chain of its own: its first record's xl_prev is 0 instead of
     * the last recovered record's LSN.  When no end-of-recovery checkpoint
     * moves the redo point past it (a reopen after a clean close replays
     * one record), the next recovery or verify stops there ("does not
     * follow the previous record"): damage reported on an intact log, or
     * the commits after it trimmed. */
    if ((rc = open_wal(db, rr.end_lsn, 0))) {
#else
    if ((rc = open_wal(db, rr.end_lsn, rr.last_lsn))) {
#endif
        rec_result_free(&rr);
        return rc;
    }
    if ((rc = open_tree(db, rr.meta_nblocks))) {
        rec_result_free(&rr);
        return rc;
    }
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
    if (!opts) {
        eng_options_init(&def);
        opts = &def;
    }
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
    if (opts->first_xid < 1 || opts->first_xid > ENG_FIRST_XID_MAX) return ENG_INVALID;
    if (opts->archive_dir && strlen(opts->archive_dir) >= 4000) return ENG_INVALID;
    {
        int w = opts->block_protection_bytes_per_key;
        if (w != 0 && w != 1 && w != 2 && w != 4 && w != 8) return ENG_INVALID;
        if (opts->kv_lazy_leaves < -1 || opts->kv_lazy_leaves > 1) return ENG_INVALID;
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
    db->rep = (eng_reporter){eng_db_report, db};

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
    if (db->archive_dir[0] && !opts->read_only && mkdir(db->archive_dir, 0755) != 0 && errno != EEXIST) {
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
         * back from a read-write open if it was copied without one; any
         * other directory is touched only by an open that may create, and
         * a read-only open creates nothing (take_lock). */
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
    if (!db->opts.read_only && !atomic_load(&db->poisoned))
        rc = eng_checkpoint_as(db, 1);
    else if (atomic_load(&db->poisoned))
        rc = ENG_POISONED;
    free_handle(db);
    return rc;
}

int eng_probe_dir(const char *dir, eng_corruption_fn fn, void *ctx) {
    if (!dir || !*dir) return ENG_INVALID;
    struct stat st;
    if (stat(dir, &st) != 0) return errno == ENOENT ? ENG_NOTFOUND : io_status_from_errno(errno);
    if (!S_ISDIR(st.st_mode)) return ENG_INVALID;
    verify_fwd vf = {NULL, fn, ctx};
    eng_reporter rep = {eng_verify_report, &vf};
    dir_files f;
    int rc = look_at_dir(dir, &f);
    if (rc) return rc;
    if (lost_control(&f)) return report_lost_control(&rep, &f);
    if (!f.control) return ENG_NOTFOUND;
    io_ctx *io;
    if ((rc = io_ctx_create(ENG_IO_PSYNC, NULL, &io))) return rc;
    control c;
    /* A control file that is there but fails its check is damage inside
     * a database, not a file missing: ENG_OK, and the open reports it
     * (its fields cannot say which segments the log needs). */
    eng_reporter quiet = {NULL, NULL};
    rc = control_read(io, dir, &c, &quiet);
    io_ctx_destroy(io);
    if (rc == ENG_CORRUPTION) return ENG_OK;
    if (rc == ENG_NOTFOUND) rc = ENG_IOERR; /* it was there a moment ago */
    if (rc == ENG_OK) rc = check_data_present(&rep, &f, &c);
    if (rc == ENG_OK) rc = wal_check_segments(dir, c.seg_size, c.redo_lsn, c.checkpoint_lsn, &rep);
    return rc;
}
