"""Which mechanism at equal bits: calibrate each mechanism's free parameter to a target (ε, δ)
for a whole run and tabulate the mean squared error of the decoded SecAgg sum.

**Equal bits.** Every client sends B bits per coordinate and the server receives the sum modulo
M = 2^B. Each mechanism gets the finest resolution that fits (its
:meth:`~rdpcalc.mechanisms.Mechanism.design`, :func:`designs`):

* RQM, PBM, quantized Gaussian (bounded outputs, m values per client): the largest m with
  n(m − 1) + 1 ≤ M, so the sum never wraps;
* binomial (cpSGD): the grid reach K and the trials N share the range, n(2K + N) + 1 ≤ M;
* discrete Gaussian and Skellam (unbounded noise): n·2K + 2·Z_RANGE·√n·σ ≤ M, σ the noise's
  standard deviation, so the sum wraps with a small probability — counted in the error.

The grid step is γ = c/K (c a grid point), the free parameter (the noise) is solved for, and
everything else follows from it. Privacy is accounted exactly as ``rdpcalc account`` does
(certified, PLD where the observer knows the sample, else Rényi), for the sum *without* the
wrap-around (wrapping can only lower a divergence, so this is an upper bound of the true ε).

**Error.** With all n clients at the same input x, the decoded sum's MSE E[(Σ̂ − nx)²] is
computed exactly from the pmfs: the sum's pmf wrapped modulo M (an FFT power of one client's
pmf), decoded as the representative nearest the sum's centre. The table gives the largest over
x ∈ {0, c/4, c/2, 3c/4, c} (the mechanisms are symmetric in x).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import mpmath
import numpy as np

from . import resources, runs
from .accountant import MechanismEvent
from .errors import ParameterError
from .mechanisms import MECHANISMS, Mechanism
from .mechanisms.base import exact_pmf, log_pmf
from .mechanisms.design import Design
from .params import Param
from .privacy import rdp as acc
from .runs import TARGET_EPSILON, RunOptions, check_participation

#: the inputs (as fractions of c) the MSE is maximised over
MSE_INPUTS = (Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))
#: the relative width of the free parameter's bracket at which the solver stops
SOLVE_RTOL = 2e-3
#: the most accounting evaluations of the solver per mechanism (after the bracket's)
SOLVE_EVALUATIONS = 12
#: the options of a comparison, declared once
COMPARED = Param("n", "integer", "Clients per round (the SecAgg sum), {range}.", low=2, high=100_000)
BITS = Param("bits", "integer", "Bits per coordinate B: every client sends B bits, the server gets the sum mod 2^B, "
             "{range}.", low=1, high=62)
CLIP = Param("c", "number", "Clipping bound c {range}: inputs in [-c, c].", default=1, low=0, low_open=True)
WORKERS = Param("workers", "integer", "Processes calibrating mechanisms side by side, {range} (four per core); each "
                "gets an equal share of the cores and of the memory budget, and the table is the same.",
                default=1, low=1, high=resources.max_workers())
#: the factor between the values tried while bracketing the target (log-scale parameters)
BRACKET_STEP = 4.0
#: how far past the target's extrapolated crossing a bracketing step goes (a factor)
BRACKET_OVERSHOOT = 1.25


def designs() -> dict[str, Design]:
    """Every registered mechanism that declares its design at a bit budget
    (:meth:`rdpcalc.mechanisms.Mechanism.design`), by name, in the order of registration: the
    mechanisms ``compare`` runs by default."""
    return {name: cls.design() for name, cls in MECHANISMS.items() if cls.supports("compare")}


def compare(run: RunOptions, *, bits: int, dp_epsilon: float, dp_delta: float = 1e-5, c=1,
            mechanisms: Sequence[str] | None = None, workers: int = 1,
            progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """One record per mechanism: its design at ``bits`` bits for ``n`` clients, the free
    parameter calibrated so that the run's ε at ``dp_delta`` meets ``dp_epsilon``, the ε reached,
    and the worst MSE of the decoded sum (module docstring); ``feasible`` False (with
    ``reason``) where the bits cannot hold the mechanism or no value meets the target.

    Parameters:
        run: the run (:class:`rdpcalc.RunOptions`), whose ``n`` (clients per round, the SecAgg
            sum) is 2 … 100 000.
        bits: B, 1 … 62; ``dp_epsilon``, ``dp_delta``: the target (ε, δ) of the whole run.
        c: the clipping bound (inputs in [−c, c]); ``mechanisms``: which to compare (default:
            every registered mechanism with a design, :func:`designs`).
        workers: processes calibrating mechanisms side by side (1 … four per core; default 1:
            this process, one mechanism after the other). Each mechanism's record is the same
            either way (its calibration does not depend on the others'); each worker gets an
            equal share of the threads and of the memory budget (:mod:`rdpcalc.resources`).
        progress: ``progress(done, total)`` after each accounting evaluation (with workers,
            after each mechanism)."""
    if not isinstance(run, RunOptions):
        raise ParameterError("run", f"must be a RunOptions (rdpcalc.RunOptions), got {run!r}")
    n, bits = COMPARED.convert(run.n), BITS.convert(bits)
    target = TARGET_EPSILON.convert(dp_epsilon)
    acc.check_delta(dp_delta)
    bound = CLIP.convert(c)
    known = designs()
    mechanisms = list(known) if mechanisms is None else list(mechanisms)
    unknown = [name for name in mechanisms if name not in known]
    if unknown:
        raise ParameterError("mechanisms", f"must be among {', '.join(known)}, got {unknown[0]!r}")

    # the run's options checked before any work
    probe = MechanismEvent(MECHANISMS["pbm"](c=Fraction(1), theta=Fraction(1, 4), trials=1), n=n, clients=run.clients,
                           dim=run.dim, observer=run.observer, sampling=run.sampling, relation=run.relation)
    check_participation(run.participation, run.rounds, run.observer, probe.rate)
    total = len(mechanisms) * (SOLVE_EVALUATIONS + 2)
    done = [0]

    def advance() -> None:
        done[0] += 1
        if progress is not None:
            progress(min(done[0], total), total)

    workers = min(WORKERS.convert(workers), len(mechanisms))
    if workers > 1:
        records = _side_by_side(mechanisms, workers, (n, bits, bound, target, dp_delta, run),
                                lambda: [advance() for _ in range(SOLVE_EVALUATIONS + 2)])
    else:
        records = [_compare_one(known[name], name, n, bits, bound, target, dp_delta, run, advance)
                   for name in mechanisms]
    if progress is not None:
        progress(total, total)
    return records


def _side_by_side(mechanisms: Sequence[str], workers: int, arguments: tuple, finished: Callable[[], None]) -> list[dict]:
    """:func:`_compare_one` of each mechanism in a pool of ``workers`` fresh (spawned) processes,
    each with an equal share of this process's threads and memory budget; the records in the
    order of ``mechanisms``, ``finished()`` after each."""
    import multiprocessing  # here, not at the top: the command line starts without it
    from concurrent.futures import ProcessPoolExecutor, as_completed  # (as multiprocessing)

    share = (max(1, resources.threads() // workers), resources.budget() // workers)
    context = multiprocessing.get_context("spawn")  # no fork of a process whose numba threads may run
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_setup, initargs=share) as pool:
        futures = [pool.submit(_compare_in_worker, name, *arguments) for name in mechanisms]
        try:
            for future in as_completed(futures):
                future.result()
                finished()
        except BaseException:  # an internal error or Ctrl-C: the mechanisms not started are not run
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        return [future.result() for future in futures]


def _worker_setup(threads: int, budget: int) -> None:
    """A worker's share of the threads and of the memory budget, for all it computes."""
    resources.set_threads(threads)
    resources.set_budget(budget)


def _compare_in_worker(name: str, *arguments) -> dict:
    return _compare_one(designs()[name], name, *arguments, lambda: None)


def run_epsilon(mechanism: Mechanism, dp_delta: float, run: RunOptions) -> tuple[float, str]:
    """(ε at ``dp_delta`` of the run, the method): the certified per-round worst case of the sum
    without its wrap-around (an upper bound), composed as :func:`rdpcalc.account` composes it
    (:func:`rdpcalc.runs.run_epsilon`: the smaller ε of the Rényi curve and, where it applies, a
    PLD, both upper bounds; the Rényi curve left out where it cannot give the smaller)."""
    return runs.run_epsilon(mechanism.without_wrap_around(), dp_delta=dp_delta, run=run)


def _compare_one(design: Design, name: str, n: int, bits: int, c: Fraction, target: float, dp_delta: float,
                 run: RunOptions,
                 advance: Callable[[], None]) -> dict:
    fields = {"rounds": run.rounds, "clients": run.clients, "dim": run.dim, "sampling": run.sampling,
              "observer": run.observer, "relation": run.relation, "participation": run.participation}
    record = {"mechanism": name, "n": n, "bits": bits, "dp_epsilon": target, "dp_delta": dp_delta, **fields,
              "design": design.rule, "solved": design.free}
    try:
        return _calibrated(design, record, n, bits, c, target, dp_delta, run, advance)
    except ParameterError as error:  # refused for its memory or size: the other mechanisms go on
        # API keywords in backticks, as every error message: the command line shows them as its options
        return {**record, "feasible": False, "reason": f"refused: `{error.parameter}`: {error.message}"}


def _calibrated(design: Design, record: dict, n: int, bits: int, c: Fraction, target: float, dp_delta: float,
                run: RunOptions, advance: Callable[[], None]) -> dict:
    low, high = design.ends(n, bits, c)
    cache: dict[float, tuple[float, str]] = {}  # value → (ε, method): each value is accounted once

    def epsilon_at(value: float) -> float:
        if value not in cache:
            mechanism = design.build(value, n, bits, c)
            cache[value] = (math.inf, "") if mechanism is None else run_epsilon(mechanism, dp_delta, run)
            advance()
        return cache[value][0]

    private_end = high if design.private_high else low
    if design.build(private_end, n, bits, c) is None:
        return {**record, "feasible": False, "reason": f"{bits} bits cannot hold the sum of {n} clients' outputs"}
    bracket = _bracket(epsilon_at, design, low, high, target)
    if bracket is None:
        return {**record, "feasible": False, "reason": f"even at {design.free} = {private_end:.6g} the run's ε is "
                                                       f"{epsilon_at(private_end):.6g} > {target:g}"}
    value = bracket if not isinstance(bracket, tuple) else _solve(epsilon_at, design, *bracket, target)
    mechanism = design.build(value, n, bits, c)
    epsilon_at(value)  # the solver's answer was accounted already
    epsilon, method = cache[value]
    mse, worst_x, wrap = decoded_sum_error(mechanism, n)
    return {**record, "feasible": True, "value": float(value), "parameters": mechanism.parameters(),
            "epsilon": epsilon, "method": method, "mse": mse, "mse_at": worst_x, "wrap_probability": wrap,
            "outputs": mechanism.support_size, "sum_bits": math.log2(n * (mechanism.support_size - 1) + 1)}


def _bracket(epsilon_at: Callable[[float], float], design: Design, low: float, high: float, target: float):
    """From the middle of [low, high] (geometric on a log scale), steps towards the side that
    meets or misses the target, until two values straddle it: (low, high) of that bracket; an
    end itself where it already meets the target on the public side; None where even the
    private end misses it. A step is ×BRACKET_STEP (log scale; half the way to the end on a
    linear one) or, from the second value on, the step that the line through the last two
    values in (log value, log ε) says reaches the target, times BRACKET_OVERSHOOT
    (:func:`_extrapolated_step`)."""
    def meets(value: float) -> bool:
        return epsilon_at(value) <= target

    def toward(value: float, private: bool, previous: float | None) -> float:
        up = private == design.private_high
        if design.log:
            factor = _extrapolated_step(previous, value, epsilon_at, target, up)
            moved = value * factor if up else value / factor
        else:
            moved = value + (high - value) / 2 if up else value - (value - low) / 2
        moved = min(high, max(low, moved))
        if design.integer:
            moved = round(moved)
            if moved == value and low < value < high:  # at least one step
                moved = min(high, max(low, value + (1 if up else -1)))
        return moved

    start = math.sqrt(low * high) if design.log else (low + high) / 2
    start = round(start) if design.integer else start
    previous, current, ok = None, start, meets(start)
    for _ in range(64):
        following = toward(current, private=not ok, previous=previous)
        if following == current:  # an end: it meets the target (public side), or nothing does
            return current if ok else None
        if meets(following) != ok:
            pair = sorted((current, following))
            return tuple(pair)
        previous, current = current, following
    return None


def _extrapolated_step(previous: float | None, value: float, epsilon_at: Callable[[float], float], target: float,
                       up: bool) -> float:
    """The factor of the next step from ``value``: where a ``previous`` value lies on the same
    side of the target, the line through both in (log value, log ε) crosses the target at a
    factor f from ``value``; the step is f·BRACKET_OVERSHOOT (past the crossing, so that the
    bracket is narrow), within [BRACKET_OVERSHOOT, BRACKET_STEP²]; BRACKET_STEP without a
    previous value, or where the line does not point the way the step goes."""
    if previous is None:
        return BRACKET_STEP
    logs = [math.log(e) if 0 < e < math.inf else math.nan for e in map(epsilon_at, (previous, value))]
    slope = (logs[1] - logs[0]) / (math.log(value) - math.log(previous))
    if not math.isfinite(slope) or slope == 0:
        return BRACKET_STEP
    distance = (math.log(target) - logs[1]) / slope  # in log value, signed
    if (distance > 0) != up:
        return BRACKET_STEP
    return min(BRACKET_STEP**2, max(BRACKET_OVERSHOOT, math.exp(abs(distance)) * BRACKET_OVERSHOOT))


def _solve(epsilon_at: Callable[[float], float], design: Design, low: float, high: float, target: float) -> float:
    """The least private value with ε ≤ target: Brent's method on log ε between the ends (whose ε
    straddle the target), stopped at SOLVE_RTOL; an integer is moved to its safe side."""
    def epsilon_of(value: float) -> float:
        return epsilon_at(round(value) if design.integer else value)

    ends = (epsilon_of(low), epsilon_of(high))
    value = acc.solve_monotone(epsilon_of, low, high, target, design.log, ends, rtol=SOLVE_RTOL,
                               evaluations=SOLVE_EVALUATIONS, log_values=True)
    if design.integer:
        value = round(value)
        step = 1 if design.private_high else -1
        while epsilon_at(value) > target:
            value += step
    return value


def decoded_sum_error(mechanism: Mechanism, n: int) -> tuple[float, float, float]:
    """(the largest MSE of the decoded sum over MSE_INPUTS·c, the input attaining it, the
    probability that the sum wraps around there), all clients at the same input."""
    values = np.array([float(v) for v in mechanism.output_values()])
    step, offset = values[1] - values[0], values[0]  # the decoding is affine in the output index
    with mpmath.workdps(30):  # the sum's centre: n·E[index] at x = 0
        centre = float(n * mpmath.fsum(p * i for i, p in enumerate(exact_pmf(mechanism, Fraction(0)))))
    size = n * (mechanism.support_size - 1) + 1
    wraps = mechanism.modulus is not None and mechanism.modulus < size
    worst = (-1.0, 0.0, 0.0)
    for share in MSE_INPUTS:
        x = share * mechanism.bound
        sum_pmf = _sum_pmf(np.exp(log_pmf(mechanism, x)), n, size)
        index = np.arange(size)
        # the server's reading of the sum: its residue mod M nearest the centre (the sum itself without wrap)
        read = centre + np.mod(index - centre + mechanism.modulus / 2, mechanism.modulus) - mechanism.modulus / 2 \
            if wraps else index
        mse = float(np.sum(sum_pmf * (n * offset + step * read - n * float(x)) ** 2) / np.sum(sum_pmf))
        wrap = float(np.sum(sum_pmf[read != index]) / np.sum(sum_pmf)) if wraps else 0.0
        if mse > worst[0]:
            worst = (mse, float(x), wrap)
    return worst


def _sum_pmf(probabilities: np.ndarray, n: int, size: int) -> np.ndarray:
    """The pmf of the sum of ``n`` draws (an FFT power: float accuracy, enough for moments)."""
    length = 1 << (size - 1).bit_length()
    return np.clip(np.fft.irfft(np.fft.rfft(probabilities, n=length) ** n, n=length)[:size], 0, None)
