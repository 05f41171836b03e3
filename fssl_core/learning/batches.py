"""Mini-batches drawn by index from device tensors, augmented in batch on the device.

A party (client or server) holds index tensors into the run's training images. A step's batch
has a labeled and an unlabeled part; each part gives its images plain, weakly or strongly
augmented (computed once per step on demand). The labels of unlabeled samples are reachable only
as `hidden_labels`, which exist for metrics (e.g. pseudo-label accuracy), never for training.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np
import torch

from ..data.augment import AugmentSpec, strong_augment, weak_augment
from ..data.streams import CohortDraws, CohortStreams, Rows


class Transform(Protocol):
    """An algorithm's own augmentation (`BatchPart.transformed`): its random choices for n samples, drawn from a
    CPU generator or from a cohort's CohortDraws (augment.py's `draw_*` are such), then their application to
    images in [0, 1] (augment.py's `apply_*`, over the samples of any number of clients at once)."""

    def draw(self, n: int, source: torch.Generator | CohortDraws, spec: AugmentSpec) -> dict[str, Tensor]: ...

    def apply(self, x: Tensor, draws: dict[str, Tensor], spec: AugmentSpec) -> Tensor: ...

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

    def transformed(self, name: str, transform: Transform) -> Tensor:
        """A view of an algorithm's own augmentation (x in [0, 1]), normalised, computed once per step under `name`."""
        spec = self.images.augment
        return self._view(name, lambda x: transform.apply(x, transform.draw(len(x), self._generator, spec), spec))


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


class CohortEpochs:
    """`_EpochStream` for every client of a cohort at once, over one of their sets (labeled or unlabeled): a step's
    positions of all the clients asked as one tensor. A client's new pass is its own stream's randperm at its
    cursor, drawn where its _EpochStream would draw it (tests/test_streams.py holds the two to the same positions)."""

    def __init__(self, sets: list[Tensor], batch: list[int], cycle: np.ndarray, streams: CohortStreams):
        self.n = np.array([int(s.numel()) for s in sets], np.int64)
        self.batch, self.cycle, self.streams = np.asarray(batch, np.int64), np.asarray(cycle, bool), streams
        self.at = self.n.copy()          # "at the end of a pass": the first draw starts one
        longest, device = int(self.n.max(initial=0)), streams.device
        # on the device, each client's pass and beside it the next, which a chunk running past the pass's end
        # reads into; and its set's indices, padded
        self._passes = torch.zeros((len(sets), 2 * longest), dtype=torch.long, device=device)
        self.indices = torch.zeros((len(sets), longest), dtype=torch.long, device=device)
        for c, indices in enumerate(sets):
            self.indices[c, :len(indices)] = indices

    def _draw_passes(self, clients: np.ndarray) -> Tensor | None:
        """Each client's new pass, drawn from its stream at its cursor; moved to the device in one copy."""
        if not len(clients):
            return None
        return torch.cat([self.streams.randperm(c, int(self.n[c])) for c in clients]).to(self.streams.device)

    def _put(self, clients: np.ndarray, passes: Tensor | None, second: bool) -> None:
        """Write `_draw_passes`'s passes as the clients' pass (or, `second`, the one beside it)."""
        if passes is None:
            return
        n = self.n[clients]
        if (n == n[0]).all():        # one length: one write
            column = int(n[0]) if second else 0
            self._passes[self.streams.rows(clients).index, column:column + int(n[0])] = passes.view(len(clients), -1)
            return
        for c, length, start in zip(clients.tolist(), n.tolist(), (np.cumsum(n) - n).tolist()):
            column = length if second else 0
            self._passes[c, column:column + length] = passes[start:start + length]

    def next(self, rows: Rows) -> tuple[Tensor, np.ndarray]:
        """The step's positions of `rows`' clients ([clients, longest chunk] on the device; a row's first `sizes[i]`
        are its client's chunk) and the sizes, drawing each client's new passes from its stream in _EpochStream's
        order: the pass that begins here, then the one a chunk runs into."""
        clients = rows.clients
        n, batch, at = self.n[clients], self.batch[clients], self.at[clients]
        live = (n > 0) & (batch > 0)
        fresh = live & (at >= n)
        self._put(clients[fresh], self._draw_passes(clients[fresh]), second=False)
        at = np.where(fresh, 0, at)
        wrap = live & self.cycle[clients] & (at + batch > n)
        head = n - at
        tail = np.minimum(n, batch - head)
        sizes = np.where(live, np.where(wrap, head + tail, np.minimum(batch, head)), 0)
        wrapped = self._draw_passes(clients[wrap])
        self._put(clients[wrap], wrapped, second=True)
        longest = int(sizes.max(initial=0))
        first = int(at[0]) if len(at) else 0
        if (at == first).all():          # clients in step: the same columns of each row
            positions = rows.of(self._passes[:, first:first + longest])
        else:
            columns = torch.from_numpy(at[:, None] + np.arange(longest)).to(self.streams.device)
            positions = self._passes[rows.tensor[:, None], columns.clamp_(max=self._passes.shape[1] - 1)]
        if wrapped is not None:          # the pass run into is now the client's pass
            positions = positions.clone()
            self._put(clients[wrap], wrapped, second=False)
        self.at[clients] = np.where(wrap, tail, at + sizes)
        return positions, sizes


class CohortBatches:
    """`batches(...)` of a cohort's clients, all at once: each step every active client's labeled and unlabeled
    chunk sizes (by which the cohort trainer groups them), then a group's indices as [clients, size] tensors."""

    def __init__(self, views: list[DataView], plans: list[Plan], streams: CohortStreams):
        by_labeled = np.array([plan.epoch_over == "labeled" for plan in plans], bool)
        self.streams = streams
        self.labeled = CohortEpochs([v.labeled for v in views], [p.labeled_batch for p in plans], ~by_labeled, streams)
        self.unlabeled = CohortEpochs([v.unlabeled for v in views], [p.unlabeled_batch for p in plans], by_labeled,
                                      streams)

    def next(self, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step `clients` (ascending) on; their labeled and unlabeled chunk sizes."""
        self._clients = clients
        rows = self.streams.rows(clients)
        self._labeled, labeled = self.labeled.next(rows)          # a client's labeled passes are drawn first
        self._unlabeled, unlabeled = self.unlabeled.next(rows)
        self._sizes = labeled, unlabeled
        return labeled, unlabeled

    def indices(self, members: Rows) -> tuple[Tensor, Tensor]:
        """The step's labeled and unlabeled indices into the training set of `members` (of one pair of chunk
        sizes), [members, size] each."""
        at = np.searchsorted(self._clients, members.clients)      # their rows among the step's clients
        rows = self.streams.rows(at)
        return tuple(members.of(part.indices).gather(1, rows.of(positions)[:, :int(sizes[at[0]])])
                     for part, positions, sizes in ((self.labeled, self._labeled, self._sizes[0]),
                                                    (self.unlabeled, self._unlabeled, self._sizes[1])))
