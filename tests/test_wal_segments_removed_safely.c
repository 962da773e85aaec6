/*
 * test_wal_segments_removed_safely.c -- recycled segments keep stale
 * content that is never read as records, the archive receives identical
 * copies of removed segments, and remove_before keeps segments not yet
 * durable.
 *
 * Part of the wal suite (once test_wal.c); the helpers it shares
 * with the other test_wal_*.c files are in wal_helpers.h.
 */
#include "wal_helpers.h"

/* ==========================================================================
 * Removing, recycling, archiving
 * ======================================================================== */

static uint8_t *slurp(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    uint8_t *p = malloc((size_t)st.st_size + 1);
    cr_assert_eq(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

/* Six and a bit segments of records, flushed as they go. */
static wal *long_log(fx *f, model *m, const char *archive) {
    wal *w = wopen(f, 1, 0, 0, 4 * WAL_BLOCK, archive);
    uint64_t seed = 1;
    while (wal_insert_lsn(w) < 6 * SEG + 5000) {
        add(w, m, 1, 3000, seed++);
        if (seed % 4 == 0) wflush(w);
    }
    wflush(w);
    return w;
}

TU_BACKEND_TEST(wal, recycled_segment_stale_content_is_never_read_as_records, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = long_log(&f, &m, NULL);
    cr_assert_eq(wal_remove_before(w, 4 * SEG), ENG_OK);
    wal_stats st;
    wal_get_stats(w, &st);
    cr_assert_eq(st.segments_recycled, 2);
    cr_assert_eq(st.segments_removed, 2);
    for (uint64_t s = 0; s < 4; s++)
        cr_assert(!seg_file_exists(&f, s * SEG), "segment %llu still there", (unsigned long long)s);
    cr_assert(seg_file_exists(&f, 7 * SEG) && seg_file_exists(&f, 8 * SEG), "no recycled spares");

    /* the stream enters the first spare and stops exactly at the end of
     * its third block: the next record would start in a stale block */
    uint64_t seed = 10000;
    while (wal_insert_lsn(w) < 7 * SEG + 2 * WAL_BLOCK) add(w, &m, 1, 3000, seed++);
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK), seed++);
    uint64_t end = wal_insert_lsn(w);
    cr_assert_eq(end % WAL_BLOCK, 0);
    cr_assert_lt(end, 8 * SEG);
    wflush(w);
    wal_get_stats(w, &st);
    cr_assert_eq(st.segments_created, 7, "the spare should be reused, not created");
    wal_close(w);

    /* the spare keeps stale blocks right after the end: intact WAL blocks
     * (magic, checksum) of the same generation, from another position */
    uint8_t blk[WAL_BLOCK];
    raw_read(&f, end, blk, WAL_BLOCK);
    cr_assert_eq(fmt_get16(blk + WB_MAGIC_OFF), WB_MAGIC, "the stale block should look like a WAL block");
    cr_assert_eq(blk[WB_GEN_OFF], 1);
    cr_assert_neq(rd64le(blk + WB_LSN_OFF), end);

    size_t from = 0;
    while (m.r[from].lsn < 4 * SEG) from++;
    rd_result res = read_log(&f, m.r[from].lsn, m.r[from - 1].lsn, &m, from);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "%s: %s", eng_strerror(res.rc), tu_reports_str(&f.reps, buf, sizeof buf));
    cr_assert_eq(res.n, m.n - from);
    cr_assert_eq(res.end, m.r[m.n - 1].end);
    cr_assert_eq(res.trimmed, 1, "stale bytes after the end are trimmed bytes");
    cr_assert_eq(f.reps.total, 0);

    /* reading from before the removal point finds the segments gone */
    res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, archive_receives_identical_copies_of_removed_segments, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    const char *arch = tu_tmpdir();
    model m = {0};
    wal *w = long_log(&f, &m, arch);
    uint8_t *orig[4];
    size_t olen[4], total = 0;
    for (int s = 0; s < 4; s++) {
        char p[4096];
        seg_path(p, sizeof p, &f, (uint64_t)s * SEG);
        orig[s] = slurp(p, &olen[s]);
        total += olen[s];
    }
    int dirsyncs = hook_count(ENG_IO_DIRSYNC);
    cr_assert_eq(wal_remove_before(w, 4 * SEG + 100), ENG_OK);
    cr_assert_geq(hook_count(ENG_IO_DIRSYNC) - dirsyncs, 2, "archive dir and wal dir must be synced");
    for (int s = 0; s < 4; s++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%016llx", arch, (unsigned long long)s * SEG);
        size_t len;
        uint8_t *copy = slurp(p, &len);
        cr_assert_eq(len, olen[s], "segment %d: archived %zu bytes of %zu", s, len, olen[s]);
        cr_assert(memcmp(copy, orig[s], len) == 0, "segment %d: the archive copy differs", s);
        free(copy);
        free(orig[s]);
        cr_assert(!seg_file_exists(&f, (uint64_t)s * SEG));
    }
    wal_stats st;
    wal_get_stats(w, &st);
    cr_assert_eq(st.segments_archived, 4);
    cr_assert_eq(st.archive_bytes, total);
    /* the log still works and reads from the first kept record */
    add(w, &m, 1, 10, 5);
    wflush(w);
    wal_close(w);
    size_t from = 0;
    while (m.r[from].lsn < 4 * SEG) from++;
    rd_result res = read_log(&f, m.r[from].lsn, m.r[from - 1].lsn, &m, from);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, m.n - from);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, remove_before_keeps_segments_not_yet_durable, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 100, 1);
    wflush(w);
    while (wal_insert_lsn(w) < 3 * SEG) add(w, &m, 1, 3000, m.n + 1); /* written out as the buffer fills, not synced */
    cr_assert_eq(wal_remove_before(w, 3 * SEG), ENG_OK);
    cr_assert(seg_file_exists(&f, 0), "a segment with unsynced records was removed");
    wflush(w);
    cr_assert_eq(wal_remove_before(w, 2 * SEG), ENG_OK);
    cr_assert(!seg_file_exists(&f, 0) && seg_file_exists(&f, 2 * SEG));
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}
