"""What a run's configuration is made of: the fields every run has, how a setting is declared, what a value may be.

`SharedFields` holds the fields of every run (what is run, the optimiser, how it is executed) with their defaults
and docs. Defaults are FedSiam's Table 2, the shared parameters of all its baselines, unless a doc says
otherwise. An algorithm declares its own settings in its own file, as a frozen dataclass of
`setting(default, rule, doc)` fields beside its loss (fssl_core/algorithms/<name>.py); a partition its
parameters so, beside its function (fssl_core/data/partition/declaration.py).
`fssl_core.run_config.RunConfig` joins the three, validates them and computes the run's identity.

A rule is, for a string, its choices; for a number, an interval written as in mathematics ('[' and ']' closed,
'(' and ')' open, inf: no bound, which for a float means at most FLOAT32_BOUND), and a float must also be finite.
Integer fields have upper bounds too, generous for what each counts, so that a mistyped 20-digit number is an
error naming the field rather than an overflow deep inside a run.

This module imports no other module of the package: the registries (algorithms, models, data) import it,
and it imports none of them (tests/test_architecture.py).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, get_type_hints

AUTO = "auto"
DEVICES = ("cpu", "cuda")
COUNT = "1000000"        # rounds, clients, sizes: far above any paper's, far below an overflow
# A float field's "no upper bound" (inf) means at most FLOAT32_BOUND: the trainer computes in float32, and torch
# refuses a scalar float32 cannot hold where a kernel takes one (lr and weight_decay become `alpha` of
# torch._foreach_add: "value cannot be converted to type float without overflow", a traceback after the data are
# loaded); 3.4e38 is a round number just under float32's largest, 3.4028235e38, so the bound shown is the bound
# applied. No stored or planned run comes near it (the largest is dirichlet_alpha=1000).
FLOAT32_BOUND = "3.4e38"


class ConfigError(ValueError):
    """A RunConfig field has an unknown name, a wrong type or a value outside what is allowed."""


def setting(default: Any, rule: Any = None, doc: str = "") -> Any:
    """A field of a settings dataclass: its default, its rule (an interval, a tuple of choices, or None: the
    type alone, or a rule a registry states) and what it means."""
    return dataclasses.field(default=default, metadata={"rule": rule, "doc": doc})


@dataclass(frozen=True)
class Setting:
    """One declared field, as `settings_of` reads it from its dataclass."""
    name: str
    kind: type
    default: Any
    rule: Any
    doc: str


@functools.lru_cache(maxsize=None)
def settings_of(declaration: type) -> dict[str, Setting]:
    """The fields of a settings dataclass, in order (their types resolved from the annotations). Cached: every
    run identity asks it of its algorithm (Algorithm.reads); callers copy, never change, the mapping."""
    kinds = get_type_hints(declaration)
    return {f.name: Setting(f.name, kinds[f.name], f.default, f.metadata.get("rule"), f.metadata.get("doc", ""))
            for f in dataclasses.fields(declaration)}


@dataclass(frozen=True)
class SharedFields:
    """The fields every run has; an algorithm's own settings are declared beside it (module docstring)."""
    # --- what is run -------------------------------------------------------------------------
    algorithm: str = setting("fedavg", doc="registry name, see fssl_core.algorithms.ALGORITHMS")
    dataset: str = setting("mnist", doc="see fssl_core.data.datasets.DATASETS")
    model: str = setting(AUTO, doc="'auto': the paper's model for the dataset (models.default_model_for)")
    # --- how the data are split (each partition's own parameters are declared beside it) -------------
    partition: str = setting("iid", doc="see fssl_core.data.partition.PARTITIONS")
    resplit_train: int = setting(0, doc="> 0: pool the official train+test sets and redraw this many training and "
                                        "resplit_test test samples, class-stratified (FedMix: 64,000 / 2,000 "
                                        "Fashion-MNIST, 56,000 / 2,000 CIFAR-10); 0: the official splits")
    resplit_test: int = setting(0, doc="see resplit_train")
    clients: int = setting(100, f"[1, {COUNT}]", "K")
    clients_per_round: int = setting(10, f"[1, {COUNT}]", "FedSiam's 'B active clients'")
    # --- optimisation (Table 2) ---------------------------------------------------------------
    rounds: int = setting(50, f"[1, {COUNT}]", "R_G")
    local_epochs: int = setting(5, "[1, 10000]", "R_L (0 epochs would train nothing and report chance as ok)")
    batch_size: int = setting(10, f"[1, {COUNT}]", "BS_tr, at most a client's share of the data (data.partition)")
    lr: float = setting(0.01, "[1e-7, inf)",
                        "below 1e-7, lr·gradient is under float32's resolution of the weights: nothing trains")
    momentum: float = setting(0.9, "[0, 1)", "M; 1 never forgets a gradient: the step size grows without bound")
    weight_decay: float = setting(1e-4, "[0, inf)", "wd")
    seed: int = setting(1234, "[0, 9223372036854775807]",
                        "splits, initialisation, client sampling, batches, augmentation (at most 2**63 - 1)")
    # --- what the data and the network give every algorithm --------------------------------------
    weak_augment: str = setting("dataset", doc="the weak view: the dataset's (data/augment.py), 'flip_only': a "
                                "horizontal flip alone, digits too (the FedSiam authors' Fed(Fix)Match views), "
                                "'authors_server': flip and reflect-pad-3 crop (their labels-at-server views), or "
                                "'none': the image itself (their labels-at-client MNIST siamese views)")
    projection_dim: int = setting(0, doc="the anchor head: a linear projection of the features to this many "
                                  "dimensions (FedAnchor's 128, §5.1); 0: no anchor head (models.config_rules)")
    input_scale: str = setting("normalize", ("normalize", "unit"),
                               "'normalize': pixels in [0, 1] then per channel (x − mean) / std; 'unit': pixels ÷ 255 "
                               "alone (FedMatch's code, data/loader.py scale(): x.astype(float32) / 255)")
    initial_scale: float = setting(1.0, "(0, 10]",
                                   "every parameter of the initialised network times this (FedMatch's code: 1 + "
                                   "psi_factor = 1.2, modules/nets.py build_resnet9; its σ_0 + ψ_0 = 1.2 σ_0)")
    init_seed: int = setting(-1, "[-1, 9223372036854775807]",
                             "the seed of the network's initial weights; -1: the run's seed. FedMatch's code starts "
                             "every run from one σ_0 (misc/init_sig.npy, written by the first run, set_init_params)")
    static_batchnorm: bool = setting(False, doc="SemiFL's sBN: the global model's BatchNorm statistics recomputed "
                                     "on the server's labeled set after pre-training and after each round's server "
                                     "training, before evaluation and download (algorithms/static_batchnorm.py); "
                                     "FedAnchor's experiments give it to every method")
    # --- execution ----------------------------------------------------------------------------
    device: str = setting("cpu", DEVICES)
    precision: str = setting("fp32", ("fp32", "tf32"),
                             "on CUDA: 'fp32' exact (TF32 off, cuDNN deterministic) or 'tf32' (cuBLAS and cuDNN in "
                             "TF32, torch's default for convolutions); CPU: 'fp32' (learning/precision.py)")
    trainer: str = setting(AUTO, (AUTO, "sequential", "cohort"),
                           "'sequential' (the reference), 'cohort' (a round's clients stacked, learning/cohort.py) or 'auto': "
                           "the faster for the algorithm, network and device (Federation.cohort)")
    eval_every: int = setting(1, f"[1, {COUNT}]", "rounds between test-set evaluations (the last round always)")
    eval_batch_size: int = setting(1024, f"[1, {COUNT}]",
                                   "BS_te: the test loss is summed over batches of this many images (its last bits "
                                   "depend on it; the accuracy does not)")
    checkpoint_every: int = setting(1, f"[1, {COUNT}]", "rounds between checkpoints (resume granularity)")


@dataclass(frozen=True)
class Interval:
    text: str            # as written, with ∞ for inf: what an error message shows
    low: float
    high: float
    low_open: bool
    high_open: bool

    @classmethod
    @functools.lru_cache(maxsize=None)     # every RunConfig checks every field: a plan parses each rule thousands of times
    def parse(cls, text: str, kind: type = int) -> "Interval":
        """`kind` float: an upper bound of inf is FLOAT32_BOUND (closed). Cached: an Interval is immutable."""
        if kind is float and text.endswith("inf)"):
            text = text[:-len("inf)")] + FLOAT32_BOUND + "]"
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


def show(value: Any) -> str:
    """repr of a value for a message, shortened (Python refuses to print ints of over 4300 digits)."""
    try:
        text = repr(value)
    except ValueError:
        return f"<an int of {value.bit_length()} bits>"
    return text if len(text) <= 80 else text[:60] + "..." + text[-10:]


def checked(name: str, value: Any, kind: type, rule: Any) -> Any:
    """`value` as field `name` holds it (an int given for a float becomes that float), or one ConfigError
    line naming the field, the value and what is allowed. `rule`: an interval's text, choices, a callable
    giving the choices, or None (the type alone)."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            value = float(value)
        except OverflowError:     # an int beyond any float
            raise ConfigError(f"RunConfig.{name}={show(value)}: must be a finite number within "
                              f"{Interval.parse(rule or '(-inf, inf)', float)}") from None
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"RunConfig.{name}={show(value)}: must be of type {kind.__name__}")
    if isinstance(rule, str):
        interval = Interval.parse(rule, kind)
        if kind is float and not (math.isfinite(value) and value in interval):
            raise ConfigError(f"RunConfig.{name}={show(value)}: must be a finite number within {interval}")
        if kind is int and value not in interval:
            raise ConfigError(f"RunConfig.{name}={show(value)}: must be an integer within {interval}")
    elif kind is float and not math.isfinite(value):
        raise ConfigError(f"RunConfig.{name}={show(value)}: must be a finite number")
    elif rule is not None:
        allowed = rule() if callable(rule) else rule
        if value not in allowed:
            raise ConfigError(f"RunConfig.{name}={show(value)}: must be one of {', '.join(map(str, allowed))}")
    if kind is float:
        value = value + 0.0        # -0.0 -> 0.0: numerically equal values are one computation, one id
    return value


# What a number on the command line may look like: ASCII digits, an optional sign, and for a float a decimal point and
# exponent (and inf/nan, which validation then refuses by name). Python's int() and float() also take '1_0' and
# other scripts' digits ('٣' is 3), so `rounds=1_0` or `rounds=٣` would run as 10 or 3 rounds under an id the
# reader never typed.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)
_EXAMPLE = {int: "e.g. 10", float: "e.g. 0.01 or 1e-4"}


def parsed(name: str, text: str, kind: type) -> Any:
    """A command-line `name=text` as a value of `kind`, or one ConfigError line."""
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
    elif kind not in _EXAMPLE:
        return kind(text)
    elif (_INT_TEXT if kind is int else _FLOAT_TEXT).fullmatch(text):
        try:
            return kind(text)
        except ValueError:     # past Python's 4,300-digit limit for int(): no field takes such a number
            raise ConfigError(f"RunConfig.{name}=<{len(text)} characters>: expected {kind.__name__} of at most "
                              "4300 digits") from None
    how = f", written in ASCII digits ({_EXAMPLE[kind]})" if kind in _EXAMPLE else ""
    raise ConfigError(f"RunConfig.{name}={text!r}: expected {kind.__name__}{how}")


def key_value_pairs(items: list[str]) -> dict[str, str]:
    """Command-line `key=value` items as a mapping (values still text: RunConfig.from_strings converts them);
    an item without `=` or a key given twice is one ConfigError line."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"argument {item!r}: expected key=value with a RunConfig field as key")
        if key in pairs:
            raise ConfigError(f"argument {item!r}: {key} given twice ({key}={pairs[key]!r} and {key}={value!r}); "
                              "give each key once")
        pairs[key] = value
    return pairs
