"""A measurement folder's README shows the tables its records give (measurements/*/summarize.py: readme_tables)."""
import importlib.util
from pathlib import Path

import pytest

FOLDERS = sorted(p.parent for p in (Path(__file__).resolve().parents[1] / "measurements").glob("*/summarize.py"))


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_the_readme_table_is_the_one_the_records_give(folder):
    spec = importlib.util.spec_from_file_location(f"summarize_{folder.name}", folder / "summarize.py")
    summarize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summarize)
    readme = (folder / "README.md").read_text()
    for table in summarize.readme_tables():
        assert table in readme


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_the_committed_gpu_figures_are_the_ones_the_records_give(folder):
    import json
    spec = importlib.util.spec_from_file_location(f"summarize_{folder.name}", folder / "summarize.py")
    summarize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summarize)
    if not hasattr(summarize, "gpu_measurements"):
        pytest.skip(f"{folder.name} measured no GPU defaults")
    committed = json.loads((folder.parents[1] / "fssl_core" / "gpu_measurements.json").read_text())
    for gpu, figures in summarize.gpu_measurements().items():
        assert committed[gpu] == figures


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_the_project_readme_shows_the_folders_tables_it_names(folder):
    spec = importlib.util.spec_from_file_location(f"summarize_{folder.name}", folder / "summarize.py")
    summarize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summarize)
    if not hasattr(summarize, "project_readme_tables"):
        pytest.skip(f"the project README shows no table of {folder.name}")
    readme = (folder.parents[1] / "README.md").read_text()
    for table in summarize.project_readme_tables():
        assert table in readme
