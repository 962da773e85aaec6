/*
 * test_key_convention.c -- common/keys.h: key number I is "k" and I's 15
 * digits, bytewise order is numeric order, and key_parse reads back
 * exactly what key_format wrote and rejects anything else with -1.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/keys.h"

Test(key_convention, format_is_k_and_15_digits) {
    char k[KEY_LEN + 1];
    key_format(0, k);
    cr_assert_str_eq(k, "k000000000000000");
    key_format(42, k);
    cr_assert_str_eq(k, "k000000000000042");
    key_format(KEY_SPACE - 1, k);
    cr_assert_str_eq(k, "k999999999999999");
    cr_assert_eq(strlen(k), KEY_LEN);
}

Test(key_convention, numbers_past_the_space_keep_their_last_15_digits) {
    char k[KEY_LEN + 1];
    key_format(KEY_SPACE + 7, k);
    cr_assert_str_eq(k, "k000000000000007");
}

Test(key_convention, byte_order_is_numeric_order) {
    const uint64_t n[] = {0, 1, 9, 10, 99, 100, 4294967295ull, 4294967296ull, KEY_SPACE - 1};
    for (size_t i = 1; i < sizeof n / sizeof n[0]; i++) {
        char a[KEY_LEN + 1], b[KEY_LEN + 1];
        key_format(n[i - 1], a);
        key_format(n[i], b);
        cr_assert_lt(memcmp(a, b, KEY_LEN), 0, "%s < %s", a, b);
    }
}

Test(key_convention, parse_reads_back_what_format_wrote) {
    const uint64_t n[] = {0, 1, 42, 1999, 4294967296ull, KEY_SPACE - 1};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) {
        char k[KEY_LEN + 1];
        uint64_t got = ~0ull;
        key_format(n[i], k);
        cr_assert_eq(key_parse(k, KEY_LEN, &got), 0);
        cr_assert_eq(got, n[i]);
    }
}

Test(key_convention, parse_rejects_other_keys) {
    uint64_t got = 12345;
    cr_assert_eq(key_parse("k00000000000004", 15, &got), -1);   /* short */
    cr_assert_eq(key_parse("k0000000000000042", 17, &got), -1); /* long */
    cr_assert_eq(key_parse("x000000000000042", 16, &got), -1);  /* prefix */
    cr_assert_eq(key_parse("k00000000000004x", 16, &got), -1);  /* digit */
    cr_assert_eq(key_parse("k00000000000004/", 16, &got), -1);
    cr_assert_eq(key_parse("k00000000000004:", 16, &got), -1);
    cr_assert_eq(got, 12345, "a rejected key leaves *I alone");
}
