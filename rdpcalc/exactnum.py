"""Exact (rational) parameter values.

Parameters are kept as :class:`fractions.Fraction`: a decimal typed at the command line
(``--q 0.42``) is then exactly 21/50, grid positions such as B(j) ≤ x are decided without
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

#: Decimal strings beyond 1e±4000 are refused (an exact Fraction of 1e1000000 would be huge).
MAX_DECIMAL_EXPONENT = 4000


def to_fraction(value: Number, option: str) -> Fraction:
    """Convert ``value`` (int, float, decimal string or Fraction) to an exact Fraction.

    Floats convert exactly (their binary value); strings are read as decimals, so "0.1" is
    1/10. NaN, infinities and non-numbers raise :class:`ParameterError` naming ``option``.
    """
    if isinstance(value, bool):
        raise ParameterError(option, f"must be a finite number, got {value!r}")
    if isinstance(value, Rational):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(option, f"must be a finite number, got {value!r}")
        return Fraction(value)
    if isinstance(value, str):
        try:
            decimal = Decimal(value.strip())
        except InvalidOperation:
            raise ParameterError(option, f"must be a finite number, got {value!r}") from None
        if not decimal.is_finite():
            raise ParameterError(option, f"must be a finite number, got {value!r}")
        if decimal and abs(decimal.adjusted()) > MAX_DECIMAL_EXPONENT:
            raise ParameterError(
                option, f"must have magnitude within 1e±{MAX_DECIMAL_EXPONENT}, got {value!r}"
            )
        return Fraction(decimal)
    raise ParameterError(option, f"must be a finite number, got {value!r}")


def to_int(value: int | str, option: str) -> int:
    """Convert ``value`` to an int; a non-integral value raises :class:`ParameterError`."""
    if isinstance(value, bool):
        raise ParameterError(option, f"must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    fraction = to_fraction(value, option)
    if fraction.denominator != 1:
        raise ParameterError(option, f"must be an integer, got {value!r}")
    return int(fraction)


def fmt(value: Fraction) -> str:
    """A short decimal rendering of an exact value (for messages and tables)."""
    return f"{float(value):.10g}"


def positive(value: Number, option: str) -> Fraction:
    """``value`` as a Fraction that must be > 0."""
    result = to_fraction(value, option)
    if result <= 0:
        raise ParameterError(option, f"must be > 0, got {fmt(result)}")
    return result


def open_unit(value: Number, option: str, upper: Fraction | int) -> Fraction:
    """``value`` as a Fraction in the open interval (0, upper)."""
    result = to_fraction(value, option)
    if not 0 < result < upper:
        raise ParameterError(
            option, f"must lie in the open interval (0, {fmt(Fraction(upper))}), got {fmt(result)}"
        )
    return result


def to_mpf(value: Fraction) -> mpmath.mpf:
    """An exact Fraction rounded once to an mpf at the current mpmath precision."""
    return mpmath.mpf(value.numerator) / value.denominator
