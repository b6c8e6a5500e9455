"""CorBin-FL (Salehi, Mia, Pradhan, Amini & Shirani 2024, arXiv:2409.13133): the privacy–accuracy
trade-off of one bit per parameter. The paper has no numeric table; these figures show its closed forms.

* PLDP ε_p against the server MSE (×n/r²) of LDP-FL and CorBin-FL (ideal coupling), worst case
  and average over uniform inputs;
* the ratio CorBin-FL / LDP-FL of the worst-case MSE against ε_p, with the ratio implied by
  the paper's Theorem 2 bound and by its proof with the covariance factor corrected.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from ..mechanisms.corbin import CorBin
from .spec import FigureSpec
from .style import COLOURS, new_figure, save

EPSILONS = [float(v) for v in np.geomspace(0.1, 10, 81)]


def build(progress=None) -> list[dict]:
    records = []
    with mpmath.workdps(30):
        for eps in EPSILONS:
            mech = CorBin(eps_p=Fraction(eps).limit_denominator(10**12), r=1)
            alpha = mech.alpha
            worst_ldp, worst_corbin = alpha**2, mech.worst_pair_mse_ideal() / 2
            records.append({
                "figure": "corbin-mse", "eps_p": eps, "alpha": float(alpha),
                "ldp_fl_worst": float(worst_ldp), "corbin_fl_worst": float(worst_corbin),
                "ldp_fl_average": float(alpha**2 - mpmath.mpf(1) / 3),
                "corbin_fl_average": float((4 * alpha - 2) / 6),
                "ratio_worst_exact": float(worst_corbin / worst_ldp),
                "ratio_theorem_2_printed": float((alpha**2 + 2 * alpha - 1) / (2 * alpha**2)),
                "ratio_theorem_2_corrected": float((2 * alpha - 1) / alpha**2),
            })
    return records


def plot_tradeoff(records: list[dict], path) -> None:
    fig, (ax,) = new_figure()
    eps = [r["eps_p"] for r in records]
    for colour, (key, label) in zip(COLOURS, (("ldp_fl", "LDP-FL"), ("corbin_fl", "CorBin-FL (d → ∞)"))):
        ax.plot(eps, [r[f"{key}_worst"] for r in records], "-", color=colour, label=f"{label}, worst case")
        ax.plot(eps, [r[f"{key}_average"] for r in records], "--", color=colour, label=f"{label}, uniform inputs")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("PLDP budget ε_p")
    ax.set_ylabel("server MSE per coordinate × n / r²")
    ax.set_title("CorBin-FL vs LDP-FL: one bit per parameter")
    ax.legend()
    save(fig, path)


def plot_ratio(records: list[dict], path) -> None:
    fig, (ax,) = new_figure()
    eps = [r["eps_p"] for r in records]
    ax.plot(eps, [r["ratio_worst_exact"] for r in records], "-", color=COLOURS[0], label="exact worst case (d → ∞)")
    ax.plot(eps, [r["ratio_theorem_2_printed"] for r in records], "--", color=COLOURS[1],
            label="Theorem 2 bound / LDP-FL (as printed)")
    ax.plot(eps, [r["ratio_theorem_2_corrected"] for r in records], ":", color=COLOURS[2],
            label="Theorem 2 proof, covariance factor corrected")
    ax.axhline(0.5, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("PLDP budget ε_p")
    ax.set_ylabel("MSE ratio CorBin-FL / LDP-FL (worst case)")
    ax.set_title("CorBin-FL's gain: exact against Theorem 2")
    ax.legend()
    save(fig, path)


def compare_tradeoff(records: list[dict]) -> str:
    at = min(records, key=lambda r: abs(r["eps_p"] - 1))
    return (f"The paper gives no MSE numbers (its Fig. 4 shows pair MSEs). At ε_p = 1 the worst-case server MSE × n/r² is "
            f"{at['ldp_fl_worst']:.4f} (LDP-FL) vs {at['corbin_fl_worst']:.4f} (CorBin-FL), average "
            f"{at['ldp_fl_average']:.4f} vs {at['corbin_fl_average']:.4f}: CorBin-FL is better everywhere, most at small ε_p, "
            "as the paper says.")


def compare_ratio(records: list[dict]) -> str:
    worst = max(r["ratio_worst_exact"] for r in records)
    printed_min = min(r["ratio_theorem_2_printed"] for r in records)
    return (f"Paper: 'improves the MSE by at least a factor of two for small ε_p'. The exact worst-case ratio is ≤ {worst:.3f} "
            f"(at most ½) at every ε_p, but the paper's own bound only gives ratios ≥ {printed_min:.3f} (> ½ for every finite "
            "ε_p): the claim holds, the theorem does not show it.")



SPECS = [
    FigureSpec(id="corbin-mse", title="CorBin-FL: PLDP against server MSE, LDP-FL vs CorBin-FL",
               reproduces="Salehi et al. 2024, Proposition 1, Theorems 1–2 (closed forms; no figure in the paper)",
               parameters="ε_p = 0.1…10; MSE × n/r²; ideal coupling d → ∞; worst case and uniform inputs",
               build=build, plot=plot_tradeoff, compare=compare_tradeoff),
    FigureSpec(id="corbin-ratio", title="CorBin-FL: worst-case MSE ratio against ε_p with Theorem 2",
               reproduces="Salehi et al. 2024, Theorem 2 and its 'factor of two' claim",
               parameters="ε_p = 0.1…10; ideal coupling d → ∞", build=build, plot=plot_ratio, compare=compare_ratio),
]
