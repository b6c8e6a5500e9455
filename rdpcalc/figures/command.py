"""``rdpcalc figures``: regenerate the papers' figures as PNG + CSV with an index."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from ..errors import ParameterError
from ..io import check_output_folder, record_written


def run_figures(ids: Sequence[str], out_dir: str, force: bool, list_only: bool,
                formats: Sequence[str] = ("png",)) -> None:
    """List the figures, or build those named by ``ids`` ("all" for every one) into ``out_dir``:
    each figure's files (the image in each of ``formats``), then (for all) the index README.md.
    Files already there are replaced only if rdpcalc wrote them (the folder's manifest) or with
    ``force``."""
    from ..cli.render import QUIET, progress
    from . import generate, output_names, registry, select, write_index

    if list_only:
        for spec in registry().values():
            print(f"{spec.id:24s} {spec.title}")
        return
    if not ids:
        raise ParameterError("ids", "name the figures to build, or all (every figure; 'rdpcalc figures --list' lists them)")
    from .style import FORMATS

    formats = list(dict.fromkeys(formats))
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown or not formats:
        raise ParameterError("image_format", f"must be among {', '.join(FORMATS)}, got {(unknown or ['nothing'])[0]!r}")
    specs = select(list(ids))
    everything = select(["all"])
    complete = len(specs) == len(everything)
    names = [name for spec in specs for name in output_names(spec, formats)] + (["README.md"] if complete else [])
    out = check_output_folder(out_dir, names, "out", force)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError("out", f"cannot create {out_dir!r}: {error.strerror}") from None
    comparisons = {}

    def note(text: str) -> None:
        if not QUIET["on"]:
            print(text, file=sys.stderr)

    with progress("figures") as update:
        for index, spec in enumerate(specs, start=1):
            started = time.perf_counter()
            comparisons[spec.id] = generate(spec, out, formats=formats)
            record_written(out, output_names(spec, formats))
            note(f"[{index}/{len(specs)}] {spec.id}: {time.perf_counter() - started:.1f} s")
            if update is not None:
                update(index, len(specs))
    if complete:
        write_index(out, everything, comparisons, formats[0])
        record_written(out, ["README.md"])
        note(f"wrote {len(specs)} figures and {out / 'README.md'}")
    else:
        note(f"wrote {len(specs)} figure(s) to {out} (the index is written by 'rdpcalc figures all')")
