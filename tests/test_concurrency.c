/*
 * test_concurrency.c -- one writer and concurrent readers on one handle,
 * with a cache small enough to force eviction, never see an error or a
 * value that was not written, and the final state is the writer's.
 *
 * Values encode (key, version): a 12-byte header (u32 key index, u32
 * version, u32 length) and a body that is a pure function of the three, so
 * a reader can prove a value is one the writer wrote for that key.  The
 * writer's operation for (key, version) is also a pure function (put or
 * delete), so a reader can tell a version that was never a put.
 * Readers assert, for every observation:
 *   CC1  status is OK or NOTFOUND (gets) / OK or NOTFOUND (iterator moves);
 *   CC2  the value is self-consistent and belongs to the key it is under;
 *   CC3  its version was a put, and was already started by the writer;
 *   CC4  per reader and key, versions never go backwards (a read never sees
 *        an older value than an earlier read saw);
 *   CC5  iterator scans return keys in strictly increasing (decreasing for
 *        prev) order.
 * And checkpoint_fsync_never_passes_a_page_write_in_flight (which also
 * checks L6, no two writes of one block in flight at once): while a writer
 * and a reader evict dirty pages, no fsync of the data file by a
 * checkpoint starts while another thread's page write is in flight.
 * Threads record the first failure; the main thread asserts after joining
 * (Criterion asserts only on the test's own thread).  A deadlock ends in
 * the Criterion timeout.  Runs with both I/O backends.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>

#include "testutil.h"

#define NK         10000
#define WRITER_OPS 50000
/* 32 pages is the engine's own floor (MIN_FRAMES; engine.h promises 16):
 * the data set is ~1.5 MiB, so both sizes evict constantly. */
#define CACHE_PAGES        32
#define CACHE_PAGES_VERIFY 64

typedef struct shared {
    eng_db *db;
    _Atomic uint32_t started[NK]; /* highest version the writer has begun */
    atomic_int writer_done;
    atomic_int failed;
    pthread_mutex_t mu;
    char msg[512];
    atomic_ulong reader_gets, reader_found, reader_scanned, verifies;
    int verify_thread;
} shared;

static shared S;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    pthread_mutex_lock(&S.mu);
    if (!atomic_load(&S.failed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(S.msg, sizeof S.msg, fmt, ap);
        va_end(ap);
        atomic_store(&S.failed, 1);
    }
    pthread_mutex_unlock(&S.mu);
}

/* The writer's op for version V of key I: 1 = delete. */
static int is_delete(uint32_t i, uint32_t v) { return rng_mix64(((uint64_t)i << 32) | v) % 4 == 0; }

static size_t value_len(uint32_t i, uint32_t v) {
    uint64_t h = rng_mix64(((uint64_t)v << 32) | i | 0x8000000000000000ull);
    if (h % 250 == 0) return 12 + 9000 + h % 12000; /* overflow */
    return 12 + h % 200;
}

static size_t make_value(uint8_t *buf, uint32_t i, uint32_t v) {
    size_t len = value_len(i, v);
    uint32_t hdr[3] = {i, v, (uint32_t)len};
    memcpy(buf, hdr, 12);
    tu_fill(buf + 12, len - 12, ((uint64_t)i << 32) ^ v ^ 0x5a5a5a5aull);
    return len;
}

/* CC2: returns the version, or 0 with *why set. */
static uint32_t parse_value(const void *val, size_t len, uint32_t key, const char **why) {
    static __thread uint8_t exp[12 + 9000 + 12000];
    uint32_t hdr[3];
    if (len < 12) {
        *why = "value shorter than its header";
        return 0;
    }
    memcpy(hdr, val, 12);
    if (hdr[0] != key) {
        *why = "value belongs to another key";
        return 0;
    }
    if (hdr[1] == 0) {
        *why = "version 0 was never written";
        return 0;
    }
    if (hdr[2] != len || len != value_len(key, hdr[1])) {
        *why = "value length does not match its header";
        return 0;
    }
    make_value(exp, key, hdr[1]);
    if (memcmp(exp, val, len)) {
        *why = "value body is not the one written";
        return 0;
    }
    return hdr[1];
}

static int key_index(const void *k, size_t kl) { return (int)tu_key_index(k, kl, NK); }

/* CC2-CC4 for one observation of KEY with VALUE. */
static int observe(uint32_t *seen, uint32_t key, const void *val, size_t len, const char *how) {
    const char *why = "";
    uint32_t v = parse_value(val, len, key, &why);
    if (!v) {
        fail("%s of key %u: %s (len %zu)", how, key, why, len);
        return 0;
    }
    if (is_delete(key, v)) {
        fail("%s of key %u: version %u was a delete, never a put", how, key, v);
        return 0;
    }
    uint32_t st = atomic_load(&S.started[key]);
    if (v > st) {
        fail("%s of key %u: version %u not yet started by the writer (at %u)", how, key, v, st);
        return 0;
    }
    if (v < seen[key]) {
        fail("%s of key %u: version %u after this reader saw version %u (went back in time)", how, key, v, seen[key]);
        return 0;
    }
    seen[key] = v;
    return 1;
}

typedef struct model_entry {
    uint32_t ver;
    int present;
} model_entry;
static model_entry M[NK];

static void *writer(void *arg) {
    (void)arg;
    tu_rng r = {0x3717e5};
    static uint8_t buf[12 + 9000 + 12000];
    eng_buf b = {0};
    uint32_t ver[NK] = {0};
    for (int op = 0; op < WRITER_OPS && !atomic_load(&S.failed); op++) {
        uint32_t i = (uint32_t)tu_below(&r, NK);
        uint32_t v = ++ver[i];
        atomic_store(&S.started[i], v);
        char k[16];
        size_t kl = tu_key(k, i);
        int rc;
        if (is_delete(i, v)) {
            rc = eng_delete(S.db, k, kl, NULL);
            int want = M[i].present ? ENG_OK : ENG_NOTFOUND;
            if (rc != want) {
                fail("writer op %d: delete key %u v%u: %s, expected %s", op, i, v, eng_strerror(rc),
                     eng_strerror(want));
                break;
            }
            M[i].present = 0;
        } else {
            size_t len = make_value(buf, i, v);
            rc = eng_put(S.db, k, kl, buf, len, NULL);
            if (rc != ENG_OK) {
                fail("writer op %d: put key %u v%u: %s", op, i, v, eng_strerror(rc));
                break;
            }
            M[i].present = 1;
            M[i].ver = v;
            if (op % 16 == 0) { /* read your own write */
                rc = eng_get(S.db, k, kl, &b);
                if (rc != ENG_OK || !tu_bytes_eq(b.data, b.len, buf, len)) {
                    fail("writer op %d: get right after put of key %u v%u: %s, len %zu vs %zu", op, i, v,
                         eng_strerror(rc), b.len, len);
                    break;
                }
            }
        }
    }
    eng_buf_free(&b);
    atomic_store(&S.writer_done, 1);
    return NULL;
}

static void *reader(void *arg) {
    uint64_t id = (uint64_t)(uintptr_t)arg;
    tu_rng r = {0xbeef0000 + id};
    uint32_t *seen = calloc(NK, sizeof *seen);
    eng_buf b = {0};
    while (!atomic_load(&S.writer_done) && !atomic_load(&S.failed)) {
        uint32_t i = (uint32_t)tu_below(&r, NK);
        char k[16];
        size_t kl = tu_key(k, i);
        if (tu_below(&r, 10) < 7) {
            int rc = eng_get(S.db, k, kl, &b);
            atomic_fetch_add(&S.reader_gets, 1);
            if (rc == ENG_OK) {
                atomic_fetch_add(&S.reader_found, 1);
                if (!observe(seen, i, b.data, b.len, "get")) break;
            } else if (rc != ENG_NOTFOUND) {
                fail("reader %llu: get of key %u: %s", (unsigned long long)id, i, eng_strerror(rc));
                break;
            }
            continue;
        }
        /* a short scan, forward or backward, from a seek */
        int back = tu_below(&r, 3) == 0;
        eng_iter *it;
        eng_iter_options io = {0};
        int rc = eng_iter_open(S.db, &io, &it);
        if (rc != ENG_OK) {
            fail("reader: iter_open: %s", eng_strerror(rc));
            break;
        }
        rc = back ? eng_iter_seek_prev(it, k, kl) : eng_iter_seek(it, k, kl);
        int prev = -1, steps = (int)tu_range(&r, 1, 25), ok = 1;
        for (int s = 0; s < steps && rc == ENG_OK; s++) {
            size_t kl2, vl;
            const void *k2 = eng_iter_key(it, &kl2), *v = eng_iter_value(it, &vl);
            int ki = key_index(k2, kl2);
            if (ki < 0) {
                fail("scan returned a key that was never written (len %zu)", kl2);
                ok = 0;
                break;
            }
            if (s == 0 && (back ? ki > (int)i : ki < (int)i)) {
                fail("%s to key %u landed on key %d", back ? "seek_prev" : "seek", i, ki);
                ok = 0;
                break;
            }
            if (prev >= 0 && (back ? ki >= prev : ki <= prev)) {
                fail("%s scan: key %d after key %d", back ? "backward" : "forward", ki, prev);
                ok = 0;
                break;
            }
            prev = ki;
            if (!observe(seen, (uint32_t)ki, v, vl, back ? "backward scan" : "forward scan")) {
                ok = 0;
                break;
            }
            atomic_fetch_add(&S.reader_scanned, 1);
            rc = back ? eng_iter_prev(it) : eng_iter_next(it);
        }
        if (ok && rc != ENG_OK && rc != ENG_NOTFOUND) {
            fail("reader %llu: iterator move: %s", (unsigned long long)id, eng_strerror(rc));
            ok = 0;
        }
        eng_iter_close(it);
        if (!ok) break;
    }
    eng_buf_free(&b);
    free(seen);
    return NULL;
}

static void *verifier(void *arg) {
    (void)arg;
    tu_reports *rep = calloc(1, sizeof *rep);
    tu_reports_init(rep);
    while (!atomic_load(&S.writer_done) && !atomic_load(&S.failed)) {
        uint64_t probs = 0;
        int rc = eng_verify(S.db, tu_collect, rep, &probs);
        atomic_fetch_add(&S.verifies, 1);
        if (rc != ENG_OK || probs) {
            char buf[1024];
            fail("eng_verify during writes: %s, %llu problems:\n%s", eng_strerror(rc), (unsigned long long)probs,
                 tu_reports_str(rep, buf, sizeof buf));
            break;
        }
    }
    free(rep);
    return NULL;
}

/* Every key's final state is the writer's. */
static void check_final(eng_db *db, const char *what) {
    eng_buf b = {0};
    static uint8_t exp[12 + 9000 + 12000];
    tu_model m = {0};
    for (uint32_t i = 0; i < NK; i++) {
        char k[16];
        size_t kl = tu_key(k, i);
        int rc = eng_get(db, k, kl, &b);
        if (!M[i].present) {
            cr_assert_eq(rc, ENG_NOTFOUND, "%s: key %u was deleted last, get says %s", what, i, eng_strerror(rc));
            continue;
        }
        size_t len = make_value(exp, i, M[i].ver);
        cr_assert_eq(rc, ENG_OK, "%s: key %u (v%u): %s", what, i, M[i].ver, eng_strerror(rc));
        cr_assert(tu_bytes_eq(b.data, b.len, exp, len), "%s: key %u holds not its last version %u", what, i, M[i].ver);
        tu_model_put(&m, k, kl, exp, len);
    }
    eng_buf_free(&b);
    tu_check_scan(db, &m, what);
    tu_model_free(&m);
}

static void run(int backend, int with_verifier, int nreaders, size_t cache_pages) {
    const char *dir = tu_tmpdir();
    memset(&S, 0, sizeof S);
    memset(M, 0, sizeof M);
    pthread_mutex_init(&S.mu, NULL);
    static tu_reports rep;
    tu_reports_init(&rep);
    eng_options o = tu_opts(backend, 0, cache_pages, &rep);
    S.db = tu_open(dir, &o);

    pthread_t w, rd[4], vt;
    cr_assert_eq(pthread_create(&w, NULL, writer, NULL), 0);
    for (int i = 0; i < nreaders; i++) cr_assert_eq(pthread_create(&rd[i], NULL, reader, (void *)(uintptr_t)i), 0);
    if (with_verifier) cr_assert_eq(pthread_create(&vt, NULL, verifier, NULL), 0);
    pthread_join(w, NULL);
    for (int i = 0; i < nreaders; i++) pthread_join(rd[i], NULL);
    if (with_verifier) pthread_join(vt, NULL);

    cr_log_info("[%s] %zu-page cache: reader gets %lu (found %lu), scanned %lu, verifies %lu", tu_backend_name(backend),
                cache_pages, atomic_load(&S.reader_gets), atomic_load(&S.reader_found), atomic_load(&S.reader_scanned),
                atomic_load(&S.verifies));
    char rs[2048];
    cr_assert(!atomic_load(&S.failed), "[%s] %s", tu_backend_name(backend), S.msg);
    cr_assert_eq(rep.total, 0, "[%s] corruption reported during the run:\n%s", tu_backend_name(backend),
                 tu_reports_str(&rep, rs, sizeof rs));
    cr_assert_gt(atomic_load(&S.reader_gets), 0, "readers never ran");
    if (with_verifier) cr_assert_gt(atomic_load(&S.verifies), 0, "verifier never ran");

    eng_stats st;
    cr_assert_eq(eng_get_stats(S.db, &st), ENG_OK);
    cr_assert_gt(st.evictions, 0, "a %zu-page cache never evicted", cache_pages);
    check_final(S.db, "final state, same handle");
    tu_close(S.db);

    eng_options o2 = tu_opts(backend, 0, 0, &rep);
    eng_db *db = tu_open(dir, &o2);
    check_final(db, "final state after reopen");
    uint64_t probs = 1;
    cr_assert_eq(eng_verify(db, tu_collect, &rep, &probs), ENG_OK);
    cr_assert_eq(probs, 0);
    tu_close(db);
}

TU_BACKEND_TEST(concurrency, writer_and_two_readers_see_only_written_values_in_order, .timeout = 60,
                .fini = tu_cleanup) {
    run(*backend, 0, 2, CACHE_PAGES);
}

/* The timeout is a hang guard only: under ASan with the machine loaded
 * (a nightly crash test beside it) one case took 47 s. */
TU_BACKEND_TEST(concurrency, verify_during_writes_reports_no_false_corruption, .timeout = 180, .fini = tu_cleanup) {
    run(*backend, 1, 1, CACHE_PAGES_VERIFY);
}

/* ---- a checkpoint's fsync and write-backs in flight ----
 * An eviction clears a frame's dirty flag before its write completes (L5
 * in engine/bufpool.h).  A checkpoint that flushed only the frames dirty
 * when it started could fsync the data file while such a write was still
 * in flight, then move its redo point past changes a power loss can still
 * take away (found by crashtest.py: a commit below the redo point lost
 * after a kill and a power loss that rolled the late write back).  Hooks
 * delay data-file writes (the reader's evictions by 20 ms, others by
 * 0.2 ms); the test numbers its checkpoint
 * calls, each write remembers the number current when it began, and a
 * checkpoint's data-file fsync must find no write still in flight that
 * began before that checkpoint was called (later ones carry changes after
 * its redo point, which redo replays). */
#define IH_SLOTS 64
typedef struct inflight_hooks {
    pthread_mutex_t mu;
    struct {
        const void *buf;
        uint64_t off;
        int gen;
        int used;
    } w[IH_SLOTS];
    _Atomic int gen; /* checkpoint calls so far */
    _Atomic int violations, syncs, writes;
    _Atomic int overlaps; /* a write of a block began while another write of it was in flight (L6) */
} inflight_hooks;

/* The reader's write-backs (evictions outside the writer lock) are the
 * slow ones, so they straddle checkpoints. */
static _Thread_local int ih_slow_thread;

static int is_data_file(const eng_io_op *op) {
    size_t n = op->path ? strlen(op->path) : 0;
    return n >= 5 && !strcmp(op->path + n - 5, "/data");
}
static int ih_before(void *ctx, eng_io_op *op) {
    inflight_hooks *h = ctx;
    if (!is_data_file(op)) return 0;
    if (op->kind == ENG_IO_WRITE) {
        pthread_mutex_lock(&h->mu);
        for (int i = 0; i < IH_SLOTS; i++)
            if (h->w[i].used && h->w[i].off == op->offset) atomic_fetch_add(&h->overlaps, 1);
        for (int i = 0; i < IH_SLOTS; i++)
            if (!h->w[i].used) {
                h->w[i].buf = op->buf, h->w[i].off = op->offset, h->w[i].gen = atomic_load(&h->gen), h->w[i].used = 1;
                break;
            }
        pthread_mutex_unlock(&h->mu);
        atomic_fetch_add(&h->writes, 1);
        usleep(ih_slow_thread ? 20000 : 200);
    } else if (op->kind == ENG_IO_SYNC) {
        int g = atomic_load(&h->gen), bad = 0;
        atomic_fetch_add(&h->syncs, 1);
        pthread_mutex_lock(&h->mu);
        for (int i = 0; i < IH_SLOTS; i++) bad |= h->w[i].used && h->w[i].gen < g;
        pthread_mutex_unlock(&h->mu);
        if (bad) atomic_fetch_add(&h->violations, 1);
    }
    return 0;
}
static void ih_after(void *ctx, eng_io_op *op) {
    inflight_hooks *h = ctx;
    if (!is_data_file(op) || op->kind != ENG_IO_WRITE) return;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < IH_SLOTS; i++)
        if (h->w[i].used && h->w[i].buf == op->buf && h->w[i].off == op->offset) {
            h->w[i].used = 0;
            break;
        }
    pthread_mutex_unlock(&h->mu);
}

typedef struct ih_run {
    eng_db *db;
    _Atomic int stop;
    _Atomic int errors;
} ih_run;

static void *ih_writer(void *arg) {
    ih_run *r = arg;
    uint8_t v[300];
    char k[16];
    for (int i = 0; i < 3000; i++) {
        size_t kl = tu_key(k, (uint64_t)(i * 7919) % 4000);
        memset(v, i & 0xff, sizeof v);
        if (eng_put(r->db, k, kl, v, 200 + i % 100, NULL) != ENG_OK) atomic_fetch_add(&r->errors, 1);
    }
    atomic_store(&r->stop, 1);
    return NULL;
}
static void *ih_reader(void *arg) {
    ih_run *r = arg;
    ih_slow_thread = 1;
    eng_buf b = {0};
    char k[16];
    for (uint64_t i = 0; !atomic_load(&r->stop); i++) {
        size_t kl = tu_key(k, (i * 104729) % 4000);
        int rc = eng_get(r->db, k, kl, &b);
        if (rc != ENG_OK && rc != ENG_NOTFOUND) atomic_fetch_add(&r->errors, 1);
    }
    eng_buf_free(&b);
    return NULL;
}

TU_BACKEND_TEST(concurrency, checkpoint_fsync_never_passes_a_page_write_in_flight, .timeout = 120, .fini = tu_cleanup) {
    const char *dir = tu_tmpdir();
    inflight_hooks h = {.mu = PTHREAD_MUTEX_INITIALIZER};
    eng_io_hooks hooks = {.ctx = &h, .before = ih_before, .after = ih_after};
    eng_options o = tu_opts(*backend, 4096, 16, NULL);
    o.io_hooks = &hooks;
    o.checkpoint_wal_bytes = 0;
    ih_run r = {.db = tu_open(dir, &o)};
    pthread_t w, rd;
    pthread_create(&w, NULL, ih_writer, &r);
    pthread_create(&rd, NULL, ih_reader, &r);
    int ckpts = 0;
    while (!atomic_load(&r.stop)) {
        atomic_fetch_add(&h.gen, 1);
        cr_assert_eq(eng_checkpoint(r.db), ENG_OK);
        ckpts++;
    }
    pthread_join(w, NULL);
    pthread_join(rd, NULL);
    tu_close(r.db);
    cr_assert_eq(atomic_load(&r.errors), 0);
    cr_assert_gt(ckpts, 10, "only %d checkpoints ran", ckpts);
    cr_assert_eq(atomic_load(&h.violations), 0,
                 "[%s] %d of %d data-file fsyncs started while a page write begun before their checkpoint was in "
                 "flight (%d writes, %d checkpoints)",
                 tu_backend_name(*backend), atomic_load(&h.violations), atomic_load(&h.syncs), atomic_load(&h.writes),
                 ckpts);
    /* L6: readers re-dirty frames with hint bits under a shared latch;
     * a second write-back of a block must still wait for the first. */
    cr_assert_eq(atomic_load(&h.overlaps), 0, "[%s] %d page writes overlapped another write of the same block",
                 tu_backend_name(*backend), atomic_load(&h.overlaps));
}
