"""What a job checks before it plans, trains or runs a notebook, in one line each and within seconds: the
environment variables it reads, and the staging folders a killed job left behind."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from ..config import ConfigError
from ..executors import default_batch, default_workers
from ..report.publish import STAGING_OWNER

OFFLINE_WORDS = ("", "0", "1", "true", "false", "yes", "no")
STALE_UNOWNED_SECONDS = 3600     # a staging folder without an owner file (STAGING_OWNER: its job's pid) this old is left over


def check_environment() -> None:
    """FSSL_BATCH, FSSL_WORKERS (whole numbers, 1 or more), FSSL_OFFLINE (a yes or a no) and OMP_NUM_THREADS (a
    whole number, 1 or more) as the job will read them: a bad one is one ConfigError line, before anything runs."""
    default_batch([])           # each reads and checks its variable where set
    default_workers([])
    offline = os.environ.get("FSSL_OFFLINE")
    if offline is not None and offline.strip().lower() not in OFFLINE_WORDS:
        raise ConfigError(f"FSSL_OFFLINE={offline!r}: must be 1, true or yes (offline) or 0, false, no or empty (online)")
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads is not None and not (threads.isascii() and threads.strip().isdigit() and int(threads) >= 1):
        raise ConfigError(f"OMP_NUM_THREADS={threads!r}: must be a whole number of threads, 1 or more")


def claim_staging(folder: Path) -> None:
    """Mark a new staging folder as this process's, so a later job can tell a killed job's leftovers from a live one."""
    (folder / STAGING_OWNER).write_text(str(os.getpid()))


def remove_stale_staging(results: Path) -> list[Path]:
    """Remove the staging folders (`results/.staging-*`) whose job is gone: its process no longer runs, or, without
    an owner, older than STALE_UNOWNED_SECONDS. A live job's folder stays. Returns those removed."""
    removed = []
    for folder in sorted(results.glob(".staging-*")):
        if not folder.is_dir() or folder.is_symlink():
            continue
        owner = folder / STAGING_OWNER
        try:
            pid = int(owner.read_text().strip()) if owner.exists() else None
        except (OSError, ValueError):
            pid = None
        alive = pid is not None and _running(pid)
        old = time.time() - folder.stat().st_mtime > STALE_UNOWNED_SECONDS
        if not alive and (pid is not None or old):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)          # a PermissionError means it runs, as another user's
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
