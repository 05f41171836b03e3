"""The main job's plan: which runs each notebook asks for, which the store holds, how long the rest take.

A notebook's runs come from one function of its parameters (papers/<paper>/plans.py), which its cell
tagged `plan` calls and which the job's plan calls too, with the notebook's parameter defaults (read
by papermill, not executed) and the job's parameters over them: no training, no file written, and the
notebook is executed once, by papermill. So the job trains every notebook's runs in one pool under one
progress display before any kernel starts; the kernels then read them back. Tests keep every cell
builder inside those functions and every plan cell a call of its notebook's (tests/test_plan.py).

Estimates come from measured seconds per round: this store's finished runs of the same kind where
it has some (this machine's speed), else the reference measurements in results/*.csv (a 2-core
CPU, one thread per run, two runs side by side), else this store's runs of the same method on other
splits or labeled ratios, else a default.
"""
from __future__ import annotations

import inspect
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..config import ConfigError

from ..run_config import RunConfig
from ..papers import notebook_plans
from ..paths import project_root
from ..executors.progress import wall_seconds
from ..data.availability import unavailable_reason
from ..report.tables import Cell, read_results
from ..store import RunStore
from .parameters import declared_parameters

GUESS_SECONDS_PER_ROUND = 3.0    # a quick MNIST round of one E = 1 method on one core, when nothing better is known
UNTIMED_NOTEBOOK_SECONDS = 30.0  # a notebook's execution reading its runs back, never timed here (measured: 7-33 s)


@dataclass
class NotebookPlan:
    notebook: str
    cells: list[Cell]
    configs: list[RunConfig]          # every run the notebook reads, datasets absent or not, in order

    def runnable(self, download: bool | None = None) -> list[RunConfig]:
        """The configs whose dataset is on this machine (the others are reported needs-data); `download` as in
        data.availability.unavailable_reason."""
        return [c for c in self.configs if unavailable_reason(c.dataset, download) is None]


@dataclass
class JobPlan:
    notebooks: list[NotebookPlan]
    pending: list[RunConfig]                     # to train, each once, in notebook order
    stored: list[RunConfig]                      # finished in the store: read back
    needs_data: dict[str, int] = field(default_factory=dict)   # dataset -> runs skipped
    estimate: dict[str, float] = field(default_factory=dict)   # run_id -> estimated seconds
    estimate_source: dict[str, str] = field(default_factory=dict)   # run_id -> "this store" | "reference" |
                                                                    # "this store, same method" | "guess"
    resumed: dict[str, int] = field(default_factory=dict)   # run_id -> rounds its checkpoint holds (a rerun)
    download: bool | None = None     # whether the plan fetched a missing data set (plan_job's `download`)

    def seconds(self, workers: int) -> float:
        """Wall seconds of the pending runs on `workers` processes: progress.wall_seconds, the bar's model; a resumed
        run costs the rounds its checkpoint does not hold."""
        return wall_seconds([self.estimate[c.run_id] * (1 - min(self.resumed.get(c.run_id, 0), c.rounds) / c.rounds)
                             for c in self.pending], workers)

    def describe(self, workers: int, rebuild_seconds: dict[str, float] | None = None) -> str:
        """The plan in lines; `rebuild_seconds` (each notebook's last execution, notebook_seconds.json): a rebuild
        from the records, which trains nothing and takes its notebooks' time."""
        sources = {self.estimate_source[c.run_id] for c in self.pending}
        lines = [f"[plan] {len(self.notebooks)} notebook(s), {len(self.pending) + len(self.stored)} run(s): "
                 f"{len(self.pending)} to train, {len(self.stored)} read back from the run store"]
        if rebuild_seconds is not None:
            lines[0] = (f"[plan] {len(self.notebooks)} notebook(s) rebuilt from the records, nothing trained: "
                        f"{len(self.stored)} run(s) read back; {len(self.pending)} planned run(s) have no record, so "
                        f"their cells publish no value")
            untimed = [nb.notebook for nb in self.notebooks if nb.notebook not in rebuild_seconds]
            total = sum(rebuild_seconds.get(nb.notebook, UNTIMED_NOTEBOOK_SECONDS) for nb in self.notebooks)
            lines.append(f"[plan] estimated {_minutes(total)} (the notebooks' last executions, "
                         f"notebook_seconds.json" + (f"; {len(untimed)} never timed, counted "
                                                     f"{UNTIMED_NOTEBOOK_SECONDS:g} s each" if untimed else "") + ")")
        elif self.pending:
            where = {"this store": "this machine's finished runs",
                     "this store, same method": "this machine's runs of the same method on other splits",
                     "reference": "the reference 2-core CPU's times",
                     "guess": f"a default of {GUESS_SECONDS_PER_ROUND:g} s per round"}
            lines.append(f"[plan] estimated {_minutes(self.seconds(workers))} on {workers} worker(s) "
                         f"(from {', '.join(where[s] for s in sorted(sources))}; refined as runs finish)")
        if self.resumed:
            named = [f"{c.algorithm} {c.dataset} {c.partition} seed {c.seed} after round {self.resumed[c.run_id]}"
                     for c in self.pending if c.run_id in self.resumed]
            more = f" and {len(named) - 5} more" if len(named) > 5 else ""
            lines.append(f"[plan] {len(named)} of them resume from their checkpoints: {'; '.join(named[:5])}{more}")
        for dataset, n in sorted(self.needs_data.items()):
            reason = unavailable_reason(dataset, self.download)
            lines.append(f"[plan] needs-data, {n} run(s): {reason} (README, 'Data')")
        for nb in self.notebooks:
            runs = nb.runnable(self.download)
            todo = sum(1 for c in runs if c.run_id in {p.run_id for p in self.pending})
            lines.append(f"[plan]   {nb.notebook}: {len(runs)} run(s), {todo} to train")
        return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def plan_notebook(path: Path, parameters: dict[str, Any]) -> NotebookPlan:
    """The runs notebook `path` reads under `parameters`, without executing it: its parameters cell's
    defaults (as papermill reads them) with `parameters` over them, given to the function its plan cell
    calls (the paper's plans.NOTEBOOK_PLANS); a notebook with no such function reads no run."""
    function = notebook_plans().get(path.stem)
    if function is None:
        return NotebookPlan(path.stem, [], [])
    values = {**declared_parameters(path), **parameters}
    accepted = inspect.signature(function).parameters
    try:
        planned = function(**{name: values[name] for name in accepted})
    except ConfigError as err:     # a --param value the cells refuse, or a config they build: say which notebook
        raise ConfigError(f"{path.name}: {err}") from None
    cells = list(_collect([planned], Cell))
    configs = list({c.run_id: c for c in [*[cfg for cell in cells for cfg in cell.configs],
                                          *_collect([planned], RunConfig)]}.values())
    return NotebookPlan(path.stem, cells, configs)


def _collect(values: Iterable[Any], kind: type, depth: int = 3):
    """Objects of `kind` among `values`, looking into lists, tuples, sets and dict values."""
    for v in values:
        if isinstance(v, kind):
            yield v
        elif depth and isinstance(v, (list, tuple, set, frozenset)):
            yield from _collect(v, kind, depth - 1)
        elif depth and isinstance(v, dict):
            yield from _collect(v.values(), kind, depth - 1)


def plan_job(notebook_paths: list[Path], parameters: dict[str, Any], store: RunStore,
             download: bool | None = None, open_checkpoints: bool = True) -> JobPlan:
    """The job's plan for `parameters` (which name the profile and device). A data set missing here is downloaded
    where `download` allows (default: unless FSSL_OFFLINE=1), once, before any worker starts; a dry run's plan
    passes False (it writes nothing) and names the set needs-data. `open_checkpoints=False` (a dry run, which serves
    nothing) proves each stored run by its files' digests without opening its checkpoint (RunStore.load: no torch)."""
    plans = [plan_notebook(p, parameters) for p in notebook_paths]
    pending, stored, needs_data, seen = [], [], {}, set()
    for plan in plans:
        for cfg in plan.configs:
            if cfg.run_id in seen:
                continue
            seen.add(cfg.run_id)
            if unavailable_reason(cfg.dataset, download):
                needs_data[cfg.dataset] = needs_data.get(cfg.dataset, 0) + 1
            elif store.load(cfg, open_checkpoint=open_checkpoints) is None:
                pending.append(cfg)
            else:
                stored.append(cfg)
    job = JobPlan(plans, pending, stored, needs_data, resumed=resumed_rounds(pending, store), download=download)
    _estimate(job, store, parameters.get("profile", "quick"))
    return job


def resumed_rounds(pending: list[RunConfig], store: RunStore) -> dict[str, int]:
    """The pending runs that resume, with the round their checkpoint holds (a run's checkpoint round: its
    metrics rows at the last checkpoint, every `checkpoint_every` rounds)."""
    out = {}
    for cfg in pending:
        try:
            with open(store.dir(cfg) / "metrics.jsonl", "rb") as f:
                rows = sum(1 for line in f if line.strip())
        except OSError:
            continue
        rows -= rows % cfg.checkpoint_every if rows < cfg.rounds else 0
        if rows:
            out[cfg.run_id] = rows
    return out


# --- estimates ---------------------------------------------------------------------------------------

def _kind(cfg: RunConfig) -> tuple:
    """Runs of one kind cost alike per round: same method, data, model, partition and local work."""
    return (cfg.algorithm, cfg.dataset, cfg.model, cfg.partition, cfg.local_epochs, cfg.clients_per_round,
            cfg.batch_size, cfg.labeled_ratio, cfg.device)


def _method_kind(cfg: RunConfig) -> tuple:
    """A coarser kind: the same method and local work on another split or labeled ratio (e.g. Table 5's
    γ = 0.15 column before any of its runs finished); closer than a guess by an order of magnitude."""
    return (cfg.algorithm, cfg.dataset, cfg.model, cfg.local_epochs, cfg.clients_per_round, cfg.batch_size,
            cfg.device)


def _estimate(job: JobPlan, store: RunStore, profile: str) -> None:
    per_round_here, per_round_method = _seconds_per_round(store, _kind, _method_kind)
    reference = _reference_seconds(job, profile)
    for cfg in job.pending:
        rate = per_round_here.get(_kind(cfg))
        if rate is not None:
            job.estimate[cfg.run_id], job.estimate_source[cfg.run_id] = rate * cfg.rounds, "this store"
        elif cfg.run_id in reference:
            job.estimate[cfg.run_id], job.estimate_source[cfg.run_id] = reference[cfg.run_id], "reference"
        elif _method_kind(cfg) in per_round_method:
            job.estimate[cfg.run_id] = per_round_method[_method_kind(cfg)] * cfg.rounds
            job.estimate_source[cfg.run_id] = "this store, same method"
        else:
            job.estimate[cfg.run_id], job.estimate_source[cfg.run_id] = GUESS_SECONDS_PER_ROUND * cfg.rounds, "guess"


def _seconds_per_round(store: RunStore, *kinds) -> list[dict[tuple, float]]:
    """For each of `kinds` (config -> key), the median seconds per round of each key's finished runs in
    the store (this machine's speed); one pass over the store's recorded paces (unproven: an estimate)."""
    rates: list[dict[tuple, list[float]]] = [{} for _ in kinds]
    for cfg, pace in store.recorded_paces():
        for kind, by_key in zip(kinds, rates):
            by_key.setdefault(kind(cfg), []).append(pace)
    return [{k: statistics.median(v) for k, v in by_key.items()} for by_key in rates]


def _reference_seconds(job: JobPlan, profile: str, results: Path | None = None) -> dict[str, float]:
    """A run's seconds as measured for its cell in <results>/<notebook>.csv (default the project's
    results/; the cell's total shared equally among its runs), where that row measured the same
    protocol: a paper row for a run of more than one local epoch (FedSiam's paper-protocol checks;
    quick's one reduction there is R_L = 1), a quick row for the other runs of the profiles that share
    quick's protocol. Rows are matched on their table too (an authors'-computation row shares a Table 5
    cell's coordinates but not its runs), and a row that timed nothing (the authors' own code, run
    outside fssl) is no reference. Smoke runs and the paper profile's other runs have no reference
    (their estimate says it is a guess)."""
    out: dict[str, float] = {}
    quick_protocol = profile in ("quick", "headline")
    for plan in job.notebooks:
        path = (results or project_root() / "results") / f"{plan.notebook}.csv"
        if profile == "smoke" or not path.exists():
            continue
        frame = read_results(path)
        measured: dict[tuple, dict[str, float]] = {}
        for r in frame[(frame.n_runs > 0) & frame.seconds.notna()].itertuples():
            measured.setdefault((r.table, r.setting, r.labeled, r.dataset, r.method), {})[r.profile] = \
                r.seconds / r.n_runs
        for cell in plan.cells:
            by_profile = measured.get((cell.table, cell.setting, cell.labeled, cell.dataset, cell.method), {})
            for cfg in cell.configs:
                row = "paper" if cfg.local_epochs > 1 and "paper" in by_profile else "quick" if quick_protocol else None
                if row in by_profile:
                    out.setdefault(cfg.run_id, by_profile[row])
    return out
