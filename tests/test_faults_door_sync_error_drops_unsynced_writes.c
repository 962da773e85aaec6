/*
 * test_faults_door_sync_error_drops_unsynced_writes.c -- an injected fsync
 * failure (sync_error, one_in 1) reaches a program's plain fsync(2)
 * through the fault door (faults/door.h) as it reaches the engine through
 * its hooks: fsync returns -1 with errno EIO, the file's unsynced writes
 * (one pwrite, one write at the descriptor's offset) are rolled back on
 * disk at once, the ledger says so (hook/sync, then one sync/drop_dirty
 * line per write, newest first, file named relative to the directory),
 * the counts equal the ledger, and a power-loss step afterwards never
 * brings the dropped bytes back (the journal's DROP records).
 *
 * With the engine's fault points compiled in, the library sends half of
 * its sync_error firings to engine/io/fsync, a point only the engine's own
 * fsync passes; the seed is chosen so that this firing goes to hook/sync
 * (seed_for_sync_route), the route the door can take.
 */
#include <spawn.h>

#include "faults_helpers.h"
#include "door.h"

extern char **environ;

static void door_fini(void) {
    flt_door_disarm();
    cu_fini();
}

/* build/powerloss DIR --run-dir RUN --seed 1 --variants 8 --out-prefix
 * PREFIX; its exit code. */
static int powerloss_variants(const char *dir, const char *run, const char *prefix) {
    char pl[512];
    const char *b = getenv("BUILD");
    snprintf(pl, sizeof pl, "%s/powerloss", b && *b ? b : "build");
    const char *argv[] = {pl,       dir,        "--run-dir",    run,    "--seed", "1", "--variants", "8",
                          "--mode", "rollback", "--out-prefix", prefix, NULL};
    char out[300];
    snprintf(out, sizeof out, "%s/powerloss.out", run);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, pl, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "spawn %s: %s (run from the repository root, or set BUILD)", pl, strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

Test(door, injected_fsync_error_fails_fsync_and_drops_unsynced_writes, .timeout = 300, .fini = door_fini) {
    uint64_t seed = seed_for_sync_route(cu_seed(0xd00e), "hook/sync");
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t old[2 * PS], nw[2 * PS], got[2 * PS];
    tu_fill(old, sizeof old, 1);
    tu_fill(nw, sizeof nw, 2);
    char path[4096];
    tu_path(path, sizeof path, dir, "f");
    int fd = open(path, O_WRONLY | O_CREAT, 0644); /* the durable start, before the door */
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, old, sizeof old, 0), (ssize_t)sizeof old);
    cr_assert_eq(fsync(fd), 0);
    close(fd);

    flt_options fo = fopts(run, dir, seed);
    fo.one_in[FLT_SYNC_ERROR] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    cr_assert_eq(flt_door_arm(flt_hooks(f), dir), 0);
    fd = open(path, O_RDWR);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, nw, PS, 0), PS);
    cr_assert_eq(lseek(fd, PS, SEEK_SET), PS);
    cr_assert_eq(write(fd, nw + PS, PS), PS);
    errno = 0;
    int r = fsync(fd);
    int e = errno;
    cr_assert_eq(r, -1, "fsync returned %d (seed %llu)", r, (unsigned long long)seed);
    cr_assert_eq(e, EIO, "fsync failed with errno %d", e);
    cr_assert_eq(pread(fd, got, sizeof got, 0), (ssize_t)sizeof got);
    cr_assert(!memcmp(got, old, sizeof old), "the unsynced writes were not dropped");
    close(fd);
    check_counts(f, run);
    flt_door_disarm();
    flt_close(f);

    lg l = lg_read(run);
    const char *h = lg_nth_at(&l, "sync_error", "hook/sync", 0);
    cr_assert(h != NULL, "no hook/sync line");
    char b[64];
    cr_assert(line_is(h, "file", "f") && line_is(h, "err", "EIO"), "hook/sync line: %s", h);
    cr_assert_eq(lg_count(&l, "sync_error"), 3, "%zu sync_error lines, want hook/sync and two drops",
                 lg_count(&l, "sync_error"));
    for (int k = 0; k < 2; k++) {
        const char *d = lg_nth_at(&l, "sync_error", "sync/drop_dirty", (size_t)k);
        cr_assert(d != NULL, "drop %d missing", k);
        cr_assert(line_is(d, "file", "f"), "drop %d names %s", k, jstr(d, "file", b, sizeof b));
        cr_assert_eq(jnum(d, "offset"), k == 0 ? PS : 0, "drop %d at %lld: newest first", k,
                     (long long)jnum(d, "offset"));
        cr_assert_eq(jnum(d, "len"), PS);
    }
    lg_free(&l);

    char prefix[200], vdir[256];
    snprintf(prefix, sizeof prefix, "%s/v", run);
    cr_assert_eq(powerloss_variants(dir, run, prefix), 0);
    for (int v = 0; v < 8; v++) {
        snprintf(vdir, sizeof vdir, "%s%d/f", prefix, v);
        size_t n;
        uint8_t *p = cu_read_file(vdir, &n);
        cr_assert(p && n == sizeof old && !memcmp(p, old, n), "variant %d brought dropped bytes back", v);
        free(p);
    }
}
