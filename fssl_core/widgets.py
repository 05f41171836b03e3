"""Interactive explorers for notebooks. Each draws through a pure figure function first, so a
notebook reads well without a kernel, and its callback can be driven headlessly in tests.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .algorithms.fedsiam import tau_schedule


def upload_relative_to_mt(taus: Sequence[float]) -> np.ndarray:
    """Per round, a FedSiam-D client's upload relative to FedSiam-MT's (target + whole online net),
    counting the online net's share as τ: (1 + τ) / 2. FedSiam-Π sends 1/2, MT 1."""
    return (1.0 + np.asarray(taus, dtype=float)) / 2.0


def plot_tau_curve(curve: str, mu: float, phi_g: int, varphi_g: int, rounds: int,
                   measured: Sequence[float] | None = None, ax=None):
    """τ per round (Eq. 11 or 12, clipped to [0, 1]) and the upload it implies; `measured` overlays
    a finished run's per-round fraction of online-net parameters sent. Returns (fig, ax)."""
    taus = tau_schedule(curve, rounds, phi_g, varphi_g, mu)
    r = np.arange(1, rounds + 1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
    else:
        fig = ax.figure
    ax.step(r, taus, where="mid", label=f"τ ({curve}); mean {np.mean(taus):.3f} vs 1 − μ = {1 - mu:.3f}")
    rel = upload_relative_to_mt(taus)
    ax.plot(r, rel, color="#2ca02c", lw=1,
            label=f"upload / FedSiam-MT; mean {rel.mean():.3f} (Π: 0.5)")
    if measured is not None:
        ax.plot(np.arange(1, len(measured) + 1), measured, "o", ms=3, color="#d62728",
                label=f"measured online fraction; mean {np.mean(measured):.3f}")
    ax.set_xlabel("round $R_g$")
    ax.set_ylim(-0.05, 1.1)
    ax.set_title(f"μ={mu}, φ_g={phi_g}" + (f", ϕ_g={varphi_g}" if curve == "rectangle" else "") + f", R_G={rounds}",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig, ax


class TauExplorer:
    """Sliders for curve, μ, φ_g, ϕ_g, R_G, and optionally a finished FedSiam-D run's measurements.

    `runs` maps a label to per-round measured online-upload fractions (e.g. from a run's
    metrics.jsonl). `update(**values)` is the callback the widgets call; tests call it directly.
    """

    def __init__(self, runs: dict[str, Sequence[float]] | None = None):
        import ipywidgets as w

        self.runs = dict(runs or {})
        self.curve = w.ToggleButtons(options=["linear", "rectangle"], description="curve")
        self.mu = w.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.05, description="μ")
        self.phi_g = w.IntSlider(value=3, min=0, max=100, description="φ_g")
        self.varphi_g = w.IntSlider(value=40, min=1, max=200, description="ϕ_g")
        self.rounds = w.IntSlider(value=50, min=2, max=300, description="R_G")
        self.run = w.Dropdown(options=["(none)", *self.runs], description="run")
        self.output = w.Output()
        self.figure = None
        for control in (self.curve, self.mu, self.phi_g, self.varphi_g, self.rounds, self.run):
            control.observe(lambda _change: self.update(), names="value")
        self.widget = w.VBox([w.HBox([self.curve, self.run]), self.mu, self.phi_g, self.varphi_g, self.rounds,
                              self.output])

    def update(self, **values):
        for name, value in values.items():
            getattr(self, name).value = value     # each assignment re-enters update() via observe
        measured = self.runs.get(self.run.value)
        varphi_g = max(self.varphi_g.value, self.phi_g.value + 1)
        if self.figure is not None:
            plt.close(self.figure)
        self.figure, ax = plot_tau_curve(self.curve.value, self.mu.value, self.phi_g.value, varphi_g,
                                         self.rounds.value, measured)
        plt.close(self.figure)          # shown through the Output widget, not a second time by pyplot
        self.output.clear_output(wait=True)
        with self.output:
            from IPython.display import display
            display(self.figure)
        return self.figure, ax
