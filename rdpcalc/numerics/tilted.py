"""Log pmf of a large sum of independent integer variables by FFT with exponential tilting.

An FFT convolution is accurate to about 1e-16 of its *largest* value, so on its own it
loses every tail that D_α needs at large α. Tilting fixes that: for a tilt θ the component
pmfs p_c(i) become p_c(i)·e^{θi}/M_c(θ), the pmf of the sum becomes
p(s)·e^{θs}/Π M_c(θ)^{n_c}, and that tilted pmf peaks wherever θ puts it. Computing the
tilted sum by FFT (the n_c-th powers are taken in the frequency domain, as n_c·log|φ| and
n_c·arg φ, so an exact zero of a spectrum stays a zero) and undoing the tilt
gives p(s) to ~1e-13 relative accuracy at every s where the tilted pmf is within a factor
``TRUST`` of its peak. Tilts are chosen greedily from the left end of the support until
every point is covered, each new window starting where the previous ones stop.

Cost: O(N log N) per tilt with N ≈ support size, and about √n·m / 10 tilts.
"""

from __future__ import annotations

import math

import numpy as np

from .fast import logsumexp

#: a point is trusted from a tilt where the tilted pmf is at least TRUST × its peak
TRUST = 1e-3
#: tail mass beyond which the circular (aliased) FFT of a tilt may wrap around
ALIAS = 1e-24
#: half-width of a window in standard deviations, matched to TRUST (exp(−z²/2) ≈ TRUST)
_Z = math.sqrt(-2 * math.log(TRUST))


class TiltingFailed(ArithmeticError):
    """The greedy tilt search made no progress (e.g. a component with interior zeros)."""


def log_sum_pmf(components: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """log pmf of Σ_c (sum of n_c copies of the variable with log pmf l_c on {0 … m_c−1}).

    ``components`` is a list of ``(l_c, n_c)``; each l_c must be finite everywhere (full
    support). Returns an array of length Σ n_c (m_c − 1) + 1.
    """
    components = [(np.asarray(l, dtype=np.float64), n) for l, n in components if n > 0]
    if not components:
        return np.zeros(1)
    for l, _ in components:
        if not np.all(np.isfinite(l)):
            raise TiltingFailed("tilting needs components with full support")
    size = sum(n * (len(l) - 1) for l, n in components) + 1
    grid = _TiltGrid(components, size)

    best_log = np.full(size, -np.inf)
    best_quality = np.full(size, -np.inf)
    log_trust = math.log(TRUST)
    s_left = 0
    while s_left < size:
        for z in (_Z, 0.0):
            lo, log_p, quality = _tilted_window(components, grid, grid.theta_for_left_edge(s_left, z))
            window_best = best_quality[lo : lo + len(quality)]
            better = quality > window_best
            best_log[lo : lo + len(quality)][better] = log_p[better]
            window_best[better] = quality[better]
            uncovered = np.nonzero(best_quality[s_left:] < log_trust)[0]
            new_left = size if len(uncovered) == 0 else s_left + int(uncovered[0])
            if new_left > s_left:
                s_left = new_left
                break
        else:
            raise TiltingFailed(f"no tilt covers point {s_left} of {size}")
    return best_log


class _TiltGrid:
    """The cumulant generating function K(θ) = Σ n_c log Σ_i p_c(i) e^{θi} of the sum, with the
    mean μ(θ) and standard deviation σ(θ) of the tilted sum, tabulated on a grid of θ."""

    POINTS = 4001

    def __init__(self, components, size: int):
        steepest = max(float(np.max(np.abs(np.diff(l)))) if len(l) > 1 else 0.0 for l, _ in components)
        reach = steepest + math.log(size) + 40.0
        self.theta = np.linspace(-reach, reach, self.POINTS)
        self.cgf = np.zeros(self.POINTS)
        self.mean = np.zeros(self.POINTS)
        var = np.zeros(self.POINTS)
        for l, n in components:
            i = np.arange(len(l))
            t = l[None, :] + self.theta[:, None] * i[None, :]
            k = logsumexp(t, axis=1)
            w = np.exp(t - k[:, None])
            mu = w @ i
            self.cgf += n * k
            self.mean += n * mu
            var += n * (w @ (i * i) - mu * mu)
        self.sd = np.sqrt(np.maximum(var, 0.0))

    def theta_for_left_edge(self, s_left: float, z: float) -> float:
        """θ at which the window [μ − zσ, μ + zσ] of the tilted sum starts at ``s_left``."""
        edge = np.maximum.accumulate(self.mean - z * self.sd)
        return float(np.interp(s_left, edge, self.theta))

    def tail_limits(self, theta: float, size: int) -> tuple[int, int]:
        """[s_dn, s_up] outside of which the tilted sum has mass < ALIAS on each side.

        Chernoff: log P(S_θ ≥ s) ≤ K(θ') − K(θ) − (θ'−θ)s for every θ' > θ (and the mirror
        bound below), minimised over the grid.
        """
        k_theta = float(np.interp(theta, self.theta, self.cgf))
        lam = self.theta - theta
        slack = self.cgf - k_theta - math.log(ALIAS)
        up, dn = lam > 1e-12, lam < -1e-12
        s_up = size - 1 if not np.any(up) else min(size - 1, math.ceil(np.min(slack[up] / lam[up])))
        s_dn = 0 if not np.any(dn) else max(0, math.floor(np.max(slack[dn] / lam[dn])))
        return s_dn, s_up


def _tilted_window(components, grid: _TiltGrid, theta: float):
    """One tilt: the first index ``lo`` of its window, log p there, and log(tilted / peak).

    The tilted sum has mass < ALIAS outside [s_dn, s_up], so a circular convolution of
    length ≥ s_up − s_dn + 1 reads every point of that window with aliasing error < 2·ALIAS.
    """
    s_dn, s_up = grid.tail_limits(theta, _support_size(components))
    from scipy import fft  # imported here: the CLI should not pay for it at start-up

    length = fft.next_fast_len(max(s_up - s_dn + 1, max(len(l) for l, _ in components)), real=True)
    log_modulus = np.zeros(length // 2 + 1)
    phase = np.zeros(length // 2 + 1)
    log_normaliser = 0.0
    for l, n in components:
        t = l + theta * np.arange(len(l))
        k = logsumexp(t)
        log_normaliser += n * k
        spectrum = fft.rfft(np.exp(t - k), length)
        with np.errstate(divide="ignore"):
            log_modulus += n * np.log(np.abs(spectrum))  # −inf at an exact zero: modulus 0 below
        phase += n * np.angle(spectrum)
    circular = fft.irfft(np.exp(log_modulus) * np.exp(1j * phase), length)
    s = np.arange(s_dn, s_up + 1)
    tilted = circular[s % length]
    positive = tilted > 0
    log_tilted = np.full(len(s), -np.inf)
    log_tilted[positive] = np.log(tilted[positive])
    log_p = log_tilted - theta * s + log_normaliser
    return s_dn, log_p, log_tilted - math.log(tilted.max())


def _support_size(components) -> int:
    return sum(n * (len(l) - 1) for l, n in components) + 1

