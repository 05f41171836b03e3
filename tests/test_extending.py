"""Adding an algorithm is one file plus one registry line: the engine, the config and the store take
it without a change, its own setting included (a toy method, tests/toy_algorithm.py). Adding a partition is
the same: its function and declaration in one file and one registry line, its own parameter included (a toy
partition, tests/toy_partition.py); the suite's checks of every partition, its config and its Flower keys,
which read their cases from the registry, run on it as on the package's own."""
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from fssl_core import cli
from fssl_core.algorithms import ALGORITHMS
from fssl_core.config import ConfigError, setting
from fssl_core.data.partition import PARTITIONS, PartitionDeclaration, PartitionError, build_partition, table
from fssl_core.data.partition.declaration import EveryPartition
from fssl_core.integrations.flower_keys import app_defaults, run_config_of
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation

from . import test_config, test_flower_keys, test_partition
from .conftest import requires_mnist
from .test_cli import tiny_data  # noqa: F401  (a fixture: 40 samples of 4 classes in place of MNIST)
from .toy_algorithm import FedAvgSmoothed
from .toy_partition import EXACT_CLASSES, exact_classes_partition

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


# --- a partition ------------------------------------------------------------------------------------------

@pytest.fixture
def partition_registered(monkeypatch):
    monkeypatch.setitem(PARTITIONS, EXACT_CLASSES.name, EXACT_CLASSES)   # the one registry line


def test_an_unregistered_partition_and_its_parameter_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"^RunConfig.partition='exact_classes': must be one of iid, "):
        RunConfig(partition="exact_classes")
    with pytest.raises(ConfigError, match=r"^RunConfig has no field 'classes_each'"):
        RunConfig(classes_each=3)
    with pytest.raises(PartitionError, match=r"^build_partition: name='exact_classes' must be one of 'iid', "):
        build_partition("exact_classes", test_partition.SMALL, num_classes=10, num_clients=10, seed=0)


@pytest.mark.parametrize("check", test_partition.EVERY_PARTITIONS_CHECKS, ids=lambda check: check.__name__)
def test_every_partitions_checks_pass_on_a_registered_partition(partition_registered, check):
    check(name=EXACT_CLASSES.name)


@pytest.mark.parametrize("classes_each", [1, 3, 10])
def test_its_defining_property_every_client_holds_exactly_classes_each_classes(partition_registered, classes_each):
    p = build_partition("exact_classes", test_partition.SMALL, num_classes=10, num_clients=10, seed=0,
                        labeled_ratio=0.1, classes_each=classes_each)
    labels = test_partition.SMALL
    assert {len(test_partition.classes(labels, np.concatenate([c.labeled, c.unlabeled]))) for c in p.clients} \
        == {classes_each}
    # each class is held by classes_each clients: 60 / classes_each of each of its classes, 60 in all
    assert [c.labeled.size + c.unlabeled.size for c in p.clients] == [60] * 10


def test_its_parameter_is_a_field_with_its_rule_its_own_identity_and_an_app_key(partition_registered):
    # the suite's checks of every partition's config and Flower keys, on this one
    test_config.test_every_partition_with_its_example_is_a_run_that_reads_its_parameters_and_no_other("exact_classes")
    test_config.test_a_partition_parameter_outside_its_rule_is_one_line_naming_it_its_value_and_what_is_allowed(
        "classes_each")
    test_config.test_a_partition_parameter_given_to_a_partition_that_does_not_read_it_is_refused_naming_what_it_reads(
        "classes_each")
    test_flower_keys.test_every_partitions_parameters_are_app_keys_that_read_back_to_its_run("exact_classes")
    # and by hand: its rule, its own rule across fields, its identity, its key
    with pytest.raises(ConfigError, match=r"^RunConfig.classes_each=0: must be an integer within \[1, 1000\]$"):
        RunConfig(partition="exact_classes", classes_each=0)
    with pytest.raises(ConfigError, match=r"^RunConfig.classes_each=11, dataset='mnist', clients=100: must be within "
                                          r"\[1, 10\]"):
        RunConfig(partition="exact_classes", classes_each=11)
    with pytest.raises(ConfigError, match=r"^RunConfig.classes_each=3, partition='iid': partition 'iid' does not use "
                                          r"classes_each; leave it at its default 2"):
        RunConfig(partition="iid", classes_each=3)
    ours = RunConfig(partition="exact_classes", classes_each=3)
    assert len({ours.run_id, RunConfig(partition="exact_classes").run_id, RunConfig().run_id}) == 3
    assert RunConfig.from_strings({"partition": "exact_classes", "classes_each": "3"}) == ours
    assert app_defaults()["classes-each"] == 2
    assert run_config_of({**app_defaults(), "partition": "exact_classes", "classes-each": 3})[0] == ours
    assert "| exact_classes | client | exactly classes_each classes each" in table()


def test_registering_a_partition_leaves_every_other_runs_id_as_it_was(partition_registered, monkeypatch):
    registered = RunConfig(partition="noniid1", classes_per_client=3).run_id
    monkeypatch.delitem(PARTITIONS, "exact_classes")
    without = RunConfig(partition="noniid1", classes_per_client=3)
    assert without.run_id == registered and "classes_each" not in without.to_dict()
    assert "classes-each" not in app_defaults()


def test_a_registered_partition_splits_through_the_engine_and_the_command_line(partition_registered, tiny_data,
                                                                               capsys):
    pairs = ["partition=exact_classes", "classes_each=3", "clients=4", "clients_per_round=4", "labeled_ratio=0.2"]
    assert cli.main(["partition", *pairs]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "partition=exact_classes dataset=mnist clients=4 γ=0.2 classes_each=3 seed=1234"
    assert [row.count("-") for row in lines[3:]] == [1] * 4           # of the 4 classes, each client lacks one
    cfg = cli.partition_config(dict(pair.split("=") for pair in pairs))
    split = Federation.partition_of(cfg, tiny_data)
    assert len(split.clients) == 4 and split.server_labeled.size == 0


def test_a_declaration_whose_function_reads_other_parameters_is_refused_when_made():
    with pytest.raises(ValueError, match=r"exact_classes_partition takes labeled_ratio, classes_each, stream_parts; "
                                         r"its parameters declare labeled_ratio, stream_parts: they must be the same"):
        PartitionDeclaration("exact_classes", exact_classes_partition, labels_at="client", parameters=EveryPartition,
                             doc="", paper="", example={})


def test_a_parameter_two_partitions_declare_differently_is_refused(monkeypatch):
    @dataclass(frozen=True)
    class OtherRatio(EveryPartition):
        rich_labeled_ratio: float = setting(0.5, "[0, 1]", "another default for noniid3's parameter")

    def other(labels, *, num_classes, num_clients, seed, labeled_ratio, rich_labeled_ratio, stream_parts=1): ...

    monkeypatch.setitem(PARTITIONS, "other", PartitionDeclaration("other", other, labels_at="client",
                                                                  parameters=OtherRatio, doc="", paper="", example={}))
    with pytest.raises(RuntimeError, match=r"parameter rich_labeled_ratio is declared otherwise"):
        RunConfig()
