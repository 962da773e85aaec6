/*
 * btree_int.h -- what the B+tree's own files share (SQLite's btreeInt.h):
 * the tree handle, the writer's operation context, and the few helpers
 * one file defines and another calls.  Only btree.c and btree_*.c
 * include it; the tree's contract with the rest of the engine is btree.h,
 * and everything not declared here stays static in its file.
 *
 *   btree.c          the tree: create and open, versions and visibility
 *                    (hint bits), descent, reads and iteration
 *   btree_wctx.c     the writer's operation context: every page change of
 *                    a tree operation is a logged action (write-ahead rule,
 *                    full-page images)
 *   btree_alloc.c    allocation, the free list, overflow chains
 *   btree_write.c    puts and deletes as versions, splits between keys,
 *                    pruning, vacuum of a leaf
 *   btree_clog.c     the commit log's pages and their directory
 *   btree_verify.c   verify of the whole file and tree (BV1-BV3)
 */
#ifndef ENGINE_BTREE_INT_H
#define ENGINE_BTREE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "btree.h"
#include "page.h"
#include "pageop.h"

#define MAX_DEPTH  32
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
    unsigned kvw; /* per-KV protection width (0: off) */
    /* The commit log's directory (mirror of the meta page's; writer and
     * open only). */
    uint32_t *clog_dir;
    uint32_t clog_n, clog_cap;
};

static inline int corrupt(bt_tree *t, int layer, uint32_t block, int32_t entry, uint64_t exp, uint64_t found,
                          const char *what) {
    return eng_report(&t->cfg.reporter, layer, t->cfg.file, block, (int64_t)block * t->ps, entry, exp, found, "%s",
                      what);
}

/* Per-KV checks (kvprot.h KV1-KV3); free when protection is off. */
static inline int kv_page(bt_tree *t, bp_frame *f) { return t->kvw ? bp_kv_check_page(t->bp, f) : ENG_OK; }
static inline int kv_entry(bt_tree *t, bp_frame *f, int slot) {
    return t->kvw && slot >= 0 ? bp_kv_check_entry(t->bp, f, (unsigned)slot) : ENG_OK;
}
static inline int kv_all(bt_tree *t, bp_frame *f) { return t->kvw ? bp_kv_check_all(t->bp, f) : ENG_OK; }

/* ---- versions (btree.c) ---- */

enum { V_INVISIBLE = 0, V_VISIBLE, V_DELETED };

static inline int xid_committed(const bt_tree *t, uint64_t xid) {
    return txn_status(t->cfg.txn, xid) == CLOG_COMMITTED;
}

/* State of the version at SLOT (cell C) of leaf F, latched, for a reader
 * at snapshot S: V_*, or -1 after reporting damaged hint bits. */
enum { BT_VS_READ = 0, BT_VS_LEARN = 1, BT_VS_PROBE = 2 };
int bt_version_state(bt_tree *t, bp_frame *f, unsigned slot, const leaf_cell *c, uint64_t S, int how);
/* A cell of a cached page lies within it (checked before its bytes are
 * copied). */
int bt_cell_in_page(const bt_tree *t, const uint8_t *p, const leaf_cell *c);

/* ---- descent (btree.c) ---- */

/* A fence key of a leaf, returned by bt_descend. */
typedef struct fence {
    uint8_t key[ENG_MAX_KEY];
    size_t len;
    int set;
} fence;

int bt_descend(bt_tree *t, const void *key, size_t klen, int mode, int leaf_mode, bp_frame **out, fence *hi, fence *lo);
/* The steps of a descent, for the writer's pessimistic path. */
uint32_t bt_child_for(const uint8_t *p, const void *key, size_t klen, int mode, int *slot);
/* The same, prefetching SIDE's line for the chosen slot (page_search_side). */
uint32_t bt_child_for_side(const uint8_t *p, const void *key, size_t klen, int mode, int *slot, const uint8_t *side,
                           unsigned stride);
int bt_check_child_ptr(bt_tree *t, uint32_t parent, uint32_t child, int slot);
int bt_check_child_page(bt_tree *t, const bp_frame *f, uint32_t parent, int level);
int bt_check_root(bt_tree *t, const bp_frame *f);

/* ---- overflow chains (btree_alloc.c) ---- */

static inline int ovfl_pages(const bt_tree *t, uint32_t vlen) { return (int)((vlen + t->ovfl_cap - 1) / t->ovfl_cap); }

int bt_ovfl_walk(bt_tree *t, uint32_t leaf, int slot, uint32_t first, uint32_t vlen, uint8_t *out, uint32_t *blocks);

/* ---- the writer's operation context (btree_wctx.c, drawn there) ---- */

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
    uint64_t end; /* end LSN of the record, once appended */
};

int bt_wctx_init(bt_wctx *w, bt_tree *t, const pa_batch *batch, uint32_t op, uint64_t batch_lsn);
int bt_fail_op(bt_wctx *w, int rc);
int bt_act_begin(bt_wctx *w, bp_frame *f, int creating, size_t *at);
int bt_act_apply(bt_wctx *w, bp_frame *f, size_t at);
int bt_wctx_commit(bt_wctx *w, int ok);

/* ---- allocation (btree_alloc.c; writer only) ---- */

int bt_alloc_page(bt_wctx *w, bp_frame **out);
int bt_free_pages(bt_wctx *w, const uint32_t *blocks, int n);
int bt_ovfl_write(bt_wctx *w, uint32_t *first);

#ifdef ENG_BROKEN_STALE_VALUE
/* Test-only broken build (tests/mutants.txt stale-value): the value a put
 * replaced, kept by the writer (btree_write.c) for the reads (btree.c). */
extern pthread_mutex_t stale_mu;
extern uint8_t stale_key[ENG_MAX_KEY], stale_val[4096];
extern size_t stale_klen, stale_vlen;
#endif

#endif
