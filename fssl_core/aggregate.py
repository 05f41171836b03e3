"""Aggregation rules: how the server combines what clients upload."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor


def weighted_mean(tensor_dicts: Sequence[dict[str, Tensor]], weights: Sequence[float]) -> dict[str, Tensor]:
    """Σ_k w_k θ_k / Σ_k w_k for every floating tensor; integer tensors (BatchNorm's
    num_batches_tracked) are counters, not estimates, and are taken from the first dict."""
    if len(tensor_dicts) != len(weights) or not tensor_dicts:
        raise ValueError(f"weighted_mean: {len(tensor_dicts)} tensor dicts and {len(weights)} weights; "
                         "need the same positive number of each")
    total = float(sum(weights))
    if total <= 0 or any(w < 0 for w in weights):
        raise ValueError(f"weighted_mean: weights={list(weights)} must be non-negative with a positive sum")
    out = {}
    for name, first in tensor_dicts[0].items():
        if not first.is_floating_point():
            out[name] = first.clone()
            continue
        stacked = torch.stack([d[name].detach() for d in tensor_dicts])
        w = torch.tensor([float(x) / total for x in weights], dtype=stacked.dtype, device=stacked.device)
        out[name] = torch.tensordot(w, stacked, dims=1)
    return out
