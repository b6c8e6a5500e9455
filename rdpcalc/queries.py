"""Single-mechanism queries: build a mechanism, its Rényi divergences between neighbouring
inputs, its output pmf and the moments of its decoded output.

Every function returns *records*: flat dicts with the mechanism, its parameters and the numbers,
ready for a table, JSON or CSV; every value is a Python ``float``, ``int``, ``bool``, ``str`` or
``None`` (lists of them for ``others``), and +∞ is ``math.inf``.

>>> import rdpcalc
>>> mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
>>> [round(r["divergence"], 6) for r in rdpcalc.divergence(mech, alphas=[2, 10])]
[5.063546, 5.368399]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import mpmath

from .errors import ParameterError
from .mechanisms import MECHANISMS, Mechanism
from .mechanisms.base import exact_pmf
from .numerics import check_dps, make_engine
from .orders import collect_alphas
from .worstcase import tails
from .worstcase.neighbours import CLIENTS_IN_SUM, DivergencePoint, NeighbourOptions, choose_neighbours, divergences


def make_mechanism(name: str, **params) -> Mechanism:
    """The mechanism called ``name`` with the given parameters (keywords: the papers' symbols).

    Parameters:
        name: one of :data:`rdpcalc.MECHANISMS` (``rqm``, ``pbm``, ``qgauss``, ``qmgeo``, ``corbin``).
        params: the mechanism's parameters, e.g. ``c``, ``delta``, ``m``, ``q`` for RQM; numbers
            may be given as ints, floats, decimal strings or Fractions (strings are read exactly).

    A value of None is the same as leaving the parameter out. :class:`~rdpcalc.ParameterError`
    names ``mechanism`` for an unknown name, else the parameter that is missing, unknown or out
    of range."""
    if name not in MECHANISMS:
        raise ParameterError("mechanism", f"must be one of {', '.join(MECHANISMS)}, got {name!r}")
    cls = MECHANISMS[name]
    unknown = sorted(set(params) - {param.name for param in cls.PARAMS})
    if unknown:
        raise ParameterError(unknown[0], f"is not a parameter of {name}")
    missing = [param for param in cls.PARAMS if param.required and params.get(param.name) is None]
    if missing:
        raise ParameterError(missing[0].name, f"is required for {name}: {missing[0].range_text()}")
    return cls(**{key: value for key, value in params.items() if value is not None})


def divergence(
    mechanism: Mechanism,
    *,
    n: int = 1,
    alphas: Sequence[float | str] | None = None,
    alpha_ranges: Sequence[str] = (),
    choose: NeighbourOptions = NeighbourOptions(),
    engine: str = "fast",
    dps: int = 50,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict]:
    """Rényi divergences D_α(P ‖ Q) = log Σ_y P(y)^α Q(y)^(1−α) / (α − 1) (Mironov 2017, "Rényi
    Differential Privacy", arXiv:1702.07476; KL at α = 1, max log P/Q at ∞) of the SecAgg
    sum of ``n`` clients between neighbouring inputs: client 1 at x against x′, the others fixed.

    Parameters:
        mechanism: a mechanism (:func:`make_mechanism`).
        n: clients in the SecAgg sum, ≥ 1.
        alphas: orders, numbers ≥ 1 or "inf"; ``alpha_ranges``: "START:STOP:COUNT[:log|lin]"
            strings. Neither given: 1, 2, 10, ∞.
        choose: how the neighbours are chosen (:class:`NeighbourOptions`: ``worst``, ``pm-c``
            or ``paper``; k; client 1's pair; a grid or margin; the search's budget and
            certificate); the default is the certified worst case.
        engine: ``fast`` (float64, log domain) or ``exact`` (MPFR at ``dps`` digits).
        progress: called as ``progress(done, total)`` as the computation advances.

    One record per order, with the divergence, the protocol that chose the neighbours and the
    configuration attaining it: ``x``, ``x_prime``, the others as [input, count] pairs
    (``others``) and ``others_plus`` (k, when all others sit at ±b; else None). ``worst`` also
    gives ``certified_upper``, an upper bound on the true worst case (equal to ``divergence``
    where ``search`` is ``exhaustive`` and the pmfs are affine between breakpoints). A +∞ comes
    with its ``reason``.

    >>> import rdpcalc
    >>> mech = rdpcalc.make_mechanism("pbm", c=1, trials=4, theta="0.25")
    >>> pair = rdpcalc.NeighbourOptions(x=1, x_prime=-1)
    >>> round(rdpcalc.divergence(mech, alphas=[2], choose=pair)[0]["divergence"], 6)
    3.389191
    """
    check_distribution(mechanism)
    orders = collect_alphas(alphas, alpha_ranges)
    if not isinstance(choose, NeighbourOptions):
        raise ParameterError("choose", f"must be a NeighbourOptions (rdpcalc.NeighbourOptions), got {choose!r}")
    n = CLIENTS_IN_SUM.convert(n)
    chosen = choose_neighbours(mechanism, n, choose)
    engine_obj = make_engine(engine, dps, clients=n, modulus=mechanism.modulus)  # after choose_neighbours checked n
    points = divergences(mechanism, n, orders, chosen, engine_obj, progress)
    records = [_divergence_record(mechanism, n, point, chosen.protocol, chosen.description, engine_obj)
               for point in points]
    if tails.has_tails(mechanism):
        ends = tails.brackets(mechanism, n, orders, [point.value for point in points],
                              [point.attained for point in points], chosen.protocol == "worst")
        records = [_bracketed(mechanism, record, lower, upper) for record, (lower, upper) in zip(records, ends)]
    return records


def _bracketed(mechanism: Mechanism, record: dict, lower: float, upper: float) -> dict:
    """A record of a mechanism with unbounded noise: the engines' value is the windowed one
    (``windowed_divergence``); ``divergence`` and ``certified_upper`` are the certified bracket
    of the true value (:mod:`rdpcalc.worstcase.tails`)."""
    out = dict(record)
    out["windowed_divergence"] = record["divergence"]
    if "divergence_digits" in out:
        out["windowed_divergence_digits"] = out.pop("divergence_digits")
    out["divergence"] = lower
    out["certified_upper"] = upper
    out["log10_tail_mass"] = mechanism.log_tail_mass_bound() / math.log(10)
    out.pop("reason", None)
    if lower == math.inf:
        out["reason"] = tails.INFINITE_REASON
    return out


def check_distribution(mechanism: Mechanism) -> None:
    """Refuse a reading of a paper whose "pmf" does not sum to one: its divergences are undefined."""
    if not mechanism.defines_distribution:
        raise ParameterError("normalisers", "printed: eqs. (10)–(11) do not give a distribution (the masses do not sum "
                                            "to one), so divergences are undefined; inspect it with `pmf`")


def moments(mechanism: Mechanism, *, x, dps: int = 50) -> dict:
    """Mean, bias, variance and mean squared error of the server's decoded value of one client's
    output at input ``x``, computed exactly from the pmf (and ``mass``, the pmf's total).

    Parameters:
        mechanism: a mechanism (:func:`make_mechanism`).
        x: the input, in [−b, b].
        dps: the decimal digits of the computation (mpmath), 15 … 1000."""
    x_value = mechanism.check_input(x, "x")
    with mpmath.workdps(check_dps(dps)):
        values = mechanism.moments(x_value)
    return {"mechanism": mechanism.name, **mechanism.parameters(), "x": float(x_value),
            **{key: float(value) for key, value in values.items()}}


def _divergence_record(mechanism, n, point: DivergencePoint, protocol, description, engine) -> dict:
    record = {"mechanism": mechanism.name, **mechanism.parameters(), "n": n, "alpha": float(point.alpha)}
    record["divergence"] = float(point.value)
    record["neighbours"] = protocol
    record["x"] = float(point.attained.x)
    record["x_prime"] = float(point.attained.x_prime)
    record["others_plus"] = point.attained.k(mechanism.bound)
    record["others"] = [[float(value), int(count)] for value, count in point.attained.others]
    record["certified_upper"] = None if point.upper is None else float(point.upper)
    record["search"] = point.search
    if point.certificate:
        record["certificate"] = point.certificate
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
    with mpmath.workdps(60):
        p, q = exact_pmf(mechanism, config.x), exact_pmf(mechanism, config.x_prime)
    output = next((i for i, (a, b) in enumerate(zip(p, q)) if a > 0 and b == 0), None)
    if output is None:
        raise ArithmeticError(f"self-check failed: D = +∞ at x = {float(config.x):g}, x′ = {float(config.x_prime):g}, "
                              "but the pmfs have the same support")
    return (f"output {output} has probability {mpmath.nstr(p[output], 6)} at x = {float(config.x):g} "
            f"but 0 at x′ = {float(config.x_prime):g}")


def pmf(mechanism: Mechanism, *, x, dps: int = 50) -> list[dict]:
    """The single-client output pmf at input ``x``: one record per output value, with its
    probability, its natural log (−∞ for 0) and all ``dps`` digits of it.

    Parameters:
        mechanism: a mechanism (:func:`make_mechanism`).
        x: the input, in [−b, b].
        dps: the decimal digits of the computation (mpmath), 15 … 1000."""
    x_value = mechanism.check_input(x, "x")
    with mpmath.workdps(check_dps(dps)):
        probabilities = exact_pmf(mechanism, x_value)
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



def _digits(value, dps: int) -> str:
    """All ``dps`` significant digits of an mpf, or "inf"."""
    return "inf" if value == mpmath.inf else mpmath.nstr(value, dps)
