"""FedAvg (McMahan et al., 2017) on the labeled data only, and FedAvg+ (with weak augmentation).

FedSiam uses both as its supervised baselines (Section 4.1): clients train the global model on
their labeled samples with cross-entropy; the server averages the models (uniformly, FedSiam's
Eq. 2; `client_weighting` selects McMahan's sample-count weights instead). FedAvg+ differs in one thing: the labeled images are
weakly augmented.
"""
from __future__ import annotations

import torch.nn.functional as F

from .base import Algorithm


class FedAvg(Algorithm):
    name = "fedavg"
    cohort = True
    labels_at = ("client",)    # clients' labeled samples only; with labels at the server nothing trains
    reads_unlabeled = False    # Non-IID-I and Non-IID-II are then one run (tests/test_partition_identity.py)

    def inputs(self, batch):
        return batch.labeled.plain()

    def loss(self, nets, batch, step):
        logits = self.ctx.apply(nets["model"], self.inputs(batch))
        return F.cross_entropy(logits, batch.labeled.y), {}


class FedAvgPlus(FedAvg):
    name = "fedavg_plus"

    def inputs(self, batch):
        return batch.labeled.weak()
