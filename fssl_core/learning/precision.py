"""How a run computes on CUDA: exact FP32 by default, TF32 only where its config asks for it.

torch's defaults let cuDNN convolutions run in TF32 (10-bit mantissa inputs) and pick convolution
algorithms by timing, so two runs of one config on one GPU, or its cohort and sequential trainers,
need not agree (on an H200 with the defaults the cohort and sequential rounds of tests/test_cohort.py
differed by up to 1.5e-2; with TF32 off and cuDNN deterministic, by 1.5e-8 where the draws matched).
A run therefore sets, when its Federation is built on CUDA, one of two policies (`RunConfig.precision`,
a field of the run's identity: their numbers differ):
  - 'fp32' (the default): exact FP32 that a rerun repeats: TF32 off for cuBLAS matmuls and cuDNN
    convolutions; cuDNN deterministic, no autotuning (`benchmark=False`); torch's deterministic
    algorithms where it has them (`warn_only`: an op without one warns, it does not stop the run),
    with the cuBLAS workspace setting they need.
  - 'tf32': speed, for the long paper-protocol runs a GPU lease must fit (ResNet-9 for 150 rounds):
    TF32 for matmuls and convolutions, cuDNN autotuned and not deterministic. What most papers'
    PyTorch code ran with (torch's default for convolutions is TF32); a rerun may differ in the
    last bits, and grows apart from there.
These are process-wide switches; a run owns its process (executors/local.py), so they are the run's.
On the CPU there is no TF32 and nothing to set. `flags()` is what env.json records.
"""
from __future__ import annotations

import os

import torch

PRECISIONS = ("fp32", "tf32")


def apply(precision: str, device: torch.device) -> None:
    if device.type != "cuda":
        return
    # cuBLAS reads this when it creates its handle: set before the run's first matmul
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    exact = precision == "fp32"
    torch.backends.cuda.matmul.allow_tf32 = not exact
    torch.backends.cudnn.allow_tf32 = not exact
    torch.backends.cudnn.deterministic = exact
    torch.backends.cudnn.benchmark = not exact
    torch.use_deterministic_algorithms(exact, warn_only=True)


def flags(device: torch.device) -> dict:
    """The switches in force, and the library versions behind them (env.json)."""
    if device.type != "cuda":
        return {"device": device.type}
    return {
        "device": device.type, "gpu": torch.cuda.get_device_name(device),
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
        "cudnn_deterministic": torch.backends.cudnn.deterministic, "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }
