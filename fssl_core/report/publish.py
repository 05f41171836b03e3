"""A notebook's outputs land only when it completes, and a results table never shrinks unless asked.

The main job runs each notebook with $FSSL_OUTPUT_STAGING set (paths.results_dir and figures_dir point into a
staging folder), so a notebook that fails half-way leaves the published results as they were. Once it completes,
`publish` moves its files into place:
- a figure, or the executed notebook, replaces the old one, except after a `--param` narrowing (it draws only its
  slice), unless the caller says the slice is the whole figure (`--replace-figures`);
- a results CSV is merged into the published one row by row (ROW_KEY: a cell and its measuring profile): a new
  row replaces its key's unless that one averages more runs, and a row the new file lacks stays, so a republish
  never loses a measured row; its claims are rebuilt from the merged cells (`rebuild`);
- `replace=True` (`reproduce --replace`) is the one way to drop published rows.
- a rebuild from the records (`unchanged=True`, `reproduce --from-records`) must repeat what is published: a value
  it would move at the same runs fails (`ValueMoved`, naming the rows) before anything is written; a row the
  records now hold more runs of is updated and named; it adds no row without runs and keeps each figure (one
  file for every profile; a table's figure is redrawn from its rows after).
Rows kept against the new file, or dropped, are named on the console before anything is written (`say`), and
`unproven_published_runs` names the run ids the results CSVs cite that the run store cannot prove finished.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import pandas as pd

from ..paths import project_root, published_results_dir, results_dir
from .tables import COLUMNS, KEY, NOT_RECORDED, read_results
from ..store import RunStore, atomic_write_text, exclusive

STAGING_ENV = "FSSL_OUTPUT_STAGING"
ROW_KEY = [*KEY, "profile"]      # one row per cell and measuring profile
NAMED = 5                        # rows named in a note; the rest are counted


class ValueMoved(RuntimeError):
    """A rebuild from the records would change a published value."""


def publish(staging: Path, narrowed: bool, replace_figures: bool = False, replace: bool = False,
            say: Callable[[str], None] | None = None,
            rebuild: Callable[[pd.DataFrame], tuple[pd.DataFrame, list[str]]] | None = None,
            unchanged: bool = False) -> list[str]:
    """Move every file under `staging` to the same place under the project root; return the notes
    (rows kept against the new file, or dropped, derived rows rebuilt), each passed to `say` before anything
    is written. `replace_figures`: a narrowed run's figures replace the old ones; `replace`: see the module's
    doc; `rebuild`: a results table's derived rows recomputed from its merged rows, with notes; `unchanged`: a
    rebuild from the records, which raises ValueMoved, writing nothing, where it would change a published value
    at the same runs (a row of more runs replaces one of fewer, named, as in any republish).
    One publish at a time (PUBLISH_LOCK): each reads the published tables, merges and writes under the
    lock, so two reproductions publishing slices of one table at once both land (a second waits)."""
    with exclusive(publish_lock(), waiting="{holder} is publishing results; waiting for it"):
        try:
            return _publish(staging, narrowed, replace_figures, replace, say, rebuild, unchanged)
        except ValueMoved:
            shutil.rmtree(staging, ignore_errors=True)      # a rebuild that disagrees publishes nothing
            raise


PUBLISH_LOCK = ".publish.lock"


def publish_lock() -> Path:
    """The lock every publish of the project's results holds (results/.publish.lock)."""
    return project_root() / "results" / PUBLISH_LOCK


# the file naming a staging folder's job (job/preflight.py): the folder's own, never published
STAGING_OWNER = ".owner"


def _publish(staging: Path, narrowed: bool, replace_figures: bool, replace: bool,
             say: Callable[[str], None] | None,
             rebuild: Callable[[pd.DataFrame], tuple[pd.DataFrame, list[str]]] | None,
             unchanged: bool = False) -> list[str]:
    moves, notes, moved = [], [], []
    for staged in sorted(p for p in staging.rglob("*") if p.is_file() and p.name != STAGING_OWNER):
        dest = project_root() / staged.relative_to(staging)
        where = dest.relative_to(project_root())
        if staged.suffix in (".png", ".ipynb") and narrowed and not replace_figures and dest.exists():
            # a narrowed run draws only its slice: the whole table's figure, and its executed notebook, stay until
            # a whole run
            notes.append(f"{where}: kept (this run's {'figure' if staged.suffix == '.png' else 'notebook'} shows "
                         f"only its --param slice; --replace-figures if the slice is the whole figure)")
        elif staged.suffix == ".png" and unchanged and not replace_figures and dest.exists():
            # a figure is one file for every profile: a rebuild at one profile must not swap in its own drawing
            # of a figure another profile drew (a table's figure is redrawn from its published rows after)
            notes.append(f"{where}: kept (a rebuild keeps the published figure; the executed notebook shows the "
                         f"rebuilt one)")
        elif staged.suffix == ".csv" and (dest.exists() or unchanged):
            # a first publish needs no rebuild: the notebook built its claims from the cells it brings
            old = read_results(dest) if dest.exists() else pd.DataFrame(columns=COLUMNS)
            brought = read_results(staged)
            brought = brought[brought.status != NOT_RECORDED]
            if unchanged:      # a rebuild adds no row the records did not measure (e.g. a needs-data placeholder)
                known = set(_keys(old))
                published = pd.Series([k in known for k in _keys(brought)], index=brought.index, dtype=bool)
                brought = brought[brought.n_runs.fillna(0).gt(0) | published]
            new, note = merged_results(old, brought, narrowed, replace)
            notes += [f"{where}: {note}"] if note else []
            if rebuild:
                new, rebuilt = rebuild(new)
                notes += [f"{where}: {n}" for n in rebuilt]
            if unchanged:
                disagree, grown = moved_values(old, new)
                moved += [f"{where}: {m}" for m in disagree]
                notes += [f"{where}: updated {len(grown)} value(s) the records now hold more runs of: "
                          f"{'; '.join(grown[:NAMED])}" + (" ..." if len(grown) > NAMED else "")] if grown else []
            moves.append((dest, new))
        else:
            moves.append((dest, staged))
    if moved:
        raise ValueMoved(f"the rebuild from the records would change {len(moved)} published value(s), nothing "
                         f"written: {'; '.join(moved[:NAMED])}" + (" ..." if len(moved) > NAMED else ""))
    for note in notes if say else ():
        say(note)
    for dest, what in moves:
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, pd.DataFrame):
            atomic_write_text(dest, what[COLUMNS].to_csv(index=False))
        else:
            os.replace(what, dest)
    shutil.rmtree(staging, ignore_errors=True)
    return notes


def moved_values(old: pd.DataFrame, new: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The rows of `old` holding a value that `new` (the table after a publish) changes or drops, each named with
    both values, split in two: (moved: at the same runs or fewer, a value the records no longer give; updated:
    averaged over more runs than `old` had, where the records grew after the row was published)."""
    after = dict(zip(_keys(new), zip(new.reproduced_value, new.n_runs)))
    moved, updated = [], []
    for key, row in zip(_keys(old), old.itertuples()):
        if pd.isna(row.reproduced_value):
            continue
        value, n = after.get(key, (float("nan"), 0))
        if not value == row.reproduced_value:
            (updated if n > row.n_runs else moved).append(
                f"{row.table} {row.setting} γ={row.labeled} {row.dataset} {row.method} {row.metric} ({row.profile}) "
                f"was {row.reproduced_value:g} (n={row.n_runs:.0f}), rebuilt {value:g} (n={n:.0f})")
    return moved, updated


def _keys(frame: pd.DataFrame) -> list[tuple]:
    """Each row's (cell, profile) key."""
    return list(map(tuple, frame[ROW_KEY].astype(str).values))


def _named(rows: pd.DataFrame) -> str:
    cells = ", ".join(f"{r.table} {r.setting} γ={r.labeled} {r.dataset} {r.method} {r.metric} ({r.profile}, "
                      f"n={r.n_runs:.0f})" for r in rows.head(NAMED).itertuples())
    return cells + (f" and {len(rows) - NAMED} more" if len(rows) > NAMED else "")


def merged_results(old: pd.DataFrame, new: pd.DataFrame, narrowed: bool,
                   replace: bool = False) -> tuple[pd.DataFrame, str]:
    """The published table after a notebook brought `new` over the published `old`, and a note naming
    the measured rows of `old` that were kept against `new` (with what `replace` would do) or dropped.

    Without `replace` no measured row is lost: `new` replaces the rows of its keys except those that
    average more runs than it brings, and every row of a key it does not hold stays. With `replace`,
    `new`'s rows win wherever they land, and a whole-scope (not `narrowed`) `new` is the whole table."""
    old_keys, new_keys = _keys(old), _keys(new)
    old_runs = dict(zip(old_keys, old.n_runs.fillna(0)))
    brought = dict(zip(new_keys, new.n_runs.fillna(0)))
    outside = [k not in brought for k in old_keys]
    more = [k in brought and n > brought[k] for k, n in zip(old_keys, old.n_runs.fillna(0))]
    measured = old.n_runs.fillna(0).gt(0).values
    kept_outside, kept_more = old[[o and m for o, m in zip(outside, measured)]], old[more]
    if replace:
        dropped = pd.concat([kept_more, kept_outside if not narrowed else kept_outside.iloc[:0]])
        merged = new.reset_index(drop=True) if not narrowed else _in_order(old, new, set(brought))
        return merged, f"replaced: dropped {len(dropped)} measured row(s): {_named(dropped)}" if len(dropped) else ""
    merged = _in_order(old, new, {k for k, n in brought.items() if not old_runs.get(k, 0) > n})
    notes = []
    if len(kept_outside) and narrowed:
        notes.append(f"kept {len(kept_outside)} measured row(s) outside this run's --param scope")
    elif len(kept_outside):
        notes.append(f"kept {len(kept_outside)} measured row(s) this run did not bring (another profile's, or "
                     f"outside its scope): {_named(kept_outside)}")
    if len(kept_more):
        notes.append(f"kept {len(kept_more)} row(s) averaged over more runs than this run measured: "
                     f"{_named(kept_more)}")
    if len(kept_more) or (len(kept_outside) and not narrowed):
        notes.append("reproduce --replace drops them")
    return merged, "; ".join(notes)


def _in_order(old: pd.DataFrame, new: pd.DataFrame, taken: set[tuple]) -> pd.DataFrame:
    """`old` with the rows of the keys in `taken` replaced by `new`'s, in the published order (a republish's
    diff shows what changed), then `new`'s rows of keys `old` lacks."""
    old_keys, new_keys = _keys(old), _keys(new)
    at = {k: len(old) + j for j, k in enumerate(new_keys)}
    known = set(old_keys)
    positions = [at[k] if k in taken else i for i, k in enumerate(old_keys)]
    positions += [at[k] for k in new_keys if k not in known]
    return pd.concat([old, new], ignore_index=True).iloc[positions].reset_index(drop=True)


def as_published(frame: pd.DataFrame, notebook: str, profile: str) -> pd.DataFrame:
    """`frame`'s rows (a notebook's results at `profile`) as they will stand once published over
    results/<notebook>.csv: a published row of more runs stays, one the notebook did not measure too; the rows of
    `profile` only. A figure drawn from these shows the table beside it, not only what this run measured."""
    csv = published_results_dir(profile) / f"{notebook}.csv"     # not the staging folder the notebook writes into
    measured = frame[frame.status != NOT_RECORDED]
    if not csv.exists():
        return measured.reset_index(drop=True)
    merged, _ = merged_results(read_results(csv), measured, narrowed=True)
    return merged[merged.profile == profile].reset_index(drop=True)


def unproven_published_runs(folder: Path | None = None, store: RunStore | None = None) -> dict[str, list[str]]:
    """Per results CSV in `folder` (results/), the run ids its rows name that `store` cannot prove finished
    (no record, or records that disagree with each other: runs.RunStore.load): a published number must
    stay checkable from the committed records it was computed from. A name with a slash is a record of a run
    outside our store, a file under `folder` (the authors' code's logs: `authors_code/<log>`), which must exist."""
    folder = Path(folder) if folder is not None else results_dir("quick")
    proven = {r.config.run_id for r in (store or RunStore()).finished()}
    missing = {}
    for path in sorted(folder.glob("*.csv")):
        if path.name == "report.csv":
            continue
        named = {run_id for ids in read_results(path).run_ids for run_id in str(ids).split()}
        lost = {n for n in named - proven if "/" not in n or not (folder / n).is_file()}
        if lost:
            missing[path.name] = sorted(lost)
    return missing


def unlinked_published_rows(folder: Path | None = None) -> dict[str, int]:
    """Per results CSV in `folder`, how many rows computed from runs (n_runs > 0) and holding a value name no
    runs: every such number must say what it was computed from. Rows of arithmetic alone (n_runs 0, e.g.
    FedAnchor's Table 4 overheads from a parameter count) name none."""
    folder = Path(folder) if folder is not None else results_dir("quick")
    counts = {}
    for path in sorted(folder.glob("*.csv")):
        frame = read_results(path)
        unlinked = frame.reproduced_value.notna() & (frame.n_runs.fillna(0) > 0) & (frame.run_ids.fillna("") == "")
        if unlinked.any():
            counts[path.name] = int(unlinked.sum())
    return counts
