"""Registry of partitions by name: a new partition is its function and its declaration (declaration.py) in a
file (of its kind, or its own), plus one line here. Whatever names the partitions (RunConfig's choices and
fields, its rules, the Flower app's keys, the table below, the tests' cases) reads them from here."""
from __future__ import annotations

import functools

from ...config import Setting, settings_of
from . import at_clients, at_server, flower
from .checks import PartitionError
from .declaration import PartitionDeclaration

# one line a partition (a partition in a new file: that file's module in the import above too)
PARTITIONS: dict[str, PartitionDeclaration] = {p.name: p for p in (
    at_clients.IID,
    at_clients.NONIID1,
    at_clients.NONIID2,
    at_clients.NONIID3,
    at_clients.CLIENT_DIRICHLET,
    at_server.SERVER_IID,
    at_server.SERVER_SHARDS,
    at_server.SERVER_DIRICHLET,
    at_server.SERVER_LDA,
    at_server.STREAMING_DIRICHLET,
    flower.FLWR_DATASETS,
)}


def declaration_of(name: str, where: str) -> PartitionDeclaration:
    """PARTITIONS[name], or a PartitionError naming the registered names."""
    if name not in PARTITIONS:
        raise PartitionError(f"{where}: name={name!r} must be one of {', '.join(map(repr, PARTITIONS))}")
    return PARTITIONS[name]


def partition_parameters() -> dict[str, Setting]:
    """Every registered partition's parameters, each name declared once: two partitions reading one name
    declare it in one dataclass they share (declaration.py), so its type, default, rule and doc agree."""
    return _parameters(tuple(PARTITIONS.values()))


@functools.lru_cache(maxsize=8)
def _parameters(registry: tuple) -> dict[str, Setting]:
    declared: dict[str, Setting] = {}
    for partition in registry:
        for name, one in settings_of(partition.parameters).items():
            if declared.setdefault(name, one) != one:
                raise RuntimeError(f"partition {partition.name!r}: parameter {name} is declared otherwise by another "
                                   "partition; declare it once, in a dataclass both extend")
    return declared


def ignored_parameters(name: str) -> frozenset[str]:
    """The partitions' parameters that partition `name` does not read: no value of them changes its split."""
    return frozenset(partition_parameters()) - set(PARTITIONS[name].reads)


def table() -> str:
    """The registered partitions as a markdown table: where the labels sit, what a client holds, the paper's
    setting and the parameters each reads (each declared and explained beside its function)."""
    rows = [("name", "labels", "clients' data", "paper", "reads"), ("---",) * 5]
    rows += [(p.name, p.labels_at, p.doc, p.paper, ", ".join(p.reads)) for p in PARTITIONS.values()]
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)
