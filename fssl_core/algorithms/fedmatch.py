"""FedMatch (Jeong et al., "Federated Semi-Supervised Learning with Inter-Client Consistency &
Disjoint Learning", ICLR 2021), the FedSiam baseline of Section 4.1 and Table 3 (T = 0.95, H = 2,
strong augmentation), in both label scenarios.

The paper's method, in its symbols (Section 4; equations named as there, since the paper's own
numbering could not be checked offline; the official code is github.com/wyjeong/FedMatch):

Parameter decomposition (Sec. 4.2): θ = σ + ψ, σ learned from labeled data, ψ from unlabeled data.
The network a party applies is σ + ψ; here nets are {"sigma": σ, "psi": ψ}, ψ holding the
parameters only and σ also the buffers (BatchNorm statistics), which θ takes from σ.

    L_s(σ) = λ_s CE(y, p_{σ+ψ*}(y|x))                                   (labeled loss; ψ frozen)
    L_u(ψ) = λ_ICCS Φ_{σ*+ψ}(·) + λ_L2 ‖σ* − ψ‖²₂ + λ_L1 ‖ψ‖₁               (unlabeled loss; σ frozen)
    Φ(·)   = CE(ŷ, p_θl(y|π(u))) + 1/H Σ_j KL[p*_θhj(y|u) ‖ p_θl(y|u)]     (Sec. 4.1)
    ŷ      = Max(1(p*_θl(y|u)) + Σ_j 1(p*_θhj(y|u)))       (agreement-based pseudo-label)

* marks frozen parameters (no gradient), 1(·) the one-hot of the argmax, Max(·) the class with the
most votes, π(u) a strong augmentation (RandAugment), θ_hj = σ + ψ_hj the j-th of H helper
agents. Only samples whose local prediction is confident, max p_θl(y|u) ≥ T, enter Φ.

Reading choices, and why (the evidence and the alternatives: papers/fedsiam/READINGS.md, "FedMatch"):
- L_u's L2 term pulls ψ to the frozen σ; λ_ICCS weighs all of Φ; λ_s = 1 at FedSiam's lr 1e-2;
- momentum 0 (the official optimiser; 0.9 leaves the λ_L2 spring underdamped at lr 1e-2);
- one SGD step on L_s(σ) + L_u(ψ), each detached from the other's part; weak views as FedSiam's;
- helpers: frozen, every 10 rounds, nearest by embedding, masked slots; dense uploads; ψ_0 = 0.2σ_0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..learning.aggregate import weighted_mean
from ..learning.batches import Batch, BatchPart, DataView, Plan
from ..config import setting
from ..data.datasets import shape_of
from ..learning.training import Nets, Step, Tensors, no_grad
from .base import RUNNING_READING, Algorithm, AlgorithmSettings, Payload, State, Upload, clone, mixed_plan

if TYPE_CHECKING:
    from torch import Tensor

PSI_FACTOR = 0.2        # ψ_0 = 0.2 σ_0, the official `psi_factor`


# ---------------------------------------------------------------------------------------------
# Pure pieces (tested on hand cases)


def compose(sigma: Tensors, psi: Tensors, *, freeze_sigma: bool = False, freeze_psi: bool = False) -> Tensors:
    """θ = σ + ψ on every parameter ψ holds; the other entries of σ (buffers) are σ's own tensors,
    so BatchNorm's running statistics, updated in place in train mode, stay in σ. `freeze_*`
    detaches that part (the * of σ* and ψ*)."""
    out = {}
    for k, s in sigma.items():
        if k in psi:
            out[k] = (s.detach() if freeze_sigma else s) + (psi[k].detach() if freeze_psi else psi[k])
        else:
            out[k] = s
    return out


def agreement_pseudo_labels(local_probs: Tensor, helper_probs: list[Tensor], threshold: float,
                            present: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """ŷ = Max(1(p*_θl(y|u)) + Σ_j 1(p*_θhj(y|u))) and the confidence mask 1[max p_θl(y|u) ≥ T].

    Ties that include the local model's class go to it (its vote counts 1.5); other ties to the
    lowest class index. `present[j]` (1 or 0) says whether helper slot j holds a helper; an empty
    slot casts no vote. Returns (ŷ as class indices, mask as floats)."""
    confidence, local = local_probs.max(1)
    num_classes = local_probs.shape[1]
    votes = 1.5 * F.one_hot(local, num_classes).to(local_probs.dtype)
    for j, probs in enumerate(helper_probs):
        vote = F.one_hot(probs.argmax(1), num_classes).to(local_probs.dtype)
        votes = votes + (vote if present is None else present[j] * vote)
    return votes.argmax(1), (confidence >= threshold).to(local_probs.dtype)


def l1_norm(psi: Tensors) -> Tensor:
    """‖ψ‖₁ = Σ |ψ| over every parameter."""
    return sum(p.abs().sum() for p in psi.values())


def l2_to_sigma(psi: Tensors, sigma: Tensors) -> Tensor:
    """‖σ* − ψ‖²₂ = Σ (σ − ψ)² over every parameter of ψ, σ frozen."""
    return sum((sigma[k].detach() - p).pow(2).sum() for k, p in psi.items())


def nearest_clients(embeddings: dict[int, Tensor], client: int, candidates: list[int], count: int) -> list[int]:
    """The `count` candidates (never `client` itself) whose embeddings are nearest to `client`'s,
    by Euclidean distance, nearest first; ties go to the lower client id."""
    others = sorted(c for c in candidates if c != client)
    if client not in embeddings or not others or count <= 0:
        return []
    query = embeddings[client]
    dist = torch.stack([(embeddings[c] - query).norm() for c in others])
    order = torch.argsort(dist, stable=True)[:count].tolist()
    return [others[i] for i in order]


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FedMatchSettings(AlgorithmSettings):
    """FedMatch's H and λs (its official values)."""
    fedmatch_helpers: int = setting(2, "[0, 100]", "H: helper models whose agreement forms the pseudo-label")
    fedmatch_lambda_iccs: float = setting(1e-2, "[0, inf)", "λ_ICCS: inter-client consistency weight")
    fedmatch_lambda_l1: float = setting(1e-4, "[0, inf)", "λ_L1: sparsity of ψ")
    fedmatch_lambda_l2: float = setting(10.0, "[0, inf)", "λ_L2: ‖σ* − ψ‖² pulls ψ toward the downloaded σ (L_u)")


class FedMatch(Algorithm):
    name = "fedmatch"
    helper_interval = 10     # helpers are sent in rounds 10, 20, ... (paper; official h_interval)
    cohort = True            # same trainable parts and helper slots for every client of a round
    labels_at = ("client", "server")    # Algorithm 1 (labels-at-client) and Algorithm 2 (labels-at-server)
    settings = FedMatchSettings
    reads_also = ("pseudo_label_threshold", "unlabeled_loss_weight")    # FedFixMatch's T and λ_u
    # FedMatch's code's network has no BatchNorm: the reading it shares with FedMix (base.py RUNNING_READING).
    # 1: on a network with BatchNorm the local pseudo-label comes from the running statistics (an extra
    # no-grad forward of the weak view), no longer from the joint trained forward's batch statistics
    target_statistics = RUNNING_READING
    batchnorm_revision = 1

    @staticmethod
    def _helpers(cfg, facts):
        # helpers are other clients (nearest_clients never picks the client itself): H ≥ K leaves slots that can
        # never hold a helper, and they are masked out, so the run is the run with H = K − 1 under another id
        if issubclass(facts.algorithm, FedMatch) and cfg.fedmatch_helpers > cfg.clients - 1:
            return (f"fedmatch_helpers={cfg.fedmatch_helpers}, clients={cfg.clients}: must be at most clients - 1 = "
                    f"{cfg.clients - 1}; FedMatch's helpers are other clients")

    checks = (_helpers,)

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.param_names = [n for n, _ in ctx.model.named_parameters()]
        self.buffer_names = [k for k in ctx.model.state_dict() if k not in set(self.param_names)]
        labels_at_server = ctx.server_view is not None and ctx.server_view.num_labeled > 0
        self.trainable = ("psi",) if labels_at_server else ("sigma", "psi")
        shape = shape_of(cfg.dataset)       # the embedding's probe: one random image of the data set's shape
        generator = torch.Generator().manual_seed(cfg.seed)
        self.probe = torch.randn((1, shape.channels, shape.image_size, shape.image_size),
                                 generator=generator).to(ctx.device)

    # --- server ------------------------------------------------------------------------------
    def init_state(self, initial: Tensors) -> State:
        sigma = {k: (v / (1.0 + PSI_FACTOR) if k in self.param_names else v) for k, v in initial.items()}
        psi = {k: PSI_FACTOR * sigma[k] for k in self.param_names}
        return {"sigma": sigma, "psi": psi, "client_psi": {}, "client_embedding": {}, "last": {}}

    def server_update(self, state: State, round: int, train) -> None:
        """Labels-at-server (Algorithm 2): L_s(σ) on the server's labeled set before each round, ψ
        frozen. The engine's trainer runs no step when the server holds no labels."""
        if round == 0 or self.cfg.server_epochs == 0:
            return
        train({"sigma": state["sigma"], "psi": state["psi"]}, ("sigma",), self.server_loss,
              self.server_plan())

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        return self.supervised_loss(nets, batch.labeled), {}

    def helper_round(self, round: int) -> bool:
        return self.cfg.fedmatch_helpers > 0 and round % self.helper_interval == 0

    def helpers_for(self, state: State, round: int, client: int) -> list[int]:
        """The clients whose ψ serve as helpers θ_hj = σ + ψ_hj for `client` in `round`."""
        if not self.helper_round(round):
            return []
        return nearest_clients(state["client_embedding"], client, list(state["client_psi"]),
                               self.cfg.fedmatch_helpers)

    def download(self, state: State, round: int, client: int) -> Payload:
        """σ, ψ and, in a helper round, the helpers' ψ (an empty list for a client that gets none,
        so that every client of the round makes H helper slots)."""
        payload = {"sigma": state["sigma"], "psi": state["psi"]}
        if self.helper_round(round):
            payload["helpers"] = [state["client_psi"][c] for c in self.helpers_for(state, round, client)]
        return payload

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        """σ and ψ averaged (client_weights); σ only over the clients that trained it (all, with
        labels at the clients; none, with labels at the server, where the server's σ stays); the
        buffers over all. Then each uploader's ψ and embedding replace its previous ones."""
        weights = self.client_weights(uploads)
        sigma = dict(state["sigma"])
        senders = [(u.payload["sigma"], w) for u, w in zip(uploads, weights) if "sigma" in u.payload]
        if senders:
            mean = weighted_mean([s for s, _ in senders], [w for _, w in senders])
            sigma.update({k: mean[k] for k in self.param_names})
        if self.buffer_names:
            sigma.update(weighted_mean([self._buffers_of(u.payload) for u in uploads], weights))
        psi = weighted_mean([u.payload["psi"] for u in uploads], weights)
        client_psi, embeddings = dict(state["client_psi"]), dict(state["client_embedding"])
        for u in uploads:
            own_sigma = u.payload.get("sigma", state["sigma"])
            client_psi[u.client] = u.payload["psi"]
            embeddings[u.client] = self.embed(compose(own_sigma, u.payload["psi"]))
        kept = sum(u.stats.get("mask_rate", 0.0) for u in uploads)
        correct = sum(u.stats.get("masked_correct_rate", 0.0) for u in uploads)
        last = {"pseudo_label_accuracy": correct / kept} if kept > 0 else {}
        return {"sigma": sigma, "psi": psi, "client_psi": client_psi, "client_embedding": embeddings,
                "last": last}

    def _buffers_of(self, payload: Payload) -> Tensors:
        source = payload["sigma"] if "sigma" in payload else payload["buffers"]
        return {k: source[k] for k in self.buffer_names}

    @no_grad
    def embed(self, theta: Tensors) -> Tensor:
        """A model's embedding: its softmax output on the fixed random probe, in eval mode."""
        return self.target(theta, self.probe, dropout=False).softmax(1)[0]

    def eval_tensors(self, state: State) -> Tensors:
        return compose(state["sigma"], state["psi"])

    def round_metrics(self, state: State) -> dict[str, float]:
        return dict(state["last"])

    # --- client ------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        nets = {"sigma": clone(payload["sigma"]), "psi": clone(payload["psi"])}
        if "helpers" in payload:      # a helper round: H slots, the empty ones masked
            helpers = payload["helpers"]
            for j in range(self.cfg.fedmatch_helpers):
                # θ_hj = σ + ψ_hj with the downloaded σ, frozen; only read, in eval mode
                psi_h = helpers[j] if j < len(helpers) else payload["psi"]
                nets[f"helper{j}"] = {k: v.detach() for k, v in compose(payload["sigma"], psi_h).items()}
            present = [1.0 if j < len(helpers) else 0.0 for j in range(self.cfg.fedmatch_helpers)]
            nets["helper_slots"] = {"present": torch.tensor(present, device=self.ctx.device)}
        return nets

    def plan(self, view: DataView, round: int) -> Plan:
        return mixed_plan(self.cfg, view)

    def supervised_loss(self, nets: Nets, labeled: BatchPart) -> Tensor:
        """L_s(σ) = λ_s CE(y, p_{σ+ψ*}(y|x)) with λ_s = 1, the mean over the labeled samples."""
        theta = compose(nets["sigma"], nets["psi"], freeze_psi=True)
        return F.cross_entropy(self.ctx.apply(theta, labeled.weak()), labeled.y)

    def unsupervised_loss(self, nets: Nets, unlabeled: BatchPart) -> tuple[Tensor, dict[str, Tensor]]:
        """L_u(ψ) = λ_ICCS Φ_{σ*+ψ}(·) + λ_L2 ‖σ* − ψ‖²₂ + λ_L1 ‖ψ‖₁."""
        cfg = self.cfg
        l2 = l2_to_sigma(nets["psi"], nets["sigma"])
        l1 = l1_norm(nets["psi"])
        stats: dict[str, Tensor] = {"l2_loss": l2.detach(), "l1_loss": l1.detach()}
        n = len(unlabeled)
        if n == 0:
            return cfg.fedmatch_lambda_l2 * l2 + cfg.fedmatch_lambda_l1 * l1, stats
        theta = compose(nets["sigma"], nets["psi"], freeze_sigma=True)
        logits = self.ctx.apply(theta, torch.cat([unlabeled.weak(), unlabeled.strong()]))
        logits_weak, logits_strong = logits[:n], logits[n:]
        present = nets["helper_slots"]["present"] if "helper_slots" in nets else None   # a helper round
        helpers = [] if present is None else [nets[f"helper{j}"] for j in range(len(present))]
        # p*_θhj: frozen helpers, eval mode (Context.target)
        helper_probs = [self.target(h, unlabeled.weak(), dropout=False).softmax(1) for h in helpers]
        # the local pseudo-label: off the trained forward where that is the target's policy (no BatchNorm, or batch
        # statistics), else a no-grad forward with the running statistics (target_statistics)
        local = (logits_weak.detach() if self.target_statistics == "batch" or not self.ctx.has_batchnorm
                 else self.target(theta, unlabeled.weak()))
        pseudo, mask = agreement_pseudo_labels(local.softmax(1), helper_probs, cfg.pseudo_label_threshold, present)
        kept = mask.sum().clamp_min(1.0)
        ce = (F.cross_entropy(logits_strong, pseudo, reduction="none") * mask).sum() / kept
        log_local = logits_weak.log_softmax(1)
        kl = logits.sum() * 0.0
        held = present.sum().clamp_min(1.0) if helpers else None     # H, or fewer when slots are empty
        for j, probs in enumerate(helper_probs):   # 1/H Σ_j KL[p*_θhj(y|u) ‖ p_θl(y|u)], over confident samples
            # KL[p ‖ q] per sample as F.kl_div computes it, written out: vmap has no batching rule for kl_div
            kl_rows = (torch.xlogy(probs, probs) - probs * log_local).sum(1)
            kl = kl + present[j] * (kl_rows * mask).sum() / kept / held
        phi = cfg.unlabeled_loss_weight * ce + kl                                      # Φ(·)
        loss = cfg.fedmatch_lambda_iccs * phi + cfg.fedmatch_lambda_l2 * l2 + cfg.fedmatch_lambda_l1 * l1
        # metrics only: the hidden labels never enter the loss
        correct = (pseudo == unlabeled.hidden_labels).to(mask.dtype)
        stats.update({"pseudo_label_loss": ce.detach(), "iccs_loss": kl.detach(), "mask_rate": mask.mean(),
                      "masked_correct_rate": (mask * correct).mean(),
                      "helpers": present.sum() if helpers else torch.zeros((), device=mask.device)})
        return loss, stats

    def loss(self, nets: Nets, batch: Batch, step: Step):
        """L_s(σ) + L_u(ψ): each term's gradient reaches only its own part of θ."""
        labeled = batch.labeled
        if len(labeled):      # only a client holding labels draws labeled samples
            supervised = self.supervised_loss(nets, labeled)
        else:
            supervised = nets["psi"][self.param_names[0]].sum() * 0.0
        unsupervised, stats = self.unsupervised_loss(nets, batch.unlabeled)
        return supervised + unsupervised, {"classification_loss": supervised.detach(), **stats}

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        if view.num_labeled > 0:      # σ was trained (see `client_init`)
            return {"sigma": nets["sigma"], "psi": nets["psi"]}
        return {"psi": nets["psi"], "buffers": {k: nets["sigma"][k] for k in self.buffer_names}}
