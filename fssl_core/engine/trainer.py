"""The trainer: owns the rounds of one run, or of a batch of runs trained in lockstep.

    train(cfg, store)            one run: read back if finished, else trained (resumed from its checkpoint)
    train_batch(cfgs, store)     several runs of one batch key in lockstep, each run's clients grouped apart

The store (fssl_core/store/) persists and proves: `RunStore.claim` hands the trainer a `RunRecorder`
under the run's lock, and the trainer reports every round to it. A run's records and identity are the
same whether it trained alone or in a batch; a batch only changes how fast its rounds go.

Batching rule (`batch_key`): runs train together when their configs agree on every field of the run
identity except the seed and the split (the partition and the fields partitions read: labeled ratio,
server labels, Dirichlet α, ...), and, for a re-split data set, the seed too (its images depend on it).
What train_cohort shares over its clients (the loss, the trained roles, the optimiser, the images) then
reads the same settings for every run; each run's clients form groups of their own (learning/cohort.run_groups),
and tests/test_trainer.py checks, per cohort algorithm, that each run of a batch equals its solo run bit for bit.
A run that does not train as a cohort (`Federation.cohort` false) is advanced in the same lockstep, its clients one
after another.

How many runs a batch holds is `batch_size`: a memory model over the stacked clients, and a cap.

A `Tracker` (integrations/mlflow_track.py: MLflow) follows each run as it trains; it is handed in, never
part of the config, and changes nothing a run computes.
"""
from __future__ import annotations

import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

import torch
from tqdm.auto import tqdm

from ..run_config import RunConfig
from ..data.datasets import shape_of
from ..data.partition import partition_parameters
from .federation import Federation, run_rounds_together
from ..store import DIVERGED, OK, RunStore
from ..store.run_store import RunRecorder, RunResult
from ..learning.training import Diverged
from .allocator import keep_freed_memory
from ..models import build_model, count_parameters

AfterRound = Callable[[RunConfig, int], None]


class Tracker(Protocol):
    """What follows runs while they train (an experiment tracker), called by the trainer at fixed points.
    `started`: the run's records are set to (re)start, `rows` the rounds recorded before this session,
    `since` the wall time (time.time()) this session of the run began; `round_finished`: round `round`
    is recorded with `row`; `finished`: result.json is written with `summary`; `stopped`: training ended
    without a result (`error`: a KeyboardInterrupt for an interrupt or SIGTERM, else what was raised),
    also for a run it never saw start. A tracker must not raise for its own failures, nor keep a round
    waiting on them (mlflow_track.py calls MLflow from a thread of its own): the run trains on."""

    def started(self, cfg: RunConfig, run_dir: Path, rows: list[dict], since: float) -> None: ...

    def round_finished(self, cfg: RunConfig, round: int, row: dict) -> None: ...

    def finished(self, cfg: RunConfig, run_dir: Path, summary: dict) -> None: ...

    def stopped(self, cfg: RunConfig, error: BaseException) -> None: ...

def split_fields() -> frozenset[str]:
    """The fields a batch's runs may differ in (besides the seed): the split, which each run draws for itself;
    asked of the partition registry as it stands."""
    return frozenset({"partition", *partition_parameters()})


# Trained alone on CUDA: there their cohort and sequential trainers differ beyond the cohort tolerance after
# two rounds (FedMix 5.9e-4, FedCon 3.9e-3; measurements/2026-11-26-h100-b), a difference not yet located
# (not the augmentation path, not rounding amplified by a threshold: both ruled out on the CPU), so a batch
# must not lean on their cohort there. On the CPU they batch: tests/test_trainer.py checks them.
SOLO_ON_CUDA = frozenset({"fedmix", "fedcon"})


def batch_key(cfg: RunConfig) -> tuple:
    """Runs with equal keys can train as one batch (the module's rule): the identity minus seed and split;
    the seed stays for a re-split data set, whose images are drawn from it. A run of SOLO_ON_CUDA on CUDA
    has a key of its own."""
    if cfg.device == "cuda" and cfg.algorithm in SOLO_ON_CUDA:
        return (("run_id", cfg.run_id),)
    free = split_fields() if cfg.resplit_train else split_fields() | {"seed"}
    return tuple(sorted((k, repr(v)) for k, v in cfg.to_dict().items() if k not in free))


def plan_batches(configs: Iterable[RunConfig], size: int) -> list[list[RunConfig]]:
    """`configs` (distinct) grouped by batch_key, in order of first appearance, each group cut into
    batches of at most `size` runs."""
    if size < 1:
        raise ValueError(f"plan_batches: size={size!r}: must be 1 or more")
    groups: dict[tuple, list[RunConfig]] = {}
    for cfg in configs:
        groups.setdefault(batch_key(cfg), []).append(cfg)
    return [group[i:i + size] for group in groups.values() for i in range(0, len(group), size)]


# --- how many runs a batch holds --------------------------------------------------------------------
# Memory model of one run in a batch: its round's clients' stacked tensors, each client holding every
# network role (a copy per role: online/target, student/teacher, helpers ...) plus, for the trained
# role, its gradient and momentum (4 copies of the parameters per client for FedSiam, FedMatch's helpers
# more: ROLE_COPIES = 6 bounds them), and the activations of one step: every layer's output for the batch's
# images, kept for backward, counted from the network itself (`network_size`: one image through it, the
# tensors autograd saves; tests/test_trainer.py checks the MNIST CNN's count by hand). Not yet checked against
# a GPU's peak memory: measurements/gpu-batches-prepared/ will.
ROLE_COPIES = 6
BATCH_CAP = 64           # the largest batch bench cases=runs_per_hour measures on a GPU
MEMORY_SHARE = 0.5       # of the device memory a batch may plan for (the rest: data, evaluation, allocator slack)


def run_bytes(cfg: RunConfig, parameters: int, activations: int) -> int:
    """Bytes one run adds to a batch (the memory model above): `parameters` of its network, `activations`
    its layers' output elements per input image. A FedSiam-like step sees up to 4 views of a labeled and an
    unlabeled batch."""
    weights = cfg.clients_per_round * ROLE_COPIES * parameters * 4
    return weights + cfg.clients_per_round * 4 * 2 * cfg.batch_size * activations * 4


def network_size(cfg: RunConfig) -> tuple[int, int]:
    """The parameters of `cfg`'s network and the elements its forward pass keeps for backward for one input
    image (autograd's saved tensors, the parameters themselves not counted), without loading data."""
    shape = shape_of(cfg.dataset)
    model = build_model(cfg.model, num_classes=shape.num_classes, in_channels=shape.channels,
                        projection_dim=cfg.projection_dim or None).train()
    weights = {p.data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in weights:
            saved[t.data_ptr()] = t.numel()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.zeros(1, shape.channels, shape.image_size, shape.image_size))
    return count_parameters(model), sum(saved.values())


def batch_size(cfg: RunConfig, parameters: int, activations: int, memory_bytes: int,
               cap: int = BATCH_CAP) -> int:
    """How many runs like `cfg` one batch holds: as many as MEMORY_SHARE of `memory_bytes` fits by
    `run_bytes`, at least 1, at most `cap`."""
    fits = int(MEMORY_SHARE * memory_bytes) // max(run_bytes(cfg, parameters, activations), 1)
    return max(1, min(cap, fits))


# --- training ---------------------------------------------------------------------------------------
def train(cfg: RunConfig, store: RunStore | None = None, progress: bool = True,
          after_round: Callable[[int], None] | None = None, tracker: Tracker | None = None) -> RunResult:
    """Read back the finished run of `cfg`, else train it (resuming from its checkpoint if any).

    `after_round(r)` is called once round r is recorded (tests use it to interrupt a run); `tracker`
    follows the run while it trains (a run read back is not tracked again)."""
    hook = None if after_round is None else (lambda _cfg, r: after_round(r))
    return train_batch([cfg], store, progress, hook, tracker)[0]


def train_batch(configs: list[RunConfig], store: RunStore | None = None, progress: bool = True,
                after_round: AfterRound | None = None, tracker: Tracker | None = None) -> list[RunResult]:
    """Read back the finished runs of `configs`, and train the others in lockstep: each round, the runs
    at that round take it together (run_rounds_together), each recording its own row and checkpoint and
    resuming on its own. The configs must share one batch_key. When a batched round diverges, each of its
    runs goes on alone from its last checkpoint (a fresh Federation: the round may have half-updated the
    old one), so the run that diverged ends with that status and harms none of the others.

    CPU runs use one thread: a float reduction split over a different number of threads sums in a
    different order, and a run must give the same numbers whichever executor ran it."""
    store = store or RunStore()
    configs = list(configs)
    keep_freed_memory()      # a step's tensors reuse the last step's pages instead of faulting fresh ones in
    if len({batch_key(c) for c in configs}) > 1:
        raise ValueError("train_batch: configs of several batch keys; group them with plan_batches")
    results: dict[str, RunResult] = {}
    with ExitStack() as held:
        recorders = []
        for cfg in sorted({c.run_id: c for c in configs}.values(), key=lambda c: c.run_id):   # lock order
            claimed = held.enter_context(store.claim(cfg))
            if isinstance(claimed, RunResult):
                results[cfg.run_id] = claimed
            else:
                recorders.append(claimed)
        if recorders:
            order = {c.run_id: i for i, c in reversed(list(enumerate(configs)))}
            recorders.sort(key=lambda rec: order[rec.cfg.run_id])      # train in the order given
            with single_thread_on_cpu(recorders[0].cfg):
                results.update(_train_claimed(recorders, progress, after_round, tracker))
    return [results[c.run_id] for c in configs]


@dataclass(eq=False)
class _Run:
    recorder: RunRecorder
    fed: Federation
    state: Any
    tracker: Tracker | None

    @classmethod
    def start(cls, recorder: RunRecorder, batch: int, tracker: Tracker | None) -> "_Run":
        since = time.time()
        fed = Federation.build(recorder.cfg)
        state = recorder.start(fed.device, fed.initial_state, fed.data.digest, batch)
        if tracker is not None:
            tracker.started(recorder.cfg, recorder.dir, list(recorder.rows), since)
        return cls(recorder, fed, state, tracker)

    @property
    def cfg(self) -> RunConfig:
        return self.recorder.cfg

    def finish(self, status: str = OK, failure: dict | None = None) -> RunResult:
        result = self.recorder.finish(status, failure, self.fed.model_parameters, self.fed.num_classes)
        if self.tracker is not None:
            self.tracker.finished(self.cfg, self.recorder.dir, result.summary)
        return result


def _train_claimed(recorders: list[RunRecorder], progress: bool, after_round: AfterRound | None,
                   tracker: Tracker | None = None) -> dict[str, RunResult]:
    results: dict[str, RunResult] = {}
    try:
        return _train_rounds(recorders, progress, after_round, tracker, results)
    except BaseException as err:
        if tracker is not None:
            for rec in recorders:
                if rec.cfg.run_id not in results:
                    tracker.stopped(rec.cfg, err)
        raise


def _train_rounds(recorders: list[RunRecorder], progress: bool, after_round: AfterRound | None,
                  tracker: Tracker | None, results: dict[str, RunResult]) -> dict[str, RunResult]:
    """The rounds of `recorders`' runs in lockstep (train_batch), each run's result put in `results` as it ends."""
    runs = [_Run.start(rec, len(recorders), tracker) for rec in recorders]
    bar = _progress([r.cfg for r in runs], sum(r.recorder.next_round - 1 for r in runs), progress)
    try:
        while True:
            waiting = [run for run in runs if run.recorder.next_round <= run.cfg.rounds]
            if not waiting:
                break
            r = min(run.recorder.next_round for run in waiting)
            group = [run for run in waiting if run.recorder.next_round == r]
            try:
                outcomes = run_rounds_together([run.fed for run in group], [run.state for run in group], r)
            except Diverged as err:
                if len(group) == 1:        # `state` may be half-updated: the last checkpoint stays the final one
                    run = group[0]
                    results[run.cfg.run_id] = run.finish(DIVERGED, {"round": r, "reason": str(err)})
                    runs.remove(run)
                else:     # which run it was is found by training each on apart, from its last checkpoint
                    for run in group:
                        runs.remove(run)
                        results.update(_train_claimed([run.recorder], False, after_round, tracker))
                continue
            for run, (state, row) in zip(group, outcomes):
                run.state = state
                run.recorder.record_round(r, state, row)
                if tracker is not None:
                    tracker.round_finished(run.cfg, r, row)
                if bar is not None:
                    bar.update(1)
                    if "accuracy" in row:
                        bar.set_postfix(acc=f"{row['accuracy']:.2f}")
                if after_round is not None:
                    after_round(run.cfg, r)
    finally:
        if bar is not None:
            bar.close()
    for run in runs:
        results[run.cfg.run_id] = run.finish()
    return results


@contextmanager
def single_thread_on_cpu(cfg: RunConfig) -> Iterator[None]:
    """One torch thread on the CPU while a run trains: how every run here computes (a replay of a run must
    run under it too: other thread counts reduce in another order, and the floats differ)."""
    threads = torch.get_num_threads()
    if cfg.device == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _progress(configs: list[RunConfig], done: int, enabled: bool):
    if not enabled:
        return None
    first = configs[0]
    what = f"{first.algorithm}/{first.dataset}" + (f" ×{len(configs)} runs" if len(configs) > 1 else "")
    return tqdm(total=sum(c.rounds for c in configs), initial=done, desc=what, unit="round", leave=False,
                file=sys.stderr)
