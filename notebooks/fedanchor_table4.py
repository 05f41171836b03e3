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
# # FedAnchor, Table 4 — downstream communication overhead
#
# FedAnchor (`fedanchor.txt` §5.5) sends the S anchor embeddings down with the model each round;
# uploads are FedAvg's. The paper's overhead is the anchors' embedding entries over the model's
# parameters, Overhead = 100 / dim(w̄) · Σ_{i=1..S} dim(z_i^anchor) (line 210), for ResNet-18 and a
# 128-d anchor head. No training is needed: the value is computed from the parameter count of the
# package's own ResNet-18, so the table checks the network as much as the arithmetic.
#
# Reading choice (`papers/fedanchor/cells.py`): w̄ is ResNet-18 *without* the anchor head, which is
# what FedAvg transmits. It reproduces all seven printed values; counting the anchor head's 65,664
# parameters in w̄ would print 5.69% instead of 5.73% for 5,000 CIFAR-10 anchors.

# %% tags=["parameters"]
profile = "quick"          # unused: arithmetic only; kept for the reproduce job
device = "cpu"
model = "resnet18"         # Table 1's network; "wrn28_2" shows the same overhead for Table 2's

# %%
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedanchor_table4")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedanchor
from fssl_core.profiles import get_profile
from fssl_core.report.tables import comparison_table, save_notebook_results

run_profile = get_profile(profile)
table4 = fedanchor.table4_rows(model)
if model == "resnet18":   # the paper's values are for ResNet-18; other networks are shown, not reported
    save_notebook_results(table4.drop(columns="model_parameters"), "fedanchor_table4", run_profile)
table4[["dataset", "labeled", "model_parameters", "paper_value", "reproduced_value"]].rename(
    columns={"labeled": "anchors", "paper_value": "paper overhead %", "reproduced_value": "ours %"})

# %% [markdown]
# The paper's claim, "the extra communication overhead of FedAnchor is negligible" (line 210), holds
# for the small anchor sets (≤ 1.15% for ≤ 1,000 anchors) and is 11.4% of the downstream traffic
# for CIFAR-100's 10,000 anchors. Runs count the bytes that actually cross the network
# (`download_mb` in the run store), anchor embeddings included.

# %%
comparison_table(table4.drop(columns="model_parameters"))
