"""The certified brackets of windowed unbounded noises (rdpcalc.worstcase.tails): monotone in α at both
ends, never inverted, and the rounding allowance they rest on measured against mpmath."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc.numerics import FastEngine, fast, levels
from rdpcalc.worstcase import tails

ORDERS = [1, 1 + 1e-9, 1.01, 1.05, 2, 10]
CASES = [
    ("ddg", {"c": 1, "gamma": "0.25", "sigma": "0.5", "tail": 1e-100, "cover": 64}, 4),
    ("ddg", {"c": 1, "gamma": "0.25", "sigma": "0.5", "tail": 1e-6, "cover": 1}, 1),
    ("skellam", {"c": 1, "gamma": "0.5", "mu": 4, "tail": 1e-6, "cover": 1}, 1),
    ("skellam", {"c": 1, "gamma": "0.5", "mu": 4, "tail": 1e-300, "cover": 16}, 4),
    # a nearly deterministic noise (the frontier figure's smallest): a log pmf falling by ~3700 per point
    ("ddg", {"c": 1, "gamma": "1/3", "sigma": "0.0116", "tail": 1e-30, "cover": 1, "bits": 8}, 40),
]


@pytest.mark.parametrize("name, params, n", CASES)
def test_brackets_are_ordered_and_monotone_in_alpha(name, params, n):
    """The hostile survey's cases: near α = 1 the masses' rounding is divided by α − 1; the
    lower end must stay below the upper end and both must be non-decreasing in α, as D_α is."""
    mech = rdpcalc.make_mechanism(name, **params)
    records = rdpcalc.divergence(mech, n=n, alphas=ORDERS)
    lowers = [r["divergence"] for r in records]
    uppers = [r["certified_upper"] for r in records]
    assert all(low <= high for low, high in zip(lowers, uppers)), (lowers, uppers)
    assert lowers == sorted(lowers) and uppers == sorted(uppers), (lowers, uppers)


def test_envelopes_take_the_running_maximum_and_minimum():
    ends = [(1.0, 3.0), (0.9, 5.0), (2.0, 2.5), (2.1, math.inf)]
    assert tails.monotone_envelopes([1, 1.5, 2, 10], ends) == [(1.0, 2.5), (1.0, 2.5), (2.0, 2.5), (2.1, math.inf)]
    # the orders need not be sorted
    assert tails.monotone_envelopes([2, 1], [(2.0, 2.5), (1.0, 3.0)]) == [(2.0, 2.5), (1.0, 2.5)]
    with pytest.raises(ArithmeticError, match="inverted"):
        tails.monotone_envelopes([1, 2], [(3.0, 4.0), (1.0, 2.0)])


@pytest.mark.parametrize("name, params, n", [
    ("ddg", {"c": 1, "gamma": "0.25", "sigma": "0.5", "tail": 1e-100, "cover": 1}, 4),
    ("skellam", {"c": 1, "gamma": "0.5", "mu": 4, "tail": 1e-300, "cover": 1}, 4),
    ("ddg", {"c": 1, "gamma": "1/3", "sigma": "0.0116", "tail": 1e-30, "cover": 1}, 40),
])
def test_fast_windowed_sums_are_within_the_entry_accuracy(name, params, n):
    """The lower end's rounding allowance rests on this: the fast engine's windowed sums of n
    clients are within (|log p| + 1)·n·ENTRY_ROUNDINGS/5 unit roundoffs of mpmath at 40 digits,
    entry by entry (relative). The steep noise needs the direct tilts centred at their modes and
    each point kept from the first tilt that trusts it (:mod:`rdpcalc.numerics.levels`)."""
    mech = rdpcalc.make_mechanism(name, **params)
    x = mech.breakpoints()[0]
    others = ((Fraction(0), n - 1),)
    fast_row = tails._Sums(mech, FastEngine()).total(x, others)
    with mpmath.workdps(40):
        row = [mpmath.mpf(1)]
        for pmf in [mech.pmf(x)] + [mech.pmf(Fraction(0))] * (n - 1):
            row = [mpmath.fsum(row[i - j] * pmf[j] for j in range(len(pmf)) if 0 <= i - j < len(row))
                   for i in range(len(row) + len(pmf) - 1)]
        exact = np.array([float(mpmath.log(value)) if value > 0 else -math.inf for value in row])
    assert len(exact) == len(fast_row)
    kept = np.isfinite(exact)
    allowed = (np.abs(exact[kept]) + 1) * n * tails.ENTRY_ROUNDINGS / 5 * 2.0**-53
    assert np.all(np.abs(np.expm1(fast_row[kept] - exact[kept])) <= allowed)


def test_tilted_fft_sums_are_within_their_entry_accuracy():
    """Beyond levels.DIRECT_MAX_N clients the sums come from tilted FFTs, accurate near their
    peaks only to about n unit roundoffs / TRUST: the fast engine's windowed sum of 130 clients
    is within a third of tails' allowance for it (_entry_errors, FFT_ROUNDINGS included) of the
    same sum by the direct method, which the test above ties to mpmath at small n."""
    n = levels.DIRECT_MAX_N + 2
    mech = rdpcalc.make_mechanism("skellam", c=1, gamma="0.5", mu=4, tail=1e-30, cover=1)
    x = mech.breakpoints()[0]
    engine = FastEngine()
    fft_row = tails._Sums(mech, engine).total(x, ((Fraction(0), n - 1),))
    others = levels.level_rows(engine.client(mech, Fraction(0)), engine.client(mech, Fraction(0)), n - 1, [0],
                               method="direct")[0]
    direct_row = fast.log_convolve(engine.client(mech, x), others)
    kept = np.isfinite(direct_row)
    error = np.abs(np.expm1(fft_row[kept] - direct_row[kept]))
    assert np.all(error <= tails._entry_errors(direct_row[kept], n) / 3)
    # the FFT's own term is needed: near the peak the first allowance alone is exceeded
    assert np.any(error > (np.abs(direct_row[kept]) + 1) * n * tails.ENTRY_ROUNDINGS * 2.0**-53)
