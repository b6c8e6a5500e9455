"""The others' common component on a staircase of K (rdpcalc.worstcase.staircase): monotone in
K, above the bound over every K and within the tolerance of it, above the exhaustive maximum,
recomputed from its definition in the linear domain, and what certified_upper falls back to
where the search does not fit in memory."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import numpy as np
import pytest

from rdpcalc import resources
from rdpcalc.mechanisms import RQM
from rdpcalc.numerics import make_engine
from rdpcalc.worstcase import secagg, staircase

from .oracles import renyi_linear


def random_rqm(rng: random.Random) -> RQM:
    return RQM(c=F(rng.randint(1, 8), 4), delta=F(rng.randint(1, 8), 4), m=rng.randint(3, 9), q=F(rng.randint(1, 9), 10))


def parts(mech: RQM, n: int):
    """(engine, clients, λ, log C, the count of K's trials): the component the bounds reduce the
    n − 1 others to (single clients or homogeneous blocks, secagg.others_component)."""
    engine = make_engine("fast")
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    component = secagg.others_component(mech, n - 1)
    return engine, clients, component.share, component.log_component, component.blocks


def every_k_bound(engine, clients, share, component, count, alphas) -> np.ndarray:
    """The bound over every K of the component (no staircase): max over ordered pairs of the mixture."""
    rows = engine.powers(component, count)
    log_weights = staircase.log_binomial_weights(count, share)
    totals = [engine.add_client(client, rows) for client in clients]
    out = np.full(len(alphas), -np.inf)
    for i in range(len(clients)):
        for j in range(i + 1, len(clients)):
            for values in engine.divergences_both(totals[i], totals[j], alphas):
                per_k = np.array(values, dtype=float).reshape(count + 1, len(alphas))
                out = np.maximum(out, staircase.mixed(per_k, log_weights, alphas))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_divergence_is_non_increasing_in_k(seed):
    """The fact the staircase rests on: adding C to both laws (data processing)."""
    mech = random_rqm(random.Random(seed))
    engine, clients, share, component, _ = parts(mech, 13)
    sums = staircase._Sums(engine, component, clients)
    for alpha in (1.0, 2.0, 10.0):
        values = [engine.divergences_both(sums.total(0, k)[None], sums.total(len(clients) - 1, k)[None], [alpha])[0][0][0]
                  for k in range(12)]
        assert all(b <= a * (1 + 1e-12) + 1e-15 for a, b in zip(values, values[1:])), values


@pytest.mark.parametrize("seed", range(6))
def test_staircase_is_above_the_bound_over_every_k_and_within_its_tolerance(seed):
    rng = random.Random(100 + seed)
    mech, n = random_rqm(rng), rng.randint(30, 120)
    alphas = [1.0, 1.5, 2.0, 10.0]
    engine, clients, share, component, count = parts(mech, n)
    every_k = every_k_bound(engine, clients, share, component, count, alphas)
    tolerance = 0.01
    bound = staircase.Bound(engine, component, share, clients, count, alphas, tolerance)
    assert bound.grid[0] == 0 and bound.grid == sorted(set(bound.grid)) and bound.grid[-1] == count
    for alpha, full, stair in zip(alphas, every_k, bound.values):
        assert full * (1 - 1e-10) <= stair <= full * (1 + tolerance) + 1e-12, f"{mech!r} n={n} α={alpha}"


@pytest.mark.parametrize("seed", range(4))
def test_staircase_is_above_the_exhaustive_maximum(seed):
    rng = random.Random(300 + seed)
    mech, n = random_rqm(rng), rng.randint(3, 6)
    alphas = [1.0, 2.0, 10.0]
    exhaustive = secagg.search(mech, n, alphas, make_engine("fast"), budget=secagg.MAX_BUDGET)
    engine, clients, share, component, count = parts(mech, n)
    bound = staircase.Bound(engine, component, share, clients, count, alphas, 0.005)
    for alpha, value, upper in zip(alphas, exhaustive.values, bound.values):
        assert upper >= value * (1 - 1e-12), f"{mech!r} n={n} α={alpha}"


def test_staircase_recomputed_from_its_definition_in_the_linear_domain():
    """Every pair, every K of the grid, by numpy's linear convolutions; each cell at its left end;
    the maximum over the pairs and directions: the module's value (which rules pairs out)."""
    mech, n = RQM(c=F(3, 2), delta=F(3, 2), m=8, q=F(21, 50)), 60
    alphas = [1.0, 2.0, 5.0]
    engine, clients, share, component, count = parts(mech, n)
    bound = staircase.Bound(engine, component, share, clients, count, alphas, 0.005)
    linear = [np.exp(client) for client in clients]
    power = {0: np.ones(1)}
    for k in range(1, count + 1):
        power[k] = np.convolve(power[k - 1], np.exp(component))
    weights = np.exp(staircase.cell_log_weights(staircase.log_binomial_weights(count, share), bound.grid))
    expected = np.full(len(alphas), -np.inf)
    for i in range(len(clients)):
        for j in range(len(clients)):
            if i == j:
                continue
            cells = np.array([[renyi_linear(np.convolve(linear[i], power[k]), np.convolve(linear[j], power[k]), a)
                               for a in alphas] for k in bound.grid])
            expected = np.maximum(expected, [float(weights @ cells[:, 0])] + [
                math.log(float(weights @ np.exp((a - 1) * cells[:, o]))) / (a - 1)
                for o, a in enumerate(alphas) if a != 1])
    assert bound.values == pytest.approx(expected, rel=1e-9)
    assert bound.evaluated < bound.pairs


def test_certified_upper_falls_back_to_the_staircase_where_the_search_does_not_fit():
    mech, n = RQM(c=F(3, 2), delta=F(3, 2), m=8, q=F(21, 50)), 80
    alphas = [1.0, 2.0, 10.0, math.inf]
    engine = make_engine("fast")
    found = secagg.search(mech, n, alphas, engine, certify=False).values
    needed = sum(cost.bytes for cost in secagg.search_costs(mech, n, len(alphas)))
    with resources.budget_of(int(needed * 0.6)):
        upper, text = secagg.certified_upper(mech, n, alphas, engine)
    assert "staircase" in text and "exhaustive over" in text
    assert "(the search does not fit: it needs about" in text and "over the budget of" in text
    every_k = every_k_bound(*parts(mech, n), alphas[:-1])
    for alpha, value, bound in zip(alphas, found, upper):
        assert bound >= value, f"α={alpha}"
    for full, bound in zip(every_k, upper):
        assert bound <= full * (1 + 0.005) + 1e-12


def test_per_round_pld_drops_the_common_component_where_it_does_not_fit():
    """Data processing alone (a valid family, looser): δ at least the found configurations'."""
    from rdpcalc.worstcase import dominating

    mech, n = RQM(c=F(3, 2), delta=F(3, 2), m=8, q=F(21, 50)), 80
    needed = sum(cost.bytes for cost in secagg.search_costs(mech, n, 1))
    with resources.budget_of(int(needed * 0.6)):
        fallback = dominating.per_round_pld(mech, n)
    full = dominating.per_round_pld(mech, n)
    found = dominating.per_round_pld(mech, n, "found")
    assert "common component left out, as the search does not fit (it needs about" in fallback.family
    assert "common component" in full.family and "(λ = " in full.family
    assert fallback.certified
    for eps in (0.0, 0.5, 1.0, 2.0):
        delta = fallback.pld.get_delta_for_epsilon(eps)
        assert delta >= full.pld.get_delta_for_epsilon(eps) * (1 - 1e-9)
        assert delta >= found.pld.get_delta_for_epsilon(eps) * (1 - 1e-9)


def test_a_search_that_does_not_fit_gives_a_bracket_from_a_smaller_family():
    """Over the budget, search() does not refuse: its values come from the others at one
    breakpoint (a subfamily: at most the full search's), its bound from the staircase (at least
    them), and it says so."""
    mech, n = RQM(c=F(5, 4), delta=F(1, 2), m=9, q=F(3, 10)), 70
    alphas = [1.0, 2.0, 10.0, math.inf]
    engine = make_engine("fast")
    full = secagg.search(mech, n, alphas, engine)
    needed = sum(cost.bytes for cost in secagg.search_costs(mech, n, len(alphas)))
    with resources.budget_of(int(needed * 0.6)):
        limited = secagg.search(mech, n, alphas, engine)
        unbounded = secagg.search(mech, n, alphas, engine, certify=False)
    assert "a smaller family: the search does not fit" in limited.search and "staircase" in limited.certificate
    assert unbounded.values == limited.values and all(u == math.inf for u in unbounded.upper)
    for value, whole, upper in zip(limited.values, full.values, limited.upper):
        assert value <= whole * (1 + 1e-12) and upper >= whole
    for alpha, value, configuration in zip(alphas, limited.values, limited.attained):
        assert len(configuration.others) == 1 and configuration.others[0][1] == n - 1
        (point, count), = configuration.others
        rest = np.ones(1)
        for _ in range(count):  # the others' sum by numpy's linear convolutions
            rest = np.convolve(rest, np.exp(engine.client(mech, point)))
        p, q = (np.convolve(np.exp(engine.client(mech, x)), rest) for x in (configuration.x, configuration.x_prime))
        direct = float(np.max(np.log(p[p > 0] / q[p > 0]))) if alpha == math.inf else renyi_linear(p, q, alpha)
        assert value == pytest.approx(direct, rel=1e-9)
