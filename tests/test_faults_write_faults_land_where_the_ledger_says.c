/*
 * test_faults_write_faults_land_where_the_ledger_says.c -- every write
 * fault (torn, lost, misdirected, zeroed, in-flight flip) and every flip
 * (on read, in the cache, on disk, in the log) is the one bit or block its
 * ledger line names, and the engine detects it.
 *
 * Part of the faults suite (once test_faults.c); the helpers it shares
 * with the other test_faults_*.c files are in faults_helpers.h.
 */
#include "faults_helpers.h"

/* ---- write faults: where the ledger says ------------------------------------------------ */

TU_BACKEND_TEST(faults, torn_write_keeps_old_tail, T_OPTS) {
    lg l;
    tw *w = run_write_class(FLT_TORN_WRITE, 7, *backend, 11, &l, NULL);
    size_t verified = 0;
    for (size_t i = 0; i < w->nev; i++) {
        tw_ev *e = &w->ev[i];
        const char *line = lg_nth(&l, "torn_write", i);
        check_line_page(line, e, "torn_write");
        int64_t off = jnum(line, "offset"), len = jnum(line, "len");
        size_t keep = (size_t)(off - (int64_t)e->orig_off);
        cr_assert_eq(keep, e->final_len, "torn length: ledger %zu, op %zu", keep, e->final_len);
        cr_assert(keep > 0 && keep < PS && keep % 512 == 0, "torn at %zu", keep);
        cr_assert_eq((size_t)len, PS - keep);
        if (!e->done || e->conflict) continue;
        cr_assert(!memcmp(e->new_orig, e->intended, keep), "event %zu: head is not the new page", i);
        cr_assert(!memcmp(e->new_orig + keep, e->old_orig + keep, PS - keep),
                  "event %zu: bytes after the tear are not the old ones", i);
        verified++;
    }
    cr_assert(verified > 0);
    lg_free(&l);
    free(w);
}

/* A write that missed its block names the type of the page it carried
 * (region; the oracle's V6b explains a lost commit only by a missed
 * commit-log or meta page). */
static void check_region_is_the_page_type(const char *line, const tw_ev *e) {
    char r[16];
    cr_assert_not_null(jstr(line, "region", r, sizeof r), "a missed write names its page's type: %s", line);
    int type = ph_get_type(e->intended);
    cr_assert_eq(!strcmp(r, "clog"), type == PAGE_CLOG, "region %s for a page of type %d", r, type);
    cr_assert_eq(!strcmp(r, "meta"), e->orig_off == 0, "region %s for block %llu", r,
                 (unsigned long long)(e->orig_off / PS));
}

TU_BACKEND_TEST(faults, lost_write_leaves_old_page, T_OPTS) {
    lg l;
    tw *w = run_write_class(FLT_LOST_WRITE, 7, *backend, 12, &l, NULL);
    size_t verified = 0, differed = 0;
    for (size_t i = 0; i < w->nev; i++) {
        tw_ev *e = &w->ev[i];
        const char *line = lg_nth(&l, "lost_write", i);
        check_line_page(line, e, "lost_write");
        check_region_is_the_page_type(line, e);
        cr_assert_eq(jnum(line, "offset"), (int64_t)e->orig_off);
        cr_assert_eq(jnum(line, "len"), PS);
        cr_assert(e->skip);
        if (!e->done || e->conflict) continue;
        cr_assert(!memcmp(e->new_orig, e->old_orig, PS), "event %zu: the block changed", i);
        differed += memcmp(e->intended, e->old_orig, PS) != 0;
        verified++;
    }
    cr_assert(verified > 0 && differed > 0, "verified %zu, of which the write would have changed %zu", verified,
              differed);
    lg_free(&l);
    free(w);
}

TU_BACKEND_TEST(faults, misdirected_write_lands_elsewhere, T_OPTS) {
    lg l;
    tw *w = run_write_class(FLT_MISDIRECTED_WRITE, 7, *backend, 13, &l, NULL);
    size_t verified = 0;
    for (size_t i = 0; i < w->nev; i++) {
        tw_ev *e = &w->ev[i];
        const char *line = lg_nth(&l, "misdirected_write", i);
        check_line_page(line, e, "misdirected_write");
        check_region_is_the_page_type(line, e);
        uint64_t target = (uint64_t)jnum(line, "offset") / PS;
        cr_assert_eq(target * PS, e->final_off);
        cr_assert_neq(target, e->orig_off / PS, "misdirected onto its own block");
        if (!e->done || e->conflict) continue;
        cr_assert(!memcmp(e->new_final, e->intended, PS), "event %zu: block %llu does not hold the page", i,
                  (unsigned long long)target);
        cr_assert_eq(ph_get_block(e->new_final), (uint32_t)jnum(line, "block"),
                     "event %zu: the page at block %llu says it is for block %u", i, (unsigned long long)target,
                     ph_get_block(e->new_final));
        cr_assert(!memcmp(e->new_orig, e->old_orig, PS), "event %zu: the intended block changed", i);
        verified++;
    }
    cr_assert(verified > 0);
    lg_free(&l);
    free(w);
}

TU_BACKEND_TEST(faults, zero_page_reads_zero, T_OPTS) {
    lg l;
    tw *w = run_write_class(FLT_ZERO_PAGE, 7, *backend, 14, &l, NULL);
    static const uint8_t zeros[PS];
    size_t verified = 0;
    for (size_t i = 0; i < w->nev; i++) {
        tw_ev *e = &w->ev[i];
        const char *line = lg_nth(&l, "zero_page", i);
        check_line_page(line, e, "zero_page");
        cr_assert(e->buf_replaced, "the engine's buffer was written over, not replaced");
        if (!e->done || e->conflict) continue;
        cr_assert(!memcmp(e->new_orig, zeros, PS), "event %zu: block %llu is not zero", i,
                  (unsigned long long)(e->orig_off / PS));
        verified++;
    }
    cr_assert(verified > 0);
    lg_free(&l);
    free(w);
}

TU_BACKEND_TEST(faults, inflight_flip_on_write_is_one_bit, T_OPTS) {
    lg l;
    tw *w = run_write_class(FLT_BITFLIP_INFLIGHT, 7, *backend, 15, &l, NULL);
    size_t verified = 0;
    for (size_t i = 0; i < w->nev; i++) {
        tw_ev *e = &w->ev[i];
        /* Reads are flipped too (hook/read): the events are the writes. */
        const char *line = lg_nth_at(&l, "bitflip_inflight", "hook/write", i);
        check_line_page(line, e, "bitflip_inflight");
        cr_assert(e->buf_replaced, "the flip must go to a copy, never the engine's buffer");
        int64_t bit = jnum(line, "bit");
        cr_assert(bit >= 0 && bit < (int64_t)PS * 8);
        cr_assert_eq(jmask(line), 1u << (bit % 8));
        if (!e->done || e->conflict) continue;
        size_t byte = 0;
        uint8_t mask = 0;
        /* The page the engine submitted (the frame's bytes, stamped) and
         * the page on disk differ in exactly the ledger's bit. */
        cr_assert_eq(one_bit_diff(e->new_orig, e->intended, PS, &byte, &mask), 1, "event %zu", i);
        cr_assert_eq(byte, (size_t)bit / 8);
        cr_assert_eq(mask, jmask(line));
        verified++;
    }
    cr_assert(verified > 0);
    lg_free(&l);
    free(w);
}

/* ---- in-flight flip on read: the read path's checksum catches it ------------------------ */

TU_BACKEND_TEST(faults, inflight_flip_on_read_is_detected, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, *backend, 600);
    flt_options fo = fopts(run, dir, 21);
    fo.one_in[FLT_BITFLIP_INFLIGHT] = 3;
    flt_ctx *f = fopen_ok(&fo);
    static tu_reports reps;
    tu_reports_init(&reps);
    eng_options o = eopts(*backend, flt_hooks(f), &reps);
    o.read_only = 1;
    flt_pause(f, 1); /* a clean open */
    eng_db *db = tu_open(dir, &o);
    flt_pause(f, 0);
    flt_thread_start(f, 0);
    eng_buf b = {0};
    char k[32];
    uint8_t v[512];
    size_t kl, vl, ok = 0, corrupt = 0;
    for (uint64_t i = 0; i < 600; i++) {
        flt_op(f, i);
        kv(i, 0, k, &kl, v, &vl);
        int rc = eng_get(db, k, kl, &b);
        cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION, "get %llu: %s", (unsigned long long)i, eng_strerror(rc));
        if (rc == ENG_OK) {
            cr_assert(tu_bytes_eq(b.data, b.len, v, vl), "get %llu: wrong value returned", (unsigned long long)i);
            ok++;
        } else {
            corrupt++;
        }
    }
    eng_buf_free(&b);
    flt_pause(f, 1);
    tu_close(db);
    check_counts(f, run);
    flt_close(f);
    lg l = lg_read(run);
    size_t n = lg_count(&l, "bitflip_inflight");
    cr_assert(n > 0 && corrupt > 0, "flips %zu, corrupt gets %zu", n, corrupt);
    char buf[2048];
    for (size_t i = 0; i < n; i++) {
        const char *line = lg_nth(&l, "bitflip_inflight", i);
        cr_assert(line_is(line, "point", "hook/read"), "%s", line);
        int64_t block = jnum(line, "block");
        cr_assert(block >= 0, "%s", line);
        cr_assert(tu_reports_has(&reps, ENG_LAYER_PAGE_CHECKSUM, "data", block),
                  "no page_checksum report for block %lld (%s); reports:\n%s", (long long)block, line,
                  tu_reports_str(&reps, buf, sizeof buf));
    }
    lg_free(&l);
}

/* ---- flips between operations --------------------------------------------------------- */

Test(faults, cache_flip_is_one_bit_of_a_frame, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 31);
    fo.one_in[FLT_BITFLIP_CACHE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    o.cache_size = 8u << 20; /* everything stays resident */
    eng_db *db = tu_open(dir, &o);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 400; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    flt_thread_start(f, 0);
    uint64_t nb = eng_debug_nblocks(db);
    cr_assert(nb > 4);
    uint8_t *snap = calloc(nb, PS), *res = calloc(nb, 1);
    cr_assert(snap && res);
    size_t flips = 0;
    for (int round = 0; round < 6; round++) {
        for (uint64_t bl = 0; bl < nb; bl++) {
            size_t ps = 0;
            uint8_t *p = eng_debug_frame_bytes(db, bl, &ps);
            res[bl] = p != NULL;
            if (p) {
                cr_assert_eq(ps, PS);
                memcpy(snap + bl * PS, p, PS);
                eng_debug_frame_release(db, bl);
            }
        }
        lg before = lg_read(run);
        flt_op(f, (uint64_t)round);
        flt_tick(f, db);
        lg after = lg_read(run);
        if (after.n == before.n) {
            lg_free(&before);
            lg_free(&after);
            continue;
        } /* picked a block not resident */
        cr_assert_eq(after.n, before.n + 1);
        const char *line = after.lines[after.n - 1];
        cr_assert(line_is(line, "class", "bitflip_cache") && line_is(line, "file", "data"), "%s", line);
        cr_assert_eq(jnum(line, "op"), round);
        int64_t block = jnum(line, "block"), bit = jnum(line, "bit");
        cr_assert(block >= 0 && (uint64_t)block < nb && res[block], "%s", line);
        size_t diffs = 0;
        for (uint64_t bl = 0; bl < nb; bl++) {
            if (!res[bl]) continue;
            size_t ps = 0;
            uint8_t *p = eng_debug_frame_bytes(db, bl, &ps);
            cr_assert_not_null(p);
            size_t byte = 0;
            uint8_t mask = 0;
            int bits = one_bit_diff(p, snap + bl * PS, PS, &byte, &mask);
            if (bits) {
                diffs++;
                cr_assert_eq(bl, (uint64_t)block, "block %llu changed, the ledger says %lld", (unsigned long long)bl,
                             (long long)block);
                cr_assert_eq(bits, 1);
                cr_assert_eq(byte, (size_t)bit / 8);
                cr_assert_eq(mask, jmask(line));
                /* A used byte: header, slot array or cells. */
                uint16_t lower = ph_get_lower(snap + bl * PS), upper = ph_get_upper(snap + bl * PS);
                uint8_t type = ph_get_type(snap + bl * PS);
                if (type == PAGE_LEAF || type == PAGE_INTERNAL)
                    cr_assert(byte < lower || byte >= upper, "flip at %zu, in the free gap [%u, %u)", byte, lower,
                              upper);
                /* Put it back: the next round starts from a clean cache. */
                p[byte] ^= mask;
            }
            eng_debug_frame_release(db, bl);
        }
        cr_assert_eq(diffs, 1, "%zu frames changed", diffs);
        flips++;
        lg_free(&before);
        lg_free(&after);
    }
    cr_assert(flips > 0);
    free(snap);
    free(res);
    tu_close(db);
    check_counts(f, run);
    flt_close(f);
}

Test(faults, page_flip_is_one_bit_on_disk_and_detected, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 400);
    char p[4096];
    size_t len0 = 0, len1 = 0;
    uint8_t *before = cu_read_file(tu_path(p, sizeof p, dir, "data"), &len0);
    flt_options fo = fopts(run, dir, 32);
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    flt_op(f, 7);
    flt_tick(f, NULL); /* no engine I/O seen: the page size comes from control */
    check_counts(f, run);
    flt_close(f);
    uint8_t *after = cu_read_file(p, &len1);
    cr_assert_eq(len0, len1);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1);
    const char *line = l.lines[0];
    cr_assert(line_is(line, "class", "bitflip_page") && line_is(line, "file", "data"), "%s", line);
    cr_assert_eq(jnum(line, "op"), 7);
    cr_assert_eq(jnum(line, "thread"), 0);
    int64_t block = jnum(line, "block"), bit = jnum(line, "bit");
    cr_assert_eq(jnum(line, "offset"), block * PS);
    cr_assert_eq(jnum(line, "len"), PS);
    size_t byte = 0;
    uint8_t mask = 0;
    cr_assert_eq(one_bit_diff(before, after, len0, &byte, &mask), 1);
    cr_assert_eq(byte, (size_t)(block * PS + bit / 8));
    cr_assert_eq(mask, jmask(line));
    /* The next read of that block fails its checksum. */
    static tu_reports reps;
    tu_reports_init(&reps);
    eng_options o = eopts(ENG_IO_PSYNC, NULL, &reps);
    uint64_t problems = 0;
    int rc = eng_verify_dir(dir, &o, tu_collect, &reps, &problems);
    char buf[2048];
    cr_assert_eq(rc, ENG_CORRUPTION, "verify: %s", eng_strerror(rc));
    cr_assert(tu_reports_has(&reps, ENG_LAYER_PAGE_CHECKSUM, "data", block), "no report for block %lld:\n%s",
              (long long)block, tu_reports_str(&reps, buf, sizeof buf));
    free(before);
    free(after);
    lg_free(&l);
}

Test(faults, wal_flip_is_one_bit_of_a_segment, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 33);
    fo.one_in[FLT_BITFLIP_WAL] = 1;
    flt_ctx *f = fopen_ok(&fo);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    eng_db *db = tu_open(dir, &o);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 100; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    cu_seglist segs;
    cu_list_segments(dir, "wal", &segs);
    cr_assert(segs.n > 0);
    uint8_t *copy[64] = {0};
    size_t lens[64] = {0};
    char p[4096];
    for (size_t i = 0; i < (size_t)segs.n && i < 64; i++)
        copy[i] = cu_read_file(cu_seg_path(p, sizeof p, dir, segs.start[i]), &lens[i]);
    flt_thread_start(f, 0);
    flt_op(f, 100);
    flt_tick(f, db);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1);
    const char *line = l.lines[0];
    cr_assert(line_is(line, "class", "bitflip_wal"), "%s", line);
    char file[64];
    cr_assert_not_null(jstr(line, "file", file, sizeof file));
    int64_t block = jnum(line, "block"), off = jnum(line, "offset"), bit = jnum(line, "bit");
    cr_assert_eq(off, block * 4096);
    size_t changed = 0;
    for (size_t i = 0; i < (size_t)segs.n && i < 64; i++) {
        size_t n = 0;
        uint8_t *now = cu_read_file(cu_seg_path(p, sizeof p, dir, segs.start[i]), &n);
        size_t byte = 0;
        uint8_t mask = 0;
        int bits = one_bit_diff(now, copy[i], n < lens[i] ? n : lens[i], &byte, &mask);
        if (bits) {
            char rel[64];
            snprintf(rel, sizeof rel, "wal/%016llx", (unsigned long long)segs.start[i]);
            cr_assert_str_eq(rel, file);
            cr_assert_eq(bits, 1);
            cr_assert_eq(byte, (size_t)(off + bit / 8));
            cr_assert_eq(mask, jmask(line));
            changed++;
        }
        free(now);
        free(copy[i]);
    }
    cr_assert_eq(changed, 1);
    flt_pause(f, 1);
    eng_close(db);
    check_counts(f, run);
    flt_close(f);
    lg_free(&l);
}
