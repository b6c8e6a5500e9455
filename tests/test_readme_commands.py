"""Every ``$ rdpcalc …`` block of README.md runs and prints what the README shows.

A block is a ```text fence; each ``$ rdpcalc`` line (continued by a trailing backslash) is run
by bash in an empty folder, standard error merged into standard output as on a terminal; it
must exit 0 (a refusal is shown with ``; echo "exit code $?"``), and its output is compared
line by line with the lines below it, up to the next ``$``. A line that
is only ``…`` stands for any number of lines (the README leaves them out); trailing blanks are
ignored. Tables come out at their natural width (no terminal), as the README prints them.
Commands that take more than a few seconds are marked slow (a sample runs in ``make test``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
#: the commands that take more than about five seconds on two cores (sampled in ``make test``)
SLOW = ("--n 40", "--n 10000", "compare ", "fl ", "mc ", "--rounds 1000", "--rounds 2000", "--trials 256")


def readme_commands(text: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines the README shows) for every ``$ rdpcalc`` line of its text blocks."""
    cases = []
    for block in re.findall(r"```text\n(.*?)```", text, re.S):
        lines = block.rstrip("\n").split("\n")
        index = 0
        while index < len(lines):
            if not lines[index].startswith("$ rdpcalc"):
                index += 1
                continue
            command = lines[index][2:]
            while command.endswith("\\"):
                index += 1
                command = command[:-1].rstrip() + " " + lines[index].strip()
            index += 1
            shown = []
            while index < len(lines) and not lines[index].startswith("$ "):
                shown.append(lines[index])
                index += 1
            cases.append((command, shown))
    return cases


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` is ``shown`` with each ``…`` line standing for any number of lines."""
    shown = [line.rstrip() for line in shown]
    printed = [line.rstrip() for line in printed]
    while shown and not shown[-1]:
        shown.pop()
    while printed and not printed[-1]:
        printed.pop()

    @cache
    def from_here(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(printed)
        if shown[i] == "…":
            return from_here(i + 1, j) or (j < len(printed) and from_here(i, j + 1))
        return j < len(printed) and shown[i] == printed[j] and from_here(i + 1, j + 1)

    return from_here(0, 0)


def test_the_matcher_reads_ellipses_as_any_lines():
    assert matches(["a", "…", "d"], ["a", "b", "c", "d"]) and matches(["a", "…", "d"], ["a", "d"])
    assert not matches(["a", "…", "d"], ["a", "b", "c"]) and not matches(["a", "b"], ["a", "c"])
    assert matches(["a  ", ""], ["a"]) and not matches(["a"], ["a", "b"])


CASES = readme_commands(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("command, shown", [
    pytest.param(command, shown, marks=[pytest.mark.slow] if any(word in command for word in SLOW) else [],
                 id=command.removeprefix("rdpcalc ")[:60]) for command, shown in CASES])
def test_a_readme_command_prints_what_the_readme_shows(command, shown, tmp_path):
    environment = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "RDPCALC_MAX_MEMORY")}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", f"exec 2>&1; {command}"], cwd=tmp_path, capture_output=True, text=True,
                          env=environment, timeout=900)
    printed = done.stdout.split("\n")
    assert done.returncode == 0, done.stdout  # a refusal is shown with '; echo "exit code $?"'
    assert matches(shown, printed), "\n".join(["README shows:", *shown, "", "rdpcalc printed:", *printed])


def test_every_command_block_is_found():
    assert len(CASES) >= 20 and all(command.startswith("rdpcalc ") for command, _ in CASES)
