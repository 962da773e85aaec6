"""Statistics of escape rates (standard library only): the exact binomial
(Clopper-Pearson) interval of an observed rate, the Poisson bound the
oracle judges escapes with (oracle/verdict.c poisson_bound, rule V9), and
the verdict on one (width, pattern) cell of `crashtest.py protection`."""

import math

# The oracle's one-sided tail: escapes above the bound have odds below
# this under the expected rate (a false failure once in a million cells).
TAIL = 1e-6
# A cell whose expected escapes reach this is said to be observable: its
# observed rate is tested against the expected one both ways.
OBSERVABLE = 5.0


def pattern_odds(parity, w):
    """The odds a checked flip escapes a w-byte code, from the construction
    (oracle/verdict.c vd_pattern_odds, the same numbers): "odd" 0, "entry"
    2^-(8w-3), "span" 2^-(8w-2), "slot" 2^-(8w-1), "page" 2^-31."""
    if not parity or parity == "odd" or w <= 0:
        return 0.0
    if parity == "page":
        return 2.0**-31
    bits = 8 * min(w, 8) - 3 + {"span": 1, "slot": 2}.get(parity, 0)
    return 2.0**-bits


def binom_cdf(x, n, p):
    """P(X <= x) for X ~ Binomial(n, p) (the sum of its terms)."""
    if x < 0:
        return 0.0
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if x >= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    t = 0.0
    for k in range(0, min(x, n) + 1):
        t += math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq
        )
    return min(1.0, t)


def clopper_pearson(x, n, alpha=0.05):
    """The exact (Clopper-Pearson) two-sided interval of a rate of X in N."""

    def solve(f):
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if f(mid):
                lo = mid
            else:
                hi = mid
        return lo

    lower = 0.0 if x == 0 else solve(lambda p: 1.0 - binom_cdf(x - 1, n, p) < alpha / 2)
    upper = 1.0 if x >= n else solve(lambda p: binom_cdf(x, n, p) > alpha / 2)
    return lower, upper


def poisson_bound(lam, tail=TAIL):
    """Smallest k with P(Poisson(LAM) > k) < TAIL (0 when LAM is 0): the
    most escapes the expected LAM allows.  The terms are taken in log
    space from the mean up (exp(-LAM) underflows past LAM = 745) and the
    tail summed from far above, where the terms are nothing."""
    if lam <= 0:
        return 0
    top = int(lam + 14 * math.sqrt(lam) + 60)
    lo = max(0, int(lam))  # the bound is never below the mean's floor
    tail_sum, k = 0.0, top
    for j in range(top, lo - 1, -1):
        # tail_sum: P(X > j) once the term of j + 1 is added
        tail_sum += math.exp(-lam + (j + 1) * math.log(lam) - math.lgamma(j + 2))
        if tail_sum >= tail:
            return j + 1
        k = j
    return k


def cell_verdict(checked, escaped, expected):
    """One (width, pattern) cell: CHECKED flips, ESCAPED of them, EXPECTED
    escapes (the sum of each flip's odds from the code's construction).
    Returns rate, ci95, expected_rate, bound (escapes allowed), fail
    (escapes above the bound: a single-bit escape always), observable
    (expected >= OBSERVABLE) and consistent (observable and the expected
    rate inside the observed rate's 95% interval; None when not
    observable)."""
    n, x = int(checked), int(escaped)
    ci = list(clopper_pearson(x, n)) if n else None
    exp_rate = expected / n if n else None
    bound = poisson_bound(expected)
    observable = expected >= OBSERVABLE
    consistent = None
    if observable and ci:
        consistent = ci[0] <= exp_rate <= ci[1]
    return {
        "checked": n,
        "escaped": x,
        "rate": x / n if n else None,
        "ci95": ci,
        "expected": expected,
        "expected_rate": exp_rate,
        "bound": bound,
        "fail": x > bound,
        "observable": observable,
        "consistent": consistent,
    }
