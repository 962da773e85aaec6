"""Seeds: splitmix64 streams (the same generator stress uses), stable across
Python versions, unlike the random module's helpers.

A run seed derives each run's seed; a run seed each iteration's seed, whose
low three bits are the iteration index mod 8; an iteration seed every
draw of the iteration, through independent streams (derive(seed, NAME))."""

import hashlib
import math

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """A seeded stream: u64, below(n), choice, chance, uniform."""

    def __init__(self, seed):
        self.s = seed & M64

    def u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        return mix64(self.s)

    def below(self, n):
        return (self.u64() * n) >> 64

    def choice(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, p):
        return (self.u64() >> 11) / float(1 << 53) < p

    def uniform(self, a, b):
        return a + (b - a) * ((self.u64() >> 11) / float(1 << 53))

    def log_uniform(self, lo, hi):
        """An integer between lo and hi, uniform in log scale."""
        return max(1, int(round(math.exp(self.uniform(math.log(lo), math.log(hi))))))


def derive(seed, *parts):
    """A 48-bit seed derived from SEED and PARTS (short enough to type)."""
    h = hashlib.sha256(repr((int(seed),) + tuple(parts)).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 16


def iteration_seed(run_seed, index):
    # The low three bits carry index % 8: whitebox kill modes rotate with
    # the index, yet depend on the iteration seed alone.
    return (derive(run_seed, "iteration", index) & ~7) | (index & 7)


def run_seed_of(seed, run_index):
    return derive(seed, "run", run_index)
