"""FedSiam's MNIST CNN (Table 1): two 5×5 convolutions and two linear layers, 21,840 parameters.

The paper's Table 1 lists no dropout for this network (the authors' code adds some); we follow
the table, since the table is what the paper's parameter count and results are stated for.
"""
from __future__ import annotations

import functools

import torch.nn.functional as F
from torch import Tensor, nn

from . import grouped
from .base import Network
from .dropout import PartyDropout, client_keep_masks
from .pooling import max_pool2x2


class CNNMnist(Network):
    def __init__(self, num_classes: int = 10, in_channels: int = 1, projection_dim: int | None = None):
        super().__init__(feature_dim=50, num_classes=num_classes, projection_dim=projection_dim)
        self.conv1 = nn.Conv2d(in_channels, 10, 5)     # 28 → 24 → pool 12
        self.conv2 = nn.Conv2d(10, 20, 5)              # 12 → 8 → pool 4
        self.fc1 = nn.Linear(320, 50)                  # 20·4·4 = 320

    def features(self, x: Tensor) -> Tensor:
        x = max_pool2x2(self.conv1(x)).relu()
        x = max_pool2x2(self.conv2(x)).relu()
        return self.fc1(x.flatten(1)).relu()


def _grouped_features(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, w3: Tensor, b3: Tensor, x: Tensor,
                      training: bool, conv2_drop: float = 0.0, fc1_drop: float = 0.0) -> Tensor:
    """`features` for C clients at once (models/grouped.py): every tensor stacked over clients. The
    dropout rates are the authors' network's (CNNMnistAuthors); each client's masks are drawn from its
    own stream in the order its sequential forward draws them (conv2's maps, then fc1's outputs)."""
    clients, batch = x.shape[:2]
    h = F.max_pool2d(grouped.conv2d(grouped.to_groups(x), w1, b1, clients), 2).relu()
    h = grouped.conv2d(h, w2, b2, clients)
    if training and conv2_drop:      # Dropout2d: one draw per sample and channel, as PartyDropout(channels=True)
        keep = client_keep_masks(clients, (batch, w2.shape[1], 1, 1), conv2_drop, h)
        h = h * grouped.channel_groups(keep) / (1.0 - conv2_drop)
    h = F.max_pool2d(h, 2).relu()
    f = grouped.linear(grouped.from_groups(h, clients), w3, b3).relu()
    if training and fc1_drop:
        f = f * client_keep_masks(clients, (batch, w3.shape[1]), fc1_drop, f) / (1.0 - fc1_drop)
    return f


CNNMnist.grouped_op = grouped.register(_grouped_features)

# the dropout the FedSiam authors' code adds to Table 1's network (models/Nets.py, CNNMnist)
AUTHORS_CONV2_DROP = AUTHORS_FC1_DROP = 0.5


class CNNMnistAuthors(CNNMnist):
    """The FedSiam authors' MNIST CNN (models/Nets.py, CNNMnist): Table 1's layers plus the dropout
    their code adds, Dropout2d(0.5) on conv2's maps and dropout 0.5 after fc1; the same 21,840
    parameters. Not the paper's network (Table 1 lists no dropout): it serves the rows that measure
    how far the authors' code explains their printed values (papers/fedsiam/authors_code.py,
    AUTHORS_NETWORK). Its grouped formulation draws each client's masks from that client's stream,
    so on the CPU it trains as a cohort: a paper-protocol MNIST round 2.5× (FedSiam-D) and 2.6×
    (FedFixMatch) faster than sequentially, rounds interleaved in one process on a loaded 2-core
    machine, 1 thread (2026-11-25; `bench cases=mnist_authors_fedsiam_d` measures it). Its revision counts the
    cohort trainer as part of its computation: cohort and sequential agree to float rounding only,
    which 50 rounds turn into different numbers (its revision: models/__init__.py)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 1, projection_dim: int | None = None):
        super().__init__(num_classes=num_classes, in_channels=in_channels, projection_dim=projection_dim)
        self.conv2_drop = PartyDropout(AUTHORS_CONV2_DROP, channels=True)
        self.fc1_drop = PartyDropout(AUTHORS_FC1_DROP)

    def features(self, x: Tensor) -> Tensor:
        x = max_pool2x2(self.conv1(x)).relu()
        x = max_pool2x2(self.conv2_drop(self.conv2(x))).relu()
        return self.fc1_drop(self.fc1(x.flatten(1)).relu())


CNNMnistAuthors.grouped_op = grouped.register(
    functools.partial(_grouped_features, conv2_drop=AUTHORS_CONV2_DROP, fc1_drop=AUTHORS_FC1_DROP))
