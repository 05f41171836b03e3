"""The Ray executor (fssl_core/executors/ray.py): the local executor's runs bit for bit, through run_all
and through a smoke reproduction; a worker killed mid-run is retried and resumes from the checkpoint;
workers that cannot see the driver's store return their files; a run that raises is reported once,
not retried. One local Ray (2 CPUs) serves the module; without Ray the tests that need it skip."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import torch

from fssl_core import cli
from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig
from fssl_core.executors import run_all
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

from .conftest import requires_mnist
from .test_store import TINY, _without_timing



# a summary's fields that depend on wall-clock time: the seconds, and the digests of files holding them
TIMED = ("run_dir", "digest", "metrics_digest", "checkpoint_sha256")


def _untimed(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if "seconds" not in k and k not in TIMED}

def _ray_importable() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


requires_ray = pytest.mark.skipif(not _ray_importable(),
                                  reason="Ray is not importable: pip install -e '.[ray]' (the dev extra has it)")
FILES = ("config.json", "env.json", "metrics.jsonl", "checkpoint.pt", "result.json")
# Four rounds, a checkpoint after each: a worker killed after round 2 resumes at round 3.
KILLED = RunConfig(**{**TINY, "rounds": 4, "seed": 5, "checkpoint_every": 1})


@pytest.fixture(scope="module")
def local_ray():
    import ray
    from ray import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the workers get this module's hooks by value
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Runs trained in this process, uninterrupted: what every executor must reproduce."""
    store = RunStore(tmp_path_factory.mktemp("reference"))
    return lambda cfg: train(cfg, store, progress=False)


def _assert_same_run(store: RunStore, cfg: RunConfig, expected) -> None:
    got = store.load(cfg)
    assert got is not None, f"run {cfg.run_id} is not finished in {store.root}"
    assert _without_timing(got.metrics) == _without_timing(expected.metrics)
    assert _untimed(got.summary) == _untimed(expected.summary)
    assert _same(store.final_state(cfg), RunStore(Path(expected.summary["run_dir"]).parent).final_state(cfg))


def _same(a, b) -> bool:
    """Equal bit for bit: tensors by torch.equal, containers element by element."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _log_rounds(log):
    """An after_round hook that appends "run_id round" to `log`, as the task sees it."""
    def hook(cfg, r):
        with open(log, "a") as f:
            f.write(f"{cfg.run_id} {r}\n")
    return hook


def _rounds_trained(log, cfg) -> list[int]:
    return [int(line.split()[1]) for line in open(log).read().splitlines() if line.split()[0] == cfg.run_id]


def _kill_once(log, victim: RunConfig, at_round: int, marker):
    """Log each round; SIGKILL the worker after `victim`'s round `at_round`, on its first attempt only."""
    log_round = _log_rounds(log)

    def hook(cfg, r):
        log_round(cfg, r)
        if cfg.run_id == victim.run_id and r == at_round and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
    return hook


# --- without Ray -------------------------------------------------------------------------------

def test_without_ray_the_ray_executor_is_refused_saying_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)        # `import ray` raises ImportError
    with pytest.raises(ConfigError, match=r"Ray is not installed.*pip install -e '\.\[ray\]'"):
        run_all([RunConfig(**TINY)], store=RunStore(tmp_path), executor="ray")
    assert cli.main(["reproduce", "--executor", "ray", "--only", "nothing"]) == 2
    monkeypatch.setenv("FSSL_EXECUTOR", "ray")
    with pytest.raises(ConfigError, match="Ray is not installed"):
        run_all([RunConfig(**TINY)], store=RunStore(tmp_path))


def test_an_unknown_executor_and_a_ray_option_on_the_local_one_are_refused(monkeypatch, tmp_path):
    from fssl_core.executors import executor_named
    monkeypatch.setenv("FSSL_EXECUTOR", "dask")
    with pytest.raises(ConfigError, match=r"executor='dask': must be one of local, ray"):
        run_all([RunConfig(**TINY)], store=RunStore(tmp_path))
    with pytest.raises(ConfigError, match="gpus_per_run: only for executor='ray'"):
        executor_named("local", gpus_per_run=0.5)


@requires_ray
def test_a_gpu_share_is_a_fraction_or_whole_gpus():
    from fssl_core.executors.ray import RayExecutor
    assert RayExecutor(gpus_per_run=0.25).gpus_per_run == 0.25 and RayExecutor(gpus_per_run=2).gpus_per_run == 2
    with pytest.raises(ConfigError, match=r"gpus_per_run=1.5: must be a fraction in \(0, 1\] or a whole number"):
        RayExecutor(gpus_per_run=1.5)


# --- on a local Ray ----------------------------------------------------------------------------

@requires_ray
@requires_mnist
def test_ray_trains_the_local_executors_runs_bit_for_bit(local_ray, reference, tmp_path):
    configs = [RunConfig(**{**TINY, "rounds": 2, "seed": 1}), RunConfig(**{**TINY, "rounds": 2, "seed": 2}),
               RunConfig(**{**TINY, "rounds": 2, "seed": 1, "algorithm": "fedavg_plus"})]
    results = run_all(configs, store=RunStore(tmp_path), progress=False, executor="ray")
    assert [r.config.run_id for r in results] == [c.run_id for c in configs]
    for cfg in configs:
        _assert_same_run(RunStore(tmp_path), cfg, reference(cfg))
    assert not list(tmp_path.glob(".ray-token-*"))          # the driver's token for the workers is gone


@requires_ray
@requires_mnist
def test_a_worker_killed_mid_run_is_retried_and_resumes_from_its_checkpoint(local_ray, reference, tmp_path):
    from fssl_core.executors.ray import RayExecutor
    log, marker = tmp_path / "rounds.log", tmp_path / "killed"
    store = RunStore(tmp_path / "runs")
    run_all([KILLED], store=store, progress=False, executor=RayExecutor(after_round=_kill_once(log, KILLED, 2, marker)))
    assert marker.exists(), "the worker was never killed"
    assert _rounds_trained(log, KILLED) == [1, 2, 3, 4]      # the retry resumed at round 3 (a restart logs 1, 2 again)
    _assert_same_run(store, KILLED, reference(KILLED))


@requires_ray
@requires_mnist
def test_a_tracked_run_whose_worker_is_killed_goes_on_in_the_same_mlflow_run(local_ray, reference, tmp_path):
    mlflow = pytest.importorskip("mlflow")
    from fssl_core.executors.ray import RayExecutor
    from fssl_core.integrations.mlflow_track import MlflowTracker
    log, marker = tmp_path / "rounds.log", tmp_path / "killed"
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'm.db'}", experiment="ray")
    executor = RayExecutor(after_round=_kill_once(log, KILLED, 2, marker), tracker=tracker)
    run_all([KILLED], store=RunStore(tmp_path / "runs"), progress=False, executor=executor)
    assert marker.exists() and _rounds_trained(log, KILLED) == [1, 2, 3, 4]
    [run] = tracker.client.search_runs([tracker.experiment_id], run_view_type=mlflow.entities.ViewType.ALL)
    assert run.info.status == "FINISHED" and run.data.tags["fssl.identity_hash"] == KILLED.identity_hash
    history = tracker.client.get_metric_history(run.info.run_id, "accuracy")
    assert sorted((m.step, m.value) for m in history) == [(row["round"], row["accuracy"])
                                                          for row in reference(KILLED).metrics]   # each round once


@requires_ray
@requires_mnist
def test_workers_without_the_drivers_filesystem_return_their_runs_whole(local_ray, reference, tmp_path):
    """shared_store=False: as on a cluster without a shared filesystem, each task trains in its own
    scratch store; a worker killed there resumes from its scratch checkpoint on the same node."""
    from fssl_core.executors.ray import RayExecutor
    log, marker, scratch = tmp_path / "rounds.log", tmp_path / "killed", tmp_path / "scratch"
    other = RunConfig(**{**TINY, "rounds": 2, "seed": 1})
    store = RunStore(tmp_path / "runs")
    executor = RayExecutor(shared_store=False, scratch=str(scratch), after_round=_kill_once(log, KILLED, 2, marker))
    run_all([KILLED, other], store=store, progress=False, executor=executor)
    assert marker.exists() and _rounds_trained(log, KILLED) == [1, 2, 3, 4]
    for cfg in (KILLED, other):
        d = store.dir(cfg)
        # complete, no temporary file left (.lock is the store's per-run lock)
        assert sorted(p.name for p in d.iterdir() if p.name != ".lock") == sorted(FILES)
        assert json.loads((d / "result.json").read_text())["run_dir"] == str(d)   # the driver's directory
        assert (d / "config.json").read_bytes() == (Path(reference(cfg).summary["run_dir"]) / "config.json").read_bytes()
        _assert_same_run(store, cfg, reference(cfg))
    assert list(scratch.iterdir()) == []                     # each task cleared its scratch run


@requires_ray
@requires_mnist
def test_a_run_that_raises_is_reported_once_and_the_others_finish(local_ray, tmp_path):
    from fssl_core.executors import RunsFailed
    from fssl_core.executors.ray import RayExecutor
    good, bad = RunConfig(**{**TINY, "rounds": 2, "seed": 1}), RunConfig(**{**TINY, "rounds": 2, "seed": 3})
    log = tmp_path / "rounds.log"
    log_round = _log_rounds(log)

    def fail_bad_run(cfg, r):
        log_round(cfg, r)
        if cfg.run_id == bad.run_id:
            raise ValueError(f"no good at round {r}")

    store = RunStore(tmp_path / "runs")
    with pytest.raises(RunsFailed, match=rf"(?s)1 of 2 run\(s\) failed.*\({bad.run_id}\): ValueError: no good at round 1"):
        run_all([good, bad], store=store, progress=False, executor=RayExecutor(after_round=fail_bad_run))
    assert _rounds_trained(log, bad) == [1]                  # not retried
    assert store.load(good) is not None and store.load(bad) is None


@requires_ray
@requires_mnist
# a few short runs each at smoke: 4 for fedmix_streaming_fmnist, 5 for fedsiam_table8 (its 4 cells and the authors'
# siamese row beside them, fedsiam.AUTHORS_SIAMESE_TABLE8)
@pytest.mark.parametrize("notebook", ["fedmix_streaming_fmnist", "fedsiam_table8"])
def test_a_smoke_reproduction_through_ray_trains_the_local_executors_runs(local_ray, reference, notebook,
                                                                           tmp_path, monkeypatch):
    from fssl_core.job.plan import plan_job
    from fssl_core.job.reproduce import notebooks, reproduce
    monkeypatch.setenv("FSSL_RUNS", str(tmp_path / "runs"))     # a fresh store: every run is trained through Ray
    store = RunStore(tmp_path / "runs")
    configs = plan_job(notebooks(notebook, "smoke"), {"profile": "smoke", "device": "cpu"}, store).pending
    assert 1 <= len(configs) <= 5
    reproduce(profile="smoke", only=notebook, executor="ray")
    for cfg in configs:
        _assert_same_run(store, cfg, reference(cfg))


@requires_ray
@requires_mnist
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
def test_sigterm_stops_a_ray_job_and_its_local_ray(tmp_path):
    """ray.init's own SIGTERM handler would abort the driver; the job's handler cancels the tasks first."""
    from .test_plan import _processes_with
    marker = f"FSSL_TEST_MARKER={uuid.uuid4().hex}"
    script = textwrap.dedent(f"""
        from fssl_core.run_config import RunConfig
        from fssl_core.executors import run_all
        from fssl_core.store import RunStore
        configs = [RunConfig(**{{**{TINY!r}, "rounds": 1000, "seed": s}}) for s in (1, 2)]
        run_all(configs, store=RunStore({str(tmp_path)!r}), progress=False, executor="ray")
    """)
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    job = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while len(list(tmp_path.glob("*/metrics.jsonl"))) < 2 and time.time() < deadline:   # both tasks training
        time.sleep(0.5)
    assert len(_processes_with(marker)) >= 3, "expected the driver, Ray and its two workers"
    job.send_signal(signal.SIGTERM)
    _, stderr = job.communicate(timeout=60)
    time.sleep(1)
    assert _processes_with(marker) == [], "a Ray process outlived the job"
    assert "KeyboardInterrupt" in stderr and "SIGTERM received" not in stderr     # ours, not Ray's abort
    assert not list(tmp_path.glob("*/result.json"))
