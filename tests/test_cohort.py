"""The cohort trainer gives the sequential trainer's updates (float tolerance), clients of unequal
sizes included, for FedAvg and FedSiam-D on CPU."""
import pytest
import torch

from fssl_core.config import RunConfig
from fssl_core.engine import Federation

from .conftest import requires_mnist

# 600 clients of 100 MNIST samples; Non-IID-III gives 60 of them 55 labels and the others ~5, so a
# round's clients walk different numbers of steps and batches of different shapes
SMALL = dict(dataset="mnist", partition="noniid3", labeled_ratio=0.1, clients=600, rich_clients=60,
             clients_per_round=6, rounds=2, local_epochs=1, batch_size=10, seed=11)


def two_rounds(cfg: RunConfig):
    fed = Federation.build(cfg)
    state = fed.initial_state()
    logged = []
    for r in (1, 2):
        state, metrics = fed.run_round(state, r)
        logged.append(metrics)
    return fed, state, logged


@requires_mnist
@pytest.mark.parametrize("algorithm,role", [("fedavg", "model"), ("fedsiam_d", "online")])
def test_cohort_and_sequential_trainers_give_the_same_updates(algorithm, role):
    cfg = RunConfig(algorithm=algorithm, **SMALL)
    fed, sequential, seq_metrics = two_rounds(cfg.replace(trainer="sequential"))
    fed_c, cohort, coh_metrics = two_rounds(cfg.replace(trainer="cohort"))
    assert fed_c.cohort and not fed.cohort
    # the round's clients really are unequal: several step counts among them
    steps = {fed.algorithm.plan(fed.client_view(k, 1), 1).steps(fed.client_view(k, 1)) for k in fed.sample_clients(1)}
    assert len(steps) > 1, steps
    for k in sequential[role]:
        assert torch.allclose(sequential[role][k], cohort[role][k], atol=2e-6, rtol=1e-5), k
    for a, b in zip(seq_metrics, coh_metrics):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
        assert a["upload_bytes"] == b["upload_bytes"]


def test_an_algorithm_without_cohort_support_is_refused_by_name():
    fed = Federation.__new__(Federation)
    fed.cfg = RunConfig(algorithm="semifl", trainer="cohort")
    from fssl_core.algorithms.semifl import SemiFL
    fed.algorithm = SemiFL.__new__(SemiFL)
    with pytest.raises(ValueError, match="trainer='cohort': algorithm 'semifl' does not support"):
        fed.cohort
