/*
 * recovery.c -- redo from the last checkpoint (passes and rules in
 * recovery.h).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faultpoints.h"
#include "page.h"
#include "recovery.h"
#include "wal.h"

void rec_result_free(rec_result *r) {
    free(r->batch_payload);
    r->batch_payload = NULL;
}

/* Pass 1: find the end; fsync what was read (SYNC_LOG). */
static int scan_end(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t redo_lsn, int sync_log,
                    const eng_reporter *rep, rec_result *out) {
    wal_reader *r;
    int rc = wal_reader_open(io, dir, seg_size, redo_lsn, 0, rep, &r);
    if (rc) return rc;
    wal_record rec;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) {
        out->records++;
#ifdef ENG_BROKEN_DROP_SYNCED_COMMIT
        if (rec.type == WAL_REC_BATCH) { out->broken_last_batch = out->records; }
#endif
    }
    if (rc == ENG_NOTFOUND) {
        wal_reader_end(r, &out->end_lsn, &out->last_lsn, &out->max_gen, &out->trimmed);
        rc = ENG_OK;
    }
    wal_reader_close(r);
    if (rc) return rc;
    if (out->records == 0)
        return eng_report(rep, ENG_LAYER_WAL, WAL_DIR, -1, (int64_t)redo_lsn, -1, redo_lsn, out->end_lsn,
                          "the log holds no record at the redo point (LSN 0x%llx): the checkpoint's "
                          "record is missing",
                          (unsigned long long)redo_lsn);
    /* The sync orders the log before pages written back from it; a pool
     * that never writes back (a read-only open) needs none, and its
     * segments may not be writable at all. */
    if (!sync_log) return ENG_OK;
    char wdir[4200];
    snprintf(wdir, sizeof wdir, "%s/%s", dir, WAL_DIR);
    for (uint64_t s = redo_lsn & ~(seg_size - 1); s < out->end_lsn; s += seg_size) {
        char name[32];
        snprintf(name, sizeof name, "%016llx", (unsigned long long)s);
        io_file f;
        if ((rc = io_open(io, wdir, name, -1, 0, 0, &f))) return rc;
        rc = io_sync(io, &f);
        io_close(io, &f);
        if (rc) return rc;
    }
    /* And their names: a segment created by a handle that never synced the
     * directory (sync_mode=off, or poisoned first) vanishes at a power loss
     * however well its bytes were synced, while the pages redo writes back
     * from its records stay: a state ahead of any log recovery can read. */
    return io_dirsync(io, wdir);
}

/* The pages of one record, each held (pinned, latched exclusively) from
 * its first action to its last (RC1 in recovery.h): only a page the record
 * changes again later stays held meanwhile, so a record that allocates a
 * long overflow chain holds its free-list trunk, not the chain. */
struct rec_page {
    uint32_t block;
    size_t last; /* offset of its last action in the record */
    bp_frame *f; /* held, or NULL */
    int applied; /* this record changed it */
};
typedef struct rec_pages {
    struct rec_page *v;
    size_t n, cap;
} rec_pages;

static struct rec_page *page_of(rec_pages *h, uint32_t block) {
    for (size_t i = 0; i < h->n; i++)
        if (h->v[i].block == block) return &h->v[i];
    return NULL;
}

static void pages_release(bp_pool *bp, rec_pages *h) {
    for (size_t i = 0; i < h->n; i++)
        if (h->v[i].f) bp_release(bp, h->v[i].f, BP_EXCL);
    h->n = 0;
}

/* REC's pages, each with where its last action lies, none held yet (a
 * malformed action ends the scan: the pass that applies them reports
 * it).  0 or ENG_NOMEM. */
static int plan_pages(rec_pages *h, const wal_record *rec) {
    const uint8_t *start = rec->payload + PA_REC_HDR, *p = start, *end = rec->payload + rec->len;
    h->n = 0;
    while (p < end) {
        int kind;
        uint32_t block;
        size_t n = pa_parse(p, (size_t)(end - p), &kind, &block);
        if (!n) break;
        if (kind != PA_HINTS) { /* redo skips them (below) */
            struct rec_page *rp = page_of(h, block);
            if (!rp) {
                if (h->n == h->cap) {
                    size_t cap = h->cap ? 2 * h->cap : 16;
                    struct rec_page *v = realloc(h->v, cap * sizeof *v);
                    if (!v) return ENG_NOMEM;
                    h->v = v;
                    h->cap = cap;
                }
                rp = &h->v[h->n++];
                *rp = (struct rec_page){.block = block};
            }
            rp->last = (size_t)(p - start);
        }
        p += n;
    }
    return ENG_OK;
}

/* An action skipped on BLOCK (frame F: its page is newer than the
 * record).  The meta page on disk newer than this record (written without
 * an image: full_page_writes off) still says how far the file reaches,
 * blocks that redo recreates or that were never written (zero, past the
 * high-water mark). */
static void skipped_meta(uint32_t block, const bp_frame *f, rec_result *out) {
    /* planted bug (tests/mutants.txt): the #ifndef below leaves the
     * block out, as if a skipped action taught nothing; but a meta
     * page on disk newer than every meta record still says how far
     * the file reaches, and with the extent left at 0 open compares
     * that block count with a data file whose new pages were never
     * written and refuses an intact database. */
#ifndef ENG_BROKEN_REDO_SKIPPED_META_FORGETS_EXTENT
    if (block == 0) {
        meta_fields mf;
        meta_read(f->data, &mf);
        if (mf.nblocks > out->meta_nblocks) out->meta_nblocks = mf.nblocks;
    }
#else
    (void)block, (void)f, (void)out;
#endif
}

#ifdef ENG_BROKEN_REDO_STAMPS_RECORD_START
/* planted bug (tests/mutants.txt): a page redo changed is stamped with the
 * record's own LSN, not its end (the writer stamps the end): the skip test
 * compares with the end, so once such a page is written back (evicted
 * during redo, or by the end-of-recovery checkpoint) a crash before control
 * names a new redo point makes the next recovery apply the record to it
 * again (an insert twice, a remove of the next cell, a free block listed
 * twice). */
#define REDO_PAGE_LSN(rec) ((rec)->lsn)
#else
/* The LSN a page redo changed is stamped with: its record's end, as the
 * writer stamps it (the skip test compares with it). */
#define REDO_PAGE_LSN(rec) ((rec)->end)
#endif
#ifdef ENG_BROKEN_REDO_SKIPS_MAINTENANCE_RECORDS
/* planted bug (tests/mutants.txt): a maintenance record is taken for a hint
 * record, which redo needs none of (hints are a cache): but vacuum logs its
 * removals, freezes and freed overflow chains as maintenance records too.
 * A leaf vacuumed since the checkpoint and not written back is rebuilt
 * without the removals, and the later records' slot numbers, counted after
 * them, land on other versions (an xmax set on the wrong key, a cell out
 * of order); a pop from a trunk vacuum filled finds it empty. */
#define REDO_MAINT(apply, out) ((out)->actions_skipped++, ENG_OK)
#else
/* A maintenance record (hints, vacuum's removals, freezes, freed chains)
 * is applied as any other. */
#define REDO_MAINT(apply, out) (apply)
#endif

static int apply_actions(bp_pool *bp, uint32_t ps, const wal_record *rec, const pa_batch *batch, uint8_t *zscratch,
                         const eng_reporter *rep, rec_pages *h, rec_result *out) {
    const uint8_t *start = rec->payload + PA_REC_HDR, *p = start, *end = rec->payload + rec->len;
    int rc = plan_pages(h, rec);
    if (rc) return rc;
    while (p < end) {
        int kind;
        uint32_t block;
        size_t n = pa_parse(p, (size_t)(end - p), &kind, &block);
        if (!n || (kind == PA_META && block != 0) ||
            (block == 0 && kind != PA_META && kind != PA_CLOGDIR && kind != PA_IMAGE))
            return eng_report(rep, ENG_LAYER_WAL, WAL_DIR, -1, (int64_t)rec->lsn, -1, 0, 0,
                              "record at LSN 0x%llx holds a malformed page action", (unsigned long long)rec->lsn);
        if (kind == PA_HINTS) {
            /* A hint record serves WAL readers (wal_log_hints); redo
             * needs none: hints are a cache, and a hint-only write is kept
             * or lost whole (page.h).  Replaying it would read a page
             * that may be torn before the image that repairs it. */
            out->actions_skipped++;
            p += n;
            continue;
        }
        int creates = pa_creates(kind);
#ifdef ENG_BROKEN_REDO_READS_BEFORE_IMAGE
        /* Test-only broken build: a full-page image is applied over the
         * page read from disk, whose checksum a tear at the crash broke:
         * the database does not reopen after a torn write (oracle V8). */
        if (kind == PA_IMAGE) creates = 0;
#endif
        struct rec_page *hf = page_of(h, block);
        if (!hf) /* cannot happen: plan_pages saw every action up to here */
            return eng_report(rep, ENG_LAYER_WAL, WAL_DIR, -1, (int64_t)rec->lsn, -1, 0, 0,
                              "record at LSN 0x%llx holds a malformed page action", (unsigned long long)rec->lsn);
        /* RC1: a page is let go only after its last action, so every action
         * met lies at or before the last one the plan saw for its page. */
        assert((size_t)(p - start) <= hf->last);
        if (!hf->f && (rc = creates ? bp_overwrite(bp, block, &hf->f) : bp_get(bp, block, BP_EXCL, &hf->f))) {
            hf->f = NULL;
            return rc;
        }
        bp_frame *f = hf->f;
#if defined(ENG_BROKEN_REDO_SKIPS_SECOND_ACTION)
        /* planted bug (tests/mutants.txt): a page this very record already
         * changed is taken as up to date (its LSN is now the record's end),
         * so the change logged after a page's full-page image is skipped. */
        if (!creates && atomic_load(&f->lsn) >= rec->end) {
#elif defined(ENG_BROKEN_REDO_REAPPLIES_EQUAL_LSN)
        /* planted bug (tests/mutants.txt): only a page LSN strictly past the
         * record's end counts as applied, so a page written back after this
         * record gets its action again (full_page_writes off): redo is not
         * idempotent. */
        if (!creates && atomic_load(&f->lsn) > rec->end && !hf->applied) {
#else
        if (!creates && atomic_load(&f->lsn) >= rec->end && !hf->applied) {
#endif
            out->actions_skipped++;
            skipped_meta(block, f, out);
        } else {
            const char *why = "";
            page_problem pr;
            rc = pa_apply(f->data, ps, block, p, n, batch, zscratch, &why);
            /* A record passed its checksum, so its bytes are the ones the
             * writer logged; the page it lands on must still make sense
             * (a stale or damaged page would make the action nonsense). */
            if (rc == ENG_OK && page_check_structure(f->data, ps, &pr) != ENG_OK) {
                rc = ENG_CORRUPTION;
                why = pr.detail;
            }
            if (rc) {
                uint64_t lsn = atomic_load(&f->lsn);
                pages_release(bp, h);
                return eng_report(rep, ENG_LAYER_STRUCTURE, "data", block, (int64_t)block * ps, -1, rec->lsn, lsn,
                                  "redo of the record at LSN 0x%llx: %s", (unsigned long long)rec->lsn, why);
            }
            /* A modifying action never moves a page's LSN back: a page at
             * or past the record's end was skipped above (unless this
             * record made it so).  A creating one defines the whole page
             * as of this record, whatever it held. */
            assert((creates || atomic_load(&f->lsn) <= rec->end) && !bp_frame_lazy(f));
            atomic_store(&f->lsn, REDO_PAGE_LSN(rec));
            bp_kv_update(bp, f);
            bp_mark_dirty(f);
            hf->applied = 1;
            out->actions_applied++;
            if (kind == PA_IMAGE) out->images_restored++;
            if (block == 0) { /* the meta page as redo leaves it */
                meta_fields mf;
                meta_read(f->data, &mf);
                out->meta_nblocks = mf.nblocks;
            }
        }
#ifdef ENG_BROKEN_REDO_RELEASES_PAGE_BETWEEN_ACTIONS
        /* planted bug (tests/mutants.txt): every page is let go after each
         * action, as if one action were one change (RC1 broken): a page the
         * record comes back to (the meta page or a free-list trunk, between
         * the pages a large value allocates) can be written back in between
         * with the record's end as its LSN and only the first change, and a
         * recovery after this one (a crash in redo, a failed open) skips
         * the rest. */
        {
#else
        if (hf->last == (size_t)(p - start)) { /* its last action: let go */
#endif
            bp_release(bp, f, BP_EXCL);
            hf->f = NULL;
        }
        p += n;
    }
    return ENG_OK;
}

/* Apply one record's page actions.  Each frame it touches stays held
 * until its last action on it is applied: a frame written back between
 * two actions of one record would reach the disk with the record's end as
 * its LSN but only the first change, and a recovery after this one (this
 * open failing, or a crash) would skip the second as applied (RC1). */
static int apply_pages(bp_pool *bp, uint32_t ps, const wal_record *rec, const pa_batch *batch, uint8_t *zscratch,
                       const eng_reporter *rep, rec_pages *h, rec_result *out) {
    int rc = apply_actions(bp, ps, rec, batch, zscratch, rep, h, out);
    pages_release(bp, h);
    return rc;
}

int recovery_redo(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t redo_lsn, uint64_t last_seq, bp_pool *bp,
                  uint32_t page_size, int sync_log, const eng_reporter *rep, rec_result *out) {
    memset(out, 0, sizeof *out);
    out->last_seq = last_seq;
    out->max_seq = last_seq;
    int rc = scan_end(io, dir, seg_size, redo_lsn, sync_log, rep, out);
    if (rc) return rc;

    wal_reader *r;
    if ((rc = wal_reader_open(io, dir, seg_size, redo_lsn, 0, rep, &r))) return rc;
    uint8_t *zscratch = malloc(page_size);
    pa_batch batch = {0};
    rec_pages h = {0};
    size_t ops_cap = 0;
    if (!zscratch) {
        wal_reader_close(r);
        return ENG_NOMEM;
    }
    wal_record rec;
    uint64_t seen = 0, prev_end = redo_lsn;
    uint64_t replay = out->records;
#ifdef ENG_BROKEN_DROP_SYNCED_COMMIT
    /* Test-only broken build: the last committed batch is forgotten, synced
     * or not (stress proves the oracle reports it lost). */
    if (out->broken_last_batch) replay = out->broken_last_batch - 1;
#endif
    while (rc == ENG_OK && seen < replay && (rc = wal_reader_next(r, &rec)) == ENG_OK) {
        seen++;
        /* The reader walks forward from the redo point, record by record. */
        assert(rec.lsn >= prev_end && rec.end > rec.lsn);
        prev_end = rec.end;
        if (seen == out->records / 2 + 1) ENG_KILL_POINT(FP_KILL_RECOVERY_REDO);
        if (rec.type == WAL_REC_BATCH) {
            uint32_t nops;
            if (pa_batch_count(rec.payload, rec.len, &nops)) {
                rc = -1;
            } else {
                if (nops > ops_cap) {
                    pa_op *o = realloc(batch.ops, sizeof *o * nops);
                    if (!o) {
                        rc = ENG_NOMEM;
                        break;
                    }
                    batch.ops = o;
                    ops_cap = nops;
                }
                uint8_t *copy = malloc(rec.len);
                if (!copy) {
                    rc = ENG_NOMEM;
                    break;
                }
                memcpy(copy, rec.payload, rec.len);
                free(out->batch_payload);
                out->batch_payload = copy;
                out->batch_len = rec.len;
                out->batch_lsn = rec.lsn;
                out->ops_done = 0;
                if (out->batch_open) out->txns_aborted++; /* never finished */
                out->batch_open = 1;
                if (pa_batch_decode(copy, rec.len, &batch))
                    rc = -1;
                else {
                    out->nops = batch.nops;
                    if (batch.seq > out->max_seq) out->max_seq = batch.seq;
                }
            }
            if (rc == -1)
                rc = eng_report(rep, ENG_LAYER_WAL, WAL_DIR, -1, (int64_t)rec.lsn, -1, 0, 0,
                                "batch record at LSN 0x%llx does not decode", (unsigned long long)rec.lsn);
        } else if (rec.type == WAL_REC_PAGES) {
            uint64_t blsn = rec.len >= PA_REC_HDR ? rd64(rec.payload + PR_BATCH_LSN_OFF) : 0;
            uint32_t op = rec.len >= PA_REC_HDR ? rd32(rec.payload + PR_OP_OFF) : UINT32_MAX - 1;
            if (op == PA_OP_MAINT) {
                rc = REDO_MAINT(apply_pages(bp, page_size, &rec, NULL, zscratch, rep, &h, out), out);
            } else if (!out->batch_payload || blsn != out->batch_lsn ||
                       (op >= out->nops && op != PA_OP_COMMIT && op != PA_OP_ABORT)) {
                rc = eng_report(rep, ENG_LAYER_WAL, WAL_DIR, -1, (int64_t)rec.lsn, -1, out->batch_lsn, blsn,
                                "page record at LSN 0x%llx names a batch or operation not in the log",
                                (unsigned long long)rec.lsn);
            } else {
                rc = apply_pages(bp, page_size, &rec, &batch, zscratch, rep, &h, out);
                if (op == PA_OP_COMMIT) {
                    out->last_seq = batch.seq;
                    out->txns_committed++;
                    out->batch_open = 0;
                } else if (op == PA_OP_ABORT) {
                    out->txns_aborted++;
                    out->batch_open = 0;
                } else if (op + 1 > out->ops_done)
                    out->ops_done = op + 1;
            }
        }
    }
    (void)prev_end;
    if (rc == ENG_NOTFOUND) rc = ENG_OK; /* cannot happen: pass 1 counted */
    wal_reader_close(r);
    free(zscratch);
    free(batch.ops);
    free(h.v);
    /* A batch without its commit record was cut by the crash: aborted
     * (T3: its id has no commit-log entry, so its versions stay invisible
     * until vacuum removes them). */
    if (out->batch_open) {
        out->txns_aborted++;
        out->batch_open = 0;
    }
    free(out->batch_payload);
    out->batch_payload = NULL;
    if (out->max_seq < out->last_seq) out->max_seq = out->last_seq;
    return rc;
}
