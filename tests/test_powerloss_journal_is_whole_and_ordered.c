/*
 * test_powerloss_journal_is_whole_and_ordered.c -- the journal records only
 * operations it should, forgets them on reset, and stays whole and ordered
 * with 8 threads journaling at once.
 *
 * Part of the powerloss suite (once test_powerloss.c); the helpers it shares
 * with the other test_powerloss_*.c files are in powerloss_helpers.h.
 */
#include "powerloss_helpers.h"

/* ---- 7. the journal itself ------------------------------------------------------------------- */

/* Skipped operations (lost writes) leave nothing; paths outside the
 * database directory are not journaled; DONEs need their BEGINs. */
Test(powerloss, skipped_and_outside_operations_are_not_journaled, T_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "data", "0123456789", 10);
    fx_open_journal(&f);
    uint64_t js = size_of(f.run, "journal");
    eng_io_op op = {.kind = ENG_IO_WRITE, .path = dbp(&f, "data"), .buf = "xx", .offset = 0, .len = 2, .skip = 1};
    cr_assert_eq(flt_journal_before(f.j, &op), 0);
    flt_journal_after(f.j, &op);
    eng_io_op rd = {.kind = ENG_IO_READ, .path = dbp(&f, "data"), .buf = "xx", .offset = 0, .len = 2};
    cr_assert_eq(flt_journal_before(f.j, &rd), 0);
    flt_journal_after(f.j, &rd);
    char outside[256];
    snprintf(outside, sizeof outside, "%s/outside", f.root);
    int fd = open(outside, O_RDWR | O_CREAT, 0644);
    close(fd);
    eng_io_op ow = {.kind = ENG_IO_WRITE, .path = outside, .buf = "yy", .offset = 0, .len = 2};
    cr_assert_eq(flt_journal_before(f.j, &ow), 0);
    flt_journal_after(f.j, &ow);
    cr_assert_eq(size_of(f.run, "journal"), js, "skipped, read or outside operations were journaled");
    /* A path spelled differently (trailing slash, "./") is still inside. */
    char odd[300];
    snprintf(odd, sizeof odd, "%s/./data", f.db);
    eng_io_op w2 = {.kind = ENG_IO_WRITE, .path = odd, .buf = "zz", .offset = 4, .len = 2};
    cr_assert_eq(flt_journal_before(f.j, &w2), 0);
    fd = open(odd, O_WRONLY);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, "zz", 2, 4), 2);
    close(fd);
    w2.result = 2;
    flt_journal_after(f.j, &w2);
    cr_assert(size_of(f.run, "journal") > js);
    fx_close_journal(&f);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "2", "--variants", "8", "--out-prefix", prefix, NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    int undone = 0;
    for (int v = 0; v < 8; v++) {
        char dir[256], got[64];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        int u = ledger_has(&L, v, "powerloss/rollback", "data");
        read_str(dir, "data", got, sizeof got);
        cr_assert_str_eq(got, u ? "0123456789" : "0123zz6789", "variant %d", v);
        undone += u;
    }
    cr_assert(undone > 0 && undone < 8, "the one unsynced write was undone in %d of 8 variants", undone);
    for (size_t i = 0; i < L.n; i++)
        cr_assert(!strcmp(L.r[i].file, "data") && L.r[i].off == 4 && L.r[i].len == 2, "unexpected ledger line on %s",
                  L.r[i].file);
    free(L.r);
}

/* Reset forgets everything: a power-loss run after it changes nothing. */
Test(powerloss, reset_forgets_the_journal, T_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "data", "0123456789", 10);
    put_file(&f, "gone", "G", 1);
    fx_open_journal(&f);
    j_write(&f, "data", 0, "ab", 2);
    j_unlink(&f, "gone");
    cr_assert_eq(flt_journal_reset(f.j), 0);
    j_write(&f, "data", 2, "cd", 2);
    j_sync(&f, "data");
    fx_close_journal(&f);
    char jd[256];
    snprintf(jd, sizeof jd, "%s/journal.d", f.run);
    DIR *dh = opendir(jd);
    cr_assert(dh != NULL);
    for (struct dirent *e; (e = readdir(dh)) != NULL;)
        cr_assert(e->d_name[0] == '.', "journal.d still holds %s after reset", e->d_name);
    closedir(dh);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--mode", "mixed", NULL));
    char got[64];
    read_str(f.db, "data", got, sizeof got);
    cr_assert_str_eq(got, "abcd456789");
    read_str(f.db, "gone", got, sizeof got);
    cr_assert_str_eq(got, "<missing>");
    cr_assert(strstr(pl_out(&f), " 1 writes journaled, 0 unsynced") != NULL, "%s", pl_out(&f));
}

/* Threads journal at once: every record arrives whole, DONEs find their
 * BEGINs, and what a thread synced itself is never rolled back. */
#define CT_THREADS 8
#define CT_PAGES   24
#define CT_PG      1024
typedef struct ct_arg {
    fx *f;
    int t;
} ct_arg;

static uint8_t ct_page(int t, int p) { return (uint8_t)(1 + t * CT_PAGES + p); }

static void *ct_main(void *a_) {
    ct_arg *a = a_;
    const char *path = dbp(a->f, "data");
    int fd = open(path, O_RDWR);
    uint8_t buf[CT_PG];
    for (int p = 0; p < CT_PAGES; p++) {
        memset(buf, ct_page(a->t, p), sizeof buf);
        eng_io_op op = {.kind = ENG_IO_WRITE,
                        .path = path,
                        .buf = buf,
                        .len = sizeof buf,
                        .offset = (uint64_t)(a->t * CT_PAGES + p) * sizeof buf};
        if (fd < 0 || flt_journal_before(a->f->j, &op) != 0) return (void *)1;
        op.result = pwrite(fd, buf, sizeof buf, (off_t)op.offset);
        flt_journal_after(a->f->j, &op);
        if (p == CT_PAGES / 2 - 1) {
            eng_io_op so = {.kind = ENG_IO_SYNC, .path = path};
            if (flt_journal_before(a->f->j, &so) != 0) return (void *)1;
            so.result = fsync(fd) == 0 ? 0 : -errno;
            flt_journal_after(a->f->j, &so);
        }
    }
    close(fd);
    return NULL;
}

Test(powerloss, concurrent_journaling_is_whole_and_ordered, T_OPTS) {
    fx f;
    fx_init(&f);
    static uint8_t zero[CT_THREADS * CT_PAGES * CT_PG];
    put_file(&f, "data", zero, sizeof zero);
    fx_open_journal(&f);
    pthread_t th[CT_THREADS];
    ct_arg args[CT_THREADS];
    for (int t = 0; t < CT_THREADS; t++) {
        args[t] = (ct_arg){&f, t};
        cr_assert_eq(pthread_create(&th[t], NULL, ct_main, &args[t]), 0);
    }
    for (int t = 0; t < CT_THREADS; t++) {
        void *rv;
        pthread_join(th[t], &rv);
        cr_assert(rv == NULL, "thread %d failed", t);
    }
    fx_close_journal(&f);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "8", "--variants", "3", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    char want[64];
    snprintf(want, sizeof want, " %d writes journaled", CT_THREADS * CT_PAGES);
    cr_assert(strstr(pl_out(&f), want) != NULL, "%s", pl_out(&f));
    cr_assert(strstr(pl_out(&f), "torn tail") == NULL, "%s", pl_out(&f));
    lrecs L = {0};
    ledger_load(&f, &L);
    static uint8_t got[FMAX];
    int rolled = 0;
    for (int v = 0; v < 3; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        cr_assert_eq(read_in(dir, "data", got), (ssize_t)sizeof zero);
        int old = 0, lines = 0;
        for (int t = 0; t < CT_THREADS; t++)
            for (int p = 0; p < CT_PAGES; p++) {
                const uint8_t *pg = got + (size_t)(t * CT_PAGES + p) * CT_PG;
                uint8_t c = pg[0];
                cr_assert(c == 0 || c == ct_page(t, p), "variant %d: thread %d page %d holds 0x%02x", v, t, p, c);
                for (int x = 1; x < CT_PG; x++) cr_assert_eq(pg[x], c, "variant %d: page mixes bytes", v);
                cr_assert(c != 0 || p >= CT_PAGES / 2, "variant %d: thread %d's synced page %d rolled back", v, t, p);
                old += c == 0;
            }
        for (size_t i = 0; i < L.n; i++) lines += L.r[i].variant == v;
        cr_assert_eq(old, lines, "variant %d: %d pages old, %d ledger lines", v, old, lines);
        rolled += old;
    }
    cr_assert(rolled > 0);
    free(L.r);
}
