"""PBM: the pmf against binomials in fractions, the closed-form D_∞, validation."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import pytest

import rdpcalc
from rdpcalc import ParameterError
from rdpcalc.mechanisms import PBM

from .oracles import binomial_pmf, convolve_fractions, renyi_float


@pytest.mark.parametrize("trials, theta, x", [(16, F(1, 4), F(3, 2)), (15, F("0.35"), F(-1, 3)), (1, F("0.1"), F(0)),
                                               (40, F("0.49"), F(3, 2))])
def test_pmf_is_binomial(trials, theta, x):
    mech = PBM(F(3, 2), theta, trials)
    oracle = binomial_pmf(trials, F(1, 2) + theta * x / F(3, 2))
    with mpmath.workdps(60):
        got = mech.pmf(x)
        for g, e in zip(got, oracle, strict=True):
            assert abs(g - mpmath.mpf(e.numerator) / e.denominator) <= mpmath.mpf(10) ** -55 * max(e, F(1, 10**300))


@pytest.mark.parametrize("theta, trials", [(F(1, 4), 16), (F("0.15"), 16), (F("0.35"), 15)])
def test_d_infinity_closed_form_for_every_n(theta, trials):
    mech = PBM(F(3, 2), theta, trials)
    closed = trials * math.log((1 + 2 * float(theta)) / (1 - 2 * float(theta)))
    for n in (1, 2, 7):
        value = rdpcalc.divergence(mech, n=n, alphas=["inf"])[0]["divergence"]
        assert value == pytest.approx(closed, rel=1e-12)


def test_secagg_sum_against_fraction_convolution():
    mech = PBM(1, F(1, 4), 4)
    plus, minus = binomial_pmf(4, F(3, 4)), binomial_pmf(4, F(1, 4))
    # n = 3, k = 1 other at +c: P = plus*plus*minus, Q = minus*plus*minus
    p = convolve_fractions(convolve_fractions(plus, plus), minus)
    q = convolve_fractions(convolve_fractions(minus, plus), minus)
    for alpha in (1, 2, 7.5, math.inf):
        expected = renyi_float([float(v) for v in p], [float(v) for v in q], alpha)
        got = rdpcalc.divergence(mech, n=3, alphas=[alpha], choose=rdpcalc.NeighbourOptions(others_plus=1))[0]
        # both directions are taken; by symmetry D(P‖Q) = D(Q'‖P') with the mirrored k
        assert got["divergence"] >= expected * (1 - 1e-12)
        forward = rdpcalc.divergence(mech, n=3, alphas=[alpha],
                                     choose=rdpcalc.NeighbourOptions(others_plus=1, x=1, x_prime=-1))[0]["divergence"]
        assert forward == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "kwargs, parameter",
    [({"c": 0, "theta": 0.25, "trials": 16}, "c"), ({"c": 1, "theta": 0.5, "trials": 16}, "theta"),
     ({"c": 1, "theta": 0, "trials": 16}, "theta"), ({"c": 1, "theta": 0.25, "trials": 0}, "trials")],
)
def test_invalid_parameters(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        PBM(**kwargs)
    assert info.value.parameter == parameter


def test_moments_against_the_binomial_closed_form():
    """Decoded (c/(Mθ))(Z − M/2) with Z ~ Binomial(M, ½ + θx/c): mean x, variance and MSE
    (c/(Mθ))² M p(1 − p), bias 0."""
    import rdpcalc

    for c, theta, trials, x in ((1, 0.25, 16, 0.3), (1.5, 0.1, 5, -1.5), (2, 0.45, 1, 0)):
        record = rdpcalc.moments(rdpcalc.make_mechanism("pbm", c=c, theta=theta, trials=trials), x=x)
        p = 0.5 + theta * x / c
        variance = (c / (trials * theta)) ** 2 * trials * p * (1 - p)
        assert record["mean"] == pytest.approx(x, abs=1e-14) and abs(record["bias"]) < 1e-14
        assert record["variance"] == pytest.approx(variance, rel=1e-12) and record["mse"] == pytest.approx(variance, rel=1e-12)
