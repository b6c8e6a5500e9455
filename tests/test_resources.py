"""Memory estimates against measurements, refusals beyond the budget, progress totals."""

from __future__ import annotations

import tracemalloc

import pytest

import rdpcalc
from rdpcalc import resources, runs
from rdpcalc.cli import main


def _rqm(m: int = 16):
    return rdpcalc.make_mechanism("rqm", c=1, delta=1, m=m, q="0.4")


def _over_the_search(call):
    """``call()`` with a budget of 100 MiB: the search at n = 200 (about 240 MiB) does not fit,
    the staircase does (rdpcalc.worstcase.staircase)."""
    with resources.budget_of(100 * 2**20):
        return call()


def _measured_and_estimated(monkeypatch, call) -> tuple[int, float]:
    """The peak traced memory of ``call()`` and the first estimate resources.require_costs was given
    (after one untraced call: numba compiles the certificate's kernels once per process, or
    loads them from its cache, which is not the computation's memory)."""
    call()
    estimates = []
    original = resources.require_costs

    def spy(costs):
        estimates.append(sum(cost.bytes for cost in costs))
        original(costs)

    monkeypatch.setattr(resources, "require_costs", spy)
    tracemalloc.start()
    try:
        call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, estimates[0]


@pytest.mark.parametrize("call", [
    lambda: rdpcalc.divergence(_rqm(), n=20_000, alphas=[2], choose=rdpcalc.NeighbourOptions(others_plus=0)),
    lambda: rdpcalc.divergence(_rqm(), alphas=[2], choose=rdpcalc.NeighbourOptions(grid=201)),
    lambda: rdpcalc.divergence(_rqm(), n=300, alphas=[2, 10], choose=rdpcalc.NeighbourOptions(neighbours="pm-c")),
    lambda: rdpcalc.divergence(_rqm(), n=60, alphas=[2, "inf"]),
    lambda: rdpcalc.divergence(_rqm(), n=120, engine="exact", alphas=[2], choose=rdpcalc.NeighbourOptions(others_plus=3)),
    lambda: _over_the_search(lambda: rdpcalc.divergence(_rqm(), n=200, alphas=[2, "inf"])),
], ids=["explicit-k", "grid", "pm-c", "worst-search", "exact", "staircase"])
def test_estimate_bounds_the_measured_peak(monkeypatch, call):
    measured, estimated = _measured_and_estimated(monkeypatch, call)
    assert measured <= estimated <= 20 * max(measured, 2**20)


@pytest.mark.parametrize("argv, option", [
    (["divergence", "pbm", "--c", "1", "--theta", "0.25", "--trials", "4096", "--n", "100000", "--others-plus", "0"], "--n"),
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.4", "--grid", "2001"], "--grid"),
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.4", "--alphas", "1.01:1000:100000"],
     "--alphas"),
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4096", "--q", "0.4"], "--m"),
    (["divergence", "qmgeo", "--R", "4096", "--p", "0.5", "--w-max", "1"], "--R"),
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.4", "--n", "2000",
      "--neighbours", "pm-c"], "--n"),
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.4", "--n", "1000"], "--n"),
    (["divergence", "pbm", "--c", "1", "--theta", "0.25", "--trials", "64", "--n", "200"], "--n"),
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.4", "--n", "1300", "--others-plus", "3",
      "--engine", "exact", "--dps", "1000"], "--n"),
    (["bound", "rqm", "--c", "1", "--extension", "1", "--m", "4096", "--q", "0.4"], "--m"),
    (["account", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.4", "--n", "1000", "--rounds", "10"],
     "--n"),
])
def test_beyond_the_budget_exits_2_naming_the_option(capsys, monkeypatch, argv, option):
    monkeypatch.setenv(resources.ENVIRONMENT_VARIABLE, "64M")  # (main resets a budget set in Python)
    code = main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(lines) == 1 and option in lines[0] and "--max-memory" in lines[0], lines


def _totals(call) -> list[tuple[int, int]]:
    reports = []
    call(lambda done, total: reports.append((done, total)))
    return reports


def _check_real_total(reports) -> None:
    totals = {total for _, total in reports}
    assert len(totals) == 1 and None not in totals
    dones = [done for done, _ in reports]
    assert dones == sorted(dones) and dones[-1] == reports[0][1]


def test_one_client_grid_reports_each_group():
    reports = _totals(lambda p: rdpcalc.divergence(_rqm(), alphas=[2], progress=p, choose=rdpcalc.NeighbourOptions(grid=41)))
    _check_real_total(reports)
    assert len(reports) == 41 + 41  # each input's pmf, then each group of pairs sharing their x


def test_worst_case_search_reports_stages_with_one_total():
    reports = _totals(lambda p: rdpcalc.divergence(_rqm(), n=8, alphas=[2], progress=p, choose=rdpcalc.NeighbourOptions(budget=10)))
    _check_real_total(reports)
    assert len(reports) > 5


@pytest.mark.parametrize("call", [
    lambda p: rdpcalc.account_run(_rqm(), run=rdpcalc.RunOptions(n=3, rounds=5), progress=p),
    lambda p: rdpcalc.bound(_rqm(), alphas=[2], progress=p),
])
def test_account_and_bound_report_a_real_total(call):
    _check_real_total(_totals(call))


def test_calibrate_reports_a_fixed_total_reached_at_the_end():
    reports = _totals(lambda p: rdpcalc.calibrate("gaussian", solve="sigma", dp_epsilon=1.0, progress=p, dp_delta=1e-5,
                                                  rounds=10, method="rdp"))
    assert {total for _, total in reports} == {runs.CALIBRATE_EVALUATIONS + 2}
    assert reports[-1][0] == reports[-1][1]


def test_the_log_pmf_cache_stays_within_its_bytes(monkeypatch):
    """log_pmf keeps at most its byte limit of arrays, drops the least recently used first, and
    every value it returns is the pmf computed afresh."""
    from fractions import Fraction

    import numpy as np

    from rdpcalc.mechanisms import base

    small = base._ByteBoundedCache(3 * 16 * 8)  # three pmfs of RQM's 16 outputs
    monkeypatch.setattr(base, "_LOG_PMFS", small)
    mechanism = _rqm()
    inputs = [Fraction(i, 10) for i in range(-10, 11)]
    for x in inputs + inputs[:3]:
        value = base.log_pmf(mechanism, x)
        assert small.bytes <= small.limit
        assert np.array_equal(value, base._log_pmf_computed(mechanism, x))
    assert list(small._entries) == [(mechanism, x) for x in inputs[:3]]  # the most recent three
    huge = base._ByteBoundedCache(8)
    assert huge.get("key", lambda: np.zeros(2)).nbytes == 16 and huge.bytes == 0  # larger than the limit: not kept
