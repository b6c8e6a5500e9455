"""rdpcalc and dp-accounting work together: dp-accounting's events compose in rdpcalc's accountant
as dp-accounting's own accountants compose them, beside rdpcalc's events; an rdpcalc event's PLD
and Rényi curve go to dp-accounting and give there (ε, δ) no better than rdpcalc's own; and an
event neither accountant supports is refused, naming ``event``."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

import rdpcalc
from rdpcalc.privacy import pld as pldlib
from rdpcalc.privacy import rdp as acc
from rdpcalc.privacy import tilted

RQM = rdpcalc.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")


def _sampled_gaussian(sigma: float, rate: float) -> dp_accounting.DpEvent:
    event = dp_accounting.GaussianDpEvent(sigma)
    return event if rate == 1 else dp_accounting.PoissonSampledDpEvent(rate, event)


def _their_accountant(method: str, discretization: float = pldlib.DISCRETIZATION):
    """dp-accounting's own accountant for ``method``; the Rényi one at the orders rdpcalc gives it."""
    if method == "pld":
        return dp_accounting.pld.PLDAccountant(value_discretization_interval=discretization)
    return dp_accounting.rdp.RdpAccountant(orders=list(acc.SHARED_ORDERS))


THEIR_EVENTS = [
    (dp_accounting.GaussianDpEvent(2.0), 10),
    (_sampled_gaussian(1.1, 0.01), 1000),
    (dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(3.0), _sampled_gaussian(1.5, 0.05)]), 20),
]


@pytest.mark.parametrize("event, count", THEIR_EVENTS, ids=["gaussian", "poisson-sampled", "composed"])
@pytest.mark.parametrize("method, discretization", [("pld", 1e-4), ("pld", 1e-3), ("rdp", 1e-4)])
def test_dp_accounting_events_compose_as_dp_accounting_composes_them(event, count, method, discretization):
    """The same ε and δ as dp-accounting's own accountant on the same events. ``rdp``: the same
    curve at the same orders, converted by the same formula (Canonne, Kamath & Steinke): equal to
    1e−12. ``pld``: the very PLD dp-accounting composed, which rdpcalc reads at δ less its rounding
    allowance A (≥ 1e−11) and whose δ it raises by A: its ε is at least dp-accounting's and, at
    δ = 1e−5, within 1e−6 of it; its δ is dp-accounting's plus A (≤ 1e−9)."""
    ours = rdpcalc.Accountant(method, discretization=discretization).compose(event, count)
    theirs = _their_accountant(method, discretization)
    theirs.compose(event, count)
    if method == "rdp":
        assert ours.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon(1e-5), rel=1e-12)
        assert ours.get_delta(1.0) == pytest.approx(theirs.get_delta(1.0), rel=1e-9)
        return
    assert 0 <= ours.get_epsilon(1e-5) - theirs.get_epsilon(1e-5) <= 1e-6
    assert 0 <= ours.get_delta(1.0) - theirs.get_delta(1.0) <= 1e-9
    assert ours.grid_step == discretization
    assert ours.ledger == [(f"dp-accounting {event!r}", count)]


@pytest.mark.parametrize("sigma, rate, count", [(2.0, 1.0, 10), (1.1, 0.01, 300)])
@pytest.mark.parametrize("method", ["pld", "rdp"])
def test_an_rdpcalc_and_a_dp_accounting_gaussian_compose_as_two_rdpcalc_gaussians(sigma, rate, count, method):
    """rdpcalc's GaussianEvent and dp-accounting's event of the same Gaussian (add/remove, Poisson
    sampled at ``rate``) against two rdpcalc GaussianEvents.

    ``pld``: each side is a pessimistic discretisation, on the grid h = 1e−4, of the same
    2·count-fold composition. Rounding every loss up to the grid moves the composed loss up by
    less than 2·count·h, so H'(e^ε) ≤ H(e^{ε − 2·count·h}) and ε' ≤ ε + 2·count·h, and
    connect-the-dots lies below rounding up; both are at least the exact ε, so they differ by
    at most 2·count·h. ``rdp``: the same closed forms at the orders that attain ε (the binomial
    sum at integer orders; α(Δ/σ)²/2 unsampled) agree to 1e−9; at fractional orders
    dp-accounting's series for the sampled Gaussian lies above rdpcalc's quadrature, so the
    mixed ε can only be the larger."""
    ours = rdpcalc.GaussianEvent(sigma, sample_rate=rate)
    theirs = _sampled_gaussian(sigma, rate)
    mixed = rdpcalc.Accountant(method).compose(ours, count).compose(theirs, count).get_epsilon(1e-5)
    two = rdpcalc.Accountant(method).compose(ours, count).compose(ours, count).get_epsilon(1e-5)
    assert math.isfinite(two)
    if method == "pld":
        assert abs(mixed - two) <= 2 * count * pldlib.DISCRETIZATION
    else:
        assert mixed == pytest.approx(two, rel=1e-9) and mixed >= two * (1 - 1e-12)


def test_an_rqm_run_and_a_dp_sgd_run_compose_in_one_accountant():
    """RQM rounds (rdpcalc) and DP-SGD steps (dp-accounting) in one rdpcalc accountant, against
    the same composition done by dp-accounting alone: the RQM round exported
    (:func:`rdpcalc.pld_for_dp_accounting`) and composed with dp-accounting's own PLD of the
    steps. dp-accounting's ε is at least rdpcalc's (the exported round carries the rounding
    allowance in its δ, 1e−9 relative is float rounding) and within one grid step per RQM
    round of it (the allowance raises δ by ~1e−11 a round: far less than that)."""
    rounds, steps = 10, 200
    rqm_round = rdpcalc.MechanismEvent(RQM, n=3, clients=30, dim=2)
    dp_sgd_step = _sampled_gaussian(1.1, 0.01)
    ours = rdpcalc.Accountant("pld").compose(rqm_round, rounds).compose(dp_sgd_step, steps).get_epsilon(1e-5)
    steps_alone = dp_accounting.pld.PLDAccountant()
    steps_alone.compose(dp_sgd_step, steps)
    run = rdpcalc.pld_for_dp_accounting(rqm_round).self_compose(rounds).compose(steps_alone._pld)
    theirs = run.get_epsilon_for_delta(1e-5)
    rqm_alone = rdpcalc.Accountant("pld").compose(rqm_round, rounds).get_epsilon(1e-5)
    assert ours > rqm_alone > 0 and ours > steps_alone.get_epsilon(1e-5)
    assert ours * (1 - 1e-9) <= theirs <= ours + rounds * pldlib.DISCRETIZATION


EXPORTED = [
    rdpcalc.MechanismEvent(RQM, n=1),  # one client, one coordinate: the dominating pair itself
    rdpcalc.MechanismEvent(RQM, n=3, clients=30, dim=4),  # a SecAgg sum, composed over 4 coordinates by FFT
    rdpcalc.GaussianEvent(1.1, sample_rate=0.01),  # add/remove: two directions
    rdpcalc.PairEvent([0.6, 0.3, 0.1], [0.2, 0.3, 0.5]),
]


def _pmfs(pld):
    return [pld._pmf_remove] + ([] if pld._symmetric else [pld._pmf_add])


@pytest.mark.parametrize("event", EXPORTED, ids=["rqm-one-client", "rqm-secagg-4-coordinates", "gaussian", "pair"])
def test_the_exported_pld_dominates_rdpcalc_s_own(event):
    """:func:`rdpcalc.pld_for_dp_accounting` is a PLD (masses ≥ 0 that sum to 1 with the mass at
    +∞, pessimistic) whose δ at every ε is at least rdpcalc's own δ of one use and at most it
    raised by the float slack and 1e−12 (dp-accounting's sum), and the allowance where the
    certificate at small δ answers (rdpcalc.privacy.tilted); composed 20 times by dp-accounting,
    its ε is at least rdpcalc's for 20 uses (1e−9 relative: dp-accounting's FFT, which carries no
    allowance) and within one grid step per use of it."""
    exported = rdpcalc.pld_for_dp_accounting(event)
    for pmf in _pmfs(exported):
        dense = pmf.to_dense_pmf()
        assert np.all(dense._probs >= 0) and pmf._pessimistic_estimate
        assert dense._probs.sum() + dense._infinity_mass == pytest.approx(1.0, abs=1e-9)
    one_use = rdpcalc.Accountant("pld").compose(event)
    allowance = pldlib.rounding_allowance(one_use._pld)
    top = one_use.get_epsilon(1e-9)
    for eps in np.linspace(0, top if math.isfinite(top) else 10.0, 41):
        ours, theirs = one_use.get_delta(float(eps)), exported.get_delta_for_epsilon(float(eps))
        certificate = ours < tilted.ALLOWANCE_TIMES * allowance  # (its δ carries no allowance)
        assert ours <= theirs <= ours * (1 + 2 * pldlib.FLOAT_SLACK) + certificate * allowance + 1e-12
    uses = 20
    ours = rdpcalc.Accountant("pld").compose(event, uses).get_epsilon(1e-5)
    theirs = exported.self_compose(uses).get_epsilon_for_delta(1e-5)
    assert ours * (1 - 1e-9) <= theirs <= ours + uses * pldlib.DISCRETIZATION


def test_the_exported_pld_keeps_a_coarser_grid():
    event = rdpcalc.GaussianEvent(2.0)
    exported = rdpcalc.pld_for_dp_accounting(event, discretization=1e-3)
    assert exported._pmf_remove._discretization == 1e-3
    ours = rdpcalc.Accountant("pld", discretization=1e-3).compose(event, 5).get_epsilon(1e-5)
    assert ours * (1 - 1e-9) <= exported.self_compose(5).get_epsilon_for_delta(1e-5) <= ours + 5e-3


@pytest.mark.parametrize("event", [
    rdpcalc.MechanismEvent(RQM, n=1, dim=3),
    rdpcalc.MechanismEvent(RQM, n=1, clients=10, observer="release"),  # amplified by sampling
    rdpcalc.GaussianEvent(1.1, sample_rate=0.01),
    rdpcalc.LaplaceEvent(2.0),
    rdpcalc.PairEvent([0.6, 0.3, 0.1], [0.2, 0.3, 0.5]),
], ids=["rqm", "rqm-release", "gaussian", "laplace", "pair"])
def test_the_exported_rdp_curve_converts_in_dp_accounting_as_in_rdpcalc(event):
    """(orders, values) of one use; dp-accounting's conversion of k·values is rdpcalc's ε of k uses."""
    orders, values = rdpcalc.rdp_for_dp_accounting(event)
    curve = event.rdp_curve()
    assert np.all(np.isfinite(orders)) and np.all(orders > 1)
    assert np.array_equal(orders, curve.orders[np.isfinite(curve.orders)])
    assert np.array_equal(values, [curve.at(a) for a in orders])
    for uses in (1, 50):
        theirs = dp_accounting.rdp.compute_epsilon(orders, uses * values, 1e-5)[0]
        assert theirs == pytest.approx(rdpcalc.Accountant("rdp").compose(event, uses).get_epsilon(1e-5), rel=1e-12)


@pytest.mark.parametrize("method", ["pld", "rdp"])
@pytest.mark.parametrize("event", [dp_accounting.UnsupportedDpEvent(), "gaussian",
                                   dp_accounting.SampledWithoutReplacementDpEvent(100, 10, dp_accounting.GaussianDpEvent(1.0))],
                         ids=["unsupported", "not-an-event", "without-replacement"])
def test_an_unsupported_event_is_refused_naming_event(event, method):
    """Refused before anything is composed: the accountant is as it was."""
    acct = rdpcalc.Accountant(method).compose(rdpcalc.GaussianEvent(2.0))
    before = acct.get_epsilon(1e-5)
    assert not _their_accountant(method).supports(event)
    with pytest.raises(rdpcalc.ParameterError) as error:
        acct.compose(event)
    assert error.value.parameter == "event" and repr(event) in str(error.value) and method in str(error.value)
    assert acct.get_epsilon(1e-5) == before and len(acct.ledger) == 1


def test_an_event_only_one_of_dp_accounting_s_accountants_supports():
    """zCDP (ε(α) = ξ + ρα) has a Rényi curve and no PLD in dp-accounting: rdp composes it as
    dp-accounting does, pld refuses it."""
    event = dp_accounting.ZCDpEvent(0.1)
    with pytest.raises(rdpcalc.ParameterError) as error:
        rdpcalc.Accountant("pld").compose(event)
    assert error.value.parameter == "event"
    theirs = _their_accountant("rdp")
    theirs.compose(event, 3)
    assert rdpcalc.Accountant("rdp").compose(event, 3).get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon(1e-5),
                                                                                           rel=1e-12)


@pytest.mark.parametrize("method", ["pld", "rdp"])
def test_a_non_private_event_makes_epsilon_infinite(method):
    acct = rdpcalc.Accountant(method).compose(dp_accounting.GaussianDpEvent(2.0)).compose(dp_accounting.NonPrivateDpEvent())
    assert acct.get_epsilon(1e-5) == math.inf and acct.get_delta(5.0) == 1.0


@pytest.mark.parametrize("export", [rdpcalc.pld_for_dp_accounting, rdpcalc.rdp_for_dp_accounting])
def test_only_rdpcalc_events_are_exported(export):
    with pytest.raises(rdpcalc.ParameterError) as error:
        export(dp_accounting.GaussianDpEvent(2.0))
    assert error.value.parameter == "event"


def test_the_pld_export_is_refused_where_rdpcalc_s_pld_route_is():
    """The observer does not see who was sampled without replacement: no PLD bound here."""
    with pytest.raises(rdpcalc.ParameterError) as error:
        rdpcalc.pld_for_dp_accounting(rdpcalc.MechanismEvent(RQM, n=1, clients=10, observer="release"))
    assert error.value.parameter == "method"
