"""`python -m fssl_core export mlflow`: the run store's finished runs as MLflow runs, after the fact (a run trained
with `--track mlflow`, mlflow_track.py, is in MLflow already; this is for the runs trained without it).

Each finished run that proves itself (RunStore.survey) becomes one MLflow run in the experiment
`experiment` (default "fssl"), with the fields the live tracker writes (mlflow_fields.py: params of the
settings the run reads, summary metrics, identity, data digest and git commit tags, result.json, env.json
and the final model, checkpoint.pt, where the run directory has it). The git commit is the one that added
the run's result.json where the store is a git checkout that holds it, else the exporting checkout's (tag
`fssl.git_commit_of` says which); a run that a tracker began keeps the commit it tagged (the checkout that
trained it, with `git.dirty`).

Timestamps are the clock's where a tracker kept them (mlflow_fields.PENDING: the times of a tracked run's
rounds that MLflow, unreachable, did not take). Else they come from the records, which hold no clock time of
their own: the last round is taken to have finished when result.json was written (its file time, the
training machine's clock unless the files were copied or checked out since), each earlier round its
successors' `seconds` before, and the run to have started round 1's `seconds` before that
(mlflow_fields.round_times); the end time is result.json's. Durations and order are the measured ones;
time spent outside rounds is not in the records.

Idempotent: a run whose identity has a complete MLflow run (`fssl.export_complete`) is not exported again.
An export that stopped half way is resumed into the run it left, logging only what that run lacks, so no
half-written or deleted run is left behind. A damaged run is skipped and named. The store is only read.

The default URI is ./mlflow.db, which a plain `mlflow ui` opens in the same folder; artifacts go beside it
(./mlflow-artifacts/) unless the experiment exists already with its own location.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..store import RESULT, Damage, RunStore, describe
from .mlflow_fields import (COMPLETE_TAG, DEFAULT_EXPERIMENT, DEFAULT_URI, commit_tags, connect, head_commit,
                            open_run, read_pending, records_commit, round_times, runs_of, started_at, with_kept,
                            write_end, write_start)

__all__ = ["COMPLETE_TAG", "DEFAULT_EXPERIMENT", "DEFAULT_URI", "ExportReport", "export"]


@dataclass
class ExportReport:
    exported: list[str] = field(default_factory=list)     # run ids
    already: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)      # "dir: why"

    def line(self) -> str:
        return (f"[export mlflow] exported {len(self.exported)}, already there {len(self.already)}, "
                f"damaged and skipped {len(self.damaged)}")


def export(runs: Path | str | None = None, uri: str = DEFAULT_URI, experiment: str = DEFAULT_EXPERIMENT,
           progress: bool = True) -> ExportReport:
    """Export the finished runs of the store at `runs` (default $FSSL_RUNS or ./runs) to MLflow at `uri`."""
    client, experiment_id = connect(uri, experiment, "export mlflow")
    report = ExportReport()
    survey = RunStore(runs).survey()
    head = None
    for i, (d, proven) in enumerate(survey, 1):
        if isinstance(proven, Damage):
            report.damaged.append(f"{d.name}: {proven}")
            print(f"[export mlflow] skipped {d.name}, damaged: {proven}", file=sys.stderr)
            continue
        cfg, rows = proven.config, proven.metrics
        complete, unfinished = runs_of(client, experiment_id, cfg)
        if complete:
            report.already.append(cfg.run_id)
            continue
        kept = read_pending(d)
        end = kept.get("ended", (d / RESULT).stat().st_mtime)
        times = with_kept(rows, round_times(rows, end), kept)
        commit = records_commit(d)
        if commit is None:
            head = head or head_commit()
        opened = open_run(client, experiment_id, cfg, unfinished, kept.get("started", started_at(rows, times, end)))
        logged = write_start(client, opened, cfg, d, commit_tags(commit or head, "records" if commit else "export"),
                             rows, times)
        write_end(client, opened, d, proven.summary, end)
        report.exported.append(cfg.run_id)
        if progress:
            print(f"[export mlflow] {i}/{len(survey)} {cfg.run_id} ({describe(cfg)}): {logged} metric values",
                  file=sys.stderr)
    return report
