/*
 * test_oracle_a_lost_commit_is_explained_only_by_a_missed_commit_log_page.c
 * -- oracle rule V6b for a synced commit lost (docs/oracle.md).  A write
 * that missed its block (lost, or misdirected elsewhere) leaves an older
 * page with a valid checksum.  When that page held commit statuses (a
 * commit-log page, or the meta page naming them; ledger region "clog" or
 * "meta") and the redo point then moved past the commits it lacked,
 * recovery finds them "in progress" and ends before them: undetectable by
 * design, as in PostgreSQL.  Every other lost commit is the engine's:
 * after a missed leaf, after a missed write the ledger does not name the
 * page of, after one made later than the loss was seen, or with no missed
 * write at all, the run fails.
 */
#include "oracle_helpers.h"

/* A misdirected write of a page of REGION ("" none) and its landing
 * block reported; then a synced commit lost, seen after MARK of this
 * process's injections (or after a crash: CRASH). */
static vd_result judge(const char *cls, const char *region, uint64_t mark, int crash) {
    vd_config c = judging();
    int misdirected = !strcmp(cls, "misdirected_write");
    c.class_on[misdirected ? VD_MISDIRECTED_WRITE : VD_LOST_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    char line[256];
    snprintf(line, sizeof line, "{\"class\":\"%s\",\"file\":\"data\",\"block\":5,\"offset\":%d,\"len\":4096%s%s%s}",
             cls, misdirected ? 36864 : 20480, region[0] ? ",\"region\":\"" : "", region, region[0] ? "\"" : "");
    vd_add_ledger_line(v, line, crash);
    if (crash) vd_add_ledger_line(v, "{\"class\":\"power_loss\",\"point\":\"crash/power_loss\"}", 1);
    if (misdirected) {
        vd_report landed = {.block = 9, .offset = 36864};
        snprintf(landed.layer, sizeof landed.layer, "page_checksum");
        snprintf(landed.file, sizeof landed.file, "data");
        vd_add_report(v, &landed);
    }
    vd_observation o = {.kind = VD_OBS_LOST_COMMIT, .inj_mark = mark, .after_crash = crash};
    vd_add_observation(v, &o);
    if (crash) vd_set_crash_check(v, VD_CHECK_LOST);
    vd_result res;
    vd_settle(v, &res);
    vd_free(v);
    return res;
}

Test(oracle_lost_commit, a_misdirected_write_of_a_commit_log_page_explains_it) {
    vd_result res = judge("misdirected_write", "clog", 1, 0);
    cr_assert(res.pass);
    cr_assert_eq(res.total.lost, 0);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].undetectable, 1);
}

Test(oracle_lost_commit, a_misdirected_write_of_the_meta_page_explains_it) {
    vd_result res = judge("misdirected_write", "meta", 1, 0);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].undetectable, 1);
}

/* Every other page type, and a line that names none: no commit status
 * was kept old, so the commit was lost by recovery. */
Test(oracle_lost_commit, a_missed_write_of_any_other_page_explains_nothing) {
    static const char *const others[] = {"leaf", "root", "interior", "overflow", "trunk", "unused", ""};
    for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
        vd_result res = judge("misdirected_write", others[k], 1, 0);
        cr_assert_not(res.pass, "region '%s'", others[k]);
        cr_assert_eq(res.total.lost, 1, "region '%s'", others[k]);
    }
}

Test(oracle_lost_commit, a_commit_log_page_missed_after_the_loss_explains_nothing) {
    vd_result res = judge("misdirected_write", "clog", 0, 0);
    cr_assert_not(res.pass, "a write made after recovery ended cannot have lost its commits");
    cr_assert_eq(res.total.lost, 1);
}

Test(oracle_lost_commit, a_commit_log_page_missed_before_a_crash_explains_the_check_after_it) {
    vd_result res = judge("misdirected_write", "clog", 0, 1);
    cr_assert(res.pass);
    cr_assert_eq(res.total.lost, 0);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].undetectable, 1);
    res = judge("misdirected_write", "leaf", 0, 1);
    cr_assert_not(res.pass);
    cr_assert_geq(res.total.lost, 1);
}

/* lost_write is measured in every run (docs/fault-classes.md): a lost
 * commit-log page counts undetectable there; a lost commit after any
 * other lost page still fails the measuring run. */
Test(oracle_lost_commit, a_lost_write_of_a_commit_log_page_is_measured_others_fail) {
    vd_result res = judge("lost_write", "clog", 1, 0);
    cr_assert(res.measuring);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_LOST_WRITE].undetectable, 2); /* the injection and the loss */
    res = judge("lost_write", "leaf", 1, 0);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.lost, 1);
}

Test(oracle_lost_commit, no_missed_write_fails_the_run) {
    vd_config c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_observation o = {.kind = VD_OBS_LOST_COMMIT, .inj_mark = 0};
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.lost, 1);
    vd_free(v);
}
