"""One fssl run as one MLflow run, whoever writes it: the tracker while the run trains (mlflow_track.py) or
the export of a finished run (mlflow_export.py). Both find the MLflow run by its `fssl.identity_hash` tag
and write the same fields:
- params: the settings the run reads (RunConfig.fields_read) less those that change no number
  (run_config.NOT_IN_IDENTITY): a FedSiam setting is no param of a FedAvg run;
- tags: `fssl.run_id`, `fssl.identity_hash`, `fssl.data_digest` (env.json's "data"), the git commit as
  `mlflow.source.git.commit` with `fssl.git_commit_of` saying whose commit it is (`commit_tags`) and, for the
  checkout that trained, `git.dirty` (uncommitted changes under fssl_core/), at the end `fssl.status`; the
  commit tags a run holds are never replaced; the run's description (store.describe) is its name;
- metrics: each metrics.jsonl row's numbers at step = its round, timed when the round finished; at the
  end, at the last round's step, result.json's summary (SUMMARY_METRICS), renamed where a row's figure of
  one round has the summary's name (upload_bytes of a round, total_upload_bytes of the run);
- artifacts: result.json, env.json and the final model, checkpoint.pt (the state RunStore.final_state
  reads, with the run id and digests that prove it) as model/checkpoint.pt; start and end: the training's,
  as the tracker saw them (also those it could not log: PENDING), else the records' estimate of them.
Writing resumes: a run goes into the MLflow run of its identity that lacks COMPLETE_TAG where there is one
(a run interrupted, a killed export), and only the (metric, step) values that run lacks are logged, so
each value is logged once however often training or an export stops and starts again.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..run_config import NOT_IN_IDENTITY, RunConfig
from ..store import CHECKPOINT, ENV, RESULT, atomic_write_text, describe

DEFAULT_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "fssl"
COMPLETE_TAG = "fssl.export_complete"     # every record of the run is in MLflow (tracked or exported)
IDENTITY_TAG = "fssl.identity_hash"
COMMIT_TAG = "mlflow.source.git.commit"
# In a run's directory, written by the tracker when MLflow did not take all of a run's values by the end of
# a session: when the session began, each round ended and the run ended, by the clock that trained it.
PENDING = "mlflow-pending.json"
CODE = Path(__file__).resolve().parents[1]          # fssl_core/: the code whose commit a tracked run carries
MAX_METRICS_PER_CALL = 1000               # MLflow's log_batch limits
MAX_PARAMS_PER_CALL = 100
# result.json's figures logged at the end: its key -> the metric's name
SUMMARY_METRICS = {"best_accuracy": "best_accuracy", "best_round": "best_round",
                   "upload_bytes": "total_upload_bytes", "download_bytes": "total_download_bytes",
                   "seconds": "total_seconds", "seconds_per_round": "seconds_per_round"}


def require_mlflow(who: str):
    try:
        import mlflow      # mlflow: the [mlflow] extra, absent from a plain install
    except ImportError:
        raise ConfigError(f"{who} needs MLflow: pip install -e '.[mlflow]'") from None
    return mlflow


def connect(uri: str, experiment: str, who: str, flags: tuple[str, str] = ("--uri", "--experiment")):
    """An MlflowClient at `uri` and the id of `experiment` (created if new); a URI MLflow cannot use, or an
    empty experiment name, is a ConfigError naming `who`'s option `flags` (URI, experiment)."""
    require_mlflow(who)
    from mlflow import MlflowClient      # mlflow, as require_mlflow's
    if not experiment.strip():
        raise ConfigError(f"{who}: {flags[1]} {experiment!r}: empty; give the experiment a name")
    _check_sqlite_writable(uri, who, flags[0])
    try:
        with first_contact():
            client = MlflowClient(tracking_uri=uri)
            return client, _experiment_id(client, experiment, uri)
    except Exception as err:      # MLflow's many exceptions for a URI it cannot use (scheme, path, server)
        raise ConfigError(f"{who}: {flags[0]} {uri!r}: MLflow cannot use it ({said(err)})") from None


# MLflow's remedies, said in a later line of a long message, kept when the message is cut (`said`)
REMEDY = re.compile(r"MLFLOW_[A-Z_]+=|pip install|\bset `|\bmlflow [a-z-]+ ")
SAID_CHARS = 1000      # a first line longer than this is a response body (an HTML page), not a reason


def said(err: BaseException) -> str:
    """MLflow's reason for `err` in one line: its message's first line in full (up to SAID_CHARS), and a
    sentence of the rest that gives a remedy (REMEDY: `MLFLOW_ALLOW_FILE_STORE=true`, a pip install)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    first, rest = lines[0][:SAID_CHARS], " ".join([lines[0][SAID_CHARS:], *lines[1:]])
    remedies = [s for s in re.split(r"(?<=[.!?])\s+", rest) if REMEDY.search(s)]
    return " ".join([first + ("..." if len(lines[0]) > SAID_CHARS else ""), *remedies])


# The tracker's requests answer within seconds: MLflow's own defaults (7 retries with exponential backoff,
# a 120 s timeout) take ~5 minutes to give up on a server that is not there. The first contact uses them, and
# so does the tracker's worker for each call (mlflow_track.py: it retries with its own backoff, off the
# training thread). The user's MLFLOW_HTTP_* variables, where set, win. They are the process's environment
# (MLflow reads them per request): set while any short call is under way, then removed.
FIRST_CONTACT = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
_contact = threading.Lock()
_contacts: list[list[str]] = []      # one entry per short call under way: the variables the first one set


@contextmanager
def first_contact():
    with _contact:
        unset = [k for k in FIRST_CONTACT if k not in os.environ] if not _contacts else _contacts[0]
        os.environ.update({k: FIRST_CONTACT[k] for k in unset})
        _contacts.append(unset)
    try:
        yield
    finally:
        with _contact:
            _contacts.pop()
            if not _contacts:
                for k in unset:
                    os.environ.pop(k, None)


def _check_sqlite_writable(uri: str, who: str, flag: str) -> None:
    """A sqlite tracking file MLflow could not write (a read-only file or folder) is refused at once: MLflow
    itself retries its schema migration for minutes before it fails."""
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri[len("sqlite:///"):]).expanduser()
    folder = path.parent if str(path.parent) else Path(".")
    problem = (f"its folder {folder} does not exist" if not folder.is_dir() else
               f"{path} is not writable" if path.exists() and not os.access(path, os.W_OK) else
               f"its folder {folder} is not writable" if not os.access(folder, os.W_OK) else None)
    if problem:
        raise ConfigError(f"{who}: {flag} {uri!r}: MLflow cannot use it ({problem})")


def _experiment_id(client, name: str, uri: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    location = None
    if uri.startswith("sqlite:///"):       # artifacts beside the database file, not in the working directory
        location = (Path(uri[len("sqlite:///"):]).resolve().parent / "mlflow-artifacts").as_uri()
    try:
        return client.create_experiment(name, artifact_location=location)
    except Exception:                      # created meanwhile by another process of the job
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id


# --- fields ------------------------------------------------------------------------------------------
def params(cfg: RunConfig) -> dict[str, str]:
    """The settings `cfg`'s run reads, as MLflow's strings (the module docstring)."""
    return {k: str(v) for k, v in sorted(cfg.fields_read().items()) if k not in NOT_IN_IDENTITY}


def identity_tags(cfg: RunConfig) -> dict[str, str]:
    return {"fssl.run_id": cfg.run_id, IDENTITY_TAG: cfg.identity_hash}


def git(where: Path, *args: str) -> str | None:
    """`git args` run in `where`, its output; None without git, outside a checkout, or on any failure."""
    try:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def head_commit(where: Path | None = None) -> str | None:
    """The commit checked out where fssl_core's code is (`where`, default CODE; None outside a git checkout)."""
    return git(where or CODE, "rev-parse", "HEAD")


def code_dirty(where: Path | None = None) -> bool | None:
    """Whether the code under `where` (default CODE, fssl_core/) differs from the commit: a tracked file
    edited or staged, or a file git does not ignore and not committed (a new module); None outside a checkout.
    Only the package counts: runs/ and results/ change as it trains, and they change no number it computes."""
    status = git(where or CODE, "status", "--porcelain", "--", ".")
    if status is None:
        return None if head_commit(where) is None else False     # git says nothing: a clean checkout
    return True


def records_commit(run_dir: Path) -> str | None:
    """The commit that added the run's result.json (None where it is not committed)."""
    return git(run_dir, "log", "-1", "--diff-filter=A", "--format=%H", "--", RESULT) if run_dir.is_dir() else None


def commit_tags(commit: str | None, of: str, dirty: bool | None = None) -> dict[str, str]:
    """`of`: "training", the checkout that trained the run, with `dirty` (code_dirty) as tag `git.dirty`;
    "records", the commit that added the run's result.json (records are committed with the code that made
    them); "export", the checkout that exported a run whose records are not committed (the code that trained
    it is then unknown, and so is whether it had uncommitted changes: no `git.dirty`)."""
    if commit is None:
        return {}
    return {COMMIT_TAG: commit, "fssl.git_commit_of": of,
            **({} if dirty is None else {"git.dirty": "true" if dirty else "false"})}


def record_tags(cfg: RunConfig, run_dir: Path) -> dict[str, str]:
    """The content digest of the data the run was trained on, from env.json (none for synthetic data)."""
    try:
        env = json.loads((run_dir / ENV).read_text())
    except (OSError, ValueError):
        return {}
    digest = env.get("data", {}).get(cfg.dataset) if isinstance(env, dict) and isinstance(env.get("data"), dict) \
        else None
    return {"fssl.data_digest": str(digest)} if digest else {}


def round_times(rows: list[dict], end: float) -> list[float]:
    """When each row's round finished (seconds since the epoch), from the time the last one did, `end`, and
    the rows' `seconds` (each round's wall time): a round finished its successors' seconds before `end`.
    Time outside the rounds (loading, checkpoints, a pause between interrupted sessions) is not in the rows,
    so the earlier rounds of such a run come out later than they were, in the order they were."""
    times, t = [], end
    for row in reversed(rows):
        times.append(t)
        t -= float(row.get("seconds") or 0.0)
    return times[::-1]


def read_pending(run_dir: Path) -> dict:
    """The times a tracker kept in `run_dir` (PENDING): {"started": s, "rounds": {round: s}, "ended": s},
    each part present where it was seen; {} without the file or for one that does not read as such."""
    try:
        kept = json.loads((run_dir / PENDING).read_text())
        rounds = {int(r): float(t) for r, t in kept.get("rounds", {}).items()}
        return {**{k: float(kept[k]) for k in ("started", "ended") if kept.get(k) is not None}, "rounds": rounds}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def write_pending(run_dir: Path, started: float | None, rounds: dict[int, float], ended: float | None) -> Path:
    """Keep these times in `run_dir` (PENDING), with those kept already: a round's first time stays (its values
    are those logged the first time, mlflow_track.py), and so does the first start."""
    kept = read_pending(run_dir)
    times = {"started": kept.get("started", started), "rounds": {**rounds, **kept.get("rounds", {})},
             "ended": ended if ended is not None else kept.get("ended")}
    times["rounds"] = {str(r): t for r, t in sorted(times["rounds"].items())}
    atomic_write_text(run_dir / PENDING, json.dumps(times, indent=1) + "\n")
    return run_dir / PENDING


def with_kept(rows: list[dict], times: list[float], kept: dict) -> list[float]:
    """`times` (round_times' estimates for `rows`), each replaced by the time a tracker saw, where it kept one."""
    seen = kept.get("rounds", {})
    return [seen.get(int(row["round"]), t) for row, t in zip(rows, times)]


def started_at(rows: list[dict], times: list[float], default: float) -> float:
    """When round 1 began: its finish less its seconds; `default` without rows."""
    return times[0] - float(rows[0].get("seconds") or 0.0) if rows else default


def ms(seconds: float) -> int:
    return int(round(seconds * 1000))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def row_metrics(row: dict, at: float) -> list:
    """Every finite number of a metrics row but its round, at step = the round and time `at` (seconds)."""
    from mlflow.entities import Metric      # mlflow, as require_mlflow's
    step = int(row["round"])
    return [Metric(key, float(value), ms(at), step) for key, value in row.items() if key != "round" and _number(value)]


def summary_metrics(summary: dict, at: float) -> list:
    from mlflow.entities import Metric      # mlflow, as require_mlflow's
    step = int(summary.get("rounds") or 0)
    return [Metric(name, float(summary[key]), ms(at), step) for key, name in SUMMARY_METRICS.items()
            if _number(summary.get(key))]


# --- the MLflow run of an identity ------------------------------------------------------------------
@dataclass
class Opened:
    """An MLflow run being written: its id and what it holds already."""
    run_id: str
    metrics: set[tuple[str, int]] = field(default_factory=set)     # (key, step) logged
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def runs_of(client, experiment_id: str, cfg: RunConfig) -> tuple[list, list]:
    """The MLflow runs of `cfg`'s identity in the experiment (deleted ones aside): (complete, unfinished)."""
    found = client.search_runs([experiment_id], f"tags.`{IDENTITY_TAG}` = '{cfg.identity_hash}'")
    complete = [r for r in found if r.data.tags.get(COMPLETE_TAG) == "true"]
    return complete, [r for r in found if r.data.tags.get(COMPLETE_TAG) != "true"]


def open_run(client, experiment_id: str, cfg: RunConfig, unfinished: list, start: float) -> Opened:
    """The newest of `unfinished` (runs_of), set running again with what it holds, else a new MLflow run of
    `cfg` begun at `start` (seconds since the epoch)."""
    if unfinished:
        run = max(unfinished, key=lambda r: r.info.start_time or 0)
        rid = run.info.run_id
        client.update_run(rid, status="RUNNING", name=describe(cfg))
        held = {(key, m.step) for key in run.data.metrics for m in client.get_metric_history(rid, key)}
        return Opened(rid, held, dict(run.data.params), dict(run.data.tags))
    run = client.create_run(experiment_id, start_time=ms(start), run_name=describe(cfg), tags=identity_tags(cfg))
    return Opened(run.info.run_id)


def log_metrics(client, opened: Opened, metrics: list) -> int:
    """Log the `metrics` `opened` lacks; how many that was."""
    new = [m for m in metrics if (m.key, m.step) not in opened.metrics]
    for j in range(0, len(new), MAX_METRICS_PER_CALL):
        client.log_batch(opened.run_id, metrics=new[j:j + MAX_METRICS_PER_CALL])
        opened.metrics.update((m.key, m.step) for m in new[j:j + MAX_METRICS_PER_CALL])
    return len(new)


def write_start(client, opened: Opened, cfg: RunConfig, run_dir: Path, commit: dict[str, str],
                rows: list[dict], times: list[float]) -> int:
    """Tags (`commit`: commit_tags, unless the run has a commit already: the checkout that trained it, or the
    records', stays), params and the `rows` recorded so far, finished at `times`; how many metric values
    were logged."""
    from mlflow.entities import Param, RunTag      # mlflow, as require_mlflow's
    tags = {**identity_tags(cfg), **record_tags(cfg, run_dir), **({} if COMMIT_TAG in opened.tags else commit)}
    client.log_batch(opened.run_id, tags=[RunTag(k, v) for k, v in tags.items()])
    new = [Param(k, v) for k, v in params(cfg).items() if k not in opened.params]
    for j in range(0, len(new), MAX_PARAMS_PER_CALL):
        client.log_batch(opened.run_id, params=new[j:j + MAX_PARAMS_PER_CALL])
    opened.params.update((p.key, p.value) for p in new)
    return log_metrics(client, opened, [m for row, t in zip(rows, times) for m in row_metrics(row, t)])


def write_end(client, opened: Opened, run_dir: Path, summary: dict, end: float) -> None:
    """The summary's metrics, status and files at `end` (the final model: CHECKPOINT, under model/, where the
    run directory has it: a store cloned from git has none); then COMPLETE_TAG and FINISHED."""
    log_metrics(client, opened, summary_metrics(summary, end))
    client.set_tag(opened.run_id, "fssl.status", str(summary.get("status")))
    for name, where in ((RESULT, None), (ENV, None), (CHECKPOINT, "model")):
        if (run_dir / name).exists():
            client.log_artifact(opened.run_id, str(run_dir / name), where)
    client.set_tag(opened.run_id, COMPLETE_TAG, "true")
    client.set_terminated(opened.run_id, "FINISHED", end_time=ms(end))
