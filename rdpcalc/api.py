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
import numpy as np

from . import resources
from .accountant import METHODS, PER_ROUND, RELATIONS, check_relation
from .errors import ParameterError
from .exactnum import to_fraction
from .mechanisms import MECHANISMS, Mechanism
from .mechanisms.base import Exact, exact_pmf
from .neighbours import DivergencePoint, choose_neighbours, divergences, peak_costs, require_pairs
from .numerics import make_engine
from .orders import collect_alphas
from .pld import LOSS_CAP, check_discretization
from .worstcase import EXHAUSTIVE_BUDGET, LEVELS_OPTION, Cost, search_costs


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
    budget: int = EXHAUSTIVE_BUDGET,
) -> list[dict]:
    """Rényi divergences of the SecAgg sum of ``n`` clients between neighbouring inputs.

    One record per order α, each with the divergence, the protocol that chose the
    neighbours, and the configuration attaining it: client 1's ``x`` and ``x_prime``, the
    others' inputs ``others`` as [input, count] pairs, and ``k`` (the others at +b, when all
    sit at ±b; else None). The ``worst`` protocol also gives ``certified_upper``, an upper
    bound on the true worst case (equal to ``divergence`` when ``search`` is ``exhaustive`` and
    the pmfs are affine between breakpoints);
    ``budget`` caps the multisets of others searched exhaustively. See
    :mod:`rdpcalc.neighbours` and :mod:`rdpcalc.worstcase`. Orders: ``alphas`` (numbers ≥ 1 or "inf")
    and ``alpha_ranges`` ("START:STOP:COUNT[:log|lin]"); default 1, 2, 10, ∞.
    One client only: ``grid`` searches all pairs of ``grid`` equally spaced inputs instead of
    the breakpoints; ``margin`` η searches the inputs kept ηΔ away from the levels (QMGeo).
    """
    check_distribution(mechanism)
    orders = collect_alphas(_order_texts(alphas), alpha_ranges)
    engine_obj = make_engine(engine, dps, clients=n)
    inputs, inputs_text = _input_set(mechanism, grid, margin)
    chosen = choose_neighbours(mechanism, n, neighbours, k, x, x_prime, seed, inputs, inputs_text, k_option, budget)
    require_costs(peak_costs(mechanism, n, len(orders), chosen, engine_obj, inputs_text.split(":")[0] or None))
    points = divergences(mechanism, n, orders, chosen, engine_obj, progress)
    return [_divergence_record(mechanism, n, point, chosen.protocol, chosen.description, engine_obj) for point in points]


def require_costs(costs: Sequence[Cost]) -> None:
    """Refuse (:func:`rdpcalc.resources.require`) a computation whose estimated parts ``costs``
    add up to more than the memory budget, naming the option of the largest part."""
    largest = max(costs, key=lambda cost: cost.bytes)
    resources.require(sum(cost.bytes for cost in costs), largest.option, largest.what)


def check_distribution(mechanism: Mechanism) -> None:
    if not mechanism.defines_distribution:
        raise ParameterError("--normalisers", "printed: eqs. (10)–(11) do not give a distribution (the masses do not "
                                              "sum to one), so divergences are undefined; inspect it with 'rdpcalc pmf'")


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
    record["k"] = point.attained.k(mechanism.bound)
    record["others"] = [[float(value), count] for value, count in point.attained.others]
    record["certified_upper"] = point.upper
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
        p, q = mechanism.pmf(config.x), mechanism.pmf(config.x_prime)
    output = next((i for i, (a, b) in enumerate(zip(p, q)) if a > 0 and b == 0), None)
    if output is None:
        raise ArithmeticError(f"self-check failed: D = +∞ at x = {float(config.x):g}, x′ = {float(config.x_prime):g}, "
                              "but the pmfs have the same support")
    return (f"output {output} has probability {mpmath.nstr(p[output], 6)} at x = {float(config.x):g} "
            f"but 0 at x′ = {float(config.x_prime):g}")


def pmf(mechanism: Mechanism, x, dps: int = 50) -> list[dict]:
    """The single-client output pmf at input ``x``: one record per output value."""
    x_value = mechanism.check_input(x, "--x")
    with mpmath.workdps(dps):
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


def bound(
    mechanism: Mechanism,
    alphas: Sequence[float | str] | None = None,
    engine: str = "fast",
    dps: int = 50,
    alpha_ranges: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    **options,
) -> list[dict]:
    """The papers' bounds beside the exact single-client divergences.

    Records of kind ``exact`` give D_α at the extreme pair (b, −b) and the worst over all
    input pairs; records of kind ``bound`` give each closed form with its source, the exact
    value it is checked against and whether it ``holds`` (None for values only reported).
    ``options`` are the mechanism's extra bound parameters (``BOUND_PARAMS``). ``progress(done,
    total)`` is called after each exact computation (total: the pair, the worst pair, each
    margin and each pair a bound is checked against, known before the first).
    """
    orders = collect_alphas(_order_texts(alphas), alpha_ranges)
    if math.inf not in orders:
        orders.append(math.inf)
    require_pairs(len(mechanism.breakpoints()), LEVELS_OPTION.get(mechanism.name, "--n"))  # before the closed forms
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
        rows = divergence(mechanism, 1, needed, neighbours=protocol, engine=engine, dps=dps)
        advance()
        for row in rows:
            exact_values[(target, row["alpha"])] = row["divergence"]
            if row["alpha"] in orders:
                records.append(
                    {**base, "kind": "exact", "quantity": f"D_α, {label}", "alpha": row["alpha"],
                     "value": row["divergence"], "source": f"{engine} engine", "x": row["x"],
                     "x_prime": row["x_prime"], "compares": "", "holds": None, "note": ""}
                )
    for eta in mechanism.MARGIN_STUDY:
        rows = divergence(mechanism, 1, orders, margin=eta, engine=engine, dps=dps)
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
        if item.target is not None and item.relation:
            if isinstance(item.target, Exact):
                exact_value, described = float(item.target.value), item.target.text
            elif isinstance(item.target, tuple):
                x, x_prime = item.target
                exact_value = divergence(mechanism, 1, [item.alpha], x=x, x_prime=x_prime, engine=engine,
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


# ----------------------------------------------------------------------------- accounting
#: the δ of the ε-against-δ curve (:meth:`AccountedRun.epsilon_delta_curve`)
CURVE_DELTAS = tuple(10.0 ** -k for k in range(1, 13))


class AccountedRun:
    """A training run composed once, asked for (ε, δ) at several δ: built by :func:`account_run`.

    ``event`` is one round (:class:`rdpcalc.accountant.DpEvent`), ``count`` the rounds composed,
    ``method`` the conversion reported as ``epsilon``; the Rényi route is always computed
    beside it (``epsilon_rdp``), the PLD route when ``method`` is ``pld``."""

    def __init__(self, event, count: int, method: str, base: dict, discretization: float):
        from .accountant import Accountant

        self.event, self.count, self.method, self.base = event, count, method, base
        self.discretization = discretization
        self.rdp = Accountant("rdp").compose(event, count)
        self.pld = Accountant("pld", discretization).compose(event, count) if method == "pld" else None

    def record(self, delta_target: float, epsilon_target: float | None = None) -> dict:
        """One record: the run's inputs, ``epsilon`` by the method, ``epsilon_pld`` and
        ``epsilon_rdp``, the Rényi order attaining ``epsilon_rdp`` (``order``), the per-round
        curve and, with ``epsilon_target``, δ at that ε by each method."""
        from . import accounting as acc

        delta_target = acc.check_delta(delta_target)
        total = self.rdp.curve
        eps_rdp, order = acc.epsilon(total, delta_target)
        eps_rdp, order = float(eps_rdp), None if order is None else float(order)
        eps_pld = None if self.pld is None else self.pld.get_epsilon(delta_target)
        record = {**self.base, "grid_step": None if self.pld is None else self.pld.grid_step,
                  "method": self.method, "delta": delta_target,
                  "epsilon": eps_pld if self.method == "pld" else eps_rdp, "epsilon_pld": eps_pld,
                  "epsilon_rdp": eps_rdp, "order": order}
        if epsilon_target is not None:
            record["epsilon_target"] = float(epsilon_target)
            record["delta_at_epsilon_target_rdp"], record["delta_order"] = acc.delta_at(total, float(epsilon_target))
            record["delta_at_epsilon_target_pld"] = None if self.pld is None else self.pld.get_delta(float(epsilon_target))
            record["delta_at_epsilon_target"] = record[f"delta_at_epsilon_target_{self.method}"]
        per_round = self.event.rdp_curve()
        record["curve"] = [{"alpha": float(a), "per_round": float(r), "total": float(total.at(a))}
                           for a, r in zip(per_round.orders, per_round.values) if math.isfinite(a) and a in total.orders]
        return record

    def epsilon_delta_curve(self, deltas=CURVE_DELTAS) -> list[dict]:
        """ε against δ for the whole run, by each method computed."""
        from . import accounting as acc

        return [{"delta": d, "epsilon_pld": None if self.pld is None else self.pld.get_epsilon(d),
                 "epsilon_rdp": float(acc.epsilon(self.rdp.curve, d)[0])} for d in deltas]

    def epsilon_rounds_curve(self, delta_target: float, points: int = 12,
                             progress: Callable[[int, int], None] | None = None) -> list[dict]:
        """ε at ``delta_target`` after k = 1 … count composed rounds (``points`` values of k,
        spaced geometrically), by each method computed; ``progress(done, total)`` after each k."""
        from . import accounting as acc
        from .accountant import Accountant

        ks = sorted({int(round(k)) for k in np.geomspace(1, self.count, min(points, self.count))} | {self.count})
        rows = []
        for done, k in enumerate(ks):
            _report(progress, done, len(ks))
            rdp = float(acc.epsilon(self.event.rdp_curve().scaled(k), delta_target)[0])
            pld = None if self.pld is None else Accountant("pld", self.discretization).compose(self.event, k)
            rows.append({"rounds": k, "delta": delta_target, "epsilon_pld": None if pld is None else
                         pld.get_epsilon(delta_target), "epsilon_rdp": rdp})
        return rows


def account_run(
    mechanism,
    n: int = 1,
    clients: int | None = None,
    rounds: int = 1,
    dim: int = 1,
    sampling: str = "without-replacement",
    observer: str = "server",
    engine: str = "fast",
    dps: int = 50,
    per_round: str = "certified",
    participation: int | None = None,
    method: str | None = None,
    discretization: float = 1e-4,
    relation: str = "replace-one",
    progress: Callable[[int, int], None] | None = None,
) -> AccountedRun:
    """A whole run of a quantization mechanism, composed: d coordinates per round, n of
    ``clients`` sampled per round, ``rounds`` rounds (see :class:`rdpcalc.accountant.MechanismEvent`).

    ``observer`` (:data:`rdpcalc.accounting.OBSERVERS`) says who sees what: ``server`` (the
    SecAgg sum, and who was sampled), ``release`` (the released sum; the sample hidden, so
    sampling amplifies) or ``local`` (each message, and who sent it). Where the sample is
    known, a client's ε composes over the rounds it takes part in, ``participation`` (default
    ``rounds``: the worst case, a client sampled every round). The neighbouring relation is
    ``relation``: ``replace-one`` (one client's input changes; Poisson sampling, which amplifies
    add/remove neighbours, is refused) or ``add-remove`` (the client present or absent; PLD
    beside the Rényi route, which is +∞ here; the server's sum of n against n − 1 clients, or the
    released sum under Poisson sampling).

    ``method``: ``pld`` (dominating pairs composed as privacy loss distributions; the default)
    or ``rdp``; by default ``rdp`` where the sample is hidden and sampled (no PLD amplification
    bound for sampling without replacement is implemented). ``discretization``: the PLD's grid
    step in nats. ``per_round`` (``certified`` or ``found``) picks the per-round worst case of a
    sum of n > 1 clients.

    The per-round worst case's memory is estimated first (:func:`per_round_costs`) and refused
    beyond the budget. ``progress(done, total)`` is called after each stage: the per-round
    curve, the per-round PLD (method ``pld``), the compositions (total 2 or 3)."""
    from . import accounting as acc
    from .accountant import MechanismEvent

    clients = n if clients is None else clients
    for value, option, low in ((n, "--n", 1), (clients, "--clients", 1), (rounds, "--rounds", 1), (dim, "--dim", 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ParameterError(option, f"must be an integer ≥ {low}, got {value!r}")
    if n > clients:
        raise ParameterError("--n", f"must be at most --clients = {clients} (n of N clients are sampled), got {n}")
    if sampling not in acc.SAMPLING:
        raise ParameterError("--sampling", f"must be one of {', '.join(acc.SAMPLING)}, got {sampling!r}")
    if observer not in acc.OBSERVERS:
        raise ParameterError("--observer", f"must be one of {', '.join(acc.OBSERVERS)}, got {observer!r}")
    if per_round not in PER_ROUND:
        raise ParameterError("--per-round", f"must be one of {', '.join(PER_ROUND)}, got {per_round!r}")
    rate = n / clients
    amplified = observer == "release" and rate < 1
    if relation not in RELATIONS:
        raise ParameterError("--relation", f"must be one of {', '.join(RELATIONS)}, got {relation!r}")
    check_relation(relation, observer, sampling, rate < 1)
    method = _method(method, amplified and relation == "replace-one",
                     "the observer does not know the sample and no PLD amplification bound for sampling without "
                     "replacement is implemented")
    check_discretization(discretization)
    participation = _participation(participation, rounds, observer, rate)
    event = MechanismEvent(mechanism, n=n, clients=clients, dim=dim, observer=observer, per_round=per_round,
                           engine=engine, dps=dps, relation=relation, sampling=sampling)
    if relation == "replace-one" and event.clients_in_sum > 1:
        require_costs(per_round_costs(mechanism, event.clients_in_sum, amplified, engine, dps))
    stages = 3 if method == "pld" else 2
    _report(progress, 0, stages)
    event.coordinate_curve()
    _report(progress, 1, stages)
    if method == "pld":
        event.round_pld(discretization)
        _report(progress, 2, stages)
    base = {"mechanism": mechanism.name, "parameters": mechanism.parameters(), "n": n, "clients": clients,
            "sample_rate": rate, "rounds": rounds, "dim": dim, "observer": observer,
            "observer_text": acc.OBSERVER_TEXT[observer], "relation": relation,
            "sampling": sampling if rate < 1 else "none", "amplified": amplified, "participation": participation,
            "clients_in_sum": event.clients_in_sum,
            "per_round_choice": per_round if event.clients_in_sum > 1 else None}
    run = AccountedRun(event, participation, method, base, discretization)
    base["per_round_curve"] = event.coordinate_curve()[1]
    if method == "pld":
        round_pld = event.round_pld(discretization)
        base.update({"discretization": discretization, "per_round_pld": round_pld.family,
                     "pld_attained": round_pld.attained})
    _report(progress, stages, stages)
    return run


def _report(progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def per_round_costs(mechanism, clients_in_sum: int, amplified: bool, engine: str, dps: int) -> list[Cost]:
    """The parts of the per-round worst case's peak memory (:func:`rdpcalc.worstcase.search_costs`
    at the accountant's orders: :data:`rdpcalc.accounting.ORDERS`, with the integer orders
    where the run is amplified, and ∞)."""
    from . import accounting as acc

    orders = len(set(acc.ORDERS) | set(acc.INTEGER_ORDERS)) if amplified else len(acc.ORDERS)
    return search_costs(mechanism, clients_in_sum, orders + 1, EXHAUSTIVE_BUDGET, dps if engine == "exact" else None)


def _method(method: str | None, amplified: bool, why_not_pld: str) -> str:
    """The method asked for, or the default: pld, except rdp where the run is amplified."""
    if method is None:
        return "rdp" if amplified else "pld"
    if method not in METHODS:
        raise ParameterError("--method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "pld" and amplified:
        raise ParameterError("--method", f"pld: {why_not_pld}; use --method rdp")
    return method


def account(mechanism, n: int = 1, clients: int | None = None, rounds: int = 1, dim: int = 1,
            delta_target: float = 1e-5, epsilon_target: float | None = None, **run) -> dict:
    """(ε, δ) of a whole run at one δ: :func:`account_run` (which takes the other arguments)
    and its :meth:`AccountedRun.record`. The mechanism's parameters are nested under
    ``parameters`` (RQM's Δ is ``parameters.delta``; ``delta`` is the δ of (ε, δ))."""
    from . import accounting as acc

    acc.check_delta(delta_target)
    return account_run(mechanism, n=n, clients=clients, rounds=rounds, dim=dim, **run).record(delta_target,
                                                                                              epsilon_target)


def _participation(participation, rounds: int, observer: str, rate: float) -> int:
    """The rounds a client's ε composes over: all of them where the sample is hidden (the
    amplified curve accounts for the sampling); where it is known, the rounds the client takes
    part in (default: all, the worst case)."""
    if participation is None:
        return rounds
    if isinstance(participation, bool) or not isinstance(participation, int) or not 1 <= participation <= rounds:
        raise ParameterError("--participation", f"must be an integer in [1, --rounds] = [1, {rounds}], got "
                                                f"{participation!r}")
    if observer == "release" and rate < 1:
        raise ParameterError("--participation", "applies where the observer knows the sample (server, local); "
                                                "for release the amplified curve already accounts for the sampling")
    return participation


def account_reference_run(kind: str, sigma: float = 1.0, scale: float = 1.0, sensitivity: float = 1.0,
                          sample_rate: float = 1.0, rounds: int = 1, sampling: str = "poisson",
                          method: str | None = None, discretization: float = 1e-4) -> AccountedRun:
    """The reference mechanisms composed over ``rounds``: ``gaussian`` (σ, ℓ₂ sensitivity;
    Poisson sampling by the exact subsampled-Gaussian curve and, for PLD, its exact hockey-stick
    curves) or ``laplace`` (scale b, ℓ₁ sensitivity; sampling by the general amplification bounds,
    Rényi only). The released output is observed and the sample hidden."""
    from . import accounting as acc
    from .accountant import GaussianEvent, LaplaceEvent

    if not (isinstance(sample_rate, int | float) and 0 < sample_rate <= 1):
        raise ParameterError("--sample-rate", f"must lie in (0, 1], got {sample_rate!r}")
    if not (isinstance(sensitivity, int | float) and 0 < sensitivity < math.inf):
        raise ParameterError("--sensitivity", f"must be a finite number > 0, got {sensitivity!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ParameterError("--rounds", f"must be an integer ≥ 1, got {rounds!r}")
    if sampling not in acc.SAMPLING:
        raise ParameterError("--sampling", f"must be one of {', '.join(acc.SAMPLING)}, got {sampling!r}")
    sampled = sample_rate < 1
    if kind == "gaussian":
        if not (isinstance(sigma, int | float) and 0 < sigma < math.inf):
            raise ParameterError("--sigma", f"must be a finite number > 0, got {sigma!r}")
        params = {"sigma": sigma, "sensitivity": sensitivity}
        exact_sampling = sampled and sampling == "poisson"
        event = GaussianEvent(sigma, sensitivity, sample_rate if exact_sampling else 1.0)
        no_pld = "PLD sampling without replacement is not implemented for the reference mechanisms"
    elif kind == "laplace":
        if not (isinstance(scale, int | float) and 0 < scale < math.inf):
            raise ParameterError("--scale", f"must be a finite number > 0, got {scale!r}")
        params = {"scale": scale, "sensitivity": sensitivity}
        exact_sampling = False
        event = LaplaceEvent(scale, sensitivity)
        no_pld = "PLD sampling is implemented for the Gaussian with Poisson sampling only"
    else:
        raise ParameterError("MECHANISM", f"must be gaussian or laplace, got {kind!r}")
    if sampled and not exact_sampling:
        event = _AmplifiedEvent(event, sample_rate, sampling)
    method = _method(method, sampled and not exact_sampling, no_pld)
    check_discretization(discretization)
    base = {"mechanism": kind, "parameters": params, "n": 1, "clients": 1, "sample_rate": sample_rate,
            "rounds": rounds, "dim": 1, "observer": "release",
            "observer_text": "release: the output is released, the sample hidden (reference mechanism)",
            "relation": "add-remove (ℓ sensitivity)" if sampling == "poisson" else "replace-one (ℓ sensitivity)",
            "sampling": sampling if sampled else "none", "amplified": sampled, "participation": rounds,
            "clients_in_sum": None, "per_round_choice": None, "per_round_curve": "the mechanism's exact Rényi curve"}
    if method == "pld":
        base.update({"discretization": discretization, "per_round_pld": f"the exact hockey-stick curve ({event.describe()})",
                     "pld_attained": []})
    return AccountedRun(event, rounds, method, base, discretization)


class _AmplifiedEvent:
    """A reference mechanism sampled by a general amplification bound (Rényi only; the
    ``pld`` method is refused before one is built)."""

    def __init__(self, event, rate: float, sampling: str):
        self.event, self.rate, self.sampling = event, rate, sampling

    def rdp_curve(self):
        from . import accounting as acc

        orders = np.array(sorted(set(acc.ORDERS) | set(acc.INTEGER_ORDERS)))
        return acc.amplify(self.event.rdp_curve(orders), self.rate, self.sampling)

    def describe(self) -> str:
        return f"{self.event.describe()}, {self.sampling} at {self.rate:g}"


def account_reference(kind: str, delta_target: float = 1e-5, epsilon_target: float | None = None, **run) -> dict:
    """(ε, δ) of a reference mechanism at one δ (:func:`account_reference_run`)."""
    from . import accounting as acc

    acc.check_delta(delta_target)
    return account_reference_run(kind, **run).record(delta_target, epsilon_target)


#: what ``calibrate`` can solve for: mechanism → parameter → (low, high, log scale), the ends
#: given as functions of the other parameters (scale parameters are multiples of c or C_q)
SOLVABLE = {
    "rqm": {"q": lambda p: (1e-6, 1 - 1e-6, False), "delta": lambda p: (1e-3 * float(p["c"]), 1e3 * float(p["c"]), True)},
    "pbm": {"theta": lambda p: (1e-6, 0.5 - 1e-6, False)},
    "qgauss": {"sigma": lambda p: (1e-3 * float(p["clip"]), 1e3 * float(p["clip"]), True)},
    "qmgeo": {"p": lambda p: (1e-6, 1.0, False)},
    "corbin": {"eps_p": lambda p: (1e-4, 50.0, True)},
    "gaussian": {"sigma": lambda p: (1e-2, 1e4, True)},
    "laplace": {"scale": lambda p: (1e-3, 1e5, True)},
}


#: the most evaluations of the whole run's ε that calibrate's solver makes between the ends
CALIBRATE_EVALUATIONS = 60


def calibrate(name: str, params: dict, solve: str, target_epsilon: float,
              progress: Callable[[int, int], None] | None = None, **run) -> dict:
    """The value of parameter ``solve`` at which the whole run's ε meets ``target_epsilon``
    (at δ = run["delta_target"]), by regula falsi (:func:`rdpcalc.accounting.solve_monotone`);
    ε must be monotone in that parameter (the target is checked to lie between the ends).
    Returns the accounted record at the value found, on the safe side (ε ≤ target), with
    ``solved`` and ``value``. ``run``: the arguments of :func:`account`
    (or, for gaussian/laplace, of :func:`account_reference`). ``progress(done, total)`` is called
    before each evaluation of ε; the total (62: the two ends and at most CALIBRATE_EVALUATIONS)
    is an upper bound, reached at the end. The record returned is the one computed at the value
    found. Where ε jumps to +∞ short of the target (PLD's loss cap), it is refused."""
    from .accounting import solve_monotone

    if name not in SOLVABLE or solve not in SOLVABLE[name]:
        choices = ", ".join(SOLVABLE.get(name, {})) or "nothing"
        raise ParameterError("--solve", f"for {name} must be one of: {choices}; got {solve!r}")
    if not (isinstance(target_epsilon, int | float) and target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise ParameterError("--target-eps", f"must be a finite number > 0, got {target_epsilon!r}")
    low, high, log_scale = SOLVABLE[name][solve](params)

    def run_at(value: float) -> dict:
        if name in ("gaussian", "laplace"):
            return account_reference(name, **{**params, solve: value}, **run)
        return account(make_mechanism(name, **{**params, solve: value}), **run)

    total = 2 + CALIBRATE_EVALUATIONS  # the ends and the solver's evaluations, at most
    records: dict[float, dict] = {}  # the value returned was evaluated: its record is kept

    def epsilon_at(value: float) -> float:
        _report(progress, len(records) + 1, total)
        records[value] = run_at(value)
        return records[value]["epsilon"]

    at_low, at_high = epsilon_at(low), epsilon_at(high)
    if not (min(at_low, at_high) <= target_epsilon <= max(at_low, at_high)):
        raise ParameterError("--target-eps", f"no {solve} in [{low:g}, {high:g}] meets ε = {target_epsilon:g}: ε runs "
                                             f"from {at_low:.6g} to {at_high:.6g} over that range")
    value = solve_monotone(epsilon_at, low, high, target_epsilon, log_scale, (at_low, at_high),
                           evaluations=CALIBRATE_EVALUATIONS)
    record = records[value]
    _report(progress, total, total)
    if math.inf in (at_low, at_high) and record["epsilon"] < target_epsilon * (1 - 1e-3):
        raise ParameterError("--target-eps", f"ε jumps from {record['epsilon']:.6g} to +∞ at {solve} ≈ {value:.6g}, "
                                             f"below the target {target_epsilon:g} (by {record['method']}: a privacy "
                                             f"loss beyond {LOSS_CAP:g} nats in one round counts as +∞); use "
                                             "--method rdp")
    record["solved"], record["value"], record["target_epsilon"] = solve, value, target_epsilon
    record["monotone"] = "increasing" if at_high > at_low else "decreasing"
    return record


# ----------------------------------------------------------------------------- layered quantizers
def layered_divergence(noise: str, sigma=1, sensitivity=1, n: int = 1, alphas=None, alpha_ranges=()) -> list[dict]:
    """D_α of a layered quantizer's output: its error is exactly the target noise, so this is
    the Gaussian or Laplace mechanism's divergence at shift Δ = ``sensitivity``; Irwin–Hall
    noise (n clients) has +∞ for every α ≥ 1. Each +∞ comes with its one-line reason."""
    from .layered import noise as layered_noise

    orders = collect_alphas(_order_texts(alphas), alpha_ranges)
    records = []
    with mpmath.workdps(30):
        for alpha in orders:
            value, reason = layered_noise.renyi_divergence(noise, alpha, sigma, sensitivity, n)
            record = {"mechanism": "layered", "noise": noise, "sigma": float(to_fraction(sigma, "--sigma")),
                      "sensitivity": float(to_fraction(sensitivity, "--sensitivity")), "n": n, "alpha": alpha,
                      "divergence": math.inf if value == mpmath.inf else float(value),
                      "neighbours": "outputs x + noise vs x + Δ + noise (exact error distribution)"}
            if reason:
                record["reason"] = reason
            records.append(record)
    return records


def layered_bits(noise: str, sigma=1, t=64, n: int = 1) -> list[dict]:
    """Communication cost in bits per client for inputs spread over an interval of length t:
    the individual layered quantizers (exact H(M|S) for X ~ U(0, t), the bounds (4), (5),
    Prop. 1, the fixed length of the shifted quantizer with Prop. 2's minimal step), and for
    n clients the aggregate Gaussian mechanism (Theorems 1 + 2) and the Irwin–Hall mechanism."""
    from .layered import bits
    from .layered import noise as layered_noise

    noise = layered_noise.check_noise(noise)
    sigma_value, t_value = layered_noise.check_sigma(sigma), bits.check_t(t)
    n = layered_noise.check_clients(n)
    base = {"mechanism": "layered", "noise": noise, "sigma": sigma_value, "t": t_value, "n": n}

    def row(quantity, value, unit, source):
        return {**base, "quantity": quantity, "value": float(value), "unit": unit, "source": source}

    eta = layered_noise.minimal_shifted_step(noise, sigma_value)
    records = [
        row("minimal step of the shifted quantizer η_Z", eta, f"= {eta / sigma_value:.6f}·σ", "Prop. 2"),
        row("h(D_Z), layered entropy of the direct step", layered_noise.direct_entropy(noise, sigma_value), "bits",
            "§3 (derived closed form)"),
        row("h(W_Z), of the shifted step", layered_noise.shifted_entropy(noise, sigma_value), "bits", "Prop. 1"),
        row("lower bound log₂ t + h(D_Z)", bits.lower_bound(noise, sigma_value, t_value), "bits", "eq. (4)"),
        row("H(M|S), direct layered, exact", bits.conditional_entropy(noise, "direct", sigma_value, t_value), "bits",
            "Def. 4"),
        row("upper bound, direct", bits.direct_upper_bound(noise, sigma_value, t_value), "bits", "eq. (5)"),
        row("H(M|S), shifted layered, exact", bits.conditional_entropy(noise, "shifted", sigma_value, t_value), "bits",
            "Def. 5"),
        row("upper bound, shifted", bits.shifted_upper_bound(noise, sigma_value, t_value), "bits", "Prop. 1"),
        row("fixed length, shifted ⌈log₂(2 + t/η_Z)⌉", bits.shifted_fixed_length(noise, sigma_value, t_value), "bits",
            "Prop. 2"),
    ]
    if noise == layered_noise.GAUSS and n > 1:
        per_client = sigma_value * math.sqrt(n)
        records += [
            row("individual direct, per client N(0, nσ²), exact", bits.conditional_entropy(noise, "direct", per_client,
                                                                                            t_value), "bits", "Def. 2, 4"),
            row("aggregate Gaussian, Theorems 1 + 2 bound", bits.aggregate_bits_bound(n, sigma_value, t_value), "bits",
                "Theorems 1–2"),
            row("Irwin–Hall, fixed length ⌈log₂(t/w + 3)⌉", bits.irwin_hall_fixed_length(n, sigma_value, t_value), "bits",
                "§4.5"),
            row("Irwin–Hall, entropy at step w = 2σ√(3n)", bits.irwin_hall_entropy(n, sigma_value, t_value), "bits",
                "§4.2"),
        ]
    return records
