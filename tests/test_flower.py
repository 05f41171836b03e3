"""The Flower app: every algorithm, run in Flower's simulation engine (Ray, one supernode per client), computes
what fssl's engine computes with the sequential trainer (the same round metrics, to the last bit, and the same
final state) and writes the same run record; `flwr run flower-app` runs it as a Flower user would. Slow (Ray's
start, about 20 s, once per simulation): two simulations and one `flwr run`."""
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

from fssl_core.algorithms import ALGORITHMS
from fssl_core.config import ConfigError
from fssl_core.engine.trainer import train
from fssl_core.run_config import RunConfig
from fssl_core.store import ENV, RunStore
from tests.conftest import requires_mnist

pytest.importorskip("flwr")
pytest.importorskip("ray")
from flwr.app import Context  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from fssl_core.integrations import flower  # noqa: E402
from fssl_core.integrations.flower_expected import flwr_run, superlinks  # noqa: E402
from fssl_core.integrations.flower_keys import app_config_section, app_defaults  # noqa: E402

NODES = 2        # Flower's default federation: fewer nodes than clients, so a node trains several
ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "flower-app"
SMALL = dict(dataset="mnist", clients=4, clients_per_round=2, local_epochs=1, batch_size=10, resplit_train=600,
             resplit_test=100, seed=3, trainer="sequential")
AT = {"client": dict(partition="noniid1", labeled_ratio=0.2),
      "server": dict(partition="server_dirichlet", server_labeled=40, dirichlet_alpha=1.0, server_balanced=True)}
# settings a one-round run only reaches with them on (as tests/test_algorithm_reads.py sets them)
EXTRA = {"fedanchor": dict(projection_dim=16, pretrain_epochs=1), "semifl": dict(pretrain_epochs=1),
         "supervised_fl": dict(pretrain_epochs=1), "fedsem": dict(fedsem_phase1_fraction=0.5),
         "fedfixmatch": dict(pretrain_epochs=1)}


# rounds that reach each payload an algorithm sends: FedMatch's helpers (a list) go out every helper_interval rounds
ROUNDS = {"fedmatch": ALGORITHMS["fedmatch"].helper_interval}


def _config(algorithm: str, **changes) -> RunConfig:
    at = ALGORITHMS[algorithm].labels_at[-1]
    return RunConfig(**{**SMALL, **AT[at], "algorithm": algorithm, "rounds": ROUNDS.get(algorithm, 1),
                        **EXTRA.get(algorithm, {}), **changes})


def test_payloads_cross_as_they_are():
    payload = {"model": {"w": torch.randn(3, 2), "n": torch.tensor(7, dtype=torch.int64)}, "extra": {},
               "q": torch.arange(4.0), "report": {"selected": 0.25, "count": 3, "on": True},
               "helpers": [{"w": torch.ones(2)}, {"w": torch.zeros(2)}], "none": [], "pair": (1.5, torch.ones(1)),
               "nested": [[torch.ones(1)], []]}
    tensors, numbers = flower.pack(payload)
    back = flower.unpack(tensors, numbers, torch.device("cpu"))
    assert back.keys() == payload.keys() and back["extra"] == {}
    assert torch.equal(back["model"]["w"], payload["model"]["w"]) and back["model"]["n"].dtype == torch.int64
    assert back["report"] == {"selected": 0.25, "count": 3, "on": True}
    assert type(back["report"]["count"]) is int and type(back["report"]["on"]) is bool
    assert isinstance(back["helpers"], list) and len(back["helpers"]) == 2 and back["none"] == []
    assert torch.equal(back["helpers"][1]["w"], torch.zeros(2)) and type(back["pair"]) is tuple
    assert back["pair"][0] == 1.5 and len(back["nested"]) == 2 and back["nested"][1] == []
    with pytest.raises(TypeError, match="payload 'x': a str"):
        flower.pack({"x": "text"})
    with pytest.raises(ValueError, match="payload key 'a/b'"):
        flower.pack({"a/b": torch.zeros(1)})


def test_the_app_config_holds_every_run_config_field_at_its_default_under_flowers_keys():
    app = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    config = app["config"]
    assert config == app_defaults(), "python -m fssl_core.integrations.flower_keys rewrites the app's config"
    assert (APP / "pyproject.toml").read_text().endswith(app_config_section())
    assert config["num-server-rounds"] == RunConfig().rounds and config["labeled-ratio"] == RunConfig().labeled_ratio
    assert config["fraction-train"] * config["clients"] == RunConfig().clients_per_round
    assert app["components"] == {"serverapp": "fssl_core.integrations.flower:server",
                                 "clientapp": "fssl_core.integrations.flower:client"}
    cfg, store, options = flower.app_config({**config, "dataset": "cifar10", "runs": "/tmp/x"})
    assert cfg.model == RunConfig(dataset="cifar10").model != config["model"]    # defaults follow, as in RunConfig
    assert str(store.root) == "/tmp/x" and options["progress"] is True


def test_the_app_trains_what_the_cli_trains_by_default_wherever_a_flower_client_can():
    """'auto' stays 'auto' (the CLI's run id and record) where the engine trains clients one by one; where it
    would train a cohort, the run is the sequential trainer's, the id `run ... trainer=sequential` has."""
    alone = RunConfig(dataset="cifar10", model="cnn_cifar")                  # auto: sequential on CPU
    assert flower.flower_trainer(alone) == alone and alone.trainer == "auto"
    together = RunConfig()                                                   # auto: a cohort on MNIST's CNN
    assert flower.flower_trainer(together).run_id == RunConfig(trainer="sequential").run_id != together.run_id
    with pytest.raises(ConfigError, match="trainer='cohort': a Flower client trains alone"):
        flower.flower_trainer(RunConfig(trainer="cohort"))


def _replies(nodes: dict[int, tuple[int, str]]) -> list:
    """The nodes' replies to the server's query (node id -> the partition it reports, the code digest it runs)."""
    from types import SimpleNamespace
    return [SimpleNamespace(has_error=lambda: False, metadata=SimpleNamespace(src_node_id=node),
                            content={"config": {"partition": partition, "code": code}})
            for node, (partition, code) in nodes.items()]


def test_clients_go_round_robin_onto_the_nodes_in_partition_order_and_a_node_with_other_code_is_refused():
    code = flower.code_digest()
    assert flower.placement(_replies({907: (1, code), 12: (0, code)}), 5) == {0: 12, 1: 907, 2: 12, 3: 907, 4: 12}
    assert flower.placement(_replies({907: (-1, code), 12: (-1, code)}), 3) == {0: 12, 1: 907, 2: 12}  # by node id
    with pytest.raises(ConfigError, match=r"nodes 907 \(0123456789ab\) run another fssl_core than the server's"):
        flower.placement(_replies({907: (1, "0123456789abcdef"), 12: (0, code)}), 5)


def test_a_superlink_running_another_checkouts_fssl_core_is_refused_naming_what_to_stop():
    from fssl_core import __version__
    flower.refuse_other_code("")                                   # flwr run by hand: nothing to compare
    flower.refuse_other_code(f"{__version__}:{flower.code_digest()}")
    with pytest.raises(ConfigError, match=r"^fssl-code=0.0.9:abc: this SuperLink runs another fssl_core .* stop that "
                                          r"SuperLink \(pkill -f flower-superlink\) and submit again"):
        flower.refuse_other_code("0.0.9:abc")


@requires_mnist
def test_a_run_the_engine_trains_as_a_cohort_is_refused_from_python():
    with pytest.raises(ConfigError, match="trainer='auto'.*as one cohort.*use trainer='sequential'"):
        flower.refuse_cohort(cfg := _config("fedavg", trainer="auto"), flower.federation(cfg))


def _simulate(configs: list[RunConfig], store: RunStore, tracker=None) -> dict:
    """Run `configs` one after another in one Flower simulation on Flower's default 2 supernodes (2 clients a
    node and more), recorded in `store`; Flower's simulation from Python (run_simulation, deprecated for users:
    they `flwr run`)."""
    from flwr.simulation import run_simulation
    app, results = ServerApp(), {}

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        for cfg in configs:
            results[cfg.run_id] = flower.run_federated(grid, cfg, store, progress=False, tracker=tracker)

    run_simulation(server_app=app, client_app=flower.client, num_supernodes=NODES,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    assert set(results) == {c.run_id for c in configs}, "the simulation ended early (Flower's log above says why)"
    return results


@requires_mnist
def test_every_algorithm_in_flower_computes_what_the_engine_computes(tmp_path):
    configs = [_config(name) for name in ALGORITHMS]
    ours_store, engine_store = RunStore(tmp_path / "flower"), RunStore(tmp_path / "engine")
    ours, uploads = _simulate(configs, ours_store), {}
    for cfg in configs:
        theirs = train(cfg, engine_store, progress=False)
        mine = ours[cfg.run_id]
        assert mine.status == theirs.status, cfg.algorithm
        assert _timeless(mine.metrics) == _timeless(theirs.metrics), cfg.algorithm
        assert _summary(mine.summary) == _summary(theirs.summary), cfg.algorithm      # result.json
        assert "accuracy" in mine.metrics[-1], cfg.algorithm
        uploads[cfg.algorithm] = mine.metrics[-1]["upload_bytes"]
        _same_state(ours_store.final_state(cfg), engine_store.final_state(cfg), cfg.algorithm)
        assert json.loads((ours_store.dir(cfg) / ENV).read_text())["executor"] == "flower"
        assert json.loads((engine_store.dir(cfg) / ENV).read_text())["executor"] == "engine"
        # the record is the engine's: read back through the store, the engine trains nothing more
        assert _timeless(train(cfg, ours_store, progress=False).metrics) == _timeless(theirs.metrics)
    # models crossed: all but the server-only baseline, and SemiFL, whose clients here select no pseudo-label
    # after one pre-training epoch and so send their report only (semifl.py's upload), in Python numbers
    assert [name for name, sent in uploads.items() if sent == 0] == ["supervised_server", "semifl"]
    assert ours[_config("semifl").run_id].metrics[-1]["selected"] == 0


@requires_mnist
def test_a_flower_run_resumes_from_its_checkpoint_and_is_tracked_as_the_engine_does(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    from fssl_core.integrations.mlflow_track import MlflowTracker
    cfg = _config("fedsiam_d", rounds=2)
    store = RunStore(tmp_path / "flower")
    with store.claim(cfg) as recorder:       # round 1 trained and recorded, then the run stops
        fed = flower.federation(cfg)
        state = recorder.start(fed.device, fed.initial_state, fed.data.digest)
        state, row = fed.run_round(state, 1)
        recorder.record_round(1, state, row)
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'm.db'}", experiment="flower")
    resumed = _simulate([cfg], store, tracker)[cfg.run_id]
    whole = train(cfg, RunStore(tmp_path / "engine"), progress=False)
    assert _timeless(resumed.metrics) == _timeless(whole.metrics) and len(resumed.metrics) == 2
    [run] = tracker.client.search_runs([tracker.experiment_id], run_view_type=mlflow.entities.ViewType.ALL)
    assert run.info.status == "FINISHED" and run.data.tags["fssl.identity_hash"] == cfg.identity_hash
    history = tracker.client.get_metric_history(run.info.run_id, "accuracy")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == \
        [(row["round"], row["accuracy"]) for row in whole.metrics]          # both rounds, once each
    assert run.data.metrics["best_accuracy"] == resumed.summary["best_accuracy"]


@requires_mnist
def test_flwr_run_trains_the_app_into_the_store_and_exits_as_run_does(tmp_path):
    """As a Flower user runs it: `python -m fssl_core flower flower-app --run-config "..."` (flwr run, then a wait
    for the run's end) on Flower's default federation, a local SuperLink that Flower starts (flower_expected.
    flwr_run: in a Flower home of its own, stopped after). The run is the engine's sequential run; one round
    from too few labels ends at chance, recorded, and the command exits 3 with its line."""
    if shutil.which("flwr", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("no flwr command beside this Python")
    if superlinks():
        pytest.skip("a local Flower SuperLink runs already (its port is the one this test would use)")
    cfg = _config("fedavg", rounds=3, trainer="auto", partition="iid", labeled_ratio=0.5, local_epochs=2)
    _, output, status = flwr_run(cfg, tmp_path / "runs")
    assert status == 0 and "ServerApp-side Evaluate Metrics" in output and "accuracy" in output
    assert "4 clients on 2 nodes" in output
    assert superlinks() == [], "the SuperLink flwr run started outlived it"
    ours = RunStore(tmp_path / "runs").load(flower.flower_trainer(cfg))
    theirs = train(cfg.replace(trainer="sequential"), RunStore(tmp_path / "engine"), progress=False)
    assert _timeless(ours.metrics) == _timeless(theirs.metrics)
    chance = _config("fedavg", rounds=1, labeled_ratio=0.01, trainer="auto")
    _, output, status = flwr_run(chance, tmp_path / "runs", check=False)
    assert status == 3 and output.splitlines()[-1].startswith("error: fedavg mnist") and "at-chance" in output
    assert RunStore(tmp_path / "runs").load(flower.flower_trainer(chance)).status == "at-chance"


def test_a_refused_flower_config_exits_2_with_its_one_line_before_anything_is_submitted():
    for overrides, line in [("num-server-rounds=-1", "error: Flower run config: num-server-rounds=-1: must be an "
                                                     "integer within [1, 1000000]"),
                            ("rounds=3", "error: Flower run config: rounds: not a key of this app; it is "
                                         "'num-server-rounds' here (Flower's name for the rounds)")]:
        done = subprocess.run([sys.executable, "-m", "fssl_core", "flower", str(APP), "--run-config", overrides],
                              capture_output=True, text=True, env={**os.environ, "PATH": ""})   # no flwr reachable
        assert (done.returncode, done.stderr.strip()) == (2, line)


def _summary(summary: dict) -> dict:
    """result.json less what differs by where and when it ran: times, the directory, and the digests of files
    that hold times or the executor (metrics.jsonl's seconds, the checkpoint's rows, env.json's `executor`)."""
    varying = {"seconds", "seconds_per_round", "run_dir", "metrics_digest", "checkpoint_sha256", "digest", "env_digest"}
    return {k: v for k, v in summary.items() if k not in varying}


def _timeless(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def _same_state(ours, theirs, path):
    assert type(ours) is type(theirs), path
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), path
        for key in ours:
            _same_state(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(ours, (list, tuple)):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same_state(a, b, f"{path}[{i}]")
    elif isinstance(ours, torch.Tensor):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, msg=path)
    else:
        assert ours == theirs, path
