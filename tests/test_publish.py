"""The main job publishes a notebook's outputs only when it completes, never shrinks a results table
unsaid, and refuses --param values of the wrong type or that leave a notebook nothing to do."""
import math

import nbformat
import pandas as pd
import pytest

from fssl_core.config import ConfigError
from fssl_core.publish import merged_results
from fssl_core.report import COLUMNS
from fssl_core.reproduce import check_parameter_types, reproduce


def _row(method, value, profile="quick", n_runs=1):
    row = {c: math.nan for c in COLUMNS}
    row.update(paper="fedsiam", table="table5", setting="iid", labeled="0.10", dataset="mnist", method=method,
               metric="accuracy", paper_value=95.0, reproduced_value=value, n_runs=n_runs, profile=profile,
               device="cpu", seconds=1.0, status="reduced")
    return row


OLD = pd.DataFrame([_row("a", 90.0), _row("b", 91.0), _row("b", 93.0, profile="paper"), _row("c", math.nan, n_runs=0)])
NEW = pd.DataFrame([_row("b", 92.0)])


def test_a_narrowed_rerun_replaces_its_cells_and_keeps_the_others():
    merged, note = merged_results(OLD, NEW, narrowed=True)
    values = {(r.method, r.profile): r.reproduced_value for r in merged.itertuples()}
    assert values[("a", "quick")] == 90.0 and values[("b", "quick")] == 92.0 and values[("b", "paper")] == 93.0
    assert len(merged) == 4 and note == "kept 2 measured row(s) outside this run's scope"   # a, b at paper


def test_a_narrowed_rerun_never_replaces_a_row_of_more_seeds_by_one_of_fewer():
    # the Table 5 notebook re-measures its IID cell as a one-seed headline; a narrowed paper run of
    # the Non-IID columns must not replace the published three-seed IID row with it
    old = pd.DataFrame([_row("b", 93.0, profile="paper", n_runs=3), _row("a", 90.0, profile="paper", n_runs=1)])
    new = pd.DataFrame([_row("b", 92.5, profile="paper", n_runs=1), _row("a", 90.5, profile="paper", n_runs=3)])
    merged, note = merged_results(old, new, narrowed=True)
    values = {r.method: (r.reproduced_value, r.n_runs) for r in merged.itertuples()}
    assert values == {"b": (93.0, 3), "a": (90.5, 3)} and len(merged) == 2
    assert note == "kept 1 row(s) averaged over more runs than this narrowed run measured"


def test_a_whole_rerun_replaces_the_table_and_names_the_measured_rows_it_drops():
    merged, note = merged_results(OLD, NEW, narrowed=False)
    assert merged.reproduced_value.tolist() == [92.0]
    assert note.startswith("dropped 2 measured row(s) no longer in the notebook's scope: table5 iid γ=0.10 mnist a")
    assert merged_results(NEW, NEW, narrowed=False)[1] == ""


def test_param_values_must_have_the_parameters_type():
    declared = {"datasets": {"default": "None"}, "methods": {"default": '["a"]'}, "samples": {"default": "2000"},
                "dataset": {"default": '"fashion_mnist"'}}
    check_parameter_types("nb.ipynb", declared, {"datasets": ["mnist"], "methods": None, "samples": 10, "dataset": "x"})
    with pytest.raises(ConfigError, match=r"--param datasets='mnist': nb.ipynb expects a JSON list"):
        check_parameter_types("nb.ipynb", declared, {"datasets": "mnist"})
    with pytest.raises(ConfigError, match=r"--param samples=2.5: nb.ipynb expects a number like its default 2000"):
        check_parameter_types("nb.ipynb", declared, {"samples": 2.5})
    with pytest.raises(ConfigError, match=r"--param methods=5"):
        check_parameter_types("nb.ipynb", declared, {"methods": 5})


def test_a_narrowing_that_leaves_a_notebook_no_cell_is_refused_before_anything_runs():
    with pytest.raises(ConfigError, match=r"--param datasets=\[\] leaves fedsiam_table7 no cell to reproduce"):
        reproduce(profile="smoke", only="fedsiam_table7", parameters={"datasets": []})


def test_a_notebook_that_fails_half_way_publishes_nothing(tmp_path, monkeypatch):
    """It saves its results, then raises: the published CSV stays as it was."""
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "results" / "smoke").mkdir(parents=True)
    (tmp_path / "results" / "smoke" / "broken.csv").write_text("the old results\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell('profile = "quick"\ndevice = "cpu"')
    parameters.metadata["tags"] = ["parameters"]
    nb.cells = [parameters, nbformat.v4.new_code_cell(
        "import pandas as pd\n"
        "from fssl_core.profiles import get_profile\n"
        "from fssl_core.report import COLUMNS, save_notebook_results\n"
        "save_notebook_results(pd.DataFrame(columns=COLUMNS), 'broken', get_profile(profile))\n"
        "raise RuntimeError('half-way')")]
    nbformat.write(nb, str(tmp_path / "notebooks" / "broken.ipynb"))
    with pytest.raises(Exception, match="half-way"):
        reproduce(profile="smoke", only="broken")
    assert (tmp_path / "results" / "smoke" / "broken.csv").read_text() == "the old results\n"
    assert not list((tmp_path / "results").glob(".staging-*"))


def test_a_narrowed_run_keeps_the_whole_tables_figure(tmp_path, monkeypatch):
    from fssl_core.publish import publish
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "t.png").write_bytes(b"whole table")
    for narrowed, replace, expected in ((True, False, b"whole table"), (False, False, b"new"),
                                        (True, True, b"newer")):     # --replace-figures: the slice is the figure
        staging = tmp_path / "staging"
        (staging / "figures").mkdir(parents=True)
        (staging / "figures" / "t.png").write_bytes(expected if expected != b"whole table" else b"new")
        notes = publish(staging, narrowed=narrowed, replace_figures=replace)
        assert (tmp_path / "figures" / "t.png").read_bytes() == expected
        assert any("kept" in n for n in notes) == (narrowed and not replace)
