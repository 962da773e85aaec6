/*
 * expected.c -- the oracle's expected state (format and protocol in
 * expected.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rng.h"
#include "expected.h"

#define MAGIC   0x313058455043524full /* "ORCEXP01" */
#define HDR     64u
#define NSTRIPE 1024u

/* The trace is a memory-mapped file of records (stores to a MAP_SHARED
 * mapping survive SIGKILL: they are in the page cache), with its record
 * count in the expected file's header (slot 5).  Settling is then a few
 * stores, no system call; the mapping grows by remapping under
 * trace_mu. */
#define TRACE_INITIAL (1u << 16) /* records */

struct orc_state {
    int fd, tfd, ifd;
    orc_inflight *inflight; /* ORC_INFLIGHT_SLOTS, MAP_SHARED */
    orc_trace_rec *trace;
    size_t trace_cap;          /* records mapped */
    pthread_rwlock_t trace_rw; /* exclusive only to remap */
    uint8_t *map;
    size_t maplen;
    uint64_t max_key;
    _Atomic uint64_t *entries; /* cur | pending << 32 */
    pthread_mutex_t stripes[NSTRIPE];
    pthread_mutex_t trace_mu;
    char dir[4096];
};

static uint64_t *hdr64(const orc_state *s, unsigned i) { return (uint64_t *)(s->map + 8 * i); }

static int map_trace(orc_state *s, size_t cap) {
    if (s->trace) munmap(s->trace, s->trace_cap * sizeof *s->trace);
    s->trace = NULL;
    if (ftruncate(s->tfd, (off_t)(cap * sizeof(orc_trace_rec))) != 0) return -errno;
    void *m = mmap(NULL, cap * sizeof(orc_trace_rec), PROT_READ | PROT_WRITE, MAP_SHARED, s->tfd, 0);
    if (m == MAP_FAILED) return -errno;
    s->trace = m;
    s->trace_cap = cap;
    return 0;
}

static _Atomic uint64_t *trace_count(const orc_state *s) { return (_Atomic uint64_t *)(s->map + 8 * 5); }

static int open_trace(orc_state *s, int truncate) {
    char path[4200];
    snprintf(path, sizeof path, "%s/trace", s->dir);
    if (s->trace) munmap(s->trace, s->trace_cap * sizeof *s->trace);
    s->trace = NULL;
    if (s->tfd >= 0) close(s->tfd);
    s->tfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
    if (s->tfd < 0) return -errno;
    if (truncate) atomic_store(trace_count(s), 0);
    size_t cap = TRACE_INITIAL, need = (size_t)atomic_load(trace_count(s));
    while (cap < need) cap *= 2;
    struct stat st;
    if (fstat(s->tfd, &st) == 0 && (size_t)st.st_size / sizeof(orc_trace_rec) > cap)
        cap = (size_t)st.st_size / sizeof(orc_trace_rec);
    return map_trace(s, cap);
}

#define INFLIGHT_BYTES (ORC_INFLIGHT_SLOTS * sizeof(orc_inflight))
_Static_assert(sizeof(orc_inflight) == 144, "expected.h's slot size");

/* Map EXP_DIR/inflight, emptied when FRESH. */
static int open_inflight(orc_state *s, int fresh) {
    char path[4200];
    snprintf(path, sizeof path, "%s/inflight", s->dir);
    s->ifd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->ifd < 0) return -errno;
    if ((fresh && ftruncate(s->ifd, 0) != 0) || ftruncate(s->ifd, (off_t)INFLIGHT_BYTES) != 0) return -errno;
    void *m = mmap(NULL, INFLIGHT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s->ifd, 0);
    if (m == MAP_FAILED) return -errno;
    s->inflight = m;
    return 0;
}

int orc_open(const char *exp_dir, uint64_t max_key, uint64_t seed, int fresh, orc_state **out) {
    *out = NULL;
    if (max_key == 0 || max_key > (1ull << 40)) return -EINVAL;
    if (mkdir(exp_dir, 0755) != 0 && errno != EEXIST) return -errno;
    orc_state *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->tfd = s->ifd = -1;
    snprintf(s->dir, sizeof s->dir, "%s", exp_dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/expected", exp_dir);
    s->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->fd < 0) {
        int e = errno;
        free(s);
        return -e;
    }
    struct stat st;
    fstat(s->fd, &st);
    s->maplen = HDR + 8 * max_key;
    int init = fresh || st.st_size == 0;
    if (!init && (size_t)st.st_size != s->maplen) {
        close(s->fd);
        free(s);
        return -EINVAL;
    }
    if (init && ftruncate(s->fd, 0) != 0) {
        int e = errno;
        close(s->fd);
        free(s);
        return -e;
    }
    if (init && ftruncate(s->fd, (off_t)s->maplen) != 0) {
        int e = errno;
        close(s->fd);
        free(s);
        return -e;
    }
    s->map = mmap(NULL, s->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (s->map == MAP_FAILED) {
        int e = errno;
        close(s->fd);
        free(s);
        return -e;
    }
    if (init) {
        *hdr64(s, 0) = MAGIC;
        *hdr64(s, 1) = max_key;
        *hdr64(s, 2) = seed;
    } else if (*hdr64(s, 0) != MAGIC || *hdr64(s, 1) != max_key) {
        munmap(s->map, s->maplen);
        close(s->fd);
        free(s);
        return -EINVAL;
    }
    s->max_key = max_key;
    s->entries = (_Atomic uint64_t *)(s->map + HDR);
    for (unsigned i = 0; i < NSTRIPE; i++) pthread_mutex_init(&s->stripes[i], NULL);
    pthread_mutex_init(&s->trace_mu, NULL);
    pthread_rwlock_init(&s->trace_rw, NULL);
    int rc = open_trace(s, init);
    if (!rc) rc = open_inflight(s, init);
    if (rc) {
        orc_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void orc_close(orc_state *s) {
    if (!s) return;
    msync(s->map, s->maplen, MS_SYNC);
    munmap(s->map, s->maplen);
    close(s->fd);
    if (s->trace) munmap(s->trace, s->trace_cap * sizeof *s->trace);
    if (s->tfd >= 0) close(s->tfd);
    if (s->inflight) munmap(s->inflight, INFLIGHT_BYTES);
    if (s->ifd >= 0) close(s->ifd);
    for (unsigned i = 0; i < NSTRIPE; i++) pthread_mutex_destroy(&s->stripes[i]);
    pthread_mutex_destroy(&s->trace_mu);
    pthread_rwlock_destroy(&s->trace_rw);
    free(s);
}

uint64_t orc_max_key(const orc_state *s) { return s->max_key; }
uint64_t orc_seed(const orc_state *s) { return *hdr64(s, 2); }

unsigned orc_nstripes(const orc_state *s) {
    (void)s;
    return NSTRIPE;
}
unsigned orc_stripe(const orc_state *s, uint64_t key) {
    (void)s;
    return (unsigned)(key % NSTRIPE);
}
void orc_lock_stripe(orc_state *s, unsigned i) { pthread_mutex_lock(&s->stripes[i]); }
void orc_unlock_stripe(orc_state *s, unsigned i) { pthread_mutex_unlock(&s->stripes[i]); }
void orc_lock(orc_state *s, uint64_t key) { orc_lock_stripe(s, orc_stripe(s, key)); }
void orc_unlock(orc_state *s, uint64_t key) { orc_unlock_stripe(s, orc_stripe(s, key)); }

static orc_entry unpack(uint64_t x) { return (orc_entry){(uint32_t)x, (uint32_t)(x >> 32)}; }
static uint64_t pack(orc_entry e) { return (uint64_t)e.cur | (uint64_t)e.pending << 32; }

orc_entry orc_get(const orc_state *s, uint64_t key) {
    return unpack(atomic_load_explicit(&s->entries[key], memory_order_acquire));
}

void orc_mark_pending(orc_state *s, uint64_t key, uint32_t new_v) {
    orc_entry e = orc_get(s, key);
    e.pending = new_v;
    atomic_store_explicit(&s->entries[key], pack(e), memory_order_release);
}

int orc_settle(orc_state *s, uint64_t key, uint64_t seq) {
    orc_entry e = orc_get(s, key);
    orc_trace_rec r = {.seq = seq, .key = key, .old_v = e.cur, .new_v = e.pending == ORC_DEL ? 0 : e.pending};
    /* Trace first: a crash between the two leaves the key pending, which
     * orc_rewind still handles (it undoes by the trace, pending or not).
     * A record claimed but not yet stored reads as seq 0: never undone,
     * and its key is still pending. */
    int rc = 0;
    uint64_t i = atomic_fetch_add(trace_count(s), 1);
    pthread_rwlock_rdlock(&s->trace_rw);
    while (i >= s->trace_cap) {
        pthread_rwlock_unlock(&s->trace_rw);
        pthread_rwlock_wrlock(&s->trace_rw);
        if (i >= s->trace_cap) rc = map_trace(s, s->trace_cap * 2);
        pthread_rwlock_unlock(&s->trace_rw);
        if (rc) return rc;
        pthread_rwlock_rdlock(&s->trace_rw);
    }
    s->trace[i] = r;
    pthread_rwlock_unlock(&s->trace_rw);
    uint64_t *last = hdr64(s, 4), cur = __atomic_load_n(last, __ATOMIC_RELAXED);
    while (seq > cur && !__atomic_compare_exchange_n(last, &cur, seq, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    e.cur = r.new_v;
    e.pending = 0;
    atomic_store_explicit(&s->entries[key], pack(e), memory_order_release);
    return 0;
}

void orc_resolve(orc_state *s, uint64_t key, uint32_t v) {
    atomic_store_explicit(&s->entries[key], pack((orc_entry){v, 0}), memory_order_release);
}

uint32_t orc_next_value(orc_state *s, uint64_t key, uint64_t rnd) {
    orc_entry e = orc_get(s, key);
    uint32_t v = (uint32_t)(rnd % 0xfffffffdu) + 1; /* 1 .. ORC_DEL-1 */
    if (v == e.cur) v = v % 0xfffffffdu + 1;
    return v;
}

void orc_note_durable(orc_state *s, uint64_t seq) {
    pthread_mutex_lock(&s->trace_mu);
    uint64_t *d = hdr64(s, 3);
    if (seq > *d) *d = seq;
    pthread_mutex_unlock(&s->trace_mu);
}
uint64_t orc_durable_seq(const orc_state *s) { return *hdr64(s, 3); }
uint64_t orc_last_seq(const orc_state *s) { return *hdr64(s, 4); }

int64_t orc_rewind(orc_state *s, uint64_t r) {
    if (r < orc_durable_seq(s)) return -1;
    size_t n = (size_t)atomic_load(trace_count(s));
    if (n > s->trace_cap) n = s->trace_cap; /* claimed past the mapping: never stored */
    int64_t undone = 0;
    for (size_t i = n; i-- > 0;) {
        orc_trace_rec rec = s->trace[i];
        if (rec.seq <= r || rec.key >= s->max_key) continue;
        orc_entry e = orc_get(s, rec.key);
        /* The write never happened as far as the database goes; if the key
         * is still pending (crashed mid-write), it stays so. */
        e.cur = rec.old_v;
        atomic_store_explicit(&s->entries[rec.key], pack(e), memory_order_release);
        undone++;
    }
    return undone;
}

int orc_checkpoint_trace(orc_state *s, uint64_t r) {
    pthread_mutex_lock(&s->trace_mu);
    pthread_rwlock_wrlock(&s->trace_rw);
    *hdr64(s, 3) = r;
    *hdr64(s, 4) = r;
    int rc = open_trace(s, 1);
    pthread_rwlock_unlock(&s->trace_rw);
    pthread_mutex_unlock(&s->trace_mu);
    msync(s->map, s->maplen, MS_ASYNC);
    return rc;
}

/* ---- values ---- */

/* One splitmix64 step from X (common/rng.h): X is a state, not a stream. */
void orc_inflight_begin(orc_state *s, unsigned slot, const orc_inflight *b) {
    if (slot >= ORC_INFLIGHT_SLOTS || b->n < 2 || b->n > ORC_INFLIGHT_KEYS) return;
    orc_inflight *d = &s->inflight[slot];
    orc_inflight c = *b;
    c.n = 0;
    *d = c;
    /* The count last: a slot a kill interrupts mid-copy reads as free. */
    atomic_store_explicit((_Atomic uint32_t *)&d->n, b->n, memory_order_release);
}

void orc_inflight_end(orc_state *s, unsigned slot) {
    if (slot < ORC_INFLIGHT_SLOTS)
        atomic_store_explicit((_Atomic uint32_t *)&s->inflight[slot].n, 0, memory_order_release);
}

size_t orc_inflight_read(const orc_state *s, orc_inflight *out, size_t cap) {
    size_t k = 0;
    for (unsigned i = 0; i < ORC_INFLIGHT_SLOTS && k < cap; i++) {
        uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&s->inflight[i].n, memory_order_acquire);
        if (n >= 2 && n <= ORC_INFLIGHT_KEYS) out[k++] = s->inflight[i];
    }
    return k;
}

void orc_inflight_clear(orc_state *s) {
    for (unsigned i = 0; i < ORC_INFLIGHT_SLOTS; i++) orc_inflight_end(s, i);
}

static uint64_t mix(uint64_t x) { return rng_next(&x); }

size_t orc_value_len(uint64_t key, uint32_t v, size_t min_len, size_t max_len) {
    if (min_len < 12) min_len = 12;
    if (max_len < min_len) max_len = min_len;
    return min_len + (size_t)(mix(key * 0x100000001b3ull ^ v) % (max_len - min_len + 1));
}

void orc_value(uint64_t key, uint32_t v, uint8_t *buf, size_t len) {
    uint64_t k = key;
    memcpy(buf, &k, 8);
    memcpy(buf + 8, &v, 4);
    uint64_t x = mix(key ^ ((uint64_t)v << 32));
    for (size_t i = 12; i < len; i += 8) {
        x = mix(x);
        size_t n = len - i < 8 ? len - i : 8;
        memcpy(buf + i, &x, n);
    }
}

int orc_value_is(uint64_t key, uint32_t v, const uint8_t *buf, size_t len, size_t want_len) {
    if (len != want_len) return 0;
    uint8_t tmp[4096];
    uint8_t *want = len <= sizeof tmp ? tmp : malloc(len);
    if (!want) return 0;
    orc_value(key, v, want, len);
#ifdef ENG_BROKEN_EXPECTED_VALUE_CHECKS_ONLY_ITS_HEADER
    /* planted bug (tests/harness_mutants.txt): only the key and version
     * that open a value are compared: damage past them passes. */
    int ok = memcmp(want, buf, 12) == 0;
#else
    int ok = memcmp(want, buf, len) == 0;
#endif
    if (want != tmp) free(want);
    return ok;
}

int orc_value_ok(uint64_t key, uint32_t v, const uint8_t *buf, size_t len, size_t min_len, size_t max_len) {
    return orc_value_is(key, v, buf, len, orc_value_len(key, v, min_len, max_len));
}

int orc_value_whose(const uint8_t *buf, size_t len, uint64_t *key, uint32_t *v) {
    if (len < 12) return -1;
    memcpy(key, buf, 8);
    memcpy(v, buf + 8, 4);
    return 0;
}
