"""``rdpcalc compare``: the printed MSE of the decoded sum and the calibrated ε, each computed a
second way (exact moments, a direct convolution, the ``account`` path)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc import ParameterError, RunOptions
from rdpcalc.compare import MSE_INPUTS, compare, decoded_sum_error, designs


@pytest.mark.parametrize("name, params, n", [
    ("rqm", dict(c=1, delta=1, m=6, q="0.42"), 7),
    ("binomial", dict(c=1, gamma="0.25", trials=12), 9),
    ("pbm", dict(c=1, theta="0.3", trials=5), 6),
])
def test_mse_without_wrap_is_n_times_the_clients_exact_mse(name, params, n):
    """Unbiased clients, independent, no wrap-around: E[(Σ̂ − nx)²] = n·MSE₁(x), MSE₁ from the exact
    moments (mpmath); the largest over the inputs of MSE_INPUTS."""
    mech = rdpcalc.make_mechanism(name, **params)
    with mpmath.workdps(30):
        expected = max(n * float(mech.moments(share * mech.bound)["mse"]) for share in MSE_INPUTS)
    mse, _, wrap = decoded_sum_error(mech, n)
    assert wrap == 0.0
    assert mse == pytest.approx(expected, rel=1e-9)


def test_mse_with_wrap_matches_a_direct_convolution():
    """A discrete Gaussian sum that wraps modulo 2^B: the sum's pmf by repeated np.convolve (no FFT),
    each sum read as the residue nearest the centre, decoded and squared."""
    mech = rdpcalc.make_mechanism("ddg", c=1, gamma="0.25", sigma="0.5", cover=1, bits=5)
    n = 6
    values = [float(v) for v in mech.output_values()]
    step, offset = values[1] - values[0], values[0]
    centre = n * (-mech.lowest_output)  # the index of the integer sum 0 (symmetric noise)
    worst = 0.0
    for share in MSE_INPUTS:
        x = share * mech.bound
        single = np.array([float(p) for p in mech.pmf(x)])
        total = np.array([1.0])
        for _ in range(n):
            total = np.convolve(total, single)
        index = np.arange(len(total))
        read = centre + (index - centre + 16) % 32 - 16
        worst = max(worst, float(np.sum(total * (n * offset + step * read - n * float(x)) ** 2) / total.sum()))
    mse, _, wrap = decoded_sum_error(mech, n)
    assert wrap > 1e-6  # the case wraps
    assert mse == pytest.approx(worst, rel=1e-9)


@pytest.mark.parametrize("name", ["ddg", "binomial", "qgauss"])
def test_compare_meets_the_target_and_agrees_with_account(name):
    """The calibrated mechanism's ε is at most the target, equals what ``account`` gives for the same
    mechanism without its wrap-around, and the solver stopped close to the target (continuous
    parameters: one step less private misses it)."""
    n, bits, target = 10, 8, 2.0
    record = compare(RunOptions(n=n), bits=bits, dp_epsilon=target, mechanisms=[name])[0]
    assert record["feasible"]
    assert record["epsilon"] <= target
    mech = rdpcalc.make_mechanism(name, **{k: v for k, v in record["parameters"].items() if k != "bits"})
    assert rdpcalc.account(mech, n=n)["epsilon"] == pytest.approx(record["epsilon"], rel=1e-9)
    design = designs()[name]
    if not design.integer:
        step = 0.99 if design.private_high else 1.01
        less_private = design.build(record["value"] * step, n, bits, F(1))
        assert rdpcalc.account(replace(less_private, bits=None), n=n)["epsilon"] > target * 0.98


def test_a_refusal_names_api_keywords_and_the_command_line_its_options(capsys):
    """The record (the API's) names the keywords in backticks, as every error message; the
    command line's table note spells them as its options."""
    from rdpcalc import resources
    from rdpcalc.cli import main

    with resources.budget_of(2**20):
        (record,) = compare(RunOptions(n=40), bits=8, dp_epsilon=1, mechanisms=("pbm",))
    assert not record["feasible"] and record["reason"].startswith("refused: `n`: ")
    assert "`max_memory`" in record["reason"]
    code = main(["compare", "--n", "40", "--bits", "8", "--dp-epsilon", "1", "--mechanisms", "pbm", "--max-memory",
                 "1MiB"])
    out = capsys.readouterr().out
    assert code == 0 and "pbm: refused: --n: " in out and "--max-memory" in out
    assert "`" not in out and "max_memory" not in out


def test_participation_and_relation_reach_the_accounting():
    """compare takes account's run options: with --participation the calibrated mechanism's ε,
    recomputed by account with the same run, is the ε reached (and below the every-round ε);
    a bad participation or relation is refused before any work, naming it."""
    (record,) = compare(RunOptions(n=10, rounds=20, clients=100, participation=3), bits=8, dp_epsilon=2,
                          mechanisms=("pbm",))
    assert record["feasible"] and record["participation"] == 3 and record["relation"] == "replace-one"
    mech = rdpcalc.make_mechanism("pbm", **{k: v for k, v in record["parameters"].items() if k != "bits"})
    again = rdpcalc.account(mech, n=10, clients=100, rounds=20, participation=3)
    assert again["epsilon"] == pytest.approx(record["epsilon"], rel=1e-9)
    assert rdpcalc.account(mech, n=10, clients=100, rounds=20)["epsilon"] > record["epsilon"]
    with pytest.raises(ParameterError, match="^participation: "):
        compare(RunOptions(n=10, rounds=20, clients=100, participation=30), bits=8, dp_epsilon=2)
    with pytest.raises(ParameterError, match="^relation: "):
        compare(RunOptions(n=10, relation="swap"), bits=8, dp_epsilon=2)


def test_workers_give_the_same_records_with_their_share_of_the_budget():
    """Mechanisms calibrated side by side in worker processes give the records of one process,
    in the order asked, with progress reaching its total; each worker gets its share of the
    memory budget (a budget that fits PBM alone does not fit half of it); a bad count of
    workers is refused naming it."""
    from rdpcalc import resources

    run, names = RunOptions(n=10), ["ddg", "pbm", "binomial"]
    alone = compare(run, bits=8, dp_epsilon=2.0, mechanisms=names)
    ticks = []
    together = compare(run, bits=8, dp_epsilon=2.0, mechanisms=names, workers=2,
                       progress=lambda done, total: ticks.append((done, total)))
    assert together == alone and [record["mechanism"] for record in together] == names
    assert ticks[-1][0] == ticks[-1][1] and [done for done, _ in ticks] == sorted(done for done, _ in ticks)
    with resources.budget_of(2**20):  # PBM at n = 40 is refused within 1 MiB, so within half of it too
        (solo,) = compare(RunOptions(n=40), bits=8, dp_epsilon=1, mechanisms=["pbm"], workers=2)
        split = compare(RunOptions(n=40), bits=8, dp_epsilon=1, mechanisms=["pbm", "ddg"], workers=2)
    assert not solo["feasible"] and split[0]["reason"] == solo["reason"].replace("1 MiB", "512 KiB")
    with pytest.raises(ParameterError, match=r"^workers: must be an integer in \[1, "):
        compare(run, bits=8, dp_epsilon=2.0, mechanisms=names, workers=0)


@pytest.mark.parametrize("name, params, run, skipped", [
    ("pbm", dict(c=1, theta="0.3", trials=5), RunOptions(n=6, rounds=20, dim=3, clients=50, participation=4), True),
    ("binomial", dict(c=1, gamma="0.25", trials=12), RunOptions(n=5), True),
    ("pbm", dict(c=1, theta="0.3", trials=5), RunOptions(n=6), False),
    ("rqm", dict(c=1, delta=1, m=6, q="0.42"), RunOptions(n=5, rounds=200), False),
    ("qgauss", dict(clip=1, sigma="0.7", k=4), RunOptions(n=4, rounds=10), False),
])
def test_run_epsilon_is_the_records_without_a_renyi_curve_that_cannot_give_it(monkeypatch, name, params, run,
                                                                               skipped):
    """runs.run_epsilon gives the (ε, method) of account_run's record, whichever route gives it;
    where the Rényi route's lower bound already exceeds the PLD's ε (PBM over 20 rounds, the
    binomial's +∞), the certified Rényi curve is never computed; where the Rényi route wins
    (or the lower bound does not decide), it is; either way the run's PLD is composed once."""
    from rdpcalc import accountant, runs

    mech = rdpcalc.make_mechanism(name, **params)
    record = runs.account_run(mech, run=run).record(dp_delta=1e-5)
    expected = (record["epsilon"], record["epsilon_method"])
    computed, composed = [], []
    curve, compose = accountant.per_round_curve, accountant.Accountant.compose
    monkeypatch.setattr(accountant, "per_round_curve", lambda *args, **kw: computed.append(1) or curve(*args, **kw))
    monkeypatch.setattr(accountant.Accountant, "compose",
                        lambda self, *args: composed.append(self.method) or compose(self, *args))
    assert runs.run_epsilon(mech, dp_delta=1e-5, run=run) == expected
    assert (not computed) == skipped
    assert composed.count("pld") == 1  # the run's PLD composed once, whether the Rényi route runs or not
    if skipped:
        assert record["epsilon_method"] == "pld" and record["epsilon_rdp"] > record["epsilon_pld"]
