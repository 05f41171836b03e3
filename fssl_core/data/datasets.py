"""The five image data sets of the FSSL papers, loaded once into device tensors.

`load_dataset('cifar10', device='cuda')` returns an `ImageData` whose train and test images are
float32 [N, C, H, W] tensors in [0, 1] on the device, with int64 labels, so that clients can be
index arrays into them and augmentation can run batched on the device (no DataLoader, no PIL).

Files are read by torchvision's own dataset classes from the torchvision on-disk layout under
`data_root()` (env FSSL_DATA, else ./data); only their `.data`/`.targets`/`.labels` arrays are used,
converted in one step. A missing data set is downloaded by torchvision unless download=False or
FSSL_OFFLINE=1; if that is impossible, `DatasetUnavailable` says which files to put where.

Every file read is verified first against its known MD5 (`verify_files`: torchvision's own for CIFAR and
SVHN, which read the files torchvision lists; for (Fashion-)MNIST, whose lists give the MD5s of the .gz
downloads while what is read are the files unzipped from them, the MD5s of those unzipped files, pinned in
data/checksums.py). A copy that differs is refused (`DatasetCorrupted`, one line naming the file, its digest and
the expected one): a run is never trained, under its data-free run id, on altered data. The data set's
content digest (`data_digest`) goes into each run's env.json. The check is made once per process and file
state (MD5 of MNIST's 55 MB: about 0.2 s on a busy 2-core CPU, beside 0.3 s to read them).

Loaded sets are cached in-process by (name, root, device): a notebook running many configurations
reads each set from disk once. The cached tensors are shared by every caller: never modify them in
place (index or copy them instead). `clear_cache()` drops the cache.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch      # read only where data is loaded: a plan asks this module without running torch (cli.defer_torch)

from .augment import WEAK_AUGMENTS
from .checksums import known_files
from .partition import resplit_train_test
from ..paths import project_root

if TYPE_CHECKING:
    from torch import Tensor

DATASETS = ('mnist', 'fashion_mnist', 'cifar10', 'cifar100', 'svhn', 'synthetic_cifar10')


class DatasetUnavailable(RuntimeError):
    """A data set is not on disk and could not (or was not allowed to) be downloaded."""


class DatasetCorrupted(DatasetUnavailable):
    """A data set's file is on disk but is not the official one (its MD5 differs from the known one)."""


@dataclass(frozen=True)
class Shape:
    """What a data set's official splits hold, known without reading its files (RunConfig checks
    models and sizes against it); tests/test_config.py compares it with the loaded data."""
    channels: int
    image_size: int       # height = width, pixels
    num_classes: int
    num_train: int
    num_test: int


class _Torchvision:
    """torchvision.datasets, imported where files are read: it brings torch._dynamo (~2 s of an import), which
    a plan, --help or a run on data already loaded never needs."""
    def __getattr__(self, name: str):
        from torchvision import datasets      # torchvision: brings torch._dynamo, for reading files alone
        return getattr(datasets, name)


tv = _Torchvision()


@dataclass(frozen=True)
class _Spec:
    tv_name: str | None   # the torchvision dataset class that reads the files (None: synthetic, no files)
    num_classes: int
    mean: tuple[float, ...]  # per-channel mean of the training images in [0, 1]
    std: tuple[float, ...]   # per-channel standard deviation of the training images in [0, 1]
    image_size: int
    num_train: int
    num_test: int

    @property
    def tv_class(self) -> type | None:
        return getattr(tv, self.tv_name) if self.tv_name else None


# Normalization statistics: per-channel pixel mean and standard deviation over the training set.
# MNIST: the PyTorch MNIST example (pytorch/examples, mnist/main.py); recomputed here from the
#   training set: 0.13066, 0.30811.
# Fashion-MNIST: the commonly used values, recomputed here from the training set: 0.28604, 0.35302.
# CIFAR-10, CIFAR-100: FixMatch-pytorch (kekmodel, dataset/cifar.py), the per-pixel std over the
#   training set. SemiFL (src/data.py) uses CIFAR-10 std (0.2023, 0.1994, 0.2010), an often-copied
#   value that is not the per-pixel std (kuangliu/pytorch-cifar issue #19), and CIFAR-100
#   (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762); swap them in here to match SemiFL exactly.
# SVHN: SemiFL's data_stats (src/data.py); FixMatch-pytorch has no SVHN loader.
_SPECS = {
    'mnist': _Spec('MNIST', 10, (0.1307,), (0.3081,), 28, 60000, 10000),
    'fashion_mnist': _Spec('FashionMNIST', 10, (0.2860,), (0.3530,), 28, 60000, 10000),
    'cifar10': _Spec('CIFAR10', 10, (0.4914, 0.4822, 0.4465), (0.2471, 0.2435, 0.2616), 32, 50000, 10000),
    'cifar100': _Spec('CIFAR100', 100, (0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761), 32, 50000, 10000),
    'svhn': _Spec('SVHN', 10, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970), 32, 73257, 26032),
    # uniform random images of CIFAR-10's shape and size, for speed benchmarks only (no files)
    'synthetic_cifar10': _Spec(None, 10, (0.5, 0.5, 0.5), (0.2887, 0.2887, 0.2887), 32, 50000, 10000),
}
assert tuple(_SPECS) == DATASETS


def shape_of(name: str) -> Shape:
    """Channels, image size, classes and official split sizes of data set `name`, without its files."""
    if name not in _SPECS:
        raise ValueError(f'shape_of: name={name!r}: must be one of {DATASETS}')
    spec = _SPECS[name]
    return Shape(len(spec.mean), spec.image_size, spec.num_classes, spec.num_train, spec.num_test)


# --- what RunConfig asks of the data sets (run_config.py); each rule returns None or the message -----

# A resplit's test set holds at least this many samples per class (it is drawn class-stratified): at 10 a class, one
# sample is 1 accuracy point on 10 classes, the coarsest step at which the papers' differences (a point or two)
# can still be read; FedMix's resplits use 2000 (200 a class), this project's tests 100 to 500.
MIN_TEST_PER_CLASS = 10


def _resplit(cfg, facts):
    if (cfg.resplit_train > 0) != (cfg.resplit_test > 0):
        return (f"resplit_train={cfg.resplit_train}, resplit_test={cfg.resplit_test}: "
                "set both (a resplit) or neither (the official splits)")
    least = MIN_TEST_PER_CLASS * facts.shape.num_classes
    if 0 < cfg.resplit_test < least:
        return (f"resplit_test={cfg.resplit_test}, dataset={cfg.dataset!r}: must be at least {least}, "
                f"{MIN_TEST_PER_CLASS} test samples for each of its {facts.shape.num_classes} classes (below it one "
                f"sample is over {100 / least:g} accuracy point; resplit_test=1 scores 0% or 100%)")
    pooled = facts.shape.num_train + facts.shape.num_test
    if cfg.resplit_train + cfg.resplit_test > pooled:
        return (f"resplit_train={cfg.resplit_train}, resplit_test={cfg.resplit_test}: draw "
                f"{cfg.resplit_train + cfg.resplit_test} samples from {cfg.dataset}'s {pooled} "
                f"({facts.shape.num_train} train + {facts.shape.num_test} test); their sum must be at most {pooled}")


def _clients(cfg, facts):
    if cfg.clients > facts.train:
        return (f"clients={cfg.clients}, dataset={cfg.dataset!r}: must be at most {facts.train}, one per sample of "
                f"{facts.training_set(cfg)}")


def config_rules() -> tuple[dict, tuple]:
    """The data's fields (a resplit of the official splits, the weak view) and their sizes' rules."""
    owned = {"resplit_train": "[0, 1000000]", "resplit_test": "[0, 1000000]", "weak_augment": WEAK_AUGMENTS}
    return owned, (_resplit, _clients)


@functools.lru_cache(maxsize=None)
def _per_channel(values: tuple[float, ...], dtype: torch.dtype, device: torch.device) -> Tensor:
    """A per-channel constant as a [C, 1, 1] tensor, made once per dtype and device (normalize runs
    every step; the tensor is only read)."""
    return torch.tensor(values, dtype=dtype, device=device).view(-1, 1, 1)


@dataclass(frozen=True, eq=False)
class ImageData:
    """One data set's train and test split as device tensors.

    The tensors may be shared with other callers through the cache of `load_dataset`: read,
    index or copy them, never modify them in place.
    """

    name: str
    train_x: Tensor  # float32 [N_train, C, H, W], pixel values in [0, 1]
    train_y: Tensor  # int64 [N_train], class index in [0, num_classes)
    test_x: Tensor   # float32 [N_test, C, H, W], pixel values in [0, 1]
    test_y: Tensor   # int64 [N_test]
    num_classes: int
    mean: tuple[float, ...]  # per-channel mean used by normalize(), one entry per channel
    std: tuple[float, ...]   # per-channel std used by normalize()
    digest: str | None = None  # content digest of the files it was read from (data_digest); None: no files

    def __post_init__(self):
        for split, x, y in (('train', self.train_x, self.train_y),
                            ('test', self.test_x, self.test_y)):
            if x.ndim != 4 or len(x) != len(y):
                raise ValueError(f'ImageData.{split}_x shape {tuple(x.shape)} with {split}_y shape '
                                 f'{tuple(y.shape)}: must be [N, C, H, W] and [N]')
        if not len(self.mean) == len(self.std) == self.in_channels:
            raise ValueError(f'ImageData.mean={self.mean}, std={self.std}: must have one entry per '
                             f'channel ({self.in_channels})')

    @property
    def in_channels(self) -> int:
        return self.train_x.shape[1]

    @property
    def image_size(self) -> int:
        """Height (= width) of the square images in pixels: 28 for (Fashion-)MNIST, else 32."""
        return self.train_x.shape[-1]

    def normalize(self, x: Tensor) -> Tensor:
        """(x - mean) / std per channel; x is [..., C, H, W] in [0, 1] on any device."""
        if x.ndim < 3 or x.shape[-3] != len(self.mean):
            raise ValueError(f'ImageData.normalize: x of shape {tuple(x.shape)} must be '
                             f'[..., {len(self.mean)}, H, W] for {self.name}')
        return (x - _per_channel(tuple(self.mean), x.dtype, x.device)) / _per_channel(tuple(self.std), x.dtype, x.device)

    def __repr__(self):
        return (f'ImageData({self.name!r}, train {tuple(self.train_x.shape)}, '
                f'test {tuple(self.test_x.shape)}, {self.num_classes} classes, '
                f'device {self.train_x.device})')


def data_root() -> Path:
    """The folder data sets live in: env FSSL_DATA if set, else data/ in the project root (never the
    cwd: notebooks run in notebooks/)."""
    return Path(os.environ['FSSL_DATA']).expanduser() if os.environ.get('FSSL_DATA') else project_root() / 'data'


def _download_default() -> bool:
    return os.environ.get('FSSL_OFFLINE', '').strip().lower() not in ('1', 'true', 'yes')


_CACHE: dict[tuple[str, Path, torch.device], ImageData] = {}


# resplits of a loaded data set, by (id of the data set, sizes, seed); each entry holds its source, so the id
# is not reused while the entry lives. Runs of one batch (engine/trainer.py) then share one re-split's tensors.
_RESPLITS: dict[tuple[int, int, int, int], tuple[ImageData, ImageData]] = {}
RESPLITS_KEPT = 8


def clear_cache() -> None:
    """Forget every loaded data set and resplit (their memory is freed once no caller holds them)."""
    _CACHE.clear()
    _RESPLITS.clear()


def load_dataset(name: str, device: str | torch.device = 'cpu', root: Path | None = None,
                 download: bool | None = None) -> ImageData:
    """Train and test split of `name` (one of DATASETS) as tensors on `device`.

    root: folder in torchvision's layout; default `data_root()`.
    download: let torchvision download what is missing; default True unless FSSL_OFFLINE=1.
    Raises DatasetUnavailable when the files are missing and cannot be downloaded.
    The result is cached by (name, root, device) and shared: do not modify its tensors in place.
    """
    if name not in _SPECS:
        raise ValueError(f'load_dataset name={name!r}: must be one of {DATASETS}')
    root, origin = _root_and_origin(root)
    device = _resolve_device(device)
    download = _download_default() if download is None else download
    key = (name, root, device)
    if key not in _CACHE:
        _CACHE[key] = _load(name, root, origin, device, download)
    return _CACHE[key]


def check_files(name: str, download: bool | None = None) -> None:
    """Raise what `load_dataset(name, download=download)` would raise here (its first line), loading no data where
    every file is present (each then checked against its MD5, verify_files) or none is needed (the synthetic set),
    and running no torch (a plan asks this: data.availability). Where a file is missing: with download allowed
    (default: unless FSSL_OFFLINE=1) load_dataset itself, which downloads it; else DatasetUnavailable."""
    if name not in _SPECS:
        raise ValueError(f'check_files name={name!r}: must be one of {DATASETS}')
    if _SPECS[name].tv_name is None:
        return
    _check_reader(name)
    root, origin = _root_and_origin(None)
    if all(path.is_file() for path in known_files(name, root)):
        verify_files(name, root)
    elif _download_default() if download is None else download:
        load_dataset(name, download=True)
    else:
        raise DatasetUnavailable(_unavailable_head(name, root, origin, None))


def _root_and_origin(root: Path | None) -> tuple[Path, str]:
    """The data set folder (`root`, else data_root()) and where it came from, for a message."""
    if root is None:
        origin = ('from FSSL_DATA' if os.environ.get('FSSL_DATA')
                  else 'the default ./data; set FSSL_DATA or pass root= to change it')
        root = data_root()
    else:
        origin = 'from root='
    return Path(root).expanduser().resolve(), origin


def _check_reader(name: str) -> None:
    if name == 'svhn' and importlib.util.find_spec('scipy') is None:
        raise ImportError("load_dataset('svhn') needs scipy (torchvision reads SVHN's .mat files "
                          'with scipy.io.loadmat): pip install scipy')


def _resolve_device(device: str | torch.device) -> torch.device:
    # 'cuda' and 'cuda:0' must share one cache entry.
    device = torch.device(device)
    if device.type == 'cuda' and device.index is None and torch.cuda.is_available():
        device = torch.device('cuda', torch.cuda.current_device())
    return device


# the data sets whose tensors are read from their idx files (_idx_tensors), not from torchvision's objects
_IDX_READ = ('mnist', 'fashion_mnist')


def _load(name: str, root: Path, origin: str, device: torch.device, download: bool) -> ImageData:
    spec = _SPECS[name]
    if spec.tv_name is None:
        return _synthetic(name, spec, device)
    _check_reader(name)
    # (Fashion-)MNIST is read from its verified idx files themselves (torchvision prefers a legacy
    # processed/{training,test}.pt where one lies beside them, which no checksum covers): with every file here,
    # torchvision, and the torch._dynamo it imports (~2 s), is not needed; its class only downloads them
    idx = name in _IDX_READ
    here = idx and all(path.is_file() for path in known_files(name, root))
    opened = {} if here else {split: _open(name, root, origin, split, download) for split in ('train', 'test')}
    digest = verify_files(name, root)      # after _open: a download has then put the files in place
    splits = {}
    for split in ('train', 'test'):
        images, labels = _idx_tensors(name, root, split) if idx else _as_tensors(opened[split])
        # Convert on the device: uint8 moves 4x fewer bytes than float32. x / 255 in float32 is
        # what torchvision's ToTensor computes, so pixels equal those of dataset[i] + ToTensor.
        splits[split] = (images.to(device).float().div_(255), labels.to(device))
    return ImageData(name, *splits['train'], *splits['test'], num_classes=spec.num_classes,
                     mean=spec.mean, std=spec.std, digest=digest)


def _synthetic(name: str, spec: _Spec, device: torch.device) -> ImageData:
    generator = torch.Generator().manual_seed(0)
    train, test = spec.num_train, spec.num_test
    x = torch.rand(train + test, len(spec.mean), spec.image_size, spec.image_size, generator=generator)
    y = torch.randint(0, spec.num_classes, (train + test,), generator=generator)
    x, y = x.to(device), y.to(device)
    return ImageData(name, x[:train], y[:train], x[train:], y[train:], num_classes=spec.num_classes,
                     mean=spec.mean, std=spec.std)


def _open(name: str, root: Path, origin: str, split: str, download: bool):
    """torchvision's dataset object for one split, downloading it only if missing and allowed."""
    tv_class = _SPECS[name].tv_class
    kwargs = {'split': split} if name == 'svhn' else {'train': split == 'train'}
    try:
        return tv_class(root=str(root), download=False, **kwargs)
    except RuntimeError as missing:  # torchvision: "Dataset not found or corrupted"
        if not download:
            raise DatasetUnavailable(_unavailable_message(name, root, origin, None)) from None
    existed = {p for p in [root, *root.rglob('*')]} if root.exists() else set()
    try:
        return tv_class(root=str(root), download=True, **kwargs)
    except Exception as failed:
        _remove_empty_folders_made(root, existed)
        raise DatasetUnavailable(_unavailable_message(name, root, origin, failed)) from None   # the message carries it


def _remove_empty_folders_made(root: Path, existed: set[Path]) -> None:
    """Undo the empty folders a failed download made (torchvision creates <root>/<Name>/raw before it
    fetches anything): an empty data/MNIST/raw would otherwise be left behind, looking like a data set."""
    made = sorted((p for p in [root, *root.rglob('*')] if p not in existed) if root.exists() else [],
                  key=lambda p: len(p.parts), reverse=True)
    for folder in made:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _idx_tensors(name: str, root: Path, split: str) -> tuple[Tensor, Tensor]:
    """(uint8 [N, 1, H, W], int64 [N]) of a (Fashion-)MNIST split read from its idx files (the files
    verify_files checked): a 16-byte header before the images, 8 before the labels."""
    images_file, labels_file = [p for p in known_files(name, root)
                                if p.name.startswith('train' if split == 'train' else 't10k')]
    if 'labels' in images_file.name:
        images_file, labels_file = labels_file, images_file
    raw = np.frombuffer(images_file.read_bytes(), dtype=np.uint8, offset=16)
    labels = np.frombuffer(labels_file.read_bytes(), dtype=np.uint8, offset=8)
    images = torch.from_numpy(raw.copy()).view(len(labels), 1, 28, 28)
    return images, torch.from_numpy(labels.astype(np.int64))


def _as_tensors(dataset) -> tuple[Tensor, Tensor]:
    """(uint8 [N, C, H, W], int64 [N]) from torchvision's in-memory arrays, without PIL."""
    if isinstance(dataset, tv.MNIST):  # FashionMNIST is a subclass: data uint8 tensor [N, H, W]
        images = dataset.data.unsqueeze(1)
        labels = dataset.targets
    elif isinstance(dataset, tv.CIFAR10):  # CIFAR100 is a subclass: data uint8 array [N, H, W, C]
        images = torch.from_numpy(dataset.data).permute(0, 3, 1, 2)
        labels = dataset.targets
    elif isinstance(dataset, tv.SVHN):  # data uint8 array [N, C, H, W]; labels 10 already 0
        images = torch.from_numpy(dataset.data)
        labels = dataset.labels
    else:
        raise TypeError(f'no conversion for {type(dataset).__name__}')
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    return images.contiguous(), labels


# (name, root) -> (the files' (size, mtime) when verified, the data set's content digest): one check a process
_VERIFIED: dict[tuple[str, Path], tuple[tuple, str]] = {}


def verify_files(name: str, root: Path) -> str:
    """Check every file of `name` under `root` against its known MD5 (known_files); return the data
    set's content digest (`data_digest`). Raises DatasetCorrupted naming the first file that differs.
    Made once per process while the files' sizes and modification times stay as they were."""
    files = known_files(name, root)
    missing = [p for p in files if not p.is_file()]
    if missing:
        raise DatasetCorrupted(f'data set {name!r}: {missing[0]} is missing ({len(missing)} of its {len(files)} '
                               f'files are): fetch {_source(name)}')
    state = tuple((p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if _VERIFIED.get((name, root), (None,))[0] != state:
        for path, expected in files.items():
            actual = _md5(path)
            if actual != expected:
                raise DatasetCorrupted(f'data set {name!r}: {path} has md5 {actual}, the official file has '
                                       f'{expected}: an altered or damaged copy, refused (replace the file with '
                                       f'the official one: {_source(name)})')
        _VERIFIED[(name, root)] = (state, _manifest_digest(files))
    return _VERIFIED[(name, root)][1]


def data_digest(name: str, root: Path | None = None) -> str | None:
    """The content digest of data set `name` as loaded from `root` (default data_root()): sha256 over its
    files' names and verified MD5s; None for the synthetic set, which has no files. Verifies them first."""
    if _SPECS[name].tv_name is None:
        return None
    return verify_files(name, Path(root if root is not None else data_root()).expanduser().resolve())


def _manifest_digest(files: dict[Path, str]) -> str:
    return hashlib.sha256(''.join(f'{p.name} {md5}\n' for p, md5 in sorted(files.items())).encode()).hexdigest()


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 22), b''):
            h.update(block)
    return h.hexdigest()


def _source(name: str) -> str:
    tv_class = _SPECS[name].tv_class
    if issubclass(tv_class, tv.MNIST):
        return (f'the gzipped idx files from {tv_class.mirrors[0]} '
                f'(unzip them into {tv_class.__name__}/raw)')
    if issubclass(tv_class, tv.CIFAR10):
        return f'{tv_class.url} (extract it in the root)'
    return ' and '.join(tv_class.split_list[split][0] for split in ('train', 'test'))


def _unavailable_head(name: str, root: Path, origin: str, download_error: Exception | None) -> str:
    """The first line of _unavailable_message: the data set, where it was looked for, why it was not fetched."""
    if download_error is None:
        how = 'and download is disabled (download=False or FSSL_OFFLINE=1)'
    else:
        how = ('and torchvision could not download it: '
               f'{type(download_error).__name__}: {download_error}')
    return (f"data set {name!r} was not found (or failed torchvision's integrity check) under "
            f'root {root} ({origin}) {how}.')


def _unavailable_message(name: str, root: Path, origin: str,
                         download_error: Exception | None) -> str:
    tv_class = _SPECS[name].tv_class
    checked = ('uncompressed' if issubclass(tv_class, tv.MNIST)
               else 'byte-identical to the official ones (torchvision checks their md5)')
    files = '\n'.join(f'  {path}' for path in known_files(name, root))
    return (_unavailable_head(name, root, origin, download_error) + '\n'
            f'torchvision.datasets.{tv_class.__name__} expects these files, {checked}:\n'
            f'{files}\n'
            f'To get them: set FSSL_DATA (or pass root=) to a folder that holds them; or allow '
            f'download (download=True, FSSL_OFFLINE unset) on a machine with network access; or '
            f'fetch {_source(name)} yourself.')


def resplit(data: ImageData, train_size: int, test_size: int, seed: int) -> ImageData:
    """New train and test sets drawn from the pooled official splits, class-stratified
    (`partition.resplit_train_test`; FedMix's 64,000 / 2,000 Fashion-MNIST and 56,000 / 2,000
    CIFAR-10). Deterministic in `seed`; the leftover samples are used by neither set. Cached: the same
    call returns the same tensors (do not modify them in place)."""
    key = (id(data), train_size, test_size, seed)
    if key not in _RESPLITS:
        if len(_RESPLITS) >= RESPLITS_KEPT:       # a process training many seeds one after another
            del _RESPLITS[next(iter(_RESPLITS))]
        _RESPLITS[key] = (data, _resplit_data(data, train_size, test_size, seed))
    return _RESPLITS[key][1]


def _resplit_data(data: ImageData, train_size: int, test_size: int, seed: int) -> ImageData:
    x = torch.cat([data.train_x, data.test_x])
    y = torch.cat([data.train_y, data.test_y])
    train_idx, test_idx = resplit_train_test(len(data.train_y), len(data.test_y), seed, train_size=train_size,
                                             test_size=test_size, labels=y.cpu().numpy())
    train_idx, test_idx = (torch.as_tensor(i, device=x.device) for i in (train_idx, test_idx))
    return ImageData(data.name, x[train_idx], y[train_idx], x[test_idx], y[test_idx], data.num_classes,
                     data.mean, data.std, data.digest)
