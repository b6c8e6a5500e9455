"""What every mechanism provides to the engines, the neighbour search and the CLI.

A mechanism is a frozen dataclass of exact parameters (``Fraction`` / ``int``) that validates
itself on construction. It maps one client's input ``x`` in ``[-bound, bound]`` to an integer
output in ``{0, …, support_size-1}``; the SecAgg server sees the sum of those integers.

Each mechanism gives its single-client pmf once, in mpmath, in a form free of cancellation;
the exact engine uses it at the working precision and the fast engine takes its logarithm
rounded to float64 (:func:`log_pmf`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar

import mpmath
import numpy as np

from ..errors import ParameterError
from ..exactnum import fmt, to_fraction, to_mpf

#: the largest number of output values of one client (levels, trials + 1): the exact pmfs cost
#: O(levels²) mpmath operations
MAX_LEVELS = 4096
#: Digits used to compute single-client pmfs before rounding their logs to float64.
LOG_PMF_DPS = 40
#: the fast engine takes single-client log-probabilities down to −LOG_LIMIT: sums of n ≤ 10⁵
#: clients, times orders α ≤ 10¹⁵, then stay far inside float64's range (1.8e308)
LOG_LIMIT = 1e280


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: its field name, CLI option, type (``Fraction``, ``int`` or ``str``),
    help, default (None: required) and, for a ``str``, its choices."""

    name: str
    option: str
    kind: type
    help: str
    default: str | None = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Bound:
    """A closed-form bound or value from a paper (as printed, or corrected: ``source`` says,
    e.g. "paper eq. (3)" or "derived").

    ``alpha`` is the order it is about (``math.inf`` for D_∞; None for a non-privacy quantity
    such as an MSE). ``target`` is the exact quantity it is checked against: ``"worst"`` (the
    single-client D_α maximised over input pairs), ``"pair"`` (D_α at the extreme pair
    (b, −b)), an explicit input pair ``(x, x')``, an :class:`Exact` value, or ``None`` for a
    value that is only reported. ``relation`` is ``"≤"`` for a bound, ``"="``
    for a closed form of the target, ``""`` when only reported."""

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
    compute (e.g. an MSE): the value and what it is."""

    value: mpmath.mpf
    text: str


class Mechanism(ABC):
    """Interface of a quantization mechanism (see the module docstring)."""

    #: short name used on the command line
    name: ClassVar[str]
    #: human-readable title
    title: ClassVar[str]
    #: the parameters, in CLI order
    PARAMS: ClassVar[tuple[ParamSpec, ...]]

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

    #: how the worst case of the SecAgg sum treats the other clients (:mod:`rdpcalc.worstcase`):
    #: "affine" (the pmf is affine in x between breakpoints, so others at breakpoints are the
    #: whole family), "relaxed" (PBM: a certified relaxation, ``relaxed_components``), or
    #: "breakpoints" (others searched at the breakpoints only; certified by one client)
    OTHERS_FAMILY: ClassVar[str] = "affine"

    #: True where the pmf at −x is the pmf at x reversed and the breakpoints are symmetric
    #: (the worst-case search then skips mirror images; tested per mechanism)
    MIRRORED: ClassVar[bool] = False

    def mirror_symmetric(self) -> bool:
        """Whether P_{−x}(i) = P_x(support_size − 1 − i) for every x (``MIRRORED``)."""
        return self.MIRRORED

    #: extra parameters of ``rdpcalc bound`` for this mechanism (e.g. QMGeo's d and κ)
    BOUND_PARAMS: ClassVar[tuple[ParamSpec, ...]] = ()

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

    def check_input(self, x, option: str = "--x") -> Fraction:
        """``x`` as an exact Fraction, or :class:`ParameterError` if outside the input range.

        A Fraction is taken as it is (the breakpoints of a mechanism with ``--c 1e-300`` lie
        below the magnitudes a user may type); other values are parsed by :func:`to_fraction`."""
        value = x if isinstance(x, Fraction) else to_fraction(x, option)
        if abs(value) > self.bound:
            b = fmt(self.bound)
            raise ParameterError(option, f"must lie in [-{b}, {b}], got {fmt(value)}")
        return value

    def tail_option(self, limit: float) -> tuple[str, str]:
        """The option whose extreme values make this mechanism's probabilities smallest, and
        the range that keeps them above e^{−limit} (for the refusal when a probability leaves
        an engine's range; mechanisms whose probabilities can get there say more)."""
        return self.PARAMS[0].option, "use a less extreme value"

    def parameters(self) -> dict[str, float | int]:
        """The parameters as plain numbers, for output records."""
        out: dict[str, float | int] = {}
        for field in fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            out[field.name] = float(value) if isinstance(value, Fraction) else value
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


@lru_cache(maxsize=4096)
def _log_pmf_cached(mechanism: Mechanism, x: Fraction) -> np.ndarray:
    if hasattr(mechanism, "log_pmf_float"):
        return mechanism.log_pmf_float(x)
    with mpmath.workdps(LOG_PMF_DPS):
        values = mechanism.pmf(x)
        if any(p < 0 for p in values):
            raise ArithmeticError(f"self-check failed: the pmf of {mechanism!r} at x = {x} has a negative value")
        logs = [mpmath.log(p) for p in values if p > 0]
        check_log_range(mechanism, x, min(logs), LOG_LIMIT, "the fast engine")
        out = np.full(len(values), -np.inf)
        out[[i for i, p in enumerate(values) if p > 0]] = [float(v) for v in logs]
    return out


def check_log_range(mechanism: Mechanism, x: Fraction, smallest_log, limit: float, engine: str) -> None:
    """:class:`ParameterError` naming the mechanism's :meth:`~Mechanism.tail_option` if the
    smallest positive probability at ``x``, e^{smallest_log}, lies below e^{−limit}, the
    smallest that ``engine`` represents (the value would otherwise become 0 and D = +∞)."""
    if smallest_log < -limit:
        option, hint = mechanism.tail_option(limit)
        raise ParameterError(option, f"{engine} represents probabilities down to e^(−{limit:.3g}), but the pmf at "
                                     f"x = {float(x):.6g} has one of e^({mpmath.nstr(smallest_log, 3)}): {hint}")

