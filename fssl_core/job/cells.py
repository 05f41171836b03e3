"""Where a notebook's cells are trained: its runs go to the executor (those not yet in the store), and each cell
becomes its results row from its finished runs (report.tables.measured_row). The report only reads; this is the
one place a table's runs are entered from.

A rebuild from the records (`reproduce --from-records`, RECORDS_ONLY_ENV set for its kernels) trains nothing: a
cell is measured only where every run it plans has a record, else it publishes no value (`NOT_RECORDED`), so a
rebuild can only repeat what the records say, never a cell measured on part of its seeds."""
from __future__ import annotations

import os
from typing import Sequence

import pandas as pd

from ..data.availability import dataset_available
from ..executors import run_all
from ..profiles import Profile
from ..report.tables import COLUMNS, METRICS, NEEDS_DATA, NOT_RECORDED, Cell, measured_row, row_of
from ..store import RunStore

RECORDS_ONLY_ENV = "FSSL_RECORDS_ONLY"


def records_only() -> bool:
    """Whether this process rebuilds from the records alone (`reproduce --from-records` sets it for its kernels)."""
    return os.environ.get(RECORDS_ONLY_ENV) == "1"


def train_runs(configs: Sequence, store: RunStore | None = None, final_state: bool = False) -> bool:
    """Train the runs not yet in the store (cached ones are read back); True where every run is then finished.
    From the records alone nothing trains: True only where every run already has a record, and with `final_state`
    (a notebook that reads the trained weights) its checkpoint too, which committed records do not carry."""
    if records_only():
        store = store or RunStore()
        return all(store.has_final_state(cfg) if final_state else store.load(cfg) is not None for cfg in configs)
    run_all(list(configs), store=store)
    return True


def reproduce_cells(cells: Sequence[Cell], profile: Profile, device: str,
                    store: RunStore | None = None, progress: bool = True) -> pd.DataFrame:
    """Run every cell's configs (cached runs are read back) and tabulate paper vs reproduced,
    reading each cell's metric through METRICS: the mean over seeds and their sample standard
    deviation (ddof = 1; NaN with one seed).

    All cells' runs go to the executor at once, so they run side by side on the available cores."""
    for cell in cells:
        if cell.metric not in METRICS:
            raise ValueError(f"Cell.metric={cell.metric!r}: must be one of {', '.join(METRICS)}")
    if records_only():
        return _recorded_cells(cells, profile, device, store or RunStore())
    run_all([cfg for cell in cells if dataset_available(cell.dataset) for cfg in cell.configs],
            store=store, progress=progress)
    rows = []
    for cell in cells:
        if not dataset_available(cell.dataset):
            rows.append({**row_of(cell, profile, device), "status": NEEDS_DATA})
            continue
        rows.append(measured_row(cell, run_all(cell.configs, store=store, progress=progress), profile, device))
    return pd.DataFrame(rows, columns=COLUMNS)


def _recorded_cells(cells: Sequence[Cell], profile: Profile, device: str, store: RunStore) -> pd.DataFrame:
    """reproduce_cells from the records alone: a cell whose every run has a record is measured as a trained one
    is; any other publishes no value (NEEDS_DATA where the data are missing, else NOT_RECORDED)."""
    rows = []
    for cell in cells:
        results = [store.load(cfg) for cfg in cell.configs]
        if all(r is not None for r in results):
            rows.append(measured_row(cell, results, profile, device))
        else:
            status = NOT_RECORDED if dataset_available(cell.dataset) else NEEDS_DATA
            rows.append({**row_of(cell, profile, device), "status": status})
    return pd.DataFrame(rows, columns=COLUMNS)
