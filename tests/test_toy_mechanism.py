"""A mechanism registered in one line is picked up by every command.

The toy is a one-trial PBM written from scratch: output 1 with probability ½ + θx/c. Its Rényi
divergence between the extreme inputs has a closed form, computed here independently of the
engines, so each command's number is checked, not only its exit code.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np
import pandas as pd
import pytest

import rdpcalc
from rdpcalc.cli import main
from rdpcalc.errors import SelfCheckFailed
from rdpcalc.mechanisms import FEATURES, MECHANISMS, Bound, Mechanism, Param, SolveRange, register
from rdpcalc.mechanisms.base import check_example_pmfs, mechanism
from rdpcalc.mechanisms.design import Design
from rdpcalc.sweep import load_spec, run_sweep


@dataclass(frozen=True)
class Toy(Mechanism):
    """One biased coin: P(1 | x) = ½ + θx/c for x in [−c, c]."""

    c: Fraction
    theta: Fraction

    name = "toy"
    title = "Toy coin"
    paper = "none (a test mechanism)"
    PARAMS = (
        Param("c", "number", "input bound c > 0", low=0, low_open=True),
        Param("theta", "number", "bias θ in (0, 1/2)", low=0, high=Fraction(1, 2), low_open=True, high_open=True,
              solve=SolveRange(1e-4, 0.49)),
    )
    EXAMPLE = {"--c": "1", "--theta": "0.25"}
    FL_OBSERVER = "server"

    @property
    def bound(self) -> Fraction:
        return self.c

    @property
    def support_size(self) -> int:
        return 2

    def breakpoints(self):
        return (-self.c, self.c)

    def pmf(self, x):
        exact = Fraction(1, 2) + self.theta * Fraction(x) / self.c
        one = mpmath.mpf(exact.numerator) / exact.denominator
        return [1 - one, one]

    def output_values(self):
        return [-self.c / (2 * self.theta), self.c / (2 * self.theta)]

    def bounds(self, alphas, **options):
        t = mpmath.mpf(self.theta.numerator) / self.theta.denominator
        return [Bound("D_∞ closed form", math.inf, mpmath.log((1 + 2 * t) / (1 - 2 * t)), "test", "worst", "=")]

    def draw(self, x, rng):
        """Its own algorithm: one uniform per input against P(1 | x)."""
        return (rng.random(x.shape) < 0.5 + float(self.theta) * x / float(self.c)).astype(np.int64)

    @classmethod
    def design(cls):
        """At B bits for n clients: the sum's n + 1 values must fit 2^B; θ solved for."""
        def build(value, n, bits, c):
            return cls(c=c, theta=Fraction(value)) if n + 1 <= 2**bits else None

        return Design("theta", lambda n, bits, c: (1e-4, 0.49), build, log=False, private_high=False,
                      rule="one coin per client; θ solved for")


@dataclass(frozen=True)
class BiasedToy(Toy):
    """The toy whose sampler is wrong: its coin comes up 1 five points too often."""

    name = "biased-toy"

    def draw(self, x, rng):
        return (rng.random(x.shape) < 0.55 + float(self.theta) * x / float(self.c)).astype(np.int64)


def coin_divergence(theta: float, alpha: float) -> float:
    """D_α between Bernoulli(½ + θ) and Bernoulli(½ − θ), by the definition."""
    p, q = 0.5 + theta, 0.5 - theta
    if alpha == 1:
        return p * math.log(p / q) + q * math.log(q / p)
    return math.log(p**alpha * q ** (1 - alpha) + q**alpha * p ** (1 - alpha)) / (alpha - 1)


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(MECHANISMS, "toy", Toy)
    assert register(Toy) is Toy  # registering it again is a no-op
    return Toy


def run_json(capsys, *args) -> list[dict]:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_register_refuses_a_class_whose_params_are_not_its_fields():
    @dataclass(frozen=True)
    class Broken(Toy):
        extra: int = 1

        name = "broken"

    with pytest.raises(ValueError, match="PARAMS"):
        register(Broken)
    assert "broken" not in MECHANISMS


def test_toy_supports_every_command(toy):
    assert all(toy.supports(feature) for feature in FEATURES)
    assert toy.solvable() == {"theta": SolveRange(1e-4, 0.49)}
    with pytest.raises(ValueError, match="feature"):
        toy.supports("teleport")


def test_divergence_pmf_and_bound(toy, capsys):
    records = run_json(capsys, "divergence", "toy", "--c", "2", "--theta", "1/4", "--alpha", "1", "--alpha", "3")
    for record in records:
        assert record["divergence"] == pytest.approx(coin_divergence(0.25, record["alpha"]), rel=1e-12)
        assert {record["x"], record["x_prime"]} == {-2.0, 2.0}
    pmf = run_json(capsys, "pmf", "toy", "--c", "2", "--theta", "0.25", "--x", "1")
    assert [row["probability"] for row in pmf] == pytest.approx([0.375, 0.625], rel=1e-15)
    bound = run_json(capsys, "bound", "toy", "--c", "2", "--theta", "0.25")
    closed = next(r for r in bound if r["kind"] == "bound")
    assert closed["holds"] is True and closed["value"] == pytest.approx(math.log(3), rel=1e-14)


def test_sum_of_clients_matches_a_direct_convolution(toy, capsys):
    """n = 2 with the other client at +c: the outputs' sum is a convolution of two coins."""
    record = run_json(capsys, "divergence", "toy", "--c", "1", "--theta", "0.25", "--n", "2", "--others-plus", "1",
                      "--neighbours", "pm-c", "--alpha", "2")[0]
    p = [0.25 * 0.25, 0.25 * 0.75 + 0.75 * 0.25, 0.75 * 0.75]
    q = [0.75 * 0.25, 0.75 * 0.75 + 0.25 * 0.25, 0.25 * 0.75]
    direct = max(math.log(sum(a**2 / b for a, b in zip(p, q))), math.log(sum(b**2 / a for a, b in zip(p, q))))
    assert record["divergence"] == pytest.approx(direct, rel=1e-12)


def test_account_and_calibrate(toy, capsys):
    accounted = run_json(capsys, "account", "toy", "--c", "1", "--theta", "0.25", "--rounds", "10", "--method", "rdp")[0]
    assert 0 < accounted["epsilon"] < math.inf
    solved = run_json(capsys, "calibrate", "toy", "--c", "1", "--rounds", "10", "--solve", "theta", "--dp-epsilon",
                      str(accounted["epsilon"]), "--method", "rdp")[0]
    assert solved["value"] == pytest.approx(0.25, rel=1e-3)
    assert solved["epsilon"] <= accounted["epsilon"] * (1 + 1e-9)


def test_mc_checks_the_toys_own_sampler(toy, capsys, monkeypatch):
    calls = []
    original = Toy.draw
    monkeypatch.setattr(Toy, "draw", lambda self, x, rng: calls.append(x.size) or original(self, x, rng))
    record = run_json(capsys, "mc", "toy", "--c", "1", "--theta", "0.25", "--x", "0.5", "--samples", "20000")[0]
    assert record["samples"] == 20000 and record["p_value"] > 1e-4 and sum(calls) == 20000


def test_mc_catches_a_wrong_sampler(monkeypatch, capsys):
    monkeypatch.setitem(MECHANISMS, "biased-toy", BiasedToy)
    register(BiasedToy)
    record = run_json(capsys, "mc", "biased-toy", "--c", "1", "--theta", "0.25", "--x", "0.5", "--samples", "20000")[0]
    assert record["p_value"] < 1e-10 and record["tv"] == pytest.approx(0.05, abs=0.015)


def test_compare_calibrates_the_toy(toy, capsys):
    """θ solved so that one round's ε meets the target; the MSE of the decoded sum of n unbiased
    coins (outputs ±c/(2θ)) is n·c²/(4θ²) at x = 0, its worst input, with no wrap-around."""
    record = run_json(capsys, "compare", "--n", "4", "--bits", "4", "--dp-epsilon", "1", "--mechanisms", "toy")[0]
    assert record["feasible"] and record["solved"] == "theta"
    theta = record["value"]
    assert record["mse"] == pytest.approx(4 / (4 * theta**2), rel=1e-9)
    accounted = rdpcalc.account(Toy(c=Fraction(1), theta=Fraction(theta)), n=4, dp_delta=1e-5)["epsilon"]
    assert accounted == pytest.approx(record["epsilon"], rel=1e-9) and accounted <= 1 * (1 + 1e-9)
    assert accounted > 0.99  # calibrated: the target is nearly met, not far below it


def test_sweep_runs_the_toy(toy, tmp_path):
    spec = tmp_path / "toy.toml"
    spec.write_text('[[task]]\ncommand = "divergence"\nmechanism = "toy"\nfixed = { c = 1, alphas = [2] }\n'
                    "grid = { theta = [0.1, 0.2] }\n")
    out = tmp_path / "toy.csv"
    outcome = run_sweep(load_spec(spec), out, serial=True)
    assert (outcome.points, outcome.ran, outcome.failed) == (2, 2, 0)
    table = pd.read_csv(out)
    for theta in (0.1, 0.2):
        [value] = table[table.param_theta == theta].divergence
        assert value == pytest.approx(coin_divergence(theta, 2), rel=1e-10)


def test_help_shows_only_the_toy(toy, capsys):
    assert main(["divergence", "toy", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--theta" in text and "rdpcalc divergence toy --c 1 --theta 0.25" in text
    assert "--levels" not in text and "--sigma" not in text
    listed = [r for r in run_json(capsys, "mechanisms") if r["kind"] == "registered"]
    assert listed[-1]["mechanism"] == "toy"
    assert listed[-1]["solvable"] == ["theta"]


def test_fl_runs_the_toy(toy, capsys, tmp_path):
    summary = run_json(capsys, "fl", "--mechanism", "toy", "--c", "0.05", "--theta", "0.25", "--rounds", "2",
                       "--clients", "4", "--n", "2", "--hidden", "2")[0]
    assert summary["mechanism"] == "toy" and summary["rounds"] == 2
    assert 0 < summary["epsilon"] < math.inf


def test_register_refuses_defaults_that_disagree():
    """The help shows the Param's default, the dataclass constructs with the field's."""

    @dataclass(frozen=True)
    class Drifted(Toy):
        theta: Fraction = Fraction(1, 4)

        name = "drifted"
        PARAMS = (Toy.PARAMS[0], Param("theta", "number", "bias", default="0.3", low=0, high=Fraction(1, 2)))

    with pytest.raises(ValueError, match="default"):
        register(Drifted)
    assert "drifted" not in MECHANISMS


@pytest.mark.parametrize("attribute, value, error, words", [
    ("name", None, ValueError, "name must be a command-line word"),
    ("name", "Two Words", ValueError, "name must be a command-line word"),
    ("name", "", ValueError, "name must be a command-line word"),
    ("title", None, TypeError, "title must be a string"),
    ("paper", 3, TypeError, "paper must be a string"),
    ("PARAMS", [], TypeError, "PARAMS must be a non-empty tuple of Param"),
    ("EXAMPLE", {"--theta": "0.25"}, ValueError, "EXAMPLE must give the required parameter 'c'"),
    ("EXAMPLE", {"--c": "1", "--theta": "0.7"}, ValueError, "EXAMPLE: theta"),
    ("EXAMPLE", {"--c": "1", "--nope": "1"}, ValueError, "'--nope' is not an option"),
])
def test_register_refuses_a_badly_declared_mechanism_at_once(attribute, value, error, words):
    Bad = dataclass(frozen=True)(type("Bad", (Toy,), {"name": "bad", attribute: value}))
    with pytest.raises(error, match=words.replace("(", r"\(")):
        register(Bad)
    assert "bad" not in MECHANISMS and None not in MECHANISMS


def _scaled(factor: float):
    """A toy's pmf, multiplied by ``factor`` where θ ≠ ¼."""

    def pmf(self, x):
        values = Toy.pmf(self, x)
        return values if self.theta == Fraction(1, 4) else [factor * p for p in values]

    return pmf


@pytest.mark.parametrize("pmf, words", [
    (lambda self, x: [p * mpmath.mpf("0.9") for p in Toy.pmf(self, x)], "sums to 0.9, not 1"),
    (lambda self, x: [p - mpmath.mpf("0.5") for p in Toy.pmf(self, x)], "has a negative, infinite or NaN"),
    (lambda self, x: [mpmath.nan, mpmath.nan], "has a negative, infinite or NaN"),
    (lambda self, x: Toy.pmf(self, x)[:1], "has 1 probabilities, but support_size is 2"),
    (lambda self, x: 1 / 0, "fails: ZeroDivisionError"),
])
def test_register_checks_the_pmf_of_the_example(pmf, words):
    Bad = dataclass(frozen=True)(type("Bad", (Toy,), {"name": "bad", "pmf": pmf}))
    with pytest.raises(SelfCheckFailed, match=f"bad: self-check failed: the pmf of its EXAMPLE at x = -1 {words}"):
        register(Bad)
    assert "bad" not in MECHANISMS


@pytest.mark.parametrize("name", sorted(set(MECHANISMS) - {"toy"}))
def test_every_built_in_mechanism_passes_the_registration_check_of_its_pmf(name):
    check_example_pmfs(MECHANISMS[name])


def test_a_self_check_failing_at_run_time_is_an_error_naming_the_mechanism(monkeypatch, capsys):
    """Right at the example's θ = ¼ (so it registers), its mass is 0.9 at θ = 0.3: exit 2, one line."""
    Shifty = dataclass(frozen=True)(type("Shifty", (Toy,), {"name": "shifty", "pmf": _scaled(0.9)}))
    monkeypatch.setitem(MECHANISMS, "shifty", Shifty)
    register(Shifty)
    for command in (["divergence", "shifty", "--c", "1", "--theta", "0.3"],
                    ["divergence", "shifty", "--c", "1", "--theta", "0.3", "--engine", "exact"],
                    ["account", "shifty", "--c", "1", "--theta", "0.3", "--n", "3", "--clients", "30"]):
        capsys.readouterr()
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("rdpcalc: error: MECHANISM: shifty: self-check failed: the pmf at x = ") and \
            err.count("\n") == 1, err


def test_a_mechanism_declares_its_parameters_once_as_params():
    """``@mechanism`` makes the fields from PARAMS (their order, their defaults converted), and
    refuses a class that writes one of them by hand as well."""

    @mechanism
    class Declared(Toy):
        PARAMS = (*Toy.PARAMS, Param("shift", "number", "a shift, any number", default="1/2"))
        name = "declared-toy"

    assert [field.name for field in dataclasses.fields(Declared)] == ["c", "theta", "shift"]
    made = Declared(c=1, theta="1/4")
    assert made.shift == Fraction(1, 2) and made.theta == Fraction(1, 4)
    with pytest.raises(ValueError, match="theta"):
        Declared(c=1, theta=1)
    register(Declared)
    MECHANISMS.pop("declared-toy")

    with pytest.raises(TypeError, match="declare it once"):
        @mechanism
        class Twice(Toy):
            theta: Fraction = Fraction(1, 4)
            name = "twice"
