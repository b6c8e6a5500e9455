"""The memory budget: estimate a computation's peak memory before starting it, refuse beyond the budget.

Every computation whose memory grows with its parameters (sums of many clients, long pmfs,
grids of inputs, many orders, Monte Carlo batches, data files) estimates its peak first and
calls :func:`require`. Beyond the budget it raises :class:`ParameterError` naming the parameter
that drives the cost, with the estimate, so the CLI exits 2 before any work. The budget is
``max_memory`` (:func:`set_budget`; or ``RDPCALC_MAX_MEMORY``), by default half of the
machine's physical memory. Also the threads one computation may use (:func:`threads`, all the
cores by default; one in a sweep's worker, where the points run side by side).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from .errors import ParameterError

#: The default budget, as a fraction of physical memory.
DEFAULT_FRACTION = 0.5
ENVIRONMENT_VARIABLE = "RDPCALC_MAX_MEMORY"
_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
          "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40, "TIB": 2**40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*|%)\s*$")

_budget: int | None = None
_threads: int | None = None


def physical_memory() -> int:
    """The machine's physical memory in bytes (8 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def parse_size(text: str, parameter: str = "max_memory") -> int:
    """Bytes from ``"4G"``, ``"500MB"``, ``"1.5GiB"``, ``"25%"`` (of physical memory) or a
    plain number of bytes; units are binary (1G = 2³⁰ bytes). ``parameter`` names it in the error."""
    match = _SIZE.match(str(text))
    unit = match.group(2).upper() if match else None
    if match is None or (unit != "%" and unit not in _UNITS):
        raise ParameterError(parameter, f"must be a size such as 4G, 512M or 25% (of memory), got {text!r}")
    value = float(match.group(1))
    size = value / 100 * physical_memory() if unit == "%" else value * _UNITS[unit]
    if not 2**20 <= size <= 2**50:
        raise ParameterError(parameter, f"must be between 1M and 1024T, got {text!r}")
    return int(size)


def budget() -> int:
    """The memory budget in bytes: set by :func:`set_budget`, else ``RDPCALC_MAX_MEMORY``, else
    half of physical memory."""
    if _budget is not None:
        return _budget
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    if text:
        return parse_size(text, ENVIRONMENT_VARIABLE)
    return int(DEFAULT_FRACTION * physical_memory())


def set_budget(size: int | None) -> None:
    """Set the budget in bytes (``None``: back to the default)."""
    global _budget
    _budget = size


@contextmanager
def budget_of(size: int | None):
    """The budget set to ``size`` bytes inside the block."""
    previous = _budget
    set_budget(size)
    try:
        yield
    finally:
        set_budget(previous)


@contextmanager
def restored():
    """The budget as it was before the block, after it (a command's ``max_memory`` lasts for the
    command only)."""
    with budget_of(_budget):
        yield


def format_size(size: float) -> str:
    """Bytes as a short human-readable size: ``7.5 GiB``."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"


def require(estimate: float, parameter: str, what: str) -> None:
    """Refuse a computation whose estimated peak memory ``estimate`` (bytes) exceeds the budget.

    ``parameter`` is the parameter that drives the cost (the one to lower); ``what``
    says what was estimated, e.g. ``"the sum of 100000 clients with 4096 trials"``.
    """
    limit = budget()
    if estimate > limit:
        raise ParameterError(parameter, f"{what} needs about {format_size(estimate)} of memory, over the budget of "
                                        f"{format_size(limit)} (raise `max_memory`, or make `{parameter}` smaller)")


@dataclass(frozen=True)
class Cost:
    """One part of a computation's estimated peak memory: ``bytes``, the parameter that drives
    it (the one to lower), and what it is."""

    bytes: float
    parameter: str
    what: str


def require_costs(costs: Sequence[Cost]) -> None:
    """Refuse (:func:`require`) a computation whose estimated parts ``costs`` add up to more
    than the budget, naming the parameter of the largest part. Each algorithm whose memory grows
    with its parameters calls it on its own estimate before it starts."""
    largest = max(costs, key=lambda cost: cost.bytes)
    require(sum(cost.bytes for cost in costs), largest.parameter, largest.what)


def threads() -> int:
    """The threads one computation may use: set by :func:`threads_of`, else every core."""
    return _threads or os.cpu_count() or 1


def set_threads(count: int | None) -> None:
    """At most ``count`` threads per computation from now on (``None``: every core)."""
    global _threads
    _threads = count


@contextmanager
def threads_of(count: int | None):
    """At most ``count`` threads per computation inside the block (``None``: every core)."""
    global _threads
    previous, _threads = _threads, count
    try:
        yield
    finally:
        _threads = previous


def max_workers() -> int:
    """The most worker processes of a sweep or a comparison: four per core (each computes in one
    thread, so more only share the cores and multiply the memory)."""
    return 4 * (os.cpu_count() or 1)
