"""CorBin-FL: LDPQ and CorBinQ laws against exact enumeration of Algorithm 2, the PLDP and Rényi
curves, the infinite joint view, MSE and the paper's Theorems as printed and corrected."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc import ParameterError
from rdpcalc.mechanisms.corbin import CorBin, alpha_of_eps, eps_of_alpha, rr_renyi

from .oracles import corbin_pair_by_enumeration

ORDER = [("-", "-"), ("-", "+"), ("+", "-"), ("+", "+")]


def test_alpha_of_eps_and_back():
    table = {0.5: 4.0829881650735966, 1: 2.1639534137386528, 3: 1.1047913929825119, 5: 1.0135673098126085,
             10: 1.0000908039820194}
    with mpmath.workdps(40):
        for eps, alpha in table.items():
            a = alpha_of_eps(eps)
            assert float(a) == pytest.approx(alpha, rel=1e-15)
            assert float((a + 1) / (a - 1)) == pytest.approx(math.exp(eps), rel=1e-14)
            assert float(eps_of_alpha(a)) == pytest.approx(eps, rel=1e-14)


@pytest.mark.parametrize("d", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("line14", ["fixed", "printed"])
def test_pair_joint_equals_enumeration_of_algorithm_2(d, line14):
    alpha, r = F(17, 8), F(1, 2)
    mech = CorBin(alpha_p=alpha, r=r, d=d, view="joint", line14=line14)
    grid = [F(k, 10) * r for k in range(-10, 11, 3)]
    for x in grid:
        for y in grid:
            oracle = corbin_pair_by_enumeration(alpha, r, x, y, d, line14)
            with mpmath.workdps(50):
                got = mech.pair_joint(x, y)
                for value, cell in zip(got, ORDER, strict=True):
                    exact = oracle[cell]
                    assert abs(value - mpmath.mpf(exact.numerator) / exact.denominator) < mpmath.mpf(10) ** -45
            if line14 == "fixed":  # marginals are LDPQ's exactly (C4)
                assert oracle[("+", "-")] + oracle[("+", "+")] == F(1, 2) + x / (2 * r * alpha)
                assert oracle[("-", "+")] + oracle[("+", "+")] == F(1, 2) + y / (2 * r * alpha)
                if d == 0:
                    q1, q2 = F(1, 2) + x / (2 * r * alpha), F(1, 2) + y / (2 * r * alpha)
                    assert oracle[("-", "-")] == (1 - q1) * (1 - q2)


def test_printed_line_14_breaks_unbiasedness():
    mech = CorBin(eps_p=1, r=F(1, 2), d=5, view="joint", line14="printed")
    with mpmath.workdps(30):
        joint = mech.pair_joint(F(2, 5), F(-1, 5))
        assert float(joint[1] + joint[3]) == pytest.approx(0.317806, abs=6e-7)
        assert float(mech.up_probability(F(-1, 5))) == pytest.approx(0.407577, abs=6e-7)


def test_fixed_pair_is_near_the_ideal_coupling_and_mse_formula():
    for eps in (F(1, 2), F(1), F(3)):
        for d in (1, 3, 5, 7):
            finite = CorBin(eps_p=eps, r=F(1, 2), d=d, view="joint")
            ideal = CorBin(eps_p=eps, r=F(1, 2), d="inf", view="joint")
            with mpmath.workdps(30):
                A = finite.amplitude
                for x in (F(-1, 2), F(-1, 5), F(0), F(3, 10), F(1, 2)):
                    for y in (F(-1, 2), F(-1, 10), F(0), F(9, 20)):
                        p, q = finite.pair_joint(x, y), ideal.pair_joint(x, y)
                        assert max(abs(a - b) for a, b in zip(p, q)) <= mpmath.mpf(1) / 2 ** (d + 2) + 1e-25
                        excess = finite.pair_mse(x, y) - ideal.pair_mse(x, y)
                        assert -1e-25 <= excess <= 2 * A**2 / 2**d + 1e-25
                        u = float(x + y)
                        assert float(ideal.pair_mse(x, y)) == pytest.approx(2 * float(A) * abs(u) - u * u, abs=1e-15)
    # at w = w' = c the pair MSE is 0 for every d ≥ 1 and 2A² at d = 0
    with mpmath.workdps(30):
        assert abs(CorBin(eps_p=1, d=3, view="joint").pair_mse(0, 0)) < 1e-28
        zero = CorBin(eps_p=1, d=0, view="joint")
        assert float(zero.pair_mse(0, 0)) == pytest.approx(2 * float(zero.amplitude) ** 2, rel=1e-14)


def test_excess_over_ideal_matches_the_reference_grid():
    # reference values (an independent exact-rational enumeration): max excess over a 41×41 grid at ε = 1, r = 0.5
    expected = {0: 2.34135, 1: 1.16395, 2: 0.585174, 3: 0.292141, 5: 0.0730353, 7: 0.0182588}
    grid = [F(k, 40) - F(1, 2) for k in range(41)]
    for d, value in expected.items():
        finite = CorBin(eps_p=1, r=F(1, 2), d=d, view="joint")
        ideal = CorBin(eps_p=1, r=F(1, 2), d="inf", view="joint")
        with mpmath.workdps(20):
            worst = max(float(finite.pair_mse(x, y) - ideal.pair_mse(x, y)) for x in grid for y in grid)
        assert worst == pytest.approx(value, rel=2e-5)


def test_monte_carlo_of_the_pair_quantizer():
    """Algorithm 2 (line 14 fixed) run with random z and coins: the MSE matches the closed form."""
    rng = np.random.default_rng(7)
    alpha = float(alpha_of_eps(1))
    r, d, size = 0.5, 5, 400_000
    A, N = r * alpha, 2**d
    for x, y, expected in ((0.3, -0.1, 0.39279), (-0.5, -0.5, 1.16395), (0.45, 0.5, 1.15326)):
        q1, q2 = 0.5 + x / (2 * A), 0.5 + y / (2 * A)
        a, b = math.floor(N * q1), math.floor(N * (1 - q2))
        z = rng.integers(0, N, size)
        up1 = np.where(z < a, True, np.where(z > a, False, rng.random(size) < N * q1 - a))
        down2 = np.where(z < b, True, np.where(z > b, False, rng.random(size) < N * (1 - q2) - b))
        total = np.where(up1, A, -A) + np.where(down2, -A, A)
        sample_mse = float(np.mean((total - x - y) ** 2))
        standard_error = float(np.std((total - x - y) ** 2)) / math.sqrt(size)
        with mpmath.workdps(30):
            exact = float(CorBin(eps_p=1, r=F(1, 2), d=5, view="joint").pair_mse(F(str(x)), F(str(y))))
        assert exact == pytest.approx(expected, abs=6e-6)
        assert abs(sample_mse - exact) < 5 * standard_error


def test_marginal_renyi_curve_and_pldp():
    table = {1: (0.46211715726001, 0.627332647049499, 0.735325664055519, 0.895883259645184, 0.965193146453842),
             F(1, 2): (0.122459331201855, 0.178369406676232, 0.227336293802646, 0.351891144697505, 0.44733309609428)}
    for eps, values in table.items():
        mech = CorBin(eps_p=eps, r=F(3, 7), c=5)
        got = [r["divergence"] for r in rdpcalc.divergence(mech, alphas=[1, 1.5, 2, 4, 10, "inf"])]
        assert got[:-1] == pytest.approx(list(values), rel=1e-12)
        assert got[-1] == pytest.approx(float(eps), rel=1e-13)  # PLDP is tight
        with mpmath.workdps(30):
            assert [float(rr_renyi(eps, a)) for a in (1, 1.5, 2, 4, 10)] == pytest.approx(list(values), rel=1e-13)


def test_joint_view_is_infinite_with_a_reason_and_finite_without_shared_bits():
    for d in (1, 5, "inf"):
        record = rdpcalc.divergence(CorBin(eps_p=1, d=d, view="joint"), alphas=[1, 2])[1]
        assert record["divergence"] == math.inf and "probability" in record["reason"]
    finite = rdpcalc.divergence(CorBin(eps_p=1, d=0, view="joint"), alphas=[2])[0]
    assert finite["divergence"] == pytest.approx(0.735325664055519, rel=1e-12)  # independent pair: the marginal's


def test_mse_and_theorems_as_printed_and_corrected():
    with mpmath.workdps(30):
        for eps, coefficient, exact_half_ratio in ((F(1, 2), 11.9183843431391, 0.369867), (F(1), 4.00530060215424, 0.497130),
                                                   (F(3), 1.21507340398663, 0.5), (F(5), 1.02722665557299, 0.5)):
            mech = CorBin(eps_p=eps, r=1)
            alpha = mech.alpha
            assert float(((mpmath.sqrt(2) - 1) * alpha + 1) * ((mpmath.sqrt(2) + 1) * alpha - 1)) == pytest.approx(
                float(alpha**2 + 2 * alpha - 1), rel=1e-14)
            assert float((alpha**2 + 2 * alpha - 1) / 2) == pytest.approx(coefficient, rel=1e-12)
            ratio = float(mech.worst_pair_mse_ideal() / 2 / alpha**2)
            assert ratio == pytest.approx(exact_half_ratio, abs=6e-7)
    records = rdpcalc.bound(CorBin(eps_p=1, r=F(1, 2)), alphas=[2], n=50)
    by_name = {r["quantity"]: r for r in records if r["kind"] == "bound"}
    thm2 = next(r for name, r in by_name.items() if name.startswith("Theorem 2: r²"))
    assert thm2["value"] == pytest.approx(0.020027, abs=6e-7) and thm2["holds"] is True
    ldp = next(r for name, r in by_name.items() if name.startswith("server MSE, LDP-FL, worst"))
    assert ldp["value"] == pytest.approx(0.023413, abs=6e-7)
    eps_u = next(r for name, r in by_name.items() if name.startswith("Theorem 3: ε_u"))
    assert "fails" in eps_u["note"]
    gamma = next(r for name, r in by_name.items() if name.startswith("Theorem 4: γ,"))
    assert gamma["value"] == pytest.approx(-7.66, abs=0.01)


def test_theorem_3_and_4_reference_values():
    big = rdpcalc.bound(CorBin(eps_p=5, r=F(1, 2)), alphas=[2], n=10**9, gamma=F(1, 5), dim=10**6,
                        dp_delta=F(1, 10**5))
    eps_u = next(r for r in big if r["quantity"].startswith("Theorem 3: ε_u"))
    with mpmath.workdps(30):
        r_alpha = float(CorBin(eps_p=5, r=F(1, 2)).amplitude)
    assert eps_u["value"] / r_alpha == pytest.approx(0.48821232027445, rel=1e-10)
    assert "holds" in eps_u["note"]
    drop = rdpcalc.bound(CorBin(eps_p=1), alphas=[2], n=10**7, p_drop=F(1, 2), delta_gap=F(1, 10**5))
    values = {r["quantity"]: r["value"] for r in drop}
    assert values["Theorem 4: γ, as printed"] == pytest.approx(0.232322330470336, rel=1e-12)
    assert values["Theorem 4: γ′, as printed"] == pytest.approx(0.267677669529664, rel=1e-12)
    assert values["Theorem 4: θ, as printed"] == pytest.approx(0.2, rel=1e-12)


@pytest.mark.parametrize("kwargs, parameter", [({"eps_p": 0}, "eps_p"), ({"eps_p": 1, "alpha_p": 2}, "eps_p"),
                                               ({"alpha_p": 1}, "alpha_p"), ({"eps_p": 1, "r": 0}, "r"),
                                               ({"eps_p": 1, "d": -1}, "d"), ({"eps_p": 1, "view": "pair"}, "view")])
def test_invalid_parameters(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        CorBin(**kwargs)
    assert info.value.parameter == parameter


def test_joint_worst_case_limits_d():
    with pytest.raises(ParameterError, match="^d: "):
        rdpcalc.divergence(CorBin(eps_p=1, view="joint", d=9), alphas=[2])
    assert rdpcalc.divergence(CorBin(eps_p=1, view="joint", d=9), alphas=[2],
                              choose=rdpcalc.NeighbourOptions(x=1, x_prime=-1))[0]["divergence"] == math.inf


def test_bound_options_are_validated():
    with pytest.raises(ParameterError, match="^n: must be an even integer"):
        rdpcalc.bound(CorBin(eps_p=1), n=51)
    with pytest.raises(ParameterError, match="^gamma: "):
        rdpcalc.bound(CorBin(eps_p=1), gamma=2)


def test_uniform_input_mse_rows_against_the_pair_law_and_reference_means():
    """`bound corbin`'s average-case MSEs: the closed forms against a grid average of the exact
    pair MSE (from the joint law), and against reference means, computed independently, in the
    setting of Salehi et al. (2024), Fig. 4 (c = 0, r = 0.5; ε = 1, which the paper does not state)."""
    n = 50
    records = {r["quantity"]: r["value"] for r in rdpcalc.bound(CorBin(eps_p=1, r=F(1, 2)), alphas=[2], n=n)}
    corbin_uniform = records["server MSE, CorBin-FL (d = ∞), uniform inputs"]
    ldp_uniform = records["server MSE, LDP-FL, uniform inputs"]
    # the reference means are averages over grids that include the endpoints: equal to ~1e-3
    assert corbin_uniform * 2 * n == pytest.approx(0.5550, abs=1e-3)  # per pair
    assert ldp_uniform * 2 * n == pytest.approx(2.1744, abs=1e-3)  # an independent LDPQ pair
    ideal = CorBin(eps_p=1, r=F(1, 2), d="inf", view="joint")
    grid = [F(2 * k + 1, 400) - F(1, 2) for k in range(200)]  # midpoints of 200 cells of [−r, r]
    with mpmath.workdps(20):
        average = sum(float(ideal.pair_mse(x, y)) for x in grid[::4] for y in grid) / (len(grid[::4]) * len(grid))
    assert average / (2 * n) == pytest.approx(corbin_uniform, rel=2e-3)
