"""The layered quantizers' tables: Rényi divergences of their outputs and their communication cost
in bits (Hegazy, Leluc, Li & Dieuleveut 2024, "Compression with Exact Error Distribution for
Federated Learning", AISTATS 2024, arXiv:2310.20682)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import mpmath

from ..orders import collect_alphas
from . import noise as layered_noise

#: clients of :func:`layered_bits`: the exact Irwin–Hall density table behind λ(n) costs about
#: n^2.5 (1.7 s at n = 1000, 23 s at n = 3000); the paper's figure stops at 1000
BITS_MAX_N = 1000
#: the clients of ``bits layered``: the Irwin–Hall density table costs about n^2.5
BITS_CLIENTS = dataclasses.replace(layered_noise.CLIENTS, help="Clients, {range} (n > 1 adds the aggregate mechanisms; "
                                   "gauss).", high=BITS_MAX_N)


def layered_divergence(noise: str, *, sigma=1, sensitivity=1, n: int = 1, alphas: Sequence[float | str] | None = None,
                       alpha_ranges: Sequence[str] = ()) -> list[dict]:
    """D_α of a layered quantizer's output between inputs x and x + Δ: its error is exactly the
    target noise (the paper's Defs. 4–5 and 8), so this is the noise's Rényi divergence at shift Δ:
    αΔ²/(2σ²) for the Gaussian and the Laplace mechanism's closed form at scale σ/√2 (Mironov 2017,
    "Rényi Differential Privacy", arXiv:1702.07476), and +∞ for every α ≥ 1 for Irwin–Hall noise
    (its support is bounded: §4.2 of the paper). Each +∞ comes with its one-line ``reason``.

    Parameters:
        noise: ``gauss``, ``laplace`` or ``irwin-hall``.
        sigma: the noise's standard deviation σ > 0.
        sensitivity: the shift Δ ≥ 0 between neighbouring inputs.
        n: clients of the Irwin–Hall mechanism, ≥ 1.
        alphas, alpha_ranges: the orders, as for :func:`rdpcalc.divergence`."""
    noise = layered_noise.check_noise(noise, layered_noise.NOISES)
    sigma_value = layered_noise.check_sigma(sigma)
    sensitivity_value = float(layered_noise.check_sensitivity(sensitivity))
    n = layered_noise.check_clients(n)
    orders = collect_alphas(alphas, alpha_ranges)
    records = []
    with mpmath.workdps(30):
        for alpha in orders:
            value, reason = layered_noise.renyi_divergence(noise, alpha, sigma, sensitivity, n)
            record = {"mechanism": "layered", "noise": noise, "sigma": sigma_value, "sensitivity": sensitivity_value,
                      "n": n, "alpha": float(alpha), "divergence": math.inf if value == mpmath.inf else float(value),
                      "neighbours": "outputs x + noise vs x + Δ + noise (exact error distribution)"}
            if reason:
                record["reason"] = reason
            records.append(record)
    return records


def layered_bits(noise: str, *, sigma=1, t=64, n: int = 1) -> list[dict]:
    """Communication cost in bits per client for inputs spread over an interval of length t:
    the individual layered quantizers (exact H(M|S) for X ~ U(0, t), the bounds (4), (5),
    Prop. 1, the fixed length of the shifted quantizer with Prop. 2's minimal step), and for
    n clients the aggregate Gaussian mechanism (Theorems 1 + 2) and the Irwin–Hall mechanism.

    Parameters:
        noise: ``gauss`` or ``laplace``.
        sigma: the error's standard deviation σ > 0.
        t: the length t > 0 of the interval the inputs lie in.
        n: clients, 1 … :data:`BITS_MAX_N` (n > 1 adds the aggregate mechanisms; gauss)."""
    from . import bits  # (scipy: imported where it is used, so that `import rdpcalc` stays light)

    noise = layered_noise.check_noise(noise)
    sigma_value, t_value = layered_noise.check_sigma(sigma), bits.check_t(t)
    n = BITS_CLIENTS.convert(n)
    base = {"mechanism": "layered", "noise": noise, "sigma": sigma_value, "t": t_value, "n": n}

    def row(quantity, value, unit, source):
        return {**base, "quantity": quantity, "value": float(value), "unit": unit, "source": source}

    eta = layered_noise.minimal_shifted_step(noise, sigma_value)
    records = [
        row("minimal step of the shifted quantizer η_Z", eta, f"= {eta / sigma_value:.6f}·σ", "Prop. 2"),
        row("h(D_Z), layered entropy of the direct step", layered_noise.direct_entropy(noise, sigma_value), "bits",
            "§3 (derived closed form)"),
        row("h(W_Z), of the shifted step", layered_noise.shifted_entropy(noise, sigma_value), "bits", "Prop. 1"),
        row("lower bound log₂ t + h(D_Z)", bits.lower_bound(noise, sigma_value, t_value), "bits", "eq. (4)"),
        row("H(M|S), direct layered, exact", bits.conditional_entropy(noise, "direct", sigma_value, t_value), "bits",
            "Def. 4"),
        row("upper bound, direct", bits.direct_upper_bound(noise, sigma_value, t_value), "bits", "eq. (5)"),
        row("H(M|S), shifted layered, exact", bits.conditional_entropy(noise, "shifted", sigma_value, t_value), "bits",
            "Def. 5"),
        row("upper bound, shifted", bits.shifted_upper_bound(noise, sigma_value, t_value), "bits", "Prop. 1"),
        row("fixed length, shifted ⌈log₂(2 + t/η_Z)⌉", bits.shifted_fixed_length(noise, sigma_value, t_value), "bits",
            "Prop. 2"),
    ]
    if noise == layered_noise.GAUSS and n > 1:
        per_client = sigma_value * math.sqrt(n)
        records += [
            row("individual direct, per client N(0, nσ²), exact", bits.conditional_entropy(noise, "direct", per_client,
                                                                                            t_value), "bits", "Def. 2, 4"),
            row("aggregate Gaussian, Theorems 1 + 2 bound", bits.aggregate_bits_bound(n, sigma_value, t_value), "bits",
                "Theorems 1–2"),
            row("Irwin–Hall, fixed length ⌈log₂(t/w + 3)⌉", bits.irwin_hall_fixed_length(n, sigma_value, t_value), "bits",
                "§4.5"),
            row("Irwin–Hall, entropy at step w = 2σ√(3n)", bits.irwin_hall_entropy(n, sigma_value, t_value), "bits",
                "§4.2"),
        ]
    return records
