"""The two engines behind every number: ``exact`` (mpmath) and ``fast`` (float64 log domain).

Both offer the same four operations on a mechanism's pmfs, so the neighbour search and the
commands do not care which one runs. They work on *batches*: one pmf per row, all rows on
the same support.

* ``client(mechanism, x)``: one client's pmf at input x;
* ``rests(mechanism, n_rest, ks)``: the batch whose row i is the pmf of the sum of ks[i]
  clients at +bound and n_rest − ks[i] at −bound;
* ``add_client(client, rests)``: the batch of totals;
* ``divergences(p, q, alphas)``: for each row, D_α(P‖Q) for each α.

Values come back as floats (``math.inf`` for +∞); the exact engine also keeps its mpf values
for printing at full precision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import mpmath
import numpy as np

from ..errors import ParameterError
from ..mechanisms import Mechanism, log_pmf
from . import exact, fast, tilted

ENGINES = ("fast", "exact")

#: the fast engine switches from the direct log-domain convolution to tilted FFTs above
#: this support size of the others' sum
TILT_ABOVE = 2000
#: and builds all rests at once (Pascal triangle) when this many or more are needed and
#: n_rest is at most PASCAL_MAX_N
PASCAL_MAX_N = 150
#: the exact engine refuses sums whose support exceeds this (its cost grows as support²)
EXACT_MAX_SUPPORT = 20_001


class FastEngine:
    """float64 log-domain engine: pmfs are arrays of log-probabilities."""

    name = "fast"
    dps = None

    def client(self, mechanism: Mechanism, x: Fraction) -> np.ndarray:
        logs = log_pmf(mechanism, x)
        total = float(fast.logsumexp(logs))
        if np.any(np.isnan(logs)) or np.any(logs > 1e-12) or abs(total) > 1e-9:
            raise ArithmeticError(f"self-check failed: the pmf of {mechanism!r} at x = {x} has log-mass {total!r}")
        return logs

    def rests(self, mechanism: Mechanism, n_rest: int, ks: Sequence[int]) -> np.ndarray:
        plus = log_pmf(mechanism, mechanism.bound)
        minus = log_pmf(mechanism, -mechanism.bound)
        if n_rest == 0:
            return np.zeros((len(ks), 1))
        size = n_rest * (len(plus) - 1) + 1
        full_support = bool(np.all(np.isfinite(plus)) and np.all(np.isfinite(minus)))
        if len(ks) > 2 and (n_rest <= PASCAL_MAX_N or not full_support):
            return fast.log_mixed_power_rows(plus, minus, n_rest)[list(ks)]
        if size <= TILT_ABOVE or not full_support:
            return np.array([fast.log_mixed_power(plus, minus, k, n_rest - k) for k in ks])
        return np.array([self._tilted_rest(plus, minus, k, n_rest - k) for k in ks])

    @staticmethod
    def _tilted_rest(plus: np.ndarray, minus: np.ndarray, k: int, l: int) -> np.ndarray:
        try:
            return tilted.log_sum_pmf([(plus, k), (minus, l)])
        except tilted.TiltingFailed:
            return fast.log_mixed_power(plus, minus, k, l)

    def add_client(self, client: np.ndarray, rest: np.ndarray) -> np.ndarray:
        return fast.log_convolve(client, rest)

    def divergences(self, p: np.ndarray, q: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
        return fast.renyi_divergences(p, q, np.asarray(alphas, dtype=float))

    @staticmethod
    def to_float(value) -> float:
        return float(value)


class ExactEngine:
    """Arbitrary-precision engine at ``dps`` significant digits: pmfs are lists of MPFR
    numbers (see :mod:`.exact`)."""

    name = "exact"

    def __init__(self, dps: int = 50):
        if not 15 <= dps <= 1000:
            raise ParameterError("--dps", f"must be an integer in [15, 1000], got {dps}")
        self.dps = dps

    def client(self, mechanism: Mechanism, x: Fraction) -> list:
        with mpmath.workdps(self.dps + 5):
            probabilities = mechanism.pmf(x)
            total = mpmath.fsum(probabilities)
            if any(p < 0 or mpmath.isnan(p) for p in probabilities) or abs(total - 1) > mpmath.mpf(10) ** (-self.dps):
                raise ArithmeticError(f"self-check failed: the pmf of {mechanism!r} at x = {x} sums to {total}")
            return exact.from_mpmath(probabilities)

    def rests(self, mechanism: Mechanism, n_rest: int, ks: Sequence[int]) -> list[list]:
        size = n_rest * (mechanism.support_size - 1) + 1
        if size > EXACT_MAX_SUPPORT:
            raise ParameterError(
                "--engine",
                f"exact supports sums with n·(outputs−1)+1 ≤ {EXACT_MAX_SUPPORT}, this one has "
                f"{size}; use --engine fast",
            )
        plus, minus = self.client(mechanism, mechanism.bound), self.client(mechanism, -mechanism.bound)
        with exact.precision(self.dps):
            if len(ks) > 2:
                rows = exact.mixed_power_rows(plus, minus, n_rest, ks)
                return [rows[k] for k in ks]
            return [exact.mixed_power(plus, minus, k, n_rest - k) for k in ks]

    def add_client(self, client: list, rests: list[list]) -> list[list]:
        with exact.precision(self.dps):
            return [exact.convolve(client, rest) for rest in rests]

    def divergences(self, p: list[list], q: list[list], alphas: Sequence[float]) -> list[list]:
        return [exact.renyi_divergences(row_p, row_q, alphas, self.dps) for row_p, row_q in zip(p, q, strict=True)]

    @staticmethod
    def to_float(value) -> float:
        return float(value)

    def digits(self, value) -> str:
        """All ``dps`` significant digits of a value of this engine."""
        if value == math.inf:
            return "inf"
        with mpmath.workdps(self.dps + 5):
            return mpmath.nstr(exact.to_mpmath(value), self.dps)


def make_engine(name: str, dps: int = 50) -> FastEngine | ExactEngine:
    """The engine called ``name`` ("fast" or "exact"; dps only matters for exact)."""
    if name == "fast":
        return FastEngine()
    if name == "exact":
        return ExactEngine(dps)
    raise ParameterError("--engine", f"must be one of {', '.join(ENGINES)}, got {name!r}")


__all__ = ["ENGINES", "ExactEngine", "FastEngine", "make_engine", "exact", "fast", "tilted"]
