"""MLflow while training (integrations/mlflow_track.py): a tiny MNIST run tracked as it trains, read back with
MlflowClient: rounds timed as they ended within the run's start and end, the summary as metrics, only the
settings the run reads as params, git and data tags, the final model; an interrupted run KILLED and resumed
into the same MLflow run with every value once; the CLI's --track flags; a notebook's figures. MLflow slow,
unreachable or refusing (its client patched, on a tiny synthetic run): no round waits for it, the outage is
said once, the rounds it missed are logged at the times they ended, by the tracker when MLflow returns or by
`export mlflow` after the run. One SQLite file for the module (creating one costs seconds), an experiment per
test."""
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from fssl_core.engine.trainer import train
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore, describe
from tests.conftest import requires_mnist

mlflow = pytest.importorskip("mlflow")
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE  # noqa: E402
from fssl_core.integrations import mlflow_fields  # noqa: E402
from fssl_core.integrations.mlflow_fields import (COMMIT_TAG, COMPLETE_TAG, PENDING, code_dirty, head_commit,  # noqa: E402
                                                  params, said)
from fssl_core.integrations.mlflow_track import MlflowTracker, _transient  # noqa: E402

# a run that needs no data files (as tests/test_cli.py's TINY_RUN): synthetic CIFAR-10, 2 rounds of 3 clients
TINY_RUN = ["dataset=synthetic_cifar10", "resplit_train=120", "resplit_test=100", "clients=6", "clients_per_round=3",
            "rounds=2", "local_epochs=1", "batch_size=10", "eval_every=2"]
TINY = RunConfig(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
                 local_epochs=1, rounds=3, batch_size=10)
SYNTHETIC = RunConfig(dataset="synthetic_cifar10", resplit_train=120, resplit_test=100, clients=6, clients_per_round=3,
                      rounds=3, local_epochs=1, batch_size=10)


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


def _stamps(client, run, key):
    return {m.step: m.timestamp for m in client.get_metric_history(run.info.run_id, key)}


def _has_the_final_model(client, run, run_dir):
    """The run's final state, checkpoint.pt, is the MLflow run's model/checkpoint.pt, byte for byte."""
    assert {f.path for f in client.list_artifacts(run.info.run_id)} == {"result.json", "env.json", "model"}
    assert [f.path for f in client.list_artifacts(run.info.run_id, "model")] == ["model/checkpoint.pt"]
    logged = client.download_artifacts(run.info.run_id, "model/checkpoint.pt", tempfile.mkdtemp())
    assert hashlib.sha256(Path(logged).read_bytes()).digest() == hashlib.sha256(
        (run_dir / "checkpoint.pt").read_bytes()).digest()


def _timed(tracker):
    """The training thread's calls to `tracker.round_finished`: {round: (called, returned)} (time.time())."""
    calls, inner = {}, tracker.round_finished

    def round_finished(cfg, r, row):
        before = time.time()
        inner(cfg, r, row)
        calls[r] = (before, time.time())
    tracker.round_finished = round_finished
    return calls


# what MLflow's client raises for a server that is not there (rest_utils.http_request), as measured below
UNREACHABLE = ("API request to http://127.0.0.1:5000/api/2.0/mlflow/runs/log-batch failed with exception "
               "HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries exceeded (Caused by NewConnectionError: "
               "[Errno 111] Connection refused)")
CALLS = ("search_runs", "create_run", "update_run", "get_metric_history", "log_batch", "set_tag", "log_artifact",
         "set_terminated")


def _outage(monkeypatch, tracker, down: threading.Event, slow: float = 0.0):
    """The tracker's MLflow answers each call `slow` seconds late, and refuses every call while `down` is set."""
    client = tracker.client
    for name in CALLS:
        def call(*args, _real=getattr(client, name), **kwargs):
            time.sleep(slow)
            if down.is_set():
                raise MlflowException(UNREACHABLE)
            return _real(*args, **kwargs)
        monkeypatch.setattr(client, name, call)


def _taken(tracker, within: float = 10.0):
    """Wait until the tracker's worker has no call queued (a test's way to fix when an outage begins)."""
    until = time.monotonic() + within
    while tracker._calls and time.monotonic() < until:
        time.sleep(0.01)
    assert not tracker._calls


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
    assert run.data.tags["git.dirty"] == str(code_dirty()).lower()
    _has_the_final_model(client, run, store.dir(cfg))
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
def test_a_run_that_raises_is_failed(tmp_path, tracker):
    cfg = TINY.replace(rounds=1)

    def fail(r):
        raise RuntimeError("a bug after round 1")

    with pytest.raises(RuntimeError):
        train(cfg, RunStore(tmp_path / "a"), progress=False, after_round=fail, tracker=tracker)
    assert [r.info.status for r in _runs(tracker, cfg)[1]] == ["FAILED"]


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
    from fssl_core.job.reproduce import reproduce
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


def test_mlflow_answering_slowly_holds_no_round_up(tmp_path, tracker, monkeypatch):
    """Each call MLflow takes half a second to answer: a round's call returns at once, and every value is logged
    at the time its round ended; the run's end waits while MLflow takes its calls, and then all is there."""
    _outage(monkeypatch, tracker, threading.Event(), slow=0.5)
    calls = _timed(tracker)
    store = RunStore(tmp_path)
    result = train(SYNTHETIC, store, progress=False, tracker=tracker)
    assert max(after - before for before, after in calls.values()) < 0.2       # synchronous: >= 0.5 s each
    client, [run] = _runs(tracker, SYNTHETIC)
    assert run.info.status == "FINISHED" and run.data.tags[COMPLETE_TAG] == "true"
    stamps = _stamps(client, run, "seconds")
    assert sorted(stamps) == [1, 2, 3]
    for r, (before, after) in calls.items():
        assert before * 1000 - 1 <= stamps[r] <= after * 1000 + 1, r
    assert run.data.metrics["best_accuracy"] == result.summary["best_accuracy"]
    assert {k: run.data.tags.get(k) for k in tracker.commit} == tracker.commit
    _has_the_final_model(client, run, store.dir(SYNTHETIC))


def test_mlflow_down_mid_run_is_said_once_and_its_rounds_logged_at_their_times_when_it_returns(
        tmp_path, tracker, monkeypatch, capsys):
    """Unreachable after round 1, back after round 3 of 4: rounds 2 and 3 are logged by the worker when MLflow
    returns, at the times they ended; the outage and the return are said once each, whatever the retries."""
    tracker.RETRY_S = (0.05, 0.2)
    cfg = SYNTHETIC.replace(rounds=4)
    down = threading.Event()
    _outage(monkeypatch, tracker, down)
    calls = _timed(tracker)

    def outage(r):
        if r == 1:
            _taken(tracker)
            down.set()
        if r == 3:
            time.sleep(1.0)          # retried several times meanwhile
            down.clear()

    train(cfg, RunStore(tmp_path), progress=False, tracker=tracker, after_round=outage)
    assert max(after - before for before, after in calls.values()) < 0.2
    said_ = capsys.readouterr().err
    assert said_.count(f"MLflow at {tracker.uri} unreachable since round 2 of run {cfg.run_id}") == 1
    assert "Connection refused" in said_ and said_.count("reachable again") == 1
    client, [run] = _runs(tracker, cfg)
    assert run.info.status == "FINISHED" and run.data.tags[COMPLETE_TAG] == "true"
    for key in ("seconds", "accuracy"):
        stamps = _stamps(client, run, key)
        assert sorted(stamps) == [1, 2, 3, 4]
        for r, (before, after) in calls.items():
            assert before * 1000 - 1 <= stamps[r] <= after * 1000 + 1, (key, r)
    assert not (RunStore(tmp_path).dir(cfg) / PENDING).exists()


def test_mlflow_still_down_at_the_end_keeps_the_times_and_export_logs_them_into_the_same_run(
        tmp_path, tracker, monkeypatch, capsys):
    """Unreachable from round 2 to the end: the end waits FLUSH_STALL_S, says so in one line with the command
    that completes the run, and keeps the rounds' times in the run's directory; that export logs the missed
    rounds into the MLflow run the tracker began, at the times kept, and keeps its commit tags."""
    from fssl_core.integrations.mlflow_export import export
    tracker.RETRY_S, tracker.FLUSH_STALL_S = (0.05, 0.2), 0.5
    down = threading.Event()
    _outage(monkeypatch, tracker, down)
    calls = _timed(tracker)
    store = RunStore(tmp_path / "runs")

    def outage(r):
        if r == 1:
            _taken(tracker)
            down.set()

    ends = time.monotonic()
    train(SYNTHETIC, store, progress=False, tracker=tracker, after_round=outage)
    ends = time.monotonic() - ends
    assert max(after - before for before, after in calls.values()) < 0.2
    said_ = capsys.readouterr().err
    assert said_.count("unreachable since round 2") == 1 and said_.count("still unreachable as run") == 1
    command = (f"python -m fssl_core export mlflow --runs {store.root} --uri {tracker.uri} "
               f"--experiment {tracker.experiment}")
    assert command in said_
    kept = json.loads((store.dir(SYNTHETIC) / PENDING).read_text())
    assert {int(r) for r in kept["rounds"]} == {1, 2, 3} and kept["ended"] is not None
    client = mlflow.MlflowClient(tracking_uri=tracker.uri)        # not the tracker's: MLflow is there for it
    [half] = [r for r in client.search_runs([tracker.experiment_id])
              if r.data.tags.get("fssl.identity_hash") == SYNTHETIC.identity_hash]
    assert half.info.status == "RUNNING" and _steps(client, half, "seconds") == [1]
    with tracker._cv:
        tracker._calls.clear()          # the worker retries no more: as if this process had ended

    before = {p.name: p.read_bytes() for p in store.dir(SYNTHETIC).iterdir() if p.is_file()}
    report = export(store.root, uri=tracker.uri, experiment=tracker.experiment, progress=False)
    assert report.exported == [SYNTHETIC.run_id]
    [run] = client.search_runs([tracker.experiment_id], f"tags.`fssl.identity_hash` = '{SYNTHETIC.identity_hash}'")
    assert run.info.run_id == half.info.run_id and run.info.status == "FINISHED"
    stamps = _stamps(client, run, "seconds")
    assert sorted(stamps) == [1, 2, 3]
    for r, (called, returned) in calls.items():
        assert called * 1000 - 1 <= stamps[r] <= returned * 1000 + 1, r
    assert run.info.end_time == round(kept["ended"] * 1000)
    assert {k: run.data.tags.get(k) for k in tracker.commit} == tracker.commit   # the training's, not the export's
    _has_the_final_model(client, run, store.dir(SYNTHETIC))
    assert {p.name: p.read_bytes() for p in store.dir(SYNTHETIC).iterdir() if p.is_file()} == before


def test_a_run_resumed_logs_the_times_kept_by_the_session_mlflow_missed(tmp_path, tracker, monkeypatch):
    """Interrupted after round 2 while MLflow was down: round 2's time is kept; resumed with MLflow back (a new
    process: the tracker unpickled), round 2 is logged at that time, and the kept times are then removed."""
    tracker.RETRY_S, tracker.FLUSH_STALL_S = (0.05, 0.2), 0.3
    cfg = SYNTHETIC.replace(checkpoint_every=1)
    down = threading.Event()
    _outage(monkeypatch, tracker, down)
    calls = _timed(tracker)
    store = RunStore(tmp_path)

    def outage(r):
        if r == 1:
            _taken(tracker)
            down.set()
        if r == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, store, progress=False, tracker=tracker, after_round=outage)
    assert set(json.loads((store.dir(cfg) / PENDING).read_text())["rounds"]) == {"1", "2"}
    with tracker._cv:
        tracker._calls.clear()
    again = pickle.loads(pickle.dumps(tracker))
    train(cfg, store, progress=False, tracker=again)
    client, [run] = _runs(again, cfg)
    assert run.info.status == "FINISHED" and sorted(_stamps(client, run, "seconds")) == [1, 2, 3]
    assert calls[2][0] * 1000 - 1 <= _stamps(client, run, "seconds")[2] <= calls[2][1] * 1000 + 1
    assert not (store.dir(cfg) / PENDING).exists()


def test_a_call_mlflow_refuses_stops_following_that_run_in_one_line(tmp_path, tracker, monkeypatch, capsys):
    """A 4xx answer is not retried: the run trains on untracked, said once, its times kept for the export."""
    def refuse(*args, **kwargs):
        raise MlflowException("Invalid value for metric 'x'", error_code=INVALID_PARAMETER_VALUE)

    monkeypatch.setattr(tracker.client, "log_batch", refuse)
    started = time.monotonic()
    result = train(SYNTHETIC, RunStore(tmp_path), progress=False, tracker=tracker)
    assert result.summary["rounds"] == 3 and time.monotonic() - started < 60
    said_ = capsys.readouterr().err
    assert said_.count("refused the start of run") == 1 and "Invalid value for metric 'x'" in said_
    assert "trains on untracked" in said_ and "unreachable" not in said_
    assert (RunStore(tmp_path).dir(SYNTHETIC) / PENDING).exists()


def test_the_failure_of_a_server_that_is_not_there_is_retried_and_a_refusal_is_not(monkeypatch):
    """MLflow's own exception for a refused connection, measured: transient; a 4xx and our own errors: not."""
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    with mlflow_fields.first_contact(), pytest.raises(MlflowException) as gone:
        mlflow.MlflowClient(tracking_uri="http://127.0.0.1:9").get_experiment_by_name("x")
    assert _transient(gone.value) and "Connection refused" in str(gone.value)
    assert _transient(MlflowException("database is locked"))
    bad = MlflowException("no", error_code=INVALID_PARAMETER_VALUE)
    assert not _transient(bad) and not _transient(FileNotFoundError("result.json"))


def test_mlflows_remedy_is_kept_in_the_line_that_says_why(tmp_path):
    """The file-store refusal (~500 characters, its remedy last) whole; a later line's remedy after a first
    line cut at SAID_CHARS (an HTML body)."""
    from fssl_core.config import ConfigError
    with pytest.raises(ConfigError) as err:
        MlflowTracker((tmp_path / "mlruns").as_uri(), experiment="fssl")
    assert "set `MLFLOW_ALLOW_FILE_STORE=true` to opt out" in str(err.value) and "\n" not in str(err.value)
    body = MlflowException("<html>" + "x" * 5000 + "\nA traceback line.\nTo fix it, set `MLFLOW_TRACKING_INSECURE_TLS=true`.")
    assert said(body).endswith("... To fix it, set `MLFLOW_TRACKING_INSECURE_TLS=true`.")
    assert len(said(body)) < mlflow_fields.SAID_CHARS + 100 and "traceback" not in said(body)


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_git_dirty_says_whether_the_package_has_uncommitted_changes(tmp_path, uri, monkeypatch):
    """In a temporary checkout whose fssl_core/ is the code: an edit or a new file there is dirty, a file
    beside the package (a run's records) is not; the tracker tags the commit with it."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    code = tmp_path / "fssl_core"
    code.mkdir()
    (code / "a.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "code"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, env=env)
    assert code_dirty(code) is False
    (tmp_path / "records.json").write_text("{}")
    assert code_dirty(code) is False
    (code / "new.py").write_text("")
    assert code_dirty(code) is True
    (code / "new.py").unlink()
    (code / "a.py").write_text("x = 2\n")
    assert code_dirty(code) is True
    monkeypatch.setattr(mlflow_fields, "CODE", code)
    tracker = MlflowTracker(uri, experiment=f"t-{uuid.uuid4().hex[:8]}")
    assert tracker.commit == {COMMIT_TAG: head_commit(code), "fssl.git_commit_of": "training", "git.dirty": "true"}
    assert code_dirty(tmp_path / "elsewhere") is None
