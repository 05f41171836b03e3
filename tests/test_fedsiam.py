"""FedSiam: τ curves, FSM, the boundary, and what the variants send, measured in bytes."""
import math

import pytest
import torch

from fssl_core.algorithms.fedsiam import (boundary, fsm, parameter_layers, tau_linear, tau_rectangle,
                                          tau_schedule)
from fssl_core.config import ConfigError
from fssl_core.run_config import RunConfig
from fssl_core.models import build_model
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

from .conftest import requires_mnist


def test_linear_curve_is_zero_up_to_phi_g_and_then_falls_to_zero():
    taus = tau_schedule("linear", rounds=50, phi_g=10, varphi_g=40, mu=0.6)
    assert taus[:10] == [0.0] * 10 and taus[-1] == 0.0
    assert taus[10] == pytest.approx(2 * 0.4 * 50 / 40**2 * 39)           # round 11 of Eq. 11
    assert all(a >= b for a, b in zip(taus[10:], taus[11:]))
    # Σ_{r=11}^{50} 0.025·(50 − r) / 50 = 0.025·780/50; the continuous curve averages exactly 1 − μ
    assert sum(taus) / 50 == pytest.approx(0.39)


def test_linear_curve_is_clipped_at_one_in_the_papers_setting():
    # μ = 0.5, R_G = 50, φ_g = 3: Eq. 11 gives 2·0.5·50/47 = 1.064 at round 4
    assert tau_linear(4, 50, 3, 0.5) == tau_linear(5, 50, 3, 0.5) == 1.0
    assert tau_linear(6, 50, 3, 0.5) == pytest.approx(50 / 47**2 * 44)      # first round below 1


def test_rectangle_curve_is_a_clipped_plateau_between_the_tipping_points():
    taus = tau_schedule("rectangle", rounds=150, phi_g=10, varphi_g=40, mu=0.5)
    assert taus[9] == 0.0 and taus[10] == 1.0 and taus[38] == 1.0 and taus[39] == 0.0   # rounds 10, 11, 39, 40
    assert sum(taus) == 29.0                       # (1 − μ)·150/30 = 2.5 is clipped to 1 on rounds 11..39
    assert tau_rectangle(20, 100, 10, 40, 0.8) == pytest.approx(0.2 * 100 / 30)


def test_boundary_is_the_one_minus_tau_quantile_of_the_window():
    window = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])]
    assert boundary(window, 0.25) == pytest.approx(3.25)      # 0.75-quantile of 1..4, linear interpolation
    assert boundary(window, 0.0) == math.inf and boundary(window, 1.0) == -math.inf
    assert boundary([], 0.5) == -math.inf


def test_fsm_takes_a_layers_weight_and_bias_together():
    online = {"conv.weight": torch.tensor([3.0]), "conv.bias": torch.tensor([4.0]), "fc.weight": torch.tensor([2.0])}
    target = {"conv.weight": torch.tensor([0.0]), "conv.bias": torch.tensor([4.0]), "fc.weight": torch.tensor([1.0])}
    out = fsm(target, online, [["conv.weight", "conv.bias"], ["fc.weight"]])
    assert out.tolist() == pytest.approx([3.0 / 5.0, 0.5])    # ‖(−3, 0)‖/‖(3, 4)‖, ‖−1‖/‖2‖


def test_layers_of_the_papers_networks():
    assert len(parameter_layers(build_model("cnn_mnist", num_classes=10, in_channels=1))) == 4
    # six convolutions, three BatchNorms, three linear layers
    assert len(parameter_layers(build_model("cnn_cifar", num_classes=10, in_channels=3))) == 12


def test_rectangle_needs_its_second_tipping_point_after_the_first():
    with pytest.raises(ConfigError, match="tau_varphi_g=5"):
        RunConfig(algorithm="fedsiam_d", tau_curve="rectangle", tau_phi_g=10, tau_varphi_g=5)


def test_upload_sends_exactly_the_online_layers_above_the_boundary():
    from fssl_core.algorithms.base import Context
    from fssl_core.algorithms.fedsiam import FedSiam
    model = build_model("cnn_mnist", num_classes=10, in_channels=1)
    algo = FedSiam(RunConfig(algorithm="fedsiam_d"), Context(model, 10, torch.device("cpu")))
    online = {k: v.clone() for k, v in model.state_dict().items()}
    target = {k: v.clone() for k, v in online.items()}
    target["conv2.weight"] += 1.0          # conv2 and fc1 diverge, conv1 and the classifier do not
    target["fc1.bias"] += 1.0
    nets = {"online": online, "target": target, "received": {"boundary": torch.tensor([1e-6])}}
    sent = algo.upload(nets, view=None, round=5)
    assert sorted(sent["online"]) == ["conv2.bias", "conv2.weight", "fc1.bias", "fc1.weight"]
    layer_names = [names[0].rpartition(".")[0] for names in algo.layers]
    assert {name for name, d in zip(layer_names, sent["fsm"].tolist()) if d > 0} == {"conv2", "fc1"}
    assert sent["target"] is target


TINY = dict(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
            local_epochs=1, rounds=3, tau_phi_g=1, tau_mu=0.5)
MODEL_BYTES = 21_840 * 4
FSM_BYTES = 4 * 4            # four layers, one float each


@requires_mnist
def test_upload_bytes_rank_pi_below_d_below_mt(tmp_path):
    store = RunStore(tmp_path)
    runs = {a: train(RunConfig(algorithm=f"fedsiam_{a}", **TINY), store, progress=False) for a in ("pi", "d", "mt")}
    per_round = {a: [m["upload_bytes"] for m in r.metrics] for a, r in runs.items()}
    assert per_round["pi"] == [2 * (MODEL_BYTES + FSM_BYTES)] * 3           # the target net only
    assert per_round["mt"] == [2 * (2 * MODEL_BYTES + FSM_BYTES)] * 3       # the full siamese pair
    # D: τ = 0, 2·0.5·3/2²·(3 − 2) = 0.75, 0 (Eq. 11 with R_G = 3, φ_g = 1). Round 2 compares with
    # Λ from round 1, all zeros because target = online in the Π phase, so every layer is sent.
    assert [m["tau"] for m in runs["d"].metrics] == pytest.approx([0.0, 0.75, 0.0])
    assert per_round["d"] == [per_round["pi"][0], per_round["mt"][1], per_round["pi"][2]]
    assert [m["online_upload_fraction"] for m in runs["d"].metrics] == [0.0, 1.0, 0.0]
    # every client downloads the online and the target net and the boundary
    assert runs["d"].metrics[0]["download_bytes"] == 2 * (2 * MODEL_BYTES + 4)


@requires_mnist
def test_an_interrupted_fedsiam_run_resumes_to_the_same_result(tmp_path):
    cfg = RunConfig(algorithm="fedsiam_d", **TINY)
    whole = train(cfg, RunStore(tmp_path / "a"), progress=False)

    class Killed(Exception):
        pass

    def crash(r):
        if r == 2:
            raise Killed

    store = RunStore(tmp_path / "b")
    with pytest.raises(Killed):
        train(cfg, store, progress=False, after_round=crash)
    resumed = train(cfg, store, progress=False)
    strip = lambda ms: [{k: v for k, v in m.items() if k != "seconds"} for m in ms]   # noqa: E731
    assert strip(resumed.metrics) == strip(whole.metrics)


def _fedsiam(**changes):
    from fssl_core.algorithms.base import Context
    from fssl_core.algorithms.fedsiam import FedSiam
    cfg = RunConfig(algorithm="fedsiam_d", **changes)
    return FedSiam(cfg, Context(model=build_model("cnn_mnist", num_classes=10, in_channels=1), num_classes=10,
                                device=torch.device("cpu")))


def test_beta_and_alpha_run_on_the_clients_own_clock():
    from fssl_core.learning.training import Step
    algo = _fedsiam(local_epochs=5, ema_decay=0.999)
    first, second = (Step(round=20, local_step=0, local_steps=300, participation=p) for p in (1, 2))
    # β^k: φ_l = 10 of the client's epochs counted p·R_L + e (the authors'): a first pick starts at
    # exp(−5·0.4²), a second at 1, whatever the global round
    assert algo.consistency_weight(first) == pytest.approx(math.exp(-0.8))
    assert algo.consistency_weight(second) == 1.0
    # α^k: min(1 − 1/(q + 1), α_max), q the client's SGD steps, this one included
    assert algo.alpha(first) == pytest.approx(0.5)
    assert algo.alpha(Step(round=20, local_step=299, local_steps=300, participation=1)) == pytest.approx(1 - 1 / 301)
    assert algo.alpha(Step(round=20, local_step=0, local_steps=300, participation=5)) == 0.999     # q = 1,201
    assert algo.alpha(Step(round=3, local_step=0, local_steps=300, participation=3)) == 0.0   # R_g ≤ φ_g: Π phase
    # a cohort's per-client clocks give the same values, per client
    both = Step(round=20, local_step=0, local_steps=300, participation=torch.tensor([1, 2]))
    torch.testing.assert_close(algo.consistency_weight(both), torch.tensor([math.exp(-0.8), 1.0]))
    torch.testing.assert_close(algo.alpha(both), torch.tensor([0.5, 1 - 1 / 302], dtype=torch.float64))


def test_the_authors_ema_clock_counts_the_clients_local_epochs():
    """ema_clock='epochs': α^k = min(1 − 1/(p·R_L + e + 2), α_max), e = 0..R_L−1 (their Update.py)."""
    from fssl_core.learning.training import Step
    algo = _fedsiam(local_epochs=5, ema_decay=0.999, ema_clock="epochs")
    assert algo.alpha(Step(round=20, local_step=0, local_steps=300, participation=1)) == pytest.approx(1 - 1 / 7)
    assert algo.alpha(Step(round=20, local_step=299, local_steps=300, participation=1)) == pytest.approx(1 - 1 / 11)
    assert algo.alpha(Step(round=20, local_step=299, local_steps=300, participation=5)) == pytest.approx(1 - 1 / 31)
    assert algo.alpha(Step(round=3, local_step=0, local_steps=300, participation=3)) == 0.0    # R_g ≤ φ_g
    both = Step(round=20, local_step=60, local_steps=300, participation=torch.tensor([1, 2]))   # epoch e = 1
    torch.testing.assert_close(algo.alpha(both), torch.tensor([1 - 1 / 8, 1 - 1 / 13], dtype=torch.float64))
    assert RunConfig(algorithm="fedsiam_d", ema_clock="epochs").run_id != RunConfig(algorithm="fedsiam_d").run_id
    with pytest.raises(ConfigError, match="ema_clock='rounds': must be one of steps, epochs"):
        RunConfig(algorithm="fedsiam_d", ema_clock="rounds")


def test_a_per_client_ema_decay_updates_each_stacked_client_as_its_own_float_would():
    from fssl_core.learning.ssl import ema_update_
    torch.manual_seed(0)
    target, online = {"w": torch.randn(3, 4, 5)}, {"w": torch.randn(3, 4, 5)}
    alphas = torch.tensor([0.0, 0.5, 0.99], dtype=torch.float64)
    expected = torch.stack([a * target["w"][c] + (1 - a) * online["w"][c] for c, a in enumerate(alphas.tolist())])
    ema_update_(target, online, ["w"], alphas)
    torch.testing.assert_close(target["w"], expected)


@requires_mnist
def test_cohort_clients_on_different_clocks_train_as_sequentially():
    from fssl_core.engine.federation import Federation
    # 10 of 20 clients a round: about half of round 2's were picked in round 1 (participation 2)
    cfg = RunConfig(algorithm="fedsiam_mt", dataset="mnist", resplit_train=2000, resplit_test=500, clients=20,
                    clients_per_round=10, rounds=2, local_epochs=1, labeled_repeats=3, seed=3)

    def run(trainer):
        fed = Federation.build(cfg.replace(trainer=trainer))
        state = fed.initial_state()
        for r in (1, 2):
            state, _ = fed.run_round(state, r)
        return fed, state
    fed, sequential = run("sequential")
    _, cohort = run("cohort")
    clocks = {int(fed.participations(2)[k]) for k in fed.sample_clients(2)}
    assert clocks == {1, 2}
    for role in ("online", "target"):
        for k in sequential[role]:
            torch.testing.assert_close(sequential[role][k], cohort[role][k], atol=2e-6, rtol=1e-5)
