import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if "FSSL_DATA" not in os.environ and SHARED_DATA.exists():
    os.environ["FSSL_DATA"] = str(SHARED_DATA)


def _mnist_present() -> bool:
    root = Path(os.environ.get("FSSL_DATA", "data"))
    return (root / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()


requires_mnist = pytest.mark.skipif(not _mnist_present(), reason="MNIST not on disk under $FSSL_DATA")

# Notebooks under nbval run at the smoke profile, offline, with a throw-away run store, so the
# test suite never reads or writes the user's runs/ and results/.
os.environ.setdefault("FSSL_PROFILE", "smoke")
os.environ.setdefault("FSSL_OFFLINE", "1")
if "FSSL_RUNS" not in os.environ:
    import tempfile
    os.environ["FSSL_RUNS"] = tempfile.mkdtemp(prefix="fssl-test-runs-")
# Tests run their few tiny runs in-process; the process pool is tested on its own.
os.environ.setdefault("FSSL_WORKERS", "1")
