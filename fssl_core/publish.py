"""A notebook's outputs land only when it completes, and a results table never shrinks unsaid.

The main job runs each notebook with $FSSL_OUTPUT_STAGING set: paths.results_dir and figures_dir
then point into a staging folder, so a notebook that fails half-way leaves the published results
and figures as they were. Once it completes, `publish` moves its files into place:
- a figure replaces the old one, except after a `--param` narrowing, which draws only its slice:
  then the old figure stays (the console says so), unless the caller says the slice is the whole
  figure (`--replace-figures`, e.g. a table's MNIST columns where its other datasets need data);
- a results CSV replaces the old one when the notebook ran its whole scope; when `--param` narrowed
  it (a slice of a table), the new rows replace their cells' rows and the other cells' rows stay
  (keyed by the cell and the profile that measured it), so a partial rerun never drops a table's
  other cells;
- either way, cells with a measured value that the new file no longer holds are named on the
  console.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd

from .paths import project_root
from .report import COLUMNS, KEY, read_results
from .store import atomic_write_text

STAGING_ENV = "FSSL_OUTPUT_STAGING"
ROW_KEY = [*KEY, "profile"]      # one row per cell and measuring profile


def publish(staging: Path, narrowed: bool, replace_figures: bool = False) -> list[str]:
    """Move every file under `staging` to the same place under the project root; return the notes
    to show (rows kept or dropped). `replace_figures`: a narrowed run's figures replace the old ones."""
    notes = []
    for staged in sorted(p for p in staging.rglob("*") if p.is_file()):
        dest = project_root() / staged.relative_to(staging)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if staged.suffix == ".png" and narrowed and not replace_figures and dest.exists():
            # a narrowed run draws only its slice: the whole table's figure stays until a whole run
            notes.append(f"{dest.relative_to(project_root())}: kept (this run's figure shows only its --param slice; "
                         f"--replace-figures if the slice is the whole figure)")
        elif staged.suffix == ".csv" and dest.exists():
            new, note = merged_results(read_results(dest), read_results(staged), narrowed)
            atomic_write_text(dest, new[COLUMNS].to_csv(index=False))
            if note:
                notes.append(f"{dest.relative_to(project_root())}: {note}")
        else:
            os.replace(staged, dest)
    shutil.rmtree(staging, ignore_errors=True)
    return notes


def _keys(frame: pd.DataFrame) -> list[tuple]:
    """Each row's (cell, profile) key."""
    return list(map(tuple, frame[ROW_KEY].astype(str).values))


def merged_results(old: pd.DataFrame, new: pd.DataFrame, narrowed: bool) -> tuple[pd.DataFrame, str]:
    """The published table: `new` (whole scope) or `new` over `old` (narrowed scope: where both have a
    row, the one averaged over more runs); and a note on the measured rows of `old` that it keeps or drops."""
    old_keys, new_keys = _keys(old), _keys(new)
    published = set(new_keys)
    outside = old[[k not in published for k in old_keys]]
    measured_outside = outside[outside.n_runs.fillna(0) > 0]
    if narrowed:
        # a narrowed run may re-measure a published cell with fewer seeds (e.g. a table's IID cell as
        # its one-seed headline, while the table's row averages three): the row of more runs stays
        old_runs = dict(zip(old_keys, old.n_runs.fillna(0)))
        fewer = {k for k, n in zip(new_keys, new.n_runs.fillna(0)) if old_runs.get(k, 0) > n}
        kept = old[[k in fewer for k in old_keys]]
        merged = pd.concat([outside, kept, new[[k not in fewer for k in new_keys]]], ignore_index=True)
        notes = ([f"kept {len(measured_outside)} measured row(s) outside this run's scope"] if len(measured_outside) else [])
        notes += [f"kept {len(kept)} row(s) averaged over more runs than this narrowed run measured"] if len(kept) else []
        return merged, "; ".join(notes)
    if not len(measured_outside):
        return new, ""
    cells = ", ".join(f"{r.table} {r.setting} γ={r.labeled} {r.dataset} {r.method} ({r.profile})"
                      for r in measured_outside.head(5).itertuples())
    more = f" and {len(measured_outside) - 5} more" if len(measured_outside) > 5 else ""
    return new, f"dropped {len(measured_outside)} measured row(s) no longer in the notebook's scope: {cells}{more}"
