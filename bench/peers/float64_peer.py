"""The float64 peer: probabilities in plain numpy, np.convolve (or scipy's FFT convolution for
very large sums), and np.sum(P**a * Q**(1-a)). No log domain, no tilting."""

from __future__ import annotations

import numpy as np
from scipy.signal import fftconvolve


def rqm_pmf(c: float, delta: float, m: int, q: float, x: float) -> np.ndarray:
    """Lemma 5.1 (Youn et al. 2023, arXiv:2306.11913, eq. (2)) in float64, as one sum per side: the lower
    kept neighbour k ≤ j has weight w_lo(k), the upper one k ≥ j+1 has w_hi(k), independently."""
    x_max = c + delta
    t = (x + x_max) * (m - 1) / (2 * x_max)
    j = min(int(np.floor(t)), m - 2)
    f = t - j
    w_lo = np.array([(1 - q) ** j if k == 0 else q * (1 - q) ** (j - k) for k in range(j + 1)])
    w_hi = {k: (1 - q) ** (m - j - 2) if k == m - 1 else q * (1 - q) ** (k - j - 1) for k in range(j + 1, m)}
    out = np.zeros(m)
    for i in range(m):
        if i <= j:
            out[i] = w_lo[i] * sum(w_hi[k] * ((k - j - 1) + (1 - f)) / (k - i) for k in range(j + 1, m))
        else:
            out[i] = w_hi[i] * sum(w_lo[k] * ((j - k) + f) / (i - k) for k in range(j + 1))
    return out


def pbm_pmf(c: float, theta: float, trials: int, x: float) -> np.ndarray:
    from scipy.stats import binom

    return binom.pmf(np.arange(trials + 1), trials, 0.5 + theta * x / c)


def power(p: np.ndarray, count: int, use_fft: bool = False) -> np.ndarray:
    out = np.ones(1)
    for _ in range(count):
        out = fftconvolve(out, p) if use_fft else np.convolve(out, p)
    return out


def fast_power(p: np.ndarray, count: int) -> np.ndarray:
    """Binary powering with FFT convolution (what a numpy user does for a large n)."""
    result, base = np.ones(1), p
    while count:
        if count & 1:
            result = fftconvolve(result, base)
        count >>= 1
        if count:
            base = fftconvolve(base, base)
    return result


def renyi(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    if alpha == np.inf:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.max(np.log(p / q)))
    if alpha == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.sum(p * np.log(p / q)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return float(np.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1))


def worst_over_k(plus: np.ndarray, minus: np.ndarray, n: int, alphas) -> list[float]:
    """max over k of D_α(A^{k+1} B^{n−1−k} ‖ A^k B^{n−k}) and the reverse, by np.convolve."""
    best = [-np.inf] * len(alphas)
    powers_a = [np.ones(1)]
    powers_b = [np.ones(1)]
    for _ in range(n):
        powers_a.append(np.convolve(powers_a[-1], plus))
        powers_b.append(np.convolve(powers_b[-1], minus))
    rows = [np.convolve(powers_a[j], powers_b[n - j]) for j in range(n + 1)]
    for k in range(n):
        p, q = rows[k + 1], rows[k]
        for index, alpha in enumerate(alphas):
            value = max(renyi(p, q, alpha), renyi(q, p, alpha))
            best[index] = value if np.isnan(value) else max(best[index], value)
    return best
