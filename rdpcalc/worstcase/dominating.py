"""One round's dominating pair: the privacy loss distribution of the worst case over
neighbouring inputs, for PLD accounting (:mod:`rdpcalc.privacy.pld`).

The neighbouring relation is replace-one: client 1 holds x (law P) or x′ (law Q), the other
clients of the sum keep their inputs. Every hockey-stick divergence H_γ is an f-divergence
(f(t) = (t − γ)_+), so it is jointly convex in (P, Q) and cannot grow under a Markov kernel;
the arguments of :mod:`rdpcalc.worstcase.secagg` for D_α use nothing else, and carry over to every H_γ
word for word. The family whose envelope is taken (:func:`per_round_pld`) is therefore:

* **one client** (``local`` observer, or n = 1): every ordered pair of breakpoints (x, x′).
  For mechanisms affine between breakpoints this is the whole worst case; for the quantized
  Gaussian and QMGeo it is as certified as the mechanism's own single-client argument.
* **a SecAgg sum of n > 1 clients**, ``certified`` (a guarantee):
  - *exhaustive*, when the pairs × multisets of the others number at most ``budget``
    (mechanisms affine between breakpoints): every ordered pair of breakpoints for client 1
    and every multiset of breakpoints for the others — the worst case itself;
  - otherwise the pointwise smaller of two bounds, each valid for every γ:
    (1) *data processing*: the exhaustive envelope with j < n − 1 others (adding the other
    clients' independent sum is a Markov kernel), j as large as the budget allows; and
    (2) *the others' common component* (affine mechanisms): with K ~ Binomial(n − 1, λ) of
    the others reduced to their shared part C, H_γ ≤ Σ_K P(K) H_γ(P_x * C^{*K} ‖ P_x′ * C^{*K})
    for each pair (x, x′) — the PLD of the pair with K revealed, the K-weighted mixture of PLDs;
    at large n with blocks of others in place of single clients, K ~ Binomial(B, λ_g)
    (:mod:`rdpcalc.worstcase.blocks`, which proves it for every H_γ)
    (where the search's memory estimate is over the budget, (1) alone, and the family says so:
    :func:`rdpcalc.worstcase.secagg.certified_upper` then bounds the Rényi curve without refusing,
    and ``account`` reports the smaller ε);
  - PBM: the others' trials relaxed to independent inputs, client 1 at ±b (the garbling
    argument of :mod:`rdpcalc.worstcase.secagg`), every row of the level (beyond RELAXED_PLD_ROWS of
    the others' trials, in steps bounded by data processing);
  - the quantized Gaussian and QMGeo: one client (data processing down to j = 0).
* ``found`` (NOT a guarantee): the configurations the Rényi search found worst at a few orders,
  a lower bound of the envelope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from .. import resources
from ..errors import ParameterError
from ..mechanisms import Mechanism
from ..numerics import FastEngine
from ..privacy import pld as pldlib
from . import secagg, staircase

#: an exhaustive family is evaluated when its pairs × multisets number at most this many
PLD_BUDGET = 4_000
#: PBM's add/remove family is refused above this many members (each costs one pass over the
#: loss grid; 8000 take about a minute on 2 cores)
ADD_REMOVE_RELAXED_BUDGET = 8_000
#: PBM's relaxed family enters the envelope split by split up to this many trials, beyond in steps
#: (:class:`rdpcalc.worstcase.RelaxedFamily`): each member is a pass over the loss grid
RELAXED_PLD_ROWS = 400
#: the orders at which ``found`` takes the configurations the Rényi search found worst
FOUND_ORDERS = (1.5, 2.0, 4.0, 8.0, 32.0, math.inf)


@dataclass(frozen=True)
class RoundPld:
    """A dominating pair of one round (a dp-accounting ``PrivacyLossDistribution``), what
    family it dominates (``family``), whether it is a guarantee, and the configurations whose
    curves make up the envelope (``attained``, most of the grid first)."""

    pld: object
    family: str
    certified: bool
    attained: list[str]


def per_round_pld(mechanism: Mechanism, clients_in_sum: int, per_round: str = "certified",
                  h: float = pldlib.DISCRETIZATION, budget: int = PLD_BUDGET) -> RoundPld:
    """The dominating PLD of one coordinate of one round: the sum of ``clients_in_sum`` clients
    (1 for one client's message), the family of the module docstring."""
    refused = None  # why the search does not fit (affine mechanisms: data processing alone)
    if clients_in_sum > 1 and per_round == "certified":
        costs = secagg.search_costs(mechanism, clients_in_sum, 1)
        refused = secagg.refusal(costs)
        if refused is not None and mechanism.OTHERS_FAMILY != "affine":
            resources.require_costs(costs)
    engine = FastEngine(mechanism.modulus)
    points = list(mechanism.breakpoints())
    if mechanism.OTHERS_FAMILY == "shift" and clients_in_sum > 1 and per_round != "found":
        return _result(_shift_family(mechanism, points, clients_in_sum - 1, engine, h), secagg.SHIFT_CERTIFICATE,
                       True, _missing_mass(mechanism, clients_in_sum))
    clients = [engine.client(mechanism, p) for p in points]
    if clients_in_sum == 1:
        env = _exhaustive(clients, points, 0, engine, h)
        return _result(env, "every ordered pair of breakpoints (one client)", True, _missing_mass(mechanism, 1))
    if per_round == "found":
        env = _found(mechanism, clients_in_sum, engine, h)
        return _result(env, "the configurations the Rényi search found worst: a lower bound of the worst case, "
                            "NOT a guarantee", False)
    others, family = clients_in_sum - 1, mechanism.OTHERS_FAMILY
    pairs = len(points) * (len(points) - 1)
    if family == "relaxed":
        return _result(*_relaxed(mechanism, clients_in_sum, engine, h), True)
    if family == "affine" and secagg.multisets(others, len(points)) * pairs <= budget:
        return _result(_exhaustive(clients, points, others, engine, h),
                       f"every pair of breakpoints × every multiset of the {others} others (exhaustive)", True)
    size = 0 if family != "affine" else _data_processing_size(others - 1, len(points), pairs, budget)
    env = _exhaustive(clients, points, size, engine, h)
    text = f"exhaustive over {size} other client{'s' if size != 1 else ''} (data processing)" if size else \
        "one client (data processing)"
    if family != "affine":
        return _result(env, text, True)
    if refused is not None:
        return _result(env, f"{text}; the others' common component left out, as the search does not fit ({refused})",
                       True)
    described, mixed = _common_component(mechanism, clients, points, others, engine, h)
    return _result(pldlib.smaller(env, mixed), f"the smaller of {text} and {described}", True)


def _data_processing_size(largest: int, kinds: int, pairs: int, budget: int) -> int:
    """The most others, at most ``largest``, whose multisets of ``kinds`` breakpoints times
    ``pairs`` fit in ``budget`` (at least 0: one client)."""
    return max(j for j in range(largest + 1) if j == 0 or secagg.multisets(j, kinds) * pairs <= budget)


def _result(env: pldlib.Envelope, family: str, certified: bool, missing: float = 0.0) -> RoundPld:
    """The round's dominating PLD from the envelope ``env``, raised by ``missing``: the mass the
    windowed sums miss (:func:`_missing_mass`)."""
    attained = [_describe(label) for label in env.attained_labels()[:4]]
    if missing:
        env = pldlib.Envelope(env.lower, np.minimum(env.values + missing, 1.0), env.attained, env.labels, env.h)
        family += f"; raised by {missing:.3g}, the mass the windowed sums miss"
    return RoundPld(pldlib.dominating_pld(env), family, certified, attained)


def _missing_mass(mechanism: Mechanism, clients_in_sum: int) -> float:
    """The mass a sum of windowed clients misses (unbounded noise, :mod:`rdpcalc.mechanisms.rounded`):
    at most 1 − (1 − ε)^n ≤ n·ε. Since P ≤ P̃ + (that mass) and Q ≥ Q̃ on every set,
    H_γ(P ‖ Q) ≤ H_γ(P̃ ‖ Q̃) + n·ε for every γ, so the raised envelope bounds the true one."""
    return clients_in_sum * mechanism.tail_mass_bound()


def _shift_family(mechanism, points, others: int, engine, h) -> pldlib.Envelope:
    """The envelope of a rounded-noise mechanism's family: the others at the grid point 0, client 1
    over :meth:`~rdpcalc.mechanisms.RoundedNoise.shift_pairs`, both directions."""
    zero = engine.client(mechanism, Fraction(0))
    rest = engine.level(zero, zero, others, [others])
    pairs = mechanism.shift_pairs()
    totals = {i: engine.add_client(engine.client(mechanism, points[i]), rest)[0]
              for i in sorted({i for pair in pairs for i in pair})}
    text = f"{others}×0" if others else ""
    members = []
    for i, j in pairs:
        members.append(((points[i], points[j], text), _rounded(engine, totals[i], totals[j], h)))
        members.append(((points[j], points[i], text), _rounded(engine, totals[j], totals[i], h)))
    return pldlib.envelope(members, h)


def _describe(label) -> str:
    x, x_prime, others = label
    return f"x = {float(x):g}, x′ = {float(x_prime):g}" + (f", others: {others}" if others else "")


def _others_text(others) -> str:
    """(input, count) pairs as "39×1.4 + 1×-1.5"."""
    return " + ".join(f"{count}×{float(value):g}" for value, count in others)


def _rounded(engine, p: np.ndarray, q: np.ndarray, h: float, weights=None):
    """The rounded privacy-loss distribution of (P, Q) (:func:`rdpcalc.privacy.pld.rounded`), of the sums
    wrapped modulo the engine's modulus when it has one (:mod:`rdpcalc.numerics`)."""
    return pldlib.rounded(engine.fold(p), engine.fold(q), h, weights)


def _members(engine, totals: list[np.ndarray], points: list, others_of, h: float, weights=None):
    """(label, rounded PLD) for every ordered pair of client-1 inputs and every row of the totals."""
    for i, j in ((i, j) for i in range(len(points)) for j in range(len(points)) if i != j):
        if weights is not None:
            yield (points[i], points[j], others_of(0)), _rounded(engine, totals[i], totals[j], h, weights)
            continue
        for row in range(len(totals[i])):
            yield (points[i], points[j], others_of(row)), _rounded(engine, totals[i][row], totals[j][row], h)


def _exhaustive(clients, points, size: int, engine, h) -> pldlib.Envelope:
    """The envelope over client 1's ordered pairs and every multiset of ``size`` others."""
    rests, keys = secagg.all_multisets(engine, clients, size)
    totals = [engine.add_client(client, rests) for client in clients]

    def others_of(row):
        return _others_text((points[i], c) for i, c in enumerate(keys[row]) if c)

    return pldlib.envelope(_members(engine, totals, points, others_of, h), h)


def _common_component(mechanism, clients, points, others: int, engine, h) -> tuple[str, pldlib.Envelope]:
    """The common-component bound (module docstring) for every ordered pair: each member is the
    Binomial(B, λ) mixture over K of the pairs (P_x * C^{*K}, P_x′ * C^{*K}); its description."""
    component, rows, weights = _common_component_rows(mechanism, others, engine)
    totals = [engine.add_client(client, rows) for client in clients]
    text = _component_label(component)
    return component.describe(), pldlib.envelope(_members(engine, totals, points, lambda row: text, h, weights), h)


def _component_label(component) -> str:
    """A member's label: K's law and what it counts."""
    counted = "the common component" if component.size == 1 else f"the common component of blocks of {component.size}"
    return f"K ~ Bin({component.blocks}, {component.share:.4f}) at {counted}"


def _common_component_rows(mechanism, others: int, engine) -> tuple:
    """(the component the others reduce to, single clients or homogeneous blocks
    (:func:`rdpcalc.worstcase.secagg.others_component`); its rows C^{*K} for K = 0 … B; the
    Binomial(B, λ) weights of K)."""
    component = secagg.others_component(mechanism, others)
    rows = engine.powers(component.log_component, component.blocks)
    return component, rows, np.exp(staircase.log_binomial_weights(component.blocks, component.share))


def _relaxed(mechanism, n: int, engine, h) -> tuple[pldlib.Envelope, str]:
    """PBM: rows t and t + M of the relaxed family (t of the others' trials at p(b)), client 1 at
    −b and +b, both orders (:class:`rdpcalc.worstcase.RelaxedFamily`: beyond RELAXED_PLD_ROWS
    trials, t in steps bounded by data processing, and for a mirror-symmetric mechanism one t of
    each mirror pair: the privacy loss distribution of a pair is that of its image under any
    bijection of the outputs); the envelope and what it covers."""
    family = secagg.RelaxedFamily.of(mechanism, n, engine, RELAXED_PLD_ROWS)
    b = mechanism.bound
    within = f", {family.within()}" if family.step > 1 else ""
    members = []
    for chunk, low_rows, high_rows in family.pairs(engine, family.splits()):
        for t, low_row, high_row in zip(chunk, low_rows, high_rows):
            others = f"{t} of their {family.kept} trials at p({float(b):g}), the rest at p({float(-b):g}){within}"
            members.append(((-b, b, others), _rounded(engine, low_row, high_row, h)))
            members.append(((b, -b, others), _rounded(engine, high_row, low_row, h)))
    return pldlib.envelope(members, h), ("the others' trials relaxed to independent inputs, client 1 at ±b "
                                         f"({family.within() or 'exhaustive'})")


def _relaxed_rows(mechanism, engine) -> tuple[np.ndarray, np.ndarray, int]:
    """PBM: one trial's log pmf at p(b) and at p(−b), and the trials per client."""
    with mpmath.workdps(40):
        low, high, per_client = mechanism.relaxed_components()
    return engine.from_mpmath(high), engine.from_mpmath(low), per_client


def _found(mechanism, n: int, engine, h) -> pldlib.Envelope:
    """The envelope over the configurations the Rényi search found worst at FOUND_ORDERS."""
    result = secagg.search(mechanism, n, list(FOUND_ORDERS), engine, certify=False)
    points = list(mechanism.breakpoints())
    clients = {p: engine.client(mechanism, p) for p in points}
    members = []
    for config in dict.fromkeys(result.attained):
        rest = secagg.multiset_sum(engine, [clients[p] for p in points],
                                      [dict(config.others).get(p, 0) for p in points])
        p_total = engine.add_client(clients[config.x], rest)[0]
        q_total = engine.add_client(clients[config.x_prime], rest)[0]
        others = _others_text(config.others)
        members.append(((config.x, config.x_prime, others), _rounded(engine, p_total, q_total, h)))
        members.append(((config.x_prime, config.x, others), _rounded(engine, q_total, p_total, h)))
    return pldlib.envelope(members, h)


# ----------------------------------------------------------------------------- add/remove
def add_remove_pld(mechanism: Mechanism, others: int, rate: float = 1.0, h: float = pldlib.DISCRETIZATION,
                   budget: int = PLD_BUDGET) -> RoundPld:
    """The dominating pair of one round under the *add/remove* relation: the round with client 1
    (input x, law P_x) against the round without it.

    With ``rate`` = 1 (the sample known to the observer) the other ``others`` clients are in
    the sum either way: the pair (P_x * R ‖ R), R the law of their sum, and its reverse. With
    Poisson sampling at ``rate`` γ < 1 hidden from the observer, each of the ``others`` other
    clients is in the sum independently with probability γ, and client 1 too: the pair
    (γ P_x * R + (1 − γ) R ‖ R) (remove) and its reverse (add), R now a mixture over the number
    J ~ Binomial(others, γ) of the others sampled.

    Both maps are affine in R and in P_x, so, as for replace-one, every hockey-stick divergence
    is largest with every input at a breakpoint (joint convexity), data processing bounds a sum
    of more others by one of fewer, and the common component gives the mixture bound
    (:func:`per_round_pld`). Revealing J (joint convexity again) bounds the Poisson case by
    Σ_J P(J) E_J, E_J the envelope for J others; J is evaluated at a few values j_0 = 0 < j_1 <
    … (powers of two and quantiles of J), and E_J ≤ E_{j_k} for j_k ≤ J (data processing).
    The remove and add directions are composed separately (the neighbouring datasets, and so
    the direction, are the same in every round)."""
    if mechanism.OTHERS_FAMILY == "shift":
        raise ParameterError("relation", f"add-remove: {mechanism.name}'s clients send centred integers, so an absent "
                                         "client also removes its offset from the sum, which this family does not model; "
                                         "use replace-one")
    if mechanism.OTHERS_FAMILY not in ("affine", "relaxed"):
        raise ParameterError("relation", f"add-remove: the pmf of {mechanism.name} is not affine between its "
                                         "breakpoints, so no argument puts client 1's worst input (present against "
                                         "absent) at a breakpoint; use replace-one")
    engine = FastEngine(mechanism.modulus)
    points = list(mechanism.breakpoints())
    clients = [engine.client(mechanism, p) for p in points]
    js = [others] if rate == 1 else _others_grid(others, rate)
    _check_relaxed_cost(mechanism, js)
    if rate == 1:
        remove, add, text = _add_remove_family(mechanism, others, 1.0, engine, points, clients, h, budget)
        return _two_way_result(remove, add, f"client 1 with or without the {others} others' sum: {text}")
    from scipy.stats import binom  # scipy.stats: start-up time

    upper_edges = [*js[1:], others + 1]
    weights = [float(binom.cdf(b - 1, others, rate) - (binom.cdf(a - 1, others, rate) if a else 0.0))
               for a, b in zip(js, upper_edges)]
    removes, adds, texts = [], [], []
    for j, weight in zip(js, weights):
        if weight <= 0:
            continue
        remove, add, text = _add_remove_family(mechanism, j, rate, engine, points, clients, h, budget)
        removes.append((weight, remove))
        adds.append((weight, add))
        texts.append(f"{j}: {text}")
    family = (f"client 1 Poisson-sampled at {rate:g} into the sum of J ~ Bin({others}, {rate:g}) others, J revealed, "
              f"bounded at J = {', '.join(str(j) for j in js)}; " + "; ".join(texts[-1:]))
    return _two_way_result(pldlib.weighted_sum(removes), pldlib.weighted_sum(adds), family)


def _check_relaxed_cost(mechanism, js: list[int]) -> None:
    """PBM's add/remove family has (M + 1)(J·M + 1) members for J others (M trials each): refuse,
    before any work, a family above ADD_REMOVE_RELAXED_BUDGET members in all."""
    if mechanism.OTHERS_FAMILY != "relaxed":
        return
    trials = mechanism.trials
    members = sum((trials + 1) * (j * trials + 1) for j in js)
    if members > ADD_REMOVE_RELAXED_BUDGET:
        raise ParameterError("relation", f"add-remove for PBM evaluates (trials + 1)·(J·trials + 1) pairs for J others "
                                         f"at J = {', '.join(map(str, js))}: {members} in all, above the budget of "
                                         f"{ADD_REMOVE_RELAXED_BUDGET}; use fewer clients or trials, or replace-one")


def _others_grid(others: int, rate: float) -> list[int]:
    """The numbers of others at which the Poisson case is bounded: 0, powers of two, and the
    quantiles of J ~ Binomial(others, rate) at 1e−12 … ½ (each J uses the largest not above it)."""
    from scipy.stats import binom  # scipy.stats: start-up time

    quantiles = {int(binom.ppf(p, others, rate)) for p in (1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 0.1, 0.3, 0.5)}
    powers = {2**k for k in range(20) if 2**k <= max(quantiles)}
    cap = secagg.SEARCH_MAX_N - 1
    return sorted({0} | {min(j, cap) for j in quantiles | powers})


def _two_way_result(remove: pldlib.Envelope, add: pldlib.Envelope, family: str) -> RoundPld:
    attained = [f"remove: {_describe_add_remove(label)}" for label in remove.attained_labels()[:2]]
    attained += [f"add: {_describe_add_remove(label)}" for label in add.attained_labels()[:2]]
    return RoundPld(pldlib.dominating_pld(remove, add), family, True, attained)


def _describe_add_remove(label) -> str:
    x, others = label
    return f"x = {x}" + (f", others: {others}" if others else "")


def _add_remove_family(mechanism, others: int, rate: float, engine, points, clients, h, budget):
    """(remove envelope, add envelope, what it is) over the configurations of ``others`` others."""
    family = mechanism.OTHERS_FAMILY
    if family == "relaxed":
        return (*_add_remove_relaxed(mechanism, others, rate, engine, h), "trials relaxed to independent inputs")
    options = [(f"{float(p):g}", c) for p, c in zip(points, clients)]
    pairs = len(points) * (len(points) - 1)  # the replace-one search's unit of cost, kept for comparable budgets
    size = _data_processing_size(others, len(points), pairs, budget)
    remove, add = _add_remove_exhaustive(options, points, clients, size, rate, engine, h)
    if size == others:
        return remove, add, "exhaustive"
    text = f"data processing to {size} others"
    component, rows, weights = _common_component_rows(mechanism, others, engine)
    label = _component_label(component)
    mixed_remove, mixed_add = _two_way_envelopes(options, rows, lambda row: label, rate, engine, h, weights)
    return (pldlib.smaller(remove, mixed_remove), pldlib.smaller(add, mixed_add),
            f"the smaller of {text} and {component.describe()}")


def _add_remove_exhaustive(options, points, clients, size: int, rate, engine, h):
    rests, keys = secagg.all_multisets(engine, clients, size)
    return _two_way_envelopes(options, rests, lambda row: _others_text(
        (points[i], c) for i, c in enumerate(keys[row]) if c), rate, engine, h)


def _two_way_envelopes(options, rests, others_of, rate: float, engine, h, weights=None):
    """The remove and add envelopes over client 1's ``options`` ((label, log pmf) pairs) and the
    rows of ``rests`` (a mixture with ``weights`` when given)."""
    removes, adds = [], []
    for label, client in options:
        totals = engine.add_client(client, rests)
        absent = np.full_like(totals, -np.inf)
        absent[:, : rests.shape[1]] = rests
        with np.errstate(divide="ignore"):
            present = totals if rate == 1 else np.logaddexp(math.log(rate) + totals, math.log1p(-rate) + absent)
        rows = [slice(None)] if weights is not None else range(len(rests))
        for row in rows:
            key = (label, others_of(0 if weights is not None else row))
            removes.append((key, _rounded(engine, present[row], absent[row], h, weights)))
            adds.append((key, _rounded(engine, absent[row], present[row], h, weights)))
    return pldlib.envelope(removes, h), pldlib.envelope(adds, h)


def _add_remove_relaxed(mechanism, others: int, rate: float, engine, h):
    """PBM: client 1's and the others' trials each at p(−b) or p(b) independently (the pair is
    affine in each trial's law): client 1 with k of its M trials at p(b), the others' with t."""
    high_row, low_row, per_client = _relaxed_rows(mechanism, engine)
    client_rows = engine.level(high_row, low_row, per_client, range(per_client + 1))
    rests = engine.level(high_row, low_row, others * per_client, range(others * per_client + 1)) if others \
        else engine.unit()
    options = [(f"{k} of {per_client} trials at p(b)", client_rows[k]) for k in range(per_client + 1)]
    return _two_way_envelopes(options, rests, lambda row: f"{row} of their {others * per_client} trials at p(b)",
                              rate, engine, h)
