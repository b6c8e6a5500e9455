"""Monte Carlo checks: the empirical law of a sampler against the exact pmf, and an empirical
Rényi divergence with a bootstrap interval against the exact one."""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import stats

from ..errors import ParameterError
from ..mechanisms import Mechanism, log_pmf
from ..numerics import fast
from .samplers import sample

#: confidence level of the total-variation bound
TV_CONFIDENCE = 0.95


def exact_pmf(mechanism: Mechanism, x, n: int = 1) -> np.ndarray:
    """The exact pmf of the sum of n clients all at x (n = 1: one client), as floats."""
    x = mechanism.check_input(x)
    if n == 1:
        with mpmath.workdps(30):
            return np.array([float(p) for p in mechanism.pmf(x)])
    return np.exp(fast.log_power(log_pmf(mechanism, x), n))


def chi_square(counts: np.ndarray, probabilities: np.ndarray) -> tuple[float, int, float]:
    """Pearson's χ² of counts against probabilities, pooling the least likely cells until each
    expects ≥ 5; an observed output of probability 0 gives p = 0. Returns (χ², dof, p)."""
    total = counts.sum()
    expected = probabilities * total
    if np.any((probabilities == 0) & (counts > 0)):
        return math.inf, 0, 0.0
    order = np.argsort(expected)
    pooled_c, pooled_e, c_acc, e_acc = [], [], 0.0, 0.0
    for index in order:
        c_acc += counts[index]
        e_acc += expected[index]
        if e_acc >= 5:
            pooled_c.append(c_acc)
            pooled_e.append(e_acc)
            c_acc = e_acc = 0.0
    if e_acc > 0 and pooled_c:
        pooled_c[-1] += c_acc
        pooled_e[-1] += e_acc
    observed, wanted = np.array(pooled_c), np.array(pooled_e)
    statistic = float(np.sum((observed - wanted) ** 2 / wanted))
    dof = max(len(observed) - 1, 1)
    return statistic, dof, float(stats.chi2.sf(statistic, dof))


def tv_bound(cells: int, samples: int, confidence: float = TV_CONFIDENCE) -> float:
    """With probability ≥ ``confidence`` the empirical pmf is within this total variation of the
    true one: ½ √(2 (K ln 2 + ln(1/β)) / N) (Weissman et al. 2003, L1 deviation)."""
    return 0.5 * math.sqrt(2 * (cells * math.log(2) + math.log(1 / (1 - confidence))) / samples)


def check(mechanism: Mechanism, x, samples: int, seed: int, n: int = 1) -> dict:
    """Sample the sum of n clients at x and compare with the exact pmf: χ² p-value, total
    variation and its confidence bound."""
    if samples < 1:
        raise ParameterError("--samples", f"must be an integer ≥ 1, got {samples}")
    rng = np.random.default_rng(seed)
    x_value = mechanism.check_input(x)
    probabilities = exact_pmf(mechanism, x_value, n)
    draws = sample(mechanism, np.full((samples, n), float(x_value)), rng).sum(axis=1)
    counts = np.bincount(draws, minlength=len(probabilities)).astype(float)[: len(probabilities)]
    statistic, dof, p_value = chi_square(counts, probabilities)
    tv = 0.5 * float(np.abs(counts / samples - probabilities).sum())
    return {"mechanism": mechanism.name, **mechanism.parameters(), "x": float(x_value), "n": n, "samples": samples,
            "seed": seed, "chi2": statistic, "dof": dof, "p_value": p_value, "tv": tv,
            "tv_bound": tv_bound(len(probabilities), samples), "tv_confidence": TV_CONFIDENCE}


def divergence_estimate(mechanism: Mechanism, x, x_prime, alpha: float, samples: int, seed: int,
                        bootstrap: int = 200) -> dict:
    """Plug-in D_α between the empirical laws at x and x′ (n = 1), with a percentile bootstrap
    interval (multinomial resampling of both), beside the exact value."""
    from ..api import divergence

    rng = np.random.default_rng(seed)
    x_value, y_value = mechanism.check_input(x, "--x"), mechanism.check_input(x_prime, "--x-prime")
    cells = mechanism.support_size
    counts_p = np.bincount(sample(mechanism, np.full(samples, float(x_value)), rng), minlength=cells)[:cells]
    counts_q = np.bincount(sample(mechanism, np.full(samples, float(y_value)), rng), minlength=cells)[:cells]

    def plug_in(cp: np.ndarray, cq: np.ndarray) -> float:
        with np.errstate(divide="ignore"):
            return float(fast.renyi_divergences(np.log(cp / samples), np.log(cq / samples), np.array([alpha]))[0])

    estimate = plug_in(counts_p, counts_q)
    resampled = [plug_in(rng.multinomial(samples, counts_p / samples).astype(float),
                         rng.multinomial(samples, counts_q / samples).astype(float)) for _ in range(bootstrap)]
    low, high = (float(v) for v in np.percentile(resampled, [2.5, 97.5]))
    exact = divergence(mechanism, 1, [alpha], x=x_value, x_prime=y_value)[0]["divergence"]
    return {"mechanism": mechanism.name, **mechanism.parameters(), "x": float(x_value), "x_prime": float(y_value),
            "alpha": alpha, "samples": samples, "seed": seed, "estimate": estimate, "interval_low": low,
            "interval_high": high, "bootstrap": bootstrap, "exact": exact, "exact_inside": low <= exact <= high}
