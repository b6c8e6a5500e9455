"""The command line: outputs, exports, and bad input (exit 2, one line, no file left)."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import pytest

import rdpcalc
from rdpcalc.cli import main

RQM_ARGS = ["--c", "1.5", "--extension", "1.5", "--m", "16", "--q", "0.42"]
PBM_ARGS = ["--c", "1.5", "--theta", "0.25", "--trials", "16"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_divergence_json_records(capsys):
    code, out, err = run(capsys, "divergence", "rqm", *RQM_ARGS, "--n", "40", "--alpha", "2", "--alpha", "10",
                         "--alpha", "inf", "--json")
    assert code == 0 and err == ""
    records = json.loads(out)
    assert [r["alpha"] for r in records] == [2, 10, "inf"]
    expected = rdpcalc.divergence(rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42"), n=40, alphas=[2, 10, "inf"])
    for record, reference in zip(records, expected, strict=True):
        assert record["divergence"] == reference["divergence"]
        assert record["certified_upper"] == reference["certified_upper"] >= record["divergence"]
        for key in ("mechanism", "c", "delta", "m", "q", "n", "neighbours", "x", "x_prime", "others_plus", "others", "search",
                    "certificate"):
            assert key in record
    assert records[0]["neighbours"] == "worst" and records[0]["search"] == "two-group+ascent"
    assert records[0]["divergence"] >= 0.50270
    assert sum(count for _, count in records[0]["others"]) == 39


def test_pm_c_keeps_the_papers_family(capsys):
    code, out, _ = run(capsys, "divergence", "rqm", *RQM_ARGS, "--n", "40", "--alpha", "2", "--neighbours", "pm-c",
                       "--json")
    [record] = json.loads(out)
    assert code == 0 and record["neighbours"] == "pm-c" and record["search"] == "pm-c"
    assert record["divergence"] == pytest.approx(0.4859, abs=6e-5)
    assert record["certified_upper"] is None and record["others_plus"] in (0, 39)


def test_worst_case_table_shows_the_bracket(capsys):
    code, out, _ = run(capsys, "divergence", "rqm", *RQM_ARGS, "--n", "40", "--alpha", "2")
    assert code == 0
    assert "certified ≤" in out and "39 × -1.4" in out and "two-group+ascent" in out
    assert "[found, certified]" in out


def test_budget_is_validated(capsys):
    code, _, err = run(capsys, "divergence", "rqm", *RQM_ARGS, "--n", "40", "--budget", "0")
    assert code == 2 and "--budget" in err and err.count("\n") == 1


def test_counterexample_from_the_cli(capsys):
    code, out, _ = run(capsys, "divergence", "rqm", *RQM_ARGS, "--alpha", "10", "--engine", "exact", "--dps", "30", "--json")
    worst = json.loads(out)[0]
    code2, out2, _ = run(capsys, "divergence", "rqm", *RQM_ARGS, "--alpha", "10", "--neighbours", "paper", "--json")
    paper = json.loads(out2)[0]
    assert code == code2 == 0
    assert (worst["x"], worst["x_prime"]) == (-1.4, 1.5)
    assert worst["divergence_digits"].startswith("5.36839938719")
    assert paper["divergence"] == pytest.approx(5.336662, abs=6e-7)


def test_table_output_and_alpha_range(capsys):
    code, out, _ = run(capsys, "divergence", "pbm", *PBM_ARGS, "--n", "40", "--alphas", "2:1000:5")
    assert code == 0
    assert "PBM" in out and "0.55199282" in out and "39 × 1.5" in out and "17.3934957915" in out


def test_infinite_divergence_is_printed_as_infinity(capsys):
    code, out, _ = run(capsys, "divergence", "pbm", *PBM_ARGS, "--alpha", "inf", "--json")
    assert code == 0
    assert json.loads(out)[0]["divergence"] == pytest.approx(16 * math.log(3), rel=1e-12)


def test_csv_export(capsys, tmp_path):
    target = tmp_path / "out.csv"
    code, out, _ = run(capsys, "divergence", "rqm", *RQM_ARGS, "--n", "3", "--alphas", "1.5:100:4", "--alpha", "inf",
                       "--csv", str(target))
    assert code == 0 and "RQM" in out
    rows = list(csv.DictReader(target.open()))
    assert len(rows) == 5 and rows[-1]["alpha"] == "inf"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_pmf_and_bound(capsys):
    code, out, _ = run(capsys, "pmf", "rqm", *RQM_ARGS, "--x", "1.5", "--json")
    records = json.loads(out)
    assert code == 0 and len(records) == 16
    assert records[11]["probability"] == pytest.approx(0.35304423, rel=1e-12)
    code, out, _ = run(capsys, "bound", "rqm", *RQM_ARGS, "--alpha", "2", "--json")
    records = json.loads(out)
    bounds = {r["quantity"]: r for r in records if r["kind"] == "bound"}
    thm = next(r for name, r in bounds.items() if name.startswith("ε_Thm"))
    assert thm["value"] == pytest.approx(9.0124748173033, rel=1e-13) and thm["holds"] is True
    code, out, _ = run(capsys, "bound", "rqm", *RQM_ARGS)
    assert code == 0 and "Theorem 5.2" in out


@pytest.mark.parametrize(
    "argv, option",
    [
        (["divergence", "rqm", "--c", "-1", "--extension", "1", "--m", "4", "--q", "0.5"], "--c"),
        (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "1.5"], "--q"),
        (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "1", "--q", "0.5"], "--m"),
        (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "abc"], "--q"),
        (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4"], "--q"),
        (["divergence", "rqm", *RQM_ARGS, "--alpha", "0.5"], "--alpha"),
        (["divergence", "rqm", *RQM_ARGS, "--alpha", "nan"], "--alpha"),
        (["divergence", "rqm", *RQM_ARGS, "--alphas", "2:1"], "--alphas"),
        (["divergence", "rqm", *RQM_ARGS, "--n", "0"], "--n"),
        (["divergence", "rqm", *RQM_ARGS, "--n", "two"], "--n"),
        (["divergence", "rqm", *RQM_ARGS, "--n", "5", "--others-plus", "5"], "--others-plus"),
        (["divergence", "rqm", *RQM_ARGS, "--n", "5", "--others-plus", "2", "--neighbours", "paper"], "--others-plus"),
        (["divergence", "rqm", *RQM_ARGS, "--x", "2"], "--x"),
        (["divergence", "rqm", *RQM_ARGS, "--x", "1"], "--x-prime"),
        (["divergence", "rqm", *RQM_ARGS, "--engine", "slow"], "--engine"),
        (["divergence", "rqm", *RQM_ARGS, "--dps", "5"], "--dps"),
        (["divergence", "rqm", *RQM_ARGS, "--neighbours", "best"], "--neighbours"),
        (["divergence", "pbm", "--c", "1", "--theta", "0.5", "--trials", "16"], "--theta"),
        (["divergence", "pbm", "--c", "1", "--theta", "0.2", "--trials", "0"], "--trials"),
        (["divergence", "pbm", *PBM_ARGS, "--wat", "1"], "--wat"),
        (["pmf", "rqm", *RQM_ARGS], "--x"),
        (["divergence", "rqm", *RQM_ARGS, "--n", "3000", "--engine", "exact", "--others-plus", "3"], "--engine"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, option):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and option in err
    assert "Traceback" not in err


def test_unknown_mechanism(capsys):
    code, _, err = run(capsys, "divergence", "nope")
    assert code == 2 and err.count("\n") == 1 and "nope" in err


def test_bad_input_leaves_no_csv(capsys, tmp_path):
    target = tmp_path / "x.csv"
    code, _, _ = run(capsys, "divergence", "rqm", *RQM_ARGS, "--alpha", "0", "--csv", str(target))
    assert code == 2 and not target.exists() and list(tmp_path.iterdir()) == []
    code, _, err = run(capsys, "divergence", "rqm", *RQM_ARGS, "--csv", str(tmp_path / "missing" / "x.csv"))
    assert code == 2 and "--csv" in err


def test_help_has_examples(capsys):
    code, out, _ = run(capsys, "divergence", "rqm", "--help")
    assert code == 0 and "Examples" in out and "--extension" in out


def test_each_calibrate_help_shows_its_example(capsys):
    """Every `calibrate NAME --help` shows the example bench section O times, one space between
    its words (corbin, with no parameters of its own to show, had two)."""
    from rdpcalc.cli.commands import calibrate_example
    from rdpcalc.mechanisms import MECHANISMS

    kinds = ["gaussian", "laplace", *(cls for cls in MECHANISMS.values() if cls.supports("calibrate"))]
    for kind in kinds:
        example = calibrate_example(kind)
        name = kind if isinstance(kind, str) else kind.name
        code, out, _ = run(capsys, "calibrate", name, "--help")
        assert code == 0 and example.startswith(f"rdpcalc calibrate {name} ") and "  " not in example
        assert example in " ".join(out.split()), name


def test_python_dash_m_entry_point():
    result = subprocess.run([sys.executable, "-m", "rdpcalc", "divergence", "rqm", *RQM_ARGS, "--alpha", "2", "--json"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert json.loads(result.stdout)[0]["divergence"] == pytest.approx(5.0635, abs=6e-5)


def test_quantized_gaussian_from_the_cli(capsys):
    code, out, _ = run(capsys, "divergence", "qgauss", "--sigma", "1", "--clip", "1", "--k", "2", "--alpha", "1")
    assert code == 0 and "0.228426468352" in out
    code, out, _ = run(capsys, "divergence", "qgauss", "--sigma", "1", "--clip", "1", "--k", "8", "--n", "3",
                       "--others-plus", "2", "--alpha", "2", "--json")
    record = json.loads(out)[0]
    assert code == 0 and record["others_plus"] == 2 and record["k"] == 8 and record["n"] == 3
    code, _, err = run(capsys, "divergence", "qgauss", "--sigma", "1", "--clip", "1", "--k", "1")
    assert code == 2 and "--k" in err and err.count("\n") == 1


def test_a_bracket_wider_than_one_percent_is_pointed_out_with_its_ratio(capsys):
    """The quantized Gaussian at n = 100 (three anchors: about 4.6 % apart): the note gives
    certified / found at the widest order, recomputed here from the JSON records; PBM at n = 40
    (closed) has no such note."""
    args = ["divergence", "qgauss", "--sigma", "1", "--clip", "1", "--levels", "16", "--n", "100", "--alpha", "2",
            "--alpha", "10"]
    code, out, _ = run(capsys, *args)
    _, listed, _ = run(capsys, *args, "--json")
    ratio = max(r["certified_upper"] / r["divergence"] for r in json.loads(listed))
    assert code == 0 and ratio > 1.01
    assert f"note: the bracket is wider than 1%: certified / found = {ratio:.4g} at α =" in out
    code, out, _ = run(capsys, "divergence", "pbm", "--c", "1.5", "--theta", "0.25", "--trials", "16", "--n", "40",
                       "--alpha", "2")
    assert code == 0 and "wider than" not in out


def test_qmgeo_infinite_worst_case_and_legend_numbers_from_the_cli(capsys):
    code, out, _ = run(capsys, "divergence", "qmgeo", "--R", "8", "--p", "0.5", "--w-max", "1", "--alpha", "inf",
                       "--json")
    record = json.loads(out)[0]
    assert code == 0 and record["divergence"] == "inf" and {record["x"], record["x_prime"]} == {-1, 1}
    code, out, _ = run(capsys, "divergence", "qmgeo", "--R", "8", "--p", "0.5", "--w-max", "1", "--alpha", "inf")
    assert "+∞" in out
    for R, p, legend in (("8", "0.9", "2.626"), ("16", "0.9", "4.492"), ("8", "0.5", "0.787")):
        code, out, _ = run(capsys, "bound", "qmgeo", "--R", R, "--p", p, "--w-max", "0.05", "--alpha", "2", "--json")
        row = next(r for r in json.loads(out) if r["quantity"].startswith("κ²d·|(25)|"))
        assert code == 0 and f"{row['value']:.3f}" == legend
    code, _, err = run(capsys, "divergence", "qmgeo", "--R", "8", "--p", "0.5", "--w-max", "1", "--normalisers", "printed")
    assert code == 2 and "--normalisers" in err
    code, out, _ = run(capsys, "pmf", "qmgeo", "--R", "8", "--p", "0.5", "--w-max", "1", "--x", "0.1",
                       "--normalisers", "printed")
    assert code == 0 and "NOT a distribution" in out


def test_corbin_from_the_cli(capsys):
    code, out, _ = run(capsys, "divergence", "corbin", "--eps-p", "1", "--alpha", "2")
    assert code == 0 and "0.735325664056" in out
    code, out, _ = run(capsys, "divergence", "corbin", "--eps-p", "1", "--alpha", "2", "--view", "joint", "--json")
    record = json.loads(out)[0]
    assert code == 0 and record["divergence"] == "inf" and record["reason"]
    code, out, _ = run(capsys, "divergence", "corbin", "--eps-p", "1", "--alpha", "2", "--view", "joint")
    assert "+∞ because" in out
    code, _, err = run(capsys, "divergence", "corbin", "--eps-p", "-1")
    assert code == 2 and "--eps-p" in err and err.count("\n") == 1
    code, out, _ = run(capsys, "bound", "corbin", "--eps-p", "1", "--r", "0.5", "--n", "50", "--json")
    assert code == 0 and any(r["quantity"].startswith("Theorem 2") for r in json.loads(out))


def test_layered_divergence_and_bits_from_the_cli(capsys):
    code, out, _ = run(capsys, "divergence", "layered", "--noise", "gauss", "--sigma", "2", "--alpha", "2", "--json")
    assert code == 0 and json.loads(out)[0]["divergence"] == pytest.approx(2 / (2 * 4), rel=1e-14)
    code, out, _ = run(capsys, "divergence", "layered", "--noise", "irwin-hall", "--n", "10", "--alpha", "2", "--json")
    record = json.loads(out)[0]
    assert code == 0 and record["divergence"] == "inf" and "support" in record["reason"]
    code, out, _ = run(capsys, "bits", "layered", "--noise", "gauss", "--sigma", "1", "--t", "64", "--json")
    rows = {r["quantity"]: r["value"] for r in json.loads(out)}
    assert code == 0
    assert rows["minimal step of the shifted quantizer η_Z"] == pytest.approx(2.354820, abs=1e-6)
    assert rows["H(M|S), direct layered, exact"] == pytest.approx(4.5096, abs=0.002)
    assert rows["fixed length, shifted ⌈log₂(2 + t/η_Z)⌉"] == 5
    code, out, _ = run(capsys, "bits", "layered", "--noise", "laplace", "--sigma", "1", "--t", "16", "--json")
    rows = {r["quantity"]: r["value"] for r in json.loads(out)}
    assert rows["minimal step of the shifted quantizer η_Z"] == pytest.approx(0.980258, abs=1e-6)
    code, _, err = run(capsys, "bits", "layered", "--sigma", "0")
    assert code == 2 and "--sigma" in err and err.count("\n") == 1


def test_account_says_which_per_round_curve(capsys):
    args = ("account", "rqm", *RQM_ARGS, "--n", "6", "--rounds", "10")
    code, out, _ = run(capsys, *args)
    assert code == 0 and "per-round Rényi curve: certified upper bound of the worst case" in out
    assert "per-round dominating pair of:" in out and "ε (pld)" in out and "ε (rdp)" in out
    code, out, _ = run(capsys, *args, "--per-round", "found")
    assert code == 0 and out.count("NOT a guarantee") == 2
    code, _, err = run(capsys, *args, "--per-round", "best")
    assert code == 2 and "--per-round" in err
