"""How FedAnchor's selected samples move over training, against the paper's word for it, and why.

The paper (fedanchor.txt, on its Figs. 3-4) says the samples passing the anchor head's cosine threshold
grow with the training round. `selected_trend` reads, per run of a cell, the samples per client selected
in its first and in its last round (`selected`, logged every round) and whether they fell.

Why, measured by studies/fedanchor/anchor_geometry.py (a replay of a run round by round, the geometry its
pseudo-labels see before each round's clients; measurements/2026-11-27-fedanchor-anchor-geometry). The reading
below was committed before any of it was measured (git order), with the predictions that would refute it:
- Cause named: the embeddings start in a narrow cone (the anchor head is a random projection of non-negative
  features), where a sample's cosine to the mean anchor of *several* classes is above t = 0.6, so nearly every
  sample passes whichever class wins; as training separates the classes, the cosines between classes fall and
  a sample that does not sit near its own class's anchors falls below t. Predictions: (1) the mean cosine
  between different classes' anchor means falls over the rounds; (2) the share of samples whose second-best
  class also scores above t falls with the selected share; (3) the within-class concentration (the norm of a
  class's mean normalised anchor) does not fall as much as the selected share. (1)-(2) failing refutes it.
- Not the cause, by construction: anchor drift between rounds. A round's client embeddings and its anchors come
  from the same downloaded model (Eq. 3), so how far the anchors moved since the last round does not enter.
"""
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
