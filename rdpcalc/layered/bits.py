"""Communication cost, in bits, of the layered, Irwin–Hall and aggregate Gaussian quantizers of
Hegazy, Leluc, Li & Dieuleveut (2024), "Compression with Exact Error Distribution for Federated
Learning", AISTATS 2024, arXiv:2310.20682: the bounds (4), (5) and Props. 1–2 (§3.2), Theorems 1–2
(§4.5), and the fixed-bit quantizer of the Langevin application (App. C.2). The exact entropies
H(M|S) are derived; the reference values quoted below are independent computations, not the paper's.

The input is X ~ U(0, t) (Fig. 2) or |x_i| ≤ t/2 (Fig. 4); σ is the target noise's standard
deviation; logs are base 2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize

from ..exactnum import Number, positive
from ..params import Param
from .aggregate import client_step, theorem2_bound
from .noise import (
    DEPTH_SHAPE,
    GAUSS,
    check_clients,
    check_noise,
    check_sigma,
    direct_entropy,
    flipped_depth,
    irwin_hall_mean_abs,
    laplace_scale,
    level_halfwidth,
    minimal_shifted_step,
    shifted_entropy,
)

QUANTIZERS = ("direct", "shifted")
#: the quantizer, and the bits of the shifted Gaussian quantizer's Langevin comparison, declared once
QUANTIZER = Param("quantizer", "choice", "The layered quantizer: direct (Def. 4) or shifted (Def. 5).", default="direct",
                  choices=QUANTIZERS)
LANGEVIN_BITS = Param("bits", "integer", "Bits b of the shifted Gaussian quantizer, {range}.", low=2)
LOG2_E = 1 / math.log(2)
#: upper end of the depth integral: P(R > 80) < 1e-32 for R ~ Gamma(3/2) or Gamma(2)
DEPTH_CUTOFF = 80.0


def check_t(t: Number) -> float:
    """The input range t > 0 (``t``)."""
    return float(positive(t, "t"))


def check_quantizer(quantizer: str) -> str:
    """``quantizer`` checked (:data:`QUANTIZER`)."""
    return QUANTIZER.convert(quantizer)


def dithered_cell_entropy(step, t: Number) -> np.ndarray:
    """H(M | step w) for X ~ U(0, t) and M = ⌈X/w + U⌋, averaged over the dither U ~ U(0, 1), in
    closed form [derived]. The cells are [w(k − ½ − U), w(k + ½ − U)) ∩ [0, t].
    In units of t, with c = w/t: for c ≤ 1 the first cell has length φ ~ U(0, c), then come full
    cells of length c, and the last takes the rest; averaging −Σ p log₂ p over φ gives
    (1/c)[2∫₀^c η + (1 − c) η(c)], η(p) = −p log₂ p, which is
        log₂(t/w) + (w/t)/(2 ln 2)      (w ≤ t);
    for c ≥ 1 at most one cell boundary falls in [0, t] (probability 1/c), at a uniform position,
    giving (t/w)/(2 ln 2). (The fixed-step Irwin–Hall entropy, ``irwin_hall_entropy``, is this at
    w = 2σ√(3n).)"""
    return _cell_entropy(np.asarray(step, float), check_t(t))


def _cell_entropy(step, t: float) -> np.ndarray:
    """``dithered_cell_entropy`` in c = w/t, with log₂ c as log₂ w − log₂ t (w/t underflows to 0
    at t/w = 1e600, which made the entropy +∞)."""
    with np.errstate(divide="ignore", over="ignore"):  # np.where evaluates both branches
        ratio = step / t
        return np.where(ratio <= 1, np.log2(t) - np.log2(step) + ratio * LOG2_E / 2, LOG2_E / (2 * ratio))


def _step_of_depth(noise: str, quantizer: str, depth, sigma: float) -> np.ndarray:
    """The step at layer depth r: direct 2b⁺(r), shifted b⁺(r) + b⁺(r*) [derived from Defs. 4–5]."""
    if quantizer == "direct":
        return 2 * level_halfwidth(noise, depth, sigma)
    return level_halfwidth(noise, depth, sigma) + level_halfwidth(noise, flipped_depth(depth), sigma)


def _depth_of_halfwidth(noise: str, half: float, sigma: float) -> float:
    """The depth r with b⁺(r) = ``half``: (half/σ)²/2 (Gaussian) or half/b (Laplace); +inf where
    that exceeds float64 (half/σ > 1e154: far beyond DEPTH_CUTOFF either way)."""
    ratio = half / sigma if noise == GAUSS else half / laplace_scale(sigma)
    return 0.5 * ratio * ratio if noise == GAUSS else ratio


def _step_breakpoints(noise: str, quantizer: str, sigma: float, t: float) -> list[float]:
    """Depths where the step equals t (the kink of the integrand), and ln 2 for the shifted step.
    The direct step increases with r. The shifted step is symmetric under r ↔ r* with its minimum
    η_Z at r = ln 2, so a root r₂ > ln 2 comes with r₁ = r₂*."""
    if quantizer == "direct":
        return [_depth_of_halfwidth(noise, t / 2, sigma)]
    points = [math.log(2)]
    if t > minimal_shifted_step(noise, sigma):
        # at the depth where b⁺ = t the step exceeds t by b⁺(r*), which can round to 0: bracket past
        # it; a root beyond DEPTH_CUTOFF (and its partner r* < e^{−80}) does not split the integral
        upper = min(_depth_of_halfwidth(noise, t, sigma) + 1.0, DEPTH_CUTOFF)
        if float(_step_of_depth(noise, quantizer, upper, sigma)) > t:
            right = optimize.brentq(lambda r: float(_step_of_depth(noise, quantizer, r, sigma)) - t,
                                    math.log(2), upper, xtol=1e-14)
            points += [float(flipped_depth(right)), right]
    return points


def conditional_entropy(noise: str, quantizer: str, sigma: Number, t: Number) -> float:
    """H(M | S) in bits of the direct (Def. 4) or shifted (Def. 5) layered quantizer for X ~ U(0, t)
    (Hegazy et al. 2024, Fig. 2) [derived]. Exact in the dither (``dithered_cell_entropy``); the step law is
    integrated over the depth R ~ Gamma(k, 1) by adaptive quadrature (scipy ``quad``, deterministic)
    split where the step equals t. Reference values: Gaussian σ = 1, t = 64: 4.5096 (direct),
    4.6978 (shifted)."""
    noise, quantizer = check_noise(noise), check_quantizer(quantizer)
    sigma, t = check_sigma(sigma), check_t(t)
    shape = DEPTH_SHAPE[noise]
    norm = math.gamma(shape)

    def integrand(r):
        weight = r ** (shape - 1) * math.exp(-r) / norm
        return weight * float(_cell_entropy(_step_of_depth(noise, quantizer, r, sigma), t))

    edges = [0.0, *sorted(p for p in _step_breakpoints(noise, quantizer, sigma, t) if p < DEPTH_CUTOFF), DEPTH_CUTOFF]
    return sum(integrate.quad(integrand, low, high, limit=200, epsabs=1e-11, epsrel=1e-10)[0]
               for low, high in zip(edges[:-1], edges[1:]))


def lower_bound(noise: str, sigma: Number, t: Number) -> float:
    """(4): every AINQ with error f_Z and X ~ U(0, t) has H(M|S) ≥ log₂ t + h(D_Z)."""
    return math.log2(check_t(t)) + direct_entropy(noise, sigma)


def direct_upper_bound(noise: str, sigma: Number, t: Number) -> float:
    """(5): the direct layered quantizer has H(M|S) ≤ log₂ t + (8 log₂e / t) √V[Z] + h(D_Z), √V[Z] = σ."""
    return math.log2(check_t(t)) + 8 * LOG2_E * check_sigma(sigma) / check_t(t) + direct_entropy(noise, sigma)


def shifted_upper_bound(noise: str, sigma: Number, t: Number) -> float:
    """Prop. 1: the shifted layered quantizer has H(M|S) ≤ log₂ t + (8 log₂e / t) √V[Z] + h(W_Z)."""
    return math.log2(check_t(t)) + 8 * LOG2_E * check_sigma(sigma) / check_t(t) + shifted_entropy(noise, sigma)


def shifted_fixed_length(noise: str, sigma: Number, t: Number) -> int:
    """⌈log₂(2 + t/η_Z)⌉: fixed-length bits of the shifted quantizer for X in an interval of length
    t (Prop. 2, |Supp M| ≤ 2 + t/η_Z). The direct quantizer has none (its step 2σχ₃ → 0)."""
    return math.ceil(_log2_sum(check_t(t), minimal_shifted_step(noise, sigma), 2))


def aggregate_bits_bound(n: int, sigma: Number, t: Number) -> float:
    """Theorem 1 with −h_M bounded by Theorem 2: the expected bits per client of the aggregate
    Gaussian mechanism for |x_i| ≤ t/2 are at most
        B₂(n) + log₂(t/w) + (3 w log₂e / t) · E_Q|Z| / E_P|Z| + 1,   w = 2σ√(3n),
    with B₂ = ``theorem2_bound``, Q = N(0, σ²) (E|Z| = σ√(2/π)) and P = IH(n, 0, σ²). (3w = 6σ√(3n).)
    Reference values: n = 3, σ = 1, t = 64 → 6.056; n = 10 → 4.662."""
    n, t = check_clients(n), check_t(t)
    w = client_step(n, sigma)
    ratio = math.sqrt(2 / math.pi) / float(irwin_hall_mean_abs(n))
    return theorem2_bound(n) + math.log2(t) - math.log2(w) + 3 * w * LOG2_E / t * ratio + 1


def irwin_hall_fixed_length(n: int, sigma: Number, t: Number) -> int:
    """⌈log₂(t/w + 3)⌉, w = 2σ√(3n): fixed-length bits per client of the Irwin–Hall mechanism for
    |x_i| ≤ t/2 (|M_i| ≤ ⌈t/(2w)⌉; Hegazy et al. 2024, §4.5, with A = 1)."""
    return math.ceil(_log2_sum(check_t(t), client_step(n, sigma), 3))


def _log2_sum(t: float, w: float, extra: int) -> float:
    """log₂(t/w + extra): as log₂ t − log₂ w + log₂(1 + extra·w/t) where t ≥ w (t/w overflows at
    1e600), directly where t < w (w/t overflows at σ = 1e299, t = 1e−300)."""
    if t < w:
        return math.log2(extra + t / w)
    return math.log2(t) - math.log2(w) + math.log2(1 + extra * (w / t))


def irwin_hall_entropy(n: int, sigma: Number, t: Number) -> float:
    """H(M_i | S_i) per Irwin–Hall client for x_i ~ U(0, t): the fixed-step dithered entropy at
    w = 2σ√(3n) (reference value: 3.483 at n = 3, σ = 1, t = 64)."""
    return float(dithered_cell_entropy(client_step(n, sigma), t))


def langevin_sigma(bits: int | str) -> float:
    """σ_b = 1/((2^b − 2)√(ln 4)) for b ≥ 2 [derived; App. C.2 gives no formula]: the shifted Gaussian quantizer on data
    scaled to [−1, 1] (t = 2) needs 2 + t/η = 2^b with η = 2σ_b√(ln 4) (Prop. 2)."""
    b = LANGEVIN_BITS.convert(bits)
    return 1 / ((2**b - 2) * math.sqrt(math.log(4)))
