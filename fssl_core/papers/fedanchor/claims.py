"""FedAnchor's central claims (§5.2-5.3) measured on Fashion-MNIST, a setting the paper does not report,
each with the cells it compares (CLAIM_SOURCES, tested by claim_test.claim_test through
report.claim_verdicts)."""
from __future__ import annotations

import math

import pandas as pd

from ...report.claim_test import Comparison, Side, claim_run_ids, row_side
from ...report.tables import COLUMNS
from .cells import PAPER, SAME_VIEWS, SEMIFL_SERVER

CLAIM_METRICS = ("pseudo_label_accuracy_all", "selected", "accuracy")
# what each claim's difference is counted in; "selected" counts a client's samples past its method's own test
# (FedAnchor: anchor cosine > 0.6; SemiFL: softmax > 0.95), so its gap is large by construction
CLAIM_UNITS = {"pseudo_label_accuracy_all": "points", "selected": "samples per client (two different tests)",
               "accuracy": "points", "selected_softmax95": "samples per client (one test: softmax > 0.95)"}
# "Samples past the threshold" counts FedAnchor's past its anchor cosine > 0.6 and SemiFL's past softmax > 0.95: a
# gap between two different tests, large by construction, so it is no evidence either way; counted by one test
# (SemiFL's, `selected_softmax95` in the same-views claims) it is tested.
TWO_TESTS = "each method's samples past its own threshold (cosine > 0.6 against softmax > 0.95): two different tests"
# The comparison without the two differences a reader must otherwise weigh: FedAnchor with SemiFL's
# weak server views (cells.SAME_VIEWS), and its samples counted by SemiFL's own test, softmax > 0.95 on its
# classifier head (`selected_softmax95`), against SemiFL's `selected` (its threshold is 0.95 in these cells)
SAME_VIEWS_METRICS = {"pseudo_label_accuracy_all": "pseudo_label_accuracy_all", "selected_softmax95": "selected",
                      "accuracy": "accuracy"}


def fmnist_claims(results: pd.DataFrame, method: str = "fedanchor", baseline: str = "semifl") -> pd.DataFrame:
    """The paper's three central claims (§5.2-5.3) on Fashion-MNIST, as differences ours − baseline's
    per setting: pseudo-label accuracy over all the clients' samples (points; the labeller's accuracy,
    SemiFL's "PAccuracy", what Figs. 3d, 4b and 9 compare), samples passing the threshold (per client
    and round) and test accuracy (points). A claim holds where ours is above the baseline's."""
    return pd.DataFrame([row for row, _ in _fmnist(results, method, baseline)], columns=COLUMNS)


def fmnist_same_views_claims(results: pd.DataFrame) -> pd.DataFrame:
    """The three claims again without the view and test differences (table `fmnist_same_views_claims`):
    FedAnchor trained with SemiFL's server views (`fedanchor_weak_server`) against SemiFL, its selected samples
    counted by SemiFL's test (SAME_VIEWS_METRICS)."""
    return pd.DataFrame([row for row, _ in _same_views(results)], columns=COLUMNS)


def _same_views(results: pd.DataFrame) -> list[tuple[dict, Comparison]]:
    return _fmnist(results, SAME_VIEWS, "semifl", table="fmnist_same_views_claims", metrics=SAME_VIEWS_METRICS)


def fmnist_semifl_server_claims(results: pd.DataFrame) -> pd.DataFrame:
    """FedAnchor with SemiFL's code's server step and optimiser (`fedanchor_semifl_server`, post hoc) against
    SemiFL: test accuracy, where the two differ only in the pseudo-labeller and the anchor head's epoch."""
    return pd.DataFrame([row for row, _ in _semifl_server(results)], columns=COLUMNS)


def _semifl_server(results: pd.DataFrame) -> list[tuple[dict, Comparison]]:
    return _fmnist(results, SEMIFL_SERVER, "semifl", table="fmnist_semifl_server_claims",
                   metrics={"accuracy": "accuracy"})


def _side(part: pd.DataFrame, method: str, metric: str) -> Side:
    hit = part[(part.method == method) & (part.metric == metric)]
    if hit.empty:
        return Side(f"{method} {metric}", math.nan, math.nan, 0)
    return row_side(hit.iloc[0], f"{method} {metric}")


def _fmnist(results: pd.DataFrame, method: str = "fedanchor", baseline: str = "semifl", table: str = "fmnist_claims",
            metrics: dict[str, str] | None = None) -> list[tuple[dict, Comparison]]:
    """Per setting, one claim row per metric: `method`'s metric minus `baseline`'s (`metrics`: ours -> theirs,
    by default each of CLAIM_METRICS against itself); a setting where either method was not measured is left out."""
    metrics = metrics or {m: m for m in CLAIM_METRICS}
    rows = []
    for (setting, labeled), part in results.groupby(["setting", "labeled"], sort=False):
        if not {method, baseline} <= set(part.method):
            continue
        first = part[part.method == method].iloc[0]
        for metric, theirs_metric in metrics.items():
            ours, theirs = _side(part, method, metric), _side(part, baseline, theirs_metric)
            comparison = Comparison(ours, (theirs,), unit=CLAIM_UNITS[metric],
                                    by_construction=TWO_TESTS if metric == "selected" else None)
            rows.append(({"paper": PAPER, "table": table, "setting": setting, "labeled": labeled,
                          "dataset": "fashion_mnist", "method": f"{method} vs {baseline}", "metric": f"{metric}_gap",
                          "paper_value": math.nan, "reproduced_value": round(ours.mean - theirs.mean, 2),
                          "reproduced_std": math.nan, "n_runs": int(first.n_runs), "profile": first.profile,
                          "device": first.device, "seconds": 0.0, "status": first.status,
                          "run_ids": claim_run_ids(comparison)}, comparison))
    return rows


# (paper, claims table) -> (the table of the cells it compares, the builder of its rows and comparisons)
CLAIM_SOURCES = {(PAPER, "fmnist_claims"): ("fmnist", _fmnist),
                 (PAPER, "fmnist_same_views_claims"): ("fmnist", _same_views),
                 (PAPER, "fmnist_semifl_server_claims"): ("fmnist", _semifl_server)}
