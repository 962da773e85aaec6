/*
 * btree.c -- B+tree (shape, merge policy and latching in btree.h).
 *
 * Every page reaching this file passed page_verify when it was loaded, so
 * cells are well formed; what can still be wrong across pages (a child of
 * the wrong level or type, a pointer past the end, a broken overflow
 * chain) is checked here and reported as structure / overflow corruption.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "page.h"
#include "pageop.h"
#include "wal.h"

#define MAX_DEPTH 32
#define META_BLOCK 0u
#define ROOT_BLOCK 1u

struct bt_tree {
    bt_config cfg;
    bp_pool *bp;
    uint32_t ps;
    size_t max_inline;        /* largest leaf cell stored inline */
    size_t ovfl_cap;          /* payload bytes per overflow page */
    _Atomic uint32_t nblocks; /* mirror of meta.nblocks for readers' checks */
    _Atomic uint64_t ovfl_written;
    _Atomic uint64_t images, image_bytes, image_raw_bytes; /* full-page images */
    _Atomic uint64_t hints_set, pruned;
    unsigned kvw;             /* per-KV protection width (0: off) */
    /* The commit log's directory (mirror of the meta page's; writer and
     * open only). */
    uint32_t *clog_dir;
    uint32_t clog_n, clog_cap;
};

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

static int corrupt(bt_tree *t, int layer, uint32_t block, int32_t entry, uint64_t exp,
                   uint64_t found, const char *what) {
    return eng_report(&t->cfg.reporter, layer, t->cfg.file, block,
                      (int64_t)block * t->ps, entry, exp, found, "%s", what);
}

/* Per-KV checks (kvprot.h K1-K3); free when protection is off. */
static inline int kv_page(bt_tree *t, bp_frame *f) { return t->kvw ? bp_kv_check_page(t->bp, f) : ENG_OK; }
static inline int kv_entry(bt_tree *t, bp_frame *f, int slot) {
    return t->kvw && slot >= 0 ? bp_kv_check_entry(t->bp, f, (unsigned)slot) : ENG_OK;
}
static inline int kv_all(bt_tree *t, bp_frame *f) { return t->kvw ? bp_kv_check_all(t->bp, f) : ENG_OK; }

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
    if (rc) { free(t); return rc; }
    meta_fields mf;
    meta_read(m->data, &mf);
    int type = ph_get_type(m->data);
    bp_release(t->bp, m, BP_SHARED);
    if (type != PAGE_META) {
        rc = corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, PAGE_META, (uint64_t)type,
                     "block 0 is not the meta page");
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
        rc = eng_report(&t->cfg.reporter, ENG_LAYER_STRUCTURE, t->cfg.file, (int64_t)end,
                        (int64_t)(end * t->ps), -1, end, mf.nblocks,
                        "meta page counts %u blocks but the data file ends at block %llu "
                        "and the high-water mark is %llu",
                        mf.nblocks, (unsigned long long)cfg->file_blocks, (unsigned long long)cfg->hwm);
    } else if (mf.nblocks < cfg->hwm) {
        rc = corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, cfg->hwm, mf.nblocks,
                     "meta page counts fewer blocks than the high-water mark");
    }
    if (rc) { free(t); return rc; }
    atomic_store(&t->nblocks, mf.nblocks);
    *out = t;
    return ENG_OK;
}

void bt_close(bt_tree *t) {
    if (!t) return;
    free(t->clog_dir);
    free(t);
}

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

int bt_load_clog(bt_tree *t) {
    bp_frame *m;
    int rc = bp_get(t->bp, META_BLOCK, BP_SHARED, &m);
    if (rc) return rc;
    meta_fields mf;
    meta_read(m->data, &mf);
    t->clog_n = 0;
    for (uint32_t i = 0; i < mf.clog_pages && rc == ENG_OK; i++) rc = clog_dir_push(t, meta_clog_block(m->data, i));
    bp_release(t->bp, m, BP_SHARED);
    const uint32_t per = CLOG_PER_PAGE(t->ps);
    for (uint32_t i = 0; i < t->clog_n && rc == ENG_OK; i++) {
        bp_frame *f;
        if ((rc = bp_get(t->bp, t->clog_dir[i], BP_SHARED, &f))) break;
        if (ph_get_type(f->data) != PAGE_CLOG || ph_get_aux(f->data) != i) {
            uint64_t ty = ph_get_type(f->data);
            bp_release(t->bp, f, BP_SHARED);
            rc = corrupt(t, ENG_LAYER_VERSION, t->clog_dir[i], -1, i, ty << 32 | ph_get_aux(f->data),
                         "commit-log directory names a page that is not that commit-log page");
            break;
        }
        for (uint32_t j = 0; j < per && rc == ENG_OK; j++) {
            unsigned st = (f->data[PAGE_HDR + j / 4u] >> ((j % 4u) * 2u)) & 3u;
            if (st != CLOG_IN_PROGRESS) rc = txn_set_status(t->cfg.txn, (uint64_t)i * per + j, (int)st);
        }
        bp_release(t->bp, f, BP_SHARED);
    }
    return rc;
}

/* ---- versions ---- */

enum { V_INVISIBLE = 0, V_VISIBLE, V_DELETED };

/* Learn a hint (a cache of commit status): only statuses that can never
 * change, and a commit only once it is durable (a hint on disk must not
 * outlive a commit lost in a crash). */
static void hint_learn(bt_tree *t, bp_frame *f, unsigned slot, unsigned from, unsigned to) {
    if (t->cfg.no_hints) return;
    if (page_hint_cas(f->data, slot, from, to)) {
        bp_mark_hint_dirty(f);
        atomic_fetch_add_explicit(&t->hints_set, 1, memory_order_relaxed);
    }
}

static int xid_committed(const bt_tree *t, uint64_t xid) {
    return txn_status(t->cfg.txn, xid) == CLOG_COMMITTED;
}

/* State of the version at SLOT (cell C) of leaf F, latched, for a reader
 * at snapshot S (every id <= S is finished, T1).  HINTS: set what is
 * learned.  Returns V_* or -1 after reporting damaged hint bits. */
static int version_state(bt_tree *t, bp_frame *f, unsigned slot, const leaf_cell *c, uint64_t S, int hints) {
    unsigned h = page_hint(f->data, slot);
    if (!hint_valid(h)) {
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
        if (h == HINT_XMIN_A) bad = xc;
        else if (h == HINT_XMIN_C) bad = !xc;
        else bad = !xc || c->xmax == 0 || xid_committed(t, c->xmax) != (h == HINT_XMAX_C);
        if (bad) {
            corrupt(t, ENG_LAYER_KV_PROTECTION, atomic_load(&f->block), (int32_t)slot, 0, h,
                    "hint bits contradict the transaction status (damaged in the cache)");
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
            if (hints && c->xmin <= durable) { hint_learn(t, f, slot, HINT_NONE, HINT_XMIN_C); h = HINT_XMIN_C; }
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
        if (hints && h == HINT_XMIN_C && c->xmax <= durable) hint_learn(t, f, slot, HINT_XMIN_C, HINT_XMAX_C);
        return V_DELETED;
    }
    if (hints && h == HINT_XMIN_C) hint_learn(t, f, slot, HINT_XMIN_C, HINT_XMAX_A);
    return V_VISIBLE;
}

static int cell_in_page(const bt_tree *t, const uint8_t *p, const leaf_cell *c);

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
        if (!cell_in_page(t, p, &c)) {
            if (kv_entry(t, f, (int)i)) return -2; /* the code names it first */
            corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&f->block), (int32_t)i, 0, 0, "cell runs off its page in the cache");
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
        if (i > first && kv_entry(t, f, (int)i)) return -2; /* K2: every version read */
        if (decided) continue;
        int st = version_state(t, f, i, &c, S, 1);
        if (st < 0) return -2;
        if (st == V_VISIBLE) { found = (int)i; decided = 1; }
        else if (st == V_DELETED) decided = 1;
    }
    *end = i;
    return found;
}

uint32_t bt_nblocks(bt_tree *t) { return atomic_load(&t->nblocks); }

/* ---- descent ---- */

/* Child of internal page P for KEY under MODE (GE/GT descend toward the
 * leaf that holds the first key >= KEY; LE/LT toward the last key <= or <
 * KEY).  Also returns the chosen slot (-1 = leftmost child). */
static uint32_t child_for(const uint8_t *p, const void *key, size_t klen, int mode, int *slot) {
    unsigned n = ph_get_nslots(p);
    int i;
    if (!key) {
        i = (mode == BT_GE || mode == BT_GT) ? -1 : (int)n - 1;
    } else {
        int exact = 0;
        unsigned idx = page_search(p, key, klen, &exact);
        /* Cells hold separators s: child covers [s, next s).  For LT, the
         * subtree of a separator equal to KEY holds nothing below KEY. */
        if (mode == BT_LT) i = (int)idx - 1;
        else i = exact ? (int)idx : (int)idx - 1;
    }
    *slot = i;
    if (i < 0) return ph_get_aux(p);
    internal_cell c;
    page_internal_cell(p, (unsigned)i, &c);
    return c.child;
}

/* Check that CHILD, reached from PARENT at LEVEL, may be followed. */
static int check_child_ptr(bt_tree *t, uint32_t parent, uint32_t child, int slot) {
    /* child == parent would latch a frame this thread holds (a cycle). */
    if (child <= ROOT_BLOCK || child >= atomic_load(&t->nblocks) || child == parent)
        return corrupt(t, ENG_LAYER_STRUCTURE, parent, slot, atomic_load(&t->nblocks), child,
                       "child pointer out of range");
    return ENG_OK;
}

static int check_child_page(bt_tree *t, const bp_frame *f, uint32_t parent, int level) {
    const uint8_t *p = f->data;
    int want = level == 0 ? PAGE_LEAF : PAGE_INTERNAL;
    if (ph_get_type(p) != want || ph_get_level(p) != level)
        return corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&f->block), -1,
                       (uint64_t)want << 16 | (unsigned)level,
                       (uint64_t)ph_get_type(p) << 16 | ph_get_level(p),
                       parent == ROOT_BLOCK ? "child of the root has the wrong type or level"
                                            : "child page has the wrong type or level");
    return ENG_OK;
}

static int check_root(bt_tree *t, const bp_frame *f) {
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
typedef struct fence {
    uint8_t key[ENG_MAX_KEY];
    size_t len;
    int set;
} fence;

static int descend(bt_tree *t, const void *key, size_t klen, int mode, int leaf_mode,
                   bp_frame **out, fence *hi, fence *lo) {
    *out = NULL;
    if (hi) hi->set = 0;
    if (lo) lo->set = 0;
    bp_frame *f;
    int rc = bp_get(t->bp, ROOT_BLOCK, BP_SHARED, &f);
    if (rc) return rc;
    /* A writer that failed half-way poisoned the handle before it let go
     * of the root (fail_op): its pages are not to be read. */
    if (leaf_mode == BP_SHARED && t->cfg.poisoned && atomic_load(t->cfg.poisoned)) {
        bp_release(t->bp, f, BP_SHARED);
        return ENG_POISONED;
    }
    if ((rc = check_root(t, f))) { bp_release(t->bp, f, BP_SHARED); return rc; }
    int level = ph_get_level(f->data);
    if (level == 0 && leaf_mode == BP_EXCL) {
        /* Only the writer asks for an exclusive leaf, and only the writer
         * changes the root's level: re-latching cannot race. */
        bp_release(t->bp, f, BP_SHARED);
        if ((rc = bp_get(t->bp, ROOT_BLOCK, BP_EXCL, &f))) return rc;
        if ((rc = check_root(t, f))) { bp_release(t->bp, f, BP_EXCL); return rc; }
    }
    while (level > 0) {
        int slot;
        uint32_t blk = atomic_load(&f->block);
        if ((rc = kv_page(t, f))) { bp_release(t->bp, f, BP_SHARED); return rc; }
        uint32_t child = child_for(f->data, key, klen, mode, &slot);
        unsigned n = ph_get_nslots(f->data);
        /* K1: the chosen separator and the next prove the child. */
        if ((rc = kv_entry(t, f, slot)) || (slot + 1 < (int)n && (rc = kv_entry(t, f, slot + 1)))) {
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
            memcpy(fc->key, c.key, c.klen); fc->len = c.klen; fc->set = 1;
        }
        if ((rc = check_child_ptr(t, blk, child, slot))) { bp_release(t->bp, f, BP_SHARED); return rc; }
        bp_frame *c;
        int cmode = level == 1 ? leaf_mode : BP_SHARED;
        rc = bp_get(t->bp, child, cmode, &c);
        if (rc == ENG_OK && (rc = check_child_page(t, c, blk, level - 1)))
            bp_release(t->bp, c, cmode);
        bp_release(t->bp, f, BP_SHARED);
        if (rc) return rc;
        f = c;
        level--;
    }
    if ((rc = kv_page(t, f))) { bp_release(t->bp, f, leaf_mode); return rc; }
    *out = f;
    return ENG_OK;
}

/* ---- overflow chains ---- */

static int ovfl_pages(const bt_tree *t, uint32_t vlen) {
    return (int)((vlen + t->ovfl_cap - 1) / t->ovfl_cap);
}

/* Walk the chain of a cell, copying the value into OUT (if non-NULL) and
 * the chain's blocks into BLOCKS (if non-NULL, sized ovfl_pages).  Pages are
 * latched in MODE one at a time (the leaf latch held by the caller keeps the
 * chain from changing). */
static int ovfl_walk(bt_tree *t, uint32_t leaf, int slot, uint32_t first, uint32_t vlen,
                     uint8_t *out, uint32_t *blocks) {
    uint32_t blk = first, done = 0;
    int npages = ovfl_pages(t, vlen);
    for (int i = 0; i < npages; i++) {
        if (blk <= ROOT_BLOCK || blk >= atomic_load(&t->nblocks))
            return corrupt(t, ENG_LAYER_OVERFLOW, leaf, slot, atomic_load(&t->nblocks), blk,
                           "overflow pointer out of range");
        bp_frame *f;
        int rc = bp_get(t->bp, blk, BP_SHARED, &f);
        if (rc) return rc;
        if ((rc = kv_page(t, f))) { bp_release(t->bp, f, BP_SHARED); return rc; }
        const uint8_t *p = f->data;
        uint32_t len = ph_get_aux(p), want = vlen - done < t->ovfl_cap ? vlen - done : (uint32_t)t->ovfl_cap;
        uint32_t next = ph_get_next(p);
        if (ph_get_type(p) != PAGE_OVERFLOW || len != want || (i + 1 < npages) != (next != 0)) {
            uint64_t ty = ph_get_type(p);
            bp_release(t->bp, f, BP_SHARED);
            return corrupt(t, ENG_LAYER_OVERFLOW, blk, -1, want, ty == PAGE_OVERFLOW ? len : ty << 32,
                           ty != PAGE_OVERFLOW ? "overflow chain reaches a page that is not an overflow page"
                                               : "overflow page length or link disagrees with the value length");
        }
        if (out) memcpy(out + done, p + PAGE_HDR, len);
        if (out && (rc = kv_page(t, f))) { bp_release(t->bp, f, BP_SHARED); return rc; } /* after the copy too */
        if (blocks) blocks[i] = blk;
        bp_release(t->bp, f, BP_SHARED);
        done += len;
        blk = next;
    }
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
    return ovfl_walk(t, atomic_load(&f->block), slot, c->ovfl, c->vlen, dst, NULL);
}

/* ---- reads ---- */

/* A cell of a cached page, checked before its bytes are copied: pages
 * are proven on load, but a frame can be damaged in memory. */
static int cell_in_page(const bt_tree *t, const uint8_t *p, const leaf_cell *c) {
    const uint8_t *end = p + t->ps;
    if (c->klen == 0 || c->klen > ENG_MAX_KEY || c->key < p + PAGE_HDR || c->key + c->klen > end) return 0;
    if (c->cflags & CELL_OVERFLOW) return c->vlen > 0;
    return c->val + c->vlen <= end;
}

#ifdef ENG_BROKEN_STALE_VALUE
/* Test-only broken build: the value a put replaced is remembered and
 * returned by the next gets of that key (stress proves the oracle reports
 * the wrong value). */
static pthread_mutex_t stale_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t stale_key[ENG_MAX_KEY], stale_val[4096];
static size_t stale_klen, stale_vlen;
#endif

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
    bp_frame *f;
    int rc = descend(t, key, klen, BT_GE, BP_SHARED, &f, NULL, NULL);
    if (rc) return rc;
    int exact = 0;
    unsigned idx = page_search(f->data, key, klen, &exact), end;
    /* K1: the entries around the position prove it (idx's in resolve_key;
     * for "absent", the one at idx too). */
#ifdef ENG_BROKEN_KV_ABSENT_KEY_UNCHECKED
    /* planted bug (tests/mutants.txt): K1 on the "absent" path checks the
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
    if (!exact) { bp_release(t->bp, f, BP_SHARED); return ENG_NOTFOUND; }
    int vs = resolve_key(t, f, idx, snap ? snap : txn_last_committed(t->cfg.txn), &end);
    if (vs < 0) { bp_release(t->bp, f, BP_SHARED); return vs == -1 ? ENG_NOTFOUND : ENG_CORRUPTION; }
    idx = (unsigned)vs;
    leaf_cell c;
    page_leaf_cell(f->data, idx, &c);
    if (!cell_in_page(t, f->data, &c)) {
        uint32_t blk = atomic_load(&f->block);
        bp_release(t->bp, f, BP_SHARED);
        return corrupt(t, ENG_LAYER_STRUCTURE, blk, (int32_t)idx, 0, 0, "cell runs off its page in the cache");
    }
    rc = buf_reserve(out, c.vlen ? c.vlen : 1);
    if (rc == ENG_OK) rc = cell_value(t, f, (int)idx, &c, out->data);
    /* K2 after the copy too: a bit flipped between the check and the copy
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
        lc->e = e; lc->ecap = cap;
    }
    size_t need = lc->blen + c->klen + c->vlen;
    if (need > lc->bcap) {
        size_t cap = lc->bcap ? lc->bcap : 4096;
        while (cap < need) cap *= 2;
        uint8_t *b = realloc(lc->buf, cap);
        if (!b) return ENG_NOMEM;
        lc->buf = b; lc->bcap = cap;
    }
    bt_entry *e = &lc->e[lc->n++];
    e->koff = lc->blen; e->klen = c->klen;
    memcpy(lc->buf + lc->blen, c->key, c->klen);
    lc->blen += c->klen;
    e->voff = lc->blen; e->vlen = c->vlen;
    lc->blen += c->vlen;
    return ENG_OK;
}

int bt_seek(bt_tree *t, uint64_t snap, const void *key, size_t klen, int mode, bt_leafcopy *lc) {
    int fwd = mode == BT_GE || mode == BT_GT;
    lc->n = 0; lc->blen = 0; lc->forward = fwd;
    fence fc, cur;
    const void *k = key;
    size_t kl = klen;
    for (int hops = 0;; hops++) {
        bp_frame *f;
        int rc = descend(t, k, kl, mode, BP_SHARED, &f, fwd ? &fc : NULL, fwd ? NULL : &fc);
        if (rc) return rc;
        /* K2: a scan copies (nearly) the whole rest of the leaf: prove it
         * whole, once, rather than entry by entry. */
        if ((rc = kv_all(t, f))) { bp_release(t->bp, f, BP_SHARED); lc->n = 0; return rc; }
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
                leaf_cell c0; page_leaf_cell(p, (unsigned)i, &c0);
                for (e = (unsigned)i; e < (unsigned)n; e++) {
                    leaf_cell c; page_leaf_cell(p, e, &c);
                    if (!cell_in_page(t, p, &c) || key_cmp(c.key, c.klen, c0.key, c0.klen)) break;
                }
                i = (int)e;
            }
        } else {
            /* LE: K's group counts; LT: start below it. */
            i = idx;
            if (k && mode == BT_LE && exact) {
                leaf_cell c0; page_leaf_cell(p, (unsigned)i, &c0);
                while (i < n) {
                    leaf_cell c; page_leaf_cell(p, (unsigned)i, &c);
                    if (!cell_in_page(t, p, &c) || key_cmp(c.key, c.klen, c0.key, c0.klen)) break;
                    i++;
                }
            }
            i--; /* last slot of the group before the travel start */
        }
        while (rc == ENG_OK && i >= 0 && i < n) {
            unsigned first = (unsigned)i, end;
            if (!fwd) { /* walk back to the group's newest version */
                leaf_cell c0; page_leaf_cell(p, first, &c0);
                while (first > 0) {
                    leaf_cell c; page_leaf_cell(p, first - 1, &c);
                    if (!cell_in_page(t, p, &c) || key_cmp(c.key, c.klen, c0.key, c0.klen)) break;
                    first--;
                }
            }
            int vs = resolve_key(t, f, first, S, &end);
            if (vs == -2) { rc = ENG_CORRUPTION; break; }
            if (vs >= 0) {
                leaf_cell c;
                page_leaf_cell(p, (unsigned)vs, &c);
                rc = lc_push(lc, &c);
                if (rc == ENG_OK) rc = cell_value(t, f, vs, &c, lc->buf + lc->e[lc->n - 1].voff);
            }
            i = fwd ? (int)end : (int)first - 1;
        }
        /* K2 after the copy too: a bit flipped in the leaf between the
         * check above and the copy is caught, not returned. */
        if (rc == ENG_OK && lc->n) rc = kv_all(t, f);
        bp_release(t->bp, f, BP_SHARED);
        if (rc) { lc->n = 0; return rc; }
        if (lc->n || !fc.set) return ENG_OK;
        /* An empty stretch (lazily unmerged leaves): continue at the fence,
         * which strictly advances, so this ends. */
        if (hops > (int)atomic_load(&t->nblocks) + 1)
            return corrupt(t, ENG_LAYER_STRUCTURE, ROOT_BLOCK, -1, 0, (uint64_t)hops,
                           "separator keys do not advance (cycle in the tree)");
        cur = fc;
        k = cur.key; kl = cur.len;
        mode = fwd ? BT_GE : BT_LT;
    }
}

void bt_leafcopy_free(bt_leafcopy *lc) {
    free(lc->e);
    free(lc->buf);
    memset(lc, 0, sizeof *lc);
}

/* ---- the writer's operation context ----
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
#define MAX_TOUCHED 64

struct bt_wctx {
    bt_tree *t;
    const pa_batch *batch;
    uint32_t op;
    pa_buf rec;
    uint32_t fresh_from;
    bp_frame *touched[MAX_TOUCHED];
    int ntouched;
    uint8_t *zscratch;
    uint64_t end;       /* end LSN of the record, once appended */
};

static int wctx_init(bt_wctx *w, bt_tree *t, const pa_batch *batch, uint32_t op, uint64_t batch_lsn) {
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
    wr64(hdr, batch_lsn);
    wr32(hdr + 8, op);
    if (w->rec.cap < 4096) {
        w->rec.p = malloc(4096);
        if (!w->rec.p) { free(w->zscratch); return ENG_NOMEM; }
        w->rec.cap = 4096;
    }
    memcpy(w->rec.p, hdr, PA_REC_HDR);
    w->rec.len = PA_REC_HDR;
    return ENG_OK;
}

static int touched_has(const bt_wctx *w, const bp_frame *f) {
    for (int i = 0; i < w->ntouched; i++) if (w->touched[i] == f) return 1;
    return 0;
}

/* Called with the operation's latches still held: an operation that
 * fails after changing pages leaves them half-done (a split's halves
 * without the parent's separator hides keys), so the handle is poisoned
 * before any reader can latch them (descend tests the flag under the
 * root's latch).  Returns RC. */
static int fail_op(bt_wctx *w, int rc) {
    if (rc != ENG_OK && rc != ENG_NOTFOUND && (w->rec.len > PA_REC_HDR || w->ntouched > 0) && w->t->cfg.poisoned)
        atomic_store(w->t->cfg.poisoned, 1);
    return rc;
}

/* Before an action on F: register it, and log its image if this is its
 * first change since the checkpoint.  Returns the offset the action will
 * start at. */
static int act_begin(bt_wctx *w, bp_frame *f, int creating, size_t *at) {
    uint32_t blk = atomic_load(&f->block);
    if (!creating) {
        /* The edit functions trust the header (P1); a frame damaged in
         * memory must not turn an edit into a write outside the page. */
        const uint8_t *p = f->data;
        unsigned lo = ph_get_lower(p), up = ph_get_upper(p), ns = ph_get_nslots(p);
        unsigned base = page_base_for(ph_get_type(p), w->t->ps);
        if (lo < base || lo > up || up > w->t->ps || lo != base + 2u * ns || ph_get_frag(p) > w->t->ps - up)
            return corrupt(w->t, ENG_LAYER_STRUCTURE, blk, -1, base + 2u * ns, lo,
                           "page header damaged in the cache");
    }
    if (!creating && !touched_has(w, f)) {
        int rc = kv_all(w->t, f); /* K3: proven before it changes */
        if (rc) return rc;
    }
    if (blk < w->fresh_from && !touched_has(w, f)) {
        if (w->ntouched == MAX_TOUCHED)
            return corrupt(w->t, ENG_LAYER_STRUCTURE, blk, -1, MAX_TOUCHED, MAX_TOUCHED,
                           "one operation touches too many existing pages");
        bp_pin_again(f);
        atomic_store(&f->pending, 1);
        w->touched[w->ntouched++] = f;
        bt_tree *t = w->t;
#ifdef ENG_BROKEN_FPI_SKIPS_PAGE_AT_REDO_LSN
        /* planted bug (tests/mutants.txt): strictly below the redo point,
         * so a page last changed by the record that ends right at the
         * checkpoint (its LSN == redo_lsn) gets no image for its first
         * change after it: a write torn by a crash cannot be rebuilt. */
        if (!creating && t->cfg.full_page_writes &&
            atomic_load(&f->lsn) < atomic_load(t->cfg.redo_lsn)) {
#else
        if (!creating && t->cfg.full_page_writes &&
            atomic_load(&f->lsn) <= atomic_load(t->cfg.redo_lsn)) {
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

static int act_apply(bt_wctx *w, bp_frame *f, size_t at) {
    if (w->rec.oom) return ENG_NOMEM;
    const char *why = "";
    uint32_t blk = atomic_load(&f->block);
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
static int wctx_commit(bt_wctx *w, int ok) {
    int rc = ENG_OK;
    uint64_t start = 0, end = 0;
    if (ok && w->rec.len > PA_REC_HDR) {
        rc = w->t->cfg.log_append(w->t->cfg.log_ctx, WAL_REC_PAGES, w->rec.p, w->rec.len, &start, &end);
        w->end = end;
        if (rc == ENG_OK) {
            for (int i = 0; i < w->ntouched; i++) {
                atomic_store(&w->touched[i]->lsn, end);
                atomic_store(&w->touched[i]->pending, 0);
            }
        }
    } else if (ok) {
        for (int i = 0; i < w->ntouched; i++) atomic_store(&w->touched[i]->pending, 0);
    }
    for (int i = 0; i < w->ntouched; i++) bp_unpin(w->t->bp, w->touched[i]);
    w->ntouched = 0;
    free(w->rec.p);
    free(w->zscratch);
    return rc;
}

/* ---- allocation (writer only; meta latched after the tree pages, L2) ---- */

/* Allocate a block: from the free list while the operation can still pin
 * it, else past the end.  Returns the new page's frame latched
 * exclusively, its contents to be defined by the caller's creating
 * action (which registers it: pending unless fresh).
 *
 * The free list is a chain of trunk pages listing free blocks (page.h).
 * A reused block is pending like any existing page, so it reaches disk
 * only after the record that reuses it, and so after the record that
 * freed it: until then the tree on disk may still point at it. */
static int alloc_page(bt_wctx *w, bp_frame **out) {
    bt_tree *t = w->t;
    bp_frame *m, *f = NULL, *tr = NULL;
    int rc = bp_get(t->bp, META_BLOCK, BP_EXCL, &m);
    if (rc) return rc;
    if ((rc = kv_page(t, m))) { bp_release(t->bp, m, BP_EXCL); return rc; }
    meta_fields mf;
    meta_read(m->data, &mf);
    size_t at;
    int from_free = mf.freelist != 0 && w->ntouched < MAX_TOUCHED - 8 &&
                    (size_t)w->ntouched + 4 < bp_nframes(t->bp) / 4;
    if (from_free) {
        uint32_t trunk = mf.freelist;
        if (trunk <= ROOT_BLOCK || trunk >= mf.nblocks) {
            bp_release(t->bp, m, BP_EXCL);
            return corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, mf.nblocks, trunk, "free list head out of range");
        }
        if ((rc = bp_get(t->bp, trunk, BP_EXCL, &tr))) { bp_release(t->bp, m, BP_EXCL); return rc; }
        if ((rc = kv_page(t, tr))) { bp_release(t->bp, tr, BP_EXCL); bp_release(t->bp, m, BP_EXCL); return rc; }
        uint32_t n = ph_get_aux(tr->data);
        if (ph_get_type(tr->data) != PAGE_FREE || n > FREE_TRUNK_CAP(t->ps)) {
            uint64_t ty = ph_get_type(tr->data);
            bp_release(t->bp, tr, BP_EXCL);
            bp_release(t->bp, m, BP_EXCL);
            return corrupt(t, ENG_LAYER_STRUCTURE, trunk, -1, PAGE_FREE, ty, "free list reaches a page that is not a trunk");
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
            if ((rc = act_begin(w, tr, 0, &at)) == ENG_OK) {
                pa_put_popfree(&w->rec, trunk);
                rc = act_apply(w, tr, at);
            }
            bp_release(t->bp, tr, BP_EXCL);
            /* Its old contents do not matter: the caller defines it. */
            if (rc == ENG_OK) rc = bp_new(t->bp, blk, &f);
            if (rc) { bp_release(t->bp, m, BP_EXCL); return rc; }
        }
    } else {
        if (mf.nblocks == UINT32_MAX) { bp_release(t->bp, m, BP_EXCL); return ENG_NOSPACE; }
        if (mf.nblocks != atomic_load(&t->nblocks)) {
            /* The meta page disagrees with the allocations this handle
             * made: gone back in time (a lost write, a stale page read
             * back) it would hand out blocks in use; damaged upwards (in
             * the cache) it would leap to a block billions away. */
            uint32_t have = atomic_load(&t->nblocks);
            bp_release(t->bp, m, BP_EXCL);
            return corrupt(t, ENG_LAYER_STRUCTURE, META_BLOCK, -1, have, mf.nblocks,
                           "meta page block count disagrees with the blocks allocated (a stale or damaged meta page)");
        }
        rc = bp_new(t->bp, mf.nblocks, &f);
        if (rc) { bp_release(t->bp, m, BP_EXCL); return rc; }
        mf.nblocks++;
    }
    if ((rc = act_begin(w, m, 0, &at)) == ENG_OK) {
        pa_put_meta(&w->rec, mf.nblocks, mf.freelist);
        rc = act_apply(w, m, at);
    }
    if (rc == ENG_OK) atomic_store(&t->nblocks, mf.nblocks);
    bp_release(t->bp, m, BP_EXCL);
    if (rc) { bp_release(t->bp, f, BP_EXCL); return rc; }
    *out = f;
    return ENG_OK;
}

/* Put the N blocks in BLOCKS on the free list: appended to the head trunk
 * (the pages themselves are not written); a block that finds the trunk
 * full becomes the new head trunk. */
static int free_pages(bt_wctx *w, const uint32_t *blocks, int n) {
    bt_tree *t = w->t;
    if (n == 0) return ENG_OK;
    bp_frame *m, *tr = NULL;
    int rc = bp_get(t->bp, META_BLOCK, BP_EXCL, &m);
    if (rc) return rc;
    if ((rc = kv_page(t, m))) { bp_release(t->bp, m, BP_EXCL); return rc; }
    meta_fields mf;
    meta_read(m->data, &mf);
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
            rc = corrupt(t, ENG_LAYER_STRUCTURE, mf.freelist, -1, cap, ph_get_aux(tr->data), "free-list trunk count damaged");
            break;
        }
        if (tr && ph_get_aux(tr->data) < cap) {
            if ((rc = act_begin(w, tr, 0, &at)) == ENG_OK) {
                pa_put_pushfree(&w->rec, mf.freelist, blocks[i]);
                rc = act_apply(w, tr, at);
            }
            continue;
        }
        bp_frame *f;
        if ((rc = bp_new(t->bp, blocks[i], &f))) break;
        if ((rc = act_begin(w, f, 1, &at)) == ENG_OK) {
            pa_put_free(&w->rec, blocks[i], mf.freelist);
            rc = act_apply(w, f, at);
        }
        if (tr) bp_release(t->bp, tr, BP_EXCL);
        tr = f;
        if (rc == ENG_OK) mf.freelist = blocks[i];
    }
    if (tr) bp_release(t->bp, tr, BP_EXCL);
    if (rc == ENG_OK && (rc = act_begin(w, m, 0, &at)) == ENG_OK) {
        pa_put_meta(&w->rec, mf.nblocks, mf.freelist);
        rc = act_apply(w, m, at);
    }
    fail_op(w, rc);
    bp_release(t->bp, m, BP_EXCL);
    return rc;
}

/* Write op's value into a new overflow chain, back to front so each page
 * is created knowing its successor; *first gets the head. */
static int ovfl_write(bt_wctx *w, uint32_t *first) {
    bt_tree *t = w->t;
    const pa_op *o = &w->batch->ops[w->op];
    int npages = ovfl_pages(t, o->vlen);
    uint32_t next = 0;
    for (int i = npages - 1; i >= 0; i--) {
        bp_frame *f;
        int rc = alloc_page(w, &f);
        if (rc) return rc;
        uint32_t blk = atomic_load(&f->block);
        size_t off = (size_t)i * t->ovfl_cap, len = o->vlen - off < t->ovfl_cap ? o->vlen - off : t->ovfl_cap;
        size_t at;
        if ((rc = act_begin(w, f, 1, &at)) == ENG_OK) {
            pa_put_ovfl(&w->rec, blk, next, NULL, (uint32_t)len, w->op, (uint32_t)off);
            rc = act_apply(w, f, at);
        }
        bp_release(t->bp, f, BP_EXCL);
        if (rc) return rc;
        atomic_fetch_add_explicit(&t->ovfl_written, 1, memory_order_relaxed);
        next = blk;
    }
    *first = next;
    return ENG_OK;
}

/* ---- writes ---- */

/* A cell to insert: its bytes (for sizes and splits) and how the action
 * names it (from the batch op, or explicit bytes for separators). */
typedef struct newcell {
    uint8_t bytes[LEAF_CELL_HDR + ENG_MAX_KEY + 4096 + 8];
    size_t size;
    int from_op;
    uint32_t ovfl;
} newcell;

typedef struct cellref { const uint8_t *p; size_t size; } cellref;

/* Cells of P with NEW at IDX (replacing IDX if REPLACE). */
static size_t gather(const uint8_t *p, unsigned idx, int replace, const uint8_t *cell, size_t csize,
                     cellref *out) {
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
        if (diff < bestdiff) { bestdiff = diff; best = m; }
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
            if (key_cmp(c[b - 1].p + LEAF_CELL_HDR, rd16(c[b - 1].p), c[b].p + LEAF_CELL_HDR, rd16(c[b].p)) == 0)
                continue;
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

typedef struct pathent { bp_frame *f; } pathent;

static void put_cell_action(bt_wctx *w, int split, uint32_t blk, unsigned idx, int replace,
                            unsigned m, uint32_t next, const newcell *nc) {
    const uint8_t *cell = nc->from_op ? NULL : nc->bytes;
    if (split) pa_put_split(&w->rec, blk, idx, replace, m, next, cell, nc->size, w->op, nc->ovfl);
    else pa_put_insert(&w->rec, blk, idx, replace, cell, nc->size, w->op, nc->ovfl);
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
        if ((rc = act_begin(w, f, 0, &at))) return rc;
        put_cell_action(w, 0, blk, idx, replace, 0, 0, nc);
        return act_apply(w, f, at);
    }
    int leaf = ph_get_type(p) == PAGE_LEAF;
    int level = ph_get_level(p);
    if ((rc = kv_all(t, f))) return rc; /* K3: a split copies every entry */
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
    if (!cells || !right || !lefti || !sep) { rc = ENG_NOMEM; goto out; }
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
        if ((rc = alloc_page(w, &lf)) || (rc = alloc_page(w, &rf))) goto out;
        uint32_t lb = atomic_load(&lf->block), rb = atomic_load(&rf->block);
        ph_set_block(lefti, lb);
        ph_set_next(lefti, rb);
        ph_set_block(right, rb);
        ph_set_next(right, 0);
        if ((rc = act_begin(w, lf, 1, &at))) goto out;
        pa_put_image(&w->rec, lb, lefti, (uint32_t)ps, t->cfg.wal_compression);
        if ((rc = act_apply(w, lf, at))) goto out;
        if ((rc = act_begin(w, rf, 1, &at))) goto out;
        pa_put_image(&w->rec, rb, right, (uint32_t)ps, t->cfg.wal_compression);
        if ((rc = act_apply(w, rf, at))) goto out;
        if ((rc = act_begin(w, f, 1, &at))) goto out;
        pa_put_init(&w->rec, ROOT_BLOCK, PAGE_INTERNAL, level + 1, 0, lb);
        if ((rc = act_apply(w, f, at))) goto out;
        sep->size = internal_cell_encode(sep->bytes, skey, skl, rb);
        sep->from_op = 0;
        sep->ovfl = 0;
        if ((rc = act_begin(w, f, 0, &at))) goto out;
        put_cell_action(w, 0, ROOT_BLOCK, 0, 0, 0, 0, sep);
        rc = act_apply(w, f, at);
        goto out;
    }
    if ((rc = alloc_page(w, &rf))) goto out;
    uint32_t rb = atomic_load(&rf->block);
    ph_set_block(right, rb);
    if ((rc = act_begin(w, rf, 1, &at))) goto out;
    pa_put_image(&w->rec, rb, right, (uint32_t)ps, t->cfg.wal_compression);
    if ((rc = act_apply(w, rf, at))) goto out;
    bp_release(t->bp, rf, BP_EXCL);
    rf = NULL;
    if ((rc = act_begin(w, f, 0, &at))) goto out;
    put_cell_action(w, 1, blk, idx, replace, (unsigned)m, rb, nc);
    if ((rc = act_apply(w, f, at))) goto out;
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
    free(cells); free(right); free(lefti); free(sep);
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
    if ((rc = check_root(t, path[0].f))) { bp_release(t->bp, path[0].f, BP_EXCL); return rc; }
    while (ph_get_level(path[d].f->data) > 0) {
        int slot;
        uint32_t blk = atomic_load(&path[d].f->block);
        int level = ph_get_level(path[d].f->data);
        uint32_t child = child_for(path[d].f->data, o->key, o->klen, BT_GE, &slot);
        if ((rc = check_child_ptr(t, blk, child, slot))) goto out;
        for (int i = 0; i < d; i++) /* every ancestor is latched: a cycle would wait on itself */
            if (atomic_load(&path[i].f->block) == child) {
                rc = corrupt(t, ENG_LAYER_STRUCTURE, blk, slot, 0, child, "child pointer names an ancestor (a cycle)");
                goto out;
            }
        if (d + 1 >= MAX_DEPTH) { rc = corrupt(t, ENG_LAYER_STRUCTURE, blk, -1, MAX_DEPTH, d, "tree too deep"); goto out; }
        rc = bp_get(t->bp, child, BP_EXCL, &path[d + 1].f);
        if (rc) goto out;
        d++;
        if ((rc = check_child_page(t, path[d].f, blk, level - 1))) { bp_release(t->bp, path[d].f, BP_EXCL); d--; goto out; }
    }
    rc = leaf_put(w, path, d, nc, 0, oldb, oldn);
out:
    fail_op(w, rc);
    for (int i = d; i >= 0; i--) bp_release(t->bp, path[i].f, BP_EXCL);
    return rc;
}

/* Collect (and so validate) the old chain of a cell before anything
 * changes, so a broken chain fails the write cleanly. */
static int old_chain(bt_tree *t, uint32_t leaf, int slot, uint32_t first, uint32_t vlen, uint32_t **blocks, int *n) {
    *n = ovfl_pages(t, vlen);
    *blocks = malloc(sizeof(uint32_t) * (size_t)(*n ? *n : 1));
    if (!*blocks) return ENG_NOMEM;
    int rc = ovfl_walk(t, leaf, slot, first, vlen, NULL, *blocks);
    if (rc) { free(*blocks); *blocks = NULL; }
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
        if (!cell_in_page(t, p, &c))
            return corrupt(t, ENG_LAYER_STRUCTURE, atomic_load(&f->block), (int32_t)i, 0, 0, "cell runs off its page in the cache");
        if (key_cmp(c.key, c.klen, o->key, o->klen) != 0) break;
        if (c.xmin != me && !xid_committed(t, c.xmin)) continue; /* aborted */
        if (c.xmax == 0 || (c.xmax != me && !xid_committed(t, c.xmax))) *live = (int)i;
        break;
    }
    return ENG_OK;
}

/* A version no snapshot can see: its writer aborted, or its deleter
 * committed at or below the horizon.  ME: the writer's own id (0: none). */
static int version_dead(const bt_tree *t, const leaf_cell *c, uint64_t horizon, uint64_t me) {
    if (c->xmin != 0 && c->xmin != me && !xid_committed(t, c->xmin)) return 1;
    return c->xmax != 0 && c->xmax != me && c->xmax <= horizon && xid_committed(t, c->xmax);
}

/* Remove dead versions of leaf F (latched exclusively) and free their
 * overflow chains; *live (a slot, or -1) is kept pointing at its version.
 * KEEP_NEED: stop once NEED bytes are reclaimable (0: remove all). */
static int prune_range(bt_wctx *w, bp_frame *f, uint64_t horizon, uint64_t me, size_t need, int *live,
                       int lo, int hi, uint64_t *removed, uint64_t *freed) {
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
        if (!cell_in_page(t, p, &c)) {
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
                if (!x) { free(b); rc = ENG_NOMEM; break; }
                chains = x;
            }
            memcpy(chains + nch, b, (size_t)nb * sizeof *b);
            nch += (size_t)nb;
            free(b);
        }
        size_t at;
        if ((rc = act_begin(w, f, 0, &at))) break;
        pa_put_remove(&w->rec, blk, (unsigned)i);
        if ((rc = act_apply(w, f, at))) break;
        if (live && *live > i) (*live)--;
        if (removed) (*removed)++;
        atomic_fetch_add_explicit(&t->pruned, 1, memory_order_relaxed);
    }
    if (rc == ENG_OK && nch) {
        rc = free_pages(w, chains, (int)nch);
        if (freed) *freed += nch;
    }
    free(chains);
    return rc;
}

static int prune_leaf(bt_wctx *w, bp_frame *f, uint64_t horizon, uint64_t me, size_t need, int *live,
                      uint64_t *removed, uint64_t *freed) {
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
        if (!cell_in_page(w->t, p, &c) || key_cmp(c.key, c.klen, o->key, o->klen)) break;
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
        if ((rc = descend(t, o->key, o->klen, BT_GE, BP_EXCL, &f, NULL, NULL))) return rc;
        idx = page_search(f->data, o->key, o->klen, &exact);
        if ((rc = writer_resolve(w, f, idx, exact, &live)) == ENG_OK && exact) rc = prune_key(w, f, idx, &live);
        fail_op(w, rc);
        bp_release(t->bp, f, BP_EXCL);
        if (rc) return rc;
        if ((rc = ovfl_write(w, &nc.ovfl))) return rc;
    }
    nc.size = pa_op_cell(w->batch, w->op, nc.ovfl, nc.bytes, sizeof nc.bytes);
    if (!nc.size) return ENG_INVALID;

    /* Optimistic: shared latches down, exclusive leaf. */
    rc = descend(t, o->key, o->klen, BT_GE, BP_EXCL, &f, NULL, NULL);
    if (rc) return rc;
    uint32_t *oldb = NULL;
    int oldn = 0;
    pathent path1[1] = {{f}};
    rc = leaf_put(w, path1, 0, &nc, 1, &oldb, &oldn);
    if (rc != 1) fail_op(w, rc);
    bp_release(t->bp, f, BP_EXCL);
    if (rc == 1) rc = put_pessimistic(w, &nc, &oldb, &oldn);
    /* The batch's own earlier version of the key was replaced: nobody
     * could ever see it, so its chain is free at once. */
    if (rc == ENG_OK && oldn) rc = free_pages(w, oldb, oldn);
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
            if (oc.xmin == me) { own = (int)idx; ownsz = oc.size; }
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
            if ((rc = act_begin(w, f, 0, &at))) return rc;
            pa_put_setxmax(&w->rec, atomic_load(&f->block), (unsigned)live, me);
            if ((rc = act_apply(w, f, at))) return rc;
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
    int rc = descend(t, o->key, o->klen, BT_GE, BP_EXCL, &f, NULL, NULL);
    if (rc) return rc;
    if ((rc = kv_all(t, f))) { bp_release(t->bp, f, BP_EXCL); return rc; }
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
            if ((rc = act_begin(w, f, 0, &at)) == ENG_OK) {
                pa_put_setxmax(&w->rec, atomic_load(&f->block), (unsigned)live, w->batch->seq);
                rc = act_apply(w, f, at);
            }
        }
    }
    fail_op(w, rc);
    bp_release(t->bp, f, BP_EXCL);
    return rc;
}

int bt_apply_op(bt_tree *t, const pa_batch *batch, uint32_t op, uint64_t batch_lsn, int *changed) {
    *changed = 0;
    if (!batch || op >= batch->nops) return ENG_INVALID;
    bt_wctx w;
    int rc = wctx_init(&w, t, batch, op, batch_lsn);
    if (rc) return rc;
    rc = batch->ops[op].kind == BOP_PUT ? do_put(&w) : do_delete(&w);
    int ok = rc == ENG_OK || rc == ENG_NOTFOUND;
    *changed = w.rec.len > PA_REC_HDR || w.ntouched > 0;
    int crc = wctx_commit(&w, ok);
    return crc ? crc : rc;
}

/* ---- the commit log ---- */

int bt_commit(bt_tree *t, uint64_t xid, uint64_t batch_lsn, int status, uint64_t *end, int *changed) {
    *changed = 0;
    *end = 0;
    const uint32_t per = CLOG_PER_PAGE(t->ps);
    uint64_t pi = xid / per;
    if (pi >= META_CLOG_CAP(t->ps)) return ENG_NOSPACE;
    bt_wctx w;
    int rc = wctx_init(&w, t, NULL, status == CLOG_COMMITTED ? PA_OP_COMMIT : PA_OP_ABORT, batch_lsn);
    if (rc) return rc;
    bp_frame *f = NULL, *m = NULL;
    size_t at;
    /* The first id of a log page creates it (and, after a restart moved
     * ids past the lease, any page skipped: empty, nobody committed there),
     * named in the meta page's directory, in this same record. */
    while (rc == ENG_OK && t->clog_n <= pi) {
        bp_frame *g;
        uint32_t idx = t->clog_n;
        if ((rc = alloc_page(&w, &g)) != ENG_OK) break;
        uint32_t blk = atomic_load(&g->block);
        if ((rc = act_begin(&w, g, 1, &at)) == ENG_OK) {
            pa_put_init(&w.rec, blk, PAGE_CLOG, 0, 0, idx);
            rc = act_apply(&w, g, at);
        }
        if (rc == ENG_OK && (rc = bp_get(t->bp, META_BLOCK, BP_EXCL, &m)) == ENG_OK) {
            /* K3 again: act_begin proves a page at its first change in an
             * operation only, and the meta page was unlatched in between
             * when this commit creates more than one log page. */
            if ((rc = kv_page(t, m)) == ENG_OK && (rc = act_begin(&w, m, 0, &at)) == ENG_OK) {
                pa_put_clogdir(&w.rec, idx, blk);
                rc = act_apply(&w, m, at);
            }
            bp_release(t->bp, m, BP_EXCL);
        }
        if (rc == ENG_OK) rc = clog_dir_push(t, blk);
        if (rc == ENG_OK && idx == pi) f = g;
        else bp_release(t->bp, g, BP_EXCL);
    }
    if (rc == ENG_OK && !f) {
        rc = bp_get(t->bp, t->clog_dir[pi], BP_EXCL, &f);
        if (rc == ENG_OK && (ph_get_type(f->data) != PAGE_CLOG || ph_get_aux(f->data) != pi)) {
            uint64_t found = (uint64_t)ph_get_type(f->data) << 32 | ph_get_aux(f->data);
            bp_release(t->bp, f, BP_EXCL);
            f = NULL;
            rc = corrupt(t, ENG_LAYER_VERSION, t->clog_dir[pi], -1, pi, found,
                         "commit-log directory names a page that is not that commit-log page");
        }
    }
    if (rc == ENG_OK && (rc = act_begin(&w, f, 0, &at)) == ENG_OK) {
        pa_put_clogset(&w.rec, atomic_load(&f->block), (uint32_t)(xid % per), status);
        rc = act_apply(&w, f, at);
    }
    fail_op(&w, rc);
    if (f) bp_release(t->bp, f, BP_EXCL);
    *changed = w.rec.len > PA_REC_HDR || w.ntouched > 0;
    int crc = wctx_commit(&w, rc == ENG_OK);
    if (rc == ENG_OK && crc == ENG_OK) {
        *end = w.end;
        return txn_set_status(t->cfg.txn, xid, status);
    }
    return crc ? crc : rc;
}

/* ---- vacuum ---- */

int bt_vacuum_leaf(bt_tree *t, const bt_cursor *at_key, uint64_t horizon, uint64_t freeze_below,
                   bt_cursor *next, bt_vac_stats *st, int *changed) {
    *changed = 0;
    next->set = 0;
    fence hi;
    bp_frame *f;
    int rc = descend(t, at_key && at_key->set ? at_key->key : NULL, at_key && at_key->set ? at_key->len : 0,
                     BT_GE, BP_EXCL, &f, &hi, NULL);
    if (rc) return rc;
    if (hi.set) { memcpy(next->key, hi.key, hi.len); next->len = hi.len; next->set = 1; }
    if ((rc = kv_all(t, f))) { bp_release(t->bp, f, BP_EXCL); return rc; }
    bt_wctx w;
    if ((rc = wctx_init(&w, t, NULL, PA_OP_MAINT, 0))) { bp_release(t->bp, f, BP_EXCL); return rc; }
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
            if ((rc = act_begin(&w, f, 0, &at))) break;
            pa_put_freeze(&w.rec, blk, i);
            if ((rc = act_apply(&w, f, at))) break;
            st->frozen++;
            page_leaf_cell(p, i, &c);
        }
        /* Hints: what every snapshot would learn (horizon bounds it). */
        uint64_t before = atomic_load(&t->hints_set);
        if (version_state(t, f, i, &c, horizon, 1) < 0) { rc = ENG_CORRUPTION; break; }
        st->hinted += atomic_load(&t->hints_set) - before;
    }
    fail_op(&w, rc);
    bp_release(t->bp, f, BP_EXCL);
    *changed = w.rec.len > PA_REC_HDR || w.ntouched > 0;
    int crc = wctx_commit(&w, rc == ENG_OK);
    return crc ? crc : rc;
}

/* ---- verify ---- */

/* What references a block (a free list's trunk pages are USE_FREE, the
 * blocks they list USE_FREED: only the first kind refers to others). */
enum { USE_NONE = 0, USE_META, USE_TREE, USE_OVFL, USE_FREE, USE_CLOG, USE_FREED };

/* Unchecked pages.  A page whose own bytes failed (checksum, header, zero,
 * a per-entry code) or could not be read is reported once, for itself,
 * and then treated as unknown: no check that needs its contents runs, and
 * no check that pairs it with another page blames the other one.
 *   V1  a subtree that is not walked (its page unchecked, or not a node
 *       of its place) leaves the leaf chain unknown across it: the next
 *       leaf's predecessor is not compared (its link may rightly name a
 *       leaf the walk skipped);
 *   V2  an unchecked page that refers to others (a tree node, an overflow
 *       page, a free-list trunk) hides what it refers to: the
 *       unreachable-block check is skipped, not run to blame those blocks;
 *   V3  the unchecked pages are listed (eng_verify_info), so a verify with
 *       them is never read as a complete check of the rest. */
typedef struct vstate {
    bt_tree *t;
    const eng_reporter *rep;
    uint64_t problems;
    uint32_t nblocks;
    uint8_t *use;     /* per block: what references it */
    uint8_t *bad;     /* per block: failed its own checks or could not be
                       * read (unchecked) */
    uint32_t prev_leaf; /* UINT32_MAX: none, or unknown (V1) */
    int leaves_seen;
    int refs_unknown; /* V2 */
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
        if (v->use[blk] != USE_CLOG && v->use[blk] != USE_FREED) v->refs_unknown = 1; /* V2 */
    }
    return rc;
}

static void vreport(vstate *v, int layer, uint32_t block, int32_t entry, uint64_t exp, uint64_t found,
                    const char *fmt, const char *arg) {
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
    if (v->bad[b] && use != USE_CLOG && use != USE_FREED) v->refs_unknown = 1; /* V2 */
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
        int ok = ph_get_type(p) == PAGE_OVERFLOW && ph_get_aux(p) == want &&
                 (i + 1 < npages) == (ph_get_next(p) != 0);
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

/* Check the subtree at BLK (LEVEL expected) whose keys lie in [lo, hi). */
static void verify_node(vstate *v, uint32_t blk, int level, const uint8_t *lo, size_t lol,
                        const uint8_t *hi, size_t hil, uint32_t parent) {
    bt_tree *t = v->t;
    /* Any return before this node is walked leaves the leaf chain unknown
     * across it (V1). */
    if (!claim(v, blk, USE_TREE, parent)) { v->prev_leaf = UINT32_MAX; return; }
    bp_frame *f;
    if (vget(v, blk, &f)) { v->prev_leaf = UINT32_MAX; return; }
    if (kv_all(t, f)) {
        bp_release(t->bp, f, BP_SHARED);
        v->problems++;
        v->bad[blk] = 1;
        v->refs_unknown = 1;
        v->prev_leaf = UINT32_MAX;
        return;
    }
    uint8_t *p = malloc(t->ps);
    if (!p) { bp_release(t->bp, f, BP_SHARED); if (!v->err) v->err = ENG_NOMEM; return; }
    memcpy(p, f->data, t->ps);
    bp_release(t->bp, f, BP_SHARED);
    int want = level == 0 ? PAGE_LEAF : PAGE_INTERNAL;
    if (ph_get_type(p) != want || ph_get_level(p) != level) {
        vreport(v, ENG_LAYER_STRUCTURE, blk, -1, (uint64_t)want << 16 | (unsigned)level,
                (uint64_t)ph_get_type(p) << 16 | ph_get_level(p), "%spage has the wrong type or level for its place", "");
        free(p);
        v->refs_unknown = 1; /* its children, if it has any, are not followed */
        v->prev_leaf = UINT32_MAX;
        return;
    }
    unsigned n = ph_get_nslots(p);
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *k; size_t kl;
        if (level == 0) { leaf_cell c; page_leaf_cell(p, i, &c); k = c.key; kl = c.klen; }
        else { internal_cell c; page_internal_cell(p, i, &c); k = c.key; kl = c.klen; }
        if ((lo && key_cmp(k, kl, lo, lol) < 0) || (hi && key_cmp(k, kl, hi, hil) >= 0)) {
            vreport(v, ENG_LAYER_STRUCTURE, blk, (int32_t)i, 0, 0, "%skey outside the range its parent gives", "");
            break;
        }
    }
    if (level == 0) {
        v->leaves_seen++;
        const uint64_t lc = txn_last_committed(t->cfg.txn);
        int live_in_group = 0;
        for (unsigned i = 0; i < n; i++) {
            leaf_cell c;
            page_leaf_cell(p, i, &c);
            /* Versions against the commit log (amcheck's heapam checks). */
            unsigned h = page_hint(p, i);
            int xc = xid_committed(t, c.xmin);
            if (i > 0) {
                leaf_cell pc;
                page_leaf_cell(p, i - 1, &pc);
                if (key_cmp(pc.key, pc.klen, c.key, c.klen)) live_in_group = 0;
            }
            if (c.xmin != 0 && c.xmax != 0 && c.xmax < c.xmin)
                vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, c.xmin, c.xmax, "%sversion deleted before it was written (xmax < xmin)", "");
            if (c.xmin != 0 && c.xmin <= lc && h != HINT_NONE && (h == HINT_XMIN_A) == xc)
                vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, xc, h, "%shint bits disagree with the commit log about xmin", "");
            if (c.xmax != 0 && c.xmax <= lc && (h == HINT_XMAX_C || h == HINT_XMAX_A) &&
                (h == HINT_XMAX_C) != xid_committed(t, c.xmax))
                vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, xid_committed(t, c.xmax), h,
                        "%shint bits disagree with the commit log about xmax", "");
            if (xc && (c.xmax == 0 || !xid_committed(t, c.xmax)) && live_in_group++)
                vreport(v, ENG_LAYER_VERSION, blk, (int32_t)i, 1, (uint64_t)live_in_group,
                        "%smore than one live version of a key", "");
            if (c.cflags & CELL_OVERFLOW) verify_chain(v, blk, (int)i, c.ovfl, c.vlen);
            else if (c.vlen > t->max_inline)
                vreport(v, ENG_LAYER_STRUCTURE, blk, (int32_t)i, t->max_inline, c.vlen, "%sinline value too large", "");
        }
        /* Leaf chain: this leaf must be the successor named by the last
         * (unless the walk skipped something since: V1). */
        if (v->prev_leaf != UINT32_MAX && !v->err) {
            bp_frame *pf;
            if (!v->bad[v->prev_leaf] && vget(v, v->prev_leaf, &pf) == ENG_OK) {
                uint32_t nx = ph_get_next(pf->data);
                bp_release(t->bp, pf, BP_SHARED);
                if (nx != blk)
                    vreport(v, ENG_LAYER_STRUCTURE, v->prev_leaf, -1, blk, nx, "%sleaf sibling link skips a leaf", "");
            }
        }
        v->prev_leaf = blk;
        free(p);
        return;
    }
    /* Internal: children left to right with their fences. */
    uint32_t child = ph_get_aux(p);
    const uint8_t *clo = lo; size_t clol = lol;
    for (unsigned i = 0; i <= n; i++) {
        const uint8_t *chi = hi; size_t chil = hil;
        internal_cell c = {0};
        if (i < n) { page_internal_cell(p, i, &c); chi = c.key; chil = c.klen; }
        verify_node(v, child, level - 1, clo, clol, chi, chil, blk);
        if (i < n) { clo = c.key; clol = c.klen; child = c.child; }
    }
    free(p);
}

int bt_verify(bt_tree *t, const eng_reporter *rep, uint64_t *problems, eng_verify_info *info) {
    vstate v = {.t = t, .rep = rep, .nblocks = atomic_load(&t->nblocks), .prev_leaf = UINT32_MAX};
    v.use = calloc(v.nblocks ? v.nblocks : 1, 1);
    v.bad = calloc(v.nblocks ? v.nblocks : 1, 1);
    uint8_t *buf = malloc(t->ps);
    if (!v.use || !v.bad || !buf) { free(v.use); free(v.bad); free(buf); return ENG_NOMEM; }

    /* 1. Every block as stored (pg_checksums). */
    for (uint32_t b = 0; b < v.nblocks; b++) {
        page_problem pr;
        int rc = bp_check_block(t->bp, b, buf, &pr);
        if (rc == ENG_CORRUPTION) {
            eng_report(rep, pr.layer, t->cfg.file, b,
                       (int64_t)b * t->ps + (pr.offset >= 0 ? pr.offset : 0), pr.entry,
                       pr.expected, pr.found, "%s", pr.detail);
            v.problems++;
            v.bad[b] = 1;
        } else if (rc != ENG_OK) {
            free(v.use); free(v.bad); free(buf);
            return rc;
        }
    }
    /* 2. The tree (amcheck): shape, order, fences, chains, leaf links. */
    v.use[META_BLOCK] = USE_META;
    if (!v.bad[META_BLOCK] && !v.bad[ROOT_BLOCK]) {
        bp_frame *r;
        if (vget(&v, ROOT_BLOCK, &r) == ENG_OK) {
            int level = ph_get_level(r->data);
            bp_release(t->bp, r, BP_SHARED);
            verify_node(&v, ROOT_BLOCK, level, NULL, 0, NULL, 0, META_BLOCK);
            if (v.prev_leaf != UINT32_MAX && !v.bad[v.prev_leaf] && !v.err) {
                bp_frame *lf;
                if (vget(&v, v.prev_leaf, &lf) == ENG_OK) {
                    uint32_t nx = ph_get_next(lf->data);
                    bp_release(t->bp, lf, BP_SHARED);
                    if (nx != 0)
                        vreport(&v, ENG_LAYER_STRUCTURE, v.prev_leaf, -1, 0, nx, "%slast leaf has a right sibling", "");
                }
            }
        }
        /* 3. The free list: trunks and the blocks they list. */
        bp_frame *m;
        if (vget(&v, META_BLOCK, &m) == ENG_OK) {
            meta_fields mf;
            meta_read(m->data, &mf);
            uint32_t *cl = calloc(mf.clog_pages + 1u, sizeof *cl);
            for (uint32_t i = 0; cl && i < mf.clog_pages; i++) cl[i] = meta_clog_block(m->data, i);
            bp_release(t->bp, m, BP_SHARED);
            /* The commit log's pages: each the page its directory names. */
            for (uint32_t i = 0; cl && i < mf.clog_pages; i++) {
                if (!claim(&v, cl[i], USE_CLOG, META_BLOCK)) continue;
                bp_frame *f;
                if (vget(&v, cl[i], &f)) continue;
                int ok = ph_get_type(f->data) == PAGE_CLOG && ph_get_aux(f->data) == i;
                bp_release(t->bp, f, BP_SHARED);
                if (!ok) vreport(&v, ENG_LAYER_VERSION, cl[i], -1, i, 0, "%scommit-log directory names a page that is not that commit-log page", "");
            }
            free(cl);
            for (uint32_t b = mf.freelist; b; ) {
                if (!claim(&v, b, USE_FREE, META_BLOCK)) break;
                bp_frame *f;
                if (vget(&v, b, &f)) break;
                int ok = ph_get_type(f->data) == PAGE_FREE;
                uint32_t next = ph_get_next(f->data), cnt = ok ? ph_get_aux(f->data) : 0;
                uint32_t *ents = malloc(sizeof(uint32_t) * (cnt ? cnt : 1));
                for (uint32_t i = 0; ents && i < cnt; i++) ents[i] = rd32(f->data + PAGE_HDR + 4u * i);
                bp_release(t->bp, f, BP_SHARED);
                if (!ok) { free(ents); vreport(&v, ENG_LAYER_STRUCTURE, b, -1, PAGE_FREE, 0, "%sfree list reaches a page that is not a trunk", ""); break; }
                /* Listed blocks keep stale contents: only their checksums
                 * (step 1) and their single ownership are checked. */
                for (uint32_t i = 0; ents && i < cnt; i++) claim(&v, ents[i], USE_FREED, b);
                free(ents);
                b = next;
            }
        }
        /* 4. Leaks: allocated blocks nothing refers to (only after a
         * complete walk: an unchecked page hides what it refers to, V2). */
        if (v.err || v.refs_unknown) {
            if (info) info->leaks_skipped = 1;
        } else {
            for (uint32_t b = 0; b < v.nblocks; b++)
                if (!v.use[b] && !v.bad[b])
                    vreport(&v, ENG_LAYER_STRUCTURE, b, -1, 0, 0, "%sblock is allocated but unreachable", "");
        }
    } else if (info) {
        info->tree_skipped = 1;
        info->leaks_skipped = 1;
    }
    if (info) /* V3 */
        for (uint32_t b = 0; b < v.nblocks; b++)
            if (v.bad[b]) {
                if (info->unchecked < ENG_VERIFY_UNCHECKED_LIST) info->unchecked_blocks[info->unchecked] = b;
                info->unchecked++;
            }
    free(v.use); free(v.bad); free(buf);
    *problems = v.problems;
    if (v.err) return v.err;
    return v.problems ? ENG_CORRUPTION : ENG_OK;
}
