"""Rendering for the command line: rich tables that never cut a number, progress bars on a
terminal's stderr, and text that every output encoding can write.

Tables are printed with their natural width into a pipe or file; on a terminal too narrow for
a table, each row is printed as ``column: value`` lines instead (numbers are never truncated).
A table of text (``rdpcalc mechanisms``) wraps in its cells instead, at :func:`text_width`.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import sys
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from ..orders import format_alpha
from .options import QUIET, with_options

#: a bracket [found, certified] wider than this (relative) is pointed out under the table
WIDE_BRACKET = 0.01

@contextmanager
def progress(description: str, eta: bool = True):
    """A progress callback ``update(done, total)``: a rich bar with the count, the elapsed time
    and an ETA on stderr when stderr is a terminal (with --json too, which writes only stdout);
    a no-op otherwise. The bar appears at the first update, so it always has a real total.
    ``eta=False`` where the total is only an upper bound (an ETA from it would mislead): the
    count is shown as "done of at most total", without an ETA."""
    if QUIET["on"] or not sys.stderr.isatty():
        yield None
        return
    # imported only on a terminal: start-up time
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if eta:
        columns = (TextColumn(description), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn())
    else:
        columns = (TextColumn(description), TextColumn("{task.completed:.0f} of at most {task.total:.0f}"),
                   TimeElapsedColumn())
    with Progress(*columns, transient=True, console=console(stderr=True)) as bar:
        task = None

        def update(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(description, total=total, completed=done)
            else:
                bar.update(task, completed=done, total=total)

        yield update


def console(stderr: bool = False, width: int | None = None):
    """A rich console whose closed pipe raises BrokenPipeError to :func:`main` (rich's own
    handler exits 1 without a word)."""
    out = Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)
    out.on_broken_pipe = _broken_pipe
    return out


def _broken_pipe() -> None:
    raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isinf(value):
            return "+∞" if value > 0 else "−∞"
        return f"{value:.12g}"
    return str(value)


def title(mechanism) -> str:
    params = ", ".join(f"{k}={number(v)}" for k, v in mechanism.parameters().items() if v is not None)
    return f"{mechanism.title}: {params}"




def render_divergence(mechanism, records: list[dict]) -> None:
    first = records[0]
    engine = f"{first['engine']} engine" + (f", {first['dps']} digits" if "dps" in first else "")
    clients = "one client" if first["n"] == 1 else f"SecAgg sum of n = {first['n']} clients"
    bracketed = "windowed_divergence" in first  # unbounded noise: a certified bracket (rdpcalc.worstcase.tails)
    searched = (first["n"] > 1 and first["neighbours"] == "worst") or bracketed or first.get("search") == "windowed"
    table = Table()
    table.add_column("α", justify="right")
    table.add_column("D_α ≥ (nats)" if bracketed else "D_α found (nats)" if searched else "D_α (nats)",
                     justify="right", overflow="fold")
    if searched:
        table.add_column("certified ≤", justify="right")
    table.add_column("x", justify="right")
    table.add_column("x′", justify="right")
    if searched and first["n"] > 1 and first["neighbours"] == "worst":
        table.add_column("others")
    elif first["n"] > 1:
        table.add_column("k others at +c", justify="right")
    for r in records:
        value = number(r["divergence"]) if bracketed else r.get("divergence_digits", number(r["divergence"]))
        row = [alpha_text(r["alpha"]), "+∞" if value == "inf" else value]
        if searched:
            row.append(number(r["certified_upper"]))
        row += [number(r["x"]), number(r["x_prime"])]
        if searched and first["n"] > 1 and first["neighbours"] == "worst":
            row.append(", ".join(f"{count} × {number(value)}" for value, count in r["others"]))
        elif first["n"] > 1:
            row.append(str(r["others_plus"]))
        table.add_row(*row)
    header = [title(mechanism), f"{clients}; {engine}", f"neighbours {first['protocol']}"]
    notes = []
    if bracketed:
        notes.append(f"noise windowed (tail mass ≤ 10^{first['log10_tail_mass']:.1f}): the true D_α lies in the "
                     "certified bracket [D_α ≥, certified ≤]; the upper end loosens above --cover")
    if searched and "search" in first and first["n"] > 1:
        header.append(f"search: {first['search']}; certified upper bound: {first['certificate']}")
        if first["search"] == "windowed":
            notes.append("the maximum over k lies in [found, certified] (D_∞: bounded by a block of others' D_∞, data "
                         "processing); the ±c family is a lower bound of the worst case (--neighbours worst)")
        elif any(not r["certified_upper"] <= r["divergence"] * (1 + 1e-9) for r in records):
            notes.append("the true worst case lies in [found, certified]; account and calibrate use the certified bound")
            widest = max(records, key=lambda r: r["certified_upper"] / r["divergence"] if r["divergence"] > 0 else math.inf)
            ratio = widest["certified_upper"] / widest["divergence"] if widest["divergence"] > 0 else math.inf
            if ratio > 1 + WIDE_BRACKET:
                notes.append(f"the bracket is wider than {WIDE_BRACKET:.0%}: certified / found = {ratio:.4g} at "
                             f"α = {alpha_text(widest['alpha'])} (the certificate line above says how it was bounded)")
    notes += [f"α = {alpha_text(r['alpha'])}: +∞ because {r['reason']}" for r in records if "reason" in r][:1]
    print_block(header, table, notes)


def render_pmf(mechanism, records: list[dict], summary: dict) -> None:
    table = Table()
    table.add_column("output", justify="right")
    table.add_column("decodes to", justify="right")
    table.add_column("probability", justify="right")
    table.add_column("log probability", justify="right")
    values = mechanism.output_values()
    for r, value in zip(records, values, strict=True):
        table.add_row(str(r["output"]), number(float(value)), r["probability_digits"], number(r["log_probability"]))
    footer = [f"mean {summary['mean']:.12g}, bias {summary['bias']:.6g}, variance {summary['variance']:.6g}, "
              f"MSE {summary['mse']:.6g}"]
    if abs(summary["mass"] - 1) > 1e-12:
        footer.append(f"total mass {summary['mass']:.12g}: NOT a distribution")
    print_block([title(mechanism), f"pmf of one client's output at x = {number(records[0]['x'])}"], table, footer)


def render_bound(mechanism, records: list[dict]) -> None:
    table = Table()
    table.add_column("quantity")
    table.add_column("α", justify="right")
    table.add_column("value", justify="right")
    table.add_column("source")
    table.add_column("check")
    notes = []
    for r in records:
        if r["kind"] == "exact":
            check = f"x={number(r['x'])}, x′={number(r['x_prime'])}"
        else:
            check = {True: "holds", False: "FAILS", None: "reported"}[r["holds"]]
            detail = "; ".join(part for part in (r["compares"], r["note"]) if part)
            if detail:
                notes.append(f"{r['quantity']}: {detail}")
        table.add_row(r["quantity"], alpha_text(r["alpha"]), number(r["value"]), r["source"], check)
    print_block([title(mechanism), "one client: the papers' bounds beside the exact divergences"], table, notes)


def print_block(header: list[str], table, notes: list[str] = ()) -> None:
    """Header lines, the table, notes. No number is ever cut: on a terminal too narrow for the
    table each row is printed as ``column: value`` lines instead (long lines wrap, never
    truncate); into a file or pipe the table takes the width it needs."""
    header, notes = [encodable(line) for line in header], [encodable(line) for line in notes]
    _encode_table(table)
    terminal = _terminal_width()
    natural = _natural_width(table)
    out = console(width=max(terminal or 80, natural))
    for line in header:
        out.print(line, markup=False, soft_wrap=True)
    if terminal is not None and natural > terminal:
        for line in _vertical(table):
            out.print(line, markup=False, soft_wrap=True)
    else:
        out.print(table)
    for line in notes:
        out.print(line if line.startswith(("mean ", "total mass")) else f"note: {line}", markup=False,
                      soft_wrap=True)


def print_wrapped(header: list[str], table) -> None:
    """Header lines and a table of text, which wraps in its cells (it has no number to keep on
    one line): the width is :func:`text_width`, into a pipe or file too."""
    header = [encodable(line) for line in header]
    _encode_table(table)
    out = console(width=text_width())
    for line in header:
        out.print(line, markup=False)
    out.print(table)


def text_width() -> int:
    """The width of a table of text: ``COLUMNS`` if it is a positive integer, else the
    terminal's, else (a pipe or file) 80."""
    return _columns() or _terminal_width() or 80


def _terminal_width() -> int | None:
    """The width of the terminal on stdout (``COLUMNS`` if it is a positive integer), or None
    when stdout is not a terminal."""
    if not sys.stdout.isatty():
        return None
    size = _columns() or shutil.get_terminal_size((80, 24)).columns
    return size if size > 0 else 80


def _columns() -> int | None:
    """``COLUMNS`` if it is a positive integer, else None."""
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.strip().isdigit() and int(text) > 0 else None


def _natural_width(table) -> int:
    """The width the table needs to show every cell on one line."""
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


def encodable(text: str) -> str:
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
        table.title = encodable(str(table.title))
    for column in table.columns:
        column.header = encodable(str(column.header))
        column._cells = [encodable(str(cell)) for cell in column._cells]


def alpha_text(alpha: float | None) -> str:
    if alpha is None:
        return ""
    return "∞" if alpha == math.inf else format_alpha(alpha)




def render_layered_divergence(records: list[dict]) -> None:
    r = records[0]
    table = Table()
    table.add_column("α", justify="right")
    table.add_column("D_α (nats)", justify="right")
    for record in records:
        table.add_row(alpha_text(record["alpha"]), number(record["divergence"]))
    notes = [f"α = {alpha_text(x['alpha'])}: +∞ because {x['reason']}" for x in records if "reason" in x][:1]
    print_block([f"layered quantizer, {r['noise']} error: σ={number(r['sigma'])}, Δ={number(r['sensitivity'])}"
                  + (f", n={r['n']}" if r["noise"] == "irwin-hall" else ""), r["neighbours"]], table, notes)


def render_layered_bits(records: list[dict]) -> None:
    r = records[0]
    table = Table()
    for column in ("quantity", "value", "unit", "source"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for record in records:
        table.add_row(record["quantity"], f"{record['value']:.6g}", record["unit"], record["source"])
    print_block([f"layered quantizers, {r['noise']} error σ={number(r['sigma'])}; inputs in an interval of length "
                  f"t={number(r['t'])}; n={r['n']}"], table)



def render_mc(mechanism, records: list[dict]) -> None:
    r = records[0]
    table = Table()
    for column in ("samples", "seed", "χ² (dof)", "p-value", "total variation", f"TV bound ({r['tv_confidence']:.0%})"):
        table.add_column(column, justify="right")
    table.add_row(str(r["samples"]), str(r["seed"]), f"{r['chi2']:.2f} ({r['dof']})", f"{r['p_value']:.4f}",
                  f"{r['tv']:.3g}", f"{r['tv_bound']:.3g}")
    clients = "one client" if r["n"] == 1 else f"the sum of {r['n']} clients"
    lines = [title(mechanism), f"sampler vs exact pmf of {clients}, all at x = {number(r['x'])}"]
    notes = []
    if r["impossible_draws"]:
        notes.append(f"{r['impossible_draws']} draws fell on outputs of probability 0: the sampler disagrees with the pmf")
    if len(records) > 1:
        d = records[1]
        notes.append(f"D_{alpha_text(d['alpha'])}(P_{number(d['x'])} ‖ P_{number(d['x_prime'])}): empirical "
                     f"{d['estimate']:.6g}, 95% bootstrap interval [{d['interval_low']:.6g}, {d['interval_high']:.6g}], "
                     f"exact {d['exact']:.6g} ({'inside' if d['exact_inside'] else 'OUTSIDE'})")
    print_block(lines, table, notes)



def render_account(records: list[dict]) -> None:
    r = records[0]
    parameters = ", ".join(f"{k}={number(v)}" for k, v in r["parameters"].items() if v is not None)
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
                     f"{r['dp_epsilon']:g})")
    table = Table(title="(ε, δ): both methods, each an upper bound" if r["method"] == "pld" else "(ε, δ): ε by rdp",
                  title_justify="left")
    columns = ["δ", "ε (pld)", "ε (rdp)", "rdp order α"] if r["method"] == "pld" else ["δ", "ε (rdp)", "rdp order α"]
    for column in columns:
        table.add_column(column, justify="right")
    for record in records:
        order = number(record["order"]) if record["order"] is not None else "(+∞ at every order)"
        cells = [f"{record['dp_delta']:g}", number(record["epsilon_rdp"]), order]
        table.add_row(*([cells[0], number(record["epsilon_pld"]), *cells[1:]] if r["method"] == "pld" else cells))
    notes = [f"ε (pld) = +∞ at δ = {record['dp_delta']:g}: {record['epsilon_pld_infinite_because']}"
             for record in records if record.get("epsilon_pld_infinite_because")]
    if "dp_delta_at_dp_epsilon" in r:
        beside = (f" (rdp: {r['dp_delta_at_dp_epsilon_rdp']:.6g})" if r["method"] == "pld" else "")
        notes.append(f"δ at ε = {r['dp_epsilon']:g}: {r['dp_delta_at_dp_epsilon']:.6g}{beside}")
    notes += [f"report: {record['report']}" for record in records]  # last: the line to quote
    print_block(lines, table, notes)



def account_rows(records: list[dict]) -> list[dict]:
    """The results as CSV rows, one per δ: the record's fields, its parameters as
    ``parameter_*`` columns (the curves go to :func:`curve_rows`)."""
    rows = []
    for record in records:
        flat = {k: v for k, v in record.items() if k not in ("curve", "parameters", "pld_attained")}
        flat.update({f"parameter_{k}": v for k, v in record["parameters"].items()})
        flat["pld_attained"] = " | ".join(record.get("pld_attained") or [])
        rows.append(flat)
    return rows


def curve_rows(records: list[dict], curves: dict | None) -> list[dict]:
    """The curves as one tidy table with a ``kind`` column: ``rdp-curve`` (the per-round and
    total Rényi curve) and each of ``curves`` (``epsilon-delta``, ``epsilon-rounds``)."""
    rows = [{"kind": "rdp-curve", **point} for point in records[0]["curve"]]
    for kind, points in (curves or {}).items():
        rows += [{"kind": kind, **point} for point in points]
    return rows



def render_compare(records: list[dict]) -> None:
    first = records[0]
    table = Table()
    for column, justify in (("mechanism", "left"), ("solved", "left"), ("value", "right"), ("ε reached", "right"),
                            ("MSE of the sum", "right"), ("at x", "right"), ("P(wrap)", "right"),
                            ("outputs/client", "right")):
        table.add_column(column, justify=justify)
    notes = []
    for r in records:
        if not r["feasible"]:
            table.add_row(r["mechanism"], r["solved"], "—", "—", "—", "—", "—", "—")
            notes.append(f"{r['mechanism']}: {with_options(r['reason'])}")
            continue
        table.add_row(r["mechanism"], r["solved"], number(r["value"]), number(r["epsilon"]), number(r["mse"]),
                      number(r["mse_at"]), number(r["wrap_probability"]), str(r["outputs"]))
    header = [f"n = {first['n']} clients, B = {first['bits']} bits per coordinate; target ε = {first['dp_epsilon']:g} "
              f"at δ = {first['dp_delta']:g} over {first['rounds']} round(s), observer {first['observer']}",
              "ε: certified, the sum accounted without its wrap-around (an upper bound); MSE: worst over x ∈ "
              "{0, c/4, c/2, 3c/4, c}, all clients at x, wrap-around included"]
    print_block(header, table, notes)


def render_claims(records: list[dict]) -> None:
    table = Table(show_lines=True)
    for column in ("paper", "where", "claim", "verdict", "ours"):
        table.add_column(column)
    for r in records:
        table.add_row(r["paper"], r["place"], r["claim"], r["verdict"], r["ours"])
    print_block([], table)



ASCII_SPELLINGS = {"∞": "inf", "α": "alpha", "ε": "eps", "δ": "delta", "Δ": "Delta", "σ": "sigma", "θ": "theta",
                   "γ": "gamma", "χ": "chi", "²": "^2", "³": "^3", "≤": "<=", "≥": ">=", "−": "-", "–": "-", "—": "-",
                   "‖": "||", "×": "x", "·": "*", "′": "'", "…": "...", "→": "->", "±": "+/-", "⁻": "^-", "¹": "^1",
                   "₁": "1", "ₑ": "e", "√": "sqrt", "≈": "~", "η": "eta", "λ": "lambda", "μ": "mu", "ρ": "rho"}


def spell_in_ascii(error: UnicodeError):
    text = error.object[error.start:error.end]
    return "".join(ASCII_SPELLINGS.get(char, f"\\u{ord(char):04x}") for char in text), error.end



def render_fl(summary: dict, out_dir: str | None) -> None:
    eps = "+∞ (no privacy)" if summary["epsilon"] == math.inf else number(summary["epsilon"])
    lines = [f"FL with {summary['mechanism']}: {summary['rounds']} rounds, {summary['per_round']} of {summary['clients']} "
             f"clients, model dimension {summary['dimension']}",
             f"final test accuracy {summary['final_test_accuracy']:.4f}, loss {summary['final_test_loss']:.4f}",
             f"accounted (ε, δ) = ({eps}, {summary['dp_delta']:g})"
             + (f" by {summary['method']} (rdp: {number(summary['epsilon_rdp'])})" if "method" in summary else "")
             + f"; {summary['privacy']}"]
    if out_dir is not None:
        lines.append(f"wrote fl.csv, fl.meta.json, summary.json and fl.png into {out_dir}")
    if "report" in summary:
        lines.append(f"report: {summary['report']}")  # last: the line to quote
    for line in lines:
        print(encodable(line))


def render_mechanisms(records: list[dict]) -> None:
    table = Table(show_lines=True)
    for column in ("mechanism", "parameters", "commands"):
        table.add_column(column)
    for r in records:
        parameters = "\n".join(
            f"{p['option']}{' (' + ', '.join(p['aliases']) + ')' if p['aliases'] else ''}: {p['range']}"
            + (f", default {p['default']}" if p["default"] is not None else "")
            + (" [bound]" if p["name"] in r["bound_parameters"] else "") for p in r["parameters"])
        kind = "" if r["kind"] == "registered" else f" ({r['kind']})"
        cells = (f"{r['mechanism']}{kind}\n{r['title']}\n\n{r['paper']}", parameters, ", ".join(r["commands"]))
        table.add_row(*(escape(cell) for cell in cells))  # plain text: "[bound]" is no markup
    print_wrapped(["every mechanism: the registered ones, then the references, which only the commands listed take "
                   "('rdpcalc COMMAND MECHANISM --help' for each)"], table)
