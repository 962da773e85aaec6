/*
 * test_adapter_sqlite_keeps_the_contract.c -- stress/adapter_sqlite.c
 * meets stress/adapter.h (the scenarios of adapter_helpers.h), in both
 * journal modes, and SQLite's own checks reach the corruption callback:
 * PRAGMA integrity_check's lines on a damaged file, layer
 * sqlite_integrity_check, file db.sqlite.
 */
#include "adapter_helpers.h"

#define E (&st_engine_sqlite)

Test(adapter_sqlite, put_get_delete_are_sequenced_writes) { ad_put_get_delete(E); }
Test(adapter_sqlite, a_batch_is_never_seen_half_applied_and_gets_one_sequence) { ad_batch_atomic(E); }
Test(adapter_sqlite, a_snapshot_sees_exactly_the_commits_up_to_its_sequence) { ad_snapshot_isolation(E); }
Test(adapter_sqlite, iterators_are_ordered_bounded_and_show_only_the_drivers_keys) { ad_iterator_order_and_bounds(E); }
Test(adapter_sqlite, a_reopen_keeps_synced_commits_and_recovers_the_last_sequence) {
    ad_reopen_keeps_synced_commits(E);
}
Test(adapter_sqlite, a_process_that_died_without_closing_kept_every_acknowledged_commit) {
    ad_crash_keeps_synced_commits(E);
}
Test(adapter_sqlite, options_that_need_hooks_or_mean_nothing_are_refused) { ad_refuses_hook_options(E); }

Test(adapter_sqlite, the_rollback_journal_keeps_the_contract_but_has_no_snapshots) {
    ad_run a;
    ad_init(&a, E);
    a.o.sqlite_journal_mode = 1;
    a.o.sqlite_synchronous = 2; /* EXTRA: its commits are durable at their return */
    ad_open(&a);
    uint64_t s = ad_put(&a, 1, "x");
    ad_expect(&a, NULL, 1, "x");
    st_snap *snap = NULL;
    uint64_t seq = 0;
    cr_expect_eq(E->snapshot(a.db, &snap, &seq), ST_NOTSUP, "a held read transaction would block every commit");
    ad_close(&a);
    ad_open(&a);
    st_recovery rec;
    E->recovery(a.db, &rec);
    cr_expect_eq(rec.recovered_seq, s);
    ad_done(&a);
    a.o.changed_options = "acquire_snapshot_one_in";
    char why[512];
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_NOTSUP);
}

Test(adapter_sqlite, wal_with_normal_sync_needs_sync_mode_off_and_is_durable_at_a_full_checkpoint) {
    ad_run a;
    ad_init(&a, E);
    a.o.sqlite_synchronous = 1;
    char why[512] = "";
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_NOTSUP);
    cr_expect(strstr(why, "--sync_mode off"), "%s", why);
    a.o.sync_mode = 2;
    ad_open(&a);
    uint64_t s = 0;
    for (unsigned i = 0; i < 20; i++) s = ad_put(&a, i, "n");
    cr_expect_eq(E->durable_seq(a.db), 0, "no checkpoint yet: nothing known synced");
    cr_expect_eq(E->checkpoint(a.db), ST_OK);
    cr_expect_eq(E->durable_seq(a.db), s);
    ad_done(&a);
}

Test(adapter_sqlite, a_rollback_journal_commit_is_durable_at_its_return_under_extra_sync_only) {
    ad_run a;
    ad_init(&a, E);
    a.o.sqlite_journal_mode = 1;
    a.o.sqlite_synchronous = 0; /* FULL: the journal's unlink is not synced */
    char why[512] = "";
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_NOTSUP);
    cr_expect(strstr(why, "--sync_mode off"), "%s", why);
    a.o.sync_mode = 2;
    ad_open(&a);
    for (unsigned i = 0; i < 20; i++) ad_put(&a, i, "f");
    cr_expect_eq(E->checkpoint(a.db), ST_OK);
    cr_expect_eq(E->durable_seq(a.db), 0, "no commit is promised durable");
    ad_done(&a);

    ad_init(&a, E);
    a.o.sqlite_journal_mode = 1;
    a.o.sqlite_synchronous = 2; /* EXTRA: the directory is synced after the unlink */
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_OK, "%s", why);
    ad_open(&a);
    uint64_t s = 0;
    for (unsigned i = 0; i < 20; i++) s = ad_put(&a, i, "e");
    cr_expect_eq(E->durable_seq(a.db), s);
    ad_done(&a);
}

Test(adapter_sqlite, integrity_check_lines_on_a_damaged_file_reach_the_callback) {
    ad_run a;
    ad_init(&a, E);
    a.o.page_size = 4096;
    ad_open(&a);
    char v[200];
    memset(v, 'v', sizeof v - 1);
    v[sizeof v - 1] = 0;
    for (unsigned i = 0; i < 2000; i++) ad_put(&a, i, v);
    ad_close(&a); /* the WAL is checkpointed into db.sqlite and removed */
    /* The middle of a page well inside the kv tree: cells, not the header. */
    ad_damage(&a, "db.sqlite", 20 * 4096 + 1024, 512);
    uint64_t problems = 0;
    int st = E->verify_dir(a.dir, &a.o, &problems);
    cr_expect_eq(st, ST_CORRUPTION, "%s", st_status_name(st));
    cr_expect_gt(problems, 0);
    cr_expect_gt(a.reports, 0);
    cr_expect(!strcmp(a.last_layer, "sqlite_integrity_check") || !strcmp(a.last_layer, "sqlite"), "%s", a.last_layer);
    cr_expect_str_eq(a.last_file, "db.sqlite");
    ad_done(&a);
}

Test(adapter_sqlite, a_database_file_with_a_damaged_header_is_sqlites_to_refuse_not_the_probes) {
    /* The probe refuses only a directory without db.sqlite that holds
     * files (another engine's); a damaged header is SQLite's to report
     * (SQLITE_NOTADB), at the open, as corruption of db.sqlite, so the
     * oracle judges it by the damage's row. */
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    ad_put(&a, 1, "x");
    ad_close(&a);
    ad_damage(&a, "db.sqlite", 0, 16);
    char why[320];
    cr_expect_eq(E->probe_dir(a.dir, why, sizeof why), ST_OK, "%s", why);
    ad_open_refused_at(&a, "db.sqlite");
    ad_done(&a);
}

Test(adapter_sqlite, a_schema_a_flip_renamed_is_corruption_of_the_database_file) {
    /* One bit of sqlite_master's text ("seq" becomes "req"): the
     * adapter's statements no longer compile; that is damage to
     * db.sqlite, reported as corruption at the open, not an error of the
     * harness. */
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    ad_put(&a, 1, "x");
    ad_close(&a);
    char p[4200];
    snprintf(p, sizeof p, "%s/db.sqlite", a.dir);
    FILE *f = fopen(p, "r+b");
    cr_assert_not_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    char *at = memmem(buf, n, "seq INTEGER", 11);
    cr_assert_not_null(at, "the schema's text names the column");
    fseek(f, (long)(at - buf), SEEK_SET);
    fputc('r', f);
    fclose(f);
    ad_open_refused_at(&a, "db.sqlite");
    ad_done(&a);
}
