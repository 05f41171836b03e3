"""Weak and strong image augmentation, batched on the device with per-sample randomness.

The training images already live on the run's device as one float tensor in [0, 1] (not yet
normalised; see `datasets.py`), and a step's batch is drawn from it by index (`learning/batches.py`). Augmented
where it lies, in a few tensor operations, it never goes to the host: no DataLoader, PIL or per-sample loop, which
on 28x28 and 32x32 images would cost far more than the forward pass. Each sample gets its own offsets, flips,
factors and operations, drawn as tensors of N values.

Every random draw comes from the CPU `torch.Generator` passed in (a cohort's from each client's own generator's
words, `streams.CohortDraws`: the same numbers, with the clients as a leading dimension) and is moved to the images'
device before it is applied: the same generator state gives the same draws on every device (a CUDA generator's Philox
stream differs from the CPU's, and one batched CUDA draw is not the concatenation of per-client draws).

- `random_crop_flip`: reflect-pad by `spec.pad` and crop back at a random offset (a random
  translation by up to `pad` pixels), then a horizontal flip with p = 0.5 if `spec.flip`.
- `weak_augment`: FedSiam's weak augmentation (crop/translate, flip, contrast, grayscale).
- `strong_augment`: the weak geometric part, then RandAugment as in FixMatch (RandAugmentMC), then Cutout.

Inputs are (N, C, H, W) floating tensors with C = 1 or 3; outputs have the same shape, dtype and
device, are clamped to [0, 1], and the input is never modified.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from .streams import CohortDraws, lead_shape, rand, randint
if TYPE_CHECKING:
    from torch import Tensor

__all__ = ['AUTHORS_SERVER', 'AugmentSpec', 'FLIP_ONLY', 'STRONG_OPS', 'UNAUGMENTED', 'WEAK_AUGMENTS',
           'augment_spec_for', 'random_crop_flip', 'strong_augment', 'weak_augment']


@dataclass(frozen=True)
class AugmentSpec:
    flip: bool  # random horizontal flip with p = 0.5 (off for digits, where a mirrored digit is another glyph)
    pad: int    # reflect-pad by `pad` pixels, then crop back to H x W at a random offset
    jitter: bool = True   # the weak view's contrast factor (and grayscale on RGB); off: geometry only

    def __post_init__(self) -> None:
        for name in ('flip', 'jitter'):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f'AugmentSpec.{name}={getattr(self, name)!r}: must be a bool')
        if isinstance(self.pad, bool) or not isinstance(self.pad, Integral) or self.pad < 0:
            raise ValueError(f'AugmentSpec.pad={self.pad!r}: must be an int >= 0')


# Pads as in FixMatch (4 pixels = 12.5% of 32) and 2 for the 28x28 images; no flip for digits.
_SPECS = {
    'cifar10': AugmentSpec(flip=True, pad=4),
    'synthetic_cifar10': AugmentSpec(flip=True, pad=4),
    'cifar100': AugmentSpec(flip=True, pad=4),
    'fashion_mnist': AugmentSpec(flip=True, pad=2),
    'mnist': AugmentSpec(flip=False, pad=2),
    'svhn': AugmentSpec(flip=False, pad=4),
}


# The FedSiam authors' weak view for FedFixMatch and FedMatch on every dataset (their
# main_fedfixmatch.py / main_fedmatch.py, trans_mnist_weak): RandomHorizontalFlip alone, digits too.
FLIP_ONLY = AugmentSpec(flip=True, pad=0, jitter=False)
# The FedSiam authors' labels-at-server MNIST views (fedsiam-labels-at-server/augmentations/__init__.py,
# Mnist_Transform, "Table 6"): RandomHorizontalFlip, then RandomCrop(28, padding=int(28 * 0.125) = 3,
# padding_mode='reflect'), digits flipped too; both of their views are drawn this way.
AUTHORS_SERVER = AugmentSpec(flip=True, pad=3, jitter=False)
# The FedSiam authors' labels-at-client MNIST siamese scripts (main_fedsiam_pi/_mt/_d.py): ToTensor and
# Normalize only, so both "perturbed" views are the image itself (dropout their only perturbation).
UNAUGMENTED = AugmentSpec(flip=False, pad=0, jitter=False)
_NAMED = {'flip_only': FLIP_ONLY, 'authors_server': AUTHORS_SERVER, 'none': UNAUGMENTED}
WEAK_AUGMENTS = ('dataset', *_NAMED)


def augment_spec_for(dataset: str, weak_augment: str = 'dataset') -> AugmentSpec:
    """The augmentation spec of a dataset by name; `weak_augment` 'flip_only', 'authors_server' or 'none':
    that spec instead (FLIP_ONLY, AUTHORS_SERVER, UNAUGMENTED)."""
    if dataset not in _SPECS:
        raise ValueError(f'augment_spec_for: dataset={dataset!r}: must be one of {", ".join(sorted(_SPECS))}')
    if weak_augment not in WEAK_AUGMENTS:
        raise ValueError(f'augment_spec_for: weak_augment={weak_augment!r}: must be one of {", ".join(WEAK_AUGMENTS)}')
    return _NAMED.get(weak_augment, _SPECS[dataset])


# ITU-R 601-2 luma, as PIL's convert('L') and torchvision's rgb_to_grayscale.
_LUMA = (0.299, 0.587, 0.114)


def _check_inputs(where: str, x: Tensor, generator: torch.Generator, spec: AugmentSpec) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.is_floating_point():
        raise ValueError(f'{where}: x must be a floating tensor of shape (N, C, H, W), got '
                         f'{type(x).__name__} {tuple(getattr(x, "shape", ()))} {getattr(x, "dtype", "")}')
    if x.shape[1] not in (1, 3):
        raise ValueError(f'{where}: x has {x.shape[1]} channels: must have 1 or 3')
    if not isinstance(generator, torch.Generator) or generator.device.type != "cpu":
        raise ValueError(f'{where}: generator must be a CPU torch.Generator (draws are made on the CPU and '
                         f'moved to the images\' device), got {getattr(generator, "device", type(generator).__name__)}')
    if not isinstance(spec, AugmentSpec):
        raise ValueError(f'{where}: spec must be an AugmentSpec, got {type(spec).__name__}')
    h, w = x.shape[2:]
    if spec.pad >= h or spec.pad >= w:
        # reflect padding cannot reach further than the image is wide
        raise ValueError(f'{where}: spec.pad={spec.pad}: must be smaller than the image size {h}x{w}')


def _per_sample(v: Tensor) -> Tensor:
    return v.view(-1, 1, 1, 1)


def _gray(x: Tensor) -> Tensor:
    """(N, 1, H, W) luma of an RGB batch; a 1-channel batch is its own gray."""
    if x.shape[1] == 1:
        return x
    r, g, b = x.unbind(1)
    return (_LUMA[0] * r + _LUMA[1] * g + _LUMA[2] * b).unsqueeze(1)


def random_crop_flip(x: Tensor, generator: torch.Generator, spec: AugmentSpec) -> Tensor:
    """Random translation (reflect pad + crop at a per-sample offset) and, if `spec.flip`, a
    per-sample horizontal flip with p = 0.5. Every output pixel is a copy of an input pixel of the
    padded image, so the result is exact (no interpolation) and stays in the input's range.
    """
    _check_inputs('random_crop_flip', x, generator, spec)
    return apply_crop_flip(x, draw_crop_flip(len(x), generator, spec), spec)


def draw_crop_flip(n: int, source: torch.Generator | CohortDraws, spec: AugmentSpec) -> dict[str, Tensor]:
    """The random choices of `random_crop_flip` for n samples, in the order it makes them."""
    draws: dict[str, Tensor] = {}
    if n == 0 or (spec.pad == 0 and not spec.flip):
        return draws
    if spec.pad:
        # "offsets" [2, n, 1]: the rows' n draws, then the columns' n, in one call: the CPU generator
        # (mt19937) gives each element of a randint one 32-bit draw, in order, so one call of 2n equals
        # two calls of n (tests/test_augment.py)
        draws["offsets"] = randint(source, 0, 2 * spec.pad + 1, (2, n, 1))
    if spec.flip:
        draws["flip"] = rand(source, (n,)) < 0.5
    return draws


def _on(draws: dict[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    """The draws moved to the images' device (a no-op where they already are)."""
    return {k: v.to(device) for k, v in draws.items()}


def apply_crop_flip(x: Tensor, draws: dict[str, Tensor], spec: AugmentSpec) -> Tensor:
    """`random_crop_flip` with its random choices given (`draw_crop_flip`, concatenated over any
    number of batches: one call then augments a whole cohort's batches)."""
    draws = _on(draws, x.device)
    n, c, h, w = x.shape
    p = spec.pad
    if n == 0 or (p == 0 and not spec.flip):
        return x.clone()
    padded = F.pad(x, (p, p, p, p), mode='reflect') if p else x
    wp = w + 2 * p
    rows = torch.arange(h, device=x.device).expand(n, h)
    cols = torch.arange(w, device=x.device).expand(n, w)
    if p:
        rows = rows + draws["offsets"][0]
        cols = cols + draws["offsets"][1]
    if spec.flip:
        # A flip is reading the crop's columns right to left, so it folds into the same gather.
        cols = torch.where(draws["flip"][:, None], cols.flip(1), cols)
    # One gather over the flattened padded images: index = row * padded_width + column.
    index = (rows[:, :, None] * wp + cols[:, None, :]).reshape(n, 1, h * w).expand(n, c, h * w)
    return padded.reshape(n, c, -1).gather(2, index).reshape(n, c, h, w)


def weak_augment(x: Tensor, generator: torch.Generator, spec: AugmentSpec) -> Tensor:
    """FedSiam's weak augmentation, per sample.

    FedSiam (Sec. 4.1, "Parameter Settings"; /work/shared/papers/fedsiam.md line 268) lists its weak
    augmentation as "random reflect, flip, contrast adjustment, grayscale, and crop", without
    parameters. Here: reflect-pad and random crop (translation by up to `spec.pad` pixels), a
    horizontal flip with p = 0.5 if `spec.flip`, a contrast factor uniform in [0.8, 1.2] (blend with
    the image's mean gray level, as PIL/torchvision contrast) and, for RGB only, grayscale with
    p = 0.2 (torchvision's RandomGrayscale default). The factor 0.8-1.2 is ColorJitter(contrast=0.2).
    `spec.jitter = False` keeps the geometric part only (FLIP_ONLY).
    """
    _check_inputs('weak_augment', x, generator, spec)
    return apply_weak(x, draw_weak(len(x), x.shape[1], generator, spec), spec)


def draw_weak(n: int, channels: int, source: torch.Generator | CohortDraws, spec: AugmentSpec) -> dict[str, Tensor]:
    """The random choices of `weak_augment` for n samples with `channels` channels, in its order.
    Float draws are float32 whatever the images' dtype (a half-precision batch gets the same)."""
    draws = draw_crop_flip(n, source, spec)
    if n and spec.jitter:
        # the contrast factor's uniform draw u; apply_weak makes it 0.8 + 0.4·u, once for a whole cohort
        draws["factor_u"] = rand(source, (n,))
        if channels == 3:
            draws["gray"] = rand(source, (n,)) < 0.2
    return draws


def apply_weak(x: Tensor, draws: dict[str, Tensor], spec: AugmentSpec) -> Tensor:
    """`weak_augment` with its random choices given (`draw_weak`, concatenated over any number of
    batches)."""
    draws = _on(draws, x.device)
    y = apply_crop_flip(x, draws, spec)
    n, c = y.shape[:2]
    if n == 0 or not spec.jitter:
        return y
    factor = _per_sample(0.8 + 0.4 * draws["factor_u"]).to(y.dtype)    # elementwise: the same floats per sample
    mean = _gray(y).mean(dim=(1, 2, 3), keepdim=True)
    y = torch.addcmul(mean * (1 - factor), factor, y).clamp_(0, 1)  # mean + f * (y - mean), one pass
    if c == 3:
        y = torch.where(_per_sample(draws["gray"]), _gray(y).expand_as(y), y)
    return y


# FixMatch's RandAugment pool (fixmatch_augment_pool in FixMatch-pytorch's randaugment.py), Invert
# excluded as there. Ops are picked uniformly, with replacement, per sample.
STRONG_OPS = (
    'identity', 'autocontrast', 'brightness', 'color', 'contrast', 'equalize', 'posterize',
    'rotate', 'sharpness', 'shear_x', 'shear_y', 'solarize', 'translate_x', 'translate_y',
)
_OP = {name: i for i, name in enumerate(STRONG_OPS)}
_GEOMETRIC = ('rotate', 'shear_x', 'shear_y', 'translate_x', 'translate_y')

# Strength of each op at level 1 (magnitude 10 of 10), as torchvision's RandAugment at its top bin
# (which follows the RandAugment paper); the level scales them linearly and carries a random sign.
MAX_ROTATE_DEG = 30.0
MAX_SHEAR = 0.3
MAX_TRANSLATE = 0.3   # fraction of the image size
MAX_ENHANCE = 0.9     # enhancement factor 1 +- 0.9
GRAY_FILL = 0.5       # FixMatch fills uncovered pixels and the cutout square with gray (128)


# The geometric ops as (rotation in radians, shear x, shear y, translation x, translation y) at
# level 1, translations as fractions of the size; a sample's row times its signed level gives its
# warp, and every other op's all-zero row gives the identity.
_AFFINE_AT_LEVEL_1 = {
    'rotate': (math.radians(MAX_ROTATE_DEG), 0, 0, 0, 0),
    'shear_x': (0, MAX_SHEAR, 0, 0, 0),
    'shear_y': (0, 0, MAX_SHEAR, 0, 0),
    'translate_x': (0, 0, 0, MAX_TRANSLATE, 0),
    'translate_y': (0, 0, 0, 0, MAX_TRANSLATE),
}


@functools.lru_cache(maxsize=None)
def _affine_table(device: torch.device) -> Tensor:
    table = torch.zeros(len(STRONG_OPS), 5)
    for name, row in _AFFINE_AT_LEVEL_1.items():
        table[_OP[name]] = torch.tensor(row)
    return table.to(device)


def _affine(op: Tensor, level: Tensor, h: int, w: int) -> Tensor:
    """Per-sample (N, 2, 3) affine_grid matrices for the geometric ops (identity for the others).

    Rotation and shear act about the image centre (unlike PIL's shear about the top-left corner,
    which also translates), in pixel units, converted to affine_grid's normalised coordinates where
    one unit is w/2 pixels along x and h/2 along y. Only one of the five parameters is nonzero per
    sample, so the sum [[cos, shear_x - sin], [sin + shear_y, cos]] is that one op's matrix.
    """
    angle, shear_x, shear_y, tx, ty = (_affine_table(op.device)[op] * level[:, None]).unbind(1)
    cos, sin = torch.cos(angle), torch.sin(angle)
    return torch.stack([
        torch.stack([cos, (shear_x - sin) * (h / w), 2 * tx], dim=1),
        torch.stack([(sin + shear_y) * (w / h), cos, 2 * ty], dim=1),
    ], dim=1)


def _warp(y: Tensor, theta: Tensor) -> Tensor:
    """Bilinear warp of the whole batch, each sample by its own matrix, with gray where the source
    falls outside the image. grid_sample can only pad with zeros or the border, so a channel of ones
    is warped along to measure how much of each output pixel was covered, and the rest is gray."""
    n, c, h, w = y.shape
    # What F.affine_grid(theta, ..., align_corners=False) computes (pixel centres at
    # (2i + 1) / size - 1), written out because its batched matmul is slower than the warp itself.
    theta = theta.to(y.dtype)[:, :, :, None, None]
    xs = (torch.arange(w, device=y.device, dtype=y.dtype) * 2 + 1) / w - 1
    ys = ((torch.arange(h, device=y.device, dtype=y.dtype) * 2 + 1) / h - 1)[:, None]
    grid = torch.stack([theta[:, 0, 0] * xs + theta[:, 0, 1] * ys + theta[:, 0, 2],
                        theta[:, 1, 0] * xs + theta[:, 1, 1] * ys + theta[:, 1, 2]], dim=-1)
    warped = F.grid_sample(torch.cat([y, torch.ones_like(y[:, :1])], dim=1), grid, mode='bilinear',
                           padding_mode='zeros', align_corners=False)
    covered = warped[:, c:]
    return (warped[:, :c] + (1 - covered) * GRAY_FILL).clamp(0, 1)


def _smooth(y: Tensor) -> Tensor:
    """PIL's ImageFilter.SMOOTH (the degenerate image of ImageEnhance.Sharpness): the 3x3 kernel
    [[1,1,1],[1,5,1],[1,1,1]]/13 on the interior, the one-pixel border left as it is. The kernel is
    a 3x3 box sum plus 4x the centre; summing shifted slices (rows, then columns) is faster on
    small images than conv2d or avg_pool2d."""
    rows = y[..., :-2, :] + y[..., 1:-1, :] + y[..., 2:, :]
    box = rows[..., :-2] + rows[..., 1:-1] + rows[..., 2:]
    out = y.clone()
    out[..., 1:-1, 1:-1] = (box + 4 * y[..., 1:-1, 1:-1]) / 13
    return out


def _autocontrast(y: Tensor) -> Tensor:
    """Stretch each image's each channel to span [0, 1] (PIL autocontrast, cutoff 0)."""
    lo = y.amin(dim=(2, 3), keepdim=True)
    span = y.amax(dim=(2, 3), keepdim=True) - lo
    return torch.where(span > 0, (y - lo) / torch.where(span > 0, span, torch.ones_like(span)), y)


def _equalize(y: Tensor) -> Tensor:
    """Histogram equalisation per image and channel on 256 levels, as torchvision's `equalize`
    (PIL's algorithm), for the whole batch at once: one histogram row per (image, channel)."""
    n, c, h, w = y.shape
    levels = (y * 255).round_().long().clamp_(0, 255).reshape(n * c, h * w)
    hist = torch.zeros(n * c, 256, dtype=torch.long, device=y.device)
    hist.scatter_add_(1, levels, torch.ones_like(levels))
    bins = torch.arange(256, device=y.device)
    last = torch.where(hist > 0, bins, -1).amax(dim=1, keepdim=True)
    step = (h * w - hist.gather(1, last)) // 255
    # lut[i] = (pixels below level i + step // 2) // step
    lut = (hist.cumsum(dim=1) - hist + step // 2) // step.clamp(min=1)
    out = lut.clamp_(0, 255).gather(1, levels).to(y.dtype).div_(255).reshape(n, c, h, w)
    # A one-level image (step 0) has nothing to equalise.
    return torch.where((step > 0).view(n, c, 1, 1), out, y)


def _posterize(y: Tensor, strength: Tensor) -> Tensor:
    """Keep the top 8 - floor(4 * strength) bits of each 8-bit level (8..4 bits for magnitudes
    0..10, down to 1 bit for larger ones)."""
    bits = (8 - torch.floor(4 * strength)).clamp(1, 8)
    step = _per_sample(torch.pow(2.0, 8 - bits)).to(y.dtype)
    return torch.floor((y * 255).round() / step) * step / 255


def _solarize(y: Tensor, strength: Tensor) -> Tensor:
    """Invert the levels at or above 256 * (1 - strength) (of 255), as FixMatch's Solarize: nothing
    at strength 0, everything at strength 1."""
    threshold = _per_sample((1 - strength) * (256 / 255)).to(y.dtype)
    return torch.where(y >= threshold, 1 - y, y)


def _enhance(y: Tensor, degenerate: Tensor, level: Tensor) -> Tensor:
    """PIL ImageEnhance: blend(degenerate, image, factor), factor 1 + 0.9 * level (>= 0)."""
    factor = _per_sample((1 + MAX_ENHANCE * level).clamp(min=0)).to(y.dtype)
    return torch.lerp(degenerate, y, factor).clamp_(0, 1)


# Each op as f(images, op, signed level) -> images, every sample independent of the others; the
# geometric ops share one function since one warp serves them all. Identity is no entry.
_OP_GROUPS = (
    (_GEOMETRIC, lambda y, op, level: _warp(y, _affine(op, level, y.shape[2], y.shape[3]))),
    (('autocontrast',), lambda y, op, level: _autocontrast(y)),
    (('brightness',), lambda y, op, level: _enhance(y, torch.zeros_like(y), level)),
    (('color',), lambda y, op, level: _enhance(y, _gray(y).expand_as(y), level)),  # identity if 1 channel
    (('contrast',), lambda y, op, level: _enhance(
        y, _gray(y).mean(dim=(1, 2, 3), keepdim=True).expand_as(y), level)),
    (('equalize',), lambda y, op, level: _equalize(y)),
    (('posterize',), lambda y, op, level: _posterize(y, level.abs())),
    (('sharpness',), lambda y, op, level: _enhance(y, _smooth(y), level)),
    (('solarize',), lambda y, op, level: _solarize(y, level.abs())),
)
assert sorted(n for names, _ in _OP_GROUPS for n in names) == sorted(set(STRONG_OPS) - {'identity'})


@functools.lru_cache(maxsize=None)
def _group_table(device: torch.device) -> Tensor:
    """Op index -> 1 + its position in _OP_GROUPS; 0 for identity."""
    table = torch.zeros(len(STRONG_OPS), dtype=torch.long)
    for g, (names, _) in enumerate(_OP_GROUPS, start=1):
        for name in names:
            table[_OP[name]] = g
    return table.to(device)


def _apply_ops(y: Tensor, op: Tensor, level: Tensor, whole_batch: bool | None = None) -> Tensor:
    """One RandAugment slot: sample i gets op STRONG_OPS[op[i]] at signed level[i] (1 = magnitude 10).

    On CUDA each op runs on the whole batch and each sample keeps its own op's result
    (`whole_batch`): finding which samples chose an op would need a host synchronisation, and the
    GPU is bound by kernel launches on tensors this small anyway. On CPU, where reading indices
    costs nothing, each op runs only on the samples that chose it, a fraction of the work. Both
    give the same result; `whole_batch` overrides the choice (for tests).
    """
    group = _group_table(op.device)[op]
    if whole_batch is None:
        whole_batch = y.device.type != 'cpu'
    if whole_batch:
        out = y
        for g, (_, fn) in enumerate(_OP_GROUPS, start=1):
            out = torch.where(_per_sample(group == g), fn(y, op, level), out)
        return out
    out = y.clone()
    # Samples sorted by group, cut into one run of indices per group (the first run is identity).
    counts = torch.bincount(group, minlength=len(_OP_GROUPS) + 1).tolist()
    runs = torch.argsort(group, stable=True).split(counts)
    for idx, (_, fn) in zip(runs[1:], _OP_GROUPS):
        if idx.numel():
            out[idx] = fn(y[idx], op[idx], level[idx])
    return out


def _cutout(y: Tensor, draws: dict[str, Tensor]) -> Tensor:
    """Fill a per-sample square of side in [int(cutout * S / 2), int(cutout * S)] (S = min(H, W))
    centred at a uniform random pixel with gray, clipped at the image's edges (FixMatch's
    CutoutAbs, whose side is 0.5 * 32 = 16 on CIFAR). The side and centre are `draw_strong`'s."""
    n, c, h, w = y.shape
    if "side" not in draws:
        return y
    side = draws["side"]
    top, left = draws["top"] - side // 2, draws["left"] - side // 2
    rows = torch.arange(h, device=y.device)
    cols = torch.arange(w, device=y.device)
    in_rows = (rows >= top) & (rows < top + side)
    in_cols = (cols >= left) & (cols < left + side)
    return y.masked_fill((in_rows[:, :, None] & in_cols[:, None, :])[:, None], GRAY_FILL)


def _check_strong(num_ops, magnitude, cutout) -> None:
    if isinstance(num_ops, bool) or not isinstance(num_ops, Integral) or num_ops < 0:
        raise ValueError(f'strong_augment: num_ops={num_ops!r}: must be an int >= 0')
    if isinstance(magnitude, bool) or not isinstance(magnitude, Integral):
        raise ValueError(f'strong_augment: magnitude={magnitude!r}: must be an int')
    if not 0 <= magnitude <= 30:
        raise ValueError(f'strong_augment: magnitude={magnitude!r}: must be within [0, 30]')
    if isinstance(cutout, bool) or not isinstance(cutout, Real) or not 0 <= cutout <= 1:
        raise ValueError(f'strong_augment: cutout={cutout!r}: must be within [0, 1]')


def strong_augment(x: Tensor, generator: torch.Generator, spec: AugmentSpec, num_ops: int = 2,
                   magnitude: int = 10, cutout: float = 0.5) -> Tensor:
    """FixMatch's strong augmentation (RandAugmentMC in FixMatch-pytorch), per sample.

    1. `random_crop_flip` (FixMatch's strong pipeline starts with the weak flip + reflect crop).
    2. `num_ops` times: an op drawn uniformly from `STRONG_OPS` (with replacement), applied with
       p = 0.5 at an integer magnitude uniform in [1, magnitude] (all 0 if magnitude is 0) out of
       10, with a random sign for the signed ops. At magnitude 10: rotate +-30 deg, shear +-0.3,
       translate +-0.3 of the size, enhancement factors 1 +- 0.9, posterize to 4 bits, solarize all.
       Geometric ops are one bilinear grid_sample for the batch with a per-sample affine matrix
       (about the centre, gray 0.5 where the source leaves the image; see `_warp`), where
       FixMatch's PIL code resamples by nearest neighbour.
       Color (saturation) is the identity for 1-channel images.
    3. Cutout (see `_cutout`) with gray 0.5, if `cutout` > 0.
    """
    _check_strong(num_ops, magnitude, cutout)
    _check_inputs('strong_augment', x, generator, spec)
    draws = draw_strong(len(x), x.shape[2:], generator, spec, num_ops, magnitude, cutout)
    return apply_strong(x, draws, spec, num_ops)


def draw_strong(n: int, size: tuple[int, int], source: torch.Generator | CohortDraws, spec: AugmentSpec,
                num_ops: int = 2, magnitude: int = 10, cutout: float = 0.5) -> dict[str, Tensor]:
    """The random choices of `strong_augment` for n samples of `size` (H, W), in the order it makes
    them; none depends on the pixels, so they can all be drawn before any is applied."""
    _check_strong(num_ops, magnitude, cutout)
    draws = draw_crop_flip(n, source, spec)
    if n == 0:
        return draws
    if num_ops:
        # the raw draws only: apply_strong turns them into ops and levels, once for a whole cohort
        shape = (num_ops, n)
        draws["ops"] = randint(source, 0, len(STRONG_OPS), shape)
        draws["applied_u"] = rand(source, shape)      # op applied when < 0.5
        if magnitude:
            draws["mags"] = randint(source, 1, magnitude + 1, shape)
        else:
            draws["mags"] = torch.zeros((*lead_shape(source), *shape), dtype=torch.long)
        draws["sign_u"] = rand(source, shape)         # level negative when < 0.5
    h, w = size
    hi, lo = int(cutout * min(h, w)), int(cutout * min(h, w) * 0.5)
    if cutout > 0 and hi > 0:
        draws["side"] = randint(source, lo, hi + 1, (n, 1))
        draws["top"] = randint(source, 0, h, (n, 1))
        draws["left"] = randint(source, 0, w, (n, 1))
    return draws


def apply_strong(x: Tensor, draws: dict[str, Tensor], spec: AugmentSpec, num_ops: int = 2) -> Tensor:
    """`strong_augment` with its random choices given (`draw_strong`, concatenated over any number of
    batches along the sample dimension by `concat_draws`: one call then augments a whole cohort's
    batches)."""
    draws = _on(draws, x.device)
    y = apply_crop_flip(x, draws, spec)
    if y.shape[0] == 0:
        return y
    if "ops" in draws:
        ops = torch.where(draws["applied_u"] < 0.5, draws["ops"], _OP['identity'])
        levels = torch.where(draws["sign_u"] < 0.5, -1.0, 1.0) * draws["mags"] / 10
        for k in range(num_ops):
            y = _apply_ops(y, ops[k], levels[k])
    y = _cutout(y, draws)
    return y.clamp(0, 1)


# draws whose samples run along their second dimension: draw_strong's per-op [num_ops, n] and the crop's [2, n, 1]
SAMPLES_SECOND = ("ops", "applied_u", "mags", "sign_u", "offsets")


def concat_draws(draws: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """Several batches' draws as one batch's: along the samples (their second dim for the per-op draws
    and the crop offsets)."""
    return {k: torch.cat([d[k] for d in draws], dim=1 if k in SAMPLES_SECOND else 0) for k in draws[0]}
