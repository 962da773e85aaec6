/*
 * btree_alloc.c -- the tree's pages: allocation (from the free list or
 * past the end), freeing onto the free list, and overflow chains (read
 * under the leaf's latch, written back to front).
 *
 * The free list's trunk pages and the overflow pages are drawn in page.h;
 * every change here is an action of the writer's operation
 * (btree_wctx.c).
 */
#include <assert.h>
#include <string.h>

#include "btree_int.h"

/* ---- overflow chains ---- */

/* Walk the chain of a cell, copying the value into OUT (if non-NULL) and
 * the chain's blocks into BLOCKS (if non-NULL, sized ovfl_pages).  Pages are
 * latched in MODE one at a time (the leaf latch held by the caller keeps the
 * chain from changing). */
int bt_ovfl_walk(bt_tree *t, uint32_t leaf, int slot, uint32_t first, uint32_t vlen, uint8_t *out, uint32_t *blocks) {
    uint32_t blk = first, done = 0;
    int npages = ovfl_pages(t, vlen);
    for (int i = 0; i < npages; i++) {
        if (blk <= ROOT_BLOCK || blk >= atomic_load(&t->nblocks))
            return corrupt(t, ENG_LAYER_OVERFLOW, leaf, slot, atomic_load(&t->nblocks), blk,
                           "overflow pointer out of range");
        bp_frame *f;
        int rc = bp_get(t->bp, blk, BP_SHARED, &f);
        if (rc) return rc;
        if ((rc = kv_page(t, f))) {
            bp_release(t->bp, f, BP_SHARED);
            return rc;
        }
        const uint8_t *p = f->data;
        uint32_t len = ph_get_aux(p), want = vlen - done < t->ovfl_cap ? vlen - done : (uint32_t)t->ovfl_cap;
        uint32_t next = ph_get_next(p);
#ifdef ENG_BROKEN_OVERFLOW_WALK_ACCEPTS_SHORT_PAGE
        /* planted bug (tests/mutants.txt): the length is checked only
         * against the room left in the value (the copy cannot overrun it),
         * so an overflow page holding fewer bytes than the value needs (a
         * stale page of a shorter value: a reused block whose write was
         * lost) passes, and the value is returned with a tail never read. */
        if (ph_get_type(p) != PAGE_OVERFLOW || len > want || (i + 1 < npages) != (next != 0)) {
#else
        if (ph_get_type(p) != PAGE_OVERFLOW || len != want || (i + 1 < npages) != (next != 0)) {
#endif
            uint64_t ty = ph_get_type(p);
            bp_release(t->bp, f, BP_SHARED);
            return corrupt(t, ENG_LAYER_OVERFLOW, blk, -1, want, ty == PAGE_OVERFLOW ? len : ty << 32,
                           ty != PAGE_OVERFLOW ? "overflow chain reaches a page that is not an overflow page"
                                               : "overflow page length or link disagrees with the value length");
        }
        if (out) memcpy(out + done, p + PAGE_HDR, len);
        if (out && (rc = kv_page(t, f))) {
            bp_release(t->bp, f, BP_SHARED);
            return rc;
        } /* after the copy too */
        if (blocks) blocks[i] = blk;
        bp_release(t->bp, f, BP_SHARED);
        done += len;
        blk = next;
    }
    return ENG_OK;
}

/* ---- allocation (writer only; meta latched after the tree pages, L2) ---- */

/* Latch the meta page exclusively into *M and read it into *MF, proven by
 * its page code and by the block count this handle keeps: a count that
 * disagrees is CORRUPTION (nothing latched).  Gone back in time (a lost
 * write, a stale page read back) it would hand out blocks in use; damaged
 * upwards (in the cache, at w = 0) it would leap to a block billions
 * away: the free list's range checks use it, and both allocation and
 * freeing log it and so make it the meta page's, allocation the handle's
 * too. */
static int meta_latch(bt_tree *t, bp_frame **m, meta_fields *mf) {
    int rc = bp_get(t->bp, META_BLOCK, BP_EXCL, m);
    if (rc) return rc;
    if ((rc = kv_page(t, *m))) {
        bp_release(t->bp, *m, BP_EXCL);
        return rc;
    }
    meta_read((*m)->data, mf);
    uint32_t have = atomic_load(&t->nblocks);
#ifdef ENG_BROKEN_ALLOC_TRUSTS_STALE_META_COUNT
    /* planted bug (tests/mutants.txt): only a count past the handle's is
     * refused (damage upwards), as if a meta page could only grow: one
     * gone back in time (its write lost, the page read back after an
     * eviction) passes, and allocation hands out blocks the tree still
     * uses: a new page written over a live leaf or overflow page (keys and
     * values lost, wrong values read). */
    if (mf->nblocks <= have) return ENG_OK;
#else
    if (mf->nblocks == have) return ENG_OK;
#endif
    bp_release(t->bp, *m, BP_EXCL);
    return corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, have, mf->nblocks,
                   "meta page block count disagrees with the blocks allocated (a stale or damaged meta page)");
}

/* Allocate a block: from the free list while the operation can still pin
 * it, else past the end.  Returns the new page's frame latched
 * exclusively, its contents to be defined by the caller's creating
 * action (which registers it: pending unless fresh).
 *
 * The free list is a chain of trunk pages listing free blocks (page.h).
 * A reused block is pending like any existing page, so it reaches disk
 * only after the record that reuses it, and so after the record that
 * freed it: until then the tree on disk may still point at it. */
int bt_alloc_page(bt_wctx *w, bp_frame **out) {
    bt_tree *t = w->t;
    bp_frame *m, *f = NULL, *tr = NULL;
    meta_fields mf;
    int rc = meta_latch(t, &m, &mf);
    if (rc) return rc;
    size_t at;
    int from_free =
        mf.freelist != 0 && w->ntouched < MAX_TOUCHED - 8 && (size_t)w->ntouched + 4 < bp_nframes(t->bp) / 4;
    if (from_free) {
        uint32_t trunk = mf.freelist;
        if (trunk <= ROOT_BLOCK || trunk >= mf.nblocks) {
            bp_release(t->bp, m, BP_EXCL);
            return corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, mf.nblocks, trunk, "free list head out of range");
        }
        if ((rc = bp_get(t->bp, trunk, BP_EXCL, &tr))) {
            bp_release(t->bp, m, BP_EXCL);
            return rc;
        }
        if ((rc = kv_page(t, tr))) {
            bp_release(t->bp, tr, BP_EXCL);
            bp_release(t->bp, m, BP_EXCL);
            return rc;
        }
        uint32_t n = ph_get_aux(tr->data);
        if (ph_get_type(tr->data) != PAGE_FREE || n > FREE_TRUNK_CAP(t->ps)) {
            uint64_t ty = ph_get_type(tr->data);
            bp_release(t->bp, tr, BP_EXCL);
            bp_release(t->bp, m, BP_EXCL);
            return corrupt(t, ENG_LAYER_STRUCTURE, trunk, -1, PAGE_FREE, ty,
                           "free list reaches a page that is not a trunk");
        }
        if (n == 0) {
            /* An empty trunk is itself the free page. */
            mf.freelist = ph_get_next(tr->data);
            f = tr;
            tr = NULL;
        } else {
            uint32_t blk = rd32(tr->data + PAGE_HDR + 4u * (n - 1));
            if (blk <= ROOT_BLOCK || blk >= mf.nblocks) {
                bp_release(t->bp, tr, BP_EXCL);
                bp_release(t->bp, m, BP_EXCL);
                return corrupt(t, ENG_LAYER_STRUCTURE, trunk, (int32_t)(n - 1), mf.nblocks, blk,
                               "free-list entry out of range");
            }
            if ((rc = bt_act_begin(w, tr, 0, &at)) == ENG_OK) {
                pa_put_popfree(&w->rec, trunk);
                rc = bt_act_apply(w, tr, at);
            }
            bp_release(t->bp, tr, BP_EXCL);
            /* Its old contents do not matter: the caller defines it. */
            if (rc == ENG_OK) rc = bp_new(t->bp, blk, &f);
            if (rc) {
                bp_release(t->bp, m, BP_EXCL);
                return rc;
            }
        }
    } else {
        if (mf.nblocks == UINT32_MAX) {
            bp_release(t->bp, m, BP_EXCL);
            return ENG_NOSPACE;
        }
        rc = bp_new(t->bp, mf.nblocks, &f);
        if (rc) {
            bp_release(t->bp, m, BP_EXCL);
            return rc;
        }
        mf.nblocks++;
    }
    if ((rc = bt_act_begin(w, m, 0, &at)) == ENG_OK) {
        pa_put_meta(&w->rec, mf.nblocks, mf.freelist);
        rc = bt_act_apply(w, m, at);
    }
    /* The block count only grows: meta_latch found it equal to the
     * handle's, and allocation adds one or takes a free block. */
    assert(mf.nblocks >= atomic_load(&t->nblocks));
    if (rc == ENG_OK) atomic_store(&t->nblocks, mf.nblocks);
    bp_release(t->bp, m, BP_EXCL);
    if (rc) {
        bp_release(t->bp, f, BP_EXCL);
        return rc;
    }
    *out = f;
    return ENG_OK;
}

/* Put the N blocks in BLOCKS on the free list: appended to the head trunk
 * (the pages themselves are not written); a block that finds the trunk
 * full becomes the new head trunk. */
int bt_free_pages(bt_wctx *w, const uint32_t *blocks, int n) {
    bt_tree *t = w->t;
    if (n == 0) return ENG_OK;
    bp_frame *m, *tr = NULL;
    meta_fields mf;
    int rc = meta_latch(t, &m, &mf);
    if (rc) return rc;
    size_t at;
    uint32_t cap = FREE_TRUNK_CAP(t->ps);
    for (int i = 0; i < n && rc == ENG_OK; i++) {
        /* Readers never wait for the meta page, and none can reach these
         * pages any more, so taking them after the meta page is safe. */
        if (!tr && mf.freelist) {
            if ((rc = bp_get(t->bp, mf.freelist, BP_EXCL, &tr))) break;
            if ((rc = kv_page(t, tr))) break;
            if (ph_get_type(tr->data) != PAGE_FREE) {
                rc = corrupt(t, ENG_LAYER_STRUCTURE, mf.freelist, -1, PAGE_FREE, ph_get_type(tr->data),
                             "free list reaches a page that is not a trunk");
                break;
            }
        }
        if (tr && ph_get_aux(tr->data) > cap) {
            rc = corrupt(t, ENG_LAYER_STRUCTURE, mf.freelist, -1, cap, ph_get_aux(tr->data),
                         "free-list trunk count damaged");
            break;
        }
        if (tr && ph_get_aux(tr->data) < cap) {
            if ((rc = bt_act_begin(w, tr, 0, &at)) == ENG_OK) {
                pa_put_pushfree(&w->rec, mf.freelist, blocks[i]);
                rc = bt_act_apply(w, tr, at);
            }
            continue;
        }
        bp_frame *f;
        if ((rc = bp_new(t->bp, blocks[i], &f))) break;
        if ((rc = bt_act_begin(w, f, 1, &at)) == ENG_OK) {
            pa_put_free(&w->rec, blocks[i], mf.freelist);
            rc = bt_act_apply(w, f, at);
        }
        if (tr) bp_release(t->bp, tr, BP_EXCL);
        tr = f;
        if (rc == ENG_OK) mf.freelist = blocks[i];
    }
    if (tr) bp_release(t->bp, tr, BP_EXCL);
    assert(mf.nblocks == atomic_load(&t->nblocks)); /* freeing never changes the block count */
    if (rc == ENG_OK && (rc = bt_act_begin(w, m, 0, &at)) == ENG_OK) {
        pa_put_meta(&w->rec, mf.nblocks, mf.freelist);
        rc = bt_act_apply(w, m, at);
    }
    bt_fail_op(w, rc);
    bp_release(t->bp, m, BP_EXCL);
    return rc;
}

/* Write op's value into a new overflow chain, back to front so each page
 * is created knowing its successor; *first gets the head. */
int bt_ovfl_write(bt_wctx *w, uint32_t *first) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    int npages = ovfl_pages(t, o->vlen);
    uint32_t next = 0;
    for (int i = npages - 1; i >= 0; i--) {
        bp_frame *f;
        int rc = bt_alloc_page(w, &f);
        if (rc) return rc;
        uint32_t blk = atomic_load(&f->block);
        size_t off = (size_t)i * t->ovfl_cap, len = o->vlen - off < t->ovfl_cap ? o->vlen - off : t->ovfl_cap;
        size_t at;
        if ((rc = bt_act_begin(w, f, 1, &at)) == ENG_OK) {
            pa_put_ovfl(&w->rec, blk, next, NULL, (uint32_t)len, w->op, (uint32_t)off);
            rc = bt_act_apply(w, f, at);
        }
        bp_release(t->bp, f, BP_EXCL);
        if (rc) return rc;
        atomic_fetch_add_explicit(&t->ovfl_written, 1, memory_order_relaxed);
        next = blk;
    }
    *first = next;
    return ENG_OK;
}
