"""``rdpcalc sweep``: a spec's points, its tidy table against direct API calls, the same table
from a LocalCluster, from a scheduler and workers started as separate processes (one of them
killed mid-sweep), and after an interrupted run resumed; bad specs refused naming the key."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import rdpcalc
from rdpcalc.cli import main
from rdpcalc.io import ARTEFACT_DIGITS as DIGITS
from rdpcalc.sweep import expand, journal_path, load_spec, run_sweep

#: a sweep of a few seconds: 12 points of about 0.3 s each (RQM, the ±c family of n clients)
SLOW_SPEC = """
[[task]]
name = "pm-c"
command = "divergence"
mechanism = "rqm"
fixed = { c = 1, delta = 1, q = 0.42, m = 16, neighbours = "pm-c", alphas = [2, "inf"] }
grid = { n = [200, 210, 220, 230, 240, 250, 260, 270, 280, 290, 300, 310] }
"""

#: several commands, a grid crossed with a list, a list value kept whole
MIXED_SPEC = """
[[task]]
name = "rqm"
command = "divergence"
mechanism = "rqm"
fixed = { c = 1, delta = 1, q = 0.42, alphas = [1, 2, "inf"] }
grid = { m = [4, 8], n = [3, 5] }
points = [{ neighbours = "pm-c" }, { neighbours = "worst" }]

[[task]]
command = "account"
mechanism = "pbm"
fixed = { c = 1, trials = 4, n = 5, rounds = 3, dp_delta = 1e-5 }
grid = { theta = [0.15, 0.3] }
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _run_cli(args, capsys) -> tuple[int, str]:
    code = main(list(map(str, args)))
    return code, capsys.readouterr().err


def test_a_spec_expands_to_the_product_of_its_grid_crossed_with_its_points():
    points = expand({"task": [{"command": "divergence", "mechanism": "rqm", "fixed": {"c": 1, "delta": 1, "q": 0.4},
                               "grid": {"m": [4, 8, 16], "n": [2, 3]},
                               "points": [{"neighbours": "pm-c"}, {"neighbours": "worst"}]},
                              {"name": "second", "command": "compare", "fixed": {"bits": 10, "dp_epsilon": 1},
                               "grid": {"n": [10, 20]}}]})
    assert len(points) == 3 * 2 * 2 + 2
    assert [point.index for point in points] == list(range(14))
    assert points[0].params == {"c": 1, "delta": 1, "q": 0.4, "m": 4, "n": 2, "neighbours": "pm-c"}
    assert points[1].params["neighbours"] == "worst" and points[2].params["n"] == 3  # the last key runs fastest
    assert points[4].params["m"] == 8
    assert {point.task for point in points} == {"task1", "second"}
    assert points[-1].mechanism is None and points[-1].params == {"bits": 10, "dp_epsilon": 1, "n": 20}
    assert len({point.key for point in points}) == 14


def test_the_serial_table_holds_the_records_of_direct_api_calls(tmp_path):
    """Each row of the table is a record of the API called with that point's parameters (the
    floats to DIGITS significant digits), with the parameters as param_* columns."""
    spec = _write(tmp_path, "mixed.toml", MIXED_SPEC)
    out = tmp_path / "mixed.csv"
    outcome = run_sweep(load_spec(spec), out, serial=True)
    assert (outcome.points, outcome.ran, outcome.failed) == (10, 10, 0)
    table = pd.read_csv(out)
    assert list(table.columns[:4]) == ["point", "task", "command", "mechanism"]
    rqm = table[table.command == "divergence"]
    for m in (4, 8):
        for n in (3, 5):
            for neighbours in ("pm-c", "worst"):
                records = rdpcalc.divergence(rdpcalc.make_mechanism("rqm", c=1, delta=1, m=m, q=0.42), n=n, alphas=[1, 2, "inf"],
                                             choose=rdpcalc.NeighbourOptions(neighbours=neighbours))
                rows = rqm[(rqm.param_m == m) & (rqm.param_n == n) & (rqm.param_neighbours == neighbours)]
                assert list(rows.divergence) == [float(f"{r['divergence']:.{DIGITS}g}") for r in records]
    accounted = table[table.command == "account"]
    for theta in (0.15, 0.3):
        record = rdpcalc.account(rdpcalc.make_mechanism("pbm", c=1, theta=theta, trials=4), n=5, rounds=3,
                                 dp_delta=1e-5)
        row = accounted[accounted.param_theta == theta]
        assert list(row.epsilon) == [float(f"{record['epsilon']:.{DIGITS}g}")]
    assert not journal_path(out).exists()


def test_a_local_cluster_sweep_equals_the_serial_sweep(tmp_path):
    spec = load_spec(_write(tmp_path, "mixed.toml", MIXED_SPEC))
    run_sweep(spec, tmp_path / "serial.csv", serial=True)
    outcome = run_sweep(spec, tmp_path / "cluster.csv", workers=2)
    assert outcome.ran == 10
    assert (tmp_path / "cluster.csv").read_bytes() == (tmp_path / "serial.csv").read_bytes()
    run_sweep(spec, tmp_path / "cluster.parquet", workers=2)
    parquet, csv = pd.read_parquet(tmp_path / "cluster.parquet"), pd.read_csv(tmp_path / "serial.csv")
    assert list(parquet.columns) == list(csv.columns)
    pd.testing.assert_series_equal(parquet.divergence, csv.divergence)


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _journal_points(path: Path) -> set[int]:
    if not path.exists():
        return set()
    lines = path.read_text().split("\n")[:-1]
    return {json.loads(line)["point"] for line in lines}


def test_a_sweep_on_a_separate_scheduler_loses_no_point_when_a_worker_is_killed(tmp_path):
    """A scheduler and two workers (no nanny: a killed worker stays dead) as processes of their
    own; once the sweep runs, the worker processing a point is killed (SIGKILL) before that point
    finished. The scheduler runs it again on the other worker: the table equals the serial one."""
    from dask.distributed import Client

    spec = _write(tmp_path, "slow.toml", SLOW_SPEC)
    serial = tmp_path / "serial.csv"
    run_sweep(load_spec(spec), serial, serial=True)
    scheduler_file = tmp_path / "scheduler.json"
    processes = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        _wait_for(lambda: scheduler_file.exists() and scheduler_file.stat().st_size, 60, "the scheduler")
        address = json.loads(scheduler_file.read_text())["address"]
        workers = {}
        for _ in range(2):
            worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                       "--no-nanny", "--no-dashboard"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            processes.append(worker)
            workers[worker.pid] = worker
        with Client(address, timeout="30s") as watcher:
            watcher.wait_for_workers(2, timeout=60)
            pids = watcher.run(os.getpid)  # worker address → process id
            out = tmp_path / "remote.csv"
            sweep = subprocess.Popen([sys.executable, "-m", "rdpcalc", "sweep", str(spec), "--scheduler", address,
                                      "--output", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            processes.append(sweep)
            _wait_for(lambda: _journal_points(journal_path(out)), 120, "the first finished point")

            def busy_worker():
                processing = watcher.processing()
                return next(((pids[address], keys[0]) for address, keys in processing.items() if keys), None)

            pid, key = _wait_for(busy_worker, 30, "a worker processing a point")
            killed_point = int(str(key).split("-")[2])
            workers[pid].send_signal(signal.SIGKILL)
            workers[pid].wait(10)
            assert killed_point not in _journal_points(journal_path(out))  # it was lost with the worker
            _, stderr = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, stderr
        assert out.read_bytes() == serial.read_bytes()
        assert killed_point in set(pd.read_csv(out).point)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(10)


def test_a_killed_sweep_resumes_where_it_stopped(tmp_path):
    """A serial sweep killed (SIGKILL) after a few points, its journal's last line cut short: the
    table written at the last checkpoint holds the points done; --resume runs only the others
    and gives the table of an uninterrupted sweep."""
    spec = _write(tmp_path, "slow.toml", SLOW_SPEC)
    full = tmp_path / "full.csv"
    run_sweep(load_spec(spec), full, serial=True)
    out = tmp_path / "resumed.csv"
    first = subprocess.Popen([sys.executable, "-m", "rdpcalc", "sweep", str(spec), "--serial", "--output", str(out),
                              "--checkpoint", "0.001"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: len(_journal_points(journal_path(out))) >= 3, 120, "three finished points")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finished = _journal_points(journal_path(out))
    assert 3 <= len(finished) < 12
    checkpointed = pd.read_csv(out)
    assert set(checkpointed.point) <= finished and len(set(checkpointed.point)) >= 2
    with journal_path(out).open("a") as journal:
        journal.write('{"key": "cut sho')
    completed = subprocess.run([sys.executable, "-m", "rdpcalc", "sweep", str(spec), "--serial", "--output", str(out),
                                "--resume"], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert f"{12 - len(finished)} run in this process, {len(finished)} from the journal" in completed.stderr
    assert out.read_bytes() == full.read_bytes()
    assert not journal_path(out).exists()


def test_a_journal_left_behind_is_not_overwritten_without_resume(tmp_path, capsys):
    spec = _write(tmp_path, "mixed.toml", MIXED_SPEC)
    out = tmp_path / "mixed.csv"
    journal_path(out).write_text("")
    code, err = _run_cli(["sweep", spec, "--serial", "--output", out], capsys)
    assert code == 2 and "--output" in err and "--resume" in err
    assert not out.exists()


@pytest.mark.parametrize("damaged", ["not json", "3", "null", '["a", "b"]', '{"key": "b", "rows": [NaN]}',
                                     '{"key": "b", "rows": [{"divergence": NaN}]}', '{"key": 3, "rows": []}',
                                     '{"key": "b", "rows": ["x"]}', '{"key": "b"}', "[" * 100_000])
def test_a_damaged_journal_is_refused_naming_the_output(tmp_path, capsys, damaged):
    spec = _write(tmp_path, "mixed.toml", MIXED_SPEC)
    out = tmp_path / "mixed.csv"
    journal_path(out).write_text('{"key": "a", "rows": [{"divergence": Infinity}]}\n' + damaged + "\n")
    code, err = _run_cli(["sweep", spec, "--serial", "--output", out, "--resume"], capsys)
    assert code == 2 and err.startswith("rdpcalc: error: --output:") and "line 2" in err and err.count("\n") == 1
    assert not out.exists()


def test_a_point_that_fails_at_run_time_is_a_row_with_its_error(tmp_path, capsys):
    spec = _write(tmp_path, "fails.toml", """
[[task]]
command = "divergence"
mechanism = "rqm"
fixed = { c = 1, delta = 1, q = 0.42, m = 4, n = 3, alphas = [2] }
grid = { others_plus = [1, 7] }
""")
    out = tmp_path / "fails.csv"
    code, err = _run_cli(["sweep", spec, "--serial", "--output", out], capsys)
    assert code == 0 and "1 point failed" in err
    table = pd.read_csv(out)
    assert list(table.columns)[-1] == "error"
    good, bad = table[table.param_others_plus == 1], table[table.param_others_plus == 7]
    assert good.error.isna().all() and good.divergence.notna().all()
    assert bad.error.iloc[0].startswith("others_plus: must be an integer in [0, n−1]")


RQM_TASK = "[[task]]\ncommand = 'pmf'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4, q = 0.4, "


@pytest.mark.parametrize("text, key", [
    ("[[task]\n", "is not valid TOML"),
    ("title = 'x'\n", "title: is not a key of a sweep spec"),
    ("[[task]]\ncommand = 'divergenc'\n", "task[1].command: must be one of"),
    ("[[task]]\ncommand = 'divergence'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4 }\ngrid = { q = [0.4, 2] }\n",
     "task[1].grid.q: must be a number in (0, 1), got 2"),
    ("[[task]]\ncommand = 'divergence'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4, q = 0.4, nn = 3 }\n",
     "task[1].fixed.nn: is not a parameter of divergence or rqm"),
    ("[[task]]\ncommand = 'divergence'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4 }\n",
     "task[1]: q is required for rqm"),
    ("[[task]]\ncommand = 'divergence'\nmechanism = 'rqm'\ngrid = { n = 3 }\n", "task[1].grid.n: must be a non-empty list"),
    ("[[task]]\ncommand = 'account'\nmechanism = 'nope'\n", "task[1].mechanism: must be one of"),
    ("[[task]]\ncommand = 'compare'\nmechanism = 'rqm'\n", "task[1].mechanism: compare takes no mechanism"),
    ("[[task]]\ncommand = 'bound'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4, q = 0.4 }\n"
     "points = [{ alphas = [2] }, { m = 8 }]\n", "task[1].points[2].m: is also in fixed"),
    ("[[task]]\ncommand = 'pmf'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4, q = 0.4, x = 0 }\n"
     "[[task]]\ncommand = 'pmf'\nmechanism = 'pbm'\nname = 'task1'\n",
     "task[2].name: 'task1' names two tasks"),
    (RQM_TASK + "alphas = [nan] }\n", "task[1].fixed.alphas: is NaN"),
    (RQM_TASK + "alphas = [2] }\ngrid = { x = [0, nan] }\n", "task[1].grid.x[2]: is NaN"),
    (RQM_TASK + "alphas = [2] }\npoints = [{ dps = nan }]\n", "task[1].points[1].dps: is NaN"),
    (RQM_TASK + "alphas = { a = { b = 1 } } }\n", "task[1].fixed.alphas: holds a table"),
    (RQM_TASK + "alphas = [[2]] }\n", "task[1].fixed.alphas: holds a list inside a list"),
    (RQM_TASK + "x = 1979-05-27 }\n", "task[1].fixed.x: holds a date"),
    (RQM_TASK.replace("'rqm'", "['rqm']") + "alphas = [2] }\n", "task[1].mechanism: must be a mechanism's name"),
    (RQM_TASK + "alphas = [2] }\npoints = [{ mechanism = 3 }]\n", "task[1].points[1].mechanism: must be a"),
    (RQM_TASK + "alphas = [" + "[" * 5000 + "]" * 5000 + "] }\n", "nests arrays or tables too deeply"),
    (RQM_TASK + "x = 0, dps = inf }\n", "task[1].fixed.dps: must be an integer, got inf"),
    (RQM_TASK.replace("'pmf'", "'divergence'") + "alphas = [2] }\ngrid = { n = [2, 2.5] }\n",
     "task[1].grid.n: must be an integer, got 2.5"),
    (RQM_TASK.replace("'pmf'", "'divergence'") + "alphas = [2], engine = true }\n",
     "task[1].fixed.engine: must be a string, got True"),
])
def test_a_bad_spec_exits_2_naming_the_file_and_the_key(tmp_path, capsys, text, key):
    spec = _write(tmp_path, "bad.toml", text)
    code, err = _run_cli(["sweep", spec, "--serial", "--output", tmp_path / "bad.csv"], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"rdpcalc: error: SPEC.toml: {spec}: ")
    assert key in err
    assert not any(tmp_path.glob("bad.csv*"))


def test_a_spec_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path, capsys):
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    code, err = _run_cli(["sweep", fifo, "--serial", "--output", tmp_path / "x.csv"], capsys)
    assert code == 2 and "is not a regular file" in err


@pytest.mark.parametrize("args, option", [
    (["--scheduler", "localhost"], "--scheduler: must be an address like tcp://HOST:PORT"),
    (["--workers", "0"], "--workers: must be an integer in 1 …"),
    (["--workers", "99999999999999999999"], "--workers: must be an integer in 1 …"),
    (["--scheduler", "tls://127.0.0.1:1"], "--scheduler: a tls:// scheduler needs a client certificate"),
    (["--scheduler", "tcp://127.0.0.1:70000"], "--scheduler: must be an address like tcp://HOST:PORT"),
    (["--serial", "--workers", "2"], "--workers: cannot be combined with --serial"),
    (["--checkpoint", "0"], "--checkpoint: must be > 0"),
])
def test_bad_options_exit_2_naming_the_option(tmp_path, capsys, args, option):
    spec = _write(tmp_path, "mixed.toml", MIXED_SPEC)
    code, err = _run_cli(["sweep", spec, "--output", tmp_path / "x.csv", *args], capsys)
    assert code == 2 and option in err


def test_the_table_floats_have_fixed_significant_digits(tmp_path):
    spec = load_spec(_write(tmp_path, "mixed.toml", MIXED_SPEC))
    out = tmp_path / "t.csv"
    run_sweep(spec, out, serial=True)
    text = io.StringIO(out.read_text())
    table = pd.read_csv(text)
    digits = [len(repr(value).replace(".", "").replace("-", "").lstrip("0").split("e")[0])
              for value in table.divergence if 0 < abs(value) < float("inf")]
    assert max(digits) <= DIGITS and len(digits) > 10


def test_the_readme_spec_is_a_valid_sweep():
    """The spec the README shows expands (every key checked, every mechanism built) to its 12 points."""
    import re
    import tomllib

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## Sweeps"):]
    points = expand(tomllib.loads(re.search(r"```toml\n(.*?)```", section, re.S).group(1)))
    assert len(points) == 2 * 2 * 2 + 4
    assert {point.command for point in points} == {"divergence", "account"}


def test_a_missing_extra_exits_2_naming_the_option(tmp_path, capsys, monkeypatch):
    """Without pyarrow a .parquet output is refused naming --output; without dask.distributed a
    sweep that is not --serial is refused naming --serial (both say which extra to install)."""
    import importlib.util

    spec = _write(tmp_path, "mixed.toml", MIXED_SPEC)
    real = importlib.util.find_spec
    for module, args, option in (("pyarrow", ["--serial", "--output", tmp_path / "t.parquet"], "--output"),
                                 ("distributed", ["--output", tmp_path / "t.csv"], "--serial")):
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, module=module: None if name == module
                            else real(name, *a))
        code, err = _run_cli(["sweep", spec, *args], capsys)
        assert code == 2 and err.startswith(f"rdpcalc: error: {option}:") and "rdpcalc[distributed]" in err
    assert not list(tmp_path.glob("t.*"))


def test_the_example_spec_runs_and_a_missing_spec_points_to_it(tmp_path, capsys):
    code = main(["sweep", "--example"])
    example = capsys.readouterr().out
    assert code == 0
    spec = _write(tmp_path, "example.toml", example)
    points = load_spec(spec)
    assert len(points) == 2 * 2 * 2 + 4 and {point.params.get("m") for point in points[:8]} == {8, 16}
    code, err = _run_cli(["sweep", "--serial"], capsys)
    assert code == 2 and "'rdpcalc sweep --example' prints one" in err


def test_command_line_names_are_accepted_as_keys_unless_they_mean_something_else(tmp_path, capsys):
    spec = _write(tmp_path, "names.toml", """
[[task]]
command = "divergence"
mechanism = "ddg"
fixed = { c = 1, gamma = 0.25, sigma = 0.5, tail-mass = 1e-8, alphas = [2] }

[[task]]
command = "divergence"
mechanism = "rqm"
fixed = { c = 1, extension = 1, q = 0.42, alphas = [2], n = 2 }
grid = { levels = [4] }

[[task]]
command = "pmf"
mechanism = "corbin"
fixed = { c = 0.5, x = 0.5, eps_p = 1 }
""")
    ddg, rqm, corbin = load_spec(spec)
    assert ddg.params["tail"] == 1e-8 and "tail-mass" not in ddg.params
    assert rqm.params["m"] == 4 and rqm.params["n"] == 2  # n: the command's clients, not a parameter's spelling
    assert rqm.params["delta"] == 1 and "extension" not in rqm.params
    assert corbin.params["c"] == 0.5 and "r" not in corbin.params  # CorBin's c is its center (its --c is r)
    both = _write(tmp_path, "both.toml", "[[task]]\ncommand = 'pmf'\nmechanism = 'rqm'\n"
                                         "fixed = { c = 1, delta = 1, q = 0.4, m = 4, x = 0 }\ngrid = { levels = [4] }\n")
    code, err = _run_cli(["sweep", both, "--serial", "--output", tmp_path / "both.csv"], capsys)
    assert code == 2 and "task[1].grid.levels: is rqm's m, also given as m: give it once" in err
