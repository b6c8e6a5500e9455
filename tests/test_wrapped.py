"""PBM whose SecAgg sum wraps (rdpcalc.worstcase.wrapped): the hull of a box in exact fractions, the boxes'
cover, and the certified bound against dense grids of the others' inputs computed independently
(numpy on the binomial pmfs, folded modulo 2^bits)."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

import rdpcalc
from rdpcalc.numerics import FastEngine
from rdpcalc.worstcase import secagg, wrapped

from .oracles import binomial_pmf, convolve_fractions

F = Fraction


def _binomial(trials: int, p: float) -> np.ndarray:
    return np.array([math.comb(trials, i) * p**i * (1 - p) ** (trials - i) for i in range(trials + 1)])


def _folded(pmf: np.ndarray, modulus: int) -> np.ndarray:
    out = np.zeros(modulus)
    np.add.at(out, np.arange(len(pmf)) % modulus, pmf)
    return out


def _divergence(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    if alpha == 1:
        return float(np.sum(p * np.log(p / q)))
    if alpha == math.inf:
        return float(np.max(np.log(p / q)))
    return float(np.log(np.sum(p * (p / q) ** (alpha - 1))) / (alpha - 1))


def _grid_maximum(c, theta, trials, bits, n, alphas, points):
    """max over the others' inputs on a grid (multisets) and both directions of client 1 at ±c."""
    probability = {x: 0.5 + theta * x / c for x in points}
    modulus = 2**bits
    plus, minus = _binomial(trials, 0.5 + theta), _binomial(trials, 0.5 - theta)
    best = np.full(len(alphas), -np.inf)
    for others in itertools.combinations_with_replacement(points, n - 1):
        rest = np.array([1.0])
        for x in others:
            rest = np.convolve(rest, _binomial(trials, probability[x]))
        p, q = (_folded(np.convolve(first, rest), modulus) for first in (plus, minus))
        values = [max(_divergence(p, q, a), _divergence(q, p, a)) for a in alphas]
        best = np.maximum(best, values)
    return best


def test_a_clients_law_is_the_hull_combination_of_its_box_exactly():
    """Bin(T, p(y)) = Σ_i Bin(i; T, t)·Bin(i, p(h)) * Bin(T − i, p(l)) for y ∈ [l, h], t = (y − l)/(h − l),
    in exact fractions (the module docstring's hull of a box)."""
    mech = rdpcalc.make_mechanism("pbm", c="1", theta="3/10", trials=5, bits=3)
    rng = random.Random(7)
    for _ in range(5):
        low, high = sorted(F(rng.randint(-20, 20), 20) for _ in range(2))
        if low == high:
            continue
        y = low + (high - low) * F(rng.randint(0, 12), 12)
        t = (y - low) / (high - low)
        p_low, p_high, p_y = (mech.success_probability(v) for v in (low, high, y))
        mixture = [F(0)] * (mech.trials + 1)
        for i, weight in enumerate(binomial_pmf(mech.trials, t)):
            vertex = convolve_fractions(binomial_pmf(i, p_high), binomial_pmf(mech.trials - i, p_low))
            mixture = [a + weight * b for a, b in zip(mixture, vertex)]
        assert mixture == binomial_pmf(mech.trials, p_y)


def test_the_two_halves_cover_the_box():
    bound = F(3, 2)
    box = ((0, 0), (2, 1), (2, 1))
    for child in wrapped.split(box):
        assert len(child) == len(box)
    first, second = wrapped.split(box)
    halved = [interval for interval in first if interval not in box]
    other = [interval for interval in second if interval not in box]
    (low, middle), (middle_again, high) = (wrapped.endpoints(bound, i) for i in (*halved, *other))
    assert (low, high) == wrapped.endpoints(bound, (0, 0)) and middle == middle_again
    assert wrapped.row_count(((0, 0), (1, 0), (1, 0)), 7) == (1 * 7 + 1) * (2 * 7 + 1)


@pytest.mark.parametrize("theta,trials,bits,n", [("3/10", 7, 4, 4), ("1/5", 5, 3, 3), ("2/5", 3, 3, 4)])
def test_certified_bound_is_above_a_dense_grid_and_below_the_relaxed_family(theta, trials, bits, n):
    """The certificate with wrap-around is at least the maximum over a 41-point grid of the others'
    inputs (computed here with numpy), at most the relaxed family's bound, and the value found is
    at most it; at α = 2 and KL the bracket is within the branch-and-bound's tolerance."""
    alphas = [1, 2, 10, math.inf]
    mech = rdpcalc.make_mechanism("pbm", c="1", theta=theta, trials=trials, bits=bits)
    records = rdpcalc.divergence(mech, n=n, alphas=alphas)
    dense = _grid_maximum(1.0, float(F(theta)), trials, bits, n, alphas, np.linspace(-1, 1, 41))
    relaxed, _ = secagg._relaxed_upper(mech, n, alphas, FastEngine(mech.modulus))
    for record, grid_value, relaxed_value in zip(records, dense, relaxed):
        assert record["divergence"] <= record["certified_upper"] * (1 + 1e-12)
        assert grid_value <= record["certified_upper"] * (1 + 1e-9)
        assert record["certified_upper"] <= relaxed_value * (1 + 1e-12)
        assert record["certified_upper"] <= record["divergence"] * (1 + wrapped.TOLERANCE) + 1e-12
    assert "branch-and-bound over boxes of the others' inputs" in records[0]["certificate"]
    assert "anywhere in [−1, 1]" in records[0]["protocol"]


def test_the_headline_case_closes_where_the_relaxed_family_did_not():
    """The issue's case (c = 1, θ = 3/10, 7 trials, bits = 4, n = 4): at α = ∞ the relaxed family
    gave 5.390 against 5.193 found; the branch-and-bound brings the bracket within its tolerance."""
    mech = rdpcalc.make_mechanism("pbm", c="1", theta="3/10", trials=7, bits=4)
    [record] = rdpcalc.divergence(mech, n=4, alphas=[math.inf])
    relaxed, _ = secagg._relaxed_upper(mech, 4, [math.inf], FastEngine(mech.modulus))
    assert relaxed[0] > 1.03 * record["divergence"]
    assert record["certified_upper"] <= record["divergence"] * (1 + wrapped.TOLERANCE)


def test_points_of_the_boxes_raise_the_value_found_above_a_coarse_grid():
    """With a value found below the truth (a coarse start), the boxes' points raise it, and the
    configuration reported attains it (recomputed here with numpy)."""
    mech = rdpcalc.make_mechanism("pbm", c="1", theta="3/10", trials=7, bits=4)
    engine = FastEngine(mech.modulus)
    outcome = wrapped.branch_and_bound(mech, 4, [math.inf], engine, secagg._pair_maximum, np.array([5.0]))
    assert outcome.complete and outcome.found[0] > 5.19
    [others] = outcome.others
    points = [float(x) for x, count in others for _ in range(count)]
    again = _grid_maximum(1.0, 0.3, 7, 4, 4, [math.inf], points)
    assert again[0] == pytest.approx(outcome.found[0], rel=1e-10)
    assert outcome.upper[0] >= outcome.found[0]


def test_a_box_too_large_to_split_stops_the_search_with_a_valid_bound(monkeypatch):
    monkeypatch.setattr(wrapped, "MAX_ROWS", 10)
    mech = rdpcalc.make_mechanism("pbm", c="1", theta="3/10", trials=7, bits=4)
    engine = FastEngine(mech.modulus)
    outcome = wrapped.branch_and_bound(mech, 4, [2, math.inf], engine, secagg._pair_maximum)
    relaxed, _ = secagg._relaxed_upper(mech, 4, [2, math.inf], engine)
    assert not outcome.complete and "hull rows" in outcome.stop and outcome.boxes == 1
    assert outcome.upper == pytest.approx(relaxed, rel=1e-12)
