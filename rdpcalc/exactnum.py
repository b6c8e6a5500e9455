"""Exact (rational) parameter values.

Parameters are kept as :class:`fractions.Fraction`: a decimal given as a string
(``q="0.42"``) is then exactly 21/50, grid positions such as B(j) ≤ x are decided without
rounding, and the mpmath engine converts to ``mpf`` at whatever precision it runs.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from numbers import Rational

import mpmath

from .errors import ParameterError

Number = int | float | str | Fraction

#: Parameters are kept exact but must be representable as float64 numbers for the fast engine
#: and the outputs: a non-zero magnitude must lie in [1e-300, 1e300].
MAX_MAGNITUDE = Fraction(10) ** 300


def to_fraction(value: Number, parameter: str) -> Fraction:
    """Convert ``value`` (int, float, decimal or rational string, Fraction) to an exact Fraction.

    Floats convert exactly (their binary value); strings are read as decimals, so "0.1" is
    1/10, or as a ratio of two decimals, so "21/50" is 21/50. NaN, infinities and non-numbers
    raise :class:`ParameterError` naming ``parameter``.
    """
    if isinstance(value, bool):
        raise ParameterError(parameter, f"must be a finite number, got {value!r}")
    if isinstance(value, Rational):
        value = Fraction(value)
        if value and not 1 / MAX_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE:
            raise ParameterError(parameter, f"must be 0 or of magnitude within [1e-300, 1e300], got {fmt(value)}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(parameter, f"must be a finite number, got {value!r}")
        return to_fraction(Fraction(value), parameter)
    if isinstance(value, str) and "/" in value:
        numerator, _, denominator = value.partition("/")
        if "/" in denominator:
            raise ParameterError(parameter, f"must be a finite number or a ratio of two, got {value!r}")
        top, bottom = to_fraction(numerator, parameter), to_fraction(denominator, parameter)
        if bottom == 0:
            raise ParameterError(parameter, f"must be a finite number, got {value!r} (division by zero)")
        return to_fraction(top / bottom, parameter)
    if isinstance(value, str):
        try:
            decimal = Decimal(value.strip())
        except InvalidOperation:
            raise ParameterError(parameter, f"must be a finite number, got {value!r}") from None
        if not decimal.is_finite():
            raise ParameterError(parameter, f"must be a finite number, got {value!r}")
        if decimal and abs(decimal.adjusted()) > 300:  # cheap first: "1e999999999" is never made a Fraction
            raise ParameterError(parameter, f"must be 0 or of magnitude within [1e-300, 1e300], got {value!r}")
        return to_fraction(Fraction(decimal), parameter)
    raise ParameterError(parameter, f"must be a finite number, got {value!r}")


def to_int(value: int | str, parameter: str) -> int:
    """Convert ``value`` to an int; a non-integral value raises :class:`ParameterError`."""
    if isinstance(value, bool):
        raise ParameterError(parameter, f"must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    fraction = to_fraction(value, parameter)
    if fraction.denominator != 1:
        raise ParameterError(parameter, f"must be an integer, got {value!r}")
    return int(fraction)


def fmt(value: Fraction) -> str:
    """A short decimal rendering of an exact value (for messages and tables), also for values
    beyond float's range."""
    try:
        return f"{float(value):.10g}"
    except OverflowError:
        return f"{Decimal(value.numerator) / Decimal(value.denominator):.10g}"


def positive(value: Number, parameter: str) -> Fraction:
    """``value`` as a Fraction that must be > 0."""
    result = to_fraction(value, parameter)
    if result <= 0:
        raise ParameterError(parameter, f"must be > 0, got {fmt(result)}")
    return result


def to_mpf(value) -> mpmath.mpf:
    """An mpf at the current mpmath precision: an exact Fraction rounded once (mpmath before
    1.4 does not take Fractions), any other number as mpmath reads it."""
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    return mpmath.mpf(value)
