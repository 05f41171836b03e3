"""FedSiam (Long et al., CIKM'21) tables as cells of RunConfigs.

Shared parameters are its Table 2: K=100 clients, 10 active per round, R_L=5 local epochs,
BS_tr=10, lr 0.01, momentum 0.9, weight decay 1e-4, seed 1234. Table 2 gives R_G as
"50/150/200" in the paper's dataset order (MNIST, CIFAR-10, SVHN), which is how we read it.
"""
from __future__ import annotations

from ..config import RunConfig
from ..profiles import Profile
from ..report import Cell

PAPER = "fedsiam"
SEEDS = [1234, 1235, 1236]          # "average accuracy of three runs"; the paper's seed is 1234
ROUNDS = {"mnist": 50, "cifar10": 150, "svhn": 200}   # R_G of Table 2
TABLE5_SETTINGS = ("iid", "noniid1", "noniid2", "noniid3")
TABLE5_DATASETS = ("mnist", "cifar10", "svhn")
# method id in the paper-values CSV -> algorithm
METHODS = {
    "fedavg": "fedavg",
    "fedavg_plus": "fedavg_plus",
    "fedsiam_pi": "fedsiam_pi",
    "fedsiam_mt": "fedsiam_mt",
    "fedsiam_d": "fedsiam_d",
    "fedsiam_nosiam": "fedsiam_nosiam",
}
# The quick profile keeps the paper's protocol but one local epoch (R_L = 1 of Table 2's "5/1"),
# for every method alike, so that Table 5's MNIST cells fit a 2-core CPU; its rows say "reduced".
QUICK = {"local_epochs": 1}


def fedsiam_settings(dataset: str, setting: str) -> dict:
    """Table 4 and §4.4's choices: the linear τ curve with φ_g = 3 for MNIST and SVHN, the rectangle
    curve with φ_g = 10, ϕ_g = 40 for CIFAR-10; MSE consistency, except KL for CIFAR-10 non-IID."""
    curve = {"tau_curve": "rectangle", "tau_phi_g": 10, "tau_varphi_g": 40} if dataset == "cifar10" \
        else {"tau_curve": "linear", "tau_phi_g": 3}
    kl = dataset == "cifar10" and setting != "iid"
    return {**curve, "consistency": "kl" if kl else "mse", "ema_decay": 0.999, "consistency_rampup": 10,
            "tau_mu": 0.5}


def paper_config(dataset: str, setting: str, labeled_ratio: float, method: str, device: str) -> RunConfig:
    if method not in METHODS:
        raise ValueError(f"method={method!r}: must be one of {', '.join(METHODS)}")
    extra = fedsiam_settings(dataset, setting) if method.startswith("fedsiam") else {}
    return RunConfig(algorithm=METHODS[method], dataset=dataset, partition=setting, labeled_ratio=labeled_ratio,
                     rounds=ROUNDS[dataset], clients=100, clients_per_round=10, local_epochs=5, batch_size=10,
                     lr=0.01, momentum=0.9, weight_decay=1e-4, device=device, **extra)


def table5_cells(profile: Profile, device: str, methods, settings=TABLE5_SETTINGS, datasets=TABLE5_DATASETS,
                 labeled_ratios=(0.10,), seeds=None) -> list[Cell]:
    """Table 5, labels-at-client. Non-IID-III is reported only for γ=0.10, as in the paper."""
    seeds = SEEDS if seeds is None else seeds
    cells = []
    for gamma in labeled_ratios:
        for setting in settings:
            if setting == "noniid3" and gamma != 0.10:
                continue
            for dataset in datasets:
                for method in methods:
                    cfg = paper_config(dataset, setting, gamma, method, device)
                    cells.append(Cell(PAPER, "table5", setting, f"{gamma:.2f}", dataset, method,
                                      profile.configs(cfg, list(seeds), quick=QUICK), paper_runs=len(SEEDS)))
    return cells
