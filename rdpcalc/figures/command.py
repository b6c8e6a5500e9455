"""``rdpcalc figures``: regenerate the papers' figures as PNG + CSV with an index."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..errors import ParameterError


@click.command("figures", epilog="""\b
Examples:
  rdpcalc figures --list
  rdpcalc figures all --out figures
  rdpcalc figures rqm-fig2-right --out /tmp/figs""")
@click.argument("ids", nargs=-1, metavar="[ID ...|all]")
@click.option("--out", "out_dir", default="figures", show_default=True, metavar="DIR",
              help="Folder for the PNG, CSV and README.md files (created if missing).")
@click.option("--list", "list_only", is_flag=True, help="List the figure IDs and exit.")
def figures_command(ids: tuple[str, ...], out_dir: str, list_only: bool) -> None:
    """Regenerate the papers' privacy figures: PNG + CSV each, and an index README.md."""
    from . import generate, registry, select, write_index

    if list_only:
        for spec in registry().values():
            click.echo(f"{spec.id:24s} {spec.title}")
        return
    specs = select(list(ids))
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ParameterError("--out", f"must be a folder, got the file {out_dir!r}")
    out.mkdir(parents=True, exist_ok=True)
    comparisons = {}
    everything = select([])
    for index, spec in enumerate(specs, start=1):
        started = time.perf_counter()
        comparisons[spec.id] = generate(spec, out)
        click.echo(f"[{index}/{len(specs)}] {spec.id}: {time.perf_counter() - started:.1f} s", err=True)
    if len(specs) == len(everything):
        write_index(out, everything, comparisons)
        click.echo(f"wrote {len(specs)} figures and {out / 'README.md'}", err=True)
    else:
        click.echo(f"wrote {len(specs)} figure(s) to {out} (the index is written by 'rdpcalc figures all')", err=True)
