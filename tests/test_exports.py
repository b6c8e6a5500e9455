"""Every CSV rdpcalc writes loads with a plain ``pandas.read_csv`` (no comment lines) and its
values round-trip, ±∞ included; every JSON spells ±∞ "inf"/"-inf" at any depth, never
``Infinity``, and refuses NaN."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from io import StringIO

import numpy as np
import pandas
import pytest

import rdpcalc
from rdpcalc import io
from rdpcalc.cli.outputs import write_run
from rdpcalc.figures import generate, metadata, output_names, registry


def strict_json(text: str):
    """``json.loads`` that refuses the non-standard constants Infinity, -Infinity and NaN."""

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


RECORDS = [
    {"name": "a", "count": 3, "exact": Fraction(1, 3), "numpy": np.float64(2.5), "up": math.inf, "down": -math.inf,
     "missing": None, "others": [[1.5, 39], [-math.inf, 1]]},
    {"name": "b", "count": np.int64(4), "exact": Fraction(-7, 2), "numpy": np.float32(0.25), "up": 1e300, "down": -0.0,
     "missing": 0.1, "others": {"limit": math.inf}},
]


def test_a_records_csv_round_trips_through_pandas():
    text = io.to_csv(RECORDS)
    assert not any(line.startswith("#") for line in text.splitlines())
    frame = pandas.read_csv(StringIO(text))
    assert list(frame.columns) == io.columns(RECORDS)
    assert list(frame["name"]) == ["a", "b"] and list(frame["count"]) == [3, 4]
    assert list(frame["exact"]) == [1 / 3, -3.5] and list(frame["numpy"]) == [2.5, 0.25]
    assert list(frame["up"]) == [math.inf, 1e300] and list(frame["down"]) == [-math.inf, 0.0]
    assert math.isnan(frame["missing"][0]) and frame["missing"][1] == 0.1  # None is an empty cell
    assert [json.loads(cell) for cell in frame["others"]] == [[[1.5, 39], ["-inf", 1]], {"limit": "inf"}]
    tabs = pandas.read_csv(StringIO(io.to_csv(RECORDS, delimiter="\t")), sep="\t")
    assert tabs.equals(frame)


def test_json_spells_infinity_inf_at_any_depth_and_refuses_nan():
    text = io.to_json(RECORDS)
    assert "Infinity" not in text and "∞" not in text
    first, second = strict_json(text)
    assert first["up"] == "inf" and first["down"] == "-inf" and first["others"] == [[1.5, 39], ["-inf", 1]]
    assert first["exact"] == 1 / 3 and second["count"] == 4 and type(second["count"]) is int
    assert second["others"] == {"limit": "inf"} and second["up"] == 1e300
    assert strict_json(io.json_text({"nested": ({"deep": [math.inf]},)})) == {"nested": [{"deep": ["inf"]}]}
    for bad in ({"x": math.nan}, [[1.0, {"y": np.float64("nan")}]]):
        with pytest.raises(ValueError, match="NaN"):
            io.json_text(bad)
        with pytest.raises(ValueError, match="NaN"):
            io.to_csv([{"z": bad}])


def test_json_refuses_an_infinity_that_bypasses_plain(monkeypatch):
    """``allow_nan=False``: were a float infinity to reach the encoder, it fails instead of
    writing ``Infinity``."""
    monkeypatch.setattr(io, "plain", lambda value: value)
    with pytest.raises(ValueError, match="not JSON compliant"):
        io.json_text({"epsilon": math.inf})


def test_a_figure_writes_a_plain_csv_and_a_meta_sidecar(tmp_path):
    """qmgeo-legend holds +∞ (the mechanism's worst D₂): it reads back as a float infinity."""
    spec = registry()["qmgeo-legend"]
    generate(spec, tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(output_names(spec))
    assert output_names(spec) == ["qmgeo-legend.csv", "qmgeo-legend.meta.json", "qmgeo-legend.png"]
    frame = pandas.read_csv(tmp_path / "qmgeo-legend.csv")
    records = spec.build(None)
    assert len(frame) == len(records) and list(frame.columns) == io.columns(records)
    for row, record in zip(frame.to_dict("records"), records):
        for key, value in record.items():
            if isinstance(value, float):
                assert row[key] == pytest.approx(value, rel=1e-11, abs=0), key
            else:
                assert row[key] == value, key
    assert (frame["mechanism_worst_d2"] == math.inf).all()
    meta = strict_json((tmp_path / "qmgeo-legend.meta.json").read_text())
    assert meta == metadata(spec) and meta["parameters"] == spec.parameters and meta["reproduces"] == spec.reproduces
    assert set(meta) == {"id", "title", "reproduces", "parameters", "notes", "rdpcalc_version"}
    assert meta["rdpcalc_version"] == __import__("rdpcalc").__version__


def test_a_federated_run_writes_a_plain_csv_and_a_typed_meta(tmp_path):
    """fl.csv round-trips through pandas; fl.meta.json keeps the summary's types and ε = +∞
    (clipped SGD) as "inf"."""
    rounds = [{"round": 1, "test_loss": 2.25, "test_accuracy": 0.125}, {"round": 2, "test_loss": 1.875, "test_accuracy": 0.5}]
    summary = {"mechanism": "none", "parameters": {"clip": 0.05}, "rounds": 2, "clients": 20, "per_round": 4,
               "dp_delta": 1e-5, "epsilon": math.inf, "final_test_loss": 1.875}
    write_run(tmp_path, {"rounds": rounds, "summary": summary})
    frame = pandas.read_csv(tmp_path / "fl.csv")
    assert frame.to_dict("records") == rounds
    meta = strict_json((tmp_path / "fl.meta.json").read_text())
    assert meta == {**summary, "epsilon": "inf", "rdpcalc_version": __import__("rdpcalc").__version__}


def test_records_of_the_api_with_infinities_write_as_inf():
    """QMGeo's worst case is +∞ (an output possible under x is impossible under x′): the
    divergence, its exact digits and α = ∞ are all "inf" in JSON, and the composed ε too."""
    qmgeo = rdpcalc.make_mechanism("qmgeo", R=8, p="0.5", w_max=1)
    record = strict_json(io.to_json(rdpcalc.divergence(qmgeo, alphas=["inf"], engine="exact", dps=20)))[0]
    assert record["alpha"] == "inf" and record["divergence"] == "inf" and record["divergence_digits"] == "inf"
    account = strict_json(io.to_json([rdpcalc.account(qmgeo, rounds=2)]))[0]
    assert account["epsilon"] == "inf" and isinstance(account["curve"], list)
    assert all(point["total"] == "inf" for point in account["curve"])


def test_the_account_plot_is_drawn_with_infinite_and_missing_points_in_every_format():
    """PNG, PDF and SVG, each the same bytes when drawn twice (no timestamps, fixed SVG ids)."""
    from rdpcalc.figures.plots import account_figure

    curves = {"epsilon-delta": [{"dp_delta": 1e-6, "epsilon_pld": None, "epsilon_rdp": math.inf},
                                {"dp_delta": 1e-5, "epsilon_pld": 2.0, "epsilon_rdp": 2.5}],
              "epsilon-rounds": [{"rounds": 1, "epsilon_pld": 0.5, "epsilon_rdp": 0.7},
                                 {"rounds": 10, "epsilon_pld": math.inf, "epsilon_rdp": 3.0}]}
    record = {"mechanism": "rqm", "participation": 10, "dp_delta": 1e-5}
    for fmt, magic in (("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-"), ("svg", b"<?xml")):
        first, second = account_figure(record, curves, fmt), account_figure(record, curves, fmt)
        assert first.startswith(magic) and first == second, fmt


def test_figures_in_pdf_and_svg_are_written_and_reproducible(tmp_path, capsys):
    """``figures --image-format pdf --image-format svg``: both images beside the CSV, recorded in
    the folder's manifest, byte-identical when drawn again; an unknown format exits 2 naming
    --image-format (--format is the output format of the other commands)."""
    from rdpcalc.cli import main

    args = ["figures", "qmgeo-pmf", "--image-format", "pdf", "--image-format", "svg", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    for name in ("qmgeo-pmf.pdf", "qmgeo-pmf.svg", "qmgeo-pmf.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert not (tmp_path / "a" / "qmgeo-pmf.png").exists()
    assert "qmgeo-pmf.svg" in (tmp_path / "a" / ".rdpcalc-written").read_text()
    capsys.readouterr()
    assert main(["figures", "qmgeo-pmf", "--image-format", "gif", "--out", str(tmp_path / "c")]) == 2
    assert "--image-format" in capsys.readouterr().err


def test_account_csv_holds_the_results_and_curves_go_to_their_own_file(tmp_path, capsys):
    import csv

    from rdpcalc.cli import main

    table, curves = tmp_path / "results.csv", tmp_path / "curves.csv"
    args = ["account", "gaussian", "--sigma", "2", "--rounds", "3", "--dp-delta", "1e-5", "--dp-delta", "1e-7"]
    assert main([*args, "--csv", str(table), "--curves", str(curves), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    results = list(csv.DictReader(table.open()))
    assert len(results) == 2 and "kind" not in results[0]
    assert [float(row["epsilon"]) for row in results] == pytest.approx([r["epsilon"] for r in records], rel=1e-11)
    rows = list(csv.DictReader(curves.open()))
    assert {row["kind"] for row in rows} == {"rdp-curve"} and len(rows) == len(records[0]["curve"])
    assert main([*args, "--format", "csv"]) == 0
    assert capsys.readouterr().out == table.read_text()
    assert main([*args, "--csv", str(table), "--curves", str(table)]) == 2  # one file for two outputs
