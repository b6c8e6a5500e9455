"""What a figure is (:class:`FigureSpec`), apart from the runner that builds it, so that each
figure module can declare its specs without importing the package."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class FigureSpec:
    """One figure: ``build(progress)`` returns the records, ``plot(records, path)`` draws them,
    and ``compare(records)`` says in words, from the data, what agrees or differs from the
    paper. ``notes`` are further lines for the sidecar's ``notes``."""

    id: str
    title: str
    reproduces: str
    parameters: str
    build: Callable[[Callable[[int, int], None] | None], list[dict]]
    plot: Callable[[list[dict], Path], None]
    compare: Callable[[list[dict]], str]
    notes: Sequence[str] = field(default_factory=tuple)
