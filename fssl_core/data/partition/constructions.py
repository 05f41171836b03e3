"""Constructions the partitions share: the server's labeled set, shards, Dirichlet draws over
clients, labeling within clients, stream order."""
from __future__ import annotations

import numpy as np

from .checks import DirichletDrawError, PartitionError, check_alpha, check_bool, check_clients, check_fraction, check_int, check_labels, check_stream_parts, seeded_rng, where_of
from .splits import ClientSplit, Partition

# The Dirichlet partitions redraw until every client holds at least `min_client_size` samples;
# this bounds the redraws so an impossible request fails instead of looping forever.
MAX_DIRICHLET_DRAWS = 1000


EMPTY = np.empty(0, dtype=np.int64)


def server_dirichlet_split(name, labels, num_classes, num_clients, seed, dirichlet_alpha, labeled_ratio,
                      server_labeled, server_balanced, min_client_size, stream_parts) -> Partition:
    check_alpha(name, dirichlet_alpha)
    labels, rng, server, pool = server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    check_int(where_of(name), 'min_client_size', min_client_size, 1, pool.size // num_clients,
               ' (unlabeled samples // num_clients)')
    clients = dirichlet_over_clients(name, labels, pool, num_classes, num_clients,
                                      dirichlet_alpha, max(min_client_size, stream_parts), rng)
    return finalize(name, server, [(EMPTY, c) for c in clients], stream_parts, rng)


def server_first(name, labels, num_classes, num_clients, seed, labeled_ratio, server_labeled, server_balanced,
                  stream_parts) -> tuple[np.ndarray, np.random.Generator, np.ndarray, np.ndarray]:
    """The labels-at-server partitions' common start, in their order of draws: the arguments checked,
    the partition's generator, then the server's labeled set taken (labels, rng, server, the rest)."""
    labels = check_labels(name, labels, num_classes)
    check_clients(name, num_clients, labels.size)
    check_stream_parts(name, stream_parts)
    rng = seeded_rng(where_of(name), seed)
    server, pool = _take_server(name, labels, num_classes, num_clients, labeled_ratio,
                                server_labeled, server_balanced, rng)
    return labels, rng, server, pool


def _take_server(name, labels, num_classes, num_clients, labeled_ratio, server_labeled,
                 server_balanced, rng) -> tuple[np.ndarray, np.ndarray]:
    """(server indices sorted, the remaining indices sorted)."""
    n = labels.size
    if (labeled_ratio is None) == (server_labeled is None):
        raise PartitionError(
            f"partition '{name}': give exactly one of labeled_ratio (γ, the fraction of the training "
            f"set labeled at the server, FedSiam) or server_labeled (a count, FedMix N_s, FedAnchor "
            f"anchors); got labeled_ratio={labeled_ratio!r}, server_labeled={server_labeled!r}")
    check_bool(name, 'server_balanced', server_balanced)
    if labeled_ratio is not None:
        check_fraction(name, 'labeled_ratio', labeled_ratio)
        count, param, value = server_set_size(n, labeled_ratio), 'labeled_ratio', labeled_ratio
        if not 1 <= count <= n - num_clients:
            raise PartitionError(f"partition '{name}': labeled_ratio={labeled_ratio!r} gives {count} "
                             f"server samples of {n}; it must give at least 1 and leave at least "
                             f"num_clients={num_clients} unlabeled samples")
    else:
        check_int(where_of(name), 'server_labeled', server_labeled, 1, n - num_clients,
                   ' (samples - num_clients, so every client keeps an unlabeled sample)')
        count, param, value = int(server_labeled), 'server_labeled', server_labeled
    if server_balanced:
        available = np.bincount(labels, minlength=num_classes)
        quota = spread_evenly(count, num_classes, rng)
        short = np.flatnonzero(quota > available)
        if short.size:
            c = short[0]
            raise PartitionError(f"partition '{name}': {param}={value!r} with server_balanced=True needs "
                             f"{quota[c]} samples of class {c}, but labels has {available[c]}")
        server = np.concatenate([rng.choice(np.flatnonzero(labels == c), size=quota[c], replace=False)
                                 for c in range(num_classes)])
    else:
        server = rng.choice(n, size=count, replace=False)
    server = np.sort(server).astype(np.int64)
    keep = np.ones(n, dtype=bool)
    keep[server] = False
    return server, np.flatnonzero(keep).astype(np.int64)


def label_within(clients, ratios, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """Label round(ratio_k · n_k) random samples of each client's data; the rest stay unlabeled."""
    splits = []
    for data, ratio in zip(clients, ratios):
        order = rng.permutation(data)
        n_labeled = _round_half_up(ratio * order.size)
        splits.append((order[:n_labeled], order[n_labeled:]))
    return splits


def stratified_clients(labels, num_classes, num_clients, rng) -> list[np.ndarray]:
    """Each class's shuffled samples cut into K near-equal pieces; the pieces one sample longer go
    round-robin along a random client order, class after class, so client sizes differ by at most
    one (as a plain cut of the shuffled data) and every client is non-empty when N ≥ K. Every
    client's indices sorted."""
    pieces: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    order, offset = rng.permutation(num_clients), 0
    for c in range(num_classes):
        members = rng.permutation(np.flatnonzero(labels == c))
        for client, piece in zip(np.roll(order, -offset), np.array_split(members, num_clients)):
            pieces[client].append(piece)
        offset = (offset + members.size % num_clients) % num_clients
    return [np.sort(np.concatenate(p)) for p in pieces]


def label_stratified(clients, labels, ratios, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """Label round(ratio_k · n_k) random samples of client k (round half up), spread over its classes
    in proportion to their counts (largest remainders, ties in random order); the rest unlabeled."""
    splits = []
    for data, ratio in zip(clients, ratios):
        classes, counts = np.unique(labels[data], return_counts=True)
        quotas = ratio * counts
        take = np.floor(quotas).astype(np.int64)
        short = _round_half_up(ratio * data.size) - int(take.sum())
        order = rng.permutation(classes.size)
        take[order[np.argsort(-(quotas - take)[order], kind='stable')[:short]]] += 1
        chosen = [rng.permutation(data[labels[data] == c])[:n] for c, n in zip(classes, take)]
        labeled = np.concatenate(chosen) if chosen else data[:0]
        splits.append((labeled, np.setdiff1d(data, labeled)))
    return splits


def shards_of(labels, pool, num_clients, per_client, rng) -> list[np.ndarray]:
    """McMahan et al.'s shards: sort by label, cut into per_client·K shards, per_client random each."""
    order = rng.permutation(pool)
    order = order[np.argsort(labels[order], kind='stable')]
    shards = np.array_split(order, per_client * num_clients)
    owner = rng.permutation(per_client * num_clients).reshape(num_clients, per_client)
    return [np.concatenate([shards[s] for s in owner[k]]) for k in range(num_clients)]


def dirichlet_over_clients(name, labels, pool, num_classes, num_clients, alpha, min_size,
                            rng) -> list[np.ndarray]:
    """Per class, Dir(α·1_K) shares over clients with the "balance" step; see server_dirichlet."""
    pool_labels = labels[pool]
    class_sizes = np.bincount(pool_labels, minlength=num_classes)
    cap = pool.size / num_clients          # N / n_nets in the reference code
    for _ in range(MAX_DIRICHLET_DRAWS):
        counts = np.zeros((num_classes, num_clients), dtype=np.int64)
        sizes = np.zeros(num_clients, dtype=np.int64)
        for c in range(num_classes):
            share = rng.dirichlet(np.full(num_clients, float(alpha))) * (sizes < cap)
            total = share.sum()
            if not np.isfinite(total) or total <= 0:    # every open client drew 0: redraw
                break
            cuts = (np.cumsum(share / total) * class_sizes[c]).astype(np.int64)[:-1]
            counts[c] = np.diff(np.concatenate(([0], cuts, [class_sizes[c]])))
            sizes += counts[c]
        else:
            if sizes.min() >= min_size:
                break
    else:
        raise DirichletDrawError(
            f"partition '{name}': no Dirichlet draw in {MAX_DIRICHLET_DRAWS} gave every one of "
            f"num_clients={num_clients} clients at least {min_size} of the {pool.size} samples with "
            f"dirichlet_alpha={alpha!r}; lower min_client_size or num_clients, or raise dirichlet_alpha")
    return _deal_counts(labels, pool, pool_labels, counts.T, rng)


def lda_equal_sizes(labels, pool, num_classes, num_clients, alpha, rng) -> list[np.ndarray]:
    """Hsu et al.'s LDA: equal client sizes, per-client class mix q_k ~ Dir(α·1_C)."""
    pool_labels = labels[pool]
    available = np.bincount(pool_labels, minlength=num_classes)
    sizes = [part.size for part in np.array_split(np.empty(pool.size), num_clients)]
    mix = rng.dirichlet(np.full(num_classes, float(alpha)), size=num_clients)
    counts = np.zeros((num_clients, num_classes), dtype=np.int64)
    for k in range(num_clients):
        need, got = sizes[k], np.zeros(num_classes, dtype=np.int64)
        while need > 0:
            left = available - got
            weights = mix[k] * (left > 0)
            total = weights.sum()
            if not np.isfinite(total) or total <= 0:   # q_k has no mass on the classes left
                weights, total = (left > 0).astype(float), float((left > 0).sum())
            take = np.minimum(rng.multinomial(need, weights / total), left)
            got += take
            need -= int(take.sum())                     # draws beyond a class's stock are redrawn
        counts[k] = got
        available -= got
    return _deal_counts(labels, pool, pool_labels, counts, rng)


def _deal_counts(labels, pool, pool_labels, counts, rng) -> list[np.ndarray]:
    """Give client k counts[k, c] random samples of class c from pool (counts: K x C, column sums = class sizes)."""
    num_clients, num_classes = counts.shape
    parts = [[] for _ in range(num_clients)]
    for c in range(num_classes):
        members = rng.permutation(pool[pool_labels == c])
        for k, chunk in enumerate(np.split(members, np.cumsum(counts[:, c])[:-1])):
            parts[k].append(chunk)
    return [np.concatenate(p).astype(np.int64) for p in parts]


def finalize(name, server, splits, stream_parts, rng) -> Partition:
    check_stream_parts(name, stream_parts)
    clients = []
    for k, (labeled, unlabeled) in enumerate(splits):
        labeled = np.sort(np.asarray(labeled, dtype=np.int64))
        unlabeled = np.asarray(unlabeled, dtype=np.int64)
        if stream_parts == 1:
            unlabeled = np.sort(unlabeled)
        else:
            if unlabeled.size < stream_parts:
                raise PartitionError(f"partition '{name}': stream_parts={stream_parts} must be at most "
                                 f"every client's unlabeled count; client {k} has {unlabeled.size}")
            unlabeled = rng.permutation(unlabeled)      # stream order: parts are random subsets
        clients.append(ClientSplit(labeled=labeled, unlabeled=unlabeled))
    return Partition(server_labeled=np.asarray(server, dtype=np.int64), clients=tuple(clients),
                     stream_parts=int(stream_parts))


def spread_evenly(total: int, bins: int, rng) -> np.ndarray:
    """total split over bins as equally as possible; the remainder to randomly chosen bins."""
    quota = np.full(bins, total // bins, dtype=np.int64)
    quota[rng.choice(bins, size=total % bins, replace=False)] += 1
    return quota


def server_set_size(num_samples: int, labeled_ratio: float) -> int:
    """Labels-at-server with a ratio γ: round(γ·|D|) samples at the server (round half up)."""
    return _round_half_up(labeled_ratio * num_samples)


def _round_half_up(x: float) -> int:
    # 1e-9 absorbs float error such as 0.55 * 600 = 330.00000000000006 or 29.999999999999996
    return int(np.floor(x + 0.5 + 1e-9))
