"""Adding an algorithm is one file plus one registry line: the engine, the config and the store take
it without a change, its own setting included (a toy method, tests/toy_algorithm.py)."""
import pytest
import torch

from fssl_core.algorithms import ALGORITHMS
from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation

from .conftest import requires_mnist
from .toy_algorithm import FedAvgSmoothed

SMALL = dict(dataset="mnist", partition="iid", labeled_ratio=0.1, clients=600, clients_per_round=2, rounds=1,
             local_epochs=1, batch_size=10, seed=3)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(ALGORITHMS, FedAvgSmoothed.name, FedAvgSmoothed)   # the one registry line


def test_an_unregistered_method_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"RunConfig.algorithm='fedavg_smoothed': must be one of"):
        RunConfig(algorithm="fedavg_smoothed")


def test_a_registered_method_has_its_own_identity(registered):
    ours, fedavg = RunConfig(algorithm="fedavg_smoothed", **SMALL), RunConfig(algorithm="fedavg", **SMALL)
    assert ours.run_id != fedavg.run_id
    assert RunConfig.from_dict(ours.to_dict()).run_id == ours.run_id
    with pytest.raises(ConfigError, match=r"algorithm='fedavg_smoothed', partition='server_iid'"):
        RunConfig(algorithm="fedavg_smoothed", partition="server_iid")      # labels_at, checked by the registry


def test_a_registered_methods_setting_is_a_field_with_its_rule_and_its_own_identity(registered):
    default = RunConfig(algorithm="fedavg_smoothed", **SMALL)
    assert default.label_smoothing == 0.1
    stronger = RunConfig(algorithm="fedavg_smoothed", label_smoothing=0.2, **SMALL)
    assert stronger.label_smoothing == 0.2 and stronger.run_id != default.run_id
    assert RunConfig.from_strings({"algorithm": "fedavg_smoothed", "label_smoothing": "0.2", **{
        k: str(v) for k, v in SMALL.items()}}).run_id == stronger.run_id
    assert RunConfig.from_dict(stronger.to_dict()) == stronger
    with pytest.raises(ConfigError, match=r"^RunConfig.label_smoothing=1.0: must be a finite number within \[0, 1\)$"):
        RunConfig(algorithm="fedavg_smoothed", label_smoothing=1.0)
    # FedAvg does not read it: a value for it is refused by name, naming the method that reads it, and a
    # shared dict holding it builds FedAvg's run without it
    with pytest.raises(ConfigError, match=r"^RunConfig.label_smoothing=0.2, algorithm='fedavg': fedavg does not read "
                                          r"label_smoothing \(read by fedavg_smoothed\)"):
        RunConfig(algorithm="fedavg", label_smoothing=0.2, **SMALL)
    shared = RunConfig.dropping_unread(algorithm="fedavg", label_smoothing=0.2, **SMALL)
    assert shared == RunConfig(algorithm="fedavg", **SMALL) and "label_smoothing" not in shared.fields_read()


def test_an_unregistered_methods_setting_is_no_field():
    with pytest.raises(ConfigError, match=r"^RunConfig has no field 'label_smoothing'"):
        RunConfig(label_smoothing=0.2)


@requires_mnist
@pytest.mark.parametrize("trainer", ["sequential", "cohort"])
def test_a_registered_method_trains_through_the_engine(registered, trainer):
    """Same initial model and batches as FedAvg, a different loss: the first round's mean training
    loss is FedAvg's plus what smoothing adds, and the global models differ."""
    results = {}
    for algorithm in ("fedavg_smoothed", "fedavg"):
        fed = Federation.build(RunConfig(algorithm=algorithm, trainer=trainer, **SMALL))
        state, metrics = fed.run_round(fed.initial_state(), 1)
        results[algorithm] = (state["model"], metrics)
    (smoothed, m_smoothed), (plain, m_plain) = results["fedavg_smoothed"], results["fedavg"]
    assert m_smoothed["train_loss"] > m_plain["train_loss"]          # smoothing's targets are never one-hot
    assert m_smoothed["accuracy"] > 10.0 * 1.5                        # it learns: above 1.5× chance after a round
    assert any(not torch.equal(smoothed[k], plain[k]) for k in plain)
