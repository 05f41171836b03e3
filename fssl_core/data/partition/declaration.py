"""How a partition declares itself beside its function: its facts (where its labels sit, its docs line, the
arguments the tests split a small set with, its own RunConfig rules) and its parameters, a frozen dataclass of
`setting(default, rule, doc)` fields, as an algorithm declares its settings (fssl_core/algorithms/base.py).

Each parameter is a RunConfig field, validated by its declared rule; the parameters several partitions read
(γ, the server's set, shards, Dirichlet draws) are declared once here and extended by each partition's own.
A partition reads exactly its dataclass's fields: its function takes them as keyword arguments, and a
declaration whose function takes others is refused when it is made.
"""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from ...config import COUNT, setting, settings_of
from .splits import Partition

# what every partition function takes before its parameters
SPLIT_ARGUMENTS = ("labels", "num_classes", "num_clients", "seed")
WHERE_LABELS_SIT = ("client", "server")   # Algorithm.labels_at names the same two


@dataclass(frozen=True)
class EveryPartition:
    """What every partition reads: γ (or, at the server, a count in its place) and streaming."""
    labeled_ratio: float = setting(0.1, "(0, 1)",    # no labeled or no unlabeled sample is no FSSL split
                                   "γ: labeled fraction (of each client: labels-at-client; of |D|: server_*)")
    stream_parts: int = setting(1, "[1, 10000]", "streaming non-IID: parts per client, one used per round")


@dataclass(frozen=True)
class AtServer(EveryPartition):
    """Labels-at-server: the server's labeled set, by γ or by a count."""
    server_labeled: int = setting(0, f"[0, {COUNT}]",       # 0: γ gives the server's count instead
                                  "N_s: labeled samples at the server (FedMix, FedAnchor); 0 = use γ")
    server_balanced: bool = setting(False, doc="server's labeled set class-balanced (FedMix, FedAnchor: True)")


@dataclass(frozen=True)
class Shards:
    classes_per_client: int = setting(2, f"[1, {COUNT}]", "C'_k of FedSiam's non-IID settings")


@dataclass(frozen=True)
class Dirichlet:
    dirichlet_alpha: float = setting(0.1, "[1e-6, inf)", "μ (FedMix) / α (FedAnchor): Dirichlet concentration")


@dataclass(frozen=True)
class RedrawnDirichlet(Dirichlet):
    min_client_size: int = setting(10, f"[1, {COUNT}]", "Dirichlet splits: redrawn until every client holds this many")


@dataclass(frozen=True, eq=False)
class PartitionDeclaration:
    """One partition: `PARTITIONS` (registry.py) holds one line of these per partition."""
    name: str                          # RunConfig.partition; the function's messages say "partition '<name>'"
    build: Callable[..., Partition]    # build(labels, *, num_classes, num_clients, seed, **parameters)
    labels_at: str                     # 'client' (FedSiam's first scenario; the server holds none) or 'server'
    parameters: type                   # frozen dataclass of setting() fields: the RunConfig fields build reads
    doc: str                           # one line: what a client holds (the table registry.table() prints)
    paper: str                         # the paper's setting it is, or "none (...)"
    # arguments that make it valid on every small set the tests split: 60 to 600 labels of 3 to 10 classes
    # (each at least 20), over 2 to 10 clients
    example: dict[str, Any]
    # the partition whose labeled split and per-client sizes it has for the same arguments (only unlabeled
    # samples move): a method reading no unlabeled sample (Algorithm.reads_unlabeled) computes one run on
    # both, so both have one run identity (RunConfig.identity_hash)
    same_labeled_split: str | None = None
    # whether every client labels round(γ·n) of its n (noniid3's rich clients label more): then a γ that
    # rounds to no label on a client's share leaves nothing supervised (config_rules.py)
    gamma_per_client: bool = True
    # RunConfig's rules of this partition alone, each (cfg, facts) -> None or the message after "RunConfig."
    checks: tuple[Callable, ...] = ()
    # parameter -> its value as the run identity hashes it, where two spellings are one computation
    normal_forms: dict[str, Callable[[Any], Any]] = field(default_factory=dict)

    def __post_init__(self):
        where = f"PartitionDeclaration({self.name!r})"
        if self.labels_at not in WHERE_LABELS_SIT:
            raise ValueError(f"{where}: labels_at={self.labels_at!r} must be one of {', '.join(WHERE_LABELS_SIT)}")
        if not (dataclasses.is_dataclass(self.parameters) and self.parameters.__dataclass_params__.frozen):
            raise ValueError(f"{where}: parameters={self.parameters!r} must be a frozen dataclass of setting() fields")
        takes = tuple(name for name in inspect.signature(self.build).parameters if name not in SPLIT_ARGUMENTS)
        if sorted(takes) != sorted(self.reads):
            raise ValueError(f"{where}: {self.build.__name__} takes {', '.join(takes)}; its parameters declare "
                             f"{', '.join(self.reads)}: they must be the same names")

    @property
    def reads(self) -> tuple[str, ...]:
        """The RunConfig fields this partition reads, in its dataclass's order."""
        return tuple(settings_of(self.parameters))
