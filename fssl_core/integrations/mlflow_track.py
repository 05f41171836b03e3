"""MLflow while training: `MlflowTracker` follows each run the trainer trains (engine.trainer.Tracker) as one
MLflow run, written as it goes, with the fields an export writes (mlflow_fields.py).

    python -m fssl_core run key=value ... --track mlflow [--track-uri URI] [--track-experiment NAME]
    python -m fssl_core reproduce ... --track mlflow [--track-uri URI]
    train(cfg, store, tracker=MlflowTracker("sqlite:///mlflow.db"))

Times are the clock's: the MLflow run starts when its training session began, each round is logged when it
is recorded, and the run ends when result.json is written. Tracking is not in the run's config: it changes
nothing the run computes, so a run tracked or not has one identity and one directory.

A run interrupted (Ctrl-C, SIGTERM) is marked KILLED, one that raised FAILED; when it resumes, its training
goes on in that same MLflow run (found by the identity hash), each round's values logged once (a round
redone after the last checkpoint keeps the values logged the first time). Rounds recorded before tracking
began are logged at times estimated from the checkpoint's file time (mlflow_fields.round_times).

MLflow failing (a server gone, a locked database) never stops training: the tracker warns (TrackingFailed),
stops following that run, and `export mlflow` completes its MLflow run once the run has finished.
`log_figures` logs a notebook's figures to one MLflow run per notebook (reproduce --track mlflow).
The tracker pickles without its client, so the local executor's worker processes and Ray's tasks each
open their own.
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any, Callable

from ..run_config import RunConfig
from ..store import CHECKPOINT
from .mlflow_fields import (DEFAULT_EXPERIMENT, DEFAULT_URI, Opened, commit_tags, connect, head_commit, log_metrics,
                            ms, open_run, round_times, row_metrics, runs_of, started_at, write_end, write_start)


class TrackingFailed(UserWarning):
    """MLflow refused a write: the run trains on, untracked from there (module docstring)."""


class MlflowTracker:
    """Follows runs in MLflow at `uri`, experiment `experiment` (engine.trainer.Tracker). Built, it has
    connected once: a URI MLflow cannot use is a ConfigError before anything trains."""

    def __init__(self, uri: str = DEFAULT_URI, experiment: str = DEFAULT_EXPERIMENT):
        self.uri, self.experiment = uri, experiment
        client, self.experiment_id = connect(uri, experiment, "--track mlflow", ("--track-uri", "--track-experiment"))
        self.commit = commit_tags(head_commit(), "training")
        self._client = client
        self._open: dict[str, Opened] = {}         # run id -> the MLflow run it is written into
        self._notebooks: dict[str, str] = {}       # notebook -> its MLflow run id

    def __getstate__(self) -> dict[str, Any]:
        return {"uri": self.uri, "experiment": self.experiment, "experiment_id": self.experiment_id,
                "commit": self.commit}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _client=None, _open={}, _notebooks={})

    @property
    def client(self):
        if self._client is None:
            from mlflow import MlflowClient
            self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    # --- engine.trainer.Tracker --------------------------------------------------------------------
    def started(self, cfg: RunConfig, run_dir: Path, rows: list[dict], since: float) -> None:
        def start():
            checkpoint = run_dir / CHECKPOINT      # it holds exactly `rows`: written when the last of them was
            times = round_times(rows, checkpoint.stat().st_mtime if rows and checkpoint.exists() else since)
            _, unfinished = runs_of(self.client, self.experiment_id, cfg)
            opened = open_run(self.client, self.experiment_id, cfg, unfinished, started_at(rows, times, since))
            self._open[cfg.run_id] = opened
            write_start(self.client, opened, cfg, run_dir, self.commit, rows, times)
        self._guard(cfg, start)

    def round_finished(self, cfg: RunConfig, round: int, row: dict) -> None:
        opened = self._open.get(cfg.run_id)
        if opened is not None:
            self._guard(cfg, lambda: log_metrics(self.client, opened, row_metrics(row, time.time())))

    def finished(self, cfg: RunConfig, run_dir: Path, summary: dict) -> None:
        opened = self._open.get(cfg.run_id)
        if opened is not None:
            self._guard(cfg, lambda: write_end(self.client, opened, run_dir, summary, time.time()))
            self._open.pop(cfg.run_id, None)

    def stopped(self, cfg: RunConfig, error: BaseException) -> None:
        opened = self._open.pop(cfg.run_id, None)
        if opened is not None:
            status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
            self._guard(cfg, lambda: self.client.set_terminated(opened.run_id, status, end_time=ms(time.time())))

    def _guard(self, cfg: RunConfig, write: Callable[[], Any]) -> None:
        try:
            write()
        except Exception as err:       # MLflow's own errors, of many kinds: the run trains on
            self._open.pop(cfg.run_id, None)
            first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
            warnings.warn(f"MLflow at {self.uri}: {type(err).__name__}: {first}; run {cfg.run_id} trains on untracked, "
                          "and `python -m fssl_core export mlflow` completes its MLflow run once it has finished",
                          TrackingFailed, stacklevel=3)

    # --- figures -------------------------------------------------------------------------------------
    def log_figures(self, notebook: str, profile: str, figures: list[Path], root: Path) -> None:
        """Log `figures` (files under `root`, kept at their paths relative to it) to the MLflow run of
        `notebook` that this tracker opened (one per notebook it is given), tagged `fssl.notebook` and
        `fssl.profile`. A failure warns (TrackingFailed): figures are published all the same."""
        try:
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
            warnings.warn(f"MLflow at {self.uri}: {type(err).__name__}: {err}; {notebook}'s figures are not logged",
                          TrackingFailed, stacklevel=2)
