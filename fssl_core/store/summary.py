"""What a finished run says about itself: its status and its summary (result.json's fields).

A finished run's status: "ok"; "diverged" (a loss became NaN or infinite; its accuracy is None);
"at-chance" (its final test accuracy is at most AT_CHANCE_FACTOR × chance, 100 / classes %). An
at-chance run is a measurement, so its accuracy is kept and shown, and reports flag its row
(report/tables.py): a finite blow-up (loss 45,976, accuracy 8.9%) is not reported as "ok". The check is on
the final round only: a run that dips to chance and recovers is "ok".
"""
from __future__ import annotations

from pathlib import Path

from ..run_config import RunConfig

OK, DIVERGED, AT_CHANCE = "ok", "diverged", "at-chance"
MEASURED = (OK, AT_CHANCE)      # statuses whose accuracy is a measurement (report/tables.py shows their values)
AT_CHANCE_FACTOR = 1.5          # final accuracy <= 1.5 × 100/classes % (15% on 10 classes): "at-chance"


def describe(cfg: RunConfig) -> str:
    """The run in one line: γ where its partition reads it, else (at the server) the count N_s that takes its place."""
    labels = f"γ={cfg.labeled_ratio}" if "labeled_ratio" in cfg.fields_read() else f"N_s={cfg.server_labeled}"
    return (f"{cfg.algorithm} {cfg.dataset} {cfg.partition} {labels} K={cfg.clients} "
            f"R={cfg.rounds} seed={cfg.seed} ({cfg.run_id})")


def summarize(cfg: RunConfig, metrics: list[dict], status: str, model_parameters: int, run_dir: Path,
              num_classes: int) -> dict:
    """The run's summary. `status` is OK or DIVERGED as the run ended; an OK run whose final accuracy
    is at most AT_CHANCE_FACTOR × chance (100 / num_classes %) becomes AT_CHANCE."""
    evaluated = [m for m in metrics if "accuracy" in m]
    seconds = sum(m["seconds"] for m in metrics)
    best = max(evaluated, key=lambda m: m["accuracy"], default=None)
    accuracy = evaluated[-1]["accuracy"] if evaluated and status != DIVERGED else None
    chance = 100.0 / num_classes
    if status == OK and accuracy is not None and accuracy <= AT_CHANCE_FACTOR * chance:
        status = AT_CHANCE
    return {
        "accuracy": accuracy,
        "best_accuracy": best["accuracy"] if best else None,   # for rounds-to-best curves only; never for model selection
        "best_round": best["round"] if best else None,
        "chance_accuracy": chance,
        "rounds": len(metrics),
        "seconds": seconds,
        "seconds_per_round": seconds / len(metrics) if metrics else None,
        "upload_bytes": sum(m["upload_bytes"] for m in metrics),
        "download_bytes": sum(m["download_bytes"] for m in metrics),
        "model_parameters": model_parameters,
        "status": status,
        "device": cfg.device,
        "run_id": cfg.run_id,
        "run_dir": str(run_dir),
    }
