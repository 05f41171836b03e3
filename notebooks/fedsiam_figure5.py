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
# # FedSiam, Figure 5 — convergence on SVHN
#
# Test accuracy per global round of FedSiam-D and the baselines, labels-at-client with γ = 0.10,
# IID and Non-IID-I/II. The paper's claim: FedSiam-D reaches the target accuracy (its dotted
# line) in far fewer rounds than every baseline. SVHN is not on this machine, so its curves are
# `needs-data` here; the same figure is drawn for MNIST, whose runs are Table 5's (cached in the
# run store, not retrained). The rounds each method needs to reach the target are tabulated.

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
datasets = ["svhn", "mnist"]
settings = None                         # None: the profile's scope (quick and paper: iid, noniid1, noniid2; smoke: iid)
methods = ["fedavg", "fedavg_plus", "fedsem", "fedfixmatch", "fedmatch", "fedsiam_d"]
target_accuracy = {"svhn": 85.0, "mnist": 95.0}   # the dotted line (the paper prints no value for it)
seeds = None

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedsiam_figure5")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedsiam
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedsiam/plans.py: no training, no file written)
cells = fedsiam.plans.figure5(profile, device, datasets=datasets, settings=settings, methods=methods, seeds=seeds)

# %%
import pandas as pd

from fssl_core.papers import display_names
from fssl_core.report.plots import round_curves, save_figure
from fssl_core.data.availability import dataset_available
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.tables import round_curves as curves_of

results = reproduce_cells(cells, run_profile, device)
curves = curves_of(cells)
print({d: "ok" if dataset_available(d) else "needs-data" for d in datasets})

# %%
rounds_to_target = []
for (dataset, setting), part in curves.groupby(["dataset", "setting"], sort=False):
    fig, ax = round_curves(part, display_names=display_names(),       # the title's second line: the seeds per point
                           title=f"{dataset} {setting}, γ=0.10 (profile {run_profile.name}, {device})",
                           target=target_accuracy.get(dataset))
    save_figure(fig, f"fedsiam_figure5_{dataset}_{setting}", run_profile.name)
    for method, m in part.groupby("method", sort=False):
        hit = m[m.accuracy >= target_accuracy.get(dataset, float("inf"))]
        rounds_to_target.append({"dataset": dataset, "setting": setting, "method": method,
                                 "rounds to target": int(hit["round"].min()) if len(hit) else None,
                                 "final accuracy": round(float(m.accuracy.iloc[-1]), 2)})
pd.DataFrame(rounds_to_target, columns=["dataset", "setting", "method", "rounds to target", "final accuracy"])
