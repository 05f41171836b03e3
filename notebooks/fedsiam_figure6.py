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
# # FedSiam, Figure 6 — accuracy against communication (μ)
#
# FedSiam-D, labels-at-client IID with γ = 0.10, for several μ, the "target reduced
# communication" of online-net uploads relative to FedSiam-MT. FedAvg+, FedSiam-Π and FedSiam-MT
# are drawn as reference lines. The paper's claim: as μ grows (less sent), FedSiam-D's accuracy
# first rises to a peak above FedSiam-MT's, then drops. Beside accuracy we plot the measured
# upload volume of each run, so the communication side of the trade-off is measured, not assumed.
#
# τ is the fraction of online-net layers uploaded (see `algorithms/fedsiam.py`); Eq. 11's τ is
# clipped to [0, 1], so the realised upload differs from 1 − μ (the τ-curve notebook shows by how
# much). The figure's values are not printed in the paper, so there is no paper column.

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
datasets = ["mnist", "svhn"]
mus = None                              # None: the profile's scope (quick and paper: 0.1-0.9 by 0.2)
seeds = None

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedsiam_figure6")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedsiam
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedsiam/plans.py: no training, no file written)
cells = fedsiam.plans.figure6(profile, device, datasets=datasets, mus=mus, seeds=seeds)

# %%
from fssl_core.report.plots import accuracy_vs_mu, save_figure
from fssl_core.data.availability import dataset_available
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.publish import as_published
from fssl_core.report.tables import comparison_table, save_notebook_results

results = reproduce_cells(cells, run_profile, device)
save_notebook_results(results, "fedsiam_figure6", run_profile)
comparison_table(results).pivot_table(index=["dataset", "setting", "method"], columns="metric",
                                      values="reproduced_value")

# %%
for dataset in datasets:
    if not dataset_available(dataset):
        print(f"{dataset}: needs-data")
        continue
    # drawn from the rows as published (this run's over those of more runs or other μ): the CSV's figure
    fig, ax = accuracy_vs_mu(as_published(results, "fedsiam_figure6", run_profile.name), dataset,
                             display_names=fedsiam.DISPLAY_NAMES,
                             title=f"{dataset} IID, γ=0.10 (profile {run_profile.name}, {device})")
    save_figure(fig, f"fedsiam_figure6_{dataset}", run_profile.name)
