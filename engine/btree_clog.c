/*
 * btree_clog.c -- the commit log's pages: two bits of status per
 * transaction id (page.h), found through the directory in the meta page,
 * loaded into the status copy at open (txn.h) and set by the writer as
 * one logged record per commit or abort.
 */
#include <assert.h>
#include <stdlib.h>

#include "btree_int.h"

static int clog_dir_push(bt_tree *t, uint32_t blk) {
    if (t->clog_n == t->clog_cap) {
        uint32_t cap = t->clog_cap ? t->clog_cap * 2 : 16;
        uint32_t *d = realloc(t->clog_dir, cap * sizeof *d);
        if (!d) return ENG_NOMEM;
        t->clog_dir = d;
        t->clog_cap = cap;
    }
    t->clog_dir[t->clog_n++] = blk;
    return ENG_OK;
}

/* Commit-log page I of the directory, latched in MODE: proven by its
 * codes first (KV3: a flip in the cached type or index is the codes' to
 * name), then checked to be that page.  On failure *OUT is NULL. */
static int clog_get(bt_tree *t, uint32_t i, int mode, bp_frame **out) {
    bp_frame *f;
    *out = NULL;
    assert(i < t->clog_n); /* a page the directory names */
    int rc = bp_get(t->bp, t->clog_dir[i], mode, &f);
    if (rc) return rc;
    if ((rc = kv_page(t, f)) != ENG_OK) {
        bp_release(t->bp, f, mode);
        return rc;
    }
    if (ph_get_type(f->data) != PAGE_CLOG || ph_get_aux(f->data) != i) {
        uint64_t found = (uint64_t)ph_get_type(f->data) << 32 | ph_get_aux(f->data);
        bp_release(t->bp, f, mode);
        return corrupt(t, ENG_LAYER_VERSION, t->clog_dir[i], -1, i, found,
                       "commit-log directory names a page that is not that commit-log page");
    }
    *out = f;
    return ENG_OK;
}

int bt_load_clog(bt_tree *t) {
    bp_frame *m;
    int rc = bp_get(t->bp, META_BLOCK, BP_SHARED, &m);
    if (rc) return rc;
    meta_fields mf;
    meta_read(m->data, &mf);
    if (mf.clog_pages > META_CLOG_CAP(t->ps)) { /* the directory must stay inside the page */
        bp_release(t->bp, m, BP_SHARED);
        return corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, META_CLOG_CAP(t->ps), mf.clog_pages,
                       "meta commit-log directory claims more pages than it has room for");
    }
    t->clog_n = 0;
    for (uint32_t i = 0; i < mf.clog_pages && rc == ENG_OK; i++) rc = clog_dir_push(t, meta_clog_block(m->data, i));
    bp_release(t->bp, m, BP_SHARED);
    const uint32_t per = CLOG_PER_PAGE(t->ps);
    for (uint32_t i = 0; i < t->clog_n && rc == ENG_OK; i++) {
        bp_frame *f;
        if ((rc = clog_get(t, i, BP_SHARED, &f))) break;
#ifdef ENG_BROKEN_CLOG_LOAD_SKIPS_FIRST_SLOT
        /* planted bug (tests/mutants.txt): slot 0 is skipped as id 0 (no
         * transaction), on every page, not only the first: after a reopen
         * the id that opens each later commit-log page has no status, so
         * its committed batch reads as aborted and vacuum removes it. */
        for (uint32_t j = 1; j < per && rc == ENG_OK; j++) {
#else
        for (uint32_t j = 0; j < per && rc == ENG_OK; j++) {
#endif
            unsigned st = (f->data[PAGE_HDR + j / 4u] >> ((j % 4u) * 2u)) & 3u;
            if (st != CLOG_IN_PROGRESS) rc = txn_set_status(t->cfg.txn, (uint64_t)i * per + j, (int)st);
        }
        bp_release(t->bp, f, BP_SHARED);
    }
    return rc;
}

/* ---- the commit log ---- */

int bt_commit(bt_tree *t, uint64_t xid, uint64_t batch_lsn, int status, uint64_t *end, int *changed) {
    *changed = 0;
    *end = 0;
    /* The writer finishes its own id, once: commit or abort (T1, T3) */
    assert(xid > 0 && (status == CLOG_COMMITTED || status == CLOG_ABORTED));
    const uint32_t per = CLOG_PER_PAGE(t->ps);
    uint64_t pi = xid / per;
    if (pi >= META_CLOG_CAP(t->ps)) return ENG_NOSPACE;
    bt_wctx w;
    int rc = bt_wctx_init(&w, t, NULL, status == CLOG_COMMITTED ? PA_OP_COMMIT : PA_OP_ABORT, batch_lsn);
    if (rc) return rc;
    bp_frame *f = NULL, *m = NULL;
    size_t at;
    /* The first id of a log page creates it (and, after a restart moved
     * ids past the lease, any page skipped: empty, nobody committed there),
     * named in the meta page's directory, in this same record. */
    while (rc == ENG_OK && t->clog_n <= pi) {
        bp_frame *g;
        uint32_t idx = t->clog_n;
        if ((rc = bt_alloc_page(&w, &g)) != ENG_OK) break;
        uint32_t blk = atomic_load(&g->block);
        if ((rc = bt_act_begin(&w, g, 1, &at)) == ENG_OK) {
            pa_put_init(&w.rec, blk, PAGE_CLOG, 0, 0, idx);
            rc = bt_act_apply(&w, g, at);
        }
        if (rc == ENG_OK && (rc = bp_get(t->bp, META_BLOCK, BP_EXCL, &m)) == ENG_OK) {
            /* KV3 again: bt_act_begin proves a page at its first change in an
             * operation only, and the meta page was unlatched in between
             * when this commit creates more than one log page. */
            if ((rc = kv_page(t, m)) == ENG_OK && (rc = bt_act_begin(&w, m, 0, &at)) == ENG_OK) {
                pa_put_clogdir(&w.rec, idx, blk);
                rc = bt_act_apply(&w, m, at);
            }
            bp_release(t->bp, m, BP_EXCL);
        }
        if (rc == ENG_OK) rc = clog_dir_push(t, blk);
        if (rc == ENG_OK && idx == pi)
            f = g;
        else
            bp_release(t->bp, g, BP_EXCL);
    }
    assert(rc != ENG_OK || pi < t->clog_n); /* the directory reaches the id's page */
    if (rc == ENG_OK && !f) rc = clog_get(t, (uint32_t)pi, BP_EXCL, &f);
    if (rc == ENG_OK && (rc = bt_act_begin(&w, f, 0, &at)) == ENG_OK) {
        pa_put_clogset(&w.rec, atomic_load(&f->block), (uint32_t)(xid % per), status);
        rc = bt_act_apply(&w, f, at);
    }
    bt_fail_op(&w, rc);
    if (f) bp_release(t->bp, f, BP_EXCL);
    *changed = w.rec.len > PA_REC_HDR || w.ntouched > 0;
    int crc = bt_wctx_commit(&w, rc == ENG_OK);
    if (rc == ENG_OK && crc == ENG_OK) {
        *end = w.end;
        return txn_set_status(t->cfg.txn, xid, status);
    }
    return crc ? crc : rc;
}
