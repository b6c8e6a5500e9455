"""The papers' closed-form bounds on a mechanism's Rényi divergences (and other quantities),
each checked against the exact value it bounds.

A mechanism's :meth:`~rdpcalc.mechanisms.Mechanism.bounds` declares that value as data (the
mechanisms compute nothing above themselves); this module computes it: with the engines for the
single-client divergences, with :func:`rdpcalc.divergence` for a :class:`SumWorst` target and
with :func:`rdpcalc.account` for a :class:`RoundEpsilon` one (:func:`resolve_targets`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import mpmath

from .mechanisms import Bound, Mechanism
from .mechanisms.base import Exact, RoundEpsilon, SumWorst
from .numerics import make_engine
from .orders import collect_alphas
from .queries import NeighbourOptions, divergence
from .runs import account
from .worstcase.neighbours import require_pairs


def bound(
    mechanism: Mechanism,
    *,
    alphas: Sequence[float | str] | None = None,
    alpha_ranges: Sequence[str] = (),
    engine: str = "fast",
    dps: int = 50,
    progress: Callable[[int, int], None] | None = None,
    **options,
) -> list[dict]:
    """The papers' bounds beside the exact single-client divergences (the paper of each
    mechanism is its class's ``paper``; each record's ``source`` gives the equation).

    Parameters:
        mechanism: a mechanism (:func:`rdpcalc.make_mechanism`).
        alphas, alpha_ranges: the orders, as for :func:`rdpcalc.divergence` (∞ is always added).
        engine, dps: the engine of the exact values, as for :func:`rdpcalc.divergence`.
        progress: called as ``progress(done, total)`` after each exact computation (total: the
            extreme pair, the worst pair, each margin, each pair a bound is checked against and
            each computation of :func:`resolve_targets`, known before the first).
        options: the mechanism's bound parameters (its ``BOUND_PARAMS``, e.g. QMGeo's ``dim``
            and ``kappa``).

    Records of kind ``exact`` give D_α at the extreme pair (b, −b) and the worst over all input
    pairs; records of kind ``bound`` give each closed form with its source, the exact value it
    is checked against (``compares``) and whether it ``holds`` (None for values only reported)."""
    mechanism.bound_options(**options)  # an unknown or invalid option is refused before any computation
    make_engine(engine, dps)  # as are the engine and its digits, which the closed forms run at
    orders = collect_alphas(alphas, alpha_ranges)
    if math.inf not in orders:
        orders.append(math.inf)
    require_pairs(len(mechanism.breakpoints()), mechanism.size_parameter())  # before the closed forms
    with mpmath.workdps(dps):
        items = mechanism.bounds(orders, **options)
    needed = sorted(set(orders) | {item.alpha for item in items if item.alpha is not None})
    total = 2 + len(mechanism.MARGIN_STUDY) + resolution_count(items) + sum(
        isinstance(item.target, tuple) and bool(item.relation) for item in items)
    done = [0]

    def advance() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    with mpmath.workdps(dps):
        items = resolve_targets(mechanism, items, advance)

    base = {"mechanism": mechanism.name, **mechanism.parameters(), "n": 1}
    records = []
    exact_values: dict = {}
    for target, protocol, label in (("pair", "paper", "pair (±b)"), ("worst", "worst", "worst pair")):
        rows = divergence(mechanism, alphas=needed, engine=engine, dps=dps, choose=NeighbourOptions(neighbours=protocol))
        advance()
        for row in rows:
            # a windowed noise gives a certified bracket (rdpcalc.worstcase.tails): its lower end, never shown as exact
            bracket = (row["divergence"], row["certified_upper"]) if "windowed_divergence" in row else None
            exact_values[(target, row["alpha"])] = bracket or row["divergence"]
            if row["alpha"] in orders:
                records.append(
                    {**base, "kind": "exact", "quantity": f"D_α, {label}" + (", certified lower end" if bracket else ""),
                     "alpha": row["alpha"], "value": row["divergence"], "source": f"{engine} engine", "x": row["x"],
                     "x_prime": row["x_prime"], "compares": "", "holds": None,
                     "note": f"the true value lies in [{bracket[0]:.10g}, {bracket[1]:.10g}]" if bracket else ""}
                )
    for eta in mechanism.MARGIN_STUDY:
        rows = divergence(mechanism, alphas=orders, engine=engine, dps=dps, choose=NeighbourOptions(margin=eta))
        advance()
        for row in rows:
            records.append(
                {**base, "kind": "exact", "quantity": f"D_α, worst pair ≥ {float(eta):g}·Δ from the levels",
                 "alpha": row["alpha"], "value": row["divergence"], "source": f"{engine} engine", "x": row["x"],
                 "x_prime": row["x_prime"], "compares": "", "holds": None, "note": ""}
            )
    for item in items:
        holds, compared = _check(mechanism, item, exact_values, (engine, dps), advance)
        records.append(
            {**base, "kind": "bound", "quantity": item.name, "alpha": None if item.alpha is None else float(item.alpha),
             "value": float(item.value), "source": item.source, "x": None, "x_prime": None, "compares": compared,
             "holds": holds, "note": item.note}
        )
    return records


def _check(mechanism: Mechanism, item: Bound, exact_values: dict, engine_choice: tuple[str, int],
           advance: Callable[[], None]) -> tuple[bool | None, str]:
    """Whether ``item`` holds against the exact value of its target (None: only reported, or
    a certified bracket that straddles it) and the comparison in words. ``exact_values`` holds
    the single-client values by (``"pair"`` or ``"worst"``, order); an explicit pair is
    computed here (by ``engine_choice``: the engine and its digits)."""
    engine, dps = engine_choice
    value = float(item.value)
    holds, compared = None, ""
    known = exact_values.get((item.target, item.alpha)) if isinstance(item.target, str) else None
    if isinstance(known, tuple):  # a windowed noise's bracket: checked as one
        described = "max over input pairs of D_α" if item.target == "worst" else "D_α(P_b ‖ P_−b)"
        item = replace(item, target=Exact(mpmath.mpf(known[0]), described, mpmath.mpf(known[1])))
    if isinstance(item.target, Exact) and item.target.upper is not None and item.relation == "≤":
        lower, upper = float(item.target.value), float(item.target.upper)
        limit = value * (1 + 1e-12) + 1e-300
        holds = True if upper <= limit else False if lower > limit else None
        compared = f"{item.target.text} in [{lower:.10g}, {upper:.10g}] (certified bracket) ≤ this value"
    elif item.target is not None and item.relation:
        if isinstance(item.target, Exact):
            exact_value, described = float(item.target.value), item.target.text
        elif isinstance(item.target, tuple):
            x, x_prime = item.target
            exact_value = divergence(mechanism, alphas=[item.alpha], engine=engine, dps=dps,
                                     choose=NeighbourOptions(x=x, x_prime=x_prime))[0]["divergence"]
            advance()
            described = f"D_α(P_{float(x):g} ‖ P_{float(x_prime):g})"
        else:
            exact_value = exact_values[(item.target, item.alpha)]
            described = "max over input pairs of D_α" if item.target == "worst" else "D_α(P_b ‖ P_−b)"
        if item.relation == "=":
            holds = abs(exact_value - value) <= 1e-9 * max(1.0, abs(value))
        else:
            holds = exact_value <= value * (1 + 1e-12) + 1e-300
        compared = f"{described} = {exact_value:.10g} {item.relation} this value"
    return holds, compared


def resolve_targets(mechanism: Mechanism, items: Sequence[Bound],
                    advance: Callable[[], None] = lambda: None) -> list[Bound]:
    """``items`` (``mechanism``'s :meth:`~rdpcalc.mechanisms.Mechanism.bounds`) with each
    :class:`SumWorst` and :class:`RoundEpsilon` target replaced by the :class:`Exact` value it
    declares, the other items as they are. The worst cases of a sum are computed with one
    :func:`rdpcalc.divergence` per number of clients, at all the orders that ask for it; each
    ε with :func:`rdpcalc.account`; both with their defaults (the fast engine). ``advance()``
    is called after each of these :func:`resolution_count` computations."""
    sums: dict[tuple[int, float], Exact] = {}
    for n, alphas in _sum_orders(items).items():
        sums.update(((n, alpha), target) for alpha, target in _sum_worst(mechanism, n, alphas).items())
        advance()
    resolved = []
    for item in items:
        if isinstance(item.target, SumWorst):
            item = replace(item, target=sums[(item.target.n, item.alpha)])
        elif isinstance(item.target, RoundEpsilon):
            item = replace(item, target=_round_epsilon(mechanism, item.target))
            advance()
        resolved.append(item)
    return resolved


def resolution_count(items: Sequence[Bound]) -> int:
    """The computations :func:`resolve_targets` makes for ``items``: one per number of clients
    of their :class:`SumWorst` targets, one per :class:`RoundEpsilon` target."""
    return len(_sum_orders(items)) + sum(isinstance(item.target, RoundEpsilon) for item in items)


def _sum_orders(items: Sequence[Bound]) -> dict[int, list[float]]:
    """For each n of the :class:`SumWorst` targets among ``items``, the orders they are at
    (in their order, each once)."""
    orders: dict[int, dict[float, None]] = {}
    for item in items:
        if isinstance(item.target, SumWorst):
            orders.setdefault(item.target.n, {})[item.alpha] = None
    return {n: list(alphas) for n, alphas in orders.items()}


def _sum_worst(mechanism: Mechanism, n: int, alphas: list[float]) -> dict[float, Exact]:
    """The worst case of the sum of ``n`` clients at each of ``alphas`` as an :class:`Exact`
    with its certified upper end, by order: a sum bound holds where the upper end is below it,
    fails where the value found (the lower end) is above."""
    text = f"worst case of the sum of {n}"
    return {record["alpha"]: Exact(mpmath.mpf(record["divergence"]), text, mpmath.mpf(record["certified_upper"]))
            for record in divergence(mechanism, n=n, alphas=alphas)}


def _round_epsilon(mechanism: Mechanism, target: RoundEpsilon) -> Exact:
    """ε at δ of one round of the sum of ``target.n`` clients, exact (the privacy loss
    distribution of its worst case), as an :class:`Exact`."""
    epsilon = account(mechanism, n=target.n, dp_delta=target.delta)["epsilon"]
    return Exact(mpmath.mpf(epsilon), f"ε at δ = {target.delta:g} of one round, exact (PLD)")
