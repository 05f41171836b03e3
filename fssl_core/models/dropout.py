"""Dropout whose masks come from the training party's own random stream.

`nn.Dropout` draws from torch's global generator, which breaks two promises of the engine: under
the cohort trainer's `vmap(randomness="same")` every client of a step would get one mask, and the
global generator is not in a checkpoint, so a resumed run would draw other masks than an
uninterrupted one. Here the trainers install the party's generator (the engine's (seed, round,
party) stream, which also draws its batches and augmentations) around each loss call:
`train_party` one generator, `train_cohort` its group's streams (data/streams.CohortDraws) and the vmapped
client id, and each client's mask is drawn from its own stream in the order the sequential trainer draws it.
So the cohort equals the sequential trainer, and a resumed run an uninterrupted one.

Outside a trainer (e.g. a train-mode pass an algorithm makes on its own) the global generator is
used, as `nn.Dropout` would.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

import torch
from torch import Tensor, nn

from ..data.streams import CohortDraws

_STREAM: contextvars.ContextVar = contextvars.ContextVar("party_stream", default=None)


class _Party:
    def __init__(self, generator: torch.Generator):
        self.generator = generator

    def keep(self, shape: torch.Size, keep_prob: float, like: Tensor) -> Tensor:
        # drawn on the party's CPU generator and moved: the same masks on every device
        return torch.bernoulli(torch.full(shape, keep_prob, dtype=like.dtype),
                               generator=self.generator).to(like.device)


class _Cohort:
    """Every client's mask drawn from its own stream, all at once, and picked by the vmapped id."""

    def __init__(self, draws: CohortDraws, ids: Tensor):
        self.draws, self.ids = draws, ids

    def all_masks(self, shape: torch.Size, keep_prob: float, like: Tensor) -> Tensor:
        """Every client's mask of one client's `shape`, stacked in the cohort's order."""
        return self.draws.bernoulli(tuple(shape), keep_prob, like.dtype).to(like.device)

    def keep(self, shape: torch.Size, keep_prob: float, like: Tensor) -> Tensor:
        return self.all_masks(shape, keep_prob, like).index_select(0, self.ids.unsqueeze(0)).squeeze(0)


@contextlib.contextmanager
def party_stream(generator: torch.Generator) -> Iterator[None]:
    """Dropout masks inside come from `generator` (one party's training)."""
    token = _STREAM.set(_Party(generator))
    try:
        yield
    finally:
        _STREAM.reset(token)


@contextlib.contextmanager
def cohort_stream(draws: CohortDraws, ids: Tensor) -> Iterator[None]:
    """Inside a vmapped loss over clients `ids`: each client's masks come from its own stream."""
    token = _STREAM.set(_Cohort(draws, ids))
    try:
        yield
    finally:
        _STREAM.reset(token)


def client_keep_masks(count: int, shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """Keep masks for a grouped formulation (models/grouped.py), which runs `count` clients' layers
    at once outside vmap: one client's `shape` per client, stacked [count, *shape], each drawn from
    that client's generator exactly as its PartyDropout would draw it in the same place (so the
    grouped cohort step equals the sequential trainer's)."""
    stream, keep_prob = _STREAM.get(), 1.0 - p
    if isinstance(stream, _Cohort):
        if len(stream.draws) != count:
            raise RuntimeError(f"client_keep_masks: count={count} clients, but the cohort stream holds "
                               f"{len(stream.draws)} clients' streams")
        return stream.all_masks(shape, keep_prob, like)
    if isinstance(stream, _Party):
        if count != 1:
            raise RuntimeError(f"client_keep_masks: count={count} clients under one party's stream; "
                               "a grouped formulation of several clients runs under cohort_stream")
        return stream.keep(shape, keep_prob, like).unsqueeze(0)
    # outside a trainer: the global generator, as nn.Dropout would use
    return torch.bernoulli(torch.full((count, *shape), keep_prob, dtype=like.dtype, device=like.device))


class PartyDropout(nn.Module):
    """nn.Dropout(p) with masks from the party's stream: x · m / (1 − p), m ~ Bernoulli(1 − p);
    `channels=True`: nn.Dropout2d(p), one draw per sample and channel of an [N, C, H, W] map."""

    def __init__(self, p: float, channels: bool = False):
        super().__init__()
        self.p, self.channels = p, channels

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        stream = _STREAM.get()
        if stream is None:
            return (nn.functional.dropout2d if self.channels else nn.functional.dropout)(x, self.p, training=True)
        shape = x.shape[:2] + (1,) * (x.dim() - 2) if self.channels else x.shape
        return x * stream.keep(shape, 1.0 - self.p, x) / (1.0 - self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"
