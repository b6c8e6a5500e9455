"""The commands: for each, its options (:class:`~.options.Opt` rows) and a body that calls the
Python API and renders or exports the records. The per-mechanism commands (divergence, pmf,
bound, mc, account, calibrate) are built from the registered mechanisms' declarations, so a
newly registered mechanism appears in every command that :meth:`~rdpcalc.mechanisms.Mechanism.supports` it.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import typer
from rich.markup import escape

from .. import resources
from ..accountant import CLIENTS, DIM, METHOD, PER_ROUND_CURVE, RELATION, SAMPLED
from ..backend import fl, montecarlo
from ..backend.data import SPLIT
from ..backend.fl import fl_mechanisms
from ..bounds import bound
from ..compare import BITS, CLIP, COMPARED, WORKERS, compare, designs
from ..errors import ParameterError
from ..io import check_output_file, check_output_folder, to_csv, to_json, write_outputs
from ..layered import noise as layered_noise
from ..layered.noise import LAYERED_NOISES
from ..layered.tables import BITS_CLIENTS, layered_bits, layered_divergence
from ..mechanisms import FEATURES, MECHANISMS, Mechanism
from ..numerics import DPS, ENGINE
from ..orders import parse_alpha
from ..privacy.pld import DISCRETIZATION, DISCRETIZATION_STEP
from ..privacy.rdp import OBSERVER, SAMPLING_SCHEME
from ..queries import NeighbourOptions, divergence, make_mechanism, moments, pmf
from ..runs import (
    PARTICIPATION,
    REFERENCE_SOLVABLE,
    REFERENCES,
    REPORTED_EPSILON,
    ROUNDS,
    ROUNDS_CURVE_POINTS,
    SAMPLE_RATE,
    SCALE,
    SENSITIVITY,
    SIGMA,
    TARGET_EPSILON,
    RunOptions,
    account_reference_run,
    account_run,
    calibrate,
    participation_bound,
)
from ..runs import solvable as solvable_parameters
from ..version import VERSION
from ..worstcase.neighbours import BUDGET, CERTIFY_WITHIN, CLIENTS_IN_SUM, GRID, NEIGHBOURS, OTHERS_PLUS, SEED
from . import render
from .options import QUIET, Opt, command, default_text, from_param, hint, option
from .outputs import FL_FILES, run_figures, write_run

FORMATS = ("table", "json", "csv", "tsv")


# ----------------------------------------------------------------------------- shared options
def output_options(what: str = "records") -> list[Opt]:
    return [
        Opt("format", f"How to print the {what}: a table, JSON, CSV or TSV (to stdout).", kind=FORMATS, default="table",
            panel="Output"),
        Opt("as_json", "Print only JSON (a list of records) to stdout; the same as --format json.", kind=bool,
            option="--json", panel="Output"),
        Opt("csv", "Also write the records as CSV to FILE (all or nothing, after stdout).", metavar="FILE", panel="Output"),
        Opt("quiet", "No progress bar or hints on stderr, no 'wrote …' lines below a table.", kind=bool, option="--quiet",
            panel="Output"),
    ]


MAX_MEMORY = Opt("max_memory", "Refuse (exit 2, with the estimate) work whose estimated memory exceeds SIZE: 4G, 512M or "
                 f"25% of RAM. Default: ${resources.ENVIRONMENT_VARIABLE}, else {resources.DEFAULT_FRACTION:.0%} of RAM.",
                 metavar="SIZE", panel="Resources")
ORDER_OPTIONS = [
    Opt("alphas", "Rényi order ≥ 1 (1 = KL) or 'inf'; repeatable. Default: 1, 2, 10, inf.", option="--alpha",
        multiple=True, metavar="A", panel="Orders"),
    Opt("alpha_ranges", "A range of orders, log spaced unless ':lin' is added; repeatable.", option="--alphas",
        multiple=True, metavar="START:STOP:COUNT[:log|lin]", panel="Orders"),
]


def engine_options() -> list[Opt]:
    return [
        option(ENGINE, "Engine"),
        option(DPS, "Engine"),
    ]


def _setup(values: dict) -> str:
    """Apply --quiet and --max-memory; the output format (--json is --format json)."""
    QUIET["on"] = bool(values.pop("quiet", False))
    size = values.pop("max_memory", None)
    if size is not None:
        resources.set_budget(resources.parse_size(size, "max_memory"))
    as_json = values.pop("as_json", False)
    form = values.pop("format", "table")
    if as_json and form not in ("table", "json"):
        raise ParameterError("as_json", f"is --format json; it cannot be combined with --format {form}")
    return "json" if as_json else form


def _check_output(path: str | None, name: str = "csv") -> None:
    if path is not None:
        check_output_file(path, name)


def _check_distinct(paths: dict[str, str | None]) -> None:
    seen: dict[Path, str] = {}
    for name, path in paths.items():
        if path is None:
            continue
        resolved = Path(path).absolute()
        if resolved in seen:
            raise ParameterError(name, f"names the same file as `{seen[resolved]}`: {path!r}")
        seen[resolved] = name


def emit(records: list[dict], form: str, csv_path: str | None, draw: Callable[[list[dict]], None],
         files: Sequence[tuple[str | None, str, Callable[[], str | bytes]]] = (), rows: list[dict] | None = None) -> None:
    """Print the records in ``form`` (a table drawn by ``draw``, JSON, CSV or TSV), then write
    the CSV of ``rows`` (default: the records) and each of ``files`` — (path, name, contents)
    — whose path is given, all or none: a failing standard output leaves no file behind. Below
    a table, a "wrote FILE" line for each file (not with --quiet, nor in the machine formats)."""
    rows = records if rows is None else rows
    if form == "json":
        print(to_json(records))
    elif form in ("csv", "tsv"):
        sys.stdout.write(to_csv(rows, delimiter="," if form == "csv" else "\t"))
    else:
        draw(records)
    sys.stdout.flush()
    files = [(csv_path, "csv", lambda: to_csv(rows)), *files]
    written = [(path, contents(), name) for path, name, contents in files if path is not None]
    write_outputs(written)
    if form == "table" and not QUIET["on"]:
        for path, _, _ in written:
            print(f"wrote {path}")


def _records_body(compute: Callable[..., list[dict]], draw: Callable[[list[dict]], None]) -> Callable[..., None]:
    """A command body that checks --csv, computes the records from the other options and emits
    them (drawn by ``draw`` as a table)."""

    def body(**values) -> None:
        form = _setup(values)
        csv_path = values.pop("csv")
        _check_output(csv_path)
        emit(compute(**values), form, csv_path, draw)

    return body


def _examples(lines: Sequence[str]) -> str:
    return "Examples:\n\n" + "\n\n".join(f"  {escape(line)}" for line in lines)


# ----------------------------------------------------------------------------- mechanisms
def mechanism_options(cls: type[Mechanism], required: bool | None = None) -> list[Opt]:
    return [from_param(param, f"{cls.title} parameters", required) for param in cls.PARAMS]


def make(cls: type[Mechanism], values: dict) -> Mechanism:
    """The mechanism from its parameters in ``values`` (removed from it)."""
    params = {param.name: values.pop(param.name) for param in cls.PARAMS}

    return make_mechanism(cls.name, **{key: value for key, value in params.items() if value is not None})


def _example_parameters(cls: type[Mechanism], leave_out: str | None = None) -> str:
    """Typical parameters of ``cls`` for its help's examples: its ``EXAMPLE`` (option value
    pairs), else each parameter's default; without the parameter ``leave_out``."""
    pairs = list(getattr(cls, "EXAMPLE", {}).items()) or [(param.option, str(param.default)) for param in cls.PARAMS
                                                             if param.default is not None]
    if leave_out is not None:
        param = next(param for param in cls.PARAMS if param.name == leave_out)
        pairs = [(option, value) for option, value in pairs if option not in (param.option, *param.aliases)]
    return " ".join(f"{option} {value}" for option, value in pairs)


def _others_option(cls: type[Mechanism]) -> Opt:
    """--others-plus; --k-others and (unless the mechanism spells a parameter --k) --k are its
    deprecated spellings."""
    spelled = {spelling for param in cls.PARAMS for spelling in (param.option, *param.aliases)}
    old = ("--k-others",) if "--k" in spelled else ("--k", "--k-others")
    return option(OTHERS_PLUS, "Neighbours", metavar="K", deprecated=old)


def divergence_command(cls: type[Mechanism]):
    options = [
        *mechanism_options(cls),
        option(CLIENTS_IN_SUM, "Neighbours"),
        option(NEIGHBOURS, "Neighbours"),
        _others_option(cls),
        Opt("x", "Client 1's input under P (with --x-prime).", metavar="X", panel="Neighbours"),
        Opt("x_prime", "Client 1's input under Q (with --x).", metavar="X'", panel="Neighbours"),
        option(SEED, "Neighbours"),
        option(BUDGET, "Neighbours"),
        option(CERTIFY_WITHIN, "Neighbours", metavar="FRACTION"),
        option(GRID, "Neighbours"),
        Opt("margin", "One client, mechanisms whose pmf jumps at its levels (qmgeo): search the inputs kept ETA·Δ away "
            "from every level (0 < ETA < 1/2).", metavar="ETA", panel="Neighbours"),
        *ORDER_OPTIONS, *engine_options(), *output_options(), MAX_MEMORY,
    ]

    def body(**values) -> None:
        form = _setup(values)
        mechanism = make(cls, values)
        csv_path = values.pop("csv")
        _check_output(csv_path)
        with render.progress("worst case") as progress:
            choose, rest = NeighbourOptions.split(values)
            records = divergence(mechanism, choose=choose, progress=progress, **rest)
        emit(records, form, csv_path, lambda r: render.render_divergence(mechanism, r))

    params = _example_parameters(cls)
    examples = [f"rdpcalc divergence {cls.name} {params} --alpha 2 --alpha inf",
                f"rdpcalc divergence {cls.name} {params} --n 10 --alpha 2",
                f"rdpcalc divergence {cls.name} {params} --alphas 1.01:1000:20 --json"]
    return command(body, options), {"help": f"Exact Rényi divergences of {cls.title} between neighbouring inputs, for "
                                            "one client or the SecAgg sum of n clients.", "epilog": _examples(examples)}


def pmf_command(cls: type[Mechanism]):
    options = [*mechanism_options(cls),
               Opt("x", "The client's input.", metavar="X", required=True, panel="Input"),
               option(DPS, "Input", help="Digits of the computation, {range}."),
               *output_options(), MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        mechanism = make(cls, values)
        _check_output(values["csv"])
        records = pmf(mechanism, x=values["x"], dps=values["dps"])
        summary = moments(mechanism, x=values["x"], dps=values["dps"])
        emit(records, form, values["csv"], lambda r: render.render_pmf(mechanism, r, summary))

    params = _example_parameters(cls)
    return command(body, options), {
        "help": f"The single-client output pmf of {cls.title} at input X (mpmath), with the decoded output's mean, "
                "bias, variance and MSE.",
        "epilog": _examples([f"rdpcalc pmf {cls.name} {params} --x 0", f"rdpcalc pmf {cls.name} {params} --x 0 --csv pmf.csv"])}


def bound_command(cls: type[Mechanism]):
    options = [*mechanism_options(cls),
               *[from_param(param, "Bound parameters") for param in cls.BOUND_PARAMS],
               *ORDER_OPTIONS, *engine_options(), *output_options(), MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        extra = {param.name: values.pop(param.name) for param in cls.BOUND_PARAMS}
        mechanism = make(cls, values)
        csv_path = values.pop("csv")
        _check_output(csv_path)
        with render.progress("bounds") as progress:
            records = bound(mechanism, progress=progress, **values,
                            **{key: value for key, value in extra.items() if value is not None})
        emit(records, form, csv_path, lambda r: render.render_bound(mechanism, r))

    params = _example_parameters(cls)
    return command(body, options), {
        "help": f"The papers' bounds for {cls.title} beside the exact single-client D_α and D_∞.",
        "epilog": _examples([f"rdpcalc bound {cls.name} {params}", f"rdpcalc bound {cls.name} {params} --alpha 2 --json"])}


def mc_command(cls: type[Mechanism]):
    options = [*mechanism_options(cls),
               Opt("x", "The input of every sampled client.", metavar="X", required=True, panel="Sampling"),
               option(montecarlo.SAMPLES, "Sampling"),
               option(montecarlo.SEED, "Sampling"),
               option(montecarlo.SUMMED, "Sampling"),
               Opt("x_prime", "Also estimate D_α(P_X ‖ P_X') from samples, with a bootstrap interval.", metavar="X'",
                   panel="Divergence estimate"),
               Opt("alphas", "Order of the estimated divergence, finite and > 1.", option="--alpha", default="2",
                   panel="Divergence estimate"),
               option(montecarlo.BOOTSTRAP, "Divergence estimate"),
               *output_options(), MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        mechanism = make(cls, values)
        _check_output(values["csv"])
        alpha = None
        if values["x_prime"] is not None:  # checked before any sampling
            alpha = parse_alpha(values["alphas"])
            montecarlo.check_estimate(alpha, values["samples"], values["seed"] + 1, values["bootstrap"])
        with render.progress("sampling") as progress:
            records = [montecarlo.check(mechanism, values["x"], values["samples"], values["seed"], values["n"],
                                        progress=progress)]
        if alpha is not None:
            with render.progress("D_α estimate") as progress:
                records.append(montecarlo.divergence_estimate(mechanism, values["x"], values["x_prime"], alpha,
                                                              values["samples"], values["seed"] + 1, values["bootstrap"],
                                                              progress=progress))
        emit(records, form, values["csv"], lambda r: render.render_mc(mechanism, r))

    params = _example_parameters(cls)
    return command(body, options), {
        "help": f"Monte Carlo check of {cls.title}: its sampler against its exact pmf.",
        "epilog": _examples([f"rdpcalc mc {cls.name} {params} --x 0 --samples 1000000 --seed 0",
                             f"rdpcalc mc {cls.name} {params} --x 0 --n 10 --json"])}


# ----------------------------------------------------------------------------- accounting
def method_options() -> list[Opt]:
    return [
        option(METHOD, "Method", default=None, show="pld"),  # None: the default depends on the run
        option(DISCRETIZATION_STEP, "Method"),
    ]


def target_options(single: bool = False, epsilon_required: bool = False) -> list[Opt]:
    delta = Opt("dp_delta", "The δ of (ε, δ)-DP, in (0, 1)" + ("." if single else "; repeatable, one row each."),
                kind=float, default=(1e-5,) if not single else 1e-5, multiple=not single, show="1e-05",
                deprecated=("--delta-target",), panel="Target")
    epsilon = option(TARGET_EPSILON if epsilon_required else REPORTED_EPSILON, "Target", required=epsilon_required,
                     deprecated=("--target-eps",) if epsilon_required else ("--epsilon-target",))
    return [delta, epsilon]


def run_options() -> list[Opt]:
    return [
        option(SAMPLED, "Run"),
        option(CLIENTS, "Run"),
        option(ROUNDS, "Run"),
        option(DIM, "Run"),
        option(SAMPLING_SCHEME, "Run"),
        option(RELATION, "Threat model"),
        option(OBSERVER, "Threat model"),
        option(PARTICIPATION, "Threat model"),
        option(PER_ROUND_CURVE, "Threat model"),
        *engine_options(),
    ]


def reference_options(kind: str, required: bool = True) -> list[Opt]:
    return [option(SIGMA if kind == "gaussian" else SCALE, "Mechanism", required=required),
            option(SENSITIVITY, "Mechanism"),
            option(SAMPLE_RATE, "Run"),
            option(ROUNDS, "Run", help="Compositions, {range}."),
            option(SAMPLING_SCHEME, "Run", help="Sampling scheme.", default="poisson")]


PLOT = Opt("plot", "Also draw ε against δ and ε against rounds, both methods, to FILE (PNG); --curves then holds the "
           "same curves.", metavar="FILE", panel="Output")
CURVES = Opt("curves", "Also write the curves as CSV to FILE, one tidy table with a kind column: rdp-curve (the per-round "
             "and total Rényi curve) and, with --plot, epsilon-delta and epsilon-rounds. (--csv holds the results, one "
             "row per δ.)", metavar="FILE", panel="Output")


def _emit_account(run, records: list[dict], form: str, csv_path: str | None, plot_path: str | None,
                  curves_path: str | None = None) -> None:
    """Standard output first, then the files, all or none. The CSV (and --format csv) holds the
    results, one row per δ; ``curves_path`` the curves, one tidy table with a ``kind`` column —
    ``rdp-curve`` and, with --plot, ``epsilon-delta`` and ``epsilon-rounds``."""
    curves = None
    if plot_path is not None:
        _note_long_plot(run)
        with render.progress("ε against rounds") as progress:
            curves = {"epsilon-delta": run.epsilon_delta_curve(),
                      "epsilon-rounds": run.epsilon_rounds_curve(dp_delta=records[0]["dp_delta"], progress=progress)}

    def plot() -> bytes:
        from ..figures.plots import account_figure  # matplotlib: start-up time

        return account_figure(records[0], curves, plot_path.rsplit(".", 1)[-1].lower())

    emit(records, form, csv_path, render.render_account,
         [(curves_path, "curves", lambda: to_csv(render.curve_rows(records, curves))), (plot_path, "plot", plot)],
         rows=render.account_rows(records))


def _note_default_participation(values: dict, record: dict, dp_delta: float) -> None:
    """Where the observer knows a sample of n of the clients and --participation is not given,
    a note: the default accounts every round (the guarantee whoever is sampled), while a client
    takes part in far fewer; the K exceeded with probability at most δ/10
    (:func:`rdpcalc.runs.participation_bound`) and what --participation K then guarantees."""
    rate = record["n"] / record["clients"] if record.get("clients") else 1.0
    if values.get("participation") is not None or record["observer"] == "release" or rate >= 1:
        return
    rounds, tail = record["rounds"], dp_delta / 10
    bound = participation_bound(rounds, rate, tail)
    hint(f"ε is over all {rounds} rounds (--participation's default: every client, whoever is sampled); sampled at "
         f"rate {rate:.4g}, a client takes part in {rounds * rate:.4g} rounds on average and in more than {bound} with "
         f"probability at most {tail:.2g}: --participation {bound} gives (ε, δ + {tail:.2g}) for every client "
         "(README: Which ε to report)")


#: a grid step at most this (nats) gets a note on what it costs (the default is 1e-4)
FINE_DISCRETIZATION = 1e-5
#: runs of at least this many composed rounds get a note on what --plot's curve costs
LONG_RUN_ROUNDS = 10_000


def _note_fine_grid(values: dict) -> None:
    """Before the work: a note when --discretization makes the PLD grids much longer than the
    default's (their length, and the PLD stage's time, grow about as the ratio)."""
    step = values.get("discretization")
    if values.get("method") != "rdp" and step is not None and step <= FINE_DISCRETIZATION:
        ratio = f"{DISCRETIZATION / step:.3g}×"
        hint(f"--discretization {_short(step)} makes every privacy-loss grid {ratio} longer than the default "
             f"{_short(DISCRETIZATION)}, and the PLD stage up to {ratio} slower")


def _short(value: float) -> str:
    """A grid step in powers of ten, as the help writes it: 1e-4, 2.5e-6."""
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _note_long_plot(run) -> None:
    """Before --plot's curves: a note when the run is long, since ε against rounds composes it again."""
    if run.count >= LONG_RUN_ROUNDS:
        hint(f"--plot: the curve of ε against rounds composes the run again at up to {ROUNDS_CURVE_POINTS} numbers of "
             f"rounds (up to {run.count:,}), each about as long as the composition just done")


def _check_account_outputs(values: dict) -> None:
    _check_output(values["csv"])
    if values.get("curves") is not None:
        _check_output(values["curves"], "curves")
    if values.get("plot") is not None:
        _check_output(values["plot"], "plot")
        if not values["plot"].lower().endswith((".png", ".pdf", ".svg")):
            raise ParameterError("plot", f"must name a .png, .pdf or .svg file, got {values['plot']!r}")
    _check_distinct({"csv": values["csv"], "plot": values.get("plot"), "curves": values.get("curves")})


def account_command(cls: type[Mechanism]):
    options = [*mechanism_options(cls), *run_options(), *target_options(), *method_options(), *output_options(), PLOT,
               CURVES, MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        mechanism = make(cls, values)
        deltas, epsilon = values.pop("dp_delta"), values.pop("dp_epsilon")
        csv_path, plot_path, curves_path = values.pop("csv"), values.pop("plot"), values.pop("curves")
        _check_account_outputs({"csv": csv_path, "plot": plot_path, "curves": curves_path})
        _note_fine_grid(values)
        with render.progress("accounting") as progress:
            run, rest = RunOptions.split(values)
            accounted = account_run(mechanism, run=run, progress=progress, **rest)
        records = accounted.records(dp_deltas=deltas, dp_epsilon=epsilon)
        _note_default_participation(values, records[0], min(deltas))
        _emit_account(accounted, records, form, csv_path, plot_path, curves_path)

    params = _example_parameters(cls)
    return command(body, options), {
        "help": f"(ε, δ) of a training run with {cls.title}: coordinates, rounds, client sampling.",
        "epilog": _examples([f"rdpcalc account {cls.name} {params} --n 10 --rounds 100 --dp-delta 1e-5",
                             f"rdpcalc account {cls.name} {params} --n 10 --clients 1000 --rounds 100 --observer release",
                             f"rdpcalc account {cls.name} {params} --rounds 100 --plot run.png --csv run.csv"])}


def account_reference_command(kind: str):
    options = [*reference_options(kind), *target_options(), *method_options(), *output_options(), PLOT, CURVES,
               MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        deltas, epsilon = values.pop("dp_delta"), values.pop("dp_epsilon")
        csv_path, plot_path, curves_path = values.pop("csv"), values.pop("plot"), values.pop("curves")
        _check_account_outputs({"csv": csv_path, "plot": plot_path, "curves": curves_path})
        _note_fine_grid(values)
        accounted = account_reference_run(kind, **values)
        records = accounted.records(dp_deltas=deltas, dp_epsilon=epsilon)
        _emit_account(accounted, records, form, csv_path, plot_path, curves_path)

    scale = "--sigma 1.1" if kind == "gaussian" else "--scale 2"
    return command(body, options), {
        "help": f"(ε, δ) of the {kind} mechanism composed over rounds, with sampling.",
        "epilog": _examples([f"rdpcalc account {kind} {scale} --sample-rate 0.01 --rounds 1000 --dp-delta 1e-5"])}


def _solve_names(cls_or_kind, solvable: tuple[str, ...]) -> dict[str, str]:
    """--solve's spellings → the parameter's API name: each option's own name first (RQM's Δ is
    ``extension``), then its aliases and the API name (``delta``)."""
    params = [] if isinstance(cls_or_kind, str) else [p for p in cls_or_kind.PARAMS if p.name in solvable]
    names = {param.option.removeprefix("--"): param.name for param in params}
    for param in params:
        names.update({alias.removeprefix("--"): param.name for alias in param.aliases if alias.removeprefix("--") not in names})
    names.update({name: name for name in solvable if name not in names})
    return names


def calibrate_command(cls_or_kind):
    reference = isinstance(cls_or_kind, str)
    name = cls_or_kind if reference else cls_or_kind.name
    solve_names = _solve_names(cls_or_kind, tuple(solvable_parameters(name)))
    solvable = tuple(solve_names)
    common = [Opt("solve", "The parameter to solve for, as its option is spelled (the parameter's API name, or the "
                           "paper's alias, too).", kind=solvable, required=True, panel="Calibration"),
              Opt("solve_range", "The range searched for --solve, 0 < LOW < HIGH (default: the parameter's own). Its "
                                 "ends are evaluated first: a target outside the ε they reach is refused at once.",
                  option="--range", metavar="LOW:HIGH", panel="Calibration"),
              *target_options(single=True, epsilon_required=True)]
    if reference:
        options = [*common, *reference_options(name, required=False), *method_options(), *output_options(), MAX_MEMORY]
    else:
        options = [*common, *mechanism_options(cls_or_kind, required=False), *run_options(), *method_options(),
                   *output_options(), MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        spelled = values.pop("solve")
        solve, target, delta = solve_names[spelled], values.pop("dp_epsilon"), values.pop("dp_delta")
        solve_range = values.pop("solve_range")
        if solve_range is not None:
            low, colon, high = solve_range.partition(":")
            if not colon:
                raise ParameterError("solve_range", f"must be LOW:HIGH, got {solve_range!r}")
            solve_range = (low, high)
        csv_path = values.pop("csv")
        _check_output(csv_path)
        names = ("sigma", "scale") if reference else [param.name for param in cls_or_kind.PARAMS]
        # calibrate checks the parameters (each required one but `solve` given)
        params = {key: values.pop(key) for key in names if key in values}
        params = {key: value for key, value in params.items() if key != solve and value is not None}
        _note_fine_grid(values)
        with render.progress(f"calibrating {spelled}: evaluations of ε", eta=False) as progress:
            record = calibrate(name, params=params, solve=solve, solve_range=solve_range, dp_epsilon=target,
                               dp_delta=delta, progress=progress, **values)
        _emit_account(None, [record], form, csv_path, None)

    return command(body, options), {
        "help": f"Solve for the parameter of {name} that meets a target ε over a whole run.",
        "epilog": _examples([calibrate_example(cls_or_kind)])}


def calibrate_example(cls_or_kind) -> str:
    """The example of ``rdpcalc calibrate NAME --help`` (a mechanism class, or a reference's
    name): a run and a target it can meet, solving for its first solvable parameter."""
    if isinstance(cls_or_kind, str):
        solve = next(iter(_solve_names(cls_or_kind, tuple(solvable_parameters(cls_or_kind)))))
        return f"rdpcalc calibrate {cls_or_kind} --dp-epsilon 1 --sample-rate 0.01 --rounds 1000 --solve {solve}"
    solve_names = _solve_names(cls_or_kind, tuple(solvable_parameters(cls_or_kind.name)))
    solve = next(iter(solve_names))
    parts = ("rdpcalc calibrate", cls_or_kind.name, _example_parameters(cls_or_kind, solve_names[solve]),
             cls_or_kind.CALIBRATE_EXAMPLE, f"--solve {solve}")
    return " ".join(part for part in parts if part)


# ----------------------------------------------------------------------------- layered quantizers
def layered_options() -> list[Opt]:
    """The layered quantizers' own options (``divergence layered``)."""
    return [option(layered_noise.NOISE, "Mechanism"),
            Opt("sigma", "Standard deviation σ > 0 of the error.", default="1", panel="Mechanism"),
            Opt("sensitivity", "Shift Δ > 0 between neighbouring inputs.", default="1", panel="Mechanism"),
            option(layered_noise.CLIENTS, "Mechanism")]


def layered_divergence_command():
    options = [*layered_options(), *ORDER_OPTIONS, *output_options(), MAX_MEMORY]

    def compute(noise: str, **values) -> list[dict]:
        return layered_divergence(noise, **values)

    return command(_records_body(compute, render.render_layered_divergence), options), {
        "help": "Rényi divergences of the layered quantizers: the error is exactly the target noise.",
        "epilog": _examples(["rdpcalc divergence layered --noise gauss --sigma 2 --sensitivity 1 --alpha 2 --alpha inf",
                             "rdpcalc divergence layered --noise irwin-hall --n 10 --sigma 1 --alpha 2"])}


def layered_bits_command():
    options = [option(layered_noise.NOISE, "Mechanism", help="Target error distribution.", kind=LAYERED_NOISES),
               Opt("sigma", "Standard deviation σ > 0 of the error.", default="1", panel="Mechanism"),
               Opt("t", "Length t > 0 of the interval the inputs lie in.", default="64", panel="Mechanism"),
               option(BITS_CLIENTS, "Mechanism"),
               *output_options(), MAX_MEMORY]

    def compute(noise: str, **values) -> list[dict]:
        return layered_bits(noise, **values)

    return command(_records_body(compute, render.render_layered_bits), options), {
        "help": "Bits per client of the layered quantizers: exact entropies, the paper's bounds, step sizes.",
        "epilog": _examples(["rdpcalc bits layered --noise gauss --sigma 1 --t 64",
                             "rdpcalc bits layered --noise gauss --sigma 1 --t 2048 --n 100",
                             "rdpcalc bits layered --noise laplace --sigma 3 --t 1024 --json"])}


# ----------------------------------------------------------------------------- federated runs
def _fl_parameter_options(mechanisms: dict) -> list[Opt]:
    """Every FL mechanism's parameters once, by option spelling (``--c`` sets RQM's c, QMGeo's
    W, CorBin's r): all optional; the chosen mechanism's are passed on."""
    seen: dict[str, Opt] = {}
    users: dict[str, list[str]] = {}
    aliases: dict[str, list[str]] = {}
    for name, cls in mechanisms.items():
        if cls is None or name == "ldp":
            continue
        for param in cls.PARAMS:
            users.setdefault(param.option, []).append(name)
            aliases.setdefault(param.option, []).extend(alias for alias in param.aliases
                                                        if alias not in aliases[param.option])
            seen.setdefault(param.option, from_param(param, "Mechanism parameters", required=False))
    options = []
    for spelling, opt in seen.items():
        key = "mechanism_" + spelling.lstrip("-").replace("-", "_")
        options.append(Opt(key, f"({', '.join(users[spelling])}) {opt.help}", kind=opt.kind, option=spelling,
                           aliases=tuple(alias for alias in aliases[spelling] if alias not in seen),
                           alias_note=opt.alias_note, deprecated=opt.deprecated, panel="Mechanism parameters",
                           show=opt.show, metavar=opt.metavar))
    return options


def _fl_options(mechanisms: dict, parameter_options: list) -> list:
    """The options of ``rdpcalc fl``: the run, the training, the data, every mechanism's own
    parameters (qgauss's --clip is the run's) and the output."""
    return [
        Opt("mechanism", "none: clipped SGD; ldp: LDP-FL; corbin: CorBin-FL (pairs); or a mechanism per coordinate.",
            kind=tuple(mechanisms), default="none", panel="Run"),
        option(fl.ROUNDS, "Run"),
        option(fl.CLIENTS, "Run"),
        option(fl.SAMPLED, "Run", deprecated=("--per-round",)),
        option(fl.LR, "Training"),
        option(fl.BATCH, "Training"),
        option(fl.HIDDEN, "Training"),
        Opt("clip", "none: the clipping bound of plain clipped SGD; qgauss: its C_q.", kind=str, panel="Training"),
        option(SPLIT, "Data"),
        Opt("images", "MNIST/EMNIST images (IDX, .gz ok) instead of scikit-learn's digits.", metavar="FILE", panel="Data"),
        Opt("labels", "The matching labels file (IDX).", metavar="FILE", panel="Data"),
        option(fl.SEED, "Run"),
        Opt("dp_delta", "δ of the run's accounted (ε, δ), in (0, 1).", kind=float, default=1e-5,
            deprecated=("--delta-target",), panel="Run"),
        *[opt for opt in parameter_options if opt.option != "--clip"],
        Opt("out", "Write fl.csv, fl.meta.json, summary.json and fl.png into DIR.", metavar="DIR", panel="Output"),
        Opt("force", "Overwrite files in --out that rdpcalc did not write.", kind=bool, panel="Output"),
        Opt("as_json", "Print only the summary as JSON.", kind=bool, option="--json", panel="Output"),
        Opt("quiet", "No progress bar or hints on stderr.", kind=bool, panel="Output"),
        MAX_MEMORY,
    ]


def _fl_params(name: str, cls, values: dict, by_spelling: dict) -> tuple[dict, object]:
    """The parameters of ``--mechanism`` ``name`` (``cls``, None for clipped SGD) taken out of
    the command's ``values``, and the clipped-SGD bound ``clip`` (None where the mechanism
    takes --clip as its own, qgauss's C_q); an option of another mechanism, or a required one
    missing, is refused."""
    given = {spelling: (key, values.pop(key)) for spelling, key in by_spelling.items() if key in values}
    own = {param.option: param for param in (cls.PARAMS if cls is not None else ())}
    foreign = [key for spelling, (key, value) in given.items() if value is not None and spelling not in own]
    if foreign:
        raise ParameterError(foreign[0], f"is not a parameter of --mechanism {name}")
    clip = values.pop("clip")
    params = {}
    for spelling, param in own.items():
        value = clip if spelling == "--clip" else given.get(spelling, (None, None))[1]
        if value is not None:
            params[param.name] = value
        elif param.required:
            raise ParameterError(param.name, f"is required for --mechanism {name}: {param.help}")
    if "--clip" in own:
        return params, None
    if clip is not None and cls is not None:
        raise ParameterError("clip", f"is not a parameter of --mechanism {name} (clipped SGD's bound with --mechanism "
                                     "none, qgauss's C_q)")
    return params, clip


def fl_command():
    mechanisms = {choice: None if name is None else MECHANISMS[name] for choice, (name, _) in fl_mechanisms().items()}
    parameter_options = _fl_parameter_options(mechanisms)
    options = _fl_options(mechanisms, parameter_options)
    by_spelling = {opt.option: opt.name for opt in parameter_options}

    def body(**values) -> None:
        as_json = _setup(values) == "json"
        name = values.pop("mechanism")
        params, clip = _fl_params(name, mechanisms[name], values, by_spelling)
        out_dir, force = values.pop("out"), values.pop("force")
        if out_dir is not None:  # before the data are read
            check_output_folder(out_dir, FL_FILES, "out", force)
        data = fl.DataOptions(**{key: values.pop(key) for key in ("clients", "split", "images", "labels")})
        config = fl.configure(mechanism=name, params=params, clip=clip, **values)
        federated = fl.load(config, data)
        with render.progress(f"FL {name}") as progress:
            result = fl.run(config, federated, progress)
        summary = result["summary"]
        if as_json:
            print(to_json([summary]))
        sys.stdout.flush()
        if out_dir is not None:
            write_run(Path(out_dir), result)
        if not as_json:
            render.render_fl(summary, out_dir)

    return command(body, options), {
        "help": "Federated training on scikit-learn's digits (or local IDX files) with a mechanism per coordinate, "
                "SecAgg sum and unbiased decoding; loss/accuracy per round and the accounted (ε, δ).",
        "epilog": _examples(["rdpcalc fl --mechanism none --clip 0.05 --rounds 200 --clients 100 --n 10 --out runs/baseline",
                             "rdpcalc fl --mechanism rqm --c 0.05 --extension 0.05 --levels 16 --q 0.42 --rounds 200 "
                             "--clients 100 --n 10 --seed 0 --out runs/rqm",
                             "rdpcalc fl --mechanism pbm --c 0.05 --theta 0.25 --trials 16 --split label --out runs/pbm"])}


# ----------------------------------------------------------------------------- claims, figures, mechanisms
def claims_command():
    options = [Opt("paper", "Only this paper's claims.", kind=("rqm", "qgauss", "qmgeo", "corbin", "layered")),
               *output_options(),
               Opt("markdown", "Also write a Markdown table to FILE.", metavar="FILE", panel="Output"), MAX_MEMORY]

    def body(**values) -> None:
        from .. import claims  # scipy (the layered claims): start-up time

        form = _setup(values)
        _check_output(values["csv"])
        _check_output(values["markdown"], "markdown")
        _check_distinct({"csv": values["csv"], "markdown": values["markdown"]})
        with render.progress("claims") as progress:
            records = claims.evaluate(values["paper"], progress)
        emit(records, form, values["csv"], render.render_claims,
             [(values["markdown"], "markdown", lambda: claims.to_markdown(records))])

    return command(body, options), {
        "help": "Which of the papers' numerical claims hold: each recomputed, with our values and a verdict.",
        "epilog": _examples(["rdpcalc claims", "rdpcalc claims --paper qmgeo --json",
                             "rdpcalc claims --markdown figures/claims.md"])}


def figures_command():
    options = [Opt("out", "Folder for the PNG, CSV, meta JSON and README.md files (created if missing).",
                   default="figures", metavar="DIR"),
               Opt("force", "Overwrite files in DIR that rdpcalc did not write.", kind=bool),
               Opt("list_only", "List the figure IDs and exit.", kind=bool, option="--list"),
               Opt("image_format", "Image format: png, pdf or svg; repeat for several (each figure in each).",
                   multiple=True, default=["png"], show="png", metavar="[png|pdf|svg]"),
               Opt("quiet", "No progress bar or per-figure lines on stderr.", kind=bool), MAX_MEMORY]

    def body(ids: list[str] | None = None, **values) -> None:
        _setup(values)
        run_figures(ids or [], values["out"], values["force"], values["list_only"], values["image_format"])

    run = command(body, options)

    signature = inspect.signature(run)
    ids = inspect.Parameter("ids", inspect.Parameter.KEYWORD_ONLY, annotation=list[str] | None,
                            default=typer.Argument(None, metavar="[ID ...|all]", help="Figure IDs, or all (see --list)."))
    run.__signature__ = signature.replace(parameters=[ids, *signature.parameters.values()])
    return run, {
        "help": "Regenerate the papers' privacy figures: PNG + CSV (+ meta JSON) each, and an index README.md. Files "
                "already in DIR are overwritten only if rdpcalc wrote them (DIR/.rdpcalc-written lists them) or with "
                "--force.",
        "epilog": _examples(["rdpcalc figures --list", "rdpcalc figures all --out figures",
                             "rdpcalc figures rqm-fig2-right --out /tmp/figs"])}


def compare_command():
    options = [option(COMPARED, "Run", required=True),
               option(BITS, "Run", required=True),
               Opt("dp_epsilon", "The ε of the whole run to meet, > 0.", kind=float, required=True, panel="Target"),
               Opt("dp_delta", "The δ of (ε, δ)-DP, in (0, 1).", kind=float, default=1e-5, panel="Target"),
               option(ROUNDS, "Run"),
               option(CLIENTS, "Run"),
               option(DIM, "Run"),
               option(SAMPLING_SCHEME, "Run"),
               option(OBSERVER, "Run", help="Who sees what (as for account)."),
               option(RELATION, "Run"),
               option(PARTICIPATION, "Run"),
               option(CLIP, "Run", kind=str, metavar="NUMBER"),
               Opt("mechanisms", f"Comma-separated mechanisms to compare (default {','.join(designs())}).",
                   default=",".join(designs()), metavar="LIST", panel="Run"),
               option(WORKERS, "Execution"),
               *output_options(), MAX_MEMORY]

    def body(**values) -> None:
        form = _setup(values)
        csv_path = values.pop("csv")
        _check_output(csv_path)
        values["mechanisms"] = [name.strip() for name in values["mechanisms"].split(",") if name.strip()]
        with render.progress("calibrating") as progress:
            run, rest = RunOptions.split(values)
            records = compare(run, progress=progress, **rest)
        emit(records, form, csv_path, render.render_compare)

    rules = "; ".join(f"{name}: {design.rule}" for name, design in designs().items())
    return command(body, options), {
        "help": "Which mechanism at equal bits: calibrate each mechanism's noise to a target (ε, δ) for a run and "
                "tabulate the MSE of the decoded SecAgg sum (exact, from the pmfs) at B bits per coordinate. "
                f"Designs: {rules}.",
        "epilog": _examples(["rdpcalc compare --n 40 --bits 12 --dp-epsilon 1",
                             "rdpcalc compare --n 1000 --bits 16 --dp-epsilon 1 --mechanisms ddg,skellam,binomial",
                             "rdpcalc compare --n 1000 --bits 16 --dp-epsilon 1 --workers 2",
                             "rdpcalc compare --n 100 --bits 14 --dp-epsilon 4 --rounds 50 --csv compare.csv"])}


def _sweep_options() -> list:
    """The options of ``rdpcalc sweep``: the spec, the output and where the points run."""
    return [Opt("spec", "The sweep: a TOML file of [[task]] tables (command, mechanism, fixed, grid, points); "
                           "--example prints one.", argument=True, metavar="SPEC.toml"),
               Opt("example", "Print an example spec (every key explained) and exit.", kind=bool, panel="Output"),
               Opt("output", "The table: FILE.csv or FILE.parquet (default: SPEC's name with .csv, in the current "
                             "folder).", metavar="FILE", panel="Output"),
               Opt("resume", "Finish an interrupted sweep: run only the points its journal (FILE.journal) lacks.",
                   kind=bool, panel="Output"),
               Opt("checkpoint", "Rewrite the table from the journal every SECONDS while the sweep runs, > 0.",
                   kind=float, default=30.0, metavar="SECONDS", panel="Output"),
               Opt("quiet", "No progress bar or summary on stderr.", kind=bool, option="--quiet", panel="Output"),
               Opt("scheduler", "Run on an existing dask.distributed cluster: its scheduler's address.",
                   metavar="tcp://HOST:PORT", panel="Execution"),
               Opt("workers", "Worker processes of the embedded LocalCluster, 1 … four per core (default: one per "
                              "core).", kind=int,
                   panel="Execution"),
               Opt("serial", "Run every point in this process, one after the other (no dask).", kind=bool,
                   panel="Execution")]


def _check_execution(serial: bool, scheduler: str | None, workers: int | None) -> None:
    """Where a sweep runs: at most one of --serial, --scheduler and --workers (the last two
    need dask.distributed), each within its range."""
    from .. import sweep  # start-up time

    chosen = [name for name, on in (("serial", serial), ("scheduler", scheduler is not None),
                                    ("workers", workers is not None)) if on]
    if serial and len(chosen) > 1:
        raise ParameterError(chosen[1], "cannot be combined with --serial")
    if scheduler is not None and workers is not None:
        raise ParameterError("workers", "sizes the embedded LocalCluster: it cannot be combined with --scheduler")
    if not serial:
        _require_module("distributed", "serial", "a sweep on dask needs dask.distributed (or give --serial)")
    if scheduler is not None:
        sweep.check_scheduler(scheduler)
    if workers is not None:
        sweep.check_workers(workers)


def sweep_command():
    options = _sweep_options()

    def body(spec: str | None, example: bool, output: str | None, resume: bool, checkpoint: float, quiet: bool,
             scheduler: str | None, workers: int | None, serial: bool) -> None:
        from .. import sweep  # start-up time

        QUIET["on"] = quiet
        if example:
            sys.stdout.write(sweep.EXAMPLE_SPEC)
            return
        if spec is None:
            raise ParameterError("spec", "is required: a TOML file of [[task]] tables ('rdpcalc sweep --example' prints "
                                         "one)")
        if not checkpoint > 0:
            raise ParameterError("checkpoint", f"must be > 0 seconds, got {checkpoint!r}")
        _check_execution(serial, scheduler, workers)
        points = sweep.load_spec(spec)
        target = Path(output) if output is not None else Path(Path(spec).stem + ".csv")
        check_output_file(target, "output")
        check_output_file(sweep.journal_path(target), "output")
        if sweep.table_format(target) == "parquet":
            _require_module("pyarrow", "output", "Parquet output needs pyarrow")
        with render.progress("sweep") as progress:
            outcome = sweep.run_sweep(points, target, resume=resume, serial=serial, scheduler=scheduler,
                                      workers=workers, checkpoint=checkpoint, progress=progress)
        if not quiet:
            where = "in this process" if serial else f"on {scheduler}" if scheduler else "on a LocalCluster"
            text = (f"wrote {target}: {outcome.rows} rows from {outcome.points} points ({outcome.ran} run {where}"
                    + (f", {outcome.resumed} from the journal" if outcome.resumed else "") + ")")
            print(f"rdpcalc: {text}", file=sys.stderr)
            if outcome.failed:
                print(f"rdpcalc: note: {outcome.failed} point{'s' if outcome.failed > 1 else ''} failed: see the "
                      "table's error column", file=sys.stderr)

    return command(body, options), {
        "help": "Run a grid of divergence, bound, account, calibrate, compare, pmf or moments computations from a TOML "
                "spec into one tidy CSV/Parquet table (one row per record, the parameters as param_* columns), on "
                "dask.distributed: an embedded LocalCluster by default, or --scheduler for a cluster. The table "
                "grows as points finish; --resume finishes a sweep that was stopped.",
        "epilog": _examples(["rdpcalc sweep sweep.toml --output sweep.csv",
                             "rdpcalc sweep sweep.toml --output sweep.parquet --workers 2",
                             "rdpcalc sweep sweep.toml --output sweep.csv --resume",
                             "rdpcalc sweep sweep.toml --scheduler tcp://10.0.0.5:8786",
                             "rdpcalc sweep sweep.toml --serial",
                             "rdpcalc sweep --example > sweep.toml"])}


def _require_module(module: str, parameter: str, what: str) -> None:
    """Refuse (naming ``parameter``) when ``module`` of the ``[distributed]`` extra is missing."""
    if importlib.util.find_spec(module) is None:
        raise ParameterError(parameter, f"{what}: pip install 'rdpcalc[distributed]'")


def mechanisms_command():
    options = [*output_options("mechanisms")]

    def compute() -> list[dict]:
        return [*(mechanism_record(cls) for cls in MECHANISMS.values()), *reference_records()]

    return command(_records_body(compute, render.render_mechanisms), options), {
        "help": "Every mechanism: its parameters (options, aliases, ranges, defaults), its paper, and the commands it "
                "supports; the registered ones (kind registered), then the reference Gaussian and Laplace and the "
                "layered quantizers (kind reference), which have commands of their own.",
        "epilog": _examples(["rdpcalc mechanisms", "rdpcalc mechanisms --json"])}


#: the mechanisms outside the registry: name, title, paper, their options and their commands
REFERENCE_MECHANISMS = (
    ("gaussian", "Gaussian mechanism (reference)",
     "Mironov (2017), \"Rényi Differential Privacy\", arXiv:1702.07476 (its RDP curve); accounted as dp-accounting does",
     lambda: reference_options("gaussian"), ("account", "calibrate")),
    ("laplace", "Laplace mechanism (reference)",
     "Mironov (2017), \"Rényi Differential Privacy\", arXiv:1702.07476 (its RDP curve)",
     lambda: reference_options("laplace"), ("account", "calibrate")),
    ("layered", "Layered quantizers (exact Gaussian / Laplace error) and the Irwin–Hall mechanism",
     "Hegazy, Leluc, Li & Dieuleveut (2024), \"Compression with Exact Error Distribution for Federated Learning\", "
     "AISTATS 2024, arXiv:2310.20682", layered_options, ("divergence", "bits")),
)


def reference_records() -> list[dict]:
    """The mechanisms of :data:`REFERENCE_MECHANISMS` as records like :func:`mechanism_record`'s
    (kind ``reference``; each parameter's range is its option's help)."""
    records = []
    for name, title, paper, options, commands in REFERENCE_MECHANISMS:
        parameters = [{"name": opt.name, "option": opt.spelling, "aliases": list(opt.aliases), "range": opt.help.rstrip("."),
                       "default": None if opt.default is None else default_text(opt.default), "help": opt.help}
                      for opt in options() if opt.panel == "Mechanism"]
        records.append({"mechanism": name, "kind": "reference", "title": title, "paper": paper,
                        "parameters": parameters, "bound_parameters": [],
                        "solvable": list(REFERENCE_SOLVABLE.get(name, {})), "fl_observer": None,
                        "commands": list(commands)})
    return records


def mechanism_record(cls: type[Mechanism]) -> dict:
    """One mechanism as a record: name, title, paper, parameters and supported commands."""
    parameters = [{"name": param.name, "option": param.option, "aliases": list(param.aliases),
                   "range": param.range_text().removeprefix("must be "),
                   "default": None if param.default is None else default_text(param.default), "help": param.help}
                  for param in (*cls.PARAMS, *cls.BOUND_PARAMS)]
    return {"mechanism": cls.name, "kind": "registered", "title": cls.title, "paper": cls.paper, "parameters": parameters,
            "bound_parameters": [param.name for param in cls.BOUND_PARAMS],
            "solvable": list(cls.solvable()), "fl_observer": cls.FL_OBSERVER,
            "commands": [feature for feature in FEATURES if cls.supports(feature)]}


# ----------------------------------------------------------------------------- the application
ANALYSIS, ACCOUNTING, REPORTS = "Exact analysis", "Accounting", "Reports and runs"
GROUPS = {
    "divergence": ("Exact Rényi divergences between worst-case neighbouring inputs.", divergence_command, ANALYSIS),
    "pmf": ("The single-client output pmf.", pmf_command, ANALYSIS),
    "bound": ("The papers' bounds beside the exact values.", bound_command, ANALYSIS),
    "mc": ("Monte Carlo checks of the samplers against the exact pmfs.", mc_command, ANALYSIS),
    "account": ("(ε, δ) of a whole training run.", account_command, ACCOUNTING),
    "calibrate": ("Solve for a parameter that meets a target ε.", calibrate_command, ACCOUNTING),
}


def build_app():
    """The typer application, built from the registered mechanisms (so a mechanism registered
    before the call appears in every command it supports)."""
    app = typer.Typer(name="rdpcalc", rich_markup_mode="rich", pretty_exceptions_enable=False, add_completion=True,
                      context_settings={"help_option_names": ["-h", "--help"]},
                      help="rdpcalc: exact Rényi-DP accounting for quantization-based federated-learning mechanisms.\n\n"
                           f"Mechanisms: {', '.join(MECHANISMS)} (see 'rdpcalc mechanisms'), layered, and the "
                           "reference gaussian and laplace (account, calibrate). Run 'rdpcalc COMMAND MECHANISM --help' "
                           "for the options and examples of each.")

    def version(value: bool) -> None:
        if value:
            print(f"rdpcalc {VERSION}")
            raise typer.Exit()

    @app.callback(invoke_without_command=True)
    def root(ctx: typer.Context, show_version: bool = typer.Option(False, "--version", callback=version, is_eager=True,
                                                                    help="Print the version and exit.")) -> None:
        if ctx.invoked_subcommand is None:
            print(ctx.get_help())

    subgroups = {}
    for group, (help_text, factory, panel) in GROUPS.items():
        sub = typer.Typer(help=help_text, no_args_is_help=False, invoke_without_command=True)
        sub.callback(invoke_without_command=True)(_group_help)
        for cls in MECHANISMS.values():
            if cls.supports(group):
                function, texts = factory(cls)
                sub.command(cls.name, **texts)(function)
        if group in ("account", "calibrate"):
            for kind in REFERENCES:
                function, texts = (account_reference_command if group == "account" else calibrate_command)(kind)
                sub.command(kind, **texts)(function)
        subgroups[group] = sub
        app.add_typer(sub, name=group, rich_help_panel=panel)
    function, texts = layered_divergence_command()
    subgroups["divergence"].command("layered", **texts)(function)
    bits = typer.Typer(help="Communication cost in bits.", invoke_without_command=True)
    bits.callback(invoke_without_command=True)(_group_help)
    function, texts = layered_bits_command()
    bits.command("layered", **texts)(function)
    app.add_typer(bits, name="bits", rich_help_panel=ANALYSIS)
    function, texts = compare_command()
    app.command("compare", rich_help_panel=ACCOUNTING, **texts)(function)
    function, texts = sweep_command()
    app.command("sweep", rich_help_panel=REPORTS, **texts)(function)
    for name, factory in (("mechanisms", mechanisms_command), ("claims", claims_command), ("figures", figures_command),
                          ("fl", fl_command)):
        function, texts = factory()
        app.command(name, rich_help_panel=REPORTS, **texts)(function)
    return app


def _group_help(ctx: typer.Context) -> None:
    """A group without its mechanism prints its help (exit 0)."""
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())
