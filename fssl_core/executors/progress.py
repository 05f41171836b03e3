"""One progress display for a batch of runs: runs done / total, the rounds of the runs in flight, an
ETA weighted by each run's estimated cost, and a line per finished run with its headline number.

One estimate: the plan's minutes and the bar's ETA come from the same model (`wall_seconds`: each run's
estimated seconds, packed longest first on the executor's slots). The ETA starts at the plan's figure and
counts down with the clock; it is revised only when work finishes (a round or a run), from the measured
pace (wall seconds per estimated second of work done by this job: a resumed run's earlier rounds are not its
work), so it never rises while nothing has finished.

Local workers report nothing themselves: a run's progress is the number of rounds in its
metrics.jsonl, which the store rewrites after every round, so the same display serves runs in this
process and in worker processes. Ray tasks, whose files the driver may not see, report their rounds
(executors/ray.py) and the executor passes them to `poll`.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Mapping

from tqdm.auto import tqdm

from ..run_config import RunConfig

BAR_FORMAT = "{desc} |{bar:20}| {percentage:3.0f}% [{elapsed}]{postfix}"   # tqdm puts ", " before the postfix


def wall_seconds(costs, slots: int) -> float:
    """Wall seconds of runs costing `costs` (estimated seconds each) on `slots` processes, packed longest
    first onto the least loaded slot: the plan's estimate and the bar's first ETA."""
    loads = [0.0] * max(1, slots)
    for cost in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads)


def clock_text(seconds: float) -> str:
    seconds = int(round(max(seconds, 0.0)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class Eta:
    """The job's ETA (the module's model): `planned` wall seconds at the start; between revisions it counts
    down with `clock`; `revise(done, total)` at a finished round or run sets it to the work left times the
    pace measured so far (elapsed wall seconds per estimated second done)."""

    def __init__(self, planned: float, clock: Callable[[], float] = time.monotonic):
        self.clock, self.start = clock, clock()
        self.value, self.at = planned, self.start
        self.done = 0.0

    def revise(self, done: float, total: float) -> None:
        if done <= self.done:        # nothing finished since the last revision: keep counting down
            return
        now = self.clock()
        self.done, self.at = done, now
        self.value = (total - done) * (now - self.start) / done

    def seconds(self) -> float:
        return max(0.0, self.value - (self.clock() - self.at))


class JobProgress:
    def __init__(self, configs: list[RunConfig], store, estimate: Mapping[str, float] | None = None,
                 enabled: bool = True, slots: int = 1, clock: Callable[[], float] = time.monotonic):
        self.configs, self.store = configs, store
        known = [s for s in (estimate or {}).values() if s > 0]
        fallback = sorted(known)[len(known) // 2] if known else 1.0
        # cost of each run in "estimated seconds"; unknown runs count as a typical one
        self.cost = {c.run_id: (estimate or {}).get(c.run_id, fallback) for c in configs}
        # what this job has to do: a resumed run's rounds finished before it started are no work of this job, so
        # the ETA's pace counts only rounds done since (else a run resumed at 42% makes the pace look 2x fast)
        self.start_rounds = {c.run_id: min(self.rounds_done(c), c.rounds) for c in configs}
        self.left = {c.run_id: self.cost[c.run_id] * (1 - self.start_rounds[c.run_id] / c.rounds) for c in configs}
        self.done_cost, self.done_left, self.done = 0.0, 0.0, 0
        self.eta = Eta(wall_seconds(self.left.values(), slots), clock)
        self.bar = None
        if enabled and configs:
            self.bar = tqdm(total=round(sum(self.cost.values()), 1), desc=self._desc(), bar_format=BAR_FORMAT,
                            file=sys.stderr, dynamic_ncols=True, smoothing=0.05)

    def _desc(self) -> str:
        return f"runs {self.done}/{len(self.configs)}"

    def rounds_done(self, cfg: RunConfig) -> int:
        path = self.store.dir(cfg) / "metrics.jsonl"
        try:
            with open(path, "rb") as f:
                return sum(1 for line in f if line.strip())
        except OSError:
            return 0

    def poll(self, running: list[RunConfig], rounds: Mapping[str, int] | None = None) -> None:
        """Advance the bar to the finished runs plus the finished rounds of the `running` ones, read from
        their metrics files, or from `rounds` (run id -> rounds finished) where given."""
        if self.bar is None:
            return
        partial, ours, shown = 0.0, 0.0, []
        for cfg in running:
            r = min(rounds[cfg.run_id] if rounds is not None else self.rounds_done(cfg), cfg.rounds)
            partial += self.cost[cfg.run_id] * r / cfg.rounds
            ours += self.cost[cfg.run_id] * max(0, r - self.start_rounds.get(cfg.run_id, 0)) / cfg.rounds
            shown.append(f"{cfg.algorithm} {cfg.dataset} round {r}/{cfg.rounds}")
        self.bar.n = round(min(self.done_cost + partial, self.bar.total), 1)
        self.eta.revise(self.done_left + ours, sum(self.left.values()))
        self.bar.set_postfix_str(" · ".join([f"ETA {clock_text(self.eta.seconds())}", *shown]), refresh=False)
        self.bar.refresh()

    def finished(self, cfg: RunConfig, summary: dict) -> None:
        self.done += 1
        self.done_cost += self.cost[cfg.run_id]
        self.done_left += self.left.get(cfg.run_id, 0.0)
        line = finished_line(cfg, summary, self.done, len(self.configs))
        if self.bar is None:
            print(line, file=sys.stderr, flush=True)
            return
        self.bar.set_description_str(self._desc(), refresh=False)
        self.bar.write(line, file=sys.stderr)
        self.poll([])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def finished_line(cfg: RunConfig, summary: dict, done: int, total: int) -> str:
    acc = summary.get("accuracy")
    headline = f"accuracy {acc:.2f}%" if acc is not None else f"status {summary.get('status')}"
    if summary.get("status") == "at-chance":
        headline += " (at chance)"
    return (f"[run {done}/{total}] {headline} in {summary.get('seconds', 0):.0f} s: {cfg.algorithm} {cfg.dataset} "
            f"{cfg.partition} γ={cfg.labeled_ratio} E={cfg.local_epochs} R={cfg.rounds} seed={cfg.seed}")
