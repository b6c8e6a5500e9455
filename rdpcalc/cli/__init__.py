"""The ``rdpcalc`` command line: a typer application over the Python API.

``rdpcalc <command> <mechanism> [options]``. The commands are built from tables of options
(:mod:`.options`) and the registered mechanisms' declarations (:mod:`.commands`); output is
rendered by :mod:`.render`. Bad input exits with code 2 and one line naming the option and its
valid range; no traceback reaches the user; files are written all or nothing.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import signal
import sys
import threading
from contextlib import contextmanager

import typer

from .. import resources
from ..errors import ParameterError
from ..mechanisms import MECHANISMS
from . import options
from .clicklib import MissingParameter, UsageError, restore_argument_help
from .commands import build_app
from .options import QUIET, option_text, with_options
from .render import spell_in_ascii

__all__ = ["main"]


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like KeyboardInterrupt, so a file being written is
    removed (:func:`rdpcalc.io.write_atomic`) before the process exits."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, _frame):
    raise Terminated(signum)


@contextmanager
def _terminating_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` inside the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _raise_terminated) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)




class _DroppingStream:
    """Standard error as the work sees it: what cannot be written (a closed descriptor, a full
    disk) is dropped, so that progress and hints never stop a run whose result goes to
    standard output. ``stream`` None (stderr closed): everything is dropped."""

    def __init__(self, stream):
        self._stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        try:
            if self._stream is not None:
                self._stream.write(text)
        except (OSError, ValueError):
            self._stream = None
        return len(text)

    def flush(self) -> None:
        try:
            if self._stream is not None:
                self._stream.flush()
        except (OSError, ValueError):
            self._stream = None

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self._stream is None:
            raise io.UnsupportedOperation("standard error is closed")
        return self._stream.fileno()

    def reconfigure(self, **settings) -> None:
        if hasattr(self._stream, "reconfigure"):
            self._stream.reconfigure(**settings)

    def close(self) -> None:
        """Nothing: the stream belongs to the process (a logging handler that kept this
        wrapper closes it at exit)."""


@contextmanager
def _tolerant_stderr():
    """:class:`_DroppingStream` as ``sys.stderr`` inside the block."""
    original = sys.stderr
    sys.stderr = _DroppingStream(original)
    try:
        yield
    finally:
        sys.stderr = original


def _prepare_streams() -> None:
    """Standard output must be open; characters its encoding lacks are spelled in ASCII
    (:data:`ASCII_SPELLINGS`) instead of failing."""
    if sys.stdout is None:
        raise ParameterError("standard output", "is closed; redirect it to a file or /dev/null")
    codecs.register_error("rdpcalc-ascii", spell_in_ascii)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="rdpcalc-ascii")


def _stdout_failure(error: OSError) -> int:
    """Exit code for an error writing standard output: 0 for a closed pipe (``| head``), 2
    otherwise (a full disk, a closed descriptor)."""
    try:  # what is still buffered cannot be written either: drop it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    if error.errno == errno.EPIPE:
        return 0
    _error_line(f"standard output: cannot write: {error.strerror or error}")
    return 2


def _error_line(text: str) -> None:
    """One line on standard error (a :class:`_DroppingStream` inside :func:`main`)."""
    print(f"rdpcalc: error: {text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or environment, 1 a bug in
    rdpcalc, 130 interrupted, 128 + signal number for SIGTERM/SIGHUP). Standard error is
    tolerant throughout, the error lines included (:func:`_tolerant_stderr`)."""
    with _tolerant_stderr():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    QUIET["on"] = False
    try:
        with _terminating_signals(), resources.restored():
            _prepare_streams()
            result = _invoke(sys.argv[1:] if argv is None else list(argv))
            sys.stdout.flush()
    except ParameterError as error:
        _error_line(f"{option_text(error.parameter)}: {with_options(error.message)}")
        return 2
    except _usage_errors() as error:
        _error_line(_all_missing(error) or " ".join(error.format_message().split()))
        return 2
    except _abort() as error:
        del error
        _error_line("aborted")
        return 130
    except KeyboardInterrupt:
        _error_line("interrupted")
        return 130
    except Terminated as signal_received:
        _error_line(f"terminated by signal {signal_received.signum}")
        return 128 + signal_received.signum
    except OSError as error:
        if _is_stdout_error(error):
            return _stdout_failure(error)
        return _internal_error(error)
    except Exception as error:  # noqa: BLE001 - the last line of defence: no traceback for users
        return _internal_error(error)
    return result if isinstance(result, int) else 0


def _invoke(args: list[str]):
    """Build the application, parse and run, as click's ``main`` does without its handling of
    errors (which exits 1 on a closed pipe): every error reaches :func:`main`."""
    group = _application()
    options.ARGUMENTS[:] = args
    try:
        with group.make_context("rdpcalc", args) as context:
            return group.invoke(context)
    except typer.Exit as done:
        return done.exit_code


#: the click group of the last registry it was built for (tests run main() thousands of times)
_BUILT: dict = {}


def _application():
    """The typer application as a click group, built again only when the registered mechanisms
    changed since the last call."""
    key = tuple(MECHANISMS.items())
    if key not in _BUILT:
        _BUILT.clear()
        _BUILT[key] = typer.main.get_command(build_app())
        restore_argument_help(_BUILT[key])
    return _BUILT[key]


def _usage_errors() -> type[Exception]:
    return UsageError


def _all_missing(error) -> str | None:
    """For click's "Missing option" (it names the first only): every required option of the
    command that the command line lacks, in the help's order; None for other usage errors."""
    if not isinstance(error, MissingParameter) or error.ctx is None or error.param is None:
        return None
    given = set()
    for argument in options.ARGUMENTS:
        given.add(argument.partition("=")[0])
    missing = [param.opts[0] for param in error.ctx.command.params
               if param.required and getattr(param, "opts", None) and param.param_type_name == "option"
               and not given & set(param.opts)]
    if len(missing) < 2:
        return None
    return f"Missing options {', '.join(repr(name) for name in missing)}."


def _abort() -> type[BaseException]:
    return typer.Abort


def _is_stdout_error(error: OSError) -> bool:
    """Whether ``error`` came from writing standard output (the files rdpcalc writes raise
    ParameterError naming their option instead)."""
    return error.errno in (errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT)


def _internal_error(error: BaseException) -> int:
    print(f"rdpcalc: internal error: {type(error).__name__}: {error} (please report this)", file=sys.stderr)
    return 1
