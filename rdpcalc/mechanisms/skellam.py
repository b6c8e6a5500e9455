"""The Skellam mechanism: Agarwal, Kairouz & Liu (2021), "The Skellam Mechanism for
Differentially Private Federated Learning", NeurIPS 2021, arXiv:2110.04995.

One client scales its input to the grid of step γ, rounds it without bias (:mod:`.rounded`) and
adds symmetric Skellam noise Sk(μ, μ) = Poisson(μ) − Poisson(μ) (μ in grid units), whose pmf is
e^{−2μ} I_|z|(2μ) (I the modified Bessel function) and variance 2μ. Skellam laws are closed
under sums: the noise of n clients is Sk(nμ, nμ), which the tests use to check the engines'
convolutions.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np

from ..exactnum import to_mpf
from ..logdomain import logsumexp
from .base import Bound, Param, SolveRange, SumWorst, bits_param, mechanism
from .design import Z_RANGE, Design, noise_ends, unbounded_reach
from .rounded import NOISE_DPS, RoundedNoise, grid_params, window_params

#: the most terms :meth:`Skellam.log_tail_sum` adds before its geometric remainder applies
TAIL_TERMS = 2_000
#: the orders of I_ν are computed up to a multiple of this (the tail sums ask beyond the window)
_BESSEL_BLOCK = 4_096


@lru_cache(maxsize=4)
def _log_bessel_i(mu: Fraction, top: int, precision: int) -> tuple:
    """log I_ν(2μ) for ν = 0 … ``top`` at ``precision`` bits, by Miller's backward recurrence
    I_{ν−1}(x) = I_{ν+1}(x) + (2ν/x)·I_ν(x), x = 2μ, normalised by mpmath's I_0(x).

    Started from (y_{N+1}, y_N) = (0, 1), the recurrence gives a·I_ν + b·(−1)^ν K_ν, the second
    solution K decreasing downwards as I grows: the contamination at ν is about
    (K_ν I_N)/(I_ν K_N) ≈ e^{(ν² − N²)/x} (their uniform asymptotics), so N with
    N² ≥ ν² + x·(precision·log 2 + 50) leaves it below 2^{−precision}. The start is checked:
    two starts, N and N + N/4 + 20, must agree at ``top`` to 2^{10 − precision} (else N doubles)."""
    with mpmath.workprec(precision + 30):
        x = 2 * to_mpf(mu)
        start = int(math.sqrt(top**2 + float(x) * (precision * math.log(2) + 50))) + 10

        def run(first: int) -> list:
            higher, current, values = mpmath.mpf(0), mpmath.mpf(1), {}
            for nu in range(first, 0, -1):
                if nu <= top:
                    values[nu] = current
                higher, current = current, higher + 2 * nu / x * current
            first_value = mpmath.besseli(0, x)
            scale = first_value / current
            return [mpmath.log(first_value)] + [mpmath.log(values[nu] * scale) for nu in range(1, top + 1)]

        while True:
            logs, check = run(start), run(start + start // 4 + 20)
            if abs(logs[top] - check[top]) <= mpmath.ldexp(1, 10 - precision) * max(1, abs(check[top])):
                return tuple(+value for value in logs)
            start *= 2


@mechanism
class Skellam(RoundedNoise):
    """Inputs in [−c, c] rounded to the grid γZ without bias, plus Sk(μ, μ) noise on the grid."""

    name = "skellam"
    title = "Skellam"
    paper = ("Agarwal, Kairouz & Liu (2021), \"The Skellam Mechanism for Differentially Private Federated Learning\", "
             "NeurIPS 2021, arXiv:2110.04995")
    EXAMPLE = {"--c": "1", "--gamma": "0.125", "--mu": "32"}
    PARAMS = (
        *grid_params(),
        Param("mu", "number", "Skellam parameter μ > 0 (grid units): each client adds Poisson(μ) − Poisson(μ), "
              "variance 2μ", low=0, low_open=True, solve=SolveRange(1e-2, 2e4, log=True)),
        *window_params(),
        bits_param(),
    )
    SIZE_PARAMETER = "mu"
    FL_OBSERVER = "server"
    BOUND_PARAMS = (Param("n", "integer", "clients in the SecAgg sum the paper's bound is checked at, 1 … 1000",
                          default=1, low=1, high=1000, option="--n"),)

    def noise_log_pmf(self, z: int) -> mpmath.mpf:
        """log of the Skellam pmf e^{−2μ} I_|z|(2μ), every order at once by the backward recurrence
        of :func:`_log_bessel_i` (mpmath's I_ν sums a series that does not converge where order and
        argument are both in the thousands, μ = 2·10⁴ at |z| ≥ 2000, and costs 0.1 s a value)."""
        top = max(max(abs(end) for end in self.noise_window()) + 2 * self.reach + 1, abs(z))
        top = -(-top // _BESSEL_BLOCK) * _BESSEL_BLOCK
        return _log_bessel_i(self.mu, top, mpmath.mp.prec)[abs(z)] - 2 * to_mpf(self.mu)

    def noise_deviation(self) -> float:
        return math.sqrt(2 * float(self.mu))

    def integer_noise(self, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        """Sk(μ, μ) as the difference Poisson(μ) − Poisson(μ) of two independent draws."""
        mu = float(self.mu)
        return rng.poisson(mu, size=shape) - rng.poisson(mu, size=shape)

    def tail_mass_at(self, window: int) -> mpmath.mpf:
        """P(|Z| > L) ≤ 2 e^{−θ(L+1)} E e^{θZ} = 2 exp(−θ(L+1) + μ(e^θ + e^{−θ} − 2)) (Chernoff),
        at its minimiser θ = asinh((L+1)/(2μ))."""
        mu, edge = to_mpf(self.mu), mpmath.mpf(window + 1)
        theta = mpmath.asinh(edge / (2 * mu))
        return 2 * mpmath.exp(-theta * edge + 2 * mu * (mpmath.cosh(theta) - 1))

    def log_tail_sum(self, alpha: float, start: int, y: int, y_prime: int) -> mpmath.mpf:
        """Σ_{o ≥ start} N(o − y)^α N(o − y′)^{1−α} for y ≥ y′ and start ≥ y: exact terms, then a
        geometric remainder. With r(k) = I_{k+1}(2μ)/I_k(2μ), the series gives r(k) ≤ μ/(k+1) and
        the recurrence I_{k−1} − I_{k+1} = (k/μ) I_k then 1/r(k) ≤ (k+1)/μ + μ/(k+2), so the ratio
        of consecutive terms is at most ρ(o) = (μ/(k₁+1))^α ((k₂+1)/μ + μ/(k₂+2))^{α−1}
        (k₁ = o − y ≤ k₂ = o − y′), which does not increase with o (its log-derivative is at most
        −α/(k₁+1) + (α−1)/(k₂+1) ≤ 0). Once ρ < ½ the rest is at most term·ρ/(1 − ρ). +∞ when
        that takes more than TAIL_TERMS terms (no certificate). The terms use the log pmf rounded
        to float64, raised by 1e−12 against that rounding."""
        if y < y_prime or start < y:
            raise ValueError("log_tail_sum needs y ≥ y′ and start ≥ y")
        mu = float(self.mu)
        logs = self._log_pmf_floats(start - y, start - y_prime + TAIL_TERMS)
        k1 = np.arange(start - y, start - y + TAIL_TERMS)
        k2 = k1 + (y - y_prime)
        base = start - y
        terms = alpha * logs[k1 - base] + (1 - alpha) * logs[k2 - base]
        ratios = alpha * np.log(mu / (k1 + 1.0)) + (alpha - 1) * np.log((k2 + 1.0) / mu + mu / (k2 + 2.0))
        below = np.nonzero(ratios < -math.log(2))[0]
        if not len(below):
            return mpmath.inf
        last = int(below[0])
        total = float(logsumexp(terms[: last + 1]))
        remainder = terms[last] + ratios[last] - math.log(-math.expm1(ratios[last]))
        return mpmath.mpf(float(np.logaddexp(total, remainder)) + 1e-12)

    @lru_cache(maxsize=8)  # noqa: B019 - frozen, hashable instances
    def _log_pmf_floats(self, first: int, last: int) -> np.ndarray:
        """log N(k) for k = first … last, as floats (computed at NOISE_DPS digits)."""
        with mpmath.workdps(NOISE_DPS):
            return np.array([float(self.noise_log_pmf(k)) for k in range(first, last + 1)])

    @classmethod
    def design(cls) -> Design:
        """``compare``'s design at B bits for n clients: the finest grid that leaves the sum's noise
        Z_RANGE standard deviations of the modulus."""
        def build(value: float, n: int, bits: int, c: Fraction):
            reach = unbounded_reach(math.sqrt(2 * value), n, bits)
            if reach < 1:
                return None
            return cls(c=c, gamma=c / reach, mu=Fraction(value), cover=Fraction(1), bits=bits)

        return Design("mu", lambda n, b, c: (0.05**2 / 2, noise_ends(n, b, c)[1] ** 2 / 2), build,
                      rule=f"K = ⌊(2^B − 2·{Z_RANGE}√(2nμ))/(2n)⌋, γ = c/K; μ solved for")

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        """Agarwal et al. (2021), the Skellam RDP bound for the sum of n clients (total noise
        Sk(λ, λ), λ = nμ) at integer orders α > 1, in grid units with Δ₁ = Δ₂ = Δ = 2⌈c/γ⌉:
        αΔ²/(4λ) + min{((2α−1)Δ² + 6Δ)/(16λ²), 3Δ/(4λ)} (printed with the variance 2λ for μ)."""
        n = self.bound_options(**options)["n"]
        lam, delta = n * to_mpf(self.mu), mpmath.mpf(2 * self.reach)
        integers = [a for a in alphas if 1 < a < math.inf and float(a).is_integer()]
        target = SumWorst(n) if n > 1 else "worst"
        out = []
        for a in integers:
            value = a * delta**2 / (4 * lam) + min(((2 * a - 1) * delta**2 + 6 * delta) / (16 * lam**2),
                                                   3 * delta / (4 * lam))
            out.append(Bound(f"Skellam RDP, sum of n = {n} (λ = nμ)", a, value, "paper, the Skellam RDP bound (integer α)", target))
        return out

