"""A bounded check of this package on a lent GPU, made to be run once under a hard time limit.

`python -m fssl_core gpu-check [device=cuda|cpu] [size=full|tiny] [out=DIR] [budget=SECONDS] [steps=a,b]`
(defaults: device=cuda; size=full on CUDA, tiny on CPU; out=./gpu-check; budget=360 seconds in all;
every step, or those named: the correctness steps can run beside other GPU work, the timing steps not).

Five steps, each writing its section of the report as it measures: `environment` (versions and the
precision flags a built Federation leaves), `cohort` (the cohort trainer gives the sequential trainer's
updates on the device), `resume` (a SIGKILLed run resumes to an uninterrupted run's numbers), `bench`
(perf/bench.py's cases) and `throughput` (runs per hour at 1 to 16 concurrent runs). Each step runs until
its cumulative share of the budget (SHARES) has elapsed, and a watchdog stops the check GRACE_S past it.
The report, out/gpu_check.json and .md, is rewritten whole after every row, so a check cut at any point
leaves what it measured; its `gpu_measurements` are what engine/gpu_defaults.py reads. Each step's
protocol and the budget's rules: docs/gpu-check.md.
"""
from __future__ import annotations

import gc
import math
import os
import shutil
import subprocess
import threading
import time
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import torch

from . import bench
from .. import __version__
from ..algorithms.fedmatch import FedMatch
from ..config import ConfigError
from ..engine.federation import DeviceUnavailable, Federation

from ..run_config import RunConfig
from .gpu_check_report import GRACE_S, Check, Step
from .gpu_check_runs import resume_step, throughput_step

SHARES = {"environment": 0.05, "cohort": 0.15, "resume": 0.15, "bench": 0.35, "throughput": 0.30}
PARAMETERS = {"device": ("cuda", "cpu"), "size": ("full", "tiny"), "out": None, "budget": None, "steps": None}

# tests/test_cohort.py's configurations: 600 clients of 100 MNIST samples; Non-IID-III gives 60 of them
# 55 labels and the others 5, so a round's clients walk different numbers of steps and batches of
# different shapes (seed 13: round 1 draws rich and poor clients)
COHORT_SMALL = dict(dataset="mnist", partition="noniid3", labeled_ratio=0.1, clients=600, rich_clients=60,
                    clients_per_round=6, rounds=2, local_epochs=1, batch_size=10, seed=13)
COHORT_SERVER = dict(partition="server_dirichlet", rich_clients=10, server_labeled=600, dirichlet_alpha=10.0)
# (algorithm, trained role, settings); `_helper_interval` is not a RunConfig field but FedMatch.helper_interval
COHORT_CASES = [
    ("fedavg", "model", {}), ("fedsiam_d", "online", {}), ("fedfixmatch", "model", {}),
    ("fedsem", "model", {"fedsem_phase1_fraction": 0.5}),      # round 2 is phase 2 (pseudo-labels)
    # FedMix and FedCon learn from labels at the server: a Dirichlet split gives clients of unequal sizes
    ("fedmix", "model", COHORT_SERVER), ("fedcon", "model", COHORT_SERVER),
    # helpers in round 2: with seed 56 one client of round 2 was seen in round 1 (its helper slots
    # filled), the others not (empty slots); momentum 0, FedMatch's own optimiser (under 0.9 its L2
    # spring rings and amplifies the trainers' float rounding over a client's steps)
    ("fedmatch", "psi", {"seed": 56, "momentum": 0.0, "_helper_interval": 2}),
    # the authors' network: its grouped formulation draws each client's dropout masks (conv2's maps,
    # fc1's outputs) from the client's own stream, as its sequential forward does
    ("fedsiam_d", "online", {"model": "cnn_mnist_authors"})]
TINY_COHORT = (0, 1, 4)           # fedavg, fedsiam_d, fedmix: one of each trainer path, about 10 s on a CPU core
BENCH_TINY = dict(cases=("mnist_fedavg",), rounds=1, steps={"loop": 4, "seq": 4, "cohort": 2, "flops": 2})


def cohort_config(algorithm: str, extra: dict, device: str) -> tuple[RunConfig, int | None]:
    """A COHORT_CASES configuration and its FedMatch helper interval (None: the class's own). No test-set
    pass but the last round's (the check compares trained tensors)."""
    extra = dict(extra)
    interval = extra.pop("_helper_interval", None)
    return RunConfig(algorithm=algorithm, device=device, eval_every=1000, **{**COHORT_SMALL, **extra}), interval


@contextmanager
def helper_interval(interval: int | None):
    saved = FedMatch.helper_interval
    FedMatch.helper_interval = saved if interval is None else interval
    try:
        yield
    finally:
        FedMatch.helper_interval = saved


def _largest_difference(a: dict, b: dict) -> tuple[float, str]:
    diffs = {k: float((a[k].double() - b[k].double()).abs().max()) if a[k].numel() else 0.0 for k in a}
    worst = max(diffs, key=diffs.get)
    return diffs[worst], worst


def cohort_difference(algorithm: str, role: str, extra: dict, device: str) -> dict:
    """Two rounds with each trainer; the largest |sequential − cohort| over the trained role's tensors.
    Where they differ beyond the tolerance, the sequential trainer runs a second time: a repeat that
    differs too points at a kernel that is not deterministic on the device, one that does not at the
    trainers themselves (`sequential_repeat_diff`)."""
    cfg, interval = cohort_config(algorithm, extra, device)

    def trained(trainer: str) -> dict:
        fed = Federation.build(cfg.replace(trainer=trainer))
        state = fed.initial_state()
        for r in (1, 2):
            state, _ = fed.run_round(state, r)
        return state[role]

    with helper_interval(interval):
        seq, coh = trained("sequential"), trained("cohort")
        passed = all(torch.allclose(seq[k], coh[k], atol=2e-6, rtol=1e-5) for k in seq)
        repeat = None if passed else _largest_difference(seq, trained("sequential"))[0]
    largest, worst = _largest_difference(seq, coh)
    return {"algorithm": algorithm, "role": role, "settings": ", ".join(f"{k}={v}" for k, v in extra.items()) or "-",
            "max_abs_diff": largest, "worst_tensor": worst, "pass": passed, "sequential_repeat_diff": repeat}


def environment(device: str) -> dict:
    """Where the check ran; the flags read after a Federation is built, as runs train under them."""
    Federation.build(RunConfig(device=device, dataset="mnist"))
    cuda = device == "cuda"
    driver = None
    if cuda and shutil.which("nvidia-smi"):
        try:
            driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except (subprocess.SubprocessError, OSError, IndexError):
            driver = None
    return {"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"), "device": device,
            "device_name": torch.cuda.get_device_name() if cuda else "cpu",
            "device_memory_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1) if cuda else None,
            "driver_version": driver, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cudnn_deterministic": torch.backends.cudnn.deterministic, "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "fssl_core": __version__}


def environment_step(step: Step, device: str, size: str) -> None:
    facts = environment(device)
    step.set(**facts)
    step.progress(1, 1, f"{facts['device_name']}, torch {facts['torch']}, CUDA {facts['cuda']}, cuDNN {facts['cudnn']}, "
                        f"TF32 matmul {facts['tf32_matmul']}")


def cohort_step(step: Step, device: str, size: str) -> None:
    cases = COHORT_CASES if size == "full" else [COHORT_CASES[i] for i in TINY_COHORT]
    step.set(configurations=f"{len(cases)} of the {len(COHORT_CASES)} of tests/test_cohort.py",
             rounds=2, tolerance="torch.allclose(atol=2e-6, rtol=1e-5), the CPU test's")
    longest = 0.0
    for i, (algorithm, role, extra) in enumerate(cases, 1):
        if not step.affords(longest):
            step.cut(f"not run: {', '.join(a for a, _, _ in cases[i - 1:])}")
            return
        began = time.perf_counter()
        row = cohort_difference(algorithm, role, extra, device)
        row["seconds"] = round(time.perf_counter() - began, 2)
        longest = max(longest, row["seconds"])
        step.record(row)
        step.progress(i, len(cases), f"{algorithm} {role} {row['settings']}: max |Δ| {row['max_abs_diff']:.2e}, "
                                     f"{'pass' if row['pass'] else 'FAIL'}")


def bench_step(step: Step, device: str, size: str) -> None:
    if size == "full":
        cases, rounds, steps = tuple(bench.CASES), bench.ROUNDS, bench.CUDA_STEPS
    else:
        cases, rounds, steps = BENCH_TINY["cases"], BENCH_TINY["rounds"], BENCH_TINY["steps"]
    step.set(cases=list(cases), rounds=rounds,
             steps_timed_per_round=", ".join(f"{name} {n}" for name, n in steps.items()) + " (scaled to the round; "
                                   "seconds: a round's time limit)")
    count = iter(range(1, len(cases) + 1))

    def on_row(row: dict) -> None:
        step.record(row)
        step.progress(next(count), len(cases), f"{row['case']}: cohort {row['cohort_s']} s/round, "
                                               f"sequential {row['seq_s']}, loop {row.get('loop_s', 'n/a')}")
    threads = torch.get_num_threads()
    try:
        rows = bench.bench(device, rounds, cases, on_row=on_row, steps=steps, budget_s=max(step.left(), 0.0))
    finally:
        torch.set_num_threads(threads)
    left_out = [case for case in cases if case not in {row["case"] for row in rows}]
    if left_out:
        step.cut(f"not measured within the budget: {', '.join(left_out)}")


STEPS: dict[str, Callable[[Step, str, str], None]] = {
    "environment": environment_step, "cohort": cohort_step, "resume": resume_step, "bench": bench_step,
    "throughput": throughput_step}


def run_check(device: str = "cuda", size: str | None = None, out: str | Path = "gpu-check", budget: float = 360.0,
              steps: tuple[str, ...] = tuple(SHARES)) -> dict:
    """Run `steps` (their shares renormalised over those chosen) within `budget` seconds; the report."""
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailable("gpu-check device=cuda: no CUDA device is available here (torch.cuda.is_available() "
                                "is False); use device=cpu")
    size = size or ("full" if device == "cuda" else "tiny")
    total = sum(SHARES[name] for name in steps)
    check = Check(Path(out), {"command": f"python -m fssl_core gpu-check device={device} size={size} budget={budget:g}",
                              "device": device, "size": size, "out": str(out), "budget_s": budget, "grace_s": GRACE_S,
                              "shares": {name: round(budget * SHARES[name] / total, 1) for name in steps}})
    watchdog = threading.Timer(budget + GRACE_S, check.overrun)
    watchdog.daemon = True
    watchdog.start()
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)     # as runs train on a CPU (trainer.train_batch), and bench times them
    cumulative = 0.0
    try:
        for index, name in enumerate(steps, 1):
            cumulative += budget * SHARES[name] / total
            step = Step(check, name, check.start + cumulative, budget * SHARES[name] / total)
            print(f"[gpu-check {check.elapsed():.0f}/{budget:.0f} s] step {index}/{len(steps)} {name}: budget "
                  f"{step.section['budget_s']:.0f} s", flush=True)
            try:
                STEPS[name](step, device, size)
            except Exception as err:     # recorded; the next step runs
                with check.lock:
                    step.section["status"] = "error"
                    step.section["error"] = "".join(traceback.format_exception(err)[-6:])
                print(f"[gpu-check] {name}: error {type(err).__name__}: {err}", flush=True)
            if device == "cuda":     # what a step's federations held, so the next step's processes find the memory
                gc.collect()
                torch.cuda.empty_cache()
            with check.lock:
                if step.section["status"] == "running":
                    step.section["status"] = "cut" if step.section["cut"] else "done"
                step.section["elapsed_s"] = round(time.perf_counter() - step.began, 1)
                check.report["gpu_measurements"] = measurements(check.report)
                check.current = None
                check.write()
        check.report["finished"] = True
        check.report["elapsed_s"] = round(check.elapsed(), 1)
        check.write()
    finally:
        watchdog.cancel()
        torch.set_num_threads(threads)
    return check.report


def measurements(report: dict) -> dict:
    """The figures engine/gpu_defaults.py reads, in gpu_measurements.json's shape (GPU name -> figures), for
    committing: runs per hour at 50 rounds by concurrency (levels whose runs all finished), and each
    bench case's sequential and cohort seconds per round."""
    steps = report["steps"]
    name = steps.get("environment", {}).get("data", {}).get("device_name")
    if name is None:
        return {}
    rates = {str(r["concurrency"]): r["runs_per_hour_at_50_rounds"] for r in steps.get("throughput", {}).get("rows", [])
             if r["runs_per_hour_at_50_rounds"] and r["finished"] == r["runs"]}
    cases = {r["case"]: {"sequential": r["seq_s"], "cohort": r["cohort_s"]} for r in steps.get("bench", {}).get("rows", [])}
    return {name: {"date": steps["environment"]["data"]["date_utc"][:10], "runs_per_hour": rates, "bench": cases}}


def failures(report: dict) -> list[str]:
    """The checks that failed: a cohort configuration out of tolerance, a resume not identical, a step's error."""
    steps = report["steps"]
    found = [f"{name}: error" for name, s in steps.items() if s["status"] == "error"]
    found += [f"cohort {r['algorithm']} {r['settings']}" for r in steps.get("cohort", {}).get("rows", []) if not r["pass"]]
    if steps.get("resume", {}).get("data", {}).get("identical") is False:
        found.append("resume: not identical")
    return found


def parse(items: list[str]) -> dict[str, Any]:
    """The command's key=value items, each checked; an error names the parameter, its value and what is allowed."""
    allowed = ", ".join(PARAMETERS)
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"gpu-check: {item!r}: expected key=value with key one of {allowed}")
        if key not in PARAMETERS:
            raise ConfigError(f"gpu-check: unknown parameter {key!r} ({item}): allowed are {allowed}")
        if key in pairs:
            raise ConfigError(f"gpu-check: {key} given twice ({key}={pairs[key]!r} and {key}={value!r})")
        pairs[key] = value
    for key in ("device", "size"):
        if key in pairs and pairs[key] not in PARAMETERS[key]:
            raise ConfigError(f"gpu-check {key}={pairs[key]!r}: must be one of {', '.join(PARAMETERS[key])}")
    try:
        budget = float(pairs.get("budget", 360))
    except ValueError:
        budget = math.nan
    if not (math.isfinite(budget) and budget > 0):
        raise ConfigError(f"gpu-check budget={pairs['budget']!r}: must be a number of seconds above 0")
    if "out" in pairs and not pairs["out"]:
        raise ConfigError("gpu-check out='': must name a folder")
    steps = tuple(pairs["steps"].split(",")) if "steps" in pairs else tuple(SHARES)
    unknown = [name for name in steps if name not in SHARES]
    if unknown or not steps or len(set(steps)) != len(steps):
        raise ConfigError(f"gpu-check steps={pairs['steps']!r}: must be distinct names among {', '.join(SHARES)}, "
                          "comma-separated")
    return {"device": pairs.get("device", "cuda"), "size": pairs.get("size"), "out": pairs.get("out", "gpu-check"),
            "budget": budget, "steps": steps}


def main(items: list[str]) -> int:
    """0 when every check passed (steps cut for time included), 1 when one failed or a step raised."""
    report = run_check(**parse(items))
    failed = failures(report)
    print(f"[gpu-check] {'all checks passed' if not failed else 'FAILED: ' + '; '.join(failed)}; "
          f"cut: {', '.join(n for n, s in report['steps'].items() if s['cut']) or 'none'}; report in "
          f"{report['out']}", flush=True)
    return 1 if failed else 0
