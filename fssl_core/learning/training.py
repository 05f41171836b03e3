"""The local SGD loop, shared by clients and server-side training.

The loop is the engine's, the loss is the algorithm's: an algorithm gives a per-step loss as a
function of its networks' tensors and a batch, and optionally an `after_step` (e.g. an EMA
update). Networks are plain dicts of tensors called through `torch.func.functional_call`, so the
same algorithm code can later run a whole cohort of clients stacked along a leading dimension.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import torch

from .batches import Batch, DataView, Plan, TrainImages, batches

if TYPE_CHECKING:
    from torch import Tensor

Tensors = dict[str, "Tensor"]          # one network's parameters and buffers, by name
Nets = dict[str, Tensors]            # a party's networks, by role ('model', 'online', 'target', ...)


def no_grad(fn: Callable) -> Callable:
    """`@torch.no_grad()`, with torch read when `fn` is called rather than where it is defined: a plan imports the
    algorithms without running torch (cli.defer_torch). The same context around each call."""
    @functools.wraps(fn)
    def without_grad(*args, **kwargs):
        with torch.no_grad():
            return fn(*args, **kwargs)
    return without_grad


class Diverged(RuntimeError):
    """A training loss became NaN or infinite."""


@dataclass(frozen=True)
class Step:
    """Where a step stands: the global round, the party's own clock, and the position within this
    local training."""
    round: int          # 1-based global round (0 = before the first round, e.g. pre-training)
    local_step: int     # 0-based step within this party's training this round
    local_steps: int    # steps this party runs this round
    # rounds this party has been selected in, this one included (1 on a client's first pick; the
    # server's trainings count the round). The cohort trainer passes a tensor when the clients of a
    # step differ: a per-client 0-d tensor inside the vmapped loss, one value per client (shape [G])
    # in `after_step`; an algorithm that reads it computes with torch ops (FedSiam's β^k and α^k).
    participation: int | Tensor = 1


@dataclass(frozen=True)
class SGD:
    """torch.optim.SGD's update (dampening 0), on dicts of tensors, after
    torch.nn.utils.clip_grad_norm_ when `clip_norm` > 0 (SemiFL's code clips every step to 1).

    g ← g · min(1, clip / (‖g‖ + 1e-6));  d = g + wd·p;  v = d on the first step, else m·v + d;
    p ← p − lr·(d + m·v) with Nesterov, else p ← p − lr·v
    """
    lr: float
    momentum: float
    weight_decay: float
    nesterov: bool = False
    clip_norm: float = 0.0

    def step(self, params: list[Tensor], grads: list[Tensor], velocity: list[Tensor] | None) -> list[Tensor]:
        with torch.no_grad():
            # a grouped linear layer's weight gradient arrives transposed (strided); contiguous, the
            # elementwise updates below run vectorised, twice as fast (the same floats: elementwise)
            grads = [g.contiguous() for g in grads]
            if self.clip_norm:
                total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
                grads = torch._foreach_mul(grads, (self.clip_norm / (total + 1e-6)).clamp(max=1.0))
            d = torch._foreach_add(grads, params, alpha=self.weight_decay) if self.weight_decay else grads
            if self.momentum:
                if velocity is None:
                    velocity = d
                else:
                    torch._foreach_mul_(velocity, self.momentum)
                    torch._foreach_add_(velocity, d)
                d = torch._foreach_add(d, velocity, alpha=self.momentum) if self.nesterov else velocity
            torch._foreach_add_(params, d, alpha=-self.lr)
        return velocity


LossFn = Callable[[Nets, Batch, Step], tuple["Tensor", dict[str, "Tensor"]]]
AfterStepFn = Callable[[Nets, Step], None]


def train_party(nets: Nets, trainable: tuple[str, ...], param_names: frozenset[str], loss_fn: LossFn,
                images: TrainImages, view: DataView, plan: Plan, optimizer: SGD, generator: torch.Generator,
                round: int, after_step: AfterStepFn | None = None, participation: int = 1,
                momentum: dict[str, Tensor] | None = None) -> dict[str, float]:
    """Run `plan` on one party's data, updating `nets[trainable]` in place (`participation`: see Step).
    `param_names`: the parameters trained (a subset of the network's trains only those). `momentum`: the
    optimiser's velocity carried from an earlier training, by "role.name", updated in place (empty: the
    first training; None: a fresh velocity, not kept).

    Returns the mean loss and the mean of every statistic the loss reported. Raises Diverged when
    the loss is not finite (checked once at the end, to keep host syncs out of the step).
    """
    from ..models.dropout import party_stream    # here: its nn.Module would run torch in a plan (cli.defer_torch)
    trained = [(role, name) for role in trainable for name in parameter_names(nets[role], param_names)]
    keys = [f"{role}.{name}" for role, name in trained]
    leaves = [nets[role][name].requires_grad_() for role, name in trained]
    velocity = [momentum[k] for k in keys] if momentum else None
    steps = plan.steps(view)
    totals: dict[str, Tensor] = {}
    for i, batch in enumerate(batches(images, view, plan, generator)):
        step = Step(round=round, local_step=i, local_steps=steps, participation=participation)
        with party_stream(generator):
            loss, stats = loss_fn(nets, batch, step)
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(leaves, grads)]
        velocity = optimizer.step(leaves, grads, velocity)
        if after_step is not None:
            after_step(nets, step)
        accumulate(totals, {"loss": loss, **stats})
    for t in leaves:
        t.requires_grad_(False)
    if momentum is not None and velocity is not None:
        momentum.update(zip(keys, velocity))
    return step_means(totals, steps, round)


def accumulate(totals: dict[str, Tensor], stats: dict[str, Tensor]) -> None:
    """Add a step's statistics to the running totals, on the device (no host sync per step)."""
    for name, value in stats.items():
        value = value.detach().float()
        totals[name] = totals[name] + value if name in totals else value


def step_means(totals: dict[str, Tensor], steps: int, round: int) -> dict[str, float]:
    """The per-step means of a party's totals; Diverged when the mean loss is not finite."""
    if not totals:
        return {}
    means = {name: float(total) / steps for name, total in totals.items()}
    if not torch.isfinite(torch.tensor(means["loss"])):
        raise Diverged(f"loss={means['loss']} in round {round}")
    return means


def parameter_names(tensors: Tensors, param_names: frozenset[str]) -> list[str]:
    """The trainable names of one role: the network's parameters when the role is a copy of the
    network, else every floating tensor of the role (an algorithm's own small module, e.g. FedCon's
    BYOL predictor)."""
    if param_names <= tensors.keys():
        return sorted(param_names)
    return sorted(k for k, v in tensors.items() if v.is_floating_point())
