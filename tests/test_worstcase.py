"""The worst case for n > 1 clients (rdpcalc.worstcase.secagg): the search against an exhaustive run,
against an independent brute-force oracle, and the certified upper bound."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc.mechanisms import RQM
from rdpcalc.numerics import make_engine
from rdpcalc.worstcase import secagg

from .oracles import convolve_fractions, rqm_pmf_by_enumeration

F = Fraction


def rqm(c, delta, m, q) -> RQM:
    return RQM(c=F(c), delta=F(delta), m=m, q=F(q))


def test_counterexample_rqm_n40_beats_the_pm_c_family():
    """The issue's counterexample: all 39 others at the level 1.4 (or its mirror image) give
    D₂ = 0.502705 > 0.485892, the best over the others at ±c."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    [worst] = rdpcalc.divergence(mech, n=40, alphas=[2])
    [pm_c] = rdpcalc.divergence(mech, n=40, alphas=[2], choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    assert worst["divergence"] >= 0.50270
    assert pm_c["divergence"] < 0.4859 < worst["divergence"]
    assert worst["search"] == "two-group+ascent"
    assert worst["certified_upper"] >= worst["divergence"]
    assert {abs(worst["x"]), abs(worst["x_prime"])} == {1.5}
    [[level, count]] = worst["others"]
    assert (abs(level), count) == (1.4, 39)


# ------------------------------------------------------------------ an independent oracle
def oracle_breakpoints(c: F, delta: F, m: int) -> list[F]:
    """±c and the quantization levels strictly inside (−c, c), from the levels' definition."""
    x_max = c + delta
    levels = [-x_max + 2 * i * x_max / (m - 1) for i in range(m)]
    return sorted({-c, c} | {level for level in levels if -c < level < c})


def oracle_divergence(p: list[F], q: list[F], alpha) -> mpmath.mpf:
    """D_α for α ∈ {2, 3, ∞} from exact rational sums (Σ p^α q^{1−α} is rational)."""
    if any(a > 0 and b == 0 for a, b in zip(p, q)):
        return mpmath.inf
    if alpha == math.inf:
        ratio = max(a / b for a, b in zip(p, q) if a > 0)
        return mpmath.log(mpmath.mpf(ratio.numerator) / ratio.denominator)
    total = sum(a**alpha / b ** (alpha - 1) for a, b in zip(p, q) if a > 0)
    return mpmath.log(mpmath.mpf(total.numerator) / total.denominator) / (alpha - 1)


def oracle_worst(c, delta, m, q, n, alpha):
    """max over ordered pairs (x, x′) and every *sequence* of n − 1 others' breakpoints, by
    exact rational convolution: no multisets, no mirror images, no screening."""
    c, delta, q = F(c), F(delta), F(q)
    points = oracle_breakpoints(c, delta, m)
    pmfs = {x: rqm_pmf_by_enumeration(c, delta, m, q, x) for x in points}
    best, attained = mpmath.mpf(-1), None
    rests = {}
    for others in itertools.product(points, repeat=n - 1):
        key = tuple(sorted(others))
        if key in rests:
            continue
        rest = [F(1)]
        for y in others:
            rest = convolve_fractions(rest, pmfs[y])
        rests[key] = rest
        for x, x_prime in itertools.permutations(points, 2):
            with mpmath.workdps(40):
                value = oracle_divergence(convolve_fractions(pmfs[x], rest), convolve_fractions(pmfs[x_prime], rest), alpha)
            if value > best:
                best, attained = value, (x, x_prime, key)
    return float(best), attained


ORACLE_CASES = [
    # (c, Δ, m, q, n, α): small enough for rational arithmetic over every sequence of others
    ("1", "1", 4, "1/3", 3, 2),
    ("1", "1", 4, "1/3", 3, math.inf),
    ("3/2", "1/2", 5, "2/5", 3, 3),
    ("1", "2", 5, "1/2", 4, 2),
    ("2", "1", 6, "1/4", 3, 2),
]


@pytest.mark.parametrize("case", ORACLE_CASES, ids=lambda case: "-".join(map(str, case)))
def test_search_matches_a_brute_force_oracle(case):
    c, delta, m, q, n, alpha = case
    mech = rqm(c, delta, m, q)
    assert list(mech.breakpoints()) == oracle_breakpoints(F(c), F(delta), m)
    expected, attained = oracle_worst(c, delta, m, q, n, alpha)
    for engine in ("fast", "exact"):
        for budget in (secagg.MAX_BUDGET, 1):  # exhaustive, then the two-group search + ascent
            [record] = rdpcalc.divergence(mech, n=n, alphas=[alpha], engine=engine, dps=30,
                                          choose=rdpcalc.NeighbourOptions(budget=budget))
            assert record["divergence"] == pytest.approx(expected, rel=1e-12), (engine, budget, attained)
            assert record["certified_upper"] >= record["divergence"] * (1 - 1e-12)


def oracle_laws(record: dict) -> tuple[list[F], list[F]]:
    """The laws (P, Q) of the sum for the configuration a record names (RQM c = 3/2, Δ = 1/2,
    m = 5, q = 2/5), by the oracle's enumeration and exact convolution."""
    def pmf(value):
        return rqm_pmf_by_enumeration(F(3, 2), F(1, 2), 5, F(2, 5), F(value).limit_denominator(100))

    rest = [F(1)]
    for value, count in record["others"]:
        for _ in range(count):
            rest = convolve_fractions(rest, pmf(value))
    return convolve_fractions(pmf(record["x"]), rest), convolve_fractions(pmf(record["x_prime"]), rest)


def test_the_oracle_configuration_reproduces_the_record():
    """The configuration a record names gives its value in the oracle's own arithmetic."""
    [record] = rdpcalc.divergence(rqm("3/2", "1/2", 5, "2/5"), n=4, alphas=[2],
                                  choose=rdpcalc.NeighbourOptions(budget=secagg.MAX_BUDGET))
    p, q = oracle_laws(record)
    with mpmath.workdps(40):
        assert record["divergence"] == pytest.approx(float(oracle_divergence(p, q, 2)), rel=1e-13)


def test_both_directions_matter():
    """Swapping x and x′ changes the value, so a search that tried one direction only would
    miss the worst case (the oracle tries both)."""
    [record] = rdpcalc.divergence(rqm("3/2", "1/2", 5, "2/5"), n=3, alphas=[3],
                                  choose=rdpcalc.NeighbourOptions(budget=secagg.MAX_BUDGET))
    p, q = oracle_laws(record)
    with mpmath.workdps(40):
        assert float(oracle_divergence(q, p, 3)) < record["divergence"] * (1 - 1e-6)


# ------------------------------------------------------------------ search against exhaustive
def random_rqm(rng: random.Random) -> RQM:
    m = rng.randint(3, 7)
    return rqm(F(rng.randint(1, 8), 4), F(rng.randint(1, 8), 4), m, F(rng.randint(1, 9), 10))


@pytest.mark.parametrize("seed", range(12))
def test_search_finds_the_exhaustive_maximum_fast(seed):
    rng = random.Random(seed)
    mech, n = random_rqm(rng), rng.randint(3, 6)
    alphas = [1, 2, 10, math.inf]
    engine = make_engine("fast")
    exhaustive = secagg.search(mech, n, alphas, engine, budget=secagg.MAX_BUDGET)
    found = secagg.search(mech, n, alphas, engine, budget=1)
    assert exhaustive.search == "exhaustive" and found.search == "two-group+ascent"
    for alpha, best, value in zip(alphas, exhaustive.values, found.values):
        assert value == pytest.approx(best, rel=1e-12), f"{mech!r} n={n} α={alpha}: the search misses by {best - value:.3g}"


@pytest.mark.parametrize("seed", range(8))
def test_the_grid_of_splits_finds_the_exhaustive_maximum(monkeypatch, seed):
    """Beyond FINE_SPLITS_UP_TO others the two-group search tries a grid of splits and the
    neighbours of its best (lowered here so that n = 20 … 30 uses a grid of about 4 splits per
    pair): with the ascent it still finds the exhaustive maximum, from fewer rows."""
    rng = random.Random(200 + seed)
    mech = rqm(F(rng.randint(1, 8), 4), F(rng.randint(1, 8), 4), rng.randint(3, 4), F(rng.randint(1, 9), 10))
    n = rng.randint(20, 30)
    alphas = [1, 2, 10, math.inf]
    engine = make_engine("fast")
    exhaustive = secagg.search(mech, n, alphas, engine, budget=secagg.MAX_BUDGET, certify=False)
    evaluated, two_group = [], secagg._two_group
    monkeypatch.setattr(secagg, "_two_group", lambda *args: evaluated.append(two_group(*args)) or evaluated[-1])
    secagg.search(mech, n, alphas, engine, budget=1, certify=False)
    monkeypatch.setattr(secagg, "FINE_SPLITS_UP_TO", 2)
    monkeypatch.setattr(secagg, "SPLIT_GRID", 4)
    found = secagg.search(mech, n, alphas, engine, budget=1, certify=False)
    every_split, grid = evaluated
    assert found.search == "two-group+ascent" and set(grid) <= set(every_split)
    for alpha, best, value in zip(alphas, exhaustive.values, found.values):
        assert value == pytest.approx(best, rel=1e-12), f"{mech!r} n={n} α={alpha}: the grid misses by {best - value:.3g}"


def test_the_grid_of_splits_finds_what_every_split_finds_from_fewer(monkeypatch):
    """RQM's headline at n = 60 with the grid lowered to about 12 splits per pair (a step of 5):
    the same values as every split, from fewer configurations (731 of 1310)."""
    mech, n, alphas = rqm("3/2", "3/2", 16, "0.42"), 60, [1, 2, 10, math.inf]
    evaluated, two_group = [], secagg._two_group
    monkeypatch.setattr(secagg, "_two_group", lambda *args: evaluated.append(two_group(*args)) or evaluated[-1])
    every = secagg.search(mech, n, alphas, make_engine("fast"), certify=False)
    monkeypatch.setattr(secagg, "FINE_SPLITS_UP_TO", 2)
    monkeypatch.setattr(secagg, "SPLIT_GRID", 12)
    grid = secagg.search(mech, n, alphas, make_engine("fast"), certify=False)
    assert grid.values == pytest.approx(every.values, rel=1e-12)
    assert set(evaluated[1]) < set(evaluated[0])


@pytest.mark.parametrize("sigma, k", [("0.3", 4), ("1", 8), ("2", 3)])
def test_the_quantized_gaussians_grid_of_splits_finds_every_splits_maximum(monkeypatch, sigma, k):
    """Beyond FINE_SPLITS_UP_TO others the quantized Gaussian's search (others at ±b) tries a
    grid of splits and every split around its best at each order (lowered here to a step of 4
    at n = 40): the same values and configurations as every split, from fewer sums; the
    certified bound is the same (it does not read which splits were tried), and the label says
    which splits were tried."""
    mech, n, alphas = rdpcalc.make_mechanism("qgauss", sigma=sigma, k=k, clip="1"), 40, [1, 2, 10, math.inf]
    tried, two_kinds = [], secagg._two_kinds
    monkeypatch.setattr(secagg, "_two_kinds",  # the sums of the n − 1 others (not the one-client bound's)
                        lambda *args: (args[2] == n - 1 and tried.append(list(args[3]))) or two_kinds(*args))
    every = secagg.search(mech, n, alphas, make_engine("fast"), certify=False)  # (Theorem C's two ends sum n − 1 too)
    every_upper = secagg.search(mech, n, alphas, make_engine("fast")).upper
    every_split = tried[0]
    tried.clear()
    monkeypatch.setattr(secagg, "FINE_SPLITS_UP_TO", 2)
    monkeypatch.setattr(secagg, "SPLIT_GRID", 10)
    grid = secagg.search(mech, n, alphas, make_engine("fast"), certify=False)
    coarse = sum(tried, [])
    grid_upper = secagg.search(mech, n, alphas, make_engine("fast")).upper
    assert every.search == "exhaustive over the breakpoints"
    assert grid.search.startswith("over the breakpoints, every 4th split")
    assert grid.values == pytest.approx(every.values, rel=1e-12) and grid.attained == every.attained
    assert grid_upper == pytest.approx(every_upper, rel=1e-12)
    assert set(coarse) < set(every_split) and len(coarse) == len(set(coarse))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_search_finds_the_exhaustive_maximum_exact(seed):
    rng = random.Random(100 + seed)
    mech = rqm(F(rng.randint(1, 8), 4), F(rng.randint(1, 8), 4), rng.randint(3, 5), F(rng.randint(1, 9), 10))
    n, alphas = 3, [2, math.inf]
    engine = make_engine("exact", 30)
    exhaustive = secagg.search(mech, n, alphas, engine, budget=secagg.MAX_BUDGET)
    found = secagg.search(mech, n, alphas, engine, budget=1)
    fast = secagg.search(mech, n, alphas, make_engine("fast"), budget=secagg.MAX_BUDGET)
    for best, value, quick in zip(exhaustive.values, found.values, fast.values):
        assert value == pytest.approx(best, rel=1e-25 if best < math.inf else 0)
        assert quick == pytest.approx(best, rel=1e-12)


# ------------------------------------------------------------------ the certified upper bound
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_certified_upper_bounds_the_value_and_equals_it_when_exhaustive(n):
    """Exhaustive, the bracket closes up to the rounding margins of the compiled enumeration."""
    mech = rqm("1", "1", 6, "1/3")
    alphas = [1, 2, 10, math.inf]
    for budget in (1, 50, secagg.MAX_BUDGET):
        result = secagg.search(mech, n, alphas, make_engine("fast"), budget=budget)
        for value, upper in zip(result.values, result.upper):
            assert upper >= value
            if result.search == "exhaustive":
                assert upper <= value * (1 + 1e-12) + 1e-14


@pytest.mark.parametrize("budget", [20, secagg.MAX_BUDGET])
def test_a_search_without_its_certificate_finds_the_same_and_bounds_nothing(budget):
    """``certify=False`` (callers that use only the configurations found) leaves the values and
    configurations as they are; the bound is +inf where the certificate would have given it, and
    the exhaustive enumeration's own where the search is exhaustive."""
    mech = rqm("1", "1", 5, "1/3")
    alphas = [1, 2, 10, math.inf]
    certified = secagg.search(mech, 7, alphas, make_engine("fast"), budget=budget)
    bare = secagg.search(mech, 7, alphas, make_engine("fast"), budget=budget, certify=False)
    assert (bare.values, bare.attained, bare.search) == (certified.values, certified.attained, certified.search)
    if certified.search == "exhaustive":
        assert bare.upper == certified.upper
    else:
        assert certified.search == "two-group+ascent" and all(math.isfinite(u) for u in certified.upper)
        assert bare.upper == [math.inf] * len(alphas) and "not computed" in bare.certificate

def test_certified_upper_bounds_the_exhaustive_value_at_larger_n():
    """The certificate without the enumeration (Theorem A, Theorem B at ∞) bounds the
    exhaustive maximum."""
    mech = rqm("1", "1", 5, "1/3")
    alphas = [1, 2, 10, math.inf]
    exhaustive = secagg.search(mech, 7, alphas, make_engine("fast"), budget=secagg.MAX_BUDGET)
    bounded = secagg.search(mech, 7, alphas, make_engine("fast"), budget=20)
    assert bounded.search == "two-group+ascent" and "Theorem A" in bounded.certificate
    for exact_max, upper in zip(exhaustive.values, bounded.upper):
        assert exact_max <= upper <= exact_max * 1.01


def test_worst_case_does_not_increase_with_n():
    """Data processing: W_{n+1} ≤ W_n (exhaustive values)."""
    mech = rqm("1", "2", 5, "1/2")
    values = [secagg.search(mech, n, [2], make_engine("fast"), budget=secagg.MAX_BUDGET).values[0]
              for n in range(2, 7)]
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(values, values[1:]))


def test_pbm_relaxed_certificate_bounds_the_value():
    mech = rdpcalc.make_mechanism("pbm", c="1.5", theta="0.25", trials=4)
    [record] = rdpcalc.divergence(mech, n=6, alphas=[2])
    assert record["search"] == "exhaustive over the breakpoints"  # not over every input: the pmf is not affine
    assert record["certified_upper"] >= record["divergence"] * (1 - 1e-12)


def test_qmgeo_certifies_by_one_client():
    mech = rdpcalc.make_mechanism("qmgeo", R=4, p="0.5", w_max="1")
    [one] = rdpcalc.divergence(mech, n=1, alphas=[2])
    [record] = rdpcalc.divergence(mech, n=3, alphas=[2])
    assert record["certified_upper"] == pytest.approx(one["divergence"], rel=1e-12)
    assert record["divergence"] <= record["certified_upper"]


@pytest.mark.parametrize("sigma,k", [("1", 4), ("1/2", 8), ("2", 16)])
def test_quantized_gaussian_outputs_are_unimodal_in_the_input(sigma, k):
    """The premise of the interval certificate (UNIMODAL_IN_INPUT): each output's probability,
    on a grid of inputs in [−C_q/2, C_q/2], rises and then falls (or is monotone)."""
    mech = rdpcalc.make_mechanism("qgauss", sigma=sigma, clip="1", k=k)
    ys = [F(i, 40) - F(1, 2) for i in range(41)]
    with mpmath.workdps(30):
        table = [mech.pmf(y) for y in ys]
    for output in range(k):
        column = [row[output] for row in table]
        peak = max(range(len(column)), key=column.__getitem__)
        assert all(a <= b * (1 + 1e-20) for a, b in zip(column[:peak], column[1 : peak + 1]))
        assert all(a >= b * (1 - 1e-20) for a, b in zip(column[peak:], column[peak + 1 :]))


def test_quantized_gaussian_interval_certificate_covers_interior_inputs():
    """The others anywhere in the interval, not only at ±C_q/2: random interior configurations
    never exceed the certificate, which is below the one-client value it replaced."""
    mech = rdpcalc.make_mechanism("qgauss", sigma="1", clip="1", k=8)
    n, alphas = 6, [1, 2, 10]
    records = rdpcalc.divergence(mech, n=n, alphas=alphas)
    ones = rdpcalc.divergence(mech, n=1, alphas=alphas)
    engine = make_engine("fast")
    rng = random.Random(3)
    b = mech.bound
    for record, one, alpha in zip(records, ones, alphas):
        assert record["divergence"] <= record["certified_upper"] < one["divergence"]
        for _ in range(12):
            rest = engine.unit()
            for _ in range(n - 1):
                rest = engine.add_client(engine.client(mech, F(rng.randint(-50, 50), 100)), rest)
            p, q = engine.add_client(engine.client(mech, b), rest), engine.add_client(engine.client(mech, -b), rest)
            forward, backward = engine.divergences_both(p, q, [alpha])
            assert max(float(forward[0][0]), float(backward[0][0])) <= record["certified_upper"] * (1 + 1e-12)


@pytest.mark.parametrize("mechanism_name", ["rqm", "pbm", "qgauss"])
def test_mirror_symmetry_is_real(mechanism_name):
    """Mechanisms flagged MIRRORED satisfy P_{−x}(i) = P_x(last − i) at every breakpoint (the
    search keeps one of each mirror pair of configurations)."""
    params = {"rqm": {"c": "1.5", "delta": "1.5", "m": 16, "q": "0.42"},
              "pbm": {"c": "1.5", "theta": "0.25", "trials": 4},
              "qgauss": {"sigma": "1", "clip": "1", "k": 4}}[mechanism_name]
    mech = rdpcalc.make_mechanism(mechanism_name, **params)
    assert mech.mirror_symmetric()
    with mpmath.workdps(30):
        for x in mech.breakpoints():
            assert [float(v) for v in mech.pmf(-x)] == pytest.approx([float(v) for v in mech.pmf(x)[::-1]], abs=1e-25)


def test_common_component_is_shared_by_every_breakpoint():
    mech = rqm("3/2", "3/2", 16, "21/50")
    share, component = secagg.common_component(mech)
    assert 0 < share < 1 and float(mpmath.fsum(component)) == pytest.approx(1, abs=1e-30)
    with mpmath.workdps(40):
        for b in mech.breakpoints():
            pmf = mech.pmf(b)
            mode = max(range(len(pmf)), key=lambda i: pmf[i])
            centre = max(range(len(component)), key=lambda i: component[i])
            for d, value in enumerate(component):
                index = mode + d - centre
                assert share * value <= (pmf[index] if 0 <= index < len(pmf) else 0) * (1 + mpmath.mpf(10) ** -35)


@pytest.mark.parametrize("seed", range(8))
def test_common_component_bound_is_above_the_exhaustive_maximum(seed):
    rng = random.Random(200 + seed)
    mech, n = random_rqm(rng), rng.randint(3, 7)
    alphas = [1, 2, 10, math.inf]
    engine = make_engine("fast")
    exhaustive = secagg.search(mech, n, alphas, engine, budget=secagg.MAX_BUDGET)
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    bound = secagg._MixtureBound(mech, n, alphas, engine, clients).bound()
    for alpha, value, upper in zip(alphas, exhaustive.values, bound):
        assert upper >= value * (1 - 1e-12), f"{mech!r} n={n} α={alpha}"


@pytest.mark.parametrize("name,params", [
    ("rqm", {"c": "1.5", "delta": "1.5", "m": 16, "q": "0.42"}),
    ("pbm", {"c": "1.5", "theta": "0.25", "trials": 16}),
])
def test_sweep_reuse_gives_the_values_of_separate_searches(name, params):
    """A sweep over n skips configurations bounded by the previous n; it must find what the
    searches at each n find alone, and certify the same bounds."""
    from rdpcalc.worstcase.neighbours import sweep_n

    mech = rdpcalc.make_mechanism(name, **params)
    alphas = [2.0, 10.0]
    swept = sweep_n(mech, range(2, 13), alphas, ("worst",), make_engine("fast"))
    for n in range(2, 13):
        alone = secagg.search(mech, n, alphas, make_engine("fast"))
        points = swept[("worst", n)][1]
        assert [p.value for p in points] == pytest.approx(alone.values, rel=1e-12)
        assert [p.upper for p in points] == pytest.approx(alone.upper, rel=1e-12)


def test_a_sweep_over_n_reuses_a_certificate_that_stays_above_the_exhaustive_value():
    """In a sweep over n (a shared memo) the certificate of n′ serves n′ ≤ n < 1.1·n′ (the worst
    case is non-increasing in n): it says so, it is the bound of n′, and it lies above the value
    of the exhaustive search at n; at n ≥ 1.1·n′ it is computed again."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=8, q="0.42")
    engine, alphas, memo = make_engine("fast"), [2.0, 10.0], {}
    swept = {n: secagg.search(mech, n, alphas, engine, budget=1, memo=memo) for n in (20, 21, 22)}
    assert "the certificate at n = 20" in swept[21].certificate and swept[21].upper == swept[20].upper
    assert "the certificate at n =" not in swept[20].certificate + swept[22].certificate
    for n in (21, 22):
        exhaustive = secagg.search(mech, n, alphas, engine)
        assert exhaustive.search == "exhaustive"
        assert all(u >= v * (1 - 1e-12) for u, v in zip(swept[n].upper, exhaustive.values))


@pytest.mark.parametrize("name,params,n", [
    ("rqm", {"c": "1.5", "delta": "1.5", "m": 16, "q": "0.42"}, 10),
    ("pbm", {"c": "1.5", "theta": "0.25", "trials": 4}, 12),
])
def test_certificate_between_orders_by_chords_is_valid(name, params, n):
    """With many orders the certificates are computed at a few and bounded by chords in between:
    never below the exhaustive value at an order computed alone, and close to it."""
    from rdpcalc.privacy.rdp import ORDERS

    mech = rdpcalc.make_mechanism(name, **params)
    orders = [float(a) for a in ORDERS[ORDERS <= 60]]
    assert len(orders) > secagg._CERTIFICATE_ORDERS
    chords, _ = secagg.certified_upper(mech, n, orders, make_engine("fast"))
    for alpha in (1.1, 1.5, 3.0, 7.0, 20.0, 50.0):
        [alone] = secagg.search(mech, n, [alpha], make_engine("fast"), budget=secagg.MAX_BUDGET).values
        chord = chords[orders.index(alpha)]
        assert alone * (1 - 1e-12) <= chord <= alone * 1.05, alpha


# ------------------------------------------------------------------ the certificates, computed a second way
def _d2_rational(p: list[F], q: list[F]) -> F:
    """exp(D₂(P‖Q)) = Σ p²/q, exactly."""
    return sum(a * a / b for a, b in zip(p, q) if a > 0)


def test_common_component_bound_against_an_exact_rational_oracle():
    """The mixture bound of the module docstring, recomputed from its definition in exact
    fractions (pmfs by enumeration, the envelope at the modes, binomial weights): at α = 2 it is
    log max over ordered pairs of Σ_K P(K) Σ_s P_K(s)²/Q_K(s)."""
    c, delta, m, q, n = F(1), F(1), 5, F(2, 5), 4
    mech = rqm(c, delta, m, q)
    points = oracle_breakpoints(c, delta, m)
    pmfs = {x: rqm_pmf_by_enumeration(c, delta, m, q, x) for x in points}
    modes = {x: max(range(m), key=lambda i, x=x: pmfs[x][i]) for x in points}
    offsets = range(-m, m)
    shared = [min(pmfs[x][modes[x] + d] if 0 <= modes[x] + d < m else F(0) for x in points) for d in offsets]
    share = sum(shared)
    component = [v / share for v in shared]
    powers = [[F(1)]]
    for _ in range(n - 1):
        powers.append(convolve_fractions(powers[-1], component))
    weights = [math.comb(n - 1, k) * share**k * (1 - share) ** (n - 1 - k) for k in range(n)]
    best = max(sum(w * _d2_rational(convolve_fractions(pmfs[x], power), convolve_fractions(pmfs[y], power))
                   for w, power in zip(weights, powers))
               for x, y in itertools.permutations(points, 2))
    engine = make_engine("fast")
    clients = [engine.client(mech, p) for p in mech.breakpoints()]
    ours = secagg._MixtureBound(mech, n, [2.0], engine, clients, components=[secagg.others_component(mech, n - 1)])
    assert ours.components[0].share == pytest.approx(float(share), rel=1e-14)
    assert secagg._MixtureBound(mech, n, [2.0], engine, clients).bound()[0] <= ours.bound()[0] * (1 + 1e-12)
    with mpmath.workdps(40):
        expected = float(mpmath.log(mpmath.mpf(best.numerator) / best.denominator))
    assert ours.bound()[0] == pytest.approx(expected, rel=1e-12)


def test_pbm_relaxed_bound_against_an_exact_rational_oracle():
    """PBM's certificate recomputed from its definition: the others' (n−1)·M trials, t of them at
    p(c) and the rest at p(−c), client 1's M trials at p(±c); max over t and both directions."""
    from .oracles import binomial_pmf

    theta, trials, n = F(1, 4), 2, 4
    mech = rdpcalc.make_mechanism("pbm", c="1.5", theta="0.25", trials=trials)
    high, low = F(1, 2) + theta, F(1, 2) - theta
    total = (n - 1) * trials
    best = F(0)
    for t in range(total + 1):
        rest = convolve_fractions(binomial_pmf(t, high), binomial_pmf(total - t, low))
        p, q = convolve_fractions(binomial_pmf(trials, high), rest), convolve_fractions(binomial_pmf(trials, low), rest)
        best = max(best, _d2_rational(p, q), _d2_rational(q, p))
    [record] = rdpcalc.divergence(mech, n=n, alphas=[2])
    with mpmath.workdps(40):
        expected = float(mpmath.log(mpmath.mpf(best.numerator) / best.denominator))
    assert record["certified_upper"] == pytest.approx(expected, rel=1e-12)


def test_others_plus_is_given_only_for_the_pm_c_family():
    """others_plus (k) counts the others at +c only when every other sits at ±c (not at the level ±1.4)."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    [record] = rdpcalc.divergence(mech, n=40, alphas=[2])
    assert [abs(value) for value, _ in record["others"]] == [1.4] and record["others_plus"] is None
    [pm_c] = rdpcalc.divergence(mech, n=40, alphas=[2], choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    assert pm_c["others_plus"] in (0, 39) and pm_c["others"] == [[1.5 if pm_c["others_plus"] else -1.5, 39]]


def test_reported_configuration_does_not_depend_on_chunks(monkeypatch):
    """Mirror configurations tie up to their last bits: the one reported is the first within
    TIE_RTOL in the order (k, pair), whatever chunks the ks are processed in, and the value is
    the maximum over all of them (checked against each configuration computed on its own)."""
    from rdpcalc.worstcase import neighbours

    mech = rdpcalc.make_mechanism("rqm", c=1, delta=1, m=16, q="0.42")
    whole = rdpcalc.divergence(mech, n=40, alphas=[10, math.inf], choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    monkeypatch.setattr(neighbours, "CHUNK_ELEMENTS", 600)
    chunked = rdpcalc.divergence(mech, n=40, alphas=[10, math.inf], choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    assert [(r["x"], r["x_prime"], r["others_plus"], r["divergence"]) for r in whole] == \
        [(r["x"], r["x_prime"], r["others_plus"], r["divergence"]) for r in chunked]
    for record in whole:
        each = [rdpcalc.divergence(mech, n=40, alphas=[record["alpha"]],
                                   choose=rdpcalc.NeighbourOptions(x=x, x_prime=-x, others_plus=k))[0]["divergence"]
                for x in (-1, 1) for k in range(40)]
        assert record["divergence"] == max(each)


def test_the_certified_bound_is_non_decreasing_in_alpha_whatever_the_order_asked():
    """D_α is non-decreasing in α, so is the certified curve (each order's bound lowered to the
    smallest at the orders above it), and it stays above the value found; asking the orders
    shuffled gives the same bounds."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=8, q="0.42")
    alphas = [1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, math.inf]
    result = secagg.search(mech, 20, alphas, make_engine("fast"), budget=1)
    assert all(low <= high for low, high in zip(result.upper, result.upper[1:]))
    assert all(u >= v for u, v in zip(result.upper, result.values))
    shuffled = [alphas[i] for i in (9, 0, 5, 2, 8, 1, 7, 3, 6, 4)]
    again = secagg.search(mech, 20, shuffled, make_engine("fast"), budget=1)
    assert dict(zip(shuffled, again.upper)) == pytest.approx(dict(zip(alphas, result.upper)), rel=1e-12)


def test_progress_moves_during_the_certificate():
    """A search that is not exhaustive reports its certificate stage in steps as Theorem A
    settles the client-1 pairs, not in one jump at the end: the totals are fixed, the counts
    never go back, and some report lies strictly inside the certificate's share."""
    mech = rdpcalc.make_mechanism("rqm", c="1", delta="1", m=8, q="2/5")
    reports = []
    secagg.search(mech, 16, [2.0, 10.0], make_engine("fast"), budget=100,
                     progress=lambda done, total: reports.append((done, total)))
    totals = {total for _, total in reports}
    assert len(totals) == 1
    total = totals.pop()
    counts = [done for done, _ in reports]
    assert counts == sorted(counts) and counts[-1] == total
    start = total - secagg.CERTIFICATE_STEPS
    assert any(start < done < total for done in counts), counts


@pytest.mark.parametrize("trials,rows,loss", [(116, 20, 0.0), (117, 20, 0.0), (5000, 40, 0.0), (4999, 30, 0.01),
                                              (64935, 2000, 0.0025)])
def test_the_mirrored_relaxed_grid_covers_every_split(trials, rows, loss):
    """Every split t ∈ [0, T] lies in a block [t₀, t₀ + w] of a t₀ evaluated or of its mirror
    image K − t₀, and the evaluated t₀ are at most K/2: half the rows of the plain grid."""
    mech = rdpcalc.make_mechanism("pbm", c="1", theta="0.25", trials=1)
    family = secagg.RelaxedFamily.of(mech, trials + 1, make_engine("fast"), rows, loss)
    assert family.mirrored and family.step >= math.ceil(trials / rows) > 1
    assert family.step == max(math.ceil(trials / rows), math.floor(loss * (trials + 1) / (1 + loss)))
    starts = set(family.splits()) | {family.kept - t for t in family.splits()}
    assert all(2 * t <= family.kept for t in family.splits()) and min(starts) >= 0 and max(starts) <= family.kept
    assert all(any(t0 <= t <= t0 + family.step for t0 in starts) for t in range(trials + 1))
    plain = secagg.RelaxedFamily(family.high, family.low, 1, trials, family.step).splits()
    assert len(family.splits()) <= len(plain) // 2 + 2


def _relaxed_oracle(theta: float, trials: int, kept: int, starts, alpha: float) -> float:
    """max over t₀ in ``starts`` and both directions of D_α between client 1's ``trials`` at
    p(∓c) on top of t₀ of ``kept`` trials at p(c) and the rest at p(−c): numpy convolutions
    of binomial pmfs."""
    def binomial(count, p):
        return np.array([math.comb(count, i) * p**i * (1 - p) ** (count - i) for i in range(count + 1)])

    high, low = 0.5 + theta, 0.5 - theta
    best = -math.inf
    for t in starts:
        rest = np.convolve(binomial(t, high), binomial(kept - t, low))
        p, q = np.convolve(binomial(trials, low), rest), np.convolve(binomial(trials, high), rest)
        for a, b in ((p, q), (q, p)):
            best = max(best, math.log(np.sum(a**alpha * b ** (1 - alpha))) / (alpha - 1))
    return best


@pytest.mark.parametrize("n,trials,theta", [(30, 4, "1/4"), (23, 3, "1/10")])
def test_the_mirrored_relaxed_bound_is_the_whole_grids_and_bounds_every_split(monkeypatch, n, trials, theta):
    """In steps (RELAXED_ROWS lowered), PBM's relaxed bound from one t₀ of each mirror pair is
    the maximum over the whole grid (both halves: a numpy oracle), at least the maximum over
    every split, and a tolerance widens the steps while staying within it."""
    mech = rdpcalc.make_mechanism("pbm", c="1", theta=theta, trials=trials)
    engine = make_engine("fast")
    every, _ = secagg._relaxed_upper(mech, n, [2.0, 5.0], engine)
    monkeypatch.setattr(secagg, "RELAXED_ROWS", 12)
    family = secagg.RelaxedFamily.of(mech, n, engine)
    stepped, text = secagg._relaxed_upper(mech, n, [2.0, 5.0], engine)
    assert "one of each mirror pair" in text and family.step > 1
    starts = set(family.splits()) | {family.kept - t for t in family.splits()}
    for value, alpha in zip(stepped, (2.0, 5.0)):
        assert value == pytest.approx(_relaxed_oracle(float(F(theta)), trials, family.kept, starts, alpha), rel=1e-9)
    assert np.all(stepped >= every * (1 - 1e-12)) and np.any(stepped > every * (1 + 1e-6))
    monkeypatch.setattr(secagg, "RELAXED_ROWS", 50)
    wide = secagg.RelaxedFamily.of(mech, n, engine, loss=0.1)
    assert wide.step == math.floor(0.1 * n * trials / 1.1) > math.ceil((n - 1) * trials / 50)
    widened, _ = secagg._relaxed_upper(mech, n, [2.0, 5.0], engine, tolerance=0.2)
    # ℓ = tolerance/2: the scaling is approximate (1.107 at α = 5 for θ = 1/4), the tolerance is kept
    assert np.all(every * (1 - 1e-12) <= widened) and np.all(widened <= every * 1.2)


def _mp_divergence(p: list, q: list, alpha: float):
    if alpha == math.inf:
        return max(mpmath.log(a / b) for a, b in zip(p, q) if a > 0)
    return mpmath.log(mpmath.fsum(a**alpha * b ** (1 - alpha) for a, b in zip(p, q) if a > 0)) / (alpha - 1)


@pytest.mark.parametrize("name, params, n", [
    ("rqm", dict(c="1", delta="1", m=5, q="1/3"), 4),
    ("pbm", dict(c="1", theta="0.3", trials=3), 5),
    ("qgauss", dict(clip="1", sigma="0.7", k=4), 3),
])
def test_attained_below_is_its_configurations_divergence_and_below_the_certificate(name, params, n):
    """secagg.attained_below is the divergence of its configuration (client 1 at the ends of the
    input range, the others at the breakpoint nearest 0), recomputed in mpmath from the
    mechanism's pmfs convolved term by term, less its slack; below the search's maximum and the
    certified bound at every order; refused for a mechanism with unbounded noise."""
    mech = rdpcalc.make_mechanism(name, **params)
    alphas = [1.5, 2.0, 10.0, math.inf]
    below = secagg.attained_below(mech, n, alphas)
    points = list(mech.breakpoints())
    middle = min(points, key=abs)
    with mpmath.workdps(40):
        rest = [mpmath.mpf(1)]
        for _ in range(n - 1):
            rest = convolve_fractions(rest, mech.pmf(middle))
        low, high = (convolve_fractions(mech.pmf(point), rest) for point in (points[0], points[-1]))
        exact = [float(max(_mp_divergence(low, high, a), _mp_divergence(high, low, a))) for a in alphas]
    slack = secagg.ATTAINED_SLACK
    assert below == pytest.approx([max(0.0, v * (1 - slack) - slack) for v in exact], rel=1e-9, abs=1e-12)
    found = secagg.search(mech, n, alphas, make_engine("fast"), budget=secagg.MAX_BUDGET)
    certified, _ = secagg.certified_upper(mech, n, alphas, make_engine("fast"))
    assert np.all(below <= np.array(found.values)) and np.all(below <= np.array(certified))
    with pytest.raises(ValueError):
        secagg.attained_below(rdpcalc.make_mechanism("ddg", c=1, gamma="0.25", sigma="1"), n, alphas)
