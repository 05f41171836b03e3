"""Who holds which training sample: server-labeled, client-labeled and client-unlabeled splits.

Every partition is a pure function of (training labels, sizes and parameters, seed): it draws from
`np.random.default_rng(seed)` only, so the same arguments give the same index arrays on any machine.
A partition returns index arrays into the training set; labels of unlabeled samples stay in the
dataset (the engine hides them from algorithms), so nothing here copies data.

Partitions (name -> paper, where the definition is quoted in the function's docstring):

| name                | labels  | clients' data                                      | paper                  |
|---------------------|---------|----------------------------------------------------|------------------------|
| iid                 | clients | class-stratified N/K each, γ of each class labeled | FedSiam IID            |
| noniid1             | clients | 2 label-sorted shards each (labeled + unlabeled)   | FedSiam Non-IID-I      |
| noniid2             | clients | labeled as noniid1, unlabeled redistributed IID    | FedSiam Non-IID-II     |
| noniid3             | clients | as iid; 10 clients 55% labeled, 90 clients 5%      | FedSiam Non-IID-III    |
| client_dirichlet    | clients | per-class Dirichlet(α) over clients, γ labeled     | none (an extension)    |
| server_iid          | server  | random equal split, optionally class-stratified    | FedSiam; FedMix IID    |
| server_shards       | server  | 2 label-sorted shards each                         | FedSiam Non-IID        |
| server_dirichlet    | server  | per-class Dirichlet(μ) over clients, unequal sizes | FedMix non-IID         |
| server_lda          | server  | per-client Dirichlet(α) over classes, equal sizes  | FedAnchor              |
| streaming_dirichlet | server  | server_dirichlet, unlabeled cut into round parts   | FedMix journal F-MNIST |

Papers, as stored in /work/shared/papers/: FedSiam (fedsiam.md, fedsiam-latex.txt), FedMix-FedFreq
(fedmix-fedfreq.txt), FedMix-FedLoss journal version in Chinese (fedmix-fedloss-zh.txt), FedAnchor
(fedanchor.txt). Line numbers below refer to those files.

Conventions: `ClientSplit.labeled` is sorted ascending; `ClientSplit.unlabeled` is sorted ascending
unless the partition streams (stream_parts > 1), where its fixed, seeded random order defines the
stream parts. Sizes that do not divide evenly are spread "as equal as possible" the way
`np.array_split` does (the first `n % k` pieces get one more). No partition here drops samples:
server, client-labeled and client-unlabeled indices are disjoint and together cover the whole
training set (only `streaming_resplit` leaves samples out, see there).
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

PARTITIONS = (
    'iid', 'noniid1', 'noniid2', 'noniid3', 'client_dirichlet',
    'server_iid', 'server_shards', 'server_dirichlet', 'server_lda', 'streaming_dirichlet',
)

# Where each partition holds its labels: 'client' (labels-at-client, FedSiam's first scenario; the
# server holds none) or 'server' (labels-at-server: every client's data is unlabeled). An algorithm
# declares which it can use (`Algorithm.labels_at`); RunConfig checks the two agree.
LABELS_AT = {
    'iid': 'client', 'noniid1': 'client', 'noniid2': 'client', 'noniid3': 'client', 'client_dirichlet': 'client',
    'server_iid': 'server', 'server_shards': 'server', 'server_dirichlet': 'server', 'server_lda': 'server',
    'streaming_dirichlet': 'server',
}
assert tuple(LABELS_AT) == PARTITIONS

# The Dirichlet partitions redraw until every client holds at least `min_client_size` samples;
# this bounds the redraws so an impossible request fails instead of looping forever.
MAX_DIRICHLET_DRAWS = 1000


class PartitionError(ValueError):
    """Arguments a partition cannot use, or data it cannot split as asked; the message names the
    partition, the argument, its value and what is allowed."""


class DirichletDrawError(PartitionError):
    """No Dirichlet draw in MAX_DIRICHLET_DRAWS met the min_client_size rule: the arguments are valid,
    but this (μ, number of clients, data, seed) cannot be split; the explorer catches exactly this."""


@dataclass(frozen=True, eq=False)
class ClientSplit:
    labeled: np.ndarray    # int64 indices into the training set, sorted ascending
    unlabeled: np.ndarray  # int64 indices; sorted, or in stream order when the partition streams


@dataclass(frozen=True, eq=False)
class Partition:
    server_labeled: np.ndarray  # int64 indices labeled at the server, sorted; empty for labels-at-client
    clients: tuple[ClientSplit, ...]
    stream_parts: int = 1       # each client's unlabeled data is cut into this many parts; round r uses part r % P

    def __post_init__(self):
        if not isinstance(self.stream_parts, Integral) or isinstance(self.stream_parts, bool) \
                or self.stream_parts < 1:
            raise PartitionError(f'Partition.stream_parts={self.stream_parts!r}: must be an int >= 1')

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    def unlabeled_in_round(self, client: int, round: int) -> np.ndarray:
        """The unlabeled indices client `client` trains on in round `round` (0-based).

        With stream_parts == 1 this is all of the client's unlabeled data. Otherwise the client's
        unlabeled array (in its stored, seeded order) is cut into `stream_parts` contiguous parts
        as equal as possible (the first `n % P` parts one sample longer, as `np.array_split`), and
        round r uses part r % P: "每个客户端的数据被平均分为10份,每轮训练只使用其中的一份,训练10轮为1个周期"
        (each client's data is split evenly into 10 parts, each round uses one of them, 10 rounds
        make one cycle; fedmix-fedloss-zh.txt line 233).
        """
        if not isinstance(client, Integral) or not 0 <= client < len(self.clients):
            raise PartitionError(f'Partition.unlabeled_in_round: client={client!r} must be an int within '
                             f'[0, {len(self.clients) - 1}]')
        if not isinstance(round, Integral) or round < 0:
            raise PartitionError(f'Partition.unlabeled_in_round: round={round!r} must be an int >= 0')
        unlabeled = self.clients[client].unlabeled
        if self.stream_parts == 1:
            return unlabeled
        part, parts = int(round) % self.stream_parts, self.stream_parts
        base, extra = divmod(unlabeled.size, parts)
        start = part * base + min(part, extra)
        return unlabeled[start:start + base + (part < extra)]

    def counts(self, labels: np.ndarray, num_classes: int) -> dict:
        """Per-class sample counts, ready for `json.dumps`.

        `{"server": {"labeled": {"0": n, ...}}, "clients": [{"labeled": {...}, "unlabeled": {...}}, ...]}`.
        Keys are the class indices as strings ("0" .. str(num_classes - 1), every class present, zeros
        included), because JSON object keys are strings: the dict compares equal to itself after a
        json round trip. Values are Python ints.
        """
        labels = _check_labels(None, labels, num_classes, where='Partition.counts')

        def per_class(indices: np.ndarray) -> dict:
            hist = np.bincount(labels[indices], minlength=num_classes)
            return {str(c): int(v) for c, v in enumerate(hist)}

        return {
            'server': {'labeled': per_class(self.server_labeled)},
            'clients': [{'labeled': per_class(c.labeled), 'unlabeled': per_class(c.unlabeled)}
                        for c in self.clients],
        }


# ---------------------------------------------------------------------------------------------
# FedSiam, labels-at-client scenario
# ---------------------------------------------------------------------------------------------

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
    Reading (issue 19, item 3): the FedSiam authors' split (data/sampling.py, `sample` and `get_dict`
    with iid) gives every client len(class)/(K − i) samples of each class and labels round(γ·n) of
    each, deterministically in index order; ours keeps their per-class counts with a seeded random
    choice, as "randomly shuffled" asks. The alternative, a plain shuffle with the first round(γ·n_k)
    labeled, can leave a client 1-2 labeled samples of a class it holds 60 of.
    """
    name = 'iid'
    labels = _check_labels(name, labels, num_classes)
    _check_clients(name, num_clients, labels.size)
    _check_fraction(name, 'labeled_ratio', labeled_ratio)
    rng = _rng(_where(name), seed)
    splits = _label_stratified(_stratified_clients(labels, num_classes, num_clients, rng), labels,
                               np.full(num_clients, labeled_ratio), rng)
    return _finalize(name, _EMPTY, splits, stream_parts, rng)


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
    return _finalize(name, _EMPTY, splits, stream_parts, rng)


def _shard_splits(name, labels, num_classes, num_clients, seed, labeled_ratio, classes_per_client):
    """Non-IID-I's per-client (labeled, unlabeled) splits and the generator after drawing them;
    Non-IID-II starts from the same draws so that its labeled sets are Non-IID-I's."""
    labels = _check_labels(name, labels, num_classes)
    _check_clients(name, num_clients, labels.size)
    _check_fraction(name, 'labeled_ratio', labeled_ratio)
    _check_shards(name, classes_per_client, num_clients, labels.size)
    rng = _rng(_where(name), seed)
    clients = _shards(labels, np.arange(labels.size), num_clients, classes_per_client, rng)
    return _label_within(clients, np.full(num_clients, labeled_ratio), rng), rng


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
    return _finalize(name, _EMPTY, splits, stream_parts, rng)


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
    labels = _check_labels(name, labels, num_classes)
    _check_clients(name, num_clients, labels.size)
    _check_fraction(name, 'labeled_ratio', labeled_ratio)
    _check_int(_where(name), 'rich_clients', rich_clients, 0, num_clients - 1, ' (num_clients - 1)')
    _check_fraction(name, 'rich_labeled_ratio', rich_labeled_ratio, closed=True)
    poor = (labeled_ratio * num_clients - rich_clients * rich_labeled_ratio) / (num_clients - rich_clients)
    if not -1e-12 <= poor <= 1 + 1e-12:
        raise PartitionError(
            f"partition '{name}': rich_clients={rich_clients} with rich_labeled_ratio="
            f"{rich_labeled_ratio} and labeled_ratio={labeled_ratio} leaves the other "
            f"{num_clients - rich_clients} clients a labeled ratio of {poor:.4g}, which must be "
            f"within [0, 1]; change rich_labeled_ratio or labeled_ratio")
    rng = _rng(_where(name), seed)
    clients = _stratified_clients(labels, num_classes, num_clients, rng)
    ratios = np.full(num_clients, min(max(poor, 0.0), 1.0))
    ratios[rng.choice(num_clients, size=rich_clients, replace=False)] = rich_labeled_ratio
    splits = _label_stratified(clients, labels, ratios, rng)
    return _finalize(name, _EMPTY, splits, stream_parts, rng)


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
    labels = _check_labels(name, labels, num_classes)
    _check_clients(name, num_clients, labels.size)
    _check_fraction(name, 'labeled_ratio', labeled_ratio)
    _check_alpha(name, dirichlet_alpha)
    _check_int(_where(name), 'min_client_size', min_client_size, 1, labels.size // num_clients,
               ' (samples // num_clients)')
    _check_stream_parts(name, stream_parts)
    rng = _rng(_where(name), seed)
    clients = _dirichlet_over_clients(name, labels, np.arange(labels.size), num_classes,
                                      num_clients, dirichlet_alpha, min_client_size, rng)
    splits = _label_within(clients, np.full(num_clients, labeled_ratio), rng)
    return _finalize(name, _EMPTY, splits, stream_parts, rng)


# ---------------------------------------------------------------------------------------------
# Labels-at-server: FedSiam, FedMix, FedAnchor
# ---------------------------------------------------------------------------------------------

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
    _check_bool(name, 'stratified', stratified)
    labels, rng, server, pool = _server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    if stratified:
        order = rng.permutation(pool)
        order = order[np.argsort(labels[order], kind='stable')]
        owner = rng.permutation(num_clients)[np.arange(order.size) % num_clients]
        clients = [order[owner == k] for k in range(num_clients)]
    else:
        clients = np.array_split(rng.permutation(pool), num_clients)
    return _finalize(name, server, [(_EMPTY, c) for c in clients], stream_parts, rng)


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
    labels, rng, server, pool = _server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    _check_shards(name, classes_per_client, num_clients, pool.size)
    clients = _shards(labels, pool, num_clients, classes_per_client, rng)
    return _finalize(name, server, [(_EMPTY, c) for c in clients], stream_parts, rng)


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
    return _server_dirichlet(name, labels, num_classes, num_clients, seed, dirichlet_alpha,
                             labeled_ratio, server_labeled, server_balanced, min_client_size,
                             stream_parts)


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

    Construction: the LDA split of Hsu et al. 2019 as implemented by Flower's
    `flwr.dataset.utils.common.create_lda_partitions` (Qiu et al. 2022 are Flower authors):
    client sizes as equal as possible; each client k draws class proportions
    q_k ~ Dir(α·1_C) (α per class, as Flower; Hsu et al. write Dir(α·p) with p the class prior);
    clients in order 0..K−1 take their samples without replacement, class counts drawn
    multinomially from q_k, and when a class runs out its excess draws are redrawn from q_k
    renormalized over the classes that still have samples (uniformly if q_k puts no mass on them).
    Flower draws one sample at a time with the same rule (plus a 1e-5 smoothing); drawing counts in
    one multinomial and redrawing the excess is the same process in distribution, up to that
    smoothing, and is fast.
    """
    name = 'server_lda'
    _check_alpha(name, dirichlet_alpha)
    labels, rng, server, pool = _server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    clients = _lda_equal_sizes(labels, pool, num_classes, num_clients, dirichlet_alpha, rng)
    return _finalize(name, server, [(_EMPTY, c) for c in clients], stream_parts, rng)


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
    The 64,000/2,000 train/test sets come from `streaming_resplit`.
    """
    name = 'streaming_dirichlet'
    _check_int(_where(name), 'stream_parts', stream_parts, 2,
               note=' (one part is server_dirichlet; the paper uses 10)')
    return _server_dirichlet(name, labels, num_classes, num_clients, seed, dirichlet_alpha,
                             labeled_ratio, server_labeled, server_balanced, min_client_size,
                             stream_parts)


# ---------------------------------------------------------------------------------------------
# Train/test resplits (dataset level)
# ---------------------------------------------------------------------------------------------

def resplit_train_test(num_train: int, num_test: int, seed: int, *, train_size: int, test_size: int,
                       labels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Draw new train and test sets from the pooled official splits.

    Index space: [0, num_train + num_test), the official training set followed by the official
    test set. Returns (train_idx, test_idx), sorted, disjoint; the other
    num_train + num_test − train_size − test_size indices are used by neither.
    labels=None: uniform random without replacement. labels given (length num_train + num_test,
    the pooled labels): class-stratified, train_size / C and test_size / C per class (remainders
    to randomly chosen classes), C = the number of distinct labels.
    """
    who = 'resplit_train_test'
    for param, value in (('num_train', num_train), ('num_test', num_test)):
        _check_int(who, param, value, 0)
    total = num_train + num_test
    _check_int(who, 'train_size', train_size, 1, total - 1, ' (num_train + num_test - 1)')
    _check_int(who, 'test_size', test_size, 1, total - train_size,
               ' (num_train + num_test - train_size)')
    rng = _rng(who, seed)
    if labels is None:
        order = rng.permutation(total)
        return (np.sort(order[:train_size]).astype(np.int64),
                np.sort(order[train_size:train_size + test_size]).astype(np.int64))
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size != total or not np.issubdtype(labels.dtype, np.integer):
        raise PartitionError(f'{who}: labels must be a 1-D integer array of length num_train + num_test '
                         f'= {total}; got shape {labels.shape} and dtype {labels.dtype}')
    classes, available = np.unique(labels, return_counts=True)
    train_quota = _spread(train_size, classes.size, rng)
    test_quota = _spread(test_size, classes.size, rng)
    short = np.flatnonzero(train_quota + test_quota > available)
    if short.size:
        c = short[0]
        raise PartitionError(f'{who}: train_size={train_size} and test_size={test_size} stratified '
                         f'over {classes.size} classes need {train_quota[c] + test_quota[c]} '
                         f'samples of class {classes[c]}, but labels has {available[c]}')
    train, test = [], []
    for c, n_train, n_test in zip(classes, train_quota, test_quota):
        members = rng.permutation(np.flatnonzero(labels == c))
        train.append(members[:n_train])
        test.append(members[n_train:n_train + n_test])
    return np.sort(np.concatenate(train)).astype(np.int64), np.sort(np.concatenate(test)).astype(np.int64)


def streaming_resplit(num_train: int, num_test: int, seed: int, train_size: int = 64000,
                      test_size: int = 2000, *, labels: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The FedMix journal's Fashion-MNIST train/test sets: 64,000 train and 2,000 test.

    Paper (fedmix-fedloss-zh.txt line 233): "使用包括64 000个训练样本和2 000个测试样本的Fashion-MNIST
    数据集作为验证数据集" (a Fashion-MNIST dataset of 64,000 training and 2,000 test samples is used).
    That is all it says: Fashion-MNIST has 60,000 + 10,000 = 70,000 images; 64,000 exceeds the
    official training set, so some training images must come from the official test set; nothing
    says which, or what happens to the remaining 70,000 − 66,000 = 4,000 (they are left out here).
    The conference paper does the same with CIFAR-10: "56,000 training samples and 2,000 test
    samples" (fedmix-fedfreq.txt line 197) out of 50,000 + 10,000.

    Choice: pool both official splits (index space [0, num_train + num_test), training set first)
    and draw train_size and test_size samples without replacement; see `resplit_train_test`.
    Pass `labels` (the pooled labels) to stratify by class, which is what the CIFAR-10 numbers
    imply: "550 samples for each client (i.e., 55 for each class)" with 100 labeled per class
    (fedmix-fedfreq.txt line 197) needs exactly 5,600 training images of every class, which a
    uniform draw would not give. For Fashion-MNIST this gives 6,400 train and 200 test per class.
    CIFAR-10: streaming_resplit(50000, 10000, seed, train_size=56000, test_size=2000, labels=...).
    """
    return resplit_train_test(num_train, num_test, seed, train_size=train_size,
                              test_size=test_size, labels=labels)


# ---------------------------------------------------------------------------------------------
# Dispatcher
# ---------------------------------------------------------------------------------------------

_BUILDERS = {
    'iid': iid_partition,
    'noniid1': noniid1_partition,
    'noniid2': noniid2_partition,
    'noniid3': noniid3_partition,
    'client_dirichlet': client_dirichlet_partition,
    'server_iid': server_iid_partition,
    'server_shards': server_shards_partition,
    'server_dirichlet': server_dirichlet_partition,
    'server_lda': server_lda_partition,
    'streaming_dirichlet': streaming_dirichlet_partition,
}
assert tuple(_BUILDERS) == PARTITIONS

# build_partition's optional arguments and their defaults; a partition must not be handed one it
# does not use at a non-default value (that is almost always a configuration mistake).
_OPTIONAL = {
    'labeled_ratio': None, 'server_labeled': None, 'dirichlet_alpha': None,
    'classes_per_client': 2, 'stream_parts': 1, 'rich_clients': 10, 'rich_labeled_ratio': 0.55,
    'server_balanced': False, 'stratified': False, 'min_client_size': 10,
}
_SERVER = ('labeled_ratio', 'server_labeled', 'server_balanced', 'stream_parts')
_USES = {
    'iid': ('labeled_ratio', 'stream_parts'),
    'noniid1': ('labeled_ratio', 'classes_per_client', 'stream_parts'),
    'noniid2': ('labeled_ratio', 'classes_per_client', 'stream_parts'),
    'noniid3': ('labeled_ratio', 'rich_clients', 'rich_labeled_ratio', 'stream_parts'),
    'client_dirichlet': ('labeled_ratio', 'dirichlet_alpha', 'min_client_size', 'stream_parts'),
    'server_iid': _SERVER + ('stratified',),
    'server_shards': _SERVER + ('classes_per_client',),
    'server_dirichlet': _SERVER + ('dirichlet_alpha', 'min_client_size'),
    'server_lda': _SERVER + ('dirichlet_alpha',),
    'streaming_dirichlet': _SERVER + ('dirichlet_alpha', 'min_client_size'),
}


def partition_arguments(name: str) -> tuple[str, ...]:
    """The optional arguments of build_partition that partition `name` reads."""
    if name not in _USES:
        raise PartitionError(f'partition_arguments: name={name!r} must be one of {", ".join(map(repr, PARTITIONS))}')
    return _USES[name]


def build_partition(name: str, labels: np.ndarray, *, num_classes: int, num_clients: int, seed: int,
                    labeled_ratio: float | None = None, server_labeled: int | None = None,
                    dirichlet_alpha: float | None = None, classes_per_client: int = 2,
                    stream_parts: int = 1, rich_clients: int = 10, rich_labeled_ratio: float = 0.55,
                    server_balanced: bool = False, stratified: bool = False,
                    min_client_size: int = 10) -> Partition:
    """Build partition `name` (one of PARTITIONS) of the training set whose labels are `labels`.

    Dispatches to `<name>_partition` (see each for the paper's definition and the choices made).
    Arguments:
      labels             int array [N] of the training set, values in [0, num_classes)
      num_classes        C; num_clients K (FedSiam, FedMix CIFAR-10, FedAnchor: 100; FedMix F-MNIST: 10)
      seed               int >= 0; the only source of randomness (np.random.default_rng(seed))
      labeled_ratio      γ: labels-at-client, fraction of each client's data labeled (FedSiam 0.1,
                         0.15, 0.2); labels-at-server, fraction of the training set at the server
                         (FedSiam 0.01, 0.10). Labels-at-server takes this or server_labeled.
      server_labeled     labels-at-server count (FedMix N_s = 1000; FedAnchor anchors 250, 500, ...)
      server_balanced    server set drawn class-balanced (FedMix, FedAnchor: True; FedSiam: False)
      dirichlet_alpha    Dirichlet concentration (FedMix μ; FedAnchor Dir)
      classes_per_client shards per client for noniid1, noniid2, server_shards (FedSiam C′ = 2)
      rich_clients, rich_labeled_ratio   noniid3 (FedSiam: 10 clients with 55%)
      stratified         server_iid: per-class counts equal across clients (FedMix IID: True)
      min_client_size    Dirichlet partitions: redraw until every client has this many samples
      stream_parts       cut each client's unlabeled data into this many parts, one per round
                         (streaming_dirichlet needs >= 2; FedMix journal: 10); any partition may stream
    Arguments a partition does not use must stay at their defaults, else ValueError.
    """
    if name not in _BUILDERS:
        raise PartitionError(f'build_partition: name={name!r} must be one of {", ".join(map(repr, PARTITIONS))}')
    given = {'labeled_ratio': labeled_ratio, 'server_labeled': server_labeled,
             'dirichlet_alpha': dirichlet_alpha, 'classes_per_client': classes_per_client,
             'stream_parts': stream_parts, 'rich_clients': rich_clients,
             'rich_labeled_ratio': rich_labeled_ratio, 'server_balanced': server_balanced,
             'stratified': stratified, 'min_client_size': min_client_size}
    uses = _USES[name]
    for param, value in given.items():
        if param not in uses and not _same(value, _OPTIONAL[param]):
            raise PartitionError(f"partition '{name}': {param}={value!r} is not used by this partition; "
                             f"leave it at its default {_OPTIONAL[param]!r}")
    kwargs = {p: given[p] for p in uses}
    return _BUILDERS[name](labels, num_classes=num_classes, num_clients=num_clients, seed=seed,
                           **kwargs)


# ---------------------------------------------------------------------------------------------
# Constructions shared by the partitions
# ---------------------------------------------------------------------------------------------

_EMPTY = np.empty(0, dtype=np.int64)


def _server_dirichlet(name, labels, num_classes, num_clients, seed, dirichlet_alpha, labeled_ratio,
                      server_labeled, server_balanced, min_client_size, stream_parts) -> Partition:
    _check_alpha(name, dirichlet_alpha)
    labels, rng, server, pool = _server_first(name, labels, num_classes, num_clients, seed, labeled_ratio,
                                              server_labeled, server_balanced, stream_parts)
    _check_int(_where(name), 'min_client_size', min_client_size, 1, pool.size // num_clients,
               ' (unlabeled samples // num_clients)')
    clients = _dirichlet_over_clients(name, labels, pool, num_classes, num_clients,
                                      dirichlet_alpha, max(min_client_size, stream_parts), rng)
    return _finalize(name, server, [(_EMPTY, c) for c in clients], stream_parts, rng)


def _server_first(name, labels, num_classes, num_clients, seed, labeled_ratio, server_labeled, server_balanced,
                  stream_parts) -> tuple[np.ndarray, np.random.Generator, np.ndarray, np.ndarray]:
    """The labels-at-server partitions' common start, in their order of draws: the arguments checked,
    the partition's generator, then the server's labeled set taken (labels, rng, server, the rest)."""
    labels = _check_labels(name, labels, num_classes)
    _check_clients(name, num_clients, labels.size)
    _check_stream_parts(name, stream_parts)
    rng = _rng(_where(name), seed)
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
    _check_bool(name, 'server_balanced', server_balanced)
    if labeled_ratio is not None:
        _check_fraction(name, 'labeled_ratio', labeled_ratio)
        count, param, value = server_set_size(n, labeled_ratio), 'labeled_ratio', labeled_ratio
        if not 1 <= count <= n - num_clients:
            raise PartitionError(f"partition '{name}': labeled_ratio={labeled_ratio!r} gives {count} "
                             f"server samples of {n}; it must give at least 1 and leave at least "
                             f"num_clients={num_clients} unlabeled samples")
    else:
        _check_int(_where(name), 'server_labeled', server_labeled, 1, n - num_clients,
                   ' (samples - num_clients, so every client keeps an unlabeled sample)')
        count, param, value = int(server_labeled), 'server_labeled', server_labeled
    if server_balanced:
        available = np.bincount(labels, minlength=num_classes)
        quota = _spread(count, num_classes, rng)
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


def _label_within(clients, ratios, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """Label round(ratio_k · n_k) random samples of each client's data; the rest stay unlabeled."""
    splits = []
    for data, ratio in zip(clients, ratios):
        order = rng.permutation(data)
        n_labeled = _round_half_up(ratio * order.size)
        splits.append((order[:n_labeled], order[n_labeled:]))
    return splits


def _stratified_clients(labels, num_classes, num_clients, rng) -> list[np.ndarray]:
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


def _label_stratified(clients, labels, ratios, rng) -> list[tuple[np.ndarray, np.ndarray]]:
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


def _shards(labels, pool, num_clients, per_client, rng) -> list[np.ndarray]:
    """McMahan et al.'s shards: sort by label, cut into per_client·K shards, per_client random each."""
    order = rng.permutation(pool)
    order = order[np.argsort(labels[order], kind='stable')]
    shards = np.array_split(order, per_client * num_clients)
    owner = rng.permutation(per_client * num_clients).reshape(num_clients, per_client)
    return [np.concatenate([shards[s] for s in owner[k]]) for k in range(num_clients)]


def _dirichlet_over_clients(name, labels, pool, num_classes, num_clients, alpha, min_size,
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


def _lda_equal_sizes(labels, pool, num_classes, num_clients, alpha, rng) -> list[np.ndarray]:
    """Hsu et al. / Flower LDA: equal client sizes, per-client class mix q_k ~ Dir(α·1_C)."""
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


def _finalize(name, server, splits, stream_parts, rng) -> Partition:
    _check_stream_parts(name, stream_parts)
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


def _spread(total: int, bins: int, rng) -> np.ndarray:
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


def _same(value, default) -> bool:
    if default is None:
        return value is None
    if isinstance(default, bool):
        return isinstance(value, (bool, np.bool_)) and bool(value) == default
    return not isinstance(value, (bool, np.bool_)) and value == default


# ---------------------------------------------------------------------------------------------
# Argument checks: every error names the partition, the parameter, its value and what is allowed
# ---------------------------------------------------------------------------------------------

def _where(name) -> str:
    return f"partition '{name}'"


def _check_labels(name, labels, num_classes, where=None) -> np.ndarray:
    where = where or _where(name)
    if not isinstance(num_classes, Integral) or isinstance(num_classes, bool) or num_classes < 1:
        raise PartitionError(f'{where}: num_classes={num_classes!r} must be an int >= 1')
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise PartitionError(f'{where}: labels must be a non-empty 1-D integer array; got shape '
                         f'{labels.shape} and dtype {labels.dtype}')
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= num_classes:
        raise PartitionError(f'{where}: labels must lie within [0, num_classes - 1] = '
                         f'[0, {num_classes - 1}]; found values in [{low}, {high}]')
    return labels.astype(np.int64, copy=False)


def _check_clients(name, num_clients, num_samples):
    _check_int(_where(name), 'num_clients', num_clients, 1, num_samples, ' (the number of samples)')


def _check_int(where, param, value, low, high=None, note=''):
    """value must be an int within [low, high] (high=None: no upper bound); note explains high."""
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise PartitionError(f'{where}: {param}={value!r} must be an int')
    if value < low or (high is not None and value > high):
        allowed = f'>= {low}' if high is None else f'within [{low}, {high}]'
        raise PartitionError(f'{where}: {param}={value!r} must be an int {allowed}{note}')


def _check_fraction(name, param, value, closed=False):
    ok = isinstance(value, Real) and not isinstance(value, bool) and np.isfinite(value) and \
        ((0 <= value <= 1) if closed else (0 < value < 1))
    if not ok:
        interval = '[0, 1]' if closed else '(0, 1)'
        raise PartitionError(f"{_where(name)}: {param}={value!r} must be a number within {interval}")


def _check_alpha(name, alpha):
    if not isinstance(alpha, Real) or isinstance(alpha, bool) or not np.isfinite(alpha) or alpha <= 0:
        raise PartitionError(f"{_where(name)}: dirichlet_alpha={alpha!r} must be a finite number > 0")


def _check_bool(name, param, value):
    if not isinstance(value, (bool, np.bool_)):
        raise PartitionError(f"{_where(name)}: {param}={value!r} must be True or False")


def _check_stream_parts(name, stream_parts):
    _check_int(_where(name), 'stream_parts', stream_parts, 1)


def _check_shards(name, per_client, num_clients, num_samples):
    _check_int(_where(name), 'classes_per_client', per_client, 1, num_samples // num_clients,
               ' (samples // num_clients, so that no shard is empty)')


def _rng(where, seed) -> np.random.Generator:
    if not isinstance(seed, Integral) or isinstance(seed, bool) or seed < 0:
        raise PartitionError(f'{where}: seed={seed!r} must be an int >= 0')
    return np.random.default_rng(int(seed))
