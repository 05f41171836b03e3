"""What RunConfig asks of the partitions (run_config.py): the rules across fields that say how the data are
split, and those that check them against the data set's sizes; each parameter's own rule is in its declaration
(declaration.py), a partition's own rules in its `checks`. Each returns None or the message after
"RunConfig.", naming every field it involves as field=value."""
from __future__ import annotations

from .constructions import server_set_size
from .registry import partition_parameters


def _fields_the_partition_ignores(cfg, facts):
    """A partition field that cfg.partition does not read must stay at its default: a value there would
    change the run id and nothing else, and is almost always meant for another partition. At the
    server, server_labeled > 0 takes the place of γ, so labeled_ratio must then stay at its default."""
    for name in partition_parameters():
        if name not in facts.uses and getattr(cfg, name) != facts.defaults[name]:
            return (f"{name}={getattr(cfg, name)!r}, partition={cfg.partition!r}: partition {cfg.partition!r} "
                    f"does not use {name}; leave it at its default {facts.defaults[name]!r} "
                    f"({cfg.partition} reads {', '.join(facts.uses)})")
    if "server_labeled" in facts.uses and cfg.server_labeled > 0 and cfg.labeled_ratio != facts.defaults["labeled_ratio"]:
        return (f"labeled_ratio={cfg.labeled_ratio}, server_labeled={cfg.server_labeled}: the server's labeled set "
                f"is given either as a count (server_labeled > 0) or as the ratio γ (server_labeled=0), not both; "
                f"leave labeled_ratio at its default {facts.defaults['labeled_ratio']} or server_labeled at 0")


def _server_set(cfg, facts):
    """Labels-at-server: the server's set holds at least 1 sample and leaves every client one."""
    if facts.labels_at != "server":
        return None
    most = facts.train - cfg.clients
    if cfg.server_labeled > 0:
        if cfg.server_labeled > most:
            return (f"server_labeled={cfg.server_labeled}, clients={cfg.clients}: must be at most {most}: "
                    f"{facts.training_set(cfg)} less one per client")
        return None
    count = server_set_size(facts.train, cfg.labeled_ratio)
    if not 1 <= count <= most:
        return (f"labeled_ratio={cfg.labeled_ratio}, clients={cfg.clients}: gives {count} of "
                f"{facts.training_set(cfg)} to the server; it must give at least 1 and at most {most} "
                f"(one left per client)")


def _classes_per_client(cfg, facts):
    """Shards are cut from the label-sorted samples, so each holds (about) one class: a client given more
    shards than the data set has classes is no longer "C'_k classes per client"."""
    if "classes_per_client" in facts.uses and cfg.classes_per_client > facts.shape.num_classes:
        return (f"classes_per_client={cfg.classes_per_client}, dataset={cfg.dataset!r}: must be at most "
                f"{facts.shape.num_classes}, the classes {cfg.dataset} has")


def _per_client_sizes(cfg, facts):
    """What each client's share must hold: its shards, min_client_size, its batch. The samples the
    clients share are the training set, less the server's labeled set at the server."""
    at_server = 0
    if facts.labels_at == "server":
        at_server = cfg.server_labeled or server_set_size(facts.train, cfg.labeled_ratio)
    share = (facts.train - at_server) // cfg.clients
    for name in ("classes_per_client", "min_client_size"):
        if name in facts.uses and getattr(cfg, name) > share:
            return (f"{name}={getattr(cfg, name)}, clients={cfg.clients}: must be at most {share}, the "
                    f"{facts.train - at_server} samples the clients share ({facts.training_set(cfg)}, "
                    f"{at_server} of them at the server), divided by clients")
    if cfg.batch_size > facts.train // cfg.clients:
        return (f"batch_size={cfg.batch_size}, clients={cfg.clients}: must be at most {facts.train // cfg.clients}, "
                f"a client's average share of {facts.training_set(cfg)}; a larger local batch is more than "
                "a client holds")


def _unlabeled_left(cfg, facts):
    """γ < 1 must leave a client unlabeled samples: each client labels round(γ·n) of its n, so a share of one
    sample at γ = 0.5 is all labeled, and the run would be γ = 1 under a config that says 0.5."""
    if facts.labels_at != "client" or "labeled_ratio" not in facts.uses or not 0 < cfg.labeled_ratio < 1:
        return None
    share = facts.train // cfg.clients
    if share and int(cfg.labeled_ratio * share + 0.5) == 0 and facts.partition.gamma_per_client:
        return (f"labeled_ratio={cfg.labeled_ratio}, clients={cfg.clients}: a client's share of {share} sample(s) "
                f"of {facts.training_set(cfg)} rounds to no labeled sample: nothing supervised to learn from; "
                "give a larger labeled_ratio or fewer clients")
    if share and int(cfg.labeled_ratio * share + 0.5) >= share:
        return (f"labeled_ratio={cfg.labeled_ratio}, clients={cfg.clients}: a client's share of {share} sample(s) "
                f"of {facts.training_set(cfg)} rounds to {share} labeled and none unlabeled, which is γ = 1; "
                "give fewer clients or a smaller labeled_ratio")


def _server_trains(cfg, facts):
    """With the labels at the server, its epochs over them are the only supervised signal."""
    if facts.labels_at == "server" and cfg.server_epochs == 0:
        return (f"server_epochs=0, partition={cfg.partition!r}: the labels sit at the server and it would never "
                "train on them (the run ends at chance); give server_epochs ≥ 1")


def _the_partitions_own(cfg, facts):
    """The rules a partition declares beside its function (PartitionDeclaration.checks), for its runs only."""
    for check in facts.partition.checks:
        problem = check(cfg, facts)
        if problem:
            return problem


def config_rules() -> tuple[dict, tuple]:
    """No field rule here (each parameter declares its own); the rules across fields."""
    return {}, (_fields_the_partition_ignores, _server_set, _classes_per_client, _per_client_sizes, _unlabeled_left,
                _server_trains, _the_partitions_own)
