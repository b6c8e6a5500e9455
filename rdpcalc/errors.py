"""The one error type a user can cause.

Every check of user-supplied values raises :class:`ParameterError`, which names the parameter
by its Python keyword name (``"q"``, ``"x_prime"``, ``"dp_delta"``) and states its valid range;
a message names other parameters the same way, in backticks (``must be at most `clients` = 10``).
The Python API lets it propagate (it is a ``ValueError``); the CLI maps the names to its options
and turns the error into one line on stderr and exit code 2.
"""

from __future__ import annotations


class ParameterError(ValueError):
    """An invalid parameter: ``parameter`` is its keyword name, ``message`` the valid range;
    ``str()`` is ``"parameter: message"``."""

    def __init__(self, parameter: str, message: str):
        self.parameter = parameter
        self.message = message
        super().__init__(f"{parameter}: {message}")


class SelfCheckFailed(ParameterError, ArithmeticError):
    """A mechanism's pmf is not a distribution (a negative or NaN probability, a total mass
    other than 1): the mechanism, not the run, is at fault. It names ``mechanism`` as its
    parameter (the command line's MECHANISM), and the message names the mechanism and the input."""

    def __init__(self, mechanism: str, message: str):
        super().__init__("mechanism", f"{mechanism}: self-check failed: {message}")
