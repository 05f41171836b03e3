"""The package's shape: which module may import which, and how large a module may grow.

The import graph is read from the source (ast) and counts every kind of import: function-level ones (a
deferred import is still a dependency, and a cycle hidden inside a function is still a cycle), those under
`if TYPE_CHECKING:` (a type-only import still says which module knows which), a submodule's import of its
own package's names, and a module named in a string ("fssl_core.executors.local:LocalExecutor", a registry
that importlib loads). `test_the_walk_finds_a_planted_cycle_of_each_kind` plants one of each.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fssl_core"
MAX_LINES = 500
# A module may pass MAX_LINES only with a reason in its docstring naming the limit.
SIZE_REASON = "over 500 lines"
MODULE_TEXT = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?")


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {_module_name(p, package): p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts}


def _imports(tree: ast.AST):
    """Every Import / ImportFrom node, wherever it sits (functions and `if TYPE_CHECKING:` included)."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _named_in_strings(tree: ast.AST, root: str) -> list[str]:
    """Modules of the package named in a string constant: "pkg.mod" or "pkg.mod:attribute"."""
    return [node.value.partition(":")[0] for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.startswith(root + ".") and MODULE_TEXT.fullmatch(node.value)]


def _resolved(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return base


def import_graph(package_dir: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports. Importing a.b.c runs the package a.b's __init__
    too, so a module outside a.b that imports a.b.c depends on a.b as well; a module inside a.b that
    imports a name of a.b itself depends on a.b."""
    root = package_dir.name
    modules = _modules(package_dir)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = _named_in_strings(tree, root)
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            else:
                base = _resolved(node, package)
                targets += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            if not target.startswith(root):
                continue
            while target and target not in modules:          # an attribute of a module
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)                      # what the line names, a parent package too
            parts = target.split(".")
            for dep in (".".join(parts[:i]) for i in range(2, len(parts))):   # the packages it runs on the way
                inside = name == dep or name.startswith(dep + ".")
                if dep in modules and not inside:
                    graph[name].add(dep)
    return graph


def private_imports(package_dir: Path = PACKAGE) -> list[str]:
    """`from <module of the package> import _name` anywhere in the package: a private name of another module."""
    root = package_dir.name
    found = []
    for name, path in _modules(package_dir).items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and _resolved(node, package).startswith(root):
                found += [f"{name}: {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


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


PLANTED = {
    "function": {"a.py": "def f():\n    from .b import x\n", "b.py": "from .a import f\nx = 1\n"},
    "type_checking": {"a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
                      "b.py": "from .a import TYPE_CHECKING\nclass B: ...\n"},
    "importlib": {"a.py": "import importlib\nREGISTRY = {'b': 'pkg.b:B'}\n"
                          "def load(n):\n    return importlib.import_module(REGISTRY[n].partition(':')[0])\n",
                  "b.py": "from .a import REGISTRY\nclass B: ...\n"},
    "parent": {"__init__.py": "from .child import helper\nNAMES = ('x',)\n",
               "child.py": "def helper():\n    from . import NAMES\n    return NAMES\n"},
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_the_walk_finds_a_planted_cycle_of_each_kind(tmp_path, kind):
    package = tmp_path / "pkg"
    package.mkdir()
    files = {"__init__.py": "", **PLANTED[kind]}
    for file, text in files.items():
        (package / file).write_text(text)
    found = cycles(import_graph(package))
    assert len(found) == 1 and len(found[0]) == 2, found


def test_the_walk_finds_a_private_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def _hidden():\n    return 1\n")
    (package / "b.py").write_text("def f():\n    from .a import _hidden\n    return _hidden()\n")
    assert private_imports(package) == ["pkg.b: _hidden"]


def test_no_module_imports_a_private_name_of_another():
    assert private_imports() == []


def test_no_import_cycle_in_fssl_core():
    assert cycles(import_graph()) == []


def test_the_store_never_imports_an_executor_and_report_never_a_paper():
    graph = import_graph()
    store = [m for m in graph if m == "fssl_core.store" or m.startswith("fssl_core.store.")]
    assert store, "fssl_core.store is missing"
    for module in store:
        assert not {d for d in graph[module] if d.startswith("fssl_core.executors")}, module
    for module in [m for m in graph if m == "fssl_core.report" or m.startswith("fssl_core.report.")]:
        assert not {d for d in graph[module] if d.startswith("fssl_core.papers")}, module


def test_config_is_a_leaf_and_no_registry_imports_run_config():
    """config.py declares what a config is made of and imports nothing of the package, at any level; the
    registries import it, and RunConfig (run_config.py), which asks them, sits above them."""
    graph = import_graph()
    assert graph["fssl_core.config"] == set()
    registries = [m for m in graph if m.startswith(("fssl_core.algorithms", "fssl_core.models", "fssl_core.data"))]
    assert registries and not [m for m in registries if "fssl_core.run_config" in graph[m]]


# The package's layers, bottom to top: a module imports only from its own layer's package or those below.
LAYERS = [
    ("config", "paths"), ("data", "models"), ("learning",), ("algorithms",), ("run_config", "profiles", "explore"),
    ("store",), ("engine",), ("executors", "integrations"), ("report",), ("papers",), ("job",),
    ("perf",), ("cli",), ("__main__",),
]
ENTRY_POINTS = {"__init__", "__main__", "cli", "config", "run_config", "profiles", "paths"}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_import_points_down_the_layers():
    """What `farm-studio look` draws: each root module and sub-package imports only its own layer's or lower."""
    layer = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    graph = import_graph()
    units = {_unit(m) for m in graph} - {"fssl_core"}
    assert units == set(layer), f"a module or package outside LAYERS: {sorted(units ^ set(layer))}"
    up = sorted({(_unit(m), _unit(d)) for m, deps in graph.items() for d in deps
                 if _unit(d) != "fssl_core" and layer[_unit(d)] > layer[_unit(m)]})
    assert up == [], f"imports pointing up the layers: {up}"


def test_the_root_holds_only_the_packages_entry_points():
    root = {p.stem for p in PACKAGE.glob("*.py")}
    assert root == ENTRY_POINTS, f"not an entry point, move it into its layer's package: {sorted(root - ENTRY_POINTS)}"


# what trains (learning.precision, the device's numeric flags the store records, is not among it)
ENGINE = ("fssl_core.engine", "fssl_core.learning.training", "fssl_core.learning.cohort", "fssl_core.learning.batches",
          "fssl_core.learning.aggregate", "fssl_core.learning.ssl", "fssl_core.algorithms", "fssl_core.models",
          "fssl_core.data")


def _reports_that_train(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, d) for m, deps in graph.items() if m == "fssl_core.report" or m.startswith("fssl_core.report.")
                  for d in deps if d.startswith(("fssl_core.executors", *ENGINE)))


def test_the_report_only_reads_and_the_check_finds_a_planted_import():
    """Reports turn stored results and published rows into tables, claims and figures; training is entered from
    the job (job/cells.py), which notebooks and the CLI call. An import of an executor or of the engine (or of
    the data, which a report never loads) from report/ fails here."""
    assert _reports_that_train(import_graph()) == []
    planted = {**import_graph(), "fssl_core.report.tables": {"fssl_core.executors", "fssl_core.store"}}
    assert _reports_that_train(planted) == [("fssl_core.report.tables", "fssl_core.executors")]


def test_the_store_persists_and_proves_and_never_imports_the_engine():
    """The trainer owns the rounds (engine/trainer.py); the store only writes and checks a run's files."""
    graph = import_graph()
    for module in [m for m in graph if m == "fssl_core.store" or m.startswith("fssl_core.store.")]:
        assert not {d for d in graph[module] if d.startswith(ENGINE)}, module


# The laboratory outside the package: investigation runners, on the package's public API (studies/README.md)
STUDIES = PACKAGE.parent / "studies"


def _papers_that_train(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, d) for m, deps in graph.items() if m.startswith("fssl_core.papers")
                  for d in deps if d.startswith(("fssl_core.executors", "fssl_core.engine")))


def test_a_paper_declares_and_reads_its_runs_and_never_trains_or_replays_one():
    """A paper's folder holds cells, plans, claims, causes' rules, values and READINGS; an investigation that trains
    its own runs or replays a stored one (an executor, the engine) is a runner in studies/. The check finds a
    planted runner."""
    assert _papers_that_train(import_graph()) == []
    planted = {**import_graph(), "fssl_core.papers.fedmix.arms": {"fssl_core.executors"}}
    assert _papers_that_train(planted) == [("fssl_core.papers.fedmix.arms", "fssl_core.executors")]


def _absolute_imports(path: Path) -> list[str]:
    """The modules a file imports by absolute name, at any level, and those a string names as "studies.<x>"."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = [alias.name for node in _imports(tree) if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in _imports(tree) if isinstance(node, ast.ImportFrom) and not node.level
              and node.module]
    return names + _named_in_strings(tree, "studies")


def _study_modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts): p for p in sorted(STUDIES.rglob("*.py"))
            if "__pycache__" not in p.parts and p.name != "__init__.py"}


def test_the_package_never_imports_a_study_and_keeps_no_copy_of_one():
    found = [f"{name}: {target}" for name, path in _modules().items() for target in _absolute_imports(path)
             if target.split(".")[0] == "studies"]
    assert found == []
    studies = _study_modules()
    assert studies, "studies/ holds no runner"
    twins = [m for m in studies if f"fssl_core.papers.{m.removeprefix('studies.')}" in _modules()]
    assert twins == [], f"a study with a twin in its paper's folder: {twins}"


def test_a_study_calls_the_packages_public_api_only():
    """From fssl_core a study imports no private module or name (`fssl_core.x._y`, `from fssl_core.x import _y`)."""
    private = []
    for name, path in _study_modules().items():
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("fssl_core"):
                named = node.module.split(".") + [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                named = [part for alias in node.names if alias.name.startswith("fssl_core")
                         for part in alias.name.split(".")]
            else:
                continue
            private += [f"{name}: {n}" for n in named if n.startswith("_") and not n.startswith("__")]
    assert private == []


def test_the_studies_are_not_installed():
    """pyproject's package discovery takes fssl_core only: studies/ runs from the repository root."""
    from fnmatch import fnmatch
    tomllib = pytest.importorskip("tomllib")
    find = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    studies = ["studies", *(m.rpartition(".")[0] for m in _study_modules())]
    assert not [s for s in studies if any(fnmatch(s, pattern) for pattern in find["include"])]


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


MAX_DOCSTRING_LINES = 25
HISTORY = __import__("re").compile(r"\bissue \d+|\(was[:\s]|\bwas: |until issue|earlier versions", __import__("re").I)


@pytest.mark.parametrize("name", sorted(_modules()))
def test_a_module_docstring_says_what_and_why_in_at_most_25_lines(name):
    """Long derivations go to the paper folder (papers/<paper>/READINGS.md) or docs/."""
    doc = ast.get_docstring(ast.parse(_modules()[name].read_text()), clean=False) or ""
    assert len(doc.splitlines()) <= MAX_DOCSTRING_LINES, f"{name}: a {len(doc.splitlines())}-line docstring"


def test_package_code_carries_no_history():
    """No issue numbers or "was:" notes: what the code does now and why; history is git's."""
    found = [f"{name}:{i}: {line.strip()}" for name, path in _modules().items()
             for i, line in enumerate(path.read_text().splitlines(), 1) if HISTORY.search(line)]
    assert found == []


def test_tests_and_notebooks_say_what_they_check_not_which_issue_asked():
    """A reader of a test or a notebook has the code and the papers, not the project's issue tracker."""
    pattern = re.compile(r"\b[Ii]ssues? ?#?\d+")
    files = [*sorted((PACKAGE.parent / "tests").glob("*.py")), *sorted((PACKAGE.parent / "notebooks").glob("*.py"))]
    named = [f"{f.name}:{n}" for f in files for n, line in enumerate(f.read_text().splitlines(), 1) if pattern.search(line)]
    assert named == [], f"issue numbers in {named}"


def _unexplained_function_imports(package: Path = PACKAGE) -> list[str]:
    """Imports inside a function with no comment on their line or the line above; an import right after an explained
    one shares its reason (one comment above a group)."""
    found = []
    for name, path in _modules(package).items():
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines), filename=str(path))
        inner = {node for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for node in _imports(f)}
        explained: set[int] = set()         # the last lines of the explained ones
        for node in sorted(inner, key=lambda n: n.lineno):
            own = any("#" in line for line in lines[node.lineno - 1:node.end_lineno])
            if own or lines[node.lineno - 2].strip().startswith("#") or node.lineno - 1 in explained:
                explained.add(node.end_lineno)
            else:
                found.append(f"{name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_every_function_level_import_says_why_and_the_check_finds_a_planted_one(tmp_path):
    """An import stays inside a function only to keep an optional dependency, or torch off a light path (`--help`, a
    plan), or to break a cycle, and its comment says which; every other import is at the module's top."""
    assert _unexplained_function_imports() == []
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("def f():\n    # mlflow: an extra\n    import mlflow\n    import mlflow.entities\n\n"
                                  "def g():\n    import json\n    import os  # why\n")
    assert _unexplained_function_imports(package) == ["pkg.a:7: import json"]
