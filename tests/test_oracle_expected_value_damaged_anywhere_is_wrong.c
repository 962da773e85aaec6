/*
 * test_oracle_expected_value_damaged_anywhere_is_wrong.c -- the expected
 * state's value check (oracle/expected.h orc_value_is, orc_value_ok): a
 * value read back is right only when every byte is the one the key and
 * version make.  A value opens with its key and version (12 bytes), so a
 * check that compared only those would pass a value whose body a fault
 * changed: the wrong_value the driver exists to find.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "oracle/expected.h"

enum { LEN = 300 };

Test(expected_value, the_value_a_key_and_version_make_is_right) {
    uint8_t v[LEN];
    orc_value(42, 7, v, LEN);
    cr_assert(orc_value_is(42, 7, v, LEN, LEN));
    cr_assert_not(orc_value_is(42, 8, v, LEN, LEN), "another version's value");
    cr_assert_not(orc_value_is(43, 7, v, LEN, LEN), "another key's value");
    cr_assert_not(orc_value_is(42, 7, v, LEN - 1, LEN), "a value cut short");
}

Test(expected_value, one_flipped_bit_anywhere_past_the_header_is_wrong) {
    uint8_t v[LEN];
    orc_value(42, 7, v, LEN);
    for (size_t at = 12; at < LEN; at += 29) {
        v[at] ^= 0x10;
        cr_assert_not(orc_value_is(42, 7, v, LEN, LEN), "a flip at byte %zu passed", at);
        v[at] ^= 0x10;
    }
    v[LEN - 1] ^= 1; /* the last byte too */
    cr_assert_not(orc_value_is(42, 7, v, LEN, LEN), "a flip in the last byte passed");
}

Test(expected_value, the_bounded_length_check_reads_the_body_too) {
    size_t len = orc_value_len(9, 3, 16, 200);
    uint8_t v[256];
    orc_value(9, 3, v, len);
    cr_assert(orc_value_ok(9, 3, v, len, 16, 200));
    v[len / 2 + 6] ^= 0x80;
    cr_assert_not(orc_value_ok(9, 3, v, len, 16, 200), "a flip in the body passed");
}
