"""The others' common component in blocks (rdpcalc.worstcase.blocks): the blocks every multiset
holds within each class, the envelope below every block's pmf in exact arithmetic, the bound above the
exhaustive maximum (fractions and floats), recomputed from its definition, and tighter than the
single-client component at large n while staying above every configuration found."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc.mechanisms import RQM
from rdpcalc.numerics import make_engine
from rdpcalc.worstcase import blocks, secagg, staircase

from .oracles import convolve_fractions, renyi_linear, rqm_pmf_by_enumeration


def random_rqm(rng: random.Random) -> RQM:
    return RQM(c=F(rng.randint(1, 8), 4), delta=F(rng.randint(1, 8), 4), m=rng.randint(3, 7), q=F(rng.randint(1, 9), 10))


def float_pmfs(mech) -> np.ndarray:
    engine = make_engine("fast")
    return np.exp(np.array([engine.client(mech, p) for p in mech.breakpoints()]))


def exact_power(pmf: list[F], size: int) -> list[F]:
    out = [F(1)]
    for _ in range(size):
        out = convolve_fractions(out, pmf)
    return out


def exact_shared(component: blocks.Component) -> list[F]:
    """λ·C as exact fractions of the floats the bound uses (λ·C = the floats of exp(log C)·λ)."""
    return [F(float(v)) for v in np.exp(component.log_component) * component.share]


@pytest.mark.parametrize("kinds,size", [(3, 2), (4, 3), (5, 2), (2, 5), (5, 3)])
@pytest.mark.parametrize("partition", blocks.PARTITIONS)
def test_guaranteed_blocks_is_the_least_over_every_multiset(kinds, size, partition):
    """Σ over the classes of ⌊(others in the class)/g⌋, least over every multiset of the others."""
    classes = blocks.classes_of(partition, kinds)
    assert sorted(b for members in classes for b in members) == list(range(kinds))
    for others in range(0, 14):
        least = min(sum(sum(counts[b] for b in members) // size for members in classes)
                    for counts in itertools.product(range(others + 1), repeat=kinds) if sum(counts) == others)
        assert blocks.guaranteed_blocks(others, len(classes), size) == least


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("partition", blocks.PARTITIONS)
def test_the_envelope_lies_below_every_block_in_exact_arithmetic(seed, size, partition):
    """λ·C(d) ≤ Q_A(a + d) for some shift a, for every multiset A of g breakpoints of one class,
    Q_A the convolution of their pmfs in fractions."""
    rng = random.Random(seed)
    mech = random_rqm(rng)
    points = list(mech.breakpoints())
    component = blocks.block_component(float_pmfs(mech), 20, size, partition)
    shared = exact_shared(component)
    assert 0 < component.share <= 1 and float(np.exp(component.log_component).sum()) == pytest.approx(1, abs=1e-12)
    pmfs = [rqm_pmf_by_enumeration(mech.c, mech.delta, mech.m, mech.q, b) for b in points]
    for members in blocks.classes_of(partition, len(points)):
        for multiset in itertools.combinations_with_replacement(members, size):
            total = [F(1)]
            for b in multiset:
                total = convolve_fractions(total, pmfs[b])
            assert any(all(v <= (total[a + d] if 0 <= a + d < len(total) else 0) for d, v in enumerate(shared))
                       for a in range(-len(shared), len(total))), f"{mech!r} {multiset}"


def test_single_clients_give_the_common_component():
    mech = RQM(c=F(3, 2), delta=F(3, 2), m=16, q=F(21, 50))
    ours = blocks.block_component(float_pmfs(mech), 39, 1)
    share, component = secagg.common_component(mech)
    assert ours.blocks == 39 and ours.share == pytest.approx(float(share), rel=1e-8)
    assert np.exp(ours.log_component) == pytest.approx([float(v) for v in component], rel=1e-8, abs=1e-300)


def _d2_total(p: list[F], q: list[F]) -> F:
    """exp(D₂(P‖Q)) = Σ p²/q, exactly."""
    return sum(a * a / b for a, b in zip(p, q) if a > 0)


def _block_bound_d2(pmfs: dict, component: blocks.Component) -> F:
    """exp(D₂) of the theorem's bound, in fractions: max over ordered pairs of Σ_K w_K Σ p_K²/q_K."""
    shared = exact_shared(component)
    share = sum(shared)
    c = [v / share for v in shared]
    powers = [[F(1)]]
    for _ in range(component.blocks):
        powers.append(convolve_fractions(powers[-1], c))
    count = component.blocks
    weights = [math.comb(count, k) * share**k * (1 - share) ** (count - k) for k in range(count + 1)]
    return max(sum(w * _d2_total(convolve_fractions(pmfs[x], power), convolve_fractions(pmfs[y], power))
                   for w, power in zip(weights, powers))
               for x, y in itertools.permutations(pmfs, 2))


@pytest.mark.parametrize("c,delta,m,q,n,size,partition", [
    (F(1), F(1), 4, F(2, 5), 9, 2, blocks.PARTITIONS[0]),
    (F(1), F(1, 2), 3, F(3, 10), 10, 3, blocks.PARTITIONS[0]),
    (F(3, 4), F(1), 4, F(7, 10), 8, 2, blocks.PARTITIONS[0]),
    (F(1), F(1), 4, F(2, 5), 8, 2, blocks.PARTITIONS[1]),
    (F(1), F(1), 5, F(2, 5), 7, 3, blocks.PARTITIONS[2]),
])
def test_the_block_bound_is_above_the_exhaustive_maximum_in_fractions(c, delta, m, q, n, size, partition):
    """The theorem itself, exactly at α = 2: every multiset of the n − 1 others and every ordered
    pair, against the bound recomputed in fractions; and the engine's value of the bound."""
    mech = RQM(c=c, delta=delta, m=m, q=q)
    points = list(mech.breakpoints())
    pmfs = {x: rqm_pmf_by_enumeration(c, delta, m, q, x) for x in points}
    component = blocks.block_component(float_pmfs(mech), n - 1, size, partition)
    assert component.blocks > 0
    bound = _block_bound_d2(pmfs, component)
    worst = F(0)
    for multiset in itertools.combinations_with_replacement(points, n - 1):
        rest = [F(1)]
        for x in multiset:
            rest = convolve_fractions(rest, pmfs[x])
        worst = max(worst, *(_d2_total(convolve_fractions(pmfs[x], rest), convolve_fractions(pmfs[y], rest))
                             for x, y in itertools.permutations(points, 2)))
    assert worst <= bound
    engine = make_engine("fast")
    clients = [engine.client(mech, p) for p in points]
    rows = engine.powers(component.log_component, component.blocks)
    log_weights = staircase.log_binomial_weights(component.blocks, component.share)
    ours = -math.inf
    for i, j in itertools.permutations(range(len(points)), 2):
        per_k = np.array(engine.divergences_both(engine.add_client(clients[i], rows), engine.add_client(clients[j], rows),
                                                 [2.0])[0], dtype=float).reshape(-1, 1)
        ours = max(ours, staircase.mixed(per_k, log_weights, [2.0])[0])
    with mpmath.workdps(40):
        assert ours == pytest.approx(float(mpmath.log(mpmath.mpf(bound.numerator) / bound.denominator)), rel=1e-11)


@pytest.mark.parametrize("seed", range(6))
def test_the_block_bound_is_above_the_exhaustive_maximum_in_floats(seed):
    rng = random.Random(500 + seed)
    mech = random_rqm(rng)
    kinds = len(mech.breakpoints())
    n = rng.randint(2 * kinds + 1, 3 * kinds + 3)
    alphas = [1.0, 2.0, 10.0, math.inf]
    engine = make_engine("fast")
    exhaustive = secagg.search(mech, n, alphas, engine, budget=secagg.MAX_BUDGET)
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    log_pmfs = np.exp(np.array(clients))
    for size, partition in itertools.product((2, 3), blocks.PARTITIONS):
        component = blocks.block_component(log_pmfs, n - 1, size, partition)
        if component.blocks == 0:
            continue
        bound = staircase.Bound(engine, component.log_component, component.share, clients, component.blocks,
                                alphas[:-1], 0.005).values
        for alpha, value, upper in zip(alphas, exhaustive.values, bound):
            assert upper >= value * (1 - 1e-12), f"{mech!r} n={n} g={size} {partition} α={alpha}"


def test_blocks_tighten_the_headline_at_large_n_and_stay_above_what_is_found():
    """RQM's headline at n = 400: the block size chosen by the kept variance, a bound below the
    single-client component's and above the value of random and homogeneous configurations."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    n, alphas = 400, [1.0, 2.0, 10.0]
    engine = make_engine("fast")
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    chosen = secagg.others_component(mech, n - 1)
    assert chosen.size > 1 and chosen.kept_variance() > blocks.block_component(float_pmfs(mech), n - 1, 1).kept_variance()
    ours = secagg._MixtureBound(mech, n, alphas, engine, clients).bound()
    share, component = secagg.common_component(mech)
    single = staircase.Bound(engine, engine.from_mpmath(component), float(share), clients, n - 1, alphas, 0.0).values
    assert np.all(ours < single * 0.9)
    rng = random.Random(7)
    points = list(mech.breakpoints())
    for _ in range(6):  # random multisets, and all others at ±1.4 (the worst case found at n ≤ 100)
        counts = np.bincount(rng.choices(range(len(points)), k=n - 1), minlength=len(points))
        for trial in (counts, np.eye(len(points), dtype=int)[1] * (n - 1)):
            rest = secagg.multiset_sum(engine, clients, tuple(int(v) for v in trial))
            for i, j in ((0, len(points) - 1), (1, len(points) - 2), (0, 1)):
                forward, backward = engine.divergences_both(engine.add_client(clients[i], rest),
                                                            engine.add_client(clients[j], rest), alphas)
                assert np.all(np.maximum(np.ravel(forward), np.ravel(backward)) <= ours)


def test_the_mixture_bound_takes_the_smaller_reduction_per_pair_and_order():
    """The audit's m = 8 at n = 60 has two reductions (27 blocks of 2, 7 blocks of 8): the bound
    recomputed from its definition with numpy's linear convolutions and the textbook D_α — per reduction and ordered
    pair the Binomial(B, λ) mixture over K of D_α(P_x * C^{*K} ‖ P_x′ * C^{*K}), the smaller
    reduction per pair and order, the largest pair — is the module's value."""
    mech = RQM(c=F(3, 2), delta=F(3, 2), m=8, q=F(21, 50))
    n, alphas = 60, [1.0, 2.0, 10.0]
    engine = make_engine("fast")
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    ours = secagg._MixtureBound(mech, n, alphas, engine, clients)
    assert len(ours.components) == 2 and "the smaller at each order of" in ours.describe()
    linear = [np.exp(client) for client in clients]
    per_reduction = []
    for component in ours.components:
        weights = np.exp(staircase.log_binomial_weights(component.blocks, component.share))
        power, powers = np.ones(1), []
        for _ in range(component.blocks + 1):
            powers.append(power)
            power = np.convolve(power, np.exp(component.log_component))
        values = {}
        for i, j in itertools.permutations(range(len(clients)), 2):
            cells = np.array([[renyi_linear(np.convolve(linear[i], p), np.convolve(linear[j], p), a)
                               for a in alphas] for p in powers])
            values[i, j] = [float(weights @ cells[:, 0])] + [math.log(float(weights @ np.exp((a - 1) * cells[:, o])))
                                                           / (a - 1) for o, a in enumerate(alphas) if a != 1]
        per_reduction.append(values)
    expected = np.max([np.min([values[pair] for values in per_reduction], axis=0) for pair in per_reduction[0]], axis=0)
    assert ours.bound() == pytest.approx(expected, rel=1e-9)
    first_alone = np.max(list(per_reduction[0].values()), axis=0)
    assert np.all(expected <= first_alone) and np.any(expected < first_alone * 0.9)  # the second helps at low orders
