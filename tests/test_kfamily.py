"""The windowed worst case over k (rdpcalc.worstcase.kfamily): its brackets against the full search (every
row on its whole support), against a brute-force oracle in mpmath, with the windows cut short so
that the tail bounds carry real weight, and through the command line beyond n = 2000."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc.cli import main
from rdpcalc.worstcase import kfamily
from rdpcalc.worstcase.neighbours import WINDOWED_MAX_N

ORDERS = [1, 2, 10, math.inf]


@pytest.mark.parametrize("name, params, n", [
    ("rqm", dict(c=1, delta=1, m=16, q="0.42"), 300),
    ("rqm", dict(c=1, delta="0.3", m=5, q="0.2"), 1000),
    ("pbm", dict(c=1, theta="0.25", trials=16), 500),
])
def test_the_windowed_bracket_holds_the_full_search(name, params, n):
    """Found values agree with the full search (rows on the whole support) to the FFTs' accuracy,
    and the certified ends are above it; finite orders close to 1e−9."""
    mech = rdpcalc.make_mechanism(name, **params)
    full = rdpcalc.divergence(mech, n=n, alphas=ORDERS, choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    for found, record in zip(kfamily.worst_over_k(mech, n, ORDERS), full):
        exact = record["divergence"]
        assert found["lower"] == pytest.approx(exact, rel=1e-9)
        assert found["upper"] >= exact * (1 - 1e-9)
        if found["alpha"] != math.inf:
            assert found["upper"] <= found["lower"] * (1 + 1e-9)
        attained = found["attained"]
        choose = rdpcalc.NeighbourOptions(others_plus=attained.k(mech.bound), x=attained.x, x_prime=attained.x_prime)
        value = rdpcalc.divergence(mech, n=n, alphas=[found["alpha"]], choose=choose)[0]["divergence"]
        assert value == pytest.approx(exact, rel=1e-9)  # the configuration reported attains it


def test_short_windows_widen_the_bracket_around_the_true_value(monkeypatch):
    """With the windows cut to a few standard deviations (and not widened), the Chernoff bounds
    of the tails carry much of the upper end: the bracket opens, and still holds the value."""
    mech = rdpcalc.make_mechanism("rqm", c=1, delta=1, m=16, q="0.42")
    n = 400
    full = rdpcalc.divergence(mech, n=n, alphas=ORDERS, choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    monkeypatch.setattr(kfamily, "TAIL_NATS", 3.0)
    monkeypatch.setattr(kfamily, "CLOSED", 1.0)  # keep the first, short windows
    for found, record in zip(kfamily.worst_over_k(mech, n, ORDERS), full):
        if found["alpha"] == math.inf:
            continue
        assert found["half_width"] < 8
        assert found["lower"] < record["divergence"] * (1 - 1e-4)  # the short window misses mass
        assert found["upper"] > record["divergence"] * (1 + 1e-4)  # the bounds are not free
        assert found["lower"] <= record["divergence"] <= found["upper"]


def _brute_force(a, b, n, alpha):
    """max over k and both directions of D_α between the rows k+1 and k of A^j * B^(n−j), in mpmath."""
    def power(pmf, count):
        out = [mpmath.mpf(1)]
        for _ in range(count):
            out = [sum(out[i] * pmf[s - i] for i in range(len(out)) if 0 <= s - i < len(pmf))
                   for s in range(len(out) + len(pmf) - 1)]
        return out

    def convolve(x, y):
        return [sum(x[i] * y[s - i] for i in range(len(x)) if 0 <= s - i < len(y)) for s in range(len(x) + len(y) - 1)]

    rows = [convolve(power(a, j), power(b, n - j)) for j in range(n + 1)]
    values = []
    for k in range(n):
        for p, q in ((rows[k + 1], rows[k]), (rows[k], rows[k + 1])):
            values.append((mpmath.log(sum(x**alpha * y ** (1 - alpha) for x, y in zip(p, q))) / (alpha - 1), k))
    return max(values)


def test_an_interior_maximum_over_k_is_found():
    """A mirror pair with a monotone likelihood ratio whose worst k is interior (n = 7, α = 2:
    k = 1 and its mirror image k = 5, not 0 or 6): every k is computed, so it is found."""
    with mpmath.workdps(50):
        raw = [mpmath.mpf(v) for v in ("1.62731e-12", "1.38205e-15", "9.04906e-04", "7.21536e-01", "4.49902e-09",
                                       "2.77560e-01")]
        a = [v / sum(raw) for v in raw]
        b = a[::-1]
        expected, k = _brute_force(a, b, 7, 2)
    assert 0 < k < 6
    la, lb = (np.array([float(mpmath.log(v)) for v in pmf]) for pmf in (a, b))
    found = kfamily.pair_worst_over_k(la, lb, 7, [2.0])[0]
    assert found["lower"] == pytest.approx(float(expected), rel=1e-9)
    assert found["upper"] == pytest.approx(float(expected), rel=1e-9)
    assert 0 < found["k"] < 6


def test_beyond_n_2000_the_cli_prints_the_bracket(capsys):
    code = main(["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.42", "--n", "2500",
                 "--neighbours", "pm-c", "--alpha", "2", "--alpha", "inf", "--json"])
    records = json.loads(capsys.readouterr().out)
    assert code == 0
    for record in records:
        assert record["search"] == "windowed" and record["certified_upper"] >= record["divergence"]
        assert "every k" in record["certificate"] and "over the ±c family only" in record["certificate"]
    for record in records:  # rounded outward to the 9 digits n·1e−13 leaves
        assert all(float(f"{record[key]:.9g}") == record[key] for key in ("divergence", "certified_upper"))
    assert records[0]["certified_upper"] <= records[0]["divergence"] * (1 + 2e-8)
    code = main(["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.42", "--n", "2500",
                 "--neighbours", "pm-c", "--alpha", "2"])
    out = capsys.readouterr().out
    assert code == 0 and "certified ≤" in out and "windowed" in out


@pytest.mark.parametrize("n, digits", [(2500, 9), (10_000, 9), (100_000, 8)])
def test_the_bracket_is_rounded_outward_to_the_digits_its_accuracy_leaves(n, digits):
    """Lower ends down, upper ends up, to the digits n·1e−13 leaves: a bracket still, and values that
    differ by the FFTs' rounding (their last bits, CPU-dependent) print the same."""
    assert math.floor(-math.log10(kfamily.accuracy(n)) + 1e-9) == digits
    rng = np.random.default_rng(3)
    for value in np.concatenate([10.0 ** rng.uniform(-6, 2, 200), [5.00113018727, 0.000928430395115]]):
        lower, upper = kfamily.outward(float(value), float(value), n)
        assert lower <= value <= upper and upper - lower <= 10.0 ** (math.floor(math.log10(value)) - digits + 1) * 1.0001
        assert float(f"{lower:.{digits}g}") == lower and float(f"{upper:.{digits}g}") == upper
    assert kfamily.outward(0.000928430395115, 0.000928430395115, n) == kfamily.outward(
        0.000928430395393, 0.000928430395393, n)  # this CPU's mirror image at n = 10⁴ and another's
    assert kfamily.outward(math.inf, math.inf, n) == (math.inf, math.inf)


def test_mirror_images_within_the_accuracy_tie_to_the_first_k():
    """At n = 10⁴ mirror images differ by ~3e−10 in the FFTs' rounding: within :func:`kfamily.accuracy`
    they tie, and the first k (then direction 0) is reported, whichever of the two came out larger."""
    n = 10_000
    lower = np.full((2, n), 0.5)
    lower[1, 0], lower[0, n - 1] = 1.0, 1.0 + 3e-10  # (x = −b, k = 0) and its mirror (x = +b, k = N)
    point = kfamily._point(2.0, lower, lower, (0.0, 0.0), 10.0, kfamily.accuracy(n))
    assert (point["k"], point["direction"], point["lower"]) == (0, 1, 1.0 + 3e-10)
    lower[0, n - 1] = 1.0 + 3e-9  # beyond the accuracy: a larger value, reported as such
    point = kfamily._point(2.0, lower, lower, (0.0, 0.0), 10.0, kfamily.accuracy(n))
    assert (point["k"], point["direction"]) == (n - 1, 0)


def test_beyond_the_windowed_range_n_is_refused(capsys):
    code = main(["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.42", "--n",
                 str(WINDOWED_MAX_N + 1), "--neighbours", "pm-c"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("rdpcalc: error: --n:") and str(WINDOWED_MAX_N) in err


def _direct_worst(la, lb, n, alphas):
    """max over k and both directions, every row by direct log-domain convolution (no FFT)."""
    from rdpcalc.numerics import fast

    rows = np.array([fast.log_mixed_power(la, lb, j, n - j) for j in range(n + 1)])
    forward, backward = fast.renyi_divergences(rows[1:], rows[:-1], np.array(alphas, dtype=float), both=True)
    return np.max(np.maximum(forward, backward), axis=0)


SKEWED = [  # (A, B) as log pmfs, n: concentrated or skewed pairs whose terms sit far out in σ
    (np.array([-10.53, -26.80, -21.38, -2.7e-5, -16.46]), np.array([-10.16, -1.49, -2.34, -0.41, -4.12]), 60),
    (np.log([0.0004, 0.0003, 0.999, 0.0002, 0.0001]), np.log([0.0001, 0.0002, 0.999, 0.0003, 0.0004]), 3),
]


@pytest.mark.parametrize("case", range(6))
def test_random_and_skewed_pairs_against_direct_convolution(case):
    """Random pairs of full support (fixed seeds) and two skewed ones the first windows were too
    narrow for: the bracket holds the direct value and closes on it (the windows widen)."""
    if case < len(SKEWED):
        la, lb, n = SKEWED[case]
        la, lb = la - np.logaddexp.reduce(la), lb - np.logaddexp.reduce(lb)
    else:
        rng = np.random.default_rng(case)
        m = int(rng.integers(2, 7))
        la, lb = (np.log(rng.dirichlet(np.full(m, 0.7))) for _ in range(2))
        n = int(rng.integers(3, 50))
    alphas = [1.0, 1.5, 5.0, math.inf]
    expected = _direct_worst(la, lb, n, alphas)
    for found, value in zip(kfamily.pair_worst_over_k(la, lb, n, alphas), expected):
        assert found["lower"] <= value * (1 + 1e-9) and found["upper"] >= value * (1 - 1e-9)
        if found["alpha"] != math.inf:
            assert found["lower"] == pytest.approx(value, rel=1e-9)
            assert found["upper"] == pytest.approx(value, rel=1e-9)


def test_a_large_order_keeps_a_finite_certified_end():
    """(α − 1)D beyond float's exponent range (α = 1000): the upper end is formed in the log
    domain, finite and equal to the value found."""
    la = np.log([0.7, 0.2, 0.1])
    found = kfamily.pair_worst_over_k(la, la[::-1].copy(), 20, [1000.0])[0]
    assert math.isfinite(found["upper"]) and found["upper"] == pytest.approx(found["lower"], rel=1e-9)
    assert found["lower"] == pytest.approx(float(_direct_worst(la, la[::-1].copy(), 20, [1000.0])[0]), rel=1e-9)
