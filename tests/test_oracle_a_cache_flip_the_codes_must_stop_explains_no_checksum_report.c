/*
 * test_oracle_a_cache_flip_the_codes_must_stop_explains_no_checksum_report.c
 * -- rule V1e of docs/oracle.md for the page checksum.  With per-KV codes
 * of two bytes or more, and at one byte for a part the page code covers, a
 * cache flip is found by the codes in the cache or not at all: the
 * write-back check (engine KV4) must keep the flipped frame from the disk.
 * A page_checksum report at the flipped block then says the page reached
 * the disk anyway, and the flip must not explain it: a false alarm that
 * fails the run.  A checksum cannot even fail for it (the write-back
 * computes a fresh checksum over the flipped bytes), so a judge that let
 * this layer through would hide a second, real on-disk fault at that block
 * behind the cache flip.  At one byte, for a part only the entry codes
 * guard, the flip may reach the disk and explains the report.
 */
#include "oracle_helpers.h"

/* One cache flip of block 4 in a part PART_CODE guards, codes of W bytes,
 * and a page_checksum report at block 4 from the final verify. */
static vd_result judge(int w, const char *part_code, vd_ctx **keep) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = w;
    vd_ctx *v = vd_new(&c);
    char line[300];
    snprintf(line, sizeof line,
             "{\"seq\":0,\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":4,\"mask\":\"0x4\","
             "\"part_offset\":100,\"part_len\":20,\"part_code\":\"%s\",\"pair_of\":-1,\"pair_check\":\"detected\"}",
             part_code);
    vd_add_ledger_line(v, line, 0);
    vd_report r = {.block = 4, .offset = 4 * 4096};
    snprintf(r.layer, sizeof r.layer, "page_checksum");
    snprintf(r.file, sizeof r.file, "data");
    vd_add_report(v, &r);
    vd_result res;
    vd_settle(v, &res);
    if (keep)
        *keep = v;
    else
        vd_free(v);
    return res;
}

Test(oracle_v1e, with_two_byte_codes_a_checksum_report_at_a_cache_flip_is_a_false_alarm) {
    for (int w = 2; w <= 8; w *= 2) {
        vd_ctx *v;
        vd_result res = judge(w, "entry", &v);
        cr_assert_eq(vd_false_alarm_count(v), 1, "w=%d: the cache flip explained a page_checksum report", w);
        cr_assert_not(res.pass, "w=%d", w);
        cr_assert_eq(res.cls[VD_BITFLIP_CACHE].detected, 0, "w=%d: credited to the cache flip", w);
        vd_free(v);
    }
}

Test(oracle_v1e, at_one_byte_a_checksum_report_in_a_part_the_page_code_covers_is_a_false_alarm) {
    vd_result res = judge(1, "page", NULL);
    cr_assert_not(res.pass);
    cr_assert_eq(res.total.false_alarm, 1);
}

Test(oracle_v1e, at_one_byte_an_entry_flip_may_reach_the_disk_and_explains_the_report) {
    vd_result res = judge(1, "entry", NULL);
    cr_assert(res.pass);
    cr_assert_eq(res.total.false_alarm, 0);
}
