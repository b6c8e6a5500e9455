"""A hostile user's survey: command lines by class of failure, and how many of each still fail.

Run with ``python bench/hostile.py`` (about ten minutes on two cores); writes
``bench/hostile.md``. The classes are those of the reliability issue:

1. wrong values: the fast engine against the exact one over extreme parameters of every
   mechanism (+∞ where the exact value is finite, a finite value off by more than 1e-9
   relative plus 1e-12 absolute — the fast engine's stated accuracy —, a value that decreases
   in α, NaN);
2. NaN in Monte Carlo statistics;
3. display: a number of the JSON output missing from the table at some terminal width, or "…";
4. exit codes: "internal error" (exit 1) on user input, environment or streams;
5. files: an output target changed that had to be refused, or a temporary left behind;
6. resources: a command line killed by a 6 GiB address-space limit (instead of being refused
   up front, exit 2, or finishing), and one still running at 60 s (it now shows a progress
   bar with an ETA on a terminal).

Each row counts command lines: failing / all.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rdpcalc  # noqa: E402
from rdpcalc import cli  # noqa: E402
from rdpcalc.cli import main  # noqa: E402
from rdpcalc.errors import ParameterError  # noqa: E402
from tests.unsafe_targets import UNSAFE_KINDS, snapshot, unsafe_target  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "hostile.md"
ORDERS = [1, 1 + 1e-12, 1.5, 2, 100, 1e4, 1e6, math.inf]
PYTHON = sys.executable


def run_in_process(argv: list[str], width: int | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    original = getattr(cli, "_terminal_width", None)  # absent before the display fix: rich's 80 columns
    cli._terminal_width = lambda: width
    os.environ["COLUMNS"] = str(width or 80)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        cli._terminal_width = original
        del os.environ["COLUMNS"]
    return code, out.getvalue(), err.getvalue()


def run_shell(command: str, timeout: float = 120) -> tuple[int, str, float]:
    """(exit code, stdout, seconds) of a bash command line; exit code −1 past ``timeout``."""
    started = time.perf_counter()
    try:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout, time.perf_counter() - started
    except subprocess.TimeoutExpired:
        return -1, "", time.perf_counter() - started


# ----------------------------------------------------------------------------- 1. values
def extreme_parameter_sets() -> list[tuple[str, dict]]:
    tiny, huge = "1e-300", "1e300"
    sets = [("rqm", {"c": c, "delta": d, "m": m, "q": q}) for c in (tiny, "1", huge) for d in (tiny, "1", huge)
            for m in (2, 16) for q in ("1e-12", "0.5", "0.999999999999")]
    sets += [("pbm", {"c": "1", "theta": t, "trials": k}) for t in ("1e-12", "0.25", "0.499999999999")
             for k in (1, 16, 256)]
    sets += [("qgauss", {"sigma": s, "k": k, "clip": c}) for s in (tiny, "1e-8", "0.001", "1", "1000", huge)
             for k in (2, 16, 256, 4096) for c in (tiny, "1", huge)]
    sets += [("rqm", {"c": "1", "delta": d, "m": 1024, "q": q}) for d in ("1e-9", "1", "1e9") for q in ("1e-12", "0.5")]
    sets += [("qmgeo", {"R": r, "p": p, "w_max": w}) for r in (2, 8) for p in ("1e-12", "0.5", "0.999999999999")
             for w in (tiny, "1", huge)]
    sets += [("corbin", {"eps_p": e}) for e in (tiny, "1e-9", "1", "60", "300", "700", huge)]
    return sets


def survey_values() -> dict[str, tuple[int, int]]:
    counts = {"false +∞": 0, "wrong finite value": 0, "decreasing in α": 0, "NaN": 0, "internal error": 0}
    total = 0
    for name, params in extreme_parameter_sets():
        total += 1
        try:
            mechanism = rdpcalc.make_mechanism(name, **params)
            levels = max(int(params.get(key, 0)) for key in ("m", "k", "trials", "R"))
            # beyond 256 levels the single-client search over all pairs takes minutes: the pair (c, −c)
            neighbours = "worst" if levels <= 256 else "paper"
            fast = [r["divergence"] for r in rdpcalc.divergence(mechanism, alphas=ORDERS, neighbours=neighbours)]
            exact = ([r["divergence"] for r in rdpcalc.divergence(mechanism, alphas=ORDERS, engine="exact", dps=40)]
                     if levels <= 256 else fast)  # the exact engine at 4096 levels takes minutes: fast checks only
        except ParameterError:
            continue
        except Exception:  # noqa: BLE001 - counted
            counts["internal error"] += 1
            continue
        counts["NaN"] += any(math.isnan(v) for v in fast)
        counts["false +∞"] += any(f == math.inf and e < math.inf for f, e in zip(fast, exact, strict=True))
        counts["wrong finite value"] += any(math.isfinite(f) and abs(f - e) > 1e-9 * abs(e) + 1e-12
                                            for f, e in zip(fast, exact, strict=True))
        counts["decreasing in α"] += any(b < a * (1 - 1e-12) for a, b in zip(fast, fast[1:]))
    return {key: (value, total) for key, value in counts.items()}


# ----------------------------------------------------------------------------- 2. NaN
MECHANISM_ARGS = {
    "rqm": ["--c", "1.5", "--delta", "1.5", "--m", "16", "--q", "0.42"],
    "pbm": ["--c", "1.5", "--theta", "0.25", "--trials", "16"],
    "qgauss": ["--sigma", "1", "--k", "16", "--clip", "1"],
    "qmgeo": ["--R", "8", "--p", "0.5", "--w-max", "1"],
    "corbin": ["--eps-p", "1", "--d", "2"],
}
INPUTS = {"rqm": ("1.5", "-1.5"), "pbm": ("1.5", "-1.5"), "qgauss": ("0.5", "-0.5"), "qmgeo": ("1", "0"),
          "corbin": ("1", "-1")}


def survey_nan() -> dict[str, tuple[int, int]]:
    failing = errors = total = 0
    for name, args in MECHANISM_ARGS.items():
        x, x_prime = INPUTS[name]
        for samples in ("1", "2", "10", "1000", "100000"):
            for bootstrap in ("40", "200"):
                argv = ["mc", name, *args, "--x", x, "--x-prime", x_prime, "--samples", samples, "--bootstrap",
                        bootstrap, "--json"]
                code, out, _ = run_in_process(argv)
                total += 1
                failing += "nan" in out.lower()
                errors += code == 1
    return {"NaN printed": (failing, total), "internal error": (errors, total)}


# ----------------------------------------------------------------------------- 3. display
DISPLAY_COMMANDS = [
    ["divergence", "rqm", *MECHANISM_ARGS["rqm"], "--engine", "exact", "--dps", "50"],
    ["divergence", "pbm", *MECHANISM_ARGS["pbm"], "--n", "5", "--engine", "exact"],
    ["pmf", "qgauss", "--sigma", "0.05", "--k", "8", "--clip", "1", "--x", "0.5"],
    ["pmf", "rqm", *MECHANISM_ARGS["rqm"], "--x", "1.5", "--dps", "80"],
    ["bound", "qgauss", *MECHANISM_ARGS["qgauss"], "--alpha", "2"],
    ["account", "rqm", *MECHANISM_ARGS["rqm"], "--n", "10", "--clients", "100", "--rounds", "10"],
]


def _numbers(value) -> list[str]:
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    if isinstance(value, str) and len(value) > 20 and value.replace(".", "").replace("e-", "").isdigit():
        return [value]
    return []


def survey_display() -> dict[str, tuple[int, int]]:
    failing = total = 0
    for argv in DISPLAY_COMMANDS:
        _, out, _ = run_in_process([*argv, "--json"])
        digits = _numbers(json.loads(out))
        for width in (1, 20, 40, 80, 200, None):
            total += 1
            code, text, _ = run_in_process(argv, width)
            failing += code != 0 or "…" in text or any(d not in text for d in digits)
    return {"number cut or missing": (failing, total)}


# ----------------------------------------------------------------------------- 4. exit codes
EXIT_CASES = [
    "account gaussian --sigma 1 --sensitivity 1e300",
    "account gaussian --sigma 1e-300 --sensitivity 1e300 --rounds 1000000",
    "account laplace --scale 1e-300 --sensitivity 1e300",
    "bound qgauss --sigma 1e-300 --clip 1e300 --k 4",
    "bound qgauss --sigma 1e300 --clip 1e-300 --k 4096",
    "bits layered --n 100000 --t 1e299",
    "bits layered --noise laplace --sigma 1e-300 --t 1e300",
    "divergence layered --sigma 1e-300 --sensitivity 1e300",
    "divergence layered --noise laplace --sigma 1e-300 --sensitivity 1e300 --alpha 2",
    "divergence layered --noise irwin-hall --n 1000000 --sigma 1e-300",
    "divergence rqm --c 1e30 --delta 1e-300 --m 4 --q 0.5 --alpha 2",
    "divergence rqm --c 9.99e300 --delta 1 --m 4 --q 0.5",
    "divergence rqm --c 1e300 --delta 1e300 --m 4096 --q 0.5 --alpha 2 --neighbours paper",
    "divergence qmgeo --R 2 --p 1e-300 --w-max 1e300 --alpha inf",
    "divergence corbin --eps-p 1e300 --d 2 --alpha 2",
    "divergence corbin --eps-p 1e-300 --d inf --alpha 2",
    "account qgauss --sigma 1e-300 --k 4 --clip 1e300",
    "account rqm --c 1e300 --delta 1e-300 --m 4 --q 0.5 --rounds 1000000000 --dim 1000000000",
    "calibrate gaussian --solve sigma --target-eps 1e-300",
    "calibrate rqm --delta 1 --m 4 --q 0.5 --solve c --target-eps 1e300",
    "mc qgauss --sigma 1e-300 --k 4 --clip 1e300 --x 1e300 --samples 100",
    "mc corbin --eps-p 700 --d 2 --x 1 --x-prime -1 --samples 1000",
    "fl --mechanism rqm --c 0.05 --delta 0.05 --m 16 --q 0.42 --rounds 2 --lr 1e300",
]
ENVIRONMENT_CASES = [
    "PYTHONIOENCODING=ascii {cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 --alpha inf",
    "LC_ALL=C PYTHONIOENCODING= {cli} bound pbm --c 1 --theta 0.25 --trials 4",
    "{cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 >&-",
    "{cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 > /dev/full",
    "{cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 --alphas 1.01:100:500 | head -1",
    "{cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 --csv /proc/version",
    "{cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 --csv /{long}.csv",
    "{cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5 --csv /sys/nowhere/x.csv",
    "printf 'trunc' | gzip | head -c 20 > {tmp}/t.gz; {cli} fl --images {tmp}/t.gz --labels {tmp}/t.gz",
    "printf '\\x00\\x00\\x08\\x03\\x7f\\xff\\xff\\xff\\x7f\\xff\\xff\\xff\\x7f\\xff\\xff\\xff' > {tmp}/bomb; "
    "{cli} fl --images {tmp}/bomb --labels {tmp}/bomb",
    "{cli} fl --images /nonexistent --labels /nonexistent",
    "COLUMNS=0 {cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5",
    "COLUMNS=abc {cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5",
    "RDPCALC_MAX_MEMORY=lots {cli} divergence rqm --c 1 --delta 1 --m 4 --q 0.5",
]


def survey_exit_codes() -> dict[str, tuple[int, int]]:
    internal = sum(run_in_process(line.split())[0] == 1 for line in EXIT_CASES)
    with tempfile.TemporaryDirectory() as folder:
        lines = [case.format(cli=f"{PYTHON} -m rdpcalc", long="x" * 300, tmp=folder) for case in ENVIRONMENT_CASES]
        environment = sum(run_shell(f"{line}; exit ${{PIPESTATUS[0]}}")[0] == 1 for line in lines)
    return {"internal error on extreme input": (internal, len(EXIT_CASES)),
            "internal error on environment or streams": (environment, len(ENVIRONMENT_CASES))}


# ----------------------------------------------------------------------------- 5. files
FILE_COMMANDS = [
    (["divergence", "rqm", "--c", "1", "--delta", "1", "--m", "4", "--q", "0.5", "--alpha", "2"], "--csv"),
    (["account", "gaussian", "--sigma", "1"], "--plot"),
    (["account", "gaussian", "--sigma", "1"], "--csv"),
    (["claims", "--paper", "layered"], "--markdown"),
    (["mc", "rqm", *MECHANISM_ARGS["rqm"], "--x", "1", "--samples", "1000"], "--csv"),
]
def survey_files() -> dict[str, tuple[int, int]]:
    damaged = total = 0
    for argv, option in FILE_COMMANDS:
        for kind in UNSAFE_KINDS:
            with tempfile.TemporaryDirectory() as name:
                folder = Path(name)
                target = unsafe_target(kind, folder, ".png" if option == "--plot" else ".md" if option == "--markdown"
                                 else ".csv")
                before = snapshot(folder)
                code, _, _ = run_in_process([*argv, option, target])
                total += 1
                damaged += code != 2 or snapshot(folder) != before
    for out in ("", ".", "foreign"):
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            (folder / "README.md").write_text("mine")
            (folder / "foreign").mkdir()
            (folder / "foreign" / "corbin-mse.csv").write_text("mine")
            before = snapshot(folder)
            cwd = os.getcwd()
            os.chdir(folder)
            try:
                code, _, _ = run_in_process(["figures", "corbin-mse", "--out", out])
                code_all, _, _ = run_in_process(["figures", "all", "--out", out]) if out == "." else (2, "", "")
            finally:
                os.chdir(cwd)
            after = snapshot(folder)
            total += 1  # new figure files may appear beside them; the files already there must not change
            damaged += (out != "." and code != 2) or code_all != 2 or any(after.get(k) != v for k, v in before.items())
    with tempfile.TemporaryDirectory() as name:
        _, temporaries, _ = run_shell(f"cd {name} && ({PYTHON} -m rdpcalc figures all --out figs 2> /dev/null & "
                                      f"pid=$!; sleep 8; kill -TERM $pid; wait $pid); ls -a figs | grep -c '\\.tmp$'")
        total += 1
        damaged += temporaries.strip() != "0"
    return {"target changed or accepted": (damaged, total)}


# ----------------------------------------------------------------------------- 6. resources
RESOURCE_CASES = [
    "mc pbm --c 1 --theta 0.25 --trials 16 --x 0 --n 3000",
    "mc pbm --c 1 --theta 0.25 --trials 4096 --x 0 --n 10000 --samples 1000000",
    "divergence pbm --c 1 --theta 0.25 --trials 4096 --n 100000 --others-plus 0",
    "divergence rqm --c 1 --delta 1 --m 16 --q 0.4 --grid 2001",
    "divergence rqm --c 1 --delta 1 --m 16 --q 0.4 --alphas 1.01:1000:100000",
    "divergence rqm --c 1 --delta 1 --m 4096 --q 0.4",
    "divergence qmgeo --R 4096 --p 0.5 --w-max 1",
    "divergence rqm --c 1 --delta 1 --m 4096 --q 0.4 --n 1000",
    "divergence qgauss --sigma 1 --k 4096 --clip 1 --n 1000000 --others-plus 0",
    "bound qgauss --sigma 1 --k 4096 --clip 1",
    "account pbm --c 1 --theta 0.25 --trials 4096 --n 1000 --clients 100000 --rounds 1000",
    "account rqm --c 1 --delta 1 --m 4096 --q 0.4 --n 1000 --clients 100000",
    "pmf rqm --c 1 --delta 1 --m 4096 --q 0.4 --x 0 --dps 1000",
]


def survey_resources() -> dict[str, tuple[int, int]]:
    killed = slow = 0
    for line in RESOURCE_CASES:
        code, _, seconds = run_shell(f"ulimit -v {6 * 2**20}; timeout 60 {PYTHON} -m rdpcalc {line} --json "
                                     "> /dev/null 2>&1", timeout=90)
        slow += code == 124
        killed += code not in (0, 2, 124)
    return {"killed or out of memory": (killed, len(RESOURCE_CASES)),
            "still running at 60 s": (slow, len(RESOURCE_CASES))}


def main_survey() -> None:
    sections = [("1. wrong values", survey_values), ("2. NaN", survey_nan), ("3. display", survey_display),
                ("4. exit codes", survey_exit_codes), ("5. files", survey_files), ("6. resources", survey_resources)]
    lines = ["# Hostile survey", "", "`python bench/hostile.py`: command lines that fail, by class (failing / all).", "",
             "| class | failure | count |", "|---|---|---|"]
    for title, survey in sections:
        started = time.perf_counter()
        for failure, (failing, total) in survey().items():
            lines.append(f"| {title} | {failure} | {failing} / {total} |")
            print(lines[-1], f"({time.perf_counter() - started:.0f} s)", flush=True)
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main_survey()
