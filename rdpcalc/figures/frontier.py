"""The privacy–utility frontier at equal bits (no paper draws it): the MSE of the decoded SecAgg
sum against the certified ε of one round, for RQM, PBM, the quantized Gaussian, the distributed
discrete Gaussian, Skellam and binomial mechanisms, each set up for B bits per coordinate by the
rules of :mod:`rdpcalc.compare` and swept over its noise."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..compare import decoded_sum_error, designs, run_epsilon
from ..errors import ParameterError
from ..mechanisms import MECHANISMS
from ..runs import RunOptions
from .spec import FigureSpec
from .style import COLOURS, new_figure_with_footer, save

DP_DELTA, C = 1e-5, Fraction(1)
#: (n, B) of each panel, and the mechanisms swept there: every one (the certified worst cases at n = 1000
#: take seconds a point: RQM 3–12 s, PBM 13–20 s, the quantized Gaussian 7–11 s on two cores)
PANELS = [(40, 8, ("rqm", "pbm", "qgauss", "ddg", "skellam", "binomial")),
          (40, 10, ("rqm", "pbm", "qgauss", "ddg", "skellam", "binomial")),
          (1000, 16, ("rqm", "pbm", "qgauss", "ddg", "skellam", "binomial"))]
#: points per mechanism and panel
POINTS = 5
#: the free parameter's sweep per mechanism, as (low, high) or a function of the design's ends
SWEEPS = {
    "rqm": lambda n, b: np.geomspace(0.2, 20, POINTS),
    "pbm": lambda n, b: np.linspace(0.03, 0.4, POINTS),
    "qgauss": lambda n, b: np.geomspace(0.2, 20, POINTS),
    "ddg": lambda n, b: np.geomspace(_noise_high(n, b) / 100, _noise_high(n, b, capped=True), POINTS),
    "skellam": lambda n, b: np.geomspace(_noise_high(n, b) / 100, _noise_high(n, b, capped=True), POINTS) ** 2 / 2,
    "binomial": lambda n, b: np.unique(np.geomspace(2, max(2, designs()["binomial"].ends(n, b, C)[1]), POINTS)
                                       .round().astype(int)),
}
#: the largest grid deviation of a noise swept (larger ones take the windows past 10⁵ points at n = 1000, for an ε
#: below 0.2 there)
NOISE_CAP = 12


def _noise_high(n: int, bits: int, capped: bool = False) -> float:
    """The largest grid deviation that fits B bits (the discrete Gaussian's :meth:`~rdpcalc.mechanisms.Mechanism.design`), over 1.5 and
    at most NOISE_CAP when ``capped``."""
    high = designs()["ddg"].ends(n, bits, C)[1]
    return min(high / 1.5, NOISE_CAP) if capped else high


#: the papers' operating points, drawn where their bits fit (RQM: Youn et al. 2023 §6, c = Δ,
#: q = 0.42, m = 16; PBM: Chen et al. 2022 as compared there, θ = 0.25, 16 trials)
OPERATING_POINTS = [("rqm", {"c": C, "delta": C, "m": 16, "q": Fraction(21, 50)}),
                    ("pbm", {"c": C, "theta": Fraction(1, 4), "trials": 16})]


def build(progress=None) -> list[dict]:
    records = []
    tasks = [(n, bits, name) for n, bits, names in PANELS for name in names]
    for done, (n, bits, name) in enumerate(tasks):
        design = designs()[name]
        for value in SWEEPS[name](n, bits):
            mechanism = design.build(float(value), n, bits, C)
            if mechanism is not None:
                records.append(_point(mechanism, n, bits, name, float(value), "sweep"))
        if progress is not None:
            progress(done + 1, len(tasks) + 1)
    for n, bits, _ in PANELS:
        for label, params in OPERATING_POINTS:
            mechanism = MECHANISMS[label](**params, bits=bits)
            if n * (mechanism.support_size - 1) + 1 <= 2**bits:
                records.append(_point(mechanism, n, bits, label, None, "paper"))
    return records


def _point(mechanism, n: int, bits: int, name: str, value: float | None, kind: str) -> dict:
    try:  # one round, no sampling, the server's view
        epsilon, method = run_epsilon(mechanism, DP_DELTA, RunOptions(n=n))
    except ParameterError as error:  # refused for its memory: the point is left out, and said so
        return {"n": n, "bits": bits, "mechanism": name, "kind": kind, "value": value, "epsilon": None, "mse": None,
                "note": str(error)}
    mse, at, wrap = decoded_sum_error(mechanism, n)
    return {"n": n, "bits": bits, "mechanism": name, "kind": kind, "value": value, "epsilon": epsilon, "mse": mse,
            "mse_at": at, "wrap_probability": wrap, "outputs": mechanism.support_size, "note": ""}


def _drawn(record: dict) -> bool:
    """A point with a finite ε and MSE (not refused)."""
    return record["epsilon"] is not None and math.isfinite(record["epsilon"]) and math.isfinite(record["mse"])


#: how each mechanism's curve is drawn, beside its colour. The discrete Gaussian, Skellam and binomial curves
#: coincide: they are drawn widest first (a wide pale line with large open circles), then dashed with squares,
#: then dotted with crosses, and the thin curves on top, so that every curve stays visible where they overlap
LOOKS = {
    "rqm": {"marker": "o", "linestyle": "-", "markersize": 4, "zorder": 5},
    "pbm": {"marker": "v", "linestyle": "-", "markersize": 5, "zorder": 5},
    "qgauss": {"marker": "^", "linestyle": "-", "markersize": 5, "zorder": 5},
    "ddg": {"marker": "o", "linestyle": "-", "linewidth": 5.0, "alpha": 0.45, "markersize": 10, "markerfacecolor": "none",
            "zorder": 2},
    "skellam": {"marker": "s", "linestyle": "--", "linewidth": 2.0, "markersize": 5, "zorder": 3},
    "binomial": {"marker": "x", "linestyle": ":", "linewidth": 1.6, "markersize": 7, "markeredgewidth": 1.5, "zorder": 4},
}
#: the marker of each paper's operating point: the two nearly coincide at n = 40, B = 10, so PBM's smaller
#: diamond is drawn on RQM's star
PAPER_LOOKS = {"rqm": {"marker": "*", "markersize": 15, "zorder": 6}, "pbm": {"marker": "D", "markersize": 6, "zorder": 7}}
#: the height in inches of the strip under the panels that holds the legend
FOOTER = 0.9


def _colour(name: str) -> str:
    """The mechanism's colour: its place among :func:`rdpcalc.compare.designs`."""
    return COLOURS[list(designs()).index(name) % len(COLOURS)]


def _legend_entries(axes) -> tuple[list, list[str]]:
    """The handles and labels of every panel's curves and points, each label once, in the order
    first drawn."""
    entries = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def plot(records: list[dict], path) -> None:
    """The MSE against ε, one panel per (n, B) of PANELS, one curve per mechanism swept there and
    a mark per paper's operating point; one legend, under the panels."""
    fig, axes, strip = new_figure_with_footer(len(PANELS), 5.0 * len(PANELS), 4.6, FOOTER)
    for axis, (n, bits, drawn) in zip(axes, PANELS):
        for name in drawn:
            rows = sorted((r for r in records if r["n"] == n and r["bits"] == bits and r["mechanism"] == name
                           and r["kind"] == "sweep" and _drawn(r)), key=lambda r: r["epsilon"])
            axis.plot([r["epsilon"] for r in rows], [r["mse"] for r in rows], color=_colour(name), label=name, **LOOKS[name])
        for r in records:
            if r["n"] == n and r["bits"] == bits and r["kind"] == "paper" and _drawn(r):
                axis.plot(r["epsilon"], r["mse"], color=_colour(r["mechanism"]), mec="black", **PAPER_LOOKS[r["mechanism"]],
                          label=f"{r['mechanism']}: the paper's operating point ({r['outputs']} outputs)")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("ε of one round (δ = 1e-5, certified)")
        axis.set_ylabel("MSE of the decoded sum (worst of x = 0, c/4 … c)")
        axis.set_title(f"n = {n} clients, B = {bits} bits per coordinate")
    strip.legend(*_legend_entries(axes), loc="upper center", ncol=4, fontsize=8, frameon=False)
    save(fig, path)


def compare(records: list[dict]) -> str:
    parts = []
    for n, bits, drawn in PANELS:
        at_one = {}
        for name in drawn:
            rows = [r for r in records if r["n"] == n and r["bits"] == bits and r["mechanism"] == name
                    and r["kind"] == "sweep" and _drawn(r)]
            if len(rows) >= 2:
                at_one[name] = float(np.exp(np.interp(0.0, np.log([r["epsilon"] for r in sorted(rows, key=lambda r: r["epsilon"])]),
                                                      np.log([r["mse"] for r in sorted(rows, key=lambda r: r["epsilon"])]))))
        if at_one:
            best = min(at_one, key=at_one.get)
            parts.append(f"n = {n}, B = {bits}: lowest MSE at ε ≈ 1 for {best} ({at_one[best]:.3g}); "
                         + ", ".join(f"{name} {value:.3g}" for name, value in sorted(at_one.items(), key=lambda i: i[1])))
    return ("No paper draws this comparison. How each ε is certified: the additive-noise mechanisms (discrete "
            "Gaussian, Skellam, binomial) exactly (the others at a grid point, client 1 over the shifts); RQM and PBM "
            "by the certificate over their breakpoints; the quantized Gaussian by Theorem C over its input interval "
            "(each other client a mixture of a few anchor inputs and a residual, which it drops), so its certified ε "
            "lies above the worst case it attains — the price of a guarantee, not of the mechanism. Interpolated MSE "
            "of the decoded sum at ε = 1 "
            "(log–log, within each sweep's range): " + "; ".join(parts) + ".")


SPECS = [FigureSpec(
    id="frontier-bits", title="Privacy–utility frontier at equal bits: RQM, PBM, quantized Gaussian, DDG, Skellam, binomial",
    reproduces="no paper (the comparison the SecAgg mechanisms' papers do not draw)",
    parameters=f"one round, δ = {DP_DELTA:g}, c = 1, all clients at the worst input of {{0, c/4, c/2, 3c/4, c}}; "
               f"(n, B) = {', '.join(f'({n}, {b})' for n, b, _ in PANELS)}; designs of `rdpcalc compare`",
    build=build, plot=plot, compare=compare,
    notes=("ε is certified for the sum without its wrap-around; the MSE counts the wrap-around exactly",))]
