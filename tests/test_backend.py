"""Backend: every sampler against its exact pmf (a wrong pmf is rejected), decoders unbiased,
the Monte Carlo command, FL runs that learn, and the IDX loader."""

from __future__ import annotations

import gzip
import json
import math
import struct
from fractions import Fraction as F

import numpy as np
import pytest

import rdpcalc
from rdpcalc import ParameterError
from rdpcalc.backend import montecarlo
from rdpcalc.cli import main
from rdpcalc.cli.outputs import FL_FILES, write_run

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
    mech = rdpcalc.make_mechanism(name, **params)
    record = montecarlo.check(mech, x, 200_000, seed=11)
    assert record["p_value"] > 1e-4 and record["tv"] <= record["tv_bound"]
    summed = montecarlo.check(mech, x, 50_000, seed=12, n=4)
    assert summed["p_value"] > 1e-4


def test_a_wrong_pmf_is_rejected():
    """The same samples fail against the pmf of a slightly different mechanism."""
    right = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    wrong = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.40")
    rng = np.random.default_rng(5)
    draws = right.sample(np.full(200_000, 1.5), rng)
    counts = np.bincount(draws, minlength=16).astype(float)
    assert montecarlo.chi_square(counts, montecarlo.exact_pmf(right, "1.5"))[2] > 1e-4
    assert montecarlo.chi_square(counts, montecarlo.exact_pmf(wrong, "1.5"))[2] < 1e-6


@pytest.mark.parametrize("name, params, x", [c for c in CASES if c[0] in ("rqm", "pbm", "qgauss")] + [CASES[6]])
def test_decoders_are_unbiased(name, params, x):
    mech = rdpcalc.make_mechanism(name, **params)
    values = np.array([float(v) for v in mech.output_values()])
    draws = values[mech.sample(np.full(400_000, float(F(x))), np.random.default_rng(3))]
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
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
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


def test_fl_label_split_and_pairs():
    from rdpcalc.backend import fl

    federated = _digits_data(10, "label")
    assert all(len(set(labels)) <= 4 for labels in federated.client_y)
    config = fl.RunConfig(mechanism="corbin", params={"eps_p": 1, "r": "0.05"}, rounds=3, per_round=3)
    with pytest.raises(ParameterError, match="^n: CorBin-FL pairs the sampled clients"):
        fl.run(config, federated)


def test_fl_command_writes_its_folder(tmp_path, capsys):
    from rdpcalc.io import MANIFEST

    code = main(["fl", "--mechanism", "pbm", "--c", "0.05", "--theta", "0.25", "--trials", "16", "--rounds", "5",
                 "--clients", "20", "--n", "4", "--hidden", "2", "--out", str(tmp_path / "run")])
    assert code == 0 and sorted(path.name for path in (tmp_path / "run").iterdir()) == sorted([*FL_FILES, MANIFEST])
    assert len((tmp_path / "run" / "fl.csv").read_text().splitlines()) == 6  # header + 5 rounds
    code = main(["fl", "--mechanism", "rqm", "--c", "0.05", "--extension", "0.05", "--m", "16"])
    assert code == 2 and "--q" in capsys.readouterr().err


RQM_FL = {"c": "0.05", "delta": "0.05", "m": 16, "q": "0.42"}
SETUP = {"mechanism": "none", "params": {}, "clip": None, "rounds": 2, "n": 4, "lr": 0.5, "batch": 8, "hidden": 4,
         "seed": 0, "dp_delta": 1e-5, "clients": 20, "split": "iid"}


def fl_setup(**options):
    """configure, then load: the configuration and the federated data of a run given flat."""
    from rdpcalc.backend import fl

    data = fl.DataOptions(**{key: options.pop(key) for key in ("clients", "split", "images", "labels") if key in options})
    config = fl.configure(**options)
    return config, fl.load(config, data)


def test_fl_summary_keeps_the_mechanism_parameters_apart_from_the_dp_delta(tmp_path):
    """RQM's Δ = 0.05 was recorded as the DP δ 1e-5 (the run's δ overwrote the parameter of the
    same name): the parameters are nested under ``parameters`` with their own types, δ is
    ``dp_delta``, in the summary and in fl.meta.json."""
    from rdpcalc.backend import fl

    config, federated = fl_setup(**{**SETUP, "mechanism": "rqm", "params": RQM_FL, "dp_delta": "1e-5"})
    result = fl.run(config, federated)
    write_run(tmp_path, result)
    meta = json.loads((tmp_path / "fl.meta.json").read_text())
    assert json.loads((tmp_path / "summary.json").read_text()) == [{k: v for k, v in meta.items() if k != "rdpcalc_version"}]
    for summary in (result["summary"], meta):
        parameters = summary["parameters"]
        assert parameters == {"c": 0.05, "delta": 0.05, "m": 16, "q": 0.42, "bits": "inf"} and "delta" not in summary
        assert type(parameters["delta"]) is float and type(parameters["m"]) is int
        assert summary["dp_delta"] == 1e-5 and type(summary["dp_delta"]) is float
        assert summary["mechanism"] == "rqm" and summary["rounds"] == 2 and summary["clients"] == 20
    config, federated = fl_setup(**{**SETUP, "mechanism": "corbin", "params": {"eps_p": 1, "r": "0.05"}, "n": 2})
    parameters = fl.run(config, federated)["summary"]["parameters"]
    assert parameters["view"] == "marginal" and type(parameters["d"]) is int and type(parameters["eps_p"]) is float
    config, federated = fl_setup(**{**SETUP, "clip": "0.1"})
    summary = fl.run(config, federated)["summary"]
    assert summary["parameters"] == {"clip": 0.1} and summary["epsilon"] == math.inf


def test_fl_setup_names_each_refused_parameter_before_reading_data(tmp_path):
    """Each check of :func:`configure` and :func:`load` names its parameter (keyword names, no command-line
    spellings); all of them run before the data is read (a missing image file is not reached)."""

    missing = {"images": tmp_path / "missing.gz", "labels": tmp_path / "missing.gz"}
    cases = [({"mechanism": "sgd"}, "mechanism"), ({"clip": 0}, "clip"), ({"clip": "inf"}, "clip"),
             ({"mechanism": "rqm", "params": RQM_FL, "clip": 0.05}, "clip"), ({"params": {"q": 1}}, "q"),
             ({"rounds": 0}, "rounds"), ({"rounds": 1.5}, "rounds"), ({"n": 21}, "n"),
             ({"mechanism": "corbin", "params": {"eps_p": 1, "r": 1}, "n": 3}, "n"),
             ({"lr": 0}, "lr"), ({"lr": "inf"}, "lr"), ({"batch": 0}, "batch"), ({"hidden": 10**6}, "hidden"),
             ({"seed": -1}, "seed"), ({"clients": 0}, "clients"), ({"dp_delta": 1}, "dp_delta"),
             ({"dp_delta": "x"}, "dp_delta"), ({"mechanism": "pbm", "params": {"c": "0.05", "theta": 2, "trials": 4}}, "theta")]
    for change, name in cases:
        with pytest.raises(ParameterError) as refused:
            fl_setup(**{**SETUP, **missing, **change})
        assert refused.value.parameter == name, (change, refused.value)
        assert "--" not in refused.value.message
    with pytest.raises(ParameterError, match="^n: must be an integer in \\[1, `clients` = 20\\], got 21$"):
        fl_setup(**{**SETUP, **missing, "n": 21})
    with pytest.raises(ParameterError, match="^labels: `images` and `labels` go together$"):
        fl_setup(**{**SETUP, "images": tmp_path / "missing.gz"})
    with pytest.raises(ParameterError, match="^images: cannot read"):
        fl_setup(**{**SETUP, **missing})
    with pytest.raises(ParameterError, match="^split: must be one of iid, label"):
        fl_setup(**{**SETUP, "split": "random"})
    with pytest.raises(ParameterError, match=r"^clients: must be an integer in \[1, \d+\] for this data, got 100000$"):
        fl_setup(**{**SETUP, "clients": 10**5})


def test_write_run_writes_its_files_all_or_none(tmp_path):
    from rdpcalc.backend import fl
    from rdpcalc.io import written_here

    config, federated = fl_setup(**SETUP)
    result = fl.run(config, federated)
    write_run(tmp_path / "run", result)
    assert written_here(tmp_path / "run") == set(FL_FILES)
    assert (tmp_path / "run" / "fl.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "run" / "fl.csv").read_text().splitlines() == [
        "round,test_loss,test_accuracy", *(f"{r['round']},{r['test_loss']!r},{r['test_accuracy']!r}" for r in result["rounds"])]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "fl.png").mkdir()  # a folder where the plot goes: nothing is written
    with pytest.raises(ParameterError, match="^out: must be a file path"):
        write_run(tmp_path / "other", result)
    assert [path.name for path in (tmp_path / "other").iterdir()] == ["fl.png"]


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
    with pytest.raises(ParameterError, match="^images: bad.idx is truncated"):
        data.read_idx(tmp_path / "bad.idx", "images")


# ----------------------------------------------------------------------------- reliability: Monte Carlo
RQM_PAIR = {"c": "1.5", "delta": "1.5", "m": 16, "q": "0.42"}


def test_an_infinite_plug_in_divergence_is_refused_with_the_draws_that_suffice():
    """1000 draws miss an output at x′ that x produces (the plug-in is +∞; the bootstrap interval
    was [nan, nan]): refused on `samples`, and the suggested number of draws gives finite values."""
    mech = rdpcalc.make_mechanism("rqm", **RQM_PAIR)
    with pytest.raises(ParameterError, match=r"^samples: too few draws .* about (\d+) draws suffice") as refused:
        montecarlo.divergence_estimate(mech, "1.5", "-1.5", 2.0, 1000, seed=1, bootstrap=40)
    enough = int(refused.value.message.split("about ")[1].split(" ")[0])
    record = montecarlo.divergence_estimate(mech, "1.5", "-1.5", 2.0, enough, seed=1, bootstrap=50)
    values = [record["estimate"], record["interval_low"], record["interval_high"]]
    assert all(np.isfinite(values)) and record["interval_low"] <= record["estimate"] <= record["interval_high"]


def test_the_bootstrap_interval_is_order_statistics_never_nan():
    """A few infinite resamples stay in the upper tail: the ends are order statistics, not
    interpolations (numpy's linear interpolation between a finite value and +∞ gives NaN)."""
    mech = rdpcalc.make_mechanism("rqm", **RQM_PAIR)
    record = montecarlo.divergence_estimate(mech, "1.5", "-1.5", 2.0, 40_000, seed=3, bootstrap=40)
    assert np.isfinite(record["interval_high"]) and record["interval_low"] <= record["interval_high"]


def test_point_masses_a_check_without_dof_and_an_infinite_divergence_refused_on_x_prime():
    """QMGeo with p = 1 at ±W is a point mass on the end levels: the check has nothing to test
    (dof 0, p 1), and D_α between the two is +∞, nothing finite to estimate."""
    mech = rdpcalc.make_mechanism("qmgeo", R=8, p=1, w_max=1)
    record = montecarlo.check(mech, 1, 100, seed=0)
    assert (record["chi2"], record["dof"], record["p_value"], record["tv"]) == (0.0, 0, 1.0, 0.0)
    with pytest.raises(ParameterError, match="^x_prime: D_2 is"):
        montecarlo.divergence_estimate(mech, 1, -1, 2.0, 100, seed=0, bootstrap=40)


@pytest.mark.parametrize("samples", [1, 5])
def test_too_few_draws_for_the_chi_square_test_are_refused(samples):
    """1 or 5 draws pool into one group (it reported χ² 0, dof 1, p 1): refused with a number of
    draws that suffices, and that number gives a test with ≥ 1 degree of freedom."""
    mech = rdpcalc.make_mechanism("rqm", **RQM_PAIR)
    with pytest.raises(ParameterError, match=r"^samples: too few draws for the χ² test .* (\d+) draws suffice"):
        montecarlo.check(mech, "1.5", samples, seed=0)
    enough = int(montecarlo.chi_square_samples(montecarlo.exact_pmf(mech, "1.5")))
    record = montecarlo.check(mech, "1.5", enough, seed=0)
    assert record["dof"] >= 1 and 0 <= record["p_value"] <= 1 and record["tv_bound"] <= 1


def test_draws_needed_when_one_output_takes_all_but_1e_minus_304():
    """CorBin at ε_p = 700: 1 − p_max = 1e−304 is lost in float subtraction (it divided by zero:
    internal error); the count is summed from the other outputs."""
    tiny = np.array([1e-304 / 3] * 3 + [1.0])
    assert montecarlo.chi_square_samples(tiny) == "more than 1e+09"  # 5e304: beyond what --samples takes
    assert montecarlo.chi_square_samples(np.array([0.9, 0.1])) == str(math.ceil(5 * (1 + 1e-9) / 0.1))


def test_chi_square_degenerate_cases_are_finite():
    point_mass = np.array([0.0, 1.0, 0.0])
    assert montecarlo.chi_square(np.array([0.0, 7.0, 0.0]), point_mass) == (0.0, 0, 1.0)
    assert montecarlo.chi_square(np.array([1.0, 6.0, 0.0]), point_mass)[1:] == (0, 0.0)
    statistic, dof, p = montecarlo.chi_square(np.array([40.0, 60.0, 1.0]), np.array([0.5, 0.5, 0.0]))
    assert np.isfinite(statistic) and dof == 1 and p == 0.0
    assert montecarlo.tv_bound(10**6, 1) == 1.0


def test_mc_memory_is_estimated_and_refused_on_n():
    """n = 3000 clients took 7 GB (samples × n at once); now batches bound it, and the estimate
    (one batch and the sum's 48001 outputs) is refused under a 64 MiB budget before any work."""
    from rdpcalc import resources

    mech = rdpcalc.make_mechanism("pbm", c=1, theta="0.25", trials=16)
    assert montecarlo.peak_memory(mech, 10**9, 3000) == montecarlo.peak_memory(mech, 10**5, 3000) < 2**28
    with resources.budget_of(2**20 * 64), pytest.raises(ParameterError, match="^n: .* over the budget"):
        montecarlo.check(mech, 0, 100_000, seed=0, n=3000)


def test_batches_keep_the_stream_deterministic_and_report_progress():
    """Several batches: reruns identical; one batch: the draws an unbatched run makes; progress
    gets the real totals, ending at (samples, samples) and (2·samples + bootstrap, same)."""
    from rdpcalc.backend.montecarlo import BATCH_VALUES, sampled_counts

    mech = rdpcalc.make_mechanism("qmgeo", R=8, p="0.5", w_max=1)
    n, samples = 1000, 3 * (BATCH_VALUES // 1000) + 7
    calls = []
    first = montecarlo.check(mech, "0.1", samples, seed=5, n=n, progress=lambda d, t: calls.append((d, t)))
    assert first == montecarlo.check(mech, "0.1", samples, seed=5, n=n)
    assert len(calls) == 4 and calls[-1] == (samples, samples) and all(t == samples for _, t in calls)
    cells = n * (mech.support_size - 1) + 1
    counts, _ = sampled_counts(mech, 0.1, 500, n, cells, np.random.default_rng(9), lambda k: None)
    unbatched = mech.sample(np.full((500, n), 0.1), np.random.default_rng(9)).sum(axis=1)
    assert np.array_equal(counts, np.bincount(unbatched, minlength=cells))
    calls.clear()
    rqm = rdpcalc.make_mechanism("rqm", **RQM_PAIR)
    montecarlo.divergence_estimate(rqm, "0.5", "-0.5", 2.0, 8000, seed=0, bootstrap=40,
                                   progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (16040, 16040) and [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_rqm_work_array_is_bounded_for_many_levels():
    from rdpcalc.mechanisms.rqm import CHUNK_VALUES, RQM_BYTES_PER_ENTRY, rqm_chunk_rows

    assert rqm_chunk_rows(16) == 1 << 16 and rqm_chunk_rows(7) == 1 << 16
    assert rqm_chunk_rows(10**4) * 10**4 <= CHUNK_VALUES and rqm_chunk_rows(10**7) == 1
    rqm = rdpcalc.make_mechanism("rqm", c=1, delta=1, m=4096, q="0.5")
    assert rqm.sample_work_bytes() == rqm_chunk_rows(4096) * 4096 * RQM_BYTES_PER_ENTRY <= CHUNK_VALUES * RQM_BYTES_PER_ENTRY
    assert rdpcalc.make_mechanism("pbm", c=1, theta="0.25", trials=16).sample_work_bytes() == 0


# ----------------------------------------------------------------------------- reliability: IDX files
def _idx_header(*shape, dtype=0x08):
    return struct.pack(">HBB", 0, dtype, len(shape)) + struct.pack(f">{len(shape)}I", *shape)


def test_an_idx_bomb_is_refused_before_its_data_is_read(tmp_path):
    """A .gz of a few KB whose header claims 60000 × 10⁴ × 10⁴ pixels (6·10¹² bytes) is refused
    by the memory budget; one that decompresses to 20 MB under a header claiming 40 bytes is
    refused after reading 41 bytes of data (it took 8.8 GB); neither allocates more than 1 MB."""
    import tracemalloc

    from rdpcalc.backend import data

    claims_huge = tmp_path / "huge.gz"
    claims_huge.write_bytes(gzip.compress(_idx_header(60000, 10**4, 10**4) + bytes(4096)))
    _write_idx(tmp_path / "labels.idx", np.zeros(60000), gz=False)
    holds_more = tmp_path / "more.gz"
    holds_more.write_bytes(gzip.compress(_idx_header(10, 2, 2) + bytes(20 * 2**20)))
    tracemalloc.start()
    try:
        with pytest.raises(ParameterError, match="^images: 60000 images .* over the budget"):
            data.idx_dataset(claims_huge, tmp_path / "labels.idx")
        with pytest.raises(ParameterError, match=r"^images: more.gz holds more data than its header's shape \(10, 2, 2\)"):
            data.read_idx(holds_more, "images")
        assert tracemalloc.get_traced_memory()[1] < 2**20
    finally:
        tracemalloc.stop()


def test_truncated_corrupt_and_mismatched_idx_files_name_their_option(tmp_path):
    from rdpcalc.backend import data

    images = np.zeros((30, 5, 4))
    _write_idx(tmp_path / "images.gz", images, gz=True)
    whole = (tmp_path / "images.gz").read_bytes()
    (tmp_path / "cut.gz").write_bytes(whole[: len(whole) - 12])  # the stream's end and checksum missing
    (tmp_path / "junk.gz").write_bytes(b"\x1f\x8b" + bytes(range(200)))
    _write_idx(tmp_path / "labels.idx", np.zeros(30), gz=False)
    _write_idx(tmp_path / "labels29.idx", np.zeros(29), gz=False)
    (tmp_path / "short.idx").write_bytes(_idx_header(30) + bytes(29))
    (tmp_path / "int.idx").write_bytes(_idx_header(30, dtype=0x0C) + bytes(120))
    (tmp_path / "empty.idx").write_bytes(_idx_header(0, 3))
    labels = tmp_path / "labels.idx"
    cases = [(tmp_path / "cut.gz", labels, "^images: cut.gz is corrupt or truncated"),
             (tmp_path / "junk.gz", labels, "^images: junk.gz is corrupt or truncated"),
             (tmp_path / "images.gz", tmp_path / "labels29.idx", r"^labels: must hold one label per image \(30\)"),
             (tmp_path / "images.gz", tmp_path / "short.idx", "^labels: short.idx holds 29 data bytes but its header claims 30"),
             (tmp_path / "images.gz", tmp_path / "int.idx", "^labels: int.idx is not an unsigned-byte IDX file"),
             (tmp_path / "empty.idx", labels, "^images: empty.idx claims the shape"),
             (labels, labels, "^images: must hold images"),
             (tmp_path / "missing.gz", labels, "^images: cannot read .*missing.gz"),
             (tmp_path, labels, "^images: must be a regular file"),
             (tmp_path / "images.gz", tmp_path, "^labels: must be a regular file")]
    for image_path, label_path, message in cases:
        with pytest.raises(ParameterError, match=message):
            data.idx_dataset(image_path, label_path)


def test_idx_memory_is_estimated_and_refused_on_images(tmp_path):
    from rdpcalc import resources
    from rdpcalc.backend import data

    _write_idx(tmp_path / "images.gz", np.zeros((10000, 28, 28)), gz=True)
    _write_idx(tmp_path / "labels.gz", np.zeros(10000), gz=True)
    with resources.budget_of(2**20 * 64), pytest.raises(ParameterError, match="^images: .* over the budget"):
        data.idx_dataset(tmp_path / "images.gz", tmp_path / "labels.gz")
    x, y = data.idx_dataset(tmp_path / "images.gz", tmp_path / "labels.gz")
    assert x.shape == (10000, 784) and x.dtype == np.float32 and len(y) == 10000


def test_fl_command_refuses_a_bad_idx_file_in_one_line(tmp_path, capsys):
    _write_idx(tmp_path / "labels.idx", np.zeros(30), gz=False)
    (tmp_path / "images.gz").write_bytes(gzip.compress(_idx_header(30, 5, 4) + bytes(600))[:-12])
    code = main(["fl", "--images", str(tmp_path / "images.gz"), "--labels", str(tmp_path / "labels.idx")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("rdpcalc: error: --images:") and err.count("\n") == 1


# ----------------------------------------------------------------------------- reliability: FL runs
@pytest.mark.parametrize("mechanism, params", [("none", {}), ("pbm", {"c": "0.05", "theta": "0.25", "trials": 4})])
def test_a_diverged_fl_run_is_refused_on_lr_with_its_round(mechanism, params):
    """A step of 10³⁰ overflows the float32 model at the first round: the test loss is NaN, which
    reached the CSV/JSON writers (an internal error); now refused on ``lr`` naming the round."""
    from rdpcalc.backend import fl

    config = fl.RunConfig(mechanism=mechanism, params=params, rounds=3, per_round=4, lr=1e30, seed=0)
    with pytest.raises(ParameterError, match=r"^lr: training diverged at round 1 \(.* not finite\); lower `lr`"):
        fl.run(config, _digits_data())
    with pytest.raises(ParameterError, match=r"^lr: must be a number > 0, got inf"):
        fl.run(fl.RunConfig(lr=float("inf")), _digits_data())


def test_fl_progress_totals_dimension_and_memory_refusal():
    from rdpcalc import resources
    from rdpcalc.backend import fl

    calls = []
    result = fl.run(fl.RunConfig(rounds=3, per_round=4, hidden=8), _digits_data(), lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)] and result["summary"]["dimension"] == 64 * 8 + 8 + 8 * 10 + 10
    assert all(np.isfinite(r["test_loss"]) for r in result["rounds"])
    with resources.budget_of(2**20 * 64), pytest.raises(ParameterError, match="^hidden: .* over the budget"):
        fl.run(fl.RunConfig(rounds=1, per_round=20, hidden=10**4), _digits_data())


def test_suggested_draws_stay_within_what_samples_takes():
    """PBM with 1000 trials at θ = 1/4: q = 0.25¹⁰⁰⁰ is 0 in floats, so doubling the draws never
    met the target (it overflowed: internal error); the suggestion stops at --samples' limit."""
    tiny = np.array([0.5, 0.5, 0.0])
    assert montecarlo.divergence_samples(tiny, np.array([0.5, 0.5, 0.0]), 1000) == "1000"
    assert montecarlo.divergence_samples(np.array([0.5, 0.5]), np.array([1.0, 0.0]), 1000) == "more than 1e+09"
    mech = rdpcalc.make_mechanism("pbm", c=1, theta="0.25", trials=1000)
    with pytest.raises(ParameterError, match="^samples: .* draws suffice"):
        montecarlo.divergence_estimate(mech, 1, -1, 2.0, 1000, seed=0, bootstrap=40)


def test_bootstrap_interval_of_order_statistics_recomputed_from_the_seeded_stream():
    """The interval's ends are the ⌊2.5%⌋ lower and ⌈97.5%⌉ upper order statistics of B plug-in
    estimates of multinomial resamples, recomputed here from the same generator; B < 39 cannot
    give a 95% interval and is refused."""
    from rdpcalc.backend.montecarlo import sampled_counts

    mech = rdpcalc.make_mechanism("rqm", **RQM_PAIR)
    samples, bootstrap = 50_000, 60
    record = montecarlo.divergence_estimate(mech, "1.5", "-1.5", 2.0, samples, seed=4, bootstrap=bootstrap)
    rng = np.random.default_rng(4)
    cells = mech.support_size
    counts_p, _ = sampled_counts(mech, 1.5, samples, 1, cells, rng, lambda k: None)
    counts_q, _ = sampled_counts(mech, -1.5, samples, 1, cells, rng, lambda k: None)
    resampled = sorted(
        float(np.log(np.sum(a**2 / b)))
        for a, b in ((rng.multinomial(samples, counts_p / samples) / samples,
                      rng.multinomial(samples, counts_q / samples) / samples) for _ in range(bootstrap)))
    assert record["interval_low"] == pytest.approx(resampled[math.floor(0.025 * (bootstrap - 1))], rel=1e-12)
    assert record["interval_high"] == pytest.approx(resampled[math.ceil(0.975 * (bootstrap - 1))], rel=1e-12)
    with pytest.raises(ParameterError, match="^bootstrap: "):
        montecarlo.divergence_estimate(mech, "1.5", "-1.5", 2.0, samples, seed=4, bootstrap=38)


def test_fl_epsilon_is_the_accountants_for_the_observed_messages():
    """The run's ε, recomputed from the accountant: RQM's SecAgg sum seen by the server over the
    model's coordinates and rounds; CorBin-FL's pairs, whose joint law the server receives (+∞ with
    shared bits; d = 0 makes the pair independent, one uplink's ε per client's message)."""
    import dataclasses

    from rdpcalc.backend import fl

    small = {**SETUP, "hidden": 1}
    config, federated = fl_setup(**{**small, "mechanism": "rqm", "params": RQM_FL})
    summary = fl.run(config, federated)["summary"]
    mech = rdpcalc.make_mechanism("rqm", **RQM_FL)
    again = rdpcalc.account(mech, n=4, clients=20, rounds=2, dim=summary["dimension"], observer="server")
    assert summary["epsilon"] == again["epsilon"] and summary["epsilon_rdp"] == again["epsilon_rdp"]
    for d, finite in ((5, False), (0, True)):
        params = {"eps_p": 1, "r": "0.05", "d": d}
        config, federated = fl_setup(**{**small, "mechanism": "corbin", "params": params, "n": 2})
        summary = fl.run(config, federated)["summary"]
        uplink = rdpcalc.make_mechanism("corbin", **params)
        run = {"n": 2, "clients": 20, "rounds": 2, "dim": summary["dimension"], "observer": "local"}
        assert summary["epsilon_uplink"] == rdpcalc.account(uplink, **run)["epsilon"] < math.inf
        joint = dataclasses.replace(uplink, view="joint")
        if finite:  # the pair is two independent uplinks: the joint law's account
            assert summary["epsilon"] == rdpcalc.account(joint, **run)["epsilon"] < math.inf
        else:  # shared bits: an output of the pair at x = r is impossible at x = −r
            p, q = (rdpcalc.pmf(joint, x=x) for x in ("0.05", "-0.05"))
            assert any(a["probability"] > 0 == b["probability"] for a, b in zip(p, q))
            assert summary["epsilon"] == math.inf
