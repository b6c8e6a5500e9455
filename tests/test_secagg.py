"""SecAgg mechanisms (distributed discrete Gaussian, Skellam, binomial) and the ``bits`` wrap-around:
pmfs, sums, divergence brackets, the papers' bounds, samplers, accounting and the CLI, each
against a computation that shares no code with rdpcalc (scipy.stats, or the definitions summed
directly in mpmath / numpy)."""

from __future__ import annotations

import json
import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from scipy import optimize, stats

import rdpcalc
import rdpcalc.bounds
from rdpcalc.backend import montecarlo
from rdpcalc.cli import main
from rdpcalc.mechanisms.base import RoundEpsilon, SumWorst
from rdpcalc.numerics import FastEngine

from .oracles import chi_square_p_value, renyi_float

#: slack for the float64 rounding of the engines' bracket ends: a certified end is a bound on the
#: true value in exact arithmetic, computed in float64 (a few ulps); far below any real error
ROUNDING = 1e-13


def mpf(value) -> mpmath.mpf:
    value = F(value)
    return mpmath.mpf(value.numerator) / value.denominator


def inside(lower: float, true: float, upper: float) -> bool:
    """lower ≤ true ≤ upper, up to float64 rounding of the ends."""
    slack = ROUNDING * max(1.0, abs(true))
    return lower - slack <= true <= upper + slack


def rounded_mixture(noise, y: int, t: F, outputs) -> list:
    """(1 − t)·N(o − y) + t·N(o − y − 1) at each output o: unbiased rounding of x/γ = y + t."""
    return [(1 - mpf(t)) * noise(o - y) + mpf(t) * noise(o - y - 1) for o in outputs]


def split(x: F, gamma: F) -> tuple[int, F]:
    scaled = x / gamma
    return math.floor(scaled), scaled - math.floor(scaled)


def discrete_gaussian(s: mpmath.mpf):
    """N_Z(0, s²) (Canonne, Kamath & Steinke, Def. 1) with its normaliser summed directly over
    |z| ≤ 60s + 60 (the omitted terms are below e^{−1800} of it)."""
    reach = int(60 * s) + 60
    normaliser = mpmath.fsum(mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * s**2)) for z in range(-reach, reach + 1))
    return lambda z: mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * s**2)) / normaliser


def dg_sum(s: mpmath.mpf, n: int, reach: int) -> list:
    """The pmf of the sum of n independent N_Z(0, s²), each truncated to |z| ≤ reach (mass lost
    below e^{−reach²/(2s²)}), by direct convolution in mpmath: entries z = −n·reach … n·reach."""
    noise = discrete_gaussian(s)
    one = [noise(z) for z in range(-reach, reach + 1)]
    total = [mpmath.mpf(1)]
    for _ in range(n):
        out = [mpmath.mpf(0)] * (len(total) + len(one) - 1)
        for i, a in enumerate(total):
            for j, b in enumerate(one):
                out[i + j] += a * b
        total = out
    return total


def renyi_shifted(pmf: list, shift: int, alpha: float) -> mpmath.mpf:
    """D_α between a symmetric pmf and itself moved by ``shift`` places (either direction, by
    symmetry): log Σ_i pmf[i + shift]^α pmf[i]^{1−α} / (α − 1), α > 1."""
    total = mpmath.fsum(pmf[i + shift] ** alpha * pmf[i] ** (1 - alpha) for i in range(len(pmf) - shift))
    return mpmath.log(total) / (alpha - 1)


# ---------------------------------------------------------------------------- 1. pmfs

SKELLAM_CASES = [(F(1), F(1, 4), F(5)), (F(1, 2), F(1, 8), F(32)), (F(3, 10), F(1, 8), F("0.7"))]


@pytest.mark.parametrize("c, gamma, mu", SKELLAM_CASES)
def test_skellam_pmf_is_a_shifted_scipy_skellam(c, gamma, mu):
    """On the grid (x = kγ, no rounding randomness) the client's pmf is Sk(μ, μ) moved by k;
    off the grid the (1 − t, t) mixture of the pmfs moved by ⌊x/γ⌋ and ⌊x/γ⌋ + 1 (scipy.stats)."""
    mech = rdpcalc.make_mechanism("skellam", c=c, gamma=gamma, mu=mu)
    outputs = np.arange(mech.lowest_output, mech.lowest_output + mech.support_size)
    noise = stats.skellam(float(mu), float(mu))
    reach = math.floor(c / gamma)
    inputs = [k * gamma for k in (-reach, 0, 1, reach)] + [c, -c, c / 3, F(-2, 7) * c]
    with mpmath.workdps(30):
        for x in inputs:
            y, t = split(x, gamma)
            expected = (1 - float(t)) * noise.pmf(outputs - y) + float(t) * noise.pmf(outputs - y - 1)
            got = np.array([float(p) for p in mech.pmf(x)])
            assert np.all(expected > 0)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("c, gamma, trials, p", [(F(1), F(1, 4), 20, F("0.3")), (F(3, 10), F(1, 8), 7, F(1, 2)),
                                                 (F(2), F(1, 2), 1, F("0.9"))])
def test_binomial_pmf_is_a_shifted_scipy_binomial(c, gamma, trials, p):
    """The noise is Binomial(N, p) on 0 … N: the pmf is scipy.stats.binom moved by the rounded
    input (a mixture off the grid); its support is the whole window, so it sums to one exactly."""
    mech = rdpcalc.make_mechanism("binomial", c=c, gamma=gamma, trials=trials, p=p)
    outputs = np.arange(mech.lowest_output, mech.lowest_output + mech.support_size)
    noise = stats.binom(trials, float(p))
    assert mech.support_size == 2 * math.ceil(c / gamma) + trials + 1
    for x in (c, -c, F(0), c / 3, gamma, F(-5, 7) * c):
        y, t = split(x, gamma)
        expected = (1 - float(t)) * noise.pmf(outputs - y) + float(t) * noise.pmf(outputs - y - 1)
        with mpmath.workdps(40):
            got = mech.pmf(x)
            assert abs(mpmath.fsum(got) - 1) < mpmath.mpf(10) ** -35
        np.testing.assert_allclose([float(v) for v in got], expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("c, gamma, sigma", [(F(1), F(1, 8), F(1)), (F(1), F(1, 4), F(1, 5)),
                                             (F(3, 10), F(1, 8), F(1, 4)), (F(1, 2), F(1, 8), F("0.3"))])
def test_ddg_pmf_against_a_directly_normalised_discrete_gaussian(c, gamma, sigma):
    """The DDG client pmf is the rounded mixture of N_Z(0, s²), s = σ/γ, whose normaliser is here
    a direct sum over a wide range (the library uses Poisson summation for s ≥ 1): equal to 40
    digits, at grid and off-grid inputs, on both sides of s = 1."""
    mech = rdpcalc.make_mechanism("ddg", c=c, gamma=gamma, sigma=sigma)
    outputs = range(mech.lowest_output, mech.lowest_output + mech.support_size)
    with mpmath.workdps(50):
        noise = discrete_gaussian(mpf(sigma / gamma))
        for x in (c, -c, F(0), gamma, c / 3, F(-4, 9) * c):
            expected = rounded_mixture(noise, *split(x, gamma), outputs)
            got = mech.pmf(x)
            assert len(got) == len(expected)
            for g, e in zip(got, expected, strict=True):
                assert abs(g - e) <= mpmath.mpf(10) ** -40 * e


@pytest.mark.parametrize("name, params", [
    ("ddg", dict(c=1, gamma="0.125", sigma=1)), ("ddg", dict(c="0.3", gamma="0.125", sigma="0.25")),
    ("ddg", dict(c=1, gamma="0.25", sigma=1, tail="1e-8")), ("skellam", dict(c=1, gamma="0.25", mu=5)),
    ("skellam", dict(c="0.3", gamma="0.125", mu="0.7", tail="1e-10")), ("binomial", dict(c=1, gamma="0.25", trials=20)),
])
def test_windowed_mass_is_within_the_certified_tail(name, params):
    """A windowed pmf keeps the true probabilities and drops the outputs beyond the window, so its
    mass is in [1 − e^{log_tail_mass_bound()}, 1] (computed at 60 digits); the bound itself is at
    most the requested ``tail``."""
    mech = rdpcalc.make_mechanism(name, **params)
    epsilon = mech.tail_mass_bound()
    assert epsilon <= float(params.get("tail", "1e-30")) * (1 + 1e-9) if name != "binomial" else epsilon == 0
    with mpmath.workdps(60):
        for x in (mech.c, -mech.c, F(0), mech.c / 3):
            mass = mpmath.fsum(mech.pmf(x))
            missing = mpmath.exp(mpmath.mpf(mech.log_tail_mass_bound()))
            assert 1 - missing <= mass <= 1 + mpmath.mpf(10) ** -55


# ---------------------------------------------------------------------------- 2. Skellam sums


@pytest.mark.parametrize("c, gamma, mu, n", [(1, "0.25", 5, 10), ("0.5", "0.125", "0.7", 25)])
def test_skellam_sum_of_clients_at_zero_is_skellam_of_n_mu(c, gamma, mu, n):
    """n clients at the grid input 0 send Sk(μ, μ) each; their sum is Sk(nμ, nμ) (Skellam laws are
    closed under sums). The fast engine's n-fold sum of the windowed client pmf matches scipy's
    Sk(nμ, nμ) to 1e−9 relative where the windowed sum is accurate (|sum| ≤ the window's L)."""
    mech = rdpcalc.make_mechanism("skellam", c=c, gamma=gamma, mu=mu)
    engine = FastEngine()
    client = engine.client(mech, F(0))
    row = engine.level(client, client, n, [n])[0]
    assert len(row) == n * (mech.support_size - 1) + 1
    integers = np.arange(len(row)) + n * mech.lowest_output
    expected = stats.skellam(n * float(F(mu)), n * float(F(mu))).logpmf(integers)
    half_width = mech.noise_window()[1]
    accurate = np.abs(integers) <= half_width
    assert accurate.sum() == 2 * half_width + 1
    np.testing.assert_allclose(np.exp(row[accurate] - expected[accurate]), 1, rtol=1e-9, atol=0)
    # and nowhere does the windowed sum exceed the true one (it only misses mass), where scipy's
    # Skellam pmf is itself accurate (its log pmf drifts by ~0.1 near e^−670)
    finite = expected > -300
    assert np.all(row[finite] <= expected[finite] + 1e-9)


def test_skellam_sum_divergence_lies_in_the_bracket():
    """Sum of n = 10 clients, client 1 at c against −c (c/γ = 4 a grid point), the others at 0:
    Sk(nμ, nμ) moved by ±4, whose D_α is summed directly (mpmath Bessel functions, |z| ≤ 500:
    the terms left out are below e^{−300} of the sum). It is the true worst case, so it lies in
    rdpcalc's certified bracket [divergence, certified_upper] of the worst case at α = 2 and 5."""
    mu, n, reach = 5, 10, 4
    mech = rdpcalc.make_mechanism("skellam", c=1, gamma="0.25", mu=mu)
    lam = n * mu
    records = rdpcalc.divergence(mech, n=n, alphas=[2, 5])
    with mpmath.workdps(40):
        log_pmf = {z: mpmath.log(mpmath.besseli(abs(z), 2 * lam)) - 2 * lam for z in range(-500 - reach, 501 + reach)}
        for record in records:
            a = record["alpha"]
            total = mpmath.fsum(mpmath.exp(a * log_pmf[z - reach] + (1 - a) * log_pmf[z + reach])
                                for z in range(-500, 501))
            true = float(mpmath.log(total) / (a - 1))
            assert {record["x"], record["x_prime"]} == {1.0, -1.0}
            assert inside(record["divergence"], true, record["certified_upper"]), (record, true)
            assert record["divergence"] == pytest.approx(true, rel=1e-10)


@pytest.mark.parametrize("name, params", [("binomial", dict(c="0.6", gamma="0.25", trials=12, p="0.3", bits=3)),
                                          ("skellam", dict(c="0.6", gamma="0.25", mu=2)),
                                          ("ddg", dict(c=1, gamma="0.25", sigma="0.5"))])
def test_one_client_worst_case_over_shift_pairs_is_the_maximum_over_every_pair(name, params):
    """One client: the worst case searches client 1's pairs up to a shift only (one pair where c
    is a grid point and nothing wraps); it equals the maximum over every ordered pair of
    breakpoints, each asked for explicitly, at α = 1, 2, 10 (the engines' windowed values; the
    binomial noise wrapped, as a shifted bounded noise alone gives +∞)."""
    mech = rdpcalc.make_mechanism(name, **params)
    alphas = [1, 2, 10]
    key = "windowed_divergence" if mech.UNBOUNDED else "divergence"
    worst = rdpcalc.divergence(mech, alphas=alphas)
    assert "pairs of breakpoints up to a shift" in worst[0]["protocol"]
    points = mech.breakpoints()
    every = [[record[key] for record in rdpcalc.divergence(mech, alphas=alphas,
                                                           choose=rdpcalc.NeighbourOptions(x=a, x_prime=b))]
             for a in points for b in points if a != b]
    for index, record in enumerate(worst):
        assert math.isfinite(record[key])
        assert record[key] == pytest.approx(max(values[index] for values in every), rel=1e-12)


def test_skellam_pmf_at_large_mu_against_mpmath_series_with_more_terms():
    """μ = 2·10⁴ (calibrate's top end): mpmath's I_ν(2μ) does not converge with its default
    terms for |z| in the thousands; the backward recurrence agrees with the series summed with
    a million terms, in the bulk and in the window's tail."""
    mech = rdpcalc.make_mechanism("skellam", c=1, gamma="0.125", mu=20000)
    with mpmath.workdps(40):
        for z in (0, 7, 1000, -2000, 2400):
            series = mpmath.log(mpmath.besseli(abs(z), 40000, maxterms=10**6)) - 40000
            assert abs(mech.noise_log_pmf(z) - series) < mpmath.mpf(10) ** -30 * abs(series)


def test_calibrating_binomial_trials_gives_the_integer_next_to_the_target():
    """An integer parameter: the answer meets the target and one trial fewer does not; the range
    ends at the most trials a client's outputs allow (N + 2⌈c/γ⌉ + 1 ≤ 8193)."""
    assert rdpcalc.solvable("binomial")["trials"]({"c": 1, "gamma": F(1, 4)})[1] == 8192 - 8
    record = rdpcalc.calibrate("binomial", params={"c": 1, "gamma": "0.5"}, solve="trials", dp_epsilon=2.0, rounds=1)
    trials = record["value"]
    assert trials == int(trials) and record["epsilon"] <= 2.0
    fewer = rdpcalc.make_mechanism("binomial", c=1, gamma="0.5", trials=int(trials) - 1)
    assert rdpcalc.account(fewer, rounds=1)["epsilon"] > 2.0


def test_binomial_sum_of_clients_at_zero_is_binomial_of_n_trials():
    """No window for bounded noise: n clients at 0 sum to Binomial(nN, p) on its whole support."""
    mech = rdpcalc.make_mechanism("binomial", c=1, gamma="0.25", trials=12, p="0.3")
    engine = FastEngine()
    client = engine.client(mech, F(0))
    row = engine.level(client, client, 9, [9])[0]
    integers = np.arange(len(row)) + 9 * mech.lowest_output
    expected = stats.binom(9 * 12, 0.3).logpmf(integers)
    assert np.array_equal(np.isfinite(row), np.isfinite(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(row[finite], expected[finite], rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------- 3. the DDG bracket


@pytest.mark.parametrize("c, gamma, sigma, tight", [(1, "0.125", 1, True), (1, "0.125", 2, True),
                                                    ("0.5", "0.125", "0.3", False), (1, "0.25", "0.5", False)])
def test_ddg_single_client_bracket_contains_the_closed_form(c, gamma, sigma, tight):
    """One client, c/γ an integer K: x = c and x′ = −c give two discrete Gaussians moved apart by
    Δ = 2K, and D_α = αΔ²/(2s²) exactly when αΔ is an integer (Canonne, Kamath & Steinke 2020).
    That is the worst pair, so it lies in the bracket of the worst case and of the explicit pair,
    at α = 2 and 3; where the divergence is small (s = 8, 16) the bracket is narrower than 1e−8
    relative at α = 2 with the default tail. D_∞ is +∞ at both ends (no wrap-around)."""
    mech = rdpcalc.make_mechanism("ddg", c=c, gamma=gamma, sigma=sigma)
    reach = F(c) / F(gamma)
    assert reach.denominator == 1
    s = F(sigma) / F(gamma)
    for choose in (rdpcalc.NeighbourOptions(), rdpcalc.NeighbourOptions(x=c, x_prime=-F(c))):
        records = rdpcalc.divergence(mech, n=1, alphas=[2, 3, "inf"], choose=choose)
        for record in records[:2]:
            true = float(F(int(record["alpha"])) * (2 * reach) ** 2 / (2 * s**2))
            assert inside(record["divergence"], true, record["certified_upper"]), (record, true)
            if tight and record["alpha"] == 2:
                assert record["certified_upper"] - record["divergence"] < 1e-8 * true
        assert records[2]["alpha"] == math.inf
        assert records[2]["divergence"] == math.inf and records[2]["certified_upper"] == math.inf


def test_ddg_sum_bracket_contains_the_directly_convolved_value():
    """n = 5 clients, s = σ/γ = 0.8: the sum of five discrete Gaussians (not itself one),
    convolved directly in mpmath and moved by ±c/γ = ±4: its D_2 and D_4 lie in the bracket."""
    mech = rdpcalc.make_mechanism("ddg", c=1, gamma="0.25", sigma="0.2")
    with mpmath.workdps(40):
        pmf = dg_sum(mpmath.mpf("0.8"), 5, 16)
        for record in rdpcalc.divergence(mech, n=5, alphas=[2, 4]):
            true = float(renyi_shifted(pmf, 8, record["alpha"]))
            assert inside(record["divergence"], true, record["certified_upper"]), (record, true)


# ---------------------------------------------------------------------------- 4. bits


def folded(a: np.ndarray, modulus: int) -> np.ndarray:
    out = np.zeros(modulus)
    np.add.at(out, np.arange(len(a)) % modulus, a)
    return out


def float_pmf(mech, x) -> np.ndarray:
    with mpmath.workdps(40):
        return np.array([float(p) for p in mech.pmf(F(x))])


def sum_pair(mech, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The sum's pmfs with client 1 at +b (P) or −b (Q), k others at +b and n − 1 − k at −b."""
    plus, minus = float_pmf(mech, mech.bound), float_pmf(mech, -mech.bound)
    rest = np.array([1.0])
    for _ in range(k):
        rest = np.convolve(rest, plus)
    for _ in range(n - 1 - k):
        rest = np.convolve(rest, minus)
    return np.convolve(plus, rest), np.convolve(minus, rest)


BITS_MECHANISMS = [("rqm", dict(c=1, delta=1, m=16, q="0.42")), ("pbm", dict(c=1, theta="0.25", trials=16)),
                   ("qgauss", dict(sigma=1, k=8, clip=1))]


@pytest.mark.parametrize("name, params", BITS_MECHANISMS)
def test_wrapped_sum_divergence_against_numpy_fold(name, params):
    """n = 8, bits = 5: the sum modulo 32 (the clients' output indices added; numpy convolution
    of the mpmath pmfs, folded by hand) has the D_α the fast engine gives for the explicit
    configuration x = b, x′ = −b with k others at +b, at α = 1, 2, 7.5, ∞."""
    mech = rdpcalc.make_mechanism(name, bits=5, **params)
    assert mech.modulus == 32
    for k in (0, 3, 7):
        p, q = sum_pair(mech, 8, k)
        assert len(p) > 32  # the sum does wrap
        p, q = folded(p, 32), folded(q, 32)
        for alpha in (1, 2, 7.5, math.inf):
            expected = renyi_float(list(p), list(q), alpha)
            got = rdpcalc.divergence(mech, n=8, alphas=[alpha],
                                     choose=rdpcalc.NeighbourOptions(x=mech.bound, x_prime=-mech.bound, others_plus=k))[0]
            assert got["divergence"] == pytest.approx(expected, rel=1e-10)


def test_wrapped_pm_c_family_fast_and_exact_engines_agree():
    """The ±c family (max over k and both directions) with bits = 5 and 3: the exact engine (MPFR,
    30 digits) and the fast engine give the same maximum and configuration, and both equal the
    maximum of the hand-folded sums."""
    params = dict(c=1, delta=1, m=16, q="0.42")
    for bits in (5, 3):
        mech = rdpcalc.make_mechanism("rqm", bits=bits, **params)
        alphas = [1, 2, 7.5, "inf"]
        fast = rdpcalc.divergence(mech, n=8, alphas=alphas, choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
        exact = rdpcalc.divergence(mech, n=8, alphas=alphas, engine="exact", dps=30,
                                   choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
        for f, e in zip(fast, exact, strict=True):
            assert f["divergence"] == pytest.approx(e["divergence"], rel=1e-12)
            expected = -math.inf
            for k in range(8):
                p, q = (folded(v, 2**bits) for v in sum_pair(mech, 8, k))
                expected = max(expected, renyi_float(list(p), list(q), f["alpha"]),
                               renyi_float(list(q), list(p), f["alpha"]))
            assert f["divergence"] == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("name, params", BITS_MECHANISMS[:2])
def test_wrapping_never_increases_the_divergence(name, params):
    """Wrapping is a deterministic map of the sum (data processing): over bit widths 1 … 6 the
    ±c family's maximum is never above the unwrapped one (and bits = 3 lowers D_2 by more than
    1 %); once 2^bits holds all the sum's values (121 for RQM, 129 for PBM: bits = 8 and 62, and
    7 for RQM) nothing wraps and nothing changes."""
    n, alphas = 8, [1, 2, 7.5, "inf"]
    plain = rdpcalc.divergence(rdpcalc.make_mechanism(name, **params), n=n, alphas=alphas,
                               choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    sizes = n * (rdpcalc.make_mechanism(name, **params).support_size - 1) + 1
    for bits in (1, 2, 3, 4, 5, 6, 7, 8, 62):
        wrapped = rdpcalc.divergence(rdpcalc.make_mechanism(name, bits=bits, **params), n=n, alphas=alphas,
                                     choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
        for w, u in zip(wrapped, plain, strict=True):
            if 2**bits >= sizes:
                assert w["divergence"] == pytest.approx(u["divergence"], rel=1e-14, abs=0)
            else:
                assert w["divergence"] <= u["divergence"] * (1 + 1e-12)
    # a strict decrease somewhere: the wrap is not a no-op
    small = rdpcalc.divergence(rdpcalc.make_mechanism(name, bits=3, **params), n=n, alphas=[2],
                               choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    assert small[0]["divergence"] < plain[1]["divergence"] * 0.99


@pytest.mark.parametrize("name, params", [("skellam", dict(c=1, gamma="0.25", mu=5)),
                                          ("ddg", dict(c=1, gamma="0.25", sigma="0.5"))])
def test_unbounded_noise_wrapped_sum_lies_in_the_bracket(name, params):
    """Skellam or DDG, n = 10 clients, bits = 5: the true sum of client 1 at ±c with the others at
    0 is the n-fold noise moved by ±4, taken modulo 32 (scipy's Sk(nμ, nμ), or the discrete
    Gaussians convolved directly, on a wide range). Its D_2, D_5 and D_∞ (now finite) lie in the
    brackets of both the explicit configuration and the worst case, and are below the unwrapped ones."""
    n, reach, modulus = 10, 4, 32
    mech = rdpcalc.make_mechanism(name, bits=5, **params)
    if name == "skellam":
        z = np.arange(-3000, 3001)
        base = stats.skellam(n * 5, n * 5).pmf
        p, q = base(z - reach), base(z + reach)
    else:
        with mpmath.workdps(30):
            pmf = [float(v) for v in dg_sum(mpmath.mpf(2), n, 24)]
        z = np.arange(-n * 24 - reach, n * 24 + reach + 1)
        p = np.concatenate([np.zeros(2 * reach), pmf])
        q = np.concatenate([pmf, np.zeros(2 * reach)])
    wp, wq = np.zeros(modulus), np.zeros(modulus)
    np.add.at(wp, z % modulus, p)
    np.add.at(wq, z % modulus, q)
    alphas = [2, 5, math.inf]
    expected = [renyi_float(list(wp), list(wq), a) for a in alphas]
    unwrapped = rdpcalc.divergence(rdpcalc.make_mechanism(name, **params), n=n, alphas=alphas,
                                   choose=rdpcalc.NeighbourOptions(x=1, x_prime=-1, others_plus=0))
    for choose in (rdpcalc.NeighbourOptions(x=1, x_prime=-1, others_plus=0), rdpcalc.NeighbourOptions()):
        records = rdpcalc.divergence(mech, n=n, alphas=alphas, choose=choose)
        for record, true, plain in zip(records, expected, unwrapped, strict=True):
            assert record["certified_upper"] < math.inf or record["alpha"] != math.inf
            assert inside(record["divergence"], true, record["certified_upper"]), (record, true)
            assert record["divergence"] <= plain["divergence"] * (1 + 1e-12)


# ---------------------------------------------------------------------------- 5. the papers' bounds


def bound_records(name: str, params: dict, **options) -> list[dict]:
    records = rdpcalc.bounds.bound(rdpcalc.make_mechanism(name, **params), alphas=[2, 4], **options)
    out = [r for r in records if r["kind"] == "bound"]
    assert out
    return out


@pytest.mark.parametrize("name, params, options", [
    ("ddg", dict(c=1, gamma="0.125", sigma=1), dict(n=10)),
    ("ddg", dict(c=1, gamma="0.25", sigma="0.2"), dict(n=5)),
    ("skellam", dict(c=1, gamma="0.25", mu=5), dict(n=10)),
    ("skellam", dict(c="0.5", gamma="0.125", mu=32), dict(n=3)),
    ("binomial", dict(c=1, gamma="0.25", trials=256), dict(n=10, dp_delta=1e-5)),
])
def test_papers_bounds_hold_where_their_conditions_do(name, params, options):
    """Each paper's bound is a theorem under its conditions (DDG: σ/γ ≥ ½; Skellam: integer α;
    cpSGD: Nnp(1−p) ≥ max(23 log(10/δ), 2Δ), which 2560·¼ = 640 ≥ 318 meets): no record of kind
    ``bound`` may say it fails. A sum bound of a windowed noise is checked against the certified
    bracket of the worst case, so its verdict is None where the bracket straddles the bound (the
    upper end loosens at large orders, and DDG's bound is the exact value where τ ≈ 0); some
    bound of each must be found to hold."""
    records = bound_records(name, params, **options)
    for record in records:
        assert record["holds"] is not False, (record["quantity"], record["alpha"], record["value"], record["compares"])
    assert any(record["holds"] is True for record in records)


def test_ddg_sum_bound_is_above_the_true_value_and_is_prop_14():
    """Kairouz et al. Prop. 14 for s = σ/γ = 0.8, n = 5, Δ = 2⌈c/γ⌉ = 8, re-derived here:
    τ = 10 Σ_{k=1}^{n−1} exp(−2π²s²k/(k+1)) and the min of the three terms. It is above the true
    D_α of the sum (convolved directly) at α = 2 and 4."""
    s, n, delta = mpmath.mpf("0.8"), 5, 8
    records = [r for r in bound_records("ddg", dict(c=1, gamma="0.25", sigma="0.2"), n=n) if "sum" in r["quantity"]]
    assert [r["alpha"] for r in records] == [2, 4]
    with mpmath.workdps(40):
        tau = 10 * mpmath.fsum(mpmath.exp(-2 * mpmath.pi**2 * s**2 * k / (k + 1)) for k in range(1, n))
        pmf = dg_sum(s, n, 16)
        for record in records:
            a = record["alpha"]
            value = min(a * delta**2 / (2 * n * s**2) + tau,
                        a / 2 * (delta**2 / (n * s**2) + 2 * delta * tau / (mpmath.sqrt(n) * s) + tau**2),
                        a / 2 * (delta / (mpmath.sqrt(n) * s) + tau) ** 2)
            assert record["value"] == pytest.approx(float(value), rel=1e-12)
            assert float(renyi_shifted(pmf, delta, a)) <= record["value"]


def test_skellam_bound_formula():
    """Agarwal, Kairouz & Liu: αΔ²/(4λ) + min(((2α−1)Δ² + 6Δ)/(16λ²), 3Δ/(4λ)), λ = nμ, re-derived
    for μ = 5, n = 10, Δ = 8, at α = 2 and 4; it is above the true D_α of Sk(λ, λ) moved by ±4."""
    lam, delta = 50, 8
    records = bound_records("skellam", dict(c=1, gamma="0.25", mu=5), n=10)
    assert [r["alpha"] for r in records] == [2, 4]
    for record in records:
        a = record["alpha"]
        value = a * delta**2 / (4 * lam) + min(((2 * a - 1) * delta**2 + 6 * delta) / (16 * lam**2), 3 * delta / (4 * lam))
        assert record["value"] == pytest.approx(value, rel=1e-12)
        z = np.arange(-300, 301)  # beyond, the terms are below e^{−200} of the sum
        log_p = stats.skellam(lam, lam).logpmf(z)
        assert np.all(np.isfinite(log_p))
        true = float(np.logaddexp.reduce(a * log_p[delta:] + (1 - a) * log_p[:-delta])) / (a - 1)
        assert true <= value


def test_binomial_theorem_1_formula_and_exact_epsilon():
    """cpSGD Theorem 1 with c_p, b_p, d_p as printed, for N = 256, n = 10, p = ½, Δ = 8, δ = 1e−5,
    re-derived; the exact ε it is checked against is at least the ε at δ of the pair Bin(nN, p)
    moved by ±4 (hockey-stick divergence summed here) and within the PLD's grid of it."""
    trials, n, p, sens, dp_delta = 256, 10, 0.5, 8, 1e-5
    [record] = bound_records("binomial", dict(c=1, gamma="0.25", trials=trials), n=n, dp_delta=dp_delta)
    variance = n * trials * p * (1 - p)
    c_p = math.sqrt(2) * (3 * p**3 + 3 * (1 - p) ** 3 + 2 * p**2 + 2 * (1 - p) ** 2)
    d_p = 4 / 3 * (p**2 + (1 - p) ** 2)
    b_p = 2 / 3 * (p**2 + (1 - p) ** 2) + 1 - 2 * p
    log = math.log
    assert variance >= max(23 * log(10 / dp_delta), 2 * sens)
    epsilon = (sens * math.sqrt(2 * log(1.25 / dp_delta)) / math.sqrt(variance)
               + (sens * c_p * math.sqrt(log(10 / dp_delta)) + sens * b_p) / (variance * (1 - dp_delta / 10))
               + (2 / 3 * sens * log(1.25 / dp_delta) + sens * d_p * log(20 / dp_delta) * log(10 / dp_delta)) / variance)
    assert record["value"] == pytest.approx(epsilon, rel=1e-12)
    exact = rdpcalc.account(rdpcalc.make_mechanism("binomial", c=1, gamma="0.25", trials=trials), n=n)["epsilon"]
    outputs = np.arange(-4, n * trials + 5)
    pp, qq = stats.binom(n * trials, p).pmf(outputs - 4), stats.binom(n * trials, p).pmf(outputs + 4)
    pair = optimize.brentq(lambda e: np.sum(np.maximum(pp - math.exp(e) * qq, 0)) - dp_delta, 0, 50, xtol=1e-12)
    assert pair <= exact <= pair + 1e-3
    assert exact <= record["value"]


def test_bounds_declare_their_sum_targets_and_bound_resolves_them():
    """The mechanisms declare what a sum bound is checked against, as data, and compute nothing
    above themselves: cpSGD's Theorem 1 the exact ε at δ of one round, DDG's and Skellam's sum
    bounds the worst case of the sum of n (Skellam's bound for n = 1 the single-client worst
    case). rdpcalc.bounds resolves each to what rdpcalc.account and rdpcalc.divergence give,
    with one divergence for all the orders of a sum, counted in the progress total."""
    binomial = rdpcalc.make_mechanism("binomial", c=1, gamma="0.25", trials=256)
    [item] = binomial.bounds([2.0], n=10, dp_delta="1e-5")
    assert item.target == RoundEpsilon(10, 1e-5)
    [resolved] = rdpcalc.bounds.resolve_targets(binomial, [item])
    assert resolved.target.value == rdpcalc.account(binomial, n=10, dp_delta=1e-5)["epsilon"]
    assert resolved.target.upper is None and resolved.value == item.value

    skellam = rdpcalc.make_mechanism("skellam", c=1, gamma="0.25", mu=5)
    assert [item.target for item in skellam.bounds([2.0, 3.0], n=3)] == [SumWorst(3)] * 2
    assert [item.target for item in skellam.bounds([2.0, 3.0])] == ["worst"] * 2

    ddg = rdpcalc.make_mechanism("ddg", c=1, gamma="0.25", sigma="0.2")
    assert [item.target for item in ddg.bounds([2.0, 4.0], n=5)] == ["worst", "worst", SumWorst(5), SumWorst(5)]
    reports = []
    records = rdpcalc.bounds.bound(ddg, alphas=[2, 4], n=5, progress=lambda done, total: reports.append((done, total)))
    sums = [r for r in records if r["kind"] == "bound" and "sum of n = 5" in r["quantity"]]
    exact = rdpcalc.divergence(ddg, n=5, alphas=[2, 4])
    assert [r["alpha"] for r in sums] == [e["alpha"] for e in exact] == [2, 4]
    for record, worst in zip(sums, exact, strict=True):
        assert record["compares"] == (f"worst case of the sum of 5 in [{worst['divergence']:.10g}, "
                                      f"{worst['certified_upper']:.10g}] (certified bracket) ≤ this value")
    assert reports[-1] == (3, 3)  # the extreme pair, the worst pair, the sum of 5 at both orders


# ---------------------------------------------------------------------------- 6. samplers

SAMPLED = [("ddg", dict(c=1, gamma="0.125", sigma="0.3")), ("skellam", dict(c=1, gamma="0.25", mu=5)),
           ("binomial", dict(c=1, gamma="0.25", trials=20, p="0.3"))]


@pytest.mark.parametrize("name, params", SAMPLED)
def test_sampler_matches_the_pmf_by_chi_square(name, params):
    """200 000 draws at a grid input (0.5), an off-grid one (−0.3) and the bound −c: Pearson's χ²
    against the exact pmf (bins expecting < 5 pooled) at a fixed seed; every draw is an index of
    the window."""
    mech = rdpcalc.make_mechanism(name, **params)
    for seed, x in enumerate((F(1, 2), F(-3, 10), -mech.c)):
        draws = mech.sample(np.full(200_000, float(x)), np.random.default_rng(100 + seed))
        assert draws.min() >= 0 and draws.max() < mech.support_size
        with mpmath.workdps(30):
            probabilities = [float(p) for p in mech.pmf(x)]
        assert chi_square_p_value(draws, probabilities) > 1e-4


@pytest.mark.parametrize("name, params", SAMPLED)
def test_montecarlo_check_of_sums(name, params):
    """The Monte-Carlo command's path: the sum of 3 clients at an off-grid input sampled against
    the engines' pmf of the sum: χ² p-value above 1e−4, no impossible draw, TV within its bound."""
    mech = rdpcalc.make_mechanism(name, **params)
    record = montecarlo.check(mech, "0.3", 100_000, seed=5, n=3)
    assert record["impossible_draws"] == 0 and record["dof"] > 5
    assert record["p_value"] > 1e-4
    assert record["tv"] <= record["tv_bound"]


# ---------------------------------------------------------------------------- 7. accounting


def test_ddg_accounting_pld_against_the_composed_pair():
    """DDG, n = 10, 5 rounds, δ = 1e−5: both ε are finite and PLD ≤ RDP. The worst pair (±c, the
    others at 0) composed over the rounds is the sum of 50 discrete Gaussians of s = 8 moved by
    ±5·8; that sum is N_Z(0, 50s²) to within e^{−600} (Poisson summation), whose privacy loss is
    linear, so its ε at δ is found here by bisection. The PLD's ε is an upper bound of it, off by
    at most its grid (rounds × 1e−4); the RDP ε is at most the classic conversion of the
    bracket's upper ends at α = 2 and 3."""
    mech = rdpcalc.make_mechanism("ddg", c=1, gamma="0.125", sigma=1)
    rounds, delta = 5, 1e-5
    record = rdpcalc.account(mech, n=10, rounds=rounds, dp_delta=delta)
    assert math.isfinite(record["epsilon"]) and math.isfinite(record["epsilon_rdp"])
    assert record["epsilon"] == record["epsilon_pld"] <= record["epsilon_rdp"]
    variance, shift = rounds * 10 * 64, rounds * 8
    o = np.arange(-4000, 4001)
    dg = np.exp(-(o.astype(float) ** 2) / (2 * variance))
    dg /= dg.sum()
    p, q = dg[2 * shift:], dg[: -2 * shift]  # on one support, the same law moved apart by 2·shift

    def excess(epsilon):
        return np.sum(np.maximum(p - math.exp(epsilon) * q, 0)) - delta

    pair = optimize.brentq(excess, 0, 50, xtol=1e-12)
    assert pair <= record["epsilon_pld"] <= pair + rounds * 1e-4 * 1.5
    uppers = {r["alpha"]: r["certified_upper"] for r in rdpcalc.divergence(mech, n=10, alphas=[2, 3])}
    classic = min(rounds * uppers[a] + math.log(1 / delta) / (a - 1) for a in (2, 3))
    assert record["epsilon_rdp"] <= classic


def test_binomial_accounting_rdp_is_infinite_pld_finite():
    """Without bits, neighbouring binomial sums have different supports: every D_α is +∞, so the
    RDP route gives ε = ∞, while the PLD puts the mismatch into δ and stays finite; with enough
    wrap-around (bits = 6, modulus 64 < the sum's 2601 values) the RDP ε becomes finite."""
    mech = rdpcalc.make_mechanism("binomial", c=1, gamma="0.25", trials=256)
    record = rdpcalc.account(mech, n=10, rounds=5)
    assert record["epsilon_rdp"] == math.inf
    assert math.isfinite(record["epsilon"]) and record["epsilon"] == record["epsilon_pld"] > 0
    wrapped = rdpcalc.account(rdpcalc.make_mechanism("binomial", c=1, gamma="0.25", trials=256, bits=6), n=10, rounds=5)
    assert math.isfinite(wrapped["epsilon_rdp"]) and wrapped["epsilon_pld"] <= wrapped["epsilon_rdp"]
    assert wrapped["epsilon_pld"] <= record["epsilon_pld"] * (1 + 1e-9)


# ---------------------------------------------------------------------------- 8. CLI


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_ddg_divergence_json(capsys):
    """`rdpcalc divergence ddg … --json` exits 0 with one record whose bracket is ordered and
    matches the library call."""
    code, out, err = run(capsys, "divergence", "ddg", "--c", "1", "--gamma", "0.125", "--sigma", "1", "--n", "10",
                         "--alpha", "2", "--json")
    assert code == 0 and err == ""
    [record] = json.loads(out)
    assert record["mechanism"] == "ddg" and record["n"] == 10 and record["alpha"] == 2
    assert record["certified_upper"] >= record["divergence"] > 0
    assert record["log10_tail_mass"] <= -30 and "windowed_divergence" in record
    expected = rdpcalc.divergence(rdpcalc.make_mechanism("ddg", c=1, gamma="0.125", sigma=1), n=10, alphas=[2])[0]
    assert record["divergence"] == expected["divergence"]
    assert record["certified_upper"] == expected["certified_upper"]


@pytest.mark.parametrize("argv, option", [
    (["divergence", "ddg", "--c", "1", "--gamma", "0", "--sigma", "1"], "--gamma"),
    (["divergence", "skellam", "--c", "1", "--gamma", "0.25", "--mu", "-1"], "--mu"),
    (["divergence", "binomial", "--c", "1", "--gamma", "0.25", "--trials", "0"], "--trials"),
    (["divergence", "ddg", "--c", "1", "--gamma", "0.125", "--sigma", "1", "--bits", "0"], "--bits"),
])
def test_cli_bad_values_exit_2_with_one_line(capsys, argv, option):
    """A bad parameter exits 2 with a single error line naming the option."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and option in err


def test_bound_shows_a_windowed_noise_as_its_bracket_not_as_exact():
    """``bound`` for a windowed noise: the 'exact' rows are the bracket's lower end and say so, and
    the single discrete Gaussian bound αΔ²/(2s²) — the true value itself at integer αΔ — is judged
    on the bracket (holds where the upper end is below it, which the wide window gives here)."""
    mech = rdpcalc.make_mechanism("ddg", c=1, gamma="0.25", sigma="0.2")
    records = rdpcalc.bounds.bound(mech, alphas=[2])
    exact = [r for r in records if r["kind"] == "exact" and r["alpha"] == 2]
    assert exact and all("certified lower end" in r["quantity"] and "lies in" in r["note"] for r in exact)
    single = [r for r in records if r["kind"] == "bound" and r["alpha"] == 2]
    delta, s = 2 * mech.reach, 0.2 / 0.25
    assert single[0]["value"] == pytest.approx(2 * delta**2 / (2 * s**2), rel=1e-12)
    assert "certified bracket" in single[0]["compares"] and single[0]["holds"] is True


def test_screened_ties_keep_the_smallest_configurations_whatever_their_last_bits():
    """More configurations tie than the screen keeps: the smallest are kept, whichever rounding came
    out largest, and a value beyond the tie still ranks first."""
    from rdpcalc.worstcase.secagg import _MAX_CANDIDATES, Configuration, _Candidates

    count = 3 * _MAX_CANDIDATES
    configurations = [Configuration(F(-1), F(1), ((F(-1), count - i), (F(1), i))) for i in range(count)]
    kept = []
    for seed in (0, 1):
        noise = np.random.default_rng(seed).uniform(-1e-14, 1e-14, count)
        sink = _Candidates(1)
        sink.update((17.5 + noise)[:, None], configurations.__getitem__)
        kept.append(sink.configurations())
    assert kept[0] == kept[1] == sorted(configurations, key=lambda c: c.others)[:_MAX_CANDIDATES]
    sink.update(np.array([[17.5 + 1e-6]]), lambda row: configurations[-1])
    assert sink.configurations()[0] == configurations[-1]


def test_the_configuration_reported_among_ties_does_not_depend_on_how_many_the_screen_keeps(monkeypatch):
    """PBM's D_∞ is the same for every split of the others (the sum's extreme output): with the
    screen keeping 8 candidates or 2, the configuration reported is the same."""
    from rdpcalc.worstcase import secagg

    mech = rdpcalc.make_mechanism("pbm", c="1.5", theta="0.25", trials=16)
    reported = []
    for cap in (8, 2):
        monkeypatch.setattr(secagg, "_MAX_CANDIDATES", cap)
        [record] = rdpcalc.divergence(mech, n=12, alphas=[math.inf])
        reported.append((record["x"], record["x_prime"], record["others"]))
    assert reported[0] == reported[1]
