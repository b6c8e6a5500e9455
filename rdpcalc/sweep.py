"""Parameter sweeps: a grid (or list) of rdpcalc computations as one tidy table, run on a
dask.distributed cluster.

**The spec** is a TOML file of ``[[task]]`` tables; each expands into *points*, one call of the
Python API each::

    [[task]]
    name = "rqm-over-n"            # optional (default task1, task2, …)
    command = "divergence"         # divergence, bound, account, calibrate, compare, pmf, moments
    mechanism = "rqm"              # every command but compare (may also be a grid axis)
    fixed = { c = 1, delta = 1, q = 0.42, alphas = [1, 2, 10, "inf"] }
    grid = { m = [8, 16], n = [10, 100] }                  # the cartesian product of the lists
    points = [{ neighbours = "pm-c" }, { neighbours = "worst" }]   # a list, crossed with the grid

Keys are the Python API's keywords (the papers' symbols: ``m``, ``delta`` for RQM's Δ,
``dp_delta`` for the δ of (ε, δ)); a value is anything the API takes (a list stays one value in
``fixed`` and ``points``: ``alphas`` above). The points of a task are the grid's product (in
the order its keys are written, the last one fastest) crossed with ``points`` (default: one
empty point), each with ``fixed``. Before anything runs, every value is checked (no NaN, no
table or list inside a list, no date; :func:`check_values`), every point's keys are checked
against its command and mechanism (and the command's integer, number and string keywords
against their types), and every mechanism is built, so a bad spec is refused naming the file
and the key (``spec.toml: task[2].grid.q``).

**The table** has one row per record: ``point`` (the point's place in the spec), ``task``,
``command``, ``mechanism``, the point's parameters as ``param_<key>`` columns, then the record's
own fields, and ``error`` where the point failed (a parameter the API refused at run time, a
memory refusal: the sweep goes on). Rows are sorted by point, so a sweep's table does not depend
on the order in which points finished or on where they ran. Floats are written with 12
significant digits (the engines' accuracy), lists and dicts as JSON text; CSV (``inf`` spelled
"inf") or Parquet (by the output's suffix).

**Incremental and resumable.** Each finished point is appended to a journal beside the table
(``<table>.journal``, one JSON line per point) and flushed at once; the table is rewritten from
the journal (atomically: a reader never sees a partial file) every ``checkpoint`` seconds and at
the end, when the journal is removed. A killed sweep leaves its journal, and ``resume`` runs only
the points it lacks (a line cut short by the kill is dropped).

**Execution.** By default an embedded ``LocalCluster`` of worker processes (one per core, one
thread each; a point on a worker computes in one thread, its FFTs included, as its neighbours
take the other cores); ``scheduler`` runs on an
existing cluster (``dask scheduler`` / ``dask worker tcp://…``); ``serial`` in this process,
without dask. A point is a pure function of its parameters, so the records are the same
wherever it ran; a worker that dies mid-point loses nothing: the scheduler runs the point again
on another worker.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import itertools
import json
import logging
import math
import os
import stat
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import bounds, compare, queries, resources, runs
from .errors import ParameterError
from .io import columns, json_text, plain, significant, to_csv, write_atomic
from .mechanisms import MECHANISMS

#: what ``rdpcalc sweep --example`` prints: a spec with every key of a task explained
EXAMPLE_SPEC = """\
# An rdpcalc sweep: one or more [[task]] tables; each expands into points, one API call each.
# Keys are the Python API's keywords (m, delta for RQM's Δ, dp_delta for the δ of (ε, δ));
# a mechanism's command-line names are accepted too (levels for m, extension for delta, tail-mass for tail).

[[task]]
name = "rqm-over-n"               # optional: task1, task2, … by default
command = "divergence"            # divergence, bound, account, calibrate, compare, pmf or moments
mechanism = "rqm"                 # every command but compare (may also be a grid axis)
fixed = { c = 1, delta = 1, q = 0.42, alphas = [1, 2, 10, "inf"] }   # in every point (a list stays one value)
grid = { levels = [8, 16], n = [10, 40] }                           # the cartesian product (the last key fastest)
points = [{ neighbours = "pm-c" }, { neighbours = "worst" }]        # crossed with the grid

[[task]]
name = "pbm-account"
command = "account"
mechanism = "pbm"
fixed = { c = 1, trials = 16, n = 10, rounds = 100, dp_delta = 1e-5 }
grid = { theta = [0.1, 0.15, 0.2, 0.25] }
"""
#: the commands a sweep runs, by name
COMMANDS = ("divergence", "bound", "account", "calibrate", "compare", "pmf", "moments")
#: the keys of a task table
TASK_KEYS = ("name", "command", "mechanism", "fixed", "grid", "points")
#: the most points one spec may expand to
MAX_POINTS = 1_000_000
#: the default number of seconds between two rewrites of the table
CHECKPOINT_SECONDS = 30.0
#: the LocalCluster's workers return freed memory to the system above this (dask's default,
#: 64 KiB, makes the engines' large arrays page in afresh each time; see _run_on_cluster)
MALLOC_TRIM_BYTES = 2**28


@dataclass(frozen=True)
class Point:
    """One computation of a sweep: its place, its task, the command, the mechanism (None for
    compare) and the parameters (API keywords → values, in the spec's order)."""

    index: int
    task: str
    command: str
    mechanism: str | None
    params: dict

    @property
    def key(self) -> str:
        """The point's identity across runs (resume): its command, mechanism and parameters."""
        text = json.dumps([self.command, self.mechanism, self.params], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


# ----------------------------------------------------------------------------- the spec
def load_spec(path: str | os.PathLike) -> list[Point]:
    """The points of the spec file at ``path``, checked (module docstring); a bad file raises
    :class:`ParameterError` naming ``spec`` and, in the message, the file and the key."""
    name = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device could block or never end
            raise ParameterError("spec", f"{os.fspath(path)!r} is not a regular file")
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParameterError("spec", f"no such file: {os.fspath(path)!r}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ParameterError("spec", f"cannot read {os.fspath(path)!r}: {error}") from None
    try:
        return expand(tomllib.loads(text))
    except tomllib.TOMLDecodeError as error:
        raise ParameterError("spec", f"{name}: is not valid TOML: {error}") from None
    except RecursionError:
        raise ParameterError("spec", f"{name}: nests arrays or tables too deeply to be read") from None
    except ParameterError as error:
        raise ParameterError("spec", f"{name}: {error.message}") from None


def expand(spec: dict) -> list[Point]:
    """The points of a parsed spec (see :func:`load_spec`), its values checked first
    (:func:`check_values`)."""
    unknown = sorted(set(spec) - {"task"})
    if unknown:
        raise _spec_error(unknown[0], "is not a key of a sweep spec: it holds [[task]] tables")
    tasks = spec.get("task")
    if not isinstance(tasks, list) or not tasks or not all(isinstance(task, dict) for task in tasks):
        raise _spec_error("task", "must be one or more [[task]] tables")
    points: list[Point] = []
    names: set[str] = set()
    for number, task in enumerate(tasks, start=1):
        where = f"task[{number}]"
        name = task.get("name", f"task{number}")
        if not isinstance(name, str) or not name:
            raise _spec_error(f"{where}.name", f"must be a non-empty string, got {name!r}")
        if name in names:
            raise _spec_error(f"{where}.name", f"{name!r} names two tasks")
        names.add(name)
        check_values(task, where)
        points += _task_points(task, where, name, len(points))
        if len(points) > MAX_POINTS:
            raise _spec_error(where, f"the spec expands to more than {MAX_POINTS} points")
    return points


def _task_points(task: dict, where: str, name: str, start: int) -> list[Point]:
    unknown = sorted(set(task) - set(TASK_KEYS))
    if unknown:
        raise _spec_error(f"{where}.{unknown[0]}", f"is not a key of a task (keys: {', '.join(TASK_KEYS)})")
    command = task.get("command")
    if command not in COMMANDS:
        raise _spec_error(f"{where}.command", f"must be one of {', '.join(COMMANDS)}, got {command!r}")
    fixed = _table(task, "fixed", where)
    grid = _table(task, "grid", where)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise _spec_error(f"{where}.grid.{key}", f"must be a non-empty list of values, got {values!r}")
    listed = task.get("points", [{}])
    if not isinstance(listed, list) or not listed or not all(isinstance(item, dict) for item in listed):
        raise _spec_error(f"{where}.points", "must be a non-empty list of tables ({ key = value, … })")
    origin = {key: f"{where}.fixed.{key}" for key in fixed} | {key: f"{where}.grid.{key}" for key in grid}
    if "mechanism" in task:
        origin["mechanism"] = f"{where}.mechanism"
    both = sorted(set(fixed) & set(grid))
    if both:
        raise _spec_error(f"{where}.grid.{both[0]}", "is also in fixed: give it in one place")
    count = math.prod(len(values) for values in grid.values()) * len(listed)
    if start + count > MAX_POINTS:
        raise _spec_error(where, f"the spec expands to more than {MAX_POINTS} points")
    points = []
    for combination in itertools.product(*grid.values()):
        for item_number, item in enumerate(listed, start=1):
            clash = sorted((set(item) & (set(fixed) | set(grid))) | ({"mechanism"} & set(item) & set(task)))
            if clash:
                raise _spec_error(f"{where}.points[{item_number}].{clash[0]}", "is also in fixed, grid or the task")
            params = {**fixed, **dict(zip(grid, combination)), **item}
            places = origin | {key: f"{where}.points[{item_number}].{key}" for key in item}
            mechanism = params.pop("mechanism", task.get("mechanism"))
            params, places = api_names(params, places, command, mechanism)
            point = Point(start + len(points), name, command, mechanism, params)
            check_point(point, places, where)
            points.append(point)
    return points


def check_values(task: dict, where: str) -> None:
    """Refuse, naming its key, a value of a task that no API keyword takes: a NaN, a table
    where a value belongs, a list inside a list, a date or time, or a mechanism that is not a
    name. A value is a boolean, an integer, a number (±∞ included: each keyword checks its own
    range when the point is built or run), a string, or a list of these; ``grid`` holds a list
    of values per key and ``points`` a list of tables of values."""
    mechanism = task.get("mechanism")
    if "mechanism" in task and not isinstance(mechanism, str):
        raise _spec_error(f"{where}.mechanism", f"must be a mechanism's name (a string), got {_shown(mechanism)}")
    for section in ("fixed", "grid"):
        table = task.get(section, {})
        for key, value in table.items() if isinstance(table, dict) else ():
            if section == "grid" and isinstance(value, list):
                for number, item in enumerate(value, start=1):
                    _check_value(item, f"{where}.grid.{key}[{number}]", key)
            else:
                _check_value(value, f"{where}.{section}.{key}", key)
    listed = task.get("points", [])
    for number, item in enumerate(listed if isinstance(listed, list) else (), start=1):
        for key, value in item.items() if isinstance(item, dict) else ():
            _check_value(value, f"{where}.points[{number}].{key}", key)


def _check_value(value, place: str, key: str) -> None:
    if key == "mechanism" and not isinstance(value, str):
        raise _spec_error(place, f"must be a mechanism's name (a string), got {_shown(value)}")
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, float) and math.isnan(item):
            raise _spec_error(place, "is NaN: give a number")
        if isinstance(item, list | dict):
            kind = "a list inside a list" if isinstance(item, list) else "a table"
            raise _spec_error(place, f"holds {kind}: a value is a number, a string, a boolean or a list of these")
        if not isinstance(item, bool | int | float | str):
            raise _spec_error(place, f"holds a {type(item).__name__}: a value is a number, a string, a boolean or a "
                                     "list of these")


def _shown(value) -> str:
    """A value as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _table(task: dict, key: str, where: str) -> dict:
    value = task.get(key, {})
    if not isinstance(value, dict):
        raise _spec_error(f"{where}.{key}", f"must be a table ({{ key = value, … }}), got {value!r}")
    return value


def _spec_error(key: str, message: str) -> ParameterError:
    return ParameterError("spec", f"{key}: {message}")


def api_names(params: dict, places: dict[str, str], command: str, mechanism) -> tuple[dict, dict]:
    """``params`` with each key that is a command-line spelling of one of the mechanism's
    parameters (``levels`` for RQM's ``m``, ``extension`` for its ``delta``, ``tail_mass`` or
    ``tail-mass`` for ``tail``) renamed to its API name, in place; and ``places`` renamed alike.
    A key that is an API name of the mechanism or a keyword of the command keeps its meaning
    (CorBin's ``c`` is its center, not ``--c``); the same parameter given under two names is
    refused."""
    if command == "compare" or mechanism not in MECHANISMS:
        return params, places
    declared = {param.name for param in MECHANISMS[mechanism].PARAMS}
    taken = declared | _keywords(command, mechanism)
    spelled = {}
    for param in MECHANISMS[mechanism].PARAMS:
        for spelling in (param.option, *param.aliases):
            word = spelling.lstrip("-")
            for key in {word, word.replace("-", "_")} - taken:
                spelled[key] = param.name
    renamed, new_places = {}, {}
    for key, value in params.items():
        name = spelled.get(key, key)
        if name in renamed:
            first = next(k for k in params if spelled.get(k, k) == name)
            raise _spec_error(places.get(key, key), f"is {mechanism}'s {name}, also given as {first}: give it once")
        renamed[name] = value
        if key in places:
            new_places[name] = places[key]
    return renamed, {**{k: v for k, v in places.items() if k not in params}, **new_places}


def check_point(point: Point, places: dict[str, str], where: str) -> None:
    """Refuse a point whose keys its command and mechanism do not take, or whose mechanism
    cannot be built, naming the key where the spec gives it (``places``: key → its place) or,
    for a key left out, the task (``where``)."""
    def refuse(key: str, message: str) -> ParameterError:
        message = message.replace("`", "")
        return _spec_error(places[key], message) if key in places else _spec_error(where, f"{key} {message}")

    if point.command == "compare":
        if point.mechanism is not None:
            raise refuse("mechanism", "compare takes no mechanism (it compares several: give `mechanisms`)")
    elif point.mechanism not in MECHANISMS:
        raise refuse("mechanism", f"must be one of {', '.join(MECHANISMS)}, got {point.mechanism!r}")
    declared = _mechanism_keys(point)
    allowed = declared | _keywords(point.command, point.mechanism)
    for key in point.params:
        if key not in allowed:
            what = point.command + (f" or {point.mechanism}" if point.mechanism else "")
            raise refuse(key, f"is not a parameter of {what} (parameters: {', '.join(sorted(allowed))})")
    for key, value in point.params.items():
        expected = _keyword_types(point.command).get(key)
        if expected is not None and not _has_type(value, expected):
            raise refuse(key, f"must be {_TYPE_TEXT[expected]}, got {_shown(value)}")
    if point.command == "compare":
        return
    try:
        _build(point)
    except ParameterError as error:
        raise refuse(error.parameter, error.message) from None


def _mechanism_keys(point: Point) -> set[str]:
    if point.command == "compare":
        return set()
    return {param.name for param in MECHANISMS[point.mechanism].PARAMS}


def _api_functions(command: str) -> tuple:
    """The API functions whose keyword-only parameters a command's point may set, and the
    records (dataclasses) whose fields it may set one by one (a run's :class:`~rdpcalc.runs.RunOptions`,
    the neighbours' :class:`~rdpcalc.queries.NeighbourOptions`)."""
    run = (runs.account, runs.account_run, runs.RunOptions)
    return {"account": run, "calibrate": (runs.calibrate, *run), "bound": (bounds.bound,),
            "divergence": (queries.divergence, queries.NeighbourOptions), "pmf": (queries.pmf,), "moments": (queries.moments,),
            "compare": (compare.compare, runs.RunOptions)}[command]


def _keyword_parameters(command: str):
    """(name, parameter) of every keyword-only parameter of the command's API functions (but
    ``progress``, ``workers`` — a sweep runs its points in its own workers — and the records
    themselves), and of every field of its records (as a keyword-only parameter)."""
    for function in _api_functions(command):
        if dataclasses.is_dataclass(function):
            for field in dataclasses.fields(function):
                yield field.name, inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, annotation=field.type)
            continue
        for name, parameter in inspect.signature(function).parameters.items():
            record = dataclasses.is_dataclass(parameter.default) and not isinstance(parameter.default, type)
            if parameter.kind == inspect.Parameter.KEYWORD_ONLY and name not in ("progress", "workers") and not record:
                yield name, parameter


@functools.cache
def _keywords(command: str, mechanism: str | None) -> frozenset[str]:
    """The keywords a command's API function takes besides the mechanism's parameters (read
    once per command and mechanism: a spec may expand to a million points)."""
    names = {name for name, _ in _keyword_parameters(command)}
    if command == "calibrate":
        names.discard("params")
    if command == "bound":
        names |= {param.name for param in MECHANISMS[mechanism].BOUND_PARAMS}
    return frozenset(names)


#: what a keyword annotated with these types takes, in words
_TYPE_TEXT = {"int": "an integer", "float": "a number", "str": "a string"}


@functools.cache
def _keyword_types(command: str) -> dict[str, str]:
    """The command's keywords annotated ``int``, ``float`` or ``str`` (optionally ``| None``),
    by name: their values are checked before anything runs (the others, such as ``alphas`` or
    ``x``, take several forms and are checked by the API)."""
    types = {}
    for name, parameter in _keyword_parameters(command):
        annotation = str(parameter.annotation).removesuffix(" | None")
        if annotation in _TYPE_TEXT:
            types[name] = annotation
    return types


def _has_type(value, expected: str) -> bool:
    if isinstance(value, bool):
        return False
    if expected == "int":
        return isinstance(value, int)
    if expected == "float":
        return isinstance(value, int | float)
    return isinstance(value, str)


def _split(point: Point) -> tuple[dict, dict]:
    """A point's parameters: (the mechanism's, the command's other keywords)."""
    declared = _mechanism_keys(point)
    return ({key: value for key, value in point.params.items() if key in declared},
            {key: value for key, value in point.params.items() if key not in declared})


def _build(point: Point):
    """The mechanism of a point (for calibrate, its parameters checked with the solved one left out)."""
    mechanism_params, _ = _split(point)
    if point.command == "calibrate":
        solve = point.params.get("solve")
        if not isinstance(solve, str):
            raise ParameterError("solve", f"must name the parameter to solve for, got {solve!r}")
        runs.check_calibrate_params(point.mechanism, solve, mechanism_params)
        return None
    return queries.make_mechanism(point.mechanism, **mechanism_params)


# ----------------------------------------------------------------------------- one point
def run_point(command: str, mechanism: str | None, params: dict, threads: int | None = None) -> list[dict]:
    """The records of one point: the API call of ``command`` on ``mechanism`` with ``params``,
    each record's values made plain (Python numbers, ±inf kept as floats, lists and dicts
    nested). A failure is one record ``{"error": …}``: the sweep records it and goes on. Runs
    on a worker: imports what it needs; ``threads``: the threads the computation may use (one
    on a cluster's worker, whose neighbours run other points)."""
    point = Point(0, "", command, mechanism, params)
    try:
        with resources.threads_of(threads):
            records = [plain(record, spell_infinity=False) for record in _call(point)]  # a NaN is an error
    except ParameterError as error:
        return [{"error": f"{error.parameter}: {error.message.replace('`', '')}"}]
    except MemoryError as error:
        return [{"error": f"MemoryError: {error}"}]
    except Exception as error:  # noqa: BLE001 - recorded in the table, the sweep goes on
        return [{"error": f"{type(error).__name__}: {error}"}]
    return records


def _call(point: Point) -> list[dict]:
    if point.command == "compare":
        options, rest = runs.RunOptions.split(point.params)
        return compare.compare(options, **rest)
    mechanism_params, options = _split(point)
    if point.command == "calibrate":
        return [runs.calibrate(point.mechanism, params=mechanism_params, **options)]
    mechanism = queries.make_mechanism(point.mechanism, **mechanism_params)
    if point.command == "divergence":
        choose, options = queries.NeighbourOptions.split(options)
        options["choose"] = choose
    function = {"divergence": queries.divergence, "bound": bounds.bound, "account": runs.account,
                "pmf": queries.pmf, "moments": queries.moments}[point.command]
    result = function(mechanism, **options)
    return result if isinstance(result, list) else [result]


# ----------------------------------------------------------------------------- the journal
def journal_path(table: Path) -> Path:
    return table.with_name(table.name + ".journal")


def read_journal(path: Path) -> dict[str, list[dict]]:
    """The points a journal holds (key → rows); a last line cut short by a kill is dropped (and
    cut from the file, so that appending goes on from a whole line). Any other line that does
    not read back as a point (:func:`journal_entry`) is refused: :class:`ParameterError`."""
    done: dict[str, list[dict]] = {}
    if not path.exists():
        return done
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ParameterError("output", f"{str(path)!r} is not a regular file: remove it to start the sweep again")
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    for number, line in enumerate(whole.decode("utf-8", errors="replace").splitlines(), start=1):
        try:
            key, rows = journal_entry(line)
        except ValueError as error:
            raise ParameterError("output", f"{str(path)!r} is not a sweep journal (line {number}: {error}): remove it "
                                           "to start the sweep again") from None
        done[key] = rows
    if len(whole) < len(data):
        with path.open("r+b") as handle:
            handle.truncate(len(whole))
    return done


def journal_entry(line: str) -> tuple[str, list[dict]]:
    """(key, rows) of one journal line as :meth:`Journal.add` writes it: a JSON object with a
    string ``key`` and ``rows``, a list of objects whose values hold no NaN (±∞ are kept);
    anything else raises ValueError saying what is wrong."""

    def refuse_nan(constant: str) -> float:
        if constant == "NaN":
            raise ValueError("it holds NaN")
        return float(constant.replace("Infinity", "inf"))

    try:
        entry = json.loads(line, parse_constant=refuse_nan)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
        raise ValueError("not an object with a key")
    rows = entry.get("rows")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ValueError("its rows are not a list of objects")
    return entry["key"], rows


class Journal:
    """Append-only record of the finished points: one JSON line each, flushed and synced."""

    def __init__(self, path: Path):
        self.path = path
        self.handle = path.open("a", encoding="utf-8")

    def add(self, point: Point, rows: list[dict]) -> None:
        self.handle.write(json.dumps({"key": point.key, "point": point.index, "rows": rows}) + "\n")
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def close(self) -> None:
        self.handle.close()


# ----------------------------------------------------------------------------- the table
def table_rows(points: Sequence[Point], done: dict[str, list[dict]]) -> list[dict]:
    """The tidy rows of the finished points, in spec order (module docstring)."""
    rows = []
    for point in points:
        if point.key not in done:
            continue
        head = {"point": point.index, "task": point.task, "command": point.command, "mechanism": point.mechanism}
        head |= {f"param_{key}": value for key, value in significant(point.params).items()}
        for record in done[point.key]:
            rows.append(head | significant(record))
    return rows


def _ordered_columns(rows: list[dict]) -> list[str]:
    """The columns: the point's, its parameters, the records' fields, and ``error`` last."""
    names = columns(rows)
    head = ["point", "task", "command", "mechanism"]
    params = [name for name in names if name.startswith("param_")]
    fields = [name for name in names if name not in head and name not in params and name != "error"]
    return head + params + fields + (["error"] if "error" in names else [])


def table_bytes(rows: list[dict], form: str) -> bytes:
    """The table as CSV or Parquet bytes."""
    names = _ordered_columns(rows)
    if form == "csv":
        return to_csv([{name: row.get(name) for name in names} for row in rows]).encode("utf-8")
    return _parquet(rows, names)


def _parquet(rows: list[dict], names: list[str]) -> bytes:
    """Parquet: a column of numbers is float64 (int64 when every value is an int), of booleans
    boolean, anything else text (lists and dicts as JSON); missing values are nulls."""
    import pyarrow as pa  # pyarrow (the distributed extra): only for Parquet
    import pyarrow.parquet as pq  # pyarrow (the distributed extra): only for Parquet

    arrays = {}
    for name in names:
        values = [row.get(name) for row in rows]
        present = [value for value in values if value is not None]
        if present and all(isinstance(value, bool) for value in present):
            arrays[name] = pa.array(values, type=pa.bool_())
        elif present and all(isinstance(value, int) and not isinstance(value, bool) for value in present):
            arrays[name] = pa.array(values, type=pa.int64())
        elif present and all(isinstance(value, int | float) and not isinstance(value, bool) for value in present):
            arrays[name] = pa.array([None if value is None else float(value) for value in values], type=pa.float64())
        else:
            arrays[name] = pa.array([None if value is None else value if isinstance(value, str) else
                                     json_text(value, indent=None) for value in values], type=pa.string())
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(arrays), sink)
    return sink.getvalue().to_pybytes()


def table_format(path: Path) -> str:
    """``parquet`` for a .parquet or .pq file, else ``csv``."""
    return "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"


# ----------------------------------------------------------------------------- running
@dataclass
class Outcome:
    """What a sweep did: points in all, run now, taken from the journal, failed; rows written."""

    points: int
    ran: int
    resumed: int
    failed: int
    rows: int


def run_sweep(points: Sequence[Point], output: Path, *, resume: bool = False, serial: bool = False,
              scheduler: str | None = None, workers: int | None = None, checkpoint: float = CHECKPOINT_SECONDS,
              progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Run the points not yet in the journal (all of them, without ``resume``), appending each
    to the journal as it finishes and rewriting the table every ``checkpoint`` seconds; at the
    end write the table and remove the journal. ``serial``: in this process; else on the
    cluster at ``scheduler`` or, by default, on a LocalCluster of ``workers`` processes (default:
    the cores)."""
    if workers is not None:
        check_workers(workers)
    form = table_format(output)
    journal_file = journal_path(output)
    if journal_file.exists() and not resume:
        raise ParameterError("output", f"an interrupted sweep left {str(journal_file)!r}: add --resume to finish it, "
                                       "or remove that file to start again")
    done = read_journal(journal_file) if resume else {}
    todo = [point for point in points if point.key not in done]
    resumed = len(points) - len(todo)
    created = not journal_file.exists()
    journal = Journal(journal_file)
    last_write = [time.monotonic()]
    count = [resumed]

    def write_table() -> int:
        rows = table_rows(points, done)
        write_atomic(output, table_bytes(rows, form))
        last_write[0] = time.monotonic()
        return len(rows)

    def finished(point: Point, rows: list[dict]) -> None:
        journal.add(point, rows)
        done[point.key] = rows
        count[0] += 1
        if progress is not None:
            progress(count[0], len(points))
        if time.monotonic() - last_write[0] >= checkpoint:
            write_table()

    try:
        if progress is not None:
            progress(resumed, len(points))
        if serial:
            for point in todo:
                finished(point, run_point(point.command, point.mechanism, point.params))
        elif todo:
            _run_on_cluster(todo, finished, scheduler, workers)
        written = write_table()
    except BaseException:
        journal.close()
        if created and journal_file.stat().st_size == 0:  # nothing finished: nothing to resume
            journal_file.unlink()
        raise
    journal.close()
    journal_file.unlink()
    failed = sum(any("error" in row for row in done[point.key]) for point in points)
    return Outcome(len(points), len(todo), resumed, failed, written)


def _run_on_cluster(points: Sequence[Point], finished: Callable[[Point, list[dict]], None], scheduler: str | None,
                    workers: int | None) -> None:
    """Submit every point to dask.distributed and hand each result to ``finished`` as it comes
    (the caller's process writes the journal). A point whose workers kept dying (dask's
    ``allowed-failures``) is recorded as failed."""
    import dask  # dask (the distributed extra): start-up time
    from dask.distributed import Client, LocalCluster, as_completed  # dask (the distributed extra): start-up time
    from distributed import KilledWorker  # dask (the distributed extra): start-up time

    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker", "distributed.core",
                 "distributed.comm", "distributed.client"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    cluster = None
    if scheduler is None:
        # dask asks its workers' malloc to return freed memory above 64 KiB at once, so each of the
        # engines' large arrays is mapped afresh: 84 s against 51 s serially for 12 points of the ±c
        # family at n = 1000 … 1550 on two cores; with 256 MiB, 34 s
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": MALLOC_TRIM_BYTES}):
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
    try:
        try:
            client = Client(cluster if cluster is not None else scheduler, timeout="20s")
        except (OSError, TimeoutError) as error:
            raise ParameterError("scheduler", f"cannot reach the scheduler at {scheduler}: {error}") from None
        with client:
            by_future = {}
            for point in points:
                future = client.submit(run_point, point.command, point.mechanism, point.params, 1, pure=False,
                                       key=f"rdpcalc-sweep-{point.index}-{point.key}")
                by_future[future] = point
            for future in as_completed(by_future):
                point = by_future[future]
                try:
                    rows = future.result()
                except KilledWorker:
                    rows = [{"error": "the workers running this point kept dying (out of memory?)"}]
                finished(point, rows)
    finally:
        if cluster is not None:
            cluster.close()


def check_scheduler(address: str) -> str:
    """``address`` if it reads as a scheduler address (tcp://HOST:PORT, or tls://HOST:PORT
    with a client certificate in dask's configuration), else :class:`ParameterError`."""
    protocol, _, rest = address.partition("://")
    host, _, port = rest.rpartition(":")
    if protocol not in ("tcp", "tls") or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ParameterError("scheduler", f"must be an address like tcp://HOST:PORT (PORT 1 … 65535), got {address!r}")
    if protocol == "tls":
        from distributed.security import Security  # dask (the distributed extra): start-up time

        if Security().get_connection_args("client")["ssl_context"] is None:
            raise ParameterError("scheduler", "a tls:// scheduler needs a client certificate: set dask's "
                                              "distributed.comm.tls.ca-file, .client.cert and .client.key (for example "
                                              "DASK_DISTRIBUTED__COMM__TLS__CA_FILE=…), or give a tcp:// address")
    return address


def check_workers(workers: int) -> int:
    """``workers`` if it is 1 … :func:`rdpcalc.resources.max_workers`, else :class:`ParameterError`."""
    most = resources.max_workers()
    if not 1 <= workers <= most:
        raise ParameterError("workers", f"must be an integer in 1 … {most} (four per core), got {workers!r}")
    return workers
