/*
 * btree.c -- B+tree (shape, merge policy and latching in btree.h): create
 * and open, versions and their visibility (hint bits), descent, reads and
 * iteration.  The writer's side, allocation and overflow chains, the
 * commit log and verify are the other btree_*.c files (btree_int.h).
 *
 * Every page reaching this file passed page_verify when it was loaded, so
 * cells are well formed; what can still be wrong across pages (a child of
 * the wrong level or type, a pointer past the end, a broken overflow
 * chain) is checked here and reported as structure / overflow corruption.
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "btree_int.h"

void bt_version_stats(bt_tree *t, uint64_t *hints_set, uint64_t *pruned) {
    *hints_set = atomic_load(&t->hints_set);
    *pruned = atomic_load(&t->pruned);
}

void bt_image_stats(bt_tree *t, uint64_t *n, uint64_t *bytes, uint64_t *raw) {
    *n = atomic_load(&t->images);
    *bytes = atomic_load(&t->image_bytes);
    *raw = atomic_load(&t->image_raw_bytes);
}

uint64_t bt_overflow_pages(bt_tree *t) { return atomic_load(&t->ovfl_written); }

/* ---- creation and meta ---- */

int bt_create(bp_pool *bp, uint32_t page_size) {
    bp_frame *m, *r;
    int rc = bp_new(bp, META_BLOCK, &m);
    if (rc) return rc;
    page_init(m->data, page_size, META_BLOCK, PAGE_META, 0);
    meta_fields mf = {.magic = META_MAGIC, .root = ROOT_BLOCK, .nblocks = 2, .freelist = 0, .height = 1};
    meta_write(m->data, &mf);
    bp_kv_update(bp, m);
    bp_release(bp, m, BP_EXCL);
    rc = bp_new(bp, ROOT_BLOCK, &r);
    if (rc) return rc;
    page_init(r->data, page_size, ROOT_BLOCK, PAGE_LEAF, 0);
    bp_kv_update(bp, r);
    bp_release(bp, r, BP_EXCL);
    return ENG_OK;
}

int bt_open(const bt_config *cfg, bt_tree **out) {
    *out = NULL;
    bt_tree *t = calloc(1, sizeof *t);
    if (!t) return ENG_NOMEM;
    t->cfg = *cfg;
    t->bp = cfg->bp;
    t->ps = cfg->page_size;
    t->max_inline = (t->ps - PAGE_HDR) / 4 - 2;
    t->kvw = bp_kv_width(cfg->bp);
    t->ovfl_cap = t->ps - PAGE_HDR;
    bp_frame *m;
    int rc = bp_get(t->bp, META_BLOCK, BP_SHARED, &m);
    if (rc) {
        free(t);
        return rc;
    }
    meta_fields mf;
    meta_read(m->data, &mf);
    int type = ph_get_type(m->data);
    bp_release(t->bp, m, BP_SHARED);
    if (type != PAGE_META) {
        rc = corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, PAGE_META, (uint64_t)type, "block 0 is not the meta page");
    } else if (mf.root != ROOT_BLOCK) {
        rc = corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, ROOT_BLOCK, mf.root,
                     "meta page names a root other than block 1");
    } else if (mf.nblocks > cfg->file_blocks && mf.nblocks > cfg->hwm) {
        /* Allocated blocks are written before a meta page that counts them
         * can be: a count past both the file's end and the high-water
         * mark is damage, and trusting it would send verify across
         * billions of blocks.  (A file cut short below the high-water mark
         * opens; each missing block reports as a zero page when read.) */
        uint64_t end = cfg->file_blocks > cfg->hwm ? cfg->file_blocks : cfg->hwm;
        rc = eng_report(&t->cfg.reporter, ENG_LAYER_STRUCTURE, t->cfg.file, (int64_t)end, (int64_t)(end * t->ps), -1,
                        end, mf.nblocks,
                        "meta page counts %u blocks but the data file ends at block %llu "
                        "and the high-water mark is %llu",
                        mf.nblocks, (unsigned long long)cfg->file_blocks, (unsigned long long)cfg->hwm);
    }
#ifndef ENG_BROKEN_OPEN_TRUSTS_META_BELOW_HWM
    /* planted bug (tests/mutants.txt): the #ifndef leaves this check out,
     * so a meta page older than the last checkpoint (its write lost, and
     * no allocation since the redo point to redo) opens: it counts fewer
     * blocks than control says were synced, and the next allocations hand
     * out blocks the tree still uses (lost keys, wrong values). */
    else if (mf.nblocks < cfg->hwm) {
        rc = corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, cfg->hwm, mf.nblocks,
                     "meta page counts fewer blocks than the high-water mark");
    }
#endif
    if (rc) {
        free(t);
        return rc;
    }
    atomic_store(&t->nblocks, mf.nblocks);
    *out = t;
    return ENG_OK;
}

void bt_close(bt_tree *t) {
    if (!t) return;
    free(t->clog_dir);
    free(t);
}

/* ---- versions ---- */

/* Learn a hint (a cache of commit status): only statuses that can never
 * change, and a commit only once it is durable (a hint on disk must not
 * outlive a commit lost in a crash). */
static void hint_learn(bt_tree *t, bp_frame *f, unsigned slot, unsigned from, unsigned to) {
    if (t->cfg.no_hints) return;
    /* A lazy leaf (KV0) is proven by its page checksum until it is coded,
     * and a hint would change the bytes that prove it: code it first.  Its
     * only holder is the reader that loaded it, with the exclusive latch
     * (bufpool.h).  A checksum that fails now is reported; no hint then. */
    if (bp_frame_lazy(f) && (page_hint(f->data, slot) != from || bp_kv_code_lazy(t->bp, f) != ENG_OK)) return;
    assert(!bp_frame_lazy(f)); /* KV0: nothing writes into a lazy leaf, hints included */
    if (page_hint_cas(f->data, slot, from, to)) {
        bp_mark_hint_dirty(f);
        atomic_fetch_add_explicit(&t->hints_set, 1, memory_order_relaxed);
    }
}

/* State of the version at SLOT (cell C) of leaf F, latched, for a reader
 * at snapshot S (every id <= S is finished, T1).  HOW: BT_VS_LEARN sets
 * what is learned; BT_VS_PROBE neither learns nor reports (the caller
 * proves the entry next and asks again the reporting way when this
 * fails).  Returns V_* or -1 after reporting damaged hint bits. */
int bt_version_state(bt_tree *t, bp_frame *f, unsigned slot, const leaf_cell *c, uint64_t S, int how) {
    int hints = how == BT_VS_LEARN, quiet = how == BT_VS_PROBE;
    unsigned h = page_hint(f->data, slot);
    if (!hint_valid(h)) {
        if (!quiet)
            corrupt(t, ENG_LAYER_VERSION, atomic_load(&f->block), (int32_t)slot, 0, h,
                    "hint bits are not a valid state (damaged in the cache)");
        return -1;
    }
    /* With per-KV protection on, a hint is used only if the status copy
     * agrees: the hint area lies outside the entries' codes (readers set
     * hints under a shared latch) and its even-parity nibbles catch one
     * flipped bit, not two, which can make another valid state ("xmin
     * aborted" for a committed version).  The copy is in memory, so the
     * check costs a lookup or two, and hint damage is then reported or
     * harmless, never an answer. */
    if (t->kvw && h != HINT_NONE) {
        int xc = c->xmin == 0 || xid_committed(t, c->xmin), bad;
        if (h == HINT_XMIN_A)
            bad = xc;
        else if (h == HINT_XMIN_C)
            bad = !xc;
        else
            bad = !xc || c->xmax == 0 || xid_committed(t, c->xmax) != (h == HINT_XMAX_C);
        if (bad) {
            if (!quiet)
                corrupt(t, ENG_LAYER_HINT_STATUS, atomic_load(&f->block), (int32_t)slot, 0, h,
                        "hint bits contradict the transaction status (damaged in the cache, or the "
                        "commit-log page is old)");
            return -1;
        }
    }
    uint64_t durable = t->cfg.durable_seq ? atomic_load(t->cfg.durable_seq) : 0;
    if (c->xmin != 0) {
#ifdef ENG_BROKEN_HINT_ABORTED_WHILE_IN_PROGRESS
        /* planted bug (tests/mutants.txt): "not committed" is taken for
         * "aborted" before the snapshot test, so a reader meeting the
         * running writer's version (xmin above its snapshot, still in
         * progress) hints it aborted, and the commit is hidden for ever. */
        if (h == HINT_NONE && !xid_committed(t, c->xmin)) {
            if (hints) hint_learn(t, f, slot, HINT_NONE, HINT_XMIN_A);
            return V_INVISIBLE;
        }
#endif
        if (c->xmin > S) return V_INVISIBLE;
        if (h == HINT_XMIN_A) return V_INVISIBLE;
        if (h == HINT_NONE) {
            if (!xid_committed(t, c->xmin)) {
                if (hints) hint_learn(t, f, slot, HINT_NONE, HINT_XMIN_A);
                return V_INVISIBLE;
            }
            if (hints && c->xmin <= durable) {
                hint_learn(t, f, slot, HINT_NONE, HINT_XMIN_C);
                h = HINT_XMIN_C;
            }
        }
    }
#ifdef ENG_BROKEN_DELETE_AT_SNAPSHOT_INVISIBLE
    /* planted bug (tests/mutants.txt): >= instead of >, so a delete (or
     * replacement) by the transaction the snapshot ends at is not seen. */
    if (c->xmax == 0 || c->xmax >= S) return V_VISIBLE;
#else
    if (c->xmax == 0 || c->xmax > S) return V_VISIBLE;
#endif
    if (h == HINT_XMAX_C) return V_DELETED;
    if (h == HINT_XMAX_A) return V_VISIBLE;
    if (xid_committed(t, c->xmax)) {
#ifdef ENG_BROKEN_XMAX_HINT_BEFORE_DURABLE
        /* planted bug (tests/mutants.txt): the delete's hint is learned as
         * soon as its commit is visible, not once it is durable (the xmin
         * hint above waits for that): a leaf written back while the commit
         * record is still unsynced carries "xmax committed" to disk, and a
         * power loss that loses the commit leaves the key deleted. */
        if (hints && h == HINT_XMIN_C) hint_learn(t, f, slot, HINT_XMIN_C, HINT_XMAX_C);
#else
        if (hints && h == HINT_XMIN_C && c->xmax <= durable) hint_learn(t, f, slot, HINT_XMIN_C, HINT_XMAX_C);
#endif
        return V_DELETED;
    }
    if (hints && h == HINT_XMIN_C) hint_learn(t, f, slot, HINT_XMIN_C, HINT_XMAX_A);
    return V_VISIBLE;
}

/* Slots [first, *end) hold the versions of the key at FIRST; returns the
 * slot visible at S, or -1 (absent at S), or -2 (reported damage). */
static int resolve_key(bt_tree *t, bp_frame *f, unsigned first, uint64_t S, unsigned *end) {
    const uint8_t *p = f->data;
    unsigned n = ph_get_nslots(p), i;
    leaf_cell c0;
    if (kv_entry(t, f, (int)first)) return -2;
    page_leaf_cell(p, first, &c0);
    int found = -1, decided = 0;
    for (i = first; i < n; i++) {
        leaf_cell c;
        page_leaf_cell(p, i, &c);
        if (!bt_cell_in_page(t, p, &c)) {
            if (kv_entry(t, f, (int)i)) return -2; /* the code names it first */
            corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&f->block), (int32_t)i, 0, 0,
                    "cell runs off its page in the cache");
            return -2;
        }
        /* The first other key ends the group.  A damaged key that looks
         * equal is verified below; one that looks different would end the
         * group early and hide an older version still to be decided, so
         * the entry that ends an undecided group is proven too. */
        if (i > first && key_cmp(c.key, c.klen, c0.key, c0.klen) != 0) {
            if (!decided && kv_entry(t, f, (int)i)) return -2;
            break;
        }
        if (i > first && kv_entry(t, f, (int)i)) return -2; /* KV2: every version read */
        if (decided) continue;
        int st = bt_version_state(t, f, i, &c, S, BT_VS_LEARN);
        if (st < 0) return -2;
        if (st == V_VISIBLE) {
            found = (int)i;
            decided = 1;
        } else if (st == V_DELETED)
            decided = 1;
    }
    *end = i;
    return found;
}

uint32_t bt_nblocks(bt_tree *t) { return atomic_load(&t->nblocks); }

/* ---- descent ---- */

/* Child of internal page P for KEY under MODE (GE/GT descend toward the
 * leaf that holds the first key >= KEY; LE/LT toward the last key <= or <
 * KEY).  Also returns the chosen slot (-1 = leftmost child). */
uint32_t bt_child_for(const uint8_t *p, const void *key, size_t klen, int mode, int *slot) {
    return bt_child_for_side(p, key, klen, mode, slot, NULL, 0);
}

uint32_t bt_child_for_side(const uint8_t *p, const void *key, size_t klen, int mode, int *slot, const uint8_t *side,
                           unsigned stride) {
    unsigned n = ph_get_nslots(p);
    int i;
    if (!key) {
        i = (mode == BT_GE || mode == BT_GT) ? -1 : (int)n - 1;
    } else {
        int exact = 0;
        unsigned idx = page_search_side(p, key, klen, &exact, side, stride);
        /* Cells hold separators s: child covers [s, next s).  For LT, the
         * subtree of a separator equal to KEY holds nothing below KEY. */
        if (mode == BT_LT)
            i = (int)idx - 1;
        else
            i = exact ? (int)idx : (int)idx - 1;
    }
    *slot = i;
    if (i < 0) return ph_get_aux(p);
    internal_cell c;
    page_internal_cell(p, (unsigned)i, &c);
    return c.child;
}

/* Check that CHILD, reached from PARENT at LEVEL, may be followed. */
int bt_check_child_ptr(bt_tree *t, uint32_t parent, uint32_t child, int slot) {
    /* child == parent would latch a frame this thread holds (a cycle). */
    if (child <= ROOT_BLOCK || child >= atomic_load(&t->nblocks) || child == parent)
        return corrupt(t, ENG_LAYER_STRUCTURE, parent, slot, atomic_load(&t->nblocks), child,
                       "child pointer out of range");
    return ENG_OK;
}

int bt_check_child_page(bt_tree *t, const bp_frame *f, uint32_t parent, int level) {
    const uint8_t *p = f->data;
    int want = level == 0 ? PAGE_LEAF : PAGE_INTERNAL;
    if (ph_get_type(p) != want || ph_get_level(p) != level)
        return corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&f->block), -1, (uint64_t)want << 16 | (unsigned)level,
                       (uint64_t)ph_get_type(p) << 16 | ph_get_level(p),
                       parent == ROOT_BLOCK ? "child of the root has the wrong type or level"
                                            : "child page has the wrong type or level");
    return ENG_OK;
}

int bt_check_root(bt_tree *t, const bp_frame *f) {
    const uint8_t *p = f->data;
    int type = ph_get_type(p);
    if ((type == PAGE_LEAF && ph_get_level(p) == 0) ||
        (type == PAGE_INTERNAL && ph_get_level(p) > 0 && ph_get_level(p) < MAX_DEPTH))
        return ENG_OK;
    return corrupt(t, ENG_LAYER_STRUCTURE, ROOT_BLOCK, -1, PAGE_LEAF, (uint64_t)type,
                   "root is neither a leaf nor an internal page");
}

/* Crab down with shared latches to the leaf for KEY/MODE; the leaf is
 * returned latched in LEAF_MODE.  Fences of the chosen path are returned
 * when asked: the separator to the right (lo==NULL) or left of the leaf. */
int bt_descend(bt_tree *t, const void *key, size_t klen, int mode, int leaf_mode, bp_frame **out, fence *hi,
               fence *lo) {
    *out = NULL;
    if (hi) hi->set = 0;
    if (lo) lo->set = 0;
    bp_frame *f;
    int rc = bp_get(t->bp, ROOT_BLOCK, BP_SHARED, &f);
    if (rc) return rc;
    /* A writer that failed half-way poisoned the handle before it let go
     * of the root (bt_fail_op): its pages are not to be read. */
    if (leaf_mode == BP_SHARED && t->cfg.poisoned && atomic_load(t->cfg.poisoned)) {
        bp_release(t->bp, f, BP_SHARED);
        return ENG_POISONED;
    }
    /* Each frame's page code before its type and level are believed: a
     * bit flipped in a cached header is the codes' to name (V1e). */
    if ((rc = kv_page(t, f)) || (rc = bt_check_root(t, f))) {
        bp_release(t->bp, f, BP_SHARED);
        return rc;
    }
    int level = ph_get_level(f->data);
    if (level == 0 && leaf_mode == BP_EXCL) {
        /* Only the writer asks for an exclusive leaf, and only the writer
         * changes the root's level: re-latching cannot race. */
        bp_release(t->bp, f, BP_SHARED);
        if ((rc = bp_get(t->bp, ROOT_BLOCK, BP_EXCL, &f))) return rc;
        if ((rc = kv_page(t, f)) || (rc = bt_check_root(t, f))) {
            bp_release(t->bp, f, BP_EXCL);
            return rc;
        }
    }
    while (level > 0) {
        int slot;
        uint32_t blk = atomic_load(&f->block);
        uint32_t child = bt_child_for_side(f->data, key, klen, mode, &slot, bp_kv_codes(f, t->kvw), t->kvw);
        unsigned n = ph_get_nslots(f->data);
        /* KV1: the chosen separator and the next prove the child. */
#ifdef ENG_BROKEN_KV_DESCENT_SKIPS_NEXT_SEPARATOR
        /* planted bug (tests/mutants.txt): only the separator followed is
         * proven, as on the found path (KV1f), not the next one: a cached
         * separator damaged upwards sends keys at and above its true value
         * to the child on its left, where a get answers NOTFOUND and a
         * scan skips them, with no report. */
        if ((rc = kv_entry(t, f, slot))) {
#else
        if ((rc = kv_entry(t, f, slot)) || (slot + 1 < (int)n && (rc = kv_entry(t, f, slot + 1)))) {
#endif
            bp_release(t->bp, f, BP_SHARED);
            return rc;
        }
        for (int side = 0; side < 2; side++) {
            fence *fc = side ? lo : hi;
            int s2 = side ? slot : slot + 1;
            if (!fc || s2 < 0 || s2 >= (int)n) continue;
            internal_cell c;
            page_internal_cell(f->data, (unsigned)s2, &c);
            /* Proven on load, but a cached page can be damaged in memory. */
            if (c.klen > ENG_MAX_KEY || c.key + c.klen > f->data + t->ps) {
                bp_release(t->bp, f, BP_SHARED);
                return corrupt(t, ENG_LAYER_STRUCTURE, blk, s2, ENG_MAX_KEY, c.klen,
                               "separator key runs off its page in the cache");
            }
            memcpy(fc->key, c.key, c.klen);
            fc->len = c.klen;
            fc->set = 1;
        }
        if ((rc = bt_check_child_ptr(t, blk, child, slot))) {
            bp_release(t->bp, f, BP_SHARED);
            return rc;
        }
        bp_frame *c;
        int cmode = level == 1 ? leaf_mode : BP_SHARED;
#ifdef ENG_BROKEN_DESCENT_DROPS_PARENT_BEFORE_CHILD
        /* planted bug (tests/mutants.txt): the parent is let go before the
         * child is latched (no crabbing): a writer splitting the child in
         * between (while this reader waits for its latch or its read) moves
         * the upper half to a new right sibling, and this reader searches
         * the left half: a get answers NOTFOUND for a key that exists, a
         * scan skips the moved keys up to the old fence. */
        bp_release(t->bp, f, BP_SHARED);
        rc = bp_get(t->bp, child, cmode, &c);
        if (rc == ENG_OK && ((rc = kv_page(t, c)) || (rc = bt_check_child_page(t, c, blk, level - 1))))
            bp_release(t->bp, c, cmode);
#else
        rc = bp_get(t->bp, child, cmode, &c);
        if (rc == ENG_OK && ((rc = kv_page(t, c)) || (rc = bt_check_child_page(t, c, blk, level - 1))))
            bp_release(t->bp, c, cmode);
        bp_release(t->bp, f, BP_SHARED);
#endif
        if (rc) return rc;
        f = c;
        level--;
    }
    *out = f;
    return ENG_OK;
}

static int buf_reserve(eng_buf *b, size_t n) {
    if (b->cap >= n && b->data) return ENG_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < n) cap *= 2;
    void *d = realloc(b->data, cap);
    if (!d) return ENG_NOMEM;
    b->data = d;
    b->cap = cap;
    return ENG_OK;
}

/* Copy the value of cell C at SLOT of leaf F into DST (sized c->vlen). */
static int cell_value(bt_tree *t, const bp_frame *f, int slot, const leaf_cell *c, uint8_t *dst) {
    if (!(c->cflags & CELL_OVERFLOW)) {
        if (c->vlen) memcpy(dst, c->val, c->vlen);
        return ENG_OK;
    }
    return bt_ovfl_walk(t, atomic_load(&f->block), slot, c->ovfl, c->vlen, dst, NULL);
}

/* ---- reads ---- */

/* A cell of a cached page, checked before its bytes are copied: pages
 * are proven on load, but a frame can be damaged in memory. */
int bt_cell_in_page(const bt_tree *t, const uint8_t *p, const leaf_cell *c) {
    const uint8_t *end = p + t->ps;
    if (c->klen == 0 || c->klen > ENG_MAX_KEY || c->key < p + PAGE_HDR || c->key + c->klen > end) return 0;
    if (c->cflags & CELL_OVERFLOW) return c->vlen > 0;
    return c->val + c->vlen <= end;
}

/* A get whose key was found at IDX of leaf F (latched), a page whose keys
 * were unique when coded (KV1u; the flag came with the page code checked
 * on the way down): the entry is the key's only version in the page, so
 * it alone proves the answer.  It is read first and verified once, after
 * the header, the hint and the value were read (KV2v): a flip before or
 * during the reads fails that check, and nothing read is acted on before
 * it (the value goes to the caller's buffer only, its length clamped to
 * the page).  Where reading would learn a hint (a write into the page) or
 * follow an overflow chain, or where what was read looks wrong, the
 * general path proves the entry first: returns GET_ASK_AGAIN. */
enum { GET_ASK_AGAIN = 1000 };
static int get_only_version(bt_tree *t, bp_frame *f, unsigned idx, uint64_t S, eng_buf *out) {
    leaf_cell c;
    page_leaf_cell(f->data, idx, &c);
    if (!bt_cell_in_page(t, f->data, &c) || (c.cflags & CELL_OVERFLOW)) return GET_ASK_AGAIN;
    unsigned h = page_hint(f->data, idx);
    if (!t->cfg.no_hints && ((h == HINT_NONE && c.xmin != 0) || (h == HINT_XMIN_C && c.xmax != 0)))
        return GET_ASK_AGAIN; /* a hint may be learned */
    int st = bt_version_state(t, f, idx, &c, S, BT_VS_PROBE);
    if (st < 0) return GET_ASK_AGAIN;
    int rc = ENG_OK;
    if (st == V_VISIBLE && (rc = buf_reserve(out, c.vlen ? c.vlen : 1)) != ENG_OK) return rc;
    if (st == V_VISIBLE && c.vlen) memcpy(out->data, c.val, c.vlen);
    if ((rc = kv_entry(t, f, (int)idx))) return rc; /* KV2v: one check after every read */
    if (st != V_VISIBLE) return ENG_NOTFOUND;
    out->len = c.vlen;
    return ENG_OK;
}

#ifdef ENG_BROKEN_STALE_VALUE
/* Test-only broken build: the value a put replaced is remembered and
 * returned by the next gets of that key (stress proves the oracle reports
 * the wrong value). */
pthread_mutex_t stale_mu = PTHREAD_MUTEX_INITIALIZER;
uint8_t stale_key[ENG_MAX_KEY], stale_val[4096];
size_t stale_klen, stale_vlen;
#endif

/* The descent of a get that answers only if it finds its key (KV1f): the
 * route needs no proof then, because a verified entry holding the key is
 * the key's and every version of a key lives in one leaf.  So at each
 * internal level the page code (the header steers the search) and the
 * entry whose child is followed are proven, before the pointer is
 * followed (a garbage block number is never read), but not the separator
 * to its right, which only bounds the route (one check a level fewer).
 * Nothing is reported here: whatever looks wrong returns GET_ASK_AGAIN,
 * and the get descends again with every check, which names the damage.
 * Pages read from disk are verified and reported by the pool as always. */
static int descend_for_found(bt_tree *t, const void *key, size_t klen, bp_frame **out) {
    *out = NULL;
    bp_frame *f;
    int rc = bp_get(t->bp, ROOT_BLOCK, BP_SHARED, &f);
    if (rc) return rc;
    if (t->cfg.poisoned && atomic_load(t->cfg.poisoned)) rc = ENG_POISONED;
    int type = ph_get_type(f->data), level = ph_get_level(f->data);
    if (!rc && !((type == PAGE_LEAF && level == 0) || (type == PAGE_INTERNAL && level > 0 && level < MAX_DEPTH)))
        rc = GET_ASK_AGAIN;
    while (!rc && level > 0) {
        int slot;
        uint32_t blk = atomic_load(&f->block);
        uint32_t child = bt_child_for_side(f->data, key, klen, BT_GE, &slot, bp_kv_codes(f, t->kvw), t->kvw);
        if (bp_kv_test_page(t->bp, f) || (slot >= 0 && bp_kv_test_entry(t->bp, f, (unsigned)slot)) ||
            child <= ROOT_BLOCK || child >= atomic_load(&t->nblocks) || child == blk) {
            rc = GET_ASK_AGAIN;
            break;
        }
        bp_frame *c;
        if ((rc = bp_get(t->bp, child, BP_SHARED, &c))) break;
        if (ph_get_type(c->data) != (level == 1 ? PAGE_LEAF : PAGE_INTERNAL) || ph_get_level(c->data) != level - 1) {
            bp_release(t->bp, c, BP_SHARED);
            rc = GET_ASK_AGAIN;
            break;
        }
        bp_release(t->bp, f, BP_SHARED);
        f = c;
        level--;
    }
    if (!rc && bp_kv_test_page(t->bp, f)) rc = GET_ASK_AGAIN; /* the leaf's header steers the search */
    if (rc) {
        bp_release(t->bp, f, BP_SHARED);
        return rc;
    }
    *out = f;
    return ENG_OK;
}

static int get_in(bt_tree *t, uint64_t snap, const void *key, size_t klen, eng_buf *out, int found_only);

int bt_get(bt_tree *t, uint64_t snap, const void *key, size_t klen, eng_buf *out) {
#ifdef ENG_BROKEN_STALE_VALUE
    pthread_mutex_lock(&stale_mu);
    if (stale_klen == klen && memcmp(stale_key, key, klen) == 0 && buf_reserve(out, stale_vlen + 1) == ENG_OK) {
        memcpy(out->data, stale_val, stale_vlen);
        out->len = stale_vlen;
        pthread_mutex_unlock(&stale_mu);
        return ENG_OK;
    }
    pthread_mutex_unlock(&stale_mu);
#endif
    int rc = t->kvw ? get_in(t, snap, key, klen, out, 1) : GET_ASK_AGAIN;
    return rc == GET_ASK_AGAIN ? get_in(t, snap, key, klen, out, 0) : rc;
}

/* A get.  FOUND_ONLY: the route down is not proven (descend_for_found)
 * and the get answers only if it finds its key in the leaf; GET_ASK_AGAIN
 * asks for the get with every check. */
static int get_in(bt_tree *t, uint64_t snap, const void *key, size_t klen, eng_buf *out, int found_only) {
#ifdef ENG_BROKEN_GET_SNAPSHOT_BEFORE_LEAF_LATCH
    /* planted bug (tests/mutants.txt): a get without a snapshot reads the
     * last commit before its descent, not under the leaf's latch: the
     * writer may commit and prune the key's versions (horizon past that
     * id) while the get waits for a page, and the version it should see
     * is gone (NOTFOUND for a key that existed throughout). */
    uint64_t S = snap ? snap : txn_last_committed(t->cfg.txn);
#endif
    bp_frame *f;
    int rc =
        found_only ? descend_for_found(t, key, klen, &f) : bt_descend(t, key, klen, BT_GE, BP_SHARED, &f, NULL, NULL);
    if (rc) return rc;
    int exact = 0;
    unsigned idx = page_search_side(f->data, key, klen, &exact, bp_kv_codes(f, t->kvw), t->kvw), end;
    if (found_only && !exact) { /* "absent" needs the route proven (KV1) */
        bp_release(t->bp, f, BP_SHARED);
        return GET_ASK_AGAIN;
    }
#ifndef ENG_BROKEN_GET_SNAPSHOT_BEFORE_LEAF_LATCH
    uint64_t S = snap ? snap : txn_last_committed(t->cfg.txn);
#endif
    if (exact && t->kvw && (bp_kv_flags(f) & KV_UNIQUE_KEYS)) {
        rc = get_only_version(t, f, idx, S, out);
        if (rc != GET_ASK_AGAIN) {
            bp_release(t->bp, f, BP_SHARED);
            return rc;
        }
    }
    /* KV1: the entries around the position prove it (idx's in resolve_key;
     * for "absent", the one at idx too). */
#ifdef ENG_BROKEN_KV_ABSENT_KEY_UNCHECKED
    /* planted bug (tests/mutants.txt): KV1 on the "absent" path checks the
     * entry below the position only, not the one at it: a key damaged in
     * the cache reads as NOTFOUND instead of a reported corruption. */
    if ((rc = kv_entry(t, f, (int)idx - 1))) {
#else
    if ((rc = kv_entry(t, f, (int)idx - 1)) ||
        (!exact && idx < ph_get_nslots(f->data) && (rc = kv_entry(t, f, (int)idx)))) {
#endif
        bp_release(t->bp, f, BP_SHARED);
        return rc;
    }
    if (!exact) {
        bp_release(t->bp, f, BP_SHARED);
        return ENG_NOTFOUND;
    }
    int vs = resolve_key(t, f, idx, S, &end);
    if (vs < 0) {
        bp_release(t->bp, f, BP_SHARED);
        return vs == -1 ? ENG_NOTFOUND : ENG_CORRUPTION;
    }
    idx = (unsigned)vs;
    leaf_cell c;
    page_leaf_cell(f->data, idx, &c);
    if (!bt_cell_in_page(t, f->data, &c)) {
        uint32_t blk = atomic_load(&f->block);
        bp_release(t->bp, f, BP_SHARED);
        return corrupt(t, ENG_LAYER_STRUCTURE, blk, (int32_t)idx, 0, 0, "cell runs off its page in the cache");
    }
    rc = buf_reserve(out, c.vlen ? c.vlen : 1);
#ifdef ENG_BROKEN_OVERFLOW_READ_AFTER_LEAF_RELEASE
    /* planted bug (tests/mutants.txt): a large value's chain is read after
     * the leaf's latch is let go, so the writer is not kept waiting for
     * the whole chain: it can meanwhile end the version, prune it as dead
     * (a get without a snapshot holds no place in the horizon), free its
     * chain and reuse the pages for a new value, and this get copies
     * whatever the pages hold by then (a wrong value, or a false overflow
     * report). */
    if (rc == ENG_OK && (c.cflags & CELL_OVERFLOW)) {
        uint32_t blk = atomic_load(&f->block);
        rc = kv_entry(t, f, (int)idx);
        bp_release(t->bp, f, BP_SHARED);
        if (rc == ENG_OK) rc = bt_ovfl_walk(t, blk, (int)idx, c.ovfl, c.vlen, out->data, NULL);
        if (rc == ENG_OK) out->len = c.vlen;
        return rc;
    }
#endif
    if (rc == ENG_OK) rc = cell_value(t, f, (int)idx, &c, out->data);
    /* KV2 after the copy too: a bit flipped between the check and the copy
     * (memory faults do not take latches) is caught, not returned. */
    if (rc == ENG_OK) rc = kv_entry(t, f, (int)idx);
    if (rc == ENG_OK) out->len = c.vlen;
    bp_release(t->bp, f, BP_SHARED);
    return rc;
}

static int lc_push(bt_leafcopy *lc, const leaf_cell *c) {
    if (lc->n == lc->ecap) {
        size_t cap = lc->ecap ? lc->ecap * 2 : 64;
        bt_entry *e = realloc(lc->e, cap * sizeof *e);
        if (!e) return ENG_NOMEM;
        lc->e = e;
        lc->ecap = cap;
    }
    size_t need = lc->blen + c->klen + c->vlen;
    if (need > lc->bcap) {
        size_t cap = lc->bcap ? lc->bcap : 4096;
        while (cap < need) cap *= 2;
        uint8_t *b = realloc(lc->buf, cap);
        if (!b) return ENG_NOMEM;
        lc->buf = b;
        lc->bcap = cap;
    }
    bt_entry *e = &lc->e[lc->n++];
    e->koff = lc->blen;
    e->klen = c->klen;
    memcpy(lc->buf + lc->blen, c->key, c->klen);
    lc->blen += c->klen;
    e->voff = lc->blen;
    e->vlen = c->vlen;
    lc->blen += c->vlen;
    return ENG_OK;
}

/* The copy of one leaf travels strictly away from the key it was sought
 * from (K, KL, MODE): each entry past the last, the first past K (or at
 * it, for GE and LE).  A leaf whose keys are out of order (one damaged in
 * the cache with no per-KV codes to catch it, w = 0) otherwise lets an
 * iterator's re-seek from its last key land on a key it returned before,
 * and a scan never ends (a shrink of planted bug kv-absent-key-unchecked:
 * a key's byte flipped into a larger one, and the settlement's scan
 * printed the same key until the disk filled).  Reported at BLOCK. */
static int lc_in_order(bt_tree *t, const bt_leafcopy *lc, const void *k, size_t kl, int mode, uint32_t block) {
    int fwd = mode == BT_GE || mode == BT_GT;
    for (size_t j = 0; j < lc->n; j++) {
        const bt_entry *e = &lc->e[j];
        int c;
        if (j > 0)
            c = key_cmp(lc->buf + e->koff, e->klen, lc->buf + lc->e[j - 1].koff, lc->e[j - 1].klen);
        else if (k)
            c = key_cmp(lc->buf + e->koff, e->klen, k, kl) + (mode == BT_GE ? 1 : mode == BT_LE ? -1 : 0);
        else
            continue;
        if (fwd ? c <= 0 : c >= 0)
            return corrupt(t, ENG_LAYER_STRUCTURE, block, -1, 0, (uint64_t)j,
                           "leaf keys out of order (a scan would not advance)");
    }
    return ENG_OK;
}

int bt_seek(bt_tree *t, uint64_t snap, const void *key, size_t klen, int mode, bt_leafcopy *lc) {
    int fwd = mode == BT_GE || mode == BT_GT;
    lc->n = 0;
    lc->blen = 0;
    lc->forward = fwd;
    fence fc, cur;
    const void *k = key;
    size_t kl = klen;
    for (int hops = 0;; hops++) {
        bp_frame *f;
        int rc = bt_descend(t, k, kl, mode, BP_SHARED, &f, fwd ? &fc : NULL, fwd ? NULL : &fc);
        if (rc) return rc;
        /* KV2: a scan copies (nearly) the whole rest of the leaf: prove it
         * whole, once, rather than entry by entry. */
        if ((rc = kv_all(t, f))) {
            bp_release(t->bp, f, BP_SHARED);
            lc->n = 0;
            return rc;
        }
        const uint8_t *p = f->data;
        const uint64_t S = snap ? snap : txn_last_committed(t->cfg.txn);
        int n = ph_get_nslots(p);
        /* Key groups (versions of one key never span leaves) in travel
         * order: [lo_i, hi_i) is the group of the key where travel starts. */
        int exact = 0, idx = k ? (int)page_search(p, k, kl, &exact) : (fwd ? 0 : n);
        int i;
        if (fwd) {
            i = idx;
            if (k && mode == BT_GT && exact) {
                unsigned e; /* skip K's group */
                leaf_cell c0;
                page_leaf_cell(p, (unsigned)i, &c0);
                for (e = (unsigned)i; e < (unsigned)n; e++) {
                    leaf_cell c;
                    page_leaf_cell(p, e, &c);
                    if (!bt_cell_in_page(t, p, &c) || key_cmp(c.key, c.klen, c0.key, c0.klen)) break;
                }
                i = (int)e;
            }
        } else {
            /* LE: K's group counts; LT: start below it. */
            i = idx;
            if (k && mode == BT_LE && exact) {
                leaf_cell c0;
                page_leaf_cell(p, (unsigned)i, &c0);
                while (i < n) {
                    leaf_cell c;
                    page_leaf_cell(p, (unsigned)i, &c);
                    if (!bt_cell_in_page(t, p, &c) || key_cmp(c.key, c.klen, c0.key, c0.klen)) break;
                    i++;
                }
            }
            i--; /* last slot of the group before the travel start */
        }
        while (rc == ENG_OK && i >= 0 && i < n) {
            unsigned first = (unsigned)i, end;
            if (!fwd) { /* walk back to the group's newest version */
                leaf_cell c0;
                page_leaf_cell(p, first, &c0);
                while (first > 0) {
                    leaf_cell c;
                    page_leaf_cell(p, first - 1, &c);
                    if (!bt_cell_in_page(t, p, &c) || key_cmp(c.key, c.klen, c0.key, c0.klen)) break;
                    first--;
                }
            }
            int vs = resolve_key(t, f, first, S, &end);
            if (vs == -2) {
                rc = ENG_CORRUPTION;
                break;
            }
            if (vs >= 0) {
                leaf_cell c;
                page_leaf_cell(p, (unsigned)vs, &c);
                rc = lc_push(lc, &c);
                if (rc == ENG_OK) rc = cell_value(t, f, vs, &c, lc->buf + lc->e[lc->n - 1].voff);
            }
            i = fwd ? (int)end : (int)first - 1;
        }
        /* KV2 after the copy too: a bit flipped in the leaf between the
         * check above and the copy is caught, not returned. */
        if (rc == ENG_OK && lc->n) rc = kv_all(t, f);
        if (rc == ENG_OK) rc = lc_in_order(t, lc, k, kl, mode, atomic_load(&f->block));
        bp_release(t->bp, f, BP_SHARED);
        if (rc) {
            lc->n = 0;
            return rc;
        }
        if (lc->n || !fc.set) return ENG_OK;
        /* An empty stretch (lazily unmerged leaves): continue at the fence,
         * which strictly advances, so this ends. */
        if (hops > (int)atomic_load(&t->nblocks) + 1)
            return corrupt(t, ENG_LAYER_STRUCTURE, ROOT_BLOCK, -1, 0, (uint64_t)hops,
                           "separator keys do not advance (cycle in the tree)");
        cur = fc;
        k = cur.key;
        kl = cur.len;
        mode = fwd ? BT_GE : BT_LT;
    }
}

void bt_leafcopy_free(bt_leafcopy *lc) {
    free(lc->e);
    free(lc->buf);
    memset(lc, 0, sizeof *lc);
}
