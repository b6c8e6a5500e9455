"""An accountant in the style of dp-accounting: compose events, ask for ε or δ.

>>> import rdpcalc
>>> acct = rdpcalc.Accountant(method="pld")
>>> acct = acct.compose(rdpcalc.GaussianEvent(sigma=2.0), count=10)
>>> round(acct.get_epsilon(1e-5), 2)
7.51

Two methods:

* ``pld`` (default): each event's dominating pair (:mod:`rdpcalc.privacy.pld`) composed by
  dp-accounting's privacy loss distributions — tight up to the grid step ``discretization``
  (the result is always an upper bound: every rounding is pessimistic);
* ``rdp``: Rényi curves added up and converted with Canonne, Kamath & Steinke (2020, Prop. 12).

Events (:class:`DpEvent`): :class:`MechanismEvent` (one round of a quantization mechanism
over a SecAgg sum, with its observer, sampling and coordinates), :class:`GaussianEvent` (the
reference Gaussian mechanism, optionally Poisson-subsampled), :class:`LaplaceEvent` and
:class:`PairEvent` (any two output pmfs, both orders). An event is a frozen record that
documents the mathematics completely: it compares by value, prints readably and round-trips
through plain data (``event.to_dict()``, :func:`event_from_dict`), as dp-accounting's events do;
what it computes is kept beside it (never compared or written out), so it is computed once
however often the event is composed.

dp-accounting's own events (``dp_accounting.GaussianDpEvent``, ``PoissonSampledDpEvent``, …) compose
in the same accountant, through dp-accounting's accountant for the method, so that a DP-SGD run and
a quantized one are accounted together; and an event's PLD and Rényi curve go the other way
(:func:`pld_for_dp_accounting`, :func:`rdp_for_dp_accounting`).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from .errors import ParameterError
from .mechanisms import Mechanism
from .numerics import fast, make_engine
from .params import Param
from .privacy import pld as pldlib
from .privacy import rdp as acc
from .privacy import tilted
from .queries import check_distribution, divergence, make_mechanism
from .worstcase import certificate, secagg, tails

METHODS = ("pld", "rdp")
#: how the accountant composes, declared once
METHOD = Param("method", "choice", "pld: dominating pairs composed as privacy loss distributions (tight); rdp: Rényi "
               "curves. Default pld, except rdp where the observer does not know the sample (release with sampling).",
               default="pld", choices=METHODS)
#: the uses of an event composed
COUNT = Param("count", "integer", "Independent uses of the event, {range}.", default=1, low=1)


class DpEvent(ABC):
    """One use of a mechanism: its Rényi curve and its dominating PLD. Subclasses are frozen
    dataclasses whose fields are the event's whole definition (:meth:`to_dict`)."""

    #: the event's name in :meth:`to_dict` (its ``event`` entry)
    KIND: str = ""

    @abstractmethod
    def rdp_curve(self) -> acc.RdpCurve:
        """ε(α) of one use, at the event's orders."""

    @abstractmethod
    def pld(self, discretization: float = pldlib.DISCRETIZATION):
        """A dominating pair of one use, as a dp-accounting ``PrivacyLossDistribution``."""

    def single_use(self, discretization: float = pldlib.DISCRETIZATION) -> tuple[object, int]:
        """(PLD, copies): one use is ``copies`` independent uses of that PLD, built without an FFT
        composition (for the certificate at small δ, :mod:`rdpcalc.privacy.tilted`)."""
        return self.pld(discretization), 1

    def describe(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict:
        """The event as plain data (JSON-ready): ``event`` (its kind) and its fields;
        :func:`event_from_dict` rebuilds an equal event."""
        return {"event": self.KIND, **{f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                                        if f.compare}}


def _plain(value):
    """A field as plain data: a mechanism as its name and exact parameters (fractions as
    "p/q" strings), a fraction as its string, a tuple as a list."""
    if isinstance(value, Mechanism):
        return {"name": value.name, "parameters": {param.name: _plain(getattr(value, param.name))
                                                    for param in value.PARAMS}}
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def event_from_dict(data: dict) -> DpEvent:
    """The event :meth:`DpEvent.to_dict` wrote (its ``event`` names the kind)."""
    kinds = {cls.KIND: cls for cls in (MechanismEvent, GaussianEvent, LaplaceEvent, PairEvent)}
    fields = dict(data)
    kind = fields.pop("event", None)
    if kind not in kinds:
        raise ParameterError("event", f"must be one of {', '.join(kinds)}, got {kind!r}")
    if kind == "mechanism":
        described = fields.get("mechanism")
        if not isinstance(described, dict) or "name" not in described:
            raise ParameterError("mechanism", "must be a record with its name and parameters")
        fields["mechanism"] = make_mechanism(described["name"], **described.get("parameters", {}))
    if kind == "pair":
        fields = {**fields, "p": tuple(fields.get("p", ())), "q": tuple(fields.get("q", ()))}
    return kinds[kind](**fields)


class Accountant:
    """Composes events and converts to (ε, δ), by ``method`` ``pld`` or ``rdp``.

    ``compose(event, count)`` returns the accountant (so calls chain); ``get_epsilon(delta)``
    and ``get_delta(epsilon)`` answer for everything composed so far (ε = 0 and δ = 0 before
    anything is composed). An event is an rdpcalc :class:`DpEvent` or a dp-accounting event
    (``dp_accounting.DpEvent``), which dp-accounting's own accountant for the method composes:
    ``PLDAccountant`` on the grid step ``discretization`` (its PLD is then composed with the
    others here), or ``RdpAccountant`` at :data:`rdpcalc.privacy.rdp.SHARED_ORDERS` (its curve is
    added to the others at the orders they share), both with dp-accounting's neighbouring relation,
    add/remove — the relation of :class:`GaussianEvent`. An event that accountant does not support
    (its ``supports(event)``) is refused with :class:`ParameterError` naming ``event``, before
    anything is composed."""

    def __init__(self, method: str = "pld", discretization: float = pldlib.DISCRETIZATION):
        self.method = METHOD.convert(method)
        self.discretization = pldlib.check_discretization(discretization)
        self.ledger: list[tuple[str, int]] = []
        self._pld = None
        self._uses: list | None = []  # the single uses composed, (PLD, count); None where unknown
        self._factor_lists = None  # their factors by direction, once asked for (:meth:`_factors`)
        self._fixed: acc.RdpCurve | None = None  # rdp: the composed curves of the events that cannot be focused
        self._focusable: list[tuple[MechanismEvent, int]] = []  # rdp: those that can (MechanismEvent.focus), counted

    def compose(self, event, count: int = 1) -> Accountant:
        """Add ``count`` ≥ 1 independent uses of ``event`` (an rdpcalc or a dp-accounting event)."""
        count = COUNT.convert(int(count) if isinstance(count, np.integer) else count)
        ours = hasattr(event, "rdp_curve")  # a DpEvent, or what speaks its protocol (runs' amplified events)
        if self.method == "pld":
            composed = (pldlib.compose(event.pld(self.discretization), count) if ours
                        else pldlib.dp_accounting_pld(event, count, self.discretization))
            self._pld = composed if self._pld is None else pldlib.compose_two(self._pld, composed)
            uses = (_single_uses(event, count, self.discretization) if ours
                    else pldlib.dp_accounting_factors(event, count, self.discretization))
            self._uses = None if self._uses is None or uses is None else self._uses + uses
            self._factor_lists = None
        else:
            curve = event.rdp_curve().scaled(count) if ours else acc.dp_accounting_curve(event, count)
            if isinstance(event, MechanismEvent):
                self._focusable.append((event, count))
            else:
                self._fixed = curve if self._fixed is None else _add_curves(self._fixed, curve)
        self.ledger.append((event.describe() if ours else f"dp-accounting {event!r}", count))
        return self

    def get_epsilon(self, delta: float) -> float:
        """The smallest ε (certified upper bound) with (ε, δ)-DP for the composition (``rdp``: a
        mechanism's certified curve computed at the order of the conversion too, :meth:`_focus`)."""
        delta = acc.check_delta(delta, "delta")
        if self.method == "pld":
            return 0.0 if self._pld is None else tilted.composed_epsilon(self._pld, self._factors(), delta)
        self._focus(lambda curve: acc.epsilon(curve, delta)[1])
        curve = self.curve
        return 0.0 if curve is None else acc.epsilon(curve, delta)[0]

    def infinity_reason(self, delta: float) -> str | None:
        """``pld``: why :meth:`get_epsilon` is +∞ at ``delta`` (None where it is finite or for
        ``rdp``), in words (:func:`rdpcalc.privacy.pld.infinity_reason`)."""
        delta = acc.check_delta(delta, "delta")
        if self.method != "pld" or self._pld is None:
            return None
        return tilted.composed_infinity_reason(self._pld, self._factors(), delta)

    def get_delta(self, epsilon: float) -> float:
        """δ (certified upper bound) at ``epsilon`` ≥ 0 for the composition (``rdp``: as in
        :meth:`get_epsilon`)."""
        if not (isinstance(epsilon, int | float) and epsilon >= 0 and not math.isnan(epsilon)):
            raise ParameterError("epsilon", f"must be a number ≥ 0, got {epsilon!r}")
        if self.method == "pld":
            return 0.0 if self._pld is None else tilted.composed_delta(self._pld, self._factors(), float(epsilon))
        self._focus(lambda curve: acc.delta_at(curve, float(epsilon))[1])
        curve = self.curve
        return 0.0 if curve is None else acc.delta_at(curve, float(epsilon))[0]

    def _focus(self, best_order) -> None:
        """``rdp``: where a mechanism's certified curve was composed, compute its certificate at
        the order ``best_order`` picks on the composition of the values attained (the other
        events' curves as they are) too (:meth:`MechanismEvent.focus`; :attr:`curve` composes
        the events' curves as they are when asked). The
        certificate is computed at a few orders with chords of convexity between them; where the
        conversion lands between two, the chords cost ε: for RQM's headline (c = Δ = 1.5, m = 16,
        q = 0.42, n = 40) over 2000 rounds at δ = 1e-5, 666.1 against 645.4 with the
        certificate computed at the order of the conversion (642.5 on the values attained)."""
        if not self._focusable:
            return
        lower = self._fixed
        for event, count in self._focusable:
            curve = (event.attained_rdp_curve() or event.rdp_curve()).scaled(count)
            lower = curve if lower is None else _add_curves(lower, curve)
        order = best_order(lower)
        if order is not None:
            for event, _ in self._focusable:
                event.focus(order)

    def _factors(self):
        """The single uses' factors by direction (:func:`rdpcalc.privacy.tilted.factor_lists`),
        built at the first small δ asked after a composition."""
        if self._factor_lists is None and self._uses:
            self._factor_lists = tilted.factor_lists(self._uses)
        return self._factor_lists

    @property
    def grid_step(self) -> float | None:
        """``pld``: the grid step of the composition, ``discretization`` or, where a long
        composition needed a coarser grid to stay in memory, 2^j times it
        (:func:`rdpcalc.privacy.pld.compose`)."""
        return None if self._pld is None else pldlib.grid_step(self._pld)

    @property
    def curve(self) -> acc.RdpCurve | None:
        """The composed Rényi curve (``rdp`` method): the events' curves as they are now (an event
        shared with another accountant may have been computed at more orders since)."""
        curve = self._fixed
        for event, count in self._focusable:
            scaled = event.rdp_curve().scaled(count)
            curve = scaled if curve is None else _add_curves(curve, scaled)
        return curve


def pld_for_dp_accounting(event: DpEvent, discretization: float = pldlib.DISCRETIZATION):
    """One use of an rdpcalc ``event`` (for a :class:`MechanismEvent`, one round over its ``dim``
    coordinates) as a dp-accounting ``PrivacyLossDistribution`` that stands on its own: compose it
    with dp-accounting's PLDs (``compose``, ``self_compose``) and read ε or δ there
    (``get_epsilon_for_delta``, ``get_delta_for_epsilon``). The grid step is ``discretization``
    (or 2^j times it, where the coordinates' composition needed a coarser grid).

    It is pessimistic: a dominating pair. ``event.pld`` is one (a dominating pair per
    coordinate, :mod:`rdpcalc.privacy.pld`, composed over the coordinates by FFT), as far as the
    allowance A for the FFT's rounding (:func:`rdpcalc.privacy.pld.rounding_allowance`) covers
    it: what rdpcalc certifies is that the true hockey-stick curve T lies below the PLD's curve
    H plus A at every γ = e^ε, where H_γ = ω_∞ + Σ_k p_k (1 − γ e^{−kh})_+. dp-accounting reads H
    alone, so A is folded in (:func:`rdpcalc.privacy.pld.self_contained`): the values H(e^{kh}) + A
    at the grid points bound T; T is convex with T(0) = 1, so the chord interpolation of their
    lower convex hull (with (0, 1)) lies above T, and pessimistic connect-the-dots (Doroshenko et
    al. 2022, Alg. 1) makes the PLD whose curve is that interpolation, with the last value as its
    mass at +∞. Its δ at every ε is at least rdpcalc's own (:meth:`Accountant.get_delta` of one
    use), larger by about A (at least 1e−11). Where rdpcalc's PLD route is refused (a
    :class:`MechanismEvent` whose observer does not know a sample drawn without replacement), so
    is this."""
    return pldlib.self_contained(_rdpcalc_event(event).pld(pldlib.check_discretization(discretization)))


def rdp_for_dp_accounting(event: DpEvent) -> tuple[np.ndarray, np.ndarray]:
    """The Rényi curve of one use of an rdpcalc ``event`` (for a :class:`MechanismEvent`, one round
    over its ``dim`` coordinates, amplified where the observer does not know the sample) as the
    two arrays dp-accounting's conversion takes: (orders α, ε(α)) at the event's finite orders,
    all > 1 (ε may be +∞). k uses are (α, k·ε(α)) (Mironov 2017, Prop. 1), and
    ``dp_accounting.rdp.compute_epsilon(orders, k * values, δ)`` converts them as rdpcalc does
    (Canonne, Kamath & Steinke 2020, Prop. 12). dp-accounting has no event that carries a Rényi
    curve (its ``ZCDpEvent`` is the line ξ + ρα), so the curve travels as data."""
    curve = _rdpcalc_event(event).rdp_curve()
    finite = np.isfinite(curve.orders)
    return curve.orders[finite].copy(), curve.values[finite].copy()


def _single_uses(event, count: int, discretization: float) -> list[tuple[object, int]] | None:
    """``count`` uses of an rdpcalc event as (PLD, count) pairs of single uses (None for what
    only speaks the events' protocol)."""
    single_use = getattr(event, "single_use", None)
    if single_use is None:
        return None
    pld, copies = single_use(discretization)
    return [(pld, copies * count)]


def _rdpcalc_event(event) -> DpEvent:
    if not isinstance(event, DpEvent):
        raise ParameterError("event", f"must be an rdpcalc event (DpEvent), got {event!r}")
    return event


def _add_curves(first: acc.RdpCurve, second: acc.RdpCurve) -> acc.RdpCurve:
    """The sum of two Rényi curves on the orders both have."""
    common = np.intersect1d(first.orders, second.orders)
    if len(common) == 0:
        raise ParameterError("event", "the events' Rényi curves share no order")
    return acc.RdpCurve(common, np.array([first.at(a) + second.at(a) for a in common]))


@dataclass(frozen=True)
class PairEvent(DpEvent):
    """A mechanism given by two output pmfs P and Q on one support (as probabilities), for the
    neighbouring pair in both orders: PLD of the larger of (P‖Q) and (Q‖P) at every ε; Rényi
    curve max(D_α(P‖Q), D_α(Q‖P)) at :data:`rdpcalc.privacy.rdp.ORDERS` and ∞. ``p`` and ``q``
    are kept as tuples of floats."""

    p: Sequence[float]
    q: Sequence[float]
    name: str = "pair"

    KIND = "pair"

    def __post_init__(self):
        p, q = np.asarray(self.p, dtype=float), np.asarray(self.q, dtype=float)
        if p.shape != q.shape or p.ndim != 1 or len(p) == 0:
            raise ParameterError("p", "p and q must be one-dimensional, of the same length")
        for label, values in (("p", p), ("q", q)):
            if np.any(~np.isfinite(values)) or np.any(values < 0) or abs(values.sum() - 1) > 1e-9:
                raise ParameterError(label, "must be non-negative and sum to 1")
        object.__setattr__(self, "p", tuple(float(v) for v in p))
        object.__setattr__(self, "q", tuple(float(v) for v in q))

    @property
    def log_p(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(np.array(self.p))

    @property
    def log_q(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(np.array(self.q))

    def rdp_curve(self) -> acc.RdpCurve:
        orders = np.array([*acc.ORDERS, math.inf])
        forward, backward = fast.renyi_divergences(self.log_p[None, :], self.log_q[None, :], orders, both=True)
        return acc.RdpCurve(orders, np.maximum(np.asarray(forward, dtype=float)[0], np.asarray(backward, dtype=float)[0]))

    def pld(self, discretization: float = pldlib.DISCRETIZATION):
        return pldlib.pair_pld(self.log_p, self.log_q, discretization)

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class GaussianEvent(DpEvent):
    """The Gaussian mechanism N(f(D), σ²) with sensitivity Δ, optionally Poisson-subsampled at
    ``sample_rate`` γ (add/remove neighbours).

    PLD: the dominating pairs built (:func:`rdpcalc.privacy.pld.dominating_pld`) from the exact
    hockey-stick curves, the remove and add directions composed separately. With μ = Δ/σ,
    G(t) = Φ(μ/2 − log t/μ) − t Φ(−μ/2 − log t/μ) is the curve of (N(Δ, σ²) ‖ N(0, σ²))
    (Balle & Wang 2018, Thm 8); for the subsampled mechanism,
    of the remove pair ((1−γ)N₀ + γN_Δ ‖ N₀): γ G((t − 1 + γ)/γ) for t > 1 − γ (else 1 − t),
    and of the add pair (N₀ ‖ (1−γ)N₀ + γN_Δ): u G(tγ/u) with u = 1 − t(1 − γ) > 0 (else 0).
    Rényi curve: Mironov (2017) and Mironov, Talwar & Zhang (2019)."""

    sigma: float
    sensitivity: float = 1.0
    sample_rate: float = 1.0

    KIND = "gaussian"

    def __post_init__(self):
        for label, value in (("sigma", self.sigma), ("sensitivity", self.sensitivity)):
            if not (isinstance(value, int | float) and 0 < value < math.inf):
                raise ParameterError(label, f"must be a finite number > 0, got {value!r}")
        if not (isinstance(self.sample_rate, int | float) and 0 < self.sample_rate <= 1):
            raise ParameterError("sample_rate", f"must lie in (0, 1], got {self.sample_rate!r}")
        _check_ratio(float(self.sensitivity), float(self.sigma), "sensitivity", "sigma", "Δ/σ", MAX_GAUSSIAN_RATIO,
                     "α(Δ/σ)²/2 at α ≤ 10⁴")
        for name in ("sigma", "sensitivity", "sample_rate"):
            object.__setattr__(self, name, float(getattr(self, name)))

    def rdp_curve(self, orders=None) -> acc.RdpCurve:
        """At ``orders`` (default: the accounting module's orders for each case)."""
        if self.sample_rate < 1:
            return acc.subsampled_gaussian_curve(self.sigma / self.sensitivity, self.sample_rate, orders)
        return acc.gaussian_curve(self.sigma, self.sensitivity, acc.ORDERS if orders is None else orders)

    def pld(self, discretization: float = pldlib.DISCRETIZATION):
        mu = self.sensitivity / self.sigma
        reach = min(pldlib.LOSS_CAP, mu * mu / 2 + 12 * mu)  # beyond it the curve is below 1e−32
        lower, upper = -math.ceil(reach / discretization), math.ceil(reach / discretization)
        log_t = np.arange(lower, upper + 1) * discretization
        attained = np.zeros(len(log_t), dtype=np.int64)
        remove, add = (pldlib.Envelope(lower, values, attained, [label], discretization)
                       for values, label in ((self._remove(log_t, mu), "remove"), (self._add(log_t, mu), "add")))
        return pldlib.dominating_pld(remove, None if self.sample_rate == 1 else add)

    def _remove(self, log_t: np.ndarray, mu: float) -> np.ndarray:
        rate = self.sample_rate
        if rate == 1:
            return _gaussian_curve(log_t, mu)
        t = np.exp(log_t)
        out = 1 - t
        above = t > 1 - rate
        out[above] = rate * _gaussian_curve(np.log((t[above] - 1 + rate) / rate), mu)
        return out

    def _add(self, log_t: np.ndarray, mu: float) -> np.ndarray:
        rate = self.sample_rate
        if rate == 1:
            return _gaussian_curve(log_t, mu)
        t = np.exp(log_t)
        scale = 1 - t * (1 - rate)
        out = np.zeros(len(t))
        inside = scale > 0
        out[inside] = scale[inside] * _gaussian_curve(np.log(t[inside] * rate / scale[inside]), mu)
        return out

    def describe(self) -> str:
        sampled = f", Poisson-sampled at {self.sample_rate:g}" if self.sample_rate < 1 else ""
        return f"Gaussian σ = {self.sigma:g}, Δ = {self.sensitivity:g}{sampled}"


@dataclass(frozen=True)
class LaplaceEvent(DpEvent):
    """The Laplace mechanism with scale b and ℓ₁ sensitivity Δ (t = Δ/b), both orders of the
    pair. PLD from its hockey-stick curve H_{e^ε} = 1 − e^{(ε−t)/2} for |ε| ≤ t, 0 above, 1 − e^ε
    below (integrate (p − e^ε q)_+ over the three pieces of the privacy loss (|x| − |x−Δ|)/b);
    Rényi curve: Mironov (2017, Prop. 6)."""

    scale: float
    sensitivity: float = 1.0

    KIND = "laplace"

    def __post_init__(self):
        for label, value in (("scale", self.scale), ("sensitivity", self.sensitivity)):
            if not (isinstance(value, int | float) and 0 < value < math.inf):
                raise ParameterError(label, f"must be a finite number > 0, got {value!r}")
        _check_ratio(float(self.sensitivity), float(self.scale), "sensitivity", "scale", "Δ/b", MAX_LAPLACE_RATIO,
                     "ε = Δ/b")
        object.__setattr__(self, "scale", float(self.scale))
        object.__setattr__(self, "sensitivity", float(self.sensitivity))

    def rdp_curve(self, orders=None) -> acc.RdpCurve:
        return acc.laplace_curve(self.scale, self.sensitivity, acc.ORDERS if orders is None else orders)

    def pld(self, discretization: float = pldlib.DISCRETIZATION):
        t = self.sensitivity / self.scale  # the curve's own t: losses beyond the grid go to +∞
        reach = math.ceil(min(pldlib.LOSS_CAP, t) / discretization)
        log_t = np.arange(-reach, reach + 1) * discretization
        values = np.clip(-np.expm1((np.minimum(log_t, t) - t) / 2), 0.0, 1.0)
        values = np.where(log_t < -t, -np.expm1(log_t), values)
        attained = np.zeros(len(values), dtype=np.int64)
        return pldlib.dominating_pld(pldlib.Envelope(-reach, values, attained, ["laplace"], discretization))

    def describe(self) -> str:
        return f"Laplace b = {self.scale:g}, Δ = {self.sensitivity:g}"


#: the reference mechanisms' sensitivity-to-noise ratios within which their curves are floats
MAX_GAUSSIAN_RATIO = 1e150
MAX_LAPLACE_RATIO = 1e300


def _check_ratio(sensitivity: float, noise: float, sensitivity_parameter: str, noise_parameter: str, name: str,
                 limit: float, what: str) -> None:
    """:class:`ParameterError` unless 1/limit ≤ sensitivity/noise ≤ limit (where ``what`` stays
    within float64 and above 0), naming the parameter of the two further from 1 (the extreme one)."""
    log_ratio = math.log10(sensitivity) - math.log10(noise)
    if abs(log_ratio) > math.log10(limit):
        extreme = sensitivity_parameter if abs(math.log10(sensitivity)) >= abs(math.log10(noise)) else noise_parameter
        raise ParameterError(extreme, f"{name} must lie within [{1 / limit:.0e}, {limit:.0e}] ({what} stays a float), "
                                      f"got {10 ** (log_ratio % 1):.3g}e{math.floor(log_ratio):+d}")


def _gaussian_curve(log_t: np.ndarray, mu: float) -> np.ndarray:
    """G(t) = Φ(a) − tΦ(b), a = μ/2 − log t/μ, b = −μ/2 − log t/μ, as Φ(a)(1 − e^{log t + log Φ(b) −
    log Φ(a)}) (both factors positive: no cancellation in the tails)."""
    from scipy.special import log_ndtr  # scipy.special: start-up time

    a = mu / 2 - log_t / mu
    b = -mu / 2 - log_t / mu
    log_a, log_b = log_ndtr(a), log_ndtr(b)
    return np.exp(log_a) * -np.expm1(log_t + log_b - log_a)


PER_ROUND = ("certified", "found")
#: the neighbouring relations: one client's input changes, or one client is absent
RELATIONS = ("replace-one", "add-remove")
#: a run's options that its event checks, declared once
SAMPLED = Param("n", "integer", "Clients sampled per round (the SecAgg sum), {range}.", default=1, low=1)
CLIENTS = Param("clients", "integer", "Clients in all, ≥ n (default n: no sampling); the sampling rate is n/CLIENTS.",
                low=1, optional=True)
DIM = Param("dim", "integer", "Coordinates quantized per round (each independently), {range}.", default=1, low=1)
RELATION = Param("relation", "choice", "Neighbouring datasets: one client's input changes (replace-one), or one client "
                 "is present or absent (add-remove).", default="replace-one", choices=RELATIONS)
PER_ROUND_CURVE = Param("per_round", "choice", "Per-round curve of a sum of n>1 clients: certified (the worst case's "
                        "certified upper bound, a guarantee) or found (a lower bound, NOT a guarantee).",
                        default="certified", choices=PER_ROUND)
CERTIFIED_ORDERS = Param("certified_orders", "choice", "Where the certified curve of a sum of n>1 clients is "
                         "computed: all (the accounting's orders: a few computed, chords of convexity between, and "
                         "the order of each conversion asked) or conversion (only the order of each conversion asked: "
                         "a calibration asks one ε per value tried).", default="all", choices=("all", "conversion"))


@dataclass(frozen=True)
class MechanismEvent(DpEvent):
    """One round of a quantization mechanism over ``dim`` coordinates: n of ``clients`` sampled
    (``sampling``), each coordinate's SecAgg sum (or, for the ``local`` observer, one client's
    message) seen by ``observer`` (:data:`rdpcalc.privacy.rdp.OBSERVERS`), neighbours by
    ``relation`` (:data:`RELATIONS`). Both the Rényi curve and the PLD are computed once and
    kept (the event is reused for every count composed).

    Where the observer knows the sample (``server``, ``local``, or no sampling), one round is
    the mechanism itself: its Rényi curve is the per-round worst case
    (:func:`per_round_curve`) and its PLD the dominating pair of the worst-case family
    (:mod:`rdpcalc.worstcase.dominating`), each composed over the coordinates. For ``release`` with
    sampling the Rényi curve is amplified (Wang, Balle & Kasiviswanathan 2019); no PLD bound
    for sampling without replacement is implemented, so the ``pld`` method refuses it.

    ``relation`` ``add-remove`` (client 1 present or absent) is accounted by PLD
    (:func:`rdpcalc.worstcase.dominating.add_remove_pld`; its Rényi curve is +∞, :func:`_add_remove_curve`):
    for the ``server`` (the sum of n clients against the n − 1 others'), and for ``release``
    with ``sampling`` ``poisson`` (each client in the sum independently at rate n/N, the
    sample hidden).

    ``per_round``: ``certified`` (a guarantee) or ``found`` (the worst configurations the search
    found: a lower bound, NOT a guarantee). ``clients`` None means n (no sampling)."""

    mechanism: Mechanism
    n: int = 1
    clients: int | None = None
    dim: int = 1
    observer: str = "server"
    per_round: str = "certified"
    engine: str = "fast"
    dps: int = 50
    relation: str = "replace-one"
    sampling: str = "without-replacement"
    #: how much of the certified curve is computed (:data:`CERTIFIED_ORDERS`): not the event's mathematics, so neither
    #: compared nor written out
    certified_orders: str = field(default="all", compare=False, repr=False)
    #: what the event computed (curves, PLDs), kept so that composing it again costs nothing
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    KIND = "mechanism"

    def __post_init__(self):
        if not isinstance(self.mechanism, Mechanism):
            raise ParameterError("mechanism", f"must be a mechanism (rdpcalc.make_mechanism), got {self.mechanism!r}")
        n = SAMPLED.convert(self.n)
        clients = n if self.clients is None else CLIENTS.convert(self.clients)
        if n > clients:
            raise ParameterError("n", f"must be at most `clients` = {clients} (n of N clients are sampled), got {n}")
        converted = {"n": n, "clients": clients, "dim": DIM.convert(self.dim), "observer": acc.OBSERVER.convert(self.observer),
                     "per_round": PER_ROUND_CURVE.convert(self.per_round), "relation": RELATION.convert(self.relation),
                     "sampling": acc.SAMPLING_SCHEME.convert(self.sampling),
                     "certified_orders": CERTIFIED_ORDERS.convert(self.certified_orders)}
        for name, value in converted.items():
            object.__setattr__(self, name, value)
        check_relation(self.relation, self.observer, self.sampling, self.rate < 1)

    @property
    def rate(self) -> float:
        """The sampling rate n/N."""
        return self.n / self.clients

    @property
    def amplified(self) -> bool:
        """Whether the curve is amplified by sampling (the sample hidden from the observer)."""
        return self.observer == "release" and self.rate < 1

    @property
    def clients_in_sum(self) -> int:
        """The clients whose sum the observer sees (1: one client's message)."""
        return 1 if self.observer == "local" else self.n

    def coordinate_curve(self):
        """(per-coordinate Rényi curve of one round, what it is)."""
        if "curve" not in self._cache and self.relation == "add-remove":
            self._cache["curve"] = _add_remove_curve(self.mechanism, self.amplified)
        if "curve" not in self._cache:
            lazy = self.certified_orders == "conversion" and not self.amplified and secagg.certified_by_order(self.mechanism)
            curve, _, text, lower = per_round_curve(self.mechanism, self.n, self.observer, self.amplified,
                                                    self.engine, self.dps, self.per_round, lazy)
            self._cache["curve"], self._cache["lower"] = (curve, text), lower
            self._cache["lazy"] = lazy and lower is not None and not np.any(np.isfinite(curve.values))
        return self._cache["curve"]

    def attained_curve(self) -> acc.RdpCurve | None:
        """A lower bound of the per-coordinate curve of one round, values attained
        (:func:`per_round_curve`), where the curve is certified for a sum of n > 1 clients and
        may lie above them (None elsewhere)."""
        self.coordinate_curve()
        return self._cache.get("lower")

    def attained_rdp_curve(self) -> acc.RdpCurve | None:
        """:meth:`attained_curve` over the ``dim`` coordinates, amplified as :meth:`rdp_curve` is
        where the curve is: a lower bound of :meth:`rdp_curve` (the amplification bound is
        non-decreasing in the curve it reads); None where there is none."""
        lower = self.attained_curve()
        if lower is None:
            return None
        return acc.amplify(lower.scaled(self.dim), self.rate, "without-replacement") if self.amplified \
            else lower.scaled(self.dim)

    def focus(self, order: float) -> None:
        """Compute the certified worst case of one round at ``order`` too, where the curve is more
        than FOCUS_GAP above the values attained there (the certificate is computed at a few
        orders, chords of convexity between: :mod:`rdpcalc.worstcase.secagg`), and tighten the
        curve with it (:func:`rdpcalc.privacy.rdp.convex_tightened`: the chords through the new
        value, and monotonicity in α). Only for the certified
        curve of a sum of n > 1 clients under replace-one; accounting asks it at the order
        where the values attained convert to the smallest ε (:class:`Accountant`). Where the
        curve is amplified, the amplification bound at ``order`` reads the curve at every integer
        order up to it: the certificate is computed at those of them it reads most
        (:func:`amplification_orders`).

        With ``certified_orders`` conversion, where one order costs a fraction of the curve
        (:func:`rdpcalc.worstcase.secagg.certified_by_order`), the curve is +∞ until this computes
        it at an order; where the certificate there is more than LAZY_GAP above the values
        attained, the whole curve is computed after all: the conversion of a loose certificate may
        land elsewhere (the quantized Gaussian at n = 1000, σ = 1, C_q = 2, 66 levels: ε 1.87 at
        the order where the values attained convert best, 0.84 on the whole curve). Where one
        order costs about as much as the curve, the curve is computed as with ``all`` and kept as
        it is (a calibration asks many ε)."""
        lower, focused = self.attained_curve(), self._cache.setdefault("focused", [])
        kept = self.certified_orders == "conversion" and not self._cache.get("lazy")  # (the whole curve, kept)
        if lower is None or order not in lower.orders or order in focused or kept:
            return
        curve, text = self.coordinate_curve()
        wanted = self._orders_to_compute(order, curve, lower)
        if not wanted:
            return
        engine = make_engine(self.engine, self.dps, self.clients_in_sum, self.mechanism.modulus)
        computed, certified = secagg.certified_upper(self.mechanism, self.clients_in_sum, wanted, engine)
        computed = dict(zip(wanted, computed))
        focused.extend(wanted)
        lazy = self._cache["lazy"]
        if lazy and not computed[order] <= lower.at(order) * (1 + LAZY_GAP):  # the whole curve after all
            curve, _, text, _ = per_round_curve(self.mechanism, self.n, self.observer, self.amplified, self.engine,
                                                self.dps, self.per_round)
            self._cache["lazy"] = lazy = False
            self._cache["curve"] = (curve, text)
            self._cache.pop("rdp", None)
        values = np.array([min(value, computed.get(alpha, math.inf)) for alpha, value in zip(curve.orders, curve.values)])
        if not np.array_equal(values, curve.values):
            self._cache["curve"] = (acc.convex_tightened(acc.RdpCurve(curve.orders, values)),
                                    self._focused_text(text, certified, lazy))
            self._cache.pop("rdp", None)

    def _orders_to_compute(self, order: float, curve: acc.RdpCurve, lower: acc.RdpCurve) -> list[float]:
        """The orders :meth:`focus` computes the certificate at for a conversion at ``order``:
        ``order``, where the curve lies more than FOCUS_GAP above the values attained there; where
        the curve is amplified, :func:`amplification_orders`."""
        if self.amplified:
            return amplification_orders(curve, lower, order, self.rate, self.dim, self._cache["focused"])
        return [order] if curve.at(order) > lower.at(order) * (1 + FOCUS_GAP) else []

    def _focused_text(self, text: str, certified: str, lazy: bool) -> str:
        """What the curve is once :meth:`focus` computed the certificate at more orders."""
        orders = ", ".join(f"{a:g}" for a in sorted(self._cache["focused"]))
        where = ("where the amplification bound, at the order where the conversion to (ε, δ) was smallest on the "
                 "values attained, reads the curve most" if self.amplified
                 else "where the conversion to (ε, δ) was smallest on the values attained")
        if lazy:
            premise = self.mechanism.WORST_PAIR_PREMISE
            return (f"certified upper bound of the worst case ({certified}) at α = {orders} ({where}), monotonicity "
                    "in α below it, +∞ above" + (f"; {premise}" if premise else ""))
        return f"{text.split('; computed again at')[0]}; computed again at α = {orders} ({where}), convexity chords through it"

    def rdp_curve(self) -> acc.RdpCurve:
        if "rdp" not in self._cache:
            curve = self.coordinate_curve()[0].scaled(self.dim)
            if self.amplified and self.relation == "replace-one":  # (an add/remove curve here is +∞ throughout)
                curve = acc.amplify(curve, self.rate, "without-replacement")
            self._cache["rdp"] = curve
        return self._cache["rdp"]

    def round_pld(self, discretization: float = pldlib.DISCRETIZATION):
        """The dominating pair of one coordinate of one round (:class:`rdpcalc.worstcase.dominating.RoundPld`)."""
        if self.amplified and self.relation == "replace-one":
            raise ParameterError("method", "pld: the observer does not know the sample and no PLD amplification "
                                           "bound for sampling without replacement is implemented; use `method` rdp")
        from .worstcase import dominating  # the dominating pairs' search: start-up time of every command

        key = ("pld", discretization)
        if key not in self._cache:
            if self.relation == "add-remove":
                if self.per_round != "certified":
                    raise ParameterError("per_round", "found: add/remove is accounted with the certified family only")
                _check_searchable(self.mechanism, 1 if self.amplified else self.n)  # (Poisson: J is capped)
                others = self.clients - 1 if self.amplified else self.n - 1
                self._cache[key] = dominating.add_remove_pld(self.mechanism, others,
                                                             self.rate if self.amplified else 1.0, discretization)
            else:
                if self.clients_in_sum > 1 and self.per_round == "certified":
                    _check_searchable(self.mechanism, self.clients_in_sum)
                self._cache[key] = dominating.per_round_pld(self.mechanism, self.clients_in_sum, self.per_round,
                                                            discretization)
        return self._cache[key]

    def single_use(self, discretization: float = pldlib.DISCRETIZATION) -> tuple[object, int]:
        """One coordinate's round, ``dim`` times."""
        return self.round_pld(discretization).pld, self.dim

    def pld(self, discretization: float = pldlib.DISCRETIZATION):
        key = ("composed", discretization)
        if key not in self._cache:
            self._cache[key] = pldlib.compose(self.round_pld(discretization).pld, self.dim)
        return self._cache[key]

    def describe(self) -> str:
        return f"{self.mechanism.name}, {self.n} of {self.clients} clients, {self.dim} coordinates, {self.observer}"


#: :meth:`MechanismEvent.focus` computes the certificate at an order where the certified curve
#: is more than this above the values attained (relative): twice the certificate's tolerance
FOCUS_GAP = 2 * certificate.TOLERANCE
#: with ``certified_orders`` conversion, :meth:`MechanismEvent.focus` computes the whole curve where
#: the certificate at the order computed is more than this above the values attained (relative)
LAZY_GAP = 0.05


def amplification_orders(curve: acc.RdpCurve, lower: acc.RdpCurve, order: float, rate: float, dim: int,
                         done: Sequence[float] = ()) -> list[float]:
    """The integer orders 2 … ``order`` at which to compute the certificate of one round so that
    the amplification bound at ``order`` (sampling without replacement at ``rate``, over ``dim``
    coordinates: :func:`rdpcalc.privacy.rdp.amplify`) may come within FOCUS_GAP of that of the
    values attained: of those where ``curve`` (the certified curve) lies more than FOCUS_GAP
    above ``lower`` (the values attained) and not in ``done``, the fewest, taken by how much the
    bound falls where that order alone falls to its value attained (the most first), whose values
    attained bring the bound within FOCUS_GAP / 2 of the values attained's bound; none where
    ``order`` is not one of the integer orders the bound is applied at (:data:`rdpcalc.privacy.rdp.INTEGER_ORDERS`)."""
    if not (2 <= order <= acc.INTEGER_ORDERS[-1] and order == int(order)):
        return []
    values, floor = dict(zip(curve.orders, curve.values)), dict(zip(lower.orders, lower.values))
    candidates = [float(j) for j in range(2, int(order) + 1)
                  if j not in done and values[j] > floor[j] * (1 + FOCUS_GAP)]

    def bound(replaced) -> float:
        per_round = acc.RdpCurve(curve.orders, np.array([floor[a] if a in replaced else values[a]
                                                          for a in curve.orders])).scaled(dim)
        return acc.amplify(per_round, rate, "without-replacement", [order]).at(order)

    goal = bound(set(floor)) * (1 + FOCUS_GAP / 2)
    start = bound(set())
    candidates.sort(key=lambda j: bound({j}) - start)
    chosen: list[float] = []
    while candidates and bound(set(chosen)) > goal:
        chosen.append(candidates.pop(0))
    return sorted(chosen)


def _add_remove_curve(mechanism, sampled: bool):
    """The Rényi curve of one round under add/remove: +∞ at every order when some input's output
    can exceed 0 — the sum with client 1 then reaches an output above every output of the sum
    without it (the largest of each is the sum of the largest outputs), where the law without
    it has no mass, so D_α(with ‖ without) = +∞ for every α ≥ 1; under Poisson sampling the law
    with it is a mixture giving that output weight γ > 0, so the same holds, and amplification
    bounds (Zhu & Wang 2019) of an infinite curve stay infinite."""
    with mpmath.workdps(30):
        reaches = any(any(p > 0 for p in mechanism.pmf(x)[1:]) for x in mechanism.breakpoints())
    if not reaches:
        raise ParameterError("relation", "add-remove: every input's output is 0, so client 1's presence changes "
                                         "nothing; account it with replace-one")
    orders = np.array([*acc.ORDERS, math.inf])
    text = ("+∞ at every order: the sum with the client reaches outputs the sum without it cannot (support mismatch)"
            + (", and Poisson sampling keeps them" if sampled else ""))
    return acc.RdpCurve(orders, np.full(len(orders), math.inf)), text


def check_relation(relation: str, observer: str, sampling: str, sampled: bool) -> None:
    """The combinations of relation, observer and sampling that have a meaning here: Poisson
    sampling goes with add/remove, sampling without replacement with replace-one (``sampled``:
    n < N), and a client's own message (``local``) is sent or not."""
    if relation == "add-remove" and observer == "local":
        raise ParameterError("relation", "add-remove: the local observer sees a client's own message, which is sent "
                                         "or not (ε = +∞); use replace-one, or the server/release observer")
    if sampled and relation == "add-remove" and sampling != "poisson":
        raise ParameterError("relation", "add-remove: a client is absent or present by Poisson sampling "
                                         "(`sampling` poisson); sampling without replacement goes with replace-one")
    if sampled and relation == "replace-one" and sampling == "poisson":
        raise ParameterError("sampling", "poisson samples add/remove neighbours, and these curves are replace-one "
                                         "(one client's input changes): use `relation` add-remove, or "
                                         "without-replacement")


def _check_searchable(mechanism, clients_in_sum: int) -> None:
    if clients_in_sum > secagg.SEARCH_MAX_N:
        raise ParameterError("n", f"the worst case of a SecAgg sum is searched and certified up to n = "
                                  f"{secagg.SEARCH_MAX_N} clients, got {clients_in_sum}")
    check_distribution(mechanism)


def round_orders(amplified: bool) -> list[float]:
    """The orders of one round's Rényi curve (:func:`per_round_curve`): rdpcalc's orders and ∞,
    with the integer orders of the amplification bound where the curve is ``amplified``."""
    return [*(sorted(set(acc.ORDERS) | set(acc.INTEGER_ORDERS)) if amplified else acc.ORDERS), math.inf]


def per_round_curve(mechanism, n: int, observer: str, amplified: bool, engine: str = "fast", dps: int = 50,
                    per_round: str = "certified", lazy: bool = False):
    """The per-coordinate Rényi curve of one round, the number of clients it was computed for,
    what the curve is, and where it is a certified bound that may lie above the worst case (n > 1,
    no unbounded noise) values attained at the same orders (else None). The curve is of the
    SecAgg sum of the n sampled clients for the ``server`` and ``release`` observers, of one
    client's message for ``local``. ``amplified``: the curve is wanted at the integer orders of
    the amplification bound too.

    For n > 1 the worst case is bracketed (:mod:`rdpcalc.worstcase.secagg`): ``per_round`` =
    ``certified`` takes the certified upper bound (a valid curve; equal to the worst case
    where the search is exhaustive), ``found`` the largest value the search found, a lower
    bound of the worst case and so *not* a guarantee (the certificate, not used, is not
    computed). ``lazy``: where the certified curve would come with values attained, only these
    are computed, and the curve is +∞ until :meth:`MechanismEvent.focus` computes it at an order."""
    PER_ROUND_CURVE.convert(per_round)
    clients_in_sum = 1 if observer == "local" else n
    orders = round_orders(amplified)
    lower = None
    if clients_in_sum > 1:
        _check_searchable(mechanism, clients_in_sum)
    if tails.has_tails(mechanism) and per_round == "certified":  # the upper ends of the certified brackets
        records = divergence(mechanism, n=clients_in_sum, alphas=orders, engine=engine, dps=dps)
        values = [r["certified_upper"] for r in records]
        text = (f"certified upper end of the worst case's bracket (noise windowed at tail mass "
                f"10^{mechanism.log_tail_mass_bound() / math.log(10):.1f}; "
                f"{records[0].get('certificate', 'one client')})")
    elif clients_in_sum > 1 and per_round == "certified":
        made = make_engine(engine, dps, clients_in_sum, mechanism.modulus)
        attained = secagg.attained(mechanism, clients_in_sum, orders, made) if lazy else None
        if attained is None:
            values, attained, certified = secagg.certified_bracket(mechanism, clients_in_sum, orders, made)
            text = f"certified upper bound of the worst case ({certified})"
        else:
            values, text = [math.inf] * len(orders), "certified upper bound of the worst case at no order yet"
        lower = None if attained is None else acc.RdpCurve(np.array(orders, dtype=float), np.array(attained, dtype=float))
    else:
        if clients_in_sum > 1 and not tails.has_tails(mechanism):  # the search alone: no certificate is used
            found = secagg.search(mechanism, clients_in_sum, orders,
                                  make_engine(engine, dps, clients_in_sum, mechanism.modulus), certify=False)
            values, uppers, search = found.values, found.upper, found.search
        else:
            records = divergence(mechanism, n=clients_in_sum, alphas=orders, engine=engine, dps=dps)
            values = [r["divergence"] for r in records]
            uppers, search = [r["certified_upper"] for r in records], records[0]["search"]
        exhaustive = search == "exhaustive" and uppers == values
        text = ("the exact worst case (one client)" if clients_in_sum == 1
                else f"the exact worst case (search: {search})" if exhaustive
                else f"the largest value found by the search ({search}): a lower bound of the worst "
                     "case, NOT a guarantee")
    if mechanism.WORST_PAIR_PREMISE:
        text += f"; {mechanism.WORST_PAIR_PREMISE}"
    return acc.RdpCurve(np.array(orders, dtype=float), np.array(values, dtype=float)), clients_in_sum, text, lower
