"""The partitions' names, where each puts the labels, and which optional arguments each reads: what
RunConfig's rules ask (config_rules.py) without building a partition."""
from __future__ import annotations

from .checks import PartitionError

PARTITIONS = (
    'iid', 'noniid1', 'noniid2', 'noniid3', 'client_dirichlet',
    'server_iid', 'server_shards', 'server_dirichlet', 'server_lda', 'streaming_dirichlet', 'flwr_datasets',
)

# Where each partition holds its labels: 'client' (labels-at-client, FedSiam's first scenario; the
# server holds none) or 'server' (labels-at-server: every client's data is unlabeled). An algorithm
# declares which it can use (`Algorithm.labels_at`); RunConfig checks the two agree.
LABELS_AT = {
    'iid': 'client', 'noniid1': 'client', 'noniid2': 'client', 'noniid3': 'client', 'client_dirichlet': 'client',
    'server_iid': 'server', 'server_shards': 'server', 'server_dirichlet': 'server', 'server_lda': 'server',
    'streaming_dirichlet': 'server', 'flwr_datasets': 'client',
}
assert tuple(LABELS_AT) == PARTITIONS

# Partition -> the partition whose labeled split and per-client sizes it has, for the same arguments (only the
# unlabeled samples move: noniid2 redistributes noniid1's unlabeled data IID, noniid2_partition). A method that
# reads no unlabeled sample (Algorithm.reads_unlabeled) computes the same run on both, so both have one
# run identity (run_config.RunConfig.identity_hash): one computation is trained, stored and counted once.
SAME_LABELED_SPLIT = {'noniid2': 'noniid1'}


# build_partition's optional arguments and their defaults; a partition must not be handed one it
# does not use at a non-default value (that is almost always a configuration mistake).
OPTIONAL = {
    'labeled_ratio': None, 'server_labeled': None, 'dirichlet_alpha': None,
    'classes_per_client': 2, 'stream_parts': 1, 'rich_clients': 10, 'rich_labeled_ratio': 0.55,
    'server_balanced': False, 'stratified': False, 'min_client_size': 10, 'flwr_partitioner': None,
}
SERVER_ARGUMENTS = ('labeled_ratio', 'server_labeled', 'server_balanced', 'stream_parts')
USES = {
    'iid': ('labeled_ratio', 'stream_parts'),
    'noniid1': ('labeled_ratio', 'classes_per_client', 'stream_parts'),
    'noniid2': ('labeled_ratio', 'classes_per_client', 'stream_parts'),
    'noniid3': ('labeled_ratio', 'rich_clients', 'rich_labeled_ratio', 'stream_parts'),
    'client_dirichlet': ('labeled_ratio', 'dirichlet_alpha', 'min_client_size', 'stream_parts'),
    'server_iid': SERVER_ARGUMENTS + ('stratified',),
    'server_shards': SERVER_ARGUMENTS + ('classes_per_client',),
    'server_dirichlet': SERVER_ARGUMENTS + ('dirichlet_alpha', 'min_client_size'),
    'server_lda': SERVER_ARGUMENTS + ('dirichlet_alpha',),
    'streaming_dirichlet': SERVER_ARGUMENTS + ('dirichlet_alpha', 'min_client_size'),
    'flwr_datasets': ('labeled_ratio', 'flwr_partitioner', 'stream_parts'),
}


def partition_arguments(name: str) -> tuple[str, ...]:
    """The optional arguments of build_partition that partition `name` reads."""
    if name not in USES:
        raise PartitionError(f'partition_arguments: name={name!r} must be one of {", ".join(map(repr, PARTITIONS))}')
    return USES[name]
