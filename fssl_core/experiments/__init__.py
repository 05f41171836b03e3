"""Paper tables as lists of cells: each cell names its paper coordinates and the RunConfigs
(one per seed, per profile) that reproduce it. Notebooks call these; the run store runs them."""
from __future__ import annotations

import pandas as pd


def _fedsiam_far_cells(frame: pd.DataFrame) -> pd.DataFrame:
    from . import fedsiam
    return fedsiam.explain_published(frame)


# Per paper whose notebooks measure causes: its published cells beyond report.WITHIN_POINTS, each with a
# boolean `cause_measured` (and the report's KEY columns but `paper`); report.summary counts them.
FAR_CELL_CAUSES = {"fedsiam": _fedsiam_far_cells}
