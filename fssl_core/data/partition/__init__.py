"""Who holds which training sample: server-labeled, client-labeled and client-unlabeled splits.

A partition is a pure function of (training labels, sizes and parameters, seed), drawing from
`np.random.default_rng(seed)` only: the same index arrays on any machine. Labels of unlabeled samples stay
in the dataset (the engine hides them from algorithms). Each function's docstring quotes its paper's
definition, with line numbers of the papers' texts (../shared/papers/: fedsiam-latex.txt, fedmix-*.txt,
fedanchor.txt); its declaration beside it (declaration.py) says where its labels sit and which parameters,
RunConfig fields, it reads. `PARTITIONS` (registry.py) holds them; `print(table())` lists them.

Index arrays are sorted, but a streamed client's unlabeled set (stream_parts > 1), whose seeded order
defines its parts; uneven sizes are spread as `np.array_split` does. Server, client-labeled and
client-unlabeled indices are disjoint and cover the training set (only `resplit_train_test` drops samples).
"""
from __future__ import annotations

import numpy as np

from .checks import DirichletDrawError, PartitionError
from .config_rules import config_rules
from .constructions import server_set_size
from .declaration import PartitionDeclaration
from .flower import partitioner_identity
from .registry import PARTITIONS, declaration_of, ignored_parameters, partition_parameters, table
from .resplit import resplit_train_test
from .splits import ClientSplit, Partition

__all__ = [
    'PARTITIONS', 'ClientSplit', 'DirichletDrawError', 'Partition', 'PartitionDeclaration', 'PartitionError',
    'build_partition', 'config_rules', 'ignored_parameters', 'partition_parameters', 'partitioner_identity',
    'resplit_train_test', 'server_set_size', 'table',
]


def build_partition(name: str, labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                    **parameters) -> Partition:
    """Build partition `name` (one of PARTITIONS) of the training set whose labels are `labels`.

    Calls its declaration's function (see it for the paper's definition and the choices made).
      labels             int array [N] of the training set, values in [0, num_classes)
      num_classes        C; num_clients K (FedSiam, FedMix CIFAR-10, FedAnchor: 100; FedMix F-MNIST: 10)
      seed               int >= 0; the only source of randomness (np.random.default_rng(seed))
      parameters         the ones the partition declares (PARTITIONS[name].reads), by keyword; one left out
                         takes the function's default. Labels-at-server takes labeled_ratio=γ or server_labeled=N_s.
    A parameter the partition does not read is refused: it is almost always meant for another partition.
    """
    declaration = declaration_of(name, 'build_partition')
    for param, value in parameters.items():
        if param not in declaration.reads:
            raise PartitionError(f"partition '{name}': {param}={value!r} is not used by this partition; it reads "
                                 f"{', '.join(declaration.reads)}")
    return declaration.build(labels, num_classes=num_classes, num_clients=num_clients, seed=seed, **parameters)
