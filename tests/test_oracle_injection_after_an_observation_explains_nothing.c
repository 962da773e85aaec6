/*
 * test_oracle_injection_after_an_observation_explains_nothing.c -- the
 * oracle's ledger matching in time (docs/oracle.md, V6b, V6c): an
 * observation is explained only by what was injected before it.  A value
 * read wrong and then a misdirected write (or a cache flip that escaped
 * the codes) later in the same process: the write came too late to have
 * caused the read, so the wrong value fails the run, however the later
 * injection is judged.  The same injection before the read explains it.
 *
 * Each observation carries its injection mark (how many injections of its
 * process came before it); a judge that searches the whole ledger instead
 * lets any later fault excuse any earlier symptom.
 */
#include "oracle_helpers.h"

static const char *MISDIRECTED =
    "{\"class\":\"misdirected_write\",\"file\":\"data\",\"block\":5,\"offset\":36864,\"len\":4096}";

/* A run with one misdirected write, its landing block reported, and one
 * wrong value read after MARK of this process's injections. */
static vd_result judge_misdirected(uint64_t mark) {
    vd_config c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, MISDIRECTED, 0);
    vd_report landed = {.block = 9, .offset = 36864};
    snprintf(landed.layer, sizeof landed.layer, "page_checksum");
    snprintf(landed.file, sizeof landed.file, "data");
    vd_add_report(v, &landed);
    vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .inj_mark = mark, .key = 3, .thread = 0, .op = 10};
    vd_add_observation(v, &o);
    vd_result res;
    vd_settle(v, &res);
    vd_free(v);
    return res;
}

Test(oracle_time, a_misdirected_write_before_a_wrong_value_explains_it) {
    vd_result res = judge_misdirected(1);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].undetectable, 1);
}

Test(oracle_time, a_misdirected_write_after_a_wrong_value_explains_nothing) {
    vd_result res = judge_misdirected(0);
    cr_assert_not(res.pass, "a write made after the read cannot have made it wrong");
    cr_assert_eq(res.total.wrong_value, 1);
    cr_assert_eq(res.cls[VD_MISDIRECTED_WRITE].undetectable, 0);
}

/* The check after a crash (V6b there): a misdirected write of the process
 * after the crash, made after the check's observation, explains none of
 * its failures either. */
Test(oracle_time, a_misdirected_write_after_the_post_crash_check_explains_nothing) {
    vd_config c = judging();
    c.class_on[VD_MISDIRECTED_WRITE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v, "{\"class\":\"power_loss\",\"point\":\"crash/power_loss\"}", 1);
    vd_add_ledger_line(v, MISDIRECTED, 0);
    vd_report landed = {.block = 9, .offset = 36864};
    snprintf(landed.layer, sizeof landed.layer, "page_checksum");
    snprintf(landed.file, sizeof landed.file, "data");
    vd_add_report(v, &landed);
    vd_observation o = {.kind = VD_OBS_LOST, .inj_mark = 0, .key = 4, .after_crash = 1};
    vd_add_observation(v, &o);
    vd_set_crash_check(v, VD_CHECK_LOST);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_not(res.pass, "the check met a lost value before the write existed");
    vd_free(v);
}
