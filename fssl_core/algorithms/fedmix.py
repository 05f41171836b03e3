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

Reading choices, and why (see also the config comments of the fedmix_* fields):
- Clients start from ω_t, not from the new σ_{t+1} (Algorithm 1: ψ_t^k ← ω_t); the server's σ
  enters only through the mix. What crosses the network is one model each way: ω_t down, ψ^k up
  (the journal's "half the communication" of FedMatch, which sends σ and ψ, rests on this).
- The conference paper's λ_L1 ‖σ_t − ψ_t^k‖² term is left out, as the journal does: the client
  cannot know σ without a second download, which the journal's communication claim excludes.
- f is the softmax output. ŷ is computed without gradient from the A views π_i(u) = random shift
  + flip (the papers' "flip and shift", with the dataset's flip setting; digits are not flipped).
  The confidence test is on max ȳ before sharpening (after sharpening τ = 0.8 would admit far less
  confident samples). CE(ŷ, f(u)) is on the un-augmented u, as Eq. 7 writes; masked samples count
  as 0 and the mean is over the batch (Eq. 3's 1/m Σ).
- The consistency is the squared L2 distance between the softmax outputs of a shifted and a flipped
  view, summed over classes and averaged over the batch.
- λ_s = λ_1 = λ_2 = 1 and T = 0.5 (MixMatch's): the papers give no values.
- All floating state is mixed by Eq. 9, BatchNorm running statistics included; integer counters
  are taken from ψ.
- ȳ is a target (Context.target): BatchNorm in eval mode, on the running statistics of the
  client's model, which it does not update. The papers say nothing of BatchNorm (their one mention
  is FedBN, as related work: EN line 25, ZH line 50). The alternative, and this package's earlier computation,
  is train mode, where a batch is normalised with its own statistics: on a Dirichlet-0.1 client one
  or two classes fill the batch, and its own statistics erase the offsets that tell the dominant
  class apart. Measured on ResNet-9 (CPU, 2026-11-26): SL's ω after
  4 rounds of the streaming setting (79.6% on the test set), 64 unlabeled samples of each client, A = 5
  views, the same tensors: ȳ's argmax is right for 72.1% of them in eval mode and 55.0% in train
  mode (the most skewed client, 95% one class: 66.7% vs 30.2%; near-balanced batches drawn from all
  clients: 72.4% vs 69.8%). The H200 paper-protocol runs before the fix (mask 0.86-0.99, 6% of samples
  masked and right from round 7 on) read as these wrong pseudo-labels trained on and fed back. A
  narrow copy on CPU (ResNet-9 at 1/8 width, 6 SL rounds, then FedMix-FedLoss rounds 7-14 at τ = 0.5)
  shows the start of it: with the train-mode ȳ the share of masked pseudo-labels that are right fell
  from 81% to 36% (mask 0.17 → 0.41, masked-and-right flat at 0.14-0.16, ψ's test accuracy 73% → 45%);
  with the eval-mode ȳ from 83% to 64% (mask 0.45 → 0.63, ψ 71% → 52%). Neither copy passes SL (ω at
  round 14: 70.5% and 67.2%, σ 74%); the paper-protocol rerun will say what the fix does there.
- Whose ȳ: the trained ψ (default, `fedmix_teacher='trained'`) or the received ψ_t^k = ω_t, frozen for the
  round (`'received'`). Eq. 8 of the journal (ZH line 141) writes ȳ = 1/A Σ f_{ψ_t^k}(π_i(u)) with
  ψ_t^k ← ω_t (Step 3, ZH line 131): read literally, the received model; but Eq. 7 writes the trained
  model with the same symbol, so both readings fit the text. What separates them: ψ's trained
  forwards run BatchNorm in train mode and so move ψ's running statistics toward its client's skewed
  batches, and an eval-mode ȳ from ψ follows them. Measured on a narrow copy (papers/fedmix/diagnose.py:
  ResNet-9 at 1/8 width on CPU, streaming Fashion-MNIST, FedMix-FedLoss, τ = 0.8, seed 1, 12 rounds;
  measurements/2026-11-26-cpu-fedmix-narrow/): over rounds 6-12, ȳ's argmax was right for 49-57% of a
  step's unlabeled samples from the trained ψ, 57-66% from the received ω_t, and 55-64% from ψ's weights
  with ω_t's running statistics: most of the gap is the statistics (their drift from ω_t's, 2|ψ−ω|/(|ψ|+|ω|),
  grows from 0 to 0.29 over a client's round), the rest ψ's weights. Within a round, the trained ψ's
  accuracy falls with the step (rounds 5-12: 0.57 at step 0, 0.49 at step 8) while ω_t's does not. The default stays
  the trained ψ until the paper-protocol runs of both readings exist (a GPU's work); the narrow copy's
  three-seed comparison is in that folder.
- FedLoss's l^k is the client's mean training loss L_u over the round's steps (the journal's "loss
  value of the client's model training", available at no cost).

Why FedMix trails SL on streaming Fashion-MNIST (measured, quick protocol: MNIST CNN,
lr 1e-3, momentum 0.9; numbers in notebooks/fedmix_streaming_fmnist). Not a bug: ψ^k starts from ω_t,
σ from a copy of ω_t, the mix takes ψ_{t+1}, σ_{t+1}, ω_t (tests pin each; the CNN has no
BatchNorm, so no statistics are mixed). The clients' L_u is inert: no ȳ reaches τ = 0.8 (the mask
rate is 0.000 in each of the first 20 rounds, and also at τ = 0.5), so the pseudo-label term is 0,
and the consistency between two near-uniform softmax outputs is ~6e-5, so |ψ_{t+1} − ω_t| ≈ 5e-5
against |σ_{t+1} − ω_t| ≈ 0.035. With ψ ≈ ω_t, Eq. 9 is ω_{t+1} = ω_t + β(σ_{t+1} − ω_t): SL's step
times β = 0.3. SL at lr 3e-4 = β·lr follows FedMix's curve (24.5% vs 25.2% at round 20; SL 55.2%).
Every reading of L_u the papers leave open (λ_2 ∈ {0, 1, 10}, Sharpen T = 0.5 or the argmax, τ on
ȳ or on the sharpened ŷ, τ = 0.5) gives 24.9-25.2% at round 20, because none makes L_u move ψ.
Only readings that hand the clients' ψ the server's progress or a confident model help, and none
reaches SL: clients starting from σ_{t+1} (against Algorithm 1 line 13: ψ_t^k ← ω_t) 41.3%, ten SL
rounds before the mix (a warm-up neither paper has) 34.4%; at lr 1e-2 pseudo-labels pass (mask
0.1-0.4) and FedMix peaks at 63.7% and oscillates, SL 72.6%. So the journal's "FedMix above SL"
(Table 1, ZH line 239) cannot hold under Eq. 9 unless L_u alone out-trains the server's
supervised step, which it does not here; we keep the papers' reading and report the gap.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ..aggregate import weighted_mean
from ..batches import Batch, DataView, Plan
from ..config import setting
from ..data.augment import AugmentSpec, random_crop_flip
from ..training import Nets, Step, Tensors
from .base import Algorithm, AlgorithmSettings, Payload, State, Upload, clone, mixed_plan


def sharpen(probs: Tensor, temperature: float) -> Tensor:
    """Journal Eq. 9: ŷ_j = ȳ_j^{1/T} / Σ_c ȳ_c^{1/T}, per row."""
    powered = probs.pow(1.0 / temperature)
    return powered / powered.sum(1, keepdim=True)


def mix_models(psi: Tensors, sigma: Tensors, omega: Tensors, alpha: float, beta: float, gamma: float) -> Tensors:
    """Eq. 9: ω_{t+1} = α ψ_{t+1} + β σ_{t+1} + γ ω_t for floating tensors; integer buffers from ψ."""
    return {k: (alpha * psi[k] + beta * sigma[k] + gamma * omega[k]) if psi[k].is_floating_point() else psi[k].clone()
            for k in psi}


def shift(x: Tensor, generator: torch.Generator, spec: AugmentSpec) -> Tensor:
    """π_1: a random translation by up to spec.pad pixels (reflect-padded), no flip."""
    return random_crop_flip(x, generator, AugmentSpec(flip=False, pad=spec.pad))


def flip(x: Tensor, generator: torch.Generator, spec: AugmentSpec) -> Tensor:
    """π_2: a random horizontal flip (p = 0.5) where the dataset allows one, else the image itself."""
    return random_crop_flip(x, generator, AugmentSpec(flip=spec.flip, pad=0))


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


class FedMix(Algorithm):
    name = "fedmix"
    cohort = True
    labels_at = ("server",)    # L_s at the server; clients minimise L_u and never read a label
    settings = FedMixSettings
    reads_also = ("pseudo_label_threshold",)    # the confidence threshold (FedFixMatch's T)

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
            return {"model": clone(state["sigma"])}
        psi = weighted_mean([u.payload["model"] for u in uploads], self.client_weights(uploads))
        omega = mix_models(psi, state["sigma"], state["model"], cfg.mix_alpha, cfg.mix_beta, cfg.mix_gamma)
        return {"model": omega}

    # --- client ------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        """ψ_t^k ← ω_t; with `fedmix_teacher='received'` also ω_t itself, frozen, whose ȳ the round uses."""
        nets = {"model": clone(payload["model"])}
        if self.cfg.fedmix_teacher == "received":
            nets["teacher"] = payload["model"]
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
            views = torch.cat([u.transformed(f"pi{i}", random_crop_flip) for i in range(cfg.fedmix_views)])
            mean_probs = self.ctx.target(teacher, views).softmax(1).view(cfg.fedmix_views, n, -1).mean(0)
            confidence, hard = mean_probs.max(1)
            mask = (confidence >= cfg.pseudo_label_threshold).to(mean_probs.dtype)
            target = (sharpen(mean_probs, cfg.sharpen_temperature) if cfg.fedmix_pseudo_label == "sharpen"
                      else F.one_hot(hard, mean_probs.shape[1]).to(mean_probs.dtype))
        logits = self.ctx.apply(model, torch.cat([u.plain(), u.transformed("shift", shift),
                                                  u.transformed("flip", flip)]))
        plain, shifted, flipped = logits[:n], logits[n:2 * n], logits[2 * n:]
        pseudo_label = (-(target * plain.log_softmax(1)).sum(1) * mask).mean()
        consistency = (shifted.softmax(1) - flipped.softmax(1)).pow(2).sum(1).mean()
        loss = cfg.fedmix_lambda_1 * pseudo_label + cfg.fedmix_lambda_2 * consistency
        correct = (hard == u.hidden_labels).to(mask.dtype)      # metrics only
        return loss, {"pseudo_label_loss": pseudo_label.detach(), "consistency_loss": consistency.detach(),
                      "mask_rate": mask.mean(), "masked_correct_rate": (mask * correct).mean()}


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
