"""The others as mixtures of anchor inputs: a certified bound on the SecAgg worst case for a
mechanism whose other clients' inputs range over an interval [−b, b] (the quantized Gaussian).

Notation as in :mod:`rdpcalc.worstcase.certificate`: client 1 holds x or x′ (laws P_x, P_x′),
the N = n − 1 others hold inputs y_j ∈ [−b, b] with pmfs P_{y_j}, and for α > 1
F_α(P‖Q) = Σ_s P(s)^α Q(s)^{1−α}. Facts: (F1) joint convexity of F_α and KL; (F2) data
processing (adding independent noise cannot increase F_α, KL or D_∞).

**Theorem C (anchored mixtures).** Let a₁ < … < a_m be anchors in [−b, b] and ρ ∈ [0, 1] be
such that for every y ∈ [−b, b] there are weights w_i(y) ≥ 0 with Σ_i w_i(y) P_{a_i} ≤ P_y
(every output) and Σ_i w_i(y) ≥ 1 − ρ. Let V(K) be the largest F_α(P_x * R_A ‖ P_x′ * R_A) over
the multisets A of K anchors (R_A the sum of clients at A), and D ~ Binomial(N, ρ). Then for
every configuration of the others

    F_α(P_x * R ‖ P_x′ * R) ≤ E[V(N − D)] ≤ Σ_i P(d_{i−1} < D ≤ d_i) · V(N − d_i)

for any cuts −1 = d₀ < d₁ < … < d_L = N, and the same for KL in place of F_α.

*Proof.* Write P_{y_j} = Σ_i w_i(y_j) P_{a_i} + ρ_j E_j with ρ_j = 1 − Σ_i w_i(y_j) ≤ ρ and E_j ≥ 0
a pmf (where ρ_j > 0). Give other client j an independent latent that picks anchor i with
probability w_i(y_j) and the residual E_j with probability ρ_j: marginally its output has law
P_{y_j}, and the latent's law does not depend on client 1's input. So P_x * R and P_x′ * R are
the same mixture, over the latents' outcomes π, of P_x * R_π and P_x′ * R_π, and (F1) bounds
F_α by the average of F_α(P_x * R_π ‖ P_x′ * R_π). With D_π the clients that drew a residual,
R_π = R_{A_π} * (the residuals of D_π), A_π a multiset of N − |D_π| anchors; (F2) drops the
residuals, so each term is at most V(N − |D_π|). V(K + 1) ≤ V(K) (F2 again: a multiset of
K + 1 anchors holds one of K), so V(N − d) is non-decreasing in d. |D_π| is a sum of independent
Bernoulli(ρ_j), ρ_j ≤ ρ, which is stochastically below Binomial(N, ρ) (couple each with
1{U_j < ρ_j} ≤ 1{U_j < ρ}, U_j uniform), so E[V(N − |D_π|)] ≤ E[V(N − D)]. Bounding V(N − d)
by V(N − d_i) on each cut gives the sum. ∎

So W_n(α) ≤ (1/(α − 1)) log of the sum (KL: the sum itself), for client 1's pairs over which
V is taken. For α = ∞ the bound degenerates to V(0) (one client), so it is not used there.
The weights are :func:`rdpcalc.worstcase.staircase.cell_log_weights` of the binomial's log pmf,
and the sum is :func:`rdpcalc.worstcase.staircase.mixed`, as for the common component's
staircase; V carries the certificate's rounding margins (above 10⁻¹⁴/(α − 1) in D_α), which
cover the weights' rounding (about 10⁻¹⁵ relative in F_α).

*The weights.* Where every output's probability is unimodal in the input (``UNIMODAL_IN_INPUT``),
on a cell [y₀, y₁] of the interval P_y ≥ L := min(P_{y₀}, P_{y₁}) for every y in it (a
unimodal function's minimum over an interval is at an end). A linear program (maximise Σ w_i
subject to Σ_i w_i P_{a_i} ≤ L, w ≥ 0, each output's row divided by L) gives weights for the
whole cell; they are then scaled down so that Σ_i w_i P_{a_i} ≤ L·(1 − PMF_MARGIN) holds in
floating point, which leaves room for the float pmfs' error (below 10⁻¹³ relative: the
exponentials of logs of exact probabilities), so it holds for the exact pmfs. ρ is the largest
1 − Σ w_i over the cells, which are halved where a cell's residual is above the largest at the
cells' ends (the zero-width cells) by more than CELL_SLACK (relative) and CELL_ROOM. For a mirror-symmetric mechanism
(P_{−y} is P_y read backwards) the anchors are closed under y ↦ −y, so the weights of y, mirrored,
serve −y, and the cells cover [−b, 0] only.

Anchors spread evenly over [−b, b], both ends included: for the quantized Gaussian (σ = C_q = 1,
k = 16) the residual is 0.14 with the ends alone, 0.04 with three anchors, 0.011 with five,
0.0027 with nine (at the inputs; the cells add a little), and V over the anchors' multisets is
the exhaustive maximum that :mod:`rdpcalc.worstcase.secagg` computes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import staircase

#: the anchor counts tried, most first
ANCHOR_COUNTS = (17, 9, 6, 5, 3, 2)
#: the cells of the interval a weight search starts with, and the most it halves them into
START_CELLS = 8
MAX_CELLS = 1024
#: a cell is halved while its residual exceeds the largest residual at the cells' ends by more
#: than this (relative) and by more than CELL_ROOM (absolute: a residual ρ loosens the bound by
#: about ρ relative, so 5e−4 costs 0.05 %)
CELL_SLACK = 0.05
CELL_ROOM = 5e-4
#: the relative room left for the float pmfs' error (module docstring, *The weights*)
PMF_MARGIN = 1e-9
#: an anchor whose pmf exceeds a cell's lower envelope by more than this factor at some output
#: gets weight 0 there (its weight could be at most the inverse, 10⁻⁶: the residual grows by at
#: most that), which keeps the linear program's coefficients in range
LARGEST_RATIO = 1e6
#: the cuts of D ~ Binomial(N, ρ): the smallest d whose distribution function reaches each of
#: these, then the smallest d whose tail beyond it is at most each of TAIL_CUTS, then N
QUANTILE_CUTS = (1e-9, 0.01, 0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 0.95, 0.99, 0.999)
TAIL_CUTS = (1e-6, 1e-12, 1e-24, 1e-48, 1e-96, 1e-192)


@dataclass(frozen=True)
class Mixture:
    """Anchor inputs and a residual ρ for which Theorem C's premise holds (``cells``: the cells
    of the interval the weights were certified on, each bounded below by its ends' envelope)."""

    anchors: tuple[Fraction, ...]
    residual: float
    cells: tuple[tuple[Fraction, Fraction], ...]

    def describe(self) -> str:
        return (f"every other client a mixture of {len(self.anchors)} anchor inputs and a residual of mass ≤ "
                f"{self.residual:.4g} (dropped), certified on {len(self.cells)} cells of the interval")


def spread(low: Fraction, high: Fraction, count: int) -> tuple[Fraction, ...]:
    """``count`` ≥ 2 anchors spread evenly over [low, high], both ends included."""
    return tuple(low + (high - low) * Fraction(i, count - 1) for i in range(count))


def anchored_weights(anchor_rows: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Weights w ≥ 0 of the largest Σ w_i with Σ_i w_i·anchor_rows[i] ≤ lower·(1 − PMF_MARGIN)
    in floating point (module docstring, *The weights*): a linear program's weights, scaled down
    until they satisfy it (all 0 where it fails)."""
    from scipy.optimize import linprog  # scipy.optimize: start-up time

    positive = lower > 0
    allowed = np.all(anchor_rows[:, ~positive] == 0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = anchor_rows[:, positive] / lower[positive]
    allowed &= np.max(ratios, axis=1, initial=0.0) <= LARGEST_RATIO
    weights = np.zeros(len(anchor_rows))
    if not np.any(allowed):
        return weights
    result = linprog(-np.ones(int(allowed.sum())), A_ub=ratios[allowed].T, b_ub=np.ones(ratios.shape[1]),
                     bounds=(0, None), method="highs")
    if result.status != 0:
        return weights
    weights[allowed] = np.maximum(result.x, 0.0)
    excess = float(np.max(weights @ ratios, initial=0.0))
    weights /= max(excess, 1.0) * (1 + PMF_MARGIN)
    for _ in range(8):  # the check's own rounding: shrink until it holds
        if not np.any(weights @ anchor_rows > lower * (1 - PMF_MARGIN)):
            return weights
        weights *= 1 - PMF_MARGIN
    return np.zeros(len(anchor_rows))


def _residual(anchor_rows: np.ndarray, lower: np.ndarray) -> float:
    """1 − Σ w_i for :func:`anchored_weights`."""
    return 1.0 - float(anchored_weights(anchor_rows, lower).sum())


def mixture(pmf_at: Callable[[Fraction], np.ndarray], low: Fraction, high: Fraction, count: int,
            mirrored: bool = False) -> Mixture:
    """Anchors spread over [low, high] and a certified residual ρ (module docstring, *The
    weights*; ``pmf_at``: a float pmf per input, every output's probability unimodal in it).
    ``mirrored``: P_{−y} is P_y read backwards and low = −high; the anchors are closed under
    y ↦ −y, so weights for y serve −y with the anchors mirrored, and the cells cover [low, 0]."""
    known: dict[Fraction, np.ndarray] = {}

    def pmf(y: Fraction) -> np.ndarray:  # each point's pmf once: a point ends two cells
        if y not in known:
            known[y] = pmf_at(y)
        return known[y]

    anchors = spread(low, high, count)
    rows = np.array([pmf(a) for a in anchors])
    points = list(spread(low, (low + high) / 2 if mirrored else high, START_CELLS + 1))
    at_points = {p: _residual(rows, pmf(p)) for p in points}
    cells: dict[tuple[Fraction, Fraction], float] = {}
    for left, right in zip(points, points[1:]):
        cells[left, right] = _residual(rows, np.minimum(pmf(left), pmf(right)))
    while len(cells) < MAX_CELLS:
        largest = max(at_points.values())
        target = max(largest * (1 + CELL_SLACK), largest + CELL_ROOM)
        loose = [cell for cell, residual in cells.items() if residual > target]
        if not loose or len(cells) + len(loose) > MAX_CELLS:
            break
        for left, right in loose:
            middle = (left + right) / 2
            at_points[middle] = _residual(rows, pmf(middle))
            del cells[left, right]
            for cell in ((left, middle), (middle, right)):
                cells[cell] = _residual(rows, np.minimum(pmf(cell[0]), pmf(cell[1])))
    return Mixture(anchors, min(1.0, max(cells.values())), tuple(sorted(cells)))


def cuts(others: int, residual: float) -> list[tuple[int, float]]:
    """Theorem C's cuts for D ~ Binomial(``others``, ``residual``): (d_i, log P(d_{i−1} < D ≤ d_i))
    for QUANTILE_CUTS and TAIL_CUTS, ending at d = others (the cuts with no mass left out)."""
    log_pmf = staircase.log_binomial_weights(others, residual)
    cdf = np.cumsum(np.exp(log_pmf))
    tails = np.append(np.logaddexp.accumulate(log_pmf[::-1])[::-1][1:], -np.inf)  # log P(D > d)
    chosen = {int(np.searchsorted(cdf, q)) for q in QUANTILE_CUTS}
    chosen |= {int(np.searchsorted(-tails, -math.log(t))) for t in TAIL_CUTS}
    ends = sorted({min(d, others) for d in chosen} | {others})
    weights = staircase.cell_log_weights(log_pmf, [0] + [d + 1 for d in ends[:-1]])
    return [(d, float(w)) for d, w in zip(ends, weights) if w > -np.inf]
