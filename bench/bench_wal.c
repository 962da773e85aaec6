/*
 * bench_wal.c -- one row of `make bench-wal` (docs/engine.md, Cost aims;
 * bench/README.md, make bench-wal): the seed's experiment on what data
 * checksums cost in WAL and in vacuum time, PostgreSQL's pgbench -i followed
 * by VACUUM, scaled to this engine.
 *
 *   bench_wal DIR --rows N [--data-checksums 0|1] [--wal-log-hints 0|1]
 *             [--wal-compression none|zstd] [--hint-fpi 0|1]
 *             [--cache-size B] [--checkpoint-wal-bytes B]
 *
 * DIR must not exist; the database goes to DIR/db, the archive to
 * DIR/archive (archive_dir set, as in the seed).  Steps:
 *   1. load N rows: 4-byte big-endian ids 1..N as keys, 97-byte values
 *      shaped like pgbench_accounts (bid, abalance, then blank filler), a
 *      commit (one eng_write batch) every 10,000 rows; eng_checkpoint;
 *   2. eng_vacuum; eng_checkpoint.
 * Output: one JSON object on stdout:
 *   wal_bytes         eng_stats.wal_bytes at the end: record bytes appended
 *                     since the database was created (the distance in LSN,
 *                     like pg_current_wal_lsn differences; block headers
 *                     and in-place rewrites of partial blocks not counted)
 *   load_wal_bytes    its growth across step 1, vacuum_wal_bytes across 2
 *   data_bytes        size of DIR/db/data at the end
 *   archive_bytes     total size of the files in DIR/archive at the end
 *   load_s, vacuum_s  wall seconds of step 1 and step 2 (each with its
 *                     checkpoint)
 * plus "info": counters that explain the figures (images, hint records,
 * what vacuum did).  Checks, so a wrong engine cannot flatter the table:
 * vacuum must see N versions and remove none, and sampled rows must read
 * back with their values.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine.h"

#define VALUE_LEN       97
#define ROWS_PER_COMMIT 10000u

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "bench_wal: %s: %s\n", what, eng_strerror(rc));
    return 3;
}

/* Row AID of pgbench_accounts: key = aid (big-endian: key order is id
 * order), value = bid, abalance (0), blank filler. */
static void row_of(uint32_t aid, uint8_t key[4], uint8_t val[VALUE_LEN]) {
    key[0] = (uint8_t)(aid >> 24);
    key[1] = (uint8_t)(aid >> 16);
    key[2] = (uint8_t)(aid >> 8);
    key[3] = (uint8_t)aid;
    uint32_t bid = (aid - 1) / 100000 + 1, abalance = 0;
    memcpy(val, &bid, 4);
    memcpy(val + 4, &abalance, 4);
    memset(val + 8, ' ', VALUE_LEN - 8);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Total size of the regular files directly in PATH (0 if missing). */
static uint64_t dir_bytes(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char p[4096 + 512];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        total += file_size(p);
    }
    closedir(d);
    return total;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: bench_wal DIR --rows N [--data-checksums 0|1] [--wal-log-hints 0|1]\n"
                        "       [--wal-compression none|zstd] [--hint-fpi 0|1] [--cache-size B]\n"
                        "       [--checkpoint-wal-bytes B]\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t rows = 2000000, cache = 64ull << 20, ckpt = 1ull << 30;
    int checksums = 0, log_hints = 0, fpi = 0, zstd = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "--rows"))
            rows = strtoull(v, NULL, 10);
        else if (!strcmp(o, "--data-checksums"))
            checksums = atoi(v);
        else if (!strcmp(o, "--wal-log-hints"))
            log_hints = atoi(v);
        else if (!strcmp(o, "--hint-fpi"))
            fpi = atoi(v);
        else if (!strcmp(o, "--cache-size"))
            cache = strtoull(v, NULL, 10);
        else if (!strcmp(o, "--checkpoint-wal-bytes"))
            ckpt = strtoull(v, NULL, 10);
        else if (!strcmp(o, "--wal-compression")) {
            if (!strcmp(v, "zstd"))
                zstd = 1;
            else if (strcmp(v, "none")) {
                fprintf(stderr, "bench_wal: --wal-compression none|zstd\n");
                return 2;
            }
        } else {
            fprintf(stderr, "bench_wal: unknown option %s\n", o);
            return 2;
        }
    }
    if (!rows || rows > UINT32_MAX) {
        fprintf(stderr, "bench_wal: --rows must be 1..2^32-1\n");
        return 2;
    }

    char dbdir[4096], archive[4096], data[4200];
    snprintf(dbdir, sizeof dbdir, "%s/db", dir);
    snprintf(archive, sizeof archive, "%s/archive", dir);
    snprintf(data, sizeof data, "%s/data", dbdir);
    if (mkdir(dir, 0700) != 0 || mkdir(archive, 0700) != 0) {
        fprintf(stderr, "bench_wal: mkdir %s: %s (DIR must not exist)\n", dir, strerror(errno));
        return 2;
    }

    eng_options o;
    eng_options_init(&o);
    o.data_checksums = checksums;
    o.wal_log_hints = log_hints;
    o.hint_fpi = fpi;
    o.wal_compression = zstd ? ENG_WAL_COMPRESSION_ZSTD : ENG_WAL_COMPRESSION_NONE;
    o.archive_dir = archive;
    o.cache_size = cache;
    o.checkpoint_wal_bytes = ckpt;
    o.error_if_exists = 1;
    eng_db *db;
    int rc = eng_open(dbdir, &o, &db);
    if (rc) return fail("open", rc);

    /* 1. load */
    static uint8_t keys[ROWS_PER_COMMIT][4], vals[ROWS_PER_COMMIT][VALUE_LEN];
    static eng_op ops[ROWS_PER_COMMIT];
    eng_stats s0, s1, s2;
    if ((rc = eng_get_stats(db, &s0))) return fail("stats", rc);
    double t0 = now();
    for (uint64_t aid = 1; aid <= rows;) {
        size_t n = 0;
        for (; aid <= rows && n < ROWS_PER_COMMIT; aid++, n++) {
            row_of((uint32_t)aid, keys[n], vals[n]);
            ops[n] = (eng_op){.kind = ENG_OP_PUT, .key = keys[n], .klen = 4, .val = vals[n], .vlen = VALUE_LEN};
        }
        if ((rc = eng_write(db, ops, n, NULL))) return fail("load: eng_write", rc);
    }
    if ((rc = eng_checkpoint(db))) return fail("load: checkpoint", rc);
    double t1 = now();
    if ((rc = eng_get_stats(db, &s1))) return fail("stats", rc);

    /* 2. vacuum */
    eng_vacuum_stats vs;
    memset(&vs, 0, sizeof vs);
    double t2 = now();
    if ((rc = eng_vacuum(db, &vs))) return fail("vacuum", rc);
    if ((rc = eng_checkpoint(db))) return fail("vacuum: checkpoint", rc);
    double t3 = now();
    if ((rc = eng_get_stats(db, &s2))) return fail("stats", rc);

    if (vs.versions != rows || vs.removed != 0) {
        fprintf(stderr, "bench_wal: vacuum saw %llu versions and removed %llu; %llu rows were loaded\n",
                (unsigned long long)vs.versions, (unsigned long long)vs.removed, (unsigned long long)rows);
        return 1;
    }
    eng_buf b = {0};
    uint8_t k[4], v[VALUE_LEN];
    for (uint64_t i = 0; i < 1000; i++) {
        uint32_t aid = (uint32_t)(1 + (i * 2654435761u) % rows);
        row_of(aid, k, v);
        if ((rc = eng_get(db, k, 4, &b)) || b.len != VALUE_LEN || memcmp(b.data, v, VALUE_LEN)) {
            fprintf(stderr, "bench_wal: row %u reads back wrong (%s)\n", aid, eng_strerror(rc));
            return 1;
        }
    }
    eng_buf_free(&b);

    uint64_t archive_bytes = dir_bytes(archive), data_bytes = file_size(data);
    printf("{\"data_checksums\": %d, \"wal_log_hints\": %d, \"wal_compression\": \"%s\", \"hint_fpi\": %d, "
           "\"wal_bytes\": %llu, \"load_wal_bytes\": %llu, \"vacuum_wal_bytes\": %llu, \"data_bytes\": %llu, "
           "\"archive_bytes\": %llu, \"load_s\": %.3f, \"vacuum_s\": %.3f, \"info\": {"
           "\"rows\": %llu, \"wal_written_bytes\": %llu, \"stats_archive_bytes\": %llu, "
           "\"load_images\": %llu, \"vacuum_images\": %llu, \"vacuum_image_bytes\": %llu, "
           "\"vacuum_hint_wal_records\": %llu, \"vacuum_hint_wal_bytes\": %llu, \"vacuum_hint_pages_written\": %llu, "
           "\"vacuum_page_writes\": %llu, \"vacuum_wal_syncs\": %llu, \"checkpoints\": %llu, "
           "\"vacuum_frozen\": %llu, \"vacuum_hinted\": %llu, \"vacuum_leaves\": %llu}}\n",
           checksums, log_hints, zstd ? "zstd" : "none", fpi, (unsigned long long)s2.wal_bytes,
           (unsigned long long)(s1.wal_bytes - s0.wal_bytes), (unsigned long long)(s2.wal_bytes - s1.wal_bytes),
           (unsigned long long)data_bytes, (unsigned long long)archive_bytes, t1 - t0, t3 - t2,
           (unsigned long long)rows, (unsigned long long)s2.wal_written_bytes, (unsigned long long)s2.archive_bytes,
           (unsigned long long)(s1.images - s0.images), (unsigned long long)(s2.images - s1.images),
           (unsigned long long)(s2.image_bytes - s1.image_bytes),
           (unsigned long long)(s2.hint_wal_records - s1.hint_wal_records),
           (unsigned long long)(s2.hint_wal_bytes - s1.hint_wal_bytes),
           (unsigned long long)(s2.hint_pages_written - s1.hint_pages_written),
           (unsigned long long)(s2.page_writes - s1.page_writes), (unsigned long long)(s2.wal_syncs - s1.wal_syncs),
           (unsigned long long)s2.checkpoints, (unsigned long long)vs.frozen, (unsigned long long)vs.hinted,
           (unsigned long long)vs.leaves);
    rc = eng_close(db);
    if (rc) return fail("close", rc);
    return 0;
}
