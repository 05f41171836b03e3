"""The run store: one directory per run, named by the hash of its config.

    runs/<run_id>/config.json     the full config
    runs/<run_id>/env.json        versions, device, host
    runs/<run_id>/metrics.jsonl   one JSON object per finished round
    runs/<run_id>/checkpoint.pt   server state after the last checkpointed round (+ its metrics)
    runs/<run_id>/result.json     written last: the summary; its presence means "finished"

Every file is written atomically (temporary file + rename), so an interrupted run leaves either
the previous or the new version, never half of one. A finished run is read back, not retrained;
an unfinished one resumes from its checkpoint and, as every random draw is derived from
(seed, round, party), ends with the same metrics as a run that was never interrupted.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import torch

from . import __version__
from .config import ConfigError, RunConfig
from .paths import runs_dir
from .training import Diverged

OK, DIVERGED = "ok", "diverged"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)     # mkstemp makes files private; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_torch_save(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(eq=False)
class RunResult:
    config: RunConfig
    metrics: list[dict[str, Any]]
    summary: dict[str, Any]

    @property
    def status(self) -> str:
        return self.summary["status"]

    @property
    def accuracy(self) -> float | None:
        return self.summary.get("accuracy")


class RunStore:
    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else runs_dir()

    def dir(self, cfg: RunConfig) -> Path:
        return self.root / cfg.run_id

    def load(self, cfg: RunConfig) -> RunResult | None:
        """The finished run of `cfg`, or None when it has not finished."""
        d = self.dir(cfg)
        if not (d / "result.json").exists():
            return None
        summary = json.loads((d / "result.json").read_text())
        return RunResult(cfg, _read_jsonl(d / "metrics.jsonl"), summary)

    def final_state(self, cfg: RunConfig) -> dict[str, Any]:
        """The server state after the last round of the finished run of `cfg` (its checkpoint)."""
        if self.load(cfg) is None:
            raise FileNotFoundError(f"final_state: run {cfg.run_id} ({describe(cfg)}) has not finished in {self.root}")
        return torch.load(self.dir(cfg) / "checkpoint.pt", map_location=cfg.device, weights_only=True)["state"]

    def finished(self, **match: Any) -> list[RunResult]:
        """Every finished run in the store whose config has the given field values."""
        out = []
        for result_file in sorted(self.root.glob("*/result.json")):
            cfg = RunConfig.from_dict(json.loads((result_file.parent / "config.json").read_text()))
            if all(getattr(cfg, k) == v for k, v in match.items()):
                out.append(self.load(cfg))
        return [r for r in out if r is not None]

    def execute(self, cfg: RunConfig, progress: bool = True,
                after_round: Callable[[int], None] | None = None) -> RunResult:
        """Read back a finished run, else run it (resuming from its checkpoint if any).

        `after_round(r)` is called once round r is checkpointed (tests use it to interrupt a run).
        CPU runs use one thread: a float reduction split over a different number of threads sums
        in a different order, and a run must give the same numbers whichever executor ran it.
        """
        done = self.load(cfg)
        if done is not None:
            return done
        threads = torch.get_num_threads()
        if cfg.device == "cpu":
            torch.set_num_threads(1)
        try:
            return self._execute(cfg, progress, after_round)
        finally:
            torch.set_num_threads(threads)

    def _execute(self, cfg: RunConfig, progress: bool, after_round: Callable[[int], None] | None) -> RunResult:
        from .engine import Federation   # deferred: the store is usable without building data
        d = self.dir(cfg)
        fed = Federation.build(cfg)
        atomic_write_text(d / "config.json", json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
        atomic_write_text(d / "env.json", json.dumps(_environment(cfg), indent=2, sort_keys=True))
        state, metrics, first = fed.initial_state(), [], 1
        if (d / "checkpoint.pt").exists():
            ckpt = torch.load(d / "checkpoint.pt", map_location=fed.ctx.device, weights_only=True)
            state, metrics, first = ckpt["state"], ckpt["metrics"], ckpt["round"] + 1
        status, failure = OK, None
        bar = _progress(cfg, first, progress)
        for r in range(first, cfg.rounds + 1):
            try:
                state, m = fed.run_round(state, r)
            except Diverged as err:
                status, failure = DIVERGED, {"round": r, "reason": str(err)}
                break
            metrics.append(m)
            atomic_write_text(d / "metrics.jsonl", "".join(json.dumps(x) + "\n" for x in metrics))
            if r % cfg.checkpoint_every == 0 or r == cfg.rounds:
                atomic_torch_save(d / "checkpoint.pt", {"round": r, "state": state, "metrics": metrics})
            if bar is not None:
                bar.update(1)
                if "accuracy" in m:
                    bar.set_postfix(acc=f"{m['accuracy']:.2f}")
            if after_round is not None:
                after_round(r)
        if bar is not None:
            bar.close()
        summary = summarize(cfg, metrics, status, fed.model_parameters, d)
        if failure:
            summary["diverged"] = failure
        atomic_write_text(d / "result.json", json.dumps(summary, indent=2, sort_keys=True))
        return RunResult(cfg, metrics, summary)


def run_all(configs: Iterable[RunConfig], store: RunStore | None = None, progress: bool = True,
            workers: int | None = None, estimate: dict[str, float] | None = None,
            executor: Any = None) -> list[RunResult]:
    """Run every config not yet in the store; return all results in order.

    Runs are independent and their results live only in their own directories, so they can run in
    any order, in parallel here (`workers` processes, default $FSSL_WORKERS, else one per CPU core
    for CPU runs and one for CUDA runs) or on a cluster, and the store merges them by directory.
    `estimate` (run id -> seconds) weights the progress display's ETA; an interrupt (Ctrl-C, SIGTERM)
    stops every worker, and the next call resumes each run from its checkpoint.
    `executor`: "local" (these processes) or "ray" (a Ray task per run, fssl_core/ray_executor.py; or a
    RayExecutor), default $FSSL_EXECUTOR, else "local"; Ray ignores `workers` (the cluster's resources decide).
    """
    from .progress import JobProgress

    store = store or RunStore()
    configs = list(configs)
    pending = list({c.run_id: c for c in configs if store.load(c) is None}.values())
    workers = default_workers(pending) if workers is None else workers
    executor = executor_named(executor) if executor is None or isinstance(executor, str) else executor
    job = JobProgress(pending, store, estimate, enabled=progress)
    try:
        with sigterm_as_interrupt():
            if executor is not None:
                executor.run(pending, store, job)
            elif workers > 1 and len(pending) > 1:
                _run_in_processes(pending, store, min(workers, len(pending)), job)
            else:
                for cfg in pending:
                    job.poll([cfg])
                    job.finished(cfg, store.execute(cfg, progress=False, after_round=lambda r: job.poll([cfg])).summary)
    finally:
        job.close()
    return [store.execute(cfg, progress=False) for cfg in configs]   # all finished: read back


EXECUTORS = ("local", "ray")


def executor_named(name: str | None = None, **options: Any):
    """The executor `name` (default $FSSL_EXECUTOR, else "local"): None for run_all's own processes, or a
    RayExecutor built with `options` (e.g. gpus_per_run)."""
    name = name or os.environ.get("FSSL_EXECUTOR") or "local"
    if name == "ray":
        from .ray_executor import RayExecutor
        return RayExecutor(**options)
    if name != "local":
        raise ConfigError(f"executor={name!r}: must be one of {', '.join(EXECUTORS)} (also $FSSL_EXECUTOR)")
    if options:
        raise ConfigError(f"{', '.join(options)}: only for executor='ray' (the local executor has no such option)")
    return None


def default_workers(configs: list[RunConfig]) -> int:
    if "FSSL_WORKERS" in os.environ:
        return max(1, int(os.environ["FSSL_WORKERS"]))
    if any(c.device == "cuda" for c in configs):
        return 1
    return os.cpu_count() or 1


def _run_in_processes(configs: list[RunConfig], store: RunStore, workers: int, job) -> None:
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


class sigterm_as_interrupt:
    """Within the block, SIGTERM (`kill`, `timeout`, a scheduler) raises KeyboardInterrupt in the main
    thread, so the executor's cleanup stops the workers as it does on Ctrl-C."""

    def __enter__(self):
        import signal
        import threading
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc):
        import signal
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _execute_quietly(root: str, cfg: RunConfig) -> dict:
    return RunStore(root).execute(cfg, progress=False).summary


def describe(cfg: RunConfig) -> str:
    return (f"{cfg.algorithm} {cfg.dataset} {cfg.partition} γ={cfg.labeled_ratio} K={cfg.clients} "
            f"R={cfg.rounds} seed={cfg.seed} ({cfg.run_id})")


def summarize(cfg: RunConfig, metrics: list[dict], status: str, model_parameters: int, run_dir: Path) -> dict:
    evaluated = [m for m in metrics if "accuracy" in m]
    seconds = sum(m["seconds"] for m in metrics)
    best = max(evaluated, key=lambda m: m["accuracy"], default=None)
    return {
        "accuracy": evaluated[-1]["accuracy"] if evaluated and status == OK else None,
        "best_accuracy": best["accuracy"] if best else None,   # for rounds-to-best curves only; never for model selection
        "best_round": best["round"] if best else None,
        "rounds": len(metrics),
        "seconds": seconds,
        "seconds_per_round": seconds / len(metrics) if metrics else None,
        "upload_bytes": sum(m["upload_bytes"] for m in metrics),
        "download_bytes": sum(m["download_bytes"] for m in metrics),
        "model_parameters": model_parameters,
        "status": status,
        "device": cfg.device,
        "run_id": cfg.run_id,
        "run_dir": str(run_dir),
    }


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _environment(cfg: RunConfig) -> dict:
    env = {
        "fssl_core": __version__, "torch": torch.__version__, "python": sys.version.split()[0],
        "platform": platform.platform(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
    }
    if cfg.device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
    return env


def _progress(cfg: RunConfig, first: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=cfg.rounds, initial=first - 1, desc=f"{cfg.algorithm}/{cfg.dataset}", unit="round",
                leave=False, file=sys.stderr)
