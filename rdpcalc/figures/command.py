"""``rdpcalc figures``: regenerate the papers' figures as PNG + CSV with an index."""

from __future__ import annotations

import time

import click

from ..errors import ParameterError
from ..io import check_output_folder, record_written


@click.command("figures", epilog="""\b
Examples:
  rdpcalc figures --list
  rdpcalc figures all --out figures
  rdpcalc figures rqm-fig2-right --out /tmp/figs""")
@click.argument("ids", nargs=-1, metavar="[ID ...|all]")
@click.option("--out", "out_dir", default="figures", show_default=True, metavar="DIR",
              help="Folder for the PNG, CSV and README.md files (created if missing).")
@click.option("--force", is_flag=True, help="Overwrite files in DIR that rdpcalc did not write.")
@click.option("--list", "list_only", is_flag=True, help="List the figure IDs and exit.")
def figures_command(ids: tuple[str, ...], out_dir: str, force: bool, list_only: bool) -> None:
    """Regenerate the papers' privacy figures: PNG + CSV each, and an index README.md.

    Files already in DIR are overwritten only if rdpcalc wrote them (DIR/.rdpcalc-written lists
    them) or with --force."""
    from ..cli import _progress
    from . import generate, registry, select, write_index

    if list_only:
        for spec in registry().values():
            click.echo(f"{spec.id:24s} {spec.title}")
        return
    specs = select(list(ids))
    everything = select([])
    names = [f"{spec.id}.{kind}" for spec in specs for kind in ("csv", "png")]
    names += ["README.md"] if len(specs) == len(everything) else []
    out = check_output_folder(out_dir, names, "--out", force)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError("--out", f"cannot create {out_dir!r}: {error.strerror}") from None
    comparisons = {}
    with _progress("figures") as progress:
        for index, spec in enumerate(specs, start=1):
            started = time.perf_counter()
            comparisons[spec.id] = generate(spec, out)
            record_written(out, [f"{spec.id}.csv", f"{spec.id}.png"])
            click.echo(f"[{index}/{len(specs)}] {spec.id}: {time.perf_counter() - started:.1f} s", err=True)
            if progress is not None:
                progress(index, len(specs))
    if len(specs) == len(everything):
        write_index(out, everything, comparisons)
        record_written(out, ["README.md"])
        click.echo(f"wrote {len(specs)} figures and {out / 'README.md'}", err=True)
    else:
        click.echo(f"wrote {len(specs)} figure(s) to {out} (the index is written by 'rdpcalc figures all')", err=True)
