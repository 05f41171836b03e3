"""FedMix + FedFreq (the conference paper, arXiv 2110.13388) and FedMix + FedLoss (the journal paper
extending it, 计算机工程 2022): one folder, since the journal reruns the conference's experiment with
its own aggregation, and both papers' rows are read off the same runs where they print the same
experiment (README.md). Cells in cells.py, claims in claims.py, the CIFAR-10 figure notebooks' shared
steps in figures.py, each paper's printed numbers in values_fedfreq.csv and values_fedloss.csv."""
import importlib

from . import plans
from .plans import NOTEBOOK_PLANS
from .cells import (BEST_WEIGHTS, CIFAR, CIFAR_METRICS, CIFAR_QUICK, CIFAR_SETTINGS, EN_CHANGES, EN_METHOD, EN_PAPER,
                    EQUAL_WEIGHTS, FIGURE5_WEIGHTS, FIGURE6_LABELS, FIGURE6_MUS, FOLDER, HEADLINE_METHODS, METHODS,
                    PAPER, QUICK, QUICK_METHODS, SEEDS, SENSITIVITY, SENSITIVITY_ROUNDS, SHARED, STREAMING,
                    NETWORKS, STREAMING_METRICS, STREAMING_SETTING, cifar_cells, en_cells, figure4_cells, figure5_cells, figure6_cells, paper_config,
                    paper_value, sensitivity_cells, streaming_cells)
from .cells import DISPLAY_NAMES
from .claims import CLAIM_SOURCES, cifar_claims, streaming_claims, streaming_rounds

# The sentence introducing each of the papers' tables in results/REPORT.md (papers.table_intros)
TABLE_INTROS = {
    (PAPER, "fig4"): "Journal Fig. 4: every method on CIFAR-10, IID and Dir(0.1) (values read off the figure).",
    (PAPER, "table1"): "Journal Table 1: the supervised-only baseline (SL) on the server's labels.",
    (PAPER, "fig5"): "Journal Fig. 5: FedMix-FedLoss under each mixing weight (α, β, γ).",
    (PAPER, "fig6"): "Journal Fig. 6: FedMix-FedLoss at each Dirichlet μ.",
    (PAPER, "fig7"): "Journal Fig. 7: FedMix-FedLoss at each count of server labels N_s, beside FedMatch with 1,000.",
    (PAPER, "fig8"): "Journal Fig. 8, streaming non-IID Fashion-MNIST: the figure prints no values, so only the "
                     "claims below are tested; paper rows ran ResNet-9 at the journal's protocol on a GPU, quick rows "
                     "the MNIST CNN for 50 rounds.",
    (PAPER, "fig8_claims"): "The journal's claims for Fig. 8 (the same best accuracy as FedMatch, 10 rounds sooner, "
                            "half the communication), tested on its rows.",
    (PAPER, "fig8_sensitivity"): "One reading changed per row, the streaming setting shortened to 20 rounds at quick's "
                                 "protocol: why FedMix trails SL (notebooks/fedmix_streaming_fmnist, \"Why FedMix "
                                 "trails SL here\"). Exploratory, one seed.",
    (EN_PAPER, "fig4"): "The conference paper's Fig. 4: its FedMix (FedFreq, argmax pseudo-label), IID and non-IID.",
    (EN_PAPER, "fig6"): "The conference paper's Fig. 6(b): its FedMix at each N_s.",
}
# Where a refuted claim of each metric is explained (papers.claim_explanations): REPORT.md says so beside it
CLAIM_EXPLANATIONS = {**{(PAPER, metric): 'notebooks/fedmix_streaming_fmnist, "Why FedMix trails SL here"'
                         for metric in ("best_accuracy_gap", "rounds_saved_to_best_acc")},
                      (PAPER, "comm_reduction"): 'notebooks/fedmix_streaming_fmnist, "What crosses the network"'}


def __getattr__(name: str):
    """figures.py's functions (draw_cifar_figure, publish_cifar_figure, streaming_figure), imported when a notebook
    first reads one: they bring matplotlib.pyplot, which a plan (`reproduce --dry-run`) of this package never needs."""
    figures = importlib.import_module(f"{__name__}.figures")     # binds the submodule: `fedmix.figures` reads it
    if name == "figures":
        return figures
    try:
        return getattr(figures, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
