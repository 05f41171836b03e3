"""RunConfig: every knob of a run, validated on construction, identified by a stable hash.

A RunConfig holds the fields every run has (config.SharedFields), every registered partition's parameters
(declared beside each partition, fssl_core/data/partition/) and every registered algorithm's settings (declared
beside each algorithm, fssl_core/algorithms/<name>.py), all read as attributes: `cfg.lr`, `cfg.labeled_ratio`,
`cfg.tau_curve`. Built from keyword arguments, a mapping or command-line strings, it is checked once, here:
each field's type, then its rule (config.checked), then the rules across fields, each registry's beside what
it owns (`config_rules()` in fssl_core.algorithms, data.datasets, data.partition, models). Validation only
refuses, never changes a value, so a config valid before keeps its run id. What only the data or the machine
can refuse (a class too small for a balanced server set, a device absent) is refused when the run is built:
`data.partition.PartitionError`, `data.datasets.DatasetUnavailable`, `engine.DeviceUnavailable`.

The run's identity hashes one flat name → value map (`to_dict`): the fields that change the result and differ
from their defaults, less the settings and parameters that the run's algorithm and partition do not read, plus
the revisions of the computation. This module sits above the registries it asks; none of them imports it.
"""
from __future__ import annotations

import difflib
import functools
import hashlib
import itertools
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .algorithms import ALGORITHMS, algorithm_settings, ignored_settings
from .algorithms import config_rules as algorithm_rules
from .config import AUTO, ConfigError, Interval, Setting, SharedFields, checked, parsed, settings_of
from .data.datasets import DATASETS, shape_of
from .data.datasets import config_rules as dataset_rules
from .data.partition import PARTITIONS, ignored_parameters, partition_parameters
from .data.partition import config_rules as partition_rules
from .models import MODELS, default_model_for
from .models import config_rules as model_rules

# Fields that change how a run is executed or stored but not what it computes; they are left
# out of the run's identity so that, e.g., checkpointing more often does not retrain a run.
# eval_batch_size is in the identity: the test loss is summed over its batches in float32, so its last bits
# depend on it (tests/test_evaluation.py); every stored run has the default, so no id moved when it joined.
NOT_IN_IDENTITY = frozenset({"checkpoint_every"})
# What a run computes beyond its config. Bump ENGINE_REVISION when a change alters the numbers of
# every run (trainers, batching, augmentation, partitions, models, evaluation), and an algorithm's
# `revision` (algorithms/<name>.py) when it alters that algorithm's runs only, a network's `revision`
# (its registry line, models/__init__.py) when it alters the runs on that network only: the affected runs get
# new ids, so no stored run of an older computation is ever read back as the new one. (The package
# version is not in the identity: it does not change when the computation does.)
ENGINE_REVISION = 2   # 2: labeled repeats and the pooled labeled share per batch, stratified IID labels
# The server's trainings (labels-at-server runs only: elsewhere the server holds no labels and never
# trains) and what they draw from. 1: every training of a round's hooks from its own stream
# (seed, round, SERVER, stage, part), apart from the round's client sampling (engine.server_trainer).
# Kept apart from ENGINE_REVISION so that a change to the server's draws leaves the labels-at-client
# runs their ids.
SERVER_TRAINING_REVISION = 1

_SHARED = settings_of(SharedFields)
_CHOICES = {"algorithm": lambda: tuple(ALGORITHMS), "dataset": lambda: DATASETS,
            "model": lambda: (AUTO, *MODELS), "partition": lambda: tuple(PARTITIONS)}


def _registries() -> tuple:
    """The state of the two registries that declare fields: what the cached tables below are computed for."""
    return tuple(ALGORITHMS.items()), tuple(PARTITIONS.items())


def declared() -> dict[str, Setting]:
    """Every field: the shared ones, the registered partitions' parameters, then the registered algorithms'
    settings (as registered now)."""
    return _declared(_registries())


@functools.lru_cache(maxsize=8)
def _declared(registries: tuple) -> dict[str, Setting]:
    parameters, settings = partition_parameters(), algorithm_settings()
    kinds = (("a shared field", _SHARED), ("a partition's parameter", parameters), ("an algorithm's setting", settings))
    for (kind, one), (other_kind, other) in itertools.combinations(kinds, 2):
        for field in one.keys() & other.keys():
            raise RuntimeError(f"RunConfig.{field}: declared both as {kind} and as {other_kind}")
    return {**_SHARED, **parameters, **settings}


def field_types() -> dict[str, type]:
    return {name: s.kind for name, s in declared().items()}


def defaults() -> Mapping[str, Any]:
    """Every field's default (read-only: one table per state of the registries, read by every run id)."""
    return _defaults(_registries())


@functools.lru_cache(maxsize=8)
def _defaults(registries: tuple) -> Mapping[str, Any]:
    return MappingProxyType({name: s.default for name, s in declared().items()})


@functools.lru_cache(maxsize=8)
def _checked_defaults(registries: tuple) -> dict[str, Any]:
    """Each field's default as validation holds it: a value equal to its default, of its type, is valid as the
    default is (every construction checks the defaults), so validation checks only the fields given otherwise."""
    rules = field_rules()
    return {name: checked(name, s.default, s.kind, rules.get(name)) for name, s in declared().items()}


def field_rules() -> dict[str, Any]:
    """Every field's rule: its declaration's, the choices of the four registries' names, and the rules each
    registry states for the shared fields it owns; a field of no rule is only type-checked."""
    return _field_rules(_registries())


@functools.lru_cache(maxsize=8)
def _field_rules(registries: tuple) -> dict[str, Any]:
    rules = {name: s.rule for name, s in declared().items() if s.rule is not None}
    owned = [_CHOICES, *(rules for rules, _ in (dataset_rules(), model_rules(), partition_rules()))]
    for rules_of_registry in owned:
        for name, rule in rules_of_registry.items():
            if name in rules:
                raise RuntimeError(f"RunConfig.{name}: two registries give it a rule")
            rules[name] = rule
    return rules


def field_intervals() -> dict[str, Interval]:
    """Each number field's interval, as validation applies it (a float's inf is FLOAT32_BOUND)."""
    kinds = field_types()
    return {name: Interval.parse(rule, kinds[name]) for name, rule in field_rules().items() if isinstance(rule, str)}


def _cross_field_rules() -> tuple:
    return _cross_field_rules_of(_registries())


@functools.lru_cache(maxsize=8)
def _cross_field_rules_of(registries: tuple) -> tuple:
    """Every construction applies them: gathered once per state of the algorithm and partition registries."""
    owners = (dataset_rules(), model_rules(), algorithm_rules(), partition_rules())
    return (_clients_per_round, _tf32_on_cuda_only, *(rule for _, rules in owners for rule in rules))


def _clients_per_round(cfg, facts):
    if cfg.clients_per_round > cfg.clients:
        return f"clients_per_round={cfg.clients_per_round}: must be at most clients={cfg.clients}"


def _tf32_on_cuda_only(cfg, facts):
    if cfg.precision == "tf32" and cfg.device != "cuda":
        return (f"precision='tf32', device={cfg.device!r}: TF32 is a format of NVIDIA GPUs' tensor cores; "
                "use device='cuda', or precision='fp32'")


@dataclass(frozen=True, init=False, eq=False, repr=False)
class RunConfig(SharedFields):
    """A run's every knob (module docstring). `RunConfig(algorithm='fedsiam_d', tau_curve='rectangle')`;
    an unknown name, a wrong type or a value out of its rule is one ConfigError line."""

    def __init__(self, **values: Any):
        fields = declared()
        _refuse_flower_object(values.get("partition"))
        for key in values:
            if key not in fields:
                close = difflib.get_close_matches(key, sorted(fields), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ConfigError(f"RunConfig has no field '{key}'{hint} Known fields: {', '.join(sorted(fields))}")
        for name in _SHARED:
            object.__setattr__(self, name, values.get(name, fields[name].default))
        object.__setattr__(self, "_settings", {name: values.get(name, field.default)
                                               for name, field in fields.items() if name not in _SHARED})
        _validate(self)
        if self.model == AUTO:
            object.__setattr__(self, "model", default_model_for(self.dataset))

    def __getattr__(self, name: str) -> Any:
        settings = self.__dict__.get("_settings")      # absent while an unpickled config is rebuilt
        if settings is not None and name in settings:
            return settings[name]
        raise AttributeError(f"RunConfig has no field {name!r}")

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "RunConfig":
        """Build from a mapping, rejecting unknown keys (with the closest known name)."""
        return cls(**values)

    @classmethod
    def dropping_unread(cls, **values: Any) -> "RunConfig":
        """Build from settings shared by several methods (a paper's common dict), leaving out those the
        algorithm does not read: given to RunConfig itself they are refused, so that no record states a
        setting as if it had been used. The run id is the same either way (it hashes only what is read)."""
        unread = ignored_settings(values.get("algorithm", declared()["algorithm"].default))
        return cls(**{k: v for k, v in values.items() if k not in unread})

    @classmethod
    def from_strings(cls, pairs: dict[str, str]) -> "RunConfig":
        """Build from command-line `key=value` strings, converting each by the field's type."""
        return cls.from_dict(cls.values_from_strings(pairs))

    @staticmethod
    def values_from_strings(pairs: dict[str, str]) -> dict[str, Any]:
        """Command-line `key=value` strings as field values, each converted by its field's type (an unknown
        key is left as text, for from_dict to name); a value of the wrong type is one ConfigError line.
        Also for a change to a built config: `cfg.replace(**RunConfig.values_from_strings(...))`."""
        kinds = field_types()
        return {key: parsed(key, text, kinds[key]) if key in kinds else text for key, text in pairs.items()}

    def replace(self, **changes: Any) -> "RunConfig":
        return RunConfig(**{**self.to_dict(), **changes})

    # --- the flat map, equality, display ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field's value, shared fields first, then the partitions' parameters and the algorithms' settings."""
        return {**{name: getattr(self, name) for name in _SHARED}, **self.__dict__["_settings"]}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().items()))

    def __repr__(self) -> str:
        initial = defaults()
        given = [f"{k}={v!r}" for k, v in self.to_dict().items() if k == "algorithm" or v != initial.get(k)]
        return f"RunConfig({', '.join(given)})"

    # --- identity -----------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        """Hash of every field that changes the result and differs from its default (an algorithm's
        setting that the run's algorithm does not read changes nothing: algorithms.ignored_settings, nor does a
        partition's parameter that its partition does not read; nor a partition's unlabeled split for a method
        that reads no unlabeled sample), plus the revisions of the computation (ENGINE_REVISION, the algorithm's
        own and, where bumped, the network's). Leaving defaults out means a new knob, added with a default that
        keeps the old behaviour, does not orphan the runs already in a store; changing what a run computes is a
        revision bump."""
        return self.identity_hash[:16]

    def fields_read(self) -> dict[str, Any]:
        """`to_dict` less the fields this run does not read: the algorithms' settings its algorithm ignores
        (algorithms.ignored_settings), the partitions' parameters its partition ignores
        (data.partition.ignored_parameters), and γ at the server where a count N_s (server_labeled > 0) takes its
        place. The partition's rules hold the last two at their defaults (data.partition.config_rules). The
        identity hashes what this returns, less NOT_IN_IDENTITY and the defaults; MLflow shows it as the run's
        params (integrations/mlflow_fields.py)."""
        ignored = ignored_settings(self.algorithm) | ignored_parameters(self.partition)
        if PARTITIONS[self.partition].labels_at == "server" and self.server_labeled > 0:
            ignored |= {"labeled_ratio"}
        return {k: v for k, v in self.to_dict().items() if k not in ignored}

    @property
    def identity_hash(self) -> str:
        """The run's identity in full (sha256, 64 hex digits; `run_id` is its first 16): what a
        stored file's `config_hash` must equal to belong to this run (store/integrity.py). Computed once per
        state of the registries (a config is frozen; the revisions it hashes are the registries')."""
        algorithm, partition = ALGORITHMS[self.algorithm], PARTITIONS[self.partition]
        initial = defaults()
        identity = {k: v for k, v in self.fields_read().items() if k not in NOT_IN_IDENTITY and v != initial[k]}
        if not algorithm.reads_unlabeled and partition.same_labeled_split:
            identity["partition"] = partition.same_labeled_split      # the same computation: one run
        for name, normal_form in partition.normal_forms.items():   # two spellings of one computation: one run
            if name in identity:
                identity[name] = normal_form(identity[name])
        identity["revision"] = [ENGINE_REVISION, algorithm.revision]
        if partition.labels_at == "server":
            identity["server_training_revision"] = SERVER_TRAINING_REVISION
        model = MODELS.get(self.model)
        if model is not None and model.revision:     # a network's own revision (only where bumped: the
            identity["model_revision"] = model.revision   # other networks' runs keep their ids)
        if model is not None and model.batchnorm and algorithm.batchnorm_revision:   # what the method computes
            identity["batchnorm_revision"] = algorithm.batchnorm_revision          # on BatchNorm networks alone
        blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def _refuse_flower_object(partition: Any) -> None:
    """A Flower Datasets partitioner or FederatedDataset given as the partition: one line saying how a run names
    it. An object is not taken: its constructor's arguments, which the identity must hash, are not readable
    back from it (DirichletPartitioner keeps alpha as an array, under private names)."""
    module = type(partition).__module__
    if module == "flwr_datasets" or module.startswith("flwr_datasets."):
        raise ConfigError(f"RunConfig.partition=<{type(partition).__name__} object>: a Flower Datasets partitioner is "
                          "given by its call as text, partition='flwr_datasets', flwr_partitioner=\"DirichletPartitioner"
                          "(partition_by='label', alpha=0.5)\" (its num_partitions is RunConfig.clients, its seed "
                          "RunConfig.seed); of a FederatedDataset, give its partitioner so")


def _validate(cfg: RunConfig) -> None:
    rules, as_default = field_rules(), _checked_defaults(_registries())
    settings = cfg.__dict__["_settings"]
    for name, field in declared().items():
        value = getattr(cfg, name)
        if type(value) is type(field.default) and value == field.default:
            value = as_default[name]
        else:
            value = checked(name, value, field.kind, rules.get(name))
        if name in settings:
            settings[name] = value
        else:
            object.__setattr__(cfg, name, value)
    facts = Facts.of(cfg)
    for rule in _cross_field_rules():
        problem = rule(cfg, facts)
        if problem:
            raise ConfigError(f"RunConfig.{problem}")


# --- what the cross-field rules read ---------------------------------------------------------------
# Each cross-field rule, here or in a registry, returns None or the message after "RunConfig.",
# naming every field it involves as field=value. What they read of the data (image size, sample
# counts) is data.datasets.shape_of: no file is opened.

@dataclass(frozen=True)
class Facts:
    model: str                 # cfg.model with 'auto' resolved
    algorithm: type            # the algorithm's class: its declared labels_at, cohort, needs_projection
    partition: Any             # cfg.partition's declaration: where it puts the labels, what it reads, its checks
    shape: Any                 # data.datasets.Shape of cfg.dataset
    train: int                 # training samples the partition splits (resplit_train where set)
    defaults: dict[str, Any]   # every field's default

    @property
    def labels_at(self) -> str:
        """'client' or 'server': where cfg.partition puts the labels."""
        return self.partition.labels_at

    @property
    def uses(self) -> tuple[str, ...]:
        """The partition's parameters cfg.partition reads."""
        return self.partition.reads

    @classmethod
    def of(cls, cfg: RunConfig) -> "Facts":
        shape = shape_of(cfg.dataset)
        return cls(model=default_model_for(cfg.dataset) if cfg.model == AUTO else cfg.model,
                   algorithm=ALGORITHMS[cfg.algorithm], partition=PARTITIONS[cfg.partition], shape=shape,
                   train=cfg.resplit_train or shape.num_train, defaults=defaults())

    def training_set(self, cfg: RunConfig) -> str:
        """The training set the partition splits, for a message ("mnist's 60000 training samples")."""
        resplit = f" (resplit_train={cfg.resplit_train})" if cfg.resplit_train else ""
        return f"{cfg.dataset}'s {self.train} training samples{resplit}"
