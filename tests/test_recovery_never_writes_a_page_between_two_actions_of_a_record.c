/*
 * test_recovery_never_writes_a_page_between_two_actions_of_a_record.c --
 * regression test for a bug the blackbox nightly found (2026-12-03, seed
 * 20261913, iteration 32147430668699: "lost (after reopening a failed
 * handle)", then structure reports of blocks allocated but unreachable).
 *
 * One operation is one WAL_REC_PAGES record, and it may change one page
 * twice with other pages between: a large value pops one block after
 * another from the same free-list trunk, each pop followed by the
 * overflow page it becomes.  Redo set the trunk's LSN to the record's end
 * at the first pop and let the frame go; with a small cache the frame was
 * written back (as a dirty neighbour of an evicted victim) before the
 * second pop.  If that recovery then ended before its checkpoint (an
 * fsync failing in wal_open, a crash), the next recovery found the trunk
 * "already at" the record's end and skipped every later pop: the free
 * list still offered blocks the overflow chains used, and the next
 * allocations overwrote live values.  Redo now holds every frame of a
 * record until its last action (recovery.h RC1).
 *
 * The test: free many overflow pages (large values, deleted, vacuumed),
 * checkpoint; a child writes new large values (each pops a run of blocks
 * from one trunk) and dies without closing; a second child recovers with
 * a cache of MIN_FRAMES..+7 pages and dies at the first write that is not
 * a data page (the new control file: redo is over, nothing is checkpointed
 * yet); the parent recovers again, then writes more large values (they
 * pop from whatever the free list says), and every value must read back
 * exactly and eng_verify must find nothing.  Before the fix the first
 * round failed on both backends (eng_verify: overflow blocks "referenced
 * twice", handed out again while a chain still used them).  And a first
 * fix that held every page of a record to its end failed the first round
 * too (the recovering child's open: ENG_BUSY, a chain longer than the
 * pool); the same fix made the catalogue's iterations with 128 KiB caches
 * fail to reopen.
 */
#include "recovery_helpers.h"

#define RW_PS      4096u
#define RW_KEYS    10
#define RW_ROUNDS  8
#define RW_BIGMAX  (96u << 10)
#define RW_OLD_GEN 1 /* the values deleted to fill the free list */

/* Value of big key I at generation GEN: 20-92 KiB (5-23 overflow pages
 * of 4 KiB: some records allocate more pages than the 16-frame pool of
 * the cut recovery holds, which redo must still replay), a pure function
 * of (I, GEN). */
static size_t big_val(uint8_t *buf, uint64_t i, uint32_t gen) {
    size_t len = (20u << 10) + (size_t)(rng_mix64(i * 31u + gen) % (72u << 10));
    uint32_t h[2] = {(uint32_t)i, gen};
    memcpy(buf, h, sizeof h);
    tu_fill(buf + sizeof h, len - sizeof h, rng_mix64(i * 1000003u + gen * 7919u));
    return len;
}

static eng_options rw_opts(int backend, size_t cache_pages) {
    eng_options o = base_opts(backend, ENG_SYNC_COMMIT, cache_pages * RW_PS, 0);
    o.page_size = RW_PS;
    o.full_page_writes = 0; /* no image would repair the trunk either way */
    return o;
}

static int put_big(eng_db *db, uint64_t i, uint32_t gen) {
    static uint8_t v[RW_BIGMAX];
    char k[CU_KLEN + 1];
    size_t kl = cu_key(k, i), vl = big_val(v, i, gen);
    return eng_put(db, k, kl, v, vl, NULL);
}

/* Every key FIRST..FIRST+N-1 holds its value of generation GEN. */
static void check_big(eng_db *db, uint64_t first, uint64_t n, uint32_t gen, const char *what) {
    static uint8_t want[RW_BIGMAX];
    for (uint64_t i = first; i < first + n; i++) {
        char k[CU_KLEN + 1];
        size_t kl = cu_key(k, i), wl = big_val(want, i, gen);
        eng_buf b = {0};
        int rc = eng_get(db, k, kl, &b);
        cr_assert_eq(rc, ENG_OK, "%s: key %llu: %s", what, (unsigned long long)i, eng_strerror(rc));
        cr_assert(tu_bytes_eq(b.data, b.len, want, wl), "%s: key %llu reads back %zu bytes, not its %zu-byte value",
                  what, (unsigned long long)i, b.len, wl);
        eng_buf_free(&b);
    }
}

/* The second child: die at the first write that is not a data page. */
typedef struct redo_hook {
    uint64_t data_writes;
    int fd;
} redo_hook;

static int die_after_redo(void *ctx, eng_io_op *op) {
    redo_hook *h = ctx;
    if (op->kind != ENG_IO_WRITE) return 0;
    const char *base = strrchr(op->path, '/');
    base = base ? base + 1 : op->path;
    if (strcmp(base, "data") == 0) {
        h->data_writes++;
        return 0;
    }
    child_send(h->fd, MSG_COUNT, 0, h->data_writes);
    _exit(CU_EXIT_HOOK);
}

TU_BACKEND_TEST_FN(recovery, a_recovery_cut_after_redo_leaves_no_page_half_way_through_a_record, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    uint64_t wrote_back = 0;
    for (int r = 0; r < RW_ROUNDS; r++) {
        size_t cache = 16 + (size_t)r; /* MIN_FRAMES (engine_open.c) and up */
        char what[200];
        snprintf(what, sizeof what, "%s round %d (recovery with a %zu-page cache)", tu_backend_name(backend), r, cache);
        /* A free list of overflow pages, checkpointed. */
        fresh_dir(dir);
        eng_options big = rw_opts(backend, 1024);
        eng_db *db = tu_open(dir, &big);
        for (uint64_t i = 0; i < 3 * RW_KEYS; i++) cr_assert_eq(put_big(db, 1000 + i, RW_OLD_GEN), ENG_OK);
        for (uint64_t i = 0; i < 3 * RW_KEYS; i++) {
            char k[CU_KLEN + 1];
            size_t kl = cu_key(k, 1000 + i);
            cr_assert_eq(eng_delete(db, k, kl, NULL), ENG_OK);
        }
        eng_vacuum_stats vs;
        cr_assert_eq(eng_vacuum(db, &vs), ENG_OK);
        cr_assert(vs.overflow_pages_freed >= 3 * RW_KEYS * 5, "%s: vacuum freed only %llu overflow pages", what,
                  (unsigned long long)vs.overflow_pages_freed);
        cr_assert_eq(eng_checkpoint(db), ENG_OK);
        tu_close(db);

        /* The first child: new large values, then a crash (no close, so
         * no checkpoint: the next open replays every pop). */
        pid_t pid = cu_fork();
        if (pid == 0) {
            eng_db *c = NULL;
            if (eng_open(dir, &big, &c)) _exit(CU_EXIT_FAIL);
            for (uint64_t i = 0; i < RW_KEYS; i++)
                if (put_big(c, i, 2)) _exit(CU_EXIT_FAIL);
            _exit(CU_EXIT_DONE);
        }
        char sb[64];
        int st = cu_wait(pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "%s: writer child %s", what,
                  cu_status_str(st, sb, sizeof sb));

        /* The second child: redo with a small cache, cut before the end. */
        int fd;
        pid = cu_fork_piped(&fd);
        if (pid == 0) {
            static redo_hook h;
            static eng_io_hooks hooks;
            h = (redo_hook){0, fd};
            hooks = (eng_io_hooks){&h, die_after_redo, NULL};
            eng_options small = rw_opts(backend, cache);
            small.io_hooks = &hooks;
            eng_db *c = NULL;
            int rc = eng_open(dir, &small, &c);
            child_fail(fd, 1, rc ? rc : ENG_INVALID); /* the hook should have ended it */
        }
        msg msgs[4];
        size_t n;
        st = child_collect(pid, fd, msgs, 4, &n);
        assert_no_child_fail(msgs, n < 4 ? n : 4, what);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "%s: recovering child %s", what,
                  cu_status_str(st, sb, sizeof sb));
        cr_assert(n >= 1 && msgs[0].tag == MSG_COUNT, "%s: the recovering child sent no count", what);
        wrote_back += msgs[0].v;

        /* The parent: recover again, then allocate from the free list. */
        tu_reports rep;
        tu_reports_init(&rep);
        eng_options o = rw_opts(backend, 1024);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        db = NULL;
        int rc = eng_open(dir, &o, &db);
        char buf[2048];
        cr_assert_eq(rc, ENG_OK, "%s: reopen: %s\n%s", what, eng_strerror(rc), tu_reports_str(&rep, buf, sizeof buf));
        check_big(db, 0, RW_KEYS, 2, what);
        cu_verify_clean(db, what);
        for (uint64_t i = 0; i < RW_KEYS; i++) cr_assert_eq(put_big(db, 100 + i, 3), ENG_OK);
        check_big(db, 0, RW_KEYS, 2, what);
        check_big(db, 100, RW_KEYS, 3, what);
        cu_verify_clean(db, what);
        tu_close(db);
    }
    /* The rounds only prove something if redo wrote pages back. */
    cr_assert(wrote_back >= RW_ROUNDS, "the cut recoveries wrote back only %llu data pages in all",
              (unsigned long long)wrote_back);
}
