"""Labels-at-server partitions (FedSiam's second scenario, FedMix, FedAnchor): the server holds
the labeled set, every client's data is unlabeled. Each function's declaration (facts and parameters)
follows it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...config import setting
from .checks import check_alpha, check_bool, check_int, check_shards, where_of
from .constructions import EMPTY, finalize, lda_equal_sizes, server_dirichlet_split, server_first, shards_of
from .declaration import AtServer, Dirichlet, PartitionDeclaration, RedrawnDirichlet, Shards
from .splits import Partition


def server_iid_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                         labeled_ratio: float | None = None, server_labeled: int | None = None,
                         server_balanced: bool = False, stratified: bool = False,
                         stream_parts: int = 1) -> Partition:
    """Labels at the server, unlabeled data split IID over the clients.

    FedSiam (fedsiam.md line 230; fedsiam-latex.txt line 175): "each dataset will be randomly
    shuffled into two parts, i.e., labeled and unlabeled data. Let γ represent the ratio of the
    labeled data on the entire dataset. There are |D| * γ labeled data at the server side, and
    |D| * (1 − γ) unlabelled data are distributed to clients ... each client has |D|*(1−γ)/K
    unlabelled instances. We set γ = 0.01 and 0.10". Use labeled_ratio=γ, server_balanced=False.

    FedMix (fedmix-fedfreq.txt line 197; fedmix-fedloss-zh.txt line 231): "The training set
    includes 55,000 unlabeled samples and 1,000 labeled samples ... The unlabeled samples are
    equally distributed to 100 clients ..., of which there are 550 samples for each client (i.e.,
    55 for each class, and 10 classes in total). Similarly, the labeled samples have a total of
    1,000 and contain 10 classes on the server, of which there are 100 samples in each class."
    Use server_labeled=1000 (N_s, line 201), server_balanced=True, stratified=True.

    FedAnchor's IID setting is Dir = 1000 (fedanchor.txt line 162): use `server_lda` for it.

    Server: labeled_ratio γ gives round(γ·|D|) samples, server_labeled gives the count itself;
    give exactly one. server_balanced=False draws them uniformly at random; True draws
    server_labeled / C per class (the remainder, if any, to randomly chosen classes).
    Clients: stratified=False cuts the shuffled remainder into K pieces as equal as possible;
    stratified=True deals each class round-robin so that every client's per-class count differs
    from any other's by at most one (exactly 55 per class for FedMix's CIFAR-10 numbers).
    """
    name = 'server_iid'
    check_bool(name, 'stratified', stratified)
    labels, rng, server, pool = server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    if stratified:
        order = rng.permutation(pool)
        order = order[np.argsort(labels[order], kind='stable')]
        owner = rng.permutation(num_clients)[np.arange(order.size) % num_clients]
        clients = [order[owner == k] for k in range(num_clients)]
    else:
        clients = np.array_split(rng.permutation(pool), num_clients)
    return finalize(name, server, [(EMPTY, c) for c in clients], stream_parts, rng)


@dataclass(frozen=True)
class StratifiedAtServer(AtServer):
    stratified: bool = setting(False, doc="server_iid: equal per-class counts on every client (FedMix IID)")


SERVER_IID = PartitionDeclaration(
    "server_iid", server_iid_partition, labels_at="server", parameters=StratifiedAtServer,
    doc="random equal split, optionally class-stratified", paper="FedSiam; FedMix IID",
    example=dict(server_labeled=12, server_balanced=True, stratified=True))


def server_shards_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                            labeled_ratio: float | None = None, server_labeled: int | None = None,
                            server_balanced: bool = False, classes_per_client: int = 2,
                            stream_parts: int = 1) -> Partition:
    """FedSiam labels-at-server Non-IID: each client's unlabeled data from 2 random classes.

    Paper (fedsiam.md line 232; fedsiam-latex.txt line 177): "In the Non-IID setting, the labeled
    data on the server have all the 10 categories, but each client only contains 2 random
    categories (i.e., C′ = 2) of unlabeled data", with the server/client sizes of `server_iid`.

    Done here: the server set as in `server_iid` (FedSiam: labeled_ratio=γ, random), then the
    remaining samples are cut into classes_per_client·K label-sorted shards and each client gets
    classes_per_client random shards, as in `noniid1` (see its docstring for the shard caveats).
    The FedSiam authors' FedCon code (zewei-long/fedcon-pytorch, fedcon-main.py `noniid`) does the
    labels-at-server non-IID split with these shards too; it draws the labeled set from the whole
    training set and removes it from the clients afterwards, which leaves clients unequal, whereas
    this function follows the paper's text: labeled first, then |D|(1−γ)/K per client.
    """
    name = 'server_shards'
    labels, rng, server, pool = server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    check_shards(name, classes_per_client, num_clients, pool.size)
    clients = shards_of(labels, pool, num_clients, classes_per_client, rng)
    return finalize(name, server, [(EMPTY, c) for c in clients], stream_parts, rng)


@dataclass(frozen=True)
class ShardsAtServer(Shards, AtServer):
    """server_shards: the server's set and the shards a client gets."""


SERVER_SHARDS = PartitionDeclaration("server_shards", server_shards_partition, labels_at="server",
                                     parameters=ShardsAtServer, doc="2 label-sorted shards each",
                                     paper="FedSiam Non-IID", example=dict(labeled_ratio=0.05))


def server_dirichlet_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                               dirichlet_alpha: float, labeled_ratio: float | None = None,
                               server_labeled: int | None = None, server_balanced: bool = False,
                               min_client_size: int = 10, stream_parts: int = 1) -> Partition:
    """FedMix non-IID: server labeled set, unlabeled clients by per-class Dirichlet(μ) over clients.

    Paper (fedmix-fedfreq.txt lines 179-184; fedmix-fedloss-zh.txt lines 216-221): "we introduce
    the Dirchlet distribution function [40, 41] ... we generate data distributions of different
    non-IID levels by adjusting the parameter (i.e., μ) ... Θ ~ Dir(μ1, ..., μc) ... (where μ = μ1 =
    ... = μc), and p_k(φ_c) denotes the proportion of the c-th class data in all data of the
    client." Line 199: "we simulate quantity imbalance and class imbalance the local client data.
    In particular, we make each client hold a different number of training samples. For example,
    some customers have 580 samples, while some customers have less than 50 samples." The journal
    (line 231) uses μ = 0.1 for all non-IID runs: "每个客户端数据的数量和类别都是不平衡的" (both the
    amount and the classes of each client's data are unbalanced); the conference paper sweeps
    μ ∈ {0.1, 1, 10, 100} (line 219). Server: N_s = 1000, 100 per class (lines 197, 201).

    Construction: Eq. 11 reads as a per-client distribution over classes, but that construction
    (Hsu et al. 2019, reference [41]; `server_lda` here) gives every client the same number of
    samples, contradicting the quantity imbalance of line 199. The construction that yields both
    imbalances is the "hetero-dir" split of reference [40] (Yurochkin et al. 2019; their code
    github.com/IBM/probabilistic-federated-neural-matching, experiment.py `partition_data`), used
    in this form by FedMA, NIID-Bench and many FL repositories, which is implemented here:
      for each class c = 0..C−1 in order: p ~ Dir(μ·1_K) over clients; p_k := 0 for every client
      that already holds ≥ N/K samples (the reference's "Balance" step); renormalize; cut the
      shuffled class-c samples at int(cumsum(p)·n_c);
      redraw everything until every client holds ≥ min_client_size samples (the reference uses
      10), at most MAX_DIRICHLET_DRAWS times, else a DirichletDrawError (a ValueError) naming the arguments.
    The redraws use the same seeded generator, so the result is still a function of the seed.
    """
    name = 'server_dirichlet'
    return server_dirichlet_split(name, labels, num_classes, num_clients, seed, dirichlet_alpha,
                             labeled_ratio, server_labeled, server_balanced, min_client_size,
                             stream_parts)


@dataclass(frozen=True)
class DirichletAtServer(RedrawnDirichlet, AtServer):
    """server_dirichlet, streaming_dirichlet: the server's set and the Dirichlet draw over clients."""


SERVER_DIRICHLET = PartitionDeclaration(
    "server_dirichlet", server_dirichlet_partition, labels_at="server", parameters=DirichletAtServer,
    doc="per-class Dirichlet(μ) over clients, unequal sizes", paper="FedMix non-IID",
    example=dict(server_labeled=12, server_balanced=True, dirichlet_alpha=0.5, min_client_size=1))


def server_lda_partition(labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                         dirichlet_alpha: float, labeled_ratio: float | None = None,
                         server_labeled: int | None = None, server_balanced: bool = False,
                         stream_parts: int = 1) -> Partition:
    """FedAnchor: labeled anchor set at the server, clients by LDA with equal client sizes.

    Paper (fedanchor.txt line 162): "The training set is randomly split into labeled anchor data
    and unlabeled clients' data ... we set the number of labeled anchor data samples for
    CIFAR-10/100 and SVHN datasets to be {250, 500, 5000}, {2500, 10000} and {250, 1000}
    respectively, according to popular SSL setups (Sohn et al., 2020; Berthelot et al., 2019). To
    simulate a realistic cross-device FL environment using the rest of the data, we generate
    IID/non-IID versions of datasets based on actual class labels using Latent Dirichlet Allocation
    (LDA) with coefficient Dir (Qiu et al., 2022; Reddi et al., 2021) ... the datasets are randomly
    partitioned into 100 shards with Dir = {1000, 0.1} for IID and non-IID settings". Line 168:
    "a minimal number of anchor data samples (e.g., 25 samples per label)" (250 anchors / 10
    classes), i.e. class-balanced as in FixMatch: use server_labeled=250 (or 500, 5000, ...) and
    server_balanced=True. Lines 51 and 58: "For the CIFAR10 dataset, every client has 500 data
    samples after the partition" under Dir = 0.1, so client sizes are equal.

    Construction: the LDA split of Hsu et al. 2019 as Flower uses it (Qiu et al. 2022 are Flower
    authors): client sizes as equal as possible; each client k draws class proportions
    q_k ~ Dir(α·1_C) (α per class, as Flower; Hsu et al. write Dir(α·p) with p the class prior);
    clients in order 0..K−1 take their samples without replacement, class counts drawn
    multinomially from q_k, and when a class runs out its excess draws are redrawn from q_k
    renormalized over the classes that still have samples (uniformly if q_k puts no mass on them).
    Flower Datasets' `flwr_datasets.partitioner.InnerDirichletPartitioner` (partition_sizes equal,
    alpha=α) draws q_k likewise, then one sample at a time for a client picked uniformly among those
    not yet full, with the same renormalization: its clients fill side by side, not in order, so the
    two processes differ only once a class runs out, in which clients then get the classes left.
    """
    name = 'server_lda'
    check_alpha(name, dirichlet_alpha)
    labels, rng, server, pool = server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    clients = lda_equal_sizes(labels, pool, num_classes, num_clients, dirichlet_alpha, rng)
    return finalize(name, server, [(EMPTY, c) for c in clients], stream_parts, rng)


@dataclass(frozen=True)
class LdaAtServer(Dirichlet, AtServer):
    """server_lda: the server's set and each client's Dirichlet mix of classes (equal sizes: no redraw)."""


SERVER_LDA = PartitionDeclaration(
    "server_lda", server_lda_partition, labels_at="server", parameters=LdaAtServer,
    doc="per-client Dirichlet(α) over classes, equal sizes", paper="FedAnchor",
    example=dict(server_labeled=12, server_balanced=True, dirichlet_alpha=0.5))


def streaming_dirichlet_partition(labels: np.ndarray, *, num_classes: int, num_clients: int,
                                  seed: int, dirichlet_alpha: float, stream_parts: int,
                                  labeled_ratio: float | None = None,
                                  server_labeled: int | None = None, server_balanced: bool = False,
                                  min_client_size: int = 10) -> Partition:
    """FedMix journal's streaming non-IID Fashion-MNIST: `server_dirichlet`, then streamed.

    Paper (fedmix-fedloss-zh.txt line 233): "数据集2为流式non-IID的Fashion-MNIST。使用包括64 000个训练样本
    和2 000个测试样本的Fashion-MNIST数据集作为验证数据集。训练集包括63 000个无标签的样本和1 000个标签的样本,
    其中前者不平衡地分布在10个客户端上,后者分布在服务器上。实验同样引入Dirchlet分布函数且参数μ=0.1。每个客户端
    的数据被平均分为10份,每轮训练只使用其中的一份,训练10轮为1个周期。将此设置称为流式non-IID。同时,实验设定客户端
    参与率F=100%" — Dataset 2 is streaming non-IID Fashion-MNIST: 64,000 training and 2,000 test
    samples; the training set has 63,000 unlabeled samples, distributed unevenly over 10 clients,
    and 1,000 labeled samples on the server; Dirichlet with μ = 0.1; each client's data is split
    evenly into 10 parts, each round uses only one part, 10 rounds make a cycle; participation
    F = 100%. N_s = 1,000 (line 235).

    Paper values: num_clients=10, server_labeled=1000, dirichlet_alpha=0.1, stream_parts=10.
    The journal does not say whether the 1,000 are class-balanced for Fashion-MNIST; its CIFAR-10
    set is ("其中每个类别有100个样本", 100 per class, line 231), so server_balanced=True is the
    consistent choice. Clients are split exactly as `server_dirichlet`, except that every client
    must hold at least max(min_client_size, stream_parts) samples so no part is empty. Each
    client's unlabeled array is stored in a seeded random order and cut into stream_parts
    contiguous, near-equal parts: the parts are random subsets of the client's data, disjoint,
    covering it, and round r uses part r % stream_parts (`Partition.unlabeled_in_round`).
    The 64,000/2,000 train/test sets come from `resplit_train_test`.
    """
    name = 'streaming_dirichlet'
    check_int(where_of(name), 'stream_parts', stream_parts, 2,
               note=' (one part is server_dirichlet; the paper uses 10)')
    return server_dirichlet_split(name, labels, num_classes, num_clients, seed, dirichlet_alpha,
                             labeled_ratio, server_labeled, server_balanced, min_client_size,
                             stream_parts)


def _two_parts_or_more(cfg, facts):
    if cfg.stream_parts < 2:
        return (f"stream_parts={cfg.stream_parts}, partition='streaming_dirichlet': must be at least 2 "
                "(one part is server_dirichlet; the journal's is 10)")


STREAMING_DIRICHLET = PartitionDeclaration(
    "streaming_dirichlet", streaming_dirichlet_partition, labels_at="server", parameters=DirichletAtServer,
    doc="server_dirichlet, unlabeled cut into round parts", paper="FedMix journal F-MNIST",
    example=dict(server_labeled=12, server_balanced=True, dirichlet_alpha=0.5, min_client_size=1, stream_parts=3),
    checks=(_two_parts_or_more,))
