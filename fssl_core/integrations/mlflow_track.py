"""MLflow while training: `MlflowTracker` follows each run the trainer trains (engine.trainer.Tracker) as one
MLflow run, written as it goes, with the fields an export writes (mlflow_fields.py). Used by `run --track mlflow`,
`reproduce --track mlflow` and `train(cfg, store, tracker=MlflowTracker("sqlite:///mlflow.db"))`.

Tracking never holds a round up: the training thread only notes what to log and when (the clock's time as
each round ends); one worker thread makes MLflow's calls, in order, each with a short timeout
(mlflow_fields.FIRST_CONTACT), retrying a failed one with backoff (RETRY_S). The first failure is said in one
line, with MLflow's reason, and so is MLflow's return. At a run's end the training thread waits while MLflow
takes calls, giving up after FLUSH_STALL_S seconds without one: the times of the rounds MLflow lacks are kept
in the run's directory (mlflow_fields.PENDING), where a resumed run and `export mlflow` find them, said in one
line. A call MLflow refuses (a 4xx: the call itself is wrong) is not retried: that run is followed no further,
in one line, its times kept. The worker retries what is queued while the process lives.

Times are the clock's: the MLflow run starts when its training session began, each round is timed when it
is recorded, and the run ends when result.json is written. Tracking is not in the run's config: a run tracked
or not has one identity and one directory. A run interrupted (Ctrl-C, SIGTERM) is marked KILLED, one that
raised FAILED; resumed, it goes on in that same MLflow run (found by the identity hash), each round's values
logged once. Rounds recorded before tracking began are logged at the times a tracker kept (PENDING), else at
times estimated from the checkpoint's file time (mlflow_fields.round_times).

`log_figures` logs a notebook's figures to one MLflow run per notebook, with short timeouts, and not at all
while MLflow is known to be unreachable. The tracker pickles without its client and worker, so the local
executor's worker processes and Ray's tasks each open their own.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..run_config import RunConfig
from ..store import CHECKPOINT
from .mlflow_fields import (DEFAULT_EXPERIMENT, DEFAULT_URI, PENDING, Opened, code_dirty, commit_tags, connect,
                            first_contact, head_commit, log_metrics, ms, open_run, read_pending, round_times,
                            row_metrics, runs_of, said, started_at, with_kept, write_end, write_pending, write_start)


@dataclass(eq=False)
class _Followed:
    """A run this tracker follows, as the training thread sees it."""
    cfg: RunConfig
    run_dir: Path
    started: float                                          # when the MLflow run begins (a new one)
    rounds: dict[int, float] = field(default_factory=dict)  # round -> when it ended (this session's, or kept)
    ended: float | None = None
    queued: int = 0                                         # its calls not yet taken by MLflow
    dropped: str | None = None                              # why MLflow refused it: followed no further


@dataclass(eq=False)
class _Call:
    run: _Followed
    what: str                       # "the start", "round 4", "the end": for the lines said
    write: Callable[[], None]
    last: bool = False              # the run's end: once taken, the run is whole in MLflow


class MlflowTracker:
    """Follows runs in MLflow at `uri`, experiment `experiment` (engine.trainer.Tracker). Built, it has
    connected once: a URI MLflow cannot use is a ConfigError before anything trains."""

    RETRY_S = (1.0, 60.0)       # the worker's wait before retrying a failed call: first, doubled up to
    FLUSH_STALL_S = 5.0         # a run's end waits while MLflow takes a call at least this often

    def __init__(self, uri: str = DEFAULT_URI, experiment: str = DEFAULT_EXPERIMENT):
        self.uri, self.experiment = uri, experiment
        client, self.experiment_id = connect(uri, experiment, "--track mlflow", ("--track-uri", "--track-experiment"))
        self.commit = commit_tags(head_commit(), "training", code_dirty())
        self._client = client
        self._fresh()

    def _fresh(self) -> None:
        self._open: dict[str, Opened] = {}          # run id -> the MLflow run it is written into (worker only)
        self._notebooks: dict[str, str] = {}        # notebook -> its MLflow run id
        self._runs: dict[str, _Followed] = {}
        self._calls: deque[_Call] = deque()
        self._cv = threading.Condition()
        self._worker: threading.Thread | None = None
        self._kick = False                          # a run's end asks the worker to retry now
        self._taken = 0                             # calls MLflow took, ever: a flush watches it move
        self._down: str | None = None               # since when MLflow fails ("round 4 of run ..."), or None
        self._gave_up: float | None = None          # when a run's end last gave up waiting (monotonic)
        self._told_end = False                      # the "still unreachable at the end" line is said

    def __getstate__(self) -> dict[str, Any]:
        return {"uri": self.uri, "experiment": self.experiment, "experiment_id": self.experiment_id,
                "commit": self.commit, "RETRY_S": self.RETRY_S, "FLUSH_STALL_S": self.FLUSH_STALL_S}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _client=None)
        self._fresh()

    @property
    def client(self):
        if self._client is None:
            from mlflow import MlflowClient      # mlflow: the [mlflow] extra, absent from a plain install
            self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    def _say(self, line: str) -> None:
        print(f"[mlflow] {line}", file=sys.stderr, flush=True)

    # --- engine.trainer.Tracker (the training thread) -----------------------------------------------
    def started(self, cfg: RunConfig, run_dir: Path, rows: list[dict], since: float) -> None:
        checkpoint = run_dir / CHECKPOINT      # it holds exactly `rows`: written when the last of them was
        kept = read_pending(run_dir)
        times = with_kept(rows, round_times(rows, checkpoint.stat().st_mtime if rows and checkpoint.exists()
                                            else since), kept)
        # the times kept are the only ones known to be true: estimates are not kept (export estimates them again)
        run = _Followed(cfg, run_dir, kept.get("started", started_at(rows, times, since)), dict(kept.get("rounds", {})))
        self._runs[cfg.run_id] = run

        def start():
            _, unfinished = runs_of(self.client, self.experiment_id, cfg)
            opened = open_run(self.client, self.experiment_id, cfg, unfinished, run.started)
            self._open[cfg.run_id] = opened
            write_start(self.client, opened, cfg, run_dir, self.commit, rows, times)
        self._queue(_Call(run, "the start", start))

    def round_finished(self, cfg: RunConfig, round: int, row: dict) -> None:
        run = self._runs.get(cfg.run_id)
        if run is not None:
            at = run.rounds[round] = time.time()
            self._queue(_Call(run, f"round {round}",
                              lambda: log_metrics(self.client, self._open[cfg.run_id], row_metrics(row, at))))

    def finished(self, cfg: RunConfig, run_dir: Path, summary: dict) -> None:
        run = self._runs.pop(cfg.run_id, None)
        if run is not None:
            at = run.ended = time.time()
            self._queue(_Call(run, "the end", lambda: write_end(self.client, self._open[cfg.run_id], run_dir,
                                                                 summary, at), last=True))
            self._flush(run, "FINISHED")

    def stopped(self, cfg: RunConfig, error: BaseException) -> None:
        run = self._runs.pop(cfg.run_id, None)
        if run is not None:
            status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
            at = time.time()
            self._queue(_Call(run, "the end", lambda: self.client.set_terminated(
                self._open[cfg.run_id].run_id, status, end_time=ms(at)), last=True))
            self._flush(run, status)

    # --- the queue ---------------------------------------------------------------------------------------
    def _queue(self, call: _Call) -> None:
        with self._cv:
            if call.run.dropped:
                return
            call.run.queued += 1
            self._calls.append(call)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="fssl-mlflow", daemon=True)
                self._worker.start()
            self._cv.notify_all()

    def _work(self) -> None:
        wait = self.RETRY_S[0]
        while True:
            with self._cv:
                while not self._calls:
                    self._cv.wait()
                call = self._calls[0]
            try:
                with first_contact():
                    call.write()
            except Exception as err:         # MLflow's own errors, of many kinds: the run trains on
                if not _transient(err):
                    self._drop(call, err)
                    continue
                with self._cv:
                    if self._down is None:
                        self._down = f"{call.what} of run {call.run.cfg.run_id}"
                        self._say(f"MLflow at {self.uri} unreachable since {self._down} ({type(err).__name__}: "
                                  f"{said(err)}): rounds are queued and logged with their times when it returns or "
                                  "at the run's end; the run's records are unaffected")
                    self._cv.wait_for(lambda: self._kick, timeout=wait)
                    self._kick = False
                    wait = min(2 * wait, self.RETRY_S[1])
                continue
            with self._cv:
                self._calls.popleft()
                call.run.queued -= 1
                self._taken += 1
                if call.last:           # every value of the run is in MLflow: the times kept for it are spent
                    (call.run.run_dir / PENDING).unlink(missing_ok=True)
                    self._open.pop(call.run.cfg.run_id, None)
                if self._down is not None:
                    self._say(f"MLflow at {self.uri} reachable again: the queued rounds are logged with their times")
                    self._down, self._gave_up, self._told_end = None, None, False
                    wait = self.RETRY_S[0]
                self._cv.notify_all()

    def _drop(self, call: _Call, err: Exception) -> None:
        with self._cv:
            run = call.run
            run.dropped = f"{type(err).__name__}: {said(err)}"
            ahead = [c for c in self._calls if c.run is run]
            for c in ahead:
                self._calls.remove(c)
            run.queued = 0
            self._open.pop(run.cfg.run_id, None)
            self._cv.notify_all()
        self._say(f"MLflow at {self.uri} refused {call.what} of run {run.cfg.run_id} ({run.dropped}); the run trains "
                  "on untracked, and `python -m fssl_core export mlflow` completes its MLflow run once it has finished")

    def _flush(self, run: _Followed, status: str) -> None:
        """Wait while MLflow takes `run`'s calls (the module docstring); keep the times of what it lacks."""
        with self._cv:
            self._kick = True
            self._cv.notify_all()
            recent = self._gave_up is not None and time.monotonic() - self._gave_up < self.RETRY_S[1]
            if self._down is not None and run.queued and not recent:
                self._say(f"waiting up to {self.FLUSH_STALL_S:g} s for MLflow at {self.uri} to take run "
                          f"{run.cfg.run_id}'s {run.queued} queued calls")
            taken, since = self._taken, time.monotonic()
            while run.queued and not recent:
                left = self.FLUSH_STALL_S - (time.monotonic() - since)
                if left <= 0:
                    self._gave_up = time.monotonic()
                    break
                self._cv.wait(left)
                if self._taken != taken:
                    taken, since = self._taken, time.monotonic()
            if not (run.queued or run.dropped):
                return
            # kept under the lock: the worker, taking the run's end, removes the file
            kept = write_pending(run.run_dir, run.started, run.rounds, run.ended)
            tell = not self._told_end and not run.dropped
            self._told_end = self._told_end or tell
        if tell:
            store = run.run_dir.parent
            self._say(f"MLflow at {self.uri} still unreachable as run {run.cfg.run_id} ends ({status}): the times of "
                      f"its rounds are kept in {kept} (so for each run that ends before MLflow returns); `python -m "
                      f"fssl_core export mlflow --runs {store} --uri {self.uri} --experiment {self.experiment}` logs "
                      "them into its MLflow run once it has finished")

    # --- figures -------------------------------------------------------------------------------------
    def log_figures(self, notebook: str, profile: str, figures: list[Path], root: Path) -> None:
        """Log `figures` (files under `root`, kept at their paths relative to it) to the MLflow run of
        `notebook` that this tracker opened (one per notebook it is given), tagged `fssl.notebook` and
        `fssl.profile`. A failure is said in one line: figures are published all the same."""
        if self._down is not None:
            self._say(f"{notebook}'s figures are not logged: MLflow at {self.uri} unreachable since {self._down}")
            return
        try:
            with first_contact():
                rid = self._notebooks.get(notebook)
                if rid is None:
                    rid = self.client.create_run(self.experiment_id, run_name=f"{notebook} ({profile})",
                                                 tags={"fssl.notebook": notebook, "fssl.profile": profile,
                                                       **self.commit}).info.run_id
                    self._notebooks[notebook] = rid
                for path in figures:
                    where = path.parent.relative_to(root).as_posix()
                    self.client.log_artifact(rid, str(path), None if where == "." else where)
                self.client.set_terminated(rid, "FINISHED")
        except Exception as err:
            self._say(f"MLflow at {self.uri}: {type(err).__name__}: {said(err)}; {notebook}'s figures are not logged")


def _transient(err: Exception) -> bool:
    """A failure that may pass: a server not there or overloaded (MLflow wraps the connection's error in an
    MlflowException of status 500), a 5xx, a 429, a locked database (INTERNAL_ERROR, 500). Anything else, a
    4xx answer (the call itself is wrong) or an error of our own (a file gone), retrying cannot help."""
    from mlflow.exceptions import MlflowException      # mlflow, as client's
    if isinstance(err, MlflowException):
        status = err.get_http_status_code()
        return status >= 500 or status == 429
    return isinstance(err, (ConnectionError, TimeoutError))
