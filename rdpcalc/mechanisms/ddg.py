"""The distributed discrete Gaussian mechanism: Kairouz, Liu & Steinke (2021), "The Distributed
Discrete Gaussian Mechanism for Federated Learning with Secure Aggregation", ICML 2021,
arXiv:2102.06387.

One client scales its input to the grid of step γ, rounds it without bias (:mod:`.rounded`) and
adds discrete Gaussian noise N_Z(0, s²), s = σ/γ, whose pmf on the integers is
exp(−z²/(2s²))/Z_s (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential
Privacy", arXiv:2004.00010, Def. 1). The SecAgg sum of n clients is *not* a discrete Gaussian;
its divergences here are exact (a certified bracket: the noise is computed on a window).

Privacy parameters are in grid units: s = σ/γ and the sensitivity of the rounded input,
Δ = 2⌈c/γ⌉ (x = c and x′ = −c round to ±⌈c/γ⌉ in the worst case).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np

from ..exactnum import to_mpf
from .base import Bound, Param, SolveRange, SumWorst, bits_param, mechanism
from .design import Z_RANGE, Design, noise_ends, unbounded_reach
from .rounded import RoundedNoise, grid_params, log_add, window_params


@mechanism
class DistributedDiscreteGaussian(RoundedNoise):
    """Inputs in [−c, c] rounded to the grid γZ without bias, plus N_Z(0, (σ/γ)²) noise."""

    name = "ddg"
    title = "Distributed discrete Gaussian"
    paper = ("Kairouz, Liu & Steinke (2021), \"The Distributed Discrete Gaussian Mechanism for Federated Learning with "
             "Secure Aggregation\", ICML 2021, arXiv:2102.06387")
    EXAMPLE = {"--c": "1", "--gamma": "0.125", "--sigma": "1"}
    PARAMS = (
        *grid_params(),
        Param("sigma", "number", "noise scale σ > 0 (input units): each client adds N_Z(0, (σ/γ)²) on the grid",
              low=0, low_open=True, solve=SolveRange(0.05, 200, log=True, relative_to="gamma")),
        *window_params(),
        bits_param(),
    )
    SIZE_PARAMETER = "sigma"
    FL_OBSERVER = "server"
    BOUND_PARAMS = (Param("n", "integer", "clients in the SecAgg sum the paper's sum bound is checked at, 1 … 1000",
                          default=1, low=1, high=1000, option="--n"),)

    @property
    def scale(self) -> mpmath.mpf:
        """s = σ/γ, the noise parameter on the grid."""
        return to_mpf(self.sigma / self.gamma)

    def noise_log_pmf(self, z: int) -> mpmath.mpf:
        """−z²/(2s²) − log Z_s."""
        return -mpmath.mpf(z) ** 2 / (2 * self.scale**2) - _log_normaliser(self.scale, mpmath.mp.prec)

    def log_normaliser_lower(self) -> mpmath.mpf:
        """log of a lower bound of Z_s = Σ_z e^{−z²/(2s²)}: by Poisson summation Z_s =
        s√(2π) Σ_k e^{−2π²s²k²} ≥ s√(2π), and Z_s ≥ 1 (the term z = 0)."""
        return mpmath.log(max(mpmath.mpf(1), self.scale * mpmath.sqrt(2 * mpmath.pi)))

    def noise_deviation(self) -> float:
        return float(self.sigma / self.gamma)

    def integer_noise(self, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        """N_Z(0, s²), s = σ/γ, by the rejection sampler of Canonne, Kamath & Steinke (2020,
        arXiv:2004.00010, Algorithm 3) (:func:`_discrete_gaussian`)."""
        return _discrete_gaussian(float(self.sigma / self.gamma), shape, rng)

    def tail_mass_at(self, window: int) -> mpmath.mpf:
        """P(|Z| > L) ≤ 2 Σ_{z > L} e^{−z²/(2s²)}/Z_s ≤ 2·s√(π/2)·erfc(L/(s√2))/Z_s (the sum of a
        decreasing function below its integral from L)."""
        s = self.scale
        return 2 * s * mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc(window / (s * mpmath.sqrt(2))) / mpmath.exp(
            self.log_normaliser_lower())

    def log_tail_sum(self, alpha: float, start: int, y: int, y_prime: int) -> mpmath.mpf:
        """N(o−y)^α N(o−y′)^{1−α} = e^{α(α−1)d²/(2s²)} e^{−(o−μ)²/(2s²)}/Z_s with d = y − y′ and
        μ = αy + (1−α)y′ (complete the square); the sum over o ≥ start of the unimodal
        e^{−(o−μ)²/(2s²)} is at most its largest term plus ∫_start^∞ (= s√(π/2)·erfc((start−μ)/(s√2)))."""
        s, a = self.scale, mpmath.mpf(alpha)
        d = mpmath.mpf(y - y_prime)
        mu = a * y + (1 - a) * y_prime
        largest = mpmath.mpf(0) if mu >= start else -((start - mu) ** 2) / (2 * s**2)
        integral = mpmath.log(s * mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc((start - mu) / (s * mpmath.sqrt(2))))
        return a * (a - 1) * d**2 / (2 * s**2) - self.log_normaliser_lower() + log_add(largest, integral)

    @classmethod
    def design(cls) -> Design:
        """``compare``'s design at B bits for n clients: the finest grid that leaves the sum's noise
        Z_RANGE standard deviations of the modulus."""
        def build(value: float, n: int, bits: int, c: Fraction):
            reach = unbounded_reach(value, n, bits)
            if reach < 1:
                return None
            gamma = c / reach
            return cls(c=c, gamma=gamma, sigma=Fraction(value) * gamma, cover=Fraction(1), bits=bits)

        return Design("sigma/gamma", noise_ends, build,
                      rule=f"K = ⌊(2^B − 2·{Z_RANGE}√n·s)/(2n)⌋, γ = c/K; s = σ/γ solved for")

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        """The single discrete Gaussian's αΔ²/(2s²) (Canonne et al. 2020, Prop. 5; an equality at
        integer αΔ without rounding) and, for n > 1 clients, the sum bound of Kairouz et al.
        (2021), Prop. 14 / eq. (17), in grid units with d = 1 and Δ₁ = Δ₂ = Δ:
        min{αΔ²/(2ns²) + τ, (α/2)(Δ²/(ns²) + 2Δτ/(√n s) + τ²), (α/2)(Δ/(√n s) + τ)²},
        τ = 10 Σ_{k=1}^{n−1} e^{−2π²s²k/(k+1)}, stated for s ≥ ½."""
        n = self.bound_options(**options)["n"]
        s, delta = self.scale, mpmath.mpf(2 * self.reach)
        finite = [a for a in alphas if 1 < a < math.inf]
        out = [Bound("αΔ²/(2s²): one discrete Gaussian, Δ = 2⌈c/γ⌉", a, a * delta**2 / (2 * s**2),
                     "Canonne, Kamath & Steinke (2020), Prop. 5") for a in finite]
        if n > 1:
            tau = 10 * mpmath.fsum(mpmath.exp(-2 * mpmath.pi**2 * s**2 * k / (k + 1)) for k in range(1, n))
            note = "" if s >= mpmath.mpf(1) / 2 else "stated for σ/γ ≥ 1/2"
            for a in finite:
                value = min(a * delta**2 / (2 * n * s**2) + tau,
                            a / 2 * (delta**2 / (n * s**2) + 2 * delta * tau / (mpmath.sqrt(n) * s) + tau**2),
                            a / 2 * (delta / (mpmath.sqrt(n) * s) + tau) ** 2)
                out.append(Bound(f"sum of n = {n}: Prop. 14, eq. (17), d = 1", a, value,
                                 "paper Prop. 14, eq. (17) (the form of the authors' code)",
                                 SumWorst(n), note=note))
        return out



@lru_cache(maxsize=64)
def _log_normaliser(scale: mpmath.mpf, precision: int) -> mpmath.mpf:
    """log Z_s, Z_s = Σ_z e^{−z²/(2s²)}: by Poisson summation s√(2π)(1 + 2Σ_{k≥1} e^{−2π²s²k²}) for
    s ≥ 1, else directly (1 + 2Σ_{z≥1} e^{−z²/(2s²)}); both series are summed until their terms
    fall below the working precision (each tail is below its first omitted term)."""
    tiny = mpmath.mpf(2) ** (-precision - 10)
    if scale >= 1:
        rate, total, k = 2 * mpmath.pi**2 * scale**2, mpmath.mpf(1), 1
        while (term := mpmath.exp(-rate * k * k)) > tiny:
            total += 2 * term
            k += 1
        return mpmath.log(scale * mpmath.sqrt(2 * mpmath.pi) * total)
    total, z = mpmath.mpf(1), 1
    while (term := mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * scale**2))) > tiny:
        total += 2 * term
        z += 1
    return mpmath.log(total)


def _discrete_gaussian(scale: float, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """N_Z(0, s²) by rejection (Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Algorithm 3):
    Y from the discrete Laplace P(y) ∝ e^{−|y|/t}, t = ⌊s⌋ + 1 (the difference of two geometric
    variables), kept with probability exp(−(|Y| − s²/t)²/(2s²)); batches of at least 1024
    proposals until ``shape`` draws are kept."""
    t = math.floor(scale) + 1
    size = int(np.prod(shape))
    out = np.empty(0, dtype=np.int64)
    success = -math.expm1(-1.0 / t)
    while len(out) < size:
        draws = max(1024, 2 * (size - len(out)))
        laplace = rng.geometric(success, draws) - rng.geometric(success, draws)
        keep = rng.random(draws) < np.exp(-((np.abs(laplace) - scale**2 / t) ** 2) / (2 * scale**2))
        out = np.concatenate([out, laplace[keep]])
    return out[:size].reshape(shape)
