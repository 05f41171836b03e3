"""What every network here shares: a feature extractor, a linear classifier and, on request, a
linear projection ("anchor head", FedAnchor §4.1) on the same features.

`forward(x)` returns logits, `forward(x, embed=True)` returns (logits, embedding) and
`forward(x, features_only=True)` the features the heads share, so an
algorithm calls a network through `functional_call` either way without knowing its layers.
"""
from __future__ import annotations

import functools

import torch.nn.functional as F
from torch import Tensor, nn

from . import grouped

HEADS = ("classifier.", "projection.")


class Network(nn.Module):
    # set by a network that has a grouped formulation for the cohort trainer (models/grouped.py)
    grouped_op = None
    # its input size, BatchNorm and revision are declared in its registry line (models/__init__.py: NetworkSpec)

    def __init__(self, feature_dim: int, num_classes: int, projection_dim: int | None):
        super().__init__()
        self.feature_dim = feature_dim
        self.classifier = nn.Linear(feature_dim, num_classes)
        self.projection = nn.Linear(feature_dim, projection_dim) if projection_dim else None

    def features(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, x: Tensor, embed: bool = False, features_only: bool = False):
        if self.grouped_op is not None and grouped.active():
            return self.grouped_forward(dict(self.named_parameters()), x, embed, features_only)
        h = self.features(x)
        if features_only:          # the backbone's output (FedCon's BYOL works on it)
            return h
        return self._heads(h, embed, self._head_tensors())

    def grouped_forward(self, tensors: dict[str, Tensor], x: Tensor, embed: bool = False, features_only: bool = False):
        """`functional_call(self, tensors, (x,))` inside a cohort step, for a network with a grouped
        formulation: the same ops on the same tensors. Called directly (Context.apply), it skips
        functional_call's swapping of every parameter into the module and back (an MNIST FedAvg
        cohort round 2% faster, rounds interleaved in one process, one thread, 2026-11-25)."""
        h = self.grouped_op([tensors[n] for n in self._feature_names], x, self.training)
        return h if features_only else self._heads(h, embed, tensors)

    def _heads(self, h: Tensor, embed: bool, tensors: dict[str, Tensor]):
        """Logits, or (logits, embedding): the linear heads on the features (nn.Linear's F.linear)."""
        logits = F.linear(h, tensors["classifier.weight"], tensors.get("classifier.bias"))   # None: a head without bias
        if not embed:
            return logits
        if "projection.weight" not in tensors:
            raise ValueError("forward(embed=True): this network was built without a projection head "
                             "(build_model(..., projection_dim=None))")
        return logits, F.linear(h, tensors["projection.weight"], tensors["projection.bias"])

    def _head_tensors(self) -> dict[str, Tensor]:
        """The heads' tensors by parameter name, read from the modules (under functional_call: the
        swapped-in ones), without walking every parameter of the network on each forward."""
        heads = {"classifier": self.classifier, "projection": self.projection}
        return {f"{name}.{kind}": getattr(module, kind)
                for name, module in heads.items() if module is not None for kind in ("weight", "bias")}

    @functools.cached_property
    def _feature_names(self) -> list[str]:
        return [n for n, _ in self.named_parameters() if not n.startswith(HEADS)]
