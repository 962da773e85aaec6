/*
 * test_faults_door_concurrent_writes_land_where_their_ops_say.c -- with
 * threads writing at once through the fault door (faults/door.h), every
 * write op the hooks see names the bytes the write really changed, so the
 * journal's old bytes belong to the range that changed:
 *
 *   - two threads appending 512-byte records with write(2) to one shared
 *     descriptor, two more to one O_APPEND descriptor of another file
 *     (door.c DR4: the offset is learned and the write made under the
 *     file's lock);
 *   - four threads each writing a file of their own with pwrite, write
 *     after lseek and pwritev, then fsync;
 *   - one thread churning descriptors of files outside the directory
 *     (open, dup2 over them, close), which must never be taken for the
 *     database's.
 *
 * A watcher around the fault library's hooks reads, in after() of each
 * write, the file's bytes at the op's offset and compares them with the
 * op's buffer.  Then: every record is in its shared file exactly once; and
 * after a power-loss step (rollback variants) each record slot holds a
 * whole record or nothing, and each private file its synced blocks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "powerloss_helpers.h"
#include "door.h"
#include "faults.h"

#define REC      512
#define NREC     200 /* per appending thread */
#define BS       4096
#define NPRIV    4
#define PRIV_BLK 6

static void door_fini(void) {
    flt_door_disarm();
    cu_fini();
}

/* ---- the watcher: each write's bytes are where its op says --------------------------------------------- */

typedef struct watch {
    const eng_io_hooks *inner;
    eng_io_hooks hooks;
    atomic_int writes, mismatches;
    char first[256]; /* the first mismatch, for the message */
} watch;

static int w_before(void *ctx, eng_io_op *op) {
    watch *w = ctx;
    return w->inner->before(w->inner->ctx, op);
}

static void w_after(void *ctx, eng_io_op *op) {
    watch *w = ctx;
    if (op->kind == ENG_IO_WRITE && op->result > 0 && !op->skip) {
        atomic_fetch_add(&w->writes, 1);
        uint8_t *got = malloc((size_t)op->result);
        int fd = open(op->path, O_RDONLY); /* the door lets the hooks' own calls pass */
        int same = got && fd >= 0 && pread(fd, got, (size_t)op->result, (off_t)op->offset) == (ssize_t)op->result &&
                   !memcmp(got, op->buf, (size_t)op->result);
        if (fd >= 0) close(fd);
        free(got);
        if (!same && atomic_fetch_add(&w->mismatches, 1) == 0)
            snprintf(w->first, sizeof w->first, "%s at %llu, %lld bytes", op->path, (unsigned long long)op->offset,
                     (long long)op->result);
    }
    w->inner->after(w->inner->ctx, op);
}

/* ---- the workload ---------------------------------------------------------------------------------------- */

typedef struct job {
    fx *f;
    int kind; /* 0: append to a shared fd; 1: own file; 2: churn outside */
    int fd, id;
    uint8_t syn[PRIV_BLK][BS], nw[PRIV_BLK][BS];
} job;

/* Record SEQ of writer ID: its header says whose it is, the rest is a
 * pattern of both. */
static void rec_fill(uint8_t *r, int id, int seq) {
    memset(r, 0, REC);
    snprintf((char *)r, 32, "R %d %d", id, seq);
    for (int i = 32; i < REC; i++) r[i] = (uint8_t)(id * 31 + seq * 7 + i);
}

/* 1 if R is a whole record (*ID, *SEQ), 0 if all zero, -1 otherwise. */
static int rec_parse(const uint8_t *r, int *id, int *seq) {
    int zero = 1;
    for (int i = 0; i < REC && zero; i++) zero = r[i] == 0;
    if (zero) return 0;
    uint8_t want[REC];
    if (sscanf((const char *)r, "R %d %d", id, seq) != 2) return -1;
    rec_fill(want, *id, *seq);
    return memcmp(r, want, REC) == 0 ? 1 : -1;
}

static void *run_job(void *arg) {
    job *j = arg;
    if (j->kind == 0) {
        uint8_t r[REC];
        for (int s = 0; s < NREC; s++) {
            rec_fill(r, j->id, s);
            if (write(j->fd, r, REC) != REC) return "append failed";
        }
    } else if (j->kind == 1) {
        char name[32];
        snprintf(name, sizeof name, "own%d", j->id);
        int fd = open(dbp(j->f, name), O_RDWR | O_CREAT, 0644);
        if (fd < 0) return "create failed";
        for (int k = 0; k < PRIV_BLK / 2; k++)
            if (pwrite(fd, j->syn[k], BS, (off_t)k * BS) != BS) return "pwrite failed";
        if (fsync(fd) != 0) return "fsync failed";
        for (int k = PRIV_BLK / 2; k < PRIV_BLK; k++) {
            if (k % 3 == 0) {
                if (pwrite(fd, j->nw[k], BS, (off_t)k * BS) != BS) return "pwrite failed";
            } else if (k % 3 == 1) {
                if (lseek(fd, (off_t)k * BS, SEEK_SET) != (off_t)k * BS || write(fd, j->nw[k], BS) != BS)
                    return "write failed";
            } else {
                struct iovec iov[2] = {{j->nw[k], 100}, {j->nw[k] + 100, BS - 100}};
                if (pwritev(fd, iov, 2, (off_t)k * BS) != BS) return "pwritev failed";
            }
        }
        close(fd);
    } else {
        char p[300];
        snprintf(p, sizeof p, "%s/outside", j->f->root);
        for (int i = 0; i < 400; i++) {
            int fd = open(p, O_RDWR | O_CREAT, 0644);
            if (fd < 0) return "outside open failed";
            int d = dup(fd);
            if (d < 0 || dup2(fd, d) != d || write(d, "x", 1) != 1) return "outside dup failed";
            close(d);
            close(fd);
        }
    }
    return NULL;
}

/* Every record of writers IDS[0..2) in FILE of DIR exactly once (KEEP), or
 * at most once, each slot whole or empty. */
static void check_records(const char *dir, const char *file, const int *ids, int keep, const char *what) {
    static uint8_t buf[FMAX];
    ssize_t n = read_in(dir, file, buf);
    cr_assert(n >= 0 && n % REC == 0, "%s: %s is %zd bytes", what, file, n);
    static int count[2][NREC];
    memset(count, 0, sizeof count);
    for (ssize_t off = 0; off < n; off += REC) {
        int id, seq, k = rec_parse(buf + off, &id, &seq);
        cr_assert(k >= 0, "%s: %s at %zd holds a torn or foreign record", what, file, off);
        if (!k) continue;
        int w = id == ids[0] ? 0 : id == ids[1] ? 1 : -1;
        cr_assert(w >= 0 && seq >= 0 && seq < NREC, "%s: %s at %zd: record of writer %d", what, file, off, id);
        count[w][seq]++;
    }
    for (int w = 0; w < 2; w++)
        for (int s = 0; s < NREC; s++)
            cr_assert(count[w][s] <= 1 && (!keep || count[w][s] == 1), "%s: %s holds record %d of writer %d %d times",
                      what, file, s, ids[w], count[w][s]);
}

Test(door, concurrent_writes_land_where_their_ops_say, .timeout = 300, .fini = door_fini) {
    fx f;
    fx_init(&f);
    flt_options o;
    flt_options_init(&o);
    o.seed = 11;
    o.run_dir = f.run;
    o.db_dir = f.db;
    o.sync_fault_injection = 1;
    flt_ctx *c = NULL;
    cr_assert_eq(flt_open(&o, &c), ENG_OK);
    static watch w;
    w.inner = flt_hooks(c);
    w.hooks = (eng_io_hooks){.ctx = &w, .before = w_before, .after = w_after};
    cr_assert_eq(flt_door_arm(&w.hooks, f.db), 0);

    int shared = open(dbp(&f, "shared"), O_WRONLY | O_CREAT, 0644);
    int app = open(dbp(&f, "appended"), O_WRONLY | O_CREAT | O_APPEND, 0644);
    cr_assert(shared >= 0 && app >= 0);
    int dfd = open(f.db, O_RDONLY | O_DIRECTORY); /* the two names durable: their records are judged */
    cr_assert(dfd >= 0 && fsync(dfd) == 0);
    close(dfd);
    static job jobs[2 + 2 + NPRIV + 1];
    int nj = 0;
    for (int i = 0; i < 2; i++) jobs[nj++] = (job){.f = &f, .kind = 0, .fd = shared, .id = 10 + i};
    for (int i = 0; i < 2; i++) jobs[nj++] = (job){.f = &f, .kind = 0, .fd = app, .id = 20 + i};
    for (int i = 0; i < NPRIV; i++) {
        job *j = &jobs[nj++];
        *j = (job){.f = &f, .kind = 1, .id = i};
        for (int k = 0; k < PRIV_BLK; k++) {
            tu_fill(j->syn[k], BS, 1000 + (uint64_t)(i * 16 + k));
            tu_fill(j->nw[k], BS, 2000 + (uint64_t)(i * 16 + k));
        }
    }
    jobs[nj++] = (job){.f = &f, .kind = 2};
    pthread_t th[sizeof jobs / sizeof jobs[0]];
    for (int i = 0; i < nj; i++) cr_assert_eq(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
    for (int i = 0; i < nj; i++) {
        void *err;
        pthread_join(th[i], &err);
        cr_assert(err == NULL, "job %d: %s", i, (const char *)err);
    }
    close(shared);
    close(app);
    flt_door_disarm();
    flt_close(c);

    int ws = atomic_load(&w.writes);
    cr_assert_eq(ws, 4 * NREC + NPRIV * PRIV_BLK, "the hooks saw %d writes", ws);
    cr_assert_eq(atomic_load(&w.mismatches), 0, "%d writes' bytes were not where their op said (first: %s)",
                 atomic_load(&w.mismatches), w.first);
    const int ids_s[2] = {10, 11}, ids_a[2] = {20, 21};
    check_records(f.db, "shared", ids_s, 1, "the crashed directory");
    check_records(f.db, "appended", ids_a, 1, "the crashed directory");

    char prefix[200], dir[256];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "9", "--variants", "4", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    static uint8_t got[FMAX];
    for (int v = 0; v < 4; v++) {
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        char what[64];
        snprintf(what, sizeof what, "variant %d", v);
        check_records(dir, "shared", ids_s, 0, what);
        check_records(dir, "appended", ids_a, 0, what);
        for (int i = 0; i < NPRIV; i++) {
            char name[32];
            snprintf(name, sizeof name, "own%d", i);
            job *j = &jobs[4 + i];
            ssize_t n = read_in(dir, name, got);
            if (n < 0) continue; /* its create was never made durable */
            cr_assert(n >= (PRIV_BLK / 2) * BS, "%s: %s is %zd bytes", what, name, n);
            for (int k = 0; k < PRIV_BLK / 2; k++)
                cr_assert(!memcmp(got + k * BS, j->syn[k], BS), "%s: %s lost synced block %d", what, name, k);
            for (int k = PRIV_BLK / 2; k < PRIV_BLK && (k + 1) * BS <= n; k++) {
                int zero = 1;
                for (int b = 0; b < BS && zero; b++) zero = got[k * BS + b] == 0;
                cr_assert(zero || !memcmp(got + k * BS, j->nw[k], BS), "%s: %s block %d is neither written nor empty",
                          what, name, k);
            }
        }
    }
}
