"""The ``rdpcalc`` command line: parse, call :mod:`rdpcalc.api`, render or export.

``rdpcalc <command> <mechanism> [options]``. Each (command, mechanism) pair is a click
command whose options are the mechanism's parameters (declared once, in the mechanism's
``PARAMS``) plus the command's own. Bad input exits with code 2 and one line naming the
option and its valid range; no traceback reaches the user; files are written atomically.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from . import __version__, api, resources
from .errors import ParameterError
from .exactnum import to_int
from .io import check_output_file, check_output_folder, record_written, to_csv, to_json, write_outputs
from .mechanisms import MECHANISMS
from .neighbours import PROTOCOLS
from .numerics import ENGINES
from .orders import format_alpha, parse_alpha
from .worstcase import EXHAUSTIVE_BUDGET, MAX_BUDGET

EXAMPLES = {
    "divergence": """\b
Examples:
  rdpcalc divergence rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --alpha 2 --alpha 10 --alpha inf
  rdpcalc divergence pbm --c 1.5 --theta 0.25 --trials 16 --n 40 --alpha 2
  rdpcalc divergence rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --alpha 2 --neighbours pm-c
  rdpcalc divergence rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --alphas 1.01:1000:100 --json
  rdpcalc divergence rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --neighbours paper --seed 3
  rdpcalc divergence qgauss --sigma 1 --clip 1 --k 2 --alpha 1 --grid 21
  rdpcalc divergence qmgeo --R 8 --p 0.5 --w-max 1 --margin 0.01 --alpha inf""",
    "pmf": """\b
Examples:
  rdpcalc pmf rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --x 1.5
  rdpcalc pmf pbm --c 1.5 --theta 0.25 --trials 16 --x -1.5 --csv pbm.csv""",
    "bound": """\b
Examples:
  rdpcalc bound rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --alpha 2 --alpha 10
  rdpcalc bound pbm --c 1.5 --theta 0.25 --trials 16
  rdpcalc bound qgauss --sigma 1 --k 16 --clip 1 --alpha 1 --alpha 2
  rdpcalc bound qmgeo --R 8 --p 0.9 --w-max 0.05 --alpha 2""",
}


# ----------------------------------------------------------------------------- helpers
def _int_option(value: str | None, option: str, low: int, high: int | None = None) -> int | None:
    if value is None:
        return None
    number = to_int(value, option)
    if number < low or (high is not None and number > high):
        upper = "∞" if high is None else str(high)
        raise ParameterError(option, f"must be an integer in [{low}, {upper}], got {number}")
    return number


def _check_output(path: str | None, option: str = "--csv") -> None:
    """Refuse an output path before any work (:func:`rdpcalc.io.check_output_file`)."""
    if path is not None:
        check_output_file(path, option)


def _check_distinct(paths: dict[str, str | None]) -> None:
    """Two outputs must not name the same file."""
    seen: dict[Path, str] = {}
    for option, path in paths.items():
        if path is None:
            continue
        resolved = Path(path).absolute()
        if resolved in seen:
            raise ParameterError(option, f"names the same file as {seen[resolved]}: {path!r}")
        seen[resolved] = option


def _emit(records: list[dict], as_json: bool, csv_path: str | None, render: Callable[[list[dict]], None],
          files: Sequence[tuple[str | None, str, Callable[[], str | bytes]]] = ()) -> None:
    """Print (JSON or the rendered table), then write the CSV of the records and each of
    ``files`` — (path, option, contents) — whose path is given, all or none: a failing
    standard output leaves no file behind."""
    if as_json:
        click.echo(to_json(records))
    else:
        render(records)
    sys.stdout.flush()
    files = [(csv_path, "--csv", lambda: to_csv(records)), *files]
    write_outputs([(path, contents(), option) for path, option, contents in files if path is not None])


@contextmanager
def _progress(description: str):
    """A progress callback ``update(done, total)``: a rich bar with the count, the elapsed time
    and an ETA on stderr when stderr is a terminal (with --json too, which writes only stdout);
    a no-op otherwise. The bar appears at the first update, so it always has a real total."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn(description), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn())
    with Progress(*columns, transient=True, console=_console(stderr=True)) as bar:
        task = None

        def update(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(description, total=total, completed=done)
            else:
                bar.update(task, completed=done, total=total)

        yield update


def _console(stderr: bool = False, width: int | None = None):
    """A rich console whose closed pipe raises BrokenPipeError to :func:`main` (rich's own
    handler exits 1 without a word)."""
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)
    console.on_broken_pipe = _broken_pipe
    return console


def _broken_pipe() -> None:
    import errno

    raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def _number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isinf(value):
            return "+∞" if value > 0 else "−∞"
        return f"{value:.12g}"
    return str(value)


def _title(mechanism) -> str:
    params = ", ".join(f"{k}={_number(v)}" for k, v in mechanism.parameters().items() if v is not None)
    return f"{mechanism.title}: {params}"


# ----------------------------------------------------------------------------- renderers
def _render_divergence(mechanism, records: list[dict]) -> None:
    from rich.table import Table

    first = records[0]
    engine = f"{first['engine']} engine" + (f", {first['dps']} digits" if "dps" in first else "")
    clients = "one client" if first["n"] == 1 else f"SecAgg sum of n = {first['n']} clients"
    searched = first["n"] > 1 and first["neighbours"] == "worst"
    table = Table()
    table.add_column("α", justify="right")
    table.add_column("D_α found (nats)" if searched else "D_α (nats)", justify="right", overflow="fold")
    if searched:
        table.add_column("certified ≤", justify="right")
    table.add_column("x", justify="right")
    table.add_column("x′", justify="right")
    if searched:
        table.add_column("others")
    elif first["n"] > 1:
        table.add_column("k others at +c", justify="right")
    for r in records:
        value = r.get("divergence_digits", _number(r["divergence"]))
        row = [_alpha_text(r["alpha"]), "+∞" if value == "inf" else value]
        if searched:
            row.append(_number(r["certified_upper"]))
        row += [_number(r["x"]), _number(r["x_prime"])]
        if searched:
            row.append(", ".join(f"{count} × {_number(value)}" for value, count in r["others"]))
        elif first["n"] > 1:
            row.append(str(r["k"]))
        table.add_row(*row)
    header = [_title(mechanism), f"{clients}; {engine}", f"neighbours {first['protocol']}"]
    notes = []
    if searched:
        header.append(f"search: {first['search']}; certified upper bound: {first['certificate']}")
        if any(not r["certified_upper"] <= r["divergence"] * (1 + 1e-9) for r in records):
            notes.append("the true worst case lies in [found, certified]; account and calibrate use the certified bound")
    notes += [f"α = {_alpha_text(r['alpha'])}: +∞ because {r['reason']}" for r in records if "reason" in r][:1]
    _print_block(header, table, notes)


def _render_pmf(mechanism, records: list[dict], summary: dict) -> None:
    from rich.table import Table

    table = Table()
    table.add_column("output", justify="right")
    table.add_column("decodes to", justify="right")
    table.add_column("probability", justify="right")
    table.add_column("log probability", justify="right")
    values = mechanism.output_values()
    for r, value in zip(records, values, strict=True):
        table.add_row(str(r["output"]), _number(float(value)), r["probability_digits"], _number(r["log_probability"]))
    footer = [f"mean {summary['mean']:.12g}, bias {summary['bias']:.6g}, variance {summary['variance']:.6g}, "
              f"MSE {summary['mse']:.6g}"]
    if abs(summary["mass"] - 1) > 1e-12:
        footer.append(f"total mass {summary['mass']:.12g}: NOT a distribution")
    _print_block([_title(mechanism), f"pmf of one client's output at x = {_number(records[0]['x'])}"], table, footer)


def _render_bound(mechanism, records: list[dict]) -> None:
    from rich.table import Table

    table = Table()
    table.add_column("quantity")
    table.add_column("α", justify="right")
    table.add_column("value", justify="right")
    table.add_column("source")
    table.add_column("check")
    notes = []
    for r in records:
        if r["kind"] == "exact":
            check = f"x={_number(r['x'])}, x′={_number(r['x_prime'])}"
        else:
            check = {True: "holds", False: "FAILS", None: "reported"}[r["holds"]]
            detail = "; ".join(part for part in (r["compares"], r["note"]) if part)
            if detail:
                notes.append(f"{r['quantity']}: {detail}")
        table.add_row(r["quantity"], _alpha_text(r["alpha"]), _number(r["value"]), r["source"], check)
    _print_block([_title(mechanism), "one client: the papers' bounds beside the exact divergences"], table, notes)


def _print_block(header: list[str], table, notes: list[str] = ()) -> None:
    """Header lines, the table, notes. No number is ever cut: on a terminal too narrow for the
    table each row is printed as ``column: value`` lines instead (long lines wrap, never
    truncate); into a file or pipe the table takes the width it needs."""
    header, notes = [_encodable(line) for line in header], [_encodable(line) for line in notes]
    _encode_table(table)
    terminal = _terminal_width()
    natural = _natural_width(table)
    console = _console(width=max(terminal or 80, natural))
    for line in header:
        console.print(line, markup=False, soft_wrap=True)
    if terminal is not None and natural > terminal:
        for line in _vertical(table):
            console.print(line, markup=False, soft_wrap=True)
    else:
        console.print(table)
    for line in notes:
        console.print(line if line.startswith(("mean ", "total mass")) else f"note: {line}", markup=False,
                      soft_wrap=True)


def _terminal_width() -> int | None:
    """The width of the terminal on stdout (``COLUMNS`` if it is a positive integer), or None
    when stdout is not a terminal."""
    import os
    import shutil

    if not sys.stdout.isatty():
        return None
    text = os.environ.get("COLUMNS", "")
    if text.strip().isdigit() and int(text) > 0:
        return int(text)
    size = shutil.get_terminal_size((80, 24)).columns
    return size if size > 0 else 80


def _natural_width(table) -> int:
    """The width the table needs to show every cell on one line."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=10**5, highlight=False)
    return Measurement.get(console, console.options, table).maximum


def _vertical(table) -> list[str]:
    """The table as ``column: value`` lines, a blank line between rows."""
    lines = [table.title] if table.title else []
    names = [str(column.header) for column in table.columns]
    cells = [[str(cell) for cell in column._cells] for column in table.columns]
    for row in range(table.row_count):
        if row or lines:
            lines.append("")
        lines += [f"{name}: {values[row]}" for name, values in zip(names, cells, strict=True)]
    return lines


def _encodable(text: str) -> str:
    """``text`` if standard output's encoding can write it, else with :data:`ASCII_SPELLINGS`."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        return text.encode(encoding, errors="rdpcalc-ascii").decode(encoding)
    except LookupError:
        return text


def _encode_table(table) -> None:
    """Spell the table's title, headers and cells in what standard output can encode (before
    rich measures them, so the columns stay aligned)."""
    if table.title:
        table.title = _encodable(str(table.title))
    for column in table.columns:
        column.header = _encodable(str(column.header))
        column._cells = [_encodable(str(cell)) for cell in column._cells]


def _alpha_text(alpha: float | None) -> str:
    if alpha is None:
        return ""
    return "∞" if alpha == math.inf else format_alpha(alpha)


# ----------------------------------------------------------------------------- commands
def _mechanism_params(specs) -> list[click.Option]:
    return [click.Option([spec.option, spec.name], type=str, default=spec.default, metavar="VALUE",
                         show_default=spec.default is not None, help=spec.help) for spec in specs]


def _build_mechanism(cls, kwargs: dict):
    values = {spec.name: kwargs.pop(spec.name) for spec in cls.PARAMS}
    for spec in cls.PARAMS:
        if values[spec.name] is None:
            raise ParameterError(spec.option, f"is required for {cls.name}: {spec.help}")
    return api.make_mechanism(cls.name, **values)


def _k_others_option(cls) -> tuple[click.Option, str]:
    """``--k-others`` (number of other clients at +c), also spelled ``--k`` unless the mechanism
    has a parameter of that name (the quantized Gaussian's levels)."""
    taken = any(spec.option == "--k" for spec in cls.PARAMS)
    names = ["--k-others", "k_others"] if taken else ["--k", "--k-others", "k_others"]
    option = click.Option(names, type=str, default=None, metavar="K",
                          help="Exactly K of the other n-1 clients at +c (the rest at -c), 0 ≤ K ≤ n-1.")
    return option, "--k-others" if taken else "--k"


OUTPUT_OPTIONS = [
    click.Option(["--json", "as_json"], is_flag=True, help="Print only JSON (a list of records) to stdout."),
    click.Option(["--csv", "csv_path"], type=str, default=None, metavar="FILE",
                 help="Also write the records as CSV to FILE (atomically)."),
]
ALPHA_OPTIONS = [
    click.Option(["--alpha"], multiple=True, metavar="A",
                 help="Rényi order ≥ 1 (1 = KL) or 'inf'; repeatable. Default: 1, 2, 10, inf."),
    click.Option(["--alphas"], multiple=True, metavar="START:STOP:COUNT[:log|lin]",
                 help="A range of orders, log spaced unless ':lin' is added; repeatable."),
]
ENGINE_OPTIONS = [
    click.Option(["--engine"], type=click.Choice(ENGINES), default="fast", show_default=True,
                 help="fast: float64 log domain; exact: mpmath at --dps digits."),
    click.Option(["--dps"], type=str, default="50", show_default=True, metavar="DIGITS",
                 help="Digits of the exact engine, 15 … 1000."),
]


def _divergence_command(cls) -> click.Command:
    k_option, k_name = _k_others_option(cls)

    def run(**kwargs):
        mechanism = _build_mechanism(cls, kwargs)
        n = _int_option(kwargs["n"], "--n", 1, 10**6)
        k = _int_option(kwargs["k_others"], k_name, 0, n - 1)
        dps = _int_option(kwargs["dps"], "--dps", 15, 1000)
        seed = _int_option(kwargs["seed"], "--seed", 0, 2**63 - 1)
        grid = _int_option(kwargs["grid"], "--grid", 2, 2001)
        budget = _int_option(kwargs["budget"], "--budget", 1, MAX_BUDGET)
        _check_output(kwargs["csv_path"])
        with _progress("worst case") as progress:
            records = api.divergence(
                mechanism, n=n, alphas=[*kwargs["alpha"]], neighbours=kwargs["neighbours"], k=k,
                x=kwargs["x"], x_prime=kwargs["x_prime"], seed=seed, engine=kwargs["engine"], dps=dps,
                progress=progress, alpha_ranges=[*kwargs["alphas"]], grid=grid, margin=kwargs["margin"],
                k_option=k_name, budget=budget,
            )
        _emit(records, kwargs["as_json"], kwargs["csv_path"], lambda r: _render_divergence(mechanism, r))

    params = _mechanism_params(cls.PARAMS) + [
        click.Option(["--n"], type=str, default="1", show_default=True, metavar="N",
                     help="Number of clients in the SecAgg sum, ≥ 1."),
        *ALPHA_OPTIONS,
        *ENGINE_OPTIONS,
        click.Option(["--neighbours"], type=click.Choice(PROTOCOLS), default="worst", show_default=True,
                     help="worst: max over neighbouring inputs (n=1: all breakpoint pairs, exact; n>1: client 1 "
                          "over all breakpoint pairs, the others searched over multisets of breakpoints, with a "
                          "certified upper bound); pm-c: the papers' family, x1=±c and the others at ±c (a lower "
                          "bound of worst); paper: x1=c vs -c, others at ±c at random (--seed)."),
        click.Option(["--budget"], type=str, default=str(EXHAUSTIVE_BUDGET), show_default=True, metavar="COUNT",
                     help=f"--neighbours worst, n>1: search exhaustively when the others' multisets number at most "
                          f"COUNT (1 … {MAX_BUDGET}); the data-processing part of the certified bound is exhaustive "
                          f"over as many others as fit."),
        k_option,
        click.Option(["--x"], type=str, default=None, metavar="X", help="Client 1's input under P (with --x-prime)."),
        click.Option(["--x-prime", "x_prime"], type=str, default=None, metavar="X'",
                     help="Client 1's input under Q (with --x)."),
        click.Option(["--seed"], type=str, default="0", show_default=True, help="Seed of --neighbours paper."),
        click.Option(["--grid"], type=str, default=None, metavar="N",
                     help="One client: search all pairs of N equally spaced inputs (2 ≤ N ≤ 2001) instead of the "
                          "breakpoints."),
        click.Option(["--margin"], type=str, default=None, metavar="ETA",
                     help="One client, qmgeo: search the inputs kept ETA·Δ away from every level (0 < ETA < 1/2)."),
        *OUTPUT_OPTIONS,
    ]
    return click.Command(cls.name, callback=run, params=params, epilog=EXAMPLES["divergence"],
                         help=f"Exact Rényi divergences of {cls.title} between neighbouring inputs, "
                              "for one client or the SecAgg sum of n clients.")


def _pmf_command(cls) -> click.Command:
    def run(**kwargs):
        mechanism = _build_mechanism(cls, kwargs)
        dps = _int_option(kwargs["dps"], "--dps", 15, 1000)
        if kwargs["x"] is None:
            b = _number(float(mechanism.bound))
            raise ParameterError("--x", f"is required: the input, in [-{b}, {b}]")
        _check_output(kwargs["csv_path"])
        records = api.pmf(mechanism, kwargs["x"], dps=dps)
        summary = api.moments(mechanism, kwargs["x"], dps=dps)
        _emit(records, kwargs["as_json"], kwargs["csv_path"], lambda r: _render_pmf(mechanism, r, summary))

    params = _mechanism_params(cls.PARAMS) + [
        click.Option(["--x"], type=str, default=None, metavar="X", help="The client's input."),
        click.Option(["--dps"], type=str, default="50", show_default=True, metavar="DIGITS",
                     help="Digits of the computation, 15 … 1000."),
        *OUTPUT_OPTIONS,
    ]
    return click.Command(cls.name, callback=run, params=params, epilog=EXAMPLES["pmf"],
                         help=f"The single-client output pmf of {cls.title} at input X (mpmath), with the "
                              "decoded output's mean, bias, variance and MSE.")


def _bound_command(cls) -> click.Command:
    def run(**kwargs):
        options = {spec.name: kwargs.pop(spec.name) for spec in cls.BOUND_PARAMS}
        mechanism = _build_mechanism(cls, kwargs)
        dps = _int_option(kwargs["dps"], "--dps", 15, 1000)
        _check_output(kwargs["csv_path"])
        with _progress("bounds") as progress:
            records = api.bound(mechanism, alphas=[*kwargs["alpha"]], engine=kwargs["engine"], dps=dps,
                                alpha_ranges=[*kwargs["alphas"]], progress=progress, **options)
        _emit(records, kwargs["as_json"], kwargs["csv_path"], lambda r: _render_bound(mechanism, r))

    params = (_mechanism_params(cls.PARAMS) + _mechanism_params(cls.BOUND_PARAMS)
              + [*ALPHA_OPTIONS, *ENGINE_OPTIONS, *OUTPUT_OPTIONS])
    return click.Command(cls.name, callback=run, params=params, epilog=EXAMPLES["bound"],
                         help=f"The papers' bounds for {cls.title} beside the exact single-client D_α and D_∞.")


def _group(name: str, help_text: str, factory) -> click.Group:
    group = click.Group(name, help=help_text, epilog=EXAMPLES[name])
    for cls in MECHANISMS.values():
        group.add_command(factory(cls))
    return group


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rdpcalc")
def cli() -> None:
    """rdpcalc: exact Rényi-DP accounting for quantization-based FL mechanisms.

    \b
    Mechanisms: rqm (randomized quantization), pbm (Poisson binomial),
    qgauss (quantized Gaussian), qmgeo (mixed truncated geometric).
    Run 'rdpcalc COMMAND MECHANISM --help' for the options of each.
    """


_divergence_group = _group("divergence", "Exact Rényi divergences between worst-case neighbouring inputs.",
                           _divergence_command)
cli.add_command(_divergence_group)
cli.add_command(_group("pmf", "The single-client output pmf.", _pmf_command))
cli.add_command(_group("bound", "The papers' bounds beside the exact values.", _bound_command))


# ----------------------------------------------------------------------------- layered quantizers


@click.command("layered", epilog="""\b
Examples:
  rdpcalc divergence layered --noise gauss --sigma 2 --sensitivity 1 --alpha 2 --alpha inf
  rdpcalc divergence layered --noise irwin-hall --n 10 --sigma 1 --alpha 2""")
@click.option("--sigma", default="1", show_default=True, help="Standard deviation σ > 0 of the error.")
@click.option("--sensitivity", default="1", show_default=True, help="Shift Δ > 0 between neighbouring inputs.")
@click.option("--n", default="1", show_default=True, help="Irwin–Hall: number of clients n ≥ 1.")
@click.option("--alpha", multiple=True, metavar="A", help="Rényi order ≥ 1 or 'inf'; repeatable.")
@click.option("--alphas", multiple=True, metavar="START:STOP:COUNT[:log|lin]", help="A range of orders.")
@click.option("--json", "as_json", is_flag=True, help="Print only JSON to stdout.")
@click.option("--csv", "csv_path", default=None, metavar="FILE", help="Also write CSV to FILE.")
@click.option("--noise", type=click.Choice(["gauss", "laplace", "irwin-hall"]), default="gauss", show_default=True,
              help="The error distribution: gauss, laplace (layered quantizers) or irwin-hall.")
def layered_divergence_command(sigma, sensitivity, n, alpha, alphas, as_json, csv_path, noise) -> None:
    """Rényi divergences of the layered quantizers: the error is exactly the target noise."""
    _check_output(csv_path)
    records = api.layered_divergence(noise, sigma, sensitivity, _int_option(n, "--n", 1, 10**6), [*alpha], [*alphas])
    _emit(records, as_json, csv_path, _render_layered_divergence)


def _render_layered_divergence(records: list[dict]) -> None:
    from rich.table import Table

    r = records[0]
    table = Table()
    table.add_column("α", justify="right")
    table.add_column("D_α (nats)", justify="right")
    for record in records:
        table.add_row(_alpha_text(record["alpha"]), _number(record["divergence"]))
    notes = [f"α = {_alpha_text(x['alpha'])}: +∞ because {x['reason']}" for x in records if "reason" in x][:1]
    _print_block([f"layered quantizer, {r['noise']} error: σ={_number(r['sigma'])}, Δ={_number(r['sensitivity'])}"
                  + (f", n={r['n']}" if r["noise"] == "irwin-hall" else ""), r["neighbours"]], table, notes)


#: bits --n: the exact Irwin–Hall density table behind λ(n) costs about n^2.5 (1.7 s at n = 1000,
#: 23 s at n = 3000); the paper's figure stops at 1000.
LAYERED_BITS_MAX_N = 1000


@click.command("layered", epilog="""\b
Examples:
  rdpcalc bits layered --noise gauss --sigma 1 --t 64
  rdpcalc bits layered --noise gauss --sigma 1 --t 2048 --n 100
  rdpcalc bits layered --noise laplace --sigma 3 --t 1024 --json""")
@click.option("--noise", type=click.Choice(["gauss", "laplace"]), default="gauss", show_default=True,
              help="Target error distribution.")
@click.option("--sigma", default="1", show_default=True, help="Standard deviation σ > 0 of the error.")
@click.option("--t", "t", default="64", show_default=True, help="Length t > 0 of the interval the inputs lie in.")
@click.option("--n", default="1", show_default=True,
              help=f"Clients, 1 … {LAYERED_BITS_MAX_N} (n > 1 adds the aggregate mechanisms; gauss).")
@click.option("--json", "as_json", is_flag=True, help="Print only JSON to stdout.")
@click.option("--csv", "csv_path", default=None, metavar="FILE", help="Also write CSV to FILE.")
def layered_bits_command(noise, sigma, t, n, as_json, csv_path) -> None:
    """Bits per client of the layered quantizers: exact entropies, the paper's bounds, step sizes."""
    _check_output(csv_path)
    records = api.layered_bits(noise, sigma, t, _int_option(n, "--n", 1, LAYERED_BITS_MAX_N))
    _emit(records, as_json, csv_path, _render_layered_bits)


def _render_layered_bits(records: list[dict]) -> None:
    from rich.table import Table

    r = records[0]
    table = Table()
    for column in ("quantity", "value", "unit", "source"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for record in records:
        table.add_row(record["quantity"], f"{record['value']:.6g}", record["unit"], record["source"])
    _print_block([f"layered quantizers, {r['noise']} error σ={_number(r['sigma'])}; inputs in an interval of length "
                  f"t={_number(r['t'])}; n={r['n']}"], table)


# ----------------------------------------------------------------------------- Monte Carlo
EXAMPLES["mc"] = """\b
Examples:
  rdpcalc mc rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --x 1.5 --samples 1000000 --seed 0
  rdpcalc mc pbm --c 1 --theta 0.25 --trials 16 --x 0.3 --n 10 --json
  rdpcalc mc rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --x 1.5 --x-prime -1.5 --alpha 2"""


def _mc_command(cls) -> click.Command:
    def run(**kwargs):
        from .backend import montecarlo

        mechanism = _build_mechanism(cls, kwargs)
        samples = _int_option(kwargs["samples"], "--samples", 1, montecarlo.MAX_SAMPLES)
        seed = _int_option(kwargs["seed"], "--seed", 0, 2**63 - 1)
        n = _int_option(kwargs["n"], "--n", 1, 10**4)
        if kwargs["x"] is None:
            raise ParameterError("--x", f"is required: the input, in [-{_number(float(mechanism.bound))}, "
                                        f"{_number(float(mechanism.bound))}]")
        _check_output(kwargs["csv_path"])
        alpha = bootstrap = None
        if kwargs["x_prime"] is not None:
            alpha = parse_alpha(kwargs["alpha"])
            if alpha == math.inf or alpha == 1:
                raise ParameterError("--alpha", "must be a finite order > 1 for the empirical divergence")
            bootstrap = _int_option(kwargs["bootstrap"], "--bootstrap", montecarlo.MIN_BOOTSTRAP, 10**5)
        with _progress("sampling") as progress:
            records = [montecarlo.check(mechanism, kwargs["x"], samples, seed, n, progress=progress)]
        if alpha is not None:
            with _progress("D_α estimate") as progress:
                records.append(montecarlo.divergence_estimate(mechanism, kwargs["x"], kwargs["x_prime"], alpha,
                                                              samples, seed + 1, bootstrap, progress=progress))
        _emit(records, kwargs["as_json"], kwargs["csv_path"], lambda r: _render_mc(mechanism, r))

    params = _mechanism_params(cls.PARAMS) + [
        click.Option(["--x"], type=str, default=None, metavar="X", help="The input of every sampled client."),
        click.Option(["--samples"], type=str, default="100000", show_default=True, help="Draws, ≥ 1."),
        click.Option(["--seed"], type=str, default="0", show_default=True, help="Seed of the generator."),
        click.Option(["--n"], type=str, default="1", show_default=True, help="Clients summed per draw (SecAgg), ≥ 1."),
        click.Option(["--x-prime", "x_prime"], type=str, default=None, metavar="X'",
                     help="Also estimate D_α(P_X ‖ P_X') from samples, with a bootstrap interval."),
        click.Option(["--alpha"], type=str, default="2", show_default=True, help="Order of the estimated divergence."),
        click.Option(["--bootstrap"], type=str, default="200", show_default=True,
                     help="Bootstrap resamples, ≥ 39 (a 95% interval of order statistics)."),
        *OUTPUT_OPTIONS,
    ]
    return click.Command(cls.name, callback=run, params=params, epilog=EXAMPLES["mc"],
                         help=f"Monte Carlo check of {cls.title}: its sampler against its exact pmf.")


def _render_mc(mechanism, records: list[dict]) -> None:
    from rich.table import Table

    r = records[0]
    table = Table()
    for column in ("samples", "seed", "χ² (dof)", "p-value", "total variation", f"TV bound ({r['tv_confidence']:.0%})"):
        table.add_column(column, justify="right")
    table.add_row(str(r["samples"]), str(r["seed"]), f"{r['chi2']:.2f} ({r['dof']})", f"{r['p_value']:.4f}",
                  f"{r['tv']:.3g}", f"{r['tv_bound']:.3g}")
    clients = "one client" if r["n"] == 1 else f"the sum of {r['n']} clients"
    lines = [_title(mechanism), f"sampler vs exact pmf of {clients}, all at x = {_number(r['x'])}"]
    notes = []
    if r["impossible_draws"]:
        notes.append(f"{r['impossible_draws']} draws fell on outputs of probability 0: the sampler disagrees with the pmf")
    if len(records) > 1:
        d = records[1]
        notes.append(f"D_{_alpha_text(d['alpha'])}(P_{_number(d['x'])} ‖ P_{_number(d['x_prime'])}): empirical "
                     f"{d['estimate']:.6g}, 95% bootstrap interval [{d['interval_low']:.6g}, {d['interval_high']:.6g}], "
                     f"exact {d['exact']:.6g} ({'inside' if d['exact_inside'] else 'OUTSIDE'})")
    _print_block(lines, table, notes)


# ----------------------------------------------------------------------------- federated runs
def _fl_parameter_options() -> list[click.Option]:
    """Every mechanism parameter once (by option name), all optional: ``fl`` passes those of the
    chosen mechanism."""
    seen: dict[str, object] = {}
    for cls in MECHANISMS.values():
        for spec in cls.PARAMS:
            seen.setdefault(spec.option, spec)
    return [click.Option([option, f"p_{spec.name}"], type=str, default=None, metavar="VALUE",
                         help=f"({', '.join(c.name for c in MECHANISMS.values() if any(s.option == option for s in c.PARAMS))}) "
                              f"{spec.help}") for option, spec in seen.items()]


@click.command("fl", epilog="""\b
Examples:
  rdpcalc fl --mechanism none --clip 0.05 --rounds 200 --clients 100 --per-round 10 --out runs/baseline
  rdpcalc fl --mechanism rqm --c 0.05 --delta 0.05 --m 16 --q 0.42 --rounds 200 --clients 100 --per-round 10 \\
      --seed 0 --out runs/rqm
  rdpcalc fl --mechanism pbm --c 0.05 --theta 0.25 --trials 16 --split label --out runs/pbm""")
@click.option("--mechanism", type=click.Choice(["none", "rqm", "pbm", "qgauss", "qmgeo", "ldp", "corbin"]), default="none",
              show_default=True, help="none: clipped SGD; ldp: LDP-FL; corbin: CorBin-FL (pairs).")
@click.option("--rounds", default="200", show_default=True, help="Rounds T ≥ 1.")
@click.option("--clients", default="100", show_default=True, help="Clients N the data is split across.")
@click.option("--per-round", default="10", show_default=True, help="Clients sampled per round, 1 … N.")
@click.option("--lr", default="0.5", show_default=True, help="Server learning rate η > 0.")
@click.option("--batch", default="32", show_default=True, help="Minibatch size per client.")
@click.option("--hidden", default="32", show_default=True, help="Hidden units of the MLP.")
@click.option("--split", type=click.Choice(["iid", "label"]), default="iid", show_default=True,
              help="iid, or by label (about two classes per client).")
@click.option("--images", default=None, metavar="FILE", help="MNIST/EMNIST images (IDX, .gz ok) instead of digits.")
@click.option("--labels", default=None, metavar="FILE", help="The matching labels file (IDX).")
@click.option("--seed", default="0", show_default=True, help="Seed of the split, sampling and mechanisms.")
@click.option("--delta-target", default="1e-5", show_default=True, help="δ of the run's accounted (ε, δ).")
@click.option("--out", "out_dir", default=None, metavar="DIR", help="Write fl.csv, fl.png and summary.json here.")
@click.option("--force", is_flag=True, help="Overwrite files in --out that rdpcalc did not write.")
@click.option("--json", "as_json", is_flag=True, help="Print only the summary as JSON.")
def fl_command(mechanism, rounds, clients, per_round, lr, batch, hidden, split, images, labels, seed, delta_target,
               out_dir, force, as_json, **options) -> None:
    """Federated training on scikit-learn's digits (or local IDX files) with a mechanism per
    coordinate, SecAgg sum and unbiased decoding; loss/accuracy per round and the accounted (ε, δ)."""
    from .accounting import check_delta
    from .backend import data as fl_data
    from .backend import fl

    name = fl.FL_MECHANISMS[mechanism][0]
    specs = MECHANISMS[name].PARAMS if name else ()
    params = {spec.name: options[f"p_{spec.name}"] for spec in specs if options.get(f"p_{spec.name}") is not None}
    for spec in specs:
        if spec.name not in params and spec.default is None:
            raise ParameterError(spec.option, f"is required for --mechanism {mechanism}: {spec.help}")
    clip = _float_option(options.get("p_clip") or "0.05", "--clip") if name is None else 0.05
    if (images is None) != (labels is None):
        raise ParameterError("--labels" if labels is None else "--images", "--images and --labels go together")
    seed_value = _int_option(seed, "--seed", 0, 2**63 - 1)
    clients_value = _int_option(clients, "--clients", 1, 10**6)
    config = fl.RunConfig(mechanism=mechanism, params=params, clip=clip, rounds=_int_option(rounds, "--rounds", 1, 10**6),
                          per_round=_int_option(per_round, "--per-round", 1, 10**6), lr=_float_option(lr, "--lr"),
                          batch=_int_option(batch, "--batch", 1, 10**5), hidden=_int_option(hidden, "--hidden", 1, 10**5),
                          seed=seed_value, delta_target=check_delta(_float_option(delta_target, "--delta-target")))
    if out_dir is not None:
        check_output_folder(out_dir, FL_FILES, "--out", force)
    x, y = fl_data.idx_dataset(images, labels) if images else fl_data.digits()
    federated = fl_data.federate(x, y, clients_value, split, seed_value)
    with _progress(f"FL {mechanism}") as progress:
        result = fl.run(config, federated, progress)
    summary = result["summary"]
    if as_json:
        click.echo(to_json([summary]))
    if out_dir is not None:
        sys.stdout.flush()
        _write_fl(Path(out_dir), result)
    if as_json:
        return
    eps = "+∞ (no privacy)" if summary["epsilon"] == math.inf else _number(summary["epsilon"])
    lines = [f"FL with {mechanism}: {summary['rounds']} rounds, {summary['per_round']} of {summary['clients']} clients, "
             f"model dimension {summary['dimension']}",
             f"final test accuracy {summary['final_test_accuracy']:.4f}, loss {summary['final_test_loss']:.4f}",
             f"accounted (ε, δ) = ({eps}, {summary['delta']:g})"
             + (f" by {summary['method']} (rdp: {_number(summary['epsilon_rdp'])})" if "method" in summary else "")
             + f"; {summary['privacy']}"]
    if out_dir is not None:
        lines.append(f"wrote {Path(out_dir) / 'fl.csv'}, fl.png and summary.json")
    for line in lines:
        click.echo(line)


#: The files ``fl --out`` writes.
FL_FILES = ("fl.csv", "summary.json", "fl.png")


def _write_fl(folder: Path, result: dict) -> None:
    """fl.csv (the rounds, the summary as ``#`` lines), summary.json and fl.png, all or none."""
    from .figures.style import new_figure, png_bytes

    summary = result["summary"]
    header = [f"{k}: {v}" for k, v in summary.items()]
    fig, (left, right) = new_figure(ncols=2, width=10.0)
    rounds = [r["round"] for r in result["rounds"]]
    left.plot(rounds, [r["test_loss"] for r in result["rounds"]])
    right.plot(rounds, [r["test_accuracy"] for r in result["rounds"]])
    left.set_ylabel("test loss")
    right.set_ylabel("test accuracy")
    for axis in (left, right):
        axis.set_xlabel("round")
        axis.set_title(f"{summary['mechanism']}: {summary['per_round']} of {summary['clients']} clients")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError("--out", f"cannot create {str(folder)!r}: {error.strerror}") from None
    write_outputs([(folder / "fl.csv", to_csv(result["rounds"], header), "--out"),
                   (folder / "summary.json", to_json([summary]), "--out"),
                   (folder / "fl.png", png_bytes(fig), "--out")])
    record_written(folder, FL_FILES)


cli.add_command(fl_command)
for _option in _fl_parameter_options():
    fl_command.params.append(_option)


# ----------------------------------------------------------------------------- accounting
METHOD_OPTIONS = [
    click.Option(["--method"], type=click.Choice(api.METHODS), default=None,
                 help="pld: dominating pairs composed as privacy loss distributions (tight); rdp: Rényi curves. "
                      "Default pld, except rdp where the observer does not know the sample (release with sampling). "
                      "The other method's ε is shown beside it where it is computed."),
    click.Option(["--discretization"], type=str, default="1e-4", show_default=True, metavar="H",
                 help="pld: the grid step of the privacy loss, in nats, 1e-6 … 0.1 (smaller: tighter and slower)."),
]
PLOT_OPTION = click.Option(["--plot", "plot_path"], type=str, default=None, metavar="FILE",
                           help="Also draw ε against δ and ε against rounds, both methods, to FILE (PNG); --csv then "
                                "holds the same curves.")
RUN_OPTIONS = [
    click.Option(["--n"], type=str, default="1", show_default=True, metavar="N", help="Clients sampled per round, ≥ 1."),
    click.Option(["--clients"], type=str, default=None, metavar="N_TOTAL",
                 help="Clients in all, ≥ n (default n: no sampling); the sampling rate is n/N_TOTAL."),
    click.Option(["--rounds"], type=str, default="1", show_default=True, metavar="T", help="Training rounds, ≥ 1."),
    click.Option(["--dim"], type=str, default="1", show_default=True, metavar="D",
                 help="Coordinates quantized per round (each independently), ≥ 1."),
    click.Option(["--delta-target"], type=str, multiple=True, metavar="δ",
                 help="The δ of (ε, δ)-DP, in (0, 1); repeatable, one row each. Default 1e-5."),
    click.Option(["--epsilon-target"], type=str, default=None, metavar="ε", help="Also report δ at this ε."),
    click.Option(["--sampling"], type=click.Choice(["without-replacement", "poisson"]), default="without-replacement",
                 show_default=True, help="How the n clients of a round are drawn (poisson: each client at rate "
                                         "n/N_TOTAL, with --relation add-remove)."),
    click.Option(["--relation"], type=click.Choice(api.RELATIONS), default="replace-one",
                 show_default=True,
                 help="Neighbouring datasets: one client's input changes (replace-one), or one client is present or "
                      "absent (add-remove: server, or release with --sampling poisson)."),
    click.Option(["--observer"], type=click.Choice(["server", "release", "local"]), default="server",
                 show_default=True,
                 help="Who sees what. server: the SecAgg sum, knowing who was sampled (no amplification); release: "
                      "the released sum, the sample hidden (amplification by sampling); local: each message."),
    click.Option(["--participation"], type=str, default=None, metavar="K",
                 help="server/local: the rounds the client takes part in, 1 … T (default T, the worst case)."),
    click.Option(["--per-round", "per_round"], type=click.Choice(api.PER_ROUND), default="certified",
                 show_default=True,
                 help="Per-round curve of a sum of n>1 clients: certified (the worst case's certified upper bound, "
                      "a guarantee) or found (the largest value the search found: a lower bound, NOT a guarantee)."),
    *ENGINE_OPTIONS,
    *METHOD_OPTIONS,
    *OUTPUT_OPTIONS,
]
REFERENCE_PARAMS = {
    "gaussian": [click.Option(["--sigma"], type=str, default=None, metavar="σ", help="Noise standard deviation σ > 0.")],
    "laplace": [click.Option(["--scale"], type=str, default=None, metavar="b", help="Laplace scale b > 0.")],
}
REFERENCE_RUN = [
    click.Option(["--sensitivity"], type=str, default="1", show_default=True, help="Sensitivity Δ > 0 (ℓ₂ / ℓ₁)."),
    click.Option(["--sample-rate"], type=str, default="1", show_default=True, metavar="γ",
                 help="Sampling rate in (0, 1] (Poisson by default)."),
    click.Option(["--rounds"], type=str, default="1", show_default=True, metavar="T", help="Compositions, ≥ 1."),
    click.Option(["--delta-target"], type=str, multiple=True, metavar="δ",
                 help="δ, in (0, 1); repeatable, one row each. Default 1e-5."),
    click.Option(["--epsilon-target"], type=str, default=None, metavar="ε", help="Also report δ at this ε."),
    click.Option(["--sampling"], type=click.Choice(["poisson", "without-replacement"]), default="poisson",
                 show_default=True, help="Sampling scheme."),
    *METHOD_OPTIONS,
    *OUTPUT_OPTIONS,
]
EXAMPLES["account"] = """\b
Examples:
  rdpcalc account gaussian --sigma 1.1 --sample-rate 0.01 --rounds 1000 --delta-target 1e-5
  rdpcalc account rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --clients 3400 --rounds 2000 --participation 24
  rdpcalc account rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --rounds 2000 --delta-target 1e-5 \\
      --delta-target 1e-8 --plot rqm.png --csv rqm.csv
  rdpcalc account rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --clients 3400 --rounds 2000 --dim 100000
  rdpcalc account rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --rounds 1000 --per-round found
  rdpcalc account rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --clients 3400 --rounds 2000 --observer release
  rdpcalc account rqm --c 1.5 --delta 1.5 --m 16 --q 0.42 --n 40 --clients 3400 --rounds 2000 --observer release \\
      --relation add-remove --sampling poisson
  rdpcalc account corbin --eps-p 1 --n 50 --rounds 100 --observer local --json"""
EXAMPLES["calibrate"] = """\b
Examples:
  rdpcalc calibrate rqm --c 1.5 --delta 1.5 --m 16 --target-eps 8 --delta-target 1e-5 --rounds 2000 --dim 1 \\
      --n 40 --clients 3400 --observer release --solve q
  rdpcalc calibrate gaussian --target-eps 1 --sample-rate 0.01 --rounds 1000 --solve sigma"""


def _float_option(value, option: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise ParameterError(option, f"must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ParameterError(option, f"must be a finite number, got {value!r}")
    return number


def _run_arguments(kwargs: dict) -> dict:
    n = _int_option(kwargs.pop("n"), "--n", 1, 10**6)
    clients = _int_option(kwargs.pop("clients"), "--clients", 1, 10**12)
    return {
        "n": n, "clients": clients,
        "rounds": _int_option(kwargs.pop("rounds"), "--rounds", 1, 10**9),
        "dim": _int_option(kwargs.pop("dim"), "--dim", 1, 10**12),
        "sampling": kwargs.pop("sampling"), "observer": kwargs.pop("observer"), "engine": kwargs.pop("engine"),
        "relation": kwargs.pop("relation"),
        "participation": _int_option(kwargs.pop("participation"), "--participation", 1, 10**9),
        "dps": _int_option(kwargs.pop("dps"), "--dps", 15, 1000), "per_round": kwargs.pop("per_round"),
        **_method_arguments(kwargs),
    }


def _method_arguments(kwargs: dict) -> dict:
    return {"method": kwargs.pop("method"),
            "discretization": _float_option(kwargs.pop("discretization"), "--discretization")}


def _targets(kwargs: dict) -> tuple[list[float], float | None]:
    """The --delta-target values (default 1e-5), checked, and --epsilon-target."""
    from .accounting import check_delta

    deltas = [check_delta(_float_option(value, "--delta-target")) for value in kwargs.pop("delta_target") or ("1e-5",)]
    epsilon = _float_option(kwargs.pop("epsilon_target"), "--epsilon-target")
    if epsilon is not None and epsilon < 0:
        raise ParameterError("--epsilon-target", f"must be ≥ 0, got {epsilon!r}")
    return deltas, epsilon


def _reference_arguments(kwargs: dict) -> dict:
    return {
        "sensitivity": _float_option(kwargs.pop("sensitivity"), "--sensitivity"),
        "sample_rate": _float_option(kwargs.pop("sample_rate"), "--sample-rate"),
        "rounds": _int_option(kwargs.pop("rounds"), "--rounds", 1, 10**9),
        "sampling": kwargs.pop("sampling"),
        **_method_arguments(kwargs),
    }


def _render_account(records: list[dict]) -> None:
    from rich.table import Table

    r = records[0]
    parameters = ", ".join(f"{k}={_number(v)}" for k, v in r["parameters"].items() if v is not None)
    reference = r["mechanism"] in ("gaussian", "laplace")
    composed = "" if reference or r["participation"] == r["rounds"] else f"; ε composed over {r['participation']} rounds"
    lines = [f"{r['mechanism']}: {parameters}", f"observer {r['observer_text']}; neighbours {r['relation']}",
             f"{r['rounds']} rounds × {r['dim']} coordinates; sampling {r['sampling']} at rate {r['sample_rate']:.6g}"
             + ("" if reference else f" ({r['n']} of {r['clients']} clients)")
             + (", amplified" if r["amplified"] else ", not amplified" if r["sample_rate"] < 1 else "") + composed]
    if r.get("per_round_pld"):
        coarser = (f", coarsened from {r['discretization']:g} to keep the long composition in memory"
                   if r["grid_step"] != r["discretization"] else "")
        lines.append(f"method pld (grid {r['grid_step']:g} nats{coarser}); per-round dominating pair of: "
                     f"{r['per_round_pld']}")
        if r.get("pld_attained"):
            lines.append("  envelope attained by: " + "; ".join(r["pld_attained"][:3]))
    lines.append(f"{'method rdp' if r['method'] == 'rdp' else 'beside it, rdp'}; per-round Rényi curve: "
                 f"{r['per_round_curve']}")
    if r.get("solved"):
        lines.append(f"calibrated {r['solved']} = {r['value']:.10g} (ε {r['monotone']} in {r['solved']}; target "
                     f"{r['target_epsilon']:g})")
    table = Table(title=f"(ε, δ): ε by {r['method']}" + (", rdp beside it" if r["method"] == "pld" else ""),
                  title_justify="left")
    columns = ["δ", "ε (pld)", "ε (rdp)", "rdp order α"] if r["method"] == "pld" else ["δ", "ε (rdp)", "rdp order α"]
    for column in columns:
        table.add_column(column, justify="right")
    for record in records:
        order = _number(record["order"]) if record["order"] is not None else "(+∞ at every order)"
        cells = [f"{record['delta']:g}", _number(record["epsilon_rdp"]), order]
        table.add_row(*([cells[0], _number(record["epsilon_pld"]), *cells[1:]] if r["method"] == "pld" else cells))
    notes = []
    if "delta_at_epsilon_target" in r:
        beside = (f" (rdp: {r['delta_at_epsilon_target_rdp']:.6g})" if r["method"] == "pld" else "")
        notes.append(f"δ at ε = {r['epsilon_target']:g}: {r['delta_at_epsilon_target']:.6g}{beside}")
    _print_block(lines, table, notes)


def _check_output_paths(kwargs: dict) -> None:
    _check_output(kwargs["csv_path"])
    if kwargs.get("plot_path") is not None:
        _check_output(kwargs["plot_path"], "--plot")
        if not kwargs["plot_path"].lower().endswith(".png"):
            raise ParameterError("--plot", f"must name a .png file, got {kwargs['plot_path']!r}")
    _check_distinct({"--csv": kwargs["csv_path"], "--plot": kwargs.get("plot_path")})


def _emit_account(run, records: list[dict], as_json: bool, csv_path: str | None, plot_path: str | None) -> None:
    """JSON: the records; CSV: one tidy table with a ``kind`` column — ``result`` (one row per
    δ), ``rdp-curve`` (the Rényi curve per order) and, with --plot, ``epsilon-delta`` and
    ``epsilon-rounds`` (the plotted curves). Standard output first, then the files, all or none."""
    curves = None
    if plot_path is not None:
        with _progress("ε against rounds") as progress:
            curves = {"epsilon-delta": run.epsilon_delta_curve(),
                      "epsilon-rounds": run.epsilon_rounds_curve(records[0]["delta"], progress=progress)}
    _emit(records, as_json, None, _render_account,
          [(plot_path, "--plot", lambda: _plot_account(records[0], curves)),
           (csv_path, "--csv", lambda: to_csv(_account_rows(records, curves)))])
    if plot_path is not None and not as_json:
        click.echo(f"wrote {plot_path}")


def _account_rows(records: list[dict], curves: dict | None) -> list[dict]:
    rows = []
    for record in records:
        flat = {k: v for k, v in record.items() if k not in ("curve", "parameters", "pld_attained")}
        flat.update({f"parameter_{k}": v for k, v in record["parameters"].items()})
        flat["pld_attained"] = " | ".join(record.get("pld_attained") or [])
        rows.append({"kind": "result", **flat})
    rows += [{"kind": "rdp-curve", **point} for point in records[0]["curve"]]
    for kind, points in (curves or {}).items():
        rows += [{"kind": kind, **point} for point in points]
    return rows


def _plot_account(record: dict, curves: dict) -> bytes:
    """ε against δ and ε against rounds, both methods: the PNG's bytes."""
    from .figures.style import new_figure, png_bytes

    fig, (left, right) = new_figure(ncols=2, width=10.0)
    for axis, kind, x_key in ((left, "epsilon-delta", "delta"), (right, "epsilon-rounds", "rounds")):
        points = curves[kind]
        for method, style in (("pld", "-"), ("rdp", "--")):
            values = [(p[x_key], p[f"epsilon_{method}"]) for p in points
                      if p[f"epsilon_{method}"] is not None and math.isfinite(p[f"epsilon_{method}"])]
            if values:
                axis.plot(*zip(*values), style, marker="o", markersize=3, label=method)
        axis.set_xscale("log")
        axis.set_ylabel("ε")
        axis.legend()
    left.set_xlabel("δ")
    left.set_title(f"{record['mechanism']}: ε against δ ({record['participation']} rounds composed)")
    right.set_xlabel("rounds composed")
    right.set_title(f"ε against rounds at δ = {record['delta']:g}")
    return png_bytes(fig)


def _account_command(cls) -> click.Command:
    def run(**kwargs):
        mechanism = _build_mechanism(cls, kwargs)
        deltas, epsilon_target = _targets(kwargs)
        arguments = _run_arguments(kwargs)
        _check_output_paths(kwargs)
        with _progress("accounting") as progress:
            accounted = api.account_run(mechanism, progress=progress, **arguments)
        records = [accounted.record(delta, epsilon_target) for delta in deltas]
        _emit_account(accounted, records, kwargs["as_json"], kwargs["csv_path"], kwargs["plot_path"])

    return click.Command(cls.name, callback=run, params=_mechanism_params(cls.PARAMS) + RUN_OPTIONS + [PLOT_OPTION],
                         epilog=EXAMPLES["account"],
                         help=f"(ε, δ) of a training run with {cls.title}: coordinates, rounds, client sampling.")


def _account_reference_command(kind: str) -> click.Command:
    def run(**kwargs):
        value = _float_option(kwargs.pop("sigma" if kind == "gaussian" else "scale"), "--sigma" if kind == "gaussian"
                              else "--scale")
        if value is None:
            raise ParameterError("--sigma" if kind == "gaussian" else "--scale", "is required, > 0")
        deltas, epsilon_target = _targets(kwargs)
        arguments = _reference_arguments(kwargs)
        _check_output_paths(kwargs)
        accounted = api.account_reference_run(kind, **{("sigma" if kind == "gaussian" else "scale"): value}, **arguments)
        records = [accounted.record(delta, epsilon_target) for delta in deltas]
        _emit_account(accounted, records, kwargs["as_json"], kwargs["csv_path"], kwargs["plot_path"])

    return click.Command(kind, callback=run, params=REFERENCE_PARAMS[kind] + REFERENCE_RUN + [PLOT_OPTION],
                         epilog=EXAMPLES["account"],
                         help=f"(ε, δ) of the {kind} mechanism composed over rounds, with sampling.")


def _calibrate_command(cls_or_kind) -> click.Command:
    reference = isinstance(cls_or_kind, str)
    name = cls_or_kind if reference else cls_or_kind.name

    def run(**kwargs):
        solve, target = kwargs.pop("solve"), _float_option(kwargs.pop("target_eps"), "--target-eps")
        if target is None:
            raise ParameterError("--target-eps", "is required: the ε to meet, > 0")
        if reference:
            params = {}
            for key in ("sigma", "scale"):
                if key in kwargs:
                    kwargs.pop(key)
            run_arguments = _reference_arguments(kwargs)
        else:
            params = {spec.name: kwargs.pop(spec.name) for spec in cls_or_kind.PARAMS}
            missing = [spec.option for spec in cls_or_kind.PARAMS
                       if params[spec.name] is None and spec.default is None and spec.name != solve]
            if missing:
                raise ParameterError(missing[0], "is required (only the --solve parameter may be left out)")
            params = {key: value for key, value in params.items() if key != solve and value is not None}
            run_arguments = _run_arguments(kwargs)
        deltas, _ = _targets(kwargs)
        if len(deltas) > 1:
            raise ParameterError("--delta-target", "calibrate meets the target at one δ: give it once")
        _check_output(kwargs["csv_path"])
        with _progress(f"calibrating {solve}") as progress:
            record = api.calibrate(name, params, solve, target, progress=progress, delta_target=deltas[0],
                                   **run_arguments)
        _emit_account(None, [record], kwargs["as_json"], kwargs["csv_path"], None)

    solve_option = click.Option(["--solve"], type=str, required=True, metavar="PARAM",
                                help=f"The parameter to solve for: {', '.join(api.SOLVABLE[name])}.")
    target = click.Option(["--target-eps"], type=str, default=None, metavar="ε", help="The ε to meet, > 0.")
    if reference:
        params = REFERENCE_PARAMS[name] + REFERENCE_RUN
    else:
        params = _mechanism_params(cls_or_kind.PARAMS) + RUN_OPTIONS
    return click.Command(name, callback=run, params=[solve_option, target, *params], epilog=EXAMPLES["calibrate"],
                         help=f"Solve for the parameter of {name} that meets a target ε over a whole run (bisection).")


def _accounting_group(name: str, help_text: str, factory, reference_factory) -> click.Group:
    group = click.Group(name, help=help_text, epilog=EXAMPLES[name])
    for cls in MECHANISMS.values():
        group.add_command(factory(cls))
    for kind in ("gaussian", "laplace"):
        group.add_command(reference_factory(kind))
    return group


cli.add_command(_accounting_group("account", "(ε, δ) of a whole training run.", _account_command,
                                  _account_reference_command))
cli.add_command(_accounting_group("calibrate", "Solve for a parameter that meets a target ε.", _calibrate_command,
                                  _calibrate_command))


_divergence_group.add_command(layered_divergence_command)
cli.add_command(_group("mc", "Monte Carlo checks of the samplers against the exact pmfs.", _mc_command))
_bits_group = click.Group("bits", help="Communication cost in bits.")
_bits_group.add_command(layered_bits_command)
cli.add_command(_bits_group)


@cli.command("claims", epilog="""\b
Examples:
  rdpcalc claims
  rdpcalc claims --paper qmgeo --json
  rdpcalc claims --markdown figures/claims.md""")
@click.option("--paper", type=click.Choice(["rqm", "qgauss", "qmgeo", "corbin", "layered"]), default=None,
              help="Only this paper's claims.")
@click.option("--json", "as_json", is_flag=True, help="Print only JSON (a list of records) to stdout.")
@click.option("--csv", "csv_path", default=None, metavar="FILE", help="Also write the records as CSV to FILE.")
@click.option("--markdown", "markdown_path", default=None, metavar="FILE", help="Also write a Markdown table to FILE.")
def claims_command(paper, as_json, csv_path, markdown_path) -> None:
    """Which of the papers' numerical claims hold: each recomputed, with our values and a verdict."""
    from . import claims

    _check_output(csv_path)
    _check_output(markdown_path, "--markdown")
    _check_distinct({"--csv": csv_path, "--markdown": markdown_path})
    with _progress("claims") as progress:
        records = claims.evaluate(paper, progress)
    _emit(records, as_json, csv_path, _render_claims,
          [(markdown_path, "--markdown", lambda: claims.to_markdown(records))])


def _render_claims(records: list[dict]) -> None:
    from rich.table import Table

    table = Table(show_lines=True)
    for column in ("paper", "where", "claim", "verdict", "ours"):
        table.add_column(column)
    for r in records:
        table.add_row(r["paper"], r["place"], r["claim"], r["verdict"], r["ours"])
    _print_block([], table)


def _register_figures() -> None:
    from .figures.command import figures_command

    cli.add_command(figures_command)


_register_figures()


def _set_memory_budget(_context, _parameter, value: str | None) -> None:
    if value is not None:
        resources.set_budget(resources.parse_size(value))


def _add_max_memory(command: click.Command) -> None:
    """``--max-memory SIZE`` on every command: the budget that estimated memory needs must fit
    (:mod:`rdpcalc.resources`)."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_max_memory(sub)
        return
    command.params.append(click.Option(
        ["--max-memory"], metavar="SIZE", expose_value=False, is_eager=True, callback=_set_memory_budget,
        help="Refuse (exit 2, with the estimate) work whose estimated memory exceeds SIZE: 4G, 512M or 25% of RAM. "
             f"Default: ${resources.ENVIRONMENT_VARIABLE}, else {resources.DEFAULT_FRACTION:.0%} of RAM."))


_add_max_memory(cli)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like KeyboardInterrupt, so a file being written is
    removed (:func:`rdpcalc.io.write_atomic`) before the process exits."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, _frame):
    raise Terminated(signum)


@contextmanager
def _terminating_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` inside the block (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _raise_terminated) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


#: What stands for a character the output's encoding lacks (PYTHONIOENCODING=ascii, a C locale).
ASCII_SPELLINGS = {"∞": "inf", "α": "alpha", "ε": "eps", "δ": "delta", "Δ": "Delta", "σ": "sigma", "θ": "theta",
                   "γ": "gamma", "χ": "chi", "²": "^2", "³": "^3", "≤": "<=", "≥": ">=", "−": "-", "–": "-", "—": "-",
                   "‖": "||", "×": "x", "·": "*", "′": "'", "…": "...", "→": "->", "±": "+/-", "⁻": "^-", "¹": "^1",
                   "₁": "1", "ₑ": "e", "√": "sqrt", "≈": "~", "η": "eta", "λ": "lambda", "μ": "mu", "ρ": "rho"}


def _spell_in_ascii(error: UnicodeError):
    text = error.object[error.start:error.end]
    return "".join(ASCII_SPELLINGS.get(char, f"\\u{ord(char):04x}") for char in text), error.end


def _prepare_streams() -> None:
    """Standard output must be open; characters its encoding lacks are spelled in ASCII
    (:data:`ASCII_SPELLINGS`) instead of failing."""
    import codecs

    if sys.stdout is None:
        raise ParameterError("standard output", "is closed; redirect it to a file or /dev/null")
    codecs.register_error("rdpcalc-ascii", _spell_in_ascii)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="rdpcalc-ascii")


def _stdout_failure(error: OSError) -> int:
    """Exit code for an error writing standard output: 0 for a closed pipe (``| head``), 2
    otherwise (a full disk, a closed descriptor)."""
    import errno
    import os

    try:  # what is still buffered cannot be written either: drop it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    if error.errno == errno.EPIPE:
        return 0
    _error_line(f"standard output: cannot write: {error.strerror or error}")
    return 2


def _error_line(text: str) -> None:
    try:
        click.echo(f"rdpcalc: error: {text}", err=True)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or environment, 1 a bug in
    rdpcalc, 130 interrupted, 128 + signal number for SIGTERM/SIGHUP)."""
    try:
        with _terminating_signals(), resources.restored():
            _prepare_streams()
            result = _invoke(sys.argv[1:] if argv is None else list(argv))
            sys.stdout.flush()
    except ParameterError as error:
        _error_line(str(error))
        return 2
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.ctx.get_help() if error.ctx else error.format_message(), err=True)
        return 2
    except click.UsageError as error:
        _error_line(error.format_message())
        return 2
    except click.Abort:
        _error_line("aborted")
        return 130
    except KeyboardInterrupt:
        _error_line("interrupted")
        return 130
    except Terminated as signal_received:
        _error_line(f"terminated by signal {signal_received.signum}")
        return 128 + signal_received.signum
    except OSError as error:
        if _is_stdout_error(error):
            return _stdout_failure(error)
        return _internal_error(error)
    except Exception as error:  # noqa: BLE001 - the last line of defence: no traceback for users
        return _internal_error(error)
    return result if isinstance(result, int) else 0


def _invoke(args: list[str]):
    """Parse and run, as click's ``main`` does without its handling of errors (which exits 1
    on a closed pipe): every error reaches :func:`main`."""
    try:
        with cli.make_context("rdpcalc", args) as context:
            return cli.invoke(context)
    except click.exceptions.Exit as done:
        return done.exit_code


def _is_stdout_error(error: OSError) -> bool:
    """Whether ``error`` came from writing standard output (the files rdpcalc writes raise
    ParameterError naming their option instead)."""
    import errno

    return error.errno in (errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT)


def _internal_error(error: BaseException) -> int:
    try:
        click.echo(f"rdpcalc: internal error: {type(error).__name__}: {error} (please report this)", err=True)
    except (OSError, ValueError):
        pass
    return 1
