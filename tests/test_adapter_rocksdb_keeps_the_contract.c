/*
 * test_adapter_rocksdb_keeps_the_contract.c -- stress/adapter_rocksdb.c
 * meets stress/adapter.h (the scenarios of adapter_helpers.h); its
 * reserved sequence key stays out of the driver's key space; sync_mode
 * off is durable at a checkpoint; a damaged table file is found by the
 * verify's checksummed scan and reported with its file; a CURRENT that
 * names a missing manifest is a corruption reported at CURRENT.
 */
#include "adapter_helpers.h"

#define E (&st_engine_rocksdb)

Test(adapter_rocksdb, put_get_delete_are_sequenced_writes) { ad_put_get_delete(E); }
Test(adapter_rocksdb, a_batch_is_never_seen_half_applied_and_gets_one_sequence) { ad_batch_atomic(E); }
Test(adapter_rocksdb, a_snapshot_sees_exactly_the_commits_up_to_its_sequence) { ad_snapshot_isolation(E); }
Test(adapter_rocksdb, iterators_are_ordered_bounded_and_show_only_the_drivers_keys) { ad_iterator_order_and_bounds(E); }
Test(adapter_rocksdb, a_reopen_keeps_synced_commits_and_recovers_the_last_sequence) {
    ad_reopen_keeps_synced_commits(E);
}
Test(adapter_rocksdb, a_process_that_died_without_closing_kept_every_acknowledged_commit) {
    ad_crash_keeps_synced_commits(E);
}
Test(adapter_rocksdb, options_that_need_hooks_or_mean_nothing_are_refused) { ad_refuses_hook_options(E); }

Test(adapter_rocksdb, a_batch_with_a_reserved_key_is_refused_whole) {
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    char k[17];
    ad_key(k, 1);
    st_op ops[2] = {{ST_PUT, k, 16, "x", 1}, {ST_PUT, "\0stress/seq", 11, "12345678", 8}};
    uint64_t seq = 0;
    cr_expect_eq(E->write(a.db, ops, 2, &seq), ST_INVALID);
    cr_expect_eq(E->in_doubt(a.db), 0);
    ad_expect(&a, NULL, 1, NULL);
    cr_expect_eq(ad_put(&a, 1, "y"), 1, "the refused batch took no number");
    ad_done(&a);
}

Test(adapter_rocksdb, sync_mode_off_is_durable_at_a_checkpoint) {
    ad_run a;
    ad_init(&a, E);
    a.o.sync_mode = 2;
    ad_open(&a);
    uint64_t s = 0;
    for (unsigned i = 0; i < 20; i++) s = ad_put(&a, i, "n");
    cr_expect_eq(E->durable_seq(a.db), 0);
    cr_expect_eq(E->checkpoint(a.db), ST_OK);
    cr_expect_eq(E->durable_seq(a.db), s);
    cr_expect_eq(E->vacuum(a.db), ST_OK);
    ad_done(&a);
}

/* The first file of A's directory that the shell PATTERN names, into NAME. */
static void only_file(ad_run *a, const char *pattern, char *name, size_t cap) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cd '%s' && ls %s | head -1", a->dir, pattern);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    cr_assert_not_null(fgets(name, (int)cap, p));
    pclose(p);
    name[strcspn(name, "\n")] = 0;
}

Test(adapter_rocksdb, a_damaged_table_file_is_reported_by_verify_with_its_name) {
    ad_run a;
    ad_init(&a, E);
    a.o.page_size = 4096;
    ad_open(&a);
    char v[200];
    memset(v, 'v', sizeof v - 1);
    v[sizeof v - 1] = 0;
    for (unsigned i = 0; i < 2000; i++) ad_put(&a, i, v);
    cr_assert_eq(E->checkpoint(a.db), ST_OK); /* the memtable into a table file */
    ad_close(&a);
    char sst[64];
    only_file(&a, "*.sst", sst, sizeof sst);
    ad_damage(&a, sst, 2048, 64); /* inside the first data blocks */
    uint64_t problems = 0;
    int st = E->verify_dir(a.dir, &a.o, &problems);
    cr_expect_eq(st, ST_CORRUPTION, "%s", st_status_name(st));
    cr_expect_eq(problems, 1);
    cr_expect_str_eq(a.last_layer, "page_checksum", "a block checksum mismatch is the checksum's report");
    cr_expect_str_eq(a.last_file, sst);
    ad_done(&a);
}

Test(adapter_rocksdb, a_current_file_that_names_a_missing_manifest_is_a_corruption_reported_at_current) {
    /* RocksDB says "IO error: No such file or directory" when the
     * MANIFEST that CURRENT names does not exist: no device failed, the
     * database's own metadata is damaged (a bit flipped in CURRENT), so
     * the open reports it as corruption at CURRENT. */
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    ad_put(&a, 1, "x");
    ad_close(&a);
    char p[4200];
    snprintf(p, sizeof p, "%s/CURRENT", a.dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("MANIFEST-999999\n", f);
    fclose(f);
    int st = E->open(a.dir, &a.o, &a.db);
    cr_expect_eq(st, ST_CORRUPTION, "%s", st_status_name(st));
    cr_expect_str_eq(a.last_file, "CURRENT");
    a.db = NULL;
    ad_done(&a);
}

Test(adapter_rocksdb, a_log_record_that_fails_its_crc_in_a_read_only_open_is_reported_at_its_log) {
    /* A read-only open writes no info log, and RocksDB's "checksum
     * mismatch" from a log's replay names no file: the adapter finds the
     * record itself (stress/rocksdb_log.h), or the report would name no
     * place and the oracle could match it to no injection. */
    ad_run a;
    ad_init(&a, E);
    a.o.rocksdb_wal_recovery_mode = 1;
    ad_open(&a);
    for (unsigned i = 0; i < 200; i++) ad_put(&a, i, "a value of some length");
    ad_close(&a); /* the records stay in the log: nothing flushed them */
    char log[64];
    only_file(&a, "*.log", log, sizeof log);
    ad_damage(&a, log, 2000, 1);
    uint64_t problems = 0;
    int st = E->verify_dir(a.dir, &a.o, &problems);
    cr_expect_eq(st, ST_CORRUPTION, "%s", st_status_name(st));
    cr_expect_str_eq(a.last_layer, "page_checksum");
    cr_expect_str_eq(a.last_file, log);
    ad_done(&a);
}

Test(adapter_rocksdb, a_manifest_record_that_fails_its_crc_is_reported_at_the_manifest) {
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    ad_put(&a, 1, "x");
    ad_close(&a);
    char manifest[64];
    only_file(&a, "MANIFEST-*", manifest, sizeof manifest);
    ad_damage(&a, manifest, 12, 1); /* the first record's payload */
    int st = E->open(a.dir, &a.o, &a.db);
    cr_expect_eq(st, ST_CORRUPTION, "%s", st_status_name(st));
    cr_expect_str_eq(a.last_file, manifest);
    a.db = NULL;
    ad_done(&a);
}
