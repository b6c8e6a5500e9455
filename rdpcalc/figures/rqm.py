"""The RQM paper's privacy figures: Youn, Hu, Ziani & Abernethy (2023), "Randomized Quantization is All
You Need for Differential Privacy in Federated Learning", arXiv:2306.11913, Fig. 1(b) (§5), Figs. 2 and 3 right
(§6.1–6.2) and Figs. 4–7 (App. D), with the parameters stated there.

All use m = 16 levels, c = 1.5 (the divergences are scale-invariant at fixed Δ/c) and PBM with
16 Bernoulli trials: the reading under which the paper's claims reproduce with the other clients
at ±c at random (with 15 trials, RQM (0.429c, 0.49) and (2.33c, 0.42) are above PBM at α = 1.5).
Two kinds of panel:

* D₂ of the SecAgg sum against the number of clients n = 1 … 100 (the paper does not state
  its n range);
* D_α against α, 100 orders log-spaced in [1.01, 1000] plus ∞, for n = 1 and n = 40 (the
  paper's Fig. 2 right; Figs. 3 right, 6 and 7 state neither n nor α: we take n = 40, the FL
  setting, and the same α range).

Both protocols are drawn: the paper's (others at ±c at random, seed 0) solid, the worst case
dashed — at n = 1 over all input pairs, at n > 1 the largest value the search of
:mod:`rdpcalc.worstcase.secagg` found, with its certified upper bound as the top of a shaded band
wherever the two differ (the true worst case lies in the band). Figure 1(b) shows the two pmfs
at x = c (q = 0.42 and θ = 0.25 are our assumption; the paper does not state them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np
from matplotlib.colors import to_rgba

from ..mechanisms import PBM, RQM
from ..numerics import FastEngine
from ..orders import parse_alpha_range
from ..worstcase.neighbours import sweep_n
from .spec import FigureSpec
from .style import COLOURS, PROTOCOL_STYLE, new_figure, save

C = Fraction(3, 2)
SEED = 0
N_MAX = 100
PROTOCOLS = ("paper", "worst")
SWEEP_ALPHAS = [*parse_alpha_range("1.01:1000:100"), math.inf]


@dataclass(frozen=True)
class Curve:
    label: str
    mechanism: object


def rqm(delta_over_c: str, q: str) -> Curve:
    factor = "" if delta_over_c == "1" else delta_over_c
    return Curve(f"RQM (Δ={factor}c, q={q})", RQM(C, C * Fraction(delta_over_c), 16, Fraction(q)))


def pbm(theta: str) -> Curve:
    return Curve(f"PBM (θ={theta}, 16 trials)", PBM(C, Fraction(theta), 16))


def _record(figure: str, curve: Curve, protocol: str, n: int, point) -> dict:
    return {
        "figure": figure, "curve": curve.label, "mechanism": curve.mechanism.name, **curve.mechanism.parameters(),
        "protocol": protocol, "n": n, "alpha": point.alpha, "divergence": point.value,
        "certified_upper": point.upper, "search": point.search,
        "x": float(point.attained.x), "x_prime": float(point.attained.x_prime), "others_plus": point.attained.k(curve.mechanism.bound),
        "others": [[float(value), count] for value, count in point.attained.others],
    }


#: the hatch of each curve's band, in the curves' order, where the bands are drawn apart (:func:`_band_look`)
HATCHES = ("///", "\\\\\\", "..", "xx", "||", "oo", "++")


def _band_look(colour: str, index: int | None, label: str) -> dict:
    """How :func:`_band` draws a band: a faint fill of the curve's colour, or, with ``index``
    (the curve's place in the figure), a fill with an edge line and the hatch ``HATCHES[index]``
    in that colour, and ``label`` for the legend, so that overlapping bands stay apart."""
    if index is None:
        return {"color": colour, "alpha": 0.15, "linewidth": 0}
    return {"facecolor": to_rgba(colour, 0.08), "edgecolor": to_rgba(colour, 0.7), "linewidth": 0.8,
            "hatch": HATCHES[index % len(HATCHES)], "label": label}


def _band(ax, xs, rows, look: dict) -> None:
    """Shade [found, certified] where the worst case is bracketed rather than exact, drawn as
    ``look`` (:func:`_band_look`)."""
    lows = np.array([r["divergence"] for r in rows])
    highs = np.array([r["certified_upper"] for r in rows])
    open_ = highs > lows * (1 + 1e-9)
    if np.any(open_):
        ax.fill_between(xs, lows, highs, where=open_, **look)


def _series(records, **match) -> list[dict]:
    return [r for r in records if all(r[key] == value for key, value in match.items())]


def _protocol_text(protocol: str) -> str:
    return "paper's protocol" if protocol == "paper" else "worst case (found)"


# ------------------------------------------------------------------ D₂ against n
def build_vs_n(figure: str, curves: list[Curve], progress=None) -> list[dict]:
    records = []
    for index, curve in enumerate(curves):
        results = sweep_n(curve.mechanism, range(1, N_MAX + 1), [2.0], PROTOCOLS, FastEngine(), seed=SEED)
        for (protocol, n), (_, points) in sorted(results.items()):
            records.append(_record(figure, curve, protocol, n, points[0]))
        if progress is not None:
            progress(index + 1, len(curves))
    return records


def plot_vs_n(records: list[dict], path, curves: list[Curve], title: str) -> None:
    fig, (ax,) = new_figure()
    for colour, curve in zip(COLOURS, curves):
        for protocol in PROTOCOLS:
            rows = _series(records, curve=curve.label, protocol=protocol)
            ax.plot([r["n"] for r in rows], [r["divergence"] for r in rows], PROTOCOL_STYLE[protocol], color=colour,
                    label=f"{curve.label}, {_protocol_text(protocol)}")
            if protocol == "worst":
                _band(ax, [r["n"] for r in rows], rows, _band_look(colour, None, ""))
    ax.set_yscale("log")
    ax.set_xlabel("number of clients n")
    ax.set_ylabel("Rényi divergence D₂ of the SecAgg sum (nats)")
    ax.set_title(title)
    ax.legend(title="shaded: worst case between found and certified", title_fontsize=7)
    save(fig, path)


def _upper(row: dict) -> float:
    return row["divergence"] if row["certified_upper"] is None else row["certified_upper"]


def _against_pbm(rows: list[dict], pbm_rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The rows where RQM is proven at or above PBM (its value found reaches PBM's certified
    bound), and those the brackets leave open."""
    above = [r for r, p in zip(rows, pbm_rows, strict=True) if r["divergence"] >= _upper(p)]
    open_ = [r for r, p in zip(rows, pbm_rows, strict=True) if r["divergence"] < _upper(p) and _upper(r) >= p["divergence"]]
    return above, open_


def compare_vs_n(records: list[dict], curves: list[Curve]) -> str:
    """RQM against the PBM curve (the last one) at every n, per protocol."""
    reference = curves[-1]
    parts = []
    for protocol in PROTOCOLS:
        pbm_rows = _series(records, curve=reference.label, protocol=protocol)
        for curve in curves[:-1]:
            rows = _series(records, curve=curve.label, protocol=protocol)
            above, open_ = _against_pbm(rows, pbm_rows)
            verdict = "below PBM at every n" if not above else f"NOT below PBM at n = {_ranges([r['n'] for r in above])}"
            if open_:
                verdict += f"; the brackets straddle PBM's at n = {_ranges([r['n'] for r in open_])}"
            first, last = (p["divergence"] / r["divergence"] for p, r in ((pbm_rows[0], rows[0]), (pbm_rows[-1], rows[-1])))
            parts.append(f"{_protocol_text(protocol)}: {curve.label} {verdict} (PBM/RQM {first:.2f} at n=1, {last:.2f} "
                         f"at n={N_MAX})")
    return "; ".join(parts) + "."


# ------------------------------------------------------------------ D_α against α
def build_sweep(figure: str, curves: list[Curve], ns: tuple[int, ...], progress=None) -> list[dict]:
    records = []
    for index, curve in enumerate(curves):
        results = sweep_n(curve.mechanism, ns, SWEEP_ALPHAS, PROTOCOLS, FastEngine(), seed=SEED)
        for protocol in PROTOCOLS:
            for n in ns:
                records += [_record(figure, curve, protocol, n, point) for point in results[(protocol, n)][1]]
        if progress is not None:
            progress(index + 1, len(curves))
    return records


def plot_sweep(records: list[dict], path, curves: list[Curve], ns: tuple[int, ...], title: str, apart: bool = False) -> None:
    """D_α against α for each curve, protocol and n, the worst case's brackets shaded; ``apart``
    draws each band with its edge, its own hatch and a legend entry (:func:`_band_look`), for
    figures whose bands overlap."""
    fig, (ax,) = new_figure(width=7.5, height=6.4)
    infinity_x = 2500.0
    for index, (colour, curve) in enumerate(zip(COLOURS, curves)):
        for protocol in PROTOCOLS:
            for n, marker in zip(ns, ("o", "s")):
                rows = _series(records, curve=curve.label, protocol=protocol, n=n)
                finite = [r for r in rows if r["alpha"] != math.inf]
                at_infinity = [r for r in rows if r["alpha"] == math.inf]
                width = 1.0 if len(ns) > 1 and n == ns[0] else 2.0
                ax.plot([r["alpha"] for r in finite], [r["divergence"] for r in finite], PROTOCOL_STYLE[protocol],
                        color=colour, linewidth=width, label=f"{curve.label}, n={n}, {_protocol_text(protocol)}")
                if protocol == "worst":
                    label = f"{curve.label}, n={n}, worst case bracketed (band)"
                    _band(ax, [r["alpha"] for r in finite], finite, _band_look(colour, index if apart else None, label))
                ax.plot([infinity_x] * len(at_infinity), [r["divergence"] for r in at_infinity], marker, color=colour,
                        markersize=4, fillstyle="none" if protocol == "worst" else "full")
    ax.set_xscale("log")
    ax.set_xticks([1, 10, 100, 1000, infinity_x])
    ax.set_xticklabels(["1", "10", "100", "1000", "∞"])
    thickness = " (thin: n = 1, thick: n = 40)" if len(ns) > 1 else ""
    ax.set_xlabel(f"Rényi order α{thickness}; markers: α = ∞")
    ax.set_ylabel("Rényi divergence D_α (nats)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False,
              title="shaded: the worst case lies between the value found and its certified upper bound",
              title_fontsize=7)
    save(fig, path)


def compare_sweep(records: list[dict], curves: list[Curve], ns: tuple[int, ...]) -> str:
    """For each RQM curve, protocol and n: below PBM at every α, or where not."""
    reference = curves[-1]
    parts = []
    for protocol in PROTOCOLS:
        for n in ns:
            pbm_rows = _series(records, curve=reference.label, protocol=protocol, n=n)
            for curve in curves[:-1]:
                rows = _series(records, curve=curve.label, protocol=protocol, n=n)
                above, open_ = (sorted(r["alpha"] for r in kind) for kind in _against_pbm(rows, pbm_rows))
                if above:
                    verdict = f"ABOVE PBM for α in [{above[0]:.3g}, {above[-1]:.3g}]"
                else:
                    verdict = "below PBM at every α"
                if open_:
                    verdict += f" (brackets straddle PBM's for α in [{open_[0]:.3g}, {open_[-1]:.3g}])"
                parts.append(f"{_protocol_text(protocol)}, n={n}: {curve.label} {verdict}")
    return "; ".join(parts) + "."


# ------------------------------------------------------------------ Figure 1(b)
def build_pmfs(progress=None) -> list[dict]:
    records = []
    for curve in (rqm("1", "0.42"), pbm("0.25")):
        with mpmath.workdps(30):
            probabilities = curve.mechanism.pmf(C)
        records += [{"figure": "rqm-fig1b", "curve": curve.label, "mechanism": curve.mechanism.name,
                     **curve.mechanism.parameters(), "x": float(C), "output": i, "probability": float(p)}
                    for i, p in enumerate(probabilities)]
    return records


def plot_pmfs(records: list[dict], path) -> None:
    fig, (ax,) = new_figure()
    labels = sorted({r["curve"] for r in records}, reverse=True)
    for offset, (colour, label) in enumerate(zip(COLOURS, labels)):
        rows = _series(records, curve=label)
        ax.bar([r["output"] + (offset - 0.5) * 0.4 for r in rows], [r["probability"] for r in rows], width=0.4,
               color=colour, label=label)
    ax.set_yscale("log")
    ax.set_xticks(range(0, 17, 2))
    ax.set_xlabel("output (RQM: level index 0…15; PBM: number of successes 0…16)")
    ax.set_ylabel("probability at x = c")
    ax.set_title("RQM paper, Fig. 1(b): output distributions at x = c, m = 16")
    ax.legend()
    save(fig, path)


def compare_pmfs(records: list[dict]) -> str:
    rqm_rows = [r for r in records if r["mechanism"] == "rqm"]
    argmin = min(rqm_rows, key=lambda r: r["probability"])["output"]
    return (f"The paper shows the shapes only (its q and θ are not stated; we use q = 0.42, θ = 0.25). RQM's mass is "
            f"spread over every level with a mode next to x = c; its least likely output at x = c is level {argmin} "
            "(at x = −c, by symmetry, level 15 − that), not the end level the proof of Theorem 5.2 assumes.")


def _ranges(values: list[int]) -> str:
    return f"{values[0]}…{values[-1]}" if len(values) > 1 else str(values[0])


def _vs_n_spec(figure_id: str, title: str, reproduces: str, curves: list[Curve], plot_title: str) -> FigureSpec:
    return FigureSpec(
        id=figure_id, title=title, reproduces=reproduces,
        parameters="m=16, c=1.5; " + "; ".join(c.label for c in curves) + f"; α=2; n=1…{N_MAX}; paper's protocol "
                   f"with seed {SEED} (solid), worst case found by the search (dashed) with its certified upper "
                   "bound (shaded band where they differ)",
        build=lambda progress=None: build_vs_n(figure_id, curves, progress),
        plot=lambda records, path: plot_vs_n(records, path, curves, plot_title),
        compare=lambda records: compare_vs_n(records, curves),
    )


def _sweep_spec(figure_id: str, title: str, reproduces: str, curves: list[Curve], ns: tuple[int, ...],
                plot_title: str, note: str = "", apart: bool = False) -> FigureSpec:
    return FigureSpec(
        id=figure_id, title=title, reproduces=reproduces,
        parameters="m=16, c=1.5; " + "; ".join(c.label for c in curves) + f"; n ∈ {set(ns)}; 100 orders log-spaced "
                   f"in [1.01, 1000] and ∞; paper's protocol with seed {SEED} (solid), worst case found (dashed) with "
                   f"its certified upper bound (shaded band){note}",
        build=lambda progress=None: build_sweep(figure_id, curves, ns, progress),
        plot=lambda records, path: plot_sweep(records, path, curves, ns, plot_title, apart),
        compare=lambda records: compare_sweep(records, curves, ns),
    )


FIG2 = [rqm("1", "0.42"), pbm("0.25")]
FIG3 = [rqm("1", "0.42"), rqm("2", "0.57"), rqm("0.66", "0.33"), pbm("0.25")]
FIG4 = [rqm("2.33", "0.42"), pbm("0.15")]
FIG5 = [rqm("0.429", "0.49"), pbm("0.35")]
FIG6 = [rqm("2.33", "0.42"), rqm("4", "0.5"), rqm("1", "0.23"), pbm("0.15")]
FIG7 = [rqm("0.429", "0.49"), rqm("1", "0.65"), rqm("0.25", "0.37"), pbm("0.35")]
ASSUMED = "; n and the α range are not stated in the paper (assumed)"

SPECS = [
    FigureSpec(id="rqm-fig1b", title="RQM paper, Figure 1(b): output pmfs of RQM and PBM at x = c",
               reproduces="Youn et al. 2023, RQM, Figure 1(b)", parameters="m=16, c=1.5, x=c; RQM Δ=c, q=0.42 (assumed); "
               "PBM θ=0.25 (assumed), 16 trials", build=build_pmfs, plot=plot_pmfs, compare=compare_pmfs),
    _vs_n_spec("rqm-fig2-left", "RQM paper, Figure 2 (left): D₂ of the SecAgg sum against n",
               "Youn et al. 2023, RQM, Figure 2 left", FIG2, "RQM paper, Fig. 2 left: α = 2, m = 16"),
    _sweep_spec("rqm-fig2-right", "RQM paper, Figure 2 (right): D_α against α for n = 1 and n = 40",
                "Youn et al. 2023, RQM, Figure 2 right", FIG2, (1, 40), "RQM paper, Fig. 2 right: n ∈ {1, 40}, m = 16"),
    _sweep_spec("rqm-fig3-right", "RQM paper, Figure 3 (right): the three FL configurations against PBM θ = 0.25",
                "Youn et al. 2023, RQM, Figure 3 right", FIG3, (40,), "RQM paper, Fig. 3 right: n = 40, m = 16", ASSUMED,
                apart=True),  # its RQM bands overlap
    _vs_n_spec("rqm-fig4-left", "RQM paper, Figure 4 (left): PBM θ = 0.15 against RQM (2.33c, 0.42), D₂ against n",
               "Youn et al. 2023, RQM, Figure 4 (App. D.1), first panel", FIG4, "RQM paper, Fig. 4: α = 2, m = 16"),
    _sweep_spec("rqm-fig4-right", "RQM paper, Figure 4 (right): PBM θ = 0.15 against RQM (2.33c, 0.42), D_α against α",
                "Youn et al. 2023, RQM, Figure 4 (App. D.1), second panel", FIG4, (1, 40),
                "RQM paper, Fig. 4: n ∈ {1, 40}, m = 16", "; panel layout assumed as in Fig. 2"),
    _vs_n_spec("rqm-fig5-left", "RQM paper, Figure 5 (left): PBM θ = 0.35 against RQM (0.429c, 0.49), D₂ against n",
               "Youn et al. 2023, RQM, Figure 5 (App. D.1), first panel", FIG5, "RQM paper, Fig. 5: α = 2, m = 16"),
    _sweep_spec("rqm-fig5-right", "RQM paper, Figure 5 (right): PBM θ = 0.35 against RQM (0.429c, 0.49), D_α against α",
                "Youn et al. 2023, RQM, Figure 5 (App. D.1), second panel", FIG5, (1, 40),
                "RQM paper, Fig. 5: n ∈ {1, 40}, m = 16", "; panel layout assumed as in Fig. 2"),
    _sweep_spec("rqm-fig6-rdp", "RQM paper, Figure 6 (Rényi DP panel): θ = 0.15 configurations",
                "Youn et al. 2023, RQM, Figure 6 (App. D.2), third panel", FIG6, (40,), "RQM paper, Fig. 6: n = 40, m = 16",
                ASSUMED, apart=True),  # its RQM bands overlap
    _sweep_spec("rqm-fig7-rdp", "RQM paper, Figure 7 (Rényi DP panel): θ = 0.35 configurations",
                "Youn et al. 2023, RQM, Figure 7 (App. D.2), third panel", FIG7, (40,), "RQM paper, Fig. 7: n = 40, m = 16",
                ASSUMED, apart=True),  # its RQM bands overlap
]
