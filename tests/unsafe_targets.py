"""Output targets rdpcalc must refuse and leave untouched, shared by the tests and
``bench/hostile.py``: each kind is made in a folder holding a file ``keep``, and
:func:`snapshot` records the folder so a test can tell whether anything changed."""

from __future__ import annotations

import os
from pathlib import Path

#: kinds of unsafe output paths (each must be refused with exit 2)
UNSAFE_KINDS = ["symlink", "fifo", "hardlink", "read-only", "folder", "empty", "long-name", "missing-folder"]


def unsafe_target(kind: str, folder: Path, suffix: str = ".csv") -> str:
    """Make an unsafe output path of ``kind`` in ``folder`` (a link points at ``folder/keep``,
    created if missing) and return it as the command line would give it."""
    keep = folder / "keep"
    if not keep.exists():
        keep.write_text("keep\n")
    target = folder / f"out{suffix}"
    if kind == "symlink":
        target.symlink_to(keep)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "hardlink":
        os.link(keep, target)
    elif kind == "read-only":
        target.write_text("read only\n")
        target.chmod(0o444)
    elif kind == "folder":
        target.mkdir()
    elif kind == "long-name":
        return str(folder / ("n" * 300 + suffix))
    elif kind == "missing-folder":
        return str(folder / "missing" / f"out{suffix}")
    elif kind != "empty":
        raise ValueError(f"unknown kind {kind!r}")
    return "" if kind == "empty" else str(target)


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with its kind and, for a regular file, its bytes."""
    state = {}
    for path in sorted(folder.rglob("*")):
        kind = "link" if path.is_symlink() else "fifo" if path.is_fifo() else "dir" if path.is_dir() else "file"
        state[str(path)] = kind + (":" + path.read_bytes().hex() if kind == "file" else "")
    return state
