"""The worst case of PBM when the SecAgg sum wraps: a branch-and-bound over the others' inputs.

PBM (Chen, Özgür & Kairouz 2022, arXiv:2207.09916): a client with input x ∈ [−b, b] sends
Binomial(T, p(x)), p(x) = ½ + θx/b affine in x. With ``bits`` the server sees the sum modulo
M = 2^bits. Client 1 at ±b is worst for every law of the others, wrapped or not (a binary channel
per trial, :mod:`rdpcalc.worstcase.secagg`), but wrap-around breaks the argument that puts the others
at ±b, so their inputs range over the whole interval: W_n(α) is a maximum over N = n − 1 inputs
y_i ∈ [−b, b] (a multiset: the others are exchangeable).

**The hull of a box** [derived]. For y ∈ [l, h], p(y) = (1 − t)·p(l) + t·p(h) with t ∈ [0, 1],
so one trial's law is the mixture (1 − t)·Ber(p(l)) + t·Ber(p(h)), and the client's T trials,
independent given t, have the law Σ_i Bin(i; T, t)·V_i with V_i = Bin(i, p(h)) * Bin(T − i, p(l))
(i trials at p(h), the rest at p(l)): a convex combination of the T + 1 pmfs V_i. Let
G(R) = F_α(fold(P_b * R) ‖ fold(P_−b * R)) (and the same with the two laws swapped; KL and
D_∞ likewise), with F_α(P‖Q) = Σ P^α Q^{1−α}. The pair is linear in R and F_α is jointly
convex, so G is convex in R; R = R_2 * … * R_n is linear in each R_i, so G is convex in each
client's law separately, and over a box B = Π_i [l_i, h_i] of inputs

    max over y ∈ B of D_α ≤ max over (i_2 … i_n) ∈ {0 … T}^N of D_α at R = *_k V_{i_k}^{[l_k, h_k]}

(moving one client at a time to a vertex of its hull never decreases G). Clients with the same
interval add up: *_{k∈g} V_{i_k} = Bin(Σ i_k, p(h)) * Bin(|g|T − Σ i_k, p(l)), so a group g of
equal intervals contributes |g|T + 1 rows (one level of Bernoulli trials), and a box Π_g of them.
The box [−b, b]^N is the relaxed family of :mod:`rdpcalc.worstcase.secagg` (every trial on its own).

**Branch and bound.** The boxes are multisets of dyadic intervals of [−b, b]; they start as the
one box [−b, b]^N, and the box whose bound exceeds the value found by the most (relatively, at
some order) is split: its widest interval is halved, the two children cover it. Each new box is
also evaluated at its intervals' midpoints, inputs of the family, whose values raise the value
found. The bound of a box tends to the value at its points as the intervals shrink (the hull
shrinks to the curve). The process stops when every box is within TOLERANCE of the value found
at every order, or after MAX_BOXES boxes, or when a box to split has more than MAX_ROWS hull
rows; the certified bound is the largest bound over the boxes, which cover the family (boxes
met twice are kept once: either copy covers the same inputs).

Floating point: the rows and divergences are the fast engine's (log domain, ~1e−12 relative),
the same as the relaxed family's, and the bound of a box is the engine's accurate divergence of
each row the screen cannot rule out (:func:`rdpcalc.worstcase._pair_maximum`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from ..exactnum import to_mpf
from ..mechanisms import Mechanism

#: the branch-and-bound stops when every box's bound is within this relative distance of the
#: value found, at every order
TOLERANCE = 0.0001
#: it stops after this many boxes have been evaluated
MAX_BOXES = 2_000
#: it stops at a box whose halves would have more hull rows than this (every bound kept as it is)
MAX_ROWS = 20_000

#: an interval of [−b, b] as (depth, index): [−b + 2b·index/2^depth, −b + 2b·(index + 1)/2^depth]
Interval = tuple[int, int]


def endpoints(bound: Fraction, interval: Interval) -> tuple[Fraction, Fraction]:
    """The ends (l, h) of a dyadic interval of [−bound, bound]."""
    depth, index = interval
    width = 2 * bound / 2**depth
    return -bound + index * width, -bound + (index + 1) * width


def row_count(box: Sequence[Interval], trials: int) -> int:
    """The number of hull rows of a box: Π over its groups of equal intervals of (size·T + 1)."""
    return math.prod(box.count(interval) * trials + 1 for interval in set(box))


def split(box: tuple[Interval, ...]) -> list[tuple[Interval, ...]]:
    """The two boxes covering ``box`` with its widest interval (the first of equal ones) halved."""
    index = min(range(len(box)), key=lambda i: (box[i][0], i))
    depth, position = box[index]
    rest = box[:index] + box[index + 1 :]
    return [tuple(sorted(rest + ((depth + 1, 2 * position + half),))) for half in (0, 1)]


@dataclass
class Outcome:
    """The branch-and-bound's result per order: the certified bound (the largest over the
    boxes), the value found (the largest over the evaluated points and the value given), the
    others' inputs attaining it (None where the value given was not beaten), and the work."""

    upper: np.ndarray
    found: np.ndarray
    others: list
    boxes: int
    complete: bool
    stop: str = ""


class _Boxes:
    """A box's certified bound (the maximum over its hull rows, module docstring) and the value
    at its midpoints, for PBM with the sum of ``others`` other clients, by ``engine``."""

    def __init__(self, mechanism: Mechanism, engine, alphas: list[float], pair_maximum: Callable):
        self.mechanism, self.engine, self.alphas, self.pair_maximum = mechanism, engine, alphas, pair_maximum
        self.plus, self.minus = engine.client(mechanism, mechanism.bound), engine.client(mechanism, -mechanism.bound)
        self._trials: dict[Fraction, np.ndarray] = {}
        self._clients: dict[Fraction, np.ndarray] = {}

    def _trial(self, x: Fraction) -> np.ndarray:
        if x not in self._trials:
            with mpmath.workdps(40):
                p = to_mpf(self.mechanism.success_probability(x))
                self._trials[x] = self.engine.from_mpmath([1 - p, p])
        return self._trials[x]

    def _client(self, x: Fraction) -> np.ndarray:
        if x not in self._clients:
            self._clients[x] = self.engine.client(self.mechanism, x)
        return self._clients[x]

    def _pair(self, rest) -> np.ndarray:
        engine = self.engine
        value, _ = self.pair_maximum(engine, engine.add_client(self.plus, rest), engine.add_client(self.minus, rest),
                                     self.alphas)
        return value

    def bound(self, box: tuple[Interval, ...]) -> np.ndarray:
        """The largest D_α over the box's hull rows (a certified bound over the box)."""
        engine, rows = self.engine, None
        for interval in sorted(set(box)):
            low, high = endpoints(self.mechanism.bound, interval)
            size = box.count(interval) * self.mechanism.trials
            group = engine.level(self._trial(high), self._trial(low), size, range(size + 1))
            rows = group if rows is None else np.concatenate([engine.add_client(row, group) for row in rows])
        return self._pair(rows)

    def point(self, box: tuple[Interval, ...]) -> tuple[np.ndarray, tuple]:
        """D_α with every other client at its interval's midpoint, and those (input, count) pairs."""
        points = [sum(endpoints(self.mechanism.bound, interval)) / 2 for interval in box]
        rest = self.engine.unit()
        for x in points:
            rest = self.engine.add_client(self._client(x), rest)
        return self._pair(rest), tuple((x, points.count(x)) for x in sorted(set(points)))


def branch_and_bound(mechanism: Mechanism, n: int, alphas: Sequence[float], engine,
                     pair_maximum: Callable, found: np.ndarray | None = None) -> Outcome:
    """The module docstring's branch-and-bound for PBM with n clients (``engine``: the fast
    engine with the sum's modulus; ``pair_maximum(first, second, alphas)``: the largest D_α
    over row pairs in both directions, and the screened values per row; ``found``: the values
    the search found, the starting incumbent)."""
    trials, others, alphas = mechanism.trials, n - 1, list(alphas)
    boxes_of = _Boxes(mechanism, engine, alphas, pair_maximum)
    incumbent = np.full(len(alphas), -np.inf) if found is None else np.array(found, dtype=float)
    attained: list = [None] * len(alphas)

    def excess(value: np.ndarray) -> float:
        with np.errstate(invalid="ignore", divide="ignore"):
            gaps = np.where(incumbent > 0, value / np.where(incumbent > 0, incumbent, 1.0) - 1.0,
                            np.where(value > incumbent, np.inf, 0.0))
        return float(np.max(gaps))

    def look(box) -> np.ndarray:
        nonlocal incumbent
        value, where = boxes_of.point(box)
        for order in np.nonzero(value > incumbent)[0]:
            attained[order] = where
        incumbent = np.maximum(incumbent, value)
        return boxes_of.bound(box)

    root = ((0, 0),) * others
    seen = {root}
    leaves = {root: look(root)}
    heap = [(-excess(leaves[root]), root)]
    boxes, stop = 1, ""
    while heap:
        key, box = heapq.heappop(heap)
        current = excess(leaves[box])
        if current < -key - 1e-15:  # the incumbent grew since it was pushed: re-rank
            heapq.heappush(heap, (-current, box))
            continue
        if current <= TOLERANCE:
            heapq.heappush(heap, (key, box))
            break
        children = [child for child in split(box) if child not in seen]
        if boxes + len(children) > MAX_BOXES:
            stop = f"after {boxes} boxes (at most {MAX_BOXES})"
            heapq.heappush(heap, (key, box))
            break
        if any(row_count(child, trials) > MAX_ROWS for child in children):
            stop = f"a box with more than {MAX_ROWS} hull rows"
            heapq.heappush(heap, (key, box))
            break
        del leaves[box]
        for child in children:
            seen.add(child)
            leaves[child] = look(child)
            boxes += 1
            heapq.heappush(heap, (-excess(leaves[child]), child))
    upper = np.max(np.array(list(leaves.values())), axis=0)
    return Outcome(np.maximum(upper, incumbent), incumbent, attained, boxes, not stop, stop)
