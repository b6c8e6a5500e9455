"""Quantized Gaussian: Lemma 2 against quadrature and Monte Carlo, reference values, Theorem 2."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc import ParameterError
from rdpcalc.mechanisms import QuantizedGaussian as QG
from rdpcalc.numerics import FastEngine

from .oracles import chi_square_p_value, qgauss_pmf_by_quadrature, sample_qgauss

# reference values (an independent mpmath computation), σ = C_q = 1: k → D1, D2, D5, D10, D∞, Thm2-mid, Thm2 ε∞
TABLE_SIGMA_1 = {
    2: (0.228426468352, 0.40137156069, 0.587845786398, 0.643844530781, 0.689048009074, 1.095881376, 1.31886871),
    3: (0.36059465721, 0.627038094129, 0.91658848539, 1.01072087481, 1.08773310039, 1.780880281, 2.285899452),
    4: (0.403819711993, 0.703041948913, 1.03474684635, 1.14663931778, 1.23911136174, 2.071496021, 2.8270036),
    5: (0.422668510216, 0.737735684513, 1.09211352818, 1.21373926698, 1.31488491983, 2.225463383, 3.189070636),
    8: (0.442655767354, 0.776887609931, 1.16210293546, 1.29709152497, 1.41025213838, 2.90579096, 3.849373567),
    9: (0.445429302412, 0.782670562554, 1.17320847963, 1.31052359108, 1.42577520079, 3.083599778, 4.000138797),
    16: (0.453235262719, 0.799837500196, 1.20810622665, 1.35323523644, 1.47548212239, 3.866449802, 4.685761722),
    17: (0.453716149102, 0.800956759836, 1.21051122303, 1.35621131831, 1.47896720817, 3.942536805, 4.754409861),
    32: (0.456887020543, 0.808627244588, 1.22758556008, 1.37748410452, 1.50397021321, 4.689717957, 5.445762231),
    33: (0.456982913419, 0.808868927424, 1.22814281414, 1.37818294301, 1.50479445883, 4.72438352, 5.478512946),
    64: (0.45836597278, 0.812440735425, 1.23654445488, 1.3887575563, 1.51729035568, 5.44671389, 6.171222174),
}
# reference values, other σ (C_q = 1): σ → k → D1, D2, D10, D∞, mid, ε∞ bound
TABLE_OTHER_SIGMA = {
    "0.5": {2: (0.4543630536, 0.7250876469, 0.9558256243, 0.990905158, 1.306620968, 1.31161952),
            16: (1.91945722, 3.192933576, 4.328171327, 4.510514292, 6.15162539, 7.156064323),
            64: (1.950425997, 3.285114476, 4.510396647, 4.709583985, 7.984759576, 8.804771033)},
    "2": {2: (0.07281144802, 0.1390895465, 0.3262906496, 0.3839366358, 0.9034293444, 1.722884208),
          8: (0.1005789884, 0.1914860406, 0.4520336718, 0.5449144564, 3.050233185, 3.804958922),
          64: (0.1032535886, 0.1967687497, 0.4691702448, 0.5684825646, 5.331554154, 6.03251931)},
}


def relative(value: float, reference: float, digits_given: int = 9) -> bool:
    return abs(value - reference) <= 10.0 ** -digits_given * max(1.0, abs(reference))


@pytest.mark.parametrize("k", sorted(TABLE_SIGMA_1))
def test_reference_table_sigma_1(k):
    mech = QG(1, k, 1)
    d1, d2, d5, d10, dinf, mid, eps = TABLE_SIGMA_1[k]
    got = [r["divergence"] for r in rdpcalc.divergence(mech, alphas=[1, 2, 5, 10, "inf"])]
    for value, reference in zip(got, (d1, d2, d5, d10, dinf), strict=True):
        assert relative(value, reference, 10)
    with mpmath.workdps(30):
        assert relative(float(mech.theorem_2_intermediate()), mid, 8)
        assert relative(float(mech.theorem_2_bound()), eps, 8)
        assert relative(float(mech.exact_d_infinity()), dinf, 10)


@pytest.mark.parametrize("sigma, k", [(s, k) for s, rows in TABLE_OTHER_SIGMA.items() for k in rows])
def test_reference_table_other_sigma(sigma, k):
    mech = QG(sigma, k, 1)
    d1, d2, d10, dinf, mid, eps = TABLE_OTHER_SIGMA[sigma][k]
    got = [r["divergence"] for r in rdpcalc.divergence(mech, alphas=[1, 2, 10, "inf"])]
    for value, reference in zip(got, (d1, d2, d10, dinf), strict=True):
        assert relative(value, reference, 8)
    with mpmath.workdps(30):
        assert relative(float(mech.theorem_2_intermediate()), mid, 8)
        assert relative(float(mech.theorem_2_bound()), eps, 8)


@pytest.mark.parametrize("x, sigma, k, clip", [("0.5", 1, 64, 1), ("0.3", "0.7", 9, 2), ("-0.25", "0.4", 5, 1)])
def test_pmf_equals_quadrature_of_lemma_2(x, sigma, k, clip):
    oracle = qgauss_pmf_by_quadrature(F(x), F(sigma), k, F(clip))
    with mpmath.workdps(40):
        got = QG(sigma, k, clip).pmf(F(x))
        for g, o in zip(got, oracle, strict=True):
            assert abs(g - o) < mpmath.mpf(10) ** -25


def test_pmf_test_vectors_and_mean_identity():
    # reference pmfs (σ = C_q = 1, an independent mpmath computation) and the mean identity
    vectors = {
        2: [0.334244881819351, 0.665755118180649],
        4: [0.125997146266993, 0.185751049127743, 0.253241108401588, 0.435010696203677],
        8: [0.0881002722195331, 0.0547055036365641, 0.0739927887987987, 0.0923360481822108,
            0.106310835800672, 0.112929832802318, 0.11067893564985, 0.360945782910054],
    }
    for k, expected in vectors.items():
        with mpmath.workdps(30):
            plus, minus = QG(1, k, 1).pmf(F(1, 2)), QG(1, k, 1).pmf(F(-1, 2))
        assert [float(v) for v in plus] == pytest.approx(expected, rel=1e-13)
        assert [float(v) for v in minus] == pytest.approx(expected[::-1], rel=1e-13)
        assert rdpcalc.moments(QG(1, k, 1), x="0.5")["mean"] == pytest.approx(0.331510236361299, rel=1e-13)
    assert rdpcalc.moments(QG("0.7", 9, 2), x="0.3")["mean"] == pytest.approx(0.298347433347611, rel=1e-13)


def test_tail_stable_at_small_sigma():
    # the naive second difference G(w_{r−1}) − 2G(w_r) + G(w_{r+1}) goes negative here at 30 digits
    mech = QG("0.05", 64, 1)
    with mpmath.workdps(30):
        low = mech.pmf(F(1, 2))
    with mpmath.workdps(200):
        high = mech.pmf(F(1, 2))
        assert all(v > 0 for v in low)
        assert abs(mpmath.fsum(high) - 1) < mpmath.mpf(10) ** -190
        assert max(abs(a - b) / b for a, b in zip(low, high)) < 1e-27


def test_monotone_in_k_and_below_gaussian_and_clipped_gaussian():
    previous = None
    alphas = [1, 2, 10, "inf"]
    mech_limit = QG(1, 2, 1)
    with mpmath.workdps(30):
        limit = [float(mech_limit.clipped_gaussian_divergence(a, F(1, 2), F(-1, 2))) for a in (1, 2, 10, math.inf)]
    assert limit == pytest.approx([0.459635205106, 0.815898057006, 1.39950048126, 1.53003263923], rel=1e-11)
    for k in range(2, 65):
        values = [r["divergence"] for r in rdpcalc.divergence(QG(1, k, 1), alphas=alphas)]
        assert all(v < a * 0.5 for v, a in zip(values, (1, 2, 10)))
        assert all(v < lim for v, lim in zip(values, limit))
        if previous is not None:
            assert all(v > p for v, p in zip(values, previous))
        previous = values


def test_two_levels_closed_form():
    # k = 2 is Bernoulli [derived] with P[B(1)] = (m + C)/(2C), m = E clip(C/2 + σZ)
    for sigma in ("0.1", "1", "3"):
        m = rdpcalc.moments(QG(sigma, 2, 1), x="0.5")["mean"]
        kl, dinf = (r["divergence"] for r in rdpcalc.divergence(QG(sigma, 2, 1), alphas=[1, "inf"]))
        assert dinf == pytest.approx(math.log((1 + m) / (1 - m)), rel=1e-12)
        assert kl == pytest.approx(m * math.log((1 + m) / (1 - m)), rel=1e-12)


@pytest.mark.parametrize("k, sigma", [(2, "0.5"), (3, "1"), (8, "0.5"), (4, "3")])
def test_worst_pair_is_plus_minus_half_clip_on_a_grid(k, sigma):
    mech = QG(sigma, k, 1)
    grid = rdpcalc.divergence(mech, alphas=[1, 2, 8, "inf"], choose=rdpcalc.NeighbourOptions(grid=11))
    pair = rdpcalc.divergence(mech, alphas=[1, 2, 8, "inf"], choose=rdpcalc.NeighbourOptions(neighbours="paper"))
    for g, p in zip(grid, pair, strict=True):
        assert {g["x"], g["x_prime"]} == {0.5, -0.5}
        assert g["divergence"] == pytest.approx(p["divergence"], rel=1e-13)


@pytest.mark.parametrize("x, sigma, k", [(0.5, 1.0, 8), (-0.2, 0.3, 16), (0.1, 2.0, 3)])
def test_monte_carlo_sampler_matches_pmf(x, sigma, k):
    rng = np.random.default_rng(20261122)
    samples = sample_qgauss(x, sigma, k, 1.0, 200_000, rng)
    with mpmath.workdps(30):
        pmf = [float(v) for v in QG(sigma, k, 1).pmf(F(x))]
    assert chi_square_p_value(samples, pmf) > 1e-4
    # the same test rejects a wrong pmf (the neighbouring input's)
    with mpmath.workdps(30):
        wrong = [float(v) for v in QG(sigma, k, 1).pmf(F(x) - F(1, 20))]
    assert chi_square_p_value(samples, wrong) < 1e-6


@pytest.mark.parametrize("kwargs, parameter", [({"sigma": 0, "k": 4, "clip": 1}, "sigma"),
                                               ({"sigma": 1, "k": 1, "clip": 1}, "k"),
                                               ({"sigma": 1, "k": 4, "clip": -1}, "clip")])
def test_invalid_parameters(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        QG(**kwargs)
    assert info.value.parameter == parameter


def test_input_range_is_half_the_clip():
    with pytest.raises(ParameterError, match="^x: "):
        rdpcalc.divergence(QG(1, 4, 1), choose=rdpcalc.NeighbourOptions(x="0.6", x_prime="0"))


def test_the_worst_pairs_numerical_premise_is_stated_wherever_it_is_used(capsys):
    """±C_q/2 is the worst pair for finite α by a numerical check only: the divergence's
    protocol and the accounted per-round curve both say so."""
    import rdpcalc

    mech = rdpcalc.make_mechanism("qgauss", sigma=1, k=4, clip=1)
    premise = mech.WORST_PAIR_PREMISE
    assert premise and "not a proof" in premise
    for n in (1, 3):
        assert premise in rdpcalc.divergence(mech, n=n, alphas=[2])[0]["protocol"]
    assert premise in rdpcalc.account(mech, n=3, rounds=2, method="rdp")["per_round_curve"]
    rqm = rdpcalc.make_mechanism("rqm", c=1, delta=1, m=4, q="0.5")
    assert "numerical check" not in rdpcalc.divergence(rqm, alphas=[2])[0]["protocol"]


@pytest.mark.parametrize("sigma, k, clip, n", [(1, 16, 1, 12), (0.2, 7, 2, 40)])
def test_the_accountants_certified_curve_searches_only_at_the_certificates_orders(sigma, k, clip, n, monkeypatch):
    """``certified_upper`` runs the (exhaustive) search at the few orders where the certificate is
    computed (at most INTERVAL_ORDERS of them where the sum has few outputs, about
    certificate.ORDERS elsewhere), not at all 96 of the accountant's: a valid curve, above every value found, and no
    looser than the search's own certified bound at any order (tighter between the computed orders
    where the one-client bound is the smaller there: σ = 0.2)."""
    from rdpcalc.privacy import rdp
    from rdpcalc.worstcase import secagg

    mech = rdpcalc.make_mechanism("qgauss", sigma=sigma, k=k, clip=clip)
    orders = [*rdp.ORDERS, math.inf]
    full = secagg.search(mech, n, orders, FastEngine())
    asked = []
    searched = secagg.search
    monkeypatch.setattr(secagg, "search", lambda mech, n, alphas, *rest: asked.append(list(alphas)) or searched(
        mech, n, alphas, *rest))
    curve, text = secagg.certified_upper(mech, n, orders, FastEngine())
    computed = max(secagg._interval_orders(mech, n)[0], secagg.certificate.DIRECT_ORDERS) + 2  # grid ends and ∞
    assert len(asked) == 1 and len(asked[0]) <= computed < len(orders) and math.inf in asked[0]
    assert text == full.certificate
    for found, upper, bound in zip(full.values, full.upper, curve, strict=True):
        assert found * (1 - 1e-12) <= bound <= upper * (1 + 1e-12)
    assert all(a <= b for a, b in zip(curve, curve[1:]))  # non-decreasing in α, as the worst case
