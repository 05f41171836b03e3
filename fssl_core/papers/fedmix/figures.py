"""The CIFAR-10 figure notebooks' shared steps: run a figure's cells with its claims, and draw its curves."""
from __future__ import annotations

import pandas as pd

from ...report.plots import round_curves as plot_round_curves, save_figure
from ...profiles import Profile
from ...report.tables import Cell, comparison_table, dataset_available, reproduce_cells, round_curves, save_notebook_results
from .cells import DISPLAY_NAMES, PAPER
from .claims import cifar_claims


def reproduce_cifar_figure(notebook: str, cells: list[Cell], profile: Profile, device: str) -> pd.DataFrame:
    """Run a CIFAR-10 figure's cells, add its claims, save results/<notebook>.csv; the comparison table."""
    results = reproduce_cells(cells, profile, device)
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
