/*
 * test_powerloss_write_completed_during_an_fsync_is_not_covered_by_it.c --
 * the power-loss journal's rule for what an fsync makes durable
 * (faults/powerloss.c, step 1; journal_read.c flt_jr_durability): the
 * writes whose DONE precedes the fsync's BEGIN, and only when the fsync
 * succeeded.
 *
 *     w1.B w1.D  S.B  w2.B w2.D  S.D(ok)       w1 synced, w2 not: the
 *                                             kernel may have written
 *                                             back w1's pages before w2
 *     w1.B w1.D  S.B  S.D(-EIO)               w1 not synced
 *
 * A journal reader that counts w2 as covered (the fsync's count taken at
 * its DONE) or a failed fsync as a successful one makes every later
 * power-loss state keep those writes: a recovery that loses them is never
 * tried.  Each case pins the writes to be rolled back (--pin, PL8: a pin
 * acts on unsynced writes only) and reads what the variant kept.
 */
#include "powerloss_helpers.h"

enum { PG = 4096 };

/* The fsync of NAME, its BEGIN now, into *OP: the journal knows an
 * operation in flight by its op's address, so sync_done gets the same. */
static void sync_begin(fx *f, const char *name, eng_io_op *op) {
    *op = (eng_io_op){.kind = ENG_IO_SYNC, .path = dbp(f, name)};
    cr_assert_eq(flt_journal_before(f->j, op), 0);
}

static void sync_done(fx *f, eng_io_op *op, int64_t result) {
    int fd = open(op->path, O_RDONLY);
    cr_assert(fd >= 0);
    cr_assert(fsync(fd) == 0);
    close(fd);
    op->result = result;
    flt_journal_after(f->j, op);
}

/* Run powerloss in keep mode with both writes pinned to roll back; the
 * variant's "data" into GOT, its ledger into L. */
static void pinned_rollbacks(fx *f, uint8_t *got, lrecs *L) {
    char prefix[200], dir[256];
    snprintf(prefix, sizeof prefix, "%s/v", f->root);
    snprintf(dir, sizeof dir, "%s0", prefix);
    pl_ok(f, run_pl(f, f->db, "--run-dir", f->run, "--seed", "11", "--variants", "1", "--mode", "keep", "--out-prefix",
                    prefix, "--pin", "data@0:0=rollback", "--pin", "data@4096:0=rollback", NULL));
    cr_assert_eq(read_in(dir, "data", got), 4 * PG);
    ledger_load(f, L);
}

Test(powerloss, a_write_completed_while_an_fsync_ran_is_not_covered_by_it, T_OPTS) {
    fx f;
    fx_init(&f);
    static uint8_t init[4 * PG], w1[PG], w2[PG], got[FMAX];
    tu_fill(init, sizeof init, 21);
    tu_fill(w1, sizeof w1, 22);
    tu_fill(w2, sizeof w2, 23);
    put_file(&f, "data", init, sizeof init);
    fx_open_journal(&f);
    j_write(&f, "data", 0, w1, PG);
    eng_io_op s;
    sync_begin(&f, "data", &s);
    j_write(&f, "data", PG, w2, PG); /* completes while the fsync runs */
    sync_done(&f, &s, 0);
    fx_close_journal(&f);

    lrecs L = {0};
    pinned_rollbacks(&f, got, &L);
    cr_assert(memcmp(got, w1, PG) == 0, "the write done before the fsync began was rolled back: it was synced");
    cr_assert(memcmp(got + PG, init + PG, PG) == 0,
              "the write completed while the fsync ran was kept against its pin: it was counted as synced");
    cr_assert_eq(L.n, 1, "%zu ledger lines, want the one rollback of the write the fsync did not cover", L.n);
    cr_assert_str_eq(L.r[0].point, "powerloss/rollback");
    cr_assert_eq(L.r[0].off, PG);
    free(L.r);
}

Test(powerloss, a_failed_fsync_covers_no_write, T_OPTS) {
    fx f;
    fx_init(&f);
    static uint8_t init[4 * PG], w1[PG], got[FMAX];
    tu_fill(init, sizeof init, 31);
    tu_fill(w1, sizeof w1, 32);
    put_file(&f, "data", init, sizeof init);
    fx_open_journal(&f);
    j_write(&f, "data", 0, w1, PG);
    eng_io_op s;
    sync_begin(&f, "data", &s);
    sync_done(&f, &s, -EIO); /* the kernel said the data may not be on disk */
    fx_close_journal(&f);

    lrecs L = {0};
    pinned_rollbacks(&f, got, &L);
    cr_assert(memcmp(got, init, PG) == 0,
              "the write before a failed fsync was kept against its pin: counted as synced");
    cr_assert_eq(L.n, 1, "%zu ledger lines, want the rollback of the write before the failed fsync", L.n);
    cr_assert_eq(L.r[0].off, 0);
    free(L.r);
}
