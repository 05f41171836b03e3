"""FedSiam's CIFAR-10/SVHN CNN (Table 1): six 3×3 convolutions, three linear layers,
5,852,170 parameters. Convolutions use padding 1, so 32×32 inputs reach the 256·4·4 = 4096
features Table 1's first linear layer takes. Dropout draws its masks from the training party's
random stream (models/dropout.py), so cohort = sequential and a resumed run = an uninterrupted one.

On the CPU the images enter the network in channels_last: the convolutions, BatchNorm and pooling
then run oneDNN's channels_last kernels, a training step 1.13× faster than in NCHW (10 clients × 10
images, forward and backward, one thread, 2026-11-25; 575 → 510 ms). The floats differ from NCHW's
in the last bits (logits by ~6e-9), hence revision 1. Measured at the same time and not taken: the
round's clients vmapped (0.68× the sequential trainer) or written out as one grouped channels_last
convolution per layer, as the MNIST CNN is (0.80×): at 32 to 256 channels a client's convolutions
are already large GEMMs, so stacking clients adds copies and no speed; the sequential trainer stays.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn
# torch._C._functorch is private: no stability promise. A torch release that moves it fails this import,
# and so every run, at start-up (tests/test_cohort.py pins the behaviour on the torch installed); the fix is here.
from torch._C._functorch import is_batchedtensor

from .base import Network
from .dropout import PartyDropout
from .pooling import MaxPool2x2


class CNNCifar(Network):
    def __init__(self, num_classes: int = 10, in_channels: int = 3, projection_dim: int | None = None):
        super().__init__(feature_dim=512, num_classes=num_classes, projection_dim=projection_dim)

        def conv(c_in: int, c_out: int, batch_norm: bool) -> list[nn.Module]:
            return [nn.Conv2d(c_in, c_out, 3, padding=1), *([nn.BatchNorm2d(c_out)] if batch_norm else []), nn.ReLU()]

        self.body = nn.Sequential(
            *conv(in_channels, 32, True), *conv(32, 64, False), MaxPool2x2(),
            *conv(64, 128, True), *conv(128, 128, False), MaxPool2x2(), PartyDropout(0.05),
            *conv(128, 256, True), *conv(256, 256, False), MaxPool2x2(),
            nn.Flatten(),
            nn.Linear(4096, 1024), nn.ReLU(), PartyDropout(0.1),
            nn.Linear(1024, 512), nn.ReLU(), PartyDropout(0.1),
        )

    def features(self, x: Tensor) -> Tensor:
        if x.device.type == "cpu" and x.dim() == 4 and not is_batchedtensor(x):   # vmap has no channels_last
            x = x.contiguous(memory_format=torch.channels_last)
        return self.body(x)
