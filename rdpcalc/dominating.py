"""One round's dominating pair: the privacy loss distribution of the worst case over
neighbouring inputs, for PLD accounting (:mod:`rdpcalc.pld`).

The neighbouring relation is replace-one: client 1 holds x (law P) or x′ (law Q), the other
clients of the sum keep their inputs. Every hockey-stick divergence H_γ is an f-divergence
(f(t) = (t − γ)_+), so it is jointly convex in (P, Q) and cannot grow under a Markov kernel;
the arguments of :mod:`rdpcalc.worstcase` for D_α use nothing else, and carry over to every H_γ
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
  - PBM: the others' trials relaxed to independent inputs, client 1 at ±b (the garbling
    argument of :mod:`rdpcalc.worstcase`), every row of the level;
  - the quantized Gaussian and QMGeo: one client (data processing down to j = 0).
* ``found`` (NOT a guarantee): the configurations the Rényi search found worst at a few orders,
  a lower bound of the envelope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import pld as pldlib
from . import worstcase
from .mechanisms import Mechanism
from .numerics import FastEngine

#: an exhaustive family is evaluated when its pairs × multisets number at most this many
PLD_BUDGET = 4_000
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
    engine = FastEngine()
    points = list(mechanism.breakpoints())
    clients = [engine.client(mechanism, p) for p in points]
    if clients_in_sum == 1:
        env = _exhaustive(clients, points, 0, engine, h)
        return _result(env, "every ordered pair of breakpoints (one client)", True)
    if per_round == "found":
        env = _found(mechanism, clients_in_sum, engine, h)
        return _result(env, "the configurations the Rényi search found worst: a lower bound of the worst case, "
                            "NOT a guarantee", False)
    others, family = clients_in_sum - 1, mechanism.OTHERS_FAMILY
    pairs = len(points) * (len(points) - 1)
    if family == "relaxed":
        return _result(_relaxed(mechanism, clients_in_sum, engine, h),
                       "the others' trials relaxed to independent inputs, client 1 at ±b (exhaustive)", True)
    if family == "affine" and worstcase.multisets(others, len(points)) * pairs <= budget:
        return _result(_exhaustive(clients, points, others, engine, h),
                       f"every pair of breakpoints × every multiset of the {others} others (exhaustive)", True)
    size = 0 if family != "affine" else max(j for j in range(others) if worstcase.multisets(j, len(points)) * pairs
                                             <= budget or j == 0)
    env = _exhaustive(clients, points, size, engine, h)
    text = f"exhaustive over {size} other client{'s' if size != 1 else ''} (data processing)" if size else \
        "one client (data processing)"
    if family != "affine":
        return _result(env, text, True)
    share, mixed = _common_component(mechanism, clients, points, others, engine, h)
    return _result(pldlib.smaller(env, mixed), f"the smaller of {text} and the others' common component "
                                               f"(λ = {share:.4f})", True)


def _result(env: pldlib.Envelope, family: str, certified: bool) -> RoundPld:
    attained = [_describe(label) for label in env.attained_labels()[:4]]
    return RoundPld(pldlib.dominating_pld(env), family, certified, attained)


def _describe(label) -> str:
    x, x_prime, others = label
    return f"x = {float(x):g}, x′ = {float(x_prime):g}" + (f", others: {others}" if others else "")


def _others_text(others) -> str:
    """(input, count) pairs as "39×1.4 + 1×-1.5"."""
    return " + ".join(f"{count}×{float(value):g}" for value, count in others)


def _members(totals: list[np.ndarray], points: list, others_of, h: float, weights=None):
    """(label, rounded PLD) for every ordered pair of client-1 inputs and every row of the totals."""
    for i, j in ((i, j) for i in range(len(points)) for j in range(len(points)) if i != j):
        if weights is not None:
            yield (points[i], points[j], others_of(0)), pldlib.rounded(totals[i], totals[j], h, weights)
            continue
        for row in range(len(totals[i])):
            yield (points[i], points[j], others_of(row)), pldlib.rounded(totals[i][row], totals[j][row], h)


def _exhaustive(clients, points, size: int, engine, h) -> pldlib.Envelope:
    """The envelope over client 1's ordered pairs and every multiset of ``size`` others."""
    rests, keys = worstcase.all_multisets(engine, clients, size)
    totals = [engine.add_client(client, rests) for client in clients]

    def others_of(row):
        return _others_text((points[i], c) for i, c in enumerate(keys[row]) if c)

    return pldlib.envelope(_members(totals, points, others_of, h), h)


def _common_component(mechanism, clients, points, others: int, engine, h) -> tuple[float, pldlib.Envelope]:
    """The common-component bound (module docstring) for every ordered pair: each member is the
    Binomial(others, λ) mixture over K of the pairs (P_x * C^{*K}, P_x′ * C^{*K})."""
    share, component = worstcase.common_component(mechanism)
    share = float(share)
    rows = engine.powers(engine.from_mpmath(component), others)
    weights = np.exp([worstcase._log_binomial(others, k, share) for k in range(others + 1)])
    totals = [engine.add_client(client, rows) for client in clients]
    text = f"K ~ Bin({others}, {share:.4f}) at the common component"
    return share, pldlib.envelope(_members(totals, points, lambda row: text, h, weights), h)


def _relaxed(mechanism, n: int, engine, h) -> pldlib.Envelope:
    """PBM: rows t and t + M of the level of (n − 1)·M + M trials (t of the others' trials at
    p(b)), client 1 at −b and +b, both orders."""
    import mpmath

    with mpmath.workdps(40):
        low, high, per_client = mechanism.relaxed_components()
    trials = (n - 1) * per_client
    rows = engine.level(engine.from_mpmath(high), engine.from_mpmath(low), trials + per_client,
                        range(trials + per_client + 1))
    b = mechanism.bound
    members = []
    for t in range(trials + 1):
        others = f"{t} of their {trials} trials at p({float(b):g}), the rest at p({float(-b):g})"
        members.append(((-b, b, others), pldlib.rounded(rows[t], rows[t + per_client], h)))
        members.append(((b, -b, others), pldlib.rounded(rows[t + per_client], rows[t], h)))
    return pldlib.envelope(members, h)


def _found(mechanism, n: int, engine, h) -> pldlib.Envelope:
    """The envelope over the configurations the Rényi search found worst at FOUND_ORDERS."""
    result = worstcase.search(mechanism, n, list(FOUND_ORDERS), engine)
    points = list(mechanism.breakpoints())
    clients = {p: engine.client(mechanism, p) for p in points}
    members = []
    for config in dict.fromkeys(result.attained):
        rest = worstcase.multiset_sum(engine, [clients[p] for p in points],
                                      [dict(config.others).get(p, 0) for p in points])
        p_total = engine.add_client(clients[config.x], rest)[0]
        q_total = engine.add_client(clients[config.x_prime], rest)[0]
        others = _others_text(config.others)
        members.append(((config.x, config.x_prime, others), pldlib.rounded(p_total, q_total, h)))
        members.append(((config.x_prime, config.x, others), pldlib.rounded(q_total, p_total, h)))
    return pldlib.envelope(members, h)
