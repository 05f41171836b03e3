"""FedMix + FedFreq (fedmix-fedfreq.txt) and FedMix + FedLoss (fedmix-fedloss-zh.txt) as cells.

Both papers' shared training details (EN line 201, ZH line 235): SGD with learning rate 1e-3,
ResNet-9, 150 rounds, one epoch of batch 64 at the server (E_server, B_server) and at each client
(E_client, B_client), A = 5 augmented views for the pseudo-label, threshold τ = 0.80, N_s = 1,000
labeled samples at the server, mixing weights (α, β, γ) = (0.5, 0.3, 0.2).

Choices where the papers are silent (each also where the code is):
- One optimiser for every method, the baseline included: SGD with momentum 0.9 and
  weight decay 1e-4 at lr 1e-3. The papers say "both our model and baseline use SGD ... with initial
  learning rate 1e-3" (EN line 201, ZH line 235), one optimiser for both; they do not say momentum.
  FedMatch at momentum 0 (its official optimiser) beside FedMix at 0.9 would take a step about
  10x smaller for the baseline the claims are measured against. At lr 1e-3 FedMatch's L2 spring is
  not the problem it is at FedSiam's lr 1e-2 (algorithms/fedmatch.py: lr·2λ_L2 = 0.02, heavily
  damped), and momentum 0 leaves every method near chance for most of a quick run (SL: 14% at round
  24), so 0.9 is the shared setting; the streaming notebook's sensitivity table shows momentum 0.
- The journal's "FedMix" row mixes with equal weights 1/3 (its "α = β = λ = 0.33"); FedMix-FedAvg
  uses the best weights with FedAvg's sample-count weighting; FedMix-FedLoss and FedMix-FedFreq
  the best weights with their own rules. With every client in every round (the streaming
  setting, F = 100%) FedFreq's weights are uniform, which the notebook shows.
- FedMatch, the baseline, is this package's labels-at-server FedMatch (algorithms/fedmatch.py)
  under the same data, rounds, batches and optimiser.
- The conference paper's cells (EN_PAPER) run its own FedMix: FedFreq with the one-hot argmax
  pseudo-label of its Eq. 8, not the journal's sharpening (`en_cells`).
"""
from __future__ import annotations

from pathlib import Path

from ...config import ConfigError

from ...run_config import RunConfig
from ...profiles import Profile
from ...report.tables import Cell
from ..values import check_names, printed_value

FOLDER = Path(__file__).parent          # values_fedfreq.csv, values_fedloss.csv: the papers' printed numbers
PAPER = "fedmix_fedloss"
SEEDS = [1]                   # the papers do not say how many runs their curves average
BEST_WEIGHTS = {"mix_alpha": 0.5, "mix_beta": 0.3, "mix_gamma": 0.2}
EQUAL_WEIGHTS = {"mix_alpha": 1 / 3, "mix_beta": 1 / 3, "mix_gamma": 1 - 2 / 3}
# The papers' names for their methods (values_*.csv's ids, papers/README.md), in legends and tables
DISPLAY_NAMES = {"fedmix_fedfreq": "FedMix+FedFreq", "fedmix_fedloss": "FedMix+FedLoss",
                 "supervised_server": "SL (server)", "fedmatch": "FedMatch"}
# method id -> (algorithm, config changes)
METHODS = {
    "supervised_server": ("supervised_server", {}),
    "fedmatch": ("fedmatch", {}),
    "fedmix": ("fedmix", {**EQUAL_WEIGHTS, "client_weighting": "samples"}),
    "fedmix_fedavg": ("fedmix", {**BEST_WEIGHTS, "client_weighting": "samples"}),
    "fedmix_fedfreq": ("fedmix", {**BEST_WEIGHTS, "client_weighting": "fedfreq"}),
    "fedmix_fedloss": ("fedmix", {**BEST_WEIGHTS, "client_weighting": "fedloss"}),
}
# The network, a reading fixed before any of its runs existed (git order): the papers say "ResNet-9" and nothing
# more (EN line 201, ZH line 235); FedMix's CIFAR split and lr are FedMatch's code's (READINGS.md, "The network"),
# whose ResNet-9 has no BatchNorm (`resnet9_fedmatch`, models/resnet9_fedmatch.py cites its layers). The
# alternative is the DAWNBench ResNet-9 with BatchNorm after every convolution (`resnet9`), on which the H100 rows
# of Fig. 8 ran; those rows sit under their own setting (NETWORKS).
SHARED = dict(rounds=150, local_epochs=1, server_epochs=1, batch_size=64, lr=1e-3, momentum=0.9, weight_decay=1e-4,
              pseudo_label_threshold=0.80, fedmix_views=5, server_labeled=1000, server_balanced=True,
              model="resnet9_fedmatch")
# FedMatch's code, on which FedMix's authors built theirs, where both papers are silent: the reading for the cells
# that follow that code (the conference paper's CIFAR-10 figures; Fig. 8 at the paper protocol on FedMatch's network),
# fixed before any run of them (READINGS.md, "The reference code's settings"; wyjeong/FedMatch at 4947aa2): no weight
# decay (its Keras L2 regularisers sit on layers whose losses no training step adds: models/fedmatch/client.py
# L66-103, server.py L143-146, modules/train.py L103-106, L147-159), inputs ÷ 255 alone (data/loader.py L60; the
# `stats` at L29-35 are never applied), every weight × 1.2 at the start (modules/nets.py L95, the plain branch; the
# decomposed σ_0 + ψ_0 = 1.2 σ_0, L59), one σ_0 for every run (nets.py L101-111 set_init_params, called at
# modules/federated.py L63: misc/init_sig.npy, committed in their repository, read by every run; here the first
# seed's start, their file being theirs), and FedMatch's own confidence 0.75 (config.py L65). SHARED's values (weight
# decay 1e-4, per-channel normalisation, the network's own scale, each seed its own start, τ = 0.80 for FedMatch)
# stay the named alternative: every reduced profile and the BatchNorm ResNet-9, on which all committed runs trained.
REFERENCE_CODE = {"weight_decay": 0.0, "input_scale": "unit", "initial_scale": 1.2, "init_seed": 1}
REFERENCE_CODE_METHODS = {"fedmatch": {"pseudo_label_threshold": 0.75}}


def reference_code(method: str) -> dict:
    """FedMatch's code's settings for `method`'s cells that follow it (REFERENCE_CODE)."""
    return {**REFERENCE_CODE, **REFERENCE_CODE_METHODS.get(method, {})}


# Streaming non-IID Fashion-MNIST (ZH line 233): 64,000 / 2,000 resplit, 1,000 labeled at the
# server, 63,000 unlabeled over 10 clients by Dirichlet μ = 0.1, 10 parts per client, one a round.
STREAMING = dict(dataset="fashion_mnist", partition="streaming_dirichlet", clients=10, clients_per_round=10,
                 dirichlet_alpha=0.1, stream_parts=10, resplit_train=64000, resplit_test=2000)
# quick: the FedSiam MNIST CNN instead of ResNet-9 (≈300× fewer multiply-adds, so a 2-core CPU
# runs it) and 50 rounds = 5 passes over the stream; rows say "reduced".
QUICK = {"model": "cnn_mnist", "rounds": 50}
# quick and smoke compare FedMix-FedLoss and FedMix-FedFreq with the two baselines the claims name
# (the other FedMix variants differ only in their mixing weights or FedAvg's weighting); a notebook
# parameter set to a list overrides it.
QUICK_METHODS = ("supervised_server", "fedmatch", "fedmix_fedloss", "fedmix_fedfreq")
# The default `headline` profile: the journal's claim (FedMix-FedLoss vs FedMatch) with SL, FedMix's
# own supervised part: under Eq. 9 its ceiling while the clients contribute nothing, passed only
# through the clients' ψ
HEADLINE_METHODS = ("supervised_server", "fedmatch", "fedmix_fedloss")
STREAMING_METRICS = ("accuracy", "best_accuracy", "best_round", "total_mb")
STREAMING_SETTING = "stream_dir0.1"
# Fig. 8's network at the paper protocol -> the setting its rows are filed under: the reading (SHARED's) under the
# paper's setting, the BatchNorm alternative under a setting that names it (quick runs the MNIST CNN either way)
NETWORKS = {"resnet9_fedmatch": STREAMING_SETTING, "resnet9": f"{STREAMING_SETTING}_resnet9_bn"}


def paper_value(paper: str, table: str, setting: str, labeled: str, dataset: str, method: str,
                metric: str = "accuracy") -> float | None:
    """What `paper` (either FedMix paper) printed at these coordinates; None where it printed nothing."""
    return printed_value(FOLDER, paper, table, setting, labeled, dataset, method, metric)


def paper_config(method: str, device: str, precision: str = "fp32", **setting) -> RunConfig:
    if method not in METHODS:
        raise ConfigError(f"method={method!r}: must be one of {', '.join(METHODS)}")
    algorithm, changes = METHODS[method]
    # SHARED holds the semi-supervised methods' τ too, which the supervised baseline does not read
    return RunConfig.dropping_unread(algorithm=algorithm, device=device, precision=precision,
                                     **{**SHARED, **setting, **changes})


def streaming_cells(profile: Profile, device: str, methods=None, seeds=None, precision: str = "fp32",
                    network: str = SHARED["model"]) -> list[Cell]:
    """The journal's Fig. 8: every method on streaming non-IID Fashion-MNIST, each with its final and
    best accuracy, the round of the best, and the megabytes sent both ways. methods=None: the
    profile's scope. `precision`: on CUDA, 'fp32' (exact) or 'tf32' (learning/precision.py; the paper
    protocol's four runs fit a 15-minute GPU lease only in TF32). seeds=None: the profile's share of SEEDS, else
    every seed given (at quick too: three seeds behind the claims at the reduced protocol). `network`: the paper
    protocol's ResNet-9 (NETWORKS), its rows under that network's setting; a reduced profile runs the MNIST CNN."""
    if network not in NETWORKS:
        raise ConfigError(f"network={network!r}: must be one of {', '.join(NETWORKS)}")
    if network != SHARED["model"] and profile.protocol != "paper":
        raise ConfigError(f"network={network!r}: profile {profile.name} runs {QUICK['model']}, not a ResNet-9; "
                          f"the alternative network is the paper profile's (leave network={SHARED['model']!r})")
    every_seed = seeds is not None
    seeds = SEEDS if seeds is None else seeds
    if methods is None:
        methods = profile.scope(METHODS, QUICK_METHODS, headline=HEADLINE_METHODS)
    cells = []
    for method in methods:
        cfg = paper_config(method, device, precision, **STREAMING, model=network)
        if profile.protocol == "paper" and network == SHARED["model"]:     # FedMatch's network: its code's settings
            cfg = cfg.replace(**reference_code(method))
        configs = profile.configs(cfg, list(seeds), quick=QUICK, every_seed=every_seed)
        cells += [Cell(PAPER, "fig8", NETWORKS[network], "1000", "fashion_mnist", method, configs, metric=m,
                       paper_runs=len(SEEDS),
                       paper_value=paper_value(PAPER, "fig8", STREAMING_SETTING, "1000", "fashion_mnist", method, m))
                  for m in STREAMING_METRICS]
    return cells



# What FedMix's streaming result rests on where the papers are silent. Each row
# changes one reading of FedMix-FedLoss, or of a baseline beside it, on the streaming setting at
# quick's protocol shortened to SENSITIVITY_ROUNDS rounds (smoke shortens it further). Values:
# accuracy at the last round and the best.
SENSITIVITY_ROUNDS = 20
SENSITIVITY = {
    "fedmix_fedloss": ("fedmix_fedloss", {}),
    "lambda_2=0": ("fedmix_fedloss", {"fedmix_lambda_2": 0.0}),
    "lambda_2=10": ("fedmix_fedloss", {"fedmix_lambda_2": 10.0}),
    "argmax (T->0)": ("fedmix_fedloss", {"fedmix_pseudo_label": "argmax"}),
    "tau=0.5": ("fedmix_fedloss", {"pseudo_label_threshold": 0.5}),
    "weights 1/3": ("fedmix_fedloss", EQUAL_WEIGHTS),
    "momentum=0": ("fedmix_fedloss", {"momentum": 0.0}),
    "lr=1e-2": ("fedmix_fedloss", {"lr": 1e-2}),
    "clients start from sigma": ("fedmix_fedloss", {"fedmix_client_start": "sigma"}),
    "SL warm-up 10 rounds": ("fedmix_fedloss", {"fedmix_warmup_rounds": 10}),
    "SL": ("supervised_server", {}),
    "SL lr=3e-4 (beta*lr)": ("supervised_server", {"lr": 3e-4}),
    "SL momentum=0": ("supervised_server", {"momentum": 0.0}),
    "SL lr=1e-2": ("supervised_server", {"lr": 1e-2}),
    "fedmatch": ("fedmatch", {}),
    "fedmatch momentum=0": ("fedmatch", {"momentum": 0.0}),
}


def sensitivity_cells(profile: Profile, device: str, rows=None, seeds=None) -> list[Cell]:
    """One cell per SENSITIVITY row and metric (accuracy, best_accuracy): the streaming setting,
    quick's reductions and SENSITIVITY_ROUNDS rounds, the row's changes last. rows=None: every row,
    two at smoke (the wiring) and none at headline (the claims alone)."""
    seeds = SEEDS if seeds is None else seeds
    if rows is None:
        rows = profile.scope(SENSITIVITY, SENSITIVITY, smoke=("fedmix_fedloss", "SL"), headline=())
    cells = []
    for row in rows:
        method, changes = SENSITIVITY[row]
        # always the short CNN protocol, under every profile (smoke's overrides shorten it further)
        cfg = paper_config(method, device, **STREAMING).replace(**{**QUICK, "rounds": SENSITIVITY_ROUNDS, **changes})
        configs = profile.configs(cfg, list(seeds))
        cells += [Cell(PAPER, "fig8_sensitivity", row, "1000", "fashion_mnist", method, configs, metric=m,
                       paper_value=paper_value(PAPER, "fig8_sensitivity", row, "1000", "fashion_mnist", method, m))
                  for m in ("accuracy", "best_accuracy")]
    return cells


# --- CIFAR-10 (EN Figs. 4-6, journal Figs. 4-7 and Table 1) ------------------------------------
# EN line 197 / ZH line 231: CIFAR-10 pooled and resplit 56,000 / 2,000, 1,000 labels at the server
# (100 a class), 55,000 unlabeled over K = 100 clients (IID: 550 each, 55 a class), F = 5 clients a
# round; non-IID is Dirichlet μ = 0.1 ("all non-IID experiments", ZH line 231).
CIFAR = dict(dataset="cifar10", clients=100, clients_per_round=5, resplit_train=56000, resplit_test=2000,
             server_labeled=1000)
CIFAR_SETTINGS = {"iid": {"partition": "server_iid", "stratified": True},
                  "dir0.1": {"partition": "server_dirichlet", "dirichlet_alpha": 0.1}}
# quick: the FedSiam CIFAR CNN instead of ResNet-9, 50 rounds; rows say "reduced"
CIFAR_QUICK = {"model": "cnn_cifar", "rounds": 50}
# Fig. 5's grid of mixing weights (α, β, γ): the papers print only the best, (0.5, 0.3, 0.2); the
# rest of the grid is ours, spanning α below and above it and the equal weights their IID claim names
FIGURE5_WEIGHTS = ((0.5, 0.3, 0.2), (0.6, 0.2, 0.2), (0.4, 0.3, 0.3), (1 / 3, 1 / 3, 1 / 3), (0.3, 0.4, 0.3),
                   (0.2, 0.5, 0.3))
FIGURE6_MUS = (0.1, 1.0, 10.0, 100.0)            # EN line 219
FIGURE6_LABELS = (700, 800, 1000)                # EN line 221: 800 best, 700 "decreases greatly"
CIFAR_METRICS = ("accuracy", "best_accuracy")


def cifar_cells(table: str, paper: str, profile: Profile, device: str, methods, settings=("iid", "dir0.1"),
                labeled=(1000,), changes_of=None, seeds=None) -> list[Cell]:
    """Cells of one CIFAR-10 figure: `methods` × `settings` × N_s (labeled), each with its final and best
    accuracy; `changes_of(method, setting)` gives a cell's own departures as (setting name, changes)."""
    seeds = SEEDS if seeds is None else seeds
    cells = []
    check_names("settings", settings, CIFAR_SETTINGS)
    for setting in settings:
        for n in labeled:
            for method in methods:
                for name, changes in (changes_of(method, setting) if changes_of else [(setting, {})]):
                    cfg = paper_config(method, device, **{**CIFAR, **CIFAR_SETTINGS[setting], "server_labeled": n})
                    cfg = cfg.replace(**reference_code(method))     # the conference cells follow FedMatch's code
                    cfg = cfg.replace(**changes)      # the cell's own departure wins over the method's
                    configs = profile.configs(cfg, list(seeds), quick=CIFAR_QUICK)
                    cells += [Cell(paper, table, name, str(n), "cifar10", method, configs, metric=m,
                                   paper_runs=len(SEEDS),
                                   paper_value=paper_value(paper, table, name, str(n), "cifar10", method, m))
                              for m in CIFAR_METRICS]
    return cells


EN_PAPER = "fedmix_fedfreq"
# The conference paper's FedMix runs its own algorithm, not the journal's: FedFreq aggregation (EN
# Algorithm 1 line 16, Eq. 10; the journal's FedLoss is not in it) and the one-hot argmax
# pseudo-label of EN Eq. 8 (line 126: "ŷ = 1(Max(Σ_i f(π_i(u))))", "our proposed argmax method"),
# where the journal sharpens (ZH Eq. 8-9, line 142-145). Its cells are therefore runs of their own.
# Its L_u (EN Eq. 7) also has the tether + λ_L1‖σ_t − ψ_t^k‖², σ_t = ω_t (EN Algorithm 1 line 4), which the journal
# drops. The paper gives no λ_L1: 10, FedMatch's lambda_l2 for labels-at-server (wyjeong/FedMatch config.py,
# set_config), the same spring between the server's and a client's model in the code FedMix's split and lr come from.
EN_METHOD = "fedmix_fedfreq"
EN_CHANGES = {"fedmix_pseudo_label": "argmax", "fedmix_tether": 10.0}


def _mirror(cell: Cell, paper: str, table: str, setting: str, method: str, metric: str = "accuracy") -> Cell:
    """The same runs read under another paper's coordinates (the two papers print the same experiment)."""
    return Cell(paper, table, setting, cell.labeled, cell.dataset, method, cell.configs, metric=metric,
                paper_runs=cell.paper_runs,
                paper_value=paper_value(paper, table, setting, cell.labeled, cell.dataset, method, metric))


def en_cells(table: str, profile: Profile, device: str, settings, labeled=(1000,), name_of=lambda s: s,
             seeds=None) -> list[Cell]:
    """The conference paper's FedMix (FedFreq, argmax pseudo-label) under its own coordinates: one
    accuracy cell per setting and N_s; `name_of(setting)` is the setting's name in the EN CSV."""
    cells = cifar_cells(table, EN_PAPER, profile, device, (EN_METHOD,), settings=settings, labeled=labeled,
                        changes_of=lambda method, setting: [(name_of(setting), EN_CHANGES)], seeds=seeds)
    return [c for c in cells if c.metric == "accuracy"]


def figure4_cells(profile: Profile, device: str, methods=tuple(METHODS), seeds=None) -> list[Cell]:
    """Journal Fig. 4 and Table 1, EN Fig. 4: every method, IID and Dir(0.1). The EN paper's FedMix
    is its FedFreq variant with its argmax pseudo-label (`en_cells`); its "non-IID" is read as
    Dir(0.1) (the journal's setting for all of them); Table 1's SL row is the supervised baseline's
    IID run (it never touches the clients' data)."""
    cells = cifar_cells("fig4", PAPER, profile, device, methods, seeds=seeds)
    for c in list(cells):
        if c.method == "supervised_server" and c.metric == "accuracy" and c.setting == "iid":
            cells.append(_mirror(c, PAPER, "table1", "server_only", "supervised_server"))
    cells += en_cells("fig4", profile, device, ("iid", "dir0.1"), seeds=seeds,
                      name_of=lambda s: "noniid" if s == "dir0.1" else s)
    return cells


def figure5_cells(profile: Profile, device: str, weights=FIGURE5_WEIGHTS, seeds=None) -> list[Cell]:
    """EN Fig. 5 / journal Fig. 5: FedMix-FedLoss under each (α, β, γ), IID and Dir(0.1)."""
    def grid(method, setting):
        return [(f"{setting} a={a:.2f} b={b:.2f} g={g:.2f}", {"mix_alpha": a, "mix_beta": b, "mix_gamma": 1 - a - b})
                for a, b, g in weights]
    return cifar_cells("fig5", PAPER, profile, device, ("fedmix_fedloss",), changes_of=grid, seeds=seeds)


def figure6_cells(profile: Profile, device: str, mus=FIGURE6_MUS, labeled=FIGURE6_LABELS, seeds=None) -> list[Cell]:
    """Journal Fig. 6: FedMix-FedLoss at each Dirichlet μ; journal Fig. 7: FedMix-FedLoss at each N_s
    beside FedMatch with 1,000 labels (ZH line 258), Dir(0.1); EN Fig. 6(b): the conference's
    FedMix-FedFreq (argmax pseudo-label) at each N_s (EN line 221)."""
    def by_mu(method, setting):
        return [(f"mu={mu:g}", {"dirichlet_alpha": mu}) for mu in mus]
    cells = cifar_cells("fig6", PAPER, profile, device, ("fedmix_fedloss",), settings=("dir0.1",),
                        changes_of=by_mu, seeds=seeds)
    # Fig. 7's partition is not stated: we run Dir(0.1); the cells keep the CSV's "unspecified"
    unspecified = lambda method, setting: [("unspecified", {})]
    cells += cifar_cells("fig7", PAPER, profile, device, ("fedmix_fedloss", "fedmatch"), settings=("dir0.1",),
                         labeled=labeled, changes_of=unspecified, seeds=seeds)
    cells = [c for c in cells if not (c.method == "fedmatch" and c.labeled != "1000")]   # FedMatch: 1,000 (ZH 258)
    # EN Fig. 6(b): the conference's FedMix-FedFreq (argmax) at each N_s, its own runs (not the
    # journal's FedLoss runs of Fig. 7), on the same unstated partition read as Dir(0.1)
    cells += en_cells("fig6", profile, device, ("dir0.1",), labeled=labeled, name_of=lambda s: "unspecified",
                      seeds=seeds)
    return cells

