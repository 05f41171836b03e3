"""A paper folder's printed numbers (its values*.csv, papers/README.md) and the check of a notebook's name
parameters: what every paper's cells read, apart from the registry (papers/__init__.py) that imports the
paper packages, so that a paper never imports the registry that names it."""
from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from ..config import ConfigError

VALUES_GLOB = "values*.csv"


def check_names(parameter: str, given, known) -> None:
    """Each of a notebook parameter's `given` names is one of `known` (a --param value reaches the cells as
    JSON: a list where a name was meant is refused by name too, not by a TypeError in a membership test)."""
    if isinstance(given, (str, bytes)) or not isinstance(given, (list, tuple)):   # papermill -y "datasets: mnist"
        raise ConfigError(f"{parameter}={given!r}: must be a list of names among {', '.join(known)}, "
                          f"e.g. {parameter}: [{next(iter(known))}]")
    for name in given:
        if not isinstance(name, str) or name not in known:
            raise ConfigError(f"{parameter}: {name!r} must be one of {', '.join(known)}")


@functools.lru_cache(maxsize=None)
def read_values(folder: Path) -> pd.DataFrame:
    """One paper folder's printed numbers: its values*.csv in name order, `labeled` kept as text."""
    files = sorted(Path(folder).glob(VALUES_GLOB))
    if not files:
        raise FileNotFoundError(f"{folder}: no {VALUES_GLOB} (a paper's printed numbers, papers/README.md)")
    return pd.concat([pd.read_csv(f, dtype={"labeled": str}, keep_default_na=False) for f in files],
                     ignore_index=True)


@functools.lru_cache(maxsize=None)
def _value_index(folder: Path) -> dict[tuple[str, ...], float]:
    values = read_values(folder)
    key = ["paper", "table", "setting", "labeled", "dataset", "method", "metric"]
    return {k: float(v) for k, v in zip(values[key].itertuples(index=False, name=None), values.value)}   # keys unique


def printed_value(folder: Path, paper: str, table: str, setting: str, labeled: str, dataset: str, method: str,
                  metric: str = "accuracy") -> float | None:
    """The number the paper printed at these coordinates (the folder's values CSVs); None where it printed none."""
    return _value_index(Path(folder)).get((paper, table, setting, labeled, dataset, method, metric))
