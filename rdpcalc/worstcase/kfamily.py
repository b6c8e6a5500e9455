"""The ±b family's worst case over k for large n: every k, each row on a window, with certified tails.

The family (``neighbours`` pm-c): client 1 at +b against −b (and back), k of the other
N = n − 1 clients at +b and N − k at −b. With A, B the pmfs of one client at ±b and
L_j = A^{*j} * B^{*(n−j)} (the rows of one level), the pair at k is (P, Q) = (L_{k+1}, L_k), so
the worst case over k is max_k max(D_α(L_{k+1} ‖ L_k), D_α(L_k ‖ L_{k+1})). Computing every row
on its whole support (n(m − 1) + 1 points) costs O(n²); this module computes every k in
O(n^1.5 log n).

**Why every k.** Two shortcuts fail. (1) Pruning by data processing: every configuration with
k ∈ [lo, hi] holds lo others at +b and N − hi at −b, so its value is at most the value with
those alone; but for the papers' mechanisms the value varies with k by O(1/n) relative (RQM
m = 16, n = 300: 0.1 % at KL over all k) while dropping w others raises it by ~w/n, so at KL
no range is pruned even for w = 1 (bench/ section K). (2) Shape: the maximum over k is not
always at k ∈ {0, N}, not even for mirror-image pairs with a monotone likelihood ratio
(A = (1.6e−12, 1.4e−15, 9.05e−4, 0.7215, 4.5e−9, 0.2776), B its mirror, n = 7, α = 2 peaks at
k = 1 and 5; tests/test_kfamily.py). So the rows are made cheap instead.

**Windows.** Row j has mean μ_j and standard deviation σ_j ∝ √n. It is computed only on
±Tσ_j around μ_j by the tilted FFTs of :func:`rdpcalc.numerics.levels.window_rows` (accurate
in relative terms wherever they are trusted), O(T√n log n) per row. With u = log P/Q,
g(u) = e^{αu} − αe^u + α − 1 ≥ 0 and h(u) = ue^u − e^u + 1 ≥ 0, Σ_s P^α Q^{1−α} = 1 + Σ_s Q g(u)
and KL = Σ_s Q h(u) (Σ P = Σ Q = 1): sums of non-negative terms, so the window's part is a
**lower end** — log1p(Σ_W Q g)/(α − 1), Σ_W Q h. D_∞'s lower end is the largest u found on the
window, on a second window around each row's saddle point (below), and at the support's two
ends, where P/Q = A(m−1)/B(m−1) and A(0)/B(0) exactly (one configuration reaches each).

**Tails (the upper end).** Outside the window, Q g(u) ≤ P^α Q^{1−α} + (α − 1)Q and
Q h(u) ≤ P (log P/Q)⁺ + Q. Split the others' sum as R = C * R′ with C a block of c others
all at −b or all at +b (c = min(1000, ⌊N/2⌋): one of the two always fits in k's others). Then
P = P_C * R′ and Q = Q_C * R′ with (P_C, Q_C) = (A * C, B * C), and since (p, q) ↦ p^α q^{1−α}
and (p, q) ↦ p log(p/q) are jointly convex and homogeneous of degree 1 (so subadditive),
P^α Q^{1−α} ≤ R′ * G and P log(P/Q) ≤ R′ * H⁺ pointwise, with G = P_C^α Q_C^{1−α} and
H⁺ = max(P_C log(P_C/Q_C), 0) positive measures. A tail s ≥ t of a measure μ sums to at most
e^{−θt} Σ_s e^{θs} μ(s) for any θ ≥ 0 (θ ≤ 0 for s ≤ t); the transforms of R′, Q and of the
block's G, H⁺ are exact from the pmfs (M_A^k M_B^{N−k} for R). So each tail is bounded by
e^{−θt}(M_{R′} M_G + (α − 1) M_R M_{B}) (for the direction P‖Q), minimised over a grid of θ
— every θ gives a valid bound — and the **upper end** is log1p(Σ_W Q g + tails)/(α − 1). The
block's G has mass e^{(α−1)D_α(P_C‖Q_C)}, close to 1, so the tails fall like e^{−T²/2}: T is
√(2(46 + log mass)), about 10, and the bracket closes to the rounding for finite orders;
where the terms sit further out than a Gaussian's (skewed or concentrated pmfs, small n) the
windows are doubled until it closes to 1e−10, or cover the rows.
D_∞: P/Q ≤ max P_C/Q_C everywhere (data processing), the upper end.

**D_∞'s lower end.** log P/Q tends to sup_θ (K_A(θ) − K_B(θ)) (K the cumulant generating
functions) where the sum tilted by the maximising θ has its mean — far from the bulk (4.6 %
of the support from one end for RQM m = 16). Each row is also computed on ±3 tilted standard
deviations there.

Each k's value is a bracket [lower, upper], and the worst case over k is
[max_k lower, max_k upper] (the found value and the certified bound), up to the fast engine's
rounding, which grows like n·1e−14 relative for FFT powers of n clients. The found value
agrees with the full search (every row on its whole support) to that rounding, as the tests
check up to n = 1000 and bench/ up to n = 2000; mirror images, equal in exact arithmetic, differ
by 2.9·10⁻¹⁰ relative at n = 10⁴, and by how much depends on the CPU's FFT. So values within
:func:`accuracy` (n·10⁻¹³) tie, and :func:`outward` rounds the bracket outward to the digits
that accuracy leaves (9 at n = 10⁴, 8 at 10⁵): the digits printed are the same on every machine.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Sequence

import numpy as np

from .. import resources
from ..errors import ParameterError
from ..logdomain import logsumexp
from ..mechanisms import Mechanism, log_pmf
from ..numerics import fast, levels
from ..resources import Cost
from .secagg import Configuration

#: log of the share of the window's sum that the tails beyond the window may hold (e^{−46} ≈ 1e−20)
TAIL_NATS = 46.0
#: the bracket counts as closed when the certified end is within this relative distance of the
#: found value (finite orders); else the windows are widened
CLOSED = 1e-10
#: clients in the block whose pair bounds the tails (:func:`_blocks`)
BLOCK_CLIENTS = 1000
#: rows computed per chunk: at most CHUNK_ROWS, and at most CHUNK_ELEMENTS numbers per array
#: (larger arrays are mapped afresh from the system at each chunk: measured 1.3 against 0.8 ms
#: per row at n = 10⁵)
CHUNK_ROWS = 512
CHUNK_ELEMENTS = 2_500_000
#: the windowed rows' relative rounding per client: the found values' accuracy is n times this
#: (mirror images at n = 10⁴ differ by 2.9·10⁻¹⁰, n·2.9·10⁻¹⁴; a factor of three to spare), and at
#: least ACCURACY_FLOOR
ROUNDING_PER_CLIENT = 1e-13
ACCURACY_FLOOR = 1e-10
#: the window's terms are summed in the linear domain where α·max|log P/Q| is at most this
_LINEAR_REACH = 30.0
#: half-width, in tilted standard deviations, of the windows where D_∞ is sought
SADDLE_SD = 3.0
#: tilts of the Chernoff bounds: θ = ±these, over the scales of a sum of n clients
_THETAS = np.geomspace(1e-7, 20.0, 64)


def window_costs(mechanism: Mechanism, n: int, orders: int) -> list[Cost]:
    """The peak memory of :func:`worst_over_k`: the chunks of rows on their windows in flight
    (one per core, with their divergences' temporaries and the FFT batches of
    :mod:`.numerics.levels`), the block pmfs and the brackets and Chernoff tables (n × θ grid)."""
    la, lb = log_pmf(mechanism, mechanism.bound), log_pmf(mechanism, -mechanism.bound)
    spread = float(np.max(_row_moments(la, lb, n, 0.0)[1]))
    width = min(n * (len(la) - 1) + 1, int(2 * math.sqrt(2 * (TAIL_NATS + 10)) * spread) + 2)
    threads = resources.threads()
    block = (BLOCK_CLIENTS + 1) * (len(la) - 1) + 1
    rows = max(16, min(CHUNK_ROWS, CHUNK_ELEMENTS // width))
    return [Cost(threads * (8 * (rows + 1) * width * 10 + 16 * levels.BATCH_ELEMENTS * 4), "n",
                 f"{threads} chunks of {rows} rows of {width} points"),
            Cost(8 * (4 * block * 8 + 2 * len(_THETAS) * block * 2), "n", "the blocks' pmfs and transforms"),
            Cost(8 * 6 * n * (2 * len(_THETAS) + 4 * orders), "n", "the brackets and tail bounds of every k")]


def worst_over_k(mechanism: Mechanism, n: int, alphas: Sequence[float],
                 progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Per order: ``lower`` (the largest value found over k and both directions), ``upper``
    (certified over every k), the configuration attaining ``lower`` and the window's
    half-width (module docstring). Requires client pmfs of full support (the FFT rows)."""
    resources.require_costs(window_costs(mechanism, n, len(alphas)))
    b = mechanism.bound
    la, lb = log_pmf(mechanism, b), log_pmf(mechanism, -b)
    if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
        raise ParameterError("n", f"the worst case over k beyond n = 2000 needs a pmf of full support at ±c: "
                                  f"{mechanism.name}'s has zeros; give `others_plus` for one configuration")
    try:
        found = pair_worst_over_k(la, lb, n, alphas, progress)
    except levels.TiltingFailed:
        raise ParameterError("n", f"the tilted FFTs do not cover the rows of {mechanism.name} at n = {n}; give "
                                  "`others_plus` for one configuration") from None
    for point in found:
        k, direction = point.pop("k"), point.pop("direction")
        x, x_prime = (b, -b) if direction == 0 else (-b, b)
        others = tuple((value, count) for value, count in ((-b, n - 1 - k), (b, k)) if count)
        point["attained"] = Configuration(x, x_prime, others)
    return found


def pair_worst_over_k(la: np.ndarray, lb: np.ndarray, n: int, alphas: Sequence[float],
                      progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """:func:`worst_over_k` for two client log pmfs A, B of full support (as ±b): per order the
    bracket [``lower``, ``upper``] over k = 0 … n − 1 and both directions, and the ``k`` and
    ``direction`` (0: D(L_{k+1}‖L_k), 1: the reverse) attaining ``lower``."""
    alphas = [float(a) for a in alphas]
    blocks = _blocks(la, lb, n)
    half = _half_width(blocks, alphas)
    size = n * (len(la) - 1) + 1
    step = np.diff(_row_moments(la, lb, 1, 0.0)[0])[0]  # μ_A − μ_B: the means of rows k and k + 1 differ by it
    pad = int(math.ceil(abs(step))) + 2
    finite = [index for index, alpha in enumerate(alphas) if alpha != math.inf]
    passes = [0, 1 + 2 * (math.inf in alphas)]  # done, planned (a widening adds one)

    def run(left: np.ndarray, width: int, wanted: list[float]):
        for ks, windows, values in _pairs(la, lb, n, left, width, size, wanted):
            if progress is not None:
                progress(passes[0] * (n + 1) + int(ks[-1]) + 2, passes[1] * (n + 1))
            yield ks, windows, values
        passes[0] += 1

    lower = np.full((2, n, len(alphas)), -np.inf)
    window = np.zeros((n, 2), dtype=np.int64)
    bulk = _row_moments(la, lb, n, 0.0)
    while True:
        for ks, windows, values in run(*_windows(*bulk, half, pad, size), alphas):
            window[ks], lower[:, ks] = windows, values
        upper = _upper(la, lb, n, alphas, lower, window, size, blocks)
        found, certified = (np.array([np.max(part[:, :, i]) for i in finite]) for part in (lower, upper))
        covered = bool(np.all(window[:, 0] == 0) and np.all(window[:, 1] == size - 1))
        if covered or np.all(certified <= found * (1 + CLOSED) + 1e-300):
            break
        half *= 2  # the terms sit further out than a Gaussian's: wider windows, until the bracket closes
        passes[1] += 1
    if math.inf in alphas:  # D_∞'s lower end also at each row's saddle point (a window of its own)
        infinite = alphas.index(math.inf)
        for direction in (0, 1):
            saddle = _row_moments(la, lb, n, _saddle_theta(la, lb, direction))
            for ks, _, values in run(*_windows(*saddle, SADDLE_SD, pad, size), [math.inf]):
                lower[direction, ks, infinite] = np.maximum(lower[direction, ks, infinite], values[direction, :, 0])
        upper[:, :, infinite] = np.maximum(upper[:, :, infinite], lower[:, :, infinite])
    ends = _end_ratios(la, lb)
    return [_point(alphas[i], lower[:, :, i], upper[:, :, i], ends, half, accuracy(n)) for i in range(len(alphas))]


def _row_moments(la: np.ndarray, lb: np.ndarray, n: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row j = 0 … n of the level tilted by θ: its mean and standard deviation."""
    (_, mean_a, var_a), (_, mean_b, var_b) = (levels.cumulants(l, np.array([theta])) for l in (la, lb))
    j = np.arange(n + 1)
    return j * mean_a[0] + (n - j) * mean_b[0], np.sqrt(j * var_a[0] + (n - j) * var_b[0])


def _windows(mean: np.ndarray, sd: np.ndarray, half: float, pad: int, size: int) -> tuple[np.ndarray, int]:
    """Each row's first point and the common width of windows ±``half`` standard deviations
    (and ``pad`` points) around the means, within the support."""
    left = np.clip(np.floor(mean - half * sd).astype(np.int64) - pad, 0, size - 1)
    right = np.clip(np.ceil(mean + half * sd).astype(np.int64) + pad, 0, size - 1)
    return left, int(np.max(right - left)) + 1


def _pairs(la, lb, n, left, width, size, alphas):
    """Per chunk of rows on their windows (row j from the point left[j]), in order: the ks of
    its pairs, their common windows and lower ends (:func:`_chunk`), the chunks in threads
    (the FFTs and numpy's large elementwise work release the GIL; worker processes measured
    slower: 19 s against 13 s at n = 3·10⁴)."""
    from concurrent.futures import ThreadPoolExecutor  # concurrent.futures (logging): start-up time of every command

    step = max(16, min(CHUNK_ROWS, CHUNK_ELEMENTS // width))
    jobs = [(la, lb, n, start, step, left, width, size, alphas) for start in range(0, n + 1, step)]
    with ThreadPoolExecutor(max_workers=resources.threads()) as pool:
        yield from pool.map(_chunk, jobs)


def _chunk(job):
    """One chunk of :func:`_pairs`: rows start − 1 (shared with the chunk before) … start + step − 1."""
    la, lb, n, start, step, left, width, size, alphas = job
    rows_j = np.arange(max(0, start - 1), min(start + step, n + 1))
    rows = levels.window_rows(la, lb, n, rows_j, left[rows_j], width)
    return (rows_j[:-1], *_window_values(rows, left[rows_j], width, size, alphas))

def _saddle_theta(la: np.ndarray, lb: np.ndarray, direction: int) -> float:
    """Where D_∞ is reached (for the lower end): log P/Q tends to sup_θ (K_A(θ) − K_B(θ))
    (direction 0; K_B − K_A for 1) where the sum tilted by that θ* has its mean; the θ* of a
    fine grid."""
    thetas = np.linspace(-40.0, 40.0, 16001)
    gap = levels.log_mgf(la, thetas) - levels.log_mgf(lb, thetas)
    return float(thetas[np.argmax(gap if direction == 0 else -gap)])


def _window_values(rows: np.ndarray, left: np.ndarray, width: int, size: int, alphas: list[float]):
    """For consecutive rows (Q = row i, P = row i + 1 on their windows, row i starting at the
    point left[i]): each pair's common window [lo, hi], and per direction (D(P‖Q), D(Q‖P)),
    pair and order the window's lower end (:func:`_core_divergences`; D_∞: the window's
    largest log P/Q)."""
    lo = np.maximum(left[:-1], left[1:])
    hi = np.minimum(np.minimum(left[:-1], left[1:]) + width, size) - 1
    span = int(np.max(hi - lo)) + 1
    q, p = (_columns(rows[part], lo - left[part], span, hi - lo + 1, width) for part in (slice(None, -1), slice(1, None)))
    lower = np.full((2, len(lo), len(alphas)), -np.inf)
    finite = [index for index, alpha in enumerate(alphas) if alpha != math.inf]
    for direction, (first, second) in enumerate(((p, q), (q, p))):
        if math.inf in alphas:
            with np.errstate(invalid="ignore"):
                ratio = np.where(first > -np.inf, first - second, -np.inf)
            lower[direction, :, alphas.index(math.inf)] = np.max(ratio, axis=1)
        if finite:
            lower[direction][:, finite] = _core_divergences(first, second, [alphas[i] for i in finite])
    return np.stack([lo, hi], axis=1), lower


def _columns(rows: np.ndarray, start: np.ndarray, span: int, length: np.ndarray | int, width: int) -> np.ndarray:
    """Row i's columns start[i] … start[i] + span − 1, −inf from start[i] + length[i] on (and
    past the row's width)."""
    columns = start[:, None] + np.arange(span)[None, :]
    keep = (np.arange(span)[None, :] < np.asarray(length).reshape(-1, 1)) & (columns < width) & (columns >= 0)
    return np.where(keep, np.take_along_axis(rows, np.clip(columns, 0, width - 1), axis=1), -np.inf)


def _core_divergences(first: np.ndarray, second: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
    """Per row and order, log1p(Σ Q g(u))/(α − 1), or Σ Q h(u) for KL, u = log P/Q, over the
    given points (a window's part of the whole sum, not normalised; −inf entries are absent).

    Where α·max|u| ≤ _LINEAR_REACH, in the linear domain with Q g = Q(expm1(αu) − α expm1(u))
    and Q h = P u − Q expm1(u): each term's relative rounding is about ε/((α − 1)|u|) (ε/|u|),
    large only where the term itself is of order u² — the sum keeps ~ε/((α − 1)·typical |u|),
    1e−14 for the sums of thousands of clients, at a tenth of the cost. Elsewhere the
    log-domain forms of :func:`rdpcalc.numerics.fast.renyi_divergences` (its one-direction
    step, which does not normalise). Negative rounding
    residues are dropped (the result stays a lower end)."""
    present = (first > -np.inf) & (second > -np.inf)
    with np.errstate(invalid="ignore"):
        u = np.where(present, first - second, 0.0)
    reach = float(np.max(np.abs(u))) if u.size else 0.0
    q = np.where(present, np.exp(np.where(present, second, 0.0)), 0.0)
    step = np.expm1(u)
    out = np.empty((len(first), len(alphas)))
    for index, alpha in enumerate(alphas):
        if alpha * reach <= _LINEAR_REACH:
            if alpha == 1.0:
                terms = q * (u * (1.0 + step) - step)
            else:
                terms = q * (np.expm1(alpha * u) - alpha * step)
            total = np.sum(np.maximum(terms, 0.0), axis=1)
            out[:, index] = total if alpha == 1.0 else np.log1p(total) / (alpha - 1.0)
            continue
        out[:, index] = fast.renyi_divergences_rows(first, second, np.array([alpha]))[:, 0]  # the sums as they are
    return out


def accuracy(n: int) -> float:
    """The relative accuracy of the values of the sums of ``n`` clients on windows (module docstring)."""
    return max(ACCURACY_FLOOR, n * ROUNDING_PER_CLIENT)


def outward(lower: float, upper: float, n: int) -> tuple[float, float]:
    """The bracket [``lower``, ``upper``] of a worst case over k at ``n`` clients rounded outward —
    ``lower`` down, ``upper`` up — to the significant digits its :func:`accuracy` leaves, so that
    it is the same on every machine (and still a bracket)."""
    digits = min(12, math.floor(-math.log10(accuracy(n)) + 1e-9))
    return _to_digits(lower, digits, decimal.ROUND_FLOOR), _to_digits(upper, digits, decimal.ROUND_CEILING)


def _to_digits(value: float, digits: int, rounding: str) -> float:
    if not math.isfinite(value) or value == 0:
        return value
    exact = decimal.Decimal(value)
    step = decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return float(exact.quantize(step, rounding=rounding))


def _point(alpha: float, lower: np.ndarray, upper: np.ndarray, ends: tuple[float, float], half: float,
           tie: float) -> dict:
    if alpha == math.inf:  # the support's end points: P/Q = A(end)/B(end) exactly
        lower = np.maximum(lower, np.array(ends)[:, None])
    top = float(np.max(lower))
    # ties (within ``tie`` relative: mirror images, equal in exact arithmetic) go to the first k, then to direction 0
    threshold = top - tie * abs(top) if math.isfinite(top) else top
    k, direction = divmod(int(np.argmax((lower.T >= threshold).ravel())), 2)
    return {"alpha": alpha, "lower": top, "upper": float(np.max(upper)), "k": k, "direction": direction,
            "half_width": half}


def _half_width(blocks: list[tuple[np.ndarray, np.ndarray]], alphas: Sequence[float]) -> float:
    """T: the tails beyond ±Tσ are at most about e^{−T²/2} times the mass of the blocks'
    tail measure G, e^{(α−1)D_α(P_b‖Q_b)} for the largest finite order (KL and α ≤ 2 as α = 2),
    so T = √(2(TAIL_NATS + log mass))."""
    largest = max([a for a in alphas if a != math.inf] + [2.0])
    mass = max(float(logsumexp(largest * first + (1 - largest) * second))
               for pair in blocks for first, second in (pair, pair[::-1]))
    return math.sqrt(2.0 * (TAIL_NATS + max(mass, 0.0)))


def _blocks(la: np.ndarray, lb: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pairs (P_b, Q_b) = (A * C, B * C) of client 1 with a block C of c = min(BLOCK_CLIENTS,
    ⌊(n − 1)/2⌋) others, C = B^{*c} (the block at −b) and C = A^{*c} (at +b): every k has one
    of them among its others (k ≥ c or n − 1 − k ≥ c). They are rows 1, 0 and c + 1, c of the
    level of c + 1 clients, on their whole support."""
    c = min(BLOCK_CLIENTS, (n - 1) // 2)
    rows = levels.level_rows(la, lb, c + 1, [0, 1, c, c + 1])
    return [(rows[1], rows[0]), (rows[3], rows[2])]


def _end_ratios(la: np.ndarray, lb: np.ndarray) -> tuple[float, float]:
    """log P/Q at the support's two ends, per direction: only the configuration with every
    client at its last (first) output reaches the last (first) point of the sum."""
    return float(max(la[-1] - lb[-1], la[0] - lb[0])), float(max(lb[-1] - la[-1], lb[0] - la[0]))


def _upper(la, lb, n, alphas, lower, window, size, blocks) -> np.ndarray:
    """The certified upper end per direction, k and order: the window's value plus the
    Chernoff bound of the tails beyond it (module docstring), with the others split into a
    block C and the rest R′: the block's pair gives the tail measure, R′ its transform, and of
    the blocks that fit in k's others the better bound is kept."""
    c = min(BLOCK_CLIENTS, (n - 1) // 2)
    k = np.arange(n)
    thetas = np.r_[-_THETAS[::-1], _THETAS]
    cgf_a, cgf_b = levels.log_mgf(la, thetas), levels.log_mgf(lb, thetas)
    lo, hi = window[:, 0], window[:, 1]
    edge = np.where(thetas[None, :] > 0, (hi + 1)[:, None], (lo - 1)[:, None]).astype(float)
    outside = np.where(thetas[None, :] > 0, (hi < size - 1)[:, None], (lo > 0)[:, None])
    shift = -thetas[None, :] * edge

    def others(plus: np.ndarray, minus: np.ndarray) -> np.ndarray:  # log of M_A^plus M_B^minus e^{−θt}
        return plus[:, None] * cgf_a[None, :] + minus[:, None] * cgf_b[None, :] + shift

    rest = {0: others(k, n - 1 - k - c), 1: others(k - c, n - 1 - k)}  # block 0: c others at −b; 1: at +b
    fits = {0: n - 1 - k >= c, 1: k >= c}
    everyone = others(k, n - 1 - k)
    upper = np.empty_like(lower)
    for direction in (0, 1):
        second = levels.log_mgf(lb if direction == 0 else la, thetas)  # Q's client 1
        for index, alpha in enumerate(alphas):
            bounds = []
            for number, pair in enumerate(blocks):
                first_b, second_b = pair if direction == 0 else pair[::-1]
                if alpha == math.inf:  # P/Q ≤ max P_b/Q_b everywhere (data processing)
                    bounds.append(np.where(fits[number], float(np.max(first_b - second_b)), np.inf))
                    continue
                if alpha == 1.0:  # Q h ≤ P (log P/Q)⁺ + Q, and P log(P/Q) ≤ (R′ * H)(s)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        measure = np.log(np.maximum(np.exp(first_b) * (first_b - second_b), 0.0))
                    weight = 0.0
                else:  # Q g ≤ P^α Q^{1−α} + (α − 1) Q, and P^α Q^{1−α} ≤ (R′ * G)(s)
                    measure = alpha * first_b + (1 - alpha) * second_b
                    weight = math.log(alpha - 1.0)
                terms = np.logaddexp(rest[number] + levels.log_mgf(measure, thetas)[None, :],
                                     everyone + second[None, :] + weight)
                terms = np.where(outside, terms, -np.inf)
                right = np.min(np.where(thetas[None, :] > 0, terms, np.inf), axis=1)
                left = np.min(np.where(thetas[None, :] < 0, terms, np.inf), axis=1)
                tail = np.logaddexp(np.where(hi < size - 1, right, -np.inf), np.where(lo > 0, left, -np.inf))
                bounds.append(np.where(fits[number], _raise(lower[direction, :, index], tail, alpha), np.inf))
            best = np.minimum(*bounds)
            if alpha == math.inf:
                best = np.maximum(best, lower[direction, :, index])
            upper[direction, :, index] = best
    return upper


def _raise(found: np.ndarray, log_tail: np.ndarray, alpha: float) -> np.ndarray:
    """The divergence whose sum Σ Q g (Σ Q h for KL) is the window's plus e^{log_tail}, in
    the log domain (log Σ_W Q g = log expm1((α − 1)D) overflows nowhere)."""
    if alpha == 1.0:
        return found + np.exp(log_tail)
    beta = alpha - 1.0
    x = beta * np.asarray(found, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_window = np.where(x > 30.0, x + np.log1p(-np.exp(-np.maximum(x, 30.0))),
                              np.log(np.expm1(np.minimum(x, 30.0))))
    return np.logaddexp(0.0, np.logaddexp(log_window, log_tail)) / beta
