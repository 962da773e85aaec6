/*
 * test_oracle.c -- the oracle's judge (oracle/verdict.h) on hand-made
 * ledgers, reports and observations: each rule V1-V7 and each outcome.
 *
 * The oracle is pure (no engine), so its sources are compiled in here
 * directly (oracle_helpers.h).  The narrow per-KV codes' escape bound has
 * its own file, test_oracle_narrow_codes.c.
 */
#include "oracle_helpers.h"

static vd_report rep(const char *layer, const char *file, int64_t block, int64_t offset) {
    vd_report r = {.block = block, .offset = offset};
    snprintf(r.layer, sizeof r.layer, "%s", layer);
    snprintf(r.file, sizeof r.file, "%s", file);
    return r;
}

Test(oracle_ledger, parses_a_flat_line) {
    vd_injection i;
    cr_assert_eq(
        vd_parse_ledger_line("{\"seq\":7,\"phase\":\"run\",\"class\":\"bitflip_wal\",\"point\":\"tick/wal\","
                             "\"file\":\"wal/0000000000100000\",\"block\":3,\"offset\":12288,\"len\":4096,"
                             "\"mask\":\"0x4\",\"bit\":17,\"op\":4294967301,\"thread\":1,\"note\":\"a \\\"q\\\"\"}",
                             &i),
        0);
    cr_assert_eq(i.seq, 7);
    cr_assert_eq(i.cls, VD_BITFLIP_WAL);
    cr_assert_str_eq(i.file, "wal/0000000000100000");
    cr_assert_eq(i.block, 3);
    cr_assert_eq(i.offset, 12288);
    cr_assert_eq(i.op, 4294967301ll);
    cr_assert_eq(i.thread, 1);
    cr_assert_str_eq(i.mask, "0x4");
    cr_assert_eq(vd_parse_ledger_line("not json", &i), -1);
    cr_assert_eq(vd_parse_ledger_line("{\"class\":\"no_such_class\"}", &i), 0);
    cr_assert_eq(i.cls, -1);
}

Test(oracle_match, data_block_and_misdirected_offset) {
    vd_config c = judging();
    vd_injection i;
    vd_parse_ledger_line(
        "{\"class\":\"misdirected_write\",\"file\":\"data\",\"block\":5,\"offset\":36864,\"len\":4096}", &i);
    vd_report r5 = rep("page_checksum", "data", 5, 20480), r9 = rep("page_checksum", "data", 9, 36864),
              r6 = rep("page_checksum", "data", 6, 24576), wal = rep("wal_record", "wal/0000000000000000", 5, -1);
    cr_assert(vd_report_matches(&c, &r5, &i)); /* the block it was meant for */
    cr_assert(vd_report_matches(&c, &r9, &i)); /* where it landed */
    cr_assert_not(vd_report_matches(&c, &r6, &i));
    cr_assert_not(vd_report_matches(&c, &wal, &i));
}

Test(oracle_match, wal_block_within_one_and_lsn_reports) {
    vd_config c = judging();
    vd_injection i;
    vd_parse_ledger_line("{\"class\":\"bitflip_wal\",\"file\":\"wal/0000000000100000\",\"block\":10}", &i);
    vd_report near = rep("wal_record", "wal/0000000000100000", 11, -1);
    vd_report far = rep("wal_record", "wal/0000000000100000", 13, -1);
    vd_report other = rep("wal_record", "wal/0000000000000000", 10, -1);
    /* the log directory and an LSN: segment 0x100000, block 9 */
    vd_report by_lsn = rep("wal_record", "wal", -1, 0x100000 + 9 * 4096 + 100);
    vd_report by_lsn_far = rep("wal_record", "wal", -1, 0x100000 + 20 * 4096);
    cr_assert(vd_report_matches(&c, &near, &i));
    cr_assert_not(vd_report_matches(&c, &far, &i));
    cr_assert_not(vd_report_matches(&c, &other, &i));
    cr_assert(vd_report_matches(&c, &by_lsn, &i));
    cr_assert_not(vd_report_matches(&c, &by_lsn_far, &i));
}

Test(oracle_verdict, detected_masked_and_false_alarm) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":3}", 0);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":3}", 0);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":8}", 0);
    vd_report r = rep("page_checksum", "data", 3, 12288);
    vd_add_report(v, &r);
    vd_add_report(v, &r); /* the same place again: one report */
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].injected, 3);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].detected, 2); /* one report confirms both at block 3 */
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].masked, 1);
    cr_assert(res.pass);
    cr_assert_eq(res.reports, 1);
    vd_report stray = rep("page_checksum", "data", 40, -1);
    vd_add_report(v, &stray);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_NONE].false_alarm, 1);
    cr_assert_eq(vd_false_alarm_count(v), 1);
    cr_assert_eq(vd_false_alarm_at(v, 0)->block, 40);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_verdict, error_classes_detected_or_swallowed) {
    vd_config c = judging();
    c.class_on[VD_READ_ERROR] = c.class_on[VD_SHORT_IO] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"read_error\",\"op\":100,\"thread\":0,\"err\":\"EIO\"}", 0);
    vd_add_ledger_line(v, "{\"class\":\"read_error\",\"op\":101,\"thread\":0,\"err\":\"EIO\"}", 0);
    vd_add_ledger_line(v, "{\"class\":\"read_error\",\"op\":100,\"thread\":1,\"err\":\"EIO\"}",
                       1); /* a dead process's */
    vd_add_ledger_line(v, "{\"class\":\"short_io\",\"op\":102,\"thread\":0}", 0);
    vd_add_ledger_line(v, "{\"class\":\"short_io\",\"op\":103,\"thread\":0}", 0);
    vd_observation o = {.kind = VD_OBS_ERROR, .thread = 0, .op = 100, .status = 3};
    vd_add_observation(v, &o);
    o.op = 103;
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_READ_ERROR].injected, 3);
    cr_assert_eq(res.cls[VD_READ_ERROR].detected, 1);
    cr_assert_eq(res.cls[VD_READ_ERROR].swallowed, 1); /* op 101 returned ok */
    cr_assert_eq(res.cls[VD_READ_ERROR].masked, 1);    /* carried: its call died */
    cr_assert_eq(res.cls[VD_SHORT_IO].masked, 1);      /* completed by the engine */
    cr_assert_eq(res.cls[VD_SHORT_IO].detected, 1);    /* a failure it caused, reported */
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_verdict, each_error_is_matched_to_its_own_calls_observation_among_many) {
    /* V3 looks an injection's (thread, op) up among the error observations
     * (sorted once: short_io at 1 in 2 makes millions of both): every
     * other call of two threads returned its error, and only those count
     * detected, whatever the order the observations came in. */
    vd_config c = judging();
    c.class_on[VD_SHORT_IO] = 1;
    vd_ctx *v = vd_new(&c);
    char line[128];
    for (int op = 0; op < 4000; op++)
        for (int th = 0; th < 2; th++) {
            snprintf(line, sizeof line, "{\"class\":\"short_io\",\"op\":%d,\"thread\":%d}", op, th);
            vd_add_ledger_line(v, line, 0);
        }
    for (int op = 3999; op >= 0; op -= 2)
        for (int th = 1; th >= 0; th--) {
            vd_observation o = {.kind = VD_OBS_ERROR, .thread = th, .op = op + th - 1, .status = 3};
            vd_add_observation(v, &o);
        }
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_SHORT_IO].injected, 8000);
    cr_assert_eq(res.cls[VD_SHORT_IO].detected, 4000); /* thread 0's even calls, thread 1's odd ones */
    cr_assert_eq(res.cls[VD_SHORT_IO].masked, 4000);
    vd_free(v);
}

Test(oracle_verdict, crash_classes_follow_the_post_crash_check) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_KILL] = c.class_on[VD_TORN_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"phase\":\"run\",\"class\":\"kill\",\"point\":\"kill/wal/after_sync\"}", 1);
    vd_add_ledger_line(v, "{\"phase\":\"powerloss\",\"class\":\"power_loss\",\"file\":\"data\",\"offset\":0}", 1);
    vd_add_ledger_line(
        v, "{\"phase\":\"powerloss\",\"class\":\"torn_write\",\"file\":\"data\",\"offset\":8192,\"len\":4096}", 1);
    vd_set_crash_check(v, 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].repaired, 1);
    cr_assert_eq(res.cls[VD_POWER_LOSS].repaired, 1);
    cr_assert_eq(res.cls[VD_TORN_WRITE].repaired, 1);
    cr_assert(res.pass);
    vd_set_crash_check(v, 0);
    vd_observation o = {.kind = VD_OBS_LOST_COMMIT, .after_crash = 1};
    vd_add_observation(v, &o);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].lost, 1);
    cr_assert_eq(res.cls[VD_POWER_LOSS].lost, 2); /* itself, and the lost commit blamed on the newest crash line */
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_verdict, external_kill_counts_once) {
    vd_config c = judging();
    vd_ctx *v = vd_new(&c);
    vd_note_external_kill(v);
    vd_set_crash_check(v, 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].injected, 1);
    cr_assert_eq(res.cls[VD_KILL].repaired, 1);
    vd_free(v);
}

Test(oracle_verdict, wrong_values_fail_a_judging_run) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":3}", 0);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .key = 42, .inj_mark = 1};
    vd_add_observation(v, &o);
    o.kind = VD_OBS_RESURRECTED;
    o.inj_mark = 0; /* before any injection: nothing to blame */
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.measuring, 0);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].wrong_value, 1);
    cr_assert_eq(res.cls[VD_NONE].resurrected, 1);
    cr_assert_eq(res.total.wrong_value + res.total.resurrected, 2);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_mode, measuring_classes) {
    vd_config c = judging();
    char why[256];
    cr_assert_not(vd_measuring(&c, why, sizeof why));
    c.class_on[VD_BITFLIP_PAGE] = 1;
    cr_assert_not(vd_measuring(&c, why, sizeof why));
    c.data_checksums = 0;
    cr_assert(vd_measuring(&c, why, sizeof why));
    cr_assert(strstr(why, "data_checksums off"));
    c = judging();
    c.class_on[VD_TORN_WRITE] = 1;
    cr_assert_not(vd_measuring(&c, NULL, 0));
    c.full_page_writes = 0;
    cr_assert(vd_measuring(&c, NULL, 0));
    c = judging();
    c.class_on[VD_LOST_WRITE] = 1;
    cr_assert(vd_measuring(&c, NULL, 0));
    c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = 1;
    cr_assert_not(vd_measuring(&c, NULL, 0), "judged: the landing block is detected (V6b)");
    c.data_checksums = 0;
    cr_assert(vd_measuring(&c, NULL, 0));
    c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    cr_assert(vd_measuring(&c, NULL, 0)); /* w = 0 */
    c.protection_bytes = 8;
    cr_assert_not(vd_measuring(&c, NULL, 0));
    c = judging();
    c.class_on[VD_READ_ERROR] = c.class_on[VD_BITFLIP_WAL] = c.class_on[VD_SYNC_ERROR] = 1;
    cr_assert_not(vd_measuring(&c, NULL, 0));
}

Test(oracle_mode, measuring_run_counts_symptoms_as_undetectable) {
    vd_config c = judging();
    c.class_on[VD_LOST_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"lost_write\",\"file\":\"data\",\"block\":7,\"offset\":28672}", 0);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .inj_mark = 1};
    vd_add_observation(v, &o);
    o.kind = VD_OBS_LOST;
    vd_add_observation(v, &o);
    /* V1b: a sibling check that met the stale page reports its own block */
    vd_report r = rep("structure", "data", 6, 24576);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert(res.measuring);
    cr_assert_eq(res.cls[VD_LOST_WRITE].undetectable, 3); /* the injection and both symptoms */
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
    /* a synced commit lost by recovery is a failure even when measuring */
    o.kind = VD_OBS_LOST_COMMIT;
    o.after_crash = 1;
    vd_add_observation(v, &o);
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_verdict, cascade_reports_are_explained) {
    vd_config c = judging();
    c.class_on[VD_TORN_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"torn_write\",\"file\":\"data\",\"block\":84,\"offset\":345088,\"len\":3072}",
                       0);
    vd_report torn = rep("page_checksum", "data", 84, 344064), sib = rep("structure", "data", 82, 335872);
    vd_add_report(v, &sib);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1); /* alone, the sibling report is unexplained */
    vd_add_report(v, &torn);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 0); /* V1c: a consequence of the torn page */
    cr_assert_eq(res.cls[VD_TORN_WRITE].detected, 1);
    cr_assert(res.pass);
    vd_free(v);
}

Test(oracle_verdict, escape_rates_are_empty_without_codes) {
    vd_config c = judging();
    vd_ctx *v = vd_new(&c);
    char buf[64];
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert_str_eq(buf, "{}");
    vd_free(v);
}

Test(oracle_verdict, a_dead_process_crash_is_blamed_on_its_last_fault) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":2}", 1);
    vd_observation o = {.kind = VD_OBS_CRASH, .carried = 1};
    vd_add_observation(v, &o);
    vd_set_crash_check(v, 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].crash, 1); /* a crash fails even a measuring run */
    cr_assert(res.measuring);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* The check after reopening this process's own failed handle runs as
 * after a crash, but nothing was carried over from an earlier process:
 * what it finds is blamed on this process's injections, not left
 * unattributed (found with cache flips at w = 2: an escape that reached
 * disk was seen by the post-open check and by later reads). */
Test(oracle_verdict, check_after_reopening_own_failed_handle_blames_own_injections) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 2;
    vd_ctx *v = vd_new(&c);
    for (int i = 0; i < 2; i++)
        vd_add_ledger_line(v,
                           "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":9,\"mask\":\"0x2\","
                           "\"part_offset\":300,\"part_len\":21}",
                           0);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .thread = 0, .op = 77, .key = 5, .inj_mark = 2, .after_crash = 1};
    vd_add_observation(v, &o);
    o.kind = VD_OBS_LOST, o.key = 6;
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_NONE].wrong_value + res.cls[VD_NONE].lost, 0, "left unattributed");
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 2, "one escape of a paired flip, within the bound");
    cr_assert(res.pass);
    vd_free(v);
}

/* A WAL record spanning segments (a large value in small segments): its
 * checksum failure is reported at its first block, in its first segment;
 * damage in a later segment it spans is the same record's. */
Test(oracle_verdict, wal_report_matches_damage_in_a_later_segment_of_the_record) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_WAL] = 1;
    c.wal_segment_size = 1u << 16;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_wal\",\"file\":\"wal/00000000018f0000\",\"block\":9}", 0);
    vd_report r = rep("wal_record", "wal/00000000018e0000", 4, 4 * 4096);
    r.entry = 63; /* spans 63 blocks past its first: to 0x18e0000 + 67 blocks */
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_WAL].detected, 1);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
    vd_free(v);
    /* Past the record's span it is another place: a false alarm. */
    v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"bitflip_wal\",\"file\":\"wal/0000000001930000\",\"block\":9}", 0);
    vd_add_report(v, &r);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1);
    vd_free(v);
}

/* ---- V0 and V8: the power-loss step explains nothing; a database that
 * does not come back after a crash is a failure unless an earlier
 * injection explains it by design.  Each test names the engine bug the
 * rule could otherwise hide. */

static vd_report rep_after(const char *layer, const char *file, int64_t block, int after) {
    vd_report r = rep(layer, file, block, -1);
    r.after_crash = after;
    return r;
}

/* A crash to judge: LINES (NULL-ended) carried from the dead process and
 * the power-loss step, REPS made while reopening, the open's outcome
 * CHECK; settled into RES.  The caller frees the context. */
static vd_ctx *judge_restart(vd_config c, const char *const *lines, const vd_report *reps, int nrep, int check,
                             vd_result *res) {
    vd_ctx *v = vd_new(&c);
    for (; *lines; lines++) vd_add_ledger_line(v, *lines, 1);
    for (int i = 0; i < nrep; i++) vd_add_report(v, &reps[i]);
    vd_set_crash_check(v, check);
    vd_settle(v, res);
    return v;
}

#define PL_ROLLBACK                                                            \
    "{\"phase\":\"powerloss\",\"class\":\"power_loss\",\"point\":\"powerloss/" \
    "rollback\",\"file\":\"data\",\"offset\":20480,\"len\":4096}"
#define PL_TEAR                                                                \
    "{\"phase\":\"powerloss\",\"class\":\"torn_write\",\"point\":\"powerloss/" \
    "tear\",\"file\":\"data\",\"offset\":20480,\"len\":4096}"
#define RUN_FLIP "{\"phase\":\"run\",\"class\":\"bitflip_page\",\"point\":\"tick/page\",\"file\":\"data\",\"block\":5}"

/* Hides: recovery that does not repair a page the power-loss step rolled
 * back or tore (a missing full-page image at the redo point). */
Test(oracle_recovery, a_report_at_a_block_the_power_loss_step_tore_is_unrecoverable) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_TORN_WRITE] = 1;
    const char *lines[] = {PL_ROLLBACK, PL_TEAR, NULL};
    vd_report r = rep_after("page_checksum", "data", 5, 1);
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, &r, 1, VD_CHECK_NO_OPEN, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable, 1);
    cr_assert_eq(res.cls[VD_POWER_LOSS].masked, 0);
    cr_assert_eq(res.cls[VD_TORN_WRITE].detected, 0, "the power-loss step's tear explains nothing (V0)");
    cr_assert_eq(res.total.false_alarm, 0, "counted once, as unrecoverable");
    cr_assert(res.unrecoverable);
    cr_assert_str_eq(res.by_design, "");
    cr_assert(strstr(res.unrecoverable_why, "block=5") != NULL);
    vd_free(v);
}

/* Hides: the same bug when the database opens but a page stays torn. */
Test(oracle_recovery, an_opened_database_reporting_a_torn_page_is_unrecoverable) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_TORN_WRITE] = 1;
    const char *lines[] = {PL_TEAR, PL_ROLLBACK, NULL};
    vd_report r = rep_after("page_checksum", "data", 5, 1);
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, &r, 1, VD_CHECK_PASSED, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable, 1);
    cr_assert_eq(res.cls[VD_POWER_LOSS].repaired, 0);
    vd_free(v);
}

/* Hides: a torn page later read by the workload (not by the check right
 * after the open) when recovery left it torn. */
Test(oracle_recovery, a_later_report_at_a_block_the_power_loss_step_changed_is_a_false_alarm) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_TORN_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, PL_TEAR, 1);
    vd_set_crash_check(v, VD_CHECK_PASSED);
    vd_report r = rep("page_checksum", "data", 5, 20480);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.false_alarm, 1);
    vd_free(v);
}

/* With full_page_writes off no image exists: a power-loss tear is a
 * detected torn page, and a database it keeps from opening is
 * unrecoverable by design, named. */
Test(oracle_recovery, a_power_loss_tear_without_full_page_writes_is_unrecoverable_by_design) {
    vd_config c = judging();
    c.full_page_writes = 0;
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_TORN_WRITE] = 1;
    const char *lines[] = {PL_ROLLBACK, PL_TEAR, NULL};
    vd_report r = rep_after("page_checksum", "data", 5, 1);
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, &r, 1, VD_CHECK_NO_OPEN, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable_by_design, 1);
    cr_assert(strstr(res.by_design, "torn_write at powerloss/tear") != NULL, "%s", res.by_design);
    vd_free(v);
}

/* A page flipped on disk before the crash that recovery had to read is
 * damage no option repairs: unrecoverable by design, named, not failed. */
Test(oracle_recovery, a_page_flipped_before_the_crash_explains_a_database_that_does_not_open) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_BITFLIP_PAGE] = 1;
    const char *lines[] = {RUN_FLIP, PL_ROLLBACK, NULL};
    vd_report r = rep_after("page_checksum", "data", 5, 1);
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, &r, 1, VD_CHECK_NO_OPEN, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable_by_design, 1);
    cr_assert_eq(res.cls[VD_POWER_LOSS].masked, 0);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].detected, 1);
    cr_assert(strstr(res.by_design, "bitflip_page at tick/page file=data block=5 (before the crash)") != NULL, "%s",
              res.by_design);
    vd_free(v);
}

#define CTL_FLIP                                                                                      \
    "{\"phase\":\"run\",\"class\":\"bitflip_page\",\"point\":\"crash/control\",\"file\":\"control\"," \
    "\"block\":0,\"offset\":0,\"len\":512,\"region\":\"control\",\"pre\":\"0x11\",\"post\":\"0x22\"}"

/* A bit of the control file flipped at the crash: the open's control check
 * (its own checksum, the flip's sole detector) reports it and the database
 * does not open: detected, and unrecoverable by design, named. */
Test(oracle_recovery, a_control_file_flipped_at_the_crash_explains_a_database_that_does_not_open) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_BITFLIP_PAGE] = 1;
    const char *lines[] = {CTL_FLIP, PL_ROLLBACK, NULL};
    vd_report r = rep("control", "control", -1, 0);
    r.after_crash = 1;
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, &r, 1, VD_CHECK_NO_OPEN, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].detected, 1);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable_by_design, 1);
    cr_assert(strstr(res.by_design, "bitflip_page at crash/control file=control") != NULL, "%s", res.by_design);
    vd_free(v);
}

/* Hides: a control-file check that leaves some bytes unchecked (a checksum
 * over part of the file): the flipped file, still there when the open
 * read it (stress marks it present), opens with no report: swallowed. */
Test(oracle_recovery, a_control_file_flip_the_open_read_and_did_not_report_is_swallowed) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, CTL_FLIP, 1);
    vd_add_ledger_line(v, PL_ROLLBACK, 1);
    vd_set_crash_check(v, VD_CHECK_PASSED);
    vd_mark_present(v, 0);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].swallowed, 1);
    vd_free(v);
    /* Gone (a power loss brought the previous file back): masked. */
    v = vd_new(&c);
    vd_add_ledger_line(v, CTL_FLIP, 1);
    vd_set_crash_check(v, VD_CHECK_PASSED);
    vd_settle(v, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].masked, 1);
    vd_free(v);
}

/* Hides: recovery failing on one page while an unrelated injection
 * elsewhere is used as the excuse.  Every report of the failed open must
 * be explained. */
Test(oracle_recovery, one_unexplained_report_keeps_a_failed_open_unrecoverable) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_BITFLIP_PAGE] = 1;
    const char *lines[] = {RUN_FLIP, PL_ROLLBACK, NULL};
    vd_report a = rep_after("page_checksum", "data", 5, 1), b = rep_after("page_checksum", "data", 9, 1);
    vd_report reps[] = {a, b};
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, reps, 2, VD_CHECK_NO_OPEN, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable, 1);
    cr_assert(strstr(res.unrecoverable_why, "block=9") != NULL, "%s", res.unrecoverable_why);
    vd_free(v);
}

/* Hides: an engine that fails to open after a crash without saying why. */
Test(oracle_recovery, a_database_that_does_not_open_without_a_report_is_unrecoverable) {
    vd_config c = judging();
    vd_ctx *v = vd_new(&c);
    vd_note_external_kill(v);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_KILL].unrecoverable, 1);
    cr_assert_eq(res.cls[VD_KILL].masked, 0);
    vd_free(v);
}

/* Hides: anything, by calling a crash that was never checked masked. */
Test(oracle_recovery, a_crash_is_never_masked) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, PL_ROLLBACK, 1);
    vd_result res;
    vd_settle(v, &res); /* no open after the crash was judged */
    cr_assert_eq(res.cls[VD_POWER_LOSS].masked, 0);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* Hides: recovery after an fsync failure that does not rebuild the data
 * the kernel dropped (the drop is a state to recover from, V0). */
Test(oracle_recovery, dirty_data_dropped_by_a_failed_fsync_explains_nothing) {
    vd_config c = judging();
    c.class_on[VD_SYNC_ERROR] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v,
                       "{\"class\":\"sync_error\",\"point\":\"sync/drop_dirty\",\"file\":\"data\",\"offset\":20480,"
                       "\"len\":4096,\"thread\":0,\"op\":7}",
                       0);
    vd_report r = rep_after("page_checksum", "data", 5, 2);
    vd_add_report(v, &r);
    vd_note_reopen_failed(v);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.unrecoverable, 1);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].detected, 0);
    vd_free(v);
}

/* V1 for the crash classes: a WAL report next to a block the power-loss
 * step rolled back is not explained by it (a damaged synced record
 * would hide there). */
Test(oracle_recovery, a_wal_report_next_to_a_rolled_back_block_is_unrecoverable) {
    vd_config c = judging();
    c.class_on[VD_POWER_LOSS] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v,
                       "{\"phase\":\"powerloss\",\"class\":\"power_loss\",\"point\":\"powerloss/rollback\","
                       "\"file\":\"wal/0000000000100000\",\"offset\":40960,\"len\":4096}",
                       1);
    vd_report r = rep_after("wal_record", "wal/0000000000100000", 11, 1);
    vd_add_report(v, &r);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable, 1);
    vd_free(v);
}

/* V1b for the crash classes: with checksums off a power-loss tear leaves
 * a page with no checksum to fail; a structure report it would have
 * explained is now the engine's (full_page_writes on must rebuild it). */
Test(oracle_recovery, a_structure_report_after_a_power_loss_tear_with_checksums_off_is_not_explained) {
    vd_config c = judging();
    c.data_checksums = 0;
    c.class_on[VD_POWER_LOSS] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, PL_TEAR, 1);
    vd_set_crash_check(v, VD_CHECK_PASSED);
    vd_report r = rep("structure", "data", 7, -1);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* The check after reopening this process's own failed handle: a report
 * of its own earlier flip explains a failed reopen (by design, named). */
Test(oracle_recovery, a_failed_reopen_explained_by_an_own_flip_is_by_design) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, RUN_FLIP, 0);
    vd_report r = rep_after("page_checksum", "data", 5, 2);
    vd_add_report(v, &r);
    vd_note_reopen_failed(v);
    vd_result res;
    vd_settle(v, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].unrecoverable_by_design, 1);
    cr_assert(strstr(res.by_design, "(this process)") != NULL, "%s", res.by_design);
    vd_free(v);
}

/* A data write that failed once part of it was issued (a short transfer,
 * then EIO on the rest) may leave its page torn; the engine poisons the
 * handle and the reopen's recovery must rebuild the page from its image.
 * Found by whitebox seed 20261261 (iteration 31306679495368): with
 * full_page_writes and checksums off the reopen met block 26 half new,
 * half old, which V0 then called unrecoverable.  What the rule still
 * catches: with full_page_writes on, a recovery that does not rebuild the
 * tear (planted bug redo-reads-before-image's kind); a report at another
 * block; and an error that failed before anything was issued, which
 * changes no byte. */
#define PARTIAL_SUBMIT \
    "{\"class\":\"write_error\",\"point\":\"engine/io/uring/submit\",\"thread\":0,\"op\":7,\"err\":\"EIO\"}"
#define PARTIAL_LINE                                                                                           \
    "{\"class\":\"write_error\",\"point\":\"write/partial\",\"file\":\"data\",\"block\":26,\"offset\":106496," \
    "\"len\":2048,\"thread\":0,\"op\":7,\"err\":\"EIO\"}"

static void judge_partial_write(vd_config c, const char *line, int64_t block, vd_result *res) {
    c.class_on[VD_WRITE_ERROR] = c.class_on[VD_SHORT_IO] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, PARTIAL_SUBMIT, 0);
    if (line) vd_add_ledger_line(v, line, 0);
    vd_observation o = {.kind = VD_OBS_ERROR, .thread = 0, .op = 7, .status = 3};
    vd_add_observation(v, &o);
    vd_report r = rep_after("structure", "data", block, 2);
    vd_add_report(v, &r);
    vd_note_reopen_failed(v);
    vd_settle(v, res);
    vd_free(v);
}

Test(oracle_recovery, a_write_that_failed_part_way_explains_a_reopen_report_at_its_block_without_page_images_only) {
    vd_config off = judging();
    off.data_checksums = off.full_page_writes = 0;
    vd_result res;
    judge_partial_write(off, PARTIAL_LINE, 26, &res);
    cr_assert(res.pass, "%s", res.unrecoverable_why);
    cr_assert_eq(res.cls[VD_WRITE_ERROR].injected, 2);
    cr_assert_eq(res.cls[VD_WRITE_ERROR].detected, 2);
    cr_assert_eq(res.cls[VD_WRITE_ERROR].unrecoverable_by_design, 1);
    cr_assert(strstr(res.by_design, "write/partial") != NULL, "%s", res.by_design);
    /* another block: the tear does not reach it */
    judge_partial_write(off, PARTIAL_LINE, 27, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.unrecoverable, 1);
    /* the error alone (failed before anything was issued): no byte changed */
    judge_partial_write(off, NULL, 26, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.unrecoverable, 1);
    /* images on: recovery must rebuild the torn page */
    vd_config on = judging();
    on.data_checksums = 0;
    judge_partial_write(on, PARTIAL_LINE, 26, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.unrecoverable, 1);
    cr_assert_eq(res.cls[VD_WRITE_ERROR].unrecoverable_by_design, 0);
}

/* V6b: a judging run injects misdirected writes.  The page that landed at
 * the wrong block is detected there; a value read from the block that
 * missed its write is a lost write's symptom (undetectable), and the run
 * still judges everything else: a false alarm elsewhere still fails it. */
Test(oracle_verdict, misdirected_writes_are_judged_at_the_block_they_land_on) {
    vd_config c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(
        v, "{\"class\":\"misdirected_write\",\"file\":\"data\",\"block\":5,\"offset\":36864,\"len\":4096}", 0);
    vd_report landed = rep("page_checksum", "data", 9, 36864);
    vd_add_report(v, &landed);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .inj_mark = 1, .key = 3};
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.measuring);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].detected, 1);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].undetectable, 1);
    vd_report other = rep("page_checksum", "data", 12, -1);
    vd_add_report(v, &other);
    vd_settle(v, &res);
    cr_assert_not(res.pass, "a report at a block nothing touched still fails the run");
    vd_free(v);
}

/* Hides: any corruption in a file where an fsync failed (the injection
 * names only its file, so V1 would match every block of it).  An I/O
 * error changes no byte: it explains no report (V0). */
Test(oracle_recovery, an_fsync_failure_explains_no_report_in_its_file) {
    vd_config c = judging();
    c.class_on[VD_SYNC_ERROR] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"sync_error\",\"point\":\"hook/sync\",\"file\":\"data\",\"thread\":0,\"op\":7}",
                       1);
    vd_note_external_kill(v);
    vd_report r = rep_after("page_checksum", "data", 5, 1);
    vd_add_report(v, &r);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_KILL].unrecoverable, 1);
    cr_assert_str_eq(res.by_design, "");
    vd_free(v);
}

/* The same damage reported by the dead process's reopen of its failed
 * handle (carried, after_crash 2) and by this open after the crash (1) is
 * one place, judged as the crash's: found by crashtest.py, where a WAL
 * flip that explained the failed open was left unexplained. */
Test(oracle_recovery, one_place_reported_by_two_recoveries_is_judged_once_as_the_crashs) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_WAL] = c.class_on[VD_POWER_LOSS] = 1;
    const char *lines[] = {
        "{\"class\":\"bitflip_wal\",\"point\":\"tick/wal\",\"file\":\"wal/0000000001080000\",\"block\":55}",
        PL_ROLLBACK, NULL};
    vd_report a = rep_after("wal_record", "wal/0000000001080000", 54, 2),
              b = rep_after("wal_record", "wal/0000000001080000", 54, 1);
    a.entry = b.entry = 1;
    vd_report reps[] = {a, b};
    vd_result res;
    vd_ctx *v = judge_restart(c, lines, reps, 2, VD_CHECK_NO_OPEN, &res);
    cr_assert(res.pass, "%s", res.unrecoverable_why);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable_by_design, 1);
    cr_assert(strstr(res.by_design, "bitflip_wal") != NULL);
    vd_free(v);
}

/* V1b: a misdirected write in the data file added to V, then settled: the
 * cross-page report V holds is explained and the run passes. */
static void misdirected_write_explains(vd_ctx *v) {
    vd_result res;
    vd_add_ledger_line(
        v, "{\"class\":\"misdirected_write\",\"file\":\"data\",\"block\":2,\"offset\":81920,\"len\":4096}", 0);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
}

/* V1b: a commit-log page that a misdirected write left old makes intact
 * leaves' hint bits disagree with it: the "version" report names the leaf,
 * not the damaged page (found by crashtest.py whitebox with misdirected
 * writes).  Explained, not credited; with no such injection it fails. */
Test(oracle_verdict, a_hint_report_on_an_intact_leaf_is_explained_by_a_misdirected_write) {
    vd_config c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_report r = rep("version", "data", 37, 303104);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1);
    misdirected_write_explains(v);
    vd_free(v);
}

/* hint_status (a reader with per-KV codes comparing a leaf's hint with the
 * transaction status): explained like a "version" report by a misdirected
 * write in the file (the commit-log page it missed is old: found by the
 * nightly whitebox and blackbox runs of 2026-12-02, seeds 20261251 and
 * 20261252, as unrecoverable "after reopening a failed handle" when the
 * engine named it kv_protection), and at w >= 2 by a cache flip at its
 * block, as kv_protection is (V1e).  What it still catches: with neither,
 * it is a false alarm (the planted hint-aborted-while-in-progress makes
 * exactly this report), and a cache flip at another block explains
 * nothing; made while reopening a failed handle, it is unrecoverable. */
Test(oracle_verdict, a_hint_status_report_is_explained_by_a_misdirected_write_or_a_cache_flip_there_only) {
    vd_config c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 2;
    vd_result res;
    /* nothing injected: a false alarm */
    vd_ctx *v = vd_new(&c);
    vd_report r = rep("hint_status", "data", 37, 37 * 4096);
    r.entry = 3;
    vd_add_report(v, &r);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1);
    cr_assert_not(res.pass);
    /* a cache flip at another block: still a false alarm */
    vd_add_ledger_line(v, "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":36}", 0);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1);
    /* a cache flip at its block: detected */
    vd_add_ledger_line(v, "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":37}", 0);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].detected, 1);
    vd_free(v);
    /* a misdirected write in the file: explained */
    v = vd_new(&c);
    vd_add_report(v, &r);
    misdirected_write_explains(v);
    vd_free(v);
    /* made while reopening a failed handle, with nothing to explain it */
    vd_report a = rep_after("hint_status", "data", 37, 2);
    v = vd_new(&c);
    vd_add_report(v, &a);
    vd_settle(v, &res);
    cr_assert(res.unrecoverable);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* Hides (V4b): a page check that lets damage through (checksums skipped
 * on read, a block seed left out, the zero-page rule off), when every
 * injection without a report counted as masked: with skip-checksum, a
 * flip that stayed on disk through the final verify of every block passed
 * as "overwritten or never needed". */
Test(oracle_verdict, damage_still_on_disk_after_the_final_verify_is_swallowed_not_masked) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = c.class_on[VD_ZERO_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":3}", 1); /* carried */
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":4}", 0);
    vd_add_ledger_line(v, "{\"seq\":1,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":5}", 0);
    vd_add_ledger_line(v, "{\"seq\":2,\"class\":\"zero_page\",\"file\":\"data\",\"block\":6}", 0);
    vd_add_ledger_line(v, "{\"seq\":3,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":7}", 0);
    vd_note_damage_present(v, 0); /* block 4, not the carried line with the same seq */
    vd_note_damage_present(v, 2);
    vd_note_damage_present(v, 3);
    vd_report r = rep("page_checksum", "data", 7, 7 * 4096);
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].swallowed, 1); /* block 4 */
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].masked, 2);    /* block 3 (carried), block 5 (gone) */
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].detected, 1);  /* block 7: present and reported */
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 1);
    cr_assert_not(res.pass);
    vd_free(v);
    /* Measuring the class (checksums off): undetectable, not a failure. */
    c.data_checksums = 0;
    v = vd_new(&c);
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":4}", 0);
    vd_note_damage_present(v, 0);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].undetectable, 1);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].swallowed, 0);
    vd_free(v);
}

/* V4b at the high-water mark: a block at or past the mark of the final
 * verify is outside the database (the overflow pages of a batch a crash
 * cut, written before their allocation was logged, lie past it after
 * recovery), so a zeroed or flipped block there is masked; one block
 * below the mark is the database's, and damage there that nothing
 * reported is swallowed (hides: zero-page-last-block-fresh's block + 1
 * comparison, and any reader that takes the last block for a fresh one). */
Test(oracle_verdict, damage_past_the_final_high_water_mark_is_outside_the_database) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = c.class_on[VD_ZERO_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"zero_page\",\"file\":\"data\",\"block\":125}", 1);
    vd_add_ledger_line(v, "{\"seq\":1,\"class\":\"zero_page\",\"file\":\"data\",\"block\":126}", 1);
    vd_add_ledger_line(v, "{\"seq\":2,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":147}", 1);
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"zero_page\",\"file\":\"data\",\"block\":130}", 0);
    vd_note_final_hwm(v, 126);
    for (size_t k = 0; k < 3; k++) vd_mark_present(v, k);
    vd_note_damage_present(v, 0);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 1, "block 125, below the mark");
    cr_assert_eq(res.cls[VD_ZERO_PAGE].masked, 2, "blocks 126 and 130, at and past it");
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].masked, 1);
    cr_assert_not(res.pass);
    vd_free(v);
    /* Without the mark (an engine with no page reader) every block counts. */
    v = vd_new(&c);
    vd_add_ledger_line(v, "{\"seq\":1,\"class\":\"zero_page\",\"file\":\"data\",\"block\":126}", 1);
    vd_mark_present(v, 0);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 1);
    vd_free(v);
}

/* Hides (V1d): a broken zero-page rule or page checksum, when a structure
 * check that happens to trip over the same damaged page gets the credit:
 * the damage counts as detected although its detector never fired. */
Test(oracle_verdict, only_the_classs_own_detector_credits_a_detection) {
    vd_config c = judging();
    c.class_on[VD_ZERO_PAGE] = c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"zero_page\",\"file\":\"data\",\"block\":3,\"offset\":12288}", 0);
    vd_add_ledger_line(v, "{\"seq\":1,\"class\":\"bitflip_page\",\"file\":\"data\",\"block\":5}", 0);
    vd_add_ledger_line(v, "{\"seq\":2,\"class\":\"zero_page\",\"file\":\"data\",\"block\":9,\"offset\":36864}", 0);
    vd_report a = rep("structure", "data", 3, 3 * 4096);
    vd_report b = rep("structure", "data", 5, 5 * 4096);
    vd_report z = rep("zero_page", "data", 9, 9 * 4096);
    vd_add_report(v, &a);
    vd_add_report(v, &b);
    vd_add_report(v, &z);
    vd_note_damage_present(v, 0);
    vd_note_damage_present(v, 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(vd_false_alarm_count(v), 0);         /* the structure reports are explained */
    cr_assert_eq(res.cls[VD_ZERO_PAGE].detected, 1);  /* block 9: by the zero-page rule */
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 1); /* block 3: only a structure check saw it */
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].swallowed, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* Hides (V1b): a write-back check (KV4) that lets a flipped frame out, when
 * any structure report the written page causes was explained by the cache
 * flip.  From two bytes of per-KV code on, a flip the codes let through is
 * a 1 in 65536 event: the report is a failure. */
Test(oracle_verdict, a_cache_flip_explains_a_structure_report_only_with_codes_of_one_byte_or_none) {
    for (int w = 0; w <= 2; w++) {
        vd_config c = judging();
        c.class_on[VD_BITFLIP_CACHE] = 1;
        c.protection_bytes = w;
        vd_ctx *v = vd_new(&c);
        vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":5}", 0);
        vd_report r = rep("structure", "data", 9, 9 * 4096);
        vd_add_report(v, &r);
        vd_result res;
        vd_settle(v, &res);
        cr_assert_eq(vd_false_alarm_count(v), w >= 2, "w=%d", w);
        cr_assert_eq(res.pass, w < 2, "w=%d", w);
        vd_free(v);
    }
}

/* Hides (V1e): a write-back check (KV4) that lets a flipped frame reach the
 * disk, when a page_header or structure report at the flip's block, even
 * one that keeps the database from opening, matched the cache flip (V8
 * then called the failed open "by design"). */
Test(oracle_verdict, with_two_byte_codes_only_the_codes_find_a_cache_flip) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 2;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"seq\":0,\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":0}", 0);
    vd_report k = rep("kv_protection", "data", 0, 0);
    vd_report h = rep("page_header", "data", 0, 0);
    h.after_crash = 2; /* the reopen of the own failed handle */
    vd_add_report(v, &k);
    vd_add_report(v, &h);
    vd_note_reopen_failed(v);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].detected, 1); /* the codes found it in the cache */
    cr_assert(res.unrecoverable);
    cr_assert_eq(res.by_design[0], 0); /* not by design: the flip reached the disk */
    cr_assert_not(res.pass);
    vd_free(v);
}

/* V9: checked pattern flips (faults/cacheflip.c).  N flips of PATTERN
 * with PARITY at width W, ESC of them escaped; every detected one has its
 * report, and one escaped flip shares its block with a detected one (a
 * report there must not credit it). */
static vd_ctx *checked_flips(int w, const char *pattern, const char *parity, int n, int esc, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = w;
    vd_ctx *v = vd_new(&c);
    char line[300];
    for (int i = 0; i < n; i++) {
        int block = 5 + (i < esc ? i : i - 1); /* the first detected flip shares the last escaped one's block */
        snprintf(line, sizeof line,
                 "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":%d,\"mask\":\"0x1\",\"pattern\":\"%s\","
                 "\"parity\":\"%s\",\"check\":\"%s\"}",
                 block, pattern, parity, i < esc ? "escaped" : "detected");
        vd_add_ledger_line(v, line, 0);
        if (i >= esc) {
            vd_report r = rep("kv_protection", "data", block, (int64_t)block * 8192);
            vd_add_report(v, &r);
        }
    }
    vd_settle(v, res);
    return v;
}

Test(oracle_verdict, checked_single_flip_escape_fails_at_every_width) {
    const int ws[] = {1, 2, 4, 8};
    for (int k = 0; k < 4; k++) {
        vd_result res;
        vd_ctx *v = checked_flips(ws[k], "single", "odd", 1000, 1, &res);
        cr_assert_eq(res.cls[VD_BITFLIP_CACHE].swallowed, 1, "w=%d: the escape is not credited by its block's report",
                     ws[k]);
        cr_assert_eq(res.cls[VD_BITFLIP_CACHE].detected, 999);
        cr_assert_not(res.pass);
        char buf[VD_ESCAPE_JSON_MAX];
        vd_escape_rates_json(v, buf, sizeof buf);
        cr_assert(strstr(buf, "\"single\": {\"checked\": 1000, \"detected\": 999, \"escaped\": 1, \"expected\": 0, "
                              "\"bound\": 0}"),
                  "%s", buf);
        vd_free(v);
    }
}

Test(oracle_verdict, checked_two_flips_judged_against_the_construction) {
    vd_result res;
    /* w = 1: 1 in 32 of 3200 even flips in one part: 100 expected, 100 escapes pass */
    vd_ctx *v = checked_flips(1, "double_part", "entry", 3200, 100, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 100);
    vd_free(v);
    /* twice as many: above the bound (about 134) */
    v = checked_flips(1, "double_part", "entry", 3200, 200, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].swallowed, 200);
    vd_free(v);
    /* w = 2: 2^-13, a single escape in 3200 passes (bound 6), eight do not */
    v = checked_flips(2, "byte", "entry", 3200, 1, &res);
    cr_assert(res.pass);
    vd_free(v);
    v = checked_flips(2, "byte", "entry", 3200, 8, &res);
    cr_assert_not(res.pass);
    vd_free(v);
    cr_assert_float_eq(vd_pattern_odds("span", 1), 1.0 / 64, 1e-12);
    cr_assert_float_eq(vd_pattern_odds("slot", 2), 1.0 / 32768, 1e-12);
    cr_assert_float_eq(vd_pattern_odds("page", 8), ldexp(1.0, -31), 1e-20);
    cr_assert_float_eq(vd_pattern_odds("odd", 1), 0.0, 1e-20);
}
