"""The τ-curve and Dirichlet-μ explorers, driven headlessly through their callback."""
import itertools

import matplotlib
import matplotlib.figure

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fssl_core.explore import widgets  # noqa: E402
from fssl_core.algorithms.fedsiam import tau_schedule  # noqa: E402
from fssl_core.data import partition  # noqa: E402
from fssl_core.explore.widgets import (DirichletExplorer, TauExplorer, client_class_counts,  # noqa: E402
                               dirichlet_partition_of, plot_tau_curve, slider_values, three_digits,
                               upload_relative_to_mt)


def test_upload_relative_to_mt_spans_pi_to_mt():
    assert upload_relative_to_mt([0.0, 0.5, 1.0]).tolist() == [0.5, 0.75, 1.0]


def test_plot_draws_tau_and_the_measured_overlay():
    fig, ax = plot_tau_curve("linear", 0.6, 10, 40, 50, measured=[0.0] * 10 + [0.5] * 40)
    tau_line = ax.lines[0]
    assert len(ax.lines) == 3
    assert np.mean(tau_line.get_ydata()) == pytest.approx(0.39)      # Eq. 11 on 50 rounds, see test_fedsiam


def test_slider_values_are_the_offered_grid():
    explorer = DirichletExplorer({"fake": (_fake_labels(), 10)})
    mus = slider_values(explorer.mu)
    assert len(mus) == 51 and mus[0] == pytest.approx(0.01) and mus[-1] == pytest.approx(1000.0)
    assert mus[10] == pytest.approx(0.1) and slider_values(explorer.clients).tolist() == list(range(2, 101))


def test_explorer_callback_redraws_for_new_slider_values():
    explorer = TauExplorer(runs={"run A": [0.2] * 150})
    fig, ax = explorer.update(curve="rectangle", mu=0.5, phi_g=10, varphi_g=40, rounds=150)
    taus = ax.lines[0].get_ydata()
    assert taus.sum() == 29.0 and len(ax.lines) == 2                   # the clipped plateau, no run chosen
    assert explorer.notes == ["τ clipped to 1 in 29 of 150 rounds (Eq. 12 exceeds 1 there): its mean is 0.193 "
                              "against 1 − μ = 0.500"]
    fig, ax = explorer.update(run="run A")
    assert len(ax.lines) == 3 and ax.lines[2].get_ydata().tolist() == [0.2] * 150
    fig, ax = explorer.update(varphi_g=5)                              # below φ_g: kept one round above it, and said
    assert explorer.varphi_g.value == 11 and ax.lines[0].get_ydata().sum() == 0.0
    assert explorer.notes[0] == "ϕ_g=5 → 11: ϕ_g must exceed φ_g = 10 (Eq. 12's plateau lies between them)"
    assert explorer.notes[1].startswith("τ is 0 in every round (Eq. 12's plateau covers the rounds strictly "
                                        "between φ_g = 10 and ϕ_g = 11")


@pytest.fixture
def no_layout(monkeypatch):
    """Skip tight_layout (80% of a redraw here): the sweeps check values, lines and titles, not layout."""
    monkeypatch.setattr(matplotlib.figure.Figure, "tight_layout", lambda self, *args, **kwargs: None)


def _tau_sweep_grid(explorer):
    """Each slider's min, min + step and max, every curve: the extremes a person can reach."""
    def ends(slider):
        values = slider_values(slider)
        return [values[0], values[1], values[-1]]
    return [dict(zip(("curve", "mu", "phi_g", "varphi_g", "rounds"), combo)) for combo in itertools.product(
        explorer.curve.options, ends(explorer.mu), *(map(int, ends(s)) for s in
                                                     (explorer.phi_g, explorer.varphi_g, explorer.rounds)))]


def test_tau_explorer_never_raises_on_its_offered_grid_and_shows_what_it_was_asked(no_layout):
    explorer = TauExplorer()
    explorer.update(phi_g=0)                   # φ_g at 0: the ϕ_g slider offers its whole range
    grid = _tau_sweep_grid(explorer)
    assert len(grid) == 2 * 3 ** 4
    for values in grid:
        fig, ax = explorer.update(**values)
        varphi_g = max(values["varphi_g"], values["phi_g"] + 1)
        shown = (explorer.curve.value, explorer.mu.value, explorer.phi_g.value, explorer.varphi_g.value,
                 explorer.rounds.value)
        assert shown == (values["curve"], values["mu"], values["phi_g"], varphi_g, values["rounds"]), values
        expected = tau_schedule(values["curve"], values["rounds"], values["phi_g"], varphi_g, values["mu"])
        assert ax.lines[0].get_ydata().tolist() == expected and fig is explorer.figure, values
        assert f"R_G={values['rounds']}" in ax.get_title() and f"φ_g={values['phi_g']}," in ax.get_title()
        adjusted = [n for n in explorer.notes if n.startswith("ϕ_g=")]
        assert adjusted == ([f"ϕ_g={values['varphi_g']} → {varphi_g}: ϕ_g must exceed φ_g = {values['phi_g']} "
                             f"(Eq. 12's plateau lies between them)"] if varphi_g != values["varphi_g"] else [])
        assert any(n.startswith("τ is 0 in every round") for n in explorer.notes) == (not any(expected))
        assert any(n.startswith("τ clipped to 1") for n in explorer.notes) == (max(expected) >= 1)
        assert explorer.varphi_g.min == values["phi_g"] + 1           # the slider offers only ϕ_g > φ_g
        assert explorer.varphi_g.disabled == (values["curve"] == "linear")


def test_tau_update_applies_every_value_and_draws_once(monkeypatch):
    calls = []

    def counting_plot(*args, **kwargs):
        calls.append(args)
        return plot_tau_curve(*args, **kwargs)

    monkeypatch.setattr(widgets, "plot_tau_curve", counting_plot)
    explorer = TauExplorer()
    explorer.update(curve="rectangle", mu=0.3, phi_g=60, varphi_g=70, rounds=150)   # ϕ_g=70 is above the old φ_g+1
    assert calls == [("rectangle", 0.3, 60, 70, 150, None)]
    explorer.update(phi_g=5, varphi_g=8)       # ϕ_g=8 sits below the old bound φ_g + 1 = 61, but not the new one
    assert calls[1:] == [("rectangle", 0.3, 5, 8, 150, None)] 
    assert not any(note.startswith("ϕ_g=") for note in explorer.notes)
    explorer.phi_g.value = 20                  # a person moves φ_g past ϕ_g: one redraw, ϕ_g follows, and it is said
    assert calls[2:] == [("rectangle", 0.3, 20, 21, 150, None)]
    assert explorer.notes[0] == "ϕ_g=8 → 21: ϕ_g must exceed φ_g = 20 (Eq. 12's plateau lies between them)"


def test_unknown_names_and_values_outside_the_widgets_raise_and_change_nothing():
    tau = TauExplorer()
    with pytest.raises(ValueError, match=r"TauExplorer.update: unknown name 'phi'; allowed: curve, mu, phi_g, "
                                         r"varphi_g, rounds, run"):
        tau.update(mu=0.9, phi=3)
    assert tau.mu.value == 0.5
    with pytest.raises(ValueError, match=r"TauExplorer.update: rounds=301 must be an int within \[2, 300\]"):
        tau.update(rounds=301)
    with pytest.raises(ValueError, match=r"TauExplorer.update: curve='square' must be one of 'linear', 'rectangle'"):
        tau.update(curve="square")
    dirichlet = DirichletExplorer({"fake": (_fake_labels(), 10)})
    with pytest.raises(ValueError, match=r"DirichletExplorer.update: unknown name 'alpha'; allowed: dataset, mu, "
                                         r"clients, seed"):
        dirichlet.update(clients=20, alpha=1.0)
    assert dirichlet.clients.value == 10
    with pytest.raises(ValueError, match=r"DirichletExplorer.update: mu=0.001 must be a number within \[0.01, 1000\]"):
        dirichlet.update(mu=0.001)
    with pytest.raises(ValueError, match=r"DirichletExplorer.update: seed=-1 must be an int within \[0, 4294967295\]"):
        dirichlet.update(seed=-1)


def _fake_labels(n_per_class=300, classes=10):
    return np.repeat(np.arange(classes), n_per_class)


def test_partition_summary_on_a_hand_case():
    from fssl_core.explore.widgets import partition_summary
    labels = np.array([0, 0, 1, 1])                     # global mix: half and half
    counts = np.array([[2, 0], [0, 2]])                 # two clients, one class each
    s = partition_summary(counts, labels, 2)
    assert s == {"classes_above_1pct": 1.0, "mean_tv_distance": 0.5, "min_client_size": 2, "max_client_size": 2}


def _bars(ax) -> int:
    return sum(len(c.get_paths()) for c in ax.collections)


def test_dirichlet_explorer_uses_the_runs_partition_and_mu_sets_the_skew():
    labels = _fake_labels()
    explorer = DirichletExplorer({"fake": (labels, 10)})
    fig, ax = explorer.update(mu=0.1, clients=10, seed=3)
    skewed = explorer.summary
    counts = client_class_counts(dirichlet_partition_of(labels, 10, 0.1, 10, 3), labels, 10)
    assert _bars(ax) == 10 * 10                                            # clients x classes bars
    assert counts.sum() == len(labels) - 1000                             # N_s = 1000 at the server
    assert skewed["min_client_size"] == counts.sum(1).min()
    explorer.update(mu=100.0)
    assert explorer.summary["classes_above_1pct"] > skewed["classes_above_1pct"]
    assert explorer.summary["mean_tv_distance"] < 0.1 < skewed["mean_tv_distance"]


def test_dirichlet_explorer_never_raises_on_its_offered_grid(monkeypatch, no_layout):
    # 20 redraws instead of 1,000: the draws are the same seeded sequence, so every split found within
    # 20 is the one 1,000 would find, and only more (μ, clients) fail: the failure path is swept harder.
    monkeypatch.setattr(partition.constructions, "MAX_DIRICHLET_DRAWS", 20)
    labels = np.repeat(np.arange(10), 200)                                 # 2,000 labels, 1,000 after N_s
    explorer = DirichletExplorer({"fake": (labels, 10)})
    grid = list(itertools.product(slider_values(explorer.mu), (2, 10, 50, 100)))
    failed = 0
    for mu, clients in grid:
        fig, ax = explorer.update(mu=mu, clients=clients, seed=1)
        assert (explorer.mu.value, explorer.clients.value, explorer.seed.value) == (mu, clients, 1)
        assert fig is explorer.figure and ax.get_title().startswith(f"fake, μ={three_digits(mu)}, K={clients}, seed 1")
        try:
            counts = client_class_counts(dirichlet_partition_of(labels, 10, mu, clients, 1), labels, 10)
        except partition.DirichletDrawError:
            counts = None
        if counts is None:                                                 # said, and nothing stale shown
            failed += 1
            assert explorer.summary == {} and _bars(ax) == 0 and ax.get_title().endswith(": no partition")
            assert len(explorer.notes) == 1 and explorer.notes[0].startswith(
                f"μ={three_digits(mu)} with {clients} clients: no partition. None of 20 Dirichlet draws")
        else:
            assert explorer.notes == [] and _bars(ax) == clients * 10
            assert explorer.summary["min_client_size"] == counts.sum(1).min()
            assert explorer.summary["max_client_size"] == counts.sum(1).max()
    assert len(grid) == 204 and 51 <= failed < 204         # 100 clients of 10 from 1,000 samples never draws


def test_a_formerly_failing_value_says_what_failed_and_which_values_draw():
    labels = np.repeat(np.arange(10), 500)                                 # 4,000 unlabeled after N_s
    explorer = DirichletExplorer({"fake": (labels, 10)})
    explorer.update(mu=1.0, clients=10)
    fig, ax = explorer.update(mu=0.01, clients=100)                       # the user's case, at the runs' 1,000 draws
    assert explorer.summary == {} and fig is explorer.figure and _bars(ax) == 0
    message = explorer.notes[0]
    assert message.startswith("μ=0.01 with 100 clients: no partition. None of 1000 Dirichlet draws gave every "
                              "client at least 10 of the 4000 unlabeled samples")
    nearest = message.split("Nearest that draw at seed 1: ")[1]
    mu_text, clients_text = nearest.rstrip(".").split(", or ")
    mu_ok = float(mu_text.split("μ=")[1].split(" with")[0])
    clients_ok = int(clients_text.split(" clients")[0])
    assert mu_ok > 0.01 and 2 <= clients_ok < 100
    dirichlet_partition_of(labels, 10, mu_ok, 100, 1)                     # the named values do draw
    dirichlet_partition_of(labels, 10, 0.01, clients_ok, 1)
    with pytest.raises(partition.DirichletDrawError):                     # and a run would fail as the explorer says
        dirichlet_partition_of(labels, 10, 0.01, 100, 1)
    explorer.update(mu=1.0)                                               # back to a drawable μ: bars again
    assert explorer.notes == [] and _bars(ax := explorer.figure.axes[0]) == 100 * 10 and explorer.summary


def test_dirichlet_update_applies_every_value_and_partitions_once(monkeypatch):
    calls = []

    def counting_partition(*args, **kwargs):
        calls.append(args[2:])
        return dirichlet_partition_of(*args, **kwargs)

    monkeypatch.setattr(widgets, "dirichlet_partition_of", counting_partition)
    explorer = DirichletExplorer({"fake": (_fake_labels(), 10)})
    fig, ax = explorer.update(mu=10.0, clients=20, seed=4)
    assert calls == [(10.0, 20, 4)] and _bars(ax) == 20 * 10
    explorer.clients.value = 30                                           # a person moves one slider: one partition
    assert calls[1:] == [(10.0, 30, 4)] and _bars(explorer.figure.axes[0]) == 30 * 10


def test_clients_slider_stops_where_the_data_run_out():
    small = np.repeat(np.arange(10), 150)                                 # 500 after N_s: at most 50 clients of 10
    explorer = DirichletExplorer({"fake": (_fake_labels(), 10), "small": (small, 10)})
    assert explorer.clients.max == 100
    explorer.update(dataset="small", clients=100, mu=1000.0)
    assert explorer.clients.max == 50 and explorer.clients.value == 50
    assert explorer.notes[0] == ("clients=100 → 50: small leaves 500 samples after N_s = 1000, enough for 50 "
                                 "clients of at least 10")
    assert explorer.notes[1].startswith("μ=1000 with 50 clients: no partition.")   # only an even split would do
    explorer.update(dataset="fake", clients=100)
    assert explorer.clients.max == 100 and explorer.clients.value == 100
    with pytest.raises(ValueError, match="dataset 'tiny' has 50 samples of class 0; the server's class-balanced "
                                         "N_s = 1000 takes up to 100 of each class"):
        DirichletExplorer({"tiny": (np.repeat(np.arange(10), 50), 10)})
