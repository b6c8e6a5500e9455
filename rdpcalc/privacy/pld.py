"""Privacy loss distributions: tight (ε, δ) accounting through one dominating pair per round.

The privacy profile of a pair of output laws is its hockey-stick curve

    H_γ(P ‖ Q) = Σ_s (P(s) − γ Q(s))_+,   γ = e^ε ≥ 0,

and a mechanism is (ε, δ)-DP exactly when H_{e^ε} ≤ δ for every ordered pair of neighbouring
inputs. A pair (P̃, Q̃) *dominates* a mechanism when H_γ(P̃ ‖ Q̃) ≥ H_γ of every such pair, for
every γ ≥ 0; the product of dominating pairs dominates the composition of the mechanisms
(Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via characteristic
function", arXiv:2106.08567, §3), so the (ε, δ) of a run follows from composing one dominating
pair per round. Its privacy loss distribution (PLD: the law of log P̃/Q̃ under P̃) is composed
by dp-accounting (Google's ``dp_accounting.pld``), which convolves PLDs on a grid of losses
h·ℤ by FFT and rounds pessimistically.

**A dominating pair for a family of pairs.** The worst case over neighbouring inputs is a set
of pairs, not one (:mod:`rdpcalc.worstcase.dominating`). This module turns any family — or any valid
bound on the family's hockey-stick curves — into one dominating PLD on the grid:

1. each pair's PLD is *rounded up* to the grid (:func:`rounded`): every loss l is moved to
   ⌈l/h⌉·h (losses above ``LOSS_CAP`` to +∞, below −``LOSS_CAP`` up to −``LOSS_CAP``). Since
   (1 − γe^{−l})_+ grows with l, this raises H_γ at every γ (the pessimistic estimate of
   Meiser & Mohammadi 2018 and dp-accounting);
2. the family's envelope E(γ) = max over the pairs of H_γ is evaluated at the grid points
   γ_i = e^{ih} (:func:`hockey_stick`, a sum of positive terms) and raised by the float
   error bound ``FLOAT_SLACK`` (relative);
3. the true envelope T(γ) = sup over the family of H_γ is convex in γ (a supremum of convex
   functions), T(0) = 1, and T(γ_i) ≤ E(γ_i). The lower convex hull L of the points (0, 1) and
   (γ_i, E(γ_i)) lies above every convex function that lies below the points — so L ≥ T on
   [0, γ_max] — and beyond the last grid point T ≤ T(γ_max) ≤ E(γ_max) (T is non-increasing);
4. pessimistic *connect-the-dots* (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
   arXiv:2207.04380, Alg. 1) makes the grid PLD whose hockey-stick curve is the chord
   interpolation of L's vertices, L itself, and +∞-mass E(γ_max): a dominating pair.

The same construction accepts the pointwise minimum of two valid bounds (each ≥ T, so their
minimum is), which the certificates for a SecAgg sum use. Every number is certified up to
float rounding of the pmfs (the fast engine: ~1e−12 relative), which ``FLOAT_SLACK`` and
``LOSS_SLACK`` cover, and up to dp-accounting's FFT composition, whose rounding is covered by
an empirical allowance (:func:`rounding_allowance`), not a proven bound. Below 1000 times that
allowance the accountant reads ε and δ from :mod:`rdpcalc.privacy.tilted` instead, whose
tilted FFT carries a proven error bound and certifies any δ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import ParameterError
from ..params import Param

#: default grid step h of the privacy loss (nats), dp-accounting's default
DISCRETIZATION = 1e-4
#: the grid step, declared once
DISCRETIZATION_STEP = Param("discretization", "float", "pld: the grid step of the privacy loss, in nats, {range}.",
                            default=DISCRETIZATION, low=Fraction(1e-6), high=Fraction(0.1))  # the floats, exactly
#: losses above this go to +∞ (pessimistic), below −LOSS_CAP are raised to it
LOSS_CAP = 300.0
#: the least allowance for the FFT's rounding in δ (:func:`rounding_allowance`)
MIN_ROUNDING_ALLOWANCE = 1e-11
#: losses are rounded up after adding this, so float error in log P − log Q cannot round down
LOSS_SLACK = 1e-10
#: relative raise of the computed hockey-stick values before the hull (float error of the sums)
FLOAT_SLACK = 1e-9
#: the dominating pair's curve is cut where it falls to this: the rest goes to +∞ (pessimistic)
TAIL_CUT = 1e-30
#: the hull may pass this much (relative) below a point: far below FLOAT_SLACK, so still above
#: the true curve
HULL_TOLERANCE = 1e-12
#: the largest FFT of a composition (2^22 points: 64 MiB of complex numbers); see :func:`compose`
MAX_GRID_POINTS = 2**22
#: a PLD with less finite mass than this composes to all its mass at +∞ (:func:`compose`)
ALL_AT_INFINITY = 1e-9
#: a stage of a long composition composes at least this many copies (:func:`compose`)
STAGE_COPIES = 16
#: tail mass dp-accounting may truncate when composing (added to +∞: pessimistic)
TAIL_MASS_TRUNCATION = 1e-15


def check_discretization(value) -> float:
    """A grid step in [1e−6, 0.1] nats (:data:`DISCRETIZATION_STEP`; finer grids cost memory
    and time without changing ε)."""
    return DISCRETIZATION_STEP.convert(value)


@dataclass(frozen=True)
class GridPld:
    """A PLD on the grid h·ℤ: mass ``masses[k]`` at loss ``indices[k]``·h (indices strictly
    increasing), ``infinity_mass`` at +∞."""

    indices: np.ndarray
    masses: np.ndarray
    infinity_mass: float
    h: float

    @property
    def lower(self) -> int:
        return int(self.indices[0]) if len(self.indices) else 0

    @property
    def upper(self) -> int:
        return int(self.indices[-1]) if len(self.indices) else 0


def rounded(log_p: np.ndarray, log_q: np.ndarray, h: float, weights: np.ndarray | None = None) -> GridPld:
    """The PLD of (P ‖ Q) rounded up to the grid (step 1 of the module docstring); for batches
    (rows of ``log_p``, ``log_q``) the mixture with ``weights`` (default: one row, weight 1).

    A mixture of pairs with weights that are the same under P and Q is the pair with the
    mixture's label revealed, whose PLD is the weighted sum of the rows' PLDs."""
    log_p, log_q = np.atleast_2d(log_p), np.atleast_2d(log_q)
    weights = np.ones(len(log_p)) if weights is None else np.asarray(weights, dtype=float)
    mass = np.exp(log_p) * weights[:, None]
    present = mass > 0
    infinite = present & ~np.isfinite(log_q)
    finite = present & ~infinite
    with np.errstate(invalid="ignore"):
        loss = np.where(finite, log_p - log_q, 0.0)
    above = finite & (loss > LOSS_CAP)
    infinity_mass = min(1.0, float(mass[infinite].sum() + mass[above].sum()))
    kept = finite & ~above
    index = np.ceil((np.maximum(loss[kept], -LOSS_CAP) + LOSS_SLACK) / h).astype(np.int64)
    indices, inverse = np.unique(index, return_inverse=True)
    return GridPld(indices, np.bincount(inverse, weights=mass[kept], minlength=len(indices)), infinity_mass, h)


def hockey_stick(pld: GridPld, lower: int, upper: int) -> np.ndarray:
    """H_γ of the pair ``pld`` at γ_i = e^{ih} for the grid indices i = lower … upper (which must
    reach the PLD's largest atom).

    H is linear in γ between atoms. With the atoms a_1 > a_2 > … (masses ω_k) and
    B_k = Σ_{j ≤ k} ω_j e^{−a_j h}: H(e^{a_1 h}) = ω_∞, H(e^{a_{k+1} h}) = H(e^{a_k h}) +
    (e^{a_k h} − e^{a_{k+1} h}) B_k, and between them H(γ) = H(e^{a_k h}) + (e^{a_k h} − γ) B_k;
    below the smallest atom the same with every atom. Every term is non-negative, so nothing
    cancels. (The numpy reference of :func:`envelope`'s compiled loop, :func:`_raise_to_curve`.)"""
    if pld.upper > upper:
        raise ValueError("the grid must reach the PLD's largest atom")
    grid = np.arange(lower, upper + 1)
    out = np.full(len(grid), pld.infinity_mass)
    if len(pld.indices) == 0:
        return out
    at_atoms, gammas_at_atoms, slopes = _pieces(pld)
    below = grid < pld.indices[-1]
    segment = len(pld.indices) - 1 - np.searchsorted(pld.indices, grid[below], side="right")  # a_{k+1} ≤ i < a_k
    gammas = np.exp(grid[below] * pld.h)
    out[below] = at_atoms[segment] + (gammas_at_atoms[segment] - gammas) * slopes[segment]
    return out


def _pieces(pld: GridPld) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """H(e^{a_k h}), e^{a_k h} and B_k at the atoms a_1 > a_2 > … (:func:`hockey_stick`)."""
    atoms = pld.indices[::-1].astype(float) * pld.h
    gammas_at_atoms = np.exp(atoms)
    slopes = np.cumsum(pld.masses[::-1] * np.exp(-atoms))  # B_k
    at_atoms = pld.infinity_mass + np.concatenate([[0.0], np.cumsum(-np.diff(gammas_at_atoms) * slopes[:-1])])
    return at_atoms, gammas_at_atoms, slopes


def _raise_to_curve(values, attained, member, gammas, lower, indices, at_atoms, gammas_at_atoms, slopes,
                    infinity_mass):
    """values[t] = max(values[t], H(γ_{lower+t})) for the member's curve H (:func:`hockey_stick`:
    the same arithmetic, term by term, so the same floats), and attained[t] = member where H is
    larger: one pass over the grid beside one over the atoms (``indices`` increasing), in
    place of hockey_stick's array and binary searches."""
    count = len(indices)
    passed = 0  # atoms at or below the grid point: the segment is count − 1 − passed
    for t in range(len(values)):
        i = lower + t
        while passed < count and indices[passed] <= i:
            passed += 1
        if passed == count:
            curve = infinity_mass
        else:
            k = count - 1 - passed
            curve = at_atoms[k] + (gammas_at_atoms[k] - gammas[t]) * slopes[k]
        if curve > values[t]:
            values[t] = curve
            attained[t] = member


@functools.cache
def _compiled(function):
    """``function`` (a loop over arrays) compiled by numba: once per process, from numba's
    on-disk cache after the first run; numba is imported here, not at start-up (it takes half
    a second to load)."""
    import numba  # half a second: start-up time

    return numba.njit(cache=True, nogil=True, error_model="numpy")(function)


@dataclass(frozen=True)
class Envelope:
    """Upper bounds on the hockey-stick curves of a family at the grid points lower … upper
    (``values``), and which member attains each (``attained``: indices into ``labels``)."""

    lower: int
    values: np.ndarray
    attained: np.ndarray
    labels: list
    h: float

    @property
    def upper(self) -> int:
        return self.lower + len(self.values) - 1

    def attained_labels(self) -> list:
        """The members attaining the envelope somewhere, most grid points first."""
        counts = np.bincount(self.attained, minlength=len(self.labels))
        return [self.labels[i] for i in np.argsort(-counts, kind="stable") if counts[i] > 0]


def envelope(members: Iterable[tuple[object, GridPld]], h: float) -> Envelope:
    """max over the ``members`` ((label, rounded PLD) pairs, on the grid step ``h``) of H_γ at
    every grid point from the smallest atom to the largest; the first member attaining it where
    several do. Each member's curve is raised into the envelope by a compiled loop
    (:func:`_raise_to_curve`); the tests check it against :func:`hockey_stick`."""
    members = list(members)
    if not members:
        raise ValueError("an envelope needs at least one member")
    lower = min(pld.lower for _, pld in members)
    upper = max(pld.upper for _, pld in members)
    values = np.full(upper - lower + 1, -np.inf)
    attained = np.zeros(upper - lower + 1, dtype=np.int64)
    gammas = np.exp(np.arange(lower, upper + 1) * h)
    raise_to_curve = _compiled(_raise_to_curve)
    for index, (_, pld) in enumerate(members):
        raise_to_curve(values, attained, index, gammas, lower, pld.indices, *_pieces(pld), pld.infinity_mass)
    return Envelope(lower, values, attained, [label for label, _ in members], h)


def smaller(first: Envelope, second: Envelope) -> Envelope:
    """The pointwise minimum of two valid bounds on one family (each is extended past its
    grid with its own end behaviour: linear in γ below, constant above; see :func:`_extend`)."""
    lower, upper = min(first.lower, second.lower), max(first.upper, second.upper)
    a, b = _extend(first, lower, upper), _extend(second, lower, upper)
    take_second = b < a
    labels = first.labels + second.labels
    attained = np.where(take_second, _extend_index(second, lower, upper) + len(first.labels),
                        _extend_index(first, lower, upper))
    return Envelope(lower, np.where(take_second, b, a), attained, labels, first.h)


def weighted_sum(parts: list[tuple[float, Envelope]]) -> Envelope:
    """Σ w·E over (weight, envelope) pairs on their common grid: a bound on a mixture with the
    mixture's label revealed (each envelope extended as in :func:`smaller`)."""
    lower = min(env.lower for _, env in parts)
    upper = max(env.upper for _, env in parts)
    values = sum(weight * _extend(env, lower, upper) for weight, env in parts)
    heaviest = max(range(len(parts)), key=lambda i: parts[i][0])
    env = parts[heaviest][1]
    return Envelope(lower, np.minimum(values, 1.0), _extend_index(env, lower, upper), env.labels, env.h)


def _extend(env: Envelope, lower: int, upper: int) -> np.ndarray:
    """The envelope's upper bound on a wider grid: above its last point the bound is its last
    value (every member's H is constant there), below its first point the chord from (0, 1)
    to its first point (every member's H is linear there, and the envelope convex)."""
    out = np.empty(upper - lower + 1)
    start, stop = env.lower - lower, env.upper - lower
    out[start : stop + 1] = env.values
    out[stop + 1 :] = env.values[-1]
    if start > 0:
        gammas = np.exp(np.arange(lower, env.lower) * env.h)
        first_gamma = math.exp(env.lower * env.h)
        out[:start] = 1 - gammas * (1 - env.values[0]) / first_gamma
    return out


def _extend_index(env: Envelope, lower: int, upper: int) -> np.ndarray:
    out = np.empty(upper - lower + 1, dtype=np.int64)
    start, stop = env.lower - lower, env.upper - lower
    out[start : stop + 1] = env.attained
    out[stop + 1 :] = env.attained[-1]
    out[:start] = env.attained[0]
    return out


def lower_hull(x: np.ndarray, y: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of the points (x, y), x increasing, up to
    ``tolerance``: a point is dropped when it lies above the chord of its neighbours on the hull,
    or below it by at most ``tolerance``·y (dropping a vertex of a convex chain only raises it).

    Andrew's monotone chain: one pass, each point pushed and popped at most once, O(len(x)).
    A point b between a and the next point i stays when (y_b(1 + tolerance) − y_a)(x_i − x_a)
    < (y_i − y_a)(x_b − x_a), i.e. when it is more than ``tolerance``·y_b below the chord a–i.
    The pass is compiled (:func:`_hull`; the tests check it against the same code run as Python)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return _compiled(_hull)(xs, ys, 1.0 + tolerance)


def _hull(xs, ys, scale):
    """The pass of :func:`lower_hull` (``scale`` = 1 + tolerance): the hull is a stack of indices."""
    hull = np.empty(len(xs), dtype=np.int64)
    size = 0
    for i in range(len(xs)):
        while size >= 2:
            a, b = hull[size - 2], hull[size - 1]
            if (ys[b] * scale - ys[a]) * (xs[i] - xs[a]) >= (ys[i] - ys[a]) * (xs[b] - xs[a]):
                size -= 1
            else:
                break
        hull[size] = i
        size += 1
    return hull[:size].copy()


def dominating_pld(env: Envelope, env_add: Envelope | None = None):
    """The dominating PLD of the family bounded by ``env`` (steps 2–4 of the module docstring),
    as a dp-accounting ``PrivacyLossDistribution``: symmetric when the family contains both
    orders of each pair (replace-one); with ``env_add``, the add/remove pair of directions
    (remove: ``env``, add: ``env_add``), which dp-accounting composes separately and reports the
    larger of — the neighbouring datasets, and so the direction, are the same in every round."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution  # dp-accounting: start-up time

    return PrivacyLossDistribution(_dominating_pmf(env), None if env_add is None else _dominating_pmf(env_add))


def _dominating_pmf(env: Envelope):
    """Steps 2–4 of the module docstring. The grid ends at the first point where the raised
    envelope is at most TAIL_CUT (that value becomes the mass at +∞, which bounds the curve
    beyond, as the curve is non-increasing). The hull's vertices less than HULL_TOLERANCE
    (relative) below the chord of their neighbours are then dropped too, so collinear runs leave
    no atoms: dropping a vertex of a convex chain only raises it, so the result stays above the
    hull."""
    from dp_accounting.pld import pld_pmf  # dp-accounting: start-up time

    raised = np.minimum(1.0, env.values * (1 + FLOAT_SLACK))
    small = np.nonzero(raised <= TAIL_CUT)[0]
    if len(small):
        raised = raised[: small[0] + 1]
    indices = np.arange(env.lower, env.lower + len(raised))
    x = np.concatenate([[0.0], np.exp(indices * env.h)])
    y = np.concatenate([[1.0], raised])
    hull = lower_hull(x, y)
    hull = hull[lower_hull(x[hull], y[hull], HULL_TOLERANCE)]
    vertices = hull[1:] - 1  # drop the anchor (0, 1): connect-the-dots adds it
    return pld_pmf.create_pmf_pessimistic_connect_dots(env.h, indices[vertices], y[vertices + 1])


def pair_pld(log_p: np.ndarray, log_q: np.ndarray, h: float = DISCRETIZATION):
    """The dominating PLD of one pair of laws in both orders (the larger hockey-stick curve of
    (P‖Q) and (Q‖P) at every ε), from log-probabilities on one support."""
    return dominating_pld(envelope([("P‖Q", rounded(log_p, log_q, h)), ("Q‖P", rounded(log_q, log_p, h))], h))


def compose(pld, count: int):
    """``count`` ≥ 1 compositions of ``pld`` with itself (FFT, pessimistic tail truncation).

    The FFT covers the composed losses that dp-accounting's Chernoff bound keeps (all but
    TAIL_MASS_TRUNCATION of the mass). Memory stays bounded by MAX_GRID_POINTS: where that
    range is wider, the composition goes in stages — the largest block of k copies that fits
    is composed, and the block is composed ⌊count/k⌋ times in turn (and the remainder
    separately); before each stage the PLD is moved to a grid 2^j times coarser
    (:func:`coarsen`, rounding losses up: pessimistic) until ``STAGE_COPIES`` copies fit.
    Each rounding costs at most one grid step per copy composed, and the step grows with the
    block's spread (≈ √k), so the total stays a small fraction of the composed ε.

    dp-accounting's truncation bounds evaluate moment generating functions at large orders,
    where scipy's logsumexp overflows harmlessly (the bound is then not used); those float
    warnings are silenced here."""
    if count == 1:
        return pld
    if _nearly_at_infinity(pld):
        return _at_infinity(pld)
    while _composed_points(pld, min(count, STAGE_COPIES)) > MAX_GRID_POINTS:
        pld = coarsen(pld, 2)
    if _composed_points(pld, count) <= MAX_GRID_POINTS:
        return _self_compose(pld, count)
    block = STAGE_COPIES
    while 2 * block <= count and _composed_points(pld, 2 * block) <= MAX_GRID_POINTS:
        block *= 2
    stages, rest = divmod(count, block)
    result = compose(_self_compose(pld, block), stages)
    return result if rest == 0 else compose_two(result, compose(pld, rest))


def _nearly_at_infinity(pld) -> bool:
    return any(pmf._infinity_mass > 1 - ALL_AT_INFINITY for pmf in _pmfs(pld))  # noqa: SLF001


def _at_infinity(pld):
    """A PLD with all its mass at +∞ (ε = +∞ at every δ < 1): what a composition becomes, up
    to ALL_AT_INFINITY, when one copy has almost no finite loss (pessimistic)."""
    from dp_accounting.pld.pld_pmf import DensePLDPmf  # dp-accounting: start-up time
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution  # dp-accounting: start-up time

    return PrivacyLossDistribution(DensePLDPmf(grid_step(pld), 0, np.zeros(1), 1.0, True))


def _self_compose(pld, count: int):
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return pld.self_compose(count, tail_mass_truncation=TAIL_MASS_TRUNCATION)


def compose_two(first, second):
    """The composition of two PLDs, the finer moved to the coarser one's grid (grid steps are
    h·2^j, so one divides the other)."""
    if _nearly_at_infinity(first) or _nearly_at_infinity(second):
        return _at_infinity(first if grid_step(first) >= grid_step(second) else second)
    h_first, h_second = grid_step(first), grid_step(second)
    if h_first < h_second:
        first = coarsen(first, round(h_second / h_first))
    elif h_second < h_first:
        second = coarsen(second, round(h_first / h_second))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return first.compose(second, tail_mass_truncation=TAIL_MASS_TRUNCATION)


def _pmfs(pld) -> list:
    """The dp-accounting pmfs of a PLD: remove, and add when it is not symmetric."""
    return [pld._pmf_remove] + ([] if pld._symmetric else [pld._pmf_add])  # noqa: SLF001 (dp-accounting's layout)


def grid_step(pld) -> float:
    """The grid step of a dp-accounting PLD, in nats."""
    return float(pld._pmf_remove._discretization)  # noqa: SLF001


def _composed_points(pld, count: int) -> int:
    """The grid points of the FFT that ``count`` self-compositions would use (dp-accounting's own
    Chernoff truncation bounds: :func:`self_convolve_range`)."""
    sizes = []
    for pmf in _pmfs(pld):
        probs = pmf.to_dense_pmf()._probs  # noqa: SLF001
        if len(probs) == 0:
            sizes.append(1)
            continue
        low, high = self_convolve_range(probs, count)
        sizes.append(high - low + 1)
    return max(sizes)


#: the orders of dp-accounting's truncation bounds, times the pmf's length (``compute_self_convolve_bounds``)
CHERNOFF_ORDERS = (*range(-20, 0), *range(1, 21))


def self_convolve_range(probs: np.ndarray, count: int) -> tuple[int, int]:
    """The index range [low, high] that dp-accounting keeps of ``count`` self-convolutions of
    ``probs`` (``dp_accounting.pld.common.compute_self_convolve_bounds`` with TAIL_MASS_TRUNCATION
    τ and its orders t = k/L, k = ±1 … ±20, L = len(probs)): by the Chernoff bound, the sum S of
    ``count`` draws of the index has P(S ≥ s) ≤ M(t)^count·e^{−ts} for t > 0 (and the mirror
    bound for t < 0), M(t) = Σ_i p_i e^{ti}; s = (count·log M(t) + log(2/τ))/t leaves at most τ/2
    above (below) it. The smallest such s over the orders, rounded up, is ``high``; the largest
    for t < 0, rounded down, is ``low``.

    The same values as dp-accounting's, an order of magnitude faster: |t·i| < 20, so M(t) is a
    plain dot product with e^{ti} (no overflow, no log-sum-exp shift). Orders where M(t) is not
    positive and finite (a negative rounding residue of an FFT) are skipped, as there."""
    size = len(probs)
    low, high = 0, (size - 1) * count
    indices = np.arange(size)
    spread = math.log(2 / TAIL_MASS_TRUNCATION)
    for k in CHERNOFF_ORDERS:
        order = k / size
        moment = float(np.dot(np.exp(indices * order), probs))
        if not (0 < moment < math.inf):
            continue
        bound = (count * math.log(moment) + spread) / order
        if order > 0:
            high = min(high, math.ceil(bound))
        else:
            low = max(low, math.floor(bound))
    return low, high


def coarsen(pld, factor: int):
    """The PLD on the grid ``factor`` times coarser, every loss rounded up to it (so H_γ can only
    grow: a dominating pair stays dominating)."""
    from dp_accounting.pld.pld_pmf import DensePLDPmf  # dp-accounting: start-up time
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution  # dp-accounting: start-up time

    moved = []
    for pmf in _pmfs(pld):
        dense = pmf.to_dense_pmf()
        if len(dense._probs) == 0:  # noqa: SLF001 (all the mass at +∞: nothing to move)
            moved.append(DensePLDPmf(dense._discretization * factor, 0, dense._probs, dense._infinity_mass, True))  # noqa: SLF001
            continue
        indices = dense._lower_loss + np.arange(len(dense._probs))  # noqa: SLF001
        coarse = -(-indices // factor)  # ceil
        probs = np.bincount(coarse - coarse[0], weights=dense._probs)  # noqa: SLF001
        moved.append(DensePLDPmf(dense._discretization * factor, int(coarse[0]), probs,  # noqa: SLF001
                                 dense._infinity_mass, True))  # noqa: SLF001
    return PrivacyLossDistribution(moved[0], moved[1] if len(moved) > 1 else None)


def rounding_allowance(pld) -> float:
    """What the FFT compositions' rounding may have taken off δ: 10 × the negative masses the
    rounding left (their sum is ~1e−14 after 10⁴ Gaussian compositions), at least
    MIN_ROUNDING_ALLOWANCE. Unaccounted, it understated ε at δ ≤ 1e−10 (e.g. 52.8872 for the
    exact 52.8874 at δ = 1e−12: 30 rounds of the Gaussian at σ = 1).

    An empirical allowance, not a proven bound on the FFT's error: the negative mass measures
    the rounding's size, and a staged composition's coarsening sums negative into positive
    entries. Against the closed-form composed Gaussian (σ from 0.3 to 10, 2 to 3000 rounds, δ
    from 2.5e−11 to 1e−9) the largest δ overshoot without it was 5e−15, about 2000 times less
    than the allowance; tests check that comparison."""
    negative = sum(float(-np.sum(np.minimum(pmf.to_dense_pmf()._probs, 0.0))) for pmf in _pmfs(pld))  # noqa: SLF001
    return max(MIN_ROUNDING_ALLOWANCE, 10 * negative)


def epsilon(pld, delta: float) -> float:
    """The smallest ε ≥ 0 with H_{e^ε} ≤ δ − :func:`rounding_allowance` of the (composed)
    dominating pair, so the FFT's rounding (as far as the allowance measures it) does not lower
    it; +∞ if none, or if δ is within the allowance (that small a δ is certified by
    :mod:`rdpcalc.privacy.tilted`, which the accountant asks below 1000 times the allowance)."""
    allowance = rounding_allowance(pld)
    if delta <= 2 * allowance:
        return math.inf
    return float(pld.get_epsilon_for_delta(delta - allowance))


def infinity_reason(pld, delta: float) -> str | None:
    """Why :func:`epsilon` is +∞ at ``delta`` (None where it is finite): δ within twice the
    rounding allowance (PLD certifies no ε at so small a δ; the true ε may well be finite), or
    the composed pair's mass at +∞ (a loss above LOSS_CAP, or a pair disjoint in part), which
    alone exceeds δ."""
    if math.isfinite(epsilon(pld, delta)):
        return None
    allowance = rounding_allowance(pld)
    if delta <= 2 * allowance:
        return (f"δ is within twice the allowance for the FFT's rounding ({allowance:.2g}), below which the PLD route "
                "certifies no ε (the true ε may be finite)")
    infinity = max(pmf._infinity_mass for pmf in _pmfs(pld))  # noqa: SLF001
    return (f"the composed dominating pair has mass {infinity:.3g} at an infinite loss (a loss above {LOSS_CAP:g} "
            f"nats, or outputs possible under one input only): with the rounding allowance ({allowance:.2g}), more "
            "than δ")


def delta(pld, eps: float) -> float:
    """H_{e^ε} of the (composed) dominating pair plus :func:`rounding_allowance`."""
    return min(1.0, float(pld.get_delta_for_epsilon(eps)) + rounding_allowance(pld))


def dp_accounting_pld(event, count: int, h: float = DISCRETIZATION):
    """``count`` ≥ 1 uses of a dp-accounting event (``dp_accounting.DpEvent``), composed by
    dp-accounting's own ``PLDAccountant`` on the grid step ``h`` (its neighbouring relation, by
    default add/remove; pessimistic rounding): the accountant's PLD, or all the mass at +∞ where
    the event holds a ``NonPrivateDpEvent`` (the accountant's ε = +∞). :class:`ParameterError`
    naming ``event`` where the accountant's ``supports(event)`` is False (anything that is not
    a dp-accounting event included)."""
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant  # dp-accounting: start-up time

    accountant = PLDAccountant(value_discretization_interval=h)
    if not accountant.supports(event):
        raise ParameterError("event", f"must be an rdpcalc event or a dp-accounting event that dp-accounting's PLDAccountant "
                                  f"supports (method pld), got {event!r}")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # (see compose)
        accountant.compose(event, count)
    pld = accountant._pld  # noqa: SLF001 (the accountant keeps its PLD; it has no public reader)
    return _at_infinity(pld) if accountant._contains_non_dp_event else pld  # noqa: SLF001


def dp_accounting_factors(event, count: int, h: float = DISCRETIZATION) -> list[tuple[object, int]]:
    """The single uses a dp-accounting event's ``count`` uses compose, as (PLD, uses) pairs: its
    ``ComposedDpEvent`` and ``SelfComposedDpEvent`` unpacked, each remaining event's PLD built
    by :func:`dp_accounting_pld` for one use (no FFT composition in it). The certificate at
    small δ (:mod:`rdpcalc.privacy.tilted`) composes them itself."""
    from dp_accounting import ComposedDpEvent, SelfComposedDpEvent  # dp-accounting: start-up time

    if isinstance(event, SelfComposedDpEvent):
        return dp_accounting_factors(event.event, count * int(event.count), h)
    if isinstance(event, ComposedDpEvent):
        return [pair for part in event.events for pair in dp_accounting_factors(part, count, h)]
    return [(dp_accounting_pld(event, 1, h), count)]


def self_contained(pld):
    """A dominating pair whose hockey-stick curve lies above :func:`delta` of ``pld`` (its curve
    H plus the :func:`rounding_allowance` A) at every ε, so that dp-accounting, which knows
    nothing of A, reads a valid (ε, δ) from it and composes it further with its own PLDs.

    Let T be the curve of the pair ``pld`` stands for; what rdpcalc certifies is T ≤ H + A.
    For each pmf (remove, and add where the PLD is not symmetric), on its grid h·ℤ:

    1. the masses are made non-negative (the FFT leaves residues of ~1e−17 below 0), losses
       above ``LOSS_CAP`` are moved to +∞ and those below −``LOSS_CAP`` raised to it (so that
       e^{ih} stays a float): each raises H(γ) = ω_∞ + Σ_k p_k (1 − γ e^{−kh})_+, which grows
       with every mass p_k and every loss kh;
    2. E_i = H(e^{ih}) + A at every grid point i of the support (:func:`hockey_stick`, a sum of
       positive terms) bounds T there;
    3. steps 2–4 of the module docstring (:func:`dominating_pld`): E raised by ``FLOAT_SLACK``
       and capped at 1, the lower convex hull of (0, 1) and the points (e^{ih}, E_i), and
       pessimistic connect-the-dots. T is convex with T(0) = 1, so the chord interpolation of
       the hull lies above T on [0, γ_last] (γ_last = e^{ih} at the last point), and beyond it
       T ≤ T(γ_last) ≤ E_last, the mass put at +∞ (T is non-increasing): the result dominates,
       and it is a PLD (masses ≥ 0, summing to 1 with that mass at +∞, itself ≥ A).

    Where H is already convex (any PLD's curve is) the hull keeps its atoms, so the result is
    ``pld`` with every δ raised by about A (≥ ``MIN_ROUNDING_ALLOWANCE``): the price of the
    guarantee."""
    allowance = rounding_allowance(pld)
    return dominating_pld(*(_raised_envelope(_grid_of(pmf), allowance) for pmf in _pmfs(pld)))


def _raised_envelope(grid: GridPld, allowance: float) -> Envelope:
    """E_i = H(e^{ih}) + ``allowance`` at the grid points of ``grid``'s support (step 2 of
    :func:`self_contained`)."""
    values = hockey_stick(grid, grid.lower, grid.upper) + allowance
    return Envelope(grid.lower, values, np.zeros(len(values), dtype=np.int64), ["pld"], grid.h)


def _grid_of(pmf) -> GridPld:
    """A dp-accounting pmf as a :class:`GridPld`, raised as step 1 of :func:`self_contained` says:
    negative masses set to 0, losses above ``LOSS_CAP`` moved to +∞, those below −``LOSS_CAP``
    raised to it."""
    dense = pmf.to_dense_pmf()
    h = float(dense._discretization)  # noqa: SLF001 (dp-accounting's layout)
    indices = dense._lower_loss + np.arange(len(dense._probs))  # noqa: SLF001
    masses = np.maximum(dense._probs, 0.0)  # noqa: SLF001
    cap = math.floor(LOSS_CAP / h)
    infinity_mass = min(1.0, float(dense._infinity_mass) + float(masses[indices > cap].sum()))  # noqa: SLF001
    kept = indices <= cap
    moved, inverse = np.unique(np.maximum(indices[kept], -cap), return_inverse=True)
    return GridPld(moved, np.bincount(inverse, weights=masses[kept], minlength=len(moved)), infinity_mass, h)
