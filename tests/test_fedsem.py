"""FedSem: the phase boundary, the frozen phase-1 model in the download (and its bytes), labels
from that model and not the current one, and a tiny run whose phase 1 is exactly FedAvg+."""
import pytest
import torch
import torch.nn.functional as F

from fssl_core.algorithms.base import Context, Upload
from fssl_core.algorithms.fedsem import FedSem, phase1_rounds, pooled_plan
from fssl_core.learning.batches import DataView, Plan, TrainImages, batches
from fssl_core.run_config import RunConfig
from fssl_core.data.augment import augment_spec_for
from fssl_core.engine.federation import payload_bytes
from fssl_core.models import build_model
from fssl_core.store import RunStore
from fssl_core.learning.training import Step
from fssl_core.engine.trainer import train

from .conftest import requires_mnist

MODEL_BYTES = 21_840 * 4


def _algo(**changes):
    model = build_model("cnn_mnist", num_classes=10, in_channels=1)
    return FedSem(RunConfig(algorithm="fedsem", **changes), Context(model, 10, torch.device("cpu"))), model


def test_table3_phases_are_30_then_20_rounds_of_50():
    algo, _ = _algo(rounds=50)
    assert phase1_rounds(algo.cfg) == 30
    assert [algo.phase(r) for r in range(1, 51)] == [1] * 30 + [2] * 20


def test_phase_two_downloads_the_frozen_phase_one_model_and_counts_its_bytes():
    algo, model = _algo(rounds=5, fedsem_phase1_fraction=0.4)      # phase 1: rounds 1-2
    state = algo.init_state({k: v.clone() for k, v in model.state_dict().items()})
    assert "labeler" not in state and payload_bytes(algo.download(state, 1, client=0)) == MODEL_BYTES

    def round_of(state, r, shift):
        up = Upload(0, {"model": {k: v + shift for k, v in state["model"].items()}}, 10, 90)
        return algo.aggregate(state, [up], r)

    state = round_of(state, 1, 1.0)
    assert "labeler" not in state
    state = round_of(state, 2, 1.0)                          # the last phase-1 round freezes θ*
    theta_star = {k: v.clone() for k, v in state["model"].items()}
    # round 3: the global model the client receives is θ* itself, sent once
    assert set(algo.download(state, 3, client=0)) == {"model"} and payload_bytes(algo.download(state, 3, client=0)) == MODEL_BYTES
    nets = algo.client_init(algo.download(state, 3, client=0), None)
    assert all(torch.equal(nets["labeler"][k], theta_star[k]) for k in theta_star)
    state = round_of(state, 3, 1.0)
    # round 4: the global model has moved on; θ* travels beside it and is counted
    payload = algo.download(state, 4, client=0)
    assert set(payload) == {"model", "labeler"} and payload_bytes(payload) == 2 * MODEL_BYTES
    assert all(torch.equal(payload["labeler"][k], theta_star[k]) for k in theta_star)
    assert not torch.equal(payload["model"]["fc1.bias"], theta_star["fc1.bias"])
    nets = algo.client_init(payload, None)
    assert nets["labeler"] is payload["labeler"] and set(nets) == {"model", "labeler"}


def test_phase_two_labels_come_from_the_frozen_model_not_the_trained_one():
    algo, model = _algo(rounds=2, fedsem_phase1_fraction=0.5, unlabeled_loss_weight=0.5)
    params = {k: v.clone().requires_grad_() for k, v in model.state_dict().items()}
    labeler = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    labeler["classifier.bias"][3] = 1.0           # θ*: every image is a 3
    g = torch.Generator().manual_seed(0)
    images = TrainImages(torch.rand(12, 1, 28, 28, generator=g), torch.arange(12) % 10,
                         lambda x: (x - 0.5) / 0.5, augment_spec_for("mnist"))
    view = DataView(labeled=torch.arange(2), unlabeled=torch.arange(2, 12))
    batch = next(batches(images, view, Plan(1, labeled_batch=2, unlabeled_batch=10, epoch_over="unlabeled"),
                         torch.Generator().manual_seed(1)))
    loss, stats = algo.loss({"model": params, "labeler": labeler}, batch, Step(round=2, local_step=0, local_steps=1))
    ce = F.cross_entropy(algo.ctx.apply(params, torch.cat([batch.labeled.weak(), batch.unlabeled.weak()])),
                         torch.cat([batch.labeled.y, torch.full((10,), 3)]), reduction="none")
    torch.testing.assert_close(loss, (ce[:2].sum() + 0.5 * ce[2:].sum()) / 12)
    threes = (batch.unlabeled.hidden_labels == 3).float().mean().item()
    assert stats["pseudo_label_accuracy"].item() == pytest.approx(threes)
    # phase 1 ignores the unlabeled samples: FedAvg+ cross-entropy on the labeled ones
    loss1, _ = algo.loss({"model": params}, batch, Step(round=1, local_step=0, local_steps=1))
    torch.testing.assert_close(loss1, ce[:2].mean())


def test_pooled_plan_keeps_the_clients_labeled_proportion():
    cfg = RunConfig(batch_size=10)
    full = torch.arange(600)
    assert pooled_plan(cfg, DataView(full[:120], full[120:])) == Plan(5, 2, 8, "unlabeled")      # γ = 0.2
    assert pooled_plan(cfg, DataView(full[:6], full[6:])) == Plan(5, 1, 9, "unlabeled")          # at least one
    assert pooled_plan(cfg, DataView(full[:0], full)) == Plan(5, 0, 10, "unlabeled")            # labels at server


TINY = dict(dataset="mnist", partition="iid", labeled_ratio=0.2, clients=100, clients_per_round=2, local_epochs=2)


@requires_mnist
def test_tiny_run_phase_one_is_fedavg_plus_and_phase_two_learns_from_its_labels(tmp_path):
    store = RunStore(tmp_path)
    sem = train(RunConfig(algorithm="fedsem", rounds=4, fedsem_phase1_fraction=0.5, **TINY), store, progress=False)
    plus = train(RunConfig(algorithm="fedavg_plus", rounds=2, **TINY), store, progress=False)
    strip = lambda ms: [{k: v for k, v in m.items() if k != "seconds"} for m in ms]   # noqa: E731
    assert strip(sem.metrics[:2]) == strip(plus.metrics)
    # θ* rides along from the second phase-2 round on
    assert [m["download_bytes"] for m in sem.metrics] == [2 * MODEL_BYTES] * 3 + [4 * MODEL_BYTES]
    assert [m["upload_bytes"] for m in sem.metrics] == [2 * MODEL_BYTES] * 4
    assert all("train_pseudo_label_accuracy" in m for m in sem.metrics[2:])
    assert sem.metrics[1]["accuracy"] > 30.0 and sem.metrics[-1]["accuracy"] > 30.0     # chance is 10%
    assert sem.metrics[-1]["train_pseudo_label_accuracy"] > 0.3
