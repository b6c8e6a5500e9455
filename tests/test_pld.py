"""PLD accounting: the dominating pair construction, the accountant API, cross-checks against
dp-accounting and prv-accountant, and validity (never below an optimistic PLD of a real pair)."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import rdpcalc
from rdpcalc import queries
from rdpcalc.cli import main
from rdpcalc.errors import ParameterError
from rdpcalc.privacy import pld
from rdpcalc.worstcase import dominating


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """Σ (p − e^ε q)_+, directly."""
    return float(np.sum(np.clip(p - math.exp(eps) * q, 0, None)))


def _random_pair(rng, size: int = 30):
    p, q = rng.random(size) ** 3, rng.random(size) ** 3
    p[rng.integers(size)] = 0
    q[rng.integers(size)] = 0
    return p / p.sum(), q / q.sum()


def _logs(*arrays):
    with np.errstate(divide="ignore"):
        return [np.log(a) for a in arrays]


def test_rounded_hockey_stick_is_above_the_exact_one_and_matches_its_atoms():
    rng = np.random.default_rng(7)
    for _ in range(6):
        p, q = _random_pair(rng)
        grid_pld = pld.rounded(*_logs(p, q), 1e-2)
        grid = np.arange(grid_pld.lower - 40, grid_pld.upper + 5)
        curve = pld.hockey_stick(grid_pld, grid[0], grid[-1])
        for i, eps in zip(grid, grid * 1e-2):
            from_atoms = grid_pld.infinity_mass + float(np.sum(grid_pld.masses * np.clip(
                1 - math.exp(eps) * np.exp(-grid_pld.indices * 1e-2), 0, None)))
            assert curve[i - grid[0]] == pytest.approx(from_atoms, rel=1e-12, abs=1e-300)
            assert curve[i - grid[0]] >= _hockey(p, q, eps) * (1 - 1e-12)


def test_the_compiled_envelope_is_the_maximum_of_the_numpy_curves_to_the_bit():
    """envelope's compiled loop against hockey_stick (numpy), member by member: the same floats
    and the same (first) member attaining them, members without finite atoms included."""
    rng = np.random.default_rng(5)
    members = []
    for index in range(12):
        p, q = _random_pair(rng, size=int(rng.integers(2, 60)))
        members.append((index, pld.rounded(*_logs(p, q), 1e-3)))
    members.append(("all at +∞", pld.GridPld(np.zeros(0, dtype=np.int64), np.zeros(0), 0.25, 1e-3)))
    members.append(("a copy", members[3][1]))  # ties go to the first
    env = pld.envelope(members, 1e-3)
    curves = np.array([pld.hockey_stick(member, env.lower, env.upper) for _, member in members])
    assert np.array_equal(env.values, curves.max(axis=0))
    assert np.array_equal(env.attained, curves.argmax(axis=0))


def test_the_compiled_hull_is_the_python_pass():
    rng = np.random.default_rng(9)
    x = np.cumsum(rng.random(5000))
    y = np.exp(-x / 500) + 1e-3 * rng.random(5000)
    for tolerance in (0.0, 1e-6, 1e-2):
        assert np.array_equal(pld.lower_hull(x, y, tolerance), pld._hull(x, y, 1.0 + tolerance))


def test_dominating_pair_of_a_family_is_above_every_member_at_every_epsilon():
    """The envelope + hull + connect-the-dots construction, checked against the members' exact
    hockey-stick divergences at random ε (negative ones included), both orders."""
    rng = np.random.default_rng(11)
    pairs = [_random_pair(rng) for _ in range(5)]
    members = []
    for index, (p, q) in enumerate(pairs):
        lp, lq = _logs(p, q)
        members += [((index, "pq"), pld.rounded(lp, lq, 1e-3)), ((index, "qp"), pld.rounded(lq, lp, 1e-3))]
    dominating_pair = pld.dominating_pld(pld.envelope(members, 1e-3))
    for eps in rng.uniform(-4, 6, 200):
        bound = dominating_pair.get_delta_for_epsilon(eps)
        exact = max(max(_hockey(p, q, eps), _hockey(q, p, eps)) for p, q in pairs)
        assert bound >= exact * (1 - 1e-9)


def _is_lower_hull(x, y, hull, slack=1e-12) -> bool:
    """The defining properties of the lower convex hull's vertices: the end points are among
    them, the chain is convex (slopes increasing) and no point lies below it."""
    slopes = np.diff(y[hull]) / np.diff(x[hull])
    chain = np.interp(x, x[hull], y[hull])
    return (hull[0] == 0 and hull[-1] == len(x) - 1 and bool(np.all(np.diff(slopes) > 0))
            and bool(np.all(y >= chain - slack * np.abs(y) - 1e-15)))


def test_lower_hull_has_the_defining_properties():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 50, 3000))
    y = np.maximum(1 - x / 40, 0) + np.exp(-x) + rng.uniform(0, 1e-3, len(x))
    hull = pld.lower_hull(x, y)
    assert _is_lower_hull(x, y, hull) and len(hull) < len(x) // 10
    # every point dropped lies on or above the chain (the chain is no higher than any point)
    assert not _is_lower_hull(x, y, np.delete(hull, len(hull) // 2))  # a vertex less: a point below
    thinned = hull[pld.lower_hull(x[hull], y[hull], 1e-6)]
    above = np.interp(x, x[thinned], y[thinned])
    assert len(thinned) <= len(hull) and np.all(above >= np.interp(x, x[hull], y[hull]) * (1 - 1e-12))


def test_lower_hull_of_a_convex_curve_keeps_every_point_and_drops_collinear_ones():
    x = np.arange(1001.0)  # exact arithmetic: collinear points are exactly on their chords
    assert np.array_equal(pld.lower_hull(x, x**2), np.arange(1001))
    assert np.array_equal(pld.lower_hull(x, 1000 - 3 * x), [0, 1000])


def test_smaller_of_two_bounds_takes_the_minimum_and_extends_each():
    rng = np.random.default_rng(5)
    p, q = _random_pair(rng)
    lp, lq = _logs(p, q)
    wide = pld.envelope([("a", pld.rounded(lp, lq, 1e-2))], 1e-2)
    narrow = pld.envelope([("b", pld.rounded(lp, lq, 1e-2))], 1e-2)
    both = pld.smaller(wide, narrow)
    assert np.array_equal(both.values, wide.values)
    flat = pld.Envelope(wide.lower + 10, np.full(5, 0.5), np.zeros(5, dtype=np.int64), ["c"], 1e-2)
    merged = pld.smaller(wide, flat)
    assert np.all(merged.values <= pld._extend(wide, merged.lower, merged.upper))
    # below its grid the flat bound is the chord from (0, 1), above it its last value
    assert merged.values[-1] == min(0.5, wide.values[-1])


def test_self_convolve_range_is_dp_accountings_truncation_range():
    from dp_accounting.pld import common

    rng = np.random.default_rng(11)
    shapes = [rng.random(7), rng.random(3000) ** 8, np.exp(-0.5 * np.linspace(-9, 9, 20001) ** 2), np.ones(1)]
    residue = rng.random(500)
    residue[::7] = -1e-18  # an FFT's negative rounding residue
    for probs in [*shapes, residue]:
        probs = probs / probs.sum()
        for count in (1, 2, 16, 977, 2000, 10**5):
            expected = common.compute_self_convolve_bounds(probs, count, pld.TAIL_MASS_TRUNCATION)
            assert pld.self_convolve_range(probs, count) == expected, (len(probs), count)


@pytest.mark.parametrize("sigma, rate, rounds", [(1.1, 0.01, 1000), (2.0, 1.0, 100), (0.8, 0.05, 200)])
def test_gaussian_event_against_dp_accounting_pld_and_rdp(sigma, rate, rounds):
    import dp_accounting

    event = dp_accounting.GaussianDpEvent(sigma)
    if rate < 1:
        event = dp_accounting.PoissonSampledDpEvent(rate, event)
    for method, theirs in (("pld", dp_accounting.pld.PLDAccountant()), ("rdp", dp_accounting.rdp.RdpAccountant())):
        theirs.compose(dp_accounting.SelfComposedDpEvent(event, rounds))
        ours = rdpcalc.Accountant(method).compose(rdpcalc.GaussianEvent(sigma, sample_rate=rate), rounds)
        assert ours.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon(1e-5), rel=0.01)
        if method == "pld":  # (their RDP δ uses another conversion)
            assert ours.get_delta(1.0) == pytest.approx(theirs.get_delta(1.0), rel=0.01)


def test_laplace_event_against_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as their_pld

    ours = rdpcalc.Accountant("pld").compose(rdpcalc.LaplaceEvent(scale=2.0), 50)
    theirs = their_pld.from_laplace_mechanism(2.0, value_discretization_interval=1e-4).self_compose(50)
    assert ours.get_epsilon(1e-6) == pytest.approx(theirs.get_epsilon_for_delta(1e-6), rel=0.01)


def test_pair_event_against_prv_accountant_randomized_response():
    """Randomized response ε₀ = 0.5 composed 300 times: prv-accountant's bracket for its own
    PureDPMechanism, and our PLD of the two output pmfs."""
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PureDPMechanism

    eps0 = 0.5
    p = [math.exp(eps0) / (1 + math.exp(eps0)), 1 / (1 + math.exp(eps0))]
    ours = rdpcalc.Accountant("pld").compose(rdpcalc.PairEvent(p, p[::-1]), 300).get_epsilon(1e-6)
    accountant = PRVAccountant(prvs=[PureDPMechanism(eps0)], max_self_compositions=[300], eps_error=0.01, delta_error=1e-9)
    low, estimate, high = accountant.compute_epsilon(delta=1e-6, num_self_compositions=[300])
    assert low - 1e-9 <= ours <= high + 0.05 and ours == pytest.approx(estimate, rel=0.01)


def test_rqm_pair_against_prv_accountant():
    """A real discrete mechanism: RQM's worst single-client pair (x = −1.5, x′ = 1.5), its privacy
    loss given to prv-accountant as a custom privacy random variable (the step cdf of the loss
    under P), composed 100 times, against our PLD of the same pmfs."""
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PrivacyRandomVariable

    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    p = np.array([r["probability"] for r in rdpcalc.pmf(mech, x="-1.5")])
    q = np.array([r["probability"] for r in rdpcalc.pmf(mech, x="1.5")])

    class PairLoss(PrivacyRandomVariable):
        def __init__(self, first, second):
            self.loss, self.mass, self.other = np.log(first / second), first, second

        def rdp(self, alpha):
            return float(np.log(np.sum(self.mass**alpha * self.other ** (1 - alpha))) / (alpha - 1))

        def cdf(self, t):
            return np.sum(self.mass[None, :] * (self.loss[None, :] <= np.atleast_1d(t)[:, None]), axis=1).reshape(
                np.shape(t))

    ours = rdpcalc.Accountant("pld").compose(rdpcalc.PairEvent(p, q), 100).get_epsilon(1e-5)
    highs, lows = [], []
    for first, second in ((p, q), (q, p)):
        accountant = PRVAccountant(prvs=[PairLoss(first, second)], max_self_compositions=[100], eps_error=0.02,
                                   delta_error=1e-10)
        low, _, high = accountant.compute_epsilon(delta=1e-5, num_self_compositions=[100])
        lows.append(low)
        highs.append(high)
    assert max(lows) - 1e-9 <= ours <= max(highs) + 0.02


def test_accountant_api_composes_and_inverts():
    acct = rdpcalc.Accountant()
    assert acct.get_epsilon(1e-5) == 0.0 and acct.get_delta(1.0) == 0.0
    chained = acct.compose(rdpcalc.GaussianEvent(3.0), 10).compose(rdpcalc.GaussianEvent(3.0), 10)
    assert chained is acct and acct.ledger == [("Gaussian σ = 3, Δ = 1", 10)] * 2
    once = rdpcalc.Accountant().compose(rdpcalc.GaussianEvent(3.0), 20)
    assert acct.get_epsilon(1e-5) == pytest.approx(once.get_epsilon(1e-5), rel=1e-6)
    eps = once.get_epsilon(1e-6)
    assert once.get_delta(eps) <= 1e-6 * (1 + 1e-6) and once.get_delta(eps * 0.9) > 1e-6
    rdp = rdpcalc.Accountant("rdp").compose(rdpcalc.GaussianEvent(3.0), 20)
    assert rdp.get_epsilon(1e-6) >= eps
    for call, name in ((lambda: rdpcalc.Accountant("prv"), "method"), (lambda: acct.compose(rdpcalc.GaussianEvent(1), 0),
                                                                       "count"),
                       (lambda: acct.get_epsilon(2.0), "delta"), (lambda: rdpcalc.GaussianEvent(-1), "sigma"),
                       (lambda: rdpcalc.PairEvent([0.5, 0.5], [1.0]), "p")):
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.parameter == name


def test_mechanism_event_is_the_account_commands_number():
    mech = rdpcalc.make_mechanism("pbm", c="1.5", theta="0.25", trials=16)
    event = rdpcalc.MechanismEvent(mech, n=8, clients=100, dim=3)
    ours = rdpcalc.Accountant().compose(event, 50).get_epsilon(1e-5)
    assert ours == rdpcalc.account(mech, n=8, clients=100, rounds=50, dim=3)["epsilon"]


def test_server_observer_equals_the_composition_without_sampling():
    """The server knows the sample: its PLD ε is the per-round dominating pair composed over the
    rounds, whatever the sampling rate; the reported ε is the smaller of PLD and RDP."""
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    sampled = rdpcalc.account(mech, n=10, clients=1000, rounds=30)
    unsampled = rdpcalc.Accountant().compose(rdpcalc.MechanismEvent(mech, n=10), 30).get_epsilon(1e-5)
    assert sampled["method"] == "pld" and not sampled["amplified"]
    assert sampled["epsilon_pld"] == unsampled
    assert sampled["epsilon"] == min(sampled["epsilon_pld"], sampled["epsilon_rdp"])
    assert sampled["epsilon_method"] == ("pld" if sampled["epsilon_pld"] <= sampled["epsilon_rdp"] else "rdp")


def _optimistic_pair_epsilon(mech, x, x_prime, others: dict, rounds: int, delta: float) -> float:
    """dp-accounting's PLD of one explicit configuration, optimistic rounding, both orders: a
    lower bound on any valid ε."""
    from dp_accounting.pld import privacy_loss_distribution as their_pld

    from rdpcalc.numerics import make_engine
    from rdpcalc.worstcase import secagg

    engine = make_engine("fast")
    points = list(mech.breakpoints())
    clients = [engine.client(mech, point) for point in points]
    rest = secagg.multiset_sum(engine, clients, [others.get(point, 0) for point in points])
    p, q = (engine.add_client(engine.client(mech, value), rest)[0] for value in (x, x_prime))
    result = 0.0
    for first, second in ((p, q), (q, p)):
        distribution = their_pld.from_two_probability_mass_functions(
            {i: v for i, v in enumerate(first) if np.isfinite(v)}, {i: v for i, v in enumerate(second) if np.isfinite(v)},
            pessimistic_estimate=False, value_discretization_interval=1e-4)
        result = max(result, distribution.self_compose(rounds).get_epsilon_for_delta(delta))
    return result


@pytest.mark.parametrize("n, rounds", [(1, 50), (3, 200), pytest.param(40, 24, marks=pytest.mark.slow)])
def test_pld_epsilon_never_below_an_explicit_pairs_optimistic_pld(n, rounds):
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    c, level = Fraction(3, 2), Fraction(7, 5)
    record = rdpcalc.account(mech, n=n, rounds=rounds)
    found = rdpcalc.account(mech, n=n, rounds=rounds, per_round="found")
    lower = max(_optimistic_pair_epsilon(mech, c, -c, {level: n - 1}, rounds, 1e-5),
                _optimistic_pair_epsilon(mech, -c, c, {-c: n - 1}, rounds, 1e-5))
    assert record["method"] == "pld" and record["epsilon"] >= found["epsilon"] * (1 - 1e-9) >= lower * (1 - 1e-9)


def test_found_per_round_pld_is_labelled_not_a_guarantee():
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    found = dominating.per_round_pld(mech, 12, "found")
    certified = dominating.per_round_pld(mech, 12, "certified")
    assert not found.certified and "NOT a guarantee" in found.family and certified.certified
    for eps in (0.0, 0.5, 1.0, 2.0):
        assert found.pld.get_delta_for_epsilon(eps) <= certified.pld.get_delta_for_epsilon(eps) * (1 + 1e-9)


def test_release_observer_defaults_to_rdp_and_refuses_pld(capsys):
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    record = rdpcalc.account(mech, n=10, clients=100, rounds=5, observer="release")
    assert record["method"] == "rdp" and record["epsilon_pld"] is None and record["epsilon"] == record["epsilon_rdp"]
    with pytest.raises(ParameterError, match="^method: "):
        rdpcalc.account(mech, n=10, clients=100, rounds=5, observer="release", method="pld")
    code = main(["account", "rqm", "--c", "1.5", "--extension", "1.5", "--m", "16", "--q", "0.42", "--n", "10",
                 "--clients", "100", "--observer", "release", "--method", "pld"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--method" in err


def test_cli_several_deltas_plot_and_csv(tmp_path, capsys):
    plot, table = tmp_path / "run.png", tmp_path / "run.csv"
    args = ["account", "pbm", "--c", "1", "--theta", "0.25", "--trials", "4", "--n", "3", "--rounds", "20",
            "--dp-delta", "1e-5", "--dp-delta", "1e-8"]
    curves = tmp_path / "curves.csv"
    assert main([*args, "--json", "--plot", str(plot), "--csv", str(table), "--curves", str(curves)]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["dp_delta"] for r in records] == [1e-5, 1e-8] and records[1]["epsilon"] > records[0]["epsilon"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import csv

    results = list(csv.DictReader(table.open()))  # the results alone, one row per δ
    assert [float(row["dp_delta"]) for row in results] == [1e-5, 1e-8] and "kind" not in results[0]
    assert float(results[0]["epsilon"]) == pytest.approx(records[0]["epsilon"], rel=1e-11)
    rows = list(csv.DictReader(curves.open()))
    kinds = {row["kind"] for row in rows}
    assert kinds == {"rdp-curve", "epsilon-delta", "epsilon-rounds"}
    by_delta = {float(row["dp_delta"]): float(row["epsilon_pld"]) for row in rows if row["kind"] == "epsilon-delta"}
    assert by_delta[1e-5] == pytest.approx(records[0]["epsilon_pld"], rel=1e-12)
    last = [row for row in rows if row["kind"] == "epsilon-rounds"][-1]
    assert int(last["rounds"]) == 20 and float(last["epsilon_pld"]) == pytest.approx(records[0]["epsilon"], rel=1e-12)
    by_rounds = [row for row in rows if row["kind"] == "epsilon-rounds"]
    middle = by_rounds[len(by_rounds) // 2]  # recomputed alone: the curve's k-round points are whole runs
    alone = rdpcalc.account(rdpcalc.make_mechanism("pbm", c="1", theta="0.25", trials=4), n=3, rounds=int(middle["rounds"]))
    assert float(middle["epsilon_pld"]) == pytest.approx(alone["epsilon"], rel=1e-12)
    assert float(middle["epsilon_rdp"]) == pytest.approx(alone["epsilon_rdp"], rel=1e-12)
    assert main([*args[:-4], "--plot", str(tmp_path / "run.gif")]) == 2
    assert "--plot" in capsys.readouterr().err and not (tmp_path / "run.gif").exists()
    assert main([*args[:-4], "--discretization", "1"]) == 2
    assert "--discretization" in capsys.readouterr().err


def test_docstring_examples_run():
    import doctest

    from rdpcalc import accountant

    for module in (accountant, queries):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name, params, n", [("rqm", {"c": "1", "delta": "1", "m": 4, "q": "0.3"}, 4),
                                             ("rqm", {"c": "1.5", "delta": "1.5", "m": 16, "q": "0.42"}, 3),
                                             ("corbin", {"eps_p": "1"}, 5)])
def test_certified_per_round_pld_is_above_the_exhaustive_one(name, params, n):
    """The certificate (data processing over fewer others, the others' common component) against
    the exhaustive envelope over every configuration, which a large budget computes: the
    certified pair's δ is at least the exhaustive pair's at every ε, and both at least the
    exact hockey-stick divergence of the explicit configurations."""
    mech = rdpcalc.make_mechanism(name, **params)
    pairs = len(mech.breakpoints()) * (len(mech.breakpoints()) - 1)
    exhaustive = dominating.per_round_pld(mech, n, budget=10**6)
    certified = dominating.per_round_pld(mech, n, budget=pairs)  # one other client at most: the certificate runs
    assert "exhaustive" in exhaustive.family and "common component" in certified.family
    for eps in (-0.5, 0.0, 0.3, 1.0, 2.0, 4.0):
        assert certified.pld.get_delta_for_epsilon(eps) >= exhaustive.pld.get_delta_for_epsilon(eps) * (1 - 1e-9)
    from rdpcalc.numerics import FastEngine
    from rdpcalc.worstcase import secagg

    engine = FastEngine()
    points = list(mech.breakpoints())
    clients = [engine.client(mech, point) for point in points]
    rest = secagg.multiset_sum(engine, clients, [n - 1] + [0] * (len(points) - 1))
    p, q = (np.exp(engine.add_client(clients[i], rest)[0]) for i in (0, -1))
    for eps in (0.0, 0.5, 1.5):
        assert exhaustive.pld.get_delta_for_epsilon(eps) >= max(_hockey(p, q, eps), _hockey(q, p, eps)) * (1 - 1e-9)


def _exact_add_remove_hockey(mech, x, others: list, eps: float, rate: float = 1.0, pool: int | None = None):
    """max over the two directions of H_{e^ε} for client 1 at x present or absent, directly from
    the single-client pmfs by numpy convolutions: the others at the inputs ``others`` (all in the
    sum), or, with ``pool``, each of ``pool`` others at others[0] sampled at ``rate``."""
    def pmf(value):
        return np.array([r["probability"] for r in rdpcalc.pmf(mech, x=value)])

    client = pmf(x)
    if pool is None:
        rest = np.array([1.0])
        for value in others:
            rest = np.convolve(rest, pmf(value))
    else:
        from scipy.stats import binom

        single, rest, power = pmf(others[0]), np.zeros(1), np.array([1.0])
        for j in range(pool + 1):
            weight = binom.pmf(j, pool, rate)
            rest = np.pad(rest, (0, len(power) - len(rest))) + weight * power
            power = np.convolve(power, single)
    present = np.convolve(client, rest)
    absent = np.pad(rest, (0, len(present) - len(rest)))
    present = rate * present + (1 - rate) * absent
    return max(_hockey(present, absent, eps), _hockey(absent, present, eps))


@pytest.mark.parametrize("others, rate", [(2, 1.0), (5, 0.4)])
def test_add_remove_pld_is_above_explicit_configurations(others, rate):
    """Client 1 present or absent, the server's sum (rate 1) or Poisson sampling at ``rate`` of
    ``others`` others: the dominating pair's δ at least the exact hockey-stick divergence of
    explicit configurations at every ε tried, both directions."""
    mech = rdpcalc.make_mechanism("rqm", c="1", delta="1", m=4, q="0.3")
    round_pld = dominating.add_remove_pld(mech, others, rate)
    assert round_pld.certified and not round_pld.pld._symmetric
    for x in ("1", "-1", "0.2"):
        for level in ("1", "-1", "-0.5"):
            for eps in (0.0, 0.5, 1.0, 2.0, 3.0):
                if rate == 1:
                    exact = _exact_add_remove_hockey(mech, x, [level] * others, eps)
                else:
                    exact = _exact_add_remove_hockey(mech, x, [level], eps, rate, others)
                assert round_pld.pld.get_delta_for_epsilon(eps) >= exact * (1 - 1e-9)


def test_add_remove_through_the_api_and_its_refusals(capsys):
    mech = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    record = rdpcalc.account(mech, n=40, clients=3400, rounds=200, observer="release", relation="add-remove",
                             sampling="poisson")
    assert record["relation"] == "add-remove" and record["method"] == "pld" and record["epsilon_rdp"] == math.inf
    assert "support mismatch" in record["per_round_curve"] and record["order"] is None
    # the Rényi route's +∞, computed a second way: an explicit configuration's laws with and without
    # the client, by numpy convolutions, have an output possible only with it
    def pmf(value):
        return np.array([r["probability"] for r in rdpcalc.pmf(mech, x=value)])

    rest = np.convolve(pmf("1.5"), pmf("-1.5"))
    present = np.convolve(pmf("0.2"), rest)
    assert np.any((present > 0) & (np.pad(rest, (0, len(present) - len(rest))) == 0))
    assert 0 < record["epsilon"] < math.inf and record["amplified"] and "Bin(3399" in record["per_round_pld"]
    server = rdpcalc.account(mech, n=20, rounds=20, relation="add-remove")
    assert not server["amplified"] and 0 < server["epsilon"] < math.inf
    # with few others, a Poisson sample of none leaves the client alone in the sum: no finite ε at δ = 1e-5
    few = rdpcalc.account(rdpcalc.make_mechanism("pbm", c="1", theta="0.25", trials=4), n=3, clients=30, rounds=20,
                          observer="release", relation="add-remove", sampling="poisson")
    assert few["epsilon"] == math.inf
    base = ["account", "pbm", "--c", "1", "--theta", "0.25", "--trials", "4", "--n", "3", "--clients", "30",
            "--rounds", "5"]
    for extra, option in ((["--relation", "add-remove", "--observer", "local"], "--relation"),
                          (["--relation", "add-remove", "--observer", "release"], "--relation"),
                          (["--relation", "add-remove"], "--relation"),
                          (["--observer", "release", "--sampling", "poisson"], "--sampling")):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and option in err, err
    assert main([*base, "--relation", "add-remove", "--observer", "release", "--sampling", "poisson", "--json"]) == 0
    printed = float(json.loads(capsys.readouterr().out)[0]["epsilon"])  # JSON writes +∞ as "inf"
    # the quantized Gaussian's pmf is not affine between breakpoints: no proof places client 1's worst input
    assert main(["account", "qgauss", "--sigma", "1", "--k", "16", "--clip", "1", "--n", "4", "--rounds", "3",
                 "--relation", "add-remove"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--relation" in err and "affine" in err
    # PBM's relaxed add/remove family grows as trials² × others: refused before any work beyond its budget
    assert main(["account", "pbm", "--c", "1.5", "--theta", "0.25", "--trials", "16", "--n", "40", "--clients", "3400",
                 "--observer", "release", "--relation", "add-remove", "--sampling", "poisson"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--relation" in err and "budget" in err
    assert printed == rdpcalc.account(rdpcalc.make_mechanism("pbm", c="1", theta="0.25", trials=4), n=3, clients=30, rounds=5,
                                      observer="release", relation="add-remove", sampling="poisson")["epsilon"]


@pytest.mark.parametrize("sigma, rounds", [(1.0, 30), (5.0, 10_000)])
def test_composed_gaussian_pld_never_below_the_closed_form_at_small_delta(sigma, rounds):
    """k rounds of the Gaussian mechanism are one Gaussian with μ = √k/σ, whose δ(ε) is
    Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018). The FFT composition's rounding
    understated ε at δ ≤ 1e−10 before δ was read with an allowance for it; below 1000 times the
    allowance the tilted certificate answers, finite and tight at every δ."""
    import mpmath

    mu = mpmath.sqrt(rounds) / sigma

    def exact_delta(eps):
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)

    accountant = rdpcalc.Accountant("pld").compose(rdpcalc.GaussianEvent(sigma), rounds)
    with mpmath.workdps(40):
        for target in (1e-5, 1e-8, 1e-10, 1e-12):
            ours = accountant.get_epsilon(target)
            assert exact_delta(mpmath.mpf(ours)) <= target, (target, ours)
            exact = mpmath.findroot(lambda e, t=target: exact_delta(e) - t, ours)  # and tight
            assert ours <= float(exact) + 0.01 * float(exact)
            assert accountant.get_delta(ours) >= float(exact_delta(mpmath.mpf(ours)))


def test_pbm_certified_pld_in_steps_is_above_explicit_configurations():
    """PBM at n = 40 (624 of the others' trials, over RELAXED_PLD_ROWS): the relaxed family
    enters the envelope in steps of two trials (data processing), one split of each mirror pair.
    Its δ(ε) stays above the exact hockey-stick divergence of explicit configurations — k others
    at +c, the rest at −c, client 1 at ±c — whose sums are plain numpy convolutions of the
    clients' binomial pmfs."""
    mech = rdpcalc.make_mechanism("pbm", c="1.5", theta="0.25", trials=16)
    n = 40
    certified = dominating.per_round_pld(mech, n, "certified")
    assert certified.certified and "every split bounded within 2 trials (data processing; one of each mirror pair)" in certified.family
    plus, minus = (np.array([math.comb(16, i) * p**i * (1 - p) ** (16 - i) for i in range(17)])
                   for p in (0.5 + 0.25, 0.5 - 0.25))  # p(±c) = 1/2 ± θ

    def total(first, k):
        out = first
        for pmf in [plus] * k + [minus] * (n - 1 - k):
            out = np.convolve(out, pmf)
        return out

    for k in (0, 13, 39):
        p, q = total(minus, k), total(plus, k)
        for eps in (0.0, 0.5, 1.5):
            explicit = max(_hockey(p, q, eps), _hockey(q, p, eps))
            assert certified.pld.get_delta_for_epsilon(eps) >= explicit * (1 - 1e-9)


def test_a_fine_grid_and_a_long_plotted_run_say_what_they_cost_before_the_work(capsys, monkeypatch, tmp_path):
    """No terminal, so no bar: the notes are the only sign of a long wait; --quiet drops them."""
    from rdpcalc.cli import commands

    assert main(["account", "gaussian", "--sigma", "2", "--discretization", "1e-5", "--json"]) == 0
    err = capsys.readouterr().err
    assert err == ("rdpcalc: note: --discretization 1e-5 makes every privacy-loss grid 10× longer than the default "
                   "1e-4, and the PLD stage up to 10× slower\n")
    for quiet_or_rdp in (["--quiet"], ["--method", "rdp"]):
        assert main(["account", "gaussian", "--sigma", "2", "--discretization", "1e-5", *quiet_or_rdp]) == 0
        assert "note" not in capsys.readouterr().err
    monkeypatch.setattr(commands, "LONG_RUN_ROUNDS", 30)
    for rounds, noted in ((29, False), (30, True)):
        assert main(["account", "gaussian", "--sigma", "2", "--rounds", str(rounds), "--plot",
                     str(tmp_path / f"{rounds}.png")]) == 0
        assert ("--plot: the curve of ε against rounds composes the run again" in capsys.readouterr().err) == noted


def test_an_infinite_pld_epsilon_says_why():
    """Mass at an infinite loss above δ (a pair disjoint in part). δ within the FFT's rounding
    allowance no longer gives +∞: the certificate at small δ answers there (dp-accounting gives
    2.8525 for this run at 1e−11)."""
    from rdpcalc.accountant import Accountant, PairEvent

    run = rdpcalc.account_reference_run("gaussian", sigma=1.1, sample_rate=0.01, rounds=1000)
    small = run.record(dp_delta=1e-11)
    assert small["epsilon_pld"] == pytest.approx(2.8525, abs=1e-3) and small["epsilon_method"] == "pld"
    assert small["epsilon_pld_infinite_because"] is None
    assert run.record(dp_delta=1e-5)["epsilon_pld_infinite_because"] is None
    disjoint = Accountant("pld").compose(PairEvent([0.5, 0.3, 0.2], [0.6, 0.4, 0.0]), 3)
    reason = disjoint.infinity_reason(0.1)
    assert disjoint.get_epsilon(0.1) == math.inf and "mass 0.488 at an infinite loss" in reason
    assert disjoint.infinity_reason(0.6) is None and math.isfinite(disjoint.get_epsilon(0.6))
    assert Accountant("rdp").compose(PairEvent([0.5, 0.5], [0.4, 0.6])).infinity_reason(1e-5) is None
