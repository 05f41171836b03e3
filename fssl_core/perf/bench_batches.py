"""Runs per hour: many small federations at once, as separate processes or as one batch (engine/trainer.py).

`python -m fssl_core bench cases=runs_per_hour [device=cpu|cuda] [batches=1,4,16] [processes=1,2] [size=full|tiny]
 [out=DIR] [readme=yes]`

FedSiam-D at FedSiam's Table 2 protocol (RunConfig's defaults on MNIST: K = 100, 10 clients a round,
E = 5, B = 10, a test-set evaluation every round), in one command on one machine, so that the ratios are
measured under the same load:
  processes  n runs, each alone in its own spawned process, all at once (the local executor's way);
  batch      n runs in one process, trained in lockstep, their clients in one cohort each round
             (trainer.train_batch's round: engine.run_rounds_together).
Each level builds its runs, takes round 1 as a warm-up, then times round 2 (every process starting it
together); runs per hour = n × 3600 / (round-2 seconds × 50 rounds). Nothing is written to the run store.
Batches run their seeds 1..n, processes theirs: the same work at each level. size=tiny is the tests' case
(FedAvg on 5,000 MNIST images, 10 clients, 2 a round): seconds, not a measurement of the protocol.
out=DIR writes the rows, the machine and the load into DIR/runs_per_hour.json (a measurement record);
readme=yes redraws the runs-per-hour table of README.md and docs/speed.md from every such record under measurements/.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path

import torch

from ..config import ConfigError

from ..run_config import RunConfig

PROTOCOL_ROUNDS = 50
PROTOCOL = {"full": dict(dataset="mnist", algorithm="fedsiam_d"),
            "tiny": dict(dataset="mnist", algorithm="fedavg", clients=10, clients_per_round=2, local_epochs=1,
                         resplit_train=5_000, resplit_test=500)}
LEVELS = {"cpu": {"batches": (1, 4, 16), "processes": (1, 2)},
          "cuda": {"batches": (1, 4, 16, 64), "processes": (1, 16)}}


def configs(size: str, device: str, count: int) -> list[RunConfig]:
    """`count` runs of the protocol that differ in seed only (a tiny run re-splits by seed, so its batch
    keeps seed 1 and varies the split instead)."""
    base = RunConfig(device=device, rounds=2, **PROTOCOL[size])
    if base.resplit_train:
        return [base.replace(labeled_ratio=round(0.1 + 0.01 * i, 2)) for i in range(count)]
    return [base.replace(seed=1 + i) for i in range(count)]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def batch_round_seconds(runs: list[RunConfig]) -> float:
    """Round 2's wall seconds of `runs` trained as one batch (round 1: the warm-up)."""
    from ..engine.federation import Federation, run_rounds_together
    threads = torch.get_num_threads()
    if runs[0].device == "cpu":
        torch.set_num_threads(1)             # as runs train (trainer.train_batch)
    try:
        feds = [Federation.build(cfg) for cfg in runs]
        states = [fed.initial_state() for fed in feds]
        states = [s for s, _ in run_rounds_together(feds, states, 1)]
        _sync(runs[0].device)
        start = time.perf_counter()
        run_rounds_together(feds, states, 2)
        _sync(runs[0].device)
        return time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)


def _solo(cfg: RunConfig, barrier, out) -> None:
    from ..executors.local import die_with_parent
    from ..engine.federation import Federation
    die_with_parent()
    if cfg.device == "cpu":
        torch.set_num_threads(1)
    fed = Federation.build(cfg)
    state, _ = fed.run_round(fed.initial_state(), 1)
    _sync(cfg.device)
    barrier.wait()
    start = time.perf_counter()
    fed.run_round(state, 2)
    _sync(cfg.device)
    out.put(time.perf_counter() - start)


def processes_round_seconds(runs: list[RunConfig], timeout: float = 3600.0) -> float:
    """Round 2's wall seconds of `runs`, each in its own process, all starting round 2 together: the
    slowest process's round (the level's runs finish when it does)."""
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(len(runs)), context.Queue()
    workers = [context.Process(target=_solo, args=(cfg, barrier, out), daemon=True) for cfg in runs]
    for w in workers:
        w.start()
    try:
        return max(out.get(timeout=timeout) for _ in workers)
    finally:
        for w in workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()


def runs_per_hour(count: int, round_seconds: float, rounds: int = PROTOCOL_ROUNDS) -> float:
    return count * 3600.0 / (round_seconds * rounds)


def measure(size: str = "full", device: str = "cpu", batches=None, processes=None, on_row=None) -> list[dict]:
    """One row per level: its way, its runs, round-2 seconds and runs per hour, and the ratio to one run
    alone in this process (the first batch level of 1 if measured, else the first row)."""
    batches = LEVELS[device]["batches"] if batches is None else batches
    processes = LEVELS[device]["processes"] if processes is None else processes
    rows = []
    for way, levels, seconds_of in (("batch", batches, batch_round_seconds),
                                    ("processes", processes, processes_round_seconds)):
        for n in levels:
            seconds = seconds_of(configs(size, device, n))
            rows.append({"way": way, "runs": n, "round_s": round(seconds, 3),
                         "runs_per_hour": round(runs_per_hour(n, seconds), 1)})
            base = rows[0]["runs_per_hour"]
            rows[-1]["vs_one_run"] = round(rows[-1]["runs_per_hour"] / base, 2)
            if on_row is not None:
                on_row(rows[-1])
    return rows


def line(row: dict) -> str:
    return (f"{row['way']:>9} of {row['runs']:>3}: round {row['round_s']:8.2f} s, "
            f"{row['runs_per_hour']:8.1f} runs/h, {row['vs_one_run']:.2f}x one run alone")


def _levels(text: str, option: str) -> tuple[int, ...]:
    parts = text.split(",")
    if not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ConfigError(f"bench: {option}={text!r}: must be run counts, e.g. {option}=1,4,16")
    return tuple(int(p) for p in parts)


RECORD = "runs_per_hour.json"
README_START, README_END = "<!-- runs-per-hour:start -->", "<!-- runs-per-hour:end -->"


def machine(device: str) -> dict:
    """What the record says of where it was measured: the device's name, cores and the load before."""
    name = torch.cuda.get_device_name() if device == "cuda" else (platform.processor() or platform.machine())
    return {"device": device, "name": name, "cpu_count": os.cpu_count(), "torch": torch.__version__,
            "load_before": round(os.getloadavg()[0], 2)}


def records(root: Path | None = None) -> list[dict]:
    """Every runs-per-hour record under measurements/, oldest folder first."""
    from ..paths import project_root
    root = root or project_root() / "measurements"
    return [json.loads(p.read_text()) | {"folder": p.parent.name} for p in sorted(root.glob(f"*/{RECORD}"))]


def readme_block(found: list[dict]) -> str:
    """The README's table: per record of the protocol (size full), one run alone in runs per hour, and each
    level of solo processes and of batches as runs at once: runs per hour (× one run alone)."""
    lines = ["| device | one run alone | solo processes at once | one process, a batch of runs | record |",
             "|---|---|---|---|---|"]
    for rec in (r for r in found if r["size"] == "full"):
        rows, m = rec["rows"], rec["machine"]
        cells = ["; ".join(f"{r['runs']}: {r['runs_per_hour']:.1f}/h ({r['vs_one_run']:.2f}×)" for r in rows
                           if r["way"] == way) for way in ("processes", "batch")]
        lines.append(f"| {m['name']} ({m['device']}, {m['cpu_count']} cores, torch {m['torch']}) | "
                     f"{rows[0]['runs_per_hour']:.1f} runs/h | {cells[0]} | {cells[1]} | `measurements/{rec['folder']}/` |")
    return "\n".join(lines)


def main(pairs: dict[str, str]) -> list[dict]:
    unknown = set(pairs) - {"cases", "device", "batches", "processes", "size", "out", "readme"}
    if unknown:
        raise ConfigError(f"bench cases=runs_per_hour: unknown option(s) {', '.join(sorted(unknown))}: "
                         "allowed are device, batches, processes, size, out, readme")
    if pairs.get("readme", "no") not in ("yes", "no"):
        raise ConfigError(f"bench: readme={pairs['readme']!r}: must be yes or no")
    device, size = pairs.get("device", "cpu"), pairs.get("size", "full")
    if device not in LEVELS:
        raise ConfigError(f"bench: device={device!r}: must be cpu or cuda")
    if size not in PROTOCOL:
        raise ConfigError(f"bench: size={size!r}: must be full or tiny")
    batches = _levels(pairs["batches"], "batches") if "batches" in pairs else None
    processes = _levels(pairs["processes"], "processes") if "processes" in pairs else None
    print(f"runs per hour, {PROTOCOL[size]['algorithm']} ({size}) on {device}: batches "
          f"{batches or LEVELS[device]['batches']}, processes {processes or LEVELS[device]['processes']}; "
          "each level builds its runs, a warm-up round, then one timed round", flush=True)
    where = machine(device)
    start = time.perf_counter()
    rows = measure(size, device, batches, processes, on_row=lambda row: print(line(row), flush=True))
    minutes = (time.perf_counter() - start) / 60
    print(f"{len(rows)} level(s) in {minutes:.1f} min", file=sys.stderr, flush=True)
    if "out" in pairs:
        from ..store import atomic_write_text
        out = Path(pairs["out"])
        out.mkdir(parents=True, exist_ok=True)
        record = {"protocol": PROTOCOL[size], "size": size, "rounds_scaled_to": PROTOCOL_ROUNDS, "machine": where,
                  "load_after": round(os.getloadavg()[0], 2), "minutes": round(minutes, 1), "rows": rows}
        atomic_write_text(out / RECORD, json.dumps(record, indent=1))
        print(f"wrote {out / RECORD}", flush=True)
    if pairs.get("readme") == "yes":
        from ..paths import SPEED_PAGE, project_root
        from ..report.tables import replace_readme_block
        for page in ("README.md", SPEED_PAGE):          # the README's small table and the speed page's
            if not replace_readme_block(README_START, README_END, readme_block(records()), project_root() / page):
                print(f"bench: {page} has no runs-per-hour markers; nothing written there", file=sys.stderr)
    return rows
