"""FedAnchor (fedanchor.txt): a double-head network, a label contrastive loss on the server's
labeled anchors, and pseudo-labels from the cosine similarity of client embeddings to the anchors.

The round is SemiFL's alternate training (algorithms/semifl.py, FedAnchor's Algorithm 1) with
two changes, in the paper's symbols:

    pseudo-labels (§4.2): the server sends w_t and Z^anchor = {z_i^anchor}_{i=1..S}, the anchor-head
    outputs of the S anchors; client m labels each sample by
        s_c^avg(z_i^m) = 1/|Z_c^anchor| Σ_{z_k ∈ Z_c^anchor} cos(z_i^m, z_k)                 (Eq. 3)
        ŷ_i^m = argmax_c s_c^avg(z_i^m),  kept when max_c s_c^avg(z_i^m) > t = 0.6           (Eq. 4-5)
    server training (§4.4): one epoch of cross-entropy through the classification head, then one
    epoch of the label contrastive loss through the anchor head,
        l(c) = −log [ Σ_{y(i)=y(j)=c} exp(s_ij / τ) / Σ_{y(i)≠y(j)} exp(s_ij / τ) ]            (Eq. 1)
        L_c = 1/C Σ_c l(c)                                                                   (Eq. 2)

Reading choices, and why (the evidence and the alternatives: papers/fedanchor/READINGS.md, "FedAnchor"):
- Eq. 1 over ordered pairs i ≠ j; the server step head by head in the paper's cells (`server_step`: the CE
  epoch trains all but the anchor head, the L_c epoch the anchor head alone), every parameter in both by default;
- Z^anchor in eval mode on the un-augmented anchors; the download counts the embeddings and labels;
- FedAnchor (mix): Appendix B's fix + mix loss in the server's CE epoch; static BatchNorm for every method.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..learning.batches import Batch, Plan
from ..config import setting
from ..learning.training import Nets, Step, Tensors
from .base import Payload, State
from .semifl import AlternateTraining, SemiFLSettings, mixup_lambda, mixup_loss

if TYPE_CHECKING:
    from torch import Tensor


ANCHOR_HEAD = "projection."        # the anchor head's parameters in every network (models/base.py)
# SemiFL's threshold (Appendix C), the common criterion at which FedAnchor's confident samples are counted too
COMMON_CONFIDENCE = 0.95


def label_contrastive_loss(z: Tensor, y: Tensor, temperature: float) -> Tensor:
    """L_c of Eq. 1-2 on one batch of embeddings `z` [n, d] with labels `y` [n]."""
    zn = F.normalize(z, dim=1)
    s = zn @ zn.T / temperature
    same = y[:, None] == y[None, :]
    positive = same & ~torch.eye(len(y), dtype=torch.bool, device=y.device)
    negative = ~same
    if not bool(negative.any()):
        return z.sum() * 0.0
    log_denominator = torch.logsumexp(s[negative], 0)
    # log Σ over the positive pairs of each class: per row, then over the rows of the class
    row = torch.logsumexp(s.masked_fill(~positive, float("-inf")), 1)                      # [n]
    classes, of_row = torch.unique(y, return_inverse=True)
    in_class = of_row[:, None] == torch.arange(len(classes), device=y.device)[None, :]      # [n, C]
    log_numerator = torch.logsumexp(row[:, None].masked_fill(~in_class, float("-inf")), 0)  # [C]
    has_pair = in_class.sum(0) >= 2
    if not bool(has_pair.any()):
        return z.sum() * 0.0
    return -(log_numerator[has_pair] - log_denominator).mean()


def anchor_pseudo_labels(z: Tensor, anchors: Tensor, anchor_labels: Tensor, num_classes: int) -> tuple[Tensor, Tensor]:
    """Eq. 3-4: (ŷ, max_c s_c^avg) for embeddings `z` [n, d] against anchors [S, d] labeled
    `anchor_labels` [S]. Classes without anchors score −∞."""
    anchors = F.normalize(anchors.float(), dim=1)
    labels = anchor_labels.long()
    sums = torch.zeros(num_classes, anchors.shape[1], device=z.device).index_add_(0, labels, anchors)
    counts = torch.bincount(labels, minlength=num_classes).to(z.dtype)
    means = sums / counts.clamp(min=1)[:, None]            # mean of the class's normalised anchors
    scores = F.normalize(z, dim=1) @ means.T               # = s_c^avg (Eq. 3)
    scores = scores.masked_fill(counts[None, :] == 0, float("-inf"))
    best, labels_hat = scores.max(1)
    return labels_hat, best


# FedAnchorSettings.server_step. The default keeps the runs stored before the choice was a setting; the paper's
# cells (papers/fedanchor/cells.py) name 'head_by_head'.
SERVER_STEPS = ("all_parameters", "head_by_head")


@dataclass(frozen=True)
class FedAnchorSettings(SemiFLSettings):
    """FedAnchor's server step (§4.4-4.5) and the choices the paper leaves open (papers/fedanchor/READINGS.md)."""
    contrastive_temperature: float = setting(0.1, "[0.01, inf)", "τ of the label contrastive loss (Eq. 1); the "
                                             "paper gives no value; below 0.01, exp(cos/τ) overflows float32")
    contrastive_loss: bool = setting(True, (False, True), "False: Table 3's 'w/o contr loss' (anchor pseudo-labels, "
                                     "no L_c epoch)")
    contrastive_batch_size: int = setting(64, "[2, 1000000]", "anchors per batch of the L_c epoch (the paper gives "
                                          "none)")
    server_mixup: bool = setting(False, (False, True), "FedAnchor (mix): the server's supervised epoch trains on "
                                 "mixup (§4.5)")
    server_ce_view: str = setting("strong", ("strong", "weak"), "the server CE epoch on the anchors: 'strong' views "
                                  "(§4.5) or 'weak', SemiFL's (the comparison without that difference)")
    server_step: str = setting("all_parameters", SERVER_STEPS, "§4.4's two server epochs: 'head_by_head' (the CE "
                               "epoch trains all but the anchor head, the L_c epoch the anchor head only: the paper's "
                               "\"one epoch on the classification head ... one epoch on the anchor head\") or "
                               "'all_parameters' (both epochs train every parameter)")


class FedAnchor(AlternateTraining):
    name = "fedanchor"
    revision = 2     # 2: static BN (when on) also after pre-training: round 1's Z^anchor and pseudo-labels use it
    needs_projection = True    # the anchor head (RunConfig.projection_dim; the paper's is 128)
    settings = FedAnchorSettings

    # --- server ------------------------------------------------------------------------------
    def server_update(self, state: State, round: int, train) -> None:
        """Round 0: pre-training (Appendix C). Every round: Z^anchor from the current global model."""
        super().server_update(state, round, train)
        if round >= 1:
            _, z = self.ctx.predict(state["model"], self.ctx.server_view.labeled)
            state["anchors"] = z
            state["anchor_labels"] = self.ctx.images.y[self.ctx.server_view.labeled].to(torch.uint8)

    def server_train(self, state: State, train, lr: float | None = None, part: int = 0) -> None:
        """§4.4: one epoch of CE (or Appendix B's mixup, for FedAnchor (mix)), one of L_c; head by head,
        the CE epoch trains the backbone and the classification head, the L_c epoch the anchor head."""
        cfg, nets = self.cfg, {"model": state["model"]}
        classification, anchor = self.head_parameters()
        if cfg.server_epochs:
            train(nets, ("model",), self.server_loss, self.server_plan(), lr=lr, part=2 * part,
                  params=classification, momentum=self.kept_momentum(state, lr))
        if cfg.contrastive_loss:
            train(nets, ("model",), self.contrastive_step, Plan(epochs=1, labeled_batch=cfg.contrastive_batch_size),
                  lr=lr, part=2 * part + 1, params=anchor)

    def head_parameters(self) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """The parameters of the CE epoch and of the L_c epoch (None: every parameter)."""
        if self.cfg.server_step == "all_parameters":
            return None, None
        anchor = frozenset(n for n in self.parameter_names if n.startswith(ANCHOR_HEAD))
        return frozenset(self.parameter_names) - anchor, anchor

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        x = batch.labeled
        if not self.cfg.server_mixup:
            view = x.strong() if self.cfg.server_ce_view == "strong" else x.weak()
            loss = F.cross_entropy(self.ctx.apply(nets["model"], view), x.y)
            return loss, {"server_ce": loss.detach()}
        # Appendix B on the anchors' true labels: partners drawn with replacement from the batch
        partner = torch.randint(0, len(x), (len(x),), generator=x.generator).to(x.idx.device)
        lam = mixup_lambda(x.generator, self.cfg.mixup_beta)
        weak = x.weak()
        logits = self.ctx.apply(nets["model"], torch.cat([x.strong(), lam * weak + (1 - lam) * weak[partner]]))
        l_fix = F.cross_entropy(logits[:len(x)], x.y)
        l_mix = mixup_loss(logits[len(x):], x.y, x.y[partner], lam)
        return l_fix + self.cfg.mix_loss_weight * l_mix, {"server_ce": l_fix.detach()}

    def contrastive_step(self, nets: Nets, batch: Batch, step: Step):
        _, z = self.ctx.apply(nets["model"], batch.labeled.weak(), embed=True)
        loss = label_contrastive_loss(z, batch.labeled.y, self.cfg.contrastive_temperature)
        return loss, {"contrastive_loss": loss.detach()}

    def download(self, state: State, round: int, client: int) -> Payload:
        return {"model": state["model"], "anchors": state["anchors"], "anchor_labels": state["anchor_labels"]}

    # --- client ------------------------------------------------------------------------------
    def pseudo_label(self, model: Tensors, payload: Payload, idx: Tensor) -> tuple[Tensor, Tensor, dict]:
        logits, z = self.ctx.predict(model, idx)
        labels, score = anchor_pseudo_labels(z, payload["anchors"], payload["anchor_labels"], self.ctx.num_classes)
        probability = logits.softmax(1).max(1).values
        classifier_correct = (logits.argmax(1) == self.ctx.images.y[idx]).sum()   # Fig. 9's other curve
        # the samples SemiFL's test (softmax > 0.95) would keep from this classifier head: FedAnchor's
        # `selected` counts its own test (cosine > t), so only this count compares with SemiFL's (metrics only)
        confident = (probability > COMMON_CONFIDENCE).sum()
        return labels, score, {"correct_all_classifier": classifier_correct, "selected_softmax95": confident}
