/*
 * btree_verify.c -- verify of the whole data file and tree (bt_verify):
 * every block's own bytes, then the tree (shape, order, fences, overflow
 * chains, leaf links, versions against the commit log), the commit log's
 * pages, the free list, and blocks nothing refers to.  Unchecked pages
 * follow rules BV1-BV3 below; the blocks of a data file cut short of the
 * high-water mark are unchecked pages, reported once for the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree_int.h"

/* What references a block (a free list's trunk pages are USE_FREE, the
 * blocks they list USE_FREED: only the first kind refers to others). */
enum { USE_NONE = 0, USE_META, USE_TREE, USE_OVFL, USE_FREE, USE_CLOG, USE_FREED };

/* Unchecked pages.  A page whose own bytes failed (checksum, header, zero,
 * a per-entry code) or could not be read is reported once, for itself,
 * and then treated as unknown: no check that needs its contents runs, and
 * no check that pairs it with another page blames the other one.
 *   BV1  a subtree that is not walked (its page unchecked, or not a node
 *        of its place) leaves the leaf chain unknown across it: the next
 *        leaf's predecessor is not compared (its link may rightly name a
 *        leaf the walk skipped);
 *   BV2  an unchecked page that refers to others (a tree node, an overflow
 *        page, a free-list trunk) hides what it refers to: the
 *        unreachable-block check is skipped, not run to blame those blocks;
 *   BV3  the unchecked pages are listed (eng_verify_info), so a verify with
 *        them is never read as a complete check of the rest. */
typedef struct vstate {
    bt_tree *t;
    const eng_reporter *rep;
    uint64_t problems;
    uint32_t nblocks;
    uint8_t *use;       /* per block: what references it */
    uint8_t *bad;       /* per block: failed its own checks or could not be
                       * read (unchecked) */
    uint32_t prev_leaf; /* UINT32_MAX: none, or unknown (BV1) */
    int leaves_seen;
    int refs_unknown; /* BV2 */
    int err;          /* first failure to read a page (not corruption): verify
                       * could not finish and must say so, not pass */
} vstate;

/* A page of the walk: its own damage was reported (step 1, or by the pool
 * now); any other failure stops the verify with that status.  Either way
 * the page is unchecked from here on. */
static int vget(vstate *v, uint32_t blk, bp_frame **f) {
    int rc = bp_get(v->t->bp, blk, BP_SHARED, f);
    if (rc && rc != ENG_CORRUPTION && !v->err) v->err = rc;
    if (rc && blk < v->nblocks) {
        v->bad[blk] = 1;
        if (v->use[blk] != USE_CLOG && v->use[blk] != USE_FREED) v->refs_unknown = 1; /* BV2 */
    }
    return rc;
}

/* vget, then the frame's page code (KV3: a header flipped in the cache is
 * the codes' to name, kv_protection, before any check reads it). */
static int vget_proven(vstate *v, uint32_t blk, bp_frame **f) {
    int rc = vget(v, blk, f);
    if (rc) return rc;
    if ((rc = kv_page(v->t, *f)) != ENG_OK) {
        bp_release(v->t->bp, *f, BP_SHARED);
        *f = NULL;
        v->problems++;
        v->bad[blk] = 1;
    }
    return rc;
}

static void vreport(vstate *v, int layer, uint32_t block, int32_t entry, uint64_t exp, uint64_t found, const char *fmt,
                    const char *arg) {
    char detail[160];
    snprintf(detail, sizeof detail, fmt, arg ? arg : "");
    eng_report(v->rep, layer, v->t->cfg.file, block, (int64_t)block * v->t->ps, entry, exp, found, "%s", detail);
    v->problems++;
}

/* Claim block B for USE; a second claim is a shared or cyclic pointer. */
static int claim(vstate *v, uint32_t b, int use, uint32_t from) {
    if (b >= v->nblocks || b == META_BLOCK) {
        vreport(v, ENG_LAYER_STRUCTURE, from, -1, v->nblocks, b, "%spointer out of range", "");
        return 0;
    }
    if (v->use[b]) {
        vreport(v, ENG_LAYER_STRUCTURE, b, -1, v->use[b], (uint64_t)use,
                "%sblock referenced twice (shared or cyclic pointer)", "");
        return 0;
    }
    v->use[b] = (uint8_t)use;
    if (v->bad[b] && use != USE_CLOG && use != USE_FREED) v->refs_unknown = 1; /* BV2 */
    return !v->bad[b];
}

static void verify_chain(vstate *v, uint32_t leaf, int slot, uint32_t first, uint32_t vlen) {
    bt_tree *t = v->t;
    uint32_t blk = first, done = 0;
    int npages = ovfl_pages(t, vlen);
    for (int i = 0; i < npages; i++) {
        if (!claim(v, blk, USE_OVFL, leaf)) return;
        bp_frame *f;
        if (vget(v, blk, &f)) return;
        const uint8_t *p = f->data;
        uint32_t want = vlen - done < t->ovfl_cap ? vlen - done : (uint32_t)t->ovfl_cap;
        int ok = ph_get_type(p) == PAGE_OVERFLOW && ph_get_aux(p) == want && (i + 1 < npages) == (ph_get_next(p) != 0);
        uint32_t next = ph_get_next(p), got = ph_get_aux(p);
        bp_release(t->bp, f, BP_SHARED);
        if (!ok) {
            vreport(v, ENG_LAYER_OVERFLOW, blk, slot, want, got,
                    "%soverflow chain page has the wrong type, length or link", "");
            return;
        }
        done += want;
        blk = next;
    }
}

/* A private copy of node BLK, claimed for the tree by PARENT and proven by
 * its codes (kv_all), or NULL: the node is not walked, and unless verify
 * ran out of memory the leaf chain is unknown across it (BV1). */
static uint8_t *vnode_load(vstate *v, uint32_t blk, uint32_t parent) {
    bt_tree *t = v->t;
    if (!claim(v, blk, USE_TREE, parent)) {
        v->prev_leaf = UINT32_MAX;
        return NULL;
    }
    bp_frame *f;
    if (vget(v, blk, &f)) {
        v->prev_leaf = UINT32_MAX;
        return NULL;
    }
    if (kv_all(t, f)) {
        bp_release(t->bp, f, BP_SHARED);
        v->problems++;
        v->bad[blk] = 1;
        v->refs_unknown = 1;
        v->prev_leaf = UINT32_MAX;
        return NULL;
    }
    uint8_t *p = malloc(t->ps);
    if (!p) {
        bp_release(t->bp, f, BP_SHARED);
        if (!v->err) v->err = ENG_NOMEM;
        return NULL;
    }
    memcpy(p, f->data, t->ps);
    bp_release(t->bp, f, BP_SHARED);
    return p;
}

/* Every key of node P (at BLK, LEVEL) inside [lo, hi): the first one
 * outside is reported, once for the node. */
static void vnode_keys(vstate *v, const uint8_t *p, uint32_t blk, int level, const uint8_t *lo, size_t lol,
                       const uint8_t *hi, size_t hil) {
    unsigned n = ph_get_nslots(p);
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *k;
        size_t kl;
        if (level == 0) {
            leaf_cell c;
            page_leaf_cell(p, i, &c);
            k = c.key;
            kl = c.klen;
        } else {
            internal_cell c;
            page_internal_cell(p, i, &c);
            k = c.key;
            kl = c.klen;
        }
        if ((lo && key_cmp(k, kl, lo, lol) < 0) || (hi && key_cmp(k, kl, hi, hil) >= 0)) {
            vreport(v, ENG_LAYER_STRUCTURE, blk, (int32_t)i, 0, 0, "%skey outside the range its parent gives", "");
            break;
        }
    }
}

/* The versions of leaf P (at BLK) against the commit log (amcheck's heapam
 * checks), and their values: inline sizes and overflow chains. */
static void vleaf_versions(vstate *v, const uint8_t *p, uint32_t blk) {
    bt_tree *t = v->t;
    unsigned n = ph_get_nslots(p);
    const uint64_t lc = txn_last_committed(t->cfg.txn);
    int live_in_group = 0;
    for (unsigned i = 0; i < n; i++) {
        leaf_cell c;
        page_leaf_cell(p, i, &c);
        unsigned h = page_hint(p, i);
        int xc = xid_committed(t, c.xmin);
        if (i > 0) {
            leaf_cell pc;
            page_leaf_cell(p, i - 1, &pc);
            if (key_cmp(pc.key, pc.klen, c.key, c.klen)) live_in_group = 0;
        }
        if (c.xmin != 0 && c.xmax != 0 && c.xmax < c.xmin)
            vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, c.xmin, c.xmax,
                    "%sversion deleted before it was written (xmax < xmin)", "");
        if (c.xmin != 0 && c.xmin <= lc && h != HINT_NONE && (h == HINT_XMIN_A) == xc)
            vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, xc, h, "%shint bits disagree with the commit log about xmin",
                    "");
        if (c.xmax != 0 && c.xmax <= lc && (h == HINT_XMAX_C || h == HINT_XMAX_A) &&
            (h == HINT_XMAX_C) != xid_committed(t, c.xmax))
            vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, xid_committed(t, c.xmax), h,
                    "%shint bits disagree with the commit log about xmax", "");
        if (xc && (c.xmax == 0 || !xid_committed(t, c.xmax)) && live_in_group++)
            vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, 1, (uint64_t)live_in_group,
                    "%smore than one live version of a key", "");
        if (c.cflags & CELL_OVERFLOW)
            verify_chain(v, blk, (int)i, c.ovfl, c.vlen);
        else if (c.vlen > t->max_inline)
            vreport(v, ENG_LAYER_STRUCTURE, blk, (int32_t)i, t->max_inline, c.vlen, "%sinline value too large", "");
    }
}

/* Leaf chain: leaf BLK must be the successor named by the last leaf
 * walked (unless the walk skipped something since: BV1). */
static void vleaf_link(vstate *v, uint32_t blk) {
    if (v->prev_leaf != UINT32_MAX && !v->err) {
        bp_frame *pf;
        if (!v->bad[v->prev_leaf] && vget(v, v->prev_leaf, &pf) == ENG_OK) {
            uint32_t nx = ph_get_next(pf->data);
            bp_release(v->t->bp, pf, BP_SHARED);
            if (nx != blk)
                vreport(v, ENG_LAYER_STRUCTURE, v->prev_leaf, -1, blk, nx, "%sleaf sibling link skips a leaf", "");
        }
    }
    v->prev_leaf = blk;
}

static void verify_node(vstate *v, uint32_t blk, int level, const uint8_t *lo, size_t lol, const uint8_t *hi,
                        size_t hil, uint32_t parent);

/* The children of internal node P (at BLK, LEVEL), left to right, each
 * with the fences its neighbouring keys give it. */
static void vnode_children(vstate *v, const uint8_t *p, uint32_t blk, int level, const uint8_t *lo, size_t lol,
                           const uint8_t *hi, size_t hil) {
    unsigned n = ph_get_nslots(p);
    uint32_t child = ph_get_aux(p);
    const uint8_t *clo = lo;
    size_t clol = lol;
    for (unsigned i = 0; i <= n; i++) {
        const uint8_t *chi = hi;
        size_t chil = hil;
        internal_cell c = {0};
        if (i < n) {
            page_internal_cell(p, i, &c);
            chi = c.key;
            chil = c.klen;
        }
        verify_node(v, child, level - 1, clo, clol, chi, chil, blk);
        if (i < n) {
            clo = c.key;
            clol = c.klen;
            child = c.child;
        }
    }
}

/* Check the subtree at BLK (LEVEL expected) whose keys lie in [lo, hi). */
static void verify_node(vstate *v, uint32_t blk, int level, const uint8_t *lo, size_t lol, const uint8_t *hi,
                        size_t hil, uint32_t parent) {
    uint8_t *p = vnode_load(v, blk, parent);
    if (!p) return;
    int want = level == 0 ? PAGE_LEAF : PAGE_INTERNAL;
    if (ph_get_type(p) != want || ph_get_level(p) != level) {
        vreport(v, ENG_LAYER_STRUCTURE, blk, -1, (uint64_t)want << 16 | (unsigned)level,
                (uint64_t)ph_get_type(p) << 16 | ph_get_level(p), "%spage has the wrong type or level for its place",
                "");
        free(p);
        v->refs_unknown = 1; /* its children, if it has any, are not followed */
        v->prev_leaf = UINT32_MAX;
        return;
    }
    vnode_keys(v, p, blk, level, lo, lol, hi, hil);
    if (level == 0) {
        v->leaves_seen++;
        vleaf_versions(v, p, blk);
        vleaf_link(v, blk);
    } else {
        vnode_children(v, p, blk, level, lo, lol, hi, hil);
    }
    free(p);
}

/* Steps 0 and 1, every block as stored (pg_checksums), each damaged one
 * reported and marked bad.  BUF holds a page.  Sets *MISSING to the
 * blocks a file cut short lost.  Returns ENG_OK, or the status of a block
 * that could not be read. */
static int verify_blocks(vstate *v, uint8_t *buf, uint64_t file_bytes, uint64_t hwm, uint64_t *missing) {
    bt_tree *t = v->t;
    /* 0. A data file cut short of the high-water mark lost blocks that
     * were written and synced: one report for the file (the zero-page
     * rule's layer: below the mark, a missing block reads as an all-zero
     * page), and its missing blocks unchecked and never read (one report
     * each would bury a single damage). */
    uint64_t whole = file_bytes / t->ps;
    if (whole < hwm) {
        eng_report(v->rep, ENG_LAYER_ZERO_PAGE, t->cfg.file, (int64_t)whole, (int64_t)(whole * t->ps), -1, hwm, whole,
                   "the data file is shorter than control says (%llu blocks, mark %llu)", (unsigned long long)whole,
                   (unsigned long long)hwm);
        v->problems++;
    }
    /* 1. Every block as stored (pg_checksums). */
    for (uint32_t b = 0; b < v->nblocks; b++) {
        if (b >= whole && b < hwm) {
            v->bad[b] = 1;
            (*missing)++;
            continue;
        }
        page_problem pr;
        int rc = bp_check_block(t->bp, b, buf, &pr);
        if (rc == ENG_CORRUPTION) {
            eng_report(v->rep, pr.layer, t->cfg.file, b, (int64_t)b * t->ps + (pr.offset >= 0 ? pr.offset : 0),
                       pr.entry, pr.expected, pr.found, "%s", pr.detail);
            v->problems++;
            v->bad[b] = 1;
        } else if (rc != ENG_OK) {
            return rc;
        }
    }
    return ENG_OK;
}

/* Step 2, the tree (amcheck): shape, order, fences, chains, leaf links,
 * from the root down, then the last leaf's link. */
static void verify_tree(vstate *v) {
    bt_tree *t = v->t;
    bp_frame *r;
    if (vget(v, ROOT_BLOCK, &r) != ENG_OK) return;
    int level = ph_get_level(r->data);
    bp_release(t->bp, r, BP_SHARED);
    verify_node(v, ROOT_BLOCK, level, NULL, 0, NULL, 0, META_BLOCK);
    if (v->prev_leaf != UINT32_MAX && !v->bad[v->prev_leaf] && !v->err) {
        bp_frame *lf;
        if (vget(v, v->prev_leaf, &lf) == ENG_OK) {
            uint32_t nx = ph_get_next(lf->data);
            bp_release(t->bp, lf, BP_SHARED);
            if (nx != 0)
                vreport(v, ENG_LAYER_STRUCTURE, v->prev_leaf, -1, 0, nx, "%slast leaf has a right sibling", "");
        }
    }
}

/* The commit log's pages, CL[0..N): each the page its directory names. */
static void verify_clog_pages(vstate *v, const uint32_t *cl, uint32_t n) {
    for (uint32_t i = 0; cl && i < n; i++) {
        if (!claim(v, cl[i], USE_CLOG, META_BLOCK)) continue;
        bp_frame *f;
        if (vget_proven(v, cl[i], &f)) continue;
        int ok = ph_get_type(f->data) == PAGE_CLOG && ph_get_aux(f->data) == i;
        bp_release(v->t->bp, f, BP_SHARED);
        if (!ok)
            vreport(v, ENG_LAYER_VERSION, cl[i], -1, i, 0,
                    "%scommit-log directory names a page that is not that commit-log page", "");
    }
}

/* The free list from its first trunk FIRST: trunks and the blocks they
 * list, until its end or the first trunk that fails. */
static void verify_free_list(vstate *v, uint32_t first) {
    bt_tree *t = v->t;
    for (uint32_t b = first; b;) {
        if (!claim(v, b, USE_FREE, META_BLOCK)) break;
        bp_frame *f;
        if (vget_proven(v, b, &f)) {
            v->refs_unknown = 1; /* the rest of the list is unknown (BV2) */
            break;
        }
        int ok = ph_get_type(f->data) == PAGE_FREE;
        /* The count is data (w = 0 leaves a cached flip uncoded):
         * never read entries past the page. */
        uint32_t next = ph_get_next(f->data), got = ok ? ph_get_aux(f->data) : 0;
        uint32_t cnt = got <= FREE_TRUNK_CAP(t->ps) ? got : 0;
        uint32_t *ents = malloc(sizeof(uint32_t) * (cnt ? cnt : 1));
        for (uint32_t i = 0; ents && i < cnt; i++) ents[i] = rd32(f->data + PAGE_HDR + 4u * i);
        bp_release(t->bp, f, BP_SHARED);
        if (!ok || cnt != got) {
            free(ents);
            if (!ok) {
                vreport(v, ENG_LAYER_STRUCTURE, b, -1, PAGE_FREE, 0, "%sfree list reaches a page that is not a trunk",
                        "");
            } else {
                vreport(v, ENG_LAYER_STRUCTURE, b, -1, FREE_TRUNK_CAP(t->ps), got,
                        "%sfree-list trunk count beyond its room", "");
                v->refs_unknown = 1; /* what it lists is unknown (BV2) */
            }
            break;
        }
        /* Listed blocks keep stale contents: only their checksums
         * (step 1) and their single ownership are checked. */
        for (uint32_t i = 0; ents && i < cnt; i++) claim(v, ents[i], USE_FREED, b);
        free(ents);
        b = next;
    }
}

/* Step 3, what the meta page refers to besides the tree: the commit log's
 * pages and the free list. */
static void verify_meta_lists(vstate *v) {
    bt_tree *t = v->t;
    bp_frame *m;
    if (vget_proven(v, META_BLOCK, &m) != ENG_OK) return;
    meta_fields mf;
    meta_read(m->data, &mf);
    /* Step 1 read a clean meta page from the disk, not this frame:
     * its count is data (w = 0 leaves a cached flip uncoded), and
     * the directory must stay inside the page. */
    if (mf.clog_pages > META_CLOG_CAP(t->ps)) {
        vreport(v, ENG_LAYER_STRUCTURE, META_BLOCK, -1, META_CLOG_CAP(t->ps), mf.clog_pages,
                "%smeta commit-log directory claims more pages than it has room for", "");
        mf.clog_pages = 0;
        v->refs_unknown = 1; /* the commit log's pages are not claimed: no leak check (BV2) */
    }
    uint32_t *cl = calloc(mf.clog_pages + 1u, sizeof *cl);
    for (uint32_t i = 0; cl && i < mf.clog_pages; i++) cl[i] = meta_clog_block(m->data, i);
    bp_release(t->bp, m, BP_SHARED);
    verify_clog_pages(v, cl, mf.clog_pages);
    free(cl);
    verify_free_list(v, mf.freelist);
}

/* Step 4, leaks: allocated blocks nothing refers to (only after a
 * complete walk: an unchecked page hides what it refers to, BV2). */
static void verify_leaks(vstate *v, eng_verify_info *info) {
    if (v->err || v->refs_unknown) {
        if (info) info->leaks_skipped = 1;
    } else {
        for (uint32_t b = 0; b < v->nblocks; b++)
            if (!v->use[b] && !v->bad[b])
                vreport(v, ENG_LAYER_STRUCTURE, b, -1, 0, 0, "%sblock is allocated but unreachable", "");
    }
}

/* What INFO says of the verify: the blocks scanned and the unchecked
 * ones (BV3). */
static void verify_info(const vstate *v, eng_verify_info *info, uint64_t missing) {
    if (!info) return;
    info->blocks_scanned = v->nblocks - missing;
    for (uint32_t b = 0; b < v->nblocks; b++)
        if (v->bad[b]) {
            if (info->unchecked < ENG_VERIFY_UNCHECKED_LIST) info->unchecked_blocks[info->unchecked] = b;
            info->unchecked++;
        }
}

int bt_verify(bt_tree *t, uint64_t file_bytes, uint64_t hwm, const eng_reporter *rep, uint64_t *problems,
              eng_verify_info *info) {
    vstate v = {.t = t, .rep = rep, .nblocks = atomic_load(&t->nblocks), .prev_leaf = UINT32_MAX};
    v.use = calloc(v.nblocks ? v.nblocks : 1, 1);
    v.bad = calloc(v.nblocks ? v.nblocks : 1, 1);
    uint8_t *buf = malloc(t->ps);
    if (!v.use || !v.bad || !buf) {
        free(v.use);
        free(v.bad);
        free(buf);
        return ENG_NOMEM;
    }
    uint64_t missing = 0;
    int rc = verify_blocks(&v, buf, file_bytes, hwm, &missing);
    if (rc != ENG_OK) {
        free(v.use);
        free(v.bad);
        free(buf);
        return rc;
    }
    v.use[META_BLOCK] = USE_META;
    if (!v.bad[META_BLOCK] && !v.bad[ROOT_BLOCK]) {
        verify_tree(&v);
        verify_meta_lists(&v);
        verify_leaks(&v, info);
    } else if (info) {
        info->tree_skipped = 1;
        info->leaks_skipped = 1;
    }
    verify_info(&v, info, missing);
    free(v.use);
    free(v.bad);
    free(buf);
    *problems = v.problems;
    if (v.err) return v.err;
    return v.problems ? ENG_CORRUPTION : ENG_OK;
}
