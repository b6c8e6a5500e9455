"""Vectorised samplers of the point-to-point AINQ quantizers and of the Irwin–Hall mechanism of
Hegazy, Leluc, Li & Dieuleveut (2024), "Compression with Exact Error Distribution for Federated
Learning", AISTATS 2024, arXiv:2310.20682: subtractive dithering (Example 1), the direct and
shifted layered quantizers (Defs. 4–5, §3.1) and the Irwin–Hall mechanism (§4.2, with its decoder's
missing 1/n restored).

Every sampler takes a ``numpy.random.Generator`` and is deterministic given its seed. Each
element of the input gets its own, independent shared randomness. Messages M are integer-valued
float64 arrays (exact below 2⁵³): the direct quantizer's step has no positive lower bound, so M
has no fixed range.
"""

from __future__ import annotations

import numpy as np

from ..exactnum import Number, positive
from .noise import GAUSS, check_clients, check_noise, check_sigma, flipped_depth, laplace_scale, level_halfwidth


def round_half_up(x) -> np.ndarray:
    """⌈x⌋ := ⌊x + 1/2⌋ (Hegazy et al. 2024, §1, Notation)."""
    return np.floor(np.asarray(x, float) + 0.5)


def subtractive_dithering(x, step: Number, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Example 1: S ~ U(−1/2, 1/2), M = ⌈x/w + S⌋, Y = (M − S) w; then Y − x ~ U(−w/2, w/2),
    independent of x. Returns (Y, M)."""
    x = np.asarray(x, float)
    w = float(positive(step, "step"))
    s = rng.uniform(-0.5, 0.5, x.shape)
    m = round_half_up(x / w + s)
    return (m - s) * w, m


def sample_layers(noise: str, sigma: Number, shape, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(R, left): the depth R = ln(Z̄/D_Z) of a uniform point under the graph of f_Z, and whether
    it lies left of the mode. Sampling under the graph (Hegazy et al. 2024, §3.1), in log form
    [derived]: draw Z₀ ~ f_Z and V ~ U(0, 1), D_Z = V f_Z(Z₀), so R = −ln V + ln(Z̄/f_Z(Z₀)) with
    −ln V ~ Exp(1) and ln(Z̄/f_Z(Z₀)) = Z₀²/(2σ²) (Gaussian) or |Z₀|/b (Laplace). Hence
    R ~ Gamma(3/2) resp. Gamma(2), and left = (Z₀ < 0)."""
    noise, sigma = check_noise(noise), check_sigma(sigma)
    if noise == GAUSS:
        z0 = rng.normal(0.0, sigma, shape)
        excess = 0.5 * (z0 / sigma) ** 2
    else:
        b = laplace_scale(sigma)
        z0 = rng.laplace(0.0, b, shape)
        excess = np.abs(z0) / b
    return rng.standard_exponential(shape) + excess, z0 < 0


def _dither(x: np.ndarray, step: np.ndarray, offset: np.ndarray | float,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Dithering with random step (Defs. 4–5): U ~ U(0, 1), M = ⌈x/w + U⌋, Y = (M − U) w + offset."""
    u = rng.uniform(size=x.shape)
    m = round_half_up(x / step + u)
    return (m - u) * step + offset, m


def direct_layered(x, noise: str, sigma: Number,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Def. 4, the direct layered quantizer with error law f_Z. Shared randomness S = (U, D_Z); the
    step is f_D(D_Z) = 2b⁺(R) (2σχ₃ for the Gaussian, √2σ Gamma(2) for the Laplace) and the decoder
    offset (b⁺ + b⁻)/2 is 0. Given D_Z the error is U(b⁻(D_Z), b⁺(D_Z)). Returns (Y, M, step)."""
    x = np.asarray(x, float)
    depth, _ = sample_layers(noise, sigma, x.shape, rng)
    step = 2 * level_halfwidth(noise, depth, sigma)
    y, m = _dither(x, step, 0.0, rng)
    return y, m, step


def shifted_layered(x, noise: str, sigma: Number,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Def. 5, the shifted layered quantizer with error law f_Z. W_Z = D_Z right of the mode and
    Z̄ − D_Z left of it (the left half of the graph flipped; Hegazy et al. 2024, App. B.2). In
    depths, with r = ln(Z̄/D_Z) and r* its flipped depth, the error interval [b⁻(Z̄ − W_Z), b⁺(W_Z)]
    is [−b⁺(r*), b⁺(r)] (right) or [−b⁺(r), b⁺(r*)] (left): step f_W(W_Z) = b⁺(r) + b⁺(r*) ≥ η_Z
    (Prop. 2), offset ±(b⁺(r) − b⁺(r*))/2. Returns (Y, M, step)."""
    x = np.asarray(x, float)
    depth, left = sample_layers(noise, sigma, x.shape, rng)
    near = level_halfwidth(noise, depth, sigma)
    far = level_halfwidth(noise, flipped_depth(depth), sigma)
    step = near + far
    offset = np.where(left, -1.0, 1.0) * (near - far) / 2
    y, m = _dither(x, step, offset, rng)
    return y, m, step


def irwin_hall_mechanism(x, sigma: Number, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The Irwin–Hall mechanism (Hegazy et al. 2024, §4.2) with the decoder's 1/n restored: §4.2 prints
    Y = w(Σ M_i − Σ S_i), which estimates the sum, not the mean, and whose error is not the stated
    IH(n, 0, σ²); Def. 8 at a = 1, b = 0 has the 1/n. ``x`` has shape (n, …): row i is
    client i. S_i ~ U(−1/2, 1/2) i.i.d., w = 2σ√(3n), M_i = ⌈x_i/w + S_i⌋ and
    Y = (w/n)(Σ M_i − Σ S_i), so Y − mean(x) ~ IH(n, 0, σ²). Returns (Y, M), Y of shape x.shape[1:]."""
    x = np.atleast_1d(np.asarray(x, float))
    n, sigma = check_clients(x.shape[0]), check_sigma(sigma)
    w = 2 * sigma * np.sqrt(3 * n)
    s = rng.uniform(-0.5, 0.5, x.shape)
    m = round_half_up(x / w + s)
    return w / n * (m.sum(axis=0) - s.sum(axis=0)), m
