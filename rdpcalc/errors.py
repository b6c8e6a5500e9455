"""The one error type a user can cause.

Every check of user-supplied values raises :class:`ParameterError`, which names the option
(spelled as on the command line) and its valid range. The CLI turns it into one line on
stderr and exit code 2; the Python API lets it propagate (it is a ``ValueError``).
"""

from __future__ import annotations


class ParameterError(ValueError):
    """An invalid parameter: ``option`` is its CLI spelling, ``message`` the valid range."""

    def __init__(self, option: str, message: str):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")
