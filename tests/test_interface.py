"""The command line's interface: one vocabulary, deprecated spellings with a hint, exact
rationals, output formats, per-mechanism help, the mechanisms listing, bare commands."""

from __future__ import annotations

import csv
import io
import json
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from rdpcalc.cli import main
from rdpcalc.mechanisms import MECHANISMS

ROOT = Path(__file__).resolve().parent.parent
RQM = ["--c", "1.5", "--extension", "1.5", "--levels", "16", "--q", "0.42"]


def run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def divergence_values(capsys, *argv) -> list[float]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return [record["divergence"] for record in json.loads(out)]


def test_paper_symbols_are_aliases_of_the_shared_options(capsys):
    canonical = divergence_values(capsys, "divergence", "rqm", *RQM, "--alpha", "2")
    paper = divergence_values(capsys, "divergence", "rqm", "--c", "1.5", "--delta", "1.5", "--m", "16", "--q", "0.42",
                              "--alpha", "2")
    assert canonical == paper
    qmgeo = divergence_values(capsys, "divergence", "qmgeo", "--levels", "8", "--p", "0.5", "--c", "1", "--alpha", "2")
    assert qmgeo == divergence_values(capsys, "divergence", "qmgeo", "--R", "8", "--p", "0.5", "--w-max", "1",
                                      "--alpha", "2")


def test_exact_rationals_are_accepted(capsys):
    decimal = divergence_values(capsys, "divergence", "rqm", *RQM, "--alpha", "10")
    ratio = divergence_values(capsys, "divergence", "rqm", "--c", "3/2", "--extension", "1.5", "--levels", "16", "--q", "21/50",
                              "--alpha", "10")
    assert decimal == ratio
    code, _, err = run(capsys, "divergence", "rqm", *RQM[:-1], "1/0")
    assert code == 2 and err.startswith("rdpcalc: error: --q:") and err.count("\n") == 1


@pytest.mark.parametrize("old, new, value, extra", [
    ("--k", "--others-plus", "1", ["--n", "3", "--neighbours", "pm-c"]),
    ("--k-others", "--others-plus", "1", ["--n", "3", "--neighbours", "pm-c"]),
])
def test_deprecated_spellings_work_with_a_hint(capsys, old, new, value, extra):
    code, out, err = run(capsys, "divergence", "rqm", *RQM, *extra, old, value, "--alpha", "2", "--json")
    assert code == 0 and err == f"rdpcalc: note: {old} is deprecated; use {new}\n"
    code, expected, _ = run(capsys, "divergence", "rqm", *RQM, *extra, new, value, "--alpha", "2", "--json")
    assert out == expected
    code, out, err = run(capsys, "divergence", "rqm", *RQM, *extra, old, value, "--alpha", "2", "--json", "--quiet")
    assert code == 0 and err == ""
    code, out, err = run(capsys, "divergence", "rqm", *RQM, *extra, old, value, new, value)
    assert code == 2 and out == "" and f"--others-plus: is given 2 times ({old}, {new})" in err


def test_account_and_calibrate_targets(capsys):
    code, new, err = run(capsys, "account", "gaussian", "--sigma", "1", "--dp-delta", "1e-6", "--dp-epsilon", "2", "--json")
    assert code == 0 and err == ""
    code, old, err = run(capsys, "account", "gaussian", "--sigma", "1", "--delta-target", "1e-6", "--epsilon-target", "2",
                         "--json")
    assert old == new and "--delta-target is deprecated" in err and "--epsilon-target is deprecated" in err
    record = json.loads(new)[0]
    assert record["dp_delta"] == 1e-6 and record["dp_epsilon"] == 2
    assert 0 < record["dp_delta_at_dp_epsilon"] < 1
    code, out, err = run(capsys, "calibrate", "gaussian", "--rounds", "10", "--solve", "sigma", "--target-eps", "2", "--json")
    assert code == 0 and "--target-eps is deprecated; use --dp-epsilon" in err
    assert json.loads(out)[0]["dp_epsilon"] == 2


def test_formats(capsys):
    code, as_json, _ = run(capsys, "divergence", "rqm", *RQM, "--alpha", "2", "--alpha", "inf", "--format", "json")
    records = json.loads(as_json)
    for form, delimiter in (("csv", ","), ("tsv", "\t")):
        code, out, _ = run(capsys, "divergence", "rqm", *RQM, "--alpha", "2", "--alpha", "inf", "--format", form)
        rows = list(csv.DictReader(io.StringIO(out), delimiter=delimiter))
        assert code == 0 and [float(row["divergence"]) for row in rows] == [r["divergence"] for r in records]
        assert rows[1]["alpha"] == "inf"
    code, _, err = run(capsys, "divergence", "rqm", *RQM, "--json", "--format", "csv")
    assert code == 2 and err.startswith("rdpcalc: error: --json:")


def test_help_is_per_mechanism(capsys):
    code, out, _ = run(capsys, "divergence", "qgauss", "--help")
    assert code == 0
    assert "rdpcalc divergence qgauss --sigma 1 --levels 16 --clip 1" in out
    assert "--sigma" in out and "--levels" in out and "--theta" not in out and "--extension" not in out
    assert "[required]" in out


@pytest.mark.parametrize("command", [["divergence", "rqm"], ["account", "ddg"], ["calibrate", "pbm"], ["sweep"],
                                     ["compare"], ["account", "gaussian"]])
def test_help_names_values_in_one_style_and_prints_defaults_plainly(capsys, command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert not any(style in out for style in ("<int>", "<float>", "<str>", "<text>", "default: ("))
    assert "INTEGER" in out


def test_positional_arguments_show_their_help(capsys, monkeypatch):
    """typer < 0.26 on click 8.5 or later loses it (rdpcalc.cli.clicklib.restore_argument_help)."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "sweep", "--help")
    assert code == 0 and "The sweep: a TOML file of [[task]] tables" in out
    code, out, _ = run(capsys, "figures", "--help")
    assert code == 0 and "Figure IDs, or all (see --list)." in out


#: flwr 1.42.0's requirement on typer (its wheel's METADATA)
FLOWER_TYPER = SpecifierSet(">=0.13.0,<0.21.0")


def test_the_typer_pin_admits_the_typer_of_flower_1_42():
    """rdpcalc installs beside Flower 1.42 (CI has no flwr: its requirement is copied above).
    pip picks typer 0.20.1 there; below 0.19 typer cannot read the choices (Literal)."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    pin = next(Requirement(text).specifier for text in dependencies if Requirement(text).name == "typer")
    assert "0.20.1" in pin and "0.20.1" in FLOWER_TYPER
    assert "0.18.0" not in pin


def test_a_missing_options_error_names_every_missing_option(capsys):
    code, _, err = run(capsys, "divergence", "rqm", "--c", "1", "--m=4")
    assert code == 2 and err == "rdpcalc: error: Missing options '--extension', '--q'.\n"
    code, _, err = run(capsys, "divergence", "rqm", "--c", "1", "--extension", "1", "--levels", "4")
    assert code == 2 and err == "rdpcalc: error: Missing option '--q'.\n"


def test_integer_options_are_typed(capsys):
    code, out, _ = run(capsys, "divergence", "rqm", "--help")
    assert "INTEGER" in out
    code, _, err = run(capsys, "divergence", "rqm", *RQM, "--n", "2.5")
    assert code == 2 and "--n" in err and err.count("\n") == 1


def test_bare_commands_print_help_and_exit_0(capsys):
    code, out, err = run(capsys)
    assert code == 0 and "Usage: rdpcalc" in out and err == ""
    code, out, _ = run(capsys, "divergence")
    assert code == 0 and "rqm" in out and "layered" in out


def test_figures_without_ids_asks_for_all(capsys):
    code, out, err = run(capsys, "figures")
    assert code == 2 and out == "" and "all" in err and err.count("\n") == 1


def test_mechanisms_lists_every_registered_one_and_the_references(capsys, monkeypatch):
    code, out, _ = run(capsys, "mechanisms", "--json")
    records = json.loads(out)
    assert [r["mechanism"] for r in records if r["kind"] == "registered"] == list(MECHANISMS)
    references = {r["mechanism"]: r for r in records if r["kind"] == "reference"}
    assert set(references) == {"gaussian", "laplace", "layered"}
    assert references["gaussian"]["commands"] == ["account", "calibrate"] and references["gaussian"]["solvable"] == ["sigma"]
    assert [p["option"] for p in references["layered"]["parameters"]] == ["--noise", "--sigma", "--sensitivity", "--n"]
    for name, record in references.items():  # every command listed exists for it
        assert all(main([command, name, "--help"]) == 0 for command in record["commands"])
    capsys.readouterr()
    rqm = records[0]
    levels = next(p for p in rqm["parameters"] if p["name"] == "m")
    assert levels["option"] == "--levels" and levels["aliases"] == ["--m"] and levels["range"] == "an integer in [2, 4096]"
    assert "arXiv:2306.11913" in rqm["paper"] and rqm["solvable"] == ["delta", "q"]
    monkeypatch.setenv("COLUMNS", "400")
    code, table, _ = run(capsys, "mechanisms")
    assert code == 0 and all(cls.title in table for cls in MECHANISMS.values())
    assert all(f"{name} (reference)" in table for name in references)
    assert "--n: an integer in [1, 1000], default 1 [bound]" in table  # ddg's: the text is not read as markup


@pytest.mark.parametrize("columns, width", [(None, 80), ("100", 100), ("abc", 80)])
def test_mechanisms_wraps_at_columns_or_80_into_a_pipe(capsys, monkeypatch, columns, width):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    code, table, _ = run(capsys, "mechanisms")
    lines = table.splitlines()
    assert code == 0 and max(len(line) for line in lines) == width
    assert "layered (reference)" in table and "--levels (--m): an" in table


def test_errors_name_the_option_a_user_types(capsys):
    """The API names parameters (m, dp_delta); the command line names their options."""
    code, _, err = run(capsys, "divergence", "rqm", "--c", "1", "--extension", "1", "--m", "1", "--q", "0.5")
    assert err == "rdpcalc: error: --levels (--m): must be an integer in [2, 4096], got 1\n"
    code, _, err = run(capsys, "account", "gaussian", "--sigma", "1", "--dp-delta", "2")
    assert code == 2 and err.startswith("rdpcalc: error: --dp-delta:")
    code, _, err = run(capsys, "account", "rqm", *RQM, "--n", "5", "--clients", "3")
    assert code == 2 and "--n:" in err and "--clients" in err and "`" not in err


def test_an_option_given_twice_is_refused(capsys):
    """click keeps the last value without a word; an alias beside its option is the same."""
    code, out, err = run(capsys, "divergence", "rqm", *RQM, "--q", "0.5")
    assert code == 2 and out == "" and err == "rdpcalc: error: --q: is given 2 times (--q, --q): give it once\n"
    code, _, err = run(capsys, "divergence", "corbin", "--eps-p", "1", "--c", "0.5", "--r=1")
    assert code == 2 and "--c (--r): is given 2 times (--c, --r)" in err
    code, out, _ = run(capsys, "divergence", "rqm", *RQM, "--alpha", "2", "--alpha", "3", "--json")
    assert code == 0 and len(json.loads(out)) == 2  # a repeatable option stays repeatable


def test_fl_refuses_another_mechanisms_parameters_before_reading_data(capsys, tmp_path):
    base = ["fl", "--mechanism", "rqm", "--c", "0.05", "--extension", "0.05", "--levels", "16", "--q", "0.42", "--rounds", "1"]
    for extra, option in ((["--theta", "0.3"], "--theta"), (["--clip", "5"], "--clip")):
        code, out, err = run(capsys, *base, *extra)
        assert code == 2 and out == "" and err.startswith(f"rdpcalc: error: {option}: is not a parameter")


def test_figures_named_twice_are_built_once(capsys, tmp_path):
    """21 copies of one id counted as 'all figures' and wrote the index: an internal KeyError."""
    code, _, err = run(capsys, "figures", *["rqm-fig1b"] * 21, "--out", str(tmp_path))
    assert code == 0 and err.count("rqm-fig1b:") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rdpcalc-written", "rqm-fig1b.csv", "rqm-fig1b.meta.json",
                                                            "rqm-fig1b.png"]


DELTA_NOTE = "rdpcalc: note: --delta is RQM's range extension Δ (also --extension), not the DP δ, which is --dp-delta\n"


def test_rqm_delta_is_its_extension_with_a_note(capsys):
    """--delta, the paper's symbol, sets RQM's range extension Δ as --extension does, and says so on
    every use (the DP δ is --dp-delta); --quiet silences the note."""
    argv = ["divergence", "rqm", "--c", "1.5", "--levels", "16", "--q", "0.42", "--alpha", "2", "--json"]
    code, extension, err = run(capsys, *argv, "--extension", "1.5")
    assert code == 0 and err == ""
    code, delta, err = run(capsys, *argv, "--delta", "1.5")
    assert code == 0 and delta == extension and err == DELTA_NOTE
    code, quiet, err = run(capsys, *argv, "--delta=1.5", "--quiet")
    assert code == 0 and quiet == extension and err == ""


@pytest.mark.parametrize("command", [
    ["account", "rqm", "--c", "1", "--m", "4", "--q", "0.5", "--rounds", "2"],
    ["calibrate", "rqm", "--c", "1", "--m", "4", "--solve", "q", "--dp-epsilon", "20"],
    ["fl", "--mechanism", "rqm", "--c", "0.05", "--levels", "16", "--q", "0.42", "--clip", "5"],
])
def test_a_dp_delta_given_as_delta_gets_the_note(capsys, command):
    """The case the note is for: --delta 1e-5 meant as the DP δ sets Δ = 1e-5, and the note comes
    last, once the command has run. A refused command (fl refuses --clip) keeps its one error line."""
    code, _, err = run(capsys, *command, "--delta", "1e-5")
    if command[0] == "fl":
        assert code == 2 and err.startswith("rdpcalc: error: --clip") and len(err.splitlines()) == 1
    else:
        assert code == 0 and err.endswith(DELTA_NOTE)


def test_delta_beside_extension_is_refused(capsys):
    for command in (["divergence", "rqm", *RQM], ["fl", "--mechanism", "rqm", *RQM]):
        code, out, err = run(capsys, *command, "--delta", "1.5")
        assert code == 2 and out == ""
        assert err == "rdpcalc: error: --extension (--delta): is given 2 times (--extension, --delta): give it once\n"


def test_calibrate_solves_for_an_option_as_it_is_spelled(capsys):
    """RQM's Δ is --extension on the command line: --solve extension, and the API's (and
    paper's) name delta, solve for the same parameter with the same result; anything else is
    refused with the spellings offered."""
    common = ["calibrate", "rqm", "--c", "1.5", "--levels", "16", "--q", "0.42", "--rounds", "20",
              "--dp-epsilon", "4", "--method", "rdp", "--json"]
    records = []
    for spelling in ("extension", "delta"):
        code, out, _ = run(capsys, *common, "--solve", spelling)
        assert code == 0
        records.append(json.loads(out)[0])
    assert records[0]["solved"] == records[1]["solved"] == "delta"
    assert records[0]["value"] == records[1]["value"] and records[0]["epsilon"] <= 4
    code, _, err = run(capsys, *common, "--solve", "Delta")
    assert code == 2 and "'extension', 'q', 'delta'" in err
