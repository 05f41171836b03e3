"""Where FedMix's kept pseudo-labels go wrong: the first rounds of a Fig. 8 run, every client step
instrumented, without changing what the run computes.

    python -m studies.fedmix.diagnose --rounds 6 [--method fedmix_fedloss] [--profile paper]
    python -m studies.fedmix.diagnose --rounds 12 --set model=resnet9_narrow    # a CPU's narrow copy

At each local step of each client, on the step's unlabeled batch and the very views π_1..π_A that FedMix's
loss averages (the views are cached per step, so drawing them here first leaves every draw as it was), ȳ's
argmax is scored against the hidden labels for three models:
- `psi`: the client's model ψ as it is trained, with its own BatchNorm running statistics (what FedMix uses);
- `omega`: the global model ω_t the client downloaded, frozen (what the model that "scores well" predicts);
- `psi_omega_bn`: ψ's weights with ω_t's running statistics (separates weight drift from statistics drift).
Each as accuracy over the batch and as the precision of the kept ones (max ȳ ≥ τ). Also the drift of ψ's
BatchNorm running means from ω_t's (2|ψ−ω|/(|ψ|+|ω|), averaged over layers) and the client's share of its largest class.
Rows per (round, client, step) go to a CSV; a per-round summary is printed.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import torch

from fssl_core.algorithms.base import clone
from fssl_core.algorithms.fedmix import PI
from fssl_core.config import ConfigError
from fssl_core.engine.federation import Federation
from fssl_core.papers.fedmix.cells import METHODS, STREAMING, paper_config
from fssl_core.profiles import get_profile
from studies.options import parse_set


def _bn_buffers(tensors: dict) -> list[str]:
    return [k for k in tensors if k.endswith("running_mean") or k.endswith("running_var")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.fedmix.diagnose",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--method", default="fedmix_fedloss", choices=[m for m, (a, _) in METHODS.items() if a == "fedmix"])
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="key=value",
                        help="a RunConfig change (an exploratory reading), e.g. pseudo_label_threshold=0.5")
    parser.add_argument("--out", default="fedmix_diagnose.csv")
    args = parser.parse_args(argv)
    cfg = paper_config(args.method, args.device, **STREAMING)
    cfg = get_profile(args.profile).configs(cfg, [args.seed])[0]
    try:
        cfg = cfg.replace(**parse_set(args.set))
    except ConfigError as err:
        parser.error(f"--set: {err}")
    cfg = cfg.replace(trainer="sequential", rounds=max(cfg.rounds, args.rounds))
    fed = Federation.build(cfg)
    algo, ctx = fed.algorithm, fed.ctx
    tau = cfg.pseudo_label_threshold
    current: dict = {}
    rows: list[dict] = []

    original_init, original_loss = algo.client_init, algo.loss

    def client_init(payload, view):
        current["omega"] = clone(payload["model"])
        current["step"] = 0
        labels = fed.images.y[view.unlabeled]
        current["top_share"] = float(torch.bincount(labels, minlength=fed.num_classes).max()) / max(1, labels.numel())
        return original_init(payload, view)

    def scores(tensors, views, n, hidden):
        probs = ctx.target(tensors, views).softmax(1).view(cfg.fedmix_views, n, -1).mean(0)
        confidence, hard = probs.max(1)
        right = hard == hidden
        kept = confidence >= tau
        return float(right.float().mean()), float(kept.float().mean()), (float(right[kept].float().mean()) if kept.any()
                                                                       else float("nan"))

    def loss(nets, batch, step):
        u = batch.unlabeled
        n = len(u)
        views = torch.cat([u.transformed(f"pi{i}", PI) for i in range(cfg.fedmix_views)])
        psi, omega = nets["model"], current["omega"]
        mixed = {**psi, **{k: omega[k] for k in _bn_buffers(psi)}}
        row = {"round": step.round, "client": current["client"], "step": current["step"], "top_share": current["top_share"]}
        for name, tensors in (("psi", psi), ("omega", omega), ("psi_omega_bn", mixed)):
            row[f"{name}_acc"], row[f"{name}_kept"], row[f"{name}_kept_precision"] = scores(tensors, views, n, u.hidden_labels)
        # symmetric relative distance in [0, 2]: ω_t's running means are zeros before the first training
        drift = [float(2 * (psi[k] - omega[k]).norm() / (psi[k].norm() + omega[k].norm()).clamp_min(1e-12))
                 for k in _bn_buffers(psi) if k.endswith("running_mean")]
        row["bn_mean_drift"] = sum(drift) / len(drift) if drift else 0.0
        rows.append(row)
        current["step"] += 1
        return original_loss(nets, batch, step)

    original_train_client = fed.train_client

    def train_client(round, client, payload, participation):
        current["client"] = client
        return original_train_client(round, client, payload, participation)

    algo.client_init, algo.loss, fed.train_client = client_init, loss, train_client
    state = fed.initial_state()
    print(f"[diagnose] {args.method} ({cfg.algorithm}, {cfg.model}) on the streaming setting, {args.rounds} rounds, "
          f"τ = {tau}, {cfg.clients} clients a round, device {args.device}", file=sys.stderr)
    start = time.perf_counter()
    for r in range(1, args.rounds + 1):
        first = len(rows)
        state, metrics = fed.run_round(state, r)
        mine = rows[first:]

        def mean(key, sel=lambda x: True):
            vals = [x[key] for x in mine if sel(x) and x[key] == x[key]]
            return sum(vals) / len(vals) if vals else float("nan")
        last_step = max(x["step"] for x in mine) if mine else 0
        print(f"[diagnose] round {r}/{args.rounds}: ω_(t+1) test {metrics.get('accuracy', float('nan')):.1f}% | "
              f"step 0 → last: ψ acc {mean('psi_acc', lambda x: x['step'] == 0):.2f} → "
              f"{mean('psi_acc', lambda x: x['step'] == last_step):.2f}, ω_t acc {mean('omega_acc'):.2f}, "
              f"ψ+ω_t BN acc (last) {mean('psi_omega_bn_acc', lambda x: x['step'] == last_step):.2f} | kept precision "
              f"ψ {mean('psi_kept_precision'):.2f}, ω_t {mean('omega_kept_precision'):.2f} | BN drift (last) "
              f"{mean('bn_mean_drift', lambda x: x['step'] == last_step):.3f} | {time.perf_counter() - start:.0f} s",
              file=sys.stderr, flush=True)
    out = Path(args.out)
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"[diagnose] {len(rows)} rows in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
