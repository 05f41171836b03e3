"""Figure functions: pure, each returns (fig, ax); notebooks save them with `save_figure`."""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .paths import figures_dir


def paper_vs_reproduced(frame: pd.DataFrame, title: str = ""):
    """Grouped bars: the paper's value and ours (± std over seeds) for every cell with a value."""
    rows = frame.reset_index(drop=True)
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
