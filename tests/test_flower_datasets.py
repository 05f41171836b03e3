"""fssl's partitions as Flower Datasets partitioners give fssl's own index arrays, row for row: every
partition of PARTITIONS on a small label array, and RunConfigs on real MNIST against the engine's partition; the
server's set and a round's parts as Flower partitioners; a shuffled set refused. Then the other way: a Flower
Datasets partitioner as a run's partition (partition='flwr_datasets') gives Flower's rows at the run's seed."""
import numpy as np
import pytest

pytest.importorskip("flwr_datasets")
import datasets  # noqa: E402  (flwr_datasets brings it)

from fssl_core.data.partition import PARTITIONS, Partition, PartitionError, build_partition  # noqa: E402
from fssl_core.integrations.flower_datasets import (  # noqa: E402
    LABELED, FsslPartitioner, partitioner_for, training_set,
)

from .conftest import requires_mnist  # noqa: E402

N, C, K = 600, 10, 10
LABELS = np.random.default_rng(0).permutation(np.repeat(np.arange(C), N // C))   # shuffled, as a real set


def example(name: str) -> dict:
    """Arguments that make partition `name` valid on 600 labels with 10 clients: its declaration's."""
    return PARTITIONS[name].example


def small_dataset(labels=LABELS, class_label=True) -> datasets.Dataset:
    """Column "row" is each row's index in the training set, so a partition's rows can be read back."""
    label = datasets.ClassLabel(num_classes=C) if class_label else datasets.Value("int64")
    features = datasets.Features({"row": datasets.Value("int64"), "label": label})
    return datasets.Dataset.from_dict({"row": np.arange(len(labels)), "label": labels}, features=features)


def assigned(name: str, seed: int = 3, **arguments) -> FsslPartitioner:
    partitioner = FsslPartitioner(name, num_partitions=K, seed=seed, **{**example(name), **arguments})
    partitioner.dataset = small_dataset()
    return partitioner


def rows(dataset: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]:
    table = dataset.with_format("numpy")[:]
    return table["row"], table[LABELED]


@pytest.mark.parametrize("name", PARTITIONS)
def test_each_client_gets_fssls_indices_in_fssls_order_with_its_labeled_flags(name):
    partitioner = assigned(name)
    expected = build_partition(name, LABELS, num_classes=C, num_clients=K, seed=3, **example(name))
    assert partitioner.num_partitions == K
    for k, split in enumerate(expected.clients):
        got_rows, got_flags = rows(partitioner.load_partition(k))
        np.testing.assert_array_equal(got_rows, np.concatenate([split.labeled, split.unlabeled]))
        np.testing.assert_array_equal(got_flags, [True] * split.labeled.size + [False] * split.unlabeled.size)
        np.testing.assert_array_equal(partitioner.load_partition(k).with_format("numpy")[:]["label"],
                                      LABELS[got_rows])
    server_rows, server_flags = rows(partitioner.server.load_partition(0))
    np.testing.assert_array_equal(server_rows, expected.server_labeled)
    assert server_flags.all()


@pytest.mark.parametrize("name", PARTITIONS)
def test_server_and_clients_are_disjoint_and_cover_the_set_and_labels_sit_where_the_partition_says(name):
    partitioner = assigned(name)
    clients = [rows(partitioner.load_partition(k)) for k in range(K)]
    server_rows, _ = rows(partitioner.server.load_partition(0))
    every = np.concatenate([server_rows] + [r for r, _ in clients])
    np.testing.assert_array_equal(np.sort(every), np.arange(N))       # each row once: disjoint and complete
    client_labeled = sum(int(flags.sum()) for _, flags in clients)
    if PARTITIONS[name].labels_at == "server":
        assert server_rows.size > 0 and client_labeled == 0
    else:
        assert server_rows.size == 0 and client_labeled > 0


def test_a_streamed_clients_unlabeled_rows_keep_the_stream_order_that_cuts_its_round_parts():
    partitioner = assigned("streaming_dirichlet")
    partition = partitioner.partition
    assert isinstance(partition, Partition) and partition.stream_parts == 3
    got_rows, flags = rows(partitioner.load_partition(0))
    unlabeled = got_rows[~flags]
    assert not np.all(np.diff(unlabeled) > 0), "stream order is a seeded shuffle, not sorted"
    np.testing.assert_array_equal(np.concatenate([partition.unlabeled_in_round(0, r) for r in range(3)]), unlabeled)


def test_the_seed_and_the_arguments_reach_the_partition():
    first = rows(assigned("noniid2", seed=3).load_partition(0))[0]
    assert not np.array_equal(first, rows(assigned("noniid2", seed=4).load_partition(0))[0])
    assert rows(assigned("iid", labeled_ratio=0.2).load_partition(0))[1].sum() == 12     # 20% of 60


def test_num_classes_may_be_given_for_a_plain_integer_label_column():
    partitioner = FsslPartitioner("iid", num_partitions=K, seed=3, num_classes=C, labeled_ratio=0.1)
    partitioner.dataset = small_dataset(class_label=False)
    expected = build_partition("iid", LABELS, num_classes=C, num_clients=K, seed=3, labeled_ratio=0.1)
    np.testing.assert_array_equal(rows(partitioner.load_partition(2))[0],
                                  np.concatenate([expected.clients[2].labeled, expected.clients[2].unlabeled]))


def federated(tmp_path, monkeypatch, partitioner, shuffle: bool):
    """`partitioner` through Flower's FederatedDataset over small_dataset() written to a local parquet file."""
    from flwr_datasets import FederatedDataset
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "train.parquet"
    small_dataset().to_parquet(str(path))
    return FederatedDataset(dataset="parquet", data_files={"train": str(path)}, shuffle=shuffle,
                            partitioners={"train": partitioner})


@pytest.mark.parametrize("name", PARTITIONS)
def test_through_federated_dataset_unshuffled_fssls_rows_and_shuffled_one_line_naming_shuffle(name, tmp_path,
                                                                                               monkeypatch):
    expected = build_partition(name, LABELS, num_classes=C, num_clients=K, seed=3, **example(name)).clients[4]
    unshuffled = federated(tmp_path, monkeypatch, FsslPartitioner(name, num_partitions=K, seed=3, **example(name)), False)
    np.testing.assert_array_equal(rows(unshuffled.load_partition(4))[0],
                                  np.concatenate([expected.labeled, expected.unlabeled]))
    shuffled = federated(tmp_path, monkeypatch, FsslPartitioner(name, num_partitions=K, seed=3, **example(name)), True)
    one_line(lambda: shuffled.load_partition(4), PartitionError, "shuffle=True", "give FederatedDataset shuffle=False")


def test_a_shuffle_made_the_tables_order_is_partitioned_as_it_stands():
    """Dataset.flatten_indices() writes the shuffled order as the table's: its rows are what fssl partitions."""
    partitioner = FsslPartitioner("iid", num_partitions=K, seed=3, labeled_ratio=0.1)
    partitioner.dataset = small_dataset().shuffle(seed=1).flatten_indices()
    order = partitioner.dataset.with_format("numpy")[:]["row"]          # training-set row at each position
    expected = build_partition("iid", LABELS[order], num_classes=C, num_clients=K, seed=3, labeled_ratio=0.1)
    np.testing.assert_array_equal(rows(partitioner.load_partition(2))[0],
                                  order[np.concatenate([expected.clients[2].labeled, expected.clients[2].unlabeled])])


# --- the server's set and a round's parts: Flower partitioners too -------------------------------------------
def test_the_server_set_is_a_flower_partitioner_of_one_partition_and_a_round_a_partitioner_of_the_clients():
    from flwr_datasets.partitioner import Partitioner
    partitioner = assigned("streaming_dirichlet")        # 3 stream parts
    partition = partitioner.partition
    server = partitioner.server
    assert isinstance(server, Partitioner) and server.num_partitions == 1 and server.is_dataset_assigned()
    server_rows, server_flags = rows(server.load_partition(0))
    np.testing.assert_array_equal(server_rows, partition.server_labeled)
    assert server_rows.size == example("streaming_dirichlet")["server_labeled"] and server_flags.all()
    for server_round, part in ((1, 0), (2, 1), (3, 2), (4, 0)):          # Flower counts from 1; part r % 3
        today = partitioner.in_round(server_round)
        assert isinstance(today, Partitioner) and today.num_partitions == K
        for k in (0, K - 1):
            got, flags = rows(today.load_partition(k))
            np.testing.assert_array_equal(got, partition.unlabeled_in_round(k, part))   # no labels at a client
            assert not flags.any()
    parts = [rows(partitioner.in_round(r).load_partition(5))[0] for r in (1, 2, 3)]
    np.testing.assert_array_equal(np.concatenate(parts), rows(partitioner.load_partition(5))[0])


def test_without_streaming_a_round_is_the_whole_client_and_at_the_client_the_server_set_is_empty():
    partitioner = assigned("noniid2")
    for k in (0, 7):
        got, flags = rows(partitioner.in_round(9).load_partition(k))
        want, want_flags = rows(partitioner.load_partition(k))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(flags, want_flags)
    assert partitioner.server.load_partition(0).num_rows == 0


def test_the_views_read_the_dataset_federated_dataset_assigned(tmp_path, monkeypatch):
    name = "server_lda"
    expected = build_partition(name, LABELS, num_classes=C, num_clients=K, seed=3, **example(name))
    dataset = federated(tmp_path, monkeypatch, FsslPartitioner(name, num_partitions=K, seed=3, **example(name)), False)
    partitioner = dataset.partitioners["train"]
    np.testing.assert_array_equal(rows(partitioner.server.load_partition(0))[0], expected.server_labeled)
    np.testing.assert_array_equal(rows(partitioner.in_round(1).load_partition(3))[0], expected.clients[3].unlabeled)


def one_line(make, error, *phrases):
    with pytest.raises(error) as raised:
        make()
    message = str(raised.value)
    assert "\n" not in message
    for phrase in phrases:
        assert phrase in message, message


def test_bad_input_is_one_line_naming_the_parameter_its_value_and_what_is_allowed():
    one_line(lambda: FsslPartitioner("noniid9", num_partitions=K, seed=0), PartitionError,
                   "partition='noniid9'", f"must be one of {', '.join(map(repr, PARTITIONS))}")
    one_line(lambda: FsslPartitioner("iid", num_partitions=K, seed=0, dirichlet_alpha=0.5), PartitionError,
                   "dirichlet_alpha=0.5", "it reads labeled_ratio, stream_parts")
    one_line(lambda: FsslPartitioner("iid", num_partitions=0, seed=0), PartitionError, "num_partitions=0", ">= 1")
    one_line(lambda: FsslPartitioner("iid", num_partitions=K, seed=-1), PartitionError, "seed=-1", ">= 0")
    partitioner = assigned("iid")
    for bad in (K, -1, True, 1.5):
        one_line(lambda: partitioner.load_partition(bad), PartitionError, f"partition_id={bad!r}", f"within [0, {K - 1}]")
        one_line(lambda: partitioner.in_round(1).load_partition(bad), PartitionError, f"partition_id={bad!r}",
                       f"within [0, {K - 1}]")
    one_line(lambda: partitioner.server.load_partition(1), PartitionError, "partition_id=1", "within [0, 0]")
    for bad in (0, -1, 1.0, True):
        one_line(lambda: partitioner.in_round(bad), PartitionError, f"server_round={bad!r}", "an int >= 1")

    def assign_to_a_view():
        partitioner.server.dataset = small_dataset()
    one_line(assign_to_a_view, PartitionError, "assign the dataset to the FsslPartitioner")


def test_a_dataset_it_cannot_partition_is_one_line_naming_what_to_change():
    def with_data(dataset, name="iid", **arguments):
        partitioner = FsslPartitioner(name, num_partitions=K, seed=0, **{**example(name), **arguments})
        partitioner.dataset = dataset
        return lambda: partitioner.load_partition(0)

    one_line(with_data(small_dataset(class_label=False)), PartitionError, "num_classes=None", "ClassLabel", "give num_classes")
    one_line(with_data(small_dataset().rename_column("label", "y")), PartitionError, "partition_by='label'", "row, y")
    one_line(with_data(small_dataset().add_column(LABELED, [0] * N)), PartitionError, f"column {LABELED!r}")
    one_line(with_data(small_dataset(), labeled_ratio=1.5), PartitionError, "labeled_ratio=1.5", "within (0, 1)")


# --- a RunConfig on real MNIST: the engine's partition --------------------------------------------------------
@requires_mnist
def test_a_runconfigs_partitioner_over_its_training_set_gives_the_engines_clients_on_mnist():
    from fssl_core.data.datasets import load_dataset
    from fssl_core.engine.federation import Federation
    from fssl_core.run_config import RunConfig

    mnist = load_dataset("mnist", device="cpu")

    train = training_set(RunConfig(dataset="mnist"))
    assert train.num_rows == 60000 and train.features["label"].num_classes == 10
    some = [0, 1, 59999]
    picked = train.select(some).with_format("numpy")[:]
    np.testing.assert_array_equal(picked["image"], mnist.train_x[some].numpy())
    np.testing.assert_array_equal(picked["label"], mnist.train_y[some].numpy())
    train = train.remove_columns("image").add_column("row", np.arange(60000))   # rows only, below
    for cfg in (RunConfig(dataset="mnist", partition="noniid2", labeled_ratio=0.1, clients=100, seed=1),
                RunConfig(algorithm="fedsiam_d", dataset="mnist", partition="server_iid", labeled_ratio=0.01,
                          clients=100, seed=2),
                RunConfig(algorithm="fedmix", dataset="mnist", partition="server_lda", server_labeled=250,
                          server_balanced=True, dirichlet_alpha=0.1, clients=100, seed=3)):
        engine = Federation.partition_of(cfg, mnist)
        partitioner = partitioner_for(cfg)
        partitioner.dataset = train
        for k in (0, 57, 99):
            got_rows, flags = rows(partitioner.load_partition(k))
            split = engine.clients[k]
            np.testing.assert_array_equal(got_rows, np.concatenate([split.labeled, split.unlabeled]))
            assert flags.sum() == split.labeled.size
        np.testing.assert_array_equal(rows(partitioner.server.load_partition(0))[0], engine.server_labeled)
    assert engine.server_labeled.size == 250


# --- a Flower Datasets partitioner as a run's partition: partition='flwr_datasets' ----------------------------
DIRICHLET = "DirichletPartitioner(partition_by='label', alpha=0.5)"


def flower_rows(partition: datasets.Dataset) -> np.ndarray:
    return np.sort(partition.with_format("numpy")[:]["row"])


def flwr_partition(text: str, seed: int = 3, **arguments):
    return build_partition("flwr_datasets", LABELS, num_classes=C, num_clients=K, seed=seed,
                           **{"labeled_ratio": 0.1, "flwr_partitioner": text, **arguments})


def test_iid_partitioner_by_eye_client_k_holds_rows_60k_to_60k_plus_59_six_of_them_labeled():
    partition = flwr_partition("IidPartitioner()")
    for k, split in enumerate(partition.clients):
        np.testing.assert_array_equal(np.sort(np.concatenate([split.labeled, split.unlabeled])),
                                      np.arange(60 * k, 60 * k + 60))
        assert split.labeled.size == 6 and np.intersect1d(split.labeled, split.unlabeled).size == 0
    assert partition.server_labeled.size == 0


def test_each_client_holds_the_rows_flowers_own_dirichlet_partitioner_gives_at_the_runs_seed():
    from flwr_datasets.partitioner import DirichletPartitioner
    direct = DirichletPartitioner(num_partitions=K, partition_by="label", alpha=0.5, seed=3)
    direct.dataset = small_dataset()
    want = [flower_rows(direct.load_partition(k)) for k in range(K)]
    assert len({w.size for w in want}) > 1                        # Dirichlet sizes: not an equal split
    ours = flwr_partition(DIRICHLET, seed=3)
    for k, split in enumerate(ours.clients):
        np.testing.assert_array_equal(np.sort(np.concatenate([split.labeled, split.unlabeled])), want[k])
        assert split.labeled.size == int(0.1 * want[k].size + 0.5)            # round(γ·n_k), half up
    other_seed = flwr_partition(DIRICHLET, seed=4)
    assert any(not np.array_equal(np.sort(np.concatenate([s.labeled, s.unlabeled])), w)
               for s, w in zip(other_seed.clients, want))
    stated = flwr_partition("DirichletPartitioner(num_partitions=10, partition_by='label', alpha=0.5, seed=3)")
    for a, b in zip(ours.clients, stated.clients):                            # a Flower call copied as it is
        np.testing.assert_array_equal(a.labeled, b.labeled)
        np.testing.assert_array_equal(a.unlabeled, b.unlabeled)


def test_the_run_id_hashes_the_partitioners_class_arguments_and_seed_not_their_spelling():
    from fssl_core.engine.federation import partition_fields
    from fssl_core.run_config import RunConfig

    def run(text, seed=42):
        return RunConfig(partition="flwr_datasets", flwr_partitioner=text, clients=K, seed=seed)
    base = run(DIRICHLET)
    assert base.run_id == run("DirichletPartitioner( alpha=.5, num_partitions=10, seed=42)").run_id
    others = [run("DirichletPartitioner(partition_by='label', alpha=0.3)"), run(DIRICHLET, seed=43),
              run("DirichletPartitioner(alpha=0.5, min_partition_size=5)"), run("IidPartitioner()")]
    assert len({base.run_id, *(cfg.run_id for cfg in others)}) == 5
    assert base.fields_read()["flwr_partitioner"] == DIRICHLET
    assert partition_fields(base) == {"labeled_ratio": 0.1, "flwr_partitioner": DIRICHLET, "stream_parts": 1}
    assert "flwr_partitioner" not in RunConfig(partition="noniid2").fields_read()


def test_a_partitioner_the_run_cannot_take_is_one_line_naming_the_parameter_its_value_and_what_is_allowed():
    from flwr_datasets.partitioner import DirichletPartitioner
    from fssl_core.config import ConfigError
    from fssl_core.run_config import RunConfig

    def config(text, **fields):
        return lambda: RunConfig(**{"partition": "flwr_datasets", "flwr_partitioner": text, "clients": K, **fields})
    one_line(config("DirichletPartitioner(num_partitions=100, alpha=0.5)"), ConfigError,
             "num_partitions=100 must be clients=10", "give clients=100")
    one_line(config("DirichletPartitioner(alpha=0.5, seed=42)", seed=7), ConfigError,
             "seed=42 must be seed=7", "leave seed out")
    one_line(config("DirichletPartitioner(partition_by='fine_label', alpha=0.5)"), ConfigError,
             "partition_by='fine_label' must be 'label'")
    one_line(config("DirichletPartitioner(alpha=0.5, shuffle=True)"), ConfigError, "shuffle=True", "leave it out")
    one_line(config("DirichletPartitioner(0.5)"), ConfigError, "give every argument by keyword")
    one_line(config("DirichletPartitioner(alpha=a)"), ConfigError, "alpha=a must be a literal")
    one_line(config(""), ConfigError, "flwr_partitioner=''", "give the Flower Datasets partitioner's call")
    one_line(lambda: RunConfig(partition="iid", flwr_partitioner=DIRICHLET), ConfigError,
             "partition 'iid' does not use flwr_partitioner", "leave it at its default ''")
    one_line(lambda: RunConfig(partition=DirichletPartitioner(num_partitions=K, partition_by="label", alpha=0.5)),
             ConfigError, "RunConfig.partition=<DirichletPartitioner object>", "partition='flwr_datasets'",
             "flwr_partitioner=")
    # what only flwr-datasets can say, when the partition is built
    one_line(lambda: flwr_partition("FooPartitioner()"), PartitionError, "FooPartitioner must be one of",
             "DirichletPartitioner")
    one_line(lambda: flwr_partition("DirichletPartitioner(alpha=0.5, beta=1)"), PartitionError,
             "beta=1 is not a parameter of DirichletPartitioner", "min_partition_size")
    one_line(lambda: flwr_partition("SizePartitioner(partition_sizes=[300, 300])"), PartitionError,
             "makes 2 partitions; num_clients=10 must equal it")
    one_line(lambda: flwr_partition("DirichletPartitioner(alpha=-1)"), PartitionError,
             "Flower Datasets refused it", "greater than zero")
    one_line(lambda: flwr_partition("VerticalEvenPartitioner()"), PartitionError, "splits the columns, not the rows")


def test_without_flower_datasets_the_partition_says_what_to_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "flwr_datasets", None)        # `import flwr_datasets` raises ImportError
    one_line(lambda: flwr_partition(DIRICHLET), PartitionError, "needs Flower Datasets", "pip install -e '.[flower]'")


def test_a_run_on_a_flower_partitioner_from_the_command_line(tmp_path, capsys):
    """A tiny run of synthetic data (no files): recorded under the id its config hashes to."""
    import json
    from fssl_core import cli
    from fssl_core.run_config import RunConfig
    text = "DirichletPartitioner(partition_by='label', alpha=0.5, min_partition_size=5)"
    pairs = ["dataset=synthetic_cifar10", "resplit_train=120", "resplit_test=100", "clients=4", "clients_per_round=2",
             "rounds=1", "local_epochs=1", "batch_size=10", "partition=flwr_datasets", f"flwr_partitioner={text}"]
    assert cli.main(["run", "--quiet", "--json", "--runs", str(tmp_path), *pairs]) in (0, 3)   # 3: at chance
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    stored = RunConfig.from_dict(json.loads((tmp_path / summary["run_id"] / "config.json").read_text()))
    assert summary["rounds"] == 1 and stored.flwr_partitioner == text and stored.run_id == summary["run_id"]
