"""The two engines: agreement, monotonicity, limits, tilting, and the divergence formulas."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rdpcalc
from rdpcalc import resources
from rdpcalc.logdomain import logsumexp
from rdpcalc.mechanisms import PBM, RQM, log_pmf
from rdpcalc.numerics import FastEngine, exact, fast, levels

from .oracles import renyi_float

ORDER = st.one_of(st.just(1.0), st.floats(1.0 + 1e-9, 2.0), st.floats(2.0, 1e4), st.just(math.inf))


def rqm_strategy():
    return st.builds(
        lambda m, ratio, q: RQM(F(3, 2), F(3, 2) * ratio, m, q),
        st.integers(2, 24),
        st.fractions(F(1, 20), F(10)).filter(lambda v: v > 0),
        st.fractions(F(1, 100), F(99, 100)),
    )


def pbm_strategy():
    return st.builds(
        lambda theta, trials: PBM(F(3, 2), theta, trials),
        st.fractions(F(1, 100), F(49, 100)),
        st.integers(1, 20),
    )


def relative_gap(a: float, b: float) -> float:
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


@settings(max_examples=30, deadline=None)
@given(mech=st.one_of(rqm_strategy(), pbm_strategy()), n=st.integers(1, 6), alphas=st.lists(ORDER, min_size=1, max_size=4))
def test_fast_agrees_with_exact(mech, n, alphas):
    fast_rows = rdpcalc.divergence(mech, n=n, alphas=alphas, engine="fast")
    exact_rows = rdpcalc.divergence(mech, n=n, alphas=alphas, engine="exact", dps=40)
    for f, e in zip(fast_rows, exact_rows, strict=True):
        # absolute slack for values that are tiny compared with the float64 inputs' rounding
        assert abs(f["divergence"] - e["divergence"]) <= 1e-10 * e["divergence"] + 1e-14


@settings(max_examples=30, deadline=None)
@given(mech=st.one_of(rqm_strategy(), pbm_strategy()), n=st.integers(1, 8))
def test_non_decreasing_in_alpha(mech, n):
    alphas = [1, 1.0001, 1.5, 2, 3, 10, 100, 1000, 1e4, math.inf]
    values = [r["divergence"] for r in rdpcalc.divergence(mech, n=n, alphas=alphas)]
    assert all(v >= 0 for v in values)
    for a, b in zip(values, values[1:]):
        assert b >= a * (1 - 1e-12)


@settings(max_examples=20, deadline=None)
@given(mech=st.one_of(rqm_strategy(), pbm_strategy()), alpha=ORDER)
@example(mech=RQM(F(3, 2), F(3, 40), 14, F(1, 100)), alpha=65.0)
def test_worst_case_non_increasing_in_n(mech, alpha):
    """W_n(α) is non-increasing in n (data processing), so a value found at n′ is at most the
    certified bound at every n < n′. (The values found need not be monotone themselves: where
    the enumeration ran at a grid of orders, α between them gets the best of the configurations
    found there, a lower bound; e.g. RQM(3/2, 3/40, 14, 1/100) at α = 65 finds 3.7053 at n = 5
    and 3.8230 at n = 9, both below the certified 3.8274.)"""
    records = [rdpcalc.divergence(mech, n=n, alphas=[alpha])[0] for n in (1, 2, 3, 5, 9)]
    found = [record["divergence"] for record in records]
    upper = [record.get("certified_upper", record["divergence"]) for record in records]
    for index, bound in enumerate(upper):
        assert found[index] <= bound * (1 + 1e-12)
        assert all(later <= bound * (1 + 1e-12) for later in found[index + 1:])


def test_single_client_divergence_against_textbook_formula():
    mech = RQM(1, 1, 4, F(1, 2))  # pmfs of a hand-checkable example of Lemma 5.1 (Youn et al. 2023, eq. (2))
    p = [1 / 16, 3 / 32, 3 / 8, 15 / 32]
    q = [15 / 32, 3 / 8, 3 / 32, 1 / 16]
    for alpha in (1, 1.5, 2, 7, 50, math.inf):
        got = rdpcalc.divergence(mech, n=1, alphas=[alpha], choose=rdpcalc.NeighbourOptions(x=1, x_prime=-1))[0]["divergence"]
        assert got == pytest.approx(renyi_float(p, q, alpha), rel=1e-13)


def test_divergence_formulas_edge_cases():
    with np.errstate(divide="ignore"):
        lp = np.log(np.array([0.5, 0.5, 0.0]))
    lq = np.log(np.array([0.25, 0.25, 0.5]))
    alphas = np.array([1.0, 2.0, math.inf])
    got = fast.renyi_divergences(lp, lq, alphas)
    assert got == pytest.approx([math.log(2), math.log(2), math.log(2)], rel=1e-14)
    # P > 0 where Q = 0: +inf for every order, both engines
    assert np.all(np.isinf(fast.renyi_divergences(lq, lp, alphas)))
    import gmpy2

    with exact.precision(30):
        p = [gmpy2.mpfr(0.5), gmpy2.mpfr(0.5), gmpy2.mpfr(0)]
        q = [gmpy2.mpfr(0.25), gmpy2.mpfr(0.25), gmpy2.mpfr(0.5)]
    assert all(math.isinf(float(v)) for v in exact.renyi_divergences(q, p, [1.0, 2.0, math.inf], 30))
    # identical distributions: exactly zero, never negative
    same = fast.renyi_divergences(lq, lq, np.array([1.0, 1 + 1e-12, 2.0, 1e6, math.inf]))
    assert np.all(same == 0)


def test_near_one_is_continuous_with_kl():
    mech = RQM("1.5", "1.5", 16, "0.42")
    for engine in ("fast", "exact"):
        kl, near = (r["divergence"] for r in rdpcalc.divergence(mech, n=3, alphas=[1, 1 + 1e-10], engine=engine))
        assert near == pytest.approx(kl, rel=1e-8)
        assert near >= kl


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_level_rows_match_the_log_domain_convolution(method):
    mech = RQM("1.5", "1.5", 16, "0.42")
    plus, minus = log_pmf(mech, F(3, 2)), log_pmf(mech, F(-3, 2))
    n, js = 120, [0, 1, 37, 60, 119, 120]
    rows = levels.level_rows(plus, minus, n, js, method=method)
    for row, j in zip(rows, js, strict=True):
        direct = fast.log_mixed_power(plus, minus, j, n - j)
        assert np.max(np.abs(np.expm1(row - direct))) < 1e-10


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_level_rows_match_exact_engine_tails_included(method):
    mech = PBM("1.5", "0.35", 16)
    plus, minus = log_pmf(mech, F(3, 2)), log_pmf(mech, F(-3, 2))
    n, js = 150, [0, 60, 90, 150]
    rows = levels.level_rows(plus, minus, n, js, method=method)
    a, b = exact.from_mpmath(_mp_pmf(mech, F(3, 2))), exact.from_mpmath(_mp_pmf(mech, F(-3, 2)))
    import gmpy2

    with exact.precision(40):
        reference = exact.mixed_power_rows(a, b, n, js)
        ref_log = np.array([[float(gmpy2.log(v)) for v in reference[j]] for j in js])
    assert ref_log.min() < -1000  # the tails lie far below float64's smallest number
    assert np.max(np.abs(np.expm1(rows - ref_log))) < 1e-10


def test_sweep_levels_match_exact_engine_tails_included():
    # one Pascal pass per tilt gives every level; its tilts are chosen for the largest one
    mech = PBM("1.5", "0.35", 16)
    plus, minus = log_pmf(mech, F(3, 2)), log_pmf(mech, F(-3, 2))
    swept = dict(levels.sweep_levels(plus, minus, [1, 7, 90, 150]))
    assert sorted(swept) == [1, 7, 90, 150]
    a, b = exact.from_mpmath(_mp_pmf(mech, F(3, 2))), exact.from_mpmath(_mp_pmf(mech, F(-3, 2)))
    import gmpy2

    for n, js in ((7, [0, 3, 7]), (90, [0, 45, 90]), (150, [0, 60, 149])):
        with exact.precision(40):
            reference = exact.mixed_power_rows(a, b, n, js)
            ref_log = np.array([[float(gmpy2.log(v)) for v in reference[j]] for j in js])
        assert np.max(np.abs(np.expm1(swept[n][js] - ref_log))) < 1e-10
    assert ref_log.min() < -1000


def test_direct_rows_keep_exact_zeros_of_sparse_components():
    with np.errstate(divide="ignore"):
        plus = np.log(np.array([0.5, 0.0, 0.3, 0.0, 0.2]))  # support {0, 2, 4}
        minus = np.log(np.array([0.0, 0.6, 0.0, 0.4, 0.0]))  # support {1, 3}
    n = 9
    rows = levels.level_rows(plus, minus, n)
    for j, row in enumerate(rows):
        reference = fast.log_mixed_power(plus, minus, j, n - j)
        assert np.array_equal(np.isfinite(row), np.isfinite(reference))
        finite = np.isfinite(reference)
        assert np.max(np.abs(np.expm1(row[finite] - reference[finite]))) < 1e-12
    with pytest.raises(levels.TiltingFailed):
        levels.level_rows(plus, minus, n, method="fft")


def test_fft_rows_sharing_tilts_cover_every_row():
    # rows of nearby j share their tilts; every row of a long level must still be covered
    mech = RQM("1", "0.5", 4, "0.8")
    plus, minus = log_pmf(mech, F(1)), log_pmf(mech, F(-1))
    n = 400
    by_fft = levels.level_rows(plus, minus, n, method="fft")
    by_direct = levels.level_rows(plus, minus, n, method="direct")
    assert by_direct.min() < -1000
    assert np.max(np.abs(np.expm1(by_fft - by_direct))) < 1e-10


def test_wide_components_are_covered_by_both_methods():
    # one DDG client with s = σ/γ = 96 spans 2239 points; a tilt θ moves its mean by ~s²θ, so
    # its whole bulk lay within one step (0.05) of the even θ grid and neither method could
    # aim its tilts (both raised TiltingFailed, leaving the O(L²) log-domain powers)
    mech = rdpcalc.make_mechanism("ddg", c="1.5", gamma="0.125", sigma=12)
    engine = FastEngine()
    plus, minus = engine.client(mech, mech.bound), engine.client(mech, -mech.bound)
    assert len(plus) > 2000
    n, js = 39, [0, 39]
    by_direct, by_fft = (levels.level_rows(plus, minus, n, js, method=method) for method in ("direct", "fft"))
    assert by_direct.min() < -1000 and np.all(np.isfinite(by_direct))
    assert np.max(np.abs(np.expm1(by_fft - by_direct))) < 1e-10


def test_fast_engine_keeps_recent_long_levels_and_totals_read_only():
    # one query asks for the same level several times (its search, tail bracket and PLD):
    # long ones (≥ 2^15 points, costly to recompute) are kept, short ones recomputed
    engine = FastEngine()
    z = np.arange(-2300, 2301)
    wide = -(z / 200.0) ** 2 / 2
    wide -= np.logaddexp.reduce(wide)
    rows = engine.level(wide, wide[::-1].copy(), 8, [0, 3])
    assert rows.shape[1] >= 2**15 and not rows.flags.writeable
    assert np.array_equal(rows, levels.level_rows(wide, wide[::-1], 8, [0, 3]))
    assert engine.level(wide.copy(), wide[::-1].copy(), 8, [0, 3]) is rows  # the same contents: kept
    assert engine.level(wide, wide[::-1].copy(), 8, [0, 4]) is not rows
    totals = engine.add_client(wide, rows)
    assert not totals.flags.writeable and engine.add_client(wide.copy(), rows.copy()) is totals
    assert np.array_equal(totals, fast.log_convolve(wide, np.array(rows)))
    with pytest.raises(ValueError):
        rows[0, 0] = 0.0
    mech = RQM("1.5", "1.5", 16, "0.42")
    plus, minus = log_pmf(mech, F(3, 2)), log_pmf(mech, F(-3, 2))
    short = engine.level(plus, minus, 6, [0, 2])
    assert engine.level(plus, minus, 6, [0, 2]) is not short
    assert np.array_equal(engine.level(plus, minus, 6, [0, 2]), short)


def test_patchy_fft_windows_fall_back_to_direct_rows():
    # nearly all mass at both ends: the tilted rows are nearly periodic, FFT windows patchy
    mech = RQM(1, 1, 16, F(1, 10**12))
    plus, minus = log_pmf(mech, F(1)), log_pmf(mech, F(-1))
    n, js = 300, [0, 150, 300]
    assert n > levels.DIRECT_MAX_N
    with pytest.raises(levels.TiltingFailed):
        levels.level_rows(plus, minus, n, js, method="fft")
    rows = levels.level_rows(plus, minus, n, js)
    for row, j in zip(rows, js, strict=True):
        reference = fast.log_mixed_power(plus, minus, j, n - j)
        assert np.max(np.abs(np.expm1(row - reference))) < 1e-10


def test_pruned_divergence_sums_against_the_exact_sums():
    # supports above fast._PRUNE_ABOVE skip negligible terms; D₂ has its own exact form
    mech = RQM("1.5", "1.5", 8, "0.6")
    plus, minus = log_pmf(mech, F(3, 2)), log_pmf(mech, F(-3, 2))
    rows = levels.level_rows(plus, minus, 700, [349, 350])
    assert rows.shape[1] > fast._PRUNE_ABOVE
    alphas = [1.0, 1.5, 2.0, 10.0, 1000.0, math.inf]
    forward, backward = fast.renyi_divergences(rows[1], rows[0], np.array(alphas), both=True)
    import gmpy2

    with exact.precision(40):
        p = [gmpy2.exp(gmpy2.mpfr(float(v))) for v in rows[1]]
        q = [gmpy2.exp(gmpy2.mpfr(float(v))) for v in rows[0]]
    for got, (x, y) in ((forward, (p, q)), (backward, (q, p))):
        reference = [float(v) for v in exact.renyi_divergences(x, y, alphas, 30)]
        for value, ref in zip(got, reference, strict=True):
            assert relative_gap(value, ref) < 1e-11


def test_order_two_form_against_mpmath():
    import mpmath

    u = np.array([-np.inf, -800.0, -30.0, -1.0, -1e-9, 0.0, 1e-9, 0.3, 1.0, 1.0000001, 40.0, 900.0])
    got = fast._log_g(u, 2.0)
    general = fast._log_g(u, 2.0 + 1e-12)
    with mpmath.workdps(50):
        for value, g, x in zip(got, general, u, strict=True):
            if x == 0:
                assert value == -np.inf
                continue
            e = mpmath.exp(mpmath.mpf(x)) if np.isfinite(x) else mpmath.mpf(0)
            reference = float(mpmath.log((e - 1) ** 2) - max(x, 0.0))  # log(g e^{−max(u, 0)})
            assert relative_gap(value, reference) < 1e-14 or abs(value - reference) < 1e-13
            assert abs(g - reference) < 1e-9 * max(1.0, abs(reference))


def _mp_pmf(mech, x):
    import mpmath

    with mpmath.workdps(45):
        return mech.pmf(x)


@pytest.mark.slow
def test_large_n_is_finite_and_agrees_with_the_worst_case_rows():
    mech = RQM("1.5", "1.5", 16, "0.42")
    alphas = [1, 2, 10, 100, 1e4, math.inf]
    large = rdpcalc.divergence(mech, n=10_000, alphas=alphas, choose=rdpcalc.NeighbourOptions(others_plus=9_999))
    assert all(math.isfinite(r["divergence"]) and r["divergence"] > 0 for r in large)
    # at n = 140 one configuration (rows k, k+1) and the whole level (all k) must agree
    one = rdpcalc.divergence(mech, n=140, alphas=alphas, choose=rdpcalc.NeighbourOptions(others_plus=139))
    every = rdpcalc.divergence(mech, n=140, alphas=alphas, choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    for a, b in zip(one, every, strict=True):
        assert b["others_plus"] in (139, 0)
        assert relative_gap(a["divergence"], b["divergence"]) < 1e-10


def test_tilted_path_against_direct_path_in_the_engine():
    mech = RQM("1.5", "3", 16, "0.57")
    alphas = [1, 2, 50, 1e4, math.inf]
    direct = rdpcalc.divergence(mech, n=150, alphas=alphas,
                                choose=rdpcalc.NeighbourOptions(others_plus=100))  # n > levels.DIRECT_MAX_N: tilted FFT
    from rdpcalc.numerics import fast as fast_module

    plus, minus = log_pmf(mech, F(3, 2)), log_pmf(mech, F(-3, 2))
    rest = fast_module.log_mixed_power(plus, minus, 100, 49)
    p, q = fast_module.log_convolve(plus, rest), fast_module.log_convolve(minus, rest)
    forward = fast_module.renyi_divergences(p, q, np.array(alphas))
    backward = fast_module.renyi_divergences(q, p, np.array(alphas))
    for record, f, b in zip(direct, forward, backward, strict=True):
        assert relative_gap(record["divergence"], max(f, b)) < 1e-10


def test_grid_of_one_client_against_every_pair_one_by_one():
    """The grid search batches the pairs sharing their x; it must give the maximum over the
    pairs computed one by one, and the first pair attaining it."""
    from rdpcalc.numerics import fast as fast_module

    mech = RQM("1.5", "1.5", 8, "0.42")
    alphas = [1, 2, 10, math.inf]
    records = rdpcalc.divergence(mech, alphas=alphas, choose=rdpcalc.NeighbourOptions(grid=9))
    inputs = [F(-3, 2) + 3 * F(i, 8) for i in range(9)]
    values = {(x, y): fast_module.renyi_divergences(log_pmf(mech, x), log_pmf(mech, y), np.array(alphas, dtype=float))
              for x in inputs for y in inputs if x != y}
    for index, record in enumerate(records):
        best = max(v[index] for v in values.values())
        first = next(pair for pair, v in values.items() if v[index] == best)
        assert record["divergence"] == best and (F(record["x"]).limit_denominator(100),
                                                 F(record["x_prime"]).limit_denominator(100)) == first


def test_rational_strings_are_exact():
    from fractions import Fraction

    from rdpcalc.errors import ParameterError
    from rdpcalc.exactnum import to_fraction

    assert to_fraction("21/50", "q") == Fraction(21, 50) == to_fraction("0.42", "q")
    assert to_fraction(" 1.5 / 3e1 ", "q") == Fraction(1, 20)
    for text in ("1/0", "1/2/3", "/2", "inf/2"):
        with pytest.raises(ParameterError, match="^q: "):
            to_fraction(text, "q")


def test_the_compiled_screen_is_numpys_log_sum_exp(monkeypatch):
    """The search's compiled screen (orders 1, ≥ 2 and ∞, both directions) against the same sums
    written with numpy (the screen of small batches), on long random rows with zeros: where
    P = 0 (no term), where Q = 0 < P (+∞), both 0, a row of zeros (−∞); with one stripe and with
    several; and the screen takes the compiled path from COMPILED_SCREEN_ABOVE numbers or
    COMPILED_SCREEN_POINTS points on."""
    from rdpcalc.numerics import trees

    rng = np.random.default_rng(7)
    rows, points = 9, 5000
    lp, lq = (rng.normal(0, 3, (rows, points)) for _ in range(2))
    lp, lq = lp - logsumexp(lp, axis=-1, keepdims=True), lq - logsumexp(lq, axis=-1, keepdims=True)
    lp[1, :100] = -np.inf  # P = 0 on part of the support
    lq[2, 7] = -np.inf  # Q = 0 < P: +inf one way
    lp[3, 50:60] = lq[3, 50:60] = -np.inf  # both 0
    lp[4] = -np.inf  # a row with no mass
    alphas = np.array([2.0, 2.5, 7.0, 64.0, 1000.0, np.inf, 1.0])
    expected = fast.plain_screen(lp, lq, alphas)
    normal = [0, 5, 6, 7, 8]  # rows of positive pmfs: numpy's screen against the accurate divergences
    accurate = fast.renyi_divergences(lp[normal], lq[normal], alphas, both=True)
    assert np.allclose(expected[:, normal], np.array(accurate), rtol=1e-9, atol=1e-9)
    for threads in (1, 3):
        with resources.threads_of(threads):
            ours = trees.kernels().screen_rows(lp, lq, alphas)
        assert np.array_equal(np.isinf(ours), np.isinf(expected)) and np.array_equal(np.sign(ours), np.sign(expected))
        finite = np.isfinite(expected)
        assert np.all(np.abs(ours[finite] - expected[finite]) <= 1e-12 * (1 + np.abs(expected[finite])))
    assert np.isposinf(ours[0, 2, 0]) and np.isneginf(ours[0, 4, 0]) and np.isposinf(ours[1, 4, 0]) and np.all(np.isfinite(ours[:, 3]))
    calls = []
    monkeypatch.setattr(trees, "screen_rows", lambda *args: calls.append(args) or expected)
    size = lp.size * len(alphas)
    for threshold, points_threshold, compiled in ((size, points + 1, True), (size + 1, points + 1, False),
                                                  (size + 1, points, True)):
        monkeypatch.setattr(fast, "COMPILED_SCREEN_ABOVE", threshold)
        monkeypatch.setattr(fast, "COMPILED_SCREEN_POINTS", points_threshold)
        calls.clear()
        forward, backward = fast.screened_divergences(lp, lq, alphas)
        assert bool(calls) == compiled and np.array_equal(forward, expected[0]) and np.array_equal(backward, expected[1])


def test_log_convolve_each_matches_one_row_at_a_time():
    """Rows with zeros (−inf), long tails far below the peak and a row with no mass."""
    rng = np.random.default_rng(5)
    short = rng.normal(size=(4, 9)) * 30 - 50
    short[1, [0, 4]] = -np.inf
    short[3] = -np.inf
    long = -np.arange(3000) / 3.0 + rng.normal(size=3000)
    long[100:140] = -np.inf
    each = fast.log_convolve_each(short, long)
    for row, expected in zip(each, (fast.log_convolve(s, long) for s in short)):
        assert np.array_equal(np.isinf(row), np.isinf(expected))
        finite = np.isfinite(expected)
        assert np.all(np.abs(row[finite] - expected[finite]) <= 1e-12 * np.maximum(1.0, np.abs(expected[finite])))
