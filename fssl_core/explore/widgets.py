"""Interactive explorers for notebooks. Each draws through a pure figure function first, so a
notebook reads well without a kernel, and its callback can be driven headlessly in tests.

Both explorers keep one contract (`_Explorer`): `update(**values)` checks every name and value
first, sets them all with the widgets' own callbacks held off, applies the constraints between
values (ϕ_g > φ_g; no more clients than the data can give 10 samples each), then draws once. No
value a widget offers raises: what was adjusted, and what could not be drawn, is printed above the
figure and kept in `notes`, and `figure` is always the figure on display.
"""
from __future__ import annotations

import textwrap
from contextlib import contextmanager
from numbers import Integral, Real
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from matplotlib.collections import PolyCollection

from ..algorithms.fedsiam import tau_schedule
from ..data import partition as _partition
from ..data.partition import DirichletDrawError


def slider_values(slider) -> np.ndarray:
    """The values a slider offers: min, min + step, ..., max (a log slider: base to those powers)."""
    count = int(round((slider.max - slider.min) / slider.step)) + 1
    points = np.round(np.linspace(slider.min, slider.max, count), 10)
    return slider.base ** points if hasattr(slider, "base") else points


def three_digits(x: float) -> str:
    """x to 3 significant digits without an exponent: 0.0126, 0.1, 1000 (μ in titles and messages)."""
    return np.format_float_positional(x, precision=3, unique=True, fractional=False, trim="-")


def _limits(control) -> tuple[str, tuple]:
    """A control's kind and its own bounds (or options), read before any constraint narrows them."""
    if hasattr(control, "options"):
        return "options", tuple(control.options)
    low, high = (control.base ** control.min, control.base ** control.max) if hasattr(control, "base") \
        else (control.min, control.max)
    return ("int" if isinstance(control.value, Integral) else "float"), (low, high)


class _Explorer:
    """What both explorers share. A subclass builds its widgets, calls `_setup(controls, labels)`, and
    defines `_release()` (widen the bounds its constraints narrow), `_constrain() -> {name: reason}`
    (narrow them for the current values; a value clamped by it is reported with its reason) and
    `_draw() -> (fig, ax, notes)` (compute from the widgets' values, never raise for them)."""

    def _setup(self, controls: dict, labels: dict[str, str]):
        self.controls = controls                  # name -> widget, the names update() accepts
        self.labels = labels                      # name -> the paper's symbol, for messages
        self._limits = {name: _limits(c) for name, c in controls.items()}
        self._holding = False
        self.figure = None
        self.notes: list[str] = []
        for control in controls.values():
            control.observe(self._on_change, names="value")
        with self._held():
            self._constrain()

    def _on_change(self, _change):
        if not self._holding:                     # a person moved a widget: redraw; update()'s own sets are held
            self.update()

    @contextmanager
    def _held(self):
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

    def _check(self, name, value):
        where = f"{type(self).__name__}.update"
        if name not in self.controls:
            raise ValueError(f"{where}: unknown name {name!r}; allowed: {', '.join(self.controls)}")
        kind, limits = self._limits[name]
        if kind == "options":
            if not any(value == option for option in limits):
                raise ValueError(f"{where}: {name}={value!r} must be one of {', '.join(map(repr, limits))}")
            return
        low, high = limits
        number = isinstance(value, Integral if kind == "int" else Real) and not isinstance(value, bool)
        if not (number and low <= value <= high):
            within = f"an int within [{low}, {high}]" if kind == "int" else f"a number within [{low:g}, {high:g}]"
            raise ValueError(f"{where}: {name}={value!r} must be {within}")

    def update(self, **values):
        """Set the named widgets' values (all or none: every name and value is checked first), apply
        the constraints between them, and draw once. Returns (fig, ax) of the figure on display."""
        for name, value in values.items():
            self._check(name, value)
        wanted = {name: control.value for name, control in self.controls.items()} | values
        with self._held():
            self._release()                       # so no value is clamped by a bound its old neighbours set
            for name, value in values.items():
                self.controls[name].value = value
            reasons = self._constrain()
        self.notes = [f"{self.labels[name]}={wanted[name]} → {self.controls[name].value}: {reason}"
                      for name, reason in reasons.items() if self.controls[name].value != wanted[name]]
        fig, ax, notes = self._draw()
        self.notes += notes
        if self.figure is not None and self.figure is not fig:
            plt.close(self.figure)
        self.figure = fig
        plt.close(fig)                  # shown through the Output widget, not a second time by pyplot
        self.output.clear_output(wait=True)
        with self.output:
            for note in self.notes:
                print(note)
            display(fig)
        return fig, ax


def upload_relative_to_mt(taus: Sequence[float]) -> np.ndarray:
    """Per round, a FedSiam-D client's upload relative to FedSiam-MT's (target + whole online net),
    counting the online net's share as τ: (1 + τ) / 2. FedSiam-Π sends 1/2, MT 1."""
    return (1.0 + np.asarray(taus, dtype=float)) / 2.0


def plot_tau_curve(curve: str, mu: float, phi_g: int, varphi_g: int, rounds: int,
                   measured: Sequence[float] | None = None, ax=None, measured_name: str = ""):
    """τ per round (Eq. 11 or 12, clipped to [0, 1]) and the upload it implies; `measured` overlays
    a finished run's per-round fraction of online-net parameters sent, `measured_name` says which run
    (its legend entry). Returns (fig, ax)."""
    taus = tau_schedule(curve, rounds, phi_g, varphi_g, mu)
    r = np.arange(1, rounds + 1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
    else:
        fig = ax.figure
    ax.step(r, taus, where="mid", label=f"τ ({curve}); mean {np.mean(taus):.3f} vs 1 − μ = {1 - mu:.3f}")
    rel = upload_relative_to_mt(taus)
    ax.plot(r, rel, color="#2ca02c", lw=1,
            label=f"upload / FedSiam-MT; mean {rel.mean():.3f} (Π: 0.5)")
    if measured is not None and len(measured):
        ax.plot(np.arange(1, len(measured) + 1), measured, "o", ms=3, color="#d62728",
                label=f"measured online fraction{f' ({measured_name})' if measured_name else ''}; "
                      f"mean {np.mean(measured):.3f}")
    ax.set_xlabel("round $R_g$")
    ax.set_ylabel("fraction of the online net")
    ax.set_ylim(-0.05, 1.1)
    varphi = f", ϕ_g={varphi_g}" if curve == "rectangle" else ""
    ax.set_title(f"μ={mu:g}, φ_g={phi_g}{varphi}, R_G={rounds}", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16))     # below the axes: no dot hidden
    fig.tight_layout()
    return fig, ax


class TauExplorer(_Explorer):
    """Sliders for curve, μ, φ_g, ϕ_g, R_G, and optionally a finished FedSiam-D run's measurements.

    `runs` maps a label to per-round measured online-upload fractions (e.g. from a run's
    metrics.jsonl). `update(**values)` is the callback the widgets call; tests call it directly.
    ϕ_g's slider starts one above φ_g (Eq. 12's plateau lies strictly between them; a run's config
    requires ϕ_g > φ_g too), and is greyed out for the linear curve, which does not read it.
    """

    def __init__(self, runs: dict[str, Sequence[float]] | None = None):
        import ipywidgets as w      # ipywidgets: for the controls alone; the figure functions draw without it

        self.runs = dict(runs or {})
        sliders = dict(continuous_update=False)   # redraw on release, not at every pixel of a drag
        self.curve = w.ToggleButtons(options=["linear", "rectangle"], description="curve")
        self.mu = w.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.05, description="μ", **sliders)
        self.phi_g = w.IntSlider(value=3, min=0, max=100, description="φ_g", **sliders)
        self.varphi_g = w.IntSlider(value=40, min=1, max=200, description="ϕ_g", **sliders)
        self.rounds = w.IntSlider(value=50, min=2, max=300, description="R_G", **sliders)
        self.run = w.Dropdown(options=["(none)", *self.runs], description="run")
        self.output = w.Output()
        self._setup({"curve": self.curve, "mu": self.mu, "phi_g": self.phi_g, "varphi_g": self.varphi_g,
                     "rounds": self.rounds, "run": self.run},
                    {"curve": "curve", "mu": "μ", "phi_g": "φ_g", "varphi_g": "ϕ_g", "rounds": "R_G", "run": "run"})
        self.widget = w.VBox([w.HBox([self.curve, self.run]), self.mu, self.phi_g, self.varphi_g, self.rounds,
                              self.output])

    def _release(self):
        self.varphi_g.min = self._limits["varphi_g"][1][0]

    def _constrain(self):
        self.varphi_g.min = self.phi_g.value + 1
        self.varphi_g.disabled = self.curve.value != "rectangle"
        return {"varphi_g": f"ϕ_g must exceed φ_g = {self.phi_g.value} (Eq. 12's plateau lies between them)"}

    def _draw(self):
        curve, mu, phi_g, varphi_g, rounds = (self.curve.value, self.mu.value, self.phi_g.value,
                                              self.varphi_g.value, self.rounds.value)
        fig, ax = plot_tau_curve(curve, mu, phi_g, varphi_g, rounds, self.runs.get(self.run.value))
        return fig, ax, tau_notes(curve, mu, phi_g, varphi_g, rounds, ax.lines[0].get_ydata())


def tau_notes(curve: str, mu: float, phi_g: int, varphi_g: int, rounds: int, taus) -> list[str]:
    """What the explorer prints above a τ curve: τ never above 0 and why, or τ clipped at 1 (Eqs. 11-12 exceed 1)."""
    taus = np.asarray(taus, dtype=float)
    if not taus.any():
        if mu >= 1:
            why = "μ = 1 asks for no online upload, 1 − μ = 0"
        elif curve == "linear":
            why = f"Eq. 11 is 0 up to round φ_g = {phi_g} and at R_G = {rounds}, with no round between"
        else:
            why = (f"Eq. 12's plateau covers the rounds strictly between φ_g = {phi_g} and ϕ_g = {varphi_g} "
                   f"up to R_G = {rounds}: none")
        return [f"τ is 0 in every round ({why}): FedSiam-D uploads no online layers, as FedSiam-Π"]
    clipped = int((taus >= 1).sum())
    if clipped:
        return [f"τ clipped to 1 in {clipped} of {rounds} rounds (Eq. {11 if curve == 'linear' else 12} exceeds "
                f"1 there): its mean is {taus.mean():.3f} against 1 − μ = {1 - mu:.3f}"]
    return []


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


FEDMIX_SERVER_LABELED = 1000                    # N_s: FedMix's class-balanced labeled set at the server
# the runs' rule: the split is redrawn until every client has this many
MIN_CLIENT_SIZE = _partition.partition_parameters()["min_client_size"].default


def dirichlet_partition_of(labels: np.ndarray, num_classes: int, mu: float, clients: int, seed: int,
                           server_labeled: int = FEDMIX_SERVER_LABELED):
    """FedMix's non-IID split, the one its runs use (`server_dirichlet`: N_s class-balanced labels at
    the server, the rest over the clients by a per-class Dirichlet(μ), every client ≥ MIN_CLIENT_SIZE).
    Raises DirichletDrawError where no draw meets that rule, as a run would."""
    return _partition.build_partition("server_dirichlet", labels, num_classes=num_classes, num_clients=clients,
                                      seed=seed, dirichlet_alpha=mu, server_labeled=server_labeled,
                                      server_balanced=True, min_client_size=MIN_CLIENT_SIZE)


def plot_class_proportions(counts: np.ndarray, summary: dict[str, float] | None = None, title: str = "", ax=None):
    """Stacked bars of each client's class proportions (the papers' Fig. 3). Returns (fig, ax)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
    else:
        fig = ax.figure
    props = counts / np.maximum(counts.sum(1), 1)[:, None]
    left = np.arange(len(counts)) - 0.45                 # bars 0.9 wide, centred on the client's index
    bottom = np.zeros(len(counts))
    colors = plt.get_cmap("tab10" if counts.shape[1] <= 10 else "tab20")
    for c in range(counts.shape[1]):                     # one collection per class: 100 clients draw in
        top = bottom + props[:, c]                       # milliseconds, where 1,000 bar patches take 0.5 s
        corners = [(left, bottom), (left, top), (left + 0.9, top), (left + 0.9, bottom)]
        ax.add_collection(PolyCollection(np.stack([np.stack(xy, 1) for xy in corners], 1),
                                         facecolors=colors(c % colors.N), linewidths=0, label=str(c)))
        bottom = top
    ax.autoscale_view()                                  # the margins ax.bar would give
    ax.set_xlabel("client")
    ax.set_ylabel("class proportion")
    ax.set_ylim(0, 1)
    if summary:
        title += (f"\nclasses >1% per client {summary['classes_above_1pct']:.2f}, mean TV to global "
                  f"{summary['mean_tv_distance']:.2f}, sizes {summary['min_client_size']}–{summary['max_client_size']}")
    ax.set_title(title, fontsize=9)
    if counts.shape[1] <= 10:
        # beside the axes, one class a line: under them it met the "client" label
        ax.legend(title="class", fontsize=7, title_fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5),
                  frameon=False)
    fig.tight_layout()
    return fig, ax


def plot_no_partition(title: str, message: str, ax=None):
    """The figure the Dirichlet explorer shows where no partition can be drawn: the title's values and
    why, in place of the bars. Returns (fig, ax)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
    else:
        fig = ax.figure
    ax.axis("off")
    ax.set_title(f"{title}: no partition", fontsize=9)
    ax.text(0.5, 0.5, textwrap.fill(message, 80), ha="center", va="center", fontsize=8, transform=ax.transAxes)
    return fig, ax


def _largest(draws, low: int, high: int) -> int | None:
    """The largest k in [low, high] with draws(k), by bisection (draws is taken to be true below some
    k); None where draws(low) is false. A returned k has been drawn."""
    if high < low or not draws(low):
        return None
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if draws(mid) else (low, mid - 1)
    return low


def _smallest(draws, values: Sequence[float]) -> float | None:
    """The smallest of the ascending `values` with draws(value), by bisection; None where even the last
    is false. A returned value has been drawn."""
    if not len(values) or not draws(values[-1]):
        return None
    low, high = 0, len(values) - 1
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if draws(values[mid]) else (mid + 1, high)
    return values[low]


class DirichletExplorer(_Explorer):
    """Sliders for μ (log scale), number of clients, dataset and seed over FedMix's Dirichlet split.

    `datasets` maps a name to (training labels, number of classes). `update(**values)` is the
    widgets' callback; tests call it directly. The split is the runs' own, min_client_size rule
    included (every client ≥ 10 samples, redrawn up to 1,000 times), so what it cannot draw a run
    could not either: the clients slider stops where the data run out of 10 samples per client,
    and where μ is too small for the number of clients the explorer says so and names the
    nearest μ and client count that draw at this seed (found by drawing them, then cached).
    """

    def __init__(self, datasets: dict[str, tuple[np.ndarray, int]]):
        import ipywidgets as w      # as TauExplorer's

        if not datasets:
            raise ValueError("DirichletExplorer: datasets is empty; give at least one name -> (labels, classes)")
        self.datasets = datasets
        sliders = dict(continuous_update=False)   # a partition per release, not per pixel of a drag
        self.dataset = w.Dropdown(options=list(datasets), description="dataset")
        self.mu = w.FloatLogSlider(value=0.1, base=10, min=-2, max=3, step=0.1, description="μ", **sliders)
        self.clients = w.IntSlider(value=10, min=2, max=100, description="clients", **sliders)
        self.seed = w.BoundedIntText(value=1, min=0, max=2**32 - 1, description="seed")
        self.output = w.Output()
        self.summary: dict[str, float] = {}
        self._max_clients = {name: self._clients_allowed(name, labels, classes)
                             for name, (labels, classes) in datasets.items()}
        self._drawable: dict[tuple, bool] = {}   # (dataset, μ, clients, seed) -> whether the split draws
        self._setup({"dataset": self.dataset, "mu": self.mu, "clients": self.clients, "seed": self.seed},
                    {"dataset": "dataset", "mu": "μ", "clients": "clients", "seed": "seed"})
        self.widget = w.VBox([w.HBox([self.dataset, self.seed]), self.mu, self.clients, self.output])

    def _clients_allowed(self, name, labels, classes) -> int:
        """The most clients the data can give MIN_CLIENT_SIZE unlabeled samples each, after N_s; checks
        that the class-balanced server set can be taken at all."""
        per_class = np.bincount(np.asarray(labels), minlength=classes)
        quota = -(-FEDMIX_SERVER_LABELED // classes)
        if per_class.min() < quota:
            raise ValueError(f"DirichletExplorer: dataset {name!r} has {per_class.min()} samples of class "
                             f"{per_class.argmin()}; the server's class-balanced N_s = {FEDMIX_SERVER_LABELED} "
                             f"takes up to {quota} of each class")
        allowed = min(self.clients.max, (len(labels) - FEDMIX_SERVER_LABELED) // MIN_CLIENT_SIZE)
        if allowed < self.clients.min:
            raise ValueError(f"DirichletExplorer: dataset {name!r} leaves {len(labels) - FEDMIX_SERVER_LABELED} "
                             f"samples after N_s = {FEDMIX_SERVER_LABELED}, fewer than {self.clients.min} clients "
                             f"× {MIN_CLIENT_SIZE}")
        return allowed

    def _release(self):
        self.clients.max = self._limits["clients"][1][1]

    def _constrain(self):
        name = self.dataset.value
        self.clients.max = self._max_clients[name]
        left = len(self.datasets[name][0]) - FEDMIX_SERVER_LABELED
        return {"clients": f"{name} leaves {left} samples after N_s = {FEDMIX_SERVER_LABELED}, enough for "
                           f"{self._max_clients[name]} clients of at least {MIN_CLIENT_SIZE}"}

    def _draws(self, name: str, mu: float, clients: int, seed: int) -> bool:
        key = (name, mu, clients, seed)
        if key not in self._drawable:
            labels, classes = self.datasets[name]
            try:
                dirichlet_partition_of(labels, classes, mu, clients, seed)
                self._drawable[key] = True
            except DirichletDrawError:
                self._drawable[key] = False
        return self._drawable[key]

    def undrawable_message(self, name: str, mu: float, clients: int, seed: int) -> str:
        """Why (μ, clients) has no partition, and the nearest values that draw: the smallest μ on the
        slider above it with these clients, and the most clients below these at this μ."""
        fewer = _largest(lambda k: self._draws(name, mu, k, seed), self.clients.min, clients - 1)
        larger = _smallest(lambda m: self._draws(name, m, clients, seed),
                           [m for m in slider_values(self.mu) if m > mu])
        left = len(self.datasets[name][0]) - FEDMIX_SERVER_LABELED
        nearest = [f"μ={three_digits(larger)} with {clients} clients" if larger is not None
                   else f"no μ on the slider with {clients} clients",
                   f"{fewer} clients at μ={three_digits(mu)}" if fewer is not None
                   else f"no fewer clients at μ={three_digits(mu)}"]
        return (f"μ={three_digits(mu)} with {clients} clients: no partition. None of {_partition.constructions.MAX_DIRICHLET_DRAWS} "
                f"Dirichlet draws gave every client at least {MIN_CLIENT_SIZE} of the {left} unlabeled samples "
                f"(the runs' min_client_size rule, so a run with these values would stop too). Nearest that "
                f"draw at seed {seed}: {nearest[0]}, or {nearest[1]}.")

    def _draw(self):
        name, mu, clients, seed = self.dataset.value, self.mu.value, self.clients.value, self.seed.value
        labels, classes = self.datasets[name]
        title = f"{name}, μ={three_digits(mu)}, K={clients}, seed {seed}"
        try:
            partition = dirichlet_partition_of(labels, classes, mu, clients, seed)
        except DirichletDrawError:
            self._drawable[(name, mu, clients, seed)] = False
            self.summary = {}
            message = self.undrawable_message(name, mu, clients, seed)
            fig, ax = plot_no_partition(title, message)
            return fig, ax, [message]
        self._drawable[(name, mu, clients, seed)] = True
        counts = client_class_counts(partition, labels, classes)
        self.summary = partition_summary(counts, labels, classes)
        fig, ax = plot_class_proportions(counts, self.summary, title=title)
        return fig, ax, []
