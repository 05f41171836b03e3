"""The cohort trainer: a round's selected clients trained together, the same updates as the
sequential trainer (`training.train_party`, the reference) up to float rounding.

Every network tensor is stacked along a leading client dimension. Each step, the clients whose
batches have the same shape run one `torch.func.vmap` of the algorithm's own loss (a convolution over
ten clients' weights becomes one grouped convolution, models/grouped.py); one autograd pass over the
summed losses gives each client its own gradient; SGD acts on the stacked tensors, per client.

Exactness, and how it is kept:
- Every draw of a client comes from its own (seed, round, client) stream, in the order the sequential
  trainer makes it, but each draw is made for all the clients of a step at once, as tensors on the device
  (data/streams.py: each client's stream as words, a cursor each): the index streams of all clients
  (`CohortBatches`, the passes of `batches(...)`), then, inside the vmapped loss, a batch part's views
  (plain, weak, strong, an algorithm's own transform): every client's random choices from its own words
  in the order the loss asks for them, then one augmentation call per kind over every client's images
  (`Batch.views` asks for several at once, so FedSiam's four weak views are one call), stacked and picked
  by the vmapped client id. Dropout masks are drawn the same way (models/dropout.py).
- Clients with unequal sizes: at each step the active clients are grouped by (labeled batch,
  unlabeled batch, steps this round); a group smaller than the cohort gathers its clients' tensors
  and scatters the update back. A client that has finished takes no step. The stacked momentum starts
  at zero, and m·0 + d = d exactly.

An algorithm opts in with `cohort = True` when its loss and `after_step` are functions of tensors and
batch views only (its own augmentation a `batches.Transform`): no draws of its own from `part.generator`
(mixup partners, ...), no per-party tensors indexed by `part.pos`, no data-dependent Python control flow.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from torch import Tensor
# torch._C._functorch is private: no stability promise. A torch release that moves it fails this import,
# and so every run, at start-up (tests/test_cohort.py pins the behaviour on the torch installed); the fix is here.
from torch._C._functorch import _add_batch_dim, maybe_current_level
from torch.func import vmap

from .batches import Batch, CohortBatches, DataView, Plan, TrainImages, Transform, check_view_requests
from ..data.augment import SAMPLES_SECOND, apply_strong, apply_weak, concat_draws, draw_strong, draw_weak
from ..data.streams import CohortDraws, CohortStreams
from ..models.dropout import cohort_stream
from ..models.grouped import grouped
from .training import SGD, AfterStepFn, LossFn, Nets, Step, parameter_names, step_means


_KIND = {"plain": "plain", "weak": "weak", "weak2": "weak", "strong": "strong"}


def clients_as_samples(draws: dict[str, Tensor]) -> dict[str, Tensor]:
    """A group's draws ([clients, ...] each, CohortDraws) as one batch's: the clients' samples one after the
    other, as augment.concat_draws lays the clients' own draws."""
    return {k: v.movedim(0, 1).flatten(1, 2) if k in SAMPLES_SECOND else v.flatten(0, 1) for k, v in draws.items()}


class _CohortPart:
    """One part (labeled or unlabeled) of a group's step, as the vmapped loss sees it: the group's indices
    [clients, n] and its clients' draws, views computed for all clients at once and stacked, each client
    seeing its own row."""

    def __init__(self, images: TrainImages, idx: Tensor, draws: CohortDraws):
        self.images, self.idx, self.draws = images, idx, draws
        self._stacked: dict[str, Tensor] = {}

    def __len__(self) -> int:
        return int(self.idx.shape[1])

    def _picked(self, name: str) -> Tensor:
        """Each vmapped client's row of a stacked view: the stacked tensor handed into vmap as batched
        along its first dimension (the group's clients in vmap's order), no copy."""
        return _add_batch_dim(self._stacked[name], 0, maybe_current_level())

    def _view(self, name: str) -> Tensor:
        _make_views([(self, name)])
        return self._picked(name)

    def plain(self) -> Tensor:
        return self._view("plain")

    def weak(self) -> Tensor:
        return self._view("weak")

    def weak2(self) -> Tensor:
        return self._view("weak2")

    def strong(self) -> Tensor:
        return self._view("strong")

    def transformed(self, name: str, transform: Transform) -> Tensor:
        return self._picked(self._transform(name, transform))

    def _transform(self, name: str, transform: Transform) -> str:
        """Make the group's view of `transform` (each client's draws from its own stream, one application over
        all the group's images) once under `name`; its key."""
        key, spec = f"t:{name}", self.images.augment
        if key not in self._stacked:
            draws = clients_as_samples(transform.draw(len(self), self.draws, spec))
            x = self.images.normalize(transform.apply(self.images.x[self.idx.flatten()], draws, spec))
            self._stacked[key] = x.view(*self.idx.shape, *x.shape[1:])
        return key

    def _labels(self, name: str) -> Tensor:
        """The group's labels [clients, n] in one gather (what each part's `y` or `hidden_labels` reads)."""
        if name not in self._stacked:
            self._stacked[name] = self.images.y[self.idx]
        return self._picked(name)

    @property
    def y(self) -> Tensor:
        return self._labels("y")

    @property
    def hidden_labels(self) -> Tensor:
        return self._labels("hidden")

    @property
    def generator(self):
        raise RuntimeError("cohort trainer: an algorithm that draws its own randomness from a batch part's "
                           "generator cannot train as a cohort; set its `cohort = False`")

    @property
    def pos(self):
        raise RuntimeError("cohort trainer: per-party tensors indexed by `pos` are not supported; "
                           "set the algorithm's `cohort = False`")


class _CohortBatch(Batch):
    def views(self, *requests: tuple[str, str]) -> list[Tensor]:
        check_view_requests(requests)
        _make_views([(getattr(self, part), name) for part, name in requests])
        return [getattr(self, part)._picked(name) for part, name in requests]


def _make_views(requests: list[tuple[_CohortPart, str]]) -> None:
    """Make the requested views (plain, weak, weak2, strong) of a group's parts, for all its clients
    at once: each client's random choices are drawn from its own stream, request after request
    in the order given (as `BatchPart` would draw them asked one after the other), then every view
    of one kind is made in one call over all the group's images."""
    todo: list[tuple[_CohortPart, str]] = []
    for part, name in requests:
        if name not in part._stacked and (part, name) not in todo:
            todo.append((part, name))
    if not todo:
        return
    images = todo[0][0].images
    idx: dict[str, list[Tensor]] = {}
    draws: dict[str, list[dict[str, Tensor]]] = {}
    made: dict[str, list[tuple[_CohortPart, str]]] = {}
    for part, name in todo:
        kind = _KIND[name]
        if not len(part):          # nothing to draw (as BatchPart's: no sample, no draw)
            part._stacked[name] = images.normalize(images.x[:0]).unsqueeze(0).expand(len(part.draws), -1, -1, -1, -1)
            continue
        made.setdefault(kind, []).append((part, name))
        idx.setdefault(kind, []).append(part.idx.flatten())
        if kind == "weak":
            draws.setdefault(kind, []).append(clients_as_samples(
                draw_weak(len(part), images.x.shape[1], part.draws, images.augment)))
        elif kind == "strong":
            draws.setdefault(kind, []).append(clients_as_samples(
                draw_strong(len(part), images.x.shape[2:], part.draws, images.augment)))
    for kind, parts in made.items():
        x = images.x[torch.cat(idx[kind])]
        if kind == "weak":
            x = apply_weak(x, concat_draws(draws[kind]), images.augment)
        elif kind == "strong":
            x = apply_strong(x, concat_draws(draws[kind]), images.augment)
        x = images.normalize(x)
        start = 0
        for part, name in parts:      # rows: request by request, client by client
            rows = part.idx.numel()
            part._stacked[name] = x[start:start + rows].view(*part.idx.shape, *x.shape[1:])
            start += rows


def stack_nets(per_client: list[Nets]) -> Nets:
    return {role: {k: torch.stack([nets[role][k] for nets in per_client]) for k in per_client[0][role]}
            for role in per_client[0]}


def unstack_nets(nets: Nets, count: int) -> list[Nets]:
    return [{role: {k: v[c] for k, v in tensors.items()} for role, tensors in nets.items()} for c in range(count)]


def run_groups(active: list[int], shapes: list, owners: list[int]) -> dict[tuple, list[int]]:
    """The cohort's groups of one step: one run's clients of one batch shape (`shapes[c]`: labeled and unlabeled
    sizes, steps). Runs never share a group: the grouped kernels (models/grouped.py, a convolution with the
    clients as channel groups) block channels across client boundaries, so a client's floats moved in the last
    bits (1.5e-8 after two FedAvg rounds) with the partners stacked beside it; apart, each run computes exactly
    what it computes alone (tests/test_trainer.py, bitwise, every cohort algorithm). The lockstep still shares the
    rounds, the step loop and the data's batching. Key: (*shape, owner)."""
    groups: dict[tuple, list[int]] = {}
    for c in active:
        groups.setdefault((*shapes[c], owners[c]), []).append(c)
    return groups


def train_cohort(nets: Nets, trainable: tuple[str, ...], param_names: frozenset[str], loss_fn: LossFn,
                 images: TrainImages, views: list[DataView], plans: list[Plan], optimizer: SGD,
                 generators: list[torch.Generator], round: int,
                 after_step: AfterStepFn | None = None, participations: list[int] | None = None,
                 owners: list[int] | None = None) -> list[dict[str, float]]:
    """`train_party` for a cohort: `nets` stacked over the clients (in `views` order) are updated in
    place; returns each client's mean loss and statistics, as `train_party` would. `participations`:
    each client's Step.participation (default 1); `owners`: the run each client belongs to (default one run):
    each run's clients are grouped apart (run_groups), so a run's floats never depend on its partners."""
    if optimizer.clip_norm:   # clip_grad_norm_'s norm is one client's; on the stacked tensors it would be the cohort's
        raise ValueError(f"train_cohort: optimizer.clip_norm={optimizer.clip_norm!r}: a cohort trains without "
                         "clipping (an algorithm that clips trains its clients one by one)")
    count = len(views)
    device = images.x.device
    names = {role: parameter_names(nets[role], param_names) for role in trainable}
    keys = [(role, k) for role in trainable for k in names[role]]     # the trained tensors, in one order
    velocity = [torch.zeros_like(nets[role][k]) for role, k in keys] if optimizer.momentum else None
    steps = np.array([plan.steps(view) for plan, view in zip(plans, views)], np.int64)
    streams = CohortStreams(generators, device)
    walk = CohortBatches(views, plans, streams)
    # each statistic's running total over the steps, all clients in one tensor (a client's entry adds
    # its steps' values in order, as `accumulate` does per client); -0.0 + v = v for every float v,
    # so a total starting there equals one starting at the first value, bit for bit
    totals: dict[str, Tensor] = {}
    reported: dict[str, set[int]] = {}
    participations = participations or [1] * count
    owners = owners or [0] * count

    for i in range(int(steps.max(initial=0))):
        active = np.flatnonzero(steps > i)
        labeled, unlabeled = walk.next(active)
        shapes: list = [None] * count
        for c, n_l, n_u in zip(active.tolist(), labeled.tolist(), unlabeled.tolist()):
            shapes[c] = (n_l, n_u, int(steps[c]))
        groups = run_groups(active.tolist(), shapes, owners)
        for (_, _, local_steps, _), members in groups.items():
            # one clock for the group when its clients share it (the sequential trainer's int), else
            # a tensor: one value per client outside vmap, each client's own inside
            clocks = [participations[c] for c in members]
            shared = len(set(clocks)) == 1
            clock = torch.tensor(clocks, device=device)
            step = Step(round=round, local_step=i, local_steps=local_steps,
                        participation=clocks[0] if shared else clock)
            whole = len(members) == count
            draws = CohortDraws(streams, streams.rows(np.array(members, np.int64)))
            index = None if whole else draws.rows.tensor          # on the device once for each set of clients
            sub = nets if whole else {role: {k: v.index_select(0, index) for k, v in t.items()} for role, t in nets.items()}
            # the loss's arguments: trained tensors (leaves of autograd), the trained roles' buffers, other roles
            train_tensors = {role: {k: sub[role][k].requires_grad_() for k in names[role]} for role in trainable}
            buffers = {role: {k: v for k, v in sub[role].items() if k not in names[role]} for role in trainable}
            others = {role: t for role, t in sub.items() if role not in trainable}
            idx_l, idx_u = walk.indices(draws.rows)

            def per_client(train_c, buffers_c, others_c, ids, clock_c, step=step, shared=shared, draws=draws,
                           idx_l=idx_l, idx_u=idx_u):
                nets_c = {**others_c, **{role: {**buffers_c[role], **train_c[role]} for role in trainable}}
                step_c = step if shared else replace(step, participation=clock_c)
                with cohort_stream(draws, ids):
                    batch = _CohortBatch(_CohortPart(images, idx_l, draws), _CohortPart(images, idx_u, draws))
                    loss, stats = loss_fn(nets_c, batch, step_c)
                return loss, {k: v.detach() for k, v in stats.items()}

            ids = torch.arange(len(members), device=device)
            with grouped():
                losses, stats = vmap(per_client, randomness="same")(train_tensors, buffers, others, ids, clock)
            # clients' parameters are independent, so the gradient of the summed losses is, per
            # client, the gradient of its own loss: autograd runs once, outside vmap, over the
            # stacked (grouped) operations
            leaves = [train_tensors[r][k] for r, k in keys]
            grads = torch.autograd.grad(losses.sum(), leaves, allow_unused=True)
            grads = [torch.zeros_like(p) if g is None else g for p, g in zip(leaves, grads)]
            for t in leaves:
                t.requires_grad_(False)
            stats = {"loss": losses.detach(), **stats}
            vel = velocity if whole or velocity is None else [v.index_select(0, index) for v in velocity]
            vel = optimizer.step(leaves, grads, vel)
            if after_step is not None:
                after_step(sub, step)
            if not whole:
                with torch.no_grad():
                    for role, t in sub.items():
                        for k, v in t.items():
                            nets[role][k].index_copy_(0, index, v)
                    for v, updated in zip(velocity or [], vel or []):
                        v.index_copy_(0, index, updated)
            for name, value in stats.items():
                value = value.detach().float()
                total = totals.setdefault(name, torch.full((count,), -0.0, device=device))
                if whole:
                    total.add_(value)
                else:
                    total.index_add_(0, index, value)
                reported.setdefault(name, set()).update(members)
    streams.finish()
    return [step_means({name: total[c] for name, total in totals.items() if c in reported[name]}, int(steps[c]), round)
            for c in range(count)]
