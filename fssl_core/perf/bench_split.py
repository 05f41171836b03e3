"""Where a run's time goes: a FedAvg MNIST run split into imports, data, train, eval and store, beside the papers' loop.

`python -m fssl_core bench cases=run_split [rounds=10] [budget=600] [out=FILE]`

Four measurements in one invocation, one CPU thread, bench's protocol (FedSiam Table 5, γ = 0.10; FedAvg, MNIST):
  imports  in fresh interpreters (sys.executable), the seconds of `import torch` alone and of what `python -m
           fssl_core run` imports before it trains (cli.cmd_run's imports), each the least of 3, interleaved;
  run      one run trained by `train()` into a run store in a temporary folder, its time split by timers wrapped
           around the engine's and the store's functions (the engine is not edited): data (load_dataset, resplit,
           the partition, the rest of Federation.build), eval (Federation.test_metrics), train (the rest of each
           round), store (RunRecorder.start, record_round, finish); "other" is what no part holds (the claim, the
           lock). Round 1 apart from rounds 2..N: its first evaluation and cohort step pay one-time warm-ups;
  batches  the trained model's test set evaluated by `Federation.test_metrics` at each eval_batch_size of
           EVAL_BATCHES (the least of 3, interleaved); the bench fails unless the accuracy is the same at each;
  loop     the papers' loop (bench_rounds.loop_rounds: torchvision MNIST, per-sample transforms, a DataLoader per
           client, a model copy, torch.optim.SGD), each round followed by the papers' evaluation (test_img of the
           FedAvg code they build on: per-sample transforms, a DataLoader of 128); it stops after the round that
           passes `budget` seconds and says how many rounds it timed.
Compared: a steady round (the mean of rounds 2..N) end to end, the engine's round with its store writes against the
loop's with its evaluation. The data set is read from disk afresh, as a `run` command reads it. out=FILE writes the
record (machine, torch, date, every number) as JSON.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator
from unittest import mock

import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

from ..data import datasets
from ..data.datasets import data_root, load_dataset
from ..engine import federation, trainer
from ..store import atomic_write_text, run_store
from ..store.files import tally_writes
from ..store.run_store import RunRecorder, RunStore
from ..config import ConfigError
from ..engine.federation import Federation
from ..run_config import RunConfig
from .bench_rounds import loop_rounds

ROUNDS, BUDGET_S, IMPORT_REPEATS = 10, 600.0, 3
EVAL_BATCHES, EVAL_REPEATS = (64, 128, 256, 512, 1024), 3
TEST_BATCH = 128          # the test batch of the FedAvg code the papers build on (test_img, --bs 128)
# what `python -m fssl_core run` imports before it trains: the module cli.py, then cli.cmd_run's own imports
RUN_IMPORTS = ("import fssl_core.cli\n"
               "from fssl_core.executors import sigterm_as_interrupt\n"
               "from fssl_core.store import OK, RunStore, describe\n"
               "from fssl_core.engine.trainer import train\n"
               "from fssl_core.run_config import RunConfig\n")
TORCH_IMPORT = "import torch\n"


def import_seconds(code: str) -> float:
    """The wall seconds `code` takes in a fresh interpreter (the interpreter's own start not counted), run from the
    project's root so that it imports this checkout's package."""
    timer = f"import time\n_began = time.perf_counter()\n{code}print(time.perf_counter() - _began)\n"
    done = subprocess.run([sys.executable, "-c", timer], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def measure_imports(repeats: int = IMPORT_REPEATS) -> dict:
    """`import torch` alone and the run's imports, each the least of `repeats` interpreters, the two interleaved
    after one untimed run's imports (the files then in the page cache for both; the machine's noise on both alike)."""
    import_seconds(RUN_IMPORTS)
    torch_all, run_all = [], []
    for _ in range(repeats):
        torch_all.append(import_seconds(TORCH_IMPORT))
        run_all.append(import_seconds(RUN_IMPORTS))
    return {"torch_s": min(torch_all), "run_s": min(run_all), "beyond_torch_s": min(run_all) - min(torch_all),
            "torch_all_s": torch_all, "run_all_s": run_all, "repeats": repeats}


class Timers:
    """Seconds and calls of the functions wrapped by `wrap`, by name (calls under one name add up)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, name: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - began
                self.calls[name] = self.calls.get(name, 0) + 1
        return timed

    def get(self, name: str) -> tuple[float, int]:
        return self.seconds.get(name, 0.0), self.calls.get(name, 0)


@contextmanager
def patched(replacements: list[tuple[Any, str, Any]]) -> Iterator[None]:
    """Each (owner, name, value) set while open (unittest.mock.patch.object: a class's own descriptor is put back)."""
    with ExitStack() as stack:
        for owner, name, value in replacements:
            stack.enter_context(mock.patch.object(owner, name, value))
        yield


def measure_run(cfg: RunConfig, root: Path) -> dict:
    """Train `cfg` with `train()` into a run store at `root` (which must hold no such run), its time split into
    data, train, eval, store and other (the module's docstring), per round and in all."""
    t = Timers()
    rounds: list[dict] = []
    trained: list = []            # the run's federation and its last state, for measure_eval_batches
    together, record_round = trainer.run_rounds_together, RunRecorder.record_round

    def one_round(feds, states, r):
        eval_before, began = t.get("eval"), time.perf_counter()
        out = together(feds, states, r)
        round_s, (eval_s, eval_calls) = time.perf_counter() - began, t.get("eval")
        trained[:] = [feds[0], out[0][0]]
        rounds.append({"round": r, "round_s": round_s, "eval_s": eval_s - eval_before[0],
                       "eval_calls": eval_calls - eval_before[1], "train_s": round_s - (eval_s - eval_before[0])})
        return out

    def recorded(self, r, state, row):
        checkpoints, began = t.get("checkpoint")[1], time.perf_counter()
        record_round(self, r, state, row)
        rounds[-1].update(store_s=time.perf_counter() - began, checkpoints=t.get("checkpoint")[1] - checkpoints)

    replacements = [(federation, "load_dataset", t.wrap("load", federation.load_dataset)),
                    (federation, "resplit", t.wrap("load", federation.resplit)),
                    (Federation, "partition_of", staticmethod(t.wrap("partition", Federation.partition_of))),
                    (Federation, "build", classmethod(t.wrap("build", Federation.build.__func__))),
                    (Federation, "test_metrics", t.wrap("eval", Federation.test_metrics)),
                    (run_store, "save_checkpoint", t.wrap("checkpoint", run_store.save_checkpoint)),
                    (RunRecorder, "start", t.wrap("store_start", RunRecorder.start)),
                    (RunRecorder, "finish", t.wrap("store_finish", RunRecorder.finish)),
                    (RunRecorder, "record_round", recorded), (trainer, "run_rounds_together", one_round)]
    datasets.clear_cache()          # read from disk, as a `run` command reads it
    with patched(replacements), tally_writes() as written:
        began = time.perf_counter()
        result = trainer.train(cfg, RunStore(root), progress=False)
        wall = time.perf_counter() - began
    if len(rounds) != cfg.rounds:
        raise RuntimeError(f"run_split: {len(rounds)} rounds trained of {cfg.rounds} (a run already in {root}?)")
    parts = {"data_s": t.get("build")[0], "train_s": sum(r["train_s"] for r in rounds),
             "eval_s": sum(r["eval_s"] for r in rounds),
             "store_s": t.get("store_start")[0] + sum(r["store_s"] for r in rounds) + t.get("store_finish")[0]}
    steady = rounds[1:] or rounds
    return {"rounds": rounds, "wall_s": wall, **parts, "other_s": wall - sum(parts.values()),
            "load_s": t.get("load")[0], "partition_s": t.get("partition")[0],
            "build_rest_s": t.get("build")[0] - t.get("load")[0] - t.get("partition")[0],
            "store_start_s": t.get("store_start")[0], "store_finish_s": t.get("store_finish")[0],
            "eval_calls": t.get("eval")[1], "checkpoints": t.get("checkpoint")[1],
            "checkpoints_in_rounds": sum(r["checkpoints"] for r in rounds),
            "written": {name: {"writes": n, "bytes": size} for name, (n, size) in sorted(written.by_name.items())},
            "first": _share(rounds[:1]), "steady": _share(steady), "all": _share(rounds),
            "cohort": federation.trains_as_cohort(cfg), "accuracy": result.summary.get("accuracy"),
            "eval_batches": measure_eval_batches(*trained)}


def measure_eval_batches(fed: Federation, state: Any) -> dict:
    """Seconds of one evaluation of the test set at each eval_batch_size of EVAL_BATCHES (the least of EVAL_REPEATS,
    the sizes interleaved), by `fed`'s own test_metrics on `state`'s model with the run's allocator settings; fails
    unless the accuracy is the same at every size (the test loss's last bits move with it: RunConfig)."""
    tensors = fed.algorithm.eval_tensors(state)
    sized = {b: dataclasses.replace(fed, cfg=fed.cfg.replace(eval_batch_size=b)) for b in EVAL_BATCHES}
    seconds: dict[int, list[float]] = {b: [] for b in EVAL_BATCHES}
    metrics = {}
    for _ in range(EVAL_REPEATS):
        for b, one in sized.items():
            began = time.perf_counter()
            metrics[b] = one.test_metrics(tensors)
            seconds[b].append(time.perf_counter() - began)
    if len({m["accuracy"] for m in metrics.values()}) != 1:
        raise RuntimeError(f"run_split: evaluation's accuracy depends on its batch size: {metrics}")
    least = {b: min(s) for b, s in seconds.items()}
    return {"seconds": least, "all_s": seconds, "fastest": min(least, key=least.__getitem__),
            "run_used": fed.cfg.eval_batch_size, "metrics": metrics}


def _share(rounds: list[dict]) -> dict:
    """Mean seconds a round of `rounds` (train, eval, store, end to end: round + store) and the eval share."""
    mean = {k: statistics.fmean(r[k] for r in rounds) for k in ("train_s", "eval_s", "store_s", "round_s")}
    mean["end_to_end_s"] = mean["round_s"] + mean["store_s"]
    mean["eval_share"] = mean["eval_s"] / (mean["train_s"] + mean["eval_s"])
    return mean


@torch.no_grad()
def papers_test(model: torch.nn.Module, dataset) -> float:
    """Test accuracy in % as the papers' code takes it (test_img): eval mode, a DataLoader, the summed loss."""
    model.eval()
    correct, loss = 0, 0.0
    for x, y in DataLoader(dataset, batch_size=TEST_BATCH):
        logits = model(x)
        loss += torch.nn.functional.cross_entropy(logits, y, reduction="sum").item()
        correct += int((logits.argmax(1) == y).sum())
    return 100.0 * correct / len(dataset)


def measure_loop(cfg: RunConfig, budget_s: float = BUDGET_S) -> dict:
    """The papers' loop for up to cfg.rounds rounds, each with the papers' evaluation, stopping after the round
    that passes `budget_s` seconds (its own rounds; its setup not counted)."""
    began = time.perf_counter()
    run = loop_rounds(cfg)
    data = load_dataset(cfg.dataset)
    test = torchvision.datasets.MNIST(str(data_root()), train=False, download=False,
                                      transform=T.Compose([T.ToTensor(), T.Normalize(data.mean, data.std)]))
    setup_s, rounds = time.perf_counter() - began, []
    began = time.perf_counter()
    for r in range(1, cfg.rounds + 1):
        start = time.perf_counter()
        run(r)
        trained = time.perf_counter()
        accuracy = papers_test(run.model, test)      # type: ignore[attr-defined]
        rounds.append({"round": r, "train_s": trained - start, "eval_s": time.perf_counter() - trained,
                       "accuracy": accuracy})
        if time.perf_counter() - began > budget_s:
            break
    steady = rounds[1:] or rounds
    per_round = {k: statistics.fmean(r[k] for r in steady) for k in ("train_s", "eval_s")}
    return {"setup_s": setup_s, "rounds": rounds, "timed": len(rounds), "of": cfg.rounds, "budget_s": budget_s,
            "steady_rounds": [r["round"] for r in steady], **per_round,
            "end_to_end_s": per_round["train_s"] + per_round["eval_s"], "accuracy": rounds[-1]["accuracy"]}


def table(imports: dict, run: dict, loop: dict, rounds: int) -> str:
    """The printed summary: imports, the run's parts (whole, round 1, a steady round) and the comparison."""
    first, steady = run["first"], run["steady"]
    span = lambda numbers: (f"rounds {numbers[0]}-{numbers[-1]}" if len(numbers) > 1     # noqa: E731
                            else f"round {numbers[0]}")
    later = span(list(range(2, rounds + 1)) or [1])
    rows = [("data (load %.2f, partition %.2f, build %.2f)" % (run["load_s"], run["partition_s"], run["build_rest_s"]),
             run["data_s"], None, None),
            ("train", run["train_s"], first["train_s"], steady["train_s"]),
            (f"eval ({run['eval_calls']} calls)", run["eval_s"], first["eval_s"], steady["eval_s"]),
            (f"store ({run['checkpoints']} checkpoints, {run['checkpoints_in_rounds']} in rounds)", run["store_s"],
             first["store_s"], steady["store_s"]),
            ("other", run["other_s"], None, None), ("wall", run["wall_s"], None, None)]
    fmt = lambda v: "" if v is None else f"{v:.3f}"       # noqa: E731
    lines = [f"imports (least of {imports['repeats']} fresh interpreters): torch {imports['torch_s']:.2f} s; "
             f"`run`'s imports {imports['run_s']:.2f} s; beyond torch {imports['beyond_torch_s']:.2f} s",
             f"run: FedAvg MNIST, {rounds} rounds, {'cohort' if run['cohort'] else 'sequential'} trainer, 1 thread, "
             f"final accuracy {run['accuracy']:.2f}",
             f"| part | s | round 1 | {later}, s a round |", "|---|---|---|---|"]
    lines += [f"| {name} | {fmt(total)} | {fmt(a)} | {fmt(b)} |" for name, total, a, b in rows]
    lines.append(f"| eval share of the rounds | {100 * run['all']['eval_share']:.1f}% | "
                 f"{100 * first['eval_share']:.1f}% | {100 * steady['eval_share']:.1f}% |")
    sweep = run["eval_batches"]
    lines.append(f"evaluation of the test set by eval_batch_size (least of {EVAL_REPEATS}): " + ", ".join(
        f"{b} {s:.3f} s" for b, s in sweep["seconds"].items()) + f"; fastest {sweep['fastest']}, the run's "
        f"{sweep['run_used']} (the same accuracy at every size)")
    lines.append(f"end to end a round, {later} (loop: {span(loop['steady_rounds'])}, {loop['timed']} of "
                 f"{loop['of']} timed): engine {steady['end_to_end_s']:.3f} s (round + store) vs papers' loop "
                 f"{loop['end_to_end_s']:.3f} s (train {loop['train_s']:.3f} + eval {loop['eval_s']:.3f}): "
                 f"{loop['end_to_end_s'] / steady['end_to_end_s']:.2f}× (loop accuracy {loop['accuracy']:.2f})")
    return "\n".join(lines)


def main(pairs: dict[str, str], protocol: dict, cpu: str) -> dict:
    """Measure, print, and write the record where out= says; returns the record. `protocol`: bench's PROTOCOL;
    `cpu`: the CPU's model name."""
    unknown = set(pairs) - {"cases", "rounds", "budget", "out"}
    if unknown:
        raise ConfigError(f"bench cases=run_split: unknown option(s) {', '.join(sorted(unknown))}: "
                          "allowed are rounds, budget, out")
    rounds, budget = pairs.get("rounds", str(ROUNDS)), pairs.get("budget", str(int(BUDGET_S)))
    if not rounds.isdigit() or not 1 <= int(rounds) <= 1000:
        raise ConfigError(f"bench: rounds={rounds!r}: must be an integer within [1, 1000]")
    if not budget.isdigit() or int(budget) < 1:
        raise ConfigError(f"bench: budget={budget!r}: must be a whole number of seconds, 1 or more")
    cfg = RunConfig(**protocol, dataset="mnist", algorithm="fedavg", rounds=int(rounds))
    torch.set_num_threads(1)          # as a run trains on the CPU (trainer.single_thread_on_cpu): the loop too
    load_before = os.getloadavg()[0]
    print(f"run split: FedAvg MNIST, {rounds} rounds; imports in 2 × {IMPORT_REPEATS} + 1 fresh interpreters, then the "
          f"run, then the papers' loop (within {budget} s)", flush=True)
    imports = measure_imports()
    with tempfile.TemporaryDirectory(prefix="fssl-run-split-") as root:
        run = measure_run(cfg, Path(root))
    loop = measure_loop(cfg, float(budget))
    print(table(imports, run, loop, int(rounds)), flush=True)
    found = {"case": "run_split", "date": time.strftime("%Y-%m-%d"), "command": "python -m fssl_core bench " +
             " ".join(f"{k}={v}" for k, v in pairs.items() if k != "out"), "cpu": cpu, "cores": os.cpu_count(),
             "threads": torch.get_num_threads(), "torch": torch.__version__, "python": sys.version.split()[0],
             "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
             "config": cfg.to_dict(), "imports": imports, "run": run, "loop": loop,
             "loop_vs_engine": loop["end_to_end_s"] / run["steady"]["end_to_end_s"]}
    if "out" in pairs:
        atomic_write_text(Path(pairs["out"]), json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"record: {pairs['out']}", flush=True)
    return found
