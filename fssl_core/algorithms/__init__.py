"""Registry of algorithms by name: a new method is a new file plus one line here."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..config import Setting, settings_of
from ..data.partition import PARTITIONS
from .base import Algorithm
from .fedanchor import FedAnchor
from .fedavg import FedAvg, FedAvgPlus
from .fedcon import FedCon
from .fedfixmatch import FedFixMatch
from .fedmatch import FedMatch
from .fedmix import FedMix, SupervisedAtServer
from .fedsem import FedSem
from .fedsiam import FedSiam, FedSiamMT, FedSiamNoSiam, FedSiamPi
from .semifl import SemiFL, SupervisedFL

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (FedAvg, FedAvgPlus, FedSiam, FedSiamPi, FedSiamMT, FedSiamNoSiam, FedSem, FedFixMatch, FedMatch,
                FedMix, SupervisedAtServer, SemiFL, SupervisedFL, FedAnchor, FedCon)
}


# --- what RunConfig asks of the algorithms (run_config.py); each rule returns None or the message ------

def _labels_where_the_algorithm_reads_them(cfg, facts):
    """An algorithm declares where it reads labels (Algorithm.labels_at); a partition that puts them
    elsewhere leaves it nothing to learn from (FedAvg on server_iid: no client holds a label)."""
    if facts.labels_at not in facts.algorithm.labels_at:
        partitions = [name for name, p in PARTITIONS.items() if p.labels_at in facts.algorithm.labels_at]
        others = [a for a, c in ALGORITHMS.items() if facts.labels_at in c.labels_at]
        party = {"client": "the clients", "server": "the server"}
        return (f"algorithm={cfg.algorithm!r}, partition={cfg.partition!r}: {cfg.algorithm} learns from labels at "
                f"{' and '.join(party[at] for at in facts.algorithm.labels_at)}, and partition {cfg.partition!r} puts "
                f"them at {party[facts.labels_at]}; use partition={' or '.join(partitions)}, or an algorithm for "
                f"labels at {party[facts.labels_at]}: {', '.join(others)}")


def _server_sgd(cfg, facts):
    default = facts.defaults["server_sgd"]
    if cfg.server_sgd != default and facts.labels_at != "server":
        return (f"server_sgd={cfg.server_sgd!r}, partition={cfg.partition!r}: the server trains on labels only where "
                f"the partition puts them at the server; leave server_sgd at {default!r} or use a "
                "labels-at-server partition")


def _settings_the_algorithm_reads(cfg, facts):
    """A setting the run's algorithm does not read, given a value other than its default, would be recorded
    as if it had been used (it changes nothing, so the run id leaves it out): refused, naming who reads it."""
    for name in sorted(ignored_settings(cfg.algorithm)):
        value = getattr(cfg, name)
        if value != facts.defaults[name]:
            readers = [a for a, cls in ALGORITHMS.items() if name in cls.reads()]
            return (f"{name}={value!r}, algorithm={cfg.algorithm!r}: {cfg.algorithm} does not read {name} "
                    f"(read by {', '.join(readers) or 'no registered algorithm'}); leave it at its default "
                    f"{facts.defaults[name]!r}")


def _cohort_trainer(cfg, facts):
    if cfg.trainer == "cohort" and not facts.algorithm.cohort:
        return (f"trainer='cohort', algorithm={cfg.algorithm!r}: {cfg.algorithm} does not support the cohort "
                "trainer (its `cohort` is False); use trainer='sequential' or 'auto'")


def _projection(cfg, facts):
    if facts.algorithm.needs_projection and cfg.projection_dim == 0:
        return (f"projection_dim=0, algorithm={cfg.algorithm!r}: {cfg.algorithm} needs the anchor head; "
                "set projection_dim > 0 (the paper's is 128)")


def algorithm_settings() -> dict[str, Setting]:
    """Every registered algorithm's settings (`Algorithm.settings`, a frozen dataclass beside each method;
    a subclass's extends its parent's), each name declared once: two methods declaring one name must
    declare the same type, default, rule and doc."""
    return _settings(tuple(ALGORITHMS.items()))


@functools.lru_cache(maxsize=8)
def _settings(registry: tuple) -> dict[str, Setting]:
    declared: dict[str, Setting] = {}
    for _, cls in registry:
        for name, one in settings_of(cls.settings).items():
            if declared.setdefault(name, one) != one:
                raise RuntimeError(f"{cls.__name__}.settings.{name}: another algorithm declares it otherwise")
    return declared


def config_rules() -> tuple[dict[str, Any], tuple[Callable, ...]]:
    """The cross-field rules: each class's own (`checks`), then the settings it reads, where labels sit, the
    server's SGD, the cohort trainer and the anchor head. (The settings' own rules are in their declarations.)"""
    checks: list[Callable] = []
    for cls in ALGORITHMS.values():
        for klass in reversed(cls.__mro__):
            for check in vars(klass).get("checks", ()):
                if check not in checks:
                    checks.append(check)
    return {}, (*checks, _settings_the_algorithm_reads, _labels_where_the_algorithm_reads_them, _server_sgd,
                _cohort_trainer, _projection)


def ignored_settings(algorithm: str) -> frozenset[str]:
    """The algorithms' settings that `algorithm` does not read (Algorithm.reads): left out of its runs'
    identity, since no value of them changes what such a run computes."""
    return frozenset(algorithm_settings()) - ALGORITHMS[algorithm].reads()
