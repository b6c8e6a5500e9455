"""One plotting style for every figure: matplotlib's Agg backend, readable at a glance."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..io import write_atomic  # noqa: E402

#: colours by curve family, line styles by protocol
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
PROTOCOL_STYLE = {"paper": "-", "worst": "--"}
PROTOCOL_LABEL = {"paper": "paper's protocol (random others)", "worst": "worst case (dashed)"}

RC = {
    "figure.figsize": (7.0, 4.6),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "axes.titlesize": 11,
    "legend.fontsize": 8,
    "lines.linewidth": 1.8,
}


def _plain(ax) -> None:
    """A light grid, and no top or right spine."""
    ax.grid(True, alpha=0.3)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def new_figure(ncols: int = 1, width: float = 7.0, height: float = 4.6):
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, ncols, figsize=(width, height), squeeze=False)
    for ax in axes[0]:
        _plain(ax)
    return fig, list(axes[0])


def new_figure_with_footer(ncols: int, width: float, height: float, footer: float):
    """:func:`new_figure`'s row of ``ncols`` panels, ``height`` inches high, over a strip ``footer``
    inches high that spans them all and has no axes: the place for a legend and notes that must
    cover no data. Returns the figure, the panels and the strip."""
    with plt.rc_context(RC):
        fig = plt.figure(figsize=(width, height + footer))
        grid = fig.add_gridspec(2, ncols, height_ratios=(height, footer))
        panels = [fig.add_subplot(grid[0, column]) for column in range(ncols)]
        strip = fig.add_subplot(grid[1, :])
    for ax in panels:
        _plain(ax)
    strip.axis("off")
    return fig, panels, strip


#: the image formats a figure or plot is written in, by file suffix
FORMATS = ("png", "pdf", "svg")
#: per format, the metadata left out so that the same figure gives the same bytes on every run
_NO_STAMPS = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None, "Creator": None},
              "svg": {"Date": None, "Creator": None}}


def figure_bytes(fig, fmt: str = "png") -> bytes:
    """The figure as ``fmt`` bytes (png, pdf or svg), deterministic: no timestamp or producer in
    the metadata, and SVG element ids from a fixed salt; closes it."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    buffer = io.BytesIO()
    fig.tight_layout()
    with plt.rc_context({"svg.hashsalt": "rdpcalc", "pdf.compression": 6}):
        fig.savefig(buffer, format=fmt, dpi=150, metadata=_NO_STAMPS[fmt])
    plt.close(fig)
    return buffer.getvalue()


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes (:func:`figure_bytes`)."""
    return figure_bytes(fig, "png")


def save(fig, path: Path) -> None:
    """Write the figure atomically, in the format of the path's suffix (.png, .pdf or .svg)."""
    write_atomic(path, figure_bytes(fig, path.suffix.lstrip(".").lower()))
