"""Certified (ε, δ) at small δ: privacy loss distributions composed by an exponentially tilted
FFT whose floating-point error is bounded by a proof, not measured.

**The problem.** An FFT computes a composed PLD with an absolute error of about u·log N
(u = 2⁻⁵³) relative to its largest entry, so its tail — all that matters at δ = 10⁻¹² — is lost
in rounding. :func:`rdpcalc.privacy.pld.rounding_allowance` covers that error empirically, and
below twice its floor (10⁻¹¹) the FFT route certifies nothing.

**Tilting.** Let a composition have factors (pᵢ, ωᵢ, kᵢ): pᵢ the finite masses of one PLD on the
grid h·ℤ (losses l·h), ωᵢ its mass at +∞, kᵢ its uses; K = Σ kᵢ. The composed pair has mass
ω = 1 − Π(1 − ωᵢ)^{kᵢ} at +∞ and finite masses c = ∗ᵢ pᵢ^{∗kᵢ}, and

    δ(ε) = ω + Σ_l (1 − e^{ε − lh})₊ c(l).

For θ ≥ 0 and any constants Mᵢ > 0 (here Mᵢ ≈ Σ_l pᵢ(l) e^{θlh}), qᵢ = pᵢ e^{θlh}/Mᵢ gives the
exact identity c(l) = C e^{−θlh} r(l) with C = Π Mᵢ^{kᵢ} and r = ∗ᵢ qᵢ^{∗kᵢ}, since the tilt
e^{θlh} is a character of the convolution. With θ at the Chernoff optimum for ε, r is a
probability law centred near ε/h: the tail of c is the bulk of r, which the FFT computes to
full relative precision.

**The certificate** (:func:`_certified_delta`). The FFT of size N = 2^t computes the circular
convolution r_∘(j) = Σ_m r(j + mN) of the factors wrapped modulo N, read on the window
J = [s, s + N). Then, for ε ≥ sh:

    δ(ε) ≤ ω + F·[δ̂(ε) + C ‖w_ε e^{−θjh}‖₂ · B] + U,

* δ̂(ε) = Σ_{j∈J, jh>ε} (1 − e^{ε−jh}) C e^{−θjh} max(r̂(j), 0), from the computed r̂;
* on J, r ≤ r_∘ (the aliased terms are masses, ≥ 0), and Cauchy–Schwarz over the window
  points above ε bounds Σ w_ε(j) C e^{−θjh}|r̂ − r_∘|(j), w_ε(j) = 1 − e^{ε−jh}, by
  C‖w_ε e^{−θjh}‖₂·B, where B ≥ ‖r̂ − r_∘‖₂ (below); masses below the window contribute
  nothing (ε ≥ sh);
* U = e^{−θ′(s+N)h} Π Mᵢ(θ′)^{kᵢ} ≥ Σ_{l≥s+N} c(l) for any θ′ ≥ 0 (Markov's inequality):
  the masses above the window;
* F ≥ 1 covers the rounding of the qᵢ (relative ρ per entry, so r_exact ≤ r_computed
  inputs·(1 − ρ)^{−K}), of the sums and of the exponentials in δ̂.

**B, from Higham's FFT theorem** (N. J. Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed. 2002, Thm 24.2): the radix-2 Cooley–Tukey FFT (:func:`_fft`) computes
ŷ = fl(F_N x) with ‖ŷ − y‖₂ ≤ β‖y‖₂, β = tη/(1 − tη), η = μ + γ₄(√2 + μ), γ₄ = 4u/(1 − 4u),
when its twiddle factors are within μ of the true ones (:data:`TWIDDLE_ERROR`). With
‖F_N x‖₂ = √N‖x‖₂ (Parseval), each factor's transform has error eᵢ, ‖eᵢ‖₂ ≤ β√N‖qᵢ‖₂, and
|F_N qᵢ| ≤ ‖qᵢ‖₁ =: mᵢ pointwise. The product P = Π (F_N qᵢ)^{kᵢ} is computed by repeated
squaring; a complex product has relative error ≤ ε_m (:data:`MULTIPLY_ERROR`) and z^k then
carries at most 2k − 1 of them, so with G = Π (mᵢ + ‖eᵢ‖₂)^{kᵢ} and φ = (1 + ε_m)^{2K} − 1,

    ‖P̂ − P‖₂ ≤ D := G (Σ kᵢ‖eᵢ‖₂ + φ√N)   (|Π aᵢ − Π bᵢ| ≤ Σ |aᵢ − bᵢ| Π max(|aᵢ|, |bᵢ|)),

and the inverse transform, conj(F_N conj(·))/N (the division by 2^t exact), adds β‖P̂‖₂/√N
≤ β(G + D/√N) (‖P‖₂ = √N‖r_∘‖₂ ≤ √N G): B = β(G + D/√N) + D/√N, plus an absolute term
for underflow. The proof needs only IEEE arithmetic with each operation rounded once (numba
compiles without fast-math) and the accuracy of the twiddles, which a test measures against
mpmath.

The answer is a certified upper bound in exact arithmetic up to these stated error models;
the dominating pairs themselves are certified as in :mod:`rdpcalc.privacy.pld`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import pld as pldlib
from .pld import MAX_GRID_POINTS, _compiled, _pmfs

#: the certificate answers for δ below this many times the FFT's rounding allowance
#: (:func:`composed_epsilon`: δ < 10⁻⁸ at the allowance's floor 10⁻¹¹); at larger δ the
#: allowance takes at most 0.1 % of δ
ALLOWANCE_TIMES = 1000
#: the unit roundoff of float64
UNIT_ROUNDOFF = 2.0**-53
#: |ŵ − w| of a computed twiddle factor: its angle 2πk/N carries ≤ 2.01u·π, numpy's cos and sin
#: ≤ 4 ulp each (numpy's SIMD bound), 32u leaves a margin (a test measures the tables)
TWIDDLE_ERROR = 32 * UNIT_ROUNDOFF
#: relative error of a complex product: √2·γ₂ ≈ 2.83u without a fused multiply-add, √5·u with
#: one (Brent, Percival & Zimmermann 2007); 4u covers both
MULTIPLY_ERROR = 4 * UNIT_ROUNDOFF
#: relative error of numpy's log and exp (≤ 4 ulp), per operation, with a margin
ELEMENTARY_ERROR = 8 * UNIT_ROUNDOFF
#: relative raise of a sum of N non-negative terms (pairwise or not: ≤ N·u ≤ 5e−10 at N = 2^22)
SUM_SLACK = 1e-9
#: the window grows until the masses above it (U) are below this fraction of δ
TAIL_SHARE = 1e-6
#: the window starts this many tilted standard deviations below the tilted mean (an ε found at
#: the start is tilted again, lower)
BELOW_CENTRE = 4
#: the smallest window
MIN_POINTS = 2**10
#: the tilt is re-chosen at the ε found until ε moves less than this (nats), at most REFITS times
SETTLED = 1e-6
REFITS = 4


@dataclass(frozen=True)
class Factor:
    """``count`` uses of one PLD direction: finite masses ``probs`` at losses (lower + j)·h,
    ``infinity_mass`` at +∞; ``rho`` the relative rounding of ``probs`` already taken on (by
    coarsening)."""

    lower: int
    probs: np.ndarray
    infinity_mass: float
    count: int
    h: float
    rho: float = 0.0

    @functools.cached_property
    def losses(self) -> np.ndarray:
        return (self.lower + np.arange(len(self.probs))) * self.h

    @functools.cached_property
    def log_probs(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.probs)

    def log_mgf(self, theta: float) -> float:
        """log Σ_l p(l) e^{θlh} (−∞ for no finite mass)."""
        exponents = self.log_probs + theta * self.losses
        top = float(np.max(exponents)) if len(exponents) else -math.inf
        if not math.isfinite(top):
            return -math.inf
        return top + math.log(float(np.sum(np.exp(exponents - top))))

    def tilted_moments(self, theta: float) -> tuple[float, float]:
        """Mean and variance (in nats) of the law ∝ p(l) e^{θlh}."""
        exponents = self.log_probs + theta * self.losses
        weights = np.exp(exponents - np.max(exponents))
        weights /= weights.sum()
        mean = float(weights @ self.losses)
        return mean, float(weights @ (self.losses - mean) ** 2)

    def coarsened(self) -> Factor:
        """The factor on the grid 2h, every loss rounded up (H_γ can only grow)."""
        indices = self.lower + np.arange(len(self.probs))
        coarse = -(-indices // 2)
        probs = np.bincount(coarse - coarse[0], weights=self.probs)
        return Factor(int(coarse[0]), probs, self.infinity_mass, self.count, 2 * self.h, self.rho + UNIT_ROUNDOFF)


def factors(plds_and_counts, direction: int) -> list[Factor] | None:
    """The factors of one direction (0: remove, 1: add) of the composition of the dp-accounting
    PLDs given with their counts (single uses, not FFT compositions, whose rounding this route
    cannot bound), or None where a mass is not finite. Negative masses (dp-accounting's
    construction of some pmfs leaves ~1e−18 of them) are raised to 0, which only raises δ(ε)."""
    out = []
    for pld, count in plds_and_counts:
        pmfs = _pmfs(pld)
        dense = pmfs[min(direction, len(pmfs) - 1)].to_dense_pmf()
        probs = np.asarray(dense._probs, dtype=float)  # noqa: SLF001 (dp-accounting's layout)
        if not np.all(np.isfinite(probs)):
            return None
        probs = np.maximum(probs, 0.0)
        out.append(Factor(int(dense._lower_loss), probs, float(dense._infinity_mass), int(count),  # noqa: SLF001
                          float(dense._discretization)))  # noqa: SLF001
    return out


def epsilon(factor_list: list[Factor], delta: float) -> float:
    """The smallest ε ≥ 0 with a certified δ(ε) ≤ ``delta`` for the composition of the factors
    (one direction), to within SETTLED; +∞ where the mass at +∞ alone reaches δ."""
    infinity = _infinity_mass(factor_list)
    if infinity >= delta:
        return math.inf
    target = _chernoff_epsilon(factor_list, delta - infinity)
    best = math.inf
    for _ in range(REFITS):
        composition = _Composition.build(factor_list, _tilt_for(factor_list, target), delta)
        found = composition.solve(delta)
        best = min(best, found)
        if not math.isfinite(found) or abs(found - target) < SETTLED:
            break
        if found > composition.lowest and composition.fft_part(found) + composition.above <= TAIL_SHARE * delta:
            break  # the tilt is close enough: its rounding costs at most TAIL_SHARE of δ
        target = found
    return best


def delta(factor_list: list[Factor], eps: float) -> float:
    """A certified δ(ε) for the composition of the factors (one direction), tilted for ε. The
    window is sized for the Chernoff bound first, then again for the δ found where that is
    much smaller (the masses aliased onto the window must be small next to δ itself)."""
    theta = _tilt_for(factor_list, eps)
    scale = max(_chernoff_delta(factor_list, eps), 1e-300)
    for _ in range(REFITS):
        found = min(1.0, _Composition.build(factor_list, theta, scale, eps).certified_delta(eps))
        if found >= scale / 10 or found <= 1e-300:
            break
        scale = found
    return found


def _infinity_mass(factor_list: list[Factor]) -> float:
    """1 − Π(1 − ωᵢ)^{kᵢ}, raised by SUM_SLACK (relative)."""
    log_finite = sum(f.count * math.log1p(-f.infinity_mass) if f.infinity_mass < 1 else -math.inf
                     for f in factor_list)
    return min(1.0, -math.expm1(log_finite) * (1 + SUM_SLACK))


def _log_scale(factor_list: list[Factor], theta: float) -> float:
    """log C(θ) = Σ kᵢ log Mᵢ(θ)."""
    return sum(f.count * f.log_mgf(theta) for f in factor_list)


def _top_loss(factor_list: list[Factor]) -> float:
    """The largest composed finite loss, Σ kᵢ·(largest loss of factor i), in nats."""
    return sum(f.count * float(f.losses[np.nonzero(f.probs)[0][-1]]) for f in factor_list if np.any(f.probs))


def _tilted_mean(factor_list: list[Factor], theta: float) -> float:
    """Σ kᵢ·(the mean of factor i's law ∝ pᵢ(l) e^{θlh}), in nats: increasing in θ."""
    return sum(f.count * f.tilted_moments(theta)[0] for f in factor_list)


def _tilt_for(factor_list: list[Factor], eps: float) -> float:
    """θ ≥ 0 minimising log C(θ) − θε (convex): the tilted mean Σ kᵢ meanᵢ(θ) = ε, by bisection
    on θ (any θ ≥ 0 gives a valid certificate; this one makes it tight)."""

    if _tilted_mean(factor_list, 0.0) >= eps:
        return 0.0
    high = 1.0
    while _tilted_mean(factor_list, high) < eps and high < 1e6:
        high *= 2
    low = 0.0 if high == 1.0 else high / 2
    while high - low > 1e-6 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if _tilted_mean(factor_list, middle) < eps else (low, middle)
    return high


def _chernoff_delta(factor_list: list[Factor], eps: float) -> float:
    """min over θ ≥ 0 of C(θ) e^{−θε} (≥ the finite part of δ(ε); a scale, not a certificate)."""
    theta = _tilt_for(factor_list, eps)
    return math.exp(min(0.0, _log_scale(factor_list, theta) - theta * eps))


def _chernoff_epsilon(factor_list: list[Factor], finite_delta: float) -> float:
    """An ε with C(θ)e^{−θε} ≤ ``finite_delta`` at the best θ of a coarse search: where the
    tilt starts (an upper estimate of the ε sought)."""
    best = math.inf
    for theta in np.geomspace(1e-3, 1e3, 61):
        best = min(best, (_log_scale(factor_list, float(theta)) - math.log(finite_delta)) / float(theta))
    return max(0.0, min(best, _top_loss(factor_list)))


def _gamma(k: int) -> float:
    return k * UNIT_ROUNDOFF / (1 - k * UNIT_ROUNDOFF)


def fft_error(points: int) -> float:
    """β of Higham's Theorem 24.2 for the radix-2 FFT of ``points`` = 2^t points:
    ‖fl(F x) − F x‖₂ ≤ β‖F x‖₂."""
    t = int(points).bit_length() - 1
    eta = TWIDDLE_ERROR + _gamma(4) * (math.sqrt(2) + TWIDDLE_ERROR)
    if t * eta >= 1:
        raise ValueError("too many points for the FFT's error bound")
    return t * eta / (1 - t * eta)


@functools.cache
def _twiddles(points: int) -> np.ndarray:
    """w_k = e^{−2πik/N} for k < N/2 (the error μ of :data:`TWIDDLE_ERROR`)."""
    angles = (2 * np.pi) * np.arange(points // 2) / points
    return np.cos(angles) - 1j * np.sin(angles)


def _butterflies(values, twiddles, conjugate):
    """In-place radix-2 decimation-in-time FFT of ``values`` (length 2^t): bit reversal, then t
    stages of butterflies (a, b) → (a + w b, a − w b); ``conjugate`` uses the conjugate twiddles."""
    n = len(values)
    j = 0
    for i in range(1, n):
        bit = n >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j |= bit
        if i < j:
            values[i], values[j] = values[j], values[i]
    length = 2
    while length <= n:
        half = length // 2
        stride = n // length
        for start in range(0, n, length):
            for k in range(half):
                w = twiddles[k * stride]
                if conjugate:
                    w = w.conjugate()
                a = start + k
                product = w * values[a + half]
                values[a + half] = values[a] - product
                values[a] = values[a] + product
        length *= 2


def _fft(values: np.ndarray, inverse: bool = False) -> np.ndarray:
    """The radix-2 FFT of :func:`_butterflies` (compiled), or its inverse conj(F conj(x))/N."""
    out = np.array(values, dtype=np.complex128)
    _compiled(_butterflies)(out, _twiddles(len(out)), inverse)
    if inverse:
        out /= len(out)  # a power of two: exact
    return out


def _power(values: np.ndarray, count: int) -> np.ndarray:
    """values^count by repeated squaring (≤ 2·count − 1 rounded products in each entry: the
    count the proof uses, so not numpy's power, whose complex algorithm it does not know).
    numerics.trees has the same loop as a compiled scalar kernel, which numba cannot type for
    arrays."""
    result = np.ones_like(values)
    base = values.copy()
    while count:
        if count & 1:
            result *= base
        count >>= 1
        if count:
            base *= base
    return result


@dataclass
class _Composition:
    """The tilted composition of one direction's factors on a window of ``points`` grid points
    from ``start`` (grid step ``h``): the log-weights log(C e^{−θjh} r̂(j)) of the window points,
    and the constants of the certificate (module docstring)."""

    h: float
    theta: float
    start: int
    log_scale: float
    log_weights: np.ndarray
    l2_error: float
    above: float
    infinity: float
    inflation: float

    @classmethod
    def build(cls, factor_list: list[Factor], theta: float, delta_scale: float, eps: float | None = None):
        """Tilted by θ, on the smallest window (doubling from MIN_POINTS; coarsening the grid
        past MAX_GRID_POINTS) where the masses above and below it, as the circular convolution
        aliases them onto it, add at most TAIL_SHARE·``delta_scale`` to δ (they only raise it:
        this is tightness, not validity). Mass at l < s lands at l + mN, weighted
        C e^{−θ(l+mN)h} r(l) = c(l) e^{−θmNh}: at most e^{−θNh} × the mass below s."""
        while True:
            h = factor_list[0].h
            centre, spread = 0.0, 0.0
            for f in factor_list:
                mean, variance = f.tilted_moments(theta)
                centre += f.count * mean
                spread += f.count * variance
            spread = math.sqrt(spread)
            low = centre - BELOW_CENTRE * spread if eps is None else min(eps, centre - BELOW_CENTRE * spread)
            start = math.floor(low / h) - 1
            points = max(MIN_POINTS, 1 << max(0, math.ceil(math.log2((centre + 4 * spread) / h - start + 1))))
            allowed = math.log(TAIL_SHARE * delta_scale)
            while points <= MAX_GRID_POINTS:
                log_above = _log_mass_above(factor_list, theta, (start + points) * h)
                if _log_mass_below(factor_list, start * h) - theta * points * h > allowed:
                    start -= points // 2  # the masses below alias onto the window: reach lower
                elif log_above - theta * start * h <= allowed:
                    above = math.exp(log_above - theta * (start + points) * h)
                    return cls._compose(factor_list, theta, start, points, above)
                points *= 2
            factor_list = [f.coarsened() for f in factor_list]

    @classmethod
    def _compose(cls, factor_list: list[Factor], theta: float, start: int, points: int, above: float):
        h = factor_list[0].h
        beta = fft_error(points)
        root = math.sqrt(points)
        product = np.ones(points, dtype=np.complex128)
        log_scale, growth, error_sum, multiplies, rho, total = 0.0, 0.0, 0.0, 0, 0.0, 0
        for f in factor_list:
            log_m = f.log_mgf(theta)
            arguments = f.log_probs + theta * f.losses - log_m
            tilted = np.exp(arguments)
            indices = (f.lower + np.arange(len(f.probs))) % points
            wrapped = np.bincount(indices, weights=tilted, minlength=points)
            finite = np.isfinite(arguments)
            size = float(np.max(np.abs(f.log_probs[finite]) + np.abs(theta * f.losses[finite]))) + abs(log_m) + 1
            aliased = -(-len(f.probs) // points)
            rho = max(rho, f.rho + math.expm1(4 * ELEMENTARY_ERROR * size) + 2 * aliased * UNIT_ROUNDOFF)
            l1 = float(wrapped.sum()) * (1 + SUM_SLACK)
            l2 = math.sqrt(float(wrapped @ wrapped) * (1 + SUM_SLACK))
            transform_error = beta * root * l2
            growth += f.count * math.log(l1 + transform_error)
            error_sum += f.count * transform_error
            multiplies += 2 * f.count
            total += f.count
            log_scale += f.count * log_m
            product *= _power(_fft(wrapped), f.count)
        g = math.exp(growth)
        phi = math.expm1(multiplies * math.log1p(MULTIPLY_ERROR))
        underflow = multiplies * root * 2.0**-1000
        d = g * (error_sum + phi * root) + underflow
        l2_error = beta * (g + d / root) + d / root
        circular = _fft(product, inverse=True).real
        window = start + np.arange(points)
        with np.errstate(divide="ignore"):
            log_r = np.log(np.maximum(circular[window % points], 0.0))
        log_weights = log_scale - theta * window * h + log_r
        size = abs(log_scale) + theta * float(np.max(np.abs(window))) * h + 60
        inflation = (1 + SUM_SLACK) * math.exp(-total * math.log1p(-rho) + 4 * ELEMENTARY_ERROR * size)
        return cls(h, theta, start, log_scale, log_weights, l2_error, above, _infinity_mass(factor_list), inflation)

    @property
    def lowest(self) -> float:
        return max(0.0, self.start * self.h)

    @property
    def highest(self) -> float:
        return (self.start + len(self.log_weights)) * self.h

    @functools.cached_property
    def _window(self) -> tuple[np.ndarray, np.ndarray]:
        """The window's losses jh and weights C e^{−θjh} r̂(j)."""
        losses = (self.start + np.arange(len(self.log_weights))) * self.h
        return losses, np.exp(self.log_weights)

    def certified_delta(self, eps: float) -> float:
        """The certificate of the module docstring at ``eps`` ≥ the window's start."""
        if eps < self.lowest:
            raise ValueError("ε below the window")
        losses, weights = self._window
        first = int(np.searchsorted(losses, eps, side="right"))  # the window points above ε
        terms = -np.expm1(eps - losses[first:]) * weights[first:]
        return self.infinity + self.inflation * (float(terms.sum()) + self.fft_part(eps)) + self.above

    def fft_part(self, eps: float) -> float:
        """C ‖w_ε e^{−θjh}‖₂ · B over the window points above ε, w_ε(j) = 1 − e^{ε−jh}: the
        FFT's rounding, at most, in δ(ε) (Cauchy–Schwarz)."""
        losses, _ = self._window
        first = int(np.searchsorted(losses, eps, side="right"))
        if first == len(losses):
            return 0.0
        log_terms = np.log(-np.expm1(eps - losses[first:])) + self.log_scale - self.theta * losses[first:]
        top = float(np.max(log_terms))
        return math.exp(top) * math.sqrt(float(np.sum(np.exp(2 * (log_terms - top))))) * self.l2_error

    def solve(self, delta: float) -> float:
        """The smallest ε in the window with a certified δ(ε) ≤ ``delta`` (it is non-increasing
        in ε), to within 1e−12 relative by Brent's method, then checked: +∞ where even the
        window's top fails; its start where it holds there (the true ε may be smaller, and the
        caller tilts again)."""
        from scipy.optimize import brentq  # scipy: start-up time

        low, high = self.lowest, self.highest
        if self.certified_delta(high) > delta:
            return math.inf
        if self.certified_delta(low) <= delta:
            return low
        root = brentq(lambda eps: self.certified_delta(eps) - delta, low, high, xtol=1e-13, rtol=1e-12)
        step = 1e-12 * max(1.0, root)
        while self.certified_delta(root) > delta:  # Brent's root may sit a hair below the crossing
            root = min(high, root + step)
            step *= 2
        return root


def _log_mass_below(factor_list: list[Factor], loss: float) -> float:
    """The log of a bound on Σ_{l·h < loss} c(l): min over θ″ ≤ 0 of log C(θ″) − θ″·loss
    (Markov); −∞ below the smallest composed loss. It sizes the window only."""
    bottom = sum(f.count * float(f.losses[np.nonzero(f.probs)[0][0]]) for f in factor_list if np.any(f.probs))
    if loss <= bottom:
        return -math.inf

    if _tilted_mean(factor_list, 0.0) <= loss:
        return _log_scale(factor_list, 0.0)
    low = -1.0
    while _tilted_mean(factor_list, low) > loss and low > -1e6:
        low *= 2
    high = 0.0 if low == -1.0 else low / 2
    while high - low > 1e-6 * -low:
        middle = (low + high) / 2
        low, high = (middle, high) if _tilted_mean(factor_list, middle) > loss else (low, middle)
    return _log_scale(factor_list, low) - low * loss


def _log_mass_above(factor_list: list[Factor], theta: float, loss: float) -> float:
    """The log of a bound on Σ_{l·h ≥ loss} c(l) e^{θlh}, the tilted mass above ``loss`` times C:
    min over θ′ ≥ θ of log C(θ′) − (θ′ − θ)·loss (Markov), raised for the rounding of the
    exponent; −∞ above the largest composed loss. Times e^{−θ·loss} it bounds U, the mass
    above ``loss``; times e^{−θ·start} it bounds what that mass adds, aliased onto the window
    by the circular convolution, to any δ(ε) with ε ≥ start (the window is sized so that this
    is negligible: aliasing only raises δ, but by a factor e^{θ·(window width)})."""
    if loss > _top_loss(factor_list):
        return -math.inf
    other = max(theta, _tilt_for(factor_list, loss))
    exponent = _log_scale(factor_list, other) - (other - theta) * loss
    size = sum(f.count for f in factor_list) * 800 + other * loss
    return exponent + 4 * ELEMENTARY_ERROR * size + SUM_SLACK


def factor_lists(uses) -> list[list[Factor]] | None:
    """The factors of each direction (remove, and add where one of the uses is not symmetric)
    of the single uses (PLD, count), or None where the uses are not known or a mass is not
    finite: what :func:`composed_epsilon` and :func:`composed_delta` read, built once per
    composition."""
    if uses is None:
        return None
    lists = [factors(uses, direction) for direction in range(max(len(_pmfs(pld)) for pld, _ in uses))]
    return None if any(factor_list is None for factor_list in lists) else lists


def composed_epsilon(pld, lists, delta: float) -> float:
    """ε at ``delta`` of a composition: ``pld`` composed by FFT (:mod:`rdpcalc.privacy.pld`), and
    ``lists`` its :func:`factor_lists` (None where not known). For δ below T = ALLOWANCE_TIMES ×
    the FFT's rounding allowance the certificate of this module answers (the larger ε of the
    directions), raised where needed to the FFT route's ε at T, so that ε does not grow with δ
    across the switch (a larger ε stays valid); elsewhere :func:`rdpcalc.privacy.pld.epsilon`."""
    switch = ALLOWANCE_TIMES * pldlib.rounding_allowance(pld)
    if lists is None or delta >= switch:
        return pldlib.epsilon(pld, delta)
    return max(max(epsilon(factor_list, delta) for factor_list in lists), pldlib.epsilon(pld, switch))


def composed_delta(pld, lists, eps: float) -> float:
    """δ at ``eps`` of a composition (as :func:`composed_epsilon`: the certificate where the FFT's
    δ is below ALLOWANCE_TIMES × its rounding allowance; δ only drops across the switch)."""
    fft_delta = pldlib.delta(pld, eps)
    if lists is None or fft_delta >= ALLOWANCE_TIMES * pldlib.rounding_allowance(pld):
        return fft_delta
    return max(delta(factor_list, eps) for factor_list in lists)


def composed_infinity_reason(pld, lists, delta: float) -> str | None:
    """Why :func:`composed_epsilon` is +∞ at ``delta``, in words (None where it is finite)."""
    if lists is None or delta >= ALLOWANCE_TIMES * pldlib.rounding_allowance(pld):
        return pldlib.infinity_reason(pld, delta)
    if math.isfinite(composed_epsilon(pld, lists, delta)):
        return None
    infinity = max(_infinity_mass(factor_list) for factor_list in lists)
    return (f"the composed dominating pair has mass {infinity:.3g} at an infinite loss (a loss above "
            f"{pldlib.LOSS_CAP:g} nats, or outputs possible under one input only), which alone reaches δ")
