"""Where a project's outputs go: runs, results and figures under the project root.

The root is $FSSL_PROJECT if set, else the nearest folder above the working directory holding a
pyproject.toml that names fssl_core (notebooks run with their own folder as working directory),
else the working directory.
"""
from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    if "FSSL_PROJECT" in os.environ:
        return Path(os.environ["FSSL_PROJECT"]).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        toml = folder / "pyproject.toml"
        if toml.exists() and 'name = "fssl_core"' in toml.read_text():
            return folder
    return here


def runs_dir() -> Path:
    return Path(os.environ["FSSL_RUNS"]) if "FSSL_RUNS" in os.environ else project_root() / "runs"


def results_dir(profile: str) -> Path:
    """Smoke outputs are wiring checks, kept apart so they never overwrite real results."""
    base = project_root() / "results"
    return base / "smoke" if profile == "smoke" else base


def figures_dir(profile: str) -> Path:
    return results_dir("smoke") / "figures" if profile == "smoke" else project_root() / "figures"
