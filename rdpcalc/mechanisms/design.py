"""How a mechanism is set up at a budget of B bits per coordinate for the SecAgg sum of n
clients (what ``rdpcalc compare`` calibrates): each mechanism that can be compared declares its
:class:`Design` (:meth:`rdpcalc.mechanisms.Mechanism.design`), its free parameter and the rule
that fits the rest into the modulus M = 2^B."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from .base import MAX_LEVELS

#: standard deviations of the sum's noise that the modular range keeps beside the inputs (ddg, skellam)
Z_RANGE = 4


@dataclass(frozen=True)
class Design:
    """How a mechanism is set up at B bits for n clients: ``build(value, n, bits, c)`` is the
    mechanism with its free parameter ``free`` at ``value`` (None where the bits cannot hold
    it), searched in ``ends(n, bits, c)`` (log scale if ``log``; integers if ``integer``);
    ``private_high``: ε falls as the value grows; ``rule`` says the design in words."""

    free: str
    ends: Callable[[int, int, Fraction], tuple[float, float]]
    build: Callable[[float, int, int, Fraction], object]
    log: bool = True
    integer: bool = False
    private_high: bool = True
    rule: str = ""


def levels_at_bits(n: int, bits: int) -> int:
    """m: the most output values per client with n(m − 1) + 1 ≤ 2^B (capped at MAX_LEVELS)."""
    return min(MAX_LEVELS, (2**bits - 1) // n + 1)


def unbounded_reach(deviation: float, n: int, bits: int) -> int:
    """K with n·2K + 2·Z_RANGE·√n·σ ≤ 2^B for a noise of standard deviation σ = ``deviation``
    grid steps (0 when none fits)."""
    return max(0, math.floor((2**bits - 2 * Z_RANGE * math.sqrt(n) * deviation) / (2 * n)))


def noise_ends(n: int, bits: int, c: Fraction) -> tuple[float, float]:
    """(0.05, the largest grid deviation that leaves K ≥ 1)."""
    return 0.05, max(0.1, (2**bits - 2 * n) / (2 * Z_RANGE * math.sqrt(n)))
