"""2×2 max-pooling computed in channels_last on the CPU: the same values and gradients, faster.

On the CPU, PyTorch's NCHW max-pool kernel is 2.5-4× slower than its channels_last one on these
networks' maps (forward over 1,000 MNIST maps [1000, 10, 24, 24]: 50 → 20 ms; [1000, 20, 8, 8]:
8.1 → 2.0 ms, one thread). Max-pooling picks values, it sums nothing, and both kernels pick the
first maximum of a window, so the outputs and the indices the backward scatters to are identical
(tests/test_models.py checks it on maps full of ties). The layout changes only inside the op: the
input arrives and the output and the input's gradient leave in NCHW, as from `F.max_pool2d`, so
the convolutions around it see what they saw before and compute the same floats. A run's numbers
do not change, hence no new run identity.

Where no gradient flows (evaluation, pseudo-labels, the target network) there are no indices to keep:
the maximum of the window's four strided views is faster again (one thread, a run's allocator settings:
[1024, 10, 24, 24] 14.5 → 3.1 ms, [1024, 20, 8, 8] 1.4 → 0.8 ms; measurements/2026-11-29-eval-share/pooling.py).
The values are the pool's. Of tied values it may keep another element than the pool, which matters
only for zeros of opposite signs: the result is a zero either way, and a zero's sign cannot move any
later value of these networks (a sum's nonzero terms fix it, relu and max keep zeros zero,
exp(±0) = 1), so the logits and every metric are the same to the bit (by construction;
tests/test_models.py checks it on maps full of ties).

Elsewhere (CUDA, channels_last inputs, vmapped calls) it is `F.max_pool2d(x, 2)`.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
# torch._C._functorch is private: no stability promise. A torch release that moves it fails this import,
# and so every run, at start-up (tests/test_cohort.py pins the behaviour on the torch installed); the fix is here.
from torch._C._functorch import is_batchedtensor

_CL = torch.channels_last
_SIZE = [2, 2]


class _MaxPool2x2ChannelsLast(torch.autograd.Function):
    @staticmethod
    def forward(x: Tensor):
        x_cl = x.contiguous(memory_format=_CL)
        y, indices = torch.ops.aten.max_pool2d_with_indices(x_cl, _SIZE, _SIZE)
        return y.contiguous(), x_cl, indices

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, x_cl, indices = output
        ctx.save_for_backward(x_cl, indices)
        ctx.mark_non_differentiable(x_cl, indices)

    @staticmethod
    def backward(ctx, grad, _x_cl_grad, _indices_grad):
        x_cl, indices = ctx.saved_tensors
        grad_cl = torch.ops.aten.max_pool2d_with_indices_backward(
            grad.contiguous(memory_format=_CL), x_cl, _SIZE, _SIZE, [0, 0], [1, 1], False, indices)
        return grad_cl.contiguous()


def _max_of_windows(x: Tensor) -> Tensor:
    """The 2×2 windows' maxima without indices: the maximum of four strided views (NaN propagates, as
    in the pool; an odd last row or column is dropped, as the pool drops it)."""
    x = x[..., : x.shape[-2] // 2 * 2, : x.shape[-1] // 2 * 2]
    rows = torch.maximum(x[..., ::2], x[..., 1::2])
    return torch.maximum(rows[..., ::2, :], rows[..., 1::2, :])


def max_pool2x2(x: Tensor) -> Tensor:
    """`F.max_pool2d(x, 2)`, through channels_last where that is faster and exact, and as the maximum of
    strided views where no gradient flows (see above)."""
    if x.device.type == "cpu" and x.dim() == 4 and x.is_contiguous() and not is_batchedtensor(x):
        if not x.requires_grad:
            return _max_of_windows(x)
        return _MaxPool2x2ChannelsLast.apply(x)[0]
    return F.max_pool2d(x, 2)


class MaxPool2x2(nn.Module):
    """`nn.MaxPool2d(2)` through `max_pool2x2` (no parameters, no state)."""

    def forward(self, x: Tensor) -> Tensor:
        return max_pool2x2(x)
