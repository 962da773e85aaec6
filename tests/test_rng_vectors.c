/*
 * test_rng_vectors.c -- common/rng.h draws the published splitmix64
 * sequence, the same one crashtest/seeds.py draws: both check the vectors
 * of tests/rng_vectors.h (test_rng_vectors.py is the Python side), so a
 * seed replays the same draws in stress, the fault library, the tools, the
 * benchmarks, the suites and crashtest.py.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "common/rng.h"
#include "testutil.h"

typedef struct {
    uint64_t seed, out[5];
} draw_vector;
typedef struct {
    uint64_t seed, n, out[5];
} below_vector;

static const draw_vector draws[] = {
#define RNG_VECTOR(s, a, b, c, d, e) {s, {a, b, c, d, e}},
#define RNG_BELOW_VECTOR(s, n, a, b, c, d, e)
#include "rng_vectors.h"
#undef RNG_VECTOR
#undef RNG_BELOW_VECTOR
};

static const below_vector belows[] = {
#define RNG_VECTOR(s, a, b, c, d, e)
#define RNG_BELOW_VECTOR(s, n, a, b, c, d, e) {s, n, {a, b, c, d, e}},
#include "rng_vectors.h"
#undef RNG_VECTOR
#undef RNG_BELOW_VECTOR
};

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

Test(rng_vectors, the_vectors_cover_seeds_0_1_and_deadbeef) {
    cr_assert_eq(COUNT(draws), 3);
    cr_assert_eq(draws[0].seed, 0);
    cr_assert_eq(draws[1].seed, 1);
    cr_assert_eq(draws[2].seed, 0xdeadbeefull);
    cr_assert_eq(COUNT(belows), 3);
}

Test(rng_vectors, rng_next_draws_the_vectors) {
    for (size_t v = 0; v < COUNT(draws); v++) {
        uint64_t s = draws[v].seed;
        for (int i = 0; i < 5; i++) {
            uint64_t got = rng_next(&s);
            cr_assert_eq(got, draws[v].out[i], "seed %#llx draw %d: %#llx, expected %#llx",
                         (unsigned long long)draws[v].seed, i, (unsigned long long)got,
                         (unsigned long long)draws[v].out[i]);
        }
        cr_assert_eq(s, draws[v].seed + 5 * RNG_GOLDEN, "the state advances by the golden gamma");
    }
}

Test(rng_vectors, rng_mix64_is_the_finalizer_of_the_advanced_state) {
    for (size_t v = 0; v < COUNT(draws); v++)
        for (int i = 0; i < 5; i++)
            cr_assert_eq(rng_mix64(draws[v].seed + (uint64_t)(i + 1) * RNG_GOLDEN), draws[v].out[i]);
}

Test(rng_vectors, rng_below_is_multiply_high) {
    for (size_t v = 0; v < COUNT(belows); v++) {
        uint64_t s = belows[v].seed;
        for (int i = 0; i < 5; i++)
            cr_assert_eq(rng_below(&s, belows[v].n), belows[v].out[i], "seed %#llx draw %d",
                         (unsigned long long)belows[v].seed, i);
    }
}

Test(rng_vectors, rng_mod_is_the_remainder_of_the_same_draws) {
    for (size_t v = 0; v < COUNT(draws); v++) {
        uint64_t s = draws[v].seed;
        for (int i = 0; i < 5; i++) cr_assert_eq(rng_mod(&s, 1000), draws[v].out[i] % 1000);
    }
}

Test(rng_vectors, the_suites_tu_rng_draws_the_same_stream) {
    for (size_t v = 0; v < COUNT(draws); v++) {
        tu_rng r = {draws[v].seed}, q = {draws[v].seed};
        for (int i = 0; i < 5; i++) {
            cr_assert_eq(tu_next(&r), draws[v].out[i]);
            cr_assert_eq(tu_below(&q, 97), draws[v].out[i] % 97);
        }
    }
}
