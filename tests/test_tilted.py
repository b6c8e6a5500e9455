"""The certificate at small δ (rdpcalc.privacy.tilted): its FFT against its error bound, its
twiddles against mpmath, and its ε against closed forms, dp-accounting and the Rényi route."""

import math

import mpmath
import numpy as np
import pytest

import rdpcalc
from rdpcalc.privacy import tilted


def test_the_twiddle_table_is_within_its_stated_error():
    """μ of Higham's Theorem 24.2, measured against 40-digit cos and sin: the bound's premise."""
    points = 2**12
    table = tilted._twiddles(points)
    with mpmath.workdps(40):
        errors = [abs(complex(mpmath.cos(2 * mpmath.pi * k / points), -mpmath.sin(2 * mpmath.pi * k / points))
                      - complex(table[k])) for k in range(points // 2)]
    assert max(errors) <= tilted.TWIDDLE_ERROR
    assert max(errors) > 0  # (the table is computed, not exact: the check can fail)


@pytest.mark.parametrize("points", [2**4, 2**10, 2**15])
def test_the_fft_is_within_highams_bound_of_the_exact_transform(points):
    """Forward and inverse, against numpy's FFT of the same input in extended precision
    (np.longdouble sums of the DFT would be slow; numpy's own error is ~u·log N, far below β)."""
    rng = np.random.default_rng(points)
    values = rng.random(points) * np.exp(-rng.random(points) * 30)
    reference = np.fft.fft(values)
    ours = tilted._fft(values)
    beta = tilted.fft_error(points)
    assert np.linalg.norm(ours - reference) <= 2 * beta * np.linalg.norm(reference)
    back = tilted._fft(ours, inverse=True)
    assert np.linalg.norm(back - values) <= 4 * beta * np.linalg.norm(values)
    assert np.linalg.norm(ours - reference) > 0 or points == 16


def test_the_fft_is_exact_on_a_small_case_by_hand():
    """The DFT of (1, 2, 3, 4) is (10, −2 + 2i, −2, −2 − 2i)."""
    assert tilted._fft(np.array([1.0, 2, 3, 4])) == pytest.approx(np.array([10, -2 + 2j, -2, -2 - 2j]))


def _exact_gaussian_epsilon(mu, target):
    """ε of one Gaussian with μ = √k/σ at δ (Balle & Wang 2018), by bisection at 40 digits."""
    def exact_delta(eps):
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)

    with mpmath.workdps(40):
        low, high = mpmath.mpf(0), mpmath.mpf(10) * (1 + mu**2)
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if exact_delta(middle) > target else (low, middle)
        return float(high)


@pytest.mark.parametrize("sigma, rounds", [(0.5, 2), (1.0, 30), (5.0, 3000)])
def test_composed_gaussian_certified_and_tight_at_every_delta(sigma, rounds):
    """k rounds of the Gaussian are one Gaussian with μ = √k/σ: the certificate's ε is never
    below the closed form, and within the grid's rounding (k·h of loss at most) above it."""
    single = rdpcalc.GaussianEvent(sigma).pld(1e-4)
    mu = mpmath.sqrt(rounds) / sigma
    for target in (1e-5, 1e-8, 1e-11, 1e-14):
        ours = max(tilted.epsilon(tilted.factors([(single, rounds)], direction), target) for direction in (0, 1))
        exact = _exact_gaussian_epsilon(mu, target)
        assert exact <= ours <= exact + rounds * 1e-4 * 0.05, (target, ours, exact)


def test_certified_delta_is_never_below_the_closed_form():
    """δ(ε) of 30 Gaussian rounds at σ = 1, ε across the curve: the certificate's δ is above the
    exact one, and within 1e−6 of it relative."""
    single = rdpcalc.GaussianEvent(1.0).pld(1e-4)
    mu = mpmath.sqrt(30)
    for eps in (20.0, 40.0, 55.0, 70.0):
        ours = max(tilted.delta(tilted.factors([(single, 30)], direction), eps) for direction in (0, 1))
        with mpmath.workdps(40):
            exact = float(mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu))
        assert exact <= ours <= exact * (1 + 1e-2), (eps, ours, exact)


def test_the_sampled_gaussian_agrees_with_dp_accounting_from_1e_5_to_1e_12():
    """The issue's case: σ = 1.1, q = 0.01, 1000 rounds. dp-accounting's PLD accountant (its FFT
    and its pessimistic tail truncation) against ours, at every δ; the FFT route alone gave +∞
    at δ ≤ 2e−11."""
    import dp_accounting
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    event = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1))
    reference = PLDAccountant(value_discretization_interval=1e-4)
    reference.compose(event, 1000)
    ours = rdpcalc.Accountant("pld").compose(rdpcalc.GaussianEvent(1.1, sample_rate=0.01), 1000)
    for target in (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12):
        theirs = reference.get_epsilon(target)
        assert ours.get_epsilon(target) == pytest.approx(theirs, rel=1e-4), target
        assert ours.infinity_reason(target) is None


def test_dp_accounting_events_compose_through_the_certificate_too():
    """A dp-accounting event composed 1000 times (SelfComposedDpEvent inside a ComposedDpEvent)
    is unpacked to its single uses, so small δ is certified for it as for ours."""
    import dp_accounting

    sampled = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1))
    nested = dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(sampled, 500)] * 2)
    accountant = rdpcalc.Accountant("pld").compose(nested)
    direct = rdpcalc.Accountant("pld").compose(sampled, 1000)
    assert accountant.get_epsilon(1e-11) == pytest.approx(direct.get_epsilon(1e-11), rel=1e-9)
    assert math.isfinite(accountant.get_epsilon(1e-11))


@pytest.mark.parametrize("name, parameters", [("rqm", {"c": 1.5, "delta": 1.5, "m": 16, "q": 0.42}),
                                              ("ddg", {"c": 1.5, "gamma": 0.125, "sigma": 2.0})])
def test_quantized_mechanisms_at_small_delta_against_the_renyi_route(name, parameters):
    """One client (no SecAgg search), 200 rounds: PLD finite at every δ down to 1e−12, below the
    Rényi route's ε (which converts a curve of the same pair, so it is looser), and consistent:
    δ at the ε found is at most δ."""
    mechanism = rdpcalc.make_mechanism(name, **parameters)
    event = rdpcalc.MechanismEvent(mechanism, n=1, clients=1)
    pld = rdpcalc.Accountant("pld").compose(event, 200)
    rdp = rdpcalc.Accountant("rdp").compose(event, 200)
    for target in (1e-5, 1e-8, 1e-10, 1e-11, 1e-12):
        eps = pld.get_epsilon(target)
        assert math.isfinite(eps) and eps <= rdp.get_epsilon(target), (target, eps)
        assert pld.get_delta(eps) <= target * (1 + 1e-9)


def test_mass_at_infinity_stays_infinite_with_its_reason():
    """A pair disjoint in part: mass 1 − 0.8³ = 0.488 at +∞ after 3 uses, so ε = +∞ for δ below
    it, whichever route answers."""
    event = rdpcalc.PairEvent([0.5, 0.3, 0.2], [0.6, 0.4, 0.0])
    accountant = rdpcalc.Accountant("pld").compose(event, 3)
    for target in (0.1, 1e-12):
        assert accountant.get_epsilon(target) == math.inf
        assert "mass 0.488 at an infinite loss" in accountant.infinity_reason(target)


def test_epsilon_does_not_grow_with_delta_across_the_switch():
    """Just below T = 1000 × the allowance (1e−8) the certificate answers, at T the FFT route,
    which is looser by the allowance's effect (2.19380 against 2.19371 here): ε below T is
    raised to the FFT route's ε at T, so ε(δ) stays non-increasing; far below T the
    certificate stands alone (2.4080 at 1e−9, dp-accounting 2.40797)."""
    accountant = rdpcalc.Accountant("pld").compose(rdpcalc.GaussianEvent(1.1, sample_rate=0.01), 1000)
    deltas = [1e-6, 1e-7, 1.0000001e-8, 1e-8, 0.9999999e-8, 0.99e-8, 1e-9, 1e-10]
    values = [accountant.get_epsilon(d) for d in deltas]
    assert all(a >= b for a, b in zip(values[1:], values[:-1])), values
    assert values[4] == values[3]  # raised to the FFT route's ε at T
    assert values[6] == pytest.approx(2.40797, abs=1e-4) and values[6] > values[3]
