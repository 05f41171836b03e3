"""The local executor: this machine's processes, one run per process (or this process, for one run
or one worker)."""
from __future__ import annotations

import os
import sys

from ..config import RunConfig
from ..progress import JobProgress
from ..store import RunStore
from . import Executor, default_workers


class LocalExecutor(Executor):
    """Trains runs on this machine: in this process for one worker or one run, else in `workers` spawned
    processes (default $FSSL_WORKERS, else one per CPU core for CPU runs and one for CUDA runs)."""

    def __init__(self, workers: int | None = None):
        self.workers = workers

    def slots(self, configs: list[RunConfig]) -> int:
        return default_workers(configs) if self.workers is None else self.workers

    def run(self, configs: list[RunConfig], store: RunStore, job: JobProgress) -> None:
        workers = self.slots(configs)
        if workers > 1 and len(configs) > 1:
            _run_in_processes(configs, store, min(workers, len(configs)), job)
            return
        for cfg in configs:
            job.poll([cfg])
            job.finished(cfg, store.execute(cfg, progress=False, after_round=lambda r: job.poll([cfg])).summary)


def _run_in_processes(configs: list[RunConfig], store: RunStore, workers: int, job: JobProgress) -> None:
    """One run per process (each CPU run single-threaded, see RunStore.execute): on a few cores,
    runs side by side beat intra-op threads for the papers' small networks and batches, and
    threads of several runs competing for the cores would slow all of them. Longest runs first
    (by the job's estimates), so the last minutes are not one long run on one core."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    order = sorted(configs, key=lambda c: -job.cost[c.run_id])
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_die_with_parent)
    try:
        queue = iter(order)
        running = {}
        for cfg in queue:                       # keep exactly `workers` runs in flight, so the
            running[pool.submit(_execute_quietly, str(store.root), cfg)] = cfg   # display knows which
            if len(running) == workers:
                break
        while running:
            done, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                cfg = running.pop(future)
                job.finished(cfg, future.result())
                nxt = next(queue, None)
                if nxt is not None:
                    running[pool.submit(_execute_quietly, str(store.root), nxt)] = nxt
            job.poll(list(running.values()))
    except BaseException:
        for process in list((pool._processes or {}).values()):   # no API stops a running task
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _die_with_parent() -> None:
    """In a worker: ask Linux to end this process when the job that started it dies, however it dies
    (a SIGKILL leaves no handler a chance to stop the workers)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
        if os.getppid() == 1:       # the parent died before prctl took effect
            os._exit(1)


def _execute_quietly(root: str, cfg: RunConfig) -> dict:
    return RunStore(root).execute(cfg, progress=False).summary
