/*
 * test_recovery_damaged_log_reported_or_trimmed.c -- a damaged record with
 * synced log behind it fails the open and changes nothing (C, W3); a torn
 * log tail is trimmed and nothing synced before it is lost.
 *
 * Part of the recovery suite (once test_recovery.c); the helpers it shares
 * with the other test_recovery_*.c files are in recovery_helpers.h.
 */
#include "recovery_helpers.h"

/* ========================================================================= */
/* 3. A damaged record with synced log behind it fails the open.            */
/* ========================================================================= */

typedef struct log_child_out {
    uint64_t n;         /* puts acknowledged */
    uint64_t end[4096]; /* wal_insert_lsn after put i (the first 4096) */
} log_child_out;

/* Child: commit-sync puts with no checkpoint until the log reaches
 * UNTIL_LSN (or N_MAX puts), reporting each put's end LSN; die. */
static void child_log_load(const char *dir, int backend, uint64_t until_lsn, uint64_t n_max, int fd) {
    eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    eng_stats st;
    for (uint64_t i = 0; i < n_max; i++) {
        if ((rc = put_plain(db, i, NULL))) child_fail(fd, 2, rc);
        eng_get_stats(db, &st);
        child_send(fd, MSG_ACK, 0, st.wal_insert_lsn);
        if (st.wal_durable_lsn < st.wal_insert_lsn) child_fail(fd, 3, ENG_INVALID);
        if (st.wal_insert_lsn >= until_lsn) break;
    }
    _exit(CU_EXIT_DONE);
}

static void run_log_child(const char *dir, int backend, uint64_t until_lsn, uint64_t n_max, log_child_out *out) {
    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) child_log_load(dir, backend, until_lsn, n_max, fd);
    static msg msgs[8192];
    size_t n;
    int st = child_collect(pid, fd, msgs, 8192, &n);
    cr_assert(n <= 8192);
    assert_no_child_fail(msgs, n, "log child");
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "log child: %s", cu_status_str(st, sb, sizeof sb));
    out->n = n;
    for (size_t i = 0; i < n && i < 4096; i++) out->end[i] = msgs[i].v;
}

/* Bytes of every segment file, to prove a failed open changed nothing. */
static void snapshot_wal(const char *dir, cu_wal *w) { cu_wal_load(dir, SEG, w); }

static void assert_wal_unchanged(const char *dir, const cu_wal *before, const char *what) {
    cu_wal now;
    cu_wal_load(dir, SEG, &now);
    cr_assert_eq(now.l.n, before->l.n, "%s: the failed open changed the set of segments (%d -> %d)", what, before->l.n,
                 now.l.n);
    for (int i = 0; i < now.l.n; i++) {
        cr_assert(now.l.start[i] == before->l.start[i] && now.l.size[i] == before->l.size[i] &&
                      memcmp(now.data[i], before->data[i], now.l.size[i]) == 0,
                  "%s: the failed open changed segment %016llx", what, (unsigned long long)now.l.start[i]);
    }
    cu_wal_free(&now);
}

enum { FLIP_PAYLOAD, FLIP_REC_HEADER, FLIP_BLOCK_HEADER, FLIP_KINDS };

TU_BACKEND_TEST_FN(recovery, corrupted_record_in_synced_middle_is_reported, T_OPTS) {
    const char *crashed = tu_tmpdir(), *work = tu_tmpdir();
    static log_child_out lo;
    run_log_child(crashed, backend, 4 * SEG + SEG / 2, 100000, &lo);
    cu_seglist segs;
    cu_list_segments(crashed, "wal", &segs);
    cr_assert(segs.n >= 5 && cu_seglist_has(&segs, SEG) && cu_seglist_has(&segs, 3 * SEG),
              "fixture: %d segments after %llu puts", segs.n, (unsigned long long)lo.n);
    tu_rng rng = {cu_seed(0x300 + (uint64_t)backend)};

    for (int kind = 0; kind < FLIP_KINDS; kind++) {
        /* A record starting in a block of segment 1 (segments 2..4 follow,
         * all synced): its payload, its header, or its block's header. */
        tu_copy_dir(crashed, work);
        cu_wal w;
        cu_wal_load(work, SEG, &w);
        uint64_t blk = SEG + CU_WBLK * tu_range(&rng, 1, SEG / CU_WBLK - 10), pos = 0;
        int found = 0;
        for (int tries = 0; tries < 8; tries++, blk += CU_WBLK)
            if ((found = cu_wal_first_in_block(&w, blk, &pos))) break;
        cr_assert(found,
                  "fixture: no record found in segment 1 near block %llu: the log is not laid out as "
                  "wal.h draws it",
                  (unsigned long long)blk);
        uint32_t len = 0;
        int type = 0;
        cu_wal_rec_at(&w, pos, &len, &type);
        uint64_t target;
        const char *what_kind;
        if (kind == FLIP_PAYLOAD) {
            /* A payload byte inside the same block. */
            uint64_t room = CU_WBLK - pos % CU_WBLK;
            uint64_t plen = len - CU_WHDR;
            if (plen == 0 || room <= CU_WHDR)
                target = pos + (room > 24 ? 24 : 0); /* its checksum instead */
            else                                     /* record byte 32 + k, wherever the trailers put it */
                target = cu_wal_skip(
                    cu_wal_advance(pos, CU_WHDR + tu_below(&rng, plen < room - CU_WHDR ? plen : room - CU_WHDR)));
            what_kind = "payload byte";
        } else if (kind == FLIP_REC_HEADER) {
            target = pos + 1; /* xl_len: the framing */
            what_kind = "record length";
        } else {
            target = blk + 3; /* wb_lsn of the record's block */
            what_kind = "block header";
        }
        cu_wal_free(&w);
        char seg[4200], what[256];
        cu_seg_path(seg, sizeof seg, work, target & ~(uint64_t)(SEG - 1));
        uint64_t off = target & (SEG - 1);
        uint8_t mask = (uint8_t)(1u << tu_below(&rng, 8));
        snprintf(what, sizeof what, "%s: %s flipped at LSN %llu (record at %llu, type %d, len %u, mask 0x%02x)",
                 tu_backend_name(backend), what_kind, (unsigned long long)target, (unsigned long long)pos, type, len,
                 mask);
        cu_flip_byte(seg, off, mask);
        cu_wal before;
        snapshot_wal(work, &before);

        tu_reports rep;
        tu_reports_init(&rep);
        eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(work, &o, &db);
        if (rc == ENG_OK) {
            eng_recovery_info ri;
            eng_get_recovery_info(db, &ri);
            uint64_t present = 0;
            eng_buf b = {0};
            char kb[CU_KLEN + 1];
            for (uint64_t i = 0; i < lo.n; i++) present += eng_get(db, kb, cu_key(kb, i), &b) == ENG_OK;
            eng_buf_free(&b);
            eng_close(db);
            cr_assert_fail("%s: open succeeded (trimmed=%d, recovered_seq %llu, %llu of %llu keys present): "
                           "the synced log was cut silently",
                           what, ri.trimmed, (unsigned long long)ri.recovered_seq, (unsigned long long)present,
                           (unsigned long long)lo.n);
        }
        char buf[2048];
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: open returned %s", what, eng_strerror(rc));
        cr_assert(tu_reports_has(&rep, ENG_LAYER_WAL, NULL, -1), "%s: no wal_record report:\n%s", what,
                  tu_reports_str(&rep, buf, sizeof buf));
        assert_wal_unchanged(work, &before, what);
        cu_wal_free(&before);

        /* Undo the flip: nothing was lost by the failed open. */
        cu_flip_byte(seg, off, mask);
        eng_recovery_info ri;
        uint64_t m = reopen_check(work, &o, val_plain, NULL, &ri, what);
        cr_assert_eq(m, lo.n, "%s: after undoing the flip %llu of %llu keys", what, (unsigned long long)m,
                     (unsigned long long)lo.n);
    }
}

/* ========================================================================= */
/* 4. A torn log tail is trimmed; nothing synced before it is lost.          */
/* ========================================================================= */

enum { TAIL_ZERO, TAIL_GARBAGE, TAIL_TRUNCATE, TAIL_KINDS };

TU_BACKEND_TEST_FN(recovery, torn_tail_is_trimmed, T_OPTS) {
    const char *crashed = tu_tmpdir(), *work = tu_tmpdir();
    static log_child_out lo;
    run_log_child(crashed, backend, 2 * SEG + SEG / 3, 4000, &lo);
    cr_assert(lo.n >= 10 && lo.n <= 4096);
    uint64_t n = lo.n, e_last = lo.end[n - 1], e_prev = lo.end[n - 2];
    tu_rng rng = {cu_seed(0x400 + (uint64_t)backend)};

    /* The records of the last put: its batch record and what follows. */
    cu_wal w;
    cu_wal_load(crashed, SEG, &w);
    uint64_t last_start = cu_wal_next_start(e_prev);
    uint32_t len;
    int type;
    cr_assert(cu_wal_rec_at(&w, last_start, &len, &type),
              "fixture: no record at LSN %llu, where the last put's first record should start",
              (unsigned long long)last_start);
    uint64_t p = last_start, nrec = 0, last_rec = last_start;
    while (p < e_last) {
        cr_assert(cu_wal_rec_at(&w, p, &len, &type), "fixture: no record at LSN %llu (walking to %llu)",
                  (unsigned long long)p, (unsigned long long)e_last);
        last_rec = p;
        uint64_t end = cu_wal_advance(p, len);
        nrec++;
        if (end >= e_last) {
            cr_assert_eq(end, e_last, "fixture: the last record ends at %llu, the log at %llu", (unsigned long long)end,
                         (unsigned long long)e_last);
            break;
        }
        p = cu_wal_next_start(end);
    }
    /* A cut in the middle of the last record, before its last nonzero
     * byte (a cut that removes only zero bytes removes nothing: the reader
     * reads a short block as zero-filled). */
    uint64_t cut = last_rec + (e_last - last_rec) / 2;
    while (cut > last_rec + 1) {
        int nz = 0;
        for (uint64_t x = cut; x < e_last && !nz; x++) nz = cu_wal_byte(&w, x) > 0;
        if (nz) break;
        cut--;
    }
    cu_wal_free(&w);
    cr_assert(nrec >= 1);

    for (int kind = 0; kind < TAIL_KINDS; kind++) {
        tu_copy_dir(crashed, work);
        /* Damage [d, e_last): from inside the last put's records (only
         * bytes a crash during its fsync could tear) to the end.  Damage
         * reaching into an earlier put's records would hit bytes that the
         * last block's witness (wb_durable) declares durable: by W3 that is
         * corruption, not a torn tail, so "the last 512 bytes" start no
         * earlier than the last put's first record. */
        uint64_t d;
        if (kind == TAIL_TRUNCATE) {
            d = cut; /* inside the last record */
        } else {
            d = e_last > 512 ? e_last - 512 : 0;
            if (d <= last_start + 8) d = last_start + 16; /* inside the batch record's header */
        }
        char what[256];
        snprintf(what, sizeof what, "%s: %s from LSN %llu to the end %llu (last put's records from %llu)",
                 tu_backend_name(backend),
                 kind == TAIL_TRUNCATE ? "truncated"
                 : kind == TAIL_ZERO   ? "zeroed"
                                       : "garbage",
                 (unsigned long long)d, (unsigned long long)e_last, (unsigned long long)last_start);
        char seg[4200];
        uint64_t s0 = d & ~(uint64_t)(SEG - 1);
        if (kind == TAIL_TRUNCATE) {
            cr_assert(truncate(cu_seg_path(seg, sizeof seg, work, s0), (off_t)(d - s0)) == 0, "truncate: %s",
                      strerror(errno));
        } else {
            for (uint64_t x = d; x < e_last; x++) {
                uint8_t c = kind == TAIL_ZERO ? 0 : (uint8_t)tu_next(&rng);
                uint64_t s = x & ~(uint64_t)(SEG - 1);
                cu_pwrite_file(cu_seg_path(seg, sizeof seg, work, s), &c, 1, x - s);
            }
            /* A tear leaves whole sectors, each from some write and so
             * passing its own check (wal.h W3): give every sector the
             * damage touched the check of what it now holds (a sector
             * wholly zero stays zero: "never written").  Without that it
             * would be damage, which W3 reports. */
            for (uint64_t x = d & ~(uint64_t)(WAL_SECTOR - 1); x < e_last; x += WAL_SECTOR) {
                uint64_t s = x & ~(uint64_t)(SEG - 1);
                uint8_t sec[WAL_SECTOR];
                cu_seg_path(seg, sizeof seg, work, s);
                int fd = open(seg, O_RDWR);
                cr_assert(fd >= 0 && pread(fd, sec, WAL_SECTOR, (off_t)(x - s)) == WAL_SECTOR, "%s: %s", seg,
                          strerror(errno));
                if (!all_zero(sec, WAL_SECTOR - WAL_SECTOR_TRAILER))
                    wal_sector_seal(sec);
                else
                    memset(sec, 0, WAL_SECTOR);
                cr_assert(pwrite(fd, sec, WAL_SECTOR, (off_t)(x - s)) == WAL_SECTOR);
                close(fd);
            }
        }
        eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
        eng_recovery_info ri;
        uint64_t m = reopen_check(work, &o, val_plain, NULL, &ri, what);
        cr_assert(m >= n - 1 && m <= n, "%s: %llu keys after recovery, %llu acknowledged", what, (unsigned long long)m,
                  (unsigned long long)n);
        cr_assert(ri.end_lsn <= d, "%s: the log was said to end at %llu, past the damage at %llu", what,
                  (unsigned long long)ri.end_lsn, (unsigned long long)d);
        cr_assert_eq(ri.trimmed, 1, "%s: recovery_info.trimmed = %d", what, ri.trimmed);

        /* The log goes on after the trim: more puts, a clean close, and a
         * reopen that sees them all. */
        eng_db *db = tu_open(work, &o);
        for (uint64_t i = m; i < m + 300; i++)
            cr_assert_eq(put_plain(db, i, NULL), ENG_OK, "%s: put %llu", what, (unsigned long long)i);
        tu_close(db);
        uint64_t m2 = reopen_check(work, &o, val_plain, NULL, &ri, what);
        cr_assert_eq(m2, m + 300, "%s: after the trim and 300 more puts, %llu keys", what, (unsigned long long)m2);
    }
}
