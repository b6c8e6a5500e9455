"""The binomial mechanism of cpSGD: Agarwal, Suresh, Yu, Kumar & McMahan (2018), "cpSGD:
Communication-efficient and differentially-private distributed SGD", NeurIPS 2018,
arXiv:1805.10559.

One client scales its input to the grid of step γ, rounds it without bias (:mod:`.rounded`) and
adds Binomial(N, p) noise; the server subtracts n·N·p from the sum and multiplies by γ. The
noise is bounded, so the pmf is exact with no window; but neighbouring inputs shift a bounded
support, so every Rényi divergence between them is +∞ unless the sum wraps around (``bits``):
the paper's guarantee is an (ε, δ) one (Theorem 1), checked (by :mod:`rdpcalc.bounds`) against
the exact ε of the privacy loss distribution.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from ..exactnum import to_mpf
from .base import MAX_LEVELS, Bound, Param, RoundEpsilon, SolveRange, bits_param, mechanism
from .design import Design
from .rounded import RoundedNoise, grid_params


def _most_trials(params: dict) -> int:
    """The most trials N a client's outputs allow: N + 1 noise values moved by up to ±K = ±⌈c/γ⌉
    give N + 2K + 1 outputs, at most 2·MAX_LEVELS + 1 (:meth:`RoundedNoise.check`)."""
    return 2 * MAX_LEVELS - 2 * math.ceil(Fraction(params["c"]) / Fraction(params["gamma"]))


@mechanism
class Binomial(RoundedNoise):
    """Inputs in [−c, c] rounded to the grid γZ without bias, plus Binomial(trials, p) noise."""

    name = "binomial"
    title = "Binomial (cpSGD)"
    paper = ("Agarwal, Suresh, Yu, Kumar & McMahan (2018), \"cpSGD: Communication-efficient and differentially-private "
             "distributed SGD\", NeurIPS 2018, arXiv:1805.10559")
    EXAMPLE = {"--c": "1", "--gamma": "0.25", "--trials": "256"}
    CALIBRATE_EXAMPLE = "--rounds 10 --dp-epsilon 4"  # ε = 8.6 over 100 rounds at the most trials a client allows
    PARAMS = (
        *grid_params(),
        Param("trials", "integer", f"Bernoulli trials N of the noise per client, 1 … {2 * MAX_LEVELS}", low=1,
              high=2 * MAX_LEVELS, solve=SolveRange(1, 2 * MAX_LEVELS, log=True, largest=_most_trials)),
        Param("p", "number", "success probability p of the noise, in (0, 1) (default 1/2)", default="1/2", low=0,
              high=1, low_open=True, high_open=True),
        bits_param(),
    )
    UNBOUNDED = False
    SIZE_PARAMETER = "trials"
    FL_OBSERVER = "server"
    BOUND_PARAMS = (
        Param("n", "integer", "clients in the SecAgg sum Theorem 1 is checked at (N·n trials), 1 … 1000", default=1,
              low=1, high=1000, option="--n"),
        Param("dp_delta", "number", "the δ of Theorem 1's (ε, δ), in (0, 1)", default="1e-5", low=0, high=1,
              low_open=True, high_open=True, option="--dp-delta"),
    )

    def noise_window(self) -> tuple[int, int]:
        return 0, self.trials

    def noise_log_pmf(self, z: int) -> mpmath.mpf:
        """log C(N, z) + z log p + (N − z) log(1 − p)."""
        p = to_mpf(self.p)
        return (mpmath.log(mpmath.binomial(self.trials, z)) + z * mpmath.log(p)
                + (self.trials - z) * mpmath.log(1 - p))

    def noise_mean(self) -> Fraction:
        return self.trials * self.p

    def integer_noise(self, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        """Binomial(N, p), numpy's sampler."""
        return rng.binomial(self.trials, float(self.p), size=shape)

    @classmethod
    def design(cls) -> Design:
        """``compare``'s design at B bits for n clients: N trials, the rest of each client's share
        of the modulus for the rounded input."""
        def build(value: float, n: int, bits: int, c: Fraction):
            per_client = (2**bits - 1) // n
            trials = int(value)
            reach = (per_client - trials) // 2
            if trials < 1 or reach < 1:
                return None
            return cls(c=c, gamma=c / reach, trials=trials, bits=bits)

        return Design("trials", lambda n, b, c: (1, max(1, (2**b - 1) // n - 2)), build, integer=True,
                      rule="N trials and K = ⌊(⌊(2^B − 1)/n⌋ − N)/2⌋, γ = c/K; N solved for")

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        """Theorem 1 (eq. (7)) of Agarwal et al. (2018) for the sum of n clients (Nn trials), d = 1,
        grid units (s = 1) and Δ₁ = Δ₂ = Δ∞ = Δ = 2⌈c/γ⌉: if Nnp(1−p) ≥ max(23 log(10/δ), 2Δ),
        ε = Δ√(2 log(1.25/δ))/√(Nnp(1−p)) + (Δ c_p √(log(10/δ)) + Δ b_p)/(Nnp(1−p)(1 − δ/10))
        + ((2/3)Δ log(1.25/δ) + Δ d_p log(20/δ) log(10/δ))/(Nnp(1−p)), with c_p = √2(3p³ + 3(1−p)³
        + 2p² + 2(1−p)²), d_p = (4/3)(p² + (1−p)²), b_p = (2/3)(p² + (1−p)²) + 1 − 2p. Checked
        against the exact ε at δ of one round (the privacy loss distribution of the worst case)."""
        options = self.bound_options(**options)
        n, delta_dp = options["n"], to_mpf(options["dp_delta"])
        p, sens = to_mpf(self.p), mpmath.mpf(2 * self.reach)
        variance = n * self.trials * p * (1 - p)
        c_p = mpmath.sqrt(2) * (3 * p**3 + 3 * (1 - p) ** 3 + 2 * p**2 + 2 * (1 - p) ** 2)
        d_p = mpmath.mpf(4) / 3 * (p**2 + (1 - p) ** 2)
        b_p = mpmath.mpf(2) / 3 * (p**2 + (1 - p) ** 2) + 1 - 2 * p
        log = mpmath.log
        condition = variance >= max(23 * log(10 / delta_dp), 2 * sens)
        epsilon = (sens * mpmath.sqrt(2 * log(mpmath.mpf(1.25) / delta_dp)) / mpmath.sqrt(variance)
                   + (sens * c_p * mpmath.sqrt(log(10 / delta_dp)) + sens * b_p) / (variance * (1 - delta_dp / 10))
                   + (mpmath.mpf(2) / 3 * sens * log(mpmath.mpf(1.25) / delta_dp)
                      + sens * d_p * log(20 / delta_dp) * log(10 / delta_dp)) / variance)
        return [Bound(f"ε at δ = {float(delta_dp):g}, Theorem 1, sum of n = {n}", None,
                      epsilon if condition else mpmath.inf, "paper Thm. 1, eq. (7)", RoundEpsilon(n, float(delta_dp)),
                      note="" if condition else "its condition Nnp(1−p) ≥ max(23 log(10/δ), 2Δ) fails: no guarantee")]
