"""The plots a command writes beside its records, as image bytes (for :func:`rdpcalc.io.write_outputs`),
in the figures' style (:mod:`.style`)."""

from __future__ import annotations

import math

from .style import figure_bytes, new_figure, png_bytes


def account_figure(record: dict, curves: dict, fmt: str = "png") -> bytes:
    """ε against δ and ε against the rounds composed, by each method computed (PLD solid, RDP
    dashed): ``curves["epsilon-delta"]`` and ``curves["epsilon-rounds"]`` as
    :meth:`rdpcalc.runs.AccountedRun.epsilon_delta_curve` and ``epsilon_rounds_curve`` give them,
    for the run of ``record``, as ``fmt`` (png, pdf or svg) bytes. Points where ε is +∞ or not
    computed are left out."""
    fig, (left, right) = new_figure(ncols=2, width=10.0)
    for axis, kind, x_key in ((left, "epsilon-delta", "dp_delta"), (right, "epsilon-rounds", "rounds")):
        for method, style in (("pld", "-"), ("rdp", "--")):
            values = [(point[x_key], point[f"epsilon_{method}"]) for point in curves[kind]
                      if point[f"epsilon_{method}"] is not None and math.isfinite(point[f"epsilon_{method}"])]
            if values:
                axis.plot(*zip(*values), style, marker="o", markersize=3, label=method)
        axis.set_xscale("log")
        axis.set_ylabel("ε")
        axis.legend()
    left.set_xlabel("δ")
    left.set_title(f"{record['mechanism']}: ε against δ ({record['participation']} rounds composed)")
    right.set_xlabel("rounds composed")
    right.set_title(f"ε against rounds at δ = {record['dp_delta']:g}")
    return figure_bytes(fig, fmt)


def fl_png(result: dict) -> bytes:
    """A federated run's test loss and accuracy per round (``result`` as
    :func:`rdpcalc.backend.fl.run` returns it)."""
    summary, rounds = result["summary"], result["rounds"]
    fig, (left, right) = new_figure(ncols=2, width=10.0)
    numbers = [r["round"] for r in rounds]
    left.plot(numbers, [r["test_loss"] for r in rounds])
    right.plot(numbers, [r["test_accuracy"] for r in rounds])
    left.set_ylabel("test loss")
    right.set_ylabel("test accuracy")
    for axis in (left, right):
        axis.set_xlabel("round")
        axis.set_title(f"{summary['mechanism']}: {summary['per_round']} of {summary['clients']} clients")
    return png_bytes(fig)
