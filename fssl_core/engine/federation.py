"""The round loop every method runs through.

Per round: (server-side training), sample clients, send each the algorithm's download payload,
train locally through the algorithm's loss, receive its upload payload, aggregate, evaluate.
Bytes are counted from the tensors that cross the network, in both directions. All randomness
is derived from (seed, round, party), so a round can be replayed from a checkpoint exactly.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..algorithms import ALGORITHMS
from ..algorithms.base import Algorithm, Context, Payload, State, Upload
from ..learning.batches import DataView, Plan, TrainImages
from ..config import AUTO
from ..run_config import RunConfig
from ..data.augment import augment_spec_for
from ..data.datasets import ImageData, load_dataset, resplit
from ..data.partition import PARTITIONS, Partition, build_partition
from ..models import MODELS, build_model, count_parameters
from . import gpu_defaults
from ..learning import precision
from ..learning.cohort import stack_nets, train_cohort, unstack_nets
from ..learning.training import Nets, Tensors, train_party

SERVER = -1   # party id of the server in seeds and logs


def derived_seed(*parts: int) -> int:
    """A 63-bit seed from integers, stable across processes and platforms."""
    digest = hashlib.sha256(",".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def partition_fields(cfg: RunConfig) -> dict[str, Any]:
    """build_partition's optional arguments for `cfg`: only the fields its partition reads; at the server, a
    count (`server_labeled` > 0) takes the place of the ratio γ."""
    fields = {name: getattr(cfg, name) for name in PARTITIONS[cfg.partition].reads}
    if "server_labeled" in fields:
        if cfg.server_labeled > 0:
            fields["labeled_ratio"] = None
        else:
            fields["server_labeled"] = None
    return fields


def payload_bytes(payload: Any) -> int:
    """Bytes of every tensor in a (nested) payload, as they would be serialised."""
    if isinstance(payload, Tensor):
        return payload.numel() * payload.element_size()
    if isinstance(payload, dict):
        return sum(payload_bytes(v) for v in payload.values())
    if isinstance(payload, (list, tuple)):
        return sum(payload_bytes(v) for v in payload)
    return 0


class DeviceUnavailable(RuntimeError):
    """The config's device is not on this machine. Checked when a run is built, not by RunConfig,
    so that a config stays constructible (and its run id computable) anywhere."""


def resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailable("RunConfig.device='cuda': no CUDA device is available here "
                                "(torch.cuda.is_available() is False); use device='cpu'")
    return torch.device(name)


def trains_as_cohort(cfg: RunConfig, device: torch.device | None = None) -> bool:
    """Whether `cfg` trains a round's clients as one cohort, on `device` (default: the config's own).

    'auto' picks the faster trainer, as measured by `python -m fssl_core bench`: on CPU the cohort
    for a network with a grouped formulation (MNIST CNN: 2.3× the sequential trainer for FedAvg,
    2.2× for FedSiam-D; the authors' MNIST CNN, with its dropout), else the sequential trainer
    (FedSiam's CIFAR CNN: the vmapped cohort ran 0.67× its speed); on CUDA what the GPU's committed
    bench rows say (gpu_defaults.cohort; a GPU never measured gets the cohort, as a fallback).
    Cohort and sequential results agree to float tolerance (tests/test_cohort.py), not bit for bit.
    A function of the config and the device alone (the network's class, no data): the Flower app asks it
    before it builds anything (integrations/flower.py)."""
    if cfg.trainer != AUTO:
        return cfg.trainer == "cohort"      # 'cohort' only for an algorithm that supports it (RunConfig)
    if not ALGORITHMS[cfg.algorithm].cohort:
        return False
    device = resolve_device(cfg.device) if device is None else device
    if device.type == "cuda":
        return gpu_defaults.cohort(torch.cuda.get_device_name(device))[0]
    return MODELS[cfg.model].network.grouped_op is not None


@dataclass(eq=False)
class Federation:
    """Everything a run needs, built once from its config."""
    cfg: RunConfig
    data: ImageData
    images: TrainImages
    partition: Partition
    algorithm: Algorithm
    ctx: Context
    param_names: frozenset[str]
    _labeled: list[Tensor]
    _unlabeled_parts: list[list[Tensor]]
    server_view: DataView
    _sampled: dict[int, list[int]] = field(default_factory=dict, init=False, repr=False)   # round -> clients
    _test_inputs: Tensor | None = field(default=None, init=False, repr=False)     # the test set, normalised

    @classmethod
    def build(cls, cfg: RunConfig) -> "Federation":
        device = resolve_device(cfg.device)
        precision.apply(cfg.precision, device)
        data = load_dataset(cfg.dataset, device=device)
        if cfg.resplit_train:
            data = resplit(data, cfg.resplit_train, cfg.resplit_test, cfg.seed)
        partition = cls.partition_of(cfg, data)
        if cfg.input_scale == "unit":      # pixels ÷ 255 alone: normalize() becomes (x − 0) / 1, x itself
            data = replace(data, mean=(0.0,) * data.in_channels, std=(1.0,) * data.in_channels)
        torch.manual_seed(derived_seed(cfg.seed if cfg.init_seed < 0 else cfg.init_seed, 0))   # model initialisation
        model = build_model(cfg.model, num_classes=data.num_classes, in_channels=data.in_channels,
                            projection_dim=cfg.projection_dim or None).to(device)
        if cfg.initial_scale != 1.0:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.mul_(cfg.initial_scale)

        def on_device(idx: np.ndarray) -> Tensor:
            return torch.as_tensor(np.asarray(idx, dtype=np.int64), device=device)

        images = TrainImages(data.train_x, data.train_y, data.normalize, augment_spec_for(cfg.dataset, cfg.weak_augment))
        server_view = DataView(on_device(partition.server_labeled), on_device(np.empty(0, np.int64)))
        ctx = Context(model=model, num_classes=data.num_classes, device=device, images=images,
                      server_view=server_view)
        algorithm = ALGORITHMS[cfg.algorithm](cfg, ctx)
        parts = partition.stream_parts
        return cls(
            cfg=cfg, data=data, partition=partition, algorithm=algorithm, ctx=ctx, images=images,
            param_names=frozenset(name for name, _ in model.named_parameters()),
            _labeled=[on_device(c.labeled) for c in partition.clients],
            _unlabeled_parts=[[on_device(partition.unlabeled_in_round(k, r)) for r in range(parts)]
                              for k in range(len(partition.clients))],
            server_view=server_view,
        )

    @staticmethod
    def partition_of(cfg: RunConfig, data: ImageData) -> Partition:
        """The config's partition, built with the arguments `partition_fields` gives."""
        return build_partition(cfg.partition, data.train_y.cpu().numpy(), num_classes=data.num_classes,
                               num_clients=cfg.clients, seed=cfg.seed, **partition_fields(cfg))

    @property
    def cohort(self) -> bool:
        """Whether this run trains a round's clients as one cohort (RunConfig.trainer; `trains_as_cohort`)."""
        return trains_as_cohort(self.cfg, self.ctx.device)

    # --- state ----------------------------------------------------------------------------------
    def initial_state(self) -> State:
        tensors = {k: v.detach().clone() for k, v in self.ctx.model.state_dict().items()}
        return self.algorithm.init_state(tensors)

    @property
    def model_parameters(self) -> int:
        return count_parameters(self.ctx.model)

    # what the run store reads of a federation, so that it does not reach into the algorithms' Context
    @property
    def device(self) -> torch.device:
        return self.ctx.device

    @property
    def num_classes(self) -> int:
        return self.ctx.num_classes

    def client_view(self, client: int, round: int) -> DataView:
        parts = self._unlabeled_parts[client]
        return DataView(self._labeled[client], parts[(round - 1) % len(parts)])

    def sample_clients(self, round: int) -> list[int]:
        """The clients of `round`, a pure function of (seed, round); memoised, since FedFreq's
        counts replay every earlier round's sampling each round."""
        if round not in self._sampled:
            rng = np.random.default_rng(derived_seed(self.cfg.seed, round, SERVER))
            chosen = rng.choice(self.cfg.clients, size=self.cfg.clients_per_round, replace=False)
            self._sampled[round] = sorted(int(k) for k in chosen)
        return list(self._sampled[round])

    def participations(self, round: int) -> np.ndarray:
        """Times each client has been selected in rounds 1..`round` (FedFreq's q, Eq. 10), replayed
        from the seeded sampling so it needs no state of its own."""
        counts = np.zeros(self.cfg.clients, dtype=np.int64)
        for r in range(1, round + 1):
            counts[self.sample_clients(r)] += 1
        return counts

    def generator(self, round: int, party: int, *parts: int) -> torch.Generator:
        """The party's stream for the round: a CPU generator on every device. Every draw is made on it
        and moved to the run's device, so CPU and CUDA, cohort and sequential draw the same numbers."""
        return torch.Generator().manual_seed(derived_seed(self.cfg.seed, round, party, *parts))

    # --- one round ------------------------------------------------------------------------------
    def run_round(self, state: State, round: int) -> tuple[State, dict[str, Any]]:
        """One round: the server's hooks before it, the sampled clients' downloads, local trainings
        (as one cohort or one after another) and uploads, then aggregation, the server's hooks after
        it, and the round's metrics. Flower's adapter (integrations/flower) runs the same steps, with
        `train_client` in the ClientApp."""
        return run_rounds_together([self], [state], round)[0]

    def begin_round(self, state: State, round: int) -> "_Round":
        """The round up to its local trainings: the server's hooks, the sampled clients and their downloads."""
        self.server_begin(state, round)
        clients = self.sample_clients(round)
        payloads = [self.algorithm.download(state, round, client) for client in clients]
        participations = self.participations(round)
        return _Round(clients, payloads, [int(participations[client]) for client in clients])

    def can_batch_with(self, other: "Federation") -> bool:
        """Whether `other`'s clients can train in one cohort with this run's: both train as a cohort, on
        the same image tensors, with the same algorithm (trainer.batch_key makes sure of the settings its
        loss, trained roles and optimiser read, before any run is built)."""
        return (self.cohort and other.cohort and other.images.x is self.images.x
                and type(other.algorithm) is type(self.algorithm) and other.param_names == self.param_names)

    def _server_trainer(self, hook_round: int, stage: int = 0):
        algo = self.algorithm

        def train(nets: Nets, trainable, loss_fn, plan: Plan, lr: float | None = None, part: int = 0,
                  params: frozenset[str] | None = None, momentum: dict | None = None) -> dict:
            """`lr`: this training's own learning rate (e.g. pre-training's); `part` tells apart
            the random streams of several trainings in one hook (e.g. a CE and an L_c epoch);
            `params`: the network's parameters it trains (default: all); `momentum`: the optimiser's
            velocity kept by the algorithm across trainings (train_party)."""
            # every server training its own stream, apart from the round's client sampling,
            # which draws from (seed, round, SERVER)
            generator = self.generator(hook_round, SERVER, stage, part)
            return train_party(nets, trainable, self.param_names if params is None else params, loss_fn,
                               self.images, self.server_view, plan, algo.server_sgd(hook_round, lr), generator,
                               hook_round, participation=max(hook_round, 1), momentum=momentum)
        return train

    def server_begin(self, state: State, round: int) -> None:
        """The server's hooks before the round's clients (round 0's once, before the first round: e.g.
        FedAnchor's pre-training)."""
        if round == 1:
            self.algorithm.server_update(state, 0, self._server_trainer(0))
        self.algorithm.server_update(state, round, self._server_trainer(round))

    def train_client(self, round: int, client: int, payload: Payload, participation: int) -> Upload:
        """Client `client`'s part of `round`, alone: from the payload it downloaded to its upload, on its
        own stream (seed, round, client). `participation`: the rounds it has been selected in, this one
        included."""
        algo, view = self.algorithm, self.client_view(client, round)
        nets = algo.client_init(payload, view)
        walk = algo.local_view(nets, view)
        stats = train_party(nets, algo.trainable, self.param_names, algo.loss, self.images, walk,
                            algo.plan(walk, round), algo.client_sgd(round), self.generator(round, client), round,
                            after_step=algo.after_step, participation=participation)
        return Upload(client, algo.upload(nets, view, round), view.num_labeled, view.num_unlabeled, stats,
                      participation)

    def server_end(self, state: State, round: int, uploads: list[Upload], download_bytes: int
                   ) -> tuple[State, dict[str, Any]]:
        """Aggregation of the round's uploads, the server's hooks after it, and the round's metrics
        (the traffic counted by payload_bytes; the test set evaluated every `eval_every` rounds)."""
        algo = self.algorithm
        state = algo.aggregate(state, uploads, round)
        algo.server_finish(state, round, self._server_trainer(round, stage=1))
        metrics: dict[str, Any] = {"round": round}
        metrics.update(_mean_stats([u.stats for u in uploads]))
        metrics.update(algo.round_metrics(state))
        metrics["upload_bytes"] = sum(payload_bytes(u.payload) for u in uploads)
        metrics["download_bytes"] = download_bytes
        if round % self.cfg.eval_every == 0 or round == self.cfg.rounds:
            metrics.update(self.test_metrics(algo.eval_tensors(state)))
            for name, tensors in algo.eval_parts(state).items():
                metrics[f"accuracy_{name}"] = self.test_metrics(tensors)["accuracy"]
        return state, metrics

    def evaluate(self, tensors: Tensors) -> float:
        """Test accuracy in %, the network in eval mode."""
        return self.test_metrics(tensors)["accuracy"]

    @torch.no_grad()
    def test_metrics(self, tensors: Tensors) -> dict[str, float]:
        """Test accuracy in % and the mean cross-entropy over the test set (`test_loss`), the network
        in eval mode. The loss is logged only so that the report can show the accuracy the FedSiam
        authors report, that of the round with the lowest test loss (report.METRICS); nothing here
        selects a model."""
        correct = torch.zeros((), dtype=torch.long, device=self.ctx.device)
        loss = torch.zeros((), dtype=torch.float64, device=self.ctx.device)
        if self._test_inputs is None:      # normalised once, not per batch of every evaluation: the same floats
            self._test_inputs = self.data.normalize(self.data.test_x)
        x, y, size = self._test_inputs, self.data.test_y, self.cfg.eval_batch_size
        for i in range(0, len(y), size):
            logits = self.ctx.apply(tensors, x[i:i + size], train=False)
            target = y[i:i + size]
            correct += (logits.argmax(1) == target).sum()
            loss += torch.nn.functional.cross_entropy(logits.float(), target, reduction="sum").double()
        return {"accuracy": 100.0 * int(correct) / len(y), "test_loss": float(loss) / len(y)}


@dataclass
class _Round:
    """A run's round between its downloads and its uploads."""
    clients: list[int]
    payloads: list[Payload]
    clocks: list[int]            # each client's participations, this round included (FedFreq's q)


def run_rounds_together(feds: list[Federation], states: list[State], round: int
                        ) -> list[tuple[State, dict[str, Any]]]:
    """Round `round` of several runs at once: each run's server steps on its own, and the local trainings
    of every run that trains as a cohort stacked into one cohort (their clients side by side, each run's in groups
    of its own, learning/cohort.run_groups, each client on its own streams), so a batch of small runs takes its
    steps in lockstep. One run alone is `run_round`.
    Each run's `seconds` is the wall time of the whole round (of the batch, for a batch)."""
    start = time.perf_counter()
    rounds = [fed.begin_round(state, round) for fed, state in zip(feds, states)]
    uploads: dict[int, list[Upload]] = {}
    stacked = [i for i, (fed, r) in enumerate(zip(feds, rounds)) if fed.cohort and r.clients]
    if stacked:
        lead = feds[stacked[0]]
        if not all(lead.can_batch_with(feds[i]) for i in stacked):
            raise ValueError("run_rounds_together: runs that cannot train as one cohort "
                             f"({', '.join(sorted({feds[i].cfg.algorithm for i in stacked}))}; trainer.batch_key)")
        for i, ups in zip(stacked, _train_cohort([feds[i] for i in stacked], [rounds[i] for i in stacked], round)):
            uploads[i] = ups
    for i, (fed, r) in enumerate(zip(feds, rounds)):
        if i not in uploads:
            uploads[i] = [fed.train_client(round, client, payload, clock)
                          for client, payload, clock in zip(r.clients, r.payloads, r.clocks)]
    out = [fed.server_end(state, round, uploads[i], sum(payload_bytes(p) for p in r.payloads))
           for i, (fed, state, r) in enumerate(zip(feds, states, rounds))]
    seconds = time.perf_counter() - start
    for _, metrics in out:
        metrics["seconds"] = seconds
    return out


def _train_cohort(feds: list[Federation], rounds: list[_Round], round: int) -> list[list[Upload]]:
    """The clients of every run's round trained as one cohort: the same steps as `train_client` for each,
    to float tolerance (tests/test_cohort.py, tests/test_trainer.py). Each run prepares and receives its
    own clients through its own algorithm; the loss, trained roles, images and optimiser are the first
    run's, which `can_batch_with` makes the same for all."""
    lead = feds[0]
    algo = lead.algorithm
    per_run = []
    for fed, r in zip(feds, rounds):
        views = [fed.client_view(client, round) for client in r.clients]
        inits = [fed.algorithm.client_init(payload, view) for payload, view in zip(r.payloads, views)]
        walks = [fed.algorithm.local_view(nets, view) for nets, view in zip(inits, views)]
        plans = [fed.algorithm.plan(walk, round) for walk in walks]
        generators = [fed.generator(round, client) for client in r.clients]
        per_run.append((views, inits, walks, plans, generators))
    inits = [nets for run in per_run for nets in run[1]]
    stacked = stack_nets(inits)
    all_stats = train_cohort(stacked, algo.trainable, lead.param_names, algo.loss, lead.images,
                             [w for run in per_run for w in run[2]], [p for run in per_run for p in run[3]],
                             lead.algorithm.client_sgd(round), [g for run in per_run for g in run[4]], round,
                             after_step=algo.after_step, participations=[c for r in rounds for c in r.clocks],
                             owners=[i for i, r in enumerate(rounds) for _ in r.clocks])
    trained = iter(zip(unstack_nets(stacked, len(inits)), all_stats))
    out = []
    for fed, r, (views, *_) in zip(feds, rounds, per_run):
        ups = []
        for client, view, clock in zip(r.clients, views, r.clocks):
            nets, stats = next(trained)
            ups.append(Upload(client, fed.algorithm.upload(nets, view, round), view.num_labeled, view.num_unlabeled,
                              stats, clock))
        out.append(ups)
    return out


def _mean_stats(per_client: list[dict[str, float]]) -> dict[str, float]:
    """Mean over the clients that reported each statistic, as `train_<name>`."""
    names = {name for stats in per_client for name in stats}
    return {f"train_{n}": float(np.mean([s[n] for s in per_client if n in s])) for n in sorted(names)}
