"""Partitions are checked on their defining properties: disjoint, complete, the paper's sizes,
classes per client, server balance, Dirichlet concentration, streaming parts, seeding, errors. The checks
of every partition take their cases from the registry (each declaration's `example`), so a partition
registered from outside the package is checked by them too (tests/test_extending.py)."""
import importlib.util
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fssl_core.data.partition import (
    PARTITIONS, ClientSplit, Partition, build_partition, resplit_train_test,
)


def balanced_labels(num_classes: int, per_class: int, seed: int = 0) -> np.ndarray:
    """per_class samples of each class, in a shuffled order (as a real training set)."""
    labels = np.repeat(np.arange(num_classes, dtype=np.int64), per_class)
    return np.random.default_rng(seed).permutation(labels)


SMALL = balanced_labels(10, 60)          # 600 samples
K_SMALL = 10
# flwr_datasets builds a Flower Datasets partitioner: without the [flower] extra its cases are skipped
HAVE_FLOWER = importlib.util.find_spec('flwr_datasets') is not None
EVERY = [pytest.param(name, marks=pytest.mark.skipif(name == 'flwr_datasets' and not HAVE_FLOWER,
                                                     reason='needs flwr-datasets')) for name in PARTITIONS]

MNIST = balanced_labels(10, 6000)        # shaped like MNIST's 60,000 training labels


def small(name: str, seed: int = 0, **overrides) -> Partition:
    """Partition `name` of SMALL over K_SMALL clients, with its declaration's example arguments."""
    kwargs = dict(num_classes=10, num_clients=K_SMALL, seed=seed, **PARTITIONS[name].example)
    kwargs.update(overrides)
    return build_partition(name, SMALL, **kwargs)


def every_index(p: Partition) -> np.ndarray:
    return np.concatenate([p.server_labeled] + [a for c in p.clients for a in (c.labeled, c.unlabeled)])


def assert_disjoint_and_complete(p: Partition, n: int) -> None:
    indices = every_index(p)
    assert indices.dtype == np.int64
    assert np.unique(indices).size == indices.size, 'an index is used twice'
    np.testing.assert_array_equal(np.sort(indices), np.arange(n))


def classes(labels: np.ndarray, indices: np.ndarray) -> set:
    return set(np.unique(labels[indices]).tolist())


# ---------------------------------------------------------------- every partition

@pytest.mark.parametrize('name', EVERY)
def test_disjoint_complete_and_sorted(name):
    p = small(name)
    assert len(p.clients) == K_SMALL
    assert_disjoint_and_complete(p, SMALL.size)
    assert np.all(np.diff(p.server_labeled) > 0)
    for c in p.clients:
        assert np.all(np.diff(c.labeled) > 0)
        if p.stream_parts == 1:
            assert np.all(np.diff(c.unlabeled) > 0)


@pytest.mark.parametrize('name', EVERY)
def test_same_seed_same_arrays_other_seed_other_arrays(name):
    a, b, c = small(name, seed=3), small(name, seed=3), small(name, seed=4)
    np.testing.assert_array_equal(a.server_labeled, b.server_labeled)
    for ca, cb in zip(a.clients, b.clients):
        np.testing.assert_array_equal(ca.labeled, cb.labeled)
        np.testing.assert_array_equal(ca.unlabeled, cb.unlabeled)
    assert any(not np.array_equal(ca.unlabeled, cc.unlabeled) for ca, cc in zip(a.clients, c.clients))


@pytest.mark.parametrize('name', EVERY)
@settings(max_examples=8, deadline=None)
@given(class_sizes=st.lists(st.integers(20, 50), min_size=3, max_size=6),
       num_clients=st.integers(2, 6), seed=st.integers(0, 2**32 - 1))
def test_disjoint_and_complete_on_unbalanced_classes(name, class_sizes, num_clients, seed):
    labels = np.random.default_rng(seed).permutation(
        np.repeat(np.arange(len(class_sizes)), class_sizes))
    p = build_partition(name, labels, num_classes=len(class_sizes), num_clients=num_clients,
                        seed=seed, **PARTITIONS[name].example)
    assert_disjoint_and_complete(p, labels.size)
    assert all(c.labeled.size + c.unlabeled.size >= 1 for c in p.clients)


@pytest.mark.parametrize('name', EVERY)
def test_labels_sit_where_the_partition_declares_them(name):
    p = small(name)
    client_labeled = sum(c.labeled.size for c in p.clients)
    if PARTITIONS[name].labels_at == 'server':
        assert p.server_labeled.size > 0 and client_labeled == 0
    else:
        assert p.server_labeled.size == 0 and client_labeled > 0


@pytest.mark.parametrize('name', EVERY)
def test_a_parameter_the_partition_does_not_declare_is_refused_naming_what_it_reads(name):
    reads = PARTITIONS[name].reads
    with pytest.raises(ValueError, match=re.escape(f"partition '{name}': no_such_parameter=1 is not used by this "
                                                   f"partition; it reads {', '.join(reads)}")):
        small(name, no_such_parameter=1)


# ---------------------------------------------------------------- FedSiam labels-at-client

def test_tiny_noniid1_by_eye():
    # 4 classes x 10 samples, 4 clients, 8 pure shards of 5: each client 10 samples, 2 labeled
    labels = np.repeat(np.arange(4), 10)
    p = build_partition('noniid1', labels, num_classes=4, num_clients=4, seed=0, labeled_ratio=0.2)
    assert_disjoint_and_complete(p, 40)
    for c in p.clients:
        assert (c.labeled.size, c.unlabeled.size) == (2, 8)
        assert len(classes(labels, np.concatenate([c.labeled, c.unlabeled]))) <= 2


@pytest.mark.parametrize('gamma, n_labeled', [(0.1, 60), (0.15, 90), (0.2, 120)])
def test_iid_mnist_sizes(gamma, n_labeled):
    p = build_partition('iid', MNIST, num_classes=10, num_clients=100, seed=0, labeled_ratio=gamma)
    assert_disjoint_and_complete(p, 60000)
    assert p.server_labeled.size == 0
    assert {(c.labeled.size, c.unlabeled.size) for c in p.clients} == {(n_labeled, 600 - n_labeled)}


def test_noniid1_mnist_two_classes_in_labeled_and_unlabeled():
    p = build_partition('noniid1', MNIST, num_classes=10, num_clients=100, seed=0, labeled_ratio=0.1)
    assert_disjoint_and_complete(p, 60000)
    for c in p.clients:
        assert (c.labeled.size, c.unlabeled.size) == (60, 540)
        assert len(classes(MNIST, np.concatenate([c.labeled, c.unlabeled]))) <= 2


def test_noniid2_mnist_labeled_from_noniid1_unlabeled_from_all_classes():
    p1 = build_partition('noniid1', MNIST, num_classes=10, num_clients=100, seed=5, labeled_ratio=0.1)
    p2 = build_partition('noniid2', MNIST, num_classes=10, num_clients=100, seed=5, labeled_ratio=0.1)
    assert_disjoint_and_complete(p2, 60000)
    for c1, c2 in zip(p1.clients, p2.clients):
        np.testing.assert_array_equal(c1.labeled, c2.labeled)   # FedSiam Table 5: same FedAvg numbers
        assert (c2.labeled.size, c2.unlabeled.size) == (60, 540)
        assert len(classes(MNIST, c2.labeled)) <= 2
        assert classes(MNIST, c2.unlabeled) == set(range(10))


def test_noniid3_mnist_ten_rich_clients():
    p = build_partition('noniid3', MNIST, num_classes=10, num_clients=100, seed=0, labeled_ratio=0.1)
    assert_disjoint_and_complete(p, 60000)
    n_labeled = sorted(c.labeled.size for c in p.clients)
    assert n_labeled == [30] * 90 + [330] * 10
    assert all(c.labeled.size + c.unlabeled.size == 600 for c in p.clients)
    assert sum(n_labeled) == 6000                                # overall γ = 10%
    assert all(classes(MNIST, c.unlabeled) == set(range(10)) for c in p.clients)


def test_client_dirichlet_labels_each_client():
    p = small('client_dirichlet', min_client_size=10)
    for c in p.clients:
        n = c.labeled.size + c.unlabeled.size
        assert n >= 10 and c.labeled.size == int(np.floor(0.1 * n + 0.5 + 1e-9))


# ---------------------------------------------------------------- labels at the server

def test_server_iid_fedsiam_mnist_sizes():
    p = build_partition('server_iid', MNIST, num_classes=10, num_clients=100, seed=0, labeled_ratio=0.01)
    assert_disjoint_and_complete(p, 60000)
    assert p.server_labeled.size == 600
    assert {(c.labeled.size, c.unlabeled.size) for c in p.clients} == {(0, 594)}


def test_server_shards_fedsiam_mnist_sizes_and_two_classes():
    # balanced server set: 5,400 left per class = 20 pure shards of 270, so <= 2 classes per client
    p = build_partition('server_shards', MNIST, num_classes=10, num_clients=100, seed=0,
                        labeled_ratio=0.1, server_balanced=True)
    assert_disjoint_and_complete(p, 60000)
    assert p.server_labeled.size == 6000
    for c in p.clients:
        assert c.unlabeled.size == 540
        assert len(classes(MNIST, c.unlabeled)) <= 2
    assert classes(MNIST, p.server_labeled) == set(range(10))


def test_fedmix_cifar10_iid_100_per_class_at_server_55_per_class_per_client():
    labels = balanced_labels(10, 5600)                                   # FedMix's 56,000 training samples
    p = build_partition('server_iid', labels, num_classes=10, num_clients=100, seed=0,
                        server_labeled=1000, server_balanced=True, stratified=True)
    assert_disjoint_and_complete(p, 56000)
    counts = p.counts(labels, 10)
    assert counts['server']['labeled'] == {str(c): 100 for c in range(10)}
    assert all(c['unlabeled'] == {str(k): 55 for k in range(10)} for c in counts['clients'])


def test_fedanchor_lda_25_anchors_per_class_and_equal_clients():
    labels = balanced_labels(10, 5000)                                   # CIFAR-10's 50,000
    p = build_partition('server_lda', labels, num_classes=10, num_clients=100, seed=0,
                        server_labeled=250, server_balanced=True, dirichlet_alpha=0.1)
    assert_disjoint_and_complete(p, 50000)
    assert np.bincount(labels[p.server_labeled], minlength=10).tolist() == [25] * 10
    assert sorted(c.unlabeled.size for c in p.clients) == [497] * 50 + [498] * 50


def test_server_random_count():
    p = small('server_iid', server_labeled=37)
    assert p.server_labeled.size == 37
    p = small('server_iid', server_labeled=None, labeled_ratio=0.25)
    assert p.server_labeled.size == 150


@pytest.mark.parametrize('name', ['server_dirichlet', 'server_lda', 'client_dirichlet'])
def test_smaller_alpha_concentrates_clients_on_fewer_classes(name):
    labels = balanced_labels(10, 600)
    mean_classes = []
    for alpha in (100.0, 1.0, 0.1):
        kwargs = dict(dirichlet_alpha=alpha)
        if name == 'client_dirichlet':
            kwargs['labeled_ratio'] = 0.1
        else:
            kwargs.update(server_labeled=100, server_balanced=True)
        p = build_partition(name, labels, num_classes=10, num_clients=10, seed=0, **kwargs)
        assert_disjoint_and_complete(p, labels.size)
        per_client = []
        for c in p.clients:
            hist = np.bincount(labels[np.concatenate([c.labeled, c.unlabeled])], minlength=10)
            per_client.append(np.sum(hist > 0.01 * hist.sum()))     # classes above 1% of the client
        mean_classes.append(np.mean(per_client))
    assert mean_classes[0] > mean_classes[1] > mean_classes[2], mean_classes


def test_dirichlet_min_client_size_and_impossible_request():
    p = small('server_dirichlet', dirichlet_alpha=0.05, min_client_size=20)
    assert min(c.unlabeled.size for c in p.clients) >= 20
    # one class of 99 unlabeled samples over 3 clients with 33 each needs an almost exactly even
    # Dir(0.01) draw, which 1,000 draws practically never give
    with pytest.raises(ValueError, match=re.escape(
            "partition 'server_dirichlet': no Dirichlet draw in 1000 gave every one of num_clients=3 "
            "clients at least 33 of the 99 samples with dirichlet_alpha=0.01")):
        build_partition('server_dirichlet', np.zeros(100, np.int64), num_classes=1, num_clients=3,
                        seed=0, server_labeled=1, dirichlet_alpha=0.01, min_client_size=33)


# ---------------------------------------------------------------- streaming

def test_unlabeled_in_round_by_eye():
    p = Partition(server_labeled=np.empty(0, np.int64),
                  clients=(ClientSplit(labeled=np.empty(0, np.int64),
                                       unlabeled=np.array([5, 1, 7, 3, 9])),),
                  stream_parts=2)
    assert p.unlabeled_in_round(0, 0).tolist() == [5, 1, 7]
    assert p.unlabeled_in_round(0, 1).tolist() == [3, 9]
    assert p.unlabeled_in_round(0, 4).tolist() == [5, 1, 7]
    whole = Partition(server_labeled=p.server_labeled, clients=p.clients)
    assert whole.unlabeled_in_round(0, 7).tolist() == [5, 1, 7, 3, 9]


@settings(max_examples=50, deadline=None)
@given(size=st.integers(0, 60), parts=st.integers(1, 12), shift=st.integers(0, 5))
def test_unlabeled_in_round_parts_partition_the_array(size, parts, shift):
    unlabeled = np.arange(100, 100 + size)[::-1].copy()
    p = Partition(server_labeled=np.empty(0, np.int64),
                  clients=(ClientSplit(labeled=np.empty(0, np.int64), unlabeled=unlabeled),),
                  stream_parts=parts)
    chunks = [p.unlabeled_in_round(0, r + shift * parts) for r in range(parts)]
    np.testing.assert_array_equal(np.concatenate(chunks), unlabeled)   # contiguous, in stored order
    assert [len(c) for c in chunks] == [len(c) for c in np.array_split(unlabeled, parts)]


@pytest.mark.parametrize('name, parts', [('streaming_dirichlet', 3), ('streaming_dirichlet', 7),
                                         ('iid', 4)])
def test_stream_parts_are_disjoint_cover_and_cycle(name, parts):
    p = small(name, stream_parts=parts)
    for k, c in enumerate(p.clients):
        chunks = [p.unlabeled_in_round(k, r) for r in range(parts)]
        joined = np.concatenate(chunks)
        assert joined.size == np.unique(joined).size
        np.testing.assert_array_equal(np.sort(joined), np.sort(c.unlabeled))
        assert max(map(len, chunks)) - min(map(len, chunks)) <= 1
        for r in range(parts, 3 * parts):
            np.testing.assert_array_equal(p.unlabeled_in_round(k, r), chunks[r % parts])


def test_streaming_fashion_mnist_paper_sizes():
    labels = balanced_labels(10, 6400)                                   # the journal's 64,000 training samples
    p = build_partition('streaming_dirichlet', labels, num_classes=10, num_clients=10, seed=0,
                        server_labeled=1000, server_balanced=True, dirichlet_alpha=0.1, stream_parts=10)
    assert_disjoint_and_complete(p, 64000)
    assert np.bincount(labels[p.server_labeled]).tolist() == [100] * 10
    assert sum(c.unlabeled.size for c in p.clients) == 63000
    assert len({c.unlabeled.size for c in p.clients}) > 1                # unequal clients (μ = 0.1)
    for k, c in enumerate(p.clients):
        sizes = {p.unlabeled_in_round(k, r).size for r in range(10)}
        assert sizes <= {c.unlabeled.size // 10, c.unlabeled.size // 10 + 1}


def test_resplit_gives_the_journals_fashion_mnist_sets():
    train, test = resplit_train_test(60000, 10000, seed=0, train_size=64000, test_size=2000)
    assert (train.size, test.size) == (64000, 2000)
    both = np.concatenate([train, test])
    assert np.unique(both).size == 66000 and both.min() >= 0 and both.max() < 70000  # 4,000 left out
    again_train, again_test = resplit_train_test(60000, 10000, seed=0, train_size=64000, test_size=2000)
    np.testing.assert_array_equal(train, again_train)
    np.testing.assert_array_equal(test, again_test)
    assert not np.array_equal(train, resplit_train_test(60000, 10000, seed=1, train_size=64000, test_size=2000)[0])


def test_resplit_stratified_by_class():
    pooled = np.concatenate([balanced_labels(10, 6000, seed=1), balanced_labels(10, 1000, seed=2)])
    train, test = resplit_train_test(60000, 10000, seed=0, train_size=64000, test_size=2000, labels=pooled)
    assert np.bincount(pooled[train]).tolist() == [6400] * 10
    assert np.bincount(pooled[test]).tolist() == [200] * 10
    assert np.intersect1d(train, test).size == 0


# ---------------------------------------------------------------- counts

def test_counts_by_eye_and_json_round_trip():
    labels = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    p = build_partition('server_iid', labels, num_classes=4, num_clients=2, seed=0,
                        server_labeled=4, server_balanced=True, stratified=True)
    counts = p.counts(labels, 4)
    assert counts['server'] == {'labeled': {'0': 1, '1': 1, '2': 1, '3': 1}}
    assert [sum(c['unlabeled'].values()) for c in counts['clients']] == [2, 2]
    assert [c['labeled'] for c in counts['clients']] == [{'0': 0, '1': 0, '2': 0, '3': 0}] * 2
    assert json.loads(json.dumps(counts)) == counts


@pytest.mark.parametrize('name', EVERY)
def test_counts_add_up(name):
    counts = small(name).counts(SMALL, 10)
    totals = np.array([int(v) for v in counts['server']['labeled'].values()])
    for c in counts['clients']:
        totals = totals + np.array(list(c['labeled'].values())) + np.array(list(c['unlabeled'].values()))
    assert totals.tolist() == [60] * 10


# What every registered partition must pass, each a function of the partition's name alone:
# tests/test_extending.py runs them on a partition registered from outside the package.
EVERY_PARTITIONS_CHECKS = (
    test_disjoint_complete_and_sorted, test_same_seed_same_arrays_other_seed_other_arrays,
    test_disjoint_and_complete_on_unbalanced_classes, test_labels_sit_where_the_partition_declares_them,
    test_a_parameter_the_partition_does_not_declare_is_refused_naming_what_it_reads, test_counts_add_up,
)


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize('name, overrides, message', [
    ('noniid3', dict(labeled_ratio=0.01, num_clients=100, rich_clients=10, rich_labeled_ratio=0.55),
     "partition 'noniid3': rich_clients=10 with rich_labeled_ratio=0.55 and labeled_ratio=0.01"),
    ('noniid3', dict(rich_clients=10), "partition 'noniid3': rich_clients=10 must be an int within [0, 9]"),
    ('iid', dict(labeled_ratio=1.5), "partition 'iid': labeled_ratio=1.5 must be a number within (0, 1)"),
    ('iid', dict(labeled_ratio=None), "partition 'iid': labeled_ratio=None must be a number"),
    ('iid', dict(num_clients=0), "partition 'iid': num_clients=0 must be an int within [1, 600]"),
    ('iid', dict(seed=-1), "partition 'iid': seed=-1 must be an int >= 0"),
    ('iid', dict(seed=1.5), "partition 'iid': seed=1.5 must be an int >= 0"),
    ('iid', dict(dirichlet_alpha=0.1), "partition 'iid': dirichlet_alpha=0.1 is not used"),
    ('iid', dict(server_balanced=True), "partition 'iid': server_balanced=True is not used"),
    ('noniid1', dict(classes_per_client=0), "partition 'noniid1': classes_per_client=0 must be"),
    ('server_iid', dict(labeled_ratio=0.1), "partition 'server_iid': give exactly one of labeled_ratio"),
    ('server_iid', dict(server_labeled=None), "partition 'server_iid': give exactly one of labeled_ratio"),
    ('server_iid', dict(server_labeled=595), "partition 'server_iid': server_labeled=595 must be an int within [1, 590]"),
    ('server_iid', dict(server_labeled=10.0), "partition 'server_iid': server_labeled=10.0 must be an int"),
    ('server_iid', dict(server_labeled=None, labeled_ratio=0.999),
     "partition 'server_iid': labeled_ratio=0.999 gives 599 server samples"),
    ('server_dirichlet', dict(dirichlet_alpha=0), "partition 'server_dirichlet': dirichlet_alpha=0 must be a finite number > 0"),
    ('server_dirichlet', dict(dirichlet_alpha=None), "partition 'server_dirichlet': dirichlet_alpha=None"),
    ('server_lda', dict(dirichlet_alpha=float('inf')), "partition 'server_lda': dirichlet_alpha=inf"),
    ('streaming_dirichlet', dict(stream_parts=1), "partition 'streaming_dirichlet': stream_parts=1 must be an int >= 2"),
    ('iid', dict(stream_parts=0), "partition 'iid': stream_parts=0 must be an int >= 1"),
    ('iid', dict(stream_parts=100), "partition 'iid': stream_parts=100 must be at most every client's unlabeled count"),
    ('server_iid', dict(stratified='yes'), "partition 'server_iid': stratified='yes' must be True or False"),
])
def test_invalid_arguments_name_parameter_and_value(name, overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        small(name, **overrides)


def test_invalid_name_and_labels():
    with pytest.raises(ValueError, match=re.escape("build_partition: name='bogus' must be one of 'iid'")):
        build_partition('bogus', SMALL, num_classes=10, num_clients=2, seed=0)
    with pytest.raises(ValueError, match=re.escape("partition 'iid': labels must be a non-empty 1-D integer array")):
        build_partition('iid', SMALL.astype(float), num_classes=10, num_clients=2, seed=0, labeled_ratio=0.1)
    with pytest.raises(ValueError, match=re.escape("partition 'iid': labels must lie within [0, num_classes - 1] = [0, 4]")):
        build_partition('iid', SMALL, num_classes=5, num_clients=2, seed=0, labeled_ratio=0.1)


def test_balanced_server_needs_enough_of_every_class():
    labels = np.array([0] * 3 + [1] * 40)
    with pytest.raises(ValueError, match=re.escape(
            "partition 'server_lda': server_labeled=10 with server_balanced=True needs 5 samples of "
            "class 0, but labels has 3")):
        build_partition('server_lda', labels, num_classes=2, num_clients=3, seed=0,
                        server_labeled=10, server_balanced=True, dirichlet_alpha=1.0)


def test_invalid_resplit():
    with pytest.raises(ValueError, match=re.escape('resplit_train_test: test_size=7000 must be an int within [1, 6000]')):
        resplit_train_test(60000, 10000, seed=0, train_size=64000, test_size=7000)
    with pytest.raises(ValueError, match=re.escape('resplit_train_test: labels must be a 1-D integer array of length')):
        resplit_train_test(10, 5, seed=0, train_size=5, test_size=5, labels=np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=re.escape('need 7 samples of class 1, but labels has 5')):
        resplit_train_test(10, 5, seed=0, train_size=12, test_size=2,
                           labels=np.array([0] * 10 + [1] * 5))


@pytest.mark.parametrize("name,extra", [("iid", {}), ("noniid3", {"rich_clients": 2, "rich_labeled_ratio": 0.55})])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), clients=st.integers(20, 60), ratio=st.sampled_from([0.1, 0.15, 0.2]))
def test_iid_splits_are_class_stratified_and_so_are_their_labels(name, extra, seed, clients, ratio):
    # uneven classes (a real set's 5,421 to 6,742 per class, scaled down) so that remainders matter
    labels = np.random.default_rng(seed).permutation(np.repeat(np.arange(10), [54, 67, 59, 61, 58, 54, 59, 62, 58, 59]))
    part = build_partition(name, labels, num_classes=10, num_clients=clients, seed=seed, labeled_ratio=ratio, **extra)
    sizes = np.array([c.labeled.size + c.unlabeled.size for c in part.clients])
    assert sizes.max() - sizes.min() <= 1                           # as equal as a plain cut
    class_sizes = np.bincount(labels, minlength=10)
    for client in part.clients:
        held = np.concatenate([client.labeled, client.unlabeled])
        counts = np.bincount(labels[held], minlength=10)
        # every class in its proportion: floor or ceil of its size / K
        assert np.all(counts >= class_sizes // clients) and np.all(counts <= -(-class_sizes // clients))
        share = client.labeled.size / held.size
        n_labeled = int(np.floor(share * held.size + 0.5))
        quotas = share * counts                                      # each class labeled in proportion
        got = np.bincount(labels[client.labeled], minlength=10)
        assert client.labeled.size == n_labeled
        assert np.all(got >= np.floor(quotas)) and np.all(got <= np.floor(quotas) + 1)
    if name == "iid":
        assert {c.labeled.size for c in part.clients} <= {int(np.floor(ratio * s + 0.5)) for s in sizes}
