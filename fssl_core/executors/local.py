"""The local executor: this machine's processes, each training one batch of runs (trainer.plan_batches;
one run a batch unless `batch` says more), or this process, for one batch or one worker."""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING

from ..run_config import RunConfig
from .progress import JobProgress
from ..store import RunStore
from .base import Executor, default_batch, default_workers

if TYPE_CHECKING:     # annotations only
    from ..engine.trainer import Tracker


class LocalExecutor(Executor):
    """Trains runs on this machine: in this process for one worker or one batch, else in `workers` spawned
    processes (default $FSSL_WORKERS, else one per CPU core for CPU runs and one for CUDA runs). `batch`:
    the most runs one process trains in lockstep (default $FSSL_BATCH, else executors.default_batch).
    `tracker`: follows every run as it trains (engine.trainer.Tracker; it must pickle, for the processes)."""

    def __init__(self, workers: int | None = None, batch: int | None = None, tracker: Tracker | None = None):
        self.workers, self.batch, self.tracker = workers, batch, tracker

    def slots(self, configs: list[RunConfig]) -> int:
        return default_workers(configs) if self.workers is None else self.workers

    def batches(self, configs: list[RunConfig], job: JobProgress) -> list[list[RunConfig]]:
        """The batches each task trains, the costliest first (by the job's estimates), so the last
        minutes are not one long task on one core."""
        # the engine (torch) where runs are batched: a plan builds its executor (reproduce) and runs no torch
        from ..engine.trainer import plan_batches
        size = default_batch(configs) if self.batch is None else self.batch
        return sorted(plan_batches(configs, size), key=lambda b: -sum(job.cost[c.run_id] for c in b))

    def run(self, configs: list[RunConfig], store: RunStore, job: JobProgress) -> None:
        from ..engine.trainer import train_batch        # as batches' plan_batches
        batches = self.batches(configs, job)
        workers = self.slots(configs)
        if workers > 1 and len(batches) > 1:
            _run_in_processes(batches, store, min(workers, len(batches)), job, self.tracker)
            return
        for batch in batches:
            job.poll(batch)
            results = train_batch(batch, store, progress=False, after_round=lambda cfg, r: job.poll(batch),
                                  tracker=self.tracker)
            for cfg, result in zip(batch, results):
                job.finished(cfg, result.summary)


def _run_in_processes(batches: list[list[RunConfig]], store: RunStore, workers: int, job: JobProgress,
                      tracker: Tracker | None = None) -> None:
    """One batch per process (each CPU run single-threaded, see trainer.train_batch): on a few cores,
    runs side by side beat intra-op threads for the papers' small networks and batches, and
    threads of several runs competing for the cores would slow all of them."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=die_with_parent)
    try:
        queue = iter(batches)
        running = {}
        for batch in queue:                       # keep exactly `workers` batches in flight, so the
            running[pool.submit(_train_quietly, str(store.root), batch, tracker)] = batch   # display knows which
            if len(running) == workers:
                break
        while running:
            done, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                batch = running.pop(future)
                for cfg, summary in zip(batch, future.result()):
                    job.finished(cfg, summary)
                nxt = next(queue, None)
                if nxt is not None:
                    running[pool.submit(_train_quietly, str(store.root), nxt, tracker)] = nxt
            job.poll([cfg for batch in running.values() for cfg in batch])
    except BaseException:
        # ProcessPoolExecutor has no API that stops a running task: its private _processes is read (None or
        # missing on another Python only skips the terminate; shutdown below still cancels the queue)
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def die_with_parent() -> None:
    """In a worker: ask Linux to end this process when the job that started it dies, however it dies
    (a SIGKILL leaves no handler a chance to stop the workers)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
        if os.getppid() == 1:       # the parent died before prctl took effect
            os._exit(1)


def _train_quietly(root: str, batch: list[RunConfig], tracker: Tracker | None = None) -> list[dict]:
    from ..engine.trainer import train_batch        # as LocalExecutor.batches' plan_batches
    return [result.summary for result in train_batch(batch, RunStore(root), progress=False, tracker=tracker)]
