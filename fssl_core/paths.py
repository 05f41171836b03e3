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


# Profiles whose outputs are kept apart from the committed results: smoke's are wiring checks, and
# headline's a slice of quick's runs that must never shrink quick's tables.
SEPARATE_PROFILES = ("smoke", "headline")


def _output_root() -> Path:
    """Where outputs are written: the project root, or the main job's staging folder for a notebook
    that has not completed yet ($FSSL_OUTPUT_STAGING, see publish.py)."""
    staging = os.environ.get("FSSL_OUTPUT_STAGING")
    return Path(staging) if staging else project_root()


def results_dir(profile: str) -> Path:
    base = _output_root() / "results"
    return base / profile if profile in SEPARATE_PROFILES else base


def figures_dir(profile: str) -> Path:
    return results_dir(profile) / "figures" if profile in SEPARATE_PROFILES else _output_root() / "figures"
