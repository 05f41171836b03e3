"""`export mlflow`: two runs of a temporary store round-trip through MLflow (read back with MlflowClient) with
the live tracker's fields (params it reads, summary metrics, tags, rounds timed from the records, the final
model), a second export adds nothing, a killed export is resumed into the run it left, a run a tracker began
is completed with the times it kept and its commit, a damaged run is skipped by name, and no file of the
store changes."""
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from tests.fake_runs import fake_finished_run, row

mlflow = pytest.importorskip("mlflow")
from fssl_core.integrations import mlflow_export  # noqa: E402
from fssl_core.integrations.mlflow_export import COMPLETE_TAG, export  # noqa: E402
from fssl_core.integrations.mlflow_fields import head_commit, params  # noqa: E402

A = RunConfig(algorithm="fedavg", dataset="mnist", rounds=3, seed=1)
B = A.replace(algorithm="fedsiam_d", seed=2)
BROKEN = A.replace(seed=3)


def _digests(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture
def store(tmp_path):
    store = RunStore(tmp_path / "runs")
    fake_finished_run(store, A, [row(1, 20.0, upload_bytes=10), row(2), row(3, 41.5, upload_bytes=30)],
                      env={"torch": "x", "data": {"mnist": "d1g35t"}})
    fake_finished_run(store, B, [row(1, 30.0), row(2, 35.0), row(3, 52.25)])
    fake_finished_run(store, BROKEN, [row(1, 1.0), row(2, 2.0), row(3, 3.0)])
    (store.dir(BROKEN) / "metrics.jsonl").write_text("not json\n")
    return store


def _all_runs(client, experiment):
    """Deleted runs too: a killed export must leave none behind."""
    return client.search_runs([experiment.experiment_id], run_view_type=mlflow.entities.ViewType.ALL)


def _each_value_once(client, run):
    for key in run.data.metrics:
        steps = [m.step for m in client.get_metric_history(run.info.run_id, key)]
        assert len(steps) == len(set(steps)), (key, steps)


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
    assert a.data.params == params(A) and len(a.data.params) < len(A.to_dict()) / 2
    assert "tau_curve" not in a.data.params and runs[B.run_id].data.params["tau_curve"] == "linear"   # FedSiam's τ
    summary = json.loads((store.dir(A) / "result.json").read_text())
    assert a.data.metrics["best_accuracy"] == summary["best_accuracy"] == 41.5 and a.data.metrics["best_round"] == 3
    assert a.data.metrics["total_upload_bytes"] == 40 and a.data.metrics["total_seconds"] == 3.0
    assert a.data.tags["fssl.data_digest"] == "d1g35t" and "fssl.data_digest" not in runs[B.run_id].data.tags
    assert a.data.tags["fssl.status"] == "ok" and a.data.tags["mlflow.runName"].startswith("fedavg mnist iid γ=0.1")
    if head_commit() is not None:          # the store is no git checkout: the exporting checkout's commit
        assert a.data.tags["mlflow.source.git.commit"] == head_commit()
        assert a.data.tags["fssl.git_commit_of"] == "export"
    # times from the records: the last round ended when result.json was written, each earlier one its
    # successors' seconds (1.0 each) before, and the run began round 1's seconds before that
    end = round((store.dir(A) / "result.json").stat().st_mtime * 1000)
    assert a.info.end_time == end and a.info.start_time == end - 3000
    stamps = sorted((m.step, m.timestamp) for m in client.get_metric_history(a.info.run_id, "upload_bytes"))
    assert stamps == [(1, end - 2000), (2, end - 1000), (3, end)]
    history = client.get_metric_history(a.info.run_id, "accuracy")
    assert sorted((m.step, m.value) for m in history) == [(1, 20.0), (3, 41.5)]     # round 2 was not evaluated
    assert sorted(m.step for m in client.get_metric_history(a.info.run_id, "upload_bytes")) == [1, 2, 3]
    assert [m.value for m in client.get_metric_history(runs[B.run_id].info.run_id, "accuracy")] == [30.0, 35.0, 52.25]
    artifacts = {f.path for f in client.list_artifacts(a.info.run_id)}
    assert artifacts == {"result.json", "env.json", "model"}
    assert [f.path for f in client.list_artifacts(a.info.run_id, "model")] == ["model/checkpoint.pt"]
    local = client.download_artifacts(a.info.run_id, "result.json", str(tmp_path))
    assert json.loads(open(local).read()) == json.loads((store.dir(A) / "result.json").read_text())

    again = export(store.root, uri=uri, progress=False)
    assert again.exported == [] and sorted(again.already) == sorted([A.run_id, B.run_id])
    assert len(client.search_runs([experiment.experiment_id])) == 2
    assert _digests(store.root) == before


def test_an_env_json_edited_after_its_run_is_not_exported_as_provenance(store, tmp_path):
    """The data digest an export tags is the one the run was sealed with: an edited env.json is damage."""
    (store.dir(A) / "env.json").write_text(json.dumps({"torch": "9.9.9", "data": {"mnist": "0" * 64}}))
    report = export(store.root, uri=f"sqlite:///{tmp_path / 'mlflow.db'}", progress=False)
    assert report.exported == [B.run_id]
    assert any(d.startswith(A.run_id) and "env.json: not the environment result.json was sealed with" in d
               for d in report.damaged)


def test_a_half_written_export_is_redone(store, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    export(store.root, uri=uri, progress=False)
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("fssl")
    a = next(r for r in client.search_runs([experiment.experiment_id]) if r.data.tags["fssl.run_id"] == A.run_id)
    client.delete_tag(a.info.run_id, COMPLETE_TAG)          # as if the export stopped before its last step
    report = export(store.root, uri=uri, progress=False)
    assert report.exported == [A.run_id] and report.already == [B.run_id]
    runs = _all_runs(client, experiment)
    assert sorted(r.data.tags["fssl.run_id"] for r in runs) == sorted([A.run_id, B.run_id])
    assert all(r.data.tags[COMPLETE_TAG] == "true" and r.info.lifecycle_stage == "active" for r in runs)
    assert a.info.run_id in {r.info.run_id for r in runs}    # resumed, not deleted and redone
    for run in runs:
        _each_value_once(client, run)


def test_a_killed_export_is_resumed_into_the_run_it_left(store, tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    finish = mlflow_export.write_end

    def killed(*args, **kwargs):       # after the first run's metrics, before its summary and tags
        raise KeyboardInterrupt

    monkeypatch.setattr(mlflow_export, "write_end", killed)
    with pytest.raises(KeyboardInterrupt):
        export(store.root, uri=uri, progress=False)
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("fssl")
    [half] = _all_runs(client, experiment)
    assert COMPLETE_TAG not in half.data.tags and half.data.metrics

    monkeypatch.setattr(mlflow_export, "write_end", finish)
    report = export(store.root, uri=uri, progress=False)
    assert sorted(report.exported) == sorted([A.run_id, B.run_id])
    runs = _all_runs(client, experiment)
    assert len(runs) == 2 and half.info.run_id in {r.info.run_id for r in runs}
    assert all(r.data.tags[COMPLETE_TAG] == "true" and r.info.status == "FINISHED" for r in runs)
    for run in runs:
        _each_value_once(client, run)
        assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "seconds")) == [1, 2, 3]


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_committed_records_carry_the_commit_that_added_them(store, tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "records"]):
        subprocess.run(["git", *args], cwd=store.root, check=True, env=env)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=store.root, capture_output=True, text=True).stdout.strip()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    export(store.root, uri=uri, progress=False)
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("fssl").experiment_id])
    assert {(r.data.tags["mlflow.source.git.commit"], r.data.tags["fssl.git_commit_of"]) for r in runs} == {
        (commit, "records")}


def test_the_cli_exports_and_says_what_it_did(store, tmp_path, capsys):
    from fssl_core.cli import main
    uri = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["export", "mlflow", "--runs", str(store.root), "--uri", uri, "--experiment", "mine"]) == 0
    out, err = capsys.readouterr()
    assert "exported 2, already there 0, damaged and skipped 1" in out and BROKEN.run_id in err
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert len(client.search_runs([client.get_experiment_by_name("mine").experiment_id])) == 2


def test_a_run_a_tracker_began_keeps_its_commit_and_gets_the_times_it_kept(store, tmp_path):
    """As a tracker leaves a run when MLflow went away after round 1 (mlflow_track.py): an MLflow run with the
    training checkout's commit and round 1, and the times of every round and of the end kept beside the records."""
    from mlflow.entities import Metric
    from fssl_core.integrations.mlflow_fields import PENDING, commit_tags, identity_tags, write_pending
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment("fssl", artifact_location=(tmp_path / "artifacts").as_uri())
    training = commit_tags("c0ffee" * 6 + "c0ff", "training", dirty=True)
    began = client.create_run(experiment_id, start_time=1_000_000, tags={**identity_tags(A), **training})
    rid = began.info.run_id
    client.log_batch(rid, metrics=[Metric("seconds", 1.0, 1_001_000, 1)])
    write_pending(store.dir(A), 1000.0, {1: 1001.0, 2: 1002.5, 3: 1004.25}, 1005.0)
    before = _digests(store.root)
    export(store.root, uri=uri, progress=False)
    run = client.get_run(rid)
    assert run.info.status == "FINISHED" and run.data.tags[COMPLETE_TAG] == "true"
    assert {k: run.data.tags[k] for k in training} == training == {
        "mlflow.source.git.commit": "c0ffee" * 6 + "c0ff", "fssl.git_commit_of": "training", "git.dirty": "true"}
    stamps = sorted((m.step, m.timestamp) for m in client.get_metric_history(rid, "seconds"))
    assert stamps == [(1, 1_001_000), (2, 1_002_500), (3, 1_004_250)]
    assert run.info.end_time == 1_005_000 and run.data.metrics["total_seconds"] == 3.0
    assert len(client.search_runs([experiment_id])) == 2            # A into the run begun, B a new one
    assert _digests(store.root) == before and (store.dir(A) / PENDING).exists()
