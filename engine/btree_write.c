/*
 * btree_write.c -- the writer (one at a time, under the caller's write
 * lock): puts and deletes as versions, splits between keys (with suffix
 * truncation), pruning of dead versions, and vacuum of a leaf.
 *
 * Each operation is one record of page actions (btree_wctx.c); it takes
 * pages from allocation and writes overflow chains through btree_alloc.c.
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "btree_int.h"

/* ---- writes ---- */

/* A cell to insert: its bytes (for sizes and splits) and how the action
 * names it (from the batch op, or explicit bytes for separators). */
typedef struct newcell {
    uint8_t bytes[LEAF_CELL_HDR + ENG_MAX_KEY + 4096 + 8];
    size_t size;
    int from_op;
    uint32_t ovfl;
} newcell;

typedef struct cellref {
    const uint8_t *p;
    size_t size;
} cellref;

/* Cells of P with NEW at IDX (replacing IDX if REPLACE). */
static size_t gather(const uint8_t *p, unsigned idx, int replace, const uint8_t *cell, size_t csize, cellref *out) {
    unsigned n = ph_get_nslots(p);
    size_t k = 0;
    for (unsigned i = 0; i <= n; i++) {
        if (i == idx) out[k++] = (cellref){cell, csize};
        if (i == n) break;
        if (i == idx && replace) continue;
        size_t sz;
        const uint8_t *c = page_cell_bytes(p, i, &sz);
        out[k++] = (cellref){c, sz};
    }
    return k;
}

/* Split point: the index m that balances bytes with both halves fitting in
 * CAP (cells of at most CAP/2 bytes guarantee one exists).  For internal
 * splits the cell at m moves up (PUSHUP) and belongs to neither half.  An
 * append at the end of the rightmost page (sequential load) splits at the
 * new cell, leaving the left page full. */
static size_t split_point(const cellref *c, size_t n, size_t cap, int pushup, int append) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += c[i].size + 2;
    if (append) {
        size_t m = pushup ? n - 2 : n - 1, left = 0;
        for (size_t i = 0; i < m; i++) left += c[i].size + 2;
        if (m >= 1 && left <= cap) return m;
    }
    size_t best = n / 2, bestdiff = (size_t)-1, left = 0;
    for (size_t m = 1; m < n; m++) {
        left += c[m - 1].size + 2;
        size_t right = total - left - (pushup ? c[m].size + 2 : 0);
        if (left > cap || right > cap) continue;
        if (pushup && m == n - 1 && right == 0) continue;
        size_t diff = left > right ? left - right : right - left;
        if (diff < bestdiff) {
            bestdiff = diff;
            best = m;
        }
    }
    return best;
}

/* The split index nearest M where the key changes (versions of one key
 * stay in one leaf) with both halves fitting CAP; 0 if there is none. */
static size_t key_boundary(const cellref *c, size_t n, size_t m, size_t cap) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += c[i].size + 2;
    for (size_t d = 0; d < n; d++) {
        for (int side = 0; side < 2; side++) {
            size_t b = side ? m + d : m - d;
            if ((side && m + d >= n) || (!side && d > m) || b == 0 || b >= n) continue;
#ifndef ENG_BROKEN_LEAF_SPLIT_INSIDE_KEY_GROUP
            /* planted bug (tests/mutants.txt): the #ifndef leaves this test
             * out, so a leaf split may fall between two versions of one
             * key: the newer ones stay left, the older go right under a
             * separator equal to the key, and a get (or the writer) then
             * sees only the older versions (NOTFOUND or a stale value for
             * a key a snapshot kept several versions of). */
            if (key_cmp(c[b - 1].p + LEAF_CELL_HDR, rd16(c[b - 1].p), c[b].p + LEAF_CELL_HDR, rd16(c[b].p)) == 0)
                continue;
#endif
            size_t left = 0;
            for (size_t i = 0; i < b; i++) left += c[i].size + 2;
            if (left <= cap && total - left <= cap) return b;
        }
    }
    return 0;
}

/* Shortest prefix of B that is > A (A < B): suffix truncation. */
static size_t sep_len(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    size_t i = 0;
    while (i < al && i < bl && a[i] == b[i]) i++;
    return i + 1 <= bl ? i + 1 : bl;
}

typedef struct pathent {
    bp_frame *f;
} pathent;

static void put_cell_action(bt_wctx *w, int split, uint32_t blk, unsigned idx, int replace, unsigned m, uint32_t next,
                            const newcell *nc) {
    const uint8_t *cell = nc->from_op ? NULL : nc->bytes;
    if (split)
        pa_put_split(&w->rec, blk, idx, replace, m, next, cell, nc->size, w->op, nc->ovfl);
    else
        pa_put_insert(&w->rec, blk, idx, replace, cell, nc->size, w->op, nc->ovfl);
}

/* Insert NC at IDX of the page at path[d] (replacing if REPLACE),
 * splitting and recursing into path[d-1] as needed.  All path frames are
 * latched exclusively by the caller. */
static int insert_at(bt_wctx *w, pathent *path, int d, unsigned idx, int replace, const newcell *nc) {
    bt_tree *t = w->t;
    bp_frame *f = path[d].f;
    uint8_t *p = f->data;
    size_t ps = t->ps, at, oldsz = 0;
    uint32_t blk = atomic_load(&f->block);
    int rc;
    if (replace) page_cell_bytes(p, idx, &oldsz);
    if (page_reclaimable(p) + (replace ? oldsz + 2 : 0) >= nc->size + 2) {
        if ((rc = bt_act_begin(w, f, 0, &at))) return rc;
        put_cell_action(w, 0, blk, idx, replace, 0, 0, nc);
        return bt_act_apply(w, f, at);
    }
    int leaf = ph_get_type(p) == PAGE_LEAF;
    int level = ph_get_level(p);
    if ((rc = kv_all(t, f))) return rc; /* KV3: a split copies every entry */
    {
        /* A split copies every cell: prove the page first (rare path). */
        page_problem pr;
        if (page_check_structure(p, ps, &pr) != ENG_OK)
            return corrupt(t, ENG_LAYER_STRUCTURE, blk, pr.entry, pr.expected, pr.found, pr.detail);
    }
    cellref *cells = malloc(sizeof(cellref) * (ps / 2 + 2));
    uint8_t *right = malloc(ps), *lefti = malloc(ps);
    newcell *sep = malloc(sizeof *sep);
    bp_frame *rf = NULL, *lf = NULL;
    if (!cells || !right || !lefti || !sep) {
        rc = ENG_NOMEM;
        goto out;
    }
    size_t n = gather(p, idx, replace, nc->bytes, nc->size, cells);
    int append = !replace && idx == ph_get_nslots(p) && ph_get_next(p) == 0 && d > 0;
    size_t m = split_point(cells, n, ps - page_slot_base(p), !leaf, append);
    if (leaf && (m = key_boundary(cells, n, m, ps - page_slot_base(p))) == 0) {
        /* Versions of one key never span leaves: pruning (do_put) left
         * more versions of this key than a leaf holds. */
        rc = ENG_NOSPACE;
        goto out;
    }

    /* The separator going up (built before the page changes). */
    const uint8_t *sk;
    size_t skl;
    if (leaf) {
        const uint8_t *a = cells[m - 1].p, *b = cells[m].p;
        sk = b + LEAF_CELL_HDR;
        skl = sep_len(a + LEAF_CELL_HDR, rd16(a), sk, rd16(b));
    } else {
        sk = cells[m].p + INTERNAL_CELL_HDR;
        skl = rd16(cells[m].p);
    }
    uint8_t skey[ENG_MAX_KEY];
    memcpy(skey, sk, skl);

    /* Both halves as pages, from a copy: the right (and, for a root split,
     * the left) become images; a plain split logs the left as PA_SPLIT. */
    memcpy(lefti, p, ps);
    if (pa_split_cells(lefti, (uint32_t)ps, idx, replace, nc->bytes, nc->size, (unsigned)m, right, 0)) {
        rc = corrupt(t, ENG_LAYER_STRUCTURE, blk, -1, 0, 0, "split halves do not fit");
        goto out;
    }
    if (d == 0) {
        /* Root split: the root keeps block 1 and becomes the parent. */
        if ((rc = bt_alloc_page(w, &lf)) || (rc = bt_alloc_page(w, &rf))) goto out;
        uint32_t lb = atomic_load(&lf->block), rb = atomic_load(&rf->block);
        ph_set_block(lefti, lb);
        ph_set_next(lefti, rb);
        ph_set_block(right, rb);
        ph_set_next(right, 0);
        if ((rc = bt_act_begin(w, lf, 1, &at))) goto out;
        pa_put_image(&w->rec, lb, lefti, (uint32_t)ps, t->cfg.wal_compression);
        if ((rc = bt_act_apply(w, lf, at))) goto out;
        if ((rc = bt_act_begin(w, rf, 1, &at))) goto out;
        pa_put_image(&w->rec, rb, right, (uint32_t)ps, t->cfg.wal_compression);
        if ((rc = bt_act_apply(w, rf, at))) goto out;
        if ((rc = bt_act_begin(w, f, 1, &at))) goto out;
        pa_put_init(&w->rec, ROOT_BLOCK, PAGE_INTERNAL, level + 1, 0, lb);
        if ((rc = bt_act_apply(w, f, at))) goto out;
        sep->size = internal_cell_encode(sep->bytes, skey, skl, rb);
        sep->from_op = 0;
        sep->ovfl = 0;
        if ((rc = bt_act_begin(w, f, 0, &at))) goto out;
        put_cell_action(w, 0, ROOT_BLOCK, 0, 0, 0, 0, sep);
        rc = bt_act_apply(w, f, at);
        goto out;
    }
    if ((rc = bt_alloc_page(w, &rf))) goto out;
    uint32_t rb = atomic_load(&rf->block);
    ph_set_block(right, rb);
    if ((rc = bt_act_begin(w, rf, 1, &at))) goto out;
    pa_put_image(&w->rec, rb, right, (uint32_t)ps, t->cfg.wal_compression);
    if ((rc = bt_act_apply(w, rf, at))) goto out;
    bp_release(t->bp, rf, BP_EXCL);
    rf = NULL;
    if ((rc = bt_act_begin(w, f, 0, &at))) goto out;
    put_cell_action(w, 1, blk, idx, replace, (unsigned)m, rb, nc);
    if ((rc = bt_act_apply(w, f, at))) goto out;
    {
        sep->size = internal_cell_encode(sep->bytes, skey, skl, rb);
        sep->from_op = 0;
        sep->ovfl = 0;
        uint8_t *pp = path[d - 1].f->data;
        int exact = 0;
        unsigned pidx = page_search(pp, skey, skl, &exact);
        if (exact) {
            rc = corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&path[d - 1].f->block), (int32_t)pidx, 0, 0,
                         "separator already present in parent");
            goto out;
        }
        rc = insert_at(w, path, d - 1, pidx, 0, sep);
    }
out:
    if (lf) bp_release(t->bp, lf, BP_EXCL);
    if (rf) bp_release(t->bp, rf, BP_EXCL);
    free(cells);
    free(right);
    free(lefti);
    free(sep);
    return rc;
}

/* Pessimistic path: exclusive latches from the root down, kept to the end. */
static int writer_resolve(bt_wctx *w, bp_frame *f, unsigned idx, int exact, int *live);
static int make_room(bt_wctx *w, bp_frame *f, size_t need, int *live);
static int leaf_put(bt_wctx *w, pathent *path, int d, const newcell *nc, int fits_only, uint32_t **oldb, int *oldn);
static int put_pessimistic(bt_wctx *w, const newcell *nc, uint32_t **oldb, int *oldn) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    pathent path[MAX_DEPTH];
    int d = 0, rc;
    rc = bp_get(t->bp, ROOT_BLOCK, BP_EXCL, &path[0].f);
    if (rc) return rc;
    /* The page code first, as in bt_descend: a flipped header bit is the
     * codes' to name. */
    if ((rc = kv_page(t, path[0].f)) || (rc = bt_check_root(t, path[0].f))) {
        bp_release(t->bp, path[0].f, BP_EXCL);
        return rc;
    }
    while (ph_get_level(path[d].f->data) > 0) {
        int slot;
        uint32_t blk = atomic_load(&path[d].f->block);
        int level = ph_get_level(path[d].f->data);
        uint32_t child = bt_child_for(path[d].f->data, o->key, o->klen, BT_GE, &slot);
        unsigned n = ph_get_nslots(path[d].f->data);
        /* KV1, KV2: the separator chosen and the next prove the child followed
         * (the search ran on unverified bytes). */
        if ((rc = kv_entry(t, path[d].f, slot)) || (slot + 1 < (int)n && (rc = kv_entry(t, path[d].f, slot + 1))))
            goto out;
        if ((rc = bt_check_child_ptr(t, blk, child, slot))) goto out;
        for (int i = 0; i < d; i++) /* every ancestor is latched: a cycle would wait on itself */
            if (atomic_load(&path[i].f->block) == child) {
                rc = corrupt(t, ENG_LAYER_STRUCTURE, blk, slot, 0, child, "child pointer names an ancestor (a cycle)");
                goto out;
            }
        if (d + 1 >= MAX_DEPTH) {
            rc = corrupt(t, ENG_LAYER_STRUCTURE, blk, -1, MAX_DEPTH, d, "tree too deep");
            goto out;
        }
        rc = bp_get(t->bp, child, BP_EXCL, &path[d + 1].f);
        if (rc) goto out;
        d++;
        if ((rc = kv_page(t, path[d].f)) || (rc = bt_check_child_page(t, path[d].f, blk, level - 1))) {
            bp_release(t->bp, path[d].f, BP_EXCL);
            d--;
            goto out;
        }
    }
    rc = leaf_put(w, path, d, nc, 0, oldb, oldn);
out:
    bt_fail_op(w, rc);
    for (int i = d; i >= 0; i--) bp_release(t->bp, path[i].f, BP_EXCL);
    return rc;
}

/* Collect (and so validate) the old chain of a cell before anything
 * changes, so a broken chain fails the write cleanly. */
static int old_chain(bt_tree *t, uint32_t leaf, int slot, uint32_t first, uint32_t vlen, uint32_t **blocks, int *n) {
    *n = ovfl_pages(t, vlen);
    *blocks = malloc(sizeof(uint32_t) * (size_t)(*n ? *n : 1));
    if (!*blocks) return ENG_NOMEM;
    int rc = bt_ovfl_walk(t, leaf, slot, first, vlen, NULL, *blocks);
    if (rc) {
        free(*blocks);
        *blocks = NULL;
    }
    return rc;
}

/* The writer's view of the versions of the op's key (leaf F latched
 * exclusively, IDX the first slot >= key): *live gets the slot of the
 * version a put replaces or a delete ends, -1 if the key is absent.  The
 * newest version not written by an aborted transaction decides (T1: every
 * other writer is finished; the batch's own id counts as committed). */
static int writer_resolve(bt_wctx *w, bp_frame *f, unsigned idx, int exact, int *live) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    const uint64_t me = w->batch->seq;
    const uint8_t *p = f->data;
    unsigned n = ph_get_nslots(p);
    *live = -1;
    for (unsigned i = idx; exact && i < n; i++) {
        leaf_cell c;
        page_leaf_cell(p, i, &c);
        if (!bt_cell_in_page(t, p, &c))
            return corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&f->block), (int32_t)i, 0, 0,
                           "cell runs off its page in the cache");
        if (key_cmp(c.key, c.klen, o->key, o->klen) != 0) break;
#ifdef ENG_BROKEN_WRITER_RESOLVE_STOPS_AT_ABORTED
        /* planted bug (tests/mutants.txt): the newest version decides even
         * when its batch aborted (or was cut by a crash): the key reads as
         * absent to the writer, so a delete answers NOTFOUND and leaves the
         * key, and a put inserts beside the live version without ending it
         * (two live versions; once the newer is deleted and vacuumed, the
         * older one comes back). */
        if (c.xmin != me && !xid_committed(t, c.xmin)) break; /* aborted */
#else
        if (c.xmin != me && !xid_committed(t, c.xmin)) continue; /* aborted */
#endif
#ifdef ENG_BROKEN_REINSERT_REVIVES_DELETED
        /* planted bug (tests/mutants.txt): only the batch's own delete is
         * taken as ending the version, not a committed one: a put after a
         * delete re-stamps the deleted version's xmax with its own id, and
         * a snapshot taken between the delete and the put sees the deleted
         * key again. */
        if (c.xmax == 0 || c.xmax != me) *live = (int)i;
#else
        if (c.xmax == 0 || (c.xmax != me && !xid_committed(t, c.xmax))) *live = (int)i;
#endif
        break;
    }
    return ENG_OK;
}

/* A version no snapshot can see: its writer aborted, or its deleter
 * committed at or below the horizon.  ME: the writer's own id (0: none). */
static int version_dead(const bt_tree *t, const leaf_cell *c, uint64_t horizon, uint64_t me) {
#ifdef ENG_BROKEN_BATCH_PRUNES_OWN_INSERT
    /* planted bug (tests/mutants.txt): the writer's own id is not excepted
     * from "not committed, so aborted": a put that must make room in a
     * leaf prunes the versions its own batch inserted there before it. */
    if (c->xmin != 0 && !xid_committed(t, c->xmin)) return 1;
#else
    if (c->xmin != 0 && c->xmin != me && !xid_committed(t, c->xmin)) return 1;
#endif
    return c->xmax != 0 && c->xmax != me && c->xmax <= horizon && xid_committed(t, c->xmax);
}

/* Remove dead versions of leaf F (latched exclusively) and free their
 * overflow chains; *live (a slot, or -1) is kept pointing at its version.
 * KEEP_NEED: stop once NEED bytes are reclaimable (0: remove all). */
static int prune_range(bt_wctx *w, bp_frame *f, uint64_t horizon, uint64_t me, size_t need, int *live, int lo, int hi,
                       uint64_t *removed, uint64_t *freed) {
    bt_tree *t = w->t;
    uint8_t *p = f->data;
    uint32_t blk = atomic_load(&f->block);
    int rc = ENG_OK;
    uint32_t *chains = NULL;
    size_t nch = 0, cap = 0;
    for (int i = hi - 1; i >= lo && rc == ENG_OK; i--) {
        if (need && page_reclaimable(p) >= need) break;
        leaf_cell c;
        page_leaf_cell(p, (unsigned)i, &c);
        if (!bt_cell_in_page(t, p, &c)) {
            rc = corrupt(t, ENG_LAYER_STRUCTURE, blk, i, 0, 0, "cell runs off its page in the cache");
            break;
        }
        if (i == (live ? *live : -1) || !version_dead(t, &c, horizon, me)) continue;
        if (c.cflags & CELL_OVERFLOW) {
            uint32_t *b = NULL;
            int nb = 0;
            if ((rc = old_chain(t, blk, i, c.ovfl, c.vlen, &b, &nb))) break;
            if (nch + (size_t)nb > cap) {
                cap = (nch + (size_t)nb) * 2;
                uint32_t *x = realloc(chains, cap * sizeof *x);
                if (!x) {
                    free(b);
                    rc = ENG_NOMEM;
                    break;
                }
                chains = x;
            }
            memcpy(chains + nch, b, (size_t)nb * sizeof *b);
            nch += (size_t)nb;
            free(b);
        }
        size_t at;
        if ((rc = bt_act_begin(w, f, 0, &at))) break;
        pa_put_remove(&w->rec, blk, (unsigned)i);
        if ((rc = bt_act_apply(w, f, at))) break;
#ifndef ENG_BROKEN_PRUNE_KEEPS_LIVE_INDEX
        /* planted bug (tests/mutants.txt): the #ifndef leaves this out, so
         * removing a dead version above the live one (an aborted batch's)
         * does not move the live slot down with the slots after it: the
         * writer then ends the version after the live one, an older version
         * of the key or the next key's, and the live one stays. */
        if (live && *live > i) (*live)--;
#endif
        if (removed) (*removed)++;
        atomic_fetch_add_explicit(&t->pruned, 1, memory_order_relaxed);
    }
    if (rc == ENG_OK && nch) {
        rc = bt_free_pages(w, chains, (int)nch);
        if (freed) *freed += nch;
    }
    free(chains);
    return rc;
}

static int prune_leaf(bt_wctx *w, bp_frame *f, uint64_t horizon, uint64_t me, size_t need, int *live, uint64_t *removed,
                      uint64_t *freed) {
    return prune_range(w, f, horizon, me, need, live, 0, ph_get_nslots(f->data), removed, freed);
}

/* Prune the dead versions of the op's key (slots from IDX while the key
 * matches): an update or delete reclaims what the previous ones left,
 * without waiting for vacuum. */
static int prune_key(bt_wctx *w, bp_frame *f, unsigned idx, int *live) {
    const pa_op *o = &w->batch->ops[w->op];
    const uint8_t *p = f->data;
    unsigned n = ph_get_nslots(p), e = idx;
    for (; e < n; e++) {
        leaf_cell c;
        page_leaf_cell(p, e, &c);
        if (!bt_cell_in_page(w->t, p, &c) || key_cmp(c.key, c.klen, o->key, o->klen)) break;
    }
    if (e <= idx + (live && *live >= 0 ? 1u : 0u)) return ENG_OK; /* nothing older to drop */
    uint64_t h = txn_horizon(w->t->cfg.txn, NULL, NULL);
    return prune_range(w, f, h, w->batch->seq, 0, live, (int)idx, (int)e, NULL, NULL);
}

static int make_room(bt_wctx *w, bp_frame *f, size_t need, int *live) {
    uint64_t h = txn_horizon(w->t->cfg.txn, NULL, NULL);
    return prune_leaf(w, f, h, w->batch->seq, need, live, NULL, NULL);
}

static int do_put(bt_wctx *w) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    newcell nc;
    int rc;
    nc.from_op = 1;
    nc.ovfl = 0;
    bp_frame *f;
    int exact = 0, live;
    unsigned idx;
    if (leaf_cell_size(o->klen, o->vlen, 0) > t->max_inline) {
        /* Free the key's dead chains before writing a new one, so an
         * update of a large value reuses the pages of the one before. */
        if ((rc = bt_descend(t, o->key, o->klen, BT_GE, BP_EXCL, &f, NULL, NULL))) return rc;
        idx = page_search(f->data, o->key, o->klen, &exact);
        if ((rc = writer_resolve(w, f, idx, exact, &live)) == ENG_OK && exact) rc = prune_key(w, f, idx, &live);
        bt_fail_op(w, rc);
        bp_release(t->bp, f, BP_EXCL);
        if (rc) return rc;
        if ((rc = bt_ovfl_write(w, &nc.ovfl))) return rc;
    }
    nc.size = pa_op_cell(w->batch, w->op, nc.ovfl, nc.bytes, sizeof nc.bytes);
    if (!nc.size) return ENG_INVALID;

    /* Optimistic: shared latches down, exclusive leaf. */
    rc = bt_descend(t, o->key, o->klen, BT_GE, BP_EXCL, &f, NULL, NULL);
    if (rc) return rc;
    uint32_t *oldb = NULL;
    int oldn = 0;
    pathent path1[1] = {{f}};
    rc = leaf_put(w, path1, 0, &nc, 1, &oldb, &oldn);
    if (rc != 1) bt_fail_op(w, rc);
    bp_release(t->bp, f, BP_EXCL);
    if (rc == 1) rc = put_pessimistic(w, &nc, &oldb, &oldn);
    /* The batch's own earlier version of the key was replaced: nobody
     * could ever see it, so its chain is free at once. */
    if (rc == ENG_OK && oldn) rc = bt_free_pages(w, oldb, oldn);
    free(oldb);
    return rc;
}

/* Place the op's new version at leaf path[d] (latched exclusively): end
 * the live version (xmax), or replace the batch's own earlier version of
 * the key (versions of a key have distinct ids), making room by pruning
 * first.  FITS_ONLY: return 1 when it would need a split (the caller
 * retries with the whole path latched).  OLDB and OLDN get the overflow
 * chain of a replaced own version. */
static int leaf_put(bt_wctx *w, pathent *path, int d, const newcell *nc, int fits_only, uint32_t **oldb, int *oldn) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    bp_frame *f = path[d].f;
    const uint64_t me = w->batch->seq;
    int exact = 0, live, rc;
    if ((rc = kv_all(t, f))) return rc; /* the writer decides from its entries */
    unsigned idx = page_search(f->data, o->key, o->klen, &exact);
    if ((rc = writer_resolve(w, f, idx, exact, &live))) return rc;
    if (exact && (rc = prune_key(w, f, idx, &live))) return rc;
#ifdef ENG_BROKEN_STALE_VALUE
    if (live >= 0) {
        leaf_cell c;
        page_leaf_cell(f->data, (unsigned)live, &c);
        if (!(c.cflags & CELL_OVERFLOW) && c.vlen <= sizeof stale_val) {
            pthread_mutex_lock(&stale_mu);
            memcpy(stale_key, c.key, c.klen);
            stale_klen = c.klen;
            memcpy(stale_val, c.val, c.vlen);
            stale_vlen = c.vlen;
            pthread_mutex_unlock(&stale_mu);
        }
    }
#endif
    size_t need = nc->size + 2;
    for (int pass = 0; pass < 2; pass++) {
        idx = page_search(f->data, o->key, o->klen, &exact);
        int own = -1;
        size_t ownsz = 0;
        leaf_cell oc;
        if (exact) {
            page_leaf_cell(f->data, idx, &oc);
            if (oc.xmin == me) {
                own = (int)idx;
                ownsz = oc.size;
            }
        }
        size_t have = page_reclaimable(f->data) + (own >= 0 ? ownsz + 2 : 0);
        if (have < need && pass == 0) {
            if ((rc = make_room(w, f, need - (own >= 0 ? ownsz + 2 : 0), &live))) return rc;
            continue;
        }
        if (have < need && fits_only) return 1;
        size_t at;
        if (own >= 0) {
            if ((oc.cflags & CELL_OVERFLOW) &&
                (rc = old_chain(t, atomic_load(&f->block), own, oc.ovfl, oc.vlen, oldb, oldn)))
                return rc;
            return insert_at(w, path, d, (unsigned)own, 1, nc);
        }
        if (live >= 0) {
            if ((rc = bt_act_begin(w, f, 0, &at))) return rc;
            pa_put_setxmax(&w->rec, atomic_load(&f->block), (unsigned)live, me);
            if ((rc = bt_act_apply(w, f, at))) return rc;
        }
        idx = page_search(f->data, o->key, o->klen, &exact);
        return insert_at(w, path, d, idx, 0, nc);
    }
    return ENG_OK;
}

static int do_delete(bt_wctx *w) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    bp_frame *f;
    int rc = bt_descend(t, o->key, o->klen, BT_GE, BP_EXCL, &f, NULL, NULL);
    if (rc) return rc;
    if ((rc = kv_all(t, f))) {
        bp_release(t->bp, f, BP_EXCL);
        return rc;
    }
    int exact = 0, live;
    unsigned idx = page_search(f->data, o->key, o->klen, &exact);
    if ((rc = writer_resolve(w, f, idx, exact, &live)) == ENG_OK && exact) rc = prune_key(w, f, idx, &live);
    if (rc == ENG_OK) {
        if (live < 0) {
            rc = ENG_NOTFOUND;
        } else {
            /* The version stays for older snapshots; vacuum or a later
             * prune removes it and frees its overflow chain. */
            size_t at;
            if ((rc = bt_act_begin(w, f, 0, &at)) == ENG_OK) {
                pa_put_setxmax(&w->rec, atomic_load(&f->block), (unsigned)live, w->batch->seq);
                rc = bt_act_apply(w, f, at);
            }
        }
    }
    bt_fail_op(w, rc);
    bp_release(t->bp, f, BP_EXCL);
    return rc;
}

int bt_apply_op(bt_tree *t, const pa_batch *batch, uint32_t op, uint64_t batch_lsn, int *changed) {
    *changed = 0;
    if (!batch || op >= batch->nops) return ENG_INVALID;
    /* T1: the writer's id is the only unfinished one, above every finished */
    assert(batch->seq > txn_last_committed(t->cfg.txn));
    bt_wctx w;
    int rc = bt_wctx_init(&w, t, batch, op, batch_lsn);
    if (rc) return rc;
    rc = batch->ops[op].kind == BOP_PUT ? do_put(&w) : do_delete(&w);
    int ok = rc == ENG_OK || rc == ENG_NOTFOUND;
    *changed = w.rec.len > PA_REC_HDR || w.ntouched > 0;
    int crc = bt_wctx_commit(&w, ok);
    return crc ? crc : rc;
}

/* ---- vacuum ---- */

int bt_vacuum_leaf(bt_tree *t, const bt_cursor *at_key, uint64_t horizon, uint64_t freeze_below, bt_cursor *next,
                   bt_vac_stats *st, int *changed) {
    *changed = 0;
    next->set = 0;
    /* T4: vacuum's horizon is at most the last commit, and it freezes
     * only below the horizon */
    assert(horizon <= txn_last_committed(t->cfg.txn) && freeze_below <= horizon + 1);
    fence hi;
    bp_frame *f;
    int rc = bt_descend(t, at_key && at_key->set ? at_key->key : NULL, at_key && at_key->set ? at_key->len : 0, BT_GE,
                        BP_EXCL, &f, &hi, NULL);
    if (rc) return rc;
    if (hi.set) {
        memcpy(next->key, hi.key, hi.len);
        next->len = hi.len;
        next->set = 1;
    }
    if ((rc = kv_all(t, f))) {
        bp_release(t->bp, f, BP_EXCL);
        return rc;
    }
    bt_wctx w;
    if ((rc = bt_wctx_init(&w, t, NULL, PA_OP_MAINT, 0))) {
        bp_release(t->bp, f, BP_EXCL);
        return rc;
    }
    st->leaves++;
    rc = prune_leaf(&w, f, horizon, 0, 0, NULL, &st->removed, &st->freed);
    uint8_t *p = f->data;
    uint32_t blk = atomic_load(&f->block);
    unsigned n = ph_get_nslots(p);
    for (unsigned i = 0; i < n && rc == ENG_OK; i++) {
        leaf_cell c;
        page_leaf_cell(p, i, &c);
        st->versions++;
        if (c.xmin != 0 && c.xmin < freeze_below && c.xmin <= horizon && xid_committed(t, c.xmin)) {
            size_t at;
            if ((rc = bt_act_begin(&w, f, 0, &at))) break;
            pa_put_freeze(&w.rec, blk, i);
            if ((rc = bt_act_apply(&w, f, at))) break;
            st->frozen++;
            page_leaf_cell(p, i, &c);
        }
        /* Hints: what every snapshot would learn (horizon bounds it). */
        uint64_t before = atomic_load(&t->hints_set);
        if (bt_version_state(t, f, i, &c, horizon, BT_VS_LEARN) < 0) {
            rc = ENG_CORRUPTION;
            break;
        }
        st->hinted += atomic_load(&t->hints_set) - before;
    }
    bt_fail_op(&w, rc);
    bp_release(t->bp, f, BP_EXCL);
    *changed = w.rec.len > PA_REC_HDR || w.ntouched > 0;
    int crc = bt_wctx_commit(&w, rc == ENG_OK);
    return crc ? crc : rc;
}
