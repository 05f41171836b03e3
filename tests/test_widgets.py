"""The τ-curve explorer, driven headlessly through its callback."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fssl_core.widgets import TauExplorer, plot_tau_curve, upload_relative_to_mt  # noqa: E402


def test_upload_relative_to_mt_spans_pi_to_mt():
    assert upload_relative_to_mt([0.0, 0.5, 1.0]).tolist() == [0.5, 0.75, 1.0]


def test_plot_draws_tau_and_the_measured_overlay():
    fig, ax = plot_tau_curve("linear", 0.6, 10, 40, 50, measured=[0.0] * 10 + [0.5] * 40)
    tau_line = ax.lines[0]
    assert len(ax.lines) == 3
    assert np.mean(tau_line.get_ydata()) == pytest.approx(0.39)      # Eq. 11 on 50 rounds, see test_fedsiam


def test_explorer_callback_redraws_for_new_slider_values():
    explorer = TauExplorer(runs={"run A": [0.2] * 150})
    fig, ax = explorer.update(curve="rectangle", mu=0.5, phi_g=10, varphi_g=40, rounds=150)
    taus = ax.lines[0].get_ydata()
    assert taus.sum() == 29.0 and len(ax.lines) == 2                   # the clipped plateau, no run chosen
    fig, ax = explorer.update(run="run A")
    assert len(ax.lines) == 3 and ax.lines[2].get_ydata().tolist() == [0.2] * 150
    fig, ax = explorer.update(varphi_g=5)                              # below φ_g: kept one round above it
    assert ax.lines[0].get_ydata().sum() == 0.0


def _fake_labels(n_per_class=300, classes=10):
    return np.repeat(np.arange(classes), n_per_class)


def test_partition_summary_on_a_hand_case():
    from fssl_core.widgets import partition_summary
    labels = np.array([0, 0, 1, 1])                     # global mix: half and half
    counts = np.array([[2, 0], [0, 2]])                 # two clients, one class each
    s = partition_summary(counts, labels, 2)
    assert s == {"classes_above_1pct": 1.0, "mean_tv_distance": 0.5, "min_client_size": 2, "max_client_size": 2}


def test_dirichlet_explorer_uses_the_runs_partition_and_mu_sets_the_skew():
    from fssl_core.widgets import DirichletExplorer, client_class_counts, dirichlet_partition_of
    labels = _fake_labels()
    explorer = DirichletExplorer({"fake": (labels, 10)})
    fig, ax = explorer.update(mu=0.1, clients=10, seed=3)
    skewed = explorer.summary
    counts = client_class_counts(dirichlet_partition_of(labels, 10, 0.1, 10, 3), labels, 10)
    assert len(ax.patches) == 10 * 10                                      # clients x classes bars
    assert counts.sum() == len(labels) - 1000                             # N_s = 1000 at the server
    assert skewed["min_client_size"] == counts.sum(1).min()
    explorer.update(mu=100.0)
    assert explorer.summary["classes_above_1pct"] > skewed["classes_above_1pct"]
    assert explorer.summary["mean_tv_distance"] < 0.1 < skewed["mean_tv_distance"]
