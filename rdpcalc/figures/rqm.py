"""The RQM paper's Figure 2: RQM (Δ = c, q = 0.42) against PBM (θ = 0.25), m = 16.

Left: D_2 of the SecAgg sum against the number of clients n. Right: D_α against α for n = 1
and n = 40. Parameters from ``papers/rqm.md`` §6.2: c = 1.5 (the divergences are
scale-invariant at fixed Δ/c), PBM with 16 Bernoulli trials (the reading under which the
paper's claims reproduce, extract §6.3). The n range of the left panel is not stated in the
paper; we use 1 … 100. Both protocols are drawn: the paper's (others at ±c at random, seed 0)
solid, the worst case over k (and, at n = 1, over all input pairs) dashed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..mechanisms import PBM, RQM
from ..neighbours import sweep_n
from ..numerics import FastEngine
from ..orders import parse_alpha_range
from . import FigureSpec
from .style import COLOURS, PROTOCOL_STYLE, new_figure, save

C = Fraction(3, 2)
SEED = 0
N_MAX = 100
PROTOCOLS = ("paper", "worst")
RIGHT_NS = (1, 40)
RIGHT_ALPHAS = [*parse_alpha_range("1.01:1000:100"), math.inf]


def curves() -> list[tuple[str, object]]:
    """The two mechanisms of Figure 2, with their legend labels."""
    return [
        ("RQM (Δ=c, q=0.42)", RQM(C, C, 16, Fraction("0.42"))),
        ("PBM (θ=0.25, 16 trials)", PBM(C, Fraction("0.25"), 16)),
    ]


def _record(figure: str, label: str, mech, protocol: str, n: int, point) -> dict:
    return {
        "figure": figure,
        "curve": label,
        "mechanism": mech.name,
        **mech.parameters(),
        "protocol": protocol,
        "n": n,
        "alpha": point.alpha,
        "divergence": point.value,
        "x": float(point.attained.x),
        "x_prime": float(point.attained.x_prime),
        "k": point.attained.k,
    }


def build_left(progress=None) -> list[dict]:
    records = []
    for index, (label, mech) in enumerate(curves()):
        results = sweep_n(mech, range(1, N_MAX + 1), [2.0], PROTOCOLS, FastEngine(), seed=SEED)
        for (protocol, n), (_, points) in sorted(results.items(), key=lambda item: (item[0][0], item[0][1])):
            records.append(_record("rqm-fig2-left", label, mech, protocol, n, points[0]))
        if progress is not None:
            progress(index + 1, 2)
    return records


def build_right(progress=None) -> list[dict]:
    records = []
    engine = FastEngine()
    step = 0
    for label, mech in curves():
        results = sweep_n(mech, RIGHT_NS, RIGHT_ALPHAS, PROTOCOLS, engine, seed=SEED)
        for protocol in PROTOCOLS:
            for n in RIGHT_NS:
                for point in results[(protocol, n)][1]:
                    records.append(_record("rqm-fig2-right", label, mech, protocol, n, point))
        step += 1
        if progress is not None:
            progress(step, 2)
    return records


def _series(records, **match):
    rows = [r for r in records if all(r[key] == value for key, value in match.items())]
    return rows


def plot_left(records: list[dict], path) -> None:
    fig, (ax,) = new_figure()
    for colour, (label, _) in zip(COLOURS, curves()):
        for protocol in PROTOCOLS:
            rows = _series(records, curve=label, protocol=protocol)
            ax.plot([r["n"] for r in rows], [r["divergence"] for r in rows], PROTOCOL_STYLE[protocol],
                    color=colour, label=f"{label}, {_protocol_text(protocol)}")
    ax.set_yscale("log")
    ax.set_xlabel("number of clients n")
    ax.set_ylabel("Rényi divergence D₂ of the SecAgg sum (nats)")
    ax.set_title("RQM paper, Fig. 2 left: α = 2, m = 16")
    ax.legend()
    save(fig, path)


def plot_right(records: list[dict], path) -> None:
    fig, (ax,) = new_figure(width=7.5, height=6.2)
    infinity_x = 2500.0
    for colour, (label, _) in zip(COLOURS, curves()):
        for protocol in PROTOCOLS:
            for n, marker in zip(RIGHT_NS, ("o", "s")):
                rows = _series(records, curve=label, protocol=protocol, n=n)
                finite = [r for r in rows if r["alpha"] != math.inf]
                at_infinity = [r for r in rows if r["alpha"] == math.inf]
                alpha_width = 1.0 if n == 1 else 2.0
                ax.plot([r["alpha"] for r in finite], [r["divergence"] for r in finite], PROTOCOL_STYLE[protocol],
                        color=colour, linewidth=alpha_width,
                        label=f"{label}, n={n}, {_protocol_text(protocol)}")
                ax.plot([infinity_x] * len(at_infinity), [r["divergence"] for r in at_infinity], marker,
                        color=colour, markersize=4, fillstyle="none" if protocol == "worst" else "full")
    ax.set_xscale("log")
    ax.set_xticks([1, 10, 100, 1000, infinity_x])
    ax.set_xticklabels(["1", "10", "100", "1000", "∞"])
    ax.set_xlabel("Rényi order α (thin: n = 1, thick: n = 40; markers: α = ∞)")
    ax.set_ylabel("Rényi divergence D_α (nats)")
    ax.set_title("RQM paper, Fig. 2 right: n ∈ {1, 40}, m = 16")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    save(fig, path)


def _protocol_text(protocol: str) -> str:
    return "paper's protocol" if protocol == "paper" else "worst case"


def compare_left(records: list[dict]) -> str:
    rqm_label, pbm_label = (label for label, _ in curves())
    parts = []
    for protocol in PROTOCOLS:
        rqm = np.array([r["divergence"] for r in _series(records, curve=rqm_label, protocol=protocol)])
        pbm = np.array([r["divergence"] for r in _series(records, curve=pbm_label, protocol=protocol)])
        below = bool(np.all(rqm < pbm))
        ratio_1, ratio_last = pbm[0] / rqm[0], pbm[-1] / rqm[-1]
        monotone = bool(np.all(np.diff(rqm) <= 1e-12) and np.all(np.diff(pbm) <= 1e-12))
        parts.append(
            f"{_protocol_text(protocol)}: RQM {'below' if below else 'NOT always below'} PBM for every n in 1…{N_MAX}; "
            f"PBM/RQM is {ratio_1:.2f} at n=1 and {ratio_last:.2f} at n={N_MAX}"
            f"{'; both decrease in n' if monotone else '; not monotone in n (random k per n)'}"
        )
    return ("Paper: divergence falls with n, RQM better for finite n with the gap growing as n shrinks. "
            "Ours: " + ". ".join(parts) + ". Agrees.")


def compare_right(records: list[dict]) -> str:
    rqm_label, pbm_label = (label for label, _ in curves())
    parts = []
    holds = True
    for protocol in PROTOCOLS:
        for n in RIGHT_NS:
            rqm = [r["divergence"] for r in _series(records, curve=rqm_label, protocol=protocol, n=n)]
            pbm = [r["divergence"] for r in _series(records, curve=pbm_label, protocol=protocol, n=n)]
            below = all(a < b for a, b in zip(rqm, pbm))
            holds &= below
            parts.append(f"{_protocol_text(protocol)}, n={n}: RQM {'below' if below else 'NOT below'} PBM at every α"
                         f" (α=∞: {rqm[-1]:.4f} vs {pbm[-1]:.4f})")
    return ("Paper: RQM lower than PBM at every α, the gap growing with α. Ours: " + "; ".join(parts)
            + (". Agrees." if holds else ". Differs where marked."))


SPECS = [
    FigureSpec(
        id="rqm-fig2-left",
        title="RQM paper, Figure 2 (left): D₂ of the SecAgg sum against n",
        reproduces="Youn et al., RQM, Figure 2 left (extract papers/rqm.md §6.2)",
        parameters=f"m=16, c=1.5; RQM Δ=c, q=0.42; PBM θ=0.25 with 16 trials; α=2; n=1…{N_MAX}; "
                   f"paper's protocol with seed {SEED} (solid), worst case over k (dashed)",
        build=build_left,
        plot=plot_left,
        compare=compare_left,
    ),
    FigureSpec(
        id="rqm-fig2-right",
        title="RQM paper, Figure 2 (right): D_α against α for n = 1 and n = 40",
        reproduces="Youn et al., RQM, Figure 2 right (extract papers/rqm.md §6.2)",
        parameters="m=16, c=1.5; RQM Δ=c, q=0.42; PBM θ=0.25 with 16 trials; n ∈ {1, 40}; 100 orders "
                   f"log-spaced in [1.01, 1000] and ∞; paper's protocol with seed {SEED} (solid), worst case (dashed)",
        build=build_right,
        plot=plot_right,
        compare=compare_right,
    ),
]
