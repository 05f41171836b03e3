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
# # FedSiam, Table 7 — sensitivity: siamese network, EMA decay α_max, τ curve
#
# FedSiam-D on the labels-at-client IID setting with γ = 0.10, varying one hyperparameter at a
# time around Table 2 and Table 4: with and without the siamese pair (FedSiam-NoSiam: one network
# whose own predictions on two augmented views are made consistent), the EMA decay bound α_max ∈
# {0.9, 0.99, 0.999, 0.9999}, and the linear (Eq. 11) or rectangle (Eq. 12) τ curve. The paper
# averages four runs per setting.
#
# The caption numbering is used: the paper's text (§4.4) calls this table "Table 8".
#
# Profiles: `smoke` checks the wiring; `quick` runs one seed and one local epoch (rows *reduced*);
# `paper` the paper's protocol with four seeds.

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
datasets = ["mnist", "cifar10", "svhn"]
variants = None                         # None: the profile's scope (quick and paper: all; smoke: siamese, α_max 0.99/0.999, both curves)
seeds = None                            # None: the profile's share of seeds 1234-1237

# %% tags=["plan"]
from fssl_core.experiments import fedsiam
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
cells = fedsiam.table7_cells(run_profile, device, datasets=datasets, variants=variants, seeds=seeds)

# %%
from fssl_core.plots import paper_vs_reproduced, save_figure
from fssl_core.report import comparison_table, reproduce_cells, save_notebook_results

results = reproduce_cells(cells, run_profile, device)
save_notebook_results(results, "fedsiam_table7", run_profile)
comparison_table(results)

# %%
fig, ax = paper_vs_reproduced(results, title=f"FedSiam Table 7 (profile {run_profile.name}, {device})")
save_figure(fig, "fedsiam_table7", run_profile.name)

# %% [markdown]
# The paper's claims: the siamese pair helps (FedSiam-D above FedSiam-NoSiam), accuracy peaks at
# α_max = 0.999, and the two τ curves are within a few tenths of a point. Differences this small
# are within one seed's noise: read `quick` rows (one seed) as a check of direction at most.
#
# ## What α_max can change
# α^k = min(1 − 1/(E + 1), α_max) after E local epochs (Mean Teacher's ramp, Eq. 9), so no run goes
# above 1 − 1/(R_G·R_L + 1): a larger α_max trains the same run. Below, the largest α^k each run
# reaches and which α_max rows gave identical per-round accuracies. The authors' code counts each
# client's *own* epochs (`user_epoch · local_ep + iter` in `models/Update.py`): a client picked
# about 5 times in 50 rounds of 5 epochs sees some 25, so α^k stays near 1 − 1/26 ≈ 0.96 and
# α_max ∈ {0.99, 0.999, 0.9999} train the same runs there too: the paper's differences between
# those rows are seeds (its splits are unseeded), not α_max.

# %%
fedsiam.alpha_reached(cells)

# %% [markdown]
# ## Cells more than 2 points from the paper
# - **Profile.** `quick` runs one local epoch and one seed (rows say `reduced`).

# %%
fedsiam.explain_large_deltas(results)
