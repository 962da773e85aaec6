/*
 * test_oracle_an_unpromised_fault_is_counted_apart.c -- rule V10 of
 * oracle/verdict.h: what an engine does under a fault its promise table
 * promises nothing for is undetected_unpromised, in the class's column,
 * never a failure; the very same outcome under a class it promises to
 * detect is the failure it always was, so the new key hides no engine bug
 * of a class that is promised.
 *
 * The promise comes through vd_config.promise_of, as stress feeds it
 * from the adapter's table: here a table that promises nothing for
 * sync_error in the file "db.sqlite", to repair write_error anywhere, and
 * to detect the rest.
 */
#include "oracle_helpers.h"

static int table(void *ctx, int cls, const char *file, int *as_corruption) {
    (void)ctx;
    *as_corruption = cls == VD_READ_ERROR;
    if (cls == VD_SYNC_ERROR && !strcmp(file, "db.sqlite")) return VD_PROMISE_NONE;
    if (cls == VD_WRITE_ERROR) return VD_PROMISE_REPAIR;
    if (cls == VD_POWER_LOSS) return VD_PROMISE_NONE;
    return VD_PROMISE_DETECT;
}

static vd_config with_table(void) {
    vd_config c = judging();
    c.class_on[VD_SYNC_ERROR] = c.class_on[VD_READ_ERROR] = c.class_on[VD_WRITE_ERROR] = 1;
    c.promise_of = table;
    return c;
}

/* A failed sync the call returned ok for, then a wrong value blamed on it. */
static void swallowed_then_wrong(vd_ctx *v, const char *file) {
    char line[200];
    snprintf(line, sizeof line,
             "{\"class\":\"sync_error\",\"point\":\"hook/sync\",\"file\":\"%s\",\"op\":5,\"thread\":0}", file);
    vd_add_ledger_line(v, line, 0);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .thread = 0, .op = 9, .key = 3, .inj_mark = 1};
    vd_add_observation(v, &o);
}

Test(oracle_promises, an_unpromised_swallowed_error_and_its_wrong_value_are_counted_not_failed) {
    vd_config c = with_table();
    vd_ctx *v = vd_new(&c);
    swallowed_then_wrong(v, "db.sqlite");
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].injected, 1);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].swallowed, 0);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].wrong_value, 0);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].undetected_unpromised, 2); /* the error, and the value blamed on it */
    cr_assert_eq(res.total.undetected_unpromised, 2);
    cr_assert_eq(vd_injection_at(v, 0)->outcome, VD_UNDETECTED_UNPROMISED);
    cr_assert(res.pass);
    vd_free(v);
}

Test(oracle_promises, the_same_outcome_of_a_promised_class_is_a_failure) {
    /* The same lines in another file, whose row promises to detect. */
    vd_config c = with_table();
    vd_ctx *v = vd_new(&c);
    swallowed_then_wrong(v, "db.sqlite-wal");
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].swallowed, 1);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].wrong_value, 1);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].undetected_unpromised, 0);
    cr_assert_not(res.pass);
    vd_free(v);
    /* And without a table at all (our engine's judge before V10). */
    c.promise_of = NULL;
    v = vd_new(&c);
    swallowed_then_wrong(v, "db.sqlite");
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].swallowed, 1);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].wrong_value, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_promises, what_follows_an_unpromised_fault_is_unpromised_whatever_came_later) {
    /* A failed sync SQLite promises nothing for, then a promised write
     * error, then a wrong value: blamed on the newer error, it is still
     * the engine's state after the unpromised one (the first line is
     * this process's, before the observation's mark of two). */
    vd_config c = with_table();
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"sync_error\",\"file\":\"db.sqlite\",\"op\":5,\"thread\":0}", 0);
    vd_add_ledger_line(v, "{\"class\":\"read_error\",\"file\":\"db.sqlite\",\"op\":6,\"thread\":0}", 0);
    vd_observation e = {.kind = VD_OBS_ERROR, .thread = 0, .op = 6, .status = 3};
    vd_add_observation(v, &e);
    vd_observation o = {.kind = VD_OBS_LOST, .thread = 0, .op = 9, .key = 3, .inj_mark = 2};
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_SYNC_ERROR].undetected_unpromised, 2); /* its own swallowed call, and the key */
    cr_assert_eq(res.cls[VD_READ_ERROR].lost, 0);
    cr_assert(res.pass);
    /* Seen before the unpromised fault (mark 0: nothing injected yet), the
     * same loss fails. */
    vd_observation early = {.kind = VD_OBS_LOST, .thread = 0, .op = 1, .key = 4, .inj_mark = 0};
    vd_add_observation(v, &early);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_NONE].lost, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_promises, a_repair_promise_may_swallow_the_error_but_not_return_a_wrong_value) {
    vd_config c = with_table();
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(
        v, "{\"class\":\"write_error\",\"point\":\"door/io/write\",\"file\":\"x\",\"op\":5,\"thread\":0}", 0);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_WRITE_ERROR].repaired, 1);
    cr_assert(res.pass);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .thread = 0, .op = 9, .key = 3, .inj_mark = 1};
    vd_add_observation(v, &o);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_WRITE_ERROR].wrong_value, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_promises, an_error_the_engine_reports_as_corruption_is_detected_not_a_false_alarm) {
    vd_config c = with_table();
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(
        v, "{\"class\":\"read_error\",\"point\":\"door/io/read\",\"file\":\"db.sqlite\",\"op\":5,\"thread\":0}", 0);
    vd_report r = {.layer = "sqlite", .file = "db.sqlite", .block = -1, .offset = -1, .entry = -1};
    vd_add_report(v, &r);
    vd_observation o = {.kind = VD_OBS_ERROR, .thread = 0, .op = 5, .status = 2};
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_READ_ERROR].detected, 1); /* the call returned the error (V3) */
    cr_assert_eq(res.total.false_alarm, 0);
    cr_assert(res.pass);
    vd_free(v);
    /* Without the table's word the same report is a false alarm (V0). */
    c.promise_of = NULL;
    v = vd_new(&c);
    vd_add_ledger_line(
        v, "{\"class\":\"read_error\",\"point\":\"door/io/read\",\"file\":\"db.sqlite\",\"op\":5,\"thread\":0}", 0);
    vd_add_report(v, &r);
    vd_settle(v, &res);
    cr_assert_eq(res.total.false_alarm, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_promises, a_crash_the_engine_promises_nothing_for_counts_its_lost_prefix_apart) {
    vd_config c = with_table();
    c.class_on[VD_POWER_LOSS] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"phase\":\"powerloss\",\"class\":\"power_loss\",\"file\":\"000083.log\",\"offset\":0}", 1);
    vd_set_crash_check(v, VD_CHECK_LOST);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .key = 4, .after_crash = 1};
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_POWER_LOSS].undetected_unpromised, 2);
    cr_assert_eq(res.cls[VD_POWER_LOSS].lost, 0);
    cr_assert(res.pass);
    /* A crash of the engine's process fails whatever it promises. */
    vd_observation x = {.kind = VD_OBS_CRASH, .after_crash = 1};
    vd_add_observation(v, &x);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_POWER_LOSS].crash, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* A crash whose check lost commits, after a failed sync of FILE the
 * process before the crash met (CARRIED 1) or this one did (0). */
static void crash_losing_after_sync_error(vd_ctx *v, const char *file, int carried) {
    char line[200];
    snprintf(line, sizeof line, "{\"class\":\"sync_error\",\"point\":\"sync/drop_dirty\",\"file\":\"%s\",\"op\":5}",
             file);
    if (carried) vd_add_ledger_line(v, line, 1);
    vd_add_ledger_line(v, "{\"class\":\"kill\",\"point\":\"kill/door/write/wal\",\"op\":9}", 1);
    if (!carried) vd_add_ledger_line(v, line, 0);
    vd_set_crash_check(v, VD_CHECK_LOST);
}

Test(oracle_promises, a_crash_after_an_unpromised_fault_counts_its_lost_prefix_apart) {
    /* SQLite drops the pages of a failed sync of its database file and a
     * later checkpoint copies what is left: the check after the kill
     * (a crash SQLite promises to survive) finds keys lost that no write
     * of the crashed process touched.  Outside its promises, as any
     * symptom after that fault is. */
    vd_config c = with_table();
    c.class_on[VD_KILL] = 1;
    vd_ctx *v = vd_new(&c);
    crash_losing_after_sync_error(v, "db.sqlite", 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].lost, 0);
    cr_assert_eq(res.cls[VD_KILL].undetected_unpromised, 1);
    cr_assert(res.pass);
    vd_free(v);
}

Test(oracle_promises, a_lost_prefix_after_only_promised_faults_or_a_later_unpromised_one_fails) {
    /* The bug the rule above cannot hide: a kill that loses commits
     * after a failed sync the engine promises to handle (the log's row
     * detects), or after none before the crash (the unpromised fault is
     * this process's, made after the loss happened), is the engine's. */
    vd_config c = with_table();
    c.class_on[VD_KILL] = 1;
    vd_ctx *v = vd_new(&c);
    crash_losing_after_sync_error(v, "db.sqlite-wal", 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].lost, 1);
    cr_assert_not(res.pass);
    vd_free(v);
    v = vd_new(&c);
    crash_losing_after_sync_error(v, "db.sqlite", 0);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].lost, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* A crash by LINE (carried), then an open that fails on a report nothing
 * injected explains. */
static vd_ctx *crash_that_does_not_open(const vd_config *c, const char *line) {
    vd_ctx *v = vd_new(c);
    vd_add_ledger_line(v, line, 1);
    vd_report r = {.layer = "sqlite", .file = "db.sqlite", .block = -1, .offset = -1, .entry = -1, .after_crash = 1};
    vd_add_report(v, &r);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    return v;
}

Test(oracle_promises, a_database_that_does_not_open_after_an_unpromised_crash_is_counted_apart) {
    /* SQLite with a rollback journal and synchronous NORMAL: a power
     * failure at the wrong time may corrupt it (its own words); the open
     * that fails after one is outside its promises. */
    vd_config c = with_table();
    c.class_on[VD_POWER_LOSS] = c.class_on[VD_KILL] = 1;
    vd_ctx *v =
        crash_that_does_not_open(&c, "{\"phase\":\"powerloss\",\"class\":\"power_loss\",\"file\":\"db.sqlite\"}");
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_POWER_LOSS].unrecoverable, 0);
    cr_assert_eq(res.cls[VD_POWER_LOSS].undetected_unpromised, 1);
    cr_assert(res.pass);
    vd_free(v);
    /* The bug it cannot hide: the same open after a crash the engine
     * promises to survive (a kill: the table's default, detect) fails. */
    v = crash_that_does_not_open(&c, "{\"class\":\"kill\",\"point\":\"kill/door/write/wal\",\"op\":9}");
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_KILL].unrecoverable, 1);
    cr_assert_not(res.pass);
    vd_free(v);
}
