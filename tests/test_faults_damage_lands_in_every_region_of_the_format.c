/*
 * test_faults_damage_lands_in_every_region_of_the_format.c -- on-disk
 * damage is placed by the format the engine stores (faults/place.h):
 * page flips reach every region of a page (header, hint area, slot
 * array, free space, cells, the meta page's fields, commit-log and
 * overflow payloads), WAL flips every byte class of a log block (block
 * header, sector trailer, record header, record payload, padding), the
 * ledger's `region` names the region of the bit that actually changed,
 * a WAL flip at a crash always lands inside a record, before the log's
 * end, and a zeroed block between operations is a whole block drawn by
 * class, in the damage table until a write of it.
 *
 * The regions are computed here again from engine/format.h, by code of
 * this file's own (a page classified by its header; the log walked record
 * by record from the segment's first block), not by the library's: the
 * test would pass a wrong classifier otherwise.
 *
 * Part of the faults suite; the helpers it shares are in faults_helpers.h.
 */
#include <xxhash.h>

#include "faults_helpers.h"

/* ---- the regions, independently ---------------------------------------- */

static uint32_t clampv(uint32_t v, uint32_t lo, uint32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The region of byte B of page P (PS bytes), as place.h names them. */
static const char *page_region(const uint8_t *p, uint32_t ps, uint32_t b) {
    if (b < PAGE_HDR) return "header";
    uint8_t type = p[PH_TYPE_OFF];
    if (type == PAGE_LEAF || type == PAGE_INTERNAL) {
        uint32_t base = PAGE_HDR + (type == PAGE_LEAF ? LEAF_HINT_BYTES(ps) : 0);
        uint32_t lower = clampv(fmt_get16(p + PH_LOWER_OFF), base, ps);
        uint32_t upper = clampv(fmt_get16(p + PH_UPPER_OFF), lower, ps);
        return b < base ? "hints" : b < lower ? "slots" : b < upper ? "free" : "cells";
    }
    uint32_t aux = fmt_get32(p + PH_AUX_OFF);
    switch (type) {
    case PAGE_META: {
        uint32_t n = fmt_get32(p + META_OFF_CLOGN), cap = META_CLOG_CAP(ps);
        return b < META_CLOG_OFF + 4 * (n < cap ? n : cap) ? "meta" : "free";
    }
    case PAGE_CLOG: return "clog";
    case PAGE_OVERFLOW: return b < PAGE_HDR + (aux < ps - PAGE_HDR ? aux : ps - PAGE_HDR) ? "overflow" : "free";
    case PAGE_FREE: return b < PAGE_HDR + 4 * (aux < FREE_TRUNK_CAP(ps) ? aux : FREE_TRUNK_CAP(ps)) ? "trunk" : "free";
    default: return "free";
    }
}

/* Labels of a whole segment S (N bytes, first LSN 0: a fresh database's
 * first segment), walking its records from block 0 the way a reader of
 * the stream does: every record byte of the stream in order, block
 * headers and sector trailers stepped over.  *END: the offset right after
 * the last record's last byte (the log's end). */
static const char *wal_label_names[] = {"block_header", "sector_trailer", "record_header", "record_payload", "padding"};
enum { L_BH, L_ST, L_RH, L_RP, L_PAD };

static int stream_byte(uint64_t o) { return o % WAL_BLOCK >= WAL_BLOCK_HDR && o % WAL_SECTOR < WAL_SECTOR_DATA; }

static void wal_labels(const uint8_t *s, size_t n, uint8_t *lab, uint64_t *end) {
    /* The stream's record bytes, in order: their file offsets. */
    uint64_t *at = malloc(n * sizeof *at);
    cr_assert(at != NULL);
    size_t m = 0;
    for (uint64_t o = 0; o < n; o++) {
        lab[o] = o % WAL_BLOCK < WAL_BLOCK_HDR ? L_BH : o % WAL_SECTOR >= WAL_SECTOR_DATA ? L_ST : L_PAD;
        if (stream_byte(o)) at[m++] = o;
    }
    *end = 0;
    size_t i = 0; /* index into at[] of the next record's first byte */
    while (i + WAL_REC_HDR <= m) {
        uint8_t h[WAL_REC_HDR];
        for (size_t k = 0; k < WAL_REC_HDR; k++) h[k] = s[at[i + k]];
        uint32_t len = fmt_get32(h + XL_LEN_OFF);
        if (len < WAL_REC_HDR || h[XL_TYPE_OFF] < 1 || h[XL_TYPE_OFF] > WAL_REC_TYPE_MAX ||
            fmt_get64(h + XL_LSN_OFF) != at[i] || i + len > m)
            break;
        for (size_t k = 0; k < len; k++) lab[at[i + k]] = k < WAL_REC_HDR ? L_RH : L_RP;
        *end = at[i + len - 1] + 1;
        /* The next record starts at the first 8-aligned stream position
         * after this one's end that holds a record byte. */
        uint64_t next = (*end + 7) & ~(uint64_t)7;
        i += len;
        while (i < m && at[i] < next) i++;
    }
    free(at);
}

static const char *wal_region(const uint8_t *s, size_t n, uint64_t byte, uint64_t *end) {
    uint8_t *lab = malloc(n);
    cr_assert(lab != NULL);
    wal_labels(s, n, lab, end);
    const char *r = wal_label_names[lab[byte]];
    free(lab);
    return r;
}

/* ---- page flips --------------------------------------------------------- */

/* A database with every page type a flip can meet but a free-list trunk:
 * leaves and internal pages from 600 keys, overflow pages from values
 * larger than a page, commit-log pages from the transactions, the meta
 * page.  Closed (checkpointed). */
static void populate_all_types(const char *dir) {
    populate(dir, ENG_IO_PSYNC, 600);
    eng_options o = eopts(ENG_IO_PSYNC, NULL, NULL);
    eng_db *db = tu_open(dir, &o);
    static uint8_t big[3 * PS];
    for (int i = 0; i < 6; i++) {
        char k[32];
        tu_fill(big, sizeof big, (uint64_t)i);
        int kl = snprintf(k, sizeof k, "big%02d", i);
        cr_assert_eq(eng_put(db, k, (size_t)kl, big, sizeof big, NULL), ENG_OK);
    }
    tu_close(db);
}

Test(faults, page_flips_reach_every_region_and_the_ledger_names_the_one_changed, T_OPTS) {
    static const char *want[] = {"header", "hints", "slots", "free", "cells", "meta", "clog", "overflow"};
    enum { NW = sizeof want / sizeof *want, TICKS = 4000 };
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate_all_types(dir);
    char p[4096];
    size_t len = 0;
    uint8_t *copy = cu_read_file(tu_path(p, sizeof p, dir, "data"), &len);
    cr_assert(len >= 16 * PS, "data file of %zu bytes", len);
    flt_options fo = fopts(run, dir, 11);
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    size_t hits[NW] = {0}, lines = 0;
    uint8_t now[PS];
    for (int t = 0; t < TICKS; t++) {
        flt_op(f, (uint64_t)t);
        flt_tick(f, NULL);
        lg l = lg_read(run);
        cr_assert_eq(l.n, lines + 1, "tick %d: one line per tick", t);
        lines = l.n;
        const char *line = l.lines[l.n - 1];
        int64_t block = jnum(line, "block"), bit = jnum(line, "bit");
        cr_assert(block >= 0 && (uint64_t)(block + 1) * PS <= len && bit >= 0 && bit < PS * 8, "%s", line);
        /* The one bit that changed on disk is the ledger's. */
        read_block(p, (uint64_t)block * PS, now);
        size_t byte;
        uint8_t mask;
        cr_assert_eq(one_bit_diff(copy + block * PS, now, PS, &byte, &mask), 1, "tick %d: %s", t, line);
        cr_assert_eq(byte, (size_t)bit / 8, "tick %d: byte %zu changed, the ledger says %lld", t, byte,
                     (long long)bit / 8);
        cr_assert_eq(mask, (uint8_t)jmask(line), "tick %d", t);
        /* ... and its region, read from the page as it was. */
        char region[32];
        cr_assert_not_null(jstr(line, "region", region, sizeof region), "no region: %s", line);
        const char *expect = page_region(copy + block * PS, PS, (uint32_t)byte);
        cr_assert_str_eq(region, expect, "tick %d: the ledger says %s, byte %zu of block %lld is in %s", t, region,
                         byte, (long long)block, expect);
        for (int i = 0; i < NW; i++) hits[i] += !strcmp(region, want[i]);
        memcpy(copy + block * PS, now, PS);
        lg_free(&l);
    }
    for (int i = 0; i < NW; i++) cr_assert(hits[i] > 0, "no flip of %d landed in the page region %s", TICKS, want[i]);
    check_counts(f, run);
    flt_close(f);
    free(copy);
}

/* ---- WAL flips ---------------------------------------------------------- */

/* Open DIR through F's hooks with 64 KiB segments and commit syncs, put
 * N keys (every commit written and synced through the hooks, so the
 * library knows the last synced write and the tail).  Returns the open
 * database. */
static eng_db *wal_workload(flt_ctx *f, const char *dir, uint64_t n) {
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    o.wal_segment_size = 64u << 10;
    o.sync_mode = ENG_SYNC_COMMIT;
    eng_db *db = tu_open(dir, &o);
    put_keys(db, n, 0);
    return db;
}

/* The fault library at RUN over DIR with a WAL flip at every tick (seed
 * SEED), into *F; the log written first with N keys, unflipped
 * (wal_workload), then the ticking thread started.  Returns the open
 * database. */
static eng_db *wal_ticks_ready(const char *run, const char *dir, uint64_t seed, uint64_t n, flt_ctx **f) {
    flt_options fo = fopts(run, dir, seed);
    fo.one_in[FLT_BITFLIP_WAL] = 1;
    *f = fopen_ok(&fo);
    flt_pause(*f, 1); /* the workload writes the log; the ticks flip it */
    eng_db *db = wal_workload(*f, dir, n);
    flt_pause(*f, 0);
    flt_thread_start(*f, 0);
    return db;
}

Test(faults, wal_flips_reach_every_region_and_the_ledger_names_the_one_changed, T_OPTS) {
    enum { TICKS = 600 };
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_ctx *f;
    eng_db *db = wal_ticks_ready(run, dir, 23, 60, &f);
    char segp[4096], seg[64];
    snprintf(seg, sizeof seg, "%s/%016x", WAL_DIR, 0);
    tu_path(segp, sizeof segp, dir, seg);
    size_t n = 0;
    uint8_t *copy = cu_read_file(segp, &n);
    cr_assert(n >= 2 * WAL_BLOCK, "segment of %zu bytes", n);
    size_t hits[5] = {0}, lines = 0, in_own = 0;
    for (int t = 0; t < TICKS; t++) {
        flt_op(f, (uint64_t)t);
        flt_tick(f, NULL);
        lg l = lg_read(run);
        cr_assert_eq(l.n, lines + 1, "tick %d: one line per tick", t);
        lines = l.n;
        const char *line = l.lines[l.n - 1];
        char file[64], region[32];
        cr_assert(line_is(line, "class", "bitflip_wal") && line_is(line, "point", "tick/wal"), "%s", line);
        cr_assert_not_null(jstr(line, "file", file, sizeof file));
        cr_assert_not_null(jstr(line, "region", region, sizeof region), "no region: %s", line);
        if (strcmp(file, seg)) { /* another segment (the log has one; a recycled spare would do) */
            lg_free(&l);
            continue;
        }
        uint64_t byte = (uint64_t)jnum(line, "offset") + (uint64_t)jnum(line, "bit") / 8;
        size_t m = 0, db_byte;
        uint8_t mask;
        uint8_t *now = cu_read_file(segp, &m);
        cr_assert_eq(m, n);
        cr_assert_eq(one_bit_diff(copy, now, n, &db_byte, &mask), 1, "tick %d: %s", t, line);
        cr_assert_eq(db_byte, byte, "tick %d: byte %zu changed, the ledger says %llu", t, db_byte,
                     (unsigned long long)byte);
        uint64_t end;
        const char *expect = wal_region(copy, n, byte, &end);
        cr_assert_str_eq(region, expect, "tick %d: the ledger says %s, byte %llu is %s (log end %llu)", t, region,
                         (unsigned long long)byte, expect, (unsigned long long)end);
        for (int i = 0; i < 5; i++) hits[i] += !strcmp(region, wal_label_names[i]);
        in_own++;
        /* Undone, so that every tick meets the log as the engine wrote it:
         * a walk of the records stops at the first damaged one, here and
         * in the library alike, and the two would start it from other
         * places. */
        int fd = open(segp, O_WRONLY);
        cr_assert(fd >= 0 && pwrite(fd, copy + byte, 1, (off_t)byte) == 1);
        close(fd);
        free(now);
        lg_free(&l);
    }
    cr_assert(in_own > TICKS / 2, "only %zu of %d flips in the log's segment", in_own, TICKS);
    for (int i = 0; i < 5; i++) cr_assert(hits[i] > 0, "no flip of %zu landed in %s", in_own, wal_label_names[i]);
    flt_pause(f, 1);
    eng_close(db); /* the log is damaged: the close may report it, nothing asserted of it */
    check_counts(f, run);
    flt_close(f);
    free(copy);
}

/* Where the log crossed into its newest segment file, a reader moves from
 * one file to the next, and a check that looks for a witness in one file
 * only misjudges damage there: the aimed share of the ticks' WAL flips
 * reaches the last write to the segment before the tail's, not only the
 * uniform share (with the log in two segments, about 1 flip in 64 would
 * land in that block by chance). */
Test(faults, wal_flips_reach_the_last_write_before_the_log_crossed_into_its_newest_segment, T_OPTS) {
    enum { TICKS = 300 };
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_ctx *f;
    eng_db *db = wal_ticks_ready(run, dir, 29, 200, &f);
    char segp[4096], seg[64], next[64], nextp[4096];
    snprintf(seg, sizeof seg, "%s/%016x", WAL_DIR, 0);
    snprintf(next, sizeof next, "%s/%016x", WAL_DIR, 64u << 10);
    tu_path(segp, sizeof segp, dir, seg);
    struct stat st;
    cr_assert(stat(tu_path(nextp, sizeof nextp, dir, next), &st) == 0 && st.st_size > 0,
              "the log never crossed into %s", next);
    size_t n = 0;
    uint8_t *copy = cu_read_file(segp, &n);
    cr_assert_eq(n, 64u << 10, "the first segment holds %zu bytes", n);
    size_t at_edge = 0;
    for (int t = 0; t < TICKS; t++) {
        flt_op(f, (uint64_t)t);
        flt_tick(f, NULL);
        lg l = lg_read(run);
        const char *line = l.lines[l.n - 1];
        char file[64];
        cr_assert_not_null(jstr(line, "file", file, sizeof file));
        uint64_t byte = (uint64_t)jnum(line, "offset") + (uint64_t)jnum(line, "bit") / 8;
        if (!strcmp(file, seg)) {
            at_edge += byte >= n - WAL_BLOCK;
            int fd = open(segp, O_WRONLY); /* undone: every tick meets the log as written */
            cr_assert(fd >= 0 && pwrite(fd, copy + byte, 1, (off_t)byte) == 1);
            close(fd);
        } else {
            char p[4096];
            size_t m = 0;
            uint8_t *now = cu_read_file(tu_path(p, sizeof p, dir, file), &m);
            now[byte] ^= (uint8_t)jmask(line);
            int fd = open(p, O_WRONLY);
            cr_assert(fd >= 0 && pwrite(fd, now + byte, 1, (off_t)byte) == 1);
            close(fd);
            free(now);
        }
        lg_free(&l);
    }
    cr_assert(at_edge > TICKS / 12, "%zu of %d flips in the first segment's last block", at_edge, TICKS);
    flt_pause(f, 1);
    eng_close(db);
    check_counts(f, run);
    flt_close(f);
    free(copy);
}

/* In a child: the fault library at RUN over DIR (seed SEED) with class
 * CLS on but no tick drawn (only the crash flips), 64 KiB segments and
 * commit syncs; puts keys 0..KEYS, the last one killed at POINT.  Waits
 * for it and asserts the kill. */
static void put_keys_then_kill(const char *run, const char *dir, uint64_t seed, int cls, uint64_t keys,
                               const char *point, int trial) {
    pid_t pid = cu_fork();
    if (pid == 0) {
        flt_options fo = fopts(run, dir, seed);
        fo.one_in[cls] = 1u << 30;
        fo.kill_pins = 1;
        flt_ctx *f = NULL;
        if (flt_open(&fo, &f) != ENG_OK) _exit(CU_EXIT_FAIL);
        flt_thread_start(f, 0);
        eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
        o.wal_segment_size = 64u << 10;
        o.sync_mode = ENG_SYNC_COMMIT;
        eng_db *db = NULL;
        if (eng_open(dir, &o, &db) != ENG_OK) _exit(CU_EXIT_FAIL);
        char k[32];
        uint8_t v[512];
        size_t kl, vl;
        for (uint64_t i = 0; i <= keys; i++) {
            flt_op(f, i);
            if (i == keys) flt_kill_at(f, point, 1);
            kv(i, 0, k, &kl, v, &vl);
            if (eng_put(db, k, kl, v, vl, NULL) != ENG_OK) _exit(CU_EXIT_FAIL);
        }
        _exit(CU_EXIT_DONE); /* not reached if the point killed us */
    }
    int st = cu_wait(pid);
    char sb[64];
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "trial %d (%s after %llu commits): child %s", trial, point,
              (unsigned long long)keys, cu_status_str(st, sb, sizeof sb));
}

/* A WAL flip at the crash lands inside a record's bytes (its header or
 * its payload), before the log's end, in every trial: a kill between a
 * commit's write and its fsync (an unsynced tail after the last synced
 * group) and right after its fsync (the synced group is the tail), after
 * a varying number of commits.  The ledger's region agrees with the
 * byte's class in the segment as it was right before the flip (the flip
 * undone).  A crash that zeroes a synced sector instead (walzero.c, a
 * minority) leaves a whole zero sector, never a block's header sector. */
Test(faults, a_wal_flip_at_the_crash_lands_in_a_record_before_the_logs_end, T_OPTS) {
    static const char *points[] = {"kill/wal/after_write_before_sync", "kill/wal/after_sync"};
    enum { TRIALS = 16 };
    size_t last_record = 0, last_sector = 0, zeroed = 0;
    const char *root = tu_tmpdir();
    for (int trial = 0; trial < TRIALS; trial++) {
        char run[128], dir[128];
        snprintf(run, sizeof run, "%s/run%d", root, trial);
        snprintf(dir, sizeof dir, "%s/db%d", root, trial);
        cr_assert(mkdir(run, 0755) == 0 && mkdir(dir, 0755) == 0, "mkdir: %s", strerror(errno));
        const char *point = points[trial % 2];
        uint64_t keys = 3 + (uint64_t)trial * 7;
        put_keys_then_kill(run, dir, 100 + (uint64_t)trial, FLT_BITFLIP_WAL, keys, point, trial);
        lg l = lg_read(run);
        const char *line = lg_nth_at(&l, "bitflip_wal", "crash/wal", 0);
        cr_assert_not_null(line, "trial %d (%s after %llu commits): no WAL flip at the crash", trial, point,
                           (unsigned long long)keys);
        char file[64], region[32], segp[4096];
        cr_assert_not_null(jstr(line, "file", file, sizeof file));
        cr_assert_not_null(jstr(line, "region", region, sizeof region), "%s", line);
        size_t n = 0;
        uint8_t *s = cu_read_file(tu_path(segp, sizeof segp, dir, file), &n);
        uint64_t byte = (uint64_t)jnum(line, "offset") + (uint64_t)jnum(line, "bit") / 8;
        cr_assert(byte < n, "%s", line);
        if (!strcmp(region, "synced_sector")) { /* not a flip: a whole sector zeroed (walzero.c) */
            cr_assert(byte % 512 == 0 && byte % 4096 != 0 && byte + 512 <= n, "%s", line);
            for (int i = 0; i < 512; i++) cr_assert(s[byte + (uint64_t)i] == 0, "%s: byte %d not zero", line, i);
            zeroed++;
            free(s);
            lg_free(&l);
            continue;
        }
        s[byte] ^= (uint8_t)jmask(line); /* the segment as it was right before the flip */
        uint64_t end;
        const char *expect = wal_region(s, n, byte, &end);
        cr_assert(!strcmp(expect, "record_header") || !strcmp(expect, "record_payload"),
                  "trial %d: the flip at byte %llu is in %s, not in a record (log end %llu): %s", trial,
                  (unsigned long long)byte, expect, (unsigned long long)end, line);
        cr_assert(byte < end, "trial %d: byte %llu is past the log's end %llu", trial, (unsigned long long)byte,
                  (unsigned long long)end);
        cr_assert_str_eq(region, expect, "trial %d: the ledger says %s, the byte is in %s", trial, region, expect);
        last_record += strstr(line, "the last record") != NULL;
        last_sector += strstr(line, "last sector") != NULL;
        free(s);
        lg_free(&l);
    }
    /* Both halves of the record draw are met: the write's last record and
     * another. */
    cr_assert(zeroed < TRIALS / 2, "%zu of %d crashes zeroed a sector instead of flipping a bit", zeroed, TRIALS);
    cr_assert(last_record > 0 && last_record < TRIALS - zeroed, "%zu of %zu flips on the write's last record",
              last_record, TRIALS - zeroed);
    /* And a record's last sector, the edge a check that walks a record
     * sector by sector misses when it counts the end short. */
    cr_assert(last_sector > 0 && last_sector < TRIALS - zeroed, "%zu last-sector flips of %zu", last_sector,
              TRIALS - zeroed);
}

/* With bitflip_page on, some kills also flip one bit of the control file
 * (crash/control): the ledger names the file, the bit and the file's
 * hashes before and after, the file differs from its old bytes in that
 * bit alone, and the engine's next open refuses it with a control report
 * (every byte of the file is under its checksum). */
static void control_report(void *ctx, const eng_corruption *r) {
    int *n = ctx;
    *n += r->layer == ENG_LAYER_CONTROL;
}

Test(faults, a_kill_may_flip_the_control_file_and_the_next_open_reports_it, T_OPTS) {
    enum { TRIALS = 200 };
    const char *root = tu_tmpdir();
    int found = 0;
    for (int trial = 0; trial < TRIALS && !found; trial++) {
        char run[128], dir[128], cpath[4096];
        snprintf(run, sizeof run, "%s/run%d", root, trial);
        snprintf(dir, sizeof dir, "%s/db%d", root, trial);
        cr_assert(mkdir(run, 0755) == 0 && mkdir(dir, 0755) == 0, "mkdir: %s", strerror(errno));
        tu_path(cpath, sizeof cpath, dir, CONTROL_NAME);
        put_keys_then_kill(run, dir, 300 + (uint64_t)trial, FLT_BITFLIP_PAGE, 4, "kill/wal/after_sync", trial);
        lg l = lg_read(run);
        const char *line = lg_nth_at(&l, "bitflip_page", "crash/control", 0);
        if (!line) {
            lg_free(&l);
            continue;
        }
        found = 1;
        char file[64], pre[32], post[32];
        cr_assert(jstr(line, "file", file, sizeof file) && !strcmp(file, CONTROL_NAME), "%s", line);
        cr_assert(line_is(line, "region", "control"), "%s", line);
        cr_assert(jstr(line, "pre", pre, sizeof pre) && jstr(line, "post", post, sizeof post), "%s", line);
        size_t n = 0;
        uint8_t *c = cu_read_file(cpath, &n);
        cr_assert_eq(n, CONTROL_SIZE);
        cr_assert_eq(XXH64(c, n, 0), strtoull(post, NULL, 16), "the file does not hash to post: %s", line);
        int64_t bit = jnum(line, "bit");
        cr_assert(bit >= 0 && bit < (int64_t)CONTROL_SIZE * 8, "%s", line);
        c[bit / 8] ^= (uint8_t)jmask(line);
        cr_assert_eq(XXH64(c, n, 0), strtoull(pre, NULL, 16), "undoing the bit does not give pre: %s", line);
        free(c);
        int reports = 0;
        eng_options o = eopts(ENG_IO_PSYNC, NULL, NULL);
        o.on_corruption = control_report;
        o.on_corruption_ctx = &reports;
        eng_db *db = NULL;
        int rc = eng_open(dir, &o, &db);
        cr_assert_eq(rc, ENG_CORRUPTION, "trial %d: a flipped control file opened: %s", trial, eng_strerror(rc));
        cr_assert_gt(reports, 0, "trial %d: no control report", trial);
        lg_free(&l);
    }
    cr_assert(found, "no kill of %d flipped the control file", TRIALS);
}

/* ---- zeroed blocks between operations ----------------------------------- */

Test(faults, a_tick_zeroes_a_block_drawn_by_class_and_it_stays_damage_until_written, T_OPTS) {
    enum { TICKS = 60 };
    static const char *classes[] = {"meta",       "root",         "interior",  "leaf",      "clog",
                                    "overflow",   "trunk",        "hwm_below", "hwm_above", "file_end",
                                    "since_redo", "last_written", "unused"};
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate_all_types(dir);
    char p[4096];
    size_t len = 0;
    uint8_t *copy = cu_read_file(tu_path(p, sizeof p, dir, "data"), &len);
    flt_options fo = fopts(run, dir, 5);
    fo.one_in[FLT_ZERO_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    size_t lines = 0, meta = 0;
    static uint8_t zero[PS];
    uint8_t now[PS];
    for (int t = 0; t < TICKS; t++) {
        flt_op(f, (uint64_t)t);
        flt_tick(f, NULL);
        lg l = lg_read(run);
        cr_assert(l.n <= lines + 1, "tick %d: one block at most", t);
        if (l.n == lines) { /* four draws met blocks zeroed already */
            lg_free(&l);
            continue;
        }
        lines = l.n;
        const char *line = l.lines[l.n - 1];
        char point[32], region[32];
        cr_assert_str_eq(jstr(line, "point", point, sizeof point), "tick/data", "%s", line);
        cr_assert_not_null(jstr(line, "region", region, sizeof region), "%s", line);
        int known = 0;
        for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) known |= !strcmp(region, classes[i]);
        cr_assert(known, "region %s", region);
        meta += !strcmp(region, "meta");
        int64_t block = jnum(line, "block");
        cr_assert(block >= 0 && (uint64_t)(block + 1) * PS <= len, "%s", line);
        /* The whole block reads back zero, it was not zero before, and the
         * damage table holds it (no write of the block came since). */
        read_block(p, (uint64_t)block * PS, now);
        cr_assert(memcmp(now, zero, PS) == 0, "tick %d: block %lld is not all zero", t, (long long)block);
        cr_assert(memcmp(copy + block * PS, zero, PS) != 0, "tick %d: an all-zero block was zeroed", t);
        cr_assert(dmg_has(f, (uint64_t)jnum(line, "seq")), "tick %d: %s not in the damage table", t, line);
        memcpy(copy + block * PS, now, PS);
        lg_free(&l);
    }
    cr_assert(lines >= TICKS / 2, "%zu blocks zeroed in %d ticks", lines, TICKS);
    cr_assert(meta > 0, "the one meta page was never drawn");
    check_counts(f, run);
    flt_close(f);
    free(copy);
}
