"""Reliability: hostile command lines (fuzzed), extreme parameters, self-checks, output integrity."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdpcalc
from rdpcalc.cli import main
from rdpcalc.mechanisms import MECHANISMS, RQM
from rdpcalc.numerics import make_engine

from .unsafe_targets import UNSAFE_KINDS, snapshot, unsafe_target

HOSTILE = ["", "-1", "0", "-0", "nan", "NaN", "inf", "-inf", "∞", "1e400", "1e-400", "abc", "1/3", "0x1F", " 7 ",
           "1e9", "2", "3", "0.5", "1.5", "16", "0.999999999999", "1e-12", "--", "2001"]
#: magnitudes at and beyond the accepted range [1e-300, 1e300], levels at the limit
EXTREME = ["1e300", "-1e300", "9.99e300", "1e-300", "1.0000001e-300", "1e299", "4096", "4097", "1e-9", "60", "300"]
#: valid values, each under its spellings (the shared option, then the paper's alias)
VALID = {
    "rqm": {("--c",): "1.5", ("--extension", "--delta"): "1.5", ("--levels", "--m"): "8", ("--q",): "21/50"},
    "pbm": {("--c",): "1.5", ("--theta",): "0.25", ("--trials",): "8"},
    "qgauss": {("--sigma",): "1", ("--levels", "--k"): "4", ("--clip",): "1"},
    "qmgeo": {("--levels", "--R"): "6", ("--p",): "0.5", ("--c", "--w-max"): "1"},
    "corbin": {("--eps-p",): "1", ("--shared-bits", "--d"): "2"},
    "ddg": {("--c",): "1", ("--gamma",): "0.25", ("--sigma",): "0.5"},
    "skellam": {("--c",): "1", ("--gamma",): "0.25", ("--mu",): "4"},
    "binomial": {("--c",): "1", ("--gamma",): "0.25", ("--trials",): "16"},
}
FORMATS = [None, None, "table", "json", "csv", "tsv", "xml"]
COMMAND_OPTIONS = {
    "divergence": ["--n", "--alpha", "--alphas", "--engine", "--dps", "--neighbours", "--x", "--x-prime", "--seed",
                   "--grid", "--margin", "--others-plus", "--budget"],
    "pmf": ["--x", "--dps"],
    "bound": ["--alpha", "--engine"],
    "mc": ["--x", "--seed", "--n", "--x-prime", "--alpha"],
    "account": ["--n", "--clients", "--rounds", "--dim", "--dp-delta", "--observer", "--sampling", "--relation",
                "--method", "--discretization", "--dp-epsilon"],
}
CHOICES = ["worst", "paper", "pm-c", "exact", "fast", "local", "release", "server", "poisson", "add-remove", "pld", "rdp"]
SMALL = {"--samples": "200", "--bootstrap": "40"}
#: what an output option may be given: a new name, or a target that must be refused untouched
TARGETS = ["new", *UNSAFE_KINDS]
MEMORY = [None] * 6 + ["64M", "1G", "5x"]
COLUMNS = [None, "0", "20", "-3", "abc", "400"]


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(sorted(COMMAND_OPTIONS)))
    mechanism = draw(st.sampled_from([*MECHANISMS, "nope"]))
    argv = [command, mechanism]
    for spellings, value in VALID.get(mechanism, {}).items():
        choice = draw(st.sampled_from(["valid"] * 12 + ["missing", "hostile", "extreme", "extreme"]))
        if choice == "missing":
            continue
        if choice != "valid":
            value = draw(st.sampled_from(HOSTILE if choice == "hostile" else EXTREME))
        argv += [draw(st.sampled_from(spellings)), value]
    options = draw(st.lists(st.sampled_from(COMMAND_OPTIONS[command]), max_size=2, unique=True)
                   if draw(st.booleans()) else st.just([]))
    for option in options:
        argv += [option, draw(st.sampled_from(HOSTILE + EXTREME + CHOICES))]
    if command in ("mc", "pmf") and "--x" not in options:
        argv += ["--x", "0.25"]
    if command == "mc":
        argv += [item for pair in SMALL.items() for item in pair]
    memory = draw(st.sampled_from(MEMORY))
    form = draw(st.sampled_from(FORMATS))
    return argv + (["--max-memory", memory] if memory else []) + (["--format", form] if form else [])


@settings(max_examples=int(os.environ.get("RDPCALC_FUZZ", "1000")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(argv=command_lines(), target=st.sampled_from([None, None, *TARGETS]), as_json=st.booleans(),
       columns=st.sampled_from(COLUMNS))
def test_fuzzed_command_lines_exit_0_or_2_with_one_line(argv, target, as_json, columns, tmp_path_factory, capsys,
                                                        monkeypatch):
    folder = tmp_path_factory.mktemp("fuzz")
    if target is not None:
        path = str(folder / "out.csv") if target == "new" else unsafe_target(target, folder)
        before = snapshot(folder)
        argv = [*argv, "--csv", path]
    argv = [*argv, *(["--json"] if as_json else [])]
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2), (argv, err)
    assert "Traceback" not in err and "internal error" not in err
    assert "nan" not in out.lower().replace("nano", ""), (argv, out)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("rdpcalc: error:"), (argv, err)
    if target not in (None, "new") or code == 2:
        assert target is None or snapshot(folder) == before, (argv, target)
        assert not [p for p in folder.rglob("*.tmp")]
    if code == 0 and target not in (None, "new"):
        raise AssertionError(f"the unsafe --csv target {target} was accepted: {argv}")
    if code == 0 and (as_json or "json" in argv):
        records = json.loads(out)
        assert isinstance(records, list) and records
    elif code == 0 and ("csv" in argv or "tsv" in argv):
        rows = list(csv.DictReader(io.StringIO(out), delimiter="," if "csv" in argv else "\t"))
        assert rows and all(None not in row for row in rows), (argv, out)
    elif code == 0:
        assert "…" not in out, (argv, out)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(2, 200), ratio=st.fractions(F(1, 50), F(20)).filter(lambda v: v > 0),
       q=st.fractions(F(1, 1000), F(999, 1000)), t=st.fractions(-1, 1))
def test_float_rqm_pmf_agrees_with_mpmath(m, ratio, q, t):
    mech = RQM(1, ratio, m, q)
    fast = mech.log_pmf_float(t)
    with mpmath.workdps(40):
        reference = np.array([float(mpmath.log(p)) for p in mech.pmf(t)])
    assert np.max(np.abs(fast - reference)) < 1e-12


EXTREMES = [
    ("rqm", {"c": 1, "delta": 1, "m": 1024, "q": "0.42"}, 1, "paper"),
    ("rqm", {"c": 1, "delta": 1, "m": 16, "q": "1e-12"}, 5, "worst"),
    ("rqm", {"c": 1, "delta": 1, "m": 16, "q": "0.999999999999"}, 5, "worst"),
    ("pbm", {"c": 1, "theta": "1e-12", "trials": 16}, 5, "worst"),
    ("pbm", {"c": 1, "theta": "0.499999999999", "trials": 16}, 5, "worst"),
    ("qgauss", {"sigma": "0.001", "k": 16, "clip": 1}, 3, "worst"),
    ("qgauss", {"sigma": "1000", "k": 16, "clip": 1}, 3, "worst"),
    ("corbin", {"eps_p": "1e-9"}, 4, "worst"),
    ("corbin", {"eps_p": "60"}, 4, "worst"),
]
ORDERS = [1, 1 + 1e-12, 1.5, 2, 100, 1e4, 1e6, math.inf]


@pytest.mark.parametrize("name, params, n, protocol", EXTREMES)
def test_extreme_parameters_are_finite_monotone_and_agree(name, params, n, protocol):
    mech = rdpcalc.make_mechanism(name, **params)
    fast = [r["divergence"] for r in rdpcalc.divergence(mech, n=n, alphas=ORDERS,
                                                        choose=rdpcalc.NeighbourOptions(neighbours=protocol))]
    assert all(not math.isnan(v) and v >= 0 for v in fast)
    assert all(b >= a * (1 - 1e-9) - 1e-15 for a, b in zip(fast, fast[1:]))
    if name == "rqm" and params["m"] == 1024:
        return  # the exact pmf costs 10⁶ mpmath operations per input: covered by the slow test below
    exact = [r["divergence"] for r in rdpcalc.divergence(mech, n=n, alphas=ORDERS, engine="exact", dps=40,
                                                         choose=rdpcalc.NeighbourOptions(neighbours=protocol))]
    for f, e in zip(fast, exact, strict=True):
        assert f == e or abs(f - e) <= 1e-9 * abs(e) + 1e-14, (f, e)


@pytest.mark.slow
def test_large_levels_fast_against_exact():
    mech = rdpcalc.make_mechanism("rqm", c=1, delta=1, m=1024, q="0.42")
    fast = [r["divergence"] for r in rdpcalc.divergence(mech, alphas=[2, 100, math.inf],
                                                        choose=rdpcalc.NeighbourOptions(neighbours="paper"))]
    exact = [r["divergence"] for r in rdpcalc.divergence(mech, alphas=[2, 100, math.inf], engine="exact", dps=30,
                                                         choose=rdpcalc.NeighbourOptions(neighbours="paper"))]
    assert fast == pytest.approx(exact, rel=1e-10)


@pytest.mark.slow
def test_hundred_thousand_clients():
    mech = rdpcalc.make_mechanism("rqm", c=1, delta=1, m=16, q="0.42")
    values = [r["divergence"] for r in rdpcalc.divergence(mech, n=100_000, alphas=[1, 2, 1e4, math.inf],
                                                          choose=rdpcalc.NeighbourOptions(others_plus=50_000))]
    assert all(math.isfinite(v) and v > 0 for v in values) and values == sorted(values)


def test_limits_are_refused_with_the_option_named(capsys):
    for argv, option in ((["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "5000", "--q", "0.5"], "--m"),
                         (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "0.5", "--n", "3000"], "--n"),
                         (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "0.5", "--alpha", "1e300"],
                          "--alpha")):
        assert main(argv) == 2
        assert option in capsys.readouterr().err


def test_self_check_catches_a_pmf_that_is_not_a_distribution(monkeypatch):
    mech = rdpcalc.make_mechanism("pbm", c=1, theta="0.25", trials=4)
    original = type(mech).pmf
    monkeypatch.setattr(type(mech), "pmf", lambda self, x: [p * 2 for p in original(self, x)])
    from rdpcalc.mechanisms.base import clear_log_pmf_cache

    clear_log_pmf_cache()
    with pytest.raises(ArithmeticError, match="self-check"):
        make_engine("fast").client(mech, F(1))
    with pytest.raises(ArithmeticError, match="self-check"):
        make_engine("exact", 30).client(mech, F(1))
    # the worst case over k builds its sums from the pmfs at ±c: they are checked there too
    for engine in ("fast", "exact"):
        with pytest.raises(ArithmeticError, match="self-check"):
            rdpcalc.divergence(mech, n=5, alphas=[2], engine=engine, dps=30)
    clear_log_pmf_cache()


def test_outputs_round_trip_and_reruns_are_identical(tmp_path, capsys):
    argv = ["mc", "rqm", "--c", "1.5", "--extension", "1.5", "--m", "16", "--q", "0.42", "--x", "0.3", "--samples", "5000",
            "--seed", "7"]
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main([*argv, "--csv", str(first), "--json"]) == 0
    out_first = capsys.readouterr().out
    assert main([*argv, "--csv", str(second), "--json"]) == 0
    assert capsys.readouterr().out == out_first and first.read_bytes() == second.read_bytes()
    assert main(["divergence", "rqm", "--c", "1.5", "--extension", "1.5", "--m", "16", "--q", "0.42", "--n", "3", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    direct = rdpcalc.divergence(rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42"), n=3)
    assert [r["divergence"] for r in records] == [r["divergence"] for r in direct]  # floats round-trip exactly
