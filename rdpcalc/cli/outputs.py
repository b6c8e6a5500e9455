"""The commands' outputs of several files, each folder written all or none and recorded in its
manifest (:func:`rdpcalc.io.record_written`): an FL run's folder (``rdpcalc fl --out``) and the
figures folder (``rdpcalc figures``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import ParameterError
from ..io import check_output_folder, json_text, record_written, to_csv, to_json, write_outputs
from ..version import VERSION
from .options import QUIET
from .render import progress

#: The files :func:`write_run` writes into a run's folder.
FL_FILES = ("fl.csv", "fl.meta.json", "summary.json", "fl.png")


def write_run(folder: Path, result: dict) -> None:
    """Write an FL run's :data:`FL_FILES` (the result of :func:`rdpcalc.backend.fl.run`) into
    ``folder`` (created if missing), all or none, and record them in its manifest: ``fl.csv``
    (test loss and accuracy per round, a plain CSV), ``fl.meta.json`` (the run's summary, i.e.
    its parameters and the accounted (ε, δ), with the rdpcalc version), ``summary.json`` (the
    summary as a list of one record, as the CLI prints it with ``--json``) and ``fl.png``.
    Errors name ``out``."""
    from ..figures.plots import fl_png  # matplotlib: start-up time

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError("out", f"cannot create {str(folder)!r}: {error.strerror}") from None
    csv_name, meta_name, summary_name, png_name = FL_FILES
    summary = result["summary"]
    write_outputs([(folder / csv_name, to_csv(result["rounds"]), "out"),
                   (folder / meta_name, json_text({**summary, "rdpcalc_version": VERSION}) + "\n", "out"),
                   (folder / summary_name, to_json([summary]), "out"),
                   (folder / png_name, fl_png(result), "out")])
    record_written(folder, FL_FILES)


def run_figures(ids: Sequence[str], out_dir: str, force: bool, list_only: bool,
                formats: Sequence[str] = ("png",)) -> None:
    """List the figures, or build those named by ``ids`` ("all" for every one) into ``out_dir``:
    each figure's files (the image in each of ``formats``), then (for all) the index README.md.
    Files already there are replaced only if rdpcalc wrote them (the folder's manifest) or with
    ``force``."""
    from ..figures import generate, output_names, registry, select, write_index  # the figure specs: start-up time
    from ..figures.style import FORMATS  # matplotlib: start-up time

    if list_only:
        for spec in registry().values():
            print(f"{spec.id:24s} {spec.title}")
        return
    if not ids:
        raise ParameterError("ids", "name the figures to build, or all (every figure; 'rdpcalc figures --list' lists them)")
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
