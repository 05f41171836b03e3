"""Issue 44's narrow copy: FedMix-FedLoss with ȳ from the trained ψ (the reading so far) and from the received
ω_t (frozen for the round), beside SL, on the streaming Fashion-MNIST setting with ResNet-9 at 1/8 width
(resnet9_narrow), 14 rounds: 6 rounds of SL warm-up (ω_{t+1} = σ_{t+1}), then 8 FedMix rounds, at τ = 0.5 so
that the narrow network keeps a share of pseudo-labels like the full one at τ = 0.8. Seeds 1-3. Exploratory:
no paper's protocol.

    python measurements/2026-11-26-cpu-fedmix-narrow/train.py      # trains into runs/ beside this file
"""
from pathlib import Path

from fssl_core.executors import run_all
from fssl_core.papers.fedmix.cells import STREAMING, paper_config
from fssl_core.store import RunStore

HERE = Path(__file__).resolve().parent
NARROW = dict(model="resnet9_narrow", rounds=14, pseudo_label_threshold=0.5)
SEEDS = (1, 2, 3)
ARMS = {
    "FedMix-FedLoss, ȳ from trained ψ": paper_config("fedmix_fedloss", "cpu", **STREAMING).replace(
        **NARROW, fedmix_warmup_rounds=6),
    "FedMix-FedLoss, ȳ from received ω_t": paper_config("fedmix_fedloss", "cpu", **STREAMING).replace(
        **NARROW, fedmix_warmup_rounds=6, fedmix_teacher="received"),
    "SL": paper_config("supervised_server", "cpu", **STREAMING, **NARROW),     # τ dropped: SL reads none
}


def configs():
    return {arm: [cfg.replace(seed=s) for s in SEEDS] for arm, cfg in ARMS.items()}


if __name__ == "__main__":
    run_all([c for cs in configs().values() for c in cs], store=RunStore(HERE / "runs"), workers=2)
