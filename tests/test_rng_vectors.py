"""crashtest/seeds.py's splitmix64 draws the vectors of tests/rng_vectors.h,
the same ones tests/test_rng_vectors.c checks against common/rng.h: the
Python and the C copy of the generator cannot drift apart unnoticed."""

import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crashtest.seeds import Rng, mix64  # noqa: E402

VECTORS = os.path.join(ROOT, "tests", "rng_vectors.h")


def read_vectors(name):
    """Rows of ints from the lines NAME(...) of rng_vectors.h."""
    rows = []
    with open(VECTORS) as f:
        for line in f:
            m = re.match(r"\s*%s\((.*)\)\s*$" % name, line)
            if m:
                rows.append([int(x.strip(), 0) for x in m.group(1).split(",")])
    return rows


class RngVectors(unittest.TestCase):
    def test_vectors_cover_seeds_0_1_and_deadbeef(self):
        self.assertEqual([r[0] for r in read_vectors("RNG_VECTOR")], [0, 1, 0xDEADBEEF])
        self.assertEqual([r[0] for r in read_vectors("RNG_BELOW_VECTOR")], [0, 1, 0xDEADBEEF])

    def test_u64_draws_the_vectors(self):
        for seed, *want in read_vectors("RNG_VECTOR"):
            r = Rng(seed)
            self.assertEqual([r.u64() for _ in range(5)], want, "seed %#x" % seed)

    def test_mix64_is_the_finalizer_of_the_advanced_state(self):
        for seed, *want in read_vectors("RNG_VECTOR"):
            got = [mix64((seed + (i + 1) * 0x9E3779B97F4A7C15) % (1 << 64)) for i in range(5)]
            self.assertEqual(got, want, "seed %#x" % seed)

    def test_below_is_multiply_high(self):
        for seed, n, *want in read_vectors("RNG_BELOW_VECTOR"):
            r = Rng(seed)
            self.assertEqual([r.below(n) for _ in range(5)], want, "seed %#x" % seed)

    def test_seed_0_is_the_published_sequence(self):
        # Steele, Lea and Flood's splitmix64 from state 0 (the reference
        # implementation's first output), independent of the file above.
        self.assertEqual(Rng(0).u64(), 0xE220A8397B1DCDAF)


if __name__ == "__main__":
    unittest.main()
