"""fssl_core.data.datasets: real (Fashion-)MNIST when on disk; tiny CIFAR/SVHN files otherwise."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from torchvision.transforms.functional import to_tensor

from fssl_core.data import checksums, datasets
from fssl_core.data.datasets import DatasetUnavailable, ImageData, data_root, load_dataset
from tests import fake_datasets

from .conftest import how_to_get

REAL_ROOT = data_root()


# ---- real MNIST and Fashion-MNIST --------------------------------------------------------------

@pytest.mark.parametrize('name, tv_class', [('mnist', torchvision.datasets.MNIST),
                                            ('fashion_mnist', torchvision.datasets.FashionMNIST)])
def test_real_mnist_like(name, tv_class):
    raw = REAL_ROOT / tv_class.__name__ / 'raw'
    if not raw.is_dir():
        pytest.skip(how_to_get(name))
    data = load_dataset(name, root=REAL_ROOT, download=False)
    assert (data.train_x.shape, data.test_x.shape) == ((60000, 1, 28, 28), (10000, 1, 28, 28))
    assert data.train_x.dtype == torch.float32 and data.train_y.dtype == torch.int64
    assert (data.num_classes, data.in_channels, data.image_size) == (10, 1, 28)
    for x in (data.train_x, data.test_x):
        assert x.min() == 0 and x.max() == 1
    for train, x, y in ((True, data.train_x, data.train_y), (False, data.test_x, data.test_y)):
        reference = tv_class(REAL_ROOT, train=train, download=False)
        assert torch.equal(torch.bincount(y, minlength=10),
                           torch.bincount(reference.targets, minlength=10))
        i = 1234
        image, label = reference[i]
        assert torch.equal(x[i], to_tensor(image)) and y[i].item() == label
    assert load_dataset(name, root=REAL_ROOT, download=False) is data  # cached


# ---- tiny CIFAR-10, CIFAR-100, SVHN files in the real formats ----------------------------------

@pytest.fixture
def skip_md5(monkeypatch):
    """Let torchvision accept the tiny files: its CIFAR and SVHN classes compare each file's md5
    with the official one. The check is replaced by "the file exists"; the loading code is not."""
    exists = lambda fpath, md5=None: os.path.isfile(fpath)  # noqa: E731
    monkeypatch.setattr(torchvision.datasets.cifar, 'check_integrity', exists)
    monkeypatch.setattr(torchvision.datasets.svhn, 'check_integrity', exists)
    _known_as_written(monkeypatch)


def _known_as_written(monkeypatch):
    """fssl's own check (datasets.verify_files) likewise: each file's known MD5 becomes the MD5 it had when
    first asked for, so a file altered after that is still refused."""
    real, seen = datasets.known_files, {}
    monkeypatch.setattr(datasets, 'known_files', lambda name, root: {
        p: seen.setdefault(p, datasets._md5(p)) for p in real(name, root)})
    monkeypatch.setattr(datasets, '_VERIFIED', {})


def _expected_from_cifar_rows(rows):
    # Row layout: channel-major planes (R, G, B), each 32x32 row-major: pixel (c, h, w) is at
    # c * 1024 + h * 32 + w.
    return torch.from_numpy(rows).reshape(-1, 3, 32, 32).float() / 255


@pytest.mark.parametrize('name, writer, tv_class', [
    ('cifar10', fake_datasets.write_cifar10, torchvision.datasets.CIFAR10),
    ('cifar100', fake_datasets.write_cifar100, torchvision.datasets.CIFAR100)])
def test_tiny_cifar_round_trip(tmp_path, skip_md5, name, writer, tv_class):
    train, test = writer(tmp_path, np.random.default_rng(0))
    (train_rows, train_labels), (test_rows, test_labels) = train, test
    data = load_dataset(name, root=tmp_path, download=False)
    assert data.train_x.shape == (len(train_rows), 3, 32, 32)
    assert torch.equal(data.train_x, _expected_from_cifar_rows(train_rows))
    assert torch.equal(data.test_x, _expected_from_cifar_rows(test_rows))
    assert data.train_y.tolist() == train_labels and data.test_y.tolist() == test_labels
    assert data.train_y.dtype == torch.int64
    # Channel order by hand: the first 1024 bytes of a row are the red plane.
    assert data.train_x[1, 0, 0, 0] * 255 == train_rows[1, 0]
    assert data.train_x[1, 1, 0, 1] * 255 == train_rows[1, 1024 + 1]
    assert data.train_x[1, 2, 31, 31] * 255 == train_rows[1, 3071]
    # The same pixels as torchvision's own PIL path.
    image, label = tv_class(tmp_path, train=True)[3]
    assert torch.equal(data.train_x[3], to_tensor(image)) and data.train_y[3].item() == label
    assert data.num_classes == (10 if name == 'cifar10' else 100)
    assert (data.in_channels, data.image_size) == (3, 32)


def test_tiny_svhn_round_trip(tmp_path, skip_md5):
    (train_images, train_labels), (test_images, test_labels) = fake_datasets.write_svhn(
        tmp_path, np.random.default_rng(0))
    data = load_dataset('svhn', root=tmp_path, download=False)
    for x, y, images, labels in ((data.train_x, data.train_y, train_images, train_labels),
                                 (data.test_x, data.test_y, test_images, test_labels)):
        # .mat 'X' is [H, W, C, N]
        assert torch.equal(x, torch.from_numpy(images).permute(3, 2, 0, 1).float() / 255)
        assert y.tolist() == [0 if v == 10 else int(v) for v in labels[:, 0]]
        assert y[0] == 0 and y[1] == 1  # the file's 10 is the digit 0
    assert data.train_x[2, 1, 5, 7] * 255 == train_images[5, 7, 1, 2]  # (row 5, column 7, green)
    image, label = torchvision.datasets.SVHN(tmp_path, split='train')[2]
    assert torch.equal(data.train_x[2], to_tensor(image)) and data.train_y[2].item() == label


def test_cache_is_keyed_by_root(tmp_path, skip_md5):
    fake_datasets.write_svhn(tmp_path / 'a', np.random.default_rng(1))
    fake_datasets.write_svhn(tmp_path / 'b', np.random.default_rng(2))
    a = load_dataset('svhn', root=tmp_path / 'a', download=False)
    assert load_dataset('svhn', root=tmp_path / 'a' / '..' / 'a', download=False) is a
    b = load_dataset('svhn', root=tmp_path / 'b', download=False)
    assert b is not a and not torch.equal(a.train_x, b.train_x)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')
def test_loads_onto_cuda(tmp_path, skip_md5):
    fake_datasets.write_svhn(tmp_path, np.random.default_rng(0))
    cpu = load_dataset('svhn', root=tmp_path, download=False)
    gpu = load_dataset('svhn', device='cuda', root=tmp_path, download=False)
    assert gpu.train_x.device.type == 'cuda' and gpu.test_y.device.type == 'cuda'
    assert torch.equal(gpu.train_x.cpu(), cpu.train_x) and torch.equal(gpu.test_y.cpu(), cpu.test_y)
    assert load_dataset('svhn', device=gpu.train_x.device, root=tmp_path, download=False) is gpu
    assert torch.equal(gpu.normalize(gpu.test_x).cpu(), cpu.normalize(cpu.test_x))


# ---- the files are the official ones ----------------------------------------------------------

def _write_idx(path, array):
    """An idx file as torchvision reads it: magic (0, 0, uint8 code 8, rank), big-endian sizes, the bytes."""
    header = bytes([0, 0, 8, array.ndim]) + b''.join(int(n).to_bytes(4, 'big') for n in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def write_tiny_mnist(root, rng, n_train=6, n_test=4):
    raw = Path(root) / 'MNIST' / 'raw'
    raw.mkdir(parents=True)
    for prefix, n in (('train', n_train), ('t10k', n_test)):
        _write_idx(raw / f'{prefix}-images-idx3-ubyte', rng.integers(0, 256, size=(n, 28, 28)))
        _write_idx(raw / f'{prefix}-labels-idx1-ubyte', rng.integers(0, 10, size=n))
    return raw


def test_a_copy_that_is_not_the_official_files_is_refused_with_one_line_naming_the_file_and_digests(tmp_path):
    # tiny MNIST files in the real format: torchvision reads them, fssl refuses them (not the official MD5s)
    raw = write_tiny_mnist(tmp_path, np.random.default_rng(0))
    assert len(torchvision.datasets.MNIST(tmp_path, train=True, download=False)) == 6
    with pytest.raises(datasets.DatasetCorrupted) as caught:
        load_dataset('mnist', root=tmp_path, download=False)
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and isinstance(caught.value, DatasetUnavailable)   # the CLI's one line
    named = Path(message.split(': ')[1].split(' has md5 ')[0])                # whichever file was checked first
    assert named.parent == raw.resolve()
    assert message == (f"data set 'mnist': {named} has md5 {datasets._md5(named)}, the official file has "
                       f"{checksums._UNZIPPED_MD5['MNIST'][named.name]}: an altered or damaged copy, refused "
                       f"(replace the file with the official one: {datasets._source('mnist')})")


def test_a_tiny_copy_altered_after_it_was_verified_is_refused_and_an_intact_one_served(tmp_path, monkeypatch):
    raw = write_tiny_mnist(tmp_path, np.random.default_rng(0))
    _known_as_written(monkeypatch)
    data = load_dataset('mnist', root=tmp_path, download=False)
    assert data.digest == datasets.data_digest('mnist', tmp_path) and len(data.digest) == 64
    labels = raw / 'train-labels-idx1-ubyte'
    altered = bytearray(labels.read_bytes())
    altered[-1] = (altered[-1] + 1) % 10                 # one train label changed
    labels.write_bytes(bytes(altered))
    datasets.clear_cache()
    with pytest.raises(datasets.DatasetCorrupted, match=rf"data set 'mnist': {labels.resolve()} has md5 "
                                                        rf"{datasets._md5(labels)}, the official file has "):
        load_dataset('mnist', root=tmp_path, download=False)


def _linked_mnist(tmp_path, leave_out: str | None = None) -> tuple[Path, Path]:
    """(the official raw folder, a copy of it under tmp_path made of links, less `leave_out`)."""
    real = REAL_ROOT / 'MNIST' / 'raw'
    if not (real / 'train-labels-idx1-ubyte').exists():
        pytest.skip(how_to_get('mnist'))
    raw = tmp_path / 'MNIST' / 'raw'
    raw.mkdir(parents=True)
    for f in real.iterdir():
        if f.name != leave_out:
            (raw / f.name).symlink_to(f)
    return real, raw


def test_real_mnist_with_altered_train_labels_is_refused(tmp_path):
    """MNIST with 30% of its train labels altered once trained under the clean run's id, status ok."""
    real, raw = _linked_mnist(tmp_path, leave_out='train-labels-idx1-ubyte')
    labels = np.frombuffer((real / 'train-labels-idx1-ubyte').read_bytes(), np.uint8).copy()
    altered = np.random.default_rng(0).random(len(labels) - 8) < 0.3
    labels[8:][altered] = (labels[8:][altered] + 1) % 10
    (raw / 'train-labels-idx1-ubyte').write_bytes(labels.tobytes())
    with pytest.raises(datasets.DatasetCorrupted, match=r"train-labels-idx1-ubyte has md5 [0-9a-f]{32}, the "
                                                        r"official file has a25bea736e30d166cdddb491f175f624"):
        load_dataset('mnist', root=tmp_path, download=False)
    data = load_dataset('mnist', root=REAL_ROOT, download=False)          # the official copy: verified, served
    assert data.digest == datasets.data_digest('mnist')


def test_a_legacy_processed_copy_beside_the_official_files_is_never_read(tmp_path):
    """torchvision prefers MNIST/processed/{training,test}.pt to the raw files, and no checksum covers them: a
    run trained on 30% altered labels under the clean run's id. The loader reads the verified idx files only."""
    _linked_mnist(tmp_path)
    official = {split: torchvision.datasets.MNIST(str(REAL_ROOT), train=split == 'train') for split in ('train', 'test')}
    processed = tmp_path / 'MNIST' / 'processed'
    processed.mkdir()
    rng = np.random.default_rng(0)
    for split, name in (('train', 'training.pt'), ('test', 'test.pt')):
        targets = official[split].targets.clone()
        altered = torch.from_numpy(rng.random(len(targets)) < 0.3)
        targets[altered] = (targets[altered] + 1) % 10
        torch.save((official[split].data, targets), processed / name)
    planted = torchvision.datasets.MNIST(str(tmp_path), train=True)
    assert not torch.equal(planted.targets, official['train'].targets)      # torchvision itself serves the plant
    data = load_dataset('mnist', root=tmp_path, download=False)
    assert torch.equal(data.train_y.cpu(), official['train'].targets)
    assert torch.equal(data.test_y.cpu(), official['test'].targets)
    assert torch.equal((data.train_x * 255).round().to(torch.uint8)[:, 0].cpu(), official['train'].data)


def test_the_cli_prints_a_corrupted_copy_as_one_error_line(tmp_path, monkeypatch, capsys):
    from fssl_core.cli import main
    write_tiny_mnist(tmp_path, np.random.default_rng(0))
    monkeypatch.setenv('FSSL_DATA', str(tmp_path))
    datasets.clear_cache()
    assert main(['partition', 'dataset=mnist', 'clients=2', 'clients_per_round=1']) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: data set 'mnist': ") and 'has md5' in err and len(err.splitlines()) == 1


# ---- errors ------------------------------------------------------------------------------------

def test_synthetic_cifar10_has_cifar10s_shape_and_needs_no_files(tmp_path):
    data = load_dataset('synthetic_cifar10', root=tmp_path, download=False)
    assert tuple(data.train_x.shape) == (50000, 3, 32, 32) and tuple(data.test_x.shape) == (10000, 3, 32, 32)
    assert data.num_classes == 10 and int(data.train_y.max()) <= 9
    assert 0.0 <= float(data.train_x.min()) and float(data.train_x.max()) <= 1.0


@pytest.mark.parametrize('name', [n for n in datasets.DATASETS if not n.startswith('synthetic')])
def test_missing_dataset_names_dataset_root_and_files(tmp_path, name):
    with pytest.raises(DatasetUnavailable) as caught:
        load_dataset(name, root=tmp_path, download=False)
    message = str(caught.value)
    assert repr(name) in message and str(tmp_path.resolve()) in message
    assert 'FSSL_DATA' in message
    expected_file = {'mnist': 'MNIST/raw/train-images-idx3-ubyte',
                     'fashion_mnist': 'FashionMNIST/raw/t10k-labels-idx1-ubyte',
                     'cifar10': 'cifar-10-batches-py/data_batch_5',
                     'cifar100': 'cifar-100-python/meta',
                     'svhn': 'test_32x32.mat'}[name]
    assert str(tmp_path.resolve() / expected_file) in message
    # one error, not torchvision's beneath it ("Dataset not found or corrupted": the message says more)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_failed_download_leaves_no_empty_folder_behind(tmp_path, monkeypatch):
    # offline here: torchvision makes <root>/MNIST/raw, then fails to fetch; the folders it made go,
    # the one that was there stays
    (tmp_path / 'kept').mkdir()
    monkeypatch.setattr(datasets.tv.MNIST, 'mirrors', ['http://127.0.0.1:9/'])
    with pytest.raises(DatasetUnavailable, match='could not download'):
        load_dataset('mnist', root=tmp_path, download=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['kept']


def test_offline_env_disables_download(tmp_path, monkeypatch):
    monkeypatch.setenv('FSSL_OFFLINE', '1')
    monkeypatch.setenv('FSSL_DATA', str(tmp_path))
    with pytest.raises(DatasetUnavailable, match='download is disabled'):
        load_dataset('cifar10')  # root from FSSL_DATA, download from FSSL_OFFLINE


def test_data_root_from_env_else_the_project_roots_data_whatever_the_cwd(monkeypatch, tmp_path):
    monkeypatch.setenv('FSSL_DATA', '/some/where')
    assert datasets.data_root() == Path('/some/where')
    monkeypatch.delenv('FSSL_DATA')
    monkeypatch.setenv('FSSL_PROJECT', str(tmp_path))
    (tmp_path / 'notebooks').mkdir()
    monkeypatch.chdir(tmp_path / 'notebooks')        # where papermill runs a notebook
    assert datasets.data_root() == tmp_path / 'data'


@pytest.mark.parametrize('name', [n for n in datasets.DATASETS if n != 'synthetic_cifar10'])
def test_the_files_written_out_are_those_torchvisions_class_lists(name, tmp_path):
    """checksums.known_files holds torchvision's lists (so a plan checks the files without importing it): the same
    paths, in the class's order, with the same MD5s (for (Fashion-)MNIST, its .gz downloads' names unzipped)."""
    tv_class, root = getattr(torchvision.datasets, datasets._SPECS[name].tv_name), tmp_path
    if issubclass(tv_class, torchvision.datasets.MNIST):
        listed = [(root / tv_class.__name__ / 'raw' / Path(url).name.removesuffix('.gz'), None)
                  for url, _ in tv_class.resources]
    elif issubclass(tv_class, torchvision.datasets.CIFAR10):
        listed = [(root / tv_class.base_folder / f, md5) for f, md5 in
                  tv_class.train_list + tv_class.test_list + [[tv_class.meta['filename'], tv_class.meta['md5']]]]
    else:
        listed = [(root / tv_class.split_list[split][1], tv_class.split_list[split][2]) for split in ('train', 'test')]
    known = checksums.known_files(name, root)
    assert list(known) == [path for path, _ in listed]
    assert [md5 for _, md5 in listed if md5 is not None] == [known[p] for p, md5 in listed if md5 is not None]


def test_a_plans_check_loads_no_data_and_says_what_a_load_would(tmp_path, monkeypatch):
    """check_files: the synthetic set, and a set whose every file is here and official (MD5), pass without a load; a set
    missing offline raises the first line load_dataset raises."""
    monkeypatch.setattr(datasets, 'load_dataset', lambda *a, **k: pytest.fail('a check loaded the data'))
    datasets.check_files('synthetic_cifar10')
    if (REAL_ROOT / 'MNIST' / 'raw').is_dir():
        datasets.check_files('mnist')
    monkeypatch.setenv('FSSL_DATA', str(tmp_path))
    with pytest.raises(DatasetUnavailable) as checked:
        datasets.check_files('cifar10', download=False)
    monkeypatch.undo()
    with pytest.raises(DatasetUnavailable) as loaded:
        load_dataset('cifar10', root=tmp_path, download=False)
    assert str(checked.value) == str(loaded.value).splitlines()[0].replace('(from root=)', '(from FSSL_DATA)')


def test_unknown_name_lists_allowed_names():
    with pytest.raises(ValueError, match=r"name='cifar-10'.*'cifar10'"):
        load_dataset('cifar-10')


# ---- normalize ---------------------------------------------------------------------------------

def _image_data(x, mean, std):
    y = torch.zeros(len(x), dtype=torch.int64)
    return ImageData('fake', x, y, x, y, num_classes=10, mean=mean, std=std)


def test_normalize_one_pixel_by_hand():
    # One RGB pixel (0.5, 0.25, 1.0), mean (0.5, 0.5, 0.5), std (0.25, 0.5, 2.0):
    # ((0.5-0.5)/0.25, (0.25-0.5)/0.5, (1.0-0.5)/2.0) = (0, -0.5, 0.25).
    x = torch.tensor([0.5, 0.25, 1.0]).view(1, 3, 1, 1)
    data = _image_data(x, mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 2.0))
    assert data.normalize(x).flatten().tolist() == [0.0, -0.5, 0.25]
    assert data.normalize(x[0]).flatten().tolist() == [0.0, -0.5, 0.25]  # [C, H, W] too


def test_normalize_mnist_constants():
    x = torch.ones(1, 1, 1, 1)
    data = _image_data(x, mean=(0.1307,), std=(0.3081,))
    assert data.normalize(x).item() == pytest.approx((1 - 0.1307) / 0.3081)


def test_normalize_rejects_wrong_channel_count():
    data = _image_data(torch.zeros(1, 3, 1, 1), mean=(0.5,) * 3, std=(0.5,) * 3)
    with pytest.raises(ValueError, match='normalize'):
        data.normalize(torch.zeros(1, 1, 1, 1))


def test_stats_cover_every_dataset():
    for name in datasets.DATASETS:
        spec = datasets._SPECS[name]
        channels = 1 if 'mnist' in name else 3
        assert len(spec.mean) == len(spec.std) == channels
        assert all(0 < s < 1 for s in spec.mean + spec.std)
