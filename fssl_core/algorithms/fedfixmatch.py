"""FedFixMatch: FixMatch (Sohn et al., NeurIPS 2020) as the local objective inside FedAvg — the
baseline FedSiam (Section 4.1, Table 3) takes from FedMatch (Jeong et al., ICLR 2021).

Per client and step (labels-at-client), for a batch of labeled samples (x, y) and unlabeled u:

    loss = CE(f(α(x)), y) + λ_u · 1/|u| Σ_u 1[max p(α(u)) ≥ T] · CE(f(A(u)), argmax p(α(u)))

with α the weak and A the strong augmentation, p = softmax(f(·)), T = 0.95 ("pseudo label
threshold in Fed(Fix)Match", Table 3) and λ_u = 1 (FixMatch's default). The pseudo-label branch
p(α(u)) carries no gradient; the strong branch does. The server averages the client models
(Eq. 2 of FedSiam). Labels-at-server (Section 4.3): clients hold no labels and minimise the
unlabeled term only; before each round the server trains the global model with cross-entropy on
its labeled set (as FedSiam's Eq. 8 and `FedSiam.server_update`).

Reading choices, and why (the evidence and the alternatives: papers/fedsiam/READINGS.md, "FedFixMatch"):
- the unlabeled term trains the model; one train-mode forward over [α(x), α(u), A(u)], as FixMatch's code;
- the labeled term is the mean over the batch's labeled samples (FixMatch Eq. 2; the authors' whole-batch
  mean is `labeled_loss_mean='batch'`, a measured-cause row);
- the local plan is `mixed_plan`; the server's labeled step is cross-entropy on weak views;
- static BatchNorm only where an experiment sets it (FedAnchor's).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..learning.batches import Batch, DataView, Plan
from ..config import setting
from ..learning.training import Nets, Step, Tensors
from .base import Algorithm, AlgorithmSettings, State, Upload, mixed_plan
from .static_batchnorm import static_statistics

if TYPE_CHECKING:
    from torch import Tensor


def fixmatch_unlabeled_loss(logits_strong: Tensor, logits_weak: Tensor, threshold: float) -> tuple[Tensor, Tensor]:
    """FixMatch's unlabeled loss (Sohn et al. 2020, Eq. 4) and its mask.

    loss = 1/μB Σ_b 1[max q_b ≥ T] · CE(logits_strong_b, argmax q_b), q_b = softmax(logits_weak_b),
    with no gradient through q_b. Returns (loss, mask) with mask ∈ {0, 1}^μB as floats.
    """
    probs = logits_weak.detach().softmax(1)
    confidence, pseudo = probs.max(1)
    mask = (confidence >= threshold).float()
    if logits_strong.shape[0] == 0:
        return logits_strong.sum() * 0.0, mask
    per_sample = F.cross_entropy(logits_strong, pseudo, reduction="none")
    return (per_sample * mask).mean(), mask


@dataclass(frozen=True)
class FedFixMatchSettings(AlgorithmSettings):
    """FixMatch's T and λ_u (FedSiam's Table 3), and which mean its labeled loss takes."""
    pseudo_label_threshold: float = setting(0.95, "[0, 1]", "T: confidence above which a pseudo-label is kept")
    unlabeled_loss_weight: float = setting(1.0, "[0, inf)", "λ_u: weight of the unlabeled (pseudo-label) loss")
    labeled_loss_mean: str = setting("labeled", ("labeled", "batch"),
                                     "the labeled CE: mean over the batch's labeled samples (FixMatch Eq. 2) or "
                                     "'batch': summed and divided by the whole mixed batch (the FedSiam authors' "
                                     "LocalUpdate_fedfixmatch; a measured-cause row, not the paper's)")


class FedFixMatch(Algorithm):
    name = "fedfixmatch"
    # revision 1 kept with static BN: it changes only runs with static_batchnorm=True, which no
    # experiment produced before (FedSiam's FedFixMatch runs, at the default False, are unchanged)
    cohort = True
    labels_at = ("client", "server")    # labeled term at clients, or server_update at the server
    settings = FedFixMatchSettings
    reads_also = ("pretrain_epochs", "pretrain_lr")     # the server's pre-training (FedAnchor's baseline)
    # the pseudo-label is read off the trained forward of the weak and strong views together (FixMatch's one
    # joint batch, its reference code's interleaved forward): the batch's statistics, with no extra forward
    target_statistics = "batch"

    def init_state(self, initial: Tensors) -> State:
        return {"model": initial, "last": {}}

    # --- server ------------------------------------------------------------------------------
    def server_update(self, state: State, round: int, train) -> None:
        """Labels-at-server: cross-entropy on the server's weakly augmented labeled set before
        each round; before round 1, `pretrain_epochs` of it at `pretrain_lr` (FedAnchor's protocol,
        Appendix C; 0 by default, as FedSiam's). The engine's trainer runs no step when the server
        holds no labels."""
        plan = self.server_plan(epochs=1)
        if round == 0:
            for epoch in range(self.cfg.pretrain_epochs):
                train({"model": state["model"]}, ("model",), self.server_loss, plan, lr=self.cfg.pretrain_lr, part=epoch)
            return
        if self.cfg.server_epochs:
            train({"model": state["model"]}, ("model",), self.server_loss,
                  self.server_plan())

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        logits = self.ctx.apply(nets["model"], batch.labeled.weak())
        return F.cross_entropy(logits, batch.labeled.y), {}

    def server_finish(self, state: State, round: int, train) -> None:
        """With static BN, the aggregated model's statistics recomputed before it is evaluated."""
        state["model"] = static_statistics(self, state["model"])

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        """FedAvg (Eq. 2); also the round's pseudo-label accuracy among the kept samples."""
        new = super().aggregate(state, uploads, round)
        kept = sum(u.stats.get("mask_rate", 0.0) for u in uploads)
        correct = sum(u.stats.get("masked_correct_rate", 0.0) for u in uploads)
        new["last"] = {"pseudo_label_accuracy": 100.0 * correct / kept} if kept > 0 else {}   # %, as SemiFL's
        return new

    def round_metrics(self, state: State) -> dict[str, float]:
        return dict(state["last"])

    # --- client ------------------------------------------------------------------------------
    def plan(self, view: DataView, round: int) -> Plan:
        return mixed_plan(self.cfg, view)

    def loss(self, nets: Nets, batch: Batch, step: Step):
        labeled, unlabeled = batch.labeled, batch.unlabeled
        n_l, n_u = len(labeled), len(unlabeled)
        parts = batch.views(("labeled", "weak"), ("unlabeled", "weak"), ("unlabeled", "strong"))
        logits = self.ctx.apply(nets["model"], torch.cat(parts))    # one joint batch, as FixMatch
        logits_l, logits_w, logits_s = logits[:n_l], logits[n_l:n_l + n_u], logits[n_l + n_u:]
        # labeled term: CE on weakly augmented labeled samples (FixMatch Eq. 2)
        classification = F.cross_entropy(logits_l, labeled.y) if n_l else logits.sum() * 0.0
        if self.cfg.labeled_loss_mean == "batch":       # the authors': Σ CE over the labeled / |mixed batch|
            classification = classification * (n_l / (n_l + n_u))
        # unlabeled term: confident weak-view pseudo-labels supervise the strong view (Eq. 4)
        unlabeled_loss, mask = fixmatch_unlabeled_loss(logits_s, logits_w, self.cfg.pseudo_label_threshold)
        loss = classification + self.cfg.unlabeled_loss_weight * unlabeled_loss
        stats = {"classification_loss": classification.detach(), "unlabeled_loss": unlabeled_loss.detach()}
        if n_u:
            # metrics only: the hidden labels never enter the loss
            correct = (logits_w.detach().argmax(1) == unlabeled.hidden_labels).float()
            stats["mask_rate"] = mask.mean()
            stats["masked_correct_rate"] = (mask * correct).mean()
        return loss, stats
