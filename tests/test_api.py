"""The Python API's contract: keyword-only parameters, records of Python values, errors that
name the keyword, a light facade."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc import ParameterError

NATIVE = (float, int, bool, str, type(None))
PUBLIC_FUNCTIONS = [rdpcalc.make_mechanism, rdpcalc.divergence, rdpcalc.pmf, rdpcalc.moments, rdpcalc.bound,
                    rdpcalc.account, rdpcalc.account_run, rdpcalc.account_reference, rdpcalc.account_reference_run,
                    rdpcalc.calibrate, rdpcalc.solvable, rdpcalc.layered_divergence, rdpcalc.layered_bits]


def _rqm():
    return rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")


def non_native(value, path: str = "record"):
    """Every leaf of a record (dicts and lists) whose type is not exactly a Python float, int,
    bool, str or None (a numpy float64 is a float subclass: the exact type is checked)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str:
                yield f"{path}: key {key!r}"
            yield from non_native(item, f"{path}[{key!r}]")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from non_native(item, f"{path}[{index}]")
    elif type(value) not in NATIVE:
        yield f"{path}: {type(value).__name__} {value!r}"


def test_the_walk_finds_numpy_mpmath_and_fraction_values():
    assert len(list(non_native({"a": np.float64(1.0), "b": [mpmath.mpf(2)], "c": [[Fraction(1, 2)]], "d": np.bool_(True),
                                "e": math.inf, "f": [1, "x", None, False]}))) == 4


def _records():
    rqm = _rqm()
    qmgeo = rdpcalc.make_mechanism("qmgeo", R=4, p="0.9", w_max=1)
    run = rdpcalc.account_run(rqm, run=rdpcalc.RunOptions(n=3, rounds=5))
    return {
        "divergence": rdpcalc.divergence(rqm, n=3, alphas=[1, 2, "inf"]),
        "divergence, exact engine": rdpcalc.divergence(rqm, n=2, alphas=[2], engine="exact", dps=30,
                                                       choose=rdpcalc.NeighbourOptions(others_plus=1)),
        "divergence, +∞ with its reason": rdpcalc.divergence(qmgeo, alphas=[2, "inf"]),
        "divergence, corbin (d = inf)": rdpcalc.divergence(rdpcalc.make_mechanism("corbin", eps_p=1, d="inf"), alphas=[2]),
        "pmf": rdpcalc.pmf(rqm, x=0),
        "moments": rdpcalc.moments(rqm, x="0.5"),
        "bound": rdpcalc.bound(rqm, alphas=[2]),
        "bound, margins": rdpcalc.bound(qmgeo, alphas=[2]),
        "account, pld": rdpcalc.account(rqm, n=3, clients=30, rounds=5, dp_epsilon=1.0),
        "account, rdp": rdpcalc.account(rqm, n=3, clients=30, rounds=5, observer="release"),
        "account_reference, gaussian": rdpcalc.account_reference("gaussian", sigma=1.1, sample_rate=0.01, rounds=10,
                                                                 dp_epsilon=1.0),
        "account_reference, laplace": rdpcalc.account_reference("laplace", scale=2.0, sample_rate=0.5, rounds=10),
        "calibrate": rdpcalc.calibrate("gaussian", solve="sigma", dp_epsilon=2.0, rounds=10, method="rdp"),
        "layered_divergence": [*rdpcalc.layered_divergence("irwin-hall", n=3, alphas=[2, "inf"]),
                               *rdpcalc.layered_divergence("gauss", alphas=[2, "inf"])],
        "layered_bits": rdpcalc.layered_bits("gauss", n=3),
        "run curves": [*run.epsilon_delta_curve(), *run.epsilon_rounds_curve(dp_delta=1e-5)],
    }


def test_every_record_holds_python_values_only():
    records = _records()
    for name, value in records.items():
        assert value, name
        assert list(non_native(value, name)) == []
    assert math.inf in [r["divergence"] for r in records["divergence, +∞ with its reason"]]
    assert all("reason" in r for r in records["divergence, +∞ with its reason"] if r["divergence"] == math.inf)


def test_public_functions_take_keywords_after_the_first_argument():
    for function in PUBLIC_FUNCTIONS:
        parameters = list(inspect.signature(function).parameters.values())
        assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, function.__name__
        assert all(p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD) for p in parameters[1:]), \
            function.__name__
        assert "Parameters:" in function.__doc__, function.__name__
    with pytest.raises(TypeError):
        rdpcalc.divergence(_rqm(), 3)  # n is a keyword


def test_the_facade_exports_its_names_and_stays_light():
    assert all(hasattr(rdpcalc, name) for name in rdpcalc.__all__)
    assert {"make_mechanism", "divergence", "pmf", "moments", "bound", "account", "account_run", "account_reference",
            "account_reference_run", "calibrate", "layered_divergence", "layered_bits", "Accountant", "MechanismEvent",
            "GaussianEvent", "LaplaceEvent", "PairEvent", "ParameterError", "MECHANISMS", "__version__"} <= set(rdpcalc.__all__)
    heavy = ("scipy", "matplotlib", "torch", "dp_accounting", "rich", "typer")
    code = f"import sys, rdpcalc; print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_the_others_count_does_not_overwrite_a_mechanism_parameter():
    """QuantizedGaussian's k is its number of levels; the divergence record's count of others at
    +b is ``others_plus`` (both were ``k``, and the count overwrote the levels)."""
    qgauss = rdpcalc.make_mechanism("qgauss", sigma=1, k=8, clip=1)
    [record] = rdpcalc.divergence(qgauss, n=3, alphas=[2], choose=rdpcalc.NeighbourOptions(others_plus=2))
    assert record["k"] == 8 and record["others_plus"] == 2 and record["n"] == 3


RQM = {"c": 1, "delta": 1, "m": 4, "q": "0.3"}
BAD_CALLS = [
    ("mechanism", lambda: rdpcalc.make_mechanism("gauss", sigma=1)),
    ("q", lambda: rdpcalc.make_mechanism("rqm", c=1, delta=1, m=4)),
    ("sigma", lambda: rdpcalc.make_mechanism("rqm", **RQM, sigma=1)),
    ("grid", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("rqm", **RQM), choose=rdpcalc.NeighbourOptions(grid=1))),
    ("margin", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("rqm", **RQM),
                                          choose=rdpcalc.NeighbourOptions(grid=3, margin="0.1"))),
    ("margin", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("rqm", **RQM), choose=rdpcalc.NeighbourOptions(margin="0.1"))),
    ("others_plus", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("rqm", **RQM), n=3,
                                               choose=rdpcalc.NeighbourOptions(others_plus=3))),
    ("x_prime", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("rqm", **RQM), choose=rdpcalc.NeighbourOptions(x=1))),
    ("normalisers", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("qmgeo", R=4, p="0.5", w_max=1,
                                                                      normalisers="printed"))),
    ("x", lambda: rdpcalc.pmf(rdpcalc.make_mechanism("rqm", **RQM), x=2)),
    ("x", lambda: rdpcalc.moments(rdpcalc.make_mechanism("rqm", **RQM), x="half")),
    ("dps", lambda: rdpcalc.pmf(rdpcalc.make_mechanism("rqm", **RQM), x=0, dps=2)),
    ("dps", lambda: rdpcalc.moments(rdpcalc.make_mechanism("rqm", **RQM), x=0, dps=10**6)),
    ("seed", lambda: rdpcalc.divergence(rdpcalc.make_mechanism("rqm", **RQM), n=3,
                                        choose=rdpcalc.NeighbourOptions(neighbours="paper", seed=-1))),
    ("dp_delta", lambda: rdpcalc.account(rdpcalc.make_mechanism("rqm", **RQM), dp_delta=0)),
    ("dp_epsilon", lambda: rdpcalc.account(rdpcalc.make_mechanism("rqm", **RQM), dp_epsilon=-1.0)),
    ("n", lambda: rdpcalc.account(rdpcalc.make_mechanism("rqm", **RQM), n=10, clients=5)),
    ("participation", lambda: rdpcalc.account(rdpcalc.make_mechanism("rqm", **RQM), rounds=3, participation=4)),
    ("method", lambda: rdpcalc.account(rdpcalc.make_mechanism("rqm", **RQM), method="moments")),
    ("method", lambda: rdpcalc.account(rdpcalc.make_mechanism("rqm", **RQM), n=2, clients=4, observer="release",
                                       method="pld")),
    ("mechanism", lambda: rdpcalc.account_reference("cauchy", sigma=1.0)),
    ("scale", lambda: rdpcalc.account_reference("gaussian", sigma=1.0, scale=1.0)),
    ("sigma", lambda: rdpcalc.account_reference("gaussian")),
    ("sample_rate", lambda: rdpcalc.account_reference("laplace", scale=1.0, sample_rate=2.0)),
    ("mechanism", lambda: rdpcalc.calibrate("cauchy", solve="sigma", dp_epsilon=1.0)),
    ("solve", lambda: rdpcalc.calibrate("rqm", params={"c": 1, "delta": 1, "m": 4}, solve="m", dp_epsilon=1.0)),
    ("dp_epsilon", lambda: rdpcalc.calibrate("gaussian", solve="sigma", dp_epsilon=0)),
    ("delta", lambda: rdpcalc.calibrate("rqm", params={"c": 1, "m": 4}, solve="q", dp_epsilon=1.0)),
    ("c", lambda: rdpcalc.calibrate("rqm", params={"c": "wide", "delta": 1, "m": 4}, solve="q", dp_epsilon=1.0)),
    ("q", lambda: rdpcalc.calibrate("rqm", params=RQM, solve="q", dp_epsilon=1.0)),
    ("rounds", lambda: rdpcalc.calibrate("gaussian", params={"rounds": 2}, solve="sigma", dp_epsilon=1.0, rounds=2)),
    ("dims", lambda: rdpcalc.bound(rdpcalc.make_mechanism("rqm", **RQM), dims=3)),
    ("kappa", lambda: rdpcalc.bound(rdpcalc.make_mechanism("qmgeo", R=4, p="0.5", w_max=1), kappa=2)),
    ("noise", lambda: rdpcalc.layered_divergence("cauchy")),
    ("sensitivity", lambda: rdpcalc.layered_divergence("gauss", sensitivity=-1)),
    ("n", lambda: rdpcalc.layered_bits("gauss", n=1001)),
]


@pytest.mark.parametrize("parameter, call", BAD_CALLS, ids=[f"{i}-{p}" for i, (p, _) in enumerate(BAD_CALLS)])
def test_errors_name_the_keyword(parameter, call):
    with pytest.raises(ParameterError) as refused:
        call()
    assert refused.value.parameter == parameter, refused.value
    assert "--" not in str(refused.value)


def test_calibrate_reads_the_ranges_of_solvable():
    assert set(rdpcalc.solvable("rqm")) == {"delta", "q"} and set(rdpcalc.solvable("gaussian")) == {"sigma"}
    low, high, log_scale = rdpcalc.solvable("rqm")["delta"]({"c": Fraction(3, 2)})
    assert (low, high, log_scale) == (1.5e-3, 1.5e3, True)
    record = rdpcalc.calibrate("rqm", params={"c": 1, "delta": 1, "m": 4}, solve="q", dp_epsilon=2.5, n=3, clients=30,
                               rounds=10, observer="release")
    assert record["solved"] == "q" and 0 < record["value"] < 1 and record["epsilon"] <= 2.5
    again = rdpcalc.account(rdpcalc.make_mechanism("rqm", c=1, delta=1, m=4, q=record["value"]), n=3, clients=30,
                            rounds=10, observer="release")
    assert again["epsilon"] == record["epsilon"]


def test_engine_options_are_checked_before_any_computation():
    """bound ran the closed forms at dps = 20 000 (52 s) before refusing it; divergence built the
    exact engine from an unchecked n (a TypeError)."""
    qgauss = rdpcalc.make_mechanism("qgauss", sigma=1, k=4, clip=1)
    with pytest.raises(rdpcalc.ParameterError) as refused:
        rdpcalc.bound(qgauss, dps=20000)
    assert refused.value.parameter == "dps"
    with pytest.raises(rdpcalc.ParameterError) as refused:
        rdpcalc.divergence(qgauss, n="2.5", engine="exact")
    assert refused.value.parameter == "n" and "[1, 1000000]" in refused.value.message
    # n is converted as every declared option is: an integral text is the integer
    assert rdpcalc.divergence(qgauss, n="2", alphas=[2]) == rdpcalc.divergence(qgauss, n=2, alphas=[2])
