"""A notebook refuses, in its plan cell and before any of its work, what papermill passed it that it does not
declare or that has not the type its plan expects (job/parameters.py): papermill itself only warns about an
unknown name and injects it, and a plan would iterate over `seeds=5`'s absence of a list."""
import subprocess
import sys
from pathlib import Path

import pytest

from fssl_core.config import ConfigError
from fssl_core.job.parameters import check_notebook

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = dict(profile="quick", device="cpu", datasets=["mnist", "cifar10", "svhn"], settings=None,
                labeled_ratios=None, methods=["fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt"], seeds=None,
                server_alone_seeds=None)


def _kernel(injected: str, **values) -> dict:
    """The globals a kernel holds at the plan cell: IPython's history (`In`, papermill's cell in it) and the
    parameters as the parameters cell and papermill's injected cell left them."""
    return {"In": ["", "profile = 'quick'\n", injected], "_": None, **DEFAULTS, **values}


@pytest.mark.parametrize("injected, values, said", [
    ("# Parameters\nseedz = [1]\n", {"seedz": [1]},
     "papermill -p seedz: not a parameter of fedsiam_table6.ipynb (its parameters: profile, device, datasets"),
    ("# Parameters\nseeds = 5\n", {"seeds": 5},
     "papermill -p seeds=5: fedsiam_table6.ipynb expects a JSON list of integers (or null), e.g. -y 'seeds: [1]'"),
    ("# Parameters\nseeds = [1, '2']\n", {"seeds": [1, "2"]},
     """papermill -p seeds=[1, "2"]: fedsiam_table6.ipynb expects a JSON list of integers (or null)"""),
    ("# Parameters\nlabeled_ratios = 0.1\n", {"labeled_ratios": 0.1},
     "papermill -p labeled_ratios=0.1: fedsiam_table6.ipynb expects a JSON list of numbers (or null)"),
    ("# Parameters\ndatasets = 5\n", {"datasets": 5},
     """papermill -p datasets=5: fedsiam_table6.ipynb expects a JSON list of strings, e.g. -y 'datasets: ["mnist"]'"""),
])
def test_the_plan_cell_refuses_a_bad_papermill_parameter_in_one_line(injected, values, said):
    with pytest.raises(ConfigError) as err:
        check_notebook(_kernel(injected, **values), "fedsiam_table6")
    assert str(err.value).startswith(said) and "\n" not in str(err.value)


def test_good_values_and_an_interactive_session_pass():
    check_notebook(_kernel("# Parameters\nseeds = [1234, 1235]\nlabeled_ratios = [0.01]\n", seeds=[1234, 1235],
                           labeled_ratios=[0.01]), "fedsiam_table6")
    # interactively (no injected cell) later cells' names are no parameters to refuse; the values still are checked
    check_notebook({"In": ["x = 1"], **DEFAULTS, "results": object(), "pd": sys}, "fedsiam_table6")
    with pytest.raises(ConfigError, match="seeds='abc'"):
        check_notebook({"In": [], **DEFAULTS, "seeds": "abc"}, "fedsiam_table6")


def test_papermill_itself_stops_at_the_plan_cell_naming_the_parameter(tmp_path):
    out = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / "fedanchor_table4.ipynb"),
                          str(tmp_path / "out.ipynb"), "-p", "modle", "wrn28_2", "--cwd", str(ROOT / "notebooks")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "ConfigError: papermill -p modle: not a parameter of fedanchor_table4.ipynb (its parameters: profile, " \
           "device, model)" in out.stdout + out.stderr
