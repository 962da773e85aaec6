/*
 * test_powerloss_tool_undoes_metadata_and_refuses_damage.c --
 * build/powerloss undoes unsynced creates, renames, unlinks and truncates
 * and keeps durable ones, applies in place and resets the journal (or
 * changes nothing in keep mode), refuses while the lock is held and on
 * usage errors, ignores a torn journal tail and refuses damage in its
 * middle.
 *
 * Part of the powerloss suite (once test_powerloss.c); the helpers it shares
 * with the other test_powerloss_*.c files are in powerloss_helpers.h.
 */
#include "powerloss_helpers.h"

/* ---- 3. metadata: unsynced creates, renames, unlinks, truncates undone; durable ones not ---- */

Test(powerloss, unsynced_metadata_undone_durable_kept, T_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "ctl", "OLDCTL", 6);
    put_file(&f, "old1", "OLD1", 4);
    put_file(&f, "old2", "OLD2", 4);
    static uint8_t tr[10000], tr2[5000];
    tu_fill(tr, sizeof tr, 5);
    tu_fill(tr2, sizeof tr2, 6);
    put_file(&f, "tr", tr, sizeof tr);
    put_file(&f, "tr2", tr2, sizeof tr2);
    fx_open_journal(&f);
    /* Durable: the unlink of old2 (dirsync of the top directory after it);
     * in wal/, a create and a rename, each followed by a dirsync of wal/. */
    j_unlink(&f, "old2");
    j_dirsync(&f, ".");
    j_create(&f, "wal/a");
    j_write(&f, "wal/a", 0, "SEGA", 4);
    j_sync(&f, "wal/a");
    j_dirsync(&f, "wal");
    j_rename(&f, "wal/a", "wal/b");
    j_dirsync(&f, "wal");
    j_truncate(&f, "tr2", 100);
    j_sync(&f, "tr2");
    /* Unsynced (no dirsync of the top directory after them). */
    j_create(&f, "new1");
    j_write(&f, "new1", 0, "N1", 2);
    j_sync(&f, "new1"); /* the data is synced, the name is not */
    j_create(&f, "tmp");
    j_write(&f, "tmp", 0, "NEWCTL", 6);
    j_sync(&f, "tmp");
    j_rename(&f, "tmp", "ctl");
    j_unlink(&f, "old1");
    j_truncate(&f, "tr", 3000);
    j_unlink(&f, "never-existed"); /* fails: nothing to undo */
    fx_close_journal(&f);

    /* J4: journal.d/ keeps only what a non-durable operation may need:
     * the replaced "ctl" and the unlinked "old1", not the durably
     * unlinked "old2". */
    char jd[256];
    snprintf(jd, sizeof jd, "%s/journal.d", f.run);
    DIR *dh = opendir(jd);
    cr_assert(dh != NULL);
    int nsaved = 0;
    for (struct dirent *e; (e = readdir(dh)) != NULL;) nsaved += e->d_name[0] != '.';
    closedir(dh);
    cr_assert_eq(nsaved, 2, "journal.d holds %d files, want 2 (ctl's old target, old1)", nsaved);

    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    const int K = 48;
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "777", "--variants", "48", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    int undone[5] = {0}, kept[5] = {0};
    for (int v = 0; v < K; v++) {
        char dir[256], s[64];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        /* S: durable operations are never undone. */
        for (size_t i = 0; i < L.n; i++) {
            if (L.r[i].variant != v) continue;
            cr_assert(strcmp(L.r[i].file, "old2") && strcmp(L.r[i].file, "wal/a") && strcmp(L.r[i].file, "wal/b") &&
                          strcmp(L.r[i].file, "tr2") && strcmp(L.r[i].file, "never-existed"),
                      "variant %d: durable or failed operation on %s undone (%s)", v, L.r[i].file, L.r[i].point);
            cr_assert(strncmp(L.r[i].point, "powerloss/undo_", 15) == 0, "variant %d: %s on %s (synced data)", v,
                      L.r[i].point, L.r[i].file);
        }
        read_str(dir, "old2", s, sizeof s);
        cr_assert_str_eq(s, "<missing>", "variant %d: old2", v);
        read_str(dir, "wal/b", s, sizeof s);
        cr_assert_str_eq(s, "SEGA", "variant %d: wal/b", v);
        read_str(dir, "wal/a", s, sizeof s);
        cr_assert_str_eq(s, "<missing>", "variant %d: wal/a", v);
        cr_assert_eq(size_of(dir, "tr2"), 100, "variant %d: tr2", v);

        /* new1 */
        int u = ledger_has(&L, v, "powerloss/undo_create", "new1");
        read_str(dir, "new1", s, sizeof s);
        cr_assert_str_eq(s, u ? "<missing>" : "N1", "variant %d: new1 (create %s)", v, u ? "undone" : "kept");
        undone[0] += u, kept[0] += !u;
        /* tmp -> ctl, and the create of tmp (kept whenever the rename is: PL4) */
        int ur = ledger_has(&L, v, "powerloss/undo_rename", "tmp");
        int uc = ledger_has(&L, v, "powerloss/undo_create", "tmp");
        cr_assert(ur || !uc, "variant %d: the create of tmp undone but its rename kept", v);
        read_str(dir, "ctl", s, sizeof s);
        cr_assert_str_eq(s, ur ? "OLDCTL" : "NEWCTL", "variant %d: ctl (rename %s)", v, ur ? "undone" : "kept");
        read_str(dir, "tmp", s, sizeof s);
        cr_assert_str_eq(s, ur && !uc ? "NEWCTL" : "<missing>", "variant %d: tmp", v);
        undone[1] += ur, kept[1] += !ur;
        undone[2] += uc;
        /* old1 */
        u = ledger_has(&L, v, "powerloss/undo_unlink", "old1");
        read_str(dir, "old1", s, sizeof s);
        cr_assert_str_eq(s, u ? "OLD1" : "<missing>", "variant %d: old1", v);
        undone[3] += u, kept[3] += !u;
        /* PL9: directory operations are lost as a suffix, in the order
         * they were made (create new1, create tmp, rename tmp, unlink old1). */
        int seq[4] = {ledger_has(&L, v, "powerloss/undo_create", "new1"), uc, ur, u};
        for (int i = 0; i < 3; i++)
            cr_assert(!seq[i] || seq[i + 1], "variant %d: directory operation %d undone under a kept later one", v, i);
        /* tr */
        u = ledger_has(&L, v, "powerloss/undo_truncate", "tr");
        static uint8_t got[FMAX];
        ssize_t gs = read_in(dir, "tr", got);
        cr_assert_eq(gs, u ? 10000 : 3000, "variant %d: tr is %zd bytes", v, gs);
        cr_assert(memcmp(got, tr, (size_t)gs) == 0, "variant %d: tr content", v);
        undone[4] += u, kept[4] += !u;
    }
    for (int i = 0; i < 5; i++)
        if (i != 2)
            cr_assert(undone[i] && kept[i], "D: operation %d: undone in %d, kept in %d of %d variants", i, undone[i],
                      kept[i], K);
    cr_assert(undone[2], "the create of tmp was never undone");
    free(L.r);
}

/* ---- 4. in place: the directory changes, the journal is reset ------------------------ */

/* A truncate through a descriptor of a file already unlinked (the door
 * journals such a call under the old name when it races with the unlink:
 * RocksDB truncating a WAL file its purge just removed) touches no file the
 * directory reaches: every state skips it, whatever the coins decide for
 * the unlink. */
Test(powerloss, a_truncate_through_an_unlinked_name_is_skipped_in_every_state, T_OPTS) {
    fx f;
    fx_init(&f);
    fx_open_journal(&f);
    j_create(&f, "w.log");
    char a[100];
    memset(a, 'a', sizeof a);
    j_write(&f, "w.log", 0, a, sizeof a);
    j_unlink(&f, "w.log");
    /* The race: the truncate's before() found the file (its stat ran
     * before the unlink), its record lands after the unlink's.  Played
     * here with a stand-in the journal does not see. */
    put_file(&f, "w.log", a, sizeof a);
    const char *p = dbp(&f, "w.log");
    int fd = open(p, O_RDWR);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op t = {.kind = ENG_IO_TRUNCATE, .path = p, .offset = 150};
    cr_assert_eq(flt_journal_before(f.j, &t), 0);
    t.result = ftruncate(fd, 150) == 0 ? 0 : -errno;
    flt_journal_after(f.j, &t);
    close(fd);
    cr_assert_eq(unlink(p), 0);
    fx_close_journal(&f);
    static const char *const modes[] = {"rollback", "tear", "mixed"};
    for (int m = 0; m < 3; m++) {
        for (int seed = 1; seed <= 8; seed++) {
            char s[16], prefix[300];
            snprintf(s, sizeof s, "%d", seed);
            snprintf(prefix, sizeof prefix, "%s.%s.", f.db, modes[m]);
            pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", s, "--mode", modes[m], "--variants", "1",
                             "--out-prefix", prefix, NULL));
            /* Restored by an undone unlink it is the unlinked inode, its
             * unsynced write kept, torn or rolled back: never the
             * truncate's 150 bytes. */
            char v[320];
            snprintf(v, sizeof v, "%s0/w.log", prefix);
            struct stat st;
            cr_expect(stat(v, &st) != 0 || st.st_size <= 100, "%s: %lld bytes", v, (long long)st.st_size);
            snprintf(v, sizeof v, "%s0", prefix);
            tu_rm_rf(v);
        }
    }
}

Test(powerloss, in_place_applies_and_resets_the_journal, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x40), 120, NULL);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "99", "--mode", "mixed", NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    cr_assert(L.n > 0, "nothing was undone in place:\n%s", pl_out(&f));
    assert_variant(m, &L, 0, f.db);
    char p[256];
    snprintf(p, sizeof p, "%s/journal", f.run);
    cr_assert_eq(size_of(f.run, "journal"), 0, "the journal was not reset");
    /* A second run finds nothing to do. */
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "100", NULL));
    size_t n1 = L.n;
    ledger_load(&f, &L);
    cr_assert_eq(L.n, n1, "a run over an empty journal undid something");
    assert_variant(m, &L, 0, f.db);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, keep_mode_changes_nothing, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x50), 80, NULL);
    static uint8_t before[MAXF][FMAX], now[FMAX];
    ssize_t bs[MAXF];
    for (int i = 0; i < m->nf; i++) bs[i] = read_in(f.db, m->name[i], before[i]);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "5", "--mode", "keep", NULL));
    for (int i = 0; i < m->nf; i++) {
        ssize_t s = read_in(f.db, m->name[i], now);
        cr_assert(s == bs[i] && memcmp(now, before[i], (size_t)s) == 0, "keep mode changed %s", m->name[i]);
    }
    lrecs L = {0};
    ledger_load(&f, &L);
    cr_assert_eq(L.n, 0, "keep mode wrote %zu ledger lines", L.n);
    free(L.r);
    m_free(m);
    free(m);
}

/* ---- 5. refusals and usage ------------------------------------------------------------- */

Test(powerloss, refuses_while_lock_is_held, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x60), 60, NULL);
    char lp[256];
    snprintf(lp, sizeof lp, "%s/LOCK", f.db);
    int lfd = open(lp, O_RDWR | O_CREAT, 0644);
    cr_assert(lfd >= 0);
    cr_assert(flock(lfd, LOCK_EX | LOCK_NB) == 0);
    static uint8_t before[MAXF][FMAX], now[FMAX];
    ssize_t bs[MAXF];
    for (int i = 0; i < m->nf; i++) bs[i] = read_in(f.db, m->name[i], before[i]);
    int rc = run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", NULL);
    cr_assert_eq(rc, 3, "powerloss with LOCK held exited %d:\n%s", rc, pl_out(&f));
    cr_assert(strstr(pl_out(&f), "LOCK") != NULL, "the refusal does not name the lock:\n%s", pl_out(&f));
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    rc = run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--variants", "2", "--out-prefix", prefix, NULL);
    cr_assert_eq(rc, 3, "variants with LOCK held exited %d", rc);
    for (int i = 0; i < m->nf; i++) {
        ssize_t s = read_in(f.db, m->name[i], now);
        cr_assert(s == bs[i] && memcmp(now, before[i], (size_t)s) == 0, "a refused run changed %s", m->name[i]);
    }
    cr_assert(size_of(f.run, "journal") > 0, "a refused run reset the journal");
    lrecs L = {0};
    ledger_load(&f, &L);
    cr_assert_eq(L.n, 0);
    /* Released: it runs. */
    close(lfd);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", NULL));
    ledger_load(&f, &L);
    assert_variant(m, &L, 0, f.db);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, usage_errors_exit_2_and_change_nothing, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x70), 40, NULL);
    uint64_t js = size_of(f.run, "journal");
    cr_assert_eq(run_pl(&f, NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--seed", "1", NULL), 2);      /* no --run-dir */
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, NULL), 2); /* no --seed */
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "x1", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--mode", "melt", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--variants", "0", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--out-prefix", "/tmp/x", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--bogus", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, f.db, "--run-dir", f.run, "--seed", "1", NULL), 2);
    cr_assert_eq(run_pl(&f, "/nonexistent/db", "--run-dir", f.run, "--seed", "1", NULL), 2);
    cr_assert(strstr(pl_out(&f), "usage:") != NULL);
    cr_assert_eq(size_of(f.run, "journal"), js, "a usage error touched the journal");
    cr_assert_eq(size_of(f.run, "ledger"), UINT64_MAX, "a usage error created the ledger");
    m_free(m);
    free(m);
}

/* ---- 6. a torn journal tail is ignored; damage in the middle is refused ---------------- */

Test(powerloss, torn_journal_tail_is_ignored, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x80), 100, NULL);
    /* The process died while appending the BEGIN of one more write: the
     * write never happened, and its record is cut in the middle. */
    fx_open_journal(&f);
    uint64_t js = size_of(f.run, "journal");
    static uint8_t junk[8192];
    tu_fill(junk, sizeof junk, 9);
    eng_io_op op = {.kind = ENG_IO_WRITE, .path = dbp(&f, "data"), .buf = junk, .offset = 0, .len = sizeof junk};
    cr_assert_eq(flt_journal_before(f.j, &op), 0);
    fx_close_journal(&f);
    uint64_t js2 = size_of(f.run, "journal");
    cr_assert(js2 > js + 8192);
    char jp[256];
    snprintf(jp, sizeof jp, "%s/journal", f.run);
    cr_assert(truncate(jp, (off_t)(js2 - 3000)) == 0);

    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "3", "--variants", "4", "--mode", "mixed", "--out-prefix",
                     prefix, NULL));
    cr_assert(strstr(pl_out(&f), "torn tail") != NULL, "no word of the torn tail:\n%s", pl_out(&f));
    lrecs L = {0};
    ledger_load(&f, &L);
    for (int v = 0; v < 4; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
    }

    /* Garbage after the last record is a torn tail as well. */
    int fd = open(jp, O_WRONLY | O_APPEND);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, junk, 100), 100);
    close(fd);
    snprintf(prefix, sizeof prefix, "%s/w", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "3", "--variants", "1", "--mode", "mixed", "--out-prefix",
                     prefix, NULL));

    /* A restarted process appends a new session after the torn bytes:
     * the journal resumes there, and its writes are undone too. */
    fx_open_journal(&f);
    m_write(&f, m, 0, 100, 50, 77);
    fx_close_journal(&f);
    ledger_clear(&f);
    snprintf(prefix, sizeof prefix, "%s/s", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "5", "--variants", "4", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    cr_assert(strstr(pl_out(&f), "torn tail") != NULL && strstr(pl_out(&f), "3 sessions") != NULL, "%s", pl_out(&f));
    ledger_load(&f, &L);
    int last_undone = 0;
    for (int v = 0; v < 4; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
        decision *dec = calloc((size_t)m->nw, sizeof *dec);
        decisions_of(m, &L, v, dec);
        last_undone += dec[m->nw - 1].d == D_ROLLBACK;
        free(dec);
    }
    cr_assert(last_undone > 0, "the new session's write was never rolled back");

    /* Damage in the middle with valid records after it: refused. */
    uint8_t b;
    fd = open(jp, O_RDWR);
    cr_assert(pread(fd, &b, 1, 200) == 1);
    b ^= 0x40;
    cr_assert(pwrite(fd, &b, 1, 200) == 1);
    close(fd);
    snprintf(prefix, sizeof prefix, "%s/x", f.root);
    int rc = run_pl(&f, f.db, "--run-dir", f.run, "--seed", "3", "--variants", "1", "--out-prefix", prefix, NULL);
    cr_assert_eq(rc, 3, "a journal damaged in the middle was accepted (%d):\n%s", rc, pl_out(&f));
    free(L.r);
    m_free(m);
    free(m);
}
