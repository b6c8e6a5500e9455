"""Federated runs: distributed DP-SGD as in the RQM paper (Algorithm 1) and the quantized
Gaussian paper (Algorithm 1), vectorised across clients with torch.

Each round samples ``per_round`` of the clients; each computes the gradient of its loss on a
minibatch at the global model (all clients at once, ``torch.func.vmap``), clips it, and sends it
through the mechanism, coordinate by coordinate; the server decodes the (SecAgg) sum into the
mean gradient and takes a step. The mechanisms sample themselves, as in the Monte Carlo checks
(:meth:`~rdpcalc.mechanisms.Mechanism.sample`; CorBin-FL's pairs by
:meth:`~rdpcalc.mechanisms.CorBin.sample_pairs`), on the (clients × coordinates) array.

:func:`configure` checks a run's parameters; :func:`load` checks what depends on the clients,
before any data is read, then loads and federates the data; :func:`run` trains and returns the
rounds' records and the run's summary (its parameters and the accounted (ε, δ)), which
``rdpcalc fl --out`` writes (:mod:`rdpcalc.cli.outputs`).

A round's memory is estimated before training (refused on ``hidden`` beyond the budget); a
run whose gradients or test loss stop being finite (too large a step) is stopped with a
:class:`ParameterError` on ``lr`` naming the round, so no NaN reaches the records.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from .. import resources
from ..errors import ParameterError
from ..exactnum import to_fraction
from ..mechanisms.base import MECHANISMS, Mechanism
from ..params import Param
from ..privacy.rdp import check_delta
from ..queries import NeighbourOptions, divergence, make_mechanism
from ..runs import account
from .data import FederatedData, digits, federate, idx_dataset


def fl_mechanisms() -> dict[str, tuple[str | None, str | None]]:
    """The choices of a run's mechanism → (the registered mechanism behind it, the observer of
    its privacy accounting: the server sees the SecAgg sum, or each message, and knows who was
    sampled): ``none`` (clipped SGD), every registered mechanism with an FL role
    (:data:`~rdpcalc.mechanisms.Mechanism.FL_OBSERVER`), and ``ldp`` (CorBin's uplinks without
    the pairing: LDP-FL)."""
    choices: dict[str, tuple[str | None, str | None]] = {"none": (None, None)}
    choices.update({name: (name, cls.FL_OBSERVER) for name, cls in MECHANISMS.items() if cls.supports("fl")})
    if "corbin" in MECHANISMS:
        choices["ldp"] = ("corbin", "local")
    return choices


#: peak bytes per coordinate of a sampled client's message in a round (see :func:`peak_memory`)
BYTES_PER_COORDINATE = 160

#: a run's options with a range, declared once: :func:`configure` and :func:`load` convert and
#: check them, the command line shows them
ROUNDS = Param("rounds", "integer", "Rounds, {range}.", default=200, low=1, high=10**6)
CLIENTS = Param("clients", "integer", "Clients the data is split across, {range}.", default=100, low=1, high=10**6)
SAMPLED = Param("n", "integer", "Clients sampled per round, 1 … CLIENTS.", default=10, low=1, high=10**6)
LR = Param("lr", "float", "Server learning rate η {range}.", default=0.5, low=0, low_open=True)
BATCH = Param("batch", "integer", "Minibatch size per client, {range}.", default=32, low=1, high=10**5)
HIDDEN = Param("hidden", "integer", "Hidden units of the MLP, {range}.", default=32, low=1, high=10**5)
SEED = Param("seed", "integer", "Seed of the split, sampling and mechanisms.", default=0, low=0, high=2**63 - 1)
CLIP = Param("clip", "float", "The clipped-SGD baseline's bound", low=0, low_open=True, optional=True)


@dataclass(frozen=True)
class RunConfig:
    """A run: the mechanism (one of :func:`fl_mechanisms`) and its parameters, ``clip`` for the
    clipped-SGD baseline, rounds, clients sampled per round (``per_round``, named ``n`` by
    :func:`configure` and in errors), learning rate, minibatch size, hidden width of the MLP, the
    seed, and the δ of the accounted (ε, δ)."""

    mechanism: str = "none"
    params: dict = field(default_factory=dict)
    clip: float = 0.05
    rounds: int = 200
    per_round: int = 10
    lr: float = 0.5
    batch: int = 32
    hidden: int = 32
    seed: int = 0
    dp_delta: float = 1e-5


def _torch():
    try:
        import torch  # torch (the fl extra): start-up time
    except ImportError:
        raise ParameterError("mechanism", "FL runs need the optional extra fl: pip install 'rdpcalc[fl]'") from None
    return torch


@dataclass(frozen=True)
class DataOptions:
    """Where a run's data come from and how they are federated: ``clients`` (numbers may be
    decimal strings), ``split`` (:func:`rdpcalc.backend.data.federate`), and the IDX files
    ``images`` and ``labels`` (given together; None: scikit-learn's digits). Checked by
    :func:`load`."""

    clients: object = 100
    split: str = "iid"
    images: object = None
    labels: object = None


def configure(*, mechanism: str, params: dict, clip, rounds, n, lr, batch, hidden, seed, dp_delta) -> RunConfig:
    """A run's configuration, every parameter converted and checked (numbers may be given as
    numbers or decimal strings). ``n`` is the number of clients sampled per round
    (:attr:`RunConfig.per_round`); ``params`` are the mechanism's own parameters (qgauss's C_q
    is its ``clip``); ``clip`` is the clipped-SGD baseline's bound and is taken by
    ``mechanism="none"`` only (None: 0.05). What depends on the data (n against the clients)
    is checked by :func:`load`."""
    choices = fl_mechanisms()
    if mechanism not in choices:
        raise ParameterError("mechanism", f"must be one of {', '.join(choices)}, got {mechanism!r}")
    if mechanism == "none" and params:
        raise ParameterError(sorted(params)[0], "is not a parameter of clipped SGD (mechanism `none` takes only `clip`)")
    if mechanism != "none" and clip is not None:
        raise ParameterError("clip", f"is the bound of clipped SGD (mechanism `none`); {mechanism}'s parameters go in "
                                     "`params`")
    integers = {"rounds": ROUNDS.convert(rounds), "per_round": SAMPLED.convert(n), "batch": BATCH.convert(batch),
                "hidden": HIDDEN.convert(hidden), "seed": SEED.convert(seed)}
    baseline = {} if clip is None else {"clip": CLIP.convert(clip)}
    return RunConfig(mechanism=mechanism, params=dict(params), lr=LR.convert(lr),
                     dp_delta=check_delta(float(to_fraction(dp_delta, "dp_delta")), "dp_delta"), **baseline, **integers)


def load(config: RunConfig, data: DataOptions = DataOptions()) -> FederatedData:
    """The run's data federated across ``data.clients``, after every check that does not need
    the data (:func:`check`, the images and labels given together)."""
    clients = CLIENTS.convert(data.clients)
    check(config, clients)
    if (data.images is None) != (data.labels is None):
        raise ParameterError("labels" if data.labels is None else "images", "`images` and `labels` go together")
    x, y = idx_dataset(data.images, data.labels) if data.images is not None else digits()
    return federate(x, y, clients, data.split, config.seed)


def check(config: RunConfig, clients: int) -> Mechanism | None:
    """Check ``config`` for a run over ``clients`` clients; returns the mechanism (None for
    clipped SGD)."""
    choices = fl_mechanisms()
    if config.mechanism not in choices:
        raise ParameterError("mechanism", f"must be one of {', '.join(choices)}, got {config.mechanism!r}")
    if not 1 <= config.per_round <= clients:
        raise ParameterError("n", f"must be an integer in [1, `clients` = {clients}], got {config.per_round}")
    if config.mechanism == "corbin" and config.per_round % 2:
        raise ParameterError("n", "CorBin-FL pairs the sampled clients: use an even number")
    for declared, value in ((ROUNDS, config.rounds), (BATCH, config.batch), (HIDDEN, config.hidden), (LR, config.lr),
                            (CLIP, config.clip)):
        declared.convert(value)
    check_delta(config.dp_delta, "dp_delta")
    name = choices[config.mechanism][0]
    mechanism = make_mechanism(name, **config.params) if name else None
    if config.mechanism == "corbin" and mechanism.view != "marginal":
        raise ParameterError("view", "the FL run uses the clients' uplinks (marginal view)")
    return mechanism


def run(config: RunConfig, data: FederatedData, progress: Callable[[int, int], None] | None = None) -> dict:
    """Train and return {"rounds": per-round records (round, test loss, test accuracy),
    "summary": the run's record}: the mechanism and its ``parameters`` (as
    :meth:`~rdpcalc.mechanisms.base.Mechanism.parameters` gives them; ``{"clip": …}`` for
    clipped SGD), the run's settings, the final test accuracy and loss, and the accounted
    (ε, δ): ``epsilon`` at ``dp_delta`` (:func:`_privacy`)."""
    torch = _torch()
    from torch.func import functional_call, grad, vmap  # torch (the fl extra): start-up time

    clients = len(data.client_x)
    mechanism = check(config, clients)
    observer = fl_mechanisms()[config.mechanism][1]

    dimension = data.features * config.hidden + config.hidden + config.hidden * data.classes + data.classes
    resources.require(peak_memory(config, dimension, data), "hidden",
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
    final = history[-1]
    record = {"mechanism": config.mechanism,
              "parameters": {"clip": config.clip} if mechanism is None else mechanism.parameters(),
              "rounds": config.rounds, "clients": clients, "per_round": config.per_round, "lr": config.lr,
              "batch": config.batch, "hidden": config.hidden, "dimension": dimension, "seed": config.seed,
              "final_test_accuracy": final["test_accuracy"], "final_test_loss": final["test_loss"],
              **_privacy(mechanism, observer, config, clients, dimension)}
    return {"rounds": history, "summary": record}


def peak_memory(config: RunConfig, dimension: int, data: FederatedData) -> float:
    """Estimated peak bytes of a round: BYTES_PER_COORDINATE for each sampled client's
    coordinate (its float32 gradient, the float64 copy, the clipped inputs and the mechanism's
    draws and temporaries), the minibatches' activations and the test set's logits."""
    activations = 4 * 4 * (data.features + config.hidden + data.classes)
    return (config.per_round * dimension * BYTES_PER_COORDINATE + config.per_round * config.batch * activations
            + len(data.test_y) * activations)


def diverged(round_index: int, what: str, lr: float) -> ParameterError:
    """The refusal of a run whose training diverged: NaN or ±∞ reached ``what`` at this round
    (the model's coordinates overflowed), on ``lr``, the step size that drives it."""
    return ParameterError("lr", f"training diverged at round {round_index} ({what} not finite); lower `lr` (got {lr:g})")


def aggregate(config: RunConfig, mechanism, gradients: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The server's estimate of the mean clipped gradient from the clients' messages.

    Box clipping to the mechanism's input range per coordinate, or ℓ₂ clipping of the whole
    gradient where the mechanism's ``FL_CLIPPING`` says so (the quantized Gaussian, to C_q/2, as
    its Algorithm 1 does), then each coordinate through the mechanism,
    decoded unbiasedly (QMGeo is biased for p < 1; its decoding is the level value)."""
    if mechanism is None:
        return np.clip(gradients, -config.clip, config.clip).mean(axis=0)
    bound = float(mechanism.bound)
    if mechanism.FL_CLIPPING == "l2":
        norms = np.linalg.norm(gradients, axis=1, keepdims=True)
        clipped = gradients * np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    else:
        clipped = np.clip(gradients, -bound, bound)
    if config.mechanism in ("corbin", "ldp"):  # inputs are offsets from the center c
        clipped = np.clip(gradients - float(mechanism.c), -bound, bound)
    if config.mechanism == "corbin":
        first, second = mechanism.sample_pairs(clipped[0::2], clipped[1::2], rng)
        amplitude = float(mechanism.r) * float(mechanism.alpha)
        values = np.concatenate([2 * first - 1, 2 * second - 1]) * amplitude + float(mechanism.c)
        return values.mean(axis=0)
    decode = np.array([float(v) for v in mechanism.output_values()])
    return decode[mechanism.sample(clipped, rng)].mean(axis=0)


def _privacy(mechanism, observer, config: RunConfig, clients: int, dimension: int) -> dict:
    """The run's (ε, δ) from the accountant (per coordinate, composed over the model's
    coordinates and the rounds; the server knows the sample, so no amplification): ε by PLD,
    and by RDP beside it. ``dp_delta`` is the δ of (ε, δ), never a mechanism's parameter (RQM's
    Δ is ``parameters.delta``)."""
    if mechanism is None:
        return {"dp_delta": config.dp_delta, "epsilon": math.inf, "privacy": "none: clipped SGD without noise"}
    if config.mechanism == "corbin":
        return _paired_privacy(mechanism, config, clients, dimension)
    record = account(mechanism, n=config.per_round, clients=clients, rounds=config.rounds, dim=dimension,
                     dp_delta=config.dp_delta, observer=observer)
    return {"dp_delta": config.dp_delta, "epsilon": record["epsilon"], "method": record["epsilon_method"],
            "epsilon_rdp": record["epsilon_rdp"], "privacy": record["observer_text"], "report": record["report"]}


def _paired_privacy(uplink, config: RunConfig, clients: int, dimension: int) -> dict:
    """CorBin-FL's (ε, δ) against the server, which receives both messages of each pair: the
    pair's joint law (CorBin's ``view`` joint), not one uplink's. With shared bits (d ≥ 1) one
    input's change moves the joint support, D_∞ = +∞ at the extreme pair; then ε = +∞ (the
    worst case is at least that pair's). Otherwise the joint law is accounted like any local
    message. ``epsilon_uplink`` is one uplink's ε, what an eavesdropper on one client faces."""
    joint = replace(uplink, view="joint")
    pair = divergence(joint, alphas=[math.inf], choose=NeighbourOptions(x=joint.bound, x_prime=-joint.bound))[0]
    run = {"n": config.per_round, "clients": clients, "rounds": config.rounds, "dim": dimension,
           "dp_delta": config.dp_delta, "observer": "local"}
    one = account(uplink, **run)
    if pair["divergence"] == math.inf:
        return {"dp_delta": config.dp_delta, "epsilon": math.inf, "epsilon_uplink": one["epsilon"],
                "privacy": f"server: receives both messages of each pair, whose joint law is +∞ apart ({pair['reason']}); "
                           f"one uplink alone, to an eavesdropper: ε = {one['epsilon']:.6g}"}
    record = account(joint, **run)
    return {"dp_delta": config.dp_delta, "epsilon": record["epsilon"], "method": record["epsilon_method"],
            "epsilon_rdp": record["epsilon_rdp"], "epsilon_uplink": one["epsilon"],
            "privacy": "server: receives both messages of each pair (their joint law)", "report": record["report"]}
