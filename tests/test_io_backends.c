/*
 * test_io_backends.c -- engine/io.c: both backends (io_uring and psync)
 * pass the same suite.
 *
 * Every test is parameterized over the backend.  It proves the io.h
 * contract (round trips, EOF, batches, sync, metadata operations) and the
 * hook contract of engine.h that the fault library relies on: a before()
 * error fails the operation unissued and is translated once; skip is a
 * lost write reported as done; a shortened length is a torn write; a
 * redirected buffer changes what lands on disk; after() can corrupt what a
 * read returns or fail the call; batches call the hooks once per request
 * with every before() ahead of the after()s.
 *
 * If the kernel refuses io_uring, the io_uring instances are skipped with
 * the reason (io_ctx_create must say ENG_NOTSUP, never fall back).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "io.h"

/* ---- fixture: temp dir, context, file ---------------------------------- */

#define MAX_REC 512

/* One hook call as recorded (paths copied: the op's pointers die with it). */
typedef struct rec_op {
    int phase; /* 0 before, 1 after */
    int kind, file_id;
    char path[4096], path2[4096];
    uint64_t offset;
    size_t len;
    int64_t result;
} rec_op;

/* What the test hook does; set per test. */
typedef struct hook_cfg {
    int kind;            /* the kind the fault applies to, -1 = none */
    int before_err;      /* negative errno returned by before() */
    int skip;            /* set op->skip */
    size_t shorten_to;   /* nonzero: op->len = shorten_to */
    int flip_write;      /* redirect op->buf to a copy with byte 0 flipped */
    int flip_read_after; /* flip byte 0 of the read buffer in after() */
    int after_err;       /* after(): replace result with this negative errno */
    int drop_and_read;   /* failing sync: roll the file back, start a reader */
} hook_cfg;

static struct {
    char dir[64];
    io_ctx *io;
    hook_cfg cfg;
    rec_op rec[MAX_REC];
    int nrec;
    int counts[2][ENG_IO_KIND_COUNT]; /* every call, even past MAX_REC */
    pthread_mutex_t mu;
    unsigned char wcopy[65536];
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void record(int phase, const eng_io_op *op) {
    pthread_mutex_lock(&T.mu);
    if (op->kind >= 0 && op->kind < ENG_IO_KIND_COUNT) T.counts[phase][op->kind]++;
    if (T.nrec < MAX_REC) {
        rec_op *r = &T.rec[T.nrec++];
        r->phase = phase;
        r->kind = op->kind;
        r->file_id = op->file_id;
        snprintf(r->path, sizeof r->path, "%s", op->path ? op->path : "");
        snprintf(r->path2, sizeof r->path2, "%s", op->path2 ? op->path2 : "");
        r->offset = op->offset;
        r->len = op->len;
        r->result = op->result;
    }
    pthread_mutex_unlock(&T.mu);
}

static int test_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    record(0, op);
    if (op->kind != T.cfg.kind) return 0;
    if (T.cfg.before_err) return T.cfg.before_err;
    if (T.cfg.skip) op->skip = 1;
    if (T.cfg.shorten_to) op->len = T.cfg.shorten_to;
    if (T.cfg.flip_write && op->len <= sizeof T.wcopy) {
        /* The caller's buffer is const: corrupt a copy, as a fault
         * library must. */
        memcpy(T.wcopy, op->buf, op->len);
        T.wcopy[0] ^= 0xFF;
        op->buf = T.wcopy;
    }
    return 0;
}

/* A failing fsync that drops the dirty page as Linux may (the file goes
 * back to its old contents), with a reader of that page running while the
 * fsync has not yet returned (io.h R1). */
static struct {
    io_file *f;
    pthread_t th;
    int rc;
    unsigned char buf[4096];
    const unsigned char *old;
} DR;

static void *dr_reader(void *arg) {
    (void)arg;
    size_t done = 0;
    DR.rc = io_read(T.io, DR.f, DR.buf, sizeof DR.buf, 0, &done);
    return NULL;
}

static void drop_and_read_during_sync(void) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", T.dir, DR.f->name);
    int fd = open(p, O_WRONLY);
    if (fd < 0 || pwrite(fd, DR.old, 4096, 0) != 4096) abort();
    close(fd);
    pthread_create(&DR.th, NULL, dr_reader, NULL);
    usleep(50000); /* the read completes while this fsync is still in flight */
}

static void test_after(void *ctx, eng_io_op *op) {
    (void)ctx;
    record(1, op);
    if (op->kind != T.cfg.kind) return;
    if (T.cfg.flip_read_after && op->result > 0) ((unsigned char *)op->buf)[0] ^= 0xFF;
    if (T.cfg.drop_and_read && op->kind == ENG_IO_SYNC) drop_and_read_during_sync();
    if (T.cfg.after_err) op->result = T.cfg.after_err;
}

static const eng_io_hooks test_hooks = {.ctx = NULL, .before = test_before, .after = test_after};

static void reset_rec(void) {
    T.nrec = 0;
    memset(T.counts, 0, sizeof T.counts);
}

static void no_fault(void) {
    memset(&T.cfg, 0, sizeof T.cfg);
    T.cfg.kind = -1;
}

static void make_dir(void) {
    strcpy(T.dir, "/tmp/test_io_XXXXXX");
    cr_assert_not_null(mkdtemp(T.dir));
}

static void remove_dir(void) {
    DIR *d = opendir(T.dir);
    if (d) {
        struct dirent *e;
        char p[4200];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", T.dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(T.dir);
}

/* Temp dir plus a context on BACKEND with the recording hook; skips the
 * test (with the kernel's reason) if io_uring is refused. */
static void setup(int backend) {
    no_fault();
    reset_rec();
    make_dir();
    int rc = io_ctx_create(backend, &test_hooks, &T.io);
    if (rc == ENG_NOTSUP && backend == ENG_IO_URING) {
        int e = errno;
        remove_dir();
        cr_skip_test("io_uring refused by the kernel: %s", strerror(e));
    }
    cr_assert_eq(rc, ENG_OK, "io_ctx_create(%d) = %d", backend, rc);
    cr_assert_eq(io_backend(T.io), backend);
}

static void teardown_io(void) {
    io_ctx_destroy(T.io);
    T.io = NULL;
    remove_dir();
}

static void open_file(const char *name, int id, io_file *f) {
    cr_assert_eq(io_open(T.io, T.dir, name, id, 1, 0, f), ENG_OK);
    cr_assert_geq(f->fd, 0);
}

static void fill(unsigned char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

/* Read the file's bytes at OFF behind io's back. */
static void raw_read(const char *name, void *buf, size_t len, off_t off) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", T.dir, name);
    int fd = open(p, O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pread(fd, buf, len, off), (ssize_t)len);
    close(fd);
}

static int exists(const char *name) {
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", T.dir, name);
    return stat(p, &st) == 0;
}

static int count(int phase, int kind) { return T.counts[phase][kind]; }

static const rec_op *find(int phase, int kind) {
    for (int i = 0; i < T.nrec; i++)
        if (T.rec[i].phase == phase && T.rec[i].kind == kind) return &T.rec[i];
    return NULL;
}

/* Write a known 4096-byte page at 0 without faults. */
static void base_page(io_file *f, unsigned char *page) {
    fill(page, 4096, 1);
    cr_assert_eq(io_write(T.io, f, page, 4096, 0), ENG_OK);
    reset_rec();
}

#define IO_TEST(name)                                                         \
    ParameterizedTestParameters(io_backends, name) {                          \
        static int b[] = {ENG_IO_URING, ENG_IO_PSYNC};                        \
        return cr_make_param_array(int, b, sizeof b / sizeof b[0]);           \
    }                                                                         \
    static void body_##name(int backend);                                     \
    ParameterizedTest(int *backend, io_backends, name, .fini = teardown_io) { \
        setup(*backend);                                                      \
        body_##name(*backend);                                                \
    }                                                                         \
    static void body_##name(int backend)

/* ---- round trips ------------------------------------------------------- */

IO_TEST(round_trip_offsets_and_sizes) {
    (void)backend;
    static const size_t sizes[] = {1, 511, 4096, 8192, 65543, 1u << 20};
    static const uint64_t offs[] = {0, 1, 4095, 123457, 3u << 20};
    io_file f;
    open_file("data", 7, &f);
    unsigned char *w = malloc(1u << 20), *r = malloc(1u << 20);
    cr_assert(w && r);
    unsigned seed = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t j = 0; j < sizeof offs / sizeof *offs; j++) {
            fill(w, sizes[i], ++seed);
            cr_assert_eq(io_write(T.io, &f, w, sizes[i], offs[j]), ENG_OK);
            memset(r, 0, sizes[i]);
            size_t done = 0;
            cr_assert_eq(io_read(T.io, &f, r, sizes[i], offs[j], &done), ENG_OK);
            cr_assert_eq(done, sizes[i]);
            cr_assert(!memcmp(w, r, sizes[i]), "size %zu off %llu", sizes[i], (unsigned long long)offs[j]);
        }
    uint64_t sz = 0;
    cr_assert_eq(io_size(T.io, &f, &sz), ENG_OK);
    cr_assert_eq(sz, (3u << 20) + (1u << 20));
    free(w);
    free(r);
    io_close(T.io, &f);
    cr_assert_eq(f.fd, -1);
}

IO_TEST(read_past_eof_is_short) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char w[10000], r[8192];
    fill(w, sizeof w, 3);
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_OK);
    size_t done = 12345;
    cr_assert_eq(io_read(T.io, &f, r, 8192, 8192, &done), ENG_OK);
    cr_assert_eq(done, 10000 - 8192);
    cr_assert(!memcmp(r, w + 8192, done));
    cr_assert_eq(io_read(T.io, &f, r, 8192, 20000, &done), ENG_OK);
    cr_assert_eq(done, 0);
    io_close(T.io, &f);
}

static void batch_round_trip(size_t n) {
    io_file f;
    open_file("data", 2, &f);
    io_req *reqs = calloc(n, sizeof *reqs);
    unsigned char *w = malloc(n * 4096), *r = calloc(n, 4096);
    cr_assert(reqs && w && r);
    for (size_t i = 0; i < n; i++) {
        fill(w + i * 4096, 4096, (unsigned)i + 100);
        /* out of file order, so completion order may differ from it */
        reqs[i] = (io_req){
            .f = &f, .buf = w + i * 4096, .len = 4096, .offset = (uint64_t)((i * 37) % n) * 4096, .status = -1};
    }
    reset_rec();
    cr_assert_eq(io_write_batch(T.io, reqs, n), ENG_OK);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(reqs[i].status, ENG_OK);
        cr_assert_eq(reqs[i].done, 4096);
    }
    /* Hooks: one before and one after per request; within each window of
     * up to 64, every before precedes every after. */
    cr_assert_eq(count(0, ENG_IO_WRITE), (int)n);
    cr_assert_eq(count(1, ENG_IO_WRITE), (int)n);
    int last_before = -1, first_after = -1;
    for (int i = 0; i < T.nrec && i < 128; i++) {
        if (T.rec[i].phase == 0 && first_after < 0) last_before = i;
        if (T.rec[i].phase == 1 && first_after < 0) first_after = i;
    }
    cr_assert_eq(last_before, (int)(n < 64 ? n : 64) - 1);
    cr_assert_eq(first_after, (int)(n < 64 ? n : 64));
    /* every after reports the full length and a distinct offset */
    for (int i = 0; i < T.nrec; i++)
        if (T.rec[i].phase == 1) cr_assert_eq(T.rec[i].result, 4096);

    for (size_t i = 0; i < n; i++)
        reqs[i] = (io_req){
            .f = &f, .buf = r + i * 4096, .len = 4096, .offset = (uint64_t)((i * 37) % n) * 4096, .status = -1};
    cr_assert_eq(io_read_batch(T.io, reqs, n), ENG_OK);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(reqs[i].status, ENG_OK);
        cr_assert_eq(reqs[i].done, 4096);
    }
    cr_assert(!memcmp(w, r, n * 4096));
    free(reqs);
    free(w);
    free(r);
    io_close(T.io, &f);
}

IO_TEST(batch_of_64_round_trip) {
    (void)backend;
    batch_round_trip(64);
}

IO_TEST(batch_larger_than_ring_round_trip) {
    (void)backend;
    batch_round_trip(200);
}

IO_TEST(batch_reports_each_failure) {
    (void)backend;
    io_file f;
    open_file("data", 2, &f);
    unsigned char w[4 * 4096];
    fill(w, sizeof w, 9);
    io_req reqs[4];
    for (int i = 0; i < 4; i++)
        reqs[i] = (io_req){.f = &f, .buf = w + i * 4096, .len = 4096, .offset = (uint64_t)i * 4096};
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.after_err = -ENOSPC;
    cr_assert_eq(io_write_batch(T.io, reqs, 4), ENG_NOSPACE);
    for (int i = 0; i < 4; i++) cr_assert_eq(reqs[i].status, ENG_NOSPACE);
    io_close(T.io, &f);
}

IO_TEST(sync_and_truncate) {
    (void)backend;
    io_file f;
    open_file("data", 4, &f);
    unsigned char w[8192];
    fill(w, sizeof w, 5);
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_OK);
    reset_rec();
    cr_assert_eq(io_sync(T.io, &f), ENG_OK);
    const rec_op *s = find(1, ENG_IO_SYNC);
    cr_assert_not_null(s);
    cr_assert_eq(s->file_id, 4);
    cr_assert_eq(s->result, 0);
    cr_assert_str_eq(s->path, f.path);

    cr_assert_eq(io_truncate(T.io, &f, 4096), ENG_OK);
    const rec_op *t = find(0, ENG_IO_TRUNCATE);
    cr_assert_not_null(t);
    cr_assert_eq(t->offset, 4096);
    cr_assert_eq(t->file_id, 4);
    uint64_t sz = 0;
    cr_assert_eq(io_size(T.io, &f, &sz), ENG_OK);
    cr_assert_eq(sz, 4096);
    cr_assert_eq(io_dirsync(T.io, T.dir), ENG_OK);
    io_close(T.io, &f);
}

/* Each thread writes then reads back its own region PER times. */
enum { CT_THREADS = 8, CT_PER = 100, CT_LEN = 4096 };
static io_file ct_file;

static void *ct_worker(void *arg) {
    int t = (int)(intptr_t)arg;
    unsigned char w[CT_LEN], r[CT_LEN];
    for (int k = 0; k < CT_PER; k++) {
        uint64_t off = ((uint64_t)t * CT_PER + (uint64_t)k) * CT_LEN;
        fill(w, CT_LEN, (unsigned)(t * 1000 + k));
        size_t done = 0;
        if (io_write(T.io, &ct_file, w, CT_LEN, off) != ENG_OK ||
            io_read(T.io, &ct_file, r, CT_LEN, off, &done) != ENG_OK || done != CT_LEN || memcmp(w, r, CT_LEN) != 0)
            return (void *)1;
    }
    return NULL;
}

IO_TEST(concurrent_threads) {
    (void)backend;
    open_file("data", 3, &ct_file);
    pthread_t th[CT_THREADS];
    for (int t = 0; t < CT_THREADS; t++) cr_assert_eq(pthread_create(&th[t], NULL, ct_worker, (void *)(intptr_t)t), 0);
    int bad = 0;
    for (int t = 0; t < CT_THREADS; t++) {
        void *res;
        pthread_join(th[t], &res);
        bad += res != NULL;
    }
    cr_assert_eq(bad, 0);
    cr_assert_eq(count(0, ENG_IO_WRITE), CT_THREADS * CT_PER);
    cr_assert_eq(count(1, ENG_IO_READ), CT_THREADS * CT_PER);
    io_close(T.io, &ct_file);
}

/* ---- hooks: injected errors --------------------------------------------- */

IO_TEST(before_eio_fails_write_unissued) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], w[4096], r[4096];
    base_page(&f, page);
    fill(w, sizeof w, 2);
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.before_err = -EIO;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_IOERR);
    cr_assert_eq(io_last_errno(T.io), EIO);
    cr_assert_eq(count(1, ENG_IO_WRITE), 0, "no after() for an op that was never issued");
    raw_read("data", r, sizeof r, 0);
    cr_assert(!memcmp(r, page, sizeof r), "file content must be unchanged");
    io_close(T.io, &f);
}

IO_TEST(before_eio_fails_read_and_sync) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], r[4096];
    base_page(&f, page);
    T.cfg.kind = ENG_IO_READ;
    T.cfg.before_err = -EIO;
    size_t done = 99;
    cr_assert_eq(io_read(T.io, &f, r, sizeof r, 0, &done), ENG_IOERR);
    cr_assert_eq(done, 0);
    T.cfg.kind = ENG_IO_SYNC;
    cr_assert_eq(io_sync(T.io, &f), ENG_IOERR);
    T.cfg.kind = ENG_IO_TRUNCATE;
    cr_assert_eq(io_truncate(T.io, &f, 0), ENG_IOERR);
    uint64_t sz = 0;
    cr_assert_eq(io_size(T.io, &f, &sz), ENG_OK);
    cr_assert_eq(sz, 4096, "failed truncate must not have run");
    io_close(T.io, &f);
}

/* R2 (io.h): after a failed fsync of a file, a later fsync of it that the
 * kernel answers with 0 still fails: the kernel reports a write-back error
 * once, and the pages it dropped stay dropped.  A checkpoint that started
 * while another's fsync of the data file was failing took such a 0 for
 * durability and moved the redo point past the dropped pages (the stress
 * driver, real engine, seed 215499459964913).  Another file, and the same
 * file opened again, sync as before. */
IO_TEST(a_sync_after_a_failed_sync_of_the_file_proves_nothing) {
    (void)backend;
    io_file f, g;
    open_file("data", 1, &f);
    open_file("other", 1, &g);
    unsigned char page[4096];
    base_page(&f, page);
    T.cfg.kind = ENG_IO_SYNC;
    T.cfg.before_err = -EIO;
    cr_assert_eq(io_sync(T.io, &f), ENG_IOERR);
    T.cfg.before_err = 0;
    reset_rec();
    cr_assert_eq(io_sync(T.io, &f), ENG_POISONED, "the second fsync was issued and returned 0: not durable");
    cr_assert_eq(count(1, ENG_IO_SYNC), 1,
                 "the second fsync is issued (it is the kernel's answer that is not trusted)");
    cr_assert_eq(io_datasync(T.io, &f), ENG_POISONED);
    cr_assert_eq(io_sync(T.io, &g), ENG_OK, "another file's fsync is not affected");
    io_close(T.io, &f);
    open_file("data", 1, &f);
    cr_assert_eq(io_sync(T.io, &f), ENG_OK, "the file opened again starts clean");
    io_close(T.io, &f);
    io_close(T.io, &g);
}

IO_TEST(enospc_and_edquot_are_nospace) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char w[512];
    fill(w, sizeof w, 4);
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.before_err = -ENOSPC;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_NOSPACE);
    cr_assert_eq(io_last_errno(T.io), ENOSPC);
    T.cfg.before_err = -EDQUOT;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_NOSPACE);
    cr_assert_eq(io_last_errno(T.io), EDQUOT);
    T.cfg.kind = ENG_IO_SYNC;
    T.cfg.before_err = -ENOSPC;
    cr_assert_eq(io_sync(T.io, &f), ENG_NOSPACE);
    uint64_t sz = 1;
    cr_assert_eq(io_size(T.io, &f, &sz), ENG_OK);
    cr_assert_eq(sz, 0);
    io_close(T.io, &f);
}

IO_TEST(status_translation) {
    (void)backend;
    cr_assert_eq(io_status_from_errno(0), ENG_OK);
    cr_assert_eq(io_status_from_errno(-ENOSPC), ENG_NOSPACE);
    cr_assert_eq(io_status_from_errno(EDQUOT), ENG_NOSPACE);
    cr_assert_eq(io_status_from_errno(-EIO), ENG_IOERR);
    cr_assert_eq(io_status_from_errno(EBADF), ENG_IOERR);
}

IO_TEST(after_error_fails_completed_write) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char w[4096];
    fill(w, sizeof w, 6);
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.after_err = -EIO;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_IOERR);
    const rec_op *a = find(1, ENG_IO_WRITE);
    cr_assert_not_null(a);
    cr_assert_eq(a->result, 4096, "after() sees the real result first");
    io_close(T.io, &f);
}

/* ---- hooks: altered operations ---------------------------------------- */

IO_TEST(skip_is_a_lost_write) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], w[4096], r[4096];
    base_page(&f, page);
    fill(w, sizeof w, 8);
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.skip = 1;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_OK);
    const rec_op *a = find(1, ENG_IO_WRITE);
    cr_assert_not_null(a);
    cr_assert_eq(a->result, 4096);
    raw_read("data", r, sizeof r, 0);
    cr_assert(!memcmp(r, page, sizeof r), "a skipped write must not reach the file");
    /* a skipped sync also reports success */
    T.cfg.kind = ENG_IO_SYNC;
    cr_assert_eq(io_sync(T.io, &f), ENG_OK);
    io_close(T.io, &f);
}

IO_TEST(shortened_len_is_a_torn_write) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], w[4096], r[4096];
    base_page(&f, page);
    fill(w, sizeof w, 9);
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.shorten_to = 1024;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_OK);
    raw_read("data", r, sizeof r, 0);
    cr_assert(!memcmp(r, w, 1024), "prefix written");
    cr_assert(!memcmp(r + 1024, page + 1024, 4096 - 1024), "rest untouched");
    io_close(T.io, &f);
}

IO_TEST(shortened_len_of_batch_write_reports_done) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char w[8192];
    fill(w, sizeof w, 10);
    io_req reqs[2] = {
        {.f = &f, .buf = w, .len = 4096, .offset = 0},
        {.f = &f, .buf = w + 4096, .len = 4096, .offset = 4096},
    };
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.shorten_to = 100;
    cr_assert_eq(io_write_batch(T.io, reqs, 2), ENG_OK);
    cr_assert_eq(reqs[0].done, 4096);
    cr_assert_eq(reqs[1].done, 4096);
    uint64_t sz = 0;
    cr_assert_eq(io_size(T.io, &f, &sz), ENG_OK);
    cr_assert_eq(sz, 4096 + 100);
    io_close(T.io, &f);
}

IO_TEST(shortened_read_returns_fewer_bytes) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], r[4096];
    base_page(&f, page);
    T.cfg.kind = ENG_IO_READ;
    T.cfg.shorten_to = 300;
    size_t done = 0;
    memset(r, 0, sizeof r);
    cr_assert_eq(io_read(T.io, &f, r, sizeof r, 0, &done), ENG_OK);
    cr_assert_eq(done, 300);
    cr_assert(!memcmp(r, page, 300));
    io_close(T.io, &f);
}

IO_TEST(flipped_write_buffer_lands_on_disk) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char w[4096], keep[4096], r[4096];
    fill(w, sizeof w, 11);
    memcpy(keep, w, sizeof w);
    T.cfg.kind = ENG_IO_WRITE;
    T.cfg.flip_write = 1;
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_OK);
    cr_assert(!memcmp(w, keep, sizeof w), "caller's buffer untouched");
    raw_read("data", r, sizeof r, 0);
    cr_assert_eq(r[0], (unsigned char)(w[0] ^ 0xFF));
    cr_assert(!memcmp(r + 1, w + 1, sizeof r - 1));
    io_close(T.io, &f);
}

IO_TEST(after_read_flip_reaches_caller) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], r[4096], disk[4096];
    base_page(&f, page);
    T.cfg.kind = ENG_IO_READ;
    T.cfg.flip_read_after = 1;
    size_t done = 0;
    cr_assert_eq(io_read(T.io, &f, r, sizeof r, 0, &done), ENG_OK);
    cr_assert_eq(done, 4096);
    cr_assert_eq(r[0], (unsigned char)(page[0] ^ 0xFF));
    cr_assert(!memcmp(r + 1, page + 1, sizeof r - 1));
    raw_read("data", disk, sizeof disk, 0);
    cr_assert(!memcmp(disk, page, sizeof disk), "disk unchanged");
    io_close(T.io, &f);
}

/* ---- metadata operations ----------------------------------------------- */

IO_TEST(create_open_and_hooked_create) {
    (void)backend;
    io_file f;
    char want[4200];
    snprintf(want, sizeof want, "%s/control", T.dir);
    cr_assert_eq(io_open(T.io, T.dir, "control", 5, 0, 0, &f), ENG_IOERR, "missing, no create");
    cr_assert_eq(io_last_errno(T.io), ENOENT);
    cr_assert_eq(count(0, ENG_IO_CREATE), 0);

    cr_assert_eq(io_open(T.io, T.dir, "control", 5, 1, 0, &f), ENG_OK);
    cr_assert_eq(f.file_id, 5);
    cr_assert_str_eq(f.name, "control");
    cr_assert_str_eq(f.path, want);
    cr_assert_eq(count(0, ENG_IO_CREATE), 1);
    const rec_op *c = find(1, ENG_IO_CREATE);
    cr_assert_not_null(c);
    cr_assert_str_eq(c->path, want);
    cr_assert_eq(c->file_id, 5);
    cr_assert_eq(c->result, 0);
    io_close(T.io, &f);

    /* existing file: no create op */
    cr_assert_eq(io_open(T.io, T.dir, "control", 5, 1, 1, &f), ENG_OK);
    cr_assert_eq(count(0, ENG_IO_CREATE), 1);
    io_close(T.io, &f);

    /* failed create: open fails, nothing created */
    T.cfg.kind = ENG_IO_CREATE;
    T.cfg.before_err = -ENOSPC;
    cr_assert_eq(io_open(T.io, T.dir, "other", 6, 1, 0, &f), ENG_NOSPACE);
    cr_assert(!exists("other"));
}

IO_TEST(rename_unlink_dirsync_hooked) {
    (void)backend;
    io_file f;
    open_file("a", 1, &f);
    io_close(T.io, &f);
    char pa[4200], pb[4200];
    snprintf(pa, sizeof pa, "%s/a", T.dir);
    snprintf(pb, sizeof pb, "%s/b", T.dir);

    /* a failing hook leaves the files as they were */
    T.cfg.kind = ENG_IO_RENAME;
    T.cfg.before_err = -EIO;
    cr_assert_eq(io_rename(T.io, T.dir, "a", "b"), ENG_IOERR);
    cr_assert(exists("a") && !exists("b"));
    no_fault();

    reset_rec();
    cr_assert_eq(io_rename(T.io, T.dir, "a", "b"), ENG_OK);
    cr_assert(!exists("a") && exists("b"));
    const rec_op *r = find(0, ENG_IO_RENAME);
    cr_assert_not_null(r);
    cr_assert_str_eq(r->path, pa);
    cr_assert_str_eq(r->path2, pb);
    cr_assert_eq(find(1, ENG_IO_RENAME)->result, 0);

    cr_assert_eq(io_unlink(T.io, T.dir, "b"), ENG_OK);
    cr_assert(!exists("b"));
    const rec_op *u = find(0, ENG_IO_UNLINK);
    cr_assert_not_null(u);
    cr_assert_str_eq(u->path, pb);
    cr_assert_str_eq(u->path2, "");

    /* unlinking a missing file reports the OS error to after(), and
     * ENG_NOTFOUND (not an I/O error) to the caller */
    reset_rec();
    cr_assert_eq(io_unlink(T.io, T.dir, "b"), ENG_NOTFOUND);
    cr_assert_eq(find(1, ENG_IO_UNLINK)->result, -ENOENT);
    cr_assert_eq(io_last_errno(T.io), ENOENT);

    reset_rec();
    cr_assert_eq(io_dirsync(T.io, T.dir), ENG_OK);
    const rec_op *d = find(1, ENG_IO_DIRSYNC);
    cr_assert_not_null(d);
    cr_assert_str_eq(d->path, T.dir);
    cr_assert_eq(d->result, 0);

    T.cfg.kind = ENG_IO_DIRSYNC;
    T.cfg.before_err = -EIO;
    cr_assert_eq(io_dirsync(T.io, T.dir), ENG_IOERR);
}

/* ---- contexts -------------------------------------------------------------- */

Test(io_backends, invalid_backend) {
    io_ctx *io = (io_ctx *)1;
    cr_assert_eq(io_ctx_create(42, NULL, &io), ENG_INVALID);
    cr_assert_null(io);
}

IO_TEST(no_hooks_round_trip) {
    io_ctx *plain;
    cr_assert_eq(io_ctx_create(backend, NULL, &plain), ENG_OK);
    io_file f;
    cr_assert_eq(io_open(plain, T.dir, "x", 1, 1, 0, &f), ENG_OK);
    unsigned char w[1000], r[1000];
    fill(w, sizeof w, 12);
    cr_assert_eq(io_write(plain, &f, w, sizeof w, 10), ENG_OK);
    cr_assert_eq(io_sync(plain, &f), ENG_OK);
    size_t done = 0;
    cr_assert_eq(io_read(plain, &f, r, sizeof r, 10, &done), ENG_OK);
    cr_assert_eq(done, sizeof r);
    cr_assert(!memcmp(w, r, sizeof r));
    io_close(plain, &f);
    io_ctx_destroy(plain);
    cr_assert_eq(T.nrec, 0);
}

/* R1: a read that overlaps an fsync of its file that fails never returns
 * the contents the failure dropped (here: the old page), whatever the
 * timing: it waits for the fsync and fails with ENG_POISONED. */
IO_TEST(read_overlapping_a_failed_fsync_never_returns_dropped_contents) {
    (void)backend;
    io_file f;
    open_file("data", 1, &f);
    unsigned char page[4096], w[4096];
    base_page(&f, page);
    cr_assert_eq(io_sync(T.io, &f), ENG_OK);
    fill(w, sizeof w, 9);
    cr_assert_eq(io_write(T.io, &f, w, sizeof w, 0), ENG_OK);
    DR.f = &f;
    DR.old = page;
    DR.rc = -12345;
    T.cfg.kind = ENG_IO_SYNC;
    T.cfg.drop_and_read = 1;
    T.cfg.after_err = -EIO;
    cr_assert_eq(io_sync(T.io, &f), ENG_IOERR);
    pthread_join(DR.th, NULL);
    cr_assert_eq(DR.rc, ENG_POISONED, "the read saw the dropped page (rc %d)", DR.rc);
    T.cfg.kind = -1;
    size_t done = 0;
    unsigned char r[4096];
    cr_assert_eq(io_read(T.io, &f, r, sizeof r, 0, &done), ENG_POISONED, "and every later read of the file");
    io_close(T.io, &f);
}
