"""pyproject.toml and environment.yml declare the same dependencies (the extras included)."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch", "ray": "ray-core", "nbconvert": "nbconvert-core"}   # PyPI -> conda-forge, where they differ


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement, maxsplit=1)[0].strip().lower()


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for requirements in project["optional-dependencies"].values() for r in requirements]
    pip_names = {_name(r) for r in project["dependencies"] + extras}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_names = {_name(d) for d in env["dependencies"] if isinstance(d, str)} - {"python", "pip"}
    assert {CONDA_NAMES.get(n, n) for n in pip_names} == conda_names


def test_ci_calls_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make reproduce" in readme
    assert re.search(r"^make test$", ci, re.M)
