"""The others' common component in blocks: a tighter common-component bound at large n.

**The loss it removes.** The common-component bound (:mod:`rdpcalc.worstcase.secagg`) writes
each breakpoint's pmf as P_b = λ·C(· − a_b) + (1 − λ)·E_b and keeps, of the others' sum, only
C^{*K} with K ~ Binomial(n − 1, λ). At large n the sum is close to a discretised normal and
the divergence scales like 1/variance: the bound sees the variance K·Var(C) ≈ (n − 1)·λ·Var(C),
the worst case about (n − 1)·min_b Var(P_b). The envelope C is cut wherever some P_b's tail is
(the end levels pile the mass of RQM's outer breakpoints up at 0 and m − 1), so λ·Var(C) is
well below Var(P_b) (RQM's headline: 1.65 against 2.91, and the bound is 1.76 × the worst
case found at n = 1000). A block of g clients has the pmf of their sum, whose tails reach
g(m − 1) points away; blocks differ less in shape than single clients do, so their envelope
keeps far more of the variance (headline, g = 8, each block at one breakpoint: λ = 0.946,
λ·Var(C)/g = 2.61).

**Theorem (blocks within classes).** Let the N = n − 1 others hold a multiset M of the r
breakpoints, split into c classes (a partition of the breakpoints), g ≥ 1, and for every
multiset A of g breakpoints of one class, Q_A = *_{b∈A} P_b, a_A an integer, and λ·C(d) ≤
Q_A(a_A + d) for every d, with λ = Σ_d λ·C(d) > 0. Let B = max(0, ⌈(N − c(g − 1))/g⌉). Then
for every pair (x, x′) of client 1 and every M,

    D_α(P_x * R_M ‖ P_x′ * R_M) ≤ (1/(α − 1)) log Σ_K w_K e^{(α−1) D_α(P_x * C^{*K} ‖ P_x′ * C^{*K})}

with w_K = Binomial(K; B, λ) (Σ_K w_K D_1(…) for KL, max_K D_∞(…) = D_∞(P_x ‖ P_x′) at ∞),
and the same holds for every hockey-stick divergence H_γ with Σ_K w_K H_γ(…) on the right.

*Proof.* With c_S the number of others in class S, M holds Σ_S ⌊c_S/g⌋ ≥ Σ_S (c_S − (g − 1))/g
= (N − c(g − 1))/g disjoint blocks of g others within one class, so at least B (an integer).
The others' sum is R_M = Q_{A_1} * … * Q_{A_B} * R_rest, the rest the clients in no chosen
block. Adding the independent R_rest to both laws is one Markov kernel: dropping it cannot
lower the divergence (data processing), so it suffices to bound the B blocks. Each Q_A =
λ·C(· − a_A) + (1 − λ)·E_A with E_A = (Q_A − λ·C(· − a_A))/(1 − λ) ≥ 0 a pmf (or λ = 1 and
Q_A = C(· − a_A)). This is the common-component bound with the blocks as its clients: a
latent Bernoulli per block makes the blocks' sum a mixture, with weights Binomial(K; B, λ) that
do not depend on client 1, of (the sum of C over K blocks) * δ_shift * (the E of the other
blocks); joint convexity bounds F_α (KL, H_γ) of the mixture by the mixture of the F_α, shift
invariance removes the shift, and data processing the E's. ∎ With g = 1 (B = N) it is the
common-component bound itself.

**The classes** (:data:`PARTITIONS`): each breakpoint alone (homogeneous blocks: the fewest
shapes, the most clients left out, r(g − 1)); the two end breakpoints alone and the others
together (RQM's interior pmfs are shifts of one shape but for their truncation, so mixing
them costs the envelope little, and only 3(g − 1) clients are left out); all together.

**The component** (:func:`block_component`): a_A the rounded mean of Q_A (the mode for g = 1,
as :func:`rdpcalc.worstcase.secagg.common_component`), λ·C(d) = (1 − MARGIN) · min_A Q̂_A(a_A +
d), Q̂_A the float64 convolution of the float pmfs, with entries below TINY set to 0.
*Floating point*: the float pmfs are within a relative 1e−12 of the exact ones, and a
convolution of non-negative numbers adds no cancellation, so an entry of Q̂_A at or above TINY
is within a relative g(m + 2)·2⁻⁵² + 1e−12·g (products that underflow lose less than 2⁻¹⁰²² each,
a relative 1e−50 of such an entry) of the exact Q_A: below MARGIN (asserted), so λ·C(d) ≤
Q_A(a_A + d) for the exact Q_A; an entry set to 0 is below it trivially.

**Which blocks** (:func:`best_blocks`): any g and partition give a valid bound, so they are
chosen by a proxy of the bound's noise, B·λ·Var(C) (the variance the bound keeps, the
divergence of a normal location pair being inverse to it), over BLOCK_SIZES and PARTITIONS
within MOST_BLOCK_PMFS block pmfs, with at least MIN_BLOCKS blocks (with few blocks the
weight (1 − λ)^B of K = 0, one client alone, dominates the bound at high orders: RQM's
headline at n = 40, 8 blocks of 4, is tighter at KL and α = 2 but looser at α = 10 than single
clients); ties go to the earlier (smaller g, finer partition).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

#: the block sizes g the proxy chooses among
BLOCK_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
#: the partitions of the breakpoints into classes, by name (module docstring)
PARTITIONS = ("each breakpoint alone", "the end breakpoints alone", "one class")
#: blocks (g > 1) are chosen only where there are at least this many: with few, the binomial's
#: lower tail (K near 0, weight about (1 − λ)^B) dominates the bound at high orders
MIN_BLOCKS = 24
#: a choice of blocks is skipped where its multisets (block pmfs) number more than this
MOST_BLOCK_PMFS = 20_000
#: or where they cost more than this many multiply-adds (pmfs × the block's width × m)
BLOCK_WORK = 2e8
#: or where they take more than this many bytes (pmfs × the block's width × 8)
BLOCK_BYTES = 32 * 2**20
#: the envelope is lowered by this relative amount (above the float error of the sums)
MARGIN = 1e-9
#: entries of the float sums below this are set to 0 (their relative error is not bounded)
TINY = 1e-250


@dataclass(frozen=True)
class Component:
    """The others reduced to ``blocks`` independent blocks of ``size`` clients (within the classes
    of ``partition``), each block's sum sharing the component C (``log_component``, log pmf) with
    mass ``share`` (module docstring)."""

    size: int
    blocks: int
    share: float
    log_component: np.ndarray
    partition: str = PARTITIONS[0]

    def variance(self) -> float:
        """Var(C)."""
        weights = np.exp(self.log_component)
        points = np.arange(len(weights))
        mean = float(weights @ points)
        return float(weights @ (points - mean) ** 2)

    def kept_variance(self) -> float:
        """B·λ·Var(C): the variance of the others' sum the bound keeps (the proxy of :func:`best_blocks`)."""
        return self.blocks * self.share * self.variance()

    def describe(self) -> str:
        """The component in words, for the certificate's text."""
        if self.size == 1:
            return f"the others' common component (λ = {self.share:.4f})"
        within = {PARTITIONS[0]: "at one breakpoint", PARTITIONS[1]: "at one end breakpoint or among the others",
                  PARTITIONS[2]: "anywhere"}[self.partition]
        return (f"the common component of {self.blocks} blocks of {self.size} others, each {within} "
                f"(λ = {self.share:.4f})")


def classes_of(partition: str, kinds: int) -> list[list[int]]:
    """The classes (lists of breakpoint indices) of a partition of ``kinds`` breakpoints."""
    if partition == PARTITIONS[0] or kinds <= 2:
        return [[b] for b in range(kinds)]
    if partition == PARTITIONS[1]:
        return [[0], list(range(1, kinds - 1)), [kinds - 1]]
    if partition == PARTITIONS[2]:
        return [list(range(kinds))]
    raise ValueError(f"unknown partition {partition!r}")


def guaranteed_blocks(others: int, classes: int, size: int) -> int:
    """B = max(0, ⌈(others − classes·(size − 1))/size⌉): disjoint blocks of ``size`` others within
    one class that every multiset of ``others`` breakpoints holds."""
    return max(0, -(-(others - classes * (size - 1)) // size))


def block_pmfs_count(classes: Sequence[Sequence[int]], size: int) -> int:
    """The multisets of ``size`` breakpoints within one class: the block pmfs of the envelope."""
    return sum(math.comb(len(members) + size - 1, size) for members in classes)


def _block_sums(pmfs: np.ndarray, members: Sequence[int], size: int) -> Iterator[np.ndarray]:
    """The pmf of every multiset of ``size`` breakpoints among ``members``, each prefix convolved once."""
    def grow(start: int, depth: int, prefix: np.ndarray) -> Iterator[np.ndarray]:
        if depth == size:
            yield prefix
            return
        for place in range(start, len(members)):
            yield from grow(place, depth + 1, np.convolve(prefix, pmfs[members[place]]))

    yield from grow(0, 0, np.ones(1))


def aligned_minimum(rows: np.ndarray, anchors: np.ndarray) -> tuple[np.ndarray, int]:
    """min over the rows of row(anchor + d), for d from −max(anchors) to width − 1 − min(anchors)
    (0 outside a row), trimmed to its nonzero span: (the minimum, its first d). An all-zero
    minimum gives (an empty array, 0)."""
    width = rows.shape[1]
    low, high = -int(anchors.max()), width - int(anchors.min())
    shared = np.full(high - low, np.inf)
    for row, anchor in zip(rows, anchors):
        aligned = np.zeros(high - low)
        aligned[-low - anchor : -low - anchor + width] = row
        np.minimum(shared, aligned, out=shared)
    kept = np.nonzero(shared)[0]
    if not len(kept):
        return np.zeros(0), 0
    return shared[kept[0] : kept[-1] + 1], low + int(kept[0])


def block_component(pmfs: np.ndarray, others: int, size: int, partition: str = PARTITIONS[0]) -> Component:
    """The component of the module docstring for blocks of ``size`` (g) others within the classes
    of ``partition``, from the float pmfs of the breakpoints (rows, on {0 … m − 1}) among which
    ``others`` clients are."""
    kinds, outputs = pmfs.shape
    if size * (outputs + 2) * 2.0**-52 + 1e-12 * size >= MARGIN:
        raise ValueError("the block is too large for the float envelope's margin")
    classes = classes_of(partition, kinds)
    sums = np.array([row for members in classes for row in _block_sums(pmfs, members, size)])
    sums = np.where(sums >= TINY, sums, 0.0)
    if size == 1:
        anchors = sums.argmax(axis=1)
    else:
        anchors = np.floor(sums @ np.arange(sums.shape[1]) / sums.sum(axis=1) + 0.5).astype(int)
    shared, _ = aligned_minimum(sums, anchors)
    shared = shared * (1.0 - MARGIN)
    blocks = guaranteed_blocks(others, len(classes), size)
    if not len(shared):
        return Component(size, blocks, 0.0, np.zeros(1), partition)
    share = float(shared.sum())
    with np.errstate(divide="ignore"):
        return Component(size, blocks, share, np.log(shared / share), partition)


def best_blocks(pmfs: np.ndarray, others: int, sizes: Sequence[int] = BLOCK_SIZES,
                partitions: Sequence[str] = PARTITIONS) -> tuple[Component, Component]:
    """The components of the block size and partition with the largest kept variance B·λ·Var(C)
    (module docstring): among those that leave at least MIN_BLOCKS blocks, and among those that
    leave at least one; each choice's block pmfs number at most MOST_BLOCK_PMFS and cost at most
    BLOCK_WORK and BLOCK_BYTES (single clients are always a choice)."""
    kinds, outputs = pmfs.shape
    best = fewer = block_component(pmfs, others, 1)
    for partition in partitions:
        classes = classes_of(partition, kinds)
        for size in sizes:
            count = block_pmfs_count(classes, size)
            blocks = guaranteed_blocks(others, len(classes), size)
            if (size == 1 or blocks == 0 or count > MOST_BLOCK_PMFS or count * size * outputs * outputs > BLOCK_WORK
                    or 8 * count * (size * (outputs - 1) + 1) > BLOCK_BYTES):
                continue
            component = block_component(pmfs, others, size, partition)
            if blocks >= MIN_BLOCKS and component.kept_variance() > best.kept_variance():
                best = component
            if component.kept_variance() > fewer.kept_variance():
                fewer = component
    return best, fewer
