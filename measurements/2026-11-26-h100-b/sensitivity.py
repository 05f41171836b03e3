"""How far each of gpu-check's cohort configurations carries a rounding-sized difference, on a CPU:
`python measurements/2026-11-26-h100-b/sensitivity.py` (about 2 minutes on one core; writes sensitivity.json).

On the H100, FedMix and FedCon's cohort and sequential trainers ended two rounds 5.9e-4 and 3.9e-3 apart,
while a second sequential run was identical to the first. The hypothesis named before this was run: the
cohort's batched kernels add in another order than the per-client ones (differences of about 1e-7), and
these two algorithms carry such a difference much further than the others (a pseudo-label kept or
dropped at the confidence threshold changes a whole sample's gradient). This measures the second half on
a CPU: the sequential trainer twice from the same start, once with every floating-point tensor of the
initial state multiplied by (1 + 1e-7), and the largest difference of the trained role's tensors after
two rounds. A configuration that does not amplify keeps it near 1e-7 × its weights' size.

A second column rules out the one augmentation path that differs by device: on CUDA RandAugment runs each
op on the whole batch and keeps each sample's own result (augment._apply_ops, whole_batch), on a CPU only on
the samples that chose it. Here the CUDA path is forced on the CPU and cohort is compared with sequential
(gpu_check.cohort_difference) as on the H100.
"""
import json
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

from fssl_core.data import augment  # noqa: E402
from fssl_core.engine.federation import Federation  # noqa: E402
from fssl_core.perf.gpu_check import COHORT_CASES, cohort_config, cohort_difference, helper_interval  # noqa: E402

RELATIVE = 1e-7


def trained(cfg, role: str, nudge: float) -> dict:
    fed = Federation.build(cfg.replace(trainer="sequential"))
    state = fed.initial_state()
    for tensors in state.values():
        if isinstance(tensors, dict):
            for k, t in tensors.items():
                if torch.is_tensor(t) and t.is_floating_point():
                    tensors[k] = t * (1 + nudge)
    for r in (1, 2):
        state, _ = fed.run_round(state, r)
    return state[role]


def whole_batch_cohort_difference(algorithm: str, role: str, extra: dict) -> float:
    """max abs(sequential − cohort) after two rounds on the CPU with RandAugment's CUDA path forced."""
    apply_ops = augment._apply_ops
    augment._apply_ops = lambda y, op, level, whole_batch=None: apply_ops(y, op, level, True)
    try:
        return cohort_difference(algorithm, role, extra, "cpu")["max_abs_diff"]
    finally:
        augment._apply_ops = apply_ops


def main() -> None:
    torch.set_num_threads(1)
    rows = []
    for algorithm, role, extra in COHORT_CASES:
        cfg, interval = cohort_config(algorithm, extra, "cpu")
        began = time.perf_counter()
        with helper_interval(interval):
            plain, nudged = trained(cfg, role, 0.0), trained(cfg, role, RELATIVE)
        diff = max(float((plain[k].double() - nudged[k].double()).abs().max()) for k in plain if plain[k].numel())
        whole = whole_batch_cohort_difference(algorithm, role, extra)
        rows.append({"algorithm": algorithm, "settings": ", ".join(f"{k}={v}" for k, v in extra.items()) or "-",
                     "max_abs_diff_after_2_rounds": diff, "whole_batch_augment_cohort_diff": whole,
                     "seconds": round(time.perf_counter() - began, 1)})
        print(rows[-1], flush=True)
    (HERE / "sensitivity.json").write_text(json.dumps({"relative_nudge": RELATIVE, "device": "cpu",
                                                       "torch": torch.__version__, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
