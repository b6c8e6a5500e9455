"""Regression against reference tables for the RQM paper's §6.1 experiments (Youn, Hu, Ziani &
Abernethy 2023, arXiv:2306.11913, Figs. 2–7; the paper prints no numbers, only plots).

The reference values are 4-decimal float64 computations made independently of rdpcalc (worst case
over k with the others at ±c, or the pair (c, −c) at n = 1); the tolerance is half a unit in the
last printed digit, plus rounding.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

import rdpcalc
from rdpcalc.mechanisms import PBM, RQM
from rdpcalc.numerics import FastEngine
from rdpcalc.worstcase.neighbours import sweep_n

C = F(3, 2)
ALPHAS = [1.5, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, math.inf]


def rqm(ratio: str, q: str) -> RQM:
    return RQM(C, C * F(ratio), 16, F(q))


def pbm(theta: str, trials: int) -> PBM:
    return PBM(C, F(theta), trials)


def tolerance(text: str) -> float:
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.6 * 10.0**-decimals


def check_row(got: list[float], expected: str) -> None:
    for value, text in zip(got, expected.split(), strict=True):
        assert value == pytest.approx(float(text), abs=tolerance(text)), (value, text)


SWEEP_N40 = {
    "RQM(c,.42)": (rqm("1", "0.42"), "0.3605 0.4859 0.7372 1.2161 2.1501 3.1377 4.0645 4.4742 4.7155 4.8809 4.9416 5.0071"),
    "RQM(2c,.57)": (rqm("2", "0.57"), "0.3584 0.4731 0.6873 1.0496 1.6817 2.4230 3.3967 3.9610 4.3365 4.6137 4.7202 4.8380"),
    "RQM(.66c,.33)": (rqm("0.66", "0.33"), "0.3920 0.5407 0.8568 1.4885 2.5630 3.4281 4.1180 4.4039 4.5688 4.6807 4.7216 4.7656"),
    "PBM .25 B16": (pbm("0.25", 16), "0.4093 0.5520 0.8477 1.4851 3.4299 8.2835 13.821 15.718 16.653 17.209 17.394 17.578"),
    "PBM .25 B15": (pbm("0.25", 15), "0.3838 0.5175 0.7947 1.3924 3.2159 7.7659 12.957 14.736 15.612 16.133 16.306 16.479"),
    "RQM(2.33c,.42)": (rqm("2.33", "0.42"), "0.1177 0.1573 0.2362 0.3892 0.7219 1.1921 1.8769 2.2942 2.5782 2.7906 2.8726 2.9637"),
    "RQM(4c,.5)": (rqm("4", "0.5"), "0.0861 0.1146 0.1707 0.2771 0.5004 0.8082 1.2936 1.6569 1.9523 2.2040 2.3093 2.4324"),
    "RQM(c,.23)": (rqm("1", "0.23"), "0.1275 0.1738 0.2718 0.4864 1.0161 1.6487 2.2533 2.5213 2.6790 2.7870 2.8267 2.8695"),
    "PBM .15 B16": (pbm("0.15", 16), "0.1195 0.1598 0.2413 0.4074 0.8414 1.7882 4.6944 7.1296 8.5192 9.3521 9.6287 9.9046"),
    "PBM .15 B15": (pbm("0.15", 15), "0.1120 0.1498 0.2262 0.3819 0.7888 1.6765 4.4010 6.6840 7.9868 8.7676 9.0269 9.2856"),
    "RQM(.429c,.49)": (rqm("0.429", "0.49"), "1.2542 1.7302 2.6761 4.1755 5.9098 7.0013 7.7908 8.1065 8.2869 8.4089 8.4534 8.5012"),
    "RQM(c,.65)": (rqm("1", "0.65"), "1.0373 1.3531 1.9180 2.8243 4.3439 5.9244 7.4256 8.0827 8.4666 8.7283 8.8242 8.9273"),
    "RQM(.25c,.37)": (rqm("0.25", "0.37"), "1.4138 2.0728 3.2929 4.6620 5.8343 6.5026 6.9829 7.1783 7.2916 7.3688 7.3971 7.4277"),
    "PBM .35 B16": (pbm("0.35", 16), "1.2364 1.7122 2.8032 6.0721 16.270 22.279 25.631 26.703 27.231 27.545 27.650 27.754"),
    "PBM .35 B15": (pbm("0.35", 15), "1.1594 1.6056 2.6288 5.6956 15.253 20.887 24.029 25.034 25.529 25.824 25.921 26.019"),
}

SWEEP_N1 = {
    "RQM(c,.42)": (rqm("1", "0.42"), "4.9272 5.0635 5.1801 5.2641 5.3367 5.3935 5.4392 5.4547 5.4623 5.4669 5.4684 5.4699"),
    "PBM .25 B16": (pbm("0.25", 16), "11.744 13.557 15.309 16.427 17.066 17.336 17.484 17.531 17.555 17.569 17.573 17.578"),
    "PBM .25 B15": (pbm("0.25", 15), "11.010 12.710 14.352 15.401 16.000 16.252 16.391 16.436 16.458 16.471 16.475 16.479"),
    "RQM(2.33c,.42)": (rqm("2.33", "0.42"), "2.9107 3.0745 3.2317 3.3643 3.4730 3.5304 3.5637 3.5744 3.5796 3.5828 3.5838 3.5848"),
    "PBM .15 B16": (pbm("0.15", 16), "4.2667 5.3332 6.8125 8.1967 9.1388 9.5419 9.7640 9.8350 9.8700 9.8908 9.8977 9.9046"),
    "RQM(.429c,.49)": (rqm("0.429", "0.49"), "8.4058 8.5563 8.7077 8.8382 8.9423 8.9938 9.0229 9.0322 9.0368 9.0395 9.0404 9.0413"),
    "PBM .35 B16": (pbm("0.35", 16), "23.534 25.241 26.455 27.104 27.465 27.617 27.701 27.727 27.741 27.748 27.751 27.754"),
}

ALPHA2_VS_N = {  # n = 1, 2, 3, 5, 10, 20, 40, 60, 100
    "RQM(c,.42)": (rqm("1", "0.42"), "5.0635 4.3193 3.7988 2.9952 1.8471 0.9787 0.4859 0.3206 0.1901"),
    "PBM .25 B16": (pbm("0.25", 16), "13.5568 10.4817 8.1544 5.1848 2.4315 1.1421 0.5520 0.3638 0.2163"),
    "PBM .25 B15": (pbm("0.25", 15), "12.7095 9.8267 7.6451 4.8617 2.2801 1.0709 0.5175 0.3411 0.2028"),
    "RQM(2.33c,.42)": (rqm("2.33", "0.42"), "3.0745 2.0659 1.6165 1.1178 0.6138 0.3146 0.1573 0.1046 0.0626"),
    "PBM .15 B16": (pbm("0.15", 16), "5.3332 3.2640 2.2465 1.3420 0.6560 0.3226 0.1598 0.1062 0.0636"),
    "PBM .15 B15": (pbm("0.15", 15), "4.9999 3.0601 2.1063 1.2582 0.6151 0.3025 0.1498 0.0996 0.0596"),
    "RQM(.429c,.49)": (rqm("0.429", "0.49"), "8.5563 7.9635 7.5887 6.9405 5.4986 3.4484 1.7302 1.1175 0.6465"),
    "PBM .35 B16": (pbm("0.35", 16), "25.2410 22.8940 20.7021 16.7623 9.4782 3.8864 1.7122 1.0989 0.6406"),
    "PBM .35 B15": (pbm("0.35", 15), "23.6634 21.4631 19.4082 15.7149 8.8887 3.6458 1.6056 1.0304 0.6006"),
}

PAPER_PROTOCOL_K20 = {  # n = 40, x1 = c vs −c, k = 20 of the 39 others at +c; α = 1.5, 2, 3, 5, 10
    "RQM(.429c,.49)": (rqm("0.429", "0.49"), "1.1002 1.4240 1.9747 2.7594 3.8249"),
    "RQM(.25c,.37)": (rqm("0.25", "0.37"), "1.0428 1.3305 1.7933 2.4164 3.2560"),
    "PBM .35 B16": (pbm("0.35", 16), "1.1511 1.5310 2.2768 3.6865 6.6379"),
    "RQM(.66c,.33)": (rqm("0.66", "0.33"), "0.3557 0.4688 0.6798 1.0326 1.6200"),
    "PBM .25 B16": (pbm("0.25", 16), "0.4000 0.5332 0.7989 1.3255 2.5888"),
    "RQM(2.33c,.42)": (rqm("2.33", "0.42"), "0.1163 0.1546 0.2295 0.3704 0.6600"),
    "PBM .15 B16": (pbm("0.15", 16), "0.1187 0.1583 0.2374 0.3954 0.7878"),
}


@pytest.mark.parametrize("name", list(SWEEP_N40))
def test_alpha_sweep_n40_worst_over_k(name):
    mech, expected = SWEEP_N40[name]
    records = rdpcalc.divergence(mech, n=40, alphas=ALPHAS, choose=rdpcalc.NeighbourOptions(neighbours="pm-c"))
    check_row([r["divergence"] for r in records], expected)
    if name.startswith("RQM"):  # the worst k is n−1 (or its mirror image) at n = 40
        assert all((r["others_plus"], r["x"]) in ((39, 1.5), (0, -1.5)) for r in records)


@pytest.mark.parametrize("name", list(SWEEP_N1))
def test_alpha_sweep_single_client_pair(name):
    mech, expected = SWEEP_N1[name]
    records = rdpcalc.divergence(mech, n=1, alphas=ALPHAS, choose=rdpcalc.NeighbourOptions(neighbours="paper"))
    check_row([r["divergence"] for r in records], expected)


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=[] if i == 0 else pytest.mark.slow) for i, name in enumerate(ALPHA2_VS_N)]
)
def test_alpha_2_versus_n(name):
    mech, expected = ALPHA2_VS_N[name]
    ns = [1, 2, 3, 5, 10, 20, 40, 60, 100]
    results = sweep_n(mech, ns, [2.0], ["pm-c"], FastEngine())
    values = []
    for n in ns:
        if n == 1:  # the reference n = 1 column is the pair (c, −c)
            values.append(rdpcalc.divergence(mech, n=1, alphas=[2],
                                             choose=rdpcalc.NeighbourOptions(neighbours="paper"))[0]["divergence"])
        else:
            values.append(results[("pm-c", n)][1][0].value)
    check_row(values, expected)


@pytest.mark.parametrize("name", list(PAPER_PROTOCOL_K20))
def test_balanced_configuration_k20(name):
    mech, expected = PAPER_PROTOCOL_K20[name]
    records = rdpcalc.divergence(mech, n=40, alphas=[1.5, 2, 3, 5, 10],
                                 choose=rdpcalc.NeighbourOptions(others_plus=20, x=C, x_prime=-C))
    check_row([r["divergence"] for r in records], expected)


def test_counterexample_worst_single_client_pair_is_not_plus_minus_c():
    """Against the proof of Theorem 5.2 (Youn et al. 2023, App. B.2), which puts the worst pair at ±c:
    at m=16, Δ=c=1.5, q=0.42, α=10 the pair (−1.4, 1.5) beats (−1.5, 1.5)."""
    mech = rqm("1", "0.42")
    worst = rdpcalc.divergence(mech, n=1, alphas=[10], engine="exact", dps=50)[0]
    paper = rdpcalc.divergence(mech, n=1, alphas=[10], engine="exact", dps=50, choose=rdpcalc.NeighbourOptions(neighbours="paper"))[0]
    assert (worst["x"], worst["x_prime"]) == (-1.4, 1.5)
    assert worst["divergence"] == pytest.approx(5.368399, abs=6e-7)
    assert paper["divergence"] == pytest.approx(5.336662, abs=6e-7)
    assert worst["divergence"] > paper["divergence"]
