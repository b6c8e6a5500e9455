"""A small memory of answers already computed, for the certificates a process asks for again
(a calibration, a sweep over n, a search and then its certificate)."""

from __future__ import annotations

from collections.abc import Callable, Hashable


class Remembered:
    """The answers to the last ``size`` distinct questions, by key; the oldest is forgotten
    first. A computation that raises leaves nothing behind."""

    def __init__(self, size: int):
        self.size = size
        self._answers: dict = {}

    def get(self, key: Hashable, compute: Callable[[], object]):
        """The answer remembered for ``key``, else ``compute()``, remembered."""
        if key not in self._answers:
            if len(self._answers) >= self.size:
                self._answers.pop(next(iter(self._answers)))
            self._answers[key] = compute()
        return self._answers[key]
