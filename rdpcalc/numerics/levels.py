"""One level of the SecAgg sum: the log pmfs of A^{*j} * B^{*(n−j)} for the wanted j ∈ {0 … n}.

Row j is the pmf of the sum of n clients when j of them hold +b (pmf A) and n − j hold −b
(pmf B). The worst case over k compares rows k+1 and k of level n directly, and the others'
sums of a chosen client are the rows of level n − 1. Two methods, both in float64 with
exponential tilting — for a tilt θ the components become Ã(i) = A(i)e^{θi}/M_A(θ) and
B̃(i) = B(i)e^{θi}/M_B(θ), row j becomes p_j(s)e^{θs}/(M_A^j M_B^{n−j}), and undoing the tilt
gives p_j(s) — so that every tail keeps its relative accuracy:

* ``direct`` (small n): the powers Ã^{*j}, B̃^{*l} by repeated direct convolution, then one
  direct convolution per row (the powers are computed once and reused by every row), in the *linear* domain.
  A direct convolution of non-negative numbers has no cancellation, so every entry is
  accurate to a few ulps per stage unless it underflows: an entry of the tilted row ≥
  ``TINY`` is trusted, as the products lost to underflow are below 10⁻³⁰⁸ each. One tilt
  covers ~620 nats below the peak of every row; tilts are added, aimed by the cumulant
  tables at the leftmost uncovered point, until every point of the support is covered.
  Cost O(n³m²/6) multiply-adds per tilt (n²m²/2 for the powers).
* ``fft`` (large n, components of full support): tilted FFTs. An FFT is accurate to ~1e−16
  of its largest value only, so on its own it loses every tail that D_α needs at large α;
  a tilt puts the peak of the tilted row anywhere, and the points within a factor TRUST of
  that peak are read to ~1e−13. Every row advances from the left, one tilt (a window of
  about ±3.7 standard deviations) per step; rows of nearby j share each tilt, so one
  batch of FFTs serves all of them (:func:`_fft_rows`). The n-th powers are taken in the
  frequency domain. Cost O(n · tilts · w log w), w ∝ √n·m, tilts ∝ √n.

Both return −inf exactly off the support. If the tilts fail to cover a row (which needs
pathological components), :class:`TiltingFailed` is raised and the caller falls back to the
log-domain convolution of :mod:`.fast`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import resources
from ..logdomain import logsumexp

#: a point of an FFT window is trusted where the tilted row is at least TRUST × its peak
#: (an FFT is accurate to ~1e−16 of its largest value: ~1e−13 relative there)
TRUST = 1e-3
#: tail mass of a tilted row beyond which a circular (aliased) FFT may wrap around
ALIAS = 1e-24
#: an entry of a tilted row computed by direct convolution is trusted at or above this value.
#: The tilted components and powers are pmfs (sums 1), so convolving one with another does
#: not grow an absolute error, and each stage drops less than 2e-300 per entry to _FLUSH and
#: underflow: a row of n clients is off by < 4n·1e-300 absolute, far below an ulp of TINY.
TINY = 1e-270
#: inputs below this are set to zero before convolving (subnormal arithmetic is several
#: times slower)
_FLUSH = 1e-300
#: nats below its peak that a direct tilt is aimed to reach (log(1/TINY) less a margin for the
#: saddlepoint approximation and the peak's own height)
_DIRECT_REACH = 560.0
#: the ``direct`` method is used up to this n (or whenever a component has zeros)
DIRECT_MAX_N = 128
#: sweeps over n up to this largest n run the Pascal recursion (:func:`sweep_levels`)
SWEEP_MAX_N = 256
#: the direct method gives up after this many tilts of one level
MAX_TILTS = 400
#: batches of the fft method hold at most this many numbers per array
BATCH_ELEMENTS = 2_000_000
#: half-width of a trusted window in standard deviations of the tilted row
_Z = math.sqrt(-2 * math.log(TRUST))
#: rows of the fft method whose j fall in one span of this many share their tilts
_BLOCK = 16
#: points of the θ grid of the cumulant tables (the direct method only aims with them)
_GRID_POINTS = 2001
_DIRECT_GRID_POINTS = 401
#: components of up to this many points are transformed by a product with the DFT matrix,
#: wider ones by an FFT
_DFT_MAX_POINTS = 64


class TiltingFailed(ArithmeticError):
    """The tilts do not cover a row (which needs pathological components)."""


def level_rows(la: np.ndarray, lb: np.ndarray, n: int, js: Sequence[int] | None = None,
               method: str | None = None) -> np.ndarray:
    """log pmf of A^{*j} * B^{*(n−j)} for each j in ``js`` (default 0 … n), as rows of an
    array of width n(m−1)+1. ``la``, ``lb``: log pmfs on {0 … m−1}. ``method`` forces
    ``direct`` or ``fft`` (default: ``direct`` up to :data:`DIRECT_MAX_N` or when a component
    has zeros, else ``fft``; each tries the other where its tilts cannot cover a row)."""
    la = np.asarray(la, dtype=np.float64)
    lb = np.asarray(lb, dtype=np.float64)
    if len(la) != len(lb):
        raise ValueError("level_rows needs two pmfs on the same support")
    js = np.arange(n + 1) if js is None else np.asarray(js, dtype=np.int64)
    if len(js) and (js.min() < 0 or js.max() > n):
        raise ValueError(f"rows must lie in [0, {n}]")
    if n == 0 or len(js) == 0:
        return np.zeros((len(js), 1))
    full_support = bool(np.all(np.isfinite(la)) and np.all(np.isfinite(lb)))
    fft_first = method == "fft" or (method is None and n > DIRECT_MAX_N and full_support)
    if fft_first:
        if not full_support:
            raise TiltingFailed("the fft method needs components with full support")
        try:
            return _fft_rows(la, lb, n, js)
        except TiltingFailed:
            if method == "fft":
                raise
    # (nearly periodic components, e.g. mass at both ends only, make the FFT windows patchy)
    try:
        return _direct_rows(la, lb, n, js)
    except TiltingFailed:
        if fft_first or method == "direct" or not full_support:
            raise
    return _fft_rows(la, lb, n, js)


def window_rows(la: np.ndarray, lb: np.ndarray, n: int, js: Sequence[int], left: Sequence[int], width: int) -> np.ndarray:
    """log pmf of A^{*j} * B^{*(n−j)} for each j in ``js`` on the ``width`` points from left[i]
    on (row i's column c is the point left[i] + c; −inf past the support), by the tilted FFTs
    of the ``fft`` method started at the window's left end instead of 0: O(width log width) per
    tilt instead of O(n·m log). Needs components of full support; where the tilts do not
    cover a window, the rows of the ``direct`` method up to n = DIRECT_MAX_N, else
    :class:`TiltingFailed`."""
    la = np.asarray(la, dtype=np.float64)
    lb = np.asarray(lb, dtype=np.float64)
    if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
        raise TiltingFailed("windowed rows need components with full support")
    js, left = np.asarray(js, dtype=np.int64), np.asarray(left, dtype=np.int64)
    try:
        return _fft_rows(la, lb, n, js, left, width)
    except TiltingFailed:
        if n > DIRECT_MAX_N:
            raise
    full = _direct_rows(la, lb, n, js)
    columns = left[:, None] + np.arange(width)[None, :]
    inside = columns < full.shape[1]
    return np.where(inside, np.take_along_axis(full, np.minimum(columns, full.shape[1] - 1), axis=1), -np.inf)


class _CumulantTables:
    """K(θ) = log Σ_i p(i)e^{θi}, the tilted mean μ(θ) and variance v(θ) of each component
    on a grid of θ; a row's are j·(A's) + (n−j)·(B's)."""

    def __init__(self, la: np.ndarray, lb: np.ndarray, n: int, points: int = _GRID_POINTS):
        steepest = max(_steepest(la), _steepest(lb))
        reach = steepest + math.log(n * (len(la) - 1) + 1) + 40.0
        self.theta = _theta_grid(reach, max(_variance(np.exp(l)[None, :])[0] for l in (la, lb)), points)
        self.cgf, self.mean, self.var = zip(*(cumulants(l, self.theta) for l in (la, lb)), strict=True)

    def mirrored(self, m: int) -> _CumulantTables:
        """The tables of the mirrored components p(m−1−i): K'(θ) = θ(m−1) + K(−θ), μ'(θ) =
        m−1 − μ(−θ), v'(θ) = v(−θ) (the grid is symmetric)."""
        out = object.__new__(_CumulantTables)
        out.theta = self.theta
        out.cgf = tuple(self.theta * (m - 1) + k[::-1] for k in self.cgf)
        out.mean = tuple((m - 1) - mu[::-1] for mu in self.mean)
        out.var = tuple(v[::-1] for v in self.var)
        return out

    def theta_for_left_edge(self, js: np.ndarray, n: int, z: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Per row j, the θ at which μ_j(θ) − z·σ_j(θ) (the left edge of the row's window)
        reaches ``target``: a binary search over the grid, O(rows · log grid)."""
        def edge(index):
            mean = js * self.mean[0][index] + (n - js) * self.mean[1][index]
            var = js * self.var[0][index] + (n - js) * self.var[1][index]
            return mean - z * np.sqrt(var)

        lo = np.zeros(len(js), dtype=np.int64)
        hi = np.full(len(js), len(self.theta) - 1)
        while np.any(hi - lo > 1):
            mid = (lo + hi) // 2
            below = edge(mid) < target
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return self._between(hi, edge(lo), edge(hi), target)

    def theta_for_reach(self, js: np.ndarray, n: int, target: np.ndarray, reach: float) -> np.ndarray:
        """Per row j, the largest θ of the grid at which the row tilted by θ is predicted to
        be within e^{−reach} of its peak at ``target``: log p_j(s) + θs − K_j(θ) ≈
        −(K_j(θ) − θs − min_θ' (K_j(θ') − θ's)) by the saddlepoint, a convex function of θ."""
        excess = (js[:, None] * self.cgf[0][None, :] + (n - js)[:, None] * self.cgf[1][None, :]
                  - self.theta[None, :] * target[:, None])
        lowest = np.argmin(excess, axis=1)
        excess -= excess[np.arange(len(js)), lowest][:, None]
        within = (excess <= reach) & (np.arange(len(self.theta))[None, :] >= lowest[:, None])
        return self.theta[lowest + np.sum(within, axis=1) - 1]

    def _between(self, index, lo, hi, target):
        with np.errstate(invalid="ignore", divide="ignore"):
            fraction = np.clip(np.where(hi > lo, (target - lo) / (hi - lo), 1.0), 0.0, 1.0)
        return self.theta[index - 1] + fraction * (self.theta[index] - self.theta[index - 1])

    def cgf_at(self, js: np.ndarray, n: int, theta: np.ndarray) -> np.ndarray:
        """The rows' K at θ within the grid (rows × points), interpolated linearly; a chord
        of a convex function lies above it, so this never underestimates K."""
        index = np.clip(np.searchsorted(self.theta, theta, side="right") - 1, 0, len(self.theta) - 2)
        fraction = np.clip((theta - self.theta[index]) / (self.theta[index + 1] - self.theta[index]), 0.0, 1.0)
        out = np.zeros(theta.shape)
        for count, table in ((js, self.cgf[0]), (n - js, self.cgf[1])):
            out += count[:, None] * ((1 - fraction) * table[index] + fraction * table[index + 1])
        return out


def _theta_grid(reach: float, variance: float, points: int) -> np.ndarray:
    """A θ grid on [−reach, reach], symmetric about 0: ``points`` evenly spaced, merged with
    ``points`` spaced evenly in asinh(θ·(1 + v)) (v: the larger component variance at θ = 0).
    A tilt moves a component's mean by about v·dθ near θ = 0, so the even grid alone is too
    coarse to aim the tilts of wide components (a discrete Gaussian of s = 200 has v = 4·10⁴:
    its whole bulk lies within one step of 0.05); the asinh part steps by ~1/(v·points) there
    and by a constant fraction of θ beyond."""
    scale = 1.0 + variance
    half = points // 2
    even = np.arange(1, half + 1) * (reach / half)
    fine = np.sinh(np.arange(1, half + 1) * (math.asinh(reach * scale) / half)) / scale
    positive = np.unique(np.concatenate([even, fine]))
    return np.concatenate([-positive[::-1], [0.0], positive])


def _steepest(l: np.ndarray) -> float:
    finite = l[np.isfinite(l)]
    return float(np.max(np.abs(np.diff(finite)))) if len(finite) > 1 else 0.0


def _tilt(l: np.ndarray, theta: float) -> tuple[np.ndarray, float, int]:
    """The tilted, normalised pmf exp(l(i) + θ(i − c) − K_c(θ)), K_c(θ) = K(θ) − θc, and c, the
    tilted pmf's mode. Centring at the mode keeps every exponent near the log pmf's own size:
    uncentred, θi and K(θ) can be many times |log p| (a steep pmf and a large θ) and cancel,
    and their rounding would then exceed the entries' accuracy."""
    exponents = _exponents(l, np.array([theta]))[0]
    centre = int(np.argmax(exponents))
    with np.errstate(invalid="ignore"):
        centred = np.where(np.isfinite(l), l + theta * (np.arange(len(l)) - centre), -np.inf)
    k = float(logsumexp(centred))
    return np.exp(centred - k), k, centre


def _untilt(js: np.ndarray, n: int, theta: float, a: tuple[float, int], b: tuple[float, int],
            s: np.ndarray) -> np.ndarray:
    """The term that undoes the tilt θ of rows j (a row each) at the points s: with A and B
    tilted about their centres c_A, c_B (:func:`_tilt`), log p_j(s) = log(tilted row) +
    j·K_A + (n − j)·K_B − θ(s − j·c_A − (n − j)·c_B)."""
    (k_a, centre_a), (k_b, centre_b) = a, b
    offsets = s[None, :] - (js * centre_a + (n - js) * centre_b)[:, None]
    return (js * k_a + (n - js) * k_b)[:, None] - theta * offsets


def _exponents(l: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """l(i) + θi per θ (a row each), −inf where l is."""
    with np.errstate(invalid="ignore"):
        t = l[None, :] + theta[:, None] * np.arange(len(l))[None, :]
    t[:, ~np.isfinite(l)] = -np.inf
    return t


def log_mgf(l: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """K(θ) = log Σ_i e^{l(i) + θi} for each θ: the cumulant generating function of a log pmf
    on 0 … m−1 (of any log measure)."""
    return logsumexp(_exponents(l, theta), axis=1)


def cumulants(l: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per θ: K(θ) and the mean and variance of the pmf tilted by θ."""
    tilted, k = _tilt_rows(l, theta)
    return k, tilted @ np.arange(len(l)), _variance(tilted)


def _tilt_rows(l: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per θ, the tilted normalised pmf exp(l(i) + θi − K(θ)) (a row each; zeros stay
    zeros) and K(θ)."""
    t = _exponents(l, theta)
    k = logsumexp(t, axis=1)
    return np.exp(t - k[:, None]), k


def _variance(tilted: np.ndarray) -> np.ndarray:
    """Variance of each row's tilted pmf (rows of probabilities on 0 … m−1)."""
    i = np.arange(tilted.shape[1])
    mean = tilted @ i
    return np.maximum(tilted @ (i * i) - mean * mean, 0.0)


# ------------------------------------------------------------------ direct
def _direct_rows(la, lb, n, js, best: np.ndarray | None = None, tilts: list | None = None) -> np.ndarray:
    """The first tilt (θ = 0) computes whole rows. Where points are still missing, the next
    tilt is aimed by the cumulant tables (:meth:`_CumulantTables.theta_for_reach`) at the
    first missing point and, when rows miss only a prefix and/or a suffix (the usual
    tails), computes just that prefix (a suffix is the prefix of the mirrored problem):
    the first w outputs of a convolution need only the first w inputs, so a tail of
    width w costs O(w²) per row instead of O(n²m²).

    ``best`` (rows of log p, −inf where missing) skips the first tilt and only fills the
    gaps; the tilts used are appended to ``tilts``."""
    size = n * (len(la) - 1) + 1
    full_support = bool(np.all(np.isfinite(la)) and np.all(np.isfinite(lb)))
    support = None if full_support else _support(la, lb, n, js, size)
    mirrored = (la[::-1].copy(), lb[::-1].copy())
    if best is None:
        best = np.full((len(js), size), -np.inf)
        _apply_tilt(best, (la, lb), n, js, np.arange(len(js)), 0.0, size, False, tilts)
    tables: dict[bool, _CumulantTables] = {}
    missing_before = math.inf
    for _ in range(MAX_TILTS):
        missing = best == -np.inf
        if support is not None:
            missing &= support
        count = int(np.count_nonzero(missing))
        if count == 0:
            return best
        if count >= missing_before:
            break
        missing_before = count
        rows, width, from_right, target = _next_tilt(missing, size)
        if not tables:  # only levels that need a second tilt pay for them
            tables[False] = _CumulantTables(la, lb, n, _DIRECT_GRID_POINTS)
            tables[True] = tables[False].mirrored(len(la))
        theta = float(np.min(tables[from_right].theta_for_reach(js[rows], n, np.full(len(rows), float(target)),
                                                                _DIRECT_REACH)))
        _apply_tilt(best, mirrored if from_right else (la, lb), n, js, rows, theta, width, from_right, tilts)
    raise TiltingFailed(f"direct tilts do not cover level {n}")


def _apply_tilt(best, components, n, js, rows, theta, width, from_right, tilts) -> None:
    """Fill the missing points of the first ``width`` outputs of ``rows`` (of the last ``width``
    outputs with the mirrored components, if ``from_right``) where the tilt θ trusts them. A
    point keeps the value of the first tilt that trusted it: θ = 0 covers every row within
    ~620 nats of its peak, and a later tilt's larger corrections would only add rounding."""
    values = _tilted_prefix(*components, n, js[rows], theta, width)
    size = best.shape[1]
    block = best[rows, size - width :] if from_right else best[rows, :width]
    target = block[:, ::-1] if from_right else block
    np.copyto(target, values, where=(values > -np.inf) & (target == -np.inf))
    if from_right:
        best[rows, size - width :] = block
    else:
        best[rows, :width] = block
    if tilts is not None:
        tilts.append(-theta if from_right else theta)


def _next_tilt(missing: np.ndarray, size: int) -> tuple[np.ndarray, int, bool, int]:
    """What the next direct tilt computes: (rows, width, from the right?, target point).
    Missing prefixes first, then suffixes (as prefixes of the mirrored problem), each only
    as wide as the widest one; whole rows, aimed at their first missing point, when only
    holes inside rows remain."""
    pending = np.nonzero(np.any(missing, axis=1))[0]
    present = ~missing[pending]
    prefix = np.where(np.any(present, axis=1), np.argmax(present, axis=1), size)
    suffix = np.where(np.any(present, axis=1), np.argmax(present[:, ::-1], axis=1), size)
    if np.any(prefix > 0):
        return pending[prefix > 0], int(np.max(prefix)), False, 0
    if np.any(suffix > 0):
        return pending[suffix > 0], int(np.max(suffix)), True, 0
    return pending, size, False, int(np.min(np.argmax(missing[pending], axis=1)))


def _support(la, lb, n, js, size) -> np.ndarray:
    """Where each row is non-zero (boolean convolutions of the components' supports)."""
    powers_a = _powers(np.isfinite(la).astype(float), int(js.max()), size, clip=True)
    powers_b = _powers(np.isfinite(lb).astype(float), int(n - js.min()), size, clip=True)
    return np.array([np.convolve(powers_a[j], powers_b[n - j]) > 0.5 for j in js])


def _powers(a: np.ndarray, count: int, width: int, clip: bool = False) -> list[np.ndarray]:
    """[a^{*0}, a^{*1}, …, a^{*count}] by repeated direct convolution, each cut to its first
    ``width`` entries (which the cut does not change); with ``clip`` each power is capped at
    1 (a support indicator), otherwise entries below _FLUSH are zeroed."""
    out = [np.ones(1)]
    for _ in range(count):
        power = np.convolve(out[-1], a)[:width]
        if clip:
            np.minimum(power, 1.0, out=power)
        else:
            power[power < _FLUSH] = 0.0
        out.append(power)
    return out


def _tilted_prefix(la, lb, n, js, theta, width) -> np.ndarray:
    """log p_j(s) for s < ``width`` where the tilted row Ã^{*j} * B̃^{*(n−j)} (linear, summing
    to 1) is trusted (≥ TINY), −inf elsewhere; the tilt is undone with −θs + j·K_A(θ) +
    (n−j)·K_B(θ) (:func:`_untilt`)."""
    a, k_a, centre_a = _tilt(la, theta)
    b, k_b, centre_b = _tilt(lb, theta)
    a[a < _FLUSH] = 0.0
    b[b < _FLUSH] = 0.0
    powers_a = _powers(a, int(js.max()), width)
    powers_b = _powers(b, int(n - js.min()), width)
    values = np.zeros((len(js), width))
    for r, j in enumerate(js):
        row = np.convolve(powers_a[j], powers_b[n - j])[:width]
        values[r, : len(row)] = row
    untrusted = values < TINY
    with np.errstate(divide="ignore"):
        np.log(values, out=values)
    values += _untilt(js, n, theta, (k_a, centre_a), (k_b, centre_b), np.arange(width))
    values[untrusted] = -np.inf
    return values


# ------------------------------------------------------------------ sweeps
def sweep_levels(la: np.ndarray, lb: np.ndarray, ns: Sequence[int]):
    """Yield (n, rows j = 0 … n of level n) for each n in ``ns``, in ascending order.

    Up to n = SWEEP_MAX_N and for components of full support, by one pass of the Pascal
    recursion per tilt: row j of level ℓ+1 is row j of level ℓ convolved with B̃ (the last
    row: row ℓ convolved with Ã), in the linear domain under each tilt that the direct
    method used for the largest level. Each step convolves with a pmf, so absolute errors
    do not grow and a point is trusted under the same rule as the direct method's (≥ TINY);
    a level takes each point from a tilt under which it is trusted, and the direct method
    fills what none covers. Cost O(n³m²/3) multiply-adds per tilt for the whole sweep,
    about twice one level's. Otherwise, each level by :func:`level_rows`.
    """
    wanted = sorted(set(ns))
    full_support = bool(np.all(np.isfinite(la)) and np.all(np.isfinite(lb)))
    if not wanted or wanted[-1] > SWEEP_MAX_N or not full_support:
        for n in wanted:
            yield n, level_rows(la, lb, n)
        return
    top = wanted[-1]
    tilts: list[float] = []
    top_rows = _direct_rows(la, lb, top, np.arange(top + 1), tilts=tilts)
    passes = [_PascalPass(la, lb, theta) for theta in dict.fromkeys(tilts)]
    for n in range(1, top):
        for tilted in passes:
            tilted.advance()
        if n in wanted:
            best = passes[0].log_rows(slice(None))  # θ = 0, the direct method's first tilt
            for tilted in passes[1:]:
                missing = best == -np.inf
                for columns in _missing_columns(missing):
                    values, block = tilted.log_rows(columns), best[:, columns]
                    np.copyto(block, values, where=(values > -np.inf) & (block == -np.inf))
            yield n, _direct_rows(la, lb, n, np.arange(n + 1), best=best)
    yield top, top_rows


class _PascalPass:
    """The rows of successive levels under one tilt θ, linear, each a pmf."""

    def __init__(self, la: np.ndarray, lb: np.ndarray, theta: float):
        self.theta = theta
        self.a, *self.untilt_a = _tilt(la, theta)
        self.b, *self.untilt_b = _tilt(lb, theta)
        self.a[self.a < _FLUSH] = 0.0
        self.b[self.b < _FLUSH] = 0.0
        self.rows = [np.ones(1)]

    def advance(self) -> None:
        """From level ℓ to ℓ+1: A^{*j} B^{*(ℓ+1−j)} = (A^{*j} B^{*(ℓ−j)}) * B, and the last row × A."""
        rows = [np.convolve(row, self.b) for row in self.rows] + [np.convolve(self.rows[-1], self.a)]
        for row in rows:
            row[row < _FLUSH] = 0.0
        self.rows = rows

    def log_rows(self, columns: slice) -> np.ndarray:
        """log p of the current level on ``columns`` where trusted (≥ TINY), −inf elsewhere."""
        n = len(self.rows) - 1
        tilted = np.array([row[columns] for row in self.rows])
        untrusted = tilted < TINY
        with np.errstate(divide="ignore"):
            values = np.log(tilted)
        s = np.arange(len(self.rows[0]))[columns]
        values += _untilt(np.arange(n + 1), n, self.theta, self.untilt_a, self.untilt_b, s)
        values[untrusted] = -np.inf
        return values


def _missing_columns(missing: np.ndarray) -> list[slice]:
    """Column slices that hold every missing point: the missing prefix and suffix of the
    columns, or all columns if some are missing in between."""
    columns = np.any(missing, axis=0)
    if not np.any(columns):
        return []
    present = np.nonzero(~columns)[0]
    if len(present) == 0:
        return [slice(None)]
    first, last = int(present[0]), int(present[-1])
    if np.any(columns[first : last + 1]):
        return [slice(None)]
    return [part for part in (slice(0, first), slice(last + 1, len(columns))) if part.stop - part.start > 0]


# ------------------------------------------------------------------ fft
def _fft_rows(la, lb, n, js, left: np.ndarray | None = None, width: int | None = None) -> np.ndarray:
    """Every row advances from the left: [0, s_left) is covered, and each step covers the
    run of trusted points from s_left on. Rows are grouped in blocks of nearby j that share
    one tilt per step (their spectra then follow from each other by products, see
    :func:`_fft_windows`): the θ that puts the window's left edge (z standard deviations left
    of the tilted mean) at s_left for the block's most lagging row, which binds. Skewed
    tails make windows narrower than a Gaussian's, so z adapts per row: a binding row that
    missed its s_left halves z (down to 0, the window centred on s_left; a row that still
    makes no progress fails), and z grows back towards _Z after each success.
    """
    size = n * (len(la) - 1) + 1
    tables = _CumulantTables(la, lb, n)
    left = np.zeros(len(js), dtype=np.int64) if left is None else np.asarray(left, dtype=np.int64)
    width = size if width is None else width
    end = np.minimum(size, left + width)  # row r is wanted on [left[r], end[r])
    best = np.full((len(js), width), -np.inf)
    block_of = np.cumsum(np.r_[0, np.diff(js // _BLOCK) != 0])
    s_left = left.copy()
    z = np.full(len(js), _Z)
    active = np.arange(len(js))
    for _ in range(8 * size * _BLOCK):  # every step, each block's binding row advances or halves its z
        if len(active) == 0:
            return best
        j, start = js[active], s_left[active]
        blocks, row_block = np.unique(block_of[active], return_inverse=True)
        wanted = tables.theta_for_left_edge(j, n, z[active], start.astype(float))
        block_theta = _reduce(np.minimum, row_block, wanted, len(blocks), np.inf)
        binding = wanted == block_theta[row_block]
        tilted_a, k_a = _tilt_rows(la, block_theta)
        tilted_b, k_b = _tilt_rows(lb, block_theta)
        theta = block_theta[row_block]
        cgf = j * k_a[row_block] + (n - j) * k_b[row_block]
        s_dn, s_up = _tail_limits(tables, j, n, theta, cgf, size)
        sd = np.sqrt(j * _variance(tilted_a)[row_block] + (n - j) * _variance(tilted_b)[row_block])
        wanted_end = np.minimum(size - 1, start + np.ceil(2.5 * _Z * sd).astype(np.int64))
        origin = _reduce(np.minimum, row_block, start, len(blocks), size)
        need = np.maximum(s_up - start, wanted_end - s_dn) + 1 + start - origin[row_block]
        length = _reduce(np.maximum, row_block, need, len(blocks), 0)
        new_left = start.copy()
        for chosen in _batches(length, np.bincount(row_block, minlength=len(blocks))):
            rows = np.nonzero(np.isin(row_block, chosen))[0]
            local = np.searchsorted(chosen, row_block[rows])
            new_left[rows] = _fft_windows(tilted_a[chosen], tilted_b[chosen], origin[chosen], int(np.max(length[chosen])),
                                          n, local, j[rows], theta[rows], cgf[rows], s_dn[rows], start[rows],
                                          best, active[rows], left[active[rows]], end[active[rows]])
        stuck = new_left <= start
        if np.any(stuck & binding & (z[active] == 0.0)):
            raise TiltingFailed(f"no tilt covers a point of level {n}")
        shrunk = np.where(z[active] > 0.2, z[active] / 2, 0.0)
        z[active] = np.where(stuck, np.where(binding, shrunk, z[active]), np.minimum(_Z, 1.5 * z[active]))
        s_left[active] = new_left
        active = active[s_left[active] < end[active]]
    raise TiltingFailed(f"fft tilts do not cover level {n}")


def _reduce(ufunc, groups: np.ndarray, values: np.ndarray, count: int, initial) -> np.ndarray:
    """Per group, ufunc (np.minimum or np.maximum) over its values; ``initial`` if empty."""
    out = np.full(count, initial, dtype=np.result_type(values, type(initial)))
    ufunc.at(out, groups, values)
    return out


def _batches(lengths: np.ndarray, rows: np.ndarray):
    """Sorted arrays of block indices, blocks of similar FFT length together, each batch
    holding at most BATCH_ELEMENTS numbers (rows × length) unless one block alone is larger."""
    order = np.argsort(lengths, kind="stable")
    start = 0
    while start < len(order):
        stop, count = start + 1, rows[order[start]]
        while stop < len(order) and (count + rows[order[stop]]) * lengths[order[stop]] <= BATCH_ELEMENTS:
            count += rows[order[stop]]
            stop += 1
        yield np.sort(order[start:stop])
        start = stop


def _fft_windows(tilted_a, tilted_b, origin, length, n, block, j, theta, cgf, s_dn, s_left, best, rows, offset,
                 end) -> np.ndarray:
    """One step for a batch of blocks: block b is tilted by one θ (components ``tilted_a[b]``,
    ``tilted_b[b]``) and read by a circular convolution of ``length`` whose position 0 is
    ``origin[b]``. Row r (of block ``block[r]``, row j[r] of the level, K(θ) = cgf[r]) gets
    log p written into best[rows[r]] (whose column 0 is the point ``offset[r]``) on its run of
    trusted points (tilted value ≥ TRUST × the peak) from s_left[r] on, up to ``end[r]``
    (excluded); returns where each run ends (s_left where it is empty).

    Aliasing: the tilted row has mass < ALIAS outside [s_dn, s_up], and ``length`` >
    s_up − s_left + (s_left − origin), so every alias s ± length of a point s_left ≤ s <
    s_dn + length lies outside that window: those points are read with aliasing error
    < 2·ALIAS, and the run is cut there.

    Spectra: the m-point components are transformed directly (a product with the DFT
    matrix, cheaper than an FFT of mostly zeros). Row j's spectrum φ_A^j φ_B^{n−j} is, for
    the block's rows j_lo … j_hi, C · φ_A^{j−j_lo} · φ_B^{j_hi−j} with C = φ_A^{j_lo} φ_B^{n−j_hi}
    (times the phase e^{2πi f·origin/length} that moves the origin to position 0) taken
    as exp(j_lo log φ_A + (n−j_hi) log φ_B): two products per row and frequency, no
    division, and an exact zero of a spectrum stays a zero. Frequencies where |φ_A^j φ_B^{n−j}|
    is below e^{−80} for every row (its log is linear in j, so the block's end rows bound
    it) are left at zero: they move no output by more than 1e−34, while trusted points are
    ≥ 1e−3/length.
    """
    from scipy import fft  # imported here: the CLI should not pay for it at start-up

    length = fft.next_fast_len(max(length, tilted_a.shape[1]), real=True)
    frequencies = np.arange(length // 2 + 1)
    if tilted_a.shape[1] <= _DFT_MAX_POINTS:
        angles = (2 * np.pi / length) * np.outer(np.arange(tilted_a.shape[1]), frequencies)
        cos, sin = np.cos(angles), np.sin(angles)
        spectra = [(t @ cos) - 1j * (t @ sin) for t in (tilted_a, tilted_b)]
    else:
        spectra = [fft.rfft(t, length, axis=1, workers=resources.threads()) for t in (tilted_a, tilted_b)]
    with np.errstate(divide="ignore"):
        log_modulus = [np.log(np.abs(spectrum)) for spectrum in spectra]
    blocks = len(tilted_a)
    j_lo = _reduce(np.minimum, block, j, blocks, n)
    j_hi = _reduce(np.maximum, block, j, blocks, 0)
    with np.errstate(invalid="ignore"):
        ends = np.maximum(*(_power_log(log_modulus, count, n) for count in (j_lo, j_hi)))
    significant = np.nonzero(np.any(ends > -80.0, axis=0))[0]
    top = int(significant[-1]) + 1 if len(significant) else 1

    a, b = (spectrum[:, :top] for spectrum in spectra)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a, log_b = np.log(a), np.log(b)
        exponent = (np.where(j_lo[:, None] > 0, j_lo[:, None] * log_a, 0.0)
                    + np.where((n - j_hi)[:, None] > 0, (n - j_hi)[:, None] * log_b, 0.0))
    shift = (origin[:, None] * frequencies[None, :top]) % length  # exact integers: the phase stays accurate
    common = np.exp(exponent + 1j * (2 * np.pi / length) * shift)
    span = int(np.max(j_hi - j_lo)) + 1
    powers_a, powers_b = (_powers_table(spectrum, span) for spectrum in (a, b))
    product = np.zeros((len(j), len(frequencies)), dtype=np.complex128)
    product[:, :top] = common[block] * powers_a[j - j_lo[block], block] * powers_b[j_hi[block] - j, block]
    circular = fft.irfft(product, length, axis=1, workers=resources.threads())

    first = s_left - origin[block]
    stop = np.minimum(np.minimum(length, s_dn - origin[block] + length), end - origin[block])
    position = np.arange(length)[None, :]
    untrusted = ~((circular >= TRUST * np.max(circular, axis=1)[:, None]) & (circular > 0))
    breaks = (untrusted & (position >= first[:, None])) | (position >= stop[:, None])
    run_end = np.where(np.any(breaks, axis=1), np.argmax(breaks, axis=1), length)
    for r in np.nonzero(run_end > first)[0]:
        s = np.arange(s_left[r], s_left[r] + run_end[r] - first[r])
        best[rows[r], s_left[r] - offset[r] : s[-1] + 1 - offset[r]] = (np.log(circular[r, first[r] : run_end[r]])
                                                                         - theta[r] * s + cgf[r])
    return np.maximum(origin[block] + run_end, s_left)


def _powers_table(spectrum: np.ndarray, span: int) -> np.ndarray:
    """[φ^0, φ^1, …, φ^(span−1)] of each block's spectrum, shape (span, blocks, frequencies)."""
    out = np.ones((span,) + spectrum.shape, dtype=np.complex128)
    if span > 1:
        out[1:] = np.cumprod(np.broadcast_to(spectrum, (span - 1,) + spectrum.shape), axis=0)
    return out


def _power_log(log_modulus, count, n) -> np.ndarray:
    """log |φ_A^count φ_B^{n−count}| per block and frequency (0·log 0 taken as 0)."""
    log_a, log_b = log_modulus
    return (np.where(count[:, None] > 0, count[:, None] * log_a, 0.0)
            + np.where((n - count)[:, None] > 0, (n - count)[:, None] * log_b, 0.0))


#: offsets θ' − θ at which the Chernoff bounds of the tails are evaluated (any offset gives a
#: valid bound; these span the scales that matter)
_CHERNOFF_OFFSETS = np.geomspace(1e-4, 200.0, 64)


def _tail_limits(tables: _CumulantTables, j, n, theta, cgf, size):
    """Per row, [s_dn, s_up] outside of which the row tilted by θ has mass < ALIAS per side.

    Chernoff: log P(S_θ ≥ s) ≤ K(θ') − K(θ) − (θ'−θ)s for every θ' > θ (and the mirror bound
    below), minimised over θ' = θ ± the offsets. K(θ) = ``cgf`` is exact; K(θ') is read from
    the tables by linear interpolation, which never underestimates a convex K, so the bound
    stays valid.
    """
    limits = []
    for sign in (1.0, -1.0):
        lam = sign * _CHERNOFF_OFFSETS[None, :]
        other = theta[:, None] + lam
        ratio = (tables.cgf_at(j, n, other) - cgf[:, None] - math.log(ALIAS)) / lam
        ratio[(other < tables.theta[0]) | (other > tables.theta[-1])] = sign * np.inf  # off the grid
        limits.append(np.min(ratio, axis=1) if sign > 0 else np.max(ratio, axis=1))
    s_up = np.minimum(size - 1, np.ceil(limits[0]))
    s_dn = np.maximum(0, np.floor(limits[1]))
    return s_dn.astype(np.int64), s_up.astype(np.int64)
