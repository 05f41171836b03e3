"""Static batch normalisation (SemiFL's sBN), one treatment for every method of the FedAnchor
experiments (`RunConfig.static_batchnorm`, on for all of them in papers/fedanchor/cells.py).

With it, the global model's BatchNorm running statistics are recomputed from scratch on the
server's labeled set (`Context.batchnorm_statistics`: un-augmented images, one train-mode pass, a
cumulative average) each time the server is done with the model: after pre-training (so round 1's
download has them), and after the round's aggregation and server training, before the test-set
evaluation and the next round's download. Training itself is untouched: every loss runs in train
mode on batch statistics, so the statistics reach only what runs in eval mode, the evaluated
model and the pseudo-labellers that predict in eval mode (SemiFL's and FedAnchor's).

Why every method, and why this reading rather than another:
- Where the treatment comes from. The BatchNorm momentum 0.001 of our WRN-28-2 is FixMatch's (an
  EMA decay of 0.999); SemiFL's code (diaoenmao/SemiFL-..., src/models/utils.py `make_batchnorm`,
  src/models/wresnet.py) builds its networks with `track_running_stats=False`: no running
  statistics are kept during training at all, and the global model gets its only statistics from
  `make_batchnorm_stats` (src/data.py: momentum=None, a pass over the server's data, or the server's
  and clients' with `sbn=1`) in `Server.distribute` before every round's download and before every
  test (src/train_classifier_ssfl.py). So in SemiFL's pipeline the momentum never matters.
- FedAnchor's Algorithm 1 is SemiFL's alternate training with another pseudo-labeller, and §5.1 says
  the WRN-28-2 follows "MixMatch, FixMatch or SemiFL"; the paper says nothing of BatchNorm, for any
  method. Its pseudo-labels (the anchors' and clients' embeddings, Eq. 3) are computed in eval mode,
  so they depend on the statistics at least as much as SemiFL's. Giving sBN to SemiFL alone, with
  momentum 0.001 everywhere else, leaves FedAnchor, FedCon, FedAvg+FixMatch and Supervised
  evaluated (and FedAnchor pseudo-labelling) with statistics still near their initial (0, 1) for
  hundreds of steps: on a small WRN on Fashion-MNIST (IID, 250 anchors), FedAnchor's round-1 test
  accuracy was 21.1% with them and 56.9% with sBN, its pseudo-labels 49.1% and 61.9% accurate over
  15 rounds, while SemiFL led every method, Supervised included (notebooks/fedanchor_fmnist.py). Tables 1-4
  claim FedAnchor beats SemiFL and FedAvg+FixMatch/FedCon from early rounds on (Figs. 3, 6-8); that
  can only be a statement about the methods if every one is evaluated alike, so sBN for all.
- The alternative, not taken: the usual momentum 0.1 for every method and sBN for SemiFL only (the
  one method whose paper defines it). The others' running statistics would be FedAvg means of the
  clients' statistics, skewed on Dir(0.1) clients, so SemiFL alone would get unskewed statistics in
  exactly the non-IID cells where the paper claims FedAnchor wins, and the momentum would still not
  be SemiFL's (it keeps none).
- The data: the server's labeled set (SemiFL's `sbn=0`, "server only sBN statistics"); with
  `sbn=1` SemiFL also passes the clients' data through the server, which an FL server does not hold.
- Networks without BatchNorm (the MNIST CNN of the quick Fashion-MNIST profile) are unchanged.
"""
from __future__ import annotations

from ..training import Tensors


def static_statistics(algorithm, model: Tensors) -> Tensors:
    """`model` with its BatchNorm statistics recomputed on the server's labeled set when the run
    uses static BN (`RunConfig.static_batchnorm`); `model` itself otherwise."""
    cfg, ctx = algorithm.cfg, algorithm.ctx
    if not cfg.static_batchnorm:
        return model
    return ctx.batchnorm_statistics(model, ctx.server_view.labeled, cfg.batch_size)
