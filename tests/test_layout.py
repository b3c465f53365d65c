"""The project's layout rules, read from the sources with :mod:`ast` (nothing is imported).

* Import direction: ``checks`` (the argument checks) imports nothing of the
  project and every package may import it; besides it, ``hw`` imports nothing
  of the project but ``hw``; ``golden`` nothing but ``golden``; ``flows`` only
  ``hw``; ``sim`` only ``golden``, ``hw`` and ``flows``; ``tb`` only
  ``golden``, ``hw``, ``flows`` and ``sim``; ``formal`` only ``hw`` and
  ``flows`` (:data:`ALLOWED`).
* No product module imports a test module (``tests`` or any ``test_*`` module).
* No import cycle between project modules, counting imports made inside
  functions (a late import does not make a cycle go away).
* Size: no function over :data:`MAX_FUNCTION` lines, no file over
  :data:`MAX_FILE` lines, outside ``tests/`` (a file that is one concept may be
  listed in :data:`ONE_CONCEPT` with the reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flows.verilog import BLOCKS

REPO = Path(__file__).resolve().parent.parent

#: package -> the project packages it may import (itself included)
ALLOWED: dict[str, set[str]] = {
    "checks": {"checks"},
    "hw": {"hw", "checks"},
    "golden": {"golden", "checks"},
    "cluster": {"cluster", "checks"},
    "flows": {"flows", "hw", "cluster", "checks"},
    "sim": {"sim", "golden", "hw", "flows", "cluster", "checks"},
    "tb": {"tb", "golden", "hw", "flows", "sim", "cluster", "checks"},
    "formal": {"formal", "hw", "flows", "checks"},
}
PROJECT = set(ALLOWED) | {"tests"}

MAX_FUNCTION = 150
MAX_FILE = 600
#: files allowed over MAX_FILE lines, with the one concept they hold
ONE_CONCEPT: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    """Every project module outside ``tests/``: dotted name -> path."""
    out = {}
    for pkg in ALLOWED:
        for path in sorted((REPO / pkg).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """``(imported project module, line)`` for every import in the file, including
    those inside functions. ``from a import b`` names ``a.b`` if that is a module."""
    out = []
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package_of(module, path).split(".")
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub if sub in MODULES else base, node.lineno))
    return [(m, line) for m, line in out if m.split(".")[0] in PROJECT]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, path in MODULES.items():
        deps = set()
        for target, _line in _imports(mod, path):
            while target and target not in MODULES:  # `import a.b.c` names a.b.c's module
                target = target.rpartition(".")[0]
            if target and target != mod:
                deps.add(target)
        graph[mod] = deps
    return graph


def test_import_direction() -> None:
    bad = []
    for mod, path in MODULES.items():
        pkg = mod.split(".")[0]
        for target, line in _imports(mod, path):
            top = target.split(".")[0]
            if top not in ALLOWED[pkg]:
                bad.append(f"{path.relative_to(REPO)}:{line}: {pkg} imports {target}")
    assert not bad, "imports against the layout's direction:\n" + "\n".join(bad)


def test_no_product_module_imports_a_test_module() -> None:
    bad = []
    for mod, path in MODULES.items():
        if path.name.startswith("test_"):
            continue
        for target, line in _imports(mod, path):
            if target.split(".")[0] == "tests" or target.rpartition(".")[2].startswith("test_"):
                bad.append(f"{path.relative_to(REPO)}:{line}: imports {target}")
    assert not bad, "product modules importing test modules:\n" + "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_check_can_fail() -> None:
    """The checks above see what they are meant to see (a check that cannot fail is none)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # `from golden import tree as _tree` in golden/accept.py names the module golden.tree
    assert "golden.tree" in _graph()["golden.accept"]


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", sorted(MODULES.values()), ids=lambda p: str(p.relative_to(REPO)))
def test_sizes(path: Path) -> None:
    rel = str(path.relative_to(REPO))
    text = path.read_text()
    n = text.count("\n")
    if rel not in ONE_CONCEPT:
        assert n <= MAX_FILE, f"{rel}: {n} lines (at most {MAX_FILE}, or list it in ONE_CONCEPT)"
    long = [
        f"{rel}:{f.lineno}: {f.name} has {f.end_lineno - f.lineno + 1} lines"
        for f in _functions(ast.parse(text))
        if f.end_lineno - f.lineno + 1 > MAX_FUNCTION
    ]
    assert not long, "\n".join(long)


def test_every_block_found_by_its_one_name() -> None:
    """A block's RTL, testbench and doc page carry the block's (Verilog module's) name."""
    for block, where in BLOCKS.items():
        assert where.split(":")[0] == f"hw.{block}", f"{block}: RTL in {where}"
        tb = [REPO / "tb" / f"test_{block}.py", REPO / "tb" / block]
        assert any(p.exists() for p in tb), f"{block}: no tb/test_{block}.py or tb/{block}/"
        assert (REPO / "docs" / "blocks" / f"{block}.md").exists(), f"{block}: no doc page"
