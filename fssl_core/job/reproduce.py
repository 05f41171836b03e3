"""The main job: plan, train, then execute every notebook with papermill at one profile and merge
their results.

1. Plan (job/plan.py): each notebook's plan function (papers/<paper>/plans.py, which its `plan` cell
   calls) says which runs it reads, without executing the notebook; the job prints how many
   runs it will train, how many it reads back, and how long the training should take here.
2. Train: every pending run of every notebook in one pool of worker processes, under one
   progress display (runs done / total, rounds of the runs in flight, ETA, each run's accuracy).
3. Execute the notebooks, headline notebooks first: they read their runs back from the store.
   Each writes results/<notebook>.csv (paper beside reproduced) and its figures; executed copies
   go to the profile's results folder (paths.results_dir).
Runs already in the run store are read back, so an interrupted reproduction resumes where it
stopped; an interrupt stops every worker and kernel.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import papermill

from .. import executors
from ..config import ConfigError
from ..data.datasets import data_root
from ..executors import executor_named, sigterm_as_interrupt
from ..papers import (claim_comparisons, claim_explanations, display_names, far_cell_causes, rebuilt_claim_rows,
                     redraw_table_figure, table_intros, update_readmes)
from .parameters import check_parameter_types, declared_parameters
from .cells import RECORDS_ONLY_ENV
from .executed import stable
from .plan import plan_job, plan_notebook
from .preflight import check_environment, claim_staging, remove_stale_staging
from ..paths import SEPARATE_PROFILES, project_root, results_dir
from ..profiles import PROFILE_ENV, job_profile
from ..report.publish import STAGING_ENV, publish, publish_lock
from ..report.page import merge_results
from ..store import RunStore, atomic_write_text, exclusive

PACKAGE_PARENT = Path(__file__).resolve().parents[2]    # where fssl_core is installed: a warning names its files

PARAMETERS_PASSED = ("profile", "device")   # every notebook's parameters cell must declare these
# One notebook per paper whose cells answer the paper's headline question: these run first, and they
# are all the default `headline` profile runs.
HEADLINE_NOTEBOOKS = ("fedsiam_table5", "fedmix_streaming_fmnist", "fedanchor_fmnist")


def notebooks(only: str | None = None, profile: str = "quick") -> list[Path]:
    """The notebooks a reproduction at `profile` executes, headline notebooks first."""
    folder = project_root() / "notebooks"
    if not folder.is_dir():
        where = f"$FSSL_PROJECT={os.environ['FSSL_PROJECT']!r}" if "FSSL_PROJECT" in os.environ else \
            "the working directory (no fssl_core pyproject.toml above it)"
        raise ConfigError(f"reproduce: {folder} does not exist: the project root comes from {where}; run from a "
                          "checkout of the project or point FSSL_PROJECT at one")
    found = sorted(folder.glob("*.ipynb"),
                   key=lambda nb: (nb.stem not in HEADLINE_NOTEBOOKS,
                                   HEADLINE_NOTEBOOKS.index(nb.stem) if nb.stem in HEADLINE_NOTEBOOKS else 0, nb.stem))
    if profile == "headline":
        found = [nb for nb in found if nb.stem in HEADLINE_NOTEBOOKS]
    if only is not None:
        found = [nb for nb in found if fnmatch.fnmatch(nb.stem, only)]
        if not found:
            raise ConfigError(f"reproduce: only={only!r}: matches no notebook of profile {profile!r} in notebooks/")
    return found


def notebook_seconds(profile: str) -> dict[str, float]:
    """Each notebook's last measured execution (results/notebook_seconds.json; record_seconds writes it)."""
    path = _seconds_file(profile)
    return json.loads(path.read_text()) if path.exists() else {}


def _seconds_file(profile: str) -> Path:
    return results_dir(profile) / "notebook_seconds.json"


SECONDS_KEPT_WITHIN = 0.25     # of a notebook's kept time: the accuracy the plan's estimate states
# or this many seconds: a notebook of a few seconds moves by seconds with the load and a cold cache (a fresh clone's
# rebuild moved 4 of 19 by 2.0-3.0 s, 22-38%), which says nothing about the plan's estimate of a job of minutes
SECONDS_KEPT_ABSOLUTE = 5.0


def record_seconds(profile: str, seconds: dict[str, float]) -> dict[str, float]:
    """Each notebook's last measured run time, kept in results/notebook_seconds.json so that a
    reproduction of some notebooks (`--only`) keeps the others' times in the report. A time within
    SECONDS_KEPT_WITHIN or SECONDS_KEPT_ABSOLUTE of the one kept leaves it: the plan's estimate is good to that,
    and a rebuild that changes nothing else then leaves the file and the report as committed."""
    path = _seconds_file(profile)
    with exclusive(path.with_name(".notebook_seconds.lock")):     # two jobs must not lose each other's times
        known = notebook_seconds(profile)
        known.update({name: round(value, 1) for name, value in seconds.items()
                      if name not in known or abs(value - known[name]) > max(SECONDS_KEPT_WITHIN * known[name],
                                                                             SECONDS_KEPT_ABSOLUTE)})
        atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True))
    return known


def parse_parameters(items: list[str]) -> dict[str, Any]:
    """`key=value` pairs for notebook parameters; a value is read as JSON where it parses
    (`labeled_ratios=[0.1]`, `seeds=null`), else kept as a string (`settings=iid` is not a list)."""
    parameters = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"reproduce: --param {item!r}: expected name=value with a notebook parameter as name")
        if key in PARAMETERS_PASSED:
            raise ConfigError(f"reproduce: --param {item!r}: {key} has its own option (--{key})")
        try:
            parameters[key] = json.loads(value)
        except json.JSONDecodeError:
            parameters[key] = value
    return parameters


def reproduce(profile: str | None = None, only: str | None = None, device: str = "cpu",
              parameters: dict[str, Any] | None = None, workers: int | None = None,
              executor: str | None = None, gpus_per_run: float | None = None, dry_run: bool = False,
              replace_figures: bool = False, train_only: bool = False, replace: bool = False,
              tracker: Any = None, from_records: bool = False) -> Path | None:
    """Plan, train and execute the notebooks matching `only` at `profile` (None: $FSSL_PROFILE, else
    headline; profiles.job_profile) on `device`; `parameters`
    override notebook parameters (each must be declared by every notebook run, e.g. a narrower sweep
    of one table with --only). `executor` trains the runs: "local" (this machine's processes, `workers` of
    them) or "ray" (default $FSSL_EXECUTOR, else local; executors.run_all); `gpus_per_run` is a CUDA run's
    share of a GPU on Ray.
    `dry_run`: print the plan (runs to train, runs read back, the estimated time) and stop there, before
    anything is trained, executed or written; returns None. `replace_figures`: the figures of a run narrowed
    by `parameters` replace the published ones (by default they stay: a slice may draw part of a figure).
    `train_only`: train the plan's runs and stop before any notebook runs; returns None.
    `replace`: a notebook's results replace the published rows they land on, and a whole-scope run's the
    whole table, even where that drops measured rows (named first); by default none is dropped (report/publish.py).
    `tracker` (integrations.mlflow_track.MlflowTracker): follows the runs as they train (an option of the
    executor) and gets each notebook's figures (`log_figures`). `from_records`: train nothing; each notebook is
    rebuilt from the committed records (a cell missing a record publishes no value: job/cells.py), and a rebuild
    that would change a published value at the same runs fails naming it (report.publish.ValueMoved), writing
    nothing."""
    check_environment()
    for folder in remove_stale_staging(project_root() / "results"):
        print(f"[reproduce] removed {folder.name}: a staging folder whose job is gone", flush=True)
    options = {} if gpus_per_run is None else {"gpus_per_run": gpus_per_run}
    runner = executor_named(executor, workers=workers, **options, **({} if tracker is None else {"tracker": tracker}))
    with sigterm_as_interrupt():      # papermill shuts its kernel down on the way out, as on Ctrl-C
        return _reproduce(profile, only, device, parameters, runner, dry_run, replace_figures, train_only, replace,
                          tracker, from_records)


def _reproduce(profile, only, device, parameters, runner, dry_run=False,
               replace_figures=False, train_only=False, replace=False, tracker=None, from_records=False) -> Path | None:
    chosen, source = job_profile(profile)
    before = os.environ.get(PROFILE_ENV)
    # every get_profile of the job, in this process (the plan) and in the kernels, must return the job's
    # profile: $FSSL_PROFILE overrides a notebook's choice, so it is set to it for the job's duration
    os.environ[PROFILE_ENV] = chosen.name
    try:
        return _reproduce_at(chosen.name, source, only, device, parameters, runner, dry_run, replace_figures,
                             train_only, replace, tracker, from_records)
    finally:
        if before is None:
            os.environ.pop(PROFILE_ENV, None)
        else:
            os.environ[PROFILE_ENV] = before


def _reproduce_at(profile, source, only, device, parameters, runner, dry_run, replace_figures, train_only,
                  replace, tracker=None, from_records=False) -> Path | None:
    # kernels run in notebooks/: they must see the data and outputs the job sees
    os.environ["FSSL_DATA"] = str(data_root().resolve())
    os.environ["FSSL_PROJECT"] = str(project_root())
    parameters = dict(parameters or {})
    selected = notebooks(only, profile)
    for nb in selected:      # check every notebook before running any
        declared = declared_parameters(nb)
        missing = [p for p in PARAMETERS_PASSED if p not in declared]
        if missing:
            raise ConfigError(f"reproduce: notebook {nb.name} declares no parameter(s) {', '.join(missing)} "
                              f"in its 'parameters' cell")
        unknown = [p for p in parameters if p not in declared]
        if unknown:
            raise ConfigError(f"reproduce: --param {', '.join(unknown)}: not a parameter of {nb.name} "
                              f"(its parameters: {', '.join(declared)})")
        check_parameter_types(nb.name, declared, parameters)
    injected = {**parameters, "profile": profile, "device": device}
    store = RunStore()
    print(f"[reproduce] profile={profile} (from {source}) device={device} data={os.environ['FSSL_DATA']} "
          f"runs={store.root}", flush=True)
    job = plan_job(selected, injected, store, download=False if dry_run else None, open_checkpoints=not dry_run)
    if parameters:           # a narrowing that leaves a notebook nothing to reproduce is a mistake, not a result
        for nb, plan in zip(selected, job.notebooks):
            if not plan.cells:
                unnarrowed = plan_notebook(nb, {"profile": profile, "device": device}).cells   # cells only: no store
                if unnarrowed:
                    raise ConfigError(f"reproduce: --param {', '.join(f'{k}={v!r}' for k, v in parameters.items())} "
                                      f"leaves {plan.notebook} no cell to reproduce (it has {len(unnarrowed)} at "
                                      f"profile {profile} without them)")
    with runner:         # one executor for the estimate (Ray: its CPUs and GPUs) and the training
        timed = notebook_seconds(profile) if from_records else None
        print(job.describe(runner.slots(job.pending), rebuild_seconds=timed), flush=True)
        if dry_run:
            print("[reproduce] dry run: nothing trained, executed or written", flush=True)
            return None
        if not from_records:
            executors.run_all(job.pending, store=store, estimate=job.estimate, executor=runner)
    if train_only:
        print(f"[reproduce] train only: {len(job.pending)} run(s) trained; no notebook executed, nothing published",
              flush=True)
        return None

    # each executed notebook lands beside its results (published with them: a failed one leaves none), one folder
    # a profile where profiles share results/
    executed = (results_dir(profile) / "notebooks" / (profile if profile not in SEPARATE_PROFILES else "")
                ).relative_to(project_root())
    seconds: dict[str, float] = {}
    (project_root() / "results").mkdir(parents=True, exist_ok=True)     # the staging folders' parent
    for i, nb in enumerate(selected, 1):
        print(f"[notebook {i}/{len(selected)}] {nb.stem}", end="", flush=True)
        start = time.perf_counter()
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{nb.stem}-", dir=project_root() / "results"))
        claim_staging(staging)
        os.environ[STAGING_ENV] = str(staging)     # the kernel writes its results and figures there
        if from_records:
            os.environ[RECORDS_ONLY_ENV] = "1"     # the kernel's reproduce_cells reads records, trains nothing
        try:
            (staging / executed).mkdir(parents=True, exist_ok=True)
            papermill.execute_notebook(str(nb), str(staging / executed / nb.name), cwd=str(nb.parent),
                                       parameters=injected,
                                       progress_bar=False, log_output=False,
                                       # the kernel's own log is noise to a reader: its warning about its local
                                       # TCP socket, and the "KeyboardInterrupt caught in kernel" error the
                                       # shutdown's interrupt logs after the last cell; a failing cell raises
                                       # PapermillExecutionError and a dead kernel DeadKernelError, not a log line
                                       extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
            source = nb.relative_to(project_root()) if nb.is_relative_to(project_root()) else Path(nb.name)
            stable(staging / executed / nb.name, source=str(source), output=str(executed / nb.name),
                   roots=(project_root(), PACKAGE_PARENT))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)      # a failed notebook publishes nothing
            raise
        finally:
            os.environ.pop(STAGING_ENV, None)
            os.environ.pop(RECORDS_ONLY_ENV, None)
        seconds[nb.stem] = time.perf_counter() - start
        print(f" {seconds[nb.stem]:.0f} s", flush=True)
        if tracker is not None:       # the figures as the notebook drew them, before publish moves them
            tracker.log_figures(nb.stem, profile, sorted(staging.rglob("*.png")), staging)
        # what a publish keeps against the notebook's file, or drops, is said before it writes
        publish(staging, narrowed=bool(parameters), replace_figures=replace_figures, replace=replace,
                say=lambda note: print(f"[notebook {i}/{len(selected)}]   {note}", flush=True),
                rebuild=rebuilt_claim_rows, unchanged=from_records)
        with exclusive(publish_lock()):           # drawn from the rows as published, not as another job writes them
            redrawn = redraw_table_figure(nb.stem, profile)     # a table's figure from its published rows, whole
        if tracker is not None and redrawn is not None:
            tracker.log_figures(nb.stem, profile, [redrawn], project_root())
    with exclusive(publish_lock()):
        report = merge_results(profile, record_seconds(profile, seconds), far_cell_causes=far_cell_causes(),
                               claim_comparisons=claim_comparisons(), table_intros=table_intros(),
                               claim_explanations=claim_explanations(), display_names=display_names())
        if profile not in SEPARATE_PROFILES:      # as the README's summary: the committed results only
            update_readmes()
    print(f"[reproduce] report: {report}")
    return report
