"""ResNets for 32×32 inputs (3×3 stem, no max-pool), as FixMatch/SemiFL/FedAnchor train them.

ResNet-18 (He et al. 2016; FedAnchor Tables 1, 3): 11,173,962 parameters for 10 classes.
ResNet-9 (FedMix/FedFreq's backbone, the DAWNBench network of Page 2018): prep 64, layers
128/256/512 with a residual pair after the first and last, 6,573,130 parameters for 10 classes.
"""
from __future__ import annotations

from torch import Tensor, nn

from .base import Network


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: Tensor) -> Tensor:
        out = self.bn1(self.conv1(x)).relu()
        out = self.bn2(self.conv2(out))
        return (out + self.shortcut(x)).relu()


class ResNet18(Network):
    def __init__(self, num_classes: int = 10, in_channels: int = 3, projection_dim: int | None = None):
        super().__init__(feature_dim=512, num_classes=num_classes, projection_dim=projection_dim)
        self.stem = nn.Sequential(nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        layers, c_in = [], 64
        for c_out, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)]
            c_in = c_out
        self.layers = nn.Sequential(*layers)

    def features(self, x: Tensor) -> Tensor:
        return self.layers(self.stem(x)).mean((2, 3))


def _conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class _Residual(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(_conv_bn(channels, channels), _conv_bn(channels, channels))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.body(x)


class ResNet9(Network):
    widths = (64, 128, 256, 512)

    def __init__(self, num_classes: int = 10, in_channels: int = 3, projection_dim: int | None = None):
        w1, w2, w3, w4 = self.widths
        super().__init__(feature_dim=w4, num_classes=num_classes, projection_dim=projection_dim)
        self.body = nn.Sequential(
            _conv_bn(in_channels, w1),
            _conv_bn(w1, w2), nn.MaxPool2d(2), _Residual(w2),
            _conv_bn(w2, w3), nn.MaxPool2d(2),
            _conv_bn(w3, w4), nn.MaxPool2d(2), _Residual(w4),
            nn.AdaptiveMaxPool2d(1), nn.Flatten(),
        )

    def features(self, x: Tensor) -> Tensor:
        return self.body(x)


class ResNet9Narrow(ResNet9):
    """ResNet-9 at 1/8 of its width (8-64 channels, 64× fewer multiply-adds): no paper's network. It lets a
    CPU run the first rounds of FedMix's streaming setting with ResNet-9's shape and BatchNorm layers, to
    study what BatchNorm does to FedMix's pseudo-labels (studies/fedmix/diagnose.py); rows made
    with it say so."""
    widths = (8, 16, 32, 64)
