"""QMGeo: stochastic quantization with a mixed truncated geometric distribution. Wang & Gursoy (2023),
"QMGeo: Differentially Private Federated Learning via Stochastic Quantization with Mixed Truncated
Geometric Distribution", arXiv:2312.05761, eqs. (5), (9)–(11) (§III).

Levels Bin(j) = −W + 2jW/(R−1), j = 0 … R−1, spacing Δ = 2W/(R−1). An input w ∈ [−W, W] sits
in the interval r (Bin(r) ≤ w ≤ Bin(r+1)) at fraction λ = (w − Bin(r))/Δ; the output is a
mixture of a geometric walk down from Bin(r) and one up from Bin(r+1), truncated to the levels.

The paper is inconsistent in three places, each exposed as an option:

* ``orientation``: ``S`` (default) puts weight λ on the upward branch, so that p = 1 is
  ordinary stochastic rounding (16), as the paper says it should be (§IV-B1); ``L`` is eq. (9)
  literally, which at p = 1 rounds the wrong way.
* ``normalisers``: ``text`` (default) normalises the truncated geometrics on the supports the
  text states; ``printed`` uses eqs. (10)–(11), which are off by one: they do not sum to one
  and divide by zero in the edge intervals (only ``rdpcalc pmf`` accepts them).
* ``tie``: an input exactly on a level Bin(r), 0 < r < R−1, is in interval r with λ = 0
  (``lower``, default) or in interval r−1 with λ = 1 (``upper``); the pmf jumps there.

The paper's privacy results are inline formulas, with no numbered theorems: ε-DP eq. (21)
(§IV-B1), RDP eq. (25) (§IV-B2) and the d-coordinate versions (26)–(27) (§IV-C). Each is given
here as printed; (21) and (25) also corrected.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import floor

import mpmath
import numpy as np

from ..errors import ParameterError
from ..exactnum import fmt, to_mpf
from .base import MAX_LEVELS, Bound, Mechanism, Param, SolveRange, mechanism

ORIENTATIONS = ("S", "L")
NORMALISERS = ("text", "printed")
TIES = ("lower", "upper")
#: the paper's legend values (Figs. 5–6): ε per round from (27) at α = 2, d = 3562, κ = 0.005333
PAPER_LEGEND = {(8, Fraction("0.9")): "2.626", (16, Fraction("0.9")): "4.492", (8, Fraction("0.5")): "0.784"}


@mechanism
class QMGeo(Mechanism):
    """QMGeo with R ≥ 2 levels, success probability p ∈ (0, 1] and clipping threshold
    w_max = W > 0, plus the three reading options of the module docstring."""

    name = "qmgeo"
    title = "QMGeo (mixed truncated geometric)"
    paper = ("Wang & Gursoy (2023), \"QMGeo: Differentially Private Federated Learning via Stochastic Quantization with "
             "Mixed Truncated Geometric Distribution\", arXiv:2312.05761")
    #: typical parameters, for the examples in the command-line help
    EXAMPLE = {"--levels": "8", "--p": "0.5", "--c": "1"}
    PARAMS = (
        Param("R", "integer", f"number of quantization levels R, 2 … {MAX_LEVELS}", low=2, high=MAX_LEVELS,
              option="--levels", aliases=("--R",)),
        Param("p", "number", "success probability of the geometrics, 0 < p ≤ 1", low=0, high=1, low_open=True,
              solve=SolveRange(1e-6, 1.0)),
        Param("w_max", "number", "clipping threshold W > 0; inputs lie in [-W, W]", low=0, low_open=True, option="--c",
              aliases=("--w-max",)),
        Param("orientation", "choice", "S (weight λ on the upward branch; default) or L (eq. 9 literally)",
              default="S", choices=ORIENTATIONS),
        Param("normalisers", "choice", "text (default, sums to 1) or printed (eqs. 10–11, off by one)",
              default="text", choices=NORMALISERS),
        Param("tie", "choice", "an input on a level is in the interval above it (lower; default) or below (upper)",
              default="lower", choices=TIES),
    )
    FL_OBSERVER = "local"
    MARGIN_STUDY = (Fraction(1, 10), Fraction(1, 100), Fraction(1, 10**4), Fraction(1, 10**8))
    BOUND_PARAMS = (
        Param("dim", "integer", "model dimension d of eqs. (26)–(27), ≥ 1", default=3562, low=1, aliases=("--d",)),
        Param("kappa", "number", "per-client sampling rate κ of eqs. (26)–(27), in (0, 1]", default=Fraction("0.005333"),
              low=0, high=1, low_open=True),
    )

    # ------------------------------------------------------------------ geometry
    @property
    def bound(self) -> Fraction:
        return self.w_max

    @property
    def support_size(self) -> int:
        return self.R

    @property
    def spacing(self) -> Fraction:
        """Δ = 2W/(R−1)."""
        return 2 * self.w_max / (self.R - 1)

    def level(self, j: int) -> Fraction:
        """Bin(j) = −W + 2jW/(R−1), eq. (5)."""
        return -self.w_max + j * self.spacing

    def output_values(self) -> list[Fraction]:
        return [self.level(j) for j in range(self.R)]

    def interval(self, w: Fraction) -> tuple[int, Fraction]:
        """(r, λ): the interval Bin(r) ≤ w ≤ Bin(r+1) and λ = (w − Bin(r))/Δ, by the tie rule."""
        t = (w + self.w_max) / self.spacing
        r = min(floor(t), self.R - 2)
        if self.tie == "upper" and t == r and r > 0:
            r -= 1
        return r, t - r

    #: the pmf is not affine in x between the breakpoints (:mod:`rdpcalc.worstcase.secagg`)
    OTHERS_FAMILY = "breakpoints"

    def breakpoints(self) -> tuple[Fraction, ...]:
        """The levels Bin(0) … Bin(R−1). Inside each interval the pmf is affine in w, and it
        jumps at every level (at w = Bin(r), λ = 0 and the pmf is one-sided: under S no mass lies
        above Bin(r)), so the supremum over inputs is a maximum over the intervals' end
        distributions, some of them one-sided limits that no input attains. The levels themselves
        already give +∞ (under S, Q(±W) is the end level ±W almost surely; under L, Q(−W) never
        outputs Bin(0)); :meth:`inputs_with_margin` shows how the
        supremum over inputs a distance ηΔ away from the levels grows as η → 0."""
        return tuple(self.level(j) for j in range(self.R))

    def inputs_with_margin(self, eta: Fraction) -> tuple[Fraction, ...]:
        """{Bin(r) + ηΔ, Bin(r+1) − ηΔ : r}: the pmf is affine on each [Bin(r)+ηΔ, Bin(r+1)−ηΔ],
        so by quasi-convexity the worst pair of inputs kept ηΔ away from every level is among
        these points (0 < η < ½)."""
        if not 0 < eta < Fraction(1, 2):
            raise ParameterError("margin", f"must lie in (0, 1/2), got {fmt(eta)}")
        step = eta * self.spacing
        points = []
        for r in range(self.R - 1):
            points += [self.level(r) + step, self.level(r + 1) - step]
        return tuple(points)

    @property
    def defines_distribution(self) -> bool:
        """False with the printed normalisers (10)–(11), whose masses do not sum to one."""
        return self.normalisers == "text"

    # ------------------------------------------------------------------ pmf
    def _geometric(self, length: int, normaliser_length: int) -> list:
        """p q^i / (1 − q^normaliser_length), i = 0 … length−1 (0^0 = 1 at p = 1); the normaliser
        as −expm1(L log1p(−p)), which 1 − q^L cancels to 0 at p = 1e−300."""
        p, q = to_mpf(self.p), to_mpf(1 - self.p)
        normaliser = -mpmath.expm1(normaliser_length * mpmath.log1p(-p)) if self.p < 1 else mpmath.mpf(normaliser_length > 0)
        if normaliser == 0:
            raise ParameterError("normalisers", "printed: eq. (10)/(11) divides by zero in this edge interval "
                                                "(use `normalisers` text)")
        return [p * q**i / normaliser for i in range(length)]

    def down_component(self, r: int) -> list:
        """D_r over j = 0 … R−1: p q^{r−j}/(1 − q^{r+1}) for j ≤ r, else 0 (eq. (9)'s down branch on
        the support {1 … r+1} the text gives X_Geo1, normalised as in eq. (6)); with
        ``printed`` normalisers the denominator is 1 − q^r (eq. 10)."""
        down = self._geometric(r + 1, r if self.normalisers == "printed" else r + 1)
        return [down[r - j] if j <= r else mpmath.mpf(0) for j in range(self.R)]

    def up_component(self, r: int) -> list:
        """U_r over j = 0 … R−1: p q^{j−r−1}/(1 − q^{R−r−1}) for j ≥ r+1, else 0; with
        ``printed`` normalisers the denominator is 1 − q^{R−r−2} (eq. 11)."""
        R = self.R
        up = self._geometric(R - r - 1, R - r - 2 if self.normalisers == "printed" else R - r - 1)
        return [up[j - r - 1] if j > r else mpmath.mpf(0) for j in range(R)]

    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """S: P_w = (1−λ) D_r + λ U_r;  L: P_w = λ D_r + (1−λ) U_r (eq. 9 with the text's supports)."""
        w = self.check_input(x)
        r, lam = self.interval(w)
        D, U = self.down_component(r), self.up_component(r)
        up_weight = to_mpf(lam) if self.orientation == "S" else to_mpf(1 - lam)
        down_weight = 1 - up_weight
        return [down_weight * d + up_weight * u for d, u in zip(D, U)]

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Eq. (9) of Wang & Gursoy (2023) with the text's supports: a λ-coin picks the upward
        branch (orientation S) or the downward one (L, literally), then a geometric step
        truncated to the levels (:func:`_truncated_geometric`): r + 1 … R−1 up, r … 0 down. Only
        the default reading (text normalisers, lower tie) is sampled; :class:`ParameterError`
        otherwise."""
        if self.normalisers != "text" or self.tie != "lower":
            raise ParameterError("normalisers", "the sampler runs the text's supports with the default tie rule")
        R, p = self.R, float(self.p)
        q = 1 - p
        t = (x + float(self.w_max)) / float(self.spacing)
        r = np.minimum(np.floor(t), R - 2)
        lam = t - r
        up_probability = lam if self.orientation == "S" else 1 - lam
        up = rng.random(x.shape) < up_probability
        upward = r + _truncated_geometric(q, R - r - 1, rng)
        downward = r - (_truncated_geometric(q, r + 1, rng) - 1)
        return np.where(up, upward, downward).astype(np.int64)

    # ------------------------------------------------------------------ the paper's formulas
    def eps_dp_paper(self) -> mpmath.mpf:
        """Eq. (21) as printed: ε = −ln(p (1−p)^{R−2})."""
        p = to_mpf(self.p)
        return -(mpmath.log(p) + (self.R - 2) * mpmath.log(1 - p)) if self.p < 1 else mpmath.inf

    def eps_midpoint(self) -> mpmath.mpf:
        """ln((1 − q^{R−1}) / (p q^{R−2})): the exact D_∞ of the midpoint pair
        Bin(0)+Δ/2 vs Bin(R−1)−Δ/2 that (21) describes, normaliser kept [derived]."""
        p, q = to_mpf(self.p), to_mpf(1 - self.p)
        return mpmath.log((1 - q ** (self.R - 1)) / (p * q ** (self.R - 2))) if self.p < 1 else mpmath.inf

    def midpoint_pair(self) -> tuple[Fraction, Fraction]:
        half = self.spacing / 2
        return self.level(0) + half, self.level(self.R - 1) - half

    def rdp_paper(self, alpha: float) -> mpmath.mpf:
        """Eq. (25) as printed (negative for every α > 1, e.g. −25.917 at R = 8, p = 0.9, α = 2):
        1/(1−α) log{ p q^{−2α+(1−α)R+1}/(1−q^{R−1}) · α(q^{(2α−1)R} − 1)/(q^{2α−1} − 1) }."""
        a, p, q, R = mpmath.mpf(alpha), to_mpf(self.p), to_mpf(1 - self.p), self.R
        first = p * q ** (-2 * a + (1 - a) * R + 1) / (1 - q ** (R - 1))
        second = a * (q ** ((2 * a - 1) * R) - 1) / (q ** (2 * a - 1) - 1)
        return mpmath.log(first * second) / (1 - a)

    def rdp_printed_sum(self, alpha: float) -> mpmath.mpf:
        """Eq. (23) as printed: 1/(α−1) log Σ_{i=1}^{R} (p q^{i−1}/(1−q^{R−1}))^α / (q^{R+1−i} p/(1−q^{R−1}))^{α−1}."""
        a, p, q, R = mpmath.mpf(alpha), to_mpf(self.p), to_mpf(1 - self.p), self.R
        norm = 1 - q ** (R - 1)
        total = mpmath.fsum((p * q ** (i - 1) / norm) ** a / (q ** (R + 1 - i) * p / norm) ** (a - 1)
                            for i in range(1, R + 1))
        return mpmath.log(total) / (a - 1)

    def mirror_model_divergence(self, alpha: float) -> mpmath.mpf:
        """The paper's worst-case model (22), corrected [derived]: eq. (23) gives the mirror image
        q^{R+1−i} for q^{R−i} and the normaliser 1 − q^{R−1} for 1 − q^R, and (24)–(25) do not
        follow from (23) (a spurious factor α, an extra q^{1−2α}, the sign flipped). D_α between the
        geometric truncated to all R levels, P(j) = p q^j/(1−q^R), and its mirror image:
        1/(α−1) ln[p q^{−(α−1)(R−1)} (1 − q^{(2α−1)R}) / ((1−q^R)(1−q^{2α−1}))];
        D_∞ = (R−1) ln(1/q); KL = (R−1−2j̄) ln(1/q), j̄ = q/p − R q^R/(1−q^R)."""
        if self.p == 1:
            return mpmath.inf
        p, q, R = to_mpf(self.p), to_mpf(1 - self.p), self.R
        if alpha == math.inf:
            return (R - 1) * mpmath.log(1 / q)
        if alpha == 1:
            mean_index = q / p - R * q**R / (1 - q**R)
            return (R - 1 - 2 * mean_index) * mpmath.log(1 / q)
        a = mpmath.mpf(alpha)
        inside = p * q ** (-(a - 1) * (R - 1)) * (1 - q ** ((2 * a - 1) * R)) / ((1 - q**R) * (1 - q ** (2 * a - 1)))
        return mpmath.log(inside) / (a - 1)

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        options = self.bound_options(**options)
        d, kappa = options["dim"], options["kappa"]
        inf = math.inf
        out = [
            Bound("ε_DP, eq. (21) as printed", inf, self.eps_dp_paper(), "paper eq. (21)",
                  note="assumes weight ½ at Bin(0) and Bin(R−1), where λ is 0 or 1"),
            Bound("ε_mid: D_∞ of the midpoint pair, (21) corrected", inf, self.eps_midpoint(), "derived",
                  self.midpoint_pair(), "="),
            Bound(f"dκ·ε_DP, eq. (26) as printed (d={d}, κ={float(kappa):g})", inf,
                  d * to_mpf(kappa) * self.eps_dp_paper(), "paper eq. (26)", None, ""),
        ]
        for alpha in alphas:
            out.append(Bound("mirror-TGeo model D_α, (22)–(25) corrected", alpha, self.mirror_model_divergence(alpha),
                             "derived", None, "", note="the paper's worst-case model; no input of (9) gives it"))
        for alpha in (a for a in alphas if 1 < a < inf and self.p < 1):
            printed = self.rdp_paper(alpha)
            legend = PAPER_LEGEND.get((self.R, self.p)) if alpha == 2 and d == 3562 and kappa == Fraction("0.005333") else None
            out += [
                Bound("ε(α), eq. (25) as printed", alpha, printed, "paper eq. (25)", None, "",
                      note="negative, so not a divergence" if printed < 0 else ""),
                Bound("|ε(α)|, eq. (25) in absolute value", alpha, abs(printed), "paper eq. (25)"),
                Bound(f"κ²d·|(25)|, eq. (27) (d={d}, κ={float(kappa):g})", alpha, to_mpf(kappa) ** 2 * d * abs(printed),
                      "paper eq. (27)", None, "", note=f"the paper's legend: {legend}" if legend else ""),
                Bound("eq. (23) as printed", alpha, self.rdp_printed_sum(alpha), "paper eq. (23)", None, ""),
            ]
        return out


def _truncated_geometric(q: float, length: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Steps k ∈ {1 … length} (elementwise) with P(k) = (1 − q) q^{k−1}/(1 − q^length), the
    geometric of eq. (6) truncated to the levels, by inverting its distribution function
    (1 − q^k)/(1 − q^length) at a uniform u: k = ⌈log(1 − u(1 − q^length))/log q⌉; all 1 at
    q = 0 (p = 1), which draws nothing."""
    if q == 0:
        return np.ones(length.shape)
    u = rng.random(length.shape)
    return np.ceil(np.log1p(-u * (1 - q**length)) / math.log(q))
