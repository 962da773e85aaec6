/*
 * txn.c -- transaction status and snapshots (contract in txn.h).
 *
 * The status copy is a two-level table of chunks, so readers never see it
 * move: a chunk pointer is published once, with release order, and only
 * the writer adds chunks.  A status takes 2 bits (as in the commit log on
 * disk), four to a byte: a reader checking a random version's status (per
 * key-value protection asks on every get, btree.c bt_version_state) finds
 * a million transactions in 256 KiB, which stays in a core's L2 cache,
 * where a byte each spilled to L3 and main memory.
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "txn.h"

#define CHUNK_BITS  16u
#define CHUNK       (1u << CHUNK_BITS) /* statuses per chunk */
#define CHUNK_BYTES (CHUNK / 4u)
#define NCHUNKS     (1u << 14) /* 2^30 transactions */

struct eng_snapshot {
    uint64_t seq;
    struct eng_snapshot *prev, *next;
};

struct txn_mgr {
    _Atomic(uint8_t *) chunk[NCHUNKS];
    _Atomic uint64_t last_committed;
    /* Every id in [1, committed_prefix] is COMMITTED (statuses are set
     * once: T3).  txn_status answers ids below it without touching the
     * table, whose lines a reader checking random versions' statuses would
     * otherwise miss in cache on most gets; the first aborted or skipped
     * id stops it. */
    _Atomic uint64_t committed_prefix;
    pthread_mutex_t mu; /* the snapshot registry */
    eng_snapshot *head; /* oldest first: acquired in seq order */
    eng_snapshot *tail;
    uint64_t nsnap;
};

int txn_create(txn_mgr **out) {
    txn_mgr *m = calloc(1, sizeof *m);
    if (!m) return ENG_NOMEM;
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return ENG_OK;
}

void txn_destroy(txn_mgr *m) {
    if (!m) return;
    for (unsigned i = 0; i < NCHUNKS; i++) free(atomic_load(&m->chunk[i]));
    for (eng_snapshot *s = m->head, *n; s; s = n) {
        n = s->next;
        free(s);
    }
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int txn_status(const txn_mgr *m, uint64_t xid) {
    if (xid <= atomic_load_explicit(&((txn_mgr *)m)->committed_prefix, memory_order_acquire)) return CLOG_COMMITTED;
    uint64_t c = xid >> CHUNK_BITS;
    if (c >= NCHUNKS) return CLOG_IN_PROGRESS;
    uint8_t *p = atomic_load_explicit(&((txn_mgr *)m)->chunk[c], memory_order_acquire);
    if (!p) return CLOG_IN_PROGRESS;
    unsigned i = (unsigned)(xid & (CHUNK - 1));
    return (__atomic_load_n(p + i / 4, __ATOMIC_ACQUIRE) >> (2 * (i % 4))) & 3;
}

int txn_set_status(txn_mgr *m, uint64_t xid, int status) {
    uint64_t c = xid >> CHUNK_BITS;
    if (xid == 0 || c >= NCHUNKS) return ENG_NOSPACE;
    uint8_t *p = atomic_load(&m->chunk[c]);
    if (!p) {
        if (!(p = calloc(CHUNK_BYTES, 1))) return ENG_NOMEM;
        atomic_store_explicit(&m->chunk[c], p, memory_order_release);
    }
    /* Readers share the byte with three other statuses: change ours only. */
    unsigned i = (unsigned)(xid & (CHUNK - 1)), sh = 2 * (i % 4);
    uint8_t old = __atomic_load_n(p + i / 4, __ATOMIC_RELAXED), nw;
    do nw = (uint8_t)((old & ~(3u << sh)) | ((unsigned)status & 3u) << sh);
    while (!__atomic_compare_exchange_n(p + i / 4, &old, nw, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    /* Only the writer (or open) sets statuses: the prefix has one writer. */
    uint64_t pre = atomic_load_explicit(&m->committed_prefix, memory_order_relaxed), q = pre;
#ifdef ENG_BROKEN_COMMIT_PREFIX_SKIPS_CUT_BATCH
    /* planted bug (tests/mutants.txt): ids finish in order (T1), so the
     * prefix runs up to the id just set unless an abort stops it; but a
     * batch cut by a crash has no status at all (T3), so the first commit
     * after the reopen takes it for committed and its half-applied
     * operations become visible. */
    while (q < xid && txn_status(m, q + 1) != CLOG_ABORTED) q++;
#else
    while (txn_status(m, q + 1) == CLOG_COMMITTED) q++;
#endif
    if (q != pre) atomic_store_explicit(&m->committed_prefix, q, memory_order_release);
    return ENG_OK;
}

uint64_t txn_last_committed(const txn_mgr *m) { return atomic_load(&((txn_mgr *)m)->last_committed); }

void txn_publish(txn_mgr *m, uint64_t xid) {
    pthread_mutex_lock(&m->mu); /* T4: horizon and acquire see one order */
    /* T1: ids finish in order, so last_committed only grows */
    assert(xid >= atomic_load(&m->last_committed));
    atomic_store(&m->last_committed, xid);
    pthread_mutex_unlock(&m->mu);
}

int txn_snapshot_acquire(txn_mgr *m, eng_snapshot **out) {
#ifdef ENG_BROKEN_SNAPSHOT_SEQ_READ_BEFORE_REGISTRY_LOCK
    /* planted bug (tests/mutants.txt): the last commit is read before the
     * snapshot is allocated and registered under the mutex (it is atomic
     * anyway): a horizon taken in between (commits go on) does not count
     * the snapshot, and pruning or vacuum removes versions it then reads
     * (T4 broken: horizon and acquire no longer see one order). */
    uint64_t seq = atomic_load(&m->last_committed);
    eng_snapshot *s = calloc(1, sizeof *s);
    if (!s) return ENG_NOMEM;
    pthread_mutex_lock(&m->mu);
    s->seq = seq;
#else
    eng_snapshot *s = calloc(1, sizeof *s);
    if (!s) return ENG_NOMEM;
    pthread_mutex_lock(&m->mu);
    s->seq = atomic_load(&m->last_committed);
#endif
    /* the registry is oldest first: acquired in seq order (T1, T4) */
    assert(!m->tail || m->tail->seq <= s->seq);
    s->prev = m->tail;
    if (m->tail)
        m->tail->next = s;
    else
        m->head = s;
    m->tail = s;
    m->nsnap++;
    pthread_mutex_unlock(&m->mu);
    *out = s;
    return ENG_OK;
}

void txn_snapshot_release(txn_mgr *m, eng_snapshot *s) {
    if (!s) return;
    pthread_mutex_lock(&m->mu);
    assert(m->nsnap > 0 && m->head && m->tail); /* S is in the registry */
    if (s->prev)
        s->prev->next = s->next;
    else
        m->head = s->next;
#ifdef ENG_BROKEN_RELEASE_NEWEST_SNAPSHOT_CLEARS_TAIL
    /* planted bug (tests/mutants.txt): the tail line copies the head line's
     * neighbour: releasing the newest of two or more snapshots sets the
     * tail to its next (none), so the next acquire starts a new list and
     * the older snapshots drop out of the horizon (T4): pruning and vacuum
     * remove versions they still read. */
    if (s->next)
        s->next->prev = s->prev;
    else
        m->tail = s->next;
#else
    if (s->next)
        s->next->prev = s->prev;
    else
        m->tail = s->prev;
#endif
    m->nsnap--;
    pthread_mutex_unlock(&m->mu);
    free(s);
}

uint64_t txn_snapshot_seq(const eng_snapshot *s) { return s->seq; }

uint64_t txn_horizon(txn_mgr *m, uint64_t *active, uint64_t *oldest) {
    pthread_mutex_lock(&m->mu);
    /* T4: the registry's ends are its oldest and newest snapshots */
    assert(!m->head == !m->tail && (!m->head || m->head->seq <= m->tail->seq));
    assert(m->head || m->nsnap == 0);
    uint64_t h = atomic_load(&m->last_committed);
#ifdef ENG_BROKEN_HORIZON_NEWEST_SNAPSHOT
    /* planted bug (tests/mutants.txt): the horizon is taken from the
     * newest snapshot (tail), not the oldest (head): vacuum and pruning
     * remove versions an older snapshot still reads. */
    uint64_t o = m->tail ? m->tail->seq : 0;
#else
    uint64_t o = m->head ? m->head->seq : 0;
#endif
    if (m->head && o < h) h = o;
    if (active) *active = m->nsnap;
    if (oldest) *oldest = o;
    pthread_mutex_unlock(&m->mu);
    return h;
}
