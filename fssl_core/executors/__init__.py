"""Executors: what trains a batch of runs into the run store, and where.

    run_all(configs, executor="local")    # this machine's processes (executors/local.py)
    run_all(configs, executor="ray")      # a Ray task per run (executors/ray.py)

Runs are independent and their results live only in their own directories (fssl_core/store/), so
they can run in any order, side by side or on a cluster, and the store merges them by directory. An
executor is an object with `run(configs, store, job)` (the `Executor` protocol below); adding one is a
module implementing it (executors/base.py) plus a line in EXECUTORS.

EXECUTORS names each executor's factory as "module:attribute" text, so the command line lists and
checks the names without importing an executor, nor torch behind it: importing this package
imports neither.
"""
from __future__ import annotations

import importlib
import inspect
import os
import signal
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..config import ConfigError
from .base import Executor, RunsFailed, default_batch, default_workers

if TYPE_CHECKING:     # annotations only: importing this package imports no torch (module docstring)
    from ..run_config import RunConfig
    from ..store import RunResult, RunStore

__all__ = ["EXECUTORS", "Executor", "RunsFailed", "default_batch", "default_workers", "executor_named", "run_all",
           "sigterm_as_interrupt"]

# name -> "module:factory"; the factory's keyword arguments are the executor's options
EXECUTORS: dict[str, str] = {
    "local": "fssl_core.executors.local:LocalExecutor",
    "ray": "fssl_core.executors.ray:RayExecutor",
}


def executor_named(name: str | None = None, workers: int | None = None, **options: Any) -> Executor:
    """The executor `name` (default $FSSL_EXECUTOR, else "local") built with `options` (e.g. Ray's
    gpus_per_run). `workers` goes to an executor that takes it (the local one's process count); one that
    schedules runs itself ignores it (Ray: the cluster's resources decide)."""
    name = name or os.environ.get("FSSL_EXECUTOR") or "local"
    if name not in EXECUTORS:
        raise ConfigError(f"executor={name!r}: must be one of {', '.join(EXECUTORS)} (also $FSSL_EXECUTOR)")
    factory = _factory(name)
    accepted = _options(factory)
    unknown = [key for key in options if key not in accepted]
    if unknown:
        owners = [other for other in EXECUTORS if other != name and set(unknown) <= _options(_factory(other))]
        if owners:
            raise ConfigError(f"{', '.join(unknown)}: only for executor={owners[0]!r} (the {name} executor has "
                              f"no such option)")
        raise ConfigError(f"{', '.join(unknown)}: not an option of executor={name!r} (its options: "
                          f"{', '.join(sorted(accepted)) or 'none'})")
    if workers is not None and "workers" in accepted:
        options["workers"] = workers
    return factory(**options)


def _factory(name: str) -> Callable[..., Executor]:
    module, _, attribute = EXECUTORS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def _options(factory: Callable[..., Any]) -> set[str]:
    """The keyword arguments a factory takes."""
    return {p.name for p in inspect.signature(factory).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def run_all(configs: Iterable[RunConfig], store: RunStore | None = None, progress: bool = True,
            workers: int | None = None, estimate: dict[str, float] | None = None,
            executor: str | Executor | None = None) -> list[RunResult]:
    """Run every config not yet in the store; return all results in order.

    `executor`: a name in EXECUTORS (default $FSSL_EXECUTOR, else "local") or an Executor. `workers`,
    with an executor named: the local executor's process count (default $FSSL_WORKERS, else one per CPU
    core for CPU runs and one for CUDA runs); Ray ignores it (executor_named). `estimate` (run id ->
    seconds) weights the progress display's ETA; an interrupt (Ctrl-C, SIGTERM) stops every run, and the
    next call resumes each run from its checkpoint.
    """
    # here, not at the top: they import torch, which importing this package never does (module docstring)
    from .progress import JobProgress
    from ..store import RunStore
    store = store or RunStore()
    configs = list(configs)
    pending = list({c.run_id: c for c in configs if store.load(c) is None}.values())
    if executor is None or isinstance(executor, str):
        executor = executor_named(executor, workers=workers)
    job = JobProgress(pending, store, estimate, enabled=progress, slots=executor.slots(pending) if pending else 1)
    try:
        with sigterm_as_interrupt():
            executor.run(pending, store, job)
    finally:
        job.close()
    from ..engine.trainer import train      # torch: as JobProgress's
    return [train(cfg, store, progress=False) for cfg in configs]   # all finished: read back


class sigterm_as_interrupt:
    """Within the block, SIGTERM (`kill`, `timeout`, a scheduler) raises KeyboardInterrupt in the main
    thread, so the executor's cleanup stops the workers as it does on Ctrl-C."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")
