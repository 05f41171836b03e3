"""Host µs per client-step: a cohort round's draws made client by client and step by step, against all at once.

`python -m fssl_core bench cases=host_draws [algorithm=fedsiam_d|fedfixmatch] [clients=100] [repeats=5]
 [device=cpu|cuda] [out=FILE]`

What a cohort step draws before its networks run: every client's chunk of its labeled and unlabeled sets (the
index streams, a new pass a randperm) and the random choices of the views its loss asks for (FedSiam-D: four weak
views; FedFixMatch: two weak, one strong), from the client's (seed, round, client) stream. `per_step` makes them
as the cohort trainer made them before data/streams.py, and as the sequential trainer still does: each client's
`batches` stream and a few torch calls on its generator per view; `per_round` as the cohort trainer makes them
now: each draw for all the clients at once (CohortBatches, CohortDraws). Neither applies the augmentations (device
work, the same either way) nor runs a network. Round 1 of bench's protocol on MNIST (E = 5, B = 10), with
`clients` clients a round (K = 100: all of them by default, a cohort as wide as a batch of ten runs'); µs per
client-step = a round's wall time over its clients' steps, the median of `repeats` rounds after a warm-up, the
two ways interleaved (a loaded machine slows both alike), one CPU thread. out=FILE writes bench's record.
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from ..config import ConfigError
from ..data.augment import concat_draws, draw_strong, draw_weak
from ..data.streams import CohortDraws, CohortStreams
from ..engine.federation import Federation
from ..learning.batches import CohortBatches, batches
from ..learning.cohort import clients_as_samples, run_groups
from ..run_config import RunConfig

# the views each algorithm's cohort loss asks for in one step, in its order (algorithms/fedsiam.py, fedfixmatch.py)
REQUESTS = {"fedsiam_d": (("labeled", "weak"), ("unlabeled", "weak"), ("labeled", "weak2"), ("unlabeled", "weak2")),
            "fedfixmatch": (("labeled", "weak"), ("unlabeled", "weak"), ("unlabeled", "strong"))}
KIND = {"weak": "weak", "weak2": "weak", "strong": "strong"}      # the views made in one call together
PROTOCOL = dict(dataset="mnist", partition="iid", labeled_ratio=0.1, clients=100, local_epochs=5, batch_size=10,
                seed=1234)


def _draw(view: str, n: int, source, fed: Federation) -> dict:
    """One view's random choices for n samples (each client's, from a generator or a CohortDraws)."""
    images = fed.images
    if view == "strong":
        return draw_strong(n, images.x.shape[2:], source, images.augment)
    return draw_weak(n, images.x.shape[1], source, images.augment)


def per_step(fed: Federation, requests) -> int:
    """Round 1's draws client by client: each step, each client's next batch from its `batches` stream, then per
    view each client's draws from its generator, laid out as one batch beside the clients' indices (the cohort
    trainer's `_make_views` before it drew for all clients at once, without the augmentation). Client-steps."""
    clients = fed.sample_clients(1)
    views = [fed.client_view(c, 1) for c in clients]
    plans = [fed.algorithm.plan(v, 1) for v in views]
    steps = [plan.steps(view) for plan, view in zip(plans, views)]
    streams = [batches(fed.images, v, p, fed.generator(1, c)) for v, p, c in zip(views, plans, clients)]
    for i in range(max(steps)):
        drawn = [next(streams[k]) for k in range(len(clients)) if i < steps[k]]
        draws: dict[str, list] = {}
        idx: dict[str, list] = {}
        for part, view in requests:
            parts = [getattr(batch, part) for batch in drawn]
            draws.setdefault(KIND[view], []).extend(_draw(view, len(p), p.generator, fed) for p in parts)
            idx.setdefault(KIND[view], []).extend(p.idx for p in parts)
        for kind in draws:               # one batch a kind, as the augmentation is called
            concat_draws(draws[kind])
            torch.cat(idx[kind])
    return sum(steps)


def per_round(fed: Federation, requests) -> int:
    """Round 1's draws for all clients at once, as train_cohort makes them: the clients' streams as words, each
    step every client's chunks (CohortBatches), then per view every client's draws (CohortDraws). Client-steps."""
    clients = fed.sample_clients(1)
    views = [fed.client_view(c, 1) for c in clients]
    plans = [fed.algorithm.plan(v, 1) for v in views]
    steps = np.array([plan.steps(view) for plan, view in zip(plans, views)], np.int64)
    streams = CohortStreams([fed.generator(1, c) for c in clients], fed.device)
    walk = CohortBatches(views, plans, streams)
    for i in range(int(steps.max())):
        active = np.flatnonzero(steps > i)
        labeled, unlabeled = walk.next(active)
        shapes: list = [None] * len(clients)
        for c, n_l, n_u in zip(active.tolist(), labeled.tolist(), unlabeled.tolist()):
            shapes[c] = (n_l, n_u, int(steps[c]))
        for members in run_groups(active.tolist(), shapes, [0] * len(clients)).values():
            source = CohortDraws(streams, streams.rows(np.array(members, np.int64)))
            chunks = dict(zip(("labeled", "unlabeled"), walk.indices(source.rows)))
            draws: dict[str, list] = {}
            idx: dict[str, list] = {}
            for part, view in requests:
                drawn = _draw(view, chunks[part].shape[1], source, fed)
                draws.setdefault(KIND[view], []).append(clients_as_samples(drawn))
                idx.setdefault(KIND[view], []).append(chunks[part].flatten())
            for kind in draws:
                concat_draws(draws[kind])
                torch.cat(idx[kind])
    streams.finish()
    return int(steps.sum())


def measure(algorithm: str = "fedsiam_d", clients: int = 100, repeats: int = 5, device: str = "cpu") -> dict:
    """The row: µs per client-step each way (medians of `repeats` interleaved rounds after a warm-up) and the ratio."""
    fed = Federation.build(RunConfig(algorithm=algorithm, clients_per_round=clients, device=device, **PROTOCOL))
    ways = {"per_step": per_step, "per_round": per_round}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for r in range(repeats + 1):
        for name, way in ways.items():
            start = time.perf_counter()
            client_steps = way(fed, REQUESTS[algorithm])
            if device == "cuda":
                torch.cuda.synchronize()
            if r:                      # the first round warms caches (and kernels) up
                seconds[name].append(time.perf_counter() - start)
    row = {"case": "host_draws", "algorithm": algorithm, "device": device, "threads": torch.get_num_threads(),
           "clients": clients, "client_steps": client_steps, "repeats": repeats}
    for name, s in seconds.items():
        row[f"{name}_us"] = round(1e6 * statistics.median(s) / client_steps, 2)
        row[f"{name}_us_all"] = [round(1e6 * x / client_steps, 2) for x in s]
    row["fewer"] = round(row["per_step_us"] / row["per_round_us"], 2)
    return row


def main(pairs: dict[str, str]) -> tuple[list[dict], str]:
    """Measure, print, and return the rows and the options as bench's record states its command."""
    unknown = set(pairs) - {"cases", "algorithm", "clients", "repeats", "device", "out"}
    if unknown:
        raise ConfigError(f"bench cases=host_draws: unknown option(s) {', '.join(sorted(unknown))}: "
                          "allowed are algorithm, clients, repeats, device, out")
    algorithm = pairs.get("algorithm", "fedsiam_d")
    if algorithm not in REQUESTS:
        raise ConfigError(f"bench: algorithm={algorithm!r}: must be one of {', '.join(REQUESTS)}")
    numbers = {}
    for key, default, top in (("clients", 100, PROTOCOL["clients"]), ("repeats", 5, 1000)):
        value = pairs.get(key, str(default))
        if not value.isdigit() or not 1 <= int(value) <= top:
            raise ConfigError(f"bench: {key}={value!r}: must be an integer within [1, {top}]")
        numbers[key] = int(value)
    device = pairs.get("device", "cpu")
    if device == "cpu":
        torch.set_num_threads(1)       # as runs train: one run a core
    print(f"host draws: {algorithm} on MNIST, {numbers['clients']} clients a round, round 1 each way "
          f"{numbers['repeats']} times after a warm-up, on {device}", flush=True)
    row = measure(algorithm, numbers["clients"], numbers["repeats"], device)
    print(f"host µs per client-step ({row['client_steps']} client-steps): per step {row['per_step_us']} "
          f"(all: {row['per_step_us_all']}), per round {row['per_round_us']} (all: {row['per_round_us_all']}); "
          f"{row['fewer']}× fewer", flush=True)
    options = " ".join(f"{k}={v}" for k, v in pairs.items() if k not in ("device", "out"))
    return [row], options
