"""Vectorised samplers: each runs a mechanism's randomized algorithm, as the paper states it, on
an array of inputs (any shape) and returns the output indices (same shape).

These are independent of the exact pmfs (which come from the papers' lemmas), so a sampler
that disagrees with its pmf exposes a bug in one of them (:mod:`.montecarlo`). They are plain
numpy, deterministic given the generator; the FL runs use them on (clients × coordinates)
arrays.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..mechanisms import (
    PBM,
    RQM,
    Binomial,
    CorBin,
    DistributedDiscreteGaussian,
    Mechanism,
    QMGeo,
    QuantizedGaussian,
    RoundedNoise,
    Skellam,
)

#: samples drawn per chunk of the RQM sampler, at most (its (chunk × m) work array is bounded
#: by CHUNK_VALUES entries too: fewer rows when m > 16, which leaves the stream of m ≤ 16 as it was)
_CHUNK = 1 << 16
CHUNK_VALUES = 1 << 20
#: bytes per entry of the RQM work array: a uniform, the kept flag and two index arrays
RQM_BYTES_PER_ENTRY = 25


def sample(mechanism: Mechanism, x, rng: np.random.Generator) -> np.ndarray:
    """Output indices of ``mechanism`` at the inputs ``x`` (an array; each entry independently),
    checked to lie in its input range, by its :meth:`~rdpcalc.mechanisms.Mechanism.sample`
    (the paper's algorithm, through the functions below, or the exact pmf inverted)."""
    x = np.asarray(x, dtype=float)
    bound = float(mechanism.bound)
    if np.any(np.abs(x) > bound * (1 + 1e-12)):
        raise ParameterError("x", f"inputs must lie in [-{bound:g}, {bound:g}]")
    return mechanism.sample(x, rng)


def sample_rqm(mech: RQM, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 2 of Youn et al. (2023, arXiv:2306.11913): keep the end levels and each interior
    level with probability q; the lower neighbour is the largest kept index with B(k) ≤ x, the
    upper the smallest with B(k) ≥ x; round up with probability (x − B(lo))/(B(hi) − B(lo))."""
    m, q = mech.m, float(mech.q)
    x_max = float(mech.x_max)
    position = (x.ravel() + x_max) * (m - 1) / (2 * x_max)  # x in units of the level spacing
    out = np.empty(position.shape, dtype=np.int64)
    index = np.arange(m)
    rows = rqm_chunk_rows(m)
    for start in range(0, len(position), rows):
        t = position[start : start + rows, None]
        kept = np.ones((len(t), m), dtype=bool)
        kept[:, 1 : m - 1] = rng.random((len(t), m - 2)) < q
        lower = np.where(kept & (index <= t), index, -1).max(axis=1)
        upper = np.where(kept & (index >= t), index, m).min(axis=1)
        span = np.maximum(upper - lower, 1)
        up = rng.random(len(t)) < (t[:, 0] - lower) / span
        out[start : start + rows] = np.where(up & (upper > lower), upper, lower)
    return out.reshape(x.shape)


def rqm_chunk_rows(m: int) -> int:
    """Inputs per chunk of :func:`sample_rqm`: 2¹⁶, fewer when m > 16 so that the (chunk × m)
    work array holds at most CHUNK_VALUES entries (one row when m exceeds it)."""
    return min(_CHUNK, max(1, CHUNK_VALUES // m))


def sample_pbm(mech: PBM, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Binomial(trials, ½ + θx/c)."""
    p = 0.5 + float(mech.theta) * x / float(mech.c)
    return rng.binomial(mech.trials, p)


def sample_qgauss(mech: QuantizedGaussian, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Eq. (10): clip(x + N(0, σ²), −C_q, C_q), then unbiased stochastic rounding to the k levels."""
    clip, k = float(mech.clip), mech.k
    y = np.clip(x + float(mech.sigma) * rng.standard_normal(x.shape), -clip, clip)
    position = (y + clip) * (k - 1) / (2 * clip)
    lower = np.minimum(np.floor(position), k - 2)
    return (lower + (rng.random(x.shape) < position - lower)).astype(np.int64)


def sample_qmgeo(mech: QMGeo, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Eq. (9) with the text's supports: a λ-coin picks the upward branch (orientation S) or the
    downward one (L, literally), then a geometric step truncated to the levels, by inverse CDF."""
    if mech.normalisers != "text" or mech.tie != "lower":
        raise ParameterError("normalisers", "the sampler runs the text's supports with the default tie rule")
    R, p = mech.R, float(mech.p)
    q = 1 - p
    spacing = float(mech.spacing)
    t = (x + float(mech.w_max)) / spacing
    r = np.minimum(np.floor(t), R - 2)
    lam = t - r
    up_probability = lam if mech.orientation == "S" else 1 - lam

    def truncated_geometric(length: np.ndarray) -> np.ndarray:  # support 1 … length
        if q == 0:
            return np.ones(x.shape)
        u = rng.random(x.shape)
        return np.ceil(np.log1p(-u * (1 - q**length)) / math.log(q))

    up = rng.random(x.shape) < up_probability
    upward = r + truncated_geometric(R - r - 1)
    downward = r - (truncated_geometric(r + 1) - 1)
    return np.where(up, upward, downward).astype(np.int64)


def sample_corbin(mech: CorBin, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Marginal view: LDPQ (Algorithm 1), + with probability ½ + x/(2rα). Joint view: the pair
    (client at x, partner at ``partner``) through Algorithm 2, index 2·s₁ + s₂."""
    alpha = float(mech.alpha)
    amplitude = float(mech.r) * alpha
    if mech.view == "marginal":
        return (rng.random(x.shape) < 0.5 + x / (2 * amplitude)).astype(np.int64)
    first, second = sample_corbin_pairs(mech, x, np.full(x.shape, float(mech.partner)), rng)
    return 2 * first + second


def sample_corbin_pairs(mech: CorBin, x: np.ndarray, y: np.ndarray, rng: np.random.Generator):
    """CorBinQ (Algorithm 2, line 14 as ``mech.line14``) on pairs of inputs (x, y) with fresh
    shared bits z per pair: returns (s₁, s₂), 1 for c + rα. d = ∞ uses a shared uniform."""
    amplitude = float(mech.r) * float(mech.alpha)
    q1, q2 = 0.5 + x / (2 * amplitude), 0.5 + y / (2 * amplitude)
    if mech.d is None:
        v = rng.random(x.shape)
        return (v < q1).astype(np.int64), (v >= 1 - q2).astype(np.int64)
    N = 2**mech.d
    z = rng.integers(0, N, size=x.shape)
    a, b = np.floor(N * q1), np.floor(N * (1 - q2))
    first = np.where(z < a, True, np.where(z > a, False, rng.random(x.shape) < N * q1 - a))
    second_upper = z > b if mech.line14 == "fixed" else z > a
    down2 = np.where(z < b, True, np.where(second_upper, False, rng.random(x.shape) < N * (1 - q2) - b))
    return first.astype(np.int64), (~down2).astype(np.int64)



def sample_rounded_noise(mech: RoundedNoise, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unbiased randomized rounding of x/γ (up with probability x/γ − ⌊x/γ⌋), plus the mechanism's
    integer noise (:func:`sample_integer_noise`); the output index is the integer minus the
    window's lowest output. A draw outside the window (probability at most the tail mass) is an
    error, never folded into an end bin."""
    scaled = x / float(mech.gamma)
    lower = np.floor(scaled)
    rounded = (lower + (rng.random(x.shape) < scaled - lower)).astype(np.int64)
    index = rounded + sample_integer_noise(mech, x.shape, rng) - mech.lowest_output
    if np.any((index < 0) | (index >= mech.support_size)):
        raise ArithmeticError(f"a draw of {mech.name} left its window (probability ≤ {mech.tail_mass_bound():.3g} each)")
    return index


def sample_integer_noise(mech: RoundedNoise, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """The noise of :func:`sample_rounded_noise`: Binomial(N, p) (numpy), Poisson(μ) − Poisson(μ)
    (Skellam), or the discrete Gaussian by Canonne, Kamath & Steinke's rejection sampler
    (2020, arXiv:2004.00010, Algorithm 3) from the discrete Laplace of scale t = ⌊s⌋ + 1."""
    if isinstance(mech, Binomial):
        return rng.binomial(mech.trials, float(mech.p), size=shape)
    if isinstance(mech, Skellam):
        mu = float(mech.mu)
        return rng.poisson(mu, size=shape) - rng.poisson(mu, size=shape)
    if isinstance(mech, DistributedDiscreteGaussian):
        return _discrete_gaussian(float(mech.sigma / mech.gamma), shape, rng)
    raise TypeError(f"no noise sampler for {type(mech).__name__}")


def _discrete_gaussian(scale: float, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """N_Z(0, s²) by rejection: Y from the discrete Laplace P(y) ∝ e^{−|y|/t}, t = ⌊s⌋ + 1 (the
    difference of two geometric variables), kept with probability exp(−(|Y| − s²/t)²/(2s²))."""
    t = math.floor(scale) + 1
    size = int(np.prod(shape))
    out = np.empty(0, dtype=np.int64)
    success = -math.expm1(-1.0 / t)
    while len(out) < size:
        draws = max(1024, 2 * (size - len(out)))
        laplace = rng.geometric(success, draws) - rng.geometric(success, draws)
        keep = rng.random(draws) < np.exp(-((np.abs(laplace) - scale**2 / t) ** 2) / (2 * scale**2))
        out = np.concatenate([out, laplace[keep]])
    return out[:size].reshape(shape)
