"""Whole training runs: (ε, δ) of a quantization mechanism or a reference mechanism composed over
the rounds of a run, and the calibration of one parameter to a target ε.

Two routes convert the composed privacy loss to (ε, δ): the Rényi curve (Mironov 2017, "Rényi
Differential Privacy", arXiv:1702.07476; converted by Canonne, Kamath & Steinke 2020, "The
Discrete Gaussian for Differential Privacy", arXiv:2004.00010, Prop. 12) and, by default,
privacy loss distributions of dominating pairs (Zhu, Dong & Wang 2022, "Optimal Accounting of
Differential Privacy via Characteristic Function", arXiv:2106.08567; Doroshenko, Ghazi, Kamath,
Kumar & Manurangsi 2022, "Connect the Dots: Tighter Discrete Approximations of Privacy Loss
Distributions", arXiv:2207.04380). See :mod:`rdpcalc.accountant` for the events composed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .accountant import METHOD, Accountant, GaussianEvent, LaplaceEvent, MechanismEvent, round_orders
from .errors import ParameterError
from .mechanisms import MECHANISMS, Mechanism
from .mechanisms.base import SolveRange
from .params import Param, split_record
from .privacy import rdp as acc
from .privacy.pld import DISCRETIZATION, LOSS_CAP, check_discretization
from .queries import make_mechanism
from .version import VERSION
from .worstcase import secagg, tails

#: the δ of the ε-against-δ curve (:meth:`AccountedRun.epsilon_delta_curve`)
CURVE_DELTAS = tuple(10.0 ** -k for k in range(1, 13))
#: the reference mechanisms (:func:`account_reference`)
REFERENCES = ("gaussian", "laplace")
#: a run's rounds and the rounds a client takes part in, declared once
ROUNDS = Param("rounds", "integer", "Training rounds, {range}.", default=1, low=1)
PARTICIPATION = Param("participation", "integer", "server/local: the rounds the client takes part in, 1 … ROUNDS "
                      "(default all: the worst case).", low=1, optional=True)
#: an ε to meet (calibrate), or to report δ at (account)
TARGET_EPSILON = Param("dp_epsilon", "float", "The ε to meet, {range}.", low=0, low_open=True)
REPORTED_EPSILON = Param("dp_epsilon", "float", "Also report δ at this ε, {range}.", low=0, optional=True)
#: the reference mechanisms' parameters
SIGMA = Param("sigma", "float", "Noise standard deviation σ {range}.", low=0, low_open=True)
SCALE = Param("scale", "float", "Laplace scale b {range}.", low=0, low_open=True)
SENSITIVITY = Param("sensitivity", "float", "Sensitivity Δ {range} (ℓ₂ / ℓ₁).", default=1.0, low=0, low_open=True)
SAMPLE_RATE = Param("sample_rate", "float", "Sampling rate in {range}.", default=1.0, low=0, high=1, low_open=True)
#: where calibrate searches the reference mechanisms' noise (the quantization mechanisms declare
#: theirs on their parameters, ``Param(..., solve=...)``)
REFERENCE_SOLVABLE = {
    "gaussian": {"sigma": SolveRange(1e-2, 1e4, log=True)},
    "laplace": {"scale": SolveRange(1e-3, 1e5, log=True)},
}
#: the most evaluations of the whole run's ε that calibrate's solver makes between the ends
CALIBRATE_EVALUATIONS = 60


#: the numbers of rounds at which :meth:`Run.epsilon_rounds_curve` composes the run again (default)
ROUNDS_CURVE_POINTS = 12

class AccountedRun:
    """A training run composed once, asked for (ε, δ) at several δ: built by :func:`account_run`
    or :func:`account_reference_run`.

    ``event`` is one round (:class:`rdpcalc.accountant.DpEvent`), ``count`` the rounds composed,
    ``method`` the conversion reported as ``epsilon``; the Rényi route is always computed
    beside it (``epsilon_rdp``), the PLD route when ``method`` is ``pld`` (``pld``: that
    composition, where the caller made it already).

    The Rényi route converts each δ (and ε) asked as the accountant does: after computing one
    round's certificate at the order where the values attained convert best, too
    (:meth:`rdpcalc.accountant.Accountant.get_epsilon`)."""

    def __init__(self, event, count: int, method: str, base: dict, discretization: float,
                 pld: Accountant | None = None):
        self.event, self.count, self.method, self.base = event, count, method, base
        self.discretization = discretization
        self.rdp = Accountant("rdp").compose(event, count)
        if pld is None and method == "pld":
            pld = Accountant("pld", discretization).compose(event, count)
        self.pld = pld

    def record(self, *, dp_delta: float, dp_epsilon: float | None = None) -> dict:
        """One record: the run's inputs, ``epsilon_pld`` and ``epsilon_rdp`` at δ = ``dp_delta``
        (the key ``dp_delta``), ``epsilon`` the smaller of the two (both are upper bounds on the
        run's ε; ``epsilon_method`` names the one that gave it), where ``epsilon_pld`` is +∞ why
        (``epsilon_pld_infinite_because``, else None), the Rényi order attaining
        ``epsilon_rdp`` (``order``), the per-round and total Rényi curve (``curve``) and, with
        ``dp_epsilon``, δ at that ε by each method (``dp_delta_at_dp_epsilon``: the smaller), and
        the sentence to quote (``report``, :func:`report_line`)."""
        dp_delta = acc.check_delta(dp_delta)
        self.rdp.get_epsilon(dp_delta)  # (where the certificate is computed at the order of the conversion)
        if dp_epsilon is not None:
            self.rdp.get_delta(_check_epsilon(dp_epsilon, strict=False))
        if hasattr(self.event, "coordinate_curve"):  # (what the curve is, that order included)
            self.base["per_round_curve"] = self.event.coordinate_curve()[1]
        total = self.rdp.curve
        eps_rdp, order = acc.epsilon(total, dp_delta)
        eps_pld = None if self.pld is None else float(self.pld.get_epsilon(dp_delta))
        reported = "pld" if eps_pld is not None and eps_pld <= eps_rdp else "rdp"
        record = {**self.base, "grid_step": None if self.pld is None else float(self.pld.grid_step),
                  "method": self.method, "dp_delta": dp_delta,
                  "epsilon": eps_pld if reported == "pld" else float(eps_rdp), "epsilon_method": reported,
                  "epsilon_pld": eps_pld, "epsilon_rdp": float(eps_rdp), "order": None if order is None else float(order),
                  "epsilon_pld_infinite_because": self.pld.infinity_reason(dp_delta) if eps_pld == math.inf else None}
        if dp_epsilon is not None:
            target = _check_epsilon(dp_epsilon, strict=False)
            delta_rdp, delta_order = acc.delta_at(total, target)
            record["dp_epsilon"] = target
            record["dp_delta_at_dp_epsilon_rdp"] = float(delta_rdp)
            record["dp_delta_order"] = None if delta_order is None else float(delta_order)
            record["dp_delta_at_dp_epsilon_pld"] = None if self.pld is None else float(self.pld.get_delta(target))
            record["dp_delta_at_dp_epsilon"] = min(value for value in (record["dp_delta_at_dp_epsilon_rdp"],
                                                                       record["dp_delta_at_dp_epsilon_pld"])
                                                   if value is not None)
        record["report"] = report_line(record) if {"relation", "observer"} <= set(record) else None  # a bare run
        per_round = self.event.rdp_curve()
        record["curve"] = [{"alpha": float(a), "per_round": float(r), "total": float(total.at(a))}
                           for a, r in zip(per_round.orders, per_round.values) if math.isfinite(a) and a in total.orders]
        return record

    def records(self, *, dp_deltas: Sequence[float], dp_epsilon: float | None = None) -> list[dict]:
        """:meth:`record` at each δ of ``dp_deltas``, all on one Rényi curve: the certificate is
        computed at every δ's conversion order (and ``dp_epsilon``'s) first, so that a record
        is not left on a curve that a later δ tightens, and ε is non-increasing in δ across
        them, as the mathematics has it."""
        for dp_delta in dp_deltas:
            self.rdp.get_epsilon(acc.check_delta(dp_delta))
        if dp_epsilon is not None:
            self.rdp.get_delta(_check_epsilon(dp_epsilon, strict=False))
        return [self.record(dp_delta=dp_delta, dp_epsilon=dp_epsilon) for dp_delta in dp_deltas]

    def epsilon_delta_curve(self, *, dp_deltas=CURVE_DELTAS) -> list[dict]:
        """ε against δ for the whole run, by each method computed, at each δ of ``dp_deltas``."""
        return [{"dp_delta": float(d), "epsilon_pld": None if self.pld is None else float(self.pld.get_epsilon(d)),
                 "epsilon_rdp": float(acc.epsilon(self.rdp.curve, d)[0])} for d in dp_deltas]

    def epsilon_rounds_curve(self, *, dp_delta: float, points: int = ROUNDS_CURVE_POINTS,
                             progress: Callable[[int, int], None] | None = None) -> list[dict]:
        """ε at δ = ``dp_delta`` after k = 1 … count composed rounds (``points`` values of k,
        spaced geometrically), by each method computed; ``progress(done, total)`` after each k."""
        dp_delta = acc.check_delta(dp_delta)
        ks = sorted({int(round(k)) for k in np.geomspace(1, self.count, min(points, self.count))} | {self.count})
        rows = []
        per_round = self.event.rdp_curve()
        for done, k in enumerate(ks):
            _report(progress, done, len(ks))
            rdp = float(acc.epsilon(per_round.scaled(k), dp_delta)[0])
            pld = None if self.pld is None else Accountant("pld", self.discretization).compose(self.event, k)
            rows.append({"rounds": k, "dp_delta": dp_delta, "epsilon_pld": None if pld is None else
                         float(pld.get_epsilon(dp_delta)), "epsilon_rdp": rdp})
        return rows


def report_line(record: dict) -> str:
    """The sentence a paper can quote for an accounting record: ε at δ, the neighbouring
    relation, the observer, the method that gave ε (the smaller of two, where both ran), whether
    it is certified, and the rdpcalc version."""
    epsilon = "+∞" if record["epsilon"] == math.inf else f"{record['epsilon']:.12g}"
    certain = record.get("per_round_choice") in (None, "certified")
    both = " (the smaller of pld and rdp" + (", both upper bounds)" if certain else ")")
    method = f"by {record['epsilon_method']}" + (both if record["epsilon_pld"] is not None else "")
    certified = ("a certified upper bound" if certain else
                 "NOT certified: the per-round worst case is the one found, a lower bound")
    return (f"(ε, δ) = ({epsilon}, {record['dp_delta']:g}), {record['relation']} neighbours, observer "
            f"{record['observer']}, {method}, {certified}; rdpcalc {VERSION}")


def check_rounds(rounds) -> int:
    """``rounds`` converted and checked (:data:`ROUNDS`: an integer ≥ 1)."""
    return ROUNDS.convert(rounds)


@dataclass(frozen=True)
class RunOptions:
    """A training run around a mechanism, as data (what travels together from the command
    line, a sweep or :func:`account` to :func:`account_run` and :func:`rdpcalc.compare.compare`):

    * ``n``: clients sampled per round (their SecAgg sum is one round's output); ``clients``:
      all clients (default ``n``: no sampling); ``rounds``; ``dim``: coordinates per round,
      each quantized independently;
    * ``sampling``: ``without-replacement`` (n of ``clients``) or ``poisson`` (rate n/clients);
    * ``observer``: who sees what (:data:`rdpcalc.privacy.rdp.OBSERVERS`): ``server`` (the
      SecAgg sum, and who was sampled), ``release`` (the released sum; the sample hidden, so
      sampling amplifies) or ``local`` (each message, and who sent it);
    * ``relation``: ``replace-one`` (one client's input changes; Poisson sampling is refused)
      or ``add-remove`` (the client present or absent; the Rényi route is +∞ here, PLD beside
      it: the server's sum of n against n − 1 clients, or the released sum under Poisson
      sampling);
    * ``participation``: where the sample is known, the rounds a client takes part in (default
      ``rounds``: the worst case, a client sampled every round).

    ``rounds`` is checked on construction; the rest where the run is accounted (with the
    mechanism's event, :class:`rdpcalc.accountant.MechanismEvent`)."""

    n: int = 1
    clients: int | None = None
    rounds: int = 1
    dim: int = 1
    sampling: str = "without-replacement"
    observer: str = "server"
    relation: str = "replace-one"
    participation: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "rounds", check_rounds(self.rounds))

    @classmethod
    def split(cls, options: dict) -> tuple[RunOptions, dict]:
        """The run's options taken out of ``options`` (keyword → value), and the rest."""
        return split_record(cls, options)


def account_run(
    mechanism: Mechanism,
    *,
    run: RunOptions = RunOptions(),
    per_round: str = "certified",
    method: str | None = None,
    discretization: float = DISCRETIZATION,
    engine: str = "fast",
    dps: int = 50,
    progress: Callable[[int, int], None] | None = None,
) -> AccountedRun:
    """A whole run of a quantization mechanism, composed (see :class:`rdpcalc.accountant.MechanismEvent`).

    Parameters:
        mechanism: a mechanism (:func:`rdpcalc.make_mechanism`).
        run: the run (:class:`RunOptions`: clients, sampling, rounds, coordinates, observer,
            relation, participation).
        per_round: the per-round worst case of a sum of n > 1 clients: ``certified`` (its
            certified upper bound) or ``found`` (the largest value the search found, a lower
            bound of the worst case: not a guarantee).
        method: ``pld`` (dominating pairs composed as privacy loss distributions; the default)
            or ``rdp``; by default ``rdp`` where the sample is hidden and sampled without
            replacement (no PLD amplification bound for it is implemented).
        discretization: the PLD's grid step in nats.
        engine, dps: the engine of the per-round divergences, as for :func:`rdpcalc.divergence`.
        progress: called as ``progress(done, total)`` after each stage: the per-round curve,
            the per-round PLD (method ``pld``), the compositions (total 2 or 3).

    The per-round worst case's memory is estimated before it runs and refused beyond the budget
    (:func:`rdpcalc.accountant.per_round_curve`). Ask the returned :class:`AccountedRun` for records at each δ."""
    if not isinstance(run, RunOptions):
        raise ParameterError("run", f"must be a RunOptions (rdpcalc.RunOptions), got {run!r}")
    # the event checks n, clients, dim, observer, per_round, relation and sampling
    event = _run_event(mechanism, run, per_round, engine, dps)
    method = _method(method, event.amplified and run.relation == "replace-one",
                     "the observer does not know the sample and no PLD amplification bound for sampling without "
                     "replacement is implemented")
    check_discretization(discretization)
    return _accounted(event, run, method, discretization, progress)


def _run_event(mechanism: Mechanism, run: RunOptions, per_round: str = "certified", engine: str = "fast",
               dps: int = 50, certified_orders: str = "all") -> MechanismEvent:
    return MechanismEvent(mechanism, n=run.n, clients=run.clients, dim=run.dim, observer=run.observer,
                          per_round=per_round, engine=engine, dps=dps, relation=run.relation, sampling=run.sampling,
                          certified_orders=certified_orders)


def _accounted(event: MechanismEvent, run: RunOptions, method: str, discretization: float,
               progress: Callable[[int, int], None] | None = None, pld: Accountant | None = None) -> AccountedRun:
    """:func:`account_run` once its options are checked: the event composed over the run
    (``pld``: its PLD composition, where it was made already)."""
    mechanism, observer, relation = event.mechanism, run.observer, run.relation
    participation = check_participation(run.participation, run.rounds, observer, event.rate)
    stages = 3 if method == "pld" else 2
    _report(progress, 0, stages)
    event.coordinate_curve()
    _report(progress, 1, stages)
    if method == "pld":
        event.round_pld(discretization)
        _report(progress, 2, stages)
    base = {"mechanism": mechanism.name, "parameters": mechanism.parameters(), "n": event.n, "clients": event.clients,
            "sample_rate": event.rate, "rounds": run.rounds, "dim": run.dim, "observer": observer,
            "observer_text": acc.OBSERVER_TEXT[observer], "relation": relation,
            "sampling": run.sampling if event.rate < 1 else "none", "amplified": event.amplified,
            "participation": participation, "clients_in_sum": event.clients_in_sum,
            "per_round_choice": event.per_round if event.clients_in_sum > 1 else None}
    accounted = AccountedRun(event, participation, method, base, discretization, pld)
    base["per_round_curve"] = event.coordinate_curve()[1]
    if method == "pld":
        round_pld = event.round_pld(discretization)
        base.update({"discretization": discretization, "per_round_pld": round_pld.family,
                     "pld_attained": round_pld.attained})
    _report(progress, stages, stages)
    return accounted


def run_epsilon(mechanism: Mechanism, *, dp_delta: float, run: RunOptions = RunOptions()) -> tuple[float, str]:
    """(``epsilon``, ``epsilon_method``) of the record at ``dp_delta`` of :func:`account_run`
    with its defaults (the certified per-round worst case, the default method), without the
    certified Rényi curve where it cannot give the smaller ε (calibration asks for ε alone,
    many times: PBM's certified curve at n = 1000 is two thirds of its accounting).

    Where the PLD route runs (the sample known to the observer, replace-one neighbours) for a
    sum of n > 1 clients without unbounded noise, its ε_P is computed first, then ε_L: the
    Rényi conversion (:func:`rdpcalc.privacy.rdp.epsilon`) of a lower bound L of the worst
    case (:func:`rdpcalc.worstcase.secagg.attained_below`), scaled over the coordinates and the
    rounds as the Rényi route scales its curve. If ε_L > ε_P, the pair is (ε_P, ``pld``) at once.

    *Proof that this is the record's pair.* The record gives ε_P by ``pld`` where ε_P ≤ ε_R,
    the Rényi route's ε: the same conversion of the certified curve U, scaled the same way.
    U ≥ W_n ≥ L at every order, and the scaling and the conversion are non-decreasing in every
    value of the curve (in floating point too: rounding is monotone), so ε_R ≥ ε_L > ε_P.
    Otherwise the Rényi route runs on the same event (the PLD computed once) and the record
    decides. Either way both routes are upper bounds of the run's ε.

    The Rényi route computes the certificate only at the order where the values attained convert
    to the smallest ε (``certified_orders`` conversion, :meth:`MechanismEvent.focus`): the
    curve is +∞ at the other orders but those below it, which the value there bounds (D_α is
    non-decreasing in α), so ε is the conversion at that order. A calibration asks one ε per value
    tried: at n = 1000 RQM's certificate at one order takes 0.7 s, at the accounting's six 4.4 s."""
    dp_delta = acc.check_delta(dp_delta)
    event = _run_event(mechanism, run, certified_orders="conversion")
    method = _method(None, event.amplified and run.relation == "replace-one", "")
    pld = None
    if method == "pld" and run.relation == "replace-one" and event.clients_in_sum > 1 \
            and not tails.has_tails(mechanism):
        count = check_participation(run.participation, run.rounds, run.observer, event.rate)
        pld = Accountant("pld", DISCRETIZATION).compose(event, count)
        epsilon = float(pld.get_epsilon(dp_delta))
        orders = np.array(round_orders(amplified=False), dtype=float)  # the orders of the certified curve
        below = acc.RdpCurve(orders, secagg.attained_below(mechanism, event.clients_in_sum, orders))
        if acc.epsilon(below.scaled(event.dim).scaled(count), dp_delta)[0] > epsilon:
            return epsilon, "pld"
    record = _accounted(event, run, method, DISCRETIZATION, pld=pld).record(dp_delta=dp_delta)
    return record["epsilon"], record["epsilon_method"]


def _report(progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _method(method: str | None, amplified: bool, why_not_pld: str) -> str:
    """The method asked for, or the default: pld, except rdp where the run is amplified."""
    if method is None:
        return "rdp" if amplified else "pld"
    method = METHOD.convert(method)
    if method == "pld" and amplified:
        raise ParameterError("method", f"pld: {why_not_pld}; use `method` rdp")
    return method


def account(mechanism: Mechanism, *, dp_delta: float = 1e-5, dp_epsilon: float | None = None, **run) -> dict:
    """(ε, δ) of a whole run of a quantization mechanism at one δ: :func:`account_run`'s
    :meth:`AccountedRun.record`.

    Parameters:
        mechanism: a mechanism (:func:`rdpcalc.make_mechanism`).
        dp_delta: the δ of (ε, δ), in (0, 1).
        dp_epsilon: optionally an ε ≥ 0 at which δ is reported too.
        run: the run's options (the fields of :class:`RunOptions`: ``n``, ``clients``, ``rounds``,
            ``dim``, …) and the keyword arguments of :func:`account_run` (``per_round``,
            ``method``, …).

    The mechanism's parameters are nested under ``parameters`` (RQM's Δ is ``parameters.delta``;
    ``delta`` is the δ of (ε, δ))."""
    acc.check_delta(dp_delta)
    options, rest = RunOptions.split(run)
    return account_run(mechanism, run=options, **rest).record(dp_delta=dp_delta, dp_epsilon=dp_epsilon)


def participation_bound(rounds: int, rate: float, probability: float) -> int:
    """The smallest K with P(Bin(rounds, rate) > K) ≤ ``probability``: a client sampled in each
    round independently at ``rate`` takes part in more than K rounds with at most that
    probability. Where the observer knows the sample, accounting K rounds gives every client
    (ε, δ + probability) [derived]: the sample does not depend on the data, so for any event E,
    P(E; D) ≤ Σ over samples with at most K rounds of P(s)·(e^ε P(E | s; D′) + δ) + P(more than
    K) — fewer rounds are never worse than K (data processing)."""
    from scipy.stats import binom  # scipy.stats: start-up time

    if not 0 < probability < 1:
        raise ParameterError("probability", f"must be in (0, 1), got {probability!r}")
    bound = int(binom.isf(probability, rounds, rate))
    while bound > 0 and binom.sf(bound - 1, rounds, rate) <= probability:  # isf is approximate near the boundary
        bound -= 1
    while binom.sf(bound, rounds, rate) > probability:
        bound += 1
    return bound


def check_participation(participation, rounds: int, observer: str, rate: float) -> int:
    """The rounds a client's ε composes over: all of them where the sample is hidden (the
    amplified curve accounts for the sampling); where it is known, the rounds the client takes
    part in (default: all, the worst case)."""
    if participation is None:
        return rounds
    participation = PARTICIPATION.up_to(rounds, "`rounds`").convert(participation)
    if observer == "release" and rate < 1:
        raise ParameterError("participation", "applies where the observer knows the sample (server, local); "
                                              "for release the amplified curve already accounts for the sampling")
    return participation


def _check_epsilon(value, strict: bool) -> float:
    """An ε target ``dp_epsilon``: a finite number > 0 (``strict``: :data:`TARGET_EPSILON`) or
    ≥ 0 (:data:`REPORTED_EPSILON`)."""
    return (TARGET_EPSILON if strict else REPORTED_EPSILON).convert(value)


def account_reference_run(
    name: str,
    *,
    sigma: float | None = None,
    scale: float | None = None,
    sensitivity: float = 1.0,
    sample_rate: float = 1.0,
    rounds: int = 1,
    sampling: str = "poisson",
    method: str | None = None,
    discretization: float = 1e-4,
) -> AccountedRun:
    """A reference mechanism composed over ``rounds``; the released output is observed and the
    sample hidden.

    Parameters:
        name: ``gaussian`` (noise N(0, σ²), ℓ₂ sensitivity; Poisson sampling by the exact
            subsampled-Gaussian curve of Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy
            of the Sampled Gaussian Mechanism", arXiv:1908.10530, and, for PLD, its exact
            hockey-stick curves) or ``laplace`` (noise Laplace(b), ℓ₁ sensitivity; sampling by the
            general amplification bounds, Rényi only).
        sigma: the Gaussian's σ > 0 (gaussian only); ``scale``: the Laplace scale b > 0 (laplace only).
        sensitivity: the sensitivity Δ > 0.
        sample_rate: the sampling rate in (0, 1]; 1 is no sampling.
        rounds: the rounds composed, ≥ 1.
        sampling: ``poisson`` (add/remove neighbours) or ``without-replacement`` (replace-one).
        method, discretization: as for :func:`account_run`."""
    if name not in REFERENCES:
        raise ParameterError("mechanism", f"must be one of {', '.join(REFERENCES)}, got {name!r}")
    noise, other = ("sigma", "scale") if name == "gaussian" else ("scale", "sigma")
    if {"sigma": sigma, "scale": scale}[other] is not None:
        raise ParameterError(other, f"is a parameter of {'laplace' if name == 'gaussian' else 'gaussian'}, not {name}: "
                                    f"give `{noise}`")
    noise_value = SIGMA.convert(sigma) if name == "gaussian" else SCALE.convert(scale)
    sensitivity = SENSITIVITY.convert(sensitivity)
    sample_rate = SAMPLE_RATE.convert(sample_rate)
    rounds = check_rounds(rounds)
    sampling = acc.SAMPLING_SCHEME.convert(sampling)
    sampled = sample_rate < 1
    params = {noise: noise_value, "sensitivity": sensitivity}
    if name == "gaussian":
        exact_sampling = sampled and sampling == "poisson"
        event = GaussianEvent(noise_value, sensitivity, sample_rate if exact_sampling else 1.0)
        no_pld = "PLD sampling without replacement is not implemented for the reference mechanisms"
    else:
        exact_sampling = False
        event = LaplaceEvent(noise_value, sensitivity)
        no_pld = "PLD sampling is implemented for the Gaussian with Poisson sampling only"
    if sampled and not exact_sampling:
        event = _AmplifiedEvent(event, sample_rate, sampling)
    method = _method(method, sampled and not exact_sampling, no_pld)
    check_discretization(discretization)
    base = {"mechanism": name, "parameters": params, "n": 1, "clients": 1, "sample_rate": float(sample_rate),
            "rounds": rounds, "dim": 1, "observer": "release",
            "observer_text": "release: the output is released, the sample hidden (reference mechanism)",
            "relation": f"{'add-remove' if sampling == 'poisson' else 'replace-one'} "
                        f"({'ℓ₂' if name == 'gaussian' else 'ℓ₁'} sensitivity)",
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
        orders = np.array(sorted(set(acc.ORDERS) | set(acc.INTEGER_ORDERS)))
        self._curve = acc.amplify(event.rdp_curve(orders), rate, sampling)  # 0.1 s: computed once

    def rdp_curve(self):
        return self._curve

    def describe(self) -> str:
        return f"{self.event.describe()}, {self.sampling} at {self.rate:g}"


def account_reference(name: str, *, dp_delta: float = 1e-5, dp_epsilon: float | None = None, **run) -> dict:
    """(ε, δ) of a reference mechanism's run at one δ: :func:`account_reference_run`'s
    :meth:`AccountedRun.record`.

    Parameters:
        name: ``gaussian`` or ``laplace``.
        dp_delta: the δ of (ε, δ), in (0, 1).
        dp_epsilon: optionally an ε ≥ 0 at which δ is reported too.
        run: the keyword arguments of :func:`account_reference_run` (``sigma`` or ``scale``,
            ``sensitivity``, ``sample_rate``, ``rounds``, …)."""
    acc.check_delta(dp_delta)
    return account_reference_run(name, **run).record(dp_delta=dp_delta, dp_epsilon=dp_epsilon)


def solvable(name: str) -> dict[str, Callable[[dict], tuple[float, float, bool]]]:
    """The parameters :func:`calibrate` can solve for, each with the function giving its search
    range (low, high, log scale) from the mechanism's other parameters (a dict by keyword).

    Parameters:
        name: a mechanism (:data:`rdpcalc.MECHANISMS`: the ranges its parameters declare) or
            ``gaussian``/``laplace`` (:data:`REFERENCE_SOLVABLE`)."""
    if name in REFERENCE_SOLVABLE:
        ranges = REFERENCE_SOLVABLE[name]
    elif name in MECHANISMS:
        ranges = MECHANISMS[name].solvable()
    else:
        raise ParameterError("mechanism", f"must be one of {', '.join([*MECHANISMS, *REFERENCES])}, got {name!r}")
    return {parameter: solve_range.ends for parameter, solve_range in ranges.items()}


def calibrate(name: str, *, solve: str, dp_epsilon: float, params: dict | None = None,
              solve_range: Sequence[float] | None = None, progress: Callable[[int, int], None] | None = None,
              **run) -> dict:
    """The value of parameter ``solve`` at which the whole run's ε meets ``dp_epsilon``, by
    Brent's method on log ε (:func:`rdpcalc.privacy.rdp.solve_monotone`) between the ends of its range
    (:func:`solvable`, or ``solve_range``).

    Parameters:
        name: a mechanism (:data:`rdpcalc.MECHANISMS`) or ``gaussian``/``laplace``.
        solve: the parameter to solve for (one of :func:`solvable`'s).
        dp_epsilon: the target ε > 0.
        params: the mechanism's other parameters (keyword → value), ``solve``'s left out.
        solve_range: (low, high), 0 < low < high, finite: the range searched instead of the
            parameter's default one (each end must be a valid value of the parameter). The ends
            are evaluated first: a target outside the ε they reach is refused at once.
        progress: called as ``progress(done, total)`` before each evaluation of ε; the total
            (2 + CALIBRATE_EVALUATIONS: the two ends and the solver's evaluations) is an upper
            bound, reached at the end.
        run: the keyword arguments of :func:`account` (``dp_delta``, ``n``, ``rounds``, …) or, for
            gaussian/laplace, of :func:`account_reference`.

    ε must be monotone in the parameter: the target is checked to lie between the ends' values.
    An integer parameter is solved for over the reals, each value rounded before it is
    accounted, so the answer is the integer on the safe side next to the target.
    Returns the record accounted at the value found, on the safe side (ε ≤ target), with
    ``solved`` (the parameter), ``value``, ``dp_epsilon`` and ``monotone``. Where ε jumps
    to +∞ short of the target (PLD's loss cap), it is refused."""
    ranges = solvable(name)
    if solve not in ranges:
        raise ParameterError("solve", f"for {name} must be one of: {', '.join(ranges) or 'nothing'}; got {solve!r}")
    target = _check_epsilon(dp_epsilon, strict=True)
    params = {key: value for key, value in (params or {}).items() if value is not None}
    converted = check_calibrate_params(name, solve, params)
    both = sorted(set(params) & set(run))
    if both:
        raise ParameterError(both[0], "is given twice: in `params` and as a keyword")
    low, high, log_scale = ranges[solve](converted)
    if solve_range is not None:
        low, high = check_solve_range(solve_range)
        for end in (low, high):
            if name not in REFERENCES:
                try:
                    next(param for param in MECHANISMS[name].PARAMS if param.name == solve).convert(end)
                except ParameterError as error:
                    raise ParameterError("solve_range", f"{end:g} is not a value of `{solve}`: {error.message}") from None

    def run_at(value: float) -> dict:
        if name in REFERENCES:
            return account_reference(name, **params, **{solve: value}, **run)
        return account(make_mechanism(name, **params, **{solve: value}), **run)

    total = 2 + CALIBRATE_EVALUATIONS  # the ends and the solver's evaluations, at most
    records: dict[float, dict] = {}  # the value returned was evaluated: its record is kept
    integer = name not in REFERENCES and next(param for param in MECHANISMS[name].PARAMS
                                              if param.name == solve).kind == "integer"

    def settled(value: float) -> float:
        """An integer parameter's values are rounded (ε is a step function of the solver's x)."""
        return round(value) if integer else value

    def epsilon_at(value: float) -> float:
        value = settled(value)
        if value not in records:
            _report(progress, len(records) + 1, total)
            records[value] = run_at(value)
        return records[value]["epsilon"]

    at_low, at_high = epsilon_at(low), epsilon_at(high)
    if not (min(at_low, at_high) <= target <= max(at_low, at_high)):
        raise ParameterError("dp_epsilon", f"no {solve} in [{low:g}, {high:g}] meets ε = {target:g}: ε runs "
                                           f"from {at_low:.6g} to {at_high:.6g} over that range")
    value = settled(acc.solve_monotone(epsilon_at, low, high, target, log_scale, (at_low, at_high),
                                       evaluations=CALIBRATE_EVALUATIONS, log_values=True))
    record = records[value]
    _report(progress, total, total)
    if not integer and math.inf in (at_low, at_high) and record["epsilon"] < target * (1 - 1e-3):
        raise ParameterError("dp_epsilon", f"ε jumps from {record['epsilon']:.6g} to +∞ at {solve} ≈ {value:.6g}, below "
                                           f"the target {target:g} (by {record['method']}: a privacy loss beyond "
                                           f"{LOSS_CAP:g} nats in one round counts as +∞); use `method` rdp")
    record["solved"], record["value"], record["dp_epsilon"] = solve, float(value), target
    record["monotone"] = "increasing" if at_high > at_low else "decreasing"
    return record


def check_solve_range(solve_range) -> tuple[float, float]:
    """(low, high) from a pair of finite numbers with 0 < low < high; ParameterError naming
    ``solve_range`` otherwise."""
    try:
        low, high = (float(value) for value in solve_range)
    except (TypeError, ValueError):
        shown = ":".join(map(str, solve_range)) if isinstance(solve_range, list | tuple) else repr(solve_range)
        raise ParameterError("solve_range", f"must be two numbers LOW:HIGH, got {shown}") from None
    if not (0 < low < high < math.inf):
        raise ParameterError("solve_range", f"must have 0 < LOW < HIGH < ∞, got {low:g}:{high:g}")
    return low, high


def check_calibrate_params(name: str, solve: str, params: dict) -> dict:
    """A quantization mechanism's ``params`` converted and checked, every required one but
    ``solve`` given: for the range of ``solve``, which may depend on them (the mechanism itself
    is made from the values as given: a converted value can read as "not given", as CorBin's
    d = ∞ does); a reference mechanism's as given."""
    if solve in params:
        raise ParameterError(solve, "is the parameter solved for: leave it out of `params`")
    if name in REFERENCES:
        return params
    declared = {param.name: param for param in MECHANISMS[name].PARAMS}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(unknown[0], f"is not a parameter of {name}")
    missing = [param for param in declared.values() if param.required and param.name != solve and params.get(param.name)
               is None]
    if missing:
        raise ParameterError(missing[0].name, f"is required for {name}: {missing[0].range_text()}")
    return {key: declared[key].convert(value) for key, value in params.items() if value is not None}
