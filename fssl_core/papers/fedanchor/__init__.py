"""FedAnchor: Tables 1-4 and Figures 2-9, and its central claims on Fashion-MNIST (README.md). Cells
(and Table 4's arithmetic) in cells.py, claims in claims.py, the printed numbers in values.csv."""
from . import plans
from .plans import NOTEBOOK_PLANS
from .cells import (ALL_METHODS, ALTERNATIVES, ANCHOR, ANCHOR_DIM, CLAIM_METHODS, CURVE_FIGURES, DIAGNOSTICS, FIGURE5_QUICK_ROUNDS, FIGURE5_ROUNDS,
                    FMNIST_METHODS, FMNIST_METRICS, FMNIST_QUICK, FMNIST_SETTINGS, FOLDER, HEADLINE_METHODS,
                    HEADLINE_SETTINGS, METHODS, NOT_IMPLEMENTED, NUM_CLASSES, PAPER, QUICK_CIFAR, SAME_VIEWS,
                    SAME_VIEWS_METRICS, SEEDS, SEMIFL, SEMIFL_CODE, SETTINGS,
                    SHARED, TABLE4_ANCHORS, curve_cells, downstream_overhead, figure5_configs, fmnist_cells,
                    missing_methods, not_implemented_rows, paper_config, paper_value, paper_values, table4_rows,
                    table_cells)
from .claims import CLAIM_METRICS, CLAIM_SOURCES, fmnist_claims, fmnist_same_views_claims, fmnist_semifl_server_claims
from .selected import selected_trend

# The paper's names for its methods (values.csv's ids, papers/README.md), short enough to stay legible as
# rotated tick labels (Table 3's ablations abbreviated)
# The table figures (notebook = figure name -> (title, its main table's id)): drawn from the notebook's published rows by
# paper_vs_reproduced when reproduce publishes them (papers.redraw_table_figure), never from one run's slice
TABLE_FIGURES = {f"fedanchor_table{i}": (f"FedAnchor Table {i}", f"table{i}") for i in (1, 2, 3)}
DISPLAY_NAMES = {
    "supervised": "Supervised", "fedcon": "FedCon", "fedavg_fixmatch": "FedAvg+FixMatch", "semifl": "SemiFL",
    "fedanchor": "FedAnchor", "fedanchor_mix": "FedAnchor (mix)", "semifl_no_mixup": "SemiFL w/o mixup",
    "fedanchor_client_mixup": "FedAnchor +client mix", "fedanchor_no_mixup": "FedAnchor w/o mixup",
    "fedanchor_client_server_mixup": "FedAnchor +both mix", "fedanchor_server_mixup": "FedAnchor +server mix",
    "fedanchor_no_contr_loss": "FedAnchor w/o contr.", "fedanchor_weak_server": "FedAnchor, SemiFL's server views",
    "fedanchor_all_parameters": "FedAnchor, all parameters in both server epochs",
    "semifl_plain": "SemiFL, 1 plain server epoch + FedAvg",
    "fedanchor_semifl_server": "FedAnchor, SemiFL's code's server step",
}
# The sentence introducing each of the paper's tables in results/REPORT.md (papers.table_intros)
TABLE_INTROS = {
    (PAPER, "fmnist"): "Fashion-MNIST, a setting the paper does not report (no paper values): every method's "
                       "accuracy, pseudo-label accuracy and samples past the threshold, averaged over the rounds. "
                       "A contradiction of the paper: it says FedAnchor's selected samples grow with the training "
                       "round; here they fall from the first round to the last in every FedAnchor run "
                       "(notebooks/fedanchor_fmnist, `selected_trend`; tests/test_fedanchor.py). Measured why "
                       "(measurements/2026-11-27-fedanchor-anchor-geometry, the cause named before it was measured): "
                       "the embeddings start in one cone where most samples pass the 0.6 threshold for two classes "
                       "at once; as the classes separate, a sample passes only near its own class, so fewer pass "
                       "and more of those are right.",
    (PAPER, "fmnist_claims"): "The paper's three central claims on Fashion-MNIST, FedAnchor − SemiFL, as the paper's "
                              "cells run them: FedAnchor's server step head by head (§4.4), SemiFL as SemiFL's code "
                              "trains (5 server epochs, Nesterov, clipping, cosine lr, server and global momentum; "
                              "papers/fedanchor/READINGS.md); FedAnchor's server sees strong views, SemiFL's weak; "
                              "each counts its samples by its own test.",
    (PAPER, "fmnist_same_views_claims"): "The same claims without those two differences: FedAnchor on SemiFL's weak "
                                         "server views, its samples counted by SemiFL's test (softmax > 0.95).",
    (PAPER, "fmnist_semifl_server_claims"): "Post hoc (named after the claims above were refuted, before its runs "
                                            "existed): FedAnchor given SemiFL's code's server step and optimiser "
                                            "too, against SemiFL; test accuracy.",
    (PAPER, "table1"): "Table 1: ResNet-18, CIFAR-10/100 and SVHN, every anchor count.",
    (PAPER, "table2"): "Table 2: WRN-28-2, the same datasets and anchor counts.",
    (PAPER, "table3"): "Table 3: the mixup and contrastive-loss ablations.",
    (PAPER, "table4"): "Table 4: the anchors' downstream overhead, computed from ResNet-18's parameter count (no run).",
}
# Where a refuted claim of each metric is explained (papers.claim_explanations)
# (post hoc: the section's reading was named after the refutation; FedAnchor's pseudo-label accuracy under it was not
# measured, so that refutation stays unexplained)
CLAIM_EXPLANATIONS = {(PAPER, "accuracy_gap"): 'notebooks/fedanchor_fmnist, "SemiFL\'s server step for FedAnchor too" '
                                               '(post hoc)'}
