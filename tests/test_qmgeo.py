"""QMGeo: the exact pmf under both readings, its infinite worst case, and the paper's formulas."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc import ParameterError
from rdpcalc.mechanisms import QMGeo
from rdpcalc.numerics import fast

from .oracles import chi_square_p_value, sample_qmgeo

KAPPA_SQUARED_D = F("0.005333") ** 2 * 3562


def pmf(mech: QMGeo, w) -> list[float]:
    with mpmath.workdps(40):
        return [float(v) for v in mech.pmf(F(w))]


def test_example_pmf_and_bias():
    s = QMGeo(8, F(1, 2), 1)
    assert pmf(s, "0.1") == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.45333333333, 0.22666666667, 0.11333333333,
                                           0.05666666667], rel=1e-10)
    assert pmf(QMGeo(8, F(1, 2), 1, "L"), "0.1") == pytest.approx(pmf(s, "0.1")[::-1], rel=1e-14)
    cases = [("S", "0.1", 0.24667), ("S", "-0.5", -0.32993), ("L", "0.1", -0.24667), ("L", "-1", -0.44432)]
    for orientation, w, mean in cases:
        assert rdpcalc.moments(QMGeo(8, F(1, 2), 1, orientation), x=w)["mean"] == pytest.approx(mean, abs=6e-6)
    for orientation in ("S", "L"):
        assert abs(rdpcalc.moments(QMGeo(8, F(1, 2), 1, orientation), x=0)["mean"]) < 1e-40


def test_mean_closed_form():
    """The mean in closed form [derived]: E = Bin(r) + Δ[λ E_{R−r−1} − (1−λ)(E_{r+1} − 1)] (S), E_m the
    mean of TGeo{1..m}, eq. (7)."""
    def tgeo_mean(m, p):
        q, b = 1 - p, m + 1
        return (1 - b * q ** (b - 1) + (b - 1) * q**b) / (p * (1 - q ** (b - 1)))

    R, p, W = 8, F(3, 10), F(1)
    mech = QMGeo(R, p, W)
    for w in (F(-9, 10), F(-1, 3), F(0), F(1, 7), F(4, 5)):
        r, lam = mech.interval(w)
        expected = mech.level(r) + mech.spacing * (lam * tgeo_mean(R - r - 1, p) - (1 - lam) * (tgeo_mean(r + 1, p) - 1))
        assert rdpcalc.moments(mech, x=w)["mean"] == pytest.approx(float(expected), rel=1e-13)


def test_distribution_for_both_readings_and_printed_normalisers_do_not_sum_to_one():
    for orientation in ("S", "L"):
        for tie in ("lower", "upper"):
            mech = QMGeo(8, F(1, 3), 1, orientation, "text", tie)
            for w in [F(-1), F(-5, 7), F(0), F(1, 10), F(3, 7), F(1)]:
                assert sum(pmf(mech, w)) == pytest.approx(1, rel=1e-15)
    # eq. (10) as printed (Wang & Gursoy 2023): the down-branch masses for r = 1 … 6
    printed = QMGeo(8, F(1, 2), 1, "S", "printed")
    sums = []
    for r in range(1, 7):
        with mpmath.workdps(30):
            sums.append(float(mpmath.fsum(printed.down_component(r))))
    assert sums == pytest.approx([1.5, 1.1667, 1.0714, 1.0333, 1.0161, 1.0079], abs=6e-5)
    with pytest.raises(ParameterError, match="^normalisers: "):
        printed.pmf(F(-1))  # r = 0: eq. (10) divides by zero
    with pytest.raises(ParameterError, match="^normalisers: "):
        printed.up_component(6)  # r = R − 2: eq. (11) divides by zero
    with pytest.raises(ParameterError, match="^normalisers: "):
        rdpcalc.divergence(printed)


def test_one_sided_at_levels_and_degenerate_at_the_ends():
    s, l = QMGeo(8, F(1, 2), 1, "S"), QMGeo(8, F(1, 2), 1, "L")
    level = s.level(3)
    assert all(v == 0 for v in pmf(s, level)[4:])
    assert all(v == 0 for v in pmf(l, level)[:4])
    assert pmf(s, -1)[0] == 1 and pmf(s, 1)[-1] == 1
    assert pmf(l, -1)[0] == 0 and pmf(l, 1)[-1] == 0
    # the tie rule moves an input on a level into the interval below (λ = 1)
    assert pmf(QMGeo(8, F(1, 2), 1, "S", "text", "upper"), level)[:3] == [0, 0, 0]


def test_p_one_is_stochastic_rounding_under_s_and_anti_rounding_under_l():
    for w in (F(-2, 3), F(1, 10), F(5, 6)):
        s_mean = rdpcalc.moments(QMGeo(8, 1, 1, "S"), x=w)["mean"]
        assert s_mean == pytest.approx(float(w), abs=1e-15)
        mech = QMGeo(8, 1, 1, "L")
        r, _ = mech.interval(w)
        assert rdpcalc.moments(mech, x=w)["mean"] == pytest.approx(float(mech.level(r) + mech.level(r + 1) - w), abs=1e-15)


def test_variance_and_mse_non_increasing_in_p():
    for orientation in ("S", "L"):
        for w in ("-0.6", "0.05", "0.9"):
            rows = [rdpcalc.moments(QMGeo(8, F(p, 100), 1, orientation), x=w) for p in range(1, 100, 7)]
            for a, b in zip(rows, rows[1:]):
                assert b["variance"] <= a["variance"] + 1e-15
                assert b["mse"] <= a["mse"] + 1e-15


@pytest.mark.parametrize("orientation", ["S", "L"])
def test_worst_case_is_infinite_with_witnesses(orientation):
    mech = QMGeo(8, F(1, 2), 1, orientation)
    for engine in ("fast", "exact"):
        records = rdpcalc.divergence(mech, alphas=[1, 2, "inf"], engine=engine, dps=30)
        for record in records:
            assert record["divergence"] == math.inf
            # the witness pair: some output has probability 0 under x′ but not under x
            exact = {float(b): b for b in mech.breakpoints()}  # records carry floats; the witnesses are levels
            p, q = pmf(mech, exact[record["x"]]), pmf(mech, exact[record["x_prime"]])
            assert any(a > 0 and b == 0 for a, b in zip(p, q))
    # the extreme pair itself is infinite under both readings (Q(±W) is a point mass under S;
    # under L, Q(−W) never outputs Bin(0))
    pair = rdpcalc.divergence(mech, alphas=[1, "inf"], choose=rdpcalc.NeighbourOptions(x=-1, x_prime=1))
    assert all(r["divergence"] == math.inf for r in pair)


def test_supremum_away_from_the_levels_grows_like_log_one_over_eta():
    # reference values (an independent mpmath computation), S, R = 8, p = 0.5: w = Bin(0) + ηΔ vs Bin(7) − ηΔ
    mech = QMGeo(8, F(1, 2), 1)
    expected = {F(1, 10): 7.0414, F(1, 100): 9.4393, F(1, 10**4): 14.0544, F(1, 10**8): 23.2649}
    for eta, value in expected.items():
        record = rdpcalc.divergence(mech, alphas=["inf"], choose=rdpcalc.NeighbourOptions(margin=eta))[0]
        assert record["divergence"] == pytest.approx(value, abs=6e-5)
        choose = rdpcalc.NeighbourOptions(x=mech.level(0) + eta * mech.spacing, x_prime=mech.level(7) - eta * mech.spacing)
        pair = rdpcalc.divergence(mech, alphas=["inf"], choose=choose)[0]
        assert pair["divergence"] == pytest.approx(value, abs=6e-5)


def test_paper_formulas_eq_21_and_midpoint_pair():
    values = {(8, "0.5"): 4.8520303, (8, "0.9"): 13.9208711, (16, "0.9"): 32.3415518}
    for (R, p), value in values.items():
        with mpmath.workdps(30):
            assert float(QMGeo(R, F(p), 1).eps_dp_paper()) == pytest.approx(value, abs=6e-8)
    with mpmath.workdps(30):
        assert float(QMGeo(8, F(1, 2), 1).eps_midpoint()) == pytest.approx(4.8441871, abs=6e-8)
        assert float(QMGeo(4, F(1, 2), 1).eps_midpoint()) == pytest.approx(math.log(7), rel=1e-14)
        # (21) is affine in R with slope −ln(1−p), minimised over p at 1/(R−1)
        slope = QMGeo(9, F(3, 10), 1).eps_dp_paper() - QMGeo(8, F(3, 10), 1).eps_dp_paper()
        assert float(slope) == pytest.approx(-math.log(0.7), rel=1e-14)
        grid = [QMGeo(8, F(i, 1000), 1).eps_dp_paper() for i in range(100, 200)]
        assert float(min(grid)) == pytest.approx(2.8708142, abs=1e-4)
        assert float(QMGeo(8, F(1, 7), 1).eps_dp_paper()) == pytest.approx(2.8708142, abs=6e-8)
    for orientation in ("S", "L"):
        mech = QMGeo(8, F(1, 2), 1, orientation)
        x, x_prime = mech.midpoint_pair()
        assert rdpcalc.divergence(mech, alphas=["inf"],
                                  choose=rdpcalc.NeighbourOptions(x=x, x_prime=x_prime))[0]["divergence"] == pytest.approx(
            4.8441871, abs=6e-8)


def test_legend_numbers_of_eq_27():
    # the legends of Figs. 5–6 (Wang & Gursoy 2023): κ²d·|(25)| at α = 2, d = 3562, κ = 0.005333
    expected = {(8, "0.9"): ("2.626", 2.62558), (16, "0.9"): ("4.492", 4.49172), (8, "0.5"): ("0.784", 0.786745)}
    for (R, p), (legend, computed) in expected.items():
        mech = QMGeo(R, F(p), F("0.05"))
        with mpmath.workdps(30):
            printed = mech.rdp_paper(2)
        assert printed < 0
        value = float(KAPPA_SQUARED_D * abs(printed))
        assert value == pytest.approx(computed, abs=6e-6)
        if legend != "0.784":
            assert f"{value:.3f}" == legend
        else:  # the Fig. 5 legend's 0.784 does not reproduce: eq. (27) gives 0.787
            assert f"{value:.3f}" == "0.787"
    records = rdpcalc.bound(QMGeo(8, F("0.9"), F("0.05")), alphas=[2])
    row = next(r for r in records if r["quantity"].startswith("κ²d·|(25)|"))
    assert round(row["value"], 3) == 2.626 and "2.626" in row["note"]


def test_eq_25_errata_and_the_corrected_mirror_model():
    mech = QMGeo(8, F(1, 2), 1)
    with mpmath.workdps(30):
        assert float(mech.rdp_paper(2)) == pytest.approx(-7.765993, abs=6e-7)
        assert float(QMGeo(8, F("0.9"), 1).rdp_paper(2)) == pytest.approx(-25.917223, abs=6e-7)
        printed = [abs(mech.rdp_paper(a)) for a in (1.1, 1.5, 2, 3, 5, 10, 100)]
        model = [mech.mirror_model_divergence(a) for a in (1.1, 1.5, 2, 3, 5, 10, 100)]
        assert all(b < a for a, b in zip(printed, printed[1:]))  # |(25)| decreases in α: not a divergence
        assert all(b > a for a, b in zip(model, model[1:]))
        assert float(abs(mech.rdp_paper(2))) > float(mech.mirror_model_divergence(math.inf))
        assert float(mech.rdp_printed_sum(2)) == pytest.approx(4.993405, abs=6e-7)
    expected = {(8, "0.9"): 16.0137357, (8, "0.5"): 4.2963283, (16, "0.9"): 34.4344164}
    for (R, p), value in expected.items():
        model = QMGeo(R, F(p), 1)
        with mpmath.workdps(30):
            assert float(model.mirror_model_divergence(2)) == pytest.approx(value, abs=6e-8)
        # the closed form against direct summation over the two pmfs (fast engine)
        pf, q = float(F(p)), 1 - float(F(p))
        j = np.arange(R)
        log_p = np.log(pf) + j * np.log(q) - np.log1p(-(q**R))
        direct = fast.renyi_divergences(log_p, log_p[::-1].copy(), np.array([1.0, 1.5, 2.0, 7.0, math.inf]))
        with mpmath.workdps(30):
            closed = [float(model.mirror_model_divergence(a)) for a in (1, 1.5, 2, 7, math.inf)]
        assert list(direct) == pytest.approx(closed, rel=1e-12)
    with mpmath.workdps(30):
        assert float(mech.mirror_model_divergence(1)) == pytest.approx(3.5092275, abs=6e-8)


@pytest.mark.parametrize("orientation, w, R, p", [("S", 0.3, 8, 0.5), ("L", -0.77, 8, 0.9), ("S", 0.05, 16, 0.9),
                                                  ("L", 0.2, 8, 0.2)])
def test_monte_carlo_sampler_matches_pmf(orientation, w, R, p):
    rng = np.random.default_rng(20261122)
    samples = sample_qmgeo(w, R, p, 1.0, orientation, 200_000, rng)
    mech = QMGeo(R, F(str(p)), 1, orientation)
    assert chi_square_p_value(samples, pmf(mech, F(str(w)))) > 1e-4
    other = QMGeo(R, F(str(p)), 1, "L" if orientation == "S" else "S")
    assert chi_square_p_value(samples, pmf(other, F(str(w)))) < 1e-6  # the other reading is rejected


@pytest.mark.parametrize("kwargs, parameter", [({"R": 1, "p": 0.5, "w_max": 1}, "R"), ({"R": 8, "p": 0, "w_max": 1}, "p"),
                                               ({"R": 8, "p": 1.5, "w_max": 1}, "p"), ({"R": 8, "p": 0.5, "w_max": 0}, "w_max"),
                                               ({"R": 8, "p": 0.5, "w_max": 1, "orientation": "X"}, "orientation")])
def test_invalid_parameters(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        QMGeo(**kwargs)
    assert info.value.parameter == parameter
