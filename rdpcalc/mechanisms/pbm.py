"""PBM, the Poisson binomial mechanism: Chen, Özgür & Kairouz (2022), "The Poisson Binomial Mechanism
for Unbiased Federated Learning with Secure Aggregation", ICML 2022, arXiv:2207.09916 (Algorithm 2
there, as cited by Youn et al. 2023). It is RQM's comparator in Youn, Hu, Ziani & Abernethy (2023),
arXiv:2306.11913, §6.

One client with input x ∈ [−c, c] sends Z ~ Binomial(trials, p(x)) with p(x) = ½ + θx/c; the
server sees the sum of the Z's, a Poisson-binomial variable. The RQM paper's "m = 16 for both"
(Youn et al. 2023, §6.1) is ambiguous between 16 trials (17 output values) and 15 trials
(16 values), so the number of trials is explicit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from ..exactnum import to_mpf
from .base import MAX_LEVELS, Bound, Mechanism, Param, SolveRange, bits_param, mechanism
from .design import Design, levels_at_bits


@mechanism
class PBM(Mechanism):
    """PBM with clipping bound ``c`` > 0, ``theta`` θ ∈ (0, ½) and ``trials`` ≥ 1 Bernoulli
    trials per client; outputs ``0 … trials``."""

    name = "pbm"
    title = "PBM (Poisson binomial)"
    paper = ("Chen, Özgür, Kairouz (2022), \"The Poisson binomial mechanism for unbiased federated learning with secure "
             "aggregation\", ICML 2022, arXiv:2207.09916")
    #: typical parameters, for the examples in the command-line help
    EXAMPLE = {"--c": "1.5", "--theta": "0.25", "--trials": "16"}
    PARAMS = (
        Param("c", "number", "clipping bound c > 0; inputs lie in [-c, c]", low=0, low_open=True),
        Param("theta", "number", "θ in (0, 1/2); p(x) = 1/2 + θx/c", low=0, high=Fraction(1, 2), low_open=True,
              high_open=True, solve=SolveRange(1e-6, 0.5 - 1e-6)),
        Param("trials", "integer", f"Bernoulli trials per client, 1 … {MAX_LEVELS} (outputs 0…trials)", low=1,
              high=MAX_LEVELS),
        bits_param(),
    )
    FL_OBSERVER = "server"

    @property
    def bound(self) -> Fraction:
        return self.c

    @property
    def support_size(self) -> int:
        return self.trials + 1

    def success_probability(self, x: Fraction) -> Fraction:
        """p(x) = ½ + θx/c, exactly."""
        return Fraction(1, 2) + self.theta * x / self.c

    OTHERS_FAMILY = "relaxed"
    MIRRORED = True

    def relaxed_components(self) -> tuple[list, list, int]:
        """The pmfs of one trial at −c and at c, Bernoulli(p(∓c)), and the trials per client: the
        others' trials relaxed to independent inputs (:mod:`rdpcalc.worstcase.secagg`)."""
        low, high = (to_mpf(self.success_probability(x)) for x in (-self.c, self.c))
        return [1 - low, low], [1 - high, high], self.trials

    def output_values(self) -> list[Fraction]:
        """(c/(Mθ)) (Z − M/2): the unbiased per-client decoding of Z = 0 … M."""
        M = self.trials
        return [self.c / (M * self.theta) * (z - Fraction(M, 2)) for z in range(M + 1)]

    def breakpoints(self) -> tuple[Fraction, ...]:
        """{−c, c}. Binomial(M, p) is an exponential family in η = logit p, monotone in x, and
        D_α(P_η1 ‖ P_η0) = [K(αη1+(1−α)η0) − αK(η1) − (1−α)K(η0)]/(α−1) grows as either
        natural parameter moves away from the other (K is convex), so the worst single-client
        pair is (c, −c) or (−c, c) [derived]."""
        return (-self.c, self.c)

    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """Binomial(trials, p(x)): C(M, i) p^i (1−p)^(M−i), each a product of positives."""
        x = self.check_input(x)
        p = self.success_probability(x)
        success, failure = to_mpf(p), to_mpf(1 - p)
        trials = self.trials
        return [
            mpmath.binomial(trials, i) * success**i * failure ** (trials - i)
            for i in range(trials + 1)
        ]

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Algorithm 2 of Chen et al. (2022): Binomial(trials, ½ + θx/c)."""
        p = 0.5 + float(self.theta) * x / float(self.c)
        return rng.binomial(self.trials, p)

    @classmethod
    def design(cls) -> Design:
        """``compare``'s design at B bits for n clients: as many trials as the sum's modulus holds."""
        def build(value: float, n: int, bits: int, c: Fraction):
            trials = levels_at_bits(n, bits) - 1
            return None if trials < 1 else cls(c=c, theta=Fraction(value), trials=trials, bits=bits)

        return Design("theta", lambda n, b, c: (1e-6, 0.5 - 1e-6), build, log=False, private_high=False,
                      rule="⌊(2^B − 1)/n⌋ trials; θ solved for")

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        return [
            Bound("M log((1+2θ)/(1−2θ))", math.inf, self.d_infinity_closed_form(), "derived", "pair", "=",
                  note="the same for every SecAgg sum"),
        ]

    def d_infinity_closed_form(self) -> mpmath.mpf:
        """D_∞(P_c ‖ P_{−c}) = M log((1+2θ)/(1−2θ)), attained at output M; for the SecAgg sum
        it is the same for every n and k: the largest sum attains it, and post-processing
        caps it at the single-client value [derived]."""
        theta = to_mpf(self.theta)
        return self.trials * mpmath.log((1 + 2 * theta) / (1 - 2 * theta))
