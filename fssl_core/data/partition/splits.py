"""What a partition returns (`Partition`: the server's labeled indices and each client's
labeled/unlabeled split, cut into stream parts where the partition streams) and its errors."""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from .checks import PartitionError, check_labels

@dataclass(frozen=True, eq=False)
class ClientSplit:
    labeled: np.ndarray    # int64 indices into the training set, sorted ascending
    unlabeled: np.ndarray  # int64 indices; sorted, or in stream order when the partition streams


@dataclass(frozen=True, eq=False)
class Partition:
    server_labeled: np.ndarray  # int64 indices labeled at the server, sorted; empty for labels-at-client
    clients: tuple[ClientSplit, ...]
    stream_parts: int = 1       # each client's unlabeled data is cut into this many parts; round r uses part r % P

    def __post_init__(self):
        if not isinstance(self.stream_parts, Integral) or isinstance(self.stream_parts, bool) \
                or self.stream_parts < 1:
            raise PartitionError(f'Partition.stream_parts={self.stream_parts!r}: must be an int >= 1')

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    def unlabeled_in_round(self, client: int, round: int) -> np.ndarray:
        """The unlabeled indices client `client` trains on in round `round` (0-based).

        With stream_parts == 1 this is all of the client's unlabeled data. Otherwise the client's
        unlabeled array (in its stored, seeded order) is cut into `stream_parts` contiguous parts
        as equal as possible (the first `n % P` parts one sample longer, as `np.array_split`), and
        round r uses part r % P: "每个客户端的数据被平均分为10份,每轮训练只使用其中的一份,训练10轮为1个周期"
        (each client's data is split evenly into 10 parts, each round uses one of them, 10 rounds
        make one cycle; fedmix-fedloss-zh.txt line 233).
        """
        if not isinstance(client, Integral) or not 0 <= client < len(self.clients):
            raise PartitionError(f'Partition.unlabeled_in_round: client={client!r} must be an int within '
                             f'[0, {len(self.clients) - 1}]')
        if not isinstance(round, Integral) or round < 0:
            raise PartitionError(f'Partition.unlabeled_in_round: round={round!r} must be an int >= 0')
        unlabeled = self.clients[client].unlabeled
        if self.stream_parts == 1:
            return unlabeled
        part, parts = int(round) % self.stream_parts, self.stream_parts
        base, extra = divmod(unlabeled.size, parts)
        start = part * base + min(part, extra)
        return unlabeled[start:start + base + (part < extra)]

    def counts(self, labels: np.ndarray, num_classes: int) -> dict:
        """Per-class sample counts, ready for `json.dumps`.

        `{"server": {"labeled": {"0": n, ...}}, "clients": [{"labeled": {...}, "unlabeled": {...}}, ...]}`.
        Keys are the class indices as strings ("0" .. str(num_classes - 1), every class present, zeros
        included), because JSON object keys are strings: the dict compares equal to itself after a
        json round trip. Values are Python ints.
        """
        labels = check_labels(None, labels, num_classes, where='Partition.counts')

        def per_class(indices: np.ndarray) -> dict:
            hist = np.bincount(labels[indices], minlength=num_classes)
            return {str(c): int(v) for c, v in enumerate(hist)}

        return {
            'server': {'labeled': per_class(self.server_labeled)},
            'clients': [{'labeled': per_class(c.labeled), 'unlabeled': per_class(c.unlabeled)}
                        for c in self.clients],
        }

