"""Monte Carlo checks: the empirical law of a sampler against the exact pmf, and an empirical
Rényi divergence with a bootstrap interval against the exact one.

Draws are made in batches of at most :data:`BATCH_VALUES` sampled values (rows of n clients),
so memory does not grow with the number of samples; the peak (one batch, the exact pmf of the
sum, the counts) is estimated first and refused beyond the budget (:mod:`rdpcalc.resources`).
The random stream is a function of the seed, samples, n and this constant alone: reruns give
identical results, and runs of at most one batch draw exactly as an unbatched run would.
Every reported statistic is finite; where the data cannot give one (too few draws), the run is
refused with the number of draws that suffices.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import resources
from ..errors import ParameterError
from ..mechanisms import Mechanism, log_pmf
from ..numerics import FastEngine, fast
from ..params import Param
from ..queries import NeighbourOptions, divergence

#: confidence level of the total-variation bound
TV_CONFIDENCE = 0.95
#: sampled values (rows × n) per batch; the random stream depends on it, so it is a constant
BATCH_VALUES = 1 << 20
#: bytes held per sampled value of a batch: the inputs, the draws and the samplers' temporaries
#: (QMGeo, the widest, keeps about a dozen float arrays of the batch's shape)
BYTES_PER_VALUE = 128
#: bytes per cell of the sum's support: its log pmf, pmf, counts and the convolution's temporaries
BYTES_PER_CELL = 64
#: bytes per output of one client's exact pmf computed with mpmath (n = 1)
BYTES_PER_MP_VALUE = 512
#: the χ² test pools the least likely outputs until each group expects this many draws
MIN_EXPECTED = 5
#: the share of bootstrap resamples allowed to be +∞ when suggesting a number of draws
INFINITE_SHARE = 0.01
#: the most draws a run takes (``samples``)
MAX_SAMPLES = 10**9
#: the most clients summed per draw (``n``), bootstrap resamples, and the largest seed
MAX_CLIENTS = 10**4
MAX_BOOTSTRAP = 10**5
MAX_SEED = 2**63 - 1
#: the fewest bootstrap resamples whose order statistics give a 95% interval: with B resamples
#: the lowest and highest one bound a range of about (B − 1)/(B + 1) ≥ 95% when B ≥ 39
MIN_BOOTSTRAP = 39
#: the options of a Monte Carlo check, declared once
SAMPLES = Param("samples", "integer", "Draws, {range}.", default=100_000, low=1, high=MAX_SAMPLES)
SEED = Param("seed", "integer", "Seed of the generator.", default=0, low=0, high=MAX_SEED)
SUMMED = Param("n", "integer", "Clients summed per draw (SecAgg), {range}.", default=1, low=1, high=MAX_CLIENTS)
BOOTSTRAP = Param("bootstrap", "integer", "Bootstrap resamples, {range} (a 95% interval of order statistics).",
                  default=200, low=MIN_BOOTSTRAP, high=MAX_BOOTSTRAP)

Progress = Callable[[int, int], None]


def exact_pmf(mechanism: Mechanism, x, n: int = 1) -> np.ndarray:
    """The exact pmf of the sum of n clients all at x (n = 1: one client), as floats: the
    fast engine's cached log pmf and its level of n clients (tilted methods: 0.2 s for 3000
    PBM clients, where binary powering in the log domain took 10 s)."""
    one = log_pmf(mechanism, mechanism.check_input(x))
    return np.exp(one if n == 1 else FastEngine.level(one, one, n, [n])[0])


def batch_rows(samples: int, n: int) -> list[int]:
    """Rows (draws of the sum of n clients) of each batch: ⌊BATCH_VALUES / n⌋ (at least one),
    the last batch shorter."""
    rows = max(1, BATCH_VALUES // n)
    return [min(rows, samples - start) for start in range(0, samples, rows)]


def peak_memory(mechanism: Mechanism, samples: int, n: int) -> float:
    """Estimated peak bytes of a check: one batch of sampled values, the sampler's own work arrays
    (:meth:`~rdpcalc.mechanisms.Mechanism.sample_work_bytes`), and the exact pmf and counts over
    the n·(K−1)+1 outputs of the sum."""
    support = mechanism.support_size
    values = min(samples, max(1, BATCH_VALUES // n)) * n
    cells = n * (support - 1) + 1
    single = support * (BYTES_PER_MP_VALUE if n == 1 else BYTES_PER_CELL)
    return values * BYTES_PER_VALUE + mechanism.sample_work_bytes() + cells * BYTES_PER_CELL + single


def require_memory(mechanism: Mechanism, samples: int, n: int) -> None:
    """Refuse a check whose :func:`peak_memory` exceeds the budget, naming ``n`` (or the
    parameter that sets one client's support when n = 1)."""
    parameter = "n" if n > 1 else mechanism.size_parameter()
    resources.require(peak_memory(mechanism, samples, n), parameter,
                      f"sampling the sum of {n} clients over {mechanism.support_size} outputs each")


def sampled_counts(mechanism: Mechanism, x: float, samples: int, n: int, cells: int, rng: np.random.Generator,
                   step: Callable[[int], None]) -> tuple[np.ndarray, int]:
    """Counts of each output 0 … cells−1 of the sum of n clients at x over ``samples`` draws,
    batch by batch, and the number of draws outside that range; ``step(rows)`` after each batch."""
    counts = np.zeros(cells, dtype=np.int64)
    outside = 0
    for rows in batch_rows(samples, n):
        sums = mechanism.sample(np.full((rows, n), x), rng).sum(axis=1)
        inside = (sums >= 0) & (sums < cells)
        counts += np.bincount(sums[inside], minlength=cells)
        outside += rows - int(inside.sum())
        step(rows)
    return counts, outside


def _counter(progress: Progress | None, total: int) -> Callable[[int], None]:
    """A step(k) that adds k units of work done and reports (done, total) to ``progress``."""
    done = 0

    def step(units: int) -> None:
        nonlocal done
        done += units
        if progress is not None:
            progress(done, total)

    return step


def pooled(counts: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected counts of groups of outputs: the least likely pooled, in order,
    until each group expects ≥ MIN_EXPECTED draws (a short remainder joins the last group)."""
    groups_c, groups_e, c_acc, e_acc = [], [], 0.0, 0.0
    for index in np.argsort(expected, kind="stable"):
        c_acc += counts[index]
        e_acc += expected[index]
        if e_acc >= MIN_EXPECTED:
            groups_c.append(c_acc)
            groups_e.append(e_acc)
            c_acc = e_acc = 0.0
    if e_acc > 0 and groups_c:
        groups_c[-1] += c_acc
        groups_e[-1] += e_acc
    return np.array(groups_c), np.array(groups_e)


def chi_square_samples(probabilities: np.ndarray) -> str:
    """Draws that guarantee two pooled groups: N·min(p_max, 1 − p_max) ≥ MIN_EXPECTED (the
    outputs other than the likeliest close a group before it, and it closes one alone), as
    text (:func:`draws_text`): 1 − p_max is summed from the other outputs (at ε_p = 700 it is
    1e−304, lost in 1 − p_max)."""
    ordered = np.sort(probabilities)
    smaller = min(float(ordered[-1]), float(ordered[:-1].sum()))
    return draws_text(MIN_EXPECTED * (1 + 1e-9) / smaller if smaller > 0 else math.inf)


def chi_square(counts: np.ndarray, probabilities: np.ndarray) -> tuple[float, int, float]:
    """Pearson's χ² of counts against probabilities, pooling the least likely outputs until
    each group expects ≥ 5 draws. Returns (χ², dof, p), all finite.

    A draw on an output of probability 0 gives p = 0 (the statistic sums over the possible
    outputs). One possible output (a point mass) leaves nothing to test: dof 0 and p = 1 when no
    draw is impossible. Otherwise fewer than two groups (too few draws) is refused on
    ``samples`` with a number of draws that suffices."""
    total = int(counts.sum())
    possible = probabilities > 0
    impossible = int(counts[~possible].sum())
    if possible.sum() == 1:
        return 0.0, 0, 0.0 if impossible else 1.0
    observed, wanted = pooled(counts[possible], probabilities[possible] * total)
    if len(observed) < 2:
        raise ParameterError("samples", f"too few draws for the χ² test ({total}: fewer than two groups of outputs "
                                        f"expecting ≥ {MIN_EXPECTED} draws each); "
                                        f"{chi_square_samples(probabilities[possible])} draws suffice")
    from scipy import stats  # imported here: the CLI starts without scipy.stats

    statistic = float(np.sum((observed - wanted) ** 2 / wanted))
    dof = len(observed) - 1
    return statistic, dof, 0.0 if impossible else float(stats.chi2.sf(statistic, dof))


def tv_bound(cells: int, samples: int, confidence: float = TV_CONFIDENCE) -> float:
    """With probability ≥ ``confidence`` the empirical pmf is within this total variation of the
    true one: ½ √(2 (K ln 2 + ln(1/β)) / N) (Weissman et al. 2003, L1 deviation), at most 1
    (total variation never exceeds 1, so a larger bound says nothing)."""
    return min(1.0, 0.5 * math.sqrt(2 * (cells * math.log(2) + math.log(1 / (1 - confidence))) / samples))


def check(mechanism: Mechanism, x, samples: int, seed: int, n: int = 1, progress: Progress | None = None) -> dict:
    """Sample the sum of n clients at x and compare with the exact pmf: χ² p-value, total
    variation and its confidence bound; ``impossible_draws`` counts draws the pmf gives
    probability 0 (a sampler bug: the p-value is then 0). ``progress(draws done, samples)``
    after each batch."""
    samples, seed, n = SAMPLES.convert(samples), SEED.convert(seed), SUMMED.convert(n)
    x_value = mechanism.check_input(x)
    require_memory(mechanism, samples, n)
    probabilities = exact_pmf(mechanism, x_value, n)
    cells = len(probabilities)
    rng = np.random.default_rng(seed)
    counts, outside = sampled_counts(mechanism, float(x_value), samples, n, cells, rng, _counter(progress, samples))
    statistic, dof, p_value = chi_square(counts.astype(float), probabilities)
    impossible = outside + int(counts[probabilities == 0].sum())
    tv = 0.5 * (float(np.abs(counts / samples - probabilities).sum()) + outside / samples)
    return {"mechanism": mechanism.name, **mechanism.parameters(), "x": float(x_value), "n": n, "samples": samples,
            "seed": seed, "chi2": statistic, "dof": dof, "p_value": 0.0 if outside else p_value, "tv": tv,
            "tv_bound": tv_bound(cells, samples), "tv_confidence": TV_CONFIDENCE, "impossible_draws": impossible}


def plug_in(counts_p: np.ndarray, counts_q: np.ndarray, alpha: float) -> float:
    """D_α(P̂‖Q̂) of the empirical pmfs: +∞ when an output counted under P is not under Q."""
    with np.errstate(divide="ignore"):
        return float(fast.renyi_divergences(np.log(counts_p / counts_p.sum()), np.log(counts_q / counts_q.sum()),
                                            np.array([alpha]))[0])


def infinite_share(p: np.ndarray, q: np.ndarray, samples: int) -> float:
    """About the share of bootstrap resamples that are +∞ with ``samples`` draws each: Σ_k
    (1 − e^{−γNp_k}) e^{−γNq_k}, γ = 1 − 1/e (an output is in a resample of N draws about as
    often as in γN fresh draws): output k drawn under P but missing under Q."""
    gamma = 1 - math.exp(-1)
    return float(np.sum(-np.expm1(-gamma * samples * p) * np.exp(-gamma * samples * q)))


def divergence_samples(p: np.ndarray, q: np.ndarray, samples: int) -> str:
    """Draws (``samples`` doubled until enough, at most MAX_SAMPLES) after which about
    INFINITE_SHARE or fewer of the bootstrap resamples are +∞, as text (:func:`draws_text`)."""
    while infinite_share(p, q, samples) > INFINITE_SHARE and samples <= MAX_SAMPLES:
        samples *= 2
    return draws_text(samples)


def draws_text(needed: float) -> str:
    """A number of draws to suggest: the integer up to MAX_SAMPLES (the most ``samples`` takes),
    "more than 10⁹" beyond."""
    return str(math.ceil(needed)) if needed <= MAX_SAMPLES else f"more than {MAX_SAMPLES:.0e}"


def _too_few_draws(mechanism: Mechanism, x, x_prime, alpha: float, samples: int, what: str) -> ParameterError:
    p, q = exact_pmf(mechanism, x), exact_pmf(mechanism, x_prime)
    return ParameterError("samples", f"too few draws for the plug-in D_{alpha:g}: {what} is +∞ (an output drawn at x "
                                     f"was never drawn at x′); about {divergence_samples(p, q, samples)} draws "
                                     f"suffice, got {samples}")


def check_estimate(alpha: float, samples: int, seed: int, bootstrap: int) -> tuple[int, int, int]:
    """The arguments of :func:`divergence_estimate` checked (before any sampling): ``samples``,
    ``seed`` and ``bootstrap`` converted. Fewer than 39 resamples cannot give a 95% interval of
    order statistics (:data:`MIN_BOOTSTRAP`)."""
    if not 1 < alpha < math.inf:
        raise ParameterError("alphas", f"must be a finite order > 1 for the empirical divergence, got {alpha}")
    return SAMPLES.convert(samples), SEED.convert(seed), BOOTSTRAP.convert(bootstrap)


def divergence_estimate(mechanism: Mechanism, x, x_prime, alpha: float, samples: int, seed: int,
                        bootstrap: int = 200, progress: Progress | None = None) -> dict:
    """Plug-in D_α(P̂‖Q̂) between the empirical laws at x and x′ (one client), with a percentile
    bootstrap interval (multinomial resampling of both), beside the exact value.

    The plug-in is finite only when every output drawn at x was drawn at x′ too; a resample
    missing a rare output at x′ is +∞, so the interval takes order statistics (the 2.5% lower
    and 97.5% upper, never interpolated). An infinite estimate or interval end is refused on
    ``samples`` with a number of draws that suffices; an exact D_α of +∞ (an output possible
    at x is impossible at x′) on ``x_prime``: there is nothing finite to estimate.
    ``progress(done, 2·samples + bootstrap)``: draws at x, then at x′, then resamples."""
    samples, seed, bootstrap = check_estimate(alpha, samples, seed, bootstrap)
    x_value, y_value = mechanism.check_input(x, "x"), mechanism.check_input(x_prime, "x_prime")
    exact = divergence(mechanism, alphas=[alpha], choose=NeighbourOptions(x=x_value, x_prime=y_value))[0]["divergence"]
    if exact == math.inf:
        raise ParameterError("x_prime", f"D_{alpha:g} is +∞ at this pair (an output possible at x is impossible at x′): "
                                        "nothing finite to estimate; choose inputs with the same support")
    require_memory(mechanism, samples, 1)
    cells = mechanism.support_size
    rng = np.random.default_rng(seed)
    step = _counter(progress, 2 * samples + bootstrap)
    counts_p, _ = sampled_counts(mechanism, float(x_value), samples, 1, cells, rng, step)
    counts_q, _ = sampled_counts(mechanism, float(y_value), samples, 1, cells, rng, step)
    estimate = plug_in(counts_p, counts_q, alpha)
    if not math.isfinite(estimate):
        raise _too_few_draws(mechanism, x_value, y_value, alpha, samples, "the estimate")
    resampled = np.empty(bootstrap)
    for index in range(bootstrap):
        resampled[index] = plug_in(rng.multinomial(samples, counts_p / samples),
                                   rng.multinomial(samples, counts_q / samples), alpha)
        step(1)
    low = float(np.percentile(resampled, 2.5, method="lower"))
    high = float(np.percentile(resampled, 97.5, method="higher"))
    if not math.isfinite(high):
        raise _too_few_draws(mechanism, x_value, y_value, alpha, samples, "the bootstrap interval's upper end")
    return {"mechanism": mechanism.name, **mechanism.parameters(), "x": float(x_value), "x_prime": float(y_value),
            "alpha": alpha, "samples": samples, "seed": seed, "estimate": estimate, "interval_low": low,
            "interval_high": high, "bootstrap": bootstrap, "exact": exact, "exact_inside": low <= exact <= high}
