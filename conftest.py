"""The test session's environment, for tests/ and for the notebooks under nbval alike (a conftest
in tests/ would not apply to `pytest notebooks/...`, and a notebook run at its default profile would
then overwrite the committed results): the smoke profile, offline, a throw-away run store, and the
shared offline data beside the checkout when present."""
import os
import tempfile
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parent.parent / "shared" / "data"
if "FSSL_DATA" not in os.environ and SHARED_DATA.exists():
    os.environ["FSSL_DATA"] = str(SHARED_DATA)
# Notebooks under nbval run at the smoke profile, offline, with a throw-away run store, so the
# test suite never reads or writes the user's runs/ and results/.
os.environ.setdefault("FSSL_PROFILE", "smoke")
os.environ.setdefault("FSSL_OFFLINE", "1")
if "FSSL_RUNS" not in os.environ:
    os.environ["FSSL_RUNS"] = tempfile.mkdtemp(prefix="fssl-test-runs-")
# Tests run their few tiny runs in-process; the process pool is tested on its own.
os.environ.setdefault("FSSL_WORKERS", "1")


def pytest_configure(config):
    """Notebooks are validated lax (run, outputs not compared) wherever nbval is installed; set here rather than
    as `--nbval-lax` in pyproject's addopts, where pytest without nbval refuses the unknown option. Lax always,
    as the addopts were: a `--nbval` given too still compares nothing."""
    if config.pluginmanager.hasplugin("nbval"):
        config.option.nbval_lax = True
