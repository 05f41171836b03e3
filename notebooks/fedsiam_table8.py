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
# # FedSiam, Table 8 — the consistency loss J: MSE (Eq. 4) or KL divergence (Eq. 5)
#
# FedSiam-D, labels-at-client with γ = 0.10, IID and Non-IID-I, four runs per setting in the
# paper. The paper's conclusion, which sets its defaults (Table 4): MSE for MNIST and SVHN in
# every setting and for CIFAR-10 IID, KL for CIFAR-10 non-IID. The caption numbering is used (the
# paper's text calls this table "Table 7").
#
# Profiles: `smoke` checks the wiring; `quick` runs one seed and one local epoch (rows *reduced*);
# `paper` the paper's protocol with four seeds.

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
datasets = ["mnist", "cifar10", "svhn"]
settings = None                         # None: the profile's scope (quick and paper: iid, noniid1)
seeds = None                            # None: the profile's share of seeds 1234-1237

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedsiam_table8")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import claim_comparisons, fedsiam
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedsiam/plans.py: no training, no file written)
cells, authors_cells = fedsiam.plans.table8(profile, device, datasets=datasets, settings=settings, seeds=seeds)

# %%
import pandas as pd

from fssl_core.report.plots import paper_vs_reproduced
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.tables import claim_verdicts, comparison_table, save_notebook_results

results = reproduce_cells(cells, run_profile, device)
authors_results = reproduce_cells(authors_cells, run_profile.at_paper_protocol(), device)
claims = fedsiam.table8_claims(results)
save_notebook_results(pd.concat([results, claims, authors_results], ignore_index=True), "fedsiam_table8", run_profile)
comparison_table(results)

# %%
fig, ax = paper_vs_reproduced(results, title=f"FedSiam Table 8 (profile {run_profile.name}, {device})",
                              display_names=fedsiam.DISPLAY_NAMES)

# %% [markdown]
# The paper's claim, the one that sets its defaults: the loss it picked per column (MSE, KL for
# CIFAR-10 non-IID) beats the other. Verdicts from the one claim test (`fssl_core.report.claim_test`): with fewer than 3 seeds on a side a claim is
# *untested*; else Welch's t at 5% (two-sided, its interval beside the verdict), against each baseline.

# %%
claim_verdicts(pd.concat([results, claims], ignore_index=True), claim_comparisons())[
    ["setting", "dataset", "method", "metric", "reproduced_value", "n_runs", "profile", "verdict", "interval"]]

# %% [markdown]
# ## Cells more than 1.5 points from the paper
# - **Profile.** `quick` runs one local epoch and one seed (rows say `reduced`).
# - **Scale of J.** The MSE is a mean over the C classes and the KL (target ‖ online) a sum over
#   them, both averaged over the batch: the authors' code (`utils/losses.py` with `/ minibatch_size`
#   in `models/Update.py`) scales them the same way, so the KL term is about C times the MSE term
#   in both, so with KL the consistency pull on a client's online net is about C times stronger.
# - **Local epochs, for the Non-IID-I KL row.** The paper's KL row sits far below its own MSE row
#   on MNIST Non-IID-I. At `quick` (one local epoch) our KL row stays near the MSE one; at the
#   paper protocol (five local epochs, results/fedsiam_table8.csv, profile `paper`) it falls to
#   the paper's value, and stays there for the last twenty rounds (not a last-round swing): the
#   gap needs the paper's local training length, during which the C-times stronger KL pull drags
#   each client's online net, trained on a few classes, toward its target's guesses on the others.
#
# - **The authors' computation.** Their MNIST network (dropout), unaugmented inputs and EMA on epochs
#   (`fedsiam.AUTHORS_SIAMESE`, Table 5's `at_authors_siamese`), run for the cells that sat far above
#   the paper at its protocol (`at_authors_siamese`, last round and test-selected; table
#   `table8_authors_siamese`). Test-selected, it is the one pre-registered reading (`fedsiam.PRE_REGISTERED`,
#   `measured_cause`); every other reading is an `exploratory: ` column, never a cause.

# %%
fedsiam.explain_large_deltas(results, measured=fedsiam.measured_beside(authors_results, "table8"))
