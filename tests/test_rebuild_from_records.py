"""A rebuild from the committed records (`reproduce --from-records`) trains nothing, measures a cell only where
every run it plans has a record, and refuses, writing nothing, to change a published value."""
import math

import pandas as pd
import pytest

from fssl_core.job.cells import RECORDS_ONLY_ENV, reproduce_cells, train_runs
from fssl_core.profiles import PROFILES
from fssl_core.report.publish import ValueMoved, publish
from fssl_core.report.tables import COLUMNS, NOT_RECORDED, Cell, read_results
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore

from .fake_runs import fake_finished_run, row


def _configs(*seeds):
    return tuple(RunConfig(dataset="mnist", algorithm="fedavg", rounds=2, seed=s) for s in seeds)


def _cell(method, configs):
    return Cell("fedsiam", "table5", "iid", "0.10", "mnist", method, configs, "accuracy", paper_value=95.0)


@pytest.fixture
def records(tmp_path, monkeypatch):
    """A store holding seeds 1 and 2 (accuracies 90 and 92 at the last round), not seed 3; records only."""
    monkeypatch.setenv(RECORDS_ONLY_ENV, "1")
    store = RunStore(tmp_path / "runs")
    for cfg, last in zip(_configs(1, 2), (90.0, 92.0)):
        fake_finished_run(store, cfg, [row(1, 50.0), row(2, last)])
    return store


def test_a_cell_is_measured_from_its_records_only_where_every_run_has_one(records):
    frame = reproduce_cells([_cell("fedavg", _configs(1, 2)), _cell("fedavg_plus", _configs(1, 2, 3))],
                            PROFILES["paper"], "cpu", store=records, progress=False)
    whole, part = frame.iloc[0], frame.iloc[1]
    assert (whole.reproduced_value, whole.n_runs) == (91.0, 2)
    assert whole.run_ids == " ".join(c.run_id for c in _configs(1, 2))
    # two of three seeds recorded: no value from part of its seeds, and nothing was trained
    assert part.status == NOT_RECORDED and math.isnan(part.reproduced_value) and part.n_runs == 0
    assert records.load(_configs(3)[0]) is None


def test_a_figure_that_reads_trained_weights_needs_their_checkpoint(records):
    cfg = _configs(1)[0]
    assert train_runs([cfg], store=records) and train_runs([cfg], store=records, final_state=True)
    (records.dir(cfg) / "checkpoint.pt").unlink()          # as committed: records without weights
    assert train_runs([cfg], store=records) and not train_runs([cfg], store=records, final_state=True)
    assert not train_runs(_configs(1, 3), store=records)


def _row(method, value, n_runs, status="ok"):
    out = {c: math.nan for c in COLUMNS}
    out.update(paper="fedsiam", table="table5", setting="iid", labeled="0.10", dataset="mnist", method=method,
               metric="accuracy", paper_value=95.0, reproduced_value=value, n_runs=n_runs, profile="paper",
               device="cpu", seconds=1.0, status=status, run_ids="r" if n_runs else "")
    return out


def _stage(tmp_path, rows):
    staging = tmp_path / "staging"
    (staging / "results").mkdir(parents=True)
    pd.DataFrame(rows, columns=COLUMNS).to_csv(staging / "results" / "t.csv", index=False)
    return staging


def test_a_rebuild_that_repeats_the_published_values_publishes_and_never_adds_an_unrecorded_row(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "results").mkdir()
    published = tmp_path / "results" / "t.csv"
    pd.DataFrame([_row("a", 91.0, 2), _row("b", 93.0, 10), _row("d", 90.0, 1)],
                 columns=COLUMNS).to_csv(published, index=False)
    # a's two seeds again; b's first three only (its ten stay); c has a missing record; d was published at one
    # seed and the records now hold three (another table trained them): updated, as any republish does, and named
    notes = publish(_stage(tmp_path, [_row("a", 91.0, 2), _row("b", 92.5, 3), _row("c", math.nan, 0, NOT_RECORDED),
                                      _row("d", 90.5, 3)]), narrowed=False, unchanged=True)
    after = read_results(published)
    assert after.set_index("method").reproduced_value.to_dict() == {"a": 91.0, "b": 93.0, "d": 90.5}
    assert any("updated 1 value(s) the records now hold more runs of: table5 iid γ=0.10 mnist d accuracy (paper) "
               "was 90 (n=1), rebuilt 90.5 (n=3)" in n for n in notes)


def test_a_rebuild_that_would_move_a_published_value_fails_naming_it_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "results").mkdir()
    published = tmp_path / "results" / "t.csv"
    pd.DataFrame([_row("a", 91.0, 2), _row("b", 93.0, 3)], columns=COLUMNS).to_csv(published, index=False)
    before = published.read_text()
    staging = _stage(tmp_path, [_row("a", 91.0, 2), _row("b", 92.0, 3)])
    with pytest.raises(ValueMoved, match=r"1 published value\(s\).*table5 iid γ=0.10 mnist b accuracy \(paper\) "
                                         r"was 93 \(n=3\), rebuilt 92 \(n=3\)"):
        publish(staging, narrowed=False, unchanged=True)
    assert published.read_text() == before and not staging.exists()
    # the same files published as an ordinary republish land: only a rebuild promises to change nothing
    publish(_stage(tmp_path, [_row("a", 91.0, 2), _row("b", 92.0, 3)]), narrowed=False)
    assert read_results(published).set_index("method").reproduced_value.to_dict() == {"a": 91.0, "b": 92.0}
