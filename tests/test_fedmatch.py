"""FedMatch: θ = σ + ψ, disjoint gradients, the agreement pseudo-label and the regularisers on hand
cases, helpers by embedding distance (and the engine's client order), their bytes in the download,
and tiny runs in both label scenarios."""

import pytest
import torch

from fssl_core.algorithms.base import Context, Upload
from fssl_core.algorithms.fedmatch import (FedMatch, agreement_pseudo_labels, compose, l1_norm, l2_to_sigma,
                                           nearest_clients)
from fssl_core.learning.batches import DataView, Plan, UnlabeledPart
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import payload_bytes
from fssl_core.models import build_model
from fssl_core.store import RunStore
from fssl_core.engine.trainer import train

from .conftest import requires_mnist
from .fake_batches import mixed_batch

MODEL_BYTES = 21_840 * 4      # the MNIST CNN's parameters, float32; it has no buffers


def _algo(**changes):
    torch.manual_seed(0)
    model = build_model("cnn_mnist", num_classes=10, in_channels=1)
    return FedMatch(RunConfig(algorithm="fedmatch", **changes), Context(model, 10, torch.device("cpu"))), model


def _random_like(tensors, scale=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {k: scale * torch.randn(v.shape, generator=g) for k, v in tensors.items()}


def test_the_network_applied_is_sigma_plus_psi():
    algo, model = _algo()
    sigma = _random_like(model.state_dict(), seed=1)
    psi = _random_like(dict(model.named_parameters()), seed=2)
    x = torch.randn(4, 1, 28, 28, generator=torch.Generator().manual_seed(3))
    summed = build_model("cnn_mnist", num_classes=10, in_channels=1)
    summed.load_state_dict({k: sigma[k] + psi[k] for k in sigma})
    summed.eval()
    torch.testing.assert_close(algo.ctx.apply(compose(sigma, psi), x, train=False), summed(x))
    # the global model evaluated is σ + ψ; it starts at the run's initial model with ψ_0 = 0.2 σ_0
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    state = algo.init_state(initial)
    for k in initial:
        torch.testing.assert_close(algo.eval_tensors(state)[k], initial[k])
        torch.testing.assert_close(state["psi"][k], 0.2 * state["sigma"][k])


def test_buffers_come_from_sigma_itself():
    net = build_model("cnn_cifar", num_classes=10, in_channels=3)     # has BatchNorm
    sigma = {k: v.clone() for k, v in net.state_dict().items()}
    params = {n for n, _ in net.named_parameters()}
    psi = {k: torch.ones_like(sigma[k]) for k in params}
    theta = compose(sigma, psi)
    buffers = [k for k in sigma if k not in params]
    assert buffers and all(theta[k] is sigma[k] for k in buffers)       # running statistics update σ's
    assert all(torch.equal(theta[k], sigma[k] + 1) for k in params)


def test_each_term_trains_only_its_own_part():
    algo, model = _algo(pseudo_label_threshold=0.0)       # every sample confident: Φ is active
    sigma = {k: v.clone() for k, v in model.state_dict().items()}
    psi = {k: 0.2 * v.clone() for k, v in model.named_parameters()}
    helper = {"sigma": sigma, "psi": _random_like(psi, seed=5)}
    nets = {"sigma": sigma, "psi": psi, "helper0": compose(helper["sigma"], helper["psi"]),
            "helper_slots": {"present": torch.tensor([1.0])}}
    leaves = {**{("sigma", k): sigma[k] for k in psi}, **{("psi", k): p for k, p in psi.items()}}
    for t in leaves.values():
        t.requires_grad_()
    batch, _ = mixed_batch(3, 5)

    def grads(loss):
        return dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values()), allow_unused=True,
                                                    retain_graph=True)))

    supervised = grads(algo.supervised_loss(nets, batch.labeled))
    unsupervised_loss, stats = algo.unsupervised_loss(nets, batch.unlabeled)
    unsupervised = grads(unsupervised_loss)
    assert all(g is not None and g.abs().sum() > 0 for (role, _), g in supervised.items() if role == "sigma")
    assert all(g is None for (role, _), g in supervised.items() if role == "psi")
    assert all(g is not None and g.abs().sum() > 0 for (role, _), g in unsupervised.items() if role == "psi")
    assert all(g is None for (role, _), g in unsupervised.items() if role == "sigma")
    # the KL term of the one helper and the pseudo-label term both took part
    assert stats["iccs_loss"] > 0 and stats["pseudo_label_loss"] > 0 and stats["mask_rate"] == 1.0
    assert stats["helpers"] == 1.0


def test_agreement_pseudo_label_on_a_hand_case():
    local = torch.tensor([[0.96, 0.02, 0.02],     # local says 0, both helpers 1: two votes beat one
                          [0.10, 0.85, 0.05],     # all three differ: the local model's class 1
                          [0.05, 0.05, 0.90]])    # all say 2
    helper1 = torch.tensor([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.1, 0.1, 0.8]])    # argmax 1, 2, 2
    helper2 = torch.tensor([[0.1, 0.8, 0.1], [0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])    # argmax 1, 0, 2
    labels, mask = agreement_pseudo_labels(local, [helper1, helper2], threshold=0.9)
    assert labels.tolist() == [1, 1, 2]
    assert mask.tolist() == [1.0, 0.0, 1.0]       # only the local confidence counts; ≥ is inclusive
    labels, _ = agreement_pseudo_labels(local, [], threshold=0.9)
    assert labels.tolist() == [0, 1, 2]           # without helpers: the local argmax
    # an empty helper slot casts no vote: helper1 alone ties with the local class in row 0 (local wins)
    labels, _ = agreement_pseudo_labels(local, [helper1, helper2], threshold=0.9, present=torch.tensor([1.0, 0.0]))
    assert labels.tolist() == [0, 1, 2]


def test_empty_helper_slots_change_no_loss():
    # a client with one helper in a round of H = 2 holds two slots, the second its own θ masked out:
    # its loss equals the loss with the one helper alone
    algo, model = _algo(pseudo_label_threshold=0.0, fedmatch_helpers=2)
    sigma = {k: v.clone() for k, v in model.state_dict().items()}
    psi = {k: 0.2 * v.clone() for k, v in model.named_parameters()}
    payload = {"sigma": sigma, "psi": psi, "helpers": [_random_like(psi, seed=5)]}
    nets = algo.client_init(payload, DataView(torch.arange(3), torch.arange(3, 8)))
    assert nets["helper_slots"]["present"].tolist() == [1.0, 0.0] and "helper1" in nets
    batch, _ = mixed_batch(3, 5)
    padded, stats = algo.unsupervised_loss(nets, batch.unlabeled)
    alone = {k: v for k, v in nets.items() if k != "helper1"}
    alone["helper_slots"] = {"present": torch.tensor([1.0])}
    single, single_stats = algo.unsupervised_loss(alone, batch.unlabeled)
    assert padded.item() == pytest.approx(single.item(), rel=1e-6) and stats["iccs_loss"] > 0
    assert stats["helpers"] == single_stats["helpers"] == 1.0
    # a client that gets no helper at all: every slot empty, no KL
    nets = algo.client_init({**payload, "helpers": []}, DataView(torch.arange(3), torch.arange(3, 8)))
    _, stats = algo.unsupervised_loss(nets, batch.unlabeled)
    assert stats["iccs_loss"] == 0.0 and stats["helpers"] == 0.0


def test_l1_and_l2_terms_on_hand_tensors():
    psi = {"a": torch.tensor([1.0, -2.0]), "b": torch.tensor([[0.5]])}
    sigma = {"a": torch.tensor([0.0, 0.0]), "b": torch.tensor([[1.5]]), "bn.running_mean": torch.ones(3)}
    assert l1_norm(psi).item() == 3.5                       # |1| + |−2| + |0.5|
    assert l2_to_sigma(psi, sigma).item() == 6.0            # 1 + 4 + 1, buffers not in ψ
    # with no unlabeled sample, L_u is the two regularisers alone, λ_L2·6 + λ_L1·3.5
    algo, _ = _algo(fedmatch_lambda_l2=10.0, fedmatch_lambda_l1=1e-4)
    empty = torch.empty(0, dtype=torch.long)
    part = UnlabeledPart(mixed_batch(3, 5)[1], empty, empty, torch.Generator())
    loss, _ = algo.unsupervised_loss({"sigma": sigma, "psi": psi}, part)
    assert loss.item() == pytest.approx(10.0 * 6 + 1e-4 * 3.5)


def _state_with_clients(algo, model, embeddings):
    state = algo.init_state({k: v.clone() for k, v in model.state_dict().items()})
    state["client_embedding"] = {c: torch.tensor(e) for c, e in embeddings.items()}
    state["client_psi"] = {c: {k: torch.full_like(v, float(c)) for k, v in state["psi"].items()} for c in embeddings}
    return state


def test_helpers_are_the_nearest_clients_sent_every_tenth_round():
    algo, model = _algo(fedmatch_helpers=2)
    state = _state_with_clients(algo, model, {0: [1.0, 0.0], 1: [0.9, 0.1], 2: [0.0, 1.0], 3: [0.8, 0.2]})
    payload = algo.download(state, 10, client=0)
    assert [h["fc1.weight"][0, 0].item() for h in payload["helpers"]] == [1.0, 3.0]   # distances 0.14, 0.28
    assert payload_bytes(payload) == (2 + 2) * MODEL_BYTES          # σ, ψ and two helpers' ψ
    assert "helpers" not in algo.download(state, 9, client=0)        # helpers only in rounds 10, 20, ...
    assert algo.download(state, 10, client=7)["helpers"] == []       # no embedding yet: no helpers
    assert payload_bytes(algo.download(state, 9, client=0)) == 2 * MODEL_BYTES
    assert nearest_clients(state["client_embedding"], 2, [0, 2], 2) == [0]   # fewer others than H


def test_aggregate_keeps_the_servers_sigma_when_no_client_sends_one():
    algo, model = _algo()
    state = algo.init_state({k: v.clone() for k, v in model.state_dict().items()})
    ups = [Upload(c, {"psi": {k: torch.full_like(v, float(c)) for k, v in state["psi"].items()}, "buffers": {}}, 0, 50)
           for c in (4, 8)]
    new = algo.aggregate(state, ups, 1)
    assert all(torch.equal(new["sigma"][k], state["sigma"][k]) for k in state["sigma"])
    assert all(torch.all(v == 6.0) for v in new["psi"].values())             # (4 + 8) / 2
    assert sorted(new["client_psi"]) == sorted(new["client_embedding"]) == [4, 8]
    assert new["client_embedding"][4].shape == (10,) and new["client_embedding"][4].sum().item() == pytest.approx(1.0)


TINY = dict(algorithm="fedmatch", dataset="mnist", partition="iid", labeled_ratio=0.1, labeled_repeats=3)


@requires_mnist
def test_download_bytes_include_the_helpers_and_survive_a_resume(tmp_path, monkeypatch):
    # three clients, all three every round, no local steps (only the bytes matter; RunConfig refuses
    # local_epochs=0, so the plan is patched): round 10 sends each client σ, ψ and the ψ of the two
    # others; uploads are σ and ψ
    monkeypatch.setattr(FedMatch, "plan", lambda self, view, round: Plan(epochs=0, labeled_batch=0))
    cfg = RunConfig(clients=3, clients_per_round=3, rounds=10, eval_every=10, **TINY)

    class Killed(Exception):
        pass

    def crash(r):
        if r == 9:
            raise Killed

    store = RunStore(tmp_path)
    with pytest.raises(Killed):
        train(cfg, store, progress=False, after_round=crash)
    run = train(cfg, store, progress=False)         # resumes at round 10 from the checkpoint
    assert [m["download_bytes"] for m in run.metrics] == [3 * 2 * MODEL_BYTES] * 9 + [3 * (2 + 2) * MODEL_BYTES]
    assert [m["upload_bytes"] for m in run.metrics] == [3 * 2 * MODEL_BYTES] * 10


@requires_mnist
def test_tiny_labels_at_client_run_learns(tmp_path):
    cfg = RunConfig(clients=100, clients_per_round=3, local_epochs=1, rounds=3, **TINY)
    run = train(cfg, RunStore(tmp_path), progress=False)
    assert run.metrics[-1]["accuracy"] > 10.0                # chance is 10%
    assert [m["upload_bytes"] for m in run.metrics] == [3 * 2 * MODEL_BYTES] * 3
    assert all(m["train_classification_loss"] > 0 and m["train_l2_loss"] > 0 for m in run.metrics)


@requires_mnist
def test_tiny_labels_at_server_run_uploads_psi_only(tmp_path):
    cfg = RunConfig(algorithm="fedmatch", dataset="mnist", partition="server_iid", labeled_ratio=0.01,
                    clients=100, clients_per_round=2, local_epochs=1, rounds=2)
    run = train(cfg, RunStore(tmp_path), progress=False)
    assert [m["upload_bytes"] for m in run.metrics] == [2 * MODEL_BYTES] * 2      # ψ; no σ, no buffers
    assert all(m["train_classification_loss"] == 0.0 for m in run.metrics)       # clients hold no labels
    assert run.metrics[-1]["accuracy"] > 10.0
