"""Independent oracles: written from the papers' definitions, sharing no code with rdpcalc."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np


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


def convolve_fractions(a: list, b: list) -> list:
    """The convolution term by term, in the numbers given (exact fractions, or mpmath's)."""
    out = [a[0] * 0] * (len(a) + len(b) - 1)
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


def renyi_linear(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    """D_α of two linear pmfs (numpy arrays) from the definition, its sum taken in the log domain
    (α = 1: KL), so tails far below the float range of q^{1−α} do not overflow."""
    kept = p > 0
    if alpha == 1:
        return float(np.sum(p[kept] * np.log(p[kept] / q[kept])))
    terms = alpha * np.log(p[kept]) + (1 - alpha) * np.log(q[kept])
    return float(terms.max() + np.log(np.sum(np.exp(terms - terms.max())))) / (alpha - 1)


def qgauss_pmf_by_quadrature(x, sigma, k: int, clip, dps: int = 40) -> list:
    """Lemma 2, eqs. (11)–(12), by numerical integration of the Gaussian density (mpmath.quad)."""
    import mpmath

    with mpmath.workdps(dps):
        x, sigma, clip = (mpmath.mpf(v.numerator) / v.denominator for v in (Fraction(x), Fraction(sigma), Fraction(clip)))
        levels = [-clip + 2 * clip * r / (k - 1) for r in range(k)]
        delta = levels[1] - levels[0]

        def density(y):
            return mpmath.npdf(y, x, sigma)

        def ramp_up(a, b):  # ∫_a^b f(y) (y − a)/δ dy
            return mpmath.quad(lambda y: density(y) * (y - a) / delta, [a, b])

        def ramp_down(a, b):  # ∫_a^b f(y) (b − y)/δ dy
            return mpmath.quad(lambda y: density(y) * (b - y) / delta, [a, b])

        out = [mpmath.ncdf(levels[0], x, sigma) + ramp_down(levels[0], levels[1])]
        for r in range(1, k - 1):
            out.append(ramp_up(levels[r - 1], levels[r]) + ramp_down(levels[r], levels[r + 1]))
        out.append(ramp_up(levels[k - 2], levels[k - 1]) + 1 - mpmath.ncdf(levels[k - 1], x, sigma))
        return out


def sample_qgauss(x: float, sigma: float, k: int, clip: float, size: int, rng):
    """Level indices drawn by running the quantized Gaussian mechanism (eq. 10, Def. 1)."""
    import numpy as np

    y = np.clip(x + sigma * rng.standard_normal(size), -clip, clip)
    position = (y + clip) * (k - 1) / (2 * clip)
    lower = np.minimum(np.floor(position), k - 2)
    up = rng.random(size) < (position - lower)
    return (lower + up).astype(int)


def sample_qmgeo(w: float, R: int, p: float, w_max: float, orientation: str, size: int, rng):
    """Level indices drawn by running QMGeo (eq. 9 with the text's supports): a λ-coin picks the
    branch, then a truncated geometric step by inverse CDF."""
    import numpy as np

    spacing = 2 * w_max / (R - 1)
    t = (w + w_max) / spacing
    r = min(int(np.floor(t)), R - 2)
    lam = t - r
    q = 1 - p
    up_probability = lam if orientation == "S" else 1 - lam

    def truncated_geometric(m: int, count: int):  # support 1 … m
        u = rng.random(count)
        if q == 0:
            return np.ones(count, dtype=int)
        return np.ceil(np.log(1 - u * (1 - q**m)) / np.log(q)).astype(int)

    up = rng.random(size) < up_probability
    out = np.empty(size, dtype=int)
    out[up] = r + truncated_geometric(R - r - 1, int(up.sum()))
    out[~up] = r - (truncated_geometric(r + 1, int((~up).sum())) - 1)
    return out


def chi_square_p_value(samples, probabilities) -> float:
    """p-value of Pearson's χ² test of the sample counts against the probabilities (cells with
    expected count below 5 are pooled)."""
    import numpy as np
    from scipy import stats

    counts = np.bincount(samples, minlength=len(probabilities)).astype(float)
    expected = np.asarray(probabilities, dtype=float) * len(samples)
    if np.any((expected == 0) & (counts > 0)):
        return 0.0  # an output the pmf says is impossible
    order = np.argsort(expected)
    pooled_counts, pooled_expected, c_acc, e_acc = [], [], 0.0, 0.0
    for index in order:
        c_acc += counts[index]
        e_acc += expected[index]
        if e_acc >= 5:
            pooled_counts.append(c_acc)
            pooled_expected.append(e_acc)
            c_acc = e_acc = 0.0
    if e_acc > 0:
        pooled_counts[-1] += c_acc
        pooled_expected[-1] += e_acc
    statistic = sum((c - e) ** 2 / e for c, e in zip(pooled_counts, pooled_expected))
    return float(stats.chi2.sf(statistic, len(pooled_counts) - 1))


def corbin_pair_by_enumeration(alpha: Fraction, r: Fraction, x: Fraction, y: Fraction, d: int,
                               line14: str = "fixed") -> dict:
    """Joint law of CorBinQ (Algorithm 2) by running it over every z ∈ {0,1}^d and both private
    coins, in exact fractions (hence a rational α = α(ε_p))."""
    N = 2**d
    q1 = Fraction(1, 2) + x / (2 * r * alpha)
    q2 = Fraction(1, 2) + y / (2 * r * alpha)
    t1, t2 = math.floor(N * q1), math.floor(N * (1 - q2))
    f1, f2 = N * q1 - t1, N * (1 - q2) - t2
    law = {("-", "-"): Fraction(0), ("-", "+"): Fraction(0), ("+", "-"): Fraction(0), ("+", "+"): Fraction(0)}
    for z in range(N):
        if z < t1:
            first = {"+": Fraction(1)}
        elif t1 < z:
            first = {"-": Fraction(1)}
        else:
            first = {"+": f1, "-": 1 - f1}
        if z < t2:
            second = {"-": Fraction(1)}
        elif (t2 < z) if line14 == "fixed" else (t1 < z):
            second = {"+": Fraction(1)}
        else:
            second = {"-": f2, "+": 1 - f2}
        for s1, p1 in first.items():
            for s2, p2 in second.items():
                law[(s1, s2)] += Fraction(1, N) * p1 * p2
    return law
