"""SemiFL (Diao et al., NeurIPS 2022) as the FedAnchor paper runs it (fedanchor.txt §4.3-4.4,
Appendices B-C), and the alternate-training skeleton FedAnchor shares with it.

One round (FedAnchor's Algorithm 1, which is SemiFL's with another pseudo-labeller):

    each selected client m pseudo-labels its unlabeled data x^m with the global model w_t and keeps
    the fix set D_fix = {(x_i, ŷ_i) : score_i > t}                                  (Eq. 5)
    (no fix data: the client does not train and sends nothing)
    E local epochs of ⌈|D_fix| / B⌉ steps on  L = L_fix + b · L_mix                   (Eq. 10)
        L_fix = CE(f(A(x_fix)), ŷ_fix)                 A: strong augmentation         (Eq. 7)
        λ ~ Beta(a, a);  x̃ = λ α(x_fix) + (1 − λ) α(x_mix)                            (Eq. 8)
        L_mix = λ CE(f(x̃), ŷ_fix) + (1 − λ) CE(f(x̃), ŷ_mix)                          (Eq. 9)
    w_{t+1} = Σ_m n_m / Σ n_m · w^m_{t+1}                                            (line 10)
    w_{t+1} ← ServerTraining(w_{t+1}, labeled set)                                   (line 11)

SemiFL's pseudo-label is the model's own prediction, ŷ = argmax softmax f(x), score = its probability,
t = 0.95 (Appendix C). Its server training is `server_epochs` epochs of cross-entropy on the weakly augmented
labeled set, after pre-training on it (`pretrain_epochs` at `pretrain_lr`; Appendix C: 5 epochs, 0.05).

Reading choices, and why (the evidence and the alternatives: papers/fedanchor/READINGS.md, "SemiFL"):
- pseudo-labels once per round, from the downloaded model in eval mode on plain images (Algorithm 1); D_mix
  drawn with replacement from all the client's samples (Eq. 6); empty fix sets left out of the average;
  static BatchNorm after pre-training and each round's server training;
- SemiFL's own code, as named settings the FedAnchor cells turn on ("SemiFL as SemiFL's code runs it"):
  Nesterov, clipping, a cosine lr over the rounds, the server's momentum kept, a global momentum step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from ..learning.aggregate import weighted_mean
from ..learning.batches import Batch, DataView, Plan, UnlabeledPart
from ..config import setting
from ..learning.training import SGD, Nets, Step, Tensors
from .base import Algorithm, AlgorithmSettings, Payload, State, Upload, clone
from .fedfixmatch import FedFixMatch
from .static_batchnorm import static_statistics

if TYPE_CHECKING:
    from torch import Tensor


def mixup_lambda(generator: torch.Generator, a: float) -> float:
    """λ ~ Beta(a, a) (Eq. 8), drawn from the step's generator so a replayed round draws the same."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator).item())
    return float(np.random.default_rng(seed).beta(a, a))


def mixup_loss(logits: Tensor, y_a: Tensor, y_b: Tensor, lam: float) -> Tensor:
    """Eq. 9: λ CE(logits, y_a) + (1 − λ) CE(logits, y_b)."""
    return lam * F.cross_entropy(logits, y_a) + (1.0 - lam) * F.cross_entropy(logits, y_b)


@dataclass(frozen=True)
class SemiFLSettings(AlgorithmSettings):
    """SemiFL's client loss and the server's pre-training (fedanchor.txt Appendices B-C)."""
    mixup_beta: float = setting(0.75, "[1e-6, inf)", "a of λ_mix ~ Beta(a, a) (Eq. 8)")
    mix_loss_weight: float = setting(1.0, "[0, inf)", "b (Eq. 10)")
    pretrain_epochs: int = setting(0, "[0, 10000]", "server epochs on its labeled set before round 1 (FedAnchor: "
                                   "5, Appendix C)")
    pretrain_lr: float = setting(0.05, "(0, inf)", "their learning rate (Appendix C)")
    client_mixup: bool = setting(True, (False, True), "clients minimise L_fix + b·L_mix (Appendix B, Eq. 10); "
                                 "False: L_fix only")
    # SemiFL's own code (papers/fedanchor/READINGS.md, "SemiFL as SemiFL's code runs it": file and line of each);
    # the defaults keep the FedAnchor paper's plain SGD, which its Appendix C gives for every method
    nesterov: bool = setting(False, (False, True), "Nesterov momentum, server and clients (SemiFL's code: "
                             "src/utils.py L159)")
    clip_grad_norm: float = setting(0.0, "[0, inf)", "every step's gradient clipped to this norm, server and clients "
                                    "(torch's clip_grad_norm_; SemiFL's code: 1, src/modules/modules.py L165); 0: none")
    lr_schedule: str = setting("constant", ("constant", "cosine"), "'cosine': lr·(1 + cos(π(t−1)/T))/2 in round t of "
                               "T, server and clients, pre-training apart (SemiFL's code: CosineAnnealingLR stepped "
                               "once a round, src/train_classifier_ssfl.py L50, L93)")
    server_momentum_kept: bool = setting(False, (False, True), "the server's SGD velocity carried from each round's "
                                         "training to the next (SemiFL's code: src/modules/modules.py L151, L201); "
                                         "False: a fresh one each round")
    global_momentum: float = setting(0.0, "[0, 1)", "μ_g: the aggregate is an SGD step (lr 1, momentum μ_g) on the "
                                     "parameters' pseudo-gradient w_t − Σ_m p_m w^m (SemiFL's code: gm = 0.5, "
                                     "src/modules/modules.py L39-59); 0: the weighted mean itself")


class AlternateTraining(Algorithm):
    """Server training alternating with clients that train on their confident pseudo-labels.
    Subclasses give the pseudo-labeller (`pseudo_label`) and the server's training (`server_train`).

    No cohort trainer: each client draws its mixup partners and λ from its own generator inside the
    loss, and its fix set (the samples that passed the threshold) differs in size between clients."""
    # supervised training is the server's; clients train on pseudo-labels of their unlabeled data
    labels_at = ("server",)
    settings = SemiFLSettings
    # the pseudo-labels with the running statistics (Context.predict: eval mode), as SemiFL's code
    # (diaoenmao/SemiFL, src/modules/modules.py at 4ec3663: model.train(False) before make_dataset's and the
    # client's pseudo-labels); FedAnchor's anchors and samples the same way
    target_statistics = "running"
    reads_also = ("pseudo_label_threshold",)    # FedFixMatch's T, the clients' confidence threshold

    def init_state(self, initial: Tensors) -> State:
        state = {"model": initial, "last": {}}
        if self.cfg.server_momentum_kept:
            state["server_momentum"] = {}      # the server optimiser's velocity, by parameter
        if self.cfg.global_momentum:
            state["global_momentum"] = {}      # the aggregation's velocity, by parameter
        return state

    # --- optimisers (SemiFL's code, where its settings ask: see SemiFLSettings) --------------
    def lr_factor(self, round: int) -> float:
        """The cosine schedule's factor in `round` (1-based; 1 before round 1), or 1."""
        if self.cfg.lr_schedule == "constant" or round < 1:
            return 1.0
        return 0.5 * (1.0 + math.cos(math.pi * (round - 1) / self.cfg.rounds))

    def client_sgd(self, round: int) -> SGD:
        cfg = self.cfg
        return SGD(cfg.lr * self.lr_factor(round), cfg.momentum, cfg.weight_decay, cfg.nesterov, cfg.clip_grad_norm)

    def server_sgd(self, round: int, lr: float | None = None) -> SGD:
        base = super().server_sgd(round, lr)
        scaled = base.lr if lr is not None else base.lr * self.lr_factor(round)     # pre-training's own lr: unscheduled
        return replace(base, lr=scaled, nesterov=self.cfg.nesterov, clip_norm=self.cfg.clip_grad_norm)

    # --- server ------------------------------------------------------------------------------
    def server_update(self, state: State, round: int, train) -> None:
        """Before round 1: pre-training on the labeled set (Appendix C); with static BN, the
        statistics that round 1's pseudo-labels use are then recomputed (SemiFL's code does so
        before every download)."""
        if round == 0:
            for epoch in range(self.cfg.pretrain_epochs):
                self.server_train(state, train, lr=self.cfg.pretrain_lr, part=epoch)
            state["model"] = static_statistics(self, state["model"])

    def server_finish(self, state: State, round: int, train) -> None:
        """Algorithm 1 line 11: the aggregated model trains on the labeled set; with static BN the
        global model's BatchNorm statistics are then recomputed there (SemiFL's sBN)."""
        self.server_train(state, train)
        state["model"] = static_statistics(self, state["model"])

    def server_train(self, state: State, train, lr: float | None = None, part: int = 0) -> None:
        if self.cfg.server_epochs:
            train({"model": state["model"]}, ("model",), self.server_loss,
                  self.server_plan(), lr=lr, part=part, momentum=self.kept_momentum(state, lr))

    def kept_momentum(self, state: State, lr: float | None) -> dict | None:
        """The server's velocity carried across the rounds' trainings (`server_momentum_kept`); pre-training
        (its own `lr`) starts its own."""
        return state["server_momentum"] if self.cfg.server_momentum_kept and lr is None else None

    server_loss = FedFixMatch.server_loss       # cross-entropy on the weakly augmented labeled set

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        trained = [u for u in uploads if "model" in u.payload]
        model = (weighted_mean([u.payload["model"] for u in trained], self.client_weights(trained))
                 if trained else state["model"])
        if trained and self.cfg.global_momentum:
            model = self.global_step(state, model)
        return {**state, "model": model, "last": _round_report([u.payload["report"] for u in uploads])}

    def global_step(self, state: State, mean: Tensors) -> Tensors:
        """SemiFL's global optimiser: SGD (lr 1, momentum μ_g, no weight decay, no Nesterov) with the
        gradient w_t − mean on the network's parameters; the buffers (BatchNorm statistics) are the mean's.
        With μ_g = 0 this is the mean itself."""
        velocity, model, names = state["global_momentum"], dict(mean), self.parameter_names
        params = [state["model"][n].clone() for n in names]
        kept = SGD(1.0, self.cfg.global_momentum, 0.0).step(
            params, [state["model"][n] - mean[n] for n in names], [velocity[n] for n in names] if velocity else None)
        velocity.update(zip(names, kept))
        model.update(zip(names, params))
        return model

    def round_metrics(self, state: State) -> dict[str, float]:
        return dict(state["last"])

    # --- client ------------------------------------------------------------------------------
    def pseudo_label(self, model: Tensors, payload: Payload, idx: Tensor) -> tuple[Tensor, Tensor, dict]:
        """(ŷ, score, extra report) for the training images `idx`; a sample is kept when
        score > threshold. The report's tensors are metrics, summed over the round's clients."""
        raise NotImplementedError

    def client_init(self, payload: Payload, view: DataView) -> Nets:
        model = clone(payload["model"])
        labels, score, extra = self.pseudo_label(model, payload, view.unlabeled)
        keep = score > self.cfg.pseudo_label_threshold
        correct = labels == self.ctx.images.y[view.unlabeled]      # metrics only
        return {"model": model, "fix": {"idx": view.unlabeled[keep], "label": labels[keep]},
                "all": {"idx": view.unlabeled, "label": labels},
                "report": {"selected": keep.sum(), "correct_selected": (correct & keep).sum(),
                           "correct_all": correct.sum(), "unlabeled": torch.tensor(view.num_unlabeled), **extra}}

    def local_view(self, nets: Nets, view: DataView) -> DataView:
        return DataView(view.labeled[:0], nets["fix"]["idx"])

    def plan(self, view: DataView, round: int) -> Plan:
        return Plan(epochs=self.cfg.local_epochs, labeled_batch=0, unlabeled_batch=self.cfg.batch_size,
                    epoch_over="unlabeled")

    def loss(self, nets: Nets, batch: Batch, step: Step):
        cfg, u, fix = self.cfg, batch.unlabeled, nets["fix"]
        y = fix["label"][u.pos]
        if not cfg.client_mixup:
            l_fix = F.cross_entropy(self.ctx.apply(nets["model"], u.strong()), y)
            return l_fix, {"fix_loss": l_fix.detach()}
        generator, everyone = u.generator, nets["all"]
        partner_pos = torch.randint(0, int(everyone["idx"].numel()), (len(u),),
                                    generator=generator).to(everyone["idx"].device)
        partner = UnlabeledPart(u.images, everyone["idx"][partner_pos], partner_pos, generator)
        lam = mixup_lambda(generator, cfg.mixup_beta)
        mixed = lam * u.weak() + (1.0 - lam) * partner.weak()
        logits = self.ctx.apply(nets["model"], torch.cat([u.strong(), mixed]))   # one joint batch
        l_fix = F.cross_entropy(logits[:len(u)], y)
        l_mix = mixup_loss(logits[len(u):], y, everyone["label"][partner_pos], lam)
        return l_fix + cfg.mix_loss_weight * l_mix, {"fix_loss": l_fix.detach(), "mix_loss": l_mix.detach()}

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        """The model, when the client trained; always its report (metrics only: Python numbers,
        which the byte count leaves out)."""
        report = {k: float(v) for k, v in nets["report"].items()}
        return {"model": nets["model"], "report": report} if report["selected"] > 0 else {"report": report}


def _round_report(reports: list[dict[str, float]]) -> dict[str, float]:
    """Round metrics from the clients' reports: mean selected per client (and `selected_*` counts, e.g.
    FedAnchor's samples past SemiFL's test), accuracies in % of the kept and of all unlabeled samples
    (`correct_all*` entries, e.g. FedAnchor's classifier head)."""
    selected = sum(r["selected"] for r in reports)
    unlabeled = sum(r["unlabeled"] for r in reports)
    out = {"selected": selected / max(len(reports), 1)}
    for key in sorted(k for k in (reports[0] if reports else {}) if k.startswith("selected_")):   # other counts
        out[key] = sum(r[key] for r in reports) / len(reports)
    if selected:
        out["pseudo_label_accuracy"] = 100.0 * sum(r["correct_selected"] for r in reports) / selected
    if unlabeled:
        for key in sorted(k for k in reports[0] if k.startswith("correct_all")):
            out["pseudo_label_accuracy" + key[len("correct"):]] = 100.0 * sum(r[key] for r in reports) / unlabeled
    return out


class SemiFL(AlternateTraining):
    name = "semifl"
    revision = 2     # 2: static BN also after pre-training, so round 1's pseudo-labels use recomputed statistics

    def pseudo_label(self, model: Tensors, payload: Payload, idx: Tensor) -> tuple[Tensor, Tensor, dict]:
        """The model's own prediction and its probability (threshold 0.95, Appendix C)."""
        logits, _ = self.ctx.predict(model, idx)
        score, labels = logits.softmax(1).max(1)
        return labels, score, {}


class SupervisedFL(AlternateTraining):
    """FedAnchor's "Supervised" baseline (Table 1 caption, Appendix C): standard FL in which the
    clients train on their samples' *true* labels (the label-free assumption dropped, an upper
    reference), with weak augmentation only ("no strong augmentation"), alternating with the
    server's training on the anchors, from the anchor-pre-trained model."""
    name = "supervised_fl"

    def pseudo_label(self, model: Tensors, payload: Payload, idx: Tensor) -> tuple[Tensor, Tensor, dict]:
        labels = self.ctx.images.y[idx]    # the oracle: this baseline is defined by training on them
        return labels, torch.ones(labels.shape, device=labels.device), {}

    def loss(self, nets: Nets, batch: Batch, step: Step):
        u = batch.unlabeled
        l_sup = F.cross_entropy(self.ctx.apply(nets["model"], u.weak()), nets["fix"]["label"][u.pos])
        return l_sup, {"supervised_loss": l_sup.detach()}
