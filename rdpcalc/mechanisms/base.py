"""What every mechanism provides to the engines, the neighbour search and the CLI.

A mechanism is a frozen dataclass of exact parameters (``Fraction`` / ``int``) that validates
itself on construction. It maps one client's input ``x`` in ``[-bound, bound]`` to an integer
output in ``{0, …, support_size-1}``; the SecAgg server sees the sum of those integers.

Each mechanism gives its single-client pmf once, in mpmath, in a form free of cancellation;
the exact engine uses it at the working precision and the fast engine takes its logarithm
rounded to float64 (:func:`log_pmf`). It also samples itself (:meth:`Mechanism.sample`), by
its paper's algorithm where it has one (:meth:`Mechanism.draw`).
"""

from __future__ import annotations

import math
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar

import mpmath
import numpy as np

from ..errors import ParameterError, SelfCheckFailed
from ..exactnum import fmt, to_fraction, to_mpf
from ..params import Param, SolveRange

#: the largest number of output values of one client (levels, trials + 1): the exact pmfs cost
#: O(levels²) mpmath operations
MAX_LEVELS = 4096
#: Digits used to compute single-client pmfs before rounding their logs to float64.
LOG_PMF_DPS = 40
#: the fast engine takes single-client log-probabilities down to −LOG_LIMIT: sums of n ≤ 10⁵
#: clients, times orders α ≤ 10¹⁵, then stay far inside float64's range (1.8e308)
LOG_LIMIT = 1e280


def bits_param() -> Param:
    """The SecAgg word size of mechanisms whose outputs are integers: the server receives the sum
    modulo 2^bits (default inf: no wrap-around). Declared last among a mechanism's PARAMS, its
    dataclass field defaulting to None."""
    return Param("bits", "integer-or-inf", "SecAgg word size B: the sum wraps modulo 2^B (default inf: no wrap-around)",
                 default="inf", low=1, high=62)


@dataclass(frozen=True)
class Bound:
    """A closed-form bound or value from a paper (as printed, or corrected: ``source`` says,
    e.g. "paper eq. (3)" or "derived").

    ``alpha`` is the order it is about (``math.inf`` for D_∞; None for a non-privacy quantity
    such as an MSE). ``target`` is the exact quantity it is checked against, declared as data
    and computed by :mod:`rdpcalc.bounds` (a mechanism computes nothing above itself):
    ``"worst"`` (the single-client D_α maximised over input pairs), ``"pair"`` (D_α at the
    extreme pair (b, −b)), an explicit input pair ``(x, x')``, a :class:`SumWorst` (the worst
    case of the SecAgg sum of n clients at ``alpha``), a :class:`RoundEpsilon` (ε at δ of one
    round of that sum), an :class:`Exact` value the mechanism computes itself, or ``None`` for
    a value that is only reported. ``relation`` is ``"≤"`` for a bound, ``"="`` for a closed
    form of the target, ``""`` when only reported."""

    name: str
    alpha: float | None
    value: mpmath.mpf
    source: str
    target: object = "worst"
    relation: str = "≤"
    note: str = ""


@dataclass(frozen=True)
class Exact:
    """An exact value a bound is checked against when it is not a divergence the engines
    compute (e.g. an MSE): the value and what it is; with ``upper``, the value is only known to
    lie in the certified bracket [value, upper] (:mod:`rdpcalc.worstcase.tails`)."""

    value: mpmath.mpf
    text: str
    upper: mpmath.mpf | None = None


@dataclass(frozen=True)
class SumWorst:
    """A :class:`Bound`'s target: the worst case over input pairs of D_α of the SecAgg sum of
    ``n`` clients at the bound's order (:func:`rdpcalc.divergence` with ``n``), a certified
    bracket for a windowed noise."""

    n: int


@dataclass(frozen=True)
class RoundEpsilon:
    """A :class:`Bound`'s target: ε at ``delta`` of one round of the SecAgg sum of ``n``
    clients, exact (the privacy loss distribution of its worst case, :func:`rdpcalc.account`)."""

    n: int
    delta: float


#: the type of a mechanism's field, by the kind of its Param (the annotation :func:`mechanism` writes)
FIELD_TYPES = {"number": "Fraction", "integer": "int", "choice": "str", "integer-or-inf": "int | None"}


def mechanism(cls: type) -> type:
    """Make a mechanism class a frozen dataclass whose fields are its :data:`~Mechanism.PARAMS`,
    in their order, each with its Param's default (converted; none for a required one): a
    mechanism declares its parameters once, as Params. A class that also writes a field of the
    same name by hand is refused (declare it once)."""
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    for param in cls.PARAMS:
        if param.name in annotations:
            raise TypeError(f"{cls.__name__}.{param.name} is declared as a field and as a Param: declare it once, as a "
                            "Param")
        optional = param.optional and param.kind != "integer-or-inf"
        annotations[param.name] = FIELD_TYPES[param.kind] + (" | None" if optional else "")
        if not param.required:
            setattr(cls, param.name, None if param.default is None else param.convert(param.default))
    cls.__annotations__ = annotations
    return dataclass(frozen=True)(cls)


#: the capabilities a command may ask a mechanism for (:meth:`Mechanism.supports`)
FEATURES = ("divergence", "pmf", "bound", "account", "calibrate", "mc", "fl", "compare")


class Mechanism(ABC):
    """Interface of a quantization mechanism (see the module docstring).

    A subclass is a frozen dataclass whose fields are its :data:`PARAMS`; the base class
    converts and checks them on construction (:meth:`check` adds the checks that involve
    several parameters). Registered with :func:`register`, it is picked up by every command:
    divergence, pmf, bound, account, calibrate (its parameters with a ``solve`` range), mc (its
    :meth:`sample`, which runs the paper's algorithm where the mechanism overrides :meth:`draw`)
    and fl (its :data:`FL_OBSERVER`, through :meth:`sample` too)."""

    #: short name used on the command line
    name: ClassVar[str]
    #: human-readable title
    title: ClassVar[str]
    #: the paper: authors, year, title and arXiv id
    paper: ClassVar[str] = ""
    #: the parameters, in CLI order
    PARAMS: ClassVar[tuple[Param, ...]]
    #: typical parameters as {option: value}, for the examples in the command-line help (default:
    #: the parameters' defaults)
    EXAMPLE: ClassVar[dict[str, str]] = {}
    #: the run and target of the ``calibrate`` help's example (one the mechanism can meet)
    CALIBRATE_EXAMPLE: ClassVar[str] = "--rounds 100 --dp-epsilon 4"
    #: who observes the mechanism's output in a federated run: "server" (the SecAgg sum) or
    #: "local" (each client's message); None where the mechanism takes no part in ``fl``
    FL_OBSERVER: ClassVar[str | None] = None
    #: the parameter that sets how many levels (breakpoints, outputs) one client has: the one to
    #: lower when a computation is refused for its size (default: the first integer parameter)
    SIZE_PARAMETER: ClassVar[str | None] = None
    #: how a federated client clips its gradient to the input range: "box" (each coordinate to
    #: [−bound, bound]) or "l2" (the whole vector to ℓ₂ norm ≤ bound)
    FL_CLIPPING: ClassVar[str] = "box"

    def __post_init__(self):
        for param in self.PARAMS:
            object.__setattr__(self, param.name, param.convert(getattr(self, param.name)))
        self.check()

    def check(self) -> None:  # noqa: B027 - a hook: most mechanisms have no joint constraint
        """Checks that involve several parameters (each one alone is checked by its :class:`Param`)."""

    @classmethod
    def supports(cls, feature: str) -> bool:
        """Whether the command ``feature`` (one of :data:`FEATURES`) applies to this mechanism:
        ``bound`` where it states closed forms (:meth:`bounds`), ``calibrate`` where a parameter
        has a ``solve`` range, ``fl`` where it has an :data:`FL_OBSERVER`, ``compare`` where it
        declares its :meth:`design` at a bit budget; the others always."""
        if feature not in FEATURES:
            raise ValueError(f"feature must be one of {', '.join(FEATURES)}, got {feature!r}")
        if feature == "bound":
            return cls.bounds is not Mechanism.bounds
        if feature == "calibrate":
            return any(param.solve is not None for param in cls.PARAMS)
        if feature == "fl":
            return cls.FL_OBSERVER is not None
        if feature == "compare":
            return cls.design() is not None
        return True

    @classmethod
    def design(cls):
        """How the mechanism is set up at B bits per coordinate for n clients, for ``compare``:
        a :class:`rdpcalc.mechanisms.design.Design`, or None (the default) where it takes no part."""
        return None

    @classmethod
    def size_parameter(cls) -> str:
        """:data:`SIZE_PARAMETER`, else the first integer parameter, else the first one."""
        if cls.SIZE_PARAMETER is not None:
            return cls.SIZE_PARAMETER
        return next((param.name for param in cls.PARAMS if param.kind == "integer"), cls.PARAMS[0].name)

    @classmethod
    def solvable(cls) -> dict[str, SolveRange]:
        """The parameters calibrate can solve for, with their search ranges."""
        return {param.name: param.solve for param in cls.PARAMS if param.solve is not None}

    def sample(self, x, rng: np.random.Generator) -> np.ndarray:
        """Output indices at the inputs ``x`` (an array of any shape, each entry independently):
        ``x`` as floats, each within [−bound, bound] up to a relative 10⁻¹² (:class:`ParameterError`
        otherwise), then :meth:`draw`. The Monte Carlo checks compare these draws with the exact
        pmf; the federated runs send gradients through them."""
        x = np.asarray(x, dtype=float)
        bound = float(self.bound)
        if np.any(np.abs(x) > bound * (1 + 1e-12)):
            raise ParameterError("x", f"inputs must lie in [-{bound:g}, {bound:g}]")
        return self.draw(x, rng)

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Output indices at the float inputs ``x`` (checked by :meth:`sample`). A mechanism
        overrides this with its paper's randomized algorithm, vectorised and independent of its
        exact pmf, so that a sampler that disagrees with the pmf exposes a bug in one of them.
        By default the pmf's distribution function F (normalised to end at 1) is inverted at each
        distinct input: the output is the least i with F(i) > U, U uniform on [0, 1)."""
        out = np.empty(x.shape, dtype=np.int64)
        values, where = np.unique(x, return_inverse=True)
        uniforms = rng.random(x.shape)
        for index, value in enumerate(values):
            cumulative = np.cumsum(np.exp(log_pmf(self, Fraction(float(value)))))
            chosen = where.reshape(x.shape) == index
            out[chosen] = np.minimum(np.searchsorted(cumulative / cumulative[-1], uniforms[chosen], side="right"),
                                     self.support_size - 1)
        return out

    def sample_work_bytes(self) -> int:
        """Bytes of the work arrays :meth:`draw` holds beyond its inputs and outputs, at most
        (for the memory estimate of a Monte Carlo check; 0 unless a mechanism says)."""
        return 0

    @property
    @abstractmethod
    def bound(self) -> Fraction:
        """Inputs lie in ``[-bound, bound]``; the others in the SecAgg sum sit at ±bound."""

    @property
    @abstractmethod
    def support_size(self) -> int:
        """Number of output values of one client: outputs are ``0 … support_size-1``."""

    @abstractmethod
    def breakpoints(self) -> tuple[Fraction, ...]:
        """Inputs among which the single-client worst case of every D_α is attained.

        Sorted, and always containing ``-bound`` and ``bound``.
        """

    @abstractmethod
    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """The output pmf at input ``x`` at the current mpmath precision."""

    #: how the worst case of the SecAgg sum treats the other clients (:mod:`rdpcalc.worstcase.secagg`):
    #: "affine" (the pmf is affine in x between breakpoints, so others at breakpoints are the
    #: whole family), "relaxed" (PBM: a certified relaxation, ``relaxed_components``), or
    #: "breakpoints" (others searched at the breakpoints only; certified by one client)
    OTHERS_FAMILY: ClassVar[str] = "affine"
    #: for a ``"breakpoints"`` family: whether each output's probability is unimodal in the input
    #: on [−b, b] (so its minimum over the inputs is at ±b), which certifies the others' common
    #: component over the whole interval (:func:`rdpcalc.worstcase.certificate.continuum`); the proof is
    #: the mechanism's to give
    UNIMODAL_IN_INPUT: ClassVar[bool] = False

    #: where the breakpoints are the worst single-client inputs for some orders by a numerical
    #: check rather than a proof: what was checked (every output of the worst case says so)
    WORST_PAIR_PREMISE: ClassVar[str] = ""

    #: True where the pmf is a window of a noise with unbounded support (its divergences are
    #: brackets, :mod:`rdpcalc.worstcase.tails`)
    UNBOUNDED: ClassVar[bool] = False

    #: True where the pmf at −x is the pmf at x reversed and the breakpoints are symmetric
    #: (the worst-case search then skips mirror images; tested per mechanism)
    MIRRORED: ClassVar[bool] = False

    def mirror_symmetric(self) -> bool:
        """Whether P_{−x}(i) = P_x(support_size − 1 − i) for every x (``MIRRORED``)."""
        return self.MIRRORED

    #: extra parameters of ``rdpcalc bound`` for this mechanism (e.g. QMGeo's d and κ), converted
    #: by :meth:`bound_options` before they reach :meth:`bounds`
    BOUND_PARAMS: ClassVar[tuple[Param, ...]] = ()

    @classmethod
    def bound_options(cls, **given) -> dict:
        """The :data:`BOUND_PARAMS` given (by name), converted and checked, defaults filled in;
        :class:`ParameterError` for a name that is not one of them."""
        known = {param.name: param for param in cls.BOUND_PARAMS}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ParameterError(unknown[0], f"is not a bound parameter of {cls.name}")
        return {name: param.convert(given[name] if given.get(name) is not None else param.default)
                for name, param in known.items()}

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        """The papers' bounds (as printed and corrected) at the requested orders, at the
        current mpmath precision."""
        return []

    #: margins η at which ``rdpcalc bound`` shows the worst case over inputs kept ηΔ away from
    #: the levels (mechanisms whose pmf jumps at its levels; see QMGeo.inputs_with_margin)
    MARGIN_STUDY: ClassVar[tuple[Fraction, ...]] = ()
    #: False for a reading of a paper whose "pmf" does not sum to one (divergences refuse it)
    defines_distribution: ClassVar[bool] = True

    def output_values(self) -> list:
        """The value the server decodes from each output (Fractions or mpf; for mean, bias,
        variance, MSE)."""
        raise NotImplementedError

    def decoding_target(self, x: Fraction):
        """What the decoded output estimates at input ``x`` (x itself, unless a mechanism says)."""
        return x

    def moments(self, x) -> dict[str, mpmath.mpf]:
        """Mean, bias, variance and MSE of the decoded output at input ``x``, exactly (mpmath)."""
        x = self.check_input(x)
        probs = exact_pmf(self, x)
        values = [to_mpf(v) for v in self.output_values()]
        target = to_mpf(self.decoding_target(x))
        mean = mpmath.fsum(p * v for p, v in zip(probs, values))
        variance = mpmath.fsum(p * (v - mean) ** 2 for p, v in zip(probs, values))
        mse = mpmath.fsum(p * (v - target) ** 2 for p, v in zip(probs, values))
        return {"mean": mean, "bias": mean - target, "variance": variance, "mse": mse, "mass": mpmath.fsum(probs)}

    def check_input(self, x, parameter: str = "x") -> Fraction:
        """``x`` as an exact Fraction, or :class:`ParameterError` if outside the input range.

        A Fraction is taken as it is (the breakpoints of a mechanism with ``--c 1e-300`` lie
        below the magnitudes a user may type); other values are parsed by :func:`to_fraction`."""
        value = x if isinstance(x, Fraction) else to_fraction(x, parameter)
        if abs(value) > self.bound:
            b = fmt(self.bound)
            raise ParameterError(parameter, f"must lie in [-{b}, {b}], got {fmt(value)}")
        return value

    def tail_parameter(self, limit: float) -> tuple[str, str]:
        """The parameter whose extreme values make this mechanism's probabilities smallest, and
        the range that keeps them above e^{−limit} (for the refusal when a probability leaves
        an engine's range; mechanisms whose probabilities can get there say more)."""
        return self.PARAMS[0].name, "use a less extreme value"

    def tail_mass_bound(self) -> float:
        """An upper bound on the probability that one client's output leaves the window its pmf is
        computed on (0 for a finite support; see :mod:`rdpcalc.mechanisms.rounded`); it may
        underflow to 0, :meth:`log_tail_mass_bound` does not."""
        return math.exp(self.log_tail_mass_bound())

    def log_tail_mass_bound(self) -> float:
        """log of :meth:`tail_mass_bound` (−∞ for a finite support)."""
        return -math.inf

    @property
    def modulus(self) -> int | None:
        """2^bits, the modulus of the SecAgg sum, for a mechanism with a ``bits`` parameter that is
        finite (:func:`bits_param`); None: the sum does not wrap."""
        bits = getattr(self, "bits", None)
        return None if bits is None else 2**bits

    def without_wrap_around(self) -> Mechanism:
        """The same mechanism with a sum that does not wrap (``bits`` ∞): itself where it has no
        modulus. Wrapping can only lower a divergence, so the unwrapped sum's ε bounds the
        wrapped one's."""
        return self if self.modulus is None else replace(self, bits=None)

    def parameters(self) -> dict[str, float | int | str | None]:
        """The parameters as plain values, for output records: numbers as float or int,
        choices as strings, an integer-or-inf parameter's ∞ as "inf", an optional one not
        given as None."""
        out: dict[str, float | int | str | None] = {}
        for param in self.PARAMS:
            value = getattr(self, param.name)
            if value is None and param.kind == "integer-or-inf":
                value = "inf"
            out[param.name] = float(value) if isinstance(value, Fraction) else value
        return out


def log_pmf(mechanism: Mechanism, x: Fraction) -> np.ndarray:
    """log pmf at ``x`` as float64 (−inf exactly where the probability is 0): the mechanism's
    own log-domain float implementation where it has one (``log_pmf_float``, RQM), else the log
    of the mpmath pmf rounded to float64. Either way every entry keeps full relative accuracy,
    tails far below float64's range of probabilities included. A positive probability below
    e^{−LOG_LIMIT} is refused (:func:`check_log_range`), never rounded to 0.
    """
    return _log_pmf_cached(mechanism, Fraction(x)).copy()


def exact_pmf(mechanism: Mechanism, x: Fraction) -> list:
    """``mechanism.pmf(x)`` at the current mpmath precision, remembered for the last few calls
    (the pmf command prints the pmf and its moments: one O(m²) computation, not two)."""
    return list(_exact_pmf_cached(mechanism, Fraction(x), mpmath.mp.prec))


@lru_cache(maxsize=8)
def _exact_pmf_cached(mechanism: Mechanism, x: Fraction, precision: int) -> tuple:
    return tuple(mechanism.pmf(x))


#: the bytes of float64 log pmfs :func:`log_pmf` keeps (least recently used dropped first)
LOG_PMF_CACHE_BYTES = 64 * 2**20


class _ByteBoundedCache:
    """Arrays by key, least recently used dropped first so that their bytes stay at most
    ``limit`` (an array larger than the limit is computed but not kept). Thread-safe."""

    def __init__(self, limit: int):
        self.limit = limit
        self.bytes = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, compute) -> np.ndarray:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = compute()
        with self._lock:
            if key not in self._entries and value.nbytes <= self.limit:
                self._entries[key] = value
                self.bytes += value.nbytes
                while self.bytes > self.limit:
                    _, dropped = self._entries.popitem(last=False)
                    self.bytes -= dropped.nbytes
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0


_LOG_PMFS = _ByteBoundedCache(LOG_PMF_CACHE_BYTES)


def clear_log_pmf_cache() -> None:
    """Forget every log pmf :func:`log_pmf` kept (e.g. after a test changes a pmf in place)."""
    _LOG_PMFS.clear()


def _log_pmf_cached(mechanism: Mechanism, x: Fraction) -> np.ndarray:
    return _LOG_PMFS.get((mechanism, x), lambda: _log_pmf_computed(mechanism, x))


def _log_pmf_computed(mechanism: Mechanism, x: Fraction) -> np.ndarray:
    if hasattr(mechanism, "log_pmf_float"):
        return mechanism.log_pmf_float(x)
    with mpmath.workdps(LOG_PMF_DPS):
        values = mechanism.pmf(x)
        if any(p < 0 for p in values):
            raise SelfCheckFailed(mechanism.name, f"the pmf at x = {float(x):g} has a negative value")
        logs = [mpmath.log(p) for p in values if p > 0]
        check_log_range(mechanism, x, min(logs), LOG_LIMIT, "the fast engine")
        out = np.full(len(values), -np.inf)
        out[[i for i, p in enumerate(values) if p > 0]] = [float(v) for v in logs]
    return out


def check_log_range(mechanism: Mechanism, x: Fraction, smallest_log, limit: float, engine: str) -> None:
    """:class:`ParameterError` naming the mechanism's :meth:`~Mechanism.tail_parameter` if the
    smallest positive probability at ``x``, e^{smallest_log}, lies below e^{−limit}, the
    smallest that ``engine`` represents (the value would otherwise become 0 and D = +∞)."""
    if smallest_log < -limit:
        parameter, hint = mechanism.tail_parameter(limit)
        raise ParameterError(parameter, f"{engine} represents probabilities down to e^(−{limit:.3g}), but the pmf at "
                                     f"x = {float(x):.6g} has one of e^({mpmath.nstr(smallest_log, 3)}): {hint}")



#: the registered mechanisms by their command-line names (:func:`register`)
MECHANISMS: dict[str, type[Mechanism]] = {}


#: how the command line spells a mechanism: lower-case letters, digits and hyphens
NAME_PATTERN = re.compile(r"[a-z][a-z0-9-]*")
#: the most breakpoints of the example at which :func:`register` checks the pmf
CHECKED_BREAKPOINTS = 64


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Make ``cls`` known to every command (one line; also usable as a class decorator).

    Checked at once (TypeError or ValueError naming the class, before anything is registered):
    ``name`` is new and spelled as a command-line word (:data:`NAME_PATTERN`); ``title`` and
    ``paper`` are strings; :data:`~Mechanism.PARAMS` are :class:`Param` objects naming exactly its
    dataclass fields, with the same defaults; and, for a mechanism defined outside rdpcalc (the
    built-in ones are checked by the test suite), its pmf at the breakpoints of its example
    (:func:`check_example_pmfs`)."""
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise TypeError(f"register takes a Mechanism subclass, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{cls.__name__}.name must be a command-line word (lower-case letters, digits and hyphens, "
                         f"starting with a letter), got {name!r}")
    for attribute in ("title", "paper"):
        if not isinstance(getattr(cls, attribute, None), str):
            raise TypeError(f"{cls.__name__}.{attribute} must be a string, got {getattr(cls, attribute, None)!r}")
    if name in MECHANISMS and MECHANISMS[name] is not cls:
        raise ValueError(f"a mechanism named {name!r} is already registered ({MECHANISMS[name].__name__})")
    params = getattr(cls, "PARAMS", None)
    if not isinstance(params, tuple) or not params or not all(isinstance(param, Param) for param in params):
        raise TypeError(f"{cls.__name__}.PARAMS must be a non-empty tuple of Param, got {params!r}")
    fields = {field.name: field for field in getattr(cls, "__dataclass_fields__", {}).values()}
    declared = {param.name: param for param in cls.PARAMS}
    if sorted(fields) != sorted(declared):
        raise ValueError(f"{cls.__name__}: PARAMS {list(declared)} must name exactly its dataclass fields {list(fields)}")
    for field_name, field in fields.items():  # the help shows the Param's default, the dataclass uses the field's
        param = declared[field_name]
        if field.default is MISSING:
            agree = param.required
        else:
            agree = param.convert(field.default) == (None if param.default is None else param.convert(param.default))
        if not agree:
            raise ValueError(f"{cls.__name__}.{field_name}: the field's default and the Param's default differ")
    if not cls.__module__.startswith(__package__.partition(".")[0] + "."):
        check_example_pmfs(cls)
    MECHANISMS[name] = cls
    return cls


def example_instance(cls: type[Mechanism]) -> Mechanism:
    """The mechanism with its :data:`~Mechanism.EXAMPLE` parameters (the defaults for the rest);
    ValueError naming the class where they do not make one."""
    values = {}
    for option, value in cls.EXAMPLE.items():
        param = next((param for param in cls.PARAMS if option in (param.option, *param.aliases)), None)
        if param is None:
            raise ValueError(f"{cls.__name__}.EXAMPLE: {option!r} is not an option of its parameters")
        values[param.name] = value
    missing = [param.name for param in cls.PARAMS if param.required and param.name not in values]
    if missing:
        raise ValueError(f"{cls.__name__}.EXAMPLE must give the required parameter {missing[0]!r}")
    try:
        return cls(**values)
    except ParameterError as error:
        raise ValueError(f"{cls.__name__}.EXAMPLE: {error}") from None


def check_probabilities(mechanism: Mechanism, probabilities: Sequence, tolerance, where: str) -> None:
    """:class:`SelfCheckFailed` naming the mechanism and ``where`` unless ``probabilities`` (mpmath
    numbers) are ``support_size`` values, each finite and ≥ 0, summing to 1 within ``tolerance``
    (less at most :meth:`~Mechanism.tail_mass_bound`, for a windowed pmf)."""
    if len(probabilities) != mechanism.support_size:
        raise SelfCheckFailed(mechanism.name, f"{where} has {len(probabilities)} probabilities, but support_size is "
                                              f"{mechanism.support_size}")
    if not all(mpmath.isfinite(p) and p >= 0 for p in probabilities):
        raise SelfCheckFailed(mechanism.name, f"{where} has a negative, infinite or NaN probability")
    total = mpmath.fsum(probabilities)
    missing = mpmath.mpf(mechanism.tail_mass_bound())
    if not 1 - missing - tolerance <= total <= 1 + tolerance:
        raise SelfCheckFailed(mechanism.name, f"{where} sums to {mpmath.nstr(total, 12)}, not 1")


def check_example_pmfs(cls: type[Mechanism]) -> None:
    """The pmf of :func:`example_instance` at (up to :data:`CHECKED_BREAKPOINTS` of) its
    breakpoints, at 30 digits: ``support_size`` probabilities, each finite and ≥ 0, summing to 1
    (less at most :meth:`~Mechanism.tail_mass_bound`, for a windowed pmf) within 10⁻²⁰;
    :class:`SelfCheckFailed` naming the mechanism and the input otherwise."""
    mechanism = example_instance(cls)
    points = list(mechanism.breakpoints())
    step = max(1, len(points) // CHECKED_BREAKPOINTS)
    with mpmath.workdps(30):
        for x in points[::step]:
            where = f"the pmf of its EXAMPLE at x = {float(x):g}"
            try:
                probabilities = [mpmath.mpf(p) for p in mechanism.pmf(Fraction(x))]
            except (TypeError, ValueError, ArithmeticError) as error:
                raise SelfCheckFailed(cls.name, f"{where} fails: {type(error).__name__}: {error}") from None
            check_probabilities(mechanism, probabilities, mpmath.mpf("1e-20"), where)
