"""FedSiam (Long et al., CIKM'21): a siamese online/target pair on every client, a momentum (EMA)
target, a consistency loss, and an adaptive choice of which online-net layers to upload.

Per client and round (labels-at-client, Eq. 7):  loss = L + β^k J, where
  L  cross-entropy of the online net θ_s on the labeled samples (Eq. 6),
  J  consistency between the online net on one perturbation and the target net θ_t on another,
     over labeled and unlabeled samples (MSE, Eq. 4, or KL, Eq. 5),
  β^k a sigmoid ramp-up over φ_l rounds;
after every SGD step θ_t ← α^k θ_t + (1 − α^k) θ_s (Eq. 9). Labels-at-server (Eq. 8): clients
minimise β^k J only and the server trains θ^G on its labeled set before each round.

Upload (§3.3): the client computes FSM^k[j] = ‖θ_t[j] − θ_s[j]‖ / ‖θ_s[j]‖ per layer j (Eq. 10)
and sends its whole target net, FSM^k, and the online layers whose FSM exceeds the boundary the
server sent. The boundary is a quantile of Λ, the FSM values of the last φ_g rounds. The server
splices each client's online net (layers not sent are borrowed from its target net), averages
the spliced nets into θ^G (Eq. 2) and the target nets into θ^G_t; clients download both.

Reading choices, and why (the evidence and the alternatives: papers/fedsiam/READINGS.md, "FedSiam"):
- τ is the fraction of online-net layers uploaded: only then is upload cost Π < D < MT;
- τ is clipped to [0, 1] (Eq. 11 starts above 1); the realised mean is logged beside 1 − μ;
- β^k and α^k run on client k's own clock: β on its local epochs (the authors' count), α on its SGD
  steps (Eq. 9's q: an epoch clock would make Table 7's three α_max rows one run);
- J divides by the number of classes, as the authors' softmax_mse_loss.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..learning.aggregate import weighted_mean
from ..learning.batches import Batch, BatchPart, DataView, Plan
from ..config import setting
from ..learning.ssl import CONSISTENCY, ema_update_, sigmoid_rampup
from ..learning.training import Nets, Step, Tensors
from .base import Algorithm, AlgorithmSettings, Payload, State, Upload, clone, mixed_plan

if TYPE_CHECKING:
    from torch import Tensor

# ---------------------------------------------------------------------------------------------
# τ schedules (pure; the τ-curve explorer and Figures 3–4 draw these)


def tau_linear(round: int, rounds: int, phi_g: int, mu: float) -> float:
    """Eq. 11, clipped to [0, 1]: 0 up to φ_g, then falling linearly to 0 at R_G."""
    if round <= phi_g or rounds <= phi_g:
        return 0.0
    tau = -2.0 * (1.0 - mu) * rounds / (rounds - phi_g) ** 2 * (round - rounds)
    return min(max(tau, 0.0), 1.0)


def tau_rectangle(round: int, rounds: int, phi_g: int, varphi_g: int, mu: float) -> float:
    """Eq. 12 (two tipping points, fedsiam-latex.txt), clipped to [0, 1]: a plateau on (φ_g, ϕ_g)."""
    if not phi_g < round < varphi_g:
        return 0.0
    return min(max((1.0 - mu) * rounds / (varphi_g - phi_g), 0.0), 1.0)


def tau_schedule(curve: str, rounds: int, phi_g: int, varphi_g: int, mu: float) -> list[float]:
    """τ for rounds 1..R_G."""
    if curve == "linear":
        return [tau_linear(r, rounds, phi_g, mu) for r in range(1, rounds + 1)]
    if curve == "rectangle":
        return [tau_rectangle(r, rounds, phi_g, varphi_g, mu) for r in range(1, rounds + 1)]
    raise ValueError(f"tau_schedule: curve={curve!r}: must be 'linear' or 'rectangle'")


def boundary(fsm_window: list[Tensor], tau: float) -> float:
    """The (1 − τ)-quantile of Λ: online layers with FSM above it are uploaded.

    τ = 0 sends nothing (+∞) and τ = 1 everything (−∞) whatever Λ holds."""
    if tau <= 0.0:
        return math.inf
    if tau >= 1.0 or not fsm_window:
        return -math.inf
    return float(torch.quantile(torch.cat(fsm_window).float().cpu(), 1.0 - tau))


def fsm(target: Tensors, online: Tensors, layers: list[list[str]]) -> Tensor:
    """Eq. 10 per layer: ‖θ_t[j] − θ_s[j]‖ / ‖θ_s[j]‖, a layer's parameters taken together."""
    out = []
    for names in layers:
        diff = torch.cat([(target[n] - online[n]).flatten() for n in names])
        ref = torch.cat([online[n].flatten() for n in names])
        out.append(diff.norm() / ref.norm().clamp_min(1e-12))
    return torch.stack(out).detach()


def parameter_layers(model: torch.nn.Module) -> list[list[str]]:
    """Parameter names grouped by the module that owns them ('conv1.weight', 'conv1.bias' → one layer)."""
    layers: dict[str, list[str]] = {}
    for name, _ in model.named_parameters():
        layers.setdefault(name.rpartition(".")[0], []).append(name)
    return list(layers.values())


# ---------------------------------------------------------------------------------------------


def ema_alpha(steps_seen: int | Tensor, alpha_max: float) -> float | Tensor:
    """α^k = min(1 − 1/(q + 1), α_max) at the client's q-th SGD step (Mean Teacher's ramp, Eq. 9);
    a tensor of per-client step counts gives a tensor."""
    if isinstance(steps_seen, torch.Tensor):
        return (1.0 - 1.0 / (steps_seen.double() + 1.0)).clamp(max=alpha_max)
    return min(1.0 - 1.0 / (steps_seen + 1), alpha_max)


def client_epochs(step: Step, local_epochs: int) -> int | Tensor:
    """E of β^k: the client's local epochs as the authors count them, p·R_L + e (e = 1..R_L)."""
    epoch_in_round = step.local_step * local_epochs // max(step.local_steps, 1)
    return step.participation * local_epochs + epoch_in_round + 1


def client_steps(step: Step) -> int | Tensor:
    """q of α^k: the client's SGD steps so far, this one included, its earlier picks counted at this
    round's steps per round (a client's data, hence its steps, are the same every round here)."""
    return (step.participation - 1) * step.local_steps + step.local_step + 1


@dataclass(frozen=True)
class FedSiamSettings(AlgorithmSettings):
    """FedSiam's Table 4 and its equations."""
    ema_decay: float = setting(0.999, "[0, 1]", "α_max: upper bound of the ramped EMA decay α^k (Eq. 9)")
    ema_clock: str = setting("steps", ("steps", "epochs"),
                             "q of α^k = min(1 − 1/(q + 1), α_max): the client's SGD steps (Eq. 9's step, Mean "
                             "Teacher's) or 'epochs': its local epochs counted as β^k counts them, p·R_L + e (the "
                             "FedSiam authors' update_ema_variables)")
    consistency: str = setting("mse", tuple(CONSISTENCY), "J: 'mse' (Eq. 4) or 'kl' (Eq. 5)")
    consistency_rampup: int = setting(10, "[0, 1000000]",
                                      "φ_l: a client's local epochs over which β^k ramps up to 1 (sigmoid; each "
                                      "client counts its own)")
    tau_curve: str = setting("linear", ("linear", "rectangle"), "τ schedule: 'linear' (Eq. 11) or 'rectangle' (Eq. 12)")
    tau_phi_g: int = setting(3, "[0, 1000000]",
                             "φ_g: tipping point 1, also the Λ window in rounds (paper: 3 linear, 10 rectangle)")
    tau_varphi_g: int = setting(40, "[0, 1000000]", "ϕ_g: tipping point 2 of the rectangle curve")
    tau_mu: float = setting(0.5, "[0, 1]", "μ: target reduction of online-net uploads relative to FedSiam-MT")


class FedSiam(Algorithm):
    """FedSiam-D: τ from the linear (Eq. 11) or rectangle (Eq. 12) curve, α^k = 0 up to φ_g."""
    name = "fedsiam_d"
    revision = 2     # 2: β^k and α^k on the client's own clock, α^k counted in steps
    # the target net's forward in train mode, as the authors' code (zewei-long/fedsiam-pytorch,
    # fedsiam-labels-at-client/models/Update.py: net_ema.train(), then net_ema(ema_input_var)); Π's second
    # forward through the online net likewise (net.train()). 1: it had been eval mode (BatchNorm networks only)
    target_statistics = "batch"
    batchnorm_revision = 1
    cohort = True
    labels_at = ("client", "server")    # Eq. 7 (labels-at-client) and Eq. 8 (labels-at-server)
    settings = FedSiamSettings

    @staticmethod
    def _tau_rectangle(cfg, facts):
        if cfg.tau_curve == "rectangle" and cfg.tau_varphi_g <= cfg.tau_phi_g:
            return (f"tau_varphi_g={cfg.tau_varphi_g}, tau_phi_g={cfg.tau_phi_g}: tau_varphi_g must exceed tau_phi_g "
                    "for the rectangle curve (Eq. 12)")

    checks = (_tau_rectangle,)
    trainable = ("online",)

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.layers = parameter_layers(ctx.model)
        self.param_names = [n for names in self.layers for n in names]
        # every state-dict key (parameters and buffers) belongs to the layer of its module
        layer_of = {names[0].rpartition(".")[0]: j for j, names in enumerate(self.layers)}
        self.keys_of_layer: list[list[str]] = [[] for _ in self.layers]
        for key in ctx.model.state_dict():
            j = layer_of.get(key.rpartition(".")[0])
            if j is not None:
                self.keys_of_layer[j].append(key)
        self.consistency = CONSISTENCY[cfg.consistency]

    # --- the variant hooks: FedSiam-Π and FedSiam-MT override these two ----------------------
    def tau(self, round: int) -> float:
        cfg = self.cfg
        if cfg.tau_curve == "linear":
            return tau_linear(round, cfg.rounds, cfg.tau_phi_g, cfg.tau_mu)
        return tau_rectangle(round, cfg.rounds, cfg.tau_phi_g, cfg.tau_varphi_g, cfg.tau_mu)

    def alpha(self, step: Step) -> float | Tensor:
        if step.round <= self.cfg.tau_phi_g:
            return 0.0
        return self.ramped_alpha(step)

    def ramped_alpha(self, step: Step) -> float | Tensor:
        """α^k at the client's q-th step (Eq. 9), q its SGD steps; under ema_clock='epochs' its local epochs as
        β^k counts them, the authors' clock (update_ema_variables(..., user_epoch·local_ep + iter + 1),
        fedsiam-labels-at-client/models/Update.py): α^k then runs from 0.86 on a first pick to about 0.97 on a fifth,
        so their target net trails the online net by a few epochs, where ours averages over the client's
        hundreds of steps (α reaches α_max on its third pick)."""
        clock = client_epochs(step, self.cfg.local_epochs) if self.cfg.ema_clock == "epochs" else client_steps(step)
        return ema_alpha(clock, self.cfg.ema_decay)

    def consistency_weight(self, step: Step) -> float | Tensor:
        """β^k of Eq. 7: the sigmoid ramp over φ_l of the client's local epochs."""
        return sigmoid_rampup(client_epochs(step, self.cfg.local_epochs), self.cfg.consistency_rampup)

    # --- server ------------------------------------------------------------------------------
    def init_state(self, initial: Tensors) -> State:
        return {"online": initial, "target": clone(initial), "fsm_window": [], "last": {}}

    def server_update(self, state: State, round: int, train) -> None:
        """Labels-at-server (Eq. 8, first line): train θ^G on the server's labeled set. The engine's
        trainer runs no step when the server holds no labels (labels-at-client)."""
        if round == 0 or self.cfg.server_epochs == 0:
            return
        nets = {"online": state["online"]}
        train(nets, ("online",), self.server_loss, self.server_plan())

    def server_loss(self, nets: Nets, batch: Batch, step: Step):
        logits = self.ctx.apply(nets["online"], batch.labeled.weak())
        return F.cross_entropy(logits, batch.labeled.y), {}

    def download(self, state: State, round: int, client: int) -> Payload:
        bound = boundary(state["fsm_window"], self.tau(round))
        return {"online": state["online"], "target": state["target"],
                "boundary": torch.tensor([bound], device=self.ctx.device)}

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        weights = self.client_weights(uploads)
        spliced = [{k: u.payload["online"].get(k, t) for k, t in u.payload["target"].items()} for u in uploads]
        sent = [sum(t.numel() for t in u.payload["online"].values()) for u in uploads]
        total = sum(t.numel() for t in state["online"].values())
        window = (state["fsm_window"] + [torch.cat([u.payload["fsm"] for u in uploads])])[-max(self.cfg.tau_phi_g, 1):]
        return {"online": weighted_mean(spliced, weights),
                "target": weighted_mean([u.payload["target"] for u in uploads], weights),
                "fsm_window": window,
                "last": {"tau": self.tau(round), "online_upload_fraction": sum(sent) / (total * len(uploads))}}

    def eval_tensors(self, state: State) -> Tensors:
        return state["online"]     # θ^G, the global model of Eq. 2

    def round_metrics(self, state: State) -> dict[str, float]:
        return dict(state["last"])

    # --- client ------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        return {"online": clone(payload["online"]), "target": clone(payload["target"]),
                "received": {"boundary": payload["boundary"]}}

    def plan(self, view: DataView, round: int) -> Plan:
        return mixed_plan(self.cfg, view)

    def loss(self, nets: Nets, batch: Batch, step: Step):
        labeled = batch.labeled
        # two perturbations η, η' of every sample: the online net sees one, the target the other
        l1, u1, l2, u2 = batch.views(("labeled", "weak"), ("unlabeled", "weak"), ("labeled", "weak2"),
                                     ("unlabeled", "weak2"))
        x_online, x_target = torch.cat([l1, u1]), torch.cat([l2, u2])
        logits = self.ctx.apply(nets["online"], x_online)
        # stop-gradient: the target net learns only through Eq. 9 (BatchNorm: target_statistics)
        target_logits = self.target(nets["target"], x_target)
        return self.objective(logits, target_logits, labeled, step)

    def objective(self, logits: Tensor, other_logits: Tensor, labeled: BatchPart, step: Step):
        """Eq. 7: L + β^k J over one mixed batch (labeled samples first).

        L sums the labeled samples' cross-entropy and divides by the whole batch, as the authors'
        code and Mean Teacher's do (Eq. 6 writes a mean over the labeled samples): with a quarter
        of each batch labeled, the mean would take four times larger supervised steps from 2–3
        samples, and we measured the ten clients' models then drift too far apart to average in
        the first rounds (round-1 accuracy at chance)."""
        n = len(labeled)
        classification = (F.cross_entropy(logits[:n], labeled.y, reduction="sum") / len(logits)
                          if n else logits.sum() * 0.0)                                  # L, Eq. 6
        consistency = self.consistency(logits, other_logits)                            # J, Eq. 4/5
        beta = self.consistency_weight(step)
        return classification + beta * consistency, {"classification_loss": classification.detach(),
                                                      "consistency_loss": consistency.detach()}

    def after_step(self, nets: Nets, step: Step) -> None:
        alpha = self.alpha(step)
        if not isinstance(alpha, torch.Tensor) and alpha == 0.0:     # Π-model phase: the target is the online net
            for n in self.param_names:
                nets["target"][n].copy_(nets["online"][n].detach())
        else:
            ema_update_(nets["target"], nets["online"], self.param_names, alpha)

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        divergence = fsm(nets["target"], nets["online"], self.layers)
        send = (divergence > nets["received"]["boundary"]).tolist()
        online = {k: nets["online"][k] for j, keys in enumerate(self.keys_of_layer) if send[j] for k in keys}
        return {"target": nets["target"], "online": online, "fsm": divergence}


class FedSiamPi(FedSiam):
    """FedSiam-Π: τ = 0 and α^k = 0 — the target is the online net; only it is uploaded."""
    name = "fedsiam_pi"

    def tau(self, round: int) -> float:
        return 0.0

    def alpha(self, step: Step) -> float:
        return 0.0


class FedSiamMT(FedSiam):
    """FedSiam-MT: τ = 1 — the full siamese pair is uploaded every round; α^k ramps from round 1."""
    name = "fedsiam_mt"

    def tau(self, round: int) -> float:
        return 1.0

    def alpha(self, step: Step) -> float:
        return self.ramped_alpha(step)


class FedSiamNoSiam(FedSiam):
    """FedSiam-NoSiam (Table 7 ablation): no siamese pair. One network sees both perturbations,
    with gradients through both sides of J; it travels in the target slot, which the server
    always receives, so upload and aggregation stay those of FedSiam."""
    name = "fedsiam_nosiam"

    def client_init(self, payload: Payload, view: DataView) -> Nets:
        return {"online": clone(payload["online"])}

    def loss(self, nets: Nets, batch: Batch, step: Step):
        # the second pair of views is drawn after the first forward, whose dropout (the authors' network) draws too
        logits = self.ctx.apply(nets["online"], torch.cat(batch.views(("labeled", "weak"), ("unlabeled", "weak"))))
        other = self.ctx.apply(nets["online"], torch.cat(batch.views(("labeled", "weak2"), ("unlabeled", "weak2"))))
        return self.objective(logits, other, batch.labeled, step)

    def after_step(self, nets: Nets, step: Step) -> None:
        pass

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        return {"target": nets["online"], "online": {}, "fsm": torch.zeros(len(self.layers), device=self.ctx.device)}

    def download(self, state: State, round: int, client: int) -> Payload:
        return {"online": state["online"]}

    def round_metrics(self, state: State) -> dict[str, float]:
        return {}     # no τ, no layer selection
