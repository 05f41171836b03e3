"""Grouped formulations of the small CNNs, for the cohort trainer (learning/cohort.py).

The cohort trainer calls a network under `torch.func.vmap` with every parameter stacked over the
round's clients. vmap's own rules already turn a convolution over ten clients' weights into one
grouped convolution, but in the default (NCHW) layout, and on this CPU that runs at the speed of
the sequential trainer. Written out by hand — clients as convolution groups in `channels_last`,
linear layers as batched matmuls (`baddbmm`) — the cohort round ran 2.3× (FedAvg) and 2.2×
(FedSiam-D) faster than the sequential trainer (MNIST CNN, 10 clients × batch 10, 1 CPU thread;
`python -m fssl_core bench`, the README's table).

A network opts in by giving its feature extractor as a function of the stacked tensors
(`grouped_features(*params, x, training=...)`: every parameter [C, ...], x [C, B, ...] → [C, B,
features]; `training` is the module's mode, for the networks with dropout), wrapped here by
`register` into a function that, called inside the vmapped loss, takes the stacked tensors out of
vmap, runs `grouped_features` once over all clients and hands its output back batched. It is used
only while `grouped()` is active (the cohort trainer's vmapped loss); autograd runs outside vmap,
over the ops `grouped_features` issues, so it needs no backward of its own. Outside a cohort,
networks run their plain `features`, and the two are pinned equal by tests/test_cohort.py.

Why not `torch.library.custom_op` with a vmap rule: the same
unwrap, call and wrap, but through torch's generic custom-op and autograd.Function machinery
(pytree flattening, identity-preserving output wrapping), which cost ~0.2 ms a call, about a
seventh of the MNIST CNN's grouped forward (10 clients × 10 images, one thread). Both run
`grouped_features` on the same tensors under the same dispatch-key guard, so the floats are the
same and no run identity changes (tests/test_cohort.py pins this wrapper against the plain network).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable

import torch

if TYPE_CHECKING:
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


def register(grouped_features: Callable[..., Tensor]) -> staticmethod:
    """`op(params, x, training)`, one client's features (a network's `grouped_op`): inside vmap it
    runs `grouped_features` once over all clients; outside vmap, or with nothing batched, on one."""
    # torch._C._functorch is private: no stability promise. A torch release that moves these fails here, as the
    # networks are defined, and so every run at start-up (tests/test_cohort.py pins the behaviour on the torch
    # installed); the fix is here. Read here, not at the top: a plan imports this module (algorithms.base) without
    # running torch (cli.defer_torch).
    functorch = torch._C._functorch
    maybe_current_level, unwrap_batched, add_batch_dim = (
        functorch.maybe_current_level, functorch._unwrap_batched, functorch._add_batch_dim)
    vmapped = torch._C.DispatchKeySet(torch._C.DispatchKey.FuncTorchBatched)

    def op(params: list[Tensor], x: Tensor, training: bool) -> Tensor:
        level = maybe_current_level()
        unwrapped = [unwrap_batched(t, level) for t in (*params, x)] if level is not None else []
        batched = [(t, dim) for t, dim in unwrapped if dim is not None]
        if not batched:
            return grouped_features(*[p.unsqueeze(0) for p in params], x.unsqueeze(0), training=training).squeeze(0)
        size = batched[0][0].shape[batched[0][1]]
        # an unbatched tensor is shared by all clients
        stacked = [t if dim == 0 else t.movedim(dim, 0) if dim is not None else t.expand(size, *t.shape)
                   for t, dim in unwrapped]
        with torch._C._ExcludeDispatchKeyGuard(vmapped):      # the ops below see plain tensors
            out = grouped_features(*stacked, training=training)
        return add_batch_dim(out, 0, level)

    return staticmethod(op)


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
