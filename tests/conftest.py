import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if "FSSL_DATA" not in os.environ and SHARED_DATA.exists():
    os.environ["FSSL_DATA"] = str(SHARED_DATA)


def _mnist_present() -> bool:
    from fssl_core.data.datasets import data_root
    return (data_root() / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()


def how_to_get(dataset: str) -> str:
    """A skip reason: where the data were looked for, and how to get them."""
    from fssl_core.data.datasets import data_root
    return (f"{dataset} not found under {data_root()} (torchvision's layout). Set FSSL_DATA to a folder holding it, "
            f"or, online, download it once: FSSL_DATA={data_root()} python -c \"from fssl_core.data.datasets import "
            f"load_dataset; load_dataset('{dataset}')\"")


requires_mnist = pytest.mark.skipif(not _mnist_present(), reason=how_to_get("mnist"))

# Notebooks under nbval run at the smoke profile, offline, with a throw-away run store, so the
# test suite never reads or writes the user's runs/ and results/.
os.environ.setdefault("FSSL_PROFILE", "smoke")
os.environ.setdefault("FSSL_OFFLINE", "1")
if "FSSL_RUNS" not in os.environ:
    import tempfile
    os.environ["FSSL_RUNS"] = tempfile.mkdtemp(prefix="fssl-test-runs-")
# Tests run their few tiny runs in-process; the process pool is tested on its own.
os.environ.setdefault("FSSL_WORKERS", "1")
