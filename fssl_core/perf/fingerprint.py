"""Fingerprints of what the trainers compute: a hash of every byte a few short runs end with.

A speed change to the trainers (the cohort's batching, the augmentation's draws, the way a grouped
network leaves vmap) keeps the run identity only if it keeps every float. `bench` times such a
change; this module proves it kept the floats: run it before the change, then after, on the same
machine (kernels differ between CPU instruction sets, so digests are compared on one machine only).

`python -m fssl_core fingerprint --out before.json`, change the code, then
`python -m fssl_core fingerprint --against before.json`: each case says "same floats" or "differs",
and the command exits with 1 if any differs (so the change needs a new run identity: a model's or
an algorithm's `revision`).

Each case trains 6 rounds of FedSiam's Table 2 protocol at one local epoch (rounds 4-6 past FedSiam's
α = 0 phase, round 2's labeled repeats, dropout in the authors' network, strong views for FixMatch and
FedMatch, FedSem's pseudo-label phase, FedCon with labels at the server) on real MNIST, one CPU thread,
and hashes the final state and every round's metrics but the timings. About a minute on one core.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch

from ..config import ConfigError
from ..engine.federation import Federation
from ..run_config import RunConfig

ROUNDS = 6
PROTOCOL = dict(dataset="mnist", partition="iid", labeled_ratio=0.1, clients=100, clients_per_round=10, local_epochs=1,
                batch_size=10, lr=0.01, momentum=0.9, weight_decay=1e-4, seed=7, rounds=10_000, eval_every=10_000)
CASES: dict[str, dict[str, Any]] = {
    "fedavg": dict(algorithm="fedavg"),
    "fedavg_plus": dict(algorithm="fedavg_plus"),
    "fedsiam_d": dict(algorithm="fedsiam_d"),
    "fedsiam_d_noniid3": dict(algorithm="fedsiam_d", partition="noniid3"),      # clients of unequal sizes
    "fedsiam_d_authors": dict(algorithm="fedsiam_d", model="cnn_mnist_authors"),  # per-client dropout masks
    "fedsiam_d_sequential": dict(algorithm="fedsiam_d", trainer="sequential"),
    "fedfixmatch": dict(algorithm="fedfixmatch"),
    "fedmatch": dict(algorithm="fedmatch", momentum=0.0),
    "fedsem": dict(algorithm="fedsem", rounds=6, fedsem_phase1_fraction=0.5),      # rounds 4-6: pseudo-labels
    "fedsiam_nosiam_authors": dict(algorithm="fedsiam_nosiam", model="cnn_mnist_authors"),   # views, masks, views
    "fedcon": dict(algorithm="fedcon", partition="server_dirichlet", rich_clients=10, server_labeled=600,
                   dirichlet_alpha=10.0),
}
TIMINGS = ("seconds", "time")      # metric names holding wall-clock figures: not part of what a run computes


def digest(obj: Any, h: "hashlib._Hash") -> None:
    """Feed `obj` into `h`: tensors by dtype, shape and bytes; dicts by sorted key; lists in order."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, dict):
        for k in sorted(obj, key=str):
            h.update(repr(k).encode())
            digest(obj[k], h)
    elif isinstance(obj, (list, tuple)):
        h.update(f"[{len(obj)}]".encode())
        for v in obj:
            digest(v, h)
    else:
        h.update(repr(obj).encode())


def case_digest(name: str, rounds: int = ROUNDS) -> str:
    """The hex digest of case `name` after `rounds` rounds (cohort trainer unless the case says)."""
    cfg = RunConfig(**{**PROTOCOL, "trainer": "cohort", **CASES[name]})
    fed = Federation.build(cfg)
    state, metrics = fed.initial_state(), []
    for r in range(1, rounds + 1):
        state, m = fed.run_round(state, r)
        metrics.append({k: v for k, v in m.items() if not any(t in k for t in TIMINGS)})
    h = hashlib.sha256()
    digest(state, h)
    digest(metrics, h)
    return h.hexdigest()[:16]


def compare(got: dict[str, str], reference: dict[str, str]) -> dict[str, str]:
    """Per case: 'same floats', 'differs', or 'not in the reference'."""
    return {name: ("not in the reference" if name not in reference else
                   "same floats" if reference[name] == value else "differs") for name, value in got.items()}


def main(out: str | None = None, against: str | None = None, cases: list[str] | None = None) -> int:
    names = cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise ConfigError(f"fingerprint: cases={','.join(unknown)}: must be among {', '.join(CASES)}")
    reference = json.loads(Path(against).read_text()) if against else None
    torch.set_num_threads(1)
    print(f"fingerprint: {len(names)} case(s), {ROUNDS} rounds each on MNIST, one thread (about 5 s a case)", flush=True)
    got: dict[str, str] = {}
    for i, name in enumerate(names, 1):
        got[name] = case_digest(name)
        verdict = f"  {compare({name: got[name]}, reference)[name]}" if reference is not None else ""
        print(f"[{i}/{len(names)}] {name:24s} {got[name]}{verdict}", flush=True)
    if out:
        Path(out).write_text(json.dumps(got, indent=1) + "\n")
    return int(reference is not None and any(v == "differs" for v in compare(got, reference).values()))
