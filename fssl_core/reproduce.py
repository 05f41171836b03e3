"""The main job: execute every notebook with papermill at one profile, then merge their results.

Each notebook writes results/<notebook>.csv (paper beside reproduced) and its figures; executed
copies go to results/notebooks/ (results/smoke/notebooks/ for the smoke profile). Runs already
in the run store are read back, so an interrupted reproduction resumes where it stopped.
"""
from __future__ import annotations

import fnmatch
import json
import time
from pathlib import Path
from typing import Any

from .config import ConfigError
from .paths import project_root, results_dir
from .report import merge_results
from .runs import atomic_write_text

PARAMETERS_PASSED = ("profile", "device")   # every notebook's parameters cell must declare these


def notebooks(only: str | None = None) -> list[Path]:
    found = sorted((project_root() / "notebooks").glob("*.ipynb"))
    if only is not None:
        found = [nb for nb in found if fnmatch.fnmatch(nb.stem, only)]
        if not found:
            raise ConfigError(f"reproduce: only={only!r}: matches no notebook in notebooks/")
    return found


def record_seconds(profile: str, seconds: dict[str, float]) -> dict[str, float]:
    """Each notebook's last measured run time, kept in results/notebook_seconds.json so that a
    reproduction of some notebooks (`--only`) keeps the others' times in the report."""
    path = results_dir(profile) / "notebook_seconds.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    known.update({name: round(value, 1) for name, value in seconds.items()})
    atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True))
    return known


def parse_parameters(items: list[str]) -> dict[str, Any]:
    """`key=value` pairs for notebook parameters; a value is read as JSON where it parses
    (`labeled_ratios=[0.1]`, `seeds=null`), else kept as a string (`settings=iid` is not a list)."""
    parameters = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"reproduce: --param {item!r}: expected name=value with a notebook parameter as name")
        if key in PARAMETERS_PASSED:
            raise ConfigError(f"reproduce: --param {item!r}: {key} has its own option (--{key})")
        try:
            parameters[key] = json.loads(value)
        except json.JSONDecodeError:
            parameters[key] = value
    return parameters


def reproduce(profile: str = "quick", only: str | None = None, device: str = "cpu",
              parameters: dict[str, Any] | None = None) -> Path:
    """Execute the notebooks matching `only` at `profile` on `device`; `parameters` override
    notebook parameters (each must be declared by every notebook run, e.g. a narrower sweep of one
    table with --only)."""
    import papermill

    parameters = dict(parameters or {})
    selected = notebooks(only)
    for nb in selected:      # check every notebook before running any
        declared = papermill.inspect_notebook(str(nb))
        missing = [p for p in PARAMETERS_PASSED if p not in declared]
        if missing:
            raise ConfigError(f"reproduce: notebook {nb.name} declares no parameter(s) {', '.join(missing)} "
                              f"in its 'parameters' cell")
        unknown = [p for p in parameters if p not in declared]
        if unknown:
            raise ConfigError(f"reproduce: --param {', '.join(unknown)}: not a parameter of {nb.name} "
                              f"(its parameters: {', '.join(declared)})")
    out_dir = results_dir(profile) / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    for nb in selected:
        print(f"[reproduce] {nb.name} profile={profile} device={device} {parameters or ''}", flush=True)
        start = time.perf_counter()
        papermill.execute_notebook(str(nb), str(out_dir / nb.name), cwd=str(nb.parent),
                                   parameters={**parameters, "profile": profile, "device": device},
                                   progress_bar=False)
        seconds[nb.stem] = time.perf_counter() - start
    report = merge_results(profile, record_seconds(profile, seconds))
    print(f"[reproduce] report: {report}")
    return report
