/*
 * engine.c -- the handle: open/create, the public calls, verify and stats.
 *
 * Files of a database directory:
 *   LOCK     flock()ed exclusively while a handle is open (dies with the
 *            process, so a crashed holder never blocks recovery)
 *   control  creation options and durable marks (control.h)
 *   data     the pages (page.h); block 0 meta, block 1 root
 *
 * Creation order: data pages written and synced first, control last; a
 * directory without a valid control file holds no database, so a crash
 * during creation leaves nothing half made.
 *
 * Durability in this version: changes reach disk when pages are evicted
 * and at eng_sync / eng_close (write back, fsync data, then raise the
 * high-water mark in control).  A failed write or fsync poisons the handle
 * (ENG_POISONED for every later write and sync) until it is reopened: the
 * kernel may have dropped the dirty data, so retrying would lie.
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
#include "io.h"
#include "page.h"
#include "status.h"

#define DATA_NAME "data"
#define LOCK_NAME "LOCK"
#define DATA_FILE_ID 0
#define MIN_FRAMES 16u

struct eng_db {
    char dir[4096];
    eng_options opts;
    int lockfd;
    io_ctx *io;
    io_file data;
    int data_open;
    control ctl;
    _Atomic uint64_t hwm;
    bp_pool *bp;
    bt_tree *bt;
    pthread_mutex_t write_mu;
    _Atomic int poisoned;
    eng_reporter rep;
    pthread_mutex_t last_mu;
    eng_corruption last;
    int has_last;
    _Atomic uint64_t corruption[ENG_LAYER_COUNT];
    _Atomic uint64_t puts, deletes, gets, syncs;
};

void eng_options_init(eng_options *o) {
    memset(o, 0, sizeof *o);
    o->page_size = 8192;
    o->data_checksums = 1;
    o->cache_size = 64u << 20;
    o->io_backend = ENG_IO_URING;
    o->create_if_missing = 1;
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
    if (db->bp) bp_destroy(db->bp);
    if (db->data_open) io_close(db->io, &db->data);
    if (db->io) io_ctx_destroy(db->io);
    if (db->lockfd >= 0) close(db->lockfd); /* releases the flock */
    pthread_mutex_destroy(&db->write_mu);
    pthread_mutex_destroy(&db->last_mu);
    free(db);
}

static int valid_page_size(uint32_t ps) { return ps == 4096 || ps == 8192 || ps == 16384; }

/* Write back, fsync, then raise the durable high-water mark.  Caller holds
 * write_mu (or is single-threaded in open/close). */
static int sync_locked(eng_db *db) {
    if (atomic_load(&db->poisoned)) return ENG_POISONED;
    uint32_t nblocks = bt_nblocks(db->bt);
    int rc = bp_flush_all(db->bp);
    if (rc == ENG_OK) rc = io_sync(db->io, &db->data);
    atomic_fetch_add(&db->syncs, 1);
    if (rc == ENG_OK && nblocks > db->ctl.hwm) {
        control c = db->ctl;
        c.hwm = nblocks;
        rc = control_write(db->io, db->dir, &c);
        if (rc == ENG_OK) {
            db->ctl = c;
            atomic_store(&db->hwm, c.hwm);
        }
    }
    if (rc != ENG_OK && rc != ENG_CORRUPTION) atomic_store(&db->poisoned, 1);
    return rc;
}

static int start_pool(eng_db *db) {
    size_t nframes = db->opts.cache_size / db->ctl.page_size;
    if (nframes < MIN_FRAMES) nframes = MIN_FRAMES;
    bp_config bc = {
        .io = db->io, .file = &db->data, .page_size = db->ctl.page_size, .nframes = nframes,
        .checksums = (db->ctl.flags & CONTROL_FLAG_CHECKSUMS) != 0, .hwm = &db->hwm,
        .reporter = db->rep,
    };
    return bp_create(&bc, &db->bp);
}

static int create_db(eng_db *db) {
    db->ctl.page_size = db->opts.page_size;
    db->ctl.flags = db->opts.data_checksums ? CONTROL_FLAG_CHECKSUMS : 0;
    db->ctl.hwm = 0;
    db->ctl.checkpoint_lsn = 0;
    atomic_store(&db->hwm, 0);
    /* A data file without control is debris of an interrupted creation. */
    io_unlink(db->io, db->dir, DATA_NAME);
    int rc = io_open(db->io, db->dir, DATA_NAME, DATA_FILE_ID, 1, 0, &db->data);
    if (rc) return rc;
    db->data_open = 1;
    if ((rc = start_pool(db))) return rc;
    if ((rc = bt_create(db->bp, db->ctl.page_size))) return rc;
    if ((rc = bp_flush_all(db->bp))) return rc;
    if ((rc = io_sync(db->io, &db->data))) return rc;
    if ((rc = io_dirsync(db->io, db->dir))) return rc;
    db->ctl.hwm = 2;
    if ((rc = control_write(db->io, db->dir, &db->ctl))) return rc;
    atomic_store(&db->hwm, db->ctl.hwm);
    return ENG_OK;
}

int eng_open(const char *dir, const eng_options *opts, eng_db **out) {
    *out = NULL;
    eng_options def;
    if (!opts) { eng_options_init(&def); opts = &def; }
    if (!dir || !*dir || strlen(dir) >= 4000) return ENG_INVALID;
    if (opts->io_backend != ENG_IO_URING && opts->io_backend != ENG_IO_PSYNC) return ENG_INVALID;
    if (!valid_page_size(opts->page_size)) return ENG_INVALID;
    if (opts->read_only && opts->create_if_missing && access(dir, F_OK) != 0) return ENG_INVALID;

    eng_db *db = calloc(1, sizeof *db);
    if (!db) return ENG_NOMEM;
    snprintf(db->dir, sizeof db->dir, "%s", dir);
    db->opts = *opts;
    db->lockfd = -1;
    pthread_mutex_init(&db->write_mu, NULL);
    pthread_mutex_init(&db->last_mu, NULL);
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

    int rc = io_ctx_create(opts->io_backend, opts->io_hooks, &db->io);
    if (rc == ENG_OK) {
        /* A directory holding a database (control present) gets its LOCK
         * back if it was copied without one; any other directory is
         * touched only by an open that may create. */
        char cpath[4200];
        snprintf(cpath, sizeof cpath, "%s/%s", dir, CONTROL_NAME);
        int is_db = access(cpath, F_OK) == 0;
        rc = take_lock(db, is_db || (opts->create_if_missing && !opts->read_only));
    }
    if (rc == ENG_OK) {
        rc = control_read(db->io, dir, &db->ctl, &db->rep);
        if (rc == ENG_NOTFOUND) {
            if (opts->read_only || !opts->create_if_missing) rc = ENG_NOTFOUND;
            else rc = create_db(db);
        } else if (rc == ENG_OK) {
            if (opts->error_if_exists) rc = ENG_INVALID;
            atomic_store(&db->hwm, db->ctl.hwm);
            if (rc == ENG_OK) rc = io_open(db->io, dir, DATA_NAME, DATA_FILE_ID, 0, opts->read_only, &db->data);
            if (rc == ENG_OK) db->data_open = 1;
            if (rc == ENG_OK) rc = start_pool(db);
        }
    }
    if (rc == ENG_OK) {
        uint64_t size = 0;
        io_size(db->io, &db->data, &size);
        bt_config tc = {.bp = db->bp, .page_size = db->ctl.page_size, .reporter = db->rep, .file = DATA_NAME,
                        .file_blocks = size / db->ctl.page_size, .hwm = db->ctl.hwm};
        rc = bt_open(&tc, &db->bt);
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
    if (!db->opts.read_only) {
        pthread_mutex_lock(&db->write_mu);
        rc = sync_locked(db);
        pthread_mutex_unlock(&db->write_mu);
    }
    free_handle(db);
    return rc;
}

int eng_sync(eng_db *db) {
    if (db->opts.read_only) return ENG_READONLY;
    pthread_mutex_lock(&db->write_mu);
    int rc = sync_locked(db);
    pthread_mutex_unlock(&db->write_mu);
    return rc;
}

static int check_key(const void *key, size_t klen) {
    return (!key || klen == 0 || klen > ENG_MAX_KEY) ? ENG_INVALID : ENG_OK;
}

/* A write error anywhere below may have left the pool or file half done. */
static int write_result(eng_db *db, int rc) {
    if (rc == ENG_IOERR || rc == ENG_NOSPACE) atomic_store(&db->poisoned, 1);
    return rc;
}

int eng_put(eng_db *db, const void *key, size_t klen, const void *val, size_t vlen) {
    if (check_key(key, klen) || (vlen && !val) || vlen > ENG_MAX_VALUE) return ENG_INVALID;
    if (db->opts.read_only) return ENG_READONLY;
    pthread_mutex_lock(&db->write_mu);
    int rc = atomic_load(&db->poisoned) ? ENG_POISONED
                                        : write_result(db, bt_put(db->bt, key, klen, val, vlen));
    pthread_mutex_unlock(&db->write_mu);
    atomic_fetch_add_explicit(&db->puts, 1, memory_order_relaxed);
    return rc;
}

int eng_delete(eng_db *db, const void *key, size_t klen) {
    if (check_key(key, klen)) return ENG_INVALID;
    if (db->opts.read_only) return ENG_READONLY;
    pthread_mutex_lock(&db->write_mu);
    int rc = atomic_load(&db->poisoned) ? ENG_POISONED
                                        : write_result(db, bt_delete(db->bt, key, klen));
    pthread_mutex_unlock(&db->write_mu);
    atomic_fetch_add_explicit(&db->deletes, 1, memory_order_relaxed);
    return rc;
}

int eng_get(eng_db *db, const void *key, size_t klen, eng_buf *val) {
    if (check_key(key, klen) || !val) return ENG_INVALID;
    atomic_fetch_add_explicit(&db->gets, 1, memory_order_relaxed);
    return bt_get(db->bt, key, klen, val);
}

/* ---- iterators ---- */

struct eng_iter {
    eng_db *db;
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
    if (o && o->lower) {
        it->lower = malloc(o->lower_len ? o->lower_len : 1);
        if (!it->lower) { free(it); return ENG_NOMEM; }
        memcpy(it->lower, o->lower, o->lower_len);
        it->lower_len = o->lower_len;
        it->has_lower = 1;
    }
    if (o && o->upper) {
        it->upper = malloc(o->upper_len ? o->upper_len : 1);
        if (!it->upper) { free(it->lower); free(it); return ENG_NOMEM; }
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
    int rc = bt_seek(it->db->bt, k, kl, mode, &it->lc);
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

int eng_verify(eng_db *db, eng_corruption_fn fn, void *ctx, uint64_t *problems) {
    uint64_t dummy;
    if (!problems) problems = &dummy;
    *problems = 0;
    verify_fwd vf = {db, fn, ctx};
    eng_reporter rep = {verify_report, &vf};
    /* The write lock holds the tree still; readers go on. */
    pthread_mutex_lock(&db->write_mu);
    int rc = bt_verify(db->bt, &rep, problems);
    pthread_mutex_unlock(&db->write_mu);
    return rc;
}

/* Checksum scan of a file too damaged to open (pg_checksums alone). */
static int scan_blocks(const char *dir, const eng_options *opts, const control *ctl, int have_ctl,
                       eng_reporter *rep, uint64_t *problems) {
    io_ctx *io;
    int rc = io_ctx_create(opts->io_backend, NULL, &io);
    if (rc) return rc;
    io_file f;
    rc = io_open(io, dir, DATA_NAME, DATA_FILE_ID, 0, 1, &f);
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
    uint64_t dummy;
    if (!problems) problems = &dummy;
    *problems = 0;
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
        rc = eng_verify(db, fn, ctx, problems);
        eng_close(db);
        return rc;
    }
    if (rc != ENG_CORRUPTION) return rc;
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
    /* What the open tripped on, unless the scan reports that block itself. */
    for (int i = 0; i < held.n; i++) {
        if (have && held.r[i].block >= 0 && strcmp(held.r[i].file, DATA_NAME) == 0 &&
            held.r[i].layer != ENG_LAYER_STRUCTURE && held.r[i].layer != ENG_LAYER_OVERFLOW)
            continue;
        verify_report(&vf, &held.r[i]);
        (*problems)++;
    }
    uint64_t more = 0;
    int rc2 = scan_blocks(dir, &o, &ctl, have, &rep, &more);
    *problems += more;
    if (rc2 != ENG_OK && rc2 != ENG_CORRUPTION) return rc2;
    return *problems ? ENG_CORRUPTION : ENG_OK;
}

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
    st->syncs = atomic_load(&db->syncs);
    st->puts = atomic_load(&db->puts);
    st->deletes = atomic_load(&db->deletes);
    st->gets = atomic_load(&db->gets);
    for (int i = 0; i < ENG_LAYER_COUNT; i++) st->corruption[i] = atomic_load(&db->corruption[i]);
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
    if (page_size) *page_size = db->ctl.page_size;
    return f->data;
}

void eng_debug_frame_release(eng_db *db, uint64_t block) {
    /* The pin taken above is on the frame still caching BLOCK (a pinned
     * frame is never evicted), so find it again and drop both pins. */
    bp_frame *f = bp_pin_resident(db->bp, (uint32_t)block);
    if (!f) return;
    bp_unpin(db->bp, f);
    bp_unpin(db->bp, f);
}

uint64_t eng_debug_nblocks(eng_db *db) { return bt_nblocks(db->bt); }
