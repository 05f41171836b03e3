"""FedAnchor: Table 4 from the real parameter count."""
import pytest

from fssl_core.papers import fedanchor


def test_table4_matches_every_printed_digit():
    rows = fedanchor.table4_rows("resnet18")
    assert len(rows) == 7
    assert (rows.reproduced_value == rows.paper_value).all(), rows[["dataset", "labeled", "paper_value",
                                                                     "reproduced_value"]]
    # the counts the reading rests on: ResNet-18 without the anchor head, 10 and 100 classes
    assert set(rows.model_parameters) == {11_173_962, 11_220_132}


def test_overhead_hand_computed_and_bad_input_named():
    assert fedanchor.downstream_overhead(1000, 128_000) == pytest.approx(100.0)
    assert fedanchor.downstream_overhead(250, 11_173_962) == pytest.approx(0.28638, abs=1e-5)
    with pytest.raises(ValueError, match="model_parameters=0"):
        fedanchor.downstream_overhead(250, 0)


# --- the method's mathematics on hand-computed cases -----------------------------------------
import dataclasses
import math

import torch

from fssl_core.algorithms.fedanchor import anchor_pseudo_labels, label_contrastive_loss
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation
from fssl_core.store import RunStore

from .conftest import requires_mnist


def test_label_contrastive_loss_on_a_hand_computed_batch():
    # two classes, two samples each, same-class embeddings equal, classes orthogonal, τ = 1:
    # positives per class: 2 ordered pairs of cos 1 -> 2e; negatives: 8 ordered pairs of cos 0 -> 8
    # l(c) = -log(2e / 8) = log 4 - 1 for both classes, and L_c is their mean
    z = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    y = torch.tensor([0, 0, 1, 1])
    assert float(label_contrastive_loss(z, y, 1.0)) == pytest.approx(math.log(4) - 1)
    # τ = 0.5 doubles the positive logits: -log(2e² / 8)
    assert float(label_contrastive_loss(z, y, 0.5)) == pytest.approx(math.log(4) - 2)


def test_label_contrastive_loss_skips_classes_without_a_pair_and_pulls_classes_apart():
    # class 2 has one sample (no positive pair): C counts classes 0 and 1 only, but its sample
    # still enters the denominator (pairs with different labels)
    z = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    y = torch.tensor([0, 0, 1, 1, 2])
    s = 1 / math.sqrt(2)
    denominator = 8 * 1.0 + 8 * math.exp(s)      # 0-1 pairs: cos 0; pairs with the class-2 sample: cos 1/√2
    assert float(label_contrastive_loss(z, y, 1.0)) == pytest.approx(-math.log(2 * math.e / denominator))
    assert float(label_contrastive_loss(z[:2], y[:2], 1.0)) == 0.0       # one class: no negatives
    # the gradient moves embeddings so that the loss falls
    z = torch.randn(12, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
    labels = torch.arange(12) % 3
    before = label_contrastive_loss(z, labels, 0.1)
    before.backward()
    with torch.no_grad():
        after = label_contrastive_loss(z - 0.05 * z.grad, labels, 0.1)
    assert float(after) < float(before.detach())


def test_anchor_pseudo_labels_average_cosines_over_a_class_not_the_cosine_to_its_mean():
    anchors = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 2.0]])     # class 0: two anchors; class 1: one
    anchor_labels = torch.tensor([0, 0, 1], dtype=torch.uint8)
    z = torch.tensor([[0.6, 0.8], [3.0, 0.0]])
    labels, score = anchor_pseudo_labels(z, anchors, anchor_labels, num_classes=3)
    # sample 0: class 0 averages cos 0.6 and 0.96 -> 0.78; class 1: cos 0.8 -> label 1 with 0.8
    # (the cosine to class 0's mean direction would be 0.82 and pick class 0); class 2 has no anchor
    assert labels.tolist() == [1, 0]
    assert score.tolist() == pytest.approx([0.8, 0.9])
    assert (score > 0.6).tolist() == [True, True]


@requires_mnist
def test_fedanchor_round_sends_the_anchor_embeddings_and_logs_pseudo_label_quality(tmp_path):
    cfg = RunConfig(algorithm="fedanchor", dataset="fashion_mnist", partition="server_lda", dirichlet_alpha=1000.0,
                    server_labeled=100, server_balanced=True, projection_dim=16, pseudo_label_threshold=0.6,
                    clients=20, clients_per_round=2, rounds=2, local_epochs=1, batch_size=10,
                    pretrain_epochs=1, lr=0.03, weight_decay=5e-4, client_weighting="samples", seed=3)
    result = train(cfg, RunStore(tmp_path))
    fed = Federation.build(cfg)
    params = sum(v.numel() * v.element_size() for v in fed.initial_state()["model"].values())
    first = result.metrics[0]
    # per client: the model (with its anchor head), 100 × 16 float32 embeddings, 100 uint8 labels
    assert first["download_bytes"] == 2 * (params + 100 * 16 * 4 + 100)
    assert 0 <= first["selected"] <= 60000 / 20
    assert "pseudo_label_accuracy_all" in first and "pseudo_label_accuracy_all_classifier" in first
    trained = first["upload_bytes"] // params      # clients with an empty fix set send nothing
    assert trained * params == first["upload_bytes"] and trained <= 2


# --- cells ------------------------------------------------------------------------------------
import pandas as pd

from fssl_core.algorithms.semifl import mixup_loss
from fssl_core.profiles import PROFILES


def test_every_printed_accuracy_of_tables_1_to_3_is_a_cell_or_a_named_missing_method():
    pv = fedanchor.paper_values()
    for table in ("table1", "table2", "table3"):
        printed = pv[(pv.paper == "fedanchor") & (pv.table == table) & (pv.metric == "accuracy")]
        cells = fedanchor.table_cells(table, PROFILES["paper"], "cpu")
        covered = {(c.setting, c.labeled, c.dataset, c.method) for c in cells}
        for row in printed.itertuples():
            assert (row.setting, row.labeled, row.dataset, row.method) in covered or \
                row.method in fedanchor.missing_methods(table)
    assert all(fedanchor.missing_methods(t) == [] for t in ("table1", "table2", "table3"))
    # the coordinates become the config: Table 2's non-IID SVHN 1000 is WRN-28-2, Dir 0.1, 1000 anchors
    cell = next(c for c in fedanchor.table_cells("table2", PROFILES["paper"], "cpu")
                if (c.setting, c.labeled, c.dataset, c.method) == ("wrn28x2_dir0.1", "1000", "svhn", "fedanchor_mix"))
    cfg = cell.configs[0]
    assert (cfg.model, cfg.dirichlet_alpha, cfg.server_labeled, cfg.server_mixup, cfg.projection_dim,
            cfg.pseudo_label_threshold, cfg.rounds, len(cell.configs)) == ("wrn28_2", 0.1, 1000, True, 128, 0.6, 500, 3)


def test_fmnist_claims_are_fedanchor_minus_semifl_per_setting():
    rows = [{"setting": s, "labeled": "250", "method": m, "metric": k, "reproduced_value": v, "n_runs": 1,
             "profile": "quick", "device": "cpu", "status": "reduced"}
            for s, m, k, v in [("iid", "fedanchor", "accuracy", 80.0), ("iid", "semifl", "accuracy", 75.5),
                               ("iid", "fedanchor", "selected", 400.0), ("iid", "semifl", "selected", 100.0),
                               ("iid", "fedanchor", "pseudo_label_accuracy_all", 90.0),
                               ("iid", "semifl", "pseudo_label_accuracy_all", 95.0)]]
    claims = fedanchor.fmnist_claims(pd.DataFrame(rows)).set_index("metric").reproduced_value
    assert claims.to_dict() == {"pseudo_label_accuracy_all_gap": -5.0, "selected_gap": 300.0, "accuracy_gap": 4.5}


def test_mixup_loss_interpolates_the_two_cross_entropies():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    a, b = torch.tensor([0, 1]), torch.tensor([1, 1])
    ce = torch.nn.functional.cross_entropy
    assert float(mixup_loss(logits, a, b, 1.0)) == pytest.approx(float(ce(logits, a)))
    assert float(mixup_loss(logits, a, b, 0.25)) == pytest.approx(0.25 * float(ce(logits, a)) + 0.75 * float(ce(logits, b)))


def test_cells_of_unimplemented_methods_are_report_rows_with_the_paper_value(monkeypatch):
    monkeypatch.delitem(fedanchor.METHODS, "fedcon")
    rows = fedanchor.not_implemented_rows("table1", PROFILES["quick"], "cpu")
    assert len(rows) == 14 and set(rows.method) == {"fedcon"} and set(rows.status) == {"not-implemented"}
    assert rows.set_index(["setting", "labeled", "dataset"]).paper_value[("resnet18_iid", "250", "cifar10")] == 34.94


@requires_mnist
def test_a_run_stopped_early_is_the_longer_runs_prefix_and_its_final_state_is_what_was_evaluated(tmp_path):
    # Figure 5 draws the latent space of runs stopped at rounds 1, 10, 30: each must be the
    # 30-round run's first rounds, and the stored final state the model whose accuracy was logged
    from fssl_core.engine.latent import test_embeddings
    cfg = RunConfig(algorithm="fedanchor", dataset="fashion_mnist", partition="server_lda", dirichlet_alpha=1000.0,
                    server_labeled=100, server_balanced=True, projection_dim=8, pseudo_label_threshold=0.6,
                    clients=20, clients_per_round=2, rounds=3, local_epochs=1, pretrain_epochs=1, seed=5)
    store = RunStore(tmp_path)
    long, short = train(cfg, store), train(cfg.replace(rounds=2), store)
    assert [m["accuracy"] for m in short.metrics] == [m["accuracy"] for m in long.metrics[:2]]
    fed = Federation.build(cfg)
    assert fed.evaluate(store.final_state(cfg)["model"]) == long.accuracy
    z, y = test_embeddings(cfg, store, samples=50)
    assert z.shape == (50, 8) and y.shape == (50,)
    assert abs(float((z ** 2).sum(1).mean()) - 1.0) < 1e-5


# --- FedCon ------------------------------------------------------------------------------------
from fssl_core.algorithms.fedcon import byol_loss


def test_byol_loss_is_two_minus_twice_the_cosine():
    online = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    target = torch.tensor([[2.0, 0.0], [0.0, 3.0]])
    # cosines 1 and 1/√2: mean of (0, 2 − √2)
    assert float(byol_loss(online, target)) == pytest.approx((2 - math.sqrt(2)) / 2)


@requires_mnist
def test_fedcon_averages_the_backbone_and_trains_the_classifier_only_at_the_server(tmp_path):
    cfg = RunConfig(algorithm="fedcon", dataset="fashion_mnist", partition="server_lda", dirichlet_alpha=1000.0,
                    server_labeled=100, server_balanced=True, clients=20, clients_per_round=2, rounds=1,
                    local_epochs=1, byol_hidden=16, seed=2)
    fed = Federation.build(cfg)
    state = fed.initial_state()
    before = {k: v.clone() for k, v in state["model"].items()}
    state, metrics = fed.run_round(state, 1)
    backbone = set(fed.algorithm.backbone)
    assert {k for k in before if k not in backbone} == {"classifier.weight", "classifier.bias"}
    # the bytes: each client receives and sends the backbone and the predictor, never the classifier
    per_client = sum(before[k].numel() * 4 for k in backbone) + sum(v.numel() * 4 for v in state["predictor"].values())
    assert metrics["download_bytes"] == metrics["upload_bytes"] == 2 * per_client
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    assert not torch.equal(before["conv1.weight"], state["model"]["conv1.weight"])


def test_curve_figures_draw_table1_cells():
    pairs = fedanchor.curve_cells(9, PROFILES["paper"], "cpu")
    assert {p for p, _ in pairs} == {("cifar10", "resnet18_dir0.1", "250"), ("cifar10", "resnet18_dir0.1", "500"),
                                     ("svhn", "resnet18_dir0.1", "250"), ("svhn", "resnet18_dir0.1", "1000")}
    assert {c.method for _, c in pairs} == {"fedanchor", "semifl"}
    table1 = {c.configs[0].run_id for c in fedanchor.table_cells("table1", PROFILES["paper"], "cpu")}
    assert all(c.configs[0].run_id in table1 for _, c in pairs)
    assert len(fedanchor.curve_cells(6, PROFILES["paper"], "cpu")) == 6 * 6
    with pytest.raises(ValueError, match="figure=5: must be one of 2, 3, 4, 6, 7, 8, 9"):
        fedanchor.curve_cells(5, PROFILES["paper"], "cpu")


def test_static_batchnorm_recomputes_the_statistics_from_the_server_images_alone():
    """SemiFL's sBN: the first BatchNorm's running mean/var become the per-channel mean and
    (unbiased, per batch, averaged) variance of the first convolution's output on the given images,
    whatever the statistics were before; the weights are untouched."""
    from fssl_core.algorithms.base import Context
    from fssl_core.learning.batches import TrainImages
    from fssl_core.data.augment import AugmentSpec
    from fssl_core.models import build_model
    torch.manual_seed(0)
    model = build_model("cnn_cifar", num_classes=10, in_channels=3)
    images = TrainImages(x=torch.rand(12, 3, 32, 32), y=torch.zeros(12, dtype=torch.long),
                         normalize=lambda x: (x - 0.5) / 0.25, augment=AugmentSpec(flip=False, pad=0))
    ctx = Context(model=model, num_classes=10, device=torch.device("cpu"), images=images)
    tensors = {k: v.detach().clone() for k, v in model.state_dict().items()}
    tensors["body.1.running_mean"] += 5.0                      # stale statistics, as averaged ones can be
    idx = torch.tensor([0, 3, 4, 7, 8, 11])
    out = ctx.batchnorm_statistics(tensors, idx, batch_size=3)
    conv = torch.nn.functional.conv2d(images.normalize(images.x[idx]), tensors["body.0.weight"],
                                      tensors["body.0.bias"], padding=1)
    batches = conv.split(3)
    mean = torch.stack([b.mean((0, 2, 3)) for b in batches]).mean(0)
    var = torch.stack([b.var((0, 2, 3), unbiased=True) for b in batches]).mean(0)
    assert torch.allclose(out["body.1.running_mean"], mean, atol=1e-5)
    assert torch.allclose(out["body.1.running_var"], var, rtol=1e-4)
    assert int(out["body.1.num_batches_tracked"]) == 2
    assert torch.equal(out["body.0.weight"], tensors["body.0.weight"])
    assert model.body[1].momentum == 0.1                       # the template's momentum is restored
    # a network without BatchNorm is returned as it is
    plain = build_model("cnn_mnist", num_classes=10, in_channels=1)
    ctx_plain = Context(model=plain, num_classes=10, device=torch.device("cpu"), images=images)
    same = {k: v.clone() for k, v in plain.state_dict().items()}
    assert ctx_plain.batchnorm_statistics(same, idx, 3) is same


# --- BatchNorm: one treatment for every method (algorithms/static_batchnorm.py) -------------------
from fssl_core.algorithms.semifl import AlternateTraining
from fssl_core.models import MODELS
from fssl_core.models.wrn import WideResNet28x2
from fssl_core.engine.trainer import train


class _TinyWRN(WideResNet28x2):
    """WRN-28-2's blocks and BatchNorm momentum (0.001) at depth 10, widen 1: one block a group."""
    def __init__(self, num_classes=10, in_channels=3, projection_dim=None):
        super().__init__(num_classes=num_classes, in_channels=in_channels, projection_dim=projection_dim,
                         depth=10, widen=1)


def test_every_method_of_the_fedanchor_experiments_gets_the_same_batchnorm_treatment():
    configs = [cfg for table in ("table1", "table2", "table3")
               for cell in fedanchor.table_cells(table, PROFILES["paper"], "cpu") for cfg in cell.configs]
    configs += [cfg for cell in fedanchor.fmnist_cells(PROFILES["paper"], "cpu") for cfg in cell.configs]
    configs += [fedanchor.paper_config(m, "cpu", dataset="fashion_mnist") for m in fedanchor.DIAGNOSTICS]
    configs += fedanchor.figure5_configs(PROFILES["paper"], "cpu", dataset="cifar10")
    assert {cfg.algorithm for cfg in configs} == {"fedanchor", "semifl", "fedcon", "fedfixmatch", "supervised_fl"}
    assert {cfg.static_batchnorm for cfg in configs} == {True}


@requires_mnist
@pytest.mark.parametrize("method", fedanchor.FMNIST_METHODS)
def test_the_evaluated_model_of_every_method_has_the_statistics_of_the_anchors(method, monkeypatch):
    """On a small WRN (momentum 0.001), after a round the evaluated model's running statistics are
    those recomputed from the server's labeled images, for every method; for the methods whose
    clients pseudo-label in eval mode (SemiFL, FedAnchor), so are those of round 1's download,
    right after pre-training."""
    monkeypatch.setitem(MODELS, "wrn28_2", dataclasses.replace(MODELS["wrn28_2"], where=f"{__name__}:_TinyWRN"))
    cfg = fedanchor.paper_config(method, "cpu", dataset="fashion_mnist", model="wrn28_2", dirichlet_alpha=0.1,
                                 server_labeled=50)
    cfg = RunConfig.dropping_unread(**{**cfg.to_dict(), **dict(clients=10, clients_per_round=2, rounds=1, local_epochs=1,
                                                               pretrain_epochs=1, resplit_train=600, resplit_test=100)})
    fed = Federation.build(cfg)
    algo, anchors = fed.algorithm, fed.server_view.labeled
    downloaded = []        # copies: a model no client trained is the one the server then trains in place

    def download(state, r, client, original=algo.download):
        payload = original(state, r, client)
        downloaded.append({k: v.clone() for k, v in payload.get("model", {}).items()})
        return payload
    monkeypatch.setattr(algo, "download", download)
    state, _ = fed.run_round(fed.initial_state(), 1)

    def assert_recomputed(tensors):
        want = fed.ctx.batchnorm_statistics(tensors, anchors, cfg.batch_size)
        stats = [k for k in want if k.endswith(("running_mean", "running_var"))]
        assert len(stats) == 2 * 7                 # 7 BatchNorms: two in each of 3 blocks, the last one
        for k in stats:
            assert torch.allclose(tensors[k], want[k], rtol=1e-5, atol=1e-6), k
        # and they are not the initial (0, 1) that momentum 0.001 would barely have moved
        assert float((want["bn.running_var"] - 1).abs().max()) > 0.1
    assert_recomputed(algo.eval_tensors(state))
    if isinstance(algo, AlternateTraining):
        assert_recomputed(downloaded[0])


def test_each_fmnist_diagnostic_is_its_method_with_one_change_the_lr():
    # the diagnostics explain a failing row (FedAvg+FixMatch at chance, Supervised diverged at lr 0.03)
    # by changing the learning rate alone, so their rows read as "the same method at lr 0.01"
    quick = PROFILES["quick"]
    for diagnostic, method in (("fedavg_fixmatch_lr0.01", "fedavg_fixmatch"), ("supervised_lr0.01", "supervised")):
        probe, = [c for c in fedanchor.fmnist_cells(quick, "cpu", methods=[diagnostic], settings=["dir0.1"])
                  if c.metric == "accuracy"]
        base, = [c for c in fedanchor.fmnist_cells(quick, "cpu", methods=[method], settings=["dir0.1"])
                 if c.metric == "accuracy"]
        assert probe.configs[0].lr == 0.01 and base.configs[0].lr == 0.03
        assert probe.configs[0].replace(lr=0.03) == base.configs[0]


def test_fmnist_cells_take_every_seed_given_past_the_profiles_share():
    """Left to the profile, quick runs one of the paper's seeds; a notebook's explicit `seeds` runs them all
    (three seeds behind a claim at the reduced protocol)."""
    from fssl_core.papers.fedanchor import fmnist_cells
    from fssl_core.profiles import get_profile
    quick = get_profile("quick")
    one = fmnist_cells(quick, "cpu", methods=["fedanchor"], settings=["iid"])
    three = fmnist_cells(quick, "cpu", methods=["fedanchor"], settings=["iid"], seeds=[1, 2, 3])
    assert {len(c.configs) for c in one} == {1} and {len(c.configs) for c in three} == {3}
    assert [c.seed for c in three[0].configs] == [1, 2, 3] and three[0].configs[0] == one[0].configs[0]


def test_the_server_ce_epoch_sees_the_view_server_ce_view_names():
    """`server_ce_view='weak'` gives FedAnchor's server CE epoch SemiFL's views (the comparison without the view
    difference); the loss on hand-made views: zeros give logits (0, 0), CE log 2; ones give (3, −3), labels (0, 1)."""
    from types import SimpleNamespace

    from fssl_core.algorithms.fedanchor import FedAnchor
    seen = []

    class Anchors:
        y = torch.tensor([0, 1])

        def strong(self):
            seen.append("strong")
            return torch.zeros(2, 3)

        def weak(self):
            seen.append("weak")
            return torch.ones(2, 3)

    ctx = SimpleNamespace(apply=lambda model, x: torch.stack([x.sum(1), -x.sum(1)], 1))
    expected = {"strong": math.log(2), "weak": 3 + math.log1p(math.exp(-6))}
    for view in ("strong", "weak"):
        cfg = RunConfig(algorithm="fedanchor", partition="server_iid", projection_dim=16, server_ce_view=view)
        loss, _ = FedAnchor(cfg, ctx).server_loss({"model": None}, SimpleNamespace(labeled=Anchors()), None)
        assert seen == [view] and float(loss) == pytest.approx(expected[view])
        seen.clear()
    assert RunConfig(algorithm="fedanchor", partition="server_iid", projection_dim=16).server_ce_view == "strong"


def test_a_round_averages_each_selected_count_over_its_clients():
    from fssl_core.algorithms.semifl import _round_report
    reports = [{"selected": 2.0, "selected_softmax95": 4.0, "correct_selected": 1.0, "correct_all": 3.0, "unlabeled": 10.0},
               {"selected": 6.0, "selected_softmax95": 0.0, "correct_selected": 3.0, "correct_all": 5.0, "unlabeled": 10.0}]
    assert _round_report(reports) == {"selected": 4.0, "selected_softmax95": 2.0, "pseudo_label_accuracy": 50.0,
                                      "pseudo_label_accuracy_all": 40.0}


def test_same_views_claims_compare_fedanchor_with_semifls_views_and_test_against_semifl():
    rows = [{"setting": "iid", "labeled": "250", "method": m, "metric": k, "reproduced_value": v, "n_runs": 3,
             "reproduced_std": 1.0, "profile": "quick", "device": "cpu", "status": "reduced"}
            for m, k, v in [("fedanchor_weak_server", "accuracy", 70.0), ("semifl", "accuracy", 66.0),
                            ("fedanchor_weak_server", "selected", 500.0), ("semifl", "selected", 200.0),
                            ("fedanchor_weak_server", "selected_softmax95", 260.0),
                            ("fedanchor_weak_server", "pseudo_label_accuracy_all", 71.0),
                            ("semifl", "pseudo_label_accuracy_all", 65.0), ("fedanchor", "accuracy", 99.0)]]
    claims = fedanchor.fmnist_same_views_claims(pd.DataFrame(rows))
    assert set(claims.table) == {"fmnist_same_views_claims"} and set(claims.method) == {"fedanchor_weak_server vs semifl"}
    # selected: its samples past SemiFL's test (260) against SemiFL's (200), not its own test's 500
    assert claims.set_index("metric").reproduced_value.to_dict() == {
        "pseudo_label_accuracy_all_gap": 6.0, "selected_softmax95_gap": 60.0, "accuracy_gap": 4.0}
    from fssl_core.papers import claim_comparisons
    cells = pd.DataFrame(rows).assign(paper="fedanchor", table="fmnist", dataset="fashion_mnist")
    comparisons = claim_comparisons()["fedanchor"](cells)
    selected = next(c for key, c in comparisons.items() if "selected_softmax95_gap" in key)
    assert (selected.ours.mean, selected.theirs[0].mean, selected.unit) == (260.0, 200.0,
                                                                            "samples per client (one test: softmax > 0.95)")


def test_a_fashion_mnist_cell_exists_only_for_a_metric_its_method_has_a_meaning_for():
    cells = fedanchor.fmnist_cells(PROFILES["quick"], "cpu", methods=["supervised", "fedcon", "fedavg_fixmatch", "fedanchor"],
                                   settings=["iid"])
    metrics = {m: [c.metric for c in cells if c.method == m] for m in ("supervised", "fedcon", "fedavg_fixmatch", "fedanchor")}
    assert metrics == {"supervised": ["accuracy"], "fedcon": ["accuracy"],
                       "fedavg_fixmatch": ["accuracy", "pseudo_label_accuracy"], "fedanchor": list(fedanchor.FMNIST_METRICS)}


def test_fedanchors_selected_samples_fall_in_every_committed_fashion_mnist_run():
    """What REPORT.md says against the paper ("grows with the training round"), from the committed runs
    of the published Fashion-MNIST cells."""
    from fssl_core.run_config import RunConfig
    from fssl_core.papers.fedanchor import selected_trend
    from fssl_core.paths import project_root
    from fssl_core.report.tables import Cell, read_results
    from fssl_core.store import RunStore
    from fssl_core.store.files import read_json
    rows = read_results(project_root() / "results" / "fedanchor_fmnist.csv")
    ids = [i for ids in rows[(rows.table == "fmnist") & (rows.method == "fedanchor") & (rows.metric == "selected")
                             & (rows.profile == "quick")].run_ids for i in ids.split()]
    store = RunStore(project_root() / "runs")
    configs = tuple(RunConfig.from_dict(read_json(store.root / i / "config.json")) for i in ids)
    trend = selected_trend([Cell("fedanchor", "fmnist", "iid", "250", "fashion_mnist", "fedanchor", configs,
                                 metric="selected")], store)
    assert len(trend) == len(ids) == 10 and trend.falls.all()      # 5 seeds, IID and Dir(0.1)
    assert trend.last_round.mean() < 0.85 * trend.first_round.mean()    # not a wobble: 15% fewer on average
