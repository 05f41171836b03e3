"""The GPU check's measurements that train whole runs, each in its own spawned process (a fresh
interpreter, as the executors run them): `resume`, a run killed with SIGKILL and resumed, against runs
never interrupted; `throughput`, runs per hour at rising concurrency. See perf/gpu_check.py for the command,
its budget and its report; a step stops at its deadline by killing the processes it started.
"""
from __future__ import annotations

import multiprocessing
import queue as queues
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from ..engine.trainer import train
from ..executors.local import die_with_parent
from .gpu_check_report import Step
from ..run_config import RunConfig
from ..store import RunStore


# the resume check: TINY of test_store.py on 10,000 training images, evaluated at the last round only;
# the writer is killed once its checkpoint of round KILL_AFTER is written, with 20 rounds still to go
KILL_AFTER = 3
RESUME = dict(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2, local_epochs=1,
              rounds=KILL_AFTER + 20, batch_size=10, eval_every=100, resplit_train=10_000, resplit_test=500,
              checkpoint_every=1)
RESUME_ALGORITHM = {"full": "fedsiam_d", "tiny": "fedavg"}      # full: two networks and an EMA in the state
THROUGHPUT_LEVELS = {"full": (1, 2, 4, 8, 16), "tiny": (1, 2)}
THROUGHPUT_ROUNDS = 2             # two: the second round's wall time is a round past the warm-up
PROTOCOL_ROUNDS = 50              # FedSiam's Table 2, R_G
THROUGHPUT = {"full": dict(dataset="mnist", algorithm="fedsiam_d"),
              "tiny": dict(dataset="mnist", algorithm="fedavg", clients=10, clients_per_round=2, local_epochs=1,
                           resplit_train=5_000, resplit_test=500)}


def _train(roots: list[str], cfg: dict, mark_after: int = 0, trained_log: str | None = None) -> None:
    """A run in its own process, trained (or resumed) into each store of `roots` in turn. After round
    `mark_after` is checkpointed it touches <root>/checkpointed (the kill's cue); `trained_log` gets each
    round it trains."""
    die_with_parent()       # a SIGKILL of the check leaves no run behind
    for root in roots:
        def after_round(r: int, root: str = root) -> None:
            if r == mark_after:
                (Path(root) / "checkpointed").touch()
            if trained_log:
                with open(trained_log, "a") as log:
                    log.write(f"{r}\n")
        train(RunConfig.from_dict(cfg), RunStore(root), progress=False, after_round=after_round)


def _flat(x: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        return {k: v for key, value in x.items() for k, v in _flat(value, f"{prefix}{key}.").items()}
    if isinstance(x, (list, tuple)):
        return {k: v for i, value in enumerate(x) for k, v in _flat(value, f"{prefix}{i}.").items()}
    return {prefix.rstrip("."): x}


# result.json's fields that differ between identical runs: timings, where the store is, and the digests
# of files that hold the timings (the metrics rows, the checkpoint)
NOT_COMPARED = frozenset({"seconds", "seconds_per_round", "run_dir", "digest", "metrics_digest", "checkpoint_sha256"})


def compare_runs(cfg: RunConfig, a: Path, b: Path) -> list[str]:
    """What differs between the finished runs of `cfg` in stores `a` and `b`: metrics fields (timing aside),
    summary fields, tensors of the final state (torch.equal); [] when bit-identical."""
    ra, rb = RunStore(a).load(cfg), RunStore(b).load(cfg)
    if ra is None or rb is None:
        return [f"not finished in {a if ra is None else b}"]
    differs = [] if len(ra.metrics) == len(rb.metrics) else ["rounds"]
    differs += sorted({f"metrics.{k}" for x, y in zip(ra.metrics, rb.metrics) for k in x.keys() | y.keys()
                       if k != "seconds" and x.get(k) != y.get(k)})
    differs += [f"summary.{k}" for k in sorted(ra.summary.keys() | rb.summary.keys())
                if k not in NOT_COMPARED and ra.summary.get(k) != rb.summary.get(k)]
    sa, sb = _flat(RunStore(a).final_state(cfg)), _flat(RunStore(b).final_state(cfg))
    for k in sorted(sa.keys() | sb.keys()):
        x, y = sa.get(k), sb.get(k)
        same = torch.equal(x, y) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) else x == y
        if not same:
            differs.append(f"state.{k}")
    return differs


def resume_step(step: Step, device: str, size: str) -> None:
    cfg = RunConfig(algorithm=RESUME_ALGORITHM[size], device=device, **RESUME)
    step.set(config=f"{cfg.algorithm} mnist, {cfg.rounds} rounds, checkpoint every round ({cfg.run_id})",
             killed_after_checkpoint_of_round=KILL_AFTER)
    with tempfile.TemporaryDirectory(prefix="fssl-gpu-check-") as tmp:
        roots = {name: Path(tmp) / name for name in ("killed", "reference", "repeat")}
        writer = step.spawn(_train, [str(roots["killed"])], cfg.to_dict(), KILL_AFTER)
        # the uninterrupted runs, one after the other in one process (a process start costs more than the runs)
        others = [step.spawn(_train, [str(roots["reference"]), str(roots["repeat"])], cfg.to_dict())]
        try:
            if not step.wait_for(lambda: (roots["killed"] / "checkpointed").exists() or not writer.is_alive()):
                step.cut(f"the writer did not checkpoint round {KILL_AFTER} within the budget")
                return
            rows_file = roots["killed"] / cfg.run_id / "metrics.jsonl"
            rows = len(rows_file.read_text().splitlines()) if rows_file.exists() else 0
            step.reap(writer, kill=True)
            step.set(exercised=writer.exitcode == -9, writer_exit=writer.exitcode, rows_at_kill=rows)
            step.progress(1, 3, f"writer killed (exit {writer.exitcode}) with {rows} rows written")
            log = Path(tmp) / "resumed.log"
            resumer = step.spawn(_train, [str(roots["killed"])], cfg.to_dict(), 0, str(log))
            if not step.wait_for(lambda: not resumer.is_alive() and not any(p.is_alive() for p in others)):
                step.cut("the resumed or the uninterrupted runs did not finish within the budget")
                return
            trained = [int(r) for r in log.read_text().split()] if log.exists() else []
            step.set(resumed_after_round=trained[0] - 1 if trained else None)
            step.progress(2, 3, f"resumed after round {trained[0] - 1 if trained else '?'} in a fresh process")
            differs = compare_runs(cfg, roots["killed"], roots["reference"])
            repeat = compare_runs(cfg, roots["repeat"], roots["reference"])
            step.set(identical=not differs, differs=differs, uninterrupted_repeat_identical=not repeat,
                     repeat_differs=repeat)
            verdict = "identical" if not differs else "DIFFER: " + ", ".join(differs[:5])
            step.progress(3, 3, f"resumed vs uninterrupted: {verdict}")
        finally:
            for process in list(step.check.children):
                step.reap(process, kill=True)


def _timed_run(root: str, cfg: dict, worker: int, events) -> None:
    """A throughput run in its own process, reporting when each round ends (wall clock) and when it is done."""
    die_with_parent()       # a SIGKILL of the check leaves no run behind
    try:
        train(RunConfig.from_dict(cfg), RunStore(root), progress=False,
              after_round=lambda r: events.put(("round", worker, r, time.time())))
        events.put(("done", worker, time.time(), None))
    except Exception as err:      # reported, not raised: the parent counts the level's runs
        events.put(("done", worker, time.time(), f"{type(err).__name__}: {err}"))


def concurrent_runs(step: Step, cfg: RunConfig, concurrency: int) -> dict:
    """`concurrency` runs of `cfg` (seeds apart) side by side, each in its own process and store, until all
    finish or the step's deadline. Round time: the median wall time of a round after the first; start-up:
    the time to the end of round 1 less one such round (spawn, imports, data, build, warm-up)."""
    events = multiprocessing.get_context("spawn").Queue()
    with tempfile.TemporaryDirectory(prefix="fssl-gpu-check-") as tmp:
        launch = time.time()
        processes = [step.spawn(_timed_run, tmp, cfg.replace(seed=cfg.seed + i).to_dict(), i, events)
                     for i in range(concurrency)]
        ends: dict[int, dict[int, float]] = {i: {} for i in range(concurrency)}
        done: dict[int, tuple[float, str | None]] = {}
        while len(done) < concurrency and step.left() > 0:
            try:
                event = events.get(timeout=min(1.0, max(step.left(), 0.01)))
            except queues.Empty:
                if not any(p.is_alive() for p in processes):
                    break      # a run died without a word (killed: out of memory?)
                continue
            if event[0] == "round":
                ends[event[1]][event[2]] = event[3]
            else:
                done[event[1]] = (event[2], event[3])
        end = max((t for t, _ in done.values()), default=time.time()) if len(done) == concurrency else time.time()
        for process in processes:
            step.reap(process, kill=True)
    steady = [e[r] - e[r - 1] for e in ends.values() for r in e if r >= 2 and r - 1 in e]
    round_s = statistics.median(steady) if steady else None
    firsts = [e[1] - launch for e in ends.values() if 1 in e]
    startup_s = statistics.median(firsts) - round_s if firsts and round_s else None
    rounds = sum(len(e) for e in ends.values())
    wall = end - launch
    failed = [err for _, err in done.values() if err]
    return {"concurrency": concurrency, "runs": concurrency, "rounds_each": cfg.rounds, "rounds_done": rounds,
            "wall_s": round(wall, 1), "round_s": round(round_s, 3) if round_s else None,
            "startup_s": round(startup_s, 1) if startup_s is not None else None,
            "rounds_per_hour": round(rounds * 3600 / wall, 1),
            "runs_per_hour_at_50_rounds": (round(concurrency * 3600 / (startup_s + PROTOCOL_ROUNDS * round_s), 2)
                                           if round_s and startup_s is not None else None),
            "finished": len(done) - len(failed), "failed": failed[:3]}


def throughput_step(step: Step, device: str, size: str) -> None:
    cfg = RunConfig(device=device, rounds=THROUGHPUT_ROUNDS, **THROUGHPUT[size])
    levels = THROUGHPUT_LEVELS[size]
    step.set(config=f"{cfg.algorithm} {cfg.dataset}, K={cfg.clients}, {cfg.clients_per_round} a round, "
                    f"E={cfg.local_epochs}, trainer {cfg.trainer}, {cfg.rounds} rounds each (seeds apart), one spawned "
                    "process per run, into a temporary store",
             runs_per_hour_at_50_rounds=f"concurrency × 3600 / (start-up + {PROTOCOL_ROUNDS} × round), start-up and "
                                        "round the medians over the level's runs")
    longest = 0.0
    for i, concurrency in enumerate(levels, 1):
        if not step.affords(longest):
            step.cut(f"stopped raising concurrency before {concurrency}: {max(step.left(), 0):.0f} s left, the last "
                     f"level took {longest:.0f} s")
            return
        row = concurrent_runs(step, cfg, concurrency)
        longest = row["wall_s"]
        step.record(row)
        step.progress(i, len(levels), f"{concurrency} concurrent: {row['rounds_done']} rounds in {row['wall_s']} s, "
                                      f"{row['runs_per_hour_at_50_rounds']} runs/h at 50 rounds")
        if row["finished"] < concurrency:
            step.cut(f"concurrency {concurrency}: {row['finished']} of {concurrency} runs finished"
                     + (f" ({row['failed'][0]})" if row["failed"] else " within the budget"))
            return
