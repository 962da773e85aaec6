/*
 * rng_vectors.h -- test vectors of the seeded generator, read by both of
 * its copies' tests: tests/test_rng_vectors.c includes it (common/rng.h)
 * and tests/test_rng_vectors.py parses it (crashtest/seeds.py), so the C
 * and the Python splitmix64 cannot drift apart.  The values are the
 * published splitmix64 outputs (seed 0 starts 0xe220a8397b1dcdaf); never
 * edit them: seeds replay these draws.
 *
 * RNG_VECTOR(seed, first five draws of the stream seeded SEED)
 * RNG_BELOW_VECTOR(seed, n, first five multiply-high draws below N)
 * One macro call a line: the Python side reads them with a regex (the
 * style check leaves them alone: clang-format off).
 */
/* clang-format off */
RNG_VECTOR(0x0000000000000000, 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, 0xf88bb8a8724c81ec, 0x1b39896a51a8749b)
RNG_VECTOR(0x0000000000000001, 0x910a2dec89025cc1, 0xbeeb8da1658eec67, 0xf893a2eefb32555e, 0x71c18690ee42c90b, 0x71bb54d8d101b5b9)
RNG_VECTOR(0x00000000deadbeef, 0x4adfb90f68c9eb9b, 0xde586a3141a10922, 0x021fbc2f8e1cfc1d, 0x7466ce737be16790, 0x3bfa8764f685bd1c)
RNG_BELOW_VECTOR(0x0000000000000000, 1000, 883, 431, 26, 970, 106)
RNG_BELOW_VECTOR(0x0000000000000001, 1000, 566, 745, 971, 444, 444)
RNG_BELOW_VECTOR(0x00000000deadbeef, 1000, 292, 868, 8, 454, 234)
/* clang-format on */
