"""FedMix + FedFreq (the conference paper, arXiv 2110.13388) and FedMix + FedLoss (the journal paper
extending it, 计算机工程 2022): one folder, since the journal reruns the conference's experiment with
its own aggregation, and both papers' rows are read off the same runs where they print the same
experiment (README.md). Cells in cells.py, claims in claims.py, the CIFAR-10 figure notebooks' shared
steps in figures.py, each paper's printed numbers in values_fedfreq.csv and values_fedloss.csv."""
from .cells import (BEST_WEIGHTS, CIFAR, CIFAR_METRICS, CIFAR_QUICK, CIFAR_SETTINGS, EN_CHANGES, EN_METHOD, EN_PAPER,
                    EQUAL_WEIGHTS, FIGURE5_WEIGHTS, FIGURE6_LABELS, FIGURE6_MUS, FOLDER, HEADLINE_METHODS, METHODS,
                    PAPER, QUICK, QUICK_METHODS, SEEDS, SENSITIVITY, SENSITIVITY_ROUNDS, SHARED, STREAMING,
                    STREAMING_METRICS, cifar_cells, en_cells, figure4_cells, figure5_cells, figure6_cells, paper_config,
                    paper_value, sensitivity_cells, streaming_cells)
from .cells import DISPLAY_NAMES
from .claims import cifar_claims, claim_comparisons, streaming_claims, streaming_rounds
from .figures import draw_cifar_figure, reproduce_cifar_figure

# The cells each published claim row compares (report.claim_verdicts tests them by claim_test)
CLAIM_COMPARISONS = {PAPER: claim_comparisons}
