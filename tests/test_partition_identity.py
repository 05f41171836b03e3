"""One computation, one run: a method that reads no unlabeled sample computes the same run on two partitions that
share their labeled split and per-client sizes (a partition's declared `same_labeled_split`), so both have one
identity."""
import numpy as np
import pytest
import torch

from fssl_core.data.partition import PARTITIONS, build_partition
from fssl_core.engine.federation import Federation
from fssl_core.run_config import RunConfig

from .conftest import requires_mnist


@pytest.mark.parametrize("seed", [0, 7])
def test_a_partition_shares_its_twins_labeled_split_and_sizes(seed):
    labels = np.repeat(np.arange(10), 120)
    twins = {name: p.same_labeled_split for name, p in PARTITIONS.items() if p.same_labeled_split}
    assert twins
    for name, twin in twins.items():
        ours, theirs = (build_partition(p, labels, num_classes=10, num_clients=20, seed=seed, labeled_ratio=0.1)
                        for p in (name, twin))
        assert [c.labeled.tolist() for c in ours.clients] == [c.labeled.tolist() for c in theirs.clients]
        assert [c.unlabeled.size for c in ours.clients] == [c.unlabeled.size for c in theirs.clients]
        assert any(set(a.unlabeled) != set(b.unlabeled) for a, b in zip(ours.clients, theirs.clients))


def test_a_method_that_reads_no_unlabeled_sample_has_one_id_on_both_and_the_others_two():
    same = dict(labeled_ratio=0.15, seed=1235, rounds=50)
    for algorithm in ("fedavg", "fedavg_plus"):
        assert RunConfig(algorithm=algorithm, partition="noniid2", **same).run_id == \
            RunConfig(algorithm=algorithm, partition="noniid1", **same).run_id
    for algorithm in ("fedsiam_d", "fedfixmatch", "fedsem"):
        assert RunConfig(algorithm=algorithm, partition="noniid2", **same).run_id != \
            RunConfig(algorithm=algorithm, partition="noniid1", **same).run_id


@requires_mnist
def test_fedavg_trains_the_same_numbers_on_both_splits():
    """What makes the shared identity true rather than assumed: two rounds of FedAvg+ on Non-IID-I and on
    Non-IID-II give equal metrics and equal final tensors."""
    small = dict(algorithm="fedavg_plus", dataset="mnist", labeled_ratio=0.1, clients=20, clients_per_round=4,
                 local_epochs=1, batch_size=10, resplit_train=2000, resplit_test=200, seed=3)
    results = []
    for partition in ("noniid1", "noniid2"):
        fed = Federation.build(RunConfig(partition=partition, **small))
        state, rows = fed.initial_state(), []
        for r in (1, 2):
            state, metrics = fed.run_round(state, r)
            rows.append({k: v for k, v in metrics.items() if "seconds" not in k and "time" not in k})
        results.append((state["model"], rows))
    (a, rows_a), (b, rows_b) = results
    assert rows_a == rows_b and all(torch.equal(a[k], b[k]) for k in a)
