"""Static batch normalisation (SemiFL's sBN), one treatment for every method of the FedAnchor
experiments (`RunConfig.static_batchnorm`, on for all of them in papers/fedanchor/cells.py).

With it, the global model's BatchNorm running statistics are recomputed from scratch on the
server's labeled set (`Context.batchnorm_statistics`: un-augmented images, one train-mode pass, a
cumulative average) each time the server is done with the model: after pre-training (so round 1's
download has them), and after the round's aggregation and server training, before the test-set
evaluation and the next round's download. Training itself is untouched: every loss runs in train
mode on batch statistics, so the statistics reach only what runs in eval mode, the evaluated
model and the pseudo-labellers that predict in eval mode (SemiFL's and FedAnchor's).

Reading choices, and why (the evidence and the alternatives: papers/fedanchor/READINGS.md, "Static BatchNorm"):
- for every method of the FedAnchor experiments, from SemiFL's code (its sBN) and FixMatch's BatchNorm
  momentum; statistics from the server's labeled set only (SemiFL's `sbn=0`).
"""
from __future__ import annotations

from ..learning.training import Tensors


def static_statistics(algorithm, model: Tensors) -> Tensors:
    """`model` with its BatchNorm statistics recomputed on the server's labeled set when the run
    uses static BN (`RunConfig.static_batchnorm`); `model` itself otherwise."""
    cfg, ctx = algorithm.cfg, algorithm.ctx
    if not cfg.static_batchnorm:
        return model
    return ctx.batchnorm_statistics(model, ctx.server_view.labeled, cfg.batch_size)
