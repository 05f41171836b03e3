"""FedMatch's ResNet-9: the network FedMatch's public code builds, which FedMix's CIFAR split and learning rate
point to (papers/fedmix/READINGS.md). No BatchNorm and no convolution bias: every symptom of BatchNorm in
FedMix's pseudo-labels (the eval-mode targets, Eq. 9 mixing running statistics) is absent on it.

wyjeong/FedMatch, modules/nets.py, `NetModule.build_resnet9` (the plain, not decomposed, branch) and the layer
shapes in `NetModule.__init__`: conv 3→64; conv 64→128, max-pool 2; a residual pair 128→128; conv 128→256,
max-pool 2; conv 256→512, max-pool 2; a residual pair 512→512; max-pool 4, flatten, a dense layer to the
classes without bias. Each conv is 3×3, 'same' padding, stride 1, no bias, then ReLU. Weights from Keras'
VarianceScaling (scale 1, fan-in, truncated normal), theirs. 6,568,640 parameters for 10 classes on RGB.

Where we differ, and why: the last max-pool is global (AdaptiveMaxPool2d(1)), the same as their 4×4 pool on
32×32 inputs and defined on Fashion-MNIST's 28×28 (3×3 maps there, where a 4×4 pool has no window); their
plain branch scales the initial weights by 1 + psi_factor (1.2), so their every model starts at 1.2× the
initialiser's scale (their decomposed σ_0 + ψ_0 = 1.2 σ_0 too). Here the network keeps the initialiser's scale and
the run's `initial_scale` (RunConfig) sets the start: 1.2 in the cells that follow FedMatch's code
(papers/fedmix/cells.REFERENCE_CODE), 1.0 elsewhere, where our FedMatch splits θ_0 into σ_0 = θ_0/1.2 and
ψ_0 = 0.2 σ_0 and so starts at 1/1.2 of their scale: the two differ, and the setting says which is run.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .base import Network

# Keras' truncated normal is cut at two standard deviations and rescaled so that its std is the one asked
# for: stddev = sqrt(scale / fan_in) / 0.87962566103423978 (keras.initializers.VarianceScaling)
_TRUNCATION_STD = 0.87962566103423978


def _variance_scaling_(weight: Tensor, fan_in: int) -> None:
    std = math.sqrt(1.0 / fan_in) / _TRUNCATION_STD
    with torch.no_grad():
        nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-2 * std, b=2 * std)


def _conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.ReLU())


class _Residual(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(_conv(channels, channels), _conv(channels, channels))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.body(x)


class ResNet9FedMatch(Network):
    widths = (64, 128, 256, 512)

    def __init__(self, num_classes: int = 10, in_channels: int = 3, projection_dim: int | None = None):
        w1, w2, w3, w4 = self.widths
        super().__init__(feature_dim=w4, num_classes=num_classes, projection_dim=projection_dim)
        self.body = nn.Sequential(
            _conv(in_channels, w1),
            _conv(w1, w2), nn.MaxPool2d(2), _Residual(w2),
            _conv(w2, w3), nn.MaxPool2d(2),
            _conv(w3, w4), nn.MaxPool2d(2), _Residual(w4),
            nn.AdaptiveMaxPool2d(1), nn.Flatten(),
        )
        self.classifier = nn.Linear(w4, num_classes, bias=False)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                _variance_scaling_(module.weight, module.in_channels * module.kernel_size[0] * module.kernel_size[1])
            elif isinstance(module, nn.Linear):
                _variance_scaling_(module.weight, module.in_features)

    def features(self, x: Tensor) -> Tensor:
        return self.body(x)


class ResNet9FedMatchNarrow(ResNet9FedMatch):
    """FedMatch's ResNet-9 at 1/8 of its width (8-64 channels), no paper's network: the BN-free twin of
    `resnet9_narrow` for the CPU's diagnostic arms of FedMix (studies/fedmix/arms.py); rows made with it say so."""
    widths = (8, 16, 32, 64)
