"""The Flower adapter: FedAvg and FedSiam-D run in Flower's simulation engine (Ray, one supernode per client)
compute what fssl's engine computes with the sequential trainer: the same per-round metrics (accuracy, losses,
bytes) and the same final weights, on CPU. Slow (Ray's start, about 20 s a run): the one Flower simulation
test."""
import pytest
import torch

from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore
from tests.conftest import requires_mnist

pytest.importorskip("flwr")
pytest.importorskip("ray")
from fssl_core.integrations.flower import pack, simulate, unpack  # noqa: E402
from fssl_core.engine.trainer import train

SMALL = dict(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=4, clients_per_round=2,
             local_epochs=1, rounds=2, batch_size=10, trainer="sequential")
# the engine runs on one thread and each Flower client process too: the same kernels, the same order
EXACT = dict(rtol=0, atol=0)


def test_payloads_cross_as_they_are():
    payload = {"model": {"w": torch.randn(3, 2), "n": torch.tensor(7, dtype=torch.int64)}, "extra": {},
               "q": torch.arange(4.0)}
    record, empty = pack(payload)
    back = unpack(record, empty, torch.device("cpu"))
    assert back.keys() == payload.keys() and back["extra"] == {}
    assert torch.equal(back["model"]["w"], payload["model"]["w"]) and back["model"]["n"].dtype == torch.int64
    with pytest.raises(TypeError, match="payload 'x': a float"):
        pack({"x": 1.0})


@requires_mnist
@pytest.mark.parametrize("algorithm", ["fedavg", "fedsiam_d"])
def test_a_flower_simulation_matches_the_engine_round_by_round(algorithm, tmp_path):
    cfg = RunConfig(algorithm=algorithm, **SMALL)
    store = RunStore(tmp_path)
    engine = train(cfg, store, progress=False)
    rows, state = simulate(cfg, progress=False)
    assert len(rows) == len(engine.metrics) == cfg.rounds
    for ours, theirs in zip(rows, engine.metrics):
        ours = {k: v for k, v in ours.items() if k != "seconds"}
        theirs = {k: v for k, v in theirs.items() if k != "seconds"}
        assert ours.keys() == theirs.keys()
        assert ours["accuracy"] == theirs["accuracy"] and ours["upload_bytes"] == theirs["upload_bytes"] > 0
        assert ours == theirs                  # every loss and statistic, to the last bit
    _same_state(state, store.final_state(cfg), "state")


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
        torch.testing.assert_close(ours, theirs, **EXACT, msg=path)
    else:
        assert ours == theirs, path
