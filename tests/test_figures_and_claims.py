"""Figure specs write what they plot (checked against independently computed reference values)
and the claims checker reaches the known verdicts."""

from __future__ import annotations

import csv
import json
import math

import pytest

from rdpcalc import __version__, claims
from rdpcalc.cli import main
from rdpcalc.compare import designs
from rdpcalc.figures import frontier, generate, output_names, registry, rqm, select, write_index


def read_csv(path):
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


FAST = ["rqm-fig1b", "rqm-fig2-right", "qgauss-dinf", "qmgeo-legend", "qmgeo-pmf", "qmgeo-blowup", "corbin-mse",
        "corbin-ratio", "qgauss-fig3"]


@pytest.mark.parametrize("figure_id", FAST)
def test_figure_writes_png_csv_and_meta_with_parameters(tmp_path, figure_id):
    spec = registry()[figure_id]
    comparison = generate(spec, tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(output_names(spec))
    png, table = tmp_path / f"{figure_id}.png", tmp_path / f"{figure_id}.csv"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert not table.read_text().startswith("#") and read_csv(table)
    meta = json.loads((tmp_path / f"{figure_id}.meta.json").read_text())
    assert (meta["id"], meta["parameters"], meta["rdpcalc_version"]) == (figure_id, spec.parameters, __version__)
    assert comparison and "nan" not in comparison.lower()


def test_figure_2_right_data_match_the_reference_values(tmp_path):
    generate(registry()["rqm-fig2-right"], tmp_path)
    rows = read_csv(tmp_path / "rqm-fig2-right.csv")
    worst40 = {row["curve"]: row for row in rows if row["protocol"] == "worst" and row["n"] == "40" and row["alpha"] == "inf"}
    assert float(worst40["RQM (Δ=c, q=0.42)"]["divergence"]) == pytest.approx(5.0071, abs=6e-5)
    assert float(worst40["PBM (θ=0.25, 16 trials)"]["divergence"]) == pytest.approx(17.578, abs=6e-4)


def test_quantized_gaussian_figure_3_values(tmp_path):
    generate(registry()["qgauss-fig3"], tmp_path)
    rows = read_csv(tmp_path / "qgauss-fig3.csv")
    kl = {int(r["k"]): float(r["quantized_gaussian"]) for r in rows if r["alpha"] == "1.0"}
    assert kl[2] == pytest.approx(0.228426468352, rel=1e-10)
    assert kl[64] == pytest.approx(0.45836597278, rel=1e-10)
    assert all(float(r["gaussian"]) == pytest.approx(0.5) for r in rows if r["alpha"] == "1.0")


def test_qmgeo_legend_table(tmp_path):
    generate(registry()["qmgeo-legend"], tmp_path)
    rows = read_csv(tmp_path / "qmgeo-legend.csv")
    values = {(r["R"], r["p"]): float(r["eq27_kappa2_d_abs25"]) for r in rows}
    assert round(values[("8", "0.9")], 3) == 2.626 and round(values[("16", "0.9")], 3) == 4.492
    assert all(r["mechanism_worst_d2"] == "inf" for r in rows)


def test_index_lists_every_figure(tmp_path):
    specs = select(["rqm-fig1b", "corbin-ratio"])
    comparisons = {spec.id: generate(spec, tmp_path) for spec in specs}
    text = write_index(tmp_path, specs, comparisons).read_text()
    assert "![rqm-fig1b](rqm-fig1b.png)" in text and "corbin-ratio.csv" in text and "(corbin-ratio.meta.json)" in text
    assert "header lines" not in text and "`pandas.read_csv` loads it" in text


def test_frontier_compares_every_mechanism_of_every_panel_at_epsilon_one():
    """The frontier's text gives, per panel, each mechanism's MSE at ε = 1 interpolated log–log
    between its two points around it (recomputed here), and names the lowest."""
    records, expected = [], {}
    for panel, (n, bits, drawn) in enumerate(frontier.PANELS):
        for rank, name in enumerate(drawn):
            low, high = 10.0 * (rank + 1 + panel), 2.0 * (rank + 1)  # MSE at ε = 0.5 and at ε = 4
            records += [{"n": n, "bits": bits, "mechanism": name, "kind": "sweep", "epsilon": epsilon, "mse": mse}
                        for epsilon, mse in ((0.5, low), (4.0, high))]
            expected[n, bits, name] = low * (high / low) ** (math.log(1 / 0.5) / math.log(4 / 0.5))
    text = frontier.compare(records)
    for n, bits, drawn in frontier.PANELS:
        assert set(drawn) == set(designs())
        best = min(drawn, key=lambda name: expected[n, bits, name])
        assert f"n = {n}, B = {bits}: lowest MSE at ε ≈ 1 for {best} ({expected[n, bits, best]:.3g})" in text
        assert all(f"{name} {expected[n, bits, name]:.3g}" in text for name in drawn)


def test_bands_drawn_apart_differ_in_hatch_and_carry_their_label():
    looks = [rqm._band_look("#1f77b4", index, f"band {index}") for index in range(4)]
    assert len({look["hatch"] for look in looks}) == 4 and [look["label"] for look in looks] == [f"band {i}" for i in range(4)]
    assert rqm._band_look("#1f77b4", None, "band") == {"color": "#1f77b4", "alpha": 0.15, "linewidth": 0}


def test_figures_command_lists_and_refuses_unknown_ids(capsys):
    assert main(["figures", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(spec_id in out for spec_id in registry())
    assert main(["figures", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


#: (paper, place, the claim's first words) → the verdict expected; the checks that take minutes
#: (the worst case of several RQM configurations at n = 40 and every order of the sweep) are slow
KNOWN_VERDICTS = [
    ("rqm", "Thm 5.2 proof, App. B.2", "D_∞", claims.FAILS, False),  # the worst pair is not (c, −c)
    ("rqm", "Theorem 5.2, eq. (3)", "D_∞", claims.HOLDS, False),
    ("rqm", "§6.2, Fig. 3 right", "all three", claims.PAPER_ONLY, True),
    ("rqm", "App. D.1, Fig. 5", "RQM (0.429c", claims.PAPER_ONLY, False),
    ("rqm", "App. D.2, Fig. 6", "RQM (2.33c", claims.FAILS, False),
    ("qgauss", "Fig. 3", "ε₁", claims.HOLDS, False),
    ("qgauss", "Lemma 3", "ε_∞", claims.HOLDS, False),
    ("qmgeo", "§IV-B1, eq. (21)", "QMGeo", claims.FAILS, False),
    ("qmgeo", "Fig. 6 legend", "ε = 4.492", claims.HOLDS, False),
    ("qmgeo", "Fig. 5 legend", "ε = 2.626", claims.HOLDS, False),  # 2.626 reproduces, 0.784 does not
    ("qmgeo", "Fig. 5 legend", "ε = 0.784", claims.FAILS, False),
    ("corbin", "Algorithm 2, line 14", "CorBinQ", claims.FAILS, False),
    ("corbin", "Theorem 3", "AugCorBin", claims.FAILS, False),
]


@pytest.mark.parametrize("paper, place, start, verdict", [
    pytest.param(*case[:4], marks=[pytest.mark.slow] if case[4] else [], id=f"{case[0]}-{case[1]}-{case[2]}")
    for case in KNOWN_VERDICTS])
def test_claims_verdicts_for_the_known_cases(paper, place, start, verdict):
    [claim] = [c for c in claims.CLAIMS if (c.paper, c.place) == (paper, place) and c.claim.startswith(start)]
    assert claim.check()[0] == verdict


def test_claims_command_json_and_markdown(capsys, tmp_path):
    target = tmp_path / "claims.md"
    assert main(["claims", "--paper", "corbin", "--json", "--markdown", str(target)]) == 0
    import json

    records = json.loads(capsys.readouterr().out)
    assert {r["paper"] for r in records} == {"corbin"} and all(r["verdict"] for r in records)
    assert target.read_text().startswith("# Claims") and "| corbin |" in target.read_text()
