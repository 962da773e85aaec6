/*
 * rng.h -- the project's one seeded generator: splitmix64 (Steele, Lea and
 * Flood, "Fast splittable pseudorandom number generators", 2014).  Header
 * only, static inline: stress, the fault library, engine-tool, the oracle's
 * values, the benchmarks and the tests draw from it; the engine never
 * includes it (its hash constants are hashing, not this generator).
 *
 * A stream is one uint64_t of state.  Each draw adds the golden gamma
 * RNG_GOLDEN and returns the finalizer rng_mix64 of the new state:
 *
 *     state += 0x9E3779B97F4A7C15
 *     z = state
 *     z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9
 *     z = (z ^ z >> 27) * 0x94D049BB133111EB
 *     return z ^ z >> 31
 *
 * Seeds are replayed: a crashtest or stress seed names its draws for ever,
 * so this arithmetic never changes.  crashtest/seeds.py keeps a Python copy
 * (no code is shared across languages); tests/test_rng_vectors.c and
 * tests/test_rng_vectors.py check both against the same vectors.
 *
 * Two ways to bound a draw, kept apart because callers replay either:
 *   rng_below(s, n)  multiply-high: (draw * n) >> 64 (stress, faults, bench,
 *                    crashtest/seeds.py's Rng.below);
 *   rng_mod(s, n)    draw % n (tests' tu_below, the page tests' below).
 */
#ifndef COMMON_RNG_H
#define COMMON_RNG_H

#include <stdint.h>

#define RNG_GOLDEN 0x9E3779B97F4A7C15ull /* 2^64 / golden ratio, odd */

/* The splitmix64 finalizer: a bijection of 64-bit words that mixes every
 * input bit into every output bit.  Also used on its own to derive seeds. */
static inline uint64_t rng_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The next draw of the stream *STATE (any value, 0 included), advancing it. */
static inline uint64_t rng_next(uint64_t *state) { return rng_mix64(*state += RNG_GOLDEN); }

/* A draw in [0, N), N > 0, by multiply-high (no division; the bias is
 * below N / 2^64). */
static inline uint64_t rng_below(uint64_t *state, uint64_t n) {
    return (uint64_t)(((unsigned __int128)rng_next(state) * n) >> 64);
}

/* A draw in [0, N), N > 0, by remainder: a different value than rng_below
 * for the same state, kept for callers whose seeds replay it. */
static inline uint64_t rng_mod(uint64_t *state, uint64_t n) { return rng_next(state) % n; }

#endif /* COMMON_RNG_H */
