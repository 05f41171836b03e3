"""The Flower app's keys (Flower's names, kebab-case for the rest) and how `python -m fssl_core flower` reads a
Flower run's end into an exit status. Neither needs Flower installed."""
import pytest

from fssl_core.config import ConfigError
from fssl_core.data.partition import PARTITIONS, partition_parameters
from fssl_core.integrations.flower_keys import app_defaults, app_key, app_overrides, check_keys, run_config_of
from fssl_core.integrations.flower_submit import outcome
from fssl_core.run_config import RunConfig

from .test_config import example_config


def test_flowers_names_and_kebab_case_map_onto_runconfig_fields_and_back():
    assert [app_key(f) for f in ("rounds", "clients_per_round", "local_epochs", "lr", "batch_size", "labeled_ratio")] \
        == ["num-server-rounds", "fraction-train", "local-epochs", "lr", "batch-size", "labeled-ratio"]
    cfg, options = run_config_of({**app_defaults(), "num-server-rounds": 7, "fraction-train": 0.25, "clients": 8,
                                  "labeled-ratio": 0.2, "local-epochs": 2, "runs": "/tmp/s"})
    assert (cfg.rounds, cfg.clients, cfg.clients_per_round, cfg.labeled_ratio, cfg.local_epochs) == (7, 8, 2, 0.2, 2)
    assert options["runs"] == "/tmp/s" and options["progress"] is True
    assert run_config_of(app_defaults())[0] == RunConfig()
    # a CLI config written in the app's keys reads back to itself (the expected results' runs go this way)
    cli = RunConfig(algorithm="fedsiam_d", clients=10, clients_per_round=3, rounds=4, labeled_ratio=0.05)
    parse = pytest.importorskip("flwr.common.config").parse_config_args      # Flower's own reading of the text
    assert run_config_of({**app_defaults(), **parse([app_overrides(cli)])})[0] == cli


@pytest.mark.parametrize("partition", list(PARTITIONS))
def test_every_partitions_parameters_are_app_keys_that_read_back_to_its_run(partition):
    """The app's keys are derived from the registries: a partition's parameters are keys at their defaults, and
    its example, typed in the app's keys, is the run RunConfig builds from the same fields."""
    defaults, parameters = app_defaults(), partition_parameters()
    for name in PARTITIONS[partition].reads:
        assert defaults[app_key(name)] == parameters[name].default, name
    fields = example_config(partition)
    typed = {**defaults, **{app_key(name): value for name, value in fields.items()}}
    assert run_config_of(typed)[0] == RunConfig(**fields)


def test_a_share_of_clients_that_is_no_whole_number_is_refused_with_one_that_is():
    with pytest.raises(ConfigError, match=r"^Flower run config: fraction-train=0.15 with clients=10: must be within "
                                          r"\(0, 1\] and a whole number of clients a round \(fraction-train × clients "
                                          r"= 1.5\); e.g. fraction-train=0.2$"):
        run_config_of({**app_defaults(), "fraction-train": 0.15, "clients": 10})


def test_unknown_keys_are_named_each_with_the_key_to_use():
    with pytest.raises(ConfigError) as refused:
        check_keys(["rounds", "labeled_ratio", "fraction-fit", "seeed", "num-server-rounds"])
    assert str(refused.value) == (
        "Flower run config: rounds: not a key of this app; it is 'num-server-rounds' here (Flower's name for the "
        "rounds); labeled_ratio: not a key of this app; it is 'labeled-ratio' here (Flower's keys are kebab-case); "
        "fraction-fit: not a key of this app; it is 'fraction-train' here; seeed: not a key of this app; did you "
        "mean 'seed'?")


def test_runconfigs_refusal_speaks_the_apps_keys():
    with pytest.raises(ConfigError, match=r"^Flower run config: num-server-rounds=-1: must be an integer"):
        run_config_of({**app_defaults(), "num-server-rounds": -1})


@pytest.mark.parametrize("status, details, expected", [
    ("finished:completed", "", (0, "Flower run 5: finished:completed")),
    ("finished:failed", "Simulation failed with exception: fssl refused: Flower run config: seed=-2: must be ...",
     (2, "Flower run config: seed=-2: must be ...")),
    ("finished:failed", "Simulation failed with exception: fssl not a result: fedavg mnist ...: at-chance, accuracy 9%",
     (3, "fedavg mnist ...: at-chance, accuracy 9%")),
    ("finished:failed", "Simulation failed with exception: CUDA out of memory\nmore",
     (1, "Flower run 5: finished:failed: Simulation failed with exception: CUDA out of memory")),
    ("finished:stopped", "", (130, "Flower run 5: finished:stopped: the record keeps every round it finished; the "
                                   "same command resumes it")),
])
def test_a_flower_runs_end_becomes_runs_exit_status(status, details, expected):
    assert outcome({"run-id": "5", "status": status, "status-details": details}) == expected
