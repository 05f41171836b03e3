"""The diagnostic that splits FedMix's gap to SL (its own supervised part) into arms, on the CPU's narrow copy
of the journal's Fig. 8 (streaming Fashion-MNIST, ResNet-9 at 1/8 width; the protocol of
measurements/2026-11-26-cpu-fedmix-narrow at 20 rounds: the first 6 SL warm-up, τ = 0.5 so that the narrow
network keeps a share of pseudo-labels). Exploratory: no paper's protocol.

    python -m fssl_core.papers.fedmix.arms train OUT     # trains the arms' runs into OUT/runs (3 seeds an arm)
    python -m fssl_core.papers.fedmix.arms summary OUT   # OUT/arms.csv from the records

Arms (each FedMix-FedLoss but A; every FedMix arm logs ψ_{t+1}'s, σ_{t+1}'s and ω_{t+1}'s test accuracy a round):
A SL; B passive clients (λ_1 = λ_2 = 0: ψ^k = ω_t, so Eq. 9 is ω_{t+1} = ω_t + β(σ_{t+1} − ω_t)); C the default;
D ȳ from the received ω_t; E FedMatch's BN-free network (`resnet9_fedmatch_narrow`); F the conference tether
λ_L1 = 10. Each arm's final accuracy and mean over the last 10 rounds (not best-of-run) against A by the claim test.

Expectations, committed before any arm's run exists (git order): B is below A by the lag of a step shrunk by β
(for passive clients Eq. 9 is SL's step times β = 0.3), so "SL is FedMix's ceiling" holds only asymptotically;
C is below B (clients whose kept pseudo-labels are 56% right pull ω down, per the narrow copy's record); D is
above C (81% of its kept pseudo-labels right there); E lands nearer B than C does if BatchNorm's statistics
cause most of C's shortfall; F lands between C and B (the tether holds ψ near ω_t, moving C toward B).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from ...report.claim_test import Comparison, Side
from ...run_config import RunConfig
from ...store import RunStore
from .cells import STREAMING, paper_config

NARROW = dict(model="resnet9_narrow", rounds=20, pseudo_label_threshold=0.5, trainer="sequential")
WARMUP = {"fedmix_warmup_rounds": 6, "fedmix_log_parts": True}
SEEDS = (1, 2, 3)
LAST = 10        # rounds averaged at the end


def arms(device: str = "cpu") -> dict[str, RunConfig]:
    """Arm label -> its config at seed 1."""
    fedmix = paper_config("fedmix_fedloss", device, **STREAMING).replace(**NARROW, **WARMUP)
    return {
        "A: SL": paper_config("supervised_server", device, **STREAMING).replace(**NARROW),
        "B: passive clients (λ_1 = λ_2 = 0)": fedmix.replace(fedmix_lambda_1=0.0, fedmix_lambda_2=0.0),
        "C: FedMix-FedLoss (default)": fedmix,
        "D: ȳ from the received ω_t": fedmix.replace(fedmix_teacher="received"),
        "E: BN-free network": fedmix.replace(model="resnet9_fedmatch_narrow"),
        "F: tether λ_L1 = 10": fedmix.replace(fedmix_tether=10.0),
    }


def configs(device: str = "cpu") -> dict[str, list[RunConfig]]:
    return {arm: [cfg.replace(seed=s) for s in SEEDS] for arm, cfg in arms(device).items()}


def summary(store: RunStore) -> pd.DataFrame:
    """One row per arm with all its runs finished: final and last-10 accuracy of ω (mean, std, n), the last-10
    means of ψ and σ where logged, and the verdict of "this arm ≈ A" read as the arm's last-10 minus A's."""
    per_arm = {}
    for arm, cfgs in configs().items():
        results = [store.load(c) for c in cfgs]
        if any(r is None for r in results):
            continue
        per_arm[arm] = (cfgs, [r.metrics for r in results])
    if not per_arm:
        return pd.DataFrame()
    rows, reference = [], None
    for arm, (cfgs, metrics) in per_arm.items():
        final = pd.Series([m[-1]["accuracy"] for m in metrics])
        last = pd.Series([_mean_last(m, "accuracy") for m in metrics])
        row = {"arm": arm, "final": final.mean(), "final_std": final.std(), "last10": last.mean(),
               "last10_std": last.std(), "n": len(metrics),
               "psi_last10": _mean(_mean_last(m, "accuracy_psi") for m in metrics),
               "sigma_last10": _mean(_mean_last(m, "accuracy_sigma") for m in metrics),
               "run_ids": " ".join(c.run_id for c in cfgs)}
        side = Side(arm, row["last10"], row["last10_std"], row["n"])
        if reference is None:
            reference, row["vs_A"] = side, ""
        else:
            verdict = Comparison(side, (reference,)).verdict(1.0)
            power = verdict.power_line(row["n"])
            row["vs_A"] = f"{row['last10'] - reference.mean:+.2f} points, {verdict.word}" + (f" {power}" if power else "")
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_last(metrics: list[dict], key: str) -> float:
    values = [m[key] for m in metrics if key in m][-LAST:]
    return sum(values) / len(values) if values else math.nan


def _mean(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def main(argv: list[str] | None = None) -> None:
    command, out = (argv or sys.argv[1:] or ["summary", "measurements/fedmix-arms"])[:2]
    out = Path(out)
    store = RunStore(out / "runs")
    if command == "train":
        from ...executors import run_all
        run_all([c for cs in configs().values() for c in cs], store=store)
    frame = summary(store)
    if len(frame):
        from ...store.files import atomic_write_text
        atomic_write_text(out / "arms.csv", frame.to_csv(index=False))
        print(frame.drop(columns="run_ids").to_string(index=False))


if __name__ == "__main__":
    main()
