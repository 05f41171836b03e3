"""FedMix (Zhang et al., "Semi-Supervised Federated Learning with non-IID Data: Algorithm and System
Design", fedmix-fedfreq.txt; and its journal version with FedLoss, fedmix-fedloss-zh.txt), in the
labels-at-server scenario, and the supervised-only baseline at the server.

One round, in the papers' symbols (Algorithm 1 of both):

    σ_t ← ω_t;  σ_{t+1} = σ_t − η ∇L_s(σ_t)  over the server's N_s labeled samples    (Eq. 6)
    ψ_t^k ← ω_t;  ψ_{t+1}^k = ψ_t^k − η ∇L_u(ψ_t^k)  on client k's unlabeled data       (Eq. 7)
    ψ_{t+1} = Σ_k w^k ψ_{t+1}^k       w^k: FedAvg, FedFreq (Eq. 10) or FedLoss (journal Eq. 12)
    ω_{t+1} = α ψ_{t+1} + β σ_{t+1} + γ ω_t,   α + β + γ = 1                          (Eq. 9)

    L_s(σ) = λ_s CE(y, f_σ(x))
    L_u(ψ) = λ_1 CE(ŷ, f_ψ(u)) + λ_2 ‖f_ψ(π_1(u)) − f_ψ(π_2(u))‖²                   (journal Eq. 7)
    ȳ = 1/A Σ_{i=1..A} f_ψ(π_i(u));  ŷ = Sharpen(ȳ, T) (journal Eq. 8-9) or one-hot argmax ȳ (Eq. 8)

with π_1 a shift, π_2 a flip, A = 5 views and a confidence threshold τ = 0.80 on max ȳ.

Reading choices, and why (the evidence and the alternatives: papers/fedmix/READINGS.md, "FedMix"):
- clients start from ω_t (Algorithm 1); the conference paper's λ_L1 tether term only in its own cells (`fedmix_tether`);
- ŷ from A shift+flip views without gradient, a target in eval mode; λ_s = λ_1 = λ_2 = 1, T = 0.5 (MixMatch's);
- Eq. 9 mixes all floating state, BatchNorm statistics included; FedLoss's l^k is the mean L_u.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..learning.aggregate import weighted_mean
from ..learning.batches import Batch, DataView, Plan
from ..config import setting
from ..data.augment import AugmentSpec, apply_crop_flip, draw_crop_flip
from ..data.streams import CohortDraws
from ..learning.training import Nets, Step, Tensors
from .base import RUNNING_READING, Algorithm, AlgorithmSettings, Payload, State, Upload, clone, mixed_plan

if TYPE_CHECKING:
    from torch import Tensor


def sharpen(probs: Tensor, temperature: float) -> Tensor:
    """Journal Eq. 9: ŷ_j = ȳ_j^{1/T} / Σ_c ȳ_c^{1/T}, per row."""
    powered = probs.pow(1.0 / temperature)
    return powered / powered.sum(1, keepdim=True)


def mix_models(psi: Tensors, sigma: Tensors, omega: Tensors, alpha: float, beta: float, gamma: float) -> Tensors:
    """Eq. 9: ω_{t+1} = α ψ_{t+1} + β σ_{t+1} + γ ω_t for floating tensors; integer buffers from ψ."""
    return {k: (alpha * psi[k] + beta * sigma[k] + gamma * omega[k]) if psi[k].is_floating_point() else psi[k].clone()
            for k in psi}


@dataclass(frozen=True)
class CropFlip:
    """augment.random_crop_flip under the dataset's spec, its translation or its flip turned off: a
    `learning.batches.Transform` (its draws, then their application)."""
    shift: bool = True
    flip: bool = True

    def spec(self, spec: AugmentSpec) -> AugmentSpec:
        return AugmentSpec(flip=self.flip and spec.flip, pad=spec.pad if self.shift else 0)

    def draw(self, n: int, source: torch.Generator | CohortDraws, spec: AugmentSpec) -> dict[str, Tensor]:
        return draw_crop_flip(n, source, self.spec(spec))

    def apply(self, x: Tensor, draws: dict[str, Tensor], spec: AugmentSpec) -> Tensor:
        return apply_crop_flip(x, draws, self.spec(spec))


PI = CropFlip()                   # π_i of ȳ (Eq. 8): a shift and a flip
SHIFT = CropFlip(flip=False)      # π_1: a random translation by up to spec.pad pixels (reflect-padded), no flip
FLIP = CropFlip(shift=False)      # π_2: a random horizontal flip (p = 0.5) where the dataset allows one, else none


@dataclass(frozen=True)
class FedMixSettings(AlgorithmSettings):
    """FedMix's Eq. 7-9 (fedmix-fedfreq.txt, fedmix-fedloss-zh.txt) and the choices the papers leave open."""
    mix_alpha: float = setting(0.5, "[0, 1]", "α: weight of the aggregated unsupervised model ψ in ω_{t+1} (Eq. 9)")
    mix_beta: float = setting(0.3, "[0, 1]", "β: weight of the server's supervised model σ")
    mix_gamma: float = setting(0.2, "[0, 1]", "γ: weight of the previous global model ω_t; α+β+γ = 1")
    fedmix_pseudo_label: str = setting("sharpen", ("sharpen", "argmax"), "'sharpen' (journal Eq. 8-9) or 'argmax' "
                                       "(conference Eq. 8)")
    sharpen_temperature: float = setting(0.5, "[0.01, inf)", "T of Sharpen; the papers give none, 0.5 is "
                                         "MixMatch's (below 0.01, p^(1/T) underflows float32: Sharpen is 0/0)")
    fedmix_views: int = setting(5, "[1, 100]", "A: augmented views averaged into the pseudo-label")
    fedmix_lambda_1: float = setting(1.0, "[0, inf)", "λ_1: weight of the pseudo-label cross-entropy (Eq. 7; no "
                                     "value in the papers)")
    fedmix_lambda_2: float = setting(1.0, "[0, inf)", "λ_2: weight of the shift-vs-flip consistency (Eq. 7; no "
                                     "value in the papers)")
    fedmix_client_start: str = setting("omega", ("omega", "sigma"), "ψ_t^k ← ω_t (Algorithm 1 line 13 of both "
                                       "papers) or 'sigma': ← σ_{t+1}, the server's new supervised model (a "
                                       "sensitivity row, not the papers')")
    fedmix_warmup_rounds: int = setting(0, "[0, 1000000]", "rounds in which ω_{t+1} = σ_{t+1} before Eq. 9 applies "
                                        "(neither paper has one)")
    fedmix_teacher: str = setting("trained", ("trained", "received"), "whose ȳ (Eq. 8): 'trained', ψ as it is "
                                  "trained, or 'received', ψ_t^k = ω_t as downloaded, frozen for the round")
    fedmix_tether: float = setting(0.0, "[0, inf)", "λ_L1 of the conference paper's Eq. 7: + λ_L1‖σ_t − ψ_t^k‖² over "
                                   "the parameters, σ_t = ω_t as received (its Algorithm 1 line 4); 0: the journal's "
                                   "L_u, without it")
    fedmix_log_parts: bool = setting(False, (False, True), "also log each evaluation's test accuracy of ψ_{t+1} (the "
                                     "clients' mean) and σ_{t+1} (`accuracy_psi`, `accuracy_sigma`) beside ω_{t+1}'s")


class FedMix(Algorithm):
    name = "fedmix"
    cohort = True
    labels_at = ("server",)    # L_s at the server; clients minimise L_u and never read a label
    settings = FedMixSettings
    reads_also = ("pseudo_label_threshold",)    # the confidence threshold (FedFixMatch's T)
    target_statistics = RUNNING_READING         # no code of FedMix's own: the reading FedMatch shares (base.py)

    @staticmethod
    def _mix_weights(cfg, facts):
        mix = cfg.mix_alpha + cfg.mix_beta + cfg.mix_gamma
        if abs(mix - 1.0) > 1e-6:
            return (f"mix_alpha={cfg.mix_alpha}, mix_beta={cfg.mix_beta}, mix_gamma={cfg.mix_gamma}: "
                    f"sum to {mix:g}; FedMix's Eq. 9 needs α+β+γ = 1")

    @staticmethod
    def _warmup_within_rounds(cfg, facts):
        if issubclass(facts.algorithm, FedMix) and 0 < cfg.rounds <= cfg.fedmix_warmup_rounds:
            return (f"fedmix_warmup_rounds={cfg.fedmix_warmup_rounds}, rounds={cfg.rounds}: a warm-up of every "
                    "round never applies Eq. 9 (the run would be SL); give fewer warm-up rounds than rounds")

    checks = (_mix_weights, _warmup_within_rounds)

    # --- server ------------------------------------------------------------------------------
    def server_update(self, state: State, round: int, train) -> None:
        """σ_t ← ω_t, then `server_epochs` epochs of L_s on the labeled set (Eq. 6)."""
        if round == 0:
            return
        nets = {"model": clone(state["model"])}
        if self.cfg.server_epochs:
            train(nets, ("model",), self.server_loss,
                  self.server_plan())
        state["sigma"] = nets["model"]

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        logits = self.ctx.apply(nets["model"], batch.labeled.plain())
        return F.cross_entropy(logits, batch.labeled.y), {}

    def download(self, state: State, round: int, client: int) -> Payload:
        """ω_t (Algorithm 1 line 13); `fedmix_client_start='sigma'`: σ_{t+1} instead (a sensitivity row)."""
        return {"model": state["sigma"] if self.cfg.fedmix_client_start == "sigma" else state["model"]}

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        cfg = self.cfg
        if round <= cfg.fedmix_warmup_rounds:     # a warm-up (sensitivity row): ω_{t+1} = σ_{t+1}
            parts = ({"psi": weighted_mean([u.payload["model"] for u in uploads], self.client_weights(uploads)),
                      "sigma": state["sigma"]} if cfg.fedmix_log_parts else {})
            return {"model": clone(state["sigma"]), **parts}
        psi = weighted_mean([u.payload["model"] for u in uploads], self.client_weights(uploads))
        omega = mix_models(psi, state["sigma"], state["model"], cfg.mix_alpha, cfg.mix_beta, cfg.mix_gamma)
        return {"model": omega, **({"psi": psi, "sigma": state["sigma"]} if cfg.fedmix_log_parts else {})}

    def eval_parts(self, state: State) -> dict[str, Tensors]:
        """With `fedmix_log_parts`: ψ_{t+1} and σ_{t+1}, the two models Eq. 9 mixes into ω_{t+1}."""
        return {k: state[k] for k in ("psi", "sigma") if k in state} if self.cfg.fedmix_log_parts else {}

    # --- client ------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        """ψ_t^k ← ω_t; with `fedmix_teacher='received'` also ω_t itself, frozen, whose ȳ the round uses."""
        nets = {"model": clone(payload["model"])}
        if self.cfg.fedmix_teacher == "received":
            nets["teacher"] = payload["model"]
        if self.cfg.fedmix_tether:
            nets["tether"] = payload["model"]      # σ_t = ω_t (conference Algorithm 1 line 4), never trained
        return nets

    def plan(self, view: DataView, round: int) -> Plan:
        return mixed_plan(self.cfg, view)

    def loss(self, nets: Nets, batch: Batch, step: Step):
        """L_u (journal Eq. 7) on the batch's unlabeled samples."""
        cfg, u = self.cfg, batch.unlabeled
        n = len(u)
        model = nets["model"]
        teacher = nets.get("teacher", model)
        with torch.no_grad():        # ȳ over A views (Eq. 8), one forward for all of them
            views = torch.cat([u.transformed(f"pi{i}", PI) for i in range(cfg.fedmix_views)])
            mean_probs = self.target(teacher, views).softmax(1).view(cfg.fedmix_views, n, -1).mean(0)
            confidence, hard = mean_probs.max(1)
            mask = (confidence >= cfg.pseudo_label_threshold).to(mean_probs.dtype)
            target = (sharpen(mean_probs, cfg.sharpen_temperature) if cfg.fedmix_pseudo_label == "sharpen"
                      else F.one_hot(hard, mean_probs.shape[1]).to(mean_probs.dtype))
        logits = self.ctx.apply(model, torch.cat([u.plain(), u.transformed("shift", SHIFT),
                                                  u.transformed("flip", FLIP)]))
        plain, shifted, flipped = logits[:n], logits[n:2 * n], logits[2 * n:]
        pseudo_label = (-(target * plain.log_softmax(1)).sum(1) * mask).mean()
        consistency = (shifted.softmax(1) - flipped.softmax(1)).pow(2).sum(1).mean()
        loss = cfg.fedmix_lambda_1 * pseudo_label + cfg.fedmix_lambda_2 * consistency
        correct = (hard == u.hidden_labels).to(mask.dtype)      # metrics only
        stats = {"pseudo_label_loss": pseudo_label.detach(), "consistency_loss": consistency.detach(),
                 "mask_rate": mask.mean(), "masked_correct_rate": (mask * correct).mean()}
        if cfg.fedmix_tether:      # conference Eq. 7's λ_L1‖σ_t − ψ_t^k‖², over the network's parameters
            tether = sum((model[k] - nets["tether"][k].detach()).pow(2).sum() for k in self.parameter_names)
            loss = loss + cfg.fedmix_tether * tether
            stats["tether_loss"] = tether.detach()
        return loss, stats


class SupervisedAtServer(Algorithm):
    """The journal's supervised-only baseline ("SL"): the global model trained on the server's N_s
    labeled samples alone, `server_epochs` epochs per round; clients receive and send nothing.

    Its batches are the plain images, as FedMix's σ sees them. A named `weak_augment` ('flip_only',
    'authors_server') augments them with that view instead: FedSiam's Table 6 row "the server alone,
    as the authors' labels-at-server code trains it" (papers/fedsiam/authors_code.py, TABLE6_SERVER_ALONE)."""
    name = "supervised_server"
    trainable = ()
    labels_at = ("server",)

    def server_update(self, state: State, round: int, train) -> None:
        if round == 0 or self.cfg.server_epochs == 0:
            return
        train({"model": state["model"]}, ("model",), self.server_loss,
              self.server_plan())

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        x = batch.labeled.plain() if self.cfg.weak_augment == "dataset" else batch.labeled.weak()
        return F.cross_entropy(self.ctx.apply(nets["model"], x), batch.labeled.y), {}

    def download(self, state: State, round: int, client: int) -> Payload:
        return {}

    def client_init(self, payload: Payload, view: DataView) -> Nets:
        return {}

    def plan(self, view: DataView, round: int) -> Plan:
        return Plan(epochs=0, labeled_batch=0)

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        return {}

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        return state
