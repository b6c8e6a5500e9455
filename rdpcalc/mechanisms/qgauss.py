"""The quantized Gaussian mechanism: Kang, Liu, He, Zhang, Song & Letaief (2024), "The Effect of
Quantization in Federated Learning: A Rényi Differential Privacy Perspective", arXiv:2405.10096,
eq. (10).

G x = Q(x + N(0, σ²); k, C_q): add Gaussian noise of standard deviation σ, clip to [−C_q, C_q],
and round stochastically (without bias) to the k levels B(r) = −C_q + 2C_q r/(k−1). Inputs are
the clipped updates, x ∈ [−C_q/2, C_q/2], so the sensitivity is Δ₂ = C_q.

The pmf is the paper's Lemma 2 (eqs. (11)–(12)); its budgets are Theorem 2 (eqs. (13)–(14), proof
eqs. (15)–(16)) and the Gaussian bound by post-processing (Theorem 1), all in §III-B.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from ..exactnum import to_mpf
from .base import MAX_LEVELS, Bound, Mechanism, Param, SolveRange, bits_param, mechanism
from .design import Design, levels_at_bits


def integrated_cdf(t):
    """G(t) = ∫_{−∞}^t Φ(s) ds = t Φ(t) + φ(t); E[(Y−c)₊] = σ G((μ−c)/σ) [derived]."""
    return t * mpmath.ncdf(t) + mpmath.npdf(t)


@mechanism
class QuantizedGaussian(Mechanism):
    """Quantized Gaussian with noise standard deviation ``sigma`` > 0, ``k`` ≥ 2 levels and
    quantizer clipping threshold ``clip`` (C_q) > 0; inputs in [−C_q/2, C_q/2]."""

    name = "qgauss"
    title = "Quantized Gaussian"
    paper = ("Kang, Liu, He, Zhang, Song & Letaief (2024), \"The Effect of Quantization in Federated Learning: A Rényi "
             "Differential Privacy Perspective\", arXiv:2405.10096")
    #: typical parameters, for the examples in the command-line help
    EXAMPLE = {"--sigma": "1", "--levels": "16", "--clip": "1"}
    PARAMS = (
        Param("sigma", "number", "noise standard deviation σ > 0", low=0, low_open=True,
              solve=SolveRange(1e-3, 1e3, log=True, relative_to="clip")),
        Param("k", "integer", f"number of quantization levels k, 2 … {MAX_LEVELS}", low=2, high=MAX_LEVELS,
              option="--levels", aliases=("--k",)),
        Param("clip", "number", "quantizer clipping threshold C_q > 0: levels span [-C_q, C_q], inputs lie in "
              "[-C_q/2, C_q/2]", low=0, low_open=True),
        bits_param(),
    )
    FL_OBSERVER = "server"
    FL_CLIPPING = "l2"

    @property
    def bound(self) -> Fraction:
        return self.clip / 2

    @property
    def support_size(self) -> int:
        return self.k

    @property
    def spacing(self) -> Fraction:
        """δ = 2 C_q / (k − 1), the level spacing."""
        return 2 * self.clip / (self.k - 1)

    def level(self, r: int) -> Fraction:
        """B(r) = −C_q + 2 C_q r / (k − 1)."""
        return -self.clip + r * self.spacing

    def output_values(self) -> list[Fraction]:
        return [self.level(r) for r in range(self.k)]

    WORST_PAIR_PREMISE = ("for finite α the extreme pair ±C_q/2 is the worst by a numerical check (grids of input pairs), "
                          "not a proof; for α = ∞ by the likelihood-ratio order")
    #: the pmf is not affine in x between the breakpoints (:mod:`rdpcalc.worstcase.secagg`)
    OTHERS_FAMILY = "breakpoints"
    #: P_y(r) = (h_r ∘ clip) * φ_σ at y, with h_r the stochastic-rounding hat of level r (for the
    #: end levels, a ramp rising to 1 at ±C_q, held beyond by the clipping): a unimodal function
    #: (monotone at the ends) convolved with the Gaussian density, which is log-concave, hence
    #: strongly unimodal (Ibragimov 1956): the result is unimodal in y, so its minimum over
    #: y ∈ [−C_q/2, C_q/2] is at an end [derived]
    UNIMODAL_IN_INPUT = True
    MIRRORED = True

    def breakpoints(self) -> tuple[Fraction, ...]:
        """(−C_q/2, C_q/2). The hat kernels of stochastic rounding and the Gaussian are TP2, so
        {P_x} has a monotone likelihood ratio in the output: that makes (C_q/2, −C_q/2) the
        worst pair for D_∞ [derived]; for finite α it is Theorem 2's premise, which the paper
        does not prove, confirmed numerically (a 21×21 grid of input pairs for k ∈ {2, 3, 4, 8},
        σ/C_q ∈ {0.2, 0.5, 1, 3}, α ∈ {1, 2, 8, ∞}) and by ``--grid``."""
        return (-self.bound, self.bound)

    def tail_parameter(self, limit: float) -> tuple[str, str]:
        """sigma: the smallest probability, at the level farthest from x = ±C_q/2, is about
        e^{−(1.5 C_q/σ)²/2}."""
        smallest = 1.5 * float(self.clip) / math.sqrt(2 * limit)
        return "sigma", (f"must be ≥ {smallest:.3g} at `clip` = {float(self.clip):.6g} for this engine (the smallest "
                         f"probability is about e^(−(1.5·C_q/σ)²/2))")

    def _guard_digits(self, x: Fraction) -> int:
        """Digits lost in the second differences (≈ 2 log10(σ/δ)), in G(t) for t ≪ 0
        (≈ 2 log10|t|: tΦ(t) + φ(t) cancels to φ(t)/t²) and in e^{−t²/2} itself, whose relative
        error is t²/2 times that of t (≈ 2 log10|t| more), added to the working precision
        (ratios up to 10⁶⁰⁰ taken as logs)."""
        ratio = _log10(self.sigma / self.spacing)
        reach = _log10(1 + (abs(x) + self.clip) / self.sigma)
        return 10 + math.ceil(2 * max(ratio, 0.0)) + math.ceil(4 * reach)

    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """Lemma 2 (Kang et al. 2024, eqs. (11)–(12)) in a tail-stable second-difference form [derived].

        With w_j = (x − B(j))/σ and σ/δ the noise in units of the spacing,
            P[B(r)]   = (σ/δ) [G(s w_{r−1}) − 2 G(s w_r) + G(s w_{r+1})],  1 ≤ r ≤ k−2,
            P[B(0)]   = (σ/δ) [G(−w_1) − G(−w_0)],
            P[B(k−1)] = (σ/δ) [G(w_{k−2}) − G(w_{k−1})],
        where s = ±1 is chosen so that the arguments are on the tail side (G(t) − G(−t) = t
        and the w_j are equally spaced, so either sign gives the same exact value; the tail
        side avoids G(t) ≈ t cancelling). Guard digits cover the remaining cancellation.
        """
        x = self.check_input(x)
        k = self.k
        precision = mpmath.mp.dps
        with mpmath.extradps(self._guard_digits(x)):
            sigma = to_mpf(self.sigma)
            scale = sigma / to_mpf(self.spacing)
            w = [(to_mpf(x) - to_mpf(self.level(j))) / sigma for j in range(k)]
            probs = [scale * (integrated_cdf(-w[1]) - integrated_cdf(-w[0]))]
            for r in range(1, k - 1):
                sign = 1 if w[r] <= 0 else -1
                second = (integrated_cdf(sign * w[r - 1]) - 2 * integrated_cdf(sign * w[r])
                          + integrated_cdf(sign * w[r + 1]))
                probs.append(scale * second)
            probs.append(scale * (integrated_cdf(w[k - 2]) - integrated_cdf(w[k - 1])))
        with mpmath.workdps(precision):
            return [+p for p in probs]

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Eq. (10) of Kang et al. (2024): clip(x + N(0, σ²), −C_q, C_q), then unbiased stochastic
        rounding to the k levels."""
        clip, k = float(self.clip), self.k
        y = np.clip(x + float(self.sigma) * rng.standard_normal(x.shape), -clip, clip)
        position = (y + clip) * (k - 1) / (2 * clip)
        lower = np.minimum(np.floor(position), k - 2)
        return (lower + (rng.random(x.shape) < position - lower)).astype(np.int64)

    # ------------------------------------------------------------------ bounds
    def gaussian_rdp(self, alpha: float) -> mpmath.mpf:
        """α C_q² / (2σ²): the Gaussian mechanism's RDP, which bounds the quantized one by
        post-processing (Theorem 1; Mironov). +∞ at α = ∞."""
        if alpha == math.inf:
            return mpmath.inf
        return mpmath.mpf(alpha) * to_mpf(self.clip) ** 2 / (2 * to_mpf(self.sigma) ** 2)

    def theorem_2_bound(self) -> mpmath.mpf:
        """ε_∞ of Theorem 2, eq. (14), as printed: log(δ / ∫_{B(k−2)}^{B(k−1)} f(y)(y − B(k−2)) dy),
        f the N(−C_q/2, σ²) density. The integral is evaluated in the stable form
        σ[G((μ−a)/σ) − G((μ−b)/σ)] − δ Φ̄((b−μ)/σ), μ = −C_q/2, a = B(k−2), b = C_q [derived]."""
        with mpmath.extradps(self._guard_digits(self.bound) + 10):
            sigma, delta = to_mpf(self.sigma), to_mpf(self.spacing)
            mu = -to_mpf(self.bound)
            a, b = to_mpf(self.level(self.k - 2)), to_mpf(self.clip)
            integral = (sigma * (integrated_cdf((mu - a) / sigma) - integrated_cdf((mu - b) / sigma))
                        - delta * mpmath.ncdf(-(b - mu) / sigma))
            return mpmath.log(delta / integral)

    def theorem_2_intermediate(self) -> mpmath.mpf:
        """The proof's middle step: log(1 / min{P_{−C_q/2}[B(k−2)], P_{−C_q/2}[B(k−1)]})."""
        p = self.pmf(-self.bound)
        return -mpmath.log(min(p[-2], p[-1]))

    def exact_d_infinity(self) -> mpmath.mpf:
        """log(P_{C_q/2}[B(k−1)] / P_{−C_q/2}[B(k−1)]): the exact worst-case D_∞, by the monotone
        likelihood ratio [derived]."""
        return mpmath.log(self.pmf(self.bound)[-1] / self.pmf(-self.bound)[-1])

    def clipped_gaussian_divergence(self, alpha: float, x: Fraction, x_prime: Fraction) -> mpmath.mpf:
        """D_α between clip(x + Z) and clip(x' + Z), Z ~ N(0, σ²), clipped to [−C_q, C_q]
        [derived]: the quantizer output post-processes it, so it bounds every k,
        and it is the k → ∞ limit. Atoms Φ̄((C−x)/σ) at C and Φ((−C−x)/σ) at −C; on (−C, C)
        p^α q^{1−α} integrates to e^{α(α−1)(x−x')²/(2σ²)} [Φ((C−m)/σ) − Φ((−C−m)/σ)] with
        m = αx + (1−α)x'."""
        sigma, c = to_mpf(self.sigma), to_mpf(self.clip)
        x, y = to_mpf(x), to_mpf(x_prime)
        top_p, top_q = mpmath.ncdf((x - c) / sigma), mpmath.ncdf((y - c) / sigma)
        low_p, low_q = mpmath.ncdf((-c - x) / sigma), mpmath.ncdf((-c - y) / sigma)
        if alpha == math.inf:
            inner = (x - y) * (2 * (c if x > y else -c) - x - y) / (2 * sigma**2)
            return max(mpmath.log(top_p / top_q), mpmath.log(low_p / low_q), inner)
        if alpha == 1:
            lo, hi = (-c - x) / sigma, (c - x) / sigma
            mass = mpmath.ncdf(hi) - mpmath.ncdf(lo)
            first_moment = x * mass + sigma * (mpmath.npdf(lo) - mpmath.npdf(hi))
            inner = (x - y) * (2 * first_moment - (x + y) * mass) / (2 * sigma**2)
            return top_p * mpmath.log(top_p / top_q) + low_p * mpmath.log(low_p / low_q) + inner
        a = mpmath.mpf(alpha)
        m = a * x + (1 - a) * y
        inner = mpmath.exp(a * (a - 1) * (x - y) ** 2 / (2 * sigma**2)) * (
            mpmath.ncdf((c - m) / sigma) - mpmath.ncdf((-c - m) / sigma))
        total = top_p**a * top_q ** (1 - a) + low_p**a * low_q ** (1 - a) + inner
        return mpmath.log(total) / (a - 1)

    @classmethod
    def design(cls) -> Design:
        """``compare``'s design at B bits for n clients: as many levels as the sum's modulus holds."""
        def build(value: float, n: int, bits: int, c: Fraction):
            k = levels_at_bits(n, bits)
            return None if k < 2 else cls(sigma=Fraction(value) * c, k=k, clip=2 * c, bits=bits)

        return Design("sigma/c", lambda n, b, c: (1e-3, 1e3), build,
                      rule="k = ⌊(2^B − 1)/n⌋ + 1 levels, C_q = 2c; σ/c solved for")

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        out = []
        for alpha in alphas:
            out.append(Bound("α C_q²/(2σ²), Gaussian (post-processing)", alpha, self.gaussian_rdp(alpha),
                             "paper §III (Theorem 1, Mironov)"))
        for alpha in alphas:
            out.append(Bound("clipped Gaussian D_α (k → ∞ limit)", alpha,
                             self.clipped_gaussian_divergence(alpha, self.bound, -self.bound), "derived"))
        out += [
            Bound("ε_∞, Theorem 2 eq. (14) as printed", math.inf, self.theorem_2_bound(), "paper eq. (14)"),
            Bound("Theorem 2 proof, middle step", math.inf, self.theorem_2_intermediate(), "paper eq. (16)", "pair"),
            Bound("log P_{C/2}[B(k−1)] / P_{−C/2}[B(k−1)]", math.inf, self.exact_d_infinity(),
                  "derived (monotone likelihood ratio)", "worst", "="),
        ]
        return out


def _log10(value: Fraction) -> float:
    """log10 of a positive Fraction, from its integers (the ratio may exceed float's range)."""
    return math.log10(value.numerator) - math.log10(value.denominator)
