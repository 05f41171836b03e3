"""What every executor is (the `Executor` protocol) and how many runs it trains at once, apart from the
registry (executors/__init__.py), so that an executor's module imports this and never the registry that
names it."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

from ..config import ConfigError

if TYPE_CHECKING:     # annotations only: importing the executors imports no torch (executors/__init__.py)
    from .progress import JobProgress
    from ..run_config import RunConfig
    from ..store import RunStore


class RunsFailed(RuntimeError):
    """Some runs raised in their task; the other runs of the job are in the store."""


class Executor(Protocol):
    """Trains runs into a store. Only `run` is required: subclass this to inherit the others.

    As a context manager an executor holds what it needs across calls (reproduce: the plan's estimate,
    then the training, on one Ray); these defaults hold nothing.
    """

    def run(self, configs: list[RunConfig], store: RunStore, job: JobProgress) -> None:
        """Train `configs` (distinct, none finished in `store`) into `store`, reporting to `job`: `job.poll`
        with the runs in flight, `job.finished(cfg, summary)` once per run. An interrupt (KeyboardInterrupt,
        also raised on SIGTERM) must stop every run before it propagates; the next call resumes each run
        from its checkpoint."""
        raise NotImplementedError

    def slots(self, configs: list[RunConfig]) -> int:
        """How many of `configs` train at once (the plan's estimated time)."""
        return 1

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


def default_batch(configs: list[RunConfig]) -> int:
    """How many runs one task trains in lockstep (trainer.train_batch): $FSSL_BATCH if set; else, for CUDA
    runs, as many as the GPU's memory holds by trainer.batch_size (at most trainer.BATCH_CAP); else 1: on
    this project's 2-core CPU a batch trained no faster than its runs one after another (`bench
    cases=batch`, README), and a run a process keeps both cores busy."""
    if "FSSL_BATCH" in os.environ:
        text = os.environ["FSSL_BATCH"]
        if not (text.isascii() and text.strip().isdigit() and int(text) >= 1):
            raise ConfigError(f"FSSL_BATCH={text!r}: must be a whole number of runs a batch, 1 or more")
        return int(text)
    cuda = [c for c in configs if c.device == "cuda"]
    if not cuda:
        return 1
    # torch, only for CUDA runs: importing the executors imports no torch (executors/__init__.py)
    import torch
    from ..engine.trainer import batch_size, network_size
    memory = torch.cuda.get_device_properties(0).total_memory
    return min(batch_size(c, *network_size(c), memory) for c in cuda)


def default_workers(configs: list[RunConfig]) -> int:
    if "FSSL_WORKERS" in os.environ:
        text = os.environ["FSSL_WORKERS"]
        if not (text.isascii() and text.strip().isdigit() and int(text) >= 1):
            raise ConfigError(f"FSSL_WORKERS={text!r}: must be a whole number of worker processes, 1 or more")
        return int(text)
    if any(c.device == "cuda" for c in configs):
        import torch        # as default_batch's
        from ..engine.gpu_defaults import workers
        count, why = workers(torch.cuda.get_device_name())
        print(f"[executor] CUDA runs: {why}; FSSL_WORKERS sets another count", file=sys.stderr, flush=True)
        return count
    return os.cpu_count() or 1
