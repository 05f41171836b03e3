"""Helpers shared by the tests; the session's environment is set in the root conftest.py."""
import pytest


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
