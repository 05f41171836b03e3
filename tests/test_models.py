"""The papers' networks: parameter counts as the papers state them, shapes, the anchor head,
pooling that changes no float."""
import copy

import pytest
import torch

from fssl_core.models import MODELS, build_model, count_parameters, default_model_for


@pytest.mark.parametrize("name, num_classes, in_channels, expected", [
    ("cnn_mnist", 10, 1, 21_840),       # FedSiam §4.1: "21840 total parameters"
    ("cnn_cifar", 10, 3, 5_852_170),    # FedSiam §4.1: "5,852,170 total parameters"
    ("wrn28_2", 10, 3, 1_467_610),      # FixMatch's WRN-28-2 for CIFAR-10
    ("resnet18", 10, 3, 11_173_962),    # torchvision-style ResNet-18 with a 3×3 stem, 10 classes
    ("resnet9", 10, 3, 6_573_130),      # 1,856 + 73,984 + 2·147,712 + 295,424 + 1,180,672 + 2·2,360,320 + 5,130
    ("resnet9_narrow", 10, 3, 103_954),  # 232 + 1,184 + 2·2,336 + 4,672 + 18,560 + 2·36,992 + 650
    ("resnet9_narrow", 10, 1, 103_810),  # Fashion-MNIST's one channel: the first conv has 1·9·8 weights, not 3·9·8
    # FedMatch's code's shapes: 3·3·3·64 + 3·3·64·128 + 2·3·3·128·128 + 3·3·128·256 + 3·3·256·512 + 2·3·3·512·512 + 512·10
    ("resnet9_fedmatch", 10, 3, 6_568_640),
    # at 1/8 width, Fashion-MNIST's one channel: 1·9·8 + 8·9·16 + 2·16·9·16 + 16·9·32 + 32·9·64 + 2·64·9·64 + 64·10
    ("resnet9_fedmatch_narrow", 10, 1, 103_240),
])
def test_parameter_counts(name, num_classes, in_channels, expected):
    assert count_parameters(build_model(name, num_classes=num_classes, in_channels=in_channels)) == expected


def test_classifier_grows_with_the_number_of_classes():
    # CIFAR-100 adds 90 rows to the final 512→C layer: 90·(512+1) parameters.
    ten = count_parameters(build_model("cnn_cifar", num_classes=10, in_channels=3))
    hundred = count_parameters(build_model("cnn_cifar", num_classes=100, in_channels=3))
    assert hundred - ten == 90 * 513


@pytest.mark.parametrize("name, in_channels, size", [("cnn_mnist", 1, 28), ("cnn_cifar", 3, 32),
                                                     ("wrn28_2", 3, 32), ("resnet18", 3, 32), ("resnet9", 3, 32),
                                                     ("resnet9_fedmatch", 1, 28)])
def test_logits_and_anchor_embedding_shapes(name, in_channels, size):
    model = build_model(name, num_classes=10, in_channels=in_channels, projection_dim=128).eval()
    x = torch.randn(3, in_channels, size, size)
    logits, embedding = model(x, embed=True)
    assert logits.shape == (3, 10) and embedding.shape == (3, 128)
    assert torch.equal(model(x), logits)          # the head does not change the logits


def test_projection_head_adds_a_linear_layer_on_the_features():
    plain = count_parameters(build_model("wrn28_2", num_classes=10, in_channels=3))
    with_head = count_parameters(build_model("wrn28_2", num_classes=10, in_channels=3, projection_dim=128))
    assert with_head - plain == 128 * (128 + 1)    # WRN-28-2 features are 128-d


def test_embedding_without_a_head_is_a_clear_error():
    model = build_model("cnn_mnist", num_classes=10, in_channels=1)
    with pytest.raises(ValueError, match="projection head"):
        model(torch.zeros(1, 1, 28, 28), embed=True)


def test_bad_names_are_named_in_the_error():
    with pytest.raises(ValueError, match=r"name='vgg'.*cnn_cifar"):
        build_model("vgg", num_classes=10, in_channels=3)
    with pytest.raises(ValueError, match=r"dataset='imagenet'"):
        default_model_for("imagenet")


def test_every_dataset_has_the_fedsiam_network_by_default():
    assert default_model_for("mnist") == "cnn_mnist" and default_model_for("svhn") == "cnn_cifar"
    assert set(MODELS) >= {"cnn_mnist", "cnn_cifar", "resnet18", "wrn28_2"}


@pytest.mark.parametrize("name, in_channels, size", [("cnn_mnist", 1, 28), ("cnn_cifar", 3, 32)])
def test_channels_last_pooling_changes_no_float_of_a_step(name, in_channels, size, monkeypatch):
    # models/pooling.py pools in channels_last on the CPU; a run's numbers must not move by a bit:
    # the logits and every gradient (train mode) and the logits (eval mode) equal those of
    # F.max_pool2d's NCHW kernel, on digit-like images whose blank regions fill windows with ties
    import torch.nn.functional as F

    from fssl_core.models import cnn_mnist, pooling
    torch.manual_seed(0)
    x = torch.rand(8, in_channels, size, size)
    x = torch.where(x < 0.7, torch.zeros(()), x)            # 70% blank pixels
    built = build_model(name, num_classes=10, in_channels=in_channels)
    outputs = {}
    for kind in ("channels_last", "reference"):
        if kind == "reference":
            monkeypatch.setattr(pooling, "max_pool2x2", lambda h: F.max_pool2d(h, 2))
            monkeypatch.setattr(cnn_mnist, "max_pool2x2", lambda h: F.max_pool2d(h, 2))
        model = copy.deepcopy(built).train()                # the same BatchNorm statistics
        torch.manual_seed(1)                                 # the same dropout masks
        logits = model(x)
        logits.square().sum().backward()
        with torch.no_grad():
            evaluated = model.eval()(x)
        outputs[kind] = [logits.detach(), evaluated] + [p.grad.clone() for p in model.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(outputs["channels_last"], outputs["reference"]))


@pytest.mark.parametrize("shape", [(64, 10, 24, 24), (64, 20, 8, 8), (3, 2, 7, 9)])
def test_pooling_without_a_gradient_keeps_the_pools_values(shape):
    # where no gradient flows, max_pool2x2 takes the maximum of strided views: the pool's values (ties of
    # zeros of both signs, NaN where the window holds one, an odd last row and column dropped)
    import torch.nn.functional as F

    from fssl_core.models.pooling import max_pool2x2
    torch.manual_seed(0)
    x = torch.randn(shape)
    x = torch.where(x.abs() < 0.5, torch.zeros(()), x)
    x = torch.where(x.abs() < 0.8, -torch.zeros(()), x)       # ±0 side by side in many windows
    x[0, 0, 0, 0] = float("nan")
    with torch.no_grad():
        pooled, reference = max_pool2x2(x), F.max_pool2d(x, 2)
    assert pooled.shape == reference.shape
    assert torch.equal(pooled.isnan(), reference.isnan())
    assert torch.equal(pooled.nan_to_num(7.0), reference.nan_to_num(7.0))


@pytest.mark.parametrize("name", ["cnn_mnist", "cnn_mnist_authors"])
def test_a_pooled_zeros_sign_changes_no_logit(name, monkeypatch):
    # pooling.py's argument for its strided maximum: of tied zeros of both signs it may keep another than the
    # pool (vectorised and scalar loops differ), and that cannot move a logit. Checked on maps full of such ties
    # (conv1 bypassed: the maps are the input), with every pooled zero's sign flipped on purpose
    import torch.nn.functional as F

    from fssl_core.models import cnn_mnist
    torch.manual_seed(0)
    model = build_model(name, num_classes=10, in_channels=1).eval()
    model.conv1 = torch.nn.Identity()
    maps = torch.randn(32, 10, 24, 24)
    maps = torch.where(maps < 0.3, torch.zeros(()), maps)
    maps = torch.where(torch.rand(maps.shape) < 0.5, maps, -maps)   # zeros of both signs, side by side
    logits = {}
    with torch.no_grad():
        logits["strided"] = model(maps)
        for kind, pool in [("pool", lambda h: F.max_pool2d(h, 2)),
                           ("flipped", lambda h: torch.where(F.max_pool2d(h, 2) == 0, -F.max_pool2d(h, 2),
                                                             F.max_pool2d(h, 2)))]:
            monkeypatch.setattr(cnn_mnist, "max_pool2x2", pool)
            logits[kind] = model(maps)
    assert (F.max_pool2d(maps, 2) == 0).float().mean() > 0.2          # many pooled zeros whose sign flips
    for kind in ("strided", "flipped"):
        assert torch.equal(logits[kind], logits["pool"])
        assert torch.equal(logits[kind].signbit(), logits["pool"].signbit())


def test_the_authors_mnist_network_is_table_1s_plus_their_dropout():
    from fssl_core.models.dropout import party_stream
    authors = build_model("cnn_mnist_authors", num_classes=10, in_channels=1)
    plain = build_model("cnn_mnist", num_classes=10, in_channels=1)
    assert count_parameters(authors) == count_parameters(plain) == 21_840
    plain.load_state_dict(authors.state_dict())
    x = torch.rand(16, 1, 28, 28)
    assert torch.equal(authors.eval()(x), plain.eval()(x))          # dropout off in eval mode
    authors.train()
    with party_stream(torch.Generator().manual_seed(0)):
        maps = authors.conv2_drop(torch.ones(16, 20, 8, 8))
        flat = authors.fc1_drop(torch.ones(16, 50))
    # Dropout2d: whole channels zeroed (one draw per sample and channel), the rest scaled by 1/(1 − 0.5)
    per_channel = maps.flatten(2)
    assert torch.equal(per_channel.amin(2), per_channel.amax(2)) and set(maps.unique().tolist()) == {0.0, 2.0}
    assert 0.3 < (maps[:, :, 0, 0] == 0).float().mean() < 0.7
    assert set(flat.unique().tolist()) == {0.0, 2.0} and 0.3 < (flat == 0).float().mean() < 0.7


def test_the_cifar_cnn_runs_channels_last_on_the_cpu_with_nchw_values():
    """CNNCifar converts its input to channels_last on the CPU (1.13× a training step); the values are
    NCHW's up to float rounding, and the layout does not leak into the features' order."""
    torch.manual_seed(0)
    model = build_model("cnn_cifar", num_classes=10, in_channels=3).eval()
    x = torch.rand(4, 3, 32, 32)
    with torch.no_grad():
        got = model(x)
        want = model.classifier(model.body(x))        # the same layers on the NCHW input
    assert got.shape == (4, 10)
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-4)
    assert MODELS["cnn_cifar"].revision >= 1   # the floats changed: runs get a new identity (2: its BatchNorm targets)


def test_fedmatchs_resnet9_has_no_batchnorm_no_bias_and_their_initial_scale():
    """No BatchNorm, no convolution or classifier bias, and Keras' VarianceScaling (fan-in, truncated normal):
    each layer's weights have std sqrt(1 / fan_in) and none beyond two of the untruncated stds."""
    import math

    import torch
    torch.manual_seed(0)
    net = build_model("resnet9_fedmatch", num_classes=10, in_channels=3)
    assert not any(isinstance(m, (torch.nn.BatchNorm2d, torch.nn.BatchNorm1d)) for m in net.modules())
    assert [n for n, _ in net.named_parameters() if n.endswith("bias")] == []
    for module in net.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            w = module.weight.detach()
            fan_in = w[0].numel()
            assert abs(w.std().item() / math.sqrt(1 / fan_in) - 1) < 0.05
            assert w.abs().max().item() <= 2 * math.sqrt(1 / fan_in) / 0.87962566103423978 + 1e-6


def test_a_networks_batchnorm_flag_says_whether_it_builds_batchnorm_layers():
    # the flag decides whose run ids carry a method's batchnorm_revision (run_config.py)
    from torch import nn
    from fssl_core.models import MODELS, build_model
    for name, network in MODELS.items():
        built = build_model(name, num_classes=10, in_channels=3)
        assert network.batchnorm == any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in built.modules()), name


def test_a_methods_batchnorm_revision_moves_its_run_ids_on_batchnorm_networks_alone():
    # FedSiam's targets changed on BatchNorm networks only: its MNIST CNN runs keep their ids, its CIFAR
    # CNN runs get new ones; FedMix's (unchanged) keep theirs on ResNet-9
    from fssl_core.algorithms import ALGORITHMS
    from fssl_core.run_config import RunConfig
    siam = ALGORITHMS["fedsiam_d"]

    def ids(**changes):
        cfg = RunConfig(algorithm="fedsiam_d", **changes)
        before = cfg.run_id
        revision, siam.batchnorm_revision = siam.batchnorm_revision, 0
        try:
            return before, cfg.identity_hash[:16]
        finally:
            siam.batchnorm_revision = revision

    now, without = ids(dataset="cifar10", model="cnn_cifar")
    assert now != without
    now, without = ids(dataset="mnist", model="cnn_mnist")
    assert now == without
