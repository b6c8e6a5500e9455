"""The worst case over neighbouring inputs for the SecAgg sum of n > 1 clients.

Client 1 holds x (the sum's law is P) or x′ (law Q); the other n − 1 clients hold inputs
y₂ … y_n, the same under P and Q. The worst case is

    W_n(α) = sup over x, x′, y₂ … y_n in [−b, b] of D_α(P_x * R ‖ P_x′ * R),  R = P_y₂ * … * P_yn.

**The search space.** Let f(P, Q) = Σ_s P(s)^α Q(s)^{1−α}, so D_α = log f / (α − 1) for α > 1.
f is jointly convex in (P, Q) (the perspective of the convex t ↦ t^α), and so are KL and, for
D_∞, max_s P(s)/Q(s). Between two consecutive breakpoints a mechanism's pmf is affine in its
input (RQM, CorBin: ``Mechanism.OTHERS_FAMILY == "affine"``), and the law of the sum is affine
in each single client's pmf. So, with every other input fixed, the map from one client's input
to (P, Q) is affine on each piece, f is convex along it, and its maximum on the piece is at an
end: moving that client to a breakpoint never decreases D_α. Doing this one client at a time
(client 1 under P and under Q, then each other) puts every input at a breakpoint without
decreasing D_α. Hence

    W_n(α) = max over ordered pairs (x, x′) of breakpoints and multisets M of n − 1 breakpoints
             of D_α(P_x * R_M ‖ P_x′ * R_M).

**Search.** Multisets are counted, not sequences (the others are exchangeable). When their
number C(n − 1 + r − 1, r − 1) (r breakpoints) is within the budget, all are tried
(``exhaustive``: by the compiled tree of :mod:`rdpcalc.worstcase.certificate`, 48620 multisets at n = 10
for RQM's 10 breakpoints in about a second). Otherwise the search tries every *two-group*
configuration — k others at b₁, n − 1 − k at b₂, every b₁ < b₂ and every k (beyond 256 others, a
grid of about 64 values of k per pair, refined within a step of its best at each order), which
contains the homogeneous configurations and the papers' ±b family — each a row of one level
(:mod:`rdpcalc.numerics.levels`), and then *coordinate ascent* from each configuration that is
best at some order: move one other client to another breakpoint while D_α grows
(``two-group+ascent``). Client 1 runs over all ordered pairs of breakpoints throughout; both
directions come from one computation. Configurations are ranked by a quick float screen
(:func:`rdpcalc.numerics.fast.screened_divergences`); those within 1e−8 relative (+ 1e−9) of
the best at some order are recomputed by the engine's accurate divergences, which give every
printed value. With more than eight orders the two-group search and the ascent run at eight
of them spread over the range, and every configuration they find is evaluated at every order.

**The certificate** (mechanisms affine between breakpoints). :mod:`rdpcalc.worstcase.certificate` gives
the bounds and their proofs: exhaustive enumeration where it fits the budget (the bracket
closes, up to rounding); otherwise *Theorem A* — the breakpoints split into an exact group,
enumerated, and a soft group through its common component, each node refined until it is
within 0.5 % of the value found — at the finite orders, and *Theorem B* (data processing down
to as many others as the budget enumerates) at ∞, which caps every order. They run at a few
orders and follow chords in between (:func:`_certificate_orders`). Beside them, the older
common-component bound over every breakpoint, valid and cheap at any n:

*A common component.* Let m_b be the mode of P_b and λ·C(d) = min over breakpoints b of
P_b(m_b + d) (:func:`common_component`). Then every P_b = λ·(C shifted by m_b) + (1 − λ)·E_b
with E_b a pmf. Expanding the product over the n − 1 others, R_M is a mixture over the
subsets S of others that draw from C, with weights λ^|S| (1 − λ)^{n−1−|S|} that do not depend
on client 1; given S, the others' sum is C^{*|S|} plus an independent term (a shift and the
E's). Joint convexity of f (and of KL) in the pair of laws bounds f of the mixture by the
mixture of the f's, and data processing bounds each of those by the value with C^{*|S|}
alone. With K ~ Binomial(n − 1, λ):

    D_α ≤ (1/(α − 1)) log Σ_K P(K) e^{(α−1) D_α(P_x * C^{*K} ‖ P_x′ * C^{*K})},

Σ_K P(K) D_1(…) for KL and max_K D_∞(…) for α = ∞, maximised over the pairs (x, x′) (it is
Theorem A with every breakpoint soft and every residual dropped). At large n the same bound
holds with blocks of g others in place of single clients (:mod:`rdpcalc.worstcase.blocks`: with
the breakpoints split into c classes, every multiset holds B = ⌈(n − 1 − c(g − 1))/g⌉ blocks
of g others within one class, the rest dropped by data processing, and K ~ Binomial(B, λ_g)
for the envelope λ_g·C_g of the blocks' pmfs); the block size and classes are those whose
B·λ_g·Var(C_g) is the largest (:func:`others_component`: single clients at n = 40 for RQM's
headline, 123 blocks of 8 at n = 1000 — each at one end breakpoint or among the interior ones —
where the bound falls from 1.76 to 1.13 times the value found); the mixture bound takes at each
order the smaller of that and the blocks that keep the most variance with fewer than MIN_BLOCKS
blocks (:func:`others_components`). ``certified_upper`` is the
smallest of these, per order.

*Where the search does not fit in memory* (its estimate over the budget: RQM with 66 levels
at n = 1000 needs about 29 GiB for the bound above over every K), :func:`certified_upper` —
what accounting, calibration and ``compare`` use — does not refuse: it takes the same bound with
C^{*K} at a grid of K only (:mod:`rdpcalc.worstcase.staircase`: D_α is non-increasing in K,
so each cell of K is bounded by its left end; within the certificate's tolerance of the bound
over every K), and Theorem B at ∞, and its text says why.

Mechanisms whose pmf is not affine between its breakpoints:

* PBM (``"relaxed"``): a client is ``trials`` independent Bernoulli(p(x)) trials sharing p(x).
  Letting each trial of the others choose its input on its own enlarges the family; each
  trial's pmf is affine in p, so the enlarged maximum is over j ∈ {0 … (n−1)·trials} trials at
  p(b), the rest at p(−b) — one level of Bernoulli pmfs, searched in full (beyond
  RELAXED_ROWS trials, in steps of trials bounded by data processing, as long as the
  certificate's tolerance allows, and one of each mirror pair of splits: :class:`RelaxedFamily`),
  a certified upper bound. For client 1, (Ber(p), Ber(p′)) with p− ≤ p < p′ ≤ p+ is the image of
  (Ber(p−), Ber(p+)) under one binary channel (K(1|0) = p − p−(p′−p)/(p+−p−), K(1|1) =
  K(1|0) + (p′−p)/(p+−p−), both in [0, 1]) applied to each trial, so by data processing client
  1 at ±b is worst for every law of the others, wrapped or not. The value found is the
  exhaustive maximum over the others at ±b (``exhaustive over the breakpoints``: not the
  whole family, but the relaxed bound meets it when the sum does not wrap); when the sum wraps
  modulo 2^bits that argument fails, and the others run over a grid of inputs
  (:func:`_wrapped_grid`); a branch-and-bound over boxes of their inputs
  (:mod:`rdpcalc.worstcase.wrapped`) then raises the value found with the boxes' points and lowers the
  certificate to the largest bound over the boxes.
* the quantized Gaussian and QMGeo (``"breakpoints"``): the others' pmfs are not mixtures of
  the breakpoints' pmfs, so the search covers others at breakpoints only. The certificate is
  the one-client value (data processing), and for the quantized Gaussian, each of whose output
  probabilities is unimodal in the input (``UNIMODAL_IN_INPUT``), the smaller of that and
  Theorem A over the input interval (:func:`rdpcalc.worstcase.certificate.continuum`); both are as
  certified as the mechanism's own single-client argument for client 1 (``breakpoints()``). Smaller
  still, where it is (:func:`anchored_upper`): Theorem C (:mod:`rdpcalc.worstcase.anchors`), every
  other client a mixture of anchor inputs spread over [−b, b] plus a residual of mass ≤ ρ that is
  dropped, the anchors' multisets enumerated exhaustively (the fewest anchors that bring it within
  the certificate's tolerance of the value found, at most as many as ANCHORED_WORK allows; for
  σ = C_q = 1, k = 16 at three orders: 17 fit at n = 10, where 9 are within the tolerance, 9 at
  n = 20, 6 at n = 40, 3 at n = 100, the two ends at n = 1000). Where the sum has few outputs
  (INTERVAL_ORDERS_SUPPORT) it is computed at INTERVAL_ORDERS orders, elsewhere at
  certificate.ORDERS, chords between.

Screens, searches and bounds run in the fast engine whichever engine is asked for; the exact
engine recomputes the configurations found (so a printed value is the exact divergence of the
configuration printed beside it). The fast engine's values are accurate to ~1e−12 relative
(tested against the exact engine), so "certified" is up to that rounding.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from .. import resources
from ..mechanisms import Mechanism
from ..numerics import FastEngine, trees
from ..resources import Cost
from . import anchors, blocks, certificate, staircase, wrapped
from .certificate import multisets
from .remembered import Remembered

#: the search is exhaustive when the others' multisets number at most this many (enumerated by
#: the compiled tree of :mod:`rdpcalc.worstcase.certificate`: 48620 at n = 10 for RQM's 10 breakpoints take
#: about two seconds); the certificate's exhaustive part (Theorem B) uses the largest number of
#: others whose multisets fit in it
EXHAUSTIVE_BUDGET = 200_000
#: the largest budget accepted (time: a few microseconds per multiset and pair of client 1)
MAX_BUDGET = 10_000_000
#: PBM's relaxed family is evaluated split by split up to this many of the others' trials;
#: beyond, in steps that drop a few trials (:func:`_relaxed_upper`)
RELAXED_ROWS = 2_000
#: rows of PBM's relaxed family computed at a time (memory)
_RELAXED_CHUNK = 256
#: where the compiled tree does not apply (a pmf not affine between breakpoints, or a sum that
#: wraps around), the exhaustive search keeps every multiset's pmf in the log domain: at most
#: this many
LOG_DOMAIN_BUDGET = 2_000
#: the search runs up to this many clients (two-group levels and ascent cost ~n² each)
SEARCH_MAX_N = 1000
#: the two-group search tries every split of the others up to this many of them; beyond, a grid
#: of about SPLIT_GRID splits per pair of breakpoints, refined around its best (:func:`_two_group`)
FINE_SPLITS_UP_TO = 256
SPLIT_GRID = 64
#: rest pmfs are evaluated in batches of at most this many numbers (rows × support × inputs)
_BATCH_ELEMENTS = 6_000_000
#: an ascent stops after this many moves (it also stops when no move increases D_α)
_MAX_ASCENT_MOVES = 200
#: a certified bound wanted at more orders than this is computed at this many of them and
#: bounded in between by chords (see _by_chords)
_CERTIFICATE_ORDERS = 32
#: candidates kept per order for the accurate recomputation
_MAX_CANDIDATES = 8
#: with more orders than this, the two-group search and the ascent run at this many of them
#: (spread over the range); every configuration they find is then evaluated at every order
_SEARCH_ORDERS = 8

#: where the search does not fit in memory, client 1 runs over the pairs of this many breakpoints
#: at each end (:func:`_limited_search`)
EDGE_POINTS = 2

#: the progress steps of the certificate stage of a search that is not exhaustive (its share of
#: the bar: it is most of the time; reported as Theorem A settles the client-1 pairs)
CERTIFICATE_STEPS = 100


#: bytes of one number of the exact engine: an MPFR object (~64 B) and its mantissa
#: (3.32·dps bits); measured 69 B per number at dps 50 (powers of RQM m = 16, n = 100, 400)
_EXACT_OBJECT_BYTES = 64
#: float64 temporaries per row of a batch of screened values (the screen's result in both
#: directions, the maximum per rest, the candidates' columns)
_ORDER_ARRAYS = 4


def exact_number_bytes(dps: int) -> float:
    """Bytes of one number of the exact engine at ``dps`` digits (see _EXACT_OBJECT_BYTES)."""
    return _EXACT_OBJECT_BYTES + 3.33 * dps / 8


def search_costs(mechanism: Mechanism, n: int, orders: int, budget: int = EXHAUSTIVE_BUDGET,
                 dps: int | None = None) -> list[Cost]:
    """The parts of :func:`search`'s peak memory (bytes), from its parameters, before it runs.
    With r breakpoints (kinds), m outputs per client and S = n(m − 1) + 1 points of the sum:

    * batches: 8 · _BATCH_ELEMENTS (the rests and totals of one batch, :func:`_batched`);
    * exhaustive in the log domain (a pmf not affine between breakpoints, or a wrapping sum):
      24 · C(n + r − 2, r − 1) · S (the multisets' sums, built, concatenated and selected);
    * the compiled trees of :mod:`rdpcalc.worstcase.certificate` (exhaustive, Theorems A and B): a row of
      S + 4m numbers per depth (n + 2) per thread, about a dozen such arrays, and the starting rows
      of a block of their parallel tasks: n(n + 1)/2 such rows, or at most trees.TABLE_BYTES where
      that is more than n rows;
    * the common-component bound (affine mechanisms, search not exhaustive): 8 · (r + 1) · n · S
      (the powers of the component and each breakpoint's totals over them);
    * PBM's relaxed family: 48 · S² (one level of S rows, two selections of it and the
      screen's temporaries);
    * orders: 8 · _ORDER_ARRAYS · rows · orders for the rescreen at every order (rows = the
      batch's rests, _BATCH_ELEMENTS / (S(r + 2))), plus the per-order records;
    * exact engine (``dps``): the configurations found, recomputed: n²(m − 1)/2 numbers.

    Calibrated with tracemalloc: RQM m = 16 (10 breakpoints) n = 150: 57 MiB measured, 78
    estimated; n = 300: 122 measured, 167 estimated; PBM 16 trials n = 150: 279 measured,
    281 estimated."""
    kinds, outputs = len(mechanism.breakpoints()), mechanism.support_size
    size = n * (outputs - 1) + 1
    costs = [Cost(8 * _BATCH_ELEMENTS, "n", "the search's batches")]
    family = mechanism.OTHERS_FAMILY
    compiled = family == "affine" and not _wraps(mechanism, n)
    exhaustive = multisets(n - 1, kinds) <= (budget if compiled else min(budget, LOG_DOMAIN_BUDGET))
    if exhaustive and not compiled:
        count = multisets(n - 1, kinds)
        costs.append(Cost(24 * count * size, "budget", f"the {count} multisets of {n - 1} others over {kinds} "
                                                       "breakpoints"))
    if family == "affine":  # the compiled trees: a row per depth and thread, their workspaces, and a block of
        # their tasks' starting rows (at most trees.TABLE_BYTES, or one count of kind 0: n rows; n(n + 1)/2 in all)
        row = 8 * (size + 4 * outputs)
        table = min(n * (n + 1) // 2 * row, max(trees.TABLE_BYTES, n * row))
        costs.append(Cost(12 * resources.threads() * (n + 2) * row + table, "n",
                          f"the certificate's trees of {n} clients"))
    exhaustive = exhaustive and family == "affine"
    if not exhaustive and family == "affine":
        costs.append(Cost(8 * (kinds + 1) * n * size, "n",
                          f"the common-component bound over {kinds} breakpoints and {n} clients ({size} points)"))
    if family == "relaxed":
        rows = min(2 * _RELAXED_CHUNK, size)
        costs.append(Cost(48 * size * rows, "n", f"the relaxed family of {size - 1} trials, {rows} rows at a time"))
    if family == "shift":
        costs.append(Cost(8 * (kinds + 4) * size, "n", f"the sums of {n} clients at {kinds} breakpoints"))
    rows = max(1, _BATCH_ELEMENTS // (size * (kinds + 2)))
    costs.append(Cost(8 * _ORDER_ARRAYS * rows * orders + orders * ORDER_BYTES, "alpha_ranges",
                      f"{orders} orders over batches of {rows} configurations"))
    if dps is not None:
        costs.append(Cost(n * n * (outputs - 1) / 2 * exact_number_bytes(dps), "n",
                          f"the exact engine's sums of {n} clients at {dps} digits"))
    return costs


#: bytes kept per order: its record, its result and the engine's values (measured: 3.5 KB per
#: order with 2000 and 8000 orders, RQM m = 16, n = 1)
ORDER_BYTES = 4096


@dataclass(frozen=True)
class Configuration:
    """Client 1 at ``x`` (P) vs ``x_prime`` (Q); the others as (input, count) pairs, inputs
    ascending, counts > 0."""

    x: Fraction
    x_prime: Fraction
    others: tuple[tuple[Fraction, int], ...] = ()

    def k(self, b: Fraction) -> int | None:
        """The number of others at +b when every other sits at ±b (the ±b family's k), else None."""
        if any(abs(value) != b for value, _ in self.others):
            return None
        return sum(count for value, count in self.others if value > 0)


@dataclass(frozen=True)
class SearchResult:
    """Per order: the largest D_α found (float and the engine's own value), its configuration,
    and the certified upper bound (float); ``search`` names the search that ran and
    ``certificate`` how the bound was obtained."""

    values: list[float]
    precise: list
    attained: list[Configuration]
    upper: list[float]
    search: str
    certificate: str


class _Stages:
    """Progress over the stages of a search: each stage has a number of steps fixed before the
    first report, so the total is known from the start (a stage that ends early, such as an
    ascent that stops, jumps to its end)."""

    def __init__(self, progress: Callable[[int, int], None] | None, steps: dict[str, int]):
        self.progress, self.offsets, self.total = progress, {}, 0
        for name, count in steps.items():
            self.offsets[name] = self.total
            self.total += count

    def report(self, stage: str, done: int) -> None:
        if self.progress is not None:
            self.progress(self.offsets[stage] + done, self.total)


class _Best:
    """The largest accurately computed value per order, with the configuration attaining it.

    Ties — values within ``_TIE`` relative of each other, such as a configuration and its
    mirror image, which are equal in exact arithmetic and differ in the last bits — are
    resolved by the smallest configuration (x, x′, others), so the configuration reported does
    not depend on the order of the candidates or on the float library; the value kept is the
    largest."""

    def __init__(self, count: int):
        self.values = np.full(count, -np.inf)
        self.precise: list = [None] * count
        self.attained: list[Configuration | None] = [None] * count

    def update(self, floats: np.ndarray, precise, configuration_of: Callable[[int], Configuration]) -> None:
        """``floats``: rows × orders; ``precise[row][order]`` the engine's values."""
        _check_nan(floats, configuration_of)
        for order in range(floats.shape[1]):
            column = floats[:, order]
            top = max(float(np.max(column)), self.values[order])
            tied = np.nonzero(column >= _tie_cut(top))[0]
            if len(tied) == 0:
                continue
            entries = [(configuration_of(int(row)), float(column[row]), precise[row][order]) for row in tied]
            if self.attained[order] is not None and self.values[order] >= _tie_cut(top):
                entries.append((self.attained[order], self.values[order], self.precise[order]))
            largest = max(entries, key=lambda entry: entry[1])
            self.attained[order] = min(entries, key=lambda entry: _configuration_key(entry[0]))[0]
            self.values[order], self.precise[order] = largest[1], largest[2]


#: values within this relative distance are ties (:class:`_Best`)
_TIE = 1e-12


def _tie_cut(top: float) -> float:
    return top - _TIE * abs(top) if math.isfinite(top) else top


def _configuration_key(configuration: Configuration) -> tuple:
    return configuration.x, configuration.x_prime, configuration.others


class _Candidates:
    """Per order, the configurations whose *screened* D_α is within a tolerance of the largest
    screened so far (at most _MAX_CANDIDATES of them, the largest first); :func:`_accurate`
    then evaluates them accurately. The screen's error (:func:`.numerics.fast.screened_divergences`)
    is far below the tolerance, so the accurate maximum over the candidates is the accurate
    maximum over everything screened. Screened values within ``_TIE`` of the largest are ties
    (equal in exact arithmetic, such as D_∞ of PBM for every split of the others, which differ in
    their last bits by the path that computed them): of those the smallest configurations are kept,
    as :class:`_Best` reports the smallest, so the configuration reported does not depend on the
    rounding when more than _MAX_CANDIDATES tie."""

    def __init__(self, count: int):
        self.top = np.full(count, -np.inf)
        self.lists: list[list[tuple[float, Configuration]]] = [[] for _ in range(count)]

    def update(self, floats: np.ndarray, configuration_of: Callable[[int], Configuration]) -> None:
        """``floats``: rows × orders of screened values."""
        _check_nan(floats, configuration_of)
        batch_top = np.max(floats, axis=0)
        for order in np.nonzero(batch_top >= _cut(self.top))[0]:
            top = max(self.top[order], batch_top[order])
            cut, tie = _cut(top), _tie_cut(top)
            column = floats[:, order]
            rows = np.nonzero(column >= cut)[0]
            untied = rows[column[rows] < tie]
            rows = np.concatenate([rows[column[rows] >= tie],
                                   untied[np.argsort(-column[untied], kind="stable")[:_MAX_CANDIDATES]]])
            kept = [entry for entry in self.lists[order] if entry[0] >= cut]
            kept += [(float(column[row]), configuration_of(int(row))) for row in rows]
            kept.sort(key=lambda entry: (0, _configuration_key(entry[1])) if entry[0] >= tie else (1, -entry[0]))
            self.lists[order] = kept[:_MAX_CANDIDATES]
            self.top[order] = top

    def configurations(self) -> list[Configuration]:
        return list(dict.fromkeys(config for entries in self.lists for _, config in entries))


def _cut(top):
    """The screened values kept as candidates: within 1e−8 relative + 1e−9 of ``top`` (the
    screen's error is below 1e−9, :func:`rdpcalc.numerics.fast.screened_divergences`)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(top), top - (1e-8 * np.abs(top) + 1e-9), top)


def _check_nan(floats: np.ndarray, configuration_of) -> None:
    if np.any(np.isnan(floats)):
        row, order = (int(i[0]) for i in np.nonzero(np.isnan(floats)))
        raise ArithmeticError(f"NaN divergence at {configuration_of(row)}, order index {order}")


class _Evaluator:
    """Screened D_α of client 1 over the ordered pairs of ``points`` (all of them, or both
    directions of ``pairs``) for batches of the others' sums, into :class:`_Candidates`."""

    def __init__(self, engine, clients: Sequence, points: Sequence[Fraction], alphas: Sequence[float],
                 pairs: Sequence[tuple[int, int]] | None = None):
        self.engine = engine
        self.clients = list(clients)
        self.points = list(points)
        self.alphas = list(alphas)
        self.pairs = _all_pairs(len(points)) if pairs is None else sorted(pairs)

    def evaluate(self, rests, others_of: Callable[[int], tuple], sink: _Candidates,
                 totals: dict | None = None) -> np.ndarray:
        """Update ``sink`` with every (pair, rest) and return, per rest and order, the largest
        D_α over client 1's pairs (rows × orders). ``totals``: the sums with client 1 at each
        point (by its index), where they are known (``rests`` is then not read); otherwise each
        client is added to ``rests``."""
        if totals is None:
            used = sorted({index for pair in self.pairs for index in pair})
            totals = {index: self.engine.add_client(self.clients[index], rests) for index in used}
        count = len(next(iter(totals.values())))
        per_rest = np.full((count, len(self.alphas)), -np.inf)
        for i, j in self.pairs:
            for (a, b), floats in zip(((i, j), (j, i)), self.engine.screen_both(totals[i], totals[j], self.alphas)):
                x, x_prime = self.points[a], self.points[b]
                sink.update(floats, lambda row, x=x, x_prime=x_prime: Configuration(x, x_prime, others_of(row)))
                np.maximum(per_rest, floats, out=per_rest)
        return per_rest


def _all_pairs(count: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(count) for j in range(i + 1, count)]


def _others(points: Sequence[Fraction], counts: Sequence[int]) -> tuple[tuple[Fraction, int], ...]:
    return tuple((points[i], int(c)) for i, c in enumerate(counts) if c)


def _batched(engine, evaluator: _Evaluator, rests, keys: list, sink, support: int,
             totals: dict | None = None) -> np.ndarray:
    """Evaluate ``rests`` (keys: count vectors; ``totals`` as in :meth:`_Evaluator.evaluate`,
    row for row, and then ``rests`` may be None) in batches that keep memory bounded."""
    step = max(1, _BATCH_ELEMENTS // (support * (len(evaluator.points) + 2)))
    out = []
    for start in range(0, len(keys), step):
        rows = range(start, min(start + step, len(keys)))
        chunk = None if rests is None else engine.select(rests, rows)
        chunk_totals = None if totals is None else {index: engine.select(batch, rows) for index, batch in totals.items()}
        chunk_keys = keys[start : start + step]
        out.append(evaluator.evaluate(chunk, lambda row, ck=chunk_keys: _others(evaluator.points, ck[row]), sink,
                                      chunk_totals))
    return np.concatenate(out) if out else np.zeros((0, len(evaluator.alphas)))


def all_multisets(engine, clients: Sequence, size: int):
    """The sums of every multiset of ``size`` clients (kinds = len(clients)): a batch and the
    count vector of each row. Built one client at a time, a child appending a kind ≥ its
    parent's last, so each multiset is made once."""
    kinds = len(clients)
    keys = [(0,) * kinds]
    last = [0]
    batch = engine.unit()
    for _ in range(size):
        new_batches, new_keys, new_last = [], [], []
        for kind in range(kinds):
            rows = [row for row, end in enumerate(last) if end <= kind]
            new_batches.append(engine.add_client(clients[kind], engine.select(batch, rows)))
            new_keys += [tuple(c + (i == kind) for i, c in enumerate(keys[row])) for row in rows]
            new_last += [kind] * len(rows)
        batch, keys, last = engine.concat(new_batches), new_keys, new_last
    return batch, keys


def _canonical(counts: tuple, mirror: bool) -> tuple:
    """A count vector, or for a mirror-symmetric mechanism the smaller of it and its mirror image
    (the configuration (x, x′, M) has the same D_α as (−x, −x′, −M), and client 1 runs over all
    pairs, so one of the two suffices)."""
    return min(counts, counts[::-1]) if mirror else counts


def _exhaustive(engine, evaluator: _Evaluator, size: int, sink, support: int, mirror: bool,
                coarse: bool = False) -> None:
    """Every multiset of ``size`` others into ``sink``. With two kinds they are the splits t (t
    others of kind 1); with ``coarse`` and more than FINE_SPLITS_UP_TO others, the splits of
    :func:`_split_grid`, then every split within a step of the best at each order
    (:func:`_around_best`), as the two-group search does."""
    if len(evaluator.clients) == 2:
        keys = [(size - t, t) for t in range(size + 1)]
        kept = [t for t, key in enumerate(keys) if _canonical(key, mirror) == key]
        if not coarse:
            _two_kinds(engine, evaluator, size, kept, sink, support)
            return

        def evaluate(splits: list[int]) -> dict[int, np.ndarray]:
            chosen = sorted(set(splits) & set(kept))
            return dict(zip(chosen, _two_kinds(engine, evaluator, size, chosen, sink, support)))

        _grid_then_around(evaluate, size, (kept[0], kept[-1]))
        return
    rests, keys = all_multisets(engine, evaluator.clients, size)
    kept = [row for row, key in enumerate(keys) if _canonical(key, mirror) == key]
    _batched(engine, evaluator, engine.select(rests, kept), [keys[row] for row in kept], sink, support)


def _exhaustive_name(affine: bool, grid: bool, kinds: int, coarse_others: int | None) -> str:
    """What :func:`_exhaustive` covers, for the search's label (``coarse_others``: the others
    whose splits it takes on a grid, or None)."""
    if affine:
        return "exhaustive"
    if grid:
        return f"exhaustive over a grid of {kinds} inputs"
    if coarse_others is not None:
        return (f"over the breakpoints, every {_split_step(coarse_others)}th split of the others and every split "
                "around the best")
    return "exhaustive over the breakpoints"


def _two_kinds(engine, evaluator: _Evaluator, size: int, splits: list[int], sink, support: int) -> np.ndarray:
    """The splits t of ``size`` others over two kinds into ``sink``, and their values (rows ×
    orders): the sums with client 1 added are rows t and t + 1 of one level of size + 1 clients
    instead of client 1 added to every row."""
    if not splits:
        return np.zeros((0, len(evaluator.alphas)))
    first, second = evaluator.clients
    rows = sorted(set(splits) | {t + 1 for t in splits})
    position = {row: place for place, row in enumerate(rows)}
    level = engine.level(second, first, size + 1, rows)
    totals = {index: engine.select(level, [position[t + index] for t in splits]) for index in (0, 1)}
    return _batched(engine, evaluator, None, [(size - t, t) for t in splits], sink, support, totals)


@dataclass(frozen=True)
class _History:
    """What the two-group search at n clients leaves for n + 1 (sweeps over n): for each
    canonical count vector of the others, an upper bound per search order on D_α over every
    pair of client 1 that was searched (its screened value, or the bound it was skipped with);
    ``fallback`` bounds every pair that was not searched (their common-component bound)."""

    alphas: tuple
    values: dict
    fallback: np.ndarray

    def bound(self, counts: tuple, mirror: bool) -> np.ndarray:
        known = self.values.get(_canonical(counts, mirror))
        return np.full(len(self.alphas), np.inf) if known is None else np.maximum(known, self.fallback)


def _split_grid(others: int) -> list[int]:
    """The splits t (t others at the first breakpoint of a pair, the rest at the second) that
    the two-group search tries first: all of them up to FINE_SPLITS_UP_TO others; beyond, every
    step-th and the last, about SPLIT_GRID in all (:func:`_two_group` refines around the best)."""
    return sorted({*range(0, others + 1, _split_step(others)), others})


def _split_step(others: int) -> int:
    return 1 if others <= FINE_SPLITS_UP_TO else -(-others // SPLIT_GRID)


def _grid_then_around(evaluate: Callable[[list[int]], dict[int, np.ndarray]], others: int,
                      extra: Sequence[int] = ()) -> None:
    """``evaluate(splits)`` (→ D_α per order of each split evaluated) of the splits of
    :func:`_split_grid` and ``extra``, then of every split around the best of those
    (:func:`_around_best`): every split up to FINE_SPLITS_UP_TO others."""
    values = evaluate(sorted(set(_split_grid(others)) | set(extra)))
    evaluate(_around_best(values, _split_step(others), others))


def _around_best(values: dict[int, np.ndarray], step: int, others: int) -> list[int]:
    """Every split within step − 1 of one that is the largest of ``values`` (t: D_α per
    order) at some order."""
    if step == 1 or not values:
        return []
    ts = np.array(sorted(values))
    table = np.array([values[t] for t in ts])
    best = {int(ts[np.argmax(table[:, order])]) for order in range(table.shape[1])}
    return sorted({t for centre in best for t in range(max(0, centre - step + 1), min(others, centre + step - 1) + 1)}
                  - set(values))


def _two_group(engine, evaluator: _Evaluator, others: int, sink: _Candidates, support: int, mirror: bool,
               stages: _Stages, previous: _History | None = None) -> dict:
    """Configurations with the others at (at most) two breakpoints, each once; returns the
    values for the next n's :class:`_History`.

    Up to FINE_SPLITS_UP_TO others every split is tried. Beyond, a split's D_α varies slowly
    with t (the others' sum is close to a discretised normal whose mean and variance are
    affine in t), so each pair of breakpoints tries a grid of about SPLIT_GRID splits and then
    every split within a step of the grid's best at each order (the ascent, which moves one
    client at a time, then refines the best configurations found). The value found is a value
    attained either way; the certificate does not depend on it.

    With ``previous`` (the same search at one client fewer), a configuration is skipped when a
    bound shows it cannot reach the best value screened so far: dropping one other client
    cannot decrease D_α (data processing), so its value is at most that of each configuration
    with one of its others removed, which ``previous`` bounds."""
    kinds = len(evaluator.points)
    seen, recorded = set(), {}

    def evaluate(i: int, j: int, splits: list[int]) -> dict[int, np.ndarray]:
        """D_α per order of the splits of (i, j) not seen before (t others at points[i])."""
        ts, keys = [], []
        for t in splits:
            counts = tuple(t if index == i else others - t if index == j else 0 for index in range(kinds))
            key = _canonical(counts, mirror)
            if key in seen:
                continue
            seen.add(key)
            if previous is not None:
                bound = np.min([previous.bound(tuple(c - (index == kind) for index, c in enumerate(counts)), mirror)
                                for kind in (i, j) if counts[kind]], axis=0)
                if np.all(bound < _cut(sink.top)):
                    recorded[key] = bound
                    continue
            ts.append(t)
            keys.append(counts)
        if not ts:
            return {}
        rests = engine.level(evaluator.clients[i], evaluator.clients[j], others, ts)
        values = _batched(engine, evaluator, rests, keys, sink, support)
        recorded.update({_canonical(key, mirror): row for key, row in zip(keys, values)})
        return dict(zip(ts, values))

    for done, (i, j) in enumerate(_all_pairs(kinds)):
        _grid_then_around(lambda splits, i=i, j=j: evaluate(i, j, splits), others)
        stages.report("two-group", done + 1)
    return recorded


def multiset_sum(engine, clients: Sequence, counts: Sequence[int]):
    """The pmf (a one-row batch) of the sum of counts[i] clients of each kind i: the two largest
    groups as one level row, the other clients added one at a time."""
    order = sorted((c, i) for i, c in enumerate(counts) if c)[::-1]
    if not order:
        return engine.unit()
    (c1, i1), rest = order[0], order[1:]
    if rest:
        (c2, i2), rest = rest[0], rest[1:]
        batch = engine.level(clients[i1], clients[i2], c1 + c2, [c1])
    else:
        batch = engine.level(clients[i1], clients[i1], c1, [c1])
    for c, i in rest:
        for _ in range(c):
            batch = engine.add_client(clients[i], batch)
    return batch


def _ascent(engine, evaluator: _Evaluator, start: tuple, orders: list[int], sink, support: int) -> None:
    """Coordinate ascent from the count vector ``start``: move one other client to another
    breakpoint while the mean relative gain of D_α over ``orders`` is positive."""
    kinds = len(evaluator.points)
    current = start
    current_values = None
    for _ in range(_MAX_ASCENT_MOVES):
        moves, rest_batches = [], []
        for i in range(kinds):
            if not current[i]:
                continue
            reduced = [c - (index == i) for index, c in enumerate(current)]
            base = multiset_sum(engine, evaluator.clients, reduced)
            for j in range(kinds):
                if j != i:
                    moves.append(tuple(c + (index == j) for index, c in enumerate(reduced)))
                    rest_batches.append(engine.add_client(evaluator.clients[j], base))
        if current_values is None:
            rest = multiset_sum(engine, evaluator.clients, current)
            current_values = _batched(engine, evaluator, rest, [current], sink, support)[0]
        values = _batched(engine, evaluator, engine.concat(rest_batches), moves, sink, support)
        gain = _mean_gain(values[:, orders], current_values[orders])
        chosen = int(np.argmax(gain))
        if not gain[chosen] > 1e-12:
            return
        current, current_values = moves[chosen], values[chosen]


def _mean_gain(candidates: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Mean over orders of candidate/current − 1 (+∞ where a finite current becomes +∞; 0 where
    both are +∞)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.isinf(current), np.where(np.isinf(candidates), 1.0, 0.0),
                         candidates / np.where(current > 0, current, 1e-300))
    return np.mean(ratio - 1.0, axis=1)


def search(mechanism: Mechanism, n: int, alphas: Sequence[float], engine, budget: int = EXHAUSTIVE_BUDGET,
           progress: Callable[[int, int], None] | None = None, memo: dict | None = None,
           certify_within: float = certificate.TOLERANCE, certify: bool = True) -> SearchResult:
    """W_n(α) for each order: the largest value found, its configuration, and a certified upper
    bound (see the module docstring). ``memo``: a dict shared by the calls of a sweep over n
    (same mechanism, engine and orders), which reuse what the previous n found.
    ``certify_within``: Theorem A refines each node until it is within this relative distance
    of the value found (0: until it is at most the value found, or its staircases run out).
    ``certify`` False: for callers that use only what the search found, the certificate is not
    computed where the search is not exhaustive (the upper bound is then +inf, and says so)."""
    if n < 2:
        raise ValueError("search is for n ≥ 2 clients")
    alphas = list(alphas)
    refused = _fallback_reason(mechanism, n, len(alphas), engine, budget, engine.name == "fast")
    if refused is not None:
        return _limited_search(mechanism, n, alphas, engine, budget, refused, certify)
    if mechanism.OTHERS_FAMILY == "shift":
        return _shift_family(mechanism, n, alphas, engine, progress)
    points, client_pairs = _search_points(mechanism, n)
    grid = client_pairs is not None
    quick = _screening_engine(engine)
    clients = [quick.client(mechanism, p) for p in points]
    kinds, others = len(points), n - 1
    support = n * (mechanism.support_size - 1) + 1
    mixture = None
    affine = mechanism.OTHERS_FAMILY == "affine"
    compiled = affine and not _wraps(mechanism, n)  # enumerated by the compiled tree (certificate.py)
    exhaustive = multisets(others, kinds) <= (budget if compiled else min(budget, LOG_DOMAIN_BUDGET))
    compiled = compiled and exhaustive
    stages, certifying = _search_stages(progress, exhaustive, len(_all_pairs(kinds)) * affine, len(_all_pairs(kinds)),
                                        alphas)
    if compiled:
        configurations, enumerated = _enumerated(mechanism, n, alphas, quick, clients, points, budget)
        closed = _enumerated_closed(alphas)
        search_name = "exhaustive" if closed else f"exhaustive at {_CERTIFICATE_ORDERS + 1} orders"
        stages.report("others", 1)
    elif exhaustive:
        coarse = mechanism.OTHERS_FAMILY == "breakpoints" and kinds == 2 and others > FINE_SPLITS_UP_TO
        search_name = _exhaustive_name(affine, grid, kinds, others if coarse else None)
        candidates = _Candidates(len(alphas))
        _exhaustive(quick, _Evaluator(quick, clients, points, alphas, client_pairs), others, candidates, support,
                    mechanism.mirror_symmetric(), coarse)
        configurations = candidates.configurations()
        stages.report("others", 1)
    else:
        search_name = "two-group+ascent"
        candidates, mixture = _two_group_and_ascent(mechanism, n, alphas, quick, clients, stages,
                                                    {} if memo is None else memo)
        configurations = candidates.configurations()
    precise_clients = clients if quick is engine else [engine.client(mechanism, p) for p in points]
    best = _accurate(engine, precise_clients, points, alphas, configurations)
    if grid:  # the branch-and-bound's points of the interval that beat the grid
        best = _wrapped_points(mechanism, n, alphas, (quick, engine), points, configurations, best)
    stages.report("accurate", 1)

    if compiled:
        upper, text = np.maximum(enumerated, best.values), _enumerated_text(closed)
    elif search_name == "exhaustive":
        upper, text = best.values, "exhaustive: equal to the value"
    elif not certify:
        upper, text = np.full(len(alphas), math.inf), "not computed (the search's values only)"
    else:
        bound, text = _sweep_certificate(memo, mechanism, n, alphas, lambda: _certificate(
            mechanism, n, alphas, quick, clients, points, budget, mixture, memo, best.values,
            [c for c in dict.fromkeys(best.attained) if c is not None],
            lambda fraction: stages.report("certificate", round(fraction * certifying)), certify_within))
        upper = np.maximum(bound, best.values)
    stages.report("certificate", certifying)
    return SearchResult([float(v) for v in best.values], best.precise, best.attained,
                        _non_decreasing_in_alpha(alphas, upper, best.values), search_name, text)


def _search_points(mechanism: Mechanism, n: int) -> tuple[tuple, list | None]:
    """The inputs the others range over, and client 1's pairs among them where they are not
    all the ordered pairs (None): the breakpoints; for a sum that wraps, a grid of inputs, with
    client 1 at the breakpoints (module docstring, PBM)."""
    points = mechanism.breakpoints()
    grid = _wrapped_grid(mechanism, n)
    if not grid:
        return points, None
    return grid, [(grid.index(x), grid.index(y)) for x, y in itertools.combinations(points, 2)]


def _search_stages(progress, exhaustive: bool, mixture_pairs: int, pairs: int, alphas: list[float]):
    """The search's progress stages (their weights) and the certificate's number of steps."""
    searching = {"others": 1} if exhaustive else {"mixture": mixture_pairs, "two-group": pairs,
                                                  "ascent": len(_search_orders(alphas))}
    certifying = 1 if exhaustive else CERTIFICATE_STEPS
    return _Stages(progress, searching | {"accurate": 1, "certificate": certifying}), certifying


def _enumerated_closed(alphas: list[float]) -> bool:
    """Whether the compiled enumeration is exact at every order asked (at most
    _CERTIFICATE_ORDERS finite orders, none above certificate.LARGEST_ORDER)."""
    finite = {a for a in alphas if a != math.inf}
    return len(finite) <= _CERTIFICATE_ORDERS and all(a <= certificate.LARGEST_ORDER for a in finite)


def _enumerated_text(closed: bool) -> str:
    """What the compiled enumeration certifies: every order asked (``closed``), or the orders it ran at."""
    return ("exhaustive: every multiset of the others (equal to the value up to rounding)" if closed else
            f"exhaustive at {_CERTIFICATE_ORDERS} orders spread over [1, {certificate.LARGEST_ORDER:g}] and at ∞, "
            "chords in between (convexity of (α − 1)D_α), D_∞ above; the value at the other orders is the best "
            "of the configurations found")


def _enumerated(mechanism: Mechanism, n: int, alphas: list[float], quick, clients, points, budget: int):
    """The compiled tree's enumeration of every multiset of the others (:mod:`.certificate`):
    the configurations it found worst and its bound at every order (exact at up to
    _CERTIFICATE_ORDERS orders, chords in between). The homogeneous configurations, screened
    first, give the value the tree must beat, so it prunes from the start."""
    kinds, others = len(points), n - 1
    support = n * (mechanism.support_size - 1) + 1
    configurations = []
    homogeneous = [tuple(others * (index == kind) for index in range(kinds)) for kind in range(kinds)]
    screened = _Candidates(len(alphas))
    _batched(quick, _Evaluator(quick, clients, points, alphas),
             quick.concat([multiset_sum(quick, clients, key) for key in homogeneous]), homogeneous, screened, support)
    attained = dict(zip(alphas, _cut(screened.top)))  # values attained, up to the screen's error

    def enumerate_all(orders):
        below = np.array([max((v for a, v in attained.items() if a <= order), default=0.0) for order in orders])
        result = certificate.certify(_linear_pmfs(quick, clients), _mirror_map(mechanism), n, orders, below, budget)
        configurations.extend(Configuration(points[x], points[x_prime], _others(points, counts))
                              for counts, (x, x_prime) in zip(result.exhaustive.others, result.exhaustive.pairs))
        return result.upper

    enumerated = _certificate_orders(enumerate_all, alphas, _CERTIFICATE_ORDERS)
    return configurations, enumerated


def _wrapped_points(mechanism: Mechanism, n: int, alphas: list[float], engines, points, configurations, best):
    """For a sum that wraps: the configurations of the branch-and-bound's points inside the
    intervals that beat the grid's best, evaluated accurately with it (``engines``: the
    screening engine and the one asked for)."""
    quick, engine = engines
    outcome = _wrapped_outcome(mechanism, n, alphas, quick, best.values)
    found = [Configuration(mechanism.bound, -mechanism.bound, others) for others in outcome.others if others]
    if not found:
        return best
    points = sorted(set(points) | {x for c in found for x, _ in c.others})
    return _accurate(engine, [engine.client(mechanism, p) for p in points], points, alphas, [*configurations, *found])


def _non_decreasing_in_alpha(alphas: Sequence[float], upper: np.ndarray, values: np.ndarray) -> list[float]:
    """The bound at each order lowered to the smallest bound at an order at or above it (D_α is
    non-decreasing in α for every pair, so W_n(α) ≤ W_n(α′) for α ≤ α′), and never below the
    value found there: the certified curve is then non-decreasing in α like the worst case."""
    order = np.argsort(alphas, kind="stable")
    lowered = np.empty(len(alphas))
    lowered[order] = np.minimum.accumulate(np.asarray(upper, dtype=float)[order][::-1])[::-1]
    return [float(u) for u in np.maximum(lowered, values)]


#: in a sweep over n, the certificate is computed again once n has grown by this factor since
#: the n it was computed at (:func:`_sweep_certificate`)
SWEEP_RECERTIFY = 1.1


def _sweep_certificate(memo: dict | None, mechanism: Mechanism, n: int, alphas: list[float],
                       compute: Callable[[], tuple[np.ndarray, str]]) -> tuple[np.ndarray, str]:
    """``compute()``, or in a sweep over increasing n (``memo``) the certificate of an earlier
    n′ ≤ n < SWEEP_RECERTIFY·n′. Valid: W_n(α) is non-increasing in n. For any inputs of n
    clients, the sum of n is the sum of the first n − 1 plus the n-th client's output, drawn
    independently of client 1's input — a post-processing of the pair of sums of n − 1
    clients (modular reduction, with ``bits``, is one too), so D_α of the pair of n is at most
    D_α of the pair of n − 1, hence at most W_{n−1}(α). PBM's relaxed bound is exact and fast,
    and is computed at every n."""
    key = ("certified", tuple(alphas))
    earlier = None if memo is None or mechanism.OTHERS_FAMILY == "relaxed" else memo.get(key)
    if earlier is not None and earlier[0] <= n < SWEEP_RECERTIFY * earlier[0]:
        return earlier[1], (f"the certificate at n = {earlier[0]} (the worst case is non-increasing in n: data "
                            f"processing), {earlier[2]}")
    bound, text = compute()
    if memo is not None:
        memo[key] = (n, bound, text)
    return bound, text


#: the most inputs of the grid the others run over when the sum wraps (PBM with ``bits``)
WRAPPED_GRID = 21


def _wrapped_grid(mechanism: Mechanism, n: int) -> tuple[Fraction, ...]:
    """For PBM (``OTHERS_FAMILY`` "relaxed") whose sum wraps modulo 2^bits: equally spaced inputs
    for the others (the breakpoints ±b among them), as many (odd, at most WRAPPED_GRID) as an
    exhaustive search over their multisets affords; () otherwise. Wrap-around breaks the argument
    that puts the others at ±b, so the value found is sought over the grid; the certificate (the
    relaxed family) holds for every input either way."""
    if mechanism.OTHERS_FAMILY != "relaxed" or not _wraps(mechanism, n):
        return ()
    count = max((g for g in range(3, WRAPPED_GRID + 1, 2) if multisets(n - 1, g) <= LOG_DOMAIN_BUDGET), default=0)
    b = mechanism.bound
    return tuple(-b + 2 * b * Fraction(i, count - 1) for i in range(count)) if count else ()


#: the branch-and-bound outcomes of the last few questions (a search asks, then its certificate)
_wrapped_memory = Remembered(8)
#: the reductions of the others (:func:`others_components`) of the last few queries
_components_memory = Remembered(8)


def _wrapped_outcome(mechanism: Mechanism, n: int, alphas: Sequence[float], engine, found) -> wrapped.Outcome:
    """:func:`rdpcalc.worstcase.wrapped.branch_and_bound` over the others' inputs of PBM whose sum wraps,
    remembered per (mechanism, n, orders): the search runs it for the points that beat its grid,
    the certificate takes its bound."""
    key = (mechanism, n, tuple(alphas))
    return _wrapped_memory.get(key, lambda: wrapped.branch_and_bound(mechanism, n, alphas, engine, _pair_maximum, found))


def _wrapped_text(outcome: wrapped.Outcome) -> str:
    """How the branch-and-bound ended, for the certificate's text."""
    how = (f"within {wrapped.TOLERANCE:.2%} of the value found" if outcome.complete else
           f"stopped {outcome.stop}")
    boxes = f"{outcome.boxes} box{'es' if outcome.boxes != 1 else ''}"
    return f"where smaller, a branch-and-bound over boxes of the others' inputs ({boxes}, {how})"


def _wraps(mechanism: Mechanism, n: int) -> bool:
    """Whether the sum of n clients wraps modulo the mechanism's modulus (``--bits``)."""
    return mechanism.modulus is not None and n * (mechanism.support_size - 1) + 1 > mechanism.modulus


def _linear_pmfs(engine, clients) -> np.ndarray:
    """The breakpoints' pmfs as linear float64 rows (the compiled certificates' input)."""
    return np.exp(np.array(clients, dtype=float))


def _mirror_map(mechanism: Mechanism) -> tuple[int, ...] | None:
    """Breakpoint i ↦ its mirror image's index, for a mirror-symmetric mechanism."""
    count = len(mechanism.breakpoints())
    return tuple(range(count))[::-1] if mechanism.mirror_symmetric() else None


#: client 1's pairs that cover a rounded-noise mechanism's worst case (:mod:`rdpcalc.mechanisms.rounded`)
SHIFT_PAIRS = ("breakpoints up to a shift (the largest shift alone where c is a grid point and nothing wraps: "
               "log-concave noise)")
#: how the worst case of a rounded-noise mechanism is certified
SHIFT_CERTIFICATE = ("exhaustive: the others at a grid point (elsewhere they only add independent rounding noise), "
                     f"client 1 over every pair of {SHIFT_PAIRS}")


def _shift_family(mechanism, n: int, alphas: list[float], engine, progress) -> SearchResult:
    """The worst case of a rounded-noise mechanism (``OTHERS_FAMILY == "shift"``): the n − 1
    others at the grid point 0 and client 1 over :meth:`~rdpcalc.mechanisms.RoundedNoise.shift_pairs`
    (both directions) — the whole worst case, by the argument of :mod:`rdpcalc.mechanisms.rounded`."""
    pairs = mechanism.shift_pairs()
    used = sorted({i for pair in pairs for i in pair})
    points = [mechanism.breakpoints()[i] for i in used]  # only the inputs of the pairs, and 0 for the others
    pairs = [(used.index(i), used.index(j)) for i, j in pairs]
    kinds = points + [Fraction(0)] * (Fraction(0) not in points)
    stages = _Stages(progress, {"others": 1, "accurate": 1})
    quick = _screening_engine(engine)
    clients = [quick.client(mechanism, p) for p in kinds]
    counts = tuple((n - 1) * (p == 0) for p in kinds)
    candidates = _Candidates(len(alphas))
    _Evaluator(quick, clients, kinds, alphas, pairs).evaluate(
        multiset_sum(quick, clients, counts), lambda row: _others(kinds, counts), candidates)
    stages.report("others", 1)
    precise_clients = clients if quick is engine else [engine.client(mechanism, p) for p in kinds]
    best = _accurate(engine, precise_clients, kinds, alphas, candidates.configurations())
    stages.report("accurate", 1)
    values = [float(v) for v in best.values]
    return SearchResult(values, best.precise, best.attained, values, "exhaustive", SHIFT_CERTIFICATE)


def _two_group_and_ascent(mechanism, n, alphas, engine, clients, stages: _Stages, memo: dict):
    """The candidates of the two-group search and the ascent (module docstring), at every
    order; and the :class:`_MixtureBound` built to rule out client-1 pairs (None when the
    mechanism's family has none). Reports the stages mixture, two-group and ascent."""
    points, kinds, others = list(mechanism.breakpoints()), len(clients), n - 1
    support, mirror = n * (mechanism.support_size - 1) + 1, mechanism.mirror_symmetric()
    orders = _search_orders(alphas)
    searched = [alphas[i] for i in orders]
    candidates = _Candidates(len(orders))
    pairs, fallback, mixture = None, np.full(len(orders), -np.inf), None
    if mechanism.OTHERS_FAMILY == "affine":  # the homogeneous configurations give a value to beat
        mixture = _MixtureBound(mechanism, n, searched, engine, clients, lambda done: stages.report("mixture", done))
        homogeneous = [tuple(others * (index == kind) for index in range(kinds)) for kind in range(kinds)]
        rests = engine.concat([multiset_sum(engine, clients, key) for key in homogeneous])
        _batched(engine, _Evaluator(engine, clients, points, searched), rests, homogeneous, candidates, support)
        pairs, fallback = mixture.pairs_reaching(candidates.top, range(len(orders)), mirror)
    evaluator = _Evaluator(engine, clients, points, searched, pairs)
    previous = memo.pop(("two-group", n - 1), None)
    previous = previous if previous is not None and previous.alphas == tuple(searched) else None
    recorded = _two_group(engine, evaluator, others, candidates, support, mirror, stages, previous)
    memo[("two-group", n)] = _History(tuple(searched), recorded, fallback)
    starts: dict[tuple, list[int]] = {}
    for order, entries in enumerate(candidates.lists):
        starts.setdefault(_counts(entries[0][1], points), []).append(order)
    for done, (start, chosen) in enumerate(starts.items()):
        _ascent(engine, evaluator, start, chosen, candidates, support)
        stages.report("ascent", done + 1)
    if len(orders) < len(alphas):
        candidates = _rescreen(engine, clients, points, alphas, candidates.configurations(), mechanism.support_size)
    return candidates, mixture


#: the slack taken off a value attained (:func:`attained_below`): far above the fast engine's error
ATTAINED_SLACK = 1e-6


def attained_below(mechanism: Mechanism, n: int, alphas: Sequence[float]) -> np.ndarray:
    """A lower bound of the worst case W_n(α) at each order, at the cost of one configuration
    of the family (the search's two-group stage alone evaluates hundreds): client 1 at the ends
    of the input range, both ways, the n − 1 others all at the breakpoint nearest 0. Its D_α is
    attained by neighbouring inputs, so it lies below W_n(α) and below every certified bound of
    it. The value is the fast engine's screen (:func:`rdpcalc.numerics.fast.screened_divergences`:
    within 1e−9 + 1e−8·D_α, on sums accurate to ~1e−12 relative), taken down by ATTAINED_SLACK
    relative and absolute, and at least 0 (D_α ≥ 0; −∞ or NaN read as 0). For a mechanism with
    unbounded noise the engine's pmfs are windowed and normalised, which may raise a divergence:
    not for such mechanisms (ValueError)."""
    if mechanism.UNBOUNDED:
        raise ValueError("attained_below takes mechanisms without unbounded noise")
    engine = FastEngine(mechanism.modulus)
    points = list(mechanism.breakpoints())
    middle = min(range(len(points)), key=lambda index: abs(points[index]))
    kinds = sorted({0, middle, len(points) - 1})
    clients = [engine.client(mechanism, points[index]) for index in kinds]
    rest = multiset_sum(engine, clients, [(n - 1) * (index == middle) for index in kinds])
    low, high = (engine.add_client(clients[kinds.index(index)], rest) for index in (0, len(points) - 1))
    values = np.fmax(*(floats[0] for floats in engine.screen_both(low, high, alphas)))
    return np.maximum(np.nan_to_num(values * (1 - ATTAINED_SLACK) - ATTAINED_SLACK, nan=0.0, posinf=np.inf), 0.0)


def _screening_engine(engine):
    """The engine of screens, searches and bounds: the fast one (they are floats in either engine)."""
    return engine if engine.name == "fast" else FastEngine(engine.modulus)


def certified_upper(mechanism: Mechanism, n: int, alphas: Sequence[float], engine,
                    budget: int = EXHAUSTIVE_BUDGET) -> tuple[list[float], str]:
    """The certified upper bound on W_n(α) and its text (:func:`_certified`)."""
    upper, _, text = _certified(mechanism, n, alphas, engine, budget)
    return upper, text


def certified_bracket(mechanism: Mechanism, n: int, alphas: Sequence[float], engine,
                      budget: int = EXHAUSTIVE_BUDGET) -> tuple[list[float], list[float] | None, str]:
    """(upper, lower, text): :func:`certified_upper`, a lower bound of W_n(α) at the same
    orders, values attained (the search's values where it ran at every order, else
    :func:`attained_below`; None for a mechanism with unbounded noise), and the certificate's
    text."""
    upper, searched, text = _certified(mechanism, n, alphas, engine, budget)
    return upper, (searched if searched is not None else _attained(mechanism, n, alphas)), text


def _certified(mechanism: Mechanism, n: int, alphas: Sequence[float], engine,
               budget: int = EXHAUSTIVE_BUDGET) -> tuple[list[float], list[float] | None, str]:
    """(upper, the search's values where it ran at every order else None, text): the certified
    upper bound on W_n(α) (what accounting needs). For a mechanism affine between breakpoints
    the search runs first: Theorem A refines its nodes until they are within a tolerance of the
    value found (:mod:`rdpcalc.worstcase.certificate`).

    For a mechanism certified over its input interval (``UNIMODAL_IN_INPUT``, the quantized
    Gaussian) the certificate (Theorem A over the input interval) does not depend on the orders
    the search ran at, only on its targets there: the search runs only at the orders the
    certificate is computed at (:func:`_certificate_orders`), and the chords of convexity bound
    the others, as they do in :func:`search`; the one-client bound is taken at every order as
    there. The bound is the one :func:`search` gives, or tighter where the one-client bound is
    the smaller at a computed order (the chords of the minimum), without screening every sum at
    every order (at n = 1000 and 65 001 outputs, 500 sums × 96 orders: minutes). Beyond
    FINE_SPLITS_UP_TO others the search over the others at ±b tries a grid of splits and every
    split around the best (:func:`_exhaustive`; at n = 1000, 77 of the 500 sums): the values it
    finds are attained, and the certificate's targets."""
    if n < 2:
        raise ValueError("certified_upper is for n ≥ 2 clients")
    points = mechanism.breakpoints()
    if _over_interval(mechanism):
        upper, text = _interval_certified_upper(mechanism, n, alphas, engine, budget)
        return upper, None, text
    if mechanism.OTHERS_FAMILY != "relaxed":  # the search checks its memory
        refused = _fallback_reason(mechanism, n, len(alphas), engine, budget, True)
        if refused is None:
            result = search(mechanism, n, alphas, engine, budget)
            return result.upper, result.values, result.certificate
        upper, text = _staircase_upper(mechanism, n, alphas, engine, budget, refused)
        return upper, None, text
    resources.require_costs(search_costs(mechanism, n, len(alphas), budget, engine.dps))
    quick = _screening_engine(engine)
    clients = [quick.client(mechanism, p) for p in points]
    bound, text = _certificate(mechanism, n, alphas, quick, clients, points, budget)
    return _non_decreasing_in_alpha(alphas, bound, np.full(len(alphas), -np.inf)), None, text


def _over_interval(mechanism: Mechanism) -> bool:
    """Whether the mechanism is certified over its input interval (:func:`_interval_certified_upper`)."""
    return mechanism.OTHERS_FAMILY == "breakpoints" and mechanism.UNIMODAL_IN_INPUT


def certified_by_order(mechanism: Mechanism) -> bool:
    """Whether :func:`certified_upper` at one order costs a fraction of the curve at the
    accounting's orders: not for a mechanism certified over its input interval, whose Theorem C
    enumeration over the anchors' multisets is most of the cost at any number of orders (13 s of
    14 s at one order for the quantized Gaussian at n = 40 and 26 levels)."""
    return not _over_interval(mechanism)


def attained(mechanism: Mechanism, n: int, alphas: Sequence[float], engine,
             budget: int = EXHAUSTIVE_BUDGET) -> list[float] | None:
    """The lower bound of :func:`certified_bracket`, without the certificate: the search's values
    where :func:`_certified` runs it at every order (here with ``certify`` off), else
    :func:`attained_below`; None for a mechanism with unbounded noise."""
    if not (_over_interval(mechanism) or mechanism.OTHERS_FAMILY == "relaxed" or mechanism.UNBOUNDED) \
            and _fallback_reason(mechanism, n, len(alphas), engine, budget, True) is None:
        return search(mechanism, n, alphas, engine, budget, certify=False).values
    return _attained(mechanism, n, alphas)


def _attained(mechanism: Mechanism, n: int, alphas: Sequence[float]) -> list[float] | None:
    """:func:`attained_below` as a list, None for a mechanism with unbounded noise."""
    return None if mechanism.UNBOUNDED else [float(v) for v in attained_below(mechanism, n, alphas)]


def refusal(costs: Sequence[Cost]) -> str | None:
    """Why :func:`resources.require_costs` would refuse ``costs``, in words (None where they fit)."""
    total, largest = sum(cost.bytes for cost in costs), max(costs, key=lambda cost: cost.bytes)
    if total <= resources.budget():
        return None
    return (f"it needs about {resources.format_size(total)} of memory, over the budget of "
            f"{resources.format_size(resources.budget())}; the largest part: {largest.what}")


def _fallback_reason(mechanism: Mechanism, n: int, orders: int, engine, budget: int, allowed: bool) -> str | None:
    """Why the search does not fit in memory, where the staircase (:func:`_staircase_upper`,
    whose own memory is checked here) stands in for it: an affine mechanism whose sum does not
    wrap, and ``allowed``; None where the search fits; a refusal (ParameterError) otherwise."""
    costs = search_costs(mechanism, n, orders, budget, engine.dps)
    refused = refusal(costs)
    if refused is None or not (allowed and mechanism.OTHERS_FAMILY == "affine" and not _wraps(mechanism, n)):
        resources.require_costs(costs)  # refuses where over the budget
        return None
    kinds, size = len(mechanism.breakpoints()), n * (mechanism.support_size - 1) + 1
    resources.require_costs([Cost(staircase.peak_bytes(kinds, size), "n", f"the others' common component on a "
                                                                            f"staircase of K ({kinds} breakpoints, "
                                                                            f"sums of {size} points)")])
    return refused


def _limited_search(mechanism: Mechanism, n: int, alphas: list[float], engine, budget: int, refused: str,
                    certify: bool) -> SearchResult:
    """:func:`search` where its memory estimate is over the budget (``refused`` says why; an affine
    mechanism, the fast engine): the largest value over a smaller family — the others all at one
    breakpoint (each in turn), client 1 over the pairs of the EDGE_POINTS breakpoints at each end
    — a lower bound of the worst case; and the certificate of :func:`_staircase_upper`."""
    points = list(mechanism.breakpoints())
    clients = [engine.client(mechanism, p) for p in points]
    kinds = len(points)
    edges = sorted({*range(min(EDGE_POINTS, kinds)), *range(max(0, kinds - EDGE_POINTS), kinds)})
    evaluator = _Evaluator(engine, clients, points, alphas, [(i, j) for i in edges for j in edges if i < j])
    candidates = _Candidates(len(alphas))
    support = n * (mechanism.support_size - 1) + 1
    for kind in range(kinds):  # one sum of the others at a time (memory)
        key = tuple((n - 1) * (index == kind) for index in range(kinds))
        _batched(engine, evaluator, multiset_sum(engine, clients, key), [key], candidates, support)
    best = _accurate(engine, clients, points, alphas, candidates.configurations())
    name = (f"homogeneous others, client 1 at the {len(edges)} end breakpoints (a smaller family: the search does "
            f"not fit)")
    if not certify:
        upper, text = np.full(len(alphas), math.inf), "not computed (the search's values only)"
    else:
        upper, text = _staircase_upper(mechanism, n, alphas, engine, budget, refused)
    return SearchResult([float(v) for v in best.values], best.precise, best.attained,
                        _non_decreasing_in_alpha(alphas, np.maximum(upper, best.values), best.values), name, text)


def _staircase_upper(mechanism: Mechanism, n: int, alphas: Sequence[float], engine, budget: int,
                     refused: str) -> tuple[list[float], str]:
    """:func:`certified_upper` for an affine mechanism whose search does not fit in memory
    (``refused`` says why): the others' common component on a staircase of K
    (:class:`rdpcalc.worstcase.staircase.Bound`, within the certificate's tolerance of the
    bound over every K) at the certificate's orders, chords between them
    (:func:`_certificate_orders`); at α = ∞, which caps every order, Theorem B (exhaustive over
    as many others as the budget enumerates for every pair of client 1: at n = 1000 and 34
    breakpoints, 4 others took over two minutes)."""
    quick = _screening_engine(engine)
    clients = [quick.client(mechanism, p) for p in mechanism.breakpoints()]
    component = others_component(mechanism, n - 1)
    pairs = tuple(itertools.combinations(range(len(clients)), 2))
    problem = certificate.Problem(_linear_pmfs(quick, clients), pairs, (math.inf,), _mirror_map(mechanism), n)
    cap, cap_text = certificate.theorem_b(problem, 0.0, budget // len(pairs))
    texts = []

    def compute(orders):
        finite = [a for a in orders if a != math.inf]
        values = {math.inf: cap}
        if finite:
            bound = staircase.Bound(quick, component.log_component, component.share, clients, component.blocks,
                                    finite, certificate.TOLERANCE)
            values.update(zip(finite, bound.values))
            texts.append(f"{component.describe()} on a staircase of {len(bound.grid)} "
                         f"values of K (within {certificate.TOLERANCE:.1%} of every K), {bound.evaluated} of "
                         f"{bound.pairs} client-1 pairs at every one of them, the others ruled out by their bounds at fewer")
        return np.array([values[a] for a in orders])

    bound = np.minimum(_certificate_orders(compute, alphas), cap)
    text = f"{texts[0] if texts else 'one client'}; {cap_text} (the search does not fit: {refused})"
    return _non_decreasing_in_alpha(alphas, bound, np.full(len(alphas), -np.inf)), text


def _interval_certified_upper(mechanism: Mechanism, n: int, alphas: Sequence[float], engine,
                              budget: int) -> tuple[list[float], str]:
    """:func:`certified_upper` for a mechanism certified over its input interval: the search at the
    certificate's orders, chords between them, the one-client bound at every order."""
    texts = []

    def searched(orders):
        result = search(mechanism, n, orders, engine, budget)
        texts.append(result.certificate)
        return np.array(result.upper)

    bound = _certificate_orders(searched, alphas, *_interval_orders(mechanism, n))
    quick = _screening_engine(engine)
    points = mechanism.breakpoints()
    clients = [quick.client(mechanism, p) for p in points]
    one = _by_chords(lambda orders: _exhaustive_maximum(mechanism, quick, clients, points, orders, 0), alphas)
    return _non_decreasing_in_alpha(alphas, np.minimum(bound, one), np.full(len(alphas), -np.inf)), texts[0]


def _interval_orders(mechanism: Mechanism, n: int) -> tuple[int, bool]:
    """How many orders the certificate over the input interval is computed at (chords between),
    and whether at any of the orders asked (:func:`_certificate_orders`): INTERVAL_ORDERS of them
    where the sum of n clients has at most INTERVAL_ORDERS_SUPPORT outputs, else
    certificate.ORDERS, among those Theorem A handles faster."""
    small = n * (mechanism.support_size - 1) + 1 <= INTERVAL_ORDERS_SUPPORT
    return (INTERVAL_ORDERS, True) if small else (certificate.ORDERS, False)


def _certificate(mechanism, n, alphas, engine, clients, points, budget, mixture=None, memo=None,
                 found=None, attained: Sequence[Configuration] = (),
                 progress: Callable[[float], None] | None = None,
                 tolerance: float = certificate.TOLERANCE) -> tuple[np.ndarray, str]:
    """The bound of the module docstring for a search that is not exhaustive, and its text
    (``mixture``: a :class:`_MixtureBound` already built; ``memo`` as in :func:`search`;
    ``found``: the values the search found, when it ran, ``attained`` the configurations that
    attain them; ``progress``: told the fraction of Theorem A's client-1 pairs settled). Each
    bound is computed at no more than _CERTIFICATE_ORDERS orders and bounded by chords in
    between (:func:`_by_chords`)."""
    family = mechanism.OTHERS_FAMILY
    if family == "relaxed":
        found_at = None if found is None else dict(zip(alphas, found))
        text = []

        def relaxed(orders):
            below = None if found_at is None else np.array([found_at.get(a, -np.inf) for a in orders])
            bound, description = _relaxed_upper(mechanism, n, orders, engine, memo, below, tolerance)
            if _wraps(mechanism, n):
                outcome = _wrapped_outcome(mechanism, n, orders, engine, below)
                bound = np.minimum(bound, outcome.upper)
                description = f"{description}; {_wrapped_text(outcome)}"
            text.append(description)
            return bound

        return _by_chords(relaxed, alphas), text[0]
    one = _by_chords(lambda orders: _exhaustive_maximum(mechanism, engine, clients, points, orders, 0, memo), alphas)
    if family != "affine" and not mechanism.UNIMODAL_IN_INPUT:
        return one, "one client (data processing)"
    texts = []

    def targets(orders):
        """Values attained at ``orders`` (the certificate's targets): those found where asked; at
        an order not asked for, the configurations found evaluated there, or (none given) the value
        found at the largest order below it (D_α is non-decreasing in α)."""
        values = np.array([max((v for a, v in zip(alphas, found) if a <= order), default=0.0) for order in orders])
        unasked = [order for order in orders if order not in alphas]
        if attained and unasked:
            evaluated = dict(zip(unasked, _accurate(engine, clients, points, unasked, attained).values))
            values = np.array([max(value, evaluated.get(order, value)) for order, value in zip(orders, values)])
        return values

    if family != "affine":
        def interval(orders):
            wanted = targets(orders)
            bound, text = certificate.continuum(_linear_pmfs(engine, clients), n, orders, wanted, tolerance)
            mixed, chosen = anchored_upper(mechanism, n, orders, engine, wanted, tolerance)
            if np.any(mixed < bound):
                text += f"; where smaller, Theorem C: {chosen.describe()}"
                finite = np.isfinite(orders)
                if np.any(np.minimum(bound, mixed)[finite] > wanted[finite] * (1 + tolerance)):
                    text += _anchors_limit(mechanism, n, len(chosen.anchors), int(np.sum(finite)))
            texts.append(text)
            return np.minimum(bound, mixed)

        bound = _certificate_orders(interval, alphas, *_interval_orders(mechanism, n))
        return np.minimum(one, bound), (f"{texts[0]}; client 1 at ±b ({mechanism.WORST_PAIR_PREMISE})"
                                        if mechanism.WORST_PAIR_PREMISE else texts[0])
    shares = []

    def common(orders):
        built = mixture if mixture is not None and mixture.alphas == list(orders) else \
            _MixtureBound(mechanism, n, orders, engine, clients)
        shares.append(built.describe())
        return built.bound()

    def tight(orders):
        result = certificate.certify(_linear_pmfs(engine, clients), _mirror_map(mechanism), n, orders,
                                     targets(orders), budget, progress, tolerance)
        texts.append(result.text)
        return result.upper

    mixed = _by_chords(common, alphas)
    bound = _certificate_orders(tight, alphas)
    text = texts[0]
    if np.any(mixed < bound):
        text += f"; where smaller, {shares[0]}"
    return np.minimum(bound, mixed), text


#: the certificate over the input interval (the quantized Gaussian) is computed at this many
#: orders where the sum has at most INTERVAL_ORDERS_SUPPORT outputs, chords between. At
#: certificate.ORDERS orders its chords were loose: at n = 10 (σ = C_q = 1, k = 16) up to 1.68
#: times the value found between the orders computed, where the bound is within 0.5 % of it,
#: which put the README's account at ε = 29.1 against 25.7 found. Each order adds the evaluation
#: of Theorem C's leaves at it: under 0.1 s there, 0.7 s at n = 40 and k = 34 (where building
#: them takes 13 s), 4 s at n = 1000 (the search's level rows)
INTERVAL_ORDERS = 32
INTERVAL_ORDERS_SUPPORT = 400

#: Theorem C's enumeration over the anchors' multisets (three or more anchors: one walk of the
#: compiled tree of the largest cut, bounded at every cut's depth) takes at most this much work,
#: as :func:`_anchored_work` estimates it (about 1.6 ns a unit measured on two cores: 16 s at
#: most); the most anchors that fit are taken (fewer where they bring the bound within the
#: tolerance of the values attained), and two (the ends, by the search's level rows) where none does
ANCHORED_WORK = 1e10
#: a multiset's bound costs two convolutions with client 1's pmfs and, per order and row entry,
#: terms worth about this many multiply-adds (measured: 28 orders take 7 times as long as 3)
ORDER_TERMS_WORK = 8
#: the anchors and residual of Theorem C per mechanism and anchor count (their linear programs
#: take seconds, and each accounting of a calibration asks again)
_mixtures_memory = Remembered(16)
#: the float pmfs at the inputs those linear programs read, per mechanism (the anchor counts'
#: cells halve the same dyadic grid of the interval, so most inputs recur from count to count)
_interval_pmfs_memory = Remembered(4)


def anchored_upper(mechanism: Mechanism, n: int, alphas: Sequence[float], engine, targets: np.ndarray | None = None,
                   tolerance: float = certificate.TOLERANCE) -> tuple[np.ndarray, anchors.Mixture]:
    """Theorem C (:mod:`rdpcalc.worstcase.anchors`) for a mechanism whose others range over its
    input interval [−b, b] and whose outputs' probabilities are unimodal in the input: per order
    (+inf at ∞) a bound on W_n(α) for client 1 at ±b (both directions), and the anchors and
    residual it rests on. V(K) is the exhaustive maximum over the anchors' multisets: the
    compiled tree (margins included) for three or more anchors, the search's level rows for the
    two ends (margins added). The anchor counts of anchors.ANCHOR_COUNTS whose enumeration fits
    ANCHORED_WORK are tried from the fewest up (while they fit), until the bound is within
    ``tolerance`` of ``targets`` (values attained at the orders of ``alphas``) at every finite
    order (one likely to miss it is passed over where a larger may fit: :func:`_fewest_anchors`);
    without targets, or where none is, the most anchors that fit give the bound. Refused
    (ValueError) for a mechanism whose outputs' probabilities are not known to be unimodal in the
    input: the cells' weights rest on it."""
    if not mechanism.UNIMODAL_IN_INPUT:
        raise ValueError(f"Theorem C needs outputs unimodal in the input; {mechanism.name} does not declare it")
    quick = _screening_engine(engine)
    finite = [a for a in alphas if a != math.inf]

    def fits(count: int) -> bool:
        return count == 2 or _anchored_work(mechanism, n, count, len(finite)) <= ANCHORED_WORK

    if targets is None or not finite:
        chosen = _mixture(mechanism, next(c for c in sorted(anchors.ANCHOR_COUNTS, reverse=True) if fits(c)))
        if not finite:
            return np.full(len(alphas), math.inf), chosen
        bound = _anchored_bound(mechanism, n, finite, quick, chosen)
    else:
        attained = np.array([t for a, t in zip(alphas, targets) if a != math.inf], dtype=float)
        bound, chosen = _fewest_anchors(mechanism, n, finite, quick, attained, tolerance, fits)
    bounds = dict(zip(finite, bound))
    return np.array([bounds.get(a, math.inf) for a in alphas]), chosen


def _mixture(mechanism: Mechanism, count: int) -> anchors.Mixture:
    """:func:`rdpcalc.worstcase.anchors.mixture` of ``count`` anchors over the mechanism's input
    interval, remembered."""
    def build():
        quick = FastEngine(mechanism.modulus)
        known = _interval_pmfs_memory.get(mechanism, dict)

        def pmf_at(y: Fraction) -> np.ndarray:
            if y not in known:
                known[y] = np.exp(np.asarray(quick.client(mechanism, y), dtype=float))
            return known[y]

        low, high = mechanism.breakpoints()
        return anchors.mixture(pmf_at, low, high, count, mechanism.mirror_symmetric())

    return _mixtures_memory.get((mechanism, count), build)


def _fewest_anchors(mechanism: Mechanism, n: int, finite: list[float], quick, attained: np.ndarray,
                    tolerance: float, fits: Callable[[int], bool]) -> tuple[np.ndarray, anchors.Mixture]:
    """Theorem C's bound (at the finite orders ``finite``) with the fewest anchors of
    anchors.ANCHOR_COUNTS that bring it within ``tolerance`` of ``attained``, or with the most
    that fit. Counts are tried from the fewest up; once a bound is known, a count that would
    likely miss the tolerance (:func:`_hopeless`) is passed over while a larger count's tree
    may fit (:func:`_tree_fits`), and computed after all where none larger fits."""
    counts = sorted(anchors.ANCHOR_COUNTS)
    excess, computed, passed = math.inf, 0, []  # the last bound's largest ratio − 1, its count, counts passed over
    for index, count in enumerate(counts):
        larger = counts[index + 1:]
        if computed and larger and _hopeless(excess, computed, count, tolerance) and \
                _tree_fits(mechanism, n, larger[0], len(finite)):
            passed.append(count)
            continue
        last = not fits(count)
        if last:  # the most that fit among those passed over, if any
            count = next((c for c in reversed(passed) if fits(c)), 0)
            if not count:
                break
        chosen = _mixture(mechanism, count)
        bound = _anchored_bound(mechanism, n, finite, quick, chosen)
        excess, computed, passed = float(np.max(bound / attained)) - 1, count, []
        if last or np.all(bound <= attained * (1 + tolerance)):
            break
    return bound, chosen


def _anchors_limit(mechanism: Mechanism, n: int, count: int, orders: int) -> str:
    """Why Theorem C kept ``count`` anchors where its bound (at ``orders`` finite orders) is not
    within the tolerance: the residual it drops, and the next count's enumeration over the work
    limit, or no count larger among those tried."""
    larger = [c for c in sorted(anchors.ANCHOR_COUNTS) if c > count]
    limit = (f"{larger[0]} anchors would take {_anchored_work(mechanism, n, larger[0], orders):.2g} units of work, "
             f"more than the limit {ANCHORED_WORK:.2g}" if larger else f"{count} anchors are the most tried")
    return f" (the residual dropped loosens it by about its mass; {limit})"


def _hopeless(excess: float, computed: int, count: int, tolerance: float) -> bool:
    """Whether ``count`` anchors are unlikely to bring Theorem C within ``tolerance`` where
    ``computed`` anchors left it ``excess`` above the values attained: the bound exceeds them by
    about the residual ρ, and ρ falls like the square of the anchors' spacing (measured: 0.14,
    0.04, 0.011, 0.0073, 0.0027, 0.0011 for 2, 3, 5, 6, 9, 17 anchors). A guess that only
    decides which counts are tried; every count's bound is valid."""
    return excess * ((computed - 1) / (count - 1)) ** 2 > tolerance


def _tree_fits(mechanism: Mechanism, n: int, count: int, orders: int) -> bool:
    """Whether Theorem C's tree with ``count`` anchors fits ANCHORED_WORK at its largest cut
    alone (no linear program run: a necessary condition of :func:`_anchored_work`'s)."""
    return _anchored_work(mechanism, n, count, orders, largest_only=True) <= ANCHORED_WORK


def _anchored_work(mechanism: Mechanism, n: int, count: int, orders: int, largest_only: bool = False) -> float:
    """The work of Theorem C's walk with ``count`` anchors at ``orders`` finite orders, in
    multiply-adds (about): the nodes of the largest cut's tree (C(K + count, count) for K others),
    each a convolution of a row of up to (K + 1)·(t − 1) + 1 entries with a pmf of t outputs, and
    the bounds at the cuts' depths (C(K_i + count − 1, count − 1) multisets each), each two such
    convolutions and ORDER_TERMS_WORK per order and row entry; halved for a mirror-symmetric
    mechanism (the kernel skips the mirror images). The residual's linear programs are not run
    where the tree alone, at K = n − 1, does not fit, or with ``largest_only``: that tree's work."""
    others, outputs = n - 1, mechanism.support_size
    per_client = 1 / (2 if mechanism.mirror_symmetric() else 1)
    nodes = math.comb(others + count, count) * n * per_client * outputs
    if largest_only or nodes > ANCHORED_WORK:
        return nodes
    sizes = [others - d for d, _ in anchors.cuts(others, _mixture(mechanism, count).residual)]
    largest = max(sizes)
    evaluations = sum(math.comb(size + count - 1, count - 1) for size in sizes)
    evaluation = 2 * outputs + ORDER_TERMS_WORK * orders
    return (math.comb(largest + count, count) * outputs + evaluations * evaluation) * (largest + 1) * per_client


def _anchored_bound(mechanism: Mechanism, n: int, finite: list[float], quick, chosen: anchors.Mixture) -> np.ndarray:
    """Theorem C's bound at the finite orders ``finite`` with the anchors and residual ``chosen``."""
    others = n - 1
    cuts = anchors.cuts(others, chosen.residual)
    points = chosen.anchors
    clients = [quick.client(mechanism, p) for p in points]
    rows = _linear_pmfs(quick, clients)
    mirror = tuple(range(len(points)))[::-1] if mechanism.mirror_symmetric() else None
    sizes = [others - d for d, _ in cuts]
    if len(points) == 2:
        margins = np.array([certificate.rounding_margin(a, n, rows.shape[1]) for a in finite])
        values = np.array([_exhaustive_maximum(mechanism, quick, clients, points, finite, size) + margins
                           for size in sizes])
    else:  # one walk of the largest size's tree (cuts × orders)
        problem = certificate.Problem(rows, ((0, len(points) - 1),), tuple(finite), mirror, n)
        values = certificate.exhaustive_by_size(problem, sizes)
    return np.asarray(staircase.mixed(values, np.array([w for _, w in cuts]), finite), dtype=float)


def _certificate_orders(compute: Callable[[list[float]], np.ndarray], alphas: Sequence[float],
                        count: int = certificate.ORDERS, any_order: bool = False) -> np.ndarray:
    """:mod:`rdpcalc.worstcase.certificate`'s bounds at every order: computed at no more than ``count`` of
    the orders up to certificate.LARGEST_ORDER (and ∞), or at each of them where they number at
    most certificate.DIRECT_ORDERS, chords between them (:func:`_by_chords`); above
    LARGEST_ORDER, the bound at ∞ (D_α ≤ D_∞). The orders computed are taken among those Theorem A
    handles faster (1 + 2⁻ʲ and the integers), or among all of them with ``any_order``."""
    kept = [a for a in alphas if a <= certificate.LARGEST_ORDER]
    if len(kept) <= certificate.DIRECT_ORDERS:  # each of them directly
        count = certificate.DIRECT_ORDERS
    if len(kept) < len(alphas):  # ∞ bounds the orders above LARGEST_ORDER
        kept.append(math.inf)
    cheap = [] if any_order else \
        [1 + 2.0**-k for k in range(1, 7)] + [float(a) for a in range(2, int(certificate.LARGEST_ORDER) + 1)]
    values = dict(zip(kept, _by_chords(compute, kept, count, cheap, preferred=kept)))
    cap = values.get(math.inf, math.inf)
    return np.array([values.get(a, cap) for a in alphas], dtype=float)


def _by_chords(compute: Callable[[list[float]], np.ndarray], alphas: Sequence[float],
               count: int = _CERTIFICATE_ORDERS, cheap: Sequence[float] = (),
               preferred: Sequence[float] = ()) -> np.ndarray:
    """``compute(alphas)``, a bound on a maximum of divergences, computed at no more than
    ``count`` orders (spread evenly in log(α − 1) between the smallest and largest finite
    orders, which are kept, as is ∞; the others taken among ``alphas``, or among ``cheap``
    when given: orders the computation handles faster, those also in ``preferred`` first when
    one lies within a factor 1.5 in α − 1 of the even spacing — where the search found a value,
    the certificate's refinement has a target it can reach) and bounded at the others by chords:
    (α − 1)·D_α = log Σ P^α Q^{1−α} is convex in α (a log-sum-exp of functions affine in α), so
    is a log-mixture of such terms (Theorem A, the common-component bound) and a maximum of
    either, so between two computed orders α₁ < α < α₂ it lies below the chord through
    ((α₁ − 1)B₁, (α₂ − 1)B₂)."""
    finite = sorted({a for a in alphas if a != math.inf})
    if len(finite) <= count:
        return np.asarray(compute(list(alphas)), dtype=float)
    above_one = np.array([a for a in finite if a > 1])
    targets = np.geomspace(above_one[0] - 1, above_one[-1] - 1, count - 1) + 1
    inside = np.array([a for a in cheap if above_one[0] < a < above_one[-1]] or above_one)
    preferred = set(preferred)
    favoured = np.array([a for a in inside if a in preferred])

    def nearest(candidates, target):
        distance = np.abs(np.log((candidates - 1) / (target - 1)))
        return float(candidates[np.argmin(distance)]), float(np.min(distance))

    def anchor(target):
        if len(favoured):
            order, distance = nearest(favoured, target)
            if distance <= math.log(1.5):
                return order
        return nearest(inside, target)[0]

    grid = sorted({finite[0], above_one[0], above_one[-1], *(anchor(t) for t in targets[1:-1])})
    orders = grid + ([math.inf] if math.inf in alphas else [])
    computed = dict(zip(orders, np.asarray(compute(orders), dtype=float)))
    out = []
    for alpha in alphas:
        if alpha in computed:
            out.append(computed[alpha])
            continue
        above = bisect.bisect_left(grid, alpha)
        low, high = grid[above - 1], grid[above]
        if not (math.isfinite(computed[low]) and math.isfinite(computed[high])):
            out.append(math.inf)
            continue
        k_low, k_high = (low - 1) * computed[low], (high - 1) * computed[high]
        out.append((k_low + (alpha - low) / (high - low) * (k_high - k_low)) / (alpha - 1))
    return np.array(out)


def common_component(mechanism: Mechanism, dps: int = 40) -> tuple[mpmath.mpf, list]:
    """(λ, C) with λ·C(d) = min over the breakpoints b of P_b(mode(b) + d): the largest part that
    every breakpoint's pmf shares, up to a shift to its mode (module docstring)."""
    with mpmath.workdps(dps):
        pmfs = [mechanism.pmf(b) for b in mechanism.breakpoints()]
        modes = [max(range(len(pmf)), key=lambda i, pmf=pmf: pmf[i]) for pmf in pmfs]
        offsets = range(-max(modes), len(pmfs[0]) - min(modes))
        shared = [min(pmf[mode + d] if 0 <= mode + d < len(pmf) else mpmath.mpf(0) for pmf, mode in zip(pmfs, modes))
                  for d in offsets]
        kept = [i for i, value in enumerate(shared) if value > 0]
        if not kept:  # nothing shared: the bound reduces to one client's
            return mpmath.mpf(0), [mpmath.mpf(1)]
        shared = shared[kept[0] : kept[-1] + 1]
        share = mpmath.fsum(shared)
        return share, [value / share for value in shared]


def others_component(mechanism: Mechanism, others: int) -> blocks.Component:
    """What the common-component bounds reduce the ``others`` to: blocks of the size and classes
    whose kept variance is the largest, with at least MIN_BLOCKS blocks
    (:func:`rdpcalc.worstcase.blocks.best_blocks`, which proves the bound for every choice); for
    single clients (g = 1), :func:`common_component` (40 digits)."""
    return others_components(mechanism, others)[0]


def others_components(mechanism: Mechanism, others: int) -> list[blocks.Component]:
    """:func:`others_component`, and after it the blocks that keep the most variance with fewer
    than MIN_BLOCKS blocks where they keep more (tighter at low orders, and perhaps looser at
    high ones: a bound takes the smaller of the two at each order). Remembered for the last few
    (mechanism, others): one query asks for them several times (the search, its certificate,
    the PLD family)."""
    return list(_components_memory.get((mechanism, others), lambda: _others_components(mechanism, others)))


def _others_components(mechanism: Mechanism, others: int) -> tuple[blocks.Component, ...]:
    quick = FastEngine()
    clients = [quick.client(mechanism, p) for p in mechanism.breakpoints()]
    chosen, fewer = blocks.best_blocks(_linear_pmfs(quick, clients), others)
    if chosen.size == 1:
        share, component = common_component(mechanism)
        chosen = blocks.Component(1, others, float(share), quick.from_mpmath(component))
    return (chosen,) if fewer.kept_variance() <= chosen.kept_variance() else (chosen, fewer)


class _MixtureBound:
    """The common-component bound of the module docstring for each ordered pair (x, x′), for each
    of a few reductions of the others (:func:`others_components`: single clients, or blocks of
    others where they keep more of the others' variance): K ~ Binomial(B, λ) blocks reduced to
    their common component C; each pair's bound is the smallest of them at each order (each is
    an upper bound of that pair's divergence; ``components`` chooses them instead). Screened per
    pair; :meth:`bound` recomputes accurately the pairs near the top."""

    def __init__(self, mechanism, n, alphas, engine, clients, report: Callable[[int], None] | None = None,
                 components: Sequence[blocks.Component] | None = None):
        self.components = list(components or others_components(mechanism, n - 1))
        self.engine, self.alphas = engine, list(alphas)
        self.parts = []  # (component, log weights of K, every client's totals)
        for component in self.components:
            rows = engine.powers(component.log_component, component.blocks)
            self.parts.append((component, staircase.log_binomial_weights(component.blocks, component.share),
                               [engine.add_client(client, rows) for client in clients]))
        self.screened = {}
        for done, (i, j) in enumerate(_all_pairs(len(clients))):
            sides = [self._mixed(engine.screen_both(totals[i], totals[j], self.alphas), log_weights)
                     for _, log_weights, totals in self.parts]
            self.screened[i, j] = np.min([forward for forward, _ in sides], axis=0)
            self.screened[j, i] = np.min([backward for _, backward in sides], axis=0)
            if report is not None:
                report(done + 1)
        self.clients = len(clients)

    def describe(self) -> str:
        """The reductions in words, for the certificate's text."""
        texts = [component.describe() for component in self.components]
        return texts[0] if len(texts) == 1 else "the smaller at each order of " + " and ".join(texts)

    def _mixed(self, both, log_weights):
        """Each direction's mixture over K of the values of ``both`` (forward, backward)."""
        return [staircase.mixed(np.array(values, dtype=float).reshape(-1, len(self.alphas)), log_weights, self.alphas)
                for values in both]

    def pairs_reaching(self, lower: np.ndarray, orders: Sequence[int], mirror: bool):
        """The unordered pairs whose bound, in either direction, reaches ``lower`` (values at the
        orders ``orders``) at some order — the only pairs that can beat a value already found —
        with their mirror images when ``mirror``; and the largest bound of the other pairs."""
        last = self.clients - 1
        reach = {tuple(sorted(pair)) for pair, values in self.screened.items()
                 if np.any(values[list(orders)] >= _cut(lower))}
        if mirror:
            reach |= {(last - j, last - i) for i, j in reach}
        rest = [values[list(orders)] for pair, values in self.screened.items() if tuple(sorted(pair)) not in reach]
        return sorted(reach), np.max(rest, axis=0) if rest else np.full(len(orders), -np.inf)

    def bound(self) -> np.ndarray:
        """max over the ordered pairs of the bound (the smallest of the reductions'), per order."""
        cut = _cut(np.max(list(self.screened.values()), axis=0))
        chosen = {tuple(sorted(pair)) for pair, values in self.screened.items() if np.any(values >= cut)}
        bound = np.full(len(self.alphas), -np.inf)
        for i, j in sorted(chosen):
            sides = [self._mixed(self.engine.divergences_both(totals[i], totals[j], self.alphas), log_weights)
                     for _, log_weights, totals in self.parts]
            for direction in range(2):
                bound = np.maximum(bound, np.min([side[direction] for side in sides], axis=0))
        return bound


def _search_orders(alphas: Sequence[float]) -> list[int]:
    """Indices of at most _SEARCH_ORDERS orders spread over ``alphas`` (by rank; +∞ kept)."""
    if len(alphas) <= _SEARCH_ORDERS:
        return list(range(len(alphas)))
    infinite = [i for i, a in enumerate(alphas) if a == math.inf]
    finite = sorted((i for i, a in enumerate(alphas) if a != math.inf), key=lambda i: alphas[i])
    count = _SEARCH_ORDERS - len(infinite[:1])
    picked = {finite[round(t * (len(finite) - 1) / (count - 1))] for t in range(count)}
    return sorted(picked | set(infinite[:1]))


def _counts(configuration: Configuration, points) -> tuple:
    return tuple(dict(configuration.others).get(p, 0) for p in points)


def _rescreen(engine, clients, points, alphas, configurations: Sequence[Configuration], outputs: int) -> _Candidates:
    """The candidates at every order among the others' configurations in ``configurations``,
    client 1 over every ordered pair of breakpoints (``outputs``: one client's support size)."""
    keys = list(dict.fromkeys(_counts(c, points) for c in configurations))
    rests = engine.concat([multiset_sum(engine, clients, key) for key in keys])
    candidates = _Candidates(len(alphas))
    support = (sum(keys[0]) + 1) * (outputs - 1) + 1
    _batched(engine, _Evaluator(engine, clients, points, alphas), rests, keys, candidates, support)
    return candidates


def _accurate(engine, clients, points, alphas, configurations: Sequence[Configuration]) -> _Best:
    """The engine's accurate D_α at every order for each configuration (and its swap x ↔ x′);
    the largest per order."""
    index = {p: i for i, p in enumerate(points)}
    best = _Best(len(alphas))
    for key in dict.fromkeys(_counts(c, points) for c in configurations):
        rest = multiset_sum(engine, clients, key)
        others = _others(points, key)
        pairs = {(c.x, c.x_prime) for c in configurations if _counts(c, points) == key}
        for x, x_prime in sorted(pairs):
            if (x_prime, x) in pairs and x_prime < x:
                continue
            totals = [engine.add_client(clients[index[value]], rest) for value in (x, x_prime)]
            for (a, b), values in zip(((x, x_prime), (x_prime, x)), engine.divergences_both(*totals, alphas)):
                floats = np.array(values, dtype=float).reshape(1, len(alphas))
                best.update(floats, values, lambda row, a=a, b=b, others=others: Configuration(a, b, others))
    return best


def _exhaustive_maximum(mechanism, engine, clients, points, alphas, size: int, memo: dict | None = None) -> np.ndarray:
    """max over x, x′ and every multiset of ``size`` others of D_α (kept in ``memo``: a sweep
    over n needs it at every n)."""
    memo = {} if memo is None else memo
    key = ("exhaustive", size, tuple(alphas))
    if key not in memo:
        candidates = _Candidates(len(alphas))
        support = (size + 1) * (mechanism.support_size - 1) + 1
        _exhaustive(engine, _Evaluator(engine, clients, points, alphas), size, candidates, support,
                    mechanism.mirror_symmetric())
        memo[key] = _accurate(engine, clients, points, alphas, candidates.configurations()).values
    return memo[key]


def _pair_maximum(engine, first, second, alphas) -> tuple[np.ndarray, np.ndarray]:
    """Per order, the largest D_α over the rows, both directions, of (first‖second): screened,
    and at each order the rows within the tolerance of that order's top recomputed accurately
    (the orders with the same such rows together; each value is computed on its own row and
    order, so this is the maximum over every row). Also returns the screened values per row
    (the larger direction)."""
    screened = np.maximum(*engine.screen_both(first, second, alphas))
    contenders = screened >= _cut(np.max(screened, axis=0))
    groups: dict[tuple[int, ...], list[int]] = {}
    for order in range(len(alphas)):
        groups.setdefault(tuple(int(row) for row in np.nonzero(contenders[:, order])[0]), []).append(order)
    bound = np.full(len(alphas), -np.inf)
    for rows, orders in groups.items():
        accurate = engine.divergences_both(engine.select(first, list(rows)), engine.select(second, list(rows)),
                                           [alphas[order] for order in orders])
        bound[orders] = np.max([np.array(values, dtype=float).reshape(len(rows), len(orders))
                                for values in accurate], axis=(0, 1))
    return bound, screened


@dataclass(frozen=True)
class RelaxedFamily:
    """PBM's relaxed family for n clients (module docstring): the others' T trials each at p(b)
    or p(−b) independently, client 1's M trials at ±b. With t of the others' trials at p(b),
    the pair is rows t and t + M of one level of T + M trials.

    Beyond ``rows`` trials (RELAXED_ROWS by default), every t in [t₀, t₀ + w] (w = ``step``, at
    least ⌈T / rows⌉) is bounded at once by dropping w trials (data processing, for every
    divergence and every hockey-stick curve): what remains is t₀ trials at p(b) and
    T − w − t₀ at p(−b), rows t₀ and t₀ + M of a level of K + M trials (K = ``kept`` = T − w),
    for t₀ on a grid of step w. A ``loss`` ℓ > 0 widens the step to ⌊ℓ(T + M)/(1 + ℓ)⌋ where that
    is larger: the divergences of such sums scale about inversely with their trials' variance,
    so dropping w of T + M trials raises them by a factor about (T + M)/(T + M − w) ≤ 1 + ℓ.

    *Mirror.* Where the mechanism is mirror-symmetric (``mirrored``: P_−x(i) = P_x(M − i), so
    p(−b) = 1 − p(b)), reading an output y of N trials as N − y maps row r (r trials at p(b)) to
    row N − r, so the pair at t₀ in one direction is the pair at K − t₀ in the other:
    (row t₀ ‖ row t₀ + M) = (row N − t₀ ‖ row N − t₀ − M) as pmfs read backwards, and
    N − t₀ − M = K − t₀ (a sum wrapped modulo 2^B too: the reading permutes the residues). A
    grid closed under t₀ ↦ K − t₀ is then evaluated at min(t₀, K − t₀) only, both directions:
    the same maximum from half the rows. It covers every split: with L the largest multiple of
    w up to K/2 (and L + w too where 2L + w < K, so that 2L + 3w > K), the blocks from 0 reach
    L + w (L + 2w) and their images start at K − L (K − L − w)."""

    high: np.ndarray
    low: np.ndarray
    per_client: int
    trials: int
    step: int
    mirrored: bool = False

    @classmethod
    def of(cls, mechanism: Mechanism, n: int, engine, rows: int = 0, loss: float = 0.0) -> RelaxedFamily:
        """The family, in steps when it has more than ``rows`` (default RELAXED_ROWS) trials,
        each raising the divergences by about a ``loss`` (relative) where that step is longer."""
        with mpmath.workdps(max(40, (engine.dps or 0) + 10)):
            low, high, per_client = mechanism.relaxed_components()
        trials = (n - 1) * per_client
        rows = rows or RELAXED_ROWS
        step = 1
        if trials > rows:
            step = max(math.ceil(trials / rows), math.floor(loss * (trials + per_client) / (1 + loss)))
        return cls(engine.from_mpmath(high), engine.from_mpmath(low), per_client, trials, step,
                   mechanism.mirror_symmetric())

    @property
    def kept(self) -> int:
        return self.trials - (self.step if self.step > 1 else 0)

    def splits(self) -> list[int]:
        """The t (t₀) to evaluate: every split; or the grid of steps, where mirrored only the
        lower half of a grid closed under t₀ ↦ K − t₀ that covers every split (class docstring)."""
        if self.step == 1:
            return list(range(self.trials + 1))
        if not self.mirrored:
            return sorted(set(range(0, self.kept + 1, self.step)) | {self.kept})
        lower = list(range(0, self.kept // 2 + 1, self.step))
        if 2 * lower[-1] + self.step < self.kept:  # the blocks from both ends must meet
            lower.append(lower[-1] + self.step)
        return sorted({min(t, self.kept - t) for t in lower})

    def pairs(self, engine, ts: Sequence[int]):
        """(chunk of t, rows t, rows t + M), a chunk of _RELAXED_CHUNK splits at a time (memory)."""
        for start in range(0, len(ts), _RELAXED_CHUNK):
            chunk = list(ts[start : start + _RELAXED_CHUNK])
            wanted = sorted(set(chunk) | {t + self.per_client for t in chunk})
            rows = engine.level(self.high, self.low, self.kept + self.per_client, wanted)
            index = {t: i for i, t in enumerate(wanted)}
            yield (chunk, engine.select(rows, [index[t] for t in chunk]),
                   engine.select(rows, [index[t + self.per_client] for t in chunk]))

    def within(self) -> str:
        """How the steps cover the splits, in words (empty: every split)."""
        if self.step == 1:
            return ""
        return f"every split bounded within {self.step} trials (data processing" + \
            ("; one of each mirror pair)" if self.mirrored else ")")


def _relaxed_upper(mechanism, n, alphas, engine, memo=None, found=None, tolerance: float = 0.0):
    """PBM: the maximum over the relaxed family (:class:`RelaxedFamily`; where it has more than
    RELAXED_ROWS trials, in steps that raise the bound by about ``tolerance``/2). In a sweep over n
    (``memo``), row t is skipped when the previous n bounds it below the value of the rows
    t = kM (the clients at ±b: ``found``, or evaluated first): dropping one client's M trials,
    j of them at p(b), leaves row t − j of the previous n, and cannot decrease D_α."""
    family = RelaxedFamily.of(mechanism, n, engine, loss=tolerance / 2)
    trials, per_client = family.trials, family.per_client

    def evaluate(ts):
        bound, screened = np.full(len(alphas), -np.inf), []
        for _, low_rows, high_rows in family.pairs(engine, ts):
            part, values = _pair_maximum(engine, low_rows, high_rows, alphas)
            bound = np.maximum(bound, part)
            screened.append(values)
        return bound, np.concatenate(screened)

    b = float(mechanism.bound)
    if family.step > 1:
        bound, _ = evaluate(family.splits())
        return bound, f"the others' {trials} trials each at p(±{b:g}) independently, {family.within()}"
    memo = {} if memo is None else memo
    previous = memo.pop(("relaxed", n - 1, tuple(alphas)), None)
    if previous is None:
        ts = list(range(trials + 1))
    else:
        lower = found if found is not None else evaluate(list(range(0, trials + 1, per_client)))[1].max(axis=0)
        bounds = {t: np.min([previous[t - j] for j in range(max(0, t - trials + per_client), min(per_client, t) + 1)],
                            axis=0) for t in range(trials + 1)}
        ts = [t for t in range(trials + 1) if np.any(bounds[t] >= _cut(lower))]
    bound, screened = evaluate(ts)
    values = np.full((trials + 1, len(alphas)), np.nan)
    values[ts] = screened
    if previous is not None:
        for t in set(range(trials + 1)) - set(ts):
            values[t] = bounds[t]
    memo[("relaxed", n, tuple(alphas))] = values
    return bound, f"the others' {trials} trials each at p(±{b:g}) independently, exhaustive"
