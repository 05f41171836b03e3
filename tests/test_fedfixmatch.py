"""FedFixMatch: the FixMatch loss on a hand case, a gradient through the unlabeled term (which the
authors' code lacks), and tiny runs in both label scenarios."""
import math

import pytest
import torch
import torch.nn.functional as F

from fssl_core.algorithms.base import Context
from fssl_core.algorithms.fedfixmatch import FedFixMatch, fixmatch_unlabeled_loss
from fssl_core.run_config import RunConfig
from fssl_core.models import build_model
from fssl_core.store import RunStore
from fssl_core.engine.federation import Federation
from fssl_core.learning.training import Step
from fssl_core.engine.trainer import train

from .conftest import requires_mnist
from .fake_batches import mixed_batch

MODEL_BYTES = 21_840 * 4


def test_unlabeled_loss_on_a_hand_case():
    weak = torch.tensor([[5.0, 0.0, 0.0],      # softmax max e^5 / (e^5 + 2) = 0.9867 ≥ 0.95: kept, label 0
                         [1.0, 1.0, 1.0]])     # max 1/3: dropped
    strong = torch.tensor([[0.0, 0.0, 0.0],    # CE against label 0 = log 3
                           [9.0, 0.0, 0.0]])   # dropped, whatever its CE
    loss, mask = fixmatch_unlabeled_loss(strong, weak, threshold=0.95)
    assert mask.tolist() == [1.0, 0.0]
    assert loss.item() == pytest.approx(math.log(3) / 2)      # mean over the whole unlabeled batch
    # the threshold is inclusive (FixMatch's ≥); at T = 1 only a certain prediction would pass
    assert fixmatch_unlabeled_loss(strong, weak, threshold=1 / 3)[1].tolist() == [1.0, 1.0]
    assert fixmatch_unlabeled_loss(strong, weak, threshold=1.0)[0].item() == 0.0


def test_no_gradient_flows_through_the_pseudo_label():
    weak = torch.tensor([[5.0, 0.0, 0.0]], requires_grad=True)
    strong = torch.tensor([[0.0, 1.0, 0.0]], requires_grad=True)
    loss, _ = fixmatch_unlabeled_loss(strong, weak, threshold=0.5)
    loss.backward()
    assert weak.grad is None
    assert strong.grad.abs().sum() > 0


def test_the_unlabeled_loss_trains_the_model():
    cfg = RunConfig(algorithm="fedfixmatch", pseudo_label_threshold=0.0, unlabeled_loss_weight=2.0)
    model = build_model("cnn_mnist", num_classes=10, in_channels=1)
    algo = FedFixMatch(cfg, Context(model, 10, torch.device("cpu")))
    params = {k: v.clone().requires_grad_() for k, v in model.state_dict().items()}
    batch, _ = mixed_batch(0, 8)
    loss, stats = algo.loss({"model": params}, batch, Step(round=1, local_step=0, local_steps=1))
    grads = torch.autograd.grad(loss, list(params.values()))
    assert all(g.abs().sum() > 0 for g in grads)
    assert stats["mask_rate"].item() == 1.0 and stats["classification_loss"].item() == 0.0
    # the same value and gradient as λ_u · CE(f(A(u)), argmax f(α(u))) written out (views are cached)
    apply = algo.ctx.apply
    pseudo = apply(params, batch.unlabeled.weak()).argmax(1)
    expected = 2.0 * F.cross_entropy(apply(params, batch.unlabeled.strong()), pseudo)
    torch.testing.assert_close(loss, expected)
    for g, e in zip(grads, torch.autograd.grad(expected, list(params.values()))):
        torch.testing.assert_close(g, e)


def test_the_authors_labeled_mean_divides_the_labeled_sum_by_the_whole_batch():
    # the FedSiam authors' LocalUpdate_fedfixmatch: CrossEntropyLoss(size_average=False, ignore_index=-1) over
    # the mixed batch of 10, divided by 10: with 3 labeled samples, 3/10 of FixMatch's labeled mean
    model = build_model("cnn_mnist", num_classes=10, in_channels=1)
    params = {k: v.clone() for k, v in model.state_dict().items()}
    batch, step = mixed_batch(3, 7)[0], Step(round=1, local_step=0, local_steps=1)
    losses = {}
    for mean in ("labeled", "batch"):
        cfg = RunConfig(algorithm="fedfixmatch", unlabeled_loss_weight=0.0, labeled_loss_mean=mean)
        losses[mean] = FedFixMatch(cfg, Context(model, 10, torch.device("cpu"))).loss({"model": params}, batch, step)[0]
    logits = FedFixMatch(RunConfig(algorithm="fedfixmatch"), Context(model, 10, torch.device("cpu"))).ctx.apply(
        params, batch.labeled.weak())
    summed = F.cross_entropy(logits, batch.labeled.y, reduction="sum")
    torch.testing.assert_close(losses["labeled"], summed / 3)
    torch.testing.assert_close(losses["batch"], summed / 10)


def test_labeled_loss_mean_is_validated():
    with pytest.raises(ValueError, match="labeled_loss_mean='all'"):
        RunConfig(algorithm="fedfixmatch", labeled_loss_mean="all")


TINY = dict(algorithm="fedfixmatch", dataset="mnist", clients=100, clients_per_round=2, local_epochs=1, rounds=2)


@requires_mnist
def test_tiny_labels_at_client_run_learns_and_sends_one_model_each_way(tmp_path):
    run = train(RunConfig(partition="iid", labeled_ratio=0.1, labeled_repeats=3, **TINY), RunStore(tmp_path),
                                     progress=False)
    assert [m["upload_bytes"] for m in run.metrics] == [2 * MODEL_BYTES] * 2
    assert [m["download_bytes"] for m in run.metrics] == [2 * MODEL_BYTES] * 2
    assert run.metrics[-1]["accuracy"] > 30.0                # chance is 10%
    last = run.metrics[-1]
    assert 0.0 < last["train_mask_rate"] <= 1.0 and last["train_unlabeled_loss"] > 0.0
    assert 0.0 <= last["pseudo_label_accuracy"] <= 100.0


@requires_mnist
def test_tiny_labels_at_server_run_trains_on_the_servers_labels(tmp_path):
    run = train(RunConfig(partition="server_iid", labeled_ratio=0.01, **TINY), RunStore(tmp_path), progress=False)
    # the clients hold no label, so only the server's 600 labels can lift the model above chance (10%); the
    # clients' FixMatch from so weak a start may pull a round down toward a class (round 1 at 15.65% under the
    # server's streams of SERVER_TRAINING_REVISION 1), hence the best round, not each
    assert max(m["accuracy"] for m in run.metrics) > 25.0
    assert any(m["train_mask_rate"] > 0.0 for m in run.metrics)      # the clients do keep pseudo-labels
    # clients hold no labels: their loss is the unlabeled term alone
    assert all(m["train_classification_loss"] == 0.0 for m in run.metrics)
    assert all(m["train_loss"] == pytest.approx(m["train_unlabeled_loss"]) for m in run.metrics)


@requires_mnist
def test_table6s_server_step_alone_leaves_the_global_model_the_servers():
    # TABLE6_SERVER_STEP: FedFixMatch with λ_u = 0 at labels-at-server; its clients take gradient-free steps
    # (weight decay alone), so the round's global model is the server step's model up to that shrink
    from fssl_core.papers.fedsiam import TABLE6_SERVER_STEP
    cfg = RunConfig(algorithm="fedfixmatch", partition="server_iid", labeled_ratio=0.01, clients=100,
                    clients_per_round=3, rounds=1, local_epochs=1, batch_size=100, **TABLE6_SERVER_STEP)
    fed = Federation.build(cfg)
    state = fed.initial_state()
    start = {k: v.clone() for k, v in state["model"].items()}
    served = {}
    real = fed.algorithm.server_update

    def snapshot(state, round, train):
        real(state, round, train)
        served.update({k: v.clone() for k, v in state["model"].items()})

    fed.algorithm.server_update = snapshot
    state, _ = fed.run_round(state, 1)
    assert any(not torch.equal(start[k], served[k]) for k in start)               # the server trained
    # 6 steps of 100 a client: momentum-accumulated weight decay shrinks by lr·wd·Σ_t (1 − 0.9^t)/0.1 ≈ 1.9e-5
    shrink = 1 - cfg.lr * cfg.weight_decay * sum((1 - 0.9 ** t) / 0.1 for t in range(1, 7))
    for k, v in state["model"].items():
        assert torch.allclose(v, served[k] * shrink, rtol=1e-6, atol=1e-9), k      # the clients added nothing
