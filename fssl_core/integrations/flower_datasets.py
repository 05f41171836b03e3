"""fssl's partitions as Flower Datasets partitioners (`pip install -e '.[flower]'`), over a local Dataset.

    from fssl_core.integrations.flower_datasets import FsslPartitioner
    partitioner = FsslPartitioner("streaming_dirichlet", num_partitions=10, seed=0, server_labeled=1000,
                                  server_balanced=True, dirichlet_alpha=0.1, stream_parts=10)
    partitioner.dataset = train         # a datasets.Dataset whose "label" column is a ClassLabel
    client = partitioner.load_partition(3)              # client 3's rows; its column "labeled" marks the labeled ones
    server = partitioner.server.load_partition(0)       # the server's labeled rows (labels-at-server partitions)
    today = partitioner.in_round(server_round).load_partition(3)   # client 3's rows of Flower's round server_round

`FsslPartitioner(name, ...)` reaches every partition registered in `fssl_core.data.partition.PARTITIONS`, with
build_partition's arguments by keyword; `partitioner_for(cfg)` is the partitioner a RunConfig trains on and
`training_set(cfg)` that run's training set as a `datasets.Dataset`, from fssl's arrays (no hub access).

The partition is build_partition over the dataset's label column, computed once, on first use. Client k's
rows are its labeled indices, then its unlabeled ones, each in fssl's order (sorted; a streamed client's
unlabeled rows in stream order). Every row keeps its true label, as fssl's data does (fssl's engine hides the
labels of unlabeled rows): a client trains on the labels of rows with labeled=True only. `partition` is fssl's
`Partition` itself, for its index arrays.

Flower's partition ids are the clients, 0..num_partitions-1. The server's labeled set (`partitioner.server`) and
a round's part of each client (`partitioner.in_round(server_round)`) are Flower partitioners too, views of the
same partition, read as a client is, `load_partition(partition_id)` (ServerPartitioner, RoundPartitioner).
FederatedDataset shuffles the set (seed 42) before partitioning unless shuffle=False, and fssl's indices then
name other rows: a dataset holding its table's rows in another order is refused in one line (`_build`).
"""
from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..data.datasets import load_dataset, resplit, shape_of
from ..data.partition import PARTITIONS, Partition, PartitionError, build_partition
from ..data.partition.checks import check_int
from ..engine.federation import partition_fields
from ..run_config import RunConfig

try:
    import datasets
    from flwr_datasets.partitioner import Partitioner
except ImportError:             # pragma: no cover - said once, where it is used
    raise ImportError("fssl_core.integrations.flower_datasets needs Flower Datasets: "
                      "pip install -e '.[flower]'") from None

LABELED = "labeled"   # the boolean column on every partition given here: the row's label may be trained on


class FsslPartitioner(Partitioner):
    """fssl's partition `partition` (one of PARTITIONS) over `num_partitions` clients, as a Flower partitioner.

    Keyword arguments past the listed ones are the parameters the partition declares
    (`PARTITIONS[partition].reads`: labeled_ratio, dirichlet_alpha, ...). num_classes defaults to
    the label column's ClassLabel size; it is asked for otherwise, since a class absent from the labels
    still changes how a partition draws (per-class Dirichlet draws, a class-balanced server set).
    """

    def __init__(self, partition: str, *, num_partitions: int, seed: int, num_classes: int | None = None,
                 partition_by: str = "label", **arguments: Any) -> None:
        super().__init__()
        where = "FsslPartitioner"
        if partition not in PARTITIONS:
            raise PartitionError(f"{where}: partition={partition!r} must be one of {', '.join(map(repr, PARTITIONS))}")
        reads = PARTITIONS[partition].reads
        for param, value in arguments.items():
            if param not in reads:
                raise PartitionError(f"{where}({partition!r}): {param}={value!r} is not an argument of this "
                                     f"partition; it reads {', '.join(reads)}")
        check_int(where, "num_partitions", num_partitions, 1)
        check_int(where, "seed", seed, 0)
        if num_classes is not None:
            check_int(where, "num_classes", num_classes, 1)
        self.name, self.seed, self.arguments = partition, int(seed), dict(arguments)
        self._num_partitions, self._num_classes, self._partition_by = int(num_partitions), num_classes, partition_by
        self._partition: Partition | None = None
        self._flagged: datasets.Dataset | None = None

    @property
    def num_partitions(self) -> int:
        return self._num_partitions

    @property
    def partition(self) -> Partition:
        """fssl's Partition of the assigned dataset (built on first use, then kept)."""
        if self._partition is None:
            self._build()
        return self._partition

    def load_partition(self, partition_id: int) -> datasets.Dataset:
        """Client `partition_id`'s rows: its labeled ones (labeled=True), then its unlabeled ones."""
        k = _partition_id("FsslPartitioner", partition_id, self._num_partitions, " (a client; the server's set is "
                          "partitioner.server)")
        split = self.partition.clients[k]
        return self._flagged.select(np.concatenate([split.labeled, split.unlabeled]))

    @property
    def server(self) -> "ServerPartitioner":
        """The server's labeled set as a Flower partitioner of one partition, id 0."""
        return ServerPartitioner(self)

    def in_round(self, server_round: int) -> "RoundPartitioner":
        """The clients' rows of Flower's round `server_round` (>= 1) as a Flower partitioner, id k client k."""
        if not isinstance(server_round, Integral) or isinstance(server_round, bool) or server_round < 1:
            raise PartitionError(f"FsslPartitioner.in_round: server_round={server_round!r} must be an int >= 1 "
                                 "(Flower's rounds count from 1)")
        return RoundPartitioner(self, int(server_round))

    def _build(self) -> None:
        where = f"FsslPartitioner({self.name!r})"
        dataset, column = self.dataset, self._partition_by
        if column not in dataset.column_names:
            raise PartitionError(f"{where}: partition_by={column!r} must be a column of the dataset; "
                                 f"its columns: {', '.join(dataset.column_names)}")
        if LABELED in dataset.column_names:
            raise PartitionError(f"{where}: the dataset has a column {LABELED!r}, the name of the column this "
                                 f"partitioner adds; rename it (Dataset.rename_column)")
        num_classes = self._num_classes
        if num_classes is None:
            feature = dataset.features[column]
            if not isinstance(feature, datasets.ClassLabel):
                raise PartitionError(f"{where}: num_classes=None needs column {column!r} to be a ClassLabel "
                                     f"(it is {feature!r}); give num_classes")
            num_classes = feature.num_classes
        labels = dataset.with_format("numpy", columns=[column])[:][column]
        # A shuffle (FederatedDataset's default, Dataset.shuffle) keeps the table and adds an indices mapping, so
        # the table's order is still readable: refused rather than undone, since a shuffle asked for is the
        # user's (Dataset.flatten_indices() makes it the table's order, which is then partitioned as it stands).
        in_table = np.asarray(dataset.data.column(column).to_numpy())
        if in_table.size == labels.size and not np.array_equal(in_table, labels):
            raise PartitionError(f"{where}: the dataset holds its table's rows in another order, as "
                                 "FederatedDataset(..., shuffle=True) (its default) or Dataset.shuffle leave it, so "
                                 "fssl's indices would name other rows; give FederatedDataset shuffle=False (or call "
                                 "Dataset.flatten_indices() to partition the shuffled order as it stands)")
        partition = build_partition(self.name, labels, num_classes=num_classes, num_clients=self._num_partitions,
                                    seed=self.seed, **self.arguments)
        # Each row belongs to one party at most, so whether its label may be used is a property of the
        # row: one column on the whole dataset, and a client's rows are a plain select (no copy).
        flags = np.zeros(len(labels), dtype=bool)
        flags[partition.server_labeled] = True
        for split in partition.clients:
            flags[split.labeled] = True
        self._flagged = dataset.add_column(LABELED, flags)
        self._partition = partition


def _partition_id(where: str, partition_id: Any, count: int, note: str = "") -> int:
    if not isinstance(partition_id, Integral) or isinstance(partition_id, bool) or not 0 <= partition_id < count:
        raise PartitionError(f"{where}.load_partition: partition_id={partition_id!r} must be an int within "
                             f"[0, {count - 1}]{note}")
    return int(partition_id)


class _View(Partitioner):
    """A Flower partitioner over what an FsslPartitioner computed: its dataset is the FsslPartitioner's, assigned
    there (by hand or by FederatedDataset), never here."""

    def __init__(self, of: FsslPartitioner) -> None:
        super().__init__()
        self._of = of

    @property
    def dataset(self) -> datasets.Dataset:
        return self._of.dataset

    @dataset.setter
    def dataset(self, value: datasets.Dataset) -> None:
        raise PartitionError(f"{type(self).__name__}.dataset: a view of an FsslPartitioner reads that partitioner's "
                             "dataset; assign the dataset to the FsslPartitioner")

    def is_dataset_assigned(self) -> bool:
        return self._of.is_dataset_assigned()


class ServerPartitioner(_View):
    """`FsslPartitioner.server`: partition 0 is the server's labeled rows (all labeled=True), sorted; no rows
    for a labels-at-client partition. A partitioner of its own rather than an extra client id: that id would
    make num_partitions count the server, and a Flower app starts a node per partition."""

    @property
    def num_partitions(self) -> int:
        return 1

    def load_partition(self, partition_id: int) -> datasets.Dataset:
        _partition_id("ServerPartitioner", partition_id, 1, " (the server's set is partition 0)")
        server = self._of.partition.server_labeled
        return self._of._flagged.select(server)


class RoundPartitioner(_View):
    """`FsslPartitioner.in_round(server_round)`: partition k is client k's labeled rows, then the unlabeled rows
    it trains on in Flower's round server_round, fssl's round server_round - 1 (Flower counts rounds from 1,
    Partition.unlabeled_in_round from 0); without streaming, all of them, as FsslPartitioner.load_partition."""

    def __init__(self, of: FsslPartitioner, server_round: int) -> None:
        super().__init__(of)
        self.server_round = server_round

    @property
    def num_partitions(self) -> int:
        return self._of.num_partitions

    def load_partition(self, partition_id: int) -> datasets.Dataset:
        k = _partition_id("RoundPartitioner", partition_id, self.num_partitions, " (a client)")
        partition = self._of.partition
        part = partition.unlabeled_in_round(k, self.server_round - 1)
        return self._of._flagged.select(np.concatenate([partition.clients[k].labeled, part]))


def partitioner_for(cfg: RunConfig) -> FsslPartitioner:
    """The partitioner of the run `cfg`: over `training_set(cfg)` it gives the clients fssl's engine trains."""
    return FsslPartitioner(cfg.partition, num_partitions=cfg.clients, seed=cfg.seed,
                           num_classes=shape_of(cfg.dataset).num_classes, **partition_fields(cfg))


def training_set(cfg: RunConfig) -> datasets.Dataset:
    """The training set run `cfg` partitions (resplit where cfg asks) as columns "image" (float32 [C, H, W]
    in [0, 1], fssl's tensors) and "label" (a ClassLabel), loaded by fssl (FSSL_DATA), never from a hub."""
    data = load_dataset(cfg.dataset, device="cpu")
    if cfg.resplit_train:
        data = resplit(data, cfg.resplit_train, cfg.resplit_test, cfg.seed)
    images = data.train_x.numpy()
    features = datasets.Features({"image": datasets.Array3D(shape=images.shape[1:], dtype="float32"),
                                  "label": datasets.ClassLabel(num_classes=data.num_classes)})
    return datasets.Dataset.from_dict({"image": images, "label": data.train_y.numpy()}, features=features)
