/*
 * bufpool.c -- buffer pool (contract and latching protocol in bufpool.h).
 *
 * Concurrency: the hash table is split into NPART partitions, each with a
 * mutex guarding the chains of its buckets and the pin counts taken through
 * them.  A frame is claimed for a new block by the clock hand with a CAS of
 * its pin count from 0 to 1 under the partition mutex of the block it
 * caches, so a reader pinning through the hash and an evictor can never
 * both win.  Counters are striped per thread so two readers do not bounce
 * one cache line on every page access.
 */
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bufpool.h"
#include "faultpoints.h"
#include "page.h"

#define NPART   64u
#define NSTRIPE 16u
#define BATCH   32u

enum { ST_FREE = 0, ST_LOADING = 1, ST_VALID = 2 };
enum {
    C_READS,
    C_WRITES,
    C_HITS,
    C_MISSES,
    C_EVICTIONS,
    C_HINT_WRITES,
    C_KV_CHECKS,
    C_KV_CHECK_BYTES,
    C_KV_CODE_BYTES,
    C_KV_LAZY,
    C_KV_LAZY_CODED,
    C_COUNT
};

struct part {
    pthread_mutex_t mu;
} __attribute__((aligned(64)));

struct stripe {
    _Atomic uint64_t c[C_COUNT];
} __attribute__((aligned(64)));

struct bp_pool {
    bp_config cfg;
    size_t nframes;
    bp_frame *frames;
    uint8_t *mem;
    bp_frame **buckets;
    size_t bucket_mask;
    struct part parts[NPART];
    _Atomic size_t hand;
    struct stripe stripes[2 * NSTRIPE]; /* owned, then shared (count) */
    _Atomic int64_t kv_bytes, kv_pages, kv_keys;
    /* KV0's choice (lazy_choice): what became of the lazy leaves, decayed */
    _Atomic uint32_t lazy_used, lazy_dropped;
    _Atomic uint64_t lazy_loads;
};

/* Counters: the first NSTRIPE threads of the process each own a stripe
 * and add with a plain load and store (no locked instruction: a get counts
 * up to ten times, and a locked add costs about as much as checking a
 * separator's code); later threads share the other NSTRIPE stripes with
 * atomic adds.  An owned stripe has one writer, so no count is lost. */
static _Atomic unsigned stripe_seq;
static __thread unsigned my_stripe = ~0u;

static inline void count(bp_pool *bp, int which, uint64_t n) {
    if (my_stripe == ~0u) {
        unsigned s = atomic_fetch_add(&stripe_seq, 1);
        my_stripe = s < NSTRIPE ? s : NSTRIPE + s % NSTRIPE;
    }
    assert(my_stripe < 2 * NSTRIPE); /* a counter stripe of the table */
    _Atomic uint64_t *c = &bp->stripes[my_stripe].c[which];
    if (my_stripe < NSTRIPE)
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* ---- per-KV codes ---- */

unsigned bp_kv_width(const bp_pool *bp) { return bp->cfg.kv_width; }

/* The pool's accounting of F's codes just made (N0 codes before, D the
 * change of their memory, HASHED the bytes the coding hashed). */
static void kv_account(bp_pool *bp, bp_frame *f, int64_t n0, int64_t d, uint64_t hashed) {
    unsigned w = bp->cfg.kv_width;
    count(bp, C_KV_CODE_BYTES, hashed);
    if (!f->kv_on) {
        d = (int64_t)kv_memory(f->kv.n, w);
        atomic_fetch_add(&bp->kv_pages, 1);
    }
    atomic_fetch_add(&bp->kv_bytes, d);
    atomic_fetch_add(&bp->kv_keys, (int64_t)f->kv.n - n0);
    f->kv_on = 1;
}

void bp_kv_update(bp_pool *bp, bp_frame *f) {
    unsigned w = bp->cfg.kv_width;
    if (!w) return;
    int64_t n0 = f->kv_on ? (int64_t)f->kv.n : 0;
    uint64_t hashed = 0;
    int64_t d = kv_compute(&f->kv, f->data, bp->cfg.page_size, w, &hashed);
    kv_account(bp, f, n0, d, hashed);
}

/* bp_kv_update (width > 0), returning the checksum of F's page at BLOCK
 * from the same pass over its bytes (kvprot.h kv_compute_checked). */
static uint64_t kv_update_checked(bp_pool *bp, bp_frame *f, uint32_t block) {
    int64_t n0 = f->kv_on ? (int64_t)f->kv.n : 0;
    uint64_t hashed = 0, sum = 0;
    int64_t d = kv_compute_checked(&f->kv, f->data, bp->cfg.page_size, bp->cfg.kv_width, block, &sum, &hashed);
    kv_account(bp, f, n0, d, hashed);
    return sum;
}

static void kv_drop(bp_pool *bp, bp_frame *f) {
    if (!f->kv_on) return;
    assert(atomic_load(&bp->kv_pages) > 0); /* a coded frame is counted (bp_kv_update) */
    atomic_fetch_sub(&bp->kv_bytes, (int64_t)kv_memory(f->kv.n, bp->cfg.kv_width));
    atomic_fetch_sub(&bp->kv_keys, (int64_t)f->kv.n);
    atomic_fetch_sub(&bp->kv_pages, 1);
    f->kv_on = 0; /* the buffer stays for the frame's next page */
}

static int kv_fail(bp_pool *bp, uint32_t block, int32_t entry, uint64_t exp, uint64_t found, const char *what) {
    uint32_t ps = bp->cfg.page_size;
    return eng_report(&bp->cfg.reporter, ENG_LAYER_KV_PROTECTION, bp->cfg.file->name, block, (int64_t)block * ps, entry,
                      exp, found, "%s", what);
}

/* KV0's choice.  A lazy leaf saves its coding when it leaves the pool
 * unused, and costs more than coding at load when it is used again: by
 * then its bytes have gone cold, and coding them pays their cache misses
 * (about three times the coding of a page just read, bench/README.md).
 * So leaves are loaded lazy while at most a third of the lazy ones are
 * used again (a small cache over random reads: nearly none are), and
 * coded at load otherwise.  The pool counts each lazy leaf's fate, both
 * counts halved every LAZY_WINDOW so the choice follows the workload;
 * one load in LAZY_SAMPLE is lazy whatever the counts, so the fate of
 * lazy leaves is still measured while the pool codes at load.  The counts
 * are a heuristic: relaxed atomics, races lose a count at worst. */
#define LAZY_WINDOW 1024u
#define LAZY_SAMPLE 64u
static int lazy_choice(bp_pool *bp) {
    if (bp->cfg.kv_lazy) return bp->cfg.kv_lazy > 0;
    uint64_t n = atomic_fetch_add_explicit(&bp->lazy_loads, 1, memory_order_relaxed);
    if (n % LAZY_SAMPLE == 0) return 1;
    uint32_t used = atomic_load_explicit(&bp->lazy_used, memory_order_relaxed);
    uint32_t dropped = atomic_load_explicit(&bp->lazy_dropped, memory_order_relaxed);
    return 2 * used < dropped;
}
static void lazy_fate(bp_pool *bp, int used) {
    _Atomic uint32_t *mine = used ? &bp->lazy_used : &bp->lazy_dropped;
    uint32_t m = atomic_fetch_add_explicit(mine, 1, memory_order_relaxed) + 1;
    uint32_t u = used ? m : atomic_load_explicit(&bp->lazy_used, memory_order_relaxed);
    uint32_t d = used ? atomic_load_explicit(&bp->lazy_dropped, memory_order_relaxed) : m;
    if (u + d >= LAZY_WINDOW) {
        atomic_store_explicit(&bp->lazy_used, u / 2, memory_order_relaxed);
        atomic_store_explicit(&bp->lazy_dropped, d / 2, memory_order_relaxed);
    }
}

int bp_kv_code_lazy(bp_pool *bp, bp_frame *f) {
    if (!f->kv_lazy) return ENG_OK;
    /* Codes first, then the checksum over the bytes just coded: a flip
     * since the load fails the checksum, one from now on fails a code; no
     * moment is left where a flip would be coded as right.  (Not the one
     * pass of a load: its checksum is the page's only where the cells tile
     * the page, which a flip in the cache may have undone.)  The leaf has
     * gone cold since its load: its lines are asked for all at once first,
     * so the coding pass does not wait for them one at a time (measured
     * in bench/README.md, "w = 8 on the CRC"). */
    for (uint32_t o = 0; o < bp->cfg.page_size; o += 64) __builtin_prefetch(f->data + o);
    bp_kv_update(bp, f);
    uint32_t block = atomic_load(&f->block);
    uint64_t stored = ph_get_checksum(f->data), computed = page_checksum(f->data, bp->cfg.page_size, block);
    count(bp, C_KV_CHECK_BYTES, bp->cfg.page_size);
    if (stored == computed) {
        f->kv_lazy = 0;
        lazy_fate(bp, 1);
        count(bp, C_KV_LAZY_CODED, 1);
        return ENG_OK;
    }
    kv_drop(bp, f);
    kv_fail(bp, block, -1, stored, computed, "a leaf not yet coded (KV0) differs from its page checksum in the cache");
    return ENG_CORRUPTION;
}

/* Page code (SLOT < 0) or entry SLOT of F against its code: 1 on a
 * mismatch with the expected and found codes in *E, *G; counted. */
static int kv_mismatch(bp_pool *bp, bp_frame *f, int slot, uint64_t *e, uint64_t *g) {
    unsigned w = bp->cfg.kv_width;
    if (!w || !f->kv_on) return 0;
    count(bp, C_KV_CHECKS, 1);
    uint64_t hashed = 0;
    int bad = slot < 0 ? kv_check_page(&f->kv, f->data, bp->cfg.page_size, w, e, g, &hashed)
                       : kv_check_entry(&f->kv, f->data, bp->cfg.page_size, w, (unsigned)slot, e, g, &hashed);
    count(bp, C_KV_CHECK_BYTES, hashed);
    return bad;
}

int bp_kv_check_page(bp_pool *bp, bp_frame *f) {
    uint64_t e, g;
    if (!kv_mismatch(bp, f, -1, &e, &g)) return ENG_OK;
    return kv_fail(bp, atomic_load(&f->block), -1, e, g,
                   "page header (or slot count) differs from its protection code in the cache");
}

int bp_kv_check_entry(bp_pool *bp, bp_frame *f, unsigned slot) {
    uint64_t e, g;
    if (!kv_mismatch(bp, f, (int)slot, &e, &g)) return ENG_OK;
    return kv_fail(bp, atomic_load(&f->block), (int32_t)slot, e, g,
                   "entry (key, value or its slot) differs from its protection code in the cache");
}

int bp_kv_test_page(bp_pool *bp, bp_frame *f) {
    uint64_t e, g;
    return kv_mismatch(bp, f, -1, &e, &g);
}

int bp_kv_test_entry(bp_pool *bp, bp_frame *f, unsigned slot) {
    uint64_t e, g;
    return kv_mismatch(bp, f, (int)slot, &e, &g);
}

int bp_kv_mismatches(bp_pool *bp, bp_frame *f, int *page) {
    unsigned w = bp->cfg.kv_width;
    if (!w || !f->kv_on) return -1;
    uint64_t e, g;
    *page = kv_check_page(&f->kv, f->data, bp->cfg.page_size, w, &e, &g, NULL);
    int n = 0;
    for (unsigned i = 0; i < f->kv.n; i++) n += kv_check_entry(&f->kv, f->data, bp->cfg.page_size, w, i, &e, &g, NULL);
    return n;
}

int bp_kv_check_all(bp_pool *bp, bp_frame *f) {
    unsigned w = bp->cfg.kv_width;
    if (!w || !f->kv_on) return ENG_OK;
    count(bp, C_KV_CHECKS, 1 + f->kv.n);
    uint64_t e, g, hashed = 0;
    int32_t entry;
    int bad = kv_check_all(&f->kv, f->data, bp->cfg.page_size, w, &entry, &e, &g, &hashed);
    count(bp, C_KV_CHECK_BYTES, hashed);
    if (!bad) return ENG_OK;
    return kv_fail(bp, atomic_load(&f->block), entry, e, g,
                   entry < 0 ? "page header differs from its protection code in the cache"
                             : "entry (key, value, slot or hint bits) differs from its protection code in the cache");
}

/* L2 in debug builds: how many partition mutexes this thread holds; a
 * latch is waited for only while it holds none. */
#ifndef NDEBUG
static __thread int parts_held;
#define PARTS_HELD(d) (parts_held += (d))
#else
#define PARTS_HELD(d) 0
#endif

static inline void part_lock(struct part *p) {
    pthread_mutex_lock(&p->mu);
    (void)PARTS_HELD(1);
}
static inline void part_unlock(struct part *p) {
    assert(PARTS_HELD(0) > 0);
    (void)PARTS_HELD(-1);
    pthread_mutex_unlock(&p->mu);
}

static inline size_t bucket_of(const bp_pool *bp, uint32_t block) {
    return (size_t)(((uint64_t)block * 0x9E3779B97F4A7C15ull) >> 20) & bp->bucket_mask;
}
static inline struct part *part_of(bp_pool *bp, size_t bucket) { return &bp->parts[bucket % NPART]; }

int bp_create(const bp_config *cfg, bp_pool **out) {
    *out = NULL;
    bp_pool *bp = calloc(1, sizeof *bp);
    if (!bp) return ENG_NOMEM;
    bp->cfg = *cfg;
    bp->nframes = cfg->nframes;
    size_t nb = 1;
    while (nb < bp->nframes * 2) nb <<= 1;
    bp->bucket_mask = nb - 1;
    bp->frames = calloc(bp->nframes, sizeof *bp->frames);
    bp->buckets = calloc(nb, sizeof *bp->buckets);
    /* A guard tail: a cached page damaged in memory (a cache bit flip) can
     * make a reader follow a slot or length up to 64 KiB past its frame;
     * that must read garbage, never fault. */
    if (posix_memalign((void **)&bp->mem, 4096, bp->nframes * cfg->page_size + (128u << 10))) bp->mem = NULL;
    if (!bp->frames || !bp->buckets || !bp->mem) {
        free(bp->frames);
        free(bp->buckets);
        free(bp->mem);
        free(bp);
        return ENG_NOMEM;
    }
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* The single writer must not starve behind a stream of readers. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (size_t i = 0; i < bp->nframes; i++) {
        bp_frame *f = &bp->frames[i];
        pthread_rwlock_init(&f->latch, &ra);
        f->data = bp->mem + i * cfg->page_size;
    }
    pthread_rwlockattr_destroy(&ra);
    for (unsigned i = 0; i < NPART; i++) pthread_mutex_init(&bp->parts[i].mu, NULL);
    *out = bp;
    return ENG_OK;
}

void bp_destroy(bp_pool *bp) {
    if (!bp) return;
    for (size_t i = 0; i < bp->nframes; i++) kv_free(&bp->frames[i].kv);
    for (size_t i = 0; i < bp->nframes; i++) pthread_rwlock_destroy(&bp->frames[i].latch);
    for (unsigned i = 0; i < NPART; i++) pthread_mutex_destroy(&bp->parts[i].mu);
    free(bp->frames);
    free(bp->buckets);
    free(bp->mem);
    free(bp);
}

/* Chain helpers: caller holds the partition mutex of the bucket. */
static bp_frame *chain_find(bp_pool *bp, size_t b, uint32_t block) {
    for (bp_frame *f = bp->buckets[b]; f; f = f->hnext)
        if (atomic_load_explicit(&f->block, memory_order_relaxed) == block) return f;
    return NULL;
}
static void chain_remove(bp_pool *bp, size_t b, bp_frame *f) {
    for (bp_frame **pp = &bp->buckets[b]; *pp; pp = &(*pp)->hnext)
        if (*pp == f) {
            *pp = f->hnext;
            f->hnext = NULL;
            return;
        }
}

static void frame_problem_report(bp_pool *bp, uint32_t block, const page_problem *pr) {
    uint64_t base = (uint64_t)block * bp->cfg.page_size;
    eng_report(&bp->cfg.reporter, pr->layer, bp->cfg.file->name, block,
               (int64_t)(base + (pr->offset >= 0 ? (uint64_t)pr->offset : 0)), pr->entry, pr->expected, pr->found, "%s",
               pr->detail);
}

/* Whether a read page's checksum is checked (then it proves the bytes: KV0). */
static int checked_checksums(const bp_pool *bp) {
#ifdef ENG_BROKEN_SKIP_CHECKSUM
    /* Test-only broken build (stress proves the oracle catches it): the
     * checksum is never checked on read. */
    (void)bp;
    return 0;
#else
    return bp->cfg.checksums;
#endif
}

/* Read BLOCK from disk into BUF (zero-filled past end of file). */
static int read_page(bp_pool *bp, uint32_t block, uint8_t *buf) {
    size_t ps = bp->cfg.page_size, done = 0;
    int rc = io_read(bp->cfg.io, bp->cfg.file, buf, ps, (uint64_t)block * ps, &done);
    count(bp, C_READS, 1);
    if (rc != ENG_OK) return rc;
    if (done < ps) memset(buf + done, 0, ps - done);
    return ENG_OK;
}

/* Read BLOCK from disk into BUF and verify. */
static int read_verify(bp_pool *bp, uint32_t block, uint8_t *buf, page_problem *pr) {
    int rc = read_page(bp, block, buf), is_zero = 0;
    if (rc != ENG_OK) return rc;
    return page_verify(buf, bp->cfg.page_size, block, atomic_load_explicit(bp->cfg.hwm, memory_order_acquire),
                       checked_checksums(bp), &is_zero, pr);
}

/* Read BLOCK into F, a frame being loaded (exclusive latch, LOADING, no
 * codes), verify it and make its per-KV codes.  KV0: a leaf read for a
 * reader (MODE BP_SHARED) may stay uncoded (lazy_choice, on the header as
 * read: a page that fails its checks is not kept), proven by the checksum
 * just checked.  Any other page with checksums on is coded in the pass
 * that computes its checksum (kv_compute_checked), each byte read once for
 * both; with checksums off, right after its checks.  On failure F is left
 * with no lazy mark (and the caller drops any codes). */
static int load_frame(bp_pool *bp, uint32_t block, bp_frame *f, int mode, page_problem *pr) {
    uint32_t ps = bp->cfg.page_size;
    int rc = read_page(bp, block, f->data), is_zero = 0;
    if (rc != ENG_OK) return rc;
    const int checksums = checked_checksums(bp);
    const uint64_t hwm = atomic_load_explicit(bp->cfg.hwm, memory_order_acquire);
    const unsigned w = bp->cfg.kv_width;
    f->kv_lazy = mode == BP_SHARED && w && checksums && ph_get_type(f->data) == PAGE_LEAF &&
                 ph_get_checksum(f->data) != 0 && lazy_choice(bp);
    if (w && checksums && !f->kv_lazy) {
        uint64_t sum = kv_update_checked(bp, f, block);
        rc = page_verify_summed(f->data, ps, block, hwm, checksums, sum, &is_zero, pr);
        /* The pass's checksum is the page's only where the structure check
         * passes; a page that fails is hashed again, so the report names
         * what page_verify names (the checksum before the structure). */
        return rc == ENG_CORRUPTION ? page_verify(f->data, ps, block, hwm, checksums, &is_zero, pr) : rc;
    }
    rc = page_verify(f->data, ps, block, hwm, checksums, &is_zero, pr);
    if (rc != ENG_OK)
        f->kv_lazy = 0;
    else if (f->kv_lazy)
        count(bp, C_KV_LAZY, 1);
    else
        bp_kv_update(bp, f); /* checksums off: the codes, right after the checks */
    return rc;
}

/* Stamp block, LSN and checksum on a private copy about to be written. */
static void prepare_write(bp_pool *bp, uint32_t block, uint64_t lsn, uint8_t *copy) {
    ph_set_block(copy, block);
    ph_set_lsn(copy, lsn);
    if (bp->cfg.checksums)
        page_set_checksum(copy, bp->cfg.page_size, block);
    else
        ph_set_checksum(copy, 0);
}

/* Pin a resident frame of BLOCK through the hash (no latch).  NULL if not
 * resident or not valid. */
static bp_frame *pin_if_valid(bp_pool *bp, uint32_t block) {
    size_t b = bucket_of(bp, block);
    struct part *p = part_of(bp, b);
    part_lock(p);
    bp_frame *f = chain_find(bp, b, block);
    if (f && atomic_load(&f->state) == ST_VALID)
        atomic_fetch_add(&f->pin, 1);
    else
        f = NULL;
    part_unlock(p);
    return f;
}

/* F's write-back is over (or was never issued): its writing mark, taken
 * 0 -> 1 by latch_for_write, goes back to 0. */
static void writing_done(bp_frame *f) {
    uint8_t was = atomic_fetch_sub(&f->writing, 1);
    assert(was == 1); /* L6: one write of a frame in flight, and it was ours */
    (void)was;
}

/* Share-latch F for its write-back and claim it: 1 when it is to be
 * written (latched, marked writing, its dirty flag cleared: L5); 0 when it
 * is passed by, holding nothing. */
static int latch_for_write(bp_frame *f, int try) {
    if (try) {
        if (atomic_load(&f->pending)) return 0;
        if (pthread_rwlock_tryrdlock(&f->latch) != 0) return 0;
    } else {
        assert(PARTS_HELD(0) == 0); /* L2 */
        pthread_rwlock_rdlock(&f->latch);
    }
    /* Pending: its operation's record is not in the log yet.  The
     * writer clears it without this latch, so wait it out (flush) or
     * pass (eviction). */
    while (atomic_load(&f->pending)) {
        pthread_rwlock_unlock(&f->latch);
        if (try) return 0;
        sched_yield();
        pthread_rwlock_rdlock(&f->latch);
    }
    /* L6: one write of a frame in flight at a time.  Readers set hint
     * bits (and dirty) under a shared latch, so a second write-back
     * could start while the first is still under way: the two writes
     * of one block would land in either order, and the power-loss
     * journal's pre-image of the second could catch the first half
     * copied (a torn page the crash never made).  Never waited for
     * (L2: this may hold other frames' marks): the frame is passed by,
     * stays dirty, and a flush retries it on its next pass. */
    uint8_t idle = 0;
    if (!atomic_compare_exchange_strong(&f->writing, &idle, 1)) {
        pthread_rwlock_unlock(&f->latch);
        return 0;
    }
    /* writing is set before dirty clears (L5) */
    if (!atomic_exchange(&f->dirty, 0) || atomic_load(&f->state) != ST_VALID) {
        writing_done(f);
        pthread_rwlock_unlock(&f->latch);
        return 0;
    }
    /* L3: written pinned and share-latched; W-rule: never while pending
     * (pending is set only under the exclusive latch, so it stays clear
     * while this shared latch is held). */
    assert(atomic_load(&f->pin) > 0 && !atomic_load(&f->pending));
    return 1;
}

/* Give back a frame latch_for_write claimed, unwritten: dirty again. */
static void release_unwritten(bp_frame *f) {
    atomic_store(&f->dirty, 1);
    writing_done(f);
    pthread_rwlock_unlock(&f->latch);
}

/* KV4: a frame damaged in memory is never written: its fresh checksum
 * would make the damage permanent and invisible.  1 when COPY, F's bytes,
 * differs from F's codes (reported, the handle poisoned). */
static int kv_damaged(bp_pool *bp, bp_frame *f, const uint8_t *copy, uint32_t block) {
    if (!bp->cfg.kv_width || !f->kv_on) return 0;
    uint64_t e, g;
    int32_t entry;
    uint64_t hashed = 0;
    size_t ps = bp->cfg.page_size;
    int bad = kv_check_all(&f->kv, copy, (uint32_t)ps, bp->cfg.kv_width, &entry, &e, &g, &hashed);
    count(bp, C_KV_CHECKS, 1 + f->kv.n);
    count(bp, C_KV_CHECK_BYTES, hashed);
    if (!bad) return 0;
    kv_fail(bp, block, entry, e, g, "a dirty page differs from its protection codes before write-back: not written");
    if (bp->cfg.poisoned) atomic_store(bp->cfg.poisoned, 1);
    return 1;
}

/* A frame whose hint bits changed since its last write is logged first
 * (hint_log), which may move its LSN (*LSN, and F's) and the log's flush
 * point (*MAXLSN).  Returns hint_log's failure, F's hint flag set again. */
static int log_hints(bp_pool *bp, bp_frame *f, uint32_t block, uint8_t *copy, uint64_t *lsn, uint64_t *maxlsn) {
    if (!atomic_exchange(&f->hint_dirty, 0)) return ENG_OK;
    count(bp, C_HINT_WRITES, 1);
    if (!bp->cfg.hint_log || bp->cfg.read_only) return ENG_OK;
    uint64_t nl = *lsn, fl = 0;
    int hr = bp->cfg.hint_log(bp->cfg.wal_ctx, block, copy, *lsn, &nl, &fl);
    if (fl > *maxlsn) *maxlsn = fl;
    if (hr) {
        atomic_store(&f->hint_dirty, 1);
        return hr;
    }
    if (nl > *lsn) {
        *lsn = nl;
        uint64_t cur = atomic_load(&f->lsn);
        while (cur < nl && !atomic_compare_exchange_weak(&f->lsn, &cur, nl)) {}
    }
    return ENG_OK;
}

/* The queued writes, after the log (write-ahead rule: flushed up to the
 * newest page's LSN, MAXLSN).  RC is what queuing them left. */
static int submit_writes(bp_pool *bp, io_req *reqs, size_t nreq, uint64_t maxlsn, int rc) {
    if (nreq && bp->cfg.read_only && !rc) rc = ENG_READONLY;
    if (rc == ENG_OK && nreq && maxlsn && bp->cfg.wal_flush) rc = bp->cfg.wal_flush(bp->cfg.wal_ctx, maxlsn);
    if (nreq && rc == ENG_OK) {
        ENG_DELAY_POINT(FP_DELAY_WRITEBACK_BEFORE_WRITE);
        rc = io_write_batch(bp->cfg.io, reqs, nreq);
        count(bp, C_WRITES, nreq);
        ENG_KILL_POINT(FP_KILL_PAGE_WRITE);
        ENG_DELAY_POINT(FP_DELAY_WRITEBACK_BEFORE_RELEASE);
    }
    return rc;
}

/* Release the queued frames: those whose write failed (or, RC set, never
 * ran) stay dirty; the others are marked in WRITTEN (by IDX). */
static void release_queued(const io_req *reqs, bp_frame **latched, const size_t *idx, size_t nreq, int rc,
                           uint8_t *written) {
    for (size_t i = 0; i < nreq; i++) {
#ifdef ENG_BROKEN_WRITEBACK_ERROR_CLEANS
        /* planted bug (tests/mutants.txt): a frame whose write failed is
         * not marked dirty again, so it can be evicted with its change. */
        if (rc == ENG_OK && reqs[i].status == ENG_OK && written) written[idx[i]] = 1;
#else
        if (rc != ENG_OK || reqs[i].status != ENG_OK)
            atomic_store(&latched[i]->dirty, 1);
        else if (written)
            written[idx[i]] = 1;
#endif
        writing_done(latched[i]);
        pthread_rwlock_unlock(&latched[i]->latch);
    }
}

/* Write back up to n pinned frames, each share-latched during its write
 * (L3).  Frames that fail stay dirty.  Returns the first error.  With
 * TRY, a frame whose latch is taken is skipped: an evicting reader may hold
 * latches of its own, and waiting on an arbitrary victim's latch could
 * close a cycle with the writer (L2). */
static int write_back(bp_pool *bp, bp_frame **fs, size_t n, int try, uint8_t *written) {
    size_t ps = bp->cfg.page_size;
    uint8_t *bufs = NULL;
    if (posix_memalign((void **)&bufs, 4096, n * ps)) return ENG_NOMEM;
    io_req reqs[BATCH];
    size_t nreq = 0;
    bp_frame *latched[BATCH];
    uint64_t maxlsn = 0;
    size_t idx[BATCH];
    int kv_bad = 0;
    if (written) memset(written, 0, n);
    for (size_t i = 0; i < n; i++) {
        bp_frame *f = fs[i];
        if (!latch_for_write(f, try)) continue;
        uint8_t *copy = bufs + nreq * ps;
        memcpy(copy, f->data, ps);
        uint32_t block = atomic_load(&f->block);
        if (kv_damaged(bp, f, copy, block)) {
            release_unwritten(f);
            kv_bad = 1;
            continue;
        }
        uint64_t lsn = atomic_load(&f->lsn);
        int hr = log_hints(bp, f, block, copy, &lsn, &maxlsn);
        if (hr) {
            release_unwritten(f);
            free(bufs);
            /* Frames already queued stay dirty: nothing was written. */
            for (size_t j = 0; j < nreq; j++) release_unwritten(latched[j]);
            return hr;
        }
#ifdef ENG_BROKEN_PAGE_BEFORE_WAL
        /* planted bug (tests/mutants.txt): the page's own LSN is not
         * counted, so the log is flushed only for hint records: a page
         * reaches the disk before the WAL is durable up to its LSN. */
#else
        if (lsn > maxlsn) maxlsn = lsn;
#endif
        prepare_write(bp, block, lsn, copy);
        reqs[nreq] = (io_req){.f = bp->cfg.file, .buf = copy, .len = ps, .offset = (uint64_t)block * ps};
        idx[nreq] = i;
        latched[nreq++] = f;
    }
    int rc = submit_writes(bp, reqs, nreq, maxlsn, kv_bad ? ENG_CORRUPTION : ENG_OK);
    release_queued(reqs, latched, idx, nreq, rc, written);
    free(bufs);
    return rc;
}

/* Take a frame for reuse: returns it pinned once (pin == 1), detached from
 * the hash, state FREE.  Dirty victims are written back first (L4). */
static int claim_frame(bp_pool *bp, bp_frame **out) {
    size_t n = bp->nframes;
    /* Frames are pinned only for the span of one operation, so an empty
     * sweep means waiting, not failure; give up (ENG_BUSY) only after
     * about ten seconds of finding every frame pinned. */
    for (size_t spins = 0; spins < 10000 * n + 1024; spins++) {
        if (spins && spins % n == 0) {
            if (spins > 16 * n)
                usleep(1000);
            else
                sched_yield();
        }
        size_t i = atomic_fetch_add_explicit(&bp->hand, 1, memory_order_relaxed) % n;
        bp_frame *f = &bp->frames[i];
        if (atomic_load_explicit(&f->pin, memory_order_relaxed) != 0) continue;
        uint8_t st = atomic_load(&f->state);
        if (st == ST_FREE) {
            uint32_t zero = 0;
            if (atomic_compare_exchange_strong(&f->pin, &zero, 1)) {
                if (atomic_load(&f->state) == ST_FREE) {
                    assert(atomic_load(&f->pin) == 1); /* out of the hash: nobody else can pin it */
                    *out = f;
                    return ENG_OK;
                }
                atomic_fetch_sub(&f->pin, 1);
            }
            continue;
        }
        if (st != ST_VALID) continue;
        if (atomic_exchange_explicit(&f->ref, 0, memory_order_relaxed)) continue;
        uint32_t block = atomic_load(&f->block);
        if (atomic_load(&f->dirty)) {
            /* Write back this victim together with the dirty frames just
             * ahead of the hand, which it would meet next: one submission
             * of many pages costs io_uring a fraction of single writes. */
            bp_frame *batch[BATCH];
            size_t nb = 0, most = n / 8 ? (n / 8 < BATCH ? n / 8 : BATCH) : 1;
            /* At most an eighth of the pool is pinned for one write-back,
             * so other threads always find frames to claim. */
            for (size_t j = 0; j < 4 * BATCH && j < n && nb < most; j++) {
                bp_frame *c = &bp->frames[(i + j) % n];
                if (!atomic_load(&c->dirty) || atomic_load(&c->state) != ST_VALID || atomic_load(&c->pending) ||
                    atomic_load_explicit(&c->pin, memory_order_relaxed) != 0)
                    continue;
                bp_frame *g = pin_if_valid(bp, atomic_load(&c->block));
                if (g != c) {
                    if (g) bp_unpin(bp, g);
                    continue;
                }
                batch[nb++] = c;
            }
            if (nb == 0 || batch[0] != f) {
                for (size_t j = 0; j < nb; j++) bp_unpin(bp, batch[j]);
                continue;
            }
            int rc = write_back(bp, batch, nb, 1, NULL);
            for (size_t j = 0; j < nb; j++) bp_unpin(bp, batch[j]);
            if (rc != ENG_OK) return rc;
        }
        size_t b = bucket_of(bp, block);
        struct part *p = part_of(bp, b);
        part_lock(p);
        uint32_t zero = 0;
#ifdef ENG_BROKEN_EVICT_SKIPS_DIRTY_RECHECK
        /* planted bug (tests/mutants.txt): the victim is taken as clean
         * because it was clean, or written back, just above: but the
         * write-back passes a frame whose latch the writer holds, and the
         * writer can change the page and let go of it while the batch's
         * other pages are being written, so a frame dirtied since is
         * evicted with its change never written (L4 broken): the next read
         * of the block returns the page as it was before that change. */
        if (atomic_load(&f->block) == block && atomic_load(&f->state) == ST_VALID &&
            atomic_compare_exchange_strong(&f->pin, &zero, 1)) {
#else
        if (atomic_load(&f->block) == block && atomic_load(&f->state) == ST_VALID && !atomic_load(&f->dirty) &&
            atomic_compare_exchange_strong(&f->pin, &zero, 1)) {
#endif
            chain_remove(bp, b, f);
            kv_drop(bp, f);
            if (f->kv_lazy) lazy_fate(bp, 0);
            f->kv_lazy = 0; /* pinned by us alone: no latch holder reads it */
            atomic_store(&f->state, ST_FREE);
            part_unlock(p);
            count(bp, C_EVICTIONS, 1);
            /* L4: evicted clean, unpinned (the CAS above) and out of the
             * hash, so no write of it is in flight and nobody else pins it */
            assert(atomic_load(&f->pin) == 1 && !atomic_load(&f->writing));
            *out = f;
            return ENG_OK;
        }
        part_unlock(p);
    }
    return ENG_BUSY; /* every frame pinned: the pool is far too small */
}

/* What bp_get, bp_new and latch_confirm hand out: F pinned (L1: a latched
 * frame is pinned, so never evicted), valid, caching BLOCK. */
static inline int frame_holds(bp_frame *f, uint32_t block) {
    return atomic_load(&f->pin) > 0 && atomic_load(&f->state) == ST_VALID && atomic_load(&f->block) == block;
}

/* Latch F in MODE and confirm it still caches BLOCK (it may have failed to
 * load while we waited).  Returns 1 when it does; else unlatched+unpinned. */
static int latch_confirm(bp_pool *bp, bp_frame *f, uint32_t block, int mode) {
    assert(PARTS_HELD(0) == 0); /* L2 */
    if (mode == BP_EXCL)
        pthread_rwlock_wrlock(&f->latch);
    else
        pthread_rwlock_rdlock(&f->latch);
#ifdef ENG_BROKEN_LATCH_CONFIRM_TRUSTS_FAILED_LOAD
    /* planted bug (tests/mutants.txt): only the block number is compared,
     * as if a pinned frame could not change (it cannot be evicted): but a
     * thread that found the frame LOADING and waited for its latch gets it
     * after the loader's read failed or its page failed verification
     * (FREE, block unchanged), and uses the bytes the loader rejected (or
     * another block's, left from the frame's last page) as the page. */
    if (atomic_load(&f->block) == block) {
#else
    if (atomic_load(&f->state) == ST_VALID && atomic_load(&f->block) == block) {
#endif
        assert(atomic_load(&f->pin) > 0); /* L1: latched only while pinned */
        return 1;
    }
    pthread_rwlock_unlock(&f->latch);
    bp_unpin(bp, f);
    return 0;
}

/* latch_confirm for a hit: a lazy frame (KV0) is coded first, under the
 * exclusive latch.  Returns 1 latched in MODE; 0 when F no longer caches
 * BLOCK (unlatched, unpinned); -1 when coding found the frame damaged
 * (reported, *RC set; unlatched, unpinned). */
static int latch_hit(bp_pool *bp, bp_frame *f, uint32_t block, int mode, int *rc) {
    if (!latch_confirm(bp, f, block, mode)) return 0;
    /* A pinned frame is never evicted, so it cannot turn lazy again once
     * coded: the loop ends after one coding. */
    int codings = 0;
    while (f->kv_lazy) {
        assert(codings++ == 0); /* KV0: coded once, a lazy frame stays coded */
        if (mode == BP_SHARED) {
            pthread_rwlock_unlock(&f->latch);
            if (!latch_confirm(bp, f, block, BP_EXCL)) return 0;
        }
        if ((*rc = bp_kv_code_lazy(bp, f)) != ENG_OK) {
            pthread_rwlock_unlock(&f->latch);
            bp_unpin(bp, f);
            return -1;
        }
        if (mode == BP_SHARED) {
            pthread_rwlock_unlock(&f->latch);
            if (!latch_confirm(bp, f, block, BP_SHARED)) return 0;
        }
    }
    (void)codings;
    return 1;
}

int bp_get(bp_pool *bp, uint32_t block, int mode, bp_frame **out) {
    *out = NULL;
    ENG_DELAY_POINT(FP_DELAY_PAGE_BEFORE_LATCH);
    size_t b = bucket_of(bp, block);
    struct part *p = part_of(bp, b);
    for (;;) {
        part_lock(p);
        bp_frame *f = chain_find(bp, b, block);
        if (f) {
            atomic_fetch_add(&f->pin, 1);
            part_unlock(p);
            if (!atomic_load_explicit(&f->ref, memory_order_relaxed))
                atomic_store_explicit(&f->ref, 1, memory_order_relaxed);
            count(bp, C_HITS, 1);
            int hrc = ENG_OK, got = latch_hit(bp, f, block, mode, &hrc);
            if (got < 0) return hrc;
            if (got) {
                assert(frame_holds(f, block) && !f->kv_lazy); /* KV0: a hit is coded */
                *out = f;
                return ENG_OK;
            }
            continue;
        }
        part_unlock(p);

        bp_frame *nf;
        int rc = claim_frame(bp, &nf);
        if (rc != ENG_OK) return rc;
        part_lock(p);
#ifdef ENG_BROKEN_LOAD_SKIPS_RECHECK_AFTER_CLAIM
        /* planted bug (tests/mutants.txt): the lookup made before the
         * claim is trusted, though the partition mutex was let go while
         * claim_frame ran (a victim's write-back: milliseconds): two
         * threads missing one block both hash a frame for it, a writer
         * changes the one found first, and once that one is evicted the
         * other, stale copy answers reads and takes later changes (lost
         * updates, stale values). */
        f = NULL;
#else
        f = chain_find(bp, b, block);
#endif
        if (f) { /* someone loaded it meanwhile: give ours back */
            atomic_fetch_add(&f->pin, 1);
            part_unlock(p);
            bp_unpin(bp, nf);
            int hrc = ENG_OK, got = latch_hit(bp, f, block, mode, &hrc);
            if (got < 0) return hrc;
            if (got) {
                assert(frame_holds(f, block) && !f->kv_lazy); /* KV0: a hit is coded */
                *out = f;
                return ENG_OK;
            }
            continue;
        }
        atomic_store(&nf->block, block);
        atomic_store(&nf->state, ST_LOADING);
        atomic_store(&nf->dirty, 0);
        atomic_store(&nf->hint_dirty, 0);
        atomic_store(&nf->ref, 1);
        nf->hnext = bp->buckets[b];
        bp->buckets[b] = nf;
        /* Never blocks: nobody latches a frame it could not pin (L1). */
        assert(atomic_load(&nf->pin) == 1); /* ours alone: just claimed, just hashed */
        pthread_rwlock_wrlock(&nf->latch);
        part_unlock(p);
        count(bp, C_MISSES, 1);
        assert(!nf->kv_on && !nf->kv_lazy); /* a FREE frame carries no codes (kv_drop) */

        page_problem pr;
        rc = load_frame(bp, block, nf, mode, &pr);
        if (rc != ENG_OK) {
            part_lock(p);
            chain_remove(bp, b, nf);
            kv_drop(bp, nf);
            atomic_store(&nf->state, ST_FREE);
            part_unlock(p);
            pthread_rwlock_unlock(&nf->latch);
            bp_unpin(bp, nf);
            if (rc == ENG_CORRUPTION) frame_problem_report(bp, block, &pr);
            return rc;
        }
        atomic_store(&nf->lsn, ph_get_lsn(nf->data));
        /* KV0: a lazy leaf's reader keeps the exclusive latch the check ran
         * under (no downgrade: in the gap a flip could land in bytes no
         * code covers), and the next bp_get codes it. */
        atomic_store(&nf->state, ST_VALID);
        if (mode == BP_SHARED && !nf->kv_lazy) { /* downgrade: nobody can slip in a write */
            pthread_rwlock_unlock(&nf->latch);
            if (!latch_confirm(bp, nf, block, mode)) continue;
        }
        assert(frame_holds(nf, block));
        *out = nf;
        return ENG_OK;
    }
}

size_t bp_nframes(const bp_pool *bp) { return bp->nframes; }

int bp_overwrite(bp_pool *bp, uint32_t block, bp_frame **out) {
    /* Same as a new block: the frame is claimed (or the resident one
     * reused) without reading, zeroed, and the caller defines it. */
    return bp_new(bp, block, out);
}

int bp_new(bp_pool *bp, uint32_t block, bp_frame **out) {
    *out = NULL;
    size_t b = bucket_of(bp, block);
    struct part *p = part_of(bp, b);
    bp_frame *nf;
    int rc = claim_frame(bp, &nf);
    if (rc != ENG_OK) return rc;
    part_lock(p);
    bp_frame *f = chain_find(bp, b, block);
    if (f) {
        /* A stale image of a block past the end (read as a zero page by a
         * reader that followed a bad pointer): reuse its frame.  If someone
         * holds it, the block is in use and the allocator was misled (a
         * stale meta page or free list): waiting could be waiting on
         * ourselves, so refuse. */
        atomic_fetch_add(&f->pin, 1);
        part_unlock(p);
        bp_unpin(bp, nf);
        /* A write-back may hold it for the length of one write (a freed
         * page that was dirty): wait that out.  Held for longer, it is in
         * use -- by this very thread, maybe -- so refuse rather than wait
         * on ourselves. */
        int got = 0;
        for (int tries = 0; tries < 20000 && !got; tries++) {
            got = pthread_rwlock_trywrlock(&f->latch) == 0;
            if (!got) {
                if (tries < 100)
                    sched_yield();
                else
                    usleep(50);
            }
        }
        if (!got) {
            bp_unpin(bp, f);
            return ENG_BUSY;
        }
        /* Still the block's frame in the hash: it was found there pinned,
         * and a pinned frame is never evicted (L1).  (Not LOADING: its
         * loader holds the latch until the frame is VALID or FREE.) */
        assert(atomic_load(&f->block) == block && atomic_load(&f->state) == ST_VALID);
        nf = f;
    } else {
        atomic_store(&nf->block, block);
        nf->hnext = bp->buckets[b];
        bp->buckets[b] = nf;
        assert(atomic_load(&nf->pin) == 1); /* L1, L2: ours alone, so this never blocks */
        pthread_rwlock_wrlock(&nf->latch);
        part_unlock(p);
    }
    memset(nf->data, 0, bp->cfg.page_size);
    nf->kv_lazy = 0;
    bp_kv_update(bp, nf);
    atomic_store(&nf->lsn, 0);
    atomic_store(&nf->ref, 1);
    atomic_store(&nf->dirty, 1);
    atomic_store(&nf->hint_dirty, 0);
    atomic_store(&nf->state, ST_VALID);
    assert(frame_holds(nf, block));
    *out = nf;
    return ENG_OK;
}

void bp_release(bp_pool *bp, bp_frame *f, int mode) {
    (void)mode;
    /* L1: a latched frame is pinned, so it still caches its block */
    assert(atomic_load(&f->pin) > 0 && atomic_load(&f->state) == ST_VALID);
    pthread_rwlock_unlock(&f->latch);
    bp_unpin(bp, f);
    ENG_DELAY_POINT(FP_DELAY_PAGE_AFTER_RELEASE);
}

void bp_unpin(bp_pool *bp, bp_frame *f) {
    (void)bp;
    uint32_t was = atomic_fetch_sub_explicit(&f->pin, 1, memory_order_release);
    assert(was > 0); /* pins never go negative: no unpin of an unpinned frame */
    (void)was;
}

bp_frame *bp_pin_resident(bp_pool *bp, uint32_t block) { return pin_if_valid(bp, block); }

int bp_latch_resident(bp_pool *bp, bp_frame *f, uint32_t block) { return latch_confirm(bp, f, block, BP_EXCL); }

/* Every frame dirty when this starts reaches disk.  Latches are only
 * tried (write_back with TRY), never waited for while others are held: a
 * writer holding a leaf may be waiting for the meta page that a waiting
 * flush would hold (L2).  A frame whose latch is taken, or which is
 * pending, is retried on the next pass; one written once is done, even if
 * it was dirtied again since. */
int bp_flush_all(bp_pool *bp) {
    size_t n = bp->nframes;
    uint32_t *want = malloc(n * sizeof *want);
    if (!want) return ENG_NOMEM;
    for (size_t i = 0; i < n; i++) {
        bp_frame *f = &bp->frames[i];
        /* Dirty, or clean with a write-back in flight (an eviction clears
         * dirty before its write completes: L5): the caller's fsync must
         * not pass that write.  Dirty is read first: a write-back raises
         * writing before it clears dirty, so one of the two is seen. */
        int d = atomic_load(&f->dirty), wr = atomic_load(&f->writing);
        want[i] = (d || wr) && atomic_load(&f->state) == ST_VALID ? atomic_load(&f->block) : UINT32_MAX;
    }
    int rc = ENG_OK;
    for (unsigned pass = 0; rc == ENG_OK; pass++) {
        size_t left = 0;
        bp_frame *batch[BATCH];
        size_t at[BATCH], nb = 0;
        for (size_t i = 0; i <= n && rc == ENG_OK; i++) {
            if (i < n) {
                if (want[i] == UINT32_MAX) continue;
                bp_frame *f = &bp->frames[i];
                bp_frame *g = pin_if_valid(bp, want[i]);
                if (g != f) {
                    /* Evicted (so written: L4) or reused. */
                    if (g) bp_unpin(bp, g);
                    want[i] = UINT32_MAX;
                    continue;
                }
                if (!atomic_load(&f->dirty)) {
                    /* Clean: done once no write of it is in flight (L5). */
#ifdef ENG_BROKEN_CHECKPOINT_PASSES_WRITE_IN_FLIGHT
                    /* planted bug (tests/mutants.txt): a clean frame counts
                     * as flushed at once, so an eviction's write still in
                     * flight completes after the checkpoint's fsync began. */
                    if (0)
#else
                    if (atomic_load(&f->writing))
#endif
                        left++;
                    else
                        want[i] = UINT32_MAX;
                    bp_unpin(bp, f);
                    continue;
                }
                batch[nb] = f;
                at[nb++] = i;
                if (nb < BATCH) continue;
            }
            if (!nb) continue;
            uint8_t written[BATCH];
            rc = write_back(bp, batch, nb, 1, written);
            for (size_t j = 0; j < nb; j++) {
                if (written[j])
                    want[at[j]] = UINT32_MAX;
                else
                    left++;
                bp_unpin(bp, batch[j]);
            }
            nb = 0;
        }
        if (!left || rc != ENG_OK) break; /* the first failure is the answer */
        if (bp->cfg.poisoned && atomic_load(bp->cfg.poisoned)) {
            rc = ENG_POISONED;
            break;
        }
        if (pass < 16)
            sched_yield();
        else
            usleep(200);
    }
    free(want);
    return rc;
}

int bp_check_block(bp_pool *bp, uint32_t block, uint8_t *buf, page_problem *pr) {
    bp_frame *f = pin_if_valid(bp, block);
    if (f) {
        assert(PARTS_HELD(0) == 0); /* L2 */
        pthread_rwlock_wrlock(&f->latch);
        if (atomic_load(&f->state) == ST_VALID && atomic_load(&f->block) == block) {
            int rc;
            if (atomic_load(&f->dirty)) {
                memcpy(buf, f->data, bp->cfg.page_size);
                /* KV3 first: damage in a cached page is the codes' to name
                 * (layer kv_protection); the structure check only says the
                 * page is wrong, not that memory changed under it. */
                unsigned w = bp->cfg.kv_width;
                int32_t entry;
                uint64_t e, g;
                if (w && f->kv_on && kv_check_all(&f->kv, buf, bp->cfg.page_size, w, &entry, &e, &g, NULL)) {
                    count(bp, C_KV_CHECKS, 1 + f->kv.n);
                    *pr = (page_problem){
                        .layer = ENG_LAYER_KV_PROTECTION, .entry = entry, .offset = -1, .expected = e, .found = g};
                    snprintf(pr->detail, sizeof pr->detail, "%s differs from its protection code in the cache",
                             entry < 0 ? "page header" : "entry (key, value, slot or hint bits)");
                    rc = ENG_CORRUPTION;
                } else {
                    rc = page_check_structure(buf, bp->cfg.page_size, pr);
                }
            } else {
                rc = read_verify(bp, block, buf, pr);
            }
            pthread_rwlock_unlock(&f->latch);
            bp_unpin(bp, f);
            return rc;
        }
        pthread_rwlock_unlock(&f->latch);
        bp_unpin(bp, f);
    }
    return read_verify(bp, block, buf, pr);
}

void bp_get_stats(bp_pool *bp, bp_stats *st) {
    uint64_t c[C_COUNT] = {0};
    for (unsigned s = 0; s < 2 * NSTRIPE; s++)
        for (unsigned k = 0; k < C_COUNT; k++) c[k] += atomic_load(&bp->stripes[s].c[k]);
    st->reads = c[C_READS];
    st->writes = c[C_WRITES];
    st->hits = c[C_HITS];
    st->misses = c[C_MISSES];
    st->evictions = c[C_EVICTIONS];
    st->hint_writes = c[C_HINT_WRITES];
    st->kv_checks = c[C_KV_CHECKS];
    st->kv_check_bytes = c[C_KV_CHECK_BYTES];
    st->kv_code_bytes = c[C_KV_CODE_BYTES];
    st->kv_lazy_leaves = c[C_KV_LAZY];
    st->kv_lazy_coded = c[C_KV_LAZY_CODED];
    st->kv_bytes = (uint64_t)atomic_load(&bp->kv_bytes);
    st->kv_pages = (uint64_t)atomic_load(&bp->kv_pages);
    st->kv_keys = (uint64_t)atomic_load(&bp->kv_keys);
    st->frames = bp->nframes;
}
