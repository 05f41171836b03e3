"""Batched augmentation: seeding, shapes and range, exact pad-crop and flip, weak contrast and
grayscale, strong ops and cutout, argument errors."""
import re

import pytest
import torch
import torch.nn.functional as F

from fssl_core.data.augment import (
    FLIP_ONLY, STRONG_OPS, AugmentSpec, _affine, _apply_ops, _warp, augment_spec_for, random_crop_flip,
    strong_augment, weak_augment,
)

SPEC = AugmentSpec(flip=True, pad=4)
FUNCTIONS = [random_crop_flip, weak_augment, strong_augment]


def gen(seed: int, device: str = 'cpu') -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def images(n: int, c: int, size: int, seed: int = 0, device: str = 'cpu') -> torch.Tensor:
    return torch.rand(n, c, size, size, generator=gen(seed), device='cpu').to(device)


def test_augment_spec_for():
    assert augment_spec_for('mnist') == AugmentSpec(flip=False, pad=2)
    assert augment_spec_for('fashion_mnist') == AugmentSpec(flip=True, pad=2)
    assert augment_spec_for('cifar10') == AugmentSpec(flip=True, pad=4)
    assert augment_spec_for('cifar100') == AugmentSpec(flip=True, pad=4)
    assert augment_spec_for('svhn') == AugmentSpec(flip=False, pad=4)
    with pytest.raises(ValueError, match=re.escape(
            "augment_spec_for: dataset='xyz': must be one of cifar10, cifar100, fashion_mnist, mnist, svhn")):
        augment_spec_for('xyz')


@pytest.mark.parametrize('fn', FUNCTIONS)
def test_seeded_and_pure(fn):
    x = images(16, 3, 32)
    before = x.clone()
    a, b, c = fn(x, gen(1), SPEC), fn(x, gen(1), SPEC), fn(x, gen(2), SPEC)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert torch.equal(x, before)


@pytest.mark.parametrize('fn', FUNCTIONS)
@pytest.mark.parametrize('c,size,spec', [(1, 28, augment_spec_for('mnist')), (3, 32, SPEC)])
def test_shape_dtype_range(fn, c, size, spec):
    x = images(64, c, size)
    y = fn(x, gen(0), spec)
    assert y.shape == x.shape and y.dtype == x.dtype and y.device == x.device
    assert y.min() >= 0 and y.max() <= 1
    assert not torch.equal(y, x)


@pytest.mark.parametrize('fn', FUNCTIONS)
def test_empty_batch(fn):
    x = torch.rand(0, 3, 32, 32)
    assert fn(x, gen(0), SPEC).shape == (0, 3, 32, 32)


def test_pad_crop_is_a_translation_with_per_sample_offsets():
    p = 2
    x = images(64, 1, 28)
    y = random_crop_flip(x, gen(0), AugmentSpec(flip=False, pad=p))
    padded = F.pad(x, (p, p, p, p), mode='reflect')
    offsets = set()
    for i in range(64):
        found = [(dy, dx) for dy in range(2 * p + 1) for dx in range(2 * p + 1)
                 if torch.equal(y[i], padded[i, :, dy:dy + 28, dx:dx + 28])]
        assert len(found) == 1, f'sample {i} is no crop of its padded image'
        offsets.add(found[0])
    assert len(offsets) > 5


def test_flip_only():
    x = images(64, 3, 8)
    y = random_crop_flip(x, gen(0), AugmentSpec(flip=True, pad=0))
    same = [torch.equal(y[i], x[i]) for i in range(64)]
    flipped = [torch.equal(y[i], x[i].flip(-1)) for i in range(64)]
    assert all(s or f for s, f in zip(same, flipped))
    assert any(same) and any(flipped)


def test_the_authors_flip_only_weak_view_mirrors_digits_and_changes_nothing_else():
    # the FedSiam authors' Fed(Fix)Match weak view: RandomHorizontalFlip alone (no crop, no contrast)
    assert augment_spec_for('mnist', 'flip_only') == FLIP_ONLY == AugmentSpec(flip=True, pad=0, jitter=False)
    x = images(64, 1, 28)
    y = weak_augment(x, gen(0), FLIP_ONLY)
    same = [torch.equal(y[i], x[i]) for i in range(64)]
    flipped = [torch.equal(y[i], x[i].flip(-1)) for i in range(64)]
    assert all(s or f for s, f in zip(same, flipped)) and any(same) and any(flipped)
    # with jitter the same spec changes contrast too
    assert not torch.equal(weak_augment(x, gen(0), AugmentSpec(flip=True, pad=0)), y)
    with pytest.raises(ValueError, match="weak_augment='flip': must be one of dataset, flip_only"):
        augment_spec_for('mnist', 'flip')


def test_the_authors_unaugmented_view_is_the_image_itself():
    # the FedSiam authors' labels-at-client MNIST siamese scripts: ToTensor and Normalize, no augmentation
    assert augment_spec_for('mnist', 'none') == AugmentSpec(flip=False, pad=0, jitter=False)
    x = images(32, 1, 28)
    assert torch.equal(weak_augment(x, gen(0), augment_spec_for('mnist', 'none')), x)
    assert not torch.equal(weak_augment(x, gen(0), augment_spec_for('mnist')), x)    # ours: two weak views


@pytest.mark.parametrize('c', [1, 3])
def test_weak_keeps_constant_gray(c):
    x = torch.full((32, c, 28, 28), 0.3)
    y = weak_augment(x, gen(0), AugmentSpec(flip=True, pad=2))
    torch.testing.assert_close(y, x, rtol=0, atol=1e-6)


def test_weak_grayscale_rate():
    x = images(2000, 3, 4)
    y = weak_augment(x, gen(0), AugmentSpec(flip=False, pad=0))
    gray = ((y[:, 0] == y[:, 1]) & (y[:, 1] == y[:, 2])).flatten(1).all(1)
    assert 0.15 <= gray.float().mean().item() <= 0.25


def test_weak_contrast_range():
    # With grayscale off (1 channel), each output is mean + f * (x' - mean) with f in [0.8, 1.2].
    x = images(256, 1, 8)
    spec = AugmentSpec(flip=False, pad=0)
    y = weak_augment(x, gen(0), spec)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    inside = (x > 0.2) & (x < 0.8)  # far enough from 0 and 1 that clamping cannot act
    f = ((y - mean) / (x - mean))[inside & ((x - mean).abs() > 0.1)]
    assert f.min() >= 0.8 - 1e-4 and f.max() <= 1.2 + 1e-4
    assert f.max() - f.min() > 0.3  # factors vary across samples


def test_strong_differs_and_is_seeded():
    x = images(32, 3, 32)
    s = strong_augment(x, gen(0), SPEC)
    assert not torch.equal(s, weak_augment(x, gen(0), SPEC))
    assert not torch.equal(s, x)
    assert torch.equal(s, strong_augment(x, gen(0), SPEC))
    assert s.min() >= 0 and s.max() <= 1


def test_strong_without_ops_or_cutout_is_the_geometric_part():
    x = images(32, 3, 32)
    assert torch.equal(strong_augment(x, gen(3), SPEC, num_ops=0, cutout=0.0),
                       random_crop_flip(x, gen(3), SPEC))


def test_cutout_fills_gray_in_every_sample():
    x = torch.zeros(64, 1, 28, 28)
    y = strong_augment(x, gen(0), AugmentSpec(flip=False, pad=2), num_ops=0, cutout=1.0)
    gray = (y == 0.5).flatten(1)
    assert gray.any(1).all()
    assert ((y == 0) | (y == 0.5)).all()
    assert gray.sum(1).min() >= 7 * 7  # side >= 14, at least half of it inside the image


@pytest.mark.parametrize('name', STRONG_OPS)
def test_each_op(name):
    x = images(8, 3, 16)
    op = torch.full((8,), STRONG_OPS.index(name))
    level = torch.tensor([1.0, -1.0] * 4)
    y = _apply_ops(x, op, level)
    assert y.shape == x.shape and y.min() >= 0 and y.max() <= 1
    assert torch.equal(y, x) == (name == 'identity')
    # Geometric ops fill what leaves the image with gray, so a gray image stays gray.
    gray = torch.full_like(x, 0.5)
    if name in ('rotate', 'shear_x', 'shear_y', 'translate_x', 'translate_y'):
        torch.testing.assert_close(_apply_ops(gray, op, level), gray, rtol=0, atol=1e-6)


def test_op_values():
    x = images(2, 1, 8)
    op = lambda name: torch.full((2,), STRONG_OPS.index(name))  # noqa: E731
    down = torch.tensor([-1.0, -1.0])
    torch.testing.assert_close(_apply_ops(x, op('solarize'), down), 1 - x)
    torch.testing.assert_close(_apply_ops(x, op('brightness'), down), 0.1 * x)
    # translating right by 0.3 * 8 = 2.4 pixels: in-between pixels interpolate bilinearly
    shifted = _apply_ops(x, op('translate_x'), torch.tensor([-0.25, -0.25]))  # 0.6 pixels
    torch.testing.assert_close(shifted[..., 1:], 0.4 * x[..., 1:] + 0.6 * x[..., :-1])
    y = _apply_ops(x, op('posterize'), down)
    assert torch.equal(y * 255 % 16, torch.zeros_like(y))


def test_warp_matches_affine_grid():
    # _warp writes out affine_grid's grid; on a non-square image, so the aspect handling counts.
    x = torch.rand(32, 3, 20, 12, generator=gen(0))
    op = torch.randint(0, len(STRONG_OPS), (32,), generator=gen(1))
    level = torch.rand(32, generator=gen(2)) * 2 - 1
    theta = _affine(op, level, 20, 12)
    grid = F.affine_grid(theta, [32, 4, 20, 12], align_corners=False)
    ref = F.grid_sample(torch.cat([x, torch.ones_like(x[:, :1])], 1), grid, align_corners=False)
    ref = (ref[:, :3] + (1 - ref[:, 3:]) * 0.5).clamp(0, 1)
    torch.testing.assert_close(_warp(x, theta), ref, rtol=0, atol=1e-5)


def test_rotation_keeps_a_centred_disc_on_a_non_square_image():
    # A rotation about the centre in pixel units maps a centred disc onto itself.
    h, w = 21, 41
    yy, xx = torch.meshgrid(torch.arange(h) - h // 2, torch.arange(w) - w // 2, indexing='ij')
    disc = ((yy ** 2 + xx ** 2) <= 6 ** 2).float().expand(4, 1, h, w)
    op = torch.full((4,), STRONG_OPS.index('rotate'))
    out = _apply_ops(disc, op, torch.tensor([1.0, -1.0, 0.5, -0.5]))
    near = (yy ** 2 + xx ** 2) <= 9 ** 2  # away from the corners, which rotate out and fill gray
    # (a rotation in affine_grid's normalised units would squash the disc: about 0.8-0.88 here)
    assert ((out > 0.5) == (disc > 0.5))[..., near].float().mean(-1).min() > 0.95


@pytest.mark.parametrize('c', [1, 3])
def test_per_op_subsets_match_whole_batch(c):
    # CPU runs each op on its own samples, CUDA on the whole batch: both must agree.
    x = images(128, c, 16)
    op = torch.randint(0, len(STRONG_OPS), (128,), generator=gen(1))
    level = (torch.randint(0, 11, (128,), generator=gen(2)) / 10) * torch.where(
        torch.rand(128, generator=gen(3)) < 0.5, -1.0, 1.0)
    torch.testing.assert_close(_apply_ops(x, op, level, whole_batch=False),
                               _apply_ops(x, op, level, whole_batch=True), rtol=0, atol=1e-6)


def test_strong_argument_errors():
    x = images(2, 1, 28)
    with pytest.raises(ValueError, match=re.escape('strong_augment: magnitude=40: must be within [0, 30]')):
        strong_augment(x, gen(0), SPEC, magnitude=40)
    with pytest.raises(ValueError, match=re.escape('strong_augment: num_ops=-1')):
        strong_augment(x, gen(0), SPEC, num_ops=-1)
    with pytest.raises(ValueError, match=re.escape('strong_augment: cutout=1.5: must be within [0, 1]')):
        strong_augment(x, gen(0), SPEC, cutout=1.5)
    with pytest.raises(ValueError, match='must be smaller than the image size'):
        random_crop_flip(torch.rand(2, 1, 4, 4), gen(0), AugmentSpec(flip=False, pad=4))


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')
@pytest.mark.parametrize('fn', FUNCTIONS)
def test_cuda_seeded(fn):
    x = images(64, 3, 32, device='cuda')
    a, b = fn(x, gen(5, 'cuda'), SPEC), fn(x, gen(5, 'cuda'), SPEC)
    assert a.device == x.device
    assert torch.equal(a, b)
    assert not torch.equal(a, fn(x, gen(6, 'cuda'), SPEC))


def test_strong_views_drawn_per_batch_and_applied_together_equal_each_batchs_own():
    # the cohort trainer draws each client's choices from its generator, then augments all at once
    from fssl_core.data.augment import apply_strong, concat_draws, draw_strong
    torch.manual_seed(0)
    batches = [torch.rand(n, 1, 28, 28) for n in (7, 7, 3)]
    own = [strong_augment(x, gen(10 + i), SPEC) for i, x in enumerate(batches)]
    draws = [draw_strong(len(x), x.shape[2:], gen(10 + i), SPEC) for i, x in enumerate(batches)]
    together = apply_strong(torch.cat(batches), concat_draws(draws), SPEC)
    assert torch.equal(together, torch.cat(own))


def test_the_authors_labels_at_server_view_flips_digits_and_translates_by_up_to_3_pixels():
    # their Mnist_Transform ("Table 6"): RandomHorizontalFlip, RandomCrop(28, padding=3, reflect)
    from fssl_core.data.augment import AUTHORS_SERVER
    assert augment_spec_for('mnist', 'authors_server') == AUTHORS_SERVER == AugmentSpec(flip=True, pad=3, jitter=False)
    x = torch.zeros(4000, 1, 28, 28)
    x[:, 0, 14, 10] = 1.0                                # one lit pixel, 4 columns left of the centre line
    out = random_crop_flip(x, torch.Generator().manual_seed(0), AUTHORS_SERVER)
    rows, cols = (out[:, 0] == 1.0).flatten(1).float().argmax(1).div(28, rounding_mode='floor'), \
        (out[:, 0] == 1.0).flatten(1).float().argmax(1) % 28
    shifts = set((rows - 14).tolist())
    assert shifts == set(range(-3, 4))                   # every translation up to 3 pixels, none further
    mirrored = (cols - (27 - 10)).abs() <= 3
    assert 0.4 < mirrored.float().mean() < 0.6           # half the digits flipped
    assert ((cols - 10).abs() <= 3)[~mirrored].all()


def test_the_crop_offsets_drawn_in_one_call_equal_rows_then_columns_drawn_apart():
    # draw_crop_flip draws rows and columns in one CPU call: mt19937 gives each element one 32-bit
    # draw in order, so the first n values are the rows' call and the next n the columns'
    from fssl_core.data.augment import draw_crop_flip
    for n in (1, 7, 40):
        draws = draw_crop_flip(n, gen(3), SPEC)
        g = gen(3)
        rows = torch.randint(0, 2 * SPEC.pad + 1, (n, 1), generator=g)
        cols = torch.randint(0, 2 * SPEC.pad + 1, (n, 1), generator=g)
        flip = torch.rand(n, generator=g) < 0.5
        assert torch.equal(draws["offsets"][0], rows) and torch.equal(draws["offsets"][1], cols)
        assert torch.equal(draws["flip"], flip)
