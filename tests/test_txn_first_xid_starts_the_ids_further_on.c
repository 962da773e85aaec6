/*
 * test_txn_first_xid_starts_the_ids_further_on.c -- eng_options.first_xid
 * (creation time) makes a database whose first transaction id is that
 * one, and nothing else changes: a database that starts further on shows
 * in a few commits what a long history would (a shrinker puts the ids
 * there instead of the commits that took them there: crashtest K28).
 *
 * Claims, numbered for the tests below:
 *   I  the first commit of a new database gets id first_xid, the next ones
 *      the ids after it; a clean reopen goes on from the last one, and a
 *      first_xid given to an open of an existing database changes nothing.
 *   L  a crash moves the ids past the lease taken from first_xid (ids are
 *      never reused, T1), and every commit acknowledged before it is kept.
 *   P  commits whose ids cross into the commit log's second page, or
 *      start there (the first page then created empty), are read back
 *      after a reopen and a crash, and the engine's verify finds nothing.
 *   B  a first_xid of 0 or above ENG_FIRST_XID_MAX is refused with
 *      ENG_INVALID and creates nothing; ENG_FIRST_XID_MAX is accepted.
 *
 * Tests:
 *   ids_start_at_first_xid_and_go_on_after_a_clean_reopen        I
 *   a_crash_moves_the_ids_past_the_lease_and_keeps_the_commits   L
 *   commits_across_a_commit_log_page_read_back_and_verify        P
 *   commits_starting_on_the_second_commit_log_page_verify        P
 *   bad_first_xid_is_refused_and_creates_nothing                 B
 */
#include "crashutil.h"

#define T_OPTS .timeout = 120, .fini = cu_fini
#define PS     4096u

static eng_options opts_with(uint64_t first) {
    eng_options o = tu_opts(ENG_IO_PSYNC, PS, 64, NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    o.first_xid = first;
    return o;
}

static uint64_t put_i(eng_db *db, uint64_t i) {
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    size_t kl = cu_key(k, i), vl = cu_val(v, i, 1, 0, 0);
    uint64_t seq = 0;
    int rc = eng_put(db, k, kl, v, vl, &seq);
    cr_assert_eq(rc, ENG_OK, "put %llu: %s", (unsigned long long)i, eng_strerror(rc));
    return seq;
}

static void expect_i(eng_db *db, uint64_t i) {
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    size_t kl = cu_key(k, i), vl = cu_val(v, i, 1, 0, 0);
    eng_buf b = {0};
    int rc = eng_get(db, k, kl, &b);
    cr_assert_eq(rc, ENG_OK, "get %llu: %s", (unsigned long long)i, eng_strerror(rc));
    cr_assert(tu_bytes_eq(b.data, b.len, v, vl), "key %llu: wrong value", (unsigned long long)i);
    eng_buf_free(&b);
}

/* N commits from a child that exits without closing (a crash: each commit
 * was fsynced, nothing else was done). */
static void commits_then_crash(const char *dir, uint64_t first, uint64_t from, uint64_t n) {
    pid_t pid = cu_fork();
    if (pid == 0) {
        eng_options o = opts_with(first);
        eng_db *db = NULL;
        if (eng_open(dir, &o, &db) != ENG_OK) _exit(3);
        for (uint64_t i = from; i < from + n; i++) {
            char k[CU_KLEN + 1];
            uint8_t v[CU_VMAX];
            size_t kl = cu_key(k, i), vl = cu_val(v, i, 1, 0, 0);
            if (eng_put(db, k, kl, v, vl, NULL) != ENG_OK) _exit(4);
        }
        _exit(0);
    }
    cr_assert_eq(cu_wait(pid), 0, "the child's commits failed");
}

Test(first_xid, ids_start_at_first_xid_and_go_on_after_a_clean_reopen, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = opts_with(5000);
    eng_db *db = tu_open(dir, &o);
    cr_assert_eq(put_i(db, 0), 5000);
    cr_assert_eq(put_i(db, 1), 5001);
    cr_assert_eq(eng_last_seq(db), 5001);
    tu_close(db);
    o.first_xid = 77; /* creation time: ignored by an open of an existing database */
    db = tu_open(dir, &o);
    cr_assert_eq(put_i(db, 2), 5002);
    for (uint64_t i = 0; i < 3; i++) expect_i(db, i);
    cu_verify_clean(db, "after a clean reopen");
    tu_close(db);
}

Test(first_xid, a_crash_moves_the_ids_past_the_lease_and_keeps_the_commits, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = opts_with(5000);
    tu_close(tu_open(dir, &o));
    commits_then_crash(dir, 5000, 0, 3); /* ids 5000..5002 */
    eng_db *db = tu_open(dir, &o);
    for (uint64_t i = 0; i < 3; i++) expect_i(db, i);
    uint64_t s = put_i(db, 3);
    cr_assert_geq(s, 5000 + 1024, "id %llu after the crash: inside the lease taken from 5000", (unsigned long long)s);
    cu_verify_clean(db, "after a crash");
    tu_close(db);
}

/* Commits from FIRST on: N of them in the child that crashes, then the
 * same number again after a clean reopen; every value read back and the
 * verify clean after each. */
static void commits_from(uint64_t first, uint64_t n) {
    const char *dir = tu_tmpdir_db();
    eng_options o = opts_with(first);
    eng_db *db = tu_open(dir, &o);
    for (uint64_t i = 0; i < n; i++) cr_assert_eq(put_i(db, i), first + i);
    tu_close(db);
    db = tu_open(dir, &o);
    for (uint64_t i = 0; i < n; i++) expect_i(db, i);
    cu_verify_clean(db, "after a clean reopen");
    tu_close(db);
    commits_then_crash(dir, first, n, n);
    db = tu_open(dir, &o);
    for (uint64_t i = 0; i < 2 * n; i++) expect_i(db, i);
    cu_verify_clean(db, "after a crash");
    tu_close(db);
}

Test(first_xid, commits_across_a_commit_log_page_read_back_and_verify, T_OPTS) {
    commits_from(CLOG_PER_PAGE(PS) - 5, 10);
}

Test(first_xid, commits_starting_on_the_second_commit_log_page_verify, T_OPTS) {
    commits_from(CLOG_PER_PAGE(PS) + 7, 10);
}

Test(first_xid, bad_first_xid_is_refused_and_creates_nothing, T_OPTS) {
    static const uint64_t bad[] = {0, ENG_FIRST_XID_MAX + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char dir[512];
        tu_path(dir, sizeof dir, tu_tmpdir(), "db");
        eng_options o = opts_with(bad[i]);
        eng_db *db = NULL;
        cr_assert_eq(eng_open(dir, &o, &db), ENG_INVALID, "first_xid %llu", (unsigned long long)bad[i]);
        cr_assert(db == NULL);
        cr_assert(!cu_exists(dir), "first_xid %llu: %s was created", (unsigned long long)bad[i], dir);
    }
    const char *dir = tu_tmpdir_db();
    eng_options o = opts_with(ENG_FIRST_XID_MAX);
    eng_db *db = tu_open(dir, &o);
    cr_assert_eq(put_i(db, 0), ENG_FIRST_XID_MAX);
    tu_close(db);
}
