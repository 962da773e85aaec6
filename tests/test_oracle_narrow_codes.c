/*
 * test_oracle_narrow_codes.c -- the oracle's judge on cache flips under
 * narrow per-KV codes (oracle/README.md, "Narrow codes"): a single flipped
 * bit never escapes, a pair of flips in one part escapes at the odds of the
 * code that covers the part, escapes within the Poisson bound of those
 * odds are the codes' design (in time too), and one escaped entry that
 * answers wrong for many keys is one escape; with the pairs tested by the
 * injector (V6c), the escapes are known and explain what follows them.
 */
#include "oracle_helpers.h"

/* Per-KV codes (docs/oracle.md, Narrow per-KV codes): cache flips are judged
 * once w >= 1; a single flipped bit can never escape (the parity bit), so at
 * any width an escape of a one-bit flip fails the run; at w = 1 a few escapes
 * of two-bit flips are the code's design, within the Poisson bound. */
static vd_ctx *cache_flips(int w, const char *mask, int nflips, int escapes, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = w;
    vd_ctx *v = vd_new(&c);
    char line[160];
    for (int i = 0; i < nflips; i++) {
        snprintf(line, sizeof line, "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":%d,\"mask\":\"%s\"}",
                 5 + i, mask);
        vd_add_ledger_line(v, line, 0);
    }
    for (int i = 0; i < escapes; i++) {
        vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .op = i, .key = (uint64_t)i, .inj_mark = nflips};
        vd_add_observation(v, &o);
    }
    vd_settle(v, res);
    return v;
}

Test(oracle_verdict, cache_flip_escape_fails_at_every_width_for_single_bits) {
    const int ws[] = {1, 2, 4, 8};
    for (int k = 0; k < 4; k++) {
        vd_result res;
        vd_ctx *v = cache_flips(ws[k], "0x10", 100, 1, &res);
        cr_assert_eq(res.measuring, 0, "w=%d judges cache flips", ws[k]);
        cr_assert_eq(res.cls[VD_BITFLIP_CACHE].wrong_value, 1, "w=%d", ws[k]);
        cr_assert_not(res.pass);
        char buf[160];
        vd_escape_rates_json(v, buf, sizeof buf);
        char want[96];
        snprintf(want, sizeof want, "{\"%d\": {\"checked\": 100, \"escaped\": 1, \"rate\": 0.01, \"bound\": 0}}",
                 ws[k]);
        cr_assert_str_eq(buf, want);
        vd_free(v);
    }
}

Test(oracle_verdict, two_bit_cache_flip_escapes_within_the_bound_pass_at_w1) {
    vd_result res;
    /* 1000 two-bit flips at w = 1: lambda = 1000/32 ~ 31, bound 58. */
    vd_ctx *v = cache_flips(1, "0x11", 1000, 10, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].wrong_value, 0);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 10);
    cr_assert(res.pass);
    vd_free(v);
    /* ... but not at w = 8, nor beyond the bound at w = 1. */
    v = cache_flips(8, "0x11", 1000, 1, &res);
    cr_assert_not(res.pass);
    vd_free(v);
    v = cache_flips(1, "0x11", 1000, 80, &res);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].wrong_value, 80);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* Two one-bit flips in one part of one page (the ledger's part_offset and
 * part_len) make an even count there, which the code misses with odds
 * 2^-(8w-3): at w = 1 such a pair's escape is within the bound; the same
 * flips in different parts (or pages) keep the bound at 0.  And a key read
 * wrong again and again is one escape. */
static vd_ctx *paired_flips(int w, int same_part, int reads, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = w;
    vd_ctx *v = vd_new(&c);
    char line[200];
    for (int i = 0; i < 40; i++) {
        /* flips on 20 pages; the second flip of a page lands in the
         * first's cell [1000, 1200) or in the next cell [1200, 1400) */
        int second = i >= 20, off = second && !same_part ? 1200 : 1000;
        snprintf(line, sizeof line,
                 "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":%d,\"mask\":\"0x4\","
                 "\"part_offset\":%d,\"part_len\":200}",
                 5 + i % 20, off);
        vd_add_ledger_line(v, line, 0);
    }
    for (int i = 0; i < reads; i++) {
        vd_observation o = {.kind = VD_OBS_WRONG_VALUE, .key = 77, .inj_mark = 40};
        vd_add_observation(v, &o);
    }
    vd_settle(v, res);
    return v;
}

Test(oracle_verdict, two_flips_in_one_part_may_escape_within_the_bound_at_w1) {
    vd_result res;
    /* 20 pairs at w = 1: lambda = 20/32, bound 6; one key read wrong 3 times. */
    vd_ctx *v = paired_flips(1, 1, 3, &res);
    cr_assert(res.pass, "an escape of a two-flip pair at w = 1 failed the run");
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].wrong_value, 0);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 3, "undetectable %llu",
                 (unsigned long long)res.cls[VD_BITFLIP_CACHE].undetectable);
    char buf[160];
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert(strstr(buf, "\"escaped\": 1,") != NULL, "one key is one escape: %s", buf);
    cr_assert(strstr(buf, "\"bound\": 0}") == NULL, "pairs in one part leave the bound at 0: %s", buf);
    vd_free(v);
    /* The same flips in different parts: one-bit flips never escape. */
    v = paired_flips(1, 0, 1, &res);
    cr_assert_not(res.pass, "a one-bit flip alone in its part escaped, and the run passed");
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert(strstr(buf, "\"bound\": 0}") != NULL, "%s", buf);
    vd_free(v);
    /* At w = 4 a pair misses with odds 2^-29: the bound stays 0. */
    v = paired_flips(4, 1, 1, &res);
    cr_assert_not(res.pass);
    vd_free(v);
}

/* The odds of a pair follow the code that covers its part (ledger
 * part_code).  Found 2026-12-03 (mutants, seed 20261801): 610 one-bit
 * flips on the meta page, a page without slots that the 4-byte page code
 * covers, were each taken at the entry codes' odds (1/32 at w = 1); the
 * bound allowed 164 escapes, and a key lost by the engine passed.  And a
 * flip pairs only with an earlier one the injector saw still there
 * (pair_of): every flip but the first here when PAIRED. */
static vd_ctx *flips_in_one_part(const char *code, int nflips, int paired, int mark, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 1;
    vd_ctx *v = vd_new(&c);
    char line[240], field[64] = "";
    for (int i = 0; i < nflips; i++) {
        if (code && paired && i)
            snprintf(field, sizeof field, ",\"part_code\":\"%s\",\"pair_of\":%d", code, i);
        else if (code)
            snprintf(field, sizeof field, ",\"part_code\":\"%s\"", code);
        snprintf(line, sizeof line,
                 "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":0,\"mask\":\"0x2\","
                 "\"part_offset\":40,\"part_len\":4056%s}",
                 field);
        vd_add_ledger_line(v, line, 0);
    }
    vd_observation o = {
        .kind = VD_OBS_LOST, .thread = 0, .op = 900, .key = 735, .inj_mark = (uint64_t)(mark < 0 ? nflips : mark)};
    vd_add_observation(v, &o);
    vd_settle(v, res);
    return v;
}

Test(oracle_verdict, flips_in_a_part_the_page_code_covers_allow_no_lost_key) {
    vd_result res;
    char buf[160];
    vd_ctx *v = flips_in_one_part("page", 610, 1, -1, &res);
    cr_assert_not(res.pass, "a lost key was explained by flips only the page code covers");
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].lost, 1);
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert(strstr(buf, "\"bound\": 0}") != NULL, "%s", buf);
    vd_free(v);
    /* Parts no code covers (checksum and LSN fields, hint bytes): no read
     * follows them to an answer, so they allow no escape either. */
    v = flips_in_one_part("none", 610, 1, -1, &res);
    cr_assert_not(res.pass);
    vd_free(v);
    /* The same flips in one entry's part: pairs there escape a 1-byte code
     * with odds 1/32, and one lost key is within the bound. */
    v = flips_in_one_part("entry", 610, 1, -1, &res);
    cr_assert(res.pass);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 1);
    vd_free(v);
    /* ... but not when each earlier flip was gone (found and its page
     * dropped) by the time the next one came: no pair, no escape. */
    v = flips_in_one_part("entry", 610, 0, -1, &res);
    cr_assert_not(res.pass, "flips the injector saw alone in their part explained a lost key");
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert(strstr(buf, "\"bound\": 0}") != NULL, "%s", buf);
    vd_free(v);
    /* A lost key read before the first pair was made: no pair can explain
     * it, however many come later (a get that skips a check answers
     * NOTFOUND for a key one flip damaged: kv-absent-key-unchecked). */
    v = flips_in_one_part("entry", 610, 1, 1, &res);
    cr_assert_not(res.pass, "a lost key was explained by pairs made after it was read");
    vd_free(v);
    v = flips_in_one_part("entry", 610, 1, 200, &res);
    cr_assert(res.pass, "199 pairs before the read: one escape is within their bound");
    vd_free(v);
    /* A ledger from before part_code: every part at the entry codes' odds. */
    v = flips_in_one_part(NULL, 610, 0, -1, &res);
    cr_assert(res.pass);
    vd_free(v);
}

/* One damaged entry (a child pointer, say) that escaped can answer wrong
 * for many keys at once: an escape is one read that met keys not blamed
 * before, not one key.  At w = 2 with two paired flips (odds 2 * 2^-13)
 * the bound is one escape: a post-open check meeting 30 wrong keys in one
 * pass is that one; 30 separate reads each meeting a new key are not. */
static vd_ctx *spread_escape(int one_read, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 2;
    vd_ctx *v = vd_new(&c);
    char line[200];
    for (int i = 0; i < 4; i++) {
        snprintf(line, sizeof line,
                 "{\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":%d,\"mask\":\"0x8\","
                 "\"part_offset\":40,\"part_len\":2}",
                 7 + i % 2);
        vd_add_ledger_line(v, line, 0);
    }
    for (int k = 0; k < 30; k++) {
        vd_observation o = {.kind = k % 2 ? VD_OBS_LOST : VD_OBS_WRONG_VALUE,
                            .thread = 1,
                            .op = one_read ? 500 : 500 + k,
                            .key = (uint64_t)(100 + k),
                            .inj_mark = 4};
        vd_add_observation(v, &o);
    }
    /* the same keys read wrong again later: nothing new */
    for (int k = 0; k < 30; k++) {
        vd_observation o = {
            .kind = VD_OBS_WRONG_VALUE, .thread = 0, .op = 900 + k, .key = (uint64_t)(100 + k), .inj_mark = 4};
        vd_add_observation(v, &o);
    }
    vd_settle(v, res);
    return v;
}

Test(oracle_verdict, one_escaped_entry_answering_for_many_keys_is_one_escape) {
    vd_result res;
    char buf[160];
    vd_ctx *v = spread_escape(1, &res);
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert(res.pass, "one escape that damaged 30 keys failed the run: %s", buf);
    cr_assert_str_eq(buf, "{\"2\": {\"checked\": 4, \"escaped\": 1, \"rate\": 0.25, \"bound\": 1}}");
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 60);
    vd_free(v);
    v = spread_escape(0, &res);
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert_not(res.pass, "30 separate escapes passed: %s", buf);
    cr_assert(strstr(buf, "\"escaped\": 30,") != NULL, "%s", buf);
    vd_free(v);
}

Test(oracle_verdict, cache_flips_measure_without_codes) {
    vd_result res;
    vd_ctx *v = cache_flips(0, "0x1", 10, 3, &res);
    cr_assert_eq(res.measuring, 1);
    cr_assert_geq(res.cls[VD_BITFLIP_CACHE].undetectable, 3); /* the symptoms, on top of unreported flips */
    cr_assert(res.pass);
    vd_free(v);
}

/* V1e at one byte, for the parts the page code covers: a cache flip of the
 * meta page's steering fields (part_code "page", missed 1 in 2^31) does not
 * explain a page_header report that keeps the database from opening, so
 * the failed open is not "by design"; a flip in an entry's part (the
 * one-byte entry code misses 1 in 32) still may.  Found in the ninth
 * session's nightlies: an on-disk flip of the meta page broke the open,
 * and the message named a cache flip of the same page. */
static vd_result meta_page_cache_flip_at_w1(const char *code) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 1;
    vd_ctx *v = vd_new(&c);
    char line[200];
    snprintf(line, sizeof line,
             "{\"seq\":0,\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":0,\"mask\":\"0x4\","
             "\"part_offset\":16,\"part_len\":24,\"part_code\":\"%s\",\"pair_of\":-1}",
             code);
    vd_add_ledger_line(v, line, 0);
    vd_report h = {.block = 0, .offset = 0, .after_crash = 2};
    snprintf(h.layer, sizeof h.layer, "page_header");
    snprintf(h.file, sizeof h.file, "data");
    vd_add_report(v, &h);
    vd_note_reopen_failed(v);
    vd_result res;
    vd_settle(v, &res);
    vd_free(v);
    return res;
}

Test(oracle_verdict, a_cache_flip_the_page_code_covers_explains_no_failed_open_at_w1) {
    vd_result page = meta_page_cache_flip_at_w1("page");
    cr_assert(page.unrecoverable);
    cr_assert_eq(page.by_design[0], 0, "by design: %s", page.by_design);
    cr_assert_not(page.pass);
    vd_result entry = meta_page_cache_flip_at_w1("entry");
    cr_assert(entry.unrecoverable);
    cr_assert_neq(entry.by_design[0], 0, "an entry's flip may escape the one-byte code");
    cr_assert(entry.pass);
}

/* V6c: the injector tests each pair of flips in one part against the
 * frame's codes and writes what it saw (ledger pair_check), so the escapes
 * are known.  A symptom after a flip that escaped is that escape's, however
 * many keys it reaches: an escaped separator of the root sent every write
 * to one subtree (blackbox 2026-12-03, seed 20261911: 176,000 keys absent
 * after the crash, which the per-read count of the old rule failed).  A
 * symptom with no escape before it is a failure, whatever the bound: the
 * known escapes leave nothing to estimate.  ESCAPED: which pair (0..19,
 * -1 none) the injector saw escape; MARK: the injections before the
 * symptoms; AFTER_CRASH: the flips came from the process before a crash
 * and the symptoms from the check after it. */
static vd_ctx *known_escapes(int escaped, int mark, int after_crash, vd_result *res) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 1;
    vd_ctx *v = vd_new(&c);
    char line[300];
    for (int i = 0; i < 20; i++) {
        snprintf(line, sizeof line,
                 "{\"seq\":%d,\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":1,\"mask\":\"0x8\","
                 "\"part_offset\":8171,\"part_len\":21,\"part_code\":\"entry\",\"pair_of\":%d,\"pair_check\":\"%s\"}",
                 100 + i, 99 + i, i == escaped ? "escaped" : "detected");
        vd_add_ledger_line(v, line, after_crash);
    }
    for (int k = 0; k < 30; k++) {
        vd_observation o = {.kind = k % 3 ? VD_OBS_LOST : VD_OBS_WRONG_VALUE,
                            .thread = k % 4,
                            .op = 1000 + k,
                            .key = (uint64_t)(10000 + k * 7),
                            .inj_mark = after_crash ? 0 : (uint64_t)mark,
                            .after_crash = after_crash};
        vd_add_observation(v, &o);
    }
    if (after_crash) vd_set_crash_check(v, VD_CHECK_LOST);
    vd_settle(v, res);
    return v;
}

Test(oracle_verdict, symptoms_after_a_flip_the_injector_saw_escape_are_that_one_escape) {
    vd_result res;
    char buf[160];
    vd_ctx *v = known_escapes(10, 20, 0, &res);
    vd_escape_rates_json(v, buf, sizeof buf);
    cr_assert(res.pass, "30 symptoms after one escape failed the run: %s", buf);
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].undetectable, 30);
    cr_assert(strstr(buf, "\"escaped\": 1,") != NULL, "the escapes are the flips that escaped: %s", buf);
    vd_free(v);
    /* The same symptoms with no flip that escaped: an engine that answers
     * wrong while its codes caught every flip fails, bound or not. */
    v = known_escapes(-1, 20, 0, &res);
    cr_assert_not(res.pass, "symptoms with no escape passed");
    cr_assert_eq(res.cls[VD_BITFLIP_CACHE].wrong_value + res.cls[VD_BITFLIP_CACHE].lost, 30);
    vd_free(v);
    /* ... and so do symptoms met before the escape. */
    v = known_escapes(10, 10, 0, &res);
    cr_assert_not(res.pass, "symptoms read before the flip that escaped were explained by it");
    vd_free(v);
}

Test(oracle_verdict, a_check_after_a_crash_meets_what_an_escape_before_it_left) {
    vd_result res;
    vd_ctx *v = known_escapes(3, 0, 1, &res);
    cr_assert(res.pass, "the escape's misplaced keys, found after the crash, failed the run");
    cr_assert(strstr(res.by_design, "bitflip_cache") != NULL, "by design: '%s'", res.by_design);
    vd_free(v);
    v = known_escapes(-1, 0, 1, &res);
    cr_assert_not(res.pass, "keys lost across a crash passed with no escape before it");
    cr_assert_eq(res.by_design[0], 0, "by design: '%s'", res.by_design);
    vd_free(v);
}

/* More escapes than the codes' odds allow fail the run, even where no read
 * met their damage: six of six pairs at w = 1 (lambda 6/32, bound 5). */
Test(oracle_verdict, escapes_beyond_the_bound_are_swallowed_damage) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_CACHE] = 1;
    c.protection_bytes = 1;
    for (int n = 5; n <= 6; n++) {
        vd_ctx *v = vd_new(&c);
        char line[300];
        for (int i = 0; i < 6; i++) {
            snprintf(line, sizeof line,
                     "{\"seq\":%d,\"class\":\"bitflip_cache\",\"file\":\"data\",\"block\":%d,\"mask\":\"0x8\","
                     "\"part_offset\":100,\"part_len\":20,\"part_code\":\"entry\",\"pair_of\":%d,"
                     "\"pair_check\":\"%s\"}",
                     i, 3 + i, 1000 + i, i < n ? "escaped" : "detected");
            vd_add_ledger_line(v, line, 0);
        }
        vd_result res;
        vd_settle(v, &res);
        cr_assert_eq(res.pass, n == 5, "%d escapes of 6 pairs", n);
        cr_assert_eq(res.cls[VD_BITFLIP_CACHE].swallowed, n == 6 ? 1 : 0);
        vd_free(v);
    }
}
