"""Runs per hour: many small federations at once, as processes, as one batch (engine/trainer.py), or both.

`python -m fssl_core bench cases=runs_per_hour [device=cpu|cuda] [batches=4,16] [processes=2] [mixes=2x4]
 [size=full|tiny] [out=DIR] [readme=yes]`

FedSiam-D at FedSiam's Table 2 protocol (RunConfig's defaults on MNIST: K = 100, 10 clients a round, E = 5,
B = 10, a test-set evaluation and a checkpoint every round). A level is p processes spawned together, each
training a batch of b runs in lockstep (trainer.train_batch) into a run store in a temporary folder, so the
store's writes are paid and counted. Levels, in this order: the baseline 1 × 1 (one run alone: every ratio's
denominator, and the level a timeout must not lose), batches 1 × b, processes p × 1, mixes p × b. Round 1 is a
warm-up; round 2 is timed, every process starting it together; runs per hour = p·b × 3600 / (round-2 seconds
× 50 rounds), round 2's store writes included. Per level beside it: a process's peak memory over round 2
(CUDA: max_memory_allocated; CPU: its peak resident set, VmHWM, interpreter and data included) against the
memory model's bytes for its batch (trainer.run_bytes, by which trainer.batch_size caps a batch), and the
store's writes of round 2 (files, bytes, seconds). size=tiny is the tests' case (FedAvg on 5,000 MNIST images,
10 clients, 2 a round): seconds, not a measurement of the protocol.
out=DIR writes DIR/runs_per_hour.json after every level ("complete": false until the last, so a timeout keeps
the levels done); readme=yes redraws the runs-per-hour table of README.md and docs/speed.md from every such
record under measurements/.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import platform
import queue
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import torch

from ..config import ConfigError
from ..engine.trainer import batch_size, network_size, run_bytes, train_batch
from ..executors import sigterm_as_interrupt
from ..executors.local import die_with_parent
from ..paths import SPEED_PAGE, project_root
from ..run_config import RunConfig
from ..store import RunStore, atomic_write_text
from ..store.files import tally_writes

PROTOCOL_ROUNDS = 50
PROTOCOL = {"full": dict(dataset="mnist", algorithm="fedsiam_d"),
            "tiny": dict(dataset="mnist", algorithm="fedavg", clients=10, clients_per_round=2, local_epochs=1,
                         resplit_train=5_000, resplit_test=500)}
# the levels measured when none are given, beside the baseline 1 × 1; mixes are (processes, batch)
LEVELS = {"cpu": {"batches": (4, 16), "processes": (2,), "mixes": ((2, 2),)},
          "cuda": {"batches": (4, 16, 64), "processes": (16,), "mixes": ((4, 16),)}}
LEVEL_TIMEOUT_S = 1800.0       # a level's processes still silent then are stopped and the level fails
PEAK_KIND = {"cuda": "torch.cuda.max_memory_allocated of a process over round 2 (reset at round 1's end), bytes; "
                     "data, evaluation and the allocator's blocks included",
             "cpu": "VmHWM of a process (/proc/self/status: its peak resident set, interpreter, torch and data "
                    "included) over round 2 (reset at round 1's end, /proc/self/clear_refs), bytes; None off Linux"}


def configs(size: str, device: str, count: int) -> list[RunConfig]:
    """`count` runs of the protocol that differ in seed only (a tiny run re-splits by seed, so its batch
    keeps seed 1 and varies the split instead)."""
    base = RunConfig(device=device, rounds=2, **PROTOCOL[size])
    if base.resplit_train:
        return [base.replace(labeled_ratio=round(0.1 + 0.01 * i, 2)) for i in range(count)]
    return [base.replace(seed=1 + i) for i in range(count)]


def plan_levels(batches, processes, mixes) -> list[tuple[str, int, int]]:
    """(way, processes, batch) in measuring order: the baseline 1 × 1, batches, processes, mixes; a level
    given twice is measured once, where it first comes."""
    levels = ([("baseline", 1, 1)] + [("batch", 1, b) for b in batches] + [("processes", p, 1) for p in processes]
              + [("mix", p, b) for p, b in mixes])
    seen: set[tuple[int, int]] = set()
    return [(way, p, b) for way, p, b in levels if not ((p, b) in seen or seen.add((p, b)))]


def memory_model(cfg: RunConfig) -> dict:
    """What the trainer's memory model says of `cfg`'s runs: its network's parameters and saved elements per
    image (trainer.network_size), the bytes a run adds to a batch (trainer.run_bytes) and, on CUDA, the batch
    trainer.batch_size allows on this device's memory."""
    parameters, activations = network_size(cfg)
    model = {"parameters": parameters, "saved_elements_per_image": activations,
             "bytes_per_run": run_bytes(cfg, parameters, activations)}
    if cfg.device == "cuda":
        memory = torch.cuda.get_device_properties(0).total_memory
        model.update(memory_bytes=memory, batch_cap=batch_size(cfg, parameters, activations, memory))
    return model


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _reset_peak(device: str) -> str:
    """Start a process's peak memory afresh, at round 1's end: the memory model is of a round's tensors, and
    building federations passes a larger transient on the CPU (loading MNIST: 1.2 GiB, then the tiny split).
    What the peak then spans: "round 2", or "process" where the reset is refused."""
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        return "round 2"
    try:
        Path("/proc/self/clear_refs").write_text("5")        # Linux: VmHWM back to the resident set now
        return "round 2"
    except OSError:
        return "process"


def _peak(device: str) -> dict:
    if device == "cuda":
        return {"peak_bytes": torch.cuda.max_memory_allocated(), "peak_reserved_bytes": torch.cuda.max_memory_reserved()}
    # VmHWM, not getrusage's ru_maxrss: a spawned process starts with its parent's ru_maxrss (Linux keeps it over
    # fork and exec: 2.4 GiB in a child that had done nothing, measured), VmHWM with its own (14 MiB)
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:                    # not Linux: no peak
        return {"peak_bytes": None}
    kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return {"peak_bytes": None if kib is None else kib * 1024}


def _level_process(batch: list[RunConfig], root: str, barrier, out) -> None:
    """One process of a level: trains `batch` for its 2 rounds into the store at `root`, waiting after
    round 1 for the level's other processes; puts round 2's seconds and writes, the whole's writes and
    the process's peak memory."""
    die_with_parent()
    device = batch[0].device
    done, timed, held = {1: 0, 2: 0}, {}, ExitStack()

    def after_round(cfg: RunConfig, r: int) -> None:
        done[r] += 1
        if done[r] < len(batch):         # the batch's round ends with its last run's record
            return
        _sync(device)
        if r == 1:
            barrier.wait()
            timed["peak_over"] = _reset_peak(device)
            timed["round"], timed["start"] = held.enter_context(tally_writes()), time.perf_counter()
        else:
            timed["seconds"] = time.perf_counter() - timed["start"]
            held.close()
    with tally_writes() as whole:
        train_batch(batch, RunStore(root), progress=False, after_round=after_round)
    second = timed["round"]
    out.put({"round_s": timed["seconds"], "writes": second.writes, "bytes": second.bytes,
             "write_s": second.seconds, "by_name": second.by_name, "level_writes": whole.writes,
             "level_bytes": whole.bytes, "peak_over": timed["peak_over"], **_peak(device)})


def run_level(batches: list[list[RunConfig]], root: Path, timeout: float = LEVEL_TIMEOUT_S) -> list[dict]:
    """Each of `batches` trained by a spawned process of its own into the store at `root`, all starting
    round 2 together: what each process measured (_level_process)."""
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(len(batches)), context.Queue()
    workers = [context.Process(target=_level_process, args=(batch, str(root), barrier, out), daemon=True)
               for batch in batches]
    for w in workers:
        w.start()
    found, deadline = [], time.monotonic() + timeout
    try:
        while len(found) < len(workers):
            try:
                found.append(out.get(timeout=1.0))
            except queue.Empty:
                failed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
                if failed:        # a process that died leaves the others waiting at the barrier
                    raise RuntimeError(f"runs per hour: a process of {len(workers)} x {len(batches[0])} ended with "
                                       f"exit code {failed[0]} (its traceback is above)") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"runs per hour: {len(workers)} x {len(batches[0])} not done in {timeout:.0f} s")
        return found
    finally:
        cut = len(found) < len(workers)      # an error or an interrupt: the others would wait at the barrier
        for w in workers:
            if cut:
                w.terminate()
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()


def runs_per_hour(count: int, round_seconds: float, rounds: int = PROTOCOL_ROUNDS) -> float:
    return count * 3600.0 / (round_seconds * rounds)


def level_row(way: str, processes: int, batch: int, found: list[dict], bytes_per_run: int,
              baseline: dict | None) -> dict:
    """A level's row from its processes' figures: the slowest process's round (the level's runs finish when
    it does), the largest process's peak beside the memory model's bytes for a process's batch, round 2's
    store writes of all processes (seconds: the most one process spent writing)."""
    seconds, peaks = max(f["round_s"] for f in found), [f["peak_bytes"] for f in found]
    row = {"way": way, "processes": processes, "batch": batch, "runs": processes * batch, "round_s": round(seconds, 3),
           "runs_per_hour": round(runs_per_hour(processes * batch, seconds), 1),
           "peak_bytes": None if None in peaks else max(peaks), "peak_over": found[0]["peak_over"],
           "model_bytes": batch * bytes_per_run,
           "store_writes": sum(f["writes"] for f in found), "store_bytes": sum(f["bytes"] for f in found),
           "store_write_s": round(max(f["write_s"] for f in found), 4),
           "store_files": {name: [sum(f["by_name"].get(name, [0, 0])[i] for f in found) for i in (0, 1)]
                           for name in sorted({n for f in found for n in f["by_name"]})},
           "store_writes_level": sum(f["level_writes"] for f in found),
           "store_bytes_level": sum(f["level_bytes"] for f in found)}
    if "peak_reserved_bytes" in found[0]:
        row["peak_reserved_bytes"] = max(f["peak_reserved_bytes"] for f in found)
    baseline = baseline or row
    row["vs_one_run"] = round(row["runs_per_hour"] / baseline["runs_per_hour"], 2)
    if batch > 1 and None not in (row["peak_bytes"], baseline["peak_bytes"]):
        # what each run beyond the first adds to a process, measured, against bytes_per_run
        row["peak_per_added_run"] = (row["peak_bytes"] - baseline["peak_bytes"]) // (batch - 1)
    return row


def measure(size: str = "full", device: str = "cpu", batches=None, processes=None, mixes=None,
            on_row=None) -> list[dict]:
    """One row per level of plan_levels (LEVELS' for those not given), each measured in a store of its own
    that is removed after it; `on_row(row)` as soon as a level is measured."""
    defaults = LEVELS[device]
    levels = plan_levels(defaults["batches"] if batches is None else batches,
                         defaults["processes"] if processes is None else processes,
                         defaults["mixes"] if mixes is None else mixes)
    bytes_per_run = memory_model(configs(size, device, 1)[0])["bytes_per_run"]
    rows: list[dict] = []
    with sigterm_as_interrupt():        # a `timeout` stops the level's processes and removes its store
        for way, p, b in levels:
            runs = configs(size, device, p * b)
            with tempfile.TemporaryDirectory(prefix="fssl-runs-per-hour-") as root:
                found = run_level([runs[i * b:(i + 1) * b] for i in range(p)], Path(root))
            rows.append(level_row(way, p, b, found, bytes_per_run, rows[0] if rows else None))
            if on_row is not None:
                on_row(rows[-1])
    return rows


def line(row: dict) -> str:
    mib = 2 ** 20
    peak = "n/a" if row["peak_bytes"] is None else f"{row['peak_bytes'] / mib:.0f} MiB"
    return (f"{row['way']:>9} {row['processes']:>2} x {row['batch']:>2}: round {row['round_s']:8.2f} s, "
            f"{row['runs_per_hour']:8.1f} runs/h, {row['vs_one_run']:.2f}x one run alone; peak "
            f"{peak} a process (model {row['model_bytes'] / mib:.0f} MiB for its batch); "
            f"round 2 wrote {row['store_writes']} files, {row['store_bytes'] / mib:.1f} MiB in {row['store_write_s']:.2f} s")


def _levels(text: str, option: str) -> tuple[int, ...]:
    parts = text.split(",")
    if not all(p.isascii() and p.isdigit() and int(p) >= 1 for p in parts):
        raise ConfigError(f"bench: {option}={text!r}: must be run counts, e.g. {option}=1,4,16")
    return tuple(int(p) for p in parts)


def _mixes(text: str) -> tuple[tuple[int, int], ...]:
    pairs = [part.split("x") for part in text.split(",")]
    if not all(len(pair) == 2 and all(n.isascii() and n.isdigit() and int(n) >= 1 for n in pair) for pair in pairs):
        raise ConfigError(f"bench: mixes={text!r}: must be processes x batch pairs, e.g. mixes=4x16,2x8")
    return tuple((int(p), int(b)) for p, b in pairs)


RECORD = "runs_per_hour.json"
README_START, README_END = "<!-- runs-per-hour:start -->", "<!-- runs-per-hour:end -->"


def machine(device: str) -> dict:
    """What the record says of where it was measured: the device's name, cores and the load before."""
    name = torch.cuda.get_device_name() if device == "cuda" else (platform.processor() or platform.machine())
    return {"device": device, "name": name, "cpu_count": os.cpu_count(), "torch": torch.__version__,
            "load_before": round(os.getloadavg()[0], 2)}


def records(root: Path | None = None) -> list[dict]:
    """Every runs-per-hour record under measurements/, oldest folder first."""
    root = root or project_root() / "measurements"
    return [json.loads(p.read_text()) | {"folder": p.parent.name} for p in sorted(root.glob(f"*/{RECORD}"))]


def readme_block(found: list[dict]) -> str:
    """The README's table: per record of the protocol (size full), one run alone in runs per hour, and each
    level of solo processes and of batches as runs at once: runs per hour (× one run alone)."""
    lines = ["| device | one run alone | solo processes at once | one process, a batch of runs | record |",
             "|---|---|---|---|---|"]
    for rec in (r for r in found if r["size"] == "full" and r["rows"]):     # a record cut before its baseline: no row
        rows, m = rec["rows"], rec["machine"]
        cells = ["; ".join(f"{r['runs']}: {r['runs_per_hour']:.1f}/h ({r['vs_one_run']:.2f}×)" for r in rows
                           if r["way"] == way) for way in ("processes", "batch")]
        lines.append(f"| {m['name']} ({m['device']}, {m['cpu_count']} cores, torch {m['torch']}) | "
                     f"{rows[0]['runs_per_hour']:.1f} runs/h | {cells[0]} | {cells[1]} | `measurements/{rec['folder']}/` |")
    return "\n".join(lines)


def main(pairs: dict[str, str]) -> list[dict]:
    unknown = set(pairs) - {"cases", "device", "batches", "processes", "mixes", "size", "out", "readme"}
    if unknown:
        raise ConfigError(f"bench cases=runs_per_hour: unknown option(s) {', '.join(sorted(unknown))}: "
                         "allowed are device, batches, processes, mixes, size, out, readme")
    if pairs.get("readme", "no") not in ("yes", "no"):
        raise ConfigError(f"bench: readme={pairs['readme']!r}: must be yes or no")
    device, size = pairs.get("device", "cpu"), pairs.get("size", "full")
    if device not in LEVELS:
        raise ConfigError(f"bench: device={device!r}: must be cpu or cuda")
    if size not in PROTOCOL:
        raise ConfigError(f"bench: size={size!r}: must be full or tiny")
    batches = _levels(pairs["batches"], "batches") if "batches" in pairs else LEVELS[device]["batches"]
    processes = _levels(pairs["processes"], "processes") if "processes" in pairs else LEVELS[device]["processes"]
    mixes = _mixes(pairs["mixes"]) if "mixes" in pairs else LEVELS[device]["mixes"]
    levels = plan_levels(batches, processes, mixes)
    print(f"runs per hour, {PROTOCOL[size]['algorithm']} ({size}) on {device}, processes x batch: "
          f"{', '.join(f'{p}x{b}' for _, p, b in levels)}; each level spawns its processes, a warm-up round, "
          "then one timed round", flush=True)
    cfg = configs(size, device, 1)[0]
    record = {"protocol": PROTOCOL[size], "size": size, "rounds_scaled_to": PROTOCOL_ROUNDS, "machine": machine(device),
              "checkpoint_every": cfg.checkpoint_every, "memory_model": memory_model(cfg), "peak": PEAK_KIND[device],
              "levels": [f"{p}x{b}" for _, p, b in levels], "complete": False, "minutes": 0.0, "rows": []}
    out = Path(pairs["out"]) if "out" in pairs else None
    start = time.perf_counter()

    def keep(row: dict | None) -> None:
        """The record as it stands, written over the last (atomically: a kill mid-write leaves the last)."""
        if row is not None:
            print(line(row), flush=True)
            record["rows"].append(row)
        record.update(minutes=round((time.perf_counter() - start) / 60, 2), load_after=round(os.getloadavg()[0], 2),
                      complete=len(record["rows"]) == len(levels))
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(out / RECORD, json.dumps(record, indent=1))
    keep(None)
    try:
        rows = measure(size, device, batches, processes, mixes, on_row=keep)
    except KeyboardInterrupt:          # Ctrl-C, or SIGTERM from a `timeout`
        held = f"; {out / RECORD} holds them" if out is not None else ""
        print(f"\n[bench] interrupted after {len(record['rows'])} of {len(levels)} level(s){held}", file=sys.stderr)
        raise SystemExit(130) from None
    print(f"{len(rows)} level(s) in {record['minutes']:.1f} min" + (f"; wrote {out / RECORD}" if out else ""),
          file=sys.stderr, flush=True)
    if pairs.get("readme") == "yes":
        # pandas (report.tables), kept out of the spawned levels: their resident memory is measured (_peak)
        from ..report.tables import replace_readme_block
        for page in ("README.md", SPEED_PAGE):          # the README's small table and the speed page's
            if not replace_readme_block(README_START, README_END, readme_block(records()), project_root() / page):
                print(f"bench: {page} has no runs-per-hour markers; nothing written there", file=sys.stderr)
    return rows
