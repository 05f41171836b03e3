"""The main job publishes a notebook's outputs only when it completes, never shrinks a results table
unsaid, and refuses --param values of the wrong type or that leave a notebook nothing to do."""
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from fssl_core.config import ConfigError
from fssl_core.report.publish import merged_results
from fssl_core.report.tables import COLUMNS, KEY, read_results
from fssl_core.job.parameters import check_parameter_types
from fssl_core.job.reproduce import reproduce

from .conftest import requires_mnist


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
    assert len(merged) == 4 and note == "kept 2 measured row(s) outside this run's --param scope"   # a, b at paper
    assert merged.method.tolist() == ["a", "b", "b", "c"]         # in the published order


def test_a_rerun_never_replaces_a_row_of_more_seeds_by_one_of_fewer():
    # the Table 5 notebook re-measures its IID cell as a one-seed headline; a narrowed paper run of
    # the Non-IID columns must not replace the published three-seed IID row with it; nor may a whole one
    old = pd.DataFrame([_row("b", 93.0, profile="paper", n_runs=3), _row("a", 90.0, profile="paper", n_runs=1)])
    new = pd.DataFrame([_row("b", 92.5, profile="paper", n_runs=1), _row("a", 90.5, profile="paper", n_runs=3)])
    for narrowed in (True, False):
        merged, note = merged_results(old, new, narrowed=narrowed)
        values = {r.method: (r.reproduced_value, r.n_runs) for r in merged.itertuples()}
        assert values == {"b": (93.0, 3), "a": (90.5, 3)} and len(merged) == 2
        assert note == ("kept 1 row(s) averaged over more runs than this run measured: "
                        "table5 iid γ=0.10 mnist b accuracy (paper, n=3); reproduce --replace drops them")
    merged, note = merged_results(old, new, narrowed=True, replace=True)      # unless asked
    assert merged.set_index("method").n_runs.to_dict() == {"b": 1, "a": 3}
    assert note.startswith("replaced: dropped 1 measured row(s): table5 iid γ=0.10 mnist b accuracy (paper, n=3)")


def test_a_whole_rerun_keeps_the_measured_rows_it_does_not_bring_unless_told_to_replace_them():
    merged, note = merged_results(OLD, NEW, narrowed=False)
    assert merged.reproduced_value.tolist()[:3] == [90.0, 92.0, 93.0] and len(merged) == 4   # c (unmeasured) too
    assert note.startswith("kept 2 measured row(s) this run did not bring (another profile's, or outside its "
                           "scope): table5 iid γ=0.10 mnist a accuracy (quick, n=1)")
    assert note.endswith("reproduce --replace drops them")
    merged, note = merged_results(OLD, NEW, narrowed=False, replace=True)
    assert merged.reproduced_value.tolist() == [92.0]
    assert note.startswith("replaced: dropped 2 measured row(s): table5 iid γ=0.10 mnist a accuracy (quick, n=1)")
    assert merged_results(NEW, NEW, narrowed=False)[1] == ""


def test_param_values_must_have_the_parameters_type():
    declared = {"datasets": None, "methods": ["a"], "samples": 2000, "dataset": "fashion_mnist"}
    check_parameter_types("nb.ipynb", declared, {"datasets": ["mnist"], "methods": [], "samples": 10, "dataset": "x"})
    check_parameter_types("nb.ipynb", declared, {"datasets": None, "methods": ["b", "c"]})
    # null where the default is a list, elements of another type: one line each, not a TypeError
    with pytest.raises(ConfigError, match=re.escape("reproduce: --param methods=null: nb.ipynb expects a JSON list of "
                                                    """strings, e.g. --param methods='["a"]'""")):
        check_parameter_types("nb.ipynb", declared, {"methods": None})
    with pytest.raises(ConfigError, match=r'^reproduce: --param methods=\[\["a"\]\]: nb.ipynb expects a JSON list of '
                                          r'strings'):
        check_parameter_types("nb.ipynb", declared, {"methods": [["a"]]})
    with pytest.raises(ConfigError, match=r"--param datasets='mnist': nb.ipynb expects a JSON list"):
        check_parameter_types("nb.ipynb", declared, {"datasets": "mnist"})
    with pytest.raises(ConfigError, match=r"--param samples=2.5: nb.ipynb expects a number like its default 2000"):
        check_parameter_types("nb.ipynb", declared, {"samples": 2.5})
    with pytest.raises(ConfigError, match=r"--param methods=5"):
        check_parameter_types("nb.ipynb", declared, {"methods": 5})
    # a list whose default is None takes its elements' type from the plan function's annotation (`kinds`)
    with pytest.raises(ConfigError, match=re.escape("--param datasets=[1, \"2\"]: nb.ipynb expects a JSON list of "
                                                    "integers (or null), e.g. --param datasets='[1]'")):
        check_parameter_types("nb.ipynb", declared, {"datasets": [1, "2"]}, kinds={"datasets": int})
    with pytest.raises(ConfigError, match=re.escape("--param datasets=[true]: nb.ipynb expects a JSON list of integers")):
        check_parameter_types("nb.ipynb", declared, {"datasets": [True]}, kinds={"datasets": int})


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
        "from fssl_core.report.tables import COLUMNS, save_notebook_results\n"
        "save_notebook_results(pd.DataFrame(columns=COLUMNS), 'broken', get_profile(profile))\n"
        "raise RuntimeError('half-way')")]
    nbformat.write(nb, str(tmp_path / "notebooks" / "broken.ipynb"))
    with pytest.raises(Exception, match="half-way"):
        reproduce(profile="smoke", only="broken")
    assert (tmp_path / "results" / "smoke" / "broken.csv").read_text() == "the old results\n"
    assert not list((tmp_path / "results").glob(".staging-*"))


def test_a_narrowed_run_keeps_the_whole_tables_figure(tmp_path, monkeypatch):
    from fssl_core.report.publish import publish
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


def test_a_staging_folders_owner_file_is_never_published(tmp_path, monkeypatch):
    """The staging folder's pid file (job/preflight.py) names the job; a publish moves the notebook's outputs only."""
    from fssl_core.report.publish import STAGING_OWNER, publish
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    staging = tmp_path / "staging"
    (staging / "figures").mkdir(parents=True)
    (staging / STAGING_OWNER).write_text("123")
    (staging / "figures" / "t.png").write_bytes(b"new")
    publish(staging, narrowed=False)
    assert (tmp_path / "figures" / "t.png").read_bytes() == b"new" and not (tmp_path / STAGING_OWNER).exists()


def _cell(method, metric, value, n_runs, table="table5"):
    return {**_row(method, value, profile="paper", n_runs=n_runs), "table": table, "metric": metric,
            "reproduced_std": 0.5 if n_runs > 1 else math.nan}


def test_a_narrowed_republish_rebuilds_the_claims_its_cells_changed(tmp_path, monkeypatch):
    """The CI failure of session 28: a baselines-and-FedSiam-D rerun of Table 5 brought FedSiam-D's upload at
    three seeds but not FedSiam-Π, so not the Π < D upload claim; the published claim row kept the one-seed
    difference (23.90 MB where its cells now give 23.86). Published, the claim is rebuilt from the merged
    cells: 11.0 − 2.0 = 9.0 MB, not the 8.0 the old FedSiam-D upload gave; a claim it cannot rebuild stays."""
    from fssl_core.papers import rebuilt_claim_rows
    from fssl_core.report.publish import publish
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    upload = {"table": "table5_claims", "method": "fedsiam_d vs fedsiam_pi", "metric": "upload_d_minus_pi",
              "paper_value": 0.0}
    other = {"table": "table5_claims", "method": "fedsiam_d vs best baseline",
             "metric": "fedsiam_d_minus_best_baseline", "paper_value": 0.0}
    old = pd.DataFrame([_cell("fedsiam_d", "accuracy", 98.0, 1), _cell("fedsiam_d", "upload_mb", 10.0, 1),
                        _cell("fedsiam_pi", "upload_mb", 2.0, 1), {**_cell("x", "x", 8.0, 1), **upload},
                        {**_cell("x", "x", 1.5, 1), **other}])
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t.csv").write_text(old[COLUMNS].to_csv(index=False))
    staged = tmp_path / "staging" / "results"
    staged.mkdir(parents=True)
    new = pd.DataFrame([_cell("fedsiam_d", "accuracy", 98.2, 3), _cell("fedsiam_d", "upload_mb", 11.0, 3)])
    staged.joinpath("t.csv").write_text(new[COLUMNS].to_csv(index=False))
    notes = publish(tmp_path / "staging", narrowed=True, rebuild=rebuilt_claim_rows)
    after = read_results(tmp_path / "results" / "t.csv").set_index("metric")
    assert after.loc["upload_d_minus_pi", ["reproduced_value", "n_runs"]].tolist() == [9.0, 1]
    assert after.loc["fedsiam_d_minus_best_baseline", "reproduced_value"] == 1.5      # no baseline cells: kept
    assert after.loc["upload_mb"].set_index("method").reproduced_value.to_dict() == {"fedsiam_d": 11.0, "fedsiam_pi": 2.0}
    assert len(after) == len(old)
    assert any("table5_claims: 1 claim row(s) rebuilt from the published cells; 1 its cells no longer give kept" in n
               for n in notes), notes


@requires_mnist
def test_a_quick_republish_of_a_table_holding_paper_rows_shrinks_nothing(tmp_path):
    """`reproduce --profile quick --only fedsiam_table6`, with nothing to train, once replaced the
    committed table by the quick notebook's file: 296 rows became 200, the paper-protocol rows outside quick's
    scope were gone and the README's three-seed values became one-seed ones. Run on a copy of the project
    (its package too: the job rewrites the papers' READMEs beside their code), with $FSSL_PROFILE=smoke set,
    which must not override the flag; every published row stays, the paper rows as they were."""
    root = Path(__file__).resolve().parents[1]
    copy = tmp_path / "project"
    for name in ("pyproject.toml", "README.md"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / name, copy / name)
    ignore = shutil.ignore_patterns("__pycache__", "checkpoint.pt", ".lock", "damaged-*", ".*.tmp")
    for folder in ("fssl_core", "results", "runs", "figures"):
        shutil.copytree(root / folder, copy / folder, ignore=ignore)
    (copy / "notebooks").mkdir()
    shutil.copy(root / "notebooks" / "fedsiam_table6.ipynb", copy / "notebooks")
    table = copy / "results" / "fedsiam_table6.csv"
    before = read_results(table)
    env = {**os.environ, "FSSL_PROJECT": str(copy), "FSSL_RUNS": str(copy / "runs"), "PYTHONPATH": str(copy),
           "FSSL_PROFILE": "smoke", "FSSL_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "fssl_core", "reproduce", "--profile", "quick", "--only",
                           "fedsiam_table6"], cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[reproduce] profile=quick (from --profile; $FSSL_PROFILE=smoke ignored)" in done.stdout
    assert "0 to train" in done.stdout
    after = read_results(table)
    assert len(after) >= len(before)
    key = [*KEY, "profile"]
    joined = before.merge(after, on=key, how="left", suffixes=("", "_after"), indicator=True)
    assert (joined._merge == "both").all(), "published rows dropped"
    measured = joined[joined.n_runs > 0]
    assert (measured.n_runs_after >= measured.n_runs).all(), "a row replaced by one of fewer runs"
    paper = joined[(joined.profile == "paper") & (joined.n_runs > 0)]
    assert len(paper) and paper.n_runs_after.tolist() == paper.n_runs.tolist()
    assert paper.reproduced_value_after.tolist() == paper.reproduced_value.tolist()
    assert "reproduce --replace drops them" in done.stdout       # what it kept, it says


def test_two_narrowed_publishes_at_once_both_land(tmp_path, monkeypatch):
    """Each publish reads the table, merges its slice and writes it back; two at once (slowed so that both
    read before either writes, as two `reproduce --param` jobs did) must not lose either slice."""
    import threading
    import time

    from fssl_core.report import publish as publishing
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "results").mkdir()
    table = tmp_path / "results" / "fedsiam_table5.csv"
    table.write_text(pd.DataFrame([_row("a", 90.0), _row("b", 91.0)])[COLUMNS].to_csv(index=False))
    real = publishing.merged_results

    def slow(old, new, narrowed, replace=False):
        time.sleep(0.3)          # both would read the old table in this window without the lock
        return real(old, new, narrowed, replace)
    monkeypatch.setattr(publishing, "merged_results", slow)
    stagings = []
    for method, value in (("a", 80.0), ("b", 81.0)):
        staging = tmp_path / "results" / f".staging-{method}"
        staging.mkdir()
        (staging / "results").mkdir()
        pd.DataFrame([_row(method, value)])[COLUMNS].to_csv(staging / "results" / "fedsiam_table5.csv", index=False)
        stagings.append(staging)
    threads = [threading.Thread(target=publishing.publish, args=(s,), kwargs={"narrowed": True}) for s in stagings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    published = {r.method: r.reproduced_value for r in read_results(table).itertuples()}
    assert published == {"a": 80.0, "b": 81.0}
