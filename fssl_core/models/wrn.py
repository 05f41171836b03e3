"""Wide ResNet-28-2 (Zagoruyko & Komodakis 2016) as FixMatch, SemiFL and FedAnchor (Table 2) use
it: pre-activation blocks, widths 32/64/128, leaky ReLU 0.1; 1,467,610 parameters for 10 classes.

BatchNorm momentum 0.001 is FixMatch's (an EMA decay of 0.999): running statistics stay near their
initial (0, 1) for hundreds of steps. SemiFL's code keeps none during training and recomputes them
(static BN); the FedAnchor experiments do so for every method (`RunConfig.static_batchnorm`,
algorithms/static_batchnorm.py), so there this momentum reaches no evaluated model.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .base import Network


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int, activate_before_residual: bool):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c_in, momentum=0.001)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out, momentum=0.001)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.shortcut = None if c_in == c_out else nn.Conv2d(c_in, c_out, 1, stride, bias=False)
        self.activate_before_residual = activate_before_residual

    def forward(self, x: Tensor) -> Tensor:
        pre = F.leaky_relu(self.bn1(x), 0.1)
        out = self.conv2(F.leaky_relu(self.bn2(self.conv1(pre)), 0.1))
        if self.shortcut is None:
            return out + x
        # Only the first group's projection shortcut sees the pre-activation (FixMatch's WRN).
        return out + self.shortcut(pre if self.activate_before_residual else x)


class WideResNet28x2(Network):
    def __init__(self, num_classes: int = 10, in_channels: int = 3, projection_dim: int | None = None,
                 depth: int = 28, widen: int = 2):
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        super().__init__(feature_dim=widths[3], num_classes=num_classes, projection_dim=projection_dim)
        n = (depth - 4) // 6
        self.stem = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
        blocks = []
        for g, stride in enumerate([1, 2, 2]):
            for i in range(n):
                c_in = widths[g] if i == 0 else widths[g + 1]
                blocks.append(_Block(c_in, widths[g + 1], stride if i == 0 else 1, activate_before_residual=g == 0))
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(widths[3], momentum=0.001)

    def features(self, x: Tensor) -> Tensor:
        x = self.blocks(self.stem(x))
        return F.leaky_relu(self.bn(x), 0.1).mean((2, 3))
