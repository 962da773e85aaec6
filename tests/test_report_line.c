/*
 * test_report_line.c -- the run directory's report and observation lines
 * (oracle/report_line.h): what the stress driver writes, the oracle's
 * parser reads back unchanged, and a line that is not one is rejected
 * with -1, never a crash or a half-filled struct.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "oracle/report_line.h"

static vd_report report(const char *layer, const char *file, int64_t block, int64_t offset, int32_t entry, int ac) {
    vd_report r = {.block = block, .offset = offset, .entry = entry, .after_crash = ac};
    snprintf(r.layer, sizeof r.layer, "%s", layer);
    snprintf(r.file, sizeof r.file, "%s", file);
    return r;
}

Test(report_line, report_format_is_the_documented_line) {
    vd_report r = report("page_checksum", "data", 7, 28672, -1, 1);
    char buf[ORC_LINE_MAX];
    int n = orc_report_line_format(buf, sizeof buf, &r);
    cr_assert_str_eq(buf, "{\"layer\":\"page_checksum\",\"file\":\"data\",\"block\":7,\"offset\":28672,\"entry\":-1,"
                          "\"after_crash\":1}\n");
    cr_assert_eq(n, (int)strlen(buf));
}

/* The engine's words travel with the report, so a later process that
 * judges it (a crash's restart) can print them. */
Test(report_line, a_reports_detail_round_trips) {
    vd_report r = report("rocksdb", "", -1, -1, -1, 0);
    snprintf(r.detail, sizeof r.detail, "Corruption: bad entry in block \"x\"\t");
    char buf[ORC_LINE_MAX];
    cr_assert_gt(orc_report_line_format(buf, sizeof buf, &r), 0);
    cr_assert(strstr(buf, ",\"detail\":\"Corruption: bad entry in block \\\"x\\\"\\u0009\"}"), "%s", buf);
    vd_report back;
    cr_assert_eq(orc_report_line_parse(buf, &back), 0, "line %s", buf);
    cr_assert_str_eq(back.detail, r.detail);
}

Test(report_line, report_round_trip) {
    vd_report cases[] = {
        report("page_checksum", "data", 7, 28672, -1, 0),
        report("wal_record", "wal/0000000000100000", -1, 1048600, 3, 2),
        report("kv_protection", "data", INT64_MAX, INT64_MIN, INT32_MIN, 1),
        report("odd \"layer\"\\", "dir/with\ttab", 0, 0, 0, 0),
        report("", "", -1, -1, -1, 0),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[ORC_LINE_MAX];
        cr_assert_gt(orc_report_line_format(buf, sizeof buf, &cases[i]), 0);
        vd_report back;
        cr_assert_eq(orc_report_line_parse(buf, &back), 0, "line %s", buf);
        cr_assert_str_eq(back.layer, cases[i].layer);
        cr_assert_str_eq(back.file, cases[i].file);
        cr_assert_eq(back.block, cases[i].block);
        cr_assert_eq(back.offset, cases[i].offset);
        cr_assert_eq(back.entry, cases[i].entry);
        cr_assert_eq(back.after_crash, cases[i].after_crash);
        cr_assert_str_eq(back.detail, "");
    }
}

Test(report_line, observation_format_and_round_trip) {
    vd_observation o = {.kind = VD_OBS_ERROR, .thread = 3, .op = (5ll << 32) | 17, .status = 3, .key = 12345};
    char buf[ORC_LINE_MAX];
    orc_obs_line_format(buf, sizeof buf, &o);
    cr_assert_str_eq(buf, "{\"kind\":\"error\",\"thread\":3,\"op\":21474836497,\"status\":3,\"key\":12345}\n");
    for (int k = VD_OBS_ERROR; k <= VD_OBS_HANG; k++) {
        vd_observation a = {.kind = k, .thread = -1, .op = -1, .status = 0, .key = UINT64_MAX};
        cr_assert_gt(orc_obs_line_format(buf, sizeof buf, &a), 0);
        vd_observation b;
        cr_assert_eq(orc_obs_line_parse(buf, &b), 0, "line %s", buf);
        cr_assert_eq(b.kind, k);
        cr_assert_eq(b.thread, -1);
        cr_assert_eq(b.op, -1);
        cr_assert_eq(b.key, UINT64_MAX);
        cr_assert_eq(b.carried, 0);
    }
}

Test(report_line, the_signal_handlers_crash_line_parses) {
    vd_observation o;
    cr_assert_eq(orc_obs_line_parse(ORC_OBS_CRASH_LINE, &o), 0);
    cr_assert_eq(o.kind, VD_OBS_CRASH);
    cr_assert_eq(o.thread, -1);
    cr_assert_eq(o.op, -1);
}

Test(report_line, defaults_order_whitespace_and_unknown_keys) {
    vd_report r;
    cr_assert_eq(orc_report_line_parse(" { \"file\" : \"data\" , \"x\":\"y\", \"n\": 5, \"layer\":\"btree\" } \n", &r),
                 0);
    cr_assert_str_eq(r.layer, "btree");
    cr_assert_str_eq(r.file, "data");
    cr_assert_eq(r.block, -1);
    cr_assert_eq(r.offset, -1);
    cr_assert_eq(r.entry, -1);
    cr_assert_eq(r.after_crash, 0);
    vd_observation o;
    cr_assert_eq(orc_obs_line_parse("{\"kind\":\"lost\"}", &o), 0);
    cr_assert_eq(o.kind, VD_OBS_LOST);
    cr_assert_eq(o.thread, -1);
    cr_assert_eq(o.op, -1);
    cr_assert_eq(o.status, 0);
    cr_assert_eq(o.key, 0);
}

Test(report_line, long_strings_are_truncated_not_overflowed) {
    char line[1000];
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    snprintf(line, sizeof line, "{\"layer\":\"%s\",\"file\":\"%s\"}", big, big);
    vd_report r;
    cr_assert_eq(orc_report_line_parse(line, &r), 0);
    cr_assert_eq(strlen(r.layer), sizeof r.layer - 1);
    cr_assert_eq(strlen(r.file), sizeof r.file - 1);
}

Test(report_line, format_that_does_not_fit_fails) {
    vd_report r = report("page_checksum", "data", 1, 2, 3, 0);
    char small[20];
    cr_assert_eq(orc_report_line_format(small, sizeof small, &r), -1);
    cr_assert_eq(orc_report_line_format(small, 0, &r), -1);
}

Test(report_line, malformed_reports_are_rejected) {
    const char *bad[] = {
        "",
        "\n",
        "not json",
        "[\"layer\",\"data\"]",
        "{",
        "{\"layer\":\"page_checksum\",\"file\":\"data\",\"block\":7,\"off", /* torn */
        "{\"layer\":\"page_checksum\"",
        "{\"layer\":\"page_checksum\"} trailing",
        "{\"layer\":\"page_checksum\",}",
        "{,\"layer\":\"x\"}",
        "{\"layer\" \"x\"}",
        "{\"layer\":x}",
        "{\"layer\":\"x\",\"block\":}",
        "{\"layer\":\"x\",\"block\":-}",
        "{\"layer\":\"x\",\"block\":\"7\"}",
        "{\"layer\":7}",
        "{\"layer\":\"x\",\"block\":99999999999999999999}",
        "{\"layer\":\"x\",\"entry\":4294967296}",
        "{\"layer\":\"x\",\"nested\":{\"a\":1}}",
        "{\"layer\":\"x\",\"list\":[1]}",
        "{\"layer\":\"x\",\"t\":true}",
        "{\"layer\":\"unterminated}",
        "{\"layer\":\"bad \\q escape\"}",
        "{\"layer\":\"bad \\u00zz\"}",
        "{\"layer\":\"raw\ttab\"}",
        "{\"file\":\"data\",\"block\":1}", /* no layer */
        "{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vd_report r;
        memset(&r, 0x5a, sizeof r);
        cr_assert_eq(orc_report_line_parse(bad[i], &r), -1, "accepted: %s", bad[i]);
        cr_assert_str_eq(r.layer, "");
    }
    vd_report r;
    cr_assert_eq(orc_report_line_parse(NULL, &r), -1);
}

Test(report_line, malformed_observations_are_rejected) {
    const char *bad[] = {
        "",
        "{}",
        "{\"kind\":\"nonsense\",\"thread\":1}",
        "{\"kind\":3}",
        "{\"kind\":\"error\",\"thread\":1,\"op\":", /* torn */
        "{\"kind\":\"error\",\"key\":-1}",
        "{\"kind\":\"error\",\"thread\":99999999999}",
        "{\"kind\":\"error\",\"status\":\"3\"}",
        "{\"kind\":\"error\"}{\"kind\":\"error\"}",
        "{\"thread\":1,\"op\":2}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vd_observation o;
        memset(&o, 0x5a, sizeof o);
        cr_assert_eq(orc_obs_line_parse(bad[i], &o), -1, "accepted: %s", bad[i]);
        cr_assert_eq(o.kind, 0);
    }
}

Test(report_line, kind_names) {
    cr_assert_str_eq(orc_obs_kind_name(VD_OBS_WRONG_VALUE), "wrong_value");
    cr_assert_str_eq(orc_obs_kind_name(0), "?");
    cr_assert_eq(orc_obs_kind_from_name("lost_commit"), VD_OBS_LOST_COMMIT);
    cr_assert_eq(orc_obs_kind_from_name("?"), -1);
}
