"""Tiny CIFAR-10, CIFAR-100 and SVHN files in the real on-disk formats, for loader tests.

CIFAR batches are Python 2 pickles: dicts whose keys (and label names) are Python 2 `str`, which
Python 3 reads as str under torchvision's encoding='latin1' and as b'data', b'labels' under
encoding='bytes'. Python 3's pickler cannot write a Python 2 str, so `_Py2Pickler` writes those
opcodes itself. SVHN files are MATLAB v5 .mat files with 'X' uint8 [32, 32, 3, N] and
'y' uint8 [N, 1], where label 10 stands for the digit 0.

Each writer returns the raw arrays it wrote, so a test can compare pixel by pixel.
"""

import pickle
import struct
from pathlib import Path

import numpy as np


class _Py2Str(bytes):
    """Bytes to be pickled as a Python 2 str (opcodes SHORT_BINSTRING / BINSTRING)."""


class _Py2Pickler(pickle._Pickler):  # the pure-Python pickler, whose dispatch table can be extended
    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj):
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack('<i', len(obj)) + obj)
        self.memoize(obj)

    dispatch[_Py2Str] = save_py2_str

    def reducer_override(self, obj):
        # Python 2's numpy pickled an array's type code and raw pixel bytes as str too: the reason
        # torchvision unpickles with encoding='latin1'.
        if type(obj) is np.ndarray:
            reconstruct, (cls, shape, typecode), state = obj.__reduce__()
            version, shp, dtype, fortran, raw = state
            state = (version, shp, dtype, fortran, _Py2Str(raw))
            return reconstruct, (cls, shape, _Py2Str(typecode)), state
        return NotImplemented


def _py2(value):
    """Turn the str keys and str values of nested dicts/lists into Python 2 strs."""
    if isinstance(value, str):
        return _Py2Str(value.encode('latin1'))
    if isinstance(value, dict):
        return {_py2(k): _py2(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_py2(v) for v in value]
    return value


def _write_py2_pickle(path: Path, obj) -> None:
    with open(path, 'wb') as f:
        _Py2Pickler(f, protocol=2).dump(_py2(obj))


def _random_rows(rng, n):
    # One image per row: 1024 red, then 1024 green, then 1024 blue values, each plane row-major.
    return rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)


def write_cifar10(root: Path, rng, per_batch=2, n_test=3):
    """cifar-10-batches-py/data_batch_1..5, test_batch, batches.meta; returns (train, test) as
    (rows uint8 [n, 3072], labels list) in the order torchvision concatenates them."""
    folder = Path(root) / 'cifar-10-batches-py'
    folder.mkdir(parents=True)
    train_rows, train_labels = [], []
    for b in range(1, 6):
        rows, labels = _random_rows(rng, per_batch), rng.integers(0, 10, per_batch).tolist()
        _write_py2_pickle(folder / f'data_batch_{b}', {
            'batch_label': f'training batch {b} of 5', 'labels': labels, 'data': rows,
            'filenames': [f'img_{b}_{i}.png' for i in range(per_batch)]})
        train_rows.append(rows)
        train_labels += labels
    test_rows, test_labels = _random_rows(rng, n_test), rng.integers(0, 10, n_test).tolist()
    _write_py2_pickle(folder / 'test_batch', {
        'batch_label': 'testing batch 1 of 1', 'labels': test_labels, 'data': test_rows,
        'filenames': [f'test_{i}.png' for i in range(n_test)]})
    _write_py2_pickle(folder / 'batches.meta', {
        'num_cases_per_batch': per_batch, 'num_vis': 3072,
        'label_names': ['airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse',
                        'ship', 'truck']})
    return (np.vstack(train_rows), train_labels), (test_rows, test_labels)


def write_cifar100(root: Path, rng, n_train=4, n_test=3):
    """cifar-100-python/train, test, meta with fine and coarse labels; returns (train, test) as
    (rows uint8 [n, 3072], fine labels list)."""
    folder = Path(root) / 'cifar-100-python'
    folder.mkdir(parents=True)
    out = []
    for split, n in (('train', n_train), ('test', n_test)):
        rows = _random_rows(rng, n)
        fine = rng.integers(0, 100, n).tolist()
        fine[0] = 99  # the largest label must survive
        _write_py2_pickle(folder / split, {
            'filenames': [f'{split}_{i}.png' for i in range(n)], 'batch_label': f'{split} batch',
            'fine_labels': fine, 'coarse_labels': [f // 5 for f in fine], 'data': rows})
        out.append((rows, fine))
    _write_py2_pickle(folder / 'meta', {
        'fine_label_names': [f'fine_{i}' for i in range(100)],
        'coarse_label_names': [f'coarse_{i}' for i in range(20)]})
    return tuple(out)


def write_svhn(root: Path, rng, n_train=4, n_test=3):
    """train_32x32.mat and test_32x32.mat directly in root (torchvision's SVHN layout); returns
    (train, test) as (X uint8 [32, 32, 3, n], y uint8 [n, 1] with 10 for the digit 0)."""
    from scipy.io import savemat

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for split, n in (('train', n_train), ('test', n_test)):
        images = rng.integers(0, 256, size=(32, 32, 3, n), dtype=np.uint8)
        labels = rng.integers(1, 11, size=(n, 1)).astype(np.uint8)
        labels[0, 0], labels[1, 0] = 10, 1  # a zero digit and a one in every split
        savemat(root / f'{split}_32x32.mat', {'X': images, 'y': labels})
        out.append((images, labels))
    return tuple(out)
