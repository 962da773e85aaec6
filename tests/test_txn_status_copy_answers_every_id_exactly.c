/*
 * test_txn_status_copy_answers_every_id_exactly.c -- the in-memory copy of
 * the commit log (engine/txn.c) answers each id with the status set for it,
 * whatever its neighbours:
 *   - statuses packed four to a byte: setting one never changes the three
 *     beside it, for every pattern of the four;
 *   - the committed prefix (ids answered without the table) stops at the
 *     first id that is aborted or never set (a skipped lease, a batch cut
 *     by a crash: T3), and moves on when a gap below it is filled with
 *     commits, never past an aborted id;
 *   - ids past the table's end and never-set ids read IN_PROGRESS; id 0
 *     (a frozen version) reads COMMITTED.
 */
#include <criterion/criterion.h>

#include "txn.h"

static txn_mgr *fresh(void) {
    txn_mgr *m = NULL;
    cr_assert_eq(txn_create(&m), ENG_OK);
    return m;
}

Test(txn_status, four_statuses_to_a_byte_never_disturb_each_other) {
    /* every pattern of 4 ids in {never set, committed, aborted}: 81 */
    txn_mgr *m = fresh();
    static const int vals[3] = {CLOG_IN_PROGRESS, CLOG_COMMITTED, CLOG_ABORTED};
    uint64_t base = 1000; /* 1000 = 4 * 250: a byte boundary */
    for (int pat = 0; pat < 81; pat++, base += 4) {
        int want[4];
        for (int k = 0, x = pat; k < 4; k++, x /= 3) want[k] = vals[x % 3];
        /* set in a scrambled order, so a write that clobbers a neighbour
         * set before it shows */
        static const int order[4] = {2, 0, 3, 1};
        for (int k = 0; k < 4; k++)
            if (want[order[k]] != CLOG_IN_PROGRESS) txn_set_status(m, base + (uint64_t)order[k], want[order[k]]);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(txn_status(m, base + (uint64_t)k), want[k], "pattern %d id %llu: %d, want %d", pat,
                         (unsigned long long)(base + (uint64_t)k), txn_status(m, base + (uint64_t)k), want[k]);
    }
    txn_destroy(m);
}

Test(txn_status, the_committed_prefix_stops_at_an_aborted_or_missing_id) {
    txn_mgr *m = fresh();
    cr_assert_eq(txn_status(m, 0), CLOG_COMMITTED);
    for (uint64_t x = 1; x <= 10; x++) txn_set_status(m, x, CLOG_COMMITTED);
    txn_set_status(m, 12, CLOG_COMMITTED); /* 11 skipped for now */
    txn_set_status(m, 13, CLOG_ABORTED);
    txn_set_status(m, 14, CLOG_COMMITTED);
    for (uint64_t x = 1; x <= 10; x++) cr_assert_eq(txn_status(m, x), CLOG_COMMITTED);
    cr_assert_eq(txn_status(m, 11), CLOG_IN_PROGRESS, "a never-set id below later commits is not committed");
    cr_assert_eq(txn_status(m, 12), CLOG_COMMITTED);
    cr_assert_eq(txn_status(m, 13), CLOG_ABORTED);
    cr_assert_eq(txn_status(m, 15), CLOG_IN_PROGRESS);
    /* the gap filled with a commit: 11 and 12 join the prefix; 13 stays
     * aborted and 14 committed, each from the table */
    txn_set_status(m, 11, CLOG_COMMITTED);
    cr_assert_eq(txn_status(m, 11), CLOG_COMMITTED);
    cr_assert_eq(txn_status(m, 13), CLOG_ABORTED, "the prefix must not run past an aborted id");
    cr_assert_eq(txn_status(m, 14), CLOG_COMMITTED);
    cr_assert_eq(txn_status(m, 15), CLOG_IN_PROGRESS);
    txn_destroy(m);
}

Test(txn_status, ids_past_the_table_and_across_chunks_read_right) {
    txn_mgr *m = fresh();
    uint64_t chunk = 1u << 16; /* txn.c's CHUNK: ids on both sides of a chunk edge */
    txn_set_status(m, chunk - 1, CLOG_ABORTED);
    txn_set_status(m, chunk, CLOG_COMMITTED);
    txn_set_status(m, chunk + 1, CLOG_ABORTED);
    cr_assert_eq(txn_status(m, chunk - 1), CLOG_ABORTED);
    cr_assert_eq(txn_status(m, chunk), CLOG_COMMITTED);
    cr_assert_eq(txn_status(m, chunk + 1), CLOG_ABORTED);
    cr_assert_eq(txn_status(m, chunk - 2), CLOG_IN_PROGRESS);
    cr_assert_eq(txn_status(m, 1), CLOG_IN_PROGRESS, "no prefix: id 1 was never set");
    cr_assert_eq(txn_status(m, UINT64_MAX / 2), CLOG_IN_PROGRESS);
    txn_destroy(m);
}
