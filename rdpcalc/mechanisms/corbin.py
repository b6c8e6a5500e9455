"""LDP-FL, CorBin-FL and AugCorBin-FL: Salehi, Mia, Pradhan, Amini & Shirani (2024), "CorBin-FL: A
Differentially Private Federated Learning Mechanism using Common Randomness", arXiv:2409.13133,
Algorithms 1–3.

Each client sends one bit per parameter: c ± rα, α = α(ε_p) = (e^{ε_p}+1)/(e^{ε_p}−1). LDPQ
(Algorithm 1) sends c + rα with probability q = ½ + (w−c)/(2rα). CorBinQ (Algorithm 2)
quantizes a *pair* of clients with d shared random bits Z so that their errors cancel; each
client's marginal is still LDPQ's, which is what the PLDP guarantee (3) is about. A server that
sees both outputs of a pair sees their joint law, which changes support with one input.

Inputs are offsets x = w − c ∈ [−r, r] (the privacy does not depend on c or r).
The paper's results are Proposition 1 and Theorems 1–4 (§III–IV, proofs in Apps. A–E). It has no
Rényi-DP analysis: the Rényi curves and exact MSEs here are derived.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from ..errors import ParameterError
from ..exactnum import fmt, to_mpf
from .base import Bound, Exact, Mechanism, Param, SolveRange, mechanism

VIEWS = ("marginal", "joint")
LINE14 = ("fixed", "printed")
#: largest d for which the joint view enumerates every breakpoint of its piecewise-affine pmf
JOINT_MAX_D = 6


def alpha_of_eps(eps) -> mpmath.mpf:
    """α(ε_p) = (e^{ε_p} + 1)/(e^{ε_p} − 1) = coth(ε_p/2) (Algorithm 1, line 1)."""
    return mpmath.coth(to_mpf(eps) / 2)


def eps_of_alpha(alpha) -> mpmath.mpf:
    """ε_p = ln((α+1)/(α−1)), the inverse of :func:`alpha_of_eps` [derived]."""
    alpha = to_mpf(alpha)
    return mpmath.log((alpha + 1) / (alpha - 1))


@mechanism
class CorBin(Mechanism):
    """One uplink of CorBin-FL (``view=marginal``: LDPQ's law, what an eavesdropper on one
    client sees) or one pair as the server sees it (``view=joint``: the joint law of
    (Q1, Q2) of CorBinQ with the partner's input ``partner`` fixed).

    ``eps_p`` > 0 (or ``alpha_p`` > 1), center ``c``, radius ``r`` > 0, ``d`` ≥ 0 shared bits
    ("inf" for the ideal coupling), and ``line14``: ``fixed`` (T2 ≺ Z, as the prose says) or
    ``printed`` (T1 ≺ Z, as Algorithm 2 prints line 14 (Salehi et al. 2024, §III-B); it breaks
    unbiasedness: ε_p = 1, d = 5, c = 0, r = ½, (w, w′) = (0.4, −0.2) give P(Q₂ = +) ≈ 0.3178, not
    q₂ ≈ 0.4076)."""

    name = "corbin"
    title = "CorBin-FL (LDPQ / CorBinQ)"
    paper = ("Salehi, Mia, Pradhan, Amini & Shirani (2024), \"CorBin-FL: A Differentially Private Federated Learning "
             "Mechanism using Common Randomness\", arXiv:2409.13133")
    #: typical parameters, for the examples in the command-line help
    EXAMPLE = {"--eps-p": "1"}
    PARAMS = (
        Param("eps_p", "number", "PLDP budget ε_p > 0 (or give alpha_p)", low=0, low_open=True, optional=True,
              solve=SolveRange(1e-4, 50.0, log=True)),
        Param("alpha_p", "number", "α(ε_p) > 1 instead of eps_p", low=1, low_open=True, optional=True),
        Param("c", "number", "center c of the input range [c−r, c+r]", default=Fraction(0), option="--center"),
        Param("r", "number", "radius r > 0 (the half-width); inputs are offsets x = w − c in [−r, r]",
              default=Fraction(1), low=0, low_open=True, option="--c", aliases=("--r",)),
        Param("d", "integer-or-inf", "shared random bits per parameter, 0 … 60, or inf (ideal coupling)", default=5,
              low=0, high=60, option="--shared-bits", aliases=("--d",)),
        Param("view", "choice", "marginal (one uplink; default) or joint (a pair, as the server sees it)",
              default="marginal", choices=VIEWS),
        Param("partner", "number", "joint view: the partner's input offset in [−r, r]", default=Fraction(0)),
        Param("line14", "choice", "Algorithm 2 line 14: fixed (T2 ≺ Z; default) or printed (T1 ≺ Z)",
              default="fixed", choices=LINE14),
    )
    BOUND_PARAMS = (
        Param("n", "integer", "number of clients n (even, ≥ 2) for the MSE and Theorems 2–4", default=50, low=2,
              deprecated=("--n-clients",)),
        Param("gamma", "number", "AugCorBin-FL: fraction γ ∈ [0, 1] of LDP-FL clients", default=Fraction(1, 5), low=0,
              high=1),
        Param("dim", "integer", "Theorem 3: number of model parameters m ≥ 1", default=10**6, low=1, aliases=("--m",)),
        Param("dp_delta", "number", "Theorems 3–4: δ in (0, 1)", default=Fraction(1, 10**5), low=0, high=1,
              low_open=True, high_open=True),
        Param("p_drop", "number", "Theorem 4: dropout probability p in (0, 1)", default=Fraction(1, 2), low=0, high=1,
              low_open=True, high_open=True),
        Param("delta_gap", "number", "Theorem 4: δ − δ₁ in (0, δ]", default=Fraction(1, 10**5), low=0, low_open=True),
    )
    FL_OBSERVER = "local"
    SIZE_PARAMETER = "d"

    def check(self) -> None:
        """Exactly one of ε_p and α_p; the partner's input within [−r, r]."""
        if (self.eps_p is None) == (self.alpha_p is None):
            raise ParameterError("eps_p", "give exactly one of `eps_p` (> 0) and `alpha_p` (> 1)")
        if abs(self.partner) > self.r:
            raise ParameterError("partner", f"must lie in [−r, r] = [−{fmt(self.r)}, {fmt(self.r)}]")

    # ------------------------------------------------------------------ basics
    @property
    def alpha(self) -> mpmath.mpf:
        """α(ε_p) at the current precision."""
        return alpha_of_eps(to_mpf(self.eps_p)) if self.eps_p is not None else to_mpf(self.alpha_p)

    @property
    def excess(self) -> mpmath.mpf:
        """α − 1 = 2/(e^{ε_p} − 1), without the cancellation of coth(ε_p/2) − 1 (e^{−300} at
        ε_p = 300, below any working precision's reach from α ≈ 1)."""
        if self.eps_p is not None:
            return 2 / mpmath.expm1(to_mpf(self.eps_p))
        return to_mpf(self.alpha_p - 1)

    @property
    def epsilon(self) -> mpmath.mpf:
        return to_mpf(self.eps_p) if self.eps_p is not None else eps_of_alpha(self.alpha)

    @property
    def amplitude(self) -> mpmath.mpf:
        """A = rα: outputs are c ± A."""
        return to_mpf(self.r) * self.alpha

    @property
    def bound(self) -> Fraction:
        return self.r

    def tail_parameter(self, limit: float) -> tuple[str, str]:
        """eps_p: the smallest probability is e^{−ε_p}/(1 + e^{−ε_p}) (alpha_p > 1 given to
        300 digits keeps ε_p below 700)."""
        return "eps_p", f"must be ≤ {limit:.3g} for this engine (the smallest probability is about e^(−ε_p))"

    @property
    def support_size(self) -> int:
        return 2 if self.view == "marginal" else 4

    def up_probability(self, x) -> mpmath.mpf:
        """q = ½ + x/(2rα), the probability of c + rα (Algorithm 1, line 2): for x < 0 in the
        form (r(α−1) + (r + x))/(2rα), a sum of non-negative terms (r + x exactly), which keeps
        q = e^{−ε_p}/(1 + e^{−ε_p}) at x = −r where ½ + x/(2rα) cancels to 0."""
        return _half_plus(Fraction(x), self.r, self.excess, self.amplitude)

    def down_probability(self, x) -> mpmath.mpf:
        """1 − q = ½ − x/(2rα), the probability of c − rα, formed as :meth:`up_probability` at −x
        (no cancellation at x = r)."""
        return _half_plus(-Fraction(x), self.r, self.excess, self.amplitude)

    def output_values(self) -> list:
        """Marginal: c − A, c + A. Joint (index 2·s₁ + s₂, s = 0 for −, 1 for +): the pair's
        decoded sum minus 2c, which estimates x + partner."""
        A = self.amplitude
        if self.view == "marginal":
            return [to_mpf(self.c) - A, to_mpf(self.c) + A]
        return [-2 * A, mpmath.mpf(0), mpmath.mpf(0), 2 * A]

    def decoding_target(self, x: Fraction):
        if self.view == "marginal":
            return self.c + x
        return x + self.partner

    def breakpoints(self) -> tuple[Fraction, ...]:
        """Marginal: ±r (q is affine in x; quasi-convexity). Joint: ±r, −partner, and every
        x where ⌊2^d q₁⌋ changes (the joint pmf is affine in x between them)."""
        points = {-self.r, self.r}
        if self.view == "joint":
            if abs(self.partner) < self.r:
                points.add(-self.partner)
            if self.d is not None:
                if self.d > JOINT_MAX_D:
                    raise ParameterError("d", f"the joint view's worst case searches every breakpoint: use d ≤ "
                                              f"{JOINT_MAX_D} or inf (or `x`/`x_prime` for one pair)")
                points |= set(self._grid_points())
        return tuple(sorted(points))

    def _grid_points(self) -> list[Fraction]:
        """Inputs x ∈ (−r, r) with 2^d q₁(x) an integer k: x = rα(2k/2^d − 1). They are
        irrational for most ε_p; each is represented by a Fraction to 35 digits, which is
        harmless: the joint pmf is continuous in x and affine between these points."""
        N = 2**self.d
        out = []
        with mpmath.workdps(40):
            A = self.amplitude
            for k in range(N + 1):
                x = A * (mpmath.mpf(2 * k) / N - 1)
                if abs(x) < to_mpf(self.r):
                    out.append(Fraction(mpmath.nstr(x, 35)))
        return out

    # ------------------------------------------------------------------ pmfs
    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """Marginal: [1 − q, q]. Joint: the law of (Q₁, Q₂) by :meth:`pair_joint`."""
        x = self.check_input(x)
        if self.view == "marginal":
            return [self.down_probability(x), self.up_probability(x)]
        return self.pair_joint(x, self.partner)

    def pair_joint(self, x, y) -> list[mpmath.mpf]:
        """P(Q₁ = s₁, Q₂ = s₂) for inputs x, y (offsets), index 2·s₁ + s₂ (s = 1 for "+").

        Finite d: with N = 2^d, z uniform on {0 … N−1}, a = ⌊N q₁⌋, b = ⌊N(1−q₂)⌋,
        f₁ = N q₁ − a, f₂ = N(1−q₂) − b (Algorithm 2): Q₁ = + if z < a, − if z > a, + w.p. f₁
        at z = a; Q₂ = − if z < b, + if z > b (fixed line 14) or z > a (printed), − w.p. f₂
        otherwise. The private coins are independent, so P is a sum over the z-classes.
        Ideal (d = ∞): P₋₋ = max(0, 1−q₁−q₂), the Fréchet lower bound (the optimal coupling of the
        proof of Theorem 1, Salehi et al. 2024, App. B, eqs. (21)–(22)), with
        q₁ + q₂ − 1 = (x + y)/(2rα): [−s, q₂, q₁, 0] for s = (x+y)/(2rα) ≤ 0, else [0, 1−q₁, 1−q₂, s].

        Every probability and its complement (1 − q, 1 − f) is formed without cancellation
        (:meth:`down_probability`, :func:`_fractional_part`): at ε_p = 300 they are e^{−300}."""
        q1, q2 = self.up_probability(x), self.up_probability(y)
        not_q1, not_q2 = self.down_probability(x), self.down_probability(y)
        if self.d is None:
            total = Fraction(x) + Fraction(y)
            share = to_mpf(abs(total)) / (2 * self.amplitude)
            return [share, q2, q1, mpmath.mpf(0)] if total <= 0 else [mpmath.mpf(0), not_q1, not_q2, share]
        N = 2**self.d
        a, f1, not_f1 = _fractional_part(q1, not_q1, N)
        b, f2, not_f2 = _fractional_part(not_q2, q2, N)
        one, zero = mpmath.mpf(1), mpmath.mpf(0)
        cells = [mpmath.mpf(0)] * 4
        for lo, hi in _segments(N, {a, a + 1, b, b + 1}):
            z = lo  # every z in [lo, hi) falls in the same class
            count = mpmath.mpf(hi - lo) / N
            up1, not_up1 = (one, zero) if z < a else (zero, one) if z > a else (f1, not_f1)
            if z < b:
                down2, not_down2 = one, zero
            elif (z > b) if self.line14 == "fixed" else (z > a):
                down2, not_down2 = zero, one
            else:
                down2, not_down2 = f2, not_f2
            cells[0] += count * not_up1 * down2
            cells[1] += count * not_up1 * not_down2
            cells[2] += count * up1 * down2
            cells[3] += count * up1 * not_down2
        return cells

    # ------------------------------------------------------------------ samplers
    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Marginal view: LDPQ (Algorithm 1), + with probability q = ½ + x/(2rα). Joint view: the
        pair (client at x, partner at ``partner``) through CorBinQ (:meth:`sample_pairs`), index
        2·s₁ + s₂."""
        if self.view == "joint":
            first, second = self.sample_pairs(x, np.full(x.shape, float(self.partner)), rng)
            return 2 * first + second
        amplitude = float(self.r) * float(self.alpha)
        return (rng.random(x.shape) < 0.5 + x / (2 * amplitude)).astype(np.int64)

    def sample_pairs(self, x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """CorBinQ (Algorithm 2, line 14 as ``line14``) on pairs of inputs (x, y), offsets in
        [−r, r] (not checked), with fresh shared bits z per pair: returns (s₁, s₂), 1 for c + rα.
        With N = 2^d, z uniform on {0 … N−1}, a = ⌊N q₁⌋ and b = ⌊N(1 − q₂)⌋ (the cells of
        :meth:`pair_joint`): s₁ = 1 if z < a, 0 if z > a, 1 with probability N q₁ − a at z = a;
        s₂ = 0 if z < b, 1 if z > b (fixed) or z > a (printed), else 0 with probability
        N(1 − q₂) − b. d = ∞ uses one shared uniform v: s₁ = [v < q₁], s₂ = [v ≥ 1 − q₂]."""
        amplitude = float(self.r) * float(self.alpha)
        q1, q2 = 0.5 + x / (2 * amplitude), 0.5 + y / (2 * amplitude)
        if self.d is None:
            v = rng.random(x.shape)
            return (v < q1).astype(np.int64), (v >= 1 - q2).astype(np.int64)
        N = 2**self.d
        z = rng.integers(0, N, size=x.shape)
        a, b = np.floor(N * q1), np.floor(N * (1 - q2))
        first = np.where(z < a, True, np.where(z > a, False, rng.random(x.shape) < N * q1 - a))
        second_upper = z > b if self.line14 == "fixed" else z > a
        down2 = np.where(z < b, True, np.where(second_upper, False, rng.random(x.shape) < N * (1 - q2) - b))
        return first.astype(np.int64), (~down2).astype(np.int64)

    # ------------------------------------------------------------------ MSE [derived]
    def pair_mse(self, x, y) -> mpmath.mpf:
        """E(Q₁ + Q₂ − w − w')² = 4A²(q₁ + q₂ − 1 + 2P₋₋) − u², u = x + y [derived]."""
        joint = self.pair_joint(x, y)
        A, u = self.amplitude, to_mpf(Fraction(x)) + to_mpf(Fraction(y))
        return 4 * A**2 * (self.up_probability(x) + self.up_probability(y) - 1 + 2 * joint[0]) - u**2

    def worst_pair_mse_ideal(self) -> mpmath.mpf:
        """max over inputs of the ideal pair MSE 2A|u| − u²: r²α² if α ≤ 2, else 4r²(α−1)."""
        r, alpha = to_mpf(self.r), self.alpha
        return r**2 * alpha**2 if alpha <= 2 else 4 * r**2 * (alpha - 1)

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        options = self.bound_options(**options)
        n, gamma, m = options["n"], options["gamma"], options["dim"]
        delta, p, gap = options["dp_delta"], options["p_drop"], options["delta_gap"]
        if n % 2:
            raise ParameterError("n", f"must be an even integer ≥ 2 (clients are paired), got {n}")
        if gap > delta:
            raise ParameterError("delta_gap", f"must lie in (0, `dp_delta`] = (0, {fmt(delta)}], got {fmt(gap)}")
        inf = math.inf
        alpha, eps, r = self.alpha, self.epsilon, to_mpf(self.r)
        out = [Bound("ε_p = ln((α+1)/(α−1)): PLDP of one uplink", inf, eps, "paper eq. (3), Algorithm 1", "worst", "=")
               if self.view == "marginal" else
               Bound("ε_p: PLDP covers one uplink only", inf, eps, "paper eq. (3)", "worst",
                     note="the server sees the pair: support changes with one input, so D = ∞")]
        if self.view == "marginal":
            for a in alphas:
                out.append(Bound("randomized-response Rényi curve", a, rr_renyi(eps, a), "derived",
                                 "worst", "="))
        A2 = (r * alpha) ** 2
        worst_ldp = A2 / n
        worst_pair = self.worst_pair_mse_ideal()
        worst_corbin = worst_pair / (2 * n)
        worst_aug = to_mpf(gamma) * A2 / n + (1 - to_mpf(gamma)) * worst_pair / (2 * n)
        gap_tight = 2 * A2 / 2**self.d if self.d is not None else mpmath.mpf(0)
        paper_thm2 = r**2 * (alpha**2 + 2 * alpha - 1) / (2 * n)
        out += [
            Bound("server MSE, LDP-FL, worst case r²α²/n", None, worst_ldp, "derived", None, ""),
            Bound("server MSE, CorBin-FL (d = ∞), worst case", None, worst_corbin, "derived", None, ""),
            Bound(f"server MSE, AugCorBin-FL (γ = {float(gamma):g}, d = ∞), worst case", None, worst_aug, "derived",
                  None, ""),
            Bound("server MSE, LDP-FL, uniform inputs", None, (A2 - r**2 / 3) / n, "derived", None, ""),
            Bound("server MSE, CorBin-FL (d = ∞), uniform inputs", None, (4 * r * alpha * r - 2 * r**2) / 3 / (2 * n),
                  "derived", None, ""),
            Bound("Theorem 2: r²(α²+2α−1)/(2n), as printed", None, paper_thm2, "paper Theorem 2",
                  Exact(worst_corbin, "worst server MSE of CorBin-FL, d = ∞")),
            Bound("Theorem 2, proof's covariance factor corrected: r²(2α−1)/n", None, r**2 * (2 * alpha - 1) / n,
                  "derived (App. C's 1/(2n²) read as 1/n²)", Exact(worst_corbin, "worst server MSE of CorBin-FL, d = ∞")),
            Bound("Theorem 3 MSE, as printed", None, to_mpf(gamma) * A2 / n + (1 - to_mpf(gamma)) * paper_thm2,
                  "paper Theorem 3", Exact(worst_aug, "worst server MSE of AugCorBin-FL, d = ∞")),
        ]
        if self.d is not None:
            out += [
                Bound("Theorem 1 gap r²α²/2^(d−6), as printed (per pair)", None, A2 / mpmath.mpf(2) ** (self.d - 6),
                      "paper eq. (4)", None, "", note="the tight constant is r²α²/2^(d−1) (derived)"),
                Bound("worst server MSE of CorBin-FL at this d ≤ ideal + r²α²/(2^(d−1)·2n)", None,
                      worst_corbin + gap_tight / (2 * n), "derived", None, ""),
            ]
        out += self._theorem_3_and_4(n, gamma, m, delta, p, gap)
        return out

    def _theorem_3_and_4(self, n, gamma, m, delta, p, gap) -> list[Bound]:
        """ε_u of eq. (5) with its n-condition, and Theorem 4's γ, γ′, θ, all as printed."""
        alpha, r = self.alpha, to_mpf(self.r)
        g, dl = to_mpf(gamma), to_mpf(delta)
        count = n * g - 1
        e_p = 1 + 1 / alpha**2
        b_p = e_p / 3 + 1 / alpha
        lhs = count * (mpmath.mpf(1) / 4 - 1 / (4 * alpha**2))
        rhs = max(23 * mpmath.log(m / dl), 2 * r * alpha)
        holds = lhs >= rhs
        out = []
        if count > 0:
            log125, log10 = mpmath.log(mpmath.mpf(1.25) / dl), mpmath.log(10 / dl)
            eps_u = r * alpha * (
                mpmath.sqrt(8 * m * log125 / (count * e_p))
                + 8 * (log125 + mpmath.log(20 * m / dl) * log10) / (3 * count)
                + 4 * b_p * mpmath.sqrt(2 * m) * (mpmath.mpf(1.75) + mpmath.mpf(3.75) / alpha**2) * mpmath.sqrt(log10)
                / (count * (1 - dl / 10) * e_p))
            out.append(Bound(f"Theorem 3: ε_u, eq. (5) as printed (m={m}, δ={float(delta):g})", None, eps_u,
                             "paper eq. (5)", None, "",
                             note=("condition holds" if holds else
                                   f"its condition fails ({mpmath.nstr(lhs, 4)} < {mpmath.nstr(rhs, 4)}): vacuous here")))
        pq, gp = to_mpf(p) * (1 - to_mpf(p)), to_mpf(gap)
        spread = mpmath.sqrt(pq * (1 - 2 * pq) / (4 * gp * n))
        out += [
            Bound("Theorem 4: γ, as printed", None, pq - spread, "paper Theorem 4", None, ""),
            Bound("Theorem 4: γ′, as printed", None, pq + spread, "paper Theorem 4", None, ""),
            Bound("Theorem 4: θ, as printed", None, pq - mpmath.sqrt(pq / (gp * n)), "paper Theorem 4", None, "",
                  note="App. E takes P(F_i = 1) = p for 'client i stays'; with 1 − p, θ = (1−p) − √(p(1−p)/((δ−δ₁)n))"),
        ]
        return out


def rr_renyi(eps, alpha) -> mpmath.mpf:
    """Rényi curve of binary randomized response with parameter ε [derived; the paper has no Rényi
    analysis]: LDPQ's worst pair is x = ±r, where it is randomized response with parameter ε_p:
    1/(λ−1) ln[(e^{λε} + e^{(1−λ)ε})/(1 + e^ε)]; KL = ε tanh(ε/2); D_∞ = ε."""
    eps = to_mpf(eps)
    if alpha == math.inf:
        return eps
    if alpha == 1:
        return eps * mpmath.tanh(eps / 2)
    lam = mpmath.mpf(alpha)
    return mpmath.log((mpmath.exp(lam * eps) + mpmath.exp((1 - lam) * eps)) / (1 + mpmath.exp(eps))) / (lam - 1)


def _half_plus(x: Fraction, r: Fraction, excess, amplitude) -> mpmath.mpf:
    """½ + x/(2A) with A = rα and α − 1 = ``excess``: as written for x ≥ 0 (exactly ½ at 0), as
    (r(α−1) + (r + x))/(2A) for x < 0, where the written form cancels."""
    if x >= 0:
        return mpmath.mpf(1) / 2 + to_mpf(x) / (2 * amplitude)
    return (to_mpf(r) * excess + to_mpf(r + x)) / (2 * amplitude)


def _fractional_part(value, complement, N: int) -> tuple[int, mpmath.mpf, mpmath.mpf]:
    """(a, f, 1 − f) for y = N·value, a = ⌊y⌋, f = y − a, from ``value`` and ``complement`` =
    1 − value, each accurate relative to itself: from the smaller side, so a value within
    e^{−300} of 1 keeps its distance to 1 (with y′ = N − y: a = N − ⌈y′⌉, f = ⌈y′⌉ − y′)."""
    if value <= complement:
        y = N * value
        a = int(mpmath.floor(y))
        return a, y - a, (a + 1) - y
    y_rest = N * complement
    ceiling = int(mpmath.ceil(y_rest))
    return N - ceiling, ceiling - y_rest, y_rest - (ceiling - 1)


def _segments(N: int, cuts: set[int]):
    """Split {0 … N−1} at the given points into half-open runs [lo, hi)."""
    edges = sorted({0, N} | {c for c in cuts if 0 < c < N})
    return list(zip(edges, edges[1:]))
