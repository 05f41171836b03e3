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
# # FedAnchor, Figures 2–4 and 6–9 — curves over the rounds
#
# The curve figures of `fedanchor.txt` are views of Table 1's runs (ResNet-18), so one notebook
# draws them all from the run store (a figure's runs are Table 1's cells, trained once):
# - Fig. 2: SemiFL's samples per client passing its 0.95 threshold (CIFAR-10, Dir 0.1, 250 and 500
#   anchors); the paper: a mean below 25 of about 500 samples.
# - Fig. 3: test accuracy, samples selected and pseudo-label accuracy, all methods (CIFAR-10, Dir 0.1).
# - Fig. 4: CIFAR-100 IID, 2,500 anchors: test and pseudo-label accuracy; SemiFL degrades after
#   about 300 rounds (confirmation bias).
# - Figs. 6–8: test accuracy of every method, IID and Dir 0.1, every anchor size (CIFAR-10, CIFAR-100, SVHN).
# - Fig. 9: FedAnchor's pseudo-labels from its classification head and from its anchor head, beside
#   SemiFL's (CIFAR-10 250/500, SVHN 250/1000, Dir 0.1; the caption's "SVHN 100" read as 1,000).
#
# Pseudo-label accuracy is over all the clients' samples (SemiFL's "PAccuracy"). Where the data set
# is not on this machine the panel says `needs-data`. Profiles as in `fedanchor_table1`.
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
figures = [2, 3, 4, 6, 7, 8, 9]
seeds = None

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedanchor_curves")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedanchor
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedanchor/plans.py: no training, no file written)
pairs_of = fedanchor.plans.curves(profile, device, figures=figures, seeds=seeds)

# %%
from fssl_core.papers import display_names
from fssl_core.report.plots import round_curves, save_figure
from fssl_core.data.availability import dataset_available
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.tables import round_curves as curves_of

for figure, pairs in pairs_of.items():
    _, _, keys = fedanchor.CURVE_FIGURES[figure]
    for panel in dict.fromkeys(p for p, _ in pairs):
        dataset, setting, anchors = panel
        if not dataset_available(dataset):
            print(f"Figure {figure}, {dataset} {setting} {anchors} anchors: needs-data")
            continue
        cells = [c for p, c in pairs if p == panel]
        reproduce_cells(cells, run_profile, device)
        for key in keys:
            fig, ax = round_curves(curves_of(cells, key), key, display_names=display_names(),
                                   title=f"Fig. {figure}: {dataset} {setting}, {anchors} anchors "
                                         f"(profile {run_profile.name}, {device})")
            save_figure(fig, f"fedanchor_figure{figure}_{dataset}_{setting}_{anchors}_{key}", run_profile.name)
