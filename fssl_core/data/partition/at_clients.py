"""Labels-at-client partitions: FedSiam's IID and Non-IID-I/II/III, and a per-class Dirichlet
split over clients (an extension). Each labels a fraction γ of every client's data; each function's
declaration (facts and parameters) follows it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...config import COUNT, setting
from .checks import PartitionError, check_alpha, check_clients, check_fraction, check_int, check_labels, check_shards, check_stream_parts, seeded_rng, where_of
from .constructions import EMPTY, dirichlet_over_clients, finalize, label_stratified, label_within, shards_of, stratified_clients
from .declaration import EveryPartition, PartitionDeclaration, RedrawnDirichlet, Shards
from .splits import Partition


def iid_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                  labeled_ratio: float, stream_parts: int = 1) -> Partition:
    """FedSiam labels-at-client IID.

    Paper (fedsiam.md line 226; fedsiam-latex.txt line 171): "Each dataset will be randomly
    shuffled and distributed to K = 100 clients, and each client will have |D|/K instances ...
    Let γ represent the ratio of the labeled data on each client. Namely, there are |D|/K * γ
    labeled data and |D|/K * (1 − γ) unlabelled data stored on each client. We set γ = 0.1, 0.15,
    and 0.2". Line 228: "For the IID setting, both labeled and unlabeled data all have C categories."

    Done here: class-stratified. Each class's shuffled samples are cut into K pieces as equal as
    possible and dealt to the clients (the pieces one sample longer round-robin along a random
    client order), so every client holds each class in its overall proportion and |D|/K samples
    (600 on MNIST; sizes differ by at most one where K does not divide |D|); then each client
    labels round(γ·n) random samples, spread over its classes in proportion (largest remainders):
    60 on MNIST at γ = 0.1, 5 to 7 of each class.
    Reading: the FedSiam authors' split (data/sampling.py, `sample` and `get_dict`
    with iid) gives every client len(class)/(K − i) samples of each class and labels round(γ·n) of
    each, deterministically in index order; ours keeps their per-class counts with a seeded random
    choice, as "randomly shuffled" asks. The alternative, a plain shuffle with the first round(γ·n_k)
    labeled, can leave a client 1-2 labeled samples of a class it holds 60 of.
    """
    name = 'iid'
    labels = check_labels(name, labels, num_classes)
    check_clients(name, num_clients, labels.size)
    check_fraction(name, 'labeled_ratio', labeled_ratio)
    rng = seeded_rng(where_of(name), seed)
    splits = label_stratified(stratified_clients(labels, num_classes, num_clients, rng), labels,
                               np.full(num_clients, labeled_ratio), rng)
    return finalize(name, EMPTY, splits, stream_parts, rng)


IID = PartitionDeclaration("iid", iid_partition, labels_at="client", parameters=EveryPartition,
                           doc="class-stratified N/K each, γ of each class labeled", paper="FedSiam IID",
                           example=dict(labeled_ratio=0.1))


def noniid1_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                      labeled_ratio: float, classes_per_client: int = 2,
                      stream_parts: int = 1) -> Partition:
    """FedSiam labels-at-client Non-IID-I: a client's labeled and unlabeled data from 2 classes.

    Paper (fedsiam.md line 228; fedsiam-latex.txt line 173): "we denote the traditional setting as
    Non-IID-I setting, where both the labeled and unlabeled data contain 2 random categories
    (i.e., C′ = 2)", with |D|/K instances and a fraction γ labeled per client (line 226).

    Done here: McMahan et al.'s shards, the "traditional setting" the paper names. Shuffle, sort by
    label (stable, so a shard's members are a random subset of its class), cut into
    classes_per_client·K shards as equal as possible, give each client classes_per_client random
    shards, then label round(γ·n_k) random samples of the client's data. The FedSiam authors'
    released code for the follow-up FedCon (github.com/zewei-long/fedcon-pytorch, fedcon-main.py,
    `noniid`) builds its non-IID split the same way (2K shards of |D|/2K, 2 per client).
    Consequences to know: a client can draw two shards of the same class (then it has 1 class), and
    when a class size is not a multiple of the shard size a shard straddles two classes (then a
    client can have 3 or 4); with MNIST-shaped balanced data (6,000 per class, shards of 300)
    every shard is pure, so every client has at most 2 classes and exactly |D|/K samples.
    """
    name = 'noniid1'
    splits, rng = _shard_splits(name, labels, num_classes, num_clients, seed, labeled_ratio, classes_per_client)
    return finalize(name, EMPTY, splits, stream_parts, rng)


@dataclass(frozen=True)
class ShardsAtClients(Shards, EveryPartition):
    """Non-IID-I and II: γ, streaming and the shards a client gets."""


NONIID1 = PartitionDeclaration("noniid1", noniid1_partition, labels_at="client", parameters=ShardsAtClients,
                               doc="2 label-sorted shards each (labeled + unlabeled)", paper="FedSiam Non-IID-I",
                               example=dict(labeled_ratio=0.1))


def _shard_splits(name, labels, num_classes, num_clients, seed, labeled_ratio, classes_per_client):
    """Non-IID-I's per-client (labeled, unlabeled) splits and the generator after drawing them;
    Non-IID-II starts from the same draws so that its labeled sets are Non-IID-I's."""
    labels = check_labels(name, labels, num_classes)
    check_clients(name, num_clients, labels.size)
    check_fraction(name, 'labeled_ratio', labeled_ratio)
    check_shards(name, classes_per_client, num_clients, labels.size)
    rng = seeded_rng(where_of(name), seed)
    clients = shards_of(labels, np.arange(labels.size), num_clients, classes_per_client, rng)
    return label_within(clients, np.full(num_clients, labeled_ratio), rng), rng


def noniid2_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                      labeled_ratio: float, classes_per_client: int = 2,
                      stream_parts: int = 1) -> Partition:
    """FedSiam labels-at-client Non-IID-II: labeled data from 2 classes, unlabeled from all classes.

    Paper (fedsiam.md line 228; fedsiam-latex.txt line 173): "In the Non-IID-II setting, the
    labeled data have 2 categories, but the unlabeled data contain all the 10 categories."

    Done here: build `noniid1` with the same seed, keep every client's labeled set, pool all
    clients' unlabeled samples, shuffle, and hand them back in the same per-client amounts
    (|D|/K·(1−γ)), so the unlabeled data are IID and the labeled data are identical to Non-IID-I's.
    Why identical: Table 5 (fedsiam.md lines 322-323, 330, 338-339; fedsiam-latex.txt lines
    244-261) reports the same accuracies for FedAvg and FedAvg+ (which train on labeled data only)
    under Non-IID-I and Non-IID-II for every γ and dataset, e.g. 88.66/38.09/45.84 at γ = 0.10,
    which is what one labeled split shared by both settings gives.
    """
    name = 'noniid2'
    splits, rng = _shard_splits(name, labels, num_classes, num_clients, seed, labeled_ratio, classes_per_client)
    pooled = rng.permutation(np.concatenate([unl for _, unl in splits]))
    cuts = np.cumsum([unl.size for _, unl in splits])[:-1]
    splits = [(lab, unl) for (lab, _), unl in zip(splits, np.split(pooled, cuts))]
    return finalize(name, EMPTY, splits, stream_parts, rng)


NONIID2 = PartitionDeclaration("noniid2", noniid2_partition, labels_at="client", parameters=ShardsAtClients,
                               doc="labeled as noniid1, unlabeled redistributed IID", paper="FedSiam Non-IID-II",
                               example=dict(labeled_ratio=0.1), same_labeled_split="noniid1")


def noniid3_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                      labeled_ratio: float, rich_clients: int = 10, rich_labeled_ratio: float = 0.55,
                      stream_parts: int = 1) -> Partition:
    """FedSiam labels-at-client Non-IID-III: all classes everywhere, labeled ratios differ by client.

    Paper (fedsiam.md line 228; fedsiam-latex.txt line 173): "In the Non-IID-III setting, both
    labeled and unlabeled data all have the 10 categories. However, the different client will have
    different ratios of labeled data. In our experiments, 10 clients own 55% labeled data, and 90
    clients only own 5% labeled data."

    Reading: 55% and 5% are per-client labeled ratios. Then 10·0.55 + 90·0.05 = 10 = 0.10·K, i.e.
    the overall labeled fraction is 10%, and Table 5 reports Non-IID-III only for γ = 0.10
    (fedsiam.md lines 322-345: "-" for γ = 0.15 and 0.20). The other reading, "10 clients hold 55%
    of all labeled data and 90 clients 5%", sums to 60% and cannot be right.

    Generalized: `rich_clients` clients (10) label a fraction `rich_labeled_ratio` (0.55) of their
    data, and the other K − rich_clients clients label
        poor = (γ·K − rich_clients·rich_labeled_ratio) / (K − rich_clients),
    so that the overall labeled fraction is γ (0.05 for the paper's numbers). A ValueError names
    the arguments when poor falls outside [0, 1]. Data are split and labeled class-stratified as in
    `iid` (the authors' `sample` with noniid_ssl does the same); the rich clients are a seeded random
    choice of client ids. With |D| = 60,000, K = 100 and γ = 0.1: 10 clients have 330 labeled and
    90 clients have 30, 6,000 labeled in all. When ratio·n_k is not an integer each client rounds
    half up on its own, so the total can drift from γ·|D| by up to K/2.
    """
    name = 'noniid3'
    labels = check_labels(name, labels, num_classes)
    check_clients(name, num_clients, labels.size)
    check_fraction(name, 'labeled_ratio', labeled_ratio)
    check_int(where_of(name), 'rich_clients', rich_clients, 0, num_clients - 1, ' (num_clients - 1)')
    check_fraction(name, 'rich_labeled_ratio', rich_labeled_ratio, closed=True)
    poor = (labeled_ratio * num_clients - rich_clients * rich_labeled_ratio) / (num_clients - rich_clients)
    if not -1e-12 <= poor <= 1 + 1e-12:
        raise PartitionError(
            f"partition '{name}': rich_clients={rich_clients} with rich_labeled_ratio="
            f"{rich_labeled_ratio} and labeled_ratio={labeled_ratio} leaves the other "
            f"{num_clients - rich_clients} clients a labeled ratio of {poor:.4g}, which must be "
            f"within [0, 1]; change rich_labeled_ratio or labeled_ratio")
    rng = seeded_rng(where_of(name), seed)
    clients = stratified_clients(labels, num_classes, num_clients, rng)
    ratios = np.full(num_clients, min(max(poor, 0.0), 1.0))
    ratios[rng.choice(num_clients, size=rich_clients, replace=False)] = rich_labeled_ratio
    splits = label_stratified(clients, labels, ratios, rng)
    return finalize(name, EMPTY, splits, stream_parts, rng)


@dataclass(frozen=True)
class RichClients(EveryPartition):
    rich_clients: int = setting(10, f"[0, {COUNT}]",
                                "noniid3: clients with the high labeled ratio ('10 clients own 55%')")
    rich_labeled_ratio: float = setting(0.55, "[0, 1]", "noniid3: their labeled ratio; the others' follows from γ")


def _poor_ratio_within_0_1(cfg, facts):
    """RunConfig's side of noniid3's rule: rich_clients clients label rich_labeled_ratio of their data, the
    others the ratio that makes the overall fraction γ, which must be within [0, 1]."""
    if cfg.rich_clients > cfg.clients - 1:
        return (f"rich_clients={cfg.rich_clients}, clients={cfg.clients}: must be at most clients - 1 = "
                f"{cfg.clients - 1}")
    poor = ((cfg.labeled_ratio * cfg.clients - cfg.rich_clients * cfg.rich_labeled_ratio)
            / (cfg.clients - cfg.rich_clients))
    if not -1e-12 <= poor <= 1 + 1e-12:
        return (f"rich_clients={cfg.rich_clients}, rich_labeled_ratio={cfg.rich_labeled_ratio}, "
                f"labeled_ratio={cfg.labeled_ratio}, clients={cfg.clients}: leave the other "
                f"{cfg.clients - cfg.rich_clients} clients a labeled ratio of {poor:.4g}, which must be within [0, 1]")


NONIID3 = PartitionDeclaration("noniid3", noniid3_partition, labels_at="client", parameters=RichClients,
                               doc="as iid; 10 clients 55% labeled, 90 clients 5%", paper="FedSiam Non-IID-III",
                               example=dict(labeled_ratio=0.2, rich_clients=1, rich_labeled_ratio=0.3),
                               gamma_per_client=False, checks=(_poor_ratio_within_0_1,))


def client_dirichlet_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                               labeled_ratio: float, dirichlet_alpha: float,
                               min_client_size: int = 10, stream_parts: int = 1) -> Partition:
    """Labels-at-client with Dirichlet label skew. Not a setting of the three papers: an extension.

    The whole training set is split over clients with the per-class Dirichlet construction of
    `server_dirichlet` (see there: Dir(α·1_K) over clients for each class, the "balance" step and
    redraws until every client has `min_client_size` samples), then round(γ·n_k) random samples of
    each client are labeled, as in FedSiam's labels-at-client scenario (fedsiam.md line 226).
    """
    name = 'client_dirichlet'
    labels = check_labels(name, labels, num_classes)
    check_clients(name, num_clients, labels.size)
    check_fraction(name, 'labeled_ratio', labeled_ratio)
    check_alpha(name, dirichlet_alpha)
    check_int(where_of(name), 'min_client_size', min_client_size, 1, labels.size // num_clients,
               ' (samples // num_clients)')
    check_stream_parts(name, stream_parts)
    rng = seeded_rng(where_of(name), seed)
    clients = dirichlet_over_clients(name, labels, np.arange(labels.size), num_classes,
                                      num_clients, dirichlet_alpha, min_client_size, rng)
    splits = label_within(clients, np.full(num_clients, labeled_ratio), rng)
    return finalize(name, EMPTY, splits, stream_parts, rng)


@dataclass(frozen=True)
class DirichletAtClients(RedrawnDirichlet, EveryPartition):
    """client_dirichlet: γ, streaming and the Dirichlet draw over clients."""


CLIENT_DIRICHLET = PartitionDeclaration(
    "client_dirichlet", client_dirichlet_partition, labels_at="client", parameters=DirichletAtClients,
    doc="per-class Dirichlet(α) over clients, γ labeled", paper="none (an extension)",
    example=dict(labeled_ratio=0.1, dirichlet_alpha=0.5, min_client_size=1))
