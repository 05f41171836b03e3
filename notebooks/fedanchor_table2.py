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
# # FedAnchor, Table 2 — Wide ResNet-28-2, IID and Dir(0.1), every anchor size
#
# `fedanchor.txt` Table 2: the same grid as Table 1 on WRN-28-2 (1.47 M parameters), the backbone of MixMatch, FixMatch and SemiFL.
# Protocol (§5.1, Appendix C): 100 clients by LDA, 10 a round, 5 local epochs, 500 rounds, SGD lr
# 0.03, momentum 0.9, weight decay 5e-4, 5 pre-training epochs on the anchors at 0.05, thresholds
# 0.6 (FedAnchor) and 0.95 (SemiFL, FedAvg+FixMatch), three seeds. Every printed cell is a row
# below: a value, or `needs-data` where the data set is not on this machine.
#
# Profiles: `quick` runs 50 rounds of one local epoch and one seed (rows *reduced*; a GPU is
# advised even so); `paper` the whole protocol. Reading choices are written in
# `algorithms/fedanchor.py` and `algorithms/semifl.py`.
#
# BatchNorm, one treatment for every method: each global model gets static statistics (SemiFL's sBN),
# recomputed on the anchors after pre-training and after each round's server training, before it is
# evaluated or sent. SemiFL's code keeps no running statistics and computes them so before every
# download and test; FedAnchor's Algorithm 1 is SemiFL's pipeline, and the paper says nothing of
# BatchNorm for any method. sBN for SemiFL alone would evaluate the others (and FedAnchor's
# eval-mode pseudo-labeller) with WRN-28-2's momentum-0.001 statistics, near their initial values for
# hundreds of steps (measured in `fedanchor_fmnist`). Not taken: momentum 0.1 for all and sBN for
# SemiFL only, which would give SemiFL alone unskewed statistics in the Dir(0.1) cells
# (`algorithms/static_batchnorm.py`).

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
seeds = None                            # None: the profile's share of seeds 1-3

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedanchor_table2")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedanchor
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedanchor/plans.py: no training, no file written)
cells = fedanchor.plans.table2(profile, device, seeds=seeds)

# %%
import pandas as pd

from fssl_core.report.plots import paper_vs_reproduced
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.tables import comparison_table, save_notebook_results

results = pd.concat([reproduce_cells(cells, run_profile, device),
                     fedanchor.not_implemented_rows("table2", run_profile, device)], ignore_index=True)
save_notebook_results(results, "fedanchor_table2", run_profile)
comparison_table(results)

# %%
fig, ax = paper_vs_reproduced(results, title=f"FedAnchor Table 2 (profile {run_profile.name}, {device})",
                              display_names=fedanchor.DISPLAY_NAMES)
