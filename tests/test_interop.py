"""rdpcalc and dp-accounting work together: dp-accounting's events compose in rdpcalc's accountant
as dp-accounting's own accountants compose them, beside rdpcalc's events; and an event
dp-accounting's accountant does not support is refused, naming ``event``."""

from __future__ import annotations

import math

import dp_accounting
import pytest

import rdpcalc
from rdpcalc.privacy import pld as pldlib
from rdpcalc.privacy import rdp as acc


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
