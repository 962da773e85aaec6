/*
 * test_powerloss_variants_are_legal.c -- every variant of a crash
 * (rollback, tear, mixed, with dropped writes) is exact against the ledger,
 * legal without it, never touches what was synced and differs from the
 * others (E L S D); a drop spares in-flight, truncated and synced data; a
 * later kept write wins over an earlier undone one.
 *
 * Part of the powerloss suite (once test_powerloss.c); the helpers it shares
 * with the other test_powerloss_*.c files are in powerloss_helpers.h.
 */
#include "powerloss_helpers.h"

/* ---- 1. variants: exact, legal, synced never touched, different --------------- */

static void variants_round(const char *mode, uint64_t seed, int with_drops) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    flt_ledger *dl = NULL;
    if (with_drops) cr_assert_eq(flt_ledger_open(f.run, &dl), 0);
    random_workload(&f, m, seed, 160, dl);
    flt_ledger_close(dl);
    int unsynced = 0, dropped = 0;
    for (int i = 0; i < m->nw; i++) unsynced += !m->w[i].synced && !m->w[i].dropped, dropped += m->w[i].dropped;
    cr_assert(unsynced >= 4, "workload left only %d unsynced writes", unsynced);
    if (with_drops) cr_assert(dropped >= 4, "seed %llu: only %d writes dropped", (unsigned long long)seed, dropped);

    /* The crashed directory as the test left it. */
    static uint8_t before[MAXF][FMAX];
    ssize_t bsize[MAXF];
    for (int i = 0; i < m->nf; i++) bsize[i] = read_in(f.db, m->name[i], before[i]);

    char seedbuf[32], prefix[200];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--variants", "8", "--mode", mode, "--out-prefix",
                     prefix, NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    int any_roll = 0, any_tear = 0;
    static uint8_t a[FMAX], b[FMAX];
    int differ = 0;
    for (int v = 0; v < 8; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
        int nr, nt;
        count_decisions(m, &L, v, &nr, &nt);
        any_roll += nr;
        any_tear += nt;
        if (v > 0) {
            char prev[256];
            snprintf(prev, sizeof prev, "%s%d", prefix, v - 1);
            for (int fi = 0; fi < m->nf && !differ; fi++) {
                ssize_t s1 = read_in(prev, m->name[fi], a), s2 = read_in(dir, m->name[fi], b);
                differ = s1 != s2 || memcmp(a, b, (size_t)s1) != 0;
            }
        }
    }
    cr_assert(differ, "D: all 8 variants of mode %s are identical", mode);
    if (!strcmp(mode, "rollback"))
        cr_assert(any_roll > 0 && any_tear == 0, "rollback mode: %d rollbacks, %d tears", any_roll, any_tear);
    if (!strcmp(mode, "tear")) cr_assert(any_tear > 0, "tear mode made no tear");
    if (!strcmp(mode, "mixed"))
        cr_assert(any_roll > 0 && any_tear > 0, "mixed: %d rollbacks, %d tears", any_roll, any_tear);

    /* DIR itself and the journal stay as they were. */
    for (int i = 0; i < m->nf; i++) {
        ssize_t s = read_in(f.db, m->name[i], a);
        cr_assert(s == bsize[i] && memcmp(a, before[i], (size_t)s) == 0, "variants changed %s in DIR", m->name[i]);
    }
    char jp[256];
    snprintf(jp, sizeof jp, "%s/journal", f.run);
    struct stat st;
    cr_assert(stat(jp, &st) == 0 && st.st_size > 0, "the journal was reset by a variants run");
    /* Variants are never overwritten: a second run refuses (usage). */
    cr_assert_eq(
        run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--variants", "2", "--out-prefix", prefix, NULL), 2);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, rollback_variants_restore_exact_old_bytes, T_OPTS) {
    for (int r = 0; r < 3; r++) variants_round("rollback", cu_seed(0x10 + (uint64_t)r), 0);
}

Test(powerloss, tear_variants_keep_sector_subsets, T_OPTS) {
    for (int r = 0; r < 3; r++) variants_round("tear", cu_seed(0x20 + (uint64_t)r), 0);
}

Test(powerloss, mixed_variants_are_legal, T_OPTS) {
    for (int r = 0; r < 3; r++) variants_round("mixed", cu_seed(0x30 + (uint64_t)r), 0);
}

/* Failed fsyncs drop their file's unsynced writes while the process runs
 * (each drop checked on the spot by m_drop); then power-loss states of
 * that journal, in every mode, are exact and legal with the dropped writes
 * counted as never made: no ledger line undoes or tears one (PL6), and
 * none comes back. */
Test(powerloss, dropped_writes_stay_dropped_in_every_variant, T_OPTS) {
    static const char *const modes[] = {"rollback", "tear", "mixed"};
    for (int r = 0; r < 3; r++) variants_round(modes[r], cu_seed(0xa0 + (uint64_t)r), 1);
}

/* Lines of the ledger, raw (drop lines have phase "run": lrec_cb skips them). */
typedef struct rawlines {
    char l[8][1024];
    int n;
} rawlines;

static void raw_cb(void *ctx, const char *line) {
    rawlines *r = ctx;
    if (r->n < 8) snprintf(r->l[r->n], sizeof r->l[0], "%s", line);
    r->n++;
}

/* Size of DIR/NAME, or -1 if it does not exist. */
static int64_t size_or_absent(const char *dir, const char *name) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* The edges of a drop: a write in flight (journaled, not done) is left
 * alone with its range; a later truncate decides the bytes beyond it; a
 * file reached through a rename drops the writes made under its old name;
 * a synced write and another file are untouched; a second drop finds
 * nothing.  Then a power-loss step neither keeps nor undoes a dropped
 * write.  Documented edges (journal.h): the in-flight write's old bytes
 * and the truncate's tail were journaled before the drop, so undoing them
 * later shows what they saw then (dropped data included: Linux may have
 * written those pages before the error, so such a state is possible). */
Test(powerloss, drop_spares_in_flight_truncated_and_synced, T_OPTS) {
    fx f;
    fx_init(&f);
    static uint8_t init[32768], other[8192], a[8192], b[8192], c[8192], d[8192], got[FMAX];
    tu_fill(init, sizeof init, 1);
    tu_fill(other, sizeof other, 2);
    tu_fill(a, sizeof a, 3);
    tu_fill(b, sizeof b, 4);
    tu_fill(c, sizeof c, 5);
    tu_fill(d, sizeof d, 6);
    put_file(&f, "data", init, sizeof init);
    put_file(&f, "wal/0000000000000000", other, sizeof other);
    fx_open_journal(&f);
    flt_ledger *lg = NULL;
    cr_assert_eq(flt_ledger_open(f.run, &lg), 0);

    j_write(&f, "data", 0, a, 4096); /* synced below */
    j_sync(&f, "data");
    j_write(&f, "data", 4096, b, 8192);              /* unsynced: dropped */
    j_write(&f, "wal/0000000000000000", 0, d, 4096); /* another file: untouched */
    /* In flight over part of it: journaled and written, its after() not
     * yet come. */
    const char *dp = dbp(&f, "data");
    int fd = open(dp, O_WRONLY);
    cr_assert(fd >= 0);
    eng_io_op fl = {.kind = ENG_IO_WRITE, .path = dp, .buf = c, .offset = 8192, .len = 4096};
    cr_assert_eq(flt_journal_before(f.j, &fl), 0);
    fl.result = pwrite(fd, c, 4096, 8192);
    cr_assert_eq(fl.result, 4096);
    j_write(&f, "data", 32768, d, 8192); /* extends the file */
    j_write(&f, "data", 24576, a, 4096); /* unsynced, partly cut by the truncate below */
    j_truncate(&f, "data", 26624);       /* [26624, ...) decided by the truncate */

    uint64_t n = 0;
    cr_assert_eq(flt_journal_drop_unsynced(f.j, dp, lg, NULL, &n), 0);
    cr_assert_eq(n, 3, "%llu writes dropped, want 3 (the in-flight one is not)", (unsigned long long)n);
    static uint8_t want[32768];
    memcpy(want, init, sizeof want);
    memcpy(want, a, 4096);        /* synced */
    memcpy(want + 8192, c, 4096); /* in flight: left alone */
    ssize_t gs = read_in(f.db, "data", got);
    cr_assert_eq(gs, 26624, "size %zd: the truncate decides it", gs);
    size_t x = first_diff(want, got, 26624);
    cr_assert_eq(x, 26624, "data byte %zu: 0x%02x, want 0x%02x", x, got[x], want[x]);
    gs = read_in(f.db, "wal/0000000000000000", got);
    cr_assert(gs == 8192 && !memcmp(got, d, 4096) && !memcmp(got + 4096, other + 4096, 4096), "the other file changed");
    /* The ledger: three lines, newest first, each with its write's place. */
    static rawlines rl;
    rl.n = 0;
    cr_assert_eq(flt_ledger_read(f.run, raw_cb, &rl), 0);
    cr_assert_eq(rl.n, 3);
    static const int64_t offs[3] = {24576, 32768, 4096}, lens[3] = {4096, 8192, 8192};
    for (int i = 0; i < 3; i++) {
        char v[64], num[32];
        const char *line = rl.l[i];
        cr_assert(json_field(line, "class", v, sizeof v) && !strcmp(v, "sync_error"), "%s", line);
        cr_assert(json_field(line, "point", v, sizeof v) && !strcmp(v, "sync/drop_dirty"), "%s", line);
        cr_assert(json_field(line, "file", v, sizeof v) && !strcmp(v, "data"), "%s", line);
        cr_assert(json_field(line, "offset", num, sizeof num) && strtoll(num, NULL, 10) == offs[i], "%s", line);
        cr_assert(json_field(line, "len", num, sizeof num) && strtoll(num, NULL, 10) == lens[i], "%s", line);
    }
    /* Nothing left to drop; the in-flight write completes. */
    cr_assert_eq(flt_journal_drop_unsynced(f.j, dp, lg, NULL, &n), 0);
    cr_assert_eq(n, 0);
    flt_journal_after(f.j, &fl);
    close(fd);
    /* Outside the database directory: never journaled, nothing to drop. */
    cr_assert_eq(flt_journal_drop_unsynced(f.j, "/tmp/not-the-db/data", lg, NULL, &n), 0);
    cr_assert_eq(n, 0);

    /* Through a rename: the writes made as control.tmp are control's. */
    static uint8_t ctl[512];
    tu_fill(ctl, sizeof ctl, 7);
    j_create(&f, "control.tmp");
    j_write(&f, "control.tmp", 0, ctl, sizeof ctl);
    j_rename(&f, "control.tmp", "control");
    cr_assert_eq(flt_journal_drop_unsynced(f.j, dbp(&f, "control"), lg, NULL, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(size_or_absent(f.db, "control"), 0, "its only write was dropped: the new file is empty again");
    rl.n = 0;
    cr_assert_eq(flt_ledger_read(f.run, raw_cb, &rl), 0);
    cr_assert_eq(rl.n, 4);
    char note[256];
    cr_assert(json_field(rl.l[3], "note", note, sizeof note) && strstr(note, "written as control.tmp"), "%s", rl.l[3]);
    fx_close_journal(&f);
    flt_ledger_close(lg);

    /* A power loss now. */
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "7", "--variants", "8", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    int saw_c = 0, saw_undone = 0;
    for (int v = 0; v < 8; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        for (size_t k = 0; k < L.n; k++) {
            if (L.r[k].variant != v || strcmp(L.r[k].file, "data")) continue;
            cr_assert(!strcmp(L.r[k].point, "powerloss/undo_truncate") ||
                          (!strcmp(L.r[k].point, "powerloss/rollback") && L.r[k].off == 8192),
                      "variant %d: %s@%lld+%lld: only the truncate and the once in-flight write are unsynced", v,
                      L.r[k].point, (long long)L.r[k].off, (long long)L.r[k].len);
        }
        gs = read_in(dir, "data", got);
        cr_assert(gs == 26624 || gs == 40960, "variant %d: data is %zd bytes", v, gs);
        cr_assert(!memcmp(got, a, 4096), "variant %d: the synced write is gone", v);
        cr_assert(!memcmp(got + 4096, init + 4096, 4096), "variant %d: a dropped write came back", v);
        if (!memcmp(got + 8192, c, 4096))
            saw_c++;
        else if (!memcmp(got + 8192, b + 4096, 4096))
            saw_undone++; /* its old bytes, journaled before the drop */
        else
            cr_assert_fail("variant %d: bytes at 8192 are neither the write's nor its old ones", v);
        cr_assert(!memcmp(got + 12288, init + 12288, 26624 - 12288), "variant %d: a dropped write came back", v);
        int64_t cs = size_or_absent(dir, "control"), ts = size_or_absent(dir, "control.tmp");
        cr_assert(cs <= 0 && ts <= 0, "variant %d: control %lld, control.tmp %lld bytes: a dropped write came back", v,
                  (long long)cs, (long long)ts);
    }
    cr_assert(saw_c && saw_undone, "the once in-flight write was kept %d and rolled back %d times in 8 variants", saw_c,
              saw_undone);
    free(L.r);
}

/* ---- 2. overlapping writes: a later kept write wins over an earlier undone one ----- */

Test(powerloss, later_kept_write_wins_over_earlier_rollback, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    int d = m_file(m, "data", 32768, 7);
    put_file(&f, "data", m->init[d], m->init_size[d]);
    fx_open_journal(&f);
    m_write(&f, m, d, 0, 8192, 101);     /* A: [0, 8K) */
    m_write(&f, m, d, 4096, 8192, 102);  /* B: [4K, 12K) over half of A */
    m_write(&f, m, d, 30000, 8192, 103); /* C: extends the file past 32K */
    m_write(&f, m, d, 36000, 1000, 104); /* D: inside C's extension */
    fx_close_journal(&f);

    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "12345", "--variants", "24", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    int seen_a_only = 0, seen_c_undone_d_kept = 0, seen_all_undone = 0;
    static uint8_t got[FMAX];
    for (int v = 0; v < 24; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
        decision dec[4];
        decisions_of(m, &L, v, dec);
        ssize_t gs = read_in(dir, "data", got);
        if (dec[0].d == D_ROLLBACK && dec[1].d == D_KEEP) {
            /* The overlap holds B, A's own half holds the old bytes. */
            cr_assert(memcmp(got, m->init[d], 4096) == 0, "variant %d: A's old bytes not restored", v);
            cr_assert(memcmp(got + 4096, m->w[1].data, 8192) == 0, "variant %d: B's kept bytes lost", v);
            seen_a_only++;
        }
        if (dec[2].d == D_ROLLBACK && dec[3].d == D_KEEP) {
            /* C undone but D kept: the file still reaches D's end, C's other bytes read as zeros. */
            cr_assert_eq(gs, 37000, "variant %d: size %zd", v, gs);
            for (size_t x = 32768; x < 36000; x++) cr_assert_eq(got[x], 0, "variant %d: byte %zu", v, x);
            cr_assert(memcmp(got + 30000, m->init[d] + 30000, 2768) == 0);
            seen_c_undone_d_kept++;
        }
        if (dec[2].d == D_ROLLBACK && dec[3].d == D_ROLLBACK) {
            cr_assert_eq(gs, 32768, "variant %d: C and D undone but size %zd", v, gs);
            seen_all_undone++;
        }
    }
    cr_assert(seen_a_only && seen_c_undone_d_kept && seen_all_undone,
              "seed 12345 did not produce every case (%d %d %d): pick another", seen_a_only, seen_c_undone_d_kept,
              seen_all_undone);
    free(L.r);
    m_free(m);
    free(m);
}

/* ---- 4. a write's fate hangs on the write, not on its place (PL7) ------------- */

/* Thirty-two unsynced page writes to "data" (each of its 16 pages twice),
 * with, when OTHERS, a write to "other" after each; torn with one seed.
 * FATES gets data's tear bitmaps in the ledger's order (newest first). */
static void data_fates(int others, char fates[32][340]) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    int d = m_file(m, "data", 65536, 3), o = m_file(m, "other", 32768, 4);
    put_file(&f, "data", m->init[d], m->init_size[d]);
    put_file(&f, "other", m->init[o], m->init_size[o]);
    fx_open_journal(&f);
    for (int i = 0; i < 32; i++) {
        m_write(&f, m, d, (uint64_t)(i % 16) * 4096, 4096, 500 + (uint64_t)i);
        if (others) m_write(&f, m, o, (uint64_t)(i % 8) * 4096, 4096, 900 + (uint64_t)i);
    }
    fx_close_journal(&f);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "4242", "--variants", "1", "--mode", "tear",
                     "--out-prefix", prefix, NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    int n = 0;
    for (size_t i = 0; i < L.n; i++) {
        const char *base = strrchr(L.r[i].file, '/');
        if (strcmp(base ? base + 1 : L.r[i].file, "data")) continue;
        cr_assert(n < 32 && !strcmp(L.r[i].point, "powerloss/tear"), "line %zu: %s", i, L.r[i].point);
        snprintf(fates[n++], 340, "%lld:%s", (long long)L.r[i].off, L.r[i].kept);
    }
    cr_assert_eq(n, 32, "%d of data's 32 writes torn", n);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, a_writes_fate_hangs_on_the_write_not_on_the_writes_around_it, T_OPTS) {
    /* A shrinker removes ops while a failure stays; a tear the failure
     * needs must not move when writes elsewhere go (fpi-skips-page-at-
     * redo-lsn: with one stream in journal order, no removal kept it). */
    static char alone[32][340], among[32][340];
    data_fates(0, alone);
    data_fates(1, among);
    for (int i = 0; i < 32; i++)
        cr_assert_str_eq(alone[i], among[i], "data's write %d (newest first) torn differently with other writes around",
                         i);
}

/* ---- 5. a pinned write's fate is the pin's, and keep mode keeps the rest (PL8) -- */

/* Sixteen pages of "data" each written twice, unsynced, and power lost in
 * keep mode with pins: the last write of page 2 torn keeping its first
 * four sectors, the first write of page 3 rolled back, the last of page 4
 * "torn" keeping every sector (a keep) and of page 5 keeping none (a
 * rollback), and one naming no write.  Three lines and no other reach the
 * ledger, the variant is exactly what they make (page 3 carries its
 * second write, kept: PL1), and a bad pin is a usage error that changes
 * nothing. */
Test(powerloss, a_pinned_write_is_undone_as_pinned_and_keep_mode_keeps_every_other, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    int d = m_file(m, "data", 65536, 3);
    put_file(&f, "data", m->init[d], m->init_size[d]);
    fx_open_journal(&f);
    for (int i = 0; i < 32; i++) m_write(&f, m, d, (uint64_t)(i % 16) * 4096, 4096, 700 + (uint64_t)i);
    fx_close_journal(&f);
    char prefix[200], dir[256];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    snprintf(dir, sizeof dir, "%s0", prefix);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "7", "--variants", "1", "--mode", "keep",
                        "--out-prefix", prefix, "--pin", "data@8192:0=tear:zz", NULL),
                 2, "a pin with a bad HEX was taken");
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "7", "--variants", "1", "--mode", "keep",
                        "--out-prefix", prefix, "--pin", "data@8192:0=keep", NULL),
                 2, "a pin with an unknown fate was taken");
    cr_assert_eq(size_or_absent(f.root, "v0"), -1, "a refused run made a variant");
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "7", "--variants", "1", "--mode", "keep", "--out-prefix",
                     prefix, "--pin", "data@8192:0=tear:f0", "--pin", "data@12288:1=rollback", "--pin",
                     "data@61440:5=rollback", "--pin", "data@16384:0=tear:ff", "--pin", "data@20480:0=tear:00", NULL));
    lrecs L = {0};
    ledger_load(&f, &L);
    cr_assert_eq(L.n, 3,
                 "%zu ledger lines, want the three pinned writes' (a pin naming no write changes nothing, a tear "
                 "that keeps every unit is a keep)",
                 L.n);
    /* Newest write first: page 5's last (21) rolled back, its tear keeping
     * no unit; page 2's last (18) torn; page 3's first (3) rolled back. */
    cr_assert_str_eq(L.r[0].point, "powerloss/rollback");
    cr_assert(L.r[0].off == 20480 && L.r[0].write_no == 21, "rollback: @%lld write=%lld", (long long)L.r[0].off,
              (long long)L.r[0].write_no);
    cr_assert_str_eq(L.r[1].point, "powerloss/tear");
    cr_assert(L.r[1].off == 8192 && L.r[1].write_no == 18 && !strcmp(L.r[1].kept, "f0"),
              "tear: @%lld write=%lld kept=%s", (long long)L.r[1].off, (long long)L.r[1].write_no, L.r[1].kept);
    cr_assert_str_eq(L.r[2].point, "powerloss/rollback");
    cr_assert(L.r[2].off == 12288 && L.r[2].write_no == 3, "rollback: @%lld write=%lld", (long long)L.r[2].off,
              (long long)L.r[2].write_no);
    assert_variant(m, &L, 0, dir);
    /* Page 2 as pinned: four sectors of its last write, four of the one before. */
    static uint8_t got[FMAX];
    read_in(dir, "data", got);
    cr_assert(memcmp(got + 8192, m->w[18].data, 2048) == 0 && memcmp(got + 10240, m->w[2].data + 2048, 2048) == 0,
              "page 2 is not its last write's first half over its first write's second half");
    free(L.r);
    m_free(m);
    free(m);
}
