"""FedAnchor's central claims (§5.2-5.3) measured on Fashion-MNIST, a setting the paper does not report,
each with the cells it compares (`claim_comparisons`, tested by claim_test.claim_test through
report.claim_verdicts)."""
from __future__ import annotations

import math

import pandas as pd

from ...claim_test import Comparison, Side
from ...report import CLAIM_KEY, COLUMNS
from .cells import PAPER

CLAIM_METRICS = ("pseudo_label_accuracy_all", "selected", "accuracy")
# what each claim's difference is counted in; "selected" counts a client's samples past its method's own test
# (FedAnchor: anchor cosine > 0.6; SemiFL: softmax > 0.95), so its gap is large by construction
CLAIM_UNITS = {"pseudo_label_accuracy_all": "points", "selected": "samples per client (two different tests)",
               "accuracy": "points"}


def fmnist_claims(results: pd.DataFrame, method: str = "fedanchor", baseline: str = "semifl") -> pd.DataFrame:
    """The paper's three central claims (§5.2-5.3) on Fashion-MNIST, as differences ours − baseline's
    per setting: pseudo-label accuracy over all the clients' samples (points; the labeller's accuracy,
    SemiFL's "PAccuracy", what Figs. 3d, 4b and 9 compare), samples passing the threshold (per client
    and round) and test accuracy (points). A claim holds where ours is above the baseline's."""
    return pd.DataFrame([row for row, _ in _fmnist(results, method, baseline)], columns=COLUMNS)


def _side(part: pd.DataFrame, method: str, metric: str) -> Side:
    hit = part[(part.method == method) & (part.metric == metric)]
    if hit.empty:
        return Side(f"{method} {metric}", math.nan, math.nan, 0)
    row = hit.iloc[0]
    n = 0 if pd.isna(row.n_runs) else int(row.n_runs)
    return Side(f"{method} {metric}", float(row.reproduced_value), float(row.get("reproduced_std", math.nan)), n)


def _fmnist(results: pd.DataFrame, method: str = "fedanchor", baseline: str = "semifl") -> list[tuple[dict, Comparison]]:
    rows = []
    for (setting, labeled), part in results.groupby(["setting", "labeled"], sort=False):
        first = part.iloc[0]
        for metric in CLAIM_METRICS:
            ours, theirs = _side(part, method, metric), _side(part, baseline, metric)
            rows.append(({"paper": PAPER, "table": "fmnist_claims", "setting": setting, "labeled": labeled,
                          "dataset": "fashion_mnist", "method": f"{method} vs {baseline}", "metric": f"{metric}_gap",
                          "paper_value": math.nan, "reproduced_value": round(ours.mean - theirs.mean, 2),
                          "reproduced_std": math.nan, "n_runs": int(first.n_runs), "profile": first.profile,
                          "device": first.device, "seconds": 0.0, "status": first.status},
                         Comparison(ours, (theirs,), unit=CLAIM_UNITS[metric])))
    return rows


def claim_comparisons(published: pd.DataFrame) -> dict[tuple, Comparison]:
    """Per published Fashion-MNIST claim row (report.CLAIM_KEY as a tuple), the cells it compares: the
    claims' builder run on the published `fmnist` cells at each measuring profile (report.claim_verdicts)."""
    cells = published[(published.paper == PAPER) & (published.table == "fmnist")]
    out = {}
    for _, part in cells.groupby("profile", sort=False):
        out.update({tuple(row[k] for k in CLAIM_KEY): comparison for row, comparison in _fmnist(part)})
    return out
