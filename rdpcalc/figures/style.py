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


def new_figure(ncols: int = 1, width: float = 7.0, height: float = 4.6):
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, ncols, figsize=(width, height), squeeze=False)
    for ax in axes[0]:
        ax.grid(True, alpha=0.3)
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
    return fig, list(axes[0])


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes (deterministic: no timestamp in the metadata); closes it."""
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=150, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def save(fig, path: Path) -> None:
    """Write the PNG atomically."""
    write_atomic(path, png_bytes(fig))
