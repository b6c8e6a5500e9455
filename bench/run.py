"""Benchmarks of rdpcalc's engines: wall time (minimum of repeats) and fast-vs-exact accuracy.

Run with ``make bench``; writes ``bench/results.md``. Timings belong here, never in tests.

Workloads (issue 2's targets):
  1. the RQM paper's Figure 2 right: RQM (Δ=c, q=0.42) and PBM (θ=0.25, 16 trials), n ∈ {1, 40},
     100 orders log-spaced in [1.01, 1000] plus ∞, worst case — fast engine (target < 2 s);
  2. the same with the exact engine at 30 digits (target < 2 min);
  3. one configuration at n = 10 000, m = 16, 10 orders, fast engine (target < 5 s);
  4. one configuration at n = 500 (tilted-FFT path), fast vs exact at 30 digits;
  5. a federated run: 200 rounds × 10 clients on digits with RQM (target < 60 s).
Accuracy: the largest relative difference between the fast and exact engines over the points
of workloads 1/2 and 4 (target ≤ 1e-9).
"""

from __future__ import annotations

import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from rdpcalc import __version__, api
from rdpcalc.figures.rqm import FIG2, SWEEP_ALPHAS

ORDERS_10 = [1, 1.5, 2, 5, 10, 50, 100, 1000, 1e4, math.inf]


def timed(function, repeats: int):
    """(minimum wall time over ``repeats`` runs, the last result)."""
    best, result = math.inf, None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def figure2_right(engine: str) -> list[float]:
    values = []
    for curve in FIG2:
        for n in (1, 40):
            values += [r["divergence"] for r in api.divergence(curve.mechanism, n=n, alphas=SWEEP_ALPHAS, engine=engine,
                                                                dps=30)]
    return values


def one_configuration(n: int, engine: str) -> list[float]:
    mech = api.make_mechanism("rqm", c="1.5", delta="1.5", m=16, q="0.42")
    return [r["divergence"] for r in api.divergence(mech, n=n, alphas=ORDERS_10, k=n // 2, engine=engine, dps=30)]


def federated_run() -> None:
    from rdpcalc.backend import data, fl

    x, y = data.digits()
    federated = data.federate(x, y, 100, "iid", 0)
    config = fl.RunConfig(mechanism="rqm", params={"c": "0.05", "delta": "0.05", "m": 16, "q": "0.42"}, rounds=200,
                          per_round=10, seed=0)
    fl.run(config, federated)


def max_relative(a: list[float], b: list[float]) -> float:
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
    return worst


def main() -> int:
    rows = []
    fast_time, fast_values = timed(lambda: figure2_right("fast"), 5)
    rows.append(("Fig. 2 right data (RQM + PBM, n ∈ {1, 40}, 101 orders, worst case)", "fast", fast_time, "< 2 s"))
    exact_time, exact_values = timed(lambda: figure2_right("exact"), 1)
    rows.append(("Fig. 2 right data (same)", "exact, 30 digits", exact_time, "< 120 s"))
    large_time, large_values = timed(lambda: one_configuration(10_000, "fast"), 3)
    rows.append(("RQM n = 10 000, k = 5000, 10 orders", "fast", large_time, "< 5 s"))
    mid_fast_time, mid_fast = timed(lambda: one_configuration(500, "fast"), 3)
    rows.append(("RQM n = 500, k = 250, 10 orders (tilted FFT)", "fast", mid_fast_time, ""))
    mid_exact_time, mid_exact = timed(lambda: one_configuration(500, "exact"), 1)
    rows.append(("RQM n = 500, k = 250, 10 orders", "exact, 30 digits", mid_exact_time, ""))

    fl_time, _ = timed(federated_run, 1)
    rows.append(("FL: 200 rounds × 10 of 100 clients, digits, MLP 64-32-10, RQM", "numpy + torch", fl_time, "< 60 s"))

    figure_gap = max_relative(fast_values, exact_values)
    mid_gap = max_relative(mid_fast, mid_exact)
    finite = all(math.isfinite(v) and v > 0 for v in large_values)
    monotone = all(b >= a for a, b in zip(large_values, large_values[1:]))

    lines = [
        "# rdpcalc benchmarks",
        "",
        f"rdpcalc {__version__}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.machine()} ({_cpu_count()} cores). Wall time is the minimum over repeats (1 for the exact engine).",
        "",
        "| workload | engine | time (s) | target |",
        "|---|---|---:|---|",
        *[f"| {name} | {engine} | {seconds:.3f} | {target} |" for name, engine, seconds, target in rows],
        "",
        "| accuracy | value | target |",
        "|---|---:|---|",
        f"| max relative fast-vs-exact, Fig. 2 right ({len(fast_values)} points) | {figure_gap:.2e} | ≤ 1e-9 |",
        f"| max relative fast-vs-exact, n = 500 (10 points) | {mid_gap:.2e} | ≤ 1e-9 |",
        f"| n = 10 000: all finite and > 0 / non-decreasing in α | {finite} / {monotone} | True / True |",
        "",
    ]
    text = "\n".join(lines)
    (Path(__file__).parent / "results.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
