/*
 * test_recovery_torn_pages_rebuilt_or_detected.c -- a page torn by the
 * crash is rebuilt from its full-page image (zstd compressed too); without
 * images the tear is detected, never returned as data (C).
 *
 * Part of the recovery suite (once test_recovery.c); the helpers it shares
 * with the other test_recovery_*.c files are in recovery_helpers.h.
 */
#include "recovery_helpers.h"

/* ========================================================================= */
/* 2, 10. A page torn by the crash is rebuilt from its full-page image;      */
/*        without images the tear is detected, never returned as data.       */
/* ========================================================================= */

#define TORN_NKEYS   3000
#define TORN_MAXLEAF 512

typedef struct torn_fixture {
    int backend, fpw, zstd;
    const char *dir; /* built, checkpointed and closed; then crashed */
    uint64_t leaf;   /* the block torn */
    int nleaf;
    uint64_t leaf_keys[TORN_MAXLEAF];
    uint8_t in_leaf[TORN_NKEYS];
    uint8_t old[PS];                               /* the leaf as the checkpoint left it */
    uint8_t newp[PS];                              /* the leaf as the crashed child wrote it back */
    uint64_t images, image_bytes, image_raw_bytes; /* the child's stats */
} torn_fixture;

static torn_fixture TF;

static size_t val_torn(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    torn_fixture *f = ctx;
    return cu_val(buf, i, i < TORN_NKEYS && f->in_leaf[i] ? 1 : 0, 0, f->zstd);
}

static eng_options torn_opts(const torn_fixture *f, size_t cache) {
    eng_options o = base_opts(f->backend, ENG_SYNC_COMMIT, cache, 0);
    o.full_page_writes = f->fpw;
    o.wal_compression = f->zstd ? ENG_WAL_COMPRESSION_ZSTD : ENG_WAL_COMPRESSION_NONE;
    o.page_size = PS;
    return o;
}

/* Child: update every key of the leaf (same lengths, generation 1), sync
 * the log, then read the rest of the tree through a 16-page cache until
 * the leaf has been written back; die without closing. */
static void child_torn(torn_fixture *f, int fd) {
    eng_options o = torn_opts(f, 16 * PS);
    eng_db *db = NULL;
    int rc = eng_open(f->dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    for (int j = 0; j < f->nleaf; j++) {
        uint64_t i = f->leaf_keys[j];
        size_t vl = cu_val(v, i, 1, 0, f->zstd);
        if ((rc = eng_put(db, k, cu_key(k, i), v, vl, NULL))) child_fail(fd, 2, rc);
    }
    if ((rc = eng_sync(db))) child_fail(fd, 3, rc);
    eng_stats st;
    eng_get_stats(db, &st);
    char path[4200];
    snprintf(path, sizeof path, "%s/data", f->dir);
    int dfd = open(path, O_RDONLY);
    if (dfd < 0) child_fail(fd, 4, ENG_IOERR);
    uint8_t page[PS];
    eng_buf b = {0};
    int written = 0;
    for (int pass = 0; pass < 8 && !written; pass++) {
        for (uint64_t i = 0; i < TORN_NKEYS; i++) {
            if (f->in_leaf[i]) continue;
            if ((rc = eng_get(db, k, cu_key(k, i), &b))) child_fail(fd, 5, rc);
        }
        if (pread(dfd, page, PS, (off_t)(f->leaf * PS)) != (ssize_t)PS) child_fail(fd, 6, ENG_IOERR);
        written = memcmp(page, f->old, PS) != 0;
    }
    if (!written) child_fail(fd, 7, ENG_BUSY); /* the leaf never left the cache */
    child_send(fd, MSG_VAL, 1, st.images);
    child_send(fd, MSG_VAL, 2, st.image_bytes);
    child_send(fd, MSG_VAL, 3, st.image_raw_bytes);
    _exit(CU_EXIT_DONE); /* a crash: no close, no checkpoint */
}

/* Build, checkpoint, close; pick a leaf; crash a child that rewrites it. */
static void torn_setup(int backend, int fpw, int zstd) {
    torn_fixture *f = &TF;
    memset(f, 0, sizeof *f);
    f->backend = backend;
    f->fpw = fpw;
    f->zstd = zstd;
    f->dir = tu_tmpdir();
    eng_options o = torn_opts(f, 0);
    eng_db *db = tu_open(f->dir, &o);
    for (uint64_t i = 0; i < TORN_NKEYS; i++) cr_assert_eq(put_gen(db, i, 0, zstd), ENG_OK);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_close(db);

    /* The leaf: one in the middle of the leaves, with many keys. */
    uint64_t nb = tu_data_nblocks(f->dir, PS);
    uint64_t cand[4096];
    int nc = 0;
    uint8_t page[PS];
    for (uint64_t b = 1; b < nb && nc < 4096; b++) {
        tu_read_page(f->dir, b, PS, page);
        int z = 0;
        page_problem pr;
        if (page_verify(page, PS, b, nb, 1, &z, &pr) != ENG_OK || z) continue;
        if (ph_get_type(page) == PAGE_LEAF && ph_get_nslots(page) >= 20) cand[nc++] = b;
    }
    cr_assert(nc >= 3, "fixture: only %d leaves with 20+ keys", nc);
    f->leaf = cand[nc / 2];
    tu_read_page(f->dir, f->leaf, PS, f->old);
    unsigned ns = ph_get_nslots(f->old);
    cr_assert(ns <= TORN_MAXLEAF);
    for (unsigned s = 0; s < ns; s++) {
        leaf_cell c;
        page_leaf_cell(f->old, s, &c);
        int64_t idx = cu_key_index(c.key, c.klen);
        cr_assert(idx >= 0 && idx < TORN_NKEYS, "fixture: leaf %llu slot %u holds a foreign key",
                  (unsigned long long)f->leaf, s);
        f->leaf_keys[f->nleaf++] = (uint64_t)idx;
        f->in_leaf[idx] = 1;
    }

    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) child_torn(f, fd);
    msg msgs[16];
    size_t n;
    int st = child_collect(pid, fd, msgs, 16, &n);
    assert_no_child_fail(msgs, n < 16 ? n : 16, "torn-page child");
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "torn-page child: %s",
              cu_status_str(st, sb, sizeof sb));
    for (size_t i = 0; i < n && i < 16; i++) {
        if (msgs[i].tag != MSG_VAL) continue;
        if (msgs[i].step == 1) f->images = msgs[i].v;
        if (msgs[i].step == 2) f->image_bytes = msgs[i].v;
        if (msgs[i].step == 3) f->image_raw_bytes = msgs[i].v;
    }
    tu_read_page(f->dir, f->leaf, PS, f->newp);
    cr_assert(ph_get_lsn(f->newp) > ph_get_lsn(f->old),
              "fixture: the leaf written back has LSN %llu, the checkpointed one %llu",
              (unsigned long long)ph_get_lsn(f->newp), (unsigned long long)ph_get_lsn(f->old));
    if (fpw)
        cr_assert(f->images >= 1, "the first change after the checkpoint logged no image");
    else
        cr_assert_eq(f->images, 0, "full_page_writes off, yet %llu images were logged (the updates split nothing)",
                     (unsigned long long)f->images);
}

enum { TEAR_OLD_AFTER_512, TEAR_ZERO_AFTER_HALF, TEAR_OLD_AFTER_K, TEAR_KINDS };
/* Names kind T (with K when it matters) into BUF. */
static const char *tear_name(char *buf, size_t cap, int t, unsigned k) {
    if (t == TEAR_OLD_AFTER_512)
        snprintf(buf, cap, "new first 512 bytes, old rest");
    else if (t == TEAR_ZERO_AFTER_HALF)
        snprintf(buf, cap, "new first half, zeros after");
    else
        snprintf(buf, cap, "new first %u*512 bytes, old rest", k);
    return buf;
}

/* The torn bytes of kind T (K sectors for TEAR_OLD_AFTER_K). */
static void make_tear(const torn_fixture *f, int t, unsigned k, uint8_t *out) {
    size_t keep = t == TEAR_OLD_AFTER_512 ? 512 : t == TEAR_ZERO_AFTER_HALF ? PS / 2 : 512u * k;
    memcpy(out, f->newp, keep);
    if (t == TEAR_ZERO_AFTER_HALF)
        memset(out + keep, 0, PS - keep);
    else
        memcpy(out + keep, f->old + keep, PS - keep);
}

/* Copy the crashed dir to WORK and tear the leaf there; returns 0 if this
 * tear would leave the new page whole (nothing to test). */
static int tear_copy(const torn_fixture *f, const char *work, int t, unsigned k) {
    uint8_t torn[PS];
    make_tear(f, t, k, torn);
    if (memcmp(torn, f->newp, PS) == 0) return 0;
    tu_copy_dir(f->dir, work);
    tu_write_page(work, f->leaf, PS, torn);
    return 1;
}

static void torn_page_rebuilt_rounds(int backend, int zstd) {
    torn_setup(backend, 1, zstd);
    torn_fixture *f = &TF;
    const char *work = tu_tmpdir();
    tu_rng rng = {cu_seed(0x200 + (uint64_t)backend + 8u * (uint64_t)zstd)};
    int tested = 0;
    for (int t = 0; t < TEAR_KINDS; t++) {
        unsigned k = (unsigned)tu_range(&rng, 2, PS / 512 - 1);
        if (!tear_copy(f, work, t, k)) continue;
        tested++;
        char what[200], tn[64];
        snprintf(what, sizeof what, "%s%s, leaf %llu torn (%s)", tu_backend_name(backend), zstd ? " zstd" : "",
                 (unsigned long long)f->leaf, tear_name(tn, sizeof tn, t, k));
        eng_options o = torn_opts(f, 16 * PS);
        eng_recovery_info ri;
        /* Every key is back, the leaf's with their updated values. */
        tu_reports rep;
        tu_reports_init(&rep);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(work, &o, &db);
        char buf[2048];
        cr_assert_eq(rc, ENG_OK, "%s: open: %s\n%s", what, eng_strerror(rc), tu_reports_str(&rep, buf, sizeof buf));
        eng_get_recovery_info(db, &ri);
        cr_assert(ri.images_restored >= 1, "%s: recovery restored no image", what);
        cu_verify_clean(db, what);
        uint64_t m = cu_check_prefix(db, val_torn, f, what);
        cr_assert_eq(m, TORN_NKEYS, "%s: %llu keys after recovery", what, (unsigned long long)m);
        cr_assert_eq(rep.total, 0, "%s: recovery reported corruption:\n%s", what,
                     tu_reports_str(&rep, buf, sizeof buf));
        rc = eng_close(db);
        cr_assert_eq(rc, ENG_OK, "%s: close: %s", what, eng_strerror(rc));
        /* And the block on disk is whole again. */
        uint8_t page[PS];
        tu_read_page(work, f->leaf, PS, page);
        int z = 0;
        page_problem pr;
        cr_assert_eq(page_verify(page, PS, f->leaf, tu_data_nblocks(work, PS), 1, &z, &pr), ENG_OK,
                     "%s: the leaf on disk after recovery and close: %s", what, pr.detail);
    }
    cr_assert(tested >= 2, "only %d tears differ from the new page", tested);
    if (zstd)
        cr_assert(f->image_bytes < f->image_raw_bytes, "zstd: images took %llu bytes for %llu raw bytes (%llu images)",
                  (unsigned long long)f->image_bytes, (unsigned long long)f->image_raw_bytes,
                  (unsigned long long)f->images);
}

TU_BACKEND_TEST(recovery, torn_page_after_crash_is_rebuilt_from_its_image, T_OPTS) {
    torn_page_rebuilt_rounds(*backend, 0);
}

TU_BACKEND_TEST(recovery, wal_compression_zstd_round_trip, T_OPTS) { torn_page_rebuilt_rounds(*backend, 1); }

TU_BACKEND_TEST_FN(recovery, torn_page_without_image_is_detected_not_returned, T_OPTS) {
    torn_setup(backend, 0, 0);
    torn_fixture *f = &TF;
    const char *work = tu_tmpdir();
    tu_rng rng = {cu_seed(0x280 + (uint64_t)backend)};
    int tested = 0;
    for (int t = 0; t < TEAR_KINDS; t++) {
        unsigned k = (unsigned)tu_range(&rng, 2, PS / 512 - 1);
        if (!tear_copy(f, work, t, k)) continue;
        tested++;
        char what[200], tn[64];
        snprintf(what, sizeof what, "%s fpw off, leaf %llu torn (%s)", tu_backend_name(backend),
                 (unsigned long long)f->leaf, tear_name(tn, sizeof tn, t, k));
        tu_reports rep;
        tu_reports_init(&rep);
        eng_options o = torn_opts(f, 16 * PS);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(work, &o, &db);
        char buf[2048];
        if (rc != ENG_OK) {
            cr_assert_eq(rc, ENG_CORRUPTION, "%s: open: %s", what, eng_strerror(rc));
            cr_assert(tu_reports_has(&rep, -1, "data", (int64_t)f->leaf),
                      "%s: open failed on corruption without naming data block %llu:\n%s", what,
                      (unsigned long long)f->leaf, tu_reports_str(&rep, buf, sizeof buf));
            cr_log_info("%s: open detected it: %s", what, tu_reports_str(&rep, buf, sizeof buf));
            continue;
        }
        /* Open went through: then reads of the leaf's keys and eng_verify
         * must say corruption at the leaf, and no read returns a value
         * other than the one last written. */
        eng_buf b = {0};
        char kb[CU_KLEN + 1];
        uint8_t want[CU_VMAX];
        int detected = 0;
        for (uint64_t i = 0; i < TORN_NKEYS; i++) {
            rc = eng_get(db, kb, cu_key(kb, i), &b);
            if (rc == ENG_CORRUPTION) {
                detected++;
                continue;
            }
            cr_assert_eq(rc, ENG_OK, "%s: get of key %llu: %s", what, (unsigned long long)i, eng_strerror(rc));
            size_t wl = val_torn(f, i, want);
            cr_assert(tu_bytes_eq(b.data, b.len, want, wl), "%s: key %llu read back a wrong value%s", what,
                      (unsigned long long)i, f->in_leaf[i] ? " (a key of the torn leaf)" : "");
        }
        eng_buf_free(&b);
        uint64_t problems = 0;
        tu_reports vrep;
        tu_reports_init(&vrep);
        rc = eng_verify(db, tu_collect, &vrep, &problems);
        cr_assert(detected > 0 || problems > 0, "%s: the torn leaf was neither reported by gets nor by verify", what);
        cr_assert(tu_reports_has(&rep, -1, "data", (int64_t)f->leaf) ||
                      tu_reports_has(&vrep, -1, "data", (int64_t)f->leaf),
                  "%s: no report names data block %llu:\n%s", what, (unsigned long long)f->leaf,
                  tu_reports_str(&rep, buf, sizeof buf));
        eng_close(db); /* may fail: the tree holds a corrupt page */
    }
    cr_assert(tested >= 2, "only %d tears differ from the new page", tested);
}
