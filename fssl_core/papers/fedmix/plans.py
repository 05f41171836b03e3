"""Every run each FedMix notebook reads, from its parameters: one function per notebook, which the
notebook's `plan` cell calls and the job's plan (fssl_core/job/plan.py) calls too, with the same parameters,
without executing the notebook. Nothing here trains or writes a file."""
from __future__ import annotations

from ...profiles import get_profile
from .cells import figure4_cells, figure5_cells, figure6_cells, sensitivity_cells, streaming_cells


def streaming_fmnist(profile: str, device: str, *, precision: str, methods: list[str] | None, seeds: list[int] | None,
                     sensitivity_rows: list[str] | None, network: str) -> tuple:
    """(cells, sensitivity): the streaming comparison on `network` (the paper profile's ResNet-9); the
    sensitivity rows (none at the headline profile)."""
    run_profile = get_profile(profile)
    return (streaming_cells(run_profile, device, methods=methods, seeds=seeds, precision=precision, network=network),
            sensitivity_cells(run_profile, device, rows=sensitivity_rows, seeds=seeds))


def figure4(profile: str, device: str, *, seeds: list[int] | None) -> list:
    return figure4_cells(get_profile(profile), device, seeds=seeds)


def figure5(profile: str, device: str, *, seeds: list[int] | None) -> list:
    return figure5_cells(get_profile(profile), device, seeds=seeds)


def figure6(profile: str, device: str, *, seeds: list[int] | None) -> list:
    return figure6_cells(get_profile(profile), device, seeds=seeds)


NOTEBOOK_PLANS = {"fedmix_streaming_fmnist": streaming_fmnist, "fedmix_figure4": figure4, "fedmix_figure5": figure5,
                  "fedmix_figure6": figure6}
