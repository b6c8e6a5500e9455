"""Certified upper bounds on the SecAgg worst case W_n(α), tight to the value found.

Notation (as in :mod:`rdpcalc.worstcase.secagg`). Breakpoints b₁ < … < b_r, P_b one client's pmf at
b (support {0 … m−1}); client 1 holds x (law P_x) or x′ (P_x′); the other N = n − 1 clients
form a multiset M of breakpoints (for a mechanism affine between its breakpoints this loses
nothing: :mod:`rdpcalc.worstcase.secagg`), R_M = *_{b∈M} P_b. For α > 1,
F_α(P‖Q) = Σ_s P(s)^α Q(s)^{1−α} and D_α = log F_α/(α − 1); KL = D₁; D_∞ = log max_s P(s)/Q(s);

    W_n(α) = max over x, x′ and M of D_α(P_x * R_M ‖ P_x′ * R_M).

Facts (all standard): (F1) joint convexity: F_α and KL are jointly convex in (P, Q), so for a
mixture with weights w_T that are the same under both laws, F_α(Σ w_T P_T ‖ Σ w_T Q_T) ≤
Σ w_T F_α(P_T ‖ Q_T), and the same for KL; (F2) data processing: adding independent noise (a
convolution with a pmf G) cannot increase F_α, KL or D_∞; (F3) shift invariance: shifting both
laws by the same integer changes nothing.

**Exhaustive.** When the multisets of the others are few enough, all of them are evaluated
(every pair of client 1 not ruled out below): W_n itself, and the bracket closes.

**Theorem A (exact and soft breakpoints).** Split the breakpoints into an *exact* group X and
a *soft* group S. Let λ·C(d) = min over b ∈ S of P_b(m_b + d), with m_b the mode of P_b
(:func:`split`): then every P_b (b ∈ S) is λ·C(· − m_b) + (1 − λ)·E_b with E_b a pmf. Write
M = d ⊔ s, d a multiset of N − k exact breakpoints and s of k soft ones. With w_j =
Bin(j; k, 1 − λ),

    F_α(P_x * R_M ‖ P_x′ * R_M) ≤ Σ_j w_j V_j,   V_j = max over A ∈ MS_j(S) of
                                                 F_α(P_x * R_d * C^{*(k−j)} * E_A ‖ P_x′ * …),

and V_j ≤ max over A′ ∈ MS_{J′}(S) of F_α(P_x * R_d * C^{*c′} * E_A′ ‖ …) for any J′ ≤ j and
c′ ≤ k − j (the *staircase*). So W_n(α) ≤ max over x, x′, k and d of (1/(α−1)) log Σ_j w_j V_j;
for KL the same with KL in place of F_α and without the log.

*Proof.* Give each soft client i an independent latent ξ_i ~ Bernoulli(1 − λ): given ξ_i = 0
its output has law C(· − m_{s_i}), given ξ_i = 1 law E_{s_i}; marginally that is P_{s_i}. So
R_M is the mixture over the set T of soft clients with ξ = 1 of R_d * δ_{shift_T} *
C^{*(k−|T|)} * E_{A_T} with weights (1 − λ)^{|T|} λ^{k−|T|}, which do not depend on x; P_x * R_M
and P_x′ * R_M are the same mixture of P_x * (component) and P_x′ * (component). (F1) bounds
F_α of the mixture by the weighted sum over T, (F3) removes the shift, and bounding each term
by the largest over the multisets A_T of size |T| = j gives the first display. Staircase:
E_A = E_{A′} * E_{A∖A′} and C^{*(k−j)} = C^{*c′} * C^{*(k−j−c′)}; dropping the independent
factors cannot increase F_α (F2). ∎

Special cases: S = ∅ is the exhaustive enumeration; the bound is exact at every node with
k = 0. What it loses is the latent's information (the mixture over j is bounded by its
components) and the residuals the staircase drops; both are small when λ is close to 1 and the
soft breakpoints are those whose configurations lie below the worst one.

**Theorem B (data processing, D_∞).** W_n(α) ≤ W_{n′}(α) for n′ ≤ n (drop n − n′ others:
F2), and W_{n′} is computed exhaustively. Used for α = ∞, where Theorem A's mixture bound is
only the largest component; and since D_α ≤ D_∞, it caps every order.

**The interval (the quantized Gaussian).** Where the others' inputs range over [−b, b] and
every output's probability is unimodal in the input, min over y of P_y(i) = min(P_−b(i),
P_b(i)): the whole interval is a soft group with λ·C = min(P_−b, P_b) and no shift, and the
ends ±b an exact group (:func:`continuum`); the residuals, one per input of a continuum, are
dropped by the staircase. That drops much (λ = 0.62 for σ = C_q = 1, k = 16); Theorem C of
:mod:`rdpcalc.worstcase.anchors` (each other a mixture of a few anchor inputs) drops far less.

**Pruning and the search for a certificate.** A client-1 pair whose one-client value is at
most the value found at every order cannot attain the maximum (F2) and is left out. Each
mirror class of the other pairs is bounded by the cheapest split first (every breakpoint soft,
then exact groups of increasing size, :func:`candidate_splits`; cheapest by the work estimated
from the node bounds of its coarser splits, :class:`_Queue`), keeping the first that is
within TOLERANCE (``certify_within``) of the value found at every order (the smallest bound kept either way);
within a split, each node takes the cheapest staircase of :data:`PLANS` that meets that
target. The certificate is the largest bound over the nodes and pairs, and never below the
value found. For a mirror-symmetric mechanism (D(x, x′, M) = D(−x, −x′, −M)) only one of each
mirror pair of multisets is evaluated; both directions of every pair are. The work is bounded
(:data:`THEOREM_A_WORK`; the exhaustive part by the search's budget): where a split does not
fit, the classes keep the best bound found, and the caller takes the smaller of this and its
other bounds.

*One direction at a time.* Theorem A holds for any split and any one direction (x, x′) of a
pair: the proof bounds D_α(P_x * R_M ‖ P_x′ * R_M) for each M. A class that the cheapest exact
split leaves above the target is also bounded direction by direction, each with an exact group
of its own (:func:`directed_splits`: that direction's worst breakpoints, then, one at a time,
the breakpoint whose removal from the soft group raises its common component the most, e.g.
an edge whose pmf the end levels distort, until the component reaches SOFT_SHARE), over every
multiset M. For a mirror-symmetric mechanism D(x, x′, M) = D(−x, −x′, −M), so the
maximum over M of both directions of the class {(x, x′), (−x, −x′)} is the maximum over M of
D(x, x′, ·) and of D(x′, x, ·); where x′ = −x, D(x′, x, M) = D(x, x′, −M) and the forward
direction alone is that maximum (:func:`directions`). A direction's worst multisets lie on one
side (RQM's headline, (x, x′) = (−1.5, 1.5): the others at −1.4 or −1.5), so its exact
group needs no mirror images: three breakpoints where the class would need four, and 11 480
nodes at n = 40 against 61 705 (halved by the mirror) — the whole class's split is still tried
when it is the cheaper, and the class keeps the smaller bound.

*Refinement.* Where a finer split (exact group X′) follows a coarser one (X ⊆ X′) for the same
pairs, or the coarser one bounds a class holding them (both directions of every member), the
coarser nodes' bounds are reused (:func:`refined`). A finer node fixes the counts d′ of the
others at the breakpoints of X′, so each of its multisets has the counts d′ restricted to X at
X: it is a multiset of the coarser node d = d′|_X, whose bound B(d) bounds it (Theorem A holds
node by node). Let B′ be the finer bounds computed and L the finer nodes left out: if every
node in L lies in a coarser node with B(d) ≤ max B′ at every order, then max B′ bounds every
multiset. The first pass computes the finer nodes under the coarser nodes above the targets
at some order; the second, those under the other coarser nodes that are above, at some order,
the first pass's maximum; L is the rest. A maximum over some of the finer nodes is never above
the maximum over all of them, so reuse never loosens the split's bound (it tightens it where a
node left out has a bound above its coarser node's); the work limit still counts every finer
node. Which split runs next is the one with the fewest node-clients under coarser nodes above
the values found, those its passes may compute (of equal ones, the larger common component):
a finer split per direction of a class may then come before the class's whole split of the
same exact group, when the direction's node bounds leave fewer of its nodes open; a split
computed for the whole class is not computed again per direction, nor one computed for each
direction for the whole class. For a mirror-symmetric class a node's bound is recorded for its
mirror image as well (the same value). The node bounds are kept while their
class is open, NODES_BYTES in all; a split with none to reuse computes every node.

**Floating point.** The rows are sums of products of non-negative floats (no cancellation):
an entry of a sum of n clients has relative error below n(m + 2)·2⁻⁵³ (the float pmfs are
within 2⁻⁵² of the exact ones), F_α's terms (2α + 1) times that plus their own few roundings,
its sum S·2⁻⁵³ more (S points); :func:`rounding_margin` adds twice that to every bound. For
pmfs of full support every entry is positive in exact arithmetic, so a float 0 is an underflow
(below 2⁻¹⁰²²): where one row underflows and the other does not, the term is bounded by the
pair's likelihood-ratio bound ρ (never a false +∞), and where both do, by 2⁻¹⁰²²·ρ^{α−1}
(:func:`rdpcalc.numerics.trees._log_f_terms`). F_α itself overflows past (α − 1)·D_α ≈ 700,
which gives +∞, a valid but useless bound: Theorem A runs up to α = LARGEST_ORDER, and the
orders above are capped by D_∞.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..numerics import trees
from .blocks import aligned_minimum
from .remembered import Remembered

#: Theorem A's nodes are refined until they are within this relative distance of the value found
#: (by default: ``certify_within`` of the search sets another)
TOLERANCE = 0.005
#: the largest ``certify_within`` accepted
MAX_TOLERANCE = 0.5
#: the relative rounding of a value found (the fast engine's accuracy): a class of pairs whose bound exceeds
#: the value found by less than this (and the margins) is within any tolerance
FOUND_ROUNDING = 1e-12
#: Theorem A runs at orders up to this; beyond it D_∞'s certificate caps the curve (D_α ≤ D_∞)
LARGEST_ORDER = 64.0
#: the soft group is the breakpoints below the worst ones whose common component has at least
#: this mass (:func:`candidate_splits`)
SOFT_SHARE = 0.9
#: the orders at which Theorem A runs at most; between them the bound follows chords
#: (:func:`rdpcalc.worstcase._by_chords`)
ORDERS = 6
#: up to this many finite orders asked (up to LARGEST_ORDER), Theorem A runs at each of them
#: (no chords: the claims' sweep of the papers' figures asks seven)
DIRECT_ORDERS = 8
#: Theorem A evaluates at most this many nodes × clients (multisets of the exact group over every
#: k, per mirror class of pairs, or direction of a pair, and split, times n: a node's cost grows
#: with its rows' length); RQM's n = 40 headline takes about 2.7·10⁶ (13 s on a slow two-core machine)
THEOREM_A_WORK = 16_000_000
#: Theorem A runs at an order α only where (α − 1)·log ρ stays below this (ρ: the pairs' largest likelihood
#: ratio, finite, which bounds every configuration's): beyond it F_α may overflow float64 (e^709) to a useless
#: +∞ that no staircase can lower; those orders are capped by D_∞ (Theorem B) alone
OVERFLOW_EXPONENT = 690.0
#: the staircases of a node, tried in turn until one is within the tolerance: (J₀, J′, fine):
#: V_j exactly for j ≤ J₀ (every residual multiset of size j), then steps with J′ residuals,
#: single up to j = fine, then doubling (:func:`_steps`)
PLANS = ((0, 0, 4), (1, 0, 4), (1, 1, 6), (2, 2, 8), (3, 2, 12))
#: the largest residual multiset a staircase uses
_LARGEST_RESIDUAL = max(max(j0, js) for j0, js, _ in PLANS)

#: float64's unit roundoff
UNIT_ROUNDOFF = 2.0**-53


# ----------------------------------------------------------------------------- the problem
def ratio_bounds(pmfs: np.ndarray, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """ρ per pair and direction: max_i P_x(i)/P_x′(i) (+inf where P_x′ has a zero P_x has not),
    which bounds the likelihood ratio of P_x * R against P_x′ * R for every pmf R."""
    out = np.ones((len(pairs), 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        for row, (i, j) in enumerate(pairs):
            for direction, (a, b) in enumerate(((pmfs[i], pmfs[j]), (pmfs[j], pmfs[i]))):
                out[row, direction] = float(np.max(np.where(a > 0, a / b, 0.0)))
    return out


def rounding_margin(alpha: float, clients: int, outputs: int) -> float:
    """What is added to a bound on D_α (module docstring, floating point): twice the rounding of
    the rows and of the sum over S = clients·(outputs − 1) + 1 points (the entries that
    underflowed are bounded in the kernel, :func:`rdpcalc.numerics.trees._log_f_terms`)."""
    if alpha == math.inf:
        return 0.0
    support = clients * (outputs - 1) + 1
    entry = clients * (outputs + 2) * UNIT_ROUNDOFF
    if alpha == 1:
        return 2 * (3 * entry + support * UNIT_ROUNDOFF)
    powers = 4 * alpha + 2 * trees.ROOTS + 8  # a term's own rounding: square roots, products, exp and log
    return 2 * ((2 * alpha + 1) * entry + (support + powers) * UNIT_ROUNDOFF) / (alpha - 1)


def _scale(alphas: Sequence[float]) -> np.ndarray:
    """α − 1 per order (1 for KL and D_∞): the kernel's log F_α is (α − 1)·D_α."""
    return np.array([1.0 if alpha in (1, math.inf) else alpha - 1 for alpha in alphas])


@dataclass(frozen=True)
class Problem:
    """What every bound here shares: the breakpoints' float pmfs (rows, one client each), the
    unordered client-1 pairs in play (both directions are evaluated; ``directed``: ordered
    pairs, the forward direction only), the orders (1 for KL, finite, or ∞), the mirror map of
    the breakpoints (None: not mirror-symmetric) and the number of clients in the sum."""

    pmfs: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    alphas: tuple[float, ...]
    mirror: tuple[int, ...] | None
    clients: int
    directed: bool = False

    @property
    def others(self) -> int:
        return self.clients - 1

    def with_pairs(self, pairs) -> Problem:
        return Problem(self.pmfs, tuple(pairs), self.alphas, self.mirror, self.clients, self.directed)

    def margins(self) -> np.ndarray:
        return np.array([rounding_margin(alpha, self.clients, self.pmfs.shape[1]) for alpha in self.alphas])

    def kernel_pairs(self) -> tuple:
        """The kernel's pairs: the pmfs of client 1's inputs in play, each pair as two indices
        into them, ρ per pair and direction, and the number of directions evaluated (2, or 1:
        the forward one)."""
        used = sorted({index for pair in self.pairs for index in pair})
        return (np.ascontiguousarray(self.pmfs[used]), np.array([used.index(i) for i, _ in self.pairs], dtype=np.int64),
                np.array([used.index(j) for _, j in self.pairs], dtype=np.int64), ratio_bounds(self.pmfs, self.pairs),
                1 if self.directed else 2)

    def kernel_orders(self, targets: np.ndarray | None) -> tuple:
        """The kernel's orders: the orders, their codes, and the targets in the kernel's units
        (log F_α; KL and D_∞ as they are), margins taken off (−inf: no target)."""
        wanted = np.full(len(self.alphas), -np.inf) if targets is None else \
            (np.asarray(targets, dtype=float) - self.margins()) * _scale(self.alphas)
        return (np.array(self.alphas, dtype=float), *trees.order_codes(self.alphas), wanted)


def mirror_classes(pairs: Sequence[tuple[int, int]], mirror: Sequence[int] | None) -> list[tuple[tuple[int, int], ...]]:
    """The unordered pairs grouped with their mirror images (x, x′) ↦ (−x, −x′): evaluated
    together, one of each mirror pair of multisets suffices (module docstring)."""
    seen, classes = set(), []
    for pair in pairs:
        key = tuple(sorted(pair))
        if key in seen:
            continue
        members = [key]
        if mirror is not None:
            image = tuple(sorted((mirror[pair[0]], mirror[pair[1]])))
            if image != key:
                members.append(image)
        seen.update(members)
        classes.append(tuple(members))
    return classes


def _mirror_of(kinds: Sequence[int], mirror: Sequence[int] | None) -> np.ndarray:
    """The mirror map restricted to ``kinds`` (positions), or [−1] when the kinds are not
    closed under it (then no multiset is skipped)."""
    if mirror is None or not len(kinds) or any(mirror[k] not in kinds for k in kinds):
        return np.array([-1], dtype=np.int64)
    return np.array([list(kinds).index(mirror[k]) for k in kinds], dtype=np.int64)


def _mirror_paired(kinds: int, mirror: Sequence[int] | None) -> list[int]:
    """The kinds 0 … kinds − 1, each followed by its mirror image (kinds in natural order without
    a mirror): the kernel's tasks fix the first two kinds' counts, so a whole task whose mirror
    image comes first is skipped (:func:`rdpcalc.numerics.trees._mirror_closed`)."""
    order: list[int] = []
    for kind in range(kinds):
        if kind not in order:
            order.append(kind)
            if mirror is not None and mirror[kind] not in order:
                order.append(mirror[kind])
    return order


# ----------------------------------------------------------------------------- Theorem A's split
@dataclass(frozen=True)
class Split:
    """Theorem A's groups: ``exact`` and ``soft`` (indices of breakpoints), the soft group's
    common component C with mass ``share`` (λ), and its residuals E_b (rows, one per soft
    breakpoint, on the support of P_b)."""

    exact: tuple[int, ...]
    soft: tuple[int, ...]
    share: float
    component: np.ndarray
    residuals: np.ndarray

    def nodes(self, others: int) -> int:
        """Multisets of the exact group over every k = 0 … others: C(others + |X|, |X|)."""
        return math.comb(others + len(self.exact), len(self.exact))


def split(pmfs: np.ndarray, exact: Sequence[int], soft: Sequence[int]) -> Split:
    """The common component of the soft breakpoints' pmfs, each aligned at its mode: λ·C(d) =
    min over b ∈ S of P_b(m_b + d), and E_b = (P_b − λ·C(· − m_b))/(1 − λ) ≥ 0 (module
    docstring, Theorem A)."""
    rows = pmfs[list(soft)]
    modes = rows.argmax(axis=1)
    shared, first = aligned_minimum(rows, modes)
    share = float(shared.sum())
    residuals = np.empty_like(rows)
    for index, (row, mode) in enumerate(zip(rows, modes)):
        rest = row.copy()
        rest[mode + first : mode + first + len(shared)] -= shared
        residuals[index] = np.maximum(rest, 0.0) / (1.0 - share) if share < 1 else row
    return Split(tuple(exact), tuple(soft), share, shared / share, residuals)


def candidate_splits(pmfs: np.ndarray, rankings: Sequence[Sequence[int]], mirror: Sequence[int] | None) -> list[Split]:
    """The exact groups tried, cheapest first: for each ranking of the breakpoints (worst first,
    e.g. by the value of their homogeneous configuration at one order), the worst breakpoints
    (with their mirror images) taken one more at a time, each group whose complement has a common
    component of mass at least SOFT_SHARE; and each single breakpoint with its mirror image whose
    complement has."""
    found: dict[tuple[int, ...], Split] = {}
    for index in range(len(pmfs)):
        exact = sorted({index, mirror[index]} if mirror is not None else {index})
        soft = [i for i in range(len(pmfs)) if i not in exact]
        if soft:
            candidate = split(pmfs, exact, soft)
            if candidate.share >= SOFT_SHARE:
                found.setdefault(candidate.exact, candidate)
    for ranking in rankings:
        exact: list[int] = []
        for index in ranking:
            if index in exact:
                continue
            exact.append(index)
            if mirror is not None and mirror[index] not in exact:
                exact.append(mirror[index])
            soft = [i for i in range(len(pmfs)) if i not in exact]
            if not soft:
                break
            candidate = split(pmfs, sorted(exact), soft)
            if candidate.share >= SOFT_SHARE:
                found.setdefault(candidate.exact, candidate)
    return sorted(found.values(), key=lambda chosen: len(chosen.exact))


# ----------------------------------------------------------------------------- staircases
@dataclass(frozen=True)
class _Cascade:
    """Theorem A's staircases for one k, cheapest first, as the kernel takes them: the distinct
    slots (each the number of C factors and the residual set, its size − 1, −1 for none), for
    each staircase the slot bounding each V_j, and the log weights log Bin(j; k, 1 − λ)."""

    positions: np.ndarray
    sets: np.ndarray
    plan_slots: np.ndarray
    log_weights: np.ndarray

    @staticmethod
    def single() -> _Cascade:
        """One slot, the row itself (k = 0): the exhaustive enumeration."""
        return _Cascade(np.array([0], dtype=np.int64), np.array([-1], dtype=np.int64),
                        np.zeros((1, 1), dtype=np.int64), np.array([0.0]))

    @staticmethod
    def make(k: int, share: float, plans: Sequence[tuple[int, int, int]]) -> _Cascade:
        table: dict[tuple[int, int], int] = {}
        plan_slots = np.empty((len(plans), k + 1), dtype=np.int64)
        for index, (exact_up_to, residuals, fine) in enumerate(plans):
            for low, high, size in _steps(k, exact_up_to, residuals, fine):
                plan_slots[index, low : high + 1] = table.setdefault((k - high, size - 1), len(table))
        keys = list(table)
        return _Cascade(np.array([c for c, _ in keys], dtype=np.int64), np.array([s for _, s in keys], dtype=np.int64),
                        plan_slots, np.array([_log_binomial(k, j, 1.0 - share) for j in range(k + 1)]))

    def kernel_plan(self, component: np.ndarray) -> tuple:
        return component, self.positions, self.sets, self.plan_slots, self.log_weights


def _steps(k: int, exact_up_to: int, residuals: int, fine: int):
    """The staircase (J₀, J′, fine) as (j_low, j_high, residual multiset size) per step: V_j
    exactly for j ≤ J₀ (every residual multiset of size j with C^{k−j}), then steps covering
    [low, high] with C^{k−high} and min(J′, low) residuals, single up to j = fine, then
    doubling."""
    for j in range(min(exact_up_to, k) + 1):
        yield j, j, j
    low, step = exact_up_to + 1, 1
    while low <= k:
        high = min(k, low + step - 1)
        yield low, high, min(residuals, low)
        low = high + 1
        if low > fine:
            step *= 2


def _log_binomial(trials: int, k: int, p: float) -> float:
    """log Bin(k; trials, p), with 0·log 0 = 0."""
    value = math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
    if k:
        value += k * math.log(p) if p > 0 else -math.inf
    if trials - k:
        value += (trials - k) * math.log1p(-p) if p < 1 else -math.inf
    return value


def _multisets(size: int, kinds: int):
    """Count vectors of the multisets of ``size`` over ``kinds``."""
    if kinds == 1:
        yield (size,)
        return
    for first in range(size, -1, -1):
        for rest in _multisets(size - first, kinds - 1):
            yield (first, *rest)


def _residual_rows(residuals: np.ndarray) -> tuple:
    """The residual rows E_A of the soft group for |A| = 1 … _LARGEST_RESIDUAL, padded into one
    array, their lengths, and where each size's rows start (the kernel's residual sets)."""
    rows, starts = [], [0]
    for size in range(1, _LARGEST_RESIDUAL + 1):
        for counts in _multisets(size, len(residuals)):
            row = np.array([1.0])
            for kind, count in enumerate(counts):
                for _ in range(count):
                    row = np.convolve(row, residuals[kind])
            rows.append(row)
        starts.append(len(rows))
    padded = np.zeros((len(rows), max(len(row) for row in rows)))
    for index, row in enumerate(rows):
        padded[index, : len(row)] = row
    return padded, np.array([len(row) for row in rows], dtype=np.int64), np.array(starts, dtype=np.int64)


_NO_RESIDUALS = (np.zeros((1, 1)), np.array([1], dtype=np.int64), np.array([0, 1], dtype=np.int64))


# ----------------------------------------------------------------------------- the bounds
@dataclass(frozen=True)
class Best:
    """The largest bound per order over a family of nodes (margins included), and where: per
    order the count vector of the others over the breakpoints (None for Theorem A's mixtures)
    and the ordered pair (x, x′) as breakpoint indices."""

    values: np.ndarray
    others: list
    pairs: list
    raw: np.ndarray | None = None


def _tree(problem: Problem, kinds: Sequence[int], size: int, cascade: _Cascade, residuals: tuple, component: np.ndarray,
          targets: np.ndarray | None, prune: tuple = trees.NO_PRUNING) -> Best:
    """The kernel over every multiset of ``size`` clients of ``kinds``, each with the cascade's
    staircases; the largest per order (``raw``: in the kernel's units, margins not added);
    ``prune``: the kernel's tables (:func:`rdpcalc.numerics.trees._subtree`)."""
    orders = len(problem.alphas)
    best, where, counts = _walk(problem, kinds, [size], cascade, residuals, component, targets, prune)
    task = np.argmax(best, axis=0)
    scale, margins = _scale(problem.alphas), problem.margins()
    values = best[task, range(orders)] / scale + margins
    others, pairs = [], []
    for order, chosen in enumerate(task):
        code = int(where[chosen, order])
        pair = problem.pairs[code // 2] if code >= 0 else (0, 0)
        pairs.append(pair if code % 2 == 0 else pair[::-1])
        full = np.zeros(len(problem.pmfs), dtype=np.int64)
        full[list(kinds)] = counts[chosen, order]
        others.append(full)
    return Best(values, others, pairs, best[task, range(orders)])


def _walk(problem: Problem, kinds: Sequence[int], sizes: Sequence[int], cascade: _Cascade, residuals: tuple,
          component: np.ndarray, targets: np.ndarray | None, prune: tuple = trees.NO_PRUNING) -> tuple:
    """The kernel's outputs (bounds, pairs, count vectors; a row per task) over every multiset of
    each size in ``sizes`` of ``kinds``, in one walk of the tree of the largest: the columns of
    the i-th size are i·orders … (i + 1)·orders − 1."""
    orders, size = len(problem.alphas), max(sizes)
    slot = np.full(size + 1, -1, dtype=np.int64)
    slot[list(sizes)] = np.arange(len(sizes))
    best = np.full((size + 1, orders * len(sizes)), -np.inf)
    where = np.full(best.shape, -1, dtype=np.int64)
    counts = np.zeros((*best.shape, len(kinds)), dtype=np.int64)
    trees.kernels().leaf_bounds(np.array([1.0]), np.ascontiguousarray(problem.pmfs[list(kinds)]), size,
                      _mirror_of(kinds, problem.mirror), cascade.kernel_plan(component), residuals,
                      problem.kernel_pairs(), problem.kernel_orders(targets), (best, where, counts, slot), prune)
    return best, where, counts


def one_client(problem: Problem) -> np.ndarray:
    """Per pair (rows) and order, D_α of one client in the larger direction: by data processing
    it bounds every configuration of that pair."""
    out = np.empty((len(problem.pairs), len(problem.alphas)))
    for row, pair in enumerate(problem.pairs):
        out[row] = _tree(problem.with_pairs([pair]), [0], 0, _Cascade.single(), _NO_RESIDUALS, np.array([1.0]),
                         None).values
    return out


def homogeneous(problem: Problem) -> np.ndarray:
    """Per breakpoint (rows) and order, the kernel's bound on the largest D_α over the pairs with
    every other client at that breakpoint (an upper bound, where the rows underflow): it ranks
    the breakpoints for the exact group (:func:`candidate_splits`)."""
    return np.array([_tree(problem, [kind], problem.others, _Cascade.single(), _NO_RESIDUALS, np.array([1.0]),
                           None).values for kind in range(len(problem.pmfs))])


def exhaustive(problem: Problem) -> Best:
    """Every multiset of the others over every breakpoint (module docstring): the worst case
    itself, with its configuration (the kinds walked beside their mirror images,
    :func:`_mirror_paired`)."""
    return _tree(problem, _mirror_paired(len(problem.pmfs), problem.mirror), problem.others, _Cascade.single(),
                 _NO_RESIDUALS, np.array([1.0]), None)


def exhaustive_by_size(problem: Problem, sizes: Sequence[int]) -> np.ndarray:
    """Per size K of ``sizes`` (distinct, at most ``problem.others``; rows) and order, the
    largest D_α over every multiset of K others over every breakpoint (an upper bound, the
    margins of K + 1 clients added), in one walk of the tree of the largest size: the multisets
    of a smaller size are its nodes at their depth. The walk leaves out the subtree of a node
    whose bound is at most one already kept at every larger size and order: each descendant's
    exact value is at most the node's (it adds clients to both sums: data processing), hence at
    most that kept bound plus the node's rounding, which its own margins cover and the larger
    size's cover too (the margins grow with the clients)."""
    orders = len(problem.alphas)
    best = _walk(problem, _mirror_paired(len(problem.pmfs), problem.mirror), sizes, _Cascade.single(), _NO_RESIDUALS,
                 np.array([1.0]), None)[0]
    largest = np.max(best, axis=0).reshape(len(sizes), orders)
    margins = np.array([[rounding_margin(alpha, size + 1, problem.pmfs.shape[1]) for alpha in problem.alphas]
                        for size in sizes])
    return largest / _scale(problem.alphas) + margins


def theorem_a(problem: Problem, chosen: Split, targets: np.ndarray, plans=PLANS, soft: Sequence[int] | None = None) -> np.ndarray:
    """Theorem A over every k (or those in ``soft``) and every multiset of the exact group
    (module docstring): each node with the staircases of ``plans`` in turn until one is at most
    ``targets`` at every order (the smallest is kept); the largest bound per order."""
    return refined(problem, chosen, targets, plans, soft)[0]


@dataclass(frozen=True)
class Nodes:
    """A bound on every node of one split (module docstring, *Refinement*), in the kernel's units
    (log F_α; KL and D_∞ as they are; margins not added): row Σ_i d_i·(N + 1)^i for the count
    vector d over the exact group ``exact``, a column per order; +inf where none was recorded."""

    exact: tuple[int, ...]
    bounds: np.ndarray

    def covers(self, exact: Sequence[int]) -> bool:
        """Whether a split with the exact group ``exact`` is finer than this one's."""
        return set(self.exact) <= set(exact)

    def at_most(self, ceiling: np.ndarray) -> np.ndarray:
        """Per row, whether its bounds are at most ``ceiling`` (kernel units) at every order."""
        return np.all(self.bounds <= ceiling, axis=1)

    def open_share(self, ceiling: np.ndarray, others: int, exact: int) -> float:
        """The share of the nodes of a finer split (``exact`` breakpoints exact, ``others`` other
        clients) that lie under a node recorded here whose bounds exceed ``ceiling`` at some
        order (with the targets as ``ceiling``, those its first pass computes: :func:`refined`). A node here with d of the others
        at its exact group holds C(others − d + a, a) finer nodes (a breakpoints more exact)."""
        rows = np.flatnonzero(np.any(np.isfinite(self.bounds), axis=1) & ~self.at_most(ceiling))
        placed = np.zeros(len(rows), dtype=np.int64)
        for _ in self.exact:  # the row's digits in base others + 1 are its counts
            placed += rows % (others + 1)
            rows = rows // (others + 1)
        added = exact - len(self.exact)
        free, count = np.unique(others - placed, return_counts=True)
        opened = sum(int(c) * math.comb(int(k) + added, added) for k, c in zip(free, count))
        return opened / math.comb(others + exact, exact)


#: the most bytes the node bounds kept for finer splits (:class:`Nodes`) take together, in one certificate
NODES_BYTES = 2**26


def refined(problem: Problem, chosen: Split, targets: np.ndarray, plans=PLANS, soft: Sequence[int] | None = None,
            coarser: Nodes | None = None, room: int = 0) -> tuple[np.ndarray, Nodes | None]:
    """:func:`theorem_a` over the nodes that ``coarser``'s node bounds leave open (a split of the
    same pairs, or of a class holding them, whose exact group is a subset of this one's: module
    docstring, *Refinement*), and the bound of each of this split's nodes (None where ``soft``
    leaves some k out, or where they would take more than ``room`` bytes).

    The first pass computes the nodes under a coarser node above the targets at some order; the
    second, those under the other coarser nodes that are above, at some order, the largest
    bound the first computed. Every node left out lies in a coarser node whose bound is at most
    that, so the largest bound computed is the split's bound, never above the one every node
    computed gives."""
    residuals = _residual_rows(chosen.residuals) if len(chosen.residuals) else _NO_RESIDUALS
    orders = len(problem.alphas)
    base = problem.others + 1
    rows = base ** len(chosen.exact)
    keep = soft is None and bool(chosen.exact) and rows * orders * 8 <= room
    fine = np.full((rows, orders) if keep else (0, 0), np.inf)
    if not chosen.exact:  # every other client soft: one node
        soft = [problem.others]
    ks = list(range(problem.others + 1) if soft is None else soft)
    cascades = [_Cascade.make(k, chosen.share, plans) for k in ks]
    best = np.full(orders, -np.inf)
    raw = best.copy()

    def run(prune):
        nonlocal best, raw
        for k, cascade in zip(ks, cascades):
            found = _tree(problem, chosen.exact, problem.others - k, cascade, residuals, chosen.component, targets,
                          (*prune, fine, base))
            best = np.maximum(best, found.values)
            raw = np.maximum(raw, found.raw)

    if coarser is None:
        run(trees.NO_PRUNING[:4])
    else:
        positions = np.array([chosen.exact.index(b) for b in coarser.exact], dtype=np.int64)
        wanted = problem.kernel_orders(targets)[-1]
        run((coarser.bounds, positions, np.full(orders, np.inf), wanted))
        if np.any(coarser.at_most(wanted) & ~coarser.at_most(raw)):
            run((coarser.bounds, positions, wanted, raw.copy()))
    return best, (Nodes(chosen.exact, fine) if keep else None)


#: staircases without residuals, for a soft group whose residuals are not enumerable (a continuum)
PLANS_WITHOUT_RESIDUALS = ((0, 0, 4), (0, 0, 16), (0, 0, 64))


def continuum(pmfs: np.ndarray, clients: int, alphas: Sequence[float], found: np.ndarray,
              tolerance: float = TOLERANCE) -> tuple[np.ndarray, str]:
    """Theorem A for a mechanism whose others range over a continuum [−b, b] on which every
    output's probability is unimodal in the input (``pmfs``: the rows at −b and b; client 1's
    pair (−b, b) in both directions — where the mechanism's own argument puts it). Then
    min over y ∈ [−b, b] of P_y(i) = min(P_−b(i), P_b(i)), so with λ·C = min(P_−b, P_b) every
    other client's pmf is λ·C + (1 − λ)·E_y, E_y ≥ 0: the soft group is the whole interval (its
    residuals, one per input, are dropped by the staircase), and the exact group the two ends
    {−b, b}, enumerated over every k while the nodes fit THEOREM_A_WORK (else every other client
    is soft, k = n − 1)."""
    shared = np.minimum(pmfs[0], pmfs[1])
    share = float(shared.sum())
    # λ = 0 (the pmfs at ±b disjoint): P_y = 0·C + E_y holds for any C, the uniform one is taken
    component = shared / share if share > 0 else np.full(len(shared), 1.0 / len(shared))
    chosen = Split((0, 1), (), share, component, np.zeros((0, pmfs.shape[1])))
    problem = Problem(pmfs, ((0, 1),), tuple(alphas), (1, 0), clients)
    ends = chosen.nodes(problem.others) // 2 * clients <= THEOREM_A_WORK
    bound = theorem_a(problem, chosen, np.asarray(found) * (1 + tolerance), PLANS_WITHOUT_RESIDUALS,
                      None if ends else [problem.others])
    groups = "every other client at ±b exact, the rest" if ends else "every other client"
    return bound, (f"Theorem A over the input interval: {groups} through the interval's common component "
                   f"(λ = {share:.4f}, the smaller of the pmfs at ±b: each output's probability is unimodal in the "
                   "input)")


def multisets(size: int, kinds: int) -> int:
    """The number of multisets of ``size`` elements from ``kinds`` kinds: C(size + kinds − 1, kinds − 1)."""
    return math.comb(size + kinds - 1, kinds - 1)


@dataclass(frozen=True)
class Certificate:
    """Per order an upper bound on W_n(α) (+inf where none of this module's bounds applies),
    what it rests on, and, when the enumeration was exhaustive, the configuration attaining
    the maximum (:class:`Best`)."""

    upper: np.ndarray
    text: str
    exhaustive: Best | None = None


#: certificates kept for reuse within a process (a calibration or a sweep asks again for the same)
_REMEMBERED = 32
_memory = Remembered(_REMEMBERED)


def certify(pmfs: np.ndarray, mirror: Sequence[int] | None, clients: int, alphas: Sequence[float],
            found: np.ndarray | None, budget: int, progress: Callable[[float], None] | None = None,
            tolerance: float = TOLERANCE) -> Certificate:
    """:func:`_certify`, remembered for the last _REMEMBERED distinct questions (the same pmfs,
    clients, orders, values found and budget give the same certificate). ``progress(fraction)``
    is told, as Theorem A settles the client-1 pairs, the fraction of them settled."""
    key = (pmfs.tobytes(), pmfs.shape, None if mirror is None else tuple(mirror), clients, tuple(alphas),
           None if found is None else np.asarray(found, dtype=float).tobytes(), budget, tolerance)
    return _memory.get(key, lambda: _certify(pmfs, mirror, clients, alphas, found, budget, progress, tolerance))


def _certify(pmfs: np.ndarray, mirror: Sequence[int] | None, clients: int, alphas: Sequence[float],
             found: np.ndarray | None, budget: int, progress: Callable[[float], None] | None = None,
             tolerance: float = TOLERANCE) -> Certificate:
    """The tightest of this module's bounds on W_n(α), per order: exhaustive when the others'
    multisets number at most ``budget``; otherwise Theorem B at ∞ (n′ − 1 the most others whose
    multisets fit ``budget``), which caps every order, and Theorem A at the finite orders up to
    LARGEST_ORDER whose F_α stays within float64 (OVERFLOW_EXPONENT; the others get Theorem B's
    cap, computed for them even where ∞ is not asked), each mirror class of pairs with the cheapest split that brings it within
    ``tolerance`` of ``found`` (values attained, per order: the search's) while the nodes fit
    THEOREM_A_WORK. Pairs whose one-client value is at most the value found at every order are
    left out (data processing)."""
    alphas = list(alphas)
    r = len(pmfs)
    everything = Problem(pmfs, tuple((i, j) for i in range(r) for j in range(i + 1, r)), tuple(alphas), mirror, clients)
    single = one_client(everything)
    if multisets(everything.others, r) <= budget:
        best = exhaustive(everything.with_pairs(_contenders(everything, single, found) or everything.pairs))
        return Certificate(best.values, "exhaustive: every multiset of the others", best)
    problem = everything.with_pairs([pair for pair, values in zip(everything.pairs, single) if np.any(values > found)])
    if not problem.pairs:
        return Certificate(np.max(single, axis=0), "one client (data processing): no pair's one-client value exceeds "
                                                   "the value found")
    upper = np.full(len(alphas), math.inf)
    texts = []
    largest_log_ratio = float(np.log(np.max(ratio_bounds(pmfs, problem.pairs))))
    finite = [index for index, alpha in enumerate(alphas) if alpha <= LARGEST_ORDER and (
        alpha == 1 or math.isinf(largest_log_ratio) or (alpha - 1) * largest_log_ratio < OVERFLOW_EXPONENT)]
    if finite:
        bound, text = _theorem_a_all(problem, [alphas[i] for i in finite], found[finite], progress, tolerance)
        upper[finite] = np.minimum(upper[finite], bound)
        texts.append(text)
    capped = [index for index in range(len(alphas)) if index not in finite]
    if capped:
        # D_α ≤ D_∞ ≤ max(Theorem B's value over the pairs above the threshold, the threshold): a pair left out has
        # D_∞ at most its one-client value, at most the threshold, itself a value attained at an order ≤ ∞
        threshold = float(np.min(found[capped]))
        cap, text = theorem_b(problem, threshold, budget)
        upper = np.minimum(upper, max(cap, threshold))
        overflowing = [alphas[i] for i in capped if alphas[i] <= LARGEST_ORDER]
        texts.append(text + (f"; at α = {', '.join(f'{a:g}' for a in overflowing)} that cap alone (F_α would "
                             "overflow float64)" if overflowing else ""))
    return Certificate(upper, "; ".join(texts))


def _contenders(problem: Problem, single: np.ndarray, found: np.ndarray) -> list[tuple[int, int]]:
    """The pairs that may attain the maximum at some order: at the finite orders up to
    LARGEST_ORDER those whose mirror class Theorem A with the cheapest split does not bound by
    ``found`` (values attained), elsewhere those whose one-client value (``single``, per pair
    and order) exceeds it (data processing). Where that split has as many nodes as the
    enumeration has multisets, every pair whose one-client value exceeds ``found`` is kept."""
    cheap = [i for i, alpha in enumerate(problem.alphas) if alpha <= LARGEST_ORDER]
    rest = [i for i in range(len(problem.alphas)) if i not in cheap]
    kept = {pair for pair, values in zip(problem.pairs, single) if np.any(values[rest] > found[rest])}
    open_ = [pair for pair, values in zip(problem.pairs, single) if np.any(values[cheap] > found[cheap])]
    if not open_:
        return sorted(kept)
    sub = Problem(problem.pmfs, tuple(open_), tuple(problem.alphas[i] for i in cheap), problem.mirror, problem.clients)
    splits = candidate_splits(problem.pmfs, _rankings(sub), problem.mirror)
    if splits and splits[0].nodes(problem.others) >= multisets(problem.others, len(problem.pmfs)):
        return sorted(kept.union(open_))  # ruling a pair out would cost more nodes than enumerating it
    for members in mirror_classes(open_, problem.mirror):
        if not splits or np.any(theorem_a(sub.with_pairs(members), splits[0], found[cheap]) > found[cheap]):
            kept.update(pair for pair in open_ if tuple(sorted(pair)) in members)
    return sorted(kept)


def theorem_b(problem: Problem, found: float, budget: int) -> tuple[float, str]:
    """D_∞ ≤ W_{n′}(∞) (Theorem B), exhaustive over the largest number of others whose multisets
    number at most ``budget``, over the pairs whose one-client D_∞ exceeds ``found``; every
    order is capped by it (D_α ≤ D_∞)."""
    at_infinity = Problem(problem.pmfs, problem.pairs, (math.inf,), problem.mirror, problem.clients)
    single = one_client(at_infinity)[:, 0]
    pairs = tuple(pair for pair, value in zip(problem.pairs, single) if value > found)
    if not pairs:
        return float(np.max(single)), "α = ∞: one client (data processing)"
    kinds = len(problem.pmfs)
    size = max(j for j in range(problem.others) if j == 0 or multisets(j, kinds) <= budget)
    value = float(exhaustive(Problem(problem.pmfs, pairs, (math.inf,), problem.mirror, size + 1)).values[0])
    return value, f"α = ∞ (a cap on every order): exhaustive over {size} other client{'s' if size != 1 else ''} " \
                  "(data processing)"


def _completed(pmfs: np.ndarray, exact: Sequence[int]) -> Split | None:
    """The split whose exact group is ``exact`` and, added one at a time, the breakpoints whose
    removal from the soft group raises its common component's mass the most (the lowest index of
    equal ones), until that mass reaches SOFT_SHARE; None where too few breakpoints are left soft."""
    exact = sorted(exact)
    while True:
        soft = [i for i in range(len(pmfs)) if i not in exact]
        if len(soft) < 2:
            return None
        chosen = split(pmfs, exact, soft)
        if chosen.share >= SOFT_SHARE:
            return chosen
        added = max(soft, key=lambda i: (split(pmfs, exact, [b for b in soft if b != i]).share, -i))
        exact = sorted([*exact, added])


def directed_splits(pmfs: np.ndarray, rankings: Sequence[Sequence[int]], excluded: set, largest: int) -> list[Split]:
    """The exact groups for one direction of one client-1 pair, cheapest first: for each ranking
    of the breakpoints (worst first, for that direction), the worst ones taken one more at a
    time, each group completed until its soft group's common component reaches SOFT_SHARE
    (:func:`_completed`), up to ``largest`` breakpoints (the most whose nodes fit the work limit);
    the groups in ``excluded`` (those computed for the whole class) left out."""
    found: dict[tuple[int, ...], Split] = {}
    for ranking in rankings:
        for size in range(1, min(largest, len(ranking) - 1) + 1):
            chosen = _completed(pmfs, ranking[:size])
            if chosen is None or len(chosen.exact) > largest:
                break
            if chosen.exact not in excluded:
                found.setdefault(chosen.exact, chosen)
    return sorted(found.values(), key=lambda chosen: len(chosen.exact))


def directions(members: Sequence[tuple[int, int]], mirror: Sequence[int] | None) -> list[tuple[int, int]]:
    """Ordered pairs whose forward direction, over every multiset of the others, covers both
    directions of every member of a mirror class (module docstring, one direction at a time):
    (x, x′) and (x′, x) for the class's first member, only (x, x′) where x′ is x's mirror image."""
    x, y = members[0]
    return [(x, y)] if mirror is not None and mirror[x] == y else [(x, y), (y, x)]


def _rankings(problem: Problem) -> list[tuple[int, ...]]:
    """The breakpoints ranked, worst first, by the value of their homogeneous configuration, one
    ranking per order (the distinct ones)."""
    values = homogeneous(problem)
    return sorted({tuple(int(i) for i in np.argsort(-values[:, order], kind="stable"))
                   for order in range(len(problem.alphas))})


class _Class:
    """A mirror class of client-1 pairs while Theorem A refines it: its best bound from splits of
    the whole class, and per direction (:func:`directions`) the best bound from that direction's
    own splits; the class's bound is the smaller of the first and the largest of the second."""

    def __init__(self, members: tuple[tuple[int, int], ...], mirror, orders: int):
        self.members = members
        self.whole = np.full(orders, math.inf)
        self.pairs = directions(members, mirror)
        self.directed = np.full((len(self.pairs), orders), math.inf)
        self.nodes: list[tuple[int, Nodes]] = []  # (direction, or −1 for the whole class; its splits' node bounds)
        self.ran: set[tuple[int, tuple[int, ...]]] = set()  # (direction or −1, exact group) of the splits computed

    def ran_already(self, direction: int, exact: tuple[int, ...]) -> bool:
        """Whether a split with the exact group ``exact`` was computed for the whole class, or, where
        ``direction`` is −1 (the whole class), for each of its directions."""
        return (-1, exact) in self.ran or (direction < 0 and all((d, exact) in self.ran for d in range(len(self.pairs))))

    def bound(self) -> np.ndarray:
        return np.minimum(self.whole, np.max(self.directed, axis=0))

    def coarser(self, direction: int, exact: Sequence[int]) -> Nodes | None:
        """The node bounds of the finest split computed for the whole class, or for ``direction``
        (≥ 0), that a split with the exact group ``exact`` refines (None: none)."""
        usable = [table for d, table in self.nodes if (d == -1 or d == direction) and table.covers(exact)]
        return max(usable, key=lambda table: len(table.exact), default=None)


class _Queue:
    """Theorem A's options, the least estimated work first: a split for a class of client-1 pairs
    or for one direction of it, or None (expand the class's directions). An option's cost, which
    the work limit counts, is its nodes × clients; its estimate is that times the share of its
    nodes under coarser nodes of its class whose bounds exceed the values found at some order
    (:meth:`Nodes.open_share`: the nodes its two passes may compute, :func:`refined`), taken
    again whenever the class keeps new node bounds. Of equal estimates, the split whose soft group has the larger common component
    (the tighter, whose nodes cost less: fewer residual clients) goes first, then the one pushed
    first."""

    def __init__(self, classes: list[_Class], wanted: np.ndarray, others: int):
        self.classes = classes
        self.wanted = wanted
        self.others = others
        self.heap: list[tuple[float, float, int, int, int]] = []  # (estimate, −λ, number, class, its version then)
        self.numbers = itertools.count()
        self.waiting: list[dict[int, tuple]] = [{} for _ in classes]  # per class: number → (cost, direction, split)
        self.versions = [0] * len(classes)

    def push(self, cost: int, c: int, direction: int, chosen: Split | None) -> None:
        number = next(self.numbers)
        self.waiting[c][number] = (cost, direction, chosen)
        self._enter(c, number)

    def _enter(self, c: int, number: int) -> None:
        cost, direction, chosen = self.waiting[c][number]
        coarser = None if chosen is None else self.classes[c].coarser(direction, chosen.exact)
        estimate = cost if coarser is None else cost * coarser.open_share(self.wanted, self.others, len(chosen.exact))
        share = 0.0 if chosen is None else chosen.share
        heapq.heappush(self.heap, (estimate, -share, number, c, self.versions[c]))

    def kept_bounds(self, c: int) -> None:
        """Class ``c`` keeps new node bounds: its options are estimated again."""
        self.versions[c] += 1
        for number in self.waiting[c]:
            self._enter(c, number)

    def pop(self) -> tuple[int, int, int, Split | None] | None:
        """(cost, class, direction or −1, split or None) of the least estimated work; None: no option is left."""
        while self.heap:
            *_, number, c, version = heapq.heappop(self.heap)
            if version == self.versions[c] and number in self.waiting[c]:
                cost, direction, chosen = self.waiting[c].pop(number)
                return cost, c, direction, chosen
        return None


def _theorem_a_all(problem: Problem, alphas: list[float], found: np.ndarray,
                   progress: Callable[[float], None] | None = None, tolerance: float = TOLERANCE) -> tuple[np.ndarray, str]:
    """Theorem A at the finite orders ``alphas``, per mirror class of pairs, until its bound is
    within ``tolerance`` of ``found`` at every order, trying the option of least estimated work
    first (:class:`_Queue`; as long as its nodes × clients fit THEOREM_A_WORK): the splits of the whole class (from the
    homogeneous configurations' ranking at each order: :func:`candidate_splits`), and, for a
    class that the cheapest exact split leaves above that, each of its directions alone with
    exact groups of its own (:func:`directed_splits`). +inf where some class got no bound.
    ``progress`` is told the fraction of classes settled (within the tolerance, or out of
    options)."""
    sub = Problem(problem.pmfs, problem.pairs, tuple(alphas), problem.mirror, problem.clients)
    everything_soft = split(problem.pmfs, (), range(len(problem.pmfs)))
    whole = [everything_soft, *candidate_splits(problem.pmfs, _rankings(sub), problem.mirror)]
    targets = found * (1 + tolerance)
    # a class is settled when its bound (margins included) is at most this: the targets plus the margins, and the value
    # found's own rounding (the fast engine's, 1e-12 relative), so that the class of the configuration found settles
    settled_below = targets * (1 + FOUND_ROUNDING) + sub.margins()
    halved = 2 if problem.mirror is not None else 1
    classes = [_Class(members, problem.mirror, len(alphas)) for members in mirror_classes(problem.pairs, problem.mirror)]
    queue = _Queue(classes, sub.kernel_orders(found)[-1], problem.others)
    costs = [chosen.nodes(problem.others) // halved * problem.clients for chosen in whole]
    for chosen, cost in zip(whole, costs):  # the whole splits first, split by split, among equal estimates
        for c in range(len(classes)):
            queue.push(cost, c, -1, chosen)
    expand_at = next((cost for chosen, cost in zip(whole, costs) if chosen.exact), costs[0])
    for c in range(len(classes)):
        queue.push(expand_at, c, -1, None)  # None: expand the class's directions
    # the largest exact group whose nodes × clients fit the work limit on their own
    largest = max((size for size in range(1, len(problem.pmfs))
                   if math.comb(problem.others + size, size) * problem.clients <= THEOREM_A_WORK), default=0)
    work = 0
    used: dict[tuple[int, ...], tuple[Split, bool]] = {}
    unaffordable = math.inf  # the cheapest option a class still needed that did not fit the work limit
    settled = 0
    held = 0  # bytes of the node bounds the unsettled classes keep for finer splits (at most NODES_BYTES)

    def within(values):
        return bool(np.all(values <= settled_below))

    while (option := queue.pop()) is not None:
        cost, c, direction, chosen = option
        entry = classes[c]
        if within(entry.bound()) or (direction >= 0 and within(entry.directed[direction])) or \
                (chosen is not None and entry.ran_already(direction, chosen.exact)):
            continue
        if chosen is None:
            excluded = {exact for way, exact in entry.ran if way < 0}
            for d, pair in enumerate(entry.pairs):
                directed = Problem(problem.pmfs, (pair,), tuple(alphas), None, problem.clients, directed=True)
                for own in directed_splits(problem.pmfs, _rankings(directed), excluded, largest):
                    queue.push(own.nodes(problem.others) * problem.clients, c, d, own)
            continue
        if work + cost > THEOREM_A_WORK:
            unaffordable = min(unaffordable, cost)
            continue
        work += cost
        plans = PLANS if chosen.exact else PLANS_WITHOUT_RESIDUALS
        coarser = entry.coarser(direction, chosen.exact)
        if direction < 0:
            bound, table = refined(sub.with_pairs(entry.members), chosen, targets, plans, coarser=coarser,
                                   room=NODES_BYTES - held)
            entry.whole = np.minimum(entry.whole, bound)
        else:
            directed = Problem(problem.pmfs, (entry.pairs[direction],), tuple(alphas), None, problem.clients,
                               directed=True)
            bound, table = refined(directed, chosen, targets, plans, coarser=coarser, room=NODES_BYTES - held)
            entry.directed[direction] = np.minimum(entry.directed[direction], bound)
        if table is not None:
            entry.nodes.append((direction, table))
            held += table.bounds.nbytes
        used.setdefault(chosen.exact, (chosen, direction >= 0))
        entry.ran.add((direction, chosen.exact))
        if within(entry.bound()):  # no finer split follows: its node bounds are let go
            held -= sum(table.bounds.nbytes for _, table in entry.nodes)
            entry.nodes.clear()
            settled += 1
            if progress is not None:
                progress(settled / len(classes))
        elif table is not None:
            queue.kept_bounds(c)
    if progress is not None:
        progress(1.0)
    bound = np.max([entry.bound() for entry in classes], axis=0)
    pending = sum(not within(entry.bound()) for entry in classes)
    groups = "; ".join(dict.fromkeys(
        f"{len(chosen.exact)} exact + {len(chosen.soft)} soft breakpoints{' per direction of a pair' if directed else ''}, "
        f"λ = {chosen.share:.4f}" for chosen, directed in sorted(used.values(), key=lambda item: len(item[0].exact))
        if chosen.exact)) or "every breakpoint soft"
    if not pending:
        return bound, f"Theorem A ({groups}; every node {within_text(tolerance)})"
    why = (f"the next split needs {unaffordable:.2g} node-clients, more than the work limit {THEOREM_A_WORK:.2g} "
           "leaves"
           if unaffordable < math.inf else "no candidate split brings them closer")
    return bound, (f"Theorem A ({groups}; {pending} of {len(classes)} client-1 pair classes not "
                   f"{within_text(tolerance)}: {why})")


def within_text(tolerance: float) -> str:
    """How close Theorem A's nodes are asked to be, in words."""
    if tolerance == 0:
        return "at most the value found (up to rounding)"
    return f"within {tolerance:.2g} of the value found (relative)" if tolerance < 0.001 else \
        f"within {tolerance:.1%} of the value found"
