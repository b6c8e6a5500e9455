"""The papers' numerical and qualitative claims as data, each with a check that recomputes it.

A :class:`Claim` names the paper and the place, states the claim in one line, and has a
``check`` that returns (verdict, our values). Verdicts: ``holds``, ``fails``, ``holds only
under the paper's protocol`` (the RQM paper's random ±c assignment of the other clients, with
PBM at 16 trials), or ``undecided`` where the claim holds for the worst case found but the
certified upper bound of the worst case (n > 1, :mod:`rdpcalc.worstcase.secagg`) does not settle it.
The claims are the papers' own statements (theorems, their proofs' steps, figure legends and
text), each located by the paper's section, equation or figure number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import mpmath

from . import bounds, queries
from .layered import bits, noise
from .layered.tables import layered_divergence
from .mechanisms import PBM, RQM, QMGeo, QuantizedGaussian
from .mechanisms.corbin import CorBin

HOLDS, FAILS, PAPER_ONLY = "holds", "fails", "holds only under the paper's protocol"
UNDECIDED = "undecided: holds for the worst case found, not for its certified upper bound"
PAPERS = ("rqm", "qgauss", "qmgeo", "corbin", "layered")
C = Fraction(3, 2)
SWEEP = [1.5, 2, 3, 5, 10, 20, 50, 100, 1000, math.inf]


@dataclass(frozen=True)
class Claim:
    """One claim: ``paper`` (short name), ``place`` in the paper, the claim as stated, and a
    check returning (verdict, our values in words)."""

    paper: str
    place: str
    claim: str
    check: Callable[[], tuple[str, str]]


def _rqm(ratio: str, q: str) -> RQM:
    return RQM(C, C * Fraction(ratio), 16, Fraction(q))


def _pbm(theta: str) -> PBM:
    return PBM(C, Fraction(theta), 16)


def _bracket(mech, n: int, protocol: str) -> list[tuple[float, float]]:
    """Per order of SWEEP, (value, upper bound): the worst case's [found, certified] bracket, or
    (value, value) for the paper's protocol."""
    return [(r["divergence"], r["certified_upper"] if protocol == "worst" else r["divergence"])
            for r in queries.divergence(mech, n=n, alphas=SWEEP, choose=queries.NeighbourOptions(neighbours=protocol))]


def _rqm_below_pbm(pairs: list[tuple[str, str]], theta: str, ns=(40,)) -> tuple[str, str]:
    """RQM below PBM at every α of the sweep, under both protocols. Under the worst case RQM is
    proven above where its value found reaches PBM's certified bound, proven below where its
    certified bound stays under PBM's value found, and undecided in between."""
    reference = {(n, p): _bracket(_pbm(theta), n, p) for n in ns for p in ("paper", "worst")}
    failures = {"paper": [], "worst": [], "undecided": []}
    for ratio, q in pairs:
        label = "c" if ratio == "1" else f"{ratio}c"
        for n in ns:
            for protocol in ("paper", "worst"):
                ours = _bracket(_rqm(ratio, q), n, protocol)
                pairs_of_brackets = list(zip(SWEEP, ours, reference[(n, protocol)]))
                above = [a for a, (found, _), (_, pbm_upper) in pairs_of_brackets if found >= pbm_upper]
                open_ = [a for a, (found, upper), (pbm_found, pbm_upper) in pairs_of_brackets
                         if found < pbm_upper and upper >= pbm_found]
                for kind, orders in ((protocol, above), ("undecided", open_ if protocol == "worst" else [])):
                    if orders:
                        failures[kind].append(f"({label}, {q}) at n={n}, α ∈ [{min(orders):g}, {max(orders):g}]")
    texts = {"paper": "paper's protocol: RQM above PBM for ", "worst": "worst case: RQM above PBM for ",
             "undecided": "worst case, bracket straddles PBM for "}
    text = "; ".join(texts[kind] + ", ".join(f) for kind, f in failures.items() if f) or \
        "RQM below PBM at every α tested, both protocols"
    if failures["paper"]:
        return FAILS, text
    if failures["worst"]:
        return PAPER_ONLY, text
    return (UNDECIDED if failures["undecided"] else HOLDS), text


def _check_counterexample() -> tuple[str, str]:
    mech = _rqm("1", "0.42")
    worst = queries.divergence(mech, alphas=[10])[0]
    pair = queries.divergence(mech, alphas=[10], choose=queries.NeighbourOptions(neighbours="paper"))[0]
    verdict = FAILS if worst["divergence"] > pair["divergence"] else HOLDS
    return verdict, (f"D₁₀ at (c, −c) = {pair['divergence']:.6f} < D₁₀ at ({worst['x']:g}, {worst['x_prime']:g}) = "
                     f"{worst['divergence']:.6f}")


def _check_argmin() -> tuple[str, str]:
    with mpmath.workdps(30):
        p = _rqm("1", "0.42").pmf(-C)
    argmin = min(range(16), key=lambda i: p[i])
    return (HOLDS if argmin == 15 else FAILS), f"argmin_i P(Q(−c) = i) = {argmin} for (c, 0.42), m = 16"


def _check_theorem_5_2() -> tuple[str, str]:
    rows = []
    for ratio, q in (("1", "0.42"), ("2", "0.57"), ("0.66", "0.33"), ("0.25", "0.37")):
        mech = _rqm(ratio, q)
        worst = queries.divergence(mech, alphas=["inf"])[0]["divergence"]
        with mpmath.workdps(30):
            bound = float(mech.theorem_5_2_bound())
        rows.append((ratio, q, worst, bound))
    ok = all(w <= b for _, _, w, b in rows)
    return (HOLDS if ok else FAILS), "; ".join(f"({'' if r == '1' else r}c, {q}): max D_∞ {w:.4f} ≤ {b:.4f}"
                                                for r, q, w, b in rows)


def _check_gap_shrinks() -> tuple[str, str]:
    rows = []
    for n in (1, 10, 40, 100):
        [rqm] = queries.divergence(_rqm("1", "0.42"), n=n, alphas=[2])
        [pbm] = queries.divergence(_pbm("0.25"), n=n, alphas=[2])
        rows.append((n, pbm["divergence"] - rqm["divergence"], pbm["divergence"] - rqm["certified_upper"]))
    ok = all(b[1] < a[1] for a, b in zip(rows, rows[1:])) and all(gap > 0 for _, gap, _ in rows)
    certified = all(gap > 0 for _, _, gap in rows)
    verdict = FAILS if not ok else HOLDS if certified else UNDECIDED
    return verdict, ("D₂(PBM) − D₂(RQM), worst case found (certified: PBM − RQM's certified bound): "
                     + ", ".join(f"n={n}: {gap:.4f} ({low:.4f})" for n, gap, low in rows))


def _check_qgauss_fig3() -> tuple[str, str]:
    kl = [queries.divergence(QuantizedGaussian(1, k, 1), alphas=[1])[0]["divergence"] for k in range(2, 65)]
    ok = all(b > a for a, b in zip(kl, kl[1:])) and max(kl) < 0.5
    return (HOLDS if ok else FAILS), f"KL {kl[0]:.6f} (k=2) … {kl[-1]:.6f} (k=64), increasing, all < 0.5"


def _check_lemma_3() -> tuple[str, str]:
    with mpmath.workdps(30):
        bounds = [float(QuantizedGaussian(1, k, 1).theorem_2_bound()) for k in range(2, 65)]
    ok = all(b > a for a, b in zip(bounds, bounds[1:]))
    return (HOLDS if ok else FAILS), f"ε_∞ bound {bounds[0]:.4f} (k=2) … {bounds[-1]:.4f} (k=64), strictly increasing"


def _check_theorem_2_qg() -> tuple[str, str]:
    rows = []
    for k in (2, 8, 64):
        mech = QuantizedGaussian(1, k, 1)
        exact = queries.divergence(mech, alphas=["inf"])[0]["divergence"]
        with mpmath.workdps(30):
            rows.append((k, exact, float(mech.theorem_2_bound())))
    ok = all(e <= b for _, e, b in rows)
    return (HOLDS if ok else FAILS), "; ".join(f"k={k}: D_∞ {e:.4f} ≤ {b:.4f}" for k, e, b in rows) + " (loose)"


def _check_qg_worst_pair() -> tuple[str, str]:
    rows = []
    for k in (2, 3, 8):
        grid = queries.divergence(QuantizedGaussian(1, k, 1), alphas=[1, 2, "inf"], choose=queries.NeighbourOptions(grid=11))
        rows += [(k, r["alpha"], {r["x"], r["x_prime"]} == {0.5, -0.5}) for r in grid]
    ok = all(flag for *_, flag in rows)
    return (HOLDS if ok else FAILS), "the 11×11 grid maximum sits at (±C_q/2, ∓C_q/2) for k ∈ {2, 3, 8}, α ∈ {1, 2, ∞}"


def _check_qmgeo_dp() -> tuple[str, str]:
    mech = QMGeo(8, Fraction(1, 2), 1)
    worst = queries.divergence(mech, alphas=["inf"])[0]
    with mpmath.workdps(30):
        printed = float(mech.eps_dp_paper())
    return (FAILS if worst["divergence"] > printed else HOLDS), (
        f"(21) gives {printed:.4f}; the exact worst case is {'+∞' if worst['divergence'] == math.inf else worst['divergence']}"
        f" at ({worst['x']:g}, {worst['x_prime']:g})")


def _check_qmgeo_rdp() -> tuple[str, str]:
    with mpmath.workdps(30):
        values = [float(QMGeo(R, Fraction(p), 1).rdp_paper(2)) for R, p in ((8, "0.9"), (8, "0.5"), (16, "0.9"))]
    return (FAILS if all(v < 0 for v in values) else HOLDS), "(25) at α = 2: " + ", ".join(f"{v:.4f}" for v in values)


def _legend(R: int, p: str, legend: str) -> Callable[[], tuple[str, str]]:
    def check() -> tuple[str, str]:
        with mpmath.workdps(30):
            value = float(Fraction("0.005333") ** 2 * 3562 * abs(QMGeo(R, Fraction(p), 1).rdp_paper(2)))
        return (HOLDS if f"{value:.3f}" == legend else FAILS), f"κ²d·|(25)| = {value:.5f} (paper: {legend})"
    return check


def _check_qmgeo_rounding() -> tuple[str, str]:
    w = Fraction(1, 10)
    s = queries.moments(QMGeo(8, 1, 1, "S"), x=w)["mean"]
    literal = queries.moments(QMGeo(8, 1, 1, "L"), x=w)["mean"]
    verdict = FAILS if abs(literal - 0.1) > 1e-12 else HOLDS
    return verdict, f"E[Q(0.1)] at p = 1: {literal:.4f} with eq. (9) as printed, {s:.4f} with the weights swapped (S)"


def _check_corbin_pldp() -> tuple[str, str]:
    values = [(eps, queries.divergence(CorBin(eps_p=eps), alphas=["inf"])[0]["divergence"]) for eps in (Fraction(1, 2), 1, 5)]
    ok = all(abs(v - float(e)) < 1e-12 for e, v in values)
    return (HOLDS if ok else FAILS), "; ".join(f"ε_p = {float(e):g}: exact D_∞ = {v:.12g}" for e, v in values)


def _check_corbin_line14() -> tuple[str, str]:
    mech = CorBin(eps_p=1, r=Fraction(1, 2), d=5, view="joint", line14="printed")
    with mpmath.workdps(30):
        joint = mech.pair_joint(Fraction(2, 5), Fraction(-1, 5))
        got, target = float(joint[1] + joint[3]), float(mech.up_probability(Fraction(-1, 5)))
    return (FAILS if abs(got - target) > 1e-9 else HOLDS), f"P(Q₂ = +) = {got:.6f}, unbiasedness needs {target:.6f}"


def _check_corbin_theorem_2() -> tuple[str, str]:
    rows = []
    with mpmath.workdps(30):
        for eps in (Fraction(1, 2), 1, 5):
            mech = CorBin(eps_p=eps)
            alpha = mech.alpha
            rows.append((float(eps), float(mech.worst_pair_mse_ideal() / 2 / alpha**2),
                         float((alpha**2 + 2 * alpha - 1) / (2 * alpha**2))))
    ok = all(exact <= 0.5 + 1e-15 and bound > 0.5 for _, exact, bound in rows)
    return (HOLDS if ok else FAILS), "worst-case ratio CorBin/LDP-FL exact vs Theorem 2: " + "; ".join(
        f"ε_p={e:g}: {x:.4f} vs {b:.4f}" for e, x, b in rows) + " (the gain holds; the theorem does not show it)"


def _check_corbin_theorem_3() -> tuple[str, str]:
    records = bounds.bound(CorBin(eps_p=5, r=Fraction(1, 2)), alphas=[2], n=50)
    row = next(r for r in records if r["quantity"].startswith("Theorem 3: ε_u"))
    return (FAILS if "fails" in row["note"] else HOLDS), f"n = 50, m = 10⁶, δ = 1e-5: {row['note']}"


def _check_minimal_steps() -> tuple[str, str]:
    gauss, laplace = noise.minimal_shifted_step("gauss", 1.0), noise.minimal_shifted_step("laplace", 1.0)
    ok = abs(gauss - 2 * math.sqrt(math.log(4))) < 1e-12 and abs(laplace - math.sqrt(2) * math.log(2)) < 1e-12
    return (HOLDS if ok else FAILS), f"min f_W: {gauss:.6f}σ (Gaussian), {laplace:.6f}σ (Laplace)"


def _check_entropy_gap() -> tuple[str, str]:
    gaps = [bits.conditional_entropy(target, "shifted", sigma, t) - bits.conditional_entropy(target, "direct", sigma, t)
            for target in ("gauss", "laplace") for sigma in (1.0, 3.0) for t in (4.0, 64.0, 1024.0)]
    return (HOLDS if max(gaps) < 1 else FAILS), f"H_shifted − H_direct ≤ {max(gaps):.4f} bits over σ ∈ {{1, 3}}, t ∈ {{4, 64, 1024}}"


def _check_irwin_hall_rdp() -> tuple[str, str]:
    records = layered_divergence("irwin-hall", sigma=1, sensitivity=1, n=10, alphas=[1.5, 2, 10])
    ok = all(r["divergence"] == math.inf for r in records)
    return (HOLDS if ok else FAILS), "D_α = +∞ for α ∈ {1.5, 2, 10} at n = 10, Δ = σ: " + records[0]["reason"][:60] + "…"


def _check_aggregate_vs_individual() -> tuple[str, str]:
    rows = []
    for t in (64.0, 2048.0):
        agg = bits.aggregate_bits_bound(1000, 1.0, t)
        ind = bits.direct_upper_bound("gauss", math.sqrt(1000), t) + 1
        rows.append((t, agg, ind))
    verdict = HOLDS if all(a < i for _, a, i in rows) else FAILS
    return verdict, "n = 1000: " + "; ".join(f"t = {t:g}: aggregate {a:.3f} vs individual (5) + 1 {i:.3f}" for t, a, i in rows)


CLAIMS = [
    Claim("rqm", "Thm 5.2 proof, App. B.2", "D_∞ (and D_α) between inputs is maximised at x = c, x′ = −c",
          _check_counterexample),
    Claim("rqm", "Thm 5.2 proof, App. B.2", "argmin_i P(Q(−c) = i) = m − 1", _check_argmin),
    Claim("rqm", "Theorem 5.2, eq. (3)", "D_∞ ≤ log(2(1−q)²(1+c/Δ)) + m log(1/(1−q)) for all inputs", _check_theorem_5_2),
    Claim("rqm", "§6.1, Fig. 2", "for any α, RQM (c, 0.42) has lower Rényi divergence than PBM θ = 0.25 (n = 1, 40)",
          lambda: _rqm_below_pbm([("1", "0.42")], "0.25", (1, 40))),
    Claim("rqm", "§6.1, Fig. 2 left", "RQM is better at every n, the gap to PBM (α = 2) growing as n shrinks",
          _check_gap_shrinks),
    Claim("rqm", "§6.2, Fig. 3 right", "all three RQM configurations have better Rényi DP than PBM θ = 0.25",
          lambda: _rqm_below_pbm([("1", "0.42"), ("2", "0.57"), ("0.66", "0.33")], "0.25")),
    Claim("rqm", "App. D.1, Fig. 4", "RQM (2.33c, 0.42) has lower Rényi divergence than PBM θ = 0.15",
          lambda: _rqm_below_pbm([("2.33", "0.42")], "0.15", (1, 40))),
    Claim("rqm", "App. D.1, Fig. 5", "RQM (0.429c, 0.49) has lower Rényi divergence than PBM θ = 0.35",
          lambda: _rqm_below_pbm([("0.429", "0.49")], "0.35", (1, 40))),
    Claim("rqm", "App. D.2, Fig. 6", "RQM (2.33c, .42), (4c, .5), (c, .23) beat PBM θ = 0.15 in Rényi DP",
          lambda: _rqm_below_pbm([("2.33", "0.42"), ("4", "0.5"), ("1", "0.23")], "0.15")),
    Claim("rqm", "App. D.2, Fig. 7", "RQM (0.429c, .49), (c, .65), (0.25c, .37) beat PBM θ = 0.35 in Rényi DP",
          lambda: _rqm_below_pbm([("0.429", "0.49"), ("1", "0.65"), ("0.25", "0.37")], "0.35")),
    Claim("qgauss", "Fig. 3", "ε₁ increases with k and stays below the Gaussian's 0.5 (σ = Δ₂ = 1)", _check_qgauss_fig3),
    Claim("qgauss", "Lemma 3", "ε_∞ increases monotonically with k", _check_lemma_3),
    Claim("qgauss", "Theorem 2, eq. (14)", "D_α ≤ D_∞ ≤ ε_∞ (14)", _check_theorem_2_qg),
    Claim("qgauss", "Theorem 2, eq. (13)", "the worst pair of inputs is (C_q/2, −C_q/2)", _check_qg_worst_pair),
    Claim("qmgeo", "§IV-B1, eq. (21)", "QMGeo is ε-DP with ε = −ln(p(1−p)^{R−2})", _check_qmgeo_dp),
    Claim("qmgeo", "§IV-B2, eq. (25)", "ε(α) of (25) bounds the Rényi divergence", _check_qmgeo_rdp),
    Claim("qmgeo", "Fig. 5 legend", "ε = 2.626 per round (R = 8, p = 0.9, α = 2)", _legend(8, "0.9", "2.626")),
    Claim("qmgeo", "Fig. 6 legend", "ε = 4.492 per round (R = 16, p = 0.9, α = 2)", _legend(16, "0.9", "4.492")),
    Claim("qmgeo", "Fig. 5 legend", "ε = 0.784 per round (R = 8, p = 0.5, α = 2)", _legend(8, "0.5", "0.784")),
    Claim("qmgeo", "§IV-B1", "at p = 1 QMGeo (eq. 9) reduces to stochastic rounding (16)", _check_qmgeo_rounding),
    Claim("corbin", "Proposition 1, eq. (3)", "LDPQ (and each CorBinQ uplink) is ε_p-PLDP, tightly", _check_corbin_pldp),
    Claim("corbin", "Algorithm 2, line 14", "CorBinQ as printed is unbiased (C4)", _check_corbin_line14),
    Claim("corbin", "Theorem 2", "CorBin-FL improves the MSE by at least a factor of two over LDP-FL",
          _check_corbin_theorem_2),
    Claim("corbin", "Theorem 3", "AugCorBin-FL is (ε_u, δ)-UCDP with ε_u of (5) in the experiments' setting (n = 50)",
          _check_corbin_theorem_3),
    Claim("layered", "Proposition 2", "the shifted quantizer's step is at least 2σ√(ln 4) (Gaussian), σ√2 ln 2 (Laplace)",
          _check_minimal_steps),
    Claim("layered", "Fig. 2", "the gap between the shifted and the direct layered quantizer is below 1 bit",
          _check_entropy_gap),
    Claim("layered", "§4.2, Table 1", "Irwin–Hall noise gives no Rényi DP", _check_irwin_hall_rdp),
    Claim("layered", "Fig. 4", "for large n the aggregate Gaussian mechanism costs fewer bits than the individual one",
          _check_aggregate_vs_individual),
]


def evaluate(paper: str | None = None, progress=None) -> list[dict]:
    """Run the checks (of one paper, or all) and return one record per claim."""
    chosen = [c for c in CLAIMS if paper is None or c.paper == paper]
    records = []
    for index, claim in enumerate(chosen):
        verdict, values = claim.check()
        records.append({"paper": claim.paper, "place": claim.place, "claim": claim.claim, "verdict": verdict,
                        "ours": values})
        if progress is not None:
            progress(index + 1, len(chosen))
    return records


def to_markdown(records: list[dict]) -> str:
    lines = ["# Claims", "", "Each paper's numerical claims, recomputed by `rdpcalc claims` (regenerated by `make figures`).",
             "", "| paper | where | claim | verdict | ours |", "|---|---|---|---|---|"]
    for r in records:
        cells = [r["paper"], r["place"], r["claim"], f"**{r['verdict']}**", r["ours"]]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
