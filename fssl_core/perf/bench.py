"""Speed benchmark: seconds per round of the same round trained three ways, printed as a table.

`python -m fssl_core bench [device=cpu|cuda] [cases=all|mnist_fedavg,...] [rounds=N] [table=yes] [readme=yes]`
  (no cases=)  the quick look: mnist_fedavg and mnist_fedsiam_d, one timed round each (rounds=1
               unless given), about 2½ minutes on one core of a 2-core x86 CPU;
  cases=all    every case in CASES, rounds=3 unless given (the speed page's table; tens of minutes or more on CPU);
  cases=a,b    the cases named, rounds=3 unless given;
  cases=runs_per_hour  runs per hour of FedSiam-D: solo processes, batches of runs, both mixed (perf/bench_batches.py);
  cases=host_draws  host µs per client-step of a cohort round's draws, client by client against all at once
               (perf/bench_draws.py);
  cases=run_split  a 10-round FedAvg run's seconds: imports, data, train, eval, store; vs the papers' loop (perf/bench_split.py).

It compares, in one process on one machine, (a) `loop`: the loop the FSSL papers' code uses (a torchvision
dataset with per-sample transforms, a DataLoader per client, a model copy and torch.optim.SGD); (b) `seq`:
this package's sequential trainer; (c) `cohort`: the cohort trainer (learning/cohort.py), beside the
device's FP32 matmul rate, the network alone at the cohort's shapes and the round's counted FLOPs, all
measured in the same process. On CUDA a round is timed over its first steps and scaled, within a budget
(CUDA_BUDGET_S). How each figure is taken, and why: docs/speed.md, "How bench measures".
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Callable

import torch
from torch.func import functional_call, vmap
from torch.utils.flop_counter import FlopCounterMode

from .bench_batches import main as runs_per_hour
from .bench_draws import main as host_draws
from .bench_split import main as run_split
from .bench_rounds import Prefix, engine_rounds, loop_rounds, loop_siamese_rounds, scale
from ..config import ConfigError
from ..run_config import RunConfig
from ..engine.federation import Federation
from ..models import grouped
from ..paths import SPEED_PAGE, project_root
from ..report.tables import replace_readme_block
from ..store import atomic_write_text

CASES = {
    "mnist_fedavg": dict(algorithm="fedavg", dataset="mnist"),
    "mnist_fedsiam_d": dict(algorithm="fedsiam_d", dataset="mnist"),
    "cifar_fedavg": dict(algorithm="fedavg", dataset="synthetic_cifar10"),
    "cifar_fedsiam_d": dict(algorithm="fedsiam_d", dataset="synthetic_cifar10"),
    # FedMatch with its own optimiser (momentum 0); rounds 1-4 hold no helper round (every 10th)
    "mnist_fedmatch": dict(algorithm="fedmatch", dataset="mnist", momentum=0.0),
    # the FedSiam authors' MNIST CNN (their dropout; the rows that measure their computation)
    "mnist_authors_fedsiam_d": dict(algorithm="fedsiam_d", dataset="mnist", model="cnn_mnist_authors"),
}
# A case whose cohort round is compared with another case's, timed interleaved in the same case (so a
# loaded machine slows both alike): FedMatch's round is to stay within 2× FedSiam-D's; the authors'
# network's round beside ours shows what their dropout costs in the cohort.
REFERENCE = {"mnist_fedmatch": "mnist_fedsiam_d", "mnist_authors_fedsiam_d": "mnist_fedsiam_d"}
# the default: the MNIST CNN's two cases, FedAvg (cheap) and FedSiam-D (the siamese work), one timed round each
QUICK_CASES, QUICK_ROUNDS, ROUNDS = ("mnist_fedavg", "mnist_fedsiam_d"), 1, 3
# On CUDA, steps timed per round of each trainer ("flops": of the FLOP-counted sequential round; "seconds": a
# timed round stops there if its steps are not done yet), and the seconds all cases may take (the module's
# docstring says why); None in `bench` means the device's default
CUDA_STEPS = {"loop": 200, "seq": 200, "cohort": 50, "flops": 20, "seconds": 3.0}
CUDA_BUDGET_S = 180.0
PROTOCOL = dict(partition="iid", labeled_ratio=0.1, labeled_repeats=3, clients=100, clients_per_round=10, local_epochs=5,
                batch_size=10, lr=0.01, momentum=0.9, weight_decay=1e-4, seed=1234)      # FedSiam Table 5, γ = 0.10


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# dense FP32 (non-tensor-core) peaks, TFLOP/s, from the vendors' data sheets (SXM parts)
FP32_PEAK_TFLOPS = {"H100": 67.0, "H200": 67.0, "A100": 19.5}


def round_flops(cfg: RunConfig, steps: int | None = None, prefixes: dict[str, Prefix] | None = None,
                seconds: float | None = None) -> float:
    """The FLOPs of one training round (round 1 of a fresh federation, sequential trainer); with
    `steps` or `seconds`, those of its first steps scaled to the round by its step count (put in
    `prefixes` under "flops")."""
    run = engine_rounds(cfg.replace(trainer="sequential"), steps, seconds)
    with FlopCounterMode(display=False) as counter:
        prefix = run(1)
    if prefix is not None and prefixes is not None:
        prefixes["flops"] = prefix
    return float(counter.get_total_flops()) * scale(prefix)


def device_peak_tflops(name: str) -> float | None:
    return next((peak for key, peak in FP32_PEAK_TFLOPS.items() if key in name), None)


def matmul_peak_gflops(device: str, n: int = 1024, repeats: int = 7) -> float:
    """What this core (or GPU) does on a dense FP32 matmul, GFLOP/s: 2n³ over the median of `repeats`
    timed n×n products after one warm-up, in this process and at its thread setting (bench's CPU
    cases run one thread, as runs do). Measured beside each case, so a case's fraction of it is a
    ratio of two figures taken under the same load (a noisy machine slows both)."""
    dev = torch.device(device)
    n = n if dev.type == "cpu" else 8192
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    seconds = []
    for i in range(repeats + 1):
        _sync(dev)
        start = time.perf_counter()
        torch.mm(a, b)
        _sync(dev)
        if i:                             # the first product warms caches and kernels up
            seconds.append(time.perf_counter() - start)
    return 2 * n ** 3 / statistics.median(seconds) / 1e9


def network_alone(fed: Federation, steps: int = 30) -> tuple[float, float]:
    """(FLOPs, median seconds) of one cohort step's network alone: the case's network, forward and
    backward, on `clients_per_round` clients × `batch_size` images with stacked parameters, vmapped as
    the cohort trainer calls it (grouped formulation where the network has one), with nothing around
    it (no augmentation, loss terms, optimiser or batching). Its share of the matmul peak is what the
    convolution and matmul kernels themselves deliver at these shapes, a ceiling on the cohort step's.
    FLOPs are counted on one client's plain network, times the clients (torch's FlopCounterMode counts
    a grouped convolution's backward as if it were not grouped)."""
    cfg, model = fed.cfg, fed.ctx.model
    clients, batch = cfg.clients_per_round, cfg.batch_size
    images = fed.data.train_x[:clients * batch].to(fed.ctx.device)
    x = fed.data.normalize(images).reshape(clients, batch, *images.shape[1:])
    with FlopCounterMode(display=False) as counter:
        model(x[0]).square().sum().backward()
    model.zero_grad(set_to_none=True)
    trained = {name for name, _ in model.named_parameters()}
    # parameters take gradients, buffers (BatchNorm's running statistics) not: batch_norm refuses a running
    # mean that requires grad (the CIFAR cases' networks, found on an H100)
    stacked = {name: t.detach().unsqueeze(0).repeat(clients, *[1] * t.dim()).requires_grad_(name in trained)
               for name, t in [*model.named_parameters(), *model.named_buffers()]}

    def loss(tensors: dict, images: torch.Tensor) -> torch.Tensor:
        return functional_call(model, tensors, (images,)).square().sum()

    def step() -> None:
        with grouped.grouped():
            vmap(loss, randomness="same")(stacked, x).sum().backward()
        for t in stacked.values():
            t.grad = None

    seconds = []
    for i in range(steps + 1):
        _sync(fed.ctx.device)
        start = time.perf_counter()
        step()
        _sync(fed.ctx.device)
        if i:                             # the first step warms kernels up
            seconds.append(time.perf_counter() - start)
    return clients * float(counter.get_total_flops()), statistics.median(seconds)


def of_peak(flops: float, seconds: float, peak_gflops: float) -> tuple[float, float]:
    """A round's achieved GFLOP/s and its percentage of the measured matmul peak."""
    achieved = flops / seconds / 1e9
    return round(achieved, 2), round(100 * achieved / peak_gflops, 1)


def loop_ratio_ceiling(loop_s: float, gflops: float, flops: float) -> float:
    """The loop ratio a round would reach running all its FLOPs at `gflops`: at the network-alone rate (no
    augmentation, loss, optimiser or batching around the network), the ceiling the kernels put on it; at
    the matmul peak, the ceiling the core puts on any trainer that does these FLOPs."""
    return round(loop_s / (flops / (gflops * 1e9)), 2)


def interleaved_seconds(trainers: dict[str, Callable[[int], Prefix | None]], rounds: int, device: torch.device,
                        deadline: float | None = None, prefixes: dict[str, Prefix] | None = None) -> dict[str, float]:
    """The median seconds of a round per trainer, rounds interleaved (round r of each trainer, then
    round r + 1 of each) so that the machine's slow and fast spells fall on all of them alike; the
    first round pays for warm-up and is not counted. A trainer that ran only its round's first steps
    returns (steps run, steps in the round): its seconds are scaled to the round, and the last such
    pair is put in `prefixes`. Past `deadline` (time.perf_counter) no further round is started once
    one has been timed."""
    seconds: dict[str, list[float]] = {name: [] for name in trainers}
    for r in range(1, rounds + 2):
        if r > 2 and deadline is not None and time.perf_counter() > deadline:
            break
        for name, run in trainers.items():
            start = time.perf_counter()
            prefix = run(r)
            _sync(device)
            if r > 1:
                seconds[name].append((time.perf_counter() - start) * scale(prefix))
            if prefix is not None and prefixes is not None:
                prefixes[name] = prefix
    return {name: statistics.median(s) for name, s in seconds.items()}


def case_config(case: str, device: str) -> RunConfig:
    """A case's run: the protocol, the case's own settings, rounds far beyond those timed and no
    evaluation (the figures are of training, not of the test pass)."""
    return RunConfig(device=device, rounds=10_000, eval_every=10_000, **{**PROTOCOL, **CASES[case]})


def measure_case(case: str, device: str, rounds: int, steps: dict[str, int] | None = None,
                 deadline: float | None = None) -> dict:
    """One case's row: seconds per round of each trainer (median of `rounds` interleaved rounds after a
    warm-up round, fewer past `deadline`), their ratios, and the round's counted FLOPs. `steps` (keys
    as CUDA_STEPS): time each round's first steps only and scale to the round; the row then holds
    "<run> of <in the round>" under loop_steps, seq_steps, cohort_steps and flops_steps."""
    cfg = case_config(case, device)
    steps = dict(steps or {})
    seconds = steps.pop("seconds", None)
    row = {"case": case, "device": device,
           "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
           "threads": torch.get_num_threads()}
    trainers = {}
    if cfg.algorithm == "fedavg":
        trainers["loop"] = loop_rounds(cfg, steps.get("loop"), seconds)
    elif cfg.algorithm.startswith("fedsiam") and cfg.dataset == "mnist":      # (FedMatch's own loop is not written out)
        trainers["loop"] = loop_siamese_rounds(cfg, steps.get("loop"), seconds)
    trainers["seq"] = engine_rounds(cfg.replace(trainer="sequential"), steps.get("seq"), seconds)
    trainers["cohort"] = engine_rounds(cfg.replace(trainer="cohort"), steps.get("cohort"), seconds)
    if case in REFERENCE:
        trainers["reference"] = engine_rounds(case_config(REFERENCE[case], device).replace(trainer="cohort"),
                                              steps.get("cohort"), seconds)
    row["matmul_gflops"] = round(matmul_peak_gflops(device), 1)
    network_flops, network_s = network_alone(Federation.build(cfg))     # timed beside the peak
    prefixes: dict[str, Prefix] = {}
    for name, seconds in interleaved_seconds(trainers, rounds, torch.device(device), deadline, prefixes).items():
        row[f"{name}_s"] = round(seconds, 4)
    row["cohort_vs_seq"] = round(row["seq_s"] / row["cohort_s"], 2)
    if "loop_s" in row:
        row["cohort_vs_loop"] = round(row["loop_s"] / row["cohort_s"], 2)
    if "reference_s" in row:
        row["reference"] = REFERENCE[case]
        row["cohort_vs_reference"] = round(row["cohort_s"] / row["reference_s"], 2)
    flops = round_flops(cfg, steps.get("flops"), prefixes, seconds)
    row.update({f"{name}_steps": f"{run} of {total}" for name, (run, total) in prefixes.items() if run < total})
    row["round_gflop"] = round(flops / 1e9, 2)
    row["cohort_tflops"] = round(flops / row["cohort_s"] / 1e12, 4)
    row["cohort_gflops"], row["cohort_of_matmul_pct"] = of_peak(flops, row["cohort_s"], row["matmul_gflops"])
    row["network_gflops"], row["network_of_matmul_pct"] = of_peak(network_flops, network_s, row["matmul_gflops"])
    if "loop_s" in row:
        row["loop_ratio_ceiling"] = loop_ratio_ceiling(row["loop_s"], row["network_gflops"], flops)
        # no trainer doing these FLOPs on this core goes beyond the loop ratio at the matmul peak itself
        row["loop_ratio_at_peak"] = loop_ratio_ceiling(row["loop_s"], row["matmul_gflops"], flops)
    peak = device_peak_tflops(row["device_name"])
    if peak is not None:
        row["peak_tflops"] = peak
        row["cohort_vs_flop_floor"] = round(row["cohort_s"] / (flops / (peak * 1e12)), 1)
    return row


def _check_cases(cases) -> None:
    """Refuse an unknown case before any case runs, not after an hour of the others."""
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        raise ConfigError(f"bench: cases={','.join(unknown)}: must be all or among {', '.join(CASES)}")


def bench(device: str = "cpu", rounds: int = ROUNDS, cases=tuple(CASES),
          on_row: Callable[[dict], None] | None = None, steps: dict[str, int] | None = None,
          budget_s: float | None = None) -> list[dict]:
    """The rows of `cases`, measured one case after another; `on_row` is called with each row as
    soon as its case is measured. `steps` and `budget_s` (None: the device's default, CUDA_STEPS and
    CUDA_BUDGET_S on CUDA, whole rounds and no limit on CPU) bound the time: a case starts only while
    the time left is at least the longest case so far; the cases left out have no row."""
    _check_cases(cases)
    if device == "cpu":
        torch.set_num_threads(1)     # as runs train (trainer.train_batch): one run per core
    steps = steps if steps is not None else CUDA_STEPS if device == "cuda" else None
    budget_s = budget_s if budget_s is not None else CUDA_BUDGET_S if device == "cuda" else None
    start = time.perf_counter()
    deadline = None if budget_s is None else start + budget_s
    bounds = {key: value for key, value in (("steps", steps), ("deadline", deadline)) if value is not None}
    rows, longest = [], 0.0
    for case in cases:
        began = time.perf_counter()
        if deadline is not None and deadline - began < max(longest, 1e-9):
            break
        rows.append(measure_case(case, device, rounds, **bounds))
        longest = max(longest, time.perf_counter() - began)
        if on_row is not None:
            on_row(rows[-1])
    return rows


# Rough cost of each case on one idle CPU thread, seconds: (building its trainers, one round of all its
# trainers, the FLOP-counted round, which FlopCounterMode slows 2-10×), timed 2026-11-24 on this
# project's 2-core x86 machine with bench's own functions; only for the "roughly how long" line
# printed before a bench starts. The CIFAR cases are not timed here (minutes a round on CPU).
CPU_COST_S = {
    "mnist_fedavg": (2, 1.8, 3.5),
    "mnist_fedsiam_d": (2, 37, 45),
    "mnist_fedmatch": (4, 45, 210),      # with its reference, FedSiam-D's cohort round, timed beside it
    "mnist_authors_fedsiam_d": (2, 121, 139),   # with its reference; measured on a loaded core (8.4 min at rounds=2)
}


def estimate_seconds(cases, rounds: int, device: str) -> tuple[float, list[str]]:
    """Rough wall seconds of a CPU bench of `cases` (a warm-up round and `rounds` timed rounds each, then
    the FLOP-counted round), and the cases with no estimate (on CUDA every case: none is recorded)."""
    known = [c for c in cases if c in CPU_COST_S] if device == "cpu" else []
    seconds = sum(build + (rounds + 1) * per_round + flop_round
                  for build, per_round, flop_round in (CPU_COST_S[c] for c in known))
    return seconds, [c for c in cases if c not in known]


def plan_line(cases, rounds: int, device: str) -> str:
    """What a bench will run and roughly for how long, printed before it starts."""
    seconds, unknown = estimate_seconds(cases, rounds, device)
    eta = f"roughly {seconds / 60:.1f} min on an idle x86 core" if seconds else ""
    if device == "cuda":
        steps = ", ".join(f"{name} {n}" for name, n in CUDA_STEPS.items() if name != "seconds")
        eta = (f"each round timed over its first steps ({steps}; at most {CUDA_STEPS['seconds']:g} s) and scaled to "
               "the round; "
               f"at most {CUDA_BUDGET_S:.0f} s in all")
    elif device != "cpu":
        eta = f"no time estimate on {device} (none recorded)"
    elif unknown:
        eta += (" plus " if eta else "") + f"an unknown time for {', '.join(unknown)}"
    return (f"bench: {', '.join(cases)} on {device}{', 1 thread' if device == 'cpu' else ''}; per case a warm-up "
            f"round and {rounds} timed round(s) of each trainer, then one FLOP-counted round; {eta}")


MARKDOWN_HEAD = ("| case | device | loop (a) s/round | sequential s/round | cohort s/round | cohort vs seq | "
                 "cohort vs loop | GFLOP/round | cohort TFLOP/s | cohort vs FLOP floor | matmul GFLOP/s (measured) | "
                 "cohort % of matmul | network alone % of matmul | cohort vs loop at the network-alone rate (at the matmul peak) | "
                 "cohort / reference's cohort |\n" + "|" + "---|" * 15)


def _timed(r: dict, name: str, key: str) -> str:
    """A figure, and where it was timed over a round's first steps only, how many ("200 of 3000 steps, scaled")."""
    value = r.get(key, "n/a")
    return f"{value} ({r[f'{name}_steps']} steps, scaled)" if f"{name}_steps" in r else f"{value}"


def markdown_row(r: dict) -> str:
    vs_loop = f"{r['cohort_vs_loop']}×" if "cohort_vs_loop" in r else "n/a"
    floor = f"{r['cohort_vs_flop_floor']}× (peak {r['peak_tflops']})" if "peak_tflops" in r else "n/a"
    reference = f"{r['cohort_vs_reference']}× ({r['reference']})" if "cohort_vs_reference" in r else "n/a"
    ceiling = f"{r['loop_ratio_ceiling']}× ({r['loop_ratio_at_peak']}×)" if "loop_ratio_ceiling" in r else "n/a"
    return (f"| {r['case']} | {r['device_name']} ({r['threads']} threads) | {_timed(r, 'loop', 'loop_s')} | "
            f"{_timed(r, 'seq', 'seq_s')} | {_timed(r, 'cohort', 'cohort_s')} | {r['cohort_vs_seq']}× | {vs_loop} | "
            f"{_timed(r, 'flops', 'round_gflop')} | "
            f"{r['cohort_tflops']} | {floor} | {r.get('matmul_gflops', 'n/a')} | {r.get('cohort_of_matmul_pct', 'n/a')} | "
            f"{r.get('network_of_matmul_pct', 'n/a')} | {ceiling} | {reference} |")


def summary_line(r: dict) -> str:
    """A case in one short line: each trainer's seconds per round and the cohort's speed-up over the others."""
    loop = f"loop {r['loop_s']}, " if "loop_s" in r else ""
    vs_loop = f", {r['cohort_vs_loop']}× the loop" if "cohort_vs_loop" in r else ""
    return (f"{r['case']} on {r['device_name']} ({r['threads']} thread(s)): s/round {loop}sequential {r['seq_s']}, "
            f"cohort {r['cohort_s']} (cohort {r['cohort_vs_seq']}× the sequential{vs_loop})")


def markdown(rows: list[dict]) -> str:
    return "\n".join([MARKDOWN_HEAD] + [markdown_row(r) for r in rows])


README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"


def cpu_name() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


CPU_RECORD = "measurements/bench-cpu.json"      # the record `bench readme=yes` writes on a CPU; the page's block is its rendering


def record(rows: list[dict], device: str, options: str, load_before: float, load_after: float) -> dict:
    """What a `bench readme=yes` measured and on what: the rows, the command, the machine, and its load (the
    1-minute load average before and after, beside the core count: times on a loaded machine run long)."""
    machine = (torch.cuda.get_device_name() if device == "cuda"
               else f"{cpu_name()} ({os.cpu_count()} cores), {torch.get_num_threads()} thread(s)")
    command = " ".join(["python -m fssl_core bench", f"device={device}"] + ([options] if options else []))
    return {"date": time.strftime("%Y-%m-%d"), "command": command, "machine": machine, "torch": torch.__version__,
            "cores": os.cpu_count(), "load_before": round(load_before, 2), "load_after": round(load_after, 2),
            "rows": rows}


def readme_block(found: dict) -> str:
    """The measured table for the speed page, rendered from a record (`record`) with what produced it."""
    load = (f"1-minute load average {found['load_before']:.2f} before and {found['load_after']:.2f} after, "
            f"on {found['cores']} cores")
    return (f"Measured {found['date']} by `{found['command']}` on {found['machine']} (torch {found['torch']}; "
            f"{load}; record `{CPU_RECORD}`):\n\n{markdown(found['rows'])}\n")


def main(pairs: dict[str, str]) -> None:
    if pairs.get("cases") == "runs_per_hour":      # many runs at once: its own options (perf/bench_batches.py)
        runs_per_hour(pairs)
        return
    if pairs.get("cases") == "run_split":          # a run's time by part, against the papers' loop (perf/bench_split.py)
        run_split(pairs, PROTOCOL, cpu_name())
        return
    if pairs.get("cases") == "host_draws":         # host µs per client-step of a round's draws (perf/bench_draws.py)
        load_before = os.getloadavg()[0]
        rows, options = host_draws(pairs)
        if "out" in pairs:
            found = record(rows, pairs.get("device", "cpu"), options, load_before, os.getloadavg()[0])
            atomic_write_text(Path(pairs["out"]), json.dumps(found, indent=1, sort_keys=True) + "\n")
        return
    unknown = set(pairs) - {"device", "rounds", "cases", "table", "readme"}
    if unknown:
        raise ConfigError(f"bench: unknown option(s) {', '.join(sorted(unknown))}: "
                         "allowed are device, rounds, cases, table, readme")
    for flag in ("table", "readme"):
        if pairs.get(flag, "no") not in ("no", "yes"):
            raise ConfigError(f"bench: {flag}={pairs[flag]!r}: must be yes or no")
    table = pairs.get("table") == "yes" or pairs.get("readme") == "yes"
    if "cases" not in pairs:
        cases, rounds = QUICK_CASES, QUICK_ROUNDS
    else:
        cases, rounds = (tuple(CASES) if pairs["cases"] == "all" else tuple(pairs["cases"].split(","))), ROUNDS
    if "rounds" in pairs:
        if not pairs["rounds"].isdigit() or int(pairs["rounds"]) < 1:
            raise ConfigError(f"bench: rounds={pairs['rounds']!r}: must be an integer >= 1")
        rounds = int(pairs["rounds"])
    _check_cases(cases)
    device = pairs.get("device", "cpu")
    print(plan_line(cases, rounds, device), flush=True)
    if table:
        print(MARKDOWN_HEAD, flush=True)
    start, load_before = time.perf_counter(), os.getloadavg()[0]
    rows = bench(device, rounds, cases, on_row=lambda row: print((markdown_row if table else summary_line)(row), flush=True))
    left_out = [case for case in cases if case not in {row["case"] for row in rows}]
    if left_out:
        print(f"bench: the time budget is spent; not measured: {', '.join(left_out)}", flush=True)
    if table:
        print(f"\n{len(rows)} case(s) in {(time.perf_counter() - start) / 60:.1f} min:\n")
        print(markdown(rows))
    else:
        print(f"{len(rows)} case(s) in {(time.perf_counter() - start) / 60:.1f} min; "
              "table=yes prints every figure (FLOPs, matmul peak, the reference's ratio)")
    if pairs.get("readme") == "yes":
        if device != "cpu":
            raise ConfigError(f"bench: readme=yes with device={device!r}: the speed page's measured block is the "
                              "CPU's (a GPU's tables come from gpu-check's records under measurements/)")
        options = f"cases={pairs.get('cases', ','.join(cases))} rounds={rounds}"
        found = record(rows, device, options, load_before, os.getloadavg()[0])
        atomic_write_text(project_root() / CPU_RECORD, json.dumps(found, indent=1, sort_keys=True) + "\n")
        replace_readme_block(README_START, README_END, readme_block(found), project_root() / SPEED_PAGE)
