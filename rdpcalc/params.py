"""Options declared once, as data: a :class:`Param` names an option, its kind, its range and its
help, and converts and checks a value against them. Mechanisms declare their parameters so
(``PARAMS``), and every other module its options with a range (``n``, ``dps``, ``budget``, …):
the API checks a value with :meth:`Param.convert`, and the command line builds the option,
its help and its error from the same declaration.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from .errors import ParameterError
from .exactnum import fmt, to_fraction, to_int

#: what a parameter's values are: an exact number (Fraction), an integer, one of ``choices``, an
#: integer or "inf" (None), or a finite float (an option of float arithmetic: a noise scale, a
#: grid step, an ε target)
KINDS = ("number", "integer", "choice", "integer-or-inf", "float")


@dataclass(frozen=True)
class SolveRange:
    """Where ``rdpcalc calibrate`` searches a parameter: from ``low`` to ``high`` (times the
    parameter ``relative_to`` when given, e.g. a noise scale as a multiple of the clipping
    bound), on a log scale if ``log``; no higher than ``largest(params)`` where given (the
    largest valid value, which the other parameters may lower)."""

    low: float
    high: float
    log: bool = False
    relative_to: str | None = None
    largest: Callable[[dict], float] | None = None

    def ends(self, params: dict) -> tuple[float, float, bool]:
        """(low, high, log) for the other parameters ``params``."""
        unit = 1.0 if self.relative_to is None else float(params[self.relative_to])
        high = self.high * unit if self.largest is None else min(self.high * unit, self.largest(params))
        return self.low * unit, high, self.log


@dataclass(frozen=True)
class Param:
    """One option, declared once (a mechanism's parameter or any other option with a range): the
    API converts and checks it, the CLI builds its option, calibrate reads its search range.

    ``name`` is the dataclass field and the API keyword (the paper's symbol); ``kind`` one of
    :data:`KINDS`; ``default`` its default (None: required, unless ``optional``, where None
    means "not given"); ``low``/``high`` its range, open at an end where ``low_open``/``high_open``,
    and ``high_name`` the name of an upper end set from another option (:meth:`up_to`);
    ``choices`` the values of a choice. On the command line it is ``option`` (default
    ``--name``), also spelled ``aliases`` (the paper's symbol where the shared vocabulary
    differs) and, with a one-line hint, ``deprecated``; ``alias_note``, where given, is printed
    as a note whenever an alias is used (a symbol that reads as another option: RQM's ``--delta``
    is its Δ, not the DP δ). ``solve``: its range for calibrate."""

    name: str
    kind: str
    help: str
    default: object = None
    low: Fraction | int | None = None
    high: Fraction | int | None = None
    low_open: bool = False
    high_open: bool = False
    high_name: str = ""
    choices: tuple[str, ...] = ()
    option: str = ""
    aliases: tuple[str, ...] = ()
    alias_note: str = ""
    deprecated: tuple[str, ...] = ()
    solve: SolveRange | None = None
    optional: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Param {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.option:
            object.__setattr__(self, "option", "--" + self.name.replace("_", "-"))

    @property
    def required(self) -> bool:
        return self.default is None and not self.optional

    def convert(self, value):
        """``value`` (a number, a decimal or rational string, a choice) converted and checked:
        :class:`ParameterError` naming the parameter and its range otherwise. None stays None
        for an optional parameter and for an integer-or-inf one (where it is ∞), so converting
        a converted value changes nothing (``dataclasses.replace`` converts again)."""
        if value is None or (self.optional and isinstance(value, str) and value.strip().lower() == "none"):
            if self.optional or (value is None and self.kind == "integer-or-inf"):  # None: not given, or ∞
                return None
            raise ParameterError(self.name, f"is required: {self.range_text()}")
        if self.kind == "choice":
            if value not in self.choices:
                raise ParameterError(self.name, f"must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        if self.kind == "integer-or-inf" and isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "∞"):
            return None
        integer = self.kind in ("integer", "integer-or-inf")
        try:
            number = (to_int(value, self.name) if integer else _to_float(value, self.name) if self.kind == "float"
                      else to_fraction(value, self.name))
        except ParameterError:
            if not self._bounded():
                raise
            raise ParameterError(self.name, f"{self.range_text()}, got {value!r}") from None  # the range, not just the type
        if not self._in_range(number):
            shown = number if self.kind == "float" else fmt(Fraction(number))
            raise ParameterError(self.name, f"{self.range_text()}, got {shown}")
        return number

    def _in_range(self, number) -> bool:
        low_ok = self.low is None or (number > self.low if self.low_open else number >= self.low)
        high_ok = self.high is None or (number < self.high if self.high_open else number <= self.high)
        return low_ok and high_ok

    def up_to(self, high, name: str) -> Param:
        """This option with the upper end ``high``, another option's value (or a function of it)
        called ``name`` in its error: ``participation`` ≤ ``rounds`` reads "must be an integer in
        [1, `rounds`] = [1, 40]"."""
        return dataclasses.replace(self, high=high, high_name=name)

    def _bounded(self) -> bool:
        return self.low is not None or self.high is not None

    def range_words(self) -> str:
        """The valid values in a few symbols, for help texts: ``15 … 1000``, ``≥ 1``, ``> 0``,
        ``(0, 1)``, ``fast|exact`` (powers of ten from 10⁴ as such: ``1 … 10⁶``)."""
        if self.kind == "choice":
            return "|".join(self.choices)
        low, high = _number_words(self.low), _number_words(self.high)
        if self.low is not None and self.high is not None:
            if not self.low_open and not self.high_open:
                return f"{low} … {high}"
            return f"{'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '≥'} {low}"
        if self.high is not None:
            return f"{'<' if self.high_open else '≤'} {high}"
        return "any " + ("number" if self.kind in ("number", "float") else "integer")

    def help_text(self, text: str | None = None) -> str:
        """The help of the option: ``text`` (default :attr:`help`) with ``{range}`` replaced by
        :meth:`range_words`, so the range is written once, in the declaration."""
        return (self.help if text is None else text).replace("{range}", self.range_words())

    def range_text(self) -> str:
        """"must be …" with the valid values."""
        if self.kind == "choice":
            return f"must be one of {', '.join(self.choices)}"
        what = "a number" if self.kind in ("number", "float") else "an integer"
        suffix = " or inf" if self.kind == "integer-or-inf" else ""
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            low, high = fmt(Fraction(self.low)), fmt(Fraction(self.high))
            named = f"{left}{low}, {self.high_name}{right} = " if self.high_name else ""
            return f"must be {what} in {named}{left}{low}, {high}{right}{suffix}"
        if self.low is not None:
            return f"must be {what} {'>' if self.low_open else '≥'} {fmt(Fraction(self.low))}{suffix}"
        if self.high is not None:
            return f"must be {what} {'<' if self.high_open else '≤'} {fmt(Fraction(self.high))}{suffix}"
        return f"must be {what}{suffix}"


def split_record(record: type, options: dict) -> tuple[object, dict]:
    """The fields of the dataclass ``record`` taken out of ``options`` (keyword → value) as one
    record, and the rest: how flat keywords (a command line, a sweep point) become the records
    the API takes (``RunOptions``, ``NeighbourOptions``)."""
    names = {field.name for field in dataclasses.fields(record)}
    rest = {key: value for key, value in options.items() if key not in names}
    return record(**{key: value for key, value in options.items() if key in names}), rest


def _to_float(value, parameter: str) -> float:
    """``value`` (a number or a decimal text) as a finite float; a bool is not a number."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ParameterError(parameter, f"must be a finite number, got {value!r}")
    return number


_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _number_words(value) -> str:
    """A range end for a help text: a power of ten from 10⁴ up as 10ᵏ, any other value as :func:`fmt`."""
    if value is None:
        return ""
    number = Fraction(value)
    if number.denominator == 1 and number >= 10**4 and str(number.numerator).rstrip("0") == "1":
        return "10" + str(len(str(number.numerator)) - 1).translate(_SUPERSCRIPTS)
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", fmt(number))  # 1e-6, not 1e-06
