# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # FedMix, Figure 5 — the mixing weights (α, β, γ)
#
# EN Fig. 5 and the journal's Fig. 5: FedMix under several mixing weights, IID and Dir(0.1). The papers print only the best, (0.5, 0.3, 0.2) (EN line 217, ZH line 248), and claim that accuracy becomes unstable as α falls in the non-IID setting and that close weights do well in IID. The rest of the grid is ours (`papers/fedmix/cells.py`, FIGURE5_WEIGHTS), with FedLoss aggregation (the journal's method).
#
# Protocol (EN line 197-201, ZH line 231-235): CIFAR-10 pooled and resplit 56,000 / 2,000, 1,000
# labels at the server, K = 100 clients, 5 a round, ResNet-9, SGD lr 1e-3, 150 rounds, one epoch of
# batch 64 at the server and the clients, A = 5 views, τ = 0.80; choices where the papers are silent
# are in `papers/fedmix/cells.py` and `algorithms/fedmix.py`. Each cell reports the final and the
# best test accuracy (the papers plot curves and quote "converged" or "maximum" accuracy).
# Profiles: `quick` runs the FedSiam CIFAR CNN for 50 rounds, one seed (rows *reduced*); `paper`
# the protocol. Without CIFAR-10 on this machine every row says `needs-data`.

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
seeds = None                            # None: seed 1

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedmix_figure5")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedmix
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedmix/plans.py: no training, no file written)
cells = fedmix.plans.figure5(profile, device, seeds=seeds)

# %%
from fssl_core.job.cells import reproduce_cells

fedmix.publish_cifar_figure("fedmix_figure5", reproduce_cells(cells, run_profile, device), run_profile)

# %%
fedmix.draw_cifar_figure("fedmix_figure5", cells, run_profile, device)
