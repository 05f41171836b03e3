"""The algorithm contract: the hooks the engine calls, and their defaults (plain FedAvg).

The engine owns loops, devices, seeds, timing, byte counts and evaluation. An algorithm owns
only its mathematics, through these hooks, called in this order each round:

    server_update(state, round, train)      server-side training before the round (labels-at-server)
    download(state, round, client) -> payload   what a selected client receives (bytes counted)
    client_init(payload, view) -> nets      the client's networks, built from the payload
    local_view(nets, view) -> view          the samples local training walks (default: all the client's)
    plan(view, round) -> Plan               how local training walks them
    loss(nets, batch, step) -> (loss, stats)    per-step loss, a function of tensors and a batch
    after_step(nets, step)                  e.g. an EMA update of a target network
    upload(nets, view, round) -> payload    what the client sends back (bytes counted)
    aggregate(state, uploads, round) -> state
    server_finish(state, round, train)      server-side training after aggregation (SemiFL's and
                                            FedAnchor's alternate training, their Algorithm 1 line 11)
    eval_tensors(state) -> tensors          the network the engine evaluates on the test set

Server state is a nested dict of tensors and plain values, checkpointed by the engine; an
algorithm keeps no other state across rounds, so an interrupted run resumes exactly.

A loss calls its networks through its Context: `apply` for the forward it differentiates (train
mode), `target` for every output it holds constant (a pseudo-label, a teacher's, a helper's): the one
BatchNorm policy of targets, running statistics, none updated, is written there.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.func
from torch import nn

from ..learning.aggregate import fedfreq_weights, fedloss_weights, weighted_mean
from ..learning.batches import Batch, DataView, Plan, TrainImages
from ..config import SharedFields, setting, settings_of
from ..models import grouped
from ..learning.training import SGD, Nets, Step, Tensors, no_grad

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class ServerSGD:
    """How the server trains on its labeled set (labels-at-server): its batch size, momentum and
    weight decay; the learning rate is RunConfig.lr. `None`: the clients' (BS_tr, M, wd)."""
    batch_size: int | None
    momentum: float | None
    weight_decay: float | None
    large_batch_above: tuple[int, int] | None = None   # (labels, batch): above this many server labels, this batch


# RunConfig.server_sgd. 'clients': Table 2 gives one BS_tr, M and wd, read for the server too.
# 'authors': the FedSiam authors' labels-at-server code (fedsiam-labels-at-server/fedsiam-{pi,mt}-main.py,
# main(): a fresh `SGD(model_glob.parameters(), lr=0.01, momentum=0.5)` each round over a DataLoader of
# the labeled set with `batch_size=args.batch_size`, 10 in their README's MNIST command; no weight decay).
SERVER_SGD = {"clients": ServerSGD(None, None, None), "authors": ServerSGD(10, 0.5, 0.0),
              # SemiFL's code (src/utils.py at 4ec3663, process_control: cfg['server']['batch_size']['train'] = 250
              # if num_supervised > 1000 else 10): the clients' SGD, its batch by the server's label count
              "semifl_code": ServerSGD(10, None, None, large_batch_above=(1000, 250))}
# RunConfig.client_weighting: FedSiam Eq. (2)'s 1/B; by counts; FedMix's Eq. 10 / journal Eq. 12 (learning/aggregate.py)
CLIENT_WEIGHTINGS = ("uniform", "labeled", "samples", "fedfreq", "fedloss")


@dataclass(frozen=True)
class AlgorithmSettings:
    """What every method reads (FedSiam's Table 2 and its authors' code unless a doc says otherwise)."""
    client_weighting: str = setting("uniform", CLIENT_WEIGHTINGS,
                                    "FedSiam Eq. (2): θ^G = 1/B Σ_b θ^b; 'labeled' / 'samples': weighted by counts; "
                                    "'fedfreq' / 'fedloss': FedMix's Eq. 10 / journal Eq. 12 (learning/aggregate.py)")
    labeled_repeats: int = setting(1, "[1, 100]",
                                   "r: a local epoch walks a client's labeled set r times beside its unlabeled set "
                                   "once, if labeled samples are under 40% of its data (FedSiam's authors: r = 3 at "
                                   "γ = 0.10, 2 at 0.15 and 0.20, 6 on Non-IID-III; labeled_repeats_of)")
    server_epochs: int = setting(1, "[0, 10000]",
                                 "labels-at-server: epochs over the server's labeled set before each round")
    server_sgd: str = setting("clients", tuple(SERVER_SGD),
                              "the server's batches and SGD on its labeled set: 'clients' (BS_tr, M, wd, as Table 2 "
                              "gives them for both), 'authors' (batch 10, momentum 0.5, no weight decay: the "
                              "FedSiam authors' labels-at-server code) or 'semifl_code' (batch 250 above 1,000 "
                              "labels at the server, else 10: SemiFL's code; SERVER_SGD)")


def server_sgd_of(cfg: SharedFields) -> tuple[int, float, float]:
    """(batch size, momentum, weight decay) of the server's training on its labeled set."""
    own = SERVER_SGD[cfg.server_sgd]
    if own.large_batch_above is not None and cfg.server_labeled > own.large_batch_above[0]:
        own = replace(own, batch_size=own.large_batch_above[1])
    return (cfg.batch_size if own.batch_size is None else own.batch_size,
            cfg.momentum if own.momentum is None else own.momentum,
            cfg.weight_decay if own.weight_decay is None else own.weight_decay)


State = dict[str, Any]
Payload = dict[str, Any]   # nested dicts of tensors; every tensor in it crosses the network


@dataclass(eq=False)
class Upload:
    client: int
    payload: Payload
    num_labeled: int
    num_unlabeled: int
    stats: dict[str, float] = field(default_factory=dict)
    participations: int = 1   # rounds this client has been selected in, this one included (FedFreq's q)


@dataclass(eq=False)
class Context:
    """What an algorithm may use besides its config: the network template, the task's shape, the
    training images (a party reaches only its own indices; unlabeled samples' labels are for
    metrics only) and the server's labeled set."""
    model: nn.Module          # architecture template; its own parameters are never trained
    num_classes: int
    device: torch.device
    images: TrainImages | None = None
    server_view: DataView | None = None

    def apply(self, tensors: Tensors, x: Tensor, train: bool = True, embed: bool = False,
              features_only: bool = False):
        """The network with `tensors` as its parameters and buffers, applied to `x`: its logits, or
        with `embed` (logits, anchor-head embedding), or with `features_only` the backbone's output.

        In train mode BatchNorm layers normalise with the batch's statistics and update the running
        statistics held in `tensors`: the forward a loss differentiates. A target the loss holds
        constant is computed by `target` instead.
        """
        if self.model.training != train:
            self.model.train(train)
        return self._call(tensors, x, embed, features_only)

    def _call(self, tensors: Tensors, x: Tensor, embed: bool, features_only: bool):
        if self.model.grouped_op is not None and grouped.active():
            return self.model.grouped_forward(tensors, x, embed, features_only)
        kwargs = {k: True for k, on in (("embed", embed), ("features_only", features_only)) if on}
        return torch.func.functional_call(self.model, tensors, (x,), kwargs or None)

    @functools.cached_property
    def _batchnorms(self) -> tuple[nn.Module, ...]:
        """The template's BatchNorm layers, found once: `target` switches them on every call (a hot path)."""
        return tuple(m for m in self.model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm))

    @property
    def has_batchnorm(self) -> bool:
        return bool(self._batchnorms)

    @no_grad
    def target(self, tensors: Tensors, x: Tensor, embed: bool = False, features_only: bool = False,
               dropout: bool = True, batch_statistics: bool = False):
        """A target the loss holds constant (a pseudo-label's ȳ, a teacher's or target network's output,
        a helper's prediction), without gradient, with BatchNorm as the method's reference code computes it
        (`Algorithm.target_statistics`, passed as `batch_statistics`):
        - running statistics (the default): every BatchNorm in eval mode, normalising with the running
          statistics held in `tensors` and updating none of them: the model's prediction as it is tested
          (Federation.test_metrics). SemiFL's code (src/modules/modules.py: model.train(False) before its
          pseudo-labels) and FedSem's (main_fedsem.py: net_glob.eval() before labeling) do this; it is also the
          reading for FedMix and FedMatch (`RUNNING_READING`).
        - batch statistics: the whole network in train mode, as a reference whose target forward runs after
          model.train() computes it (FedSiam's EMA teacher, models/Update.py: net_ema.train() then
          net_ema(ema_input_var); FedCon's BYOL target, models/byol.py under model_local.train()): the batch's
          own statistics, and the forward updates the running statistics in `tensors`, as theirs does.
        Dropout: as in training with `dropout` (the default; masks drawn from the party's stream, as the
        trained forward's: a Π/MT target's noise, FedMix's views), off without it (a frozen model's prediction:
        FedMatch's helpers and probe, FedSem's labeler). A target read off the trained forward itself
        (FixMatch's one joint batch: FedFixMatch) shares that forward's batch statistics, by FixMatch's design.
        For a network without BatchNorm both policies give `apply(..., train=True)` under no_grad, the same floats.
        """
        if self.model.training != dropout:
            self.model.train(dropout)
        norms = self._batchnorms
        if not norms or dropout == batch_statistics:     # BatchNorm already as asked: no layer to switch
            return self._call(tensors, x, embed, features_only)
        try:
            for m in norms:
                m.training = batch_statistics
            return self._call(tensors, x, embed, features_only)
        finally:
            for m in norms:
                m.training = dropout

    @no_grad
    def predict(self, tensors: Tensors, idx: Tensor, chunk: int = 1024) -> tuple[Tensor, Tensor | None]:
        """(logits, anchor-head embedding or None) of the un-augmented training images `idx`, in eval
        mode (BatchNorm's running statistics), computed in chunks."""
        embed = getattr(self.model, "projection", None) is not None
        self.model.eval()
        logits, z = [], []
        for i in range(0, int(idx.numel()), chunk):
            x = self.images.normalize(self.images.x[idx[i:i + chunk]])
            out = torch.func.functional_call(self.model, tensors, (x,), {"embed": embed})
            logits.append(out[0] if embed else out)
            if embed:
                z.append(out[1])
        empty = torch.empty(0, device=self.device)
        return (torch.cat(logits) if logits else empty.view(0, self.num_classes),
                (torch.cat(z) if z else empty) if embed else None)

    @no_grad
    def batchnorm_statistics(self, tensors: Tensors, idx: Tensor, batch_size: int) -> Tensors:
        """`tensors` with every BatchNorm's running mean and variance recomputed from scratch on
        the un-augmented training images `idx`: one train-mode pass in batches, each batch counted
        once (a cumulative average, BatchNorm's momentum=None), as SemiFL's static BN computes the
        global model's statistics. Unchanged for a network without BatchNorm."""
        norms = {name: m for name, m in self.model.named_modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)}
        if not norms or idx.numel() == 0:
            return tensors
        out = dict(tensors)
        for name in norms:
            out[f"{name}.running_mean"] = torch.zeros_like(tensors[f"{name}.running_mean"])
            out[f"{name}.running_var"] = torch.ones_like(tensors[f"{name}.running_var"])
            out[f"{name}.num_batches_tracked"] = torch.zeros_like(tensors[f"{name}.num_batches_tracked"])
        momenta = {name: m.momentum for name, m in norms.items()}
        try:
            for m in norms.values():
                m.momentum = None
            self.model.train()
            for i in range(0, int(idx.numel()), batch_size):
                x = self.images.normalize(self.images.x[idx[i:i + batch_size]])
                torch.func.functional_call(self.model, out, (x,))
        finally:
            for name, m in norms.items():
                m.momentum = momenta[name]
        return out


# A server-side trainer the engine hands to `server_update` and `server_finish`:
# train(nets, trainable, loss, plan, lr=None, part=0, params=None, momentum=None) trains `nets[trainable]`
# in place on the server's labeled data with `server_sgd` (its own `lr`, e.g. pre-training's), returning the
# loss statistics; `part` numbers the trainings of one hook so each draws its own random stream; `params`
# limits it to some of the network's parameters (e.g. one head); `momentum` is a dict the algorithm keeps in its
# state to carry the optimiser's velocity from one training to the next (learning.training.train_party).
ServerTrain = Callable[..., dict]


# The targets' BatchNorm statistics for a method whose reference code ran a network without BatchNorm, so that no
# reference says how: FedMatch's (wyjeong/FedMatch, modules/nets.py build_resnet9) and FedMix's (which ran on it:
# papers/fedmix/READINGS.md, "The network"). On a network with BatchNorm both read their targets with the running
# statistics, the fix measured for FedMix (papers/fedmix/READINGS.md: its ȳ from a ResNet-9 at 79.6% test accuracy right for 72%
# of the streaming clients' samples in eval mode against 55% in train mode, same model and views), applied to
# the two alike so that FedMix against FedMatch compares methods, not BatchNorm policies.
RUNNING_READING = "running"


class Algorithm:
    name = "base"
    # bumped when a change alters what this algorithm's runs compute (a reading, a fix): see
    # run_config.ENGINE_REVISION; a subclass inherits its parent's unless it sets its own
    revision = 1
    trainable: tuple[str, ...] = ("model",)   # nets whose parameters local SGD updates
    # whether a round's clients may train as one cohort (learning/cohort.py says what the loss must satisfy);
    # RunConfig refuses trainer='cohort' where it is False
    cohort: bool = False
    # where the labeled data this method learns from must be: "client" (labels-at-client partitions,
    # the labeled samples each client holds) and/or "server" (labels-at-server partitions, the server's
    # labeled set), as each partition declares its own (data.partition.PARTITIONS). RunConfig refuses a
    # partition whose labels sit where the method never reads them (it would train nothing, or only
    # without labels, and report ok).
    labels_at: tuple[str, ...] = ("client",)
    # whether any loss or hook reads a client's unlabeled samples (their images; their count enters the
    # labeled share either way). A method that reads none computes one run on two partitions that share
    # their labeled split and per-client sizes (a partition's `same_labeled_split`): one run identity.
    reads_unlabeled: bool = True
    # whether the network needs its anchor head (RunConfig.projection_dim > 0)
    needs_projection: bool = False
    # the BatchNorm statistics of this method's no-grad targets (Context.target): "running" (eval mode) or
    # "batch" (train mode), as its reference code computes them; a subclass names its evidence beside it
    target_statistics: str = "running"
    # bumped when what this method computes on a network with BatchNorm changed while its runs on BN-free
    # networks did not: in the identity of its runs on such a network only (run_config.py)
    batchnorm_revision: int = 0
    # The settings this method reads (a frozen dataclass of config.setting fields: default, rule, doc;
    # a method's extends its parent method's), and its cross-field rules, each (cfg, facts) -> None or the
    # message after "RunConfig." (run_config.Facts). RunConfig applies every registered method's to every
    # config: a bad value is refused whichever method runs.
    settings: type = AlgorithmSettings
    checks: tuple[Callable, ...] = ()
    # Settings introduced by a class outside this one's ancestry that it reads too (FedMatch reads
    # FedFixMatch's threshold T). With its ancestry's `settings` they are what it reads (`reads`); an
    # algorithm's setting that the run's algorithm does not read is left out of the run identity
    # (run_config.py), so that, e.g., `tau_mu` set for a FedAvg row of a sweep does not retrain FedAvg.
    reads_also: tuple[str, ...] = ()

    @classmethod
    def reads(cls) -> frozenset[str]:
        """The algorithms' settings this algorithm reads (tests/test_algorithm_reads.py records what a
        short run of each algorithm reads and checks it is among them)."""
        return frozenset((*settings_of(cls.settings),
                          *(name for klass in cls.__mro__ for name in vars(klass).get("reads_also", ()))))

    def __init__(self, cfg: SharedFields, ctx: Context):
        self.cfg = cfg
        self.ctx = ctx

    def target(self, tensors: Tensors, x: Tensor, **kwargs) -> Tensor:
        """Context.target with this method's BatchNorm statistics (`target_statistics`): every target an
        algorithm computes goes through here, so its policy is declared once, beside its evidence."""
        return self.ctx.target(tensors, x, batch_statistics=self.target_statistics == "batch", **kwargs)

    @functools.cached_property
    def parameter_names(self) -> tuple[str, ...]:
        """The network's parameters by name, in the network's order (its buffers, e.g. BatchNorm's statistics, not)."""
        return tuple(n for n, _ in self.ctx.model.named_parameters())

    # --- server ---------------------------------------------------------------------------------
    def init_state(self, initial: Tensors) -> State:
        return {"model": initial}

    def server_update(self, state: State, round: int, train: ServerTrain) -> None:
        """Train at the server before round `round` (round 0: once before the first). Default: none."""

    def server_finish(self, state: State, round: int, train: ServerTrain) -> None:
        """Train at the server after round `round`'s aggregation, before evaluation. Default: none."""

    def server_plan(self, epochs: int | None = None) -> Plan:
        """`epochs` (default `server_epochs`) over the server's labeled set, in the server's batches
        (RunConfig.server_sgd: BS_tr, or the FedSiam authors' labels-at-server 10)."""
        return Plan(epochs=self.cfg.server_epochs if epochs is None else epochs,
                    labeled_batch=server_sgd_of(self.cfg)[0])

    def client_sgd(self, round: int) -> SGD:
        """The clients' optimiser in `round`. Default: the run's SGD (lr, momentum, weight decay), every round."""
        return SGD(self.cfg.lr, self.cfg.momentum, self.cfg.weight_decay)

    def server_sgd(self, round: int, lr: float | None = None) -> SGD:
        """The server's optimiser on its labeled set before or after `round` (RunConfig.server_sgd's momentum
        and weight decay), at the run's lr or a training's own `lr`."""
        _, momentum, weight_decay = server_sgd_of(self.cfg)
        return SGD(self.cfg.lr if lr is None else lr, momentum, weight_decay)

    def download(self, state: State, round: int, client: int) -> Payload:
        return {"model": state["model"]}

    def aggregate(self, state: State, uploads: list[Upload], round: int) -> State:
        """FedAvg (Eq. 2 of FedSiam): the mean of the uploaded models, weighted per `client_weights`."""
        return {**state, "model": weighted_mean([u.payload["model"] for u in uploads], self.client_weights(uploads))}

    def client_weights(self, uploads: list[Upload]) -> list[float]:
        """RunConfig.client_weighting: 'uniform' (1/B, as FedSiam's Eq. 2 and its authors' code),
        'labeled' (labeled samples held), 'samples' (all samples held), 'fedfreq' (FedMix's Eq. 10,
        from participation counts) or 'fedloss' (from each client's mean training loss of the round;
        the 4-byte scalar it sends is not counted in the upload bytes)."""
        how = self.cfg.client_weighting
        if how == "fedfreq":
            return fedfreq_weights([u.participations for u in uploads])
        if how == "fedloss":
            return fedloss_weights([u.stats.get("loss", 0.0) for u in uploads])
        if how == "labeled" and any(u.num_labeled for u in uploads):
            return [float(u.num_labeled) for u in uploads]
        if how == "samples":
            return [float(u.num_labeled + u.num_unlabeled) for u in uploads]
        return [1.0] * len(uploads)

    def eval_tensors(self, state: State) -> Tensors:
        return state["model"]

    def eval_parts(self, state: State) -> dict[str, Tensors]:
        """Other models of the state whose test accuracy each evaluation logs too, as `accuracy_<name>` (e.g.
        FedMix's ψ and σ). Default: none."""
        return {}

    def round_metrics(self, state: State) -> dict[str, float]:
        """Scalars logged with each round (e.g. FedSiam's τ). Default: none."""
        return {}

    # --- client ---------------------------------------------------------------------------------
    def client_init(self, payload: Payload, view: DataView) -> Nets:
        return {"model": clone(payload["model"])}

    def local_view(self, nets: Nets, view: DataView) -> DataView:
        """The samples local training walks, e.g. SemiFL's and FedAnchor's fix set. Default: all."""
        return view

    def plan(self, view: DataView, round: int) -> Plan:
        """R_L epochs over the labeled set, each walking it `labeled_repeats_of` times."""
        return Plan(epochs=self.cfg.local_epochs * labeled_repeats_of(self.cfg, view), labeled_batch=self.cfg.batch_size)

    def loss(self, nets: Nets, batch: Batch, step: Step) -> tuple[Tensor, dict[str, Tensor]]:
        raise NotImplementedError

    def after_step(self, nets: Nets, step: Step) -> None:
        """Called after every SGD step. Default: nothing."""

    def upload(self, nets: Nets, view: DataView, round: int) -> Payload:
        return {"model": nets["model"]}


# Labeled share of a client's data under which its labeled set is repeated: the FedSiam authors'
# get_train_idxs (models/Update.py) repeats it on Non-IID-III clients below 40% (the 90 poor ones)
# and never on the 10 rich ones (55%); every other setting's γ is below it.
REPEAT_BELOW_SHARE = 0.4


def labeled_repeats_of(cfg: SharedFields, view: DataView) -> int:
    """r of this client: RunConfig.labeled_repeats if its labeled share is under REPEAT_BELOW_SHARE, else 1."""
    total = view.num_labeled + view.num_unlabeled
    return cfg.labeled_repeats if total and view.num_labeled < REPEAT_BELOW_SHARE * total else 1


def mixed_plan(cfg: SharedFields, view: DataView) -> Plan:
    """Local epochs that feed every sample of a client once, its labeled set r times
    (`labeled_repeats_of`), in batches of `batch_size` whose labeled share is the client's pooled
    share r·n_l / (r·n_l + n_u) (rounded half up, at least one sample of each kind): an epoch walks
    the unlabeled set once and cycles the labeled set.

    Reading: the FedSiam authors shuffle the r-times-repeated labeled set with the
    unlabeled set and cut batches of 10 (Update.py: get_train_idxs, LocalUpdate), so a batch's
    labeled count varies around that share and an epoch sees every sample. A fixed count per batch
    keeps the expectation and the walk over every sample, and keeps every client of a cohort step at
    the same batch shape (learning/cohort.py groups clients by it). The alternative, a fixed quarter of every
    batch labeled, walks a Non-IID-III rich client's 330 labels only a third of the way each epoch.

    A party without unlabeled data walks its labeled set; one without labels walks its unlabeled set."""
    if view.num_unlabeled == 0:
        return Plan(epochs=cfg.local_epochs * labeled_repeats_of(cfg, view), labeled_batch=cfg.batch_size)
    if view.num_labeled == 0:
        return Plan(epochs=cfg.local_epochs, labeled_batch=0, unlabeled_batch=cfg.batch_size, epoch_over="unlabeled")
    pooled = labeled_repeats_of(cfg, view) * view.num_labeled
    share = pooled / (pooled + view.num_unlabeled)
    labeled = min(cfg.batch_size - 1, max(1, math.floor(share * cfg.batch_size + 0.5)))
    return Plan(epochs=cfg.local_epochs, labeled_batch=labeled, unlabeled_batch=cfg.batch_size - labeled,
                epoch_over="unlabeled")


def clone(tensors: Tensors) -> Tensors:
    return {k: v.detach().clone() for k, v in tensors.items()}
