"""The aggregate Gaussian mechanism of Hegazy, Leluc, Li & Dieuleveut (2024), "Compression with Exact
Error Distribution for Federated Learning", AISTATS 2024, arXiv:2310.20682: Def. 8 (§4.3) with (A, B)
from Algorithms 1–4 (§4.4, App. A.2–A.5), and its cost bounds, Theorems 1–2 (§4.5).

Decompose writes Q = N(0, 1) as a mixture of laws a P + b with P = IH(n, 0, 1); the mechanism
then runs Irwin–Hall dithering at step a w, w = 2σ√(3n), and the server adds bσ. Its error is
exactly N(0, σ²) up to the interpolation of the Irwin–Hall density table (relative error below
~1e-6, far below what any sample can resolve); λ(n), f(0) and the Theorem 2 bound use the
exact density.

Everything is at unit variance: P = IH(n, 0, 1), supported on [−√(3n), √(3n)], L = 2√(3n),
g = φ the N(0, 1) density, and f̃(u) = L f(L u) on [−1/2, 1/2]. Algorithm 2 prints
f̃(x) = f(x/L)/L, whose support is [−L²/2, L²/2]; its return value (2as/L, 2bs) fits L f(L u).
The server adds B once (Def. 8); the per-client share b′ = b/n of Prop. 3's footnote would add
A w b/n instead of b (the share that adds b is b/(A w)).
"""

from __future__ import annotations

import functools
import math

import gmpy2
import mpmath
import numpy as np

from ..exactnum import Number
from .noise import check_clients, check_sigma, irwin_hall_pdf, irwin_hall_pdf_derivative
from .quantizers import round_half_up

#: grid points of the cached Irwin–Hall density table on [0, √(3n)] (at least)
TABLE_POINTS = 8192
#: grid points of the exact scan that brackets the infimum defining λ(n)
SCAN_POINTS = 1024
#: bisection steps for the superlevel half-width of g − λ f (2⁻⁶⁰ √(3n) resolution)
BISECTION_STEPS = 60


def _uniform_sum_grid(n: int, m: int, per_unit: int) -> np.ndarray:
    """(1/m!) Σ_{k≤j/K} (−1)^k C(n,k) (j/K − k)^m at s = j/K, j = 0 … nK/2 (K = per_unit, even),
    exactly in integers: Σ_k (−1)^k C(n,k) (j − kK)^m / (K^m m!), rounded once to float.
    m = n − 1 is the density f_S of a sum of n U(0, 1), m = n − 2 its derivative (see
    ``noise._uniform_sum_series``); s ≤ n/2 only, as there."""
    last = n * per_unit // 2
    powers = np.array([gmpy2.mpz(j) ** m for j in range(last + 1)], dtype=object)
    total = np.array([gmpy2.mpz(0)] * (last + 1), dtype=object)
    for k in range(last // per_unit + 1):
        start = k * per_unit
        total[start:] += (-1) ** k * math.comb(n, k) * powers[: last + 1 - start]
    denominator = int(gmpy2.mpz(per_unit) ** m * math.factorial(m))
    return np.array([int(value) / denominator for value in total])


def _per_unit(n: int, points: int) -> int:
    """An even number K of grid points per unit of s, with nK/2 ≥ ``points``."""
    return 2 * math.ceil(points / n)


@functools.cache
def irwin_hall_table(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, f(x)) on [0, √(3n)], ascending, f the IH(n, 0, 1) density, cached per n (read-only).
    The grid is s = n/2 − cx = j/K with c = √(n/12), where f(x) = c f_S(s) is an exact rational
    (``_uniform_sum_grid``), so no digit is lost to the alternating sum [derived]."""
    n = check_clients(n)
    per_unit = _per_unit(n, TABLE_POINTS)
    c = math.sqrt(n / 12)
    f = c * _uniform_sum_grid(n, n - 1, per_unit)[::-1]
    x = np.arange(f.size) / (per_unit * c)
    x[-1] = math.sqrt(3 * n)
    for array in (x, f):
        array.setflags(write=False)
    return x, f


def _table_density(n: int, x) -> np.ndarray:
    """f(x) for IH(n, 0, 1), linearly interpolated in the table; 0 outside the support."""
    grid, values = irwin_hall_table(n)
    return np.interp(np.abs(x), grid, values, right=0.0)


def _table_inverse(n: int, y) -> np.ndarray:
    """f⁻¹(y) := inf{x ≥ 0 : f(x) ≤ y} for the interpolated IH(n, 0, 1) density (Alg. 1)."""
    grid, values = irwin_hall_table(n)
    return np.interp(y, values[::-1], grid[::-1])


def _normal_density(x) -> np.ndarray:
    return np.exp(-0.5 * np.square(x)) / math.sqrt(2 * math.pi)


def peak_density(n: int) -> float:
    """f_IH(0) for IH(n, 0, 1): 0.375 at n = 3, → 1/√(2π) as n → ∞."""
    return float(irwin_hall_pdf(n, 0))


def scaled_peak(n: int) -> float:
    """L f(0) = 2√(3n) f_IH(0) = f̃(0): 1 at n = 1, 2.25 at n = 3. DecomposeUnif accepts with
    probability 1/f̃(0) per round, so its mean number of rejections is L f(0) − 1."""
    return 2 * math.sqrt(3 * check_clients(n)) * peak_density(n)


def _golden_minimum(func, low, high, tolerance):
    """min of a unimodal ``func`` on [low, high] by golden-section search (endpoints not evaluated)."""
    ratio = (mpmath.sqrt(5) - 1) / 2
    x1, x2 = high - ratio * (high - low), low + ratio * (high - low)
    f1, f2 = func(x1), func(x2)
    while high - low > tolerance:
        if f1 < f2:
            high, x2, f2 = x2, x1, f1
            x1 = high - ratio * (high - low)
            f1 = func(x1)
        else:
            low, x1, f1 = x1, x2, f2
            x2 = low + ratio * (high - low)
            f2 = func(x2)
    return min(f1, f2)


@functools.cache
def mixture_weight(n: int) -> float:
    """λ(n) = inf_{x>0} g'(x)/f'(x) for g = N(0, 1), f = IH(n, 0, 1) when n ≥ 3, and 0 for n ≤ 2
    (Hegazy et al. 2024, §4.4 Step 2, Alg. 2). g − λf is then ≥ 0 and nonincreasing on x > 0. The ratio
    x φ(x) / |f'(x)| is scanned on an exact grid of SCAN_POINTS (f' from exact integers), and the
    minimum refined by golden section on the neighbouring grid cells with mpmath f'.
    Reference values (an independent computation, not in the paper): λ(3) = 0.69997369889431
    (closed form 8x*φ(x*)/(3 − x*), x* the root in (1, 3) of x³ − 3x² + 3), λ(10) = 0.9476081,
    λ(100) = 0.9949782."""
    n = check_clients(n)
    if n <= 2:
        return 0.0
    per_unit = _per_unit(n, SCAN_POINTS)
    c = math.sqrt(n / 12)
    derivative = _uniform_sum_grid(n, n - 2, per_unit)[1:-1]   # f_S'(j/K) > 0, j = 1 … nK/2 − 1
    x = (n / 2 - np.arange(1, derivative.size + 1) / per_unit) / c
    ratio = np.full(x.size, np.inf)                             # f_S' underflows far in the tail
    np.divide(x * _normal_density(x), c**2 * derivative, out=ratio, where=derivative > 0)
    best = int(np.argmin(ratio))
    high = x[best - 1] if best > 0 else math.sqrt(3 * n)
    low = x[best + 1] if best + 1 < x.size else 0.0

    def ratio_at(point):
        return point * mpmath.npdf(point) / -irwin_hall_pdf_derivative(n, point)

    with mpmath.workdps(30):
        return float(_golden_minimum(ratio_at, mpmath.mpf(low), mpmath.mpf(high), mpmath.mpf(10) ** -13))


def theorem2_bound(n: int) -> float:
    """Theorem 2 as an upper bound on −h_M(N(0, σ²) ‖ IH(n, 0, σ²)) in bits (scale-invariant, so
    σ = 1): (1 − λ)(L f(0) + log₂(e L (g(0) − λ f(0)) / (2(1 − λ)))), g(0) = 1/√(2π), L = 2√(3n),
    λ = 0 for n ≤ 2. Reference values (an independent computation, not in the paper): 1.9094 (n=1),
    3.4094 (n=2), 1.24240 (n=3),
    0.37843 (n=10), 0.09243 (n=100)."""
    n = check_clients(n)
    weight = mpmath.mpf(mixture_weight(n))
    length = 2 * mpmath.sqrt(3 * n)
    peak_f = irwin_hall_pdf(n, 0)
    gap = 1 / mpmath.sqrt(2 * mpmath.pi) - weight * peak_f
    bound = (1 - weight) * (length * peak_f + mpmath.log(mpmath.e * length * gap / (2 * (1 - weight)), 2))
    return float(bound)


def decompose_uniform(n: int, size, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, DecomposeUnif(f̃, 𝔓) with f̃(u) = L f(L u), f = IH(n, 0, 1) (not the printed f(x/L)/L; module docstring): (a, b) with
    a X̃ + b ~ U(−1/2, 1/2) for X̃ ~ f̃ independent of (a, b), i.e. (a/L) X + b for X ~ IH(n, 0, 1).

    Each round draws u ~ U(−1/2, 1/2), v ~ U(0, 1); it accepts if v ≤ f̃(u)/f̃(0), else it moves
    into the slice left over at height v f̃(0), s = f̃⁻¹(v f̃(0)) = f⁻¹(v f(0))/L:
    b ← b + a sgn(u)(s + 1/2)/2, a ← a(1/2 − s). All draws still running take part in a round
    together, so the loop is over rounds (geometric, mean L f(0)), never over samples."""
    grid, values = irwin_hall_table(n)
    length = 2 * grid[-1]
    a, b = np.ones(size), np.zeros(size)
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    active = np.arange(flat_a.size)
    while active.size:
        u = rng.uniform(size=active.size) - 0.5
        v = rng.uniform(size=active.size)
        rejected = v > _table_density(n, length * u) / values[0]
        active, u, v = active[rejected], u[rejected], v[rejected]
        s = _table_inverse(n, v * values[0]) / length
        flat_b[active] += flat_a[active] * np.sign(u) * (s + 0.5) / 2
        flat_a[active] *= 0.5 - s
    return a, b


def _gap_halfwidth(n: int, weight: float, v: np.ndarray) -> np.ndarray:
    """sup{x ≥ 0 : v ≤ g(x) − λ f(x)} (Alg. 2). Beyond the support (or for λ = 0) g − λf = g and the
    answer is √(2 ln(g(0)/v)); inside, g − λf is nonincreasing, so bisection on [0, √(3n)]."""
    half_support = math.sqrt(3 * n)
    closed = (weight == 0) | (v <= _normal_density(half_support))
    with np.errstate(divide="ignore"):
        result = np.sqrt(2 * np.log(1 / (math.sqrt(2 * math.pi) * v)))
    inside = np.flatnonzero(~closed)
    low, high = np.zeros(inside.size), np.full(inside.size, half_support)
    target = v[inside]
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        above = _normal_density(middle) - weight * _table_density(n, middle) >= target
        low, high = np.where(above, middle, low), np.where(above, high, middle)
    result[inside] = low
    return result


def decompose(n: int, size, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2, Decompose(f, g, 𝔓) with f = IH(n, 0, 1), g = N(0, 1): (a, b) with a X + b ~ N(0, 1)
    for X ~ IH(n, 0, 1) independent of (a, b).

    Draw x ~ g and v = g(x)·U (a uniform point under g). With probability λ it lies in the top layer
    λf: return (1, 0). Otherwise it lies under g − λf, whose slice at height v is [−s, s]; then
    (a', b') = DecomposeUnif(f̃) and (a, b) = (2a's/L, 2b's), so a X + b = 2s(a' X/L + b') ~ U(−s, s)."""
    n = check_clients(n)
    weight = mixture_weight(n)
    length = 2 * math.sqrt(3 * n)
    x = rng.standard_normal(size)
    v = _normal_density(x) * (1.0 - rng.uniform(size=size))        # in (0, g(x)]
    top = v > _normal_density(x) - weight * _table_density(n, x)
    a, b = np.ones(size), np.zeros(size)
    layered = np.flatnonzero(~top.reshape(-1))
    s = _gap_halfwidth(n, weight, v.reshape(-1)[layered])
    a_unif, b_unif = decompose_uniform(n, layered.size, rng)
    a.reshape(-1)[layered] = 2 * a_unif * s / length
    b.reshape(-1)[layered] = 2 * b_unif * s
    return a, b


def client_step(n: int, sigma: Number) -> float:
    """w = 2σ√(3n): the dither step at which n clients' uniform errors average to variance σ²."""
    return 2 * check_sigma(sigma) * math.sqrt(3 * check_clients(n))


def shared_randomness(n: int, sigma: Number, size,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, S) of Def. 8 as drawn by Algs. 3–4 from one seed shared by all parties: (a, b) =
    Decompose(IH(n, 0, 1), N(0, 1)), (A, B) = (a, bσ), then S of shape (n, *size), S_i ~ U(−1/2, 1/2)."""
    a, b = decompose(n, size, rng)
    s = rng.uniform(-0.5, 0.5, (check_clients(n), *np.shape(a)))
    return a, b * check_sigma(sigma), s


def encode(x, s, a, n: int, sigma: Number) -> np.ndarray:
    """Def. 8 / Alg. 3: M_i = ⌈x_i/(A w) + S_i⌋, w = 2σ√(3n)."""
    return round_half_up(np.asarray(x, float) / (a * client_step(n, sigma)) + s)


def decode(message_sum, dither_sum, a, b, n: int, sigma: Number) -> np.ndarray:
    """Def. 8 / Alg. 4: Y = (A w/n)(Σ M_i − Σ S_i) + B. Only the sums enter: the mechanism is
    homomorphic (Def. 6, Prop. 3)."""
    return a * client_step(n, sigma) / n * (np.asarray(message_sum, float) - dither_sum) + b


def aggregate_gaussian(x, sigma: Number, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The aggregate Gaussian mechanism end to end. ``x`` has shape (n, …): row i is client i, and
    every other index is an independent run with its own shared randomness. Returns (Y, M) with
    Y − mean(x, axis=0) ~ N(0, σ²) (Prop. 3) and M the clients' integer messages."""
    x = np.atleast_1d(np.asarray(x, float))
    n = check_clients(x.shape[0])
    a, b, s = shared_randomness(n, sigma, x.shape[1:], rng)
    m = encode(x, s, a, n, sigma)
    return decode(m.sum(axis=0), s.sum(axis=0), a, b, n, sigma), m
