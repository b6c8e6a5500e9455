"""The others' common component at large n, on a staircase of K: the common-component bound of
:mod:`rdpcalc.worstcase.secagg` with C^{*K} computed at a grid of K only, for sums whose every
K does not fit in memory (RQM with 66 levels at n = 1000: 34 breakpoints × 1000 values of K ×
65 001 points, about 29 GiB).

**The bound it relaxes.** With λ·C the component every breakpoint's pmf shares up to a shift
and K ~ Binomial(n − 1, λ) (weights w_K), for each ordered pair (x, x′) of client 1 and
D_K = D_α(P_x * C^{*K} ‖ P_x′ * C^{*K}),

    W_n(α) ≤ M_α(D) = (1/(α − 1)) log Σ_K w_K e^{(α−1) D_K}   (Σ_K w_K D_K for KL),

maximised over the pairs (proof in :mod:`rdpcalc.worstcase.secagg`).

**Monotone in K.** P_x * C^{*(K+1)} = (P_x * C^{*K}) * C: one Markov kernel (adding an
independent C) applied to both laws, so D_K is non-increasing in K at every order (data
processing). M_α is non-decreasing in each D_K (for α < 1 too: there (α − 1) < 0 twice). So
for a grid 0 = g_0 < g_1 < … < g_L ≤ n − 1 and its cells [g_l, g_{l+1}) (g_{L+1} = n), with
W_l = Σ_{K in cell l} w_K,

    M_α(D) ≤ M_α over the cells of (W_l, D_{g_l})     (the staircase: each cell at its left end),
    M_α(D) ≥ M_α over the cells of (W_l, D_{r_l})     (each cell at its right end r_l = g_{l+1} − 1,

where that is known; else at g_{l+1}, a smaller value). The upper staircase is the certificate;
the distance to the lower one is all it loses to the grid, and the grid is refined (cells
halved where their share of that distance is largest) until the upper staircase is within the
tolerance of the lower one (so of the bound over every K; at most MOST_POINTS values of K), at
the client-1 pair that is largest at μ/8, and then at every pair that is the largest at some
order. At α = ∞, M is max_K D_K = D_0: one client.

**Pairs ruled out.** A pair's staircase over any subset E of the grid that contains 0, each K
at the largest point of E at or below it, is again an upper bound of its M_α (D is
non-increasing). Every pair is screened at 0 (one client, accurate) and at μ/8 (μ = (n − 1)λ,
a sum of an eighth of the points); the largest there is refined and certified first; the
others are screened, in batches of rows, at μ/4, μ/2, μ − 3σ, μ − 6σ and then the
grid's values of K by the weight of their cells, and a pair whose staircase over what is known
of it stays below the certified value (less the screen's error,
:func:`rdpcalc.numerics.fast.screened_divergences`) at every order cannot attain the maximum and
drops out. Every pair left is evaluated accurately on the whole grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..logdomain import logsumexp
from ..numerics import fast

#: the coarse values of K at which every client-1 pair is screened, as fractions of the mean
COARSE_SHARES = (0.125, 0.25, 0.5)
#: the first grid: the mean and these many standard deviations of K around it
FIRST_DEVIATIONS = (-6.0, -3.0, 0.0, 3.0)
#: the grid is refined up to this many values of K (each a sum of n·m points and its pairs)
MOST_POINTS = 64
#: client-1 pairs are screened in batches of rows of about this many bytes
SCREEN_BYTES = 32 * 2**20


def peak_bytes(kinds: int, support: int) -> float:
    """An upper end of :class:`Bound`'s memory (bytes) for ``kinds`` breakpoints and sums of
    ``support`` points: every client's sum at every value of K of the grid (at most MOST_POINTS),
    and one batch of screened rows (at most SCREEN_BYTES), twice for the screen's temporaries."""
    pairs = kinds * (kinds - 1) // 2
    return 8.0 * support * kinds * MOST_POINTS + 2 * min(SCREEN_BYTES, 16.0 * support * pairs)


def log_binomial_pmf(trials: int, k: int, p: float) -> float:
    """log P(K = k) for K ~ Binomial(trials, p), with 0·log 0 = 0."""
    def part(count: int, log_probability) -> float:
        return count * log_probability() if count else 0.0

    return (math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
            + part(k, lambda: math.log(p) if p > 0 else -math.inf)
            + part(trials - k, lambda: math.log1p(-p) if p < 1 else -math.inf))


def log_binomial_weights(trials: int, p: float) -> np.ndarray:
    """log P(K = k), k = 0 … trials, for K ~ Binomial(trials, p) (:func:`log_binomial_pmf`)."""
    return np.array([log_binomial_pmf(trials, k, p) for k in range(trials + 1)])


def cell_log_weights(log_weights: np.ndarray, grid: Sequence[int]) -> np.ndarray:
    """log W_l: the weight of each cell [g_l, g_{l+1}) of the sorted ``grid`` (the last up to the end)."""
    ends = [*grid[1:], len(log_weights)]
    return np.array([logsumexp(log_weights[start:end]) for start, end in zip(grid, ends)])


def mixed(values: np.ndarray, log_weights: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
    """M_α per order of the cells' ``values`` (rows: cells, columns: orders) with weights
    e^{log_weights}: (1/(α−1)) log Σ W e^{(α−1)D}; Σ W·D for KL; max D at ∞."""
    out = np.empty(len(alphas))
    for index, alpha in enumerate(alphas):
        column = values[:, index]
        if alpha == math.inf:
            out[index] = np.max(column)
        elif alpha == 1:
            out[index] = math.inf if np.any(np.isinf(column)) else float(np.dot(np.exp(log_weights), column))
        else:
            out[index] = float(logsumexp(log_weights + (alpha - 1) * column)) / (alpha - 1)
    return out


def staircase(known: dict[int, np.ndarray], grid: Sequence[int]) -> np.ndarray:
    """Each cell's value: the one at the largest K of ``known`` at or below its left end."""
    points = sorted(known)
    return np.array([known[max(k for k in points if k <= start)] for start in grid])


class _Sums:
    """C^{*K} and each client's P * C^{*K}, each computed once."""

    def __init__(self, engine, component: np.ndarray, clients: Sequence[np.ndarray]):
        self.engine, self.component, self.clients = engine, component, list(clients)
        self.rows: dict[int, np.ndarray] = {}
        self.totals: dict[tuple[int, int], np.ndarray] = {}

    def row(self, k: int) -> np.ndarray:
        if k not in self.rows:
            self.rows[k] = np.zeros(1) if k == 0 else \
                np.asarray(self.engine.level(self.component, self.component, k, [0])[0])
        return self.rows[k]

    def total(self, client: int, k: int) -> np.ndarray:
        return self.each([client], k)[0]

    def each(self, clients: Sequence[int], k: int) -> np.ndarray:
        """The rows P_i * C^{*k} of ``clients`` (those not yet known computed in one batch)."""
        missing = sorted({i for i in clients if (i, k) not in self.totals})
        if missing:
            rows = fast.log_convolve_each(np.array([self.clients[i] for i in missing]), self.row(k))
            self.totals.update({(i, k): row for i, row in zip(missing, rows)})
        return np.array([self.totals[i, k] for i in clients])


def _cut(top: np.ndarray) -> np.ndarray:
    """Screened values below this cannot reach ``top`` (the screen's error is below 1e−9)."""
    return top - (1e-8 * np.abs(top) + 1e-9)


class Bound:
    """The bound of the module docstring at the finite orders ``alphas``: :attr:`values` per order
    (max over the client-1 pairs of each pair's upper staircase), :attr:`grid`, the pairs
    evaluated on the whole grid (:attr:`evaluated`) and all pairs (:attr:`pairs`)."""

    def __init__(self, engine, component: np.ndarray, share: float, clients: Sequence[np.ndarray], others: int,
                 alphas: Sequence[float], tolerance: float):
        self.alphas = list(alphas)
        self.log_weights = log_binomial_weights(others, share)
        self.sums = _Sums(engine, component, clients)
        self.engine, self.tolerance = engine, tolerance
        pairs = [(i, j) for i in range(len(clients)) for j in range(i + 1, len(clients))]
        self.pairs = len(pairs)
        mean, deviation = others * share, math.sqrt(others * share * (1 - share))
        coarse = sorted({k for k in (*(round(mean * s) for s in COARSE_SHARES), round(mean - 3 * deviation))
                         if 0 < k < others})
        first = {round(mean + z * deviation) for z in FIRST_DEVIATIONS}
        self.grid = sorted({0, others, *coarse, *(k for k in first if 0 < k < others)})
        self._cells: dict[tuple, np.ndarray] = {}
        known = self._screened(pairs, {pair: {} for pair in pairs}, [0, coarse[0]] if coarse else [0])
        top = max(pairs, key=lambda pair: float(np.sum(self._upper(known[pair]))))
        known[top] = self._refine(top)
        values = self._upper(known[top])
        alive = [pair for pair in pairs if pair != top]
        log_cells = self._cell_log_weights()
        heaviest = [self.grid[cell] for cell in np.argsort(-log_cells, kind="stable")]
        for k in dict.fromkeys([*coarse[1:], round(mean - 6 * deviation), *heaviest]):
            alive = [pair for pair in alive if not np.all(self._upper(known[pair]) < _cut(values))]
            if k not in known[top] or k == 0:
                continue
            known = self._screened(alive, known, [k])
        for pair in alive:  # not ruled out: every value accurate
            known[pair] = self._refine(pair, refine=False)
        certified, refined = [top, *alive], {top}
        while True:  # until the largest pair at each order is one whose grid was refined
            uppers = {pair: self._upper(known[pair]) for pair in certified}
            leaders = {max(certified, key=lambda pair, o=o: uppers[pair][o]) for o in range(len(self.alphas))}
            if leaders <= refined:
                break
            for pair in leaders - refined:
                known[pair] = self._refine(pair, known[pair])
                refined.add(pair)
        self.values = np.max([self._upper(known[pair]) for pair in certified], axis=0)
        self.evaluated = len(certified)

    def _accurate(self, pair: tuple[int, int], k: int) -> np.ndarray:
        """(both directions, orders) of the pair's accurate divergences at K = k."""
        first, second = self.sums.each(pair, k)
        forward, backward = self.engine.divergences_both(first[None], second[None], self.alphas)
        return np.array([np.asarray(forward, dtype=float)[0], np.asarray(backward, dtype=float)[0]])

    def _screened(self, pairs: Sequence[tuple[int, int]], known: dict, ks: Sequence[int]) -> dict:
        """``known`` with each pair's values at each of ``ks`` added: accurate at 0 (one client),
        screened at the others (in one batch per k)."""
        for k in ks:
            step = max(1, SCREEN_BYTES // (16 * len(self.sums.row(k))))
            for start in range(0, len(pairs), step):
                batch = pairs[start : start + step]
                first = self.sums.each([i for i, _ in batch], k)
                second = self.sums.each([j for _, j in batch], k)
                screen = self.engine.divergences_both if k == 0 else self.engine.screen_both
                forward, backward = (np.asarray(side, dtype=float) for side in screen(first, second, self.alphas))
                for index, pair in enumerate(batch):
                    known[pair][k] = np.array([forward[index], backward[index]])
        return known

    def _cell_log_weights(self) -> np.ndarray:
        key = tuple(self.grid)
        if key not in self._cells:
            self._cells[key] = cell_log_weights(self.log_weights, self.grid)
        return self._cells[key]

    def _upper(self, known: dict[int, np.ndarray]) -> np.ndarray:
        """The pair's upper staircase over the grid, the larger direction, per order."""
        cells = staircase(known, self.grid)
        log_cells = self._cell_log_weights()
        return np.maximum(mixed(cells[:, 0], log_cells, self.alphas), mixed(cells[:, 1], log_cells, self.alphas))

    def _lower(self, known: dict[int, np.ndarray]) -> np.ndarray:
        """The pair's lower staircase (each cell at its right end, or the next grid point), per order."""
        ends = [*self.grid[1:], self.grid[-1]]
        cells = np.array([known[end - 1] if end - 1 in known else known[end] for end in ends])
        cells[-1] = known[self.grid[-1]]
        log_cells = self._cell_log_weights()
        return np.maximum(mixed(cells[:, 0], log_cells, self.alphas), mixed(cells[:, 1], log_cells, self.alphas))

    def _refine(self, pair: tuple[int, int], known: dict[int, np.ndarray] | None = None,
                refine: bool = True) -> dict[int, np.ndarray]:
        """The pair evaluated accurately on the grid (``known``: its accurate values so far), and
        (``refine``) the grid refined until its upper staircase is within the tolerance of its
        lower one at every order (or MOST_POINTS values of K)."""
        known = dict(known or {})
        known.update({k: self._accurate(pair, k) for k in self.grid if k not in known})
        while refine and len(self.grid) < MOST_POINTS:
            upper, lower = self._upper(known), self._lower(known)
            slack = (upper - lower) / np.maximum(np.abs(lower), 1e-300)
            order = int(np.argmax(slack))
            if slack[order] <= self.tolerance:
                break
            cell = self._widest_gap(known, order)
            if cell is None:
                break
            middle = (self.grid[cell] + self.grid[cell + 1]) // 2
            self.grid = sorted({*self.grid, middle})
            known[middle] = self._accurate(pair, middle)
        return known

    def _widest_gap(self, known: dict[int, np.ndarray], order: int) -> int | None:
        """The cell of at least two values of K whose upper and lower terms differ most at ``order``."""
        alpha = self.alphas[order]
        log_cells = self._cell_log_weights()
        best, chosen = -math.inf, None
        for cell, (start, end) in enumerate(zip(self.grid, self.grid[1:])):
            if end - start < 2:
                continue
            high, low = np.max(known[start][:, order]), np.max(known[end][:, order])
            if alpha == 1:
                spread = math.log(max(high - low, 1e-300))
            else:  # log(e^{(α−1)·high} − e^{(α−1)·low}), in absolute value
                spread = max((alpha - 1) * high, (alpha - 1) * low) + \
                    math.log(max(-math.expm1(-abs((alpha - 1) * (high - low))), 1e-300))
            gap = log_cells[cell] + spread
            if gap > best:
                best, chosen = gap, cell
        return chosen
