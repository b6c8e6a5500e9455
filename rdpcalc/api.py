"""The public Python API. The CLI is a thin layer over these functions.

Every function returns *records*: flat dicts with the mechanism, its parameters and the
numbers, ready for a table, JSON or CSV. Infinite values are ``math.inf``.

>>> from rdpcalc import api
>>> mech = api.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
>>> [round(r["divergence"], 6) for r in api.divergence(mech, n=1, alphas=[2, 10])]
[5.063546, 5.368399]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import mpmath

from .errors import ParameterError
from .exactnum import to_fraction
from .mechanisms import MECHANISMS, Mechanism
from .mechanisms.base import Exact
from .neighbours import DivergencePoint, choose_neighbours, divergences
from .numerics import make_engine
from .orders import collect_alphas


def make_mechanism(name: str, **params) -> Mechanism:
    """The mechanism called ``name`` (``rqm``, ``pbm``) with the given parameters."""
    if name not in MECHANISMS:
        raise ParameterError("MECHANISM", f"must be one of {', '.join(MECHANISMS)}, got {name!r}")
    cls = MECHANISMS[name]
    expected = {spec.name for spec in cls.PARAMS}
    missing = [spec.option for spec in cls.PARAMS if params.get(spec.name) is None and spec.default is None]
    if missing:
        raise ParameterError(missing[0], f"is required for {name}")
    unknown = set(params) - expected
    if unknown:
        raise ParameterError(f"--{sorted(unknown)[0]}", f"is not a parameter of {name}")
    return cls(**{name: value for name, value in params.items() if value is not None})


def divergence(
    mechanism: Mechanism,
    n: int = 1,
    alphas: Sequence[float | str] | None = None,
    neighbours: str = "worst",
    k: int | None = None,
    x=None,
    x_prime=None,
    seed: int = 0,
    engine: str = "fast",
    dps: int = 50,
    progress: Callable[[int, int], None] | None = None,
    alpha_ranges: Sequence[str] = (),
    grid: int | None = None,
    margin=None,
    k_option: str = "--k",
) -> list[dict]:
    """Rényi divergences of the SecAgg sum of ``n`` clients between neighbouring inputs.

    One record per order α, each with the divergence, the protocol that chose the
    neighbours, and the configuration (x, x_prime, k) attaining it; see
    :mod:`rdpcalc.neighbours` for the protocols. Orders: ``alphas`` (numbers ≥ 1 or "inf")
    and ``alpha_ranges`` ("START:STOP:COUNT[:log|lin]"); default 1, 2, 10, ∞.
    One client only: ``grid`` searches all pairs of ``grid`` equally spaced inputs instead of
    the breakpoints; ``margin`` η searches the inputs kept ηΔ away from the levels (QMGeo).
    """
    if not mechanism.defines_distribution:
        raise ParameterError("--normalisers", "printed: eqs. (10)–(11) do not give a distribution (the masses do not "
                                              "sum to one), so divergences are undefined; inspect it with 'rdpcalc pmf'")
    orders = collect_alphas(_order_texts(alphas), alpha_ranges)
    engine_obj = make_engine(engine, dps)
    inputs, inputs_text = _input_set(mechanism, grid, margin)
    chosen = choose_neighbours(mechanism, n, neighbours, k, x, x_prime, seed, inputs, inputs_text, k_option)
    points = divergences(mechanism, n, orders, chosen, engine_obj, progress)
    return [_divergence_record(mechanism, n, point, chosen.protocol, chosen.description, engine_obj) for point in points]


def _input_set(mechanism: Mechanism, grid, margin):
    """The inputs searched by ``grid`` or ``margin`` (at most one of them), and their description."""
    if grid is not None and margin is not None:
        raise ParameterError("--margin", "cannot be combined with --grid")
    if grid is not None:
        if isinstance(grid, bool) or not isinstance(grid, int) or not 2 <= grid <= 2001:
            raise ParameterError("--grid", f"must be an integer in [2, 2001], got {grid!r}")
        b = mechanism.bound
        return [-b + 2 * b * Fraction(i, grid - 1) for i in range(grid)], f"--grid: {grid} equally spaced inputs"
    if margin is not None:
        if not hasattr(mechanism, "inputs_with_margin"):
            raise ParameterError("--margin", f"applies to mechanisms whose pmf jumps at its levels (qmgeo), not {mechanism.name}")
        eta = to_fraction(margin, "--margin")
        return list(mechanism.inputs_with_margin(eta)), f"--margin: the inputs {float(eta):g}·Δ away from the levels"
    return None, ""


def moments(mechanism: Mechanism, x, dps: int = 50) -> dict:
    """Mean, bias, variance and MSE of the decoded single-client output at ``x``."""
    with mpmath.workdps(dps):
        values = mechanism.moments(x)
    return {"mechanism": mechanism.name, **mechanism.parameters(), "x": float(mechanism.check_input(x)),
            **{key: float(value) for key, value in values.items()}}


def _divergence_record(mechanism, n, point: DivergencePoint, protocol, description, engine) -> dict:
    record = {"mechanism": mechanism.name, **mechanism.parameters(), "n": n, "alpha": point.alpha}
    record["divergence"] = point.value
    record["neighbours"] = protocol
    record["x"] = float(point.attained.x)
    record["x_prime"] = float(point.attained.x_prime)
    record["k"] = point.attained.k
    record["engine"] = engine.name
    if engine.dps is not None:
        record["dps"] = engine.dps
        record["divergence_digits"] = engine.digits(point.precise)
    record["protocol"] = description
    if point.value == math.inf:
        record["reason"] = _infinity_reason(mechanism, n, point)
    return record


def _infinity_reason(mechanism: Mechanism, n: int, point: DivergencePoint) -> str:
    """One line saying why D = +∞: an output possible under x but impossible under x′."""
    config = point.attained
    if n > 1:
        return "the SecAgg sum under x has an output that is impossible under x′ (support mismatch)"
    with mpmath.workdps(30):
        p, q = mechanism.pmf(config.x), mechanism.pmf(config.x_prime)
    output = next(i for i, (a, b) in enumerate(zip(p, q)) if a > 0 and b == 0)
    return (f"output {output} has probability {mpmath.nstr(p[output], 6)} at x = {float(config.x):g} "
            f"but 0 at x′ = {float(config.x_prime):g}")


def pmf(mechanism: Mechanism, x, dps: int = 50) -> list[dict]:
    """The single-client output pmf at input ``x``: one record per output value."""
    x_value = mechanism.check_input(x, "--x")
    with mpmath.workdps(dps):
        probabilities = mechanism.pmf(x_value)
        rows = []
        for output, p in enumerate(probabilities):
            rows.append(
                {
                    "mechanism": mechanism.name,
                    **mechanism.parameters(),
                    "x": float(x_value),
                    "output": output,
                    "probability": float(p),
                    "log_probability": float(mpmath.log(p)) if p > 0 else -math.inf,
                    "probability_digits": _digits(p, dps),
                }
            )
    return rows


def bound(
    mechanism: Mechanism,
    alphas: Sequence[float | str] | None = None,
    engine: str = "fast",
    dps: int = 50,
    alpha_ranges: Sequence[str] = (),
    **options,
) -> list[dict]:
    """The papers' bounds beside the exact single-client divergences.

    Records of kind ``exact`` give D_α at the extreme pair (b, −b) and the worst over all
    input pairs; records of kind ``bound`` give each closed form with its source, the exact
    value it is checked against and whether it ``holds`` (None for values only reported).
    ``options`` are the mechanism's extra bound parameters (``BOUND_PARAMS``).
    """
    orders = collect_alphas(_order_texts(alphas), alpha_ranges)
    if math.inf not in orders:
        orders.append(math.inf)
    with mpmath.workdps(dps):
        items = mechanism.bounds(orders, **options)
    needed = sorted(set(orders) | {item.alpha for item in items if item.alpha is not None})
    base = {"mechanism": mechanism.name, **mechanism.parameters(), "n": 1}
    records = []
    exact_values: dict = {}
    for target, protocol, label in (("pair", "paper", "pair (±b)"), ("worst", "worst", "worst pair")):
        for row in divergence(mechanism, 1, needed, neighbours=protocol, engine=engine, dps=dps):
            exact_values[(target, row["alpha"])] = row["divergence"]
            if row["alpha"] in orders:
                records.append(
                    {**base, "kind": "exact", "quantity": f"D_α, {label}", "alpha": row["alpha"],
                     "value": row["divergence"], "source": f"{engine} engine", "x": row["x"],
                     "x_prime": row["x_prime"], "compares": "", "holds": None, "note": ""}
                )
    for eta in mechanism.MARGIN_STUDY:
        for row in divergence(mechanism, 1, orders, margin=eta, engine=engine, dps=dps):
            records.append(
                {**base, "kind": "exact", "quantity": f"D_α, worst pair ≥ {float(eta):g}·Δ from the levels",
                 "alpha": row["alpha"], "value": row["divergence"], "source": f"{engine} engine", "x": row["x"],
                 "x_prime": row["x_prime"], "compares": "", "holds": None, "note": ""}
            )
    for item in items:
        value = float(item.value)
        holds, compared = None, ""
        if item.target is not None and item.relation:
            if isinstance(item.target, Exact):
                exact_value, described = float(item.target.value), item.target.text
            elif isinstance(item.target, tuple):
                x, x_prime = item.target
                exact_value = divergence(mechanism, 1, [item.alpha], x=x, x_prime=x_prime, engine=engine,
                                         dps=dps)[0]["divergence"]
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
            {**base, "kind": "bound", "quantity": item.name, "alpha": item.alpha, "value": value,
             "source": item.source, "x": None, "x_prime": None, "compares": compared, "holds": holds,
             "note": item.note}
        )
    return records


def _order_texts(alphas) -> list[str]:
    return [a if isinstance(a, str) else str(a) for a in alphas or []]


def _digits(value, dps: int) -> str:
    """All ``dps`` significant digits of an mpf, or "inf"."""
    return "inf" if value == mpmath.inf else mpmath.nstr(value, dps)
