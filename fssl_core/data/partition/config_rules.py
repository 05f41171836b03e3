"""What RunConfig asks of the partitions (run_config.py): the rules of the fields that say how the data
are split, and the rules that check them against the data set's sizes. Each returns None or the
message after "RunConfig.", naming every field it involves as field=value."""
from __future__ import annotations

from ...config import COUNT
from .constructions import server_set_size
from .checks import PartitionError
from .flower import EXAMPLE, check_call
from .names import PARTITIONS, partition_arguments

FIELD_RULES = {
    "labeled_ratio": "(0, 1)",               # a partition with no labeled or no unlabeled sample is no FSSL split
    "server_labeled": f"[0, {COUNT}]",       # 0: γ gives the server's count instead
    "dirichlet_alpha": "[1e-6, inf)",
    "classes_per_client": f"[1, {COUNT}]",
    "rich_clients": f"[0, {COUNT}]",
    "rich_labeled_ratio": "[0, 1]",
    "min_client_size": f"[1, {COUNT}]",
    "stream_parts": "[1, 10000]",
}


def _partition_fields(facts) -> tuple[str, ...]:
    """The RunConfig fields some partition reads, in field order."""
    used = {name for p in PARTITIONS for name in partition_arguments(p)}
    return tuple(name for name in facts.defaults if name in used)


def _fields_the_partition_ignores(cfg, facts):
    """A partition field that cfg.partition does not read must stay at its default: a value there would
    change the run id and nothing else, and is almost always meant for another partition. At the
    server, server_labeled > 0 takes the place of γ, so labeled_ratio must then stay at its default."""
    for name in _partition_fields(facts):
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
    if share and int(cfg.labeled_ratio * share + 0.5) == 0 and cfg.partition != "noniid3":
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


def _streaming(cfg, facts):
    if cfg.partition == "streaming_dirichlet" and cfg.stream_parts < 2:
        return (f"stream_parts={cfg.stream_parts}, partition='streaming_dirichlet': must be at least 2 "
                "(one part is server_dirichlet; the journal's is 10)")


def _noniid3_ratios(cfg, facts):
    """Non-IID-III: rich_clients clients label rich_labeled_ratio of their data, the others the ratio
    that makes the overall fraction γ (data.partition.noniid3_partition), which must be within [0, 1]."""
    if cfg.partition != "noniid3":
        return None
    if cfg.rich_clients > cfg.clients - 1:
        return f"rich_clients={cfg.rich_clients}, clients={cfg.clients}: must be at most clients - 1 = {cfg.clients - 1}"
    poor = ((cfg.labeled_ratio * cfg.clients - cfg.rich_clients * cfg.rich_labeled_ratio)
            / (cfg.clients - cfg.rich_clients))
    if not -1e-12 <= poor <= 1 + 1e-12:
        return (f"rich_clients={cfg.rich_clients}, rich_labeled_ratio={cfg.rich_labeled_ratio}, "
                f"labeled_ratio={cfg.labeled_ratio}, clients={cfg.clients}: leave the other "
                f"{cfg.clients - cfg.rich_clients} clients a labeled ratio of {poor:.4g}, which must be within [0, 1]")


def _flower_partitioner(cfg, facts):
    """flwr_datasets: the partitioner's call reads as one, and states clients, seed and partition_by as the run
    does (data.partition.flower.check_call); whether flwr-datasets has the class is asked when the run is built."""
    if cfg.partition != "flwr_datasets":
        return None
    if not cfg.flwr_partitioner:
        return (f"flwr_partitioner='', partition='flwr_datasets': give the Flower Datasets partitioner's call, "
                f"e.g. flwr_partitioner=\"{EXAMPLE}\"")
    try:
        check_call(cfg.flwr_partitioner, cfg.clients, cfg.seed, names=("clients", "seed"))
    except PartitionError as err:
        return str(err)


def config_rules() -> tuple[dict, tuple]:
    return dict(FIELD_RULES), (_fields_the_partition_ignores, _server_set, _classes_per_client, _per_client_sizes,
                               _unlabeled_left, _server_trains, _streaming,
                               _noniid3_ratios, _flower_partitioner)
