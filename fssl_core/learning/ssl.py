"""Small pure pieces of semi-supervised learning shared by the algorithms: consistency losses,
ramp-up schedules, the exponential moving average. Each is checked on a hand-computed case in
tests/test_ssl.py.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from .training import no_grad

if TYPE_CHECKING:
    from torch import Tensor


def softmax_mse(student_logits: Tensor, teacher_logits: Tensor) -> Tensor:
    """Mean over samples and classes of (softmax(student) − softmax(teacher))².

    FedSiam Eq. (4) writes the squared norm summed over the C classes; its authors' code (and Mean
    Teacher's) divides by C. We divide by C: the paper's numbers were produced that way, and with
    φ_l's ramp-up ending at weight 1 the summed form would weigh consistency C times more.
    """
    return (student_logits.softmax(1) - teacher_logits.softmax(1)).pow(2).mean()


def softmax_kl(student_logits: Tensor, teacher_logits: Tensor) -> Tensor:
    """FedSiam Eq. (5): KL(softmax(teacher) ‖ softmax(student)), summed over classes, mean over samples.

    Written as the ops of `F.kl_div(log q_s, p_t, reduction="batchmean")` (xlogy(p, p) − p·log q, summed,
    divided by the batch): the same floats for a teacher without gradient (FedSiam's, tests/test_ssl.py),
    and vmap has rules for these ops, where it runs aten::kl_div client by client in the cohort."""
    log_q, p = student_logits.log_softmax(1), teacher_logits.softmax(1)
    return (torch.xlogy(p, p) - p * log_q).sum() / log_q.shape[0]


CONSISTENCY = {"mse": softmax_mse, "kl": softmax_kl}


def sigmoid_rampup(current: float | Tensor, length: float) -> float | Tensor:
    """exp(−5(1 − t)²) with t = clip(current / length, 0, 1) (Laine & Aila 2017); 1 when length is 0.
    A tensor `current` (a cohort's per-client clocks) gives a float32 tensor of the same shape."""
    if length <= 0:
        return 1.0
    if isinstance(current, torch.Tensor):
        t = (current.float() / length).clamp(0.0, 1.0)
        return torch.exp(-5.0 * (1.0 - t) ** 2)
    t = min(max(current / length, 0.0), 1.0)
    return math.exp(-5.0 * (1.0 - t) ** 2)


@no_grad
def ema_update_(target: dict[str, Tensor], online: dict[str, Tensor], names: list[str], alpha: float | Tensor) -> None:
    """FedSiam Eq. (9), in place on `names`: θ_t ← α θ_t + (1 − α) θ_s. A tensor `alpha` of shape
    [G] holds one decay per client of a cohort whose tensors are stacked along their first dimension."""
    t = [target[n] for n in names]
    s = [online[n].detach() for n in names]
    if not isinstance(alpha, torch.Tensor):
        torch._foreach_lerp_(t, s, 1.0 - alpha)
        return
    weight = (1.0 - alpha).float()
    for a, b in zip(t, s):
        a.lerp_(b, weight.view(-1, *[1] * (a.dim() - 1)).to(a.dtype))
