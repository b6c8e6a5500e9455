"""Extreme parameters (magnitudes 1e−300 … 1e300, probabilities e^{−300} … e^{−10¹⁵}): the fast
engine prints +∞ only where the exact supports differ, never NaN, values non-decreasing in α,
and equal to the exact engine's (or to an independent closed form) where both are finite;
what no engine can represent is refused with the option named, never an internal error."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import pytest

import rdpcalc
from rdpcalc.cli import main
from rdpcalc.errors import ParameterError
from rdpcalc.mechanisms.corbin import rr_renyi

ORDERS = [1, 1 + 1e-12, 1.5, 2, 100, 1e4, 1e6, math.inf]
ONE_MINUS_TINY = "0." + "9" * 300  # 1 − 1e−300, exactly
HALF_MINUS_TINY = "0.4" + "9" * 299  # ½ − 1e−300, exactly

#: (mechanism, parameters): each drives some probability below float64's range of values
SWEEP = [
    ("rqm", {"c": "1e30", "delta": "1e-300", "m": 4, "q": "0.5"}),  # grid fraction 1.5e−330
    ("rqm", {"c": "1e300", "delta": "1e-300", "m": 4, "q": "1e-300"}),  # grid fraction 1.5e−600
    ("rqm", {"c": "1", "delta": "1", "m": 4, "q": ONE_MINUS_TINY}),  # (1 − q)^j = 1e−300j
    ("pbm", {"c": "1e-300", "theta": HALF_MINUS_TINY, "trials": 16}),  # (1 − p)^16 = 1e−4800
    ("qmgeo", {"R": 4, "p": ONE_MINUS_TINY, "w_max": "1e300"}),  # q^j = 1e−300j; levels jump (+∞)
    ("qmgeo", {"R": 4, "p": "1e-300", "w_max": "1e-300"}),
    ("qgauss", {"sigma": "0.01", "k": 4, "clip": 1}),  # tails e^{−2800}
    ("corbin", {"eps_p": "300", "d": 2}),  # 1 − q = e^{−300}/(1 + e^{−300})
    ("corbin", {"eps_p": "300", "d": 2, "view": "joint"}),
    ("corbin", {"eps_p": "300", "d": "inf", "view": "joint"}),
    ("corbin", {"alpha_p": "1." + "0" * 299 + "1", "d": 2}),  # α − 1 = 1e−300: ε_p = ln(2e300)
]


def _values(mech, engine: str) -> list[dict]:
    return rdpcalc.divergence(mech, alphas=ORDERS, engine=engine, dps=30)


def _supports_differ(mech, x: float, x_prime: float) -> bool:
    """Some output has positive probability at x and none at x′ (the breakpoints the records'
    floats name), from the mpmath pmfs at 60 digits."""
    def exact(value: float) -> F:
        return min(mech.breakpoints(), key=lambda point: abs(float(point) - value))

    with mpmath.workdps(60):
        p, q = mech.pmf(exact(x)), mech.pmf(exact(x_prime))
    return any(a > 0 and b == 0 for a, b in zip(p, q))


def _close(fast: float, exact: float) -> bool:
    """Equal to 1e−9 relative, or 1e−12 absolute: two pmfs whose logs round alike differ by
    ulps (D_∞ ≈ 1e−14 where the truth is 1e−600)."""
    return fast == exact or abs(fast - exact) <= 1e-9 * abs(exact) + 1e-12


@pytest.mark.parametrize("name, params", SWEEP)
def test_fast_against_exact_at_extreme_parameters(name, params):
    mech = rdpcalc.make_mechanism(name, **params)
    fast, exact = _values(mech, "fast"), _values(mech, "exact")
    values = [r["divergence"] for r in fast]
    assert not any(math.isnan(v) for v in values)
    assert all(b >= a * (1 - 1e-9) - 1e-12 for a, b in zip(values, values[1:])), values
    for record, reference in zip(fast, exact, strict=True):
        if record["divergence"] == math.inf:
            assert _supports_differ(mech, record["x"], record["x_prime"]), record
        assert _close(record["divergence"], reference["divergence"]), (record["divergence"], reference["divergence"])


@pytest.mark.parametrize("eps", ["300", "700", "1e5"])
def test_corbin_marginal_is_randomized_response_at_large_budgets(eps):
    """LDPQ at x = ±r is binary randomized response with parameter ε_p: its Rényi curve in
    closed form (ε_p = 10⁵ is beyond the exact engine's range, so the closed form is the
    reference)."""
    values = [r["divergence"] for r in rdpcalc.divergence(rdpcalc.make_mechanism("corbin", eps_p=eps), alphas=ORDERS)]
    with mpmath.workdps(40):
        expected = [float(rr_renyi(mpmath.mpf(eps), a)) for a in ORDERS]
    assert values == pytest.approx(expected, rel=1e-12)


def test_quantized_gaussian_with_tails_of_e_to_minus_3e15():
    """σ = 1e−8: the pmfs at ±C_q/2 have probabilities e^{−1.4e14} and e^{−3.5e15} (below the
    exact engine's range): the fast values against sums over the mpmath pmfs."""
    mech = rdpcalc.make_mechanism("qgauss", sigma="1e-8", k=4, clip=1)
    alphas = [1, 1 + 1e-12, 2, math.inf]
    values = [r["divergence"] for r in rdpcalc.divergence(mech, alphas=alphas, choose=rdpcalc.NeighbourOptions(neighbours="paper"))]
    with mpmath.workdps(40):
        p, q = mech.pmf(F(1, 2)), mech.pmf(F(-1, 2))
        kl = mpmath.fsum(a * mpmath.log(a / b) for a, b in zip(p, q))
        beta = mpmath.mpf(1 + 1e-12) - 1  # the float order, exactly
        near_one = mpmath.log(mpmath.fsum(a ** (1 + beta) * b ** (-beta) for a, b in zip(p, q))) / beta
        two = mpmath.log(mpmath.fsum(a * a / b for a, b in zip(p, q)))
        infinite = max(mpmath.log(a / b) for a, b in zip(p, q))
    assert values == pytest.approx([float(kl), float(near_one), float(two), float(infinite)], rel=1e-12)
    assert values == sorted(values)


@pytest.mark.parametrize("argv, option", [
    (["account", "gaussian", "--sensitivity", "1e300", "--sigma", "1"], "--sensitivity"),
    (["account", "gaussian", "--sigma", "1e-300"], "--sigma"),
    (["account", "laplace", "--sensitivity", "1e300", "--scale", "1e-300"], "--sensitivity"),
    (["bound", "qgauss", "--sigma", "1e-300", "--clip", "1e300", "--k", "4"], "--sigma"),
    (["divergence", "qgauss", "--sigma", "1e-300", "--clip", "1", "--k", "4"], "--sigma"),
    (["divergence", "qgauss", "--sigma", "1e-8", "--clip", "1", "--k", "4", "--engine", "exact"], "--sigma"),
    (["divergence", "corbin", "--eps-p", "1e300"], "--eps-p"),
    (["divergence", "corbin", "--eps-p", "1e20", "--engine", "exact"], "--eps-p"),
])
def test_values_beyond_every_float_are_refused_naming_the_option(argv, option, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rdpcalc: error: {option}:"), err


def test_laplace_pld_is_not_capped_below_its_loss():
    """Δ/b = 1e300: every δ < ½ needs ε ≈ 1e300; the PLD grid ends at 300 nats, so its ε is +∞
    (pessimistic), never 300 (what capping t at the grid's end gave)."""
    record = rdpcalc.account_reference("laplace", scale=1.0, sensitivity=1e300)
    assert record["epsilon_pld"] >= record["epsilon_rdp"] >= 1e299


def test_layered_bits_at_t_over_sigma_of_1e599(capsys):
    """t/σ = 1e599 (log₂ ≈ 1990 bits): every quantity finite, and the exact entropies between
    their bounds (4)–(5) and Prop. 1."""
    records = rdpcalc.layered_bits("gauss", sigma="1e-300", t="1e299", n=3)
    by = {r["quantity"]: r["value"] for r in records}
    assert all(math.isfinite(v) for v in by.values())
    direct = by["H(M|S), direct layered, exact"]
    assert by["lower bound log₂ t + h(D_Z)"] - 1e-9 <= direct <= by["upper bound, direct"] + 1e-9
    assert by["H(M|S), shifted layered, exact"] <= by["upper bound, shifted"] + 1e-9
    assert 1980 < direct < 2000


def test_exact_engine_refuses_what_mpfr_cannot_hold():
    """gmpy2 accepts an exponent range of 2^±2^62 but e^x underflows below about 2^−2^30: a sum
    of two CorBin clients at ε_p = 4·10⁸ came out +∞ ("support mismatch") by the exact engine,
    where the fast one gives 4·10⁸. The exact engine now refuses it, naming --eps-p."""
    import gmpy2

    from rdpcalc.numerics import EXACT_LOG_REACH, exact

    assert exact.reachable_emin() >= -(2**62)
    with exact.precision(30):
        assert gmpy2.exp(gmpy2.mpfr(-EXACT_LOG_REACH)) > 0  # the smallest product kept is held
    mech = rdpcalc.make_mechanism("corbin", eps_p="4e8")
    assert rdpcalc.divergence(mech, n=2, alphas=[2],
                              choose=rdpcalc.NeighbourOptions(others_plus=0))[0]["divergence"] == pytest.approx(4e8, rel=1e-12)
    with pytest.raises(ParameterError, match="^eps_p: "):
        rdpcalc.divergence(mech, n=2, alphas=[2], engine="exact", dps=30, choose=rdpcalc.NeighbourOptions(others_plus=0))


def test_layered_bits_with_the_step_far_beyond_the_interval():
    """σ = 1e299, t = 1e−300: w/t overflowed in log₂(t/w + extra) (internal error); the fixed
    lengths are then ⌈log₂(extra)⌉ plus nothing, computed directly."""
    records = rdpcalc.layered_bits("gauss", sigma="1e299", t="1e-300", n=3)
    fixed = sorted(r["value"] for r in records if "fixed length" in r["quantity"])
    assert fixed == [math.ceil(math.log2(2)), math.ceil(math.log2(3))]  # ⌈log₂(2 + t/η)⌉, ⌈log₂(t/w + 3)⌉
    assert main(["bits", "layered", "--sigma", "1e299", "--t", "1e-300", "--n", "3"]) == 0
