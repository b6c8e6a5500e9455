"""Which neighbouring inputs a divergence is taken between, and the search over them.

A *configuration* compares the SecAgg sum of n clients when client 1 holds x (distribution
P) with the sum when it holds x' (distribution Q), the other n − 1 clients holding the same
inputs under both (:class:`rdpcalc.worstcase.Configuration`). [−b, b] is the mechanism's
input range; by exchangeability only the multiset of the others' inputs matters.

Protocols:

* ``worst`` (default). For n = 1, the maximum over all ordered pairs of the mechanism's
  breakpoints: for a pmf affine in x between breakpoints, joint quasi-convexity of D_α puts
  the maximum over input pairs there, so this is the true single-client worst case. For
  n > 1, the search of :mod:`rdpcalc.worstcase.secagg` over client 1's breakpoint pairs and the
  others' multisets of breakpoints, with a certified upper bound beside the value found.
* ``pm-c``: the ±b family the papers have in mind: the maximum over k ∈ {0 … n−1} others at
  +b (the rest at −b) of the pairs (b, −b) and (−b, b). A lower bound of ``worst``, not a
  worst case: for RQM (Δ = c, q = 0.42, m = 16, n = 40) all others at the level 1.4 give a
  D₂ 3.5 % larger.
* ``paper``: the papers' protocol, x = b vs x' = −b with the others at ±b chosen at random
  (seeded): k ~ Binomial(n − 1, ½).
* ``explicit``: a given k (``others_plus``) and/or a given pair (``x``, ``x_prime``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from .. import resources
from ..errors import ParameterError
from ..exactnum import fmt, to_fraction
from ..mechanisms import Mechanism
from ..numerics import levels
from ..params import Param, split_record
from ..resources import Cost
from . import certificate, secagg
from .secagg import Configuration

PROTOCOLS = ("worst", "pm-c", "paper")

#: the options that choose the neighbours, declared once: :func:`choose_neighbours` converts and
#: checks them, the command line shows them
CLIENTS_IN_SUM = Param("n", "integer", "Clients in the SecAgg sum, {range}.", default=1, low=1, high=10**6)
NEIGHBOURS = Param(
    "neighbours", "choice", "worst: max over neighbouring inputs (n=1: all breakpoint pairs, exact; n>1: client 1 over "
    "all breakpoint pairs, the others searched over multisets of breakpoints, with a certified upper bound); pm-c: the "
    "papers' family, x1=±c and the others at ±c (a lower bound of worst); paper: x1=c vs −c, others at ±c at random "
    "(--seed).", default="worst", choices=PROTOCOLS)
OTHERS_PLUS = Param("others_plus", "integer", "Exactly K of the other n−1 clients at +bound (the rest at −bound), "
                    "0 ≤ K ≤ n−1.", low=0, optional=True)
SEED = Param("seed", "integer", "Seed of --neighbours paper.", default=0, low=0)
BUDGET = Param("budget", "integer", "--neighbours worst, n>1: search exhaustively when the others' multisets number at "
               "most COUNT ({range}); the certificate's data-processing part enumerates as many others as fit in it.",
               default=secagg.EXHAUSTIVE_BUDGET, low=1, high=secagg.MAX_BUDGET)
CERTIFY_WITHIN = Param("certify_within", "float", "--neighbours worst, n>1: the certificate refines each node until it "
                       "is within this fraction of the value found, {range} (0: as far as it goes; slower, and the "
                       "bracket closes where every node reaches the value found).", default=certificate.TOLERANCE,
                       low=0, high=certificate.MAX_TOLERANCE)
#: the largest n for the worst case over k with every row in full (n configurations of n clients each)
WORST_MAX_N = 2000
#: the largest n for the ±c family's worst case over k on windows (:mod:`rdpcalc.worstcase.kfamily`, O(n^1.5 log n))
WINDOWED_MAX_N = 100_000
#: the others' sums are built in chunks of at most this many numbers (ks × support)
CHUNK_ELEMENTS = 4_000_000
#: configurations within this relative distance of the maximum tie: the first is reported
TIE_RTOL = 1e-12


@dataclass(frozen=True)
class Neighbours:
    """The candidate configurations of one protocol; the result is the max over them."""

    protocol: str
    pairs: tuple[tuple[Fraction, Fraction], ...]
    ks: tuple[int, ...]
    description: str
    seed: int | None = None
    budget: int = secagg.EXHAUSTIVE_BUDGET
    certify_within: float = certificate.TOLERANCE
    #: the parameter that made the candidate inputs (e.g. ``grid``), named where their pairs cost too much
    inputs_parameter: str | None = None

    @property
    def count(self) -> int:
        return len(self.pairs) * len(self.ks)


@dataclass(frozen=True)
class DivergencePoint:
    """D_α at one order: its value (float, ``inf`` allowed), the engine's own value (mpf for
    the exact engine), and the configuration attaining the maximum; for the worst case, the
    certified upper bound ``upper`` (None for the other protocols), the ``search`` that ran
    (``exhaustive``, ``two-group+ascent``; otherwise the protocol's name) and how the bound
    was certified (``certificate``)."""

    alpha: float
    value: float
    precise: object
    attained: Configuration
    upper: float | None = None
    search: str = ""
    certificate: str = ""


@dataclass(frozen=True)
class CandidateInputs:
    """A set of inputs searched instead of the breakpoints (one client only): the ``points``,
    the ``parameter`` that made them (e.g. ``grid``) and what they are."""

    points: tuple
    parameter: str
    description: str


#: one client's inputs searched on a grid instead of the breakpoints
GRID = Param("grid", "integer", "One client: search all pairs of N equally spaced inputs ({range}) instead of the "
             "breakpoints.", low=2, high=2001, optional=True)


@dataclass(frozen=True)
class NeighbourOptions:
    """How :func:`divergence` chooses the neighbouring inputs, as data (what travels together
    from the command line or a sweep):

    * ``neighbours``: ``worst`` (the maximum over client 1's pair and the others' inputs,
      searched and certified; see :mod:`.secagg`), ``pm-c`` (client 1 at ±b,
      the others at ±b, maximised over their number k at +b) or ``paper`` (b against −b, k drawn
      at random with ``seed``);
    * ``others_plus``: k, the number of other clients at +b (the rest at −b), in [0, n − 1];
    * ``x``, ``x_prime``: client 1's pair (both or neither);
    * ``grid``: one client only: search all pairs of ``grid`` equally spaced inputs (2 … 2001)
      instead of the breakpoints; ``margin``: one client only, mechanisms whose pmf jumps at its
      levels (QMGeo): the inputs kept ``margin``·Δ away from the levels;
    * ``budget``: the multisets of others the worst-case search enumerates exhaustively;
    * ``certify_within``: ``worst`` with n > 1: the certificate's Theorem A refines each node
      until it is within this relative distance of the value found, in [0, 0.5] (0: until it is
      at most the value found, or its staircases run out; slower, and where every node gets
      there the bracket closes).

    The options are checked together with the mechanism and n, by :func:`choose_neighbours`."""

    neighbours: str = "worst"
    others_plus: int | None = None
    x: object = None
    x_prime: object = None
    seed: int = 0
    grid: int | None = None
    margin: object = None
    budget: int = secagg.EXHAUSTIVE_BUDGET
    certify_within: float = certificate.TOLERANCE

    @classmethod
    def split(cls, options: dict) -> tuple[NeighbourOptions, dict]:
        """The neighbour options taken out of ``options`` (keyword → value), and the rest."""
        return split_record(cls, options)


@dataclass(frozen=True)
class _Request(NeighbourOptions):
    """The options with ``grid`` or ``margin`` resolved into the ``inputs`` searched instead of
    the breakpoints (:func:`_input_set`)."""

    inputs: CandidateInputs | None = None


def choose_neighbours(mechanism: Mechanism, n: int, options: NeighbourOptions = NeighbourOptions()) -> Neighbours:
    """Resolve the protocol options into the candidate configurations.

    ``others_plus`` fixes k, the number of others at +b; ``x``/``x_prime`` fix client 1's pair (both or
    neither); ``neighbours`` is ``worst``, ``pm-c`` or ``paper``. ``paper`` cannot be combined
    with ``others_plus``; ``worst`` with ``others_plus`` or a pair searches the ±b family with that restriction.
    ``grid`` or ``margin`` (one client only) replaces the breakpoints of ``worst`` by a given set
    of inputs.
    """
    n, request = _checked(n, _Request(**vars(options), inputs=_input_set(mechanism, options.grid, options.margin)))
    searched = (request.neighbours == "worst" and n > 1 and request.others_plus is None and request.x is None
                and request.inputs is None)
    _check_size(n, request, searched)
    if request.inputs is not None and (n != 1 or request.x is not None or request.others_plus is not None
                                       or request.neighbours != "worst"):
        raise ParameterError(request.inputs.parameter,
                             "searches input pairs of one client: use it with `n` 1 and without `x`, `others_plus` or "
                             "`neighbours` paper")
    if searched:
        return _searched(mechanism, n, request)
    pairs, pair_text = _pairs(mechanism, n, request)
    ks, others_text, drawn_seed = _others(mechanism, n, request)
    name = ("explicit" if (request.x is not None or request.others_plus is not None)
            else "inputs" if request.inputs is not None else request.neighbours)
    return Neighbours(name, pairs, ks, f"{name}: {pair_text}{others_text}", drawn_seed, request.budget,
                      inputs_parameter=None if request.inputs is None else request.inputs.parameter)


def _input_set(mechanism: Mechanism, grid, margin) -> CandidateInputs | None:
    """The inputs searched by ``grid`` or ``margin`` (at most one of them), if either is given."""
    if grid is not None and margin is not None:
        raise ParameterError("margin", "cannot be combined with `grid`")
    if grid is not None:
        grid = GRID.convert(grid)
        b = mechanism.bound
        return CandidateInputs(tuple(-b + 2 * b * Fraction(i, grid - 1) for i in range(grid)), "grid",
                               f"{grid} equally spaced inputs")
    if margin is not None:
        if not hasattr(mechanism, "inputs_with_margin"):
            raise ParameterError("margin", f"applies to mechanisms whose pmf jumps at its levels (qmgeo), not {mechanism.name}")
        eta = to_fraction(margin, "margin")
        return CandidateInputs(tuple(mechanism.inputs_with_margin(eta)), "margin",
                               f"the inputs {float(eta):g}·Δ away from the levels")
    return None


def _checked(n, request: _Request) -> tuple[int, _Request]:
    """``n`` and the request converted and checked against their declarations
    (:class:`ParameterError` for an option out of its range or a combination without meaning)."""
    n = CLIENTS_IN_SUM.convert(n)
    request = replace(request, neighbours=NEIGHBOURS.convert(request.neighbours), seed=SEED.convert(request.seed),
                      budget=BUDGET.convert(request.budget),
                      certify_within=CERTIFY_WITHIN.convert(request.certify_within))
    if (request.x is None) != (request.x_prime is None):
        raise ParameterError("x_prime" if request.x_prime is None else "x", "`x` and `x_prime` must be given together")
    k = request.others_plus
    if k is not None:
        if request.neighbours == "paper":
            raise ParameterError("others_plus", "cannot be combined with `neighbours` paper (which draws k at random)")
        request = replace(request, others_plus=OTHERS_PLUS.up_to(n - 1, "n−1").convert(k))
    return n, request


def _check_size(n: int, request: _Request, searched: bool) -> None:
    """:class:`ParameterError` on ``n`` beyond what the chosen computation runs up to."""
    if searched and n > secagg.SEARCH_MAX_N:
        raise ParameterError("n", f"the worst-case search runs up to n = {secagg.SEARCH_MAX_N}; use `neighbours` "
                                  f"pm-c (the ±c family, n ≤ {WORST_MAX_N}) or `others_plus` for one configuration")
    free = request.others_plus is None
    windowed = request.neighbours == "pm-c" and free and request.x is None
    if request.neighbours in ("worst", "pm-c") and free and n > (WINDOWED_MAX_N if windowed else WORST_MAX_N):
        if windowed:
            raise ParameterError("n", f"the worst case over k runs up to n = {WINDOWED_MAX_N}; give `others_plus` "
                                      "(or `neighbours` paper) for one configuration up to 10⁶")
        raise ParameterError("n", f"the worst case over k for a given pair computes n sums of n clients: n ≤ "
                                  f"{WORST_MAX_N}; use `neighbours` pm-c (both pairs ±c, up to n = {WINDOWED_MAX_N}) or "
                                  "give `others_plus` for one configuration up to 10⁶")


def _searched(mechanism: Mechanism, n: int, request: _Request) -> Neighbours:
    """The ``worst`` protocol for n > 1: the search over the others' inputs (:mod:`.secagg`)."""
    points = mechanism.breakpoints()
    if mechanism.OTHERS_FAMILY == "shift":
        return Neighbours("worst", (), (), f"worst: client 1 over the pairs of the {len(points)} breakpoints up to "
                                           f"a shift, the other {n - 1} at a grid point", budget=request.budget)
    sym = fmt(mechanism.bound)
    others = f"anywhere in [−{sym}, {sym}]" if mechanism.OTHERS_FAMILY == "relaxed" else "over multisets of them"
    return Neighbours("worst", (), (), f"worst: client 1 over all ordered pairs of the {len(points)} breakpoints, the "
                                       f"other {n - 1} {others}{_premise(mechanism)}", budget=request.budget,
                      certify_within=request.certify_within)


def _pairs(mechanism: Mechanism, n: int, request: _Request) -> tuple[tuple, str]:
    """Client 1's candidate pairs (x, x′) and their description."""
    b, sym = mechanism.bound, fmt(mechanism.bound)
    if request.x is not None:
        pair = (mechanism.check_input(request.x, "x"), mechanism.check_input(request.x_prime, "x_prime"))
        return (pair,), f"x₁ = {fmt(pair[0])} vs {fmt(pair[1])}"
    if request.inputs is not None:
        points = tuple(mechanism.check_input(v) for v in request.inputs.points)
        require_pairs(len(points), request.inputs.parameter)
        return tuple((a, c) for a in points for c in points if a != c), \
            f"max over all ordered pairs of {request.inputs.parameter}: {request.inputs.description}"
    if request.neighbours == "worst" and n == 1 and request.others_plus is None:
        points = mechanism.breakpoints()
        if mechanism.OTHERS_FAMILY == "shift":  # rounded noise: the pairs up to a shift cover the worst case
            pairs = [(points[i], points[j]) for pair in mechanism.shift_pairs() for i, j in (pair, pair[::-1])]
            return tuple(pairs), f"max over the {len(pairs)} ordered pairs of {secagg.SHIFT_PAIRS}"
        require_pairs(len(points), mechanism.size_parameter())
        return tuple((a, c) for a in points for c in points if a != c), \
            f"max over all ordered pairs of the {len(points)} breakpoints{_premise(mechanism)}"
    if request.neighbours == "paper":
        return ((b, -b),), f"x₁ = {sym} vs −{sym}"
    return ((b, -b), (-b, b)), f"x₁ = ±{sym}, both directions"


def _others(mechanism: Mechanism, n: int, request: _Request) -> tuple[tuple[int, ...], str, int | None]:
    """The candidate ks (others at +b, the rest at −b), their description and the seed of a
    random k."""
    sym, k = fmt(mechanism.bound), request.others_plus
    if n == 1:
        return (0,), "", None
    if k is not None:
        return (k,), f"; k = {k} of the other {n - 1} at +{sym}, the rest at −{sym}", None
    if request.neighbours == "paper":
        drawn = int(np.random.default_rng(request.seed).binomial(n - 1, 0.5))
        return (drawn,), f"; the other {n - 1} at ±{sym} at random (seed {request.seed}): k = {drawn} at +{sym}", \
            request.seed
    return tuple(range(n)), f"; max over k = 0…{n - 1} of the others at +{sym}, the rest at −{sym}", None


#: bytes of the Python objects of one candidate pair of inputs (its tuple, its place in the
#: grouping of :func:`_maximise`); measured ~300 B per pair with ``grid`` 501 and 1001 (RQM)
PAIR_BYTES = 320
#: float64 arrays of a sum's support alive at once beside its rows (the divergences' and the
#: fft method's temporaries); measured 94–116 B per point of two rows, RQM n = 3·10⁴ … 3·10⁵
SUM_TEMPORARIES = 12
#: the fft method's windows (levels of more than DIRECT_MAX_N clients): a batch of 2·10⁶
#: complex numbers (measured: RQM, ``neighbours`` pm-c, n = 2000, 165 MiB against 133 without it)
FFT_BYTES = 32 * 2**20
#: float64 arrays per configuration and order (the values per group, the stacked floats and
#: the engine's values kept for the record)
VALUE_ARRAYS = 3


def peak_costs(mechanism: Mechanism, n: int, orders: int, neighbours: Neighbours, engine) -> list[Cost]:
    """The parts of :func:`divergences`' peak memory (bytes) over candidate pairs and ks, from
    its parameters, before it runs (the search for n > 1 and the windowed worst case over k
    check their own: :func:`rdpcalc.worstcase.secagg.search_costs`,
    :func:`rdpcalc.worstcase.kfamily.window_costs`). With P pairs
    of inputs (the largest group sharing x: G pairs), S = n(m − 1) + 1 points of the sum and
    r configurations of others per chunk (r ≤ CHUNK_ELEMENTS / S):

    * pairs: PAIR_BYTES · P (``inputs_parameter``: the parameter that made the inputs, e.g. ``grid``);
    * values: 8 · VALUE_ARRAYS · P · r · orders, plus ORDER_BYTES per order;
    * sums, fast engine: 8 · S · (rows + 2·G·r + SUM_TEMPORARIES), rows = 3r + 1 with client 1
      at ±b (the level's rows and the two selections), else r(1 + inputs); plus, with n ≤
      DIRECT_MAX_N, the direct method's powers 4 · (m − 1) · (K² + L²) (K, L the largest powers
      of A and B), else FFT_BYTES;
    * sums, exact engine: the powers (K² + L²)(m − 1)/2 and the rows, each number
      :func:`rdpcalc.worstcase.exact_number_bytes`.

    Calibrated with tracemalloc (MiB measured / estimated), RQM Δ = c = 1, q = 0.4: m = 16,
    k = 0, n = 3·10⁴: 52 / 94, n = 10⁵: 148 / 238; ``neighbours`` pm-c, n = 2000: 165 / 187;
    ``grid`` 301: 25 / 30, ``grid`` 701: 139 / 161; 2000 orders: 7 / 12; exact engine n = 300,
    k = 3: 47 / 56; m = 512: 22 / 25 (tests/test_resources.py checks a few)."""
    outputs = mechanism.support_size
    size = n * (outputs - 1) + 1
    pairs = len(neighbours.pairs)
    rows = min(len(neighbours.ks), max(1, CHUNK_ELEMENTS // size))
    groups: dict = {}
    for x, _ in neighbours.pairs:
        groups[x] = groups.get(x, 0) + 1
    partners = max(groups.values())
    inputs = set(groups) | {x_prime for _, x_prime in neighbours.pairs}
    at_bounds = inputs <= {mechanism.bound, -mechanism.bound}
    level_rows = 3 * rows + 1 if at_bounds else rows * (1 + len(inputs))
    count = n if at_bounds else n - 1
    high = max(neighbours.ks) + (1 if at_bounds else 0)
    low = count - min(neighbours.ks)
    powers = (high**2 + low**2) * (outputs - 1)
    parameter = "n" if n > 1 else mechanism.size_parameter()
    sums = f"the sums of {n} client{'s' if n > 1 else ''} on {size} points, {rows} configurations at a time"
    if engine.dps is None:
        method = 4 * powers if count <= levels.DIRECT_MAX_N else FFT_BYTES
        sum_bytes = 8 * size * (level_rows + 2 * partners * rows + SUM_TEMPORARIES) + method
    else:
        numbers = powers / 2 + size * (level_rows + 2 * partners * rows)
        sum_bytes = numbers * secagg.exact_number_bytes(engine.dps)
        sums += f" at {engine.dps} digits"
    return [
        Cost(PAIR_BYTES * pairs, neighbours.inputs_parameter or parameter, f"{pairs} pairs of inputs"),
        Cost(8 * VALUE_ARRAYS * pairs * rows * orders + orders * secagg.ORDER_BYTES, "alpha_ranges",
                       f"{orders} orders of {pairs * rows} configurations"),
        Cost(sum_bytes, parameter, sums),
    ]


def require_pairs(points: int, parameter: str) -> None:
    """Refuse, before they are built, the ordered pairs of ``points`` inputs whose objects alone
    (PAIR_BYTES each) exceed the memory budget, naming ``parameter``; :func:`peak_costs` adds the
    rest."""
    count = points * (points - 1)
    resources.require(PAIR_BYTES * count, parameter, f"{count} pairs of inputs")


def divergences(
    mechanism: Mechanism,
    n: int,
    alphas: Sequence[float],
    neighbours: Neighbours,
    engine,
    progress: Callable[[int, int], None] | None = None,
    level=None,
    memo: dict | None = None,
) -> list[DivergencePoint]:
    """max over the candidate configurations of D_α(P‖Q), for each α, with the argmax.

    When client 1 sits at ±b (the worst and paper protocols for n > 1), the totals are
    themselves sums of n clients at ±b: P and Q for k others at +b are rows k+1 and k of
    one level of n clients, computed once for every k and both directions. Otherwise the
    others' sums (n − 1 clients) are shared by every pair and each client's totals are
    computed once per x. The ks are processed in chunks that keep memory bounded. Ties
    keep the first candidate (k in order, then pairs in order). ``level`` may hold the
    engine's rows j = 0 … n of the level, already computed.

    The ``worst`` protocol for n > 1 runs :func:`rdpcalc.worstcase.search` instead (``memo``
    is its memo, shared across a sweep over n), and every point carries its certified upper
    bound.
    """
    if neighbours.protocol == "worst" and n > 1:
        found = secagg.search(mechanism, n, alphas, engine, neighbours.budget, progress, memo,
                                 neighbours.certify_within)
        return [DivergencePoint(alpha, value, precise, configuration, upper, found.search, found.certificate)
                for alpha, value, precise, configuration, upper
                in zip(alphas, found.values, found.precise, found.attained, found.upper, strict=True)]
    if windowed_family(neighbours, n):
        from . import kfamily  # the windowed k-family: start-up time of every command

        if engine.name != "fast":
            raise ParameterError("engine", f"the worst case over k beyond n = {WORST_MAX_N} runs in the fast engine only")
        points = []
        for found in kfamily.worst_over_k(mechanism, n, alphas, progress):
            lower, upper = kfamily.outward(found["lower"], found["upper"], n)  # the digits every machine agrees on
            points.append(DivergencePoint(found["alpha"], lower, lower, found["attained"], upper, "windowed",
                                          _windowed_certificate(found)))
        return points
    resources.require_costs(peak_costs(mechanism, n, len(alphas), neighbours, engine))
    b = mechanism.bound
    inputs = list(dict.fromkeys(x for pair in neighbours.pairs for x in pair))
    at_bounds = set(inputs) <= {b, -b}
    size = n * (mechanism.support_size - 1) + 1
    chunk = max(1, CHUNK_ELEMENTS // size)
    # progress: each client pmf (O(m²) at m levels: a minute for 4096 levels' 2049 inputs), then
    # each configuration (O(m)), so a pmf counts as m configurations
    pmf_steps = mechanism.support_size
    total = (0 if at_bounds else len(inputs) * pmf_steps) + neighbours.count
    done = [0]

    def advance(steps: int) -> None:
        done[0] += steps
        if progress is not None:
            progress(done[0], total)

    clients = {}
    for x in [] if at_bounds else inputs:
        clients[x] = engine.client(mechanism, x)
        advance(pmf_steps)
    best: list[DivergencePoint | None] = [None] * len(alphas)

    for start in range(0, len(neighbours.ks), chunk):
        ks = neighbours.ks[start : start + chunk]
        if at_bounds:
            rows = list(range(n + 1)) if level is not None else sorted(set(ks) | {k + 1 for k in ks})
            batch = level if level is not None else engine.sums(mechanism, n, rows)
            position = {row: index for index, row in enumerate(rows)}
            totals = {b: engine.select(batch, [position[k + 1] for k in ks]),
                      -b: engine.select(batch, [position[k] for k in ks])}
        else:
            rests = engine.sums(mechanism, n - 1, ks)
            totals = {x: engine.add_client(client, rests) for x, client in clients.items()}
        _maximise(best, alphas, ks, neighbours.pairs, totals, engine, b, n, advance)
    if neighbours.protocol == "worst":  # one client: every pair of breakpoints, exhaustive
        return [replace(point, upper=point.value, search="exhaustive", certificate="exhaustive: equal to the value")
                for point in best]
    return [replace(point, search=neighbours.protocol) for point in best]


def windowed_family(neighbours: Neighbours, n: int) -> bool:
    """Whether the worst case over k runs windowed (:mod:`rdpcalc.worstcase.kfamily`): the ±c family
    (``pm-c``, every k) beyond n = WORST_MAX_N, where computing every row in full costs O(n²)."""
    return neighbours.protocol == "pm-c" and n > WORST_MAX_N and len(neighbours.ks) == n


def _windowed_certificate(found: dict) -> str:
    """What the windowed bracket's upper end certifies: the maximum over the ±c family only (the
    family is a lower bound of the worst case over all inputs)."""
    family = "over the ±c family only (a lower bound of the worst case): "
    if found["alpha"] == math.inf:
        return family + ("every k; D_∞ sought at the saddle point of each row, bounded by the D_∞ of client 1 with a "
                         "block of others (data processing)")
    return family + (f"every k, each row on ±{found['half_width']:.1f} standard deviations (tilted FFTs), the rest "
                     "bounded by Chernoff (joint convexity)")


def _premise(mechanism: Mechanism) -> str:
    """The mechanism's :data:`~rdpcalc.mechanisms.Mechanism.WORST_PAIR_PREMISE`, for a description."""
    return f" ({mechanism.WORST_PAIR_PREMISE})" if mechanism.WORST_PAIR_PREMISE else ""


def pm_others(b: Fraction, n: int, k: int) -> tuple[tuple[Fraction, int], ...]:
    """The others of the ±b family as (input, count) pairs: k at +b, n − 1 − k at −b."""
    return tuple((value, count) for value, count in ((-b, n - 1 - k), (b, k)) if count)


def _maximise(best: list, alphas, ks, pairs, totals: dict, engine, b, n, advance: Callable[[int], None]) -> None:
    """Update ``best`` (one DivergencePoint or None per α) with the configurations
    (x, x', k) for k in ``ks``, where ``totals[x]`` is the batch of total pmfs, row i for
    ``ks[i]``. The pairs sharing their x are evaluated in one engine call (the input grids of
    one client have millions of pairs), after which ``advance`` is told how many
    configurations were evaluated; of the configurations within TIE_RTOL of the maximum, the first
    k, then the first pair in ``pairs``, is reported."""
    rows = len(ks)
    groups: dict = {}
    for index, (x, x_prime) in enumerate(pairs):
        groups.setdefault(x, []).append((index, x_prime))
    blocks, precise = [], []
    located = [None] * len(pairs)  # pair index → (its group, its place in the group)
    for group, (x, members) in enumerate(groups.items()):
        partners = [x_prime for _, x_prime in members]
        forward, _ = engine.divergences_both(engine.concat([totals[x]] * len(partners)),
                                             engine.concat([totals[x_prime] for x_prime in partners]), alphas)
        blocks.append(np.array(forward, dtype=float).reshape(len(partners), rows, len(alphas)))
        precise.append(forward)
        for place, (index, _) in enumerate(members):
            located[index] = (group, place)
        advance(len(members) * rows)
    grouped_order = [index for members in groups.values() for index, _ in members]
    floats = np.empty((len(pairs), rows, len(alphas)))
    floats[grouped_order] = np.concatenate(blocks)
    if np.any(np.isnan(floats)):
        pair, row, index = (int(i[0]) for i in np.nonzero(np.isnan(floats)))
        raise ArithmeticError(f"NaN divergence at α={alphas[index]}, x={pairs[pair][0]}, x'={pairs[pair][1]}, "
                              f"k={ks[row]}")
    flat = floats.reshape(len(pairs) * rows, len(alphas))
    for index, position in enumerate(np.argmax(flat, axis=0)):
        value = float(flat[position, index])
        if best[index] is None or value > best[index].value:
            group, member = located[position // rows]
            precise_value = precise[group][member * rows + position % rows][index]
            # attained by the first configuration within TIE_RTOL of the maximum in the order
            # (k, then pair), which chunks of ks keep (symmetric pairs tie up to the last bits,
            # which differ between processors); the value is the maximum
            threshold = value - TIE_RTOL * abs(value) if math.isfinite(value) else value
            if best[index] is not None and best[index].value >= threshold:
                configuration = best[index].attained
            else:
                by_k = floats[:, :, index].T.ravel()
                row, pair = divmod(int(np.argmax(by_k >= threshold)), len(pairs))
                configuration = Configuration(*pairs[pair], pm_others(b, n, ks[row]))
            best[index] = DivergencePoint(alphas[index], value, precise_value, configuration)


def sweep_n(
    mechanism: Mechanism,
    n_values: Sequence[int],
    alphas: Sequence[float],
    protocols: Sequence[str],
    engine,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[tuple[str, int], tuple[Neighbours, list[DivergencePoint]]]:
    """:func:`divergences` for every n in ``n_values`` and every protocol, keyed (protocol, n).

    With the fast engine the levels come from one sweep
    (:func:`rdpcalc.numerics.levels.sweep_levels`), shared by the protocols."""
    wanted = sorted(set(n_values))
    results = {}
    if engine.name == "fast":
        b = mechanism.bound
        sweep = levels.sweep_levels(engine.client(mechanism, b), engine.client(mechanism, -b), wanted)
    else:
        sweep = ((n, None) for n in wanted)
    memo: dict = {}
    for n, level in sweep:
        for protocol in protocols:
            chosen = choose_neighbours(mechanism, n, NeighbourOptions(protocol, seed=seed))
            results[(protocol, n)] = (chosen, divergences(mechanism, n, alphas, chosen, engine, level=level, memo=memo))
            if progress is not None:
                progress(len(results), len(wanted) * len(protocols))
    return results
