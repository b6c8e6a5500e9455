"""Rényi orders α from the command line: single values, ranges, and ∞."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .errors import ParameterError

#: orders used when none are given
DEFAULT_ALPHAS = (1.0, 2.0, 10.0, math.inf)
#: the largest finite order accepted (beyond, the divergence is D_∞ to float precision)
MAX_ORDER = 1e15
#: the largest number of orders one range may produce
MAX_COUNT = 100_000


def parse_alpha(text: str | float, parameter: str = "alphas") -> float:
    """One order: a number ≥ 1 (1 means KL) or ``inf``; ``parameter`` names it in the error."""
    if isinstance(text, str):
        word = text.strip().lower()
        if word in ("inf", "infinity", "∞", "+inf"):
            return math.inf
        try:
            value = float(word)
        except ValueError:
            raise ParameterError(parameter, f"must be a number ≥ 1 or 'inf', got {text!r}") from None
    else:
        value = float(text)
    if value != value or value < 1 or MAX_ORDER < value < math.inf:
        raise ParameterError(parameter, f"must be a number in [1, {MAX_ORDER:g}] or 'inf', got {text!r}")
    return value


def parse_alpha_range(text: str) -> list[float]:
    """``START:STOP:COUNT[:log|lin]`` → COUNT orders from START to STOP inclusive, log spaced
    by default (1 < START < STOP < ∞); an error names ``alpha_ranges``."""
    parts = text.split(":")
    usage = f"must be START:STOP:COUNT[:log|lin] with 1 ≤ START < STOP finite and 2 ≤ COUNT ≤ {MAX_COUNT}, got {text!r}"
    if len(parts) not in (3, 4):
        raise ParameterError("alpha_ranges", usage)
    spacing = parts[3].strip().lower() if len(parts) == 4 else "log"
    try:
        start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise ParameterError("alpha_ranges", usage) from None
    if spacing not in ("log", "lin") or not (1 <= start < stop <= MAX_ORDER) or not 2 <= count <= MAX_COUNT:
        raise ParameterError("alpha_ranges", usage)
    if spacing == "log":
        values = np.geomspace(start, stop, count)
    else:
        values = np.linspace(start, stop, count)
    values[0], values[-1] = start, stop
    return [float(v) for v in values]


def collect_alphas(singles: Iterable[str | float] | None = (), ranges: Iterable[str] = ()) -> list[float]:
    """All requested orders (numbers or texts such as "inf"), sorted and without duplicates; the
    defaults if none."""
    values = [parse_alpha(text) for text in singles or ()]
    for text in ranges:
        values.extend(parse_alpha_range(text))
    if not values:
        values = list(DEFAULT_ALPHAS)
    return sorted(set(values))


def format_alpha(alpha: float) -> str:
    return "inf" if alpha == math.inf else f"{alpha:g}"
