"""The papers' closed-form bounds on a mechanism's Rényi divergences (and other quantities),
each checked against the exact value it bounds."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import mpmath

from .mechanisms import Mechanism
from .mechanisms.base import Exact
from .numerics import make_engine
from .orders import collect_alphas
from .queries import divergence
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
            extreme pair, the worst pair, each margin and each pair a bound is checked against,
            known before the first).
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
    total = 2 + len(mechanism.MARGIN_STUDY) + sum(isinstance(item.target, tuple) and bool(item.relation)
                                                  for item in items)
    done = [0]

    def advance() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    base = {"mechanism": mechanism.name, **mechanism.parameters(), "n": 1}
    records = []
    exact_values: dict = {}
    for target, protocol, label in (("pair", "paper", "pair (±b)"), ("worst", "worst", "worst pair")):
        rows = divergence(mechanism, alphas=needed, neighbours=protocol, engine=engine, dps=dps)
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
        rows = divergence(mechanism, alphas=orders, margin=eta, engine=engine, dps=dps)
        advance()
        for row in rows:
            records.append(
                {**base, "kind": "exact", "quantity": f"D_α, worst pair ≥ {float(eta):g}·Δ from the levels",
                 "alpha": row["alpha"], "value": row["divergence"], "source": f"{engine} engine", "x": row["x"],
                 "x_prime": row["x_prime"], "compares": "", "holds": None, "note": ""}
            )
    for item in items:
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
                exact_value = divergence(mechanism, alphas=[item.alpha], x=x, x_prime=x_prime, engine=engine,
                                         dps=dps)[0]["divergence"]
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
        records.append(
            {**base, "kind": "bound", "quantity": item.name, "alpha": None if item.alpha is None else float(item.alpha),
             "value": value, "source": item.source, "x": None, "x_prime": None, "compares": compared, "holds": holds,
             "note": item.note}
        )
    return records
