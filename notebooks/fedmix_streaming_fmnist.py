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
# # FedMix + FedLoss, Figure 8 — streaming non-IID Fashion-MNIST
#
# The journal version (《一种鲁棒的半监督联邦学习系统》, `fedmix-fedloss-zh.txt` line 233): 64,000
# training and 2,000 test images; 1,000 labeled at the server; 63,000 unlabeled over 10 clients by
# Dirichlet μ = 0.1; each client's data cut into 10 equal parts, one used per round (10 rounds are
# one pass over the stream); every client trains every round. Its claims for this setting (line
# 263): FedMix-FedLoss reaches **the same highest accuracy as the baseline, 10 rounds sooner, with
# half the communication**. The figure's values are not printed, so the claims are what we test.
#
# Methods: supervised-only at the server (SL), FedMatch (the baseline), FedMix with equal mixing
# weights, and FedMix with the best weights (0.5, 0.3, 0.2) under FedAvg, FedFreq and FedLoss
# aggregation. FedFreq's weights are uniform here, since every client joins every round.
#
# Profiles: `smoke` checks the wiring; `quick` runs the FedSiam MNIST CNN instead of ResNet-9 for
# 50 rounds (5 passes over the stream) with one seed (rows *reduced*); `paper` runs ResNet-9 for
# 150 rounds (use a GPU): FedMatch's code's ResNet-9 without BatchNorm (the reading), or with `network="resnet9"`
# the BatchNorm ResNet-9. Reading choices are in `fssl_core/papers/fedmix/cells.py` and
# `fssl_core/algorithms/fedmix.py` (what crosses the network, the pseudo-label, the unstated
# hyperparameters).
#
# Every method, the baseline included, trains with one optimiser: SGD, lr 1e-3 (both papers: "both
# our model and baseline use SGD ... initial learning rate 1e-3", EN line 201, ZH line 235), momentum
# 0.9, weight decay 1e-4; the claims are measured under it. FedMatch's official momentum 0 gives it a
# step about 10x smaller than FedMix's; momentum 0 for every method is a row of the sensitivity
# table at the end.

# %% tags=["parameters"]
profile = "quick"                       # smoke | quick | paper
device = "cpu"                          # cpu | cuda
precision = "fp32"                      # on cuda: fp32 (exact) | tf32 (fast: the paper rows' runs; learning/precision.py)
methods = None                          # None: the profile's scope (quick: supervised_server, fedmatch,
                                        # fedmix_fedloss, fedmix_fedfreq; paper: those and fedmix, fedmix_fedavg)
seeds = None                            # None: seed 1
sensitivity_rows = None                 # None: the profile's scope; []: none (a slice of GPU runs read back on a CPU)
network = "resnet9_fedmatch"            # paper profile's ResNet-9: resnet9_fedmatch (FedMatch's code's, no BatchNorm: the
                                        # reading) | resnet9 (BatchNorm after every conv: the alternative, its rows
                                        # under setting stream_dir0.1_resnet9_bn); quick runs the MNIST CNN

# %% tags=["plan"]
from fssl_core.job.parameters import check_notebook

check_notebook(globals(), "fedmix_streaming_fmnist")    # papermill's -p/-y values: declared names, the plan's types

from fssl_core.papers import fedmix
from fssl_core.profiles import get_profile

run_profile = get_profile(profile)
# every run this notebook reads, from the function the job's plan calls with the same parameters
# (papers/fedmix/plans.py: no training, no file written)
cells, sensitivity = fedmix.plans.streaming_fmnist(profile, device, precision=precision, methods=methods,
                                                   seeds=seeds, sensitivity_rows=sensitivity_rows, network=network)

# %%
import pandas as pd

from fssl_core.papers import display_names
from fssl_core.report.plots import save_figure
from fssl_core.report.tables import round_curves as curves_of
from fssl_core.job.cells import reproduce_cells
from fssl_core.report.tables import comparison_table, save_notebook_results

# the rows name the precision of CUDA runs beside the device ("cuda tf32"); each run's env.json holds the rest
results = reproduce_cells(cells, run_profile, device if precision == "fp32" else f"{device} {precision}")
claims = fedmix.streaming_claims(results) if {"fedmix_fedloss", "fedmatch"} <= set(results.method) else results.iloc[:0]
save_notebook_results(pd.concat([results, claims], ignore_index=True), "fedmix_streaming_fmnist", run_profile)
results.pivot_table(index="method", columns="metric", values="reproduced_value", sort=False)

# %% [markdown]
# Final and highest test accuracy (%), the round of the highest, and the megabytes sent in both
# directions over the run. Below, the journal's three claims, ours beside the paper's value
# (`best_accuracy_gap` in points, paper: about 0; `rounds_saved_to_best_acc`; `comm_reduction`,
# the fraction of the baseline's traffic saved).

# %%
comparison_table(claims)

# %% [markdown]
# ## What crosses the network (the communication claim)
#
# Counted in models per client and round, by construction of what each method sends (`algorithms/fedmix.py`,
# `algorithms/fedmatch.py`): FedMix sends ω_t down and ψ^k up, 2 models. FedMatch with the labels at the
# server sends σ and ψ down and ψ up (with σ's BatchNorm buffers), and its H = 2 helpers' ψ down every 10th
# round: 3 + 2/10 = 3.2 models. FedMix therefore sends 2/3.2 = 0.625 of FedMatch's bytes, a reduction of
# 0.375, at any protocol and seed, so the journal's "half the communication" does not hold under this
# reading of FedMatch. It would hold (2/4.2 = 0.48) if FedMatch's clients also uploaded σ, as they do with the
# labels at the clients (its Algorithm 1); with the labels at the server they train ψ alone, and the official
# code uploads what they train. The journal does not say what its FedMatch baseline sent.

# %% [markdown]
# Test accuracy per round. Beside this profile's curves, the paper protocol's runs that the run store holds (150
# rounds, trained on a GPU in TF32, one seed), each labelled with its network: FedMatch's ResNet-9 (the reading) and
# the BatchNorm ResNet-9 (the alternative, whose H100 runs are the `stream_dir0.1_resnet9_bn` rows). FedMix+FedFreq is
# dashed because it can lie on FedMix+FedLoss, by construction: with all 10 clients in every round FedFreq's weights
# are uniform (1/10), and FedLoss's w_k = (1 − p_k)/9, p_k client k's share of the round's losses, stay within
# 1/90 of 1/10 while no client holds more than twice the mean share, p_k ≤ 2/10 (a client at twice the mean: 0.089
# for 0.100; `learning/aggregate.py`); the table below gives the largest gap between the two curves.

# %%
fig = fedmix.streaming_figure(cells, run_profile, device, display_names=display_names())
save_figure(fig, "fedmix_streaming_fmnist", run_profile.name)
accuracy_curve = curves_of([c for c in cells if c.metric == "accuracy"])
by_method = accuracy_curve.pivot_table(index="round", columns="method", values="accuracy")
(by_method["fedmix_fedloss"] - by_method["fedmix_fedfreq"]).abs().describe()[["count", "mean", "max"]].rename(
    "|FedMix+FedLoss - FedMix+FedFreq| per round (points)") if {"fedmix_fedloss", "fedmix_fedfreq"} <= set(by_method) else "one of the two is not in this profile's scope"

# %% [markdown]
# ## Why FedMix trails SL here: a sensitivity table
#
# **SL is a ceiling for FedMix only while its clients contribute nothing, and only asymptotically.** Eq. 9 moves the
# global model by ω_{t+1} − ω_t = α(ψ_{t+1} − ω_t) + β(σ_{t+1} − ω_t), where σ_{t+1} − ω_t is one
# round of SL's own step taken from ω_t. Clients that return ψ_{t+1} = ω_t leave β = 0.3 of that step:
# FedMix then follows SL's curve from below, lagging it, by construction (arm B below measures the lag). Clients
# that do train move ψ_{t+1}, for better or worse, so the ceiling says nothing about them. It can pass SL only through ψ: only
# if the clients' unlabeled loss L_u moves ψ_{t+1} far enough, in a useful direction, to make up the
# (1 − β) of the supervised step the mix gives away.
#
# At quick (MNIST CNN, 50 rounds) FedMix-FedLoss and -FedFreq end far below SL, FedMix's own σ
# alone (the table above). No bug was found (ψ^k starts from ω_t, σ from ω_t, the mix takes ψ_{t+1},
# σ_{t+1}, ω_t; the CNN has no BatchNorm). The cause is the clients' L_u: no averaged prediction ȳ
# reaches τ = 0.8 (the FedMix-FedLoss run's mask rate below), so the pseudo-label term is 0, and the
# consistency between two near-uniform softmax outputs is tiny: the clients return ψ ≈ ω_t, and Eq. 9
# becomes ω_{t+1} = ω_t + β(σ_{t+1} − ω_t), SL's step times β = 0.3 (tests/test_fedmix.py checks this
# identity on a round). The sensitivity row `SL lr=3e-4 (beta*lr)` checks it over the run: it
# follows FedMix's curve.

# %%
from fssl_core.store import RunStore

fedloss = next((c for c in cells if c.method == "fedmix_fedloss" and c.metric == "accuracy" and c.configs), None)
fedloss_run = RunStore().load(fedloss.configs[0]) if fedloss else None
(pd.DataFrame(fedloss_run.metrics)[["round", "train_mask_rate", "train_pseudo_label_loss", "train_consistency_loss",
                                    "accuracy"]].head(20)
 if fedloss_run else "FedMix-FedLoss is not in this profile's scope")

# %% [markdown]
# Each row below changes one reading (of FedMix-FedLoss, or of a baseline beside it) and runs the
# streaming setting at quick's protocol **shortened to 20 rounds** (smoke: 2 rounds, two rows; headline:
# none), one seed; the table gives the accuracy (%) at round 20 and the best. The rows to read:
# λ_2, T and τ change nothing while no sample passes τ; `SL lr=3e-4 (beta*lr)` follows FedMix's curve;
# a larger learning rate lets pseudo-labels pass but leaves FedMix below SL at the same rate.
#
# Two rows depart from both papers on purpose: clients starting from the new σ_{t+1} (against
# Algorithm 1 line 13) and a 10-round SL warm-up before Eq. 9 (`fedmix_client_start`,
# `fedmix_warmup_rounds`). τ tested on the sharpened ŷ instead of ȳ was tried in-process and changed
# nothing (no field expresses it).
#
# **Reading kept, and the verdict.** None of the readings lifts FedMix to SL: under Eq. 9 FedMix
# gets only β of the supervised step each round, and its clients' L_u must make up the rest through ψ,
# which needs confident and correct pseudo-labels; at lr 1e-3 the CNN never gets there within the run. We therefore
# keep the papers' reading (ψ_t^k ← ω_t, no warm-up, λ_2 = 1, T = 0.5, τ = 0.8 on ȳ) and report that
# the journal's "FedMix above SL" and "FedMix ≈ FedMatch" do not hold on this setting **at quick**.
# What quick changes matters here: it swaps the paper protocol's ResNet-9 (FedMatch's code's, without BatchNorm, at
# its code's settings: READINGS.md; 150 rounds) for
# the small MNIST CNN (50 rounds), and whether a network's averaged predictions pass τ = 0.8 early is
# exactly what decides FedMix; the paper-protocol run needs a GPU, so the claims stay untested there.
#
# **BatchNorm.** ResNet-9's pseudo-labels do pass τ, and at the paper protocol (an H200,
# 2026-11-26, before the fix) they were wrong: from round 7 on, clients masked 86-99% of their samples
# while only 6% were masked and right, from a global model at 55-78%. The pseudo-label ȳ was computed
# in train mode, where BatchNorm normalises a client's batch with that batch's own statistics; on a
# Dirichlet-0.1 client one or two classes fill the batch and lose what tells them apart. Measured on
# ResNet-9 on a CPU, same model and views: 72.1% of client samples right in eval mode, 55.0% in train
# mode (the most skewed client: 66.7% vs 30.2%; near-balanced batches 72.4% vs 69.8%). A ResNet-9 at
# 1/8 width on a CPU (6 SL rounds, then 8 FedMix rounds at τ = 0.5) shows the feedback start: in train
# mode the share of masked pseudo-labels that are right fell from 81% to 36%, in eval mode from 83% to
# 64%, and neither copy passed SL. Every algorithm's targets now use BatchNorm's running statistics
# (`Context.target`, `fssl_core/algorithms/base.py`). The paper-protocol rerun on an H100 (TF32, one
# seed, `measurements/2026-11-26-h100/`, on the BatchNorm ResNet-9; its three finished runs are in `runs/` and in
# this table's `paper` rows under setting `stream_dir0.1_resnet9_bn`, device "cuda tf32") shows what the fix did
# and did not do: at rounds 10/50/100/140, 29-53% of the pseudo-labels FedMix-FedLoss keeps are right
# (6% before), yet still far fewer than the 66-83% of FedMatch's, and FedMix-FedLoss (best 73.2%) and
# FedMix-FedFreq (76.7%) stay below SL (79.85%). FedMatch's run stopped at round 145 of 150 when the
# GPU's time ran out (best 83.8% at round 140), so it has no paper row.
#
# **What is left of it (a narrow copy on a CPU: ResNet-9 at 1/8 width,
# `measurements/2026-11-26-cpu-fedmix-narrow/`).** Within a client's round ψ's trained forwards move its
# BatchNorm running statistics toward the client's skewed batches, and ȳ from ψ follows them: its accuracy
# falls with the step while the received ω_t's does not. Reading Eq. 8's ψ_t^k as the received model
# (`fedmix_teacher='received'`, exploratory) keeps the global model from decaying over 8 FedMix rounds
# (81% of kept pseudo-labels right against 56%), but FedMix still ends below SL there (3 seeds a side). The
# paper-protocol run of that reading is a GPU's work
# (`python -m studies.fedmix.train_fig8 --set fedmix_teacher=received`).

# %%
sensitivity_results = reproduce_cells(sensitivity, run_profile, device) if sensitivity else results.iloc[:0]
save_notebook_results(pd.concat([results, claims, sensitivity_results], ignore_index=True), "fedmix_streaming_fmnist",
                      run_profile)
sensitivity_results.pivot_table(index="setting", columns="metric", values="reproduced_value", sort=False)

# %% [markdown]
# ## Why FedMix trails SL: the arms
#
# The gap split into arms on the narrow CPU copy (`measurements/2026-11-27-fedmix-arms`: ResNet-9 at 1/8 width
# with BatchNorm, streaming Fashion-MNIST, 20 rounds, the first 6 SL warm-up, τ = 0.5; exploratory, no paper's
# protocol), each FedMix-FedLoss with one change: A SL, B passive clients (λ_1 = λ_2 = 0), C the default, D ȳ from
# the received ω_t, E the BN-free network, F the tether λ_L1 = 10. Their expectations were committed before any run
# (`studies/fedmix/arms.py`). The first table: ω's test accuracy at the last round and over the last 10
# (mean, std, n runs), ψ's and σ's over the last 10; the second: each expectation by the claim test (Welch, 95%).
# What they show, and no more:
# - Passive clients (B) end below SL (A): Eq. 9 with ψ = ω_t is SL's step shrunk by β, so at 20 rounds B still
#   lags SL. SL is FedMix's ceiling here only in the limit.
# - The default (C) ends below B, its clients' ψ far below its σ: the clients' models pull ω down, beyond the lag.
# - ȳ from the received ω_t (D) ends above C: the teacher the client trains is part of C's shortfall. With three
#   runs these two stayed undecided (C's runs spread from 41.0 to 71.6); seeds 4-6 of C and D were added after
#   reading them, for the same two expectations, and decide both on their own tests at 5% (`n` says how many runs
#   a row holds). Tested together, Holm's step-down over the six expectations (`holm`) keeps none of these holds:
#   each passed its own test only, and C's and D's on seeds added after looking.
# - The tether (F) and the BN-free network (E) are not shown to move C (undecided; the power column says what they
#   could detect). E does not isolate BatchNorm: its σ, the server's supervised part, trains slower on the BN-free
#   narrow network, and two of its three runs end at chance once their clients' pseudo-labels pass τ.

# %%
from fssl_core.paths import project_root

arms_dir = project_root() / "measurements" / "2026-11-27-fedmix-arms"
arms = pd.read_csv(arms_dir / "arms.csv")
arms[["arm", "final", "final_std", "last10", "last10_std", "n", "psi_last10", "sigma_last10"]].round(2)

# %%
pd.read_csv(arms_dir / "expectations.csv", keep_default_na=False)
