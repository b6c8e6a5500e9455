"""A certified bracket on the Rényi divergences of a mechanism with unbounded noise (discrete
Gaussian, Skellam), computed from its pmf on a window of outputs (:mod:`rdpcalc.mechanisms.rounded`).

Notation: one client's true pmf P_x and its restriction P̃_x to the window W = [−K − L, K + L]
(P̃_x ≤ P_x, missing at most ε, the certified tail mass); the others' sum R and its windowed
R̃ (each other's output in W; R − R̃ has mass at most 1 − (1 − ε)^{n−1} ≤ (n − 1)ε); F(P, Q) =
Σ P^α Q^{1−α}, jointly convex and homogeneous of degree one in (P, Q) for α > 1, so that
F(P₁ + P₂, Q₁ + Q₂) ≤ F(P₁, Q₁) + F(P₂, Q₂) and F(P * R, Q * R) ≤ mass(R)·F(P, Q) (data
processing for a sub-probability R). The engines compute D̂, the divergence of the windowed sums
after normalising them; the un-normalised F̃ is at most e^{(α−1)(D̂ + nλ)}, λ = −log(1 − ε),
since the masses are ≤ 1 under P and ≥ (1 − ε)^n under Q.

**Upper end.** For τ ∈ (0, 1) split P = P̃ + P^out and Q = (1 − τ)Q̃ + (τQ̃ + Q^out), where the
second part is ≥ τQ. Then

    F(P * R, Q * R) ≤ (1 − τ)^{1−α} [F̃_n + (n − 1)ε F̃₁] + τ^{1−α} T,

F̃₁ the windowed single-client value and T = Σ_{o ∉ W} P_x(o)^α P_x′(o)^{1−α} ≤ 2 Σ_{o > K + L}
N(o − K)^α N(o + K)^{1−α} (joint convexity over the rounding, and the tail sum of two shifted
symmetric unimodal noises is largest for the two extreme shifts). Minimising A(1 − τ)^{1−α} +
Bτ^{1−α} over τ gives A(1 + (B/A)^{1/α})^α, so

    D_α ≤ [log A + α log(1 + (B/A)^{1/α})] / (α − 1),  A = e^{(α−1)(D̂_n + nλ)} + (n − 1)ε e^{(α−1)(D̂₁ + λ)},  B = T.

For the worst case D̂_n is the windowed maximum over the family (every configuration's bound is
below the one of the maximum). KL is bounded by D_α at α = 1 + KL_ORDER_OFFSET (D_α does not
decrease with α).

**Lower end** (the configuration found). Data processing (the sum's outputs outside the window
merged into one) and P ≥ P̃, Q ≤ Q̃ + η pointwise, η = 1 − (1 − ε)^n the mass the windowed sum
misses: F ≥ Σ_s P̃(s)^α (Q̃(s) + η)^{1−α}; for KL, each s contributes at least the smallest
p log(p/(Q̃(s) + η)) over p ∈ [P̃(s), P̃(s) + η], and the merged outputs at least −η.

**D_∞** is +∞ for unbounded noise (the likelihood ratio of two shifted inputs grows without bound
in the tails); for a sum wrapped modulo 2^B it lies between max log(P̃/(Q̃ + η)) and
max log((P̃ + η)/Q̃) over the residues, the latter over every configuration of the family.

With a modulus every sum is wrapped before its divergence; the bounds above hold as they are
(wrapping is a Markov kernel applied to the sum).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import mpmath
import numpy as np

from ..logdomain import logsumexp
from ..mechanisms import Mechanism
from ..numerics import FastEngine, fast, levels
from . import secagg
from .certificate import UNIT_ROUNDOFF
from .secagg import Configuration

#: the fast engine's windowed sums of n clients: an entry p is within (|log p| + 1)·n·ENTRY_ROUNDINGS
#: unit roundoffs (2⁻⁵³) of its true value, relative (a log-domain convolution rounds each log by
#: ulp(|log p|) per client). Measured against mpmath at 40 digits: 0.56 at most (DDG and Skellam,
#: 4 and 10 clients, logs down to −700); kept with a factor of eighteen to spare (the test asks five)
ENTRY_ROUNDINGS = 10
#: and where the sum has more than levels.DIRECT_MAX_N clients (tilted FFTs), each entry is also within
#: n·FFT_ROUNDINGS/levels.TRUST unit roundoffs, relative: an FFT is accurate to about n unit roundoffs of the
#: tilted row's peak once its spectrum is raised to the n-th power, and it trusts the points ≥ TRUST × that
#: peak. Measured against the direct method: 0.66 at most (DDG and Skellam, 57–255 outputs, n = 130–300,
#: near the peaks, beyond the first allowance); kept with a factor of fifteen to spare (the test asks three)
FFT_ROUNDINGS = 10
#: KL's upper end is D_α at α = 1 + this
KL_ORDER_OFFSET = 1e-9
#: why D_∞ of an unbounded noise is infinite
INFINITE_REASON = "unbounded noise: the likelihood ratio of two shifted inputs' outputs grows without bound in the tails"


def has_tails(mechanism: Mechanism) -> bool:
    """Whether the mechanism's pmf is a window of an unbounded noise (then its divergences are brackets)."""
    return mechanism.UNBOUNDED


def brackets(mechanism: Mechanism, n: int, alphas: Sequence[float], values: Sequence[float],
             attained: Sequence[Configuration], worst: bool) -> list[tuple[float, float]]:
    """(lower, upper) for each order: ``values`` are the windowed divergences (normalised sums)
    and ``attained`` their configurations; ``worst``: the values are maxima over the family of
    :func:`rdpcalc.worstcase.search` (else single configurations)."""
    log_epsilon = mechanism.log_tail_mass_bound()
    sums = _Sums(mechanism, FastEngine(mechanism.modulus))
    out = []
    for alpha, value, configuration in zip(alphas, values, attained, strict=True):
        lp, lq = sums.rows(configuration)
        if alpha == math.inf:
            out.append(_infinite_order(mechanism, n, lp, lq, log_epsilon, worst, sums))
            continue
        lower = _lower(lp, lq, alpha, n, log_epsilon)
        order = alpha if alpha > 1 else 1 + KL_ORDER_OFFSET
        windowed = value if alpha > 1 else _windowed_at(mechanism, n, order, lp, lq, worst)
        single = (_single_worst(mechanism, order) if worst else _single(mechanism, configuration, order)) if n > 1 \
            else -math.inf
        out.append((lower, upper_end(mechanism, n, order, windowed, single)))
    return monotone_envelopes(alphas, out)


def monotone_envelopes(alphas: Sequence[float], ends: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Each (lower, upper) bracket tightened by the brackets of the other orders: D_α is
    non-decreasing in α (for one pair, hence for a maximum over a family), so a lower end at α′
    is a lower end at every α ≥ α′ and an upper end at α″ an upper end at every α ≤ α″. The
    lower ends become the running maximum in α, the upper ends the running minimum from above.
    A lower end above an upper end after that is an arithmetic error, raised."""
    order = sorted(range(len(alphas)), key=lambda index: alphas[index])
    lowers = list(itertools.accumulate((ends[i][0] for i in order), max))
    uppers = list(itertools.accumulate((ends[i][1] for i in reversed(order)), min))[::-1]
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(alphas)
    for rank, index in enumerate(order):
        lower, upper = lowers[rank], uppers[rank]
        if lower > upper:
            raise ArithmeticError(f"the bracket at α = {alphas[index]:g} is inverted: lower end {lower!r} above "
                                  f"the upper end {upper!r}")
        out[index] = (lower, upper)
    return out


def upper_end(mechanism: Mechanism, n: int, alpha: float, windowed: float, single: float) -> float:
    """The certified upper end at order ``alpha`` > 1 from the windowed value ``windowed`` of the
    sum of ``n`` clients and the windowed single-client value ``single`` of client 1's pair (or
    the largest over the family's pairs) (module docstring)."""
    log_epsilon = mechanism.log_tail_mass_bound()
    beta, lam = alpha - 1.0, -math.log1p(-math.exp(log_epsilon))
    log_a = beta * (windowed + n * lam)
    if n > 1:
        log_a = float(np.logaddexp(log_a, math.log(n - 1) + log_epsilon + beta * (single + lam)))
    reach, window = mechanism.reach, mechanism.noise_window()[1]
    with mpmath.workdps(30):
        log_b = float(mpmath.log(2) + mechanism.log_tail_sum(alpha, reach + window + 1, reach, -reach))
    if log_b == math.inf:
        return math.inf
    return (log_a + alpha * _softplus((log_b - log_a) / alpha)) / beta


def _softplus(x: float) -> float:
    """log(1 + eˣ) without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def _single_worst(mechanism: Mechanism, alpha: float) -> float:
    """The windowed single-client worst case at ``alpha`` (every ordered pair of breakpoints, no
    wrap-around: the bound uses one client's own output)."""
    points = list(mechanism.breakpoints())
    engine = FastEngine()
    pairs = mechanism.shift_pairs()
    clients = {i: engine.client(mechanism, points[i]) for i in sorted({i for pair in pairs for i in pair})}
    top = -math.inf
    for i, j in pairs:
        forward, backward = fast.renyi_divergences(clients[i], clients[j], np.array([alpha]), both=True)
        top = max(top, float(forward[0]), float(backward[0]))
    return top


def _single(mechanism: Mechanism, configuration: Configuration, alpha: float) -> float:
    """The windowed single-client D_α(P̃_x ‖ P̃_x′) of the configuration's client 1 (no wrap-around)."""
    engine = FastEngine()
    p, q = (engine.client(mechanism, value) for value in (configuration.x, configuration.x_prime))
    return float(fast.renyi_divergences(p, q, np.array([alpha]))[0])


class _Sums:
    """The windowed, un-normalised log pmfs of sums (wrapped when the engine has a modulus), each
    others' sum and each total computed once."""

    def __init__(self, mechanism: Mechanism, engine: FastEngine):
        self.mechanism, self.engine = mechanism, engine
        self.rests: dict = {}
        self.totals: dict = {}

    def rows(self, configuration: Configuration) -> tuple[np.ndarray, np.ndarray]:
        """The sum's log pmf under x and under x′."""
        return self.total(configuration.x, configuration.others), self.total(configuration.x_prime,
                                                                                configuration.others)

    def total(self, x: Fraction, others: tuple) -> np.ndarray:
        if (x, others) not in self.totals:
            client = self.engine.client(self.mechanism, x)
            self.totals[x, others] = self.engine.fold(self.engine.add_client(client, self.rest(others))[0])
        return self.totals[x, others]

    def rest(self, others: tuple) -> np.ndarray:
        if others not in self.rests:
            kinds = [value for value, _ in others]
            clients = [self.engine.client(self.mechanism, value) for value in kinds]
            self.rests[others] = secagg.multiset_sum(self.engine, clients, [count for _, count in others])
        return self.rests[others]


def _log_missing(n: int, log_epsilon: float) -> float:
    """log η, η = 1 − (1 − ε)^n ≤ nε, the mass a windowed sum of n clients misses at most."""
    epsilon = math.exp(log_epsilon)
    if epsilon > 1e-8:
        return math.log(-math.expm1(n * math.log1p(-epsilon)))
    return math.log(n) + log_epsilon


def _lower(lp: np.ndarray, lq: np.ndarray, alpha: float, n: int, log_epsilon: float) -> float:
    """The lower end at a finite order (module docstring), less its rounding (:func:`_entry_errors`):
    log F̃ = log Σ P̃^α (Q̃ + η)^{1−α} moves by at most Σ_s w_s (α·e_P(s) + (α − 1)·e_Q(s)) when the
    entries move by e_P, e_Q relative (w_s: each term's share of F̃), and the sums over S points
    (the masses, the engine's divergence of the normalised rows) by (2α − 1)·S·2⁻⁵³ more; D is
    that divided by α − 1. Near α = 1 that is large; the running maximum over the orders asked
    (:func:`monotone_envelopes`) then keeps the better lower end of a smaller order."""
    log_eta = _log_missing(n, log_epsilon)
    lq_raised = np.logaddexp(lq, log_eta)
    error_p, error_q = _entry_errors(lp, n), _entry_errors(lq_raised, n)
    if alpha == 1:
        return _kl_lower(lp, lq_raised, math.exp(log_eta), error_p, error_q)
    divergence = float(fast.renyi_divergences(lp, lq_raised, np.array([alpha]))[0])
    mass_p, mass_q = float(logsumexp(lp)), float(logsumexp(lq_raised))
    with np.errstate(invalid="ignore"):
        log_terms = np.where(lp > -np.inf, alpha * lp + (1 - alpha) * lq_raised, -np.inf)
    shares = np.exp(log_terms - logsumexp(log_terms))
    moved = (float(np.sum(shares * (alpha * error_p + (alpha - 1) * error_q)))
             + (2 * alpha - 1) * len(lp) * UNIT_ROUNDOFF)
    return divergence + (alpha * mass_p + (1 - alpha) * mass_q) / (alpha - 1) - moved / (alpha - 1)


def _entry_errors(log_row: np.ndarray, n: int) -> np.ndarray:
    """Per entry, the relative error of the fast engine's windowed sum of ``n`` clients (ENTRY_ROUNDINGS,
    FFT_ROUNDINGS)."""
    roundings = (np.abs(log_row) + 1) * n * ENTRY_ROUNDINGS
    if n > levels.DIRECT_MAX_N:
        roundings = roundings + n * FFT_ROUNDINGS / levels.TRUST
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(log_row), roundings * UNIT_ROUNDOFF, 0.0)


def _kl_lower(lp: np.ndarray, lq_raised: np.ndarray, eta: float, error_p: np.ndarray, error_q: np.ndarray) -> float:
    """Σ_s min over p ∈ [P̃(s), P̃(s) + η] of p log(p/q_s), q_s = Q̃(s) + η, minus η (module
    docstring): p log(p/q) is convex in p with its minimum −q/e at p = q/e. Less its rounding:
    with the entries off by e_P, e_Q relative, a term p log(p/q) moves by at most
    |term|·e_P + p·(e_P + e_Q), and the sum of S terms by S·2⁻⁵³ of their magnitudes more."""
    p_low = np.exp(lp)
    p_high = p_low + eta
    q = np.exp(lq_raised)
    with np.errstate(divide="ignore", invalid="ignore"):
        at_low = np.where(p_low > 0, p_low * (lp - lq_raised), 0.0)
        at_high = np.where(p_high > 0, p_high * (np.log(p_high) - lq_raised), 0.0)
    terms = np.where(p_low >= q / math.e, at_low, np.where(p_high <= q / math.e, at_high, -q / math.e))
    rounding = (float(np.sum(np.abs(terms) * (error_p + len(terms) * UNIT_ROUNDOFF)))
                + float(np.sum(p_high * (error_p + error_q))))
    return float(np.sum(terms)) - eta - rounding


def _windowed_at(mechanism: Mechanism, n: int, alpha: float, lp, lq, worst: bool) -> float:
    """The windowed value at ``alpha`` (KL's proxy order): the family's maximum when ``worst``,
    else the configuration's own (both directions for one client)."""
    if worst and n > 1:
        return secagg.search(mechanism, n, [alpha], FastEngine(mechanism.modulus)).values[0]
    if worst:
        return _single_worst_wrapped(mechanism, alpha)
    return float(fast.renyi_divergences(lp, lq, np.array([alpha]))[0])


def _single_worst_wrapped(mechanism: Mechanism, alpha: float) -> float:
    points = list(mechanism.breakpoints())
    engine = FastEngine(mechanism.modulus)
    clients = [engine.fold(engine.client(mechanism, p)) for p in points]
    return max(float(v) for i, j in _all_ordered(len(points))
               for v in fast.renyi_divergences(clients[i], clients[j], np.array([alpha])))


def _all_ordered(count: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(count) for j in range(count) if i != j]


def _infinite_order(mechanism: Mechanism, n: int, lp, lq, log_epsilon: float, worst: bool,
                    sums: _Sums) -> tuple[float, float]:
    """(lower, upper) of D_∞ (module docstring)."""
    if mechanism.modulus is None:
        return math.inf, math.inf
    eta = _log_missing(n, log_epsilon)
    present = lp > -np.inf
    lower = float(np.max(np.where(present, lp - np.logaddexp(lq, eta), -np.inf)))
    configurations = _family(mechanism, n) if worst else [None]
    upper = -math.inf
    for configuration in configurations:
        p, q = (lp, lq) if configuration is None else sums.rows(configuration)
        if len(q) < mechanism.modulus:  # a residue the windowed sum never reaches: no certificate
            return lower, math.inf
        with np.errstate(invalid="ignore"):
            upper = max(upper, float(np.max(np.logaddexp(p, eta) - q)))
    return lower, upper


def _family(mechanism: Mechanism, n: int) -> list[Configuration]:
    """Every configuration of the worst-case family (both directions of each pair)."""
    points = list(mechanism.breakpoints())
    others = ((Fraction(0), n - 1),) if n > 1 else ()
    pairs = mechanism.shift_pairs() if n > 1 else _all_ordered(len(points))
    return [Configuration(points[a], points[b], others) for i, j in pairs for a, b in ((i, j), (j, i))]
