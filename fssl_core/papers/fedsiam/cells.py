"""FedSiam (Long et al., CIKM'21) tables and figures as cells of RunConfigs: the paper's protocol.

Shared parameters are its Table 2: K=100 clients, 10 active per round, lr 0.01, momentum 0.9,
weight decay 1e-4, seed 1234, and three slashed pairs, R_G "50/150/200", R_L "5/1", BS_tr
"10/100", which we read as labels-at-client / labels-at-server:
- labels-at-client: R_G = 50 on every dataset, R_L = 5, BS_tr = 10. Evidence: Table 3 fixes FedSem
  at 30 + 20 rounds and FedSem is in Table 5 for all three datasets; §4.4 runs the τ ablation "with
  total 50 rounds" on all three; Eq. 12's plateau (1 − μ)R_G/(ϕ_g − φ_g) stays ≤ 1 only for
  R_G ≤ 60; the authors' README (fedsiam-labels-at-client/README.md) runs MNIST, CIFAR-10 and SVHN
  with `--epochs 50`.
- labels-at-server: R_G = 200 on MNIST and CIFAR-10, 150 on SVHN (the paper's "150/200", assigned as
  the authors' README runs them: `--num_epochs 200` for MNIST and CIFAR-10, 150 for SVHN), R_L = 1
  (their clients walk their unlabeled data once a round), BS_tr = 100 for clients and server alike.
  The authors' code cuts client batches of 50 (batch_size·5) and server batches of 10; we keep the
  paper's one number.
The other reading, R_G 50/150/200 as MNIST/CIFAR-10/SVHN for both scenarios, runs CIFAR-10 at 150
rounds, where the clipped rectangle τ curve averages 0.19 against the 0.5 target.

Table numbers follow the paper's captions: Table 7 is the sensitivity study (NoSiam, α_max, τ
curve), Table 8 the consistency loss (MSE vs KL). The text of §4.4 calls them the other way round.

The authors' computations, run beside these cells, are in authors_code.py; claims in claims.py;
the causes of the cells far from the paper in causes.py.
"""
from __future__ import annotations

from pathlib import Path

from ...config import ConfigError

from ...run_config import RunConfig
from ...profiles import Profile
from ...report.tables import Cell
from ..values import check_names, printed_value

FOLDER = Path(__file__).parent          # values.csv: the paper's printed numbers

PAPER = "fedsiam"
SEEDS = [1234, 1235, 1236]          # "average accuracy of three runs"; the paper's seed is 1234
ABLATION_SEEDS = [1234, 1235, 1236, 1237]   # Tables 7-8: "over four runs per hyperparameter setting"
# Table 2's slashed values per scenario (see the module docstring)
CLIENT_PROTOCOL = {"rounds": 50, "local_epochs": 5, "batch_size": 10}
SERVER_PROTOCOL = {"local_epochs": 1, "batch_size": 100}
SERVER_ROUNDS = {"mnist": 200, "cifar10": 200, "svhn": 150}
# r, the times a local epoch walks a client's labeled set (RunConfig.labeled_repeats):
# the FedSiam authors' get_train_idxs (models/Update.py) repeats it 3× at γ = 0.10 and 2× at 0.15 and
# 0.20, and 6× on Non-IID-III (on clients under 40% labeled); every labels-at-client method of theirs
# trains on that list, FedAvg's supervised epochs included. The paper is silent; without it FedAvg
# takes a third of their supervised steps at γ = 0.10.
LABELED_REPEATS = {0.10: 3, 0.15: 2, 0.20: 2}
NONIID3_REPEATS = 6
TABLE5_SETTINGS = ("iid", "noniid1", "noniid2", "noniid3")
DATASETS = ("mnist", "cifar10", "svhn")
TABLE5_DATASETS = DATASETS
TABLE5_METHODS = ("fedavg", "fedavg_plus", "fedsem", "fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt",
                  "fedsiam_d")
# Table 6's settings (the paper-values CSV's names) -> partitions
TABLE6_SETTINGS = {"server_iid": "server_iid", "server_noniid": "server_shards"}
TABLE6_METHODS = ("fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt")
# method id in the paper-values CSV -> algorithm
METHODS = {
    "fedavg": "fedavg",
    "fedavg_plus": "fedavg_plus",
    "fedsem": "fedsem",
    "fedfixmatch": "fedfixmatch",
    "fedmatch": "fedmatch",
    "fedsiam_pi": "fedsiam_pi",
    "fedsiam_mt": "fedsiam_mt",
    "fedsiam_d": "fedsiam_d",
    "fedsiam_nosiam": "fedsiam_nosiam",
}
# Per-method departures from Table 2, each with its reason:
# - FedMatch runs with momentum 0, its official optimiser: under Table 2's momentum 0.9 its L2
#   spring between ψ and σ rings and the model stays at chance (measured; see algorithms/fedmatch.py).
METHOD_SETTINGS = {"fedmatch": {"momentum": 0.0}}
# The quick profile keeps the paper's protocol but one local epoch (R_L = 1 of Table 2's "5/1"),
# for every method alike, so that the MNIST cells fit a 2-core CPU; its rows say "reduced".
QUICK = {"local_epochs": 1}
FIGURE6_MUS = (0.1, 0.3, 0.5, 0.7, 0.9)   # μ on Figure 6's x axis (the figure's exact ticks are not in the text)
FIGURE5_SETTINGS = ("iid", "noniid1", "noniid2")
FIGURE5_METHODS = ("fedavg", "fedavg_plus", "fedsem", "fedfixmatch", "fedmatch", "fedsiam_d")
TABLE5_LABELED_RATIOS = (0.10, 0.15, 0.20)
TABLE6_LABELED_RATIOS = (0.01, 0.10)
# What a table sweeps when a notebook leaves it to the profile (None): at quick, as at paper, the
# paper's whole list, i.e. every MNIST cell of Tables 5-8 and Figures 5-6, which the cohort trainer
# brings within a few CPU-hours (Table 5 is the largest: 80 runs of 1-15 min each). Cells shared
# between notebooks (e.g. Table 5's IID FedSiam-D is Table 7's "siamese=yes", Table 8's MSE and
# Figure 6's μ = 0.5) train once.
#
# What smoke sweeps: CI runs every notebook at smoke to check the wiring, so one slice per table.
SMOKE_SCOPE = {
    "table5_settings": ("iid",),
    "table5_labeled_ratios": (0.10,),
    "table6_settings": ("server_iid",),
    "table6_labeled_ratios": (0.10,),
    "table7_variants": ("siamese=no", "siamese=yes", "alpha_max=0.99", "alpha_max=0.999",
                        "quantile_curve=linear", "quantile_curve=rectangle"),
    "table8_settings": ("iid", "noniid1"),
    "figure5_settings": ("iid",),
    "figure6_mus": FIGURE6_MUS,
}


# What the default `headline` profile sweeps: the paper's headline cell, MNIST IID γ = 0.10 (the
# abstract's claim, FedSiam-D above the baselines, and Π < D < MT in upload), at quick's protocol;
# FedFixMatch and FedMatch (2-11 min each here) wait for the quick profile.
HEADLINE_METHODS = ("fedavg", "fedavg_plus", "fedsiam_pi", "fedsiam_mt", "fedsiam_d")
HEADLINE_SCOPE = {
    "table5_settings": ("iid",),
    "table5_labeled_ratios": (0.10,),
    "table5_datasets": ("mnist",),
    "table5_methods": HEADLINE_METHODS,
    "paper_protocol_methods": (),          # the paper-protocol checks take an hour of CPU: not at headline
    "paper_protocol_settings": (),
}


def _scope(profile: Profile, key: str, full) -> list:
    return profile.scope(full, full, SMOKE_SCOPE.get(key), HEADLINE_SCOPE.get(key))


def paper_protocol_scope(profile: Profile, key: str, full) -> list:
    """What a notebook runs at the paper's protocol beside its profile's sweep (`full` at smoke, quick
    and paper; nothing at headline)."""
    return _scope(profile, key, full)



def fedsiam_settings(dataset: str, setting: str) -> dict:
    """Table 4 and §4.4's choices: the linear τ curve with φ_g = 3 for MNIST and SVHN, the rectangle
    curve with φ_g = 10, ϕ_g = 40 for CIFAR-10; MSE consistency, except KL for CIFAR-10 non-IID."""
    curve = {"tau_curve": "rectangle", "tau_phi_g": 10, "tau_varphi_g": 40} if dataset == "cifar10" \
        else {"tau_curve": "linear", "tau_phi_g": 3}
    kl = dataset == "cifar10" and setting not in ("iid", "server_iid")
    return {**curve, "consistency": "kl" if kl else "mse", "ema_decay": 0.999, "consistency_rampup": 10,
            "tau_mu": 0.5}


def protocol(dataset: str, setting: str, labeled_ratio: float) -> dict:
    """Table 2's R_G, R_L and BS_tr for the scenario of `setting`, and the labeled repeats r."""
    if setting in TABLE6_SETTINGS.values():
        return {**SERVER_PROTOCOL, "rounds": SERVER_ROUNDS[dataset]}
    repeats = NONIID3_REPEATS if setting == "noniid3" else LABELED_REPEATS.get(round(labeled_ratio, 2), 1)
    return {**CLIENT_PROTOCOL, "labeled_repeats": repeats}


def paper_config(dataset: str, setting: str, labeled_ratio: float, method: str, device: str,
                 **changes) -> RunConfig:
    """The paper's config of one cell; `changes` are the cell's own departures (e.g. Table 7's α_max).
    `setting` is a partition name (iid, noniid1-3, server_iid, server_shards)."""
    if method not in METHODS:
        raise ConfigError(f"method={method!r}: must be one of {', '.join(METHODS)}")
    extra = fedsiam_settings(dataset, setting) if method.startswith("fedsiam") else {}
    extra.update(METHOD_SETTINGS.get(method, {}))
    extra.update(changes)
    base = dict(clients=100, clients_per_round=10, lr=0.01, momentum=0.9, weight_decay=1e-4, device=device,
                **protocol(dataset, setting, labeled_ratio))
    return RunConfig(algorithm=METHODS[method], dataset=dataset, partition=setting, labeled_ratio=labeled_ratio,
                     **{**base, **extra})


def _cell(table, setting, gamma, dataset, method, cfg, profile, seeds, paper_seeds, metric="accuracy"):
    seeds = paper_seeds if seeds is None else seeds
    labeled = f"{gamma:.2f}"
    return Cell(PAPER, table, setting, labeled, dataset, method,
                profile.configs(cfg, list(seeds), quick=QUICK), metric=metric, paper_runs=len(paper_seeds),
                paper_value=printed_value(FOLDER, PAPER, table, setting, labeled, dataset, method, metric))


def table5_cells(profile: Profile, device: str, methods=None, settings=None, datasets=None,
                 labeled_ratios=None, seeds=None, metrics=("accuracy",)) -> list[Cell]:
    """Table 5, labels-at-client. Non-IID-III is reported only for γ=0.10, as in the paper.
    methods, settings, datasets, labeled_ratios = None: the profile's scope."""
    if methods is None:
        methods = _scope(profile, "table5_methods", TABLE5_METHODS)
    if datasets is None:
        datasets = _scope(profile, "table5_datasets", TABLE5_DATASETS)
    if settings is None:
        settings = _scope(profile, "table5_settings", TABLE5_SETTINGS)
    if labeled_ratios is None:
        labeled_ratios = _scope(profile, "table5_labeled_ratios", TABLE5_LABELED_RATIOS)
    check_names("methods", methods, TABLE5_METHODS)
    check_names("datasets", datasets, TABLE5_DATASETS)
    cells = []
    for setting, gamma in table5_columns(settings, labeled_ratios):
        for dataset in datasets:
            for method in methods:
                cfg = paper_config(dataset, setting, gamma, method, device)
                cells += [_cell("table5", setting, gamma, dataset, method, cfg, profile, seeds, SEEDS, m)
                          for m in metrics]
    return cells



def table5_columns(settings, labeled_ratios) -> list[tuple[str, float]]:
    """Table 5's (setting, γ) columns among these: Non-IID-III is printed at γ = 0.10 only."""
    return [(setting, gamma) for gamma in labeled_ratios for setting in settings
            if setting != "noniid3" or gamma == 0.10]



def table6_columns(profile: Profile, settings, datasets, labeled_ratios) -> list[tuple[float, str, str]]:
    """(γ, setting, dataset) of Table 6's columns in scope; settings, labeled_ratios = None: the profile's."""
    if settings is None:
        settings = _scope(profile, "table6_settings", TABLE6_SETTINGS)
    if labeled_ratios is None:
        labeled_ratios = _scope(profile, "table6_labeled_ratios", TABLE6_LABELED_RATIOS)
    check_names("settings", settings, TABLE6_SETTINGS)
    check_names("datasets", datasets, DATASETS)
    return [(gamma, setting, dataset) for gamma in labeled_ratios for setting in settings for dataset in datasets]



def table6_cells(profile: Profile, device: str, methods=TABLE6_METHODS, settings=None,
                 datasets=DATASETS, labeled_ratios=None, seeds=None, metrics=("accuracy",)) -> list[Cell]:
    """Table 6, labels-at-server: γ|D| labeled samples at the server, trained on before each round
    (server_epochs = 1 epoch over them, FedSiam's Eq. 8), the rest unlabeled over K = 100 clients.
    settings, labeled_ratios = None: the profile's scope."""
    check_names("methods", methods, TABLE6_METHODS)
    return [_cell("table6", setting, gamma, dataset, method,
                  paper_config(dataset, TABLE6_SETTINGS[setting], gamma, method, device), profile, seeds, SEEDS, m)
            for gamma, setting, dataset in table6_columns(profile, settings, datasets, labeled_ratios)
            for method in methods for m in metrics]


# Table 7: one hyperparameter varied at a time around FedSiam-D's defaults (IID, γ = 0.10).
def table7_variants(dataset: str) -> dict[str, tuple[str, dict]]:
    """setting (as the paper-values CSV names it) -> (method, the changes from fedsiam_settings)."""
    variants = {"siamese=no": ("fedsiam_nosiam", {}), "siamese=yes": ("fedsiam_d", {})}
    for alpha in ("0.9", "0.99", "0.999", "0.9999"):
        variants[f"alpha_max={alpha}"] = ("fedsiam_d", {"ema_decay": float(alpha)})
    # the curves with the tipping points §4.4 gives for each (φ_g = 3 linear; φ_g = 10, ϕ_g = 40 rectangle)
    variants["quantile_curve=linear"] = ("fedsiam_d", {"tau_curve": "linear", "tau_phi_g": 3})
    variants["quantile_curve=rectangle"] = ("fedsiam_d", {"tau_curve": "rectangle", "tau_phi_g": 10,
                                                          "tau_varphi_g": 40})
    return variants


def table7_cells(profile: Profile, device: str, datasets=DATASETS, variants=None, seeds=None,
                 metrics=("accuracy",)) -> list[Cell]:
    """variants: Table 7's setting names (table7_variants); None: the profile's scope."""
    known = table7_variants("mnist")
    if variants is None:
        variants = _scope(profile, "table7_variants", known)
    check_names("variants", variants, known)
    cells = []
    for dataset in datasets:
        for setting, (method, changes) in table7_variants(dataset).items():
            if setting not in variants:
                continue
            cfg = paper_config(dataset, "iid", 0.10, method, device, **changes)
            cells += [_cell("table7", setting, 0.10, dataset, method, cfg, profile, seeds, ABLATION_SEEDS, m)
                      for m in metrics]
    return cells



def table8_cells(profile: Profile, device: str, datasets=DATASETS, settings=None, seeds=None,
                 metrics=("accuracy",)) -> list[Cell]:
    """Table 8: FedSiam-D with the MSE (Eq. 4) or the KL (Eq. 5) consistency loss, IID and
    Non-IID-I; settings=None: the profile's scope."""
    if settings is None:
        settings = _scope(profile, "table8_settings", ("iid", "noniid1"))
    return [_cell("table8", setting, 0.10, dataset, f"fedsiam_d_{loss}",
                  paper_config(dataset, setting, 0.10, "fedsiam_d", device, consistency=loss),
                  profile, seeds, ABLATION_SEEDS, m)
            for setting in settings for dataset in datasets for loss in ("mse", "kl") for m in metrics]



def figure5_cells(profile: Profile, device: str, datasets=("svhn", "mnist"), settings=None,
                  methods=FIGURE5_METHODS, seeds=None) -> list[Cell]:
    """Figure 5's convergence curves are Table 5's runs (γ = 0.10); settings=None: the profile's scope."""
    if settings is None:
        settings = _scope(profile, "figure5_settings", FIGURE5_SETTINGS)
    return table5_cells(profile, device, methods=methods, settings=settings, datasets=datasets,
                        labeled_ratios=(0.10,), seeds=seeds)


def figure6_cells(profile: Profile, device: str, datasets=("mnist", "svhn"), mus=None,
                  references=("fedavg_plus", "fedsiam_pi", "fedsiam_mt"), seeds=None) -> list[Cell]:
    """Figure 6: FedSiam-D's accuracy and upload volume against μ (IID, γ = 0.10), beside the
    methods the paper draws as references. The figure's values are not in the text, so these cells
    have no paper value; each has an accuracy and an upload_mb row. mus=None: the profile's scope."""
    if mus is None:
        mus = _scope(profile, "figure6_mus", FIGURE6_MUS)
    cells = []
    for dataset in datasets:
        runs = [(f"mu={mu:g}", "fedsiam_d", {"tau_mu": mu}) for mu in mus]
        runs += [("reference", method, {}) for method in references]
        for setting, method, changes in runs:
            cfg = paper_config(dataset, "iid", 0.10, method, device, **changes)
            cells += [_cell("figure6", setting, 0.10, dataset, method, cfg, profile, seeds, SEEDS, metric)
                      for metric in ("accuracy", "upload_mb")]
    return cells
