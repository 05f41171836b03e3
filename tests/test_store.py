"""The engine and run store: FedAvg equals centralized SGD in its degenerate case, runs resume
exactly, divergence is a status, finished runs are read back."""
import json

import pytest
import torch
import torch.nn.functional as F

from fssl_core.learning.batches import batches
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

from .conftest import requires_mnist

pytestmark = requires_mnist

TINY = dict(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
            local_epochs=1, rounds=3, batch_size=10)


def _without_timing(metrics):
    return [{k: v for k, v in m.items() if k != "seconds"} for m in metrics]


def test_fedavg_with_one_client_is_centralized_sgd_on_its_data():
    cfg = RunConfig(**{**TINY, "clients": 1, "clients_per_round": 1, "labeled_ratio": 0.001, "rounds": 1})
    fed = Federation.build(cfg)
    state, _ = fed.run_round(fed.initial_state(), 1)

    model = fed.ctx.model
    model.load_state_dict(fed.initial_state()["model"])
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    view = fed.client_view(0, 1)
    for batch in batches(fed.images, view, fed.algorithm.plan(view, 1), fed.generator(1, 0)):
        opt.zero_grad()
        F.cross_entropy(model(batch.labeled.plain()), batch.labeled.y).backward()
        opt.step()
    for name, p in model.named_parameters():
        torch.testing.assert_close(state["model"][name], p.detach(), rtol=1e-5, atol=1e-6)


def test_interrupted_run_resumes_to_the_same_metrics(tmp_path):
    cfg = RunConfig(**TINY)
    uninterrupted = train(cfg, RunStore(tmp_path / "a"), progress=False)

    class Killed(Exception):
        pass

    def crash_after_round_2(r):
        if r == 2:
            raise Killed

    store = RunStore(tmp_path / "b")
    with pytest.raises(Killed):
        train(cfg, store, progress=False, after_round=crash_after_round_2)
    assert store.load(cfg) is None                      # not finished: no result.json
    resumed = train(cfg, store, progress=False)
    assert _without_timing(resumed.metrics) == _without_timing(uninterrupted.metrics)
    assert resumed.summary["accuracy"] == uninterrupted.summary["accuracy"]


def test_finished_run_is_read_back_not_retrained(tmp_path):
    cfg = RunConfig(**{**TINY, "rounds": 1})
    store = RunStore(tmp_path)
    first = train(cfg, store, progress=False)

    def must_not_train(r):
        raise AssertionError("a finished run was trained again")

    again = train(cfg, store, progress=False, after_round=must_not_train)
    assert again.summary == first.summary
    files = {p.name for p in store.dir(cfg).iterdir()}
    assert {"config.json", "env.json", "metrics.jsonl", "checkpoint.pt", "result.json"} <= files
    assert json.loads((store.dir(cfg) / "config.json").read_text()) == cfg.fields_read()
    # the data it was trained on: the content digest of the verified files (not in the run id, which the
    # committed runs keep; a copy that is not the official files is refused at load, test_datasets.py)
    from fssl_core.data.datasets import data_digest
    env = json.loads((store.dir(cfg) / "env.json").read_text())
    assert env["data"] == {"mnist": data_digest("mnist")} and len(env["data"]["mnist"]) == 64


def test_nan_loss_ends_the_run_as_diverged_with_its_round(tmp_path):
    cfg = RunConfig(**{**TINY, "lr": 1e12})
    result = train(cfg, RunStore(tmp_path), progress=False)
    assert result.status == "diverged"
    assert result.summary["diverged"]["round"] == len(result.metrics) + 1
    assert result.summary["accuracy"] is None


def test_bytes_are_counted_from_the_tensors_sent():
    cfg = RunConfig(**{**TINY, "rounds": 1})
    fed = Federation.build(cfg)
    _, metrics = fed.run_round(fed.initial_state(), 1)
    model_bytes = sum(t.numel() * t.element_size() for t in fed.ctx.model.state_dict().values())
    assert model_bytes == 21_840 * 4                    # the MNIST CNN has no buffers
    assert metrics["download_bytes"] == metrics["upload_bytes"] == cfg.clients_per_round * model_bytes


def test_parallel_executor_gives_the_results_of_the_sequential_one(tmp_path):
    from fssl_core.executors import run_all
    configs = [RunConfig(**{**TINY, "rounds": 2, "seed": s}) for s in (1, 2)]
    sequential = run_all(configs, store=RunStore(tmp_path / "seq"), progress=False, workers=1)
    parallel = run_all(configs, store=RunStore(tmp_path / "par"), progress=False, workers=2)
    for a, b in zip(sequential, parallel):
        assert a.config == b.config
        assert _without_timing(a.metrics) == _without_timing(b.metrics)


def test_finished_runs_are_found_by_config_fields(tmp_path):
    store = RunStore(tmp_path)
    train(RunConfig(**{**TINY, "rounds": 1, "seed": 7}), store, progress=False)
    train(RunConfig(**{**TINY, "rounds": 1, "seed": 8, "algorithm": "fedavg_plus"}), store, progress=False)
    assert [r.config.seed for r in store.finished(algorithm="fedavg_plus")] == [8]
    assert len(store.finished(dataset="mnist")) == 2 and store.finished(dataset="svhn") == []


def test_the_test_loss_is_the_mean_cross_entropy_over_the_test_set():
    cfg = RunConfig(**{**TINY, "rounds": 1})
    fed = Federation.build(cfg)
    state, metrics = fed.run_round(fed.initial_state(), 1)
    tensors = fed.algorithm.eval_tensors(state)
    x, y = fed.data.test_x, fed.data.test_y
    with torch.no_grad():
        logits = torch.cat([fed.ctx.apply(tensors, fed.data.normalize(x[i:i + 1000]), train=False)
                            for i in range(0, len(y), 1000)])
    assert metrics["test_loss"] == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)
    assert metrics["accuracy"] == pytest.approx(100.0 * (logits.argmax(1) == y).float().mean().item())
