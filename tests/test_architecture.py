"""The package's floors: imports point down only (imports inside functions count too), there is
no import cycle, every module sits on a floor, each import left inside a function says why, and
the README's table of floors is the one the contract enforces."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rdpcalc"


def contract_floors() -> list[list[str]]:
    """The layers of pyproject.toml's contract, top floor first, each a list of module names
    without the ``rdpcalc.`` prefix."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [[name.strip().removeprefix("rdpcalc.") for name in layer.split("|")] for layer in contract["layers"]]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_layers_contract_holds():
    """import-linter on pyproject.toml's contract, in a process of its own (it prints its report)."""
    script = (f"import sys; from importlinter.cli import lint_imports; "
              f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True, no_logo=True))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_there_is_no_import_cycle():
    graph = grimp.build_graph("rdpcalc", cache_dir=None)
    edges = {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    assert strongly_connected(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_every_module_sits_on_a_floor():
    named = {name for floor in contract_floors() for name in floor}
    top_level = {path.stem for path in PACKAGE.glob("*.py") if path.stem not in ("__init__", "__main__")}
    top_level |= {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert top_level - named == set()
    assert named - top_level == set()


def test_each_import_inside_a_function_gives_its_reason():
    """A comment on the import's first line or on the line above it (start-up time, mostly)."""
    silent = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().split("\n")
        for function in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    line, above = lines[node.lineno - 1], lines[node.lineno - 2].strip()
                    if "#" not in line and not above.startswith("#"):
                        silent.append(f"{path.relative_to(ROOT)}:{node.lineno}: {line.strip()}")
    assert silent == []


def test_the_readme_draws_the_floors_the_contract_enforces():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.split("\n") if re.match(r"\|\s*\d+\s*\|", line)]
    drawn = [re.findall(r"`([a-z_.]+)`", row.split("|")[2]) for row in rows]
    assert drawn == contract_floors()


def public_functions():
    """(where, function node) of every public function of the package: a module's functions and
    its public classes' methods whose names do not start with an underscore."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            members = node.body if isinstance(node, ast.ClassDef) and not node.name.startswith("_") else [node]
            for member in members:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and not member.name.startswith("_"):
                    yield f"{path.relative_to(PACKAGE.parent)}:{member.lineno} {member.name}", member


def parameter_count(function: ast.FunctionDef) -> int:
    """The parameters a caller may pass (``self`` and ``cls`` not counted)."""
    arguments = function.args
    names = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    count = len(names) + (arguments.vararg is not None) + (arguments.kwarg is not None)
    return count - (bool(names) and names[0].arg in ("self", "cls"))


def code_lines(function: ast.FunctionDef) -> int:
    """The lines of a function's body, its docstring left out."""
    body = function.body
    if ast.get_docstring(function) is not None:
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def test_public_functions_are_narrow_and_short():
    """No public function takes more than 10 parameters (they travel as records, such as
    RunOptions and NeighbourOptions), and none has more than 60 lines of code unless its
    docstring says why (a line starting "Long:")."""
    wide = [f"{where} ({parameter_count(node)} parameters)" for where, node in public_functions() if parameter_count(node) > 10]
    long = [f"{where} ({code_lines(node)} lines)" for where, node in public_functions()
            if code_lines(node) > 60 and "\nLong:" not in "\n" + (ast.get_docstring(node) or "")]
    assert not wide and not long, wide + long


def test_the_size_measures_count_what_they_say():
    wide = ast.parse('def f(self, a, /, b, *c, d, **e):\n    """Doc\n    string."""\n    x = 1\n\n    return x\n').body[0]
    assert parameter_count(wide) == 5 and code_lines(wide) == 3
