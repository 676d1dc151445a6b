"""The package's shape, checked from the source: layering, no import cycle, no private name
imported across packages, modules and functions of a readable size (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "ragmeter"

#: Each package, from the bottom of the flow up; a package may import those before it only.
#: Packages not named here (new features) sit between ``decide`` and ``cli``.
LAYERS = ["data", "judges", "metrics", "results", "run", "report", "decide"]
TOP = {"cli", "bench", "pytest_plugin", "__init__", "__main__"}


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names, line) of every ``ragmeter`` import, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ragmeter"):
            found.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("ragmeter")]
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _rank(package: str) -> int:
    if package in LAYERS:
        return LAYERS.index(package)
    return len(LAYERS) + (1 if package in TOP else 0)


FILES = sorted(SRC.rglob("*.py"))


def test_each_package_imports_only_packages_below_it():
    upward = []
    for path in FILES:
        own = _package(_module(path))
        for module, _, line in _imports(path):
            other = _package(module)
            if other != own and other != "__init__" and _rank(other) > _rank(own):
                upward.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert upward == []


def test_no_private_name_is_imported_across_packages():
    private = []
    for path in FILES:
        own = _package(_module(path))
        for module, names, line in _imports(path):
            if _package(module) != own:
                private += [f"{path.relative_to(SRC)}:{line} {module}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    assert private == []


def test_there_is_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = defaultdict(set)
    modules = {_module(p) for p in FILES}
    for path in FILES:
        here = _module(path)
        for module, names, _ in _imports(path):
            # "from ragmeter.metrics import ranking" imports the module ragmeter.metrics.ranking.
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules] or [module]
            graph[here].update(t for t in targets if t in modules and t != here)
    # A package's __init__ imports its modules to export them; edges into an __init__ from
    # its own package's modules would make every such package a cycle, and Python resolves
    # them (the submodule is imported first). Those are the only edges left out.
    for here in list(graph):
        graph[here] = {
            t for t in graph[here] if not (here.startswith(t + ".") and (SRC.parent / t.replace(".", "/") / "__init__.py").exists())
        }
    cycle = _find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("graph, expected", [({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]), ({"a": {"b"}, "b": set()}, None)])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert _find_cycle(graph) == expected


#: Longest module, in lines; longest function body, in lines, its docstring and signature aside.
MODULE_LINES, FUNCTION_BODY_LINES = 400, 60


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = function.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    return (function.end_lineno or function.lineno) - body[0].lineno + 1


def _long_functions(source: str) -> list[tuple[str, int]]:
    return [
        (node.name, _body_lines(node))
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > FUNCTION_BODY_LINES
    ]


def test_no_module_and_no_function_is_too_long_to_read():
    long_modules = [
        f"{p.relative_to(SRC)}: {n} lines" for p in FILES if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    ]
    long_functions = [
        f"{p.relative_to(SRC)}: {name}, {n} lines" for p in FILES for name, n in _long_functions(p.read_text(encoding="utf-8"))
    ]
    assert long_modules == [] and long_functions == []


def test_a_function_body_is_counted_without_its_docstring_and_signature():
    docstring = '    """' + "\n".join(["a long docstring"] * 80) + '"""\n'
    signature = "def f(\n" + "".join(f"    a{i}: int,\n" for i in range(80)) + "):\n"
    assert _long_functions(signature + docstring + "    return 1\n") == []
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_BODY_LINES + 1))
    assert _long_functions("def g():\n" + docstring + body) == [("g", FUNCTION_BODY_LINES + 1)]
