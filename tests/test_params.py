"""Options declared once (rdpcalc.params.Param): the API converts and checks a value against the
declaration, and the command line shows the same range in its help and its error."""

from __future__ import annotations

import ast
import re
from fractions import Fraction
from pathlib import Path

import pytest

import rdpcalc
from rdpcalc.cli import main
from rdpcalc.params import Param
from rdpcalc.worstcase.neighbours import BUDGET, CERTIFY_WITHIN

PACKAGE = Path(rdpcalc.__file__).parent
RQM = ("--c", "1.5", "--extension", "1.5", "--levels", "16", "--q", "0.42")


@pytest.mark.parametrize("param, words", [
    (Param("dps", "integer", "", low=15, high=1000), "15 … 1000"),
    (Param("n", "integer", "", low=1, high=10**6), "1 … 10⁶"),
    (Param("n", "integer", "", low=2, high=100_001), "2 … 100001"),
    (Param("q", "number", "", low=0, high=1, low_open=True), "(0, 1]"),
    (Param("h", "number", "", low=Fraction(1e-6), high=Fraction(1, 10)), "1e-6 … 0.1"),
    (Param("rounds", "integer", "", low=1), "≥ 1"),
    (Param("sigma", "number", "", low=0, low_open=True), "> 0"),
    (Param("engine", "choice", "", choices=("fast", "exact")), "fast|exact"),
])
def test_range_words(param, words):
    assert param.range_words() == words
    assert Param(param.name, param.kind, "Help, {range}.", low=param.low, high=param.high, low_open=param.low_open,
                 choices=param.choices).help_text() == f"Help, {words}."


@pytest.mark.parametrize("value", [2.5, "2.5", "many", True, float("inf"), 0, 1001])
def test_a_bounded_option_refuses_with_its_range(value):
    dps = Param("dps", "integer", "", low=15, high=1000)
    with pytest.raises(rdpcalc.ParameterError, match=r"^dps: must be an integer in \[15, 1000\], got "):
        dps.convert(value)


@pytest.mark.parametrize("value, converted", [(50, 50), ("60", 60), (Fraction(70), 70), (80.0, 80)])
def test_a_bounded_option_reads_integral_values(value, converted):
    result = Param("dps", "integer", "", low=15, high=1000).convert(value)
    assert result == converted and type(result) is int


def test_the_api_and_the_command_line_refuse_alike(capsys):
    """The API's error and the command line's name the same range, from one declaration."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    for param, value in ((BUDGET, 0), (CERTIFY_WITHIN, "0.75")):
        with pytest.raises(rdpcalc.ParameterError) as refused:
            rdpcalc.divergence(mech, n=3, choose=rdpcalc.NeighbourOptions(**{param.name: value}))
        assert refused.value.message.startswith(param.range_text())
        assert main(["divergence", "rqm", *RQM, "--n", "3", param.option, str(value)]) == 2
        err = capsys.readouterr().err
        assert f"{param.option}: {param.range_text()}" in err and len(err.strip().splitlines()) == 1
        assert main(["divergence", "rqm", "--help"]) == 0
        assert param.range_words() in " ".join(capsys.readouterr().out.split())


def test_no_option_is_checked_by_hand():
    """The hand-written checks of an option's type and range are gone: they are declared
    (rdpcalc.params.Param). What is left is a relation between options (n ≤ clients), a
    registry (the mechanisms' names) or a programming error (ValueError)."""
    pattern = re.compile(r"isinstance\((\w+), bool\) or not isinstance\(\1, int")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.If) and pattern.search(ast.unparse(node.test))
                    and any(isinstance(inner, ast.Raise) and "ParameterError" in ast.unparse(inner) for inner in node.body)):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found


def test_the_hand_check_finder_finds_one():
    source = 'if isinstance(n, bool) or not isinstance(n, int) or n < 1:\n    raise ParameterError("n", "…")\n'
    node = ast.parse(source).body[0]
    assert re.search(r"isinstance\((\w+), bool\) or not isinstance\(\1, int", ast.unparse(node.test))


@pytest.mark.parametrize("value, converted", [(0.25, 0.25), ("0.25", 0.25), (1e300, 1e300), (2, 2.0)])
def test_a_float_option_stays_a_float(value, converted):
    """Options of float arithmetic (noise scales, grid steps) keep the float's whole range: 1e300
    is a valid Laplace sensitivity (its ε is +∞ on the PLD grid, not an error)."""
    result = Param("sensitivity", "float", "", low=0, low_open=True).convert(value)
    assert result == converted and type(result) is float


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), float("nan"), "many", True])
def test_a_float_option_refuses_with_its_range(value):
    with pytest.raises(rdpcalc.ParameterError, match=r"^sensitivity: must be a number > 0, got "):
        Param("sensitivity", "float", "", low=0, low_open=True).convert(value)


def test_an_upper_end_set_by_another_option_is_named():
    """participation ≤ rounds: the error names the other option and gives its value."""
    bounded = Param("participation", "integer", "", low=1).up_to(40, "`rounds`")
    with pytest.raises(rdpcalc.ParameterError, match=r"^participation: must be an integer in \[1, `rounds`\] = \[1, 40\], "
                                                     r"got 41$"):
        bounded.convert(41)
    assert bounded.convert("40") == 40
