"""Independent oracles: written from the papers' definitions, sharing no code with rdpcalc."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction


def rqm_pmf_by_enumeration(c: Fraction, delta: Fraction, m: int, q: Fraction, x: Fraction) -> list[Fraction]:
    """RQM's output pmf by running Algorithm 2 over every subset of interior levels, exactly."""
    x_max = c + delta
    levels = [-x_max + Fraction(2 * i) * x_max / (m - 1) for i in range(m)]
    pmf = [Fraction(0)] * m
    interior = range(1, m - 1)
    for kept_mask in itertools.product((False, True), repeat=m - 2):
        kept = [0] + [i for i, keep in zip(interior, kept_mask) if keep] + [m - 1]
        weight = Fraction(1)
        for keep in kept_mask:
            weight *= q if keep else 1 - q
        lower = max(i for i in kept if levels[i] <= x)
        upper = min(i for i in kept if levels[i] >= x)
        if lower == upper:
            pmf[lower] += weight
            continue
        up = (x - levels[lower]) / (levels[upper] - levels[lower])
        pmf[upper] += weight * up
        pmf[lower] += weight * (1 - up)
    return pmf


def binomial_pmf(trials: int, p: Fraction) -> list[Fraction]:
    """Binomial(trials, p) exactly."""
    return [math.comb(trials, i) * p**i * (1 - p) ** (trials - i) for i in range(trials + 1)]


def convolve_fractions(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def renyi_float(p: list[float], q: list[float], alpha: float) -> float:
    """D_α by the textbook formula in plain float (fine for well-conditioned small cases)."""
    if alpha == math.inf:
        return max(math.log(x / y) for x, y in zip(p, q) if x > 0)
    if alpha == 1:
        return sum(x * math.log(x / y) for x, y in zip(p, q) if x > 0)
    return math.log(sum(x**alpha * y ** (1 - alpha) for x, y in zip(p, q) if x > 0)) / (alpha - 1)
