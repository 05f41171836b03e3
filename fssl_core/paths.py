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
    that has not completed yet ($FSSL_OUTPUT_STAGING, see report/publish.py)."""
    staging = os.environ.get("FSSL_OUTPUT_STAGING")
    return Path(staging) if staging else project_root()


# A notebook's own files (its results CSV, its figures) written outside `reproduce` (Jupyter, papermill by
# hand) go under results/by_hand/, laid out as the project is, never over the published ones: only a
# completed `reproduce` publishes (report/publish.py), so a hand run at another profile or on a slice cannot replace
# a committed table or picture.
BY_HAND = "by_hand"


def notebook_output_root() -> Path:
    """Where a notebook writes: the main job's staging folder under `reproduce`, else results/by_hand/."""
    staging = os.environ.get("FSSL_OUTPUT_STAGING")
    return Path(staging) if staging else project_root() / "results" / BY_HAND


def results_dir(profile: str, notebook: bool = False) -> Path:
    """The results folder for `profile`; `notebook`: the one a notebook writes its table into."""
    return _results_under(notebook_output_root() if notebook else _output_root(), profile)


def published_results_dir(profile: str) -> Path:
    """The results folder for `profile` as published, even inside a notebook the main job stages."""
    return _results_under(project_root(), profile)


def _results_under(root: Path, profile: str) -> Path:
    base = root / "results"
    return base / profile if profile in SEPARATE_PROFILES else base


def figures_dir(profile: str, notebook: bool = False) -> Path:
    """The figures folder for `profile`; `notebook`: the one a notebook saves its figures into."""
    if profile in SEPARATE_PROFILES:
        return results_dir(profile, notebook) / "figures"
    return (notebook_output_root() if notebook else _output_root()) / "figures"


SPEED_PAGE = "docs/speed.md"     # the speed tables, which `bench ... readme=yes` writes (the README links to it)
