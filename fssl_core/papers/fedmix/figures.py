"""The FedMix figure notebooks' shared steps: publish a figure's measured cells with its claims, draw its curves."""
from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd

from ...report.plots import round_curves as plot_round_curves, save_figure
from ...profiles import PROFILES, Profile
from ...report.claim_test import MIN_SEEDS
from ...data.availability import dataset_available
from ...report.tables import Cell, comparison_table, round_curves, save_notebook_results
from .cells import DISPLAY_NAMES, NETWORKS, PAPER, streaming_cells
from .claims import cifar_claims


def publish_cifar_figure(notebook: str, results: pd.DataFrame, profile: Profile) -> pd.DataFrame:
    """A CIFAR-10 figure's measured cells (job.cells.reproduce_cells' rows) with its claims, saved as
    results/<notebook>.csv; the comparison table."""
    frame = pd.concat([results, cifar_claims(results)], ignore_index=True)
    save_notebook_results(frame, notebook, profile)
    return comparison_table(frame)


def draw_cifar_figure(notebook: str, cells: list[Cell], profile: Profile, device: str) -> None:
    """One accuracy-per-round panel per table of the figure, a line per cell (method, setting, N_s)."""
    if not dataset_available("cifar10"):
        print("cifar10: needs-data")
        return
    for table in dict.fromkeys(c.table for c in cells if c.paper == PAPER):
        curves = round_curves([c for c in cells if c.table == table and c.metric == "accuracy" and c.paper == PAPER])
        curves["method"] = (curves.method.map(lambda m: DISPLAY_NAMES.get(m, m)) + " " + curves.setting
                            + " N_s=" + curves.labeled)
        fig, _ = plot_round_curves(curves, title=f"{table}: CIFAR-10 (profile {profile.name}, {device})")
        save_figure(fig, f"{notebook}_{table}", profile.name)


# FedFreq's line is dashed: with every client in every round (the streaming setting) its weights are uniform, and
# FedLoss's (1 − p_k)/(K − 1) move from 1/K by at most 1/(K(K − 1)) while each loss share p_k ≤ 2/K, so the two
# curves can lie on each other
STREAMING_STYLES = {"fedmix_fedfreq": "--"}
NETWORK_NAMES = {NETWORKS["resnet9_fedmatch"]: "FedMatch's ResNet-9", NETWORKS["resnet9"]: "BatchNorm ResNet-9"}


def streaming_figure(cells: Sequence[Cell], profile: Profile, device: str,
                     display_names: Mapping[str, str] | None = None):
    """Fig. 8's test accuracy per round: `cells` (the notebook's, at `profile`) in one panel and, beside them at a
    reduced profile, the paper protocol's runs on a GPU in TF32 (each network's, under its setting) that the run
    store holds: only finished runs are drawn, and nothing here trains."""
    paper_cells = [] if profile.protocol == "paper" else [
        c for network in NETWORKS for c in streaming_cells(PROFILES["paper"], "cuda", precision="tf32", network=network)]
    title, paper_title = f"profile {profile.name}, {device}", "paper protocol (150 rounds, cuda tf32)"
    names = dict(display_names or DISPLAY_NAMES)
    here = round_curves([c for c in cells if c.metric == "accuracy"])
    paper = round_curves([c for c in paper_cells if c.metric == "accuracy"])
    colors = {m: f"C{i}" for i, m in enumerate(dict.fromkeys([*DISPLAY_NAMES, *here.method, *paper.method]))}
    fig, axes = plt.subplots(1, 2 if len(paper) else 1, figsize=(10.4 if len(paper) else 5.2, 3.6), squeeze=False)
    plot_round_curves(here, title=title, display_names=names, styles=STREAMING_STYLES, colors=colors, ax=axes[0][0])
    if len(paper):
        label = {(m, s): f"{names.get(m, m)} ({NETWORK_NAMES.get(s, s)})" for m, s in zip(paper.method, paper.setting)}
        plot_round_curves(paper.assign(method=[label[k] for k in zip(paper.method, paper.setting)]), title=paper_title,
                          styles={label[k]: STREAMING_STYLES.get(k[0], "-") for k in label},
                          colors={label[k]: colors[k[0]] for k in label}, ax=axes[0][1])
    fig.suptitle("streaming non-IID Fashion-MNIST (journal Fig. 8)", fontsize=10)
    note = _weighting_note(here, paper, cells)
    if note:
        fig.text(0.5, 0.005, textwrap.fill(note, 150), ha="center", va="bottom", fontsize=7.5)
    fig.tight_layout(rect=(0, 0.12 if note else 0, 1, 1))
    return fig


def _weighting_note(here: pd.DataFrame, paper: pd.DataFrame, cells: Sequence[Cell]) -> str:
    """Why FedFreq and FedLoss lie on each other in one panel and apart in the other, where they do: with all K
    clients in every round FedLoss's weight (1 − p_k)/(K − 1) is FedFreq's 1/K plus (1 − K p_k)/(K(K − 1)), within
    1/(K(K − 1)) while each loss share p_k ≤ 2/K; and a panel of one seed a method cannot tell a gap from
    seed-to-seed spread."""
    both = {"fedmix_fedfreq", "fedmix_fedloss"}
    if not (both <= set(here.method) and both <= set(paper.method)):
        return ""
    clients = next(cfg.clients for c in cells for cfg in c.configs)
    seeds = int(paper[paper.method.isin(both)].n_runs.min())
    seeds_here = int(here[here.method.isin(both)].n_runs.min())
    if seeds >= MIN_SEEDS:      # the gap is then tested in the claims, not a note's to explain
        return ""
    return (f"FedFreq and FedLoss: with all K = {clients} clients every round, FedLoss's weight (1 − p_k)/(K − 1) "
            f"is within 1/(K(K − 1)) = {1 / (clients * (clients - 1)):.1%} of FedFreq's 1/K while a client's loss share "
            f"p_k ≤ 2/K (left: {seeds_here} seeds, the curves on each other); right: {seeds} seed"
            f"{'s' if seeds > 1 else ''} a method, so the gap there is untested (n < {MIN_SEEDS}), not a measured difference between the weightings")
