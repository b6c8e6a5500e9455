"""Randomized rounding onto a grid plus integer noise: the common form of the SecAgg mechanisms
deployed in practice, the distributed discrete Gaussian (:mod:`.ddg`), Skellam (:mod:`.skellam`)
and binomial (:mod:`.binomial`) mechanisms.

One client with input x ∈ [−c, c] scales it to the grid of step γ, rounds x/γ to one of its two
neighbouring integers without bias (up with probability x/γ − ⌊x/γ⌋), and adds integer noise Z
with pmf N; it sends the integer O = round(x/γ) + Z, the server decodes γ·(ΣO − n·E Z). So

    P_x(o) = (1 − t)·N(o − y) + t·N(o − y − 1),   y = ⌊x/γ⌋, t = x/γ − y,

affine in x between consecutive grid points: the breakpoints are the grid points kγ in [−c, c]
and ±c.

**The worst case of the SecAgg sum** (``OTHERS_FAMILY = "shift"``, :mod:`rdpcalc.worstcase.secagg`).
Another client at a grid point adds a known integer and its noise; at any other input it adds
in addition an independent Bernoulli rounding bit, the same under both hypotheses. A known
shift is a bijection of the sum (also modulo 2^B), and adding independent noise cannot increase
a divergence (data processing), so the others are worst at grid points, where all of them give
the same divergence: client 1's sum with N^{*(n−1)}. Client 1 is worst at breakpoints (its pmf
is affine in x between them and D_α is jointly convex), and two grid points give the divergence
of their difference alone. Every noise here (discrete Gaussian, Skellam, binomial) is
log-concave, and so is the sum of n of them, G: its shifts have a monotone likelihood ratio, so
the most powerful tests of G against G shifted by d > 0 are threshold tests, whose power at
every level grows with d. The trade-off curve of a larger shift is then everywhere below that of
a smaller one, which by Blackwell's theorem makes the smaller shift a garbling of the larger:
every divergence (Rényi, hockey-stick) grows with the shift. When c is a grid point the worst
case is therefore the pair (c, −c) alone. Otherwise, or when the sum wraps modulo 2^B (the
wrapped shifts are not ordered), the search is exhaustive over the differences of grid points
and the pairs that involve ±c off the grid — an exact maximum either way, not a search.

**Unbounded noise** (discrete Gaussian, Skellam). The engines need finite supports, so one
client's pmf is computed on the fixed window of outputs W = [−K − L, K + L] (K = ⌈c/γ⌉): the
true probabilities there, not renormalised and with nothing folded into the end bins, so the
pmf stays affine in x and positive on all of W for every x. L is the smallest window (≥ 2K + 1)
whose certified tail mass P(|Z| > L) ≤ ε is at most ``tail``; an output leaves W with
probability at most ε. The true mechanism is then bracketed:

* Rényi divergences: a certified bracket around the windowed values (:mod:`rdpcalc.worstcase.tails`);
* privacy loss distributions: H_γ(P‖Q) ≤ H_γ(P̃‖Q̃) + (the mass P̃ misses), at most n·ε for a
  sum of n windowed clients, added to each round's hockey-stick envelope
  (:mod:`rdpcalc.worstcase.dominating`).

``bits``: the SecAgg sum wraps modulo 2^bits (:mod:`rdpcalc.numerics`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np

from ..errors import ParameterError
from ..exactnum import to_mpf
from .base import MAX_LEVELS, Mechanism, Param

#: the default tail mass ε of unbounded noise beyond its window
DEFAULT_TAIL = "1e-30"
#: digits of the mpmath work behind a window's pmf and tail bounds (above the engines' float64;
#: the exact engine asks for more through the current precision)
NOISE_DPS = 40


class RoundedNoise(Mechanism):
    """Randomized rounding to the grid γZ plus integer noise (module docstring). A subclass is a
    frozen dataclass with fields ``c``, ``gamma``, its noise parameters and ``bits`` (and ``tail``
    for unbounded noise), and defines :meth:`noise_log_pmf`, :meth:`integer_noise` and either
    :meth:`noise_window` (bounded noise) or :meth:`tail_mass_at` and :meth:`log_tail_sum`
    (unbounded noise)."""

    OTHERS_FAMILY = "shift"
    UNBOUNDED = True

    # ------------------------------------------------------------------- noise (subclasses)
    def noise_window(self) -> tuple[int, int]:
        """(lo, hi): the noise values the pmf is computed on: all of them for bounded noise; for
        unbounded noise −L … L, L the smallest with certified tail mass ≤ ``tail`` and ≥ 2K + 1
        (the bracket of :mod:`rdpcalc.worstcase.tails` needs the tails beyond every rounded input)."""
        window = _window(self)
        return -window, window

    def tail_mass_at(self, window: int) -> mpmath.mpf:
        """A certified upper bound on P(|Z| > window) (unbounded noise)."""
        raise NotImplementedError

    def noise_deviation(self) -> float:
        """The noise's standard deviation, about (sizes the window)."""
        raise NotImplementedError

    def noise_mean(self) -> Fraction:
        """E Z (the server subtracts n·E Z before decoding)."""
        return Fraction(0)

    def noise_tail_mass(self) -> mpmath.mpf:
        """A certified upper bound on P(Z ∉ window) (0 for bounded noise)."""
        return self.tail_mass_at(self.noise_window()[1]) if self.UNBOUNDED else mpmath.mpf(0)

    def log_tail_sum(self, alpha: float, start: int, y: int, y_prime: int) -> mpmath.mpf:
        """A certified upper bound on log Σ_{o ≥ start} N(o − y)^α N(o − y′)^{1−α} for the true
        (unwindowed) noise pmf N, α > 1 (unbounded noise only; :mod:`rdpcalc.worstcase.tails`)."""
        raise NotImplementedError

    # ------------------------------------------------------------------- geometry
    @property
    def bound(self) -> Fraction:
        return self.c

    @property
    def reach(self) -> int:
        """K = ⌈c/γ⌉: rounded inputs lie in {−K … K}."""
        return math.ceil(self.c / self.gamma)

    @property
    def support_size(self) -> int:
        lo, hi = self.noise_window()
        return 2 * self.reach + hi - lo + 1

    @property
    def lowest_output(self) -> int:
        """The integer sent for output index 0: −K + lo."""
        return -self.reach + self.noise_window()[0]

    def check(self) -> None:
        if self.support_size > MAX_LEVELS * 2 + 1:
            raise ParameterError(self.size_parameter(), f"gives {self.support_size} outputs per client (grid reach "
                                 f"{self.reach}, noise window {self.noise_window()}), over the limit of "
                                 f"{2 * MAX_LEVELS + 1}: use a coarser grid or less noise")

    def breakpoints(self) -> tuple[Fraction, ...]:
        """The grid points kγ in [−c, c], and ±c."""
        inner = math.floor(self.c / self.gamma)
        points = {k * self.gamma for k in range(-inner, inner + 1)} | {self.c, -self.c}
        return tuple(sorted(points))

    def shift_pairs(self) -> list[tuple[int, int]]:
        """Index pairs (i < j) of :meth:`breakpoints` that cover the worst case (both directions
        are always evaluated; module docstring): (−c, c) alone when c is a grid point and the sum
        does not wrap; otherwise the lowest grid point with every other grid point, and each
        point off the grid with every other point."""
        points = self.breakpoints()
        if self.modulus is None and (self.c / self.gamma).denominator == 1:
            return [(0, len(points) - 1)]
        on_grid = [i for i, p in enumerate(points) if (p / self.gamma).denominator == 1]
        off_grid = [i for i in range(len(points)) if i not in on_grid]
        pairs = {(on_grid[0], j) for j in on_grid[1:]}
        pairs |= {tuple(sorted((i, j))) for i in off_grid for j in range(len(points)) if j != i}
        return sorted(pairs)

    def mirror_symmetric(self) -> bool:
        """Noise symmetric about the centre of its window: P_{−x}(o) = P_x(lo + hi − o)."""
        with mpmath.workdps(NOISE_DPS):
            _, noise = self._noise_pmf(mpmath.mp.prec)
        return all(mpmath.almosteq(a, b, 10 ** (-NOISE_DPS + 5)) for a, b in zip(noise, reversed(noise)))

    # ------------------------------------------------------------------- pmf
    def rounding(self, x: Fraction) -> tuple[int, Fraction]:
        """(y, t): x/γ rounds to y + 1 with probability t, else to y."""
        scaled = x / self.gamma
        y = math.floor(scaled)
        return y, scaled - y

    @lru_cache(maxsize=4)  # noqa: B019 - frozen, hashable instances; a few precisions at most
    def _noise_pmf(self, precision: int) -> tuple[int, tuple]:
        """(z₀, values): the true noise pmf at z₀, z₀ + 1, … — every value a client's pmf on the
        window W needs (|z| ≤ 2K + L + 1)."""
        lo, hi = self.noise_window()
        reach = self.reach
        first, last = (lo, hi) if not self.UNBOUNDED else (lo - 2 * reach - 1, hi + 2 * reach + 1)
        return first, tuple(mpmath.exp(self.noise_log_pmf(z)) for z in range(first, last + 1))

    def noise_log_pmf(self, z: int) -> mpmath.mpf:
        """log of the true noise pmf at the integer z (normalised over all integers)."""
        raise NotImplementedError

    def integer_noise(self, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        """Independent draws of the noise Z, an integer array of ``shape``, by the paper's sampler."""
        raise NotImplementedError(f"no noise sampler for {type(self).__name__}")

    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """(1 − t)·N(o − y) + t·N(o − y − 1) on the outputs o of the window −K + lo … K + hi, N the
        true noise pmf; each entry a sum of at most two products of positives. For unbounded
        noise the entries sum to at least 1 − ε (module docstring)."""
        x = self.check_input(x)
        y, t = self.rounding(x)
        with mpmath.workdps(mpmath.mp.dps + 5):
            first, noise = self._noise_pmf(mpmath.mp.prec)
            up = to_mpf(t)
            low = self.lowest_output
            out = []
            for o in range(low, low + self.support_size):
                value = mpmath.mpf(0)
                if t != 1 and 0 <= o - y - first < len(noise):
                    value += (1 - up) * noise[o - y - first]
                if t != 0 and 0 <= o - y - 1 - first < len(noise):
                    value += up * noise[o - y - 1 - first]
                out.append(value)
        return [+p for p in out]

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Unbiased randomized rounding of x/γ (up with probability x/γ − ⌊x/γ⌋), plus the
        mechanism's integer noise (:meth:`integer_noise`); the output index is the integer minus
        the window's lowest output. A draw outside the window (probability at most the tail mass)
        is an ArithmeticError, never folded into an end bin."""
        scaled = x / float(self.gamma)
        lower = np.floor(scaled)
        rounded = (lower + (rng.random(x.shape) < scaled - lower)).astype(np.int64)
        index = rounded + self.integer_noise(x.shape, rng) - self.lowest_output
        if np.any((index < 0) | (index >= self.support_size)):
            raise ArithmeticError(f"a draw of {self.name} left its window (probability ≤ {self.tail_mass_bound():.3g} each)")
        return index

    def output_values(self) -> list[Fraction]:
        """γ·(o − E Z): the unbiased decoding of one client's integer o."""
        low, mean = self.lowest_output, self.noise_mean()
        return [self.gamma * (low + i - mean) for i in range(self.support_size)]

    def log_tail_mass_bound(self) -> float:
        """log of the certified tail mass of the noise beyond its window, rounded up (−∞ for
        bounded noise)."""
        return _log_tail_mass(self)

    def tail_parameter(self, limit: float) -> tuple[str, str]:
        return "gamma", "use a coarser grid (larger --gamma) or less noise"


#: the default of ``cover``: the Rényi order up to which the window keeps the bracket tight
DEFAULT_COVER = 4


@lru_cache(maxsize=256)
def _window(mechanism: RoundedNoise) -> int:
    """L: the smallest window with certified tail mass ≤ ``tail``, at least 2K + 1, and at least
    the reach where one client's tilted tail N(o − K)^α N(o + K)^{1−α} (centred at (2α − 1)K, of
    width ≈ the noise's standard deviation σ) has fallen by e^{−α(α−1)(2K)²/(2σ²)} more than the
    value, at α = ``cover``: (2α − 2)K + 2K√(α(α − 1)) + 7σ (a Gaussian estimate, which sizes the
    window only: the bracket is certified whatever the window)."""
    reach, alpha, spread = mechanism.reach, float(mechanism.cover), mechanism.noise_deviation()
    covered = math.ceil((2 * alpha - 2) * reach + 2 * reach * math.sqrt(alpha * (alpha - 1)) + 7 * spread)
    with mpmath.workdps(30):
        window = window_for_tail(mechanism.tail_mass_at, mechanism.tail, max(2 * reach + 1, covered), MAX_LEVELS)
    if window is None or window > MAX_LEVELS:
        raise ParameterError(mechanism.size_parameter(), f"needs a window of outputs wider than ±{MAX_LEVELS} around "
                                                         "each rounded input: use less noise, a coarser grid "
                                                         "(larger --gamma), a larger --tail-mass or a smaller --cover")
    return window


@lru_cache(maxsize=256)
def _log_tail_mass(mechanism: RoundedNoise) -> float:
    if not mechanism.UNBOUNDED:
        return -math.inf
    with mpmath.workdps(NOISE_DPS):
        return float(mpmath.log(mechanism.noise_tail_mass())) + 1e-12


def log_add(a: mpmath.mpf, b: mpmath.mpf) -> mpmath.mpf:
    """log(e^a + e^b)."""
    peak = max(a, b)
    if peak == -mpmath.inf:
        return peak
    return peak + mpmath.log(mpmath.exp(a - peak) + mpmath.exp(b - peak))


def window_for_tail(tail_mass_at, tail: Fraction, start: int, cap: int) -> int | None:
    """The smallest L ≥ ``start`` whose certified tail mass ``tail_mass_at(L)`` is ≤ ``tail``
    (doubling, then bisection: the bound decreases in L); None if it exceeds ``cap``."""
    target = to_mpf(tail)
    high = max(start, 1)
    if high > cap:
        return None
    while tail_mass_at(high) > target:
        high *= 2
        if high > 2 * cap:
            return None
    low = max(start, high // 2) if high > start else start
    if tail_mass_at(low) <= target:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if tail_mass_at(middle) <= target:
            high = middle
        else:
            low = middle
    return high


def grid_params() -> tuple[Param, Param]:
    """The input range and the grid every rounded-noise mechanism declares first."""
    return (
        Param("c", "number", "clipping bound c > 0; inputs lie in [-c, c]", low=0, low_open=True),
        Param("gamma", "number", "grid step γ > 0: inputs are rounded (without bias) to multiples of γ", low=0,
              low_open=True),
    )


def window_params() -> tuple[Param, Param]:
    """The two parameters that size the window of an unbounded noise (module docstring)."""
    return (
        Param("tail", "number", f"tail mass: the probability the window of outputs may miss, in (0, 1e-6] (default "
              f"{DEFAULT_TAIL}): divergences come as a certified bracket, a PLD is raised by n times it", default=DEFAULT_TAIL, low=0,
              high=Fraction(1, 10**6), low_open=True, option="--tail-mass"),
        Param("cover", "number", f"the Rényi order up to which the window keeps that bracket tight, 1 … 256 (default "
              f"{DEFAULT_COVER}; 1: sized by the tail mass alone, fastest)", default=DEFAULT_COVER, low=1, high=256),
    )


__all__ = ["DEFAULT_COVER", "DEFAULT_TAIL", "RoundedNoise", "grid_params", "log_add", "window_for_tail", "window_params"]
