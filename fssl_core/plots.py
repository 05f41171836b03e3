"""Figure functions: pure, each returns (fig, ax); notebooks save them with `save_figure`."""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .paths import figures_dir


def paper_vs_reproduced(frame: pd.DataFrame, title: str = ""):
    """Grouped bars: the paper's value and ours (± std over seeds) for every accuracy cell."""
    rows = frame[frame.metric == "accuracy"].reset_index(drop=True)
    labels = [f"{r.method}\n{r.setting} {r.dataset}" for r in rows.itertuples()]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(rows) + 1.5), 3.6))
    ax.bar(x - 0.2, rows.paper_value.astype(float), width=0.4, label="paper", color="#999999")
    ax.bar(x + 0.2, rows.reproduced_value.astype(float), width=0.4, label="reproduced",
           yerr=rows.reproduced_std.astype(float).fillna(0), color="#1f77b4", capsize=3)
    for xi, status in zip(x, rows.status):
        if status not in ("ok", "reduced"):
            ax.text(xi, 1, status, rotation=90, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig, ax


def save_figure(fig, name: str, profile: str) -> Path:
    """figures/<name>.png, written atomically (a half-written figure never replaces a good one)."""
    path = figures_dir(profile) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=120, format="png")
    os.replace(tmp, path)
    return path


YLABELS = {"accuracy": "test accuracy (%)", "pseudo_label_accuracy": "pseudo-label accuracy, kept samples (%)",
           "pseudo_label_accuracy_all": "pseudo-label accuracy, all samples (%)",
           "pseudo_label_accuracy_all_classifier": "pseudo-label accuracy, classifier head (%)",
           "selected": "samples passing the threshold, per client"}


def round_curves(curves: pd.DataFrame, key: str = "accuracy", title: str = "", target: float | None = None):
    """A per-round metric, one line per method (columns: method, round, `key`; the mean over
    seeds), with an optional dotted target line as FedSiam's Figure 5."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for method, part in curves.groupby("method", sort=False):
        ax.plot(part["round"], part[key], label=method, lw=1.4)
    if target is not None:
        ax.axhline(target, ls=":", color="k", lw=1, label=f"target {target:g}%")
    ax.set_xlabel("global round")
    ax.set_ylabel(YLABELS.get(key, key))
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig, ax


def accuracy_vs_mu(frame: pd.DataFrame, dataset: str, title: str = ""):
    """Figure 6: FedSiam-D's accuracy against μ (rows with setting 'mu=<μ>') and the upload volume
    on a second axis; reference methods (setting 'reference') as horizontal lines."""
    rows = frame[(frame.dataset == dataset)]
    mu_rows = rows[rows.setting.str.startswith("mu=")].assign(mu=lambda f: f.setting.str[3:].astype(float))
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    acc = mu_rows[mu_rows.metric == "accuracy"].sort_values("mu")
    ax.errorbar(acc.mu, acc.reproduced_value, yerr=acc.reproduced_std.fillna(0), marker="o", label="FedSiam-D",
                color="#1f77b4", capsize=3)
    refs = rows[(rows.setting == "reference") & (rows.metric == "accuracy")]
    for (method, value), ls in zip(zip(refs.method, refs.reproduced_value), ["--", "-.", ":", (0, (5, 1))]):
        ax.axhline(value, ls=ls, color="#555555", lw=1, label=method)
    ax.set_xlabel("μ (target reduction of online-net uploads)")
    ax.set_ylabel("test accuracy (%)")
    up = mu_rows[mu_rows.metric == "upload_mb"].sort_values("mu")
    ax2 = ax.twinx()
    ax2.plot(up.mu, up.reproduced_value, marker="s", color="#d62728", lw=1, label="upload (MB)")
    ax2.set_ylabel("upload over the run (MB)", color="#d62728")
    ax.set_title(title, fontsize=10)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig, ax


def latent_scatter(points: np.ndarray, labels: np.ndarray, title: str = "", ax=None):
    """2-D points coloured by label, with each label's centroid as a star (FedAnchor Fig. 5)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(3.6, 3.4))
    else:
        fig = ax.figure
    palette = sns.color_palette("tab10", n_colors=max(10, int(labels.max()) + 1))
    for c in np.unique(labels):
        mine = points[labels == c]
        ax.scatter(mine[:, 0], mine[:, 1], s=3, color=palette[int(c)], alpha=0.6, label=str(c))
        ax.scatter(*mine.mean(0), marker="*", s=160, color=palette[int(c)], edgecolor="k", linewidth=0.6)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    return fig, ax
