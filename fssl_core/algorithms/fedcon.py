"""FedCon (Long et al., 2021) as the FedAnchor paper runs it: "extracted both the client and server
training pipeline" from the authors' repository (zewei-long/fedcon-pytorch) with the backbone
swapped (fedanchor.txt §5.1). Labels at the server, unlabeled clients.

One round:
    server (first): one epoch on the labeled set of
        CE(f(v1), y)/2 + CE(f(v2), y)/2 + w(t) · KL(p(v1) ‖ p(v2)),   w(t) = exp(−5(1 − t/100)²)
    with v1, v2 two weak views and p = softmax f (the consistency target p(v1) carries no gradient);
    clients: BYOL on their unlabeled data: the online backbone g and a predictor q against a
    target backbone ḡ, an EMA of g (decay 0.999), with the symmetrised loss
        L = 2 − 2 cos(q(g(v1)), ḡ(v2)) + 2 − 2 cos(q(g(v2)), ḡ(v1))
    the server averages the clients' backbones (uniformly, as FedCon's code); the classifier is
    trained at the server only.

Reading choices, and why (the evidence and the alternatives: papers/fedanchor/READINGS.md, "FedCon"):
- the predictor travels with the backbone and is averaged; unlabeled batches 5 × batch_size, the run's SGD
  (the paper puts FedCon "in our codebase"); the anchor head neither trained nor sent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..learning.aggregate import weighted_mean
from ..learning.batches import Batch, DataView, Plan
from ..config import setting
from ..learning.ssl import ema_update_, sigmoid_rampup
from ..learning.training import Nets, Step, Tensors
from .base import Algorithm, AlgorithmSettings, Payload, State, Upload, clone
from .static_batchnorm import static_statistics

if TYPE_CHECKING:
    from torch import Tensor

BYOL_EMA = 0.999
CONSISTENCY_RAMPUP = 100      # rounds of w(t)'s sigmoid ramp (FedCon's code)
UNLABELED_BATCH_FACTOR = 5


def init_predictor(dim: int, hidden: int, generator: torch.Generator, device) -> Tensors:
    """q's parameters, initialised as torch.nn.Linear's default (uniform ±1/√fan_in)."""
    def uniform(shape, fan_in):
        bound = 1.0 / math.sqrt(fan_in)
        return ((torch.rand(shape, generator=generator) * 2 - 1) * bound).to(device)
    return {"w1": uniform((hidden, dim), dim), "b1": uniform((hidden,), dim),
            "gamma": torch.ones(hidden, device=device), "beta": torch.zeros(hidden, device=device),
            "w2": uniform((dim, hidden), hidden), "b2": uniform((dim,), hidden)}


def predictor(q: Tensors, h: Tensor) -> Tensor:
    """Linear → BatchNorm (batch statistics) → ReLU → Linear."""
    a = F.linear(h, q["w1"], q["b1"])
    a = F.batch_norm(a, None, None, q["gamma"], q["beta"], training=True)
    return F.linear(a.relu(), q["w2"], q["b2"])


def byol_loss(online: Tensor, target: Tensor) -> Tensor:
    """2 − 2 cos(online, target), averaged over the batch; the target carries no gradient."""
    return (2 - 2 * F.cosine_similarity(online, target.detach(), dim=1)).mean()


@dataclass(frozen=True)
class FedConSettings(AlgorithmSettings):
    byol_hidden: int = setting(512, "[1, 65536]", "hidden width of the BYOL predictor MLP")


class FedCon(Algorithm):
    name = "fedcon"
    revision = 2     # 2: static BN honoured (it was ignored); only FedAnchor's experiments run FedCon
    # BYOL's target in train mode, as FedCon's code (zewei-long/fedcon-pytorch, models/byol.py BYOL.forward:
    # f_t(x1) under no_grad, inside model_local.train() in fedcon-main.py). 1: it had been eval mode (BN networks)
    target_statistics = "batch"
    batchnorm_revision = 1
    trainable = ("model", "predictor")
    cohort = True
    labels_at = ("server",)    # the server's supervised epoch; clients run BYOL without labels
    settings = FedConSettings

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.backbone = [k for k in ctx.model.state_dict()
                         if not k.startswith(("classifier.", "projection."))]

    def init_state(self, initial: Tensors) -> State:
        generator = torch.Generator().manual_seed(self.cfg.seed)     # on the CPU: the same q on every device
        q = init_predictor(self.ctx.model.feature_dim, self.cfg.byol_hidden, generator, self.ctx.device)
        return {"model": initial, "predictor": q}

    # --- server ------------------------------------------------------------------------------
    def server_update(self, state: State, round: int, train) -> None:
        if round >= 1 and self.cfg.server_epochs:
            train({"model": state["model"]}, ("model",), self.server_loss,
                  self.server_plan())

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        x = batch.labeled
        logits = self.ctx.apply(nets["model"], torch.cat([x.weak(), x.weak2()]))
        l1, l2 = logits[:len(x)], logits[len(x):]
        ce = (F.cross_entropy(l1, x.y) + F.cross_entropy(l2, x.y)) / 2
        consistency = F.kl_div(l2.log_softmax(1), l1.detach().softmax(1), reduction="batchmean")
        weight = sigmoid_rampup(step.round, CONSISTENCY_RAMPUP)
        return ce + weight * consistency, {"server_ce": ce.detach(), "server_consistency": consistency.detach()}

    def download(self, state: State, round: int, client: int) -> Payload:
        return {"backbone": {k: state["model"][k] for k in self.backbone}, "predictor": state["predictor"]}

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        weights = [1.0] * len(uploads)
        backbone = weighted_mean([u.payload["backbone"] for u in uploads], weights)
        q = weighted_mean([u.payload["predictor"] for u in uploads], weights)
        return {"model": {**state["model"], **backbone}, "predictor": q}

    def server_finish(self, state: State, round: int, train) -> None:
        """With static BN, the aggregated model's statistics recomputed before it is evaluated."""
        state["model"] = static_statistics(self, state["model"])

    # --- client ------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        # the client's full network: the downloaded backbone, the heads as placeholders it never trains
        template = {k: v.detach().clone() for k, v in self.ctx.model.state_dict().items()}
        online = {**template, **clone(payload["backbone"])}
        return {"model": online, "target": clone(online), "predictor": clone(payload["predictor"])}

    def plan(self, view: DataView, round: int) -> Plan:
        return Plan(epochs=self.cfg.local_epochs, labeled_batch=0,
                    unlabeled_batch=UNLABELED_BATCH_FACTOR * self.cfg.batch_size, epoch_over="unlabeled")

    def features(self, tensors: Tensors, x: Tensor) -> Tensor:
        self.ctx.model.train(True)
        return torch.func.functional_call(self.ctx.model, tensors, (x,), {"features_only": True})

    def loss(self, nets: Nets, batch: Batch, step: Step):
        v = torch.cat(batch.views(("unlabeled", "weak"), ("unlabeled", "weak2")))
        online = predictor(nets["predictor"], self.features(nets["model"], v))
        target = self.target(nets["target"], v, features_only=True)    # BYOL's target: target_statistics
        n = len(batch.unlabeled)
        loss = byol_loss(online[:n], target[n:]) + byol_loss(online[n:], target[:n])
        return loss, {"byol_loss": loss.detach()}

    def after_step(self, nets: Nets, step: Step) -> None:
        ema_update_(nets["target"], nets["model"], [k for k in self.backbone if nets["model"][k].is_floating_point()],
                    BYOL_EMA)

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        return {"backbone": {k: nets["model"][k] for k in self.backbone}, "predictor": nets["predictor"]}
