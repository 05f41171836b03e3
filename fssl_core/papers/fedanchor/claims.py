"""FedAnchor's central claims (§5.2-5.3) measured on Fashion-MNIST, a setting the paper does not report."""
from __future__ import annotations

import math

import pandas as pd

from ...report import COLUMNS
from .cells import PAPER


def fmnist_claims(results: pd.DataFrame, method: str = "fedanchor", baseline: str = "semifl") -> pd.DataFrame:
    """The paper's three central claims (§5.2-5.3) on Fashion-MNIST, as differences ours − baseline's
    per setting: pseudo-label accuracy over all the clients' samples (points; the labeller's accuracy,
    SemiFL's "PAccuracy", what Figs. 3d, 4b and 9 compare), samples passing the threshold (per client
    and round) and test accuracy (points). A claim holds where its difference is positive."""
    rows = []
    for (setting, labeled), part in results.groupby(["setting", "labeled"], sort=False):
        def value(m, metric):
            hit = part[(part.method == m) & (part.metric == metric)]
            return float(hit.reproduced_value.iloc[0]) if len(hit) else math.nan
        first = part.iloc[0]
        for metric in ("pseudo_label_accuracy_all", "selected", "accuracy"):
            gap = value(method, metric) - value(baseline, metric)
            rows.append({"paper": PAPER, "table": "fmnist_claims", "setting": setting, "labeled": labeled,
                         "dataset": "fashion_mnist", "method": f"{method} vs {baseline}", "metric": f"{metric}_gap",
                         "paper_value": math.nan, "reproduced_value": round(gap, 2), "reproduced_std": math.nan,
                         "n_runs": int(first.n_runs), "profile": first.profile, "device": first.device,
                         "seconds": 0.0, "status": first.status})
    return pd.DataFrame(rows, columns=COLUMNS)
