"""The fast engine: float64 in the log domain.

A pmf is an array of log-probabilities (−inf for 0). Here: convolutions directly in the log
domain (log-sum-exp of shifted sums, full relative accuracy in every tail; the fallback and
the path for a client at an arbitrary input), and divergences in forms whose terms are all
non-negative, so they neither cancel near α = 1 nor overflow at α = 10⁴. The sums of many
clients at ±b come from :mod:`.levels` (tilted direct convolutions and tilted FFTs).
"""

from __future__ import annotations

import math

import numpy as np

from ..logdomain import logsumexp
from . import trees

#: Terms of the Taylor series used where |α·u| (or |u| for KL) is below this.
_SERIES_LIMIT = 0.5
#: the most terms of a series (j = 2 … _SERIES_TERMS − 1), enough at |v| = _SERIES_LIMIT;
#: fewer where the |v| of a call are smaller (:func:`_series_terms`)
_SERIES_TERMS = 22
#: divergences are computed over blocks of rows of about this many numbers (small enough
#: for the processor's cache and for the allocator to reuse the temporaries' memory)
_BLOCK_ELEMENTS = 16_384
#: divergence sums over supports larger than this skip their negligible terms
_PRUNE_ABOVE = 4_096
#: the screen at orders 1 and ≥ 2 is compiled (:func:`.trees.screen_rows`, about three times numpy's
#: speed on two cores) for batches of at least this many numbers (rows × points × orders):
#: below, numpy, as loading the compiler and its cached kernel takes about a second
COMPILED_SCREEN_ABOVE = 10_000_000
#: … or for supports of at least this many points (the sums of large n: the query is long anyway)
COMPILED_SCREEN_POINTS = 8192


def log_convolve(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """log of the convolution of the pmfs exp(la) and exp(lb), directly in the log domain.

    out[s] = log Σ_i exp(la[i] + lb[s−i]); cost O(len(la)·len(lb)), looping over the
    shorter input. Relative accuracy is kept in every entry. ``lb`` may also be a 2-D array
    of rows, each convolved with the 1-D ``la`` (:func:`_log_convolve_rows`).
    """
    if lb.ndim == 2:
        return _log_convolve_rows(la, lb)
    short, long = (la, lb) if len(la) <= len(lb) else (lb, la)
    width = long.shape[-1]
    out = np.full(len(la) + len(lb) - 1, -np.inf)
    with np.errstate(invalid="ignore"):
        for i, value in enumerate(short):
            if value == -np.inf:
                continue
            window = out[i : i + width]
            np.logaddexp(window, value + long, out=window)
    return out


def _log_convolve_rows(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """Each row of ``lb`` convolved with ``la`` (:func:`_log_convolve_batch`)."""
    return _log_convolve_batch(la[None, :], lb)


def log_convolve_each(las: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """Each row of ``las`` (short rows) convolved with the one long ``lb``
    (:func:`_log_convolve_batch`): one pass per column of ``las`` over all rows at once, where
    :func:`log_convolve` row by row makes a log-add-exp per column and row."""
    return _log_convolve_batch(las, lb[None, :])


def _log_convolve_batch(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """Row r of ``la`` convolved with row r of ``lb`` (either may be one row, used for every
    row), in the log domain: out[s] = M(s) + log Σ_i exp(la[i] + lb[s−i] − M(s)) with M(s) the
    largest term, so every term is ≤ 1, the largest is 1, and each entry keeps its relative
    accuracy however small it is. One pass per column of ``la`` (columns that are −inf in every
    row are skipped)."""
    rows, width = np.broadcast_shapes((len(la),), (len(lb),))[0], lb.shape[1]
    size = width + la.shape[1] - 1
    taps = [i for i in range(la.shape[1]) if np.any(la[:, i] > -np.inf)]
    peak = np.full((rows, size), -np.inf)
    for i in taps:
        window = peak[:, i : i + width]
        np.maximum(window, la[:, i : i + 1] + lb, out=window)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    total = np.zeros((rows, size))
    scratch = np.empty((rows, width))
    with np.errstate(invalid="ignore"):
        for i in taps:
            np.add(la[:, i : i + 1], lb, out=scratch)
            scratch -= shift[:, i : i + width]
            np.exp(scratch, out=scratch)
            total[:, i : i + width] += scratch
    with np.errstate(divide="ignore"):
        return np.log(total) + peak


def log_fold(la: np.ndarray, modulus: int) -> np.ndarray:
    """log pmf of S mod ``modulus`` from the log pmf of S ≥ 0 (last axis; 1-D or rows): entry r is
    log Σ_j exp(la[r + j·modulus]), each sum over non-negative terms, so relative accuracy is kept."""
    size = la.shape[-1]
    if size <= modulus:
        return la
    blocks = -(-size // modulus)
    padded = np.full(la.shape[:-1] + (blocks * modulus,), -np.inf)
    padded[..., :size] = la
    return logsumexp(padded.reshape(la.shape[:-1] + (blocks, modulus)), axis=-2)


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


def renyi_divergences(lp: np.ndarray, lq: np.ndarray, alphas: np.ndarray, both: bool = False):
    """D_α(P‖Q) for each α in ``alphas`` (each ≥ 1 or +inf), from log pmfs on one support;
    with ``both``, the pair (D_α(P‖Q), D_α(Q‖P)) from one normalisation.

    ``lp`` and ``lq`` are 1-D, or 2-D with one pair of pmfs per row; a result has shape
    ``lp.shape[:-1] + (len(alphas),)``. With P̂, Q̂ the normalised pmfs and u = log(P̂/Q̂):

    * α = 1 (KL): Σ Q̂ h(u), h(u) = u eᵘ − eᵘ + 1 ≥ 0;
    * 1 < α < ∞: log1p(Σ Q̂ g(u)) / (α−1), g(u) = e^{αu} − α eᵘ + α − 1 ≥ 0;
    * α = ∞: max u over the support of P.

    g and h vanish to second order at u = 0, so Σ Q̂ g is a sum of non-negative terms whose
    relative accuracy does not depend on how close α is to 1 or P to Q. The identities use
    Σ P̂ = Σ Q̂ = 1, which normalising in the log domain enforces. Each term is formed in the
    log domain, so nothing overflows or underflows, as max(log P̂, log Q̂) + log(f(u) e^{−max(u, 0)}):
    where P̂ ≫ Q̂ the term is P̂ times a function of u, never Q̂·f(u) rebuilt from log Q̂ + u,
    which loses ulp(|log Q̂|) (0.5 nats at log Q̂ = −3.5e15, a 60% error). In large batches,
    terms too small to move a row's sum by 1e−20 are skipped (:func:`_pruned_log_sum`). P > 0
    where Q = 0 gives +inf.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    one_pair = np.ndim(lp) == 1
    lp = np.atleast_2d(lp)
    lq = np.atleast_2d(lq)
    results = np.empty((2 if both else 1, len(lp), len(alphas)))
    step = max(1, _BLOCK_ELEMENTS // lp.shape[1])
    for start in range(0, len(lp), step):
        block_p = lp[start : start + step] - logsumexp(lp[start : start + step], axis=-1, keepdims=True)
        block_q = lq[start : start + step] - logsumexp(lq[start : start + step], axis=-1, keepdims=True)
        results[0, start : start + step] = renyi_divergences_rows(block_p, block_q, alphas)
        if both:
            results[1, start : start + step] = renyi_divergences_rows(block_q, block_p, alphas)
    results = [result[0] if one_pair else result for result in results]
    return tuple(results) if both else results[0]


def screened_divergences(lp: np.ndarray, lq: np.ndarray, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quick (D_α(P‖Q), D_α(Q‖P)) per row of 2-D log pmfs, for *ranking* candidates only.

    For α ≥ 2 the plain forms log Σ P^α Q^{1−α} / (α − 1) and max log(P/Q), and for α = 1
    Σ P log(P/Q), with P and Q taken as normalised (they are sums of normalised pmfs, so up to
    rounding): about three times cheaper than :func:`renyi_divergences`. For α ≥ 2 the absolute
    error is below 1e−16·S/(α − 1) ≤ 1e−16·S for a support of S points (S ≤ 4·10⁶ within
    rdpcalc's limits, so < 1e−9). For KL it is below S·2⁻⁵³·Σ P|u|, u = log(P/Q), and
    Σ P|u| = KL + 2 Σ_{P<Q} P log(Q/P) ≤ KL + 2·TV ≤ KL + √(2 KL) (log t ≤ t − 1, then
    Pinsker), so below 4.5e−10·(KL + √(2 KL)) < 1e−9 + 1e−8·KL. Between 1 and 2, where the
    plain form loses digits to cancellation, the orders go through :func:`renyi_divergences`;
    the others through the compiled :func:`.trees.screen_rows` for batches of
    COMPILED_SCREEN_ABOVE numbers or more, or supports of COMPILED_SCREEN_POINTS points or more
    (numpy's :func:`plain_screen` below). The worst-case search ranks configurations with these
    and recomputes the ones within a tolerance of the best (:mod:`rdpcalc.worstcase.secagg`).
    """
    out = np.empty((2, len(lp), len(alphas)))
    accurate = [index for index, alpha in enumerate(alphas) if 1 < alpha < 2]
    if accurate:
        both = renyi_divergences(lp, lq, alphas[accurate], both=True)
        out[0][:, accurate], out[1][:, accurate] = both
    plain = [index for index, alpha in enumerate(alphas) if not 1 < alpha < 2]
    if plain and (lp.size * len(plain) >= COMPILED_SCREEN_ABOVE or lp.shape[-1] >= COMPILED_SCREEN_POINTS):
        out[:, :, plain] = trees.kernels().screen_rows(lp, lq, alphas[plain])
    elif plain:
        out[:, :, plain] = plain_screen(lp, lq, alphas[plain])
    return out[0], out[1]


def plain_screen(lp: np.ndarray, lq: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """:func:`.trees.screen_rows` with numpy (an array (2, rows, orders), orders 1, ≥ 2 or +inf):
    log Σ P^α Q^{1−α} / (α − 1) over the points where the first pmf is positive, max log(P/Q)
    there at α = ∞, Σ P log(P/Q) there at α = 1; the reference the compiled screen is tested
    against, and the screen of small batches (no compiler to load)."""
    out = np.empty((2, len(lp), len(alphas)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for direction, (first, second) in enumerate(((lp, lq), (lq, lp))):
            present = first > -np.inf
            for index, alpha in enumerate(alphas):
                if alpha == np.inf:
                    out[direction, :, index] = np.max(np.where(present, first - second, -np.inf), axis=-1)
                elif alpha == 1:
                    both = present & (second > -np.inf)
                    kl = np.sum(np.where(both, np.exp(first) * (first - second), 0.0), axis=-1)
                    kl[np.any(present & ~both, axis=-1)] = np.inf
                    kl[~np.any(present, axis=-1)] = -np.inf
                    out[direction, :, index] = kl
                else:
                    terms = np.where(present, alpha * first + (1.0 - alpha) * second, -np.inf)
                    out[direction, :, index] = logsumexp(terms, axis=-1) / (alpha - 1.0)
    return out


def renyi_divergences_rows(lp: np.ndarray, lq: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """:func:`renyi_divergences` of normalised 2-D log pmfs, one direction."""
    with np.errstate(invalid="ignore"):
        u = lp - lq
    mismatch = np.zeros(len(lp), dtype=bool)
    if not np.all(np.isfinite(u)):  # some zeros: u is −inf where P = 0 < Q, NaN where both are 0
        mismatch = np.any((lq == -np.inf) & (lp > -np.inf), axis=-1)  # and +inf where Q = 0 < P
        u[~np.isfinite(u) & ~(u == -np.inf)] = 0.0  # no weight (Q̂ = 0), or a mismatched row
    base = np.maximum(lp, lq)  # log Q̂ + max(u, 0), without rounding
    out = np.empty(lp.shape[:-1] + alphas.shape)
    for index, alpha in enumerate(alphas):
        if alpha == np.inf:
            out[:, index] = np.max(np.where(lp > -np.inf, u, -np.inf), axis=-1)
        elif alpha == 1:
            out[:, index] = np.exp(_pruned_log_sum(base, u, _log_h, _log_h_bound))
        else:
            beta = alpha - 1.0
            log_sum = _pruned_log_sum(base, u, lambda v, a=alpha: _log_g(v, a),
                                      lambda v, a=alpha: _log_g_bound(v, a))
            out[:, index] = np.logaddexp(0.0, log_sum) / beta
    out[mismatch] = np.inf
    return out


def _pruned_log_sum(lq: np.ndarray, u: np.ndarray, log_term, log_bound) -> np.ndarray:
    """Per row, log Σ_s exp(lq(s) + log_term(u(s))) (lq is the base max(log P̂, log Q̂) of
    :func:`renyi_divergences`); on supports of more than _PRUNE_ABOVE points, evaluated only
    where the cheap upper bound lq + ``log_bound``(u) ≥ lq + log_term(u) can matter.

    First pass: the points within 80 nats of the largest bound. If what was skipped (at most
    S·e^{threshold}, S the support size) could exceed e^{−46} ≈ 1e−20 of the partial sum,
    the row is redone with the threshold lowered to that level; then the skipped terms are
    provably below 1e−20 of the result.
    """
    if lq.shape[1] <= _PRUNE_ABOVE:
        return logsumexp(lq + log_term(u), axis=-1)
    bound = lq + log_bound(u)
    log_size = math.log(lq.shape[1])
    threshold = np.max(bound, axis=1) - 80.0
    total = _masked_log_sum(lq, u, log_term, bound >= threshold[:, None])
    redo = np.nonzero(threshold + log_size > total - 46.0)[0]
    if len(redo):
        lowered = total[redo] - 46.0 - log_size
        total[redo] = _masked_log_sum(lq[redo], u[redo], log_term, bound[redo] >= lowered[:, None])
    return total


def _masked_log_sum(lq, u, log_term, kept) -> np.ndarray:
    """Per row, log Σ over the kept points of exp(lq + log_term(u)); each row keeps ≥ 1 point."""
    rows, columns = np.nonzero(kept)
    values = lq[rows, columns] + log_term(u[rows, columns])
    starts = np.searchsorted(rows, np.arange(kept.shape[0]))
    peak = np.maximum.reduceat(values, starts)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return peak + np.log(np.add.reduceat(np.exp(values - peak[rows]), starts))


def _series_terms(radius: float) -> int:
    """The J such that the series of g (of h) up to j = J − 1 leaves out less than 2⁻⁵⁶ of its
    first term wherever |v| ≤ ``radius`` < 1: the coefficients are c_j = (1 − α^{1−j})/j! for g
    and (j − 1)/j! for h, and 1 − α^{1−j} ≤ (j − 1)(1 − α^{−1}) (Bernoulli), so c_j/c_2 ≤
    2(j − 1)/j! for both, successive ratios are ≤ |v|, and the rest is at most
    2(J − 1)|v|^{J−2}/(J!(1 − |v|)) of the first term."""
    for terms in range(4, _SERIES_TERMS):
        if 2 * (terms - 1) * radius ** (terms - 2) / (math.factorial(terms) * (1 - radius)) <= 2.0**-56:
            return terms
    return _SERIES_TERMS


def _log_g_bound(u: np.ndarray, alpha: float) -> np.ndarray:
    """An upper bound of :func:`_log_g`: g ≤ e^{αu} + α − 1 ≤ 2 max(e^{αu}, α − 1)."""
    return np.maximum(alpha * u, math.log(alpha - 1.0)) + math.log(2.0) - np.maximum(u, 0.0)


def _log_g(u: np.ndarray, alpha: float) -> np.ndarray:
    """log(g(u)·e^{−max(u, 0)}) for g(u) = e^{αu} − α eᵘ + α − 1 (≥ 0), without cancellation
    (α > 1, β = α − 1); Q̂ g(u) = P̂ g(u) e^{−u}, so for u > 0 this is the term relative to P̂.

    * |αu| < ½: with v = αu, g = Σ_{j≥2} (1 − α^{1−j}) v^j / j!   (series; the coefficients
      −expm1(−(j−1) log α)/j! lie in [0, 1/j!], so nothing overflows at α = 10¹⁵);
    * u > 0:    g e^{−u} = expm1(βu) − β(1 − e^{−u}) = expm1(βu) (1 − β(1−e^{−u})/expm1(βu));
    * u < 0:    g = β(1 − eᵘ) − eᵘ(1 − e^{βu});   at u = −∞ this is α − 1;
    * α = 2:    g = (eᵘ − 1)², as 2 log|expm1(u)| − max(u, 0) (u + 2 log1p(−e^{−u}) above u = 1).
    """
    if alpha == 2.0:  # g(u) = (eᵘ − 1)², exactly
        with np.errstate(divide="ignore"):
            out = 2.0 * np.log(np.abs(np.expm1(np.minimum(u, 1.0)))) - np.clip(u, 0.0, 1.0)
        large = u > 1.0
        if np.any(large):
            out[large] = u[large] + 2.0 * np.log1p(-np.exp(-u[large]))
        return out
    beta = alpha - 1.0
    out = np.empty(u.shape)
    small = np.abs(alpha * u) < _SERIES_LIMIT
    positive = (u > 0) & ~small
    negative = (u < 0) & ~small
    if np.any(small):
        v = alpha * u[small]
        log_alpha = math.log1p(beta) if beta < 1 else math.log(alpha)
        series = np.zeros_like(v)
        for j in range(_series_terms(float(np.max(np.abs(v)))) - 1, 1, -1):
            series = series * v + (-math.expm1(-(j - 1) * log_alpha) / math.factorial(j))
        with np.errstate(divide="ignore"):
            out[small] = 2.0 * np.log(np.abs(v)) + np.log(series) - np.maximum(u[small], 0.0)
    if np.any(positive):
        up = u[positive]
        log_growth = beta * up + np.log(-np.expm1(-beta * up))  # log expm1(βu), no overflow
        ratio = np.exp(math.log(beta) + np.log(-np.expm1(-up)) - log_growth)
        out[positive] = log_growth + np.log1p(-ratio)
    if np.any(negative):
        un = u[negative]
        with np.errstate(invalid="ignore"):
            values = np.log(beta * (-np.expm1(un)) + np.exp(un) * np.expm1(beta * un))
        values[un == -np.inf] = math.log(beta)
        out[negative] = values
    return out


def _log_h_bound(u: np.ndarray) -> np.ndarray:
    """An upper bound of :func:`_log_h`: h ≤ 1 for u ≤ 0 and h e^{−u} ≤ u for u > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(u > 0, np.log(np.where(u > 0, u, 1.0)), 0.0)


def _log_h(u: np.ndarray) -> np.ndarray:
    """log(h(u)·e^{−max(u, 0)}) for h(u) = u eᵘ − eᵘ + 1 (≥ 0), the KL integrand divided by Q
    (for u > 0 divided by P: Q̂ h(u) = P̂ h(u) e^{−u}).

    * |u| < ½: h = Σ_{j≥2} (j−1) u^j / j!;
    * u > 0:  h e^{−u} = u − 1 + e^{−u};
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
        for j in range(2, _series_terms(float(np.max(np.abs(us))))):
            total += (j - 1) * power
            power = power * us / (j + 1)
        with np.errstate(divide="ignore"):
            out[small] = np.log(total) - np.maximum(us, 0.0)
    if np.any(positive):
        up = u[positive]
        out[positive] = np.log(up - 1 + np.exp(-up))
    if np.any(negative):
        un = u[negative]
        with np.errstate(invalid="ignore"):
            values = np.log1p(-np.exp(un) * (1 - un))
        values[~np.isfinite(un)] = 0.0
        out[negative] = values
    return out
