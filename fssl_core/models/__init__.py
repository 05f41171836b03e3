"""The papers' networks, by name. Parameter counts are pinned by tests/test_models.py."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

    from .base import Network


@dataclass(frozen=True)
class NetworkSpec:
    """A network's registry line: its class as "module:Class" text, imported when a network is built, and what
    RunConfig reads of it without building it. Declared here, not on the class (an nn.Module, so torch), so that
    a plan validates and identifies its configs without running torch (cli.defer_torch), as data.datasets declares
    each data set's facts beside the name of the class that reads its files."""
    where: str
    # the square input size (pixels) a network needs because a linear layer takes its flattened
    # feature maps; None: any size of the data sets here (the features are pooled globally).
    # RunConfig rejects a model whose size differs from the data set's.
    image_size: int | None = None
    # whether it normalises with BatchNorm: a method's `batchnorm_revision` enters the identity of its runs on
    # such a network only (run_config.py); tests/test_models.py checks it against the built modules
    batchnorm: bool = False
    # bumped when a change alters what this network's runs compute (run_config.py: run identity)
    revision: int = 0

    @property
    def network(self) -> type[Network]:
        module, _, name = self.where.partition(":")
        return getattr(importlib.import_module(module), name)

    def __call__(self, **arguments) -> Network:
        return self.network(**arguments)


# A BatchNorm network's revision 1: every method's targets moved to BatchNorm's running statistics (Context.target);
# a method's own later moves (Algorithm.target_statistics, as its reference code) are its batchnorm_revision.
MODELS: dict[str, NetworkSpec] = {
    # FedSiam Table 1, MNIST (also Fashion-MNIST here); fc1 takes 20·4·4 features
    "cnn_mnist": NetworkSpec("fssl_core.models.cnn_mnist:CNNMnist", image_size=28),
    # the FedSiam authors' code's: Table 1's + dropout (measured-cause rows); revision 1: it trains as a cohort
    # (CNNMnistAuthors' docstring), which agrees with the sequential trainer to float rounding only
    "cnn_mnist_authors": NetworkSpec("fssl_core.models.cnn_mnist:CNNMnistAuthors", image_size=28, revision=1),
    # FedSiam Table 1, CIFAR-10 & SVHN; the first linear layer takes 256·4·4 features. Revision 1: channels_last
    # on the CPU; 2: the BatchNorm targets above
    "cnn_cifar": NetworkSpec("fssl_core.models.cnn_cifar:CNNCifar", image_size=32, batchnorm=True, revision=2),
    # FedMix/FedFreq, FedMix/FedLoss
    "resnet9": NetworkSpec("fssl_core.models.resnet:ResNet9", batchnorm=True, revision=1),
    # ResNet-9 at 1/8 width: CPU diagnostics of FedMix, no paper's
    "resnet9_narrow": NetworkSpec("fssl_core.models.resnet:ResNet9Narrow", batchnorm=True, revision=1),
    # FedMatch's code's ResNet-9, no BatchNorm (what FedMix's split points to)
    "resnet9_fedmatch": NetworkSpec("fssl_core.models.resnet9_fedmatch:ResNet9FedMatch"),
    # the same at 1/8 width: CPU diagnostics of FedMix, no paper's
    "resnet9_fedmatch_narrow": NetworkSpec("fssl_core.models.resnet9_fedmatch:ResNet9FedMatchNarrow"),
    # FedAnchor Table 1
    "resnet18": NetworkSpec("fssl_core.models.resnet:ResNet18", batchnorm=True, revision=1),
    # FedAnchor Table 2, SemiFL, FixMatch
    "wrn28_2": NetworkSpec("fssl_core.models.wrn:WideResNet28x2", batchnorm=True, revision=1),
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
    """A network with a fixed input size (`NetworkSpec.image_size`) gets images of it."""
    size, wanted = facts.shape.image_size, MODELS[facts.model].image_size
    if wanted is not None and wanted != size:
        fitting = [name for name, spec in MODELS.items() if spec.image_size in (None, size)]
        return (f"model={cfg.model!r}, dataset={cfg.dataset!r}: {facts.model} takes {wanted}×{wanted} images and "
                f"{cfg.dataset}'s are {size}×{size}; use one of {', '.join(fitting)} or model='auto'")


def config_rules() -> tuple[dict, tuple]:
    """What RunConfig asks of the networks (run_config.py): the anchor head's width (`projection_dim`, 0: none;
    built for whichever algorithm runs, so it is every run's, not FedAnchor's alone) and the image size."""
    return {"projection_dim": "[0, 65536]"}, (_model_fits_dataset,)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters (BatchNorm running statistics are buffers, not counted)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
