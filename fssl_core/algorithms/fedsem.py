"""FedSem (Albaseer et al., 2020) as FedSiam describes and runs it (Section 1, Section 4.1, Table 3):
"employs the pseudo-labeling technique to generate fake labels for unlabeled data based on the
trained FedAvg model with labeled data. The data with pseudo labels are further used to retrain
FedAvg to obtain the final global model."

Two phases over R_G rounds, R_G^1 = round(fedsem_phase1_fraction · R_G) (Table 3: 30 + 20 of 50):
  Phase 1, rounds 1..R_G^1:       FedAvg on the clients' labeled data, cross-entropy (Eq. 2).
  Phase 2, rounds R_G^1 + 1..R_G: every unlabeled sample gets the label ŷ = argmax f_{θ*}(u) of
      the phase-1 model θ* (the global model after round R_G^1, frozen); clients train the
      global model with cross-entropy on their labeled samples and their pseudo-labeled ones;
      the server averages (Eq. 2).

Reading choices, and why (the evidence and the alternatives: papers/fedsiam/READINGS.md, "FedSem"):
- the labeling model is θ*, phase 1's final model, frozen for all of phase 2, applied in eval mode to
  the plain image; no confidence threshold (argmax, as the authors' code);
- phase 2 trains on the pooled client data with the batch mean of the cross-entropy;
- labels at the server run outside the paper (FedSiam does not run FedSem there).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..learning.batches import Batch, DataView, Plan
from ..config import setting
from ..learning.training import Nets, Step, Tensors
from .base import Algorithm, AlgorithmSettings, Payload, State, Upload, clone


def phase1_rounds(cfg) -> int:
    """R_G^1 = round(fedsem_phase1_fraction · R_G) (Table 3: 0.6 · 50 = 30)."""
    return round(cfg.fedsem_phase1_fraction * cfg.rounds)


def pooled_plan(cfg, view: DataView) -> Plan:
    """A client's labeled and pseudo-labeled samples as one pool: each batch of `batch_size` holds
    labeled samples in the client's labeled proportion (at least one of each kind when it has
    both), local epochs over the unlabeled set."""
    n_l, n_u = view.num_labeled, view.num_unlabeled
    if n_u == 0:
        return Plan(epochs=cfg.local_epochs, labeled_batch=cfg.batch_size)
    if n_l == 0:
        return Plan(epochs=cfg.local_epochs, labeled_batch=0, unlabeled_batch=cfg.batch_size, epoch_over="unlabeled")
    labeled = min(cfg.batch_size - 1, max(1, round(cfg.batch_size * n_l / (n_l + n_u))))
    return Plan(epochs=cfg.local_epochs, labeled_batch=labeled, unlabeled_batch=cfg.batch_size - labeled,
                epoch_over="unlabeled")


@dataclass(frozen=True)
class FedSemSettings(AlgorithmSettings):
    fedsem_phase1_fraction: float = setting(0.6, "[0, 1]", "R_G^1 / R_G (Table 3: 30 of 30 + 20 rounds)")


class FedSem(Algorithm):
    name = "fedsem"
    cohort = True
    # the paper's is labels-at-client; at the server it runs as papers/fedsiam/READINGS.md says (server
    # training, then pseudo-labels), which FedSiam does not report but which trains
    labels_at = ("client", "server")
    settings = FedSemSettings
    # the labeler's pseudo-labels with the running statistics (and dropout off), as the authors' code
    # (zewei-long/fedsiam-pytorch, fedsiam-labels-at-client/main_fedsem.py: net_glob.eval() before labeling)
    target_statistics = "running"
    reads_also = ("unlabeled_loss_weight",)             # λ_u of the pseudo-label phase (FedFixMatch's)

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.phase1 = phase1_rounds(cfg)

    def phase(self, round: int) -> int:
        return 1 if round <= self.phase1 else 2

    # --- server ------------------------------------------------------------------------------
    def init_state(self, initial: Tensors) -> State:
        state: State = {"model": initial}
        if self.phase1 == 0:     # no phase 1: the labeling model is the initial one
            state["labeler"] = clone(initial)
        return state

    def server_update(self, state: State, round: int, train) -> None:
        """Labels-at-server only (outside the paper, papers/fedsiam/READINGS.md): cross-entropy on the
        server's labeled set before each round; no step when the server holds no labels."""
        if round == 0 or self.cfg.server_epochs == 0:
            return
        train({"model": state["model"]}, ("model",), self.supervised_loss,
              self.server_plan())

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        """FedAvg (Eq. 2); after the last phase-1 round, θ* is frozen as the labeling model."""
        new = super().aggregate(state, uploads, round)
        if round == self.phase1:
            new["labeler"] = clone(new["model"])
        return new

    def download(self, state: State, round: int, client: int) -> Payload:
        if self.phase(round) == 1:
            return {"model": state["model"]}
        labeler = state["labeler"]
        if all(torch.equal(labeler[k], state["model"][k]) for k in labeler):
            return {"model": state["model"]}      # round R_G^1 + 1: the global model is θ*
        return {"model": state["model"], "labeler": labeler}

    # --- client ------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        # θ* (phase 2 only; in round R_G^1 + 1 it is the model itself) is only read, in eval mode,
        # so the client keeps the received tensors; phase 1's loss never reads it
        return {"model": clone(payload["model"]), "labeler": payload.get("labeler", payload["model"])}

    def plan(self, view: DataView, round: int) -> Plan:
        if self.phase(round) == 1:
            return super().plan(view, round)     # FedAvg's: the labeled set, `labeled_repeats` times an epoch
        return pooled_plan(self.cfg, view)

    def supervised_loss(self, nets: Nets, batch: Batch, step: Step):
        logits = self.ctx.apply(nets["model"], batch.labeled.weak())
        return F.cross_entropy(logits, batch.labeled.y), {}

    def loss(self, nets: Nets, batch: Batch, step: Step):
        if self.phase(step.round) == 1:     # FedAvg(+) on the labeled data
            return self.supervised_loss(nets, batch, step)
        labeled, unlabeled = batch.labeled, batch.unlabeled
        n_l, n_u = len(labeled), len(unlabeled)
        if n_u == 0:
            return self.supervised_loss(nets, batch, step)
        # ŷ = argmax f_θ*(u): the frozen phase-1 model, no threshold, eval mode (Context.target)
        pseudo = self.target(nets["labeler"], unlabeled.plain(), dropout=False).argmax(1)
        x = torch.cat(batch.views(("labeled", "weak"), ("unlabeled", "weak")))
        per_sample = F.cross_entropy(self.ctx.apply(nets["model"], x), torch.cat([labeled.y, pseudo]),
                                     reduction="none")
        ce_l, ce_u = per_sample[:n_l], per_sample[n_l:]
        loss = (ce_l.sum() + self.cfg.unlabeled_loss_weight * ce_u.sum()) / (n_l + n_u)
        stats = {"pseudo_label_loss": ce_u.mean().detach(),
                 # metrics only: the hidden labels never enter the loss
                 "pseudo_label_accuracy": (pseudo == unlabeled.hidden_labels).float().mean()}
        if n_l:
            stats["classification_loss"] = ce_l.mean().detach()
        return loss, stats
