"""One round of each trainer that `bench` times: the papers' DataLoader loops and the engine's two
trainers, each as a callable `run(r)` that trains round r, whole or only its first `steps` steps.

A round cut short returns (steps run, steps in the round) so that its seconds (or FLOPs) can be scaled
to the round: on CUDA a whole round of the papers' loop is not affordable (perf/bench.py's docstring).
The engine's round is cut by counting its algorithm's loss calls (one a client step for the sequential
trainer, one a cohort step for the cohort): the engine is not changed for a measurement.
"""
from __future__ import annotations

import copy
import time
from typing import Callable

import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset, Subset

from ..algorithms.base import labeled_repeats_of, mixed_plan
from ..data.datasets import data_root
from ..run_config import RunConfig
from ..engine.federation import Federation


# What a trainer's round returns when it ran only its first steps: (steps run, steps in the round)
Prefix = tuple[int, int]


class _StepsSpent(Exception):
    """Raised by the counting loss once a round's timed steps are run: the round stops there."""


def _spent(done: int, steps: int | None, began: float, seconds: float | None) -> bool:
    """Whether a round timed over its first steps stops here: after `steps` steps, or once `seconds`
    have passed since it began (a bound on the time however slow a step turns out), whichever first;
    never before its first step."""
    return (steps is not None and done >= steps) or (seconds is not None and done > 0
                                                      and time.perf_counter() - began > seconds)


def round_steps(fed: Federation, r: int, cohort: bool = False) -> int:
    """The SGD steps of round r: over its clients, summed (the loop, the sequential trainer), or the
    longest client's (the cohort steps them together)."""
    steps = [fed.algorithm.plan(fed.client_view(c, r), r).steps(fed.client_view(c, r)) for c in fed.sample_clients(r)]
    return max(steps, default=0) if cohort else sum(steps)


def engine_rounds(cfg: RunConfig, steps: int | None = None, seconds: float | None = None
                  ) -> Callable[[int], Prefix | None]:
    """Round r of the engine (its trainer as cfg.trainer says); with `steps` or `seconds`, only its
    first steps (_spent): the algorithm's loss counts its calls (one a client step, one a cohort step)
    and stops the round at the next, and the server state stays the last whole round's."""
    fed = Federation.build(cfg)
    state = fed.initial_state()
    calls, began = 0, 0.0
    whole = steps is None and seconds is None
    if not whole:
        loss = fed.algorithm.loss

        def counted(*args, **kwargs):
            nonlocal calls
            if _spent(calls, steps, began, seconds):
                raise _StepsSpent
            calls += 1
            return loss(*args, **kwargs)
        fed.algorithm.loss = counted      # run_round reads algo.loss each round

    def run(r: int) -> Prefix | None:
        nonlocal state, calls, began
        if whole:
            state, _ = fed.run_round(state, r)
            return None
        calls, began = 0, time.perf_counter()
        try:
            state, _ = fed.run_round(state, r)
        except _StepsSpent:
            pass
        return calls, round_steps(fed, r, cohort=fed.cohort)
    return run


def loop_rounds(cfg: RunConfig, steps: int | None = None, seconds: float | None = None
                ) -> Callable[[int], Prefix | None]:
    """Round r of FedAvg as the papers' code writes it, on the same clients' labeled samples, each
    epoch over them `labeled_repeats` times as the engine's (FedSiam's authors: get_train_idxs);
    with `steps` or `seconds`, only its first client steps (_spent; no average: the model stays the
    last whole round's)."""
    fed = Federation.build(cfg)
    data, device = fed.data, fed.ctx.device

    if cfg.dataset == "mnist":       # the papers' own: torchvision's MNIST, PIL images, ToTensor + Normalize
        dataset = torchvision.datasets.MNIST(str(data_root()), train=True, download=False,
                                             transform=T.Compose([T.ToTensor(), T.Normalize(data.mean, data.std)]))
    else:                            # synthetic images: a tensor dataset with the same per-sample Normalize
        class PerSample(Dataset):
            def __init__(self):
                self.x, self.y = data.train_x.cpu(), data.train_y.cpu()
                self.transform = T.Normalize(data.mean, data.std)

            def __len__(self):
                return len(self.y)

            def __getitem__(self, i):
                return self.transform(self.x[i]), int(self.y[i])
        dataset = PerSample()
    model = copy.deepcopy(fed.ctx.model)

    def run(r: int) -> Prefix | None:
        states, done, began = [], 0, time.perf_counter()
        for client in fed.sample_clients(r):
            local = copy.deepcopy(model)
            opt = torch.optim.SGD(local.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
            # the authors' get_train_idxs: the labeled indices repeated r times, one shuffled loader
            repeats = labeled_repeats_of(cfg, fed.client_view(client, r))
            loader = DataLoader(Subset(dataset, fed.partition.clients[client].labeled.tolist() * repeats),
                                batch_size=cfg.batch_size, shuffle=True)
            local.train()
            for _ in range(cfg.local_epochs):
                for x, y in loader:
                    if _spent(done, steps, began, seconds):
                        return done, round_steps(fed, r)
                    x, y = x.to(device), y.to(device)
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(local(x), y).backward()
                    opt.step()
                    done += 1
            states.append(local.state_dict())
        model.load_state_dict(_average(states))
        return None if steps is None and seconds is None else (done, done)
    run.model = model       # type: ignore[attr-defined]  # the averaged model (bench_split evaluates it each round)
    return run


def loop_siamese_rounds(cfg: RunConfig, steps: int | None = None, seconds: float | None = None
                        ) -> Callable[[int], Prefix | None]:
    """Round r of FedSiam-D's local work as the authors' code writes it: per client a labeled and an unlabeled
    `DataLoader` whose per-sample transform returns two weakly augmented views, an online and a
    target model (deep copies), CE on the labeled samples plus the MSE between the two nets' softmax
    outputs, an EMA of the target after each step; the online models are averaged. With `steps` or
    `seconds`, as loop_rounds."""
    fed = Federation.build(cfg)
    data, device = fed.data, fed.ctx.device
    if cfg.dataset != "mnist":
        raise ValueError("loop_siamese_rounds: the papers' loop is written for MNIST here")
    weak = T.Compose([T.RandomCrop(28, padding=2), T.ToTensor(), T.Normalize(data.mean, data.std)])
    dataset = torchvision.datasets.MNIST(str(data_root()), train=True, download=False,
                                         transform=lambda img: (weak(img), weak(img)))
    online = copy.deepcopy(fed.ctx.model)

    def run(r: int) -> Prefix | None:
        states, done, began = [], 0, time.perf_counter()
        for client in fed.sample_clients(r):
            part = fed.partition.clients[client]
            labeled_per_batch = mixed_plan(cfg, fed.client_view(client, r)).labeled_batch    # fssl's share
            local, target = copy.deepcopy(online), copy.deepcopy(online)
            opt = torch.optim.SGD(local.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
            labeled = DataLoader(Subset(dataset, part.labeled.tolist()), batch_size=labeled_per_batch, shuffle=True)
            unlabeled = DataLoader(Subset(dataset, part.unlabeled.tolist()),
                                   batch_size=cfg.batch_size - labeled_per_batch, shuffle=True)
            for _ in range(cfg.local_epochs):
                labeled_iter = iter(labeled)
                for (u1, u2), _ in unlabeled:
                    if _spent(done, steps, began, seconds):
                        return done, round_steps(fed, r)
                    try:
                        (x1, x2), y = next(labeled_iter)
                    except StopIteration:
                        labeled_iter = iter(labeled)
                        (x1, x2), y = next(labeled_iter)
                    a = torch.cat([x1, u1]).to(device)
                    b = torch.cat([x2, u2]).to(device)
                    y = y.to(device)
                    logits = local(a)
                    with torch.no_grad():
                        other = target(b)
                    loss = (torch.nn.functional.cross_entropy(logits[:len(y)], y, reduction="sum") / len(a)
                            + (logits.softmax(1) - other.softmax(1)).pow(2).sum(1).mean())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    with torch.no_grad():
                        for pt, po in zip(target.parameters(), local.parameters()):
                            pt.mul_(cfg.ema_decay).add_(po, alpha=1 - cfg.ema_decay)
                    done += 1
            states.append(local.state_dict())
        online.load_state_dict(_average(states))
        return None if steps is None and seconds is None else (done, done)
    return run


def _average(states: list[dict]) -> dict:
    """FedAvg of state dicts (uniform), each tensor in its own dtype."""
    return {k: torch.stack([s[k].float() for s in states]).mean(0).to(states[0][k].dtype) for k in states[0]}




def scale(prefix: Prefix | None) -> float:
    """What a round's figure measured over `prefix` is multiplied by to be the whole round's."""
    return 1.0 if prefix is None or prefix[0] == 0 else prefix[1] / prefix[0]
