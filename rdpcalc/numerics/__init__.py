"""The two engines behind every number: ``exact`` (mpmath) and ``fast`` (float64 log domain).

Both offer the same four operations on a mechanism's pmfs, so the neighbour search and the
commands do not care which one runs. They work on *batches*: one pmf per row, all rows on
the same support.

* ``client(mechanism, x)``: one client's pmf at input x;
* ``sums(mechanism, count, ks)``: the batch whose row i is the pmf of the sum of ``count``
  clients, ks[i] of them at +bound and the rest at −bound (:mod:`.levels` for the fast
  engine); ``select(batch, rows)`` picks rows of a batch;
* ``add_client(client, rests)``: the batch of totals when client 1 holds another input;
  ``concat(batches)`` stacks batches on one support;
* ``level(a, b, count, js)``: the batch whose row i is A^{*js[i]} * B^{*(count−js[i])} for two
  client pmfs (one level of a two-group configuration);
* ``divergences_both(p, q, alphas)``: for each row and each α, the pair of batches
  (D_α(P‖Q), D_α(Q‖P)).

The worst-case search (:mod:`rdpcalc.worstcase.secagg`), which runs in the fast engine whichever
engine is asked for, also uses the fast engine's ``unit()`` (the pmf of an empty sum),
``powers(c, count)`` (the rows C^{*0} … C^{*count}, padded to one
support), ``from_mpmath(probabilities)`` and ``screen_both`` (quick float divergences for
ranking candidates, :func:`.fast.screened_divergences`).

Values come back as floats (``math.inf`` for +∞); the exact engine also keeps its mpf values
for printing at full precision.

**Modular sums.** SecAgg adds the clients' integers modulo 2^B. An engine made with
``modulus`` M computes every divergence of a sum on the sum *wrapped* modulo M: the rows are
folded (entry s goes to s mod M, :meth:`FastEngine.fold`) right before a divergence or a
privacy-loss distribution is taken. Wrapping is a deterministic map of the sum, so it can only
lower a divergence (data processing), and every argument of the worst-case search (joint
convexity, adding independent summands) holds for the wrapped sum as it does for the sum. The
index s of a row is the sum's offset from its smallest value; the offset is the same under both
hypotheses, so it does not change a divergence.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from fractions import Fraction

import mpmath
import numpy as np

from ..errors import ParameterError, SelfCheckFailed
from ..logdomain import logsumexp
from ..mechanisms import Mechanism, log_pmf
from ..mechanisms.base import check_log_range, check_probabilities
from ..params import Param
from . import exact, fast, levels

ENGINES = ("fast", "exact")
#: the engine: float64 in the log domain, or MPFR at ``dps`` digits
ENGINE = Param("engine", "choice", "fast: float64 log domain; exact: MPFR at --dps digits.",
               default="fast", choices=ENGINES)
#: the exact engine's (and the mpmath pmfs') working precision, in decimal digits
DPS = Param("dps", "integer", "Digits of the exact engine, {range}.", default=50, low=15, high=1000)

#: the exact engine refuses sums whose support exceeds this (its cost grows as support²)
EXACT_MAX_SUPPORT = 20_001
#: −(the smallest natural log the exact engine holds): MPFR's reachable range
#: (:func:`exact.reachable_emin`: 2^−2^30 here, about 7.4·10⁸ nats). A probability of a sum of
#: n clients is a product of n single-client ones, so each of those must be ≥ e^{−reach/n}
EXACT_LOG_REACH = -exact.reachable_emin() * math.log(2)


class _Recent:
    """The most recently computed arrays, up to ``capacity`` bytes in all. Only rows of at least
    ``shortest`` points are kept (they are the costly ones: a level's cost grows with the square
    of its support, its memory linearly), and no array above ``capacity`` / 4."""

    def __init__(self, capacity: int, shortest: int):
        self.capacity, self.shortest = capacity, shortest
        self.items: OrderedDict = OrderedDict()

    def kept(self, width: int, parts: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()``, read-only, whose rows will have ``width`` points: the array kept for
        the same ``parts`` (arrays compared by their contents) where there is one, else computed
        and kept if it is long enough (a short one is not even looked up: no digest is taken)."""
        key = None
        if width >= self.shortest:
            key = tuple(_digest(part) if isinstance(part, np.ndarray) else part for part in parts)
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = compute()
        value.flags.writeable = False
        if key is not None and value.nbytes <= self.capacity // 4:
            self.items[key] = value
            while sum(item.nbytes for item in self.items.values()) > self.capacity:
                self.items.popitem(last=False)
        return value


#: the fast engine's levels and totals computed last (:meth:`FastEngine.level`, :meth:`FastEngine.add_client`)
_LEVELS = _Recent(32 * 2**20, 2**15)


def _digest(array: np.ndarray) -> bytes:
    """A key for the contents of a float64 array (its shape included)."""
    contents = np.ascontiguousarray(array, dtype=np.float64)
    return hashlib.blake2b(contents.tobytes() + repr(contents.shape).encode(), digest_size=20).digest()


class FastEngine:
    """float64 log-domain engine: pmfs are arrays of log-probabilities; divergences of sums
    wrapped modulo ``modulus`` when one is given (module docstring)."""

    name = "fast"
    dps = None

    def __init__(self, modulus: int | None = None):
        self.modulus = check_modulus(modulus)

    def fold(self, batch: np.ndarray) -> np.ndarray:
        """The rows (or one pmf) wrapped modulo :attr:`modulus`: entry s added into s mod M, in
        the log domain (unchanged without a modulus or when the support already fits)."""
        return fast.log_fold(batch, self.modulus) if self.modulus is not None else batch

    def client(self, mechanism: Mechanism, x: Fraction) -> np.ndarray:
        logs = log_pmf(mechanism, x)
        total = float(logsumexp(logs))
        if np.any(np.isnan(logs)) or np.any(logs > 1e-12) or abs(total) > 1e-9:
            raise SelfCheckFailed(mechanism.name, f"the pmf at x = {float(x):g} has log-mass {total:.6g}, not 0 (a "
                                                  "total probability other than 1, or a NaN)")
        return logs

    def sums(self, mechanism: Mechanism, count: int, ks: Sequence[int]) -> np.ndarray:
        plus, minus = self.client(mechanism, mechanism.bound), self.client(mechanism, -mechanism.bound)
        return self.level(plus, minus, count, ks)

    @staticmethod
    def select(batch: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        return batch[list(rows)]

    def add_client(self, client: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """:func:`.fast.log_convolve`, read-only; the last few are kept (:data:`_LEVELS`), as
        one query adds the same client to the same others several times."""
        return _LEVELS.kept(len(client) + rest.shape[-1] - 1, ("add", client, rest),
                            lambda: fast.log_convolve(client, rest))

    @staticmethod
    def level(a: np.ndarray, b: np.ndarray, count: int, js: Sequence[int]) -> np.ndarray:
        """The rows of :func:`.levels.level_rows` (the log-domain powers of :mod:`.fast` where its
        tilts fail), read-only: the last few are kept (:data:`_LEVELS`), as one query asks for
        the same level several times (its Rényi search, its tail bracket and its PLD)."""
        def compute() -> np.ndarray:
            try:
                return levels.level_rows(a, b, count, js)
            except levels.TiltingFailed:
                return np.array([fast.log_mixed_power(a, b, j, count - j) for j in js])

        return _LEVELS.kept(count * (len(a) - 1) + 1, ("level", a, b, count, tuple(int(j) for j in js)), compute)

    @staticmethod
    def unit() -> np.ndarray:
        return np.zeros((1, 1))

    @staticmethod
    def powers(c: np.ndarray, count: int) -> np.ndarray:
        rows = np.full((count + 1, count * (len(c) - 1) + 1), -np.inf)
        rows[0, 0] = 0.0
        current = np.zeros(1)
        for power in range(1, count + 1):
            current = fast.log_convolve(c, current)
            rows[power, : len(current)] = current
        return rows

    @staticmethod
    def concat(batches: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate(batches)

    @staticmethod
    def from_mpmath(probabilities: Sequence) -> np.ndarray:
        with mpmath.workdps(40):
            return np.array([float(mpmath.log(p)) if p > 0 else -np.inf for p in probabilities])

    def divergences_both(self, p: np.ndarray, q: np.ndarray, alphas: Sequence[float]):
        return fast.renyi_divergences(self.fold(p), self.fold(q), np.asarray(alphas, dtype=float), both=True)

    def screen_both(self, p: np.ndarray, q: np.ndarray, alphas: Sequence[float]):
        return fast.screened_divergences(self.fold(p), self.fold(q), np.asarray(alphas, dtype=float))


class ExactEngine:
    """Arbitrary-precision engine at ``dps`` significant digits: pmfs are lists of MPFR
    numbers (see :mod:`.exact`)."""

    name = "exact"

    def __init__(self, dps: int = 50, clients: int = EXACT_MAX_SUPPORT - 1, modulus: int | None = None):
        """``clients``: the most clients whose probabilities one sum multiplies (the single-client
        pmfs are checked against EXACT_LOG_REACH / clients); ``modulus``: see the module docstring."""
        self.dps = check_dps(dps)
        self.log_limit = EXACT_LOG_REACH / max(1, clients)
        self.modulus = check_modulus(modulus)

    def fold(self, batch: list[list]) -> list[list]:
        """Each row wrapped modulo :attr:`modulus` (exact sums of the entries s ≡ r mod M)."""
        if self.modulus is None:
            return batch
        with exact.precision(self.dps):
            return [exact.fold(row, self.modulus) for row in batch]

    def client(self, mechanism: Mechanism, x: Fraction) -> list:
        with mpmath.workdps(self.dps + 5):
            probabilities = mechanism.pmf(x)
            check_probabilities(mechanism, probabilities, mpmath.mpf(10) ** (-self.dps), f"the pmf at x = {float(x):g}")
            smallest = min(p for p in probabilities if p > 0)
            check_log_range(mechanism, x, mpmath.log(smallest), self.log_limit, "the exact engine")
            return exact.from_mpmath(probabilities)

    @staticmethod
    def _check_support(size: int) -> None:
        if size > EXACT_MAX_SUPPORT:
            raise ParameterError(
                "engine",
                f"exact supports sums with n·(outputs−1)+1 ≤ {EXACT_MAX_SUPPORT}, this one has "
                f"{size}; use `engine` fast",
            )

    def sums(self, mechanism: Mechanism, count: int, ks: Sequence[int]) -> list[list]:
        self._check_support(count * (mechanism.support_size - 1) + 1)
        plus, minus = self.client(mechanism, mechanism.bound), self.client(mechanism, -mechanism.bound)
        with exact.precision(self.dps):
            rows = exact.mixed_power_rows(plus, minus, count, ks)
        return [rows[k] for k in ks]

    @staticmethod
    def select(batch: list, rows: Sequence[int]) -> list:
        return [batch[row] for row in rows]

    @staticmethod
    def concat(batches: Sequence[list]) -> list:
        return [row for batch in batches for row in batch]

    def add_client(self, client: list, rests: list[list]) -> list[list]:
        with exact.precision(self.dps):
            return [exact.convolve(client, rest) for rest in rests]

    def level(self, a: list, b: list, count: int, js: Sequence[int]) -> list[list]:
        self._check_support(count * (len(a) - 1) + 1)
        with exact.precision(self.dps):
            rows = exact.mixed_power_rows(a, b, count, js)
        return [rows[j] for j in js]


    def divergences_both(self, p: list[list], q: list[list], alphas: Sequence[float]):
        def one_way(first, second):
            return [exact.renyi_divergences(x, y, alphas, self.dps) for x, y in zip(first, second, strict=True)]

        p, q = self.fold(p), self.fold(q)
        return one_way(p, q), one_way(q, p)


    def digits(self, value) -> str:
        """All ``dps`` significant digits of a value of this engine."""
        if value == math.inf:
            return "inf"
        with mpmath.workdps(self.dps + 5):
            return mpmath.nstr(exact.to_mpmath(value), self.dps)


def check_dps(dps) -> int:
    """``dps``, the exact engine's (and the mpmath pmfs') digits, converted and checked (:data:`DPS`)."""
    return DPS.convert(dps)


def check_modulus(modulus) -> int | None:
    """``modulus``: None (no wrap-around) or an integer ≥ 2."""
    if modulus is not None and (isinstance(modulus, bool) or not isinstance(modulus, int) or modulus < 2):
        raise ValueError(f"modulus must be None or an integer ≥ 2, got {modulus!r}")
    return modulus


def make_engine(name: str, dps: int = 50, clients: int = EXACT_MAX_SUPPORT - 1,
                modulus: int | None = None) -> FastEngine | ExactEngine:
    """The engine called ``name`` ("fast" or "exact"; the most clients summed only matters for
    exact; ``dps`` is checked for both, so an out-of-range value is never silently ignored);
    ``modulus``: divergences of sums wrapped modulo it (a mechanism's ``modulus``)."""
    dps = check_dps(dps)
    if ENGINE.convert(name) == "fast":
        return FastEngine(modulus)
    return ExactEngine(dps, clients, modulus)


__all__ = ["DPS", "ENGINE", "ENGINES", "ExactEngine", "FastEngine", "check_dps", "make_engine", "exact", "fast", "levels"]
