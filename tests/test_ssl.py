"""Pure SSL pieces on hand-computed cases."""
import math

import pytest
import torch

from fssl_core.learning.ssl import ema_update_, sigmoid_rampup, softmax_kl, softmax_mse

LN3 = math.log(3.0)
STUDENT = torch.tensor([[0.0, 0.0], [LN3, 0.0]])    # softmax: [.5, .5], [.75, .25]
TEACHER = torch.zeros(2, 2)                          # softmax: [.5, .5], [.5, .5]


def test_softmax_mse_is_the_mean_over_samples_and_classes():
    # squared differences 0, 0, .25², .25² → mean over 4 entries
    assert softmax_mse(STUDENT, TEACHER).item() == pytest.approx(2 * 0.0625 / 4)


def test_softmax_kl_is_teacher_to_student_summed_over_classes_mean_over_samples():
    kl_second = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    assert softmax_kl(STUDENT, TEACHER).item() == pytest.approx(kl_second / 2, rel=1e-6)


def test_softmax_kl_computes_the_floats_of_torchs_kl_div_for_a_teacher_without_gradient():
    # the run identity of FedSiam-D (KL) rests on this: the explicit form changes no bit of a step
    import torch.nn.functional as F
    torch.manual_seed(0)
    for n in (1, 10, 100):
        student, teacher = (torch.randn(n, 10) * 5).requires_grad_(), torch.randn(n, 10) * 30
        ours = softmax_kl(student, teacher)
        theirs = F.kl_div(student.log_softmax(1), teacher.softmax(1), reduction="batchmean")
        assert torch.equal(ours, theirs)
        assert torch.equal(torch.autograd.grad(ours, student)[0], torch.autograd.grad(theirs, student)[0])


@pytest.mark.parametrize("current, length, expected", [
    (0, 10, math.exp(-5.0)), (5, 10, math.exp(-1.25)), (10, 10, 1.0), (25, 10, 1.0), (3, 0, 1.0)])
def test_sigmoid_rampup(current, length, expected):
    assert sigmoid_rampup(current, length) == pytest.approx(expected)


def test_ema_update_moves_the_target_a_fraction_one_minus_alpha_toward_the_online_net():
    target, online = {"w": torch.ones(3), "b": torch.ones(1)}, {"w": torch.full((3,), 3.0), "b": torch.zeros(1)}
    ema_update_(target, online, ["w"], alpha=0.75)
    assert torch.equal(target["w"], torch.full((3,), 1.5)) and torch.equal(target["b"], torch.ones(1))
