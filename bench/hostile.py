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

7–11 are the third round's (the reliability issue of the sweeps, schedulers and windowed
brackets): 7. brackets of windowed noises that are not brackets (ends inverted or decreasing in
α); 8. sweep specs, damaged journals and scheduler addresses not refused with exit 2 and one
line; 9. command lines still running at 60 s that said nothing on stderr (no terminal); 10. a
closed stderr that stops a run; 11. a broken mechanism that registers and then fails as an
internal error. ``python bench/hostile.py 7 8`` runs only those sections (and prints, writing
nothing).

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
            fast = [r["divergence"] for r in rdpcalc.divergence(mechanism, alphas=ORDERS,
                                                                choose=rdpcalc.NeighbourOptions(neighbours=neighbours))]
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
    "rqm": ["--c", "1.5", "--extension", "1.5", "--m", "16", "--q", "0.42"],
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
    "divergence rqm --c 1e30 --extension 1e-300 --m 4 --q 0.5 --alpha 2",
    "divergence rqm --c 9.99e300 --extension 1 --m 4 --q 0.5",
    "divergence rqm --c 1e300 --extension 1e300 --m 4096 --q 0.5 --alpha 2 --neighbours paper",
    "divergence qmgeo --R 2 --p 1e-300 --w-max 1e300 --alpha inf",
    "divergence corbin --eps-p 1e300 --d 2 --alpha 2",
    "divergence corbin --eps-p 1e-300 --d inf --alpha 2",
    "account qgauss --sigma 1e-300 --k 4 --clip 1e300",
    "account rqm --c 1e300 --extension 1e-300 --m 4 --q 0.5 --rounds 1000000000 --dim 1000000000",
    "calibrate gaussian --solve sigma --target-eps 1e-300",
    "calibrate rqm --extension 1 --m 4 --q 0.5 --solve c --target-eps 1e300",
    "mc qgauss --sigma 1e-300 --k 4 --clip 1e300 --x 1e300 --samples 100",
    "mc corbin --eps-p 700 --d 2 --x 1 --x-prime -1 --samples 1000",
    "fl --mechanism rqm --c 0.05 --extension 0.05 --m 16 --q 0.42 --rounds 2 --lr 1e300",
]
ENVIRONMENT_CASES = [
    "PYTHONIOENCODING=ascii {cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 --alpha inf",
    "LC_ALL=C PYTHONIOENCODING= {cli} bound pbm --c 1 --theta 0.25 --trials 4",
    "{cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 >&-",
    "{cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 > /dev/full",
    "{cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 --alphas 1.01:100:500 | head -1",
    "{cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 --csv /proc/version",
    "{cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 --csv /{long}.csv",
    "{cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5 --csv /sys/nowhere/x.csv",
    "printf 'trunc' | gzip | head -c 20 > {tmp}/t.gz; {cli} fl --images {tmp}/t.gz --labels {tmp}/t.gz",
    "printf '\\x00\\x00\\x08\\x03\\x7f\\xff\\xff\\xff\\x7f\\xff\\xff\\xff\\x7f\\xff\\xff\\xff' > {tmp}/bomb; "
    "{cli} fl --images {tmp}/bomb --labels {tmp}/bomb",
    "{cli} fl --images /nonexistent --labels /nonexistent",
    "COLUMNS=0 {cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5",
    "COLUMNS=abc {cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5",
    "RDPCALC_MAX_MEMORY=lots {cli} divergence rqm --c 1 --extension 1 --m 4 --q 0.5",
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
    (["divergence", "rqm", "--c", "1", "--extension", "1", "--m", "4", "--q", "0.5", "--alpha", "2"], "--csv"),
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
    "divergence rqm --c 1 --extension 1 --m 16 --q 0.4 --grid 2001",
    "divergence rqm --c 1 --extension 1 --m 16 --q 0.4 --alphas 1.01:1000:100000",
    "divergence rqm --c 1 --extension 1 --m 4096 --q 0.4",
    "divergence qmgeo --R 4096 --p 0.5 --w-max 1",
    "divergence rqm --c 1 --extension 1 --m 4096 --q 0.4 --n 1000",
    "divergence qgauss --sigma 1 --k 4096 --clip 1 --n 1000000 --others-plus 0",
    "bound qgauss --sigma 1 --k 4096 --clip 1",
    "account pbm --c 1 --theta 0.25 --trials 4096 --n 1000 --clients 100000 --rounds 1000",
    "account rqm --c 1 --extension 1 --m 4096 --q 0.4 --n 1000 --clients 100000",
    "pmf rqm --c 1 --extension 1 --m 4096 --q 0.4 --x 0 --dps 1000",
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


# ----------------------------------------------------------------------------- 7. brackets (third round)
BRACKET_ORDERS = [1, 1 + 1e-9, 1.01, 2, 10, 1e5, math.inf]


def survey_brackets() -> dict[str, tuple[int, int]]:
    """Windowed noises at extreme tail masses and covers: a lower end above its upper end, or
    an end that decreases in α (D_α does not)."""
    counts = {"lower end above upper end": 0, "an end decreasing in α": 0, "internal error": 0}
    total = 0
    for name, extra in (("ddg", {"gamma": "0.25", "sigma": "0.5"}), ("skellam", {"gamma": "0.5", "mu": 4})):
        for tail in (1e-6, 1e-30, 1e-100, 1e-300):
            for cover in (1, 16, 256):
                for n in (1, 4):
                    total += 1
                    try:
                        mechanism = rdpcalc.make_mechanism(name, c=1, tail=tail, cover=cover, **extra)
                        records = rdpcalc.divergence(mechanism, n=n, alphas=BRACKET_ORDERS)
                    except ParameterError:
                        continue
                    except Exception:  # noqa: BLE001 - counted
                        counts["internal error"] += 1
                        continue
                    lowers = [r["divergence"] for r in records]
                    uppers = [r.get("certified_upper", r["divergence"]) for r in records]
                    counts["lower end above upper end"] += any(a > b for a, b in zip(lowers, uppers))
                    counts["an end decreasing in α"] += lowers != sorted(lowers) or uppers != sorted(uppers)
    return {key: (value, total) for key, value in counts.items()}


# ----------------------------------------------------------------------------- 8. sweeps
SWEEP_TASK = "[[task]]\ncommand = 'pmf'\nmechanism = 'rqm'\nfixed = { c = 1, delta = 1, m = 4, q = 0.5, "
SWEEP_SPECS = [
    SWEEP_TASK + "x = 0, dps = nan }\n",
    SWEEP_TASK + "dps = 30 }\ngrid = { x = [0, nan] }\n",
    SWEEP_TASK + "dps = 30 }\npoints = [{ x = nan }]\n",
    SWEEP_TASK + "x = { a = { b = { c = 1 } } } }\n",
    SWEEP_TASK + "x = 0 }\ngrid = { dps = [" + "[" * 3000 + "30" + "]" * 3000 + "] }\n",
    SWEEP_TASK.replace("'rqm'", "['rqm']") + "x = 0 }\n",
    SWEEP_TASK + "x = 1979-05-27 }\n",
    SWEEP_TASK + "x = [[0]] }\n",
]
SWEEP_JOURNALS = ["3", "null", '["a", "b"]', '{"key": "k", "rows": [NaN]}', '{"key": "k", "rows": [{"x": NaN}]}',
                  '{"key": 3, "rows": []}', '{"key": "k", "rows": ["x"]}', "[" * 100_000]
SWEEP_OPTIONS = [["--scheduler", "tls://127.0.0.1:1"], ["--scheduler", "tcp://127.0.0.1:99999"]]


def survey_sweeps() -> dict[str, tuple[int, int]]:
    """Hostile specs, damaged journals and scheduler addresses: anything but exit 2 with one line."""
    failing = {"spec": 0, "journal": 0, "scheduler": 0}
    good = SWEEP_TASK + "x = 0 }\n"
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)

        def refused(text: str, *extra: str, journal: str | None = None) -> bool:
            spec, table = folder / "spec.toml", folder / "table.csv"
            spec.write_text(text)
            (folder / "table.csv.journal").unlink(missing_ok=True)
            if journal is not None:
                (folder / "table.csv.journal").write_text(journal + "\n")
            code, _, err = run_in_process(["sweep", str(spec), "--output", str(table), *extra])
            return code == 2 and err.count("\n") == 1

        failing["spec"] = sum(not refused(text, "--serial") for text in SWEEP_SPECS)
        failing["journal"] = sum(not refused(good, "--serial", "--resume", journal=line) for line in SWEEP_JOURNALS)
        failing["scheduler"] = sum(not refused(good, *options) for options in SWEEP_OPTIONS)
    return {"spec not refused with exit 2": (failing["spec"], len(SWEEP_SPECS)),
            "damaged journal not refused": (failing["journal"], len(SWEEP_JOURNALS)),
            "scheduler not refused": (failing["scheduler"], len(SWEEP_OPTIONS))}


# ----------------------------------------------------------------------------- 9. silent waits
RQM = "--c 1.5 --extension 1.5 --m 16 --q 0.42"
SILENT_CASES = [
    "sweep {folder}/spec.toml --output {folder}/t.csv --workers 99999999999999999999",
    "sweep {folder}/fifo.toml --serial --output {folder}/t.csv",
    f"account rqm {RQM} --n 3 --rounds 50 --discretization 1e-6",
    "account pbm --c 1 --theta 0.25 --trials 16 --dim 1000 --discretization 1e-6",
    f"account rqm {RQM} --rounds 1000000 --plot {{folder}}/run.png",
]


def run_watched(command: str, seconds: float) -> tuple[int, str]:
    """(exit code, stderr so far) of a bash command line, stopped at ``seconds`` (exit code −1)."""
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(["bash", "-c", command], stdout=subprocess.DEVNULL, stderr=err,
                                   start_new_session=True)
        try:
            code = process.wait(seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            code = -1
        err.seek(0)
        return code, err.read()


def survey_silent() -> dict[str, tuple[int, int]]:
    """Command lines still running at 60 s that said nothing on stderr (no terminal: no bar)."""
    silent = 0
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "spec.toml").write_text(SWEEP_TASK + "x = 0 }\n")
        os.mkfifo(Path(folder, "fifo.toml"))
        for case in SILENT_CASES:
            code, err = run_watched(f"{PYTHON} -m rdpcalc {case.format(folder=folder)} > /dev/null", 60)
            silent += code == -1 and not err.strip()
    return {"running at 60 s without a word": (silent, len(SILENT_CASES))}


# ----------------------------------------------------------------------------- 10. closed stderr
CLOSED_STDERR_CASES = [
    f"account rqm {RQM} --n 3 --rounds 50",
    "calibrate gaussian --solve sigma --dp-epsilon 1",
    "compare --n 2 --bits 4 --dp-epsilon 3",
    "sweep {folder}/spec.toml --serial --output {folder}/t.csv",
    f"divergence rqm {RQM}",
]


def survey_closed_stderr() -> dict[str, tuple[int, int]]:
    failing = 0
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "spec.toml").write_text(SWEEP_TASK + "x = 0 }\n")
        for case in CLOSED_STDERR_CASES:
            Path(folder, "t.csv").unlink(missing_ok=True)
            code, out, _ = run_shell(f"{PYTHON} -m rdpcalc {case.format(folder=folder)} 2>&-", timeout=300)
            failing += code != 0 or "internal error" in out
    return {"exit ≠ 0 with stderr closed": (failing, len(CLOSED_STDERR_CASES))}


# ----------------------------------------------------------------------------- 11. register()
def _coin_class(name, **overrides):
    """A one-trial coin mechanism (P(1 | x) = ½ + x/(4c)), with class attributes overridden."""
    from dataclasses import dataclass
    from fractions import Fraction

    import mpmath

    from rdpcalc.mechanisms import Mechanism, Param

    def pmf(self, x):
        one = mpmath.mpf(0.5) + mpmath.mpf(Fraction(x) / self.c) / 4
        return [1 - one, one]

    body = {"__annotations__": {"c": Fraction}, "name": name, "title": "Coin", "paper": "none",
            "PARAMS": (Param("c", "number", "input bound c > 0", low=0, low_open=True),),
            "EXAMPLE": {"--c": "1"}, "bound": property(lambda self: self.c), "support_size": property(lambda self: 2),
            "breakpoints": lambda self: (-self.c, self.c), "pmf": pmf,
            "output_values": lambda self: [Fraction(0), Fraction(1)]}
    body.update(overrides)
    return dataclass(frozen=True)(type("Coin", (Mechanism,), body))


REGISTER_CASES = [
    {"pmf": lambda self, x: [mpmath_mpf("0.45"), mpmath_mpf("0.45")]},
    {"pmf": lambda self, x: [mpmath_mpf("-0.5"), mpmath_mpf("1.5")]},
    {"pmf": lambda self, x: [mpmath_mpf(1)]},
    {"name": None},
    {"name": "two words"},
    {"title": None},
    {"EXAMPLE": {"--c": "-1"}},
]


def mpmath_mpf(text):
    import mpmath

    return mpmath.mpf(text)


def survey_register() -> dict[str, tuple[int, int]]:
    """Broken mechanisms: registered, then an internal error (exit 1) in a command."""
    from rdpcalc.mechanisms import MECHANISMS, register

    failing = 0
    for number, overrides in enumerate(REGISTER_CASES):
        name = f"coin{number}"
        try:
            cls = _coin_class(overrides.get("name", name), **{k: v for k, v in overrides.items() if k != "name"})
            register(cls)
        except (ValueError, TypeError):
            continue  # refused at registration, naming the class
        except Exception:  # noqa: BLE001 - counted
            failing += 1
            continue
        try:
            code, _, _ = run_in_process(["divergence", str(cls.name), "--c", "1"])
            failing += code == 1
        finally:
            MECHANISMS.pop(cls.name, None)
    return {"registered, then an internal error": (failing, len(REGISTER_CASES))}


def main_survey() -> None:
    sections = [("1. wrong values", survey_values), ("2. NaN", survey_nan), ("3. display", survey_display),
                ("4. exit codes", survey_exit_codes), ("5. files", survey_files), ("6. resources", survey_resources),
                ("7. brackets", survey_brackets), ("8. sweeps", survey_sweeps), ("9. silent waits", survey_silent),
                ("10. closed stderr", survey_closed_stderr), ("11. register()", survey_register)]
    chosen = set(sys.argv[1:])
    sections = [(title, survey) for title, survey in sections if not chosen or title.split(".")[0] in chosen]
    lines = ["# Hostile survey", "", "`python bench/hostile.py`: command lines that fail, by class (failing / all).", "",
             "| class | failure | count |", "|---|---|---|"]
    for title, survey in sections:
        started = time.perf_counter()
        for failure, (failing, total) in survey().items():
            lines.append(f"| {title} | {failure} | {failing} / {total} |")
            print(lines[-1], f"({time.perf_counter() - started:.0f} s)", flush=True)
    if not chosen:
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main_survey()
