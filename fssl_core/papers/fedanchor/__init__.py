"""FedAnchor: Tables 1-4 and Figures 2-9, and its central claims on Fashion-MNIST (README.md). Cells
(and Table 4's arithmetic) in cells.py, claims in claims.py, the printed numbers in values.csv."""
from .cells import (ALL_METHODS, ANCHOR, ANCHOR_DIM, CURVE_FIGURES, DIAGNOSTICS, FIGURE5_QUICK_ROUNDS, FIGURE5_ROUNDS,
                    FMNIST_METHODS, FMNIST_METRICS, FMNIST_QUICK, FMNIST_SETTINGS, FOLDER, HEADLINE_METHODS,
                    HEADLINE_SETTINGS, METHODS, NOT_IMPLEMENTED, NUM_CLASSES, PAPER, QUICK_CIFAR, SAME_VIEWS,
                    SAME_VIEWS_METRICS, SEEDS, SETTINGS,
                    SHARED, TABLE4_ANCHORS, curve_cells, downstream_overhead, figure5_configs, fmnist_cells,
                    missing_methods, not_implemented_rows, paper_config, paper_value, paper_values, table4_rows,
                    table_cells)
from .claims import CLAIM_METRICS, claim_comparisons, fmnist_claims, fmnist_same_views_claims

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
}
# The cells each published claim row compares (report.claim_verdicts tests them by claim_test)
CLAIM_COMPARISONS = {PAPER: claim_comparisons}
