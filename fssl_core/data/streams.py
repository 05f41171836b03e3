"""A cohort's random draws made for all its clients at once, as tensors, from each client's own stream.

A party's draws come from its (seed, round, party) CPU generator, torch's mt19937, whose CPU kernels turn
one 32-bit word w of the stream into each element, in order: `torch.randint(low, high)` is low + w mod
(high − low) (ranges up to 2^24; one of 2^30 takes two words), `torch.rand` (float32) is w's low 24 bits
times 2^−24, `torch.bernoulli(p)` (p of 16 or 32 bits) is 1 where that uniform is below p, and
`torch.randperm(n)` is Fisher–Yates on n − 1 words (tests/test_streams.py holds each to torch). Every
draw is therefore a function of the words at a cursor in the party's stream: `CohortDraws` makes one
request's draws for a group of clients in a few tensor operations on the run's device, each client's
from the words at its own cursor, where the cohort trainer made a few torch calls per client and step
(FedSiam-D's index streams and four weak views on MNIST, 100 clients: 73 µs a client-step that way, 8.7 µs
this way, on one loaded CPU thread; bench cases=host_draws, measurements/2026-11-29-cpu-host-draws).

The words: numpy's MT19937 is the same generator and gives raw words in bulk. `CohortStreams` reads each
torch generator's state once (its 624 words and position) into one, and keeps a window of every client's
next words on the device. A permutation stays torch's own randperm on the client's generator (Fisher–Yates
is a sequential loop that tensors do not shorten), advanced to the client's cursor first: one call a client
and pass, not a step. `finish` advances every generator to its cursor, so the generators end where the
sequential trainer's per-step draws leave them.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from torch import Tensor

MAX_RANGE = 1 << 24          # the widest randint range checked to take one word (tests/test_streams.py)
LOW_24 = (1 << 24) - 1
# torch's CPU generator state (CPUGeneratorImplState): initial seed (uint64), `left` (int32), `seeded` (int32),
# `next` (uint64), then the 624 mt19937 words, each as a uint64
_LEFT = slice(8, 12)
_WORDS = slice(24, 24 + 624 * 8)
# the most words the windows hold together, unless one request needs more: 64 MiB as int64 on the host, the same
# and their float32 uniforms (32 MiB) on the device
WINDOW_WORDS = 1 << 23


def _mt19937(generator: torch.Generator) -> np.random.MT19937:
    """numpy's MT19937 where `generator` stands: the next word of each is the same."""
    state = generator.get_state().numpy()
    bits = np.random.MT19937(0)
    # torch twists when `left`, counted down before each word, reaches 0; numpy when `pos` reaches 624
    position = 625 - int(state[_LEFT].view(np.int32)[0])
    bits.state = {"bit_generator": "MT19937",
                  "state": {"key": state[_WORDS].view(np.uint64).astype(np.uint32), "pos": position}}
    return bits


def skip(generator: torch.Generator, words: int) -> None:
    """Advance `generator` by `words` words (a randint of range 2 takes one word an element)."""
    if words:
        torch.empty(words, dtype=torch.uint8).random_(0, 2, generator=generator)


class Rows:
    """Some of a cohort's clients (ascending), to pick their rows of [clients, ...] tensors: a slice where they
    are consecutive (a view: nothing moves to the device), else an index tensor on the device."""

    def __init__(self, clients: np.ndarray, device: torch.device):
        self.clients = np.asarray(clients, np.int64)
        first = int(self.clients[0]) if len(self.clients) else 0
        consecutive = not len(self.clients) or int(self.clients[-1]) - first + 1 == len(self.clients)
        self.index = (slice(first, first + len(self.clients)) if consecutive
                      else torch.from_numpy(self.clients).to(device))
        self.tensor = torch.arange(first, first + len(self.clients), device=device) if consecutive else self.index

    def __len__(self) -> int:
        return len(self.clients)

    def of(self, t: Tensor) -> Tensor:
        return t[self.index]


class CohortStreams:
    """The streams of a cohort's clients (their generators, in the cohort's order) as words on `device`."""

    def __init__(self, generators: list[torch.Generator], device: torch.device | str):
        self.generators = list(generators)
        self.device = torch.device(device)
        self._bits = [_mt19937(g) for g in self.generators]
        count = len(self.generators)
        self._base = np.zeros(count, np.int64)      # the stream position of each window's first word
        self._ahead = np.zeros(count, np.int64)     # each client's cursor within its window
        self._given = np.zeros(count, np.int64)     # words each torch generator has given (permutations, skips)
        self._host = np.zeros((count, 0), np.int64)
        self._words = torch.zeros((count, 0), dtype=torch.int64, device=self.device)
        self._uniform = torch.zeros((count, 0), dtype=torch.float32, device=self.device)
        self._rows: dict[bytes, Rows] = {}

    def __len__(self) -> int:
        return len(self.generators)

    @property
    def cursor(self) -> np.ndarray:
        """The words each client's draws have taken."""
        return self._base + self._ahead

    def rows(self, clients: np.ndarray) -> Rows:
        """`Rows` of `clients` (ascending), made once for each set of clients."""
        clients = np.asarray(clients, np.int64)
        key = clients.tobytes()
        if key not in self._rows:
            self._rows[key] = Rows(clients, self.device)
        return self._rows[key]

    def take(self, rows: Rows, count: int, uniform: bool = False) -> Tensor:
        """The next `count` words of each of `rows`' clients, [clients, count] int64; `uniform`: as torch.rand's
        float32 uniforms instead."""
        ahead = self._ahead[rows.clients]
        if count and int(ahead.max(initial=0)) + count > self._host.shape[1]:
            self._refill(count)
            ahead = self._ahead[rows.clients]
        self._ahead[rows.clients] += count
        window = self._uniform if uniform else self._words
        first = int(ahead[0]) if len(ahead) else 0
        if (ahead == first).all():       # clients in step (equal sets, or just refilled): the same columns of each
            return rows.of(window[:, first:first + count])
        columns = torch.from_numpy(ahead).to(self.device)[:, None] + torch.arange(count, device=self.device)
        return window[rows.tensor[:, None], columns]

    def _refill(self, count: int) -> None:
        """Every window restarted at its client's cursor, holding at least `count` words."""
        width = self._host.shape[1]
        kept = np.maximum(width - self._ahead, 0)
        width = max(count, int(kept.max(initial=0)), min(2 * max(width, 1 << 10), WINDOW_WORDS // len(self)))
        host = np.empty((len(self), width), np.int64)
        for c, bits in enumerate(self._bits):
            if self._ahead[c] > self._host.shape[1]:      # past the window (a permutation's words): skipped
                bits.random_raw(self._ahead[c] - self._host.shape[1])
            host[c, :kept[c]] = self._host[c, self._host.shape[1] - kept[c]:]
            host[c, kept[c]:] = bits.random_raw(width - kept[c])
        self._base += self._ahead
        self._ahead[:] = 0
        self._host = host
        self._words = torch.from_numpy(host).to(self.device)
        # torch.rand's float32: the word's low 24 bits times 2^-24, exact (as torch's CPU kernel)
        self._uniform = (self._words & LOW_24).to(torch.float32) * 2.0 ** -24

    def randperm(self, client: int, n: int) -> Tensor:
        """`torch.randperm(n)` (CPU) of `client` at its cursor: its own generator's, advanced there first."""
        generator = self.generators[client]
        skip(generator, int(self.cursor[client] - self._given[client]))
        perm = torch.randperm(n, generator=generator)
        self._ahead[client] += max(n - 1, 0)
        self._given[client] = self.cursor[client]
        return perm

    def finish(self) -> None:
        """Every generator advanced to its client's cursor (where per-step draws would have left it)."""
        for c, generator in enumerate(self.generators):
            skip(generator, int(self.cursor[c] - self._given[c]))
            self._given[c] = self.cursor[c]


class CohortDraws:
    """What `torch.randint`, `torch.rand` and `torch.bernoulli` on each of a group's generators give, for all
    of the group at once: [clients, *shape] tensors on the device, client c's from its own words in the
    order asked (augment.py's `draw_*` take this in place of a generator)."""

    def __init__(self, streams: CohortStreams, rows: Rows):
        self.streams, self.rows = streams, rows

    def __len__(self) -> int:
        return len(self.rows)

    def randint(self, low: int, high: int, shape: tuple[int, ...]) -> Tensor:
        if not 0 < high - low <= MAX_RANGE:
            raise ValueError(f"CohortDraws.randint: range {high} - {low}: must be within [1, {MAX_RANGE}] "
                             "(wider ranges take two words of the stream)")
        drawn = self.streams.take(self.rows, math.prod(shape)).view(len(self), *shape) % (high - low)
        return drawn + low if low else drawn

    def rand(self, shape: tuple[int, ...]) -> Tensor:
        return self.streams.take(self.rows, math.prod(shape), uniform=True).view(len(self), *shape)

    def bernoulli(self, shape: tuple[int, ...], p: float, dtype: torch.dtype) -> Tensor:
        """`torch.bernoulli(torch.full(shape, p, dtype=dtype))`: 1 where the uniform is below p as `dtype` holds it."""
        if dtype == torch.float64:
            raise ValueError("CohortDraws.bernoulli: dtype=torch.float64: its uniform takes two words of the "
                             "stream; must be a 16- or 32-bit float")
        return (self.rand(shape) < float(torch.tensor(p, dtype=dtype))).to(dtype)


def randint(source: torch.Generator | CohortDraws, low: int, high: int, shape: tuple[int, ...]) -> Tensor:
    """`torch.randint(low, high, shape)` on a CPU generator, or on every client of a CohortDraws at once."""
    if isinstance(source, torch.Generator):
        return torch.randint(low, high, shape, generator=source)
    return source.randint(low, high, shape)


def rand(source: torch.Generator | CohortDraws, shape: tuple[int, ...]) -> Tensor:
    """`torch.rand(shape)` on a CPU generator, or on every client of a CohortDraws at once."""
    if isinstance(source, torch.Generator):
        return torch.rand(shape, generator=source)
    return source.rand(shape)


def lead_shape(source: torch.Generator | CohortDraws) -> tuple[int, ...]:
    """The leading shape of `source`'s draws: () for a generator, (clients,) for a CohortDraws."""
    return () if isinstance(source, torch.Generator) else (len(source),)
