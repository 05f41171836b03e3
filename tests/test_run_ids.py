"""Every committed run keeps its id: the id a stored config.json hashes to today is its directory's name.
A change to how RunConfig is declared or validated (settings moved beside their algorithms, say) must leave
this map alone; a change to what a run computes is a revision bump, and its runs are re-run, not renamed."""
import json
import subprocess
from pathlib import Path

import pytest

from fssl_core.run_config import RunConfig

ROOT = Path(__file__).resolve().parent.parent


def _committed_configs() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "runs/*/config.json"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / line for line in listed.stdout.split()]


def test_every_committed_config_hashes_to_its_directorys_name():
    configs = _committed_configs()
    assert len(configs) > 100, "the records are missing: nothing would be checked"
    moved = [p.parent.name for p in configs if RunConfig.from_dict(json.loads(p.read_text())).run_id != p.parent.name]
    assert moved == [], f"{len(moved)} of {len(configs)} committed runs would change id: {moved[:5]}"


def test_every_committed_config_proves_itself_as_its_runs_config():
    """The store's check of config.json (store.integrity.check_config) accepts every committed record: a
    setting declared beside its algorithm is a field of the stored config like any other."""
    from fssl_core.store.integrity import check_config
    for path in _committed_configs():
        check_config(path, RunConfig.from_dict(json.loads(path.read_text())))
