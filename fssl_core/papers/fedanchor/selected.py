"""How FedAnchor's selected samples move over training, against the paper's word for it.

The paper (fedanchor.txt, on its Figs. 3-4) says the samples passing the anchor head's cosine threshold
grow with the training round. `selected_trend` reads, per run of a cell, the samples per client selected
in its first and in its last round (`selected`, logged every round) and whether they fell."""
from __future__ import annotations

import pandas as pd

from ...report.tables import Cell
from ...store import RunStore


def selected_trend(cells: list[Cell], store: RunStore | None = None) -> pd.DataFrame:
    """One row per finished run of `cells` that logged `selected`: its cell, seed, the selected samples per
    client in its first and last round, and `falls` (last below first)."""
    store = store or RunStore()
    rows = []
    for cell in cells:
        for cfg in cell.configs:
            result = store.load(cfg)
            logged = [m["selected"] for m in (result.metrics if result else []) if "selected" in m]
            if len(logged) < 2:
                continue
            rows.append({"setting": cell.setting, "method": cell.method, "seed": cfg.seed, "run_id": cfg.run_id,
                         "first_round": round(logged[0], 1), "last_round": round(logged[-1], 1),
                         "falls": logged[-1] < logged[0]})
    return pd.DataFrame(rows, columns=["setting", "method", "seed", "run_id", "first_round", "last_round", "falls"])
