"""The run store: one directory per run, named by the hash of its config.

    runs/<run_id>/config.json     the full config
    runs/<run_id>/env.json        versions, device, host
    runs/<run_id>/metrics.jsonl   one JSON object per finished round
    runs/<run_id>/checkpoint.pt   server state after the last checkpointed round (+ its metrics)
    runs/<run_id>/result.json     written last: the summary; its presence means "finished"
    runs/<run_id>/.lock           held (flock) by the one process that checks, repairs or trains the run
    runs/<run_id>/damaged-<time>/ files that failed their checks, moved aside (never deleted)

Every file is written atomically and durably (temporary file, fsync, rename, fsync of the directory),
so an interrupted run leaves either the previous or the new version, never half of one. A finished
run is read back, not retrained; an unfinished one resumes from its checkpoint and, as every random
draw is derived from (seed, round, party), ends with the same metrics as a run that was never
interrupted.

No wrong number is served: result.json and checkpoint.pt carry the run id, the config's identity
hash and digests of the rows they cover (store_integrity.py), and every read checks them. Files that
disagree are named in a `DamagedRun` warning; `execute` then keeps what still proves itself (a
checkpoint and the rows it covers), moves the rest into runs/<id>/damaged-<time>/ and recomputes.

A finished run's records (config.json, env.json, metrics.jsonl, result.json; a few kB to a few hundred kB) are
what a batch commits, so that its runs outlive the machine that trained them (`python -m fssl_core records`
lists them for `git add -f`; .gitignore keeps runs/ itself out). A clone holding a run's records without its
checkpoint serves the run, since result.json's digests prove its rows and config; only `final_state` needs the
checkpoint, and says how to get it back.

A finished run's status: "ok"; "diverged" (a loss became NaN or infinite; its accuracy is None);
"at-chance" (its final test accuracy is at most AT_CHANCE_FACTOR × chance, 100 / classes %). An
at-chance run is a measurement, so its accuracy is kept and shown, and reports flag its row
(report.py): a finite blow-up (loss 45,976, accuracy 8.9%) is not reported as "ok". The check is on
the final round only: a run that dips to chance and recovers is "ok".
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import torch

from . import __version__
from .config import ConfigError, RunConfig
from .paths import runs_dir
from .store_integrity import (CHECKPOINT, CONFIG, METRICS, RESULT, Damage, DamagedRun, canonical_json,
                              file_sha256, fsync_dir, move_aside, read_checkpoint, read_json, read_rows,
                              rows_digest, run_lock, state_digest, summary_digest)
from .training import Diverged

OK, DIVERGED, AT_CHANCE = "ok", "diverged", "at-chance"
MEASURED = (OK, AT_CHANCE)      # statuses whose accuracy is a measurement (report.py shows their values)
ENV = "env.json"               # versions, device, host of the run
AT_CHANCE_FACTOR = 1.5          # final accuracy <= 1.5 × 100/classes % (15% on 10 classes): "at-chance"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    _atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_torch_save(path: Path, obj: Any) -> None:
    _atomic_write(path, lambda f: torch.save(obj, f))


def _atomic_write(path: Path, write: Callable[[Any], Any]) -> None:
    """Write through a uniquely named temporary file beside `path`, fsync it, rename it over `path`,
    fsync the directory: after a crash `path` is the old or the new file, and the new one is on disk
    once this returns. A killed write leaves a `.<name>.<random>.tmp` (removed under the run's lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)     # mkstemp makes files private; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


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
        """The finished run of `cfg`; None when it has not finished, or when its files do not prove
        it (named in a DamagedRun warning; `execute` repairs such a run)."""
        try:
            return self._proven(cfg)
        except Damage as err:
            warnings.warn(f"{err}: not served as finished (execute() repairs it)", DamagedRun, stacklevel=2)
            return None

    def _proven(self, cfg: RunConfig) -> RunResult | None:
        """The finished run of `cfg` if its files agree with each other and with `cfg`; None if there is
        no result.json; else raises Damage naming the first file that disagrees."""
        d = self.dir(cfg)
        if not (d / RESULT).exists():
            return None
        summary = read_json(d / RESULT)
        if "digest" not in summary:
            raise Damage(f"{d / RESULT}: carries no digest (written by an older store, or edited)")
        if summary["digest"] != summary_digest(summary):
            raise Damage(f"{d / RESULT}: its content does not match its digest (edited?)")
        if summary.get("run_id") != cfg.run_id or summary.get("config_hash") != cfg.identity_hash:
            raise Damage(f"{d / RESULT}: belongs to run {summary.get('run_id')} (another config), not {cfg.run_id}")
        rounds, failure = summary.get("rounds"), summary.get("diverged")
        diverged_after = summary.get("status") == DIVERGED and isinstance(failure, dict) and failure.get("round")
        if not (rounds == cfg.rounds or (isinstance(rounds, int) and diverged_after == rounds + 1)):
            raise Damage(f"{d / RESULT}: {rounds} rounds, the config has {cfg.rounds} and no divergence is recorded")
        rows = read_rows(d / METRICS)
        if len(rows) != rounds:
            raise Damage(f"{d / METRICS}: {len(rows)} rows, {RESULT} says {rounds}")
        if rows_digest(rows) != summary.get("metrics_digest"):
            raise Damage(f"{d / METRICS}: its rows are not those {RESULT} summarises (digest mismatch)")
        _check_config(d / CONFIG, cfg)
        if (d / CHECKPOINT).exists() and file_sha256(d / CHECKPOINT) != summary.get("checkpoint_sha256"):
            raise Damage(f"{d / CHECKPOINT}: not the checkpoint {RESULT} was written with (sha256 mismatch)")
        return RunResult(cfg, rows, {**summary, "run_dir": str(d)})

    def final_state(self, cfg: RunConfig) -> dict[str, Any]:
        """The server state after the last round of the finished run of `cfg` (its checkpoint)."""
        if self.load(cfg) is None:
            raise FileNotFoundError(f"final_state: run {cfg.run_id} ({describe(cfg)}) has not finished in {self.root}")
        if not (self.dir(cfg) / CHECKPOINT).exists():
            raise FileNotFoundError(
                f"final_state: run {cfg.run_id} ({describe(cfg)}) is stored as records only (no {CHECKPOINT}: "
                f"committed runs carry none); delete {self.dir(cfg)} and run it again to get its final state")
        return read_checkpoint(self.dir(cfg) / CHECKPOINT, cfg, cfg.device)["state"]

    def finished(self, **match: Any) -> list[RunResult]:
        """Every finished run in the store whose config has the given field values; a run whose files
        do not prove it is named in a DamagedRun warning and left out."""
        out = []
        for result_file in sorted(self.root.glob(f"*/{RESULT}")):
            d = result_file.parent
            try:
                cfg = RunConfig.from_dict(read_json(d / CONFIG))
                if cfg.run_id != d.name:
                    raise Damage(f"{d / CONFIG}: the config of run {cfg.run_id}, not of this directory (a damaged "
                                 "run, or one of an older computation: a revision bump gave its config a new id)")
            except (Damage, ConfigError) as err:
                warnings.warn(f"{err}: not served as finished", DamagedRun, stacklevel=2)
                continue
            if all(getattr(cfg, k) == v for k, v in match.items()):
                out.append(self.load(cfg))
        return [r for r in out if r is not None]

    def execute(self, cfg: RunConfig, progress: bool = True,
                after_round: Callable[[int], None] | None = None) -> RunResult:
        """Read back a finished run, else run it (resuming from its checkpoint if any).

        One process at a time checks, repairs or trains a run (store_integrity.run_lock): a second
        executor of the same config waits for the first, then reads its result back.
        `after_round(r)` is called once round r is checkpointed (tests use it to interrupt a run).
        CPU runs use one thread: a float reduction split over a different number of threads sums
        in a different order, and a run must give the same numbers whichever executor ran it.
        """
        done = self.load(cfg)
        if done is not None:
            return done
        with run_lock(self.dir(cfg)):       # waits while another process holds the run
            try:
                done, damage = self._proven(cfg), None    # finished by the process we waited for?
            except Damage as err:
                done, damage = None, err
            if done is not None:
                return done
            threads = torch.get_num_threads()
            if cfg.device == "cpu":
                torch.set_num_threads(1)
            try:
                return self._execute(cfg, progress, after_round, damage)
            finally:
                torch.set_num_threads(threads)

    def _execute(self, cfg: RunConfig, progress: bool, after_round: Callable[[int], None] | None,
                 damage: Damage | None) -> RunResult:
        from .engine import Federation   # deferred: the store is usable without building data
        d = self.dir(cfg)
        fed = Federation.build(cfg)
        start = self._resume_point(cfg, fed, damage)
        state, metrics = start.state, start.rows
        atomic_write_text(d / CONFIG, json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
        if len(metrics) < cfg.rounds:
            atomic_write_text(d / ENV, json.dumps(_environment(cfg), indent=2, sort_keys=True))
        if start.saved is None:      # a fresh start: round 0's checkpoint, so a run diverging in round 1 has one
            _save_checkpoint(d, cfg, 0, state, metrics)
        status, failure = OK, None
        bar = _progress(cfg, len(metrics) + 1, progress)
        for r in range(len(metrics) + 1, cfg.rounds + 1):
            try:
                state, m = fed.run_round(state, r)
            except Diverged as err:      # `state` may be half-updated: the last checkpoint stays the final one
                status, failure = DIVERGED, {"round": r, "reason": str(err)}
                break
            metrics.append(m)
            _write_rows(d, metrics)
            if r % cfg.checkpoint_every == 0 or r == cfg.rounds:
                _save_checkpoint(d, cfg, r, state, metrics)
            if bar is not None:
                bar.update(1)
                if "accuracy" in m:
                    bar.set_postfix(acc=f"{m['accuracy']:.2f}")
            if after_round is not None:
                after_round(r)
        if bar is not None:
            bar.close()
        summary = write_result(d, cfg, metrics, status, failure, fed.model_parameters, fed.ctx.num_classes)
        return RunResult(cfg, metrics, summary)

    def _resume_point(self, cfg: RunConfig, fed, damage: Damage | None) -> "_Start":
        """Where training (re)starts: after the checkpoint if it proves itself, with metrics.jsonl cut
        to its rows (rows past it are redone, identically); from round 1 without one. Every file that
        disagrees is moved aside and named, with what is wrong, in one warning."""
        d = self.dir(cfg)
        problems = [str(damage)] if damage is not None else []
        aside = [RESULT] if (d / RESULT).exists() else []     # not proven (else we would not be here)
        ckpt = None
        if (d / CHECKPOINT).exists():
            try:
                ckpt = read_checkpoint(d / CHECKPOINT, cfg, fed.ctx.device)
            except Damage as err:
                problems.append(str(err))
                aside.append(CHECKPOINT)
                ckpt = None
        rows = list(ckpt["metrics"]) if ckpt else []
        # metrics.jsonl is written before the checkpoint of its round (and round 0's before any row), so
        # it holds at least the checkpoint's rows and, with rows, a checkpoint exists
        if (d / METRICS).exists() or rows:
            try:
                on_disk = read_rows(d / METRICS)
                if len(on_disk) < len(rows):
                    raise Damage(f"{d / METRICS}: {len(on_disk)} rows, {CHECKPOINT} covers {len(rows)}")
                if [canonical_json(r) for r in on_disk[:len(rows)]] != [canonical_json(r) for r in rows]:
                    raise Damage(f"{d / METRICS}: its first {len(rows)} rows differ from those {CHECKPOINT} covers")
                if on_disk and not (d / CHECKPOINT).exists():
                    problems.append(f"{d / CHECKPOINT}: missing, beside {len(on_disk)} rows in {METRICS}")
            except Damage as err:
                problems.append(str(err))
                if (d / METRICS).exists():
                    aside.append(METRICS)
        if (d / CONFIG).exists():
            try:
                _check_config(d / CONFIG, cfg)
            except Damage as err:
                problems.append(str(err))
                aside.append(CONFIG)
        if problems:
            n = ckpt["round"] if ckpt else 0
            then = (f"result recomputed from the {n} rows of {CHECKPOINT}" if n == cfg.rounds else
                    f"resuming after round {n} of {CHECKPOINT}" if n else "rerunning from round 1")
            if aside:
                where = move_aside(d, list(dict.fromkeys(aside)))
                then = f"Moved {', '.join(dict.fromkeys(aside))} to {where}; {then}"
            warnings.warn(f"{'; '.join(dict.fromkeys(problems))}. {then[0].upper()}{then[1:]}", DamagedRun, stacklevel=4)
        _write_rows(d, rows)
        if ckpt is None:
            return _Start(fed.initial_state(), rows, None)
        return _Start(ckpt["state"], rows, ckpt["round"])


@dataclass
class _Start:
    state: Any
    rows: list[dict]
    saved: int | None            # the round of the checkpoint it starts from; None: a fresh start


def _check_config(path: Path, cfg: RunConfig) -> None:
    """config.json must hold a config with `cfg`'s identity (fields not in the identity, such as
    checkpoint_every, may differ: they do not change what the run computes).

    Keys this version does not know were written by a newer one sharing the store (a long batch
    started before a field was added): they hold their defaults, since the run id hashes every field
    that differs from its default and this run's id is `cfg`'s, so they are set aside, not read as
    damage."""
    try:
        raw = read_json(path)
        known = RunConfig.__dataclass_fields__
        stored = RunConfig.from_dict({k: v for k, v in raw.items() if k in known} if isinstance(raw, dict) else raw)
    except ConfigError as err:
        raise Damage(f"{path}: not a valid config ({err})") from None
    if stored.identity_hash != cfg.identity_hash:
        diff = [f"{k}={v!r} (config: {getattr(cfg, k)!r})" for k, v in stored.to_dict().items() if v != getattr(cfg, k)]
        raise Damage(f"{path}: another config ({', '.join(diff[:3])})")


def write_result(d: Path, cfg: RunConfig, rows: list[dict], status: str, failure: dict | None,
                 model_parameters: int, num_classes: int) -> dict:
    """result.json, written last: the summary of `rows`, sealed with what it covers (the run, its
    rows, the checkpoint beside it) and its own digest. Returns the summary."""
    summary = summarize(cfg, rows, status, model_parameters, d, num_classes)
    if failure:
        summary["diverged"] = failure
    summary.update(config_hash=cfg.identity_hash, metrics_digest=rows_digest(rows),
                   checkpoint_sha256=file_sha256(d / CHECKPOINT))
    summary["digest"] = summary_digest(summary)
    atomic_write_text(d / RESULT, json.dumps(summary, indent=2, sort_keys=True))
    return summary


def record_files(root: Path | str | None = None) -> list[Path]:
    """The records of every finished run in the store at `root` whose result.json proves itself, each
    run's CONFIG, env.json, METRICS and RESULT: what a batch commits (checkpoints stay out)."""
    store = RunStore(root)
    files = []
    for result in store.finished():
        d = store.dir(result.config)
        files += [d / name for name in (CONFIG, ENV, METRICS, RESULT) if (d / name).exists()]
    return files


def _write_rows(d: Path, rows: list[dict]) -> None:
    atomic_write_text(d / METRICS, "".join(json.dumps(x) + "\n" for x in rows))


def _save_checkpoint(d: Path, cfg: RunConfig, round: int, state: Any, rows: list[dict]) -> None:
    atomic_torch_save(d / CHECKPOINT, {
        "run_id": cfg.run_id, "config_hash": cfg.identity_hash, "round": round, "state": state,
        "metrics": list(rows), "metrics_digest": rows_digest(rows), "state_digest": state_digest(state)})


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


def summarize(cfg: RunConfig, metrics: list[dict], status: str, model_parameters: int, run_dir: Path,
              num_classes: int) -> dict:
    """The run's summary. `status` is OK or DIVERGED as the run ended; an OK run whose final accuracy
    is at most AT_CHANCE_FACTOR × chance (100 / num_classes %) becomes AT_CHANCE."""
    evaluated = [m for m in metrics if "accuracy" in m]
    seconds = sum(m["seconds"] for m in metrics)
    best = max(evaluated, key=lambda m: m["accuracy"], default=None)
    accuracy = evaluated[-1]["accuracy"] if evaluated and status != DIVERGED else None
    chance = 100.0 / num_classes
    if status == OK and accuracy is not None and accuracy <= AT_CHANCE_FACTOR * chance:
        status = AT_CHANCE
    return {
        "accuracy": accuracy,
        "best_accuracy": best["accuracy"] if best else None,   # for rounds-to-best curves only; never for model selection
        "best_round": best["round"] if best else None,
        "chance_accuracy": chance,
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
