/*
 * test_scan_history_needs_one_point_of_history.c -- stress/scan_history.h:
 * a scan's keys that one write each changed during it must be explained by
 * one point of history (every write seen older than every write missed);
 * keys whose write is not known exactly constrain nothing.
 */
#include <criterion/criterion.h>

#include "stress/scan_history.c"

/* Key K changed once during the scan, by the write of SEQ from OLD to NEW,
 * and the scan returned SEEN. */
static st_scan_key changed(uint64_t k, uint32_t old, uint32_t new, uint64_t seq, uint32_t seen) {
    return (st_scan_key){k, seen, {old, 0}, {new, 0}, 1, seq};
}

Test(scan_history, writes_seen_older_than_writes_missed_are_one_point) {
    st_scan_key k[3] = {changed(1, 10, 11, 5, 11), changed(2, 20, 21, 9, 20), changed(3, 30, 31, 7, 31)};
    size_t a, b;
    cr_assert_not(st_scan_history_broken(k, 3, &a, &b));
}

Test(scan_history, a_write_seen_newer_than_one_missed_is_no_point) {
    st_scan_key k[3] = {changed(1, 10, 11, 5, 10), changed(2, 20, 21, 9, 21), changed(3, 30, 31, 7, 31)};
    size_t a, b;
    cr_assert(st_scan_history_broken(k, 3, &a, &b));
    cr_assert_eq(a, 1, "the newest write seen is key 2's");
    cr_assert_eq(b, 0, "the oldest write missed is key 1's");
}

Test(scan_history, half_a_batch_is_no_point) {
    /* One batch, one sequence: one key new, the other old. */
    st_scan_key k[2] = {changed(4, 1, 2, 8, 2), changed(5, 3, 4, 8, 3)};
    size_t a, b;
    cr_assert(st_scan_history_broken(k, 2, &a, &b));
}

Test(scan_history, deletes_count_as_values_absent_is_zero) {
    st_scan_key k[2] = {changed(1, 10, 0, 6, 0), changed(2, 0, 21, 4, 0)};
    size_t a, b;
    cr_assert(st_scan_history_broken(k, 2, &a, &b), "the delete of 6 seen, the insert of 4 missed");
}

Test(scan_history, keys_not_known_exactly_constrain_nothing) {
    st_scan_key k[4] = {changed(1, 10, 11, 5, 10), changed(2, 20, 21, 9, 21), changed(3, 30, 31, 7, 31),
                        changed(6, 60, 61, 3, 62)};
    k[0].writes = 2;     /* two writes in its stripe: which one is unknown */
    k[1].b.pending = 22; /* a write still in flight */
    k[3].seen = 62;      /* neither value: the per-key check's */
    size_t a, b;
    cr_assert_not(st_scan_history_broken(k, 4, &a, &b));
    k[0].writes = 1;
    k[1].b.pending = 0;
    cr_assert(st_scan_history_broken(k, 4, &a, &b));
}
