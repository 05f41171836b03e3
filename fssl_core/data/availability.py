"""Whether a data set can be loaded here, and if not why: what a plan says in its needs-data line and a
notebook prints before it skips the cells of a data set this machine lacks."""
from __future__ import annotations

import functools
import sys

from .datasets import DatasetUnavailable, check_files


@functools.lru_cache(maxsize=None)
def unavailable_reason(name: str, download: bool | None = None) -> str | None:
    """Why data set `name` cannot be loaded here (the error's first line: what was looked for, where), None if it can.
    Its files are checked, not read (datasets.check_files: no torch); a missing one is downloaded where `download`
    allows (default: unless FSSL_OFFLINE=1), as a run would; a dry run's plan passes download=False."""
    try:
        check_files(name, download)
        return None
    except DatasetUnavailable as err:
        return str(err).splitlines()[0]


@functools.lru_cache(maxsize=None)
def dataset_available(name: str) -> bool:
    """Whether `name` loads here; where not, says why once, on stderr (a notebook's output)."""
    reason = unavailable_reason(name)
    if reason:
        print(f"needs-data: {reason}", file=sys.stderr)
    return reason is None
