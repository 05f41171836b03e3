"""The Ray executor: every pending run is one Ray task, on a local Ray or on the cluster at $RAY_ADDRESS.

    python -m fssl_core reproduce --executor ray          # or run_all(..., executor="ray"), or FSSL_EXECUTOR=ray

Ray is an optional extra (`pip install -e '.[ray]'`). A task declares one CPU, and on CUDA `gpus_per_run`
of a GPU, and Ray places it: fssl keeps no scheduler of its own.

The run store stays the source of truth, and workers need no shared filesystem:
- a worker that sees the driver's store (a local Ray, or a cluster with a shared filesystem) trains
  straight into it, as the process pool does: a retried task resumes from the run's checkpoint;
- a worker that does not trains into a scratch store on its own disk and returns the run directory's
  files; the driver writes them into its store atomically, result.json last, so a run is finished in
  the store only once all of its files are. A task retried on the same node resumes from the scratch
  checkpoint, on another node it starts again: either way it ends with the same numbers, as every
  random draw derives from (seed, round, party) and CPU runs are single-threaded (trainer.train_batch).
Each task decides which by itself: the driver leaves a token file in its store and a worker trains
there only if it reads that token (`shared_store=None`; True or False forces one way).

Faults: a task whose worker dies is retried by Ray (`max_retries`); a task that raises is the run's own
failure, printed when it happens, not retried, and the job ends with RunsFailed naming every failed run.
Progress: tasks report their finished rounds to a small actor read by the driver's display.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from tqdm.auto import tqdm

from .. import __version__
from ..config import ConfigError
from ..run_config import RunConfig
from .progress import JobProgress
from ..store import RESULT, RunStore, atomic_write_bytes, atomic_write_text, describe, run_lock
from .base import Executor, RunsFailed

if TYPE_CHECKING:
    from ..engine.trainer import Tracker

INSTALL_HINT = "pip install -e '.[ray]'"
MAX_RETRIES = 3                 # retries of a task whose worker died; an exception in the run is never retried
# A run's share of a GPU on CUDA. A whole GPU until runs have been measured on one: the papers' small
# networks (the MNIST CNN) likely leave most of a GPU idle, and e.g. 0.25 would put four runs on it.
DEFAULT_GPUS_PER_RUN = 1.0


def require_ray():
    """The `ray` module, or a ConfigError saying how to install it."""
    try:
        import ray      # ray: the [ray] extra, absent from a plain install
    except ImportError:
        raise ConfigError(f"executor='ray': Ray is not installed in this environment ({sys.executable}); "
                          f"install the extra with {INSTALL_HINT}, or use executor='local'") from None
    return ray


class RayExecutor(Executor):
    """Runs configs as Ray tasks; `run_all(configs, executor=RayExecutor(...))` or executor="ray".

    gpus_per_run: a CUDA run's share of a GPU (a fraction in (0, 1], or a whole number of GPUs).
    shared_store: None: each task checks whether it sees the driver's store; True: it must (else the
        task fails); False: tasks always train in a scratch store and return the files.
    num_cpus: the CPUs of a local Ray (default: this machine's); a cluster has its own.
    scratch: the workers' scratch store (default: a folder in each worker's temporary directory).
    after_round(cfg, r): called in the task after each round (tests use it to kill a worker).
    tracker: follows every run as it trains, in its task (engine.trainer.Tracker; it must pickle). A worker
        killed mid-run leaves its run's tracking open; the retry resumes it (integrations/mlflow_track.py).

    It connects to Ray when it first needs to (counting slots, training), and, used as a context
    manager, keeps that Ray for several calls (reproduce: the plan's estimate, then the training); a
    Ray it started is shut down on leaving, a Ray it found is left running.
    """

    def __init__(self, gpus_per_run: float = DEFAULT_GPUS_PER_RUN, shared_store: bool | None = None,
                 max_retries: int = MAX_RETRIES, num_cpus: int | None = None, scratch: str | None = None,
                 after_round: Callable[[RunConfig, int], None] | None = None, tracker: Tracker | None = None):
        require_ray()
        if not (0 < gpus_per_run <= 1 or float(gpus_per_run).is_integer() and gpus_per_run > 0):
            raise ConfigError(f"gpus_per_run={gpus_per_run}: must be a fraction in (0, 1] or a whole number of GPUs")
        self.gpus_per_run, self.shared_store, self.max_retries = float(gpus_per_run), shared_store, max_retries
        self.num_cpus, self.scratch, self.after_round, self.tracker = num_cpus, scratch, after_round, tracker
        self._depth, self._started = 0, False

    # --- connection ------------------------------------------------------------------------------
    def __enter__(self) -> "RayExecutor":
        self._depth += 1
        return self

    def __exit__(self, *exc) -> bool:
        self._depth -= 1
        if self._depth == 0 and self._started:
            require_ray().shutdown()
            self._started = False
        return False

    def _connect(self):
        """The `ray` module, connected: to the cluster at $RAY_ADDRESS, else to a local Ray started here
        (shut down when the outermost `with self` ends), unless this process is connected already."""
        ray = require_ray()
        if not ray.is_initialized():
            # ray.init installs a SIGTERM handler that aborts the driver; ours (executors.sigterm_as_interrupt)
            # stops the tasks first: put it back
            main = threading.current_thread() is threading.main_thread()
            on_sigterm = signal.getsignal(signal.SIGTERM) if main else None
            address = os.environ.get("RAY_ADDRESS")
            quiet = dict(logging_level=logging.ERROR)
            if address:
                ray.init(address=address, **quiet)
                where = f"connected to the Ray cluster at {address}"
            else:
                ray.init(address="local", num_cpus=self.num_cpus or os.cpu_count(), include_dashboard=False, **quiet)
                where = "started a local Ray"
            self._started = True
            if on_sigterm is not None:
                signal.signal(signal.SIGTERM, on_sigterm)
            res = ray.cluster_resources()
            _say(f"[ray] {where}: {res.get('CPU', 0):g} CPU(s), {res.get('GPU', 0):g} GPU(s)")
        return ray

    def slots(self, configs: list[RunConfig]) -> int:
        """How many of `configs` the cluster runs at once (for the plan's estimate). Connects to Ray only
        when there are runs to count: within `with self`, the same Ray then trains them."""
        if not configs:
            return 1
        with self:
            res = self._connect().cluster_resources()
        cpus = int(res.get("CPU", 1))
        if any(c.device == "cuda" for c in configs):
            return max(1, min(cpus, int(res.get("GPU", 0) / self.gpus_per_run)))
        return max(1, cpus)

    # --- the job ---------------------------------------------------------------------------------
    def run(self, configs: list[RunConfig], store: RunStore, job: JobProgress) -> None:
        """Train `configs` (none of them finished in `store`) on Ray, reporting to `job`."""
        if not configs:
            return
        with self:
            ray = self._connect()
            self._check_gpus(configs, ray.cluster_resources())
            root = store.root.resolve()
            root.mkdir(parents=True, exist_ok=True)
            token = uuid.uuid4().hex         # a worker that reads it in the store's folder sees the store
            token_file = root / f".ray-token-{token}"
            rounds = ray.remote(num_cpus=0)(_Rounds).remote()
            task = ray.remote(_train)
            refs = {}
            try:
                if self.shared_store is not False:
                    token_file.write_text(token)
                for cfg in sorted(configs, key=lambda c: -job.cost[c.run_id]):      # longest first, as locally
                    options = dict(num_cpus=1, num_gpus=self.gpus_per_run if cfg.device == "cuda" else 0,
                                   max_retries=self.max_retries, retry_exceptions=False,
                                   name=f"fssl {cfg.algorithm}/{cfg.dataset} {cfg.run_id}")
                    ref = task.options(**options).remote(cfg, str(root), token, self.shared_store, self.scratch,
                                                         __version__, rounds, self.after_round, self.tracker)
                    refs[ref] = cfg
                failures = self._collect(refs, store, job, rounds)
            except BaseException:           # Ctrl-C, SIGTERM: stop the tasks (on a cluster they would go on)
                for ref in refs:
                    ray.cancel(ref, force=True)
                raise
            finally:
                token_file.unlink(missing_ok=True)
                ray.kill(rounds)
        if failures:
            lines = [f"{describe(cfg)}: {type(cause).__name__}: {cause}".splitlines()[0] for cfg, cause in failures]
            raise RunsFailed(f"{len(failures)} of {len(configs)} run(s) failed in their Ray task (not retried: the "
                             f"error is the run's own); the other runs are in {store.root}:\n  " + "\n  ".join(lines))

    def _check_gpus(self, configs: list[RunConfig], resources: dict) -> None:
        if not any(c.device == "cuda" for c in configs) or resources.get("GPU", 0) >= min(self.gpus_per_run, 1):
            return
        message = "device=cuda runs, but the Ray cluster has no GPU"
        if self._started and not os.environ.get("RAY_ADDRESS"):
            raise ConfigError(f"{message}: this machine's local Ray found none (use --device cpu)")
        _say(f"[ray] warning: {message} now; its tasks wait for one (an autoscaler may add GPU nodes)")

    def _collect(self, refs: dict, store: RunStore, job: JobProgress, rounds) -> list[tuple[RunConfig, BaseException]]:
        """Write each finished task's run into the store as it comes; return the failed runs."""
        ray = require_ray()
        failures = []
        while refs:
            done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=1.0)
            for ref in done:
                cfg = refs.pop(ref)
                try:
                    payload = ray.get(ref)
                except ray.exceptions.RayError as err:
                    cause = getattr(err, "cause", None) or err
                    failures.append((cfg, cause))
                    _say(f"[run failed] {describe(cfg)}:\n{err}")
                    continue
                if payload["files"] is not None:
                    _write_run(store, cfg, payload["files"])
                job.finished(cfg, payload["summary"])
            reported = ray.get(rounds.snapshot.remote())
            job.poll([c for c in refs.values() if c.run_id in reported], rounds=reported)
        return failures


class _Rounds:
    """An actor: the last finished round of each run, as reported by the tasks (0: started)."""

    def __init__(self):
        self.rounds: dict[str, int] = {}

    def report(self, run_id: str, r: int) -> None:
        self.rounds[run_id] = r

    def snapshot(self) -> dict[str, int]:
        return dict(self.rounds)


def _train(cfg: RunConfig, root: str, token: str, shared_store: bool | None, scratch: str | None,
           version: str, rounds, after_round, tracker=None) -> dict:
    """The task: train `cfg` into the driver's store at `root` where this worker sees it, else into a
    scratch store here, and return the summary and, from a scratch store, the run directory's files."""
    if version != __version__:      # the run id hashes the version: results must come from the same code
        raise ConfigError(f"fssl_core {__version__} on this Ray worker, {version} on the driver: install the "
                          f"driver's version on every node")
    token_file = Path(root) / f".ray-token-{token}"
    sees_store = shared_store is not False and token_file.exists() and token_file.read_text() == token
    if shared_store is True and not sees_store:
        raise ConfigError(f"shared_store=True: this Ray worker does not see the driver's run store at {root}")
    here = Path(scratch) if scratch else Path(tempfile.gettempdir()) / f"fssl-ray-{os.getuid()}"
    store = RunStore(root if sees_store else here)
    rounds.report.remote(cfg.run_id, 0)

    def report(r: int) -> None:
        rounds.report.remote(cfg.run_id, r)
        if after_round is not None:
            after_round(cfg, r)

    from ..engine.trainer import train      # the engine (torch) where runs train: a plan builds its executor
    result = train(cfg, store, progress=False, after_round=report, tracker=tracker)
    if sees_store:
        return {"summary": result.summary, "files": None}
    d = store.dir(cfg)
    files = {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file() and not p.name.startswith(".")}
    shutil.rmtree(d, ignore_errors=True)
    return {"summary": result.summary, "files": files}


def _write_run(store: RunStore, cfg: RunConfig, files: dict[str, bytes]) -> None:
    """A worker's run directory into the driver's store: every file atomically, result.json last and
    naming the driver's directory (the worker's summary names its scratch one)."""
    d = store.dir(cfg)
    with run_lock(d):            # the store's one-writer rule holds for the driver's copy too
        for name, data in files.items():
            if name != RESULT:
                atomic_write_bytes(d / name, data)
        # run_dir is outside result.json's digest (store.integrity.summary_digest): a store may move
        summary = {**json.loads(files[RESULT]), "run_dir": str(d)}
        atomic_write_text(d / RESULT, json.dumps(summary, indent=2, sort_keys=True))


def _say(line: str) -> None:
    """A line on stderr above the job's progress bar."""
    tqdm.write(line, file=sys.stderr)
