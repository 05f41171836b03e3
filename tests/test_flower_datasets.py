"""fssl's partitions as Flower Datasets partitioners give fssl's own index arrays, row for row: every
partition of PARTITIONS on a small label array, and RunConfigs on real MNIST against the engine's partition."""
import numpy as np
import pytest

pytest.importorskip("flwr_datasets")
import datasets  # noqa: E402  (flwr_datasets brings it)

from fssl_core.data.partition import LABELS_AT, PARTITIONS, Partition, PartitionError, build_partition  # noqa: E402
from fssl_core.integrations.flower_datasets import (  # noqa: E402
    LABELED, FsslPartitioner, partitioner_for, training_set,
)

from .conftest import requires_mnist  # noqa: E402
from .test_partition import SMALL_ARGS  # noqa: E402

N, C, K = 600, 10, 10
LABELS = np.random.default_rng(0).permutation(np.repeat(np.arange(C), N // C))   # shuffled, as a real set
ARGS = SMALL_ARGS          # arguments that make each partition valid on 600 labels with 10 clients
assert set(ARGS) == set(PARTITIONS)


def small_dataset(labels=LABELS, class_label=True) -> datasets.Dataset:
    """Column "row" is each row's index in the training set, so a partition's rows can be read back."""
    label = datasets.ClassLabel(num_classes=C) if class_label else datasets.Value("int64")
    features = datasets.Features({"row": datasets.Value("int64"), "label": label})
    return datasets.Dataset.from_dict({"row": np.arange(len(labels)), "label": labels}, features=features)


def assigned(name: str, seed: int = 3, **arguments) -> FsslPartitioner:
    partitioner = FsslPartitioner(name, num_partitions=K, seed=seed, **{**ARGS[name], **arguments})
    partitioner.dataset = small_dataset()
    return partitioner


def rows(dataset: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]:
    table = dataset.with_format("numpy")[:]
    return table["row"], table[LABELED]


@pytest.mark.parametrize("name", PARTITIONS)
def test_each_client_gets_fssls_indices_in_fssls_order_with_its_labeled_flags(name):
    partitioner = assigned(name)
    expected = build_partition(name, LABELS, num_classes=C, num_clients=K, seed=3, **ARGS[name])
    assert partitioner.num_partitions == K
    for k, split in enumerate(expected.clients):
        got_rows, got_flags = rows(partitioner.load_partition(k))
        np.testing.assert_array_equal(got_rows, np.concatenate([split.labeled, split.unlabeled]))
        np.testing.assert_array_equal(got_flags, [True] * split.labeled.size + [False] * split.unlabeled.size)
        np.testing.assert_array_equal(partitioner.load_partition(k).with_format("numpy")[:]["label"],
                                      LABELS[got_rows])
    server_rows, server_flags = rows(partitioner.server_set())
    np.testing.assert_array_equal(server_rows, expected.server_labeled)
    assert server_flags.all()


@pytest.mark.parametrize("name", PARTITIONS)
def test_server_and_clients_are_disjoint_and_cover_the_set_and_labels_sit_where_the_partition_says(name):
    partitioner = assigned(name)
    clients = [rows(partitioner.load_partition(k)) for k in range(K)]
    server_rows, _ = rows(partitioner.server_set())
    every = np.concatenate([server_rows] + [r for r, _ in clients])
    np.testing.assert_array_equal(np.sort(every), np.arange(N))       # each row once: disjoint and complete
    client_labeled = sum(int(flags.sum()) for _, flags in clients)
    if LABELS_AT[name] == "server":
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


def test_through_federated_dataset_unshuffled_from_a_local_file(tmp_path, monkeypatch):
    """FederatedDataset shuffles the set before partitioning unless shuffle=False (module docstring)."""
    from flwr_datasets import FederatedDataset
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "train.parquet"
    small_dataset().to_parquet(str(path))
    expected = build_partition("noniid2", LABELS, num_classes=C, num_clients=K, seed=3, **ARGS["noniid2"]).clients[4]
    for shuffle, same in ((False, True), (True, False)):
        partitioner = FsslPartitioner("noniid2", num_partitions=K, seed=3, **ARGS["noniid2"])
        federated = FederatedDataset(dataset="parquet", data_files={"train": str(path)}, shuffle=shuffle,
                                     partitioners={"train": partitioner})
        got_rows, _ = rows(federated.load_partition(4))
        assert np.array_equal(got_rows, np.concatenate([expected.labeled, expected.unlabeled])) == same


def one_line_error(make, *phrases):
    with pytest.raises(PartitionError) as raised:
        make()
    message = str(raised.value)
    assert "\n" not in message
    for phrase in phrases:
        assert phrase in message, message


def test_bad_input_is_one_line_naming_the_parameter_its_value_and_what_is_allowed():
    one_line_error(lambda: FsslPartitioner("noniid9", num_partitions=K, seed=0),
                   "partition='noniid9'", "must be one of 'iid', 'noniid1'", "'streaming_dirichlet'")
    one_line_error(lambda: FsslPartitioner("iid", num_partitions=K, seed=0, dirichlet_alpha=0.5),
                   "dirichlet_alpha=0.5", "it reads labeled_ratio, stream_parts")
    one_line_error(lambda: FsslPartitioner("iid", num_partitions=0, seed=0), "num_partitions=0", ">= 1")
    one_line_error(lambda: FsslPartitioner("iid", num_partitions=K, seed=-1), "seed=-1", ">= 0")
    partitioner = assigned("iid")
    for bad in (K, -1, True, 1.5):
        one_line_error(lambda: partitioner.load_partition(bad), f"partition_id={bad!r}", f"within [0, {K - 1}]")


def test_a_dataset_it_cannot_partition_is_one_line_naming_what_to_change():
    def with_data(dataset, name="iid", **arguments):
        partitioner = FsslPartitioner(name, num_partitions=K, seed=0, **{**ARGS[name], **arguments})
        partitioner.dataset = dataset
        return lambda: partitioner.load_partition(0)

    one_line_error(with_data(small_dataset(class_label=False)), "num_classes=None", "ClassLabel", "give num_classes")
    one_line_error(with_data(small_dataset().rename_column("label", "y")), "partition_by='label'", "row, y")
    one_line_error(with_data(small_dataset().add_column(LABELED, [0] * N)), f"column {LABELED!r}")
    one_line_error(with_data(small_dataset(), labeled_ratio=1.5), "labeled_ratio=1.5", "within (0, 1)")


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
        np.testing.assert_array_equal(rows(partitioner.server_set())[0], engine.server_labeled)
    assert engine.server_labeled.size == 250
