/*
 * btree_wctx.c -- the writer's operation context (struct bt_wctx in
 * btree_int.h).
 *
 * Every page change of one tree operation goes through act(): the action
 * is appended to the operation's record and applied by pa_apply, the same
 * code redo runs.  Pages that existed before the operation are marked
 * pending (never written back) until the record is in the log and their
 * LSN is stamped (the write-ahead rule); their first change after a
 * checkpoint logs a full-page image first when full_page_writes is on.
 * Blocks allocated past the end during the operation (>= fresh_from) need
 * neither: nothing durable refers to them until the record is durable, so
 * writing them early is harmless, and they are not pinned, which lets an
 * overflow chain larger than the pool pass through it.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "btree_int.h"
#include "wal.h"

int bt_wctx_init(bt_wctx *w, bt_tree *t, const pa_batch *batch, uint32_t op, uint64_t batch_lsn) {
    memset(w, 0, sizeof *w);
    w->t = t;
    w->batch = batch;
    w->op = op;
    w->fresh_from = atomic_load(&t->nblocks);
    w->zscratch = malloc(t->ps);
    if (!w->zscratch) return ENG_NOMEM;
    /* PAGES record header: batch LSN, op index (filled now, actions follow). */
    pa_buf_reset(&w->rec);
    uint8_t hdr[PA_REC_HDR];
    wr64(hdr + PR_BATCH_LSN_OFF, batch_lsn);
    wr32(hdr + PR_OP_OFF, op);
    if (w->rec.cap < 4096) {
        w->rec.p = malloc(4096);
        if (!w->rec.p) {
            free(w->zscratch);
            return ENG_NOMEM;
        }
        w->rec.cap = 4096;
    }
    memcpy(w->rec.p, hdr, PA_REC_HDR);
    w->rec.len = PA_REC_HDR;
    return ENG_OK;
}

static int touched_has(const bt_wctx *w, const bp_frame *f) {
    for (int i = 0; i < w->ntouched; i++)
        if (w->touched[i] == f) return 1;
    return 0;
}

/* Called with the operation's latches still held: an operation that
 * fails after changing pages leaves them half-done (a split's halves
 * without the parent's separator hides keys), so the handle is poisoned
 * before any reader can latch them (bt_descend tests the flag under the
 * root's latch).  Returns RC. */
int bt_fail_op(bt_wctx *w, int rc) {
    if (rc != ENG_OK && rc != ENG_NOTFOUND && (w->rec.len > PA_REC_HDR || w->ntouched > 0) && w->t->cfg.poisoned)
        atomic_store(w->t->cfg.poisoned, 1);
    return rc;
}

/* Before an action on F: register it, and log its image if this is its
 * first change since the checkpoint.  Returns the offset the action will
 * start at. */
int bt_act_begin(bt_wctx *w, bp_frame *f, int creating, size_t *at) {
    uint32_t blk = atomic_load(&f->block);
    /* KV3 first: a frame is proven by its codes before anything trusts its
     * header, so damage in memory is named by the codes (kv_protection),
     * not by the shape check below, which cannot tell memory damage from
     * a page that was wrong on disk (regression test:
     * test_kvprot_header_flip_before_an_edit_is_named_by_the_codes). */
    if (!creating && !touched_has(w, f)) {
        int rc = kv_all(w->t, f);
        if (rc) return rc;
    }
    if (!creating) {
        /* The edit functions trust the header (P1); a frame damaged in
         * memory must not turn an edit into a write outside the page (with
         * codes off, or in a frame this operation already changed). */
        const uint8_t *p = f->data;
        unsigned lo = ph_get_lower(p), up = ph_get_upper(p), ns = ph_get_nslots(p);
        unsigned base = page_base_for(ph_get_type(p), w->t->ps);
        if (lo < base || lo > up || up > w->t->ps || lo != base + 2u * ns || ph_get_frag(p) > w->t->ps - up)
            return corrupt(w->t, ENG_LAYER_STRUCTURE, blk, -1, base + 2u * ns, lo, "page header damaged in the cache");
    }
#ifdef ENG_BROKEN_REUSED_BLOCK_NOT_PENDING
    /* planted bug (tests/mutants.txt): a creating action is taken to need
     * no registration at all, as it needs no image: a block reused from the
     * free list (an overflow chain freed by an earlier update, now a new
     * chain, a leaf or a trunk) is neither pending nor stamped, so it can
     * be written back before the records that freed and reused it are in
     * the log; a crash that loses them leaves the old value's chain
     * overwritten on disk. */
    if (!creating && blk < w->fresh_from && !touched_has(w, f)) {
#else
    if (blk < w->fresh_from && !touched_has(w, f)) {
#endif
        if (w->ntouched == MAX_TOUCHED)
            return corrupt(w->t, ENG_LAYER_STRUCTURE, blk, -1, MAX_TOUCHED, MAX_TOUCHED,
                           "one operation touches too many existing pages");
        bp_pin_again(f);
        atomic_store(&f->pending, 1);
        w->touched[w->ntouched++] = f;
        /* L1: pinned by the caller's latch and again here, until commit */
        assert(atomic_load(&f->pin) >= 2);
        bt_tree *t = w->t;
#ifdef ENG_BROKEN_FPI_SKIPS_PAGE_AT_REDO_LSN
        /* planted bug (tests/mutants.txt): strictly below the redo point,
         * so a page last changed by the record that ends right at the
         * checkpoint (its LSN == redo_lsn) gets no image for its first
         * change after it: a write torn by a crash cannot be rebuilt. */
        if (!creating && t->cfg.full_page_writes && atomic_load(&f->lsn) < atomic_load(t->cfg.redo_lsn)) {
#else
        if (!creating && t->cfg.full_page_writes && atomic_load(&f->lsn) <= atomic_load(t->cfg.redo_lsn)) {
#endif
            size_t before = w->rec.len;
            size_t raw = pa_put_image(&w->rec, blk, f->data, t->ps, t->cfg.wal_compression);
            atomic_fetch_add_explicit(&t->images, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&t->image_bytes, w->rec.len - before, memory_order_relaxed);
            atomic_fetch_add_explicit(&t->image_raw_bytes, raw, memory_order_relaxed);
        }
    }
    *at = w->rec.len;
    return w->rec.oom ? ENG_NOMEM : ENG_OK;
}

int bt_act_apply(bt_wctx *w, bp_frame *f, size_t at) {
    if (w->rec.oom) return ENG_NOMEM;
    const char *why = "";
    uint32_t blk = atomic_load(&f->block);
    /* The action was just appended after AT; an existing page is pending
     * until its record is in the log (W-rule); nothing writes into a lazy
     * leaf (KV0: the writer's bp_get codes it). */
    assert(at >= PA_REC_HDR && at < w->rec.len && !bp_frame_lazy(f));
    assert(blk >= w->fresh_from || atomic_load(&f->pending));
#ifdef ENG_BROKEN_KV_CODES_STALE_AFTER_IN_PLACE_EDIT
    const unsigned nslots_before = ph_get_nslots(f->data);
#endif
    int rc = pa_apply(f->data, w->t->ps, blk, w->rec.p + at, w->rec.len - at, w->batch, w->zscratch, &why);
    if (rc) return corrupt(w->t, ENG_LAYER_STRUCTURE, blk, -1, 0, 0, why);
#ifdef ENG_BROKEN_KV_CODES_STALE_AFTER_IN_PLACE_EDIT
    /* planted bug (tests/mutants.txt): the codes are recomputed only when
     * the action changed the slot count; an in-place edit (a delete's
     * xmax, a freeze) leaves the cell's old code, and the intact page is
     * then reported as damaged. */
    if (ph_get_nslots(f->data) != nslots_before) bp_kv_update(w->t->bp, f);
#else
    bp_kv_update(w->t->bp, f);
#endif
    bp_mark_dirty(f);
    return ENG_OK;
}

/* Append the record and stamp the pages; on failure they stay pending (the
 * handle is poisoned by the caller and never writes them). */
int bt_wctx_commit(bt_wctx *w, int ok) {
    int rc = ENG_OK;
    uint64_t start = 0, end = 0;
    if (ok && w->rec.len > PA_REC_HDR) {
        rc = w->t->cfg.log_append(w->t->cfg.log_ctx, WAL_REC_PAGES, w->rec.p, w->rec.len, &start, &end);
        w->end = end;
        assert(rc != ENG_OK || end > start);
        if (rc == ENG_OK) {
            for (int i = 0; i < w->ntouched; i++) {
                assert(atomic_load(&w->touched[i]->pending)); /* registered by bt_act_begin */
                atomic_store(&w->touched[i]->lsn, end);
                atomic_store(&w->touched[i]->pending, 0);
            }
        }
    } else if (ok) {
        assert(w->ntouched == 0); /* a page was registered by an action: the record holds it */
        for (int i = 0; i < w->ntouched; i++) atomic_store(&w->touched[i]->pending, 0);
    }
    for (int i = 0; i < w->ntouched; i++) bp_unpin(w->t->bp, w->touched[i]);
    w->ntouched = 0;
    free(w->rec.p);
    free(w->zscratch);
    return rc;
}
