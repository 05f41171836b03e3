"""Aggregation rules: how the server combines what clients upload."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

import torch

if TYPE_CHECKING:
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


def one_minus_share_weights(values: Sequence[float]) -> list[float]:
    """w_k = (1 − p_k) / (m − 1) with p_k = v_k / Σ_j v_j over the m uploading clients: the form
    shared by FedFreq (fedmix-fedfreq.txt Eq. 10) and FedLoss (fedmix-fedloss-zh.txt Eq. 11-12).

    The papers write the normaliser as FK − 1, which is Σ_k (1 − p_k) = m − 1 exactly when
    m = F·K clients upload; m − 1 keeps the weights summing to 1 for any m. Larger shares get
    smaller weights; every weight is in [0, 1/(m − 1)]. One client: weight 1. All values 0 (no
    share defined): uniform."""
    m = len(values)
    if m == 0:
        raise ValueError("one_minus_share_weights: values is empty; need one value per uploading client")
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError(f"one_minus_share_weights: values={list(values)} must be finite and non-negative")
    if m == 1:
        return [1.0]
    total = float(sum(values))
    if total == 0:
        return [1.0 / m] * m
    return [(1.0 - v / total) / (m - 1) for v in values]


def fedfreq_weights(participations: Sequence[int]) -> list[float]:
    """FedFreq (Eq. 10): q_k = rounds client k has been selected in, the current one included, so a
    client seen for the first time has q = 1, the smallest share and the largest weight. (Counting
    only earlier rounds would make every q 0 in the first round, where p = q / Σq is undefined.)"""
    if any(q < 1 for q in participations):
        raise ValueError(f"fedfreq_weights: participations={list(participations)}: each must be >= 1 "
                         "(the current round counts)")
    return one_minus_share_weights([float(q) for q in participations])


def fedloss_weights(losses: Sequence[float]) -> list[float]:
    """FedLoss (journal Eq. 11-12): l_k = client k's training loss this round; a lower loss share
    gives a larger weight ("clients whose models perform better contribute more")."""
    return one_minus_share_weights([float(v) for v in losses])
