"""Writing records as JSON and CSV: infinities spelled "inf", files written atomically."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np


def plain(value):
    """A JSON/CSV-safe value: ±inf as "inf"/"-inf", Fractions as floats, NaN refused;
    lists and dicts converted element by element."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, np.floating | np.integer):
        value = value.item()
    if isinstance(value, Fraction):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("refusing to write NaN")
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def to_json(records: Sequence[dict]) -> str:
    """The records as a JSON list (numbers stay numbers; infinities become "inf")."""
    return json.dumps([{key: plain(value) for key, value in record.items()} for record in records], indent=2, ensure_ascii=False)


def columns(records: Iterable[dict]) -> list[str]:
    """Union of the records' keys, in order of first appearance."""
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    return list(seen)


def to_csv(records: Sequence[dict], header_lines: Sequence[str] = ()) -> str:
    """The records as CSV text; ``header_lines`` become leading ``# …`` comment lines."""
    buffer = io.StringIO()
    for line in header_lines:
        buffer.write(f"# {line}\n")
    writer = csv.DictWriter(buffer, fieldnames=columns(records), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({key: plain(value) for key, value in record.items()})
    return buffer.getvalue()


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename,
    so a reader never sees a partial file and an error leaves nothing behind."""
    target = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        os.chmod(temporary, 0o666 & ~_umask())
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
