/*
 * test_faults_a_damaged_meta_page_is_read_within_bounds.c -- the fault
 * library reads the data file's own bytes to place damage by the format
 * (block classes: the meta page's root and commit-log directory), and
 * those bytes may hold its own earlier flips.  A meta page whose
 * commit-log count says four billion must bound nothing but itself: a
 * blackbox run whose tick flipped that count crashed the stress driver
 * reading past its buffer (seed 20261215, iteration 136 of run 1).
 * Without the bound the read runs on until it finds 64 small numbers in
 * the stack or falls off it: the plain build may pass by luck, the
 * AddressSanitizer build (make test SANITIZER=address,undefined, as CI
 * runs it) fails at the first byte past the buffer.
 *
 * Part of the faults suite; helpers in faults_helpers.h.
 */
#include "faults_helpers.h"

Test(faults, a_meta_page_whose_commit_log_count_is_damaged_is_read_within_bounds, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 300);
    char path[4096];
    tu_path(path, sizeof path, dir, "data");
    int fd = open(path, O_WRONLY);
    cr_assert(fd >= 0);
    uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
    cr_assert_eq(pwrite(fd, huge, sizeof huge, META_OFF_CLOGN), (ssize_t)sizeof huge);
    close(fd);
    flt_options fo = fopts(run, dir, 9);
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    /* Every tick flips a page; a quarter of them pick the block by class,
     * reading the meta page first. */
    for (uint64_t op = 0; op < 200; op++) {
        flt_op(f, op);
        flt_tick(f, NULL);
    }
    flt_counts c;
    flt_get_counts(f, &c);
    cr_assert_eq(c.injected[FLT_BITFLIP_PAGE], 200, "%llu flips", (unsigned long long)c.injected[FLT_BITFLIP_PAGE]);
    flt_close(f);
}
