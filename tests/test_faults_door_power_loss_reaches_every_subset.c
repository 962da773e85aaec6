/*
 * test_faults_door_power_loss_reaches_every_subset.c -- the fault door at
 * the POSIX boundary (faults/door.h) feeds the power-loss journal from
 * plain file calls, so build/powerloss treats a program that never heard
 * of eng_io_hooks as it treats the engine:
 *
 *   every_subset_of_unsynced_writes_is_reached
 *       K blocks written (pwrite) and fsynced, the file's create made
 *       durable by an fsync of the directory, then N = 3 unsynced writes
 *       (pwrite; write at the descriptor's offset; pwritev of two
 *       iovecs), then unsynced names (an openat create, a rename over an
 *       old file, an unlink), and a "crash" (the descriptors closed, no
 *       sync).  Over seeds and variants: synced blocks are never undone,
 *       all 2^3 subsets of the unsynced writes are reached, every
 *       unsynced name is seen both undone and kept.
 *   names_are_kept_once_their_directory_is_synced
 *       the same names followed by an fsync of the directory: never undone.
 *   files_outside_the_directory_pass_untouched
 *       files in a sibling directory, in one whose name only starts like
 *       the database's, and reached by a relative path: no op, no journal
 *       record, their bytes as written; a relative path into the
 *       directory and one through a symbolic link to it are translated.
 *   calls_return_what_libc_returns
 *       without faults the door is invisible: the same calls on a file in
 *       the directory and on one outside return the same values, leave
 *       the same offsets and the same bytes (read/write/readv/writev and
 *       their positioned forms, O_APPEND, dup, ftruncate, fallocate).
 *
 * The fault library is opened with only the power-loss journal
 * (sync_fault_injection); its I/O hooks reach the files only through the
 * door.  The sync_error side is test_faults_door_sync_error_drops_unsynced_writes.c.
 */
#include <sys/uio.h>

#include "powerloss_helpers.h"
#include "door.h"
#include "faults.h"

#define BS 4096
#define K  4 /* synced blocks */
#define N  3 /* unsynced writes */

static void door_fini(void) {
    flt_door_disarm();
    cu_fini();
}

#define DOOR_OPTS .timeout = 300, .fini = door_fini

/* A fault context with only the power-loss journal, its hooks behind the
 * door over F's database directory. */
static flt_ctx *door_open(fx *f, uint64_t seed) {
    flt_options o;
    flt_options_init(&o);
    o.seed = seed;
    o.run_dir = f->run;
    o.db_dir = f->db;
    o.sync_fault_injection = 1;
    flt_ctx *c = NULL;
    int rc = flt_open(&o, &c);
    cr_assert_eq(rc, ENG_OK, "flt_open: %s", eng_strerror(rc));
    rc = flt_door_arm(flt_hooks(c), f->db);
    cr_assert_eq(rc, 0, "flt_door_arm: %s", strerror(-rc));
    return c;
}

/* The process "dies": nothing more is journaled. */
static void door_crash(flt_ctx *c) {
    flt_door_disarm();
    flt_close(c);
}

static void put_all(int fd, const void *buf, size_t len) {
    cr_assert_eq(write(fd, buf, len), (ssize_t)len, "write: %s", strerror(errno));
}

/* Unsynced names: "new" created through openat on the directory's
 * descriptor (its data synced, its name not), "tmp" written, synced and
 * renamed over "ctl", "old" unlinked. */
static void name_ops(fx *f, int dfd) {
    int nfd = openat(dfd, "new", O_WRONLY | O_CREAT, 0644);
    cr_assert(nfd >= 0, "openat new: %s", strerror(errno));
    put_all(nfd, "N1", 2);
    cr_assert_eq(fsync(nfd), 0);
    close(nfd);
    int tfd = open(dbp(f, "tmp"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(tfd >= 0);
    put_all(tfd, "NEWCTL", 6);
    cr_assert_eq(fsync(tfd), 0);
    close(tfd);
    cr_assert_eq(rename(dbp(f, "tmp"), dbp(f, "ctl")), 0, "rename: %s", strerror(errno));
    cr_assert_eq(unlink(dbp(f, "old")), 0, "unlink: %s", strerror(errno));
}

/* K synced blocks of "blocks" (made durable with the directory), then
 * the N unsynced writes, three ways.  SYN and NEW get their contents. */
static void block_ops(fx *f, int dfd, uint8_t syn[K][BS], uint8_t nw[N][BS]) {
    for (int k = 0; k < K; k++) tu_fill(syn[k], BS, 100 + (uint64_t)k);
    for (int i = 0; i < N; i++) tu_fill(nw[i], BS, 200 + (uint64_t)i);
    int fd = open(dbp(f, "blocks"), O_RDWR | O_CREAT, 0644);
    cr_assert(fd >= 0, "create blocks: %s", strerror(errno));
    for (int k = 0; k < K; k++) cr_assert_eq(pwrite(fd, syn[k], BS, (off_t)k * BS), BS);
    cr_assert_eq(fsync(fd), 0);
    cr_assert_eq(fsync(dfd), 0, "fsync of the directory: %s", strerror(errno));
    cr_assert_eq(pwrite(fd, nw[0], BS, 0), BS);
    cr_assert_eq(lseek(fd, BS, SEEK_SET), BS);
    cr_assert_eq(write(fd, nw[1], BS), BS);
    cr_assert_eq(lseek(fd, 0, SEEK_CUR), 2 * BS, "write moved the offset to %lld", (long long)lseek(fd, 0, SEEK_CUR));
    struct iovec iov[2] = {{nw[2], 1000}, {nw[2] + 1000, BS - 1000}};
    cr_assert_eq(pwritev(fd, iov, 2, 2 * BS), BS);
    close(fd); /* no sync: the crash */
}

Test(door, every_subset_of_unsynced_writes_is_reached, DOOR_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "ctl", "OLDCTL", 6); /* before the journal: the durable start */
    put_file(&f, "old", "OLD", 3);
    flt_ctx *c = door_open(&f, 1);
    static uint8_t syn[K][BS], nw[N][BS];
    int dfd = open(f.db, O_RDONLY | O_DIRECTORY);
    cr_assert(dfd >= 0);
    uint64_t ops0 = flt_door_ops();
    block_ops(&f, dfd, syn, nw);
    name_ops(&f, dfd);
    close(dfd);
    /* create, K writes, sync, dirsync, N writes; create, write, sync;
     * create, write, sync, rename; unlink */
    cr_assert_eq(flt_door_ops() - ops0, 3 + K + N + 3 + 4 + 1, "the door made %llu ops",
                 (unsigned long long)(flt_door_ops() - ops0));
    door_crash(c);

    int seen[1 << N] = {0}, nseen = 0, states = 0;
    int undone[4] = {0}, kept[4] = {0}; /* new, ctl, old, tmp left behind */
    static uint8_t got[FMAX];
    for (int seed = 1; seed <= 32 && nseen < (1 << N); seed++) {
        char prefix[200], s[64], dir[256];
        snprintf(prefix, sizeof prefix, "%s/s%d-", f.root, seed);
        snprintf(s, sizeof s, "%d", seed);
        pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", s, "--variants", "8", "--mode", "rollback",
                         "--out-prefix", prefix, NULL));
        for (int v = 0; v < 8; v++, states++) {
            snprintf(dir, sizeof dir, "%s%d", prefix, v);
            ssize_t n = read_in(dir, "blocks", got);
            cr_assert_eq(n, K * BS, "seed %d variant %d: blocks is %zd bytes (its create was durable)", seed, v, n);
            for (int k = N; k < K; k++)
                cr_assert(!memcmp(got + k * BS, syn[k], BS), "seed %d variant %d: synced block %d undone", seed, v, k);
            int mask = 0;
            for (int i = 0; i < N; i++) {
                if (!memcmp(got + i * BS, nw[i], BS))
                    mask |= 1 << i;
                else
                    cr_assert(!memcmp(got + i * BS, syn[i], BS),
                              "seed %d variant %d: block %d is neither its synced nor its unsynced bytes", seed, v, i);
            }
            nseen += !seen[mask]++;
            read_str(dir, "new", s, sizeof s);
            cr_assert(!strcmp(s, "N1") || !strcmp(s, "<missing>"), "seed %d variant %d: new holds %s", seed, v, s);
            undone[0] += !strcmp(s, "<missing>"), kept[0] += !strcmp(s, "N1");
            read_str(dir, "ctl", s, sizeof s);
            cr_assert(!strcmp(s, "NEWCTL") || !strcmp(s, "OLDCTL"), "seed %d variant %d: ctl holds %s", seed, v, s);
            int ctl_undone = !strcmp(s, "OLDCTL");
            undone[1] += ctl_undone, kept[1] += !ctl_undone;
            read_str(dir, "old", s, sizeof s);
            cr_assert(!strcmp(s, "OLD") || !strcmp(s, "<missing>"), "seed %d variant %d: old holds %s", seed, v, s);
            undone[2] += !strcmp(s, "OLD"), kept[2] += !strcmp(s, "<missing>");
            /* tmp's create kept and its rename undone leaves tmp; the
             * rename kept implies the create was (PL4). */
            read_str(dir, "tmp", s, sizeof s);
            cr_assert(!strcmp(s, "<missing>") || (ctl_undone && !strcmp(s, "NEWCTL")),
                      "seed %d variant %d: tmp holds %s with ctl %s", seed, v, s, ctl_undone ? "old" : "new");
            undone[3] += !strcmp(s, "<missing>"), kept[3] += strcmp(s, "<missing>") != 0;
        }
    }
    for (int m = 0; m < (1 << N); m++)
        cr_assert(seen[m], "subset %d%d%d of the unsynced writes (1: kept) never reached in %d states", m & 1,
                  m >> 1 & 1, m >> 2 & 1, states);
    const char *names[3] = {"the create of new", "the rename of tmp over ctl", "the unlink of old"};
    for (int i = 0; i < 3; i++)
        cr_assert(undone[i] && kept[i], "%s: undone in %d, kept in %d of %d states", names[i], undone[i], kept[i],
                  states);
}

Test(door, names_are_kept_once_their_directory_is_synced, DOOR_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "ctl", "OLDCTL", 6);
    put_file(&f, "old", "OLD", 3);
    flt_ctx *c = door_open(&f, 2);
    int dfd = open(f.db, O_RDONLY | O_DIRECTORY);
    cr_assert(dfd >= 0);
    name_ops(&f, dfd);
    cr_assert_eq(fsync(dfd), 0);
    close(dfd);
    door_crash(c);
    for (int seed = 1; seed <= 4; seed++) {
        char prefix[200], s[64], dir[256];
        snprintf(prefix, sizeof prefix, "%s/s%d-", f.root, seed);
        snprintf(s, sizeof s, "%d", seed);
        pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", s, "--variants", "8", "--mode", "rollback",
                         "--out-prefix", prefix, NULL));
        for (int v = 0; v < 8; v++) {
            snprintf(dir, sizeof dir, "%s%d", prefix, v);
            read_str(dir, "new", s, sizeof s);
            cr_assert_str_eq(s, "N1", "seed %d variant %d: new", seed, v);
            read_str(dir, "ctl", s, sizeof s);
            cr_assert_str_eq(s, "NEWCTL", "seed %d variant %d: ctl", seed, v);
            read_str(dir, "old", s, sizeof s);
            cr_assert_str_eq(s, "<missing>", "seed %d variant %d: old", seed, v);
            read_str(dir, "tmp", s, sizeof s);
            cr_assert_str_eq(s, "<missing>", "seed %d variant %d: tmp", seed, v);
        }
    }
}

/* Create DIR/a, write, overwrite, sync, truncate, rename it to b, sync DIR:
 * b then holds "Xell". */
static void outside_ops(const char *dir) {
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    int fd = open(a, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0, "open %s: %s", a, strerror(errno));
    put_all(fd, "hello", 5);
    cr_assert_eq(pwrite(fd, "X", 1, 0), 1);
    struct iovec iov[1] = {{"e", 1}};
    cr_assert_eq(pwritev(fd, iov, 1, 1), 1);
    cr_assert_eq(fsync(fd), 0);
    cr_assert_eq(ftruncate(fd, 4), 0);
    close(fd);
    cr_assert_eq(rename(a, b), 0);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    cr_assert(dfd >= 0);
    cr_assert_eq(fsync(dfd), 0);
    close(dfd);
}

Test(door, files_outside_the_directory_pass_untouched, DOOR_OPTS) {
    fx f;
    fx_init(&f);
    char out[200], sib[200], cwd[PATH_MAX], s[64];
    snprintf(out, sizeof out, "%s/out", f.root);
    snprintf(sib, sizeof sib, "%s2", f.db); /* "db2": its name starts like "db" */
    cr_assert_eq(mkdir(out, 0755), 0);
    cr_assert_eq(mkdir(sib, 0755), 0);
    flt_ctx *c = door_open(&f, 3);
    uint64_t j0 = size_of(f.run, "journal"), ops0 = flt_door_ops();
    outside_ops(out);
    outside_ops(sib);
    cr_assert(getcwd(cwd, sizeof cwd) != NULL);
    cr_assert_eq(chdir(f.root), 0);
    int fd = open("out/c", O_WRONLY | O_CREAT, 0644); /* relative, outside */
    cr_assert(fd >= 0);
    put_all(fd, "rel", 3);
    close(fd);
    cr_assert_eq(unlink("db2/b"), 0);
    cr_assert_eq(flt_door_ops(), ops0, "the door made %llu ops for files outside the directory",
                 (unsigned long long)(flt_door_ops() - ops0));
    cr_assert_eq(size_of(f.run, "journal"), j0, "the journal grew by %llu bytes for files outside the directory",
                 (unsigned long long)(size_of(f.run, "journal") - j0));
    read_str(out, "b", s, sizeof s);
    cr_assert_str_eq(s, "Xell");
    read_str(out, "c", s, sizeof s);
    cr_assert_str_eq(s, "rel");
    cr_assert_eq(size_of(sib, "b"), UINT64_MAX);

    /* Into the directory: by a relative path (a create and a write), and
     * through a symbolic link to it (a create). */
    fd = open("db/r", O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    put_all(fd, "in", 2);
    close(fd);
    cr_assert_eq(flt_door_ops(), ops0 + 2, "a relative path into the directory: %llu ops",
                 (unsigned long long)(flt_door_ops() - ops0));
    cr_assert_eq(symlink(f.db, "dblink"), 0);
    fd = open("dblink/viasym", O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(flt_door_ops(), ops0 + 3, "a path through a link to the directory: %llu ops",
                 (unsigned long long)(flt_door_ops() - ops0));
    cr_assert(size_of(f.run, "journal") > j0);
    cr_assert_eq(chdir(cwd), 0);
    door_crash(c);

    /* Power loss undoes (maybe) the two creates inside, and nothing else. */
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "5", "--mode", "rollback", NULL));
    read_str(out, "b", s, sizeof s);
    cr_assert_str_eq(s, "Xell");
    read_str(out, "c", s, sizeof s);
    cr_assert_str_eq(s, "rel");
    lrecs L = {0};
    ledger_load(&f, &L);
    for (size_t i = 0; i < L.n; i++)
        cr_assert(!strcmp(L.r[i].file, "r") || !strcmp(L.r[i].file, "viasym"), "power loss touched %s (%s)",
                  L.r[i].file, L.r[i].point);
    free(L.r);
}

/* ---- transparency: the same calls inside the directory and outside -------------------------------------- */

/* One call's result and the descriptor's offset after it, on both files. */
#define SAME(what, expr_in, expr_out)                                                                   \
    do {                                                                                                \
        long r_in = (long)(expr_in), r_out = (long)(expr_out);                                          \
        cr_assert_eq(r_in, r_out, "%s: %ld through the door, %ld past it", what, r_in, r_out);          \
        cr_assert_eq(lseek(fi, 0, SEEK_CUR), lseek(fo, 0, SEEK_CUR), "%s: offsets %lld and %lld", what, \
                     (long long)lseek(fi, 0, SEEK_CUR), (long long)lseek(fo, 0, SEEK_CUR));             \
    } while (0)

Test(door, calls_return_what_libc_returns, DOOR_OPTS) {
    fx f;
    fx_init(&f);
    char pin[300], pout[300];
    snprintf(pin, sizeof pin, "%s/t", f.db);
    snprintf(pout, sizeof pout, "%s/t", f.root);
    flt_ctx *c = door_open(&f, 4);
    uint64_t ops0 = flt_door_ops();
    static uint8_t a[3 * BS], bi[3 * BS], bo[3 * BS];
    tu_fill(a, sizeof a, 77);
    int fi = open(pin, O_RDWR | O_CREAT, 0644), fo = open(pout, O_RDWR | O_CREAT, 0644);
    cr_assert(fi >= 0 && fo >= 0);
    SAME("write", write(fi, a, 1000), write(fo, a, 1000));
    SAME("pwrite", pwrite(fi, a + 5, 300, 2000), pwrite(fo, a + 5, 300, 2000));
    struct iovec wv[3] = {{a, 10}, {a + 50, 0}, {a + 100, 700}};
    SAME("writev", writev(fi, wv, 3), writev(fo, wv, 3));
    SAME("pwritev", pwritev(fi, wv, 3, 4000), pwritev(fo, wv, 3, 4000));
    SAME("lseek", lseek(fi, 100, SEEK_SET), lseek(fo, 100, SEEK_SET));
    SAME("read", read(fi, bi, 500), read(fo, bo, 500));
    cr_assert(!memcmp(bi, bo, 500));
    SAME("read at the end", read(fi, bi, 9000), read(fo, bo, 9000));
    SAME("read past the end", read(fi, bi, 10), read(fo, bo, 10));
    SAME("pread", pread(fi, bi, 3000, 1500), pread(fo, bo, 3000, 1500));
    cr_assert(!memcmp(bi, bo, 3000));
    SAME("lseek", lseek(fi, 7, SEEK_SET), lseek(fo, 7, SEEK_SET));
    struct iovec ri[2] = {{bi, 33}, {bi + 100, 4000}}, ro[2] = {{bo, 33}, {bo + 100, 4000}};
    SAME("readv", readv(fi, ri, 2), readv(fo, ro, 2));
    cr_assert(!memcmp(bi, bo, 33) && !memcmp(bi + 100, bo + 100, 4000));
    SAME("preadv", preadv(fi, ri, 2, 3990), preadv(fo, ro, 2, 3990));
    cr_assert(!memcmp(bi, bo, 33) && !memcmp(bi + 100, bo + 100, 4000));
    SAME("ftruncate", ftruncate(fi, 4500), ftruncate(fo, 4500));
    SAME("fallocate grows", fallocate(fi, 0, 4000, 3000), fallocate(fo, 0, 4000, 3000));
    SAME("punch a hole", fallocate(fi, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, BS),
         fallocate(fo, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, BS));
    SAME("zero a range", fallocate(fi, FALLOC_FL_ZERO_RANGE, 200, 100), fallocate(fo, FALLOC_FL_ZERO_RANGE, 200, 100));
    SAME("posix_fallocate", posix_fallocate(fi, 0, 9000), posix_fallocate(fo, 0, 9000));
    SAME("fsync", fsync(fi), fsync(fo));
    SAME("fdatasync", fdatasync(fi), fdatasync(fo));
    /* a duplicate writes at the offset it shares */
    int di = dup(fi), dout = dup(fo);
    cr_assert(di >= 0 && dout >= 0);
    SAME("write on a dup", write(di, a, 123), write(dout, a, 123));
    close(di);
    close(dout);
    close(fi);
    close(fo);
    /* O_APPEND: write and pwrite go to the end */
    fi = open(pin, O_RDWR | O_APPEND), fo = open(pout, O_RDWR | O_APPEND);
    cr_assert(fi >= 0 && fo >= 0);
    SAME("append", write(fi, a, 77), write(fo, a, 77));
    SAME("pwrite on O_APPEND", pwrite(fi, a, 5, 0), pwrite(fo, a, 5, 0));
    SAME("lseek", lseek(fi, 10, SEEK_SET), lseek(fo, 10, SEEK_SET));
    SAME("append after lseek", write(fi, a + 9, 9), write(fo, a + 9, 9));
    close(fi);
    close(fo);
    /* O_DIRECT: a vectored call's gathered buffer is page-aligned too */
    fi = open(pin, O_RDWR | O_DIRECT), fo = open(pout, O_RDWR | O_DIRECT);
    if (fi >= 0 && fo >= 0) { /* (a file system without O_DIRECT refuses both) */
        static uint8_t al[2][BS] __attribute__((aligned(BS)));
        memcpy(al, a, sizeof al);
        struct iovec dv[2] = {{al[0], BS}, {al[1], BS}};
        SAME("pwritev O_DIRECT", pwritev(fi, dv, 2, 2 * BS), pwritev(fo, dv, 2, 2 * BS));
        SAME("preadv O_DIRECT", preadv(fi, dv, 2, 0), preadv(fo, dv, 2, 0));
    }
    if (fi >= 0) close(fi);
    if (fo >= 0) close(fo);
    /* errors come back as libc's */
    errno = 0;
    SAME("write on a read-only descriptor", write(fi = open(pin, O_RDONLY), a, 1),
         write(fo = open(pout, O_RDONLY), a, 1));
    cr_assert_eq(errno, EBADF, "errno %d", errno);
    close(fi);
    close(fo);
    cr_assert(flt_door_ops() > ops0);
    door_crash(c);
    static uint8_t gi[FMAX], go[FMAX];
    ssize_t ni = read_in(f.db, "t", gi), no = read_in(f.root, "t", go);
    cr_assert_eq(ni, no);
    cr_assert(!memcmp(gi, go, (size_t)ni), "the files differ at byte %zu", first_diff(gi, go, (size_t)ni));
}
