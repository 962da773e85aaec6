/*
 * test_json_string_writer_escapes_one_rule.c -- common/json.h: quote and
 * backslash take a backslash, control bytes and 0x7f become \u00xx, every
 * other byte (>= 0x80 too) passes as is; a body cut to fit its buffer is
 * cut between escapes, NUL-terminated, and the length it needed returned;
 * the FILE writer quotes what the buffer writer escapes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

Test(json_string_writer, escapes_quote_backslash_and_control_bytes) {
    char out[128];
    size_t n = json_escape(out, sizeof out, "a\"b\\c\n\x01\x1f\x7f d");
    cr_assert_str_eq(out, "a\\\"b\\\\c\\u000a\\u0001\\u001f\\u007f d");
    cr_assert_eq(n, strlen(out));
}

Test(json_string_writer, bytes_from_0x80_pass_as_they_are) {
    char out[16];
    json_escape(out, sizeof out, "\xc3\xa9\xff");
    cr_assert_str_eq(out, "\xc3\xa9\xff");
}

Test(json_string_writer, every_byte_escapes_to_at_most_the_maximum) {
    for (int c = 1; c < 256; c++) {
        char e[JSON_ESC_MAX];
        size_t k = json_escape_byte((unsigned char)c, e);
        cr_assert(k >= 1 && k <= JSON_ESC_MAX, "byte 0x%02x: %zu", c, k);
        int plain = c >= 0x20 && c != 0x7f && c != '"' && c != '\\';
        cr_assert_eq(k == 1, plain, "byte 0x%02x", c);
    }
}

Test(json_string_writer, a_cut_body_ends_between_escapes) {
    char out[8];
    /* "ab" fits, \u000a (6 bytes) would need 9 with the NUL: cut before it. */
    size_t n = json_escape(out, sizeof out, "ab\ncd");
    cr_assert_eq(n, strlen("ab\\u000acd"));
    cr_assert_str_eq(out, "ab");
    cr_assert_eq(json_escape(out, 0, "x"), 1);
    cr_assert_eq(json_escape(out, sizeof out, NULL), 0);
    cr_assert_str_eq(out, "");
}

Test(json_string_writer, the_file_writer_quotes_the_same_body) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    json_fput_str(f, "p\"\t\x7f");
    json_fput_str(f, NULL);
    fclose(f);
    cr_assert_str_eq(buf, "\"p\\\"\\u0009\\u007f\"\"\"");
    free(buf);
}
