"""Who holds which training sample: server-labeled, client-labeled and client-unlabeled splits.

A partition is a pure function of (training labels, sizes and parameters, seed), drawing from
`np.random.default_rng(seed)` only: the same index arrays on any machine. Labels of unlabeled samples stay
in the dataset (the engine hides them from algorithms). Each function's docstring quotes its paper's
definition, with line numbers of the papers' texts (../shared/papers/: fedsiam-latex.txt, fedmix-*.txt,
fedanchor.txt):

| name                | labels  | clients' data                                      | paper                  |
|---------------------|---------|----------------------------------------------------|------------------------|
| iid                 | clients | class-stratified N/K each, γ of each class labeled | FedSiam IID            |
| noniid1             | clients | 2 label-sorted shards each (labeled + unlabeled)   | FedSiam Non-IID-I      |
| noniid2             | clients | labeled as noniid1, unlabeled redistributed IID    | FedSiam Non-IID-II     |
| noniid3             | clients | as iid; 10 clients 55% labeled, 90 clients 5%      | FedSiam Non-IID-III    |
| client_dirichlet    | clients | per-class Dirichlet(α) over clients, γ labeled     | none (an extension)    |
| server_iid          | server  | random equal split, optionally class-stratified    | FedSiam; FedMix IID    |
| server_shards       | server  | 2 label-sorted shards each                         | FedSiam Non-IID        |
| server_dirichlet    | server  | per-class Dirichlet(μ) over clients, unequal sizes | FedMix non-IID         |
| server_lda          | server  | per-client Dirichlet(α) over classes, equal sizes  | FedAnchor              |
| streaming_dirichlet | server  | server_dirichlet, unlabeled cut into round parts   | FedMix journal F-MNIST |
| flwr_datasets       | clients | a Flower Datasets partitioner's, γ labeled         | none (Flower Datasets) |

Index arrays are sorted, but a streamed client's unlabeled set (stream_parts > 1), whose seeded order
defines its parts; uneven sizes are spread as `np.array_split` does. Server, client-labeled and
client-unlabeled indices are disjoint and cover the training set (only `resplit_train_test` drops samples).
"""
from __future__ import annotations

import numpy as np

from .at_clients import (client_dirichlet_partition, iid_partition, noniid1_partition, noniid2_partition,
                         noniid3_partition)
from .at_server import (server_dirichlet_partition, server_iid_partition, server_lda_partition,
                        server_shards_partition, streaming_dirichlet_partition)
from .flower import flwr_datasets_partition, partitioner_identity
from .checks import DirichletDrawError, PartitionError
from .config_rules import config_rules
from .constructions import same_as_default, server_set_size
from .resplit import resplit_train_test
from .names import LABELS_AT, OPTIONAL, PARTITIONS, SAME_LABELED_SPLIT, USES, partition_arguments
from .splits import ClientSplit, Partition

__all__ = [
    'PARTITIONS', 'LABELS_AT', 'SAME_LABELED_SPLIT', 'ClientSplit', 'DirichletDrawError', 'Partition',
    'PartitionError', 'build_partition', 'config_rules', 'partition_arguments', 'partitioner_identity',
    'resplit_train_test', 'server_set_size',
]

_BUILDERS = {
    'iid': iid_partition,
    'noniid1': noniid1_partition,
    'noniid2': noniid2_partition,
    'noniid3': noniid3_partition,
    'client_dirichlet': client_dirichlet_partition,
    'server_iid': server_iid_partition,
    'server_shards': server_shards_partition,
    'server_dirichlet': server_dirichlet_partition,
    'server_lda': server_lda_partition,
    'streaming_dirichlet': streaming_dirichlet_partition,
    'flwr_datasets': flwr_datasets_partition,
}
assert tuple(_BUILDERS) == PARTITIONS

def build_partition(name: str, labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                    labeled_ratio: float | None = None, server_labeled: int | None = None,
                    dirichlet_alpha: float | None = None, classes_per_client: int = 2,
                    stream_parts: int = 1, rich_clients: int = 10, rich_labeled_ratio: float = 0.55,
                    server_balanced: bool = False, stratified: bool = False,
                    min_client_size: int = 10, flwr_partitioner: str | None = None) -> Partition:
    """Build partition `name` (one of PARTITIONS) of the training set whose labels are `labels`.

    Dispatches to `<name>_partition` (see each for the paper's definition and the choices made).
    Arguments:
      labels             int array [N] of the training set, values in [0, num_classes)
      num_classes        C; num_clients K (FedSiam, FedMix CIFAR-10, FedAnchor: 100; FedMix F-MNIST: 10)
      seed               int >= 0; the only source of randomness (np.random.default_rng(seed))
      labeled_ratio      γ: labels-at-client, fraction of each client's data labeled (FedSiam 0.1,
                         0.15, 0.2); labels-at-server, fraction of the training set at the server
                         (FedSiam 0.01, 0.10). Labels-at-server takes this or server_labeled.
      server_labeled     labels-at-server count (FedMix N_s = 1000; FedAnchor anchors 250, 500, ...)
      server_balanced    server set drawn class-balanced (FedMix, FedAnchor: True; FedSiam: False)
      dirichlet_alpha    Dirichlet concentration (FedMix μ; FedAnchor Dir)
      classes_per_client shards per client for noniid1, noniid2, server_shards (FedSiam C′ = 2)
      rich_clients, rich_labeled_ratio   noniid3 (FedSiam: 10 clients with 55%)
      stratified         server_iid: per-class counts equal across clients (FedMix IID: True)
      min_client_size    Dirichlet partitions: redraw until every client has this many samples
      stream_parts       cut each client's unlabeled data into this many parts, one per round
                         (streaming_dirichlet needs >= 2; FedMix journal: 10); any partition may stream
      flwr_partitioner   flwr_datasets: a Flower Datasets partitioner's call, as text
                         ("DirichletPartitioner(partition_by='label', alpha=0.5)"; see flower.py)
    Arguments a partition does not use must stay at their defaults, else ValueError.
    """
    if name not in _BUILDERS:
        raise PartitionError(f'build_partition: name={name!r} must be one of {", ".join(map(repr, PARTITIONS))}')
    given = {'labeled_ratio': labeled_ratio, 'server_labeled': server_labeled,
             'dirichlet_alpha': dirichlet_alpha, 'classes_per_client': classes_per_client,
             'stream_parts': stream_parts, 'rich_clients': rich_clients,
             'rich_labeled_ratio': rich_labeled_ratio, 'server_balanced': server_balanced,
             'stratified': stratified, 'min_client_size': min_client_size,
             'flwr_partitioner': flwr_partitioner}
    uses = USES[name]
    for param, value in given.items():
        if param not in uses and not same_as_default(value, OPTIONAL[param]):
            raise PartitionError(f"partition '{name}': {param}={value!r} is not used by this partition; "
                             f"leave it at its default {OPTIONAL[param]!r}")
    kwargs = {p: given[p] for p in uses}
    return _BUILDERS[name](labels, num_classes=num_classes, num_clients=num_clients, seed=seed,
                           **kwargs)


