"""RQM, the Randomized Quantization Mechanism: Youn, Hu, Ziani & Abernethy (2023), "Randomized
Quantization is All You Need for Differential Privacy in Federated Learning", arXiv:2306.11913, Algorithm 2.

Levels ``B(i) = -X + 2 i X / (m-1)``, ``i = 0 … m-1``, with ``X = c + Δ``. The end levels are
always kept, each interior level independently with probability ``q``; ``x`` is then rounded
without bias to one of the two kept levels around it. The output is the level's index.

The output pmf is the paper's Lemma 5.1 (eq. (2), proof in App. B.1); its pure-DP bound is
Theorem 5.2 (eq. (3), proof in App. B.2). :meth:`RQM.draw` samples by Algorithm 2 itself.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import floor

import mpmath
import numpy as np

from ..exactnum import to_mpf as _mp
from ..logdomain import logsumexp
from .base import MAX_LEVELS, Bound, Mechanism, Param, SolveRange, bits_param, mechanism
from .design import Design, levels_at_bits

#: samples drawn per chunk of the RQM sampler, at most (its (chunk × m) work array is bounded
#: by CHUNK_VALUES entries too: fewer rows when m > 16, which leaves the stream of m ≤ 16 as it was)
_CHUNK = 1 << 16
CHUNK_VALUES = 1 << 20
#: bytes per entry of the RQM work array: a uniform, the kept flag and two index arrays
RQM_BYTES_PER_ENTRY = 25


@mechanism
class RQM(Mechanism):
    """RQM with clipping bound ``c``, range extension ``delta`` (Δ), ``m`` levels and keep
    probability ``q`` for the interior levels. Requires c > 0, Δ > 0, integer m ≥ 2,
    0 < q < 1 (the paper's Lemma 5.1 and Theorem 5.2 assume these)."""

    name = "rqm"
    title = "RQM (randomized quantization)"
    paper = ("Youn, Hu, Ziani & Abernethy (2023), \"Randomized Quantization is All You Need for Differential Privacy "
             "in Federated Learning\", arXiv:2306.11913")
    #: typical parameters, for the examples in the command-line help
    EXAMPLE = {"--c": "1.5", "--extension": "1.5", "--levels": "16", "--q": "0.42"}
    PARAMS = (
        Param("c", "number", "clipping bound c > 0; inputs lie in [-c, c]", low=0, low_open=True),
        # --extension on the command line: the paper's --delta reads as the DP δ (--dp-delta)
        Param("delta", "number", "range extension Δ > 0; levels span ±(c+Δ)", low=0, low_open=True,
              solve=SolveRange(1e-3, 1e3, log=True, relative_to="c"), option="--extension", aliases=("--delta",),
              alias_note="--delta is RQM's range extension Δ (also --extension), not the DP δ, which is --dp-delta"),
        Param("m", "integer", f"number of quantization levels m, 2 … {MAX_LEVELS}", low=2, high=MAX_LEVELS,
              option="--levels", aliases=("--m",)),
        Param("q", "number", "probability of keeping each interior level, 0 < q < 1", low=0, high=1, low_open=True,
              high_open=True, solve=SolveRange(1e-6, 1 - 1e-6)),
        bits_param(),
    )
    FL_OBSERVER = "server"

    MIRRORED = True

    # ----------------------------------------------------------------- geometry
    @property
    def bound(self) -> Fraction:
        return self.c

    @property
    def support_size(self) -> int:
        return self.m

    @property
    def x_max(self) -> Fraction:
        """X^max = c + Δ, the outermost level."""
        return self.c + self.delta

    def level(self, i: int) -> Fraction:
        """B(i) = −X^max + 2 i X^max / (m−1) (Algorithm 2, line 3)."""
        return -self.x_max + 2 * i * self.x_max / (self.m - 1)

    def output_values(self) -> list[Fraction]:
        """B(i): the output index i decodes to level B(i)."""
        return [self.level(i) for i in range(self.m)]

    def grid_position(self, x: Fraction) -> Fraction:
        """t = (x + X^max)(m−1) / (2 X^max): x in units of the level spacing, B(t) = x."""
        return (x + self.x_max) * (self.m - 1) / (2 * self.x_max)

    def breakpoints(self) -> tuple[Fraction, ...]:
        """{±c} ∪ {B(i) : |B(i)| < c}: the pmf (Youn et al. 2023, eq. (2)) is continuous in x and
        affine on each cell [B(j), B(j+1)], hence between consecutive breakpoints, so by joint
        quasi-convexity of D_α the single-client worst pair is a pair of breakpoints."""
        interior = [self.level(i) for i in range(self.m) if abs(self.level(i)) < self.c]
        return tuple(sorted({-self.c, self.c, *interior}))

    # ----------------------------------------------------------------- pmf
    def pmf(self, x: Fraction) -> list[mpmath.mpf]:
        """Lemma 5.1 (Youn et al. 2023, eq. (2)) rewritten as one sum per side, free of cancellation.

        With t = grid position of x, j = ⌊t⌋ ∈ {0 … m−2}, f = t − j ∈ [0, 1), u = 1 − f:
        the lower kept neighbour k ≤ j has law w_lo(0) = (1−q)^j, w_lo(k) = q(1−q)^{j−k};
        the upper one k ≥ j+1 has w_hi(m−1) = (1−q)^{m−j−2}, w_hi(k) = q(1−q)^{k−j−1};
        they are independent, and

            P(i) = w_lo(i) Σ_{k>j} w_hi(k) ((k−j−1) + u) / (k − i)     (i ≤ j)
            P(i) = w_hi(i) Σ_{k≤j} w_lo(k) ((j−k) + f) / (i − k)       (i ≥ j+1),

        where (k−j−1)+u = B-distance (B(k)−x)/h and (j−k)+f = (x−B(k))/h: every term is a
        product of non-negative numbers.
        """
        x = self.check_input(x)
        m = self.m
        t = self.grid_position(x)
        j = min(floor(t), m - 2)
        frac = t - j
        f = _mp(frac)
        u = _mp(1 - frac)
        q = _mp(self.q)
        keep_out = _mp(1 - self.q)
        powers = [mpmath.mpf(1)]
        for _ in range(m):
            powers.append(powers[-1] * keep_out)

        w_lo = [q * powers[j - k] for k in range(j + 1)]
        w_lo[0] = powers[j]
        w_hi = {k: q * powers[k - j - 1] for k in range(j + 1, m)}
        w_hi[m - 1] = powers[m - j - 2]

        above = [w_hi[k] * ((k - j - 1) + u) for k in range(j + 1, m)]  # k = j+1 … m−1
        below = [w_lo[k] * ((j - k) + f) for k in range(j, -1, -1)]  # k = j … 0
        # 1/(k − i) as reciprocals rounded once; mpmath.fdot sums the exact products, rounded once
        reciprocal = [mpmath.mpf(0)] + [1 / mpmath.mpf(d) for d in range(1, m)]
        probs = []
        for i in range(m):
            if i <= j:  # k − i = j+1−i … m−1−i
                probs.append(w_lo[i] * mpmath.fdot(above, reciprocal[j + 1 - i : m - i]))
            else:  # i − k = i−j … i
                probs.append(w_hi[i] * mpmath.fdot(below, reciprocal[i - j : i + 1]))
        return probs

    def log_pmf_float(self, x: Fraction) -> np.ndarray:
        """The same unified form in float64 and the log domain, for the fast engine: O(m²)
        numpy instead of mpmath (m up to 4096). Every term is positive, so log-sum-exp keeps
        ~1e-15 relative accuracy in every entry, tails included."""
        x = self.check_input(x)
        m = self.m
        t = self.grid_position(x)
        j = min(floor(t), m - 2)
        log_q, log_keep_out = math.log(self.q), math.log(1 - self.q)  # 1 − q exactly (q may be 1 − 1e-12)
        k = np.arange(m)
        log_lo = np.where(k == 0, j * log_keep_out, log_q + (j - k) * log_keep_out)[: j + 1]
        log_hi = np.where(k == m - 1, (m - j - 2) * log_keep_out, log_q + (k - j - 1) * log_keep_out)[j + 1 :]
        above, below = k[j + 1 :], k[: j + 1]
        # i ≤ j: Σ_{k>j} w_hi(k) ((k−j−1) + u)/(k − i);  i ≥ j+1: Σ_{k≤j} w_lo(k) ((j−k) + f)/(i − k)
        with np.errstate(divide="ignore"):
            lower_terms = (log_hi + _log_offsets(above - j - 1, 1 - (t - j)))[None, :] - np.log(above[None, :] - below[:, None])
            upper_terms = (log_lo + _log_offsets(j - below, t - j))[None, :] - np.log(above[:, None] - below[None, :])
        return np.concatenate([log_lo + logsumexp(lower_terms, axis=1), log_hi + logsumexp(upper_terms, axis=1)])

    # ----------------------------------------------------------------- sampler
    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Algorithm 2 of Youn et al. (2023, arXiv:2306.11913): keep the end levels and each interior
        level with probability q; the lower neighbour is the largest kept index with B(k) ≤ x, the
        upper the smallest with B(k) ≥ x; round up with probability (x − B(lo))/(B(hi) − B(lo)).
        Inputs go in chunks of :func:`rqm_chunk_rows`."""
        m, q = self.m, float(self.q)
        x_max = float(self.x_max)
        position = (x.ravel() + x_max) * (m - 1) / (2 * x_max)  # x in units of the level spacing
        out = np.empty(position.shape, dtype=np.int64)
        index = np.arange(m)
        rows = rqm_chunk_rows(m)
        for start in range(0, len(position), rows):
            t = position[start : start + rows, None]
            kept = np.ones((len(t), m), dtype=bool)
            kept[:, 1 : m - 1] = rng.random((len(t), m - 2)) < q
            lower = np.where(kept & (index <= t), index, -1).max(axis=1)
            upper = np.where(kept & (index >= t), index, m).min(axis=1)
            span = np.maximum(upper - lower, 1)
            up = rng.random(len(t)) < (t[:, 0] - lower) / span
            out[start : start + rows] = np.where(up & (upper > lower), upper, lower)
        return out.reshape(x.shape)

    def sample_work_bytes(self) -> int:
        """The (chunk × m) work array of :meth:`draw`: RQM_BYTES_PER_ENTRY bytes per entry."""
        return rqm_chunk_rows(self.m) * self.m * RQM_BYTES_PER_ENTRY

    # ----------------------------------------------------------------- Theorem 5.2
    @classmethod
    def design(cls) -> Design:
        """``compare``'s design at B bits for n clients: as many levels as the sum's modulus holds."""
        def build(value: float, n: int, bits: int, c: Fraction):
            m = levels_at_bits(n, bits)
            return None if m < 2 else cls(c=c, delta=Fraction(value) * c, m=m, q=Fraction(21, 50), bits=bits)

        return Design("delta/c", lambda n, b, c: (1e-3, 1e3), build,
                      rule="m = ⌊(2^B − 1)/n⌋ + 1 levels, q = 0.42; Δ/c solved for")

    def bounds(self, alphas: list[float], **options) -> list[Bound]:
        inf = math.inf
        return [
            Bound("ε_Thm, Theorem 5.2 as printed", inf, self.theorem_5_2_bound(), "paper eq. (3)"),
            Bound("ε_⋆, proof step (⋆)", inf, self.theorem_5_2_intermediate(), "paper App. B.2", "pair",
                  note="assumes argmin_i P_−c(i) = m−1, false in general"),
            Bound("−log min_i P_−c(i), step (⋆) corrected", inf, self.min_probability_bound(), "derived", "pair"),
        ]

    def theorem_5_2_bound(self) -> mpmath.mpf:
        """ε_Thm of Theorem 5.2 (eq. 3) as printed:
        log(2(1−q)²(1 + c/Δ)) + m log(1/(1−q))."""
        q = _mp(self.q)
        ratio = _mp(self.c / self.delta)
        return mpmath.log(2 * (1 - q) ** 2 * (1 + ratio)) + self.m * mpmath.log(1 / (1 - q))

    def theorem_5_2_intermediate(self) -> mpmath.mpf:
        """ε_⋆ = −log P(Q(−c) = m−1): the proof of Theorem 5.2 (Youn et al. 2023, App. B.2) before
        it drops all but the first term of P(Q(−c) = m−1), a tighter value than eq. (3).

        The proof takes m−1 as the argmin of P(Q(−c) = ·); that is false in general (c = Δ, m = 16,
        q = 0.42: P_−c(14) ≈ 2.647e−4 < P_−c(15) ≈ 3.388e−4), so this is the paper's expression,
        not a proven bound."""
        return -mpmath.log(self.pmf(-self.c)[-1])

    def min_probability_bound(self) -> mpmath.mpf:
        """−log min_i P(Q(−c) = i): the corrected step (⋆). Since P(Q(c)=i) ≤ 1 it bounds
        D_∞(P_c ‖ P_{−c}) [derived]; it bounds only the ±c pair."""
        return -mpmath.log(min(self.pmf(-self.c)))


def rqm_chunk_rows(m: int) -> int:
    """Inputs per chunk of :meth:`RQM.draw`: 2¹⁶, fewer when m > 16 so that the (chunk × m)
    work array holds at most CHUNK_VALUES entries (one row when m exceeds it)."""
    return min(_CHUNK, max(1, CHUNK_VALUES // m))


def _log_offsets(counts: np.ndarray, part: Fraction) -> np.ndarray:
    """log(counts + part) for integers counts ≥ 0 and an exact ``part`` ∈ [0, 1]: at count 0 the
    log of the Fraction itself (:func:`log_fraction`; f = 1e−600 is not rounded to 0), above it
    float arithmetic on numbers ≥ 1."""
    with np.errstate(divide="ignore"):
        out = np.log(counts + float(part))
    out[counts == 0] = log_fraction(part)
    return out


def log_fraction(value: Fraction) -> float:
    """log of an exact Fraction in [0, 1] (−inf at 0) to float64 accuracy, however small it is:
    log1p of the exact complement above ½, else log(numerator) − log(denominator) on the exact
    integers (no conversion of the Fraction to a float, which underflows below 1e−308)."""
    if value == 0:
        return -math.inf
    if value > Fraction(1, 2):
        return math.log1p(float(value - 1))
    return math.log(value.numerator) - math.log(value.denominator)
