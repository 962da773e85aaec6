/*
 * bench_engine.c -- the engine's side of `make bench-engine` and
 * `make bench-faults`: the shape of RocksDB's per-KV checksum PR (32-byte
 * keys, 200-byte values, one thread, sync off, no compression).
 *
 *   bench_engine DIR --num N [--phase fill|fillsync|read] [--reads R] [--cache-size B] [--psync]
 *
 * fill:  fillseq of N keys into a fresh DIR, then close (prints fillseq_ops)
 * fillsync: the same with sync_mode=commit, one fsync per put, like
 *        db_bench's fillsync (prints fillsync_ops): what a commit costs
 *        when the log's fsync decides it (the WAL's sector checks, W3 in
 *        engine/wal.h)
 * read:  open DIR with the cache (default 1 GiB: the whole database), warm
 *        it with one full scan, then R random gets (prints readrandom_ops);
 *        every value is checked, so a wrong answer fails the run instead of
 *        flattering it.
 * Output: one line "NAME ops_per_sec" per measurement.
 *
 * Built four times (Makefile): bench_engine and bench_faults_plain against
 * build/libengine.a; bench_faults_fiu against build/libengine-fiu.a with
 * -DBENCH_FIU: fiu_init is called, no point is enabled and
 * eng_faults_arm(1) is not, so every point costs one relaxed load of the
 * engine's armed flag (what make bench-faults measures); bench_door
 * against build/libengine.a and the fault library's door with
 * -DBENCH_DOOR: the door (faults/door.h) armed on DIR with hooks that
 * inject nothing, so every file call of the engine on DIR is translated
 * and handed to them (what make bench-door measures).  --psync runs the
 * engine's pread/pwrite backend, the one the door sees, in every build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/stat.h>

#include "engine.h"
#include "bench_util.h"

#ifdef BENCH_FIU
#include <fiu.h>
#define BUILD_NAME "fiu"
#elif defined(BENCH_DOOR)
#include "faults/door.h"
#define BUILD_NAME "door"
static int pass_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    (void)op;
    return 0;
}
static void pass_after(void *ctx, eng_io_op *op) {
    (void)ctx;
    (void)op;
}
static const eng_io_hooks pass_hooks = {NULL, pass_before, pass_after};
#else
#define BUILD_NAME "plain"
#endif

static uint64_t rng = 88172645463325252ull;

static int fail(const char *what, int rc) {
    fprintf(stderr, "bench_engine (%s): %s: %s\n", BUILD_NAME, what, eng_strerror(rc));
    return 3;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: bench_engine DIR --num N [--phase fill|fillsync|read] [--reads R] [--cache-size B] [--psync]\n");
        return 2;
    }
    const char *dir = argv[1], *phase = "fill";
    uint64_t num = 200000, cache = 1ull << 30, reads = 0;
    int psync = 0;
    for (int i = 2; i < argc; i += 2) {
        if (!strcmp(argv[i], "--psync")) {
            psync = 1;
            i--;
        } else if (i + 1 >= argc) {
            fprintf(stderr, "bench_engine: %s needs a value\n", argv[i]);
            return 2;
        } else if (!strcmp(argv[i], "--num"))
            num = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--cache-size"))
            cache = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--phase"))
            phase = argv[i + 1];
        else if (!strcmp(argv[i], "--reads"))
            reads = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "bench_engine: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!reads) reads = num;
    if (!num) {
        fprintf(stderr, "bench_engine: --num must be > 0\n");
        return 2;
    }

#ifdef BENCH_FIU
    /* The fault build as a stress run would have it before any point is
     * enabled: libfiu initialized, the engine's points disarmed. */
    if (fiu_init(0) != 0) {
        fprintf(stderr, "bench_engine: fiu_init failed\n");
        return 3;
    }
    if (!eng_faults_compiled()) {
        fprintf(stderr, "bench_engine: not linked against the fault build\n");
        return 3;
    }
#elif defined(BENCH_DOOR)
    if (psync) {
        /* The door translates calls under an existing directory. */
        int dr = mkdir(dir, 0755) && errno != EEXIST ? -errno : flt_door_arm(&pass_hooks, dir);
        if (dr) {
            fprintf(stderr, "bench_engine (door): cannot arm the door on %s: %s\n", dir, strerror(-dr));
            return 3;
        }
    }
#else
    if (eng_faults_compiled()) {
        fprintf(stderr, "bench_engine: the plain build has fault points\n");
        return 3;
    }
#endif

    eng_options o;
    eng_options_init(&o);
    o.cache_size = cache;
    if (psync) o.io_backend = ENG_IO_PSYNC;
    o.sync_mode = strcmp(phase, "fillsync") ? ENG_SYNC_OFF : ENG_SYNC_COMMIT;
    o.checkpoint_wal_bytes = 256u << 20;
    eng_db *db;
    int rc = eng_open(dir, &o, &db);
    if (rc) return fail("open", rc);
    char k[BENCH_KEY_LEN + 1];
    uint8_t v[BENCH_VALUE_LEN];
    if (!strcmp(phase, "fill") || !strcmp(phase, "fillsync")) {
        double t0 = bench_now();
        for (uint64_t i = 0; i < num; i++) {
            bench_key(i, k);
            bench_value(i, v);
            if ((rc = eng_put(db, k, BENCH_KEY_LEN, v, BENCH_VALUE_LEN, NULL))) return fail("put", rc);
        }
        double t1 = bench_now();
        printf("%s_ops %.0f\n", strcmp(phase, "fill") ? "fillsync" : "fillseq", (double)num / (t1 - t0));
#ifdef BENCH_DOOR
        /* What the door translated: a run it saw nothing of measured nothing. */
        printf("door_ops %llu\n", (unsigned long long)flt_door_ops());
#endif
    } else if (!strcmp(phase, "read")) {
        eng_iter *it;
        if ((rc = eng_iter_open(db, NULL, &it))) return fail("iter", rc);
        uint64_t n = 0;
        for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) n++;
        eng_iter_close(it);
        if (n != num) {
            fprintf(stderr, "bench_engine: warm scan saw %llu keys, expected %llu\n", (unsigned long long)n,
                    (unsigned long long)num);
            return 1;
        }
        eng_buf b = {0};
        double t0 = bench_now();
        for (uint64_t i = 0; i < reads; i++) {
            uint64_t x = bench_xorshift(&rng) % num;
            bench_key(x, k);
            if ((rc = eng_get(db, k, BENCH_KEY_LEN, &b)) || b.len != BENCH_VALUE_LEN) {
                fprintf(stderr, "bench_engine: get: %s\n", eng_strerror(rc));
                return 1;
            }
            bench_value(x, v);
            if (memcmp(b.data, v, BENCH_VALUE_LEN)) {
                fprintf(stderr, "bench_engine: wrong value\n");
                return 1;
            }
        }
        double t1 = bench_now();
        printf("readrandom_ops %.0f\n", (double)reads / (t1 - t0));
        eng_buf_free(&b);
    } else {
        fprintf(stderr, "bench_engine: unknown phase %s\n", phase);
        return 2;
    }
    rc = eng_close(db);
    if (rc) return fail("close", rc);
    return 0;
}
