"""The others' common component in homogeneous blocks: a tighter common-component bound at large n.

**The loss it removes.** The common-component bound (:mod:`rdpcalc.worstcase.secagg`) writes
each breakpoint's pmf as P_b = λ·C(· − a_b) + (1 − λ)·E_b and keeps, of the others' sum, only
C^{*K} with K ~ Binomial(n − 1, λ). At large n the sum is close to a discretised normal and
the divergence scales like 1/variance: the bound sees the variance K·Var(C) ≈ (n − 1)·λ·Var(C),
the worst case about (n − 1)·min_b Var(P_b). The envelope C is cut wherever some P_b's tail is
(the end levels pile the mass of RQM's outer breakpoints up at 0 and m − 1), so λ·Var(C) is
well below Var(P_b) (RQM's headline: 1.65 against 2.91, and the bound is 1.76 × the worst
case found at n = 1000). A block of g clients at the same breakpoint has the pmf P_b^{*g}, whose
tails reach g(m − 1) points away; the blocks of different breakpoints differ less in shape
than single clients do, so their envelope keeps far more of the variance (headline, g = 8:
λ = 0.946, λ·Var(C)/g = 2.61).

**Theorem (homogeneous blocks).** Let the N = n − 1 others hold a multiset M of the r
breakpoints, g ≥ 1, Q_b = P_b^{*g}, a_b any integer per breakpoint, and λ·C(d) ≤ Q_b(a_b + d)
for every b and d, with λ = Σ_d λ·C(d) > 0. Let B = max(0, ⌈(N − r(g − 1))/g⌉). Then for
every pair (x, x′) of client 1 and every M,

    D_α(P_x * R_M ‖ P_x′ * R_M) ≤ (1/(α − 1)) log Σ_K w_K e^{(α−1) D_α(P_x * C^{*K} ‖ P_x′ * C^{*K})}

with w_K = Binomial(K; B, λ) (Σ_K w_K D_1(…) for KL, max_K D_∞(…) = D_∞(P_x ‖ P_x′) at ∞),
and the same holds for every hockey-stick divergence H_γ with Σ_K w_K H_γ(…) on the right.

*Proof.* With c_b the count of breakpoint b in M, M holds Σ_b ⌊c_b/g⌋ ≥ Σ_b (c_b − (g − 1))/g
= (N − r(g − 1))/g disjoint blocks of g equal breakpoints, so at least B (an integer). The
others' sum is R_M = Q_{b_1} * … * Q_{b_B} * R_rest, the rest the clients in no chosen block.
Adding the independent R_rest to both laws is one Markov kernel: dropping it cannot lower the
divergence (data processing), so it suffices to bound the B blocks. Each Q_b = λ·C(· − a_b) +
(1 − λ)·E_b with E_b = (Q_b − λ·C(· − a_b))/(1 − λ) ≥ 0 a pmf (or λ = 1 and Q_b = C(· − a_b)).
This is the common-component bound with the blocks as its clients: a latent Bernoulli per
block makes the blocks' sum a mixture, with weights Binomial(K; B, λ) that do not depend on
client 1, of (the sum of C over K blocks) * δ_shift * (the E of the other blocks); joint
convexity bounds F_α (KL, H_γ) of the mixture by the mixture of the F_α, shift invariance
removes the shift, and data processing the E's. ∎ With g = 1 (B = N) it is the
common-component bound itself.

**The component** (:func:`homogeneous_blocks`): a_b the rounded mean of Q_b (the mode for g = 1,
as :func:`rdpcalc.worstcase.secagg.common_component`), λ·C(d) = (1 − MARGIN) · min_b Q̂_b(a_b +
d), Q̂_b the float64 convolution power of the float pmfs, with entries below TINY set to 0.
*Floating point*: the float pmfs are within a relative 1e−12 of the exact ones, and a
convolution of non-negative numbers adds no cancellation, so an entry of Q̂_b at or above TINY
is within a relative g(m + 2)·2⁻⁵² + 1e−12·g (products that underflow lose less than 2⁻¹⁰²² each,
a relative 1e−50 of such an entry) of the exact Q_b: below MARGIN (asserted), so λ·C(d) ≤
Q_b(a_b + d) for the exact Q_b; an entry set to 0 is below it trivially.

**Which g** (:func:`best_block`): any g gives a valid bound, so g is chosen by a proxy of the
bound's noise, B·λ·Var(C) (the variance the bound keeps, the divergence of a normal location
pair being inverse to it), over BLOCK_SIZES; ties go to the smaller g.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: the block sizes g the proxy chooses among
BLOCK_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
#: the envelope is lowered by this relative amount (above the float error of the powers)
MARGIN = 1e-9
#: entries of the float powers below this are set to 0 (their relative error is not bounded)
TINY = 1e-250
#: block sizes whose powers cost more than this many multiply-adds (kinds · g² · m² / 2) are skipped
BLOCK_WORK = 2e8


@dataclass(frozen=True)
class Component:
    """The others reduced to ``blocks`` independent blocks of ``size`` clients, each block's sum
    sharing the component C (``log_component``, log pmf) with mass ``share`` (module docstring)."""

    size: int
    blocks: int
    share: float
    log_component: np.ndarray

    def variance(self) -> float:
        """Var(C)."""
        weights = np.exp(self.log_component)
        points = np.arange(len(weights))
        mean = float(weights @ points)
        return float(weights @ (points - mean) ** 2)

    def kept_variance(self) -> float:
        """B·λ·Var(C): the variance of the others' sum the bound keeps (the proxy of :func:`best_block`)."""
        return self.blocks * self.share * self.variance()

    def describe(self) -> str:
        """The component in words, for the certificate's text."""
        if self.size == 1:
            return f"the others' common component (λ = {self.share:.4f})"
        return (f"the common component of {self.blocks} homogeneous blocks of {self.size} others "
                f"(λ = {self.share:.4f})")


def guaranteed_blocks(others: int, kinds: int, size: int) -> int:
    """B = max(0, ⌈(others − kinds·(size − 1))/size⌉): disjoint blocks of ``size`` equal
    breakpoints that every multiset of ``others`` among ``kinds`` breakpoints holds."""
    return max(0, -(-(others - kinds * (size - 1)) // size))


def homogeneous_blocks(pmfs: np.ndarray, others: int, size: int) -> Component:
    """The component of the module docstring for blocks of ``size`` (g) equal breakpoints, from
    the float pmfs of the breakpoints (rows, on {0 … m − 1}) among which ``others`` clients are."""
    kinds, outputs = pmfs.shape
    if size * (outputs + 2) * 2.0**-52 + 1e-12 * size >= MARGIN:
        raise ValueError("the block is too large for the float envelope's margin")
    powers = []
    for row in pmfs:
        power = np.ones(1)
        for _ in range(size):
            power = np.convolve(power, row)
        powers.append(np.where(power >= TINY, power, 0.0))
    powers = np.array(powers)
    width = powers.shape[1]
    if size == 1:
        anchors = powers.argmax(axis=1)
    else:
        anchors = np.floor(powers @ np.arange(width) / powers.sum(axis=1) + 0.5).astype(int)
    low, high = -int(anchors.max()), width - int(anchors.min())
    shared = np.full(high - low, np.inf)
    for power, anchor in zip(powers, anchors):
        aligned = np.zeros(high - low)
        aligned[-low - anchor : -low - anchor + width] = power
        shared = np.minimum(shared, aligned)
    shared *= 1.0 - MARGIN
    kept = np.nonzero(shared)[0]
    if not len(kept):
        return Component(size, guaranteed_blocks(others, kinds, size), 0.0, np.zeros(1))
    shared = shared[kept[0] : kept[-1] + 1]
    share = float(shared.sum())
    with np.errstate(divide="ignore"):
        return Component(size, guaranteed_blocks(others, kinds, size), share, np.log(shared / share))


def best_block(pmfs: np.ndarray, others: int, sizes: Sequence[int] = BLOCK_SIZES) -> Component:
    """The component of the block size with the largest kept variance B·λ·Var(C) (module
    docstring), among ``sizes`` that leave at least one block and whose powers cost at most
    BLOCK_WORK (g = 1 always)."""
    kinds, outputs = pmfs.shape
    usable = [g for g in sizes if g == 1 or (guaranteed_blocks(others, kinds, g) > 0
                                             and kinds * g * g * outputs * outputs / 2 <= BLOCK_WORK)]
    best, best_kept = None, -math.inf
    for size in usable:
        component = homogeneous_blocks(pmfs, others, size)
        kept = component.kept_variance()
        if kept > best_kept:
            best, best_kept = component, kept
    return best
