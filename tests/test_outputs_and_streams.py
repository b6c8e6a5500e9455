"""Files and streams: outputs checked before any work, written all or nothing, never through a
link or over a file rdpcalc did not write; signals, closed or full stdout, narrow terminals and
ASCII-only encodings handled with the documented exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from rdpcalc.cli import main, render

from .unsafe_targets import UNSAFE_KINDS, snapshot, unsafe_target

DIVERGENCE = ["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "0.5", "--alpha", "2"]


def _folder_listing(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("kind", UNSAFE_KINDS)
def test_unsafe_csv_targets_are_refused_and_left_alone(kind, tmp_path, capsys):
    target = unsafe_target(kind, tmp_path)
    before = snapshot(tmp_path)
    code = main([*DIVERGENCE, "--csv", target])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--csv" in err, err
    assert snapshot(tmp_path) == before


def test_device_nodes_are_refused(capsys):
    assert main([*DIVERGENCE, "--csv", os.devnull]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_regular_file_is_replaced(tmp_path, capsys):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    assert main([*DIVERGENCE, "--csv", str(target)]) == 0
    assert target.read_text().startswith("mechanism,")


def test_two_outputs_naming_one_file_are_refused(tmp_path, capsys):
    path = str(tmp_path / "same.csv")
    assert main(["claims", "--paper", "layered", "--csv", path, "--markdown", path]) == 2
    assert "--markdown" in capsys.readouterr().err and _folder_listing(tmp_path) == []


def test_figures_refuse_an_empty_out_and_files_they_did_not_write(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("mine\n")
    assert main(["figures", "all", "--out", ""]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["figures", "all", "--out", "."]) == 2
    assert "README.md" in capsys.readouterr().err
    foreign = tmp_path / "figs" / "corbin-mse.csv"
    foreign.parent.mkdir()
    foreign.write_text("mine\n")
    assert main(["figures", "corbin-mse", "--out", "figs"]) == 2
    assert foreign.read_text() == "mine\n"
    assert main(["figures", "corbin-mse", "--out", "figs", "--force"]) == 0
    assert foreign.read_text() != "mine\n"
    # what rdpcalc wrote is listed, and is overwritten without --force
    assert main(["figures", "corbin-mse", "--out", "figs"]) == 0
    assert "corbin-mse.png" in (tmp_path / "figs" / ".rdpcalc-written").read_text().split()
    assert (tmp_path / "README.md").read_text() == "mine\n"


def test_fl_checks_its_folder_before_training(tmp_path, capsys, monkeypatch):
    from rdpcalc.backend import fl

    (tmp_path / "summary.json").write_text("{}")

    def no_training(*_):
        raise AssertionError("trained before checking --out")

    monkeypatch.setattr(fl, "run", no_training)
    assert main(["fl", "--rounds", "1", "--out", str(tmp_path)]) == 2
    assert "summary.json" in capsys.readouterr().err
    assert (tmp_path / "summary.json").read_text() == "{}"


def test_sigterm_while_writing_leaves_no_temporary(tmp_path, capsys, monkeypatch):
    import rdpcalc.io as rdpcalc_io

    real_fdopen = rdpcalc_io.os.fdopen

    def fdopen_then_terminate(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return real_fdopen(*args, **kwargs)

    monkeypatch.setattr(rdpcalc_io.os, "fdopen", fdopen_then_terminate)
    code = main([*DIVERGENCE, "--csv", str(tmp_path / "out.csv")])
    assert code == 128 + signal.SIGTERM
    assert "terminated" in capsys.readouterr().err
    assert _folder_listing(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the run


def _run_shell(command: str, **environment) -> subprocess.CompletedProcess:
    env = {**os.environ, **environment}
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=120)


CLI = f"{sys.executable} -m rdpcalc " + " ".join(DIVERGENCE)


def test_closed_full_and_broken_stdout(tmp_path):
    closed = _run_shell(f"{CLI} >&-")
    assert closed.returncode == 2 and "standard output" in closed.stderr
    target = tmp_path / "out.csv"
    full = _run_shell(f"{CLI} --csv {target} > /dev/full")
    assert full.returncode == 2 and full.stderr.count("\n") == 1 and "standard output" in full.stderr
    assert not target.exists() and _folder_listing(tmp_path) == []
    piped = _run_shell(f"{CLI} --alphas 1.01:100:200 | head -1 > /dev/null; exit ${{PIPESTATUS[0]}}")
    assert piped.returncode == 0 and piped.stderr == ""


STDERR_COMMANDS = {
    "account": "account rqm --c 1 --extension 1 --m 4 --q 0.5 --n 3 --clients 30 --rounds 5",
    "calibrate": "calibrate gaussian --solve sigma --dp-epsilon 1",
    "sweep": "sweep {spec} --serial --output {folder}/table.csv",
}


@pytest.mark.parametrize("name", sorted(STDERR_COMMANDS))
def test_a_closed_or_full_stderr_does_not_stop_the_work(tmp_path, name):
    """Progress and hints are dropped; the result on standard output (or the table) is the same."""
    (tmp_path / "spec.toml").write_text("[[task]]\ncommand = 'pmf'\nmechanism = 'rqm'\n"
                                        "fixed = { c = 1, delta = 1, m = 4, q = 0.5, x = 0 }\n")
    line = f"{sys.executable} -m rdpcalc " + STDERR_COMMANDS[name].format(spec=tmp_path / "spec.toml", folder=tmp_path)
    outputs = []
    for redirect in ("", "2>&-", "2> /dev/full"):
        run = _run_shell(f"{line} {redirect}")
        assert run.returncode == 0 and "internal error" not in run.stdout, run.stdout + run.stderr
        table = tmp_path / "table.csv"
        outputs.append(run.stdout + (table.read_text() if table.exists() else ""))
    assert outputs[0] == outputs[1] == outputs[2] and outputs[0]


def test_an_ascii_only_encoding_gets_ascii_spellings():
    run = _run_shell(f"{CLI} --alpha inf", PYTHONIOENCODING="ascii")
    assert run.returncode == 0, run.stderr
    assert run.stdout.isascii() and "alpha" in run.stdout and "inf" in run.stdout


def test_numbers_are_never_cut_on_a_narrow_terminal(capsys, monkeypatch):
    argv = ["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "0.5", "--alpha", "2", "--alpha", "inf",
            "--engine", "exact", "--dps", "60"]
    assert main([*argv, "--json"]) == 0
    digits = [r["divergence_digits"] for r in json.loads(capsys.readouterr().out)]
    assert all(len(d) > 50 for d in digits)
    for width in (20, 80, None):
        monkeypatch.setattr(render, "_terminal_width", lambda width=width: width)
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert all(d in out for d in digits), (width, out)
        assert "…" not in out


def test_pmf_shows_whole_probabilities(capsys):
    argv = ["pmf", "qgauss", "--sigma", "0.05", "--k", "8", "--clip", "1", "--x", "0.5"]
    assert main([*argv, "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    tiny = min(records, key=lambda r: r["probability"])
    assert tiny["probability"] < 1e-40
    assert main(argv) == 0
    assert tiny["probability_digits"] in capsys.readouterr().out


@pytest.mark.parametrize("size", ["5x", "0.5k", "-1G", "", "200%%"])
def test_max_memory_must_be_a_size(size, capsys):
    assert main([*DIVERGENCE, "--max-memory", size]) == 2
    assert "--max-memory" in capsys.readouterr().err


def test_progress_bar_on_a_terminal_with_real_totals_and_json_on_stdout():
    import pty
    import re
    import select

    controller, terminal = pty.openpty()
    argv = [sys.executable, "-m", "rdpcalc", "divergence", "rqm", "--c", "1", "--extension", "1", "--m", "16", "--q", "0.42",
            "--n", "60", "--alpha", "2", "--json"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=terminal, env={**os.environ, "COLUMNS": "120"})
    os.close(terminal)
    shown = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    out = process.communicate(timeout=120)[0]
    os.close(controller)
    assert process.returncode == 0
    assert json.loads(out)[0]["n"] == 60
    text = shown.decode("utf-8", "replace")
    counts = re.findall(r"(\d+)/(\d+)", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text))
    assert counts and all(int(done) <= int(total) for done, total in counts)
    assert "ETA" in text and "None" not in text


def test_every_file_written_below_a_table_gets_a_wrote_line(tmp_path, capsys):
    csv_file = tmp_path / "d.csv"
    assert main([*DIVERGENCE, "--csv", str(csv_file)]) == 0
    assert capsys.readouterr().out.endswith(f"wrote {csv_file}\n") and csv_file.exists()
    for quiet_or_json in (["--quiet"], ["--json"]):
        assert main([*DIVERGENCE, "--csv", str(csv_file), *quiet_or_json]) == 0
        assert "wrote" not in capsys.readouterr().out
