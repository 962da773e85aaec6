/*
 * engine_verify.c -- verify: of an open handle (the tree and file through
 * bt_verify, then the log from the redo point), and of a directory, which
 * opens it read-only or, when it cannot be opened, scans each block's own
 * bytes and walks the log.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_int.h"
#include "page.h"

void eng_verify_report(void *ctx, const eng_corruption *r) {
    verify_fwd *v = ctx;
    if (v->db) eng_db_report(v->db, r);
    if (v->fn) v->fn(v->ctx, r);
}

/* Read every record of the log from the redo point (pg_waldump's walk):
 * a damaged record in the synced part is a problem (wal.h W3); a torn
 * tail is not. */
static int verify_log(io_ctx *io, const char *dir, const control *ctl, const eng_reporter *rep, uint64_t *problems,
                      uint64_t *records) {
    wal_reader *r;
    int rc = wal_reader_open(io, dir, ctl->seg_size, ctl->redo_lsn, 0, rep, &r);
    if (rc) return rc;
    wal_record rec;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) (*records)++;
    wal_reader_close(r);
    if (rc == ENG_CORRUPTION) {
        (*problems)++;
        return ENG_CORRUPTION;
    }
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
    eng_reporter rep = {eng_verify_report, &vf};
    /* The write lock holds the tree still while pages are checked and the
     * log's end in place while it is walked (a log read while records are
     * being added would see a block not yet written before a block that
     * already witnesses it: a false alarm); the checkpoint lock keeps
     * segments from going away.  Readers go on throughout. */
    eng_lock(&db->ckpt_mu, LK_CKPT);
    eng_lock(&db->write_mu, LK_WRITE);
    uint64_t hwm = atomic_load(&db->hwm), size = 0;
    /* A poisoned handle's cache holds the pages of an operation that
     * failed half-way, changed but never logged (the reopen drops them):
     * judging them would report a healthy database as damaged (a chain
     * written before its put failed is "allocated but unreachable").
     * The poisons that leave such pages (a failed write's or vacuum's
     * operation) are set under the write lock, so they are settled here. */
    int rc = atomic_load(&db->poisoned) ? ENG_POISONED : io_size(db->io, &db->data, &size);
    if (rc == ENG_OK) rc = bt_verify(db->bt, size, hwm, &rep, problems, info);
    if (rc == ENG_OK || rc == ENG_CORRUPTION) {
        /* Records still in the buffer are not on disk: write them out so
         * the walk sees the whole log (a read-only handle has none). */
        int wrc = db->wal ? wal_write_out(db->wal) : ENG_OK;
        if (wrc == ENG_OK) wrc = verify_log(db->io, db->dir, &db->ctl, &rep, problems, &info->wal_records);
        /* An error that stopped the walk wins over corruption found: the
         * reports say what was found, the status must say the check did
         * not finish (returning CORRUPTION swallowed a failed read). */
        if (wrc != ENG_OK && wrc != ENG_CORRUPTION)
            rc = wrc;
        else if (wrc == ENG_CORRUPTION && rc == ENG_OK)
            rc = ENG_CORRUPTION;
    }
    eng_unlock(&db->write_mu, LK_WRITE);
    eng_unlock(&db->ckpt_mu, LK_CKPT);
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
static int scan_blocks(const char *dir, const eng_options *opts, const control *ctl, int have_ctl, eng_reporter *rep,
                       uint64_t *problems, eng_verify_info *info) {
    io_ctx *io;
    int rc = io_ctx_create(opts->io_backend, NULL, &io);
    if (rc) return rc;
    io_file f;
    rc = io_open(io, dir, DATA_NAME, DATA_FILE_ID, 0, 1, &f);
    /* No data file: nothing to scan (the open's report, F3 or F4, says so). */
    if (rc && io_last_errno(io) == ENOENT) rc = ENG_NOTFOUND;
    if (rc) {
        io_ctx_destroy(io);
        return rc;
    }
    uint64_t size = 0;
    io_size(io, &f, &size);
    uint32_t ps = have_ctl ? ctl->page_size : 0;
    uint8_t *buf = malloc(16384);
    if (!buf) {
        io_close(io, &f);
        io_ctx_destroy(io);
        return ENG_NOMEM;
    }
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
            free(buf);
            io_close(io, &f);
            io_ctx_destroy(io);
            return ENG_CORRUPTION;
        }
    }
    int checksums = have_ctl ? (ctl->flags & CONTROL_FLAG_CHECKSUMS) != 0 : 1;
    uint64_t hwm = have_ctl ? ctl->hwm : 0;
    uint64_t nblocks = (size + ps - 1) / ps, whole = size / ps;
    if (hwm > nblocks) nblocks = hwm;
    /* A file cut short of the mark: one report, as bt_verify makes it. */
    if (whole < hwm) {
        eng_report(rep, ENG_LAYER_ZERO_PAGE, DATA_NAME, (int64_t)whole, (int64_t)(whole * ps), -1, hwm, whole,
                   "the data file is shorter than control says (%llu blocks, mark %llu)", (unsigned long long)whole,
                   (unsigned long long)hwm);
        (*problems)++;
    }
    for (uint64_t b = 0; b < nblocks; b++) {
        if (b >= whole && b < hwm) {
            note_unchecked(info, b);
            continue;
        }
        size_t done = 0;
        rc = io_read(io, &f, buf, ps, b * ps, &done);
        if (rc) break;
        info->blocks_scanned++;
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

int eng_verify_dir(const char *dir, const eng_options *opts, eng_corruption_fn fn, void *ctx, uint64_t *problems) {
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
    if (opts)
        o = *opts;
    else
        eng_options_init(&o);
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
    eng_reporter rep = {eng_verify_report, &vf};
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
        verify_log(io, dir, &ctl, &lr, &wp, &info->wal_records);
        io_ctx_destroy(io);
        for (int i = 0; i < logrep.n; i++) {
            eng_verify_report(&vf, &logrep.r[i]);
            (*problems)++;
        }
    }
    /* What the open tripped on, unless a scan above reported the same
     * thing itself: a page's own checksum (the block scan) or a record
     * (the log walk).  Problems met only while replaying stay. */
    for (int i = 0; i < held.n; i++) {
        const eng_corruption *h = &held.r[i];
        int dup = have && h->block >= 0 && strcmp(h->file, DATA_NAME) == 0 && h->layer != ENG_LAYER_STRUCTURE &&
                  h->layer != ENG_LAYER_OVERFLOW;
        for (int j = 0; j < logrep.n && !dup; j++)
            dup = logrep.r[j].layer == h->layer && logrep.r[j].offset == h->offset &&
                  strcmp(logrep.r[j].file, h->file) == 0;
        if (dup) continue;
        eng_verify_report(&vf, h);
        (*problems)++;
    }
    if (rc2 != ENG_OK && rc2 != ENG_CORRUPTION) return rc2;
    return *problems ? ENG_CORRUPTION : ENG_OK;
}
