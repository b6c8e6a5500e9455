"""RQM: Lemma 5.1 against brute-force enumeration of Algorithm 2, structure, Theorem 5.2."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdpcalc
from rdpcalc import ParameterError
from rdpcalc.mechanisms import RQM

from .oracles import rqm_pmf_by_enumeration

PAPER_PAIRS = [  # (Δ/c, q) of the RQM paper's experiments (Youn et al. 2023, §6 and App. D), m = 16
    (F(1), F("0.42")), (F(2), F("0.57")), (F("0.66"), F("0.33")), (F("2.33"), F("0.42")),
    (F(4), F("0.5")), (F(1), F("0.23")), (F("0.429"), F("0.49")), (F(1), F("0.65")), (F("0.25"), F("0.37")),
]


@pytest.fixture(autouse=True)
def high_precision():
    with mpmath.workdps(60):
        yield


def pmf_at(mech: RQM, x, dps: int = 60) -> list:
    with mpmath.workdps(dps):
        return mech.pmf(F(x))


def test_hand_example_exact():
    # a hand-checkable exact example of Lemma 5.1 (Youn et al. 2023, eq. (2)): c = Δ = 1, m = 4, q = 1/2
    mech = RQM(1, 1, 4, F(1, 2))
    expected = {
        F(1): [F(1, 16), F(3, 32), F(3, 8), F(15, 32)],
        F(-1): [F(15, 32), F(3, 8), F(3, 32), F(1, 16)],
        F(0): [F(3, 16), F(5, 16), F(5, 16), F(3, 16)],
        F(1, 3): [F(13, 96), F(7, 32), F(13, 32), F(23, 96)],
    }
    for x, values in expected.items():
        got = pmf_at(mech, x)
        for g, e in zip(got, values, strict=True):
            assert abs(g - mpmath.mpf(e.numerator) / e.denominator) < mpmath.mpf(10) ** -55


@pytest.mark.parametrize(
    "c, delta, m, q",
    [(F(3, 2), F(3, 2), 8, F(21, 50)), (F(3, 2), F(1, 3), 7, F(1, 5)), (F(1), F(2), 10, F(57, 100)),
     (F(2), F(1, 7), 9, F(9, 10)), (F(1), F(1), 3, F(1, 2)), (F(1), F(5), 2, F(1, 3))],
)
def test_lemma_5_1_equals_enumeration_of_algorithm_2(c, delta, m, q):
    mech = RQM(c, delta, m, q)
    inputs = {c, -c, F(0), c / 7, -5 * c / 11} | {mech.level(i) for i in range(m) if abs(mech.level(i)) <= c}
    for x in sorted(inputs):
        oracle = rqm_pmf_by_enumeration(c, delta, m, q, x)
        assert sum(oracle) == 1
        got = pmf_at(mech, x)
        for g, e in zip(got, oracle, strict=True):
            assert abs(g - mpmath.mpf(e.numerator) / e.denominator) <= mpmath.mpf(10) ** -55 * max(1, e)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(2, 40),
    delta_over_c=st.fractions(F(1, 100), F(50)).filter(lambda v: v > 0),
    q=st.fractions(F(1, 1000), F(999, 1000)),
    t=st.fractions(-1, 1),
)
def test_pmf_is_a_distribution_unbiased_and_symmetric(m, delta_over_c, q, t):
    c = F(3, 2)
    mech = RQM(c, c * delta_over_c, m, q)
    x = c * t
    with mpmath.workdps(50):
        p = mech.pmf(x)
        mirrored = mech.pmf(-x)
        assert all(v > 0 for v in p)  # full support
        assert abs(mpmath.fsum(p) - 1) < mpmath.mpf(10) ** -45
        mean = mpmath.fsum(v * mpmath.mpf(mech.level(i).numerator) / mech.level(i).denominator
                           for i, v in enumerate(p))
        assert abs(mean - mpmath.mpf(x.numerator) / x.denominator) < mpmath.mpf(10) ** -40
        for i in range(m):
            assert abs(p[i] - mirrored[m - 1 - i]) < mpmath.mpf(10) ** -45


def test_pmf_affine_between_breakpoints_and_continuous():
    mech = RQM(F(3, 2), F(3, 2), 16, F("0.42"))
    points = mech.breakpoints()
    for lo, hi in zip(points, points[1:]):
        mid = (lo + hi) / 2
        a, b, m = pmf_at(mech, lo), pmf_at(mech, hi), pmf_at(mech, mid)
        for i in range(16):
            assert abs(m[i] - (a[i] + b[i]) / 2) < mpmath.mpf(10) ** -50
    # continuity at a grid point, approached from below
    grid = mech.level(4)
    left, at = pmf_at(mech, grid - F(1, 10**30)), pmf_at(mech, grid)
    assert max(abs(u - v) for u, v in zip(left, at)) < mpmath.mpf(10) ** -28


def test_reference_pmf_and_scale_invariance():
    # reference pmf at x = c (an independent 15-digit mpmath computation)
    reference = [0.00033875219752326, 0.000264732494198013, 0.000495754984899293, 0.000935478913163133,
                 0.00178155077370421, 0.00343162044168991, 0.00670606634429502, 0.0133564296361272,
                 0.02731223432208, 0.0581016381792, 0.1322917302, 0.35304423, 0.222114250821534,
                 0.0905734133312308, 0.0415019837845896, 0.0477501335757659]
    big = RQM("1.5", "1.5", 16, "0.42")
    small = RQM("2.9731e-5", "2.9731e-5", 16, "0.42")
    got_big, got_small = pmf_at(big, "1.5"), pmf_at(small, "2.9731e-5")
    for g, s, r in zip(got_big, got_small, reference, strict=True):
        assert float(g) == pytest.approx(r, rel=1e-12)
        assert abs(g - s) < mpmath.mpf(10) ** -50


def test_two_levels_ignore_q():
    c, delta = F(1), F(1, 3)
    a, b = pmf_at(RQM(c, delta, 2, F("0.1")), "0.3"), pmf_at(RQM(c, delta, 2, F("0.9")), "0.3")
    assert all(abs(u - v) < mpmath.mpf(10) ** -55 for u, v in zip(a, b))
    record = rdpcalc.divergence(RQM(c, delta, 2, F("0.5")), n=1, alphas=["inf"])[0]
    assert record["divergence"] == pytest.approx(math.log((2 * 1 + 1 / 3) / (1 / 3)), rel=1e-13)


def test_theorem_5_2_reference_values():
    # reference values (an independent 50-digit mpmath computation)
    mech = RQM("1.5", "1.5", 16, "0.42")
    with mpmath.workdps(30):
        assert float(mech.theorem_5_2_bound()) == pytest.approx(9.0124748173033, rel=1e-13)
        assert float(mech.theorem_5_2_intermediate()) == pytest.approx(7.99024169863787, rel=1e-13)
        # equivalent form log(2(c+Δ)/Δ) + (m−2) log(1/(1−q))
        assert float(mech.theorem_5_2_bound()) == pytest.approx(math.log(4) + 14 * math.log(1 / 0.58), rel=1e-14)


@pytest.mark.parametrize("ratio, q", PAPER_PAIRS)
def test_paper_pairs_reference_table(ratio, q):
    """Exact D_∞(P_c‖P_−c), the global D_∞, ε_⋆, ε_Thm and argmin_i P_−c(i) against 4-decimal
    reference values (an independent computation; the paper states none)."""
    table = {
        (F(1), F("0.42")): (5.4699, 5.4699, 7.9902, 9.0125, 14),
        (F(2), F("0.57")): (5.6395, 5.6395, 10.3963, 12.9142, 15),
        (F("0.66"), F("0.33")): (5.2875, 5.2983, 6.7335, 7.2222, 14),
        (F("2.33"), F("0.42")): (3.5848, 3.5848, 7.0033, 8.6764, 14),
        (F(4), F("0.5")): (3.0912, 3.0912, 8.0127, 10.6204, 15),
        (F(1), F("0.23")): (3.1738, 3.2193, 4.5946, 5.0454, 14),
        (F("0.429"), F("0.49")): (9.0413, 9.0413, 10.7271, 11.3232, 15),
        (F(1), F("0.65")): (9.5436, 9.5436, 13.8748, 16.0838, 15),
        (F("0.25"), F("0.37")): (7.7035, 7.7035, 8.5807, 8.7711, 14),
    }
    pair_inf, global_inf, eps_star, eps_thm, argmin = table[(ratio, q)]
    c = F(3, 2)
    mech = RQM(c, c * ratio, 16, q)
    paper = rdpcalc.divergence(mech, n=1, alphas=["inf"], choose=rdpcalc.NeighbourOptions(neighbours="paper"))[0]["divergence"]
    worst = rdpcalc.divergence(mech, n=1, alphas=["inf"])[0]["divergence"]
    assert paper == pytest.approx(pair_inf, abs=6e-5)
    assert worst == pytest.approx(global_inf, abs=6e-5)
    with mpmath.workdps(30):
        assert float(mech.theorem_5_2_intermediate()) == pytest.approx(eps_star, abs=6e-5)
        assert float(mech.theorem_5_2_bound()) == pytest.approx(eps_thm, abs=6e-5)
        p_minus = mech.pmf(-c)
        assert min(range(16), key=lambda i: p_minus[i]) == argmin
    # Theorem 5.2's conclusion holds here although its proof does not (the argmin is 14, not m − 1, for some pairs)
    assert worst <= eps_star <= eps_thm


@pytest.mark.parametrize(
    "kwargs, parameter",
    [({"c": -1, "delta": 1, "m": 4, "q": 0.5}, "c"), ({"c": 1, "delta": 0, "m": 4, "q": 0.5}, "delta"),
     ({"c": 1, "delta": 1, "m": 1, "q": 0.5}, "m"), ({"c": 1, "delta": 1, "m": 2.5, "q": 0.5}, "m"),
     ({"c": 1, "delta": 1, "m": 4, "q": 1}, "q"), ({"c": 1, "delta": 1, "m": 4, "q": 0}, "q"),
     ({"c": float("nan"), "delta": 1, "m": 4, "q": 0.5}, "c"), ({"c": "1e999999", "delta": 1, "m": 4, "q": 0.5}, "c")],
)
def test_invalid_parameters_name_the_parameter(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        RQM(**kwargs)
    assert info.value.parameter == parameter


def test_input_outside_range_is_refused():
    with pytest.raises(ParameterError, match="^x: "):
        RQM(1, 1, 4, 0.5).pmf(F(3, 2))


def test_moments_against_the_sampler():
    """Mean, variance and MSE of RQM's decoded level from the exact pmf, against 400 000 draws of
    Algorithm 2 (the sampler shares no code with the pmf): within 5 standard errors."""
    import numpy as np

    import rdpcalc

    mech = rdpcalc.make_mechanism("rqm", c=1.5, delta=1.5, m=16, q="0.42")
    record = rdpcalc.moments(mech, x="0.7")
    levels = np.array([float(v) for v in mech.output_values()])
    draws = levels[mech.sample(np.full(400_000, 0.7), np.random.default_rng(5))]
    error = draws.std() / np.sqrt(len(draws))
    assert abs(draws.mean() - record["mean"]) < 5 * error and abs(record["bias"]) < 1e-12
    spread = np.std((draws - draws.mean()) ** 2) / np.sqrt(len(draws))
    assert abs(draws.var() - record["variance"]) < 5 * spread
    assert record["mse"] == pytest.approx(record["variance"] + record["bias"] ** 2, rel=1e-12)
