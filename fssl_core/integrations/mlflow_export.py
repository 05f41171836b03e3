"""`python -m fssl_core export mlflow`: the run store's finished runs as MLflow runs, for researchers who
browse and compare runs in MLflow's UI (`pip install -e '.[mlflow]'`).

Each finished run that proves itself (RunStore.survey) becomes one MLflow run in the experiment
`experiment` (default "fssl"):
- params: every RunConfig field (MLflow stores params as strings);
- tags: `fssl.run_id`, `fssl.identity_hash` (what the run computes, run_config.RunConfig.identity_hash),
  `fssl.status` and the run's description as the run name;
- metrics: every numeric field of every metrics.jsonl row, with the row's round as MLflow's step;
- artifacts: result.json and env.json, as stored.

Idempotent: a run already exported (the experiment holds a run tagged with its identity hash and
`fssl.export_complete`) is not exported again. An export that stopped half way (its MLflow run has no
`fssl.export_complete` tag) is deleted and redone, so no half-written run is ever left listed as done.
A damaged run is skipped and named. The export only reads the store: no file of a run changes.

The default URI is a local SQLite file, ./mlflow.db, the file a plain `mlflow ui` opens in the same folder.
Artifacts go beside it (./mlflow-artifacts/) unless the experiment exists already with its own location.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import ConfigError
from ..store import ENV, RESULT, Damage, RunStore, describe

DEFAULT_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "fssl"
COMPLETE_TAG = "fssl.export_complete"
MAX_METRICS_PER_CALL = 1000          # MLflow's log_batch limit


@dataclass
class ExportReport:
    exported: list[str] = field(default_factory=list)     # run ids
    already: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)      # "dir: why"

    def line(self) -> str:
        return (f"[export mlflow] exported {len(self.exported)}, already there {len(self.already)}, "
                f"damaged and skipped {len(self.damaged)}")


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise SystemExit("error: export mlflow needs MLflow: pip install -e '.[mlflow]'") from None
    return mlflow


def _experiment_id(client, name: str, uri: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    location = None
    if uri.startswith("sqlite:///"):       # artifacts beside the database file, not in the working directory
        location = (Path(uri[len("sqlite:///"):]).resolve().parent / "mlflow-artifacts").as_uri()
    return client.create_experiment(name, artifact_location=location)


def _metrics(rows: list[dict]):
    from mlflow.entities import Metric
    now = int(time.time() * 1000)
    out = []
    for row in rows:
        step = int(row["round"])
        for key, value in row.items():
            if key == "round" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                out.append(Metric(key, float(value), now, step))
    return out


def export(runs: Path | str | None = None, uri: str = DEFAULT_URI, experiment: str = DEFAULT_EXPERIMENT,
           progress: bool = True) -> ExportReport:
    """Export the finished runs of the store at `runs` (default $FSSL_RUNS or ./runs) to MLflow at `uri`."""
    _mlflow()
    from mlflow import MlflowClient
    from mlflow.entities import Param
    if not experiment.strip():
        raise ConfigError(f"export mlflow: --experiment {experiment!r}: empty; give the experiment a name")
    try:
        client = MlflowClient(tracking_uri=uri)
        experiment_id = _experiment_id(client, experiment, uri)
    except ConfigError:
        raise
    except Exception as err:      # MLflow's many exceptions for a URI it cannot use (scheme, path, server)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"export mlflow: --uri {uri!r}: MLflow cannot use it ({first[:200]})") from None
    report = ExportReport()
    survey = RunStore(runs).survey()
    for i, (d, proven) in enumerate(survey, 1):
        if isinstance(proven, Damage):
            report.damaged.append(f"{d.name}: {proven}")
            print(f"[export mlflow] skipped {d.name}, damaged: {proven}", file=sys.stderr)
            continue
        cfg = proven.config
        exported = client.search_runs([experiment_id], f"tags.`fssl.identity_hash` = '{cfg.identity_hash}'")
        for half in (r for r in exported if r.data.tags.get(COMPLETE_TAG) != "true"):
            client.delete_run(half.info.run_id)              # a half-written export: redone below
        if any(r.data.tags.get(COMPLETE_TAG) == "true" for r in exported):
            report.already.append(cfg.run_id)
            continue
        run = client.create_run(experiment_id, run_name=describe(cfg), tags={
            "fssl.run_id": cfg.run_id, "fssl.identity_hash": cfg.identity_hash,
            "fssl.status": proven.status})
        rid = run.info.run_id
        params = [Param(k, str(v)) for k, v in sorted(cfg.to_dict().items())]
        for j in range(0, len(params), 100):                 # MLflow's params-per-call limit
            client.log_batch(rid, params=params[j:j + 100])
        metrics = _metrics(proven.metrics)
        for j in range(0, len(metrics), MAX_METRICS_PER_CALL):
            client.log_batch(rid, metrics=metrics[j:j + MAX_METRICS_PER_CALL])
        for name in (RESULT, ENV):
            if (d / name).exists():
                client.log_artifact(rid, str(d / name))
        client.set_tag(rid, COMPLETE_TAG, "true")
        client.set_terminated(rid)
        report.exported.append(cfg.run_id)
        if progress:
            print(f"[export mlflow] {i}/{len(survey)} {cfg.run_id} ({describe(cfg)}): {len(metrics)} metric values",
                  file=sys.stderr)
    return report
