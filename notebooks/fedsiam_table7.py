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
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedsiam_table7")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import claim_comparisons, fedsiam
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedsiam/plans.py: no training, no file written)
cells, authors_cells = fedsiam.plans.table7(profile, device, datasets=datasets, variants=variants, seeds=seeds)

# %%
import pandas as pd

from fssl_core.report.plots import paper_vs_reproduced
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.tables import claim_verdicts, comparison_table, save_notebook_results

results = reproduce_cells(cells, run_profile, device)
authors_results = reproduce_cells(authors_cells, run_profile.at_paper_protocol(), device)
claims = fedsiam.table7_claims(results)
save_notebook_results(pd.concat([results, claims, authors_results], ignore_index=True), "fedsiam_table7", run_profile)
comparison_table(results)

# %%
fig, ax = paper_vs_reproduced(results, title=f"FedSiam Table 7 (profile {run_profile.name}, {device})",
                              display_names=fedsiam.DISPLAY_NAMES)

# %% [markdown]
# The paper's claims: the siamese pair helps (FedSiam-D above FedSiam-NoSiam), accuracy peaks at
# α_max = 0.999, and the two τ curves are within a few tenths of a point. Differences this small
# are within one seed's noise: read `quick` rows (one seed) as a check of direction at most. The
# first two, with verdicts. Verdicts from the one claim test (`fssl_core.report.claim_test`): with fewer than 3 seeds on a side a claim is
# *untested*; else Welch's t at 5% (two-sided, its interval beside the verdict), against each baseline.

# %%
claim_verdicts(pd.concat([results, claims], ignore_index=True), claim_comparisons())[
    ["dataset", "method", "metric", "reproduced_value", "n_runs", "profile", "verdict", "interval"]]

# %% [markdown]
# ## What α_max can change
# α^k = min(1 − 1/(q + 1), α_max) at a client's q-th SGD step (Mean Teacher's ramp, Eqs. 3 and 9
# index it by training step), q counting the client's own steps over its picks
# (`algorithms/fedsiam.py`). At the paper's protocol a client takes 390 steps a pick (5 epochs of
# 78 batches) and about 5 picks in 50 rounds, so α^k passes 0.999 in its third pick and the 0.999
# and 0.9999 rows train different runs; at quick's one epoch (78 steps a pick) it tops out near
# 0.9974, and those two rows are the same run. Reading: the authors count epochs
# (`user_epoch · local_ep + iter` in `models/Update.py`), under which α^k stays below 0.97 and the
# rows 0.99, 0.999 and 0.9999 would all be one run, yet the paper prints them apart and says
# accuracy "first increases and then degrades quickly as α^k grows": only a step count lets that
# claim be tested. Below, α^k after a client's first and its expected picks, and the α_max rows
# whose per-round accuracies came out identical.

# %%
fedsiam.alpha_reached(cells)

# %% [markdown]
# ## Cells more than 1.5 points from the paper
# - **Profile.** `quick` runs one local epoch and one seed (rows say `reduced`).
#
# - **The authors' computation.** Their MNIST network (dropout), unaugmented inputs and EMA on epochs
#   (`fedsiam.AUTHORS_SIAMESE`, Table 5's `at_authors_siamese`), run for the cells that sat far above
#   the paper at its protocol (`at_authors_siamese`, last round and test-selected; table
#   `table7_authors_siamese`). Test-selected, it is the one pre-registered reading (`fedsiam.PRE_REGISTERED`,
#   `measured_cause`); every other reading is an `exploratory: ` column, never a cause.

# %%
fedsiam.explain_large_deltas(results, measured=fedsiam.measured_beside(authors_results, "table7"))
