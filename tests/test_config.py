import json
import math
import re

import pytest
from hypothesis import given, settings, strategies as st

from fssl_core.algorithms import ALGORITHMS
from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig, field_intervals, field_rules, field_types
from fssl_core.data.datasets import data_root
from fssl_core.data.partition import PARTITIONS, ignored_parameters, partition_parameters


def test_defaults_are_fedsiam_table2():
    cfg = RunConfig()
    assert (cfg.clients, cfg.clients_per_round, cfg.local_epochs, cfg.batch_size) == (100, 10, 5, 10)
    assert (cfg.lr, cfg.momentum, cfg.weight_decay, cfg.seed) == (0.01, 0.9, 1e-4, 1234)
    assert cfg.model == "cnn_mnist"   # 'auto' resolved from the dataset


@pytest.mark.parametrize("changes, message", [
    ({"labeled_ratio": 1.7}, "RunConfig.labeled_ratio=1.7: must be a finite number within (0, 1)"),
    ({"algorithm": "fedfoo"}, "RunConfig.algorithm='fedfoo': must be one of"),
    ({"rounds": "50"}, "RunConfig.rounds='50': must be of type int"),
    ({"clients": 5, "clients_per_round": 10}, "clients_per_round=10: must be at most clients=5"),
    ({"dataset": "imagenet"}, "RunConfig.dataset='imagenet': must be one of"),
])
def test_bad_values_name_the_field_the_value_and_what_is_allowed(changes, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        RunConfig(**changes)


def test_unknown_key_suggests_the_closest_field():
    with pytest.raises(ConfigError, match="no field 'label_ratio'.*did you mean 'labeled_ratio'"):
        RunConfig.from_dict({"label_ratio": 0.1})


def test_strings_from_the_command_line_are_converted_by_field_type():
    cfg = RunConfig.from_strings({"rounds": "3", "lr": "0.05", "partition": "noniid1"})
    assert (cfg.rounds, cfg.lr, cfg.partition) == (3, 0.05, "noniid1")
    with pytest.raises(ConfigError, match=r"RunConfig.rounds='three': expected int"):
        RunConfig.from_strings({"rounds": "three"})
    assert RunConfig.from_strings({"lr": "1e-4", "momentum": ".5", "seed": "+7"}).replace(seed=7).lr == 1e-4


INT_FIELDS = [name for name, kind in field_types().items() if kind is int]


# Python's int() and float() take '1_0' (10) and other scripts' digits ('٣' is 3, '٠.١' is 0.1)
@pytest.mark.parametrize("text", ["1_0", "٣", "٠.١", " 3", "0x10", "1e1_0"])
def test_numbers_from_the_command_line_are_ascii_digits_only(text):
    for name, kind in [*((n, "int") for n in INT_FIELDS), *((n, "float") for n in FLOAT_FIELDS)]:
        with pytest.raises(ConfigError) as err:
            RunConfig.from_strings({name: text})
        example = "e.g. 10" if kind == "int" else "e.g. 0.01 or 1e-4"
        assert str(err.value) == f"RunConfig.{name}={text!r}: expected {kind}, written in ASCII digits ({example})"


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
    from fssl_core.run_config import ENGINE_REVISION
    cfg = RunConfig(seed=7, lr=0.05)
    blob = json.dumps({"lr": 0.05, "model": "cnn_mnist", "seed": 7, "revision": [ENGINE_REVISION, 1]},
                      sort_keys=True, separators=(",", ":"))
    assert cfg.run_id == hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_a_revision_bump_gives_new_ids_to_the_runs_it_changes_only(monkeypatch):
    """A change that alters what an algorithm computes bumps its revision: its stored runs are never
    read back as the new computation; other algorithms' runs keep their ids."""
    from fssl_core import run_config
    from fssl_core.algorithms import ALGORITHMS
    fedmatch, fedavg = RunConfig(algorithm="fedmatch", momentum=0.0), RunConfig(algorithm="fedavg")
    before = fedmatch.run_id, fedavg.run_id
    monkeypatch.setattr(ALGORITHMS["fedmatch"], "revision", 2)
    assert fedmatch.run_id != before[0] and fedavg.run_id == before[1]
    monkeypatch.setattr(run_config, "ENGINE_REVISION", run_config.ENGINE_REVISION + 1)
    assert fedavg.run_id != before[1]


# --- single fields: finite numbers, intervals open or closed as the field means --------------------------

FLOAT_FIELDS = [name for name, kind in field_types().items() if kind is float]


@pytest.mark.parametrize("name", FLOAT_FIELDS)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_every_float_field_refuses_nan_and_infinities_naming_field_value_and_interval(name, value):
    with pytest.raises(ConfigError, match=rf"^RunConfig\.{name}={value!r}: must be a finite number within [\[(]"):
        RunConfig(**{name: value})


@pytest.mark.parametrize("changes, message", [
    ({"tau_mu": math.nan}, "RunConfig.tau_mu=nan: must be a finite number within [0, 1]"),
    ({"labeled_ratio": 0.0}, "RunConfig.labeled_ratio=0.0: must be a finite number within (0, 1)"),
    ({"labeled_ratio": 1}, "RunConfig.labeled_ratio=1.0: must be a finite number within (0, 1)"),
    ({"lr": 0.0}, "RunConfig.lr=0.0: must be a finite number within [1e-7, 3.4e38]"),
    ({"pretrain_lr": 0.0}, "RunConfig.pretrain_lr=0.0: must be a finite number within (0, 3.4e38]"),
    ({"momentum": 1.0}, "RunConfig.momentum=1.0: must be a finite number within [0, 1)"),
    ({"labeled_repeats": 0}, "RunConfig.labeled_repeats=0: must be an integer within [1, 100]"),
    ({"local_epochs": 0}, "RunConfig.local_epochs=0: must be an integer within [1, 10000]"),
    ({"clients": 10**20}, "RunConfig.clients=100000000000000000000: must be an integer within [1, 1000000]"),
    ({"seed": 2**63}, "RunConfig.seed=9223372036854775808: must be an integer within [0, 9223372036854775807]"),
    ({"weight_decay": 10**400}, "RunConfig.weight_decay=1000000000"),     # an int beyond any float: shortened
    ({"weight_decay": 10**5000}, "RunConfig.weight_decay=<an int of 16610 bits>: must be a finite number within [0, 3.4e38]"),
    # beyond float32 the trainer once raised "value cannot be converted to type float without overflow"
    ({"lr": 1e39}, "RunConfig.lr=1e+39: must be a finite number within [1e-7, 3.4e38]"),
    ({"weight_decay": 3.5e38}, "RunConfig.weight_decay=3.5e+38: must be a finite number within [0, 3.4e38]"),
    ({"fedmatch_lambda_l2": 1e300}, "RunConfig.fedmatch_lambda_l2=1e+300: must be a finite number within [0, 3.4e38]"),
    ({"dirichlet_alpha": 10**39}, "RunConfig.dirichlet_alpha=1e+39: must be a finite number within [1e-6, 3.4e38]"),
    ({"rounds": True}, "RunConfig.rounds=True: must be of type int"),
    ({"algorithm": ""}, "RunConfig.algorithm='': must be one of fedavg, "),
])
def test_single_field_bounds(changes, message):
    with pytest.raises(ConfigError) as err:
        RunConfig(**changes)
    assert str(err.value).startswith(message)


def test_every_float_field_holds_a_float32():
    """The trainer computes in float32: no float field accepts what float32 cannot hold."""
    import numpy as np
    for name in FLOAT_FIELDS:
        interval = field_intervals()[name]
        assert interval.high <= float(np.finfo(np.float32).max) and interval.low >= -float(np.finfo(np.float32).max)


def test_the_bounds_themselves_are_allowed_where_closed():
    RunConfig(lr=3.4e38, weight_decay=3.4e38)
    RunConfig(algorithm="fedsiam_d", momentum=0.0, weight_decay=0.0, ema_decay=1.0, tau_mu=0.0,
              local_epochs=1, clients=1, clients_per_round=1, seed=2**63 - 1)
    RunConfig(algorithm="fedfixmatch", pseudo_label_threshold=1.0)
    # (0, 1) is open, yet γ = 1e-9 labels no sample of any MNIST client: a run that could only end at chance
    with pytest.raises(ConfigError, match="rounds to no labeled sample"):
        RunConfig(labeled_ratio=1e-9)


def test_strings_from_the_command_line_get_the_same_checks():
    with pytest.raises(ConfigError, match=r"^RunConfig\.ema_decay=nan: must be a finite number within \[0, 1\]"):
        RunConfig.from_strings({"ema_decay": "nan"})
    with pytest.raises(ConfigError, match=r"^RunConfig\.clients=100000000000000000000: must be an integer"):
        RunConfig.from_strings({"clients": "100000000000000000000"})
    with pytest.raises(ConfigError, match=r"^RunConfig\.lr='1e999': must be a finite number|^RunConfig\.lr=inf"):
        RunConfig.from_strings({"lr": "1e999"})


# --- cross-field rules: one hand-picked bad case each ------------------------------------------------------

SERVER = dict(partition="server_iid", server_labeled=1000, server_balanced=True)


@pytest.mark.parametrize("changes, message", [
    # partition × algorithm (Algorithm.labels_at against each partition's declared labels_at)
    (dict(algorithm="fedavg", partition="server_iid"),
     "RunConfig.algorithm='fedavg', partition='server_iid': fedavg learns from labels at the clients, and partition "
     "'server_iid' puts them at the server; use partition=iid or noniid1 or noniid2 or noniid3 or client_dirichlet "
     "or flwr_datasets, or an algorithm for labels at the server: fedsiam_d, "),
    (dict(algorithm="fedmix", partition="noniid1"),
     "RunConfig.algorithm='fedmix', partition='noniid1': fedmix learns from labels at the server, and partition "
     "'noniid1' puts them at the clients; use partition=server_iid or "),
    (dict(algorithm="semifl", partition="iid"), "RunConfig.algorithm='semifl', partition='iid': semifl learns"),
    # model × dataset
    (dict(model="cnn_mnist", dataset="cifar10"),
     "RunConfig.model='cnn_mnist', dataset='cifar10': cnn_mnist takes 28×28 images and cifar10's are 32×32; "
     "use one of cnn_cifar, resnet9, resnet9_narrow, resnet9_fedmatch, resnet9_fedmatch_narrow, resnet18, wrn28_2 or "
     "model='auto'"),
    (dict(model="cnn_cifar", dataset="fashion_mnist"),
     "RunConfig.model='cnn_cifar', dataset='fashion_mnist': cnn_cifar takes 32×32 images and fashion_mnist's are 28×28"),
    # fields the partition ignores
    (dict(partition="iid", dirichlet_alpha=0.5),
     "RunConfig.dirichlet_alpha=0.5, partition='iid': partition 'iid' does not use dirichlet_alpha; leave it at its "
     "default 0.1 (iid reads labeled_ratio, stream_parts)"),
    (dict(partition="noniid1", server_labeled=500),
     "RunConfig.server_labeled=500, partition='noniid1': partition 'noniid1' does not use server_labeled"),
    (dict(algorithm="fedmix", **SERVER, labeled_ratio=0.2),
     "RunConfig.labeled_ratio=0.2, server_labeled=1000: the server's labeled set is given either as a count"),
    # sizes of the data (data.datasets.shape_of, no file read)
    (dict(clients=100_000, clients_per_round=10),
     "RunConfig.clients=100000, dataset='mnist': must be at most 60000, one per sample of mnist's 60000 training "
     "samples"),
    (dict(batch_size=601), "RunConfig.batch_size=601, clients=100: must be at most 600, a client's average share"),
    (dict(dataset="cifar100", partition="noniid1", clients=1000, classes_per_client=60),
     "RunConfig.classes_per_client=60, clients=1000: must be at most 50, the 50000 samples the clients share"),
    (dict(resplit_train=5000, resplit_test=100, batch_size=51),
     "RunConfig.batch_size=51, clients=100: must be at most 50, a client's average share of mnist's 5000 training "
     "samples (resplit_train=5000)"),
    (dict(algorithm="fedmix", partition="server_iid", server_labeled=59_950),
     "RunConfig.server_labeled=59950, clients=100: must be at most 59900"),
    (dict(algorithm="fedmix", partition="server_iid", labeled_ratio=1e-6),
     "RunConfig.labeled_ratio=1e-06, clients=100: gives 0 of mnist's 60000 training samples to the server"),
    (dict(resplit_train=65_000, resplit_test=6_000),
     "RunConfig.resplit_train=65000, resplit_test=6000: draw 71000 samples from mnist's 70000"),
    (dict(resplit_train=1000), "RunConfig.resplit_train=1000, resplit_test=0: set both"),
    # once accepted, but meaningless
    (dict(resplit_train=1000, resplit_test=1),
     "RunConfig.resplit_test=1, dataset='mnist': must be at least 100, 10 test samples for each of its 10 classes "
     "(below it one sample is over 1 accuracy point; resplit_test=1 scores 0% or 100%)"),
    (dict(dataset="cifar100", resplit_train=1000, resplit_test=999),
     "RunConfig.resplit_test=999, dataset='cifar100': must be at least 1000, 10 test samples for each of its 100"),
    (dict(partition="noniid1", classes_per_client=1000),
     "RunConfig.classes_per_client=1000, dataset='mnist': must be at most 10, the classes mnist has"),
    (dict(partition="noniid1", classes_per_client=601), "RunConfig.classes_per_client=601, dataset='mnist': must be"),
    (dict(algorithm="fedmatch", momentum=0.0, fedmatch_helpers=100, clients=20),
     "RunConfig.fedmatch_helpers=100, clients=20: must be at most clients - 1 = 19; FedMatch's helpers are other "
     "clients"),
    (dict(algorithm="fedmatch", momentum=0.0, fedmatch_helpers=20, clients=20),
     "RunConfig.fedmatch_helpers=20, clients=20: must be at most clients - 1 = 19"),
    # noniid3's ratios
    (dict(partition="noniid3", clients=10), "RunConfig.rich_clients=10, clients=10: must be at most clients - 1 = 9"),
    (dict(partition="noniid3", labeled_ratio=0.01),
     "RunConfig.rich_clients=10, rich_labeled_ratio=0.55, labeled_ratio=0.01, clients=100: leave the other 90 "
     "clients a labeled "
     "ratio of -0.05, which must be within [0, 1]"),
    # streaming needs parts
    (dict(algorithm="fedmix", partition="streaming_dirichlet", server_labeled=1000),
     "RunConfig.stream_parts=1, partition='streaming_dirichlet': must be at least 2"),
    # the algorithm's declared needs
    (dict(algorithm="semifl", partition="server_lda", trainer="cohort"),
     "RunConfig.trainer='cohort', algorithm='semifl': semifl does not support the cohort trainer"),
    (dict(algorithm="fedanchor", partition="server_lda"),
     "RunConfig.projection_dim=0, algorithm='fedanchor': fedanchor needs the anchor head"),
    # the server's own SGD needs labels at the server
    (dict(algorithm="fedfixmatch", server_sgd="authors"),
     "RunConfig.server_sgd='authors', partition='iid': the server trains on labels only where the partition puts "
     "them at the server"),
    # the rules that were there before
    (dict(tau_curve="rectangle", tau_phi_g=40), "RunConfig.tau_varphi_g=40, tau_phi_g=40: tau_varphi_g must exceed"),
    (dict(mix_alpha=0.6), "RunConfig.mix_alpha=0.6, mix_beta=0.3, mix_gamma=0.2: sum to 1.1"),
    (dict(clients=5), "RunConfig.clients_per_round=10: must be at most clients=5"),
])
def test_cross_field_rules_name_every_field_involved(changes, message):
    with pytest.raises(ConfigError) as err:
        RunConfig(**changes)
    assert str(err.value).startswith(message), str(err.value)


def test_what_the_rules_allow():
    RunConfig(algorithm="fedsiam_d", partition="server_iid", labeled_ratio=0.01)      # FedSiam, labels at the server
    RunConfig(algorithm="fedmatch", partition="noniid2")
    RunConfig(algorithm="fedanchor", partition="server_lda", projection_dim=128, model="resnet18",
              server_labeled=250, server_balanced=True)
    RunConfig(model="resnet9", dataset="fashion_mnist")       # pooled features fit any size
    RunConfig(partition="noniid3", labeled_ratio=0.1)         # 10 clients at 55%, 90 at 5%
    RunConfig(batch_size=600)
    RunConfig(resplit_train=1000, resplit_test=100)            # 10 test samples a class
    RunConfig(partition="noniid1", classes_per_client=10)      # every class on every client
    RunConfig(algorithm="fedmatch", momentum=0.0, fedmatch_helpers=19, clients=20)
    RunConfig(clients=1, clients_per_round=1)                  # fedmatch_helpers=2 binds FedMatch only


# --- every registered partition and its parameters: cases read from the registry ------------------------------
# (each a function of a name: tests/test_extending.py runs them on a partition registered from outside the package)

def example_config(partition: str) -> dict:
    """RunConfig fields of partition `partition` with its declared example arguments, under the first registered
    algorithm that reads labels where it puts them."""
    declared = PARTITIONS[partition]
    algorithm = next(name for name, cls in ALGORITHMS.items() if declared.labels_at in cls.labels_at)
    return dict(partition=partition, algorithm=algorithm, **declared.example)


@pytest.mark.parametrize("partition", list(PARTITIONS))
def test_every_partition_with_its_example_is_a_run_that_reads_its_parameters_and_no_other(partition):
    cfg = RunConfig(**example_config(partition))
    read = cfg.fields_read()
    count_in_place_of_ratio = PARTITIONS[partition].labels_at == "server" and cfg.server_labeled > 0
    assert set(PARTITIONS[partition].reads) - ({"labeled_ratio"} if count_in_place_of_ratio else set()) <= set(read)
    assert not ignored_parameters(partition) & set(read)
    assert RunConfig.from_strings({k: str(v) for k, v in cfg.to_dict().items()}).run_id == cfg.run_id


@pytest.mark.parametrize("parameter", list(partition_parameters()))
def test_a_partition_parameter_outside_its_rule_is_one_line_naming_it_its_value_and_what_is_allowed(parameter):
    kind, interval = field_types()[parameter], field_intervals().get(parameter)
    if interval is None:                       # a flag or a text: a value of another type
        value, allowed = [], f"must be of type {kind.__name__}"
    else:                                      # just below the interval
        value = kind(interval.low) if interval.low_open else kind(interval.low - 1)
        allowed = f"must be {'an integer' if kind is int else 'a finite number'} within {interval}"
    with pytest.raises(ConfigError) as err:
        RunConfig(**{parameter: value})
    assert str(err.value) == f"RunConfig.{parameter}={value!r}: {allowed}"


@pytest.mark.parametrize("parameter", list(partition_parameters()))
def test_a_partition_parameter_given_to_a_partition_that_does_not_read_it_is_refused_naming_what_it_reads(parameter):
    others = [name for name, p in PARTITIONS.items() if parameter not in p.reads]
    if not others:
        pytest.skip(f"every partition reads {parameter}")
    partition, default = others[0], partition_parameters()[parameter].default
    kind = type(default)
    value = not default if kind is bool else "x" if kind is str else default + 1 if kind is int else default / 2
    with pytest.raises(ConfigError) as err:
        RunConfig(**{**example_config(partition), parameter: value})
    assert str(err.value) == (f"RunConfig.{parameter}={value!r}, partition={partition!r}: partition {partition!r} does "
                              f"not use {parameter}; leave it at its default {default!r} ({partition} reads "
                              f"{', '.join(PARTITIONS[partition].reads)})")


def test_every_algorithm_declares_where_it_reads_labels():
    """Each method says it in its own file (or its family's), not by inheriting the base class's default."""
    from fssl_core.algorithms import Algorithm
    for name, cls in ALGORITHMS.items():
        assert cls.labels_at and set(cls.labels_at) <= {p.labels_at for p in PARTITIONS.values()}, name
        assert any("labels_at" in vars(k) for k in cls.__mro__ if k not in (Algorithm, object)), name


@pytest.mark.skipif(not (data_root() / "MNIST").exists(), reason="mnist not on this machine")
@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "synthetic_cifar10"])
def test_dataset_shapes_known_without_files_are_the_loaded_ones(name):
    from fssl_core.data.datasets import load_dataset, shape_of
    if name == "fashion_mnist" and not (data_root() / "FashionMNIST").exists():
        pytest.skip("fashion_mnist not on this machine")
    data, shape = load_dataset(name, download=False), shape_of(name)
    assert tuple(data.train_x.shape[1:]) == (shape.channels, shape.image_size, shape.image_size)
    assert (data.num_classes, len(data.train_y), len(data.test_y)) == (shape.num_classes, shape.num_train, shape.num_test)


def test_every_model_that_needs_a_size_runs_at_it_and_the_others_at_28_and_32():
    import torch
    from fssl_core.models import MODELS, build_model
    for name, net in MODELS.items():
        for size in ([net.image_size] if net.image_size else [28, 32]):
            model = build_model(name, num_classes=10, in_channels=1).eval()
            assert model(torch.zeros(2, 1, size, size)).shape == (2, 10), (name, size)


# --- every config the project builds still validates --------------------------------------------------------

@pytest.mark.parametrize("profile", ["smoke", "headline", "quick", "paper"])
def test_every_notebook_plan_builds_at_every_profile(profile, monkeypatch, tmp_path):
    """plan_job builds each notebook's RunConfigs (a ConfigError would fail it); ~10 s for the four."""
    from fssl_core.job.plan import plan_job
    from fssl_core.job.reproduce import notebooks
    from fssl_core.store import RunStore
    monkeypatch.delenv("FSSL_PROFILE", raising=False)
    job = plan_job(notebooks(profile=profile), {"profile": profile, "device": "cpu"}, RunStore(tmp_path))
    assert sum(len(nb.configs) for nb in job.notebooks) > 0


def test_bench_cases_build():
    from fssl_core.perf.bench import CASES, PROTOCOL
    for case in CASES.values():
        RunConfig(**{**PROTOCOL, **case})


# --- property: every field, values of its type and others ----------------------------------------------------

BASES = [
    RunConfig(),
    RunConfig(algorithm="fedmix", partition="server_iid", server_labeled=1000, server_balanced=True, stratified=True),
    RunConfig(algorithm="fedanchor", dataset="cifar10", model="resnet18", partition="server_lda", projection_dim=128,
              server_labeled=250, server_balanced=True, dirichlet_alpha=1000.0, batch_size=64, static_batchnorm=True),
    RunConfig(algorithm="fedsiam_d", partition="noniid3", tau_curve="rectangle", tau_phi_g=10),
]


def _values(name: str):
    """Values for field `name`: mostly of its type, near and beyond its bounds (NaN, ±inf, huge ints,
    empty strings included), sometimes of another type."""
    kind, rule = field_types()[name], field_rules().get(name)
    wrong = st.one_of(st.none(), st.text(max_size=4), st.lists(st.integers(), max_size=2), st.booleans())
    if kind is float:
        interval = field_intervals()[name]
        near = st.floats(min_value=max(float(interval.low), -1e6), max_value=min(float(interval.high), 1e6))
        odd = st.one_of(st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, 1e-300]),
                        st.integers(), st.just(10**400))
    elif kind is int:
        interval = field_intervals()[name]
        near = st.integers(min_value=int(interval.low), max_value=min(int(interval.high), int(interval.low) + 1000))
        odd = st.one_of(st.integers(), st.integers(-3, -1), st.just(10**20), st.just(int(interval.high) + 1),
                        st.floats())
    elif kind is bool:
        near, odd = st.booleans(), st.integers(0, 1)
    else:
        near = st.sampled_from(tuple(rule() if callable(rule) else rule)) if rule else st.text(max_size=12)
        odd = st.one_of(st.text(max_size=12), st.just(""), st.integers(), st.floats())
    # 6 in 10 near the allowed values, 3 odd ones, 1 of another type
    return st.integers(0, 9).flatmap(lambda i: near if i < 6 else odd if i < 9 else wrong)


@settings(max_examples=2500, deadline=None)
@given(data=st.data())
def test_every_field_is_refused_by_name_or_round_trips(data):
    """For any field set to any value: a ConfigError whose message names the field, or a config
    that is valid JSON and keeps its run id through to_dict / from_dict / from_strings."""
    base = data.draw(st.sampled_from(BASES), label="base")
    name = data.draw(st.sampled_from(list(field_types())), label="field")
    value = data.draw(_values(name), label="value")
    try:
        cfg = RunConfig.from_dict({**base.to_dict(), name: value})
    except ConfigError as err:
        message = str(err)
        assert message.startswith("RunConfig.") and re.search(rf"(?<!\w){name}=", message), message
        return
    as_dict = cfg.to_dict()
    json.dumps(as_dict, allow_nan=False)
    assert RunConfig.from_dict(as_dict).run_id == cfg.run_id
    assert RunConfig.from_strings({k: str(v) for k, v in as_dict.items()}).run_id == cfg.run_id
