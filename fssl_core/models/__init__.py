"""The papers' networks, by name. Parameter counts are pinned by tests/test_models.py."""
from __future__ import annotations

from torch import nn

from .base import Network
from .cnn_cifar import CNNCifar
from .cnn_mnist import CNNMnist, CNNMnistAuthors
from .resnet import ResNet9, ResNet9Narrow, ResNet18
from .resnet9_fedmatch import ResNet9FedMatch, ResNet9FedMatchNarrow
from .wrn import WideResNet28x2

MODELS: dict[str, type[Network]] = {
    "cnn_mnist": CNNMnist,        # FedSiam Table 1, MNIST (also Fashion-MNIST here)
    "cnn_mnist_authors": CNNMnistAuthors,   # the FedSiam authors' code's: Table 1's + dropout (measured-cause rows)
    "cnn_cifar": CNNCifar,        # FedSiam Table 1, CIFAR-10 & SVHN
    "resnet9": ResNet9,           # FedMix/FedFreq, FedMix/FedLoss
    "resnet9_narrow": ResNet9Narrow,   # ResNet-9 at 1/8 width: CPU diagnostics of FedMix, no paper's
    "resnet9_fedmatch": ResNet9FedMatch,   # FedMatch's code's ResNet-9, no BatchNorm (what FedMix's split points to)
    "resnet9_fedmatch_narrow": ResNet9FedMatchNarrow,   # the same at 1/8 width: CPU diagnostics of FedMix, no paper's
    "resnet18": ResNet18,         # FedAnchor Table 1
    "wrn28_2": WideResNet28x2,    # FedAnchor Table 2, SemiFL, FixMatch
}

# The FedSiam networks by dataset; other papers name their model in their experiment configs.
_DEFAULT_MODEL = {"mnist": "cnn_mnist", "fashion_mnist": "cnn_mnist", "cifar10": "cnn_cifar",
                  "cifar100": "cnn_cifar", "svhn": "cnn_cifar", "synthetic_cifar10": "cnn_cifar"}


def default_model_for(dataset: str) -> str:
    if dataset not in _DEFAULT_MODEL:
        raise ValueError(f"default_model_for: dataset={dataset!r}: must be one of {', '.join(sorted(_DEFAULT_MODEL))}")
    return _DEFAULT_MODEL[dataset]


def build_model(name: str, *, num_classes: int, in_channels: int, projection_dim: int | None = None) -> Network:
    if name not in MODELS:
        raise ValueError(f"build_model: name={name!r}: must be one of {', '.join(sorted(MODELS))}")
    return MODELS[name](num_classes=num_classes, in_channels=in_channels, projection_dim=projection_dim)


def _model_fits_dataset(cfg, facts):
    """A network with a fixed input size (`Network.image_size`) gets images of it."""
    size, wanted = facts.shape.image_size, MODELS[facts.model].image_size
    if wanted is not None and wanted != size:
        fitting = [name for name, net in MODELS.items() if net.image_size in (None, size)]
        return (f"model={cfg.model!r}, dataset={cfg.dataset!r}: {facts.model} takes {wanted}×{wanted} images and "
                f"{cfg.dataset}'s are {size}×{size}; use one of {', '.join(fitting)} or model='auto'")


def config_rules() -> tuple[dict, tuple]:
    """What RunConfig asks of the networks (run_config.py): the anchor head's width (`projection_dim`, 0: none;
    built for whichever algorithm runs, so it is every run's, not FedAnchor's alone) and the image size."""
    return {"projection_dim": "[0, 65536]"}, (_model_fits_dataset,)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters (BatchNorm running statistics are buffers, not counted)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
