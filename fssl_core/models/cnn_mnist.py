"""FedSiam's MNIST CNN (Table 1): two 5×5 convolutions and two linear layers, 21,840 parameters.

The paper's Table 1 lists no dropout for this network (the authors' code adds some); we follow
the table, since the table is what the paper's parameter count and results are stated for.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from . import grouped
from .base import Network
from .dropout import PartyDropout
from .pooling import max_pool2x2


class CNNMnist(Network):
    image_size = 28      # fc1 takes 20·4·4 features

    def __init__(self, num_classes: int = 10, in_channels: int = 1, projection_dim: int | None = None):
        super().__init__(feature_dim=50, num_classes=num_classes, projection_dim=projection_dim)
        self.conv1 = nn.Conv2d(in_channels, 10, 5)     # 28 → 24 → pool 12
        self.conv2 = nn.Conv2d(10, 20, 5)              # 12 → 8 → pool 4
        self.fc1 = nn.Linear(320, 50)                  # 20·4·4 = 320

    def features(self, x: Tensor) -> Tensor:
        x = max_pool2x2(self.conv1(x)).relu()
        x = max_pool2x2(self.conv2(x)).relu()
        return self.fc1(x.flatten(1)).relu()


def _grouped_features(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, w3: Tensor, b3: Tensor, x: Tensor) -> Tensor:
    """`features` for C clients at once (models/grouped.py): every tensor stacked over clients."""
    clients = x.shape[0]
    h = F.max_pool2d(grouped.conv2d(grouped.to_groups(x), w1, b1, clients), 2).relu()
    h = F.max_pool2d(grouped.conv2d(h, w2, b2, clients), 2).relu()
    return grouped.linear(grouped.from_groups(h, clients), w3, b3).relu()


CNNMnist.grouped_op = grouped.register("cnn_mnist_features", _grouped_features, feature_dim=50)


class CNNMnistAuthors(CNNMnist):
    """The FedSiam authors' MNIST CNN (models/Nets.py, CNNMnist): Table 1's layers plus the dropout
    their code adds, Dropout2d(0.5) on conv2's maps and dropout 0.5 after fc1; the same 21,840
    parameters. Not the paper's network (Table 1 lists no dropout): it serves the rows that measure
    how far the authors' code explains their printed values (experiments/fedsiam.py,
    AUTHORS_NETWORK). No grouped formulation: on the CPU it trains with the sequential trainer."""
    grouped_op = None

    def __init__(self, num_classes: int = 10, in_channels: int = 1, projection_dim: int | None = None):
        super().__init__(num_classes=num_classes, in_channels=in_channels, projection_dim=projection_dim)
        self.conv2_drop = PartyDropout(0.5, channels=True)
        self.fc1_drop = PartyDropout(0.5)

    def features(self, x: Tensor) -> Tensor:
        x = max_pool2x2(self.conv1(x)).relu()
        x = max_pool2x2(self.conv2_drop(self.conv2(x))).relu()
        return self.fc1_drop(self.fc1(x.flatten(1)).relu())
