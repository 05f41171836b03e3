import pytest

from fssl_core.config import ConfigError, RunConfig


def test_defaults_are_fedsiam_table2():
    cfg = RunConfig()
    assert (cfg.clients, cfg.clients_per_round, cfg.local_epochs, cfg.batch_size) == (100, 10, 5, 10)
    assert (cfg.lr, cfg.momentum, cfg.weight_decay, cfg.seed) == (0.01, 0.9, 1e-4, 1234)
    assert cfg.model == "cnn_mnist"   # 'auto' resolved from the dataset


@pytest.mark.parametrize("changes, message", [
    ({"labeled_ratio": 1.7}, "RunConfig.labeled_ratio=1.7: must be within [0.0, 1.0]"),
    ({"algorithm": "fedfoo"}, "RunConfig.algorithm='fedfoo': must be one of"),
    ({"rounds": "50"}, "RunConfig.rounds='50': must be of type int"),
    ({"clients": 5, "clients_per_round": 10}, "clients_per_round=10: must be at most clients=5"),
    ({"dataset": "imagenet"}, "RunConfig.dataset='imagenet': must be one of"),
])
def test_bad_values_name_the_field_the_value_and_what_is_allowed(changes, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        RunConfig(**changes)


def test_unknown_key_suggests_the_closest_field():
    with pytest.raises(ConfigError, match="no field 'label_ratio'.*did you mean 'labeled_ratio'"):
        RunConfig.from_dict({"label_ratio": 0.1})


def test_strings_from_the_command_line_are_converted_by_field_type():
    cfg = RunConfig.from_strings({"rounds": "3", "lr": "0.05", "partition": "noniid1"})
    assert (cfg.rounds, cfg.lr, cfg.partition) == (3, 0.05, "noniid1")
    with pytest.raises(ConfigError, match=r"RunConfig.rounds='three': expected int"):
        RunConfig.from_strings({"rounds": "three"})


def test_run_id_changes_with_results_fields_only():
    base = RunConfig()
    assert base.run_id == RunConfig().run_id
    assert base.run_id != base.replace(seed=1).run_id
    assert base.run_id != base.replace(lr=0.02).run_id
    # how often a run is checkpointed does not change what it computes
    assert base.run_id == base.replace(checkpoint_every=5).run_id
    # 'auto' and the model it resolves to are the same run
    assert base.run_id == base.replace(model="cnn_mnist").run_id


def test_run_id_leaves_out_fields_at_their_default():
    """A knob added later with a default must not change the identity of existing runs."""
    import json, hashlib
    from fssl_core import __version__
    cfg = RunConfig(seed=7, lr=0.05)
    blob = json.dumps({"lr": 0.05, "model": "cnn_mnist", "seed": 7, "fssl_core_version": __version__},
                      sort_keys=True, separators=(",", ":"))
    assert cfg.run_id == hashlib.sha256(blob.encode()).hexdigest()[:16]
