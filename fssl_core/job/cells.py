"""Where a notebook's cells are trained: its runs go to the executor (those not yet in the store), and each cell
becomes its results row from its finished runs (report.tables.measured_row). The report only reads; this is the
one place a table's runs are entered from."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..data.availability import dataset_available
from ..executors import run_all
from ..profiles import Profile
from ..report.tables import COLUMNS, METRICS, NEEDS_DATA, Cell, measured_row, row_of
from ..store import RunStore


def reproduce_cells(cells: Sequence[Cell], profile: Profile, device: str,
                    store: RunStore | None = None, progress: bool = True) -> pd.DataFrame:
    """Run every cell's configs (cached runs are read back) and tabulate paper vs reproduced,
    reading each cell's metric through METRICS: the mean over seeds and their sample standard
    deviation (ddof = 1; NaN with one seed).

    All cells' runs go to the executor at once, so they run side by side on the available cores."""
    for cell in cells:
        if cell.metric not in METRICS:
            raise ValueError(f"Cell.metric={cell.metric!r}: must be one of {', '.join(METRICS)}")
    run_all([cfg for cell in cells if dataset_available(cell.dataset) for cfg in cell.configs],
            store=store, progress=progress)
    rows = []
    for cell in cells:
        if not dataset_available(cell.dataset):
            rows.append({**row_of(cell, profile, device), "status": NEEDS_DATA})
            continue
        rows.append(measured_row(cell, run_all(cell.configs, store=store, progress=progress), profile, device))
    return pd.DataFrame(rows, columns=COLUMNS)
