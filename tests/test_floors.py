"""The floors the project declares are the ones measurements/floors/ measured: pyproject.toml's extras (and its
torch), environment.yml, and the Flower app's own pyproject (which `flwr run` installs from) name each
dependency's measured floor, so none drifts from the record; and the record's README is its generated table."""
import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ROOT / "measurements" / "floors"
RECORD = json.loads((FLOORS / "floors.json").read_text())
CONDA_NAMES = {"torch": "pytorch", "ray": "ray-core"}   # PyPI name -> conda-forge name where they differ
# the record's entries pyproject writes (an entry without extras is evidence only, such as a bound not taken)
WRITTEN = {key: entry for key, entry in RECORD["dependencies"].items() if entry["extras"]}


def _release(version: str) -> tuple[int, ...]:
    """2.4 and 2.4.0 are the same floor."""
    parts = [int(p) for p in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _floor_of(requirements: list[str], package: str) -> str:
    """The `>=` of the one requirement on `package` (its extras, such as flwr[simulation], aside)."""
    found = [r for r in requirements if re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0].strip().lower() == package]
    assert len(found) == 1, f"{package}: {len(found)} requirements in {requirements}"
    floor = re.search(r">=\s*([\d.]+)", found[0])
    assert floor, f"{found[0]}: no >= floor"
    return floor.group(1)


def _written_floor(entry: dict) -> str:
    return entry.get("written_floor") or entry["floor"]


@pytest.mark.parametrize("key", sorted(WRITTEN))
def test_pyproject_declares_the_measured_floor(key):
    entry = WRITTEN[key]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra in entry["extras"]:
        requirements = project["dependencies"] if extra == "dependencies" else project["optional-dependencies"][extra]
        assert _release(_floor_of(requirements, entry["package"])) == _release(_written_floor(entry)), extra


@pytest.mark.parametrize("key", sorted(WRITTEN))
def test_environment_yml_declares_the_measured_floor(key):
    entry = WRITTEN[key]
    env = [d for d in yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"] if isinstance(d, str)]
    name = CONDA_NAMES.get(entry["package"], entry["package"])
    assert _release(_floor_of(env, name)) == _release(_written_floor(entry))


def test_the_flower_app_declares_the_floor_the_package_does():
    app = tomllib.loads((ROOT / "flower-app" / "pyproject.toml").read_text())["project"]["dependencies"]
    assert _release(_floor_of(app, "flwr")) == _release(WRITTEN["flwr"]["floor"])


def test_each_floor_passed_and_the_version_below_it_failed():
    """What the bisection leaves: the floor was tried and passed, the release below it was tried and failed."""
    for key, entry in RECORD["dependencies"].items():
        rows = {row["version"]: row for row in entry["probes"]}
        floor = rows[entry["floor"]]
        assert floor["resolved"] and (floor["check_passed"] or entry["how"].startswith("resolver only")), key
        if entry.get("below_floor"):
            below = rows[entry["below_floor"]]
            assert not (below["resolved"] and (below["check_passed"] or entry["how"].startswith("resolver"))), key


def test_the_readme_is_the_table_the_record_gives():
    spec = importlib.util.spec_from_file_location("measure_floors", FLOORS / "measure_floors.py")
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script        # its dataclass looks its module up there
    spec.loader.exec_module(script)
    assert (FLOORS / "README.md").read_text() == script.readme(RECORD)
