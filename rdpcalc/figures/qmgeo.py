"""QMGeo (Wang & Gursoy 2023, arXiv:2312.05761): the legend values of Figs. 5–6 as a table,
the exact pmf under both readings of eq. (9), and how the worst case blows up near the levels."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from ..mechanisms import QMGeo
from ..queries import NeighbourOptions, divergence
from .spec import FigureSpec
from .style import COLOURS, new_figure, save

D, KAPPA = 3562, Fraction("0.005333")
LEGEND = [(8, "0.9", "2.626"), (16, "0.9", "4.492"), (8, "0.5", "0.784")]
ETAS = [Fraction(1, 10**e) for e in range(1, 13)]


def build_legend(progress=None) -> list[dict]:
    records = []
    for R, p, legend in LEGEND:
        mech = QMGeo(R, Fraction(p), Fraction("0.05"))
        worst = divergence(mech, alphas=[2])[0]
        x, x_prime = mech.midpoint_pair()
        midpoint = divergence(mech, alphas=[2], choose=NeighbourOptions(x=x, x_prime=x_prime))[0]["divergence"]
        with mpmath.workdps(30):
            printed = mech.rdp_paper(2)
            records.append({"figure": "qmgeo-legend", "R": R, "p": float(Fraction(p)), "alpha": 2.0,
                            "paper_legend": float(legend), "eq27_kappa2_d_abs25": float(KAPPA**2 * D * abs(printed)),
                            "eq25_as_printed": float(printed), "mirror_model_d2": float(mech.mirror_model_divergence(2)),
                            "mechanism_worst_d2": worst["divergence"], "midpoint_pair_d2": midpoint, "d": D,
                            "kappa": float(KAPPA)})
    return records


def plot_legend(records: list[dict], path) -> None:
    fig, (ax,) = new_figure(width=10.0, height=2.8)
    ax.axis("off")
    header = ["R", "p", "paper's legend", "κ²d·|(25)|, (27)", "(25) printed", "mirror D₂ (fixed)",
              "midpoint D₂", "worst D₂"]
    cells = [[str(r["R"]), f"{r['p']:g}", f"{r['paper_legend']:.3f}", f"{r['eq27_kappa2_d_abs25']:.5f}",
              f"{r['eq25_as_printed']:.4f}", f"{r['mirror_model_d2']:.4f}", f"{r['midpoint_pair_d2']:.4f}",
              "+∞" if r["mechanism_worst_d2"] == math.inf else f"{r['mechanism_worst_d2']:.4f}"] for r in records]
    table = ax.table(cellText=cells, colLabels=header, loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1, 1.6)
    ax.set_title(f"QMGeo, Figs. 5–6 legends: ε per round at α = 2 (d = {D}, κ = {float(KAPPA):g})")
    save(fig, path)


def compare_legend(records: list[dict]) -> str:
    parts = [f"R={r['R']}, p={r['p']:g}: paper {r['paper_legend']:.3f}, eq. (27) gives {r['eq27_kappa2_d_abs25']:.3f}"
             for r in records]
    return ("; ".join(parts) + ". 2.626 and 4.492 reproduce from |(25)| (which is negative as printed); 0.784 does not "
            "(0.787). The mechanism itself has D₂ = +∞ over its inputs.")


def build_pmfs(progress=None) -> list[dict]:
    records = []
    for orientation in ("S", "L"):
        mech = QMGeo(8, Fraction(1, 2), 1, orientation)
        for w in ("-0.9", "-0.5", "0.1", "0.6"):
            with mpmath.workdps(30):
                probabilities = mech.pmf(Fraction(w))
            records += [{"figure": "qmgeo-pmf", "orientation": orientation, "R": 8, "p": 0.5, "w_max": 1.0,
                         "w": float(Fraction(w)), "output": j, "level": float(mech.level(j)), "probability": float(v)}
                        for j, v in enumerate(probabilities)]
    return records


def plot_pmfs(records: list[dict], path) -> None:
    fig, axes = new_figure(ncols=2, width=11.0)
    for ax, orientation in zip(axes, ("S", "L")):
        inputs = sorted({r["w"] for r in records})
        for offset, (colour, w) in enumerate(zip(COLOURS, inputs)):
            rows = [r for r in records if r["orientation"] == orientation and r["w"] == w]
            ax.bar([r["output"] + (offset - 1.5) * 0.2 for r in rows], [r["probability"] for r in rows], width=0.2,
                   color=colour, label=f"w = {w:g}")
        ax.set_xlabel("output level j (Bin(j) = −1 + 2j/7)")
        ax.set_ylabel("probability")
        reading = "S: weight λ up (p = 1 is rounding)" if orientation == "S" else "L: eq. (9) literally"
        ax.set_title(f"QMGeo R = 8, p = 0.5, W = 1 — {reading}", fontsize=9)
        ax.legend()
    save(fig, path)


def compare_pmfs(records: list[dict]) -> str:
    return ("The paper shows no numbers (Fig. 1 is an illustration). Under S the mass leans towards the input's interval "
            "from above and below; under L it is the mirror image (anti-rounding at p = 1). Both are biased for 0 < p < 1.")


def build_blowup(progress=None) -> list[dict]:
    records = []
    for p in ("0.5", "0.9"):
        mech = QMGeo(8, Fraction(p), 1)
        with mpmath.workdps(30):
            eps21 = float(mech.eps_dp_paper())
        for eta in ETAS:
            rows = divergence(mech, alphas=[2, "inf"], choose=NeighbourOptions(margin=eta))
            records.append({"figure": "qmgeo-blowup", "R": 8, "p": float(Fraction(p)), "eta": float(eta),
                            "sup_d2": rows[0]["divergence"], "sup_dinf": rows[1]["divergence"], "eq21": eps21,
                            "x": rows[1]["x"], "x_prime": rows[1]["x_prime"]})
    return records


def plot_blowup(records: list[dict], path) -> None:
    fig, (ax,) = new_figure()
    for colour, p in zip(COLOURS, sorted({r["p"] for r in records})):
        rows = [r for r in records if r["p"] == p]
        etas = [r["eta"] for r in rows]
        ax.plot(etas, [r["sup_dinf"] for r in rows], "-o", color=colour, markersize=3, label=f"sup D_∞, p = {p:g}")
        ax.plot(etas, [r["sup_d2"] for r in rows], "--", color=colour, label=f"sup D₂, p = {p:g}")
        ax.axhline(rows[0]["eq21"], color=colour, linestyle=":", label=f"eq. (21), p = {p:g}")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("margin η: inputs kept η·Δ away from every level")
    ax.set_ylabel("worst-case divergence over such inputs (nats)")
    ax.set_title("QMGeo R = 8: the worst case grows like ln(1/η) (reading S)")
    ax.legend(fontsize=8)
    save(fig, path)


def compare_blowup(records: list[dict]) -> str:
    rows = [r for r in records if r["p"] == 0.5]
    slope = (rows[-1]["sup_dinf"] - rows[0]["sup_dinf"]) / math.log(rows[0]["eta"] / rows[-1]["eta"])
    return (f"The paper claims ε-DP with (21) = {rows[0]['eq21']:.4f} (p = 0.5); the supremum over inputs kept ηΔ from the "
            f"levels passes it already at η = 0.1 ({rows[0]['sup_dinf']:.4f}) and grows by {slope:.3f} nats per unit of "
            "ln(1/η) (an independent computation: 7.0414, 9.4393, 14.0544, 23.2649 at η = 0.1, 1e-2, 1e-4, 1e-8); "
            "at the levels it is +∞.")


SPECS = [
    FigureSpec(id="qmgeo-legend", title="QMGeo, Figures 5–6: the legend ε values, as printed and corrected",
               reproduces="Wang and Gursoy 2023, legends of Figs. 5–6 (eq. (27) at α = 2)",
               parameters=f"d = {D}, κ = {float(KAPPA):g}, α = 2, W = 0.05", build=build_legend, plot=plot_legend,
               compare=compare_legend),
    FigureSpec(id="qmgeo-pmf", title="QMGeo: the exact output pmf at four inputs under both readings of eq. (9)",
               reproduces="Wang and Gursoy 2023, Fig. 1 (illustration; exact values here)",
               parameters="R = 8, p = 0.5, W = 1; w ∈ {−0.9, −0.5, 0.1, 0.6}; normalisers text, tie lower",
               build=build_pmfs, plot=plot_pmfs, compare=compare_pmfs),
    FigureSpec(id="qmgeo-blowup", title="QMGeo: the worst-case divergence near the levels",
               reproduces="Wang and Gursoy 2023, eq. (21) against the mechanism",
               parameters="R = 8, p ∈ {0.5, 0.9}, W = 1, reading S; η = 1e-1 … 1e-12",
               build=build_blowup, plot=plot_blowup, compare=compare_blowup),
]
