"""RunConfig: every knob of a run, validated on construction, identified by a stable hash.

Defaults are FedSiam's Table 2 (the shared parameters of all its baselines) unless a comment
says otherwise. Algorithm-specific knobs sit in their own section; an algorithm reads only the
fields it documents.

Validation (`_validate`, run on construction) is the one gate a config passes; it only refuses,
never changes a value, so a config valid before keeps its run id. Each field: its type, then its
choices or its interval (floats finite: NaN and ±inf are refused everywhere, and an unbounded float is
at most 3.4e38, float32's range, FLOAT32_BOUND). Then the fields
together, each message naming every field it involves. The shared knobs' rules are here; each
registry states the rules of what it owns, beside it (`config_rules()`):
  - fssl_core.algorithms: each method's settings and checks (`Algorithm.settings` / `checks`: FedSiam's
    rectangle curve, FedMix's α+β+γ = 1), and where the labels sit for the algorithm
    (`Algorithm.labels_at` against `data.partition.LABELS_AT`), the cohort trainer, the anchor head;
  - fssl_core.models: a network with a fixed input size (`Network.image_size`) gets images of it;
  - fssl_core.data.partition: fields the partition does not read stay at their defaults (a count and a
    ratio for the server's set not both given), the server's set, shards, min_client_size and the
    local batch per client, Non-IID-III's ratios, streaming's parts;
  - fssl_core.data.datasets: a resplit within the pooled splits, clients within the training set.
Sizes come from `data.datasets.shape_of` (no file read). The registries never import this module at
run time (only for type hints), so the import graph has no cycle (tests/test_architecture.py); this
module asks them, and the run identity is computed here, where every revision is known.
What only the data or the machine can refuse (a class too small for a balanced server set, a device
absent) is refused when the run is built: `data.partition.PartitionError`,
`data.datasets.DatasetUnavailable`, `engine.DeviceUnavailable`; the CLI prints each as one error.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass, fields
from typing import Any, get_type_hints


AUTO = "auto"
DEVICES = ("cpu", "cuda")


# Fields that change how a run is executed or stored but not what it computes; they are left
# out of the run's identity so that, e.g., checkpointing more often does not retrain a run.
NOT_IN_IDENTITY = frozenset({"checkpoint_every", "eval_batch_size"})
# What a run computes beyond its config. Bump ENGINE_REVISION when a change alters the numbers of
# every run (trainers, batching, augmentation, partitions, models, evaluation), and an algorithm's
# `revision` (algorithms/<name>.py) when it alters that algorithm's runs only, a network's `revision`
# (models/<name>.py) when it alters the runs on that network only: the affected runs get
# new ids, so no stored run of an older computation is ever read back as the new one. (The package
# version is not in the identity: it does not change when the computation does.)
ENGINE_REVISION = 2   # 2: labeled repeats and the pooled labeled share per batch, stratified IID labels
# The server's trainings (labels-at-server runs only: elsewhere the server holds no labels and never
# trains) and what they draw from. 1: every training of a round's hooks from its own stream
# (seed, round, SERVER, stage, part), apart from the round's client sampling (engine.server_trainer).
# Kept apart from ENGINE_REVISION so that a change to the server's draws leaves the labels-at-client
# runs their ids.
SERVER_TRAINING_REVISION = 1


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
    labeled_repeats: int = 1         # r: a local epoch walks a client's labeled set r times beside its unlabeled set
                                     # once, if labeled samples are under 40% of its data (FedSiam's authors:
                                     # r = 3 at γ = 0.10, 2 at 0.15 and 0.20, 6 on Non-IID-III; base.labeled_repeats_of)
    server_epochs: int = 1           # labels-at-server: epochs over the server's labeled set before each round
    server_sgd: str = "clients"      # the server's batches and SGD on its labeled set: 'clients' (BS_tr, M, wd, as
                                     # Table 2 gives them for both) or 'authors' (batch 10, momentum 0.5, no weight
                                     # decay: the FedSiam authors' labels-at-server code; algorithms.base.SERVER_SGD)
    # --- FedSiam (Table 4) --------------------------------------------------------------------
    ema_decay: float = 0.999         # α_max: upper bound of the ramped EMA decay α^k (Eq. 9)
    ema_clock: str = "steps"         # q of α^k = min(1 − 1/(q + 1), α_max): the client's SGD steps (Eq. 9's step,
                                     # Mean Teacher's) or 'epochs': its local epochs counted as β^k counts them,
                                     # p·R_L + e (the FedSiam authors' update_ema_variables; algorithms/fedsiam.py)
    consistency: str = "mse"         # J: 'mse' (Eq. 4) or 'kl' (Eq. 5)
    consistency_rampup: int = 10     # φ_l: a client's local epochs over which β^k ramps up to 1 (sigmoid;
                                     # FedSiam counts each client's own, algorithms/fedsiam.py)
    tau_curve: str = "linear"        # τ schedule: 'linear' (Eq. 11) or 'rectangle' (Eq. 12)
    tau_phi_g: int = 3               # φ_g: tipping point 1, also the Λ window in rounds (paper: 3 linear, 10 rectangle)
    tau_varphi_g: int = 40           # ϕ_g: tipping point 2 of the rectangle curve
    tau_mu: float = 0.5              # μ: target reduction of online-net uploads relative to FedSiam-MT
    # --- FedSiam's baselines (Table 3) --------------------------------------------------------
    pseudo_label_threshold: float = 0.95  # T: confidence above which a pseudo-label is kept (Fed(Fix)Match)
    unlabeled_loss_weight: float = 1.0    # λ_u: weight of the unlabeled (pseudo-label) loss
    labeled_loss_mean: str = "labeled"    # FedFixMatch's labeled CE: mean over the batch's labeled samples (FixMatch
                                          # Eq. 2) or 'batch': summed and divided by the whole mixed batch (the FedSiam
                                          # authors' LocalUpdate_fedfixmatch; a measured-cause row, not the paper's)
    weak_augment: str = "dataset"         # the weak view: the dataset's (data/augment.py) or 'flip_only': a horizontal
                                          # flip alone, digits too (the FedSiam authors' Fed(Fix)Match views), or
                                          # 'authors_server': flip and reflect-pad-3 crop (their labels-at-server views),
                                          # or 'none': the image itself (their labels-at-client MNIST siamese views)
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
    fedmix_client_start: str = "omega"   # ψ_t^k ← ω_t (Algorithm 1 line 13 of both papers) or 'sigma': ← σ_{t+1},
                                         # the server's new supervised model (a sensitivity row, not the papers')
    fedmix_warmup_rounds: int = 0    # rounds in which ω_{t+1} = σ_{t+1} before Eq. 9 applies (neither paper has one)
    fedmix_teacher: str = "trained"  # whose ȳ (Eq. 8): 'trained', ψ as it is trained, or 'received', ψ_t^k = ω_t as
                                     # downloaded, frozen for the round (algorithms/fedmix.py)
    # --- SemiFL and FedAnchor (fedanchor.txt Appendices B-C) ------------------------------------
    projection_dim: int = 0          # FedAnchor's anchor head: a linear projection of the features to this many
                                     # dimensions (128, §5.1); 0: no anchor head
    contrastive_temperature: float = 0.1  # τ of the label contrastive loss (Eq. 1); the paper gives no value
    contrastive_loss: bool = True    # False: Table 3's "w/o contr loss" (anchor pseudo-labels, no L_c epoch)
    contrastive_batch_size: int = 64 # anchors per batch of the L_c epoch (the paper gives none; see fedanchor.py)
    client_mixup: bool = True        # clients minimise L_fix + b·L_mix (Appendix B, Eq. 10); False: L_fix only
    server_mixup: bool = False       # FedAnchor (mix): the server's supervised epoch trains on mixup (§4.5)
    server_ce_view: str = "strong"   # FedAnchor's server CE epoch on the anchors: 'strong' views (§4.5) or 'weak',
                                     # SemiFL's (the comparison without that difference; algorithms/fedanchor.py)
    mixup_beta: float = 0.75         # a of λ_mix ~ Beta(a, a) (Eq. 8)
    mix_loss_weight: float = 1.0     # b (Eq. 10)
    byol_hidden: int = 512           # FedCon: hidden width of the BYOL predictor MLP
    pretrain_epochs: int = 0         # server epochs on its labeled set before round 1 (FedAnchor: 5, Appendix C)
    pretrain_lr: float = 0.05        # their learning rate (Appendix C)
    static_batchnorm: bool = False   # SemiFL's sBN: the global model's BatchNorm statistics recomputed on the server's
                                     # labeled set after pre-training and after each round's server training, before
                                     # evaluation and download (algorithms/static_batchnorm.py); FedAnchor's
                                     # experiments give it to every method
    # --- execution ----------------------------------------------------------------------------
    device: str = "cpu"
    precision: str = "fp32"          # on CUDA: 'fp32' exact (TF32 off, cuDNN deterministic) or 'tf32' (cuBLAS and
                                     # cuDNN in TF32, torch's default for convolutions); CPU: 'fp32' (precision.py)
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
        return cls.from_dict(cls.values_from_strings(pairs))

    @staticmethod
    def values_from_strings(pairs: dict[str, str]) -> dict[str, Any]:
        """Command-line `key=value` strings as field values, each converted by its field's type (an unknown
        key is left as text, for from_dict to name); a value of the wrong type is one ConfigError line.
        Also for a change to a built config: `cfg.replace(**RunConfig.values_from_strings(...))`."""
        hints = _field_types()
        converted: dict[str, Any] = {}
        for key, text in pairs.items():
            kind = hints.get(key)
            try:
                converted[key] = _parse(text, kind) if kind is not None else text
            except ValueError:
                how = f", written in ASCII digits ({_EXAMPLE[kind]})" if kind in _EXAMPLE else ""
                raise ConfigError(f"RunConfig.{key}={text!r}: expected {kind.__name__}{how}") from None
        return converted

    def replace(self, **changes: Any) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    # --- identity -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def run_id(self) -> str:
        """Hash of every field that changes the result and differs from its default (an algorithm's
        setting that the run's algorithm does not read changes nothing: algorithms.ignored_settings), plus the
        revisions of the computation (ENGINE_REVISION, the algorithm's own and, where bumped, the
        network's). Leaving defaults out means a new knob, added with a default that keeps the old
        behaviour, does not orphan the runs already in a store; changing what a run computes is a revision bump."""
        return self.identity_hash[:16]

    @property
    def identity_hash(self) -> str:
        """The run's identity in full (sha256, 64 hex digits; `run_id` is its first 16): what a
        stored file's `config_hash` must equal to belong to this run (store/integrity.py)."""
        from .algorithms import ALGORITHMS, ignored_settings
        algorithm = ALGORITHMS.get(self.algorithm)        # validated already; get() for a half-built config
        ignored = ignored_settings(self.algorithm) if algorithm else frozenset()
        identity = {k: v for k, v in self.to_dict().items()
                    if k not in NOT_IN_IDENTITY and k not in ignored and v != _DEFAULTS[k]}
        identity["revision"] = [ENGINE_REVISION, algorithm.revision if algorithm else 0]
        from .data.partition import LABELS_AT
        if LABELS_AT.get(self.partition) == "server":
            identity["server_training_revision"] = SERVER_TRAINING_REVISION
        from .models import MODELS
        model = MODELS.get(self.model)
        if model is not None and model.revision:     # a network's own revision (only where bumped: the
            identity["model_revision"] = model.revision   # other networks' runs keep their ids)
        blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


_DEFAULTS = {f.name: f.default for f in fields(RunConfig)}


# What a number on the command line may look like: ASCII digits, an optional sign, and for a float a decimal point and
# exponent (and inf/nan, which validation then refuses by name). Python's int() and float() also take '1_0' and
# other scripts' digits ('٣' is 3), so `rounds=1_0` or `rounds=٣` would run as 10 or 3 rounds under an id the
# reader never typed.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)
_EXAMPLE = {int: "e.g. 10", float: "e.g. 0.01 or 1e-4"}


def _parse(text: str, kind: type) -> Any:
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise ValueError(text)
    if kind in _EXAMPLE and not (_INT_TEXT if kind is int else _FLOAT_TEXT).fullmatch(text):
        raise ValueError(text)
    return kind(text)


# --- validation ---------------------------------------------------------------------------------
# A field's rule: for a string, its choices (a tuple, or a callable giving them); for a number, an
# interval written as in mathematics ('[' and ']' closed, '(' and ')' open, inf: no bound; for a float,
# at most FLOAT32_BOUND), and a float must also be finite (NaN and ±inf never are). Integer fields have upper bounds too, generous
# for what each counts, so that a mistyped 20-digit number is an error naming the field rather
# than an overflow deep inside a run. The shared knobs' rules are here; each registry gives the
# rules of the fields it owns and its cross-field rules (`config_rules()` in fssl_core.algorithms,
# fssl_core.data.datasets, fssl_core.data.partition, fssl_core.models), so that a method's settings
# are checked beside its equations. The registries never import this module at run time.

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


@dataclass(frozen=True)
class Interval:
    text: str            # as written, with ∞ for inf: what an error message shows
    low: float
    high: float
    low_open: bool
    high_open: bool

    @classmethod
    def parse(cls, text: str) -> "Interval":
        low, high = (_number(part) for part in text[1:-1].split(","))
        return cls(text.replace("inf", "∞"), low, high, text[0] == "(", text[-1] == ")")

    def __contains__(self, value) -> bool:
        above = self.low < value if self.low_open else self.low <= value
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def __str__(self) -> str:
        return self.text


def _number(text: str) -> float:
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else float(text)   # ints exact (2**63 - 1 is no float)


COUNT = "1000000"        # rounds, clients, sizes: far above any paper's, far below an overflow
_SHARED_RULES: dict[str, Any] = {
    "algorithm": _choices_algorithm,
    "dataset": _choices_dataset,
    "model": _choices_model,
    "partition": _choices_partition,
    "device": DEVICES,
    "precision": ("fp32", "tf32"),           # precision.PRECISIONS (not imported: it imports torch)
    "trainer": (AUTO, "sequential", "cohort"),
    "clients": f"[1, {COUNT}]",
    "clients_per_round": f"[1, {COUNT}]",
    "rounds": f"[1, {COUNT}]",
    "local_epochs": "[1, 10000]",            # 0 epochs trains nothing and reports chance accuracy as ok
    "batch_size": f"[1, {COUNT}]",           # and at most a client's share of the data (data.partition)
    "lr": "[1e-7, inf)",                     # below, lr·gradient is under float32's resolution of the weights: nothing trains
    "momentum": "[0, 1)",                    # 1 never forgets a gradient: the step size grows without bound
    "weight_decay": "[0, inf)",
    "seed": "[0, 9223372036854775807]",      # 2**63 - 1, the bound it always had
    "eval_every": f"[1, {COUNT}]",
    "eval_batch_size": f"[1, {COUNT}]",
    "checkpoint_every": f"[1, {COUNT}]",
}


def _clients_per_round(cfg, facts):
    if cfg.clients_per_round > cfg.clients:
        return f"clients_per_round={cfg.clients_per_round}: must be at most clients={cfg.clients}"


def _tf32_on_cuda_only(cfg, facts):
    if cfg.precision == "tf32" and cfg.device != "cuda":
        return (f"precision='tf32', device={cfg.device!r}: TF32 is a format of NVIDIA GPUs' tensor cores; "
                "use device='cuda', or precision='fp32'")


def _registries():
    """Each registry's `config_rules()`: (its fields' rules, its cross-field rules), in the order
    their checks run."""
    from .algorithms import config_rules as algorithms
    from .data.datasets import config_rules as datasets
    from .data.partition import config_rules as partitions
    from .models import config_rules as models
    return (datasets(), models(), algorithms(), partitions())


@functools.cache
def field_rules() -> dict[str, Any]:
    """Every field's rule (shared and the registries'); a field of no rule is only type-checked."""
    rules = dict(_SHARED_RULES)
    for owned, _ in _registries():
        for name, rule in owned.items():
            if name in rules:
                raise RuntimeError(f"RunConfig.{name}: two registries give it a rule")
            rules[name] = rule
    return rules


# A float field's "no upper bound" (inf) means at most FLOAT32_BOUND: the trainer computes in float32, and torch
# refuses a scalar float32 cannot hold where a kernel takes one (lr and weight_decay become `alpha` of
# torch._foreach_add: "value cannot be converted to type float without overflow", a traceback after the data are
# loaded); 3.4e38 is a round number just under float32's largest, 3.4028235e38, so the bound shown is the bound
# applied. No stored or planned run comes near it (the largest is dirichlet_alpha=1000).
FLOAT32_BOUND = "3.4e38"


@functools.cache
def field_intervals() -> dict[str, Interval]:
    intervals = {}
    for name, rule in field_rules().items():
        if isinstance(rule, str):
            if _field_types()[name] is float and rule.endswith("inf)"):
                rule = rule[:-len("inf)")] + FLOAT32_BOUND + "]"
            intervals[name] = Interval.parse(rule)
    return intervals


@functools.cache
def _cross_field_rules() -> tuple:
    return (_clients_per_round, _tf32_on_cuda_only, *(rule for _, rules in _registries() for rule in rules))


def _show(value: Any) -> str:
    """repr of a value for a message, shortened (Python refuses to print ints of over 4300 digits)."""
    try:
        text = repr(value)
    except ValueError:
        return f"<an int of {value.bit_length()} bits>"
    return text if len(text) <= 80 else text[:60] + "..." + text[-10:]


@functools.cache
def _field_types() -> dict[str, type]:
    """Each field's type (the annotations are strings under `from __future__ import annotations`)."""
    return get_type_hints(RunConfig)


def _validate(cfg: RunConfig) -> None:
    hints = _field_types()
    for f in fields(cfg):
        _validate_field(cfg, f.name, hints[f.name])
    facts = Facts.of(cfg)
    for rule in _cross_field_rules():
        problem = rule(cfg, facts)
        if problem:
            raise ConfigError(f"RunConfig.{problem}")


def _validate_field(cfg: RunConfig, name: str, kind: type) -> None:
    value = getattr(cfg, name)
    rule = field_rules().get(name)
    interval = field_intervals().get(name)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            value = float(value)
        except OverflowError:     # an int beyond any float
            raise ConfigError(f"RunConfig.{name}={_show(value)}: must be a finite number within {interval}") from None
        object.__setattr__(cfg, name, value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"RunConfig.{name}={_show(value)}: must be of type {kind.__name__}")
    if interval is not None:
        if kind is float and not (math.isfinite(value) and value in interval):
            raise ConfigError(f"RunConfig.{name}={_show(value)}: must be a finite number within {interval}")
        if kind is int and value not in interval:
            raise ConfigError(f"RunConfig.{name}={_show(value)}: must be an integer within {interval}")
    elif rule is not None:
        allowed = rule() if callable(rule) else rule
        if value not in allowed:
            raise ConfigError(f"RunConfig.{name}={_show(value)}: must be one of {', '.join(map(str, allowed))}")


# --- what the cross-field rules read ---------------------------------------------------------------
# Each cross-field rule, here or in a registry, returns None or the message after "RunConfig.",
# naming every field it involves as field=value. What they read of the data (image size, sample
# counts) is data.datasets.shape_of: no file is opened. A split that only the data can refuse (a
# class too small for server_balanced, a Dirichlet draw that never gives every client
# min_client_size samples) is refused when the run is built (data.partition.PartitionError), as is
# a device the machine lacks (engine.DeviceUnavailable).

@dataclass(frozen=True)
class Facts:
    model: str                 # cfg.model with 'auto' resolved
    algorithm: type            # the algorithm's class: its declared labels_at, cohort, needs_projection
    shape: Any                 # data.datasets.Shape of cfg.dataset
    train: int                 # training samples the partition splits (resplit_train where set)
    labels_at: str             # 'client' or 'server': where cfg.partition puts the labels
    uses: tuple[str, ...]      # the partition fields cfg.partition reads
    defaults: dict[str, Any]   # every field's default, in field order

    @classmethod
    def of(cls, cfg: RunConfig) -> "Facts":
        from .algorithms import ALGORITHMS
        from .data.datasets import shape_of
        from .data.partition import LABELS_AT, partition_arguments
        from .models import default_model_for
        shape = shape_of(cfg.dataset)
        return cls(model=default_model_for(cfg.dataset) if cfg.model == AUTO else cfg.model,
                   algorithm=ALGORITHMS[cfg.algorithm], shape=shape, train=cfg.resplit_train or shape.num_train,
                   labels_at=LABELS_AT[cfg.partition], uses=partition_arguments(cfg.partition), defaults=_DEFAULTS)

    def training_set(self, cfg: RunConfig) -> str:
        """The training set the partition splits, for a message ("mnist's 60000 training samples")."""
        resplit = f" (resplit_train={cfg.resplit_train})" if cfg.resplit_train else ""
        return f"{cfg.dataset}'s {self.train} training samples{resplit}"
