"""Grouped formulations of the small CNNs, for the cohort trainer (cohort.py).

The cohort trainer calls a network under `torch.func.vmap` with every parameter stacked over the
round's clients. vmap's own rules already turn a convolution over ten clients' weights into one
grouped convolution, but in the default (NCHW) layout, and on this CPU that runs at the speed of
the sequential trainer. Written out by hand — clients as convolution groups in `channels_last`,
linear layers as batched matmuls (`baddbmm`) — the cohort round ran 2.3× (FedAvg) and 2.2×
(FedSiam-D) faster than the sequential trainer (MNIST CNN, 10 clients × batch 10, 1 CPU thread;
`python -m fssl_core bench`, the README's table).

A network opts in by giving its feature extractor as a function of the stacked tensors
(`grouped_features(*params, x, training=...)`: every parameter [C, ...], x [C, B, ...] → [C, B,
features]; `training` is the module's mode, for the networks with dropout), registered here as a
custom op whose vmap rule calls it. The op is used only while `grouped()` is
active (the cohort trainer's vmapped loss); autograd runs outside vmap, over the ops the rule
issues, so the op needs no backward of its own. Outside a cohort, networks run their plain
`features`, and the two are pinned equal by tests/test_cohort.py.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable

import torch
from torch import Tensor

_active = False


@contextmanager
def grouped():
    """Networks with a grouped formulation use it inside this block (a vmapped cohort step)."""
    global _active
    previous, _active = _active, True
    try:
        yield
    finally:
        _active = previous


def active() -> bool:
    return _active


def register(name: str, grouped_features: Callable[..., Tensor], feature_dim: int):
    """A custom op `fssl::<name>(params, x)` computing one client's features; under vmap its rule
    runs `grouped_features` once over all clients."""

    @torch.library.custom_op(f"fssl::{name}", mutates_args=())
    def op(params: list[Tensor], x: Tensor, training: bool) -> Tensor:      # one client, outside vmap
        return grouped_features(*[p.unsqueeze(0) for p in params], x.unsqueeze(0), training=training).squeeze(0)

    @op.register_fake
    def _(params, x, training):
        return x.new_empty(x.shape[0], feature_dim)

    def vmap_rule(info, in_dims, params, x, training):
        param_dims, x_dim, _ = in_dims

        def stacked(t: Tensor, dim: int | None) -> Tensor:   # an unbatched tensor is shared by all clients
            return t.movedim(dim, 0) if dim is not None else t.expand(info.batch_size, *t.shape)

        return grouped_features(*[stacked(p, d) for p, d in zip(params, param_dims)], stacked(x, x_dim),
                                training=training), 0

    op.register_vmap(vmap_rule)
    return op


def conv2d(x: Tensor, weight: Tensor, bias: Tensor, clients: int, **kwargs) -> Tensor:
    """A convolution per client: x [B, C·c_in, H, W] (channels_last), weight [C, c_out, c_in, k, k]."""
    return torch.nn.functional.conv2d(x, weight.flatten(0, 1), bias.flatten(), groups=clients, **kwargs)


def to_groups(x: Tensor) -> Tensor:
    """[C, B, c, H, W] → [B, C·c, H, W] in channels_last: clients side by side as channel groups."""
    clients, batch = x.shape[:2]
    return x.transpose(0, 1).reshape(batch, clients * x.shape[2], *x.shape[3:]).contiguous(
        memory_format=torch.channels_last)


def from_groups(x: Tensor, clients: int) -> Tensor:
    """[B, C·c, H, W] → [C, B, c·H·W]: each client's flattened maps, ready for a batched matmul."""
    return x.reshape(x.shape[0], clients, -1).transpose(0, 1)


def linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """A linear layer per client: x [C, B, in], weight [C, out, in], bias [C, out]."""
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


def channel_groups(masks: Tensor) -> Tensor:
    """Per-client Dropout2d masks [C, B, c, 1, 1] → [B, C·c, 1, 1], the layout of `conv2d`'s output."""
    return masks.transpose(0, 1).flatten(1, 2)
