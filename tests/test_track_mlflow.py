"""MLflow while training (integrations/mlflow_track.py): a tiny MNIST run tracked as it trains, read back with
MlflowClient: rounds timed as they ended within the run's start and end, the summary as metrics, only the
settings the run reads as params, git and data tags; an interrupted run KILLED and resumed into the same
MLflow run with every value once; the CLI's --track flags; a notebook's figures. One SQLite file for the
module (creating one costs seconds), an experiment per test."""
import json
import pickle
import time
import uuid

import pytest

from fssl_core.engine.trainer import train
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore, describe
from tests.conftest import requires_mnist

mlflow = pytest.importorskip("mlflow")
from fssl_core.integrations.mlflow_fields import COMPLETE_TAG, head_commit, params  # noqa: E402
from fssl_core.integrations.mlflow_track import MlflowTracker, TrackingFailed  # noqa: E402

# a run that needs no data files (as tests/test_cli.py's TINY_RUN): synthetic CIFAR-10, 2 rounds of 3 clients
TINY_RUN = ["dataset=synthetic_cifar10", "resplit_train=120", "resplit_test=100", "clients=6", "clients_per_round=3",
            "rounds=2", "local_epochs=1", "batch_size=10", "eval_every=2"]
TINY = RunConfig(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
                 local_epochs=1, rounds=3, batch_size=10)


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'm.db'}"


@pytest.fixture
def tracker(uri):
    return MlflowTracker(uri, experiment=f"t-{uuid.uuid4().hex[:8]}")


def _runs(tracker, cfg):
    client = tracker.client
    found = client.search_runs([tracker.experiment_id], run_view_type=mlflow.entities.ViewType.ALL)
    return client, [r for r in found if r.data.tags.get("fssl.identity_hash") == cfg.identity_hash]


def _steps(client, run, key):
    return sorted(m.step for m in client.get_metric_history(run.info.run_id, key))


@requires_mnist
def test_a_tracked_run_logs_each_round_as_it_ends_and_its_summary_at_the_end(tmp_path, tracker):
    cfg = TINY                       # FedAvg: the FedSiam settings it does not read (tau_curve) are no params
    store = RunStore(tmp_path)
    before = time.time()
    result = train(cfg, store, progress=False, tracker=tracker)
    after = time.time()
    client, runs = _runs(tracker, cfg)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED" and run.data.tags[COMPLETE_TAG] == "true"
    start, end = run.info.start_time, run.info.end_time
    assert before * 1000 - 1 <= start < end <= after * 1000 + 1
    history = sorted(client.get_metric_history(run.info.run_id, "seconds"), key=lambda m: m.step)
    assert [m.step for m in history] == [1, 2, 3]
    stamps = [m.timestamp for m in history]
    assert start < stamps[0] < stamps[1] < stamps[2] <= end
    # each round logged when it ended: at least that round's seconds after the one before
    assert all(b - a >= 1000 * m.value - 5 for a, b, m in zip(stamps, stamps[1:], history[1:]))

    summary = json.loads((store.dir(cfg) / "result.json").read_text())
    metrics = run.data.metrics
    assert metrics["best_accuracy"] == summary["best_accuracy"] == result.summary["best_accuracy"]
    assert metrics["best_round"] == summary["best_round"]
    assert metrics["total_upload_bytes"] == summary["upload_bytes"]
    assert metrics["total_download_bytes"] == summary["download_bytes"]
    assert metrics["total_seconds"] == pytest.approx(summary["seconds"])
    assert run.data.tags["fssl.status"] == summary["status"]

    assert run.data.params == params(cfg)
    assert "tau_curve" not in run.data.params and "checkpoint_every" not in run.data.params
    assert run.data.params["lr"] == "0.01" and len(run.data.params) < len(cfg.to_dict()) / 2
    env = json.loads((store.dir(cfg) / "env.json").read_text())
    assert run.data.tags["fssl.data_digest"] == env["data"]["mnist"]
    commit = head_commit()
    if commit is not None:           # a git checkout
        assert run.data.tags["mlflow.source.git.commit"] == commit
        assert run.data.tags["fssl.git_commit_of"] == "training"
    assert run.data.tags["mlflow.runName"] == describe(cfg)
    assert {f.path for f in client.list_artifacts(run.info.run_id)} == {"result.json", "env.json"}
    # tracking is no part of the run: its config.json and identity are those of an untracked run
    assert json.loads((store.dir(cfg) / "config.json").read_text()) == cfg.fields_read()
    assert cfg.run_id == TINY.run_id


@requires_mnist
def test_an_interrupted_run_is_killed_then_resumes_into_the_same_mlflow_run_with_each_value_once(tmp_path, tracker):
    cfg = TINY.replace(checkpoint_every=2)     # round 1 has no checkpoint: the resumed run redoes it
    store = RunStore(tmp_path)

    def interrupt(r):
        if r == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, store, progress=False, after_round=interrupt, tracker=tracker)
    client, runs = _runs(tracker, cfg)
    assert [r.info.status for r in runs] == ["KILLED"] and COMPLETE_TAG not in runs[0].data.tags
    assert _steps(client, runs[0], "accuracy") == [1]

    again = pickle.loads(pickle.dumps(tracker))     # as a fresh process gets it: no client, no open runs
    result = train(cfg, store, progress=False, tracker=again)
    client, runs = _runs(again, cfg)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED" and run.data.tags[COMPLETE_TAG] == "true"
    for key in (k for k in result.metrics[0] if k != "round"):
        assert _steps(client, run, key) == [1, 2, 3], key
    assert run.data.metrics["best_accuracy"] == result.summary["best_accuracy"]
    stamps = [m.timestamp for m in sorted(client.get_metric_history(run.info.run_id, "accuracy"), key=lambda m: m.step)]
    assert run.info.start_time < stamps[0] < stamps[1] < stamps[2] <= run.info.end_time


@requires_mnist
def test_a_run_that_raises_is_failed_and_one_mlflow_refuses_trains_on(tmp_path, tracker, monkeypatch):
    cfg = TINY.replace(rounds=1)

    def fail(r):
        raise RuntimeError("a bug after round 1")

    with pytest.raises(RuntimeError):
        train(cfg, RunStore(tmp_path / "a"), progress=False, after_round=fail, tracker=tracker)
    assert [r.info.status for r in _runs(tracker, cfg)[1]] == ["FAILED"]

    other = cfg.replace(seed=2)

    def refuse(*args, **kwargs):
        raise mlflow.exceptions.MlflowException("database is locked")

    monkeypatch.setattr(tracker.client, "log_batch", refuse)
    with pytest.warns(TrackingFailed, match="database is locked.*trains on untracked"):
        result = train(other, RunStore(tmp_path / "b"), progress=False, tracker=tracker)
    assert result.summary["rounds"] == 1


def test_params_and_the_run_name_say_what_the_run_reads():
    at_server = RunConfig(algorithm="fedmix", partition="server_iid", server_labeled=1000, server_balanced=True)
    assert "labeled_ratio" not in params(at_server) and params(at_server)["server_labeled"] == "1000"
    assert "N_s=1000" in describe(at_server) and "γ=" not in describe(at_server)
    ratio = RunConfig(algorithm="fedmix", partition="server_iid", labeled_ratio=0.05)
    assert "γ=0.05" in describe(ratio) and params(ratio)["labeled_ratio"] == "0.05"
    assert describe(RunConfig()).startswith("fedavg mnist iid γ=0.1 K=100")
    siam = RunConfig(algorithm="fedsiam_d", tau_curve="rectangle")
    assert params(siam)["tau_curve"] == "rectangle" and "dirichlet_alpha" not in params(siam)   # iid reads no α


def test_the_cli_tracks_a_run_and_refuses_a_uri_without_track(tmp_path, uri, capsys):
    from fssl_core.cli import main
    experiment = f"cli-{uuid.uuid4().hex[:8]}"
    status = main(["run", "--quiet", "--runs", str(tmp_path), *TINY_RUN, "--track", "mlflow", "--track-uri", uri,
                   "--track-experiment", experiment])
    assert status in (0, 3)        # 3: two rounds on synthetic images may end at chance, a finished run all the same
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED" and "fssl.data_digest" not in runs[0].data.tags
    assert set(runs[0].data.metrics) >= {"accuracy", "best_accuracy", "total_seconds"}
    [run_dir] = [d for d in tmp_path.iterdir() if d.is_dir()]
    assert "track" not in (run_dir / "config.json").read_text()
    capsys.readouterr()
    assert main(["run", "--runs", str(tmp_path), "--track-uri", uri, *TINY_RUN]) == 2
    assert "--track-uri: given without --track mlflow" in capsys.readouterr().err


def test_a_notebooks_figures_go_to_one_mlflow_run_tagged_with_its_name(tmp_path, tracker):
    staging = tmp_path / "staging"
    (staging / "figures").mkdir(parents=True)
    for name in ("a.png", "b.png"):
        (staging / "figures" / name).write_bytes(b"\x89PNG not really")
    tracker.log_figures("fedsiam_table5", "smoke", sorted((staging / "figures").glob("*.png")), staging)
    tracker.log_figures("fedsiam_table5", "smoke", [staging / "figures" / "a.png"], staging)   # the redrawn one
    client = tracker.client
    runs = client.search_runs([tracker.experiment_id], "tags.`fssl.notebook` = 'fedsiam_table5'")
    assert len(runs) == 1 and runs[0].data.tags["fssl.profile"] == "smoke"
    assert {f.path for f in client.list_artifacts(runs[0].info.run_id, "figures")} == {"figures/a.png",
                                                                                         "figures/b.png"}


def test_reproduce_logs_each_notebooks_figures(tmp_path, tracker, monkeypatch):
    """A one-cell notebook that draws one figure, executed by `reproduce` with a tracker."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("papermill")
    from fssl_core.reproduce import reproduce
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    monkeypatch.setenv("FSSL_RUNS", str(tmp_path / "runs"))
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell('profile = "quick"\ndevice = "cpu"')
    parameters.metadata["tags"] = ["parameters"]
    nb.cells = [parameters, nbformat.v4.new_code_cell(
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "from fssl_core.report.plots import save_figure\n"
        "fig, ax = plt.subplots()\nsave_figure(fig, 'tiny', profile)")]
    nbformat.write(nb, str(tmp_path / "notebooks" / "tiny.ipynb"))
    reproduce(profile="smoke", only="tiny", tracker=tracker)
    assert (tmp_path / "results" / "smoke" / "figures" / "tiny.png").exists()       # published as before
    client = tracker.client
    [run] = client.search_runs([tracker.experiment_id], "tags.`fssl.notebook` = 'tiny'")
    assert run.data.tags["fssl.profile"] == "smoke"
    assert [f.path for f in client.list_artifacts(run.info.run_id, "results/smoke/figures")] == [
        "results/smoke/figures/tiny.png"]


@pytest.mark.parametrize("bad_uri, said", [
    ("http://127.0.0.1:9", "MLflow cannot use it (API request to http://127.0.0.1:9"),
    ("sqlite:////nonexistent-folder/m.db", "MLflow cannot use it (its folder /nonexistent-folder does not exist)"),
])
def test_an_unusable_tracking_uri_is_refused_in_one_line_within_seconds(bad_uri, said, monkeypatch):
    """MLflow's own retries take ~5 minutes to give up on a server that is not there; the first contact is
    given seconds (mlflow_fields.FIRST_CONTACT), and the user's MLFLOW_HTTP_* settings stay as they were."""
    from fssl_core.config import ConfigError
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    started = time.monotonic()
    with pytest.raises(ConfigError) as err:
        MlflowTracker(bad_uri, experiment="fssl")
    assert time.monotonic() - started < 10
    assert f"--track-uri {bad_uri!r}: {said}" in str(err.value) and "\n" not in str(err.value)
    import os
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
