"""The certified worst case (rdpcalc.worstcase.certificate): every bound against the true maximum, computed
independently (brute force over every multiset by plain numpy convolutions, or in exact
fractions), and Theorem A against its own definition evaluated in exact fractions."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc.numerics import make_engine, trees
from rdpcalc.worstcase import certificate, secagg
from rdpcalc.worstcase.remembered import Remembered

from .oracles import convolve_fractions, renyi_float, rqm_pmf_by_enumeration

F = Fraction
ORDERS = (1.0, 1.5, 2.0, 3.5, 10.0)


def brute_force(pmfs: np.ndarray, others: int, alphas) -> np.ndarray:
    """max over ordered pairs of rows and every multiset of ``others`` rows of D_α, by
    np.convolve and the textbook formula (no trees, no kernels)."""
    best = np.full(len(alphas), -np.inf)
    for multiset in itertools.combinations_with_replacement(range(len(pmfs)), others):
        rest = np.array([1.0])
        for kind in multiset:
            rest = np.convolve(rest, pmfs[kind])
        totals = [np.convolve(row, rest) for row in pmfs]
        for x, x_prime in itertools.permutations(range(len(pmfs)), 2):
            values = [renyi_float(list(totals[x]), list(totals[x_prime]), alpha) for alpha in alphas]
            best = np.maximum(best, values)
    return best


def random_pmfs(rng: random.Random, kinds: int, outputs: int, spread: float = 3.0) -> np.ndarray:
    """Random full-support pmfs, each peaked somewhere (so that a common component exists)."""
    rows = []
    for _ in range(kinds):
        centre = rng.uniform(0, outputs - 1)
        row = np.array([math.exp(-abs(i - centre) * rng.uniform(0.3, spread)) + rng.uniform(0, 0.05)
                        for i in range(outputs)])
        rows.append(row / row.sum())
    return np.array(rows)


def everything(pmfs, clients, alphas=ORDERS, mirror=None) -> certificate.Problem:
    r = len(pmfs)
    return certificate.Problem(pmfs, tuple((i, j) for i in range(r) for j in range(i + 1, r)), tuple(alphas), mirror,
                               clients)


@pytest.mark.parametrize("seed", range(6))
def test_exhaustive_kernel_matches_brute_force(seed):
    rng = random.Random(seed)
    pmfs = random_pmfs(rng, rng.randint(2, 4), rng.randint(2, 5))
    clients = rng.randint(2, 5)
    alphas = (*ORDERS, math.inf)
    best = certificate.exhaustive(everything(pmfs, clients, alphas))
    expected = brute_force(pmfs, clients - 1, alphas)
    assert best.values == pytest.approx(expected, rel=1e-10)
    assert np.all(best.values >= expected)  # the margins are upward


@pytest.mark.parametrize("seed", range(4))
def test_one_walk_gives_the_maximum_of_every_size_asked(seed):
    """exhaustive_by_size: the multisets of each smaller size, bounded at the walk's nodes of
    their depth, give that size's maximum (brute force; mirror-symmetric pmfs half the time, so
    the mirror's skipped nodes are checked too), each with its own size's margins."""
    rng = random.Random(40 + seed)
    kinds = rng.randint(2, 5)
    pmfs = mirrored_pmfs(rng, kinds, rng.randint(2, 5), 0.5) if seed % 2 else random_pmfs(rng, kinds, rng.randint(2, 5))
    mirror = tuple(range(kinds))[::-1] if seed % 2 else None
    others = rng.randint(3, 7)
    sizes = sorted(rng.sample(range(others), rng.randint(1, 3))) + [others]
    alphas = (*ORDERS, math.inf)
    problem = everything(pmfs, others + 1, alphas, mirror)
    values = certificate.exhaustive_by_size(problem, sizes)
    for row, size in zip(values, sizes):
        expected = brute_force(pmfs, size, alphas)
        margins = np.array([certificate.rounding_margin(alpha, size + 1, pmfs.shape[1]) for alpha in alphas])
        assert row == pytest.approx(expected, rel=1e-10)
        assert np.all(row - margins <= expected * (1 + 1e-12) + 1e-15)
        assert np.all(row >= expected)


@pytest.mark.parametrize("kinds", [2, 4])
def test_the_kernels_maximum_does_not_depend_on_its_stripes_or_blocks(kinds):
    """The parallel kernel's tasks dealt to 1 or 3 stripes, their rows built in one block or in
    blocks of a single count c₀ (the least memory): the same largest bound per order, to the
    bit, attained by the same pair and count vector — and Theorem A's staircases (a cascade with
    residuals) as well as the plain enumeration."""
    rng = random.Random(7 + kinds)
    pmfs = random_pmfs(rng, kinds + 2, 5)
    exact = tuple(range(kinds))
    chosen = certificate.split(pmfs, exact, range(kinds, kinds + 2))
    problem = everything(pmfs, 9, (1.0, 2.0, 10.0, math.inf))
    kernels = trees.kernels()
    cascades = [(certificate._Cascade.single(), certificate._NO_RESIDUALS, np.array([1.0]), 8),
                (certificate._Cascade.make(3, chosen.share, certificate.PLANS),
                 certificate._residual_rows(chosen.residuals), chosen.component, 5)]
    for cascade, residuals, component, size in cascades:
        results = []
        for stripes, table_bytes in ((1, 2**30), (3, 2**30), (1, 1), (3, 1)):
            slot = np.full(size + 1, -1, dtype=np.int64)
            slot[size] = 0
            outputs = (np.full((size + 1, 4), -np.inf), np.full((size + 1, 4), -1, dtype=np.int64),
                       np.zeros((size + 1, 4, kinds), dtype=np.int64), slot)
            kernels._leaf_bounds(np.array([1.0]), np.ascontiguousarray(pmfs[list(exact)]), size,
                                 np.array([-1], dtype=np.int64), cascade.kernel_plan(component), residuals,
                                 problem.kernel_pairs(), problem.kernel_orders(None), outputs, trees.NO_PRUNING,
                                 stripes, table_bytes)
            best, where, counts, _ = outputs
            rows = np.argmax(best, axis=0)
            results.append((best.max(axis=0), where[rows, range(4)], counts[rows, range(4)]))
        for values, pairs, count_vectors in results[1:]:
            assert np.array_equal(values, results[0][0])
            assert np.all(np.isfinite(values))
            # the bound attained by the same leaf and pair (a tie could move it: the random pmfs make none)
            assert np.array_equal(pairs, results[0][1]) and np.array_equal(count_vectors, results[0][2])


def test_the_leaf_terms_of_one_direction_are_those_of_both_and_the_backward_is_the_swapped_forward():
    """A directed problem's kernel skips the backward sums: its forward values are those computed
    with both directions, to the bit, its backward +inf (never a false bound); and with both,
    the backward direction is the forward one of the rows swapped — with entries that underflowed
    in one row only (bounded through ρ)."""
    kernels = trees.kernels()
    rng = np.random.default_rng(3)
    tx, ty = rng.random(40), rng.random(40)
    tx[5], ty[9] = 0.0, 0.0
    ty *= tx.sum() / ty.sum()
    alphas = np.array([1.0, 1.05, 1.25, 3.0, math.inf])
    codes, roots, powers = trees.order_codes(alphas)
    rho = (float(np.max(tx[ty > 0] / ty[ty > 0])) * 2, float(np.max(ty[tx > 0] / tx[tx > 0])) * 2)

    def terms(a, b, rho_ab, rho_ba, both):
        forward, backward = np.zeros(5), np.zeros(5)
        kernels._log_f_terms(a, b, 40, alphas, codes, roots, powers, rho_ab, rho_ba, both, forward, backward)
        return forward, backward

    forward, backward = terms(tx, ty, *rho, True)
    alone, unused = terms(tx, ty, *rho, False)
    swapped, _ = terms(ty, tx, rho[1], rho[0], True)
    assert np.array_equal(alone, forward) and np.all(unused == np.inf)
    assert np.all(np.isfinite(forward)) and backward == pytest.approx(swapped, rel=1e-13)


@pytest.mark.parametrize("seed", range(12))
def test_theorem_a_is_above_the_exhaustive_maximum_for_every_split(seed):
    """Random pmfs (not even a mechanism's), every split of them into exact and soft groups,
    every order: Theorem A never falls below the true maximum."""
    rng = random.Random(100 + seed)
    kinds = rng.randint(3, 5)
    pmfs = random_pmfs(rng, kinds, rng.randint(3, 6))
    clients = rng.randint(2, 6)
    problem = everything(pmfs, clients)
    truth = brute_force(pmfs, clients - 1, ORDERS)
    for size in range(1, kinds - 1):
        for exact in itertools.combinations(range(kinds), size):
            soft = [i for i in range(kinds) if i not in exact]
            chosen = certificate.split(pmfs, exact, soft)
            bound = certificate.theorem_a(problem, chosen, np.full(len(ORDERS), -np.inf))
            assert np.all(bound >= truth * (1 - 1e-12)), (exact, bound, truth)


def node_maxima(pmfs: np.ndarray, problem: certificate.Problem, exact: tuple[int, ...]) -> dict:
    """Per node of a split with the exact group ``exact`` (its count vector over the group), the
    largest value in the kernel's units ((α − 1)·D_α; KL and D_∞ as they are) over the node's
    multisets of the others and both directions of ``problem``'s pairs, by brute force."""
    out: dict = {}
    for multiset in itertools.combinations_with_replacement(range(len(pmfs)), problem.others):
        rest = np.array([1.0])
        for kind in multiset:
            rest = np.convolve(rest, pmfs[kind])
        node = tuple(multiset.count(kind) for kind in exact)
        for pair in problem.pairs:
            for x, y in (pair, pair[::-1]):
                p, q = list(np.convolve(pmfs[x], rest)), list(np.convolve(pmfs[y], rest))
                values = [renyi_float(p, q, alpha) * (1 if alpha in (1, math.inf) else alpha - 1)
                          for alpha in problem.alphas]
                out[node] = np.maximum(out.get(node, -np.inf), values)
    return out


def node_row(node: tuple[int, ...], others: int) -> int:
    return sum(count * (others + 1) ** i for i, count in enumerate(node))


@pytest.mark.parametrize("mirrored", [False, True])
def test_a_refinement_computes_only_the_nodes_its_coarser_split_leaves_open(mirrored):
    """Theorem A on a finer split (its exact group a superset) given the coarser split's node
    bounds, the targets at the true maximum: every node it records bounds that node's
    brute-force maximum; some nodes are taken from the coarser split, others computed as without
    it, some of them (the second pass) under coarser nodes within the targets; the split's bound
    is at or below the one every node computed gives, at or above the true maximum; and the share
    of the finer nodes under coarser nodes above the targets is :meth:`Nodes.open_share`'s."""
    rng = random.Random(900 + mirrored)
    alphas = (1.0, 2.0, 10.0, math.inf)
    if mirrored:
        pmfs, mirror = mirrored_pmfs(rng, 6, 8, 0.9), (5, 4, 3, 2, 1, 0)
        coarse, fine = (0, 5), (0, 1, 4, 5)
        problem = certificate.Problem(pmfs, ((0, 4), (1, 5)), alphas, mirror, 6)
    else:
        pmfs, mirror = random_pmfs(rng, 5, 5), None
        coarse, fine = (0, 4), (0, 1, 4)
        problem = everything(pmfs, 6, alphas)
    soft = lambda exact: [i for i in range(len(pmfs)) if i not in exact]  # noqa: E731
    truth = node_maxima(pmfs, problem, fine)
    largest = np.max(list(truth.values()), axis=0) / certificate._scale(alphas)
    room = certificate.NODES_BYTES
    full, everyone = certificate.refined(problem, certificate.split(pmfs, fine, soft(fine)), largest, room=room)
    _, coarser = certificate.refined(problem, certificate.split(pmfs, coarse, soft(coarse)), largest, room=room)
    pruned, nodes = certificate.refined(problem, certificate.split(pmfs, fine, soft(fine)), largest, coarser=coarser,
                                        room=room)
    within = coarser.at_most(problem.kernel_orders(largest)[-1])
    taken = computed = second = 0
    for node, value in truth.items():
        row = nodes.bounds[node_row(node, problem.others)]
        assert np.all(row >= value - 1e-12 * np.abs(value)), (node, row, value)
        covering = node_row(tuple(node[fine.index(b)] for b in coarse), problem.others)
        if np.array_equal(row, everyone.bounds[node_row(node, problem.others)]):
            computed += 1
            second += bool(within[covering])
        else:
            taken += np.array_equal(row, coarser.bounds[covering])
    assert taken > 0 and computed > 0 and second > 0, (taken, computed, second)
    assert np.all(pruned <= full)
    assert np.all(pruned >= largest * (1 - 1e-12))
    opened = [node for node in truth
              if not within[node_row(tuple(node[fine.index(b)] for b in coarse), problem.others)]]
    assert 0 < len(opened) < len(truth)
    share = coarser.open_share(problem.kernel_orders(largest)[-1], problem.others, len(fine))
    assert share == pytest.approx(len(opened) / len(truth), rel=1e-12)


def test_theorem_a_takes_the_option_of_least_estimated_work_and_estimates_again_on_new_node_bounds():
    """The queue of Theorem A's options: without node bounds to reuse, the least cost first (of
    equal costs, the larger common component); once the class keeps a coarser split's node
    bounds, a finer split's estimate is its cost times the share of nodes they leave open, and a
    stale estimate is never taken."""
    pmfs = random_pmfs(random.Random(5), 5, 6)
    entry = certificate._Class(((0, 4),), None, 1)
    soft = lambda exact: [i for i in range(5) if i not in exact]  # noqa: E731
    small, large = certificate.split(pmfs, (0, 4), soft((0, 4))), certificate.split(pmfs, (0, 1, 4), soft((0, 1, 4)))
    queue = certificate._Queue([entry], np.array([0.5]), 6)
    queue.push(1000, 0, -1, large)
    queue.push(100, 0, -1, small)
    assert queue.pop() == (100, 0, -1, small)
    bounds = np.full((7**2, 1), np.inf)
    for d0, d4 in itertools.product(range(7), repeat=2):
        if d0 + d4 <= 6:
            bounds[d0 + 7 * d4] = 1.0 if (d0, d4) == (0, 0) else 0.0  # open: the node with no other at 0 or 4
    entry.nodes.append((-1, certificate.Nodes((0, 4), bounds)))
    queue.kept_bounds(0)
    share = math.comb(6 + 1, 1) / math.comb(6 + 3, 3)  # the finer nodes under (0, 0): one more exact breakpoint
    assert entry.nodes[0][1].open_share(np.array([0.5]), 6, 3) == pytest.approx(share)
    [(estimate, *_)] = [item for item in queue.heap if item[-1] == queue.versions[0]]
    assert estimate == pytest.approx(1000 * share)
    assert queue.pop() == (1000, 0, -1, large) and queue.pop() is None
    other = certificate.split(pmfs, (0, 2, 4), soft((0, 2, 4)))
    tighter, looser = sorted((large, other), key=lambda chosen: -chosen.share)
    assert tighter.share > looser.share
    queue = certificate._Queue([certificate._Class(((0, 4),), None, 1)], np.array([0.5]), 6)
    queue.push(1000, 0, -1, looser)
    queue.push(1000, 0, -1, tighter)
    assert queue.pop()[-1] is tighter and queue.pop()[-1] is looser


def test_refinement_leaves_the_certificate_where_every_node_computed_puts_it(monkeypatch):
    """RQM (c, 0.42) at n = 20, α = 2 and 10 (its classes refined by finer exact groups): the
    certificate with the coarser splits' node bounds is at or below the one computing every node,
    and at or above the value found."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    [two, ten] = rdpcalc.divergence(mech, n=20, alphas=[2, 10])
    assert "per direction of a pair" in two["certificate"]
    monkeypatch.setattr(certificate._Class, "coarser", lambda self, direction, exact: None)
    monkeypatch.setattr(certificate, "_memory", Remembered(certificate._REMEMBERED))
    [two_all, ten_all] = rdpcalc.divergence(mech, n=20, alphas=[2, 10])
    for record, everywhere in ((two, two_all), (ten, ten_all)):
        assert record["divergence"] <= record["certified_upper"] <= everywhere["certified_upper"]


def brute_force_direction(pmfs: np.ndarray, others: int, alphas, x: int, y: int) -> np.ndarray:
    """max over every multiset of ``others`` rows of D_α(P_x * R ‖ P_y * R), one direction, by
    np.convolve and the textbook formula."""
    best = np.full(len(alphas), -np.inf)
    for multiset in itertools.combinations_with_replacement(range(len(pmfs)), others):
        rest = np.array([1.0])
        for kind in multiset:
            rest = np.convolve(rest, pmfs[kind])
        p, q = np.convolve(pmfs[x], rest), np.convolve(pmfs[y], rest)
        best = np.maximum(best, [renyi_float(list(p), list(q), alpha) for alpha in alphas])
    return best


def mirrored_pmfs(rng: random.Random, kinds: int, outputs: int, shared: float) -> np.ndarray:
    """Random full-support pmfs closed under the mirror map (kind b ↦ kinds − 1 − b, output i ↦
    outputs − 1 − i), each a common shape shifted by its kind, of mass ``shared``, plus noise."""
    shape = random_pmfs(rng, 1, 3)[0]
    rows = []
    for kind in range((kinds + 1) // 2):
        row = np.zeros(outputs)
        start = round(kind * (outputs - 3) / max(1, kinds - 1))
        row[start : start + 3] = shared * shape
        row += (1 - shared) * random_pmfs(rng, 1, outputs)[0]
        rows.append(row)
    if kinds % 2:
        rows[-1] = (rows[-1] + rows[-1][::-1]) / 2
    rows += [row[::-1] for row in reversed(rows[: kinds // 2])]
    return np.array(rows)


@pytest.mark.parametrize("seed", range(4))
def test_one_direction_at_a_time_is_the_kernels_two_directions(seed):
    """The kernel with each pair's forward direction only (a directed Problem): with one
    staircase, the larger of the two directions evaluated apart is the value of both together
    (up to rounding) for Theorem A's nodes, and the enumeration of one direction is its brute
    force."""
    rng = random.Random(400 + seed)
    pmfs = random_pmfs(rng, 4, 4)
    chosen = certificate.split(pmfs, (0, 1), (2, 3))
    alphas = (1.0, 2.0, 10.0, math.inf)
    for x, y in ((0, 1), (0, 3), (2, 3)):
        both = certificate.Problem(pmfs, ((x, y),), alphas, None, 6)
        forward = certificate.Problem(pmfs, ((x, y),), alphas, None, 6, directed=True)
        backward = certificate.Problem(pmfs, ((y, x),), alphas, None, 6, directed=True)
        for plans in (certificate.PLANS[:1], certificate.PLANS[-1:]):
            none = np.full(len(alphas), -np.inf)
            apart = np.maximum(certificate.theorem_a(forward, chosen, none, plans),
                               certificate.theorem_a(backward, chosen, none, plans))
            # equal up to rounding: the backward direction's terms are computed as forward ones
            assert apart == pytest.approx(certificate.theorem_a(both, chosen, none, plans), rel=1e-12)
        assert certificate.exhaustive(forward).values == pytest.approx(
            brute_force_direction(pmfs, 5, alphas, x, y), rel=1e-10)


@pytest.mark.parametrize("kinds", [4, 5])
def test_the_directions_of_a_mirror_class_cover_it(kinds):
    """For mirror-symmetric pmfs, the maximum over every multiset of the forward direction of the
    pairs :func:`certificate.directions` names is the maximum over both directions of every
    member of the class (the class itself evaluated with one of each mirror pair of multisets),
    and both are the brute-force maximum."""
    rng = random.Random(500 + kinds)
    pmfs = mirrored_pmfs(rng, kinds, 7, 0.8)
    mirror = tuple(range(kinds))[::-1]
    alphas = (1.0, 2.0, 10.0, math.inf)
    pairs = tuple((i, j) for i in range(kinds) for j in range(i + 1, kinds))
    for members in certificate.mirror_classes(pairs, mirror):
        together = certificate.exhaustive(certificate.Problem(pmfs, members, alphas, mirror, 5)).values
        apart = np.max([certificate.exhaustive(certificate.Problem(pmfs, (pair,), alphas, None, 5, directed=True)).values
                        for pair in certificate.directions(members, mirror)], axis=0)
        truth = np.max([brute_force_direction(pmfs, 4, alphas, x, y) for pair in members
                        for x, y in (pair, pair[::-1])], axis=0)
        assert apart == pytest.approx(together, rel=1e-12)
        assert together == pytest.approx(truth, rel=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_theorem_a_for_one_direction_is_above_its_maximum(seed):
    """Random pmfs, every ordered pair, every exact group: Theorem A on that direction alone never
    falls below that direction's maximum over every multiset of the others."""
    rng = random.Random(600 + seed)
    kinds = rng.randint(3, 4)
    pmfs = random_pmfs(rng, kinds, rng.randint(3, 5))
    clients = rng.randint(3, 5)
    for x, y in itertools.permutations(range(kinds), 2):
        problem = certificate.Problem(pmfs, ((x, y),), ORDERS, None, clients, directed=True)
        truth = brute_force_direction(pmfs, clients - 1, ORDERS, x, y)
        for size in range(1, kinds - 1):
            for exact in itertools.combinations(range(kinds), size):
                chosen = certificate.split(pmfs, exact, [i for i in range(kinds) if i not in exact])
                bound = certificate.theorem_a(problem, chosen, np.full(len(ORDERS), -np.inf))
                assert np.all(bound >= truth * (1 - 1e-12)), ((x, y), exact, bound, truth)


@pytest.mark.parametrize("seed", range(4))
def test_certify_with_exact_groups_per_direction_stays_above_the_maximum(seed):
    """Mirror-symmetric random pmfs with a large common component, at n = 6 with Theorem A forced
    (no enumeration budget) and asked to close the bracket (tolerance 0): the classes that the
    mirror-closed groups leave open get exact groups per direction, and the certificate stays at
    or above the brute-force maximum at every order."""
    rng = random.Random(700 + seed)
    kinds = 6
    pmfs = mirrored_pmfs(rng, kinds, 9, 0.95)
    mirror = tuple(range(kinds))[::-1]
    alphas = (1.0, 2.0, 10.0)
    truth = brute_force(pmfs, 5, alphas)
    result = certificate.certify(pmfs, mirror, 6, alphas, truth, budget=1, tolerance=0.0)
    assert "per direction of a pair" in result.text
    assert np.all(result.upper >= truth * (1 - 1e-12)), (result.upper, truth)


def test_theorem_a_with_every_residual_is_its_definition_in_exact_fractions():
    """RQM c = Δ = 1, m = 4, q = 1/3, n = 3, α = 2: exact group ±1, soft group ±2/3 (the
    interior levels). Theorem A with every residual multiset (no staircase) computed in
    fractions from its definition — the common component, the residuals, the binomial
    mixture, the maximum over every node and pair — equals the kernel's value, and lies above
    the exact worst case."""
    c, delta, m, q, clients = F(1), F(1), 4, F(1, 3), 3
    mech = rdpcalc.make_mechanism("rqm", c=c, delta=delta, m=m, q=q)
    points = list(mech.breakpoints())
    assert points == [-1, F(-2, 3), F(2, 3), 1]
    exact_pmfs = [rqm_pmf_by_enumeration(c, delta, m, q, x) for x in points]
    exact_group, soft_group = [0, 3], [1, 2]
    modes = [max(range(m), key=lambda i, p=exact_pmfs[b]: p[i]) for b in soft_group]
    offsets = range(-max(modes), m - min(modes))
    shared = {d: min(exact_pmfs[b][mode + d] if 0 <= mode + d < m else F(0) for b, mode in zip(soft_group, modes))
              for d in offsets}
    share = sum(shared.values())
    component = [shared[d] / share for d in offsets]
    residuals = []
    for b, mode in zip(soft_group, modes):
        rest = list(exact_pmfs[b])
        for d in offsets:
            if 0 <= mode + d < m:
                rest[mode + d] -= shared[d]
        residuals.append([value / (1 - share) for value in rest])
    assert all(value >= 0 for row in residuals for value in row)

    def power(row, count):
        out = [F(1)]
        for _ in range(count):
            out = convolve_fractions(out, row)
        return out

    def f2(p, q_):
        return sum(a * a / b for a, b in zip(p, q_) if a)

    best = F(0)
    for k in range(clients):
        for d in itertools.combinations_with_replacement(exact_group, clients - 1 - k):
            rest_d = [F(1)]
            for b in d:
                rest_d = convolve_fractions(rest_d, exact_pmfs[b])
            for x, x_prime in itertools.permutations(range(len(points)), 2):
                total = F(0)
                for j in range(k + 1):
                    weight = math.comb(k, j) * (1 - share) ** j * share ** (k - j)
                    values = []
                    for residual_multiset in itertools.combinations_with_replacement(range(2), j):
                        row = convolve_fractions(rest_d, power(component, k - j))
                        for a in residual_multiset:
                            row = convolve_fractions(row, residuals[a])
                        values.append(f2(convolve_fractions(exact_pmfs[x], row), convolve_fractions(exact_pmfs[x_prime], row)))
                    total += weight * max(values)
                best = max(best, total)
    with mpmath.workdps(40):
        expected = float(mpmath.log(mpmath.mpf(best.numerator) / best.denominator))
    pmfs = np.array([[float(v) for v in row] for row in exact_pmfs])
    chosen = certificate.split(pmfs, exact_group, soft_group)
    assert chosen.share == pytest.approx(float(share), rel=1e-15)
    problem = certificate.Problem(pmfs, ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)), (2.0,), (3, 2, 1, 0), clients)
    bound = certificate.theorem_a(problem, chosen, np.array([-np.inf]))
    assert bound[0] == pytest.approx(expected, rel=1e-12)
    assert bound[0] >= expected
    truth = brute_force(pmfs, clients - 1, (2.0,))
    assert expected >= truth[0] * (1 - 1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_theorem_b_bounds_every_larger_n(seed):
    """W_n(∞) ≤ W_{n′}(∞) for n′ < n: the exhaustive value at fewer others is above the true
    maximum at more."""
    rng = random.Random(200 + seed)
    pmfs = random_pmfs(rng, 3, 4)
    for clients in (3, 4, 5):
        problem = everything(pmfs, clients, (math.inf,))
        value, _ = certificate.theorem_b(problem, -math.inf, budget=certificate.multisets(1, 3))
        assert value >= brute_force(pmfs, clients - 1, (math.inf,))[0] * (1 - 1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_orders_whose_f_alpha_would_overflow_are_capped_by_d_infinity(seed):
    """Pmfs with a likelihood ratio near e^20: at α = 40 and 60, (α − 1)·log ρ is past float64's
    e^709, so Theorem A is not run there (it could only give +∞) and Theorem B's D_∞ caps them,
    though ∞ is not asked. The bound stays finite and above the true maximum at every order."""
    rng = random.Random(300 + seed)
    pmfs = random_pmfs(rng, 3, 4)
    pmfs[0] = np.array([1 - 3e-9, 1e-9, 1e-9, 1e-9])
    pmfs[2] = pmfs[0][::-1]
    alphas = (2.0, 40.0, 60.0)
    clients = 5
    truth = np.full(len(alphas), -np.inf)  # brute force in the log domain (the float formula overflows here)
    for multiset in itertools.combinations_with_replacement(range(3), clients - 1):
        rest = np.array([1.0])
        for kind in multiset:
            rest = np.convolve(rest, pmfs[kind])
        logs = [np.log(np.convolve(row, rest)) for row in pmfs]
        for x, x_prime in itertools.permutations(range(3), 2):
            truth = np.maximum(truth, [float(mpmath.log(mpmath.fsum(mpmath.exp(alpha * a + (1 - alpha) * b)
                                                                    for a, b in zip(logs[x], logs[x_prime]))))
                                       / (alpha - 1) for alpha in alphas])
    assert (60 - 1) * math.log(float(np.max(certificate.ratio_bounds(pmfs, [(0, 2)])))) > certificate.OVERFLOW_EXPONENT
    result = certificate.certify(pmfs, None, clients, alphas, truth, budget=certificate.multisets(2, 3))
    assert np.all(np.isfinite(result.upper))
    assert np.all(result.upper >= truth * (1 - 1e-12))
    assert "would overflow" in result.text


def test_underflow_is_bounded_not_dropped():
    """RQM with q = 1 − 10⁻⁶: at n = 40 the sum's smallest entries are far below float64's range
    (1e-308), so the kernel's linear rows underflow there. Its value (margins included) must
    stay above the log-domain engine's, and close to it."""
    mech = rdpcalc.make_mechanism("rqm", c="1", delta="1", m=6, q=1 - F(1, 10**6))
    engine = make_engine("fast")
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    n, last = 40, len(clients) - 1
    rest = engine.level(clients[1], clients[1], n - 1, [n - 1])
    assert float(np.min(rest[rest > -np.inf])) < -800  # entries below e^-800 ≈ 1e-348
    forward, backward = engine.divergences_both(engine.add_client(clients[0], rest),
                                                engine.add_client(clients[last], rest), [2.0, 10.0])
    truth = np.maximum(np.array(forward[0], dtype=float), np.array(backward[0], dtype=float))
    problem = certificate.Problem(np.exp(np.array(clients)), ((0, last),), (2.0, 10.0), None, n)
    kernel = certificate.homogeneous(problem)[1] + problem.margins()
    assert np.all(kernel >= truth * (1 - 1e-12))
    assert kernel == pytest.approx(truth, rel=1e-9)


def test_search_certificates_are_above_a_local_search():
    """RQM (c = Δ = 1, m = 8, q = 0.4) at n = 24: random-restart coordinate ascent over the
    others' multisets (independent of the search) never rises above the certified bound."""
    mech = rdpcalc.make_mechanism("rqm", c="1", delta="1", m=8, q="2/5")
    alphas = [1, 2, 10, math.inf]
    n = 24
    records = rdpcalc.divergence(mech, n=n, alphas=alphas)
    engine = make_engine("fast")
    points = list(mech.breakpoints())
    clients = [engine.client(mech, p) for p in points]
    rng = random.Random(7)

    def value(counts, alpha):
        rest = secagg.multiset_sum(engine, clients, counts)
        best = -math.inf
        for x, y in itertools.permutations(range(len(points)), 2):
            p, q = engine.add_client(clients[x], rest), engine.add_client(clients[y], rest)
            best = max(best, float(engine.divergences_both(p, q, [alpha])[0][0][0]))
        return best

    for record, alpha in zip(records, alphas):
        for _ in range(2):
            counts = [0] * len(points)
            for _ in range(n - 1):
                counts[rng.randrange(len(points))] += 1
            current = value(counts, alpha)
            for _ in range(6):
                moves = [(i, j) for i in range(len(points)) for j in range(len(points)) if i != j and counts[i]]
                i, j = rng.choice(moves)
                trial = list(counts)
                trial[i] -= 1
                trial[j] += 1
                trial_value = value(trial, alpha)
                if trial_value > current:
                    counts, current = trial, trial_value
            assert current <= record["certified_upper"] * (1 + 1e-12)


def test_headline_certificate_is_within_one_percent():
    """RQM c = Δ = 1.5, m = 16, q = 0.42 at n = 40 (the issue's headline): the bracket closes to
    within 1 % at α = 2 and 10 and ∞."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    for record in rdpcalc.divergence(mech, n=40, alphas=[2, 10, "inf"]):
        assert record["divergence"] <= record["certified_upper"] <= record["divergence"] * 1.01, record


def test_exact_engine_values_lie_in_the_fast_certificate():
    mech = rdpcalc.make_mechanism("rqm", c="1", delta="1", m=6, q="2/5")
    for fast_record, exact_record in zip(rdpcalc.divergence(mech, n=14, alphas=[2, 10]),
                                         rdpcalc.divergence(mech, n=14, alphas=[2, 10], engine="exact", dps=30)):
        assert exact_record["divergence"] <= fast_record["certified_upper"] * (1 + 1e-12)
        assert exact_record["divergence"] == pytest.approx(fast_record["divergence"], rel=1e-11)


def test_rqm_at_n_20_reaches_the_tolerance_with_a_larger_exact_group():
    """RQM (c, 0.42) at n = 20: the two edge breakpoints leave client-1 pair classes above the
    tolerance at α = 2; exact groups of three breakpoints, one per direction of those pairs (the
    edges and the worst breakpoint of that direction, λ = 0.968), bring every class within it,
    and the text says so."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    [record] = rdpcalc.divergence(mech, n=20, alphas=[2])
    assert record["divergence"] <= record["certified_upper"] <= record["divergence"] * (1 + certificate.TOLERANCE)
    assert "2 exact + 8 soft breakpoints, λ = 0.9576; 3 exact + 7 soft breakpoints per direction of a pair, " \
           "λ = 0.9677" in record["certificate"]
    assert "every node within 0.5% of the value found" in record["certificate"]


def test_the_text_says_which_limit_kept_theorem_a_from_the_tolerance(monkeypatch):
    """With a work limit too small for the exact groups of every direction that needs one, the
    certificate is wider and its text names the classes left, the split's cost and the limit
    (never 'within')."""
    monkeypatch.setattr(certificate, "THEOREM_A_WORK", 100_000)
    # neither reuse nor leave a certificate of the smaller limit
    monkeypatch.setattr(certificate, "_memory", Remembered(certificate._REMEMBERED))
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    [record] = rdpcalc.divergence(mech, n=20, alphas=[2])
    assert record["certified_upper"] > record["divergence"] * (1 + certificate.TOLERANCE)
    assert "client-1 pair classes not within 0.5% of the value found: the next split needs" in record["certificate"]
    assert "more than the work limit 1e+05 leaves" in record["certificate"]
    assert "every node within" not in record["certificate"]


def test_certify_within_zero_closes_the_bracket_at_n_20():
    """RQM (c, 0.42) at n = 20 with ``certify_within`` 0: every node of Theorem A is refined until
    it is at most the value found, and the certified bound meets the value found (up to the
    rounding margin) at α = 2 and 10: the configuration found is the worst case."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    records = rdpcalc.divergence(mech, n=20, alphas=[2, 10], choose=rdpcalc.NeighbourOptions(certify_within=0))
    for record in records:
        assert record["divergence"] <= record["certified_upper"] <= record["divergence"] * (1 + 1e-12)
    assert "every node at most the value found (up to rounding)" in records[0]["certificate"]


@pytest.mark.parametrize("value", [-0.1, 0.6, float("nan"), "0.6", "a tenth", True])
def test_certify_within_is_checked(value):
    """Refused out of [0, 0.5] or not a number; a decimal text is read as the number it spells,
    as every declared option is (rdpcalc.params.Param)."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    with pytest.raises(rdpcalc.ParameterError, match=r"^certify_within: must be a number in \[0, 0.5\]"):
        rdpcalc.divergence(mech, n=20, alphas=[2], choose=rdpcalc.NeighbourOptions(certify_within=value))
