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
# # FedAnchor, Figure 5 — the latent space over training (t-SNE)
#
# `fedanchor.txt` Appendix D, Figure 5: t-SNE of the anchor head's output for the test set at rounds
# 1, 100, 200 and 500 (CIFAR-10, WRN-28-2), each class's centroid a star; the paper's claim is that
# "FedAnchor can successfully separate the classes in the latent space through the training".
# Here by default on Fashion-MNIST (IID, 250 anchors; CIFAR-10 where it is on disk), with the run of
# the `fedanchor_fmnist` notebook: `quick` draws rounds 1, 10 and 30 of the MNIST CNN with a 128-d
# anchor head (reduced), `paper` rounds 1, 100, 200 and 500 of ResNet-18. The embeddings are
# normalised and t-SNE uses cosine distances, the geometry the anchor pseudo-labels use
# (scikit-learn's TSNE, fixed random state). Beside each panel: the silhouette score of the
# embeddings by true class (cosine; higher means better separated), which puts a number on the claim.
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
dataset = "fashion_mnist"               # fashion_mnist (not in the paper) | cifar10 (the paper's)
rounds = None                           # None: the profile's scope (quick: 1, 10, 30; paper: 1, 100, 200, 500)
samples = 2000                          # test images drawn

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedanchor_figure5")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedanchor
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedanchor/plans.py: no training, no file written)
configs = fedanchor.plans.figure5(profile, device, dataset=dataset, rounds=rounds)

# %%
import matplotlib.pyplot as plt
import pandas as pd
from sklearn.metrics import silhouette_score

from fssl_core.engine.latent import test_embeddings, tsne_2d
from fssl_core.report.plots import latent_scatter, save_figure
from fssl_core.data.availability import dataset_available
from fssl_core.job.cells import train_runs
from fssl_core.store import RunStore

available = dataset_available(dataset) and train_runs(configs, final_state=True)
if not dataset_available(dataset):
    print(f"{dataset}: needs-data")
elif not available:
    print("rebuilt from the records alone: this figure draws the runs' trained weights, which committed records "
          "do not carry; `python -m fssl_core reproduce --only fedanchor_figure5` trains them")

# %%
if available:
    fig, axes = plt.subplots(1, len(configs), figsize=(3.4 * len(configs), 3.4), squeeze=False)
    separation = []
    for ax, cfg in zip(axes[0], configs):
        z, y = test_embeddings(cfg, RunStore(), samples=samples)
        score = silhouette_score(z, y, metric="cosine")
        separation.append({"round": cfg.rounds, "silhouette (cosine)": round(float(score), 3),
                           "test accuracy": RunStore().load(cfg).accuracy})
        # the separation each panel shows, measured on the embeddings themselves (t-SNE's picture can mislead)
        latent_scatter(tsne_2d(z), y, title=f"round {cfg.rounds}: silhouette {score:.2f} (cosine)", ax=ax)
    fig.suptitle(f"FedAnchor latent space, {dataset} (profile {run_profile.name}, {device})", fontsize=10)
    fig.tight_layout()
    save_figure(fig, f"fedanchor_figure5_{dataset}", run_profile.name)
    display(pd.DataFrame(separation))
