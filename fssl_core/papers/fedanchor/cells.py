"""FedAnchor (fedanchor.txt) tables and figures as cells of RunConfigs.

Table 4 is arithmetic on the model: the downstream overhead of sending the S anchor embeddings
with the model, Overhead = 100 / dim(w̄) · Σ_{i=1..S} dim(z_i^anchor) (line 210), w̄ the model
FedAvg transmits. It is computed here from the real parameter count of our ResNet-18, so a
change to the network shows up as a mismatch with the paper's digits.

Reading choice: dim(w̄) is the trainable parameters of ResNet-18 *without* the anchor head (what
FedAvg sends) and dim(z) = 128, the anchor head's output (Appendix C). That reading reproduces all
seven printed values; counting the 65,664 anchor-head parameters in w̄ gives 5.69% instead of
5.73% for 5,000 CIFAR-10 anchors, and counting BatchNorm's running statistics gives 5.72%.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...config import ConfigError

from ...algorithms.base import SERVER_SGD
from ...run_config import RunConfig
from ...models import build_model, count_parameters
from ...profiles import Profile
from ...report.tables import COLUMNS, Cell
from ..values import check_names, printed_value, read_values

PAPER = "fedanchor"
FOLDER = Path(__file__).parent          # values.csv: the paper's printed numbers


def paper_values() -> pd.DataFrame:
    """The paper's printed numbers (values.csv), one row per number."""
    return read_values(FOLDER)


def paper_value(table: str, setting: str, labeled: str, dataset: str, method: str,
                metric: str = "accuracy") -> float | None:
    """What the paper printed at these coordinates; None where it printed nothing."""
    return printed_value(FOLDER, PAPER, table, setting, labeled, dataset, method, metric)

ANCHOR_DIM = 128                      # the anchor head's output dimension (Appendix C)
NUM_CLASSES = {"cifar10": 10, "cifar100": 100, "svhn": 10}
TABLE4_ANCHORS = {"cifar10": (250, 500, 5000), "cifar100": (2500, 10000), "svhn": (250, 1000)}


def downstream_overhead(anchors: int, model_parameters: int, anchor_dim: int = ANCHOR_DIM) -> float:
    """Table 4's overhead in %: the anchors' embedding entries over the model's parameters."""
    if anchors < 0 or model_parameters <= 0:
        raise ValueError(f"downstream_overhead: anchors={anchors!r} must be >= 0 and "
                         f"model_parameters={model_parameters!r} > 0")
    return 100.0 * anchors * anchor_dim / model_parameters


def table4_rows(model: str = "resnet18") -> pd.DataFrame:
    """Every Table 4 cell: the paper's value beside ours, computed from `model`'s parameter count."""
    rows = []
    for dataset, sizes in TABLE4_ANCHORS.items():
        params = count_parameters(build_model(model, num_classes=NUM_CLASSES[dataset], in_channels=3))
        for anchors in sizes:
            ours = downstream_overhead(anchors, params)
            rows.append({"model_parameters": params, "paper": PAPER, "table": "table4", "setting": "downstream", "labeled": str(anchors),
                         "dataset": dataset, "method": "fedanchor", "metric": "comm_overhead",
                         "paper_value": paper_value("table4", "downstream", str(anchors), dataset,
                                                    "fedanchor", "comm_overhead"),
                         "reproduced_value": round(ours, 2), "reproduced_std": math.nan, "n_runs": 0,
                         "profile": "computed", "device": "none (arithmetic)", "seconds": 0.0,
                         "status": "ok"})
    return pd.DataFrame(rows, columns=["model_parameters", *COLUMNS])


# --- runs -------------------------------------------------------------------------------------
SEEDS = [1, 2, 3]                     # "three random experiments ... with different seeds" (App. C)
# The protocol of §5.1 and Appendix C; batch sizes are not given: SemiFL's client batch of 10.
# static_batchnorm for every method alike: the global model's BatchNorm statistics are recomputed on
# the anchors after pre-training and after each round's server training, before evaluation and
# download, as SemiFL's code does (its networks keep no running statistics otherwise). SemiFL alone
# with it would leave the others evaluated with WRN-28-2's momentum-0.001 statistics, near their
# initial values for hundreds of steps; the evidence and the alternative (momentum 0.1 for all, sBN
# for SemiFL only) are in algorithms/static_batchnorm.py. No effect on the BN-free MNIST CNN.
SHARED = dict(partition="server_lda", server_balanced=True, clients=100, clients_per_round=10, rounds=500,
              local_epochs=5, batch_size=10, lr=0.03, momentum=0.9, weight_decay=5e-4, server_epochs=1,
              pretrain_epochs=5, pretrain_lr=0.05, client_weighting="samples", static_batchnorm=True)
# The anchor head and threshold t; the server's two epochs head by head, §4.4's "one epoch on the classification
# head by minimizing L_s and for one epoch on the anchor head by minimizing L_c" (algorithms/fedanchor.py;
# `fedanchor_all_parameters` is the alternative, every parameter in both epochs)
ANCHOR = {"projection_dim": ANCHOR_DIM, "pseudo_label_threshold": 0.6, "server_step": "head_by_head"}
# SemiFL as SemiFL's code trains (READINGS.md, "SemiFL as SemiFL's code runs it", each file and line): the FedAnchor
# paper does not say how it ran SemiFL, so the baseline is SemiFL's own server step and aggregation: 5 server
# epochs, Nesterov, gradients clipped to 1, a cosine lr over the rounds, the server's momentum kept across rounds,
# the aggregate an SGD step with momentum 0.5 on the unweighted mean. Kept from the FedAnchor protocol: its
# pre-training (Appendix C; SemiFL's code has none) and the optimiser's lr, momentum and weight decay (the
# same in both). Not SemiFL's: each client's optimiser state kept across the rounds it is picked (modules.py
# L215, L410); here a client starts each round with a fresh velocity, as every method here does.
# `semifl_plain` is the alternative, the FedAnchor protocol's SGD for SemiFL too (1 server epoch, FedAvg).
SEMIFL_CODE = {"server_epochs": 5, "nesterov": True, "clip_grad_norm": 1.0, "lr_schedule": "cosine",
               "server_momentum_kept": True, "global_momentum": 0.5, "client_weighting": "uniform"}
SEMIFL = {"pseudo_label_threshold": 0.95}
# setting name (paper-values CSV) -> (model, Dirichlet concentration); "IID" is Dir = 1000 (line 162)
SETTINGS = {"resnet18_iid": ("resnet18", 1000.0), "resnet18_dir0.1": ("resnet18", 0.1),
            "wrn28x2_iid": ("wrn28_2", 1000.0), "wrn28x2_dir0.1": ("wrn28_2", 0.1)}
# FedAnchor with SemiFL's weak server views (algorithms/fedanchor.py, `server_ce_view`): its comparison with SemiFL
# without the view difference; its cells add the samples SemiFL's test would keep (SAME_VIEWS_METRICS)
SAME_VIEWS = "fedanchor_weak_server"
# method id (paper-values CSV) -> (algorithm, changes). A method not listed here would be reported
# `not-implemented` by the notebooks (`missing_methods`); today every printed method is.
METHODS = {
    "fedanchor": ("fedanchor", ANCHOR),
    "fedanchor_mix": ("fedanchor", {**ANCHOR, "server_mixup": True}),
    "fedanchor_no_contr_loss": ("fedanchor", {**ANCHOR, "contrastive_loss": False}),
    SAME_VIEWS: ("fedanchor", {**ANCHOR, "server_ce_view": "weak"}),     # not a paper row: see SAME_VIEWS
    # Table 3 (upper): where mixup is used; "client mixup" is the plain method
    "fedanchor_client_mixup": ("fedanchor", ANCHOR),
    "fedanchor_no_mixup": ("fedanchor", {**ANCHOR, "client_mixup": False}),
    "fedanchor_client_server_mixup": ("fedanchor", {**ANCHOR, "server_mixup": True}),
    "fedanchor_server_mixup": ("fedanchor", {**ANCHOR, "client_mixup": False, "server_mixup": True}),
    "semifl": ("semifl", {**SEMIFL, **SEMIFL_CODE}),
    "semifl_no_mixup": ("semifl", {**SEMIFL, **SEMIFL_CODE, "client_mixup": False}),
    # FixMatch clients; the server's CE epoch on the anchors runs before each round instead of after
    # (the same alternation, shifted by half a round), after the same pre-training as the others
    # (without it, at lr 0.03, the MNIST CNN's confident wrong pseudo-labels killed its ReLUs by
    # round 9 on Fashion-MNIST: test accuracy 10%, measured)
    "fedavg_fixmatch": ("fedfixmatch", {"pseudo_label_threshold": 0.95}),
    "supervised": ("supervised_fl", {}),
    "fedcon": ("fedcon", {"pretrain_epochs": 0}),
}


SEMIFL_SERVER = "fedanchor_semifl_server"
# The readings not taken for the two methods compared (the runs before each was a setting keep their ids)
ALTERNATIVES = {
    "fedanchor_all_parameters": ("fedanchor", {**ANCHOR, "server_step": "all_parameters"}),
    "semifl_plain": ("semifl", SEMIFL),
}
# Not the paper's methods: variants that explain a result of ours (see the Fashion-MNIST notebook).
# FedAvg+FixMatch at lr 0.01: at the paper's 0.03 the BN-free MNIST CNN falls to chance in early
# rounds (one confidently wrong class per client is self-trained into a constant classifier).
DIAGNOSTICS = {
    "fedavg_fixmatch_lr0.01": ("fedfixmatch", {"pseudo_label_threshold": 0.95, "lr": 0.01}),
    "supervised_lr0.01": ("supervised_fl", {"lr": 0.01}),
    **ALTERNATIVES,
    # Post hoc (named after SemiFL's code baseline beat FedAnchor in every claim, before these runs existed):
    # FedAnchor given SemiFL's code's server step and optimiser too (its CE epoch 5 times, then the L_c epoch), so
    # that the two differ only in the pseudo-labeller and the anchor head's epoch
    SEMIFL_SERVER: ("fedanchor", {**ANCHOR, **SEMIFL_CODE}),
}


def paper_config(method: str, device: str, **setting) -> RunConfig:
    known = {**METHODS, **DIAGNOSTICS}
    if method not in known:
        raise ConfigError(f"method={method!r}: must be one of {', '.join(known)}")
    algorithm, changes = known[method]
    cfg = RunConfig(algorithm=algorithm, device=device, **{**SHARED, **setting, **changes})
    above = SERVER_SGD["semifl_code"].large_batch_above[0]
    if all(changes.get(k) == v for k, v in SEMIFL_CODE.items()) and cfg.server_labeled > above:
        cfg = cfg.replace(server_sgd="semifl_code")   # SemiFL's code's server batch: 250 above 1,000 labels
    return cfg


def table_cells(table: str, profile: Profile, device: str, seeds=None) -> list[Cell]:
    """Every accuracy cell the paper prints for `table` (table1-3), from the paper-values CSV, with
    its config; cells of methods not implemented here are left out (see `missing_methods`)."""
    rows = paper_values()
    rows = rows[(rows.paper == PAPER) & (rows.table == table) & (rows.metric == "accuracy")]
    if rows.empty:
        raise ConfigError(f"table={table!r}: must be one of table1, table2, table3")
    seeds = SEEDS if seeds is None else seeds
    cells = []
    for row in rows.itertuples():
        if row.method not in METHODS:
            continue
        model, alpha = SETTINGS[row.setting]
        cfg = paper_config(row.method, device, dataset=row.dataset, model=model, dirichlet_alpha=alpha,
                           server_labeled=int(row.labeled))
        cells.append(Cell(PAPER, table, row.setting, row.labeled, row.dataset, row.method,
                          profile.configs(cfg, list(seeds), quick=QUICK_CIFAR), paper_runs=len(SEEDS),
                          paper_value=paper_value(table, row.setting, row.labeled, row.dataset, row.method)))
    return cells


def missing_methods(table: str) -> list[str]:
    rows = paper_values()
    rows = rows[(rows.paper == PAPER) & (rows.table == table) & (rows.metric == "accuracy")]
    return sorted(set(rows.method) - set(METHODS))


NOT_IMPLEMENTED = "not-implemented"


def not_implemented_rows(table: str, profile: Profile, device: str) -> pd.DataFrame:
    """The paper's cells of methods this package does not implement yet, as report rows, so that
    every printed cell appears in the report."""
    pv = paper_values()
    rows = pv[(pv.paper == PAPER) & (pv.table == table) & (pv.metric == "accuracy")
              & pv.method.isin(missing_methods(table))]
    return pd.DataFrame([{**{c: getattr(r, c) for c in ("paper", "table", "setting", "labeled", "dataset",
                                                          "method", "metric")},
                          "paper_value": float(r.value), "reproduced_value": math.nan, "reproduced_std": math.nan,
                          "n_runs": 0, "profile": profile.name, "device": device, "seconds": 0.0,
                          "status": NOT_IMPLEMENTED} for r in rows.itertuples()], columns=COLUMNS)


# quick on CIFAR/SVHN (where the data are present): the same networks, 50 rounds of one local epoch
QUICK_CIFAR = {"rounds": 50, "local_epochs": 1}

# --- Fashion-MNIST: a setting the paper does not report ----------------------------------------
# Anchors at the server (250 = 25 per class, CIFAR-10's smallest anchor set), 100 clients by
# LDA, IID (Dir = 1000) and Dir(0.1). quick: the FedSiam MNIST CNN with the 128-d anchor head,
# 30 rounds of one local epoch; paper: ResNet-18 with the paper's protocol.
FMNIST_SETTINGS = {"iid": 1000.0, "dir0.1": 0.1}
FMNIST_METHODS = ("fedanchor", "semifl", "fedcon", "fedavg_fixmatch", "supervised")
CLAIM_METHODS = ("fedanchor", "semifl")          # the methods the claims compare (claims.py)
# The default `headline` profile: the paper's central comparison, FedAnchor's pseudo-labels against
# SemiFL's, with the supervised baseline beside them, IID only
HEADLINE_METHODS, HEADLINE_SETTINGS = ("fedanchor", "semifl", "supervised"), ("iid",)
FMNIST_QUICK = {"model": "cnn_mnist", "rounds": 30, "local_epochs": 1}
FMNIST_METRICS = ("accuracy", "pseudo_label_accuracy_all", "pseudo_label_accuracy", "selected")
SAME_VIEWS_METRICS = (*FMNIST_METRICS, "selected_softmax95")
# The metrics a method has a meaning for: the supervised baseline trains on the true labels (its pseudo-labels
# would read 100%, its "selected" every sample) and FedCon keeps no pseudo-labels; FedAvg+FixMatch's clients keep
# theirs by their own model's softmax as they train, so only the accuracy of the kept ones is logged
FMNIST_METRICS_OF = {"supervised": ("accuracy",), "fedcon": ("accuracy",),
                     "fedavg_fixmatch": ("accuracy", "pseudo_label_accuracy")}


def fmnist_cells(profile: Profile, device: str, methods=None, settings=None, anchors=(250,),
                 seeds=None, metrics=FMNIST_METRICS) -> list[Cell]:
    """methods, settings = None: the profile's scope; seeds = None: the profile's share of the paper's,
    else every seed given (at quick too: three seeds behind the claims at the reduced protocol)."""
    if methods is None:
        methods = profile.scope(FMNIST_METHODS, FMNIST_METHODS, headline=HEADLINE_METHODS)
    if settings is None:
        settings = profile.scope(list(FMNIST_SETTINGS), list(FMNIST_SETTINGS), headline=HEADLINE_SETTINGS)
    every_seed = seeds is not None
    seeds = SEEDS if seeds is None else seeds
    cells = []
    check_names("settings", settings, FMNIST_SETTINGS)
    for setting in settings:
        for n in anchors:
            for method in methods:
                cfg = paper_config(method, device, dataset="fashion_mnist", model="resnet18",
                                   dirichlet_alpha=FMNIST_SETTINGS[setting], server_labeled=n)
                configs = profile.configs(cfg, list(seeds), quick=FMNIST_QUICK, every_seed=every_seed)
                cells += [Cell(PAPER, "fmnist", setting, str(n), "fashion_mnist", method, configs, metric=m,
                               paper_runs=len(SEEDS),
                               paper_value=paper_value("fmnist", setting, str(n), "fashion_mnist", method, m))
                          for m in metrics if m in FMNIST_METRICS_OF.get(method, metrics)]
    return cells


# --- Figure 5: the latent space over training ----------------------------------------------------
FIGURE5_ROUNDS = (1, 100, 200, 500)      # the paper's panels (a)-(d)
FIGURE5_QUICK_ROUNDS = (1, 10, 30)       # quick: the Fashion-MNIST run's 30 rounds


def figure5_configs(profile: Profile, device: str, dataset: str = "fashion_mnist", rounds=None, seed: int = 1) -> list[RunConfig]:
    """FedAnchor runs that stop at each panel's round. Every random draw derives from (seed, round,
    party) and nothing in FedAnchor depends on the total round count, so the run stopped at round r
    is the longer run's first r rounds (tests/test_fedanchor.py checks it); the last is shared with
    the other notebooks. Fashion-MNIST is IID with 250 anchors; the paper's CIFAR-10 panel uses WRN-28-2
    with 250 anchors (the caption gives no anchor count; 250 is the smallest)."""
    if rounds is None:
        rounds = profile.scope(FIGURE5_ROUNDS, FIGURE5_QUICK_ROUNDS)
    if dataset == "fashion_mnist":
        cell = fmnist_cells(profile, device, methods=("fedanchor",), settings=("iid",), seeds=[seed])[0]
        base = cell.configs[0]
    else:
        cfg = paper_config("fedanchor", device, dataset=dataset, model="wrn28_2", dirichlet_alpha=1000.0,
                           server_labeled=250)
        base = profile.configs(cfg, [seed], quick=QUICK_CIFAR)[0]
    return [base.replace(rounds=r) for r in sorted({min(r, base.rounds) for r in rounds})]


# --- Figures 2-4 and 6-9: curves of Table 1's runs (ResNet-18) -------------------------------------
ALL_METHODS = ("supervised", "fedcon", "fedavg_fixmatch", "semifl", "fedanchor", "fedanchor_mix")
# figure -> (panels as (dataset, setting, anchors), methods, per-round metrics drawn)
CURVE_FIGURES = {
    2: ([("cifar10", "resnet18_dir0.1", "250"), ("cifar10", "resnet18_dir0.1", "500")], ("semifl",), ("selected",)),
    3: ([("cifar10", "resnet18_dir0.1", "250"), ("cifar10", "resnet18_dir0.1", "500")], ALL_METHODS,
        ("accuracy", "selected", "pseudo_label_accuracy_all")),
    4: ([("cifar100", "resnet18_iid", "2500")], ALL_METHODS, ("accuracy", "pseudo_label_accuracy_all")),
    6: ([("cifar10", s, n) for s in ("resnet18_iid", "resnet18_dir0.1") for n in ("250", "500", "5000")],
        ALL_METHODS, ("accuracy",)),
    7: ([("cifar100", s, n) for s in ("resnet18_iid", "resnet18_dir0.1") for n in ("2500", "10000")],
        ALL_METHODS, ("accuracy",)),
    8: ([("svhn", s, n) for s in ("resnet18_iid", "resnet18_dir0.1") for n in ("250", "1000")],
        ALL_METHODS, ("accuracy",)),
    # the classification head's and the anchor head's pseudo-labels of FedAnchor, beside SemiFL's
    9: ([("cifar10", "resnet18_dir0.1", "250"), ("cifar10", "resnet18_dir0.1", "500"),
         ("svhn", "resnet18_dir0.1", "250"), ("svhn", "resnet18_dir0.1", "1000")], ("fedanchor", "semifl"),
        ("pseudo_label_accuracy_all", "pseudo_label_accuracy_all_classifier")),
}


def curve_cells(figure: int, profile: Profile, device: str, seeds=None) -> list[tuple[tuple[str, str, str], Cell]]:
    """(panel, cell) pairs of a curve figure: Table 1's cells of its panels and methods."""
    if figure not in CURVE_FIGURES:
        raise ConfigError(f"figure={figure!r}: must be one of {', '.join(map(str, CURVE_FIGURES))}")
    panels, methods, _ = CURVE_FIGURES[figure]
    cells = table_cells("table1", profile, device, seeds=seeds)
    return [(panel, c) for panel in panels for c in cells
            if (c.dataset, c.setting, c.labeled) == panel and c.method in methods]
