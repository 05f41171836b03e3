"""A partition added as a contributor would: this one file and one registry line (the test adds the line).

Exactly C' classes a client: client k holds classes kC', kC' + 1, ..., kC' + C' − 1 (mod C), each class's
shuffled samples cut as evenly as possible among the clients holding it, then round(γ·n) random samples of each
client labeled. Its one parameter, C' (`classes_each`), is declared here beside its function (default, rule
and doc together), as are its facts and its own RunConfig rule; RunConfig, the Flower app's keys and the tests
take them once the partition is registered. It reuses the package's constructions and needs no change elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fssl_core.config import setting
from fssl_core.data.partition import Partition, PartitionDeclaration, PartitionError
from fssl_core.data.partition.checks import check_clients, check_fraction, check_int, check_labels, seeded_rng, where_of
from fssl_core.data.partition.constructions import EMPTY, finalize, label_within
from fssl_core.data.partition.declaration import EveryPartition

NAME = "exact_classes"


def exact_classes_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                            labeled_ratio: float, classes_each: int = 2, stream_parts: int = 1) -> Partition:
    labels = check_labels(NAME, labels, num_classes)
    check_clients(NAME, num_clients, labels.size)
    check_fraction(NAME, "labeled_ratio", labeled_ratio)
    fewest = -(-num_classes // num_clients)          # K·C' >= C: every class has a client
    check_int(where_of(NAME), "classes_each", classes_each, fewest, num_classes,
              " (num_classes / num_clients rounded up, so that every class has a client, to num_classes)")
    rng = seeded_rng(where_of(NAME), seed)
    holds = [set(((k * classes_each + np.arange(classes_each)) % num_classes).tolist()) for k in range(num_clients)]
    pieces: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for c in range(num_classes):
        holders = [k for k in range(num_clients) if c in holds[k]]
        members = rng.permutation(np.flatnonzero(labels == c))
        if members.size < len(holders):
            raise PartitionError(f"partition '{NAME}': class {c} has {members.size} samples for the {len(holders)} "
                                 f"clients holding it with classes_each={classes_each}; lower classes_each")
        for k, piece in zip(holders, np.array_split(members, len(holders))):
            pieces[k].append(piece)
    clients = [np.sort(np.concatenate(p)) for p in pieces]
    splits = label_within(clients, np.full(num_clients, labeled_ratio), rng)
    return finalize(NAME, EMPTY, splits, stream_parts, rng)


@dataclass(frozen=True)
class ExactClasses(EveryPartition):
    classes_each: int = setting(2, "[1, 1000]", "C': how many classes every client holds, exactly")


def _within_the_datasets_classes(cfg, facts):
    fewest, most = -(-facts.shape.num_classes // cfg.clients), facts.shape.num_classes
    if not fewest <= cfg.classes_each <= most:
        return (f"classes_each={cfg.classes_each}, dataset={cfg.dataset!r}, clients={cfg.clients}: must be within "
                f"[{fewest}, {most}]: every class of {cfg.dataset} needs a client, and a client holds at most them all")


EXACT_CLASSES = PartitionDeclaration(NAME, exact_classes_partition, labels_at="client", parameters=ExactClasses,
                                     doc="exactly classes_each classes each, γ labeled", paper="none (a toy)",
                                     example=dict(labeled_ratio=0.1, classes_each=3),
                                     checks=(_within_the_datasets_classes,))
