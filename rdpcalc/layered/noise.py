"""Target noises of the layered quantizers, and the Irwin–Hall noise: Hegazy, Leluc, Li & Dieuleveut
(2024), "Compression with Exact Error Distribution for Federated Learning", AISTATS 2024,
arXiv:2310.20682, Defs. 4–5 (§3.1), Props. 1–2 (§3.2), the Irwin–Hall law (§4.2) and Table 1.
The explicit Gaussian and Laplace forms, the entropies' closed forms, the stable Irwin–Hall numerics
and the Rényi divergences are derived: the paper gives no Rényi-DP formula.
Entropies are in **bits** (the paper's log is base 2); Rényi divergences are in **nats**.

Superlevel sets. For a symmetric unimodal density f_Z with peak Z̄ = f_Z(0), the superlevel set
{z : f_Z(z) ≥ y}, 0 < y < Z̄, is the interval [b⁻(y), b⁺(y)] = [−b⁺(y), b⁺(y)]. Both targets are
written here in the *depth* r = ln(Z̄/y) ∈ (0, ∞), in which b⁺ is elementary and which keeps full
precision near the mode (y → Z̄):

    Gaussian N(0, σ²):                  Z̄ = 1/(σ√(2π)),  b⁺ = σ √(2r)
    Laplace with variance σ², b = σ/√2:  Z̄ = 1/(2b),      b⁺ = b r.

The flipped level Z̄ − y has depth r* = −ln(1 − e^{−r}); the map r ↦ r* is an involution
(e^{−r} + e^{−r*} = 1), the depth form of the shifted quantizer's symmetry f_W(y) = f_W(Z̄ − y).
If D_Z is a uniform height under the graph [derived], R = ln(Z̄/D_Z) ~ Gamma(k, 1) with
k = 3/2 (Gaussian) or k = 2 (Laplace).

Irwin–Hall. IH(n, 0, σ²) is the mean of n i.i.d. U(−σ√(3n), σ√(3n)) (Hegazy et al. 2024, §4.2): mean 0,
variance σ², support [−σ√(3n), σ√(3n)]. With S the sum of n i.i.d. U(0, 1) and c = √(n/12)/σ,
X = (S − n/2)/c, so f_X(x) = c f_S(n/2 + c x).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import mpmath
import numpy as np

from ..errors import ParameterError
from ..exactnum import Number, positive, to_fraction, to_mpf
from ..orders import parse_alpha
from ..params import Param

GAUSS, LAPLACE, IRWIN_HALL = "gauss", "laplace", "irwin-hall"
#: targets of the layered quantizers (Defs. 4–5)
LAYERED_NOISES = (GAUSS, LAPLACE)
#: every noise with a Rényi divergence here
NOISES = (GAUSS, LAPLACE, IRWIN_HALL)
#: shape k of the depth law R = ln(Z̄/D_Z) ~ Gamma(k, 1) [derived]
DEPTH_SHAPE = {GAUSS: 1.5, LAPLACE: 2.0}
#: the options of the layered quantizers and the Irwin–Hall noise, declared once
NOISE = Param("noise", "choice", "The error distribution: gauss, laplace (layered quantizers) or irwin-hall.",
              default=GAUSS, choices=NOISES)
CLIENTS = Param("n", "integer", "Irwin–Hall: number of clients, {range}.", default=1, low=1, high=10**6)


# ------------------------------------------------------------------ parameter checks
def check_noise(noise: str, allowed: tuple[str, ...] = LAYERED_NOISES) -> str:
    """``noise`` if it is one of ``allowed``, else :class:`ParameterError` naming ``noise``."""
    return dataclasses.replace(NOISE, choices=allowed).convert(noise)


def check_sigma(sigma: Number) -> float:
    """σ > 0 (``sigma``) as a float."""
    return float(positive(sigma, "sigma"))


def check_clients(n: int | str) -> int:
    """The number of clients n, an integer in [1, 10⁶] (``n``, :data:`CLIENTS`)."""
    return CLIENTS.convert(n)


def laplace_scale(sigma: Number) -> float:
    """b = σ/√2: the Laplace scale with variance σ² (Laplace(0, σ/√2), Hegazy et al. 2024, Prop. 2)."""
    return check_sigma(sigma) / math.sqrt(2)


# ------------------------------------------------------------------ layered targets
def density(noise: str, z, sigma: Number) -> np.ndarray:
    """f_Z(z): the N(0, σ²) density, or the Laplace(0, σ/√2) density e^{−|z|/b}/(2b)."""
    if check_noise(noise) == GAUSS:
        sigma = check_sigma(sigma)
        return np.exp(-0.5 * (np.asarray(z, float) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    b = laplace_scale(sigma)
    return np.exp(-np.abs(np.asarray(z, float)) / b) / (2 * b)


def peak(noise: str, sigma: Number) -> float:
    """Z̄ = max f_Z: 1/(σ√(2π)) (Gaussian) or 1/(2b) = 1/(σ√2) (Laplace)."""
    if check_noise(noise) == GAUSS:
        return 1 / (check_sigma(sigma) * math.sqrt(2 * math.pi))
    return 1 / (2 * laplace_scale(sigma))


def level_halfwidth(noise: str, depth, sigma: Number) -> np.ndarray:
    """b⁺ at depth r = ln(Z̄/y): σ√(2r) (Gaussian) or b r (Laplace)."""
    depth = np.asarray(depth, float)
    if check_noise(noise) == GAUSS:
        return check_sigma(sigma) * np.sqrt(2 * depth)
    return laplace_scale(sigma) * depth


def flipped_depth(depth) -> np.ndarray:
    """r* = −ln(1 − e^{−r}), the depth of the flipped level Z̄ − y; log1p for r > ln 2, expm1 below
    (each is exact on its side)."""
    depth = np.asarray(depth, float)
    with np.errstate(divide="ignore"):
        return np.where(depth > math.log(2), -np.log1p(-np.exp(-depth)), -np.log(-np.expm1(-depth)))


def _depth(noise: str, y, sigma: Number) -> np.ndarray:
    """r = ln(Z̄/y) for heights y in (0, Z̄) (nan outside)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = peak(noise, sigma) / np.asarray(y, float)
        return np.where(ratio >= 1, np.log(ratio), np.nan)


def superlevel_bounds(noise: str, y, sigma: Number) -> tuple[np.ndarray, np.ndarray]:
    """(b⁻(y), b⁺(y)) = (−b⁺, b⁺) with b⁺ = σ√(2 ln(Z̄/y)) (Gaussian) or −b ln(2by) (Laplace),
    for 0 < y < Z̄ (b⁻ = inf, b⁺ = sup of {z : f_Z(z) ≥ y}; Hegazy et al. 2024, §3.1); nan outside."""
    half = level_halfwidth(noise, _depth(noise, y, sigma), sigma)
    return -half, half


def direct_step(noise: str, y, sigma: Number) -> np.ndarray:
    """f_D(y) = (b⁺(y) − b⁻(y)) 1_(0,Z̄)(y) (Def. 4): the direct quantizer's step at layer y, and
    the density of D_Z. Gaussian 2σ√(2 ln(Z̄/y)), Laplace −2b ln(2by) [derived]."""
    half = level_halfwidth(noise, _depth(noise, y, sigma), sigma)
    return np.where(np.isnan(half), 0.0, 2 * half)


def _flipped_depth_of_height(noise: str, y, sigma: Number) -> np.ndarray:
    """ln(Z̄/(Z̄ − y)) = −log1p(−y/Z̄), computed from y without forming Z̄ − y."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.log1p(-np.asarray(y, float) / peak(noise, sigma))


def shifted_step(noise: str, y, sigma: Number) -> np.ndarray:
    """f_W(y) = (b⁺(y) − b⁻(Z̄ − y)) 1_(0,Z̄)(y) (Def. 5): the shifted quantizer's step. Gaussian
    σ√(2 ln(Z̄/y)) + σ√(2 ln(Z̄/(Z̄ − y))) [derived]; Laplace −b ln(2by) − b ln(1 − 2by) (App. B.3)."""
    width = (level_halfwidth(noise, _depth(noise, y, sigma), sigma)
             + level_halfwidth(noise, _flipped_depth_of_height(noise, y, sigma), sigma))
    return np.where(np.isnan(width), 0.0, width)


def shifted_centre(noise: str, y, sigma: Number) -> np.ndarray:
    """(b⁺(y) + b⁻(Z̄ − y))/2, the shifted decoder's offset (Def. 5): the centre of the error
    interval [b⁻(Z̄ − y), b⁺(y)]; for 0 < y < Z̄."""
    return (level_halfwidth(noise, _depth(noise, y, sigma), sigma)
            - level_halfwidth(noise, _flipped_depth_of_height(noise, y, sigma), sigma)) / 2


def minimal_shifted_step(noise: str, sigma: Number) -> float:
    """η_Z = min f_W (Prop. 2), attained at y = Z̄/2: 2σ√(ln 4) = 2.354820σ (Gaussian, Wilson 2000)
    and 2b ln 2 = σ√2 ln 2 = 0.980258σ (Laplace, App. B.3)."""
    if check_noise(noise) == GAUSS:
        return 2 * check_sigma(sigma) * math.sqrt(math.log(4))
    return 2 * laplace_scale(sigma) * math.log(2)


def direct_entropy(noise: str, sigma: Number) -> float:
    """h(D_Z) in bits, the negative layered entropy of (4) [derived]. With R ~ Gamma(k, 1) and
    f_D(D_Z) = 2b⁺(R), h(D_Z) = −E log₂ f_D(D_Z):
        Gaussian  −log₂(2√2 σ) − ψ(3/2)/(2 ln 2) = −1.5263220 − log₂σ,
        Laplace   −log₂(√2 σ) − ψ(2)/ln 2        = −1.1099489 − log₂σ."""
    sigma = check_sigma(sigma)
    if check_noise(noise) == GAUSS:
        return -math.log2(2 * math.sqrt(2) * sigma) - float(mpmath.digamma(1.5)) / (2 * math.log(2))
    return -math.log2(math.sqrt(2) * sigma) - float(mpmath.digamma(2)) / math.log(2)


def shifted_entropy(noise: str, sigma: Number) -> float:
    """h(W_Z) in bits (Prop. 1) [derived]. By symmetry the shifted step has the law of
    f_W(D_Z), so h(W_Z) = −E log₂ f_W(D_Z) = −∫₀^∞ γ_k(r) log₂(b⁺(r) + b⁺(r*)) dr, with γ_k the
    Gamma(k, 1) density and r* the flipped depth. Reference: −1.3306303 − log₂σ (Gaussian),
    −0.6031117 − log₂σ (Laplace)."""
    return _unit_shifted_entropy(check_noise(noise)) - math.log2(check_sigma(sigma))


@functools.cache
def _unit_shifted_entropy(noise: str) -> float:
    """h(W_Z) at σ = 1 by mpmath tanh–sinh quadrature at 30 digits, split at r = ln 2 (where r = r*).
    b⁺(r) = √2 √r (Gaussian) or r/√2 (Laplace)."""
    with mpmath.workdps(30):
        shape = mpmath.mpf(DEPTH_SHAPE[noise])

        def halfwidth(r):
            return mpmath.sqrt(2 * r) if noise == GAUSS else r / mpmath.sqrt(2)

        def integrand(r):
            flipped = -mpmath.log(-mpmath.expm1(-r))
            return r ** (shape - 1) * mpmath.exp(-r) * mpmath.log(halfwidth(r) + halfwidth(flipped))

        integral = mpmath.quad(integrand, [0, mpmath.log(2), 1, 10, mpmath.inf])
        return float(-integral / (mpmath.gamma(shape) * mpmath.log(2)))


# ------------------------------------------------------------------ Irwin–Hall
def _ih_guard_digits(n: int) -> int:
    """Extra digits for the alternating Irwin–Hall sums: their terms reach ~10^{0.45 n} times the
    result at s = n/2 [derived]."""
    return math.ceil(0.45 * n) + 15


def _as_mpf(x) -> mpmath.mpf:
    return to_mpf(x) if isinstance(x, Fraction) else mpmath.mpf(x)


def _uniform_sum_series(n: int, m: int, s: mpmath.mpf) -> mpmath.mpf:
    """(1/m!) Σ_{k=0}^{⌊s⌋} (−1)^k C(n,k) (s − k)^m for 0 ≤ s ≤ n/2, exact integer binomials.

    For S = U₁ + … + U_n (U_i ~ U(0, 1)): m = n − 1 gives the density f_S(s), m = n the cdf,
    m = n − 2 the derivative f_S'(s), m = n + 1 the integral ∫₀^s F_S. Only s ≤ n/2 is evaluated:
    the symmetry S ↦ n − S keeps ⌊s⌋ + 1 ≤ n/2 + 1 terms, which bounds the cancellation.
    """
    total = mpmath.mpf(0)
    for k in range(int(mpmath.floor(s)) + 1):
        term = math.comb(n, k) * (s - k) ** m
        total = total - term if k & 1 else total + term
    return total / math.factorial(m)


def _check_ih(n: int, sigma: Number, minimum: int = 1) -> tuple[int, Fraction]:
    n = check_clients(n)
    if n < minimum:
        raise ParameterError("n", f"must be an integer ≥ {minimum} here, got {n}")
    return n, positive(sigma, "sigma")


def irwin_hall_halfwidth(n: int, sigma: Number = 1) -> float:
    """σ√(3n): IH(n, 0, σ²) is supported on [−σ√(3n), σ√(3n)] (Hegazy et al. 2024, §4.2)."""
    n, sigma = _check_ih(n, sigma)
    return float(sigma) * math.sqrt(3 * n)


def _ih_position(n: int, x, sigma: Fraction) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(c, s) with c = √(n/12)/σ and s = n/2 + c x, at the current (raised) precision."""
    c = mpmath.sqrt(mpmath.mpf(n) / 12) / to_mpf(sigma)
    return c, mpmath.mpf(n) / 2 + c * _as_mpf(x)


def irwin_hall_pdf(n: int, x, sigma: Number = 1) -> mpmath.mpf:
    """f_X(x) for X ~ IH(n, 0, σ²): c f_S(n/2 + c x), c = √(n/12)/σ, with
    f_S(s) = (1/(n−1)!) Σ_{k≤⌊s⌋} (−1)^k C(n,k)(s−k)^{n−1} evaluated at min(s, n − s) with
    ⌈0.45 n⌉ + 15 extra digits [derived]; 0 outside the support."""
    n, sigma = _check_ih(n, sigma)
    precision = mpmath.mp.dps
    with mpmath.extradps(_ih_guard_digits(n)):
        c, s = _ih_position(n, x, sigma)
        s = min(s, n - s)
        value = c * _uniform_sum_series(n, n - 1, s) if s >= 0 else mpmath.mpf(0)
    with mpmath.workdps(precision):
        return +value


def irwin_hall_cdf(n: int, x, sigma: Number = 1) -> mpmath.mpf:
    """P(X ≤ x) for X ~ IH(n, 0, σ²): F_S(s) = (1/n!) Σ_{k≤⌊s⌋} (−1)^k C(n,k)(s−k)^n, s = n/2 + c x,
    evaluated at s ≤ n/2 and by F_S(s) = 1 − F_S(n − s) above."""
    n, sigma = _check_ih(n, sigma)
    precision = mpmath.mp.dps
    with mpmath.extradps(_ih_guard_digits(n)):
        _, s = _ih_position(n, x, sigma)
        if s <= 0:
            value = mpmath.mpf(0)
        elif s >= n:
            value = mpmath.mpf(1)
        elif 2 * s <= n:
            value = _uniform_sum_series(n, n, s)
        else:
            value = 1 - _uniform_sum_series(n, n, n - s)
    with mpmath.workdps(precision):
        return +value


def irwin_hall_pdf_derivative(n: int, x, sigma: Number = 1) -> mpmath.mpf:
    """f_X'(x) for X ~ IH(n, 0, σ²), n ≥ 2: c² f_S'(s), f_S'(s) = (1/(n−2)!) Σ_{k≤⌊s⌋} (−1)^k C(n,k)(s−k)^{n−2},
    evaluated at s ≤ n/2 and by f_S'(s) = −f_S'(n − s) above (f_S' is odd about n/2)."""
    n, sigma = _check_ih(n, sigma, minimum=2)
    precision = mpmath.mp.dps
    with mpmath.extradps(_ih_guard_digits(n)):
        c, s = _ih_position(n, x, sigma)
        if s <= 0 or s >= n:
            value = mpmath.mpf(0)
        elif 2 * s <= n:
            value = c**2 * _uniform_sum_series(n, n - 2, s)
        else:
            value = -(c**2) * _uniform_sum_series(n, n - 2, n - s)
    with mpmath.workdps(precision):
        return +value


def irwin_hall_mean_abs(n: int, sigma: Number = 1) -> mpmath.mpf:
    """E|X| for X ~ IH(n, 0, σ²), exactly [derived]: E|S − n/2| = 2 ∫₀^{n/2} F_S(s) ds
    = (2/(n+1)!) Σ_{k<n/2} (−1)^k C(n,k)(n/2 − k)^{n+1} (a rational, summed in fractions), and
    E|X| = E|S − n/2| / c. Needed by Theorem 1 (E_{Z~P}|Z|). n = 1: σ√3/2; n = 3: 0.8125σ."""
    n, sigma = _check_ih(n, sigma)
    half = Fraction(n, 2)
    total = sum((-1) ** k * math.comb(n, k) * (half - k) ** (n + 1) for k in range(math.ceil(half)))
    mean_abs_sum = 2 * total / math.factorial(n + 1)
    return to_mpf(mean_abs_sum) * mpmath.sqrt(mpmath.mpf(12) / n) * to_mpf(sigma)


# ------------------------------------------------------------------ Rényi divergences (nats)
def check_sensitivity(sensitivity: Number) -> Fraction:
    """The shift Δ ≥ 0 between neighbouring outputs (``sensitivity``)."""
    delta = to_fraction(sensitivity, "sensitivity")
    if delta < 0:
        raise ParameterError("sensitivity", f"must be ≥ 0, got {float(delta):g}")
    return delta


def gaussian_rdp(alpha: float | str, sigma: Number, sensitivity: Number) -> mpmath.mpf:
    """D_α(N(0, σ²) ‖ N(Δ, σ²)) = α Δ²/(2σ²) for α ≥ 1 (α = 1: KL; Mironov 2017);
    +∞ at α = ∞ unless Δ = 0. Every "Gaussian noise ✓" scheme of Hegazy et al. (2024), Table 1, has
    exactly this RDP [derived: its error is exactly N(0, σ²)]."""
    alpha = parse_alpha(alpha)
    sigma, delta = positive(sigma, "sigma"), check_sensitivity(sensitivity)
    if delta == 0:
        return mpmath.mpf(0)
    if alpha == math.inf:
        return mpmath.inf
    return mpmath.mpf(alpha) * to_mpf(delta) ** 2 / (2 * to_mpf(sigma) ** 2)


def laplace_rdp(alpha: float | str, sigma: Number, sensitivity: Number) -> mpmath.mpf:
    """D_α(Lap(0, b) ‖ Lap(Δ, b)), b = σ/√2 (variance σ²), in ε = Δ/b (Mironov 2017):
        (1/(α−1)) ln( α/(2α−1) e^{(α−1)ε} + (α−1)/(2α−1) e^{−αε} ),
    computed as ε + log1p((α−1)/(2α−1) · expm1(−(2α−1)ε)) / (α−1), which has no cancellation near
    α = 1; α = 1: ε + e^{−ε} − 1 (KL); α = ∞: ε."""
    alpha = parse_alpha(alpha)
    sigma, delta = positive(sigma, "sigma"), check_sensitivity(sensitivity)
    eps = to_mpf(delta) * mpmath.sqrt(2) / to_mpf(sigma)
    if alpha == math.inf:
        return eps
    if alpha == 1:
        return eps + mpmath.expm1(-eps)
    a = mpmath.mpf(alpha)
    return eps + mpmath.log1p((a - 1) / (2 * a - 1) * mpmath.expm1(-(2 * a - 1) * eps)) / (a - 1)


def irwin_hall_rdp(alpha: float | str, n: int, sigma: Number, sensitivity: Number) -> mpmath.mpf:
    """D_α(IH(n, 0, σ²) ‖ IH(n, Δ, σ²)) for α ≥ 1: 0 if Δ = 0, else +∞. The support
    [−σ√(3n), σ√(3n)] is not contained in its shift, so P has mass where Q has density 0
    (Hegazy et al. 2024, §4.2 and Table 1: no Rényi DP)."""
    parse_alpha(alpha)
    _check_ih(n, sigma)
    return mpmath.mpf(0) if check_sensitivity(sensitivity) == 0 else mpmath.inf


def renyi_divergence(noise: str, alpha: float | str, sigma: Number, sensitivity: Number,
                     n: int = 1) -> tuple[mpmath.mpf, str | None]:
    """(D_α in nats, reason): the exact RDP of the noise ``noise`` (gauss, laplace, irwin-hall; n is
    the number of Irwin–Hall clients) at shift Δ = ``sensitivity``. ``reason`` is a one-line
    explanation when the value is +∞, else None."""
    noise = check_noise(noise, NOISES)
    if noise == IRWIN_HALL:
        value = irwin_hall_rdp(alpha, n, sigma, sensitivity)
        reason = (f"support mismatch: IH(n={check_clients(n)}) noise lives on [−σ√(3n), σ√(3n)] = "
                  f"±{irwin_hall_halfwidth(n, sigma):.6g} and its shift by Δ = {float(check_sensitivity(sensitivity)):.6g} "
                  "puts mass where the other output has density 0, so D_α = ∞ for every α ≥ 1")
    elif noise == GAUSS:
        value = gaussian_rdp(alpha, sigma, sensitivity)
        reason = "the Gaussian log-likelihood ratio Δ(2z − Δ)/(2σ²) is unbounded in z, so D_∞ = ∞"
    else:
        value = laplace_rdp(alpha, sigma, sensitivity)
        reason = None
    return value, (reason if value == mpmath.inf else None)
