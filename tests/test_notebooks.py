"""Notebooks: the .py (jupytext percent) is the source, the .ipynb is derived and kept in sync;
each declares the parameters the reproduce job passes."""
from pathlib import Path

import jupytext
import papermill
import pytest

from fssl_core.config import ConfigError
from fssl_core.job.reproduce import PARAMETERS_PASSED, notebooks

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SOURCES = sorted(NOTEBOOKS.glob("*.py"))


def _cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_ipynb_is_in_sync_with_its_py_source(source):
    paired = source.with_suffix(".ipynb")
    assert paired.exists(), f"{paired.name} missing: run `jupytext --sync {source}`"
    assert _cells(jupytext.read(source)) == _cells(jupytext.read(paired)), \
        f"{paired.name} differs from {source.name}: run `jupytext --sync {source}`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_declares_the_reproduce_parameters(source):
    declared = papermill.inspect_notebook(str(source.with_suffix(".ipynb")))
    assert set(PARAMETERS_PASSED) <= set(declared)


def test_reproduce_rejects_a_pattern_that_matches_nothing():
    with pytest.raises(ConfigError, match=r"only='nope\*'"):
        notebooks("nope*")


def test_reproduce_parameters_are_json_where_they_parse_and_named_in_errors():
    from fssl_core.job.reproduce import parse_parameters, reproduce
    assert parse_parameters(["labeled_ratios=[0.1, 0.15]", "seeds=null", "settings=iid"]) == \
        {"labeled_ratios": [0.1, 0.15], "seeds": None, "settings": "iid"}
    with pytest.raises(ConfigError, match=r"--param 'profile=paper': profile has its own option \(--profile\)"):
        parse_parameters(["profile=paper"])
    with pytest.raises(ConfigError, match=r"--param 'labeled_ratios'"):
        parse_parameters(["labeled_ratios"])
    # a parameter the notebook does not declare is refused before anything runs
    with pytest.raises(ConfigError, match=r"--param labeled_ratio: not a parameter of fedsiam_table5\.ipynb"):
        reproduce(profile="smoke", only="fedsiam_table5", parameters={"labeled_ratio": [0.1]})
