"""A method added as a contributor would: this one file and one registry line (the test adds the line).

FedAvg with label smoothing ε (Szegedy et al., 2016): the clients' cross-entropy targets are
(1 − ε)·one-hot + ε/C. Its one setting, ε, is declared here beside its loss (default, rule and doc
together); RunConfig takes it by name once the method is registered. It reuses the engine's hooks and
needs no engine change."""
from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F

from fssl_core.algorithms.base import Algorithm, AlgorithmSettings
from fssl_core.config import setting


@dataclass(frozen=True)
class FedAvgSmoothedSettings(AlgorithmSettings):
    label_smoothing: float = setting(0.1, "[0, 1)", "ε: the weight moved from the label to the uniform target")


class FedAvgSmoothed(Algorithm):
    name = "fedavg_smoothed"
    cohort = True
    labels_at = ("client",)
    settings = FedAvgSmoothedSettings

    def loss(self, nets, batch, step):
        logits = self.ctx.apply(nets["model"], batch.labeled.plain())
        return F.cross_entropy(logits, batch.labeled.y, label_smoothing=self.cfg.label_smoothing), {}
