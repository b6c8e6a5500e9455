"""The exact engine: arbitrary precision (MPFR through gmpy2) at a user-chosen number of digits.

The single-client pmfs come from mpmath (the mechanisms); the heavy part — convolutions and
divergence sums — runs on MPFR numbers, whose products are correctly rounded and whose
``fsum`` is exact before its final rounding. Sums of products of non-negative numbers lose no
digits, so convolutions are accurate to the working precision everywhere, tails included;
divergences run with extra guard digits to absorb the cancellation in log(Σ P^α Q^{1−α})
near α = 1. This engine is the reference the fast engine is tested against.

(mpmath runs on the same GMP integers but spends ~4 µs of Python per operation; MPFR's
~0.3 µs is what makes the exact engine usable for the RQM paper's Figure 2.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import contextmanager

import gmpy2
import mpmath

_BITS_PER_DIGIT = math.log2(10)
#: MPFR's widest exponent range, 2^±(2^62 − 1) on 64-bit builds, for the contexts below
EMIN, EMAX = gmpy2.get_emin_min(), gmpy2.get_emax_max()


def reachable_emin() -> int:
    """The most negative binary exponent −2^k that MPFR's exp really reaches in this build:
    gmpy2 2.3 accepts emin = −2^62 yet e^x still underflows to 0 below about 2^−2^30, so the
    range is probed (the largest k ≤ 62 with e^{−0.99·2^k·ln 2} ≠ 0), not assumed."""
    with gmpy2.context(gmpy2.get_context(), emin=EMIN, emax=EMAX):
        for k in range(62, 0, -1):
            if gmpy2.exp(gmpy2.mpfr(-0.99 * 2.0**k * math.log(2))) != 0:
                return -(2**k)
    return -1


def bits(dps: int) -> int:
    """Binary precision for ``dps`` decimal digits, with 8 guard bits."""
    return int(math.ceil(dps * _BITS_PER_DIGIT)) + 8


@contextmanager
def precision(dps: int):
    """MPFR context at ``dps`` digits (plus guard bits) and the widest exponent range."""
    with gmpy2.context(gmpy2.get_context(), precision=bits(dps), emin=EMIN, emax=EMAX):
        yield


def from_mpmath(values: Sequence) -> list:
    """mpmath mpf values as MPFR numbers, exactly: mantissa × 2^exponent at the precision of the
    longest mantissa (``mul_2exp`` rounds to the context's precision, 53 bits by default). An
    exponent beyond MPFR's range is an ArithmeticError (callers check the range first), never
    a silent 0."""
    parts = [value.man_exp if value else (0, 0) for value in values]
    longest = max([2] + [int(gmpy2.mpz(abs(man)).bit_length()) for man, _ in parts])
    out = []
    with gmpy2.context(gmpy2.get_context(), precision=longest, emin=EMIN, emax=EMAX):
        for value, (man, exp) in zip(values, parts):
            number = gmpy2.mul_2exp(gmpy2.mpfr(gmpy2.mpz(man)), exp)
            if bool(number) != bool(value) or gmpy2.is_infinite(number):
                raise ArithmeticError(f"{mpmath.nstr(value, 5)} is outside MPFR's exponent range")
            out.append(number)
    return out


def to_mpmath(value) -> mpmath.mpf:
    """An MPFR number as an mpmath mpf (exactly at sufficient mpmath precision), or mpmath.inf."""
    if gmpy2.is_infinite(value):
        return mpmath.inf if value > 0 else -mpmath.inf
    man, exp = value.as_mantissa_exp()
    return mpmath.mpf((int(man), int(exp)))


def convolve(a: Sequence, b: Sequence) -> list:
    """The convolution (pmf of the sum) of two pmfs: out[s] = Σ_i a[i] b[s−i]."""
    reversed_b = list(reversed(b))
    len_a, len_b = len(a), len(b)
    fsum = gmpy2.fsum
    out = []
    for s in range(len_a + len_b - 1):
        lo, hi = max(0, s - len_b + 1), min(s, len_a - 1)
        row = reversed_b[len_b - 1 - s + lo : len_b - s + hi]
        out.append(fsum([x * y for x, y in zip(a[lo : hi + 1], row)]))
    return out


def fold(a: Sequence, modulus: int) -> list:
    """The pmf of S mod ``modulus`` from the pmf of S ≥ 0: out[r] = Σ_j a[r + j·modulus]."""
    if len(a) <= modulus:
        return list(a)
    return [gmpy2.fsum(list(a[r::modulus])) for r in range(modulus)]


def power(a: Sequence, count: int) -> list:
    """pmf of the sum of ``count`` ≥ 0 independent copies, by binary powering."""
    result = [gmpy2.mpfr(1)]
    base = list(a)
    while count:
        if count & 1:
            result = convolve(result, base)
        count >>= 1
        if count:
            base = convolve(base, base)
    return result


def mixed_power(a: Sequence, b: Sequence, k: int, l: int) -> list:
    """pmf of A^{*k} * B^{*l}."""
    return convolve(power(a, k), power(b, l))


def mixed_power_rows(a: Sequence, b: Sequence, n: int, ks: Sequence[int]) -> dict[int, list]:
    """{k: A^{*k} * B^{*(n−k)}} for the requested k, reusing the prefix powers of A and B."""
    powers_a = [[gmpy2.mpfr(1)]]
    for _ in range(max(ks)):
        powers_a.append(convolve(powers_a[-1], a))
    powers_b = [[gmpy2.mpfr(1)]]
    for _ in range(n - min(ks)):
        powers_b.append(convolve(powers_b[-1], b))
    return {k: convolve(powers_a[k], powers_b[n - k]) for k in ks}


def renyi_divergences(p: Sequence, q: Sequence, alphas: Sequence[float], dps: int) -> list:
    """D_α(P̂‖Q̂) for each α (≥ 1 or +inf), P̂ and Q̂ the normalised pmfs, by the defining
    formulas:

    KL = Σ P̂ log(P̂/Q̂);  D_α = log(Σ P̂^α Q̂^{1−α}) / (α−1);  D_∞ = max log(P̂/Q̂) on supp P.

    Normalising (log Σ P^α Q^{1−α} − α log ΣP + (α−1) log ΣQ) removes the error of the
    inputs' total mass, which would otherwise be divided by α−1; the largest exponent
    α log P − (α−1) log Q is factored out of the sum, so no term overflows; the sums run with
    −log10(α−1) extra guard digits against the cancellation in log(1 + (α−1)·KL).
    Returns MPFR values (+inf where P > 0 at a point where Q = 0).
    """
    pairs = [(x, y) for x, y in zip(p, q, strict=True) if x > 0 or y > 0]
    if any(y == 0 and x > 0 for x, y in pairs):
        return [gmpy2.inf() for _ in alphas]
    near_one = [a - 1 for a in alphas if 1 < a < 2]
    guard = 10 + max([0] + [math.ceil(-math.log10(b)) for b in near_one])
    out = []
    with precision(dps + guard):
        log, exp, fsum = gmpy2.log, gmpy2.exp, gmpy2.fsum
        support = [(log(x), log(y)) for x, y in pairs if x > 0]
        log_mass_p = log(fsum([x for x, _ in pairs]))
        log_mass_q = log(fsum([y for _, y in pairs]))
        for alpha in alphas:
            if alpha == math.inf:
                out.append(max(lp - lq for lp, lq in support) - log_mass_p + log_mass_q)
            elif alpha == 1:
                total = fsum([exp(lp) * (lp - lq) for lp, lq in support])
                out.append(total / exp(log_mass_p) - log_mass_p + log_mass_q)
            else:
                alpha_mp = gmpy2.mpfr(alpha)
                beta = alpha_mp - 1
                exponents = [alpha_mp * lp - beta * lq for lp, lq in support]
                peak = max(exponents)  # factored out: e^{α log P − β log Q} overflows MPFR at α = 10¹⁵
                total = fsum([exp(e - peak) for e in exponents])
                out.append((log(total) + peak - alpha_mp * log_mass_p + beta * log_mass_q) / beta)
    with precision(dps):
        return [+value for value in out]
