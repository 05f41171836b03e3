"""The CUDA defaults that depend on the GPU, read from measurements, each with where it came from.

Two choices depend on the card and cannot be reasoned out: how many runs one GPU should train at
once (a run of small images leaves most of a GPU idle between kernel launches, so several side by
side can finish more runs per hour), and whether trainer='auto' trains a round's clients as one
cohort or one after the other. `python -m fssl_core gpu-check` measures both on a GPU; its figures,
committed in gpu_measurements.json (GPU name -> figures), set the defaults here. A GPU with no
entry gets a fallback, and the reason string says it is one.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

MEASUREMENTS = Path(__file__).with_name("gpu_measurements.json")
FALLBACK_WORKERS = 1       # one run at a time: never slower per run; what the executor did before any measurement
FALLBACK_COHORT = True     # batches of ten small images leave the device idle between launches: stack them


@functools.cache
def _measured() -> dict:
    return json.loads(MEASUREMENTS.read_text()) if MEASUREMENTS.exists() else {}


def figures(gpu: str) -> dict | None:
    """The committed figures of `gpu` (torch.cuda.get_device_name()), None where it was never measured."""
    return _measured().get(gpu)


def workers(gpu: str) -> tuple[int, str]:
    """Runs to train at once on one `gpu`: the concurrency with the most runs per hour measured."""
    measured = figures(gpu)
    rates = (measured or {}).get("runs_per_hour") or {}
    if not rates:
        return FALLBACK_WORKERS, (f"{FALLBACK_WORKERS} at a time, a fallback: {gpu} has no runs-per-hour "
                                  f"measurement in {MEASUREMENTS.name} (python -m fssl_core gpu-check measures it)")
    best = max(rates, key=lambda k: rates[k])
    edge = ("; the most runs at once measured: more may do better" if int(best) == max(map(int, rates)) else "")
    return int(best), (f"{best} at a time: the most runs per hour measured on {gpu} ({measured['date']}: "
                       + ", ".join(f"{k} at once {rates[k]:.0f}/h" for k in sorted(rates, key=int)) + f"{edge})")


def cohort(gpu: str) -> tuple[bool, str]:
    """Whether trainer='auto' stacks a round's clients on `gpu`: the faster of the two trainers in the
    measured bench rows (the median over the cases measured)."""
    rows = ((figures(gpu) or {}).get("bench") or {})
    ratios = sorted(r["sequential"] / r["cohort"] for r in rows.values() if r.get("sequential") and r.get("cohort"))
    if not ratios:
        return FALLBACK_COHORT, f"cohort, a fallback: {gpu} has no bench measurement in {MEASUREMENTS.name}"
    median = ratios[len(ratios) // 2]
    choice = "cohort" if median >= 1 else "sequential"
    return median >= 1, (f"{choice}: the cohort ran {median:.2f}x the sequential trainer's speed on {gpu} "
                         f"(median of {len(ratios)} bench cases, {figures(gpu)['date']})")
