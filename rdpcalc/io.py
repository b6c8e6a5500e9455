"""Writing records as JSON and CSV: infinities spelled "inf", files written atomically and safely.

Values: every JSON and CSV file rdpcalc writes, and the records it prints as JSON, spell +∞
and −∞ as the strings ``"inf"`` and ``"-inf"`` at any depth (a list inside a record, a dict of
parameters): never ``Infinity``, a float or ``1e309``. NaN is refused (:func:`plain`). Numbers
otherwise stay numbers: ints as ints, exact values (Fractions) as floats. JSON is written with
``allow_nan=False``, so a stray infinity or NaN that bypassed :func:`plain` fails loudly
instead of writing ``Infinity``. A CSV is plain: one header row, no comment lines, so
``pandas.read_csv(path)`` loads it (pandas reads "inf" as a float); a cell holding a list or
dict is its JSON text. A CSV's metadata goes in a JSON sidecar beside it (``<name>.meta.json``).

An output path is checked before any work (:func:`check_output_file`,
:func:`check_output_folder`): rdpcalc writes only regular files, never through a symbolic
link, onto a FIFO or device, over a hard-linked or read-only file, or over a file in an output
folder that it did not write itself (unless forced). Files are written through a
temporary file and a rename, so a reader never sees a partial file and a failure (or SIGTERM,
see :mod:`rdpcalc.cli`) leaves nothing behind.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from .errors import ParameterError

#: The list of the files rdpcalc wrote into an output folder (one name a line): only these are
#: overwritten without ``force``.
MANIFEST = ".rdpcalc-written"


def plain(value, spell_infinity: bool = True):
    """A JSON/CSV-safe value: ±inf as "inf"/"-inf" (kept as floats without
    ``spell_infinity``), Fractions as floats, numpy scalars as Python numbers, NaN refused
    (ValueError); lists, tuples and dicts converted element by element."""
    if isinstance(value, dict):
        return {key: plain(item, spell_infinity) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, spell_infinity) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Fraction):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("refusing to write NaN")
        if math.isinf(value) and spell_infinity:
            return "inf" if value > 0 else "-inf"
    return value


#: significant digits of the floats in rdpcalc's artefacts (figures, sweep tables): the engines
#: agree to ~1e−13, so the files are the same on every machine
ARTEFACT_DIGITS = 12


def significant(value, digits: int = ARTEFACT_DIGITS):
    """Finite floats (also inside lists, tuples and dicts) to ``digits`` significant digits;
    anything else unchanged (tuples become lists)."""
    if isinstance(value, dict):
        return {key: significant(item, digits) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [significant(item, digits) for item in value]
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{digits}g}")
    return value


def json_text(value, indent: int | None = 2) -> str:
    """``value`` as JSON text through :func:`plain` (infinities as "inf"/"-inf"); a float
    infinity or NaN left over raises ValueError (``allow_nan=False``)."""
    return json.dumps(plain(value), indent=indent, ensure_ascii=False, allow_nan=False)


def to_json(records: Sequence[dict]) -> str:
    """The records as a JSON list (numbers stay numbers; infinities become "inf")."""
    return json_text(list(records))


def columns(records: Iterable[dict]) -> list[str]:
    """Union of the records' keys, in order of first appearance."""
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    return list(seen)


def to_csv(records: Sequence[dict], delimiter: str = ",") -> str:
    """The records as plain CSV text (TSV with ``delimiter="\\t"``): a header row of
    :func:`columns`, then one row per record (values through :func:`plain`; a list or dict as
    its JSON text)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(records), delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({key: _cell(value) for key, value in record.items()})
    return buffer.getvalue()


def _cell(value):
    value = plain(value)
    return json_text(value, indent=None) if isinstance(value, list | dict) else value


def check_output_file(path: str | os.PathLike, parameter: str) -> Path:
    """``path`` as a :class:`Path` if the command may write it, else :class:`ParameterError`
    naming ``parameter``: a new name in an existing writable folder, or an existing regular file
    that is writable, has one link and is not a symbolic link."""
    text = os.fspath(path)
    if not text.strip():
        raise ParameterError(parameter, "must name a file, got an empty path")
    if "\0" in text:
        raise ParameterError(parameter, f"must be a path without NUL characters, got {text!r}")
    target = Path(text)
    folder = target.parent
    _check_name_lengths(target, parameter)
    try:
        status = target.lstat()
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise ParameterError(parameter, f"cannot use {text!r}: {error.strerror}") from None
    if status is not None:
        if stat.S_ISLNK(status.st_mode):
            raise ParameterError(parameter, f"{text!r} is a symbolic link; rdpcalc writes only regular files: give its "
                                            "target or a new name")
        if stat.S_ISDIR(status.st_mode):
            raise ParameterError(parameter, f"must be a file path, got the folder {text!r}")
        if not stat.S_ISREG(status.st_mode):
            raise ParameterError(parameter, f"{text!r} is not a regular file (a FIFO, device or socket); give a file "
                                            "path")
        if status.st_nlink > 1:
            raise ParameterError(parameter, f"{text!r} has {status.st_nlink} hard links; replacing it would break them: "
                                            "give a new name")
        if not os.access(target, os.W_OK) or not status.st_mode & 0o222:
            raise ParameterError(parameter, f"{text!r} is read-only")
    if not folder.is_dir():
        raise ParameterError(parameter, f"the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(parameter, f"the folder {str(folder)!r} is not writable")
    return target


def _check_name_lengths(target: Path, parameter: str) -> None:
    folder = target.parent if target.parent.is_dir() else Path(".")
    try:
        longest_name, longest_path = os.pathconf(folder, "PC_NAME_MAX"), os.pathconf(folder, "PC_PATH_MAX")
    except (OSError, ValueError):
        longest_name, longest_path = 255, 4096
    # the temporary file's name is the target's with a prefix and a suffix
    if len(os.fsencode(f".{target.name}.12345678.tmp")) > longest_name:
        raise ParameterError(parameter, f"the file name is too long: at most {longest_name - 14} bytes, got "
                                        f"{len(os.fsencode(target.name))}")
    if len(os.fsencode(str(target.absolute()))) + 14 > longest_path:
        raise ParameterError(parameter, f"the path is too long: at most {longest_path - 14} bytes")


def check_output_folder(path: str | os.PathLike, names: Iterable[str], parameter: str, force: bool = False) -> Path:
    """``path`` as a :class:`Path` if the command may write the files ``names`` into it (the
    folder is created later if missing), else :class:`ParameterError` naming ``parameter``.

    An existing file among ``names`` is overwritten only if rdpcalc wrote it (it is listed in
    the folder's :data:`MANIFEST`) or ``force`` is given; each must pass
    :func:`check_output_file`.
    """
    text = os.fspath(path)
    if not text.strip():
        raise ParameterError(parameter, "must name a folder, got an empty path")
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise ParameterError(parameter, f"must be a folder, got the file {text!r}")
    if not folder.exists():
        parent = next((p for p in folder.absolute().parents if p.exists()), Path("/"))
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ParameterError(parameter, f"cannot create {text!r}: {str(parent)!r} is not writable")
        return folder
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(parameter, f"the folder {text!r} is not writable")
    ours = written_here(folder)
    for name in names:
        target = folder / name
        if os.path.lexists(target):
            if name not in ours and not force:
                raise ParameterError(parameter, f"{str(target)!r} exists and was not written by rdpcalc; give another "
                                                "folder, or `force` to overwrite it")
            check_output_file(target, parameter)
    return folder


def written_here(folder: Path) -> set[str]:
    """The names listed in ``folder``'s :data:`MANIFEST` (empty if it has none)."""
    try:
        return set((folder / MANIFEST).read_text(encoding="utf-8").split("\n")) - {""}
    except (OSError, UnicodeDecodeError):
        return set()


def record_written(folder: Path, names: Iterable[str]) -> None:
    """Add ``names`` to ``folder``'s :data:`MANIFEST`."""
    listed = sorted(written_here(folder) | set(names))
    write_atomic(folder / MANIFEST, "".join(f"{name}\n" for name in listed))


def write_outputs(outputs: Sequence[tuple[str | os.PathLike, str | bytes, str]]) -> None:
    """Write each ``(path, data, parameter)`` all or nothing: every path is checked
    (:func:`check_output_file`) and staged in a temporary file beside it, then all are renamed
    into place. An operating-system error (a full disk, permissions changed meanwhile) removes
    every staged file and is a :class:`ParameterError` naming that output's parameter."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data, parameter in outputs:
            target = check_output_file(path, parameter)
            try:
                staged.append((_stage(target, data), target))
            except OSError as error:
                raise ParameterError(parameter, f"cannot write {os.fspath(path)!r}: {_reason(error)}") from None
        for temporary, target in staged:
            os.replace(temporary, target)
    except BaseException:
        for temporary, _ in staged:
            Path(temporary).unlink(missing_ok=True)
        raise


def _reason(error: OSError) -> str:
    return error.strerror or errno.errorcode.get(error.errno or 0, str(error))


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename,
    so a reader never sees a partial file and an error leaves nothing behind."""
    temporary = _stage(Path(path), data)
    try:
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _stage(target: Path, data: str | bytes) -> str:
    """Write ``data`` to a new temporary file beside ``target``; returns its name (removed
    again if anything fails, an interrupt included)."""
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        os.chmod(temporary, 0o666 & ~_umask())
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as handle:
            handle.write(data)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return temporary


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
