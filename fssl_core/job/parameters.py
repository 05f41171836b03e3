"""A notebook's parameters, checked before any of its cells uses them, one way whichever tool passed them:
`reproduce --param` checks them before the job starts, and each notebook's plan cell calls `check_notebook`
first, so papermill's `-p`/`-y` (and a value typed into the parameters cell) meet the same check.

A parameter's type is its plan function's annotation where it has one (papers/<paper>/plans.py: the
notebook's contract, e.g. `seeds: list[int] | None`), else its default's in the parameters cell. A name the
notebook does not declare is refused: papermill itself only warns and injects it."""
from __future__ import annotations

import ast
import json
import typing
from pathlib import Path
from typing import Any

import papermill

from ..config import ConfigError
from ..papers import notebook_plans
from ..paths import project_root

# the cell papermill inserts after the parameters cell begins with this comment (papermill's translators)
INJECTED_HEADER = "# Parameters\n"
_KIND_WORDS = {str: "strings", int: "integers", float: "numbers", bool: "true/false values"}
_EXAMPLES = {int: "[1]", float: "[0.1]"}       # a list whose default is None, by its elements' type


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """The parameters cell's names and defaults, as papermill reads them (literals: the cell is plain
    assignments)."""
    declared = {}
    for name, spec in papermill.inspect_notebook(str(notebook)).items():
        try:
            declared[name] = ast.literal_eval(spec["default"])
        except (ValueError, SyntaxError):
            raise ConfigError(f"{notebook.name}: parameter {name} = {spec['default']}: the parameters cell holds "
                              "literals only (the plan reads it without executing the notebook)") from None
    return declared


def element_kinds(notebook: str) -> dict[str, type]:
    """The element type of each list parameter the notebook's plan function annotates (`list[int] | None`:
    int); none for a notebook without a plan function."""
    function = notebook_plans().get(Path(notebook).stem)
    if function is None:
        return {}
    kinds = {}
    for name, hint in typing.get_type_hints(function).items():
        for arm in typing.get_args(hint) or (hint,):
            if typing.get_origin(arm) is list and typing.get_args(arm):
                kinds[name] = typing.get_args(arm)[0]
    return kinds


def check_parameter_types(notebook: str, defaults: dict[str, Any], values: dict[str, Any],
                          given_as: str = "reproduce: --param", kinds: dict[str, type] | None = None) -> None:
    """Each value has its parameter's type: a list where the default is a list or None (None means "the
    profile's scope" in every notebook here, so None is taken only where the default is None), its elements
    of the annotated type (`kinds`) or of the default's elements' (`datasets=[["mnist"]]` would reach the
    loops as an unhashable list); else the default's own type. `given_as` says how the value was passed:
    "reproduce: --param" (the example in the message is a --param) or papermill's (a -y example)."""
    kinds = element_kinds(notebook) if kinds is None else kinds
    for name, value in values.items():
        default = defaults[name]
        if default is None or isinstance(default, list):
            inferred = {type(v) for v in default or ()}
            kind = kinds.get(name) or (inferred.pop() if len(inferred) == 1 else None)
            ok = isinstance(value, list) or (value is None and default is None)
            ok = ok and (kind is None or all(_is(v, kind) for v in value or ()))
            of = f" of {_KIND_WORDS.get(kind, getattr(kind, '__name__', kind))}" if kind else ""
            wanted = f"a JSON list{of}" + (" (or null)" if default is None else "")
            sample = json.dumps(default[:1]) if default else _EXAMPLES.get(kind, '["..."]')
            example = f"{name}='{sample}'"
        elif isinstance(default, bool):
            ok, wanted, example, sample = isinstance(value, bool), "true or false", f"{name}=true", "true"
        elif isinstance(default, (int, float)):
            ok = _is(value, type(default))
            wanted, example, sample = f"a number like its default {default!r}", f"{name}={default!r}", repr(default)
        else:
            ok, wanted = isinstance(value, type(default)), type(default).__name__
            example, sample = f"{name}={default}", _json(default)
        if not ok:     # the value as it was typed: JSON (null, not None), a string that is no JSON quoted
            shown = repr(value) if isinstance(value, str) else _json(value)
            how = f"--param {example}" if given_as.endswith("--param") else f"-y '{name}: {sample}'"
            raise ConfigError(f"{given_as} {name}={shown}: {notebook} expects {wanted}, e.g. {how}")


def check_notebook(namespace: dict[str, Any], notebook: str) -> None:
    """The plan cell's first step: the names papermill injected (its "# Parameters" cell, found in IPython's
    input history `In`) must be parameters of `notebook`, and every parameter's value must have its type.
    Interactively (no injected cell) the values typed into the parameters cell are checked the same way."""
    path = project_root() / "notebooks" / f"{Path(notebook).stem}.ipynb"
    defaults = declared_parameters(path)
    injected = [source for source in namespace.get("In", ()) if source.startswith(INJECTED_HEADER)]
    for name in _assigned(injected[-1]) if injected else ():
        if name not in defaults:
            raise ConfigError(f"papermill -p {name}: not a parameter of {path.name} (its parameters: "
                              f"{', '.join(defaults)})")
    check_parameter_types(path.name, defaults, {k: namespace[k] for k in defaults if k in namespace},
                          given_as="papermill -p")


def _assigned(source: str) -> list[str]:
    return [t.id for node in ast.parse(source).body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)]


def _is(value: Any, kind: type) -> bool:
    """`value` is of `kind`, a bool never a number and an int a float (JSON's 1 for 1.0)."""
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _json(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
