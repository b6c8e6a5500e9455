"""Layered quantizers, Irwin–Hall and aggregate Gaussian mechanisms (Hegazy, Leluc, Li & Dieuleveut
2024, "Compression with Exact Error Distribution for Federated Learning", arXiv:2310.20682): samplers
by KS tests against scipy's distributions, the Irwin–Hall density against exact fractions and
quadrature, λ(n), Theorem 2, the entropies and the bit counts (Figs. 2 and 4 settings) against
reference values, Rényi divergences against mpmath quadrature. The reference values are independent
high-precision computations: the paper prints none.

The oracles here share no code with ``rdpcalc.layered``: they are written from the formulas.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from scipy import stats

from rdpcalc import ParameterError
from rdpcalc.layered import aggregate, bits, noise, quantizers

N = 20_000
P_MIN = 1e-3          # KS tests at fixed seeds: a correct sampler passes, a wrong law fails by far
SQRT2 = math.sqrt(2)


def target(name: str, sigma: float):
    """The target law as a scipy distribution: N(0, σ²) or Laplace with variance σ²."""
    return stats.norm(0, sigma) if name == "gauss" else stats.laplace(0, sigma / SQRT2)


def ih_uniform_sum_density(n: int, s: F) -> F:
    """f_S(s), S a sum of n U(0, 1), exactly in fractions (the textbook formula, no symmetry trick)."""
    if not 0 <= s <= n:
        return F(0)
    return sum((-1) ** k * math.comb(n, k) * (s - k) ** (n - 1) for k in range(math.floor(s) + 1)) / math.factorial(n - 1)


def ih_cdf_float(n: int, x, sigma: float = 1.0) -> np.ndarray:
    """The IH(n, 0, σ²) cdf from F_S(s) = (1/n!) Σ (−1)^k C(n,k)(s−k)₊^n in float (fine for n ≤ 6)."""
    s = n / 2 + np.asarray(x) * math.sqrt(n / 12) / sigma
    total = sum((-1) ** k * math.comb(n, k) * np.clip(s - k, 0, None) ** n for k in range(n + 1))
    return np.clip(total / math.factorial(n), 0, 1)


def sample_irwin_hall(n: int, size: int, rng) -> np.ndarray:
    """IH(n, 0, 1): the mean of n U(−√(3n), √(3n))."""
    half = math.sqrt(3 * n)
    return rng.uniform(-half, half, (n, size)).mean(axis=0)


def cell_entropy_brute(step: float, t: float, offsets: int = 2000) -> float:
    """H(M | step) for X ~ U(0, t): enumerate the cells [w(k−½−u), w(k+½−u)) ∩ [0, t] at a midpoint
    grid of dithers u and average −Σ p log₂ p."""
    total = 0.0
    for u in (np.arange(offsets) + 0.5) / offsets:
        k = np.arange(math.floor(u - 0.5) - 1, math.ceil(t / step + u + 0.5) + 2)
        lengths = np.clip(step * (k + 0.5 - u), 0, t) - np.clip(step * (k - 0.5 - u), 0, t)
        p = lengths[lengths > 0] / t
        total -= float(np.sum(p * np.log2(p)))
    return total / offsets


# ------------------------------------------------------------------ samplers
@pytest.mark.parametrize("x", [-3.3, 0.0, 17.9])
def test_subtractive_dithering_error_is_uniform(x):
    rng = np.random.default_rng(11)
    y, m = quantizers.subtractive_dithering(np.full(N, x), 0.7, rng)
    assert np.all(m == np.round(m))
    assert stats.kstest(y - x, stats.uniform(-0.35, 0.7).cdf).pvalue > P_MIN


def test_round_half_up():
    assert list(quantizers.round_half_up([-1.5, -0.5, 0.5, 1.49, 2.5])) == [-1, 0, 1, 1, 3]


@pytest.mark.parametrize("sigma", [1.0, 3.0])
@pytest.mark.parametrize("quantizer", ["direct", "shifted"])
@pytest.mark.parametrize("name", ["gauss", "laplace"])
@pytest.mark.parametrize("x", [-1000.25, 3.7, "uniform"])
def test_layered_error_has_the_target_law(x, name, quantizer, sigma):
    rng = np.random.default_rng(2024)
    inputs = rng.uniform(0, 64, N) if x == "uniform" else np.full(N, x)
    sampler = quantizers.direct_layered if quantizer == "direct" else quantizers.shifted_layered
    y, m, step = sampler(inputs, name, sigma, rng)
    assert np.all(m == np.round(m))
    assert stats.kstest(y - inputs, target(name, sigma).cdf).pvalue > P_MIN
    assert abs(np.var(y - inputs) / sigma**2 - 1) < 0.05


@pytest.mark.parametrize("name", ["gauss", "laplace"])
def test_wrong_target_is_rejected(name):
    """The KS tests above have power: the other family with the same variance is rejected."""
    rng = np.random.default_rng(5)
    y, _, _ = quantizers.shifted_layered(np.zeros(N), name, 1.0, rng)
    other = "laplace" if name == "gauss" else "gauss"
    assert stats.kstest(y, target(other, 1.0).cdf).pvalue < 1e-6


@pytest.mark.parametrize("name, eta", [("gauss", 2.354820), ("laplace", 0.980258)])
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_shifted_steps_never_below_eta(name, eta, sigma):
    rng = np.random.default_rng(3)
    _, _, step = quantizers.shifted_layered(np.zeros(N), name, sigma, rng)
    assert noise.minimal_shifted_step(name, sigma) == pytest.approx(eta * sigma, rel=2e-7)
    assert step.min() >= eta * sigma * (1 - 1e-6)
    assert step.min() <= eta * sigma * (1 + 1e-3)   # attained (at W = Z̄/2)


def test_shifted_step_minimum_is_at_half_peak():
    for name in ("gauss", "laplace"):
        zbar = noise.peak(name, 1.0)
        y = np.linspace(0.001, 0.999, 9999) * zbar
        steps = noise.shifted_step(name, y, 1.0)
        assert y[np.argmin(steps)] == pytest.approx(zbar / 2, rel=1e-3)
        assert steps.min() == pytest.approx(noise.minimal_shifted_step(name, 1.0), rel=1e-6)


def test_direct_step_laws():
    """Direct Gaussian step = 2σχ₃ (no positive minimum); direct Laplace step = √2σ Gamma(2)."""
    rng = np.random.default_rng(8)
    _, _, step = quantizers.direct_layered(np.zeros(N), "gauss", 2.0, rng)
    assert stats.kstest(step / 4.0, stats.chi(3).cdf).pvalue > P_MIN
    assert step.min() < 0.3 * 2.0
    _, _, step = quantizers.direct_layered(np.zeros(N), "laplace", 2.0, rng)
    assert stats.kstest(step / (SQRT2 * 2.0), stats.gamma(2).cdf).pvalue > P_MIN


@pytest.mark.parametrize("name", ["gauss", "laplace"])
def test_shifted_step_law_is_f_w_of_d(name):
    """The shifted step has the law of f_W(D_Z) (f_W(y) = f_W(Z̄ − y) for symmetric f_Z), D_Z = V f_Z(Z₀) drawn with scipy and
    f_W from the printed formulas b⁺(y) − b⁻(Z̄ − y)."""
    rng = np.random.default_rng(21)
    law = target(name, 1.0)
    d = rng.uniform(size=N) * law.pdf(law.rvs(size=N, random_state=rng))
    zbar = law.pdf(0)
    if name == "gauss":
        f_w = np.sqrt(2 * np.log(zbar / d)) + np.sqrt(2 * np.log(zbar / (zbar - d)))
    else:
        b = 1 / SQRT2
        f_w = -b * np.log(2 * b * d) - b * np.log(1 - 2 * b * d)
    _, _, step = quantizers.shifted_layered(np.zeros(N), name, 1.0, rng)
    assert stats.ks_2samp(step, f_w).pvalue > P_MIN
    assert np.allclose(noise.shifted_step(name, d, 1.0), f_w, rtol=1e-9)


@pytest.mark.parametrize("quantizer", ["direct", "shifted"])
def test_error_independent_of_input(quantizer):
    rng = np.random.default_rng(99)
    x = rng.uniform(0, 64, N)
    sampler = quantizers.direct_layered if quantizer == "direct" else quantizers.shifted_layered
    y, _, _ = sampler(x, "gauss", 1.0, rng)
    error = y - x
    assert abs(np.corrcoef(error, x)[0, 1]) < 4 / math.sqrt(N)
    assert stats.ks_2samp(error[x < 32], error[x >= 32]).pvalue > P_MIN


def test_same_seed_same_output_and_shared_randomness_ignores_x():
    a = quantizers.shifted_layered(np.full(100, 1.5), "laplace", 1.0, np.random.default_rng(4))
    b = quantizers.shifted_layered(np.full(100, 1.5), "laplace", 1.0, np.random.default_rng(4))
    c = quantizers.shifted_layered(np.full(100, -7.0), "laplace", 1.0, np.random.default_rng(4))
    for left, right in zip(a, b):
        assert np.array_equal(left, right)
    assert np.array_equal(a[2], c[2])   # the step is shared randomness: independent of x


@pytest.mark.parametrize("name", ["gauss", "laplace"])
def test_shifted_message_support(name):
    """|Supp M| ≤ 2 + t/η_Z for x in an interval of length t (Prop. 2): with the same shared
    randomness (seed), M is nondecreasing in x, so M(t) − M(0) + 1 bounds the support."""
    t = 10.0
    _, m0, _ = quantizers.shifted_layered(np.zeros(N), name, 1.0, np.random.default_rng(6))
    _, mt, _ = quantizers.shifted_layered(np.full(N, t), name, 1.0, np.random.default_rng(6))
    assert np.max(mt - m0 + 1) <= 2 + t / noise.minimal_shifted_step(name, 1.0)


# ------------------------------------------------------------------ target-noise formulas
def test_superlevel_bounds_and_steps_match_the_printed_formulas():
    y = np.array([0.01, 0.1, 0.2, 0.3, 0.39])
    zbar = 1 / math.sqrt(2 * math.pi)
    lo, hi = noise.superlevel_bounds("gauss", y / 2, 2.0)
    assert np.allclose(hi, 2.0 * np.sqrt(2 * np.log(zbar / y)))
    assert np.allclose(stats.norm(0, 2.0).pdf(hi), y / 2) and np.allclose(lo, -hi)
    b = 1 / SQRT2
    assert np.allclose(noise.direct_step("laplace", y, 1.0), -2 * b * np.log(2 * b * y))
    assert noise.direct_step("gauss", 0.5, 1.0) == 0.0     # outside (0, Z̄): the indicator
    centre = noise.shifted_centre("gauss", y, 1.0)
    lo_far, _ = noise.superlevel_bounds("gauss", zbar - y, 1.0)
    assert np.allclose(centre, (noise.superlevel_bounds("gauss", y, 1.0)[1] + lo_far) / 2)


@pytest.mark.parametrize("name, h_d, h_w", [("gauss", -1.5263220, -1.3306303), ("laplace", -1.1099489, -0.6031117)])
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_layered_entropies(name, h_d, h_w, sigma):
    assert noise.direct_entropy(name, sigma) == pytest.approx(h_d - math.log2(sigma), abs=2e-7)
    assert noise.shifted_entropy(name, sigma) == pytest.approx(h_w - math.log2(sigma), abs=2e-7)
    assert noise.shifted_entropy(name, sigma) <= -math.log2(noise.minimal_shifted_step(name, sigma))


@pytest.mark.parametrize("name", ["gauss", "laplace"])
def test_direct_entropy_by_quadrature(name):
    """h(D_Z) = −∫₀^Z̄ f_D log₂ f_D with f_D from the printed formulas (independent of the closed form)."""
    zbar = 1 / mpmath.sqrt(2 * mpmath.pi) if name == "gauss" else 1 / mpmath.sqrt(2)
    if name == "gauss":
        def f_d(y):
            return 2 * mpmath.sqrt(2 * mpmath.log(zbar / y))
    else:
        def f_d(y):
            return -mpmath.sqrt(2) * mpmath.log(y / zbar)
    value = -mpmath.quad(lambda y: f_d(y) * mpmath.log(f_d(y), 2), [0, zbar / 2, zbar])
    assert float(value) == pytest.approx(noise.direct_entropy(name, 1.0), abs=1e-8)
    assert float(mpmath.quad(f_d, [0, zbar])) == pytest.approx(1, abs=1e-10)   # f_D is a density


def test_entropy_gap_below_one_bit():
    gaps = {name: noise.shifted_entropy(name, 1) - noise.direct_entropy(name, 1) for name in ("gauss", "laplace")}
    assert gaps["gauss"] == pytest.approx(0.19570, abs=1e-5)
    assert gaps["laplace"] == pytest.approx(0.5068372, abs=1e-6)   # −0.6031117 − (−1.1099489)
    assert max(gaps.values()) < 1  # Prop. 1's optimality gap holds with +1 in place of the printed +2


# ------------------------------------------------------------------ Irwin–Hall density
@pytest.mark.parametrize("n", [1, 2, 3, 7, 20])
def test_irwin_hall_pdf_is_a_unit_variance_density(n):
    half = math.sqrt(3 * n)
    knots = [-half + 2 * half * k / n for k in range(n + 1)]   # the pieces of the polynomial
    mass = mpmath.quad(lambda x: noise.irwin_hall_pdf(n, x), knots)
    variance = mpmath.quad(lambda x: x**2 * noise.irwin_hall_pdf(n, x), knots)
    assert float(mass) == pytest.approx(1, abs=1e-12)
    assert float(variance) == pytest.approx(1, abs=1e-12)
    assert noise.irwin_hall_pdf(n, half * 1.0001) == 0


def test_irwin_hall_n3_closed_form():
    for x in (0, 0.3, 0.99, 1.0, 1.7, 2.9, -2.2):
        expected = (3 - x * x) / 8 if abs(x) <= 1 else (3 - abs(x)) ** 2 / 16
        assert float(noise.irwin_hall_pdf(3, x)) == pytest.approx(expected, rel=1e-14)
    assert float(noise.irwin_hall_pdf(3, 0)) == 0.375


@pytest.mark.parametrize("n, x", [(12, F(1, 3)), (48, F(0)), (48, F(-7, 4)), (108, F(5, 3)), (300, F(2, 5))])
def test_irwin_hall_pdf_is_stable_for_large_n(n, x):
    """Against exact fractions (n = 12k² makes c = √(n/12) = k rational, so s is rational)."""
    c = math.isqrt(n // 12)
    exact = c * ih_uniform_sum_density(n, F(n, 2) + c * x)
    assert float(noise.irwin_hall_pdf(n, x)) == pytest.approx(float(exact), rel=1e-13)


def test_irwin_hall_cdf_and_sigma_scaling():
    for n, x in [(3, 0.4), (5, -1.1), (9, 2.5)]:
        assert float(noise.irwin_hall_cdf(n, x)) == pytest.approx(float(ih_cdf_float(n, x)), abs=1e-12)
    assert float(noise.irwin_hall_cdf(40, 0)) == pytest.approx(0.5, abs=1e-25)
    assert float(noise.irwin_hall_pdf(6, 1.0, sigma=2.0)) == pytest.approx(float(noise.irwin_hall_pdf(6, 0.5)) / 2, rel=1e-14)


def test_irwin_hall_derivative_n3():
    assert float(noise.irwin_hall_pdf_derivative(3, 0.5)) == pytest.approx(-0.125, rel=1e-14)
    assert float(noise.irwin_hall_pdf_derivative(3, 2.0)) == pytest.approx(-(3 - 2.0) / 8, rel=1e-14)
    assert float(noise.irwin_hall_pdf_derivative(3, -2.0)) == pytest.approx((3 - 2.0) / 8, rel=1e-14)


def test_irwin_hall_pdf_matches_monte_carlo_histogram():
    n = 5
    rng = np.random.default_rng(13)
    samples = sample_irwin_hall(n, 200_000, rng)
    edges = np.linspace(-math.sqrt(3 * n), math.sqrt(3 * n), 41)
    counts, _ = np.histogram(samples, edges)
    probs = np.diff([float(noise.irwin_hall_cdf(n, e)) for e in edges])
    keep = probs * samples.size > 5
    expected = probs[keep] / probs[keep].sum() * counts[keep].sum()
    assert stats.chisquare(counts[keep], expected).pvalue > P_MIN


@pytest.mark.parametrize("n", [1, 2, 3, 10])
def test_irwin_hall_mean_abs(n):
    half = math.sqrt(3 * n)
    knots = sorted({0.0, *(-half + 2 * half * k / n for k in range(n + 1))})
    quad = mpmath.quad(lambda x: abs(x) * noise.irwin_hall_pdf(n, x), knots)
    assert float(noise.irwin_hall_mean_abs(n)) == pytest.approx(float(quad), rel=1e-12)
    assert float(noise.irwin_hall_mean_abs(n, 2)) == pytest.approx(2 * float(quad), rel=1e-12)


@pytest.mark.parametrize("n", [2, 5])
def test_irwin_hall_mechanism_error(n):
    """With the decoder's 1/n, which §4.2 of Hegazy et al. (2024) omits, the error is IH(n, 0, σ²)
    (without it, the variance would be n²σ²)."""
    rng = np.random.default_rng(31)
    x = np.tile(rng.uniform(-40, 40, (n, 1)), (1, N))
    y, m = quantizers.irwin_hall_mechanism(x, 1.5, rng)
    error = y - x.mean(axis=0)
    assert stats.kstest(error, lambda e: ih_cdf_float(n, e, 1.5)).pvalue > P_MIN
    assert np.abs(error).max() <= 1.5 * math.sqrt(3 * n)
    w = 2 * 1.5 * math.sqrt(3 * n)
    assert np.all(np.abs(m) <= np.ceil(40 / w) + 1)


def test_irwin_hall_table_matches_mpmath():
    for n in (3, 10, 60):
        grid, values = aggregate.irwin_hall_table(n)
        assert grid[0] == 0 and grid[-1] == pytest.approx(math.sqrt(3 * n))
        for i in range(0, grid.size, grid.size // 13):
            # far in the tail f ∝ s^{n−1}: the float rounding of the grid point alone moves f by ~1e-10
            tolerance = 1e-11 if values[i] > 1e-6 * values[0] else 1e-8
            assert values[i] == pytest.approx(float(noise.irwin_hall_pdf(n, grid[i])), rel=tolerance)


# ------------------------------------------------------------------ λ(n), Theorem 2
def test_lambda_3_closed_form():
    roots = np.roots([1, -3, 0, 3])
    x_star = float(next(r.real for r in roots if abs(r.imag) < 1e-12 and 1 < r.real < 3))
    closed = 8 * x_star * stats.norm.pdf(x_star) / (3 - x_star)
    assert closed == pytest.approx(0.69997369889431, abs=1e-13)
    assert aggregate.mixture_weight(3) == pytest.approx(closed, abs=1e-13)


@pytest.mark.parametrize("n, lam, f0, lf0", [(4, 0.8483387, 0.3849002, 2.6667), (5, 0.8941762, 0.3866259, 2.9948),
                                             (10, 0.9476081, 0.3929159, 4.3042), (20, 0.9744330, 0.3959391, 6.1339),
                                             (100, 0.9949782, 0.3983434, 13.7990)])
def test_lambda_and_peaks_table(n, lam, f0, lf0):
    assert aggregate.mixture_weight(n) == pytest.approx(lam, abs=6e-8)
    assert aggregate.peak_density(n) == pytest.approx(f0, abs=6e-8)
    assert aggregate.scaled_peak(n) == pytest.approx(lf0, abs=6e-5)
    if n >= 10:
        assert 1 - aggregate.mixture_weight(n) == pytest.approx(1 / (2 * n), rel=0.1)


def test_lambda_small_n_and_monotone():
    assert aggregate.mixture_weight(1) == aggregate.mixture_weight(2) == 0
    assert aggregate.scaled_peak(1) == pytest.approx(1, rel=1e-14)
    assert aggregate.scaled_peak(3) == pytest.approx(2.25, rel=1e-14)
    weights = [aggregate.mixture_weight(n) for n in range(3, 12)]
    assert all(a < b for a, b in zip(weights, weights[1:]))


@pytest.mark.parametrize("n", [3, 10])
def test_gap_function_is_nonnegative_and_nonincreasing(n):
    """g − λf ≥ 0 and nonincreasing on x > 0 (claim 16), with f from mpmath, g = φ."""
    lam = aggregate.mixture_weight(n)
    xs = np.linspace(0, math.sqrt(3 * n) + 0.5, 400)
    gap = np.array([stats.norm.pdf(x) - lam * float(noise.irwin_hall_pdf(n, x)) for x in xs])
    assert gap.min() >= 0
    assert np.all(np.diff(gap) <= 1e-12)
    # and λ is the largest such weight: a slightly larger one breaks monotonicity
    bigger = np.array([stats.norm.pdf(x) - (lam + 1e-3) * float(noise.irwin_hall_pdf(n, x)) for x in xs])
    assert np.any(np.diff(bigger) > 0)


@pytest.mark.parametrize("n, bound", [(1, 1.9094), (2, 3.4094), (3, 1.24240), (4, 0.73334), (10, 0.37843),
                                      (20, 0.24463), (100, 0.09243)])
def test_theorem2_bound_table(n, bound):
    digits = len(str(bound).split(".")[1])
    assert aggregate.theorem2_bound(n) == pytest.approx(bound, abs=0.6 * 10.0**-digits)


@pytest.mark.slow
@pytest.mark.parametrize("n, lam, bound", [(500, 0.9989991, 0.03669), (1000, 0.9994998, 0.02499)])
def test_theorem2_large_n(n, lam, bound):
    assert aggregate.mixture_weight(n) == pytest.approx(lam, abs=6e-8)
    assert aggregate.theorem2_bound(n) == pytest.approx(bound, abs=6e-6)


# ------------------------------------------------------------------ Algorithms 1–4
@pytest.mark.parametrize("n", [1, 3, 10])
def test_decompose_uniform(n):
    """Alg. 1: (a/L) X + b ~ U(−½, ½) for X ~ IH(n, 0, 1); first-round acceptance 1/(L f(0))."""
    rng = np.random.default_rng(40 + n)
    a, b = aggregate.decompose_uniform(n, N, rng)
    x = sample_irwin_hall(n, N, rng)
    assert stats.kstest(a * x / (2 * math.sqrt(3 * n)) + b, stats.uniform(-0.5, 1).cdf).pvalue > P_MIN
    accept = 1 / aggregate.scaled_peak(n)
    assert abs(np.mean(a == 1) - accept) <= 4 * math.sqrt(abs(accept * (1 - accept)) / N)


@pytest.mark.parametrize("n", [3, 10])
def test_decompose_gives_standard_normal(n):
    rng = np.random.default_rng(50 + n)
    a, b = aggregate.decompose(n, N, rng)
    x = sample_irwin_hall(n, N, rng)
    assert stats.kstest(a * x + b, stats.norm.cdf).pvalue > P_MIN
    lam = aggregate.mixture_weight(n)
    top = np.mean((a == 1) & (b == 0))
    assert abs(top - lam) < 4 * math.sqrt(lam * (1 - lam) / N)
    minus_log_a = -np.log2(a)
    assert minus_log_a.mean() <= aggregate.theorem2_bound(n) + 3 * minus_log_a.std() / math.sqrt(N)


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 20, 100])
def test_decompose_gives_standard_normal_more_n(n):
    rng = np.random.default_rng(60 + n)
    size = 200_000
    a, b = aggregate.decompose(n, size, rng)
    x = sample_irwin_hall(n, size, rng)
    assert stats.kstest(a * x + b, stats.norm.cdf).pvalue > P_MIN


@pytest.mark.parametrize("n, sigma", [(3, 1.0), (10, 0.5)])
def test_aggregate_gaussian_error(n, sigma):
    rng = np.random.default_rng(70 + n)
    x = np.tile(np.r_[-32.0, 31.99, rng.uniform(-32, 32, n - 2)][:, None], (1, N))
    y, m = aggregate.aggregate_gaussian(x, sigma, rng)
    error = y - x.mean(axis=0)
    assert stats.kstest(error, stats.norm(0, sigma).cdf).pvalue > P_MIN
    assert np.all(m == np.round(m)) and m.shape == x.shape
    single, messages = aggregate.aggregate_gaussian(x[:, 0], sigma, rng)   # one run: x of shape (n,)
    assert single.shape == () and messages.shape == (n,)


def test_aggregate_is_homomorphic():
    """Y depends only on Σ m_i and the shared randomness: clients replayed from the shared seed give
    the same Y, a different split of the same sum gives the same Y, and 𝒟 is additive (eq. 6)."""
    n, sigma, t = 4, 1.0, 64.0
    rng = np.random.default_rng(80)
    x = rng.uniform(-t / 2, t / 2, (n, 500))
    y, m = aggregate.aggregate_gaussian(x, sigma, np.random.default_rng(81))
    a, b, s = aggregate.shared_randomness(n, sigma, 500, np.random.default_rng(81))
    assert np.array_equal(m, aggregate.encode(x, s, a, n, sigma))
    assert np.array_equal(y, aggregate.decode(m.sum(axis=0), s.sum(axis=0), a, b, n, sigma))
    moved = m.copy()
    moved[0] += 5
    moved[1] -= 5
    assert np.array_equal(aggregate.decode(moved.sum(axis=0), s.sum(axis=0), a, b, n, sigma), y)
    part = aggregate.decode(m[:2].sum(axis=0), s[:2].sum(axis=0), a, 0, n, sigma)
    rest = aggregate.decode(m[2:].sum(axis=0), s[2:].sum(axis=0), a, 0, n, sigma)
    assert np.allclose(part + rest + b, y, rtol=1e-12, atol=1e-9)


def test_aggregate_message_range_and_bits():
    """|M_i| ≤ ⌈t/(2w|A|)⌉ for |x_i| ≤ t/2 (Hegazy et al. 2024, §4.5), and E⌈log₂(t/(w|A|) + 3)⌉ ≤ Thm 1 + Thm 2."""
    n, sigma, t = 10, 1.0, 64.0
    rng = np.random.default_rng(90)
    x = rng.uniform(-t / 2, t / 2, (n, N))
    a, b, s = aggregate.shared_randomness(n, sigma, N, rng)
    m = aggregate.encode(x, s, a, n, sigma)
    w = aggregate.client_step(n, sigma)
    assert np.all(np.abs(m) <= np.ceil(t / (2 * w * a)))
    fixed = np.ceil(np.log2(t / (w * a) + 3)).mean()
    assert fixed == pytest.approx(4.29, abs=0.05)       # reference value (simulation, N = 1e5): 4.294
    assert fixed <= bits.aggregate_bits_bound(n, sigma, t)


# ------------------------------------------------------------------ bits
@pytest.mark.parametrize("step, t", [(0.3, 1.0), (0.7, 1.0), (2.5, 1.0), (3.3, 10.0), (1.0, 1.0)])
def test_dithered_cell_entropy_closed_form(step, t):
    assert float(bits.dithered_cell_entropy(step, t)) == pytest.approx(cell_entropy_brute(step, t), abs=1e-6)


# Fig. 2 setting, reference values: target, σ, t → LB, H direct, H shifted, UB direct, UB shifted, fixed
FIG2_REFERENCE = [
    ("gauss", 1, 4, 0.4737, 1.0476, 1.1247, 3.3591, 3.5548, 2),
    ("gauss", 1, 16, 2.4737, 2.6176, 2.7832, 3.1950, 3.3907, 4),
    ("gauss", 1, 64, 4.4737, 4.5096, 4.6978, 4.6540, 4.8497, 5),
    ("gauss", 1, 1024, 8.4737, 8.4759, 8.6712, 8.4849, 8.6806, 9),
    ("gauss", 3, 16, 0.8887, 1.3203, 1.4259, 3.0528, 3.2485, 3),
    ("gauss", 3, 1024, 6.8887, 6.8955, 7.0897, 6.9225, 7.1182, 8),
    ("laplace", 1, 16, 2.8900, 3.0176, 3.4720, 3.6114, 4.1182, 5),
    ("laplace", 1, 64, 4.8900, 4.9219, 5.4157, 5.0704, 5.5772, 7),
    ("laplace", 3, 1024, 7.3051, 7.3111, 7.8154, 7.3389, 7.8457, 9),
]


@pytest.mark.parametrize("row", FIG2_REFERENCE, ids=lambda row: f"{row[0]}-{row[1]}-{row[2]}")
def test_entropy_fig2_reference(row):
    name, sigma, t, lb, h_direct, h_shifted, ub_direct, ub_shifted, fixed = row
    assert bits.lower_bound(name, sigma, t) == pytest.approx(lb, abs=1e-4)
    assert bits.conditional_entropy(name, "direct", sigma, t) == pytest.approx(h_direct, abs=2e-3)
    assert bits.conditional_entropy(name, "shifted", sigma, t) == pytest.approx(h_shifted, abs=2e-3)
    assert bits.direct_upper_bound(name, sigma, t) == pytest.approx(ub_direct, abs=1e-4)
    assert bits.shifted_upper_bound(name, sigma, t) == pytest.approx(ub_shifted, abs=1e-4)
    assert bits.shifted_fixed_length(name, sigma, t) == fixed


@pytest.mark.parametrize("name", ["gauss", "laplace"])
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_entropy_orderings(name, sigma):
    for t in (1.0, 4.0, 37.0, 300.0, 4096.0):
        h_direct = bits.conditional_entropy(name, "direct", sigma, t)
        h_shifted = bits.conditional_entropy(name, "shifted", sigma, t)
        assert bits.lower_bound(name, sigma, t) <= h_direct <= bits.direct_upper_bound(name, sigma, t)
        assert h_shifted <= bits.shifted_upper_bound(name, sigma, t)
        assert 0 <= h_shifted - h_direct < 1
        if t / sigma >= 1024:
            assert h_direct - bits.lower_bound(name, sigma, t) < 0.01


@pytest.mark.parametrize("quantizer", ["direct", "shifted"])
def test_conditional_entropy_by_monte_carlo_steps(quantizer):
    """The quadrature over the step law against the mean over the sampler's steps (the cell entropy
    given the step is checked against brute force above)."""
    rng = np.random.default_rng(100)
    sampler = quantizers.direct_layered if quantizer == "direct" else quantizers.shifted_layered
    _, _, step = sampler(np.zeros(N), "laplace", 1.0, rng)
    values = bits.dithered_cell_entropy(step, 16.0)
    exact = bits.conditional_entropy("laplace", quantizer, 1.0, 16.0)
    assert abs(values.mean() - exact) < 4 * values.std() / math.sqrt(values.size) + 1e-3


# Fig. 4 setting (σ = 1), reference values: t, n → AggG, Ind UB, Ind H, IH ceil, IH H
FIG4_REFERENCE = [
    (64, 3, 6.056, 3.994, 3.744, 4, 3.483),
    (64, 10, 4.662, 3.383, 2.926, 4, 2.670),
    (64, 100, 4.320, 2.955, 1.512, 3, 1.276),
    (2048, 3, 10.670, 8.691, 8.683, 9, 8.417),
    (2048, 10, 8.948, 7.831, 7.816, 8, 7.550),
    (2048, 100, 7.051, 6.208, 6.163, 6, 5.898),
]


@pytest.mark.parametrize("row", FIG4_REFERENCE, ids=lambda row: f"t{row[0]}-n{row[1]}")
def test_fig4_reference(row):
    t, n, agg, ind_ub, ind_h, ih_ceil, ih_h = row
    assert bits.aggregate_bits_bound(n, 1, t) == pytest.approx(agg, abs=6e-4)
    assert bits.direct_upper_bound("gauss", math.sqrt(n), t) == pytest.approx(ind_ub, abs=6e-4)
    assert bits.conditional_entropy("gauss", "direct", math.sqrt(n), t) == pytest.approx(ind_h, abs=2e-3)
    assert bits.irwin_hall_fixed_length(n, 1, t) == ih_ceil
    assert bits.irwin_hall_entropy(n, 1, t) == pytest.approx(ih_h, abs=6e-4)
    assert bits.irwin_hall_entropy(n, 1, t) <= math.log2(t / (2 * math.sqrt(3 * n)) + 3) <= ih_ceil


@pytest.mark.parametrize("b", [2, 3, 8])
def test_langevin_sigma(b):
    sigma_b = bits.langevin_sigma(b)
    assert 2 + 2 / noise.minimal_shifted_step("gauss", sigma_b) == pytest.approx(2**b, rel=1e-12)
    assert sigma_b == pytest.approx(1 / ((2**b - 2) * math.sqrt(2 * math.log(2))), rel=1e-14)


# ------------------------------------------------------------------ Rényi divergences
def gaussian_divergence_by_quadrature(alpha, sigma, delta):
    p = lambda x: mpmath.npdf(x, 0, sigma)          # noqa: E731
    q = lambda x: mpmath.npdf(x, delta, sigma)      # noqa: E731
    if alpha == 1:
        return mpmath.quad(lambda x: p(x) * (mpmath.log(p(x)) - mpmath.log(q(x))), [-mpmath.inf, 0, delta, mpmath.inf])
    integral = mpmath.quad(lambda x: p(x) ** alpha * q(x) ** (1 - alpha), [-mpmath.inf, 0, delta, mpmath.inf])
    return mpmath.log(integral) / (alpha - 1)


def laplace_divergence_by_quadrature(alpha, sigma, delta):
    b = sigma / mpmath.sqrt(2)
    p = lambda x: mpmath.exp(-abs(x) / b) / (2 * b)            # noqa: E731
    q = lambda x: mpmath.exp(-abs(x - delta) / b) / (2 * b)    # noqa: E731
    pieces = [-mpmath.inf, 0, delta, mpmath.inf]
    if alpha == 1:
        return mpmath.quad(lambda x: p(x) * (-abs(x) + abs(x - delta)) / b, pieces)
    return mpmath.log(mpmath.quad(lambda x: p(x) ** alpha * q(x) ** (1 - alpha), pieces)) / (alpha - 1)


@pytest.mark.parametrize("alpha", [1, 1.5, 7.25])
@pytest.mark.parametrize("sigma, delta", [(1.3, 0.7), (0.5, 2.0)])
def test_gaussian_rdp_vs_quadrature(alpha, sigma, delta):
    with mpmath.workdps(20):
        quad = gaussian_divergence_by_quadrature(mpmath.mpf(alpha), mpmath.mpf(sigma), mpmath.mpf(delta))
    assert float(noise.gaussian_rdp(alpha, sigma, delta)) == pytest.approx(float(quad), rel=1e-12)


@pytest.mark.parametrize("alpha", [1, 1.5, 2, 7.25, 40])
@pytest.mark.parametrize("sigma, delta", [(1.3, 0.7), (0.5, 2.0)])
def test_laplace_rdp_vs_quadrature(alpha, sigma, delta):
    with mpmath.workdps(20):
        quad = laplace_divergence_by_quadrature(mpmath.mpf(alpha), mpmath.mpf(sigma), mpmath.mpf(delta))
    assert float(noise.laplace_rdp(alpha, sigma, delta)) == pytest.approx(float(quad), rel=1e-12)


def test_laplace_rdp_limits():
    eps = SQRT2 * 0.7 / 1.3                 # Δ/b
    assert float(noise.laplace_rdp("inf", 1.3, 0.7)) == pytest.approx(eps, rel=1e-14)
    assert float(noise.laplace_rdp(1, 1.3, 0.7)) == pytest.approx(eps + math.exp(-eps) - 1, rel=1e-14)
    near = float(noise.laplace_rdp(1 + 1e-9, 1.3, 0.7))
    assert near == pytest.approx(float(noise.laplace_rdp(1, 1.3, 0.7)), rel=1e-7)
    values = [float(noise.laplace_rdp(a, 1.3, 0.7)) for a in (1, 2, 10, 1e3, 1e6)]
    assert all(x < y for x, y in zip(values, values[1:])) and values[-1] < eps
    # Mironov's printed form at α = 2, sensitivity 1, scale b
    b = 0.9
    printed = math.log(2 / 3 * math.exp(1 / b) + 1 / 3 * math.exp(-2 / b))
    assert float(noise.laplace_rdp(2, b * SQRT2, 1)) == pytest.approx(printed, rel=1e-14)


def test_divergence_with_reasons():
    value, reason = noise.renyi_divergence("gauss", 2, 2.0, 1.0)
    assert value == pytest.approx(2 * 1 / 8) and reason is None
    value, reason = noise.renyi_divergence("gauss", "inf", 2.0, 1.0)
    assert value == mpmath.inf and "unbounded" in reason
    for alpha in (1, 2, 64, "inf"):
        value, reason = noise.renyi_divergence("irwin-hall", alpha, 1.0, 1e-6, n=30)
        assert value == mpmath.inf and "support" in reason and "\n" not in reason
    assert noise.renyi_divergence("irwin-hall", 2, 1.0, 0, n=30) == (0, None)
    value, reason = noise.renyi_divergence("laplace", "inf", 1.0, 1.0)
    assert float(value) == pytest.approx(SQRT2) and reason is None


def test_irwin_hall_divergence_is_infinite_by_support():
    """An independent look at why: P puts mass 1 − F(σ√(3n) − Δ) > 0 where the shifted law has none."""
    n, delta = 4, 0.01
    outside = float(noise.irwin_hall_cdf(n, -math.sqrt(3 * n) + delta))     # P(X < −σ√(3n) + Δ)
    assert outside == pytest.approx(float(ih_cdf_float(n, -math.sqrt(3 * n) + delta)), rel=1e-6)
    assert outside > 0
    assert noise.irwin_hall_rdp(1, n, 1, delta) == mpmath.inf


# ------------------------------------------------------------------ parameter errors
@pytest.mark.parametrize("call, parameter", [
    (lambda: noise.density("cauchy", 0, 1), "noise"),
    (lambda: noise.peak("gauss", -1), "sigma"),
    (lambda: noise.peak("gauss", "nan"), "sigma"),
    (lambda: noise.irwin_hall_pdf(0, 0.1), "n"),
    (lambda: noise.irwin_hall_pdf(2.5, 0.1), "n"),
    (lambda: noise.renyi_divergence("gauss", 0.5, 1, 1), "alphas"),
    (lambda: noise.renyi_divergence("gauss", 2, 1, -1), "sensitivity"),
    (lambda: noise.renyi_divergence("irwin-hall", 2, 1, 1, n=0), "n"),
    (lambda: noise.renyi_divergence("uniform", 2, 1, 1), "noise"),
    (lambda: bits.conditional_entropy("gauss", "middle", 1, 4), "quantizer"),
    (lambda: bits.conditional_entropy("gauss", "direct", 1, 0), "t"),
    (lambda: bits.aggregate_bits_bound(0, 1, 4), "n"),
    (lambda: bits.langevin_sigma(1), "bits"),
    (lambda: quantizers.direct_layered([0.0], "laplace", 0, np.random.default_rng(0)), "sigma"),
    (lambda: quantizers.subtractive_dithering([0.0], -1, np.random.default_rng(0)), "step"),
    (lambda: aggregate.decompose(-2, 10, np.random.default_rng(0)), "n"),
])
def test_invalid_values_name_the_parameter(call, parameter):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.parameter == parameter


def test_shifted_entropy_for_laplace_at_large_t():
    """Regression: the root bracket of the step = t kink used to fail when b⁺(r*) rounds to 0."""
    for t in (45.25483399593905, 127.99999999999999, 724.0773439350248):
        value = bits.conditional_entropy("laplace", "shifted", 1.0, t)
        assert bits.lower_bound("laplace", 1.0, t) <= value <= bits.shifted_upper_bound("laplace", 1.0, t)
