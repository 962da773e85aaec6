/*
 * test_oracle_damage_in_another_engines_file_is_placed_by_the_file.c --
 * rule V1 for damage the fault door put in another engine's files
 * (faults/doordisk.c, faults/doorio.c): such damage explains a report
 * anywhere in its file, since the oracle cannot follow that engine's
 * pointers (a RocksDB table's footer routes the read of its index), but
 * never a report in another file; and a file with an in-flight flip that
 * the engine renames ("moved" line: RocksDB writes CURRENT as a
 * temporary) carries the flip to its new name, where the report names it.
 * Our engine's damage stays placed by block.  A tear of the crash
 * explains the refused open only where the engine's table promises to
 * detect it, not to repair it.
 */
#include "oracle_helpers.h"

static vd_report rep_at(const char *file, int64_t block) {
    vd_report r = {.block = block, .offset = -1, .entry = -1};
    snprintf(r.layer, sizeof r.layer, "page_checksum");
    snprintf(r.file, sizeof r.file, "%s", file);
    return r;
}

/* One injection LINE and one report R: how the injection came out. */
static int settle_one(const char *line, vd_report r, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_INFLIGHT] = c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    cr_assert_eq(vd_add_ledger_line(v, line, 0), 0);
    vd_add_report(v, &r);
    vd_settle(v, res);
    int o = vd_injection_at(v, 0)->outcome;
    vd_free(v);
    return o;
}

Test(oracle_door_places, a_flipped_footer_read_explains_a_report_at_another_block_of_its_table) {
    vd_result res;
    int o = settle_one("{\"seq\":0,\"class\":\"bitflip_inflight\",\"point\":\"door/inflight/read\","
                       "\"file\":\"000029.sst\",\"block\":4,\"bit\":3,\"mask\":\"0x8\"}",
                       rep_at("000029.sst", 0), &res);
    cr_assert_eq(o, VD_DETECTED);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
}

Test(oracle_door_places, damage_on_disk_of_another_engine_is_placed_by_its_file_too) {
    vd_result res;
    int o = settle_one("{\"seq\":0,\"class\":\"bitflip_page\",\"point\":\"tick/door\","
                       "\"file\":\"000012.sst\",\"block\":7,\"bit\":3,\"mask\":\"0x8\"}",
                       rep_at("000012.sst", 2), &res);
    cr_assert_eq(o, VD_DETECTED);
    cr_assert(res.pass);
}

Test(oracle_door_places, door_damage_never_explains_a_report_in_another_file) {
    vd_result res;
    settle_one("{\"seq\":0,\"class\":\"bitflip_inflight\",\"point\":\"door/inflight/read\","
               "\"file\":\"000029.sst\",\"block\":4,\"bit\":3,\"mask\":\"0x8\"}",
               rep_at("000031.sst", 4), &res);
    cr_assert_eq(res.total.false_alarm, 1);
    cr_assert_not(res.pass);
}

/* SQLite's rows: nothing promised for a flip in any of its files. */
static int nothing_promised(void *ctx, int cls, const char *file, int *as_corruption) {
    (void)ctx, (void)cls, (void)file;
    *as_corruption = 0;
    return VD_PROMISE_NONE;
}

Test(oracle_door_places, unpromised_door_damage_explains_a_report_in_another_file_of_the_database) {
    /* A flipped log frame that SQLite's checkpoint copied into the
     * database file, which integrity_check then reports there. */
    vd_config c = judging();
    c.class_on[VD_BITFLIP_INFLIGHT] = 1;
    c.promise_of = nothing_promised;
    vd_ctx *v = vd_new(&c);
    cr_assert_eq(vd_add_ledger_line(v,
                                    "{\"seq\":0,\"class\":\"bitflip_inflight\",\"point\":\"door/inflight/write\","
                                    "\"file\":\"db.sqlite-wal\",\"block\":3,\"bit\":9,\"mask\":\"0x2\"}",
                                    0),
                 0);
    vd_report r = rep_at("db.sqlite", -1);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
    vd_free(v);
}

Test(oracle_door_places, our_engines_damage_stays_placed_by_block) {
    vd_result res;
    settle_one("{\"seq\":0,\"class\":\"bitflip_page\",\"point\":\"tick\",\"file\":\"data\",\"block\":7,"
               "\"bit\":3,\"mask\":\"0x8\"}",
               rep_at("data", 2), &res);
    cr_assert_eq(res.total.false_alarm, 1);
    cr_assert_not(res.pass);
}

Test(oracle_door_places, a_renamed_file_carries_its_flip_to_the_name_the_report_gives) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_INFLIGHT] = 1;
    vd_ctx *v = vd_new(&c);
    cr_assert_eq(vd_add_ledger_line(v,
                                    "{\"seq\":0,\"class\":\"bitflip_inflight\",\"point\":\"door/inflight/write\","
                                    "\"file\":\"000057.dbtmp\",\"block\":0,\"bit\":9,\"mask\":\"0x2\"}",
                                    0),
                 0);
    cr_assert_eq(vd_add_ledger_line(v,
                                    "{\"seq\":1,\"class\":\"moved\",\"point\":\"door/rename\","
                                    "\"file\":\"000057.dbtmp\",\"to\":\"CURRENT\"}",
                                    0),
                 1, "a rename is no injection");
    vd_report r = rep_at("CURRENT", -1);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(vd_injection_count(v), 1);
    cr_assert_str_eq(vd_injection_at(v, 0)->file, "CURRENT");
    cr_assert_eq(vd_injection_at(v, 0)->outcome, VD_DETECTED);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
    vd_free(v);
}

/* A tear the power-loss step left in the last, unsynced record of a file
 * whose row promises to detect it (RocksDB's MANIFEST: the open is
 * refused) explains the open's report in that file: the database is
 * unrecoverable by design.  Where the row promises repair (the log),
 * the same report is the engine's failure. */
static int tear_table(void *ctx, int cls, const char *file, int *as_corruption) {
    (void)ctx, (void)cls;
    *as_corruption = 0;
    return !strncmp(file, "MANIFEST-", 9) ? VD_PROMISE_DETECT : VD_PROMISE_REPAIR;
}

static vd_result settle_torn_open(const char *file) {
    vd_config c = judging();
    c.promise_of = tear_table;
    vd_ctx *v = vd_new(&c);
    char line[256];
    snprintf(line, sizeof line,
             "{\"seq\":0,\"phase\":\"powerloss\",\"class\":\"torn_write\",\"point\":\"powerloss/tear\","
             "\"file\":\"%s\",\"offset\":29078,\"len\":117}",
             file);
    cr_assert_eq(vd_add_ledger_line(v, line, 1), 0);
    vd_report r = rep_at(file, -1);
    r.after_crash = 1; /* the open after the crash made it */
    vd_add_report(v, &r);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    vd_result res;
    vd_settle(v, &res);
    vd_free(v);
    return res;
}

Test(oracle_door_places, a_crash_tear_promised_detected_explains_the_refused_open) {
    vd_result res = settle_torn_open("MANIFEST-000010");
    cr_assert(res.pass);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert_eq(res.cls[VD_TORN_WRITE].unrecoverable_by_design, 1);
}

Test(oracle_door_places, a_crash_tear_promised_repaired_explains_no_report) {
    vd_result res = settle_torn_open("000403.log");
    cr_assert_not(res.pass, "the row promises recovery past the tear: a refused open is the engine's");
    cr_assert_eq(res.cls[VD_TORN_WRITE].unrecoverable_by_design, 0);
}

/* V1f: a report that names no file (RocksDB's "Corruption" from a block
 * it could not parse, with no file in its message) is explained by the
 * door's damage in any file, crediting nothing; with no such damage in
 * the run it is a false alarm. */
Test(oracle_door_places, a_report_naming_no_file_is_explained_by_door_damage_anywhere) {
    vd_result res;
    int o = settle_one("{\"seq\":0,\"class\":\"bitflip_inflight\",\"point\":\"door/inflight/read\","
                       "\"file\":\"000089.sst\",\"block\":5,\"bit\":3,\"mask\":\"0x8\"}",
                       rep_at("", -1), &res);
    cr_assert(res.pass);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert_neq(o, VD_DETECTED, "a report that names no place credits no injection");
    settle_one("{\"seq\":0,\"class\":\"write_error\",\"point\":\"door/io/write\",\"file\":\"MANIFEST-000010\","
               "\"err\":\"EIO\",\"op\":5,\"thread\":0}",
               rep_at("", -1), &res);
    cr_assert_eq(res.total.false_alarm, 1, "an I/O error changes no byte: it explains no report");
}
