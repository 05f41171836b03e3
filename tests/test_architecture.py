"""The package's shape: which module may import which, and how large a module may grow.

The import graph is read from the source (ast), function-level imports included: a deferred import
is still a dependency, and a cycle hidden inside a function is still a cycle. Imports under
`if TYPE_CHECKING:` are left out (they never run).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fssl_core"
MAX_LINES = 500
# A module may pass MAX_LINES only with a reason in its docstring naming the limit.
SIZE_REASON = "over 500 lines"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import / ImportFrom node that runs, skipping `if TYPE_CHECKING:` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    """module -> the fssl_core modules it imports. Importing a.b.c runs the package a.b's __init__
    too, so a module outside a.b that imports a.b.c depends on a.b as well."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if not target.startswith("fssl_core"):
                    continue
                while target and target not in modules:          # an attribute of a module
                    target = target.rpartition(".")[0]
                parts = target.split(".")
                chain = [".".join(parts[:i]) for i in range(2, len(parts) + 1)]   # fssl_core itself is empty
                for dep in chain:
                    inside = name == dep or name.startswith(dep + ".")
                    if dep in modules and dep != name and not inside:
                        graph[name].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_walk_finds_a_cycle_hidden_in_a_function():
    graph = {"fssl_core.a": {"fssl_core.b"}, "fssl_core.b": {"fssl_core.a"}, "fssl_core.c": {"fssl_core.a"}}
    assert cycles(graph) == [["fssl_core.a", "fssl_core.b"]]
    tree = ast.parse("def f():\n    from .b import x\nif TYPE_CHECKING:\n    from .c import y\n")
    assert [n.module for n in _imports(tree)] == ["b"]


def test_no_import_cycle_in_fssl_core():
    assert cycles(import_graph()) == []


def test_the_store_never_imports_an_executor_and_report_never_a_paper():
    graph = import_graph()
    store = [m for m in graph if m == "fssl_core.store" or m.startswith("fssl_core.store.")]
    assert store, "fssl_core.store is missing"
    for module in store:
        assert not {d for d in graph[module] if d.startswith("fssl_core.executors")}, module
    for module in ("fssl_core.report", "fssl_core.plots"):
        assert not {d for d in graph[module] if d.startswith("fssl_core.papers")}, module


ENGINE = ("fssl_core.engine", "fssl_core.trainer", "fssl_core.training", "fssl_core.cohort", "fssl_core.algorithms",
          "fssl_core.models", "fssl_core.data")


def test_the_store_persists_and_proves_and_never_imports_the_engine():
    """The trainer owns the rounds (trainer.py); the store only writes and checks a run's files."""
    graph = import_graph()
    for module in [m for m in graph if m == "fssl_core.store" or m.startswith("fssl_core.store.")]:
        assert not {d for d in graph[module] if d.startswith(ENGINE)}, module


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_module_over_500_lines_without_a_reason(name):
    path = _modules()[name]
    lines = len(path.read_text().splitlines())
    if lines > MAX_LINES:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert SIZE_REASON in doc, (f"{path.relative_to(PACKAGE.parent)} has {lines} lines; split it or say why in "
                                    f"its docstring ('{SIZE_REASON}: ...')")


@pytest.mark.parametrize("path,ignored", [
    ("runs/0123456789abcdef/config.json", False), ("runs/0123456789abcdef/env.json", False),
    ("runs/0123456789abcdef/metrics.jsonl", False), ("runs/0123456789abcdef/result.json", False),
    ("runs/0123456789abcdef/checkpoint.pt", True), ("runs/0123456789abcdef/.lock", True),
    ("runs/0123456789abcdef/.result.json.k2x9.tmp", True), ("runs/0123456789abcdef/damaged-20261126T0700/result.json", True),
])
def test_git_tracks_a_runs_records_and_ignores_what_stays_local(path, ignored):
    """`git add $(python -m fssl_core records)` needs no -f, and no checkpoint is ever committed."""
    import shutil
    import subprocess
    root = PACKAGE.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    check = subprocess.run(["git", "check-ignore", "-q", path], cwd=root)
    assert check.returncode == (0 if ignored else 1), path
