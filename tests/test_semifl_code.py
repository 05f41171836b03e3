"""SemiFL as SemiFL's code trains (Nesterov, clipping, cosine lr, the server's momentum kept, a global
momentum step) and FedAnchor's head-by-head server step: each named setting against the torch code it
stands for, or against what it must leave untouched."""
import math

import pytest
import torch

from fssl_core.algorithms.fedanchor import FedAnchor
from fssl_core.engine.federation import Federation
from fssl_core.engine.trainer import train
from fssl_core.learning.training import SGD
from fssl_core.papers import fedanchor
from fssl_core.profiles import PROFILES
from fssl_core.run_config import RunConfig
from fssl_core.store import RunStore

from .conftest import requires_mnist


def _params(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(5, 3, generator=g), torch.randn(7, generator=g)]


def test_sgd_with_nesterov_and_clipping_is_torchs_sgd_after_clip_grad_norm():
    ours, theirs = _params(0), [p.clone().requires_grad_() for p in _params(0)]
    torch_sgd = torch.optim.SGD(theirs, lr=0.03, momentum=0.9, weight_decay=5e-4, nesterov=True)
    sgd, velocity = SGD(0.03, 0.9, 5e-4, nesterov=True, clip_norm=1.0), None
    g = torch.Generator().manual_seed(1)
    for step in range(4):
        grads = [torch.randn(p.shape, generator=g) * (10.0 if step % 2 else 0.01) for p in ours]   # clipped, then not
        for p, grad in zip(theirs, grads):
            p.grad = grad.clone()
        torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        torch_sgd.step()
        velocity = sgd.step(ours, grads, velocity)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b.detach())
    # and the defaults are torch's plain SGD: neither Nesterov nor clipping
    assert SGD(0.1, 0.9, 0.0).nesterov is False and SGD(0.1, 0.9, 0.0).clip_norm == 0.0


def _semifl(**changes):
    base = dict(algorithm="semifl", dataset="fashion_mnist", partition="server_lda", dirichlet_alpha=1000.0,
                server_labeled=100, server_balanced=True, pseudo_label_threshold=0.5, clients=20,
                clients_per_round=3, rounds=3, local_epochs=1, batch_size=10, pretrain_epochs=1, lr=0.03,
                weight_decay=5e-4, seed=4)
    return RunConfig(**{**base, **changes})


def test_the_cosine_schedule_is_torchs_cosine_annealing_stepped_once_a_round():
    cfg = _semifl(lr_schedule="cosine", rounds=7)
    algo = Federation.build(cfg).algorithm
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=cfg.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.rounds, eta_min=0)
    for round in range(1, cfg.rounds + 1):
        assert algo.client_sgd(round).lr == pytest.approx(opt.param_groups[0]["lr"])
        assert algo.server_sgd(round).lr == pytest.approx(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert algo.server_sgd(0, lr=0.05).lr == 0.05          # pre-training keeps its own lr
    assert Federation.build(_semifl()).algorithm.client_sgd(3).lr == 0.03    # constant by default


@requires_mnist
def test_the_global_momentum_step_is_torchs_sgd_on_the_pseudo_gradient():
    cfg = _semifl(global_momentum=0.5)
    fed = Federation.build(cfg)
    algo, state = fed.algorithm, fed.initial_state()
    names = sorted(n for n, _ in algo.ctx.model.named_parameters())
    reference = [state["model"][n].clone().requires_grad_() for n in names]
    opt = torch.optim.SGD(reference, lr=1.0, momentum=0.5)
    g = torch.Generator().manual_seed(2)
    for _ in range(3):
        mean = {k: v + 0.1 * torch.randn(v.shape, generator=g) for k, v in state["model"].items()}
        for p, n in zip(reference, names):
            p.grad = (state["model"][n] - mean[n]).clone()
        opt.step()
        state = {**state, "model": algo.global_step(state, mean)}
    for p, n in zip(reference, names):
        torch.testing.assert_close(state["model"][n], p.detach())
    assert set(state["global_momentum"]) == set(names)


@requires_mnist
def test_semifls_code_settings_change_the_run_and_resume_to_the_uninterrupted_run(tmp_path):
    """The server's velocity and the global momentum live in the state the checkpoint keeps: a run stopped
    after round 2 and resumed equals the run that never stopped; each setting changes what the run computes."""
    code = _semifl(**{k: v for k, v in fedanchor.SEMIFL_CODE.items() if k != "client_weighting"}, checkpoint_every=1)

    class Killed(Exception):
        pass

    def crash(r):
        if r == 2:
            raise Killed

    whole = train(code, RunStore(tmp_path / "whole"), progress=False)
    store = RunStore(tmp_path / "resumed")
    with pytest.raises(Killed):
        train(code, store, progress=False, after_round=crash)
    resumed = train(code, store, progress=False)
    assert [m["accuracy"] for m in resumed.metrics] == [m["accuracy"] for m in whole.metrics]
    assert [m["test_loss"] for m in resumed.metrics] == [m["test_loss"] for m in whole.metrics]
    plain = train(_semifl(), RunStore(tmp_path / "plain"), progress=False)
    assert [m["accuracy"] for m in whole.metrics] != [m["accuracy"] for m in plain.metrics]
    for name in ("nesterov", "clip_grad_norm", "lr_schedule", "server_momentum_kept", "global_momentum"):
        assert _semifl(**{name: fedanchor.SEMIFL_CODE[name]}).run_id != _semifl().run_id


@requires_mnist
def test_head_by_head_trains_the_anchor_head_only_in_the_lc_epoch_and_never_in_the_ce_epoch():
    cfg = RunConfig(algorithm="fedanchor", dataset="fashion_mnist", partition="server_lda", dirichlet_alpha=1000.0,
                    server_labeled=100, server_balanced=True, projection_dim=16, pseudo_label_threshold=0.6,
                    clients=20, clients_per_round=2, rounds=1, batch_size=10, lr=0.03, weight_decay=5e-4,
                    server_step="head_by_head", seed=3)

    def changed(cfg, only=None):
        """The model's tensors that the server step changes (`only`: the one training of it that runs)."""
        fed = Federation.build(cfg)
        state = fed.initial_state()
        before = {k: v.clone() for k, v in state["model"].items()}
        train = fed._server_trainer(1, stage=1)

        def one(nets, trainable, loss_fn, *args, **kwargs):
            if only is None or loss_fn.__name__ == only:
                train(nets, trainable, loss_fn, *args, **kwargs)
        fed.algorithm.server_train(state, one)
        return {k for k, v in state["model"].items() if not torch.equal(v, before[k])}

    anchor = {"projection.weight", "projection.bias"}
    assert changed(cfg, "server_loss").isdisjoint(anchor)                           # the CE epoch
    assert changed(cfg, "contrastive_step") == anchor                               # the L_c epoch
    assert {"conv1.weight", "classifier.weight"} | anchor <= changed(cfg)
    # every parameter in both epochs: weight decay alone moves the anchor head in the CE epoch
    assert anchor <= changed(cfg.replace(server_step="all_parameters"), "server_loss")
    assert changed(cfg.replace(server_step="all_parameters"), "contrastive_step") > anchor


def test_the_papers_cells_name_the_readings_and_keep_the_alternatives_as_their_own_methods():
    quick = PROFILES["quick"]

    def config(method):
        return next(c for c in fedanchor.fmnist_cells(quick, "cpu", methods=[method], settings=["iid"])).configs[0]

    assert config("fedanchor").server_step == "head_by_head"
    assert config("fedanchor_all_parameters") == config("fedanchor").replace(server_step="all_parameters")
    semifl, plain = config("semifl"), config("semifl_plain")
    assert semifl == plain.replace(**fedanchor.SEMIFL_CODE)
    assert (semifl.server_epochs, semifl.global_momentum, semifl.clip_grad_norm) == (5, 0.5, 1.0)
    # the alternatives are the runs stored before the choices were settings: their ids did not move
    assert plain.replace(seed=1).run_id == RunConfig(**{**plain.to_dict(), "seed": 1}).run_id
