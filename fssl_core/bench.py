"""Speed benchmark: seconds per round and local steps per second of a config, printed as JSON.

`python -m fssl_core bench [key=value ...]` runs a few rounds outside the run store (nothing is
written) and reports the median round time after one warm-up round, so numbers are comparable
across devices and commits. Defaults: FedAvg on MNIST with FedSiam's Table 2 protocol.
"""
from __future__ import annotations

import json
import statistics
import time

import torch

from .config import RunConfig
from .engine import Federation

DEFAULTS = {"algorithm": "fedavg", "dataset": "mnist", "partition": "iid", "labeled_ratio": "0.1", "rounds": "4"}


def bench(cfg: RunConfig) -> dict:
    build_start = time.perf_counter()
    fed = Federation.build(cfg)
    build_seconds = time.perf_counter() - build_start
    if fed.ctx.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(fed.ctx.device)
    state = fed.initial_state()
    seconds = []
    for r in range(1, cfg.rounds + 1):
        start = time.perf_counter()
        state, _ = fed.run_round(state, r)
        if fed.ctx.device.type == "cuda":
            torch.cuda.synchronize(fed.ctx.device)
        seconds.append(time.perf_counter() - start)
    timed = seconds[1:] or seconds      # the first round pays for warm-up (allocator, kernels)
    steps = sum(fed.algorithm.plan(fed.client_view(k, 1), 1).steps(fed.client_view(k, 1))
                for k in fed.sample_clients(1))
    out = {"algorithm": cfg.algorithm, "dataset": cfg.dataset, "model": cfg.model, "device": str(fed.ctx.device),
           "device_name": torch.cuda.get_device_name(fed.ctx.device) if fed.ctx.device.type == "cuda" else "cpu",
           "threads": torch.get_num_threads(), "rounds_timed": len(timed),
           "build_seconds": round(build_seconds, 3),
           "seconds_per_round": round(statistics.median(timed), 4),
           "local_steps_per_round": steps,
           "steps_per_second": round(steps / statistics.median(timed), 1)}
    if fed.ctx.device.type == "cuda":
        out["peak_memory_mib"] = round(torch.cuda.max_memory_allocated(fed.ctx.device) / 2**20, 1)
    return out


def main(pairs: dict[str, str]) -> None:
    cfg = RunConfig.from_strings({**DEFAULTS, **pairs})
    print(json.dumps(bench(cfg), sort_keys=True))
