"""Mini-batches drawn by index from device tensors, augmented in batch on the device.

A party (client or server) holds index tensors into the run's training images. A step's batch
has a labeled and an unlabeled part; each part gives its images plain, weakly or strongly
augmented (computed once per step on demand). The labels of unlabeled samples are reachable only
as `hidden_labels`, which exist for metrics (e.g. pseudo-label accuracy), never for training.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import torch

from ..data.augment import AugmentSpec, strong_augment, weak_augment

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True, eq=False)
class TrainImages:
    """The run's training set on its device: images in [0, 1], labels, and how to prepare them."""
    x: Tensor                               # [N, C, H, W] float in [0, 1]
    y: Tensor                               # [N] int64
    normalize: Callable[[Tensor], Tensor]   # the dataset's per-channel normalisation
    augment: AugmentSpec


@dataclass(frozen=True, eq=False)
class DataView:
    """One party's share: index tensors (on the device) into TrainImages."""
    labeled: Tensor
    unlabeled: Tensor

    @property
    def num_labeled(self) -> int:
        return int(self.labeled.numel())

    @property
    def num_unlabeled(self) -> int:
        return int(self.unlabeled.numel())


class BatchPart:
    """Samples of one step from one of a party's sets (labeled or unlabeled)."""

    def __init__(self, images: TrainImages, idx: Tensor, pos: Tensor, generator: torch.Generator):
        self.images = images
        self.idx = idx          # indices into the training set
        self.pos = pos          # positions within the party's set (for per-party tensors, e.g. pseudo-labels)
        self._generator = generator
        self._views: dict[str, Tensor] = {}

    def __len__(self) -> int:
        return int(self.idx.numel())

    @property
    def generator(self) -> torch.Generator:
        """The step's random stream (e.g. for an algorithm's own draws, such as mixup partners)."""
        return self._generator

    def _view(self, name: str, make: Callable[[Tensor], Tensor]) -> Tensor:
        if name not in self._views:
            self._views[name] = self.images.normalize(make(self.images.x[self.idx]))
        return self._views[name]

    def plain(self) -> Tensor:
        return self._view("plain", lambda x: x)

    def weak(self) -> Tensor:
        return self._view("weak", lambda x: weak_augment(x, self._generator, self.images.augment))

    def weak2(self) -> Tensor:
        """A second, independent weak view (consistency losses compare two of them)."""
        return self._view("weak2", lambda x: weak_augment(x, self._generator, self.images.augment))

    def strong(self) -> Tensor:
        return self._view("strong", lambda x: strong_augment(x, self._generator, self.images.augment))

    def transformed(self, name: str, transform: Callable[[Tensor, torch.Generator, AugmentSpec], Tensor]) -> Tensor:
        """A view of an algorithm's own augmentation `transform(x, generator, spec)` (x in [0, 1]),
        normalised, computed once per step under `name`."""
        return self._view(name, lambda x: transform(x, self._generator, self.images.augment))


class LabeledPart(BatchPart):
    @property
    def y(self) -> Tensor:
        return self.images.y[self.idx]


class UnlabeledPart(BatchPart):
    @property
    def hidden_labels(self) -> Tensor:
        """True labels, for metrics only: an algorithm must never train on them."""
        return self.images.y[self.idx]


VIEWS = ("plain", "weak", "weak2", "strong")


@dataclass(eq=False)
class Batch:
    labeled: LabeledPart
    unlabeled: UnlabeledPart

    def views(self, *requests: tuple[str, str]) -> list[Tensor]:
        """Several views at once, e.g. `views(("labeled", "weak"), ("unlabeled", "weak"))`: the same
        tensors, from the same draws, as asking the parts for them one after the other in this order.
        The cohort trainer makes them in one augmentation call per kind for all its clients
        (learning/cohort.py): FedSiam-D's four weak views took 1.0 ms of its cohort step instead of 1.6 ms
        asked one by one (MNIST, 10 clients, one CPU thread, 2026-11-25)."""
        check_view_requests(requests)
        return [getattr(getattr(self, part), view)() for part, view in requests]


def check_view_requests(requests: tuple[tuple[str, str], ...]) -> None:
    for request in requests:
        if (not isinstance(request, tuple) or len(request) != 2 or request[0] not in ("labeled", "unlabeled")
                or request[1] not in VIEWS):
            raise ValueError(f"Batch.views: request {request!r} must be a (part, view) pair, part 'labeled' or "
                             f"'unlabeled', view one of {', '.join(VIEWS)}")


@dataclass(frozen=True)
class Plan:
    """How a party's local training walks its data: `epochs` passes over `epoch_over`.

    Steps per epoch are ceil(n / batch) of the `epoch_over` set, the last batch possibly short
    (as a DataLoader with drop_last=False); the other set is cycled through reshuffled passes.
    """
    epochs: int
    labeled_batch: int
    unlabeled_batch: int = 0
    epoch_over: str = "labeled"

    def __post_init__(self) -> None:
        if self.epoch_over not in ("labeled", "unlabeled"):
            raise ValueError(f"Plan.epoch_over={self.epoch_over!r}: must be 'labeled' or 'unlabeled'")

    def steps(self, view: DataView) -> int:
        n, batch = ((view.num_labeled, self.labeled_batch) if self.epoch_over == "labeled"
                    else (view.num_unlabeled, self.unlabeled_batch))
        if n == 0 or batch == 0:
            return 0
        return self.epochs * math.ceil(n / batch)


class _EpochStream:
    """Positions into a set of n samples: consecutive chunks of reshuffled passes."""

    def __init__(self, n: int, batch: int, generator: torch.Generator, cycle: bool, device: torch.device):
        self.n, self.batch, self.generator, self.cycle, self.device = n, batch, generator, cycle, device
        self._perm = torch.empty(0, dtype=torch.long, device=device)
        self._at = n          # "at the end of a pass": the first draw starts one

    def _new_pass(self) -> None:
        # drawn on the CPU generator and moved: the same positions on every device
        self._perm = torch.randperm(self.n, generator=self.generator).to(self.device)
        self._at = 0

    def next(self) -> Tensor:
        if self.n == 0 or self.batch == 0:
            return self._perm[:0]
        if self._at >= self.n:
            self._new_pass()
        if not self.cycle or self._at + self.batch <= self.n:
            chunk = self._perm[self._at:self._at + self.batch]
            self._at += len(chunk)
            return chunk
        head = self._perm[self._at:]
        self._new_pass()
        tail = self._perm[:self.batch - len(head)]
        self._at = len(tail)
        return torch.cat([head, tail])


def batches(images: TrainImages, view: DataView, plan: Plan, generator: torch.Generator):
    """Yield the plan's batches for one party, every draw taken from `generator`."""
    by_labeled = plan.epoch_over == "labeled"
    device = view.labeled.device
    labeled = _EpochStream(view.num_labeled, plan.labeled_batch, generator, cycle=not by_labeled, device=device)
    unlabeled = _EpochStream(view.num_unlabeled, plan.unlabeled_batch, generator, cycle=by_labeled, device=device)
    for _ in range(plan.steps(view)):
        pos_l, pos_u = labeled.next(), unlabeled.next()
        yield Batch(LabeledPart(images, view.labeled[pos_l], pos_l, generator),
                    UnlabeledPart(images, view.unlabeled[pos_u], pos_u, generator))
