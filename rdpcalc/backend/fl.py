"""Federated runs: distributed DP-SGD as in the RQM paper (Algorithm 1) and the quantized
Gaussian paper (Algorithm 1), vectorised across clients with torch.

Each round samples ``per_round`` of the clients; each computes the gradient of its loss on a
minibatch at the global model (all clients at once, ``torch.func.vmap``), clips it, and sends it
through the mechanism, coordinate by coordinate; the server decodes the (SecAgg) sum into the
mean gradient and takes a step. The mechanisms run through the same vectorised samplers as the
Monte Carlo checks (:mod:`.samplers`), on the (clients × coordinates) array.

A round's memory is estimated before training (refused on --hidden beyond the budget); a
run whose gradients or test loss stop being finite (too large a step) is stopped with a
:class:`ParameterError` on --lr naming the round, so no NaN reaches the records.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import api, resources
from ..errors import ParameterError
from .data import FederatedData
from .samplers import sample, sample_corbin_pairs

#: mechanism → (the rdpcalc mechanism behind it, the observer of its privacy accounting: the
#: server sees the SecAgg sum, or each message, and knows who was sampled)
FL_MECHANISMS = {"none": (None, None), "rqm": ("rqm", "server"), "pbm": ("pbm", "server"),
                 "qgauss": ("qgauss", "server"), "qmgeo": ("qmgeo", "local"), "ldp": ("corbin", "local"),
                 "corbin": ("corbin", "local")}


#: peak bytes per coordinate of a sampled client's message in a round (see :func:`peak_memory`)
BYTES_PER_COORDINATE = 160


@dataclass(frozen=True)
class RunConfig:
    """A run: the mechanism (one of FL_MECHANISMS) and its parameters, ``clip`` for the
    clipped-SGD baseline, rounds, clients sampled per round, learning rate, minibatch size,
    hidden width of the MLP, and the seed."""

    mechanism: str = "none"
    params: dict = field(default_factory=dict)
    clip: float = 0.05
    rounds: int = 200
    per_round: int = 10
    lr: float = 0.5
    batch: int = 32
    hidden: int = 32
    seed: int = 0
    delta_target: float = 1e-5


def _torch():
    try:
        import torch
    except ImportError:
        raise ParameterError("--mechanism", "FL runs need the optional extra fl: pip install 'rdpcalc[fl]'") from None
    return torch


def run(config: RunConfig, data: FederatedData, progress: Callable[[int, int], None] | None = None) -> dict:
    """Train and return {"rounds": per-round records (loss, accuracy), "summary": record}."""
    torch = _torch()
    from torch.func import functional_call, grad, vmap

    if config.mechanism not in FL_MECHANISMS:
        raise ParameterError("--mechanism", f"must be one of {', '.join(FL_MECHANISMS)}, got {config.mechanism!r}")
    clients = len(data.client_x)
    if not 1 <= config.per_round <= clients:
        raise ParameterError("--per-round", f"must be an integer in [1, {clients}], got {config.per_round}")
    if config.mechanism == "corbin" and config.per_round % 2:
        raise ParameterError("--per-round", "CorBin-FL pairs the sampled clients: use an even number")
    for value, option in ((config.rounds, "--rounds"), (config.batch, "--batch"), (config.hidden, "--hidden")):
        if value < 1:
            raise ParameterError(option, f"must be an integer ≥ 1, got {value}")
    if not 0 < config.lr < math.inf:
        raise ParameterError("--lr", f"must be a finite number > 0, got {config.lr}")
    name, observer = FL_MECHANISMS[config.mechanism]
    mechanism = api.make_mechanism(name, **config.params) if name else None
    if config.mechanism == "corbin" and mechanism is not None and mechanism.view != "marginal":
        raise ParameterError("--view", "the FL run uses the clients' uplinks (marginal view)")

    dimension = data.features * config.hidden + config.hidden + config.hidden * data.classes + data.classes
    resources.require(peak_memory(config, dimension, data), "--hidden",
                      f"{config.per_round} clients' messages over a model of {dimension} coordinates")

    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = torch.nn.Sequential(torch.nn.Linear(data.features, config.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(config.hidden, data.classes))
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def unflatten(flat):
        return {n: t.reshape(s) for n, t, s in zip(names, torch.split(flat, sizes), shapes)}

    def loss(flat, x, y):
        return torch.nn.functional.cross_entropy(functional_call(model, unflatten(flat), (x,)), y)

    per_client_grad = vmap(grad(loss), in_dims=(None, 0, 0))
    test_x, test_y = torch.from_numpy(data.test_x), torch.from_numpy(data.test_y)
    history = []
    for round_index in range(1, config.rounds + 1):
        chosen = rng.choice(clients, size=config.per_round, replace=False)
        picks = [rng.integers(0, len(data.client_y[i]), size=config.batch) for i in chosen]
        x = torch.from_numpy(np.stack([data.client_x[i][p] for i, p in zip(chosen, picks)]))
        y = torch.from_numpy(np.stack([data.client_y[i][p] for i, p in zip(chosen, picks)]))
        gradients = per_client_grad(theta, x, y).detach().numpy().astype(np.float64)
        if not np.all(np.isfinite(gradients)):
            raise diverged(round_index, "the clients' gradients", config.lr)
        update = aggregate(config, mechanism, gradients, rng)
        theta = theta - config.lr * torch.from_numpy(update).to(theta.dtype)
        with torch.no_grad():
            logits = functional_call(model, unflatten(theta), (test_x,))
            test_loss = float(torch.nn.functional.cross_entropy(logits, test_y))
            accuracy = float((logits.argmax(dim=1) == test_y).float().mean())
        if not math.isfinite(test_loss):
            raise diverged(round_index, "the test loss", config.lr)
        history.append({"round": round_index, "test_loss": test_loss, "test_accuracy": accuracy})
        if progress is not None:
            progress(round_index, config.rounds)
    summary = {"mechanism": config.mechanism, **{k: float(v) if isinstance(v, int | float) else v
                                                 for k, v in config.params.items()},
               "clip": config.clip if mechanism is None else None, "rounds": config.rounds, "clients": clients,
               "per_round": config.per_round, "lr": config.lr, "batch": config.batch, "dimension": dimension,
               "seed": config.seed, "final_test_accuracy": history[-1]["test_accuracy"],
               "final_test_loss": history[-1]["test_loss"]}
    summary.update(_privacy(mechanism, observer, config, clients, dimension))
    return {"rounds": history, "summary": summary}


def peak_memory(config: RunConfig, dimension: int, data: FederatedData) -> float:
    """Estimated peak bytes of a round: BYTES_PER_COORDINATE for each sampled client's
    coordinate (its float32 gradient, the float64 copy, the clipped inputs and the mechanism's
    draws and temporaries), the minibatches' activations and the test set's logits."""
    activations = 4 * 4 * (data.features + config.hidden + data.classes)
    return (config.per_round * dimension * BYTES_PER_COORDINATE + config.per_round * config.batch * activations
            + len(data.test_y) * activations)


def diverged(round_index: int, what: str, lr: float) -> ParameterError:
    """The refusal of a run whose training diverged: NaN or ±∞ reached ``what`` at this round
    (the model's coordinates overflowed), on --lr, the step size that drives it."""
    return ParameterError("--lr", f"training diverged at round {round_index} ({what} not finite); lower --lr "
                                  f"(got {lr:g})")


def aggregate(config: RunConfig, mechanism, gradients: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The server's estimate of the mean clipped gradient from the clients' messages.

    Box clipping to the mechanism's input range per coordinate (ℓ₂ clipping to C_q/2 for the
    quantized Gaussian, as its Algorithm 1 does), then each coordinate through the mechanism,
    decoded unbiasedly (QMGeo is biased for p < 1; its decoding is the level value)."""
    if mechanism is None:
        return np.clip(gradients, -config.clip, config.clip).mean(axis=0)
    bound = float(mechanism.bound)
    if config.mechanism == "qgauss":
        norms = np.linalg.norm(gradients, axis=1, keepdims=True)
        clipped = gradients * np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    else:
        clipped = np.clip(gradients, -bound, bound)
    if config.mechanism in ("corbin", "ldp"):  # inputs are offsets from the center c
        clipped = np.clip(gradients - float(mechanism.c), -bound, bound)
    if config.mechanism == "corbin":
        first, second = sample_corbin_pairs(mechanism, clipped[0::2], clipped[1::2], rng)
        amplitude = float(mechanism.r) * float(mechanism.alpha)
        values = np.concatenate([2 * first - 1, 2 * second - 1]) * amplitude + float(mechanism.c)
        return values.mean(axis=0)
    decode = np.array([float(v) for v in mechanism.output_values()])
    return decode[sample(mechanism, clipped, rng)].mean(axis=0)


def _privacy(mechanism, observer, config: RunConfig, clients: int, dimension: int) -> dict:
    """The run's (ε, δ) from the accountant (per coordinate, composed over the model's
    coordinates and the rounds; the server knows the sample, so no amplification): ε by PLD,
    and by RDP beside it."""
    if mechanism is None:
        return {"epsilon": math.inf, "delta": config.delta_target, "privacy": "none: clipped SGD without noise"}
    record = api.account(mechanism, n=config.per_round, clients=clients, rounds=config.rounds, dim=dimension,
                         delta_target=config.delta_target, observer=observer)
    return {"epsilon": record["epsilon"], "delta": record["delta"], "method": record["method"],
            "epsilon_rdp": record["epsilon_rdp"], "privacy": record["observer_text"]}
