"""The reference code's settings, each pinned against what that code computes: FedMatch's (wyjeong/FedMatch at
4947aa2) for the FedMix/FedMatch cells that follow it, SemiFL's (4ec3663) server batch for FedAnchor's tables."""
import pytest
import torch

from fssl_core.algorithms.base import server_sgd_of
from fssl_core.engine.federation import Federation
from fssl_core.learning.training import SGD
from fssl_core.papers.fedanchor import cells as anchor
from fssl_core.papers.fedmix import cells as fedmix
from fssl_core.profiles import PROFILES
from fssl_core.run_config import RunConfig

from .conftest import requires_mnist

SMALL = dict(dataset="mnist", model="resnet9_fedmatch_narrow", clients=4, clients_per_round=2, rounds=1,
             partition="server_iid", server_labeled=100, labeled_ratio=0.1)


@requires_mnist
def test_fedmatch_starts_where_its_code_does_at_an_initial_scale_of_1_2():
    """FedMatch's code: σ_0 from the initialiser, ψ_0 = 0.2 σ_0 (modules/nets.py L59), so every model starts at 1.2×
    the initialiser's weights (L95). With initial_scale = 1.2 our σ_0 is the initialiser's output and σ_0 + ψ_0 is
    1.2× it; at 1.0 (the alternative) σ_0 + ψ_0 is the initialiser's output, 1/1.2 of their start."""
    plain = Federation.build(RunConfig(algorithm="fedmatch", **SMALL))
    scaled = Federation.build(RunConfig(algorithm="fedmatch", initial_scale=1.2, **SMALL))
    init = {k: v for k, v in plain.ctx.model.state_dict().items()}     # the initialiser's weights, this seed
    state = scaled.initial_state()
    names = [n for n, _ in plain.ctx.model.named_parameters()]
    for name in names:
        assert torch.allclose(state["sigma"][name], init[name], rtol=1e-6, atol=0)
        assert torch.allclose(state["sigma"][name] + state["psi"][name], 1.2 * init[name], rtol=1e-6, atol=0)
    plain_state = plain.initial_state()
    assert torch.allclose(plain_state["sigma"][names[0]] + plain_state["psi"][names[0]], init[names[0]], rtol=1e-6)


@requires_mnist
def test_inputs_divided_by_255_alone_reach_the_network_as_they_are():
    """FedMatch's `Loader.scale` is x / 255 (data/loader.py L60): with input_scale='unit' the federation's
    normalisation returns the [0, 1] pixels bit for bit; the default normalises per channel."""
    unit = Federation.build(RunConfig(algorithm="fedmatch", input_scale="unit", **SMALL))
    normal = Federation.build(RunConfig(algorithm="fedmatch", **SMALL))
    x = unit.data.test_x[:8]
    assert torch.equal(unit.data.normalize(x), x) and torch.equal(unit.images.normalize(x), x)
    assert not torch.equal(normal.data.normalize(x), x)


@requires_mnist
def test_one_initial_model_for_every_seed_under_a_fixed_init_seed():
    """FedMatch's code reads one σ_0 for every run (set_init_params, misc/init_sig.npy): init_seed fixes the start
    whatever the run's seed; -1 (the default) gives each seed its own."""
    def start(**kw):
        return Federation.build(RunConfig(algorithm="fedmatch", **{**SMALL, **kw})).initial_state()["sigma"]
    a, b = start(seed=1, init_seed=1), start(seed=2, init_seed=1)
    assert all(torch.equal(a[k], b[k]) for k in a)
    c, d = start(seed=1), start(seed=2)
    assert not all(torch.equal(c[k], d[k]) for k in c)


def test_the_reference_cells_train_without_weight_decay_as_fedmatchs_code_does():
    """FedMatch's code adds no layer loss to its objective (client.py L66-103, train.py L103-106): its step is plain
    SGD. The cells that follow it (the conference CIFAR-10 figures; Fig. 8 at the paper protocol on FedMatch's
    network) have weight decay 0, and their optimiser's step equals torch's SGD without it."""
    figure4 = fedmix.figure4_cells(PROFILES["paper"], "cpu", seeds=[1])
    fig8 = fedmix.streaming_cells(PROFILES["paper"], "cpu", seeds=[1])
    configs = [cfg for cell in figure4 + fig8 for cfg in cell.configs]
    assert configs and all(c.weight_decay == 0.0 and c.input_scale == "unit" and c.initial_scale == 1.2
                           and c.init_seed == 1 for c in configs)
    assert {c.pseudo_label_threshold for c in configs if c.algorithm == "fedmatch"} == {0.75}
    cfg = next(c for c in configs if c.algorithm == "fedmix")
    w = torch.randn(5, 3)
    g = torch.randn(5, 3)
    ours = w.clone()
    SGD(cfg.lr, cfg.momentum, cfg.weight_decay).step([ours], [g.clone()], None)
    theirs = w.clone().requires_grad_()
    opt = torch.optim.SGD([theirs], lr=cfg.lr, momentum=cfg.momentum, weight_decay=0.0)
    theirs.grad = g.clone()
    opt.step()
    assert torch.equal(ours, theirs.detach())


def test_the_reduced_profiles_and_the_batchnorm_network_keep_the_previous_reading():
    """The committed runs' cells: quick's streaming cells (MNIST CNN) and the BatchNorm ResNet-9 at the paper
    protocol keep weight decay 1e-4, per-channel normalisation, the initialiser's scale and τ = 0.80."""
    quick = fedmix.streaming_cells(PROFILES["quick"], "cpu", seeds=[1])
    bn = fedmix.streaming_cells(PROFILES["paper"], "cpu", seeds=[1], network="resnet9")
    configs = [cfg for cell in quick + bn for cfg in cell.configs]
    assert all(c.weight_decay == 1e-4 and c.input_scale == "normalize" and c.initial_scale == 1.0
               and c.init_seed == -1 for c in configs)
    assert {c.pseudo_label_threshold for c in configs if c.algorithm == "fedmatch"} == {0.80}


@pytest.mark.parametrize("labels,batch", [(250, 10), (1000, 10), (2500, 250), (5000, 250), (10000, 250)])
def test_semifls_server_batch_follows_its_label_count(labels, batch):
    """SemiFL's code: the server's batch is 250 above 1,000 labels, else 10 (src/utils.py L145-148). SemiFL's cells
    at SemiFL's code's settings take it; with 1,000 labels or fewer their config is unchanged (batch 10 as before)."""
    cfg = anchor.paper_config("semifl", "cpu", dataset="cifar10", model="resnet18", server_labeled=labels)
    assert server_sgd_of(cfg)[0] == batch
    assert (cfg.server_sgd == "semifl_code") == (labels > 1000)
    assert server_sgd_of(anchor.paper_config("fedanchor", "cpu", dataset="cifar10", model="resnet18",
                                             server_labeled=labels))[0] == 10
