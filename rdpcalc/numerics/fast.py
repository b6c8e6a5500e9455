"""The fast engine: float64 in the log domain.

A pmf is an array of log-probabilities (−inf for 0). Convolutions are done either directly
in the log domain (log-sum-exp of shifted sums, full relative accuracy in every tail) or, for
large supports, by FFT with exponential tilting (:mod:`.tilted`). Divergences use forms whose
terms are all non-negative, so they neither cancel near α = 1 nor overflow at α = 10⁴.
"""

from __future__ import annotations

import numpy as np

#: Terms of the Taylor series used where |α·u| (or |u| for KL) is below this.
_SERIES_LIMIT = 0.5
_SERIES_TERMS = 22
#: divergences for many orders are formed in blocks of at most this many terms
_BLOCK_ELEMENTS = 2_000_000


def logsumexp(a: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """log Σ exp(a) along ``axis``; −inf for an all −inf slice (a lean scipy.special.logsumexp)."""
    peak = np.max(a, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


def log_convolve(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """log of the convolution of the pmfs exp(la) and exp(lb), directly in the log domain.

    out[s] = log Σ_i exp(la[i] + lb[s−i]); cost O(len(la)·len(lb)), looping over the
    shorter input. Relative accuracy is kept in every entry. ``lb`` may also be a 2-D array
    of rows, each convolved with the 1-D ``la`` (then the loop runs over ``la``).
    """
    if lb.ndim == 2:
        short, long = la, lb
    else:
        short, long = (la, lb) if len(la) <= len(lb) else (lb, la)
    width = long.shape[-1]
    out = np.full(long.shape[:-1] + (len(la) + lb.shape[-1] - 1,), -np.inf)
    with np.errstate(invalid="ignore"):
        for i, value in enumerate(short):
            if value == -np.inf:
                continue
            window = out[..., i : i + width]
            np.logaddexp(window, value + long, out=window)
    return out


def log_power(la: np.ndarray, count: int) -> np.ndarray:
    """log pmf of the sum of ``count`` independent copies (``count`` ≥ 0), by binary powering."""
    result = np.zeros(1)
    base = la
    while count:
        if count & 1:
            result = log_convolve(result, base)
        count >>= 1
        if count:
            base = log_convolve(base, base)
    return result


def log_mixed_power(la: np.ndarray, lb: np.ndarray, k: int, l: int) -> np.ndarray:
    """log pmf of A^{*k} * B^{*l}: k copies of pmf A and l copies of pmf B, direct method."""
    return log_convolve(log_power(la, k), log_power(lb, l))


def log_mixed_power_rows(la: np.ndarray, lb: np.ndarray, n: int) -> np.ndarray:
    """All of A^{*j} * B^{*(n−j)} for j = 0 … n, as the rows of an (n+1) × S array."""
    rows = np.zeros((1, 1))
    for level in iter_mixed_power_levels(la, lb, n):
        rows = level
    return rows


def iter_mixed_power_levels(la: np.ndarray, lb: np.ndarray, n_max: int):
    """Yield, for ℓ = 1 … n_max, the (ℓ+1) × (ℓ(m−1)+1) array of rows A^{*j} * B^{*(ℓ−j)}.

    Built level by level (a Pascal triangle): row j of level ℓ+1 is row j of level ℓ
    convolved with B, and the last row is the last row of level ℓ convolved with A. Each
    level is one vectorized log-domain convolution of all rows, so reaching level n costs
    O(n³ m²/3) element operations: the method of choice up to n of a hundred or two, and
    a sweep over n gets every level on the way.
    """
    if len(la) != len(lb):
        raise ValueError("iter_mixed_power_levels needs two pmfs on the same support")
    m = len(la)
    rows = np.zeros((1, 1))
    with np.errstate(invalid="ignore"):
        for level in range(n_max):
            width = rows.shape[1]
            new = np.full((level + 2, width + m - 1), -np.inf)
            for i, value in enumerate(lb):
                if value == -np.inf:
                    continue
                window = new[: level + 1, i : i + width]
                np.logaddexp(window, value + rows, out=window)
            for i, value in enumerate(la):
                if value == -np.inf:
                    continue
                window = new[level + 1, i : i + width]
                np.logaddexp(window, value + rows[level], out=window)
            rows = new
            yield rows


def renyi_divergences(lp: np.ndarray, lq: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """D_α(P‖Q) for each α in ``alphas`` (each ≥ 1 or +inf), from log pmfs on one support.

    ``lp`` and ``lq`` are 1-D, or 2-D with one pair of pmfs per row; the result has shape
    ``lp.shape[:-1] + (len(alphas),)``. With P̂, Q̂ the normalised pmfs and u = log(P̂/Q̂):

    * α = 1 (KL): Σ Q̂ h(u), h(u) = u eᵘ − eᵘ + 1 ≥ 0;
    * 1 < α < ∞: log1p(Σ Q̂ g(u)) / (α−1), g(u) = e^{αu} − α eᵘ + α − 1 ≥ 0;
    * α = ∞: max u over the support of P.

    g and h vanish to second order at u = 0, so Σ Q̂ g is a sum of non-negative terms whose
    relative accuracy does not depend on how close α is to 1 or P to Q. The identities use
    Σ P̂ = Σ Q̂ = 1, which normalising in the log domain enforces. Each term is formed in the
    log domain, so nothing overflows or underflows. P > 0 where Q = 0 gives +inf.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    one_pair = np.ndim(lp) == 1
    lp = np.atleast_2d(lp)
    lq = np.atleast_2d(lq)
    mismatch = np.any((lq == -np.inf) & (lp > -np.inf), axis=-1)
    lp = lp - logsumexp(lp, axis=-1, keepdims=True)
    lq = lq - logsumexp(lq, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        u = lp - lq  # −inf where P = 0 < Q; NaN where both are 0 or Q = 0 < P
    u[~np.isfinite(u) & ~(u == -np.inf)] = 0.0  # those points carry no weight (Q̂ = 0)
    out = np.empty(lp.shape[:-1] + alphas.shape)
    for index, alpha in enumerate(alphas):
        if alpha == np.inf:
            out[..., index] = np.max(np.where(lp > -np.inf, u, -np.inf), axis=-1)
        elif alpha == 1:
            out[..., index] = np.exp(logsumexp(lq + _log_h(u), axis=-1))
    finite = np.nonzero((alphas > 1) & (alphas < np.inf))[0]
    block = max(1, _BLOCK_ELEMENTS // u.size)
    for start in range(0, len(finite), block):
        chosen = finite[start : start + block]
        orders = alphas[chosen][None, :, None]
        log_sum = logsumexp(lq[:, None, :] + _log_g(u[:, None, :], orders), axis=-1)
        out[:, chosen] = np.logaddexp(0.0, log_sum) / (alphas[chosen] - 1.0)
    out[mismatch] = np.inf
    return out[0] if one_pair else out


def _log_g(u: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """log g(u) for g(u) = e^{αu} − α eᵘ + α − 1 (≥ 0), without cancellation; ``u`` and
    ``alpha`` broadcast against each other (α > 1, β = α − 1).

    * |αu| < ½: g = Σ_{j≥2} α(α^{j−1} − 1) u^j / j!   (series; α^{j−1}−1 via expm1);
    * u > 0:    g = eᵘ·expm1(βu) − β·expm1(u) = eᵘ expm1(βu) (1 − β(1−e^{−u})/expm1(βu));
    * u < 0:    g = β(1 − eᵘ) − eᵘ(1 − e^{βu});   at u = −∞ this is α − 1.
    """
    u, alpha = np.broadcast_arrays(u, alpha)
    out = np.empty(u.shape)
    small = np.abs(alpha * u) < _SERIES_LIMIT
    positive = (u > 0) & ~small
    negative = (u < 0) & ~small
    if np.any(small):
        us, a = u[small], alpha[small]
        log_alpha = np.log(a)
        total = np.zeros_like(us)
        power = us * us / 2.0  # u^j / j! at j = 2
        for j in range(2, _SERIES_TERMS):
            total += np.expm1((j - 1) * log_alpha) * power
            power = power * us / (j + 1)
        with np.errstate(divide="ignore"):
            out[small] = np.log(a * total)
    if np.any(positive):
        up, beta = u[positive], alpha[positive] - 1.0
        log_growth = beta * up + np.log(-np.expm1(-beta * up))  # log expm1(βu), no overflow
        ratio = np.exp(np.log(beta) + np.log(-np.expm1(-up)) - log_growth)
        out[positive] = up + log_growth + np.log1p(-ratio)
    if np.any(negative):
        un, beta = u[negative], alpha[negative] - 1.0
        with np.errstate(invalid="ignore"):
            values = np.log(beta * (-np.expm1(un)) + np.exp(un) * np.expm1(beta * un))
        values[un == -np.inf] = np.log(beta[un == -np.inf])
        out[negative] = values
    return out


def _log_h(u: np.ndarray) -> np.ndarray:
    """log h(u) for h(u) = u eᵘ − eᵘ + 1 (≥ 0), the KL integrand divided by Q.

    * |u| < ½: h = Σ_{j≥2} (j−1) u^j / j!;
    * u > 0:  h = eᵘ (u − 1 + e^{−u});
    * u < 0:  h = 1 − eᵘ (1 − u);  u = −∞: h = 1.
    """
    out = np.empty_like(u)
    small = np.abs(u) < _SERIES_LIMIT
    positive = (u > 0) & ~small
    negative = (u < 0) & ~small
    if np.any(small):
        us = u[small]
        total = np.zeros_like(us)
        power = us * us / 2.0
        for j in range(2, _SERIES_TERMS):
            total += (j - 1) * power
            power = power * us / (j + 1)
        with np.errstate(divide="ignore"):
            out[small] = np.log(total)
    if np.any(positive):
        up = u[positive]
        out[positive] = up + np.log(up - 1 + np.exp(-up))
    if np.any(negative):
        un = u[negative]
        with np.errstate(invalid="ignore"):
            values = np.log1p(-np.exp(un) * (1 - un))
        values[~np.isfinite(un)] = 0.0
        out[negative] = values
    return out
