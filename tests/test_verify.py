"""`verify` answers from the committed records: it proves them, retrains a sample of the paper-protocol runs the
published rows name and compares every metric of every round bit for bit, and a record whose numbers were
edited (and resealed with the store's own functions, no checkpoint beside it: what git would have to catch)
fails it, naming the run."""
import json
import platform

import pandas as pd
import pytest

from fssl_core.engine.trainer import train
from fssl_core.job.verify import same_rows, verify
from fssl_core.report.tables import COLUMNS
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from fssl_core.store.integrity import write_result, write_rows
from fssl_core.store.run_store import this_cpu

from .conftest import requires_mnist

TINY = RunConfig(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
                 local_epochs=1, rounds=3, batch_size=10, eval_every=100, resplit_train=10_000, resplit_test=500)


def test_rows_compare_bit_for_bit_but_their_timing():
    rows = [{"round": 1, "accuracy": 12.5, "seconds": 1.0}, {"round": 2, "accuracy": 20.25, "seconds": 1.1}]
    assert same_rows(rows, [{**r, "seconds": 9.0} for r in rows]) is None
    assert same_rows(rows, [rows[0], {**rows[1], "accuracy": 20.250000000000004}]) == \
        "round 2: accuracy = 20.250000000000004 retrained, 20.25 recorded"
    assert same_rows(rows, rows[:1]) == "1 rounds retrained, 2 recorded"


def _published(tmp_path, run_id):
    folder = tmp_path / "results"
    folder.mkdir()
    row = dict.fromkeys(COLUMNS, "")
    row.update(paper="fedsiam", table="table5", setting="iid", labeled="0.05", dataset="mnist", method="fedavg",
               metric="accuracy", reproduced_value=10.0, n_runs=1, profile="paper", device="cpu", status="ok",
               run_ids=run_id)
    pd.DataFrame([row], columns=COLUMNS).to_csv(folder / "fedsiam_table5.csv", index=False)
    return folder


def _recommitted(d, edit_rows, edit_env=lambda env: env) -> None:
    """The record in `d` as committed (no checkpoint beside it) with its rows and env.json edited and every digest
    recomputed: what a record trained elsewhere, or edited by hand, looks like to verify."""
    rows = [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    edit_rows(rows)
    summary = json.loads((d / "result.json").read_text())
    (d / "env.json").write_text(json.dumps(edit_env(json.loads((d / "env.json").read_text()))))
    write_rows(d, rows)
    (d / "checkpoint.pt").write_bytes(b"")          # write_result seals the file beside it; then it goes
    write_result(d, TINY, rows, "ok", None, summary["model_parameters"], round(100.0 / summary["chance_accuracy"]))
    (d / "checkpoint.pt").unlink()


def _last_bit(rows) -> None:
    rows[0]["train_loss"] += 1e-9                   # a last-bit difference, as another CPU's kernels give


@requires_mnist
def test_a_retrained_sample_equals_its_record_and_an_edited_record_fails_naming_its_run(tmp_path):
    store = RunStore(tmp_path / "runs")
    train(TINY, store, progress=False)
    folder = _published(tmp_path, TINY.run_id)
    said = []
    done = verify(sample=1, seed=0, store=store, folder=folder, say=said.append)
    assert done.ok and done.sample == [TINY.run_id] and done.proven == 1
    assert any("every metric of its 3 rounds equal to its record" in line for line in said)
    _recommitted(store.dir(TINY), lambda rows: rows[-1].update(accuracy=rows[-1]["accuracy"] + 1.0))
    done = verify(sample=1, seed=0, store=store, folder=folder, say=said.append)
    assert not done.ok and done.mismatches[0].startswith(f"run {TINY.run_id} (fedavg mnist seed {TINY.seed}): round 3: accuracy")


@requires_mnist
def test_a_record_of_another_machine_that_differs_is_said_as_such_and_fails_nothing(tmp_path):
    """CPU kernels differ between machines (perf/fingerprint.py): a record trained on another platform is compared, and
    where it differs here the line says so, with the final accuracy both ways, and the job does not fail on it."""
    store = RunStore(tmp_path / "runs")
    train(TINY, store, progress=False)
    _recommitted(store.dir(TINY), _last_bit, lambda env: {**env, "platform": "Linux-another-machine"})
    said = []
    done = verify(sample=1, seed=0, store=store, folder=_published(tmp_path, TINY.run_id), say=said.append)
    assert done.ok and done.mismatches == [] and len(done.other_machine) == 1
    assert "trained on another machine (Linux-another-machine | " in done.other_machine[0]
    assert "round 1: train_loss" in done.other_machine[0] and "final accuracy" in done.other_machine[0]
    assert any("0 of 1 retrained runs equal their records bit for bit" in line for line in said)


@requires_mnist
@pytest.mark.parametrize("cpu", ["another CPU; AVX2", None])
def test_a_record_of_this_platform_on_another_cpu_is_another_machine_and_an_older_record_is_read_by_platform(
        tmp_path, cpu):
    """One VM image runs on hosts of different CPUs: a record naming another CPU than this one is another machine's,
    though its platform is this one's; a record naming no CPU (written before env.json named it) is compared by its
    platform, so on this platform its difference fails the job."""
    store = RunStore(tmp_path / "runs")
    train(TINY, store, progress=False)
    env = json.loads((store.dir(TINY) / "env.json").read_text())
    assert env["platform"] == platform.platform() and env["cpu"] == this_cpu()     # what a record says now
    _recommitted(store.dir(TINY), _last_bit,
                 lambda env: {k: v for k, v in env.items() if k != "cpu"} | ({"cpu": cpu} if cpu else {}))
    done = verify(sample=1, seed=0, store=store, folder=_published(tmp_path, TINY.run_id), say=lambda line: None)
    if cpu:
        assert done.ok and len(done.other_machine) == 1 and f"| {cpu}; here " in done.other_machine[0]
    else:
        assert not done.ok and len(done.mismatches) == 1 and done.other_machine == []


def test_a_published_run_without_its_record_fails(tmp_path):
    done = verify(sample=1, store=RunStore(tmp_path / "runs"), folder=_published(tmp_path, "0123456789abcdef"),
                  say=lambda line: None)
    assert not done.ok and done.unproven == {"fedsiam_table5.csv": ["0123456789abcdef"]} and done.sample == []


def test_a_time_budget_takes_each_drawn_run_whose_recorded_time_still_fits():
    from fssl_core.job.verify import budgeted
    recorded = {"a": 400.0, "b": 500.0, "c": 150.0, "d": 60.0}
    assert budgeted(["a", "b", "c", "d"], recorded, 600) == ["a", "c"]        # b does not fit after a; d not after c
    assert budgeted(["b", "d", "a"], recorded, 600) == ["b", "d"]
    assert budgeted(["a"], recorded, 100) == []


@requires_mnist
def test_a_budget_stops_before_a_run_that_this_machines_pace_would_not_fit(tmp_path):
    """Two tiny runs drawn: their recorded times fit the budget, but the first retrain's pace (a fake clock: 1000×
    the recorded time) says the second would not, so it is not started and the line says so (a drawn run that still
    fits after a skipped one is retrained: budgeted's rule, at this machine's pace)."""
    store = RunStore(tmp_path / "runs")
    second = TINY.replace(seed=7)
    for cfg in (TINY, second):
        train(cfg, store, progress=False)
    folder = _published(tmp_path, f"{TINY.run_id} {second.run_id}")
    recorded = sum(store.load(c).summary["seconds"] for c in (TINY, second))
    ticks = iter(range(10_000))
    clock = lambda: next(ticks) * recorded * 1000 / 3      # each call moves the fake clock on
    said = []
    done = verify(seed=0, store=store, folder=folder, say=said.append, minutes=recorded * 1.5 / 60, clock=clock)
    assert len(done.sample) == 1 and done.ok
    assert any("1 drawn run(s) not retrained" in line for line in said), said
