"""Backend: every sampler against its exact pmf (a wrong pmf is rejected), decoders unbiased,
the Monte Carlo command, FL runs that learn, and the IDX loader."""

from __future__ import annotations

import gzip
import json
import struct
from fractions import Fraction as F

import numpy as np
import pytest

from rdpcalc import ParameterError, api
from rdpcalc.backend import montecarlo
from rdpcalc.backend.samplers import sample
from rdpcalc.cli import main

CASES = [
    ("rqm", {"c": "1.5", "delta": "1.5", "m": 16, "q": "0.42"}, "1.5"),
    ("rqm", {"c": 1, "delta": "0.3", "m": 7, "q": "0.2"}, "-0.45"),
    ("pbm", {"c": 1, "theta": "0.35", "trials": 15}, "0.3"),
    ("qgauss", {"sigma": "0.4", "k": 9, "clip": 1}, "-0.25"),
    ("qmgeo", {"R": 8, "p": "0.5", "w_max": 1}, "0.1"),
    ("qmgeo", {"R": 16, "p": "0.9", "w_max": 1, "orientation": "L"}, "-0.77"),
    ("corbin", {"eps_p": 1, "r": "0.5"}, "0.2"),
    ("corbin", {"eps_p": 1, "r": "0.5", "d": 3, "view": "joint", "partner": "-0.1"}, "0.3"),
]


@pytest.mark.parametrize("name, params, x", CASES)
def test_sampler_matches_exact_pmf(name, params, x):
    mech = api.make_mechanism(name, **params)
    record = montecarlo.check(mech, x, 200_000, seed=11)
    assert record["p_value"] > 1e-4 and record["tv"] <= record["tv_bound"]
    summed = montecarlo.check(mech, x, 50_000, seed=12, n=4)
    assert summed["p_value"] > 1e-4


def test_a_wrong_pmf_is_rejected():
    """The same samples fail against the pmf of a slightly different mechanism."""
    right = api.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    wrong = api.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.40")
    rng = np.random.default_rng(5)
    draws = sample(right, np.full(200_000, 1.5), rng)
    counts = np.bincount(draws, minlength=16).astype(float)
    assert montecarlo.chi_square(counts, montecarlo.exact_pmf(right, "1.5"))[2] > 1e-4
    assert montecarlo.chi_square(counts, montecarlo.exact_pmf(wrong, "1.5"))[2] < 1e-6


@pytest.mark.parametrize("name, params, x", [c for c in CASES if c[0] in ("rqm", "pbm", "qgauss")] + [CASES[6]])
def test_decoders_are_unbiased(name, params, x):
    mech = api.make_mechanism(name, **params)
    values = np.array([float(v) for v in mech.output_values()])
    draws = values[sample(mech, np.full(400_000, float(F(x))), np.random.default_rng(3))]
    target = float(F(x)) + (float(mech.c) if name == "corbin" else 0.0)
    if name == "qgauss":  # unbiased for the clipped noisy input: E clip(x + σZ) = −C + σ[G((x+C)/σ) − G((x−C)/σ)]
        from scipy.stats import norm

        sigma, clip = float(mech.sigma), float(mech.clip)

        def integrated_cdf(t):
            return t * norm.cdf(t) + norm.pdf(t)

        value = float(F(x))
        target = -clip + sigma * (integrated_cdf((value + clip) / sigma) - integrated_cdf((value - clip) / sigma))
    standard_error = draws.std() / np.sqrt(len(draws))
    assert abs(draws.mean() - target) < 5 * standard_error


def test_divergence_estimate_brackets_the_exact_value():
    mech = api.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    record = montecarlo.divergence_estimate(mech, "1.5", "-1.5", 2.0, 100_000, seed=2, bootstrap=100)
    assert record["exact"] == pytest.approx(5.0635458688, rel=1e-9)
    assert record["interval_low"] < record["interval_high"] and record["exact_inside"]


def test_mc_command(capsys):
    code = main(["mc", "pbm", "--c", "1", "--theta", "0.25", "--trials", "16", "--x", "0.3", "--samples", "20000",
                 "--seed", "4", "--json"])
    record = json.loads(capsys.readouterr().out)[0]
    assert code == 0 and {"p_value", "tv", "tv_bound", "samples", "seed"} <= set(record)
    code = main(["mc", "pbm", "--c", "1", "--theta", "0.25", "--trials", "16", "--x", "2"])
    assert code == 2 and "--x" in capsys.readouterr().err


def _digits_data(clients=20, split="iid"):
    from rdpcalc.backend import data

    x, y = data.digits()
    return data.federate(x, y, clients, split, seed=0)


@pytest.mark.parametrize("mechanism, params", [("none", {}), ("rqm", {"c": "0.05", "delta": "0.05", "m": 16, "q": "0.42"})])
def test_fl_learns(mechanism, params):
    from rdpcalc.backend import fl

    config = fl.RunConfig(mechanism=mechanism, params=params, rounds=40, per_round=10, seed=1)
    result = fl.run(config, _digits_data())
    assert result["rounds"][-1]["test_accuracy"] > 0.5  # chance is 0.1
    assert result["rounds"][-1]["test_loss"] < result["rounds"][0]["test_loss"]
    if mechanism == "rqm":
        assert result["summary"]["epsilon"] > 0 and np.isfinite(result["summary"]["epsilon"])


def test_fl_label_split_and_pairs(tmp_path, capsys):
    from rdpcalc.backend import fl

    federated = _digits_data(10, "label")
    assert all(len(set(labels)) <= 4 for labels in federated.client_y)
    config = fl.RunConfig(mechanism="corbin", params={"eps_p": 1, "r": "0.05"}, rounds=3, per_round=3)
    with pytest.raises(ParameterError, match="--per-round"):
        fl.run(config, federated)
    code = main(["fl", "--mechanism", "pbm", "--c", "0.05", "--theta", "0.25", "--trials", "16", "--rounds", "5",
                 "--clients", "20", "--per-round", "4", "--out", str(tmp_path / "run")])
    assert code == 0 and (tmp_path / "run" / "fl.png").exists()
    lines = (tmp_path / "run" / "fl.csv").read_text().splitlines()
    assert sum(1 for line in lines if not line.startswith("#")) == 6  # header + 5 rounds
    code = main(["fl", "--mechanism", "rqm", "--c", "0.05", "--delta", "0.05", "--m", "16"])
    assert code == 2 and "--q" in capsys.readouterr().err


def _write_idx(path, array: np.ndarray, gz: bool):
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + array.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(path, "wb") as handle:
            handle.write(payload)
    else:
        path.write_bytes(payload)


def test_idx_loader_on_a_generated_file(tmp_path):
    from rdpcalc.backend import data

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(30, 5, 4))
    labels = rng.integers(0, 3, size=30)
    _write_idx(tmp_path / "images.idx.gz", images, gz=True)
    _write_idx(tmp_path / "labels.idx", labels, gz=False)
    x, y = data.idx_dataset(tmp_path / "images.idx.gz", tmp_path / "labels.idx")
    assert x.shape == (30, 20) and np.allclose(x * 255, images.reshape(30, 20)) and list(y) == list(labels)
    (tmp_path / "bad.idx").write_bytes(b"\x01\x02")
    with pytest.raises(ParameterError, match="--data"):
        data.read_idx(tmp_path / "bad.idx")
