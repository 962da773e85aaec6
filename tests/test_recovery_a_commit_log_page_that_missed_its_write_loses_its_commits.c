/*
 * test_recovery_a_commit_log_page_that_missed_its_write_loses_its_commits.c
 * -- what the oracle's rule V6b for a lost commit rests on (docs/oracle.md):
 * a commit's status lives in a commit-log page (txn.h), and once a
 * checkpoint moved the redo point past the commit's record, that page on
 * disk is the only witness.  When the checkpoint's write of it is
 * acknowledged but never lands (a lost write; a misdirected one leaves
 * the block the same way), the block keeps an older page whose checksum
 * is valid, and recovery finds those commits in progress: it ends before
 * them and their values are gone.  No check can tell (PostgreSQL's commit
 * log is no better placed), so the oracle counts such a loss undetectable
 * by design, and only after a write that missed a commit-log page.
 *
 * The same writes landing whole lose nothing (the control): the loss is
 * the missed page's, not the checkpoint's.
 */
#include "recovery_helpers.h"

#include "format.h"

#define NKEYS 40u

static struct {
    int armed;  /* drop every write of a commit-log page */
    int missed; /* writes dropped */
} H;

static int drop_clog_writes(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (H.armed && op->kind == ENG_IO_WRITE && op->file_id == 0 && op->len >= PH_TYPE_OFF + 1 &&
        ph_get_type(op->buf) == PAGE_CLOG) {
        op->skip = 1; /* acknowledged, not issued */
        H.missed++;
    }
    return 0;
}

static const eng_io_hooks hooks = {.before = drop_clog_writes};

/* Commit NKEYS keys (one synced commit each) and checkpoint: the
 * commit-log page is on disk.  Then NKEYS more, and a checkpoint with the
 * commit-log writes dropped when DROP; close.  Returns the last commit. */
static uint64_t load_and_checkpoint(const char *dir, int backend, int drop) {
    eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
    o.io_hooks = &hooks;
    eng_db *db = NULL;
    cr_assert_eq(eng_open(dir, &o, &db), ENG_OK);
    uint64_t seq = 0;
    for (uint64_t i = 0; i < NKEYS; i++) cr_assert_eq(put_plain(db, i, &seq), ENG_OK);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    for (uint64_t i = NKEYS; i < 2 * NKEYS; i++) cr_assert_eq(put_plain(db, i, &seq), ENG_OK);
    H.armed = drop;
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    cr_assert_eq(eng_close(db), ENG_OK);
    H.armed = 0;
    return seq;
}

static eng_recovery_info reopen(const char *dir, int backend) {
    eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    cr_assert_eq(rc, ENG_OK, "the database opens (nothing on disk fails a check): %d", rc);
    eng_recovery_info ri;
    eng_get_recovery_info(db, &ri);
    cr_assert_eq(eng_close(db), ENG_OK);
    return ri;
}

TU_BACKEND_TEST_FN(recovery, a_commit_log_page_written_whole_keeps_every_commit, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    H.missed = 0;
    uint64_t last = load_and_checkpoint(dir, backend, 0);
    eng_recovery_info ri = reopen(dir, backend);
    cr_assert_eq(ri.recovered_seq, last);
}

TU_BACKEND_TEST_FN(recovery, a_commit_log_page_that_missed_its_write_loses_its_commits, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    H.missed = 0;
    uint64_t last = load_and_checkpoint(dir, backend, 1);
    cr_assert_gt(H.missed, 0, "the checkpoint wrote a commit-log page");
    eng_recovery_info ri = reopen(dir, backend);
    cr_assert_lt(ri.recovered_seq, last,
                 "recovery ended at %llu of %llu: the old commit-log page no longer loses commits; "
                 "the oracle's V6b for lost commits (missed_status_page) explains too much",
                 (unsigned long long)ri.recovered_seq, (unsigned long long)last);
}
