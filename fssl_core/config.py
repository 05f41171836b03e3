"""RunConfig: every knob of a run, validated in one place, identified by a stable hash.

Defaults are FedSiam's Table 2 (the shared parameters of all its baselines) unless a comment
says otherwise. Algorithm-specific knobs sit in their own section; an algorithm reads only the
fields it documents.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any, get_type_hints

from . import __version__

AUTO = "auto"
DEVICES = ("cpu", "cuda")
CLIENT_WEIGHTINGS = ("uniform", "labeled", "samples", "fedfreq", "fedloss")

# Fields that change how a run is executed or stored but not what it computes; they are left
# out of the run's identity so that, e.g., checkpointing more often does not retrain a run.
NOT_IN_IDENTITY = frozenset({"checkpoint_every", "eval_batch_size"})


class ConfigError(ValueError):
    """A RunConfig field has an unknown name, a wrong type or a value outside what is allowed."""


@dataclass(frozen=True)
class RunConfig:
    # --- what is run -------------------------------------------------------------------------
    algorithm: str = "fedavg"        # registry name, see fssl_core.algorithms.ALGORITHMS
    dataset: str = "mnist"           # see fssl_core.data.datasets.DATASETS
    model: str = AUTO                # 'auto': the paper's model for the dataset (models.default_model_for)
    # --- how the data are split (fssl_core.data.partition) -------------------------------------
    partition: str = "iid"           # labels-at-client iid/noniid1-3, labels-at-server, Dirichlet, streaming
    labeled_ratio: float = 0.1       # γ: labeled fraction (of each client: labels-at-client; of |D|: server_*)
    server_labeled: int = 0          # N_s: labeled samples at the server (FedMix, FedAnchor); 0 = use γ
    dirichlet_alpha: float = 0.1     # μ (FedMix) / α (FedAnchor): Dirichlet concentration
    classes_per_client: int = 2      # C'_k of FedSiam's non-IID settings
    rich_clients: int = 10           # noniid3: clients with the high labeled ratio ("10 clients own 55%")
    rich_labeled_ratio: float = 0.55 # noniid3: their labeled ratio; the others' follows from γ
    server_balanced: bool = False    # server's labeled set class-balanced (FedMix, FedAnchor: True)
    stratified: bool = False         # server_iid: equal per-class counts on every client (FedMix IID)
    min_client_size: int = 10        # Dirichlet splits: redrawn until every client holds this many
    stream_parts: int = 1            # streaming non-IID: parts per client, one used per round
    resplit_train: int = 0           # >0: pool the official train+test sets and redraw this many training
    resplit_test: int = 0            #     and resplit_test test samples, class-stratified (FedMix: 64,000 / 2,000
                                     #     Fashion-MNIST, 56,000 / 2,000 CIFAR-10); 0: the official splits
    clients: int = 100               # K
    clients_per_round: int = 10      # FedSiam's "B active clients"
    # --- optimisation (Table 2) ---------------------------------------------------------------
    rounds: int = 50                 # R_G
    local_epochs: int = 5            # R_L
    batch_size: int = 10             # BS_tr
    lr: float = 0.01
    momentum: float = 0.9            # M
    weight_decay: float = 1e-4       # wd
    seed: int = 1234                 # splits, initialisation, client sampling, batches, augmentation
    # --- aggregation ---------------------------------------------------------------------------
    client_weighting: str = "uniform"   # FedSiam Eq. (2): θ^G = 1/B Σ_b θ^b; 'labeled' / 'samples': weighted by counts;
                                        # 'fedfreq' / 'fedloss': FedMix's Eq. 10 / journal Eq. 12 (aggregate.py)
    # --- semi-supervised local training (FedSiam and its SSL baselines) -------------------------
    labeled_batch_fraction: float = 0.25  # share of each local batch that is labeled (FedSiam's authors oversample
                                          # labeled data 3× at γ=0.1, making about a quarter of each batch labeled)
    server_epochs: int = 1           # labels-at-server: epochs over the server's labeled set before each round
    # --- FedSiam (Table 4) --------------------------------------------------------------------
    ema_decay: float = 0.999         # α_max: upper bound of the ramped EMA decay α^k (Eq. 9)
    consistency: str = "mse"         # J: 'mse' (Eq. 4) or 'kl' (Eq. 5)
    consistency_rampup: int = 10     # φ_l: rounds over which β^k ramps up to 1 (sigmoid)
    tau_curve: str = "linear"        # τ schedule: 'linear' (Eq. 11) or 'rectangle' (Eq. 12)
    tau_phi_g: int = 3               # φ_g: tipping point 1, also the Λ window in rounds (paper: 3 linear, 10 rectangle)
    tau_varphi_g: int = 40           # ϕ_g: tipping point 2 of the rectangle curve
    tau_mu: float = 0.5              # μ: target reduction of online-net uploads relative to FedSiam-MT
    # --- FedSiam's baselines (Table 3) --------------------------------------------------------
    pseudo_label_threshold: float = 0.95  # T: confidence above which a pseudo-label is kept (Fed(Fix)Match)
    unlabeled_loss_weight: float = 1.0    # λ_u: weight of the unlabeled (pseudo-label) loss
    fedsem_phase1_fraction: float = 0.6   # FedSem: R_G^1 / R_G (Table 3: 30 of 30 + 20 rounds)
    fedmatch_helpers: int = 2             # H: helper models whose agreement forms FedMatch's pseudo-label
    fedmatch_lambda_iccs: float = 1e-2    # λ_ICCS: inter-client consistency weight (FedMatch)
    fedmatch_lambda_l1: float = 1e-4      # λ_L1: sparsity of ψ (FedMatch)
    fedmatch_lambda_l2: float = 10.0      # λ_L2: ‖σ* − ψ‖² pulls ψ toward the downloaded σ (FedMatch L_u)
    # --- FedMix (fedmix-fedfreq.txt, fedmix-fedloss-zh.txt) -------------------------------------
    mix_alpha: float = 0.5           # α: weight of the aggregated unsupervised model ψ in ω_{t+1} (Eq. 9)
    mix_beta: float = 0.3            # β: weight of the server's supervised model σ
    mix_gamma: float = 0.2           # γ: weight of the previous global model ω_t; α+β+γ = 1
    fedmix_pseudo_label: str = "sharpen"  # 'sharpen' (journal Eq. 8-9) or 'argmax' (conference Eq. 8)
    sharpen_temperature: float = 0.5 # T of Sharpen; the papers give none, 0.5 is MixMatch's
    fedmix_views: int = 5            # A: augmented views averaged into the pseudo-label
    fedmix_lambda_1: float = 1.0     # λ_1: weight of the pseudo-label cross-entropy (Eq. 7; no value in the papers)
    fedmix_lambda_2: float = 1.0     # λ_2: weight of the shift-vs-flip consistency (Eq. 7; no value in the papers)
    # --- SemiFL and FedAnchor (fedanchor.txt Appendices B-C) ------------------------------------
    projection_dim: int = 0          # FedAnchor's anchor head: a linear projection of the features to this many
                                     # dimensions (128, §5.1); 0: no anchor head
    contrastive_temperature: float = 0.1  # τ of the label contrastive loss (Eq. 1); the paper gives no value
    contrastive_loss: bool = True    # False: Table 3's "w/o contr loss" (anchor pseudo-labels, no L_c epoch)
    contrastive_batch_size: int = 64 # anchors per batch of the L_c epoch (the paper gives none; see fedanchor.py)
    client_mixup: bool = True        # clients minimise L_fix + b·L_mix (Appendix B, Eq. 10); False: L_fix only
    server_mixup: bool = False       # FedAnchor (mix): the server's supervised epoch trains on mixup (§4.5)
    mixup_beta: float = 0.75         # a of λ_mix ~ Beta(a, a) (Eq. 8)
    mix_loss_weight: float = 1.0     # b (Eq. 10)
    byol_hidden: int = 512           # FedCon: hidden width of the BYOL predictor MLP
    pretrain_epochs: int = 0         # server epochs on its labeled set before round 1 (FedAnchor: 5, Appendix C)
    pretrain_lr: float = 0.05        # their learning rate (Appendix C)
    static_batchnorm: bool = False   # SemiFL's sBN: after server training, BatchNorm statistics recomputed on
                                     # the server's labeled set (Context.batchnorm_statistics)
    # --- execution ----------------------------------------------------------------------------
    device: str = "cpu"
    trainer: str = AUTO              # 'sequential' (the reference), 'cohort' (a round's clients stacked, cohort.py)
                                     # or 'auto': the faster for the algorithm, network and device (Federation.cohort)
    eval_every: int = 1              # rounds between test-set evaluations (the last round always)
    eval_batch_size: int = 1024      # BS_te only changes speed: evaluation runs in eval mode
    checkpoint_every: int = 1        # rounds between checkpoints (resume granularity)

    def __post_init__(self) -> None:
        _validate(self)
        if self.model == AUTO:
            from .models import default_model_for
            object.__setattr__(self, "model", default_model_for(self.dataset))

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "RunConfig":
        """Build from a mapping, rejecting unknown keys (with the closest known name)."""
        known = {f.name for f in fields(cls)}
        for key in values:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ConfigError(f"RunConfig has no field '{key}'{hint} Known fields: {', '.join(sorted(known))}")
        return cls(**values)

    @classmethod
    def from_strings(cls, pairs: dict[str, str]) -> "RunConfig":
        """Build from command-line `key=value` strings, converting each by the field's type."""
        hints = get_type_hints(cls)
        converted: dict[str, Any] = {}
        for key, text in pairs.items():
            kind = hints.get(key)
            try:
                converted[key] = _parse(text, kind) if kind is not None else text
            except ValueError:
                raise ConfigError(f"RunConfig.{key}={text!r}: expected {kind.__name__}") from None
        return cls.from_dict(converted)

    def replace(self, **changes: Any) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    # --- identity -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def run_id(self) -> str:
        """Hash of every field that changes the result and differs from its default, plus the
        package version. Leaving defaults out means a new knob, added with a default that keeps
        the old behaviour, does not orphan the runs already in a store; changing a default's
        meaning is a version change."""
        return self.identity_hash[:16]

    @property
    def identity_hash(self) -> str:
        """The run's identity in full (sha256, 64 hex digits; `run_id` is its first 16): what a
        stored file's `config_hash` must equal to belong to this run (runs.py)."""
        identity = {k: v for k, v in self.to_dict().items()
                    if k not in NOT_IN_IDENTITY and v != _DEFAULTS[k]}
        identity["fssl_core_version"] = __version__
        blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


_DEFAULTS = {f.name: f.default for f in fields(RunConfig)}


def _parse(text: str, kind: type) -> Any:
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise ValueError(text)
    return kind(text)


# Allowed values: (low, high) inclusive ranges or a callable returning the allowed choices.
def _choices_algorithm():
    from .algorithms import ALGORITHMS
    return tuple(ALGORITHMS)


def _choices_dataset():
    from .data.datasets import DATASETS
    return DATASETS


def _choices_model():
    from .models import MODELS
    return (AUTO, *MODELS)


def _choices_partition():
    from .data.partition import PARTITIONS
    return PARTITIONS


_RULES: dict[str, Any] = {
    "algorithm": _choices_algorithm,
    "dataset": _choices_dataset,
    "model": _choices_model,
    "partition": _choices_partition,
    "device": lambda: DEVICES,
    "trainer": lambda: (AUTO, "sequential", "cohort"),
    "labeled_ratio": (0.0, 1.0),
    "server_labeled": (0, None),
    "dirichlet_alpha": (1e-6, None),
    "classes_per_client": (1, None),
    "rich_clients": (0, None),
    "rich_labeled_ratio": (0.0, 1.0),
    "min_client_size": (1, None),
    "stream_parts": (1, None),
    "resplit_train": (0, None),
    "resplit_test": (0, None),
    "clients": (1, None),
    "clients_per_round": (1, None),
    "rounds": (1, None),
    "local_epochs": (0, None),
    "batch_size": (1, None),
    "lr": (0.0, None),
    "momentum": (0.0, 1.0),
    "weight_decay": (0.0, None),
    "seed": (0, 2**63 - 1),
    "client_weighting": lambda: CLIENT_WEIGHTINGS,
    "labeled_batch_fraction": (0.0, 1.0),
    "server_epochs": (0, None),
    "ema_decay": (0.0, 1.0),
    "consistency": lambda: ("mse", "kl"),
    "consistency_rampup": (0, None),
    "tau_curve": lambda: ("linear", "rectangle"),
    "tau_phi_g": (0, None),
    "tau_varphi_g": (0, None),
    "tau_mu": (0.0, 1.0),
    "pseudo_label_threshold": (0.0, 1.0),
    "unlabeled_loss_weight": (0.0, None),
    "fedsem_phase1_fraction": (0.0, 1.0),
    "fedmatch_helpers": (0, None),
    "fedmatch_lambda_iccs": (0.0, None),
    "fedmatch_lambda_l1": (0.0, None),
    "fedmatch_lambda_l2": (0.0, None),
    "mix_alpha": (0.0, 1.0),
    "mix_beta": (0.0, 1.0),
    "mix_gamma": (0.0, 1.0),
    "fedmix_pseudo_label": lambda: ("sharpen", "argmax"),
    "sharpen_temperature": (1e-6, None),
    "fedmix_views": (1, None),
    "fedmix_lambda_1": (0.0, None),
    "fedmix_lambda_2": (0.0, None),
    "projection_dim": (0, None),
    "contrastive_temperature": (1e-6, None),
    "contrastive_batch_size": (2, None),
    "mixup_beta": (1e-6, None),
    "mix_loss_weight": (0.0, None),
    "byol_hidden": (1, None),
    "pretrain_epochs": (0, None),
    "pretrain_lr": (0.0, None),
    "eval_every": (1, None),
    "eval_batch_size": (1, None),
    "checkpoint_every": (1, None),
}


def _validate(cfg: RunConfig) -> None:
    hints = get_type_hints(type(cfg))
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        kind = hints[f.name]
        ok_type = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(cfg, f.name, float(value))
            ok_type = True
        if not ok_type:
            raise ConfigError(f"RunConfig.{f.name}={value!r}: must be of type {kind.__name__}")
        rule = _RULES.get(f.name)
        if rule is None:
            continue
        if callable(rule):
            allowed = rule()
            if value not in allowed:
                raise ConfigError(f"RunConfig.{f.name}={value!r}: must be one of {', '.join(map(str, allowed))}")
        else:
            low, high = rule
            value = getattr(cfg, f.name)
            if (low is not None and value < low) or (high is not None and value > high):
                upper = "∞" if high is None else high
                raise ConfigError(f"RunConfig.{f.name}={value!r}: must be within [{low}, {upper}]")
    if cfg.tau_curve == "rectangle" and cfg.tau_varphi_g <= cfg.tau_phi_g:
        raise ConfigError(f"RunConfig.tau_varphi_g={cfg.tau_varphi_g}: must exceed tau_phi_g={cfg.tau_phi_g} "
                          "for the rectangle curve (Eq. 12)")
    mix = cfg.mix_alpha + cfg.mix_beta + cfg.mix_gamma
    if abs(mix - 1.0) > 1e-6:
        raise ConfigError(f"RunConfig.mix_alpha={cfg.mix_alpha}, mix_beta={cfg.mix_beta}, mix_gamma={cfg.mix_gamma}: "
                          f"sum to {mix:g}; FedMix's Eq. 9 needs α+β+γ = 1")
    if (cfg.resplit_train > 0) != (cfg.resplit_test > 0):
        raise ConfigError(f"RunConfig.resplit_train={cfg.resplit_train}, resplit_test={cfg.resplit_test}: "
                          "set both (a resplit) or neither (the official splits)")
    if cfg.clients_per_round > cfg.clients:
        raise ConfigError(
            f"RunConfig.clients_per_round={cfg.clients_per_round}: must be at most clients={cfg.clients}")
