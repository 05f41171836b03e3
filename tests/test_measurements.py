"""What the measurement folders publish is what their records give (measurements/*/summarize.py): the
folder's README tables (`readme_tables`), the tables the project's README shows of it
(`project_readme_tables`), and the GPU figures committed in fssl_core/engine/gpu_measurements.json
(`gpu_measurements`)."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p.parent for p in (ROOT / "measurements").glob("*/summarize.py"))


def folders_with(function: str = "readme_tables"):
    """The folders whose summarize.py defines `function`, as a parametrisation."""
    chosen = [f for f in FOLDERS if f"\ndef {function}(" in (f / "summarize.py").read_text()]
    return pytest.mark.parametrize("folder", chosen, ids=[f.name for f in chosen])


def summarize_of(folder: Path):
    spec = importlib.util.spec_from_file_location(f"summarize_{folder.name}", folder / "summarize.py")
    summarize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summarize)
    return summarize


@folders_with("readme_tables")
def test_the_readme_table_is_the_one_the_records_give(folder):
    readme = (folder / "README.md").read_text()
    for table in summarize_of(folder).readme_tables():
        assert table in readme


@folders_with("gpu_measurements")
def test_the_committed_gpu_figures_are_the_ones_the_records_give(folder):
    committed = json.loads((ROOT / "fssl_core" / "engine" / "gpu_measurements.json").read_text())
    for gpu, figures in summarize_of(folder).gpu_measurements().items():
        assert committed[gpu] == figures


@folders_with("project_readme_tables")
def test_the_project_readme_shows_the_folders_tables_it_names(folder):
    readme = (ROOT / "docs" / "speed.md").read_text()       # the README's speed page
    for table in summarize_of(folder).project_readme_tables():
        assert table in readme
