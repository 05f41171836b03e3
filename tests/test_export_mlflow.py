"""`export mlflow`: two runs of a temporary store round-trip through MLflow (read back with MlflowClient),
a second export adds nothing, a damaged run is skipped by name, and no file of the store changes."""
import hashlib
import json

import pytest

from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from tests.fake_runs import fake_finished_run, row

mlflow = pytest.importorskip("mlflow")
from fssl_core.integrations.mlflow_export import COMPLETE_TAG, export  # noqa: E402

A = RunConfig(algorithm="fedavg", dataset="mnist", rounds=3, seed=1)
B = A.replace(algorithm="fedsiam_d", seed=2)
BROKEN = A.replace(seed=3)


def _digests(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture
def store(tmp_path):
    store = RunStore(tmp_path / "runs")
    fake_finished_run(store, A, [row(1, 20.0, upload_bytes=10), row(2), row(3, 41.5, upload_bytes=30)])
    fake_finished_run(store, B, [row(1, 30.0), row(2, 35.0), row(3, 52.25)])
    fake_finished_run(store, BROKEN, [row(1, 1.0), row(2, 2.0), row(3, 3.0)])
    (store.dir(BROKEN) / "metrics.jsonl").write_text("not json\n")
    (store.dir(A) / "env.json").write_text(json.dumps({"torch": "x"}))
    return store


def test_runs_round_trip_once_and_the_store_is_untouched(store, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    before = _digests(store.root)
    report = export(store.root, uri=uri, progress=False)
    assert sorted(report.exported) == sorted([A.run_id, B.run_id]) and report.already == []
    assert len(report.damaged) == 1 and report.damaged[0].startswith(BROKEN.run_id) and "metrics.jsonl" in report.damaged[0]

    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("fssl")
    runs = {r.data.tags["fssl.run_id"]: r for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {A.run_id, B.run_id}
    a = runs[A.run_id]
    assert a.data.tags["fssl.identity_hash"] == A.identity_hash and a.data.tags[COMPLETE_TAG] == "true"
    assert a.data.params["algorithm"] == "fedavg" and a.data.params["seed"] == "1" and a.data.params["rounds"] == "3"
    assert len(a.data.params) == len(A.to_dict())
    history = client.get_metric_history(a.info.run_id, "accuracy")
    assert sorted((m.step, m.value) for m in history) == [(1, 20.0), (3, 41.5)]     # round 2 was not evaluated
    assert sorted(m.step for m in client.get_metric_history(a.info.run_id, "upload_bytes")) == [1, 2, 3]
    assert [m.value for m in client.get_metric_history(runs[B.run_id].info.run_id, "accuracy")] == [30.0, 35.0, 52.25]
    artifacts = {f.path for f in client.list_artifacts(a.info.run_id)}
    assert artifacts == {"result.json", "env.json"}
    local = client.download_artifacts(a.info.run_id, "result.json", str(tmp_path))
    assert json.loads(open(local).read()) == json.loads((store.dir(A) / "result.json").read_text())

    again = export(store.root, uri=uri, progress=False)
    assert again.exported == [] and sorted(again.already) == sorted([A.run_id, B.run_id])
    assert len(client.search_runs([experiment.experiment_id])) == 2
    assert _digests(store.root) == before


def test_a_half_written_export_is_redone(store, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    export(store.root, uri=uri, progress=False)
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("fssl")
    a = next(r for r in client.search_runs([experiment.experiment_id]) if r.data.tags["fssl.run_id"] == A.run_id)
    client.delete_tag(a.info.run_id, COMPLETE_TAG)          # as if the export stopped before its last step
    report = export(store.root, uri=uri, progress=False)
    assert report.exported == [A.run_id] and report.already == [B.run_id]
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.tags["fssl.run_id"] for r in runs) == sorted([A.run_id, B.run_id])
    assert all(r.data.tags[COMPLETE_TAG] == "true" for r in runs)


def test_the_cli_exports_and_says_what_it_did(store, tmp_path, capsys):
    from fssl_core.cli import main
    uri = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["export", "mlflow", "--runs", str(store.root), "--uri", uri, "--experiment", "mine"]) == 0
    out, err = capsys.readouterr()
    assert "exported 2, already there 0, damaged and skipped 1" in out and BROKEN.run_id in err
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert len(client.search_runs([client.get_experiment_by_name("mine").experiment_id])) == 2
