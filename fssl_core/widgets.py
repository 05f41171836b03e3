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


# --- Dirichlet-μ partitions (FedMix Fig. 3) ----------------------------------------------------------

def client_class_counts(partition, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """[clients, classes] sample counts of each client's data (labeled and unlabeled)."""
    return np.stack([np.bincount(labels[np.concatenate([c.labeled, c.unlabeled])], minlength=num_classes)
                     for c in partition.clients])


def partition_summary(counts: np.ndarray, labels: np.ndarray, num_classes: int) -> dict[str, float]:
    """Mean classes per client holding more than 1% of its data, and the mean total-variation
    distance ½‖p_k − p‖₁ of each client's label distribution p_k to the training set's p
    (0: the same mix; 1: disjoint classes); client sizes min and max."""
    sizes = counts.sum(1)
    props = counts / np.maximum(sizes, 1)[:, None]
    overall = np.bincount(labels, minlength=num_classes) / len(labels)
    return {"classes_above_1pct": float((props > 0.01).sum(1).mean()),
            "mean_tv_distance": float(0.5 * np.abs(props - overall).sum(1).mean()),
            "min_client_size": int(sizes.min()), "max_client_size": int(sizes.max())}


def dirichlet_partition_of(labels: np.ndarray, num_classes: int, mu: float, clients: int, seed: int,
                           server_labeled: int = 1000):
    """FedMix's non-IID split, the one its runs use (`server_dirichlet`: N_s class-balanced labels at
    the server, the rest over the clients by a per-class Dirichlet(μ))."""
    from .data.partition import build_partition
    return build_partition("server_dirichlet", labels, num_classes=num_classes, num_clients=clients, seed=seed,
                           dirichlet_alpha=mu, server_labeled=server_labeled, server_balanced=True)


def plot_class_proportions(counts: np.ndarray, summary: dict[str, float] | None = None, title: str = "", ax=None):
    """Stacked bars of each client's class proportions (the papers' Fig. 3). Returns (fig, ax)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
    else:
        fig = ax.figure
    props = counts / np.maximum(counts.sum(1), 1)[:, None]
    x = np.arange(len(counts))
    bottom = np.zeros(len(counts))
    colors = plt.get_cmap("tab10" if counts.shape[1] <= 10 else "tab20")
    for c in range(counts.shape[1]):
        ax.bar(x, props[:, c], bottom=bottom, width=0.9, color=colors(c % colors.N), label=str(c))
        bottom += props[:, c]
    ax.set_xlabel("client")
    ax.set_ylabel("class proportion")
    ax.set_ylim(0, 1)
    if summary:
        title += (f"\nclasses >1% per client {summary['classes_above_1pct']:.2f}, mean TV to global "
                  f"{summary['mean_tv_distance']:.2f}, sizes {summary['min_client_size']}–{summary['max_client_size']}")
    ax.set_title(title, fontsize=9)
    if counts.shape[1] <= 10:
        ax.legend(fontsize=6, ncol=counts.shape[1], loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.tight_layout()
    return fig, ax


class DirichletExplorer:
    """Sliders for μ (log scale), number of clients, dataset and seed over FedMix's Dirichlet split.

    `datasets` maps a name to (training labels, number of classes). `update(**values)` is the
    widgets' callback; tests call it directly.
    """

    def __init__(self, datasets: dict[str, tuple[np.ndarray, int]]):
        import ipywidgets as w

        if not datasets:
            raise ValueError("DirichletExplorer: datasets is empty; give at least one name -> (labels, classes)")
        self.datasets = datasets
        self.dataset = w.Dropdown(options=list(datasets), description="dataset")
        self.mu = w.FloatLogSlider(value=0.1, base=10, min=-2, max=3, step=0.1, description="μ")
        self.clients = w.IntSlider(value=10, min=2, max=100, description="clients")
        self.seed = w.IntText(value=1, description="seed")
        self.output = w.Output()
        self.figure = None
        self.summary: dict[str, float] = {}
        for control in (self.dataset, self.mu, self.clients, self.seed):
            control.observe(lambda _change: self.update(), names="value")
        self.widget = w.VBox([w.HBox([self.dataset, self.seed]), self.mu, self.clients, self.output])

    def update(self, **values):
        for name, value in values.items():
            getattr(self, name).value = value     # each assignment re-enters update() via observe
        labels, classes = self.datasets[self.dataset.value]
        partition = dirichlet_partition_of(labels, classes, self.mu.value, self.clients.value, self.seed.value)
        counts = client_class_counts(partition, labels, classes)
        self.summary = partition_summary(counts, labels, classes)
        if self.figure is not None:
            plt.close(self.figure)
        self.figure, ax = plot_class_proportions(
            counts, self.summary, title=f"{self.dataset.value}, μ={self.mu.value:.3g}, K={self.clients.value}")
        plt.close(self.figure)          # shown through the Output widget, not a second time by pyplot
        self.output.clear_output(wait=True)
        with self.output:
            from IPython.display import display
            display(self.figure)
        return self.figure, ax
